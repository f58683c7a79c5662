"""A 32- to 128-bit load or store of LDS / STS / LDG / STG run in one compiled pass over the lanes:
the bounds check of :mod:`maxsim.functional.bounds` (and of a .E address's high word), then the
data moved between the register rows and the memory's words.

The numpy steps of :mod:`maxsim.functional.memops` (address check, word indices, gather, write)
cost ~10 array operations and Python calls per instruction, most of the functional run of a loop of
loads over a few warps. A pass here does the same work lane by lane and leaves the result the
numpy steps leave; when a lane fails the check it changes nothing and says so, and the caller's
numpy check then names the lane and why (the error message).
"""

from __future__ import annotations

import numpy as np

from ..jit import njit, prefetch
from .bounds import lanes_high_word_set, lanes_out_of_range, lanes_outside_allocations

# how the lanes' addresses are checked (see memops: check)
RANGE = 0  # within [lo, last] and aligned
ALLOCATIONS = 1  # aligned and inside one allocation (a memory with gaps between them)
PREFETCH_LANES = 8  # how far ahead a load's gather asks for a lane's word (a simulator setting: 4 to 32
# did about as well for a row-strided gather; the values loaded are the same whatever it is)


@njit(cache=True)
def _lanes_pass(addr, regs, high, carry, borrow, mode, lo, last, align, bases, ends, sel, masked):
    """Whether every lane (of ``sel`` when ``masked``) passes: its .E high word zero (``high``: the
    address's base row, -1 for none; see operands.high_word) and its access of ``align + 1``
    bytes in range (``mode`` RANGE) or inside one allocation (ALLOCATIONS)."""
    if high >= 0 and lanes_high_word_set(addr, regs[high], regs[high + 1], carry, borrow, sel, masked):
        return False
    if mode == RANGE:
        return not lanes_out_of_range(addr, lo, last, align, sel, masked)
    return not lanes_outside_allocations(addr, bases, ends, align + 1, sel, masked)


@njit(cache=True)
def load(addr, regs, high, carry, borrow, mode, lo, last, align, bases, ends, sel, masked,
         words, shbase, shared, dst, width, keep_unselected):
    """Check the lanes (as :func:`_lanes_pass`) and, when they pass, load ``width`` words a lane into
    register rows ``dst`` ..: the lanes of ``sel`` (every lane unless ``masked``) from ``words``
    at their address / 4 (plus ``shbase`` for shared memory); the other lanes keep their rows when
    ``keep_unselected``, else get 0. Returns whether the lanes passed (nothing is written if not)."""
    if not _lanes_pass(addr, regs, high, carry, borrow, mode, lo, last, align, bases, ends, sel, masked):
        return False
    n = addr.shape[0]
    if width == 1 and not masked and not shared:  # (the common case, a loop of its own)
        row = regs[dst]
        # each lane's word asked for PREFETCH_LANES lanes ahead: lanes far apart (a row-strided
        # gather, every lane's word in a line of its own and out of the CPU's caches) then wait
        # for their lines together, not one after another (7-20% less time for 4,096 lanes 16 KiB
        # apart, which miss the CPU's caches at once: their lines fall in few cache sets); a hint
        # only, never a fault
        for i in range(min(n, PREFETCH_LANES)):
            prefetch(words, addr[i] >> 2)
        for i in range(n):
            if i + PREFETCH_LANES < n:
                prefetch(words, addr[i + PREFETCH_LANES] >> 2)
            row[i] = words[addr[i] >> 2]
        return True
    for j in range(width):
        row = regs[dst + j]
        for i in range(n):
            if masked and not sel[i]:
                if not keep_unselected:
                    row[i] = 0
                continue
            w = np.int64(addr[i] >> 2) + j
            if shared:
                w += shbase[i]
            row[i] = words[w]
    return True


@njit(cache=True)
def store(addr, regs, high, carry, borrow, mode, lo, last, align, bases, ends, sel, masked,
          words, shbase, shared, src, width):
    """Check the lanes (as :func:`_lanes_pass`) and, when they pass, store ``width`` words a lane
    from register rows ``src`` .. (``src`` -1: zeros) to ``words`` (as :func:`load` addresses
    them): word j of every lane in lane order, then word j + 1 (where lanes write one word, the
    last lane's value stays). Returns whether the lanes passed (nothing is written if not)."""
    if not _lanes_pass(addr, regs, high, carry, borrow, mode, lo, last, align, bases, ends, sel, masked):
        return False
    zeros = np.zeros(addr.shape[0] if src < 0 else 0, dtype=regs.dtype)
    for j in range(width):
        row = regs[src + j] if src >= 0 else zeros
        for i in range(addr.shape[0]):
            if masked and not sel[i]:
                continue
            w = np.int64(addr[i] >> 2) + j
            if shared:
                w += shbase[i]
            words[w] = row[i]
    return True
