"""What the watchdog for kernels that never end costs, and how soon it stops one.

    python benchmarks/watchdog.py [--repeat 3]

1. Cost: CPU seconds of functional runs with the loop-without-effect check on and off (the check
   replaced by a no-op), runs alternating, best of --repeat: a one-warp counted loop of 100,000
   iterations of three instructions (the worst case: a backward branch every third instruction)
   and the whole-grid checked run of sgemm_64 at 256^3 (`run_sgemm`).
2. Stopping: CPU seconds until a one-warp `LOOP: BRA LOOP` stops (a loop without effect) and until
   a one-warp loop that increments a register forever stops (the default instruction limit).

CPU time (time.process_time) is used because the machine may be shared; the load average is
printed first.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from maxsim.errors import SimulationError  # noqa: E402
from maxsim.functional import launch  # noqa: E402
from maxsim.functional import watchdog  # noqa: E402
from maxsim.sass import parse_text  # noqa: E402

COUNTED = """\
--:-:-:-:1      MOV32I R1, 100000;
LOOP:
--:-:-:-:1      IADD R1, R1, -0x1;
--:-:-:-:d      ISETP.NE.AND P0, PT, R1, RZ, PT;
--:-:-:-:5  @P0 BRA LOOP;
--:-:-:-:1      EXIT;
"""
SPIN = "--:-:-:-:1      MOV R1, RZ;\nLOOP:\n--:-:-:-:1      BRA LOOP;\n--:-:-:-:1      EXIT;\n"
COUNT_UP = "--:-:-:-:1      MOV R1, RZ;\nLOOP:\n--:-:-:-:1      IADD R1, R1, 0x1;\n--:-:-:-:1      BRA LOOP;\n"


def _cpu(fn):
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def _with_check(on, fn):
    real = watchdog.Watchdog.back_edge
    if not on:
        watchdog.Watchdog.back_edge = lambda self, g, pc: None
    try:
        return _cpu(fn)
    finally:
        watchdog.Watchdog.back_edge = real


def _stop_seconds(text):
    k = parse_text(text, filename="loop.sass")
    t0 = time.process_time()
    try:
        launch(k, 1, 32)
    except SimulationError as e:
        return time.process_time() - t0, str(e)
    raise AssertionError("the kernel did not stop")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    from workloads.sgemm.harness import run_sgemm
    counted = parse_text(COUNTED, filename="counted.sass")
    work = {"one-warp counted loop, 100,000 iterations": lambda: launch(counted, 1, 32),
            "sgemm_64 256^3, whole grid checked": lambda: run_sgemm("sgemm_64", 256, 256, 256)}
    for name, fn in work.items():
        fn()  # warm-up (numba's cache, imports)
        on, off = [], []
        for _ in range(args.repeat):
            off.append(_with_check(False, fn))
            on.append(_with_check(True, fn))
        print(f"{name}: check on {min(on):.3f} s, off {min(off):.3f} s CPU (best of {args.repeat}): "
              f"cost {100 * (min(on) / min(off) - 1):+.1f}%")
    for name, text in (("BRA LOOP (without effect)", SPIN), ("IADD R1 forever (instruction limit)", COUNT_UP)):
        sec, msg = _stop_seconds(text)
        print(f"{name}: stopped after {sec:.2f} s CPU: {msg}")


if __name__ == "__main__":
    main()
