"""Speed of reading and disassembling cubins.

    python benchmarks/cubin_speed.py [--repeat 5]

Writes one cubin holding every generated SGEMM variant (24 kernels, about 24,000 instructions,
with maxsim's encoder and ELF writer), then times, per second of this process's CPU time:
reading the ELF (pyelftools: sections, symbols, attributes), decoding every kernel's code into
maxas's text form (the instruction codec), and parsing that text into decoded kernels. Prints the
figures per 10,000 instructions (the target: decoding a 10,000-instruction cubin in under 0.5 s).
"""

from __future__ import annotations

import argparse
import time

import attrs

from maxsim.cubin import read_bytes, write_bytes
from maxsim.cubin.build import cubin_kernel
from maxsim.cubin.disasm import decode_kernel, kernel_text
from maxsim.sass import parse_text
from workloads.sgemm.generator import KERNELS, REGMAPS, TRAVERSALS, generate


def _cpu(fn, repeat):
    """(CPU seconds of the first run, of the best run, result): the first run is the honest one
    (the codec caches control-word texts and the like), the best shows the steady state."""
    times = []
    for _ in range(repeat):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return (times[0], min(times)), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="best of this many runs (default 5)")
    args = ap.parse_args(argv)
    kernels = []
    for name in KERNELS:
        for traversal in TRAVERSALS:
            for regmap in REGMAPS:
                for reuse in (True, False):
                    k = parse_text(generate(name, traversal=traversal, regmap=regmap, reuse=reuse))
                    kernels.append(cubin_kernel(k))
    # distinct symbol names
    kernels = [attrs.evolve(k, name=f"{k.name}_{n}") for n, k in enumerate(kernels)]
    data = write_bytes(kernels)
    n_ins = sum(len(k.code) * 3 // 32 for k in kernels)
    t_read, cubin = _cpu(lambda: read_bytes(data), args.repeat)
    t_text, _ = _cpu(lambda: [kernel_text(k) for k in cubin.kernels], args.repeat)
    t_all, _ = _cpu(lambda: [decode_kernel(k) for k in cubin.kernels], args.repeat)
    per = 10_000 / n_ins
    print(f"cubin: {len(data):,} bytes, {len(kernels)} kernels, {n_ins:,} instruction slots; CPU seconds "
          f"per 10,000 instructions, first run / best of {args.repeat}")
    for what, (first, best) in (("read the ELF (pyelftools, attributes)", t_read),
                                ("decode to maxas text (the codec)", t_text),
                                ("decode and parse into kernels", t_all)):
        print(f"  {what:40s} {first * per:.3f} / {best * per:.3f} s")
    print(f"  {'read + decode to text':40s} {(t_read[0] + t_text[0]) * per:.3f} s (target < 0.5 s)")


if __name__ == "__main__":
    main()
