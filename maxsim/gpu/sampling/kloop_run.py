"""K-loop sampling, running the samples: a wave simulated whole at small K, a steady-state window
of the resident CTAs, the start of a later wave, and the cycles per main-loop iteration they measure
(see :mod:`.kloop`)."""

from __future__ import annotations

import attrs
import collections
import math
import numpy as np

from ...timing.sm import residency
from ..gpu import deal_first_wave, round_robin, run_sms, trace_ctas
from .dispatcher import resident_at
from .kloop_choose import _staggered
from .kloop_history import _relocated
from . import settings
from .records import Phase, memory_counters
from .settings import STEADY_ITERATIONS, STEADY_PAGE_PERIODS, STEADY_SKIP, TAIL_SETTLE, WAVE_K_SAMPLES, WAVE_SETTLE, WAVE_SETTLE_MAX_K, WAVE_START_K


def _memory_system(cfg):
    """A new memory system of ``cfg``: the package's ``MemorySystem`` (one name to substitute, as the
    memory-parity tests do)."""
    from .. import sampling
    return sampling.MemorySystem(cfg)


@attrs.frozen
class _Whole:
    phase: Phase
    predicted: float  # cycles at the real K
    fixed: list  # per slot (first wave) or per CTA (tail): cycles besides the loop iterations
    per_iter: list  # per slot: cycles per loop iteration
    duration: list  # per slot / CTA: cycles at the real K
    sampled: list = attrs.field(factory=list)  # per slot / CTA: cycles in the last sample (at phase.ks[-1])
    stagger: list = attrs.field(factory=list)  # per SM: its CTAs' ends in the last sample, less its first's

def _whole(kernel, block, grid, k, k_step, build, cfg, ids, progress, name, backlog=(0.0, 0.0), warm=None,
           traced=None, settle=None, at=None, stagger=None, on_sms=None):
    """Simulate the CTAs ``ids`` dealt round-robin over the SMs from cycle 0 at ``WAVE_K_SAMPLES`` (or
    at ``k``), behind ``backlog``, after ``warm(memory system)``; per slot (slot j = the j-th CTA of ``ids``) the duration is affine
    in K. ``traced``: the CTAs' traces at ``k`` (``{cta id: warp traces}``), timed at ``k`` instead of
    functional runs. ``stagger``: per SM, the cycles its CTAs (the q-th dealt to it at ``stagger[sm][q]``)
    start after the first (see :func:`_staggered`). ``on_sms``: the SM of each CTA of ``ids`` (default:
    dealt round-robin). Returns the :class:`_Whole` and the memory system of the last sample."""
    k1, k2 = WAVE_K_SAMPLES
    plan = [k] if k <= k2 or traced is not None else [k1, k2]
    if at is not None:  # one sample, at K = ``at``
        plan = [at]
    sms = cfg.gpu.sms
    per_sm = residency(kernel, block, cfg)[0]
    ks = []
    durations = []
    cyc = []
    ms = None
    loop = 0.0
    while plan:
        kk = plan.pop(0)
        if traced is not None:
            ctas = [(cid, traced[cid]) for cid in ids]
        else:
            params, memory, textures = build(kk)
            _, ctas = trace_ctas(kernel, grid, block, params, memory, textures, cfg, ids, timing_only=True)
        ms = _memory_system(cfg)
        if warm is not None:
            warm(ms)
        _queue_backlog(ms, backlog)
        dispatch_from = 0
        if on_sms is None:
            placement, queue = round_robin(ctas, sms, per_sm)
            dispatch_from = deal_first_wave(placement, cfg)  # (gpu.first_wave)
        else:
            placement, queue = [[] for _ in range(sms)], None
            for sm, cta in zip(on_sms, ctas):
                placement[sm].append(cta)
        used = run_sms(kernel, block, cfg, _staggered(placement, stagger), ms, queue=queue, hazards=None,
                       flatten_together=True, dispatch_from=dispatch_from)
        end = {cid: (s, e) for sm in used for cid, s, e in sm.cta_log}
        ks.append(kk)
        durations.append([end[cid][1] - end[cid][0] for cid in ids])
        slopes = _cta_loop_cycles(used, skip=2)
        cyc.append(max(sm.now for sm in used))
        loop = _mean_loop(used)
        if progress is not None:
            progress()
        if settle is not None and not plan and kk != k and not _settled(
                _iteration_gaps(used), _share(settle, cyc, ks, k)):
            # the cost per iteration is still drifting at the end of this sample (SMs that started
            # together settle into their steady pattern of L2 slice accesses over tens of
            # iterations): sample again at twice the K, or at K itself when that is near
            nxt = k if 4 * kk >= k else 2 * kk
            if nxt <= WAVE_SETTLE_MAX_K:
                plan = [nxt]
    phase = Phase(name, len(ids), tuple(ks), tuple(cyc), loop, memory_counters(ms, cyc[-1], used))
    ends = [[] for _ in range(sms)]
    for sm in used:
        ends[sm.sm_id] = sorted(e for _, _, e in sm.cta_log)
    stagger_out = [[e - x[0] for e in x] for x in ends]
    if len(ks) == 1 and ks[-1] != k:  # one sample short of K: no line (the caller takes ``sampled``)
        return _Whole(phase, float(cyc[-1]), [], [], [], durations[-1], stagger_out), ms
    if ks[-1] == k:
        # simulated at K itself: the split into fixed cost and iterations (for the dispatcher model
        # of later waves) uses each CTA's measured cycles per iteration
        it = k / k_step
        per_iter = [slopes.get(cid, 0.0) for cid in ids]
        fixed = [d - p * it for d, p in zip(durations[-1], per_iter)]
        predicted = float(cyc[-1])
    else:
        # the line through the last two samples: both lie where the cost per iteration has settled
        it1, it2 = ks[-2] / k_step, ks[-1] / k_step  # main-loop iterations of the samples
        per_iter = [(b - a) / (it2 - it1) for a, b in zip(durations[-2], durations[-1])]
        fixed = [a - p * it1 for a, p in zip(durations[-2], per_iter)]
        predicted = cyc[-2] + (cyc[-1] - cyc[-2]) * (k - ks[-2]) / (ks[-1] - ks[-2])
    dur = [f + p * k / k_step for f, p in zip(fixed, per_iter)]
    return _Whole(phase, float(predicted), fixed, per_iter, dur, durations[-1], stagger_out), ms

def _cta_loop_cycles(sms, skip):
    """{cta id: mean cycles per main-loop iteration of its warps}, leaving out the first ``skip``
    iterations (fewer when the CTA ran fewer)."""
    by_cta = {}
    for sm in sms:
        for w in sm.all_warps:
            bt = w.branch_times
            s = min(skip, len(bt) - 2)
            if s >= 0:
                by_cta.setdefault(w.cta.cid, []).append((bt[-1] - bt[s]) / (len(bt) - 1 - s))
    return {cid: float(np.mean(v)) for cid, v in by_cta.items()}

def _mean_loop(sms):
    """Mean cycles per main-loop iteration of one CTA (its warp 0), skipping the first two and the
    last (the loop's final iteration, cheaper than the others: see :func:`_sm_loop_cycles`)."""
    vals = []
    for sm in sms:
        for w in sm.all_warps:
            bt = w.branch_times[:-1]
            if w.label.endswith(".w0") and len(bt) > 3:
                vals.append((bt[-1] - bt[2]) / (len(bt) - 3))
    return float(np.mean(vals)) if vals else 0.0

def _iteration_gaps(sms):
    """Mean cycles of each main-loop iteration (by its index) over every warp of ``sms``, for the
    iterations every warp ran."""
    gaps = [np.diff(np.asarray(w.branch_times, dtype=float)) for sm in sms for w in sm.all_warps]
    gaps = [g for g in gaps if len(g)]
    if not gaps:
        return np.zeros(0)
    n = min(len(g) for g in gaps)
    return np.mean([g[:n] for g in gaps], axis=0)

def _settled(gaps, share=1.0):
    """Whether a wave's cost per iteration has stopped drifting: the iterations of the sample,
    less the first two (the loop filling) and the last (CTAs ending), split in two halves whose
    mean costs differ by at most ``WAVE_SETTLE``, or, for CTAs that are only ``share`` of the
    launch's time (a tail), by so little that the launch's time cannot move by more than
    ``TAIL_SETTLE``: the drift times the share."""
    h = gaps[2:-1]
    if len(h) < 4:
        return True
    m = len(h) // 2
    a, b = float(np.mean(h[:m])), float(np.mean(h[-m:]))
    return abs(a - b) <= max(WAVE_SETTLE, TAIL_SETTLE / max(share, 1e-9)) * max(a, b)

def _share(start, cyc, ks, k):
    """The share of a launch's time that CTAs starting at cycle ``start`` of it take, their length
    at K = ``k`` extrapolated from the samples so far (``cyc`` cycles at ``ks``)."""
    if start <= 0:
        return 1.0
    if len(ks) >= 2:
        length = cyc[-2] + (cyc[-1] - cyc[-2]) * (k - ks[-2]) / (ks[-1] - ks[-2])
    else:
        length = cyc[-1] * k / ks[-1]
    return length / (start + length)

@attrs.frozen
class _Steady:
    phase: Phase
    per_iter: dict  # slot -> steady cycles per loop iteration
    skew: float
    durations: dict  # slot -> steady cycles of a whole CTA, where the window ran one whole

def _steady_state(kernel, block, grid, k, k_step, build, shift, cfg, schedule, mid, resident, gx, progress,
                  history, stagger=None):
    """Simulate the launch from cycle ``mid`` of the dispatcher model ``schedule`` on: the CTAs then
    resident, each at its own progress in K, run their next ``STEADY_ITERATIONS`` iterations (or to
    their real end, epilogue and stores included), and the dispatcher hands the freed slots the CTAs
    that come next, as in the launch. The L2 starts warmed with the launch's history. Each SM's
    steady cycles per loop iteration are measured over the iterations completed before the first
    CTA whose trace was cut short (one that would run past the window) ends."""
    total_iters = int(k // k_step)
    window = STEADY_ITERATIONS
    # with the launch's pages in the TLBs, a window long enough to measure a whole number of page
    # periods (see _sm_loop_cycles), at least STEADY_PAGE_PERIODS of them and at least the
    # iterations it measures otherwise
    period = history.page_period() if settings.TLB_HISTORY and history is not None else None
    if period is not None:
        measured = STEADY_ITERATIONS - STEADY_SKIP
        periods = max(math.ceil(measured / period), STEADY_PAGE_PERIODS)
        window = max(window, STEADY_SKIP + math.ceil(period * periods) + 2)
    live = resident_at(schedule, mid)
    sms = cfg.gpu.sms
    pop = []  # (slot, cta id, iterations done, iterations to run)
    for j, (i, s, e) in sorted(live.items()):
        frac = (mid - s) / (e - s) if e > s else 0.0
        done = max(0, min(int(round(frac * total_iters)), total_iters - 1))
        pop.append((j, (i % gx, i // gx), done, min(window, total_iters - done)))
    # the next CTAs of the launch, for the slots that free up during the window (fresh, at K = 0):
    # a short K runs whole (no CTA cut short); a long one for the window's iterations
    later = sorted((s, i) for i, (_, s, _) in enumerate(schedule) if s >= mid)[:len(pop)]
    later_ids = [(i % gx, i // gx) for _, i in later]
    later_run = total_iters if total_iters <= 2 * window else window
    # one functional launch per K traced, the resident CTAs that run that many iterations and the
    # next ones together (a CTA's trace does not depend on the others of its launch)
    traced = {}
    textures_of = {}
    runs = {r for *_, r in pop} | ({later_run} if later else set())
    for run in sorted(runs):
        ids = [cid for _, cid, _, r in pop if r == run] + (later_ids if later and run == later_run else [])
        params, memory, textures = build(run * k_step)
        _, tr = trace_ctas(kernel, grid, block, params, memory, textures, cfg, ids, timing_only=True)
        for cid, traces in tr:
            traced[cid] = traces
            textures_of[cid] = textures
    cut = {cid for _, cid, done, r in pop if done + r < total_iters}  # traces that end before the CTA does
    queue = collections.deque()
    queue_ids = []
    if later:
        queue_ids = [(None, cid) for cid in later_ids]
        tr = [(cid, traced.pop(cid)) for cid in later_ids]
        if later_run < total_iters:
            cut |= set(later_ids)
            moved = _relocated({cid: (traces, [], False) for cid, traces in tr}, kernel)
            tr = [(cid, moved[cid]) for cid, _ in tr]
        queue.extend(tr)
    # place: slot j is on SM j mod S; an SM's CTAs oldest first (the order their slots took them)
    placement = [[] for _ in range(sms)]
    order = sorted(pop, key=lambda x: (live[x[0]][1], x[0]))
    jobs = {}
    for j, cid, done, _ in order:
        ranges = shift(textures_of[cid], done * k_step) if shift is not None else []
        if ranges or cid in cut:
            jobs[cid] = (traced[cid], ranges, cid not in cut)
    moved = _relocated(jobs, kernel)
    for j, cid, done, _ in order:
        placement[j % sms].append((cid, moved.get(cid, traced[cid])))
    ms = _memory_system(cfg)
    history.warm(ms, schedule, mid)
    used = run_sms(kernel, block, cfg, _staggered(placement, stagger), ms, queue=queue, hazards=None,
                   flatten_together=True)
    if progress is not None:
        progress()
    ends = [e for sm in used for cid, _, e in sm.cta_log if cid in cut]
    stop = min(ends) if ends else max(sm.now for sm in used)
    present = {cid for _, cid, _, _ in pop}  # the CTAs resident when the window starts
    per_sm = {}
    for sm in used:
        rate = _sm_loop_cycles([w for w in sm.all_warps if w.cta.cid in present], stop, period)
        if rate is not None:
            per_sm[sm.sm_id] = rate
    # an SM whose resident CTAs share no steady interval (one of them ends early in the window)
    # takes the mean of the others: its own CTAs' gaps, measured while a neighbour was in its
    # epilogue or prologue, would show an SM with fewer CTAs in their loop than it has slots
    mean_rate = float(np.mean(list(per_sm.values()))) if per_sm else None
    per_iter = {j: per_sm.get(j % sms, mean_rate) for j, *_ in pop if mean_rate is not None}
    # CTAs the window ran from their start to their real end give their whole duration directly
    fresh = {cid for _, cid in queue_ids} - cut
    whole = {}
    for sm in used:
        d = [e - s for cid, s, e in sm.cta_log if cid in fresh]
        if d:
            whole[sm.sm_id] = float(np.mean(d))
    durations = {j: whole[j % sms] for j, *_ in pop if j % sms in whole}
    loops = list(per_sm.values())
    mem = memory_counters(ms, max(sm.now for sm in used), used)
    skew = float(np.std([d for _, _, d, _ in pop])) if pop else 0.0
    phase = Phase("steady state", len(pop), (window * k_step,), (stop,),
                  float(np.mean(loops)) if loops else 0.0, mem)
    return _Steady(phase, per_iter, skew, durations)

@attrs.frozen
class _WaveStart:
    phase: Phase
    fixed: float  # cycles a CTA of a later wave costs besides its steady main-loop iterations

def _wave_start(kernel, block, grid, k, k_step, build, cfg, schedule, live, rate, gx, progress, history,
                backlog, stagger=None, on_slots=False):
    """The start of a later wave: the CTAs ``live`` (``{slot: (cta index, start, end)}``, the
    wave a steady-state window sampled), simulated whole from their start to K = ``WAVE_START_K``
    (or K), behind the L2's history at that start (the previous wave's results in it, dirty, and
    its reads) and behind ``backlog``. A CTA's cycles there, less its steady iterations at
    ``rate[cta index]`` (the window's), are its cost besides them: prologue, epilogue and what the
    wave's start costs, above all the write-backs of the previous wave's results, which the new
    reads evict (quarter GTX 980, sgemm_64, N = 1024, DRAM-bound: the first 16 of a CTA's 128
    iterations cost 4,000-5,600 cycles, the others 2,300-2,900; a window in mid-wave sees none of
    it). The mean over the wave's CTAs. ``on_slots``: each CTA runs on its slot's SM (slot j on SM
    j mod S, an SM's CTAs in the order they started); otherwise the wave is dealt round-robin in
    CTA order, as a first wave is."""
    t0 = min(s for _, s, _ in live.values())
    # each CTA on its slot's SM (slot j on SM j mod S), an SM's CTAs in the order they started
    placed = sorted(live.items(), key=lambda x: (x[1][1], x[0]) if on_slots else x[1][0])
    ids = [i for _, (i, _, _) in placed]
    kb = min(k, WAVE_START_K)
    start, _ = _whole(kernel, block, grid, k, k_step, build, cfg, [(i % gx, i // gx) for i in ids], progress,
                      "wave start", backlog=backlog, warm=lambda ms: history.warm(ms, schedule, t0), at=kb,
                      stagger=stagger, on_sms=[j % cfg.gpu.sms for j, _ in placed] if on_slots else None)
    extra = [d - rate[i] * kb / k_step for i, d in zip(ids, start.sampled)]
    return _WaveStart(start.phase, float(np.mean(extra)))

def _sm_loop_cycles(warps, stop, period=None):
    """Cycles per main-loop iteration of one CTA on an SM, from the SM's throughput: over the
    interval in which every one of ``warps`` is past its first ``STEADY_SKIP`` iterations and
    still in its loop (up to ``stop``), the interval's length over the mean number of iterations
    the warps completed in it (each warp's progress interpolated between its loop branches).
    ``period``: the main-loop iterations between two page crossings of the data moved along K
    (:meth:`_History.page_period`); the interval then ends where the warps have completed, on
    average, the largest whole number of periods that fits in it (the whole interval when not
    one does), so that a cost that comes once per period (a page walk) is counted at its real
    rate whatever the window's phase.
    The CTAs sharing an SM need not progress at one pace (the schedulers favour older warps):
    pooling each warp's own gaps would weigh the faster CTA's short gaps more, and the SM would
    appear to issue more than it can. A warp's last iteration is left out: a trace cut short for
    the window ends with the loop's final iteration, which costs less than the others (sgemm_128,
    2 CTAs per SM: 1,502 cycles against 2,075) and comes once per CTA, not once per window.
    None when the warps share no such interval (or one of them has no steady iteration)."""
    bts = [np.asarray([t for t in w.branch_times[:-1] if t <= stop], dtype=float) for w in warps]
    if not bts or any(len(b) <= STEADY_SKIP + 1 for b in bts):
        return None  # a warp without steady iterations in the window: no interval has them all
    t0 = max(b[STEADY_SKIP] for b in bts)
    t1 = min(b[-1] for b in bts)
    if t1 <= t0:
        return None
    done = [np.interp(t1, b, np.arange(len(b))) - np.interp(t0, b, np.arange(len(b))) for b in bts]
    mean = float(np.mean(done))
    if period is not None and mean >= period:
        # the cycle at which the mean progress since t0 reaches the whole periods (piecewise linear
        # between the warps' branches)
        want = period * math.floor(mean / period)
        at = np.unique(np.concatenate([b[(b > t0) & (b < t1)] for b in bts] + [np.asarray([t0, t1])]))
        progress = np.mean([np.interp(at, b, np.arange(len(b))) for b in bts], axis=0)
        progress -= progress[0]
        t1 = float(np.interp(want, progress, at))
        mean = want
    return (t1 - t0) / mean if mean > 0 else None

def _backlog(ms, end):
    """(L2, DRAM) cycles of work queued past cycle ``end`` in memory system ``ms``."""
    return (max(0.0, ms.l2_server.next_free - end), max(0.0, ms.dram_server.next_free - end))

def _queue_backlog(ms, backlog):
    """Occupy the memory system's L2 and DRAM servers for the first ``backlog`` = (L2, DRAM)
    cycles: work the previous wave left queued when this one starts (the stores of a CTA's epilogue
    are posted: a wave ends with the L2 still draining them)."""
    l2, dram = backlog
    if l2 > 0:
        ms.l2_server.reserve(0, l2 * ms.l2_server.bytes_per_clk)
    if dram > 0:
        ms.dram_server.reserve(0, dram * ms.dram_server.bytes_per_clk)
