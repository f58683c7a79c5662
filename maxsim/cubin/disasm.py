"""A cubin's kernel as maxas's text form, and as a decoded kernel.

The header (``# Kernel``, ``# Arch``, ``# InsCnt``, ``# RegCnt``, ``# SharedSize``, ``# BarCnt``,
``# LocalSize`` when the kernel has a stack frame, ``# Params(n)`` with an ``ord:addr:size:align`` line per parameter) comes from the ELF
(:mod:`maxsim.cubin.elf`); the instructions, control codes and labels from the instruction codec
(:func:`decode`), which reads the 64-bit words (a control word, then three instructions).
"""

from __future__ import annotations

from ..errors import MaxsimError, SassParseError
from ..isa import instruction as ins
from .elf import CubinError, CubinKernel


def decoder():
    """``decode(code: bytes) -> lines of maxas's text form`` (labels and instruction lines), by
    the instruction codec (:mod:`maxsim.sass.encoding`)."""
    try:
        from ..sass.encoding import decode_text
    except ImportError:
        raise CubinError("this maxsim has no instruction decoder (maxsim.sass.encoding): "
                         "cubins cannot be disassembled") from None
    return lambda code: decode_text(code).splitlines()


def header_lines(k: CubinKernel, names=(), n_instructions=None) -> list:
    """maxas's header of kernel ``k``; ``names``: the parameters' names by ordinal (a name is
    written after its parameter line, which maxsim's parser and launch read)."""
    ins_cnt = max(0, (n_instructions if n_instructions is not None else len(k.code) * 3 // 32) - 1)
    out = [f"# Kernel: {k.name}", f"# Arch: {k.arch}", f"# InsCnt: {ins_cnt}", f"# RegCnt: {k.reg_cnt}",
           f"# SharedSize: {k.shared_size}", f"# BarCnt: {k.bar_cnt}"]
    if k.frame_size:  # the bytes of local memory each thread's stack frame takes (EIATTR_FRAME_SIZE)
        out.append(f"# LocalSize: {k.frame_size}")
    out += [f"# Params({len(k.params)}):", "#\tord:addr:size:align"]
    for p in k.params:
        name = names[p.ordinal] if p.ordinal < len(names) and names[p.ordinal] else ""
        align = 1 << p.log_align if p.log_align else 0
        out.append(f"#\t{p.ordinal}:0x{p.offset:x}:{p.size}:{align}" + (f" {name}" if name else ""))
    out += ["#", "# Instructions:", ""]
    return out


def kernel_text(k: CubinKernel, names=()) -> str:
    """Kernel ``k`` in maxas's text form: the header, then the decoded instructions."""
    try:
        lines = list(decoder()(k.code))
    except MaxsimError as e:
        raise CubinError(f"{k.filename}: kernel {k.name}: {e}") from None
    n = sum(1 for ln in lines if ln.strip() and not ln.strip().endswith(":") and not ln.strip().startswith("#"))
    return "\n".join(header_lines(k, names, n) + lines) + "\n"


def decode_kernel(k: CubinKernel, names=()) -> tuple:
    """(decoded kernel, its text) of cubin kernel ``k``. An instruction the simulator's parser
    refuses (an opcode it does not model) is an error naming the kernel and the byte offset."""
    from ..sass import parse_text
    text = kernel_text(k, names)
    where = f"{k.filename}:{k.name}"
    try:
        return parse_text(text, filename=where), text
    except SassParseError as e:
        offset = _byte_offset(text, e.line)
        at = f" (instruction at byte 0x{offset:x} of .text.{k.name})" if offset is not None else ""
        raise CubinError(f"{where}{at}: {e.reason}: {text.splitlines()[e.line - 1].strip()}") from None


def _byte_offset(text, line):
    """The byte offset in the kernel's code of the instruction on text line ``line``."""
    n = -1
    for i, ln in enumerate(text.splitlines(), start=1):
        s = ln.strip()
        if s and not s.startswith("#") and not s.endswith(":"):
            n += 1
        if i == line:
            return None if n < 0 else 8 * (n + n // 3 + 1)
    return None


def constant_banks(k: CubinKernel) -> dict:
    """{bank: bytes} of the constant banks besides 0 that the kernel's cubin fills (2: compiler
    constants, 3: ``__constant__`` data)."""
    return {b: d for b, d in k.constants.items() if d}


__all__ = ["decoder", "header_lines", "kernel_text", "decode_kernel", "constant_banks", "ins"]
