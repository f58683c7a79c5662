"""The first timed run compiles the timing model in a second process (maxsim/cli/warm.py): the
worker's small kernel needs the very compiled signatures a timed SGEMM does, and a function of the
worker's modules waits for the worker before it loads from the cache (maxsim.jit.compiled_elsewhere)."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np


def test_the_workers_kernel_compiles_what_a_timed_sgemm_runs():
    from maxsim.cli import warm
    from maxsim.timing import clock, core, memory_core
    from workloads.sgemm.harness import run_workload
    warm.warm()
    seen = {f: set(f.signatures) for f in (core.drive, clock._lineup, clock._set, memory_core.write_requests)}
    assert all(seen.values())
    out = run_workload("sgemm_64", m=64, n=64, k=64)
    assert out["verified"]
    after = {f: set(f.signatures) for f in seen}
    assert after == seen  # no signature the worker did not compile


def test_a_function_of_the_workers_modules_waits_for_it(tmp_path, monkeypatch):
    (tmp_path / "elsewhere_mod.py").write_text("import numba\n\n@numba.njit(cache=True)\ndef f(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MAXSIM_COMPILE_NOTICE", "0")
    from maxsim import jit
    import elsewhere_mod
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    monkeypatch.setattr(jit, "_ELSEWHERE", [])
    jit.compiled_elsewhere(proc, ("elsewhere_mod",), "a test function")
    t = time.perf_counter()
    assert elsewhere_mod.f(np.int64(1)) == 2
    assert proc.poll() == 0 and time.perf_counter() - t > 0.5  # it waited for the worker to end
