"""Every launch of the functional kernel tests (test_kernels.py, and the single-instruction kernels
of sasskit used by test_opcodes.py) is also checked in timing-only mode: its trace must equal the
full run's (see timing_only_check.py)."""

import os
import tempfile

import pytest
from hypothesis import settings

from maxsim.cache import COMPILED, cache_dir

import nvidia_oracle  # noqa: E402  (tests/ is on sys.path: conftest's folder)

# The property tests (hypothesis) draw the same examples at every run, so that a run of the suite
# passes or fails by the code alone; MAXSIM_HYPOTHESIS=explore draws new ones each run (to look
# for bugs; a failure it finds prints the example, which then goes into the test as an @example).
settings.register_profile("fixed", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("MAXSIM_HYPOTHESIS", "fixed"))
# The one-line notice a process prints when it compiles maxsim's numba code (maxsim/jit.py) would
# land in the stderr that tests compare exactly, on a fresh checkout; tests/test_jit.py turns it on.
os.environ.setdefault("MAXSIM_COMPILE_NOTICE", "0")
# NVIDIA's disassemblers, the oracle of the encoding and cubin tests: fetched once into the
# user's cache folder (tests/nvidia_oracle.py) before any test
# module is collected (their skip marks look for the tools)
_ORACLE_PROBLEM = nvidia_oracle.set_up()
# the result cache of compare, validate and sweep: a folder of this test session's own, never the
# user's cache (a test that needs its own sets MAXSIM_CACHE_DIR again); its compiled code is the
# user's (a link to it), compiled once for every session and process of the tests
_compiled = cache_dir() / COMPILED
os.environ["MAXSIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="maxsim-test-cache-")
try:
    _compiled.mkdir(parents=True, exist_ok=True)
    os.symlink(_compiled, os.path.join(os.environ["MAXSIM_CACHE_DIR"], COMPILED), target_is_directory=True)
except OSError:
    pass  # compiled again in the session's own folder


def pytest_report_header(config):
    if _ORACLE_PROBLEM:
        return f"NVIDIA's disassemblers: {_ORACLE_PROBLEM}; their tests skip"
    return f"NVIDIA's disassemblers: {os.environ['MAXSIM_CUOBJDUMP']}, {os.environ['MAXSIM_NVDISASM']}"


SHADOWED = ("test_kernels", "test_opcodes")


@pytest.fixture(autouse=True)
def _timing_only_shadow(request, monkeypatch):
    name = request.module.__name__.rsplit(".", 1)[-1]
    if name in SHADOWED:
        import sasskit
        import timing_only_check
        monkeypatch.setattr(sasskit, "launch", timing_only_check.launch_checked)
        if hasattr(request.module, "launch"):
            monkeypatch.setattr(request.module, "launch", timing_only_check.launch_checked)
    yield


@pytest.fixture(autouse=True)
def _launches_forgotten():
    """Each test starts with no launch figures to reuse (maxsim.gpu.sampling.launches: a shape
    launched again by an earlier test would otherwise be predicted from that test's launches)."""
    from maxsim.gpu.sampling import launches
    launches.forget()
    yield
