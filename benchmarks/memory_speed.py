"""Speed of the memory system model: sectors per second through MemorySystem.read / write.

    python benchmarks/memory_speed.py [--cycles 200000] [--config gtx980_oc]

A synthetic whole-GPU load shaped like SGEMM's: every SM, each 32-cycle quantum, reads one warp's
16 sectors (a 512-byte TLD.128) of an A tile or of a B tile (in turn), the tiles shared by 4 SMs
each (so the L2 both hits and misses), and now and then stores 16 sectors of C. 16 sectors per SM
per 32 cycles = 1,000 sectors per SM per 2,000 cycles, the rate the whole-GPU simulation pushes
(256 B/clk for 16 SMs, two thirds of the L2's bandwidth). Prints, for the compiled memory system
(:mod:`maxsim.timing.memory_core`, the default) and the pure-Python reference
(``MemorySystem(cfg, core="python")``), the sectors per second of the list and the numpy-array
forms, the L2 hit rate and the DRAM utilisation reached, and whether both gave the same answers.
Rates are per second of this process's CPU time (the wall time is printed too: on a shared machine
it mostly measures the other processes).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from maxsim.arch.config import load_config
from maxsim.timing.memory_system import MemorySystem


def requests(cfg, cycles, sms=16, quantum=32):
    """(cycle, is_store, sector byte addresses) of the synthetic load, in time order."""
    out = []
    row = 4096 * 4  # bytes per matrix column (N = 4096 floats)
    a_base, b_base, c_base = 0, 64 << 20, 128 << 20
    for q in range(cycles // quantum):
        t = q * quantum
        for sm in range(sms):
            k = (q // 2 + 3 * sm) % 4096  # each SM at its own point of the K loop
            a = a_base + k * row + (sm % 4) * 512
            b = b_base + k * row + (sm // 4) * 512
            base = a if q % 2 == 0 else b
            out.append((t + sm % quantum, False, [base + 32 * i for i in range(16)]))
            if q % 64 == 63:
                c = c_base + (q // 64) * row + sm * 512
                out.append((t + sm % quantum, True, [c + 32 * i for i in range(16)]))
    return out


def run(cfg, reqs, as_array, core):
    ms = MemorySystem(cfg, core=core)
    if as_array:
        reqs = [(t, st, np.array(s, dtype=np.int64)) for t, st, s in reqs]
    n = sum(len(s) for _, _, s in reqs)
    t0, c0 = time.perf_counter(), time.process_time()
    answers = [ms.write(t, secs) if store else ms.read(t, secs) for t, store, secs in reqs]
    return n, time.perf_counter() - t0, time.process_time() - c0, ms, answers


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=200_000)
    ap.add_argument("--config", default="gtx980_oc")
    args = ap.parse_args()
    cfg = load_config(args.config)
    reqs = requests(cfg, args.cycles)
    run(cfg, reqs[:10], True, "compiled")  # loads the compiled memory system
    rates = {}
    results = []
    for core in ("compiled", "python"):
        for as_array in (False, True):
            n, wall, dt, ms, answers = run(cfg, reqs, as_array, core)
            st = ms.stats(args.cycles)
            results.append((answers, st))
            rates[core] = n / dt
            kind = "int64 arrays" if as_array else "lists of int"
            print(f"{core:8s} {kind:13s}: {n} sectors in {dt:.2f} s of CPU ({wall:.2f} s wall) = "
                  f"{n / dt / 1e6:.2f} M sectors/s ({len(reqs) / dt / 1e3:.0f} k requests/s); L2 hit rate "
                  f"{st['l2_hit_rate']:.3f}, DRAM utilisation {st['dram_utilisation']:.2f}, queue delay mean "
                  f"{st['dram_mean_queue_delay']:.1f} / p95 {st['dram_p95_queue_delay']:.1f} cycles", flush=True)
    same = all(r == results[0] for r in results)
    print(f"compiled / reference (arrays): {rates['compiled'] / rates['python']:.1f}x; same completion cycles and "
          f"counters: {'yes' if same else 'NO'}")
    per_2000 = 16 * 1000
    print(f"at the compiled rate, one whole-GPU step of 2,000 cycles ({per_2000} sectors) costs "
          f"{per_2000 / rates['compiled'] * 1e3:.1f} ms in the memory system")


if __name__ == "__main__":
    main()
