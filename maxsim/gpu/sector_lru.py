"""A least-recently-used list of sectors with dirty bits, for replaying a launch's history.

:meth:`maxsim.gpu.sampling._History.writeback_time` runs millions of sector accesses of a launch
through an L2 of the config's capacity, seen as one LRU list of sectors, to find the first
eviction of a dirty (stored) sector. :class:`ReferenceLRU` states that model in plain Python (an
``OrderedDict``); :class:`SectorLRU` computes the same thing compiled, and the tests hold the two
to the same answer on every access of random streams.

The compiled list keeps, per present sector, its last access stamp and dirty bit (2 x stamp +
dirty, in an open-addressed hash table of at most 1/4 load: linear probing, deletion by shifting
back) and a ring of sectors in stamp order; an entry of the ring whose stamp is not its sector's
last one is stale and skipped. The least recently used sector is the oldest entry of the ring that
is not stale, so each access costs O(1) amortised. When the ring is full, the live entries are moved
to its front (their order, and so the LRU order, kept).
"""

from __future__ import annotations

import collections

import numpy as np

from ..jit import njit

_RING_PER_CAPACITY = 4  # ring entries per sector of capacity (compaction every ~3 x capacity accesses)
_LOAD = 4  # table slots per sector of capacity, at least (a power of two above it)


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


_EMPTY = -1  # a free slot of the table (sector addresses are not negative)


@njit(cache=True, inline="always")
def _home(sec, mask):
    """The table slot where a sector's probe starts (its 32-byte number, mixed)."""
    x = sec >> 5
    x = (x ^ (x >> 16)) * 0x45D9F3B
    x = x ^ (x >> 16)
    return x & mask


@njit(cache=True, inline="always")
def _slot(keys, sec, mask):
    """The slot holding ``sec``, or the free slot where it would go."""
    i = _home(sec, mask)
    while keys[i] != _EMPTY and keys[i] != sec:
        i = (i + 1) & mask
    return i


@njit(cache=True, inline="always")
def _remove(keys, vals, i, mask):
    """Free slot ``i``, shifting back the entries of its probe run that would be cut off."""
    j = i
    while True:
        j = (j + 1) & mask
        if keys[j] == _EMPTY:
            break
        h = _home(keys[j], mask)
        # the entry at j stays when its home lies cyclically in (i, j]
        if (i < j and i < h <= j) or (i > j and (h > i or h <= j)):
            continue
        keys[i] = keys[j]
        vals[i] = vals[j]
        i = j
    keys[i] = _EMPTY


@njit(cache=True)
def _access(sectors, dirty, keys, vals, ring, state, capacity):
    """Access ``sectors`` in order; True at the first eviction of a dirty sector (the remaining
    sectors are then not accessed, as in :meth:`ReferenceLRU.access`). ``keys``/``vals``: the
    table sector -> 2 x stamp + dirty. ``state``: [oldest stamp in the ring, next stamp, present
    sectors]."""
    size = ring.shape[0]
    mask = keys.shape[0] - 1
    d = 1 if dirty else 0
    for k in range(sectors.shape[0]):
        sec = sectors[k]
        if state[1] - state[0] >= size:
            # the ring is full: move the live entries (at most capacity + 1) to its front, in order
            keep = np.empty(state[2], np.int64)
            n = 0
            for stamp in range(state[0], state[1]):
                s = ring[stamp % size]
                i = _slot(keys, s, mask)
                if keys[i] == s and vals[i] >> 1 == stamp:
                    keep[n] = s
                    n += 1
            base = state[1]
            for j in range(n):
                s = keep[j]
                ring[(base + j) % size] = s
                i = _slot(keys, s, mask)
                vals[i] = 2 * (base + j) + (vals[i] & 1)
            state[0] = base
            state[1] = base + n
        stamp = state[1]
        state[1] = stamp + 1
        ring[stamp % size] = sec
        i = _slot(keys, sec, mask)
        if keys[i] == sec:
            vals[i] = 2 * stamp + ((vals[i] & 1) | d)
            continue
        keys[i] = sec
        vals[i] = 2 * stamp + d
        state[2] += 1
        if state[2] > capacity:
            # evict the least recently used: the oldest entry of the ring that is not stale
            while True:
                h = state[0]
                state[0] = h + 1
                s = ring[h % size]
                i = _slot(keys, s, mask)
                if keys[i] == s and vals[i] >> 1 == h:
                    break
            v = vals[i]
            _remove(keys, vals, i, mask)
            state[2] -= 1
            if v & 1:
                return True
    return False


class SectorLRU:
    """The compiled LRU list: the same answers as :class:`ReferenceLRU`."""

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        slots = 1 << max(4, (_LOAD * (self.capacity + 1) - 1).bit_length())
        self._keys = np.full(slots, _EMPTY, np.int64)
        self._vals = np.zeros(slots, np.int64)
        self._ring = np.empty(_RING_PER_CAPACITY * (self.capacity + 1), np.int64)
        self._state = np.zeros(3, np.int64)

    def access(self, sectors, dirty: bool) -> bool:
        return _access(np.asarray(sectors, dtype=np.int64), bool(dirty), self._keys, self._vals, self._ring,
                       self._state, self.capacity)

    def __len__(self) -> int:
        return int(self._state[2])


@njit(cache=True)
def _add_distinct(sectors, keys, state):
    """Insert ``sectors`` into the open-addressed set ``keys``; ``state[0]``: how many it holds."""
    mask = keys.shape[0] - 1
    for k in range(sectors.shape[0]):
        sec = sectors[k]
        i = _slot(keys, sec, mask)
        if keys[i] != sec:
            keys[i] = sec
            state[0] += 1


class SectorSet:
    """The distinct sectors seen so far (``add`` arrays of them, ``len`` how many): a set of Python
    ints costs ~50 ns a sector, this a few."""

    def __init__(self, expected: int = 1024):
        self._keys = np.full(1 << max(4, (_LOAD * (int(expected) + 1) - 1).bit_length()), _EMPTY, np.int64)
        self._state = np.zeros(1, np.int64)

    def add(self, sectors) -> None:
        a = np.asarray(sectors, dtype=np.int64)
        if _LOAD * (int(self._state[0]) + a.shape[0]) > self._keys.shape[0]:
            old = self._keys[self._keys != _EMPTY]
            self._keys = np.full(1 << (_LOAD * (old.size + a.shape[0]) * 2).bit_length(), _EMPTY, np.int64)
            self._state[0] = 0
            _add_distinct(old, self._keys, self._state)
        _add_distinct(a, self._keys, self._state)

    def __len__(self) -> int:
        return int(self._state[0])
