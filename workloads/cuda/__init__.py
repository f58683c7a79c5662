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
}
