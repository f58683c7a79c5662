"""Compiling the timing model ahead, in a second process: the first ``maxsim run`` of a fresh
install compiles the SM core, the clock of SMs run together and the L2/DRAM memory system (about
nine tenths of its compile time, most of it the SM core) in a worker process, while this process
builds the kernel, runs it functionally and compiles what that needs. The worker times a small
kernel of its own (loads, an integer add, a store: the same compiled signatures as any timed
launch), numba writes the compiled code to the cache, and this process loads it from there when its
timing run starts (:func:`maxsim.jit.compiled_elsewhere` waits for the worker first).

``python -m maxsim.cli.warm`` is the worker.
"""

from __future__ import annotations

import os
import subprocess
import sys

# the modules whose compiled code the worker builds (this process waits for it before loading theirs)
MODULES = ("maxsim.timing.core", "maxsim.timing.clock", "maxsim.timing.memory_core")

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
                                          "memory system (maxsim.timing)")
    return True


def warm():
    import numpy as np

    from ..host import launch
    n = 64
    launch(KERNEL, grid=1, block=n, params={"a": "a", "b": "b", "n": n},
           buffers={"a": np.ones(n, np.int32), "b": np.ones(n, np.int32)}, timing=True, predict=True)


if __name__ == "__main__":
    warm()
