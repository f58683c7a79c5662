"""A decoded kernel as a cubin kernel: its code encoded by the instruction codec, its header
(registers, shared memory, barriers, parameters) as the ELF attributes the driver reads."""

from __future__ import annotations

from ..isa import instruction as ins
from .elf import PARAM_BASE, CubinError, CubinKernel, CubinParam


def encoder():
    """The codec's ``encode(kernel) -> bytes`` (control words and instructions)."""
    try:
        from ..sass.encoding import encode
    except ImportError:
        raise CubinError("this maxsim has no instruction encoder (maxsim.sass.encoding): "
                         "cubins cannot be written") from None
    return encode


def code_offset(index: int) -> int:
    """Byte offset of instruction ``index`` in a kernel's code: each group of three instructions
    follows its 8-byte control word."""
    return 8 * (index + index // 3 + 1)


def cubin_kernel(k: ins.Kernel, code: bytes = None) -> CubinKernel:
    """The cubin kernel of decoded kernel ``k`` (``code``: its bytes, encoded when None)."""
    if code is None:
        code = encoder()(k)
    if not k.arch.startswith("sm_5"):
        raise CubinError(f"{k.filename}: kernel {k.name} is for {k.arch}; cubins are written for sm_50-sm_53")
    params = tuple(CubinParam(p.ordinal, p.offset, p.size, p.align.bit_length() - 1 if p.align else 0)
                   for p in sorted(k.params, key=lambda p: p.ordinal))
    for p in params:
        if p.offset < PARAM_BASE:
            raise CubinError(f"{k.filename}: parameter {p.ordinal} at 0x{p.offset:x} lies below the parameter "
                             f"block at c[0x0][0x{PARAM_BASE:x}]")
    param_size = max([0] + [p.offset + p.size - PARAM_BASE for p in params])
    exits = tuple(code_offset(i.index) for i in k.instructions if i.opcode == "EXIT")
    return CubinKernel(name=k.name, arch=k.arch, code=code, reg_cnt=k.reg_cnt, bar_cnt=k.bar_cnt,
                       shared_size=k.shared_size, params=params, param_size=param_size,
                       constant0_size=PARAM_BASE + param_size, constants=dict(k.banks), exit_offsets=exits,
                       frame_size=k.local_size, filename=k.filename)
