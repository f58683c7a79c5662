"""Every kernel the project has, decoded: the SGEMM variants the generator writes, the kernel
library (workloads/kernels/*.sass), the assembler's test kernels (tests/asm_kernels.py) and the
micro-benchmark kernels of ``maxsim validate`` (maxsim/validate/kernels.py).

Test files import this module by name (pytest puts tests/ on sys.path).
"""

from __future__ import annotations

import functools

import asm_kernels

from maxsim.asm import assemble_text, load_kernel
from maxsim.validate import kernels as micro
from workloads import kernels as library
from workloads.sgemm.generator import KERNELS, REGMAPS, TRAVERSALS, generate_kernel


def _micro():
    yield "dependent_chain", micro.dependent_chain(8, 6)
    yield "independent_ffma", micro.independent_ffma(16)
    yield "pair", micro.pair(2, "--:-:-:-:6 IADD R8, R9, R10")
    yield "bank_kernel", micro.bank_kernel(["--:-:-:-:1 FFMA R20, R1, R5, R9"])
    yield "bank_stream", micro.bank_stream(8, conflict=True, reuse=True)
    yield "lds_kernel", micro.lds_kernel(2)
    yield "lds_stream", micro.lds_stream(8)
    yield "lds_chase", micro.lds_chase(4)
    yield "tld_kernel", micro.tld_kernel()
    yield "tld_pair_kernel", micro.tld_pair_kernel()
    yield "tld_stream_kernel", micro.tld_stream_kernel(4)
    yield "tld_chase_kernel", micro.tld_chase_kernel(2, 4)
    yield "bar_kernel", micro.bar_kernel(4)


def _assembler_kernels():
    for name in dir(asm_kernels):
        value = getattr(asm_kernels, name)
        if name.isupper() and isinstance(value, str):
            yield f"asm_kernels.{name}", assemble_text(value, filename=name).kernel
    yield "asm_kernels.reduction", assemble_text(asm_kernels.reduction(), filename="reduction").kernel


@functools.lru_cache(maxsize=1)
def project_kernels() -> tuple:
    """(name, Kernel) pairs of every kernel the project has."""
    out = []
    for kernel in KERNELS:
        for traversal in TRAVERSALS:
            for regmap in REGMAPS:
                for reuse in (True, False):
                    out.append((f"{kernel}_{traversal}_{regmap}_{'reuse' if reuse else 'noreuse'}",
                                generate_kernel(kernel, traversal, regmap, reuse)))
    for p in sorted(library.DIRECTORY.glob("*.sass")):
        out.append((f"kernels/{p.name}", load_kernel(p)))
    out += list(_assembler_kernels())
    out += list(_micro())
    return tuple(out)
