"""IEEE fp32 division and square root as ptxas emits them: the directed roundings of FFMA / FMUL /
FADD against exact rational arithmetic, FSET, FCHK, MUFU.SQRT / .SAT / RCP64H, divergent RET
(the slow paths are subroutines left by a guarded RET), and whole NVRTC kernels (``a / b``,
``1.0f / a``, ``sqrtf``, default options) against numpy bit for bit over random and special
operands, in the functional model and both timing cores."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from maxsim.functional import ieee
from sasskit import run_lanes
from nvidia_tools import require_nvrtc

F32 = np.float32
MAX = F32(np.finfo(np.float32).max)


def _exact_round(v: Fraction, mode: str) -> F32:
    """The fp32 rounding of the exact value v by ``mode``, found by stepping fp32 neighbours."""
    top = Fraction(float(MAX))
    if v > top:
        return F32(np.inf) if mode == "RP" else MAX
    if v < -top:
        return F32(-np.inf) if mode == "RM" else -MAX
    r = F32(float(v))
    if np.isinf(r):
        r = np.copysign(MAX, r)
    while Fraction(float(r)) > v:
        r = np.nextafter(r, F32(-np.inf))
    while r < MAX and Fraction(float(np.nextafter(r, F32(np.inf)))) <= v:
        r = np.nextafter(r, F32(np.inf))
    floor = r  # the largest fp32 <= v
    ceil = floor if Fraction(float(floor)) == v else np.nextafter(floor, F32(np.inf))
    if mode == "RM":
        return floor
    if mode == "RP":
        return ceil
    return floor if v > 0 else ceil


def _operands(n, rng):
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-30, 30, n))).astype(F32)
    x[: n // 4] = rng.integers(0, 2 ** 32, n // 4, dtype=np.uint64).astype(np.uint32).view(F32)  # any bits
    return x[np.isfinite(x)]


@pytest.mark.parametrize("mode", ["RZ", "RM", "RP"])
def test_directed_rounding_against_exact_arithmetic(mode):
    rng = np.random.default_rng(7)
    a, b, c = (_operands(700, rng) for _ in range(3))
    n = min(len(a), len(b), len(c))
    a, b, c = a[:n], b[:n], c[:n]
    # cancellation and tiny addends: c near -a*b, and 1e-30 against 1
    with np.errstate(over="ignore"):
        near = -(a[:40].astype(np.float64) * b[:40]).astype(F32)
    c[:40] = np.where(np.isfinite(near), near, c[:40])
    a[40:50], b[40:50], c[40:50] = 1, 1, F32(1e-30)
    fma, mul = ieee.ffma_r(a, b, c, mode), ieee.fmul_r(a, b, mode)
    add = ieee.fadd_r(a, c, mode)
    for i in range(n):
        fa, fb, fc = (Fraction(float(x)) for x in (a[i], b[i], c[i]))
        for got, v in ((fma[i], fa * fb + fc), (mul[i], fa * fb), (add[i], fa + fc)):
            if v == 0:
                continue  # the sign of zero: below
            want = _exact_round(v, mode)
            assert got.view(np.uint32) == F32(want).view(np.uint32), (mode, a[i], b[i], c[i], got, want)


def test_directed_rounding_zeros_and_overflow():
    one, big = F32(1), MAX
    assert np.signbit(ieee.fadd_r(one, -one, "RM")) and not np.signbit(ieee.fadd_r(one, -one, "RZ"))
    assert np.signbit(ieee.fadd_r(F32(-0.0), F32(-0.0), "RP"))
    assert ieee.fmul_r(big, F32(2), "RZ") == MAX and np.isinf(ieee.fmul_r(big, F32(2), "RP"))
    assert ieee.fmul_r(-big, F32(2), "RP") == -MAX and np.isinf(ieee.fmul_r(-big, F32(2), "RM"))
    assert np.isnan(ieee.ffma_r(F32(np.inf), F32(0), one, "RZ"))


def test_ffma_rounding_modes_run_in_sass():
    a = np.array([1.0, -1.0, 3.0, 1e-30], F32)
    b = np.array([1.0 / 3, 1.0 / 3, 1.0 / 7, 1.0], F32)
    c = np.array([0.0, 0.0, 1e-8, 1.0], F32)
    for mode in ("RZ", "RM", "RP", "RN"):
        got = run_lanes(f"FFMA.{mode} R13, R10, R11, R12", a, b, c, dtype=F32)
        want = [_exact_round(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), mode)
                if mode != "RN" else F32(float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))))
                for x, y, z in zip(a, b, c)]
        assert got.view(np.uint32).tolist() == np.array(want, F32).view(np.uint32).tolist(), mode


def test_fset_gives_all_ones_or_one_point_zero():
    a = np.array([1.0, 2.0, np.nan, -0.0], F32)
    b = np.array([1.0, 1.0, 1.0, 0.0], F32)
    assert run_lanes("FSET.NEU.FTZ.AND R13, R10, R11, PT", a, b).tolist() == [0, 0xFFFFFFFF, 0xFFFFFFFF, 0]
    assert run_lanes("FSET.BF.GT.AND R13, R10, R11, PT", a, b).view(F32).tolist() == [0.0, 1.0, 0.0, 0.0]
    assert run_lanes("FSET.GTU.FTZ.AND R13, |R10|, +INF, PT", a, b).tolist() == [0, 0, 0xFFFFFFFF, 0]


def test_fchk_sends_hard_operands_to_the_slow_path():
    a = np.array([1.0, 0.0, 1e-40, 1.0, np.inf, 1.0, 2.0 ** 100, 2.0 ** -110, 3.0], F32)
    b = np.array([3.0, 1.0, 1.0, 0.0, 1.0, 2.0 ** 127, 2.0 ** -30, 1.0, np.nan], F32)
    got = run_lanes(["FCHK.DIVIDE P0, R10, R11", "SEL R13, RZ, 0x1, !P0"], a, b)
    assert got.tolist() == [0, 1, 1, 1, 1, 1, 1, 1, 1]


def test_mufu_sqrt_sat_and_fp64_high_words():
    x = np.array([4.0, 2.0, 0.0, -1.0, np.inf, 0.25], F32)
    got = run_lanes("MUFU.SQRT R13, R10", x, dtype=F32)
    assert got[[0, 2, 4, 5]].tolist() == [2.0, 0.0, np.inf, 0.5] and np.isnan(got[3])
    assert abs(got[1] - np.sqrt(2)) <= np.spacing(F32(np.sqrt(2)))
    assert run_lanes("MUFU.EX2.SAT R13, R10", x, dtype=F32).tolist() == [1.0, 1.0, 1.0, 0.5, 1.0, 1.0]
    d = np.array([3.0, 0.5, -10.0, 1e300])
    hi = (d.view(np.uint64) >> np.uint64(32)).astype(np.uint32)
    r = run_lanes("MUFU.RCP64H R13, R10", hi)
    back = (r.astype(np.uint64) << np.uint64(32)).view(np.float64)
    np.testing.assert_allclose(back, 1 / d, rtol=2 ** -19)
    r = run_lanes("MUFU.RSQ64H R13, R10", hi[:2])
    np.testing.assert_allclose((r.astype(np.uint64) << np.uint64(32)).view(np.float64), 1 / np.sqrt(d[:2]), rtol=2 ** -19)


def test_a_guarded_ret_returns_its_lanes_when_all_have_returned():
    """A subroutine left by a divergent @P0 RET: the lanes that return wait; the others go on
    and return later; then all of them continue after the CAL."""
    body = ["ISETP.LT.AND P0, PT, R10, 0x2, PT", "MOV R13, RZ", "CAL SUB", "IADD R13, R13, 0x100",
            "BRA DONE", "SUB:", "IADD R13, R13, 0x1", "--:-:-:-:5 @P0 RET", "IADD R13, R13, 0x10",
            "--:-:-:-:5 RET", "DONE:"]
    got = run_lanes(body, np.array([0, 1, 2, 3, 5]))
    assert got.tolist() == [0x101, 0x101, 0x111, 0x111, 0x111]


# ---- whole kernels --------------------------------------------------------------------------

SOURCE = r"""
extern "C" __global__ void divide(const float* a, const float* b, float* c, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] / b[i]; }
extern "C" __global__ void reciprocal(float* a, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = 1.0f / a[i]; }
extern "C" __global__ void root(const float* a, float* c, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = sqrtf(a[i]); }
"""

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, 1.1754944e-38, 3.4028235e38,
                     -3.4028235e38, 1.0, -1.0, 2.0 ** -126, 2.0 ** 127, 2.0 ** -149, 3.0, 7.0, 2.0 ** 126,
                     2.0 ** -127], F32)


def _inputs(n, rng):
    x = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(F32)  # every exponent
    x[n // 2:] = (rng.standard_normal(n - n // 2) * 10).astype(F32)  # ordinary values
    return x


def _same(got, want):
    got, want = np.asarray(got, F32), np.asarray(want, F32)
    ok = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    return int((~ok).sum())


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    require_nvrtc()
    from maxsim.host import Kernel
    path = tmp_path_factory.mktemp("ieee") / "ieee.cu"
    path.write_text(SOURCE)
    return {name: Kernel.load(path, kernel=name) for name in ("divide", "reciprocal", "root")}


@pytest.mark.parametrize("name", ["divide", "reciprocal", "root"])
def test_nvrtc_ieee_division_and_sqrt_are_bit_exact(kernels, name):
    """Every pair of the special values, and random bit patterns (every exponent, subnormals,
    NaN) and ordinary numbers: the kernel's result equals numpy's correctly rounded one bit for
    bit (NaN as any NaN: CUDA's canonical NaN is not numpy's)."""
    from maxsim.host import launch
    rng = np.random.default_rng(3)
    k = len(SPECIALS)
    a = np.concatenate([np.repeat(SPECIALS, k), _inputs(1200, rng)])
    b = np.concatenate([np.tile(SPECIALS, k), _inputs(1200, rng)[::-1]])
    n = len(a)
    grid = (n + 127) // 128
    with np.errstate(all="ignore"):
        if name == "divide":
            r = launch(kernels[name], grid, 128, params={"a": "a", "b": "b", "c": "c", "n": n},
                       buffers={"a": a, "b": b, "c": np.zeros(n, F32)}, timing=False, predict=False)
            got, want = r.outputs["c"], a / b
        elif name == "reciprocal":
            r = launch(kernels[name], grid, 128, params={"a": "a", "n": n}, buffers={"a": a.copy()},
                       timing=False, predict=False)
            got, want = r.outputs["a"], F32(1) / a
        else:
            r = launch(kernels[name], grid, 128, params={"a": "a", "c": "c", "n": n},
                       buffers={"a": a, "c": np.zeros(n, F32)}, timing=False, predict=False)
            got, want = r.outputs["c"], np.sqrt(a)
    assert _same(got.view(F32), want) == 0


def test_nvrtc_division_times_alike_in_both_cores(kernels, monkeypatch):
    """The division kernel with operands that take both paths, timed by each core: the same
    cycles and counts (the parity the cores are held to), and its values right."""
    from maxsim.host import launch
    rng = np.random.default_rng(5)
    n = 256
    a, b = _inputs(n, rng), _inputs(n, rng)[::-1].copy()
    out = {}
    for core in ("python", "compiled"):
        monkeypatch.setenv("MAXSIM_CORE", core)
        r = launch(kernels["divide"], 2, 128, params={"a": "a", "b": "b", "c": "c", "n": n},
                   buffers={"a": a, "b": b, "c": np.zeros(n, F32)}, predict=False, hazards="error")
        with np.errstate(all="ignore"):
            assert _same(r.outputs["c"].view(F32), a / b) == 0
        out[core] = {k: v for k, v in r.timing.items() if k not in ("sim_seconds", "warp_instructions_per_second")}
    assert out["python"] == out["compiled"] and out["python"]["sm_cycles"] > 0
