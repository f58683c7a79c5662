"""Sampled whole-GPU prediction versus full simulation of every CTA, per SGEMM size.

    python benchmarks/sgemm_sampling_accuracy.py [--sizes 256,512,1024] [--config gtx980_oc]
                                           [--kernels sgemm_64,sgemm_128] [--set KEY=VALUE ...]
                                           [--l2-start empty|previous]

Prints cycles, GFLOPS and wall time of both methods, the sampled prediction's error, the L2 and
texture-cache hit rates of both (nvprof's ``l2_tex_read_hit_rate`` and ``tex_cache_hit_rate``), and
how closely the full simulation's CTAs kept together (:func:`maxsim.gpu.gpu.wave_alignment`: the CV
of the CTAs' durations, the widest spread of one wave's starts as a share of a CTA's duration).
``--set`` changes a config key (TOML syntax for the value), e.g. a quarter of the GTX 980:
``--set gpu.sms=4 --set l2.size=524288 --set l2.slices=2 --set dram.channels=2
--set gpu.dram_bus_bits=64 --set gpu.dram_bandwidth_gbs=64.0``. ``--l2-start previous``: both
methods predict the launch from the L2 the same launch left (back-to-back launches). The sampled
prediction's DRAM busy share and its DRAM-bound mark (``*``) follow the error.
"""

from __future__ import annotations

import argparse
import time

from maxsim.arch.config import load_config, override
from maxsim.report.metrics import profiler_metrics
from workloads.sgemm.predict import predict_sgemm
from setting_arg import setting




def _hit_rates(p, cfg):
    m = profiler_metrics(p["memory"], cfg.cycles_to_seconds(p["cycles"]), cfg)
    return m.get("l2_tex_read_hit_rate", float("nan")), m.get("tex_cache_hit_rate", float("nan"))


def _alignment(a):
    if not a:
        return ""
    return f"  {100 * a['cta_duration_cv']:10.2f}%  {100 * a['widest_wave_start_spread_share']:15.1f}%"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256,512,1024")
    ap.add_argument("--config", default="gtx980_oc")
    ap.add_argument("--kernels", default="sgemm_64,sgemm_128")
    ap.add_argument("--set", dest="settings", type=setting, action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--l2-start", choices=("empty", "previous"), default="empty")
    args = ap.parse_args()
    cfg = load_config(args.config)
    if args.settings:
        cfg = override(cfg, dict(args.settings))
    print(f"{'kernel':10s} {'N':>5s} {'full cycles':>12s} {'sampled':>12s} {'error':>7s} {'DRAM busy':>10s} "
          f"{'full GFLOPS':>11s} {'full s':>7s} {'sampled s':>9s}  L2 hit % full/sampled  tex hit % full/sampled"
          f"  full: CTA CV  wave start spread")
    for name in args.kernels.split(","):
        for n in (int(x) for x in args.sizes.split(",")):
            t0 = time.perf_counter()
            full = predict_sgemm(name, n, cfg, full=True, l2_start=args.l2_start)
            t1 = time.perf_counter()
            samp = predict_sgemm(name, n, cfg, l2_start=args.l2_start)
            t2 = time.perf_counter()
            err = 100.0 * (samp["cycles"] - full["cycles"]) / full["cycles"]
            (l2f, texf), (l2s, texs) = _hit_rates(full, cfg), _hit_rates(samp, cfg)
            busy = f"{100 * samp['dram_busy']:.0f}%{' *' if samp['dram_bound'] else '  '}"
            print(f"{name:10s} {n:5d} {full['cycles']:12.0f} {samp['cycles']:12.0f} {err:+6.2f}% {busy:>10s} "
                  f"{full['gflops']:11.0f} {t1 - t0:7.1f} {t2 - t1:9.1f}  {l2f:9.1f} / {l2s:4.1f}"
                  f"  {texf:13.1f} / {texs:4.1f}{_alignment(full.get('wave_alignment'))}", flush=True)


if __name__ == "__main__":
    main()
