"""K-loop sampling, choosing the samples: where a steady-state window goes in the dispatcher
model's schedule, which SMs a tail runs on, how CTAs are staggered (see :mod:`.kloop`)."""

from __future__ import annotations

import numpy as np

from .dispatcher import resident_at
from .settings import STAGGER_GROWTH, STEADY_SKIP, WAVE_K_SAMPLES, WINDOW_SHIFTS


def _tail_sms(ends, n, sms):
    """The SMs of a launch's ``n`` tail CTAs: the block dispatcher hands each to the slot that frees
    first, and an SM's slots free close together (its CTAs end within ~60-400 cycles of one another,
    the SMs further apart), so the tail goes to both slots of the SMs that finish first rather than
    one per SM. The order of the slots' ends is the first wave's (``ends``: per slot j, on SM
    j mod ``sms``; ties: the lower slot). sgemm_128 at N = 1536 on
    the GTX 980 (144 CTAs, a tail of 16 on 32 slots): the full simulation runs 6 SMs with 2 tail
    CTAs and 4 with 1, the tail then taking a full CTA's time (403,600 cycles) where one CTA per SM
    takes 205,000."""
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

def _grown(stagger, waves, period, growth=None):
    """``stagger`` (per SM, its CTAs' start delays in the first wave's order of ends: see
    :func:`_staggered`) for CTAs that start after ``waves`` waves of their slots, with
    ``kloop.stagger_growth`` "waves": a later wave's CTAs on an SM start as the previous CTAs of its
    slots end, so with the spacing of those ends, and each CTA adds to the spacing it started with
    what a CTA of its place in the order adds (the first wave's simulation: CTAs that start together
    end that far apart), so that after w waves the CTAs of an SM start w times the first wave's
    spacing apart. Not when the CTAs cross a TLB page every ``period`` iterations (not None: the
    data moved along K spans more pages than the L2 TLB holds, :meth:`_History.page_period`): every
    CTA of an SM that reaches a page waits for the one walk of it and they leave it together, so
    the spacing starts again from each crossing, more than once in a CTA's life. "none" (shipped):
    every later wave at the first wave's spacing. ``growth``: "waves" or "none" (default: the
    setting)."""
    growth = STAGGER_GROWTH if growth is None else growth
    if not stagger or growth == "none" or waves <= 1 or period is not None:
        return stagger
    return [[x * waves for x in row] for row in stagger]

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
