"""numba, as the compiled parts of maxsim use it (fp32 arithmetic, the SM core, the memory system).

**Inlined helpers.** ``njit(..., forceinline=True)`` makes a helper that LLVM inlines into every
compiled caller (:class:`InlinedDispatcher`). numba compiles it once, as a function of its own
marked always-inline, with no wrappers for calls from Python (only compiled code calls it); LLVM
inlines it before the caller's reference-count pruning and optimisation. A call from compiled code
passes constant arguments as plain values (``phase=1`` is an int64, not the literal 1), so a helper
is not compiled again for each constant it is called with (LLVM folds the constant once inlined).
Functions such a helper calls are inlined too (numba passes ``forceinline`` on to the functions it
compiles for it) unless they say ``forceinline=False``. numba's own ``inline="always"`` copies the
callee's IR into the caller in Python and runs the callee's whole front end again at every call
site, nested helpers again inside each: fine for a small helper, but for the SM core's issue path
it was most of the ~45 CPU seconds the core took to compile (now ~15 s, and the core runs as fast
or faster: benchmarks/sm_speed.py).

**The cache, and saying so.** Compiled code is kept on disk (``cache=True``), never inside the
installed package (an uninstall would leave it behind, and the leftover folder would shadow a later
install): in the folder ``numba/KEY`` of maxsim's cache folder (``platformdirs``' user cache folder,
on Linux ``~/.cache/maxsim``, or ``$MAXSIM_CACHE_DIR``), a folder per package folder inside. KEY
names maxsim's version, the hash of its Python sources, the numba and Python versions and the CPU
(with numba's optimisation level, ``NUMBA_OPT``),
so a new version, a changed source, another interpreter or another CPU compiles again instead of
loading stale code; when a new KEY is made, entries unused for ``KEEP_DAYS`` days or beyond the
``KEEP_ENTRIES`` most recently used are removed. ``maxsim cache info`` / ``maxsim cache clear``
show and empty it. Whenever a process starts to build compiled code (no cached version), one line
on stderr says what is being compiled, that it happens once, and where the cache lives
(``MAXSIM_COMPILE_NOTICE=0`` silences it).

Before numba compiles anything in a process it imports its implementations of NumPy, and one of
them (``numba.np.arraymath``) imports ``scipy.linalg`` when SciPy is installed, only to learn whether
``np.dot`` may call BLAS. Those imports (scipy.linalg pulls in numpy.f2py, unittest, ...) cost about
half a second of CPU, and no compiled function of maxsim uses BLAS. This module hides
``scipy.linalg`` while numba loads those implementations, so numba records that BLAS is absent (its
``np.convolve`` / ``np.correlate`` then use their plain-loop versions in this process; a compiled
``np.dot`` or other linear algebra still imports SciPy when it is compiled). Nothing changes when
``scipy.linalg`` is already imported. A process that only loads compiled code from the cache imports
none of them (see "loading cached code" below).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


class _HideScipyLinalg:
    """A meta path finder that makes ``import scipy.linalg...`` fail (ImportError)."""

    def find_spec(self, name, path=None, target=None):
        if name == "scipy.linalg" or name.startswith("scipy.linalg."):
            raise ImportError(f"{name} is not imported by maxsim's compiled code")
        return None


# changes to numba's compiler modules made when numba loads them (before a compile), so that a process
# that only loads compiled code from the cache does not import them
_WHEN_COMPILING = []


def _without_scipy_linalg():
    """numba's CPU target imports its implementations of NumPy (``load_additional_registries``, on
    the first compile of a process) with ``scipy.linalg`` hidden: numba.np.linalg records "no BLAS"
    instead of importing it. The changes of ``_WHEN_COMPILING`` are made then."""
    from numba.core import cpu
    original = cpu.CPUContext.load_additional_registries
    if getattr(original, "maxsim", False):
        return

    def load_additional_registries(self):
        if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
            out = original(self)
        else:
            finder = _HideScipyLinalg()
            sys.meta_path.insert(0, finder)
            try:
                out = original(self)
            finally:
                sys.meta_path.remove(finder)
        for change in _WHEN_COMPILING:
            change()
        return out
    load_additional_registries.maxsim = True
    cpu.CPUContext.load_additional_registries = load_additional_registries


_without_scipy_linalg()

import numba  # noqa: E402
from numba import types  # noqa: E402
from numba.core import cgutils, event  # noqa: E402
from numba.core.registry import CPUDispatcher  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

PACKAGE = Path(__file__).resolve().parent
KEEP_ENTRIES = 4  # entries (keys) kept besides the one in use: the most recently used ones ...
KEEP_DAYS = 30  # ... and none unused for longer


def source_hash():
    """The hash of the package's Python sources (paths and bytes): compiled code depends on them all
    (numba freezes the globals a compiled function reads, and LLVM inlines helpers of other modules
    into their callers, so a change anywhere can change the machine code of a module that did not
    change)."""
    import hashlib
    h = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        h.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]


def cache_key():
    """The name of the folder the compiled code of this maxsim lives in: its version, the hash of
    its sources, the numba and Python it is compiled with, and the CPU (its name and a hash of its
    features and of numba's optimisation level) the machine code is for. Anything else finds a
    folder of its own, never stale code."""
    import hashlib

    import llvmlite.binding as ll

    from ._version import __version__
    cpu = numba.config.CPU_NAME or ll.get_host_cpu_name()
    features = numba.config.CPU_FEATURES or ll.get_host_cpu_features().flatten()
    opt = numba.config.OPT  # (NUMBA_OPT: LLVM's optimisation level changes the machine code too)
    tag = hashlib.sha256(f"{features} opt={'max' if opt.is_opt_max else int(opt)}".encode()).hexdigest()[:8]
    py = f"py{sys.version_info[0]}{sys.version_info[1]}"
    return f"{__version__}-{source_hash()}-numba{numba.__version__}-{py}-{cpu}-{tag}"


def compiled_root():
    """The folder of every key's compiled code: ``numba`` in maxsim's cache folder."""
    from .cache import COMPILED, cache_dir
    return cache_dir() / COMPILED


def prune(root, keep, now=None):
    """Remove the entries under ``root`` other than ``keep`` that were last used more than
    ``KEEP_DAYS`` ago or are not among the ``KEEP_ENTRIES`` most recently used (a folder's time of
    modification is touched by every process that uses it). Returns the entries removed."""
    import shutil
    import time
    now = time.time() if now is None else now
    try:
        others = [d for d in root.iterdir() if d.is_dir() and d.name != keep]
    except OSError:
        return []
    others.sort(key=lambda d: d.stat().st_mtime, reverse=True)
    gone = [d for i, d in enumerate(others)
            if i >= KEEP_ENTRIES or now - d.stat().st_mtime > KEEP_DAYS * 86400]
    for d in gone:
        shutil.rmtree(d, ignore_errors=True)
    return gone


def _use_cache_dir():
    """The folder this process's compiled code is kept in (created when missing, older entries
    pruned then); its time of modification says when it was last used."""
    import time
    where = compiled_root() / cache_key()
    try:
        if not where.is_dir():
            where.mkdir(parents=True, exist_ok=True)
            prune(where.parent, where.name)
        elif time.time() - where.stat().st_mtime > 3600:
            os.utime(where)
    except OSError:
        pass  # unwritable: numba then compiles without a cache (the notice still says where it looked)
    return where


CACHE_DIR = _use_cache_dir()


def _install_locator():
    """Make numba keep the compiled code of maxsim's modules (and of them only) under ``CACHE_DIR``,
    a folder per package folder, whatever ``NUMBA_CACHE_DIR`` says and wherever the package is
    installed: never beside the installed modules, where an uninstall would leave it behind."""
    from numba.core import caching
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    ready = set()  # the folders found writable

    class MaxsimCacheLocator(caching._CacheLocator):
        def __init__(self, py_func, py_file, folder):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = str(CACHE_DIR / folder)

        def get_cache_path(self):
            return self._cache_path

        def get_source_stamp(self):
            return "sources"  # the folder's key holds the hash of every source file

        def get_disambiguator(self):
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file):
            try:
                folder = Path(py_file).resolve().parent.relative_to(PACKAGE)
            except (ValueError, OSError):
                return None  # not maxsim's: numba's own places
            self = cls(py_func, py_file, folder)
            if self._cache_path in ready:
                return self
            try:
                self.ensure_cache_path()  # (makes the folder and writes a file to see it can)
            except OSError:
                return None
            ready.add(self._cache_path)  # once per folder, not once per compiled function
            return self

    if not any(c.__name__ == "MaxsimCacheLocator" for c in impl._locator_classes):
        impl._locator_classes.insert(0, MaxsimCacheLocator)


_install_locator()

# what each module's compiled code is, for the notice
WHAT = {
    "maxsim.timing.core": "the SM core",
    "maxsim.timing.memory_core": "the L2/DRAM memory system",
    "maxsim.timing.tlb": "address translation",
    "maxsim.functional.fp32": "the fp32 arithmetic",
    "maxsim.functional.bounds": "the memory bounds check",
    "maxsim.timing.summaries": "the memory-access summaries",
    "maxsim.gpu.sector_lru": "the history's sector sets (L2 replay)",
    "maxsim.timing.clock": "the clock of SMs run together",
}


def cache_place():
    """The cache's place in words."""
    return str(CACHE_DIR)


class CompileNotice(event.Listener):
    """Says on stderr, once per outermost compilation, that compiled code is being built."""

    def __init__(self, stream=None):
        self.stream = stream
        self.depth = 0
        self.told = set()  # functions already announced (one line each, whatever its signatures)

    def on_start(self, ev):
        self.depth += 1
        if self.depth > 1 or os.environ.get("MAXSIM_COMPILE_NOTICE", "1") == "0":
            return
        func = ev.data["dispatcher"].py_func
        module = func.__module__ or ""
        if not module.startswith("maxsim"):
            return
        name = f"{module}.{func.__qualname__}"
        if name in self.told:
            return
        what = f"{WHAT.get(module, module)} ({name})"
        if self.told:
            line = f"maxsim: compiling {what} too"
        else:
            line = (f"maxsim: compiling {what} to machine code (numba); this happens once, later runs "
                    f"load it from the cache in {cache_place()}")
        self.told.add(name)
        stream = self.stream or sys.stderr
        try:
            stream.write(line + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass

    def on_end(self, ev):
        self.depth -= 1


NOTICE = CompileNotice()
event.register("numba:compile", NOTICE)


# ---- compiled code built by another process ----
_ELSEWHERE = []  # (process, module names) of workers compiling into the cache


_AHEAD = []  # compiles a timed run needs later, done while workers compile (compile_ahead)


def compile_ahead(fn):
    """Register ``fn`` (no arguments), which compiles (or loads) code that a timed run needs after
    the workers' code: :func:`compile_ahead_now` runs it while they still compile, so the run does
    not compile it once their code has come (a decorator; returns ``fn``)."""
    _AHEAD.append(fn)
    return fn


def compile_ahead_now():
    """While a worker of this process compiles into the cache, run the compiles registered with
    :func:`compile_ahead` (each once); with no worker running, nothing (they compile when used)."""
    if workers_compiling():
        while _AHEAD:
            _AHEAD.pop(0)()


def workers_compiling() -> bool:
    """Whether a worker this process started (:func:`compiled_elsewhere`) is still compiling."""
    return any(proc.poll() is None for proc, _ in _ELSEWHERE)


def compiling_elsewhere(modules) -> bool:
    """Whether a worker this process started (:func:`compiled_elsewhere`) is still compiling
    ``modules`` into the cache."""
    modules = tuple(modules)
    return any(named == modules and proc.poll() is None for proc, named in _ELSEWHERE)


def compiled_elsewhere(proc, modules, what, where="a second process", say=True):
    """``proc`` (a running process) is compiling the functions of ``modules`` (module names, or
    module.function names) into the cache: a function of theirs that this process needs waits for it
    to end, then loads from the cache
    (compiling itself only if the worker failed). The notice says so now (``what``, ``where``;
    unless ``say`` is false); a worker still running when this process ends is stopped."""
    import atexit
    _ELSEWHERE.append((proc, tuple(modules)))
    atexit.register(lambda: proc.poll() is None and proc.terminate())
    if say and os.environ.get("MAXSIM_COMPILE_NOTICE", "1") != "0":
        try:
            sys.stderr.write(f"maxsim: compiling {what} to machine code (numba) in {where}; this "
                             f"happens once, later runs load it from the cache in {cache_place()}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        NOTICE.told.add(what)  # later lines say "too"


# ---- loading cached code without numba's compiler registries ----
# numba's cache, before it loads a compiled function, "refreshes" the target context: it imports and
# registers every implementation the compiler may need (NumPy's random generators, datetimes,
# polynomials, typed containers, ...), ~0.15 s of a process that only loads maxsim's compiled code
# (a third of the loading in `maxsim run sgemm_64` with a warm cache). Loaded machine code needs none
# of it; it needs the symbols it links to: numba's runtime (NRT), its C helpers and math functions
# (installed when the context is made) and the hash secret (numba.cpython.hashing). Those are set up
# here instead; a compile in the same process refreshes the context itself, as it always does.
def _ready_to_load(target_context):
    from numba.core.runtime import rtsys
    rtsys.initialize(target_context)
    import numba.cpython.hashing  # noqa: F401  (its import gives LLVM the hash secret's symbols)


def _load_without_refresh():
    from numba.core import caching
    original = caching.Cache.load_overload
    if getattr(original, "lean", False):
        return

    def load_overload(self, sig, target_context):
        _ready_to_load(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
    load_overload.lean = True
    caching.Cache.load_overload = load_overload


_load_without_refresh()


def _wait_for_others():
    from numba.core import caching
    original = caching.Cache.load_overload
    if getattr(original, "maxsim", False):
        return

    def load_overload(self, sig, target_context):
        func = getattr(self, "_py_func", None)
        module = getattr(func, "__module__", "") or ""
        name = f"{module}.{getattr(func, '__qualname__', '')}"
        for proc, modules in _ELSEWHERE:
            if (module in modules or name in modules) and proc.poll() is None:
                proc.wait()
        return original(self, sig, target_context)
    load_overload.maxsim = True
    caching.Cache.load_overload = load_overload


_wait_for_others()


# ---- array indexing without Python's wrap-around ----
# numba indexes an array with a signed integer as Python does: a negative index counts from the end,
# so every access computes ``index + size if index < 0``. The SM core indexes its arrays with
# non-negative numbers only (slots, pcs, fields, trace positions: tests/test_core_parity.py holds it
# to the reference core), and there that arithmetic was ~10% of its time (benchmarks/sm_speed.py:
# one wave of sgemm_128 on 16 SMs, 278 -> 249 ms). The modules below are compiled without it: an
# index is used as it is (a negative one reads outside the array, as an index past the end does
# with numba's bounds checks off). Other code, numba's own included, keeps the wrap-around. The
# functional model's ALU tables (maxsim.functional.alublock) run each row over a chunk of lanes
# ``range(lo, hi)``, whose wrap-around kept LLVM from vectorising the loops (~1.8 against ~0.2 ns
# a lane for a MOV).
NO_WRAPAROUND = ("maxsim.timing.core", "maxsim.functional.alublock")
_NO_WRAP_PREFIXES = tuple("_ZN" + "".join(f"{len(p)}{p}" for p in m.split(".")) for m in NO_WRAPAROUND)


def _without_wraparound():
    """Make numba's array indexing skip the wrap-around in the functions of ``NO_WRAPAROUND`` (told
    by their mangled names, which start with their module's path). Nothing changes when numba has
    no such step to replace (the code is then only slower)."""
    from numba.np import arrayobj
    original = getattr(arrayobj, "fix_integer_index", None)
    if original is None or getattr(original, "maxsim", False):
        return

    def fix_integer_index(context, builder, idxty, idx, size):
        if idxty.signed and builder.function.name.startswith(_NO_WRAP_PREFIXES):
            return context.cast(builder, idx, idxty, types.intp)
        return original(context, builder, idxty, idx, size)
    fix_integer_index.maxsim = True
    arrayobj.fix_integer_index = fix_integer_index


if "numba.np.arrayobj" in sys.modules:
    _without_wraparound()
else:
    _WHEN_COMPILING.append(_without_wraparound)  # numba imports it before it compiles


# ---- numba's inliner copies a function's variables once, not once per block ----
# A function compiled with ``inline="always"`` (the SM core's run, _schedule, _dual, _next_time) has
# its IR copied at every call site, block by block with ``copy.deepcopy``; every variable holds the
# function's scope, which holds every variable, so each block copied the whole function's variables
# again: 1.8 of the ~23 CPU seconds the SM core's compile took. The blocks of a function's IR share
# one scope; here the blocks of one copy share one copy of it (as the blocks of the IR numba builds
# share one), everything else in a block copied as before.
def _copy_scope_once():
    try:
        from numba.core import inline_closurecall as icc
        from numba.core import ir
    except ImportError:
        return
    worker = getattr(icc, "InlineWorker", None)
    original = getattr(worker, "inline_ir", None)
    copy_module = getattr(icc, "copy", None)
    if original is None or getattr(original, "maxsim", False) or getattr(copy_module, "deepcopy", None) is None:
        return
    import copy
    import threading
    state = threading.local()

    class _Copy:
        """``copy`` as the inliner's module sees it: a block's deepcopy reuses its scope's copy."""
        def __getattr__(self, name):
            return getattr(copy, name)

        @staticmethod
        def deepcopy(x, memo=None):
            scopes = getattr(state, "scopes", None)
            if memo is None and scopes is not None and type(x) is ir.Block:
                memo = {}
                known = scopes.get(id(x.scope))
                if known is not None and known[0] is x.scope:
                    memo[id(x.scope)] = known[1]
                out = copy.deepcopy(x, memo)
                if known is None:
                    scopes[id(x.scope)] = (x.scope, out.scope)
                return out
            return copy.deepcopy(x, memo)

    def inline_ir(self, *args, **kwargs):
        outer = getattr(state, "scopes", None)
        state.scopes = {}  # (one inlining: its copies of the callee's IR, each with its own scope)
        try:
            return original(self, *args, **kwargs)
        finally:
            state.scopes = outer
    inline_ir.maxsim = True
    icc.copy = _Copy()
    worker.inline_ir = inline_ir


if "numba.core.inline_closurecall" in sys.modules:
    _copy_scope_once()
else:
    _WHEN_COMPILING.append(_copy_scope_once)  # numba imports it before it compiles


# ---- calls through a pointer ----
# numba compiles a call between compiled functions by linking the callee's code, and every function
# it calls, into the caller's and optimising and translating it all again there (LLVM): the SM core's
# calls of the memory system cost its compile about as much as the memory system's own. A call
# through a pointer (:class:`Callee`) leaves the callee's code where it was compiled (another
# process may have built it; the caller's machine code holds only the name of the pointer, resolved
# when it is loaded, so it is cached as any other).
class Callee:
    """A compiled function called through a pointer named ``name``: :meth:`bind` points it at the
    compiled code of a function for some argument types (compiling or loading it then), and
    :func:`call_through` makes the call. While unbound the call is not made (the caller is told)."""

    def __init__(self, name):
        import ctypes

        import llvmlite.binding as ll
        self.symbol = f"maxsim_callee_{name}"
        self.cell = ctypes.c_void_p(0)
        ll.add_symbol(self.symbol, ctypes.addressof(self.cell))

    @property
    def bound(self):
        return bool(self.cell.value)

    def bind(self, dispatcher, argtypes, restype):
        """Point at ``dispatcher``'s compiled code for ``argtypes`` (numba types), which must return
        ``restype``."""
        argtypes = tuple(argtypes)
        dispatcher.compile(argtypes)
        cres = dispatcher.overloads[argtypes]
        if cres.signature.return_type != restype:
            raise TypeError(f"{dispatcher.py_func.__qualname__}{argtypes} returns {cres.signature.return_type}, "
                            f"not {restype}")
        self.cell.value = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)

    def unbind(self):
        self.cell.value = None


def call_through(context, builder, sig, args, callee, unbound):
    """An intrinsic's code: call ``callee`` (a :class:`Callee`) with ``args`` as a compiled function of
    signature ``sig`` (numba's calling convention; its exception, if any, goes on to the caller's
    caller); while it is unbound the value is ``unbound`` (an LLVM constant of the return type; None
    for a function that returns None) and nothing is called."""
    from llvmlite import ir
    module = builder.module
    cell = module.globals.get(callee.symbol)
    if cell is None:
        cell = ir.GlobalVariable(module, ir.IntType(8).as_pointer(), callee.symbol)
        cell.linkage = "external"
    raw = builder.load(cell)
    fn = builder.bitcast(raw, context.call_conv.get_function_type(sig.return_type, sig.args).as_pointer())
    out = None if unbound is None else cgutils.alloca_once_value(builder, unbound)
    with builder.if_then(cgutils.is_not_null(builder, raw), likely=True):
        status, res = context.call_conv.call_function(builder, fn, sig.return_type, sig.args, args)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        if out is not None:
            builder.store(res, out)
    return context.get_dummy_value() if out is None else builder.load(out)


def pointer_call(callee, sig, unbound=None):
    """An intrinsic that calls ``callee`` (a :class:`Callee`) as a compiled function of signature
    ``sig`` (numba's; the call's arguments are converted to its types as for any call), ``unbound``
    (an LLVM constant of the return type; None: a zero value) while it is unbound."""
    names = ", ".join(f"a{i}" for i in range(len(sig.args)))

    def codegen(context, builder, sig_, args):
        value = unbound
        if value is None and sig.return_type != types.none:
            value = context.get_constant_null(sig.return_type)
        return call_through(context, builder, sig, args, callee, value)
    space = {"typed": (sig, codegen)}
    exec(f"def {callee.symbol}(typingctx, {names}):\n    return typed\n", space)
    return intrinsic(space[callee.symbol])


@intrinsic
def borrow(typingctx, arr):
    """The same array without its reference count (a null meminfo): compiled code counts a
    reference to each array it passes on or keeps in a variable, with an atomic instruction each
    time (in a loop over a request's lines, most of the work); a borrowed array skips it. Safe
    while the caller holds the array for the call and the borrowed value is not stored or
    returned."""
    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, value=args[0])
        ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
        ary.parent = cgutils.get_null_value(ary.parent.type)
        return ary._getvalue()
    return arr(arr), codegen


@intrinsic
def prefetch(typingctx, arr, idx):
    """Ask the CPU to bring the cache line of element ``idx`` of ``arr``'s data (flat, C order) in
    (llvm.prefetch: a hint, never a fault, whatever the index)."""
    from llvmlite import ir

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, value=args[0])
        ptr = builder.gep(ary.data, [args[1]])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.void(arr, idx), codegen


class InlinedDispatcher(CPUDispatcher):
    """A helper compiled as its own always-inline function (``forceinline``), specialised on the
    types of its arguments only: a call from compiled code with constant arguments compiles (or
    finds) the version for their plain types."""

    def get_call_template(self, args, kws):
        args = tuple(types.unliteral(a) for a in args)
        kws = {k: types.unliteral(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)


def njit(*args, **options):
    """``numba.njit``, except that ``forceinline=True`` makes an :class:`InlinedDispatcher` (LLVM
    inlines the helper into its compiled callers, module docstring). A function such a helper calls
    is inlined too (numba passes ``forceinline`` on to the functions compiled for it) unless it says
    ``forceinline=False``."""
    if not options.get("forceinline"):
        return numba.njit(*args, **options)
    cache = options.pop("cache", False)
    # compiled code only calls it (no wrappers for calls from Python), always inlined by LLVM
    options.update(nopython=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)

    def wrap(py_func):
        dispatcher = InlinedDispatcher(py_func=py_func, locals={}, targetoptions=options)
        if cache:
            dispatcher.enable_caching()
        return dispatcher
    return wrap(args[0]) if args else wrap


__all__ = ["njit", "types", "cgutils", "intrinsic", "borrow", "prefetch", "InlinedDispatcher", "Callee", "call_through",
           "pointer_call", "compile_ahead", "compile_ahead_now",
           "workers_compiling", "CACHE_DIR",
           "cache_place"]

