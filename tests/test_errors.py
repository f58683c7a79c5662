"""Bad input gives one clear line (a MaxsimError subclass naming where), never another exception
or a hang."""

from __future__ import annotations

import re

import numpy as np
import pytest

from maxsim.errors import LaunchError, MaxsimError, SassParseError, SimulationError
from maxsim.functional import GlobalMemory, Texture1D, launch
from maxsim.sass import parse_file, parse_text

from sasskit import header


def parse_error(text, filename="bad.sass"):
    with pytest.raises(SassParseError) as e:
        parse_text(text, filename=filename)
    msg = str(e.value)
    assert "\n" not in msg and isinstance(e.value, MaxsimError)
    assert msg.startswith(f"{filename}:{e.value.line}:{e.value.column}: ")
    return e.value


def one_line(text):
    return header("bad", regs=32) + text + "\n--:-:-:-:5      EXIT;\n"


HEADER_LINES = header("bad", regs=32).count("\n")
L1 = HEADER_LINES + 1  # the line number of the first instruction line of one_line()


# ---------------------------------------------------------------------------------------------
# malformed lines: file, line, column, and what was expected

@pytest.mark.parametrize("text,column,fragment", [
    ("--:-:-:-:1      IADD R1, R2, R3", 32, "expected ';'"),
    ("--:-:7:-:1      IADD R1, R2, R3;", 1, "expected a control field WW:R:W:Y:S"),
    ("--:-:-:-       IADD R1, R2, R3;", 1, "expected a control field"),
    ("40:-:-:-:1      IADD R1, R2, R3;", 1, "wait mask 0x40"),
    ("IADD R1, R2, R3;", 1, "expected a control field"),
    ("--:-:-:-:1  @Q0 IADD R1, R2, R3;", 14, "expected a predicate P0..P6 or PT"),
    ("--:-:-:-:1  @P7 IADD R1, R2, R3;", 14, "expected a predicate"),
    ("--:-:-:-:1      IADD R1,, R3;", 25, "empty operand"),
    ("--:-:-:-:1      IADD R1, R2, #3;", 30, "cannot read operand '#3'"),
    ("--:-:-:-:1      IADD R1, 0x1, R3;", 26, "operand 2 of IADD must be a register"),
    ("--:-:-:-:1      IADD R1, R2;", 21, "IADD takes 3 operand(s), got 2"),
    ("--:-:-:-:1      LDS R1, [R2+R3];", 25, "bad offset 'R3'"),
    ("--:-:-:-:1      LDS R1, [R2+0x4;", 25, "missing ']'"),
    ("--:-:-:-:1      MOV R1, c[0x0][;", 25, "malformed constant"),
    ("--:-:-:-:1      MOV R1, c[0x12][0x0];", 25, "out of range"),
    ("--:-:-:-:1      MOV R1, 0x100000000;", 25, "does not fit in 32 bits"),
    ("--:-:-:-:1      MOV R1, R2.foo;", 25, "unknown register suffix .foo"),
    ("--:-:-:-:1      BRA NOWHERE;", 21, "undefined label 'NOWHERE'"),
    ("--:-:1:-:1      S2R R1, SR_FOO;", 25, "unknown special register 'SR_FOO'"),
    ("--:-:1:-:1      TLD.B.LZ.P R4, R0, R1, 0x0, 2D, 0xf;", 45, "TLD of a 2D texture is not modelled"),
    ("--:-:1:-:1      TLD.B.LZ.P R4, R0, R1, 0x0, 4D, 0xf;", 45, "cannot read operand '4D'"),
    ("--:-:-:-:1      ISETP.LT.AND !P0, PT, R1, R2, PT;", 30, "cannot be negated"),
    ("--:-:-:-:1      IADD R1, R2.H1, R3;", 26, ".H1 of IADD is not modelled (XMAD sources only)"),
    ("--:-:-:-:1      IADD R1, -~R2, R3;", 26, "cannot combine"),
    ("--:-:-:-:5      BAR.SYNC 0x10;", 26, "barrier 0x10 is out of range 0..15"),
    ("--:-:-:-:1      ISCADD R1, R2, R3, 0x20;", 36, "ISCADD shift 0x20 is out of range 0..31"),
])
def test_malformed_line(text, column, fragment):
    e = parse_error(one_line(text))
    assert fragment in e.reason
    assert (e.line, e.column) == (L1, column)


def test_text_after_the_semicolon_is_ignored_with_a_warning_as_maxas_does():
    from maxsim.errors import SourceWarning
    with pytest.warns(SourceWarning, match=rf"bad.sass:{L1}:34: text after ';' ignored, as maxas ignores it: 'R4'"):
        k = parse_text(one_line("--:-:-:-:1      IADD R1, R2, R3; R4"), filename="bad.sass")
    assert k.instructions[0].opcode == "IADD"


def test_malformed_line_in_a_file_names_file_line_and_column(tmp_path):
    p = tmp_path / "kernel.sass"
    p.write_bytes(b"# Kernel: k\r\n--:-:-:-:1      IADD R1, R2, R3;\r\n--:-:-:-:1      IADD R1 R2, R3;\r\n")
    with pytest.raises(SassParseError) as e:
        parse_file(p)
    assert str(e.value).startswith(f"{p}:3:")
    assert (e.value.filename, e.value.line) == (str(p), 3)


def test_unreadable_and_non_utf8_files(tmp_path):
    with pytest.raises(SassParseError, match="cannot read file"):
        parse_file(tmp_path / "missing.sass")
    p = tmp_path / "latin1.sass"
    p.write_bytes(b"# Kernel: k\n# caf\xe9\n--:-:-:-:5      EXIT;\n")
    with pytest.raises(SassParseError, match=r"latin1.sass:2:1: file is not UTF-8 text"):
        parse_file(p)


# ---------------------------------------------------------------------------------------------
# unknown opcodes and modifiers

@pytest.mark.parametrize("text,column,fragment", [
    ("--:-:-:-:1      FOO R1, R2;", 17, "unknown opcode 'FOO'"),
    ("--:-:-:-:1      iadd R1, R2, R3;", 17, "unknown opcode 'iadd'"),
    ("--:-:-:-:1      IADD.FOO R1, R2, R3;", 22, "modifier .FOO is not accepted by IADD"),
    ("--:-:-:-:1      LDS.U.256 R4, [R0];", 23, "modifier .256 is not accepted by LDS"),
    ("--:-:-:-:1      XMAD.PSL.PSL R1, R2, R3, R4;", 26, "modifier .PSL is repeated"),
    ("--:-:-:-:1      ISETP.LT.LE.AND P0, PT, R1, R2, PT;", 26, "modifier .LE is not accepted"),
    ("--:-:-:-:1      ISETP.AND P0, PT, R1, R2, PT;", 17, "ISETP needs one of the modifiers"),
    ("--:-:-:-:1      IADD..X R1, R2, R3;", 17, "empty modifier"),
    ("--:-:-:-:1      BAR.ARV 0x0;", 21, "modifier .ARV is not accepted by BAR"),
    ("--:-:-:-:1      BAR.RED 0x0, P0;", 17, "BAR.RED needs its reduction, one of .POPC, .AND, .OR"),
])
def test_unknown_opcode_or_modifier(text, column, fragment):
    e = parse_error(one_line(text))
    assert fragment in e.reason
    assert (e.line, e.column) == (L1, column)


# ---------------------------------------------------------------------------------------------
# registers

@pytest.mark.parametrize("text,fragment", [
    ("--:-:-:-:1      IADD R1, R255, R3;", "R255 is out of range R0-R254"),
    ("--:-:-:-:1      IADD R1, R300, R3;", "R300 is out of range"),
    ("--:-:-:-:1      IADD R32, R2, R3;", "R32 is out of range: the kernel declares RegCnt 32"),
    ("--:-:-:-:1      LDS.U.128 R28, [R40];", "R40 is out of range"),
    ("--:-:-:-:1      LDS.U.128 R30, [R0];", "R33 is out of range"),
])
def test_register_out_of_range(text, fragment):
    e = parse_error(one_line(text))
    assert fragment in e.reason


def test_vector_group_beyond_regcnt():
    e = parse_error(header("bad", regs=30) + "--:-:-:-:1      LDS.U.128 R28, [R0];\n")
    assert "R31 is out of range: the kernel declares RegCnt 30" in e.reason


@pytest.mark.parametrize("text,fragment", [
    ("--:-:-:-:1      LDS.U.128 R2, [R0];", "R2 must be aligned to 4 registers"),
    ("--:-:-:-:1      STS.128 [R0], R6;", "R6 must be aligned to 4"),
    ("--:-:-:-:1      LDS.64 R3, [R0];", "R3 must be aligned to 2"),
    ("--:-:1:-:1      TLD.B.LZ.P R9, R0, R1, 0x0, 1D, 0xf;", "R9 must be aligned to 4"),
    ("--:-:1:-:1      TLD.B.LZ.P R6, R0, R1, 0x0, 1D, 0x7;", "R6 must be aligned to 4"),
])
def test_misaligned_vector_group(text, fragment):
    e = parse_error(one_line(text))
    assert "vector register group" in e.reason and fragment in e.reason


# ---------------------------------------------------------------------------------------------
# header and labels

@pytest.mark.parametrize("text,line,fragment", [
    ("# RegCnt: 256\n", 1, "RegCnt 256 is out of range 1..255"),
    ("# RegCnt: 0\n", 1, "RegCnt 0 is out of range"),
    ("# RegCnt: many\n", 1, "header RegCnt expects a number"),
    ("# SharedSize: -4\n", 1, "SharedSize -4 is out of range"),
    ("# SharedSize: 0x20000\n", 1, "SharedSize 0x20000 is out of range"),
    ("# BarCnt: 17\n", 1, "BarCnt 17"),
    ("# Kernel: k\n# Params(2):\n#\tord:addr:size:align\n#\t0:0x140:4:0\n", 2, "announces Params(2) but lists 1"),
    ("L:\n--:-:-:-:1      IADD R1, R2, R3;\nL:\n", 3, "label 'L' already defined on line 1"),
])
def test_bad_header_or_labels(text, line, fragment):
    e = parse_error(text + "--:-:-:-:5      EXIT;\n")
    assert fragment in e.reason and e.line == line


# ---------------------------------------------------------------------------------------------
# runtime errors: they name the source line, CTA, warp and lane

def run_error(src, grid=1, block=64, params=(), cls=SimulationError, **kw):
    k = parse_text(src, filename="rt.sass")
    mem = kw.pop("memory", None) or GlobalMemory()
    with pytest.raises(cls) as e:
        launch(k, grid, block, params, mem, **kw)
    msg = str(e.value)
    assert "\n" not in msg and isinstance(e.value, MaxsimError)
    return k, msg


def where(k, label_or_index, cta, warp, lane):
    idx = k.label_map[label_or_index] if isinstance(label_or_index, str) else label_or_index
    return re.escape(f"rt.sass:{k.instructions[idx].line}: "), re.escape(f"(CTA {cta}, warp {warp}, lane {lane})")


def assert_where(msg, k, at, cta, warp, lane):
    head, tail = where(k, at, cta, warp, lane)
    assert re.match(head, msg), msg
    assert re.search(tail + "$", msg), msg


DIVERGENT = header("div", regs=8) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:d      ISETP.GE.AND P0, PT, R0, 0x2b, PT;
--:-:-:-:5  @P0 BRA SKIP;
--:-:-:-:1      MOV R1, RZ;
SKIP:
--:-:-:-:5      EXIT;
"""


def test_divergent_branch_runs_both_paths():
    # divergence is modelled: warp 1 of the CTA runs both sides of the branch, one after the other
    res = launch(parse_text(DIVERGENT, filename="rt.sass"), (3, 2), 64, ctas=[(2, 1)])
    assert res.divergent_branches == 1
    # warp 0 (tid 0-31) falls through: 5 instructions. Warp 1: its 11 lanes tid 32-42 fall through
    # first (MOV, EXIT), then the 21 lanes that took the branch run the EXIT at SKIP: 6
    assert res.warp_instructions == 5 + 6
    # idle lanes of warp 1: 21 in the MOV and the first EXIT, 11 in the second EXIT
    assert res.warp_idle.tolist() == [0, 21 + 21 + 11]


SYNC_WITHOUT_SSY = header("div", regs=8) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:d      ISETP.GE.AND P0, PT, R0, 0x2b, PT;
--:-:-:-:5  @P0 BRA SKIP;
--:-:-:-:5      SYNC;
SKIP:
--:-:-:-:5      EXIT;
"""


def test_sync_without_ssy():
    k, msg = run_error(SYNC_WITHOUT_SSY, grid=(3, 2), ctas=[(2, 1)])
    assert "SYNC without a matching SSY" in msg
    # warp 0 falls through (uniformly) to the SYNC first; its first lane is named
    assert_where(msg, k, 3, "(2,1)", 0, 0)


def test_divergent_call():
    src = header("divcal", regs=8) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:d      ISETP.GE.AND P0, PT, R0, 0x2b, PT;
--:-:-:-:5  @P0 CAL SUB;
--:-:-:-:5      EXIT;
SUB:
--:-:-:-:5      RET;
"""
    k, msg = run_error(src, grid=(3, 2), ctas=[(2, 1)])
    assert "divergent CAL" in msg and "not modelled" in msg
    assert_where(msg, k, 2, "(2,1)", 1, 0)


def test_divergent_branch_ignores_lanes_that_exited():
    src = header("div2", regs=8) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:d      ISETP.GE.AND P1, PT, R0, 0x2b, PT;
--:-:-:-:5  @P1 EXIT;
--:-:-:-:d      ISETP.GE.AND P0, PT, R0, 0x2b, PT;
--:-:-:-:5 @!P0 BRA SKIP;
--:-:-:-:1      MOV R1, RZ;
SKIP:
--:-:-:-:5      EXIT;
"""
    launch(parse_text(src), 1, 64)  # the lanes that disagree have exited: no error


MEM_ERR = header("memerr", regs=16, shared=256, nparams=2) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
--:-:2:-:1      S2R R1, SR_CTAID.X;
03:-:-:-:6      SHL R2, R0, 0x2;
--:-:-:-:d      ISETP.EQ.AND P0, PT, R0, c[0x0][0x140], PT;
--:-:-:-:1      MOV32I R3, 0x1;
--:-:-:-:6      SEL R3, R3, RZ, P0;
--:-:-:-:6      IADD R2, R2, R3;
--:-:-:-:6      IADD R4, R2, c[0x0][0x144];
{op};
--:-:-:-:5      EXIT;
"""


@pytest.mark.parametrize("op,bad_lane,fragment,warp,lane", [
    ("--:-:1:-:1      LDS R5, [R2]", 37, "misaligned 4-byte shared access at address 0x95", 1, 5),
    ("--:-:-:-:1      STS [R2], R0", 45, "misaligned 4-byte shared access at address 0xb5", 1, 13),
    ("--:-:1:-:1      LDS R5, [R2+0x100]", None,
     "out-of-bounds shared access at address 0x100 (+4 bytes); valid range [0x0, 0x100)", 0, 0),
    ("--:-:-:-:1      STS [R2+0xc0], R0", None, "out-of-bounds shared access at address 0x100", 0, 16),
    ("--:-:-:-:1      STS.128 [R2], R8", None, "misaligned 16-byte shared access at address 0x4", 0, 1),
    ("--:-:1:-:1      LDS.U.128 R8, [R2+0x8]", None, "misaligned 16-byte shared access at address 0x8", 0, 0),
    ("--:-:1:-:1      LDG R5, [R4]", 40, "misaligned 4-byte global access at address 0x10a1", 1, 8),
    ("--:-:-:-:1      STG.CG [R4], R0", 33, "misaligned 4-byte global access at address 0x1085", 1, 1),
    ("--:-:1:-:1      LDG R5, [R2]", None, "out-of-bounds global access at address 0x0 (+4 bytes)", 0, 0),
    ("--:-:-:-:1      STG.CG [R4+0x100], R0", None, "out-of-bounds global access at address 0x1100", 0, 0),
])
def test_misaligned_or_out_of_bounds_memory_access(op, bad_lane, fragment, warp, lane):
    mem = GlobalMemory()
    buf = mem.alloc(256)
    assert buf == 0x1000
    k, msg = run_error(MEM_ERR.format(op=op), grid=2, block=64, params=[1000 if bad_lane is None else bad_lane, buf],
                       memory=mem)
    assert fragment in msg, msg
    assert_where(msg, k, 8, "(0,0)", warp, lane)


def test_out_of_bounds_shared_names_the_first_bad_lane():
    src = header("oob", regs=8, shared=256) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      SHL R2, R0, 0x2;
--:-:-:-:1      STS [R2], R0;
--:-:-:-:5      EXIT;
"""
    k, msg = run_error(src, grid=(1, 3), block=128, ctas=[(0, 2)])
    assert "out-of-bounds shared access at address 0x100" in msg
    assert_where(msg, k, 2, "(0,2)", 2, 0)


def test_predicated_off_lanes_do_not_fault():
    src = header("guarded", regs=8, shared=256) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      SHL R2, R0, 0x2;
--:-:-:-:d      ISETP.LT.AND P0, PT, R0, 0x40, PT;
--:-:-:-:1  @P0 STS [R2], R0;
--:-:1:-:1  @P0 LDS R3, [R2];
--:-:1:-:1 @!P0 LDG R3, [RZ];
--:-:-:-:5      EXIT;
"""
    k, msg = run_error(src, block=96)
    assert "out-of-bounds global access at address 0x0" in msg
    assert_where(msg, k, 5, "(0,0)", 2, 0)


def test_unbound_texture_handle():
    src = header("tex", regs=16) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
--:-:-:-:1      MOV32I R1, 0x80000000;
01:-:-:-:d      ISETP.GE.AND P0, PT, R0, 0x24, PT;
--:-:-:-:1  @P0 MOV32I R1, 0x80000005;
--:-:1:-:1      TLD.B.LZ.P R4, R0, R1, 0x0, 1D, 0xf;
--:-:-:-:5      EXIT;
"""
    k, msg = run_error(src, block=64, textures={0: Texture1D(np.zeros((4, 4), np.float32))})
    assert "texture handle 0x80000005 is not bound" in msg and "bound textures: [0]" in msg
    assert_where(msg, k, 4, "(0,0)", 1, 4)


def test_bar_sync_with_different_barrier_ids_can_never_complete():
    src = header("bar", regs=8, bar=2) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:d      ISETP.GE.AND P0, PT, R0, 0x20, PT;
--:-:-:-:5  @P0 BRA B;
--:-:-:-:5      BAR.SYNC 0x0;
--:-:-:-:5      EXIT;
B:
--:-:-:-:5      BAR.SYNC 0x1;
--:-:-:-:5      EXIT;
"""
    k, msg = run_error(src, grid=2, block=64)
    assert "BAR.SYNC can never complete" in msg and "different barriers [0, 1]" in msg
    assert re.match(r"rt\.sass:1[0-9]: ", msg) and "(CTA (0,0), warp " in msg


def test_kernel_running_past_max_instructions():
    src = header("spin", regs=8) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
LOOP:
--:-:-:-:1      IADD R1, R1, 0x1;
--:-:-:Y:5      BRA LOOP;
--:-:-:-:5      EXIT;
"""
    k, msg = run_error(src, grid=1, block=64, max_instructions=1000)
    assert "instruction limit of 1000 warp instructions" in msg
    assert "(CTA (0,0), warp 0, lane 0)" in msg
    assert re.match(r"rt\.sass:1[0-9]: ", msg)


def test_execution_past_the_last_instruction():
    src = header("noexit", regs=8) + "--:-:-:-:1      IADD R1, R1, 0x1;\n"
    k, msg = run_error(src, block=32)
    assert "ran past the last instruction (missing EXIT?)" in msg
    assert_where(msg, k, 0, "(0,0)", 0, 0)


def test_ret_with_an_empty_call_stack():
    src = header("ret", regs=8) + "--:-:-:-:5      RET;\n--:-:-:-:5      EXIT;\n"
    k, msg = run_error(src, block=64)
    assert "RET with an empty call stack" in msg
    assert_where(msg, k, 0, "(0,0)", 0, 0)


def test_unmodelled_features_are_errors_not_wrong_answers():
    # 64-bit (.E) addresses are modelled within the 32-bit global memory: a high word is an error
    k, msg = run_error(header("e", regs=8) + "--:-:-:-:1      MOV32I R3, 0x1;\n"
                       "--:-:1:-:1      LDG.E R0, [R2];\n--:-:-:-:5      EXIT;\n")
    assert "64-bit global address 0x100000000 is beyond the model's 32-bit global address space" in msg
    assert msg.startswith(f"rt.sass:{L1 + 1}:")
    k, msg = run_error(header("c", regs=8) + "--:-:-:-:1      MOV R0, c[0x3][0x0];\n--:-:-:-:5      EXIT;\n")
    assert "constant c[0x3][0x0]: constant bank 3 was not given (banks given: 0;" in msg
    assert_where(msg, k, 0, "(0,0)", 0, 0)
    k, msg = run_error(header("c", regs=8) + "--:-:-:-:1      MOV R0, c[0x0][0x8000];\n--:-:-:-:5      EXIT;\n")
    assert "outside constant bank 0" in msg


@pytest.mark.parametrize("kw,fragment", [
    (dict(block=0), "block of 0 threads is out of range"),
    (dict(block=2048), "block of 2048 threads"),
    (dict(grid=0), "grid (0,1) is out of range"),
    (dict(params=[1, 2, 3]), "takes 1 parameters, 3 given"),
    (dict(params=["x"]), "parameter 0 of p is not a number"),
    (dict(params=[1 << 40]), "does not fit in 32 bits"),
    (dict(textures={0: np.zeros((4, 4), np.float32)}), "must be a maxsim.functional.Texture1D"),
])
def test_launch_errors(kw, fragment):
    k = parse_text(header("p", regs=8, nparams=1) + "--:-:-:-:5      EXIT;\n")
    args = dict(grid=1, block=32, params=[0])
    args.update(kw)
    with pytest.raises(LaunchError) as e:
        launch(k, args.pop("grid"), args.pop("block"), args.pop("params"), **args)
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_texture_shape_errors():
    with pytest.raises(LaunchError, match="multiple of 4"):
        Texture1D(np.zeros(6, np.float32))
    with pytest.raises(LaunchError, match=r"shape \(n, 4\)"):
        Texture1D(np.zeros((3, 3), np.float32))
