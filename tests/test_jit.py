"""How maxsim builds its compiled code (maxsim/jit.py): a process that compiles says so on stderr
(what, that it happens once, where the cache is); a process that finds the cache says nothing; the
cache lives in maxsim's cache folder, never in the package, under a key that changes with the
sources; old entries are pruned; helpers marked ``forceinline`` are compiled once whatever
constants they are called with."""

from __future__ import annotations

import os
import shutil
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
    env = {**os.environ, "MAXSIM_CACHE_DIR": str(cache), "MAXSIM_COMPILE_NOTICE": "1"}
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
    assert "once" in lines[0]
    place = Path(lines[0].rsplit(" ", 1)[-1])
    assert place.parent == cache / "numba"  # maxsim's cache folder, numba/KEY
    assert any(place.rglob("*.nbi"))  # numba's index of the cached code is where the notice says
    second = _run(CALL_SECTORS, cache)
    assert second.returncode == 0 and second.stdout == first.stdout
    assert second.stderr == ""


# what numba's compiler imports before it compiles (its implementations of NumPy, BLAS through SciPy)
COMPILER_MODULES = ("numba.np.arraymath", "numba.np.random.legacy", "numba.np.npdatetime", "scipy.linalg")
SHOW_COMPILER_MODULES = ("import sys\n"
                         f"print(sorted(m for m in {COMPILER_MODULES!r} if m in sys.modules))\n")


def test_a_process_that_loads_cached_code_imports_no_compiler_registries_and_can_still_compile(tmp_path):
    """Loading compiled code from the cache does not make numba import what its compiler needs
    (a third of the loading time of a warm ``maxsim run``): the loaded function gives the same
    answer, and the same process can still compile a new function afterwards (numba then loads its
    registries itself, scipy.linalg still hidden)."""
    cache = tmp_path / "cache"
    first = _run(CALL_SECTORS + SHOW_COMPILER_MODULES, cache)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[1] == str(sorted(COMPILER_MODULES[:3]))  # compiled: all but SciPy's
    loaded = _run(CALL_SECTORS + SHOW_COMPILER_MODULES, cache)
    assert loaded.returncode == 0 and loaded.stderr == ""
    assert loaded.stdout.splitlines() == ["[0, 64]", "[]"]
    then = ("import numba\n"
            "f = numba.njit(lambda a: np.cumsum(a)[-1] + np.sort(a)[1])\n"
            "print(f(np.arange(5.0)))\n")
    both = _run(CALL_SECTORS + then + SHOW_COMPILER_MODULES, cache)
    assert both.returncode == 0, both.stderr
    assert both.stdout.splitlines() == ["[0, 64]", "11.0", str(sorted(COMPILER_MODULES[:3]))]


def test_the_notice_can_be_silenced(tmp_path):
    env = {**os.environ, "MAXSIM_CACHE_DIR": str(tmp_path), "MAXSIM_COMPILE_NOTICE": "0"}
    p = subprocess.run([sys.executable, "-c", CALL_SECTORS], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=300)
    assert p.returncode == 0 and p.stderr == ""


def test_the_compiled_code_never_lives_in_the_package(tmp_path):
    """Whatever NUMBA_CACHE_DIR says and whether or not the package's folder is writable, numba
    keeps maxsim's compiled code under maxsim's cache folder: numba/KEY/<package folder>."""
    code = ("import maxsim.jit as j, maxsim.timing.summaries as s, maxsim.timing.core as c\n"
            "print(j.CACHE_DIR, s._sectors._cache._cache_path, c.drive._cache._cache_path, sep='\\n')\n")
    env = {**os.environ, "MAXSIM_CACHE_DIR": str(tmp_path / "cache"), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    where, summaries, core = p.stdout.split("\n")[:3]
    assert Path(where).parent == tmp_path / "cache" / "numba"
    assert summaries == str(Path(where) / "timing") and core == summaries


def _key(tree, **env):
    p = subprocess.run([sys.executable, "-c", "import maxsim.jit as j; print(j.cache_key())"], capture_output=True,
                       text=True, cwd=tree, env={**os.environ, "MAXSIM_CACHE_DIR": str(tree / "cache"), **env},
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_the_key_names_the_version_numba_python_and_cpu_and_changes_with_any_source(tmp_path):
    """A copy of the package has the key of this one; a changed source file that has no compiled
    code of its own (its globals may be frozen into compiled code elsewhere) gives another key."""
    import llvmlite.binding as ll
    import numba

    import maxsim
    from maxsim.jit import cache_key
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "maxsim", tree / "maxsim", ignore=shutil.ignore_patterns("__pycache__"))
    here = cache_key()
    version, sources, numba_v, py, cpu = here.split("-")[:5]
    assert version == maxsim.__version__ and numba_v == f"numba{numba.__version__}"
    assert py == f"py{sys.version_info[0]}{sys.version_info[1]}"
    assert cpu == (numba.config.CPU_NAME or ll.get_host_cpu_name())
    assert _key(tree) == here
    with open(tree / "maxsim" / "isa" / "opcodes.py", "a") as f:
        f.write("\n# a change\n")
    other = _key(tree)
    assert other != here and other.split("-")[1] != sources and other.split("-")[2:] == here.split("-")[2:]
    # numba's optimisation level (NUMBA_OPT) changes the machine code: another key, the CPU's tag
    lower = _key(ROOT, NUMBA_OPT="1")
    assert lower != here and lower.split("-")[:5] == here.split("-")[:5]


def test_old_entries_are_pruned(tmp_path):
    """Kept: the entry in use, the KEEP_ENTRIES most recently used others, none unused for more than
    KEEP_DAYS days."""
    from maxsim.jit import KEEP_DAYS, KEEP_ENTRIES, prune
    assert (KEEP_ENTRIES, KEEP_DAYS) == (4, 30)
    now = 1_000_000_000.0
    ages = {"in-use": 400, "a": 1, "b": 2, "c": 3, "d": 31, "e": 5, "f": 6}  # days since last use
    for name, days in ages.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.nbi").write_bytes(b"0")
        os.utime(tmp_path / name, (now - days * 86400, now - days * 86400))
    gone = prune(tmp_path, "in-use", now=now)
    assert sorted(d.name for d in gone) == ["d", "f"]  # d: 31 days; f: the 5th most recent
    assert sorted(d.name for d in tmp_path.iterdir()) == ["a", "b", "c", "e", "in-use"]


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


def test_the_wraparound_change_is_made_in_a_process_that_had_not_imported_numbas_arrays():
    """maxsim.jit changes numba's array indexing when numba first loads it, before a compile (a
    process that only loads cached code never imports it): the change holds all the same."""
    code = ("import sys, numpy as np\n"
            "from maxsim.jit import NO_WRAPAROUND, njit\n"
            "print('numba.np.arrayobj' in sys.modules)\n"
            "def last(a):\n    return a[-1]\n"
            "def last_in_core(a):\n    return a[-1]\n"
            "last_in_core.__module__ = NO_WRAPAROUND[0]\n"
            "view = np.arange(10)[5:]\n"
            "print(njit(last)(view), njit(last_in_core)(view))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["False", "9", "4"]


INLINED_PROGRAM = """
import sys
if sys.argv[1] == "numba":  # numba's own copying of an inlined function's IR, block by block
    from numba.core import inline_closurecall as icc
    icc.InlineWorker.inline_ir.maxsim = True
from maxsim import jit
from numba.core import inline_closurecall as icc

@jit.njit(inline="always")
def helper(a, i):
    total = 0
    for k in range(i):
        if a[k] > 2:
            total += a[k] * k
        else:
            total -= k
    return total

@jit.njit
def caller(a, n):
    return helper(a, n) + helper(a, n - 1)

import numpy as np
result = caller(np.arange(10), 7)
print(type(icc.copy).__name__, result)
print(caller.inspect_llvm(caller.signatures[0]))
"""


def test_numbas_inliner_copies_a_scope_once_and_compiles_the_same_code():
    out = {}
    for how in ("maxsim", "numba"):
        p = subprocess.run([sys.executable, "-c", INLINED_PROGRAM, how], capture_output=True, text=True,
                           env=dict(os.environ, MAXSIM_COMPILE_NOTICE="0"))
        assert p.returncode == 0, p.stderr
        out[how] = p.stdout.split("\n", 1)
    expected = sum(k * k for k in range(3, 7)) - 3 + sum(k * k for k in range(3, 6)) - 3
    assert out["maxsim"][0] == f"_Copy {expected}" and out["numba"][0] == f"module {expected}"
    assert out["maxsim"][1] == out["numba"][1]  # the same LLVM IR


CALLEE_PROGRAM = """
import sys
import numpy as np
from llvmlite import ir
from maxsim import jit
from numba import types

ADD = jit.Callee("test_add")


@jit.njit(cache=True)
def add(x, A):
    if x < 0:
        raise ValueError("negative")
    A[0] += 1
    return x + A[1]


@jit.intrinsic
def _add(typingctx, x, A):
    def codegen(context, builder, sig, args):
        return jit.call_through(context, builder, sig, args, ADD, ir.Constant(ir.DoubleType(), -1.0))
    return types.float64(x, A), codegen


@jit.njit(cache=True)
def caller(x, A):
    return _add(x, A) * 2.0


TWICE = jit.Callee("test_twice")
_twice = jit.pointer_call(TWICE, types.int64(types.int64))  # (its arguments converted to int64)


@jit.njit(cache=True)
def twice(n):
    return 2 * n


@jit.njit(cache=True)
def caller2(a):
    return _twice(a[0]) + _twice(3)


B = np.array([5], np.int32)
print(caller2(B), end=" ")  # unbound: zero
TWICE.bind(twice, (types.int64,), types.int64)
print(caller2(B), end=" ")
A = np.array([0.0, 10.0])
print(caller(1.0, A), A[0], ADD.bound, end=" ")  # unbound: nothing called
ADD.bind(add, (types.float64, types.float64[::1]), types.float64)
print(caller(1.0, A), A[0], ADD.bound, end=" ")
try:
    caller(-1.0, A)
except ValueError as e:
    print(e, end=" ")
print(len(caller.stats.cache_hits), len(add.stats.cache_hits))
"""


def test_a_call_through_a_pointer_calls_the_bound_code_raises_its_errors_and_is_cached(tmp_path):
    """maxsim.jit.Callee: unbound, the caller gets the stand-in value (pointer_call: zero) and nothing
    runs; bound, the callee runs (its side effects, its value, its exception; pointer_call converts
    the arguments to its signature's types); the caller's machine code is cached and loads in a new
    process (the pointer is resolved by name then), where the callee is loaded too."""
    (tmp_path / "callee_prog.py").write_text(CALLEE_PROGRAM)
    env = {**os.environ, "MAXSIM_CACHE_DIR": str(tmp_path / "cache"), "MAXSIM_COMPILE_NOTICE": "0"}
    outs = [subprocess.run([sys.executable, "callee_prog.py"], capture_output=True, text=True, cwd=tmp_path,
                           env={**env, "PYTHONPATH": str(ROOT)}, timeout=300) for _ in range(2)]
    for p in outs:
        assert p.returncode == 0, p.stderr
    assert outs[0].stdout == "0 16 -2.0 0.0 False 22.0 1.0 True negative 0 0\n"
    assert outs[1].stdout == "0 16 -2.0 0.0 False 22.0 1.0 True negative 1 1\n"  # both loaded from the cache


def test_a_borrowed_array_reads_and_writes_the_same_data_without_counting_references():
    import numba

    from maxsim.jit import borrow, prefetch

    @numba.njit
    def fill(a, value):
        b = borrow(a)
        prefetch(b, b.shape[0] - 1)
        prefetch(b, 1 << 40)  # (a hint: an index far outside the array does not fault)
        for i in range(b.shape[0]):
            b[i] = value + i
        return b[0] + b[b.shape[0] - 1]

    a = np.zeros(5, np.int64)
    before = sys.getrefcount(a)
    assert fill(a, 10) == 10 + 14
    assert a.tolist() == [10, 11, 12, 13, 14]
    assert sys.getrefcount(a) == before
