"""A kernel from a binary or compiled file: ``.cubin``, ``.cu`` (NVRTC) or ``.ptx`` (ptxas).

:func:`load` gives the decoded kernel, its maxas text form, the parameters' names (from the CUDA C
signature or the PTX ``.entry``; a cubin alone carries none) and the constant banks the cubin
fills besides bank 0.
"""

from __future__ import annotations

import os

import attrs

from .disasm import constant_banks, decode_kernel
from .elf import CubinError, CubinKernel, plain_name, read_bytes, read_file

BINARY_SUFFIXES = (".cubin", ".cu", ".ptx")


@attrs.frozen
class Loaded:
    code: object  # maxsim.isa.Kernel
    text: str  # maxas's text form
    names: tuple  # parameter names by ordinal ("" where unknown)
    banks: dict  # {bank: bytes}: constant banks 2, 3 ... as the cubin fills them
    cubin: CubinKernel


def is_binary_path(path) -> bool:
    return isinstance(path, (str, os.PathLike)) and os.fspath(path).lower().endswith(BINARY_SUFFIXES)


def cubin_of(path, options=()):
    """(Cubin, {kernel name: parameter names}) of a .cubin, .cu or .ptx file."""
    path = os.fspath(path)
    if path.lower().endswith(".cubin"):
        return read_file(path), {}
    from ..cuda import compile_file
    from ..cuda.compile import signature_names
    data = compile_file(path, options)
    with open(path, encoding="utf-8") as f:
        names = signature_names(f.read(), path)
    return read_bytes(data, filename=path), names


def load(path, kernel=None, options=()) -> Loaded:
    """Kernel ``kernel`` (its symbol or plain C++ name; the only one when None) of a .cubin, .cu or
    .ptx file, decoded."""
    cubin, names = cubin_of(path, options)
    k = cubin.kernel(kernel)
    pnames = names.get(k.name) or names.get(plain_name(k.name)) or ()
    if pnames and len(pnames) != len(k.params):
        pnames = ()  # the signature was not read right (a macro, a template): positions only
    code, text = decode_kernel(k, pnames)
    banks = constant_banks(k)
    if banks:
        code = attrs.evolve(code, banks=tuple(sorted(banks.items())))
    return Loaded(code, text, tuple(pnames), banks, k)


__all__ = ["Loaded", "load", "cubin_of", "is_binary_path", "CubinError", "BINARY_SUFFIXES"]
