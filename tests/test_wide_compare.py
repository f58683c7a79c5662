"""64-bit integer compares, subtractions and negations as ptxas writes them for sm_52: the low
words through an IADD that sets the condition code, the high words through ISETP.X / ISET.X /
IADD.X that read it. Checked against numpy's int64 / uint64 arithmetic on edge and random values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sasskit import run_lanes

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

M64 = (1 << 64) - 1
_EDGE = [0, 1, 2, 0xFFFFFFFF, 1 << 32, (1 << 32) + 1, 0x7FFFFFFF, 0x80000000, (1 << 63) - 1, 1 << 63,
         (1 << 63) + 1, M64, M64 - 1, 0xFFFFFFFF00000000, 0x123456789ABCDEF0, 0x1234567800000000]


def _pairs():
    rng = np.random.default_rng(35)
    a, b = zip(*itertools.product(_EDGE, repeat=2))
    r = rng.integers(0, 1 << 64, size=(2, 200), dtype=np.uint64)
    same_hi = (r[0] & np.uint64(0xFFFFFFFF00000000)) | (r[1] & np.uint64(0xFFFFFFFF))  # high words equal
    a = np.array(list(a) + list(r[0]) + list(r[0]), dtype=np.uint64)
    b = np.array(list(b) + list(r[1]) + list(same_hi), dtype=np.uint64)
    return a, b


def _words(x):
    return (x & np.uint64(0xFFFFFFFF)).astype(np.uint32), (x >> np.uint64(32)).astype(np.uint32)


def _wide(lo, hi):
    return (np.asarray(hi, dtype=np.uint64) << np.uint64(32)) | np.asarray(lo, dtype=np.uint64)


_NP = {"LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal, "EQ": np.equal,
       "NE": np.not_equal}


@pytest.mark.parametrize("signed", [True, False])
@pytest.mark.parametrize("cmp", sorted(_NP))
def test_wide_compare_is_the_64_bit_compare(cmp, signed):
    """IADD RZ.CC, a_lo, -b_lo; ISETP.cmp[.U32].X.AND P0, PT, a_hi, b_hi, PT (and ISET.X, the same
    compare as a register): the compare of the 64-bit values, signed or unsigned."""
    a, b = _pairs()
    (alo, ahi), (blo, bhi) = _words(a), _words(b)
    t = "" if signed else ".U32"
    body = ["IADD RZ.CC, R10, -R12", f"ISETP.{cmp}{t}.X.AND P0, PT, R11, R13, PT",
            f"ISET.{cmp}{t}.X.AND R16, R11, R13, PT", "MOV32I R15, 0x1", "SEL R14, R15, RZ, P0"]
    p, r = run_lanes(body, alo, ahi, blo, bhi, outs=("R14", "R16"))
    x, y = (a.view(np.int64), b.view(np.int64)) if signed else (a, b)
    want = _NP[cmp](x, y)
    assert p.tolist() == want.astype(np.uint32).tolist()
    assert r.tolist() == np.where(want, np.uint32(0xFFFFFFFF), np.uint32(0)).tolist()


def test_wide_compare_against_constants_and_zero():
    """ptxas's forms: the low word against a negated constant (a loop bound n, here with a low word
    of 0, the carry's edge), and a != 0 as IADD RZ.CC, -RZ, lo; ISETP.NE.X hi, RZ."""
    a, _ = _pairs()
    lo, hi = _words(a)
    n = (5 << 32)  # low word 0: a - n carries out for every a_lo
    body = ["IADD RZ.CC, R10, -c[0x0][0x140]", "ISETP.GE.X.AND P0, PT, R11, c[0x0][0x144], PT",
            "IADD RZ.CC, -RZ, R10", "ISETP.NE.X.AND P1, PT, R11, RZ, PT",
            "MOV32I R15, 0x1", "SEL R14, R15, RZ, P0", "SEL R16, R15, RZ, P1"]
    ge, nz = run_lanes(body, lo, hi, scalars=[n & 0xFFFFFFFF, n >> 32], outs=("R14", "R16"))
    assert ge.tolist() == (a.view(np.int64) >= n).astype(np.uint32).tolist()
    assert nz.tolist() == (a != 0).astype(np.uint32).tolist()


def test_wide_subtraction_and_negation():
    """IADD lo.CC, a_lo, -b_lo; IADD.X hi, a_hi, -b_hi is a - b, and IADD lo.CC, RZ, -a_lo;
    IADD.X hi, RZ, -a_hi is -a, modulo 2^64: a negated source with a carry is its complement
    plus the carry in (a - b = a + ~b + 1)."""
    a, b = _pairs()
    (alo, ahi), (blo, bhi) = _words(a), _words(b)
    body = ["IADD R14.CC, R10, -R12", "IADD.X R15, R11, -R13", "IADD R16.CC, RZ, -R10", "IADD.X R17, RZ, -R11"]
    dlo, dhi, nlo, nhi = run_lanes(body, alo, ahi, blo, bhi, outs=("R14", "R15", "R16", "R17"))
    assert _wide(dlo, dhi).tolist() == [(int(x) - int(y)) & M64 for x, y in zip(a, b)]
    assert _wide(nlo, nhi).tolist() == [-int(x) & M64 for x in a]


def test_three_input_wide_sums_keep_a_carry_of_two():
    """IADD3 lo.CC / IADD3.X hi: ptxas's n - i - 1 (IADD3 lo.CC, -i_lo, n_lo, -1; IADD3.X hi, -i_hi,
    n_hi, -1), whose low words carry out 2 whenever n_lo > i_lo, and a + b + c of three 64-bit
    values: the sums modulo 2^64."""
    a, b = _pairs()
    c = b[::-1].copy()
    (alo, ahi), (blo, bhi) = _words(a), _words(b)
    body = ["MOV32I R20, 0xffffffff", "IADD3 R14.CC, -R10, R12, R20", "IADD3.X R15, -R11, R13, R20"]
    lo, hi = run_lanes(body, alo, ahi, blo, bhi, outs=("R14", "R15"))
    assert _wide(lo, hi).tolist() == [(int(y) - int(x) - 1) & M64 for x, y in zip(a, b)]
    (clo, chi) = _words(c)
    body = ["IADD3 R14.CC, R10, c[0x0][0x140], R12", "IADD3.X R15, R11, c[0x0][0x144], R13"]
    k = int(c[7])
    lo, hi = run_lanes(body, alo, ahi, blo, bhi, scalars=[k & 0xFFFFFFFF, k >> 32], outs=("R14", "R15"))
    assert _wide(lo, hi).tolist() == [(int(x) + int(y) + k) & M64 for x, y in zip(a, b)]


_ROUND = {"TRUNC": np.trunc, "FLOOR": np.floor, "CEIL": np.ceil, "ROUND": np.rint}


def _to_int64(r, signed):
    """Rounded float64 values to 64-bit integers (bits as Python ints), saturated, NaN 0."""
    lo, hi = (-(1 << 63), (1 << 63) - 1) if signed else (0, (1 << 64) - 1)
    return [0 if np.isnan(v) else min(max(int(v) if np.isfinite(v) else (hi if v > 0 else lo), lo), hi) & M64
            for v in r]


@pytest.mark.parametrize("mode", sorted(_ROUND))
@pytest.mark.parametrize("dst", ["S64", "U64"])
@pytest.mark.parametrize("src", ["F32", "F64"])
def test_f2i_to_64_bit_integers(src, dst, mode):
    """F2I.S64 / .U64 from F32 and F64: rounded by the mode, saturated to the type's range (NaN 0),
    the result's low word in d and its high word in d + 1 (PTX cvt.rzi/rmi/rpi/rni.s64/.u64)."""
    rng = np.random.default_rng(64)
    x = np.concatenate([[0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 2.0 ** 31, 2.0 ** 32 + 0.5, 2.0 ** 52 + 1,
                         2.0 ** 63, -(2.0 ** 63), 2.0 ** 64, 1e30, -1e30, np.inf, -np.inf, np.nan,
                         9.2e18, 1.8e19],
                        rng.standard_normal(60) * 10.0 ** rng.integers(0, 19, 60)])
    if src == "F32":
        x = x.astype(np.float32)
        words = x.view(np.uint32), None
        body = [f"F2I.{dst}.F32.{mode} R14, R10"]
    else:
        w = x.view(np.uint64)
        words = (w & np.uint64(0xFFFFFFFF)).astype(np.uint32), (w >> np.uint64(32)).astype(np.uint32)
        body = [f"F2I.{dst}.F64.{mode} R14, R10"]
    lo, hi = run_lanes(body, *words, outs=("R14", "R15"))
    with np.errstate(invalid="ignore"):
        want = _to_int64(_ROUND[mode](x.astype(np.float64)), dst == "S64")
    assert _wide(lo, hi).tolist() == want


@pytest.mark.parametrize("x", ["", ".X"])
def test_wide_compare_times_as_a_compare(x):
    """ISETP.X is ISETP's timing class: a guard it writes is readable latency.predicate cycles after
    its issue (a hazard one cycle sooner), the same in the reference and the compiled timing core;
    the issue times are hand-computed from the stalls."""
    from test_core_parity import twin_simulate
    from maxsim.arch.config import load_config
    from maxsim.validate import kernels as K
    lat = load_config().latency
    for pstall, hazards in ((lat.predicate, 0), (lat.predicate - 1, 1)):
        src = "\n".join([f"--:-:-:-:{K.s(lat.alu)} IADD RZ.CC, R1, -R2;",
                         f"--:-:-:-:{K.s(pstall)} ISETP.GE{x}.AND P0, PT, R3, R4, PT;",
                         "--:-:-:-:1 @P0 IADD R5, R5, 0x1;", K.exit_line(lat.exit)])
        _, sm = twin_simulate(K.kernel(src), 1, 32, log=True)
        assert [t for t, _ in K.issues(sm)] == [0, lat.alu, lat.alu + pstall, lat.alu + pstall + 1]
        assert sm.stats.to_dict()["hazards"] == hazards


@pytest.mark.parametrize("signed", [True, False])
@pytest.mark.parametrize("take_min", [True, False])
def test_wide_min_max_is_the_64_bit_min_max(signed, take_min):
    """IMNMX[.U32].XHI d_hi.CC, a_hi, b_hi, p then IMNMX.U32.XLO d_lo, a_lo, b_lo, p (ptxas's
    long long / unsigned long long min and max): numpy's 64-bit minimum / maximum, high words
    equal or not."""
    a, b = _pairs()
    (alo, ahi), (blo, bhi) = _words(a), _words(b)
    t, p = ("" if signed else ".U32"), ("PT" if take_min else "!PT")
    body = [f"IMNMX{t}.XHI R15.CC, R11, R13, {p}", f"IMNMX.U32.XLO R14, R10, R12, {p}"]
    lo, hi = run_lanes(body, alo, ahi, blo, bhi, outs=("R14", "R15"))
    x, y = (a.view(np.int64), b.view(np.int64)) if signed else (a, b)
    want = (np.minimum if take_min else np.maximum)(x, y).view(np.uint64)
    assert _wide(lo, hi).tolist() == want.tolist()


def test_the_low_half_of_a_wide_min_max_needs_the_high_halfs_flags():
    """Without the high half's flags (an IADD.CC before the low half instead) the low half is not
    the 64-bit answer: the flags carry the decision."""
    a = np.array([0x0000000100000000, 0x00000002FFFFFFFF], np.uint64)
    b = np.array([0x00000000FFFFFFFF, 0x0000000300000000], np.uint64)
    (alo, ahi), (blo, bhi) = _words(a), _words(b)
    good = ["IMNMX.U32.XHI R15.CC, R11, R13, PT", "IMNMX.U32.XLO R14, R10, R12, PT"]
    lo, hi = run_lanes(good, alo, ahi, blo, bhi, outs=("R14", "R15"))
    assert _wide(lo, hi).tolist() == [0x00000000FFFFFFFF, 0x00000002FFFFFFFF]
    bad = ["IMNMX.U32.XHI R15, R11, R13, PT", "IADD RZ.CC, RZ, RZ", "IMNMX.U32.XLO R14, R10, R12, PT"]
    lo, hi = run_lanes(bad, alo, ahi, blo, bhi, outs=("R14", "R15"))
    assert lo.tolist() == [0, 0]  # the zero flag of the IADD: the plain min of the low words


CUDA_MIN_MAX = r"""
extern "C" __global__ void minmax64(const long long *a, const long long *b, long long *lo, long long *hi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { lo[i] = min(a[i], b[i]); hi[i] = max(a[i], b[i]); }
}
extern "C" __global__ void minmaxu64(const unsigned long long *a, const unsigned long long *b,
                                    unsigned long long *lo, unsigned long long *hi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { lo[i] = min(a[i], b[i]); hi[i] = max(a[i], b[i]); }
}
// a window sum with a 64-bit bound: ptxas clamps the trip count with a 64-bit max (IMNMX.XHI.CC)
extern "C" __global__ void window64(const int *in, int *out, long long w, int n, int len)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= n) return;
    int s = 0;
    for (long long k = x; k < x + len && k < w; k++) s += in[k];
    out[x] = s;
}
"""


@pytest.fixture(scope="module")
def cuda_min_max(tmp_path_factory):
    from nvidia_tools import require_nvrtc
    require_nvrtc()
    path = tmp_path_factory.mktemp("minmax64") / "minmax64.cu"
    path.write_text(CUDA_MIN_MAX)
    return path


@pytest.mark.parametrize("n", [5, 70, 300])
@pytest.mark.parametrize("name,dt", [("minmax64", np.int64), ("minmaxu64", np.uint64)])
def test_cuda_c_long_long_min_max(cuda_min_max, name, dt, n):
    from maxsim.host import Kernel, launch
    k = Kernel.load(cuda_min_max, kernel=name)
    assert any(i.opcode == "IMNMX" and "XHI" in i.mods and "CC" in i.mods for i in k.code.instructions)
    rng = np.random.default_rng(n)
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    b = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    b[::3] = a[::3] ^ dt(0x5A5A5A5A)  # the same high words
    b[1::5] = a[1::5]
    r = launch(k, (n + 63) // 64, 64, params={"a": "a", "b": "b", "lo": "lo", "hi": "hi", "n": n},
               buffers={"a": a, "b": b, "lo": np.zeros(n, dt), "hi": np.zeros(n, dt)}, timing=False, predict=False)
    assert np.array_equal(r.outputs["lo"].view(dt), np.minimum(a, b))
    assert np.array_equal(r.outputs["hi"].view(dt), np.maximum(a, b))


@pytest.mark.parametrize("n,w,length", [(40, 37, 5), (100, 120, 9), (200, 150, 1)])
def test_cuda_c_window_sum_with_a_64_bit_bound(cuda_min_max, n, w, length):
    from maxsim.host import Kernel, launch
    k = Kernel.load(cuda_min_max, kernel="window64")
    src = np.arange(1, n + length + 1, dtype=np.int32) * 3
    r = launch(k, (n + 63) // 64, 64, params={"in": "in", "out": "out", "w": w, "n": n, "len": length},
               buffers={"in": src, "out": np.zeros(n, np.int32)}, timing=False, predict=False)
    want = [int(src[x:max(x, min(x + length, w))].sum()) for x in range(n)]
    assert r.outputs["out"].view(np.int32).tolist() == want


@pytest.mark.parametrize("plain,with_cc", [
    ("ISET.LT.AND R5, R1, R2, PT;", "ISET.LT.AND R5.CC, R1, R2, PT;"),
    ("IMNMX.XHI R5, R1, R2, PT;", "IMNMX.XHI R5.CC, R1, R2, PT;"),
])
def test_condition_code_forms_time_as_their_plain_forms(plain, with_cc):
    """ISET.CC and IMNMX.XHI.CC are their opcode's timing class: a back-to-back run of eight issues
    as the plain form's, one every 1 / pipes.alu_half cycles (the half-rate pipe), the same in the
    reference and the compiled timing core."""
    from test_core_parity import twin_simulate
    from maxsim.arch.config import load_config
    from maxsim.validate import kernels as K
    every = 1 / load_config().pipes.alu_half
    times = []
    for text in (plain, with_cc):
        src = "\n".join([f"--:-:-:-:1 {text}"] * 8 + [K.exit_line()])
        _, sm = twin_simulate(K.kernel(src), 1, 32, log=True)
        times.append([t for t, _ in K.issues(sm)])
    assert times[0] == times[1]
    assert times[1][:8] == [k * every for k in range(8)]
