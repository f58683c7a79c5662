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

    @property
    def max_threads(self) -> int:
        """Threads per CTA the kernel was compiled for (__launch_bounds__), 0 when not given."""
        x = self.cubin.max_threads
        return x[0] * max(1, x[1]) * max(1, x[2]) if x else 0


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
    _refuse_relocated(k, code)
    banks = constant_banks(k)
    if banks:
        code = attrs.evolve(code, banks=tuple(sorted(banks.items())))
    return Loaded(code, text, tuple(pnames), banks, k)


def _refuse_relocated(k: CubinKernel, code):
    """A kernel whose code the loader patches (relocations of .text.NAME), or that reads a constant
    word the loader patches with a __device__ variable's address, is refused by name: maxsim does not
    place __device__ variables in its global memory."""
    from ..isa import instruction as ins
    from .build import code_offset
    if k.relocations:
        off, typ, sym = k.relocations[0]
        raise CubinError(f"{k.filename}: kernel {k.name}: its code is patched at load time (relocation type "
                         f"{typ} against {sym!r} at 0x{off:x}), which maxsim does not model")
    patched = {(b, off) for b, off, _, _ in k.bank_relocations}
    if not patched:
        return
    for i in code.instructions:
        for op in i.operands:
            if op.kind == ins.CONST and any(b == op.bank and off <= op.value < off + 8 for b, off in patched):
                syms = sorted({sym for b, _, _, sym in k.bank_relocations if b == op.bank})
                raise CubinError(f"{k.filename}: kernel {k.name}: {i.full_opcode} at byte 0x{code_offset(i.index):x} reads the address "
                                 f"of a __device__ variable ({', '.join(syms)}) from c[0x{op.bank:x}][0x{op.value:x}]; "
                                 f"__device__ variables are not modelled (pass the data as a parameter)")


__all__ = ["Loaded", "load", "cubin_of", "is_binary_path", "CubinError", "BINARY_SUFFIXES"]
