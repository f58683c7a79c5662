"""The memory system compiled: the model of :mod:`maxsim.timing.memory_system`, same numbers, in numba.

:class:`~maxsim.timing.memory_system.MemorySystem` states the model of the sliced L2 and the DRAM
channels in plain Python (read it for what each step means and why; change the model there
first). :class:`CompiledMemorySystem` runs exactly that model on numpy arrays: every ``read`` and
``write`` gives the same completion cycle (the floating-point operations are done in the same
order), the L2 holds the same lines in the same LRU order, and every counter and ``stats()`` key
is equal (tests/test_memory_parity.py). ``MemorySystem(cfg)`` builds this one unless
``core="python"`` or ``MAXSIM_CORE=python`` (:mod:`maxsim.timing.cores`).

State:

* ``LINES`` (int64, (tag, stamp, dirty) x row x way): row ``slice x sets + set``; the line number
  held by each way (``EMPTY`` when none), its last-use stamp (the set's least recently used line
  is the one with the smallest stamp: the order of the reference's OrderedDict) and its dirty
  sector mask, each field a plane of its own (a lookup reads a row's tags side by side: two host
  cache lines for 16 ways, the stamps only when the line is absent). ``READY`` (float64, row x way x sector): the cycle the sector's data is in the
  slice, NaN while the sector is not valid (the reference's None).
* Bandwidth servers (the slices, then the channels): ``SF`` (float64, server x (bytes per cycle,
  next free cycle, end of the last reservation, busy cycles, bytes)) and ``SI`` (int64, server x
  (windows held, prune threshold)); their windows in open-addressing hash tables ``HK`` (window
  index or ``EMPTY``), ``HV`` (first free cycle in the window) and ``HP`` (union-find parent of a
  full window: a later window; the window itself while not full), one row per server. A table
  keeps exactly the windows the reference's dicts hold (pruned at the same moments), so requests
  out of time order find the same room.
* ``I`` (int64) counters and bookkeeping, then the words a request works in (``SCRATCH``: its
  lines and its table by slice, without an allocation of their own), ``F`` (float64) float
  counters and latencies, ``P`` (int64) the geometry, ``T`` the slice hash's byte tables,
  ``DELAYS`` each DRAM read piece's wait.

The tables and ``DELAYS`` grow (Python reallocates them) when a call leaves them more than half
full; before a call that could add more than the room left (a long request, a flush, a backlog),
Python makes room first, so a compiled call never runs out of it.

Speed: a request's work is compiled as one function. Its per-line and per-reservation helpers are
``forceinline`` (:func:`maxsim.jit.njit`), and the requests borrow their arrays
(:func:`maxsim.jit.borrow`): each helper call used to count a reference to every array it was
passed, an atomic instruction each, three per line looked up (over half the time of an
uncoalesced 32-line read, perf). The lines' tag rows and stamp rows are asked for
(:func:`maxsim.jit.prefetch`) as the lines are placed, before the lookups need them (the stamps:
~6% less time per uncoalesced 32-line read; looking a later line's way up ahead to ask for its
sectors' ready cycles too cost more than it saved). A reservation finds its window with a product,
not a division (the window is a power of two cycles). The window tables are not the cost they
seem: a reservation alone takes ~18 ns; laying a slot's three words side by side (one host cache
line instead of three) did not make a request faster.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from ..errors import SimulationError
from ..jit import borrow, njit, prefetch
from .l2 import _HASH_MUL, SliceMap, set_geometry
from .owner import WeakOwner
from .bandwidth import BandwidthServer, ServerGroup
from .memory_stats import MemoryStats, set_common
from .tlb import TlbArrays, pages_known, translate, warm_pages

EMPTY = np.iinfo(np.int64).min  # no line in a way / no window in a table slot
_TABLE_MIN = 1024  # initial slots of each server's window table
_DELAYS_MIN = 4096  # initial length of the DRAM delay record

# ---- P: geometry (int64) ----
(P_LINE_SHIFT, P_SECTOR_SHIFT, P_SPL, P_ASSOC, P_SETS, P_SLICES, P_CHANNELS, P_LPG, P_MODULO, P_POW2,
 P_ODD, P_POLY, P_HASH_SETS, P_SECTOR, P_WINDOW, P_KEEP, P_TABLE_BYTES, P_FILLS, P_LPG_SHIFT, P_SIZE) = range(20)

# ---- I: counters and bookkeeping (int64) ----
(I_READS, I_WRITES, I_READ_HITS, I_PENDING_HITS, I_READ_MISSES, I_WRITE_SECTORS, I_WRITE_HITS,
 I_WRITE_MISSES, I_DRAM_READ, I_DRAM_WRITTEN, I_EVICTIONS, I_PIECES, I_DELAYS, I_CLOCK, I_ROOM,
 I_SCRATCH) = range(16)
# words of I after the counters that a request works in (its lines, its table by slice, its missed
# sectors: _work), instead of arrays of its own; enough for a warp's request (up to 32 sectors in
# 32 lines: 904 words with 4 sectors a line); a longer one (from Python) takes a new array
SCRATCH = 1024
I_SIZE = I_SCRATCH + SCRATCH

# ---- F: float counters and latencies ----
F_LAST_REQUEST, F_L2_DELAY, F_L2_LAT, F_DRAM_LAT, F_DRAM_FACTOR, F_SIZE = range(6)

# ---- servers ----
S_BPC, S_NEXT_FREE, S_LAST_END, S_BUSY, S_BYTES, S_FSIZE = range(6)  # SF columns
S_COUNT, S_PRUNE_AT, S_ISIZE = range(3)  # SI columns

# ---- LINES fields ----
L_TAG, L_STAMP, L_DIRTY = range(3)

SMALL_LINES = 8  # sectors up to which a request's lines are found by a plain search
# 1 / BandwidthServer.WINDOW: a window a power of two cycles long, so that a cycle times this is
# exactly the cycle divided by the window (the window of a reservation, found without a division)
_PER_WINDOW = 1.0 / BandwidthServer.WINDOW
if BandwidthServer.WINDOW & (BandwidthServer.WINDOW - 1):
    raise ValueError(f"BandwidthServer.WINDOW must be a power of two, not {BandwidthServer.WINDOW}")


# ---- bandwidth servers ----------------------------------------------------------------------------

@njit(cache=True, forceinline=True)
def _slot(HK, k, key):
    """Slot of window ``key`` in server ``k``'s table, or the empty slot where it would go: the
    window number modulo the table size, then the next slots (consecutive windows, the usual
    case, sit side by side)."""
    mask = HK.shape[1] - 1
    h = key & mask
    for _ in range(mask + 1):
        kk = HK[k, h]
        if kk == key or kk == EMPTY:
            return h
        h = (h + 1) & mask
    raise RuntimeError("memory system: a bandwidth server's window table is full (room was not made)")


@njit(cache=True, forceinline=True)
def _put(HK, HV, HP, SI, I, k, h, key, value):
    """nf[key] = value at slot ``h`` (from :func:`_slot`); a new window counts and is not full."""
    if HK[k, h] != key:
        HK[k, h] = key
        HP[k, h] = key
        SI[k, S_COUNT] += 1
        if SI[k, S_COUNT] > HK.shape[1] // 2:
            I[I_ROOM] = 1
    HV[k, h] = value


@njit(cache=True, forceinline=True)
def _room(HK, HP, k, b):
    """The first window at or after ``b`` that is not full (union-find with path compression)."""
    root = b
    while True:
        h = _slot(HK, k, root)
        if HK[k, h] == root and HP[k, h] != root:
            root = HP[k, h]
        else:
            break
    while b != root:
        h = _slot(HK, k, b)
        nxt = HP[k, h]
        HP[k, h] = root
        b = nxt
    return root


@njit(cache=True, forceinline=False)
def _prune(HK, HV, HP, SI, k, old):
    """Forget server ``k``'s windows before ``old`` (rebuild its table from the others)."""
    n = SI[k, S_COUNT]
    keys = np.empty(n, np.int64)
    vals = np.empty(n, np.float64)
    pars = np.empty(n, np.int64)
    m = 0
    for j in range(HK.shape[1]):
        key = HK[k, j]
        if key != EMPTY:
            if key >= old:
                keys[m] = key
                vals[m] = HV[k, j]
                pars[m] = HP[k, j]
                m += 1
            HK[k, j] = EMPTY
    for j in range(m):
        h = _slot(HK, k, keys[j])
        HK[k, h] = keys[j]
        HV[k, h] = vals[j]
        HP[k, h] = pars[j]
    SI[k, S_COUNT] = m


@njit(cache=True, forceinline=True)
def _reserve(k, now, nbytes, SF, SI, HK, HV, HP, I, P):
    """BandwidthServer.reserve of server ``k``: start cycle of ``nbytes`` arriving at ``now``."""
    if nbytes <= 0:
        SF[k, S_LAST_END] = now
        return now
    w = P[P_WINDOW]
    bpc = SF[k, S_BPC]
    b = int(math.floor(now * _PER_WINDOW))  # now / w, without a division
    t = now
    h = _slot(HK, k, b)
    if HK[k, h] == b and HP[k, h] != b:
        b = _room(HK, HP, k, b)
        t = float(b * w)
        h = _slot(HK, k, b)
    left = float(nbytes)
    start = 0.0
    first = True
    end = 0.0
    while True:
        end_b = (b + 1) * w
        if not first:
            h = _slot(HK, k, b)
        s0 = HV[k, h] if HK[k, h] == b else float(b * w)
        if t > s0:
            s0 = t
        if first:
            start = s0
            first = False
        room = (end_b - s0) * bpc
        if room > left:
            end = s0 + left / bpc
            _put(HK, HV, HP, SI, I, k, h, b, end)
            break
        _put(HK, HV, HP, SI, I, k, h, b, float(end_b))
        HP[k, h] = b + 1
        left -= room
        if left <= 0:
            end = float(end_b)
            break
        b = _room(HK, HP, k, b + 1)
        t = float(b * w)
    SF[k, S_LAST_END] = end
    if end > SF[k, S_NEXT_FREE]:
        SF[k, S_NEXT_FREE] = end
    if SI[k, S_COUNT] > SI[k, S_PRUNE_AT]:
        _prune(HK, HV, HP, SI, k, b - P[P_KEEP])
        SI[k, S_PRUNE_AT] = 2 * max(SI[k, S_COUNT], P[P_KEEP])
    SF[k, S_BUSY] += nbytes / bpc
    SF[k, S_BYTES] += nbytes
    return start


@njit(cache=True)
def reserve_bytes(k, now, nbytes, SF, SI, HK, HV, HP, I, P):
    """One server's reservation called from Python (``slices[i].reserve``, a backlog)."""
    return _reserve(k, now, nbytes, SF, SI, HK, HV, HP, I, P)


@njit(cache=True)
def rehash(HK, HV, HP, HK2, HV2, HP2):
    """Copy every server's windows into the larger tables ``HK2``, ``HV2``, ``HP2``."""
    for k in range(HK.shape[0]):
        for j in range(HK.shape[1]):
            key = HK[k, j]
            if key != EMPTY:
                h = _slot(HK2, k, key)
                HK2[k, h] = key
                HV2[k, h] = HV[k, j]
                HP2[k, h] = HP[k, j]


# ---- where a line lives ---------------------------------------------------------------------------

@njit(cache=True, forceinline=False)
def _gf2_mod(value, poly):
    """Remainder of ``value`` modulo ``poly`` over GF(2) (l2.gf2_mod), for granules past the tables."""
    d = 0
    while poly >> (d + 1):
        d += 1
    n = 0
    while value >> n:
        n += 1
    while n > d:
        value ^= poly << (n - 1 - d)
        n = 0
        while value >> n:
            n += 1
    return value


@njit(cache=True, forceinline=True)
def _slice_of_granule(g, P, T):
    """SliceMap.of_granule."""
    if P[P_MODULO]:
        return g % P[P_SLICES]
    low = 0
    poly = P[P_POLY]
    if poly:
        if g >> (8 * P[P_TABLE_BYTES]):
            low = _gf2_mod(g, poly)
        else:
            x = g
            for k in range(P[P_TABLE_BYTES]):
                low ^= T[k, x & 0xFF]
                x >>= 8
                if x == 0:
                    break
    odd = P[P_ODD]
    if odd == 1:
        return low
    return low + P[P_POW2] * (g % odd)


@njit(cache=True, forceinline=True)
def _place(ln, P, T):
    """(slice, row of LINES) of line number ``ln``: SlicedL2.locate."""
    lpg = P[P_LPG]
    g = ln >> P[P_LPG_SHIFT] if P[P_LPG_SHIFT] >= 0 else ln // lpg  # (a shift floors as // does)
    s = _slice_of_granule(g, P, T)
    n_sets = P[P_SETS]
    if P[P_HASH_SETS]:
        st = (((ln * _HASH_MUL) & 0xFFFFFFFF) * n_sets) >> 32
    else:
        within = ln - g * lpg
        st = ((g // P[P_SLICES]) * lpg + within) % n_sets
    return s, s * n_sets + st


@njit(cache=True)
def place_line(ln, P, T):
    return _place(ln, P, T)


# ---- lines ------------------------------------------------------------------------------------

@njit(cache=True, forceinline=True)
def _find(LINES, row, ln):
    """Way of line ``ln`` in ``row``, or -1 - (the way a new line takes) when absent; that way is
    an empty one, or the least recently used line's when the set is full (``_victim``). The tags
    are read first (one plane of ``LINES``: the row's tags side by side), the stamps only when the
    line is absent."""
    ways = LINES.shape[2]
    for way in range(ways):
        if LINES[L_TAG, row, way] == ln:
            return way
    lru = -1
    oldest = 0
    for way in range(ways):
        if LINES[L_TAG, row, way] == EMPTY:
            return -1 - way
        if lru < 0 or LINES[L_STAMP, row, way] < oldest:
            lru = way
            oldest = LINES[L_STAMP, row, way]
    return -1 - lru


@njit(cache=True, forceinline=True)
def _new_line(LINES, READY, I, row, way, ln):
    """Line ``ln`` (every sector invalid, clean, most recent) in ``way`` of ``row``."""
    LINES[L_TAG, row, way] = ln
    LINES[L_DIRTY, row, way] = 0
    I[I_CLOCK] += 1
    LINES[L_STAMP, row, way] = I[I_CLOCK]
    for i in range(READY.shape[2]):
        READY[row, way, i] = np.nan


@njit(cache=True, forceinline=True)
def _touch(LINES, I, row, way):
    """The line becomes the set's most recent (move_to_end)."""
    I[I_CLOCK] += 1
    LINES[L_STAMP, row, way] = I[I_CLOCK]


@njit(cache=True, inline="always")
def _use_line(LINES, READY, I, row, ln):
    """The way of ``row`` holding line ``ln``, made the set's most recent: the line found, or
    allocated (every sector invalid, clean) in an empty way or over the least recently used line.
    Returns (way, the evicted line's dirty mask, or -1 when no line was evicted)."""
    way = _find(LINES, row, ln)
    if way >= 0:
        _touch(LINES, I, row, way)
        return way, -1
    way = -1 - way
    evicted = LINES[L_DIRTY, row, way] if LINES[L_TAG, row, way] != EMPTY else -1
    _new_line(LINES, READY, I, row, way, ln)
    return way, evicted


@njit(cache=True, forceinline=True)
def _popcount(m):
    c = 0
    while m:
        c += m & 1
        m >>= 1
    return c


@njit(cache=True, forceinline=True)
def _hash_size(n):
    """Slots of _lines_of's hash table for a request of ``n`` sectors (none up to SMALL_LINES)."""
    size = 0
    if n > SMALL_LINES:
        size = 1
        while size < 2 * n:
            size *= 2
    return size


@njit(cache=True, forceinline=True)
def _by_slice_at(n):
    """Where _by_slice's table starts in the words of a request of ``n`` sectors (_work)."""
    return 2 * n + _hash_size(n)


@njit(cache=True, forceinline=True)
def _fills_at(n):
    """Where read_request's missed sectors start in the words of a request of ``n`` sectors."""
    return _by_slice_at(n) + B_SIZE * (n + 1)


@njit(cache=True, forceinline=True)
def _work(I, n, spl):
    """The words a request of ``n`` sectors works in: _lines_of's lines, masks and hash table, then
    _by_slice's table (from _by_slice_at), then read_request's missed sectors (from _fills_at; at
    most n lines); the scratch words of ``I`` when they are enough, else a new array. Nothing in
    them outlives the request."""
    need = _fills_at(n) + 4 * n * spl
    if need <= SCRATCH:
        return I[I_SCRATCH:I_SCRATCH + need]
    return np.empty(need, np.int64)


@njit(cache=True, forceinline=True)
def _lines_of(A, P, W):
    """The distinct lines of sector addresses ``A`` in the order of their first sector, with the
    mask of their sectors (MemorySystem._by_slice); m = -1 for a negative address. A sector's line
    is looked for among those seen so far: first the last one (sectors of a line side by side),
    then, in a request of up to ``SMALL_LINES`` sectors, one by one, in a longer one through a hash
    table of the lines seen. The lines, the masks and the table are the first words of ``W``
    (_work)."""
    n = A.shape[0]
    ls, ss, smask = P[P_LINE_SHIFT], P[P_SECTOR_SHIFT], P[P_SPL] - 1
    size = _hash_size(n)
    buf = W
    lines = buf[:n]
    masks = buf[n:2 * n]
    for j in range(n):
        if A[j] < 0:
            return lines, masks, -1
    m = 0
    last = -1
    if size == 0:
        for j in range(n):
            a = A[j]
            ln = a >> ls
            bit = 1 << ((a >> ss) & smask)
            if m and lines[last] == ln:
                masks[last] |= bit
                continue
            u = 0
            while u < m and lines[u] != ln:
                u += 1
            if u == m:
                lines[m] = ln
                masks[m] = bit
                m += 1
            else:
                masks[u] |= bit
            last = u
        return lines, masks, m
    slot_of = buf[2 * n:2 * n + size]
    slot_of[:] = -1
    mask = size - 1
    for j in range(n):
        a = A[j]
        ln = a >> ls
        bit = 1 << ((a >> ss) & smask)
        if m and lines[last] == ln:
            masks[last] |= bit
            continue
        h = ((ln * _HASH_MUL) >> 7) & mask  # (lines a power of two apart spread over the table)
        while slot_of[h] >= 0 and lines[slot_of[h]] != ln:
            h = (h + 1) & mask
        if slot_of[h] < 0:
            slot_of[h] = m
            lines[m] = ln
            masks[m] = bit
            last = m
            m += 1
        else:
            last = slot_of[h]
            masks[last] |= bit
    return lines, masks, m


# rows of _by_slice's table
B_GROUP, B_ROW, B_ORDER, B_FIRST, B_LINE, B_SECTORS, B_FILL, B_SIZE = range(8)


@njit(cache=True, forceinline=True)
def _by_slice(lines, masks, m, P, T, LINES, W):
    """The lines of a request grouped by slice (MemorySystem._by_slice: each slice's sectors are one
    piece of work for it, the slices in the order of their first line), in one table ``B`` (int64,
    ``B_*`` x (m + 1)): per line its group and its row of ``LINES``; per group its slice
    (``B_ORDER``), its sector count and where its lines start in ``B[B_LINE]``, which lists the
    lines of each group one group after another, each group's in the request's order
    (``B[B_FIRST, g + 1]`` ends group g); ``B`` is the words of ``W`` (_work) after _lines_of's.
    Returns (B, number of groups)."""
    at = _by_slice_at(lines.shape[0])
    B = W[at:at + B_SIZE * (m + 1)].reshape((B_SIZE, m + 1))
    ng = 0
    plane = LINES.shape[1] * LINES.shape[2]
    ways = LINES.shape[2]
    for u in range(m):
        s, row = _place(lines[u], P, T)
        B[B_ROW, u] = row
        # the row's tags and stamps (a hit writes its stamp, a miss reads them), asked for now (a
        # request's lines are in rows far apart: their loads overlap instead of waiting one after
        # another in the lookups)
        prefetch(LINES, L_TAG * plane + row * ways)
        prefetch(LINES, L_TAG * plane + row * ways + ways - 1)
        prefetch(LINES, L_STAMP * plane + row * ways)
        prefetch(LINES, L_STAMP * plane + row * ways + ways - 1)
        g = 0
        while g < ng and B[B_ORDER, g] != s:
            g += 1
        if g == ng:
            B[B_ORDER, ng] = s
            B[B_SECTORS, ng] = 0
            B[B_FIRST, ng] = 0
            ng += 1
        B[B_GROUP, u] = g
        B[B_SECTORS, g] += _popcount(masks[u])
        B[B_FIRST, g] += 1
    at = 0
    for g in range(ng):
        n = B[B_FIRST, g]
        B[B_FIRST, g] = at
        B[B_FILL, g] = at
        at += n
    B[B_FIRST, ng] = at
    for u in range(m):
        g = B[B_GROUP, u]
        B[B_LINE, B[B_FILL, g]] = u
        B[B_FILL, g] += 1
    return B, ng


@njit(cache=True, inline="always")
def _piece(s, now, count, SF, SI, HK, HV, HP, I, F, P):
    """A request's ``count`` sectors in slice ``s`` as one piece of work for the slice: its start
    cycle (MemorySystem.read/write: ``slices[s].reserve(now, count x sector)``, the wait counted)."""
    start = _reserve(s, now, float(count * P[P_SECTOR]), SF, SI, HK, HV, HP, I, P)
    F[F_L2_DELAY] += start - now
    I[I_PIECES] += 1
    return start


@njit(cache=True, forceinline=True)
def _write_back(s, now, n_sectors, SF, SI, HK, HV, HP, I, P):
    """MemorySystem._write_back: queue a slice's dirty sectors in its channel; returns the channel."""
    nbytes = n_sectors * P[P_SECTOR]
    I[I_DRAM_WRITTEN] += nbytes
    ch = P[P_SLICES] + s * P[P_CHANNELS] // P[P_SLICES]
    _reserve(ch, now, float(nbytes), SF, SI, HK, HV, HP, I, P)
    return ch


@njit(cache=True, forceinline=True)
def _fill(s, ready, n_sectors, SF, SI, HK, HV, HP, I, F, P):
    """MemorySystem._fill (l2.fills_use_bandwidth): a DRAM read piece's sectors pass their slice
    as they are written into it, latency.l2_hit before they reach the SM; nothing waits for it."""
    _reserve(s, ready - F[F_L2_LAT], float(n_sectors * P[P_SECTOR]), SF, SI, HK, HV, HP, I, P)


# ---- requests -----------------------------------------------------------------------------

@njit(cache=True)
def write_requests(Q, i, safe_n, P, I, F, T, LINES, READY, SF, SI, HK, HV, HP):
    """The posted stores queued in ``Q`` from word ``i`` on (each: cycle, sector count, sectors),
    one write_request each, in order. Stops before a store of more than ``safe_n`` sectors and
    after one that leaves the tables too full (I[I_ROOM]); returns the word reached, or -1 - the
    word of a store with a negative address."""
    n = Q.shape[0]
    while i < n:
        m = Q[i + 1]
        if m > safe_n:
            return i
        done = write_request(float(Q[i]), Q[i + 2:i + 2 + m], P, I, F, T, LINES, READY, SF, SI, HK, HV, HP)
        if done != done:
            return -1 - i
        i += 2 + m
        if I[I_ROOM]:
            return i
    return i


# forceinline=False: the SM core calls it from its inlined issue code; it stays a function of its own
# (it runs once per L2 read, not per issue; inlined into both copies of the issue it would only add
# compile time)
@njit(cache=True, forceinline=False)
def read_request(now, A, sm, P, I, F, T, LINES, READY, SF, SI, HK, HV, HP, DELAYS):
    """MemorySystem.read for SM ``sm``: the cycle the last of the sectors ``A`` arrives (before
    rounding up); NaN (nothing changed) for a negative address, or one past the TLB's record of the
    pages seen (Python grows it and calls again). Its addresses are translated first
    (maxsim.timing.tlb.translate on the TLBs in the tails of ``I`` and ``F``)."""
    A, P, I, F, T, LINES, READY = borrow(A), borrow(P), borrow(I), borrow(F), borrow(T), borrow(LINES), borrow(READY)
    SF, SI, HK, HV, HP, DELAYS = borrow(SF), borrow(SI), borrow(HK), borrow(HV), borrow(HP), borrow(DELAYS)
    n = A.shape[0]
    spl = P[P_SPL]
    W = _work(I, n, spl)
    lines, masks, m = _lines_of(A, P, W)
    if m < 0 or not pages_known(A, I, I_SIZE):
        return np.nan
    now = translate(sm, now, A, I, F, I_SIZE, F_SIZE)
    I[I_READS] += 1
    if now > F[F_LAST_REQUEST]:
        F[F_LAST_REQUEST] = now
    sec = P[P_SECTOR]
    lat2 = F[F_L2_LAT]
    done = now
    hits = 0
    pending = 0
    misses = 0
    B, ng = _by_slice(lines, masks, m, P, T, LINES, W)
    # the missed sectors of a piece (row, way, sector, line): the last words of W
    at = _fills_at(n)
    k = m * spl
    f_row, f_way, f_i, f_ln = W[at:at + k], W[at + k:at + 2 * k], W[at + 2 * k:at + 3 * k], W[at + 3 * k:at + 4 * k]
    for g in range(ng):
        s = B[B_ORDER, g]
        start = _piece(s, now, B[B_SECTORS, g], SF, SI, HK, HV, HP, I, F, P)
        hit_t = start + lat2
        nf = 0
        n_evicted = 0
        wb = 0
        for q in range(B[B_FIRST, g], B[B_FIRST, g + 1]):
            u = B[B_LINE, q]
            row, ln, mask = B[B_ROW, u], lines[u], masks[u]
            way, evicted = _use_line(LINES, READY, I, row, ln)  # a new line's sectors all miss below
            if evicted >= 0:
                n_evicted += 1
                wb += _popcount(evicted)
            for i in range(spl):
                if not mask >> i & 1:
                    continue
                r = READY[row, way, i]
                if np.isnan(r):
                    f_row[nf] = row
                    f_way[nf] = way
                    f_i[nf] = i
                    f_ln[nf] = ln
                    nf += 1
                    continue
                hits += 1
                if r > hit_t:
                    pending += 1
                    if r > done:
                        done = r
                elif hit_t > done:
                    done = hit_t
        if nf:
            misses += nf
            ch = P[P_SLICES] + s * P[P_CHANNELS] // P[P_SLICES]
            dstart = _reserve(ch, start, nf * sec * F[F_DRAM_FACTOR], SF, SI, HK, HV, HP, I, P)
            nd = I[I_DELAYS]
            if nd >= DELAYS.shape[0]:
                raise RuntimeError("memory system: the DRAM delay record is full (room was not made)")
            DELAYS[nd] = dstart - start
            I[I_DELAYS] = nd + 1
            if nd + 1 + P[P_SLICES] > DELAYS.shape[0]:
                I[I_ROOM] = 1
            ready = dstart + F[F_DRAM_LAT]
            if P[P_FILLS]:
                _fill(s, ready, nf, SF, SI, HK, HV, HP, I, F, P)
            for j in range(nf):
                if LINES[L_TAG, f_row[j], f_way[j]] == f_ln[j]:  # not evicted by a later line of this request
                    READY[f_row[j], f_way[j], f_i[j]] = ready
            if ready > done:
                done = ready
        if n_evicted:
            I[I_EVICTIONS] += n_evicted
            if wb:
                _write_back(s, start, wb, SF, SI, HK, HV, HP, I, P)
    I[I_READ_HITS] += hits
    I[I_PENDING_HITS] += pending
    I[I_READ_MISSES] += misses
    I[I_DRAM_READ] += misses * sec
    return done


@njit(cache=True)
def write_request(now, A, P, I, F, T, LINES, READY, SF, SI, HK, HV, HP):
    """MemorySystem.write: the cycle the L2 holds the sectors ``A`` (before rounding up); NaN
    (nothing changed) for a negative address."""
    A, P, I, F, T, LINES, READY = borrow(A), borrow(P), borrow(I), borrow(F), borrow(T), borrow(LINES), borrow(READY)
    SF, SI, HK, HV, HP = borrow(SF), borrow(SI), borrow(HK), borrow(HV), borrow(HP)
    n = A.shape[0]
    W = _work(I, n, P[P_SPL])
    lines, masks, m = _lines_of(A, P, W)
    if m < 0:
        return np.nan
    I[I_WRITES] += 1
    if now > F[F_LAST_REQUEST]:
        F[F_LAST_REQUEST] = now
    spl = P[P_SPL]
    done = now
    hits = 0
    B, ng = _by_slice(lines, masks, m, P, T, LINES, W)
    for g in range(ng):
        s = B[B_ORDER, g]
        start = _piece(s, now, B[B_SECTORS, g], SF, SI, HK, HV, HP, I, F, P)
        t = start + F[F_L2_LAT]
        for q in range(B[B_FIRST, g], B[B_FIRST, g + 1]):
            u = B[B_LINE, q]
            row, ln, mask = B[B_ROW, u], lines[u], masks[u]
            way, evicted = _use_line(LINES, READY, I, row, ln)
            if evicted >= 0:
                I[I_EVICTIONS] += 1
                if evicted:
                    _write_back(s, start, _popcount(evicted), SF, SI, HK, HV, HP, I, P)
            for i in range(spl):
                if mask >> i & 1:
                    if np.isnan(READY[row, way, i]):
                        READY[row, way, i] = t
                    else:
                        hits += 1
            LINES[L_DIRTY, row, way] |= mask
        if t > done:
            done = t
    I[I_WRITE_SECTORS] += n
    I[I_WRITE_HITS] += hits
    I[I_WRITE_MISSES] += n - hits
    return done


@njit(cache=True)
def warm_sectors(A, dirty, P, T, LINES, READY, I):
    """MemorySystem.warm: the sectors ``A`` valid (from cycle 0 unless already), most recent last;
    False (nothing changed) for a negative address."""
    for j in range(A.shape[0]):
        if A[j] < 0:
            return False
    ls, ss, smask = P[P_LINE_SHIFT], P[P_SECTOR_SHIFT], P[P_SPL] - 1
    for j in range(A.shape[0]):
        a = A[j]
        ln = a >> ls
        _, row = _place(ln, P, T)
        way, _ = _use_line(LINES, READY, I, row, ln)
        i = (a >> ss) & smask
        if np.isnan(READY[row, way, i]):
            READY[row, way, i] = 0.0
        if dirty:
            LINES[L_DIRTY, row, way] |= 1 << i
    return True


@njit(cache=True)
def insert_sector(sector_no, ready, dirty, P, T, LINES, READY, I):
    """SlicedL2.insert: sector number ``sector_no`` valid from cycle ``ready`` (dirty or not); a
    line that does not fit evicts its set's LRU line (counted, its dirty data dropped)."""
    addr = sector_no * P[P_SECTOR]
    ln = addr >> P[P_LINE_SHIFT]
    _, row = _place(ln, P, T)
    way, evicted = _use_line(LINES, READY, I, row, ln)
    if evicted >= 0:
        I[I_EVICTIONS] += 1
    i = (addr // P[P_SECTOR]) % P[P_SPL]
    READY[row, way, i] = ready
    if dirty:
        LINES[L_DIRTY, row, way] |= 1 << i


@njit(cache=True)
def dirty_per_slice(P, LINES):
    """Dirty sectors held by each slice."""
    out = np.zeros(P[P_SLICES], np.int64)
    n_sets = P[P_SETS]
    for row in range(LINES.shape[1]):
        for way in range(LINES.shape[2]):
            if LINES[L_TAG, row, way] != EMPTY:
                out[row // n_sets] += _popcount(LINES[L_DIRTY, row, way])
    return out


@njit(cache=True)
def clean_dirty(s, P, LINES):
    """SlicedL2.clean_slice: clear slice ``s``'s dirty bits; returns how many were set."""
    n = 0
    n_sets = P[P_SETS]
    for row in range(s * n_sets, (s + 1) * n_sets):
        for way in range(LINES.shape[2]):
            if LINES[L_TAG, row, way] != EMPTY and LINES[L_DIRTY, row, way]:
                n += _popcount(LINES[L_DIRTY, row, way])
                LINES[L_DIRTY, row, way] = 0
    return n


@njit(cache=True)
def flush_dirty(now, P, I, LINES, SF, SI, HK, HV, HP):
    """MemorySystem.flush: every dirty sector written back; the cycle the last write ends."""
    end = now
    n_sets = P[P_SETS]
    for s in range(P[P_SLICES]):
        n = 0
        for row in range(s * n_sets, (s + 1) * n_sets):
            for way in range(LINES.shape[2]):
                if LINES[L_TAG, row, way] != EMPTY and LINES[L_DIRTY, row, way]:
                    n += _popcount(LINES[L_DIRTY, row, way])
                    LINES[L_DIRTY, row, way] = 0
        if n:
            ch = _write_back(s, now, n, SF, SI, HK, HV, HP, I, P)
            if SF[ch, S_LAST_END] > end:
                end = SF[ch, S_LAST_END]
    return end


# ---- Python side --------------------------------------------------------------------------------

def _float_field(column, doc):
    return property(lambda self: float(self._ms._SF[self._k, column]), doc=doc)


class Server(WeakOwner):
    """One slice or channel of a :class:`CompiledMemorySystem`, seen as a
    :class:`~maxsim.timing.memory_system.BandwidthServer` (its state lives in the memory system's
    arrays)."""

    __slots__ = ("_owner", "_k")
    WINDOW = BandwidthServer.WINDOW
    KEEP = BandwidthServer.KEEP

    def __init__(self, ms, k):
        self._set_owner(ms)  # (weakly: maxsim.timing.owner)
        self._k = k

    @property
    def _ms(self):
        return self._owner()

    bytes_per_clk = _float_field(S_BPC, "Bytes the server passes per cycle.")
    next_free = _float_field(S_NEXT_FREE, "The latest cycle a reservation's bytes have passed.")
    last_end = _float_field(S_LAST_END, "The cycle the last reservation's bytes have passed.")
    busy = _float_field(S_BUSY, "Cycles of work passed since the last reset_counters().")
    bytes = _float_field(S_BYTES, "Bytes passed since the last reset_counters().")

    def reserve(self, now: float, nbytes: float) -> float:
        """Start cycle of a request of ``nbytes`` arriving at ``now``; occupies the server."""
        ms = self._ms
        ms._make_room(2 + nbytes / (ms._SF[self._k, S_BPC] * BandwidthServer.WINDOW))
        start = reserve_bytes(self._k, float(now), float(nbytes), *ms._servers)
        ms._check_room()
        return float(start)

    def reset_counters(self) -> None:
        self._ms._SF[self._k, S_BUSY] = 0.0
        self._ms._SF[self._k, S_BYTES] = 0.0


class CompiledL2(WeakOwner):
    """The L2 of a :class:`CompiledMemorySystem` as :class:`~maxsim.timing.l2.SlicedL2` shows it:
    geometry, ``evictions``, ``slice_of``, ``set_index``, ``contains``, ``is_dirty``, ``insert``,
    ``dirty_sectors``, ``clean_slice``, ``len()``, and ``sets`` (a copy of the tag state as the
    reference keeps it)."""

    def __init__(self, ms, size, slices, line, sector, assoc, interleave, slice_hash="ipoly", hash_sets=True):
        set_geometry(self, size, slices, line, sector, assoc, interleave, slice_hash, hash_sets)
        self._set_owner(ms)  # (weakly: maxsim.timing.owner)

    @property
    def _ms(self):
        return self._owner()

    @property
    def evictions(self) -> int:
        return int(self._ms._I[I_EVICTIONS])

    @evictions.setter
    def evictions(self, value: int) -> None:
        self._ms._I[I_EVICTIONS] = value

    def _where(self, line_no: int):
        ms = self._ms
        return place_line(int(line_no), ms._P, ms._T)

    def slice_of(self, addr: int) -> int:
        return int(self._where(addr >> self._line_shift)[0])

    def set_index(self, line_no: int) -> int:
        """Set of line number ``line_no`` within its slice."""
        return int(self._where(line_no)[1]) % self.n_sets

    def _entry(self, addr: int):
        """(row, way or -1, sector index) of byte address ``addr`` (no LRU update)."""
        line_no = addr >> self._line_shift
        row = int(self._where(line_no)[1])
        tags = self._ms._LINES[L_TAG, row, :]
        ways = np.flatnonzero(tags == line_no)
        return row, int(ways[0]) if ways.size else -1, (addr // self.sector) % self.sectors_per_line

    def contains(self, addr: int) -> bool:
        """Whether the sector holding byte ``addr`` is valid (no LRU update)."""
        row, way, i = self._entry(addr)
        return way >= 0 and not math.isnan(self._ms._READY[row, way, i])

    def is_dirty(self, addr: int) -> bool:
        row, way, i = self._entry(addr)
        return way >= 0 and bool(int(self._ms._LINES[L_DIRTY, row, way]) >> i & 1)

    def insert(self, sector_no: int, ready: float, dirty: bool = False) -> None:
        """Place sector number ``sector_no`` (byte address // sector) as valid from cycle ``ready``
        (to preload the L2 before a run); a dirty victim's data is dropped, not written back."""
        ms = self._ms
        insert_sector(int(sector_no), float(ready), bool(dirty), ms._P, ms._T, ms._LINES, ms._READY, ms._I)

    def dirty_sectors(self, slice_no: int) -> int:
        return int(dirty_per_slice(self._ms._P, self._ms._LINES)[slice_no])

    def clean_slice(self, slice_no: int) -> int:
        """Clear the dirty bits of one slice (LRU order unchanged); returns how many were set."""
        return int(clean_dirty(slice_no, self._ms._P, self._ms._LINES))

    @property
    def sets(self):
        """A copy of the tag state as :class:`~maxsim.timing.l2.SlicedL2` keeps it:
        ``sets[slice][set]`` an OrderedDict line number -> [ready_0, ..., dirty mask], least
        recently used first (changing it changes nothing)."""
        LINES, READY = self._ms._LINES, self._ms._READY
        out = []
        for s in range(self.n_slices):
            sl = []
            for st in range(self.n_sets):
                row = s * self.n_sets + st
                ways = [w for w in range(self.assoc) if LINES[L_TAG, row, w] != EMPTY]
                ways.sort(key=lambda w: LINES[L_STAMP, row, w])
                sl.append(OrderedDict(
                    (int(LINES[L_TAG, row, w]),
                     [None if math.isnan(r) else float(r) for r in READY[row, w].tolist()]
                     + [int(LINES[L_DIRTY, row, w])]) for w in ways))
            out.append(sl)
        return out

    def __len__(self) -> int:
        """Valid sectors held."""
        ms = self._ms
        present = ms._LINES[L_TAG, :, :] != EMPTY
        return int(np.count_nonzero(~np.isnan(ms._READY[present])))


def _counter(index, doc):
    return property(lambda self: int(self._I[index]), doc=doc)


_BYTE_TABLES = {}  # id(SliceMap byte tables) -> (the tables, their array): read only, shared


def _byte_table_array(tables):
    """A SliceMap's byte tables (or none) as the int64 array the compiled code reads, made once per
    tables (they are cached per polynomial, read only: every memory system of a process shares the
    array, which nothing writes)."""
    if not tables:
        return np.zeros((SliceMap.TABLE_BYTES, 256), np.int64)
    hit = _BYTE_TABLES.get(id(tables))
    if hit is None or hit[0] is not tables:
        hit = _BYTE_TABLES[id(tables)] = (tables, np.array(tables, dtype=np.int64))
    return hit[1]


class CompiledMemorySystem(MemoryStats):
    """Sliced L2 + DRAM channels shared by the SMs of one simulated GPU, compiled: the model and
    the interface of :class:`~maxsim.timing.memory_system.MemorySystem` (see there)."""

    core = "compiled"

    def __init__(self, cfg, bandwidth_share: float = 1.0, l2_size_bytes: int | None = None,
                 dram_traffic_factor: float = 1.0):
        set_common(self, cfg, bandwidth_share, dram_traffic_factor)
        c = cfg.l2
        self.l2 = l2 = CompiledL2(self, l2_size_bytes or c.size, c.slices, c.line, c.sector, c.assoc,
                                  c.slice_interleave, c.slice_hash, c.hash_sets)
        n, ch = c.slices, cfg.dram.channels
        self.channel_of_slice = [s * ch // n for s in range(n)]
        self._sector_shift = self.sector.bit_length() - 1
        m = l2.map
        P = np.zeros(P_SIZE, np.int64)
        P[P_LINE_SHIFT], P[P_SECTOR_SHIFT], P[P_SPL] = l2._line_shift, self._sector_shift, l2.sectors_per_line
        P[P_ASSOC], P[P_SETS], P[P_SLICES], P[P_CHANNELS] = l2.assoc, l2.n_sets, n, ch
        P[P_LPG], P[P_MODULO], P[P_POW2], P[P_ODD] = l2._lines_per_granule, m.method == "modulo", m._pow2, m._odd
        P[P_POLY], P[P_HASH_SETS], P[P_SECTOR] = m._poly or 0, bool(l2.hash_sets), self.sector
        P[P_WINDOW], P[P_KEEP], P[P_TABLE_BYTES] = BandwidthServer.WINDOW, BandwidthServer.KEEP, SliceMap.TABLE_BYTES
        P[P_FILLS] = self.fills_use_bandwidth
        lpg = l2._lines_per_granule  # (a power of two: its granule number by a shift)
        P[P_LPG_SHIFT] = lpg.bit_length() - 1 if lpg & (lpg - 1) == 0 else -1
        self._P = P
        self._T = _byte_table_array(m._tables)
        # the SMs' L1 TLBs and the L2 TLB (maxsim.timing.tlb) in the tails of I and F
        self.tlb = tlb = TlbArrays(cfg, I_SIZE, F_SIZE)
        self._I = np.zeros(I_SIZE + tlb.int_size(), np.int64)
        self._F = np.zeros(F_SIZE + tlb.float_size(), np.float64)
        tlb.init(self)
        self._F[F_L2_LAT], self._F[F_DRAM_LAT] = self.l2_latency, self.dram_latency
        self._F[F_DRAM_FACTOR] = dram_traffic_factor
        rows = n * l2.n_sets
        self._LINES = np.zeros((3, rows, l2.assoc), np.int64)
        self._LINES[L_TAG, :, :] = EMPTY
        self._READY = np.full((rows, l2.assoc, l2.sectors_per_line), np.nan)
        bpc = [cfg.l2.bandwidth_bytes_per_clk * bandwidth_share / n] * n + \
              [cfg.dram_bytes_per_clk * bandwidth_share / ch] * ch
        if min(bpc) <= 0:
            raise ValueError("bytes_per_clk must be positive")
        self._SF = np.zeros((n + ch, S_FSIZE), np.float64)
        self._SF[:, S_BPC] = bpc
        self._SI = np.zeros((n + ch, S_ISIZE), np.int64)
        self._SI[:, S_PRUNE_AT] = 2 * BandwidthServer.KEEP
        # windows a request can add to one server's table, per sector: a slice piece, a DRAM piece,
        # its fill (l2.fills_use_bandwidth) and a write-back per line (each at most 2 windows plus
        # one per full window of its bytes)
        self._per_sector = 8 + self.sector * (3 + l2.sectors_per_line) / (BandwidthServer.WINDOW * min(bpc))
        self._DELAYS = np.empty(_DELAYS_MIN, np.float64)
        self._new_tables(_TABLE_MIN)
        self.slices = [Server(self, k) for k in range(n)]
        self.channels = [Server(self, n + k) for k in range(ch)]
        self.l2_server = ServerGroup(self.slices)
        self.dram_server = ServerGroup(self.channels)
        self.reset_stats()

    # ---- state arrays -------------------------------------------------------------------------
    def _new_tables(self, cap):
        """Window tables of ``cap`` slots per server (the windows held copied over)."""
        S = self._SF.shape[0]
        HK = np.full((S, cap), EMPTY, np.int64)
        HV = np.zeros((S, cap), np.float64)
        HP = np.zeros((S, cap), np.int64)
        if hasattr(self, "_HK"):
            rehash(self._HK, self._HV, self._HP, HK, HV, HP)
        self._HK, self._HV, self._HP = HK, HV, HP
        # room a call may use: the tables are at most half full when it starts
        self._headroom = cap - cap // 2 - 2
        self._safe_n = int(self._headroom // self._per_sector)
        self._bind()

    def _bind(self):
        # a new binding: SM cores holding the arrays (for reads served in the core) take them again
        self._version = getattr(self, "_version", -1) + 1
        self._servers = (self._SF, self._SI, self._HK, self._HV, self._HP, self._I, self._P)
        self._read_args = (self._P, self._I, self._F, self._T, self._LINES, self._READY, self._SF, self._SI,
                           self._HK, self._HV, self._HP, self._DELAYS)
        self._write_args = self._read_args[:-1]

    def _check_room(self):
        """Grow the window tables or the delay record when the last call left them too full."""
        if not self._I[I_ROOM]:
            return
        self._I[I_ROOM] = 0
        cap = self._HK.shape[1]
        most = int(self._SI[:, S_COUNT].max())
        if most > cap // 2:
            while most > cap // 2:
                cap *= 2
            self._new_tables(cap)
        nd = int(self._I[I_DELAYS])
        if nd + self._P[P_SLICES] > self._DELAYS.shape[0]:
            size = self._DELAYS.shape[0]
            while nd + self._P[P_SLICES] > size:
                size *= 2
            d = np.empty(size, np.float64)
            d[:nd] = self._DELAYS[:nd]
            self._DELAYS = d
            self._bind()

    def _make_room(self, windows):
        """Grow the window tables so that ``windows`` more fit in any server's."""
        if windows <= self._headroom:
            return
        cap = self._HK.shape[1]
        while cap - cap // 2 - 2 < windows:
            cap *= 2
        self._new_tables(cap)

    @staticmethod
    def _negative(what, a):
        bad = int(a[a < 0][0])
        return SimulationError(f"memory system {what}: negative sector address {bad}")

    # ---- requests ------------------------------------------------------------------------------
    def reset_stats(self) -> None:
        """Zero every counter (the cache contents and the queued work stay)."""
        clock, room = self._I[I_CLOCK], self._I[I_ROOM]
        self._I[:I_SIZE] = 0
        self._I[I_CLOCK], self._I[I_ROOM] = clock, room
        self._F[F_LAST_REQUEST] = 0.0
        self._F[F_L2_DELAY] = 0.0
        self._SF[:, S_BUSY] = 0.0
        self._SF[:, S_BYTES] = 0.0
        self.tlb.reset_stats()

    def read(self, now: int, sectors, sm: int = 0) -> int:
        """Read the given sectors (byte addresses, distinct) for SM ``sm``; returns the cycle the
        last arrives (MemorySystem.read)."""
        self.tlb.check_sm(sm)
        return self._request("read", read_request, "_read_args", now, sectors, sm)

    def write(self, now: int, sectors) -> int:
        """Posted store of whole sectors into the L2 (STG); returns the cycle the L2 holds them."""
        return self._request("write", write_request, "_write_args", now, sectors)

    def write_queue(self, queue) -> None:
        """Posted stores in order, as many :meth:`write` calls: ``queue`` holds for each its cycle,
        its sector count and its sectors (the SM core's store queue)."""
        q = np.ascontiguousarray(queue, dtype=np.int64)
        i, n = 0, q.shape[0]
        while i < n:
            j = write_requests(q, i, self._safe_n, *self._write_args)
            if j < 0:  # the store at word -1 - j has a negative address
                bad = -1 - j
                raise self._negative("write", q[bad + 2:bad + 2 + int(q[bad + 1])])
            if self._I[I_ROOM]:
                self._check_room()
            if j == i:  # a store too long for the tables' headroom: the one-by-one path makes room
                m = int(q[i + 1])
                self.write(int(q[i]), q[i + 2:i + 2 + m])
                j = i + 2 + m
            i = j

    def _request(self, what, request, args, now, sectors, sm=None):
        """One read (of SM ``sm``) or write: ``request`` called with the arrays named ``args``
        (fetched after making room: growing a table replaces them)."""
        a = np.ascontiguousarray(sectors, dtype=np.int64)
        if a.shape[0] == 0:
            return now
        if a.shape[0] > self._safe_n:
            self._make_room(a.shape[0] * self._per_sector)
        if sm is None:
            done = request(float(now), a, *getattr(self, args))
        else:
            self._tlb_room(a.shape[0])
            done = request(float(now), a, sm, *getattr(self, args))
        if self._I[I_ROOM]:
            self._check_room()
        if done != done:
            raise self._negative(what, a)
        return math.ceil(done)

    def warm(self, sectors, dirty: bool = False) -> None:
        """Make the given sectors valid in the L2, most recent last, without time or statistics
        (MemorySystem.warm)."""
        a = np.ascontiguousarray(sectors, dtype=np.int64)
        if not warm_sectors(a, bool(dirty), self._P, self._T, self._LINES, self._READY, self._I):
            raise self._negative("warm", a)
        self._tlb_room(a.shape[0] * self.tlb.n_sms)
        warm_pages(a, self._I, self._F, I_SIZE, F_SIZE)

    def warm_tlb(self, addresses) -> None:
        """Put the pages of ``addresses`` into the TLBs, nothing into the L2 (MemorySystem.warm_tlb)."""
        a = np.ascontiguousarray(addresses, dtype=np.int64)
        self._tlb_room(a.shape[0] * self.tlb.n_sms)
        warm_pages(a, self._I, self._F, I_SIZE, F_SIZE)

    def _tlb_room(self, more):
        """Room in the TLB's record of translated pages for ``more`` new keys."""
        grown = self.tlb.grown(more)
        if grown is not None:
            self._I = grown
            self._bind()

    def flush(self, now: int) -> int:
        """Write every dirty L2 sector back to DRAM; returns the cycle the last write ends."""
        dirty = int(dirty_per_slice(self._P, self._LINES).sum())
        n = self._P[P_SLICES]
        self._make_room(2 * n + dirty * self.sector / (BandwidthServer.WINDOW * float(self._SF[:, S_BPC].min())))
        end = flush_dirty(float(now), self._P, self._I, self._LINES, *self._servers[:5])
        self._check_room()
        return math.ceil(end)

    # ---- statistics ----------------------------------------------------------------------------
    reads = _counter(I_READS, "Read requests.")
    writes = _counter(I_WRITES, "Write requests.")
    l2_read_hits = _counter(I_READ_HITS, "Read sectors that hit (pending hits included).")
    l2_pending_hits = _counter(I_PENDING_HITS, "Hits on sectors still being filled.")
    l2_read_misses = _counter(I_READ_MISSES, "Read sectors fetched from DRAM.")
    l2_write_sectors = _counter(I_WRITE_SECTORS, "Sectors stored.")
    l2_write_hits = _counter(I_WRITE_HITS, "Stores to a valid sector.")
    l2_write_misses = _counter(I_WRITE_MISSES, "Stores that allocated their sector.")
    dram_bytes_read = _counter(I_DRAM_READ, "Bytes of missed sectors.")
    dram_bytes_written = _counter(I_DRAM_WRITTEN, "Bytes written back.")
    _l2_pieces = _counter(I_PIECES, "Request pieces (a request's sectors in one slice).")

    @property
    def last_request(self) -> float:
        """The latest request cycle seen."""
        return float(self._F[F_LAST_REQUEST])

    @property
    def _l2_delay_sum(self) -> float:
        return float(self._F[F_L2_DELAY])

    @property
    def _dram_delays(self):
        return self._DELAYS[:int(self._I[I_DELAYS])]
