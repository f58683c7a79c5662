"""The hazard rules of docs/hazard-rules.md, each in both directions, in the static check
(maxsim.analysis.controls, `maxsim analyze`) and in the timing model's dynamic check (both cores).

The rules live in maxsim/isa/issue.py and the config's [latency] section. Kernels are written the
way maxas users write them: maxas text with hand-set control codes, and the library kernel
workloads/kernels/colsum.sass, whose loop ends like the maxas convolutions derived from sgemm64
(an IADD dual-issued with the BRA, the loop head's ISETP reading its result).
"""

from __future__ import annotations

import numpy as np
import pytest

import maxsim
from maxsim.analysis import check_controls
from maxsim.arch.config import load_config, override
from maxsim.asm.assemble import assemble_text
from maxsim.errors import HazardError
from maxsim.isa.issue import can_dual_issue
from maxsim.timing.run import simulate
from maxsim.validate.kernels import issues, kernel
from workloads import kernels as library

CFG = load_config()
LAT = CFG.latency


@pytest.fixture(params=["compiled", "python"])
def core(request, monkeypatch):
    """Each dynamic test runs on both SM cores."""
    monkeypatch.setenv("MAXSIM_CORE", request.param)
    return request.param


def static(body, cfg=None):
    return check_controls(kernel(body, shared=128), cfg)


def dynamic(body, cfg=None, block=32, **kw):
    """(issue log of warp 0 as [(cycle, pc)], hazard messages) of a timing run of ``body``."""
    _, sm = simulate(kernel(body, shared=128), 1, block, cfg=cfg, log=True, **kw)
    return issues(sm, 0), sm.stats.hazards


# ---- the convolution's loop end: colsum.sass ---------------------------------------------------

def _colsum(rows, cols, block=128, cfg=None, hazards="strict"):
    rng = np.random.default_rng(rows * 1000 + cols)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    r = maxsim.launch(library.path("colsum"), grid=-(-cols // block), block=block, config=cfg,
                      params={"a": "a", "out": "out", "rows": rows, "cols": cols},
                      buffers={"a": a, "out": np.zeros(cols, np.float32)}, hazards=hazards, predict=False)
    want = np.zeros(cols, np.float32)
    for row in a:  # the kernel's order: row by row in fp32
        want = want + row
    return r, want


@pytest.mark.parametrize("rows,cols", [(1, 40), (7, 300), (37, 129)])
def test_colsum_loop_end_matches_numpy_with_no_hazard(rows, cols, core):
    # hazards="strict": a hazard of the dynamic check would raise
    r, want = _colsum(rows, cols)
    assert np.array_equal(r.read("out"), want)
    assert r.timing["hazards"] == 0


def test_colsum_assembles_with_no_static_hazard():
    asm = assemble_text(library.source("colsum"), "colsum.sass")
    assert asm.hazards == () and check_controls(asm.kernel) == []
    text = [x.split(None, 1) for x in asm.text.splitlines() if x[:2] in ("--", "0")]
    ctrl = {t.split(";")[0].strip(): c for c, t in text}
    # the pairs as written: MOV + LDC twice, IADD + BRA at the loop end
    assert ctrl["MOV R24, RZ"].endswith(":0") and ctrl["@P0 IADD R5, R5, R20"].endswith(":0")


def test_colsum_with_the_branch_costing_only_its_stall_count_is_flagged(core):
    # the rule in the other direction: were a taken branch's target to issue after the BRA's stall
    # count (5), the loop head would read `track` 1 cycle early - what both checks reported before
    cfg = override(CFG, {"latency.branch_taken": 5})
    asm = assemble_text(library.source("colsum"), "colsum.sass", cfg=cfg)
    hz = check_controls(asm.kernel, cfg)
    assert [(h.kind, h.distance, h.required) for h in hz] == [("raw-alu", 5, 6)]
    assert "ISETP.LT.AND" in hz[0].message and "back edge of BRA" in hz[0].message
    r, want = _colsum(7, 64, cfg=cfg, hazards="warn")
    assert np.array_equal(r.read("out"), want)  # the model computes as written; it warns
    assert r.timing["hazards"] == 6 * 2  # 6 taken back branches, 2 warps
    msg = r.sm.stats.hazards[0]
    assert "ISETP.LT.AND reads R5" in msg and "1 cycle(s) before the result of IADD" in msg


# ---- a taken branch: its target issues latency.branch_taken cycles on ----------------------------

LOOP = """
--:-:-:-:1 MOV R1, RZ;
--:-:-:-:6 MOV32I R2, 0x4;
LOOP:
--:-:-:-:d ISETP.LT.AND P0, PT, R1, R2, PT;
--:-:-:-:0 @P0 IADD R1, R1, 0x1;
--:-:-:-:5 @P0 BRA LOOP;
--:-:-:-:5 EXIT;
"""


def test_result_of_the_instruction_paired_with_a_taken_branch_is_ready_at_the_target(core):
    assert static(LOOP) == []
    log, hz = dynamic(LOOP, hazards="strict")
    # MOV 0, MOV32I 1; ISETP 7, IADD + BRA 20 (13 on), ISETP 26 (the taken branch: 6 on) ...
    head = [t for t, pc in log if pc == 2]
    assert head[:2] == [7, 7 + LAT.predicate + max(LAT.branch, LAT.branch_taken)]
    assert [t for t, pc in log if pc == 3][0] == [t for t, pc in log if pc == 4][0]  # dual issue
    assert len(head) == 5 and hz == []
    # the branch not taken costs its stall count: the EXIT issues 5 cycles after the last BRA
    bra, exit_ = [t for t, pc in log if pc == 4][-1], [t for t, pc in log if pc == 5][0]
    assert exit_ - bra == LAT.branch


def test_predicate_paired_with_a_taken_branch_is_not_ready_at_the_target(core):
    # an ISETP dual-issued with the BRA, its predicate read at the loop head: 6 cycles of 13
    body = """
--:-:-:-:1 MOV R1, RZ;
--:-:-:-:6 MOV32I R2, 0x4;
--:-:-:-:d ISETP.LT.AND P1, PT, R1, R2, PT;
LOOP:
--:-:-:-:6 @P1 IADD R1, R1, 0x1;
--:-:-:-:d ISETP.LT.AND P0, PT, R1, R2, PT;
--:-:-:-:0 ISETP.LT.AND P1, PT, R1, R2, PT;
--:-:-:-:5 @P0 BRA LOOP;
--:-:-:-:5 EXIT;
"""
    (h,) = static(body)
    assert (h.kind, h.index, h.other, h.distance, h.required, h.loop) == ("raw-predicate", 3, 5, 6, 13, 6)
    log, hz = dynamic(body)
    assert hz and all("@P1 IADD" not in m and "IADD reads P1" in m for m in hz)
    assert "7 cycle(s) before the result of ISETP.LT.AND" in hz[0]


def test_result_paired_with_a_branch_read_on_the_fall_through_path(core):
    # not taken, a branch costs its stall count: the IADD's result is read 5 cycles on, 1 early
    body = """
--:-:-:-:d ISETP.LT.AND P0, PT, R1, RZ, PT;
--:-:-:-:0 IADD R3, R1, 0x1;
--:-:-:-:5 @P0 BRA L;
--:-:-:-:6 IADD R4, R3, 0x1;
L:
--:-:-:-:5 EXIT;
"""
    (h,) = static(body)
    assert (h.kind, h.index, h.other, h.distance, h.required) == ("raw-alu", 3, 1, 5, 6)
    log, hz = dynamic(body)  # R1 = 0: P0 false, the branch falls through
    assert len(hz) == 1 and "IADD reads R3" in hz[0] and "1 cycle(s) before" in hz[0]
    with pytest.raises(HazardError):
        dynamic(body, hazards="strict")
    assert static(body.replace("--:-:-:-:0 IADD R3", "--:-:-:-:1 IADD R3")) == []
    assert dynamic(body.replace("--:-:-:-:0 IADD R3", "--:-:-:-:1 IADD R3"))[1] == []


# ---- dual issue -------------------------------------------------------------------------------

def _pair(first, second):
    return f"""
--:-:-:-:0 {first};
{second}
--:-:-:-:5 EXIT;
"""


def _same_cycle(body):
    log, _ = dynamic(body)
    return log[0][0] == log[1][0]


@pytest.mark.parametrize("first,second", [
    ("IADD R5, R1, 0x4", "--:-:1:-:5 LDC R6, c[0x0][0x0]"),  # the convolution's hand-written pairs
    ("MOV R5, c[0x0][0x4]", "--:-:1:-:5 LDC R6, c[0x0][0x0]"),  # LDC's address is no constant operand
    ("FFMA R5, R1, R2, R3", "--:-:1:-:5 MUFU.RCP R6, R7"),  # the quarter-rate unit is a second
    ("ISETP.LT.AND P1, PT, R1, R2, PT", "--:-:1:-:5 I2F.F32.S32 R6, R7"),
    ("SHL R5, R1, 0x2", "--:-:-:-:5 BAR.SYNC 0x0"),
    ("S2R R5, SR_TID.X", "--:-:1:-:5 LDS R6, [R7]"),  # maxas's s2r class starts pairs too
    ("POPC R5, R1", "--:-:-:-:5 STS [R7], R1"),
])
def test_legal_pairs(first, second, core):
    body = _pair(first, second)
    k = kernel(body)
    assert can_dual_issue(k.instructions[0], k.instructions[1])
    assert [h.kind for h in static(body) if h.kind == "illegal-dual-issue"] == []
    assert _same_cycle(body)


@pytest.mark.parametrize("first,second,why", [
    ("LDC R5, c[0x0][0x0]", "--:-:-:-:5 IADD R6, R1, 0x4", "LDC cannot start"),
    ("MUFU.RCP R5, R1", "--:-:-:-:5 FFMA R6, R1, R2, R3", "MUFU cannot start"),
    ("LDS R5, [R1]", "--:-:-:-:5 FFMA R6, R1, R2, R3", "LDS cannot start"),
    ("MOV R5, c[0x0][0x4]", "--:-:1:-:5 I2F.F32.S32 R6, c[0x0][0x8]", "both read a constant"),
])
def test_illegal_pairs(first, second, why, core):
    body = _pair(first, second)
    hz = [h for h in static(body) if h.kind == "illegal-dual-issue"]
    assert len(hz) == 1 and why in hz[0].message
    assert not _same_cycle(body)  # the timing model issues the second a cycle later


@pytest.mark.parametrize("first,second", [
    ("IADD R5, R1, 0x4", "--:-:-:-:5 FFMA R6, R1, R2, R3"),
    ("SHR R5, R1, 0x4", "--:-:1:-:5 POPC R6, R1"),  # ptxas, warp_vote.cu
    ("MOV R5, R1", "--:-:1:-:5 S2R R6, SR_TID.X"),  # ptxas, matmul_tiled.cu, scan.cu
    ("VOTE.ANY R5, PT, PT", "--:-:-:-:5 EXIT"),  # ptxas, warp_vote.cu
])
def test_stall_0_before_an_instruction_that_cannot_pair_is_no_hazard(first, second, core):
    # ptxas writes a stall of 0 before S2R, POPC and EXIT: the pair is not dual-issued, the second
    # issues a cycle later, and nothing is left open
    body = _pair(first, second)
    k = kernel(body)
    assert not can_dual_issue(k.instructions[0], k.instructions[1])
    assert [h.kind for h in static(body) if h.kind == "illegal-dual-issue"] == []
    assert not _same_cycle(body)


def test_the_second_of_a_pair_starts_no_other():
    (h,) = static("""
--:-:-:-:0 IADD R5, R1, 0x4;
--:-:-:-:0 STS [R7], R1;
--:-:-:-:5 LDS R6, [R7];
--:-:-:-:5 EXIT;
""")
    assert h.kind == "illegal-dual-issue" and h.index == 1


# ---- LDC: a variable-latency result behind a write barrier --------------------------------------

def test_ldc_result_needs_its_write_barrier(core):
    read = "--:-:-:-:6 IADD R2, R1, 0x1;"
    (h,) = static(f"--:-:1:-:2 LDC R1, c[0x0][0x0];\n{read}\n--:-:-:-:5 EXIT;")
    assert h.kind == "variable-latency-without-wait"
    _, hz = dynamic(f"--:-:1:-:2 LDC R1, c[0x0][0x0];\n{read}\n--:-:-:-:5 EXIT;")
    assert len(hz) == 1 and "IADD reads R1" in hz[0] and f"{LAT.ldc - 2} cycle(s) before the result of LDC" in hz[0]
    ok = f"--:-:1:-:2 LDC R1, c[0x0][0x0];\n01{read[2:]}\n--:-:-:-:5 EXIT;"
    assert static(ok) == [] and dynamic(ok, hazards="strict")[1] == []


def test_ldc_reads_its_address_register_four_cycles_after_issue():
    # register-indexed LDC: the address register is read mem_operand_read_constant (4) cycles late,
    # so an ALU result may feed it 2 cycles after issue
    body = "--:-:-:-:{s} IADD R2, R3, 0x4;\n--:-:1:-:2 LDC R1, c[0x3][R2+0x4];\n01:-:-:-:1 MOV R5, R1;\n--:-:-:-:5 EXIT;"
    assert static(body.format(s=LAT.alu - LAT.mem_operand_read_constant)) == []
    (h,) = static(body.format(s=LAT.alu - LAT.mem_operand_read_constant - 1))
    assert h.kind == "raw-alu" and "LDC reads its operands 4 cycles after issue" in h.message


@pytest.mark.parametrize("op,late", [("MUFU.RCP R2, R1", LAT.xu_operand_read),
                                     ("I2F.F32.S32 R2, R1", LAT.xu_operand_read), ("POPC R2, R1", 0)])
def test_quarter_rate_ops_read_their_operands_late(op, late, core):
    # MUFU and the conversions read their source 4 cycles after issue (maxas's qtr class); POPC and
    # FLO at issue (its s2r class): an IADD may feed MUFU 2 cycles on, POPC only 6 on
    body = "--:-:-:-:{s} IADD R1, R3, 0x4;\n--:-:1:-:2 " + op + ";\n01:-:-:-:1 MOV R5, R2;\n--:-:-:-:5 EXIT;"
    need = LAT.alu - late
    assert static(body.format(s=need)) == [] and dynamic(body.format(s=need), hazards="strict")[1] == []
    (h,) = static(body.format(s=need - 1))
    assert (h.kind, h.distance, h.required) == ("raw-alu", need - 1, need)
    _, hz = dynamic(body.format(s=need - 1))
    assert len(hz) == 1 and "reads R1" in hz[0] and "1 cycle(s) before the result of IADD" in hz[0]


# ---- a 64-bit global address: its high word is read one cycle after the low word -----------------

def _address_pair(last, stall, op="LDG.E.CI.128 R4, [R10]"):
    """A 64-bit address {R11:R10} made by LEA / LEA.HI.X, the word ``last`` written ``stall``
    cycles before the load after the next label (as the maxas kernel of the rule ends a schedule
    block), then the load's result read."""
    lo, hi = "LEA R10.CC, R1, R10, 0x2;", "LEA.HI.X R11, R1, R11, RZ, 0x2;"
    a, b = (lo, hi) if last == "high" else (hi, lo)
    return (f"--:-:-:-:1 MOV R1, RZ;\n--:-:-:-:1 MOV R10, c[0x0][0x140];\n--:-:-:-:6 MOV R11, RZ;\n"
            f"--:-:-:-:6 {a}\n--:-:-:-:{stall} {b}\nNEXT:\n--:-:1:-:2 {op};\n01:-:-:-:1 MOV R8, R4;\n"
            f"--:-:-:-:5 EXIT;")


def _dynamic_pair(body):
    from maxsim.functional import GlobalMemory
    mem = GlobalMemory()
    buf = mem.alloc(64)
    _, sm = simulate(kernel(body, shared=128), 1, 32, [buf], mem, log=True)
    return sm.stats.hazards


@pytest.mark.parametrize("op", ["LDG.E.CI.128 R4, [R10]", "LDG.E R4, [R10+0x4]", "STG.E.64 [R10], R4"])
def test_the_high_word_of_a_64_bit_address_may_come_one_cycle_later(op, core):
    """LEA.HI.X at stall 1 before the load: legal (the high word is read at
    mem_operand_read_global + mem_operand_read_address_high = 5 cycles); at stall 0 (dual issue,
    read at 5 < 6) a hazard; the low word at stall 1 a hazard as before (read at 4)."""
    assert LAT.mem_operand_read_global + LAT.mem_operand_read_address_high == LAT.alu - 1
    legal = _address_pair("high", 1, op)
    assert static(legal) == [] and _dynamic_pair(legal) == []
    for last, stall in (("low", 1), ("high", 0), ("low", 0)):
        body = _address_pair(last, stall, op)
        (h,) = static(body)
        reg = "R10" if last == "low" else "R11"
        assert h.kind == "raw-alu" and f"reads {reg} too early" in h.message, (last, stall, h.message)
        hz = _dynamic_pair(body)
        assert len(hz) == 1 and f"reads {reg}" in hz[0], (last, stall, hz)
    # at the low word's distance both are in time
    assert static(_address_pair("low", 2, op)) == [] and _dynamic_pair(_address_pair("low", 2, op)) == []


def test_the_high_word_read_late_needs_the_e_form_and_a_pair():
    """A 32-bit address, or a high word that is also the data of the store, is read at 4."""
    body = ("--:-:-:-:1 MOV R10, c[0x0][0x140];\n--:-:-:-:6 MOV R11, RZ;\n--:-:-:-:1 IADD R11, R11, 0x1;\n"
            "--:-:-:-:1 STG.E [R10], R11;\n--:-:-:-:5 EXIT;")
    (h,) = static(body)
    assert "reads R11 too early" in h.message
    body32 = "--:-:-:-:6 MOV R10, c[0x0][0x140];\n--:-:-:-:1 IADD R11, R10, 0x4;\n--:-:1:-:2 LDG R4, [R11];\n" \
             "01:-:-:-:5 EXIT;"
    (h,) = static(body32)
    assert "reads R11 too early" in h.message


# ---- S2R results may arrive out of order ---------------------------------------------------------

def test_s2r_results_each_need_their_own_barrier():
    # [maxas-cc]: "not wise to share a barrier between S2R instructions. These can be processed out
    # of order": waiting on the second S2R's barrier does not cover the first one's result
    body = """
--:-:1:-:1 S2R R0, SR_TID.X;
--:-:2:-:2 S2R R1, SR_CTAID.X;
{w}:-:-:-:6 IADD R2, R0, R1;
--:-:-:-:5 EXIT;
"""
    (h,) = static(body.format(w="02"))
    assert h.kind == "variable-latency-without-wait" and "R0" in h.message and "barrier 1" in h.message
    assert static(body.format(w="03")) == []


# ---- the documentation page ---------------------------------------------------------------------

def test_the_page_quotes_colsum_as_it_is_and_analyze_finds_no_hazard(capsys):
    import re
    from pathlib import Path

    from maxsim.cli import main
    page = (Path(__file__).resolve().parents[1] / "docs" / "hazard-rules.md").read_text()
    src = library.source("colsum")
    blocks = re.findall(r"```text\n(.*?)```", page, re.S)
    assert len(blocks) == 2
    for block in blocks:
        for line in block.splitlines():
            assert line in src, line
    cmd = re.search(r"```sh\n(maxsim analyze \S+)\s+# (.*)\n```", page)
    assert main(cmd.group(1).split()[1:] + ["--rows", "none"]) == 0
    assert cmd.group(2) in capsys.readouterr().out
    for key in ("branch_taken", "mem_operand_read_constant", "mem_operand_read_address_high"):  # the config keys the page names
        assert f"`latency.{key}`" in page or f"`{key}`" in page
        assert hasattr(LAT, key)


# ---- DEPBAR.LE: all but the latest n ops of a barrier ---------------------------------------------

_DEPBAR = """
--:-:6:-:1 LDS R4, [RZ];
--:-:6:-:1 LDS R5, [RZ+0x4];
--:-:6:-:1 LDS R6, [RZ+0x8];
--:-:-:-:1 DEPBAR.LE SB5, {n};
--:-:-:-:6 IADD R7, R4, R5;
20:-:-:-:1 IADD R8, R6, R7;
--:-:-:-:5 EXIT;
"""


def test_depbar_le_waits_for_all_but_the_latest_n(core):
    # ptxas's DEPBAR.LE SB5, n (stencil.cu, transpose.cu, matmul.cu): the warp goes on once at most n
    # ops of barrier 6 are out; the ops complete in order, so the earlier ones are done
    ok = _DEPBAR.format(n="0x1")
    assert static(ok) == []
    log, hz = dynamic(ok, hazards="strict")
    assert hz == []
    # one more left out: R5's LDS may still be out when the IADD reads it, in both checks
    bad = _DEPBAR.format(n="0x2")
    (h,) = static(bad)
    assert h.kind == "variable-latency-without-wait" and "R5" in h.message
    log2, hz2 = dynamic(bad)
    assert len(hz2) == 1 and "reads R5" in hz2[0]
    # the wait holds the IADD until the second LDS is done with n = 1, the first with n = 2
    at = {pc: c for c, pc in log}
    at2 = {pc: c for c, pc in log2}
    assert at[4] > at2[4] > at2[3] + 1
