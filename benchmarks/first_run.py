"""The newcomer's wait: wall time of the first ``maxsim run sgemm_64`` on an empty cache (it compiles
the simulator's cores) and of the second (it loads them), each a fresh process with a cache folder
of its own (``MAXSIM_CACHE_DIR``), as ``pip install . && maxsim run sgemm_64`` runs it. Prints each
repetition's figures (wall time, and the CPU time of the run's processes: the compiling workers
included), the load average when it started, and the best.

    python3 benchmarks/first_run.py [--repeat N] [ARGS of maxsim run ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(args, env):
    t, c = time.perf_counter(), cpu_of_children()
    p = subprocess.run([sys.executable, "-m", "maxsim.cli", "run", *args], env=env, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"maxsim run {' '.join(args)} failed: {p.stderr.strip()[-500:]}")
    return time.perf_counter() - t, cpu_of_children() - c, p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=1)
    opts, rest = ap.parse_known_args()
    args = rest or ["sgemm_64"]
    best = [float("inf"), float("inf")]
    for i in range(opts.repeat):
        with tempfile.TemporaryDirectory(prefix="maxsim-first-run-") as cache:
            env = dict(os.environ, MAXSIM_CACHE_DIR=cache, MAXSIM_COMPILE_NOTICE="1")
            load = os.getloadavg()[0]
            first, first_cpu, notice = timed(args, env)
            second, second_cpu, _ = timed(args, env)
        best = [min(best[0], first), min(best[1], second)]
        told = sum(1 for line in notice.splitlines() if line.startswith("maxsim: compiling"))
        print(f"run {i + 1}: first {first:.1f} s ({first_cpu:.1f} CPU s, {told} compile notices), second "
              f"{second:.2f} s ({second_cpu:.2f} CPU s) (load average {load:.2f} at the start, "
              f"{os.cpu_count()} CPUs)", flush=True)
    print(f"best: first run {best[0]:.1f} s, second run {best[1]:.2f} s")


if __name__ == "__main__":
    main()
