"""Static control-code hazard check (maxsim.analysis.controls) on small hand-written kernels, on every
generated SGEMM variant, on maxas's own SGEMM files (when saved locally), and through `maxsim analyze`."""

import json
from itertools import product
from pathlib import Path

import pytest

from maxsim.analysis import check_controls, format_hazards
from maxsim.analysis.controls import KINDS
from maxsim.arch.config import load_config, override
from maxsim.cli import main
from maxsim.sass import parse_file, parse_text
from workloads.sgemm.generator import KERNELS, REGMAPS, TRAVERSALS, generate_kernel

REF = Path("/work/ref")  # maxas's kernels, if a developer saved them there (never committed)
HEAD = "# Kernel: t\n# RegCnt: 16\n"


def hazards(*lines, cfg=None):
    """The hazards of a kernel given as full maxas lines ("WW:R:W:Y:S  [pred] TEXT;") and labels.
    Line numbers: the first instruction line is line 3."""
    return check_controls(parse_text(HEAD + "\n".join(lines) + "\n"), cfg)


def kinds(hz):
    return [h.kind for h in hz]


# ---- fixed-latency results -------------------------------------------------------------------

def test_alu_result_read_one_cycle_later():
    (h,) = hazards("--:-:-:-:1      IADD R1, R0, 0x1;",
                   "--:-:-:-:1      IADD R2, R1, 0x1;",
                   "--:-:-:-:5      EXIT;")
    assert h.kind == "raw-alu" and (h.index, h.line, h.opcode) == (1, 4, "IADD")
    assert (h.other, h.other_line, h.distance, h.required, h.loop) == (0, 3, 1, 6, None)
    assert "line 4" in h.message and "line 3" in h.message and "R1" in h.message
    assert "1 cycle(s)" in h.message and "needs 6" in h.message


def test_alu_result_read_after_six_cycles_of_stalls():
    (h,) = hazards("--:-:-:-:2      IADD R1, R0, 0x1;",
                   "--:-:-:-:4      IADD R3, R0, 0x2;",
                   "--:-:-:-:5      IADD R2, R1, R3;",  # R1 6 cycles on: fine; R3 4: too early
                   "--:-:-:-:5      EXIT;")
    assert (h.kind, h.other, h.distance, h.required) == ("raw-alu", 1, 4, 6) and "R3" in h.message
    assert hazards("--:-:-:-:2      IADD R1, R0, 0x1;",
                   "--:-:-:-:4      IADD R3, R0, 0x2;",
                   "--:-:-:-:6      IADD R2, R1, R0;",
                   "--:-:-:-:5      EXIT;") == []


def test_memory_ops_read_their_operands_late():
    # an STS reads its sources 2 cycles after issue: 4 cycles after the IADD is enough
    assert hazards("--:-:-:-:4      IADD R1, R0, 0x1;",
                   "--:-:-:-:5      STS [R0], R1;",
                   "--:-:-:-:5      EXIT;") == []
    (h,) = hazards("--:-:-:-:3      IADD R1, R0, 0x1;",
                   "--:-:-:-:5      STS [R0], R1;",
                   "--:-:-:-:5      EXIT;")
    assert h.kind == "raw-alu" and (h.distance, h.required) == (3, 4)


def test_predicate_used_five_cycles_after_isetp():
    (h,) = hazards("--:-:-:-:5      ISETP.LT.AND P0, PT, R0, 0x10, PT;",
                   "--:-:-:-:6  @P0 IADD R1, R0, 0x1;",
                   "--:-:-:-:5      EXIT;")
    assert h.kind == "raw-predicate" and (h.index, h.other, h.distance, h.required) == (1, 0, 5, 13)
    assert "P0" in h.message
    assert hazards("--:-:-:Y:d      ISETP.LT.AND P0, PT, R0, 0x10, PT;",
                   "--:-:-:-:6  @P0 IADD R1, R0, 0x1;",
                   "--:-:-:-:5      EXIT;") == []


def test_latencies_come_from_the_config():
    lines = ("--:-:-:-:6      IADD R1, R0, 0x1;", "--:-:-:-:6      IADD R2, R1, 0x1;", "--:-:-:-:5      EXIT;")
    assert hazards(*lines) == []
    (h,) = hazards(*lines, cfg=override(load_config("gm204"), {"latency.alu": 8}))
    assert (h.kind, h.distance, h.required) == ("raw-alu", 6, 8)


# ---- variable-latency results and barriers ---------------------------------------------------

def test_lds_result_read_without_waiting_on_its_barrier():
    (h,) = hazards("--:-:1:-:2      LDS R4, [R0];",
                   "--:-:-:-:6      IADD R5, R4, 0x1;",
                   "--:-:-:-:5      EXIT;")
    assert h.kind == "variable-latency-without-wait" and (h.index, h.other, h.distance) == (1, 0, 2)
    assert "barrier 1" in h.message and "LDS" in h.message


def test_lds_result_read_with_the_wait():
    assert hazards("--:-:1:-:2      LDS R4, [R0];",
                   "01:-:-:-:6      IADD R5, R4, 0x1;",
                   "--:-:-:-:5      EXIT;") == []


def test_wait_right_after_the_setter_needs_stall_2():
    (h,) = hazards("--:-:1:-:1      LDS R4, [R0];",
                   "01:-:-:-:6      IADD R5, R4, 0x1;",
                   "--:-:-:-:5      EXIT;")
    assert h.kind == "wait-too-soon" and (h.distance, h.required) == (1, 2)


def test_overwriting_a_pending_load_needs_the_wait_too():
    (h,) = hazards("--:-:2:-:2      S2R R4, SR_TID.X;",
                   "--:-:-:-:6      MOV R4, R0;",
                   "--:-:-:-:5      EXIT;")
    assert h.kind == "variable-latency-without-wait" and "overwrites R4" in h.message


def test_a_load_no_barrier_covers():
    (h,) = hazards("--:-:-:-:2      LDS R4, [R0];",
                   "--:-:-:-:6      IADD R5, R4, 0x1;",
                   "--:-:-:-:5      EXIT;")
    assert h.kind == "variable-latency-without-barrier"


def test_one_queue_completes_in_order():
    # maxas: one barrier on the last load of a group covers the earlier ones of the same queue
    assert hazards("--:-:-:-:1      LDS R4, [R0];",
                   "--:-:1:-:2      LDS R8, [R0+0x10];",
                   "01:-:-:-:6      IADD R5, R4, R8;",
                   "--:-:-:-:5      EXIT;") == []


def test_store_register_overwritten_before_its_read_barrier():
    (h,) = hazards("--:1:-:-:6      STS [R0], R1;",
                   "--:-:-:-:6      IADD R1, R0, 0x1;",
                   "--:-:-:-:5      EXIT;")
    assert h.kind == "war-memory-operand" and (h.index, h.other, h.distance) == (1, 0, 6)
    assert "barrier 1" in h.message and "R1" in h.message
    assert hazards("--:1:-:-:6      STS [R0], R1;",
                   "01:-:-:-:6      IADD R1, R0, 0x1;",
                   "--:-:-:-:5      EXIT;") == []
    # no read barrier: the register is safe only read_barrier_release (20) cycles on
    (h,) = hazards("--:-:-:-:6      STS [R0], R1;",
                   "--:-:-:-:6      IADD R1, R0, 0x1;",
                   "--:-:-:-:5      EXIT;")
    assert h.kind == "war-memory-operand" and (h.distance, h.required) == (6, 20)


def test_bar_sync_waits_for_the_earlier_shared_operands():
    assert hazards("--:-:-:-:1      STS [R0], R1;",
                   "--:-:-:-:5      BAR.SYNC 0x0;",
                   "--:-:-:-:6      IADD R1, R0, 0x1;",
                   "--:-:-:-:5      EXIT;") == []


def test_wait_on_a_barrier_nothing_sets():
    (h,) = hazards("--:-:1:-:2      LDS R4, [R0];",
                   "03:-:-:-:6      IADD R5, R4, 0x1;",
                   "--:-:-:-:5      EXIT;")
    assert h.kind == "wait-on-unset-barrier" and "barrier 2" in h.message


# ---- stall counts ----------------------------------------------------------------------------

def test_branch_with_stall_1():
    (h,) = hazards("--:-:-:-:1      BRA L;", "L:", "--:-:-:-:5      EXIT;")
    assert h.kind == "short-stall-branch" and (h.index, h.other, h.distance, h.required) == (0, 1, 1, 5)
    assert hazards("--:-:-:-:5      BRA L;", "L:", "--:-:-:-:5      EXIT;") == []


def test_bar_and_exit_need_stall_5():
    assert kinds(hazards("--:-:-:-:2      BAR.SYNC 0x0;", "--:-:-:-:2      EXIT;",
                         "--:-:-:-:5      EXIT;")) == ["short-stall-barrier", "short-stall-exit"]


def test_dual_issue_only_alu_then_memory_or_branch():
    assert hazards("--:-:-:-:0      IADD R1, R0, 0x1;", "--:-:-:-:5      STS [R0], R2;",
                   "--:-:-:-:5      EXIT;") == []
    # an ALU op cannot be a second: stall 0 then just issues it a cycle later (no hazard); an
    # instruction that cannot start a pair (LDS) with stall 0 is one
    assert hazards("--:-:-:-:0      IADD R1, R0, 0x1;", "--:-:-:-:6      IADD R2, R0, 0x1;",
                   "--:-:-:-:5      EXIT;") == []
    (h,) = hazards("--:-:1:-:0      LDS R1, [R0];", "--:-:-:-:6      IADD R2, R0, 0x1;",
                   "01:-:-:-:5      EXIT;")
    assert h.kind == "illegal-dual-issue" and (h.index, h.other) == (0, 1)


# ---- loops -----------------------------------------------------------------------------------

LOOP = ("--:-:-:Y:d      ISETP.LT.AND P0, PT, R0, 0x10, PT;",
        "LOOP:",
        "--:-:-:-:6  @P1 IADD R1, R2, 0x1;",  # reads P1 of the previous iteration
        "--:-:-:-:6      IADD R3, R1, 0x1;",
        "--:-:-:-:{s}      ISETP.LT.AND P1, PT, R3, 0x10, PT;",
        "--:-:-:-:5  @P0 BRA LOOP;",
        "--:-:-:-:5      EXIT;")


def test_loop_hazard_found_only_across_the_back_edge():
    # ISETP P1 dual-issues with the BRA; the loop head issues latency.branch_taken (6) cycles later
    # and reads P1, which needs 13: 7 cycles early, and only on the back edge
    (h,) = hazards(*(x.format(s=0) for x in LOOP))
    assert (h.kind, h.index, h.other, h.distance, h.required, h.loop) == ("raw-predicate", 1, 3, 6, 13, 4)
    assert "back edge of BRA (line 8)" in h.message and "line 5" in h.message and "line 7" in h.message
    # 7 cycles on the ISETP plus the taken branch's 6 close it; the branch's stall count (5) would not
    assert hazards(*(x.format(s=7) for x in LOOP)) == []
    (h,) = hazards(*(x.format(s=6) for x in LOOP))
    assert (h.kind, h.distance, h.required) == ("raw-predicate", 12, 13)


def test_conditional_branch_fall_through_skips_the_ops_under_its_guard():
    # maxas's pattern: the next iteration's loads are guarded by the loop predicate, so after the
    # loop falls through (P0 false) their registers are free without a wait
    body = ["--:-:-:Y:d      ISETP.LT.AND P0, PT, R0, 0x10, PT;",
            "LOOP:",
            "01:-:-:-:6      IADD R5, R4, 0x1;",
            "--:-:1:-:5  {p} LDS R4, [R0];",
            "--:-:-:-:5  @P0 BRA LOOP;",
            "--:-:-:-:6      MOV R4, R0;",
            "--:-:-:-:5      EXIT;"]
    assert hazards(*(x.replace("{p}", "@P0") for x in body)) == []
    (h,) = hazards(*(x.replace("{p}", "   ") for x in body))
    assert h.kind == "variable-latency-without-wait" and (h.index, h.other) == (4, 2)


# ---- reports ---------------------------------------------------------------------------------

def test_format_and_dict():
    hz = hazards("--:-:-:-:1      IADD R1, R0, 0x1;", "--:-:-:-:1      IADD R2, R1, 0x1;",
                 "--:-:-:-:1      IADD R3, R2, 0x1;", "--:-:-:-:5      EXIT;")
    text = format_hazards(hz, limit=1)
    assert text.startswith("control-code hazards: 2 (raw-alu 2)") and "1 more" in text
    assert format_hazards([]) == "control-code hazards: 0\n"
    d = hz[0].to_dict()
    assert d["kind"] in KINDS and d["line"] == 4 and d["other_line"] == 3
    json.dumps(d)


# ---- real kernels ----------------------------------------------------------------------------

@pytest.mark.parametrize("kernel,traversal,regmap,reuse", list(product(KERNELS, TRAVERSALS, REGMAPS, (True, False))))
def test_generated_sgemm_has_no_hazard(kernel, traversal, regmap, reuse):
    assert check_controls(generate_kernel(kernel, traversal, regmap, reuse)) == []


@pytest.mark.parametrize("name", ["sgemm_final_64.sass", "sgemm_final_128.sass"])
def test_maxas_kernels_have_no_hazard(name):
    path = REF / name
    if not path.exists():
        pytest.skip(f"maxas's {name} is not saved in {REF}")
    assert check_controls(parse_file(path)) == []


def test_checker_finds_a_broken_sgemm_loop():
    """Shorten one stall of the generated loop: the checker must notice."""
    from maxsim.sass import format_kernel
    text = format_kernel(generate_kernel("sgemm_64"))
    broken = text.replace("--:-:-:Y:5  @P0 BRA LOOP;", "--:-:-:Y:1  @P0 BRA LOOP;")
    assert broken != text
    assert "short-stall-branch" in kinds(check_controls(parse_text(broken)))


# ---- the command line ------------------------------------------------------------------------

def test_cli_analyze_shows_hazards(capsys, tmp_path):
    f = tmp_path / "k.sass"
    f.write_text(HEAD + "--:-:-:-:1      IADD R1, R0, 0x1;\n--:-:-:-:1      IADD R2, R1, 0x1;\n"
                 "--:-:-:-:1      BRA L;\nL:\n--:-:-:-:5      EXIT;\n")
    assert main(["analyze", str(f), "--rows", "none"]) == 0
    out = capsys.readouterr().out
    assert "Control-code hazards (gm204 latencies): 2" in out and "short-stall-branch" in out
    assert main(["analyze", str(f), "--json", "--gpu", "gtx980"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["config"] == "gtx980" and [h["kind"] for h in rep["hazards"]] == ["raw-alu", "short-stall-branch"]
    assert rep["hazards"][0]["line"] == 4 and rep["hazards"][0]["other_line"] == 3
    assert main(["analyze", str(f), "--config", "nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err


def test_cli_analyze_generated_sgemm_is_clean(capsys):
    assert main(["analyze", "sgemm_128", "--rows", "none", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hazards"] == []
