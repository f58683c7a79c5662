"""Simulator speed, all figures in one run: functional model, SM cores, `maxsim run`, predictions, compare.

    python benchmarks/speed.py [--k 512] [--repeat 2] [--sizes 1024,2048] [--compare [SUBSET]]

1. Functional model on the one-wave benchmark of benchmarks/sm_speed.py (sgemm_128: 2 CTAs x 256
   threads, sgemm_64: 8 CTAs x 64 threads, M = N = one tile row, K = --k), traced as for the timing
   model: warp-instructions per second of a full run (values computed) and of a timing-only run
   (only what the trace needs; see maxsim/functional/slicing.py). Best of --repeat runs.
2. Functional (timing-only) + SM timing model of the same launch, warp-instructions per second.
3. The SM timing model alone on that trace: the compiled core against the pure-Python reference
   core (MAXSIM_CORE=python), in this run: the ratio, and whether both give the same cycles. Then
   the L2/DRAM memory system alone: the requests of that timed run recorded and replayed through
   the compiled memory system and the pure-Python reference, in this run: requests per CPU second,
   the ratio, and whether every completion cycle and counter agrees.
4. `maxsim run sgemm_64` (256^3) as a subprocess: wall time, CPU time and peak resident memory; then
   `maxsim run sgemm_128 --m 128 --n 128 --k 1024`: warp-instructions of the whole grid per second of
   wall time. Each command runs once to warm numba's cache and is then measured.
5. Whole-GPU predictions (`predict_sgemm`, sampled) of both kernels at --sizes: CPU seconds each.
6. With --compare: `maxsim compare --quiet` wall time, whole (``--compare all``: slow) or a subset
   (``--compare "--workload sgemm_128 --sizes 512,2048"``, any compare options).

The machine's load average is printed first: wall times of a loaded machine are not comparable
with an idle one's (CPU time is the steadier figure then). Whether Python caches bytecode
(PYTHONDONTWRITEBYTECODE) is printed too: without it every command compiles maxsim's sources
again (about 0.3-0.4 s of CPU a command); an installed copy has its bytecode. The commands of 4.
run with the bytecode cache (as a user's second run does) unless --no-bytecode is given.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUN_128_WARP_INSTRUCTIONS = 572_760  # sgemm_128 at M = N = 128, K = 1024 (one CTA)


def one_wave(name, k):
    """Kernel, grid, block and a builder of fresh inputs for the one-wave benchmark."""
    from maxsim.functional import GlobalMemory, Texture1D
    from workloads.sgemm.generator import generate_kernel
    tile, threads, ctas = (64, 64, 8) if name == "sgemm_64" else (128, 256, 2)
    m, n = tile * ctas, tile
    rng = np.random.default_rng(0)
    a = rng.standard_normal((k, m)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)

    def inputs():
        mem = GlobalMemory()
        c_ptr = mem.alloc(m * n * 4)
        tex = {1: Texture1D(a.reshape(-1, 4)), 0: Texture1D(b.reshape(-1, 4))}
        return [c_ptr, m, n, k, m, n, m, np.float32(1.0), 0], mem, tex
    return generate_kernel(name), (ctas, 1), threads, inputs


def functional(name, k, repeat, cfg):
    from maxsim.functional import launch
    from maxsim.functional.trace import TraceRecorder
    from maxsim.timing.summaries import make_summariser
    kernel, grid, block, inputs = one_wave(name, k)
    out = {}
    for mode in ("full", "timing-only"):
        best = None
        for _ in range(repeat + 1):  # the first run loads numba's cache
            params, mem, tex = inputs()
            t0, c0 = time.perf_counter(), time.process_time()
            res = launch(kernel, grid, block, params, mem, tex, recorder=TraceRecorder(make_summariser(cfg)),
                         timing_only=mode == "timing-only")
            dt = (time.perf_counter() - t0, time.process_time() - c0)
            best = dt if best is None or dt[0] < best[0] else best
        out[mode] = (res.warp_instructions, best)
    return out


def cores(name, k, repeat, cfg):
    """The SM timing model alone on one traced launch, compiled and reference core:
    (warp instructions, best compiled (wall, CPU), reference (wall, CPU), same cycles)."""
    from maxsim.gpu.gpu import trace_ctas
    from sm_speed import time_sm  # (this folder)
    kernel, grid, block, inputs = one_wave(name, k)
    params, mem, tex = inputs()
    _, ctas = trace_ctas(kernel, grid, block, params, mem, tex, cfg, timing_only=True)

    def once(core):
        sm, wall, cpu = time_sm(kernel, block, ctas, cfg, core)
        return sm.stats, (wall, cpu)
    once("compiled")  # loads the compiled core
    runs = [once("compiled") for _ in range(repeat)]
    st, best = min(runs, key=lambda r: r[1][0])
    ref, ref_t = once("python")
    same = (ref.cycles, ref.warp_instructions) == (st.cycles, st.warp_instructions)
    return st.warp_instructions, best, ref_t, same


def memory_systems(name, k, repeat, cfg):
    """The memory system alone on the requests of one timed run of the one-wave benchmark, recorded
    and replayed through each memory system: (requests, sectors, best compiled CPU s, best
    reference CPU s, same answers and counters)."""
    import simpy
    from maxsim.gpu.gpu import trace_ctas
    from maxsim.timing.memory_system import MemorySystem
    from maxsim.timing.sm import SM
    kernel, grid, block, inputs = one_wave(name, k)
    params, mem, tex = inputs()
    _, ctas = trace_ctas(kernel, grid, block, params, mem, tex, cfg, timing_only=True)
    ms = MemorySystem(cfg)
    stream = []  # (is a store, cycle, sector addresses)
    read, write = ms.read, ms.write
    ms.read = lambda now, sectors: stream.append((False, now, np.array(sectors, dtype=np.int64))) or read(now, sectors)
    ms.write = lambda now, sectors: stream.append((True, now, np.array(sectors, dtype=np.int64))) or write(now, sectors)
    sm = SM(cfg, kernel, block, ms)
    for cid, traces in ctas:
        sm.add_cta(cid, traces)
    env = simpy.Environment()
    sm.run(env)
    env.run()

    def replay(core):
        m = MemorySystem(cfg, core=core)
        c0 = time.process_time()
        out = [m.write(t, s) if store else m.read(t, s) for store, t, s in stream]
        return time.process_time() - c0, out, m.stats()
    replay("compiled")  # loads the compiled memory system
    runs = {core: [replay(core) for _ in range(repeat)] for core in ("compiled", "python")}
    best = {core: min(r[0] for r in rs) for core, rs in runs.items()}
    same = all(r[1:] == runs["python"][0][1:] for rs in runs.values() for r in rs)
    return len(stream), sum(len(s) for _, _, s in stream), best["compiled"], best["python"], same


def predictions(sizes, cfg):
    """predict_sgemm of both kernels at each size: [(name, n, CPU s, wall s, GFLOPS)]."""
    from workloads.sgemm.predict import predict_sgemm
    predict_sgemm("sgemm_64", 256, cfg)  # loads the compiled parts
    out = []
    for name in ("sgemm_64", "sgemm_128"):
        for n in sizes:
            t0, c0 = time.perf_counter(), time.process_time()
            p = predict_sgemm(name, n, cfg)
            out.append((name, n, time.process_time() - c0, time.perf_counter() - t0, p["gflops"]))
    return out


def functional_and_timing(name, k, repeat, cfg):
    from maxsim.timing.run import simulate
    kernel, grid, block, inputs = one_wave(name, k)
    best = None
    for _ in range(repeat + 1):
        params, mem, tex = inputs()
        t0, c0 = time.perf_counter(), time.process_time()
        _, sm = simulate(kernel, grid, block, params, mem, tex, cfg=cfg, timing_only=True)
        dt = time.perf_counter() - t0
        if best is None or dt < best[0]:
            best = (dt, time.process_time() - c0, sm.stats.sim_seconds)
    return sm.stats.warp_instructions, best


# a small process that runs the command and reports its resources (forked from this process,
# the command would inherit this process's resident memory into its peak)
_WRAPPER = """
import resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.perf_counter() - t
u = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write(p.stderr.decode()[-300:])
print(wall, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024, p.returncode)
"""


BYTECODE = True  # the commands keep Python's bytecode cache (--no-bytecode: compile sources every run)


def command(args):
    """Run ``python -m maxsim.cli args`` from this tree: (wall s, CPU s, peak RSS MB, exit code)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if BYTECODE:
        # a user's second run: Python keeps maxsim's compiled bytecode (the warm-up run writes it)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    p = subprocess.run([sys.executable, "-c", _WRAPPER, sys.executable, "-m", "maxsim.cli", *args], cwd=ROOT,
                       env=env, capture_output=True, text=True)
    wall, cpu, rss, rc = p.stdout.split()
    if int(rc):
        print(f"  `maxsim {' '.join(args)}` failed ({rc}): {p.stderr.strip()}")
    return float(wall), float(cpu), float(rss), int(rc)


def measured(args, repeat):
    command(args)  # warm numba's cache
    runs = [command(args) for _ in range(repeat)]
    return min(runs, key=lambda r: r[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=512, help="K of the one-wave benchmark (default 512)")
    ap.add_argument("--repeat", type=int, default=2, help="measured repetitions, best kept (default 2)")
    ap.add_argument("--sizes", default="1024,2048", help="N of the timed predictions (default 1024,2048)")
    ap.add_argument("--compare", nargs="?", const="all", default=None, metavar="OPTIONS",
                    help="also time `maxsim compare --quiet`: 'all' (the default: slow) or its options "
                         "for a subset, e.g. '--workload sgemm_128 --sizes 512,2048'")
    ap.add_argument("--config", default="gm204")
    ap.add_argument("--no-bytecode", action="store_true",
                    help="run the commands without Python's bytecode cache (as with PYTHONDONTWRITEBYTECODE: "
                         "about 0.3-0.4 s of CPU more a command, compiling maxsim's sources)")
    args = ap.parse_args()
    global BYTECODE
    BYTECODE = not args.no_bytecode
    from maxsim.arch.config import load_config
    cfg = load_config(args.config)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; best of {args.repeat} runs; "
          f"bytecode cached: {'no (PYTHONDONTWRITEBYTECODE)' if sys.dont_write_bytecode else 'yes'} in this "
          f"process, {'yes' if BYTECODE else 'no'} in the commands run")

    print(f"functional model, one-wave benchmark, K={args.k} (warp-instructions / s)")
    for name in ("sgemm_128", "sgemm_64"):
        f = functional(name, args.k, args.repeat, cfg)
        (n, (full, full_cpu)), (_, (fast, fast_cpu)) = f["full"], f["timing-only"]
        print(f"  {name}: {n:,} warp instructions   full {n / full:>10,.0f}  ({full:.2f} s; "
              f"{n / full_cpu:,.0f} per CPU s)   timing-only {n / fast:>10,.0f}  ({fast:.2f} s; "
              f"{n / fast_cpu:,.0f} per CPU s)")
    print("functional (timing-only) + SM timing model, same launches (warp-instructions / s)")
    for name in ("sgemm_128", "sgemm_64"):
        n, (wall, cpu, timing) = functional_and_timing(name, args.k, args.repeat, cfg)
        print(f"  {name}: {n / wall:>10,.0f}  ({wall:.2f} s; {n / cpu:,.0f} per CPU s; "
              f"timing model alone {n / timing:,.0f}/s)")

    print("SM timing model alone on the same traces: compiled core vs the pure-Python reference core")
    for name in ("sgemm_128", "sgemm_64"):
        n, (wall, cpu), (rwall, rcpu), same = cores(name, args.k, args.repeat, cfg)
        print(f"  {name}: compiled {n / wall:>10,.0f}/s ({n / cpu:,.0f} per CPU s)   reference "
              f"{n / rwall:>8,.0f}/s ({n / rcpu:,.0f} per CPU s)   compiled/reference {rwall / wall:.1f}x "
              f"({rcpu / cpu:.1f}x CPU)   same cycles: {'yes' if same else 'NO'}")
    print("L2/DRAM memory system alone on the requests of those runs (recorded, replayed): compiled vs the "
          "pure-Python reference")
    for name in ("sgemm_128", "sgemm_64"):
        n, secs, cpu, rcpu, same = memory_systems(name, args.k, args.repeat, cfg)
        print(f"  {name}: {n:,} requests ({secs:,} sectors)   compiled {n / cpu:>9,.0f} requests per CPU s   "
              f"reference {n / rcpu:>8,.0f}   compiled/reference {rcpu / cpu:.1f}x   "
              f"same cycles and counters: {'yes' if same else 'NO'}")
    print("maxsim run (subprocess, second run: numba cache warm)")
    wall, cpu, rss, _ = measured(["run", "sgemm_64"], args.repeat)
    print(f"  run sgemm_64 (256^3):                  wall {wall:.2f} s  CPU {cpu:.2f} s  peak RSS {rss:.0f} MB")
    wall, cpu, rss, _ = measured(["run", "sgemm_128", "--m", "128", "--n", "128", "--k", "1024"], args.repeat)
    print(f"  run sgemm_128 --m 128 --n 128 --k 1024: wall {wall:.2f} s  CPU {cpu:.2f} s  peak RSS {rss:.0f} MB"
          f"  -> {RUN_128_WARP_INSTRUCTIONS / wall:,.0f} warp-instructions/s "
          f"({RUN_128_WARP_INSTRUCTIONS / cpu:,.0f} per CPU second)")
    sizes = [int(x) for x in args.sizes.split(",") if x]
    if sizes:
        print("whole-GPU predictions (predict_sgemm, sampled; in this process)")
        for name, n, cpu, wall, gf in predictions(sizes, cfg):
            print(f"  {name} N={n}: CPU {cpu:.1f} s  wall {wall:.1f} s  ({gf:,.0f} GFLOPS)")
    if args.compare:
        extra = [] if args.compare == "all" else args.compare.split()
        wall, cpu, rss, _ = command(["compare", "--quiet", *extra])  # numba's cache is warm by now
        print(f"  compare --quiet {' '.join(extra)}: wall {wall:.1f} s  CPU {cpu:.1f} s (all processes)  "
              f"peak RSS {rss:.0f} MB (largest process)")


if __name__ == "__main__":
    main()
