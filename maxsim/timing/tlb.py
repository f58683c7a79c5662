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
  before) puts pages in the L2 TLB as seen by every SM.
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

ADDRESS_BITS = 32  # global memory addresses are 32-bit (maxsim.functional.memory)

# ---- TI: geometry and counters (int64) ----
(T_PAGE_SHIFT, T_L1_SETS, T_L1_ASSOC, T_L2_SETS, T_L2_ASSOC, T_SMS, T_CLOCK, T_LOOKUPS, T_L1_MISSES,
 T_L2_MISSES, T_FIRST, T_SIZE) = range(12)
# ---- TF: costs (float64) ----
TF_L1_MISS, TF_WALK, TF_SIZE = range(3)
# ---- TT fields: per entry (row x way) ----
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
        """The pages of ``sectors`` in the L2 TLB, most recent last, translated at cycle 0, without
        statistics (the state after the reads that warmed the L2: :meth:`MemorySystem.warm`)."""
        ps = self.page_shift
        for a in sectors:
            p = a >> ps
            st2 = self.l2[p % self.l2_sets]
            if p in st2:
                st2.move_to_end(p)
            else:
                if len(st2) >= self.l2_assoc:
                    st2.popitem(last=False)
                st2[p] = 0.0
            for seen in self.seen:
                seen.add(p)

    def sets(self):
        """(L1 TLBs, L2 TLB): per SM and set, per set, an OrderedDict page -> ready, least
        recently used first (a copy)."""
        return ([[OrderedDict(st) for st in sm] for sm in self.l1], [OrderedDict(st) for st in self.l2])

    def carry_over(self, other):
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


class TlbArrays:
    """The same TLBs as arrays for the compiled memory system: ``TI`` (geometry, the LRU clock and
    the counters), ``TF`` (the costs), ``TT`` (row x way x (page, last use): rows ``sm x l1 sets +
    set`` for the L1 TLBs, then the L2 TLB's sets; ``NO_PAGE`` in an empty way), ``TR`` (row x way:
    the cycle the entry's translation is ready) and ``TS`` (SM x page of the 32-bit address space,
    one byte: the SM has translated the page)."""

    def __init__(self, cfg):
        ps, l1s, l1a, l2s, l2a = _geometry(cfg)
        sms = cfg.gpu.sms
        self.TI = np.zeros(T_SIZE, np.int64)
        self.TI[T_PAGE_SHIFT], self.TI[T_L1_SETS], self.TI[T_L1_ASSOC] = ps, l1s, l1a
        self.TI[T_L2_SETS], self.TI[T_L2_ASSOC], self.TI[T_SMS] = l2s, l2a, sms
        self.TF = np.zeros(TF_SIZE, np.float64)
        self.TF[TF_L1_MISS], self.TF[TF_WALK] = cfg.tlb.l1_miss_cycles, cfg.tlb.walk_cycles
        rows = sms * l1s + l2s
        self.TT = np.full((rows, max(l1a, l2a), 2), NO_PAGE, np.int64)
        self.TR = np.zeros((rows, max(l1a, l2a)), np.float64)
        self.TS = np.zeros((sms, max(1, 1 << max(0, ADDRESS_BITS - ps))), np.uint8)

    @property
    def sms(self):
        return int(self.TI[T_SMS])

    def check_sm(self, sm):
        if not 0 <= sm < self.sms:
            raise SimulationError(f"address translation: SM {sm} is not one of the {self.sms} SMs of the config")

    def make_room(self, top_address):
        """Grow ``TS`` to hold the page of ``top_address``; True when it grew (the arrays change)."""
        page = int(top_address) >> int(self.TI[T_PAGE_SHIFT])
        if page < self.TS.shape[1]:
            return False
        size = self.TS.shape[1]
        while size <= page:
            size *= 2
        ts = np.zeros((self.TS.shape[0], size), np.uint8)
        ts[:, :self.TS.shape[1]] = self.TS
        self.TS = ts
        return True

    def reset_stats(self):
        self.TI[T_LOOKUPS:T_FIRST + 1] = 0

    def stats(self) -> dict:
        TI = self.TI
        return {"tlb_lookups": int(TI[T_LOOKUPS]), "tlb_l1_misses": int(TI[T_L1_MISSES]),
                "tlb_l2_misses": int(TI[T_L2_MISSES]), "tlb_first_touches": int(TI[T_FIRST])}

    def pages_seen(self):
        return [np.flatnonzero(row).tolist() for row in self.TS]

    def carry_over(self, other):
        """AddressTranslation.carry_over: the TLBs of ``other`` (same config), every entry ready."""
        l1, l2 = other.sets()
        self.TT[:] = NO_PAGE
        self.TR[:] = 0.0
        l1s = int(self.TI[T_L1_SETS])
        clock = 0
        for sm, sets in enumerate(l1):
            for s, st in enumerate(sets):
                for w, p in enumerate(st):
                    clock += 1
                    self.TT[sm * l1s + s, w] = (p, clock)
        base2 = int(self.TI[T_SMS]) * l1s
        for s, st in enumerate(l2):
            for w, p in enumerate(st):
                clock += 1
                self.TT[base2 + s, w] = (p, clock)
        self.TI[T_CLOCK] = clock
        seen = other.pages_seen()
        top = max((x[-1] for x in seen if x), default=0)
        self.make_room(top << int(self.TI[T_PAGE_SHIFT]))
        self.TS[:] = 0
        for sm, pages in enumerate(seen):
            self.TS[sm, pages] = 1

    def sets(self):
        """The TLBs as the reference holds them: (L1 TLBs, L2 TLB) of OrderedDicts page -> ready,
        least recently used first (a copy, for tests)."""
        TI, TT, TR = self.TI, self.TT, self.TR

        def row(r, assoc):
            ways = [w for w in range(assoc) if TT[r, w, E_PAGE] != NO_PAGE]
            ways.sort(key=lambda w: TT[r, w, E_STAMP])
            return OrderedDict((int(TT[r, w, E_PAGE]), float(TR[r, w])) for w in ways)

        l1s, l1a, l2a = int(TI[T_L1_SETS]), int(TI[T_L1_ASSOC]), int(TI[T_L2_ASSOC])
        sms = int(TI[T_SMS])
        l1 = [[row(sm * l1s + s, l1a) for s in range(l1s)] for sm in range(sms)]
        l2 = [row(sms * l1s + s, l2a) for s in range(int(TI[T_L2_SETS]))]
        return l1, l2


@njit(cache=True, inline="always")
def _use(TT, TR, TI, r, assoc, page):
    """Way of ``page`` in row ``r`` made most recent, or -1 - the way a new entry takes (an empty
    way, else the least recently used)."""
    empty = -1
    lru = -1
    oldest = 0
    for w in range(assoc):
        p = TT[r, w, E_PAGE]
        if p == page:
            TI[T_CLOCK] += 1
            TT[r, w, E_STAMP] = TI[T_CLOCK]
            return w
        if p == NO_PAGE:
            if empty < 0:
                empty = w
        elif lru < 0 or TT[r, w, E_STAMP] < oldest:
            lru = w
            oldest = TT[r, w, E_STAMP]
    return -1 - (empty if empty >= 0 else lru)


@njit(cache=True, inline="always")
def _fill(TT, TR, TI, r, w, page, ready):
    TT[r, w, E_PAGE] = page
    TI[T_CLOCK] += 1
    TT[r, w, E_STAMP] = TI[T_CLOCK]
    TR[r, w] = ready


@njit(cache=True)
def pages_known(A, TI, TS):
    """Whether ``TS`` has room for the page of every address of ``A`` (else Python grows it)."""
    ps = TI[T_PAGE_SHIFT]
    for j in range(A.shape[0]):
        if A[j] >> ps >= TS.shape[1]:
            return False
    return True


@njit(cache=True)
def translate(sm, now, A, TI, TF, TT, TR, TS):
    """AddressTranslation.translate on the arrays: the cycle the request of sector addresses
    ``A`` (non-negative) from SM ``sm`` at ``now`` may go on to the L2."""
    ps = TI[T_PAGE_SHIFT]
    l1s, l1a, l2s, l2a = TI[T_L1_SETS], TI[T_L1_ASSOC], TI[T_L2_SETS], TI[T_L2_ASSOC]
    base2 = TI[T_SMS] * l1s
    ready = now
    n = A.shape[0]
    for j in range(n):
        p = A[j] >> ps
        dup = False
        for k in range(j):  # pages in the order of their first sector
            if A[k] >> ps == p:
                dup = True
                break
        if dup:
            continue
        TI[T_LOOKUPS] += 1
        r1 = sm * l1s + p % l1s
        w1 = _use(TT, TR, TI, r1, l1a, p)
        if w1 >= 0:
            t = TR[r1, w1]
            if t < now:
                t = now
        else:
            r2 = base2 + p % l2s
            w2 = _use(TT, TR, TI, r2, l2a, p)
            if not TS[sm, p]:  # the SM's first touch: held as from before
                TS[sm, p] = 1
                TI[T_FIRST] += 1
                t = now
                if w2 < 0:
                    _fill(TT, TR, TI, r2, -1 - w2, p, t)
            else:
                TI[T_L1_MISSES] += 1
                if w2 >= 0:
                    t = TR[r2, w2]
                    if t < now:
                        t = now
                    t = t + TF[TF_L1_MISS]
                else:
                    TI[T_L2_MISSES] += 1
                    t = now + TF[TF_WALK]
                    _fill(TT, TR, TI, r2, -1 - w2, p, t)
            _fill(TT, TR, TI, r1, -1 - w1, p, t)
        if t > ready:
            ready = t
    return ready


@njit(cache=True)
def warm_pages(A, TI, TT, TR, TS):
    """AddressTranslation.warm on the arrays."""
    ps, l1s, l2s, l2a = TI[T_PAGE_SHIFT], TI[T_L1_SETS], TI[T_L2_SETS], TI[T_L2_ASSOC]
    base2 = TI[T_SMS] * l1s
    for j in range(A.shape[0]):
        p = A[j] >> ps
        r2 = base2 + p % l2s
        w2 = _use(TT, TR, TI, r2, l2a, p)
        if w2 < 0:
            _fill(TT, TR, TI, r2, -1 - w2, p, 0.0)
        for sm in range(TS.shape[0]):
            TS[sm, p] = 1
