"""Simulator speed: simulated warp-instructions and cycles per second of wall time, one SM.

Runs the SM timing model on one full wave of resident CTAs of each SGEMM kernel (sgemm_128: 2 CTAs
of 8 warps; sgemm_64: 8 CTAs of 2 warps; 4 warps per scheduler either way) and prints the figures.
The functional run that produces the trace is timed separately.

    python benchmarks/sm_speed.py [--k 512] [--sass64 FILE] [--sass128 FILE]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from maxsim.arch.config import load_config
from maxsim.functional import GlobalMemory, Texture1D
from maxsim.sass import parse_file, parse_text
from maxsim.timing.run import simulate


def kernel_for(name, path):
    if path:
        return parse_file(path)
    from workloads.sgemm.generator import generate
    return parse_text(generate(name), filename=f"<{name}>")


def bench(name, kernel, k, cfg):
    tile, threads, ctas = (64, 64, 8) if name == "sgemm_64" else (128, 256, 2)
    # a problem just large enough for one wave: ctas tiles along M, one along N
    m, n = tile * ctas, tile
    rng = np.random.default_rng(0)
    a = rng.standard_normal((k, m)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    mem = GlobalMemory()
    c_ptr = mem.alloc(m * n * 4)
    tex = {1: Texture1D(a.reshape(-1, 4)), 0: Texture1D(b.reshape(-1, 4))}
    params = [c_ptr, m, n, k, m, n, m, np.float32(1.0), 0]
    t0 = time.perf_counter()
    res, sm = simulate(kernel, (ctas, 1), threads, params, mem, tex, cfg=cfg)
    wall = time.perf_counter() - t0
    st = sm.stats
    print(f"{name}: K={k}, {ctas} CTAs x {threads} threads resident on one SM")
    print(f"  warp instructions        {st.warp_instructions:,}")
    print(f"  simulated cycles         {st.cycles:,}")
    print(f"  loop cycles / iteration  {sm.loop_cycles_per_iteration():.1f}")
    print(f"  functional run           {st.functional_seconds:.2f} s")
    print(f"  timing model             {st.sim_seconds:.2f} s")
    print(f"  warp-instructions / s    {st.warp_instructions / st.sim_seconds:,.0f}  (timing model)")
    print(f"  cycles / s               {st.cycles / st.sim_seconds:,.0f}  (timing model)")
    print(f"  warp-instructions / s    {st.warp_instructions / wall:,.0f}  (functional + timing)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=512)
    ap.add_argument("--sass64")
    ap.add_argument("--sass128")
    ap.add_argument("--config", default="gm204")
    args = ap.parse_args()
    cfg = load_config(args.config)
    bench("sgemm_128", kernel_for("sgemm_128", args.sass128), args.k, cfg)
    bench("sgemm_64", kernel_for("sgemm_64", args.sass64), args.k, cfg)


if __name__ == "__main__":
    main()
