"""Address translation: an L1 TLB in each SM and the GPU-wide L2 TLB, over pages of ``tlb.page_bytes``.

A global load, and a texture fetch that misses the L1/texture cache, has its virtual address
translated before its request goes to the L2 (the L1/texture hit path shows no translation cost in
Mei and Chu's GTX 980 pointer chase: 98 cycles in every row, also where the L2 path missed the L1
TLB; maxwell-memory-measurements.md). The model (every number from the config, sources in
gm204.toml):

* A request's sectors lie in one or more pages (``tlb.page_bytes``, 2 MB). Each distinct page, in
  the order of its first sector, is looked up in the SM's L1 TLB (``tlb.l1_entries`` entries in
  sets of ``tlb.l1_assoc`` ways, LRU, the set the page number modulo the sets). A hit costs
  nothing (waits, though, for an entry whose translation is still under way).
* An L1 TLB miss looks in the L2 TLB, one for the GPU (``tlb.l2_entries`` in sets of
  ``tlb.l2_assoc``, LRU, set = page number modulo the sets): a hit costs ``tlb.l1_miss_cycles``
  (after the entry's translation, if under way); a miss walks the page table, ``tlb.walk_cycles``
  (the whole extra cost of a miss in both TLBs over an access whose translation hits), and the
  page takes an entry of the L2 TLB (evicting the set's least recently used) and of the SM's L1 TLB,
  both ready when the walk ends. Walks run in parallel (no published limit).
* **An SM's first touch of a page costs nothing.** A page the SM has never translated is taken as
  held by its L1 TLB (and, if absent, by the L2 TLB: no walk): the launch runs after others that
  touched its buffers (the copies in, a previous launch), as benchmarks time kernels, so the TLBs
  hold the pages of a working set that fits in them, and the latencies measured with warm TLBs
  (``latency.l2_hit``, ``latency.dram``) hold as they are. Translation costs come when a page
  comes back after it left a TLB: the capacity and conflict misses of a working set larger than
  the TLBs' reach. :meth:`AddressTranslation.warm` (the L2 warmed with the reads of CTAs that ran
  before) puts pages in the L2 TLB and every SM's L1 TLB, seen by every SM.
* The request goes on to the L2 when its last page is translated (all pages in parallel).
* Posted stores are not translated (a store's translation is on no warp's path; the model does
  not let stores fill the TLB: a choice).

:class:`AddressTranslation` states the model in plain Python (change it here first);
:func:`translate` runs it on the arrays of :class:`TlbArrays` in the compiled memory system, with the
same numbers (tests/test_memory_parity.py).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..errors import SimulationError
from ..jit import njit
from .owner import WeakOwner

SEEN_MIN = 1024  # initial slots of the compiled record of the (SM, page) pairs translated

# The compiled memory system keeps the TLBs in the tails of its int64 and float64 state vectors
# (``I`` from ``bi`` on, ``F`` from ``bf`` on), so the SM core passes no more arrays than before:
# ints: the fields below, then TT (row x way x (page, last use)), then TS (an open-addressing hash
# set of the keys page x SMs + SM that have been translated; NO_PAGE in an empty slot);
# floats: the costs below, then TR (row x way: the cycle the entry's translation is ready)
(T_PAGE_SHIFT, T_L1_SETS, T_L1_ASSOC, T_L2_SETS, T_L2_ASSOC, T_SMS, T_WAYS, T_SEEN_CAP, T_SEEN_N, T_CLOCK,
 T_LOOKUPS, T_L1_MISSES, T_L2_MISSES, T_FIRST, T_SIZE) = range(15)
TF_L1_MISS, TF_WALK, TF_SIZE = range(3)
E_PAGE, E_STAMP = range(2)
NO_PAGE = -1


def _geometry(cfg):
    t = cfg.tlb
    return (t.page_bytes.bit_length() - 1, t.l1_entries // t.l1_assoc, t.l1_assoc,
            t.l2_entries // t.l2_assoc, t.l2_assoc)


class AddressTranslation:
    """The L1 TLBs of ``cfg.gpu.sms`` SMs and the L2 TLB, in plain Python (the module docstring)."""

    def __init__(self, cfg):
        self.page_shift, self.l1_sets, self.l1_assoc, self.l2_sets, self.l2_assoc = _geometry(cfg)
        self.sms = cfg.gpu.sms
        self.l1_miss_cycles = float(cfg.tlb.l1_miss_cycles)
        self.walk_cycles = float(cfg.tlb.walk_cycles)
        self.l1 = [[OrderedDict() for _ in range(self.l1_sets)] for _ in range(self.sms)]
        self.l2 = [OrderedDict() for _ in range(self.l2_sets)]  # page -> cycle its translation is ready
        self.seen = [set() for _ in range(self.sms)]  # per SM: pages it has translated
        self.reset_stats()

    def reset_stats(self):
        self.lookups = 0  # pages looked up (a request's distinct pages)
        self.l1_misses = 0  # L1 TLB misses (first touches not counted)
        self.l2_misses = 0  # page walks
        self.first_touches = 0  # an SM's first translation of a page (free)

    def check_sm(self, sm):
        if not 0 <= sm < self.sms:
            raise SimulationError(f"address translation: SM {sm} is not one of the {self.sms} SMs of the config")

    def translate(self, sm: int, now, sectors):
        """The cycle the request of ``sectors`` (byte addresses) from SM ``sm`` at ``now`` may go on
        to the L2: ``now`` when every page hits the SM's L1 TLB."""
        ps = self.page_shift
        pages = []
        for a in sectors:
            p = a >> ps
            if p not in pages:
                pages.append(p)
        l1 = self.l1[sm]
        seen = self.seen[sm]
        ready = now
        for p in pages:
            self.lookups += 1
            st1 = l1[p % self.l1_sets]
            r = st1.get(p)
            if r is not None:
                st1.move_to_end(p)
                t = r if r > now else now
            else:
                st2 = self.l2[p % self.l2_sets]
                r = st2.get(p)
                if p not in seen:  # the SM's first touch: held as from before
                    seen.add(p)
                    self.first_touches += 1
                    t = now
                    if r is not None:
                        st2.move_to_end(p)
                    else:
                        if len(st2) >= self.l2_assoc:
                            st2.popitem(last=False)
                        st2[p] = t
                else:
                    self.l1_misses += 1
                    if r is not None:
                        st2.move_to_end(p)
                        t = (r if r > now else now) + self.l1_miss_cycles
                    else:
                        self.l2_misses += 1
                        t = now + self.walk_cycles
                        if len(st2) >= self.l2_assoc:
                            st2.popitem(last=False)
                        st2[p] = t
                if len(st1) >= self.l1_assoc:
                    st1.popitem(last=False)
                st1[p] = t
            if t > ready:
                ready = t
        return ready

    def warm(self, sectors):
        """The pages of ``sectors`` in the L2 TLB and in every SM's L1 TLB, most recent last,
        translated at cycle 0, and seen by every SM, without statistics: the state after the reads
        that warmed the L2 (:meth:`MemorySystem.warm`; which SMs made them is not known)."""
        ps = self.page_shift
        for a in sectors:
            p = a >> ps
            for st, assoc in [(self.l2[p % self.l2_sets], self.l2_assoc)] + \
                    [(sm[p % self.l1_sets], self.l1_assoc) for sm in self.l1]:
                if p in st:
                    st.move_to_end(p)
                else:
                    if len(st) >= assoc:
                        st.popitem(last=False)
                    st[p] = 0.0
            for seen in self.seen:
                seen.add(p)

    def sets(self):
        """(L1 TLBs, L2 TLB): per SM and set, per set, an OrderedDict page -> ready, least
        recently used first (a copy)."""
        return ([[OrderedDict(st) for st in sm] for sm in self.l1], [OrderedDict(st) for st in self.l2])

    def carry_over(self, other, ms=None):
        """Hold what ``other`` (a translation of the same config) holds, every translation done
        (ready at cycle 0): the TLBs the next of two back-to-back launches finds."""
        l1, l2 = other.sets()
        self.l1 = [[OrderedDict((p, 0.0) for p in st) for st in sm] for sm in l1]
        self.l2 = [OrderedDict((p, 0.0) for p in st) for st in l2]
        self.seen = [set(x) for x in other.pages_seen()]

    def pages_seen(self):
        """Per SM, the pages it has translated, in order."""
        return [sorted(x) for x in self.seen]

    def stats(self) -> dict:
        return {"tlb_lookups": self.lookups, "tlb_l1_misses": self.l1_misses,
                "tlb_l2_misses": self.l2_misses, "tlb_first_touches": self.first_touches}


class TlbArrays(WeakOwner):
    """The same TLBs in the tails of the compiled memory system's state vectors (the layout above),
    with views for Python: ``TI`` (fields and counters), ``TT`` (row x way x (page, last use): rows
    ``sm x l1 sets + set`` for the L1 TLBs, then the L2 TLB's sets; ``NO_PAGE`` in an empty way),
    ``TS`` (the hash set of keys ``page x SMs + SM`` translated, ``NO_PAGE`` in empty slots; grown
    by Python before it could become more than half full),
    ``TF`` (the costs) and ``TR`` (row x way: the cycle the entry's translation is ready)."""

    def __init__(self, cfg, bi, bf):
        self.geometry = _geometry(cfg)
        self.n_sms = cfg.gpu.sms
        self.costs = (float(cfg.tlb.l1_miss_cycles), float(cfg.tlb.walk_cycles))
        self.bi, self.bf = bi, bf
        self.cap = SEEN_MIN

    @property
    def rows(self):
        _, l1s, _, l2s, _ = self.geometry
        return self.n_sms * l1s + l2s

    @property
    def ways(self):
        return max(self.geometry[2], self.geometry[4])

    def int_size(self, cap=None):
        return T_SIZE + self.rows * self.ways * 2 + (cap or self.cap)

    def float_size(self):
        return TF_SIZE + self.rows * self.ways

    @property
    def _ms(self):  # the memory system whose arrays hold these TLBs (set by init)
        return self._owner()

    def init(self, ms):
        """Write an empty TLB into the tails of ``ms._I`` and ``ms._F`` (sized by
        :meth:`int_size`, :meth:`float_size`); the views below read ``ms``'s arrays from then on."""
        self._set_owner(ms)  # (weakly: maxsim.timing.owner)
        ps, l1s, l1a, l2s, l2a = self.geometry
        TI = self.TI
        TI[:] = 0
        TI[T_PAGE_SHIFT], TI[T_L1_SETS], TI[T_L1_ASSOC], TI[T_L2_SETS], TI[T_L2_ASSOC] = ps, l1s, l1a, l2s, l2a
        TI[T_SMS], TI[T_WAYS], TI[T_SEEN_CAP] = self.n_sms, self.ways, self.cap
        self.TT[:] = NO_PAGE
        self.TS[:] = NO_PAGE
        self.TF[TF_L1_MISS], self.TF[TF_WALK] = self.costs
        self.TR[:] = 0.0

    # views into the memory system's current arrays (taken at each use: a copy of the memory
    # system, or a grown I, has its own)
    @property
    def TI(self):
        return self._ms._I[self.bi:self.bi + T_SIZE]

    @property
    def TT(self):
        tt = self.bi + T_SIZE
        return self._ms._I[tt:tt + self.rows * self.ways * 2].reshape(self.rows, self.ways, 2)

    @property
    def TS(self):
        ts = self.bi + T_SIZE + self.rows * self.ways * 2
        return self._ms._I[ts:ts + self.cap]

    @property
    def TF(self):
        return self._ms._F[self.bf:self.bf + TF_SIZE]

    @property
    def TR(self):
        tr = self.bf + TF_SIZE
        return self._ms._F[tr:tr + self.rows * self.ways].reshape(self.rows, self.ways)

    def grown(self, more):
        """A larger copy of the memory system's ``I`` whose record of translated pages has room for
        ``more`` new keys while staying at most half full, or None when it has that room already
        (the memory system takes it as its ``I``)."""
        need = int(self.TI[T_SEEN_N]) + int(more)
        if 2 * need <= self.cap:
            return None
        cap = self.cap
        while 2 * need > cap:
            cap *= 2
        keys = self.TS[self.TS != NO_PAGE].copy()
        new = np.full(self.bi + self.int_size(cap), NO_PAGE, np.int64)
        keep = self.bi + T_SIZE + self.rows * self.ways * 2
        new[:keep] = self._ms._I[:keep]
        self.cap = cap
        new[self.bi + T_SEEN_CAP] = cap
        new[self.bi + T_SEEN_N] = 0
        rehash_seen(keys, new, self.bi)
        return new

    @property
    def sms(self):
        return self.n_sms

    def check_sm(self, sm):
        if not 0 <= sm < self.n_sms:
            raise SimulationError(f"address translation: SM {sm} is not one of the {self.n_sms} SMs of the config")

    def reset_stats(self):
        self.TI[T_LOOKUPS:T_FIRST + 1] = 0

    def stats(self) -> dict:
        TI = self.TI
        return {"tlb_lookups": int(TI[T_LOOKUPS]), "tlb_l1_misses": int(TI[T_L1_MISSES]),
                "tlb_l2_misses": int(TI[T_L2_MISSES]), "tlb_first_touches": int(TI[T_FIRST])}

    def pages_seen(self):
        keys = self.TS[self.TS != NO_PAGE]
        return [sorted((keys[keys % self.n_sms == sm] // self.n_sms).tolist()) for sm in range(self.n_sms)]

    def carry_over(self, other, ms):
        """AddressTranslation.carry_over into the compiled memory system ``ms`` (whose ``I`` may
        grow): the TLBs of ``other`` (same config), every entry ready."""
        l1, l2 = other.sets()
        seen = other.pages_seen()
        keys = np.array(sorted(p * self.n_sms + sm for sm, pages in enumerate(seen) for p in pages), np.int64)
        self.TI[T_SEEN_N] = 0
        self.TS[:] = NO_PAGE
        ms._tlb_room(len(keys))
        rehash_seen(keys, ms._I, self.bi)
        self.TT[:] = NO_PAGE
        self.TR[:] = 0.0
        l1s = self.geometry[1]
        clock = 0
        for sm, sets in enumerate(l1):
            for s, st in enumerate(sets):
                for w, p in enumerate(st):
                    clock += 1
                    self.TT[sm * l1s + s, w] = (p, clock)
        base2 = self.n_sms * l1s
        for s, st in enumerate(l2):
            for w, p in enumerate(st):
                clock += 1
                self.TT[base2 + s, w] = (p, clock)
        self.TI[T_CLOCK] = clock

    def sets(self):
        """The TLBs as the reference holds them: (L1 TLBs, L2 TLB) of OrderedDicts page -> ready,
        least recently used first (a copy, for tests)."""
        TT, TR = self.TT, self.TR
        _, l1s, l1a, l2s, l2a = self.geometry

        def row(r, assoc):
            ways = [w for w in range(assoc) if TT[r, w, E_PAGE] != NO_PAGE]
            ways.sort(key=lambda w: TT[r, w, E_STAMP])
            return OrderedDict((int(TT[r, w, E_PAGE]), float(TR[r, w])) for w in ways)

        l1 = [[row(sm * l1s + s, l1a) for s in range(l1s)] for sm in range(self.n_sms)]
        l2 = [row(self.n_sms * l1s + s, l2a) for s in range(l2s)]
        return l1, l2


@njit(cache=True, inline="always")
def _use(I, tt, ways, r, assoc, page, clock):
    """Way of ``page`` in row ``r`` made most recent, or -1 - the way a new entry takes (an empty
    way, else the least recently used)."""
    empty = -1
    lru = -1
    oldest = 0
    for w in range(assoc):
        e = tt + (r * ways + w) * 2
        p = I[e + E_PAGE]
        if p == page:
            I[clock] += 1
            I[e + E_STAMP] = I[clock]
            return w
        if p == NO_PAGE:
            if empty < 0:
                empty = w
        elif lru < 0 or I[e + E_STAMP] < oldest:
            lru = w
            oldest = I[e + E_STAMP]
    return -1 - (empty if empty >= 0 else lru)


@njit(cache=True, inline="always")
def _fill(I, F, tt, tr, ways, r, w, page, ready, clock):
    e = tt + (r * ways + w) * 2
    I[e + E_PAGE] = page
    I[clock] += 1
    I[e + E_STAMP] = I[clock]
    F[tr + r * ways + w] = ready


@njit(cache=True, inline="always")
def _seen_slot(I, ts, cap, key):
    """Slot of ``key`` in the record of translated pages, or the empty slot where it would go."""
    mask = cap - 1
    h = (key ^ (key >> 7) ^ (key >> 19)) & mask
    for _ in range(cap):
        k = I[ts + h]
        if k == key or k == NO_PAGE:
            return h
        h = (h + 1) & mask
    raise RuntimeError("address translation: the record of translated pages is full (room was not made)")


@njit(cache=True)
def first_touch(I, bi, sm, page):
    """Record that SM ``sm`` translated ``page``; True when it had not before."""
    cap = I[bi + T_SEEN_CAP]
    ts = bi + T_SIZE + (I[bi + T_SMS] * I[bi + T_L1_SETS] + I[bi + T_L2_SETS]) * I[bi + T_WAYS] * 2
    key = page * I[bi + T_SMS] + sm
    h = _seen_slot(I, ts, cap, key)
    if I[ts + h] == key:
        return False
    I[ts + h] = key
    I[bi + T_SEEN_N] += 1
    return True


@njit(cache=True)
def rehash_seen(keys, I, bi):
    for key in keys:
        cap = I[bi + T_SEEN_CAP]
        ts = bi + T_SIZE + (I[bi + T_SMS] * I[bi + T_L1_SETS] + I[bi + T_L2_SETS]) * I[bi + T_WAYS] * 2
        h = _seen_slot(I, ts, cap, key)
        if I[ts + h] != key:
            I[ts + h] = key
            I[bi + T_SEEN_N] += 1


@njit(cache=True)
def pages_known(A, I, bi):
    """Whether the record of translated pages has room for a request of ``A`` (a key per sector
    at most) while staying at most half full (else Python grows it)."""
    return 2 * (I[bi + T_SEEN_N] + A.shape[0]) <= I[bi + T_SEEN_CAP]


@njit(cache=True)
def translate(sm, now, A, I, F, bi, bf):
    """AddressTranslation.translate on the arrays: the cycle the request of sector addresses
    ``A`` (non-negative, pages within the record) from SM ``sm`` at ``now`` may go on to the L2."""
    ps = I[bi + T_PAGE_SHIFT]
    l1s, l1a, l2s, l2a = I[bi + T_L1_SETS], I[bi + T_L1_ASSOC], I[bi + T_L2_SETS], I[bi + T_L2_ASSOC]
    ways = I[bi + T_WAYS]
    base2 = I[bi + T_SMS] * l1s
    tt = bi + T_SIZE
    tr = bf + TF_SIZE
    clock = bi + T_CLOCK
    ready = now
    n = A.shape[0]
    prev = -1
    for j in range(n):
        p = A[j] >> ps
        if p == prev:  # (the usual case: a request's sectors in one page)
            continue
        prev = p
        dup = False
        for k in range(j):  # pages in the order of their first sector
            if A[k] >> ps == p:
                dup = True
                break
        if dup:
            continue
        I[bi + T_LOOKUPS] += 1
        r1 = sm * l1s + p % l1s
        w1 = _use(I, tt, ways, r1, l1a, p, clock)
        if w1 >= 0:
            t = F[tr + r1 * ways + w1]
            if t < now:
                t = now
        else:
            r2 = base2 + p % l2s
            w2 = _use(I, tt, ways, r2, l2a, p, clock)
            if first_touch(I, bi, sm, p):  # the SM's first touch: held as from before
                I[bi + T_FIRST] += 1
                t = now
                if w2 < 0:
                    _fill(I, F, tt, tr, ways, r2, -1 - w2, p, t, clock)
            else:
                I[bi + T_L1_MISSES] += 1
                if w2 >= 0:
                    t = F[tr + r2 * ways + w2]
                    if t < now:
                        t = now
                    t = t + F[bf + TF_L1_MISS]
                else:
                    I[bi + T_L2_MISSES] += 1
                    t = now + F[bf + TF_WALK]
                    _fill(I, F, tt, tr, ways, r2, -1 - w2, p, t, clock)
            _fill(I, F, tt, tr, ways, r1, -1 - w1, p, t, clock)
        if t > ready:
            ready = t
    return ready


@njit(cache=True)
def warm_pages(A, I, F, bi, bf):
    """AddressTranslation.warm on the arrays."""
    ps, l1s, l2s, l2a = I[bi + T_PAGE_SHIFT], I[bi + T_L1_SETS], I[bi + T_L2_SETS], I[bi + T_L2_ASSOC]
    ways, sms, l1a = I[bi + T_WAYS], I[bi + T_SMS], I[bi + T_L1_ASSOC]
    base2 = sms * l1s
    tt = bi + T_SIZE
    tr = bf + TF_SIZE
    clock = bi + T_CLOCK
    for j in range(A.shape[0]):
        p = A[j] >> ps
        r2 = base2 + p % l2s
        w2 = _use(I, tt, ways, r2, l2a, p, clock)
        if w2 < 0:
            _fill(I, F, tt, tr, ways, r2, -1 - w2, p, 0.0, clock)
        for sm in range(sms):
            r1 = sm * l1s + p % l1s
            w1 = _use(I, tt, ways, r1, l1a, p, clock)
            if w1 < 0:
                _fill(I, F, tt, tr, ways, r1, -1 - w1, p, 0.0, clock)
            first_touch(I, bi, sm, p)
