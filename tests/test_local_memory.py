"""Local memory (LDL / STL): each thread's window below the stack pointer c[0x0][0x20], values
kept per thread, traced as global memory in the per-warp interleaved layout (l1tex.caches_local)."""

from __future__ import annotations

import numpy as np
import pytest

from maxsim.errors import ConfigError, SimulationError
from maxsim.functional import GlobalMemory, launch
from maxsim.functional.memops import LOCAL_BASE
from maxsim.functional.trace import TraceRecorder
from maxsim.sass import parse_text
from sasskit import line, run_lanes
from nvidia_tools import require_nvrtc


def _local_kernel(body, local=64, regs=32):
    """A kernel of ``body`` lines with a LocalSize header and two pointer parameters."""
    head = ["# Kernel: loc", "# Arch: sm_52", "# InsCnt: 0", f"# RegCnt: {regs}", "# SharedSize: 0", "# BarCnt: 0",
            f"# LocalSize: {local}", "# Params(2):", "#\tord:addr:size:align", "#\t0:0x140:4:0", "#\t1:0x144:4:0",
            "#", "# Instructions:", ""]
    return parse_text("\n".join(head + [line(b) for b in body]) + "\n", filename="loc.sass")


def test_stack_pointer_and_a_dynamically_indexed_array():
    """R1 = c[0x0][0x20] - 64: the frame; each thread stores tid * k at word k of its frame (k =
    0..15), then reads back word (tid % 16): tid * (tid % 16), for every thread of two CTAs."""
    body = ["MOV R1, c[0x0][0x20]", "IADD32I R1, R1, -0x40",
            "--:-:1:-:1 S2R R0, SR_TID.X", "--:-:2:-:1 S2R R9, SR_CTAID.X", "03:-:-:-:6 ISCADD R0, R9, R0, 0x6",
            "MOV R2, RZ", "MOV R3, R1",
            "LOOP:", "XMAD R4, R0, R2, RZ", "STL [R3], R4", "IADD32I R3, R3, 0x4", "IADD32I R2, R2, 0x1",
            "ISETP.LT.AND P0, PT, R2, 0x10, PT", "--:-:-:-:5 @P0 BRA LOOP",
            "LOP32I.AND R5, R0, 0xf", "ISCADD R5, R5, R1, 0x2", "--:-:1:-:1 LDL R6, [R5]",
            "ISCADD R7, R0, c[0x0][0x140], 0x2", "01:-:-:-:6 STG [R7], R6", "--:-:-:-:5 EXIT"]
    k = _local_kernel(body)
    assert k.local_size == 64
    mem = GlobalMemory()
    out = mem.alloc(4 * 128)
    launch(k, 2, 64, [out, 0], mem)
    tid = np.arange(128, dtype=np.uint32)
    np.testing.assert_array_equal(mem.read(out, 128, np.uint32), tid * (tid % 16))


def test_wide_and_narrow_local_accesses():
    """STL.128 / LDL.64 / STL.U8 / LDL.S8 / LDL.U16 against numpy's view of the same bytes (the
    frame pointer in R30: the harness keeps its addresses in R1)."""
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 2 ** 32, 64, dtype=np.uint64).astype(np.uint32), rng.integers(0, 2 ** 32, 64, dtype=np.uint64).astype(np.uint32)
    body = ["MOV R30, c[0x0][0x20]", "IADD32I R30, R30, -0x20",
            "MOV R20, R10", "MOV R21, R11", "MOV R22, R11", "MOV R23, R10",
            "STL.128 [R30], R20",          # words: a, b, b, a
            "STL.U8 [R30+0x11], R10",       # byte 17: a's low byte
            "--:-:1:-:1 LDL.64 R24, [R30+0x8]",   # b, a
            "--:-:2:-:1 LDL.S8 R26, [R30+0x11]",
            "--:-:3:-:1 LDL.U16 R27, [R30+0x2]",  # a's high half
            "07:-:-:-:6 IADD R13, R24, R26", "IADD R12, R25, R27"]
    text = "\n".join(body)
    got13, got12 = _run_local(text, a, b)
    sext = a.astype(np.uint8).view(np.int8).astype(np.int64)
    np.testing.assert_array_equal(got13, ((b.astype(np.int64) + sext) & 0xFFFFFFFF).astype(np.uint32))
    np.testing.assert_array_equal(got12, a + (a >> 16))


def _run_local(body, a, b):
    import sasskit
    real = sasskit.kernel

    def with_local(*lines, **kw):
        k = real(*lines, **kw)
        import attrs
        return attrs.evolve(k, local_size=32)
    sasskit.kernel = with_local
    try:
        return run_lanes(body, a, b, outs=("R13", "R12"))
    finally:
        sasskit.kernel = real


def test_an_access_outside_the_frame_is_an_error_naming_the_lane():
    body = ["MOV R1, c[0x0][0x20]", "IADD32I R1, R1, -0x10", "--:-:1:-:1 S2R R0, SR_TID.X",
            "ISCADD R2, R0, R1, 0x2", "--:-:1:-:1 LDL R3, [R2]", "--:-:-:-:5 EXIT"]
    k = _local_kernel(body, local=16)
    with pytest.raises(SimulationError, match=r"loc.sass:\d+: local access at address 0x10 \(\+4 bytes\) is outside "
                                              r"the thread's local memory \[0x0, 0x10\).*warp 0, lane 4\)"):
        launch(k, 1, 32, [0, 0], GlobalMemory())


def test_the_trace_lays_a_warps_words_out_interleaved():
    """Lanes reading one offset read one 128-byte line (4 sectors); a 64-bit access spans two lines;
    warp w's window starts 32 x window bytes after warp w - 1's."""
    seen = []

    def summarise(kind, addr, active, nbytes):
        seen.append((kind, addr.copy(), nbytes))
        return np.zeros(addr.shape[0], np.int64)
    body = ["MOV R1, c[0x0][0x20]", "IADD32I R1, R1, -0x20", "STL.64 [R1+0x8], RZ", "--:-:1:-:1 LDL R2, [R1+0x4]",
            "--:-:-:-:5 EXIT"]
    k = _local_kernel(body, local=32)
    launch(k, 1, 64, [0, 0], GlobalMemory(), recorder=TraceRecorder(summarise))
    (k1, st, n1), (k2, ld, n2) = seen
    assert (k1, k2, n1, n2) == ("stg", "ldg", 4, 4)
    lanes = np.arange(32)
    # the load: word 1 of each lane, lane l at +4 l: one line per warp
    np.testing.assert_array_equal(ld[0], LOCAL_BASE + 128 + 4 * lanes)
    np.testing.assert_array_equal(ld[1], LOCAL_BASE + 32 * 32 + 128 + 4 * lanes)
    # the 64-bit store: words 2 and 3 of each lane, in lines 2 and 3 of the warp's window
    np.testing.assert_array_equal(st[0].reshape(32, 2), LOCAL_BASE + np.stack([256 + 4 * lanes, 384 + 4 * lanes], 1))


def test_local_loads_are_not_cached_in_l1_by_config():
    from maxsim.arch.config import load_config, override
    cfg = load_config("gm204")
    assert cfg.l1tex.caches_local is False
    with pytest.raises(ConfigError, match="caches_local"):
        override(cfg, {"l1tex.caches_local": True})


# ---- full-precision sine and cosine (Payne-Hanek: a local array, a __device__ table) -------------

def _ulps(got, x, fn):
    """|got - fn(x)| in units of the last place of the fp32 result, fn evaluated in fp64."""
    ref = fn(x.astype(np.float64))
    ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref) / ulp, ref


def test_sinf_cosf_sincosf_within_2_ulp_up_to_3e38():
    """CUDA's sinf, cosf and sincosf (2 ulp: CUDA C Programming Guide, "Mathematical Functions")
    on 3,000 arguments up to 3.4e38 against numpy in fp64; NaN for inf and NaN."""
    require_nvrtc()
    from workloads.cuda import CASES, trig_arguments
    from maxsim.host import Kernel, launch
    case = CASES["precise_sin_cos"]
    k = Kernel.load(case.path, kernel=case.kernel)
    assert k.code.local_size > 0 and any(i.opcode == "STL" for i in k.code.instructions)
    n = 3000
    x = trig_arguments(n, np.random.default_rng(11))
    bufs = {"x": x, **{b: np.zeros(n, np.float32) for b in ("s", "c", "ss", "cc")}}
    r = launch(k, (n + 63) // 64, 64, params={"x": "x", "s": "s", "c": "c", "ss": "ss", "cc": "cc", "n": n},
               buffers=bufs, timing=False, predict=False)
    assert (np.abs(x) > 1e5).sum() > 2000  # most take the slow path
    with np.errstate(invalid="ignore"):
        for out, fn in (("s", np.sin), ("c", np.cos), ("ss", np.sin), ("cc", np.cos)):
            err, ref = _ulps(r.outputs[out], x, fn)
            finite = np.isfinite(ref)
            assert err[finite].max() <= 2.0, (out, float(err[finite].max()))
            assert np.isnan(r.outputs[out][~finite]).all()


# ---- I2F from 64-bit integers, DEPBAR's scoreboard sets -----------------------------------------

def _nearest_f32(v: int, mode: str) -> float:
    """The fp32 value of integer v rounded by mode, from Python's exact integers: the two fp32
    neighbours of v, chosen by the mode (ties to even for RN)."""
    from fractions import Fraction
    if v == 0:
        return 0.0
    f = float(np.float32(float(v)))  # within an ulp or two of v
    cands = sorted({f, float(np.nextafter(np.float32(f), np.float32(np.inf))),
                    float(np.nextafter(np.float32(f), np.float32(-np.inf)))})
    lo = max(c for c in cands if Fraction(c) <= v) if any(Fraction(c) <= v for c in cands) else None
    hi = min(c for c in cands if Fraction(c) >= v) if any(Fraction(c) >= v for c in cands) else None
    if lo == hi:
        return lo
    if mode == "RZ":
        return lo if v > 0 else hi
    if mode == "RM":
        return lo
    if mode == "RP":
        return hi
    dlo, dhi = v - Fraction(lo), Fraction(hi) - v
    if dlo != dhi:
        return lo if dlo < dhi else hi
    return lo if (np.float32(lo).view(np.uint32) & 1) == 0 else hi


@pytest.mark.parametrize("mode", ["RN", "RZ", "RM", "RP"])
def test_i2f_from_64_bit_integers(mode):
    rng = np.random.default_rng(3)
    v = np.concatenate([rng.integers(-2 ** 63, 2 ** 63 - 1, 300, dtype=np.int64),
                        rng.integers(-2 ** 40, 2 ** 40, 100, dtype=np.int64),
                        np.array([0, 1, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 24 + 1, -(2 ** 53 + 1), 2 ** 53 + 3], np.int64)])
    lo, hi = (v.view(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32), (v.view(np.uint64) >> np.uint64(32)).astype(np.uint32)
    f32, d_lo, d_hi, u32f = run_lanes([f"MOV R20, R10", "MOV R21, R11", f"I2F.F32.S64.{mode} R13, R20",
                                       f"I2F.F64.S64.{mode} R22, R20", "MOV R12, R22", "MOV R14, R23",
                                       f"I2F.F32.U64.{mode} R15, R20"],
                                      lo, hi, outs=("R13", "R12", "R14", "R15"))
    got64 = (d_lo.astype(np.uint64) | (d_hi.astype(np.uint64) << np.uint64(32))).view(np.float64)
    for n, x in enumerate(v.tolist()):
        assert f32.view(np.float32)[n] == np.float32(_nearest_f32(x, mode)), (x, mode)
        ux = x & (2 ** 64 - 1)
        assert u32f.view(np.float32)[n] == np.float32(_nearest_f32(ux, mode)), (ux, mode)
        if mode == "RN":
            assert got64[n] == float(x)  # Python's int -> float rounds to nearest even


def test_depbar_waits_for_a_scoreboard_set():
    """DEPBAR {1,0} reads as one operand and waits for scoreboards SB0 and SB1 as a wait mask
    03 would; a malformed set is refused by name."""
    from maxsim.errors import SassParseError
    from maxsim.isa.issue import depbar_set
    from maxsim.sass import parse_text
    from sasskit import sass
    k = parse_text(sass("DEPBAR {1,0}", "DEPBAR {5}", "DEPBAR.LE SB0, 0x2", "EXIT"))
    assert [depbar_set(i) for i in k.instructions] == [0b11, 0b100000, 0, 0]
    with pytest.raises(SassParseError, match="scoreboard set"):
        parse_text(sass("DEPBAR {7}", "EXIT"))
