"""Sampling across waves: a launch of many waves of CTAs, whatever its kernel, predicted from a few
one-wave chunks simulated in full detail (every SM, the shared L2 and DRAM, the block dispatcher).

The functional run covers the whole grid (every output computed), a batch of CTAs at a time; as it
goes, each CTA's warp instructions are counted and its sectors noted (what it reads and what it
stores), and the CTAs of the chunks chosen in advance (:func:`chunk_starts`: the first wave, then
``chunks - 1`` more spread over the launch) are kept. Each chunk is simulated as soon as its CTAs
have run: its first wave of CTAs dealt to the SMs as the dispatcher deals the launch's first wave
(together, or spread over a CTA period: ``chunk_start`` in ``methods.toml``), on an L2 that
holds what the CTAs just before it read and stored (as many as ``history_fill`` L2 capacities;
their stores dirty), so that it sees the hits and the write-backs a wave in mid-launch sees.

Extrapolating (:func:`extrapolate`): the CTAs are grouped by the work they do, their warp
instructions from the functional run, and a CTA's duration is that of the sampled CTAs of its group
(groups with no sampled CTA: the line through the sampled CTAs' durations against their
instructions), so triangular loops, boundary CTAs and divergent CTAs weigh what they cost. The
dispatcher model (:func:`~maxsim.gpu.sampling.dispatcher.dispatch`) runs every CTA of the launch with
those durations (the first wave: its measured ones) and the launch takes its makespan. The memory
counters are the chunks' scaled by the launch's warp instructions over theirs. The interval comes
from the spread between the chunks: each chunk's measured cycles over its CTAs' modelled ones, two
standard errors of their mean either side, widened to the launch as its first chunk measured its
CTAs that did the work of CTAs measured in mid-launch (the launch's own start), and to the method's
worst measured error on the suite (``least_half_width``).
The launch takes at least its DRAM time (:func:`dram_floor`: a chunk starts with no backlog of
write-backs and runs a DRAM-saturated launch's CTAs fast).

For timing only, the functional run covers only the CTAs the prediction needs (:func:`needed`):
the others' warp instructions are estimated from a stratified sample (:func:`estimated`).
"""

from __future__ import annotations

import bisect
import collections

import attrs
import numpy as np

from ...functional.trace import narrowed
from ...jit import njit
from ...timing.clock import PROGRESS_CYCLES
from ...timing.memory_core import warm_sectors
from ..gpu import AHEAD_CTAS, deal_first_wave, round_robin, run_sms, stream_ctas
from .dispatcher import makespan as laid_out
from .kloop_history import _units_sectors
from .records import _add, _scale, memory_counters
from .settings import SETTINGS

_W = SETTINGS["waves"]
MIN_WAVES = _W["min_waves"]
CHUNKS = _W["chunks"]
MIN_CHUNKS = _W["min_chunks"]
HISTORY_FILL = _W["history_fill"]
HISTORY_SPARE = _W["history_spare"]
GROUPS = _W["groups"]
CHUNK_WAVES = _W["chunk_waves"]
MEASURED_WAVE = _W["measured_wave"]
CHUNK_START = _W["chunk_start"]
if CHUNK_START not in ("together", "staggered"):
    raise ValueError(f"methods.toml [waves] chunk_start {CHUNK_START!r}: expected 'together' or 'staggered'")
INTERVAL_SE = _W["interval_standard_errors"]
COUNTED = _W["counted"]
COUNTED_SHARE = _W["counted_share"]
AGREEMENT = _W["agreement"]
LEAST_HALF_WIDTH = _W["least_half_width"]


def applies(n_ctas, slots) -> bool:
    """Whether a launch of ``n_ctas`` CTAs on a GPU of ``slots`` CTA slots is sampled across waves."""
    return n_ctas >= MIN_WAVES * slots


def chunk_starts(n_ctas, slots, chunks=None) -> list:
    """The first CTA index of each chunk of ``CHUNK_WAVES`` waves: 0 (the first wave, as the launch
    starts it), then ``MIN_CHUNKS - 1`` centred on equal parts of the rest of the launch (the chunks
    always simulated), then up to ``chunks - MIN_CHUNKS`` (default ``CHUNKS``) centred on equal
    parts of what is left after them (simulated only when the chunks before disagree: see
    :func:`more_chunks`), as many of those as fit whole."""
    chunks = CHUNKS if chunks is None else chunks
    span = CHUNK_WAVES * slots
    base = _spread_over(span, n_ctas, min(chunks, MIN_CHUNKS) - 1, span)
    out = [0] + base
    if chunks > MIN_CHUNKS:
        after = (base[-1] if base else 0) + span
        out += _spread_over(after, n_ctas, chunks - MIN_CHUNKS, span)
    return sorted(set(out))


def _spread_over(a, b, count, span) -> list:
    """``count`` chunks of ``span`` CTAs centred on equal parts of the CTAs ``a`` to ``b``, as many
    as fit there without overlapping."""
    count = min(count, (b - a) // span) if count > 0 else 0
    if count <= 0:
        return []
    part = (b - a) / count
    return [int(min(max(a, round(a + (c + 0.5) * part - span / 2)), b - span)) for c in range(count)]


def more_chunks(chunks) -> bool:
    """Whether the chunks beyond the first ``MIN_CHUNKS`` are simulated: when the spread between the
    chunks simulated (:func:`chunk_spread`) is wider than ``agreement`` (below it the interval's
    least half-width, ``least_half_width``, is wider than the spread anyway)."""
    return chunk_spread(chunks) > AGREEMENT


def chunk_spread(chunks) -> float:
    """The half-width of the interval the chunks in mid-launch (``first`` > 0) give by their spread,
    relative: ``INTERVAL_SE`` standard errors of the mean of each chunk's measured cycles over those
    :func:`durations` models for its CTAs (from the chunks' own CTAs' warp instructions); infinite
    with fewer than two such chunks."""
    later = [c for c in chunks if c.first > 0]
    if len(later) < 2:
        return float("inf")
    ids = sorted({i for c in later for i, _, _ in c.durations})
    at = {i: k for k, i in enumerate(ids)}
    instr = np.zeros(len(ids), dtype=np.int64)
    for c in later:
        for i, w, _ in c.durations:
            instr[at[i]] = w
    own = [attrs.evolve(c, durations=tuple((at[i], w, d) for i, w, d in c.durations)) for c in later]
    dur = durations(instr, own)
    ratios = np.array([sum(d for _, _, d in c.durations) / sum(dur[i] for i, _, _ in c.durations) for c in own])
    return float(INTERVAL_SE * ratios.std(ddof=1) / np.sqrt(len(ratios)) / ratios.mean())


@attrs.frozen
class Chunk:
    """One simulated wave: its CTA indices, their warp instructions and measured durations, the
    chunk's cycles and memory counters."""
    first: int
    durations: tuple  # (CTA index, warp instructions, cycles from its start to its end) of its middle wave
    early: tuple  # the same of its waves before that one
    cycles: float
    memory: dict
    flops: float = 0.0
    instructions: int = 0  # warp instructions of all its CTAs
    dirty_start: float = 0.0  # bytes of dirty L2 sectors when it started (after the warming) ...
    dirty_end: float = 0.0  # ... and when its last CTA ended
    history: int = 0  # sectors its L2 was warmed with (read and stored by the CTAs before it)
    steady: dict = None  # memory counters over its measured wave's span (None: not taken) ...
    steady_instructions: float = 0.0  # ... and the warp instructions issued in it


@attrs.frozen
class WavesPrediction:
    cycles: float
    flops: float  # the launch's: the chunks' scaled as the memory counters
    interval: tuple
    simulated_share: float
    memory: dict
    chunks: tuple
    waves: float
    details: dict


def _simulate_chunk(kernel, block, cfg, items, history, instr, first, per_sm, period=None, hazards=None):
    """One chunk: ``items`` ((CTA index, cta id, warp traces) of ``CHUNK_WAVES`` waves) on every
    SM, the first wave dealt round-robin and the others by the block dispatcher, after the L2 was
    warmed with ``history`` ((read sectors, stored sectors) per CTA, oldest first). The CTAs of
    its middle wave start as slots free, among CTAs that run on: their durations are those of a
    CTA in mid-launch. ``period``: the first wave's CTAs start spread over this many cycles (slot
    ``k`` of an SM ``k / per_sm`` of it late, the SMs in between), as the CTAs of a launch in
    mid-course do once the dispatcher has staggered them (a full simulation of a 2-D stencil:
    its waves start together, then spread over a whole CTA period by the fourth wave); None: together,
    as the launch's first wave."""
    from .kloop_run import _memory_system
    ms = _memory_system(cfg)
    warm(ms, history)
    dirty_start = _dirty_bytes(ms, cfg)
    index_of = {cid: i for i, cid, _ in items}
    sms_n = cfg.gpu.sms
    dealt = [(cid, tr) if period is None or p >= per_sm * sms_n else
             (cid, tr, int((p // sms_n + (p % sms_n) / sms_n) * period / per_sm))
             for p, (_, cid, tr) in enumerate(items)]
    # (the later waves a CtaQueue's: the dispatcher takes up to AHEAD_CTAS of them at once, their
    # traces flattened in one pass)
    placement, queue = round_robin(iter(dealt), sms_n, per_sm, ready=lambda: AHEAD_CTAS)
    dispatch_from = deal_first_wave(placement, cfg) if period is None else 0  # (gpu.first_wave)
    dealt = None
    items = None
    counts = _Counts()
    sms = run_sms(kernel, block, cfg, placement, ms, queue=queue, hazards=hazards, keep_branch_times=False,
                  watch=counts, dispatch_from=dispatch_from)
    log = sorted((index_of[cid], s, e) for sm in sms for cid, s, e in sm.cta_log)
    cycles = max((e for _, _, e in log), default=0)
    slots = per_sm * cfg.gpu.sms
    waves = [tuple((i, int(instr[i]), float(e - s)) for i, s, e in log if first + w * slots <= i < first + (w + 1) * slots)
             for w in range(CHUNK_WAVES)]
    m = min(MEASURED_WAVE, len([w for w in waves if w]) - 1)
    lo = first + m * slots
    span = [(s, e) for i, s, e in log if lo <= i < lo + slots]
    steady = counts.between(min(s for s, _ in span), max(e for _, e in span)) if m > 0 and span else None
    return Chunk(first, waves[m], sum(waves[:m], ()), float(cycles),
                 memory_counters(ms, cycles, sms), float(sum(sm.stats.flops for sm in sms)),
                 int(sum(int(instr[i]) for i in index_of.values())), dirty_start, _dirty_bytes(ms, cfg),
                 int(sum(len(r) + len(w) for r, w in history)), *(steady or (None, 0.0)))


class _Counts:
    """The progress report of a chunk's run (see :func:`maxsim.gpu.gpu.run_sms`'s ``watch``): at the
    end of every window of ``PROGRESS_CYCLES`` the memory system's additive counters, the SMs'
    L1/texture sector counts and their warp instructions issued; :meth:`between` gives their
    growth over a span of whole windows. Kept only when the SMs are the compiled core run by the
    compiled clock (whose reports come at the end of each window)."""

    def __init__(self):
        self.rows = []
        self.sms = self.ms = None

    def start(self, sms, ms):
        from ...timing.clock import clock_name
        if clock_name(None) == "compiled" and all(getattr(sm, "core", None) == "compiled" for sm in sms):
            self.sms, self.ms = list(sms), ms

    def __call__(self, done, total=None, *_):
        if done is None or self.sms is None:
            return
        from ...timing import core as K
        st = self.ms.stats(counts_only=True)
        row = {k: float(v) for k, v in st.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
               and k != "elapsed_cycles"}
        for key, field, g in (("tex_sector_hits", "sector_hits", K.G_L1_HITS),
                              ("tex_sector_misses", "sector_misses", K.G_L1_MISSES),
                              ("tex_pending_hits", "pending_hits", K.G_L1_PENDING)):
            row[key] = float(sum(getattr(sm.l1, field) + int(sm._G[g]) for sm in self.sms))
        row["issued"] = float(sum(sm.issued() for sm in self.sms))
        self.rows.append(row)

    def between(self, t0, t1):
        """``(counters, warp instructions issued)`` over the whole windows from cycle ``t0`` to
        ``t1``; None when fewer than two windows lie between them."""
        a, b = -(-int(t0) // PROGRESS_CYCLES), int(t1) // PROGRESS_CYCLES  # window ends: row n - 1 is cycle n x W
        b = min(b, len(self.rows))
        if b - a < 2 or a < 1:
            return None
        r0, r1 = self.rows[a - 1], self.rows[b - 1]
        d = {k: r1[k] - r0.get(k, 0.0) for k in r1 if k != "issued"}
        n = r1["issued"] - r0["issued"]
        return (d, n) if n > 0 else None


def warm(ms, history):
    """``ms.warm`` of each CTA's reads, then its stores (dirty), of ``history`` ((read sectors,
    stored sectors) per CTA, oldest first): with the compiled memory system, in one compiled call."""
    from ...timing.memory_core import F_SIZE, I_SIZE, CompiledMemorySystem
    from ...timing.tlb import warm_pages
    runs = [(x, d) for pair in history for x, d in zip(pair, (False, True)) if len(x)]
    if not runs:
        return
    if not isinstance(ms, CompiledMemorySystem):
        for x, d in runs:
            ms.warm(x, d)
        return
    a = np.concatenate([x for x, _ in runs]).astype(np.int64, copy=False)
    if a.min() < 0:
        ms.warm(a)  # (the error it gives a negative address)
    ends = np.cumsum([len(x) for x, _ in runs])
    dirty = np.array([d for _, d in runs], dtype=np.bool_)
    # the sectors whose page is not the one before's: a sector in the same page as the sector just
    # warmed would only make that page, the most recent in every TLB, most recent again (the order
    # of the TLBs' entries, all that their replacement reads, stays the same)
    pages = a >> ms.tlb.geometry[0]
    turns = np.empty(pages.size, dtype=np.bool_)
    turns[:1] = True
    np.not_equal(pages[1:], pages[:-1], out=turns[1:])
    # room for the (page, SM) pairs the warming may record: every SM's each distinct page (not each
    # sector's: the record of translated pages would be grown to tens of megabytes per chunk)
    ms._tlb_room(np.unique(pages[turns]).size * ms.tlb.n_sms)
    _warm_runs(a, ends, dirty, ms._P, ms._T, ms._LINES, ms._READY, ms._I)
    warm_pages(a[turns], ms._I, ms._F, I_SIZE, F_SIZE)


@njit(cache=True)
def _warm_runs(a, ends, dirty, P, T, LINES, READY, I):
    """The compiled L2's ``warm_sectors`` of each run ``a[ends[k - 1]:ends[k]]``, dirty or not."""
    start = 0
    for k in range(ends.shape[0]):
        warm_sectors(a[start:ends[k]], dirty[k], P, T, LINES, READY, I)
        start = ends[k]


def _dirty_bytes(ms, cfg) -> float:
    """Bytes of the dirty sectors the L2 of ``ms`` holds."""
    return float(sum(ms.l2.dirty_sectors(s) for s in range(cfg.l2.slices)) * cfg.l2.sector)


def stream_and_sample(stream, kernel, block, cfg, per_sm, keep=0, progress=None, look=None):
    """Run ``stream`` (a :class:`~maxsim.functional.launch.LaunchStream` with a trace recorder of
    ``cfg``) to its end, simulating each chunk as soon as its CTAs have run; a stream made with
    ``warp_counts`` records the traces of only the batches of CTAs whose traces are read (the
    others' warp instructions are counted). Returns the warp
    instructions of every CTA of the grid (in launch order; -1 for a CTA the stream did not run:
    see :func:`needed`), the chunks, and copies of the first ``keep`` CTAs' warp traces (the timed
    SM's). The sectors of a CTA are taken only when it may be in the history of a chunk (the CTAs
    before it whose sectors fill ``HISTORY_FILL`` L2 capacities, counted from the first CTAs'
    sectors, with room to spare; ``look``: that many CTAs, known beforehand; from each chunk
    on, as many as its history held, with room to spare)."""
    gx, gy = stream.grid
    n = gx * gy
    slots = per_sm * cfg.gpu.sms
    span = CHUNK_WAVES * slots
    starts = chunk_starts(n, slots)
    member = {}
    for c, s in enumerate(starts):
        for i in range(s, min(n, s + span)):
            member.setdefault(i, c)
    base = min(MIN_CHUNKS, len(starts))  # the chunks always simulated (the others: see more_chunks)
    skipped = []
    instr = np.full(n, -1, dtype=np.int64)
    capacity = HISTORY_FILL * cfg.l2.size // cfg.l2.sector
    history, held = collections.deque(), 0
    waiting = {c: [] for c in range(len(starts))}
    warm_of = {}
    chunks, kept = [], []
    probe = min(n, 64)
    look, seen = n if look is None else look, 0

    def before_chunk(i):  # whether CTA i is among the ``look`` CTAs before a chunk
        k = bisect.bisect_right(starts, i)
        return k < len(starts) and starts[k] - i <= look

    def wanted(i):  # whether a CTA's traces are read: timed SM, chunk, sectors of a history
        return i < keep or i < probe or i in member or before_chunk(i)
    counted = stream._state.get("warp_counts") is not None
    if counted:
        stream.record = lambda batch: any(wanted(y * gx + x) for x, y in batch)
    for p, (cid, traces) in enumerate(stream_ctas(stream)):
        i = cid[1] * gx + cid[0]
        if traces is None:  # (a batch no one reads the traces of: its warps' counts)
            instr[i] = stream.cta_instructions(p)
            continue
        # (a warp's count is its trace's length: a batch's counted at once)
        instr[i] = stream.cta_instructions(p) if counted else sum(len(t) for t in traces)
        if i < keep:
            kept += narrowed(traces)
        c = member.get(i)
        if c is not None:
            if i == starts[c]:
                warm_of[c] = list(history)
                if held >= capacity:  # the CTAs of history the next chunks need, as this one's did
                    look = history_ctas(held, len(history), cfg, slots)
            waiting[c].append((i, cid, traces))
            if len(waiting[c]) == span or i == min(n, starts[c] + span) - 1:
                period = None
                if chunks and starts[c] > 0 and CHUNK_START == "staggered":  # the launch's first chunk gives the period of a CTA slot
                    period = np.mean([d for _, _, d in chunks[0].durations]) + cfg.sm.cta_launch_cycles
                chunks.append(_simulate_chunk(kernel, block, cfg, waiting.pop(c), warm_of.pop(c), instr, starts[c],
                                              per_sm, period))
                if len(chunks) == base < len(starts) and not more_chunks(chunks):
                    # the chunks agree: the later ones are not simulated (nor their CTAs' traces
                    # recorded, nor their histories' sectors taken)
                    skipped = starts[base:]
                    for k, s in enumerate(skipped, base):
                        waiting.pop(k, None)
                        for j in range(s, min(n, s + span)):
                            member.pop(j, None)
                    starts = starts[:base]
                    if stream.timing_only:  # nor run: those the prediction needed for them only
                        _drop_skipped(stream, n, slots, starts[-1] + span, min(n, skipped[-1] + span))
                if progress is not None:
                    progress(len(chunks), len(starts), "chunks simulated", "chunks")
        if i < probe or before_chunk(i):
            secs = tuple(_units_sectors(traces, kernel, _MOVED))
            history.append(secs)
            held += len(secs[0]) + len(secs[1])
            seen += len(secs[0]) + len(secs[1])
            if i == probe - 1:  # CTAs of history a chunk needs, with room to spare
                look = history_ctas(seen, probe, cfg, slots)
            while history and held - len(history[0][0]) - len(history[0][1]) >= capacity:
                old = history.popleft()
                held -= len(old[0]) + len(old[1])
        traces = None
    return instr, chunks, kept


def _drop_skipped(stream, n, slots, a, b):
    """Leave out of a stream for timing only (its CTAs :func:`needed`'s, ``seed`` 0) the CTAs from
    ``a`` to ``b`` (the chunks not simulated and the CTAs of history before them) not run yet,
    but those counted for the CTAs not run (:func:`counted_sample`)."""
    gx = stream.grid[0]
    counted = set(counted_sample(n, slots).tolist())
    stream.drop(lambda cid: a <= cid[1] * gx + cid[0] < b and cid[1] * gx + cid[0] not in counted)


_MOVED = (("tex", "ldg"), ("stg",))  # the units of what a CTA reads and of what it stores


def history_ctas(sectors, ctas, cfg, slots) -> int:
    """CTAs of history a chunk needs, with room to spare, when ``ctas`` CTAs read and stored
    ``sectors`` sectors: ``history_spare`` times as many as fill ``HISTORY_FILL`` L2 capacities,
    and a wave."""
    capacity = HISTORY_FILL * cfg.l2.size // cfg.l2.sector
    return int(HISTORY_SPARE * capacity * ctas / max(1, sectors)) + slots


def probe_look(stream, kernel, cfg, slots) -> int:
    """:func:`history_ctas` from a stream of the launch's first CTAs (64 or fewer)."""
    sectors, ctas = 0, 0
    for _, traces in stream_ctas(stream):
        sectors += sum(len(x) for x in _units_sectors(traces, kernel, _MOVED))
        ctas += 1
        traces = None
    return history_ctas(sectors, ctas, cfg, slots)


def needed(n, slots, look, seed=0) -> list:
    """The CTA indices (in launch order) a prediction for timing only runs functionally: those of
    the chunks and of the ``look`` CTAs before each, and ``counted`` more whose warp instructions
    stand for the rest: two picked at random (``seed``) in each of ``counted / 2`` equal ranges of
    the launch (a stratified sample: every part of the grid is represented, and the spread
    within a range gives the estimate's standard error)."""
    span = CHUNK_WAVES * slots
    keep = np.zeros(n, dtype=bool)
    for s in chunk_starts(n, slots):
        keep[max(0, s - look):min(n, s + span)] = True
    keep[counted_sample(n, slots, seed)] = True
    return [int(i) for i in np.flatnonzero(keep)]


def counted_sample(n, slots, seed=0) -> np.ndarray:
    """The CTAs of :func:`needed` whose warp instructions stand for the CTAs not run: two at random
    (``seed``) in each of its ranges of the launch."""
    strata = _strata(n, slots)
    edges = np.linspace(0, n, strata + 1).astype(np.int64)
    rng = np.random.default_rng(seed)
    out = [rng.choice(np.arange(a, b), size=min(2, b - a), replace=False) for a, b in zip(edges[:-1], edges[1:])
           if b > a]
    return np.sort(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)


def _strata(n, slots) -> int:
    """The ranges of :func:`needed`: ``counted / 2``, at most ``counted_share`` of the chunks' CTAs
    over two."""
    counted = min(COUNTED, int(COUNTED_SHARE * CHUNKS * CHUNK_WAVES * slots))
    return max(1, min(n // 2, counted // 2))


def estimated(instr, slots):
    """``(warp instructions of every CTA, total, its standard error)`` from ``instr`` with -1 for
    the CTAs not run: a CTA not run counts as the mean of the CTAs run in its range of the launch
    (the ranges of :func:`needed`), the total's standard error from the spread within the ranges."""
    known = instr >= 0
    if known.all():
        return instr, float(instr.sum()), 0.0
    n = len(instr)
    strata = _strata(n, slots)
    which = np.arange(n) * strata // n
    k = np.bincount(which[known], minlength=strata)
    s1 = np.bincount(which[known], weights=instr[known].astype(float), minlength=strata)
    s2 = np.bincount(which[known], weights=instr[known].astype(float) ** 2, minlength=strata)
    mean = s1 / np.maximum(k, 1)
    var = np.maximum(s2 / np.maximum(k, 1) - mean ** 2, 0.0) * k / np.maximum(k - 1, 1)
    missing = np.bincount(which[~known], minlength=strata)
    total = float(instr[known].sum() + (missing * mean).sum())
    se = float(np.sqrt((missing ** 2 * var / np.maximum(k, 1)).sum()))
    # a CTA not run takes a count of a CTA run in its range (a real one: the groups stay those of real
    # counts); its duration is then its range's mean (see extrapolate)
    first_known = np.full(strata, -1, dtype=np.int64)
    order = np.flatnonzero(known)
    first_known[which[order[::-1]]] = instr[order[::-1]]
    filled = np.where(known, instr, first_known[which])
    return filled, total, se


def _groups(instr):
    """Each CTA's group (0 .. groups - 1) by its warp instructions: one group per distinct count when
    there are at most ``GROUPS``, else equal-count ranges between the fewest and the most."""
    values = np.unique(instr)
    if len(values) <= GROUPS:
        return np.searchsorted(values, instr)
    lo, hi = float(values[0]), float(values[-1])
    return np.minimum(GROUPS - 1, ((instr - lo) / (hi - lo) * GROUPS).astype(np.int64))


def durations(instr, chunks):
    """Every CTA's modelled duration: the mean measured duration of the sampled CTAs of its group
    (:func:`_groups`), else the line through the sampled CTAs' (warp instructions, duration)."""
    group = _groups(instr)
    later = [ch for ch in chunks if ch.first > 0] or chunks
    sampled = [x for ch in later for x in ch.durations]
    idx = np.array([i for i, _, _ in sampled])
    w = np.array([x for _, x, _ in sampled], dtype=float)
    d = np.array([x for _, _, x in sampled], dtype=float)
    if np.ptp(w) > 0:
        slope, icpt = np.polyfit(w, d, 1)
        out = icpt + slope * instr.astype(float)
    else:
        out = np.full(len(instr), d.mean())
    sums = np.bincount(group[idx], weights=d, minlength=group.max() + 1)
    counts = np.bincount(group[idx], minlength=group.max() + 1)
    has = counts > 0
    mean = np.where(has, sums / np.maximum(counts, 1), 0.0)
    out = np.where(has[group], mean[group], out)
    return np.maximum(out, 1.0)


def _dram_bytes(c) -> float:
    m = c.memory
    return m.get("dram_bytes_read", 0.0) + m.get("dram_bytes_written", 0.0)


def dram_floor(total, chunks):
    """The cycles the launch keeps the DRAM busy at least, from its chunks: ``(cycles, low, high)``,
    None without a chunk in mid-launch that moved DRAM bytes.

    A chunk's CTAs are timed over five waves; a launch that keeps the DRAM saturated builds up a
    backlog of write-backs (posted: no warp waits for them) over more waves than that, and until it
    has, reads are served ahead of the write-backs a launch in mid-course owes: the chunk's CTAs run
    faster than the launch's (a tiled transpose: 12% faster at DRAM busy 99.7%). So the DRAM work is
    extrapolated too, and the launch takes at least its DRAM time. The bytes a chunk in mid-launch
    owes the DRAM are those it read and wrote back plus the dirty sectors it left in the L2 beyond
    those it found there (they go back later); the launch's bytes are the first chunk's (it
    started on an empty L2) and the later chunks' per warp instruction for the rest, less the
    dirty sectors that stay in the L2 at the end (the later chunks' mean). The DRAM's cycles per byte
    are the later chunks' (the busiest channel's). The interval: the later chunks' bytes per warp
    instruction, ``interval_standard_errors`` standard errors of their mean either side."""
    later = [c for c in chunks if c.first > 0 and c.instructions and _dram_bytes(c) > 0]
    if not later:
        return None
    first = chunks[0] if chunks[0].first == 0 else None
    per_instr = np.array([(_dram_bytes(c) + c.dirty_end - c.dirty_start) / c.instructions for c in later])
    se = float(per_instr.std(ddof=1) / np.sqrt(len(later))) if len(later) > 1 else 0.0
    busiest = [max((v for k, v in c.memory.items() if k.startswith("dram_channel") and k.endswith("_busy_cycles")),
                   default=c.memory.get("dram_busy_cycles", 0.0)) for c in later]
    per_byte = sum(busiest) / sum(_dram_bytes(c) for c in later)
    base_bytes = _dram_bytes(first) + first.dirty_end if first is not None else 0.0
    rest = total - (first.instructions if first is not None else 0)
    left = float(np.mean([c.dirty_end for c in later]))

    def cycles(b):
        return max(0.0, base_bytes + rest * b - left) * per_byte
    b = float(per_instr.mean())
    return cycles(b), cycles(b - INTERVAL_SE * se), cycles(b + INTERVAL_SE * se)


def _steady_counters(chunks, total) -> dict:
    """The memory counters of a launch of ``total`` warp instructions from the chunks' measured
    spans: the first chunk's own (it is the launch's start), and the rest of the launch at the
    counts per warp instruction of the later chunks over the spans of their measured waves (a
    chunk's own start and end, CTAs starting on an empty L1 and staggered and the last wave
    draining, are no part of a launch in mid-course). Empty when no later chunk measured one."""
    steady = [c for c in chunks if c.first > 0 and c.steady is not None]
    if not steady:
        return {}
    issued = sum(c.steady_instructions for c in steady)
    rate = {}
    for c in steady:
        rate = _add(rate, c.steady)
    first = chunks[0] if chunks[0].first == 0 else None
    rest = total - (first.instructions if first is not None else 0)
    out = _scale(rate, rest / issued)
    if first is not None:
        out = {k: v + first.memory.get(k, 0.0) for k, v in out.items()}
    return out


def _like_for_like(chunk, later) -> list:
    """``(CTA index, measured duration)`` of the CTAs of ``chunk``'s measured wave that ran as many
    warp instructions as a CTA measured by a chunk of ``later``."""
    counts = {w for c in later for _, w, _ in c.durations}
    return [(i, d) for i, w, d in chunk.durations if w in counts]


def extrapolate(instr, chunks, slots, cfg) -> WavesPrediction:
    """The launch from its chunks (see the module's docstring)."""
    chunks = sorted(chunks, key=lambda c: c.first)
    n = len(instr)
    known = instr >= 0
    instr, total, total_se = estimated(instr, slots)
    dur = durations(instr, chunks)
    if not known.all():  # a CTA not run: the mean duration of the CTAs run in its range
        strata = _strata(n, slots)
        which = np.arange(n) * strata // n
        mean = np.bincount(which[known], weights=dur[known], minlength=strata) / np.maximum(
            np.bincount(which[known], minlength=strata), 1)
        dur = np.where(known, dur, mean[which])
    # the launch's first two waves as its first chunk ran them (the dispatcher's own start)
    first = {i: d for i, _, d in chunks[0].early + chunks[0].durations} if chunks[0].first == 0 else {}

    first_at = np.array(sorted(first), dtype=np.int64)
    first_d = np.array([first[i] for i in first_at], dtype=float)

    def makespan(scale=1.0):
        d = dur * scale
        d[first_at] = first_d
        return laid_out(d, slots, launch=cfg.sm.cta_launch_cycles, interval=cfg.gpu.cta_dispatch_interval,
                        first_wave=cfg.gpu.first_wave)
    cycles = makespan()
    later = [c for c in chunks if c.first > 0] or chunks
    ratios = np.array([sum(d for _, _, d in c.durations) / sum(dur[i] for i, _, _ in c.durations) for c in later])
    se = float(ratios.std(ddof=1) / np.sqrt(len(ratios))) if len(ratios) > 1 else 0.0
    # the interval: the launch with every later CTA's duration off by INTERVAL_SE standard errors,
    # and as the launch's own first chunk measured them (the launch's start, on an empty L2)
    lo_f, hi_f = 1 - INTERVAL_SE * se, 1 + INTERVAL_SE * se
    # (its CTAs that did the work of a CTA the later chunks measured: another CTA's modelled duration
    # is a group's mean or the line through the samples, which says how far those are off for the
    # first waves' work, not how the launch's start differs from its middle; a triangular loop's
    # first chunk measured 0.38 of its modelled cycles, its later chunks 0.93 and 1.04)
    like = _like_for_like(chunks[0], later) if chunks[0].first == 0 and len(chunks) > 1 else []
    if like:
        own = sum(d for _, d in like) / sum(dur[i] for i, _ in like)
        lo_f, hi_f = min(lo_f, own), max(hi_f, own)
    # ... and, when the CTAs not run were counted from a sample, with the launch's work off by
    # INTERVAL_SE standard errors of that estimate
    rel = INTERVAL_SE * total_se / total if total else 0.0
    lo_f, hi_f = lo_f * (1 - rel), hi_f * (1 + rel)
    lo, hi = makespan(lo_f), makespan(hi_f)
    sim_instr = sum(c.instructions for c in chunks)
    floor = dram_floor(total, chunks)
    bound = "dispatch"
    if floor is not None:
        if floor[0] > cycles:
            bound = "dram"
        cycles, lo, hi = max(cycles, floor[0]), max(lo, floor[1] * (1 - rel)), max(hi, floor[2] * (1 + rel))
    lo, hi = min(lo, cycles * (1 - LEAST_HALF_WIDTH)), max(hi, cycles * (1 + LEAST_HALF_WIDTH))
    mem = {}
    for c in chunks:
        mem = _add(mem, c.memory)
    factor = total / sim_instr if sim_instr else 1.0
    mem = _scale(mem, factor)
    mem.update(_steady_counters(chunks, total))
    mem["cycles"] = cycles
    details = {"chunks": [{"first_cta": c.first, "cycles": c.cycles, "warp_instructions": c.instructions,
                           "history_sectors": c.history} for c in chunks],
               "chunk_ratio_spread": se, "groups": int(_groups(instr).max() + 1), "bound": bound,
               "dram_floor_cycles": None if floor is None else floor[0],
               "ctas_run": int(known.sum()), "warp_instructions": total,
               "warp_instructions_standard_error": total_se}
    return WavesPrediction(cycles, factor * sum(c.flops for c in chunks), (min(lo, cycles), max(hi, cycles)), sim_instr / total if total else 1.0, mem,
                           tuple(chunks), n / slots, details)
