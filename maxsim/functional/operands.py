"""What every compiled instruction uses: the operand readers and writers, the predicate writer, the
address of a memory operand and the words of constant bank 0 special registers read.

Readers are closures ``g -> uint32 array or scalar`` over a group's registers (see
:class:`maxsim.functional.executor.Group`); writers store into the lanes of a mask. This module is
below every op module: they import it, it imports none of them.
"""

from __future__ import annotations

import struct

import attrs
import numpy as np

from ..errors import SimulationError
from ..isa import instruction as ins
from .bounds import lanes_high_word_set

U32 = np.uint32

# the condition code of a lane (Group.cc): the carry of IADD.CC and friends (bit 0); FSET.CC's (ISET.CC's)
# zero and sign flags (bits 1, 2) with bit 3 saying they are set (BRA CC.test reads them)
CC_CARRY, CC_ZERO, CC_SIGN, CC_FLAGS = 1, 2, 4, 8
# a second carry: a three-input add (IADD3.CC) carries out 2 as CC_CARRY | CC_CARRY2
CC_CARRY2 = 16

# c[0x0][0x8..0x1c]: the launch geometry as the driver writes it for sm_5x, blockDim (X, Y, Z) then
# gridDim (X, Y, Z): the words ptxas 12.x reads for blockDim.x (c[0x0][0x8]) and gridDim.x
# (c[0x0][0x14]); c[0x0][0x20] is the local-memory stack pointer ptxas loads into R1
GEOMETRY = 0x8

NO_MASK = np.zeros(1, dtype=bool)

# c[0x0][0x20]: the local-memory stack pointer ptxas loads into R1 (MOV R1, c[0x0][0x20]) and lowers
# by the kernel's frame; the launch writes the top of each thread's local window there
STACK_POINTER = 0x20
LOCAL_ALIGN = 16  # choice: the window is a whole number of 16-byte units (the widest LDL / STL)


def local_window(kernel) -> int:
    """Bytes of each thread's local-memory window: the kernel's local size (its frame) rounded up
    to :data:`LOCAL_ALIGN`; LDL / STL address [0, window), the stack pointer starts at its top."""
    size = int(getattr(kernel, "local_size", 0) or 0)
    return (size + LOCAL_ALIGN - 1) // LOCAL_ALIGN * LOCAL_ALIGN


def geometry(const_bank: bytes):
    """((X, Y, Z) threads per block, (X, Y, Z) CTAs) of a launch, from its constant bank."""
    w = struct.unpack_from("<6I", const_bank, GEOMETRY)
    return w[:3], w[3:]


class ConstantFault(Exception):
    """A constant read outside what the launch gave for its bank: the instruction faults when a warp
    executes it (:func:`maxsim.functional.executor.compile_instruction` turns it into an error
    naming CTA, warp and lane)."""


def constant_bank_fault(ctx, bank, off, nbytes):
    """Why ``nbytes`` at byte ``off`` of constant ``bank`` cannot be read (None: they can)."""
    data = ctx.bank(bank)
    where = f"c[0x{bank:x}][0x{off:x}]" if off >= 0 else f"c[0x{bank:x}][-0x{-off:x}]"
    if data is None:
        given = ", ".join(str(b) for b in sorted({0, *ctx.constants}))
        return (f"constant {where}: constant bank {bank} was not given (banks given: {given}; "
                f"maxsim.launch(..., constants={{{bank}: data}}) or --constant {bank}=FILE)")
    if off % nbytes:
        return f"constant {where}: a {nbytes}-byte constant read must be {nbytes}-byte aligned"
    if off < 0 or off + nbytes > len(data):
        return (f"constant {where} (+{nbytes} bytes) is outside constant bank {bank} "
                f"(0x{len(data):x} bytes given)")
    return None


def const_word(ctx, instr, op):
    off = op.value
    why = constant_bank_fault(ctx, op.bank, off, 4)
    if why is not None:
        raise ConstantFault(why)
    return np.frombuffer(ctx.bank(op.bank), dtype=np.uint32, count=1, offset=off)[0]


def reader_u32(ctx, instr, op, zrow):
    """Integer view of a source operand, with '-' (two's complement negate) and '~' applied."""
    if op.kind == ins.REG:
        r = zrow if op.reg == ins.RZ else op.reg
        if op.neg:
            return lambda g: (U32(0) - g.regs[r])
        if op.not_:
            return lambda g: ~g.regs[r]
        return lambda g: g.regs[r]
    if op.kind == ins.IMM:
        v = U32(op.value & 0xFFFFFFFF)
    elif op.kind == ins.CONST:
        v = const_word(ctx, instr, op)
        if op.neg:
            v = U32(-int(v) & 0xFFFFFFFF)  # (numpy scalar 0 - v warns about the wrap)
    elif op.kind == ins.FIMM:
        v = np.float32(op.fvalue).view(np.uint32)
    else:
        raise SimulationError(f"{instr.where}: operand {op.kind} cannot be read as a value")
    if op.not_:
        v = ~v
    return lambda g: v


def reader_f32(ctx, instr, op, zrow):
    """Float view of a source operand, with '-' and '|x|' applied."""
    if op.kind == ins.REG:
        r = zrow if op.reg == ins.RZ else op.reg
        if op.abs and op.neg:
            return lambda g: -np.abs(g.regs[r].view(np.float32))
        if op.abs:
            return lambda g: np.abs(g.regs[r].view(np.float32))
        if op.neg:
            return lambda g: -g.regs[r].view(np.float32)
        return lambda g: g.regs[r].view(np.float32)
    if op.kind == ins.FIMM:
        v = np.float32(op.fvalue)
    elif op.kind == ins.IMM:
        # hexadecimal immediates of float instructions are bit patterns; decimal ones are numbers
        v = U32(op.value & 0xFFFFFFFF).view(np.float32) if op.text.lstrip("-")[:2].lower() == "0x" else np.float32(op.value)
    elif op.kind == ins.CONST:
        v = const_word(ctx, instr, op).view(np.float32)
    else:
        raise SimulationError(f"{instr.where}: operand {op.kind} cannot be read as a float")
    if op.abs:
        v = np.abs(v)
    if op.neg:
        v = -v
    v = np.float32(v)
    return lambda g: v


def writer(dst, zrow):
    """Store a value into register ``dst`` for the lanes of mask m (None: every lane)."""
    if dst == ins.RZ:
        return lambda g, v, m: None

    def write(g, v, m):
        if m is None:
            g.regs[dst] = v
        else:
            np.copyto(g.regs[dst], np.asarray(v, dtype=np.uint32) if not isinstance(v, np.ndarray) else v.view(np.uint32), where=m)
    return write


def fwriter(dst, zrow):
    w = writer(dst, zrow)

    def write(g, v, m):
        w(g, np.asarray(v, dtype=np.float32).view(np.uint32), m)
    return write


def pred_reader(op):
    p, neg = op.reg, op.not_
    if neg:
        return lambda g: ~g.preds[p]
    return lambda g: g.preds[p]


def write_pred(g, dst, val, m):
    """Predicate ``dst`` := val on the lanes of mask m (None: all lanes); PT is not written."""
    if dst == ins.PT:
        return
    if m is None:
        g.preds[dst] = val
    else:
        np.copyto(g.preds[dst], np.broadcast_to(val, m.shape), where=m)


def address_reader(ctx, instr, op, zrow):
    base = zrow if op.reg == ins.RZ else op.reg
    off = U32(op.value & 0xFFFFFFFF)
    return lambda g: g.regs[base] + off


def high_word(instr, op, zrow):
    """For a .E (64-bit) address [Rn+imm]: ``fn(g, low) -> the high word`` (R(n+1) plus the carry
    of the low word's add), which the model's 32-bit global memory needs to be 0; else None."""
    if "E" not in instr.mods or op.reg == ins.RZ:
        return None
    base, off = op.reg, U32(op.value & 0xFFFFFFFF)
    # the offset is sign-extended to 64 bits: a negative one adds 0xffffffff to the high word
    borrow = U32(0xFFFFFFFF) if op.value < 0 else U32(0)
    fn = lambda g, low: g.regs[base + 1] + (low < g.regs[base]).astype(np.uint32) * (off != 0) + borrow  # noqa: E731
    # (the same in one compiled pass: whether any lane's high word is nonzero, see high_word_set)
    fn.parts = (base, bool(off != 0), int(borrow))
    return fn


def high_word_set(high_of, g, low, sel):
    """Whether any lane (of ``sel``; None: every lane) of a .E address whose high word
    ``high_of`` (from :func:`high_word`) gives is nonzero, in one compiled pass."""
    base, carry, borrow = high_of.parts
    return lanes_high_word_set(low, g.regs[base], g.regs[base + 1], carry, borrow,
                               NO_MASK if sel is None else sel, sel is not None)


def attr_plain(op):
    """The operand without its .H1 selector (XMAD applies the selector itself)."""
    return attrs.evolve(op, h1=False)


def set_zero_sign(g, v, m):
    """The condition code a set with .CC (FSET, DSET, ISET) leaves: the zero and sign flags of its 32-bit
    result ``v`` and the 'flags set' bit; carry and overflow cleared (ptxas's IEEE division tests
    them with BRA CC.EQ)."""
    cc = np.where(v == 0, U32(CC_ZERO), U32(0)) | np.where(v >> U32(31), U32(CC_SIGN), U32(0)) | U32(CC_FLAGS)
    np.copyto(g.cc, cc, where=True if m is None else m)


def set_carry_zero(g, x, m, chain_zero=False):
    """The condition code an integer add with .CC leaves: the carry out of the 33-bit sum x (bit 0)
    and whether its 32-bit result is zero (bit 1); with chain_zero (an .X add), zero only where the
    zero flag was already set, so that a chain of .X adds says whether the whole wide value is zero
    (a documented choice: the multiword rule of flag machines; no published Maxwell figure). Sign,
    overflow and FSET's 'flags set' bit are cleared (BRA CC tests read FSET's flags only)."""
    x = np.broadcast_to(x, g.cc.shape)
    zero = (x & np.uint64(0xFFFFFFFF)) == 0
    if chain_zero:
        zero = zero & ((g.cc & U32(CC_ZERO)) != 0)
    carry = (x >> np.uint64(32)).astype(np.uint32)  # 0, 1 or (a three-input add) 2
    cc = np.where(carry > 1, U32(CC_CARRY | CC_CARRY2), carry) | np.where(zero, U32(CC_ZERO), U32(0))
    if m is None:
        g.cc[:] = cc
    else:
        np.copyto(g.cc, cc, where=m)


def carry_in(g):
    """The carry a .X add takes from the condition code, as uint64: 0, 1 or 2 (after IADD3.CC)."""
    return ((g.cc & U32(CC_CARRY)) + ((g.cc & U32(CC_CARRY2)) != 0)).astype(np.uint64)
