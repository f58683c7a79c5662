"""Sampled prediction of launches with an SGEMM-shaped main loop over an inner dimension K: the first
wave and the tail simulated whole at small K, a steady-state window of the resident CTAs at their
place along K, the start of a later wave, all on every SM against one shared L2 and DRAM, joined by
the dispatcher model (:mod:`.dispatcher`). Choosing the samples is :mod:`.kloop_choose`, running
them :mod:`.kloop_run`, the launch's history in the L2 :mod:`.kloop_history`; this module
extrapolates. The method and the figures it was checked against: docs/prediction-methods.md."""

from __future__ import annotations

import time

import numpy as np

from ...timing.memory_system import L2_STARTS
from ...timing.sm import residency
from .dispatcher import dispatch, resident_at
from .kloop_choose import _grown, _tail_sms, _window_times
from .kloop_history import _History
from .kloop_run import _backlog, _steady_state, _wave_start, _whole
from .records import Prediction, _add, _scale, dram_busy
from .settings import DRAM_SATURATED, KLOOP_AGREEMENT, SLOT_ORDER


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
        gap = cfg.gpu.cta_dispatch_interval if cfg.gpu.first_wave == "dispatched" else 0
        schedule = [(j, float(j * gap), float(j * gap + d)) for j, d in enumerate(first.duration)]
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
    # which slot a later CTA takes: slots that free together free in the order of the first wave's
    # ends (its simulation), as the full simulation's dispatcher hands each CTA to the slot that
    # frees first; that order decides which CTAs share an SM, and so which A and B panels its L1
    # and the L2 see together (kloop.slot_order)
    gap = cfg.gpu.cta_dispatch_interval if cfg.gpu.first_wave == "dispatched" else 0
    order = [j * gap + d for j, d in enumerate(first.sampled)] if SLOT_ORDER == "first_wave_ends" else None
    period = history.page_period(margin=False)  # (kloop_choose._grown)
    # the L2/DRAM work a wave leaves queued at its end (its posted stores), ahead of the next CTAs
    # (what is left of it when a later CTA starts: sm.cta_launch_cycles after its slot freed)
    backlog = _backlog(ms_first, first.phase.cycles[-1] + cfg.sm.cta_launch_cycles) if previous is None \
        else previous[2]
    schedule = dispatch(n, slots, duration, hold, timed=True, launch=cfg.sm.cta_launch_cycles,
                        interval=cfg.gpu.cta_dispatch_interval, first_wave=cfg.gpu.first_wave, ends=order)
    if first_only:
        return None, schedule, backlog
    if full >= 2:
        found = []
        times, switch[0] = _window_times(schedule, wave, full, history)
        for at in times:
            window = _steady_state(kernel, block, grid, k, k_step, build, shift, cfg, schedule, at, resident,
                                   gx, progress, history, _grown(first.stagger, _waves_before(schedule, at, wave), period))
            phases.append(window.phase)
            found.append(window)
        windows.extend(found)
        skew = windows[-1].skew
        live = resident_at(schedule, times[-1])
        if live:
            # the start of a later wave: the cost of its CTAs besides their steady iterations
            rate = {i: windows[-1].per_iter.get(j, per_iter) for j, (i, _, _) in live.items()}
            wave_start = _wave_start(kernel, block, grid, k, k_step, build, cfg, schedule, live, rate, gx,
                                     progress, history, backlog, _grown(first.stagger, _waves_before(schedule, times[-1], wave), period),
                                     on_slots=order is not None)
            phases.append(wave_start.phase)
        schedule = dispatch(n, slots, duration, hold, timed=True, launch=cfg.sm.cta_launch_cycles,
                        interval=cfg.gpu.cta_dispatch_interval, first_wave=cfg.gpu.first_wave, ends=order)
    if left:
        # the tail's CTAs in the order the dispatcher hands them out, each on the slot that takes it
        # (in the order of the slots' ends in the first wave's simulation: see _tail_sms; the last
        # full wave's ends in the dispatcher model were measured and not kept, docs/memory-hierarchy.md).
        # They start when the last full wave has ended: the epilogue stores of that wave are posted
        # and fill the L2's queue (2 MB of C for a wave of sgemm_128: ~5,500 cycles of L2 bandwidth)
        # ahead of the tail's first loads, which are simulated behind that backlog
        t0 = schedule[full * wave][1]
        tail_ids = [(i % gx, i // gx) for i in range(full * wave, n)]
        tail, _ = _whole(kernel, block, grid, k, k_step, build, cfg, tail_ids, progress, "tail",
                         backlog=backlog, warm=lambda ms: history.warm(ms, schedule, t0), settle=t0,
                         stagger=_grown(first.stagger, full, period), on_sms=_tail_sms(first.sampled, len(tail_ids), sms))
        phases.append(tail.phase)
        schedule = dispatch(n, slots, duration, hold, timed=True, launch=cfg.sm.cta_launch_cycles,
                        interval=cfg.gpu.cta_dispatch_interval, first_wave=cfg.gpu.first_wave, ends=order)
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


def _waves_before(schedule, t, wave):
    """The waves of CTAs the slots of the CTAs resident at cycle ``t`` of ``schedule`` ran before
    them (the median over those CTAs; CTA i of the launch is handed out in wave i // ``wave``)."""
    live = resident_at(schedule, t)
    return int(np.median([i // wave for i, _, _ in live.values()])) if live else 0


def _done(cfg, cycles, phases, waves, resident, skew, memory, t_wall):
    memory = dict(memory)
    memory["cycles"] = cycles
    seconds = cfg.cycles_to_seconds(cycles) + cfg.gpu.launch_overhead_us * 1e-6
    steady = [dram_busy(ph) for ph in phases if ph.name == "steady state"]
    busy = max(steady) if steady else dram_busy(phases[0])
    return Prediction(cycles=cycles, seconds=seconds, phases=phases, waves=waves, resident_ctas=resident,
                      progress_skew=skew, memory=memory, sim_seconds=time.perf_counter() - t_wall,
                      dram_busy=busy, dram_bound=bool(steady) and busy >= DRAM_SATURATED)


def simulated_share(p, grid, k, k_step):
    """The share of a K-loop launch's work the prediction ``p`` simulated: CTAs x K of each sample
    (a steady-state window: its iterations) over the launch's CTAs x K, at most 1."""
    done = 0.0
    for ph in p.phases:
        if ph.name == "steady state":
            done += ph.ctas * ph.ks[0]  # (its iterations x k_step)
        else:
            done += ph.ctas * sum(ph.ks)
    return min(1.0, done / max(1, grid[0] * grid[1] * k))


def interval(p):
    """The K-loop prediction's interval of cycles: its tested agreement with full simulations
    (``KLOOP_AGREEMENT``) either side."""
    return (p.cycles * (1 - KLOOP_AGREEMENT), p.cycles * (1 + KLOOP_AGREEMENT))
