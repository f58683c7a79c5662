"""Every opcode of the maxas SGEMM kernels against hand-computed values and Python int / exact
rational arithmetic, run through the public path: SASS text -> parser -> launch."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from sasskit import run_lanes, s32

# numpy overflow warnings inside the executor would mean it computes in the wrong width
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

M32 = 0xFFFFFFFF
rng = np.random.default_rng(20240601)

EDGE = [0, 1, 2, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x12345678, 0x7FFFFFFF, 0x80000000, 0x80000001,
        0xFFFF0000, 0xFFFFFFFE, 0xFFFFFFFF]


def rand_u32(n):
    x = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
    x[: len(EDGE)] = EDGE
    return x


def ints(arr):
    return [int(v) for v in np.asarray(arr, dtype=np.uint32)]


# ---------------------------------------------------------------------------------------------
# integer add family


def test_iadd_hand_values():
    a = [1, 0xFFFFFFFF, 0x80000000, 5]
    b = [2, 1, 0x80000000, 7]
    assert ints(run_lanes("IADD R13, R10, R11", a, b)) == [3, 0, 0, 12]
    # '-' on the second operand subtracts (two's complement)
    assert ints(run_lanes("IADD R13, R10, -R11", a, b)) == [0xFFFFFFFF, 0xFFFFFFFE, 0, 0xFFFFFFFE]
    # '-' on the first operand
    assert ints(run_lanes("IADD R13, -R10, R11", a, b)) == [1, 2, 0, 2]


def test_iadd_random_against_python():
    a, b = rand_u32(256), rand_u32(256)[::-1].copy()
    got = ints(run_lanes("IADD R13, R10, R11", a, b))
    assert got == [(x + y) & M32 for x, y in zip(ints(a), ints(b))]
    got = ints(run_lanes("IADD R13, R10, -R11", a, b))
    assert got == [(x - y) & M32 for x, y in zip(ints(a), ints(b))]


@pytest.mark.parametrize("imm,value", [("-0x8", -8), ("0x20", 0x20), ("-0x1", -1), ("0x7fffffff", 0x7FFFFFFF),
                                       ("-0x80000000", -(1 << 31)), ("0xffffffff", 0xFFFFFFFF), ("12", 12)])
def test_iadd_immediates_including_negative(imm, value):
    a = [0, 1, 0x10, 0xFFFFFFFF]
    assert ints(run_lanes(f"IADD R13, R10, {imm}", a)) == [(x + value) & M32 for x in a]


def test_iadd_constant_operand():
    a = [0, 1, 0xFFFFFFFF]
    got = ints(run_lanes("IADD R13, R10, c[0x0][0x144]", a, scalars=[0, 0x100]))
    assert got == [0x100, 0x101, 0xFF]
    got = ints(run_lanes("IADD R13, R10, -c[0x0][0x140]", a, scalars=[3]))
    assert got == [(x - 3) & M32 for x in a]


def test_iadd_cc_and_x_make_a_64_bit_add():
    a_lo, b_lo = rand_u32(64), rand_u32(64)[::-1].copy()
    a_hi, b_hi = rand_u32(64)[::-1].copy(), rand_u32(64)
    # b_hi comes in as d (the initial R13)
    lo, hi = run_lanes(["MOV R15, R13", "IADD.CC R13, R10, R11", "IADD.X R14, R12, R15"],
                       a_lo, b_lo, a_hi, b_hi, outs=("R13", "R14"))
    for i in range(64):
        full = ((int(a_hi[i]) << 32) | int(a_lo[i])) + ((int(b_hi[i]) << 32) | int(b_lo[i]))
        assert int(lo[i]) == full & M32
        assert int(hi[i]) == (full >> 32) & M32


def test_iadd3():
    a, b, c = rand_u32(128), rand_u32(128)[::-1].copy(), rand_u32(128)
    got = ints(run_lanes("IADD3 R13, R10, R11, R12", a, b, c))
    assert got == [(x + y + z) & M32 for x, y, z in zip(ints(a), ints(b), ints(c))]
    assert ints(run_lanes("IADD3 R13, R10, 0x10, R12", [1, 2], None, [100, 0xFFFFFFFF])) == [117, 17]


@pytest.mark.parametrize("shift", [0, 1, 4, 8, 31])
def test_iscadd(shift):
    a, b = rand_u32(64), rand_u32(64)[::-1].copy()
    got = ints(run_lanes(f"ISCADD R13, R10, R11, 0x{shift:x}", a, b))
    assert got == [((x << shift) + y) & M32 for x, y in zip(ints(a), ints(b))]


def test_iscadd_negated_and_immediate_and_constant_operands():
    # the maxas SGEMM epilogue writes ISCADD R85, R81, -R89, 0x7
    assert ints(run_lanes("ISCADD R13, R10, -R11, 0x7", [1, 2, 0], [0x80, 1, 1])) == [0, 255, M32]
    # ISCADD R115, R115, 0x800, 0x4
    assert ints(run_lanes("ISCADD R13, R10, 0x800, 0x4", [0, 1, 3])) == [0x800, 0x810, 0x830]
    # ISCADD R76, R73, c[0x0][0x140], 0x2
    assert ints(run_lanes("ISCADD R13, R10, c[0x0][0x140], 0x2", [0, 1, 5], scalars=[0x1000])) == [
        0x1000, 0x1004, 0x1014]


# ---------------------------------------------------------------------------------------------
# XMAD: each piece alone, then the 3-instruction 32-bit multiply


def xmad_ref(a, b, c, *, a_h1=False, b_h1=False, psl=False, mrg=False, cbcc=False):
    """The documented semantics (docs/maxas-sass-format.md), in Python ints."""
    a16 = a >> 16 if a_h1 else a & 0xFFFF
    b16 = b >> 16 if b_h1 else b & 0xFFFF
    p = a16 * b16
    if psl:
        p <<= 16
    r = p + c + ((b << 16) if cbcc else 0)
    if mrg:
        r = (r & 0xFFFF) | ((b & 0xFFFF) << 16)
    return r & M32


# a = 0x0003_0002, b = 0x0005_0007, c = 0x12345: a.lo=2, a.hi=3, b.lo=7, b.hi=5
XMAD_HAND = [
    ("XMAD R13, R10, R11, R12", 2 * 7 + 0x12345),
    ("XMAD R13, R10.H1, R11, R12", 3 * 7 + 0x12345),
    ("XMAD R13, R10, R11.H1, R12", 2 * 5 + 0x12345),
    ("XMAD R13, R10.H1, R11.H1, R12", 3 * 5 + 0x12345),
    ("XMAD.PSL R13, R10, R11, R12", (14 << 16) + 0x12345),
    ("XMAD.MRG R13, R10, R11, R12", ((14 + 0x12345) & 0xFFFF) | (0x7 << 16)),
    ("XMAD.MRG R13, R10, R11.H1, RZ", 10 | (0x7 << 16)),
    ("XMAD.CBCC R13, R10, R11, R12", 14 + 0x12345 + 0x00070000),
    ("XMAD.PSL.CBCC R13, R10, R11, R12", (14 << 16) + 0x12345 + 0x00070000),
    ("XMAD.PSL.CBCC R13, R10.H1, R11.H1, R12", (15 << 16) + 0x12345 + 0x00070000),
]


@pytest.mark.parametrize("text,expected", XMAD_HAND, ids=[t for t, _ in XMAD_HAND])
def test_xmad_pieces_hand_values(text, expected):
    assert ints(run_lanes(text, [0x00030002], [0x00050007], [0x12345])) == [expected & M32]


@pytest.mark.parametrize("mods", ["", ".PSL", ".MRG", ".CBCC", ".PSL.CBCC"])
@pytest.mark.parametrize("a_h1,b_h1", [(False, False), (True, False), (False, True), (True, True)])
def test_xmad_pieces_random(mods, a_h1, b_h1):
    a, b, c = rand_u32(64), rand_u32(64)[::-1].copy(), rand_u32(64)
    text = f"XMAD{mods} R13, R10{'.H1' if a_h1 else ''}, R11{'.H1' if b_h1 else ''}, R12"
    got = ints(run_lanes(text, a, b, c))
    flags = dict(a_h1=a_h1, b_h1=b_h1, psl="PSL" in mods, mrg="MRG" in mods, cbcc="CBCC" in mods)
    assert got == [xmad_ref(x, y, z, **flags) for x, y, z in zip(ints(a), ints(b), ints(c))]


def test_xmad_three_instruction_multiply_is_a_32_bit_multiply_add():
    n = 512
    a, b, c = rand_u32(n), rand_u32(n)[::-1].copy(), rand_u32(n)
    # exactly as maxas writes it, reuse flags included
    body = ["XMAD.MRG R14, R10.reuse, R11.H1.reuse, RZ",
            "XMAD R13, R10.reuse, R11, R12",
            "XMAD.PSL.CBCC R13, R10.H1, R14.H1, R13"]
    got = ints(run_lanes(body, a, b, c))
    assert got == [(x * y + z) % (1 << 32) for x, y, z in zip(ints(a), ints(b), ints(c))]
    # in place, as the SGEMM prologue does: XMAD R112, R1, R4, R112
    body = ["XMAD.MRG R14, R10, R11.H1, RZ", "XMAD R12, R10, R11, R12", "XMAD.PSL.CBCC R13, R10.H1, R14.H1, R12"]
    got = ints(run_lanes(body, a, b, c))
    assert got == [(x * y + z) % (1 << 32) for x, y, z in zip(ints(a), ints(b), ints(c))]


def test_xmad_multiply_with_zero_addend():
    a, b = rand_u32(128), rand_u32(128)[::-1].copy()
    body = ["XMAD.MRG R14, R10, R11.H1, RZ", "XMAD R13, R10, R11, RZ", "XMAD.PSL.CBCC R13, R10.H1, R14.H1, R13"]
    assert ints(run_lanes(body, a, b)) == [(x * y) % (1 << 32) for x, y in zip(ints(a), ints(b))]


# ---------------------------------------------------------------------------------------------
# logic, shifts, bit fields, select, moves


def test_lop():
    a, b = rand_u32(64), rand_u32(64)[::-1].copy()
    A, B = ints(a), ints(b)
    assert ints(run_lanes("LOP.AND R13, R10, R11", a, b)) == [x & y for x, y in zip(A, B)]
    assert ints(run_lanes("LOP.OR R13, R10, R11", a, b)) == [x | y for x, y in zip(A, B)]
    assert ints(run_lanes("LOP.XOR R13, R10, R11", a, b)) == [x ^ y for x, y in zip(A, B)]
    assert ints(run_lanes("LOP.AND R13, R10, ~R11", a, b)) == [x & ~y & M32 for x, y in zip(A, B)]
    # negative immediate: LOP.AND R80, R119, -0x20 clears the low 5 bits
    assert ints(run_lanes("LOP.AND R13, R10, -0x20", [0x3F, 0x20, 0xFFFFFFFF])) == [0x20, 0x20, 0xFFFFFFE0]
    assert ints(run_lanes("LOP.XOR R13, R10, 0x1000", [0x1000, 0x0])) == [0, 0x1000]
    assert ints(run_lanes("LOP.OR R13, R10, 0x1", [0x2, 0x3])) == [3, 3]


SHIFT_VALUES = [0x80000001, 0x12345678, 0xFFFFFFFF, 1]
SHIFT_AMOUNTS = [0, 1, 16, 31, 32, 33, 255, 0xFFFFFFFF]


def test_shl_edge_cases():
    a = [v for v in SHIFT_VALUES for _ in SHIFT_AMOUNTS]
    n = [s for _ in SHIFT_VALUES for s in SHIFT_AMOUNTS]
    # shift amounts of 32 or more give 0 (clamped, not wrapped)
    assert ints(run_lanes("SHL R13, R10, R11", a, n)) == [(x << s) & M32 if s < 32 else 0 for x, s in zip(a, n)]
    # .W wraps the amount to 5 bits
    assert ints(run_lanes("SHL.W R13, R10, R11", a, n)) == [(x << (s & 31)) & M32 for x, s in zip(a, n)]
    assert ints(run_lanes("SHL R13, R10, 0x4", [0x1, 0xF0000001])) == [0x10, 0x10]
    assert ints(run_lanes("SHL R13, R10, 0x1f", [0x1, 0x2])) == [0x80000000, 0]


def test_shr_edge_cases():
    a = [v for v in SHIFT_VALUES for _ in SHIFT_AMOUNTS]
    n = [s for _ in SHIFT_VALUES for s in SHIFT_AMOUNTS]
    assert ints(run_lanes("SHR.U32 R13, R10, R11", a, n)) == [x >> s if s < 32 else 0 for x, s in zip(a, n)]
    # signed: arithmetic shift, amounts >= 32 fill with the sign bit
    exp = [(s32(x) >> min(s, 31)) & M32 for x, s in zip(a, n)]
    assert ints(run_lanes("SHR R13, R10, R11", a, n)) == exp
    assert ints(run_lanes("SHR.S32 R13, R10, R11", a, n)) == exp
    assert ints(run_lanes("SHR.U32 R13, R10, 0x1f", [0x80000000, 0x7FFFFFFF])) == [1, 0]
    assert ints(run_lanes("SHR R13, R10, 0x1f", [0x80000000, 0x7FFFFFFF])) == [M32, 0]
    assert ints(run_lanes("SHR.U32 R13, R10, 0x2", [0x100])) == [0x40]


def test_shifts_by_an_immediate_of_32_or_more():
    """A count every lane shares (an immediate) follows the same rules as per-lane counts:
    clamped to 0 / the sign's fill, or wrapped to 5 bits by .W."""
    a = [0x1, 0x80000001, 0xF0F0F0F0, 0x7FFFFFFF]
    for s in (0x20, 0x21, 0x3F):
        assert ints(run_lanes(f"SHL R13, R10, {s:#x}", a)) == [0] * 4
        assert ints(run_lanes(f"SHL.W R13, R10, {s:#x}", a)) == [(x << (s & 31)) & M32 for x in a]
        assert ints(run_lanes(f"SHR.U32 R13, R10, {s:#x}", a)) == [0] * 4
        assert ints(run_lanes(f"SHR R13, R10, {s:#x}", a)) == [(s32(x) >> 31) & M32 for x in a]


def bfe_ref(a, pos, length, signed):
    if length == 0:
        return 0
    if pos >= 32:
        return M32 if (signed and a >> 31) else 0
    width = min(pos + length, 32) - pos
    field = (a >> pos) & ((1 << width) - 1)
    if signed and field >> (width - 1):
        field -= 1 << width
    return field & M32


def test_bfe_hand_values():
    # BFE.U32 R4, R119, 0x104: 1 bit at position 4; 0x301: 3 bits at position 1
    assert ints(run_lanes("BFE.U32 R13, R10, 0x104", [0x10, 0xEF, 0x1F])) == [1, 0, 1]
    assert ints(run_lanes("BFE.U32 R13, R10, 0x301", [0b1110, 0b0110, 0xFFFFFFFF])) == [7, 3, 7]
    assert ints(run_lanes("BFE.U32 R13, R10, 0x205", [0x60, 0x20, 0x1F])) == [3, 1, 0]
    # signed: the top bit of the field is copied upward
    assert ints(run_lanes("BFE R13, R10, 0x404", [0xF0, 0x70])) == [M32, 7]
    # zero length gives 0; a field running past bit 31 is cut there
    assert ints(run_lanes("BFE.U32 R13, R10, 0x4", [0xFFFFFFFF])) == [0]
    assert ints(run_lanes("BFE.U32 R13, R10, 0x81c", [0xF0000000])) == [0xF]
    assert ints(run_lanes("BFE R13, R10, 0x81c", [0xF0000000, 0x70000000])) == [M32, 7]


def test_bfe_random_against_python():
    a = rand_u32(256)
    ctl = [(int(l) << 8) | int(p) for p, l in zip(rng.integers(0, 40, 256), rng.integers(0, 40, 256))]
    for op, signed in (("BFE.U32", False), ("BFE.S32", True), ("BFE", True)):
        got = ints(run_lanes(f"{op} R13, R10, R11", a, ctl))
        assert got == [bfe_ref(x, c & 0xFF, (c >> 8) & 0xFF, signed) for x, c in zip(ints(a), ctl)], op


def test_sel_with_predicate_and_negated_predicate():
    a, b, c = [10, 20, 30, 40], [1, 2, 3, 4], [0, 1, 0, 7]
    pre = "ISETP.NE.AND P0, PT, R12, RZ, PT"
    assert ints(run_lanes([pre, "SEL R13, R10, R11, P0"], a, b, c)) == [1, 20, 3, 40]
    assert ints(run_lanes([pre, "SEL R13, R10, R11, !P0"], a, b, c)) == [10, 2, 30, 4]
    assert ints(run_lanes([pre, "SEL R13, R10, 0x5, P0"], a, b, c)) == [5, 20, 5, 40]
    assert ints(run_lanes(["SEL R13, R10, R11, PT"], a, b, c)) == a
    assert ints(run_lanes(["SEL R13, R10, R11, !PT"], a, b, c)) == b


def test_moves():
    a = [1, 2, 3]
    assert ints(run_lanes("MOV R13, R10", a)) == a
    assert ints(run_lanes("MOV R13, c[0x0][0x14c]", a, scalars=[0, 0, 0, 0xABCD])) == [0xABCD] * 3
    assert ints(run_lanes("MOV R13, -0x8", a)) == [0xFFFFFFF8] * 3
    assert ints(run_lanes("MOV32I R13, 0x80000001", a)) == [0x80000001] * 3
    assert ints(run_lanes("MOV32I R13, -0x1", a)) == [M32] * 3
    # the launch geometry words: c[0x0][0x8] is the block size (as the driver writes them)
    assert ints(run_lanes("MOV R13, c[0x0][0x8]", a)) == [128] * 3


def test_rz_reads_zero_and_discards_writes():
    a, d = [5, 6], [100, 200]
    assert ints(run_lanes("IADD R13, RZ, R10", a)) == a
    assert ints(run_lanes("IADD RZ, R10, R10", a, d=d)) == d
    assert ints(run_lanes(["IADD RZ, R10, R10", "IADD R13, RZ, RZ"], a, d=d)) == [0, 0]


def test_s2r_special_registers():
    n = 300
    tid, ctaid, lane = run_lanes(["S2R R13, SR_TID.X", "S2R R14, SR_CTAID.X", "S2R R15, SR_LANEID"],
                                 n=n, outs=("R13", "R14", "R15"))
    i = np.arange(n)
    assert (tid == i % 128).all() and (ctaid == i // 128).all() and (lane == i % 32).all()


# ---------------------------------------------------------------------------------------------
# compares and predication

CMP_VALUES = [-(1 << 31), -5, -1, 0, 1, 5, (1 << 31) - 1]
CMP_PAIRS = list(itertools.product(CMP_VALUES, CMP_VALUES))
CMP_OPS = {"LT": lambda x, y: x < y, "LE": lambda x, y: x <= y, "GT": lambda x, y: x > y,
           "GE": lambda x, y: x >= y, "EQ": lambda x, y: x == y, "NE": lambda x, y: x != y}


@pytest.mark.parametrize("cmp", sorted(CMP_OPS))
def test_isetp_each_comparison_is_signed(cmp):
    a = [x for x, _ in CMP_PAIRS]
    b = [y for _, y in CMP_PAIRS]
    body = ["MOV32I R15, 0x1", f"ISETP.{cmp}.AND P0, P1, R10, R11, PT", "SEL R13, R15, RZ, P0",
            "SEL R14, R15, RZ, P1"]
    p, q = run_lanes(body, a, b, outs=("R13", "R14"))
    exp = [int(CMP_OPS[cmp](x, y)) for x, y in CMP_PAIRS]
    assert ints(p) == exp
    # the second destination gets the complement of the comparison (AND PT)
    assert ints(q) == [1 - e for e in exp]


@pytest.mark.parametrize("cmp", sorted(CMP_OPS))
def test_isetp_u32_is_unsigned(cmp):
    a = [x & M32 for x, _ in CMP_PAIRS]
    b = [y & M32 for _, y in CMP_PAIRS]
    body = ["MOV32I R15, 0x1", f"ISETP.{cmp}.U32.AND P0, PT, R10, R11, PT", "SEL R13, R15, RZ, P0"]
    assert ints(run_lanes(body, a, b)) == [int(CMP_OPS[cmp](x, y)) for x, y in zip(a, b)]


def test_isetp_immediate_and_constant_operands():
    # ISETP.GE.AND P0, PT, R119, 0x20, PT and ISETP.LT.AND P5, PT, R84, c[0x0][0x144], PT
    a = [0, 0x1F, 0x20, 0x21, 0xFFFFFFFF]
    body = ["MOV32I R15, 0x1", "ISETP.GE.AND P0, PT, R10, 0x20, PT", "SEL R13, R15, RZ, P0"]
    assert ints(run_lanes(body, a)) == [0, 0, 1, 1, 0]
    body = ["MOV32I R15, 0x1", "ISETP.LT.AND P5, PT, R10, c[0x0][0x144], PT", "SEL R13, R15, RZ, P5"]
    assert ints(run_lanes(body, a, scalars=[0, 0x21])) == [1, 1, 1, 0, 1]


@pytest.mark.parametrize("bop,neg", [("AND", False), ("AND", True), ("OR", False), ("OR", True),
                                     ("XOR", False), ("XOR", True)])
def test_isetp_boolean_combination_with_a_predicate(bop, neg):
    vals = [(x, y, z) for x in (0, 2) for y in (1,) for z in (0, 1)]
    a, b, c = zip(*vals)
    body = ["MOV32I R15, 0x1", "ISETP.NE.AND P3, PT, R12, RZ, PT",
            f"ISETP.LT.{bop} P0, PT, R10, R11, {'!' if neg else ''}P3", "SEL R13, R15, RZ, P0"]
    f = {"AND": lambda u, v: u and v, "OR": lambda u, v: u or v, "XOR": lambda u, v: u != v}[bop]
    exp = [int(f(x < y, (z != 0) != neg)) for x, y, z in vals]
    assert ints(run_lanes(body, a, b, c)) == exp


def test_predicated_off_lanes_keep_their_old_values():
    a, b, c, d = [1, 2, 3, 4], [10, 20, 30, 40], [0, 1, 1, 0], [7, 8, 9, 6]
    pre = "ISETP.NE.AND P0, PT, R12, RZ, PT"
    assert ints(run_lanes([pre, "@P0 IADD R13, R10, R11"], a, b, c, d)) == [7, 22, 33, 6]
    assert ints(run_lanes([pre, "@!P0 IADD R13, R10, R11"], a, b, c, d)) == [11, 8, 9, 44]
    assert ints(run_lanes([pre, "@PT IADD R13, R10, R11"], a, b, c, d)) == [11, 22, 33, 44]
    assert ints(run_lanes([pre, "@!PT IADD R13, R10, R11"], a, b, c, d)) == d
    # the same for every kind of result: float, XMAD, shift, select, move, S2R, BFE, LOP, ISCADD
    for text in ("FFMA R14, R10, R11, R12", "FMUL R14, R10, R11", "XMAD R14, R10, R11, R12",
                 "XMAD.PSL.CBCC R14, R10.H1, R11.H1, R12", "SHL R14, R10, 0x1", "SHR.U32 R14, R11, 0x1",
                 "SEL R14, R10, R11, P0", "MOV32I R14, 0x5", "MOV R14, c[0x0][0x8]", "S2R R14, SR_TID.X",
                 "BFE.U32 R14, R10, 0x101", "LOP.XOR R14, R10, R11", "ISCADD R14, R10, R11, 0x2",
                 "IADD3 R14, R10, R11, R12"):
        got = ints(run_lanes([pre, "MOV32I R14, 0x777", "@!P0 " + text, "MOV R13, R14"], a, b, c, d))
        assert got[1] == got[2] == 0x777, text  # guard false: R14 keeps its old value
        assert got[0] != 0x777 and got[3] != 0x777, text  # guard true: written


def test_instruction_that_writes_its_own_guard():
    # @P0 ISETP ... P0, P1: the second destination must be masked by the *old* P0
    a, b, c = [0, 5, 0, 5], [3, 3, 3, 3], [1, 1, 0, 0]
    body = ["MOV32I R15, 0x1", "ISETP.NE.AND P0, P1, R12, RZ, PT",
            "@P0 ISETP.LT.AND P0, P1, R10, R11, PT", "SEL R13, R15, RZ, P0", "SEL R14, R15, RZ, P1"]
    p0, p1 = run_lanes(body, a, b, c, outs=("R13", "R14"))
    assert ints(p0) == [1, 0, 0, 0]
    assert ints(p1) == [0, 1, 1, 1]


# ---------------------------------------------------------------------------------------------
# fp32


def round_f32(q: Fraction) -> float:
    """Round an exact rational to the nearest fp32 (ties to even), with subnormals and overflow."""
    if q == 0:
        return 0.0
    sign = -1 if q < 0 else 1
    q = abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    e = max(e, -126)
    quantum = Fraction(2) ** (e - 23)
    m = q / quantum
    n = math.floor(m)
    rem = m - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2):
        n += 1
    val = n * quantum
    if val >= 2 ** 128:
        return sign * math.inf
    return sign * float(val)


def f32(x):
    return np.float32(x)


def exact_fma(a, b, c):
    return round_f32(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))


def test_round_f32_helper_agrees_with_numpy_on_simple_cases():
    for x in (1.0, 1.5, 3.0e38, 1e-45, 2.0 ** -149, 0.1, -7.25):
        assert round_f32(Fraction(x)) == float(np.float32(x))


FFMA_HAND = [
    # (a, b, c, the correctly rounded a*b+c, whether fp32(fp32(a*b)+c) gives something else)
    # (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24; fp32(a*b) = 1 + 2^-11 (tie to even) so the unfused sum is 0
    (1 + 2.0 ** -12, 1 + 2.0 ** -12, -(1 + 2.0 ** -11), 2.0 ** -24, True),
    (-(1 + 2.0 ** -12), 1 + 2.0 ** -12, 1 + 2.0 ** -11, -(2.0 ** -24), True),
    # a tiny addend decides a tie: exact 1 + 2^-11 + 2^-24 + 2^-80 rounds up; rounding the sum to
    # fp64 first would land on the tie and round down (double rounding)
    (1 + 2.0 ** -12, 1 + 2.0 ** -12, 2.0 ** -80, 1 + 2.0 ** -11 + 2.0 ** -23, True),
    (1 + 2.0 ** -12, 1 + 2.0 ** -12, -(2.0 ** -80), 1 + 2.0 ** -11, False),
    # subnormal results are kept (no .FTZ)
    (2.0 ** -70, 2.0 ** -70, 0.0, 2.0 ** -140, False),
    (3.0, 2.0 ** -149, 0.0, 3 * 2.0 ** -149, False),
    (2.0 ** -75 * 3, 2.0 ** -75, 2.0 ** -149, 2.0 ** -148, True),  # 3*2^-150 + 2^-149 = 5*2^-150 -> 2^-148
    # plain values
    (2.0, 3.0, 4.0, 10.0, False),
    (1.5, -2.0, 0.25, -2.75, False),
]


@pytest.mark.parametrize("a,b,c,expected,unfused_differs", FFMA_HAND)
def test_ffma_single_rounding_hand_cases(a, b, c, expected, unfused_differs):
    a, b, c = f32(a), f32(b), f32(c)
    assert exact_fma(a, b, c) == expected  # the hand value is the exact rounding
    unfused = float(f32(f32(a * b) + c))
    assert (unfused != expected) == unfused_differs
    got = run_lanes("FFMA R13, R10, R11, R12", [a], [b], [c], dtype=np.float32)
    assert float(got[0]) == expected


def test_ffma_is_not_double_rounded_through_fp64():
    a = b = f32(1 + 2.0 ** -12)
    c = f32(2.0 ** -80)
    via_fp64 = float(f32(float(a) * float(b) + float(c)))
    assert via_fp64 == 1 + 2.0 ** -11  # the naive emulation gets the tie wrong ...
    got = run_lanes("FFMA R13, R10, R11, R12", [a], [b], [c], dtype=np.float32)
    assert float(got[0]) == 1 + 2.0 ** -11 + 2.0 ** -23  # ... FFMA does not


def test_ffma_random_against_exact_rational_arithmetic():
    n = 1024
    a = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    b = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    c = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    # half the lanes: c cancels the rounded product (where fused and unfused differ most)
    half = n // 2
    c[:half] = -(a[:half] * b[:half]) * np.float32(1 + 2.0 ** -20) ** rng.integers(-2, 3, half).astype(np.float32)
    # some lanes in the subnormal range
    a[half:half + 32] = np.float32(2.0 ** -75) * (1 + rng.random(32).astype(np.float32))
    b[half:half + 32] = np.float32(2.0 ** -60) * (1 + rng.random(32).astype(np.float32))
    got = run_lanes("FFMA R13, R10, R11, R12", a, b, c, dtype=np.float32)
    exact = [exact_fma(x, y, z) for x, y, z in zip(a, b, c)]
    unfused = (a * b + c).astype(np.float32)
    assert [float(x) for x in got] == exact
    differing = sum(1 for u, e in zip(unfused, exact) if float(u) != e)
    assert differing > 50  # the inputs really separate fused from unfused


def test_ffma_negated_operands_and_reuse_flags():
    a = np.array([1.5, 2.0, -3.0], np.float32)
    b = np.array([2.0, 0.5, 4.0], np.float32)
    c = np.array([1.0, 1.0, 1.0], np.float32)
    assert list(run_lanes("FFMA R13, -R10, R11, R12", a, b, c, dtype=np.float32)) == [-2.0, 0.0, 13.0]
    assert list(run_lanes("FFMA R13, R10, R11, -R12", a, b, c, dtype=np.float32)) == [2.0, 0.0, -13.0]
    assert list(run_lanes("FFMA R13, R10.reuse, R11.reuse, R12", a, b, c, dtype=np.float32)) == [4.0, 2.0, -11.0]


def test_fmul_and_fadd():
    n = 512
    a = (rng.standard_normal(n) * 1e3).astype(np.float32)
    b = (rng.standard_normal(n) * 1e-3).astype(np.float32)
    got = run_lanes("FMUL R13, R10, R11", a, b, dtype=np.float32)
    assert np.array_equal(got, a * b)  # numpy float32 multiply is correctly rounded
    assert all(float(g) == round_f32(Fraction(float(x)) * Fraction(float(y))) for g, x, y in zip(got[:64], a, b))
    got = run_lanes("FADD R13, R10, R11", a, b, dtype=np.float32)
    assert np.array_equal(got, a + b)
    # FMUL R64, R3, R72 with alpha from a constant: FMUL R13, R10, c[0x0][0x140]
    got = run_lanes("FMUL R13, R10, c[0x0][0x140]", a, scalars=[np.float32(0.75)], dtype=np.float32)
    assert np.array_equal(got, a * np.float32(0.75))
    got = run_lanes("FMUL R13, R10, 0.5", a, dtype=np.float32)
    assert np.array_equal(got, a * np.float32(0.5))


def test_xmad_immediate_and_constant_operands():
    a = rand_u32(64)
    got = ints(run_lanes("XMAD R13, R10, 0x1234, R12", a, None, a))
    assert got == [xmad_ref(x, 0x1234, x) for x in ints(a)]
    got = ints(run_lanes("XMAD.CBCC R13, R10, 0xffff, c[0x0][0x140]", a, scalars=[0xFFFFFFFF]))
    assert got == [xmad_ref(x, 0xFFFF, 0xFFFFFFFF, cbcc=True) for x in ints(a)]
    got = ints(run_lanes("XMAD.PSL R13, R10.H1, c[0x0][0x144], RZ", a, scalars=[0, 0xABCD1234]))
    assert got == [xmad_ref(x, 0xABCD1234, 0, a_h1=True, psl=True) for x in ints(a)]


def test_fp_specials_follow_ieee_without_warnings():
    inf, nan = np.float32(np.inf), np.float32(np.nan)
    a = np.array([inf, inf, 3e38, 0.0, nan, -inf], np.float32)
    b = np.array([0.0, 1.0, 10.0, 5.0, 1.0, 1.0], np.float32)
    c = np.array([1.0, -inf, 0.0, -0.0, 1.0, inf], np.float32)
    got = run_lanes("FFMA R13, R10, R11, R12", a, b, c, dtype=np.float32)
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == inf and np.isnan(got[4]) and np.isnan(got[5])
    assert got[3] == 0.0 and not np.signbit(got[3])  # 0*5 + -0 = +0
    got = run_lanes("FMUL R13, R10, R11", a, b, dtype=np.float32)
    assert np.isnan(got[0]) and got[1] == inf and got[2] == inf
