"""fp32 arithmetic with the directed rounding modes, and the range check of fp32 division.

What ptxas emits for an IEEE division or square root (``a / b``, ``sqrtf`` with NVRTC's default
``-prec-div=true -prec-sqrt=true``) computes a quotient with MUFU.RCP and FFMA refinement on a
fast path; a slow path handles the operands the fast path cannot (subnormals, zeros, infinities,
NaN, quotients near the ends of the exponent range) and rounds by comparing FFMA.RM and FFMA.RP
results. This module gives the values those instructions compute: FFMA / FMUL / FADD with .RZ,
.RM, .RP (IEEE 754 roundTowardZero, roundTowardNegative, roundTowardPositive), and FCHK.DIVIDE's
predicate.

Directed rounding: the exact result is ``s + e`` with ``s`` its fp64 rounding and ``e`` the exact
error (the product of two fp32 numbers is exact in fp64; TwoSum gives the error of the sum, Knuth,
TAOCP vol. 2, 4.2.2). ``r`` = ``s`` rounded to nearest fp32 is one of the two fp32 neighbours of
the exact value (rounding is monotone and fp32 numbers are fp64 numbers), so the sign of
``(s - r) + e`` says whether the exact value lies above or below ``r``, and the directed result is
``r`` or its neighbour in that direction. Overflow gives the largest finite number toward zero.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32
F64 = np.float64
_MAX = F32(np.finfo(np.float32).max)


def _two_sum(p, c):
    """fp64 ``s = p + c`` and its exact error ``e`` (p + c == s + e exactly, when finite)."""
    s = p + c
    bb = s - p
    e = (p - (s - bb)) + (c - bb)
    return s, np.where(np.isfinite(s), e, 0.0)


def round_directed(s, e, mode):
    """The fp32 rounding, toward zero (RZ), -inf (RM) or +inf (RP), of the exact value s + e."""
    s = np.asarray(s, dtype=F64)
    with np.errstate(all="ignore"):
        r = s.astype(F32)
        d = (s - r.astype(F64)) + e  # > 0: the exact value lies above r
        d = np.where(np.isinf(r) & np.isfinite(s), np.where(r > 0, -1.0, 1.0), d)  # r overflowed
    up = np.nextafter(r, F32(np.inf))
    down = np.nextafter(r, F32(-np.inf))
    if mode == "RP":
        out = np.where(d > 0, up, r)
    elif mode == "RM":
        out = np.where(d < 0, down, r)
    else:  # RZ: toward zero
        out = np.where((d > 0) & (r < 0), up, np.where((d < 0) & (r > 0), down, r))
    # overflow: +inf only for RP (positive) and RM (negative); the others stop at the largest finite
    out = np.where(np.isinf(r) & np.isfinite(s) & np.isfinite(out) & (np.abs(out) > _MAX), np.sign(out) * _MAX, out)
    # a zero result keeps the sign the exact operation gives it (x - x is -0 only under RM)
    return np.asarray(out, dtype=F32)


def ffma_r(a, b, c, mode):
    """fp32 ``a * b + c`` with one rounding by ``mode`` (RN, RZ, RM, RP)."""
    a, b, c = (np.asarray(x, dtype=F32) for x in (a, b, c))
    c64 = c.astype(F64)
    with np.errstate(all="ignore"):
        p = np.multiply(a, b, dtype=F64)
        if mode == "RN":
            from .alu import fma32
            return fma32(a, b, c)
        s, e = _two_sum(p, c64)
        out = round_directed(s, e, mode)
        if mode == "RM":
            # an exact zero sum is +0 in every mode but RM, where it is -0 unless both addends
            # are +0 (IEEE 754 6.3); the fp64 sum already has the other modes' sign
            zero = (s == 0) & (e == 0)
            plus = (p == 0) & (c64 == 0) & ~np.signbit(p) & ~np.signbit(c64)
            out = np.where(zero, np.where(plus, F32(0.0), F32(-0.0)), out)
        nan = np.isnan(s)
        if np.any(nan):
            out = np.where(nan, F32(np.nan), out)
    return np.asarray(out, dtype=F32)


def fmul_r(a, b, mode):
    """fp32 ``a * b`` rounded by ``mode``: exact in fp64, so one directed rounding."""
    a, b = np.asarray(a, dtype=F32), np.asarray(b, dtype=F32)
    with np.errstate(all="ignore"):
        p = np.multiply(a, b, dtype=F64)
        if mode == "RN":
            return p.astype(F32)
        return round_directed(p, np.zeros_like(p), mode)


def fadd_r(a, b, mode):
    """fp32 ``a + b`` rounded by ``mode``."""
    one = np.ones_like(np.asarray(a, dtype=F32))
    return ffma_r(a, one, b, mode)


_EXP = np.uint32(0xFF)


def _exponent(x):
    """Unbiased exponent of fp32 x (-127 for zeros and subnormals, 128 for Inf and NaN)."""
    bits = np.asarray(x, dtype=F32).view(np.uint32)
    return ((bits >> np.uint32(23)) & _EXP).astype(np.int32) - 127


def fchk_divide(a, b):
    """FCHK.DIVIDE's predicate: true where the fast path of ptxas's IEEE division (MUFU.RCP of b,
    two FFMA refinements of the reciprocal, the quotient and one FFMA correction) may not give the
    correctly rounded a / b, so the slow path must.

    NVIDIA does not document the exact test. The model's test is sufficient for the fast path's
    correctness: it sends to the slow path every operand pair with a zero, subnormal, infinite or
    NaN operand, a divisor whose reciprocal leaves the normal range (|exponent| > 125), a dividend
    whose FFMA remainder a - b*q may underflow (exponent < -102: the remainder is about 2^-24 of
    a), or a quotient whose exponent is outside [-125, 125] (near underflow or overflow). Every
    other pair takes the fast path, whose result tests/test_cuda_ieee.py holds to numpy's
    correctly rounded division bit for bit. Where the hardware's test is narrower, a kernel in the
    model takes the slow path more often than on the GPU: its value is the same (the slow path is
    exact for every input), its time longer."""
    ea, eb = _exponent(a), _exponent(b)
    ok = (ea >= -102) & (ea <= 127) & (eb >= -125) & (eb <= 125)
    q = ea - eb
    ok &= (q >= -125) & (q <= 125)
    return ~ok
