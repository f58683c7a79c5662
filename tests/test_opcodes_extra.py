"""The opcodes beyond SGEMM against numpy / Python, through SASS text -> parser -> launch."""

from __future__ import annotations

import numpy as np
import pytest

from maxsim.functional import GlobalMemory, launch
from sasskit import kernel, run_lanes

I = np.array([0, 1, 5, -3, 7, 0x7FFFFFFF, -0x80000000, -1, 0x12345678, 255], dtype=np.int64)
J = np.array([2, 5, 4, -1, 7, 3, -7, 0, -0x12345678, 256], dtype=np.int64)


def u(x):
    return (np.asarray(x, dtype=np.int64) & 0xFFFFFFFF).astype(np.uint32)


def test_imnmx():
    lt = ["ISETP.LT.AND P0, PT, RZ, 0x1, PT"]
    assert run_lanes(lt + ["IMNMX R13, R10, R11, P0"], I, J).view(np.int32).tolist() == np.minimum(I, J).tolist()
    assert run_lanes(lt + ["IMNMX R13, R10, R11, !P0"], I, J).view(np.int32).tolist() == np.maximum(I, J).tolist()
    assert run_lanes(lt + ["IMNMX.U32 R13, R10, R11, P0"], I, J).tolist() == np.minimum(u(I), u(J)).tolist()


def test_popc_flo_bfi():
    assert run_lanes("POPC R13, R10", I).tolist() == [bin(int(x)).count("1") for x in u(I)]
    want = [int(x).bit_length() - 1 if x else 0xFFFFFFFF for x in u(I)]
    assert run_lanes("FLO.U32 R13, R10", I).tolist() == want
    assert run_lanes("FLO.U32.SH R13, R10", I).tolist() == [31 - w if w != 0xFFFFFFFF else w for w in want]
    # BFI: insert the low 8 bits of a at bit 4 of c
    got = run_lanes("BFI R13, R10, 0x804, R11", I, J)
    assert got.tolist() == [(int(c) & ~0xFF0) | ((int(a) & 0xFF) << 4) for a, c in zip(u(I), u(J))]


def test_lea_and_lea_hi_form_a_64_bit_address():
    # {hi:lo} = base + (index << 2) with a 64-bit base {R11:R10} and a signed 32-bit index R12
    idx = np.array([0, 1, -1, 0x40000000, 12345], dtype=np.int64)
    lo = np.array([0xFFFFFFF0, 0x10, 0x20, 0x0, 0xFFFFFFFF], dtype=np.int64)
    hi = np.array([1, 2, 3, 4, 5], dtype=np.int64)
    body = ["SHR R5, R12, 0x1f", "LEA.CC R13, R12, R10, 0x2", "LEA.HI.X R14, R12, R11, R5, 0x2"]
    rlo, rhi = run_lanes(body, lo, hi, idx, outs=("R13", "R14"))
    full = [(int(a) + (int(h) << 32) + int(i) * 4) % (1 << 64) for a, h, i in zip(lo, hi, idx)]
    assert rlo.tolist() == [f & 0xFFFFFFFF for f in full] and rhi.tolist() == [f >> 32 for f in full]


def test_psetp_p2r_r2p():
    body = ["ISETP.NE.AND P0, PT, R10, RZ, PT", "ISETP.NE.AND P1, PT, R11, RZ, PT",
            "PSETP.XOR.AND P2, P3, P0, P1, PT", "P2R R13, PR, RZ, 0xc"]
    a, b = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    x = (a != 0) ^ (b != 0)
    assert run_lanes(body, a, b).tolist() == (x * 4 + (~x) * 8).tolist()
    got = run_lanes(["R2P PR, R10, 0x5", "SEL R13, R11, RZ, P2", "@P0 IADD R13, R13, 0x1"],
                    np.array([0, 1, 4, 5]), np.array([10, 10, 10, 10]))
    assert got.tolist() == [0, 1, 10, 11]


def test_fmnmx_fsetp():
    a = np.array([1.0, -2.0, np.nan, 3.0, np.nan, -0.0], np.float32)
    b = np.array([2.0, -3.0, 1.0, np.nan, np.nan, 5.0], np.float32)
    lt = ["ISETP.LT.AND P0, PT, RZ, 0x1, PT"]
    got = run_lanes(lt + ["FMNMX R13, R10, R11, P0"], a, b, dtype=np.float32)
    np.testing.assert_array_equal(got, np.fmin(a, b))
    got = run_lanes(lt + ["FMNMX R13, R10, -|R11|, !P0"], a, b, dtype=np.float32)
    np.testing.assert_array_equal(got, np.fmax(a, -np.abs(b)))
    for cmp, ref in (("LT", lambda x, y: x < y), ("GEU", lambda x, y: ~(x < y)), ("NE", lambda x, y: (x != y) & ~np.isnan(x) & ~np.isnan(y)),
                     ("NAN", lambda x, y: np.isnan(x) | np.isnan(y))):
        got = run_lanes([f"FSETP.{cmp}.AND P0, PT, R10, R11, PT", "SEL R13, RZ, 0x1, !P0"], a, b)
        assert got.astype(bool).tolist() == ref(a, b).tolist(), cmp


def test_fadd_fmul_modifiers():
    a = np.array([1.5, -2.25, 1e-39, 0.75, -0.5], np.float32)
    b = np.array([0.25, 4.0, 1e-39, 0.5, 3.0], np.float32)
    got = run_lanes("FADD.FTZ R13, -R10, |R11|", a, b, dtype=np.float32)
    ftz = lambda x: np.where(np.abs(x) < np.float32(1.1754944e-38), np.float32(0), x).astype(np.float32)
    np.testing.assert_array_equal(got, ftz(-ftz(a) + np.abs(ftz(b))))
    got = run_lanes("FMUL.SAT R13, R10, R11", a, b, dtype=np.float32)
    np.testing.assert_array_equal(got, np.clip(a * b, 0, 1))


def _ulps(got, exact):
    """Distance of fp32 ``got`` from the fp64 value ``exact`` in units of the last place of the
    fp32 value nearest to ``exact``."""
    near = np.asarray(exact, dtype=np.float32)
    ulp = np.spacing(np.abs(near)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / ulp


# The error bounds the PTX ISA documents for the approximations MUFU implements (PTX ISA,
# "Floating Point Instructions": rcp, rsqrt, sqrt, sin, cos, lg2, ex2 .approx.f32)
X = np.array([0.5, 1.0, 3.0, 7.25, 100.0, 1e-3, 12345.0, 5e37, 1.5e-38], np.float32)


def test_mufu_rcp_rsq_sqrt_within_documented_error():
    x = X.astype(np.float64)
    got = run_lanes("MUFU.RCP R13, R10", X, dtype=np.float32)
    assert np.all(_ulps(got, 1 / x) <= 1)  # "maximum ulp error is 1 across the full range"
    got = run_lanes("MUFU.RSQ R13, R10", X, dtype=np.float32).astype(np.float64)
    assert np.all(np.abs(got - 1 / np.sqrt(x)) <= 2.0 ** -22.9 * (1 / np.sqrt(x)))  # relative 2^-22.9
    got = run_lanes("MUFU.SQRT R13, R10", X, dtype=np.float32).astype(np.float64)
    assert np.all(np.abs(got - np.sqrt(x)) <= 2.0 ** -23 * np.sqrt(x))  # relative 2^-23
    # special values: 1/+0 = +inf, 1/-inf = -0, rsqrt(-1) = NaN
    sp = run_lanes("MUFU.RCP R13, R10", np.array([0.0, -np.inf], np.float32), dtype=np.float32)
    assert sp[0] == np.inf and sp[1] == 0 and np.signbit(sp[1])
    assert np.isnan(run_lanes("MUFU.RSQ R13, R10", np.array([-1.0], np.float32), dtype=np.float32)[0])
    # MUFU flushes subnormal results to zero (the model follows the .ftz forms): 1/3e38 = 3.3e-39
    assert run_lanes("MUFU.RCP R13, R10", np.array([3e38], np.float32), dtype=np.float32)[0] == 0


def test_mufu_ex2_lg2_within_documented_error():
    e = np.array([-3.5, 0.0, 1.25, 10.0, -126.0, 100.3], np.float32)
    got = run_lanes(["RRO.EX2 R10, R10", "MUFU.EX2 R13, R10"], e, dtype=np.float32)
    assert np.all(_ulps(got, np.exp2(e.astype(np.float64))) <= 2 + 0.5)  # 2 ulp from correctly rounded
    got = run_lanes("MUFU.LG2 R13, R10", X, dtype=np.float32).astype(np.float64)
    ref = np.log2(X.astype(np.float64))
    inside = (X > 0.5) & (X < 2)
    err = np.abs(got - ref)
    assert np.all(np.where(inside, err <= 2.0 ** -22, err <= 2.0 ** -22 * np.abs(ref)))


def test_mufu_sin_cos_within_documented_error():
    r = np.array([0.0, 0.5, 1.0, -2.0, 3.14159, 6.2, -6.28, 10.0, -250.0, 314.0], np.float32)
    small = np.abs(r) <= 2 * np.pi
    for fn, ref in (("SIN", np.sin), ("COS", np.cos)):
        got = run_lanes(["RRO.SINCOS R10, R10", f"MUFU.{fn} R13, R10"], r, dtype=np.float32)
        err = np.abs(got.astype(np.float64) - ref(r.astype(np.float64)))
        # absolute error 2^-20.5 in [-2pi, 2pi], 2^-14.7 in [-100pi, 100pi]
        assert np.all(np.where(small, err <= 2.0 ** -20.5, err <= 2.0 ** -14.7)), fn


def test_conversions_with_rounding_modes():
    n = np.array([16777217, -16777217, 5, 0x7FFFFFFF, -3], np.int64)
    for mode, want in (("RN", [16777216, -16777216, 5, 2147483648, -3]), ("RZ", [16777216, -16777216, 5, 2147483520, -3]),
                       ("RP", [16777218, -16777216, 5, 2147483648, -3]), ("RM", [16777216, -16777218, 5, 2147483520, -3])):
        got = run_lanes(f"I2F.F32.S32.{mode} R13, R10", n, dtype=np.float32)
        assert got.astype(np.float64).tolist() == want, mode
    assert run_lanes("I2F.F32.U32 R13, R10", [0xFFFFFFFF], dtype=np.float32).tolist() == [4294967296.0]
    f = np.array([1.5, -1.5, 2.5, np.nan, 3e10, -3e10, 0.49], np.float32)
    for mode, fn in (("TRUNC", np.trunc), ("FLOOR", np.floor), ("CEIL", np.ceil), ("ROUND", np.rint)):
        got = run_lanes(f"F2I.S32.F32.{mode} R13, R10", f).view(np.int32)
        want = np.where(np.isnan(f), 0, np.clip(fn(f.astype(np.float64)), -2**31, 2**31 - 1)).astype(np.int64)
        assert got.tolist() == want.tolist(), mode
    assert run_lanes("F2I.U32.F32.TRUNC R13, R10", [-5.0, 5e9, 7.9]).tolist() == [0, 0xFFFFFFFF, 7]
    got = run_lanes("F2F.F32.F32.FLOOR R13, R10", f, dtype=np.float32)
    np.testing.assert_array_equal(got, np.floor(f))


def test_shfl_modes_and_predicate():
    v = np.arange(64) * 3
    lane = np.arange(64) % 32
    src = np.arange(64) - lane
    got, p = run_lanes(["SHFL.BFLY P1, R13, R10, 0x4, 0x1f", "SEL R14, RZ, 0x1, !P1"], v, outs=("R13", "R14"))
    assert got.tolist() == v[src + (lane ^ 4)].tolist() and p.tolist() == [1] * 64
    got, p = run_lanes(["SHFL.UP P1, R13, R10, 0x3, RZ", "SEL R14, RZ, 0x1, !P1"], v, outs=("R13", "R14"))
    ok = lane >= 3
    assert got.tolist() == np.where(ok, v[src + lane - 3], v).tolist() and p.tolist() == ok.astype(int).tolist()
    got, p = run_lanes(["SHFL.DOWN P1, R13, R10, 0x1, 0x1f", "SEL R14, RZ, 0x1, !P1"], v, outs=("R13", "R14"))
    ok = lane + 1 <= 31
    assert got.tolist() == np.where(ok, v[src + np.minimum(lane + 1, 31)], v).tolist() and p.tolist() == ok.astype(int).tolist()
    # IDX within segments of 8 lanes (c = 0x1807: mask bits 12:8 = 0x18, clamp 7): lane 2 of each segment
    got = run_lanes("SHFL.IDX PT, R13, R10, 0x2, 0x1807", v)
    assert got.tolist() == v[src + (lane & 0x18) + 2].tolist()


def test_vote():
    p = np.array([1, 0, 1, 1] * 8 + [1] * 32)
    body = ["ISETP.NE.AND P0, PT, R10, RZ, PT", "VOTE.ALL R13, P1, P0", "SEL R14, RZ, 0x1, !P1",
            "VOTE.ANY RZ, P2, !P0", "SEL R15, RZ, 0x1, !P2"]
    ballot, vall, vany = run_lanes(body, p, n=64, outs=("R13", "R14", "R15"))
    w0 = sum(1 << k for k in range(32) if p[k])
    assert ballot.tolist() == [w0] * 32 + [0xFFFFFFFF] * 32
    assert vall.tolist() == [0] * 32 + [1] * 32 and vany.tolist() == [1] * 32 + [0] * 32


def _mem_kernel(body, n=64, words=256, init=None):
    k = kernel(*(["--:-:1:-:1 S2R R0, SR_TID.X", "01:-:-:-:6 SHL R1, R0, 0x2", "MOV R6, c[0x0][0x140]",
                  "MOV R7, RZ"] + body + ["--:-:-:-:5 EXIT"]), nparams=1, regs=32, shared=1024)
    mem = GlobalMemory()
    buf = mem.alloc(4 * words)
    mem.write(buf, np.zeros(words, np.uint32) if init is None else np.asarray(init, np.uint32))
    launch(k, 1, n, [buf], mem)
    return mem.read(buf, words, np.uint32)


def test_global_atomics_in_lane_order():
    # every lane adds tid+1 to word 0, takes the max of tid into word 1, and gets the old value of word 2
    # incremented with wrap at 40 (ATOM.INC); then stores what it got into word 64 + tid
    out = _mem_kernel(["IADD R2, R0, 0x1", "RED.E.ADD [R6], R2", "RED.E.MAX.S32 [R6+0x4], R0",
                       "ATOM.E.INC R3, [R6+0x8], 0x27", "IADD R8, R6, R1", "STG.E [R8+0x100], R3",
                       "ATOM.E.CAS R12, [R6+0xc], RZ, R2", "STG.E [R8+0x200], R12"])
    assert out[0] == sum(range(1, 65)) and out[1] == 63
    inc = [t % 40 for t in range(64)]  # lane order: lane t finds t increments (wrapping at 40)
    assert out[64:128].tolist() == inc and out[2] == 64 % 40
    # CAS: the first lane (tid 0) finds 0 and swaps in 1; every later lane finds 1
    assert out[128:192].tolist() == [0] + [1] * 63 and out[3] == 1


def test_shared_atomics_histogram():
    data = (np.arange(64) * 7) % 5
    out = _mem_kernel(["IADD R8, R6, R1", "LDG.E R2, [R8+0x100]", "SHL R2, R2, 0x2",
                       "ATOMS.ADD R3, [R2], 0x1", "--:-:-:-:5 BAR.SYNC 0x0",
                       "ISETP.GE.AND P0, PT, R0, 0x5, PT", "@P0 EXIT", "LDS R4, [R1]", "STG.E [R8], R4"],
                      init=np.concatenate([np.zeros(64), data, np.zeros(128)]))
    assert out[:5].tolist() == np.bincount(data, minlength=5).tolist()


def test_subword_and_wide_global_access():
    raw = np.arange(256, dtype=np.uint8).view(np.uint32).copy()  # bytes 0..255
    # (.E addresses are register pairs: R9 and R11 hold the zero high words)
    out = _mem_kernel(["IADD R8, R6, R0", "MOV R9, RZ", "LDG.E.S8 R2, [R8+0x80]", "LDG.E.U8 R3, [R8+0x80]",
                       "IADD R10, R6, R1", "MOV R11, RZ", "STG.E [R10+0x100], R2", "STG.E [R10+0x200], R3",
                       "LDG.E.64 R4, [R6]", "STG.E.U16 [R6+0x300], R4", "STG.E.U8 [R6+0x302], R5"],
                      init=np.concatenate([raw, np.zeros(192, np.uint32)]))
    b = np.arange(128, 192)
    assert out[64:128].tolist() == u(b.astype(np.int8).astype(np.int64)).tolist()
    assert out[128:192].tolist() == b.tolist()
    assert out[192] == (0x0100 | (4 << 16))  # low 16 bits of word 0, then byte 0 of word 1 at +2


def test_64_bit_address_beyond_32_bits_is_an_error():
    from maxsim.errors import SimulationError
    with pytest.raises(SimulationError, match="beyond the model's 32-bit global address space"):
        _mem_kernel(["MOV32I R7, 0x1", "LDG.E R2, [R6]"])


def test_unknown_opcode_is_refused_by_name_and_line():
    from maxsim.errors import SassParseError
    # an opcode of maxas's grammar that maxsim does not model is named with what it is
    with pytest.raises(SassParseError, match=r"test.sass:\d+:\d+: opcode HADD2 is not modelled: fp16 arithmetic"):
        kernel("HADD2 R0, R1, R2", "EXIT")
    with pytest.raises(SassParseError, match=r"test.sass:\d+:\d+: unknown opcode 'FOO'"):
        kernel("FOO R0, R1, R2", "EXIT")


@pytest.mark.parametrize("op,typ", [("ADD", "U32"), ("ADD", "F32"), ("MIN", "S32"), ("MAX", "U32"), ("INC", "U32"),
                                    ("DEC", "U32"), ("AND", "U32"), ("OR", "U32"), ("XOR", "U32"), ("EXCH", "U32"),
                                    ("CAS", "U32")])
@pytest.mark.parametrize("want_old", [True, False])
def test_vectorised_atomics_equal_one_lane_after_the_other(op, typ, want_old):
    from maxsim.functional.atomics import apply_atomics
    rng = np.random.default_rng(3)
    n = 300
    idx = rng.integers(0, 7, size=n)
    if typ == "F32":
        v1 = rng.standard_normal(n).astype(np.float32).view(np.uint32)
        init = rng.standard_normal(8).astype(np.float32).view(np.uint32)
    else:
        v1 = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
        v1[::3] = rng.integers(0, 4, size=v1[::3].size)  # small values: CAS matches, INC/DEC wrap
        init = rng.integers(0, 6, size=8).astype(np.uint32)
    v2 = rng.integers(0, 9, size=n).astype(np.uint32)
    store = init.copy()
    got = apply_atomics(store, idx, op, typ, v1, v2, want_old)
    # the reference: Python integers / fp32 scalars, lane by lane
    ref = [int(x) for x in init]
    found = []
    for k, a, b in zip(idx.tolist(), v1.tolist(), v2.tolist()):
        o = ref[k]
        found.append(o)
        s = lambda x: x - (1 << 32) if x >> 31 else x
        new = {"ADD": (o + a) & 0xFFFFFFFF, "MIN": o if s(o) <= s(a) else a, "MAX": max(o, a),
               "INC": 0 if o >= a else o + 1, "DEC": a if o == 0 or o > a else o - 1, "AND": o & a,
               "OR": o | a, "XOR": o ^ a, "EXCH": a, "CAS": b if o == a else o}[op]
        if typ == "F32":
            new = int((np.float32(np.uint32(o).view(np.float32)) + np.uint32(a).view(np.float32)).view(np.uint32))
        ref[k] = new
    assert store.tolist() == ref
    if want_old:
        assert got.tolist() == found


def test_xmad_signed_halves():
    a = np.array([0x0000FFFF, 0x00008000, 0x12347FFF, 0xFFFF0002], np.int64)
    b = np.array([0x0000FFFF, 0x00000002, 0x0000FFFE, 0x00000003], np.int64)
    got = run_lanes("XMAD.S16.S16 R13, R10, R11, RZ", a, b)
    s16 = lambda x: ((x & 0xFFFF) ^ 0x8000) - 0x8000
    assert got.tolist() == [(s16(x) * s16(y)) & 0xFFFFFFFF for x, y in zip(a, b)]
    got = run_lanes("XMAD.S16.U16 R13, R10.H1, R11, R12", a, b, [7, 7, 7, 7])
    assert got.tolist() == [(s16(x >> 16) * (y & 0xFFFF) + 7) & 0xFFFFFFFF for x, y in zip(a, b)]


def test_maxas_xmad_lo2_macros_multiply():
    # the maxas source macros XMAD.LO2 (16-bit b) and XMAD.LO2C (16-bit a, 32-bit constant b)
    from maxsim.asm import assemble_text
    src = """\
# Kernel: lo2
# Arch: sm_52
<CONSTANT_MAPPING>
    out : c[0x0][0x140]
</CONSTANT_MAPPING>
<REGISTER_MAPPING>
    0-9 : tid, a, d, e, addr, k
</REGISTER_MAPPING>
S2R tid, SR_TID.X;
IADD a, tid, 0x12345;
XMAD.LO2 d, a, 0x2f1, tid;
MOV32I k, 0x9abcd;
XMAD.LO2C e, tid, c[0x0][0x144], k;
SHL addr, tid, 3;
IADD addr, addr, out;
STG.64 [addr], d;
EXIT;
"""
    asm = assemble_text(src, "lo2.sass")
    ops = [i.full_opcode for i in asm.kernel.instructions]
    assert ops.count("XMAD") == 2 and ops.count("XMAD.PSL") == 2
    mem = GlobalMemory()
    out = mem.alloc(8 * 64)
    launch(asm.kernel, 1, 64, [out, 0x87654321], mem)
    got = mem.read(out, 128, np.uint32).reshape(64, 2)
    t = np.arange(64, dtype=np.int64)
    assert got[:, 0].tolist() == (((t + 0x12345) * 0x2F1 + t) & 0xFFFFFFFF).tolist()
    assert got[:, 1].tolist() == ((t * 0x87654321 + 0x9ABCD) & 0xFFFFFFFF).tolist()


# ---- end to end: the opcodes of reductions and histograms, functional and timed ----------------

# 128 threads per CTA, one byte each: a shared histogram of (byte & 7) with ATOMS, a warp sum by
# SHFL.BFLY added into a global total with RED, a ballot of bytes > 127 OR-ed into a global word
# per CTA with ATOM, the histogram written out by the first 8 threads after a barrier.
# Params: bytes, totals (1 word), ballots (1 word per CTA... 4 warps OR-ed), histograms (8 per CTA)
HISTOGRAM = [
    "--:-:1:-:1 S2R R0, SR_TID.X",
    "--:-:2:-:2 S2R R1, SR_CTAID.X",
    "03:-:-:-:6 ISCADD R2, R1, R0, 0x7",             # global thread index
    "MOV R3, RZ",
    "IADD R4, R2, c[0x0][0x140]",
    "--:-:1:-:2 LDG.E.U8 R5, [R4]",                    # R4/R5 pair: the high word R5 is 0 here
    "SHL R6, R0, 0x2",
    "STS [R6], RZ",                                     # clear the bins (threads 0-7 matter)
    "01:-:-:-:5 BAR.SYNC 0x0",
    "LOP.AND R7, R5, 0x7",
    "SHL R7, R7, 0x2",
    "--:-:2:-:2 ATOMS.ADD R8, [R7], 0x1",
    "MOV R9, R5",
    "--:-:3:-:2 SHFL.BFLY PT, R10, R9, 0x10, 0x1f",
    "04:-:-:-:6 IADD R9, R9, R10",
    "--:-:3:-:2 SHFL.BFLY PT, R10, R9, 0x8, 0x1f",
    "04:-:-:-:6 IADD R9, R9, R10",
    "--:-:3:-:2 SHFL.BFLY PT, R10, R9, 0x4, 0x1f",
    "04:-:-:-:6 IADD R9, R9, R10",
    "--:-:3:-:2 SHFL.BFLY PT, R10, R9, 0x2, 0x1f",
    "04:-:-:-:6 IADD R9, R9, R10",
    "--:-:3:-:2 SHFL.BFLY PT, R10, R9, 0x1, 0x1f",
    "04:-:-:-:6 IADD R9, R9, R10",
    "--:-:-:-:d ISETP.GT.U32.AND P0, PT, R5, 0x7f, PT",
    "VOTE.ANY R11, PT, P0",
    "LOP.AND R12, R0, 0x1f",
    "--:-:-:-:d ISETP.EQ.AND P1, PT, R12, RZ, PT",
    "MOV R14, c[0x0][0x144]",
    "MOV R15, RZ",
    "@P1 RED.E.ADD [R14], R9",
    "SHL R16, R1, 0x2",
    "IADD R16, R16, c[0x0][0x148]",
    "MOV R17, RZ",
    "--:-:4:-:2 @P1 ATOM.E.OR R18, [R16], R11",
    "0a:-:-:-:5 BAR.SYNC 0x0",
    "--:-:-:-:d ISETP.GE.AND P2, PT, R0, 0x8, PT",
    "--:-:-:-:5 @P2 EXIT",
    "--:-:1:-:2 LDS R19, [R6]",
    "ISCADD R20, R1, R0, 0x3",
    "SHL R20, R20, 0x2",
    "IADD R20, R20, c[0x0][0x14c]",
    "01:-:-:-:1 STG [R20], R19",
    "--:-:-:-:5 EXIT",
]


def histogram_problem(ctas=3, seed=11):
    data = np.random.default_rng(seed).integers(0, 256, size=128 * ctas).astype(np.uint8)
    from sasskit import kernel as build
    k = build(*HISTOGRAM, nparams=4, regs=32, shared=512)
    mem = GlobalMemory()
    src = mem.alloc(data.size)
    mem.write(src, data)
    total, ballots, hist = mem.alloc(4), mem.alloc(4 * ctas), mem.alloc(4 * 8 * ctas)
    return k, data, mem, [src, total, ballots, hist], (total, ballots, hist)


def check_histogram(data, mem, ptrs, ctas=3):
    total, ballots, hist = ptrs
    assert int(mem.read(total, 1, np.uint32)[0]) == int(data.astype(np.int64).sum())
    per_cta = data.reshape(ctas, 128)
    want_hist = [np.bincount(c & 7, minlength=8).tolist() for c in per_cta]
    assert mem.read(hist, 8 * ctas, np.uint32).reshape(ctas, 8).tolist() == want_hist
    want_ballot = []
    for c in per_cta:
        word = 0
        for w in range(4):
            word |= sum(1 << k for k in range(32) if c[32 * w + k] > 127)
        want_ballot.append(word)
    assert mem.read(ballots, ctas, np.uint32).tolist() == want_ballot


def test_histogram_reduction_kernel_against_numpy():
    k, data, mem, params, ptrs = histogram_problem()
    launch(k, 3, 128, params, mem)
    check_histogram(data, mem, ptrs)


def test_histogram_reduction_kernel_timed():
    from maxsim.timing.run import simulate
    k, data, mem, params, ptrs = histogram_problem()
    res, sm = simulate(k, 3, 128, params, mem)
    check_histogram(data, mem, ptrs)
    d = sm.stats.to_dict()
    assert d["hazards"] == 0
    # per warp: 5 SHFL + 1 ATOMS + 1 STS shared requests, and the LDS of the 8 threads' warp
    assert d["shared_requests"] == 3 * (4 * 7 + 1)
    assert d["opcode_counts"]["SHFL.BFLY"] == 3 * 4 * 5


def test_assembler_sets_barriers_for_the_new_variable_latency_results():
    # maxsim asm fills the control codes: MUFU, I2F, POPC, SHFL and LDC results get write
    # barriers their consumers wait on; the timed run has no hazard
    from maxsim.asm import assemble_text
    from maxsim.timing.run import simulate
    src = """\
# Kernel: xu
# Arch: sm_52
<REGISTER_MAPPING>
    0-15 ~ tid, x, r, f, p, s, k, addr, y
</REGISTER_MAPPING>
S2R tid, SR_TID.X;
IADD x, tid, 0x1;
I2F.F32.S32 f, x;
MUFU.RCP r, f;
POPC p, x;
SHFL.BFLY PT, s, x, 0x1, 0x1f;
LDC k, c[0x0][0x140];
FMUL y, r, f;
IADD p, p, s;
IADD p, p, k;
SHL addr, tid, 3;
IADD addr, addr, c[0x0][0x144];
STG [addr], y;
STG [addr+4], p;
EXIT;
"""
    asm = assemble_text(src, "xu.sass")
    assert asm.hazards == ()
    mem = GlobalMemory()
    out = mem.alloc(8 * 64)
    res, sm = simulate(asm.kernel, 1, 64, [100, out], mem)
    assert sm.stats.to_dict()["hazards"] == 0
    got = mem.read(out, 128, np.uint32).reshape(64, 2)
    x = np.arange(64) + 1
    f = x.astype(np.float32)
    np.testing.assert_allclose(got[:, 0].view(np.float32), (np.float32(1) / f) * f, rtol=2 ** -22)
    pop = np.array([bin(int(v)).count("1") for v in x])
    assert got[:, 1].tolist() == (pop + x[np.arange(64) ^ 1] + 100).tolist()
