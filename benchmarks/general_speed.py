"""End-to-end speed and peak memory of ordinary kernels: a launch from the API to its whole-GPU
prediction, per launch shape.

    python benchmarks/general_speed.py [--cases matvec,stencil,gemm,tiny,steps,conv] [--matvec 4096]
                                       [--stencil 2048] [--gemm 512] [--tiny 200] [--steps 400] [--steps-n 4096]
                                       [--conv-taps 1560] [--config gm204] [--method auto|full]

Each case runs in a child process (after a warm-up launch there that loads the compiled code) and
prints the launch's CPU seconds (user + system of the child over the timed launches, from
``os.wait4``, less the warm-up's, which the child reports), its warp-instructions, the end-to-end
rate in millions of warp-instructions per CPU second (and the part spent in ``maxsim.launch`` itself,
without making the inputs and checking the outputs in numpy), and the child's peak resident set size:

* ``matvec``: ``matvec_rows`` of ``workloads/cuda/linalg.cu`` (one thread per row: a warp's loads
  are 32 rows apart) over an N x N matrix, 128 threads per CTA: one wave of a few long CTAs (N =
  4096: 32 CTAs of 4 warps on 16 SMs);
* ``stencil``: ``stencil5`` of ``workloads/cuda/stencil.cu`` over an N x N grid, CTAs of 32 x 8
  threads: many short CTAs (N = 2048: 16,384 CTAs, about 20 waves);
* ``gemm``: ``matmul_tiled`` of ``workloads/cuda/matmul_tiled.cu`` (16 x 16 tiles staged in shared
  memory, two CTA barriers per tile) over N x N x N, CTAs of 16 x 16 threads: many waves of
  gemm-like CTAs (N = 512: 1,024 CTAs of 8 warps, 8 waves, 17.1 M warp-instructions; N = 1024:
  4,096 CTAs, 32 waves, ~137 M);
* ``tiny``: ``vecadd`` of ``workloads/cuda/vecadd.cu`` over 1,024 elements (8 CTAs), ``--tiny``
  launches one after another: the host time of one launch in milliseconds (also the child's own
  CPU time over the launches' loop alone, without its exit);
* ``steps``: a time-stepped 1-D stencil launched many times with the same shape: ``heat_step`` of
  ``workloads/cuda/sampling_suite.cu`` over ``--steps-n`` elements (4,096: 32 CTAs of 128 threads,
  one wave, 3,854 warp-instructions a launch), ``--steps`` launches one after another, each
  reading the one before's output (thousands of tiny launches: 20,000 steps of a 1-D stencil of
  about 3,050 warp-instructions each make 61 M): milliseconds per launch and the end-to-end rate
  (the launches' loop alone, without the child's exit); the last step's output is checked against
  the same steps in numpy;
* ``conv``: ``workloads/kernels/conv1d8.sass`` (a 1D convolution, 8 output channels, 64 threads
  per CTA) over one wave of CTAs (the GPU's CTA slots) with ``--conv-taps`` taps (16 warp
  instructions each; 2,500 taps give a launch of about 40 M warp-instructions): the peak memory
  of a one-wave launch of long CTAs.

Each launch is predicted with ``--method`` (``gpu_method`` of :func:`maxsim.launch`): "auto" (the
default: the stencil's many waves are then sampled across waves, the tiny launch and the steps
repeated reuse their figures once they repeat) or "full" (every CTA on every SM); the method used is printed. The functional outputs
are checked against numpy (every output; the inputs are drawn in float32 at once, not drawn in
float64 and converted, which cost the 4096 x 4096 matrix-vector case ~0.4 CPU s of its own). SGEMM's speed on the SM core is ``benchmarks/sm_speed.py``'s. CPU seconds are the
steadier figure on a shared machine; the load average is printed first.
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
import json, os, sys, time
import numpy as np
import maxsim
from maxsim.host.kernel import Kernel
case, size, config, root, method = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
steps_n = int(sys.argv[6])
rng = np.random.default_rng(0)

LAUNCHES = [0.0]  # CPU seconds spent in maxsim.launch itself (not making the inputs or checking the outputs)
_launch = maxsim.launch

def _timed_launch(*args, **kwargs):
    t0 = time.process_time()
    try:
        return _launch(*args, **kwargs)
    finally:
        LAUNCHES[0] += time.process_time() - t0

maxsim.launch = _timed_launch

def matvec(n):
    k = Kernel.load(os.path.join(root, "workloads/cuda/linalg.cu"), kernel="matvec_rows")
    A = rng.standard_normal((n, n), dtype=np.float32)
    x = rng.standard_normal(n, dtype=np.float32)
    r = maxsim.launch(k, grid=(n + 127) // 128, block=128, params=dict(A="A", x="x", y="y", m=n, n=n),
                      buffers=dict(A=A, x=x, y=np.zeros(n, np.float32)), config=config, gpu_method=method)
    # (in float32: a float64 copy of A would be counted in the peak)
    np.testing.assert_allclose(r.outputs["y"], A @ x, rtol=1e-3, atol=1e-3 * np.sqrt(n))
    return r

def stencil(n):
    k = Kernel.load(os.path.join(root, "workloads/cuda/stencil.cu"), kernel="stencil5")
    a = rng.standard_normal((n, n), dtype=np.float32)
    r = maxsim.launch(k, grid=(n // 32, n // 8), block=(32, 8),
                      params={"in": "a", "out": "o", "h": n, "w": n, "c0": 0.5, "c1": 0.125},
                      buffers=dict(a=a, o=np.zeros_like(a)), config=config, gpu_method=method)
    want = a.copy()
    want[1:-1, 1:-1] = 0.5 * a[1:-1, 1:-1] + 0.125 * (a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1] + a[2:, 1:-1])
    np.testing.assert_allclose(r.outputs["o"], want, rtol=1e-5, atol=1e-5)
    return r

VECADD = Kernel.load(os.path.join(root, "workloads/cuda/vecadd.cu"))  # compiled once, launched many times

def gemm(n):
    k = Kernel.load(os.path.join(root, "workloads/cuda/matmul_tiled.cu"))
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    r = maxsim.launch(k, grid=(n // 16, n // 16), block=(16, 16), params=dict(A="A", B="B", C="C", m=n, n=n, k=n),
                      buffers=dict(A=A, B=B, C=np.zeros((n, n), np.float32)), config=config, gpu_method=method)
    np.testing.assert_allclose(r.outputs["C"], A @ B, rtol=1e-3, atol=1e-3 * np.sqrt(n))
    return r

def tiny(_):
    k = VECADD
    a = rng.standard_normal(1024, dtype=np.float32)
    r = maxsim.launch(k, grid=8, block=128, params=dict(a="a", b="b", c="c", n=1024),
                      buffers=dict(a=a, b=a, c=np.zeros(1024, np.float32)), config=config, gpu_method=method)
    np.testing.assert_array_equal(r.outputs["c"], a + a)
    return r

HEAT = Kernel.load(os.path.join(root, "workloads/cuda/sampling_suite.cu"), kernel="heat_step")
STEPS = {}  # the steps' start and end, checked after the timed loop

def steps(n):
    if "u" not in STEPS or len(STEPS["u"]) != n:
        STEPS["start"] = STEPS["u"] = rng.random(n, dtype=np.float32)
        STEPS["count"] = 0
    r = maxsim.launch(HEAT, grid=(n + 127) // 128, block=128, params={"in": "in", "out": "out", "n": n, "alpha": 0.25},
                      buffers={"in": STEPS["u"], "out": np.zeros(n, np.float32)}, config=config, gpu_method=method)
    STEPS["u"] = r.outputs["out"]
    STEPS["count"] += 1
    STEPS["instructions"] = STEPS.get("instructions", 0) + r.result.warp_instructions
    STEPS.setdefault("methods", {}).setdefault(r.prediction.method, 0)
    STEPS["methods"][r.prediction.method] += 1
    return r

def check_steps():
    u = STEPS["start"].astype(np.float64)
    for _ in range(STEPS["count"]):
        u[1:-1] = u[1:-1] + 0.25 * (u[:-2] - 2 * u[1:-1] + u[2:])
    np.testing.assert_allclose(STEPS["u"], u, rtol=1e-4, atol=1e-5)

def conv(taps):
    from maxsim.timing.sm import residency
    from maxsim.arch.config import load_config
    k = Kernel.load(os.path.join(root, "workloads/kernels/conv1d8.sass"))
    cfg = load_config(config)
    grid = cfg.gpu.sms * residency(k.code, 64, cfg)[0]
    n = grid * 64
    x = rng.standard_normal(n + taps - 1, dtype=np.float32)
    w = rng.standard_normal((taps, 8), dtype=np.float32)
    r = maxsim.launch(k, grid=grid, block=64, params=dict(x="x", w="w", out="out", n=n, taps=taps),
                      buffers=dict(x=x, w=w, out=np.zeros((8, n), np.float32)), config=config, gpu_method=method)
    want = np.stack([np.convolve(x.astype(np.float64), w[::-1, c].astype(np.float64), "valid")[:n]
                     for c in range(8)])
    np.testing.assert_allclose(r.outputs["out"], want, rtol=1e-3, atol=1e-3 * np.sqrt(taps))
    return r

run = {"matvec": matvec, "stencil": stencil, "gemm": gemm, "tiny": tiny, "steps": steps, "conv": conv}[case]
run({"matvec": 256, "stencil": 64, "gemm": 64, "tiny": 0, "steps": 1024, "conv": 16}[case])  # loads the compiled code
t = os.times()
warm = t.user + t.system
LAUNCHES[0] = 0.0
count = size if case in ("tiny", "steps") else 1
STEPS.clear()
for _ in range(count):
    r = run({"tiny": 0, "steps": steps_n}.get(case, size))
t = os.times()
p = r.prediction
out = {"maxsim": os.path.dirname(os.path.abspath(maxsim.__file__)), "warm": warm, "loop": t.user + t.system - warm, "in_launch": LAUNCHES[0], "launches": count, "instructions": r.result.warp_instructions,
       "method": p.method, "cycles": p.cycles, "timed_sm_cycles": (r.timing or {}).get("cycles")}
if case == "steps":
    check_steps()
    out.update(instructions=STEPS["instructions"], methods=STEPS["methods"])
print(json.dumps(out))
"""


def run_case(case, size, config, method="auto", steps_n=4096):
    """The child's figures, its CPU seconds and peak RSS (MB), from os.wait4."""
    # run from this folder, which holds no package: `python -c` puts its current folder first on sys.path,
    # so a child started from another tree's root would measure that tree's maxsim instead of PYTHONPATH's
    # (or the installed one)
    proc = subprocess.Popen([sys.executable, "-c", CHILD, case, str(size), config, ROOT, method, str(steps_n)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=HERE)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{case} failed:\n{err}")
    fields = json.loads(out.strip().splitlines()[-1])
    cpu = usage.ru_utime + usage.ru_stime - fields["warm"]
    return fields, cpu, usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="matvec,stencil,gemm,tiny,steps,conv")
    ap.add_argument("--matvec", type=int, default=4096, help="N of matvec_rows (N x N)")
    ap.add_argument("--stencil", type=int, default=2048, help="N of stencil5 (N x N)")
    ap.add_argument("--gemm", type=int, default=512, help="N of matmul_tiled (N x N x N)")
    ap.add_argument("--tiny", type=int, default=200, help="tiny launches timed")
    ap.add_argument("--steps", type=int, default=400, help="launches of the time-stepped 1-D stencil")
    ap.add_argument("--steps-n", type=int, default=4096, help="elements of the 1-D stencil")
    ap.add_argument("--conv-taps", type=int, default=1560, help="taps of the one-wave conv1d8 launch")
    ap.add_argument("--config", default="gm204")
    ap.add_argument("--method", default="auto", choices=("auto", "full"), help="gpu_method of every launch")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; config {args.config}; gpu_method {args.method}")
    sizes = {"matvec": args.matvec, "stencil": args.stencil, "gemm": args.gemm, "tiny": args.tiny, "steps": args.steps,
             "conv": args.conv_taps}
    measured = None
    for case in args.cases.split(","):
        f, cpu, rss = run_case(case, sizes[case], args.config, args.method, args.steps_n)
        if f["maxsim"] != measured:
            measured = f["maxsim"]
            print(f"maxsim measured: {measured}")
        n = f["instructions"]
        if case == "steps":
            loop, count = f["loop"], f["launches"]
            how = ", ".join(f"{m} {c}" for m, c in f["methods"].items())
            print(f"steps heat_step {args.steps_n:,} x {count} launches: {loop / count * 1e3:.2f} ms CPU per launch in "
                  f"the launches' loop ({cpu / count * 1e3:.2f} with the child's exit), {n / count:,.0f} "
                  f"warp-instructions a launch = {n / loop / 1e6:.2f} M/s ({how}), peak {rss:,.0f} MB")
            continue
        if case == "tiny":
            print(f"tiny  vecadd 1,024 x {f['launches']} launches: {cpu / f['launches'] * 1e3:.2f} ms CPU per launch, "
                  f"{f['loop'] / f['launches'] * 1e3:.2f} ms of it in the launches' loop (the rest: the child's exit) "
                  f"({n:,} warp-instructions, {f['method']}, {f['cycles']:,.0f} cycles), peak {rss:,.0f} MB")
            continue
        what = {"matvec": f"matvec_rows {sizes[case]}^2", "stencil": f"stencil5 {sizes[case]}^2",
                "gemm": f"matmul_tiled {sizes[case]}^3",
                "conv": f"conv1d8 one wave, {sizes[case]} taps"}[case]
        inside = f["in_launch"]
        print(f"{case:7s} {what}: {n / 1e6:.2f} M warp-instructions in {cpu:.2f} CPU s = {n / cpu / 1e6:.2f} M/s "
              f"(in maxsim.launch: {inside:.2f} s = {n / inside / 1e6:.2f} M/s), "
              f"peak {rss:,.0f} MB ({f['method']}, {f['cycles']:,.0f} cycles; timed SM {f['timed_sm_cycles']:,})")


if __name__ == "__main__":
    main()
