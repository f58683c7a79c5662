"""What one whole-GPU prediction costs, and the cold SGEMM comparison on a local cluster.

    python benchmarks/prediction_speed.py [--workload sgemm_128] [--n 3072] [--config gm204]
                                          [--repeat 5] [--clocks compiled,simpy] [--compare 1,2]

1. One sampled prediction (``predict_sgemm``) in a child process per clock (``MAXSIM_CLOCK``:
   "compiled" runs the SMs' quanta in compiled code, "simpy" as simpy processes; the numbers must
   be the same): the CPU seconds of the first prediction after the process has loaded the compiled
   code (a warm-up prediction of another size), best and median of --repeat runs of that size (the
   problem's traced sectors are forgotten between runs: each run traces them again, as a new size
   would), and the child's CPU seconds in all (imports, loading the compiled code, the warm-up).
2. With --compare J[,J...]: ``maxsim compare --no-cache --quiet --jobs J`` (a local Dask cluster of J
   worker processes, nothing read from the result cache), its wall and CPU seconds (the cluster's
   workers included), for each J.

CPU seconds are the steadier figure on a shared machine; the load average is printed first.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
from maxsim.arch.config import load_config
from maxsim.gpu import sampling
from workloads.sgemm.predict import predict_sgemm
name, n, config, repeat = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
cfg = load_config(config)
predict_sgemm(name, 1024 if n != 1024 else 2048, cfg)  # loads the compiled code
times, result = [], None
for _ in range(repeat):
    sampling._KNOWN.clear()
    c0 = time.process_time()
    p = predict_sgemm(name, n, cfg)
    times.append(time.process_time() - c0)
    p.pop("sim_seconds", None)
    result = result or p
    if p != result:
        raise SystemExit("the same prediction gave different numbers")
print(json.dumps({"times": times, "gflops": result["gflops"], "result": result}, default=str))
"""


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_prediction(name, n, config, repeat, clock):
    env = dict(os.environ, MAXSIM_CLOCK=clock)
    c0 = _children_cpu()
    out = subprocess.run([sys.executable, "-c", CHILD, name, str(n), config, str(repeat)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1]), _children_cpu() - c0


def cold_compare(jobs):
    maxsim = os.path.join(os.path.dirname(sys.executable), "maxsim")
    t0, c0 = time.perf_counter(), _children_cpu()
    subprocess.run([maxsim, "compare", "--no-cache", "--quiet", "--jobs", str(jobs)], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0, _children_cpu() - c0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="sgemm_128", choices=("sgemm_64", "sgemm_128"))
    ap.add_argument("--n", type=int, default=3072)
    ap.add_argument("--config", default="gm204")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--clocks", default="compiled,simpy")
    ap.add_argument("--compare", default="", help="also the cold comparison with these worker counts")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{args.workload} N = {args.n} on {args.config}: CPU seconds of one prediction "
          f"(best / median of {args.repeat}; the child process in all)")
    results = {}
    for clock in args.clocks.split(","):
        res, total = one_prediction(args.workload, args.n, args.config, args.repeat, clock)
        results[clock] = res["result"]
        t = res["times"]
        print(f"  clock {clock:8s}  {min(t):.2f} / {statistics.median(t):.2f} s   process {total:.1f} s   "
              f"{res['gflops']:,.0f} GFLOPS")
    if len(results) > 1:
        same = all(r == next(iter(results.values())) for r in results.values())
        print(f"  same prediction on every clock: {'yes' if same else 'NO'}")
    for jobs in [int(j) for j in args.compare.split(",") if j]:
        wall, cpu = cold_compare(jobs)
        print(f"maxsim compare --no-cache, {jobs} worker(s): {wall:.1f} s wall, {cpu:.1f} CPU-s")


if __name__ == "__main__":
    main()
