"""Compiling the timing model ahead, in two other processes: the first ``maxsim run`` of a fresh
install compiles the SM core, the clock of SMs run together and the L2/DRAM memory system (about
nine tenths of its compile time, most of it the SM core) in a worker process, while this process
builds the kernel, runs it functionally and compiles what that needs. The worker times a small
kernel of its own (loads, an integer add, a store: the same compiled signatures as any timed
launch), numba writes the compiled code to the cache, and this process loads it from there when its
timing run starts (:func:`maxsim.jit.compiled_elsewhere` waits for the worker first).

The worker leaves the memory system (its ``read_request``, about a fifth of the whole compile, and
``write_requests``, which the SM core calls, and the core's ``_post_queued``, which calls the latter)
to a process of its own (``python -m maxsim.cli.warm memory``), which compiles them by calling them
as the core does; the worker's compile of the core loads them from the cache when it gets to them
(waiting for that process if it has not finished), so on two CPUs the two compiles overlap.

``python -m maxsim.cli.warm`` is the worker.
"""

from __future__ import annotations

import os
import subprocess
import sys

# the modules whose compiled code the worker builds (this process waits for it before loading theirs)
MODULES = ("maxsim.timing.core", "maxsim.timing.clock", "maxsim.timing.memory_core")
# what the worker leaves to a process of its own (the SM core's compile loads it when it gets there):
# the memory system's modules, and the SM core's function that hands its stores to them
MEMORY_MODULES = ("maxsim.timing.memory_core", "maxsim.timing.tlb", "maxsim.timing.core._post_queued")

KERNEL = """# Kernel: warm
# Params(3):
#\t0:0x140:4:0 a
#\t1:0x144:4:0 b
#\t2:0x148:4:0 n
<CONSTANT_MAPPING>
    param_a : c[0x0][0x140]
    param_b : c[0x0][0x144]
    param_n : c[0x0][0x148]
</CONSTANT_MAPPING>

<REGISTER_MAPPING>
    0-1   : tid, n
    2-15  ~ bytes, pa, pb, x, y
</REGISTER_MAPPING>

S2R tid, SR_TID.X;
MOV n, param_n;
ISETP.GE.AND P0, PT, tid, n, PT;
@P0 EXIT;
SHL bytes, tid, 2;
IADD pa, bytes, param_a;
IADD pb, bytes, param_b;
LDG x, [pa];
LDG y, [pb];
IADD x, x, y;
STG [pb], x;
EXIT;
"""


def needed():
    """Whether the SM core has no compiled code in the cache yet (then a timed run compiles it)."""
    try:
        from ..timing import core
        return not os.path.exists(core.drive._cache._cache_file._index_path)
    except (AttributeError, ImportError):  # another numba: compile in this process, as it comes
        return False


def start():
    """Start the worker when the timing model's compiled code is missing; returns whether it did."""
    if os.environ.get("MAXSIM_COMPILE_AHEAD", "1") == "0" or not needed():
        return False
    from .. import jit
    env = dict(os.environ, MAXSIM_COMPILE_NOTICE="0")
    try:
        proc = subprocess.Popen([sys.executable, "-m", "maxsim.cli.warm"], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL)
    except OSError:
        return False
    jit.compiled_elsewhere(proc, MODULES, "the SM core, the clock of SMs run together and the L2/DRAM "
                                          "memory system (maxsim.timing)", "two other processes")
    return True


def warm():
    import numpy as np

    from ..host import launch
    helper = _start_memory_worker()
    n = 64
    launch(KERNEL, grid=1, block=n, params={"a": "a", "b": "b", "n": n},
           buffers={"a": np.ones(n, np.int32), "b": np.ones(n, np.int32)}, timing=True, predict=True)
    if helper is not None:
        helper.wait()  # everything in the cache when this process ends


def _start_memory_worker():
    """The memory system's compiled code in a third process, while this one compiles the SM core:
    the core's compile loads it from the cache when it gets there (waiting for that process if it
    has not finished)."""
    from .. import jit
    try:
        proc = subprocess.Popen([sys.executable, "-m", "maxsim.cli.warm", "memory"], env=dict(os.environ),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    except OSError:
        return None
    jit.compiled_elsewhere(proc, MEMORY_MODULES, "the L2/DRAM memory system")
    return proc


def warm_memory():
    """Compile the memory system's requests as the SM core calls them: a read of an SM and a queue
    of posted stores, and the core's function that hands its queued stores on."""
    import numpy as np

    from ..arch.config import load_config
    from ..timing.memory_core import CompiledMemorySystem
    from ..timing import core
    ms = CompiledMemorySystem(load_config())
    ms.read(0, np.arange(4, dtype=np.int64) * ms.sector, sm=0)
    ms.write_queue(np.array([10, 2, 0, ms.sector], np.int64))
    # the SM core hands its queued stores on with _post_queued (here with none queued)
    core._post_queued(np.zeros(core.G_SIZE, np.int64), np.zeros(4, np.int64), tuple(ms._read_args))


if __name__ == "__main__":
    if sys.argv[1:] == ["memory"]:
        warm_memory()
    else:
        warm()
