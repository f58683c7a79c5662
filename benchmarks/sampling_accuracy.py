"""Sampled whole-GPU prediction versus full simulation on a suite of kernels of different shapes.

    python benchmarks/sampling_accuracy.py [--config gm204] [--set KEY=VALUE ...] [--only NAME,...]
                                           [--scale 1.0]

Each kernel of ``workloads/cuda/sampling_suite.cu`` (convolution, stencils, reduction, triangular
band, divergent CTAs, row- and column-order matrix-vector products, one step of a time-stepped
kernel, two SGEMMs, blur, transpose) is launched over many waves of CTAs twice: ``gpu_method="auto"``
(sampled across waves, :mod:`maxsim.gpu.sampling.waves`) and ``"full"`` (every CTA on every SM).
Then the time-stepped kernel is launched ``--steps`` times both ways (``"auto"`` reuses the
launches' figures once they repeat, :mod:`maxsim.gpu.sampling.launches`).
Prints per kernel the waves, warp instructions, both cycle counts and the sampled one's error, its
interval and whether the full figure lies in it, the share simulated, the L2 and texture hit rates
of both, and both wall times; then the median and worst error and the median speed-up.
``--scale`` multiplies the number of CTAs (rows of the grid). The SGEMM workloads' own sampled
method is measured by ``benchmarks/sgemm_sampling_accuracy.py``.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
import tomllib

import numpy as np

from maxsim.arch.config import load_config, override
from maxsim.host import Kernel, launch

SUITE = "workloads/cuda/sampling_suite.cu"


def _f32(rng, n):
    return rng.random(n, dtype=np.float32)


def cases(scale):
    """name -> (kernel, grid, block, params, buffers)."""
    rng = np.random.default_rng(7)
    h = max(8, int(1024 * scale))
    w = 1024
    img = _f32(rng, h * w)
    out = {}
    out["conv3x3"] = ("conv3x3", (w // 128, h), 128, {"in": "in", "wt": "wt", "out": "out", "h": h, "w": w},
                      {"in": img, "wt": _f32(rng, 9), "out": np.zeros_like(img)})
    out["stencil2d"] = ("stencil2d", (w // 128, h), 128, {"in": "in", "out": "out", "h": h, "w": w},
                        {"in": img, "out": np.zeros_like(img)})
    n3, d3 = 1024, 6
    vol = _f32(rng, n3 * n3 * d3)
    out["stencil3d"] = ("stencil3d", (n3 // 128, min(n3, h)), 128, {"in": "in", "out": "out", "n": n3, "d": d3},
                        {"in": vol, "out": np.zeros_like(vol)})
    nr = h * 4096
    out["reduce_sum"] = ("reduce_sum", nr // 1024, 256, {"in": "in", "out": "out", "n": nr},
                         {"in": _f32(rng, nr), "out": np.zeros(nr // 1024, np.float32)})
    out["tri_band"] = ("tri_band", (w // 128, h), 128, {"a": "a", "out": "out", "w": w},
                       {"a": img, "out": np.zeros_like(img)})
    nd = h * 1024
    out["divergent_ctas"] = ("divergent_ctas", nd // 128, 128, {"in": "in", "out": "out", "n": nd},
                             {"in": _f32(rng, nd), "out": np.zeros(nd, np.float32)})
    rows, cols = h * 1024, 16
    mat = _f32(rng, rows * cols)
    for name in ("matvec_rows", "matvec_cols"):
        out[name] = (name, rows // 128, 128, {"a": "a", "x": "x", "y": "y", "rows": rows, "cols": cols},
                     {"a": mat, "x": _f32(rng, cols), "y": np.zeros(rows, np.float32)})
    out["heat_step"] = ("heat_step", nd // 128, 128, {"in": "in", "out": "out", "n": nd, "alpha": 0.25},
                        {"in": _f32(rng, nd), "out": np.zeros(nd, np.float32)})
    out["blur5"] = ("blur5", (w // 128, h), 128, {"in": "in", "out": "out", "h": h, "w": w},
                    {"in": img, "out": np.zeros_like(img)})
    th = max(32, (h * 2) // 32 * 32)
    tin = _f32(rng, th * 2048)
    out["transpose_tiled"] = ("transpose_tiled", (2048 // 32, th // 32), (32, 8),
                              {"in": "in", "out": "out", "h": th, "w": 2048}, {"in": tin, "out": np.zeros_like(tin)})
    sr, sn, sk = h * 2, 512, 64
    a, b = _f32(rng, sr * sk), _f32(rng, sk * sn)
    out["sgemm_naive"] = ("sgemm_naive", (sn // 128, sr), 128, {"a": "a", "b": "b", "c": "c", "n": sn, "k": sk},
                          {"a": a, "b": b, "c": np.zeros(sr * sn, np.float32)})
    tr = max(16, (h * 4) // 16 * 16)
    at = _f32(rng, tr * sk)
    out["sgemm_tiled"] = ("sgemm_tiled", (sn // 16, tr // 16), (16, 16), {"a": "a", "b": "b", "c": "c", "n": sn, "k": sk},
                          {"a": at, "b": b, "c": np.zeros(tr * sn, np.float32)})
    return out


def _setting(text):
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r}: expected KEY=VALUE")
    return key.strip(), tomllib.loads(f"v = {value.strip()}")["v"]


def _run(kernel, case, cfg, method):
    _, grid, block, params, buffers = case
    t = time.perf_counter()
    r = launch(kernel, grid, block, params=params, buffers={k: v.copy() for k, v in buffers.items()}, config=cfg,
               timing=False, gpu_method=method)
    return r, time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="gm204")
    ap.add_argument("--set", type=_setting, action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--only", default=None, help="comma-separated kernel names")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--steps", type=int, default=20, help="launches of the time-stepped kernel (0: none)")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    if args.set:
        cfg = override(cfg, dict(args.set))
    suite = cases(args.scale)
    names = args.only.split(",") if args.only else list(suite)
    print(f"{cfg.name}, {cfg.gpu.sms} SMs; sampled = gpu_method 'auto', full = 'full'")
    print(f"{'kernel':16s} {'waves':>6s} {'warp instr':>11s} {'full cycles':>12s} {'sampled':>12s} {'error':>7s} "
          f"{'interval':>17s} {'in':>3s} {'share':>6s} {'L2 full/samp':>13s} {'tex full/samp':>13s} "
          f"{'wall full':>9s} {'sampled':>8s} {'x':>5s}")
    errors, speedups, covered, l2d, texd = [], [], 0, [], []
    for name in names:
        case = suite[name]
        k = Kernel.load(SUITE, cfg=cfg, kernel=case[0])
        rs, ts = _run(k, case, cfg, "auto")
        rf, tf = _run(k, case, cfg, "full")
        ps, pf = rs.prediction, rf.prediction
        fs, ff = rs.fields(), rf.fields()
        err = ps.cycles / pf.cycles - 1
        lo, hi = ps.interval or (ps.cycles, ps.cycles)
        inside = lo <= pf.cycles <= hi
        l2s, l2f = fs.get("gpu_l2_hit_rate", 0.0), ff.get("gpu_l2_hit_rate", 0.0)
        txs, txf = fs.get("gpu_texture_hit_rate", 0.0), ff.get("gpu_texture_hit_rate", 0.0)
        print(f"{name:16s} {pf.waves:6.1f} {rs.result.warp_instructions:11,d} {pf.cycles:12,.0f} {ps.cycles:12,.0f} "
              f"{100 * err:+6.2f}% {lo:8,.0f}-{hi:8,.0f} {'yes' if inside else 'no':>3s} "
              f"{100 * ps.simulated_share:5.1f}% {100 * l2f:5.1f}/{100 * l2s:5.1f}% {100 * txf:5.1f}/{100 * txs:5.1f}% "
              f"{tf:8.1f}s {ts:7.1f}s {tf / ts:5.1f}", flush=True)
        if ps.method != "full":
            errors.append(abs(err))
            speedups.append(tf / ts)
            covered += inside
            l2d.append(abs(l2s - l2f))
            texd.append(abs(txs - txf))
    if errors:
        print(f"sampled launches: {len(errors)}; |cycles error| median {100 * statistics.median(errors):.2f}%, "
              f"worst {100 * max(errors):.2f}%; L2 hit rate within {100 * max(l2d):.2f} points, texture within "
              f"{100 * max(texd):.2f}; interval covered the full figure in {covered}/{len(errors)}; "
              f"wall-time speed-up median {statistics.median(speedups):.1f}x (min {min(speedups):.1f}x)")
    if args.steps:
        repeated(cfg, args.steps, args.scale)


def repeated(cfg, steps, scale):
    """The time-stepped kernel launched ``steps`` times, each step reading the one before: predicted
    with ``gpu_method="auto"`` (reused across launches once they repeat) and ``"full"``."""
    from maxsim.gpu.sampling import launches
    k = Kernel.load(SUITE, cfg=cfg, kernel="heat_step")
    n = max(1024, int(cfg.gpu.sms * 16 * 128 * 4 * scale))  # four waves of 128-thread CTAs
    out = {}
    for method in ("auto", "full"):
        launches.forget()
        u = np.random.default_rng(5).random(n, dtype=np.float32)
        t, cycles, how = time.perf_counter(), 0.0, collections.Counter()
        for _ in range(steps):
            r = launch(k, n // 128, 128, params={"in": "in", "out": "out", "n": n, "alpha": 0.25},
                       buffers={"in": u, "out": np.zeros_like(u)}, config=cfg, timing=False, gpu_method=method)
            u = r.read("out")
            cycles += r.prediction.cycles
            how[r.prediction.method] += 1
        out[method] = (cycles, time.perf_counter() - t, dict(how), u)
    (ca, ta, ha, ua), (cf, tf, hf, uf) = out["auto"], out["full"]
    assert np.array_equal(ua, uf)  # the same outputs: every step computed either way
    print(f"heat_step x {steps} launches of {n // 128} CTAs: full {cf:,.0f} cycles in {tf:.1f}s; auto "
          f"{ca:,.0f} ({100 * (ca / cf - 1):+.2f}%) in {ta:.1f}s ({tf / ta:.1f}x), methods {ha}")


if __name__ == "__main__":
    main()
