"""Sampling in time: a launch of at most one wave (few long CTAs), simulated on the whole GPU until
its rates are stable, then extrapolated (the intra-kernel stability of Principal Kernel Analysis,
Avalos Baddouh et al., MICRO 2021).

The launch runs as a full simulation does (its functional run streamed into every SM together, the
shared L2 and DRAM), watched by a :class:`Watch`: every ``PROGRESS_CYCLES`` of the clock (a window)
it notes each SM's warp instructions issued and the L2 and DRAM work queued. At window ``n`` the
windows after the first ``skip`` of them (left out: the launch's start) are cut into ``block``
blocks; the rates are stable when the blocks' instruction rates have a mean known within
``stable`` (two standard errors), their first and second halves agree within ``stable``, and
neither queue grew over them by more than ``stable`` of their cycles. ``skip`` holds shares tried in
turn (the first that gives stable blocks is taken): a launch whose start is long is seen stable
once its second half is, not only once its last three quarters are. A stable rate is not trusted
at once: the run goes on for ``check`` times as many windows again, and the instructions issued
meanwhile must be those the rate foretold within ``stable`` (a launch whose pace changes after a
long steady stretch, as the texture-bound convolution of the suite does, fails this check and
goes on). Every window found stable starts a check of its own (a check under way does not hold
back the next: a launch whose rate settles while an earlier, unsettled rate is checked stops as
early as if that one had not been found). Once checked, the simulation stops, the functional run
goes on to its end (every output computed; each warp's instructions counted), and each SM ends
after its remaining instructions at its rate over the stable blocks; the launch ends with the last
SM.

The interval: the same with the rate off by the larger of two standard errors of the blocks' mean
and the check's miss. A launch that never passes the check is simulated to its end (method
"full", the same figures as a full simulation).

A launch timed on SM 0 of its own run (``maxsim run FILE --predict``) is simulated once: SM 0 is
extrapolated with the launch (:func:`complete_timed`).
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
SKIPS = tuple(_T["skip"]) if isinstance(_T["skip"], list) else (_T["skip"],)
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
        self.sums = [0.0]  # per window end (from window 0): all SMs' warp instructions issued
        self.queued = []  # per window end: (L2 work, DRAM work) queued past it, in cycles
        self.checks = {}  # window of a check -> (window, rate per cycle) of the stable rate it checks
        self.stop = None  # once stable: (window, first window of the blocks, half-width, check's miss)

    def start(self, sms, ms):
        self.sms, self.ms = list(sms), ms

    def __call__(self, done, total=None, *_):
        if done is None or self.sms is None:
            return  # (the report at the end of the run)
        n = len(self.issued) + 1
        t = n * PROGRESS_CYCLES
        ms = self.ms
        counts = [sm.issued() for sm in self.sms]
        self.issued.append(np.array(counts, dtype=np.float64))
        self.sums.append(float(sum(counts)))  # (whole numbers: exact, as the array's sum)
        self.queued.append((max(0.0, ms.l2_server.next_free - t), max(0.0, ms.dram_server.next_free - t)))
        st = self._stable(n) if n >= MIN_WINDOWS else None
        checked = self.checks.pop(n, None)
        if checked is not None and st is not None:
            n0, rate = checked
            want = rate * (n - n0) * PROGRESS_CYCLES
            miss = (self._done(n) - self._done(n0)) / want - 1 if want > 0 else float("inf")
            if abs(miss) <= STABLE:
                a, _, half = st
                self.stop = (n, a, max(half, abs(miss)), miss)
                raise Stable
        if st is not None:
            self.checks.setdefault(n + max(1, int(CHECK * n)), (n, st[1]))

    def _done(self, n):
        return self.sums[n]

    def _stable(self, n):
        """``(first window of the blocks, rate per cycle, relative half-width)`` when the rates are
        stable at window ``n`` after leaving out the first of its windows by one of the shares
        ``SKIPS`` (the first share that gives stable blocks), else None."""
        for skip in SKIPS:
            st = self._stable_after(n, skip)
            if st is not None:
                return st
        return None

    def _stable_after(self, n, skip):
        """:meth:`_stable` with the first ``skip`` of the windows left out."""
        m = (n - int(skip * n)) // BLOCK
        if m < 1:
            return None
        a = n - m * BLOCK
        sums = self.sums
        done = np.array([sums[a + j * m] for j in range(BLOCK + 1)])
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
               "rate_half_width": half, "warp_instructions": total,
               "memory_factor": f}
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


def sm_end(watch, res, cfg, sm):
    """``(end cycle, low, high, its warp instructions, issued so far)`` of one SM of a run stopped
    by ``watch``: its remaining instructions at its rate over the stable blocks, and the same with
    the rate off by the run's half-width."""
    n, a, half, _ = watch.stop
    t = n * PROGRESS_CYCLES
    i = watch.sms.index(sm)
    totals, _ = per_sm_instructions(res, watch.sms, cfg.gpu.sms)
    issued = float(watch.issued[n - 1][i])
    rate = (issued - (float(watch.issued[a - 1][i]) if a > 0 else 0.0)) / ((n - a) * PROGRESS_CYCLES)
    left = max(float(totals[i]) - issued, 0.0)

    def end(f):
        return t + left / (rate * f) if rate > 0 else float(t)
    return end(1.0), end(1 + half), end(max(1e-9, 1 - half)), float(totals[i]), issued


_SCALED_STATS = ("ffma", "flops", "dual_issues", "bank_conflicts", "bank_conflict_cycles", "delayed_conflicts",
                 "reuse_hits", "operand_reads", "shared_requests", "shared_wavefronts", "tex_requests",
                 "tex_sectors", "tex_hits", "stores")


def complete_timed(sm, watch, res, cfg, block, launch_factor):
    """SM 0 of a whole-GPU run stopped by ``watch`` as the launch's timed SM (a launch simulated
    once, sampled in time): its statistics as they stood at the stop, each count scaled by the
    SM's warp instructions over those it had issued (its own: the functional run's), its cycles
    the end of its remaining instructions at its stable rate (as :func:`extrapolate` ends each
    SM), every CTA it holds resident to then; the memory system behind it (the GPU's L2 and DRAM)
    scaled as the launch's counters (``launch_factor``). Call after :func:`extrapolate` (this folds
    the SM's running counters into its statistics). Returns the SM, its ``sampled_in_time`` set to
    how its figures were made (``sm_prediction_method``, ``sm_simulated_share``,
    ``sm_cycles_interval``: its end with the rate off by the run's half-width)."""
    from ...timing import core as K
    from ...timing.stats import PC_EXEC, PC_STALLS, STALL_REASONS
    end, lo, hi, total, issued = sm_end(watch, res, cfg, sm)
    f = total / issued if issued else 1.0
    W = sm._W
    live = [(slot, v) for slot, v in enumerate(sm._slot_warp) if v is not None and not v.done]
    live_stalls = {v.label: W[slot, K.W_STALLS:K.W_STALLS + len(STALL_REASONS)].tolist() for slot, v in live}
    sm._end()  # the core's counters into the statistics, as at the end of a run
    st = sm.stats
    for name in _SCALED_STATS:
        setattr(st, name, int(round(getattr(st, name) * f)))
    per_pc = np.rint(st.per_pc * f).astype(np.int64)
    npc = per_pc.shape[0]
    # the executions per instruction add up to the SM's count (the rounding's remainder on the most run)
    per_pc[int(np.argmax(per_pc[:, PC_EXEC])), PC_EXEC] += int(total) - int(per_pc[:, PC_EXEC].sum())
    st.per_pc = per_pc
    st.warp_instructions = int(total)
    # every warp's stall cycles, those still running included, from the per-instruction columns
    st.stall_reasons = {r: int(per_pc[:npc, PC_STALLS + j].sum()) for j, r in enumerate(STALL_REASONS)}
    for label, counts in live_stalls.items():
        d = st.warp_stalls.setdefault(label, dict.fromkeys(STALL_REASONS, 0))
        for r, c in zip(STALL_REASONS, counts):
            d[r] += c
    st.warp_stalls = {w: {r: int(round(c * f)) for r, c in d.items()} for w, d in st.warp_stalls.items()}
    st.opcode_counts = {op: int(round(c * f)) for op, c in st.opcode_counts.items()}
    st.cycles = int(round(end))
    sm.now = st.cycles
    l1 = sm.l1
    for name in ("requests", "sector_hits", "sector_misses", "pending_hits", "evictions"):
        setattr(l1, name, int(round(getattr(l1, name) * f)))
    # (one wave: the SM's CTAs are p, p + sms, ... of the launch; those not ended stay to its end)
    index = {c: i for i, c in enumerate(res.ctas)}
    mine = [p for p in range(len(res.ctas)) if p % cfg.gpu.sms == sm.sm_id]
    ended = {cid for cid, _, _ in sm.cta_log}
    sm.cta_log = list(sm.cta_log) + [(res.ctas[p], 0, st.cycles) for p in mine if res.ctas[p] not in ended]
    rows = [index[cid] for cid, _, _ in sm.cta_log if cid in index]
    st.thread_instructions = sum(res.cta_threads(i, 1) for i in rows)
    st.divergent_branches = sum(res.cta_threads(i, 1, res.warp_divergent) for i in rows) \
        if res.warp_divergent is not None else 0
    st.idle_lanes = sum(res.cta_threads(i, 1, res.warp_idle) for i in rows) if res.warp_idle is not None else 0
    wpc = (block + 31) // 32
    st.warps_per_scheduler = sm.max_ctas * wpc / cfg.sm.schedulers
    ms = _ScaledMemory(watch.ms, launch_factor)
    sm.memsys = ms
    st.l2_hits, st.l2_misses = ms.l2_read_hits, ms.l2_read_misses
    st.dram_bytes = ms.dram_bytes_read + ms.dram_bytes_written
    st.functional_seconds = 0.0
    sm.sampled_in_time = {"sm_prediction_method": "sampled in time",
                          "sm_simulated_share": issued / total if total else 1.0,
                          "sm_cycles_interval": [float(lo), float(hi)]}
    return sm


class _ScaledMemory:
    """The memory system of a run stopped early, its counts scaled by ``factor`` (its rates and
    utilisations as they were): what the timed SM's figures read of the L2 and DRAM behind it."""

    _COUNTS = ("l2_read_hits", "l2_read_misses", "dram_bytes_read", "dram_bytes_written")

    def __init__(self, ms, factor):
        self._ms, self._f = ms, factor

    def __getattr__(self, name):
        v = getattr(self._ms, name)
        return int(round(v * self._f)) if name in self._COUNTS else v

    def stats(self, elapsed_cycles=None, l1=()):
        st = self._ms.stats(None if elapsed_cycles is None else elapsed_cycles / self._f, l1)
        out = {}
        for k, v in st.items():
            ratio = k.endswith(("rate", "utilisation", "utilization", "delay", "p95")) or k == "elapsed_cycles"
            out[k] = v if ratio or isinstance(v, bool) or not isinstance(v, (int, float)) else v * self._f
        if elapsed_cycles is not None:
            out["elapsed_cycles"] = float(elapsed_cycles)
        return out
