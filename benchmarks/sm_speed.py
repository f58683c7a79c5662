"""Simulator speed: simulated warp-instructions and cycles per second of wall time.

For each SGEMM kernel, on one full wave of resident CTAs on one SM (sgemm_128: 2 CTAs of 8 warps;
sgemm_64: as many CTAs of 2 warps as the occupancy rules allow), it prints:

* the functional run that produces the trace (timed on its own);
* the SM timing model with the compiled core (best of ``--repeat`` runs on the same trace, after
  one run that loads the compiled core) and with the pure-Python reference core on the same
  trace, and the ratio; both must give the same cycles;
* the compiled core's JIT compile time: a fresh process times its first SM run with an empty
  numba cache directory (compiles) and again with that directory filled (loads the cache);
* the whole GPU (``cfg.gpu.sms`` SMs sharing the L2/DRAM, quantum 32): one wave of each SGEMM
  timed by simulate_gpu on a traced run (``--gpu-k``, default 128, keeps its functional run short).

Times are wall-clock seconds (``time.perf_counter``), with the same rates per second of this
process's CPU time (``time.process_time``) beside them: on a machine shared with other work the
CPU-time figures are the steadier ones; compare ratios printed by one run rather than figures from
different runs.

    python benchmarks/sm_speed.py [--k 512] [--gpu-k 128] [--repeat 3] [--skip reference,jit,gpu]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import simpy

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # time the checkout this script belongs to

from maxsim.arch.config import load_config  # noqa: E402
from maxsim.functional import GlobalMemory, Texture1D  # noqa: E402
from maxsim.gpu.gpu import simulate_gpu, trace_ctas  # noqa: E402
from maxsim.sass import parse_file, parse_text  # noqa: E402
from maxsim.timing.memory_system import MemorySystem  # noqa: E402
from maxsim.timing.sm import SM, residency  # noqa: E402

KERNELS = {"sgemm_128": (128, 256), "sgemm_64": (64, 64)}  # tile, threads per CTA


def kernel_for(name, path=None):
    if path:
        return parse_file(path)
    from workloads.sgemm.generator import generate
    return parse_text(generate(name), filename=f"<{name}>")


def traced_problem(kernel, name, gx, gy, k, cfg):
    """Functional run of a gx x gy grid of the kernel (M = tile * gx, N = tile * gy) with the trace:
    (launch result, [(cta id, warp traces)], seconds)."""
    tile, threads = KERNELS[name]
    m, n = tile * gx, tile * gy
    rng = np.random.default_rng(0)
    a = rng.standard_normal((k, m)).astype(np.float32)  # column-major M x K, lda = M
    b = rng.standard_normal((k, n)).astype(np.float32)
    mem = GlobalMemory()
    c_ptr = mem.alloc(m * n * 4)
    tex = {1: Texture1D(a.reshape(-1, 4)), 0: Texture1D(b.reshape(-1, 4))}
    params = [c_ptr, m, n, k, m, n, m, np.float32(1.0), 0]
    t0 = time.perf_counter()
    res, ctas = trace_ctas(kernel, (gx, gy), threads, params, mem, tex, cfg)
    return res, ctas, time.perf_counter() - t0


def time_sm(kernel, threads, ctas, cfg, core):
    """One SM timing the CTAs ``ctas`` (all resident at once): (sm, wall seconds, CPU seconds)."""
    t0, c0 = time.perf_counter(), time.process_time()
    sm = SM(cfg, kernel, threads, MemorySystem(cfg), core=core)
    for cid, traces in ctas:
        sm.add_cta(cid, traces)
    env = simpy.Environment()
    sm.run(env)
    env.run()
    return sm, time.perf_counter() - t0, time.process_time() - c0


def rate(n, seconds):
    return f"{n / seconds:>12,.0f}"


def bench_sm(name, kernel, k, cfg, repeat, reference):
    tile, threads = KERNELS[name]
    per_sm = residency(kernel, threads, cfg)[0]
    res, ctas, fsec = traced_problem(kernel, name, per_sm, 1, k, cfg)
    sm, first, _ = time_sm(kernel, threads, ctas, cfg, "compiled")
    runs = [time_sm(kernel, threads, ctas, cfg, "compiled")[1:] for _ in range(repeat)]
    best, best_cpu = min(r[0] for r in runs), min(r[1] for r in runs)
    st = sm.stats
    wi, cyc = st.warp_instructions, st.cycles
    print(f"{name}: K={k}, {per_sm} CTAs x {threads} threads resident on one SM")
    print(f"  warp instructions        {wi:,}")
    print(f"  simulated cycles         {cyc:,}")
    print(f"  loop cycles / iteration  {sm.loop_cycles_per_iteration():.1f}")
    print(f"  functional run           {fsec:.2f} s  ({res.warp_instructions / fsec:,.0f} warp-instructions/s)")
    print(f"  compiled core            {best:.3f} s  (best of {repeat}; first run {first:.3f} s, "
          f"with loading the compiled core)")
    print(f"    warp-instructions / s {rate(wi, best)}   {rate(wi, best_cpu)} per CPU second")
    print(f"    cycles / s            {rate(cyc, best)}   {rate(cyc, best_cpu)} per CPU second")
    if reference:
        ref, rsec, rcpu = time_sm(kernel, threads, ctas, cfg, "python")
        same = (ref.stats.cycles, ref.stats.warp_instructions) == (cyc, wi)
        print(f"  reference core (Python)  {rsec:.2f} s  (same cycles and instructions: {'yes' if same else 'NO'})")
        print(f"    warp-instructions / s {rate(wi, rsec)}   {rate(wi, rcpu)} per CPU second")
        print(f"    cycles / s            {rate(cyc, rsec)}   {rate(cyc, rcpu)} per CPU second")
        print(f"  compiled / reference     {rsec / best:.1f}x  ({rcpu / best_cpu:.1f}x in CPU time)")


def bench_gpu(name, kernel, k, cfg):
    tile, threads = KERNELS[name]
    per_sm = residency(kernel, threads, cfg)[0]
    res, ctas, fsec = traced_problem(kernel, name, cfg.gpu.sms, per_sm, k, cfg)
    t0, c0 = time.perf_counter(), time.process_time()
    out = simulate_gpu(kernel, None, threads, cfg=cfg, traced=(res, ctas))
    sec, cpu = time.perf_counter() - t0, time.process_time() - c0
    wi = out.stats.warp_instructions
    print(f"{name} on the GPU: K={k}, {len(ctas)} CTAs = one wave on {cfg.gpu.sms} SMs "
          f"({out.sms_used} used), {out.cycles:,} cycles")
    print(f"  functional run           {fsec:.2f} s")
    print(f"  simulate_gpu (timing)    {sec:.2f} s for {wi:,} warp instructions")
    print(f"    warp-instructions / s {rate(wi, sec)}   {rate(wi, cpu)} per CPU second")
    print(f"    SM-cycles / s         {rate(out.cycles * out.sms_used, sec)}   "
          f"{rate(out.cycles * out.sms_used, cpu)} per CPU second")


JIT_CHILD = """
import sys, time
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
from maxsim.timing import core
from maxsim.timing.sm import SM
sys.path.insert(0, {bench!r})
import sm_speed as b
from maxsim.arch.config import load_config
cfg = load_config({config!r})
kernel = b.kernel_for("sgemm_64")
res, ctas, _ = b.traced_problem(kernel, "sgemm_64", 1, 1, 8, cfg)
t1 = time.perf_counter()
b.time_sm(kernel, 64, ctas, cfg, "compiled")
t2 = time.perf_counter()
b.time_sm(kernel, 64, ctas, cfg, "compiled")
t3 = time.perf_counter()
print((t2 - t1) - (t3 - t2))
"""


def bench_jit(config):
    """Seconds the first SM run of a fresh process spends compiling (empty numba cache) and
    loading the cached core (the same cache again): its first run minus its second."""
    code = JIT_CHILD.format(root=str(ROOT), bench=str(Path(__file__).resolve().parent), config=config)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, MAXSIM_CACHE_DIR=cache)
        out = []
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
            if r.returncode:
                raise SystemExit(f"JIT timing subprocess failed: {r.stderr.strip().splitlines()[-1]}")
            out.append(float(r.stdout.split()[-1]))
    print(f"compiled core JIT: {out[0]:.1f} s to compile (empty cache), {out[1]:.2f} s to load the cache "
          f"(first SM run of a fresh process, minus its second run)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=512, help="K of the one-SM runs (default 512)")
    ap.add_argument("--gpu-k", type=int, default=128, help="K of the whole-GPU runs (default 128)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of the compiled core (best is shown)")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: reference, jit, gpu")
    ap.add_argument("--sass64")
    ap.add_argument("--sass128")
    ap.add_argument("--config", default="gm204")
    args = ap.parse_args()
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    unknown = skip - {"reference", "jit", "gpu"}
    if unknown:
        ap.error(f"--skip: unknown part(s) {', '.join(sorted(unknown))} (choose from reference, jit, gpu)")
    cfg = load_config(args.config)
    if "jit" not in skip:
        bench_jit(args.config)
    kernels = {"sgemm_128": kernel_for("sgemm_128", args.sass128), "sgemm_64": kernel_for("sgemm_64", args.sass64)}
    for name, kernel in kernels.items():
        bench_sm(name, kernel, args.k, cfg, max(1, args.repeat), "reference" not in skip)
    if "gpu" not in skip:
        for name, kernel in kernels.items():
            bench_gpu(name, kernel, args.gpu_k, cfg)


if __name__ == "__main__":
    main()
