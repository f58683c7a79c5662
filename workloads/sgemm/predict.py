"""Whole-GPU predictions of the SGEMM kernels: sampled (any size) or fully simulated (small sizes).

Square problems M = N = K = n as in the maxas benchmarks; GFLOPS = (2n^3 + n^2) / time, the maxas
wiki's formula.
"""

from __future__ import annotations

import numpy as np

from maxsim.functional import GlobalMemory, Texture1D
from maxsim.functional.memory import texture_index
from maxsim.gpu import simulate_gpu
from maxsim.gpu.sampling import predict, samples_needed
from maxsim.timing.occupancy import with_registers
from maxsim.timing.sm import residency

from .generator import KERNELS, TEX_A, TEX_B, generate_kernel
from .harness import _round4, texture_addresses


def gflops(n, seconds, m=None, k=None):
    """(2 m n k + m n) / time: the maxas wiki's formula, (2n^3 + n^2) / time when square."""
    m = n if m is None else m
    k = n if k is None else k
    return (2.0 * m * n * k + m * n) / seconds / 1e9


def _builder(m, n, k_full, seed=0):
    """The same M x N problem with any K: random A and B (timing does not depend on the values).

    A and B get fixed cache addresses laid out for the real K (``k_full``), A first, B after it on a
    256-byte boundary, so that every K sample and every K position of a CTA (see ``_shift``) names
    the sectors of the same problem."""
    lda, ldb = _round4(m), _round4(n)
    a_addr, b_addr = texture_addresses(lda, k_full)

    def build(k):
        rng = np.random.default_rng(seed)
        mem = GlobalMemory()
        c_ptr = mem.alloc(m * n * 4)  # C is never read by the timing; pages stay untouched
        a = np.zeros((lda, k), np.float32)
        a[:m] = rng.standard_normal((m, k), dtype=np.float32)
        b = np.zeros((ldb, k), np.float32)
        b[:n] = rng.standard_normal((n, k), dtype=np.float32)
        tex = {texture_index(TEX_A): Texture1D(a.ravel(order="F").reshape(-1, 4), address=a_addr),
               texture_index(TEX_B): Texture1D(b.ravel(order="F").reshape(-1, 4), address=b_addr)}
        return [c_ptr, m, n, k, lda, ldb, m, np.float32(1.0), 0], mem, tex
    build.key = ("sgemm", m, n, k_full, seed)  # the problem it builds (see maxsim.gpu.sampling)
    return build


def _shift(m, n):
    """Where an SGEMM CTA's data lies further along K: A and B are stored K-major (row k of A^T at
    k x lda floats from its start), so ``dk`` more of K moves every texel address by dk x ld x 4
    bytes. ``textures`` are those ``build`` made (their cache addresses and sizes)."""
    lda, ldb = _round4(m), _round4(n)

    def shift(textures, dk):
        a, b = textures[texture_index(TEX_A)], textures[texture_index(TEX_B)]
        return [(a.address, a.address + a.size * 16, dk * lda * 4),
                (b.address, b.address + b.size * 16, dk * ldb * 4)]
    return shift


def predict_sgemm(name, n, cfg, *, m=None, k=None, kernel=None, full=False, progress=None, regs=None,
                  traced=None):
    """Predicted seconds, GFLOPS and details of the SGEMM on the GPU of ``cfg``: square of size n
    unless ``m`` (rows) and ``k`` are given (K is rounded up to a multiple of 8). ``regs``: the
    kernel declares that many registers per thread (fewer resident CTAs; its code unchanged).
    ``traced``: ``{cta id: warp traces}`` of the harness's run of this very problem (same K,
    textures at :func:`~workloads.sgemm.harness.texture_addresses`): a launch of at most one wave
    is timed from it (see :func:`maxsim.gpu.sampling.predict`)."""
    geo = KERNELS[name]
    kernel = kernel if kernel is not None else generate_kernel(name)
    if regs is not None:
        kernel = with_registers(kernel, regs)
    m = n if m is None else m
    k = -(-(n if k is None else k) // 8) * 8
    grid = (-(-m // geo.tile), -(-n // geo.tile))
    build = _builder(m, n, k)
    if full:
        params, mem, tex = build(k)
        warps = grid[0] * grid[1] * ((geo.threads + 31) // 32)  # the harness's bound on a correct run
        r = simulate_gpu(kernel, grid, geo.threads, params, mem, tex, cfg=cfg, hazards=None,
                         max_instructions=warps * ((k // 8) * 600 + 2000))
        mem = {k: float(v) for k, v in r.memory.stats().items() if isinstance(v, (int, float))
               and not k.endswith("rate")}
        mem["cycles"] = float(r.cycles)
        return {"kernel": name, "n": n, "seconds": r.seconds, "gflops": gflops(n, r.seconds, m, k),
                "cycles": r.cycles, "waves": r.waves, "method": "full", "memory": mem}
    p = predict(kernel, geo.threads, grid, k, build, cfg, k_step=8, shift=_shift(m, n), progress=progress,
                traced=traced)
    steady = [ph for ph in p.phases if ph.name == "steady state"]
    return {"kernel": name, "n": n, "seconds": p.seconds, "gflops": gflops(n, p.seconds, m, k),
            "cycles": p.cycles, "waves": p.waves, "method": "sampled",
            "loop_cycles": (steady or p.phases)[0].loop_cycles,
            "progress_skew_iterations": p.progress_skew, "memory": p.memory,
            "phases": [{"name": ph.name, "ctas": ph.ctas, "k_samples": list(ph.ks), "cycles": list(ph.cycles),
                        "loop_cycles": ph.loop_cycles, "memory": ph.memory} for ph in p.phases]}


def sample_count(name, n, cfg, kernel=None):
    geo = KERNELS[name]
    kernel = kernel if kernel is not None else generate_kernel(name)
    grid = (-(-n // geo.tile), -(-n // geo.tile))
    return samples_needed(grid, n, cfg.gpu.sms, residency(kernel, geo.threads, cfg)[0])
