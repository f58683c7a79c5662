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
    _refuse_out_of_scope(k)
    code, text = decode_kernel(k, pnames)
    code = with_device_variables(k, code)
    code = with_source_lines(k, code)
    banks = constant_banks(k)
    if banks:
        code = attrs.evolve(code, banks=tuple(sorted(banks.items())))
    return Loaded(code, text, tuple(pnames), banks, k)


# Device-runtime functions a kernel calls through a constant-bank word the driver patches with
# the function's address (ptxas's PRET + JMX call sequence; cuobjdump -elf lists the relocations
# of .nv.constant4 against these symbols): features the model leaves out, by name
OUT_OF_SCOPE = {
    "vprintf": "printf", "malloc": "device malloc", "free": "device free (with malloc)",
    "__assertfail": "assert", "cudaLaunchDevice": "dynamic parallelism (a kernel launch from the device)",
    "cudaLaunchDeviceV2": "dynamic parallelism (a kernel launch from the device)",
    "cudaGetParameterBuffer": "dynamic parallelism (a kernel launch from the device)",
    "cudaGetParameterBufferV2": "dynamic parallelism (a kernel launch from the device)",
    "cudaDeviceSynchronize": "dynamic parallelism (cudaDeviceSynchronize on the device)",
}


def _refuse_out_of_scope(k: CubinKernel):
    """A kernel that calls a device-runtime function (printf, malloc, assert, a device-side launch)
    is refused by the feature's name and the byte offset of the instruction that reads the
    function's address: the model runs no device runtime."""
    calls = {(b, off): sym for b, off, _, sym in k.bank_relocations if sym in OUT_OF_SCOPE}
    if not calls:
        return
    code = k.code
    words = [(at, int.from_bytes(code[at:at + 8], "little")) for at in range(8, len(code) - 7, 8) if at % 32]
    ldc_banks = {w >> 36 & 0x1F for _, w in words if w >> 51 == 0xEF90 >> 3}  # LDC c[bank][R + o] [nvdisasm]
    for at, w in words:
        key = None
        if w >> 56 in (0x4C, 0x4B, 0x49, 0x48):  # a constant operand c[bank][offset] (MOV R, c[4][0x18])
            key = (w >> 34 & 0x1F, (w >> 20 & 0x3FFF) * 4)
        elif w >> 52 == 0x010:  # MOV32I R, offset, then LDC R, c[bank][R] (ptxas's call sequence)
            imm = w >> 20 & 0xFFFFFFFF
            key = next(((b, o) for b, o in calls if o == imm and b in ldc_banks), None)
        if key in calls:
            sym = calls[key]
            raise CubinError(f"{k.filename}: kernel {k.name}: code+0x{at:x}: calls {sym} ({OUT_OF_SCOPE[sym]}), "
                             f"which maxsim does not model")


def with_device_variables(k: CubinKernel, code):
    """The decoded kernel with its __device__ variables: the constant words the loader patches
    with their addresses, which the launch fills in (:func:`maxsim.functional.launch`). A kernel
    whose code the loader patches (relocations of .text.NAME), or that reads a patched constant
    word maxsim cannot fill, is refused by name."""
    from ..isa import instruction as ins
    from .build import code_offset
    if k.relocations:
        off, typ, sym = k.relocations[0]
        raise CubinError(f"{k.filename}: kernel {k.name}: its code is patched at load time (relocation type "
                         f"{typ} against {sym!r} at 0x{off:x}), which maxsim does not model")
    if not k.bank_relocations:
        return code
    words, bad = _variable_words(k)
    for i in code.instructions:
        for op in i.operands:
            if op.kind != ins.CONST:
                continue
            for (b, off), (sym, why) in bad.items():
                if b == op.bank and off <= op.value < off + 8:
                    raise CubinError(f"{k.filename}: kernel {k.name}: {i.full_opcode} at byte 0x{code_offset(i.index):x} "
                                     f"reads the address of {sym} from c[0x{op.bank:x}][0x{op.value:x}]; {why}")
    if not words:
        return code
    return attrs.evolve(code, variables=tuple((v.name, v.size, v.data) for v in k.variables), variable_words=words)


def with_source_lines(k: CubinKernel, code):
    """The decoded kernel with each instruction's CUDA source line (``Instruction.source``, which
    its ``where`` and so every refusal names) when the cubin carries line information."""
    if not k.source_lines:
        return code
    from .build import code_offset
    from .lines import source_of
    import os
    # NVRTC records the file under the name it compiled (in the directory it ran in): the file
    # loaded, when the names agree
    here = k.filename.split(":")[0]
    rows = tuple((off, here if os.path.basename(f) == os.path.basename(here) else f, line)
                 for off, f, line in k.source_lines)
    instrs = tuple(attrs.evolve(i, source=source_of(rows, code_offset(i.index))) for i in code.instructions)
    return attrs.evolve(code, instructions=instrs)


R_CUDA_64 = 2  # the relocation of a 64-bit absolute address (cuobjdump -elf: R_CUDA_64 in .rel.nv.constant4)


def _variable_words(k: CubinKernel):
    """``(words, bad)``: (bank, offset, 8, variable, addend) for each patched constant word that is
    the 64-bit address of a __device__ variable (or of a byte of .nv.global / .nv.global.init, which
    names the variable holding it); ``bad``: {(bank, offset): (symbol, why not)} for the others."""
    by_name = {v.name: v for v in k.variables}
    out, bad = [], {}
    for bank, off, typ, sym in k.bank_relocations:
        data = k.constants.get(bank, b"")
        if typ != R_CUDA_64:
            bad[(bank, off)] = (sym, f"a relocation of type {typ} is not modelled (64-bit addresses are)")
            continue
        if off + 8 > len(data):
            bad[(bank, off)] = (sym, f"constant bank {bank} is shorter than the patched word")
            continue
        addend = int.from_bytes(data[off:off + 8], "little")
        if sym in by_name:
            out.append((bank, off, 8, sym, addend))
            continue
        held = [v for v in k.variables if v.section == sym and v.offset <= addend < v.offset + max(1, v.size)]
        if not held:
            bad[(bank, off)] = (sym, f"{sym} is not a __device__ variable, which maxsim does not place")
            continue
        out.append((bank, off, 8, held[0].name, addend - held[0].offset))
    return tuple(out), bad


__all__ = ["Loaded", "load", "cubin_of", "is_binary_path", "CubinError", "BINARY_SUFFIXES"]
