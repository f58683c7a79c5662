"""How maxsim builds its compiled code (maxsim/jit.py): a process that compiles says so on stderr
(what, that it happens once, where the cache is); a process that finds the cache says nothing; a
read-only install caches in the user's cache folder; helpers marked ``forceinline`` are compiled
once whatever constants they are called with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# a maxsim module's compiled function, small enough to compile in about a second
CALL_SECTORS = ("import numpy as np\n"
                "from maxsim.timing.summaries import sectors\n"
                "print(sectors(np.array([[0, 4, 64]]), np.array([[True, True, True]]), 4)[0].tolist())\n")


def _run(code, cache):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "MAXSIM_COMPILE_NOTICE": "1"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)


def test_a_compiling_process_says_what_once_and_where_a_cached_one_says_nothing(tmp_path):
    cache = tmp_path / "cache"
    first = _run(CALL_SECTORS, cache)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "[0, 64]\n"  # the sectors of bytes 0-3, 4-7 and 64-67
    lines = first.stderr.splitlines()
    assert len(lines) == 1, first.stderr
    assert lines[0].startswith("maxsim: compiling the memory-access summaries (maxsim.timing.summaries._sectors)")
    assert "once" in lines[0] and lines[0].endswith(str(cache))
    assert any(cache.rglob("*.nbi"))  # numba's index of the cached code is where the notice says
    second = _run(CALL_SECTORS, cache)
    assert second.returncode == 0 and second.stdout == first.stdout
    assert second.stderr == ""


def test_the_notice_can_be_silenced(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "MAXSIM_COMPILE_NOTICE": "0"}
    p = subprocess.run([sys.executable, "-c", CALL_SECTORS], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=300)
    assert p.returncode == 0 and p.stderr == ""


def test_a_read_only_install_caches_in_the_users_cache_folder(tmp_path):
    """With the package's folders not writable (a system-wide install), the cache goes to
    $XDG_CACHE_HOME/maxsim/numba and numba is told so."""
    code = ("import os\n"
            "os.access = lambda path, mode, **kw: False if mode == os.W_OK else True\n"
            "import numba, maxsim.jit as j\n"
            "print(j.CACHE_KIND, j.CACHE_DIR, numba.config.CACHE_DIR, sep='\\n')\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    want = str(tmp_path / "maxsim" / "numba")
    assert p.stdout.split("\n")[:3] == ["user", want, want]


def test_an_inlined_helper_is_compiled_once_whatever_constants_it_is_called_with():
    from maxsim.jit import njit

    @njit(forceinline=True)
    def scaled(x, k):
        return x * k

    @njit
    def caller(a):
        return scaled(a[0], 2) + scaled(a[1], 3) + scaled(a[2], True)

    assert caller(np.array([1, 10, 100])) == 1 * 2 + 10 * 3 + 100
    assert len(scaled.overloads) == 2  # (int64, int64) and (int64, bool): no literal 2, 3, True


def test_the_sm_core_indexes_without_wraparound_and_other_code_keeps_it():
    """The SM core's module is compiled without Python's negative-index wrap-around (maxsim/jit.py:
    NO_WRAPAROUND); every other function keeps it. Seen through a view into a larger array, where
    index -1 taken as it is reads the element just before the view."""
    from maxsim.jit import NO_WRAPAROUND, njit

    def last(a):
        return a[-1]

    def last_in_core(a):
        return a[-1]
    last_in_core.__module__ = NO_WRAPAROUND[0]
    view = np.arange(10)[5:]
    assert njit(last)(view) == 9  # Python's meaning: the last element
    assert njit(last_in_core)(view) == 4  # as it is: base[5 - 1]
