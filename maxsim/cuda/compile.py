"""Compile CUDA C (NVRTC) and PTX (ptxas) to an sm_52 cubin.

NVRTC is the shared library of the ``nvidia-cuda-nvrtc-cu12`` wheel (``nvidia/cuda_nvrtc/lib/
libnvrtc.so.12``), called with ctypes: ``nvrtcCreateProgram``, ``nvrtcCompileProgram`` with
``--gpu-architecture=sm_52`` (a real architecture, so the program holds SASS), ``nvrtcGetCUBIN``.
ptxas is the executable of the ``nvidia-cuda-nvcc-cu12`` wheel (``nvidia/cuda_nvcc/bin/ptxas``),
run as ``ptxas -arch=sm_52 -o OUT.cubin IN.ptx``. CUDA 12.x is the last release that targets
Maxwell (sm_50/52); CUDA 13 dropped it.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import subprocess
import tempfile

from ..errors import MaxsimError

ARCH = "sm_52"
COMPILED_KEPT = 64  # cubins of .cu files kept per process (a simulator setting: bounds the memory held)
INSTALL = 'pip install "maxsim[cuda]"'


class MissingToolError(MaxsimError):
    """NVIDIA's compiler is not installed (the optional extra ``maxsim[cuda]``)."""


class CompileError(MaxsimError):
    """The compiler refused the program: the first line of its log, with the file."""


def _nvidia_dirs():
    """The ``nvidia`` namespace directories of the installed wheels."""
    try:
        import nvidia
    except ImportError:
        return []
    return list(getattr(nvidia, "__path__", []))


@functools.lru_cache(maxsize=None)
def _nvrtc():
    for base in _nvidia_dirs():
        lib = os.path.join(base, "cuda_nvrtc", "lib", "libnvrtc.so.12")
        if os.path.exists(lib):
            try:
                nv = ctypes.CDLL(lib)
            except OSError as e:
                raise MissingToolError(f"NVRTC at {lib} cannot be loaded ({e}); reinstall with: {INSTALL}") from None
            nv.nvrtcGetErrorString.restype = ctypes.c_char_p
            return nv
    raise MissingToolError(f"compiling CUDA C needs NVIDIA's NVRTC (nvidia-cuda-nvrtc-cu12); install it with: {INSTALL}")


def ptxas_path() -> str:
    """The ptxas of the nvidia-cuda-nvcc-cu12 wheel."""
    for base in _nvidia_dirs():
        exe = os.path.join(base, "cuda_nvcc", "bin", "ptxas")
        if os.path.exists(exe):
            return exe
    raise MissingToolError(f"compiling PTX needs NVIDIA's ptxas (nvidia-cuda-nvcc-cu12); install it with: {INSTALL}")


def nvrtc_version() -> tuple:
    nv = _nvrtc()
    major, minor = ctypes.c_int(), ctypes.c_int()
    nv.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return major.value, minor.value


def _first_error(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln
    return lines[0] if lines else "no message"


def compile_cuda(source: str, filename: str = "kernel.cu", options=(), ptx: bool = False) -> bytes:
    """The sm_52 cubin NVRTC makes of CUDA C ``source`` (``options``: extra NVRTC options such as
    ``-DN=4``); with ``ptx``, the PTX text for compute_52 instead (bytes, for ptxas). Errors:
    :class:`CompileError` with NVRTC's first error line."""
    nv = _nvrtc()
    prog = ctypes.c_void_p()
    name = os.path.basename(filename).encode()
    r = nv.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name, 0, None, None)
    if r:
        raise CompileError(f"{filename}: NVRTC cannot create the program: {nv.nvrtcGetErrorString(r).decode()}")
    try:
        arch = ARCH.replace("sm_", "compute_") if ptx else ARCH
        opts = [f"--gpu-architecture={arch}", "--std=c++17", *options]
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        r = nv.nvrtcCompileProgram(prog, len(opts), arr)
        size = ctypes.c_size_t()
        nv.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        nv.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace")
        if r:
            raise CompileError(f"{_first_error(log)} (NVRTC {'.'.join(map(str, nvrtc_version()))}, {ARCH})")
        if ptx:
            nv.nvrtcGetPTXSize(prog, ctypes.byref(size))
            out = ctypes.create_string_buffer(size.value)
            nv.nvrtcGetPTX(prog, out)
            return out.value
        nv.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        out = ctypes.create_string_buffer(size.value)
        r = nv.nvrtcGetCUBIN(prog, out)
        if r:
            raise CompileError(f"{filename}: NVRTC gives no cubin: {nv.nvrtcGetErrorString(r).decode()}")
        return out.raw
    finally:
        nv.nvrtcDestroyProgram(ctypes.byref(prog))


def compile_ptx(ptx: str, filename: str = "kernel.ptx", options=()) -> bytes:
    """The sm_52 cubin ptxas makes of PTX text ``ptx``."""
    exe = ptxas_path()
    with tempfile.TemporaryDirectory(prefix="maxsim-ptxas-") as tmp:
        src = os.path.join(tmp, "in.ptx")
        out = os.path.join(tmp, "out.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        p = subprocess.run([exe, f"-arch={ARCH}", *options, "-o", out, src], capture_output=True, text=True)
        if p.returncode:
            msg = _first_error(p.stderr or p.stdout).replace(src, filename)
            raise CompileError(f"{msg} (ptxas, {ARCH})")
        with open(out, "rb") as f:
            return f.read()


def compile_file(path, options=()) -> bytes:
    """The cubin of a ``.cu`` or ``.ptx`` file."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise CompileError(f"{path}: cannot read the file: {getattr(e, 'strerror', None) or e}") from None
    if path.endswith(".ptx"):
        return compile_ptx(text, path, options)
    if "#include" in text:  # (what it includes may change between two loads)
        return compile_cuda(text, path, options)
    return _compiled_source(text, path, tuple(options))


@functools.lru_cache(maxsize=COMPILED_KEPT)
def _compiled_source(text, path, options):
    """compile_cuda of a source that includes nothing, once per process for each text, name and
    options (a program that loads a kernel for each launch compiles it once)."""
    return compile_cuda(text, path, options)


_GLOBAL_RE = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:void)\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?"
                        r"([A-Za-z_]\w*)\s*\(([^)]*)\)", re.S)
_ENTRY_RE = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)", re.S)


def signature_names(text: str, path: str = "") -> dict:
    """{kernel name: (parameter names in order)} read from the ``__global__`` signatures of CUDA C
    (or the ``.entry`` lines of PTX): the names the host passes parameters by."""
    out = {}
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    if path.endswith(".ptx"):
        for m in _ENTRY_RE.finditer(text):
            out[m.group(1)] = tuple(p.split()[-1] for p in m.group(2).split(",") if p.strip())
        return out
    for m in _GLOBAL_RE.finditer(text):
        names = []
        for p in m.group(2).split(","):
            p = p.split("=")[0].strip()
            if not p or p == "void":
                continue
            words = re.findall(r"[A-Za-z_]\w*", p)
            names.append(words[-1] if words else "")
        out[m.group(1)] = tuple(names)
    return out
