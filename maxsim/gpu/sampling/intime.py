"""Sampling in time: a launch of at most one wave of long CTAs, simulated on the whole GPU until its
rates are stable, then extrapolated (the intra-kernel stability of Principal Kernel Analysis,
Avalos Baddouh et al., MICRO 2021).

Every CTA runs functionally first (every output computed), so each SM's warp instructions are
known. The SMs then run together, and every ``window`` cycles (``PROGRESS_CYCLES`` of the clock)
the warp instructions issued and the L2 requests are counted. Once the last ``2 x block`` windows
split into two blocks whose instructions and L2 requests agree within ``stable``, no queue of L2
or DRAM work grows over them by more than ``stable`` of their cycles, and at least
``least`` of the launch's instructions have run, the simulation stops: each SM ends after its
remaining instructions at its rate over those windows, and the launch ends with the last SM. The
interval: the same with each block's rates alone. A launch not stable by ``most`` of its
instructions is simulated to its end.
"""

from __future__ import annotations

import attrs

from ...timing.clock import PROGRESS_CYCLES, advance
from ...timing.sm import SM
from ..gpu import QUANTUM, round_robin
from .records import _scale, memory_counters
from .settings import SETTINGS

_T = SETTINGS["in_time"]
BLOCK = _T["block"]
STABLE = _T["stable"]
LEAST = _T["least"]
MOST = _T["most"]
MIN_INSTRUCTIONS = _T["min_instructions"]


class _Stable(Exception):
    """Raised from the clock's progress report to stop the run once the rates are stable."""


@attrs.frozen
class InTimePrediction:
    cycles: float
    interval: tuple
    simulated_share: float
    memory: dict
    flops: float
    stopped_at: float  # the cycle the simulation stopped (the launch's cycles when run to its end)
    details: dict


def applies(n_ctas, slots) -> bool:
    """A launch of at most one wave (and of more than one CTA): sampled in time when it has at
    least ``MIN_INSTRUCTIONS`` warp instructions."""
    return 1 < n_ctas <= slots


def _stable(a, b):
    return abs(a - b) <= STABLE * max(1.0, (a + b) / 2)


def predict(kernel, block, cfg, items, per_sm, hazards=None) -> InTimePrediction:
    """The launch of ``items`` ((cta id, warp traces) of at most one wave) on every SM of ``cfg``."""
    from .kloop_run import _memory_system
    ms = _memory_system(cfg)
    totals = {}
    for p, (_, traces) in enumerate(items):
        totals[p % cfg.gpu.sms] = totals.get(p % cfg.gpu.sms, 0) + sum(len(t) for t in traces)
    total = sum(totals.values())
    placement, _ = round_robin(list(items), cfg.gpu.sms, per_sm)
    items = None
    sms = [SM(cfg, kernel, block, ms, hazards=hazards, sm_id=i) for i, ctas in enumerate(placement) if ctas]
    for sm in sms:
        sm.keep_branch_times = False
        for cid, traces in placement[sm.sm_id]:
            sm.add_cta(cid, traces)
        placement[sm.sm_id].clear()
    marks = []  # per window end: (per-SM issued, L2 requests, L2 and DRAM work queued past it)
    span = BLOCK * PROGRESS_CYCLES

    def tell(done, *_):
        t = (len(marks) + 1) * PROGRESS_CYCLES
        marks.append(([sm.issued() for sm in sms], ms.l2_read_hits + ms.l2_read_misses,
                      max(0.0, ms.l2_server.next_free - t), max(0.0, ms.dram_server.next_free - t)))
        if done >= MOST * total or len(marks) < 2 * BLOCK + 1 or done < LEAST * total:
            return
        i0, i1, i2 = marks[-2 * BLOCK - 1], marks[-BLOCK - 1], marks[-1]
        # the instructions and L2 requests of the two blocks agree, and no queue of L2 or DRAM work
        # grows over them (a memory-bound launch issues at a steady pace while its DRAM queue
        # fills, then slows down: a matrix-vector product by columns stopped there was 43% fast)
        if _stable(sum(i1[0]) - sum(i0[0]), sum(i2[0]) - sum(i1[0])) and _stable(i1[1] - i0[1], i2[1] - i1[1]) \
                and all(abs(i2[q] - i0[q]) <= STABLE * span for q in (2, 3)):
            raise _Stable
    try:
        advance(sms, QUANTUM, progress=tell, total=total)
    except _Stable:
        pass
    else:  # ran to its end
        cycles = max(sm.now for sm in sms)
        return InTimePrediction(float(cycles), (float(cycles), float(cycles)), 1.0, memory_counters(ms, cycles, sms),
                                float(sum(sm.stats.flops for sm in sms)), float(cycles),
                                {"windows": len(marks), "stable": False})
    t = len(marks) * PROGRESS_CYCLES
    i0, i1, i2 = marks[-2 * BLOCK - 1], marks[-BLOCK - 1], marks[-1]

    def end(a, b, windows):
        out = t
        for k, sm in enumerate(sms):
            rate = (b[0][k] - a[0][k]) / (windows * PROGRESS_CYCLES)
            left = totals[sm.sm_id] - i2[0][k]
            if left > 0:
                out = max(out, t + (left / rate if rate > 0 else float("inf")))
        return out
    cycles = end(i0, i2, 2 * BLOCK)
    both = (end(i0, i1, BLOCK), end(i1, i2, BLOCK))
    issued = sum(i2[0])
    f = total / issued if issued else 1.0
    mem = _scale(memory_counters(ms, t, sms), f)
    mem["cycles"] = cycles
    return InTimePrediction(float(cycles), (float(min(both + (cycles,))), float(max(both + (cycles,)))), issued / total,
                            mem, f * float(sum(sm.stats.flops for sm in sms)), float(t),
                            {"windows": len(marks), "stable": True, "stopped_at_cycle": t})
