"""What DRAM latency each large SGEMM size would need to match the measured GTX 980, against the
load the model's DRAM channels carry there.

For each size, sampled predictions (gtx980_oc, the L2 the launch left, compiled core) with
``latency.dram`` raised by each of ``--extra`` cycles; prints the GFLOPS error against the measured
curve (traces/), the steady-state DRAM busy share and the L2 hit rate, and the extra latency (linear
interpolation between the runs) that would bring each size to its measured GFLOPS. A load-dependent
latency (queueing) can only be the cause if the extra latency needed grows with the DRAM load as a
queue's wait does.

Usage: python benchmarks/dram_latency_need.py [--sizes 2048,4096,5120,6144,8192] [--extra 0,1000,2000]
"""
import argparse
import os
import sys

import attrs

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from maxsim.arch.config import load_config  # noqa: E402
from workloads.compare import _predict_point, load_measurements  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2048,4096,5120,6144,8192")
    ap.add_argument("--extra", default="0,1000,2000")
    ap.add_argument("--workload", default="sgemm_64")
    ap.add_argument("--config", default="gtx980_oc")
    args = ap.parse_args(argv)
    base = load_config(args.config)
    measured = load_measurements().get(args.workload, {})
    extras = [int(x) for x in args.extra.split(",")]
    print(f"{args.workload} on {base.name}: latency.dram = {base.latency.dram} + extra")
    for n in [int(x) for x in args.sizes.split(",")]:
        m = measured.get(n)
        row = []
        for x in extras:
            cfg = attrs.evolve(base, latency=attrs.evolve(base.latency, dram=base.latency.dram + x))
            p = _predict_point(cfg, args.workload, None, n, l2_start="previous")
            mem = p.get("memory") or {}
            hits, misses = mem.get("l2_read_hits", 0), mem.get("l2_read_misses", 0)
            err = None if m is None else 100.0 * (p["gflops"] - m) / m
            row.append((x, p["gflops"], err))
            print(f"N={n:5d} extra {x:5d}: {p['gflops']:7.0f} GFLOPS"
                  + ("" if err is None else f" ({err:+5.1f}% vs {m:.0f})")
                  + f"  DRAM busy {100 * p.get('dram_busy', 0):4.0f}%  L2 hit {100 * hits / max(hits + misses, 1):4.1f}%",
                  flush=True)
        if m is not None:
            need = None
            for (x0, g0, _), (x1, g1, _) in zip(row, row[1:]):
                if (g0 - m) * (g1 - m) <= 0 and g0 != g1:
                    need = x0 + (x1 - x0) * (g0 - m) / (g0 - g1)
                    break
            print(f"N={n:5d} extra latency that matches the measured GFLOPS: "
                  + (f"{need:.0f} cycles" if need is not None else f"outside {extras[0]}..{extras[-1]}"), flush=True)


if __name__ == "__main__":
    main()
