"""Instruction codec speed: decoding and encoding Maxwell code of 10,000+ instructions.

The code is the SGEMM kernel sgemm_128 (swirl order, maxas register map, reuse flags) as maxsim
encodes it, its groups repeated until the code holds at least ``--instructions`` instructions
(each copy's branches stay inside it), ending as maxas ends a kernel. It prints the best of
``--repeat`` runs, in wall-clock seconds (``time.perf_counter``) and per second of this process's
CPU time (``time.process_time``), of

* ``decode``: words -> DecodedLine records (maxas control text, instruction text, labels);
* ``decode_text``: the same plus the text body;
* parsing that text with the simulator's parser (for comparison: the step after decoding);
* ``encode``: the parser's records -> words.

Target (issue 22): decoding a 10,000-instruction kernel in under 0.5 s.

    python benchmarks/codec_speed.py [--instructions 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from maxsim.sass import encoding as E  # noqa: E402
from maxsim.sass import parse_text  # noqa: E402
from workloads.sgemm.generator import generate_kernel  # noqa: E402


def build(n_min: int) -> bytes:
    k = generate_kernel("sgemm_128", "swirl", "maxas", True)
    body = E.encode(k, tail=False)  # whole groups (NOPs fill the last)
    words = len(body) // 8
    per_copy = words // 4 * 3
    copies = -(-n_min // per_copy)
    code = body * copies
    n = len(code) // 32 * 3
    tail = E._pack(E._tail(n))
    return code + tail, n, copies


def best(fn, repeat):
    wall, cpu, out = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    code, n, copies = build(a.instructions)
    E.decode(code)  # first call fills the control-text cache
    print(f"code: {n} instructions ({len(code)} bytes: sgemm_128's code {copies} times)")
    w, c, lines = best(lambda: E.decode(code), a.repeat)
    assert len(lines) == n
    print(f"decode          {w:7.3f} s wall  {c:7.3f} s CPU   {n / w:>10,.0f} instructions/s")
    w, c, text = best(lambda: E.decode_text(code), a.repeat)
    print(f"decode_text     {w:7.3f} s wall  {c:7.3f} s CPU   {n / w:>10,.0f} instructions/s")
    w, c, k = best(lambda: parse_text(text), a.repeat)
    print(f"parse (parser)  {w:7.3f} s wall  {c:7.3f} s CPU   {n / w:>10,.0f} instructions/s")
    w, c, out = best(lambda: E.encode(k), a.repeat)
    assert out == code, "encode(decode(code)) differs from code"
    print(f"encode          {w:7.3f} s wall  {c:7.3f} s CPU   {n / w:>10,.0f} instructions/s")


if __name__ == "__main__":
    main()
