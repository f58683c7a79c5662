"""K-loop sampling, the launch's history: the sectors each CTA reads and writes at its place along
K, replayed into the L2 before a sample (:class:`_History`), and the traces of a CTA moved along K
(see :mod:`.kloop`)."""

from __future__ import annotations

import attrs
import heapq
import weakref

import numpy as np

from ...functional.trace import Segment, WarpTrace
from ...jit import njit
from ...timing.summaries import SectorLists, make_summariser
from ..gpu import trace_ctas
from ..sector_lru import SectorLRU, SectorSet
from . import settings
from .settings import HISTORY_FILL, KNOWN_PROBLEMS


def _relocated(jobs, kernel):
    """Copies of CTAs' warp traces whose global/texture addresses are moved to another position in K.

    ``jobs``: ``{cta id: (warp traces, ranges, stores)}``; addresses in a range ``(lo, hi, delta)``
    move by delta (the same instructions further along K). ``stores`` false: the CTA's global
    stores write nothing (the trace of a CTA cut short for a window ends with the epilogue of a
    short K; the real CTA stores its results at its real end, not in the window, and 32 CTAs' worth
    of C tiles there would be as much L2 traffic as a third of the window's reads). Returns
    ``{cta id: warp traces}``. Warps that ran in lockstep share segments (the CTAs of one functional
    launch, all of them): each segment is copied once with all the rows the jobs use, every
    memory record moved in one numpy pass over those rows, and the timing model builds its tables
    once per segment."""
    units = kernel.instructions
    rows_of = {}  # id(segment) -> (segment, {row: cta id}), rows in first-use order
    for cid, (traces, _, _) in jobs.items():
        for tr in traces:
            for seg, row in tr.parts:
                ent = rows_of.get(id(seg))
                if ent is None:
                    ent = rows_of[id(seg)] = (seg, {})
                ent[1].setdefault(row, cid)
    copies = {}  # id(segment) -> (copy, {row: row in the copy})
    for key, (seg, owner) in rows_of.items():
        rows = list(owner)
        new = Segment(seg.warps[rows])
        new.pcs = seg.pcs
        new.mem = _moved_records(seg, rows, [jobs[owner[r]][1] for r in rows], [jobs[owner[r]][2] for r in rows],
                                 units)
        copies[key] = {r: (new, i) for i, r in enumerate(rows)}  # row -> the part in the copy
    out = {}
    for cid, (traces, _, _) in jobs.items():
        moved = []
        for tr in traces:
            t = WarpTrace(tr.warp)
            t.parts = [copies[id(seg)][row] for seg, row in tr.parts]
            moved.append(t)
        out[cid] = moved
    return out

def _moved_records(seg, rows, ranges, stores, units):
    """The memory records of segment ``seg`` for its rows ``rows`` (in that order): ``{position:
    summary}``, a texture or global load's sectors moved by its row's ``ranges``, a global store's
    emptied where its row's ``stores`` is false. The per-warp numbers of all positions are taken in
    one numpy pass, and so are the sector lists (a segment holds hundreds of each: one pass per
    record was most of the time) when the rows' ranges share their bounds."""
    mem = dict.fromkeys(seg.mem)  # (the positions' order)
    rows_a = np.asarray(rows, dtype=np.int64)
    keep_all = all(stores)
    empty = np.zeros(0, np.int64)
    numbers = {}  # (dtype, shape) -> [(position, per-warp numbers)]
    lists = []  # (position, unit, SectorLists)
    for pos, summ in seg.mem.items():
        unit = units[seg.pcs[pos]].unit
        if isinstance(summ, SectorLists):
            lists.append((pos, unit, summ))
        elif isinstance(summ, np.ndarray) and unit not in ("tex", "ldg", "stg"):
            # one number per warp (shared wavefronts, distinct LDC addresses)
            numbers.setdefault((summ.dtype, summ.shape), []).append((pos, summ))
        else:
            vals = [summ[r] for r in rows]
            if unit in ("tex", "ldg"):
                mem[pos] = _shift_rows(vals, ranges)
            elif unit == "stg" and not keep_all:
                mem[pos] = [v if keep else empty for v, keep in zip(vals, stores)]
            else:
                mem[pos] = vals
    for group in numbers.values():
        table = np.stack([summ for _, summ in group])[:, rows_a]
        for (pos, _), taken in zip(group, table):
            mem[pos] = taken
    # (a CTA's rows share one ranges list: each distinct list looked at once)
    spans = {tuple((lo, hi) for lo, hi, _ in rg) for rg in {id(rg): rg for rg in ranges}.values() if rg}
    if lists and len(spans) <= 1:
        mem.update(_moved_lists(lists, rows_a, ranges, next(iter(spans), ()), stores))
    else:
        for pos, unit, summ in lists:
            # the rows' lists at once, kept as one table (the timing model reads it so too)
            sub = summ.take(rows_a)
            if unit in ("tex", "ldg"):
                sub = _shift_lists(sub, ranges)
            elif unit == "stg" and not keep_all:
                sub = _emptied(sub, stores)
            mem[pos] = sub
    return mem

def _moved_lists(lists, rows, ranges, span, stores):
    """:func:`_moved_records` for the sector lists of ``lists`` (``(position, unit, SectorLists)``),
    the rows' ranges all with the bounds ``span`` (or none): {position: SectorLists}."""
    n_rows = len(rows)
    ends = np.stack([summ.ends for _, _, summ in lists]).astype(np.int64)  # position x warp row
    lens = np.diff(ends, axis=1, prepend=0)
    sizes = ends[:, -1] if ends.shape[1] else np.zeros(len(lists), np.int64)
    starts = (np.cumsum(sizes) - sizes)[:, None] + ends - lens  # of each row's list in `flat`
    flat = np.concatenate([summ.flat for _, _, summ in lists]).astype(np.int64, copy=False)
    sub = lens[:, rows]
    sub_flat = sub.ravel()
    before = np.cumsum(sub_flat) - sub_flat
    index = np.repeat(starts[:, rows].ravel() - before, sub_flat) + np.arange(int(sub_flat.sum()))
    a = flat[index]
    row = np.repeat(np.tile(np.arange(n_rows), len(lists)), sub_flat)  # each sector's row
    which = np.repeat(np.arange(len(lists)), n_rows)
    units = np.array([unit for _, unit, _ in lists])
    if span:
        moves = np.isin(units, ("tex", "ldg"))[np.repeat(which, sub_flat)]
        out = a
        for n, (lo, hi) in enumerate(span):
            delta = np.array([rg[n][2] if rg else 0 for rg in ranges], dtype=np.int64)[row]
            out = np.where(moves & (a >= lo) & (a < hi), a + delta, out)
        a = out
    if not all(stores):
        drop = (units == "stg")[:, None] & ~np.asarray(stores, dtype=bool)[None, :]  # position x row
        a = a[~np.repeat(drop.ravel(), sub_flat)]
        sub = np.where(drop, 0, sub)
    new_ends = np.cumsum(sub, axis=1).astype(np.int32)
    bounds = np.cumsum(sub.sum(axis=1))
    out = {}
    for k, (pos, _, _) in enumerate(lists):
        out[pos] = SectorLists(a[bounds[k] - (new_ends[k, -1] if n_rows else 0):bounds[k]], new_ends[k])
    return out

def _shift_rows(arrays, ranges):
    """:func:`_shift` of each sector array by its own ranges (``ranges[i]`` for ``arrays[i]``)
    (:func:`_shift_lists` of them as one table)."""
    lens = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
    flat = np.concatenate(arrays).astype(np.int64, copy=False) if len(arrays) else np.zeros(0, np.int64)
    moved = _shift_lists(SectorLists(flat, np.cumsum(lens).astype(np.int32)), ranges)
    return np.split(moved.flat, np.cumsum(lens)[:-1])

def _shift_lists(lists, ranges):
    """A :class:`~maxsim.timing.summaries.SectorLists` with row i's sectors moved by ``ranges[i]``
    (:func:`_shift`), as a new one; one numpy pass when the ranges differ only in their deltas."""
    spans = {tuple((lo, hi) for lo, hi, _ in rg) for rg in ranges if rg}
    if not spans:
        return lists
    if len(spans) > 1:
        moved = [_shift(lists[i], rg) for i, rg in enumerate(ranges)]
        return SectorLists(np.concatenate(moved) if moved else lists.flat[:0].copy(), lists.ends)
    span, = spans
    a = lists.flat
    row = np.repeat(np.arange(len(ranges)), lists.lengths())
    out = a.copy()
    for n, (lo, hi) in enumerate(span):
        delta = np.array([rg[n][2] if rg else 0 for rg in ranges], dtype=np.int64)[row]
        out = np.where((a >= lo) & (a < hi), a + delta, out)
    return SectorLists(out, lists.ends)

def _emptied(lists, keep):
    """A :class:`~maxsim.timing.summaries.SectorLists` with the rows whose ``keep`` is false empty."""
    keep = np.asarray(keep, dtype=bool)
    lens = lists.lengths()
    return SectorLists(lists.flat[np.repeat(keep, lens)], np.cumsum(np.where(keep, lens, 0)).astype(np.int32))

def _shift(sectors, ranges):
    a = np.asarray(sectors, dtype=np.int64)
    out = a.copy()
    for lo, hi, d in ranges:
        out = np.where((a >= lo) & (a < hi), a + d, out)
    return out

def _units_sectors(traces, kernel, groups):
    """For each group of units in ``groups`` (e.g. ("tex", "ldg"): the texture fetches and global
    loads), the distinct sectors (sorted byte addresses) the warp traces ``traces`` access with
    instructions of those units: one pass over the traces."""
    units = kernel.instructions
    rows_of = {}  # id(segment) -> (segment, the rows the warps ran it as): the warps share segments
    for tr in traces:
        for seg, row in tr.parts:
            ent = rows_of.get(id(seg))
            if ent is None:
                ent = rows_of[id(seg)] = (seg, set())
            ent[1].add(row)
    outs = [[] for _ in groups]
    for seg, rows in rows_of.values():
        if not seg.mem:
            continue
        rows = sorted(rows)
        lo, hi = rows[0], rows[-1] + 1
        for out, at in zip(outs, _group_positions(seg, units, groups)):
            for pos in at:
                summ = seg.mem[pos]
                if hi - lo == len(rows) and isinstance(summ, SectorLists):
                    # a CTA's warps are consecutive rows: their lists are one run of the flat array
                    out.append(summ.flat[(int(summ.ends[lo - 1]) if lo else 0):int(summ.ends[hi - 1])])
                else:
                    out.extend(summ[r] for r in rows)
    return [_sorted_distinct(np.concatenate(out).astype(np.int64, copy=False)) if out else np.zeros(0, np.int64)
            for out in outs]


_GROUP_POSITIONS = {}  # id(segment) -> (the segment, weakly; units, groups, _group_positions' lists)
GROUP_POSITIONS = 64  # segments whose lists are kept (a simulator setting: a functional batch's CTAs,
# taken one after another, share a few segments)


def _group_positions(seg, units, groups):
    """Per group of units in ``groups``, the positions of segment ``seg``'s memory records of
    instructions of those units (in the records' order); kept for the last GROUP_POSITIONS
    segments."""
    hit = _GROUP_POSITIONS.get(id(seg))
    if hit is not None and hit[0]() is seg and hit[1] is units and hit[2] == groups:
        return hit[3]
    at = [(pos, units[seg.pcs[pos]].unit) for pos in seg.mem]
    lists = [[pos for pos, unit in at if unit in wanted] for wanted in groups]
    key = id(seg)

    def gone(_, key=key):  # the segment has died: let go of its entry at once
        hit = _GROUP_POSITIONS.get(key)
        if hit is not None and hit[0]() is None:
            del _GROUP_POSITIONS[key]
    _GROUP_POSITIONS.pop(key, None)
    while len(_GROUP_POSITIONS) >= GROUP_POSITIONS:
        del _GROUP_POSITIONS[next(iter(_GROUP_POSITIONS))]
    _GROUP_POSITIONS[key] = (weakref.ref(seg, gone), units, groups, lists)
    return lists


@njit(cache=True)
def _sorted_distinct(a):
    """``np.unique`` of an int64 array (its distinct values, sorted), in one compiled pass."""
    out = np.sort(a)
    m = 0
    for i in range(out.shape[0]):
        if m == 0 or out[i] != out[m - 1]:
            out[m] = out[i]
            m += 1
    return out[:m].copy()  # (not a view of the longer array: histories keep many)


_KNOWN = {}  # the sectors of CTAs traced for a history, by problem (see _known_sectors), latest last

def _record():
    """What a history learns of a problem's CTAs: each one's sectors for slice 0 of K ("base") and
    its stores, its move per slice ("steps", see :meth:`_History.sectors`), and the textures."""
    return {"base": {}, "stores": {}, "steps": {}, "textures": None}

def _known_sectors(kernel, grid, block, build, k_step, cfg):
    """The record ``{"base", "stores", "textures"}`` a :class:`_History` fills with the sectors of
    the CTAs it traces. Histories of the same problem share it: the same code (whatever registers
    it declares: they change the residency, not what a CTA reads and writes) on the same grid and
    the same data (``build.key``, set by the workload; without it nothing is shared), summarised
    in sectors of the same size (the config's trace summariser). Comparisons
    predict one size at several residencies (sgemm_64 and maxas's Max64-3) one after the other,
    and the second then traces none of the CTAs the first did."""
    key = getattr(build, "key", None)
    if key is not None:
        try:
            key = (attrs.evolve(kernel, reg_cnt=0), tuple(grid), block, k_step, key, make_summariser(cfg).key)
            hash(key)
        except TypeError:
            key = None
    if key is None:
        return _record()
    rec = _KNOWN.pop(key, None)
    if rec is None:
        rec = _record()
    _KNOWN[key] = rec
    while len(_KNOWN) > KNOWN_PROBLEMS:
        del _KNOWN[next(iter(_KNOWN))]
    return rec

class _History:
    """What the L2 holds at a cycle of the launch: the reads of the CTAs that ran before it.

    From the dispatcher model's schedule, each CTA reads its data for the ``k_step``-wide slice q of
    K at ``start + (q + 1/2) / iterations x (end - start)``. Going back in time from the cycle asked
    for, slices are collected until they name ``HISTORY_FILL`` times the L2's capacity in distinct
    sectors (older ones would have been evicted), then replayed into the L2 oldest first. A CTA's
    sectors for slice q are those it reads for slice 0 (traced once at K = k_step) moved by ``shift``;
    a CTA that has ended also wrote its results at its end (dirty sectors, to be written back).
    """

    def __init__(self, kernel, grid, block, build, shift, cfg, k_step, iters, gx, batch):
        self.batch = batch  # CTAs traced per functional launch
        self.kernel, self.grid, self.block, self.build, self.shift = kernel, grid, block, build, shift
        self.cfg, self.k_step, self.iters, self.gx = cfg, k_step, max(1, int(iters)), gx
        self._known = _known_sectors(kernel, grid, block, build, k_step, cfg)
        self.base = self._known["base"]  # CTA index -> its sectors for slice 0
        self.stores = self._known["stores"]  # CTA index -> the sectors its epilogue stores
        self._linear = None  # whether ``shift`` moves the data in proportion to K (see sectors)
        self.period = None  # cycles between this launch and the same one before it (back-to-back), or None

    @property
    def textures(self):
        return self._known["textures"]

    def sectors(self, i, q):
        """The sectors CTA ``i`` reads for slice ``q`` of K: its slice-0 sectors moved by ``shift``.
        When the shift is linear in K (the same ranges, deltas proportional to the distance, as for
        data stored K-major), each sector's move per slice is computed once per CTA and slice q is
        ``base + q x step``."""
        step = self._step(i)
        if step is None:
            return _shift(self.base[i], self.shift(self.textures, q * self.k_step))
        return self.base[i] + q * step

    def _step(self, i):
        steps = self._known["steps"]
        if i not in steps:
            one = self.shift(self.textures, self.k_step)
            if self._linear is None:  # the shift of the problem's data: checked once
                two = self.shift(self.textures, 2 * self.k_step)
                self._linear = len(one) == len(two) and all(
                    (lo1, hi1, 2 * d1) == (lo2, hi2, d2) for (lo1, hi1, d1), (lo2, hi2, d2) in zip(one, two))
            steps[i] = _shift(self.base[i], one) - self.base[i] if self._linear else None
        return steps[i]

    def _trace(self, indices):
        need = [i for i in indices if i not in self.base]
        if not need:
            return
        params, memory, textures = self.build(self.k_step)
        self._known["textures"] = textures
        ids = [(i % self.gx, i // self.gx) for i in need]
        _, traced = trace_ctas(self.kernel, self.grid, self.block, params, memory, textures, self.cfg, ids,
                               timing_only=True)
        for i, (_, traces) in zip(need, traced):
            self.base[i], self.stores[i] = _units_sectors(traces, self.kernel, (("tex", "ldg"), ("stg",)))

    def writeback_time(self, schedule, until):
        """The cycle at which the launch first makes the L2 write a dirty sector back: its reads,
        slice by slice, and its stores, in time order as in :meth:`warm`, go through an L2 of the
        config's capacity kept as one least-recently-used list of sectors (the sets' hashing spreads
        a stream evenly over them; :mod:`maxsim.gpu.sector_lru`), and the first eviction of a stored
        sector is the answer. None
        when that does not happen before ``until`` or the kernel stores nothing.

        The replay starts at the launch's first store (the end of its first CTA): in an LRU list
        of capacity C a sector is evicted exactly when C other distinct sectors have been accessed
        since its own last access, so what was read before the first dirty sector entered cannot
        change when a dirty one first leaves (the reads before it are left out, an event at that
        cycle or later kept, and the answer is the one of the whole replay)."""
        if self.shift is None:
            return None
        capacity = self.cfg.l2.size // self.cfg.l2.sector
        iters = self.iters
        order = sorted(range(len(schedule)), key=lambda i: schedule[i][1])
        first_store = min((e for _, s, e in schedule if s < until), default=None)
        if first_store is None or first_store >= until:
            return None

        def when(i, q):
            _, s, e = schedule[i]
            return e if q < 0 else s + (q + 0.5) / iters * (e - s)

        def first_event(i):
            """CTA i's first event at or after the first store: (time, i, slice; -1: its store)."""
            _, s, e = schedule[i]
            q = 0
            if first_store > s:  # (then e > s: no CTA ends before the first store)
                q = max(0, int((first_store - s) / (e - s) * iters - 0.5))
                while q > 0 and when(i, q - 1) >= first_store:
                    q -= 1
                while q < iters and when(i, q) < first_store:
                    q += 1
            if q >= iters:
                return (e, i, -1)
            return (when(i, q), i, q)

        lru = SectorLRU(capacity)
        heap = []
        nxt = 0
        while True:
            while nxt < len(order) and (not heap or schedule[order[nxt]][1] <= heap[0][0]):
                i = order[nxt]
                if schedule[i][1] >= until:
                    nxt = len(order)
                    break
                nxt += 1
                heapq.heappush(heap, first_event(i))
            if not heap:
                return None
            t, i, q = heapq.heappop(heap)
            if t >= until:
                return None
            if i not in self.base:
                # one functional launch for this CTA, the others already running (in the heap) and
                # the next to start, up to a batch (a launch costs tens of ms before its first CTA)
                want = [i] + [x for _, x, _ in sorted(heap) if x not in self.base]
                want += [x for x in order[nxt:nxt + self.batch] if x not in self.base]
                self._trace(sorted(list(dict.fromkeys(want))[:self.batch]))
                if not any(len(v) for v in self.stores.values()):
                    return None
            if q < 0:
                secs, dirty = self.stores[i], True
            else:
                secs, dirty = self.sectors(i, q), False
                heapq.heappush(heap, (when(i, q + 1 if q + 1 < iters else -1), i, q + 1 if q + 1 < iters else -1))
            if lru.access(secs, dirty):
                return t

    def warm(self, ms, schedule, t):
        """Put into ``ms``'s L2 what it holds at cycle ``t`` of the launch ``schedule``. With a
        ``period``: the launch follows the same launch, ``period`` cycles earlier (back-to-back
        launches), whose reads and stores count as the history before the launch's own."""
        if self.shift is None:
            return
        offsets = (0.0,) if self.period is None else (0.0, float(self.period))
        capacity = HISTORY_FILL * self.cfg.l2.size // self.cfg.l2.sector
        iters = self.iters
        heap = []  # (-time, CTA index, slice (-1: its stores), offset of its launch)
        for off in offsets:
            for i, (_, s, e) in enumerate(schedule):
                s, e = s - off, e - off
                if s >= t:
                    continue
                if e <= t:  # ended: its stores are the most recent thing it did (slice -1)
                    heap.append((-e, i, -1, off))
                    continue
                # the latest slice read before t
                q = min(iters - 1, int((t - s) / (e - s) * iters - 0.5)) if e > s else iters - 1
                if q >= 0:
                    heap.append((-(s + (q + 0.5) / iters * (e - s)), i, q, off))
        if not heap:
            return
        heapq.heapify(heap)
        picked = []
        seen = SectorSet(capacity)
        while heap and len(seen) < capacity:
            negt, i, q, off = heapq.heappop(heap)
            if i not in self.base:
                # trace this CTA with the most recent others not yet traced (one functional launch)
                batch = list(dict.fromkeys(x for _, x, _, _ in sorted(heap) if x not in self.base and x != i))
                self._trace(sorted(batch[:self.batch - 1] + [i]))
            _, s, e = schedule[i]
            s, e = s - off, e - off
            if q < 0:
                secs = self.stores[i]
                q = iters
            else:
                secs = self.sectors(i, q)
            picked.append((secs, q == iters))
            seen.add(secs)
            if q > 0:
                heapq.heappush(heap, (-(s + (q - 0.5) / iters * (e - s)), i, q - 1, off))
        # oldest first; a run of reads (or of stores) in one call (the memory system takes each
        # call's sectors in order)
        picked.reverse()
        start = 0
        for j in range(1, len(picked) + 1):
            if j == len(picked) or picked[j][1] != picked[start][1]:
                run = [secs for secs, _ in picked[start:j]]
                ms.warm(np.concatenate(run) if len(run) > 1 else run[0], picked[start][1])
                start = j
        if settings.TLB_HISTORY:
            pages = self.pages_read(schedule, t)
            if pages.size:
                ms.warm_tlb(pages)

    def page_period(self, margin=True):
        """Main-loop iterations between two crossings of a TLB page (``tlb.page_bytes``) by a CTA
        moving along K through the data ``shift`` moves, when that data spans more pages over the
        launch's K than the L2 TLB holds (else None: CTAs sweeping it in K order find their pages
        translated). Data stored K-major (SGEMM's A and B) moves ``ld x 4`` bytes per row of K, so a
        CTA enters a new page every ``page / (ld x 4 x k_step)`` iterations (N = 8,192 on the
        GTX 980: 8). Of several data moving at different rates, the fastest's period. ``margin``:
        count a page more for each datum (a CTA whose rows straddle a page boundary holds two);
        without it, the pages the data span (A and B at N = 4,096 on the GTX 980: exactly the L2
        TLB's 64, and no walk in the full simulation)."""
        if self.shift is None:
            return None
        textures = self.textures
        if textures is None:
            _, _, textures = self.build(self.k_step)
        page = self.cfg.tlb.page_bytes
        moves = [abs(d) for lo, hi, d in self.shift(textures, self.k_step) if hi > lo and d]
        if not moves:
            return None
        pages = sum(m * self.iters / page + (1 if margin else 0) for m in moves)
        if pages <= self.cfg.tlb.l2_entries:
            return None
        return page / max(moves)

    def pages_read(self, schedule, t):
        """The pages (``tlb.page_bytes``, as byte addresses) of the data ``shift`` moves along K that
        the launch's CTAs (and, with a ``period``, the launch before) read before cycle ``t``, least
        recently read first: the order in which the TLBs saw them. CTA i reads slice q at
        ``start + (q + 1/2) / iterations x (end - start)``, as in :meth:`warm`. The L2 replay above
        puts into the TLBs only the pages of the sectors the L2 still holds (the last few
        iterations); a launch whose A and B span more pages than the L2 TLB holds sweeps them in K
        order, wave after wave, and a page comes back to the TLBs after the others have evicted it:
        a walk in the full simulation. Without the whole history, a window's SMs would find such a
        page never translated, which costs nothing (:mod:`maxsim.timing.tlb`). A page no CTA read
        before ``t`` is left out (its first touch is free, as in the launch)."""
        if self.shift is None or self.textures is None or not schedule:
            return np.zeros(0, np.int64)
        page_shift = self.cfg.tlb.page_bytes.bit_length() - 1
        iters = self.iters
        q = np.arange(iters, dtype=np.int64)
        spans = []  # per page: (page, first slice that reads it, last slice that reads it)
        for lo, hi, delta in self.shift(self.textures, self.k_step):
            if hi <= lo:
                continue
            first = (lo + q * delta) >> page_shift
            last = (hi - 1 + q * delta) >> page_shift
            for p in np.unique(np.concatenate([first, last])):
                on = np.flatnonzero((first <= p) & (last >= p))
                spans.append((int(p), int(on[0]), int(on[-1])))
        if not spans:
            return np.zeros(0, np.int64)
        sched = np.asarray([(s, e) for _, s, e in schedule], dtype=float)
        offsets = (0.0,) if self.period is None else (0.0, float(self.period))
        latest = {}
        for off in offsets:
            s, e = sched[:, 0] - off, sched[:, 1] - off
            length = np.maximum(e - s, 1e-9)
            # the last slice each CTA read before t (all of them once it ended)
            done = np.minimum(iters - 1, np.floor((t - s) / length * iters - 0.5)).astype(np.int64)
            live = (s < t) & (done >= 0)
            s, length, done = s[live], length[live], done[live]
            if not done.size:
                continue
            for p, q0, q1 in spans:
                read = done >= q0
                if read.any():
                    r = np.minimum(done[read], q1)
                    when = float(np.max(s[read] + (r + 0.5) / iters * length[read]))
                    if when > latest.get(p, -np.inf):
                        latest[p] = when
        order = sorted(latest, key=lambda p: (latest[p], p))
        return np.asarray(order, dtype=np.int64) << page_shift
