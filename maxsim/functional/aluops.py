"""The integer ALU opcodes of the SGEMM set (IADD, IADD3, ISCADD, XMAD, LOP, LOP3, MOV, SHL, SHR,
BFE, SEL, ISETP, ISET, ICMP, SHF) and the special-register reads S2R / CS2R.

Each ``_name(ctx, instr, ops, mods, zrow)`` compiles one instruction into ``fn(g, m)`` running it
on group g for the lanes of mask m (None: all), registered in :mod:`maxsim.functional.opcode_table`.
"""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import SimulationError
from ..isa import instruction as ins
from . import alu
from .intpass import XMAD_MODES, run_add, run_xmad
from .opcode_table import compiles
from .operands import (CC_CARRY, CC_ZERO, U32, attr_plain, carry_in, geometry, pred_reader, reader_u32,
                       set_carry_zero, set_zero_sign, write_pred, writer)


@compiles("IADD")
def _iadd(ctx, instr, ops, mods, zrow):
    use_x = "X" in mods
    set_cc = "CC" in mods
    if not use_x and not set_cc:
        a, b = (reader_u32(ctx, instr, o, zrow) for o in ops[1:])
        write = writer(ops[0].reg, zrow)
        return lambda g, m: write(g, a(g) + b(g), m)
    # with a carry in or out, a negated source is its complement plus a carry-in of one (plus the
    # carry flag under .X): a - b = a + ~b + 1 carries out exactly when a >= b (b = 0 included),
    # and the high word of a wide subtraction is a_hi + ~b_hi + carry, as ptxas's 64-bit
    # subtractions and negations (IADD lo.CC, a, -b; IADD.X hi, c, -d) need
    negated = [o.kind in (ins.REG, ins.CONST) and o.neg for o in ops[1:]]
    one_neg = negated.count(True) == 1
    srcs = [attrs.evolve(o, neg=False, not_=True) if one_neg and n else o for o, n in zip(ops[1:], negated)]
    a, b = (reader_u32(ctx, instr, o, zrow) for o in srcs)
    cin = 1 if one_neg else 0
    dst = -1 if ops[0].reg == ins.RZ else ops[0].reg
    # (in one compiled pass: maxsim.functional.intpass, the numpy form of which is
    # iadd_carry_numpy below)
    return lambda g, m: run_add(g, dst, a(g), b(g), 0, cin, use_x, set_cc, use_x, m)


def iadd_carry_numpy(g, dst, av, bv, cin, use_x, set_cc, m):
    """IADD with a carry in or out in numpy (what :mod:`maxsim.functional.intpass` computes in
    one pass; the tests hold the two equal)."""
    x = np.asarray(av, dtype=np.uint64) + np.asarray(bv, dtype=np.uint64)
    x = x + (carry_in(g) if use_x else np.uint64(cin))
    r = (x & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    if set_cc:
        set_carry_zero(g, x, m, chain_zero=use_x)
    if dst >= 0:
        writer(dst, None)(g, r, m)


def _imm20(op):
    """IADD3's 20-bit immediate as the adder sees it: sign-extended from bit 19 (the bit encoded in
    bit 56). nvdisasm prints the field unsigned (``0xfffbf``), but ptxas uses it as a signed
    constant: for ``min(min(y + 1, w), x + 64)`` it writes ``IADD3 R6, -R11, 0xfffbf, -R4`` for
    ``~(x + 64) = -x - 65`` and ``IADD3 R4, -R11, 0xffffe, -R4`` for ``-x - 2``, a trip count that is
    right only with the sign (tests/test_ptxas_forms.py runs that kernel against numpy)."""
    if op.kind == ins.IMM and 0x80000 <= op.value < 0x100000:
        return attrs.evolve(op, value=op.value | 0xFFF00000)
    return op


@compiles("IADD3")
def _iadd3(ctx, instr, ops, mods, zrow):
    ops = (ops[0], *map(_imm20, ops[1:]))
    use_x, set_cc = "X" in mods, "CC" in mods
    if use_x or set_cc:
        return _iadd3_carry(ctx, instr, ops, mods, zrow, use_x, set_cc)
    a, b, c = (reader_u32(ctx, instr, o, zrow) for o in ops[1:])
    write = writer(ops[0].reg, zrow)
    if "RS" in mods or "LS" in mods:  # (a + b) shifted by 16 (a 33-bit sum), then + c
        right = "RS" in mods

        def run(g, m):
            x = np.asarray(a(g), dtype=np.uint64) + np.asarray(b(g), dtype=np.uint64)
            x = (x >> np.uint64(16)) if right else (x << np.uint64(16))
            write(g, (x & np.uint64(0xFFFFFFFF)).astype(np.uint32) + c(g), m)
        return run
    return lambda g, m: write(g, a(g) + b(g) + c(g), m)


def _iadd3_carry(ctx, instr, ops, mods, zrow, use_x, set_cc):
    """IADD3 with a carry in (.X) or out (.CC): as IADD's, a negated source is its complement plus
    a carry-in of one (without .X) or the carry taken from the condition code (with .X), and the
    carry out of the three-input sum (0, 1 or 2) is kept whole, so that a chain of IADD3.CC and
    IADD3.X is the wide sum (ptxas's 64-bit n - i - 1)."""
    if "RS" in mods or "LS" in mods:
        raise SimulationError(f"{instr.where}: IADD3 with .RS / .LS and a carry (.CC, .X) is not modelled")
    negated = [o.kind in (ins.REG, ins.CONST) and o.neg for o in ops[1:]]
    srcs = [attrs.evolve(o, neg=False, not_=True) if n else o for o, n in zip(ops[1:], negated)]
    a, b, c = (reader_u32(ctx, instr, o, zrow) for o in srcs)
    cin = np.uint64(negated.count(True))
    write = writer(ops[0].reg, zrow)

    def run(g, m):
        x = sum(np.asarray(f(g), dtype=np.uint64) for f in (a, b, c))
        x = x + (carry_in(g) if use_x else cin)
        if set_cc:
            set_carry_zero(g, x, m, chain_zero=use_x)
        write(g, (x & np.uint64(0xFFFFFFFF)).astype(np.uint32), m)
    return run


@compiles("ISCADD")
def _iscadd(ctx, instr, ops, mods, zrow):
    a, b = (reader_u32(ctx, instr, o, zrow) for o in ops[1:3])
    s = ops[3].value
    if not 0 <= s < 32:
        raise SimulationError(f"{instr.where}: ISCADD shift {s} is out of range 0..31")
    sh = U32(s)
    write = writer(ops[0].reg, zrow)
    if "CC" in mods:
        # (x = (a << s) + b as 64 bits, its carry and zero flags: maxsim.functional.intpass)
        dst = -1 if ops[0].reg == ins.RZ else ops[0].reg
        return lambda g, m: run_add(g, dst, a(g), b(g), s, 0, False, True, False, m)
    return lambda g, m: write(g, (a(g) << sh) + b(g), m)


@compiles("XMAD")
def _xmad(ctx, instr, ops, mods, zrow):
    a = reader_u32(ctx, instr, attr_plain(ops[1]), zrow)
    b = reader_u32(ctx, instr, attr_plain(ops[2]), zrow)
    c = reader_u32(ctx, instr, ops[3], zrow)
    a_h1, b_h1 = ops[1].h1, ops[2].h1
    modset = frozenset(mods)
    types = [x for x in mods if x in ("S16", "U16")] + ["U16", "U16"]
    a_signed, b_signed = types[0] == "S16", types[1] == "S16"
    if ops[0].reg == ins.RZ:
        return lambda g, m: None
    dst = ops[0].reg
    # (in one compiled pass, maxsim.functional.intpass.xmad; the numpy form is alu.xmad)
    modes = sum(bit for name, bit in XMAD_MODES.items() if name in modset)
    return lambda g, m: run_xmad(g, dst, a(g), b(g), c(g), a_h1, b_h1, modes, a_signed, b_signed, m)


@compiles("LOP")
def _lop(ctx, instr, ops, mods, zrow):
    pred = ops[0].reg if ops[0].kind == ins.PRED else None  # LOP.AND.NZ P0, R, a, b
    if pred is not None:
        ops = ops[1:]
    a, b = (reader_u32(ctx, instr, o, zrow) for o in ops[1:])
    write = writer(ops[0].reg, zrow)
    kind = next((x for x in mods if x in ("AND", "OR", "XOR", "PASS_B")), "AND")
    f = {"AND": np.bitwise_and, "OR": np.bitwise_or, "XOR": np.bitwise_xor,
         "PASS_B": lambda x, y: np.broadcast_to(y, np.shape(x)) if np.ndim(x) else y}[kind]
    if pred is None:
        return lambda g, m: write(g, f(a(g), b(g)), m)
    zero = "Z" in mods
    if not zero and "NZ" not in mods:
        raise SimulationError(f"{instr.where}: {instr.full_opcode} with a predicate needs .Z or .NZ to be modelled")

    def run(g, m):
        r = np.asarray(f(a(g), b(g)), dtype=np.uint32)
        p = (r == 0) if zero else (r != 0)
        write_pred(g, pred, np.broadcast_to(p, g.preds[0].shape).copy(), m)
        write(g, r, m)
    return run


def lop3(a, b, c, lut):
    """LOP3.LUT's function of three 32-bit words: bit i of the result is bit (a_i << 2 | b_i << 1 |
    c_i) of the 8-bit table ``lut`` (PTX lop3.b32: the table of F(0xF0, 0xCC, 0xAA))."""
    a, b, c = (np.asarray(x, dtype=np.uint32) for x in (a, b, c))
    r = np.zeros(np.broadcast(a, b, c).shape, dtype=np.uint32)
    for k in range(8):
        if lut >> k & 1:
            r |= (a if k & 4 else ~a) & (b if k & 2 else ~b) & (c if k & 1 else ~c)
    return r


@compiles("LOP3")
def _lop3(ctx, instr, ops, mods, zrow):
    """LOP3.LUT [P,] d, a, b, c, lut; with a predicate result, .Z / .NZ set it when the result is
    zero / non-zero and .T always (as LOP's)."""
    pred = ops[0].reg if ops[0].kind == ins.PRED else None
    if pred is not None:
        ops = ops[1:]
    a, b, c = (reader_u32(ctx, instr, o, zrow) for o in ops[1:4])
    lut = ops[4].value & 0xFF
    write = writer(ops[0].reg, zrow)
    if pred is None:
        return lambda g, m: write(g, np.broadcast_to(lop3(a(g), b(g), c(g), lut), g.tid.shape).copy(), m)
    test = next((x for x in mods if x in ("T", "Z", "NZ")), None)
    if test is None:
        raise SimulationError(f"{instr.where}: {instr.full_opcode} with a predicate needs .T, .Z or .NZ")

    def run(g, m):
        r = np.broadcast_to(lop3(a(g), b(g), c(g), lut), g.tid.shape).copy()
        p = np.ones(r.shape, bool) if test == "T" else (r == 0) if test == "Z" else (r != 0)
        write_pred(g, pred, p, m)
        write(g, r, m)
    return run


@compiles("SHF")
def _shf(ctx, instr, ops, mods, zrow):
    a, b, c = (reader_u32(ctx, instr, o, zrow) for o in ops[1:])
    write = writer(ops[0].reg, zrow)
    left, wrap = "L" in mods, "W" in mods
    if any(x in mods for x in ("S64", "S32", "HI")):
        raise SimulationError(f"{instr.where}: {instr.full_opcode} is not modelled (SHF.L/.R of the unsigned pair only)")

    def run(g, m):
        pair = (np.asarray(c(g), dtype=np.uint64) << np.uint64(32)) | np.asarray(a(g), dtype=np.uint64)
        n = np.asarray(b(g), dtype=np.uint64)
        n = n & np.uint64(31) if wrap else np.minimum(n, np.uint64(32))
        if left:
            r = ((pair << n) >> np.uint64(32)) & np.uint64(0xFFFFFFFF)
        else:
            r = (pair >> n) & np.uint64(0xFFFFFFFF)
        write(g, r.astype(np.uint32), m)
    return run


@compiles("MOV", "MOV32I")
def _mov(ctx, instr, ops, mods, zrow):
    a = reader_u32(ctx, instr, ops[1], zrow)
    write = writer(ops[0].reg, zrow)
    return lambda g, m: write(g, a(g), m)


@compiles("SHL", "SHR")
def _shift(ctx, instr, ops, mods, zrow):
    a, b = (reader_u32(ctx, instr, o, zrow) for o in ops[1:])
    write = writer(ops[0].reg, zrow)
    if instr.opcode == "SHL":
        wrap = "W" in mods
        return lambda g, m: write(g, alu.shl(a(g), b(g), wrap), m)
    signed = "U32" not in mods
    return lambda g, m: write(g, alu.shr(a(g), b(g), signed), m)


@compiles("BFE")
def _bfe(ctx, instr, ops, mods, zrow):
    a, b = (reader_u32(ctx, instr, o, zrow) for o in ops[1:])
    write = writer(ops[0].reg, zrow)
    signed = "U32" not in mods
    return lambda g, m: write(g, alu.bfe(a(g), b(g), signed), m)


@compiles("SEL")
def _sel(ctx, instr, ops, mods, zrow):
    a, b = (reader_u32(ctx, instr, o, zrow) for o in ops[1:3])
    p = pred_reader(ops[3])
    write = writer(ops[0].reg, zrow)
    return lambda g, m: write(g, np.where(p(g), a(g), b(g)).astype(np.uint32), m)


def _compare(cmp, signed, extended):
    """fn(g, a, b): the lanes' compare of a and b; with .X, the high words of a wide compare whose
    low words set the condition code (carry and zero flags, see alu.isetp_x)."""
    if not extended:
        return lambda g, a, b: alu.isetp(a, b, cmp, signed)

    def run(g, a, b):
        a, b = np.broadcast_to(a, g.cc.shape), np.broadcast_to(b, g.cc.shape)
        return alu.isetp_x(a, b, cmp, signed, (g.cc & U32(CC_CARRY)) != 0, (g.cc & U32(CC_ZERO)) != 0)
    return run


@compiles("ISETP")
def _isetp(ctx, instr, ops, mods, zrow):
    cmp = next(x for x in mods if x in ("LT", "LE", "GT", "GE", "EQ", "NE"))
    bname = next((x for x in mods if x in ("AND", "OR", "XOR")), "AND")
    signed = "U32" not in mods
    a, b = (reader_u32(ctx, instr, o, zrow) for o in ops[2:4])
    pc = pred_reader(ops[4])
    bop = alu.boolop(bname)
    pd, pq = ops[0].reg, ops[1].reg
    compare = _compare(cmp, signed, "X" in mods)

    def run(g, m):
        r = compare(g, a(g), b(g))
        c = pc(g)
        write_pred(g, pd, bop(r, c), m)
        write_pred(g, pq, bop(~r, c), m)
    return run


@compiles("ISET")
def _iset(ctx, instr, ops, mods, zrow):
    cmp = next(x for x in mods if x in ("LT", "LE", "GT", "GE", "EQ", "NE"))
    bop = alu.boolop(next((x for x in mods if x in ("AND", "OR", "XOR")), "AND"))
    signed = "U32" not in mods
    a, b = (reader_u32(ctx, instr, o, zrow) for o in ops[1:3])
    pc = pred_reader(ops[3])
    true = U32(0x3F800000) if "BF" in mods else U32(0xFFFFFFFF)
    write = writer(ops[0].reg, zrow)
    compare = _compare(cmp, signed, "X" in mods)
    set_cc = "CC" in mods

    def run(g, m):
        r = bop(compare(g, a(g), b(g)), pc(g))
        v = np.broadcast_to(np.where(r, true, U32(0)).astype(np.uint32), g.tid.shape).copy()
        if set_cc:  # after the compare: ISET.X.CC reads the flags it then replaces
            set_zero_sign(g, v, m)
        write(g, v, m)
    return run


@compiles("ICMP")
def _icmp(ctx, instr, ops, mods, zrow):
    cmp = next(x for x in mods if x in ("LT", "LE", "GT", "GE", "EQ", "NE"))
    signed = "U32" not in mods
    a, b, c = (reader_u32(ctx, instr, o, zrow) for o in ops[1:4])
    write = writer(ops[0].reg, zrow)
    zero = U32(0)

    def run(g, m):
        pick = alu.isetp(c(g), zero, cmp, signed)
        write(g, np.where(pick, a(g), b(g)).astype(np.uint32), m)
    return run


def _divide_by(d):
    """``fn(x) = x // d`` for a uint32 array (a shift when d is a power of two: ~5x faster)."""
    if d & (d - 1) == 0:
        k = U32(int(d).bit_length() - 1)
        return lambda x: x >> k
    return lambda x: x // d


def _remainder_by(d):
    """``fn(x) = x % d`` for a uint32 array (a mask when d is a power of two)."""
    if d & (d - 1) == 0:
        mask = U32(d - 1)
        return lambda x: x & mask
    return lambda x: x % d


@compiles("S2R", "CS2R")
def _s2r(ctx, instr, ops, mods, zrow):
    name = ops[1].name
    write = writer(ops[0].reg, zrow)
    # a block of (X, Y, Z) threads runs as X * Y * Z linear ones, a grid of (X, Y, Z) CTAs as (X, Y * Z):
    # the geometry words of constant bank 0 say how to split them (see launch._geometry_words)
    (bx, by, bz), (_, gy, gz) = geometry(ctx.const_bank)
    flat = gz == 1  # (a grid of one CTA in Z: its Y is the second coordinate as it is, its Z 0)
    bx, by, bz, gy = U32(bx), U32(by), U32(bz), U32(gy)
    div, mod = _divide_by(bx), _remainder_by(bx)
    div_y, mod_y = _divide_by(by), _remainder_by(by)
    getters = {
        "SR_TID.X": (lambda g: g.tid) if by == 1 and bz == 1 else (lambda g: mod(g.tid)),
        "SR_TID.Y": lambda g: mod_y(div(g.tid)),
        "SR_TID.Z": lambda g: div_y(div(g.tid)),
        "SR_CTAID.X": lambda g: g.ctaid_x,
        "SR_CTAID.Y": (lambda g: g.ctaid_y) if flat else (lambda g: g.ctaid_y % gy),
        "SR_CTAID.Z": (lambda g: np.zeros_like(g.ctaid_y)) if flat else (lambda g: g.ctaid_y // gy),
        "SR_LANEID": lambda g: g.laneid,
        "SR_NTID.X": lambda g: np.full_like(g.tid, bx),
        # the functional model has no clock: the timing model owns time
        "SR_CLOCKLO": lambda g: np.zeros_like(g.tid),
        "SR_CLOCKHI": lambda g: np.zeros_like(g.tid),
    }
    get = getters[name]
    return lambda g, m: write(g, get(g), m)
