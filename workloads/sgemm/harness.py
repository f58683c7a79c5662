"""Host harness of the SGEMM kernels: ``C = alpha * A * B^T``, column-major ("NT").

``A`` is M x K (element ``A[m + k*lda]``), ``B`` is N x K (``B[n + k*ldb]``), ``C`` is M x N
(``C[m + n*ldc]``). The harness draws A and B, builds the two float4 textures and the nine kernel
parameters the way maxas's ``sgemm/sgemm.cpp`` does (C pointer, m, n, k, lda, ldb, ldc, alpha, debug
pointer; texture 1 = A, texture 0 = B, each the whole matrix read as float4 texels), launches the
grid (ceil(M/64) x ceil(N/64) CTAs of 64 threads for ``sgemm_64``, ceil(M/128) x ceil(N/128) of 256
for ``sgemm_128``), and checks the result against numpy.

Accuracy check
==============

Each element of C is a chain of K fused multiply-adds in fp32 (one rounding each, the products are
exact), then one multiply by alpha. By the standard error analysis of a recursive dot product
(Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., section 3.1), with the unit
roundoff u = 2^-24 of fp32 and gamma_n = n*u / (1 - n*u)::

    |C_computed - alpha * sum_k a_mk * b_nk|  <=  gamma_(K+1) * |alpha| * sum_k |a_mk| * |b_nk|

whatever the order of the K additions (K roundings of the chain plus one for alpha). The inputs
are exactly representable (they are fp32), and the reference is computed in fp64 (its own error,
about K * 2^-53 relative, is four orders of magnitude smaller). ``verified`` requires every element
of C to be finite and within that bound, every element outside the M x N matrix (the ``ldc - M``
padding rows) to be untouched, and nothing but the M x N elements to be written.
"""

from __future__ import annotations

import attrs
import numpy as np

from maxsim.errors import LaunchError
from maxsim.functional import GlobalMemory, Texture1D, launch
from maxsim.functional.memory import texture_index
from maxsim.asm import load_kernel
from maxsim.timing.occupancy import with_registers

from .generator import KERNELS, PARAM_BASE, PARAMS, TEX_A, TEX_B, generate_kernel

U32_ROUNDOFF = 2.0 ** -24


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


def _check_sizes(m, n, k, lda, ldb, ldc):
    for name, v in (("M", m), ("N", n)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise LaunchError(f"{name} must be a positive integer, got {v!r}")
    if not isinstance(k, (int, np.integer)) or k < 8 or k % 8:
        raise LaunchError(f"K must be a positive multiple of 8 (the kernels consume 8 values of k per "
                          f"loop iteration), got {k!r}")
    for name, ld, rows in (("lda", lda, m), ("ldb", ldb, n)):
        if ld < rows or ld % 4:
            raise LaunchError(f"{name} must be a multiple of 4 (columns are read as float4 texels) and "
                              f"at least {rows}, got {ld}")
    if ldc < m:
        raise LaunchError(f"ldc must be at least M = {m}, got {ldc}")
    for name, words in (("A", lda * k), ("B", ldb * k), ("C", ldc * n)):
        if words * 4 >= 1 << 31:
            raise LaunchError(f"matrix {name} does not fit the kernels' 32-bit addressing")


def _round4(x):
    return (x + 3) // 4 * 4


TEXTURE_BASE = 1 << 36  # cache address of A; B follows it (as two consecutive device allocations)


def texture_addresses(lda, k):
    """Cache addresses of the A and B textures: A at ``TEXTURE_BASE``, B after A's ``lda x k``
    floats on a 256-byte boundary. The harness and the whole-GPU prediction
    (:mod:`workloads.sgemm.predict`) place them alike, so a trace of the harness's launch is a
    trace of the predicted problem."""
    return TEXTURE_BASE, TEXTURE_BASE + -(-lda * k * 4 // 256) * 256


@attrs.define
class _Problem:
    """Inputs of one launch: matrices, device memory, textures, parameters, grid."""

    a: np.ndarray
    b: np.ndarray
    memory: object
    textures: dict
    params: list
    grid: tuple
    block: int
    c_ptr: int
    ldc: int
    sentinel: np.float32


def _prepare(geo, m, n, k, lda, ldb, ldc, alpha, seed) -> _Problem:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32)
    # column-major buffers; padding rows are NaN: they must never reach a stored element
    abuf = np.full((lda, k), np.nan, np.float32)
    abuf[:m] = a
    bbuf = np.full((ldb, k), np.nan, np.float32)
    bbuf[:n] = b
    sentinel = np.float32(-7.25e30)
    mem = GlobalMemory()
    c_ptr = mem.alloc(ldc * n * 4)
    mem.write(c_ptr, np.full(ldc * n, sentinel, np.float32))
    a_addr, b_addr = texture_addresses(lda, k)
    textures = {texture_index(TEX_A): Texture1D(abuf.ravel(order="F").reshape(-1, 4), address=a_addr),
                texture_index(TEX_B): Texture1D(bbuf.ravel(order="F").reshape(-1, 4), address=b_addr)}
    grid = (-(-m // geo.tile), -(-n // geo.tile))
    params = [c_ptr, m, n, k, lda, ldb, ldc, np.float32(alpha), 0]
    return _Problem(a, b, mem, textures, params, grid, geo.threads, c_ptr, ldc, sentinel)


def _prepare_tiles(geo, m, n, k, lda, ldb, ldc, alpha, seed, ctas) -> _Problem:
    """Inputs for a launch of the CTAs ``ctas`` only (a problem too large to run whole). The rows
    of A and B those CTAs read are drawn, one tile row at a time (seeded by its position, so that
    a tile's data does not depend on which others are drawn); the other rows are zero and their
    memory is never touched (the buffers are allocated lazily), so a large problem costs the
    memory of its sampled tiles. ``a`` and ``b`` are views of the buffers (M x K and N x K)."""
    t = geo.tile
    abuf = np.zeros((lda, k), np.float32, order="F")
    bbuf = np.zeros((ldb, k), np.float32, order="F")
    for which, buf, rows, blocks in ((0, abuf, m, {x for x, _ in ctas}), (1, bbuf, n, {y for _, y in ctas})):
        for blk in sorted(blocks):
            r0, r1 = blk * t, min(rows, (blk + 1) * t)
            buf[r0:r1] = np.random.default_rng([seed, which, blk]).standard_normal((r1 - r0, k)).astype(np.float32)
        buf[rows:] = np.nan  # padding rows must never reach a stored element
    mem = GlobalMemory()
    c_ptr = mem.alloc(ldc * n * 4)
    a_addr, b_addr = texture_addresses(lda, k)
    textures = {texture_index(TEX_A): Texture1D(abuf.ravel(order="F").reshape(-1, 4), address=a_addr),
                texture_index(TEX_B): Texture1D(bbuf.ravel(order="F").reshape(-1, 4), address=b_addr)}
    grid = (-(-m // t), -(-n // t))
    params = [c_ptr, m, n, k, lda, ldb, ldc, np.float32(alpha), 0]
    return _Problem(abuf[:m], bbuf[:n], mem, textures, params, grid, geo.threads, c_ptr, ldc, None)


def _errors(c, a, b, alpha, k):
    """|C - alpha A B^T| against its bound (see the module doc): (error, bound, error / bound),
    float64 arrays shaped like c."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = float(alpha) * (a64 @ b64.T)
    gamma = (k + 1) * U32_ROUNDOFF / (1 - (k + 1) * U32_ROUNDOFF)
    bound = gamma * abs(float(alpha)) * (np.abs(a64) @ np.abs(b64).T)
    err = np.abs(c.astype(np.float64) - ref)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(bound > 0, err / np.where(bound > 0, bound, 1), np.where(err > 0, np.inf, 0))
    return ref, err, bound, ratio


def _kernel(kernel_name, traversal, regmap, reuse, sass_path, regs=None):
    if sass_path is not None:
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


def _sizes(kernel_name, m, n, k, lda, ldb, ldc):
    geo = KERNELS.get(kernel_name)
    if geo is None:
        raise LaunchError(f"unknown SGEMM kernel {kernel_name!r}: expected one of {', '.join(KERNELS)}")
    lda = _round4(m) if lda is None else int(lda)
    ldb = _round4(n) if ldb is None else int(ldb)
    ldc = m if ldc is None else int(ldc)
    _check_sizes(m, n, k, lda, ldb, ldc)
    return geo, lda, ldb, ldc


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
    recorder = None
    if trace_cfg is not None:
        from maxsim.functional.trace import TraceRecorder
        from maxsim.timing.summaries import make_summariser
        recorder = TraceRecorder(make_summariser(trace_cfg))
    res = launch(kernel, grid=p.grid, block=p.block, params=p.params, memory=p.memory, textures=p.textures,
                 max_instructions=limit, progress=progress, recorder=recorder, ctas=ctas,
                 expected_instructions=None if progress is None else warps * _warp_instructions(kernel, k))
    if ctas is not None:
        return _check_tiles(kernel_name, p, geo.tile, m, n, k, alpha, ctas, res)
    out = p.memory.read(p.c_ptr, ldc * n, dtype=np.float32).reshape((ldc, n), order="F")
    c = out[:m].copy()

    ref, err, bound, ratio = _errors(c, p.a, p.b, alpha, k)
    finite = bool(np.isfinite(c).all())
    untouched = bool((out[m:] == p.sentinel).all())
    verified = finite and untouched and bool((err <= bound).all())
    return SgemmResult(kernel_name, m, n, k, verified, float(err.max()) if finite else float("inf"),
                       float(ratio.max()) if finite else float("inf"), float(bound.max()),
                       res.warp_instructions, c, ref, res, p.grid, p.block, untouched)


def _check_tiles(kernel_name, p, tile, m, n, k, alpha, ctas, res) -> SgemmResult:
    """Check the C tiles of ``ctas`` against numpy on their rows of A and columns of B."""
    worst_err, worst_ratio, worst_bound, ok = 0.0, 0.0, 0.0, True
    tiles = sorted(set(ctas))
    for x, y in tiles:
        r0, r1, c0, c1 = x * tile, min(m, (x + 1) * tile), y * tile, min(n, (y + 1) * tile)
        if r0 >= r1 or c0 >= c1:
            continue
        span = (c1 - 1 - c0) * p.ldc + (r1 - r0)
        flat = p.memory.read(p.c_ptr + 4 * (c0 * p.ldc + r0), span, dtype=np.float32)
        c = np.lib.stride_tricks.as_strided(flat, (r1 - r0, c1 - c0), (4, 4 * p.ldc)).copy()
        _, err, bound, ratio = _errors(c, p.a[r0:r1], p.b[c0:c1], alpha, k)
        finite = bool(np.isfinite(c).all())
        ok = ok and finite and bool((err <= bound).all())
        worst_err = max(worst_err, float(err.max()) if finite else float("inf"))
        worst_ratio = max(worst_ratio, float(ratio.max()) if finite else float("inf"))
        worst_bound = max(worst_bound, float(bound.max()))
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
                 progress=None, timeline=None, occupancy=None, check="auto") -> dict:
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
    ``"auto"``: "all" up to ``WHOLE_CHECK_WORK`` warp instructions, else "sampled"."""
    from maxsim.arch.config import load_config
    from maxsim.report.fields import functional_fields, occupancy_fields, timing_fields
    cfg = cfg if cfg is not None else load_config()
    m, n, k = (256 if x is None else x for x in (m, n, k))
    if check not in CHECKS:
        raise LaunchError(f"unknown check {check!r}: expected one of {', '.join(CHECKS)}")
    geo = _sizes(name, m, n, k, None, None, None)[0]
    regs = None
    if occupancy:
        from maxsim.timing.occupancy import registers_for
        regs = registers_for(_kernel(name, traversal, regmap, reuse, sass_path), geo.threads, cfg, **occupancy)
    work = functional_work(name, m, n, k)[0]
    whole = check == "all" or (check == "auto" and work <= WHOLE_CHECK_WORK)
    grid = (-(-m // geo.tile), -(-n // geo.tile))
    every = [(x, y) for y in range(grid[1]) for x in range(grid[0])]
    sampled = None
    if not whole:
        from maxsim.timing.sm import residency
        kernel = _kernel(name, traversal, regmap, reuse, sass_path, regs)
        count = min(len(every), sm_ctas or residency(kernel, geo.threads, cfg)[0])
        sampled = every[:count] + ([every[-1]] if every[-1] not in every[:count] else [])
    r = run_sgemm(name, m, n, k, traversal=traversal, regmap=regmap, reuse=reuse, sass_path=sass_path,
                  progress=progress, regs=regs, trace_cfg=cfg if timing else None, ctas=sampled)
    kernel = r.launch.kernel
    out = {"workload": name, "kernel": kernel.name, "config": cfg.name, "m": m, "n": n, "k": k,
           "grid": list(r.grid), "block": r.block, "verified": r.verified,
           "result_checked": ("whole C" if whole else
                              f"{r.tiles_checked} of {len(every)} C tiles (the timed SM's CTAs and the last CTA)"),
           "tiles_checked": len(every) if whole else r.tiles_checked,
           "max_abs_error": r.max_abs_error, "tolerance": r.max_bound,
           "max_error_over_tolerance": r.max_error_ratio}
    out.update(functional_fields(kernel, r.launch))
    if not whole:
        # of the whole grid: its warps x one warp's (exact for the generated kernels); the run's below
        out["warp_instructions"] = len(every) * ((geo.threads + 31) // 32) * _warp_instructions(kernel, k)
        out["warp_instructions_estimated"] = True
        out["functional_warp_instructions"] = r.launch.warp_instructions
    out.update(occupancy_fields(kernel, r.block, cfg))
    if not timing:
        return out
    from maxsim.timing.run import simulate
    from maxsim.timing.sm import residency
    # the timed SM runs the first CTAs of the launch: their traces come from the checked run
    every = list(r.launch.ctas)
    count = min(len(every), sm_ctas or residency(kernel, r.block, cfg)[0])
    res, sm = simulate(kernel, r.grid, r.block, cfg=cfg, ctas=every[:count], hazards=hazards,
                       max_cycles=max_cycles, progress=progress, log=timeline is not None, launched=r.launch)
    if timeline is not None:
        timeline(sm)
    out.update(timing_fields(sm))
    out["sm_ctas"] = count
    if sass_path is None:
        # the whole problem on the config's GPU (sampled; see maxsim/gpu/sampling.py)
        from .predict import gflops, predict_sgemm
        if not whole:
            g = predict_sgemm(name, n, cfg, m=m, k=k, kernel=kernel)
        elif len(every) == 1 and max_cycles is None:
            # one CTA: the GPU runs it on one SM with the L2 and DRAM to itself, which is the timed
            # SM's simulation (the same cycles as predict_sgemm's; tested)
            seconds = cfg.cycles_to_seconds(sm.stats.cycles) + cfg.gpu.launch_overhead_us * 1e-6
            g = {"seconds": seconds, "gflops": gflops(n, seconds, m, k),
                 "waves": 1 / (cfg.gpu.sms * residency(kernel, r.block, cfg)[0])}
        else:
            wpc = (r.block + 31) // 32
            traced = {cid: [r.launch.trace[i * wpc + w] for w in range(wpc)] for i, cid in enumerate(every)}
            g = predict_sgemm(name, n, cfg, m=m, k=k, kernel=kernel, traced=traced)
        out.update(gpu=cfg.gpu.name, gpu_sms=cfg.gpu.sms, gpu_predicted_seconds=g["seconds"],
                   gpu_predicted_gflops=g["gflops"], gpu_waves=g["waves"])
    return out
