"""The front end: the maxas SASS text format, parsed into decoded records and printed back."""

from __future__ import annotations

import re

import pytest

from maxsim.isa import instruction as ins
from maxsim.isa.instruction import PT, RZ, Control
from maxsim.isa.opcodes import OPCODES, SPECIAL_REGISTERS
from maxsim.sass import format_instruction, format_kernel, parse_file, parse_text

from sasskit import header

# Every opcode/modifier form of the two maxas SGEMM kernels, written the way maxas writes them
# (control field, right-justified predicate column, reuse flags, hex immediates, labels).
MAXAS_STYLE = header("sgemm_like", regs=127, shared=8192, bar=1, nparams=9, ins_cnt=60) + """\
--:-:1:-:1      S2R R119, SR_TID.X;
--:-:2:-:1      S2R R125, SR_CTAID.X;
--:-:3:-:1      S2R R122, SR_CTAID.Y;
01:-:-:-:1      ISETP.GE.AND P0, PT, R119.reuse, 0x20, PT;
--:-:-:-:1      LOP.AND R9, R119.reuse, 0xf;
--:-:-:-:1      BFE.U32 R4, R119.reuse, 0x104;
--:-:-:-:1      MOV R12, c[0x0][0x14c];
--:-:-:-:1      LOP.AND R80, R119.reuse, -0x20;
--:-:-:-:1      IADD R12, R12, -0x8;
--:-:-:-:1      SHL R114, R9, 0x4;
--:-:-:-:1      SHR.U32 R115, R9, 0x3;
--:-:-:-:0 @!P0 MOV R2, c[0x0][0x150];
--:-:-:-:1      STS.128 [R80+0x1000], RZ;
--:-:-:-:1  @P0 MOV R2, c[0x0][0x154];
--:-:-:-:1      ISCADD R118, R4, R114, 0x8;
06:-:-:-:1      SEL R8, R122, R125, P0;
--:-:-:-:1 @!P0 MOV32I R113, 0x80000001;
--:-:-:-:1  @P0 MOV32I R113, 0x80000000;
--:-:-:-:1      LOP.OR R115, R115, R9;
--:-:-:-:1      IADD R121, R2, R2;
--:-:-:-:1      XMAD.MRG R5, R1.reuse, R4.H1.reuse, RZ;
--:-:-:Y:6      XMAD R112, R1.reuse, R4, R112;
--:-:-:-:2      XMAD.PSL.CBCC R112, R1.H1, R5.H1, R112;
--:-:1:-:4      TLD.B.LZ.P R96, R112, R113, 0x0, 1D, 0xf;
--:-:-:-:1      IADD3 R116, R112.reuse, R1.reuse, R1;
--:-:5:-:1      LDS.U.128 R0, [R80+0x1000];
01:-:-:-:1      STS.128 [R118], R96;
--:-:-:-:0      IADD R112, R112, R121.reuse;
10:-:-:-:5      BAR.SYNC 0x0;
--:-:-:-:0      LOP.XOR R118, R118, 0x1000;
--:-:1:-:1      LDS.U.128 R64, [R114];
TARGET1:
--:-:-:-:1      ISETP.LE.AND P0, PT, R112, R117, PT;
01:-:-:-:0      FFMA R1, R66.reuse, R72.reuse, R1;
--:-:-:-:1      FFMA R0, R66, R73.reuse, R0;
--:-:2:-:1  @P0 TLD.B.LZ.P R100, R116, R113, 0x0, 1D, 0xf;
--:-:-:Y:1      FFMA R17, R66.reuse, R76.reuse, R17;
--:-:-:-:0  @P0 IADD R124, R124, R121;
--:-:-:Y:5  @P0 BRA TARGET1;
--:-:-:-:1      ISETP.LT.AND P5, PT, R84, c[0x0][0x144], PT;
--:-:-:-:1      FMUL R64, R3, R72;
--:-:-:-:1      ISCADD R85, R81, -R89, 0x7;
--:-:-:-:1      IADD R80, R80, -0x1;
--:-:-:-:1      ISCADD R76, R73, c[0x0][0x140], 0x2;
--:-:-:Y:6      IADD R76, R76, -R77;
--:-:-:-:1      FMUL R65, R7, R72.reuse;
--:-:-:-:5      CAL TARGET2;
02:-:-:-:1      FMUL R64, R2, R72.reuse;
--:-:-:-:5      CAL TARGET2;
--:-:-:-:5      EXIT;
TARGET2:
--:-:-:-:0      IADD R80, R80, 0x1;
--:-:-:-:1      STS.128 [R93+0x80], R68;
--:-:-:-:1      LDS R64, [R92];
--:-:-:-:1      LDS R65, [R92+0x80];
--:-:-:-:1      ISETP.LT.AND P0, PT, R80.reuse, c[0x0][0x148], P5;
--:-:-:-:2      ISETP.LT.AND P2, PT, R86.reuse, c[0x0][0x148], P5;
--:-:-:Y:7      ISETP.LT.AND P3, PT, R86, c[0x0][0x148], P6;
01:-:-:-:1  @P0 STG.CG [R76], R64;
--:-:-:-:1  @P1 STG.CG [R76+0x80], R65;
--:-:-:-:2  @P2 STG.CG [R79], R70;
--:2:-:-:1  @P3 STG.CG [R79+0x80], R71;
--:-:-:-:5      RET;
"""


@pytest.fixture(scope="module")
def maxas_kernel():
    return parse_text(MAXAS_STYLE, filename="sgemm_like.sass")


def norm(text):
    return [re.sub(r"\s+", " ", x).strip() for x in text.splitlines() if x.strip()]


# ---------------------------------------------------------------------------------------------
# header


def test_header(maxas_kernel):
    k = maxas_kernel
    assert (k.name, k.arch, k.ins_cnt, k.reg_cnt, k.shared_size, k.bar_cnt) == (
        "sgemm_like", "sm_50", 60, 127, 8192, 1)
    assert [(p.ordinal, p.offset, p.size, p.align) for p in k.params] == [
        (i, 0x140 + 4 * i, 4, 0) for i in range(9)]
    assert len(k.instructions) == 61
    assert k.filename == "sgemm_like.sass"


def test_header_is_optional_and_defaults():
    k = parse_text("--:-:-:-:5      EXIT;\n")
    assert k.name == "kernel" and k.reg_cnt == 255 and k.shared_size == 0 and k.params == ()
    assert k.ins_cnt == 0


def test_header_values_in_decimal_or_hex_and_free_comments():
    k = parse_text("# Kernel: k\n# RegCnt: 0x10\n# SharedSize: 0x100\n# some remark\n"
                   "// not a header\n--:-:-:-:5      EXIT;\n".replace("// not a header\n", ""))
    assert k.reg_cnt == 16 and k.shared_size == 256


# ---------------------------------------------------------------------------------------------
# control fields

CONTROLS = [
    ("--:-:-:-:0", Control(0, 0, 0, False, 0)),
    ("--:-:1:-:1", Control(0, 0, 1, False, 1)),
    ("01:-:-:-:6", Control(1, 0, 0, False, 6)),
    ("06:-:-:-:1", Control(6, 0, 0, False, 1)),
    ("10:-:-:-:5", Control(0x10, 0, 0, False, 5)),
    ("--:2:-:-:1", Control(0, 2, 0, False, 1)),
    ("--:-:2:Y:5", Control(0, 0, 2, True, 5)),
    ("3f:6:5:Y:f", Control(0x3F, 6, 5, True, 15)),
    ("3F:1:6:y:F", Control(0x3F, 1, 6, True, 15)),
    ("20:-:-:-:c", Control(0x20, 0, 0, False, 12)),
]


@pytest.mark.parametrize("text,control", CONTROLS)
def test_control_fields(text, control):
    k = parse_text(f"{text}      IADD R1, R2, R3;\n")
    assert k.instructions[0].control == control


def test_control_fields_of_the_maxas_text(maxas_kernel):
    i = maxas_kernel.instructions
    assert i[0].control == Control(0, 0, 1, False, 1)  # --:-:1:-:1 S2R
    assert i[3].control.wait == 1  # 01: waits on barrier 1
    assert i[21].control.yield_ and i[21].control.stall == 6
    assert i[-2].control.read_bar == 2  # --:2:-:-:1 STG


# ---------------------------------------------------------------------------------------------
# predicates

@pytest.mark.parametrize("text,pred,neg", [
    ("", PT, False), ("@P0", 0, False), ("@P3", 3, False), ("@P6", 6, False), ("@!P0", 0, True),
    ("@!P6", 6, True), ("@PT", PT, False), ("@!PT", PT, True)])
def test_guard_predicates(text, pred, neg):
    k = parse_text(f"--:-:-:-:1 {text:>4} IADD R1, R2, R3;\n")
    assert (k.instructions[0].pred, k.instructions[0].pred_neg) == (pred, neg)


def test_predicate_operands():
    i = parse_text("--:-:-:-:1      ISETP.LT.AND P5, P6, R84, c[0x0][0x144], !P3;\n").instructions[0]
    assert [(o.kind, o.reg, o.not_) for o in i.operands[:2]] == [("pred", 5, False), ("pred", 6, False)]
    assert (i.operands[4].reg, i.operands[4].not_) == (3, True)
    assert i.dst_preds == (5, 6) and i.dst_regs == ()
    i = parse_text("--:-:-:-:1      ISETP.GE.AND P0, PT, R1, 0x20, PT;\n").instructions[0]
    assert i.dst_preds == (0,)  # writes to PT are dropped
    i = parse_text("--:-:-:-:1      SEL R8, R122, R125, !P0;\n").instructions[0]
    assert (i.operands[3].kind, i.operands[3].reg, i.operands[3].not_) == ("pred", 0, True)


# ---------------------------------------------------------------------------------------------
# reuse flags, operand slots, registers read and written

@pytest.mark.parametrize("text,mask,slots", [
    ("FFMA R1, R66.reuse, R72.reuse, R1", 0b011, (66, 72, 1)),
    ("FFMA R0, R66, R73.reuse, R0", 0b010, (66, 73, 0)),
    ("FFMA R36, R71.reuse, R73, R36", 0b001, (71, 73, 36)),
    ("FFMA R0, R1, R2, R3.reuse", 0b100, (1, 2, 3)),
    ("FFMA R0, R1.reuse, R2.reuse, R3.reuse", 0b111, (1, 2, 3)),
    ("IADD R112, R112, R121.reuse", 0b010, (112, 121)),
    ("IADD3 R116, R112.reuse, R1.reuse, R1", 0b011, (112, 1, 1)),
    ("XMAD.MRG R5, R1.reuse, R4.H1.reuse, RZ", 0b011, (1, 4, -1)),
    ("ISETP.GE.AND P0, PT, R119.reuse, 0x20, PT", 0b001, (119, -1)),
    ("BFE.U32 R4, R119.reuse, 0x104", 0b001, (119, -1)),
    ("FMUL R65, R7, R72.reuse", 0b010, (7, 72)),
    ("LOP.AND R80, R119, -0x20", 0, (119, -1)),
    ("FMUL R64, R3, c[0x0][0x15c]", 0, (3, -1)),
])
def test_reuse_flags_per_source_slot(text, mask, slots):
    i = parse_text(f"--:-:-:-:1      {text};\n").instructions[0]
    assert i.reuse_mask == mask
    assert i.slot_regs == slots


def test_registers_read_and_written(maxas_kernel):
    by_text = {format_instruction(i).split(None, 1)[1].strip(): i for i in maxas_kernel.instructions}

    def get(body):
        return next(i for t, i in by_text.items() if t.endswith(body + ";"))

    i = get("FFMA R1, R66.reuse, R72.reuse, R1")
    assert (i.dst_regs, i.src_regs, i.unit) == ((1,), (66, 72, 1), "alu")
    i = get("LDS.U.128 R0, [R80+0x1000]")
    assert (i.dst_regs, i.src_regs, i.unit) == ((0, 1, 2, 3), (80,), "lds")
    i = get("STS.128 [R118], R96")
    assert (i.dst_regs, i.src_regs, i.unit) == ((), (118, 96, 97, 98, 99), "sts")
    i = get("STS.128 [R80+0x1000], RZ")
    assert (i.dst_regs, i.src_regs) == ((), (80,))
    i = get("TLD.B.LZ.P R96, R112, R113, 0x0, 1D, 0xf")
    assert (i.dst_regs, i.src_regs, i.unit) == ((96, 97, 98, 99), (112, 113), "tex")
    i = get("S2R R119, SR_TID.X")
    assert (i.dst_regs, i.src_regs, i.unit, i.operands[1].name) == ((119,), (), "s2r", "SR_TID.X")
    i = get("@P0 STG.CG [R76], R64")
    assert (i.src_regs, i.unit, i.pred) == ((76, 64), "stg", 0)
    i = get("LDS R65, [R92+0x80]")
    assert (i.dst_regs, i.operands[1].reg, i.operands[1].value) == ((65,), 92, 0x80)
    i = get("XMAD.PSL.CBCC R112, R1.H1, R5.H1, R112")
    assert i.mods == ("PSL", "CBCC") and i.operands[1].h1 and i.operands[2].h1 and not i.operands[3].h1


def test_register_numbers():
    i = parse_text("--:-:-:-:1      IADD3 R0, R254, RZ, R127;\n").instructions[0]
    assert [o.reg for o in i.operands] == [0, 254, RZ, 127]
    assert i.src_regs == (254, 127)  # RZ is not a register read


def test_vector_groups():
    k = parse_text("\n".join([
        "--:-:-:-:1      LDS.U.128 R248, [R0];",
        "--:-:-:-:1      LDS.64 R2, [R0];",
        "--:-:-:-:1      STS.64 [R0+0x8], R6;",
        "--:-:-:-:1      TLD.B.LZ.P R8, R0, R1, 0x0, 1D, 0x3;",
        "--:-:-:-:1      TLD.B.LZ.P R12, R0, R1, 0x0, 1D, 0x7;",
        "--:-:-:-:1      LDS R3, [R0];",
    ]) + "\n")
    i = k.instructions
    assert i[0].dst_regs == (248, 249, 250, 251)
    assert i[1].dst_regs == (2, 3)
    assert i[2].src_regs == (0, 6, 7)
    assert i[3].dst_regs == (8, 9)
    assert i[4].dst_regs == (12, 13, 14)
    assert i[5].dst_regs == (3,)


# ---------------------------------------------------------------------------------------------
# immediates, constants, special registers, labels

@pytest.mark.parametrize("text,value", [("0x20", 0x20), ("-0x8", -8), ("0x0", 0), ("-0x1", -1),
                                        ("0xffffffff", 0xFFFFFFFF), ("-0x80000000", -(1 << 31)),
                                        ("0X1F", 0x1F), ("12", 12), ("-12", -12)])
def test_integer_immediates(text, value):
    i = parse_text(f"--:-:-:-:1      IADD R12, R12, {text};\n").instructions[0]
    assert (i.operands[2].kind, i.operands[2].value) == ("imm", value)
    assert format_instruction(i).endswith(f"IADD R12, R12, {text};")


def test_float_immediates():
    i = parse_text("--:-:-:-:1      FMUL R1, R2, -1.5;\n").instructions[0]
    assert (i.operands[2].kind, i.operands[2].fvalue) == ("fimm", -1.5)
    i = parse_text("--:-:-:-:1      FFMA R1, R2, 2.5e-3, R3;\n").instructions[0]
    assert i.operands[2].fvalue == 2.5e-3


def test_memory_operands():
    k = parse_text("\n".join([
        "--:-:-:-:1      LDS R1, [R2];", "--:-:-:-:1      LDS R1, [R2+0x80];",
        "--:-:-:-:1      LDS R1, [R2-0x10];", "--:-:-:-:1      LDS R1, [0x40];",
        "--:-:-:-:1      LDS R1, [RZ+0x40];", "--:-:-:-:1      LDS R1, [R2 + 0x4];"]) + "\n")
    got = [(i.operands[1].reg, i.operands[1].value) for i in k.instructions]
    assert got == [(2, 0), (2, 0x80), (2, -0x10), (RZ, 0x40), (RZ, 0x40), (2, 4)]


def test_constants():
    i = parse_text("--:-:-:-:1      ISCADD R76, R73, c[0x0][0x140], 0x2;\n").instructions[0]
    c = i.operands[2]
    assert (c.kind, c.bank, c.value) == ("const", 0, 0x140)
    i = parse_text("--:-:-:-:1      IADD R1, R1, -c[0x2][0x10];\n").instructions[0]
    assert (i.operands[2].bank, i.operands[2].value, i.operands[2].neg) == (2, 0x10, True)


@pytest.mark.parametrize("name", SPECIAL_REGISTERS)
def test_special_registers(name):
    i = parse_text(f"--:-:1:-:1      S2R R0, {name};\n").instructions[0]
    assert (i.operands[1].kind, i.operands[1].name) == ("sreg", name)


def test_labels_and_targets(maxas_kernel):
    k = maxas_kernel
    labels = dict(k.labels)
    assert labels == {"TARGET1": 31, "TARGET2": 49}
    assert k.instructions[31].opcode == "ISETP" and k.instructions[49].opcode == "IADD"
    bra = next(i for i in k.instructions if i.opcode == "BRA")
    assert (bra.target, bra.target_label, bra.pred) == (31, "TARGET1", 0)
    cals = [i for i in k.instructions if i.opcode == "CAL"]
    assert len(cals) == 2 and all(c.target == 49 for c in cals)
    assert k.labels_at(31) == ["TARGET1"]


def test_labels_forward_backward_shared_and_at_the_end():
    k = parse_text("\n".join([
        "A:", "--:-:-:-:5      BRA B;", "B:", "C:", "--:-:-:-:5      BRA A;", "--:-:-:-:5      BRA END;",
        "--:-:-:-:5      EXIT;", "END:"]) + "\n")
    assert k.labels == (("A", 0), ("B", 1), ("C", 1), ("END", 4))
    assert [i.target for i in k.instructions[:3]] == [1, 0, 4]
    assert norm(format_kernel(k))[-8:] == norm("A:\n--:-:-:-:5 BRA B;\nB:\nC:\n--:-:-:-:5 BRA A;\n"
                                               "--:-:-:-:5 BRA END;\n--:-:-:-:5 EXIT;\nEND:")


# ---------------------------------------------------------------------------------------------
# every SGEMM opcode and modifier; whole-text round trip

SGEMM_FORMS = {"LDS.U.128", "LDS", "STS.128", "TLD.B.LZ.P", "STG.CG", "FFMA", "FMUL", "IADD", "IADD3",
               "ISCADD", "XMAD", "XMAD.MRG", "XMAD.PSL.CBCC", "LOP.AND", "LOP.OR", "LOP.XOR", "BFE.U32",
               "SHL", "SHR.U32", "SEL", "MOV", "MOV32I", "S2R", "ISETP.LT.AND", "ISETP.LE.AND",
               "ISETP.GE.AND", "BAR.SYNC", "BRA", "CAL", "RET", "EXIT"}


def test_every_sgemm_opcode_and_modifier_is_accepted(maxas_kernel):
    forms = {i.full_opcode for i in maxas_kernel.instructions}
    assert forms == SGEMM_FORMS


def test_units_of_the_sgemm_opcodes(maxas_kernel):
    units = {i.full_opcode: i.unit for i in maxas_kernel.instructions}
    assert units["FFMA"] == units["IADD"] == units["XMAD.MRG"] == "alu"
    assert units["LDS.U.128"] == "lds" and units["STS.128"] == "sts" and units["TLD.B.LZ.P"] == "tex"
    assert units["STG.CG"] == "stg" and units["S2R"] == "s2r" and units["BAR.SYNC"] == "bar"
    assert units["BRA"] == units["CAL"] == units["RET"] == "branch" and units["EXIT"] == "exit"
    assert all(u in ("alu", "alu_half") for f, u in units.items() if f.split(".")[0] in ("SHL", "SHR", "BFE", "SEL", "ISETP", "LOP", "MOV", "MOV32I"))


def test_print_gives_the_maxas_text_back_exactly(maxas_kernel):
    assert format_kernel(maxas_kernel) == MAXAS_STYLE


def test_round_trip_with_irregular_whitespace():
    messy = ("# Kernel:   k\n#  RegCnt: 32\n\n"
             "--:-:1:-:1\tS2R R0, SR_TID.X ;\n"
             "  01:-:-:-:6   @!P1   IADD  R1 ,R0,   -0x8;   \n"
             "LOOP :\n"
             "--:-:-:Y:5 @P0 BRA LOOP;\n"
             "--:-:-:-:5 EXIT;")
    k = parse_text(messy)
    printed = format_kernel(k)
    again = parse_text(printed)
    assert [attrs_nolines(i) for i in again.instructions] == [attrs_nolines(i) for i in k.instructions]
    assert again.labels == k.labels
    body = [x for x in norm(printed) if not x.startswith("#")]
    assert body == ["--:-:1:-:1 S2R R0, SR_TID.X;", "01:-:-:-:6 @!P1 IADD R1, R0, -0x8;", "LOOP:",
                    "--:-:-:Y:5 @P0 BRA LOOP;", "--:-:-:-:5 EXIT;"]


def attrs_nolines(i):
    import attrs
    return attrs.evolve(i, line=0)


def test_trailing_comment_after_semicolon_is_ignored():
    k = parse_text("--:-:-:-:1      IADD R1, R2, R3; # add\n--:-:-:-:5      EXIT; // end\n")
    assert [i.opcode for i in k.instructions] == ["IADD", "EXIT"]


# ---------------------------------------------------------------------------------------------
# files and line endings


def test_crlf_text_parses_like_lf():
    lf = parse_text(MAXAS_STYLE)
    crlf = parse_text(MAXAS_STYLE.replace("\n", "\r\n"))
    assert crlf == lf


def test_parse_file_lf_crlf_and_bom(tmp_path):
    lf = parse_text(MAXAS_STYLE, filename=str(tmp_path / "k.sass"))
    for name, data in (("k.sass", MAXAS_STYLE.encode()),
                       ("crlf.sass", MAXAS_STYLE.replace("\n", "\r\n").encode()),
                       ("bom.sass", b"\xef\xbb\xbf" + MAXAS_STYLE.replace("\n", "\r\n").encode())):
        p = tmp_path / name
        p.write_bytes(data)
        k = parse_file(p)
        assert k.instructions[0].filename == str(p)
        assert k.instructions[5].where == f"{p}:{k.instructions[5].line}"
        assert [attrs_nofile(i) for i in k.instructions] == [attrs_nofile(i) for i in lf.instructions]


def attrs_nofile(i):
    import attrs
    return attrs.evolve(i, filename="")


def test_source_lines_are_recorded(maxas_kernel):
    lines = MAXAS_STYLE.split("\n")
    for i in maxas_kernel.instructions:
        assert lines[i.line - 1].rstrip().endswith(format_instruction(i).split(None, 1)[1].strip())


def test_opcode_table_covers_the_executor():
    # every opcode the parser accepts has a unit the timing model knows
    from maxsim.isa.opcodes import UNITS
    assert all(s.unit in UNITS for s in OPCODES.values())
    assert ins.NUM_REGS == 255 and RZ == 255 and PT == 7


def test_records_built_in_code_print_to_parseable_text():
    import attrs
    i = parse_text("--:-:-:-:1      FFMA R1, R2, 1.5, R3;\n").instructions[0]
    for v in (float("inf"), float("-inf"), 2.5e-30, -0.0):
        op = attrs.evolve(i.operands[2], fvalue=v, text="")
        j = attrs.evolve(i, operands=(i.operands[0], i.operands[1], op, i.operands[3]))
        back = parse_text(format_instruction(j) + "\n").instructions[0]
        assert back.operands[2].fvalue == v
    op = attrs.evolve(i.operands[2], fvalue=float("nan"), text="")
    j = attrs.evolve(i, operands=(i.operands[0], i.operands[1], op, i.operands[3]))
    assert parse_text(format_instruction(j) + "\n").instructions[0].operands[2].fvalue != 0  # NaN
