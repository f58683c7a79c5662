"""What the integer and fp32 opcodes compute, on numpy arrays of 32 lanes (or more).

Pure value semantics; no knowledge of registers, predicates or timing. Integers are uint32 and
wrap at 32 bits; floats are IEEE fp32 with round-to-nearest-even.
"""

from __future__ import annotations

import numpy as np

U32 = np.uint32
_INF = np.float64(np.inf)


def fma32(a, b, c):
    """fp32 fused multiply-add ``a*b + c`` with a single rounding, as FFMA does.

    The product of two fp32 numbers is exact in fp64. The fp64 sum is made round-to-odd with an
    error-free transformation (TwoSum); rounding a round-to-odd value with p >= 24 + 2 bits to fp32
    then gives the correctly rounded result (Boldo & Melquiond, "Emulation of FMA and correctly
    rounded sums: proved algorithms using rounding to odd", IEEE TC 2008).
    """
    p = np.multiply(a, b, dtype=np.float64)
    c64 = np.asarray(c, dtype=np.float64)
    s = p + c64
    bb = s - p
    e = (p - (s - bb)) + (c64 - bb)
    fix = (e != 0) & ((s.view(np.int64) & 1) == 0) & np.isfinite(s)
    if np.any(fix):
        s = np.where(fix, np.nextafter(s, np.where(e > 0, _INF, -_INF)), s)
    return np.asarray(s, dtype=np.float32)


def ftz(x):
    """Flush fp32 subnormals to signed zero."""
    x = np.asarray(x, dtype=np.float32)
    tiny = np.abs(x) < np.float32(1.1754944e-38)
    if np.any(tiny):
        x = np.where(tiny, np.copysign(np.float32(0), x), x)
    return x


def saturate(x):
    """Clamp to [0, 1]; NaN becomes 0 (the .SAT rule)."""
    x = np.asarray(x, dtype=np.float32)
    return np.where(np.isnan(x), np.float32(0), np.clip(x, np.float32(0), np.float32(1))).astype(np.float32)


def xmad(a, b, c, b_reg, a_h1, b_h1, mods, a_signed=False, b_signed=False):
    """16x16-bit multiply-add and its modes (see the maxas format notes).

    ``a`` and ``b`` are the full 32-bit source values; ``a_h1``/``b_h1`` select their high halves;
    ``b_reg`` is the unselected second source register (used by .MRG and .CBCC). ``a_signed`` /
    ``b_signed`` (XMAD.S16...): the selected half is sign-extended; the product wraps at 32 bits.
    """
    # as arrays: an immediate b with a constant c gives numpy scalars, whose wrap-around warns
    a, b, c, b_reg = (np.asarray(x, dtype=np.uint32) for x in (a, b, c, b_reg))
    a16 = (a >> U32(16)) if a_h1 else (a & U32(0xFFFF))
    b16 = (b >> U32(16)) if b_h1 else (b & U32(0xFFFF))
    if a_signed:
        a16 = ((a16 ^ U32(0x8000)) - U32(0x8000)).astype(np.uint32)
    if b_signed:
        b16 = ((b16 ^ U32(0x8000)) - U32(0x8000)).astype(np.uint32)
    prod = np.multiply(a16, b16, dtype=np.uint32)
    if "PSL" in mods:
        prod = prod << U32(16)
    if "CSFU" in mods:
        # c's sign fix-up: minus 2^16 for each negative (sign-extended) half, as Ryujinx's Maxwell
        # shader translator has it (EmitXmad), but only when the other half of the other source is
        # non-zero (the mixed partial product was then negative): a choice, inferred from ptxas's
        # signed multiply-high (int / 7: XMAD.U16.S16, .S16.U16.CHI, .S16.S16.CSFU, IADD3.RS),
        # which gives numpy's results with it for every index of workloads/cuda/index_math.cu,
        # 0 included (the unconditional fix-up is off by 2^16 there)
        a_other = (a & U32(0xFFFF)) if a_h1 else (a >> U32(16))
        b_other = (b & U32(0xFFFF)) if b_h1 else (b >> U32(16))
        fix = ((a16 >> U32(31)) * (b_other != 0) + (b16 >> U32(31)) * (a_other != 0)).astype(np.uint32)
        c = c - (fix << U32(16))
    if "CHI" in mods:
        c = c >> U32(16)
    elif "CLO" in mods:
        c = c & U32(0xFFFF)
    if "CBCC" in mods:
        c = c + (b_reg << U32(16))
    r = prod + c
    if "MRG" in mods:
        r = (r & U32(0xFFFF)) | (b_reg << U32(16))
    return np.asarray(r, dtype=np.uint32)


def shl(a, n, wrap=False):
    if type(n) is U32:  # (one count for every lane, an immediate or a constant: one numpy shift)
        if wrap:
            return a << (n & U32(31))
        return a << n if n < 32 else np.zeros_like(a, dtype=np.uint32)
    n = np.asarray(n, dtype=np.uint32)
    if wrap:
        return np.asarray(a << (n & U32(31)), dtype=np.uint32)
    return np.where(n >= 32, U32(0), a << np.minimum(n, U32(31))).astype(np.uint32)


def shr(a, n, signed):
    if type(n) is U32:  # (one count for every lane, as in shl)
        if signed:
            return (np.asarray(a, dtype=np.uint32).view(np.int32) >> np.int32(min(n, 31))).view(np.uint32)
        return a >> n if n < 32 else np.zeros_like(a, dtype=np.uint32)
    n = np.asarray(n, dtype=np.uint32)
    nn = np.minimum(n, U32(31))
    if signed:
        return (np.asarray(a, dtype=np.uint32).view(np.int32) >> nn.astype(np.int32)).view(np.uint32)
    return np.where(n >= 32, U32(0), a >> nn).astype(np.uint32)


def bfe(a, ctl, signed):
    """Bit-field extract: ctl = (length << 8) | position."""
    ctl = np.asarray(ctl, dtype=np.uint32)
    pos = (ctl & U32(0xFF)).astype(np.int64)
    length = ((ctl >> U32(8)) & U32(0xFF)).astype(np.int64)
    a64 = np.asarray(a, dtype=np.uint32).astype(np.int64)
    if signed:
        a64 = np.asarray(a, dtype=np.uint32).view(np.int32).astype(np.int64)
    pos_c = np.minimum(pos, 63)
    field = a64 >> pos_c
    end = np.minimum(pos + length, 32)
    width = np.maximum(end - pos, 0)
    mask = (np.int64(1) << width) - 1
    r = field & mask
    if signed:
        sign = (width > 0) & ((r >> np.maximum(width - 1, 0)) & 1).astype(bool)
        r = np.where(sign, r - (np.int64(1) << width), r)
        # a field that starts past bit 31 replicates the sign bit
        r = np.where(pos >= 32, a64 >> 63, r)
    r = np.where(length == 0, 0, r)
    return (np.asarray(r, dtype=np.int64) & 0xFFFFFFFF).astype(np.uint32)


_CMP = {
    "LT": np.less, "LE": np.less_equal, "GT": np.greater,
    "GE": np.greater_equal, "EQ": np.equal, "NE": np.not_equal,
}
_BOOLOP = {"AND": np.logical_and, "OR": np.logical_or, "XOR": np.logical_xor}


def isetp(a, b, cmp, signed):
    if signed:
        a = np.asarray(a, dtype=np.uint32).view(np.int32)
        b = np.asarray(b, dtype=np.uint32).view(np.int32)
    return _CMP[cmp](a, b)


def isetp_x(a, b, cmp, signed, carry, zero):
    """The .X form of an integer compare (ISETP.X, ISET.X): the high words a, b of a wide compare
    whose low words were subtracted by the instruction before (ptxas: ``IADD RZ.CC, a_lo, -b_lo``),
    read through the condition code it left: ``carry`` (no borrow: a_lo >= b_lo unsigned) and
    ``zero`` (a_lo == b_lo). The result is the compare of the wide values: the high words decide
    where they differ (signed or unsigned as the modifier says), the low words' flags where they
    are equal. The flags a .X compare reads are the C and Z of the condition code, as the yuzu
    emulator's Maxwell shader recompiler reads them (ExtendedIntegerCompare, common_funcs.cpp);
    its result is taken here as the exact wide compare (a subtraction with borrow of the high
    words), which is what ptxas's 64-bit compares need for every pair of values."""
    lt, eq = isetp(a, b, "LT", signed), np.equal(a, b)
    wide_lt = lt | (eq & ~carry)  # (no carry: the low words borrowed, a_lo < b_lo)
    wide_eq = eq & zero
    return {"LT": wide_lt, "LE": wide_lt | wide_eq, "GT": ~(wide_lt | wide_eq), "GE": ~wide_lt,
            "EQ": wide_eq, "NE": ~wide_eq}[cmp]


def boolop(name):
    return _BOOLOP[name]
