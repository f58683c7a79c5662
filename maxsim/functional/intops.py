"""Integer, predicate and warp-wide opcodes beyond the SGEMM set: IMNMX, POPC, FLO, BFI, LEA,
PSETP, P2R/R2P, VOTE, SHFL, VMAD, PRMT and I2I.

Each ``_name(ctx, instr, ops, mods, zrow)`` compiles one instruction into ``fn(g, m)`` like the
ALU compilers of :mod:`maxsim.functional.executor`. Semantics: the PTX ISA's descriptions of the
instructions these opcodes implement (min/max, popc, bfind, bfi, shfl, vote) [ptx-isa], with
the SASS operand order of nvdisasm / maxas.
"""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import SimulationError
from ..isa import instruction as ins
from .opcode_table import compiles
from .operands import CC_SIGN, CC_ZERO, U32, carry_in, pred_reader, reader_u32, set_carry_zero, write_pred, writer


@compiles("IMNMX")
def _imnmx(ctx, instr, ops, mods, zrow):
    """IMNMX d, a, b, p: min(a, b) when p holds, else max (signed unless .U32).

    A 64-bit min / max is two of them, high words first [ptxas's long long min / max; the pair as
    Mesa's nouveau lowers one: the high part with the HIGH sub-op sets the flags, the low part with
    the LOW sub-op reads them]: ``IMNMX.XHI d_hi.CC, a_hi, b_hi, p`` is the plain min / max of the
    high words and, with .CC, leaves the flags of comparing them (zero: equal, sign: a_hi below
    b_hi); ``IMNMX.U32.XLO d_lo, a_lo, b_lo, p`` then takes the low word of the source whose high
    word won, and min / max of the low words where the high words are equal. Which condition-code
    bits the hardware uses is not published: these are a documented choice, and BRA CC tests on
    them are refused (the 'flags set' bit stays clear)."""
    a, b = (reader_u32(ctx, instr, o, zrow) for o in ops[1:3])
    p = pred_reader(ops[3])
    write = writer(ops[0].reg, zrow)
    view = np.uint32 if "U32" in mods else np.int32
    set_cc, low = "CC" in mods, "XLO" in mods

    def run(g, m):
        x = np.broadcast_to(np.asarray(a(g), dtype=np.uint32).view(view), g.cc.shape)
        y = np.broadcast_to(np.asarray(b(g), dtype=np.uint32).view(view), g.cc.shape)
        pick_min = np.broadcast_to(p(g), g.cc.shape)
        r = np.where(pick_min, np.minimum(x, y), np.maximum(x, y))
        if low:  # the high words decided where they differ
            equal = (g.cc & U32(CC_ZERO)) != 0
            a_below = (g.cc & U32(CC_SIGN)) != 0
            r = np.where(equal, r, np.where(pick_min == a_below, x, y))
        if set_cc:
            cc = np.where(x == y, U32(CC_ZERO), U32(0)) | np.where(x < y, U32(CC_SIGN), U32(0))
            np.copyto(g.cc, cc, where=True if m is None else m)
        write(g, np.asarray(r).astype(view).view(np.uint32), m)
    return run


_POPC8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint32)


def popcount(x):
    x = np.asarray(x, dtype=np.uint32)
    return sum(_POPC8[(x >> U32(8 * k)) & U32(0xFF)] for k in range(4)).astype(np.uint32)


@compiles("POPC")
def _popc(ctx, instr, ops, mods, zrow):
    a = reader_u32(ctx, instr, ops[1], zrow)
    write = writer(ops[0].reg, zrow)
    return lambda g, m: write(g, np.broadcast_to(popcount(a(g)), g.tid.shape).copy(), m)


def find_leading_one(x, signed, shift):
    """PTX bfind: bit position of the most significant 1 (signed: of the most significant bit
    that differs from the sign), 0xFFFFFFFF when there is none; ``shift`` (.SH) gives 31 minus
    the position instead (a left shift amount), still 0xFFFFFFFF when there is none."""
    x = np.asarray(x, dtype=np.uint32)
    if signed:
        x = np.where(x >> U32(31), ~x, x).astype(np.uint32)
    nz = x != 0
    pos = np.full(x.shape, -1, dtype=np.int64)
    for k in range(32):
        pos = np.where((x >> U32(k)) & U32(1), k, pos)
    if shift:
        pos = np.where(nz, 31 - pos, -1)
    return (pos & 0xFFFFFFFF).astype(np.uint32)


@compiles("FLO")
def _flo(ctx, instr, ops, mods, zrow):
    a = reader_u32(ctx, instr, ops[1], zrow)
    write = writer(ops[0].reg, zrow)
    signed, shift = "S32" in mods, "SH" in mods
    return lambda g, m: write(g, np.broadcast_to(find_leading_one(a(g), signed, shift), g.tid.shape).copy(), m)


def bit_insert(a, ctl, c):
    """PTX bfi: c with its bits [pos, pos + len) replaced by the low bits of a; ctl = len << 8 | pos
    (position and length are 8-bit fields; a field past bit 31 is cut there)."""
    ctl = np.asarray(ctl, dtype=np.uint32)
    pos = (ctl & U32(0xFF)).astype(np.int64)
    length = ((ctl >> U32(8)) & U32(0xFF)).astype(np.int64)
    width = np.clip(np.minimum(pos + length, 32) - pos, 0, 32)
    mask = (((np.int64(1) << width) - 1) << np.minimum(pos, 32)) & 0xFFFFFFFF
    a64 = np.asarray(a, dtype=np.uint32).astype(np.int64)
    c64 = np.asarray(c, dtype=np.uint32).astype(np.int64)
    r = (c64 & ~mask) | ((a64 << np.minimum(pos, 32)) & mask)
    return (r & 0xFFFFFFFF).astype(np.uint32)


@compiles("BFI")
def _bfi(ctx, instr, ops, mods, zrow):
    a, b, c = (reader_u32(ctx, instr, o, zrow) for o in ops[1:4])
    write = writer(ops[0].reg, zrow)
    return lambda g, m: write(g, np.broadcast_to(bit_insert(a(g), b(g), c(g)), g.tid.shape).copy(), m)


@compiles("LEA")
def _lea(ctx, instr, ops, mods, zrow):
    """LEA d, a, b, s: d = (a << s) + b. LEA.HI d, a, b, c, s: d = b + the high word of the 64-bit
    value {c:a} << s (the high half of a scaled 64-bit index); .CC sets the carry, .X adds it."""
    hi = "HI" in mods
    if len(ops) != (5 if hi else 4) or ops[-1].kind != ins.IMM:
        raise SimulationError(f"{instr.where}: LEA takes d, a, b, shift; LEA.HI takes d, a, b, c, shift")
    s = ops[-1].value
    if not 0 <= s < 32:
        raise SimulationError(f"{instr.where}: LEA shift {s} is out of range 0..31")
    a, b = (reader_u32(ctx, instr, o, zrow) for o in ops[1:3])
    c = reader_u32(ctx, instr, ops[3], zrow) if hi else None
    write = writer(ops[0].reg, zrow)
    use_x, set_cc = "X" in mods, "CC" in mods

    def run(g, m):
        av = np.asarray(a(g), dtype=np.uint64)
        if hi:
            wide = (np.asarray(c(g), dtype=np.uint64) << np.uint64(32)) | av
            part = (wide << np.uint64(s)) >> np.uint64(32) & np.uint64(0xFFFFFFFF)
        else:
            part = (av << np.uint64(s)) & np.uint64(0xFFFFFFFF)
        x = part + np.asarray(b(g), dtype=np.uint64)
        if use_x:
            x = x + carry_in(g)  # the carry of the condition code
        x = np.broadcast_to(x, g.tid.shape)
        if set_cc:
            set_carry_zero(g, x, m, chain_zero=use_x)
        write(g, (x & np.uint64(0xFFFFFFFF)).astype(np.uint32), m)
    return run


_BOOL = {"AND": np.logical_and, "OR": np.logical_or, "XOR": np.logical_xor}


@compiles("PSETP")
def _psetp(ctx, instr, ops, mods, zrow):
    """PSETP.op1.op2 Pd, Pq, Pa, Pb, Pc: Pd = (Pa op1 Pb) op2 Pc, Pq = !(Pa op1 Pb) op2 Pc."""
    names = [x for x in mods if x in _BOOL] + ["AND", "AND"]
    op1, op2 = _BOOL[names[0]], _BOOL[names[1]]
    pa, pb, pc = (pred_reader(o) for o in ops[2:5])
    pd, pq = ops[0].reg, ops[1].reg

    def run(g, m):
        r = op1(pa(g), pb(g))
        c = pc(g)
        vd, vq = op2(r, c), op2(~r, c)
        write_pred(g, pd, vd, m)
        write_pred(g, pq, vq, m)
    return run


@compiles("P2R")
def _p2r(ctx, instr, ops, mods, zrow):
    """P2R d, PR, a, mask: bit n of d is predicate Pn (n = 0..6) where the mask has bit n; the
    other bits come from a (choice: merge, so that P2R can pack into a live register)."""
    a = reader_u32(ctx, instr, ops[2], zrow)
    mask = U32(ops[3].value & 0x7F)
    write = writer(ops[0].reg, zrow)
    weights = (U32(1) << np.arange(7, dtype=np.uint32))[:, None]

    def run(g, m):
        packed = (g.preds[:7].astype(np.uint32) * weights).sum(axis=0).astype(np.uint32)
        write(g, (np.asarray(a(g), dtype=np.uint32) & ~mask) | (packed & mask), m)
    return run


@compiles("R2P")
def _r2p(ctx, instr, ops, mods, zrow):
    """R2P PR, a, mask: predicate Pn := bit n of a, for the bits n (0..6) set in the mask."""
    a = reader_u32(ctx, instr, ops[1], zrow)
    mask = ops[2].value & 0x7F

    def run(g, m):
        v = np.broadcast_to(np.asarray(a(g), dtype=np.uint32), g.tid.shape)
        for n in range(7):
            if mask >> n & 1:
                write_pred(g, n, (v >> U32(n) & U32(1)).astype(bool), m)
    return run


def _active(g, m):
    return (g.active if m is None else m).reshape(-1, 32)


@compiles("VOTE")
def _vote(ctx, instr, ops, mods, zrow):
    """VOTE.ALL/ANY/EQ d, Pd, Pa over the lanes that execute it: d = the ballot (bit n: lane n
    executes and Pa holds), Pd = all / any / all-equal of Pa over those lanes."""
    kind = next(x for x in mods if x in ("ALL", "ANY", "EQ"))
    pa = pred_reader(ops[2])
    write = writer(ops[0].reg, zrow)
    pd = ops[1].reg
    weights = (np.uint64(1) << np.arange(32, dtype=np.uint64))

    def run(g, m):
        act = _active(g, m)
        p = np.broadcast_to(pa(g), g.tid.shape).reshape(-1, 32) & act
        ballot = (p.astype(np.uint64) * weights).sum(axis=1).astype(np.uint32)
        write(g, np.repeat(ballot, 32), m)
        if kind == "ALL":
            r = (p | ~act).all(axis=1)
        elif kind == "ANY":
            r = p.any(axis=1)
        else:
            r = (p | ~act).all(axis=1) | ~p.any(axis=1)
        write_pred(g, pd, np.repeat(r, 32), m)
    return run


@compiles("SHFL", values=True)
def shfl(ctx, instr, ops, mods, zrow, values=True):
    """SHFL.mode Pd, d, a, b, c: lane j's a, as PTX shfl defines j and the predicate (c holds the
    clamp in bits 4:0 and the segment mask in bits 12:8). A lane whose source lane is out of its
    segment keeps its own value and gets Pd false. Reading an inactive source lane gives that
    lane's register (PTX: undefined). SHFL runs on the shared-memory unit [maxas-grammar]: the
    trace records it as one conflict-free shared-memory request per warp (kind "shfl");
    ``values=False`` records it without moving data."""
    mode = next(x for x in mods if x in ("IDX", "UP", "DOWN", "BFLY"))
    a = ops[2].reg if ops[2].reg != ins.RZ else zrow
    bv = reader_u32(ctx, instr, ops[3], zrow)
    cv = reader_u32(ctx, instr, ops[4], zrow)
    write = writer(ops[1].reg, zrow)
    pd = ops[0].reg

    def record(g, m):
        if ctx.recorder is not None:
            sel = m if m is not None else (None if g.full else g.active)
            ctx.recorder.memory("shfl", g, (g.laneid * U32(4)).astype(np.uint32), sel, 4)

    if not values:
        return record

    def run(g, m):
        record(g, m)
        n = g.tid.size
        lane = np.arange(n, dtype=np.int64) % 32
        b = np.broadcast_to(np.asarray(bv(g), dtype=np.uint32), (n,)).astype(np.int64) & 31
        c = np.broadcast_to(np.asarray(cv(g), dtype=np.uint32), (n,)).astype(np.int64)
        clamp, seg = c & 31, (c >> 8) & 31
        max_lane = (lane & seg) | (clamp & ~seg)
        min_lane = lane & seg
        if mode == "UP":
            j = lane - b
            ok = j >= max_lane
        elif mode == "DOWN":
            j = lane + b
            ok = j <= max_lane
        elif mode == "BFLY":
            j = lane ^ b
            ok = j <= max_lane
        else:
            j = min_lane | (b & ~seg)
            ok = j <= max_lane
        j = np.where(ok, j, lane)
        src = np.arange(n, dtype=np.int64) - lane + j
        write(g, g.regs[a][src], m)
        write_pred(g, pd, ok, m)
    return run


def vmad(a, b, c, a_type, b_type, a_h1=False, b_h1=False, neg_product=False, neg_c=False, shift=0, sat=False):
    """PTX vmad on 32-bit words: the selected 16-bit halves (``*_h1``: the high one) or low bytes
    of a and b, sign- or zero-extended by their types, multiplied; the product (or c) negated;
    c added as a signed word when the result is signed (a signed type or a negation), else as an
    unsigned one; shifted right by ``shift`` (SHR_7, SHR_15); clamped to the 32-bit range of the
    result's sign with ``sat``, else its low 32 bits."""
    def part(x, t, h1):
        bits = int(t[1:])
        v = (np.asarray(x, dtype=np.uint32).astype(np.int64) >> (16 if h1 else 0)) & ((1 << bits) - 1)
        return np.where(v >> (bits - 1), v - (1 << bits), v) if t[0] == "S" else v
    signed = a_type[0] == "S" or b_type[0] == "S" or neg_product or neg_c
    prod = part(a, a_type, a_h1) * part(b, b_type, b_h1)
    cv = np.asarray(c, dtype=np.uint32)
    cv = cv.view(np.int32).astype(np.int64) if signed else cv.astype(np.int64)
    if neg_product:
        prod = -prod
    elif neg_c:
        cv = -cv
    r = (prod + cv) >> shift
    if sat:
        r = np.clip(r, -(1 << 31), (1 << 31) - 1) if signed else np.clip(r, 0, (1 << 32) - 1)
    return (r & 0xFFFFFFFF).astype(np.uint32)


@compiles("VMAD")
def _vmad(ctx, instr, ops, mods, zrow):
    """VMAD.<a type>.<b type>[.SHR_7|.SHR_15][.SAT] d, [-]a[.H1], b[.H1], [-]c (see :func:`vmad`)."""
    from ..isa.opcodes import vmad_types
    a_type, b_type = vmad_types(mods)
    plain = [attrs.evolve(o, neg=False, h1=False) if o.kind == ins.REG else o for o in ops]
    a, b, c = (reader_u32(ctx, instr, o, zrow) for o in plain[1:4])
    shift = 7 if "SHR_7" in mods else 15 if "SHR_15" in mods else 0
    kw = dict(a_h1=ops[1].h1, b_h1=ops[2].h1, neg_product=ops[1].neg, neg_c=ops[3].neg, shift=shift,
              sat="SAT" in mods)
    write = writer(ops[0].reg, zrow)
    return lambda g, m: write(g, np.broadcast_to(vmad(a(g), b(g), c(g), a_type, b_type, **kw), g.tid.shape).copy(), m)


def byte_permute(a, b, sel, mode=None):
    """PTX ``prmt.b32`` of {b, a} (a: bytes 0-3, b: bytes 4-7) by selector ``sel`` [ptx-isa]:
    by default each nibble n of sel picks result byte n (bits 0-2) and bit 3 replicates that byte's
    sign; the modes take sel's low bits n: F4E byte i = (n + i) mod 8, B4E (n - i) mod 8, RC8 all
    n (of a), ECL max(i, n), ECR min(i, n), RC16 2 (n & 1) + (i & 1)."""
    a, b, sel = (np.asarray(x, dtype=np.uint64) for x in (a, b, sel))
    src = a | (b << np.uint64(32))
    out = np.zeros(np.broadcast(a, b, sel).shape, dtype=np.uint64)
    n = (sel & np.uint64(7)).astype(np.int64)
    for i in range(4):
        if mode is None:
            nib = (sel >> np.uint64(4 * i)) & np.uint64(0xF)
            byte = (src >> ((nib & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
            byte = np.where(nib & np.uint64(8), np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0)), byte)
        else:
            k = {"F4E": (n + i) & 7, "B4E": (n - i) & 7, "RC8": n & 3, "ECL": np.maximum(i, n & 3),
                 "ECR": np.minimum(i, n & 3), "RC16": 2 * (n & 1) + (i & 1)}[mode]
            byte = (src >> (np.asarray(k, dtype=np.uint64) * np.uint64(8))) & np.uint64(0xFF)
        out |= byte << np.uint64(8 * i)
    return out.astype(np.uint32)


@compiles("PRMT")
def _prmt(ctx, instr, ops, mods, zrow):
    a, sel, b = (reader_u32(ctx, instr, o, zrow) for o in ops[1:4])
    mode = next((x for x in mods if x in ("F4E", "B4E", "RC8", "ECL", "ECR", "RC16")), None)
    write = writer(ops[0].reg, zrow)
    return lambda g, m: write(g, np.broadcast_to(byte_permute(a(g), b(g), sel(g), mode), g.tid.shape).copy(), m)


_INT_RANGE = {"S32": (32, True), "U32": (32, False), "S16": (16, True), "U16": (16, False), "S8": (8, True),
              "U8": (8, False)}


def int_convert(x, dst, src, sat, neg=False, absval=False):
    """I2I: the source type's value of the low bits of x (sign- or zero-extended), |.| and - applied,
    then the destination type's: clamped to its range with .SAT, else its low bits; the result is
    extended to 32 bits by the destination's sign (PTX cvt with .sat [ptx-isa]; choice: the
    extension of a narrow result, which PTX leaves to the register's type)."""
    bits, signed = _INT_RANGE[src]
    v = np.asarray(x, dtype=np.uint32).astype(np.int64) & ((1 << bits) - 1)
    if signed:
        v = np.where(v >= 1 << (bits - 1), v - (1 << bits), v)
    if absval:
        v = np.abs(v)
    if neg:
        v = -v
    dbits, dsigned = _INT_RANGE[dst]
    lo, hi = (-(1 << (dbits - 1)), (1 << (dbits - 1)) - 1) if dsigned else (0, (1 << dbits) - 1)
    if sat:
        v = np.clip(v, lo, hi)
    v = v & ((1 << dbits) - 1)
    if dsigned:
        v = np.where(v >= 1 << (dbits - 1), v - (1 << dbits), v)
    return (v & 0xFFFFFFFF).astype(np.uint32)


@compiles("I2I")
def _i2i(ctx, instr, ops, mods, zrow):
    types = [x for x in mods if x in _INT_RANGE] + ["S32", "S32"]
    dst, src = types[0], types[1]
    src_op = ops[1]
    a = reader_u32(ctx, instr, attrs.evolve(src_op, neg=False, abs=False), zrow)
    write = writer(ops[0].reg, zrow)
    sat = "SAT" in mods
    return lambda g, m: write(g, np.broadcast_to(int_convert(a(g), dst, src, sat, src_op.neg, src_op.abs),
                                                 g.tid.shape).copy(), m)


@compiles("B2R")
def _b2r(ctx, instr, ops, mods, zrow):
    """B2R.RESULT d[, q]: the result of the CTA's last BAR.RED: d the number of threads whose
    predicate held (choice for .AND / .OR: 1 or 0, the value __syncthreads_and / _or return), q
    whether the reduction holds (.POPC: the count is not 0). ptxas reads d after BAR.RED.POPC and q
    after .AND / .OR [cuobjdump of NVRTC 12.9's __syncthreads_count / _and / _or]."""
    write = writer(ops[0].reg, zrow)
    q = ops[1].reg if len(ops) > 1 else ins.PT

    def run(g, m):
        results = ctx.bar_result
        count = np.zeros(g.tid.shape, dtype=np.uint32)
        holds = np.zeros(g.tid.shape, dtype=bool)
        for c in np.unique(g.cta):
            if int(c) not in results:
                raise SimulationError(ctx.where(instr, g, int(np.flatnonzero(g.cta == c)[0])).format(
                    "B2R.RESULT before any BAR.RED of this CTA"))
            n, al, an, mode = results[int(c)]
            sel = g.cta == c
            count[sel] = n if mode == "POPC" else int(al if mode == "AND" else an)
            holds[sel] = n != 0 if mode == "POPC" else (al if mode == "AND" else an)
        write(g, count, m)
        write_pred(g, q, holds, m)
    return run


def video_min_max(a, b, c, a_signed, b_signed, d_signed, maximum, second, sat):
    """PTX vmin / vmax on 32-bit operands: min (max) of a and b, each extended by its own type,
    then ``second`` with c ("ACC": added, "MIN", "MAX", None: none), c read as the result's type;
    .SAT clamps to the result's type, else the low 32 bits are kept."""
    def ext(x, signed):
        x = np.asarray(x, dtype=np.uint32)
        return x.view(np.int32).astype(np.int64) if signed else x.astype(np.int64)
    x, y = ext(a, a_signed), ext(b, b_signed)
    t = np.maximum(x, y) if maximum else np.minimum(x, y)
    z = ext(c, d_signed)
    if second == "ACC":
        t = t + z
    elif second == "MIN":
        t = np.minimum(t, z)
    elif second == "MAX":
        t = np.maximum(t, z)
    if sat:
        lo, hi = (-(1 << 31), (1 << 31) - 1) if d_signed else (0, (1 << 32) - 1)
        t = np.clip(t, lo, hi)
    return (t & 0xFFFFFFFF).astype(np.uint32)


@compiles("VMNMX")
def _vmnmx(ctx, instr, ops, mods, zrow):
    types = [m for m in mods if m in ("U32", "S32")] + ["S32", "S32"]
    a_signed, b_signed = types[0] == "S32", types[1] == "S32"
    d_signed = "UD" not in mods
    second = next((m for m in mods if m in ("ACC", "MIN", "MAX")), None)
    maximum, sat = "MX" in mods, "SAT" in mods
    a, b, c = (reader_u32(ctx, instr, o, zrow) for o in ops[1:4])
    write = writer(ops[0].reg, zrow)
    return lambda g, m: write(g, np.broadcast_to(video_min_max(a(g), b(g), c(g), a_signed, b_signed, d_signed, maximum,
                                                               second, sat), g.tid.shape).copy(), m)
