"""Compiling the timing model ahead, in two other processes: the first ``maxsim run`` of a fresh
install compiles the SM core (most of its compile time) in one worker process and the L2/DRAM
memory system in another, while this process builds the kernel, runs it functionally and compiles
what that and the rest of the timing run need (the functional run's arithmetic, the access
summaries, the typed list of SM states, ...). numba writes each worker's compiled code to the cache;
this process loads it from there when its timing run gets to it (:func:`maxsim.jit.compiled_elsewhere`
waits for the worker first).

The core's worker compiles only :func:`maxsim.timing.core.drive`, for the argument types every
timed run uses (:func:`maxsim.timing.core.drive_types`), and what it calls; it runs nothing. The
core calls the memory system's code through pointers (:func:`maxsim.timing.core.bind_memory`), so
the two compiles need nothing of each other. The memory system's worker (``python -m
maxsim.cli.warm memory``) compiles ``read_request``, ``write_requests`` and the core's
``_post_queued`` by calling them as a timed run does.

``python -m maxsim.cli.warm`` is the core's worker.
"""

from __future__ import annotations

import os
import subprocess
import sys

# what each worker compiles (this process waits for the worker before loading their compiled code)
CORE_FUNCTIONS = ("maxsim.timing.core.drive",)
# the memory system's modules, and the SM core's function that hands its stores to them
MEMORY_MODULES = ("maxsim.timing.memory_core", "maxsim.timing.tlb", "maxsim.timing.core._post_queued")


def needed():
    """Whether the SM core has no compiled code in the cache yet (then a timed run compiles it)."""
    try:
        from ..timing import core
        return not os.path.exists(core.drive._cache._cache_file._index_path)
    except (AttributeError, ImportError):  # another numba: compile in this process, as it comes
        return False


# The memory system's worker yields the CPU to the core's worker and to the run (it lowers its own
# priority by this nice value): the core's compile is the longest, and the run's own compiles come
# before its timed run can start, so where there are fewer CPUs than the three processes the memory
# system's compile is the one that can wait (it ends before the core's either way). On 2 CPUs the
# first `maxsim run sgemm_64` took 16.2-17.5 s with equal priorities, 13.7-16.1 s with this.
MEMORY_NICE = 10


def start():
    """Start the workers when the timing model's compiled code is missing and no worker of this
    process is compiling it already (a second run in one process, e.g. from Python, waits for the
    first's); returns whether it did."""
    from .. import jit
    if os.environ.get("MAXSIM_COMPILE_AHEAD", "1") == "0" or not needed() or jit.compiling_elsewhere(CORE_FUNCTIONS):
        return False
    env = dict(os.environ, MAXSIM_COMPILE_NOTICE="0")
    procs = []
    for args in ([], ["memory"]):
        try:
            procs.append(subprocess.Popen([sys.executable, "-m", "maxsim.cli.warm", *args], env=env,
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        except OSError:
            break
    if len(procs) < 2:
        for proc in procs:
            proc.terminate()
        return False
    jit.compiled_elsewhere(procs[0], CORE_FUNCTIONS, "the SM core and the L2/DRAM memory system (maxsim.timing)",
                           "two other processes")
    jit.compiled_elsewhere(procs[1], MEMORY_MODULES, "the L2/DRAM memory system", say=False)
    return True


def warm():
    """Compile the SM core for the argument types of every timed run."""
    from ..timing import core
    core.drive.compile(core.drive_types())


def warm_memory():
    """Compile the memory system's requests as a timed run calls them: a read of an SM and a queue
    of posted stores, and the core's function that hands its queued stores on (the signatures
    :func:`maxsim.timing.core.bind_memory` points the core at)."""
    import numpy as np

    from ..arch.config import load_config
    from ..timing import core
    from ..timing.memory_core import CompiledMemorySystem
    ms = CompiledMemorySystem(load_config())
    ms.read(0, np.arange(4, dtype=np.int64) * ms.sector, sm=0)
    ms.write_queue(np.array([10, 2, 0, ms.sector], np.int64))
    core.bind_memory(ms._read_args)  # (the core's _post_queued, compiled here for the same arrays)


if __name__ == "__main__":
    if sys.argv[1:] == ["memory"]:
        if hasattr(os, "nice"):
            os.nice(MEMORY_NICE)
        warm_memory()
    else:
        warm()
