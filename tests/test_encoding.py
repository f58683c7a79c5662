"""The instruction codec (maxsim/sass/encoding.py): Maxwell code <-> maxas text.

- Every kernel the project has survives encode -> decode -> parse as the same instruction records
  (same opcode, modifiers, operands, control codes, guard, reuse flags and branch targets; label
  names and the spelling of immediates may differ: the decoder names targets TARGET1, TARGET2 ...
  as maxas's extractor does and writes immediates in hex).
- Hand-checked words: the control word layout and instruction words of the maxas sources and of
  ptxas (nvdisasm 12.8 output recorded below).
- Code the table does not know, and instructions without an encoding, give one-line errors.
"""

from __future__ import annotations

import math
import struct

import attrs
import pytest

import project_kernels
from maxsim.errors import EncodingError
from maxsim.isa import instruction as ins
from maxsim.sass import format_kernel, parse_text
from maxsim.sass import encoding as E

# Kernels of the project that have no Maxwell encoding, and why (asserted below): none (the kernels
# read the block size from c[0x0][0x8], as hardware code does)
NOT_ENCODABLE = {}


def test_the_simulators_sr_ntid_x_has_no_encoding():
    # the simulator reads S2R SR_NTID.X; Maxwell has no such S2R register (nvdisasm 12.8 names
    # register 0x28 SR_NTID, without a component), so the encoder refuses it by name
    with pytest.raises(EncodingError, match="special register SR_NTID.X has no S2R number on Maxwell"):
        E.encode_text("# Kernel: t\n--:-:1:-:1 S2R R0, SR_NTID.X;\n--:-:-:-:5 EXIT;\n")


# opcodes whose immediate is an fp32 pattern: 1.0 and 0x3f800000 are the same operand
FLOAT_IMMEDIATES = frozenset(("FFMA", "FMUL", "FADD", "FMNMX", "FSETP", "FSET", "FCMP", "FCHK", "RRO", "F2F", "F2I", "MOV32I",
                              "FADD32I", "FMUL32I", "FFMA32I"))
FP64_IMMEDIATES = frozenset(("DADD", "DMUL", "DFMA", "DMNMX", "DSETP", "DSET"))


def same_instruction(a: ins.Instruction, b: ins.Instruction) -> bool:
    """Equal records up to source position, immediate spelling, label names and the spelling of
    modifiers (their order, defaults written or not: compared by the bits they select)."""
    def operand(i, o):
        if i.opcode in FLOAT_IMMEDIATES and (o.kind == ins.FIMM or (o.kind == ins.IMM and i.opcode != "MOV32I")):
            # (MOV32I moves an integer immediate as it is, as the executor reads it)
            return ins.Operand(ins.IMM, value=E._float_bits(o))  # fp32 bits, as the executor reads them
        if i.opcode in FP64_IMMEDIATES and o.kind in (ins.IMM, ins.FIMM):
            # an fp64 immediate by its value (the executor reads 0x0 as 0.0; the decoder prints 0.0)
            v = float(o.fvalue if o.kind == ins.FIMM else o.value)
            # (NaN by name: NAN reads back as NAN, and NaN != NaN would make equal records unequal)
            return ins.Operand(ins.FIMM, text="NAN") if math.isnan(v) else ins.Operand(ins.FIMM, fvalue=v)
        if o.kind == ins.IMM:  # an integer immediate by its 32-bit word (IADD32I's -0x1 is 0xffffffff)
            return attrs.evolve(o, text="", value=o.value & 0xFFFFFFFF)
        return attrs.evolve(o, text="", name="" if o.kind == ins.LABEL else o.name)

    def norm(i):
        return attrs.evolve(i, operands=tuple(operand(i, o) for o in i.operands), mods=(), line=0, filename="",
                            target_label="")
    return norm(a) == norm(b) and E.modifier_bits(passing(a)) == E.modifier_bits(passing(b)) is not None


def passing(i: ins.Instruction) -> ins.Instruction:
    """F2F between equal types with a rounding mode as what its word holds: the value passes unrounded
    (the executor); .RN is rounding field 0, the word of no modifier, and .RM .RP .RZ (1-3) are the
    words nvdisasm prints .PASS."""
    if i.opcode != "F2F":
        return i
    types = [m for m in i.mods if m in ("F16", "F32", "F64")]
    dst, src = (types + ["F32", "F32"])[:2] if len(types) != 1 else (types[0], "F32")
    if dst != src or not {"RN", "RM", "RP", "RZ"} & set(i.mods):
        return i
    rest = tuple("PASS" if m in ("RM", "RP", "RZ") else m for m in i.mods
                 if m not in ("F16", "F32", "F64", "RN"))
    return attrs.evolve(i, mods=(dst, src) + rest)


@pytest.mark.parametrize("name", [n for n, _ in project_kernels.project_kernels()])
def test_every_project_kernel_round_trips(name):
    k = dict(project_kernels.project_kernels())[name]
    if name in NOT_ENCODABLE:
        with pytest.raises(EncodingError, match=NOT_ENCODABLE[name]):
            E.encode(k)
        return
    code = E.encode(k)
    lines = E.decode(code)
    k2 = parse_text(format_kernel(k).split("# Instructions:")[0] + "# Instructions:\n\n" + E.format_lines(lines))
    assert len(k2.instructions) == len(k.instructions)
    for a, b in zip(k.instructions, k2.instructions):
        assert same_instruction(a, b), (a, b)
    # and the decoded text encodes to the same bytes
    assert E.encode(k2) == code


def test_project_kernels_cover_many_instructions():
    """The corpus the round trip runs on is the real thing (all SGEMM variants and more)."""
    ks = project_kernels.project_kernels()
    assert len(ks) >= 50
    assert sum(len(k.instructions) for _, k in ks) > 20000


# ---------------------------------------------------------------------------------------------
# hand-checked words


def _words(code):
    return struct.unpack(f"<{len(code) // 8}Q", code)


PTXAS_SM52 = [
    # (word, text) of a kernel ptxas 12.8 compiled for sm_52; the text is nvdisasm 12.8's with
    # its "R2.CC" written as the modifier ".CC", "c[0x0] [0x8]" without the space (maxsim's syntax)
    (0x4C98078000870001, "MOV R1, c[0x0][0x20]"),
    (0xF0C8000002170000, "S2R R0, SR_TID.X"),
    (0xF0C8000002570002, "S2R R2, SR_CTAID.X"),
    (0x4E00000000270200, "XMAD R0, R2, c[0x0][0x8], R0"),
    (0x4F107F8000270203, "XMAD.MRG R3, R2, c[0x0][0x8].H1, RZ"),
    (0x5B30001800370202, "XMAD.PSL.CBCC R2, R2.H1, R3.H1, R0"),
    (0x4B6D038005270207, "ISETP.GE.AND P0, PT, R2, c[0x0][0x148], PT"),
    (0x50B0000000070F00, "NOP"),
    (0x3829000001E70200, "SHR R0, R2, 0x1e"),
    (0x4C18810005070202, "ISCADD.CC R2, R2, c[0x0][0x140], 0x2"),
    (0x4C10080005170003, "IADD.X R3, R0, c[0x0][0x144]"),
    (0xEED4200000070200, "LDG.E R0, [R2]"),
    (0x3868003F00070000, "FMUL R0, R0, 0.5"),
    (0xEF5C00000007FF00, "STS [RZ], R0"),
    (0xF0A81B8000070000, "BAR.SYNC 0x0"),
    (0xEF4C10000047FF05, "LDS.U R5, [0x4]"),  # nvdisasm: LDS.U.32 (.32 is the default)
    (0x5C58000000570005, "FADD R5, R0, R5"),
    (0xEEDC200000070205, "STG.E [R2], R5"),
    (0xE30000000007000F, "EXIT"),
    # 64-bit integer compares, sums and conversions (cuobjdump 12.8 of NVRTC 12.9's sm_52 code for
    # workloads/cuda/wide_index.cu and a kernel comparing long long values)
    (0x4B6D0B8005570207, "ISETP.GE.X.AND P0, PT, R2, c[0x0][0x154], PT"),
    (0x4B6C0B8005770A0F, "ISETP.GE.U32.X.AND P1, PT, R10, c[0x0][0x15c], PT"),
    (0x5B6B0B800FF7FF0F, "ISETP.NE.X.AND P1, PT, RZ, RZ, PT"),
    (0x4B590B8005570300, "ISET.GT.X.AND R0, R3, c[0x0][0x154], PT"),
    (0x5B520B8000370502, "ISET.LT.U32.X.AND R2, R5, R3, PT"),
    (0x4CC882800547020F, "IADD3.CC R15, -R2, c[0x0][0x150], R5"),
    (0x4CC9028005570004, "IADD3.X R4, -R0, c[0x0][0x154], R5"),
    (0x5CB0018000370B06, "F2I.U64.F32.TRUNC R6, R3"),
]


# ISET with its condition-code output (bit 47): words of a ptxas sm_52 kernel with that bit set,
# as cuobjdump 12.8 prints them ("R10.CC" written as the modifier ".CC")
PTXAS_SM52 += [
    (0x5B5D83800067000A, "ISET.GE.AND.CC R10, R0, R6, PT"),
    (0x4B5D838005470800, "ISET.GE.AND.CC R0, R8, c[0x0][0x150], PT"),
    (0x4B52938005470AFF, "ISET.BF.LT.U32.AND.CC RZ, R10, c[0x0][0x150], PT"),
    (0x36538B8000770B0D, "ISET.LT.X.AND.CC R13, R11, 0x7, PT"),
    (0x5B5BA48000370201, "ISET.NE.OR.CC R1, R2, R3, !P1"),
    # the 64-bit min / max of NVRTC 12.9's sm_52 code for long long and unsigned long long min()
    (0x5C219B800077090B, "IMNMX.XHI.CC R11, R9, R7, PT"),
    (0x5C209F8000A7030A, "IMNMX.U32.XHI.CC R10, R3, R10, !PT"),
    (0x5C200B800067080A, "IMNMX.U32.XLO R10, R8, R6, PT"),
    (0x5C200F8000270402, "IMNMX.U32.XLO R2, R4, R2, !PT"),
]


@pytest.mark.parametrize("word,text", PTXAS_SM52)
def test_ptxas_words_decode(word, text):
    cw = 0x7E0 | 0x7E0 << 21 | 0x7E0 << 42  # --:-:-:Y:0, no reuse
    code = struct.pack("<4Q", cw, word, 0x50B0000000070F00, 0x50B0000000070F00)
    (d, *_rest) = E.decode(code)
    assert d.text == text
    # the word comes back from its text
    assert _words(E.encode_text(d.line, tail=False))[1] == word


def test_control_word_layout():
    """Three 21-bit slots: stall 0-3, yield 4 (0 = yield), write barrier 5-7, read barrier 8-10
    (7 = none), wait mask 11-16, reuse 17-20 [maxas printCtrl / MaxAs.pm]. The first two groups
    of the ptxas kernel above: both S2R set write barrier 1 (0x711: stall 1, no yield, write
    barrier field 0, read field 7), the XMAD after them waits on it (0xff1: wait mask 0x01) and
    reuses R2 in its first slot, as cuobjdump prints (``XMAD R0, R2.reuse, ...``)."""
    code = struct.pack("<8Q", 0x001C7C00E22007F6, 0x4C98078000870001, 0xF0C8000002170000, 0xF0C8000002570002,
                       0x001FD840FEC20FF1, 0x4E00000000270200, 0x4F107F8000270203, 0x5B30001800370202)
    assert [d.line for d in E.decode(code)] == [
        "--:-:-:-:6      MOV R1, c[0x0][0x20];",
        "--:-:1:-:1      S2R R0, SR_TID.X;",
        "--:-:1:-:f      S2R R2, SR_CTAID.X;",
        "01:-:-:-:1      XMAD R0, R2.reuse, c[0x0][0x8], R0;",
        "--:-:-:-:6      XMAD.MRG R3, R2.reuse, c[0x0][0x8].H1, RZ;",
        "--:-:-:-:6      XMAD.PSL.CBCC R2, R2.H1, R3.H1, R0;",
    ]
    c = ins.Control(wait=0x21, read_bar=3, write_bar=6, yield_=True, stall=13)
    assert E.control_bits(c) == 0x21 << 11 | 2 << 8 | 5 << 5 | 0 << 4 | 13
    assert E.control_text(E.control_bits(c)) == "21:3:6:Y:d"


def test_kernel_tail_is_maxas_s():
    """A BRA to itself (control 0x7ff) and NOPs (0x7e0) to a 64-byte line [MaxAs.pm]; decode
    stops at the BRA."""
    k = parse_text("--:-:-:-:5      EXIT;\n")
    code = E.encode(k)
    assert len(code) == 64
    w = _words(code)
    assert w[2] == 0xE2400FFFFF87000F  # BRA 0x10 (itself): offset -8 from the next instruction
    assert w[0] >> 21 & 0x1FFFF == 0x7FF and w[0] >> 42 & 0x1FFFF == 0x7E0
    assert [d.text for d in E.decode(code)] == ["EXIT"]


def test_branch_offsets_and_labels():
    text = """\
TOP:
--:-:-:-:1      IADD R0, R0, 0x1;
--:-:-:-:1      ISETP.LT.AND P0, PT, R0, 0x10, PT;
--:-:-:-:1      NOP;
--:-:-:-:5  @P0 BRA TOP;
--:-:-:-:5      BRA END;
--:-:-:-:1      NOP;
END:
--:-:-:-:5      EXIT;
"""
    k = parse_text(text)
    code = E.encode(k)
    w = _words(code)
    # @P0 BRA TOP is instruction 3 at 0x28; TOP at 0x8: offset 0x8 - 0x30 = -0x28
    assert w[5] >> 20 & 0xFFFFFF == -0x28 & 0xFFFFFF
    body = E.decode_text(code)
    assert body.splitlines()[0] == "TARGET1:"
    assert "@P0 BRA TARGET1;" in body and "BRA TARGET2;" in body
    k2 = parse_text(body)
    assert [i.target for i in k2.instructions] == [i.target for i in k.instructions]


# ---------------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("line,message", [
    ("--:-:-:-:1      IADD R0, R1, 0x80000;", "does not fit the 20-bit signed immediate"),
    ("--:-:-:-:1      FMUL R0, R1, 0.1;", "needs more than the 19 high bits"),
    ("--:-:-:-:1      FFMA R0, -R1, R2, R3;", "'-' on operand 2 has no encoding"),
    ("--:-:-:-:1      LDG.CS R0, [R1];", "modifier .CS has no encoding"),
    ("--:-:-:-:1      MOV R0, c[0x0][0x2];", "4-byte aligned"),
])
def test_instructions_without_an_encoding_are_named(line, message):
    k = parse_text(line + "\n", filename="k.sass")
    with pytest.raises(EncodingError, match=message) as e:
        E.encode(k)
    assert str(e.value).startswith("k.sass:1: ")
    assert "\n" not in str(e.value)


def test_unknown_words_are_named_by_offset():
    cw = 0x7E0 | 0x7E0 << 21 | 0x7E0 << 42
    code = struct.pack("<4Q", cw, 0x50B0000000070F00, 0xFFFFFFFFFFFFFFFF, 0x50B0000000070F00)
    with pytest.raises(EncodingError, match=r"code\+0x10: the opcode bits \(51-63\) of this instruction name no "
                       r"Maxwell instruction$"):
        E.decode(code)
    with pytest.raises(EncodingError, match="whole number of 32-byte groups"):
        E.decode(code[:24])


@pytest.mark.parametrize("word,message", [
    # an opcode the table has no form of: named, with what it is
    (0x5A00000000070000, r"IMAD is not in the Maxwell encoding table \(an opcode the model does not know\)"),
    (0x2000000000070000, r"VADD is not in the Maxwell encoding table \(a video instruction; not modelled\)"),
    # a known opcode in an unknown form: the bits that differ from the nearest form
    (0x3700000000070000, r"XMAD in a form the Maxwell encoding table does not know \(bits 56 differ"),
    # the VMNMX forms of PTX vmin / vmax with selectors (ptxas's sm_52 words): named
    (0x3B3C7F9020670409, r"VMNMX with a byte or half-word source \(\.B0-\.B3, \.H0, \.H1: PTX vmin / vmax with a "
                         r"source selector\) is not modelled$"),
    (0x3A6704D040670400, r"VMNMX with a byte or half-word source"),
    (0x3B1405E06067040B, r"VMNMX merging into c \(\.MRG_16H0/H1, \.MRG_8B0-B3: PTX vmin / vmax with a destination "
                         r"selector\) is not modelled$"),
    # a modifier value the table does not know: the field and the values it knows
    (0x5080000000970900, r"MUFU with a modifier the encoding table does not know: value 9 in bits 20-23 "
                         r"\(known: COS, SIN, EX2, LG2, RCP, RSQ, RCP64H, RSQ64H, SQRT\)"),
])
def test_unknown_forms_are_named_by_their_opcode(word, message):
    """No raw word in the message: the opcode the bits name [nvdisasm's opcode field] and what
    of it is missing."""
    cw = 0x7E0 | 0x7E0 << 21 | 0x7E0 << 42
    code = struct.pack("<4Q", cw, 0x50B0000000070F00, word, 0x50B0000000070F00)
    with pytest.raises(EncodingError, match=r"code\+0x10: " + message) as e:
        E.decode(code)
    assert f"{word:x}" not in str(e.value)


def test_a_branch_to_itself_with_code_after_it_is_kept():
    """Only a BRA to itself with nothing but NOPs after it ends the code (maxas's and ptxas's
    tail); a spin loop in the middle of a kernel is decoded."""
    k = parse_text("SPIN:\n--:-:-:-:5      BRA SPIN;\n--:-:-:-:5      EXIT;\n")
    lines = E.decode(E.encode(k))
    assert [d.text for d in lines] == ["BRA TARGET1", "EXIT"]
    assert lines[0].labels == ("TARGET1",)


def test_ptxas_group_targets():
    """ptxas addresses a branch target that opens a group by the group's control word; it decodes
    to the group's first instruction, and ``group_targets`` encodes it so again."""
    text = "--:-:-:-:1      NOP;\n--:-:-:-:1      NOP;\n--:-:-:-:5      BRA NEXT;\nNEXT:\n--:-:-:-:5      EXIT;\n"
    k = parse_text(text)
    maxas_style, ptxas_style = E.encode(k), E.encode(k, group_targets=True)
    # BRA at 0x18 (slot 2): maxas targets EXIT at 0x28 (offset 0x8), ptxas its group at 0x20 (0x0)
    assert _words(maxas_style)[3] >> 20 & 0xFFFFFF == 0x8
    assert _words(ptxas_style)[3] >> 20 & 0xFFFFFF == 0x0
    for code in (maxas_style, ptxas_style):
        assert [d.target for d in E.decode(code)] == [-1, -1, 3, -1]
