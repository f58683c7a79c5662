"""CTAs spread over K on purpose: does one dispersion of the CTAs' starts reproduce the measured SGEMM
curves through address translation?

An experiment, not a model change: every CTA after the first wave starts ``delay`` cycles after the
dispatcher hands it out, a delay drawn once per CTA (seeded by its index) from an exponential
distribution of mean ``--mean`` cycles (``--dist uniform``: uniform on [0, 2 x mean]). Over the
waves the slots' delays add up (a random walk), so the CTAs resident together drift apart in K
by about ``mean x sqrt(waves)`` cycles. The delay is applied alike

* in the full simulation (every SM's CTA start: ``SM._delays``, looked up for the CTAs the block
  dispatcher hands out), and
* in the sampled prediction (its dispatcher model, ``maxsim.gpu.sampling.kloop.dispatch``, and the
  CTAs the steady-state windows take from the dispatcher).

The sampled prediction's setting ``kloop.tlb_history`` (on as shipped) is kept on: every page of
A and B is put into the TLBs before each window in the order the launch's CTAs last read them
(``_History.pages_read``); ``--no-tlb-history`` leaves that out, as the prediction did before: a window's fresh SMs then find a page that left the L2 TLB long before
never translated, which costs nothing (``maxsim.timing.tlb``: an SM's first touch is free), and no
window walks.

Per point: GFLOPS (error against the measured curve where there is one), page walks per thousand
CTA main-loop iterations, nvprof's ``l2_tex_read_hit_rate`` and ``tex_cache_hit_rate``, DRAM busy,
and (sampled) how far apart in K the resident CTAs are at the middle of the launch: the median
distance between two CTAs of one SM, and the GPU-wide 10-90% span, in K-steps (one K-step = one
value of k; a main-loop iteration is 8).

    python benchmarks/cta_dispersion.py --kernels sgemm_64,sgemm_64@168,sgemm_128 \\
        --sizes 2048,4096,5120,6144,8192 --means 0,2000,8000 [--full] [--set KEY=VALUE ...]

``sgemm_64@168``: the kernel declaring 168 registers (3 warps per scheduler, as ``--regs 168``).

``--uniform-k`` (sampled only; no start delay, so no slot idles): the CTAs resident in each
steady-state window are put at K positions spread uniformly over the loop, each at its own
iteration offset (evenly spaced offsets, dealt to the slots in a seeded random order, none so late
that a CTA ends inside the window), instead of the places the dispatcher model gives them (near
lockstep). Before the window the L2 gets the sectors those CTAs read in their last slices and the
TLBs every page of A and B in the order the spread CTAs last read them (a slot's CTA before the
present one taken at the same K positions: with A and B stored K-major a page depends on K, not on
the CTA). The first wave, the wave starts and the tail stay as the dispatcher model has them. ``--spread-share F``: only a share F of the
resident CTAs (chosen at random) is spread so, the others keep their places (near lockstep). The window runs without the fresh CTAs that
would take the freed slots at its end (they would start together at K = 0 and count in the window's
hit rates and walks); the pace is measured before any of them would start.

``--stagger F`` (full simulation only): a spread set once at the start, which the launch then keeps or
loses by itself. Each point is run twice, first in lockstep, then with a share F of the first wave's
CTAs (chosen at random, seeded) starting at delays evenly spaced over ``--stagger-span`` (default 1)
of the lockstep run's mean first-wave CTA duration, the others at once; every later CTA starts as
its slot frees (no delay), so a slot keeps its first CTA's offset in K as long as its CTAs take
equally long, and only the first wave's slots idle. Printed per run, besides the launch's figures:
the steady GFLOPS (every slot busy, each CTA taking the mean duration of the CTAs neither of the
first wave nor of the last ``wave`` CTAs), and, at eight instants between the first CTA's end and
the last CTA's start, how far apart in K the resident CTAs are (median K-steps between two CTAs of
one SM / GPU-wide 10-90% span): does the spread persist, grow or collapse back to lockstep?

``--dram-rows`` (full simulation only): the L2/DRAM run on the plain-Python memory system (the SMs
stay compiled; the same figures), every DRAM read is recorded, and each channel's stream is replayed
against GDDR5 banks and rows as ``benchmarks/dram_rows.py`` does (row hits, bytes per activation,
the bus time banks and rows would add).

The quarter GPU with a TLB scaled to it (``--set gpu.sms=4 l2.size=524288 l2.slices=2 dram.channels=2
gpu.dram_bus_bits=64 gpu.dram_bandwidth_gbs=64.0 tlb.page_bytes=524288 tlb.l1_entries=4
tlb.l1_assoc=4 tlb.l2_entries=16``, each ``--set`` given separately) has A and B at the same share
of the L2 TLB's reach (and K-rows per page) at N = 1,024 / 1,280 / 1,536 / 2,048 as the GTX 980 at
4,096 / 5,120 / 6,144 / 8,192.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import maxsim.gpu.gpu as gpu_mod  # noqa: E402
import maxsim.gpu.sampling.kloop as kloop  # noqa: E402
import maxsim.gpu.sampling.kloop_run as kloop_run  # noqa: E402
import maxsim.timing.sm as sm_mod  # noqa: E402
from maxsim.arch.config import load_config, override  # noqa: E402
from maxsim.gpu.sampling import kloop_history  # noqa: E402
from maxsim.gpu.sampling import settings as sampling_settings  # noqa: E402
from maxsim.gpu.sampling.dispatcher import dispatch as _model_dispatch, resident_at  # noqa: E402
from maxsim.report.metrics import profiler_metrics  # noqa: E402
from maxsim.timing.sm import residency  # noqa: E402
from workloads.compare import load_measurements  # noqa: E402
from workloads.sgemm.generator import KERNELS, generate_kernel  # noqa: E402
from workloads.sgemm.predict import predict_sgemm  # noqa: E402
from maxsim.timing.occupancy import with_registers  # noqa: E402
from setting_arg import setting  # noqa: E402


class _State:
    """The experiment's settings for the prediction under way."""
    delays = None  # per CTA index: cycles its start waits (0 for the first wave)
    gx = 1
    n = 0
    k = 0
    tlb_history = True
    schedule = None  # the sampled prediction's last dispatcher schedule
    taken = False  # the block dispatcher has just handed out a CTA (the next delay lookup is its)
    same_pace = True  # every slot at the mean pace of the SMs (no drift of whole SMs apart)
    sms = 1
    uniform_k = False  # the steady windows' resident CTAs at uniformly spread K positions
    spread = None  # {cta index: iterations done} for the window being set up
    offsets = None  # {slot: iterations done} of the last window set up
    no_queue = False  # the next run_sms is the window's: run it without the CTAs that come next
    seed = 1
    spread_share = 1.0  # the share of a window's resident CTAs spread (``--spread-share``)
    first = None  # (full simulation, ``--stagger``) {CTA index: cycles its first-wave start waits}
    sm_list = []  # (full simulation) the SMs built, for their CTA logs
    save_log = None  # (full simulation, ``--save-log``) where each point's CTA log goes


S = _State()


def _delays(n_ctas, wave, mean, dist, seed):
    rng = np.random.default_rng(seed)
    if mean <= 0:
        d = np.zeros(n_ctas)
    elif dist == "uniform":
        d = rng.uniform(0.0, 2.0 * mean, n_ctas)
    else:
        d = rng.exponential(mean, n_ctas)
    d[:wave] = 0.0
    return np.rint(d).astype(np.int64)


def _delay_of(cid):
    if S.delays is None:
        return 0
    i = cid[1] * S.gx + cid[0]
    return int(S.delays[i]) if i < len(S.delays) else 0


# ---- the full simulation (and the windows' dispatcher): a CTA handed out waits its delay ----------

class _Clock(gpu_mod.DispatchClock):
    __slots__ = ()

    def take(self, t):
        S.taken = True
        return super().take(t)


class _DelayMap(dict):
    """``SM._delays`` that adds the experiment's delay to a CTA the dispatcher just handed out."""

    def __bool__(self):
        return True

    def pop(self, cid, default=0):
        d = dict.pop(self, cid, default)
        if S.taken:
            S.taken = False
            d += _delay_of(cid)
        elif S.first:  # a first-wave CTA (placed, not handed out): its staggered start
            d += S.first.get(cid[1] * S.gx + cid[0], 0)  # (each launch of l2_start previous alike)
        return d


_sm_init = sm_mod.SM.__init__


def _init(self, *a, **kw):
    _sm_init(self, *a, **kw)
    self._delays = _DelayMap()
    S.sm_list.append(self)


# ---- a staggered first wave (full simulation, ``--stagger``) ------------------------------------

def _stagger(wave, share, span_cycles, seed):
    """{first-wave CTA index: start delay}: a share ``share`` of the first wave's CTAs (chosen at
    random, seeded) starts at delays evenly spaced over [0, span_cycles), dealt in a random order;
    the others start at once. Later CTAs start as their slot frees (no delay), so each slot keeps
    its first CTA's offset in K as long as its CTAs take equally long: a spread set once, that the
    launch keeps or loses by itself."""
    rng = np.random.default_rng(seed)
    n = int(round(share * wave))
    chosen = rng.permutation(wave)[:n]
    offsets = (np.arange(n) + 0.5) / max(n, 1) * span_cycles
    offsets = np.rint(offsets[rng.permutation(n)]).astype(np.int64)
    return {int(i): int(d) for i, d in zip(chosen, offsets)}


def launch_log(sms, gx):
    """[(CTA index, SM, start, end)] of a full simulation's SMs, by start."""
    out = [(cid[1] * gx + cid[0], sm.sm_id, s, e) for sm in sms for cid, s, e in sm.cta_log]
    return sorted(out, key=lambda r: r[2])


def spread_over_time(log, k, n_at=8, gx=None):
    """How far apart in K the resident CTAs are over the launch: [(time share, median K-steps between
    two CTAs of one SM, GPU-wide 10-90% span in K-steps, share of CTAs whose nearest co-resident
    CTA reading the same A or B panel (same grid row or column, ``gx`` CTAs a row) is within one
    main-loop iteration, 8 K-steps)] at ``n_at`` evenly spaced instants between the end of the first
    CTA and the start of the last (the steady part of the launch)."""
    first_end = min(e for _, _, _, e in log)
    last_start = max(s for _, _, s, _ in log)
    end = max(e for _, _, _, e in log)
    out = []
    for f in np.linspace(0.0, 1.0, n_at):
        t = first_end + f * (last_start - first_end)
        live = [(sm, (t - s) / (e - s) * k) for _, sm, s, e in log if s <= t < e and e > s]
        if not live:
            continue
        near = float("nan")
        if gx:
            who = [(i // gx, i % gx, sm, (t - s) / (e - s) * k) for i, sm, s, e in log if s <= t < e and e > s]
            close = []
            for r, c, sm, x in who:
                d = [abs(x - x2) for r2, c2, sm2, x2 in who
                     if sm2 == sm and (r2, c2) != (r, c) and (r2 == r or c2 == c)]
                if d:
                    close.append(min(d) < 8.0)
            near = float(np.mean(close)) if close else float("nan")
        v = np.asarray([x for _, x in live])
        by_sm = {}
        for sm, x in live:
            by_sm.setdefault(sm, []).append(x)
        pair = []
        for xs in by_sm.values():
            xs = np.asarray(xs)
            if len(xs) > 1:
                d = np.abs(xs[:, None] - xs[None, :])[np.triu_indices(len(xs), 1)]
                pair.append(float(np.median(d)))
        out.append((t / end, float(np.median(pair)) if pair else float("nan"),
                    float(np.percentile(v, 90) - np.percentile(v, 10)), near))
    return out


def steady_rate(log, wave, n_ctas, flops_per_cta, clock_hz):
    """GFLOPS of the launch's steady part: all slots busy, each CTA taking the mean duration of the
    CTAs that are neither of the first wave (staggered starts, a cold L2) nor of the last
    ``wave`` (the tail, fewer neighbours); None when no CTA is left."""
    durs = [e - s for i, _, s, e in log if wave <= i < n_ctas - wave]
    if not durs:
        return None, None
    mean = float(np.mean(durs))
    return wave * flops_per_cta / mean * clock_hz / 1e9, mean


# ---- the sampled prediction's dispatcher model --------------------------------------------------

def _dispatch(n_ctas, slots, duration, hold=None, timed=False, launch=0, interval=0, first_wave="together",
              ends=None):
    """maxsim.gpu.sampling.dispatcher.dispatch with each later CTA's start delayed by its delay.
    ``S.same_pace``: a CTA's duration is the mean of what it would take on each SM (the sampled
    prediction gives each SM the pace its window measured, and over a hundred waves SMs whose paces
    differ by a fraction of a percent drift apart by most of a CTA; the full simulation's do not)."""
    if not timed:
        untimed = duration

        def duration(j, i, t):
            return untimed(j, i)
    if S.same_pace:
        by_slot = duration
        sms = max(1, min(S.sms, slots))

        def duration(j, i, t):
            return sum(by_slot(x, i, t) for x in range(sms)) / sms
    out = _model_dispatch(n_ctas, slots, duration, hold, True, launch, interval, S.delays, first_wave, ends)
    S.schedule = out
    return out


# ---- the TLBs before a window ---------------------------------------------------------------------
# The sampled prediction's setting kloop.tlb_history (on as shipped), kept on here: every page of
# A and B in the TLBs before each window, in the order the launch last read them
# (maxsim.gpu.sampling.kloop_history._History.pages_read); ``--no-tlb-history`` leaves that out
# (only the pages of the sectors the L2 replay holds).

_pages_read = kloop_history._History.pages_read


def _history_pages(self, schedule, t):
    return _pages_read(self, schedule, t) if S.tlb_history else np.zeros(0, np.int64)


# ---- uniformly spread K positions in the steady-state windows (``--uniform-k``) --------------------

_resident_at = kloop_run.resident_at
_run_sms = kloop_run.run_sms
_warm = kloop_history._History.warm
SPREAD_MARGIN = 32  # iterations kept free at the end of K: no CTA ends inside a window (14-22 iterations)


def _spread_resident_at(schedule, t):
    """``resident_at`` for a steady-state window: the same CTAs in the same slots, each with its
    start moved so that the window finds it at its offset of the uniform spread."""
    live = _resident_at(schedule, t)
    iters = S.k // 8
    top = max(1, iters - SPREAD_MARGIN)
    slots = sorted(live)
    rng = np.random.default_rng(S.seed)
    n = int(round(S.spread_share * len(slots)))
    if n == len(slots):  # all spread: evenly spaced offsets dealt in a random order
        offsets = (np.arange(len(slots)) + 0.5) / len(slots) * top
        offsets = np.floor(offsets[rng.permutation(len(slots))]).astype(int)
        return _placed(live, slots, offsets, t, iters)
    chosen = rng.permutation(len(slots))[:n]  # the slots spread; the others keep the schedule's place
    offsets = np.asarray([min(top - 1, max(0, int(round((t - live[j][1]) / max(live[j][2] - live[j][1], 1.0) * iters))))
                          for j in slots])
    spread = (np.arange(n) + 0.5) / max(n, 1) * top
    offsets[chosen] = np.floor(spread[rng.permutation(n)]).astype(int)
    return _placed(live, slots, offsets, t, iters)


def _placed(live, slots, offsets, t, iters):
    """``live`` with each slot's CTA start moved so that the window finds it ``offsets`` iterations
    into its loop (and the window's next run_sms without the CTAs that come next)."""
    out, S.spread, S.offsets = {}, {}, {}
    for j, d in zip(slots, offsets):
        i, s, e = live[j]
        length = max(e - s, 1.0)
        s2 = t - (d + 0.1) / iters * length
        out[j] = (i, s2, s2 + length)
        S.spread[i] = int(d)
        S.offsets[j] = int(d)
    S.no_queue = True
    return out


def _spread_run_sms(*a, **kw):
    """``run_sms`` for the window ``_spread_resident_at`` set up: without the fresh CTAs that would
    take the slots the window's CTAs free at its end (they start together at K = 0, in lockstep, and
    their reads would weigh in the window's counters: hit rates, walks; the pace is measured before
    any of them starts, and no window CTA ends before its trace is cut)."""
    if S.no_queue:
        S.no_queue = False
        kw["queue"] = collections.deque()
    return _run_sms(*a, **kw)


def _spread_warm(self, ms, schedule, t):
    """``_History.warm`` for the window ``_spread_resident_at`` set up: the L2 holds the sectors the
    spread CTAs read in their last slices (one slice of every CTA at a time, most recent last,
    up to ``HISTORY_FILL`` x its capacity in distinct sectors), the TLBs every page of A and B in
    the order the spread CTAs last read them."""
    spread, S.spread = S.spread, None
    if spread is None or self.shift is None:
        return _warm(self, ms, schedule, t)
    ids = sorted(spread)
    self._trace(ids)
    iters = self.iters
    capacity = kloop_history.HISTORY_FILL * self.cfg.l2.size // self.cfg.l2.sector
    picked = []  # most recent first
    seen = kloop_history.SectorSet(capacity)
    ago = 0
    while len(seen) < capacity and ago < iters:
        for i in ids:
            q = spread[i] - 1 - ago
            if q >= 0:
                secs = self.sectors(i, q)
                picked.append(secs)
                seen.add(secs)
        ago += 1
    if picked:
        ms.warm(np.concatenate(picked[::-1]), False)
    if sampling_settings.TLB_HISTORY:
        ps = self.cfg.tlb.page_bytes.bit_length() - 1
        q = np.arange(iters, dtype=np.int64)
        score = {}  # page -> (slices ago it was last read) x CTAs + rank: smaller is more recent
        for rank, i in enumerate(ids):
            base = self.base[i]
            step = self._step(i)
            if step is None:
                continue
            pages = (base[None, :] + q[:, None] * step[None, :]) >> ps  # slice x sector
            ago_q = (spread[i] - 1 - q) % iters  # slices ago (the slot's CTA before: same K, a lap earlier)
            sc = ago_q[:, None] * len(ids) + rank
            flat_p, flat_s = pages.ravel(), np.broadcast_to(sc, pages.shape).ravel()
            order = np.lexsort((flat_s, flat_p))
            fp, fs = flat_p[order], flat_s[order]
            first = np.concatenate([[True], fp[1:] != fp[:-1]])
            for p, v in zip(fp[first].tolist(), fs[first].tolist()):
                if v < score.get(p, 1 << 62):
                    score[p] = v
        pages = sorted(score, key=lambda p: -score[p])  # least recent first
        ms.warm_tlb(np.asarray(pages, dtype=np.int64) << ps)


def install():
    gpu_mod.DispatchClock = _Clock
    sm_mod.SM.__init__ = _init
    kloop.dispatch = _dispatch
    kloop_history._History.pages_read = _history_pages
    sampling_settings.TLB_HISTORY = True  # the sampled prediction's setting kloop.tlb_history (on as shipped)
    if S.uniform_k:
        kloop_run.resident_at = _spread_resident_at
        kloop_run.run_sms = _spread_run_sms
        kloop_history._History.warm = _spread_warm


# ---- measures -------------------------------------------------------------------------------------

def spread(schedule, k, sms, at=(0.3, 0.4, 0.5, 0.6, 0.7)):
    """(median K-steps between two resident CTAs of one SM, GPU-wide 10-90% span in K-steps), the
    medians over the instants ``at`` (shares of the launch)."""
    end = max(e for _, _, e in schedule)
    pair, span = [], []
    for f in at:
        live = resident_at(schedule, f * end)
        pos = {j: (f * end - s) / (e - s) * k for j, (_, s, e) in live.items() if e > s}
        if not pos:
            continue
        v = np.asarray(list(pos.values()))
        span.append(float(np.percentile(v, 90) - np.percentile(v, 10)))
        by_sm = {}
        for j, x in pos.items():
            by_sm.setdefault(j % sms, []).append(x)
        for xs in by_sm.values():
            xs = np.asarray(xs)
            if len(xs) > 1:
                d = np.abs(xs[:, None] - xs[None, :])[np.triu_indices(len(xs), 1)]
                pair.append(float(np.median(d)))
    return (float(np.median(pair)) if pair else float("nan"), float(np.median(span)) if span else float("nan"))




def run_point(name, regs, n, cfg, mean, dist, seed, full, l2_start, stagger=0.0, stagger_cycles=0):
    geo = KERNELS[name]
    kernel = generate_kernel(name)
    if regs is not None:
        kernel = with_registers(kernel, regs)
    gx = -(-n // geo.tile)
    n_ctas = gx * gx
    resident, _ = residency(kernel, geo.threads, cfg)
    wave = resident * cfg.gpu.sms
    S.delays = _delays(n_ctas, wave, mean, dist, seed)
    S.gx, S.n, S.k, S.schedule, S.taken = gx, n, -(-n // 8) * 8, None, False
    S.sms = cfg.gpu.sms
    S.offsets = None
    S.first = _stagger(wave, stagger, stagger_cycles, seed) if (full and stagger > 0) else None
    S.sm_list = []
    t0 = time.perf_counter()
    p = predict_sgemm(name, n, cfg, kernel=kernel, full=full, l2_start=l2_start)
    wall = time.perf_counter() - t0
    extra = {}
    if full:
        log = launch_log(S.sm_list[-cfg.gpu.sms:], gx)  # the timed launch's SMs (l2_start previous runs it twice)
        if S.save_log:
            np.save(f"{S.save_log}-{name}{'@' + str(regs) if regs else ''}-{n}.npy", np.asarray(log, dtype=np.int64))
        S.sm_list = []
        k = S.k
        rate, dur = steady_rate(log, wave, n_ctas, 2.0 * geo.tile * geo.tile * k, cfg.clock_hz)
        extra = {"steady_gflops": rate, "cta_cycles": dur, "over_time": spread_over_time(log, k, gx=gx),
                 "first_wave_cycles": float(np.mean([e - s for i, _, s, e in log if i < wave]))}
    mem = p["memory"]
    metrics = profiler_metrics(mem, cfg.cycles_to_seconds(p["cycles"]), cfg)
    iters = n_ctas * S.k / 8
    walks = mem.get("tlb_l2_misses", 0.0)
    if full:
        busy = mem.get("dram_utilisation", float("nan"))
        walks_per = 1000.0 * walks / iters
    else:
        busy = p["dram_busy"]
        # the steady-state windows' walks per thousand CTA iterations they ran
        steady = [ph for ph in p["phases"] if ph["name"] == "steady state"]
        w = sum(ph["memory"].get("tlb_l2_misses", 0.0) for ph in steady)
        it = sum(ph["ctas"] * ph["k_samples"][0] / 8 for ph in steady)
        walks_per = 1000.0 * w / it if it else float("nan")
        if S.uniform_k and steady:
            # the windows' own hit rates (the launch's figures also weigh in the lockstep phases)
            sm = steady[0]["memory"]
            wm = profiler_metrics(sm, cfg.cycles_to_seconds(sm.get("cycles", 1.0)), cfg)
            metrics = dict(metrics, window_tex=wm.get("tex_cache_hit_rate", float("nan")),
                           window_l2=wm.get("l2_tex_read_hit_rate", float("nan")))
    pair, span = spread(S.schedule, S.k, cfg.gpu.sms) if S.schedule is not None else (float("nan"),) * 2
    if S.uniform_k and S.offsets:
        pair, span = _offset_spread(S.offsets, cfg.gpu.sms)
    align = p.get("wave_alignment") or {}
    return {"cv": align.get("cta_duration_cv", float("nan")),
            "wave_spread": align.get("widest_wave_start_spread_share", float("nan")),
            "gflops": p["gflops"], "cycles": p["cycles"], "walks_per_kiter": walks_per,
            "l2": metrics.get("l2_tex_read_hit_rate", float("nan")),
            "tex": metrics.get("tex_cache_hit_rate", float("nan")), "busy": busy, "pair": pair,
            "span": span, "wall": wall, "waves": n_ctas / wave,
            "window_tex": metrics.get("window_tex", float("nan")), "window_l2": metrics.get("window_l2", float("nan")),
            **extra}


def _offset_spread(offsets, sms):
    """(median K-steps between two CTAs of one SM, GPU-wide 10-90% span in K-steps) of the last
    window's uniform offsets ``{slot: iterations done}``."""
    by_sm, pair = {}, []
    for j, d in offsets.items():
        by_sm.setdefault(j % sms, []).append(8 * d)
    for xs in by_sm.values():
        xs = np.asarray(xs, dtype=float)
        if len(xs) > 1:
            pair.append(float(np.median(np.abs(xs[:, None] - xs[None, :])[np.triu_indices(len(xs), 1)])))
    v = 8.0 * np.asarray(list(offsets.values()), dtype=float)
    return (float(np.median(pair)) if pair else float("nan"), float(np.percentile(v, 90) - np.percentile(v, 10)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="sgemm_64,sgemm_64@168,sgemm_128")
    ap.add_argument("--sizes", default="2048,4096,5120,6144,8192")
    ap.add_argument("--means", default="0,2000,8000", help="mean start delays (cycles) to try")
    ap.add_argument("--dist", choices=("exp", "uniform"), default="exp")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--config", default="gtx980_oc")
    ap.add_argument("--set", dest="settings", type=setting, action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--full", action="store_true", help="full simulation instead of the sampled prediction")
    ap.add_argument("--no-tlb-history", dest="tlb_history", action="store_false")
    ap.add_argument("--slot-pace", dest="same_pace", action="store_false",
                    help="each SM at the pace its window measured (the sampled prediction as shipped)")
    ap.add_argument("--l2-start", choices=("empty", "previous"), default="previous")
    ap.add_argument("--uniform-k", action="store_true",
                    help="(sampled) the steady windows' resident CTAs at uniformly spread K positions, no idle slot")
    ap.add_argument("--spread-share", type=float, default=1.0,
                    help="with --uniform-k: the share of the resident CTAs spread (chosen at random); the others "
                         "keep their places in the dispatcher model's schedule (near lockstep)")
    ap.add_argument("--stagger", type=float, default=0.0,
                    help="(full) a share F of the first wave's CTAs starts staggered (evenly spaced delays over "
                         "--stagger-span of a CTA's duration, taken from the same point run first in lockstep); "
                         "later CTAs start as their slots free: does the spread persist over the waves?")
    ap.add_argument("--stagger-span", type=float, default=1.0,
                    help="with --stagger: the span of the first-wave delays, as a share of a CTA's lockstep duration")
    ap.add_argument("--dram-rows", action="store_true",
                    help="(full) run the L2/DRAM on the plain-Python memory system, record every DRAM read and "
                         "replay each channel's stream against GDDR5 banks and rows (benchmarks/dram_rows.py)")
    ap.add_argument("--save-log", metavar="PREFIX",
                    help="(full) save each point's CTA log (CTA index, SM, start, end) as PREFIX-KERNEL-N.npy")
    args = ap.parse_args(argv)
    S.save_log = args.save_log
    if args.dram_rows:
        if not args.full:
            ap.error("--dram-rows needs --full")
        _record_dram_rows()
    if args.stagger and not args.full:
        ap.error("--stagger needs --full (the sampled prediction's dispatcher model has no first-wave stagger)")
    S.tlb_history = args.tlb_history
    S.same_pace = args.same_pace
    S.uniform_k = args.uniform_k
    S.seed = args.seed
    S.spread_share = args.spread_share
    install()
    cfg = load_config(args.config)
    if args.settings:
        cfg = override(cfg, dict(args.settings))
    measured = load_measurements()
    print(f"{'full' if args.full else 'sampled'} on {cfg.name}{' ' + str(dict(args.settings)) if args.settings else ''},"
          f" start delay {args.dist} (seed {args.seed}), TLB history {'on' if args.tlb_history else 'off'},"
          f" {'one pace for all SMs' if args.same_pace else 'each SM at its own pace'}")
    print(f"{'kernel':13s} {'N':>5s} {'mean':>6s} {'GFLOPS':>7s} {'err':>7s} {'walks/kit':>9s} {'L2 hit':>6s} "
          f"{'tex hit':>7s} {'DRAM':>5s} {'pair':>6s} {'span':>6s} {'waves':>5s} {'s':>5s}")
    for spec in args.kernels.split(","):
        name, _, regs = spec.partition("@")
        regs = int(regs) if regs else None
        for n in (int(x) for x in args.sizes.split(",")):
            # measured GFLOPS: the GTX 980's (maxas), for the shipped config only
            m = measured.get(name, {}).get(n) if regs is None and not args.settings else None
            for mean in (float(x) for x in args.means.split(",")):
                runs = [0.0, args.stagger] if args.stagger else [0.0]
                lock_cycles = 0
                for st in runs:
                    r = run_point(name, regs, n, cfg, mean, args.dist, args.seed, args.full, args.l2_start,
                                  st, int(round(args.stagger_span * lock_cycles)))
                    lock_cycles = lock_cycles or r.get("first_wave_cycles", 0)
                    _print(spec, n, mean, r, m, args, st)
                    _print_rows(cfg)


ROWS = None  # benchmarks/dram_rows.py, with --dram-rows


def _record_dram_rows():
    """Every DRAM read of the full simulation recorded (benchmarks/dram_rows.py's log of the plain-Python
    memory system; the SMs stay compiled, the memory system runs in Python: the same figures)."""
    global ROWS
    import os
    import maxsim.timing.memory_system as msm
    keep = os.environ.get("MAXSIM_CORE")
    import dram_rows as ROWS  # (sets MAXSIM_CORE=python for the SMs too: undone below)
    if keep is None:
        os.environ.pop("MAXSIM_CORE", None)
    else:
        os.environ["MAXSIM_CORE"] = keep
    core_name = msm.core_name
    msm.core_name = lambda core=None, what="SM core": "python" if what == "memory system core" else core_name(core, what)


def _print_rows(cfg):
    """Row hits, bytes per activation and the replay's extra bus time of the last run's DRAM reads
    (only the timed launch's memory system: the last one logged)."""
    if ROWS is None or not ROWS.LOG:
        return
    last = ROWS.LOG[-1][0]
    log = [x for x in ROWS.LOG if x[0] == last]
    ROWS.LOG.clear()
    for row_bytes, xor in ((2048, False), (2048, True), (1024, True)):
        r = ROWS.analyse(log, cfg, row_bytes=row_bytes, xor=xor)
        print(f"    DRAM rows of {row_bytes} B, bank map {'xor' if xor else 'flat'}: pieces {r['pieces']}, row hits "
              f"{100 * r['row_hit_rate']:.1f}%, bytes/activation {r['bytes_per_activation']:.0f}, replay adds "
              f"{100 * r['extra_cycles_share']:+.1f}% of bus time", flush=True)


def _print(spec, n, mean, r, m, args, stagger):
    err = f"{100 * (r['gflops'] - m) / m:+6.1f}%" if m else "      -"
    print(f"{spec:13s} {n:5d} {mean:6.0f} {r['gflops']:7.0f} {err:>7s} {r['walks_per_kiter']:9.2f} "
          f"{r['l2']:6.1f} {r['tex']:7.1f} {100 * r['busy']:4.0f}% {r['pair']:6.1f} {r['span']:6.1f} "
          f"{r['waves']:5.1f} {r['wall']:5.0f}"
          + (f"  window: tex hit {r['window_tex']:.1f}%, L2 hit {r['window_l2']:.1f}%" if args.uniform_k else "")
          + (f"  CTA CV {100 * r['cv']:.2f}%, widest wave start spread {100 * r['wave_spread']:.1f}% of a CTA"
             if args.full else ""), flush=True)
    if args.full:
        sr = r.get("steady_gflops")
        print(f"    {'staggered ' + format(stagger, '.2f') if stagger else 'lockstep'}: cycles {r['cycles']:,.0f}, "
              f"steady GFLOPS {sr:.0f} (mean CTA {r['cta_cycles']:,.0f} cycles, first wave {r['first_wave_cycles']:,.0f})"
              if sr else "    (no steady CTAs)", flush=True)
        print("    over the launch (time share: median K-steps between two CTAs of an SM / GPU 10-90% span / "
              "share of CTAs with a panel-sharing CTA of their SM within 8 K-steps): "
              + ", ".join(f"{f:.2f}: {a:.0f}/{b:.0f}/{100 * c:.0f}%" for f, a, b, c in r["over_time"]), flush=True)


if __name__ == "__main__":
    main()
