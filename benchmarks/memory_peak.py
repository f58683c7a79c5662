"""Peak memory of a whole-grid run and prediction, against the size of the grid.

    python benchmarks/memory_peak.py [--grids 500,1000,2000,6000] [--taps 1560] [--config gm204]

Runs ``maxsim run workloads/kernels/conv1d8.sass --grid G --block 64 --predict --json`` in a
child process for each grid size G: a conv-layer-shaped launch of a kernel of our own (a 1D
convolution with 8 output channels, one output position per thread, 64 threads per CTA, 2 warps
per CTA; with 1,560 taps each warp executes about 25,000 instructions, a CTA about 50,000). The
input x, the weights w and the output buffer are passed as .npy files and ``zeros:``. For each
size it prints the child's wall time, CPU time (user + system) and peak resident set size
(``ru_maxrss`` of that child, from ``os.wait4``), and the predicted time (which must not
depend on how the run holds its traces). The point to read: whether peak memory grows with G.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = os.path.join(HERE, "..", "workloads", "kernels", "conv1d8.sass")
BLOCK = 64


def run(grid, taps, config, folder):
    n = grid * BLOCK
    rng = np.random.default_rng(0)
    xf, wf = os.path.join(folder, f"x{grid}.npy"), os.path.join(folder, f"w{taps}.npy")
    np.save(xf, rng.standard_normal(n + taps - 1).astype(np.float32))
    np.save(wf, rng.standard_normal((taps, 8)).astype(np.float32))
    maxsim = os.path.join(os.path.dirname(sys.executable), "maxsim")
    cmd = [maxsim, "run", KERNEL, "--grid", str(grid), "--block", str(BLOCK), "--gpu", config, "--predict",
           "--param", "x=x", "--param", "w=w", "--param", "out=out", "--param", f"n={n}", "--param", f"taps={taps}",
           "--buffer", f"x={xf}:in", "--buffer", f"w={wf}:in", "--buffer", f"out=zeros:8x{n}", "--json", "--quiet"]
    t0 = time.perf_counter()
    with open(os.path.join(folder, "out.json"), "w") as out, open(os.path.join(folder, "err.txt"), "w") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        with open(os.path.join(folder, "err.txt")) as f:
            raise SystemExit(f"maxsim run --grid {grid} failed:\n{f.read()}")
    with open(os.path.join(folder, "out.json")) as f:
        fields = json.load(f)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, fields


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grids", default="500,1000,2000,6000", help="grid sizes in CTAs, comma-separated")
    ap.add_argument("--taps", type=int, default=1560, help="taps per output (16 warp instructions each)")
    ap.add_argument("--config", default="gm204")
    args = ap.parse_args()
    print(f"conv1d8, block {BLOCK}, {args.taps} taps, config {args.config}")
    print(f"{'CTAs':>6} {'warp instr/CTA':>15} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12} {'predicted seconds':>20}")
    with tempfile.TemporaryDirectory() as folder:
        for g in (int(v) for v in args.grids.split(",")):
            wall, cpu, rss, f = run(g, args.taps, args.config, folder)
            per_cta = f["warp_instructions"] / g
            print(f"{g:>6} {per_cta:>15,.0f} {wall:>8.1f} {cpu:>8.1f} {rss:>12,.0f} {f['seconds']!r:>20}",
                  flush=True)


if __name__ == "__main__":
    main()
