"""The bounds check of a memory instruction's lanes, compiled (the functional model's hot path)."""

from __future__ import annotations

import numpy as np

from ..jit import njit


@njit(cache=True)
def lanes_out_of_range(addr, lo, last, align, sel, masked):
    """Whether any lane (of ``sel`` when ``masked``) has a byte address (uint32) below ``lo``,
    above ``last`` or with a bit of ``align`` set: the bounds check of a memory instruction in
    one pass (the caller then finds which lane, and why, for the message). The pass takes the
    lowest and highest address and the OR of all (its low bits: any misaligned), in loops
    that LLVM vectorises."""
    least = np.uint32(0xFFFFFFFF)
    most = np.uint32(0)
    bits = np.uint32(0)
    if masked:
        for i in range(addr.shape[0]):
            if sel[i]:
                a = addr[i]
                least = min(least, a)
                most = max(most, a)
                bits |= a
    else:
        for i in range(addr.shape[0]):
            a = addr[i]
            least = min(least, a)
            most = max(most, a)
            bits |= a
    if most < least:  # (no lane)
        return False
    return np.int64(least) < lo or np.int64(most) > last or (np.int64(bits) & align) != 0


@njit(cache=True)
def lanes_outside_allocations(addr, bases, ends, nbytes, sel, masked):
    """Whether any lane (of ``sel`` when ``masked``) has an access of ``nbytes`` at its byte address
    (uint32) that is misaligned or does not lie inside one allocation (``bases``: sorted starts,
    ``ends``: their ends): the check of a memory with unmapped gaps, in one pass."""
    k = 0  # the allocation of the lane before (neighbouring lanes mostly share one)
    n = bases.shape[0]
    for i in range(addr.shape[0]):
        if masked and not sel[i]:
            continue
        a = np.int64(addr[i])
        if a & (nbytes - 1):
            return True
        if not (bases[k] <= a and a + nbytes <= ends[k]):
            # the last allocation starting at or below a
            lo, hi = 0, n
            while lo < hi:
                mid = (lo + hi) // 2
                if bases[mid] <= a:
                    lo = mid + 1
                else:
                    hi = mid
            if lo == 0 or a + nbytes > ends[lo - 1]:
                return True
            k = lo - 1
    return False


@njit(cache=True)
def lanes_high_word_set(low, base_lo, base_hi, carry, borrow, sel, masked):
    """Whether any lane (of ``sel`` when ``masked``) of a .E (64-bit) address has a nonzero high
    word: ``base_hi`` plus the carry of the low word's add (``low`` below ``base_lo``, when
    ``carry``) plus ``borrow`` (0, or 0xffffffff for a negative offset), modulo 2^32 (the model's
    global memory is 32-bit); the check of :func:`maxsim.functional.operands.high_word` in one pass."""
    for i in range(low.shape[0]):
        if masked and not sel[i]:
            continue
        h = np.int64(base_hi[i]) + borrow
        if carry and low[i] < base_lo[i]:
            h += 1
        if h & 0xFFFFFFFF:
            return True
    return False
