"""Every launch of the functional kernel tests (test_kernels.py, and the single-instruction kernels
of sasskit used by test_opcodes.py) is also checked in timing-only mode: its trace must equal the
full run's (see timing_only_check.py)."""

import os
import tempfile

import pytest

# The one-line notice a process prints when it compiles maxsim's numba code (maxsim/jit.py) would
# land in the stderr that tests compare exactly, on a fresh checkout; tests/test_jit.py turns it on.
os.environ.setdefault("MAXSIM_COMPILE_NOTICE", "0")
# the result cache of compare, validate and sweep: a folder of this test session's own, never the
# user's cache (a test that needs its own sets MAXSIM_CACHE_DIR again)
os.environ["MAXSIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="maxsim-test-cache-")

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
