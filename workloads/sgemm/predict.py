"""Whole-GPU predictions of the SGEMM kernels: sampled (any size) or fully simulated (small sizes),
by the launch API's :func:`maxsim.host.predict_gpu` on the problem of :mod:`workloads.sgemm.problem`.

Square problems M = N = K = n as in the maxas benchmarks; GFLOPS = (2n^3 + n^2) / time, the maxas
wiki's formula.
"""

from __future__ import annotations

from maxsim.gpu.sampling import samples_needed
from maxsim.host import Sampling, predict_gpu
from maxsim.timing.occupancy import with_registers
from maxsim.timing.sm import residency

from .generator import KERNELS, generate_kernel
from .problem import _builder, _shift, gflops  # noqa: F401  (gflops: part of this module's interface)


def predict_sgemm(name, n, cfg, *, m=None, k=None, kernel=None, full=False, progress=None, regs=None,
                  traced=None, l2_start="empty"):
    """Predicted seconds, GFLOPS and details of the SGEMM on the GPU of ``cfg``: square of size n
    unless ``m`` (rows) and ``k`` are given (K is rounded up to a multiple of 8). ``regs``: the
    kernel declares that many registers per thread (fewer resident CTAs; its code unchanged).
    ``traced``: ``{cta id: warp traces}`` of the harness's run of this very problem (same K,
    textures at :func:`~workloads.sgemm.harness.texture_addresses`): a launch of at most one wave
    is timed from it (see :func:`maxsim.gpu.sampling.predict`). ``l2_start``: ``"empty"`` or
    ``"previous"``, the L2 as the same launch left it (back-to-back launches, as maxas's benchmark
    times them)."""
    geo = KERNELS[name]
    kernel = kernel if kernel is not None else generate_kernel(name)
    if regs is not None:
        kernel = with_registers(kernel, regs)
    m = n if m is None else m
    k = -(-(n if k is None else k) // 8) * 8
    grid = (-(-m // geo.tile), -(-n // geo.tile))
    build = _builder(m, n, k)
    if full:
        warps = grid[0] * grid[1] * ((geo.threads + 31) // 32)  # the harness's bound on a correct run
        p = predict_gpu(kernel, grid, geo.threads, cfg, args=build(k), max_instructions=warps * ((k // 8) * 600 + 2000),
                        l2_start=l2_start)
        return {"kernel": name, "n": n, "seconds": p.seconds, "gflops": gflops(n, p.seconds, m, k),
                "cycles": p.cycles, "waves": p.waves, "method": "full", "memory": p.memory,
                "wave_alignment": p.details.get("wave_alignment")}
    p = predict_gpu(kernel, grid, geo.threads, cfg, sampling=Sampling(k, 8, build, _shift(m, n)), progress=progress,
                    traced=traced, l2_start=l2_start)
    return {"kernel": name, "n": n, "seconds": p.seconds, "gflops": gflops(n, p.seconds, m, k),
            "cycles": p.cycles, "waves": p.waves, "method": "sampled", "loop_cycles": p.details["loop_cycles"],
            "progress_skew_iterations": p.details["progress_skew_iterations"], "memory": p.memory,
            "phases": p.details["phases"], "sim_seconds": p.details["sim_seconds"],
            "dram_busy": p.details["dram_busy"], "dram_bound": p.details["dram_bound"]}


def sample_count(name, n, cfg, kernel=None):
    geo = KERNELS[name]
    kernel = kernel if kernel is not None else generate_kernel(name)
    grid = (-(-n // geo.tile), -(-n // geo.tile))
    return samples_needed(grid, n, cfg.gpu.sms, residency(kernel, geo.threads, cfg)[0])
