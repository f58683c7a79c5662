"""The first timed run compiles the timing model in two other processes (maxsim/cli/warm.py): the
core's worker compiles the SM core for the very argument types a timed SGEMM calls it with, the
memory system's process compiles those of the memory system's functions the SM core calls, and a
function of a worker's modules waits for the worker before it loads from the cache
(maxsim.jit.compiled_elsewhere)."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest


def test_the_workers_signature_is_the_one_a_timed_sgemm_runs():
    from maxsim.cli import warm
    from maxsim.timing import core
    from workloads.sgemm.harness import run_workload
    warm.warm()
    assert core.drive.signatures == [core.drive_types()]
    out = run_workload("sgemm_64", m=64, n=64, k=64)
    assert out["verified"]
    assert core.drive.signatures == [core.drive_types()]  # no signature the worker did not compile
    assert warm.CORE_FUNCTIONS == (f"{core.__name__}.drive",)


def test_the_memory_process_compiles_what_the_sm_core_calls():
    from maxsim.cli import warm
    from maxsim.timing import core, memory_core
    from workloads.sgemm.harness import run_workload
    warm.warm_memory()
    funcs = (memory_core.read_request, memory_core.write_requests, core._post_queued)
    seen = {f: set(f.signatures) for f in funcs}
    assert all(seen.values())
    out = run_workload("sgemm_64", m=64, n=64, k=64)  # compiles (or loads) the SM core
    assert out["verified"]
    assert {f: set(f.signatures) for f in funcs} == seen  # it called them with those signatures only
    assert set(warm.MEMORY_MODULES) >= {f.py_func.__module__ for f in funcs[:2]}
    assert f"{core.__name__}._post_queued" in warm.MEMORY_MODULES


@pytest.mark.parametrize("module, named", [("elsewhere_mod", "elsewhere_mod"), ("elsewhere_fn", "elsewhere_fn.f")])
def test_a_function_of_the_workers_modules_waits_for_it(tmp_path, monkeypatch, module, named):
    """Named by its module, or by its module and name."""
    import importlib
    (tmp_path / f"{module}.py").write_text("import numba\n\n@numba.njit(cache=True)\ndef f(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MAXSIM_COMPILE_NOTICE", "0")
    from maxsim import jit
    mod = importlib.import_module(module)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    monkeypatch.setattr(jit, "_ELSEWHERE", [])
    jit.compiled_elsewhere(proc, (named,), "a test function")
    t = time.perf_counter()
    assert mod.f(np.int64(1)) == 2
    assert proc.poll() == 0 and time.perf_counter() - t > 0.5  # it waited for the worker to end


def test_a_second_start_while_the_workers_compile_starts_none(monkeypatch):
    """Runs in one process that find no compiled SM core start its two workers once, not once per run
    (each would compile the same code again)."""
    from maxsim import jit
    from maxsim.cli import warm
    started = []

    class Worker:  # stands in for a worker process still compiling
        def __init__(self, args, **kw):
            started.append(args)

        def poll(self):
            return None

        def terminate(self):
            pass

    monkeypatch.setenv("MAXSIM_COMPILE_AHEAD", "1")
    monkeypatch.setenv("MAXSIM_COMPILE_NOTICE", "0")
    monkeypatch.setattr(warm, "needed", lambda: True)
    monkeypatch.setattr(warm.subprocess, "Popen", Worker)
    monkeypatch.setattr(jit, "_ELSEWHERE", [])
    monkeypatch.setattr("atexit.register", lambda f: None)
    assert warm.start() is True and len(started) == 2
    assert jit.compiling_elsewhere(warm.CORE_FUNCTIONS)
    assert warm.start() is False and len(started) == 2


def test_what_a_timed_run_compiles_after_the_workers_is_compiled_ahead_for_its_types():
    """The trace gathering's signature compiled ahead (while the workers compile) is the one a timed
    SGEMM calls: the run compiles nothing of it after the workers' code has come."""
    from maxsim.timing import sm
    from workloads.sgemm.harness import run_workload
    sm._gather_lists_ahead()
    sm._start_warps_ahead()
    sm._place_blocks_ahead()
    ahead = list(sm._gather_lists.signatures)
    assert ahead == [sm.GATHER_TYPES]
    places = list(sm._place_blocks.signatures)
    assert places == [sm.PLACE_TYPES]
    starts = list(sm._start_warps.signatures)
    assert starts == [sm._start_types()]
    exits = list(sm._exited.signatures)
    assert exits == [sm._exited_types()]
    out = run_workload("sgemm_64", m=64, n=64, k=64)
    assert out["verified"]
    assert sm._gather_lists.signatures == ahead
    assert sm._start_warps.signatures == starts  # (the CTAs' starts and ends compiled nothing more)
    assert sm._exited.signatures == exits
    assert sm._place_blocks.signatures == places


def test_the_compiles_ahead_run_only_while_a_worker_compiles(monkeypatch):
    from maxsim import jit
    ran = []
    monkeypatch.setattr(jit, "_AHEAD", [])
    jit.compile_ahead(lambda: ran.append(1))

    class Worker:
        def __init__(self, done):
            self.done = done

        def poll(self):
            return 0 if self.done else None

    monkeypatch.setattr(jit, "_ELSEWHERE", [(Worker(True), ("m",))])
    jit.compile_ahead_now()
    assert ran == [] and not jit.workers_compiling()
    monkeypatch.setattr(jit, "_ELSEWHERE", [(Worker(False), ("m",))])
    jit.compile_ahead_now()
    jit.compile_ahead_now()
    assert ran == [1] and jit.workers_compiling()
