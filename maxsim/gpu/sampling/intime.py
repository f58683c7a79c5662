"""Sampling in time: a launch of at most one wave (few long CTAs), simulated on the whole GPU until
its rates are stable, then extrapolated (the intra-kernel stability of Principal Kernel Analysis,
Avalos Baddouh et al., MICRO 2021).

The launch runs as a full simulation does (its functional run streamed into every SM together, the
shared L2 and DRAM), watched by a :class:`Watch`: every ``PROGRESS_CYCLES`` of the clock (a window)
it notes each SM's warp instructions issued and the L2 and DRAM work queued. At window ``n`` the
windows after the first ``skip`` of them (left out: the launch's start) are cut into ``block``
blocks; the rates are stable when the blocks' instruction rates have a mean known within
``stable`` (two standard errors), their first and second halves agree within ``stable``, and
neither queue grew over them by more than ``stable`` of their cycles. A stable rate is not trusted
at once: the run goes on for ``check`` times as many windows again, and the instructions issued
meanwhile must be those the rate foretold within ``stable`` (a launch whose pace changes after a
long steady stretch, as the texture-bound convolution of the suite does, fails this check and
goes on). Once checked, the simulation stops, the functional run goes on to its end (every output
computed; each warp's instructions counted), and each SM ends after its remaining instructions at
its rate over the stable blocks; the launch ends with the last SM.

The interval: the same with the rate off by the larger of two standard errors of the blocks' mean
and the check's miss. A launch that never passes the check is simulated to its end (method
"full", the same figures as a full simulation).
"""

from __future__ import annotations

import attrs
import numpy as np

from ...timing.clock import PROGRESS_CYCLES
from .records import _scale, memory_counters
from .settings import SETTINGS

_T = SETTINGS["in_time"]
BLOCK = _T["block"]
STABLE = _T["stable"]
SKIP = _T["skip"]
CHECK = _T["check"]
MIN_WINDOWS = _T["min_windows"]


class Stable(Exception):
    """Raised from the clock's progress report to stop the run once the rates are stable and
    checked (see :class:`Watch`)."""


def applies(n_ctas, slots) -> bool:
    """A launch of at most one wave (and of more than one CTA) is watched for stable rates."""
    return 1 < n_ctas <= slots


@attrs.frozen
class InTimePrediction:
    cycles: float
    interval: tuple
    simulated_share: float
    memory: dict
    stopped_at: float  # the cycle the simulation stopped
    flops: float  # the launch's: the stopped SMs' scaled as the memory counters
    details: dict


class Watch:
    """The progress report of a whole-GPU run (``progress(done, total, what, unit)``, see
    :func:`maxsim.timing.clock.advance`) that raises :class:`Stable` once the rates are stable and
    checked (the module's docstring). :meth:`start` gives it the SMs and their memory system."""

    def __init__(self):
        self.sms = self.ms = None
        self.issued = []  # per window end: per-SM warp instructions issued
        self.queued = []  # per window end: (L2 work, DRAM work) queued past it, in cycles
        self.candidate = None  # (window, rate per cycle) of a stable rate being checked
        self.stop = None  # once stable: (window, first window of the blocks, half-width, check's miss)

    def start(self, sms, ms):
        self.sms, self.ms = list(sms), ms

    def __call__(self, done, total=None, *_):
        if done is None or self.sms is None:
            return  # (the report at the end of the run)
        n = len(self.issued) + 1
        t = n * PROGRESS_CYCLES
        ms = self.ms
        self.issued.append(np.array([sm.issued() for sm in self.sms], dtype=np.float64))
        self.queued.append((max(0.0, ms.l2_server.next_free - t), max(0.0, ms.dram_server.next_free - t)))
        if self.candidate is not None:
            n0, rate = self.candidate
            if n < n0 + max(1, int(CHECK * n0)):
                return
            want = rate * (n - n0) * PROGRESS_CYCLES
            miss = (self._done(n) - self._done(n0)) / want - 1 if want > 0 else float("inf")
            self.candidate = None
            st = self._stable(n) if abs(miss) <= STABLE else None
            if st is not None:
                a, _, half = st
                self.stop = (n, a, max(half, abs(miss)), miss)
                raise Stable
            return
        if n >= MIN_WINDOWS:
            st = self._stable(n)
            if st is not None:
                self.candidate = (n, st[1])

    def _done(self, n):
        return float(self.issued[n - 1].sum()) if n > 0 else 0.0

    def _stable(self, n):
        """``(first window of the blocks, rate per cycle, relative half-width)`` when the rates are
        stable at window ``n``, else None."""
        m = (n - int(SKIP * n)) // BLOCK
        if m < 1:
            return None
        a = n - m * BLOCK
        done = np.array([self._done(a + j * m) for j in range(BLOCK + 1)])
        b = np.diff(done) / (m * PROGRESS_CYCLES)
        rate = float(b.mean())
        if rate <= 0:
            return None
        half = 2 * float(b.std(ddof=1)) / np.sqrt(BLOCK) / rate
        if half > STABLE or abs(b[:BLOCK // 2].mean() - b[BLOCK // 2:].mean()) > STABLE * rate:
            return None
        span = (n - a) * PROGRESS_CYCLES
        q0 = self.queued[a - 1] if a > 0 else (0.0, 0.0)
        q1 = self.queued[n - 1]
        if any(y - x > STABLE * span for x, y in zip(q0, q1)):
            return None
        return a, rate, half


def per_sm_instructions(res, sms, n_sms):
    """Each SM's warp instructions and CTAs in a launch of one wave (CTA ``p`` of the launch on SM
    ``p % n_sms``, as the dispatcher deals the first wave), from the functional run's count of
    each warp's (``warp_counts``)."""
    wpc = (res.block + 31) // 32
    per_cta = res.warp_counts.reshape(-1, wpc).sum(axis=1)
    on = np.arange(len(per_cta)) % n_sms
    totals = np.bincount(on, weights=per_cta, minlength=n_sms)
    ctas = np.bincount(on, minlength=n_sms)
    return (np.array([totals[sm.sm_id] for sm in sms], dtype=np.float64),
            np.array([ctas[sm.sm_id] for sm in sms], dtype=np.int64))


def extrapolate(watch, res, cfg) -> InTimePrediction:
    """The launch from a run stopped by ``watch`` (:class:`Stable`), with its functional result
    ``res`` (run to its end)."""
    n, a, half, miss = watch.stop
    sms = watch.sms
    t = n * PROGRESS_CYCLES
    totals, ctas = per_sm_instructions(res, sms, cfg.gpu.sms)
    issued = watch.issued[n - 1]
    rate = (issued - (watch.issued[a - 1] if a > 0 else 0.0)) / ((n - a) * PROGRESS_CYCLES)
    left = np.maximum(totals - issued, 0.0)

    def end(f):
        return max([t] + [t + lf / (r * f) if r > 0 else float("inf") for lf, r in zip(left, rate)])
    cycles = end(1.0)
    lo, hi = end(1 + half), end(max(1e-9, 1 - half))
    total = float(totals.sum())
    done = float(issued.sum())
    f = total / done if done else 1.0
    mem = memory_counters(watch.ms, t)
    flops = 0.0
    for sm in sms:  # what the stopped SMs' compiled cores hold and hand over only at their ends
        hits, misses, pending, flops_sm = _so_far(sm)
        mem["tex_sector_hits"] = mem.get("tex_sector_hits", 0.0) + hits
        mem["tex_sector_misses"] = mem.get("tex_sector_misses", 0.0) + misses
        mem["tex_pending_hits"] = mem.get("tex_pending_hits", 0.0) + pending
        flops += flops_sm
    mem = _scale(mem, f)
    # every warp resident from the start to its SM's end (one wave)
    ends = [t + lf / r if r > 0 else t for lf, r in zip(left, rate)]
    mem["resident_warp_cycles"] = float(sum(c * sm.wpc * e for sm, c, e in zip(sms, ctas, ends)))
    mem["active_cycles"] = float(sum(ends))
    mem["cycles"] = cycles
    details = {"windows": n, "stable_from_window": a, "stopped_at_cycle": t, "check_miss": miss,
               "rate_half_width": half, "warp_instructions": total}
    return InTimePrediction(float(cycles), (float(lo), float(hi)), done / total if total else 1.0, mem, float(t),
                            f * flops, details)


def _so_far(sm):
    """An SM stopped mid-run: its L1/texture sector hits, misses and pending hits, and its flops, so
    far (the compiled core hands them over when the SM's run ends)."""
    from ...timing import core as K
    from ...timing.stats import PC_EXEC
    l1, G = sm.l1, sm._G
    npc = len(sm.kernel.instructions)
    flops = float(sm._CNT[PC_EXEC, :npc] @ sm._pc_sums[2])
    return (l1.sector_hits + int(G[K.G_L1_HITS]), l1.sector_misses + int(G[K.G_L1_MISSES]),
            l1.pending_hits + int(G[K.G_L1_PENDING]), flops)
