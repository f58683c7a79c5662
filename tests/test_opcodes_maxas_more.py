"""Opcodes of hand-written maxas sources beyond the SGEMM set (LOP3.LUT, F2F with half precision,
VMAD, P2R / R2P, STS.U): their semantics against numpy / Python through SASS text -> parser ->
launch, and their encodings against NVIDIA's disassembler."""

from __future__ import annotations

import numpy as np
import pytest

import nvdisasm_tool as N
from maxsim.sass import encoding as E
from sasskit import kernel, run_lanes

NVDISASM = N.find_nvdisasm()
needs_nvdisasm = pytest.mark.skipif(NVDISASM is None, reason="nvdisasm 12.8 not found (set MAXSIM_NVDISASM)")

RNG = np.random.default_rng(37)
A, B, C = (RNG.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(3))


def _agrees_with_nvdisasm(lines):
    """Encode the instruction lines as a kernel; nvdisasm must read back what maxsim decodes,
    and maxsim's decoding must say the text it was given."""
    k = kernel(*lines, "EXIT")
    code = E.encode(k)
    decoded = E.decode(code)
    theirs = N.disassemble(NVDISASM, code)
    bad = []
    for d in decoded[:len(lines)]:
        ours = (d.guard + " " if d.guard else "") + d.text
        if not N.equivalent(N.normalize_ours(ours), N.normalize_nvdisasm(theirs.get(d.address, "<none>"))):
            bad.append((ours, theirs.get(d.address)))
    return bad, decoded


def _lop3_reference(a, b, c, lut):
    out = np.zeros_like(a)
    for i in range(32):
        bit = ((a >> np.uint32(i)) & 1) << 2 | ((b >> np.uint32(i)) & 1) << 1 | ((c >> np.uint32(i)) & 1)
        out |= ((np.uint32(lut) >> bit.astype(np.uint32)) & np.uint32(1)) << np.uint32(i)
    return out


@pytest.mark.parametrize("lut", [0x00, 0xFF, 0x96, 0xE8, 0xF8, 0x3C, 0x80, 0xFE, 0x5A, 0xCA, 0x1B])
def test_lop3_any_lut_against_its_truth_table(lut):
    got = run_lanes(f"LOP3.LUT R13, R10, R11, R12, 0x{lut:x}", A, B, C)
    np.testing.assert_array_equal(got, _lop3_reference(A, B, C, lut))


def test_lop3_immediate_constant_and_predicate_forms():
    got = run_lanes("LOP3.LUT R13, R10, 0x3c0f, R12, 0xe2", A, B, C)
    np.testing.assert_array_equal(got, _lop3_reference(A, np.full_like(A, 0x3C0F), C, 0xE2))
    got = run_lanes(["LOP3.LUT.NZ P1, R13, R10, R11, R12, 0x80", "SEL R13, RZ, 0x1, !P1"], A & 0xF, B & 0xF, C & 0xF)
    np.testing.assert_array_equal(got, ((A & B & C & 0xF) != 0).astype(np.uint32))
    got = run_lanes(["LOP3.LUT.Z P1, R14, R10, R11, R12, 0x80", "SEL R13, RZ, 0x1, !P1"], A & 0xF, B & 0xF, C & 0xF)
    np.testing.assert_array_equal(got, ((A & B & C & 0xF) == 0).astype(np.uint32))
    # the table needs 8 bits
    with pytest.raises(Exception, match="LOP3 lookup table 0x100 is out of range"):
        kernel("LOP3.LUT R13, R10, R11, R12, 0x100", "EXIT")


@needs_nvdisasm
def test_lop3_forms_agree_with_nvdisasm():
    lines = ["LOP3.LUT R13, R10, R11, R12, 0x96", "LOP3.LUT R1, R2, 0x3c0f, R3, 0xe2",
             "LOP3.LUT R1, R2, c[0x0][0x140], R3, 0xf8", "LOP3.LUT.NZ P1, R13, R10, R11, R12, 0x80",
             "LOP3.LUT.Z P2, R4, R5, R6, R7, 0x1"]
    bad, decoded = _agrees_with_nvdisasm(lines)
    assert bad == []
    assert [d.text for d in decoded[:len(lines)]] == [x + "" for x in lines]


def _chain_timing(op, latency):
    """A dependent chain of ``op`` (each reads the previous result), in both timing cores: at the
    latency the assembler writes as stall, instruction i issues at i x latency with no hazard; one
    cycle shorter, every link is a read-after-write hazard."""
    from test_core_parity import twin_simulate
    from maxsim.validate import kernels as K
    n = 6
    _, sm = twin_simulate(K.dependent_chain(n, latency, op=op, exit_stall=K.EXIT_STALL), 1, 32, log=True)
    d = sm.stats.to_dict()
    assert [t for t, _ in K.issues(sm)] == [i * latency for i in range(n + 1)]
    assert d["hazards"] == 0
    _, sm = twin_simulate(K.dependent_chain(n, latency - 1, op=op, exit_stall=K.EXIT_STALL), 1, 32, log=True)
    assert sm.stats.to_dict()["hazards"] == n - 1


def test_lop3_times_as_a_full_rate_alu_instruction_in_both_cores():
    """[maxas-grammar] lists LOP3 with the full-rate (x32) class: its result is ready after
    latency.alu, as IADD's."""
    from maxsim.arch.config import load_config
    _chain_timing("LOP3.LUT R0, R0, R1, R0, 0x96", load_config().latency.alu)


# ---- F2F: fp32 <-> IEEE half -----------------------------------------------------------------
# every finite half, as exact fractions of its value, sorted: an independent reference for the
# rounding of an fp32 to half precision (the nearest neighbours below and above)
_HALF_BITS = np.array([b for b in range(0x10000) if (b >> 10 & 0x1F) != 0x1F], dtype=np.uint16)
_HALF_VALUES = _HALF_BITS.view(np.float16).astype(np.float64)
_ORDER = np.lexsort((_HALF_BITS >> 15, _HALF_VALUES))  # -0 before +0
_HV, _HB = _HALF_VALUES[_ORDER], _HALF_BITS[_ORDER]
_MAXH = 65504.0


def _half_reference(x, mode):
    """binary16 bits of fp32 x under rounding ``mode``, by search in the table of all halves."""
    from fractions import Fraction
    out = []
    for v in np.asarray(x, np.float64):
        if np.isnan(v):
            out.append(0x7FFF)
            continue
        sign = 0x8000 if np.signbit(v) else 0
        if np.isinf(v):
            out.append(sign | 0x7C00)
            continue
        a = abs(v)
        lo_i = np.searchsorted(_HV, a, side="right") - 1  # largest half <= |v| (non-negative part)
        lo = _HV[lo_i]
        if lo == a:
            out.append(sign | int(_HB[lo_i]) & 0x7FFF)
            continue
        hi = _HV[lo_i + 1] if lo_i + 1 < len(_HV) else np.inf  # above 65504: infinity
        toward_zero, away = (lo, hi)
        if mode == "RN":
            if a >= _MAXH + 16:  # halfway between 65504 and 2^16 rounds to infinity
                pick = np.inf
            elif a > _MAXH:
                pick = lo
            else:
                d_lo, d_hi = Fraction(a) - Fraction(lo), Fraction(hi) - Fraction(a)
                pick = lo if d_lo < d_hi else hi if d_hi < d_lo else (
                    lo if int(_HB[lo_i]) & 1 == 0 else hi)
        elif mode == "RZ":
            pick = toward_zero
        elif mode == "RP":
            pick = away if not sign else toward_zero
        else:
            pick = toward_zero if not sign else away
        out.append(sign | (0x7C00 if np.isinf(pick) else int(_HB[np.searchsorted(_HV, pick)]) & 0x7FFF))
    return np.array(out, dtype=np.uint32)


_F32_CASES = np.concatenate([
    np.array([0.0, -0.0, 1.0, -1.0, 1 / 3, 65504, 65519.99, 65520, 70000, -70000, 1e-7, -1e-7, 2.0 ** -24,
              2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -14, 2.0 ** -14 - 2.0 ** -25, 1e-40, np.inf, -np.inf, np.nan,
              2049, 2051, 1.00048828125, 1.00146484375], np.float32),
    (RNG.standard_normal(300) * np.exp2(RNG.integers(-30, 18, 300))).astype(np.float32)])


@pytest.mark.parametrize("mode", ["RN", "RZ", "RM", "RP"])
def test_f2f_f16_f32_rounds_as_ieee_half_with_subnormals(mode):
    suffix = "" if mode == "RN" else f".{mode}"
    got = run_lanes(f"F2F.F16.F32{suffix} R13, R10", _F32_CASES)
    np.testing.assert_array_equal(got, _half_reference(_F32_CASES, mode))
    if mode == "RN":  # and numpy's own conversion agrees
        with np.errstate(over="ignore"):
            want = _F32_CASES[~np.isnan(_F32_CASES)].astype(np.float16).view(np.uint16)
        np.testing.assert_array_equal(got[~np.isnan(_F32_CASES)], want)


def test_f2f_f32_f16_reads_either_half_exactly():
    halves = RNG.integers(0, 0x10000, 400).astype(np.uint32)
    halves[:6] = [0x0001, 0x8001, 0x03FF, 0x7BFF, 0x7C00, 0xFC00]  # subnormals, the largest, infinities
    other = RNG.integers(0, 0x10000, 400).astype(np.uint32)
    word = halves | other << 16
    want = halves.astype(np.uint16).view(np.float16).astype(np.float32)
    lo = run_lanes("F2F.F32.F16 R13, R10", word, dtype=np.float32)
    hi = run_lanes("F2F.F32.F16 R13, R10.H1", other | halves << 16, dtype=np.float32)
    h0 = run_lanes("F2F.F32.F16 R13, R10.H0", word, dtype=np.float32)
    for got in (lo, hi, h0):
        np.testing.assert_array_equal(got.view(np.uint32)[~np.isnan(want)], want.view(np.uint32)[~np.isnan(want)])
        assert np.isnan(got[np.isnan(want)]).all()
    # the FTZ form is the same (a half is never an fp32 subnormal); -|a| applies to the value
    np.testing.assert_array_equal(run_lanes("F2F.FTZ.F32.F16 R13, -|R10|", word, dtype=np.float32)[:6],
                                  -np.abs(want[:6]))


def test_f2f_f16_result_is_zero_extended_and_round_trips():
    x = _F32_CASES[np.isfinite(_F32_CASES) & (np.abs(_F32_CASES) < 60000)]
    got = run_lanes(["MOV32I R13, 0xffffffff", "F2F.F16.F32 R13, R10"], x)
    assert (got >> 16 == 0).all()
    back = run_lanes(["F2F.F16.F32 R14, R10", "F2F.F32.F16 R13, R14"], x, dtype=np.float32)
    np.testing.assert_array_equal(back, x.astype(np.float16).astype(np.float32))


def test_f2f_f32_f32_integral_ftz_sat_and_pass_forms():
    x = np.array([2.5, -2.5, 3.5, -0.4, 0.6, 1e-40, -1e-40, 1.7, np.nan, 7.0], np.float32)
    ftz = lambda v: np.where(np.abs(v) < np.float32(2.0 ** -126), np.float32(0) * np.sign(v), v).astype(np.float32)
    for mode, fn in (("ROUND", np.rint), ("FLOOR", np.floor), ("CEIL", np.ceil), ("TRUNC", np.trunc)):
        np.testing.assert_array_equal(run_lanes(f"F2F.F32.F32.{mode} R13, R10", x, dtype=np.float32), fn(x))
    # nvdisasm's spelling: F2F.FTZ.F32.F32.FLOOR.SAT
    got = run_lanes("F2F.FTZ.F32.F32.FLOOR.SAT R13, R10", x, dtype=np.float32)
    np.testing.assert_array_equal(got, np.where(np.isnan(x), 0, np.clip(np.floor(ftz(x)), 0, 1)))
    got = run_lanes("F2F.F32.F32.PASS R13, R10", x, dtype=np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), x.view(np.uint32))
    got = run_lanes("F2F.FTZ.F32.F32 R13, R10", x, dtype=np.float32)
    np.testing.assert_array_equal(got, ftz(x))
    got = run_lanes("F2F.F32.F32.SAT R13, R10", x, dtype=np.float32)
    np.testing.assert_array_equal(got, np.where(np.isnan(x), 0, np.clip(x, 0, 1)))
    # F16 -> F16 rounds the selected half to an integral half
    h = np.array([0x4100, 0xC100, 0x3800], np.uint32)  # 2.5, -2.5, 0.5
    got = run_lanes("F2F.F16.F16.ROUND R13, R10.H1", h << 16)
    assert got.tolist() == [0x4000, 0xC000, 0x0000]


def test_f2f_half_selection_needs_an_f16_source():
    with pytest.raises(Exception, match=r"\.H1 of F2F selects the high half of an F16 source"):
        kernel("F2F.F32.F32 R13, R10.H1", "EXIT")
    # an F64 side is a register pair (F2F.F64.F32 writes R12 and R13)
    assert kernel("F2F.F64.F32 R12, R10", "EXIT").instructions[-2].dst_regs == (12, 13)
    with pytest.raises(Exception, match=r"F2F\.FLOOR needs equal types"):
        kernel("F2F.F32.F16.FLOOR R12, R10", "EXIT")


@needs_nvdisasm
def test_f2f_forms_agree_with_nvdisasm():
    lines = ["F2F.F16.F32 R13, R10", "F2F.F16.F32.RZ R13, R10", "F2F.F16.F32.RM R1, -R2", "F2F.F16.F32.RP R1, R2",
             "F2F.FTZ.F16.F32.SAT R1, |R2|", "F2F.F32.F16 R1, R2", "F2F.F32.F16 R1, R2.H1",
             "F2F.F32.F16.RM R1, R2.H1", "F2F.F16.F16 R3, R4.H1", "F2F.F16.F16.FLOOR R3, R4", "F2F.F32.F32.TRUNC R11, R0",
             "F2F.FTZ.F32.F32.FLOOR.SAT R12, R0", "F2F.F32.F32.PASS R1, R2", "F2F.FTZ.F32.F32 R1, R2",
             "F2F.F32.F32.ROUND R1, 1.5", "F2F.F16.F32 R1, c[0x0][0x140]"]
    bad, decoded = _agrees_with_nvdisasm(lines)
    assert bad == []
    # ptxas's words (NVRTC 12.9, sm_52) decode to these texts
    for word, text in ((0x5CA8058000070A0B, "F2F.F32.F32.TRUNC R11, R0"),
                       (0x5CAC148000070A0C, "F2F.FTZ.F32.F32.FLOOR.SAT R12, R0"),
                       (0x5CA801800007090A, "F2F.F16.F32.RZ R10, R0"), (0x5CA8000000F7060F, "F2F.F32.F16 R15, R15")):
        code = E._pack([(word, 0x7E0, 0), (E._BY_OPCODE["NOP"][0].code | 7 << 16, 0x7E0, 0)] * 1
                       + [(E._BY_OPCODE["NOP"][0].code | 7 << 16, 0x7E0, 0)])
        d = E.decode(code, stop_at_self_branch=False)[0]
        assert N.equivalent(N.normalize_ours(d.text), N.normalize_nvdisasm(text)), (d.text, text)


def test_f2f_times_on_the_quarter_rate_unit_in_both_cores():
    """Conversions are maxas's quarter-rate class (xu, pipes.xu = 0.25 of a warp per clock): a
    chain of F2F whose links wait on the write barrier of the one before issues one every 4 cycles,
    identically in both cores, without hazard."""
    from test_core_parity import twin_simulate
    from maxsim.arch.config import load_config
    from maxsim.validate import kernels as K
    assert load_config().pipes.xu == 0.25
    src = "\n".join(["01:-:1:-:1 F2F.F32.F16 R0, R0.H1;", "01:-:1:-:1 F2F.F16.F32.RZ R0, R0;"] * 3
                    + [K.exit_line(K.EXIT_STALL)])
    _, sm = twin_simulate(K.kernel(src), 1, 32, log=True)
    assert [t for t, _ in K.issues(sm)][:6] == [0, 4, 8, 12, 16, 20]
    assert sm.stats.to_dict()["hazards"] == 0


def test_sts_u_128_is_the_store_maxas_assembles():
    """maxas reads .U on STS and encodes the same word as STS.128 (its grammar has the bit for LDS
    only): STS.U.128 stores 16 bytes per lane, and encodes as STS.128."""
    from maxsim.functional import GlobalMemory, launch
    k = kernel("--:-:1:-:1 S2R R0, SR_TID.X", "01:-:-:-:6 SHL R20, R0, 0x4", "IADD R4, R0, 0x100",
               "IADD R5, R0, 0x200", "IADD R6, R0, 0x300", "--:-:-:-:6 IADD R7, R0, 0x400",
               "--:1:-:-:1 STS.U.128 [R20], R4", "01:-:2:-:1 LDS.U.32 R13, [R20+0x8]", "SHL R2, R0, 0x2",
               "--:-:-:-:6 IADD R2, R2, c[0x0][0x140]", "02:-:-:-:1 STG [R2], R13", "--:-:-:-:5 EXIT",
               shared=64 * 16, nparams=1)
    mem = GlobalMemory()
    out = mem.alloc(4 * 64)
    launch(k, 1, 64, [out], mem)
    np.testing.assert_array_equal(mem.read(out, 64, np.uint32), np.arange(64) + 0x300)
    a, b = (E.encode(kernel(x, "EXIT"), tail=False) for x in ("STS.U.128 [R20+0x10], R4", "STS.128 [R20+0x10], R4"))
    assert a == b


# ---- VMAD ------------------------------------------------------------------------------------

def _vmad_reference(a, b, c, at, bt, ah, bh, nega, negc, shr, sat):
    """PTX ISA's pseudo-code of vmad, lane by lane in Python integers (128-bit temporaries)."""
    def sel(x, t, h):
        bits = int(t[1:])
        v = (int(x) >> (16 * h)) & ((1 << bits) - 1)
        return v - (1 << bits) if t[0] == "S" and v >> (bits - 1) else v
    out = []
    for x, y, z in zip(a, b, c):
        signed_final = at[0] == "S" or bt[0] == "S" or nega or negc
        tmp = (sel(x, at, ah) * sel(y, bt, bh)) & ((1 << 128) - 1)
        z = int(z)
        lsb = 0
        if nega:
            tmp, lsb = ~tmp & ((1 << 128) - 1), 1
        elif negc:
            z, lsb = ~z & 0xFFFFFFFF, 1
        c128 = (z - (1 << 32) if z >> 31 else z) if signed_final else z
        tmp = (tmp + c128 + lsb) & ((1 << 128) - 1)
        tmp = tmp - (1 << 128) if tmp >> 127 else tmp  # the signed value (|a*b| + |c| < 2^127)
        r = tmp >> shr
        if sat:
            r = max(-(1 << 31), min((1 << 31) - 1, r)) if signed_final else max(0, min((1 << 32) - 1, r))
        out.append(r & 0xFFFFFFFF)
    return np.array(out, dtype=np.uint32)


_VA, _VB, _VC = (RNG.integers(0, 1 << 32, 200, dtype=np.uint64).astype(np.uint32) for _ in range(3))
_VA[:4], _VB[:4], _VC[:4] = [0xFFFF, 0x8000, 0x7FFF8000, 0], [0xFFFF, 0x8000, 0x80007FFF, 0], \
    [0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0]


@pytest.mark.parametrize("types", ["U16.U16", "S16.U16", "U16.S16", "S16.S16", "U8.U8", "S8.S8", "U16.S8"])
@pytest.mark.parametrize("form", ["{a}, {b}, R12", "-{a}, {b}, R12", "{a}, {b}, -R12"])
def test_vmad_selections_and_sign_modes_against_the_ptx_definition(types, form):
    at, bt = types.split(".")
    for ah, bh in ((0, 0), (1, 0), (0, 1)):
        if (ah and at[1:] != "16") or (bh and bt[1:] != "16"):
            continue
        text = form.format(a="R10.H1" if ah else "R10", b="R11.H1" if bh else "R11")
        got = run_lanes(f"VMAD.{types} R13, {text}", _VA, _VB, _VC)
        want = _vmad_reference(_VA, _VB, _VC, at, bt, ah, bh, text.startswith("-"), "-R12" in text, 0, False)
        np.testing.assert_array_equal(got, want, err_msg=text)


@pytest.mark.parametrize("mods,shr,sat", [(".SHR_7", 7, False), (".SHR_15", 15, False), (".SAT", 0, True),
                                          (".SHR_7.SAT", 7, True)])
def test_vmad_scale_and_saturation(mods, shr, sat):
    for types, neg in (("U16.U16", False), ("S16.S16", False), ("U16.U16", True)):
        at, bt = types.split(".")
        got = run_lanes(f"VMAD.{types}{mods} R13, {'-' if neg else ''}R10.H1, R11, R12", _VA, _VB, _VC)
        np.testing.assert_array_equal(got, _vmad_reference(_VA, _VB, _VC, at, bt, 1, 0, neg, False, shr, sat))


def test_vmad_index_arithmetic_as_direct_convolutions_write_it():
    """lutOffset = posCRST - channel * lutSize: VMAD.U16.U16 with the product negated."""
    channel, lut_size, pos = np.arange(60) % 16, np.full(60, 9), np.arange(60) * 3 + 200
    got = run_lanes("VMAD.U16.U16 R13, -R10, R11, R12", channel, lut_size, pos).view(np.int32)
    np.testing.assert_array_equal(got, pos - channel * lut_size)


def test_vmad_operands_it_cannot_take_are_named():
    for text, what in (("VMAD.U8.U8 R1, R2.H1, R3, R4", r"\.H1 of VMAD selects the high half of a 16-bit"),
                       ("VMAD.U16.U16 R1, R2, -R3, R4", "operand 3 takes no '-'"),
                       ("VMAD.U16.U16 R1, -R2, R3, -R4", "not both"),
                       ("VMAD R1, R2, R3, R4", r"VMAD needs one of the modifiers"),
                       ("VMAD.U16.U16 R1, R2.B1, R3, R4", r"\.B1 in 'R2\.B1' is not modelled")):
        with pytest.raises(Exception, match=what):
            kernel(text, "EXIT")


@needs_nvdisasm
def test_vmad_forms_agree_with_nvdisasm():
    lines = ["VMAD.U16.U16 R1, R2, R3, R4", "VMAD.S16.U16 R1, -R2.H1, R3, R4", "VMAD.U16.S16 R1, R2, R3.H1, -R4",
             "VMAD.S16.S16.SHR_7 R1, R2, R3, R4", "VMAD.U16.U16.SHR_15.SAT R1, R2, R3, R4", "VMAD.U8.U8 R5, R6, R7, R8",
             "VMAD.S8.U16 R5, R6, R7.H1, R8", "VMAD.U16.S8 R5, R6.H1, R7, R8"]
    bad, decoded = _agrees_with_nvdisasm(lines)
    assert bad == []


def test_vmad_times_as_maxas_classes_it_in_both_cores():
    """[maxas-grammar]: VMAD with 16-bit types is full rate (x32), with 8-bit ones the shift class;
    both have the 6-cycle ALU latency: a dependent chain at latency.alu has no hazard, one cycle
    less a hazard per link."""
    from maxsim.arch.config import load_config
    from maxsim.sass.parser import parse_instruction
    assert parse_instruction("--:-:-:-:1 VMAD.U16.U16 R0, R0, R1, R0;").unit == "alu"
    assert parse_instruction("--:-:-:-:1 VMAD.U8.S8 R0, R0, R1, R0;").unit == "alu_half"
    lat = load_config().latency
    _chain_timing("VMAD.U16.U16 R0, -R0, R1, R0", lat.alu)
    _chain_timing("VMAD.U8.U8 R0, R0, R1, R0", lat.alu_half)
