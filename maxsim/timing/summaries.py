"""Summaries of warp memory accesses that the timing model needs, computed for many warps at once.

The functional model calls :func:`summarise` for every executed memory instruction of a group of
warps (addresses of shape (warps, 32)). Shared accesses become the number of shared-memory
wavefronts each warp needs; global and texture accesses become each warp's 32-byte sectors.
"""

from __future__ import annotations

import numpy as np

from ..jit import njit
from .shared_memory import wavefronts, warp_wavefronts


class SectorLists:
    """Each warp's sector list of one memory instruction of a group of warps, held as one array:
    ``flat`` (the lists one after another, int64) and ``ends`` (where each warp's list ends,
    int32). Indexed by
    warp (row), it gives that warp's list (an int64 array, a view); ``take(rows)`` a copy holding
    only those rows. Two numbers per warp instead of an array object each: a trace holds
    millions of them."""

    __slots__ = ("flat", "ends")

    def __init__(self, flat, ends):
        self.flat = flat
        self.ends = ends

    def __len__(self):
        return self.ends.size

    def __getitem__(self, row):
        ends = self.ends
        row = int(row)
        if row < 0:
            row += ends.size
        if not 0 <= row < ends.size:
            raise IndexError(f"row {row} of {ends.size}")
        return self.flat[(int(ends[row - 1]) if row else 0):int(ends[row])]

    def __iter__(self):
        return (self[r] for r in range(len(self)))

    def lengths(self):
        """The length of each row's list."""
        return np.diff(self.ends, prepend=0)

    def take(self, rows):
        rows = np.asarray(rows, dtype=np.int64)
        lens = self.lengths()[rows]
        begins = self.ends[rows] - lens
        ends = np.cumsum(lens)
        index = np.repeat(begins - (ends - lens), lens) + np.arange(int(ends[-1]) if ends.size else 0)
        return SectorLists(self.flat[index], ends.astype(np.int32))


def sectors(addr, active, nbytes, sector=32):
    """Each warp's distinct ``sector``-byte sectors as sorted byte addresses: a
    :class:`SectorLists` (row w: warp w's int64 array, a view)."""
    flat, ends = _sectors(np.ascontiguousarray(addr), np.ascontiguousarray(active), int(nbytes), int(sector))
    flat.flags.writeable = False
    return SectorLists(flat, ends)


@njit(cache=True)
def sort_prefix(a, m):
    """Sort ``a[:m]`` in place by insertion: the short, mostly ordered runs of compiled code (a warp's
    sectors, a barrier's few completion cycles), where np.sort's quicksort costs seconds of compile."""
    for i in range(1, m):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit(cache=True)
def _sectors(addr, active, nbytes, sector):
    """The sectors of :func:`sectors` for all warps: (byte addresses, warp after warp; the end of
    each warp's run). A lane touches the sectors of its first byte onwards, as many as ``nbytes``
    can span, those up to its last byte.

    A warp's lanes mostly come in address order: its sectors are then told apart as they come (a
    lane's sectors against the last one kept); a warp whose lanes go back is done again through
    a sort (:func:`_warp_sectors_sorted`). A sector of 2^n bytes is found by a shift (a division
    costs ~10x more)."""
    nw, nl = addr.shape
    per = max(1, (nbytes + sector - 1) // sector)
    shift = 0
    while (1 << shift) < sector:
        shift += 1
    pow2 = (1 << shift) == sector
    out = np.empty(nw * nl * per, np.int64)  # sector numbers, then (at the end) byte addresses
    ends = np.empty(nw, np.int32)  # (a group's sectors number far below 2^31)
    run = np.empty(nl * per, np.int64)
    k = 0
    for w in range(nw):
        start = k
        prev = -(1 << 62)  # the last sector kept (none yet)
        ordered = True
        if per == 1 and pow2:  # (the common case: one sector a lane)
            for lane in range(nl):
                if active[w, lane]:
                    s = np.int64(addr[w, lane]) >> shift
                    if s != prev:
                        if s < prev:
                            ordered = False
                            break
                        out[k] = s
                        k += 1
                        prev = s
        else:
            for lane in range(nl):
                if not active[w, lane]:
                    continue
                a = np.int64(addr[w, lane])
                if pow2:
                    first = a >> shift
                    last = (a + nbytes - 1) >> shift
                else:
                    first = a // sector
                    last = (a + nbytes - 1) // sector
                last = min(last, first + per - 1)
                if first < prev:
                    ordered = False
                    break
                for s in range(max(first, prev + 1), last + 1):
                    out[k] = s
                    k += 1
                prev = max(prev, last)
        if not ordered:
            k = _warp_sectors_sorted(addr[w], active[w], nbytes, sector, per, run, out, start)
        ends[w] = k
    # a copy of the part used: a view would keep the whole buffer (room for every lane's sectors)
    # alive with the trace
    res = np.empty(k, np.int64)
    if pow2:
        for j in range(k):
            res[j] = out[j] << shift
    else:
        for j in range(k):
            res[j] = out[j] * sector
    return res, ends


@njit(cache=True)
def _warp_sectors_sorted(addr, active, nbytes, sector, per, run, out, k):
    """One warp's distinct sector numbers (lanes in any order), sorted, written to ``out`` from
    ``k``; returns where they end."""
    m = 0
    for lane in range(addr.shape[0]):
        if active[lane]:
            a = np.int64(addr[lane])
            first = a // sector
            last = min((a + nbytes - 1) // sector, first + per - 1)
            for s in range(first, last + 1):
                run[m] = s
                m += 1
    sort_prefix(run, m)
    for j in range(m):
        if j == 0 or run[j] != run[j - 1]:
            out[k] = run[j]
            k += 1
    return k


SEEN_LIMIT = 4096  # remembered shared-memory summaries per bank geometry (a bound on the memory held)
_SEEN = {}  # (banks, bank width) -> {summary's bytes: the summary}


def atomic_wavefronts(addr, active, banks, width):
    """Shared-memory wavefronts of ATOMS for each warp: its lanes on one address serialise (one
    pass per lane; choice: the order and any merging of same-address updates in the hardware are
    not published), and its distinct addresses need the bank passes of a 4-byte access."""
    a = np.where(active, addr.astype(np.int64), -1)
    a.sort(axis=1)
    same = (a[:, 1:] == a[:, :-1]) & (a[:, 1:] >= 0)
    # the longest run of equal addresses per warp
    run = np.ones(a.shape, dtype=np.int64)
    for k in range(1, a.shape[1]):
        run[:, k] = np.where(same[:, k - 1], run[:, k - 1] + 1, 1)
    longest = np.where(a >= 0, run, 0).max(axis=1)
    banked = np.asarray(warp_wavefronts(addr, active, 4, banks, width), dtype=np.int64)
    return np.maximum(longest, banked)


def make_summariser(cfg):
    """``summarise(kind, addr, active, nbytes)`` for the trace recorder under ``cfg``. A shared
    access whose summary (each warp's wavefronts) was made before gets the same (read-only) array
    back."""
    banks, width, sector = cfg.shared.banks, cfg.shared.bank_width, cfg.l1tex.sector

    # shared-memory summaries already made (loops repeat them, and so do the launches of one kernel):
    # one read-only array for each, kept per bank geometry for every summariser of the process
    seen = _SEEN.setdefault((banks, width), {})

    def summarise(kind, addr, active, nbytes):
        if kind == "shfl":  # one conflict-free pass per warp with an active lane
            return active.any(axis=1).astype(np.int64)
        if kind == "atoms":
            return atomic_wavefronts(addr, active, banks, width)
        if kind in ("lds", "sts"):
            out = wavefronts(addr, active, nbytes, banks, width)
            key = out.tobytes()  # (a warp's count, not its 32 addresses: far fewer bytes to hash)
            kept = seen.get(key)
            if kept is None:
                if len(seen) >= SEEN_LIMIT:
                    seen.clear()
                kept = seen[key] = out
                out.flags.writeable = False  # shared by every trace with this summary
            return kept
        return sectors(addr, active, nbytes, sector)
    summarise.key = ("banks", banks, "bank_width", width, "sector", sector)
    return summarise
