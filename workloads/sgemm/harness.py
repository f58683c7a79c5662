"""Host harness of the SGEMM kernels: run, check and time one problem through the launch API.

The problem (matrices, textures, the nine parameters, the accuracy check) is
:mod:`workloads.sgemm.problem`; launching, timing the SM and predicting the whole GPU are
:func:`maxsim.host.launch`'s. This module says which kernel runs, which CTAs, and what is checked.
"""

from __future__ import annotations

import attrs
import numpy as np

from maxsim.errors import LaunchError
from maxsim.host import Sampling, launch
from maxsim.timing.occupancy import with_registers

from .generator import KERNELS, PARAM_BASE, PARAMS, generate_kernel
from .problem import (U32_ROUNDOFF, _errors, _prepare, _prepare_tiles, _Problem, _round4, _sizes,  # noqa: F401
                      gflops, signature, texture_addresses)


@attrs.define
class SgemmResult:
    kernel_name: str
    m: int
    n: int
    k: int
    verified: bool
    max_abs_error: float
    max_error_ratio: float  # max over C of |error| / bound (<= 1 when verified)
    max_bound: float  # largest elementwise error bound
    warp_instructions: int
    C: np.ndarray  # M x N result (float32)
    reference: np.ndarray  # M x N, float64
    launch: object  # maxsim.functional.LaunchResult
    grid: tuple
    block: int
    untouched: bool  # padding rows of C (m >= M) kept their sentinel
    tiles_checked: int = None  # C tiles checked when only some CTAs ran (None: the whole grid)


def check_params(kernel, path="<kernel>"):
    """Raise LaunchError unless ``kernel`` declares the 9-parameter maxas SGEMM table."""
    want = [(n, PARAM_BASE + 4 * n, 4) for n in range(len(PARAMS))]
    got = [(p.ordinal, p.offset, p.size) for p in kernel.params]
    if got != want:
        listed = ", ".join(f"{o}:0x{a:x}:{s}" for o, a, s in got) or "none"
        raise LaunchError(
            f"{path}: kernel {kernel.name} does not take the SGEMM parameters: expected {len(PARAMS)} "
            f"4-byte parameters at c[0x0][0x140..0x160] ({', '.join(PARAMS)}), the file lists {listed}")


def _kernel(kernel_name, traversal, regmap, reuse, sass_path, regs=None):
    if sass_path is not None:
        from maxsim.asm import load_kernel
        kernel = load_kernel(sass_path)
        check_params(kernel, str(sass_path))
        geo = KERNELS[kernel_name]
        # double-buffered A and B slices: 2 x 2 x 8 k-values x tile floats
        need = 2 * 2 * 8 * geo.tile * 4
        if kernel.shared_size != need:
            raise LaunchError(
                f"{sass_path}: kernel {kernel.name} declares SharedSize {kernel.shared_size}, but the "
                f"{kernel_name} harness ({geo.threads} threads, {geo.tile}x{geo.tile} tile) needs {need}: "
                f"is it the other SGEMM kernel?")
        return kernel if regs is None else with_registers(kernel, regs)
    return generate_kernel(kernel_name, traversal, regmap, reuse, regs)

def run_sgemm(kernel_name, m, n, k, lda=None, ldb=None, ldc=None, alpha=1.0, traversal="swirl",
              regmap="maxas", reuse=True, sass_path=None, seed=0, progress=None, regs=None,
              trace_cfg=None, ctas=None) -> SgemmResult:
    """Run one SGEMM functionally over the whole grid and check it (see the module docstring).

    ``lda`` / ``ldb`` default to M / N rounded up to a multiple of 4 (a column must start on a float4
    texel), ``ldc`` to M. A and B are standard-normal draws from ``seed``; their padding rows are NaN.

    ``sass_path`` runs that kernel file (e.g. maxas's own ``sgemm_final_64.sass``) instead of the
    generated kernel; its parameter table must be the 9-parameter maxas layout. ``regs`` makes the
    kernel declare that many registers per thread (its code unchanged; see
    :mod:`maxsim.timing.occupancy`).

    ``progress`` (``progress(done, total, what, unit)``, see :mod:`maxsim.report.progress`) is told
    the CTAs done.

    ``trace_cfg``: record the trace the timing model of that configuration reads
    (``result.launch.trace``), so that the timing runs reuse this launch.

    ``ctas``: run only these CTAs (x, y) and check the C tiles they compute (CTA (x, y) computes
    rows x*tile.. and columns y*tile.. of C) against numpy on the matching rows of A and B; the
    inputs are drawn for those tiles only (:func:`_prepare_tiles`), so any size fits in memory.
    ``C`` and ``reference`` are then None; ``tiles_checked`` says how many tiles were checked.
    """
    return _run(kernel_name, m, n, k, lda, ldb, ldc, alpha, traversal, regmap, reuse, sass_path, seed, progress,
                regs, ctas, cfg=trace_cfg, trace=trace_cfg is not None)[0]


def _run(kernel_name, m, n, k, lda, ldb, ldc, alpha, traversal, regmap, reuse, sass_path, seed, progress, regs,
         ctas, cfg=None, trace=False, timing=False, predict=False, full_gpu=False, l2_start="empty", **timed):
    """Launch one SGEMM (:func:`maxsim.host.launch`) and check it: ``(SgemmResult, LaunchReport)``.
    ``timing`` / ``predict``: the timed SM and the whole-GPU prediction (sampled along K) of the
    launch; ``timed``: the launch's options for them (sm_ctas, hazards, max_cycles, timeline)."""
    geo, lda, ldb, ldc = _sizes(kernel_name, m, n, k, lda, ldb, ldc)
    kernel = _kernel(kernel_name, traversal, regmap, reuse, sass_path, regs)
    if ctas is not None:
        ctas = [tuple(c) for c in ctas]
        p = _prepare_tiles(geo, m, n, k, lda, ldb, ldc, alpha, seed, ctas)
    else:
        p = _prepare(geo, m, n, k, lda, ldb, ldc, alpha, seed)
    # a generous bound on the work of a correct SGEMM: warps x (loop iterations x 600 + 2000)
    warps = (p.grid[0] * p.grid[1] if ctas is None else len(ctas)) * ((p.block + 31) // 32)
    limit = warps * ((k // 8) * 600 + 2000)
    from .problem import _builder, _shift
    sampling = Sampling(k, 8, _builder(m, n, k), _shift(m, n)) if predict and not full_gpu else None
    report = launch(signature(kernel), p.grid, p.block, **p.arguments, config=cfg, trace=trace, timing=timing,
                    predict=predict, sampling=sampling, ctas=ctas, max_instructions=limit, progress=progress,
                    expected_instructions=None if progress is None else warps * _warp_instructions(kernel, k),
                    l2_start=l2_start, gpu_method="full" if full_gpu else "auto", **timed)
    res = report.result
    if ctas is not None:
        return _check_tiles(kernel_name, p, geo.tile, m, n, k, alpha, ctas, report), report
    out = report.read("C").reshape((ldc, n), order="F")
    c = out[:m].copy()

    ref, err, bound, ratio = _errors(c, p.a, p.b, alpha, k)
    finite = bool(np.isfinite(c).all())
    untouched = bool((out[m:] == p.sentinel).all())
    verified = finite and untouched and bool((err <= bound).all())
    return SgemmResult(kernel_name, m, n, k, verified, float(err.max()) if finite else float("inf"),
                       float(ratio.max()) if finite else float("inf"), float(bound.max()),
                       res.warp_instructions, c, ref, res, p.grid, p.block, untouched), report


def _check_tiles(kernel_name, p, tile, m, n, k, alpha, ctas, report) -> SgemmResult:
    """Check the C tiles of ``ctas`` against numpy on their rows of A and columns of B."""
    worst_err, worst_ratio, worst_bound, ok = 0.0, 0.0, 0.0, True
    tiles = sorted(set(ctas))
    for x, y in tiles:
        r0, r1, c0, c1 = x * tile, min(m, (x + 1) * tile), y * tile, min(n, (y + 1) * tile)
        if r0 >= r1 or c0 >= c1:
            continue
        span = (c1 - 1 - c0) * p.ldc + (r1 - r0)
        flat = report.read("C", c0 * p.ldc + r0, span)
        c = np.lib.stride_tricks.as_strided(flat, (r1 - r0, c1 - c0), (4, 4 * p.ldc)).copy()
        _, err, bound, ratio = _errors(c, p.a[r0:r1], p.b[c0:c1], alpha, k)
        finite = bool(np.isfinite(c).all())
        ok = ok and finite and bool((err <= bound).all())
        worst_err = max(worst_err, float(err.max()) if finite else float("inf"))
        worst_ratio = max(worst_ratio, float(ratio.max()) if finite else float("inf"))
        worst_bound = max(worst_bound, float(bound.max()))
    res = report.result
    return SgemmResult(kernel_name, m, n, k, ok, worst_err, worst_ratio, worst_bound, res.warp_instructions,
                       None, None, res, p.grid, p.block, True, len(tiles))


def _warp_instructions(kernel, k):
    """Warp instructions one warp executes for inner dimension ``k``: the kernel once, the main loop
    (up to its backward branch) k/8 times (exact for the generated kernels; an estimate for others)."""
    back = [i for i in kernel.instructions if i.opcode == "BRA" and 0 <= i.target <= i.index]
    body = back[0].index - back[0].target + 1 if back else 0
    return len(kernel.instructions) + max(k // 8 - 1, 0) * body


# choice: a run checks the whole grid functionally up to this many warp instructions (a few
# seconds of functional run); a larger problem runs and checks only the sampled CTAs' tiles
# (``check="all"`` still checks everything)
WHOLE_CHECK_WORK = 8_000_000
# choice: warp instructions per second assumed for the time estimate of a whole-grid check (the
# functional model with its trace, measured by benchmarks/speed.py on a 2-core laptop-class machine)
FUNCTIONAL_RATE = 1_000_000
CHECKS = ("auto", "all", "sampled")
GPU_METHODS = ("sampled", "full")  # how run_workload predicts the whole GPU


def functional_work(name, m, n, k):
    """Estimated warp instructions of the whole grid and seconds of a whole-grid functional check
    (None when the sizes are invalid: run_sgemm reports them)."""
    geo = KERNELS.get(name)
    if geo is None or not all(isinstance(v, (int, np.integer)) and v > 0 for v in (m, n, k)) or k % 8:
        return None
    warps = -(-m // geo.tile) * -(-n // geo.tile) * ((geo.threads + 31) // 32)
    work = warps * ((k // 8) * 562 + 300)
    return work, work / FUNCTIONAL_RATE


def run_workload(name, cfg=None, m=None, n=None, k=None, traversal="swirl", regmap="maxas", reuse=True,
                 sass_path=None, timing=True, sm_ctas=None, hazards="warn", max_cycles=None,
                 progress=None, timeline=None, occupancy=None, check="auto", gpu_method="sampled",
                 l2_start="empty") -> dict:
    """What ``maxsim run sgemm_64|sgemm_128`` reports: the checked functional run of the whole grid,
    then (``timing``) the timing model of one SM running the first ``sm_ctas`` CTAs (default: one
    full wave of resident CTAs). Sizes default to 256.

    ``progress``: a callback ``progress(done, total, what, unit)`` (see :mod:`maxsim.report.progress`)
    for both runs. ``timeline``: a callable that receives the timed SM, run with its issue log on
    (e.g. :func:`maxsim.report.timeline.write_trace`). ``occupancy``: the kernel's residency as a
    user chose it, one of ``{"regs": N}``, ``{"warps_per_scheduler": W}``, ``{"ctas_per_sm": C}``
    (:func:`maxsim.timing.occupancy.registers_for`), checked before anything runs.

    ``check``: ``"all"`` runs the whole grid functionally and checks all of C; ``"sampled"`` runs
    only the timed SM's CTAs and the grid's last CTA (at the full K) and checks their C tiles; the
    whole-GPU prediction is then sampled (:mod:`maxsim.gpu.sampling`) with runs of its own.
    ``"auto"``: "all" up to ``WHOLE_CHECK_WORK`` warp instructions, else "sampled".

    ``gpu_method``: ``"sampled"`` (:mod:`maxsim.gpu.sampling`) or ``"full"``: every CTA on every
    SM at the real K, timed as the functional run of the whole grid goes (the check is then of the
    whole of C, whatever its cost: ``check`` "sampled" is refused). ``l2_start``: the L2 at the
    start of the predicted launch, ``"empty"`` or ``"previous"`` (as the same launch left it, as in
    maxas's benchmark, which times back-to-back launches)."""
    from maxsim.arch.config import load_config
    cfg = cfg if cfg is not None else load_config()
    m, n, k = (256 if x is None else x for x in (m, n, k))
    if check not in CHECKS:
        raise LaunchError(f"unknown check {check!r}: expected one of {', '.join(CHECKS)}")
    geo = _sizes(name, m, n, k, None, None, None)[0]
    regs = None
    if occupancy:
        from maxsim.timing.occupancy import registers_for
        regs = registers_for(_kernel(name, traversal, regmap, reuse, sass_path), geo.threads, cfg, **occupancy)
    if gpu_method not in GPU_METHODS:
        raise LaunchError(f"unknown GPU method {gpu_method!r}: expected one of {', '.join(GPU_METHODS)}")
    if gpu_method == "full" and check == "sampled":
        raise LaunchError("the full whole-GPU simulation runs the whole grid: it needs check 'all' or 'auto', "
                          "not 'sampled'")
    work = functional_work(name, m, n, k)[0]
    whole = check == "all" or (check == "auto" and (work <= WHOLE_CHECK_WORK or gpu_method == "full"))
    grid = (-(-m // geo.tile), -(-n // geo.tile))
    every = [(x, y) for y in range(grid[1]) for x in range(grid[0])]
    sampled = None
    if not whole:
        from maxsim.timing.sm import residency
        kernel = _kernel(name, traversal, regmap, reuse, sass_path, regs)
        count = min(len(every), sm_ctas or residency(kernel, geo.threads, cfg)[0])
        sampled = every[:count] + ([every[-1]] if every[-1] not in every[:count] else [])
    predict = timing and sass_path is None  # the whole problem on the config's GPU
    r, report = _run(name, m, n, k, None, None, None, 1.0, traversal, regmap, reuse, sass_path, 0, progress, regs,
                     sampled, cfg=cfg, timing=timing, predict=predict, sm_ctas=sm_ctas, hazards=hazards,
                     max_cycles=max_cycles, timeline=timeline, full_gpu=gpu_method == "full", l2_start=l2_start)
    kernel = r.launch.kernel
    out = {"workload": name, "kernel": kernel.name, "config": cfg.name, "m": m, "n": n, "k": k,
           "grid": list(r.grid), "block": r.block, "verified": r.verified,
           "result_checked": ("whole C" if whole else
                              f"{r.tiles_checked} of {len(every)} C tiles (the timed SM's CTAs and the last CTA)"),
           "tiles_checked": len(every) if whole else r.tiles_checked,
           "max_abs_error": r.max_abs_error, "tolerance": r.max_bound,
           "max_error_over_tolerance": r.max_error_ratio}
    out.update(report.functional)
    if not whole:
        # of the whole grid: its warps x one warp's (exact for the generated kernels); the run's below
        out["warp_instructions"] = len(every) * ((geo.threads + 31) // 32) * _warp_instructions(kernel, k)
        out["warp_instructions_estimated"] = True
        out["functional_warp_instructions"] = r.launch.warp_instructions
    out.update(report.occupancy)
    if not timing:
        return out
    out.update(report.timing)
    out["sm_ctas"] = report.sm_ctas
    if predict:
        from maxsim.host.launch import how_predicted
        g = report.prediction
        from maxsim.report.fields import launch_fields
        out.update(launch_fields(g, gflops=gflops(n, g.seconds, m, k)))
        out.update(how_predicted(g, report.cfg))
        if g.details.get("wave_alignment"):
            out["gpu_wave_alignment"] = g.details["wave_alignment"]
        if "dram_bound" in g.details:
            out.update(gpu_dram_busy=g.details["dram_busy"], gpu_dram_bound=g.details["dram_bound"])
    out.update(report.profiler_fields())
    return out
