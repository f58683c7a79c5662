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
from maxsim.sass import parse_file
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
    textures = {texture_index(TEX_A): Texture1D(abuf.ravel(order="F").reshape(-1, 4)),
                texture_index(TEX_B): Texture1D(bbuf.ravel(order="F").reshape(-1, 4))}
    grid = (-(-m // geo.tile), -(-n // geo.tile))
    params = [c_ptr, m, n, k, lda, ldb, ldc, np.float32(alpha), 0]
    return _Problem(a, b, mem, textures, params, grid, geo.threads, c_ptr, ldc, sentinel)


def _kernel(kernel_name, traversal, regmap, reuse, sass_path, regs=None):
    if sass_path is not None:
        kernel = parse_file(sass_path)
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
              regmap="maxas", reuse=True, sass_path=None, seed=0, progress=None, regs=None) -> SgemmResult:
    """Run one SGEMM functionally over the whole grid and check it (see the module docstring).

    ``lda`` / ``ldb`` default to M / N rounded up to a multiple of 4 (a column must start on a float4
    texel), ``ldc`` to M. A and B are standard-normal draws from ``seed``; their padding rows are NaN.

    ``sass_path`` runs that kernel file (e.g. maxas's own ``sgemm_final_64.sass``) instead of the
    generated kernel; its parameter table must be the 9-parameter maxas layout. ``regs`` makes the
    kernel declare that many registers per thread (its code unchanged; see
    :mod:`maxsim.timing.occupancy`).

    ``progress`` (``progress(done, total, what, unit)``, see :mod:`maxsim.report.progress`) is told
    the CTAs done.
    """
    geo, lda, ldb, ldc = _sizes(kernel_name, m, n, k, lda, ldb, ldc)
    kernel = _kernel(kernel_name, traversal, regmap, reuse, sass_path, regs)
    p = _prepare(geo, m, n, k, lda, ldb, ldc, alpha, seed)
    # a generous bound on the work of a correct SGEMM: warps x (loop iterations x 600 + 2000)
    warps = p.grid[0] * p.grid[1] * ((p.block + 31) // 32)
    limit = warps * ((k // 8) * 600 + 2000)
    res = launch(kernel, grid=p.grid, block=p.block, params=p.params, memory=p.memory, textures=p.textures,
                 max_instructions=limit, progress=progress,
                 expected_instructions=None if progress is None else warps * _warp_instructions(kernel, k))
    out = p.memory.read(p.c_ptr, ldc * n, dtype=np.float32).reshape((ldc, n), order="F")
    c = out[:m].copy()

    a64, b64 = p.a.astype(np.float64), p.b.astype(np.float64)
    ref = float(alpha) * (a64 @ b64.T)
    gamma = (k + 1) * U32_ROUNDOFF / (1 - (k + 1) * U32_ROUNDOFF)
    bound = gamma * abs(float(alpha)) * (np.abs(a64) @ np.abs(b64).T)
    err = np.abs(c.astype(np.float64) - ref)
    finite = bool(np.isfinite(c).all())
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(bound > 0, err / np.where(bound > 0, bound, 1), np.where(err > 0, np.inf, 0))
    untouched = bool((out[m:] == p.sentinel).all())
    verified = finite and untouched and bool((err <= bound).all())
    return SgemmResult(kernel_name, m, n, k, verified, float(err.max()) if finite else float("inf"),
                       float(ratio.max()) if finite else float("inf"), float(bound.max()),
                       res.warp_instructions, c, ref, res, p.grid, p.block, untouched)


def _warp_instructions(kernel, k):
    """Warp instructions one warp executes for inner dimension ``k``: the kernel once, the main loop
    (up to its backward branch) k/8 times (exact for the generated kernels; an estimate for others)."""
    back = [i for i in kernel.instructions if i.opcode == "BRA" and 0 <= i.target <= i.index]
    body = back[0].index - back[0].target + 1 if back else 0
    return len(kernel.instructions) + max(k // 8 - 1, 0) * body


# The functional check of the whole grid runs at roughly 2 million warp instructions per second on
# a laptop-class core; past this many it would take many minutes, so a run is refused with advice.
MAX_FUNCTIONAL_WORK = 1_000_000_000


def _check_work(name, m, n, k):
    geo = KERNELS.get(name)
    if geo is None or k <= 0 or k % 8:
        return  # run_sgemm reports these
    warps = -(-m // geo.tile) * -(-n // geo.tile) * ((geo.threads + 31) // 32)
    work = warps * ((k // 8) * 562 + 300)
    if work > MAX_FUNCTIONAL_WORK:
        raise LaunchError(
            f"{name} at M={m} N={n} K={k} executes about {work:.2g} warp instructions to check the "
            f"whole result (an hour or more); for a prediction of a problem this large use "
            f"`maxsim compare --workload {name} --sizes {max(m, n)}` (sampled), or run smaller sizes")


def run_workload(name, cfg=None, m=None, n=None, k=None, traversal="swirl", regmap="maxas", reuse=True,
                 sass_path=None, timing=True, sm_ctas=None, hazards="warn", max_cycles=None,
                 progress=None, timeline=None, occupancy=None) -> dict:
    """What ``maxsim run sgemm_64|sgemm_128`` reports: the checked functional run of the whole grid,
    then (``timing``) the timing model of one SM running the first ``sm_ctas`` CTAs (default: one
    full wave of resident CTAs). Sizes default to 256.

    ``progress``: a callback ``progress(done, total, what, unit)`` (see :mod:`maxsim.report.progress`)
    for both runs. ``timeline``: a callable that receives the timed SM, run with its issue log on
    (e.g. :func:`maxsim.report.timeline.write_trace`). ``occupancy``: the kernel's residency as a
    user chose it, one of ``{"regs": N}``, ``{"warps_per_scheduler": W}``, ``{"ctas_per_sm": C}``
    (:func:`maxsim.timing.occupancy.registers_for`), checked before anything runs."""
    from maxsim.arch.config import load_config
    from maxsim.report.fields import functional_fields, occupancy_fields, timing_fields
    cfg = cfg if cfg is not None else load_config()
    m, n, k = (256 if x is None else x for x in (m, n, k))
    _check_work(name, m, n, k)
    regs = None
    if occupancy:
        from maxsim.timing.occupancy import registers_for
        geo = _sizes(name, m, n, k, None, None, None)[0]
        regs = registers_for(_kernel(name, traversal, regmap, reuse, sass_path), geo.threads, cfg, **occupancy)
    r = run_sgemm(name, m, n, k, traversal=traversal, regmap=regmap, reuse=reuse, sass_path=sass_path,
                  progress=progress, regs=regs)
    kernel = r.launch.kernel
    out = {"workload": name, "kernel": kernel.name, "config": cfg.name, "m": m, "n": n, "k": k,
           "grid": list(r.grid), "block": r.block, "verified": r.verified,
           "max_abs_error": r.max_abs_error, "tolerance": r.max_bound,
           "max_error_over_tolerance": r.max_error_ratio}
    out.update(functional_fields(kernel, r.launch))
    out.update(occupancy_fields(kernel, r.block, cfg))
    if not timing:
        return out
    from maxsim.timing.run import simulate
    from maxsim.timing.sm import residency
    geo, lda, ldb, ldc = _sizes(name, m, n, k, None, None, None)
    p = _prepare(geo, m, n, k, lda, ldb, ldc, 1.0, 0)
    every = [(x, y) for y in range(p.grid[1]) for x in range(p.grid[0])]
    count = min(len(every), sm_ctas or residency(kernel, p.block, cfg)[0])
    res, sm = simulate(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=cfg, ctas=every[:count],
                       hazards=hazards, max_cycles=max_cycles, progress=progress, log=timeline is not None,
                       expected_instructions=count * ((p.block + 31) // 32) * _warp_instructions(kernel, k))
    if timeline is not None:
        timeline(sm)
    out.update(timing_fields(sm))
    out["sm_ctas"] = count
    if sass_path is None:
        # the whole problem on the config's GPU (sampled; see maxsim/gpu/sampling.py)
        from .predict import predict_sgemm
        g = predict_sgemm(name, n, cfg, m=m, k=k, kernel=kernel)
        out.update(gpu=cfg.gpu.name, gpu_sms=cfg.gpu.sms, gpu_predicted_seconds=g["seconds"],
                   gpu_predicted_gflops=g["gflops"], gpu_waves=g["waves"])
    return out
