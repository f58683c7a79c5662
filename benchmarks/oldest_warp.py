"""What "oldest" means in the warp schedulers' greedy-then-oldest selection (``sm.oldest_warp``):
the least recently issued warp (shipped) against the warp's age (launch order), in full
simulations of the SGEMMs.

Per point and order: GFLOPS (with the error against the measured GTX 980 where the config is the
measured one and there is a measured figure), nvprof's ``tex_cache_hit_rate`` and
``l2_tex_read_hit_rate``, DRAM busy, and how the CTAs of an SM run:

* how far apart in K the CTAs resident together on an SM are: at 32 evenly spaced instants between
  the first CTA's end and the last CTA's start (the launch's steady part), each CTA's K position
  read from its first warp's backward branches (one per main-loop iteration of 8 K-steps, so the
  position is the CTA's own progress, not a straight line from its start to its end), every pair of
  CTAs of one SM: the 10th / 50th / 90th percentile and the largest distance in K-steps, and the
  share of CTAs with a CTA of their SM that reads the same A or B panel (same grid row or column)
  within 8 K-steps (one iteration);
* how an SM's CTA ends spread: the median gap between two consecutive CTA ends on an SM, as a share
  of (mean CTA duration / CTAs per SM): 0 when an SM's CTAs end together (lockstep), 1 when evenly
  spread over a CTA's life;
* the CTAs' durations (mean and coefficient of variation) and the tail: on how many SMs the last
  partial wave's CTAs run.

    python benchmarks/oldest_warp.py --kernels sgemm_64,sgemm_128 --sizes 1024,1536 \\
        --set gpu.sms=4 --set l2.size=524288 ... [--orders least_recent,age] [--l2-start empty]

The quarter GPU of ``benchmarks/cta_dispersion.py`` (its docstring lists the ``--set`` values)
stands for the GTX 980 at four times N. ``--json FILE`` appends one JSON object per run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import maxsim.gpu.gpu as gpu_mod  # noqa: E402
import maxsim.timing.sm as sm_mod  # noqa: E402
from maxsim.arch.config import load_config, override  # noqa: E402
from maxsim.report.metrics import profiler_metrics  # noqa: E402
from maxsim.timing.sm import residency  # noqa: E402
from workloads.compare import load_measurements  # noqa: E402
from workloads.sgemm.generator import KERNELS, generate_kernel  # noqa: E402
from workloads.sgemm.predict import predict_sgemm  # noqa: E402
from setting_arg import setting  # noqa: E402

_SMS = []  # the SMs built since the last point
_run_sms = gpu_mod.run_sms
_sm_init = sm_mod.SM.__init__


def _keep_times(*a, **kw):
    kw["keep_branch_times"] = True  # every warp's backward-branch cycles: each CTA's progress in K
    return _run_sms(*a, **kw)


def _init(self, *a, **kw):
    _sm_init(self, *a, **kw)
    _SMS.append(self)


def ctas_of(sms, gx):
    """[(CTA index, SM, start, end, branch cycles of its first warp)] of one launch's SMs, by start."""
    out = []
    for sm in sms:
        first = {}
        for w in sm.all_warps:
            lab = w.label  # "cta<x>,<y>.w<n>"
            cid, _, wn = lab[3:].partition(".w")
            if wn == "0":
                x, y = (int(v) for v in cid.split(","))
                first[(x, y)] = np.asarray(w.branch_times, dtype=np.int64)
        for cid, s, e in sm.cta_log:
            out.append((cid[1] * gx + cid[0], sm.sm_id, s, e, first.get(tuple(cid))))
    return sorted(out, key=lambda r: r[2])


def k_distances(log, k, gx, n_at=32):
    """(distances in K-steps between two CTAs of one SM, share of CTAs with a panel-sharing CTA of
    their SM within 8 K-steps) at ``n_at`` instants of the launch's steady part."""
    iters = k // 8
    first_end = min(r[3] for r in log)
    last_start = max(r[2] for r in log)
    dist, near = [], []
    for f in np.linspace(0.0, 1.0, n_at):
        t = first_end + f * (last_start - first_end)
        by_sm = {}
        for i, sm, s, e, br in log:
            if s <= t < e and br is not None:
                pos = 8 * min(int(np.searchsorted(br, t, side="right")), iters)
                by_sm.setdefault(sm, []).append((i // gx, i % gx, pos))
        for live in by_sm.values():
            for a in range(len(live)):
                ra, ca, xa = live[a]
                best = None
                for b in range(len(live)):
                    if b == a:
                        continue
                    rb, cb, xb = live[b]
                    if b > a:
                        dist.append(abs(xa - xb))
                    if ra == rb or ca == cb:
                        d = abs(xa - xb)
                        best = d if best is None else min(best, d)
                if best is not None:
                    near.append(best < 8)
    return np.asarray(dist, dtype=float), (float(np.mean(near)) if near else float("nan"))


def end_spread(log, per_sm):
    """Median gap between consecutive CTA ends on an SM / (mean CTA duration / CTAs per SM)."""
    durs = np.asarray([e - s for _, _, s, e, _ in log], dtype=float)
    unit = durs.mean() / per_sm
    gaps = []
    by_sm = {}
    for _, sm, _, e, _ in log:
        by_sm.setdefault(sm, []).append(e)
    for ends in by_sm.values():
        ends = np.sort(np.asarray(ends, dtype=float))
        gaps.extend(np.diff(ends).tolist())
    return float(np.median(gaps)) / unit if gaps else float("nan")


def run(name, n, cfg, order, l2_start, measured):
    geo = KERNELS[name]
    kernel = generate_kernel(name)
    c = override(cfg, {"sm.oldest_warp": order})
    gx = -(-n // geo.tile)
    n_ctas = gx * gx
    per_sm = residency(kernel, geo.threads, c)[0]
    wave = per_sm * c.gpu.sms
    _SMS.clear()
    t0 = time.perf_counter()
    p = predict_sgemm(name, n, c, kernel=kernel, full=True, l2_start=l2_start)
    wall = time.perf_counter() - t0
    sms = _SMS[-c.gpu.sms:]  # the timed launch's (l2_start previous runs it twice)
    _SMS.clear()
    k = -(-n // 8) * 8
    log = ctas_of(sms, gx)
    dist, near = k_distances(log, k, gx)
    durs = np.asarray([e - s for _, _, s, e, _ in log], dtype=float)
    tail = n_ctas % wave
    tail_sms = len({sm for i, sm, *_ in log[-tail:]}) if tail else 0
    mem = p["memory"]
    met = profiler_metrics(mem, c.cycles_to_seconds(p["cycles"]), c)
    m = measured.get(name, {}).get(n)
    return {"kernel": name, "n": n, "order": order, "gflops": p["gflops"],
            "err": (100.0 * (p["gflops"] - m) / m) if m else None, "cycles": p["cycles"],
            "tex": met.get("tex_cache_hit_rate"), "l2": met.get("l2_tex_read_hit_rate"),
            "dram_busy": mem.get("dram_utilisation"), "walks": mem.get("tlb_l2_misses", 0.0),
            "k_apart": {"p10": float(np.percentile(dist, 10)) if dist.size else None,
                        "p50": float(np.median(dist)) if dist.size else None,
                        "p90": float(np.percentile(dist, 90)) if dist.size else None,
                        "max": float(dist.max()) if dist.size else None},
            "panel_near": near, "end_spread": end_spread(log, per_sm),
            "cta_cycles": float(durs.mean()), "cta_cv": float(durs.std() / durs.mean()),
            "tail": tail, "tail_sms": tail_sms, "waves": n_ctas / wave, "wall": wall}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="sgemm_64,sgemm_128")
    ap.add_argument("--sizes", default="1024")
    ap.add_argument("--orders", default="least_recent,age")
    ap.add_argument("--config", default="gtx980_oc")
    ap.add_argument("--set", dest="settings", type=setting, action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--l2-start", choices=("empty", "previous"), default="empty")
    ap.add_argument("--json", metavar="FILE", help="append one JSON object per run")
    args = ap.parse_args(argv)
    gpu_mod.run_sms = _keep_times
    sm_mod.SM.__init__ = _init
    cfg = load_config(args.config)
    if args.settings:
        cfg = override(cfg, dict(args.settings))
    # measured GFLOPS (the GTX 980 of maxas) for the measured config only
    measured = load_measurements() if (args.config == "gtx980_oc" and not args.settings) else {}
    print(f"full simulations on {cfg.name}{' ' + str(dict(args.settings)) if args.settings else ''}, "
          f"L2 at the start: {args.l2_start}")
    print(f"{'kernel':10s} {'N':>5s} {'order':>12s} {'GFLOPS':>7s} {'err':>7s} {'tex':>5s} {'L2':>5s} {'DRAM':>5s} "
          f"{'walks':>6s} {'K apart p10/50/90/max':>22s} {'near':>5s} {'ends':>5s} {'CTA CV':>6s} {'tail':>7s} {'s':>5s}")
    for name in args.kernels.split(","):
        for n in (int(x) for x in args.sizes.split(",")):
            for order in args.orders.split(","):
                r = run(name, n, cfg, order, args.l2_start, measured)
                ka = r["k_apart"]
                kt = "/".join("-" if ka[q] is None else f"{ka[q]:.0f}" for q in ("p10", "p50", "p90", "max"))
                err = f"{r['err']:+6.1f}%" if r["err"] is not None else "      -"
                print(f"{name:10s} {n:5d} {order:>12s} {r['gflops']:7.0f} {err:>7s} {r['tex']:5.1f} {r['l2']:5.1f} "
                      f"{100 * r['dram_busy']:4.0f}% {r['walks']:6.0f} {kt:>22s} {100 * r['panel_near']:4.0f}% "
                      f"{r['end_spread']:5.2f} {100 * r['cta_cv']:5.1f}% {r['tail']:3d}/{r['tail_sms']:<3d} "
                      f"{r['wall']:5.0f}", flush=True)
                if args.json:
                    with open(args.json, "a") as f:
                        f.write(json.dumps(dict(r, config=cfg.name, settings=dict(args.settings),
                                                l2_start=args.l2_start)) + "\n")


if __name__ == "__main__":
    main()
