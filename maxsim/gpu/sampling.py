"""Predict a large launch from short simulations of the whole GPU (sampling).

Simulating every instruction of an 8192^3 SGEMM is out of reach, but its structure is regular. Every
sample below runs ALL SMs of the config at once against one shared L2 and DRAM
(:class:`~maxsim.timing.memory_system.MemorySystem`), so L2 hits, misses and queueing come from the
addresses the CTAs that really run side by side send, in the order the SMs send them.

* **Waves.** The block dispatcher hands the first ``S x R`` CTAs (S SMs, R resident per SM)
  round-robin to the SMs, and each later CTA to the SM slot that frees first. A launch is a first
  wave, then full waves, then a tail of ``T < S x R`` CTAs.
* **First wave** (and a launch of at most one wave): its CTAs start together. It is simulated whole
  at two small K (``WAVE_K_SAMPLES``); each CTA's time is affine in K (fixed cost of prologue and
  epilogue plus a cost per main-loop iteration), so the line through the two samples gives every
  CTA slot's duration at the real K. When K is no larger than the second sample it is simulated
  at K itself. The line holds only once the cost per iteration has settled: SMs that start
  together hit the L2 slices in step at first and take tens of iterations to fall into their
  steady pattern (sgemm_128, 16 CTAs on 16 SMs: 1,091 cycles per iteration over the first 8,
  1,041 from the 24th on). When the second half of the last sample's iterations still costs more
  than ``WAVE_SETTLE`` less (or more) than its first half, the wave is sampled again at twice the
  K (at K itself once that is at most 4x the last sample), up to ``WAVE_SETTLE_MAX_K``, and the
  line goes through the last two. This is done for a launch of at most one wave, where the wave is
  the whole prediction, and for the tail of a longer launch, whose CTAs also start together
  (sgemm_128 at N = 896 on the GTX 980: a 17-CTA tail ran 2,579 cycles per iteration between K = 64
  and 128, and the line through them made the launch 17% slow; sampled again at 256 and 896 it
  agrees with the measured GFLOPS within 0.1%). A tail is a share of the launch's time only, so it
  is sampled again only while its drift times that share exceeds ``TAIL_SETTLE`` (0.2% of the
  launch): a 25-CTA tail after 13 waves of sgemm_128 at N = 2688 wobbled by more than 1% between
  the halves of its samples (SMs with two CTAs alternate between schedules) at 2,064-2,080 cycles
  per iteration, and was sampled up to K = 1024 for it. The first wave of a longer launch keeps the two
  small samples (its slots' costs feed the dispatcher model, and the steady-state windows measure
  the steady cost). ``WAVE_SETTLE_MAX_K`` bounds the cost: a memory-bound tail speeds up as its
  CTAs end and never settles (sampled again up to K=8192, it cost a functional run at full K).
* **Steady state** (launches of two or more full waves). After the first wave each slot takes its
  next CTA when its own CTA ends. A CTA-level model of the dispatcher (:func:`dispatch`: every slot
  runs its CTAs back to back with its own duration, the next CTA id goes to the slot that frees
  first) gives which CTAs are resident on which SM in the middle of the launch and how far each has
  progressed. **The CTAs of a wave stay together**: in full simulations of the SGEMMs
  over many waves the CTAs that start together end together (GTX 980, sgemm_64 at N = 4096-6144,
  32-72 waves: CTA durations within 0.2% of one another, a wave's starts at most 11.7-13.8
  iterations apart; a quarter GTX 980 at N = 1024-1536: within 0.1-0.4% per SM): every SM runs
  its loop at the same pace, the issue bound (a window with half the SMs 4 or 16 iterations ahead of
  the others measures 2,081-2,082 cycles per iteration on all of them). The first wave's slots, sampled at small K, differ by up to 0.8% per iteration
  (SMs still settling), and a dispatcher model that kept those differences let the slots drift
  apart by tens of iterations (the windows then sampled CTAs that shared fewer panels: sgemm_64 at
  N = 4096 on the GTX 980 7.4% slower than its full simulation); every slot therefore takes the
  first wave's mean cost. That
  population is simulated for ``STEADY_ITERATIONS`` main-loop iterations: every CTA runs on its SM,
  its memory addresses those of its real position in K (the workload's ``shift`` says how far its
  data moves per unit of K), after the L2 has been warmed with the reads of the CTAs that ran before
  (:class:`_History`: the most recent reads of the dispatcher model's schedule, as many as the L2
  can hold). A window that would start just before aligned CTAs end, with no SM whose CTAs all stay
  in their loop, moves (at most half a CTA) to where one has (:func:`_clear_of_ends`), and then to
  the middle of its CTAs' lives (:func:`_mid_life`). An SM's CTAs start at the spacing of its
  CTAs' ends in the first wave, not at one cycle (:func:`_staggered`): started together, co-resident
  CTAs with the same trace run in lockstep, which later waves of the full simulation do not (their
  shared lookups would all merge into fills under way instead of hitting in the L1).
  The iterations after the first ``STEADY_SKIP`` give each slot's
  steady cost per iteration, from its SM's throughput (:func:`_sm_loop_cycles`); a slot's steady
  CTA duration is the fixed cost of a later wave's CTA (below) plus K iterations at that cost. A CTA cut short for
  the window stores nothing at the window's end (its results are written at its real end).
* **The start of a later wave.** A wave's CTAs start together, where the previous wave's results
  sit in the L2 (dirty) and leave it as the new reads evict them: a burst of write-backs in the
  first iterations of every wave, which a window in mid-wave does not see. The wave the (last)
  window sampled is simulated whole from its start to K = ``WAVE_START_K`` behind the launch's
  history (:func:`_wave_start`; staggered as the windows are); its CTAs' cycles less their steady iterations at the window's pace
  give a later CTA's cost besides them (in place of the first wave's, measured on an empty L2).
  The dispatcher model is run again with the steady durations (for the launch's length).
* **The L2 filling up.** A launch whose first waves fit in the L2 leaves their results (dirty
  sectors) there; write-backs to DRAM start only when the L2 is full and each new line evicts a
  result. Where that happens after the first wave (:meth:`_History.writeback_time`: the launch's
  reads and stores replayed in time order through an LRU of the L2's capacity), the steady state
  is sampled twice, before and after, when some CTA after the first wave runs its whole life before
  it: the CTAs that start before the write-backs begin (in the dispatcher model at the first wave's
  pace) run at the first window's pace, the others at the second's. The write-backs ramp up over about a wave in reality (the
  first evictions free the overflow only); the switch is sharp here.
* **Tail.** The last ``T`` CTAs are simulated whole like a first wave (dealt round-robin, each
  slot's first free slot taking one), with the L2 warmed by the launch's history up to the tail's
  start and behind the L2/DRAM work the previous wave left queued (the posted stores of its
  epilogues); their durations enter the dispatcher model.
* The launch takes the dispatcher model's makespan: the end of the last CTA. A tail (the CTAs
  after the last full wave) is simulated whole on the SMs whose slots free first, both slots of
  an SM before the next SM's, in the order of the first wave's ends (:func:`_tail_sms`).
* **Where waves need not stay together.** When DRAM is saturated the SMs no longer all run at the
  issue bound, and in full simulations the waves drift apart, share fewer panels and slow down
  further (GTX 980 at 32-64 GB/s, a quarter GTX 980 at 25 GB/s: the sampled prediction -41% ...
  +0.5% of the full simulations). A launch whose steady-state window keeps the DRAM channels busy
  ``DRAM_SATURATED`` of its cycles or more is marked ``dram_bound`` (:attr:`Prediction.dram_busy`
  says how busy: the window's share, else the first wave's); those checked against full
  simulations ran their windows at 84-96% busy, and every launch below that agreed with its full
  simulation within 1.6% (the busiest window, 70%). The first wave is not the measure: it
  includes the write-backs of what the launch before left in the L2 (``l2_start="previous"``).
* **The L2 at the start.** Empty by default. With ``l2_start="previous"`` (back-to-back launches of
  one kernel, as benchmarks time it) the launch before is laid out first: its first wave sampled
  from an empty L2, every CTA at that wave's cost in the dispatcher model (a launch of at most one
  wave: its whole prediction). Then the launch is predicted with every warming of the L2 (the first
  wave's too) also seeing that schedule one period earlier (its makespan and the launch
  overhead): the previous launch's last reads and its results (dirty) are what the L2 holds when
  the launch starts, and a later wave starts behind the backlog that launch's first wave left.

The tests check the prediction against the full simulation (every CTA of the grid on every SM at
the real K) where both run, compute-bound and memory-bound.
"""

from __future__ import annotations

import collections
import heapq
import time

import attrs
import numpy as np

from ..functional.trace import Segment, WarpTrace
from ..timing.memory_system import L2_STARTS, MemorySystem
from ..timing.sm import residency
from ..timing.summaries import SectorLists, make_summariser
from .gpu import round_robin, run_sms, trace_ctas
from .sector_lru import SectorLRU, SectorSet

WAVE_K_SAMPLES = (64, 128)  # K values at which a first wave or a tail is simulated whole
WAVE_SETTLE = 0.01  # a wave's cost per iteration has settled when it drifts less than this (see _settled)
WAVE_SETTLE_MAX_K = 1024  # ... checked for a launch of at most one wave and for a tail, sampled again up to this K
TAIL_SETTLE = 0.002  # a tail drifting by d that is a share s of the launch is sampled again only if d x s exceeds this
STEADY_ITERATIONS = 12  # main-loop iterations each CTA runs in a steady-state window
STEADY_SKIP = 4  # ... of which the first are left out (prologue and settling)
HISTORY_FILL = 1.5  # history replayed into the L2 before a window, in multiples of its capacity
WAVE_START_K = 128  # K to which the start of a later wave is simulated (see _wave_start)
DRAM_SATURATED = 0.8  # DRAM busy share of the steady-state window from which a launch is marked dram_bound


@attrs.frozen
class Phase:
    """One simulated piece of a launch."""
    name: str  # "first wave", "steady state", "tail"
    ctas: int  # CTAs simulated
    ks: tuple  # K values simulated (steady state: the window's K)
    cycles: tuple  # simulated cycles at each
    loop_cycles: float  # mean cycles per main-loop iteration of one CTA (last sample)
    memory: dict  # memory-system counters of the last sample, with "cycles"


@attrs.define
class Prediction:
    cycles: float
    seconds: float
    phases: list
    waves: float
    resident_ctas: int
    progress_skew: float  # steady state: std of the resident CTAs' progress, in main-loop iterations
    memory: dict  # launch estimates: l2 read hits/misses, dram bytes read/written, ... and "cycles"
    sim_seconds: float = 0.0
    dram_busy: float = 0.0  # the share of its cycles the steady-state window (else the first wave) kept DRAM busy
    dram_bound: bool = False  # a steady-state window with dram_busy >= DRAM_SATURATED (module docstring)


def dispatch(n_ctas, slots, duration, hold=None, timed=False, launch=0, interval=0):
    """CTA-level model of the block dispatcher.

    ``slots`` CTA slots (SM i mod S, as the first wave is dealt round-robin: slot j holds CTA j of
    the first wave); ``duration(slot, cta index)`` gives a CTA's cycles on a slot (``timed``:
    ``duration(slot, cta index, start cycle)``). Returns ``(slot, start, end)`` per CTA, in CTA order:
    the first ``slots`` start at 0, each later CTA on the slot that frees first (ties: the lower
    slot), ``launch`` cycles after that slot's CTA ended (``sm.cta_launch_cycles``) and no earlier
    than ``interval`` cycles after the CTA handed out before it (``gpu.cta_dispatch_interval``), as
    the full simulation starts them. ``hold``: the CTAs from this index on wait until every CTA
    before it has ended."""
    if not timed:
        untimed = duration

        def duration(j, i, t):
            return untimed(j, i)
    out = []
    heap = []
    for j in range(min(slots, n_ctas)):
        d = duration(j, j, 0.0)
        out.append((j, 0.0, d))
        heap.append((d, j))
    heapq.heapify(heap)
    held = None
    free = 0.0  # the dispatcher's next free cycle
    for i in range(len(out), n_ctas):
        t, j = heapq.heappop(heap)
        t += launch
        if hold is not None and i >= hold:
            if held is None:
                held = max(e for _, _, e in out[:hold])
            t = max(t, held)
        t = max(t, free)
        free = t + interval
        d = duration(j, i, t)
        out.append((j, t, t + d))
        heapq.heappush(heap, (t + d, j))
    return out


def resident_at(schedule, t):
    """The CTAs running at cycle ``t`` of a :func:`dispatch` schedule: ``{slot: (cta index, start, end)}``."""
    res = {}
    for i, (j, s, e) in enumerate(schedule):
        if s <= t < e:
            res[j] = (i, s, e)
    return res


def predict(kernel, block, grid, k, build, cfg, *, k_step=8, shift=None, progress=None, traced=None,
            l2_start="empty"):
    """Predict the launch of ``kernel`` over ``grid`` with inner dimension ``k``.

    ``build(k_value) -> (params, memory, textures)`` makes the same problem with another K (the
    launch geometry must not depend on K). ``k_step``: K consumed per main-loop iteration.
    ``shift(textures, dk) -> [(lo, hi, delta)]``: the byte ranges of the data whose addresses move by
    ``delta`` when a CTA is ``dk`` further along K (None: addresses do not depend on K; the steady
    state then simulates every CTA at the start of K). ``progress()`` is called after each sample.
    ``traced``: ``{cta id: warp traces}`` from a traced run of the whole launch at ``k`` (the run
    that checked its results): a launch of at most one wave is then timed from those traces at
    ``k`` itself, with no functional run of its own.
    ``l2_start``: ``"empty"`` (the L2 holds nothing when the launch starts, as after a flush) or
    ``"previous"`` (it holds what the same launch left there, as in back-to-back launches of one
    kernel on the same buffers, the way benchmarks time it: the launch before is laid out by the
    dispatcher model at the cost of its first wave, sampled from an empty L2, and that schedule gives
    the reads and stores the L2 holds; needs ``shift``, which places the data of every CTA's part of K).
    """
    if l2_start not in L2_STARTS:
        raise ValueError(f"l2_start {l2_start!r}: expected one of {', '.join(L2_STARTS)}")
    if l2_start == "empty":
        return _predict(kernel, block, grid, k, build, cfg, k_step, shift, progress, traced)[0]
    if shift is None:
        raise ValueError("l2_start 'previous' needs shift: where each CTA's data lies along K")
    _, schedule, backlog = _predict(kernel, block, grid, k, build, cfg, k_step, shift, progress, traced,
                                    first_only=True)
    period = max(e for _, _, e in schedule) + cfg.gpu.launch_overhead_us * 1e-6 * cfg.clock_hz
    return _predict(kernel, block, grid, k, build, cfg, k_step, shift, progress, traced,
                    previous=(schedule, period, backlog))[0]


def _predict(kernel, block, grid, k, build, cfg, k_step, shift, progress, traced, previous=None,
             first_only=False):
    """:func:`predict`; returns the prediction, its dispatcher schedule (CTA index -> (slot,
    start, end)) and the backlog a full wave leaves (None for a launch of at most one wave).
    ``previous``: the schedule of the launch before, its period in cycles (its reads and stores are
    what the L2 holds at the start) and the backlog of its waves: a later wave starts behind the
    work its previous wave's stores left queued, which the first wave's short samples, busy with
    the write-backs of the launch before, would overstate (they drain in the wave's first
    iterations, long before its end at the real K). ``first_only``: a launch of more than a wave
    is laid out at its first wave's cost only (no window, wave start or tail simulated), and the
    prediction returned is None: all the launch before needs."""
    t_wall = time.perf_counter()
    gx, gy = grid
    n = gx * gy
    sms = cfg.gpu.sms
    resident, _ = residency(kernel, block, cfg)
    wave = sms * resident
    full, left = divmod(n, wave)
    iters = k / k_step
    phases = []

    history = _History(kernel, grid, block, build, shift, cfg, k_step, iters, gx, wave) \
        if n > wave or previous is not None else None
    if previous is not None:
        history.period = previous[1]  # every warming also sees the launch before

    # the first wave (or the whole launch when it is at most one wave)
    first_ids = [(i % gx, i // gx) for i in range(min(n, wave))]
    first, ms_first = _whole(kernel, block, grid, k, k_step, build, cfg, first_ids, progress,
                             "first wave" if full else "launch", traced=traced if n <= wave else None,
                             settle=0.0 if n <= wave else None,
                             warm=None if previous is None else lambda ms: history.warm(ms, previous[0], 0.0))
    phases.append(first.phase)
    if n <= wave:
        cycles = first.predicted
        memory = _scale(first.phase.memory, cycles / max(first.phase.memory["cycles"], 1))
        schedule = [(j, 0.0, float(d)) for j, d in enumerate(first.duration)]
        return _done(cfg, cycles, phases, n / wave, resident, 0.0, memory, t_wall), \
            schedule, None

    slots = wave
    # every slot at the first wave's mean cost: the CTAs of a wave that start together end together
    # (module docstring), so the steady-state windows sample a population that has kept the first
    # wave's alignment
    fixed = float(np.mean(first.fixed))  # cycles a CTA costs besides its main-loop iterations
    per_iter = float(np.mean(first.per_iter))  # cycles per main-loop iteration
    skew = 0.0
    tail = None

    windows = []  # the steady-state windows: one, or one before and one after `switch` (below)
    switch = [n]  # two windows: the first CTA that starts after the L2 began writing results back

    wave_start = None  # the simulated start of a later wave (_wave_start), once there is one

    def steady(window, j):
        if j in window.durations:
            return window.durations[j]
        f = wave_start.fixed if wave_start is not None and window is windows[-1] else fixed
        return f + iters * window.per_iter.get(j, per_iter)

    def duration(j, i, t):
        if i >= full * wave:  # a tail CTA: from the tail's own simulation (its CTAs in dispatch order)
            return tail.duration[i - full * wave] if tail is not None else fixed + iters * per_iter
        if i < wave or not windows:
            return fixed + iters * per_iter
        if len(windows) == 1:
            return steady(windows[0], j)
        # the CTAs before the switch at the first window's pace, the others at the second's
        return steady(windows[0] if i < switch[0] else windows[1], j)

    hold = full * wave if left else None  # see the tail below
    # the L2/DRAM work a wave leaves queued at its end (its posted stores), ahead of the next CTAs
    # (what is left of it when a later CTA starts: sm.cta_launch_cycles after its slot freed)
    backlog = _backlog(ms_first, first.phase.cycles[-1] + cfg.sm.cta_launch_cycles) if previous is None \
        else previous[2]
    schedule = dispatch(n, slots, duration, hold, timed=True, launch=cfg.sm.cta_launch_cycles,
                        interval=cfg.gpu.cta_dispatch_interval)
    if first_only:
        return None, schedule, backlog
    if full >= 2:
        found = []
        times, switch[0] = _window_times(schedule, wave, full, history)
        for at in times:
            window = _steady_state(kernel, block, grid, k, k_step, build, shift, cfg, schedule, at, resident,
                                   gx, progress, history, first.stagger)
            phases.append(window.phase)
            found.append(window)
        windows.extend(found)
        skew = windows[-1].skew
        live = resident_at(schedule, times[-1])
        if live:
            # the start of a later wave: the cost of its CTAs besides their steady iterations
            rate = {i: windows[-1].per_iter.get(j, per_iter) for j, (i, _, _) in live.items()}
            wave_start = _wave_start(kernel, block, grid, k, k_step, build, cfg, schedule, live, rate, gx,
                                     progress, history, backlog, first.stagger)
            phases.append(wave_start.phase)
        schedule = dispatch(n, slots, duration, hold, timed=True, launch=cfg.sm.cta_launch_cycles,
                        interval=cfg.gpu.cta_dispatch_interval)
    if left:
        # the tail's CTAs in the order the dispatcher hands them out, each on the slot that takes it.
        # They start when the last full wave has ended: the epilogue stores of that wave are posted
        # and fill the L2's queue (2 MB of C for a wave of sgemm_128: ~5,500 cycles of L2 bandwidth)
        # ahead of the tail's first loads, which are simulated behind that backlog
        t0 = schedule[full * wave][1]
        tail_ids = [(i % gx, i // gx) for i in range(full * wave, n)]
        tail, _ = _whole(kernel, block, grid, k, k_step, build, cfg, tail_ids, progress, "tail",
                         backlog=backlog, warm=lambda ms: history.warm(ms, schedule, t0), settle=t0,
                         stagger=first.stagger, on_sms=_tail_sms(first.sampled, len(tail_ids), sms))
        phases.append(tail.phase)
        schedule = dispatch(n, slots, duration, hold, timed=True, launch=cfg.sm.cta_launch_cycles,
                        interval=cfg.gpu.cta_dispatch_interval)
    cycles = max(e for _, _, e in schedule)

    # launch memory figures: the first wave's, the steady window's per cycle over the steady part,
    # the tail's
    t_first = max(e for _, _, e in schedule[:wave])
    t_tail = tail.predicted if tail is not None else 0.0
    memory = _scale(first.phase.memory, t_first / max(first.phase.memory["cycles"], 1))
    middle = (t_first, max(cycles - t_tail, t_first))
    starts = [0.0] + ([schedule[switch[0]][1]] if switch[0] < n else [])
    parts = list(zip(starts, [w.phase.memory for w in windows])) or [(0.0, first.phase.memory)]
    for (start, src), nxt in zip(parts, [p[0] for p in parts[1:]] + [float("inf")]):
        span = max(0.0, min(nxt, middle[1]) - max(start, middle[0]))
        if span and wave_start is not None and nxt == float("inf"):
            # each wave of this part starts as the simulated wave start did (its write-backs of
            # the previous wave's results), then runs at the window's pace
            first_here = max(wave, min(switch[0], full * wave)) if len(windows) == 2 else wave
            waves_here = max(0.0, full * wave - first_here) / wave
            start_mem = wave_start.phase.memory
            memory = _add(memory, _scale(start_mem, waves_here))
            span = max(0.0, span - waves_here * start_mem["cycles"])
        if span:
            memory = _add(memory, _scale(src, span / max(src["cycles"], 1)))
    if tail is not None:
        memory = _add(memory, _scale(tail.phase.memory, t_tail / max(tail.phase.memory["cycles"], 1)))
    return _done(cfg, cycles, phases, n / wave, resident, skew, memory, t_wall), \
        schedule, backlog


def dram_busy(phase):
    """The share of a simulated piece's cycles the DRAM channels were busy (their mean; it can pass
    1 when transfers queued in the piece end after its last CTA)."""
    return phase.memory.get("dram_busy_cycles", 0.0) / max(phase.memory.get("cycles", 0.0), 1.0)


def _done(cfg, cycles, phases, waves, resident, skew, memory, t_wall):
    memory = dict(memory)
    memory["cycles"] = cycles
    seconds = cfg.cycles_to_seconds(cycles) + cfg.gpu.launch_overhead_us * 1e-6
    steady = [dram_busy(ph) for ph in phases if ph.name == "steady state"]
    busy = max(steady) if steady else dram_busy(phases[0])
    return Prediction(cycles=cycles, seconds=seconds, phases=phases, waves=waves, resident_ctas=resident,
                      progress_skew=skew, memory=memory, sim_seconds=time.perf_counter() - t_wall,
                      dram_busy=busy, dram_bound=bool(steady) and busy >= DRAM_SATURATED)


# ---- a wave simulated whole ------------------------------------------------------------------------

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
        ms = MemorySystem(cfg)
        if warm is not None:
            warm(ms)
        _queue_backlog(ms, backlog)
        if on_sms is None:
            placement, queue = round_robin(ctas, sms, per_sm)
        else:
            placement, queue = [[] for _ in range(sms)], None
            for sm, cta in zip(on_sms, ctas):
                placement[sm].append(cta)
        used = run_sms(kernel, block, cfg, _staggered(placement, stagger), ms, queue=queue, hazards=None,
                       flatten_together=True)
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


def _tail_sms(ends, n, sms):
    """The SMs of a launch's ``n`` tail CTAs: the block dispatcher hands each to the slot that frees
    first, and an SM's slots free close together (its CTAs end within ~60-400 cycles of one another,
    the SMs within more), so the tail goes to both slots of the SMs that finish first rather than
    one per SM. The order of the slots' ends is the first wave's (``ends``: per slot j, on SM
    j mod ``sms``). sgemm_128 at N = 1536 on the GTX 980 (144 CTAs, a tail of 16 on 32 slots): the
    full simulation runs 6 SMs with 2 tail CTAs and 4 with 1, the tail then taking a full CTA's
    time (403,600 cycles) where one CTA per SM takes 205,000."""
    order = sorted(range(len(ends)), key=lambda j: (ends[j], j))
    return [j % sms for j in order[:n]]  # a tail is shorter than a wave: n < len(ends)


def _staggered(placement, stagger):
    """``placement`` (per SM, its CTAs oldest first) with each CTA's start delay: the q-th of SM s
    starts ``stagger[s][q]`` cycles after the SM's first. A later wave's CTAs on one SM start as the
    previous CTAs of its slots end, which is not at one cycle: the first wave's simulation gives
    the spread (its CTAs end in the order and at the spacing it shows; sgemm_128 at N = 4096 on
    the GTX 980: 90-120 cycles between an SM's two CTAs). CTAs that start at the same cycle with
    the same trace run in lockstep, which the full simulation's later waves do not: the co-resident
    CTAs of sgemm_128 that share a B panel then read it together (every shared lookup merged into a
    fill under way) instead of the second finding the first's data in the L1 (24% of the
    lookups)."""
    if not stagger:
        return placement
    out = []
    for s, ctas in enumerate(placement):
        offs = stagger[s] if s < len(stagger) else []
        out.append([(c[0], c[1], int(round(offs[q]))) if q < len(offs) and offs[q] else c
                    for q, c in enumerate(ctas)])
    return out


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


# ---- the steady state --------------------------------------------------------------------------------

@attrs.frozen
class _Steady:
    phase: Phase
    per_iter: dict  # slot -> steady cycles per loop iteration
    skew: float
    durations: dict  # slot -> steady cycles of a whole CTA, where the window ran one whole


def _window_times(schedule, wave, full, history):
    """The cycles of ``schedule`` at which the steady state is sampled, and the index of the first
    CTA that the second window (if any) stands for.

    One window in the middle of the full waves after the first, unless the L2 is still taking the
    results in then: a launch whose first waves fit in the L2 stores its results there without
    writing anything back, and only once it is full does each new line cost the eviction, and
    write-back, of a result. When that starts (:meth:`_History.writeback_time`) after the first
    wave, the launch is sampled twice: in the middle of the part before, and of the part after."""
    ends = [e for _, _, e in schedule]
    a = float(np.mean(ends[:wave]))
    b = float(np.mean(ends[(full - 1) * wave: full * wave]))
    t = history.writeback_time(schedule, b)
    iters, sms = history.iters, history.cfg.gpu.sms
    if t is None or not any(e <= t for _, _, e in schedule[wave:]):
        # no CTA after the first wave runs its whole life before the write-backs begin
        return [_mid_life(schedule, _clear_of_ends(schedule, (a + b) / 2, a, b, iters, sms))], len(schedule)
    after = min((i for i, (_, s, _) in enumerate(schedule) if s >= t), default=len(schedule))
    # the part before the write-backs may be shorter than a CTA (they begin as the second wave
    # starts): its window may then start up to half a CTA later, inside the CTAs it stands for
    d = float(np.median([e - s for _, s, e in schedule]))
    return [_mid_life(schedule, _clear_of_ends(schedule, (a + t) / 2, a, max(t, min(b, a + d / 2)), iters, sms)),
            _mid_life(schedule, _clear_of_ends(schedule, (t + b) / 2, t, b, iters, sms))], after


def _mid_life(schedule, t):
    """The middle of the lives of the CTAs resident at cycle ``t`` (median of their midpoints): the
    window then samples the steady part of their loop, away from the start of a wave (where the
    previous wave's results leave the L2, sampled by the wave's own simulation)."""
    live = resident_at(schedule, t)
    if not live:
        return t
    return float(np.median([(s + e) / 2 for _, s, e in live.values()]))


WINDOW_SHIFTS = 16  # candidate window starts tried on each side of the middle (see _clear_of_ends)


def _clear_of_ends(schedule, t, lo, hi, iters, sms):
    """``t``, or when no SM would have all its resident CTAs far enough from their ends
    (``STEADY_SKIP + 2`` iterations left) for :func:`_sm_loop_cycles` to measure it, the nearest
    start (within [lo, hi], at most half a CTA's duration away) where one has. Early in a launch the
    waves are still aligned and every slot's CTA ends at about the same time: a window started just
    before those ends finds no steady cost to measure (sgemm_64 at N = 2560 on the GTX 980: its
    first window fell back to the first wave's cost). A window is moved only then: the steady cost
    of one window depends on where it falls (moved whenever a CTA had less than a window left,
    sgemm_128's windows at N = 1920 landed at a wave's start, where CTAs run in step as a first
    wave does, and one SM's 2,431 cycles per iteration made the launch 10% slower)."""
    d = float(np.median([e - s for _, s, e in schedule]))
    need = STEADY_SKIP + 2
    best = None
    for f in sorted(np.linspace(-0.5, 0.5, 2 * WINDOW_SHIFTS + 1).tolist(), key=abs):
        c = t + f * d
        if not lo <= c <= hi:
            continue
        live = resident_at(schedule, c)
        if not live:
            continue
        short = {j % sms for j, (_, s, e) in live.items() if e <= s or (e - c) / (e - s) * iters < need}
        used = {j % sms for j in live}
        good = len(used - short)
        if good:
            return c
        if best is None or good > best[0]:
            best = (good, c)
    return best[1] if best is not None else t


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
    ms = MemorySystem(cfg)
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
        rate = _sm_loop_cycles([w for w in sm.all_warps if w.cta.cid in present], stop)
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
                backlog, stagger=None):
    """The start of a later wave: the CTAs ``live`` (``{slot: (cta index, start, end)}``, the
    wave a steady-state window sampled), simulated whole from their start to K = ``WAVE_START_K``
    (or K), behind the L2's history at that start (the previous wave's results in it, dirty, and
    its reads) and behind ``backlog``. A CTA's cycles there, less its steady iterations at
    ``rate[cta index]`` (the window's), are its cost besides them: prologue, epilogue and what the
    wave's start costs, above all the write-backs of the previous wave's results, which the new
    reads evict (quarter GTX 980, sgemm_64, N = 1024, DRAM-bound: the first 16 of a CTA's 128
    iterations cost 4,000-5,600 cycles, the others 2,300-2,900; a window in mid-wave sees none of
    it). The mean over the wave's CTAs."""
    t0 = min(s for _, s, _ in live.values())
    ids = [i for i, _, _ in sorted(live.values())]
    kb = min(k, WAVE_START_K)
    start, _ = _whole(kernel, block, grid, k, k_step, build, cfg, [(i % gx, i // gx) for i in ids], progress,
                      "wave start", backlog=backlog, warm=lambda ms: history.warm(ms, schedule, t0), at=kb,
                      stagger=stagger)
    extra = [d - rate[i] * kb / k_step for i, d in zip(ids, start.sampled)]
    return _WaveStart(start.phase, float(np.mean(extra)))


def _sm_loop_cycles(warps, stop):
    """Cycles per main-loop iteration of one CTA on an SM, from the SM's throughput: over the
    interval in which every one of ``warps`` is past its first ``STEADY_SKIP`` iterations and
    still in its loop (up to ``stop``), the interval's length over the mean number of iterations
    the warps completed in it (each warp's progress interpolated between its loop branches).
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
    return (t1 - t0) / mean if mean > 0 else None


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


def _unit_sectors(traces, kernel, units_wanted):
    """The distinct sectors (sorted byte addresses) the warp traces ``traces`` access with
    instructions of ``units_wanted`` (e.g. ("tex", "ldg"): the texture fetches and global loads)."""
    units = kernel.instructions
    rows_of = {}  # id(segment) -> (segment, the rows the warps ran it as): the warps share segments
    for tr in traces:
        for seg, row in tr.parts:
            ent = rows_of.get(id(seg))
            if ent is None:
                ent = rows_of[id(seg)] = (seg, set())
            ent[1].add(row)
    out = []
    for seg, rows in rows_of.values():
        at = [pos for pos in seg.mem if units[seg.pcs[pos]].unit in units_wanted]
        if not at:
            continue
        rows = sorted(rows)
        lo, hi = rows[0], rows[-1] + 1
        for pos in at:
            summ = seg.mem[pos]
            if hi - lo == len(rows) and isinstance(summ, SectorLists):
                # a CTA's warps are consecutive rows: their lists are one run of the flat array
                out.append(summ.flat[(int(summ.ends[lo - 1]) if lo else 0):int(summ.ends[hi - 1])])
            else:
                out.extend(summ[r] for r in rows)
    return np.unique(np.concatenate(out).astype(np.int64, copy=False)) if out else np.zeros(0, np.int64)


_KNOWN = {}  # the sectors of CTAs traced for a history, by problem (see _known_sectors), latest last
KNOWN_PROBLEMS = 2  # problems whose CTAs' sectors are kept (a simulator setting: bounds memory)


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
            self.base[i] = _unit_sectors(traces, self.kernel, ("tex", "ldg"))
            self.stores[i] = _unit_sectors(traces, self.kernel, ("stg",))

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


# ---- memory figures ------------------------------------------------------------------------------------

def memory_counters(ms, cycles, sms=()):
    """Additive counters of one simulated piece: the memory system's, the SMs' L1/texture caches'
    and resident warp-cycles (for the profiler metrics, :mod:`maxsim.report.metrics`), and its
    ``cycles``."""
    from ..report.metrics import resident_warp_counters
    st = ms.stats()
    out = {k: float(v) for k, v in st.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
           and not k.endswith(("rate", "utilisation", "utilization", "delay", "p95"))}
    for key in ("l2_read_hits", "l2_read_misses", "dram_bytes_read", "dram_bytes_written"):
        out[key] = float(getattr(ms, key))
    for sm in sms:
        l1 = sm.l1
        out["tex_sector_hits"] = out.get("tex_sector_hits", 0.0) + l1.sector_hits
        out["tex_sector_misses"] = out.get("tex_sector_misses", 0.0) + l1.sector_misses
        out["tex_pending_hits"] = out.get("tex_pending_hits", 0.0) + l1.pending_hits
    if sms:
        out.update({k: float(v) for k, v in resident_warp_counters(sms).items()})
    out["cycles"] = float(cycles)
    return out


def _scale(mem, f):
    return {k: v * f for k, v in mem.items()}


def _add(a, b):
    return {k: a.get(k, 0.0) + b.get(k, 0.0) for k in set(a) | set(b)}


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


def samples_needed(grid, k, sms, resident):
    """How many short simulations :func:`predict` will run at least (for progress bars): one more
    when the L2 fills up during the full waves after the first (:func:`_window_times`), and more when
    a wave or a tail is sampled again to settle."""
    n = grid[0] * grid[1]
    wave = sms * resident
    per_whole = 1 if k <= WAVE_K_SAMPLES[1] else 2
    full, left = divmod(n, wave)
    count = per_whole
    if n > wave and left:
        count += per_whole
    if full >= 2:
        count += 2  # a steady-state window and the start of its wave
    return count


__all__ = ["predict", "Prediction", "Phase", "dispatch", "resident_at", "samples_needed", "WAVE_K_SAMPLES",
           "WAVE_SETTLE", "WAVE_SETTLE_MAX_K", "TAIL_SETTLE", "STEADY_ITERATIONS", "STEADY_SKIP", "HISTORY_FILL"]
