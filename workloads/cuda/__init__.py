"""CUDA C kernels of our own, compiled for sm_52 by NVRTC, each with its launch for a problem size
and a numpy reference.

``CASES[name]`` is a :class:`Case`: the file, the kernel, the three sizes the tests run, and
``setup(size, rng) -> (grid, block, params, buffers, reference)`` where ``reference`` is
{buffer name: (expected array, rtol, atol)}; a kernel that reads textures returns a sixth item,
{texture number: array}.
"""

from __future__ import annotations

import os

import attrs
import numpy as np

from maxsim.host.args import Texture

HERE = os.path.dirname(os.path.abspath(__file__))


@attrs.frozen
class Case:
    file: str
    kernel: str
    sizes: tuple
    setup: object
    options: tuple = ()  # NVRTC options the case is compiled with (default: none, NVRTC's defaults)

    @property
    def path(self) -> str:
        return os.path.join(HERE, self.file)


def _blocks(n, b):
    return (n + b - 1) // b


def _vecadd(n, rng):
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    return (_blocks(n, 128), 128, {"a": "a", "b": "b", "c": "c", "n": n},
            {"a": a, "b": b, "c": np.zeros(n, np.float32)}, {"c": (a + b, 0, 0)})


def _saxpy(n, rng):
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    a = np.float32(1.5)
    return (2, 64, {"a": 1.5, "x": "x", "y": "y", "n": n}, {"x": x, "y": y.copy()},
            {"y": (a * x + y, 1e-6, 1e-6)})


def _matmul(size, rng, tiled=False):
    m, n, k = size
    A, B = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    grid = (_blocks(n, 16), _blocks(m, 16))
    return (grid, (16, 16), {"A": "A", "B": "B", "C": "C", "m": m, "n": n, "k": k},
            {"A": A, "B": B, "C": np.zeros((m, n), np.float32)}, {"C": (A @ B, 1e-4, 1e-4)})


def _block_sum(n, rng):
    x = rng.standard_normal(n, dtype=np.float32)
    nb = _blocks(n, 256)
    ref = np.array([x[i * 256:(i + 1) * 256].sum(dtype=np.float64) for i in range(nb)], np.float32)
    return (nb, 256, {"x": "x", "sums": "sums", "n": n}, {"x": x, "sums": np.zeros(nb, np.float32)},
            {"sums": (ref, 1e-5, 1e-4)})


def _histogram(n, rng):
    data = rng.integers(0, 256, n, dtype=np.uint8)
    ref = np.bincount(data % 64, minlength=64).astype(np.uint32)
    return (3, 128, {"data": "data", "bins": "bins", "n": n}, {"data": data, "bins": np.zeros(64, np.uint32)},
            {"bins": (ref, 0, 0)})


def _transpose(size, rng):
    rows, cols = size
    a = rng.standard_normal((rows, cols), dtype=np.float32)
    return ((_blocks(cols, 32), _blocks(rows, 32)), (32, 8), {"in": "a", "out": "t", "rows": rows, "cols": cols},
            {"a": a, "t": np.zeros((cols, rows), np.float32)}, {"t": (a.T.copy(), 0, 0)})


def _stencil(size, rng):
    h, w = size
    a = rng.standard_normal((h, w), dtype=np.float32)
    c0, c1 = np.float32(0.5), np.float32(0.125)
    ref = a.copy()
    ref[1:-1, 1:-1] = c0 * a[1:-1, 1:-1] + c1 * (a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1] + a[2:, 1:-1])
    return ((_blocks(w, 16), _blocks(h, 8)), (16, 8), {"in": "a", "out": "b", "h": h, "w": w, "c0": 0.5, "c1": 0.125},
            {"a": a, "b": np.zeros((h, w), np.float32)}, {"b": (ref, 1e-6, 1e-6)})


def _scan(n, rng):
    x = rng.integers(-100, 100, n, dtype=np.int32)
    nb = _blocks(n, 256)
    ref = np.concatenate([np.cumsum(x[i * 256:(i + 1) * 256]) for i in range(nb)]).astype(np.int32)
    return (nb, 256, {"in": "x", "out": "y", "n": n}, {"x": x, "y": np.zeros(n, np.int32)}, {"y": (ref, 0, 0)})


def _bitonic(size, rng):
    n, j, k = size
    keys = rng.integers(-1000, 1000, n, dtype=np.int32)
    ref = keys.copy()
    for i in range(n):
        p = i ^ j
        if p > i:
            up = (i & k) == 0
            if (ref[i] > ref[p]) == up:
                ref[i], ref[p] = ref[p], ref[i]
    return (_blocks(n, 64), 64, {"keys": "keys", "j": j, "k": k}, {"keys": keys}, {"keys": (ref, 0, 0)})


COEFFS = np.array([1.0, -0.5, 0.25, -0.125, 0.0625, -0.03125, 0.015625, -0.0078125], np.float32)


def _poly(n, rng):
    x = rng.uniform(-1, 1, n).astype(np.float32)
    acc = np.full(n, COEFFS[7], np.float32)
    for c in range(6, -1, -1):
        acc = acc * x + COEFFS[c]
    return (_blocks(n, 128), 128, {"x": "x", "y": "y", "n": n}, {"x": x, "y": np.zeros(n, np.float32)},
            {"y": (acc, 1e-6, 1e-6)})


def _index_math(size, rng):
    n, m = size
    i = np.arange(n, dtype=np.uint64)
    h = (i * 2654435761) & 0xFFFFFFFF
    h ^= h >> 13
    ref = ((h % m) + (i // 7) * 3 + (((i << 5) | (i >> 27)) & 0xFFFFFFFF)) & 0xFFFFFFFF
    return (_blocks(n, 128), 128, {"out": "out", "n": n, "m": m}, {"out": np.zeros(n, np.uint32)},
            {"out": (ref.astype(np.uint32), 0, 0)})


def _warp_vote(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    x[:32] = 1.0  # a warp of all-positive values
    if n > 64:
        x[32:64] = -1.0  # and one with none
    warps = _blocks(n, 128) * 4
    pos = np.zeros(warps * 32, bool)
    pos[:n] = x > 0
    pos = pos.reshape(warps, 32)
    counts = pos.sum(axis=1).astype(np.int32)
    flags = (pos.all(axis=1) * 2 + pos.any(axis=1)).astype(np.int32)
    return (_blocks(n, 128), 128, {"x": "x", "counts": "counts", "flags": "flags", "n": n},
            {"x": x, "counts": np.zeros(warps, np.int32), "flags": np.zeros(warps, np.int32)},
            {"counts": (counts, 0, 0), "flags": (flags, 0, 0)})


def _signed_div(n, rng):
    x = rng.integers(-(1 << 31), (1 << 31) - 1, n, dtype=np.int64)
    x[:4] = [0, -1, 1 << 31 - 1, -(1 << 31)][:min(4, n)] if n >= 4 else x[:4]
    x = x.astype(np.int32)
    v = x.astype(np.int64)
    q = lambda a, d: np.trunc(a / d).astype(np.int64)  # C's division rounds toward zero  # noqa: E731
    ref = q(v, 7) + (v - q(v, 10) * 10) * 1000 + q(v, -3) * 7 + q(v, 65537)
    return (_blocks(n, 128), 128, {"x": "x", "out": "out", "n": n}, {"x": x, "out": np.zeros(n, np.int32)},
            {"out": (ref.astype(np.int32), 0, 0)})


def _transcendental(n, rng):
    x = rng.uniform(0, 4, n).astype(np.float32)
    ref = (np.exp(-x) + np.log1p(x) + np.sin(x) * np.cos(x) + 1 / np.sqrt(1 + x) + 1 / (2 + x)).astype(np.float32)
    # the fast intrinsics (MUFU) are approximate: a few ulp of each term
    return (_blocks(n, 128), 128, {"x": "x", "y": "y", "n": n}, {"x": x, "y": np.zeros(n, np.float32)},
            {"y": (ref, 1e-5, 1e-5)})


def _tex_scale(n, rng):
    # the texture object parameter holds handle 0: texture number 0, a 1D float texture of x
    x = rng.standard_normal(n, dtype=np.float32)
    return (_blocks(n, 128), 128, {"tex": 0, "out": "out", "n": n}, {"out": np.zeros(n, np.float32)},
            {"out": (2 * x, 0, 0)}, {0: Texture(x, format="float1")})


# ---- IEEE division and square root, statistics, linear algebra, the rest of ptxas's forms -----

_SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, 1e-40, -1e-42, 3.0e38, 1.2e-38, 1.0, -7.0, 2.0 ** -126,
                     2.0 ** 127], np.float32)


def _with_specials(x):
    k = min(len(x), len(_SPECIAL))
    x[:k] = _SPECIAL[:k]
    return x


def _fast(setup, rtol):
    """A setup's launch with its references loosened to ``rtol`` (the fast-math approximations),
    on operands where they are defined: finite, normal quotients."""
    grid, block, params, buffers, ref = setup
    a, b = buffers["a"], buffers["b"]
    ok = np.isfinite(a) & np.isfinite(b) & (np.abs(b) > 1e-30) & (np.abs(b) < 1e30) & (np.abs(a) > 1e-30)
    buffers["a"], buffers["b"] = np.where(ok, a, 1).astype(np.float32), np.where(ok, b, 3).astype(np.float32)
    with np.errstate(over="ignore"):
        ref = buffers["a"] / buffers["b"]
    return grid, block, params, buffers, {"c": (ref, rtol, 0)}


def _ieee_divide(n, rng):
    a = _with_specials(rng.standard_normal(n).astype(np.float32) * 100)
    b = rng.standard_normal(n).astype(np.float32)
    b[::7] = _SPECIAL[(np.arange(len(b[::7])) * 5) % len(_SPECIAL)]
    with np.errstate(all="ignore"):
        ref = a / b  # IEEE: bit for bit (NaN as NaN)
    return (_blocks(n, 128), 128, {"a": "a", "b": "b", "c": "c", "n": n},
            {"a": a, "b": b, "c": np.zeros(n, np.float32)}, {"c": (ref, 0, 0)})


def _recip_sqrt(n, rng):
    x = _with_specials(np.abs(rng.standard_normal(n).astype(np.float32)) * 10)
    with np.errstate(all="ignore"):
        r, sq = np.float32(1) / x, np.sqrt(x)
    return (_blocks(n, 128), 128, {"x": "x", "r": "r", "s": "s", "n": n},
            {"x": x, "r": np.zeros(n, np.float32), "s": np.zeros(n, np.float32)}, {"r": (r, 0, 0), "s": (sq, 0, 0)})


def _normalize3(n, rng):
    v = rng.standard_normal((n, 3)).astype(np.float32)
    scale = np.array([1.0, 2.0, 0.5], np.float32)
    ln = np.sqrt(v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2])
    ref = (v / ln[:, None] * scale).astype(np.float32)
    return (_blocks(n, 64), 64, {"v": "v", "scale": scale.tobytes(), "n": n}, {"v": v.copy()},
            {"v": (ref, 2e-7, 1e-7)})


def _column_means(size, rng):
    m, n = size
    A = rng.standard_normal((m, n)).astype(np.float32)
    return (_blocks(n, 64), 64, {"A": "A", "mean": "mean", "m": m, "n": n},
            {"A": A, "mean": np.zeros(n, np.float32)}, {"mean": (A.mean(axis=0, dtype=np.float64).astype(np.float32), 1e-5, 1e-6)})


def _column_stddev(size, rng):
    m, n = size
    A = rng.standard_normal((m, n)).astype(np.float32) * 3 + 1
    return (_blocks(n, 64), 64, {"A": "A", "sd": "sd", "m": m, "n": n},
            {"A": A, "sd": np.zeros(n, np.float32)}, {"sd": (A.astype(np.float64).std(axis=0, ddof=1).astype(np.float32), 1e-5, 1e-6)})


def _column_correlation(size, rng):
    m, n = size
    A = rng.standard_normal((m, n)).astype(np.float32)
    A[:, 1] += A[:, 0]  # a correlated pair
    ref = np.corrcoef(A.astype(np.float64), rowvar=False).astype(np.float32)
    return ((_blocks(n, 16), _blocks(n, 8)), (16, 8), {"A": "A", "corr": "corr", "m": m, "n": n},
            {"A": A, "corr": np.zeros((n, n), np.float32)}, {"corr": (ref, 1e-4, 1e-5)})


def _matvec(size, rng, cols=False):
    m, n = size
    A = rng.standard_normal((m, n)).astype(np.float32)
    x = rng.standard_normal(m if cols else n).astype(np.float32)
    ref = (A.astype(np.float64).T @ x if cols else A.astype(np.float64) @ x).astype(np.float32)
    out = n if cols else m
    return (_blocks(out, 64), 64, {"A": "A", "x": "x", "y": "y", "m": m, "n": n},
            {"A": A, "x": x, "y": np.zeros(out, np.float32)}, {"y": (ref, 1e-4, 1e-4)})


def _lu(n, rng):
    A = rng.standard_normal((n, n)).astype(np.float32) + n * np.eye(n, dtype=np.float32)  # no pivoting needed
    U = A.astype(np.float64).copy()
    L = np.eye(n)
    for k in range(n - 1):
        for i in range(k + 1, n):
            L[i, k] = U[i, k] / U[k, k]
            U[i, k:] -= L[i, k] * U[k, k:]
    ref = (np.triu(U) + np.tril(L, -1)).astype(np.float32)
    return (1, 32 * _blocks(n, 32), {"A": "A", "n": n}, {"A": A.copy()}, {"A": (ref, 1e-4, 1e-5)})


def _gram_schmidt(size, rng):
    m, n = size
    A = rng.standard_normal((m, n)).astype(np.float32)
    Q, R = np.linalg.qr(A.astype(np.float64))
    sign = np.sign(np.diag(R))  # the Gram-Schmidt factors have a positive diagonal
    Q, R = Q * sign, R * sign[:, None]
    block = 1 << max(5, (m - 1).bit_length())
    return (1, block, {"Q": "Q", "R": "R", "m": m, "n": n}, {"Q": A.copy(), "R": np.zeros((n, n), np.float32)},
            {"Q": (Q.astype(np.float32), 1e-4, 1e-4), "R": (np.triu(R).astype(np.float32), 1e-4, 1e-4)})


def _thomas(rhs, a):
    """The tridiagonal system (-a, 1 + 2a, -a) x = rhs, by the Thomas algorithm in fp64."""
    n = len(rhs)
    b = 1 + 2 * a
    cp, dp = np.zeros(n), np.zeros(n)
    cp[0], dp[0] = -a / b, rhs[0] / b
    for k in range(1, n):
        den = b + a * cp[k - 1]
        cp[k], dp[k] = -a / den, (rhs[k] + a * dp[k - 1]) / den
    x = dp.copy()
    for k in range(n - 2, -1, -1):
        x[k] -= cp[k] * x[k + 1]
    return x


def _adi(size, rng):
    h, w, along_x = size
    u = rng.standard_normal((h, w)).astype(np.float32)
    a = 0.4
    u64 = u.astype(np.float64)
    ref = (np.array([_thomas(r, a) for r in u64]) if along_x else np.array([_thomas(c, a) for c in u64.T]).T)
    lines, length = (h, w) if along_x else (w, h)
    return (_blocks(lines, 32), 32, {"u": "u", "out": "out", "scratch": "scratch", "a": a, "h": h, "w": w,
                                     "along_x": int(along_x)},
            {"u": u, "out": np.zeros((h, w), np.float32), "scratch": np.zeros(lines * length, np.float32)},
            {"out": (ref.astype(np.float32), 1e-5, 1e-6)})


def _sync_count(nblocks, rng):
    x = rng.standard_normal(nblocks * 128).astype(np.float32) * 3
    x[:128] = np.abs(x[:128]) + 0.5  # a block of positives, all above lo
    v = x.reshape(nblocks, 128)
    lo, hi = -5.0, 5.0
    ref = ((v > 0).sum(axis=1) * 4 + (v > lo).all(axis=1) * 2 + (v > hi).any(axis=1)).astype(np.int32)
    return (nblocks, 128, {"x": "x", "out": "out", "lo": lo, "hi": hi}, {"x": x, "out": np.zeros(nblocks, np.int32)},
            {"out": (ref, 0, 0)})


def _clamp_minmax(n, rng):
    a = rng.integers(-20, 20, n).astype(np.int32)
    b = (rng.standard_normal(n) * 2).astype(np.float32)
    c = (np.minimum(np.maximum(a, -3), 7) + np.minimum(a.astype(np.uint32), 9).astype(np.int32)
         + np.maximum(a, a[::-1])).astype(np.int32)
    d = (np.fmin(np.fmax(b, -1), 1) + np.fmax(b, b[::-1])).astype(np.float32)
    return (_blocks(n, 64), 64, {"a": "a", "b": "b", "c": "c", "d": "d", "n": n},
            {"a": a, "b": b, "c": np.zeros(n, np.int32), "d": np.zeros(n, np.float32)}, {"c": (c, 0, 0), "d": (d, 0, 0)})


def _perm(a, b, sel):
    """CUDA's __byte_perm(a, b, sel), byte by byte: result byte n is byte (sel >> 4n) & 7 of the
    eight bytes of {b, a} (CUDA Math API: only the low 3 bits of each selector nibble count)."""
    src = [(int(a) >> (8 * k)) & 0xFF for k in range(4)] + [(int(b) >> (8 * k)) & 0xFF for k in range(4)]
    return sum(src[(sel >> (4 * i)) & 7] << (8 * i) for i in range(4))


def _byte_perm(n, rng):
    a = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    ref = np.array([_perm(x, 0, 0x0123) ^ _perm(x, y, 0x7351) ^ _perm(x, y, 0x8888) for x, y in zip(a, b)], np.uint32)
    return (_blocks(n, 64), 64, {"a": "a", "b": "b", "c": "c", "n": n},
            {"a": a, "b": b, "c": np.zeros(n, np.uint32)}, {"c": (ref, 0, 0)})


def _float_atomics(n, rng):
    bins = rng.integers(0, 16, n).astype(np.int32)
    w = rng.integers(-8, 9, n).astype(np.float32) * np.float32(0.25)  # sums exact in any order
    hist = np.zeros(16, np.float64)
    np.add.at(hist, bins, w.astype(np.float64))
    return (_blocks(n, 64), 64, {"bin": "bin", "w": "w", "hist": "hist", "total": "total", "order": "order", "n": n},
            {"bin": bins, "w": w, "hist": np.zeros(16, np.float32), "total": np.zeros(1, np.float32),
             "order": np.zeros(n, np.int32)},
            {"hist": (hist.astype(np.float32), 0, 0), "total": (np.array([n], np.float32), 0, 0),
             "order": (np.zeros(n, np.int32), 0, 0)})


def _scaled_sum(n, rng):
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    alpha = np.float32(0.75)
    return (_blocks(n, 64), 64, {"x": "x", "y": "y", "z": "z", "alpha": 0.75, "n": n},
            {"x": x, "y": y, "z": np.zeros(n, np.float32)}, {"z": (alpha * x + np.float32(3) * y, 1e-6, 1e-6)})


BLUR = np.array([1, 2, 1, 2, 4, 2, 1, 2, 1], np.float32) / 16


def _blur(size, rng):
    h, w = size
    a = rng.standard_normal((h, w)).astype(np.float32)
    p = np.pad(a.astype(np.float64), 1, mode="edge")
    ref = sum(BLUR[(dy + 1) * 3 + dx + 1] * p[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]
              for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    return ((_blocks(w, 16), _blocks(h, 8)), (16, 8), {"in": "a", "out": "b", "h": h, "w": w},
            {"a": a, "b": np.zeros((h, w), np.float32)}, {"b": (ref.astype(np.float32), 1e-5, 1e-6)})


def _lower_row_sums(n, rng):
    A = rng.standard_normal((n, n)).astype(np.float32)
    ref = np.tril(A.astype(np.float64)).sum(axis=1).astype(np.float32)
    return (_blocks(n, 64), 64, {"A": "A", "s": "s", "n": n}, {"A": A, "s": np.zeros(n, np.float32)},
            {"s": (ref, 1e-5, 1e-5)})


def _heat(n, rng):
    u = rng.standard_normal(n).astype(np.float32)
    r = np.float32(0.25)
    v = u.copy()
    v[1:-1] = u[1:-1] + r * (u[:-2] - np.float32(2) * u[1:-1] + u[2:])
    return (_blocks(n, 64), 64, {"u": "u", "v": "v", "r": 0.25, "n": n}, {"u": u, "v": np.zeros(n, np.float32)},
            {"v": (v, 1e-6, 1e-6)})


_SPECIAL64 = np.array([0.0, -0.0, np.inf, -np.inf, 5e-324, -1e-310, 1.7976931348623157e308, 2.2250738585072014e-308,
                       1.0, 3.0])


def _dp_divide_sqrt(n, rng):
    a = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, n)
    b = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, n)
    k = min(n, len(_SPECIAL64))
    a[:k], b[:k] = _SPECIAL64[:k], _SPECIAL64[::-1][:k]
    with np.errstate(all="ignore"):
        q, r = a / b, np.sqrt(np.abs(b))  # IEEE: bit for bit
    return (_blocks(n, 64), 64, {"a": "a", "b": "b", "q": "q", "r": "r", "n": n},
            {"a": a, "b": b, "q": np.zeros(n), "r": np.zeros(n)}, {"q": (q, 0, 0), "r": (r, 0, 0)})


def _dp_column_stddev(size, rng):
    m, n = size
    A = rng.standard_normal((m, n)) * 3 + 1
    return (_blocks(n, 64), 64, {"A": "A", "sd": "sd", "m": m, "n": n}, {"A": A, "sd": np.zeros(n)},
            {"sd": (A.std(axis=0, ddof=1), 1e-13, 1e-15)})


def _dp_horner_clamp(n, rng):
    x = rng.standard_normal(n) * 4
    p = ((0.125 * x - 0.5) * x + 0.25) * x + 1.0  # the kernel's FMAs round once per step: 1e-15 apart
    y = np.fmin(np.fmax(p, -2.0), 2.0) + np.where(x < 0, -1.0, 1.0)
    return (_blocks(n, 64), 64, {"x": "x", "y": "y", "n": n}, {"x": x, "y": np.zeros(n)}, {"y": (y, 1e-14, 1e-14)})


def _dp_mixed(n, rng):
    a = rng.standard_normal(n) * 1000
    x = rng.standard_normal(n).astype(np.float32)
    f = (a * x.astype(np.float64)).astype(np.float32)  # the product in fp64, rounded once to fp32
    return (_blocks(n, 64), 64, {"a": "a", "x": "x", "f": "f", "k": "k", "fl": "fl", "n": n},
            {"a": a, "x": x, "f": np.zeros(n, np.float32), "k": np.zeros(n, np.int32), "fl": np.zeros(n)},
            {"f": (f, 0, 0), "k": (np.trunc(a).astype(np.int32), 0, 0), "fl": (np.floor(a) + np.arange(n), 0, 0)})


def _precise(n, rng, fn, dtype, rtol):
    x = (rng.uniform(-4, 4, n)).astype(dtype)
    x64 = x.astype(np.float64)
    ref = fn(x64).astype(dtype)  # in fp64, then rounded: CUDA's functions are within 1-4 ulp of it
    return (_blocks(n, 64), 64, {"x": "x", "y": "y", "n": n}, {"x": x, "y": np.zeros(n, dtype)},
            {"y": (ref, rtol, rtol)})


def _row_sort(size, rng):
    rows, k = size
    x = rng.standard_normal((rows, k)).astype(np.float32)
    s = np.sort(x, axis=1)
    med = s[:, k // 2] if k % 2 else np.float32(0.5) * (s[:, k // 2 - 1] + s[:, k // 2])
    return (_blocks(rows, 64), 64, {"x": "x", "sorted": "sorted", "median": "median", "rows": rows, "k": k},
            {"x": x, "sorted": np.zeros((rows, k), np.float32), "median": np.zeros(rows, np.float32)},
            {"sorted": (s, 0, 0), "median": (med.astype(np.float32), 0, 0)})


def _digit_counts(size, rng):
    n, per = size
    w = rng.integers(0, 2 ** 32, (n, per), dtype=np.uint64).astype(np.uint32)
    digits = np.stack([(w >> np.uint32(s)) & np.uint32(15) for s in range(0, 32, 4)], axis=-1).reshape(n, -1)
    counts = np.stack([(digits == d).sum(axis=1) for d in range(16)], axis=1)
    weighted = (counts * np.arange(16)).sum(axis=1).astype(np.int32)
    mode = counts.argmax(axis=1).astype(np.uint8)  # (argmax: the first of the largest)
    return (_blocks(n, 64), 64, {"words": "words", "weighted": "weighted", "mode": "mode", "n": n, "per": per},
            {"words": w, "weighted": np.zeros(n, np.int32), "mode": np.zeros(n, np.uint8)},
            {"weighted": (weighted, 0, 0), "mode": (mode, 0, 0)})


def _small_solve(size, rng):
    n, m = size
    A = rng.standard_normal((n, m, m)) + np.eye(m) * 0.5
    b = rng.standard_normal((n, m))
    x = np.linalg.solve(A, b[..., None])[..., 0]
    return (_blocks(n, 32), 32, {"A": "A", "b": "b", "x": "x", "n": n, "m": m},
            {"A": A, "b": b, "x": np.zeros((n, m))}, {"x": (x, 1e-9, 1e-9)})


def trig_arguments(n, rng):
    """``n`` fp32 arguments for sine and cosine: magnitudes from 1e-3 to 3.4e38 (log-uniform, so
    most take the Payne-Hanek reduction), both signs, with 0, -0, inf, NaN and the extremes first."""
    x = (rng.uniform(-1, 1, n) * 10.0 ** rng.uniform(-3, 38.5, n)).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, np.nan, 3e38, -3.4028235e38, 1.5707964, 105414.35], np.float32)
    k = min(n, special.size)
    x[:k] = special[:k]
    return x


def _sin_cos(n, rng):
    x = trig_arguments(n, rng)
    with np.errstate(invalid="ignore"):
        s, c = np.sin(x.astype(np.float64)).astype(np.float32), np.cos(x.astype(np.float64)).astype(np.float32)
    # CUDA's sinf / cosf: 2 ulp ([cuda-pg] "Mathematical Functions"); tests/test_local_memory.py
    # checks the ulps themselves, here a relative 2^-21 (2-4 ulp) and NaN where numpy gives NaN
    tol = 2.0 ** -21
    zeros = {name: np.zeros(n, np.float32) for name in ("s", "c", "ss", "cc")}
    return (_blocks(n, 64), 64, {"x": "x", "s": "s", "c": "c", "ss": "ss", "cc": "cc", "n": n}, {"x": x, **zeros},
            {"s": (s, tol, 0), "c": (c, tol, 0), "ss": (s, tol, 0), "cc": (c, tol, 0)})


WEIGHTS = np.array([0.5, -1.0, 2.0, 0.25, -3.0, 1.5, 4.0, -0.75], np.float32)  # trig.cu's __device__ table


def _device_tables(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    i = np.arange(n)
    y = x * WEIGHTS[i & 7] + np.float32(0.125) + (i * 3 + 1).astype(np.float32)
    return (_blocks(n, 64), 64, {"x": "x", "y": "y", "n": n}, {"x": x, "y": np.zeros(n, np.float32)},
            {"y": (y.astype(np.float32), 1e-6, 0)})  # (ptxas fuses a multiply and an add: one rounding less)


def _dp_compare_flags(n, rng):
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    k = min(n, 8)
    b[:k // 2] = a[:k // 2]  # equal pairs
    a[k // 2:k] = [np.nan, np.inf, -np.inf, 0.0][:k - k // 2]  # NaN compares false, both ways
    with np.errstate(invalid="ignore"):
        below, mask = (a < b).astype(np.float32), -(a >= b).astype(np.int32)
    return (_blocks(n, 64), 64, {"a": "a", "b": "b", "below": "below", "mask": "mask", "n": n},
            {"a": a, "b": b, "below": np.zeros(n, np.float32), "mask": np.zeros(n, np.int32)},
            {"below": (below, 0, 0), "mask": (mask, 0, 0)})


def _dp_half_round_trip(n, rng):
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-9, 6, n)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 65520.0, 65519.99, 2.0 ** -25, -2.0 ** -24 * 1.5])
    k = min(n, special.size)
    x[:k] = special[:k]
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)  # numpy rounds fp64 to fp16 once, to nearest even
    return (_blocks(n, 64), 64, {"x": "x", "h": "h", "back": "back", "n": n},
            {"x": x, "h": np.zeros(n, np.uint16), "back": np.zeros(n)},
            {"h": (h.view(np.uint16), 0, 0), "back": (h.astype(np.float64), 0, 0)})


def _video_min_max(n, rng):
    a, b, c = (rng.integers(-2 ** 31, 2 ** 31, n, dtype=np.int64) for _ in range(3))
    small = rng.integers(-50, 50, (3, n))  # values near each other, where the min / max choices differ
    a[::2], b[::2], c[::2] = small[0, ::2], small[1, ::2], small[2, ::2]
    ua, ub, uc = (x & 0xFFFFFFFF for x in (a, b, c))
    clamped = np.minimum(np.maximum(a, b), c).astype(np.int32)  # PTX vmax .min: min(max(a, b), c)
    summed = ((np.minimum(ua, ub) + uc) & 0xFFFFFFFF).astype(np.uint32)  # vmin.u32 .add: wraps
    sat = np.clip(np.maximum(ua, b) + c, -2 ** 31, 2 ** 31 - 1).astype(np.int32)  # a as u32, .sat to s32
    i32 = {k: v.astype(np.int32) for k, v in (("a", a), ("b", b), ("c", c))}
    return (_blocks(n, 64), 64, {"a": "a", "b": "b", "c": "c", "clamped": "clamped", "summed": "summed", "sat": "sat",
                                 "n": n},
            {**i32, "clamped": np.zeros(n, np.int32), "summed": np.zeros(n, np.uint32), "sat": np.zeros(n, np.int32)},
            {"clamped": (clamped, 0, 0), "summed": (summed, 0, 0), "sat": (sat, 0, 0)})


def _strided_scale64(size, rng):
    # a grid of fewer threads than elements, each thread striding over several; or a stride given
    # (above 2^32: the loop's trip count is then a 64-bit division, I2F.U64 / F2I.U64 and all)
    n, blocks, *given = size
    x = rng.standard_normal(n, dtype=np.float32)
    a = np.float32(1.25)
    stride = given[0] if given else blocks * 64
    y = (a * x + x[::-1]).astype(np.float32)
    return (blocks, 64, {"x": "x", "y": "y", "n": n, "stride": stride, "a": 1.25},
            {"x": x, "y": np.zeros(n, np.float32)}, {"y": (y, 1e-6, 1e-6)})  # (ptxas fuses: FFMA)


def _count_above64(n, rng):
    v = rng.integers(-2 ** 62, 2 ** 62, n, dtype=np.int64)
    u = rng.integers(0, 2 ** 64, n, dtype=np.uint64)
    threshold, limit = int(v[n // 2]) if n > 2 else 5, int(u[n // 3]) if n > 3 else 2 ** 63
    k = min(n, 8)  # values where only the low words differ, or only the high words, or none
    v[:k] = [threshold, threshold + 1, threshold - 1, threshold + 2 ** 32, threshold - 2 ** 32, 0,
             threshold ^ 0xFFFFFFFF, -threshold][:k]
    u[:k] = np.array([limit, limit - 1, limit + 1, limit ^ 0xFFFFFFFF, 0, 2 ** 64 - 1, limit & ~0xFFFFFFFF,
                      limit | 0xFFFFFFFF], dtype=np.uint64)[:k]
    d = v - threshold  # (wraps as the kernel's does; the values stay far from it)
    flags = ((v > threshold) * 1 | (d <= 0) * 2 | (u >= np.uint64(limit)) * 4 | (v != -d) * 8).astype(np.int32)
    return (_blocks(n, 64), 64, {"v": "v", "u": "u", "threshold": threshold, "limit": limit, "flags": "flags",
                                 "n": n},
            {"v": v, "u": u, "flags": np.zeros(n, np.int32)}, {"flags": (flags, 0, 0)})


CASES = {
    "vecadd": Case("vecadd.cu", "vecadd", (1, 1000, 4099), _vecadd),
    "saxpy": Case("saxpy.cu", "saxpy", (7, 300, 1000), _saxpy),
    "matmul": Case("matmul.cu", "matmul", ((16, 16, 16), (33, 17, 9), (40, 24, 32)), _matmul),
    "matmul_tiled": Case("matmul_tiled.cu", "matmul_tiled", ((16, 16, 16), (33, 17, 9), (40, 24, 32)), _matmul),
    "block_sum": Case("reduce_shfl.cu", "block_sum", (100, 256, 1000), _block_sum),
    "histogram": Case("histogram.cu", "histogram", (100, 1000, 5000), _histogram),
    "transpose": Case("transpose.cu", "transpose", ((32, 32), (40, 70), (64, 33)), _transpose),
    "stencil5": Case("stencil.cu", "stencil5", ((8, 16), (20, 33), (31, 40)), _stencil),
    "scan_block": Case("scan.cu", "scan_block", (100, 256, 1000), _scan),
    "bitonic_step": Case("bitonic.cu", "bitonic_step", ((64, 1, 2), (256, 8, 16), (512, 32, 64)), _bitonic),
    "poly": Case("poly_constant.cu", "poly", (5, 128, 1000), _poly),
    "index_math": Case("index_math.cu", "index_math", ((100, 7), (1000, 1000), (3000, 65537)), _index_math),
    "warp_vote": Case("warp_vote.cu", "warp_vote", (40, 256, 1000), _warp_vote),
    "signed_div": Case("signed_div.cu", "signed_div", (4, 1000, 5000), _signed_div),
    "transcendental": Case("transcendental.cu", "transcendental", (10, 128, 1000), _transcendental),
    "tex_scale": Case("texture.cu", "tex_scale", (10, 128, 1000), _tex_scale),
    "ieee_divide": Case("ieee.cu", "ieee_divide", (12, 130, 700), _ieee_divide),
    "ieee_divide_fast": Case("ieee.cu", "ieee_divide", (12, 130, 700),
                             lambda n, rng: _fast(_ieee_divide(n, rng), 2 ** -21), options=("-use_fast_math",)),
    "recip_sqrt": Case("ieee.cu", "recip_sqrt", (12, 130, 700), _recip_sqrt),
    "normalize3": Case("ieee.cu", "normalize3", (5, 64, 300), _normalize3),
    "column_means": Case("stats.cu", "column_means", ((3, 5), (17, 40), (64, 70)), _column_means),
    "column_stddev": Case("stats.cu", "column_stddev", ((3, 5), (17, 40), (64, 70)), _column_stddev),
    "column_correlation": Case("stats.cu", "column_correlation", ((3, 2), (17, 9), (40, 20)), _column_correlation),
    "matvec_rows": Case("linalg.cu", "matvec_rows", ((1, 1), (30, 17), (100, 64)), _matvec),
    "matvec_cols": Case("linalg.cu", "matvec_cols", ((1, 1), (30, 17), (100, 64)),
                        lambda size, rng: _matvec(size, rng, cols=True)),
    "lu_inplace": Case("linalg.cu", "lu_inplace", (2, 9, 32), _lu),
    "gram_schmidt": Case("linalg.cu", "gram_schmidt", ((4, 2), (20, 5), (64, 8)), _gram_schmidt),
    "adi_sweep_x": Case("linalg.cu", "adi_sweep", ((3, 4, True), (20, 17, True), (40, 33, True)), _adi),
    "adi_sweep_y": Case("linalg.cu", "adi_sweep", ((3, 4, False), (20, 17, False), (40, 33, False)), _adi),
    "sync_count": Case("features.cu", "sync_count", (1, 3, 8), _sync_count),
    "clamp_minmax": Case("features.cu", "clamp_minmax", (5, 100, 500), _clamp_minmax),
    "byte_perm": Case("features.cu", "byte_perm", (5, 100, 300), _byte_perm),
    "float_atomics": Case("features.cu", "float_atomics", (10, 200, 1000), _float_atomics),
    "scaled_sum": Case("features.cu", "scaled_sum", (7, 200, 1000), _scaled_sum),
    "blur_clamped": Case("features.cu", "blur_clamped", ((1, 1), (9, 20), (33, 17)), _blur),
    "lower_row_sums": Case("features.cu", "lower_row_sums", (1, 40, 100), _lower_row_sums),
    "heat_dirichlet": Case("features.cu", "heat_dirichlet", (2, 100, 700), _heat),
    "dp_divide_sqrt": Case("fp64.cu", "dp_divide_sqrt", (10, 100, 400), _dp_divide_sqrt),
    "dp_column_stddev": Case("fp64.cu", "dp_column_stddev", ((3, 5), (17, 40), (40, 70)), _dp_column_stddev),
    "dp_horner_clamp": Case("fp64.cu", "dp_horner_clamp", (5, 100, 500), _dp_horner_clamp),
    "dp_mixed": Case("fp64.cu", "dp_mixed", (5, 100, 500), _dp_mixed),
    "row_sort": Case("local.cu", "row_sort", ((5, 1), (100, 7), (300, 16)), _row_sort),
    "digit_counts": Case("local.cu", "digit_counts", ((3, 1), (100, 3), (500, 8)), _digit_counts),
    "small_solve": Case("local.cu", "small_solve", ((3, 1), (40, 4), (100, 6)), _small_solve),
    "precise_sin_cos": Case("trig.cu", "precise_sin_cos", (8, 300, 3000), _sin_cos),
    "device_tables": Case("trig.cu", "device_tables", (1, 100, 4096), _device_tables),
    "dp_compare_flags": Case("compare64.cu", "dp_compare_flags", (8, 100, 700), _dp_compare_flags),
    "video_min_max": Case("video.cu", "video_min_max", (8, 100, 700), _video_min_max),
    "dp_half_round_trip": Case("compare64.cu", "dp_half_round_trip", (8, 100, 700), _dp_half_round_trip),
    "strided_scale64": Case("wide_index.cu", "strided_scale64", ((5, 1), (300, 2), (1000, 16, 2 ** 32 + 7)),
                            _strided_scale64),
    "count_above64": Case("wide_index.cu", "count_above64", (8, 100, 700), _count_above64),
    # CUDA's maximum errors (Programming Guide, "Mathematical Functions"): expf 2 ulp, logf 1,
    # powf 4, tanhf 2; exp and log 1 ulp
    "precise_exp_log": Case("precise.cu", "precise_exp_log", (5, 100, 500),
                            lambda n, rng: _precise(n, rng, lambda v: np.exp(v) + np.log1p(v * v), np.float32, 1e-6)),
    "precise_pow_tanh": Case("precise.cu", "precise_pow_tanh", (5, 100, 500),
                             lambda n, rng: _precise(n, rng, lambda v: np.abs(v) ** 1.5 + np.tanh(v), np.float32, 2e-6)),
    "precise_dexp_log": Case("precise.cu", "precise_dexp_log", (5, 100, 500),
                             lambda n, rng: _precise(n, rng, lambda v: np.exp(v) + np.log1p(v * v), np.float64, 1e-15)),
}
