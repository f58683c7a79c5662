"""A least-recently-used list of sectors with dirty bits, for replaying a launch's history.

:meth:`maxsim.gpu.sampling._History.writeback_time` runs millions of sector accesses of a launch
through an L2 of the config's capacity, seen as one LRU list of sectors, to find the first
eviction of a dirty (stored) sector. :class:`ReferenceLRU` states that model in plain Python (an
``OrderedDict``); :class:`SectorLRU` computes the same thing compiled, and the tests hold the two
to the same answer on every access of random streams.

The compiled list keeps, per present sector, its last access stamp and dirty bit (a numba dict
sector -> 2 x stamp + dirty) and a ring of sectors in stamp order; an entry of the ring whose stamp
is not its sector's last one is stale and skipped. The least recently used sector is the oldest
entry of the ring that is not stale, so each access costs O(1) amortised. When the ring is full,
the live entries are moved to its front (their order, and so the LRU order, kept).
"""

from __future__ import annotations

import collections

import numpy as np

from ..jit import Dict, njit, types

_RING_PER_CAPACITY = 4  # ring entries per sector of capacity (compaction every ~3 x capacity accesses)


class ReferenceLRU:
    """The model in plain Python: ``access(sectors, dirty)`` returns whether a dirty sector was evicted."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.lru = collections.OrderedDict()  # sector -> dirty, least recent first

    def access(self, sectors, dirty: bool) -> bool:
        lru, capacity = self.lru, self.capacity
        for sec in np.asarray(sectors).tolist():
            if sec in lru:
                lru.move_to_end(sec)
                if dirty:
                    lru[sec] = True
                continue
            lru[sec] = dirty
            if len(lru) > capacity and lru.popitem(last=False)[1]:
                return True
        return False


@njit(cache=True)
def _new_table():
    return Dict.empty(types.int64, types.int64)


@njit(cache=True)
def _access(sectors, dirty, last, ring, state, capacity):
    """Access ``sectors`` in order; True at the first eviction of a dirty sector (the remaining
    sectors are then not accessed, as in :meth:`ReferenceLRU.access`). ``state``: [oldest stamp
    in the ring, next stamp, present sectors]."""
    size = ring.shape[0]
    d = 1 if dirty else 0
    for k in range(sectors.shape[0]):
        sec = sectors[k]
        if state[1] - state[0] >= size:
            # the ring is full: move the live entries (at most capacity + 1) to its front, in order
            keep = np.empty(state[2], np.int64)
            n = 0
            for stamp in range(state[0], state[1]):
                s = ring[stamp % size]
                v = last.get(s, -1)
                if v >= 0 and v >> 1 == stamp:
                    keep[n] = s
                    n += 1
            base = state[1]
            for j in range(n):
                s = keep[j]
                ring[(base + j) % size] = s
                last[s] = 2 * (base + j) + (last[s] & 1)
            state[0] = base
            state[1] = base + n
        stamp = state[1]
        state[1] = stamp + 1
        ring[stamp % size] = sec
        v = last.get(sec, -1)
        if v >= 0:
            last[sec] = 2 * stamp + ((v & 1) | d)
            continue
        last[sec] = 2 * stamp + d
        state[2] += 1
        if state[2] > capacity:
            # evict the least recently used: the oldest entry of the ring that is not stale
            while True:
                h = state[0]
                state[0] = h + 1
                s = ring[h % size]
                v = last.get(s, -1)
                if v >= 0 and v >> 1 == h:
                    break
            del last[s]
            state[2] -= 1
            if v & 1:
                return True
    return False


class SectorLRU:
    """The compiled LRU list: the same answers as :class:`ReferenceLRU`."""

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self._last = _new_table()
        self._ring = np.empty(_RING_PER_CAPACITY * (self.capacity + 1), np.int64)
        self._state = np.zeros(3, np.int64)

    def access(self, sectors, dirty: bool) -> bool:
        return _access(np.asarray(sectors, dtype=np.int64), bool(dirty), self._last, self._ring, self._state,
                       self.capacity)

    def __len__(self) -> int:
        return int(self._state[2])
