"""Forms ptxas emits for ordinary CUDA C, through SASS text -> parser -> launch, against Python
references: PRMT in every mode, I2I, FCMP, CS2R, FSET.CC with BRA CC.test, struct parameters."""

from __future__ import annotations

import numpy as np
import pytest

from maxsim.errors import MaxsimError
from maxsim.functional.intops import byte_permute
from sasskit import run_lanes
from nvidia_tools import require_nvrtc

A = np.array([0x80FF7F01, 0x12345678, 0xDEADBEEF, 0x00000000, 0xFFFFFFFF], np.uint32)
B = np.array([0x11223344, 0x9ABCDEF0, 0x01020304, 0x80808080, 0x7F7F7F7F], np.uint32)


def _bytes(a, b):
    return [(int(a) >> (8 * k)) & 0xFF for k in range(4)] + [(int(b) >> (8 * k)) & 0xFF for k in range(4)]


def _prmt_ref(a, b, sel, mode):
    """PTX prmt.b32 [ptx-isa], written from its tables: the byte each result byte takes."""
    src = _bytes(a, b)
    n = sel & 7
    out = 0
    for i in range(4):
        if mode is None:
            nib = (sel >> (4 * i)) & 0xF
            byte = src[nib & 7]
            if nib & 8:
                byte = 0xFF if byte & 0x80 else 0
        else:
            k = {"F4E": [(n + j) % 8 for j in range(4)], "B4E": [(n - j) % 8 for j in range(4)],
                 "RC8": [n & 3] * 4, "ECL": [max(j, n & 3) for j in range(4)],
                 "ECR": [min(j, n & 3) for j in range(4)], "RC16": [2 * (n & 1) + (j & 1) for j in range(4)]}[mode][i]
            byte = src[k]
        out |= byte << (8 * i)
    return out


@pytest.mark.parametrize("mode", [None, "F4E", "B4E", "RC8", "ECL", "ECR", "RC16"])
def test_prmt_every_mode(mode):
    sels = np.array([0x3210, 0x7654, 0x0123, 0x8888, 0xF1E2, 0x5, 0x2, 0x7][: len(A)], np.uint32)
    want = [_prmt_ref(a, b, int(s), mode) for a, b, s in zip(A, B, sels)]
    assert byte_permute(A, B, sels, mode).tolist() == want
    name = "PRMT" + (f".{mode}" if mode else "")
    assert run_lanes(f"{name} R13, R10, R12, R11", A, B, sels).tolist() == want


@pytest.mark.parametrize("text,fn", [
    ("I2I.S32.S8 R13, R10", lambda x: ((x & 0xFF) ^ 0x80) - 0x80),
    ("I2I.U32.U16 R13, R10", lambda x: x & 0xFFFF),
    ("I2I.S16.S32.SAT R13, R10", lambda x: max(-32768, min(32767, x - (1 << 32) if x >> 31 else x))),
    ("I2I.U8.S32.SAT R13, R10", lambda x: max(0, min(255, x - (1 << 32) if x >> 31 else x))),
    ("I2I.S32.S32 R13, -R10", lambda x: -(x - (1 << 32) if x >> 31 else x)),
])
def test_i2i(text, fn):
    got = run_lanes(text, A)
    assert got.tolist() == [fn(int(x)) & 0xFFFFFFFF for x in A]


def test_fcmp_selects_by_the_sign_of_its_third_source():
    a = np.array([1, 2, 3, 4, 5], np.uint32)
    b = np.array([10, 20, 30, 40, 50], np.uint32)
    c = np.array([1.0, -1.0, 0.0, np.nan, -0.0], np.float32)
    assert run_lanes("FCMP.LEU R13, R10, R11, R12", a, b, c).tolist() == [10, 2, 3, 4, 5]
    assert run_lanes("FCMP.GT R13, R10, R11, R12", a, b, c).tolist() == [1, 20, 30, 40, 50]


def test_cs2r_reads_the_clock_as_s2r_does():
    """The functional model has no clock (the timing model owns time): SR_CLOCKLO reads 0 through
    CS2R as through S2R, so clock() differences are 0 and a kernel's values do not depend on time."""
    got = run_lanes(["CS2R R13, SR_CLOCKLO", "S2R R14, SR_CLOCKLO"], A, outs=("R13", "R14"))
    assert [g.tolist() for g in got] == [[0] * 5, [0] * 5]


def test_fset_cc_and_a_branch_on_the_condition_code():
    """FSET ... RZ.CC sets the zero flag where the comparison fails; BRA CC.EQ takes those lanes
    (ptxas's IEEE division: FSET.NEU |b|, +INF then BRA CC.EQ to the infinity case)."""
    x = np.array([1.0, np.inf, -np.inf, 3.0, np.nan], np.float32)
    body = ["MOV R13, RZ", "FSET.NEU.FTZ.AND RZ.CC, |R10|, +INF, PT", "--:-:-:-:5 BRA CC.EQ, BIG",
            "MOV32I R13, 0x1", "--:-:-:-:5 BRA DONE", "BIG:", "MOV32I R13, 0x2", "DONE:"]
    assert run_lanes(body, x).tolist() == [1, 2, 2, 1, 1]


def test_a_branch_on_a_condition_code_nothing_set_is_refused():
    with pytest.raises(MaxsimError, match="BRA CC.EQ reads a condition code that no FSET.CC or ISET.CC set"):
        run_lanes(["MOV R13, RZ", "--:-:-:-:5 BRA CC.EQ, DONE", "DONE:"], A)


def test_struct_parameters_are_given_as_bytes(tmp_path):
    require_nvrtc()
    from maxsim.host import Kernel, launch
    p = tmp_path / "s.cu"
    p.write_text('struct P { float a; int b; float c; };\n'
                 'extern "C" __global__ void k(P p, float* out) { out[threadIdx.x] = p.a * p.b + p.c; }\n')
    k = Kernel.load(p)
    rec = np.array([(1.5, 3, 0.25)], dtype=[("a", "<f4"), ("b", "<i4"), ("c", "<f4")])[0]
    r = launch(k, 1, 32, params={"p": rec, "out": "out"}, buffers={"out": np.zeros(32, np.float32)},
               timing=False, predict=False)
    assert r.outputs["out"].tolist() == [4.75] * 32
    with pytest.raises(MaxsimError, match="has 12 bytes; 8 bytes given"):
        launch(k, 1, 32, params={"p": b"\0" * 8, "out": "out"}, buffers={"out": np.zeros(32, np.float32)},
               timing=False, predict=False)


@pytest.mark.parametrize("imm,want", [(0xFFFBF, -65), (0xFFFFE, -2), (0x80000, -(1 << 19)), (0x7FFFF, (1 << 19) - 1),
                                      (0x41, 65)])
def test_iadd3_immediate_is_signed_20_bits(imm, want):
    """IADD3's immediate is 20 bits with its sign in bit 19: nvdisasm prints 0xfffbf where ptxas
    means -65 (the kernel below)."""
    got = run_lanes(f"IADD3 R13, R10, 0x{imm:x}, R11", A, B)
    assert got.tolist() == [(int(a) + int(b) + want) & 0xFFFFFFFF for a, b in zip(A, B)]


TRIANGLE = """
extern "C" __global__ void band_sum(const float* __restrict__ a, float* out, int w)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x >= w || x > y) return;
    float s = 0.0f;
    int end = min(min(y + 1, w), x + 64);
    for (int k = x; k < end; k++)
        s += a[y * w + k];
    out[y * w + x] = s;
}
"""


def test_a_loop_bound_ptxas_builds_with_signed_iadd3_immediates(tmp_path):
    """ptxas turns min(min(y + 1, w), x + 64) into VMNMX.MX.MAX of complements and counts the loop's
    trips with IADD3 immediates 0xfffbf (-65) and 0xffffe (-2): every row's sums against numpy, and
    no read past the rows (a guard gap follows each buffer)."""
    require_nvrtc()
    from maxsim.host import Kernel, launch
    p = tmp_path / "band.cu"
    p.write_text(TRIANGLE)
    k = Kernel.load(p)
    assert any(i.opcode == "IADD3" and any(o.kind == "imm" and o.value == 0xFFFBF for o in i.operands)
               for i in k.code.instructions)
    h, w = 140, 128
    a = np.random.default_rng(5).random(h * w, dtype=np.float32)
    r = launch(k, (w // 64, h), 64, params={"a": "a", "out": "out", "w": w},
               buffers={"a": a, "out": np.zeros_like(a)}, timing=False, predict=False)
    got, rows = r.outputs["out"].reshape(h, w), a.reshape(h, w)
    for y in range(h):
        for x in range(min(w, y + 1)):
            want = np.float32(0)
            for kk in range(x, min(y + 1, w, x + 64)):
                want = np.float32(want + rows[y, kk])
            assert got[y, x] == want, (y, x)


def _s32(x):
    return [int(v) - (1 << 32) if int(v) >> 31 else int(v) for v in x]


@pytest.mark.parametrize("cmp,ref", [("LT", lambda a, b: a < b), ("GE", lambda a, b: a >= b),
                                     ("NE", lambda a, b: a != b)])
def test_iset_cc_and_a_branch_on_the_condition_code(cmp, ref):
    """ISET.cmp.AND d.CC writes all ones (a negative value) where the compare holds, else 0, and
    leaves the zero and sign flags of that value [PTX set.cmp.u32.s32 gives 0xffffffff / 0; the CC
    tests as envytools has them: EQ = Z, LT = S]: BRA CC.EQ takes the lanes where it fails, CC.LT
    those where it holds, and d holds the value."""
    a, b = _s32(A), _s32(B)
    body = ["MOV R14, RZ", f"ISET.{cmp}.AND R13.CC, R10, R11, PT", "--:-:-:-:5 BRA CC.EQ, FAILS",
            "MOV32I R14, 0x1", "FAILS:", "--:-:-:-:5 BRA CC.GE, DONE", "IADD32I R14, R14, 0x10", "DONE:"]
    got, path = run_lanes(body, A, B, outs=("R13", "R14"))
    want = [ref(x, y) for x, y in zip(a, b)]
    assert got.tolist() == [0xFFFFFFFF if w else 0 for w in want]
    assert path.tolist() == [0x11 if w else 0 for w in want]


def test_iset_bf_cc_flags_follow_the_one_point_zero_it_writes():
    """ISET.BF writes 1.0 (0x3f800000, positive) where the compare holds: CC.GT takes those lanes,
    CC.EQ the others; U32 compares the words unsigned."""
    body = ["MOV R14, RZ", "ISET.BF.LT.U32.AND RZ.CC, R10, R11, PT", "--:-:-:-:5 BRA CC.GT, HOLDS",
            "--:-:-:-:5 BRA CC.EQ, FAILS", "MOV32I R14, 0x5", "--:-:-:-:5 BRA DONE",
            "HOLDS:", "MOV32I R14, 0x1", "--:-:-:-:5 BRA DONE", "FAILS:", "MOV32I R14, 0x2", "DONE:",
            "MOV R13, R14"]
    assert run_lanes(body, A, B).tolist() == [1 if int(x) < int(y) else 2 for x, y in zip(A, B)]


def test_iset_x_cc_reads_the_carry_then_replaces_it():
    """A 64-bit a < b as ptxas writes it (IADD RZ.CC, a_lo, -b_lo; ISET.LT.X a_hi, b_hi) with .CC on
    the ISET: the compare uses the carry of the low words, then the flags are those of its result."""
    lo_a = np.array([5, 0, 7, 0xFFFFFFFF, 3], np.uint32)
    hi_a = np.array([1, 0xFFFFFFFF, 2, 0, 9], np.uint32)
    lo_b = np.array([6, 1, 7, 0, 3], np.uint32)
    hi_b = np.array([1, 0xFFFFFFFF, 2, 1, 8], np.uint32)
    body = ["MOV R14, RZ", "IADD RZ.CC, R10, -R12", "ISET.LT.X.AND R13.CC, R11, R13, PT",
            "--:-:-:-:5 BRA CC.EQ, DONE", "MOV32I R14, 0x1", "DONE:"]
    got, path = run_lanes(body, lo_a, hi_a, lo_b, hi_b, outs=("R13", "R14"))
    sa = [(int(h) << 32 | int(l)) - ((1 << 64) if int(h) >> 31 else 0) for l, h in zip(lo_a, hi_a)]
    sb = [(int(h) << 32 | int(l)) - ((1 << 64) if int(h) >> 31 else 0) for l, h in zip(lo_b, hi_b)]
    want = [x < y for x, y in zip(sa, sb)]
    assert want == [True, True, False, True, False]
    assert got.tolist() == [0xFFFFFFFF if w else 0 for w in want]
    assert path.tolist() == [int(w) for w in want]


# a loop bound as ptxas could test it: ISET.CC on loaded values, BRA CC.EQ leaves the loop; the
# data decides how many loads each warp makes
ISET_CC_LOOP = """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      SHR.U32 R1, R0, 0x5;
--:-:-:-:6      SHL R1, R1, 0x2;
--:-:-:-:6      IADD R2, R1, c[0x0][0x140];
--:-:1:-:1      LDG R3, [R2];
--:-:-:-:1      MOV R4, RZ;
LOOP:
01:-:-:-:6      ISET.LT.AND R5.CC, R4, R3, PT;
--:-:-:-:5      BRA CC.EQ, DONE;
--:-:1:-:1      LDG R6, [R2+0x40];
--:-:-:-:6      IADD32I R4, R4, 0x1;
--:-:-:-:5      BRA LOOP;
DONE:
--:-:-:-:6      SHL R7, R0, 0x2;
--:-:-:-:6      IADD R7, R7, c[0x0][0x144];
--:-:-:-:1      STG.CG [R7], R4;
--:-:-:-:5      EXIT;
"""


def test_the_timing_only_slice_follows_iset_cc():
    """A timing-only run must compute the ISET.CC a branch reads (and the load it compares): its
    trace equals the full run's, and each warp loops as many times as its loaded count."""
    import timing_only_check as toc
    from maxsim.functional import GlobalMemory, slicing
    from maxsim.sass import parse_text
    from sasskit import header

    k = parse_text(header("isetcc", regs=32, nparams=2) + ISET_CC_LOOP)
    s = slicing.timing_slice(k)
    iset = next(i for i in k.instructions if i.opcode == "ISET")
    first_ldg = next(i for i in k.instructions if i.opcode == "LDG")
    assert s.computed[iset.index] and s.computed[first_ldg.index] and s.global_loads_needed
    mem = GlobalMemory()
    src, dst = mem.alloc(4 * 64), mem.alloc(4 * 128)
    counts = [3, 0, 5, 1]
    mem.write(src, np.array(counts + [0] * 60, np.uint32))
    full, fast = toc.compare(k, 1, 128, [src, dst], mem)
    ldg = {i.index for i in k.instructions if i.opcode == "LDG"}
    loads = [sum(1 for pc in full.trace[w].pcs() if pc in ldg) for w in range(4)]
    assert loads == [1 + c for c in counts]
