"""NVRTC (``nvidia-cuda-nvrtc-cu12``, CUDA 12.9) for tests: CUDA C -> sm_52 cubin, in-process.

:func:`find_nvrtc` locates ``libnvrtc.so.12``: the environment variable ``MAXSIM_NVRTC`` (the
library's path), else the ``nvidia/cuda_nvrtc/lib`` directory of the pip package. CI installs it
with ``pip install nvidia-cuda-nvrtc-cu12==12.9.86``.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from pathlib import Path


def find_nvrtc():
    env = os.environ.get("MAXSIM_NVRTC")
    if env:
        return env if Path(env).is_file() else None
    spec = importlib.util.find_spec("nvidia")
    for loc in (spec.submodule_search_locations if spec else None) or ():
        p = Path(loc) / "cuda_nvrtc" / "lib" / "libnvrtc.so.12"
        if p.is_file():
            return str(p)
    return None


def compile_cubin(lib_path: str, source: str, arch: str = "sm_52", name: str = "corpus.cu") -> bytes:
    """The cubin NVRTC builds from CUDA C ``source`` for ``arch``."""
    lib = ctypes.CDLL(lib_path)
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None)
    if rc:
        raise RuntimeError(f"nvrtcCreateProgram: {rc}")
    opts = [f"-arch={arch}".encode(), b"-default-device"]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    if rc:
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        raise RuntimeError(f"NVRTC could not compile {name}: {log.value.decode(errors='replace')}")
    size = ctypes.c_size_t()
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetCUBIN(prog, buf)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return buf.raw
