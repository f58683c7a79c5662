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
