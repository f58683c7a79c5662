"""CUDA C and PTX in: NVIDIA's compilers from pip turn them into an sm_52 cubin.

CUDA C goes through NVRTC (``nvidia-cuda-nvrtc-cu12``, loaded with ctypes from the wheel's library
directory; ``nvrtcGetCUBIN`` gives the cubin in-process), PTX through ``ptxas`` of
``nvidia-cuda-nvcc-cu12``. Both come with the optional extra ``pip install "maxsim[cuda]"``; without
it a compile stops with one line saying what to install.
"""

from .compile import (CompileError, MissingToolError, compile_cuda, compile_file, compile_ptx,
                      nvrtc_version, ptxas_path)

__all__ = ["CompileError", "MissingToolError", "compile_cuda", "compile_ptx", "compile_file",
           "nvrtc_version", "ptxas_path"]
