"""fp32 opcodes beyond FFMA/FMUL/FADD: FMNMX, FSETP, MUFU (with RRO), and the conversions I2F,
F2I, F2F with their rounding modes.

MUFU is the special-function unit's approximation; the model returns the correctly rounded
fp32 value of the function (computed in fp64), which lies within the error bounds the PTX ISA
documents for the approximate instructions MUFU implements (PTX ISA, "Floating Point
Instructions"): rcp.approx.f32 1 ulp; rsqrt.approx.f32 relative 2^-22.9; sqrt.approx.f32 relative
2^-23; ex2.approx.f32 2 ulp from the correctly rounded result; lg2.approx.f32 absolute 2^-22 in
(0.5, 2), relative 2^-22 elsewhere; sin / cos.approx.f32 absolute 2^-20.5 in [-2pi, 2pi] and
2^-14.7 in [-100pi, 100pi]. tests/test_opcodes_extra.py holds the model to these bounds. The
hardware's own approximation errors are not modelled (a kernel run in maxsim is more exact).

SIN and COS take their argument in the form RRO.SINCOS prepares (the range reduction op). That
format is not documented; the model keeps it an fp32 number of revolutions (RRO.SINCOS x gives
x / 2pi, MUFU.SIN r gives sin(2pi r)), so that the RRO + MUFU pair nvcc emits computes sin(x).
RRO.EX2 passes its operand through (MUFU.EX2 takes a plain fp32 value here).
"""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import SimulationError
from ..isa import instruction as ins
from ..isa.opcodes import IMMEDIATE_FORMS
from .alu import boolop, ftz as flush, saturate
from . import fp32, fp64, ieee
from .opcode_table import compiles
from .operands import U32, NO_MASK, pred_reader, reader_f32, reader_u32, set_zero_sign, write_pred, writer

F32 = np.float32


def _fwrite(dst, zrow):
    w = writer(dst, zrow)

    def write(g, v, m):
        v = np.broadcast_to(np.asarray(v, dtype=F32), g.tid.shape)
        w(g, np.ascontiguousarray(v).view(np.uint32), m)
    return write


def _fsrc(ctx, instr, op, zrow, ftz):
    r = reader_f32(ctx, instr, op, zrow)
    return (lambda g: flush(r(g))) if ftz else r


@compiles("FMNMX")
def _fmnmx(ctx, instr, ops, mods, zrow):
    """FMNMX d, a, b, p: min(a, b) when p holds, else max; a NaN operand gives the other one
    (IEEE 754 minNum / maxNum; two NaNs give NaN)."""
    ftz = "FTZ" in mods
    a, b = (_fsrc(ctx, instr, o, zrow, ftz) for o in ops[1:3])
    p = pred_reader(ops[3])
    write = _fwrite(ops[0].reg, zrow)
    return lambda g, m: write(g, np.where(p(g), np.fmin(a(g), b(g)), np.fmax(a(g), b(g))), m)


def fcompare(a, b, cmp):
    """FSETP's comparison: ordered tests are false on NaN; the U forms are true on NaN."""
    a = np.asarray(a, dtype=F32)
    b = np.asarray(b, dtype=F32)
    nan = np.isnan(a) | np.isnan(b)
    if cmp in ("F", "T"):  # FCMP's never / always
        return np.full(np.broadcast(a, b).shape, cmp == "T")
    if cmp == "NUM":
        return ~nan
    if cmp == "NAN":
        return nan
    base = {"LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
            "EQ": np.equal, "NE": np.not_equal}[cmp[:2]]
    r = base(a, b) & ~nan
    return r | nan if cmp.endswith("U") else r


@compiles("FSETP")
def _fsetp(ctx, instr, ops, mods, zrow):
    cmp = next(x for x in mods if x not in ("AND", "OR", "XOR", "FTZ"))
    bop = boolop(next((x for x in mods if x in ("AND", "OR", "XOR")), "AND"))
    ftz = "FTZ" in mods
    a, b = (_fsrc(ctx, instr, o, zrow, ftz) for o in ops[2:4])
    pc = pred_reader(ops[4])
    pd, pq = ops[0].reg, ops[1].reg

    def run(g, m):
        r = fcompare(a(g), b(g), cmp)
        c = pc(g)
        write_pred(g, pd, bop(r, c), m)
        write_pred(g, pq, bop(~r, c), m)
    return run


_TWO_PI = 2.0 * np.pi


def mufu64h(hi, fn):
    """MUFU.RCP64H / RSQ64H of the high word ``hi`` of an fp64 number (its low word taken as 0):
    the high word of the fp64 reciprocal / reciprocal square root, correctly rounded to fp64 and
    truncated to its high word (an approximation good to 2^-20, which ptxas's fp64 division and
    square root sequences refine with DFMA Newton steps). Zero gives Inf, Inf 0, NaN NaN, RSQ64H
    of a negative number NaN, with the operand's sign kept by RCP64H."""
    hi = np.asarray(hi, dtype=np.uint32)
    x = (hi.astype(np.uint64) << np.uint64(32)).view(np.float64)
    with np.errstate(all="ignore"):
        r = 1.0 / x if fn == "RCP64H" else 1.0 / np.sqrt(x)
    return (np.asarray(r, dtype=np.float64).view(np.uint64) >> np.uint64(32)).astype(np.uint32)


def mufu(x, fn):
    """MUFU.fn of fp32 x: the correctly rounded fp32 value (subnormal inputs and results are
    flushed to zero, as the .ftz forms of the PTX approximations are)."""
    x = flush(np.asarray(x, dtype=F32)).astype(np.float64)
    with np.errstate(all="ignore"):
        if fn == "RCP":
            r = 1.0 / x
        elif fn == "RSQ":
            r = 1.0 / np.sqrt(x)
        elif fn == "SQRT":
            r = np.sqrt(x)
        elif fn == "EX2":
            r = np.exp2(x)
        elif fn == "LG2":
            r = np.log2(x)
        elif fn == "SIN":
            r = np.sin(_TWO_PI * np.fmod(x, 1.0))
        else:
            r = np.cos(_TWO_PI * np.fmod(x, 1.0))
    return flush(r.astype(F32))


@compiles("MUFU")
def _mufu(ctx, instr, ops, mods, zrow):
    """MUFU.fn[.SAT]: .SAT clamps the result to [0, 1] (NaN to 0); RCP64H / RSQ64H work on the
    high word of an fp64 number (:func:`mufu64h`)."""
    fn = next(x for x in mods if x != "SAT")
    if fn in ("RCP64H", "RSQ64H"):
        a = reader_u32(ctx, instr, attrs.evolve(ops[1], neg=False, abs=False), zrow)
        sign = U32((1 << 31) if ops[1].neg else 0)
        clear = U32(0x7FFFFFFF if ops[1].abs else 0xFFFFFFFF)
        write = writer(ops[0].reg, zrow)
        return lambda g, m: write(g, np.broadcast_to(mufu64h((a(g) & clear) ^ sign, fn), g.tid.shape).copy(), m)
    a = reader_f32(ctx, instr, ops[1], zrow)
    write = _fwrite(ops[0].reg, zrow)
    if "SAT" in mods:
        return lambda g, m: write(g, saturate(mufu(a(g), fn)), m)
    return lambda g, m: write(g, mufu(a(g), fn), m)


@compiles("FSET")
def _fset(ctx, instr, ops, mods, zrow):
    """FSET[.BF].cmp[.FTZ].bool d, a, b, p: the comparison combined with p as a register: all ones
    when true (1.0 with .BF), 0 when false [nvdisasm's FSET; ptxas's IEEE division negates the
    all-ones value with IADD to count it as 1]."""
    cmp = next(x for x in mods if x not in ("AND", "OR", "XOR", "FTZ", "BF"))
    bop = boolop(next((x for x in mods if x in ("AND", "OR", "XOR")), "AND"))
    ftz = "FTZ" in mods
    a, b = (_fsrc(ctx, instr, o, zrow, ftz) for o in ops[1:3])
    pc = pred_reader(ops[3])
    true = U32(0x3F800000) if "BF" in mods else U32(0xFFFFFFFF)
    write = writer(ops[0].reg, zrow)
    set_cc = "CC" in mods

    def run(g, m):
        r = bop(fcompare(a(g), b(g), cmp), pc(g))
        v = np.broadcast_to(np.where(r, true, U32(0)).astype(np.uint32), g.tid.shape).copy()
        if set_cc:
            set_zero_sign(g, v, m)
        write(g, v, m)
    return run


@compiles("FCMP")
def _fcmp(ctx, instr, ops, mods, zrow):
    """FCMP.cmp[.FTZ] d, a, b, c: d = a where (c cmp 0.0) holds, else b (the bits of a and b
    unchanged; only c is compared, flushed with .FTZ) [nvdisasm's FCMP; as ICMP]."""
    cmp = next((x for x in mods if x != "FTZ"), "GT")
    a, b = (reader_u32(ctx, instr, o, zrow) for o in ops[1:3])
    c = _fsrc(ctx, instr, ops[3], zrow, "FTZ" in mods)
    write = writer(ops[0].reg, zrow)

    def run(g, m):
        pick = fcompare(c(g), F32(0), cmp)
        write(g, np.broadcast_to(np.where(pick, a(g), b(g)).astype(np.uint32), g.tid.shape).copy(), m)
    return run


@compiles("FCHK")
def _fchk(ctx, instr, ops, mods, zrow):
    """FCHK.DIVIDE p, a, b: p := whether a / b needs the slow path (:func:`ieee.fchk_divide`)."""
    a, b = (reader_f32(ctx, instr, o, zrow) for o in ops[1:3])
    pd = ops[0].reg

    def run(g, m):
        write_pred(g, pd, np.broadcast_to(ieee.fchk_divide(a(g), b(g)), g.tid.shape).copy(), m)
    return run


def directed(ctx, instr, zrow):
    """FFMA / FMUL / FADD (and the 32-bit immediate forms) with .RZ, .RM or .RP: the fp32 tables
    of :mod:`maxsim.functional.fp32` round to nearest only, so these run here (:mod:`ieee`)."""
    mods = instr.mods
    mode = next(x for x in mods if x in ("RZ", "RM", "RP"))
    ftz = "FTZ" in mods
    sat = "SAT" in mods
    ops = instr.operands
    srcs = [_fsrc(ctx, instr, o, zrow, ftz) for o in ops[1:]]
    op = instr.opcode
    write = _fwrite(ops[0].reg, zrow)

    def run(g, m):
        v = [s(g) for s in srcs]
        if op == "FFMA":
            r = ieee.ffma_r(v[0], v[1], v[2], mode)
        elif op in ("FMUL", "FMUL32I"):
            r = ieee.fmul_r(v[0], v[1], mode)
        else:
            r = ieee.fadd_r(v[0], v[1], mode)
        if ftz:
            r = flush(r)
        if sat:
            r = saturate(r)
        write(g, r, m)
    return run


@compiles("RRO")
def _rro(ctx, instr, ops, mods, zrow):
    a = reader_f32(ctx, instr, ops[1], zrow)
    write = _fwrite(ops[0].reg, zrow)
    if "SINCOS" in mods:
        return lambda g, m: write(g, (np.asarray(a(g), dtype=np.float64) / _TWO_PI).astype(F32), m)
    return lambda g, m: write(g, a(g), m)


def round_f32(x64, mode):
    """fp64 values (exact integers or fp32-representable sums) to fp32 with rounding mode
    RN (nearest even), RZ (toward zero), RM (toward -inf) or RP (toward +inf)."""
    r = np.asarray(x64, dtype=np.float64).astype(F32)
    if mode == "RN":
        return r
    back = r.astype(np.float64)
    x64 = np.asarray(x64, dtype=np.float64)
    if mode == "RZ":
        fix = np.abs(back) > np.abs(x64)
        return np.where(fix, np.nextafter(r, F32(0)), r).astype(F32)
    if mode == "RM":
        return np.where(back > x64, np.nextafter(r, F32(-np.inf)), r).astype(F32)
    return np.where(back < x64, np.nextafter(r, F32(np.inf)), r).astype(F32)


_INT_VIEW = {"S32": (np.int32, 32), "U32": (np.uint32, 32), "S16": (np.int16, 16), "U16": (np.uint16, 16),
             "S8": (np.int8, 8), "U8": (np.uint8, 8)}


def round_int64(u, neg, bits, mode):
    """Integers of magnitude ``u`` (uint64) and sign ``neg`` rounded to ``bits`` significant bits
    by ``mode`` (RN: nearest even, RZ, RM, RP), as exact float64 values (so that casting them to
    fp32 for bits = 24, or keeping them for 53, is exact)."""
    u = np.asarray(u, dtype=np.uint64)
    top = np.zeros(u.shape, dtype=np.int64)  # position of the highest set bit
    for k in (32, 16, 8, 4, 2, 1):
        hit = (u >> (top + k).astype(np.uint64)) != 0
        top = np.where(hit, top + k, top)
    shift = np.maximum(top - (bits - 1), 0)
    sh = shift.astype(np.uint64)
    m = u >> sh
    rem = u - (m << sh)
    half = np.where(shift > 0, np.uint64(1) << np.maximum(sh, np.uint64(1)) - np.uint64(1), np.uint64(0))
    if mode == "RN":
        up = (shift > 0) & ((rem > half) | ((rem == half) & ((m & np.uint64(1)) == 1)))
    elif mode == "RZ":
        up = np.zeros(u.shape, dtype=bool)
    else:  # away from zero when rounding toward the sign's infinity
        toward_neg = mode == "RM"
        up = (rem != 0) & (neg == toward_neg)
    m = m + up.astype(np.uint64)
    mag = np.ldexp(m.astype(np.float64), shift)
    return np.where(neg, -mag, mag)


@compiles("I2F")
def _i2f(ctx, instr, ops, mods, zrow):
    """I2F.F32.<int type>.<rounding>: integer (the low bits of the source for 8/16-bit types) to fp32;
    .S64 / .U64: a 64-bit integer in a register pair, to fp32 or (.F64) fp64, rounded by the mode."""
    if "S64" in mods or "U64" in mods:
        return _i2f64(ctx, instr, ops, mods, zrow)
    src = next((x for x in mods if x in _INT_VIEW), "S32")
    mode = next((x for x in mods if x in ("RN", "RM", "RP", "RZ")), "RN")
    bits = _INT_VIEW[src][1]
    a = reader_u32(ctx, instr, ops[1], zrow)
    if "F64" in mods:  # I2F.F64.<int>: exact in fp64 (every 32-bit integer is), into a register pair
        write64 = fp64.writer(ops[0].reg, zrow)
    write = _fwrite(ops[0].reg, zrow)

    def run(g, m):
        v = np.asarray(a(g), dtype=np.uint32)
        if bits < 32:
            x = (v & U32((1 << bits) - 1)).astype(np.int64)
        else:
            x = v.view(np.int32).astype(np.int64) if src[0] == "S" else v.astype(np.int64)
        if bits < 32 and src[0] == "S":
            x = np.where(x >= 1 << (bits - 1), x - (1 << bits), x)
        if "F64" in mods:
            write64(g, np.asarray(x, dtype=np.float64), m)
            return
        write(g, round_f32(np.asarray(x, dtype=np.float64), mode), m)
    return run


def _i2f64(ctx, instr, ops, mods, zrow):
    signed = "S64" in mods
    mode = next((x for x in mods if x in ("RN", "RM", "RP", "RZ")), "RN")
    op = ops[1]
    raw = fp64.reader(ctx, instr, attrs.evolve(op, neg=False, abs=False), zrow)
    wide = "F64" in mods
    write = fp64.writer(ops[0].reg, zrow) if wide else _fwrite(ops[0].reg, zrow)

    def run(g, m):
        x = np.broadcast_to(np.asarray(raw(g), dtype=np.float64), g.tid.shape).view(np.uint64)
        neg = (x >> np.uint64(63)).astype(bool) if signed else np.zeros(x.shape, dtype=bool)
        if op.neg:  # the integer negated (two's complement of 64 bits)
            x = np.uint64(0) - x
            neg = (x >> np.uint64(63)).astype(bool) if signed else neg
        mag = np.where(neg, np.uint64(0) - x, x)
        r = round_int64(mag, neg, 53 if wide else 24, mode)
        write(g, r if wide else r.astype(F32), m)
    return run


def f2i(x, signed, mode):
    """fp32 to a 32-bit integer: round by ``mode`` (TRUNC, FLOOR, CEIL, ROUND = nearest even),
    saturate to the type's range; NaN gives 0 (PTX cvt.rzi / rmi / rpi / rni .s32 / .u32)."""
    x = np.asarray(x, dtype=np.float64)
    r = {"TRUNC": np.trunc, "FLOOR": np.floor, "CEIL": np.ceil, "ROUND": np.rint}[mode](x)
    lo, hi = (-(1 << 31), (1 << 31) - 1) if signed else (0, (1 << 32) - 1)
    r = np.where(np.isnan(r), 0, np.clip(r, lo, hi)).astype(np.int64)
    return (r & 0xFFFFFFFF).astype(np.uint32)


def f2i64(x, signed, mode):
    """fp32 or fp64 to a 64-bit integer (its bits as uint64): round by ``mode``, saturate to the
    type's range, NaN gives 0, as f2i does for 32 bits (PTX cvt.rzi / rmi / rpi / rni .s64 / .u64:
    float-to-integer conversions clamp to the destination range)."""
    r = _INTEGRAL[mode](np.asarray(x, dtype=np.float64))  # (exact: fp32 and fp64 are fp64 values)
    nan = np.isnan(r)
    if signed:
        big, small = r >= 2.0 ** 63, r < -2.0 ** 63
        v = np.where(nan | big | small, 0.0, r).astype(np.int64).view(np.uint64)
        return np.where(big, np.uint64((1 << 63) - 1), np.where(small, np.uint64(1 << 63), v))
    big = r >= 2.0 ** 64
    r = np.where(nan | big | (r < 0), 0.0, r)
    top = r >= 2.0 ** 63  # above int64: converted less 2^63, which is added back
    v = np.where(top, r - 2.0 ** 63, r).astype(np.int64).view(np.uint64)
    v = v + np.where(top, np.uint64(1 << 63), np.uint64(0))
    return np.where(big, np.uint64((1 << 64) - 1), v)


@compiles("F2I")
def _f2i(ctx, instr, ops, mods, zrow):
    wide = "S64" in mods or "U64" in mods
    signed = "U32" not in mods and "U64" not in mods
    mode = next((x for x in mods if x in ("TRUNC", "FLOOR", "CEIL", "ROUND")), "ROUND")
    if "F64" in mods:  # F2I.<int>.F64: an fp64 register pair
        a = fp64.reader(ctx, instr, ops[1], zrow)
    else:
        a = _fsrc(ctx, instr, ops[1], zrow, "FTZ" in mods)
    if wide:  # F2I.S64 / .U64: the result's low word in d, its high word in d + 1
        write64 = fp64.writer(ops[0].reg, zrow)
        return lambda g, m: write64(g, np.broadcast_to(f2i64(a(g), signed, mode), g.tid.shape).view(np.float64), m)
    write = writer(ops[0].reg, zrow)
    return lambda g, m: write(g, np.broadcast_to(f2i(a(g), signed, mode), g.tid.shape).copy(), m)


F16 = np.float16
# the NaN an F16 result gets (the canonical NaN of PTX's half-precision arithmetic; a choice: the
# payload the hardware writes is not documented)
F16_NAN = np.uint16(0x7FFF)


def round_f16(x, mode):
    """fp32 values to IEEE half precision (binary16 bits, as uint16) with rounding mode RN (nearest
    even), RZ, RM or RP: subnormal halves are kept (PTX cvt: .ftz applies to f32 values only);
    overflow gives infinity, or the largest finite half where the mode rounds toward zero."""
    x64 = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        r = x64.astype(F16)  # numpy rounds double to half to nearest even, subnormals included
    if mode != "RN":
        back = r.astype(np.float64)
        if mode == "RZ":
            r = np.where(np.abs(back) > np.abs(x64), np.nextafter(r, F16(0)), r)
        elif mode == "RM":
            r = np.where(back > x64, np.nextafter(r, F16(-np.inf)), r)
        else:
            r = np.where(back < x64, np.nextafter(r, F16(np.inf)), r)
    bits = np.asarray(r, dtype=F16).view(np.uint16)
    return np.where(np.isnan(x64), F16_NAN, bits).astype(np.uint16)


def half_to_f32(bits16):
    """binary16 bits to fp32 (exact: every half is an fp32 value)."""
    return np.asarray(bits16, dtype=np.uint16).view(F16).astype(F32)


_INTEGRAL = {"TRUNC": np.trunc, "FLOOR": np.floor, "CEIL": np.ceil, "ROUND": np.rint}


@compiles("F2F")
def _f2f(ctx, instr, ops, mods, zrow):
    """F2F.<dst>.<src>: fp32 and IEEE half conversions. An F16 source is the low half of the
    register (the high half with .H1); an F16 result is written zero-extended to 32 bits. .RN (or
    none), .RM, .RP, .RZ round an F32 to F16; .TRUNC/.FLOOR/.CEIL/.ROUND round to an integral value
    (then to the destination type); .PASS, and any rounding between equal types that is not to an
    integral value, copies. .FTZ flushes fp32 subnormal inputs and results (a half is never an fp32
    subnormal, nor an fp32 subnormal a non-zero half except under RP/RM); .SAT clamps to [0, 1]
    (NaN to 0, PTX cvt .sat)."""
    from ..isa.opcodes import conversion_types
    dst, src = conversion_types(instr.opcode, mods)
    if "F64" in (dst, src):
        return _f2f64(ctx, instr, ops, mods, zrow, dst, src)
    integral = next((x for x in mods if x in _INTEGRAL), None)
    mode = next((x for x in mods if x in ("RN", "RM", "RP", "RZ")), "RN")
    ftz, sat = "FTZ" in mods, "SAT" in mods
    op = ops[1]
    if src == "F16":
        raw = reader_u32(ctx, instr, attrs.evolve(op, h1=False, neg=False, abs=False) if op.kind == ins.REG else op, zrow)
        shift = U32(16 if op.h1 else 0)
        neg, absval = op.neg, op.abs

        def a(g):
            v = half_to_f32(((np.asarray(raw(g), dtype=np.uint32) >> shift) & U32(0xFFFF)).astype(np.uint16))
            if absval:
                v = np.abs(v)
            return -v if neg else v
    else:
        a = _fsrc(ctx, instr, op, zrow, ftz)
    fn = _INTEGRAL[integral] if integral else (lambda v: v)
    if dst == "F32":
        write = _fwrite(ops[0].reg, zrow)
    else:
        write = writer(ops[0].reg, zrow)

    def run(g, m):
        r = np.asarray(fn(np.asarray(a(g), dtype=F32)), dtype=F32)
        if sat:
            r = saturate(r)
        if dst == "F32":
            write(g, flush(r) if ftz else r, m)
        else:
            bits = round_f16(r, mode if src == "F32" and not integral else "RN")
            write(g, np.broadcast_to(bits.astype(np.uint32), g.tid.shape).copy(), m)
    return run


def _f2f64(ctx, instr, ops, mods, zrow, dst, src):
    """F2F with an F64 side (register pairs): F64.F32 widens exactly (an fp32 subnormal flushed
    with .FTZ); F32.F64 rounds by .RN (default) / .RZ / .RM / .RP (exact directed rounding,
    :func:`ieee.round_directed`), flushing an fp32 subnormal result with .FTZ; F64.F64 rounds to
    an integral value with .ROUND / .FLOOR / .CEIL / .TRUNC (else copies). An F16 side with F64 is
    refused."""
    if "F16" in (dst, src):
        refuse(instr, "a conversion between F16 and F64")
    integral = next((x for x in mods if x in _INTEGRAL), None)
    mode = next((x for x in mods if x in ("RN", "RM", "RP", "RZ")), "RN")
    ftz, sat = "FTZ" in mods, "SAT" in mods
    a = fp64.reader(ctx, instr, ops[1], zrow) if src == "F64" else _fsrc(ctx, instr, ops[1], zrow, ftz)
    write = fp64.writer(ops[0].reg, zrow) if dst == "F64" else _fwrite(ops[0].reg, zrow)
    fn = {"ROUND": np.rint, "FLOOR": np.floor, "CEIL": np.ceil, "TRUNC": np.trunc}.get(integral, lambda v: v)

    def run(g, m):
        x = fn(np.asarray(a(g), dtype=np.float64))
        if dst == "F64":
            r = x
            if sat:
                r = np.where(np.isnan(r), 0.0, np.clip(r, 0.0, 1.0))
        else:
            with np.errstate(over="ignore"):
                r = x.astype(F32) if mode == "RN" else ieee.round_directed(x, np.zeros_like(x), mode)
            if ftz:
                r = flush(r)
            if sat:
                r = saturate(r)
        write(g, r, m)
    return run


def refuse(instr, what):
    raise SimulationError(f"{instr.where}: {instr.full_opcode}: {what} is not modelled")


FLOAT_OPS = ("FFMA", "FMUL", "FADD", "FMUL32I", "FADD32I")


DIRECTED = frozenset(("RZ", "RM", "RP"))


def table_float(instr) -> bool:
    """Whether ``instr`` runs in an fp32 table (:mod:`fp32`): FFMA / FMUL / FADD rounding to
    nearest (the directed roundings run in :func:`floatops.directed`)."""
    return instr.opcode in FLOAT_OPS and DIRECTED.isdisjoint(instr.mods)


def float_row(ctx, instr, zrow):
    """The row of an fp32 instruction in a :mod:`fp32` table, and the constants its sources
    read: ``(row, consts)``; a constant source is ``-1 - n`` for the n-th constant (each table
    renumbers them when it concatenates rows). A write to RZ gives ``None``: nothing to do."""
    for m in instr.mods:
        if m in ("RM", "RP", "RZ"):
            raise SimulationError(f"{instr.where}: rounding mode .{m} is not modelled (only round-to-nearest)")
    ops = instr.operands
    flags = (fp32.FTZ if "FTZ" in instr.mods else 0) | (fp32.SAT if "SAT" in instr.mods else 0)
    srcs = []
    consts = []
    for n, o in enumerate(ops[1:]):
        if o.kind == ins.REG:
            srcs.append(zrow if o.reg == ins.RZ else o.reg)
            flags |= (fp32.NEG[n] if o.neg else 0) | (fp32.ABS[n] if o.abs else 0)
        else:
            consts.append(reader_f32(ctx, instr, o, zrow)(None))
            srcs.append(-len(consts))
    while len(srcs) < 3:
        srcs.append(zrow)
    if ops[0].reg == ins.RZ:
        return None, consts
    return [fp32.OPCODES[IMMEDIATE_FORMS.get(instr.opcode, instr.opcode)], ops[0].reg, srcs[0], srcs[1], srcs[2],
            flags], consts


def float_table(rows):
    """One :mod:`fp32` table from ``(row, consts)`` pairs: ``(int64 table, float32 constants)``."""
    table, consts = [], []
    for row, cs in rows:
        if row is None:
            continue
        r = list(row)
        for n in (2, 3, 4):
            if r[n] < 0:
                r[n] = -1 - (len(consts) + (-1 - r[n]))
        consts.extend(cs)
        table.append(r)
    return (np.array(table, dtype=np.int64).reshape(-1, fp32.COLUMNS),
            np.array(consts or [0.0], dtype=np.float32))


def run_floats(table, consts):
    """``fn(g, m)`` running an :mod:`fp32` table on group g for lanes m (None: all)."""
    kernel = fp32.run
    if not len(table):
        return lambda g, m: None

    def run(g, m):
        if m is None:
            kernel(g.fregs, table, consts, NO_MASK, False)
        else:
            kernel(g.fregs, table, consts, m, True)
    return run


def _float_single(row, consts):
    return run_floats(*float_table([(row, consts)]))


@compiles("FFMA", "FMUL", "FADD", values=True)
def _float(ctx, instr, ops, mods, zrow, values=True):
    """FFMA / FMUL / FADD: a row of an :mod:`fp32` table when rounding to nearest (the launch runs a
    straight sequence of them as one table), the directed roundings in :func:`directed`."""
    if not table_float(instr):
        fn = directed(ctx, instr, zrow)
        return fn if values else None
    row, consts = float_row(ctx, instr, zrow)
    if not values:
        return None
    return _float_single(row, consts)
