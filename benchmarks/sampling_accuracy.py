"""Sampled whole-GPU prediction versus full simulation on a suite of kernels of different shapes.

    python benchmarks/sampling_accuracy.py [--config gm204] [--set KEY=VALUE ...] [--only NAME,...]
                                           [--scale 1.0] [--one-wave]

Each kernel of ``workloads/cuda/sampling_suite.cu`` (convolution, stencils, reduction, triangular
band, divergent CTAs, row- and column-order matrix-vector products, one step of a time-stepped
kernel, two SGEMMs, blur, transpose, and two that read through the texture path: a 1-D convolution and
a sparse matrix-vector product gathering its vector) is launched over many waves of CTAs twice: ``gpu_method="auto"``
(sampled across waves, :mod:`maxsim.gpu.sampling.waves`) and ``"full"`` (every CTA on every SM).
Then the time-stepped kernel is launched ``--steps`` times both ways (``"auto"`` reuses the
launches' figures once they repeat, :mod:`maxsim.gpu.sampling.launches`).
Prints per kernel the waves, warp instructions, both cycle counts and the sampled one's error, its
interval and whether the full figure lies in it, the share simulated, the L2 and texture hit rates
of both, and both CPU times; then the median and worst error and the median speed-up.
``--timing-only`` adds a prediction for timing only (``launch(timing_only=True)``: only the CTAs the
sampled prediction needs run functionally) and its error and speed-up; ``--huge N`` predicts, for
timing only, a naive SGEMM of about N warp instructions (e.g. 1e9) and prints its time.
``--scale`` multiplies the number of CTAs (rows of the grid). ``--one-wave``: instead, the kernels
that loop at one wave of long CTAs, which ``"auto"`` samples in time
(:mod:`maxsim.gpu.sampling.intime`) once their rates are stable. The SGEMM workloads' own sampled
method is measured by ``benchmarks/sgemm_sampling_accuracy.py``.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import time

import numpy as np

from maxsim.arch.config import load_config, override
from maxsim.host import Kernel, launch
from maxsim.host.args import Texture
from setting_arg import setting

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
    tb = min(h, w)  # rows of the triangle (the kernel reads row y up to column y)
    out["tri_band"] = ("tri_band", (w // 128, tb), 128, {"a": "a", "out": "out", "w": w},
                       {"a": img[:tb * w], "out": np.zeros(tb * w, np.float32)})
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
    out.update(texture_cases(rng, h * 1024, taps=9, width=8))
    return out


def texture_cases(rng, n, taps, width):
    """The two kernels that read through the texture path (texture objects: TLDS), over ``n``
    outputs: a 1-D convolution of ``taps`` weights, and an ELL sparse matrix-vector product of
    ``width`` entries a row whose columns lie within 2,048 of the diagonal (the vector gathered
    through the texture cache). The textures live at the address the figures in
    docs/prediction-methods.md were measured with (1 << 40): a texture's address places its texels
    in L2 slices and TLB pages (moving it moved spmv_ell_tex's sampled cycles by 0.3%, its one-wave
    run's by 2%); the launch API gives a texture bound without one the same address at every launch
    (maxsim.host.args.texture_address)."""
    x = _f32(rng, n + taps)
    out = {"conv_tex": ("conv_tex", n // 128, 128, {"in": 0, "wt": "wt", "out": "out", "n": n, "taps": taps},
                        {"wt": _f32(rng, taps), "out": np.zeros(n, np.float32)},
                        {0: Texture(x, format="float1", address=1 << 40)})}
    col = (np.arange(n)[None, :] + rng.integers(-2048, 2048, (width, n))) % n
    out["spmv_ell_tex"] = ("spmv_ell_tex", n // 128, 128,
                           {"col": "col", "val": "val", "x": 0, "y": "y", "rows": n, "width": width},
                           {"col": col.astype(np.int32).ravel(), "val": _f32(rng, width * n),
                            "y": np.zeros(n, np.float32)}, {0: Texture(_f32(rng, n), format="float1", address=1 << 40)})
    return out


def one_wave_cases(slots=256):
    """name -> case: the suite's kernels that loop, at one wave of long CTAs on a GPU of ``slots``
    CTA slots (of 128 threads; the GTX 980's 256), sampled in time. Their sizes differ from those of
    the launches the stop rule's settings were chosen on (``methods.toml``, ``[in_time]``)."""
    rng = np.random.default_rng(11)
    rows = slots * 128
    out = {}
    for name, cols in (("matvec_cols", 1200), ("matvec_rows", 600)):
        out[name] = (name, rows // 128, 128, {"a": "a", "x": "x", "y": "y", "rows": rows, "cols": cols},
                     {"a": _f32(rng, rows * cols), "x": _f32(rng, cols), "y": np.zeros(rows, np.float32)})
    sn, sk = 512, 2048
    sr = slots // (sn // 128)
    out["sgemm_naive"] = ("sgemm_naive", (sn // 128, sr), 128, {"a": "a", "b": "b", "c": "c", "n": sn, "k": sk},
                          {"a": _f32(rng, sr * sk), "b": _f32(rng, sk * sn), "c": np.zeros(sr * sn, np.float32)})
    tk, tr = 4096, slots // 2 // (sn // 16) * 16  # 256-thread CTAs: half as many slots
    out["sgemm_tiled"] = ("sgemm_tiled", (sn // 16, tr // 16), (16, 16), {"a": "a", "b": "b", "c": "c", "n": sn, "k": tk},
                          {"a": _f32(rng, tr * tk), "b": _f32(rng, tk * sn), "c": np.zeros(tr * sn, np.float32)})
    n3, d3 = 256, 640
    vol = _f32(rng, n3 * n3 * d3)
    out["stencil3d"] = ("stencil3d", (n3 // 128, slots * 3 // 4 // 2), 128, {"in": "in", "out": "out", "n": n3, "d": d3},
                        {"in": vol, "out": np.zeros_like(vol)})
    out.update(texture_cases(rng, rows, taps=1024, width=512))
    return out


def _run(kernel, case, cfg, method, timing_only=False):
    """The launch and its CPU seconds (the machine may be shared: wall time would count the others)."""
    _, grid, block, params, buffers, *textures = case
    t = time.process_time()
    r = launch(kernel, grid, block, params=params, buffers={k: v.copy() for k, v in buffers.items()}, config=cfg,
               textures=textures[0] if textures else None, timing=False, gpu_method=method, timing_only=timing_only)
    return r, time.process_time() - t


def _warm_up(cfg):
    """One small launch each way, so that compiling the model (once per process and source
    version) is not counted in the first kernel's time: on one SM of ``cfg``, where the launch is
    32 waves, sampled across them (the L2 warming and the dispatcher model compiled too)."""
    name, grid, block, params, buffers = cases(1 / 16)["stencil2d"]
    k = Kernel.load(SUITE, cfg=cfg, kernel=name)
    one = override(cfg, {"gpu.sms": 1})
    for method, only in (("auto", False), ("full", False), ("auto", True)):
        launch(k, grid, block, params=params, buffers={n: v.copy() for n, v in buffers.items()}, config=one,
               timing=False, gpu_method=method, timing_only=only)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="gm204")
    ap.add_argument("--set", type=setting, action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--only", default=None, help="comma-separated kernel names")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--steps", type=int, default=20, help="launches of the time-stepped kernel (0: none)")
    ap.add_argument("--timing-only", action="store_true",
                    help="also predict each launch for timing only (launch(timing_only=True): only the CTAs the "
                         "prediction needs run functionally), its error and speed-up against the full simulation")
    ap.add_argument("--one-wave", action="store_true",
                    help="the kernels that loop at one wave of long CTAs (sampled in time) instead of many waves")
    ap.add_argument("--huge", type=float, default=0.0, metavar="WARP_INSTRUCTIONS",
                    help="only predict, for timing only, a naive SGEMM of about this many warp instructions")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    if args.set:
        cfg = override(cfg, dict(args.set))
    _warm_up(cfg)
    if args.huge:
        return huge(cfg, args.huge)
    suite = one_wave_cases() if args.one_wave else cases(args.scale)
    names = args.only.split(",") if args.only else list(suite)
    print(f"{cfg.name}, {cfg.gpu.sms} SMs; sampled = gpu_method 'auto', full = 'full'; times in CPU seconds; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'kernel':16s} {'waves':>6s} {'warp instr':>11s} {'full cycles':>12s} {'sampled':>12s} {'error':>7s} "
          f"{'interval':>17s} {'in':>3s} {'share':>6s} {'L2 full/samp':>13s} {'tex full/samp':>13s} "
          f"{'cpu full':>9s} {'sampled':>8s} {'x':>5s}")
    errors, speedups, covered, l2d, texd = [], [], 0, [], []
    only = []
    for name in names:
        case = suite[name]
        k = Kernel.load(SUITE, cfg=cfg, kernel=case[0])
        rs, ts = _run(k, case, cfg, "auto")
        rf, tf = _run(k, case, cfg, "full")
        if args.timing_only:
            ro, to = _run(k, case, cfg, "auto", timing_only=True)
            po = ro.prediction
            lo, hi = po.interval or (po.cycles, po.cycles)
            fo = ro.fields()
            only.append((name, po.cycles / rf.prediction.cycles - 1, lo <= rf.prediction.cycles <= hi, tf / to,
                         fo.get("gpu_l2_hit_rate", 0.0) - rf.fields().get("gpu_l2_hit_rate", 0.0), to,
                         po.details.get("ctas_run", 0), po.details.get("warp_instructions_standard_error", 0.0)
                         / max(1.0, po.details.get("warp_instructions", 1.0))))
            print(f"{name:16s} timing only: {po.cycles:12,.0f} {100 * only[-1][1]:+6.2f}% {lo:8,.0f}-{hi:8,.0f} "
                  f"{'yes' if only[-1][2] else 'no':>3s} cpu {to:.1f}s ({tf / to:.1f}x), "
                  f"{only[-1][6]:,d} CTAs run", flush=True)
        ps, pf = rs.prediction, rf.prediction
        fs, ff = rs.fields(), rf.fields()
        err = ps.cycles / pf.cycles - 1
        lo, hi = ps.interval or (ps.cycles, ps.cycles)
        inside = lo <= pf.cycles <= hi
        l2s, l2f = fs.get("gpu_l2_hit_rate", 0.0), ff.get("gpu_l2_hit_rate", 0.0)
        txs, txf = fs.get("gpu_texture_hit_rate", 0.0), ff.get("gpu_texture_hit_rate", 0.0)
        if args.one_wave:
            print(f"{name:16s} {ps.method}" + (f", stopped at cycle {ps.details['stopped_at_cycle']:,d}"
                                                if "stopped_at_cycle" in ps.details else ""))
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
              f"CPU-time speed-up median {statistics.median(speedups):.1f}x (min {min(speedups):.1f}x)")
    if only:
        print("timing only (launch(timing_only=True)):")
        print(f"{'kernel':16s} {'error':>7s} {'in':>3s} {'L2 diff':>8s} {'cpu':>7s} {'x full':>7s} {'CTAs run':>9s} "
              f"{'count se':>8s}")
        for name, err, inside, x, l2, t, run, se in only:
            print(f"{name:16s} {100 * err:+6.2f}% {'yes' if inside else 'no':>3s} {100 * l2:+7.2f} {t:6.1f}s {x:6.1f}x "
                  f"{run:9,d} {100 * se:7.2f}%")
        errs = [abs(e) for _, e, *_ in only]
        print(f"timing only: |cycles error| median {100 * statistics.median(errs):.2f}%, worst {100 * max(errs):.2f}%; "
              f"interval covered the full figure in {sum(o[2] for o in only)}/{len(only)}; speed-up against the full "
              f"simulation median {statistics.median(o[3] for o in only):.1f}x (min {min(o[3] for o in only):.1f}x)")
    if args.steps:
        repeated(cfg, args.steps, args.scale)


def huge(cfg, target):
    """A naive SGEMM (n = 2,048, k = 128) of about ``target`` warp instructions predicted for timing only: the
    warp instructions counted, the prediction and its interval, the wall and CPU seconds."""
    k = Kernel.load(SUITE, cfg=cfg, kernel="sgemm_naive")
    sn, sk = 2048, 128
    per_row = sn // 32 * sk * 6.45  # warp instructions of a row of C (its warps' ~6.45 per step of k, measured)
    rows = max(64, int(target / per_row))
    rng = np.random.default_rng(3)
    a, b = _f32(rng, rows * sk), _f32(rng, sk * sn)
    w, t = time.perf_counter(), time.process_time()
    r = launch(k, (sn // 128, rows), 128, params={"a": "a", "b": "b", "c": "c", "n": sn, "k": sk},
               buffers={"a": a, "b": b, "c": np.zeros(rows * sn, np.float32)}, config=cfg, timing=False,
               timing_only=True)
    w, t = time.perf_counter() - w, time.process_time() - t
    p = r.prediction
    d = p.details
    print(f"sgemm_naive {rows:,d} x {sn} x {sk}: {sn // 128 * rows:,d} CTAs, {p.waves:.0f} waves, "
          f"{d['warp_instructions']:,.0f} warp instructions (counted from {d['ctas_run']:,d} CTAs run, standard error "
          f"{d['warp_instructions_standard_error']:,.0f}); {p.method}: {p.cycles:,.0f} cycles "
          f"({p.interval[0]:,.0f}-{p.interval[1]:,.0f}), {100 * p.simulated_share:.2f}% simulated; "
          f"{w:.1f} s wall, {t:.1f} s CPU")


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
