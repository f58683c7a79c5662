"""Double precision: DADD, DMUL, DFMA (with .RN, .RZ, .RM, .RP), DSETP and DMNMX on register pairs.

An fp64 operand is a register pair, the low word in the even register (R2 = low, R3 = high for
``R2``), a constant ``c[b][o]`` (8 bytes), or an immediate (the 19 high bits of the pattern the
encoding keeps). DADD and DMUL round to nearest with numpy's IEEE fp64 arithmetic; DFMA is the
fused multiply-add with one rounding (LLVM's ``llvm.fma.f64``, the FMA instruction or the C
library's ``fma``). The directed roundings (the slow paths of ptxas's fp64 division and square
root round with DFMA.RM / .RP and DMUL.RP) are computed exactly with rational arithmetic and
rounded in the mode's direction (Python's ``Fraction`` to ``float`` rounds to nearest; the
neighbour in the mode's direction is taken where the exact value lies beyond it). Subnormals are
kept (fp64 on Maxwell has no flush-to-zero mode).
"""

from __future__ import annotations

import math
from fractions import Fraction

import attrs
import numpy as np

from ..errors import SimulationError
from ..isa import instruction as ins
from ..jit import intrinsic, njit, types
from .alu import boolop
from .opcode_table import compiles
from .operands import const_word, pred_reader, set_zero_sign, write_pred, writer as writer32

F64 = np.float64
U32 = np.uint32
_MAX = np.finfo(np.float64).max


@intrinsic
def _fma64(typingctx, a, b, c):
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        return builder.fma(args[0], args[1], args[2])
    return sig, codegen


@njit(cache=True)
def fma64(a, b, c):
    """``a * b + c`` with one rounding, lane by lane (fp64 arrays of one shape)."""
    out = np.empty_like(a)
    fa, fb, fc, fo = a.ravel(), b.ravel(), c.ravel(), out.ravel()
    for i in range(fa.size):
        fo[i] = _fma64(fa[i], fb[i], fc[i])
    return out


def _directed(v: Fraction, mode: str) -> float:
    """The fp64 rounding of the exact value v toward zero (RZ), -inf (RM) or +inf (RP)."""
    try:
        r = float(v)  # to nearest
    except OverflowError:
        r = math.inf if v > 0 else -math.inf
    if math.isinf(r):  # beyond the largest finite number: Inf only toward it
        toward = (mode == "RP" and r > 0) or (mode == "RM" and r < 0)
        return r if toward else math.copysign(_MAX, r)
    fr = Fraction(r)
    floor = r if fr <= v else math.nextafter(r, -math.inf)
    ceil = r if fr >= v else math.nextafter(r, math.inf)
    if mode == "RM":
        return floor
    if mode == "RP":
        return ceil
    return floor if v > 0 else ceil


def round_op(op: str, a, b, c, mode: str):
    """DADD (a + b), DMUL (a * b) or DFMA (a * b + c) of fp64 arrays, rounded by ``mode``."""
    a, b = np.asarray(a, F64), np.asarray(b, F64)
    c = np.asarray(c, F64) if c is not None else None
    with np.errstate(all="ignore"):
        if op == "DADD":
            near = a + b
        elif op == "DMUL":
            near = a * b
        else:
            a_, b_, c_ = np.broadcast_arrays(a, b, c)
            near = fma64(np.ascontiguousarray(a_), np.ascontiguousarray(b_), np.ascontiguousarray(c_))
    if mode == "RN":
        return near
    out = np.array(near, dtype=F64, copy=True)
    args = np.broadcast_arrays(a, b, c if c is not None else a)
    for i in np.ndindex(out.shape):
        x, y, z = (float(t[i]) for t in args)
        if not all(math.isfinite(t) for t in (x, y, z)):
            continue  # an Inf or NaN operand: the result is the same in every rounding mode
        if op == "DADD":
            v = Fraction(x) + Fraction(y)
        elif op == "DMUL":
            v = Fraction(x) * Fraction(y)
        else:
            v = Fraction(x) * Fraction(y) + Fraction(z)
        if v == 0:
            # an exact zero keeps the round-to-nearest sign, except for RM where a sum is -0
            # unless both addends are +0 (IEEE 754 6.3); a product's sign is its operands'
            if mode == "RM" and op != "DMUL":
                p = x if op == "DADD" else x * y
                q = y if op == "DADD" else z
                plus = p == 0 and q == 0 and not math.copysign(1, p) < 0 and not math.copysign(1, q) < 0
                out[i] = 0.0 if plus else -0.0
            continue
        out[i] = _directed(v, mode)
    return out


# ---- operands -----------------------------------------------------------------------------------

def reader(ctx, instr, op, zrow):
    """fp64 view of a source operand (a register pair, an 8-byte constant, an immediate), with
    '-' and '|x|' applied."""
    if op.kind == ins.REG:
        if op.reg == ins.RZ:
            lo = hi = zrow
        else:
            lo, hi = op.reg, op.reg + 1

        def get(g):
            x = (g.regs[lo].astype(np.uint64) | (g.regs[hi].astype(np.uint64) << np.uint64(32))).view(F64)
            if op.abs:
                x = np.abs(x)
            return -x if op.neg else x
        return get
    if op.kind == ins.CONST:
        w0 = const_word(ctx, instr, op)
        w1 = const_word(ctx, instr, attrs.evolve(op, value=op.value + 4))
        v = np.array([int(w0) | int(w1) << 32], dtype=np.uint64).view(F64)[0]
    elif op.kind in (ins.FIMM, ins.IMM):
        v = F64(op.fvalue) if op.kind == ins.FIMM else F64(op.value)
    else:
        raise SimulationError(f"{instr.where}: operand {op.kind} cannot be read as an fp64 value")
    if op.abs:
        v = abs(v)
    if op.neg:
        v = -v
    v = F64(v)
    return lambda g: v


def writer(dst, zrow):
    """Store fp64 values into the pair ``dst``, ``dst + 1`` for the lanes of mask m."""
    if dst == ins.RZ:
        return lambda g, v, m: None

    def write(g, v, m):
        bits = np.broadcast_to(np.asarray(v, dtype=F64), g.tid.shape).view(np.uint64)
        lo = (bits & np.uint64(0xFFFFFFFF)).astype(U32)
        hi = (bits >> np.uint64(32)).astype(U32)
        if m is None:
            g.regs[dst] = lo
            g.regs[dst + 1] = hi
        else:
            np.copyto(g.regs[dst], lo, where=m)
            np.copyto(g.regs[dst + 1], hi, where=m)
    return write


# ---- opcodes ------------------------------------------------------------------------------------

@compiles("DADD", "DMUL", "DFMA")
def _arith(ctx, instr, ops, mods, zrow):
    mode = next((x for x in mods if x in ("RN", "RZ", "RM", "RP")), "RN")
    srcs = [reader(ctx, instr, o, zrow) for o in ops[1:]]
    op = instr.opcode
    write = writer(ops[0].reg, zrow)

    def run(g, m):
        v = [s(g) for s in srcs]
        write(g, round_op(op, v[0], v[1], v[2] if len(v) > 2 else None, mode), m)
    return run


def compare(a, b, cmp):
    """DSETP's comparison of fp64 values (ordered tests false on NaN, the U forms true)."""
    a, b = np.asarray(a, F64), np.asarray(b, F64)
    nan = np.isnan(a) | np.isnan(b)
    if cmp == "NUM":
        return ~nan
    if cmp == "NAN":
        return nan
    base = {"LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
            "EQ": np.equal, "NE": np.not_equal}[cmp[:2]]
    with np.errstate(invalid="ignore"):
        r = base(a, b) & ~nan
    return r | nan if cmp.endswith("U") else r


@compiles("DSETP")
def _dsetp(ctx, instr, ops, mods, zrow):
    cmp = next(x for x in mods if x not in ("AND", "OR", "XOR"))
    bop = boolop(next((x for x in mods if x in ("AND", "OR", "XOR")), "AND"))
    a, b = (reader(ctx, instr, o, zrow) for o in ops[2:4])
    pc = pred_reader(ops[4])
    pd, pq = ops[0].reg, ops[1].reg

    def run(g, m):
        r = np.broadcast_to(compare(a(g), b(g), cmp), g.tid.shape)
        c = pc(g)
        write_pred(g, pd, bop(r, c), m)
        write_pred(g, pq, bop(~r, c), m)
    return run


@compiles("DSET")
def _dset(ctx, instr, ops, mods, zrow):
    """DSET[.BF].cmp.bool d, a, b, p: the fp64 comparison combined with p as a 32-bit register: all
    ones when true (1.0f with .BF), 0 when false; .CC sets the condition code's zero and sign flags
    of the result (as FSET's)."""
    cmp = next(x for x in mods if x not in ("AND", "OR", "XOR", "BF", "CC"))
    bop = boolop(next((x for x in mods if x in ("AND", "OR", "XOR")), "AND"))
    a, b = (reader(ctx, instr, o, zrow) for o in ops[1:3])
    pc = pred_reader(ops[3])
    true = U32(0x3F800000) if "BF" in mods else U32(0xFFFFFFFF)
    write = writer32(ops[0].reg, zrow)
    set_cc = "CC" in mods

    def run(g, m):
        r = bop(np.broadcast_to(compare(a(g), b(g), cmp), g.tid.shape), pc(g))
        v = np.where(r, true, U32(0)).astype(np.uint32)
        if set_cc:
            set_zero_sign(g, v, m)
        write(g, v, m)
    return run


@compiles("DMNMX")
def _dmnmx(ctx, instr, ops, mods, zrow):
    """DMNMX d, a, b, p: min(a, b) when p holds, else max; a NaN operand gives the other one."""
    a, b = (reader(ctx, instr, o, zrow) for o in ops[1:3])
    p = pred_reader(ops[3])
    write = writer(ops[0].reg, zrow)
    return lambda g, m: write(g, np.where(p(g), np.fmin(a(g), b(g)), np.fmax(a(g), b(g))), m)
