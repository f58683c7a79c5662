"""A straight run of integer and fp32 ALU instructions in one compiled call.

The op modules compile each instruction into a numpy closure (:mod:`aluops`, :mod:`floatops`), the
specification. A launch runs a block's consecutive unguarded MOV, IADD, IADD3, ISCADD, XMAD, SHL,
SHR, LOP, LOP3, SEL, ISETP and FFMA / FMUL / FADD (rounding to nearest) as the rows of one table
instead: one call of :func:`run` executes them in program order, each row one loop over the lanes
of the group (on the lanes of the group's active mask), without the numpy temporaries of the
closures and without a Python call per instruction (a few microseconds each, most of the time of
a launch of a few thousand lanes). :func:`row` says whether an instruction has a row and builds
it; the forms it does not take (a carry into a three-input add, a predicate result of LOP, the
extended compares) stay closures. tests/test_functional_alublock.py holds every row equal to its
closure, lane by lane, on random operands and masks.

A row is ``COLUMNS`` int64: opcode, destination row (-1: RZ, nothing written), sources a, b, c (a
register row >= 0, or ``-1 - n`` for the n-th word of the table's constants, which come with their
negation or complement applied), flags, and three opcode-specific fields. A register source's
negation (two's complement) or complement is a flag bit of its slot (``NEG``, ``NOT``). The fp32
rows are those of :mod:`maxsim.functional.fp32` (its flags; their constants are float32 bit
patterns among the words).
"""

from __future__ import annotations

import attrs
import numpy as np

from ..isa import instruction as ins
from ..isa.opcodes import IMMEDIATE_FORMS
from ..jit import njit
from . import fp32
from .fp32 import _ftz
from .fp32 import FFMA, FMUL, FADD  # noqa: F401 (the fp32 rows keep their opcodes)
from .intpass import XMAD_MODES, xmad_lane, xmad_steps
from .operands import ConstantFault, reader_u32

MOV, ADD, ADD3, XMAD, SHL, SHR, LOP, LOP3, SEL, ISETP = 10, 11, 12, 13, 14, 15, 16, 17, 18, 19
COLUMNS = 9  # opcode, destination, a, b, c, flags, x1, x2, x3

# flag bits of an integer row: negate / complement register source slot n
NEG = (1, 4, 16)
NOT = (2, 8, 32)
SET_CC = 64  # ADD: the carry and zero flags into the condition code
USE_X = 128  # ADD: the carry in is the condition code's (and the zero flag chains)
WRAP = 256  # SHL.W: the count taken modulo 32
SIGNED = 512  # SHR, ISETP: signed
A_H1, B_H1, A_S16, B_S16 = 1024, 2048, 4096, 8192  # XMAD's half selectors and signed halves
C_NOT = 16384  # SEL, ISETP: the predicate source negated

_CMP = {"LT": 0, "LE": 1, "GT": 2, "GE": 3, "EQ": 4, "NE": 5}
_BOOL = {"AND": 0, "OR": 1, "XOR": 2}
_LOPS = {"AND": 0, "OR": 1, "XOR": 2, "PASS_B": 3}

# the condition-code bits (maxsim.functional.operands: CC_CARRY, CC_ZERO, CC_CARRY2)
_CARRY, _ZERO, _CARRY2 = 1, 2, 16
_W = 0xFFFFFFFF


class NoRow(Exception):
    """The instruction has no table row (it stays a closure)."""


def _plain(op):
    return attrs.evolve(op, h1=False)


def row(ctx, instr, zrow):
    """``(row, words)`` of ``instr`` in a table: its row (None: it writes nothing, an fp32
    instruction to RZ) and the constant words its sources read (``-1 - n`` in the row is the n-th
    of them); None when the instruction has no row. May raise ConstantFault (a constant the launch
    did not give): the caller then keeps the instruction's closure, which faults when it runs."""
    if instr.pred != ins.PT or instr.pred_neg:
        return None
    op = IMMEDIATE_FORMS.get(instr.opcode, instr.opcode)
    try:
        if op in ("FFMA", "FMUL", "FADD"):
            from .floatops import float_row, table_float
            if not table_float(instr):
                return None
            r, consts = float_row(ctx, instr, zrow)
            if r is None:
                return None, []
            words = [int(np.float32(c).view(np.uint32)) for c in consts]
            return [r[0], r[1], r[2], r[3], r[4], r[5], 0, 0, 0], words
        build = _BUILDERS.get(op)
        if build is None:
            return None
        return build(ctx, instr, instr.operands, frozenset(instr.mods), zrow)
    except NoRow:
        return None


class _Sources:
    """The source slots of a row being built, and its constant words."""

    def __init__(self, ctx, instr, zrow):
        self.ctx, self.instr, self.zrow = ctx, instr, zrow
        self.flags = 0
        self.words = []

    def add(self, slot, op):
        """Source slot ``slot`` reads operand ``op`` (as :func:`reader_u32` reads it)."""
        if op.kind == ins.REG:
            if op.neg:
                self.flags |= NEG[slot]
            elif op.not_:
                self.flags |= NOT[slot]
            return self.zrow if op.reg == ins.RZ else op.reg
        if op.kind not in (ins.IMM, ins.CONST, ins.FIMM):
            raise NoRow
        v = reader_u32(self.ctx, self.instr, op, self.zrow)(None)
        self.words.append(int(v) & _W)
        return -len(self.words)

    def row(self, opcode, dst, a=0, b=0, c=0, flags=0, x1=0, x2=0, x3=0):
        return [opcode, dst, a, b, c, self.flags | flags, x1, x2, x3], self.words


def _dst(op):
    if op.kind != ins.REG:
        raise NoRow
    return -1 if op.reg == ins.RZ else op.reg


def _mov(ctx, instr, ops, mods, zrow):
    s = _Sources(ctx, instr, zrow)
    return s.row(MOV, _dst(ops[0]), s.add(0, ops[1]))


def _iadd(ctx, instr, ops, mods, zrow):
    use_x, set_cc = "X" in mods, "CC" in mods
    srcs, cin = ops[1:3], 0
    if use_x or set_cc:  # (as aluops._iadd: one negated source is its complement plus a carry in)
        negated = [o.kind in (ins.REG, ins.CONST) and o.neg for o in srcs]
        if negated.count(True) == 1:
            srcs = [attrs.evolve(o, neg=False, not_=True) if n else o for o, n in zip(srcs, negated)]
            cin = 1
    s = _Sources(ctx, instr, zrow)
    a, b = s.add(0, srcs[0]), s.add(1, srcs[1])
    return s.row(ADD, _dst(ops[0]), a, b, 0, (SET_CC if set_cc else 0) | (USE_X if use_x else 0), 0, cin)


def _iscadd(ctx, instr, ops, mods, zrow):
    sh = ops[3].value
    if not 0 <= sh < 32:
        raise NoRow
    s = _Sources(ctx, instr, zrow)
    a, b = s.add(0, ops[1]), s.add(1, ops[2])
    return s.row(ADD, _dst(ops[0]), a, b, 0, SET_CC if "CC" in mods else 0, sh, 0)


def _iadd3(ctx, instr, ops, mods, zrow):
    if mods & {"X", "CC", "RS", "LS"}:
        raise NoRow
    from .aluops import _imm20
    s = _Sources(ctx, instr, zrow)
    a, b, c = (s.add(n, _imm20(o)) for n, o in enumerate(ops[1:4]))
    return s.row(ADD3, _dst(ops[0]), a, b, c)


def _xmad(ctx, instr, ops, mods, zrow):
    s = _Sources(ctx, instr, zrow)
    a, b, c = s.add(0, _plain(ops[1])), s.add(1, _plain(ops[2])), s.add(2, ops[3])
    types = [x for x in instr.mods if x in ("S16", "U16")] + ["U16", "U16"]
    flags = ((A_H1 if ops[1].h1 else 0) | (B_H1 if ops[2].h1 else 0) | (A_S16 if types[0] == "S16" else 0)
             | (B_S16 if types[1] == "S16" else 0))
    modes = sum(bit for name, bit in XMAD_MODES.items() if name in mods)
    return s.row(XMAD, _dst(ops[0]), a, b, c, flags, modes)


def _shift(ctx, instr, ops, mods, zrow):
    s = _Sources(ctx, instr, zrow)
    a, b = s.add(0, ops[1]), s.add(1, ops[2])
    if instr.opcode == "SHL":
        return s.row(SHL, _dst(ops[0]), a, b, 0, WRAP if "W" in mods else 0)
    return s.row(SHR, _dst(ops[0]), a, b, 0, 0 if "U32" in mods else SIGNED)


def _lop(ctx, instr, ops, mods, zrow):
    if ops[0].kind == ins.PRED:
        raise NoRow
    kind = next((x for x in instr.mods if x in _LOPS), "AND")
    s = _Sources(ctx, instr, zrow)
    a, b = s.add(0, ops[1]), s.add(1, ops[2])
    return s.row(LOP, _dst(ops[0]), a, b, 0, 0, _LOPS[kind])


def _lop3(ctx, instr, ops, mods, zrow):
    if ops[0].kind == ins.PRED:
        raise NoRow
    s = _Sources(ctx, instr, zrow)
    a, b, c = (s.add(n, o) for n, o in enumerate(ops[1:4]))
    return s.row(LOP3, _dst(ops[0]), a, b, c, 0, ops[4].value & 0xFF)


def _sel(ctx, instr, ops, mods, zrow):
    p = ops[3]
    if p.kind != ins.PRED:
        raise NoRow
    s = _Sources(ctx, instr, zrow)
    a, b = s.add(0, ops[1]), s.add(1, ops[2])
    return s.row(SEL, _dst(ops[0]), a, b, p.reg, C_NOT if p.not_ else 0)


def _isetp(ctx, instr, ops, mods, zrow):
    if "X" in mods or ops[4].kind != ins.PRED:
        raise NoRow
    cmp = next(x for x in instr.mods if x in _CMP)
    bname = next((x for x in instr.mods if x in _BOOL), "AND")
    s = _Sources(ctx, instr, zrow)
    a, b = s.add(0, ops[2]), s.add(1, ops[3])
    pd = -1 if ops[0].reg == ins.PT else ops[0].reg
    pq = -1 if ops[1].reg == ins.PT else ops[1].reg
    flags = (0 if "U32" in mods else SIGNED) | (C_NOT if ops[4].not_ else 0)
    return s.row(ISETP, pd, a, b, ops[4].reg, flags, _CMP[cmp], _BOOL[bname], pq)


_BUILDERS = {"MOV": _mov, "MOV32I": _mov, "IADD": _iadd, "ISCADD": _iscadd, "IADD3": _iadd3, "XMAD": _xmad,
             "SHL": _shift, "SHR": _shift, "LOP": _lop, "LOP3": _lop3, "SEL": _sel, "ISETP": _isetp}


def table(rows):
    """One table from ``(row, words)`` pairs (rows None are dropped): ``(int64 table, uint32
    words)``, each row's constants renumbered into the table's."""
    out, words = [], []
    for r, ws in rows:
        if r is None:
            continue
        r = list(r)
        for n in (2, 3, 4):
            if r[0] in (SEL, ISETP) and n == 4:
                continue  # (a predicate, not a source)
            if r[n] < 0:
                r[n] = -1 - (len(words) + (-1 - r[n]))
        words.extend(ws)
        out.append(r)
    return (np.array(out, dtype=np.int64).reshape(-1, COLUMNS), np.array(words or [0], dtype=np.uint32))


@njit(cache=True)
def _source(regs, crows, s, fl, slot, scratch, lo, hi):
    """Source ``s`` as a row of the lanes: a register row or a constant's row (``crows``), or,
    with its slot's negation or complement, that row made in ``scratch[slot]``: its lanes lo..hi
    (a view: a loop over a view from lane 0 vectorises, one from lane lo did not)."""
    r = (regs[s] if s >= 0 else crows[-1 - s])[lo:hi]
    if s < 0:
        return r
    if fl & (1 << (2 * slot)):
        t = scratch[slot][lo:hi]
        for i in range(hi - lo):
            t[i] = np.uint32(0) - r[i]
        return t
    if fl & (2 << (2 * slot)):
        t = scratch[slot][lo:hi]
        for i in range(hi - lo):
            t[i] = ~r[i]
        return t
    return r


@njit(cache=True)
def _put(rd, vals, mask, masked, n):
    """``rd`` := ``vals`` on the lanes lo..hi of mask (every lane unless masked)."""
    if masked:
        for i in range(n):
            if mask[i]:
                rd[i] = vals[i]
    else:
        for i in range(n):
            rd[i] = vals[i]


@njit(cache=True)
def _float(fr, fc, fscratch, op, d, a, b, c, fl, mask, masked, lo, hi):
    """An fp32 row (the arithmetic of :func:`maxsim.functional.fp32.run`) on lanes lo..hi; ``fc``
    the constants' rows seen as float32."""
    ra = (fr[a] if a >= 0 else fc[-1 - a])[lo:hi]
    rb = (fr[b] if b >= 0 else fc[-1 - b])[lo:hi]
    rc = (fr[c] if c >= 0 else fc[-1 - c])[lo:hi]
    rd = fr[d][lo:hi]
    mask = mask[lo:hi] if masked else mask
    if fl == 0 and not masked:
        if d == a or d == b or d == c:  # (into a scratch row, then copied: see _row)
            rd = fscratch[lo:hi]
        if op == FFMA:
            for i in range(hi - lo):
                rd[i] = fp32._fma(ra[i], rb[i], rc[i])
        elif op == FMUL:
            for i in range(hi - lo):
                rd[i] = ra[i] * rb[i]
        else:
            for i in range(hi - lo):
                rd[i] = ra[i] + rb[i]
        if d == a or d == b or d == c:
            row = fr[d][lo:hi]
            for i in range(hi - lo):
                row[i] = rd[i]
        return
    # (a constant comes with its negation and absolute value applied: the flags are a register's)
    na, nb, nc = a >= 0, b >= 0, c >= 0
    for i in range(hi - lo):
        if masked and not mask[i]:
            continue
        x = ra[i]
        y = rb[i]
        if na and fl & 2:
            x = abs(x)
        if na and fl & 1:
            x = -x
        if nb and fl & 8:
            y = abs(y)
        if nb and fl & 4:
            y = -y
        if fl & fp32.FTZ:
            x = _ftz(x)
            y = _ftz(y)
        if op == FFMA:
            z = rc[i]
            if nc and fl & 32:
                z = abs(z)
            if nc and fl & 16:
                z = -z
            if fl & fp32.FTZ:
                z = _ftz(z)
            r = fp32._fma(x, y, z)
        elif op == FMUL:
            r = x * y
        else:
            r = x + y
        if fl & fp32.FTZ:
            r = _ftz(r)
        if fl & fp32.SAT:
            if np.isnan(r) or r < 0:
                r = np.float32(0.0)
            elif r > 1:
                r = np.float32(1.0)
        rd[i] = r


@njit(cache=True)
def _xmad(ra, rb, rc, t, fl, modes, n):
    """XMAD of :func:`maxsim.functional.intpass.xmad` (its loop, without branches) into ``t``."""
    a_shift, b_shift, a_sign, b_sign, p_shift, c_shift, c_keep, c_carry, r_keep, r_merge, csfu = \
        xmad_steps((fl & A_H1) != 0, (fl & B_H1) != 0, (fl & A_S16) != 0, (fl & B_S16) != 0, modes)
    if csfu:
        for i in range(n):
            t[i] = xmad_lane(np.int64(ra[i]), np.int64(rb[i]), np.int64(rc[i]), a_shift, b_shift, a_sign, b_sign,
                             p_shift, c_shift, c_keep, c_carry, r_keep, r_merge, csfu)
        return
    # (in 32-bit words: the low 32 bits of every step are those of the 64-bit one above)
    sa, sb, sp, sc = np.uint32(a_shift), np.uint32(b_shift), np.uint32(p_shift), np.uint32(c_shift)
    ga, gb = np.uint32(a_sign), np.uint32(b_sign)
    ck, cc_, rk, rm = np.uint32(c_keep), np.uint32(c_carry), np.uint32(r_keep), np.uint32(r_merge)
    m16 = np.uint32(0xFFFF)
    s16 = np.uint32(16)
    for i in range(n):
        av = ra[i]
        bv = rb[i]
        a16 = np.uint32(np.uint32(((av >> sa) & m16) ^ ga) - ga)
        b16 = np.uint32(np.uint32(((bv >> sb) & m16) ^ gb) - gb)
        prod = np.uint32(np.uint32(a16 * b16) << sp)
        bh = np.uint32(bv << s16)
        cv = np.uint32(np.uint32(np.uint32(rc[i] >> sc) & ck) + (bh & cc_))
        r = np.uint32(prod + cv)
        t[i] = (r & rk) | (bh & rm)


@njit(cache=True)
def _isetp(ra, rb, pc, v, w, reread, flip, want_lt, want_eq, want_gt, is_and, is_or, is_xor, neg_c, n):
    """ISETP's loop on lanes lo..hi: its two results into ``v`` and ``w`` (branch-free: the compare
    and the boolean operation chosen by masks); ``reread``: the predicate source is the first
    destination itself, which the second result reads as just written."""
    for i in range(n):
        av = ra[i] ^ flip
        bv = rb[i] ^ flip
        r = ((av < bv) & want_lt) | ((av == bv) & want_eq) | ((av > bv) & want_gt)
        cv = pc[i] ^ neg_c
        x = (r & cv & is_and) | ((r | cv) & is_or) | ((r ^ cv) & is_xor)
        v[i] = x
        cv = (x & reread) | (cv & (not reread))
        nr = not r
        w[i] = (nr & cv & is_and) | ((nr | cv) & is_or) | ((nr ^ cv) & is_xor)


@njit(cache=True)
def _put_pred(pd, vals, mask, masked, n):
    if masked:
        for i in range(n):
            if mask[i]:
                pd[i] = vals[i]
    else:
        for i in range(n):
            pd[i] = vals[i]


@njit(cache=True)
def _add_cc(ra, rb, rd, cc, shift, cin, take_x, set_cc, n):
    """ADD with a carry in from the condition code (``take_x``) or out into it (``set_cc``), as
    :func:`maxsim.functional.intpass.add`, on n lanes (every lane: the caller merges a mask), the
    sum's low word into ``rd``. In 32-bit words, without branches: the carry out is that of each of
    the two adds (a << shift) + b, then + the carry in (0, 1 or 2), so 0, 1 or 2 as the 64-bit sum's
    (~30% faster than in 64-bit words, which take twice the vector lanes)."""
    sh = np.uint32(shift)
    one = np.uint32(1)
    tx = np.uint32(1 if take_x else 0)
    ci = np.uint32(0 if take_x else cin)
    zc = np.uint32(0 if take_x else 1)  # (without .X the zero flag is the sum's alone)
    for i in range(n):
        before = cc[i]
        a = np.uint32(ra[i] << sh)
        s1 = np.uint32(a + rb[i])
        c1 = np.uint32(s1 < a)
        s2 = np.uint32(s1 + np.uint32(ci + tx * ((before & one) + ((before >> np.uint32(4)) & one))))
        carry = np.uint32(c1 + np.uint32(s2 < s1))
        if set_cc:
            zero = np.uint32(s2 == 0) & (zc | ((before >> one) & one))
            cc[i] = (carry & one) | ((carry >> one) * np.uint32(_CARRY | _CARRY2)) | (zero << one)
        rd[i] = s2


@njit(cache=True)
def _row(regs, preds, cc, fr, crows, fc, scratch, pscratch, op, d, a, b, c, fl, x1, x2, x3, mask, masked, lo, hi):
    """One row of a table on lanes lo..hi (every array a view of those lanes, indexed from 0)."""
    n = hi - lo
    mv = mask[lo:hi] if masked else mask
    if op <= FADD:
        _float(fr, fc, scratch[3].view(np.float32), op, d, a, b, c, fl, mask, masked, lo, hi)
        return
    if op == ISETP:
        ra = _source(regs, crows, a, fl, 0, scratch, lo, hi)
        rb = _source(regs, crows, b, fl, 1, scratch, lo, hi)
        flip = np.uint32(0x80000000) if fl & SIGNED else np.uint32(0)
        neg_c = (fl & C_NOT) != 0
        # (the results into rows of their own, then into the predicates: a loop whose loads and
        # stores may meet runs several times slower; a plain predicate source that is the first
        # destination reads, for the second, what it just became)
        v, w = pscratch[0], pscratch[1]
        v, w = v[lo:hi], w[lo:hi]
        _isetp(ra, rb, preds[c][lo:hi], v, w, d >= 0 and c == d and not neg_c, flip, x1 == 0 or x1 == 1 or x1 == 5,
               x1 == 1 or x1 == 3 or x1 == 4, x1 == 2 or x1 == 3 or x1 == 5, x2 == 0, x2 == 1, x2 == 2, neg_c, n)
        if d >= 0:
            _put_pred(preds[d][lo:hi], v, mv, masked, n)
        if x3 >= 0:
            _put_pred(preds[x3][lo:hi], w, mv, masked, n)
        return
    ra = _source(regs, crows, a, fl, 0, scratch, lo, hi)
    # (every lane: the result straight into its row, unless the row is a source too: LLVM runs a
    # loop whose loads and stores may meet without its vector instructions, ~6x slower)
    into = not masked and d != a and d != b and d != c
    out = (regs[max(d, 0)] if into else scratch[3])[lo:hi]
    if op == ADD:
        rb = _source(regs, crows, b, fl, 1, scratch, lo, hi)
        if fl & (SET_CC | USE_X):
            ccv = cc[lo:hi]
            set_cc = (fl & SET_CC) != 0
            if masked and set_cc:  # (the condition code of the lanes not masked kept)
                keep = scratch[2][lo:hi]
                for i in range(n):
                    keep[i] = ccv[i]
            into = not masked and d >= 0 and d != a and d != b
            rd = (regs[max(d, 0)] if into else scratch[3])[lo:hi]
            _add_cc(ra, rb, rd, ccv, x1, x2, (fl & USE_X) != 0, set_cc, n)
            if masked and set_cc:
                for i in range(n):
                    if not mv[i]:
                        ccv[i] = keep[i]
            if d >= 0 and not into:
                _put(regs[d][lo:hi], rd, mv, masked, n)
            return
        if d < 0:
            return
        sh = np.uint32(x1)
        cin = np.uint32(x2)
        for i in range(n):
            out[i] = (ra[i] << sh) + rb[i] + cin
    elif d < 0:
        return
    elif op == MOV:
        for i in range(n):
            out[i] = ra[i]
    elif op == XMAD:
        rb = _source(regs, crows, b, fl, 1, scratch, lo, hi)
        rc = _source(regs, crows, c, fl, 2, scratch, lo, hi)
        _xmad(ra, rb, rc, out, fl, x1, n)
    elif op == SHL or op == SHR:
        rb = _source(regs, crows, b, fl, 1, scratch, lo, hi)
        if b < 0:  # (one count for every lane)
            cnt = rb[0]
            if op == SHL:
                cnt = cnt & 31 if fl & WRAP else cnt
                if cnt >= 32:
                    for i in range(n):
                        out[i] = np.uint32(0)
                else:
                    for i in range(n):
                        out[i] = np.uint32(ra[i] << cnt)
            elif fl & SIGNED:
                cnt = min(cnt, np.uint32(31))
                for i in range(n):
                    out[i] = np.uint32(np.int32(ra[i]) >> cnt)
            elif cnt >= 32:
                for i in range(n):
                    out[i] = np.uint32(0)
            else:
                for i in range(n):
                    out[i] = np.uint32(ra[i] >> cnt)
        else:
            for i in range(n):
                cnt = rb[i]
                if op == SHL:
                    if fl & WRAP:
                        out[i] = np.uint32(ra[i] << (cnt & 31))
                    elif cnt >= 32:
                        out[i] = np.uint32(0)
                    else:
                        out[i] = np.uint32(ra[i] << cnt)
                elif fl & SIGNED:
                    out[i] = np.uint32(np.int32(ra[i]) >> min(cnt, np.uint32(31)))
                elif cnt >= 32:
                    out[i] = np.uint32(0)
                else:
                    out[i] = np.uint32(ra[i] >> cnt)
    elif op == ADD3:
        rb = _source(regs, crows, b, fl, 1, scratch, lo, hi)
        rc = _source(regs, crows, c, fl, 2, scratch, lo, hi)
        for i in range(n):
            out[i] = ra[i] + rb[i] + rc[i]
    elif op == LOP:
        rb = _source(regs, crows, b, fl, 1, scratch, lo, hi)
        if x1 == 0:
            for i in range(n):
                out[i] = ra[i] & rb[i]
        elif x1 == 1:
            for i in range(n):
                out[i] = ra[i] | rb[i]
        elif x1 == 2:
            for i in range(n):
                out[i] = ra[i] ^ rb[i]
        else:
            for i in range(n):
                out[i] = rb[i]
    elif op == LOP3:
        rb = _source(regs, crows, b, fl, 1, scratch, lo, hi)
        rc = _source(regs, crows, c, fl, 2, scratch, lo, hi)
        for i in range(n):
            r = np.uint32(0)
            for t in range(8):
                if (x1 >> t) & 1:
                    r |= ((ra[i] if t & 4 else ~ra[i]) & (rb[i] if t & 2 else ~rb[i])
                          & (rc[i] if t & 1 else ~rc[i]))
            out[i] = r
    else:  # SEL
        rb = _source(regs, crows, b, fl, 1, scratch, lo, hi)
        pc = preds[c][lo:hi]
        neg_c = (fl & C_NOT) != 0
        for i in range(n):
            out[i] = ra[i] if pc[i] != neg_c else rb[i]
    if not into:
        _put(regs[d][lo:hi], out, mv, masked, n)


CHUNK = 4096  # lanes a table runs at a time, every row in turn (a simulator setting: their rows then stay in
# the CPU's caches from one row to the next; the values are the same whatever it is)


@njit(cache=True)
def run(regs, fr, preds, cc, table, crows, fc, scratch, pscratch, mask, masked):
    """Execute the rows of ``table`` in order on the registers ``regs`` (rows x lanes, uint32;
    ``fr`` the same seen as float32), predicates ``preds`` and condition code ``cc`` of a group,
    on the lanes where ``mask`` holds (every lane when ``masked`` is false); ``crows`` the table's
    constants each as a row of the lanes (``fc`` the same seen as float32); ``scratch`` four rows
    and ``pscratch`` two predicate rows to work in. The lanes are independent: each chunk of
    :data:`CHUNK` lanes runs every row before the next chunk starts."""
    lanes = regs.shape[1]
    for lo in range(0, lanes, CHUNK):
        hi = min(lanes, lo + CHUNK)
        for k in range(table.shape[0]):
            _row(regs, preds, cc, fr, crows, fc, scratch, pscratch, table[k, 0], table[k, 1], table[k, 2], table[k, 3],
                 table[k, 4], table[k, 5], table[k, 6], table[k, 7], table[k, 8], mask, masked, lo, hi)


_NO_MASK = np.zeros(1, dtype=bool)
KEPT_ROWS = 64  # work rows a launch's tables keep between calls, by group size (a simulator setting: bounds
# their memory: at 65,536 lanes each is about 1 MB; they are let go when the launch ends)


class Work:
    """The rows the tables of one launch work in, kept between calls by group size: four scratch
    rows and two predicate rows shared by the tables (a launch runs one table at a time), and each
    table's constants as rows of the lanes. :meth:`clear` lets them go."""

    def __init__(self):
        self.rows = {}

    def get(self, key, make):
        v = self.rows.get(key)
        if v is None:
            if len(self.rows) >= KEPT_ROWS:
                self.rows.clear()
            v = self.rows[key] = make()
        return v

    def clear(self):
        self.rows.clear()


def runner(table, words, work=None):
    """``fn(g, m)`` running a table on group g for lanes m (None: all), working in rows of ``work``
    (a :class:`Work`; None: rows of its own)."""
    kernel = run
    work = work if work is not None else Work()
    tag = object()  # (this table's constants in work)

    rows = work.rows

    def go(g, m):
        lanes = g.cc.shape[0]
        mine = rows.get((tag, lanes))
        shared = rows.get(lanes)
        if mine is None or shared is None:
            shared = work.get(lanes, lambda: (np.empty((4, lanes), dtype=np.uint32),
                                              np.empty((2, lanes), dtype=np.bool_)))
            crows = np.repeat(words[:, None], lanes, axis=1)
            mine = work.get((tag, lanes), lambda: (crows, crows.view(np.float32)))
        kernel(g.regs, g.fregs, g.preds, g.cc, table, mine[0], mine[1], shared[0], shared[1],
               _NO_MASK if m is None else m, m is not None)
    return go


__all__ = ["row", "table", "run", "runner", "Work", "ConstantFault"]
