"""CPU time of the functional run inside whole-GPU predictions, per launch shape.

    python benchmarks/functional_speed.py [--cases stencil2d,stencil5,heat,gemm] [--scale 8]
                                          [--stencil 2048] [--steps 300] [--gemm 512]
                                          [--method auto|full] [--functional-only]

Each case runs in a child process (after a small warm-up launch there that loads the compiled
code) and prints the CPU seconds of ``LaunchStream._step`` (where the functional run executes the
batches of CTAs, with their trace records: :mod:`maxsim.functional.launch`), summed over the
timed launch, and the CPU seconds of the launch itself (``maxsim.launch``, end to end), with the
warp instructions and the predicted cycles (which no change to the functional run's speed may
move):

* ``stencil2d``: ``stencil2d`` of ``workloads/cuda/sampling_suite.cu`` over 1,024 x (1,024 x
  ``--scale``) points, CTAs of 128 threads (``--scale 8``: 65,536 CTAs, 256 waves on gm204), as
  ``benchmarks/sampling_accuracy.py --only stencil2d --scale 8`` launches it;
* ``stencil5``: ``stencil5`` of ``workloads/cuda/stencil.cu`` over ``--stencil``² points, CTAs of
  32 x 8 threads (a boundary branch diverges in the warps at the grid's left and right edges);
* ``heat``: ``heat_step`` of ``workloads/cuda/sampling_suite.cu`` over 4,096 elements (32 CTAs of
  128 threads), ``--steps`` launches one after another (a tiny launch: the functional run's
  Python per instruction);
* ``gemm``: ``matmul_tiled`` of ``workloads/cuda/matmul_tiled.cu`` over ``--gemm``³ (shared-memory
  tiles, two CTA barriers per tile).

The outputs of ``stencil5``, ``heat`` and ``gemm`` are checked against numpy. ``--functional-only``
launches without timing or prediction (``timing=False, predict=False``: the functional run alone,
no trace recorded). CPU seconds are the steadier figure on a shared machine; the load average is
printed with each case.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")

CHILD = r"""
import importlib, json, os, sys, time
import numpy as np
import maxsim
from maxsim.host import Kernel
case, size, method, only, root = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4] == "1", sys.argv[5]
stream = importlib.import_module("maxsim.functional.launch").LaunchStream
STEP = [0.0]
_step = stream._step

def timed_step(self):
    t = time.process_time()
    try:
        return _step(self)
    finally:
        STEP[0] += time.process_time() - t

stream._step = timed_step
SUITE = os.path.join(root, "workloads/cuda/sampling_suite.cu")
rng = np.random.default_rng(7)
how = dict(timing=False, predict=False) if only else dict(timing=False, gpu_method=method)

def stencil2d(scale):
    h, w = max(8, int(1024 * scale)), 1024
    img = rng.random(h * w, dtype=np.float32)
    k = Kernel.load(SUITE, kernel="stencil2d")
    return maxsim.launch(k, (w // 128, h), 128, params={"in": "in", "out": "out", "h": h, "w": w},
                         buffers={"in": img, "out": np.zeros_like(img)}, **how)

def stencil5(n):
    n = int(n)
    k = Kernel.load(os.path.join(root, "workloads/cuda/stencil.cu"), kernel="stencil5")
    a = rng.standard_normal((n, n), dtype=np.float32)
    r = maxsim.launch(k, grid=(n // 32, n // 8), block=(32, 8),
                      params={"in": "a", "out": "o", "h": n, "w": n, "c0": 0.5, "c1": 0.125},
                      buffers=dict(a=a, o=np.zeros_like(a)), **how)
    want = a.copy()
    want[1:-1, 1:-1] = 0.5 * a[1:-1, 1:-1] + 0.125 * (a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1] + a[2:, 1:-1])
    np.testing.assert_allclose(r.outputs["o"], want, rtol=1e-5, atol=1e-5)
    return r

def gemm(n):
    n = int(n)
    k = Kernel.load(os.path.join(root, "workloads/cuda/matmul_tiled.cu"))
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    r = maxsim.launch(k, grid=(n // 16, n // 16), block=(16, 16), params=dict(A="A", B="B", C="C", m=n, n=n, k=n),
                      buffers=dict(A=A, B=B, C=np.zeros((n, n), np.float32)), **how)
    np.testing.assert_allclose(r.outputs["C"], A @ B, rtol=1e-3, atol=1e-3 * np.sqrt(n))
    return r

HEAT = Kernel.load(SUITE, kernel="heat_step")

def heat(steps, n=4096):
    u = rng.random(n, dtype=np.float32)
    v = u.astype(np.float64)
    for _ in range(int(steps)):
        r = maxsim.launch(HEAT, grid=(n + 127) // 128, block=128, params={"in": "in", "out": "out", "n": n, "alpha": 0.25},
                          buffers={"in": u, "out": np.zeros(n, np.float32)}, **how)
        u = r.outputs["out"]
        v[1:-1] = v[1:-1] + 0.25 * (v[:-2] - 2 * v[1:-1] + v[2:])
    np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-5)
    return r

run = {"stencil2d": stencil2d, "stencil5": stencil5, "gemm": gemm, "heat": heat}[case]
run({"stencil2d": 1 / 16, "stencil5": 64, "gemm": 64, "heat": 3}[case])  # loads the compiled code
STEP[0] = 0.0
t = time.process_time()
r = run(size)
total = time.process_time() - t
p = getattr(r, "prediction", None)
print(json.dumps({"step": STEP[0], "launch": total, "instructions": r.result.warp_instructions,
                  "cycles": p.cycles if p is not None else None, "method": p.method if p is not None else None,
                  "maxsim": os.path.dirname(os.path.abspath(maxsim.__file__))}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="stencil2d,stencil5,heat,gemm")
    ap.add_argument("--scale", type=float, default=8, help="stencil2d: rows of CTAs over 1,024 (8: 256 waves)")
    ap.add_argument("--stencil", type=int, default=2048, help="N of stencil5 (N x N)")
    ap.add_argument("--steps", type=int, default=300, help="launches of heat_step")
    ap.add_argument("--gemm", type=int, default=512, help="N of matmul_tiled (N x N x N)")
    ap.add_argument("--method", default="auto", choices=("auto", "full"), help="gpu_method of every launch")
    ap.add_argument("--functional-only", action="store_true", help="launch without timing or prediction")
    args = ap.parse_args()
    sizes = {"stencil2d": args.scale, "stencil5": args.stencil, "heat": args.steps, "gemm": args.gemm}
    for case in args.cases.split(","):
        # (run from this folder, which holds no package: see general_speed.py)
        out = subprocess.run([sys.executable, "-c", CHILD, case, str(sizes[case]), args.method,
                              "1" if args.functional_only else "0", ROOT], capture_output=True, text=True, cwd=HERE)
        if out.returncode:
            raise SystemExit(f"{case} failed:\n{out.stderr}")
        f = json.loads(out.stdout.strip().splitlines()[-1])
        how = "functional only" if args.functional_only else f"{f['method']}, {f['cycles']:,.0f} cycles"
        what = (f"of {f['launch']:.3f} s for {sizes[case]} launches ({f['step'] / sizes[case] * 1e3:.3f} ms a launch; "
                f"{f['instructions']:,} warp-instructions each" if case == "heat" else
                f"of a {f['launch']:.3f} s launch ({f['instructions']:,} warp-instructions")
        print(f"{case:9s} {sizes[case]:>6}: functional run {f['step']:.3f} CPU s {what}; {how}); "
              f"load {os.getloadavg()[0]:.1f}; {f['maxsim']}")


if __name__ == "__main__":
    main()
