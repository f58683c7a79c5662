"""The SGEMM problem: ``C = alpha * A * B^T``, column-major ("NT").

``A`` is M x K (element ``A[m + k*lda]``), ``B`` is N x K (``B[n + k*ldb]``), ``C`` is M x N
(``C[m + n*ldc]``). The harness (:mod:`workloads.sgemm.harness`) draws A and B, builds the two float4 textures and the nine kernel
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

import functools

import attrs
import numpy as np

from maxsim.functional import GlobalMemory, Texture1D
from maxsim.functional.memory import place, texture_index
from maxsim.errors import LaunchError
from maxsim.host import Buffer, Kernel, Texture, bind
from maxsim.isa import instruction as ins

from .generator import KERNELS, PARAM_BASE, PARAMS, TEX_A, TEX_B

U32_ROUNDOFF = 2.0 ** -24


def signature(code=None) -> Kernel:
    """The SGEMM kernels' parameter table with maxas's names (C, m, n, k, lda, ldb, ldc, alpha,
    debug: 4 bytes each from c[0x0][0x140]) over ``code``, a decoded kernel that declares that
    table (:func:`workloads.sgemm.harness.check_params`); None: the table alone."""
    if code is None:
        code = ins.Kernel(name="sgemm", arch="sm_52", ins_cnt=0, reg_cnt=1, shared_size=0, bar_cnt=0,
                          params=tuple(ins.Param(i, PARAM_BASE + 4 * i, 4, 0) for i in range(len(PARAMS))),
                          instructions=(), labels=())
    return Kernel.of(code, dict(enumerate(PARAMS)))


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
# maxas's sgemm.cpp gives A, B and C one cuMemAlloc each: B goes where global memory puts the
# allocation after A's (maxsim.functional.memory.place: at the next 2 MB page when it takes a page
# or more, a documented choice, else packed 256 bytes after A), as C goes in GlobalMemory


def texture_addresses(lda, k, ldb=None):
    """Cache addresses of the A and B textures: A at ``TEXTURE_BASE`` (a page boundary), B after
    A's ``lda x k`` floats where :func:`maxsim.functional.memory.place` puts an allocation of B's
    ``ldb x k`` floats (``ldb`` default: ``lda``): at the next ``DEVICE_PAGE`` boundary when they
    fill a page or more, else on a 256-byte boundary. The harness and the whole-GPU prediction
    (:mod:`workloads.sgemm.predict`) place them alike, so a trace of the harness's launch is a
    trace of the predicted problem."""
    ldb = lda if ldb is None else ldb
    return TEXTURE_BASE, place(TEXTURE_BASE + lda * k * 4, ldb * k * 4)


@attrs.define(slots=False)
class _Problem:
    """Inputs of one launch: matrices, the launch arguments (parameters by name, the buffer C, the
    textures A and B), grid. ``memory``, ``textures`` and ``params`` are the arguments bound
    (:func:`maxsim.host.bind`) for a launch outside :func:`maxsim.host.launch`."""

    a: np.ndarray
    b: np.ndarray
    arguments: dict  # params, buffers, textures of maxsim.host.launch
    grid: tuple
    block: int
    ldc: int
    sentinel: np.float32

    @functools.cached_property
    def bound(self):
        return bind(signature(), **self.arguments)

    @property
    def memory(self):
        return self.bound.memory

    @property
    def textures(self):
        return self.bound.textures

    @property
    def params(self):
        return self.bound.const_bank

    @property
    def c_ptr(self):
        return self.bound.buffers["C"][0]


def _arguments(m, n, k, lda, ldb, ldc, alpha, abuf, bbuf, c):
    """The launch arguments of the problem: C a buffer, A and B float4 textures at
    :func:`texture_addresses`, the nine parameters by name."""
    a_addr, b_addr = texture_addresses(lda, k, ldb)
    textures = {texture_index(TEX_A): Texture(abuf.ravel(order="F").reshape(-1, 4), "float4", a_addr),
                texture_index(TEX_B): Texture(bbuf.ravel(order="F").reshape(-1, 4), "float4", b_addr)}
    params = dict(C="C", m=m, n=n, k=k, lda=lda, ldb=ldb, ldc=ldc, alpha=np.float32(alpha), debug=0)
    return {"params": params, "buffers": {"C": c}, "textures": textures}


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
    c = Buffer.of(np.full(ldc * n, sentinel, np.float32))
    grid = (-(-m // geo.tile), -(-n // geo.tile))
    return _Problem(a, b, _arguments(m, n, k, lda, ldb, ldc, alpha, abuf, bbuf, c), grid, geo.threads, ldc, sentinel)


def _prepare_tiles(geo, m, n, k, lda, ldb, ldc, alpha, seed, ctas) -> _Problem:
    """Inputs for a launch of the CTAs ``ctas`` only (a problem too large to run whole). The rows
    of A and B those CTAs read are drawn, one tile row at a time (seeded by its position, so that
    a tile's data does not depend on which others are drawn); the other rows are zero and their
    memory is never touched (the buffers are allocated lazily, C is an output buffer of zeros), so
    a large problem costs the memory of its sampled tiles. ``a`` and ``b`` are views of the
    buffers (M x K and N x K)."""
    t = geo.tile
    abuf = np.zeros((lda, k), np.float32, order="F")
    bbuf = np.zeros((ldb, k), np.float32, order="F")
    for which, buf, rows, blocks in ((0, abuf, m, {x for x, _ in ctas}), (1, bbuf, n, {y for _, y in ctas})):
        for blk in sorted(blocks):
            r0, r1 = blk * t, min(rows, (blk + 1) * t)
            buf[r0:r1] = np.random.default_rng([seed, which, blk]).standard_normal((r1 - r0, k)).astype(np.float32)
        buf[rows:] = np.nan  # padding rows must never reach a stored element
    grid = (-(-m // t), -(-n // t))
    c = Buffer.zeros(ldc * n, np.float32)
    return _Problem(abuf[:m], bbuf[:n], _arguments(m, n, k, lda, ldb, ldc, alpha, abuf, bbuf, c), grid,
                    geo.threads, ldc, None)


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


def _sizes(kernel_name, m, n, k, lda, ldb, ldc):
    geo = KERNELS.get(kernel_name)
    if geo is None:
        raise LaunchError(f"unknown SGEMM kernel {kernel_name!r}: expected one of {', '.join(KERNELS)}")
    lda = _round4(m) if lda is None else int(lda)
    ldb = _round4(n) if ldb is None else int(ldb)
    ldc = m if ldc is None else int(ldc)
    _check_sizes(m, n, k, lda, ldb, ldc)
    return geo, lda, ldb, ldc


def gflops(n, seconds, m=None, k=None):
    """(2 m n k + m n) / time: the maxas wiki's formula, (2n^3 + n^2) / time when square."""
    m = n if m is None else m
    k = n if k is None else k
    return (2.0 * m * n * k + m * n) / seconds / 1e9


def _builder(m, n, k_full, seed=0):
    """The same M x N problem with any K: random A and B (timing does not depend on the values).

    A and B get fixed cache addresses laid out for the real K (``k_full``), A first, B after it
    (:func:`texture_addresses`), so that every K sample and every K position of a CTA (see ``_shift``) names
    the sectors of the same problem."""
    lda, ldb = _round4(m), _round4(n)
    a_addr, b_addr = texture_addresses(lda, k_full, ldb)

    def build(k):
        mem = GlobalMemory()
        c_ptr = mem.alloc(m * n * 4)  # C is never read by the timing; pages stay untouched
        a, b = _operands(m, n, k, lda, ldb, seed)
        tex = {texture_index(TEX_A): Texture1D(a, address=a_addr), texture_index(TEX_B): Texture1D(b, address=b_addr)}
        return [c_ptr, m, n, k, lda, ldb, m, np.float32(1.0), 0], mem, tex
    build.key = ("sgemm", m, n, k_full, seed)  # the problem it builds (see maxsim.gpu.sampling)
    return build


_OPERANDS = {}  # (m, n, k, lda, ldb, seed) -> the texels of A and B (read-only), latest last
OPERAND_BYTES = 64 << 20  # bytes of operands kept (a simulator setting: bounds the memory they hold)


def _operands(m, n, k, lda, ldb, seed):
    """The texels (float4 rows, K-major) of random A (m x k) and B (n x k) for :func:`_builder`, drawn
    once and kept for the next build of the same shape (a sampled prediction builds the same K many
    times, and every size's predictions of several residencies the same problem): read-only arrays."""
    key = (m, n, k, lda, ldb, seed)
    hit = _OPERANDS.pop(key, None)
    if hit is None:
        rng = np.random.default_rng(seed)
        a = np.zeros((lda, k), np.float32)
        a[:m] = rng.standard_normal((m, k), dtype=np.float32)
        b = np.zeros((ldb, k), np.float32)
        b[:n] = rng.standard_normal((n, k), dtype=np.float32)
        hit = tuple(x.ravel(order="F").reshape(-1, 4) for x in (a, b))
        for x in hit:
            x.flags.writeable = False
    _OPERANDS[key] = hit
    while len(_OPERANDS) > 1 and sum(x.nbytes for v in _OPERANDS.values() for x in v) > OPERAND_BYTES:
        del _OPERANDS[next(iter(_OPERANDS))]
    return hit


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
