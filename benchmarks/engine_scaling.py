"""How the SGEMM comparison's predictions scale on the Dask engine: the same predictions in this
process, on a local cluster of 1 worker and on one of 2 (or --workers N ...).

    python benchmarks/engine_scaling.py [--workload sgemm_128] [--sizes 512,1024,...] [--workers 1 2]

No result cache: every run computes every prediction. Prints, for each way of running them, the
wall seconds, the CPU seconds of this process and of its children (the cluster's worker processes,
counted once they have exited, so the cluster's start and stop are included), the speed-up in wall
time over this process, and whether every prediction equals the in-process one (all but the
seconds each simulation took). On a machine shared with other work the wall time measures the
others too: compare the CPU seconds.
"""

from __future__ import annotations

import argparse
import resource
import time

from maxsim.arch.config import load_config
from maxsim.engine import Engine
from workloads.compare import compare

DEFAULT_SIZES = (512, 768, 1024, 1280, 1536, 1792, 2048, 2560)


def _cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime, c.ru_utime + c.ru_stime


def _strip(result):
    for k in result["kernels"].values():
        for p in k["points"]:
            p.pop("sim_seconds", None)
    return result


def run(cfg, workload, sizes, jobs):
    """(wall s, CPU s here, CPU s of children, result) of the predictions in this process (jobs 0)
    or on a local cluster of ``jobs`` workers (even of one)."""
    t0, (s0, c0) = time.perf_counter(), _cpu()
    with Engine(jobs=max(jobs, 1), in_process=jobs == 0) as engine:
        result = compare(cfg, (workload,), sizes=sizes, engine=engine)
    wall, (s1, c1) = time.perf_counter() - t0, _cpu()
    return wall, s1 - s0, c1 - c0, _strip(result)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="sgemm_128", choices=("sgemm_64", "sgemm_128"))
    ap.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--config", default="gtx980_oc")
    args = ap.parse_args()
    cfg = load_config(args.config)
    sizes = [int(s) for s in args.sizes.split(",")]
    # warm up: the numba cores load from their cache once per process
    compare(cfg, (args.workload,), sizes=[256], jobs=1)
    print(f"{len(sizes)} predictions of {args.workload} (N = {args.sizes}) with {args.config}")
    print(f"{'where':32s} {'wall s':>8s} {'CPU s here':>11s} {'CPU s workers':>14s} {'speed-up':>9s}  same")
    base_wall, base = None, None
    for jobs in [0] + args.workers:
        wall, here, children, result = run(cfg, args.workload, sizes, jobs)
        where = "this process" if jobs == 0 else f"local cluster of {jobs} worker{'s' if jobs > 1 else ''}"
        if base is None:
            base_wall, base = wall, result
        print(f"{where:32s} {wall:8.1f} {here:11.1f} {children:14.1f} {base_wall / wall:9.2f}  {result == base}")


if __name__ == "__main__":
    main()
