"""A cache of predictions on disk: a point computed once is read back the next time.

A result is keyed by everything it depends on: the kernel's text (a compiled kernel's source with
its compiler options and defines, :func:`kernel_source`), the resolved architecture config
(every value, whatever file or override set it), the launch (sizes, arguments, residency, the data
of its buffers) and the version of the model, the hash of the source files of the simulator (and
of the workload code that builds the launch) — any change of the model's code or shipped configs
makes every earlier result a miss. Entries are pickled results, one file per key, written
atomically (a crash leaves no half-written entry).

maxsim's cache folder is the user's cache directory (``platformdirs.user_cache_dir("maxsim")``, on
Linux ``$XDG_CACHE_HOME/maxsim`` or ``~/.cache/maxsim``), or ``$MAXSIM_CACHE_DIR`` when that is set.
It holds two caches: the results, in ``results/`` (entries of a few kB, never evicted), and the
compiled code of the simulator's cores, in ``numba/`` (:mod:`maxsim.jit`, a folder per key).
:func:`cache_info` and :func:`clear` (``maxsim cache info`` / ``maxsim cache clear``) show and empty
them.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from pathlib import Path

import attrs

CACHE_ENV = "MAXSIM_CACHE_DIR"
SOURCE_SUFFIXES = (".py", ".toml", ".sass")


RESULTS = "results"  # the folders of the two caches in the cache folder
COMPILED = "numba"


def cache_dir() -> Path:
    """maxsim's cache folder: ``$MAXSIM_CACHE_DIR``, else the user's cache folder for maxsim."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    import platformdirs
    return Path(platformdirs.user_cache_dir("maxsim", appauthor=False))


def _usage(folder):
    """(files, bytes) under ``folder``."""
    files = size = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                size += os.lstat(os.path.join(root, name)).st_size
                files += 1
            except OSError:
                pass
    return files, size


def cache_info(current_key=None) -> dict:
    """What the two caches hold: the folder, and for the compiled code each key's entry (files,
    bytes, when last used, whether it is ``current_key``, the one this maxsim uses), for the results
    the number of entries and their bytes."""
    import datetime
    base = cache_dir()
    compiled = []
    try:
        folders = sorted((d for d in (base / COMPILED).iterdir() if d.is_dir()),
                         key=lambda d: d.stat().st_mtime, reverse=True)
    except OSError:
        folders = []
    for d in folders:
        files, size = _usage(d)
        used = datetime.datetime.fromtimestamp(d.stat().st_mtime, datetime.timezone.utc)
        compiled.append({"key": d.name, "files": files, "bytes": size, "in_use": d.name == current_key,
                         "last_used": used.isoformat(timespec="seconds")})
    files, size = _usage(base / RESULTS)
    return {"folder": str(base),
            "compiled": {"folder": str(base / COMPILED), "entries": compiled,
                         "bytes": sum(e["bytes"] for e in compiled)},
            "results": {"folder": str(base / RESULTS), "entries": sum(1 for _ in (base / RESULTS).rglob("*.pickle")),
                        "bytes": size}}


def clear(compiled=True, results=True) -> dict:
    """Empty the compiled code's cache and/or the result cache; the bytes freed by each."""
    import shutil
    freed = {}
    for name, chosen in (("compiled", compiled), ("results", results)):
        if chosen:
            folder = cache_dir() / (COMPILED if name == "compiled" else RESULTS)
            freed[name] = _usage(folder)[1]
            shutil.rmtree(folder, ignore_errors=True)
    return freed


_versions = {}


def model_version(*package_dirs) -> str:
    """The hash of the source files (.py, .toml, .sass) under ``package_dirs`` (default: the maxsim
    package), by their paths relative to each folder and their bytes."""
    dirs = tuple(Path(d).resolve() for d in (package_dirs or (Path(__file__).parent,)))
    if dirs in _versions:
        return _versions[dirs]
    h = hashlib.sha256()
    for d in dirs:
        for path in sorted(p for p in d.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()
                           and "__pycache__" not in p.parts):
            h.update(f"{d.name}/{path.relative_to(d).as_posix()}\0".encode())
            h.update(path.read_bytes())
            h.update(b"\0")
    _versions[dirs] = h.hexdigest()[:24]
    return _versions[dirs]


def config_values(cfg) -> dict:
    """Every value of a resolved config that a prediction can depend on (not its name, file or
    description)."""
    return {f.name: attrs.asdict(getattr(cfg, f.name)) for f in attrs.fields(type(cfg))
            if f.name not in ("name", "description", "source")}


def _canonical(value):
    """A JSON-able form of a key's parts (tuples as lists, numpy scalars and arrays by value)."""
    import numpy as np
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, np.ndarray):
        return {"ndarray": str(value.dtype), "shape": list(value.shape),
                "sha256": hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()}
    if isinstance(value, np.generic):
        return value.item()
    if attrs.has(type(value)):
        return {type(value).__name__: _canonical(attrs.asdict(value, recurse=False))}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    raise TypeError(f"cannot key a result on a {type(value).__name__}")


def kernel_source(path, options=(), defines=None) -> dict:
    """The key part of a kernel compiled from a file (.cu, .ptx): the file's text, the compiler
    options with the defines (as :meth:`maxsim.Kernel.load` passes them) and the compiler's
    version, so a result computed with ``-DN=512`` or ``-use_fast_math`` is not read back for
    another build of the same file. A .cubin or SASS file: its bytes."""
    from .host.kernel import compile_options
    p = Path(path)
    part = {"file": p.name, "options": list(compile_options(options, defines))}
    if p.suffix.lower() in (".cu", ".ptx"):
        part["source"] = p.read_text(encoding="utf-8")
        try:
            from .cuda.compile import nvrtc_version
            part["compiler"] = "NVRTC %d.%d" % nvrtc_version()
        except Exception:  # no compiler: nothing can be computed, the key only has to differ
            part["compiler"] = None
    else:
        part["bytes"] = hashlib.sha256(p.read_bytes()).hexdigest()
    return part


class ResultCache:
    """Results on disk under ``directory`` (default ``results`` in :func:`cache_dir`), for model ``version``
    (default :func:`model_version` of the maxsim package)."""

    def __init__(self, directory=None, version=None):
        self.directory = Path(directory) if directory is not None else cache_dir() / RESULTS
        self.version = version if version is not None else model_version()
        self.hits = 0
        self.misses = 0

    def key(self, **parts) -> str:
        """The key of a result depending on ``parts`` (and the model version)."""
        text = json.dumps({"model": self.version, **_canonical(parts)}, sort_keys=True, allow_nan=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def _path(self, key):
        return self.directory / key[:2] / f"{key}.pickle"

    def get(self, key, default=None):
        try:
            with open(self._path(key), "rb") as f:
                value = pickle.load(f)
        except FileNotFoundError:
            self.misses += 1
            return default
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
            self.misses += 1  # unreadable or from an incompatible version: recomputed and rewritten
            return default
        self.hits += 1
        return value

    def put(self, key, value) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pickle")
            with os.fdopen(fd, "wb") as f:
                pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written costs time, never a result
