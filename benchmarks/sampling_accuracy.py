"""Sampled whole-GPU prediction versus full simulation of every CTA, per SGEMM size.

    python benchmarks/sampling_accuracy.py [--sizes 256,512,1024] [--config gtx980_oc]

Prints cycles, GFLOPS and wall time of both methods and the sampled prediction's error.
"""

from __future__ import annotations

import argparse
import time

from maxsim.arch.config import load_config
from workloads.sgemm.predict import predict_sgemm


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256,512,1024")
    ap.add_argument("--config", default="gtx980_oc")
    ap.add_argument("--kernels", default="sgemm_64,sgemm_128")
    args = ap.parse_args()
    cfg = load_config(args.config)
    print(f"{'kernel':10s} {'N':>5s} {'full cycles':>12s} {'sampled':>12s} {'error':>7s} "
          f"{'full GFLOPS':>11s} {'full s':>7s} {'sampled s':>9s}")
    for name in args.kernels.split(","):
        for n in (int(x) for x in args.sizes.split(",")):
            t0 = time.perf_counter()
            full = predict_sgemm(name, n, cfg, full=True)
            t1 = time.perf_counter()
            samp = predict_sgemm(name, n, cfg)
            t2 = time.perf_counter()
            err = 100.0 * (samp["cycles"] - full["cycles"]) / full["cycles"]
            print(f"{name:10s} {n:5d} {full['cycles']:12.0f} {samp['cycles']:12.0f} {err:+6.2f}% "
                  f"{full['gflops']:11.0f} {t1 - t0:7.1f} {t2 - t1:9.1f}", flush=True)


if __name__ == "__main__":
    main()
