"""The Maxwell (sm_50/52/53) instruction encodings: one table of opcode codes, operand fields and
modifier bits, used by :mod:`maxsim.sass.encoding` to encode and decode 64-bit instruction words.

Sources of the facts (this table is our own; no code of those projects is in it):

- [grammar] maxas, ``MaxAs/MaxAsGrammar.pm`` (github.com/NervanaSystems/maxas): the base code of
  each opcode, the operand fields (``r0`` bits 0-7, ``r8`` 8-15, ``r20`` 20-27, ``r39`` 39-46,
  ``c20``: constant offset/4 in bits 20-33 and bank in 34-38, 20-bit immediates in 20-38 with the
  sign in bit 56, predicates in 3 bits plus a negation bit), the modifier ("flag") bits, and the
  rule that the immediate and constant variants of an ALU opcode change its top byte
  (0x5c -> 0x38 / 0x4c, 0x5b -> 0x36 / 0x4b, 0x59 -> 0x32 / 0x49, 0x58 -> 0x30 / 0x48; a constant
  in the third source: top byte ^ 0x08).
- [maxas] maxas, ``MaxAs/MaxAs.pm``: the guard predicate in bits 16-19 (bit 19 negates), branch
  offsets relative to the next instruction, the trailing ``BRA`` to itself and the NOP padding.
- [nvdisasm] NVIDIA ``nvdisasm`` 12.8.55 (``-b SM52``), run on words with single bits changed:
  the fields maxas's grammar leaves out or gets partly (LOP's inversion and predicate bits, XMAD's
  bits in its constant forms, TLD's dimension/mask/predicate bits and its ``.T``/``.P`` in the
  reuse field of the control word, the LD/ST/LDC/ATOM/ATOMS address fields, ISCADD's 5-bit
  shift, the BAR.SYNC immediate form, the S2R special-register numbers, CAL.NOINC). Each entry
  below names its source; an entry marked [nvdisasm] was read off nvdisasm's output, and
  ``tests/test_encoding_nvdisasm.py`` checks every form of the table against nvdisasm.

Form fields
-----------
``code``: the fixed bits of the form. ``operands``: one field spec per operand in text order
(see ``OPERAND_FIELDS`` in :mod:`maxsim.sass.encoding` for the kinds), e.g. ``"r20"`` a register
in bits 20-27, ``"r20 n48 a49"`` one whose ``-`` is bit 48 and ``|..|`` bit 49, ``"p39 !42"`` a
predicate whose ``!`` is bit 42. ``mods``: modifier groups in printing order; each maps modifier
names to the bits they set within the group's mask; the group's ``default`` is the value when no
name of the group is written (and is not printed back unless ``show`` is set).
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Mods:
    """One modifier group: ``names`` maps a modifier (dotted for a multi-word one, e.g.
    ``F32.FTZ.RN``) to its bits (already shifted) inside ``mask``."""
    mask: int
    names: tuple  # ((name, bits), ...)
    default: int = 0
    show: bool = False  # print the default's name too
    required: bool = False  # one name of the group must be written


def mods(pos: int, width: int, spec: str, default=None, show=False, required=False) -> Mods:
    """A contiguous group: ``spec`` as ``"LT=1 EQ=2"`` (values in the field, unshifted); a bare
    name means 1 (a one-bit flag). ``default`` names the value used when none is written."""
    names = []
    for item in spec.split():
        name, _, val = item.partition("=")
        names.append((name, (int(val, 0) if val else 1) << pos))
    d = 0
    if default is not None:
        d = dict(names)[default]
    return Mods(((1 << width) - 1) << pos, tuple(names), d, show, required)


def flag(bit: int, name: str) -> Mods:
    return Mods(1 << bit, ((name, 1 << bit),))


@attrs.frozen
class Form:
    opcode: str
    code: int
    operands: tuple  # field spec strings
    mods: tuple = ()  # Mods groups, in printing order
    source: str = "grammar"
    guarded: bool = True  # False: bits 16-19 are not a guard (SSY, PBK, PCNT, CAL take none)
    fixed_mods: tuple = ()  # modifiers always printed and required (part of the opcode), e.g. TLD.B.LZ
    reuse_mods: tuple = ()  # ((name, reuse bits), ...): modifiers kept in the control word's reuse field
    reuse: bool = True  # the operands have reuse slots (ALU-type opcodes) [nvdisasm; maxas's "reuse" types]
    reuse_slots: tuple = ()  # per operand, its reuse slot where it is not the usual one (-1: none)


# ---------------------------------------------------------------------------------------------
# common groups
_FTZ44 = flag(44, "FTZ")
_RND39 = mods(39, 2, "RN=0 RM=1 RP=2 RZ=3", default="RN")
_SAT50 = flag(50, "SAT")
_CC47 = flag(47, "CC")
_X43 = flag(43, "X")
_CAS = Mods(0, (("CAS", 0),), required=True)  # a name only (the opcode bits say CAS), printed after .E
_U32_48 = mods(48, 1, "U32=0 S32=1", default="S32")  # [grammar]: the base code has bit 48 set
_ICMP = mods(49, 3, "LT=1 EQ=2 LE=3 GT=4 NE=5 GE=6", required=True)
_FCMP = mods(48, 4, "LT=1 EQ=2 LE=3 GT=4 NE=5 GE=6 NUM=7 NAN=8 LTU=9 EQU=10 LEU=11 GTU=12 NEU=13 GEU=14",
             required=True)
_BOOL45 = mods(45, 2, "AND=0 OR=1 XOR=2", default="AND", show=True)
_MEMTYPE48 = mods(48, 3, "U8=0 S8=1 U16=2 S16=3 32=4 64=5 128=6", default="32")
_LD_TYPE = mods(53, 3, "U8=0 S8=1 U16=2 S16=3 32=4 64=5 128=6", default="32")  # LD / ST [grammar]
_IMM_TOP = {0x5C: 0x38, 0x5B: 0x36, 0x59: 0x32, 0x58: 0x30}  # [grammar] top byte ^ 0x64/0x6d/0x6b/0x68
_CONST_TOP = 0x10  # [grammar] top byte ^ 0x10: constant second source
_C39_TOP = 0x08  # [grammar] top byte ^ 0x08: constant third source


def _variant(code: int, top_xor: int) -> int:
    return code ^ (top_xor << 56)


def alu(opcode, code, ops, mod_groups=(), *, imm="i20", const=True, imm_top=None, c39=None, source="grammar"):
    """The register form plus its immediate and constant variants (second source, operand ``b``
    written as ``{b}`` in ``ops``; ``{bmods}`` its neg/abs bits, the same in each form).
    ``c39``: the third-source-constant form's operand list, when it exists."""
    top = code >> 56
    out = [Form(opcode, code, tuple(o.replace("{b}", "r20") for o in ops), tuple(mod_groups), source)]
    # a modifier whose bits the immediate or constant takes does not exist in that variant
    # (IADD3's .RS/.LS in bits 37-38 against the immediate's bits 20-38)
    imm_groups = tuple(g for g in mod_groups if not g.mask & (0x7FFFF << 20 | 1 << 56))
    const_groups = tuple(g for g in mod_groups if not g.mask & (0x7FFFF << 20))
    if imm:
        out.append(Form(opcode, (code & ~(0xFF << 56)) | ((imm_top if imm_top is not None else _IMM_TOP[top]) << 56),
                        tuple(o.replace("{b}", imm) for o in ops), imm_groups, source))
    if const:
        out.append(Form(opcode, _variant(code, _CONST_TOP), tuple(o.replace("{b}", "c20") for o in ops),
                        const_groups, source))
    if c39:
        out.append(Form(opcode, _variant(code, _C39_TOP), tuple(c39), tuple(mod_groups), source))
    return out


_INT_TYPES = "U8=0 U16=1 U32=2 U64=3 S8=4 S16=5 S32=6 S64=7"  # width | signed << 2
_INT_TYPES_32 = "U8=0 U16=1 U32=2 S8=4 S16=5 S32=6"  # [nvdisasm]: I2I has no 64-bit types
_F2I_TYPES = "U16=1 U32=2 U64=3 S16=5 S32=6 S64=7"  # [nvdisasm]: F2I has no 8-bit destination
_XMAD_MODE = mods(50, 3, "CLO=1 CHI=2 CSFU=3 CBCC=4")  # [nvdisasm]: CBCC is a mode, not a flag
_XMAD_TYPES = mods(48, 2, "U16.U16=0 S16.U16=1 U16.S16=2 S16.S16=3 S16=1 U16=0")  # a, b signed [nvdisasm]


def _x2x(dst: bool, spec: str, default: str) -> Mods:
    """A conversion's destination or source type: width (2 bits) and sign (1 bit) in separate
    places (dst: bits 8-9 and 12, src: 10-11 and 13); ``spec`` values are width | signed << 2."""
    wpos, spos = (8, 12) if dst else (10, 13)
    names = []
    for item in spec.split():
        name, _, val = item.partition("=")
        v = int(val)
        names.append((name, (v & 3) << wpos | (v >> 2) << spos))
    return Mods(3 << wpos | 1 << spos, tuple(names), dict(names)[default], show=True)


FORMS = [
    # ---- floating point ------------------------------------------------------------------
    *alu("FFMA", 0x5980000000000000, ("r0", "r8", "{b} n48", "r39 n49"),
         (flag(53, "FTZ"), mods(51, 2, "RN=0 RM=1 RP=2 RZ=3", default="RN"), _SAT50),
         imm="f20", c39=("r0", "r8", "r39 n48", "c20 n49")),
    *alu("FMUL", 0x5C68000000000000, ("r0", "r8", "{b} n48"), (_FTZ44, _RND39, _SAT50), imm="f20"),
    *alu("FADD", 0x5C58000000000000, ("r0", "r8 n48 a46", "{b} n45 a49"), (_FTZ44, _RND39, _SAT50), imm="f20"),
    *alu("FMNMX", 0x5C60000000000000, ("r0", "r8 n48 a46", "{b} n45 a49", "p39 !42"), (_FTZ44,), imm="f20"),
    *alu("FSETP", 0x5BB0000000000000, ("p3", "p0", "r8 n43 a7", "{b} n6 a44", "p39 !42"),
         (_FCMP, flag(47, "FTZ"), _BOOL45), imm="f20"),
    Form("MUFU", 0x5080000000000000, ("r0", "r8 n48 a46"),  # |a|: bit 46 [nvdisasm]
         (mods(20, 4, "COS=0 SIN=1 EX2=2 LG2=3 RCP=4 RSQ=5 RCP64H=6 RSQ64H=7 SQRT=8", required=True),
          _SAT50)),  # SQRT (8) and .SAT (bit 50) [nvdisasm; values 9-15 are invalid there]
    # FCHK.DIVIDE p, a, b [nvdisasm 12.8 on ptxas's 0x5c88000000470600]: the predicate in bits 3-5,
    # -a / |a| bits 48 / 46, -b / |b| bits 45 / 49; the check mode in bits 39-44 (0: DIVIDE, the
    # only valid one); immediate (0x38..) and constant (0x4c..) variants as the ALU opcodes
    *alu("FCHK", 0x5C88000000000000, ("p3", "r8 n48 a46", "{b} n45 a49"),
         (mods(39, 6, "DIVIDE=0", required=True),), imm="f20", source="nvdisasm"),
    *alu("RRO", 0x5C90000000000000, ("r0", "{b} n45 a49"), (mods(39, 1, "SINCOS=0 EX2=1", required=True),),
         imm="f20"),
    # double precision [grammar] + [nvdisasm]: register pairs, a 20-bit immediate holding the 19
    # high bits of the fp64 pattern below its sign (bit 56)
    *alu("DADD", 0x5C70000000000000, ("r0", "r8 n48 a46", "{b} n45 a49"), (_RND39,), imm="d20"),
    *alu("DMUL", 0x5C80000000000000, ("r0", "r8", "{b} n48"), (_RND39,), imm="d20"),
    *alu("DFMA", 0x5B70000000000000, ("r0", "r8", "{b} n48", "r39 n49"),
         (mods(50, 2, "RN=0 RM=1 RP=2 RZ=3", default="RN"),), imm="d20", c39=("r0", "r8", "r39 n48", "c20 n49")),
    *alu("DMNMX", 0x5C50000000000000, ("r0", "r8 n48 a46", "{b} n45 a49", "p39 !42"), imm="d20"),
    *alu("DSETP", 0x5B80000000000000, ("p3", "p0", "r8 n43 a7", "{b} n6 a44", "p39 !42"), (_FCMP, _BOOL45),
         imm="d20"),
    *alu("DSET", 0x5900000000000000, ("r0", "r8 n43 a54", "{b} n53 a44", "p39 !42"),
         (flag(52, "BF"), _FCMP, _BOOL45, _CC47), imm="d20", source="nvdisasm"),
    Form("FADD32I", 0x0800000000000000, ("r0", "r8", "f32"), (flag(55, "FTZ"),)),
    Form("FMUL32I", 0x1E00000000000000, ("r0", "r8", "f32"), (flag(53, "FTZ"),)),
    # ---- integer -------------------------------------------------------------------------
    *alu("IADD", 0x5C10000000000000, ("r0", "r8 n49", "{b} n48"), (_X43, _SAT50, _CC47)),
    Form("IADD32I", 0x1C00000000000000, ("r0", "r8 n56", "i32"), (flag(53, "X"), flag(52, "CC"))),
    # IADD3 [grammar]; its immediate [nvdisasm] is 20 bits unsigned, bit 19 in bit 56
    *alu("IADD3", 0x5CC0000000000000, ("r0", "r8 n51", "{b} n50", "r39 n49"),
         (mods(37, 2, "RS=1 LS=2"), flag(48, "X"), _CC47), imm="u20s56"),
    *alu("ISCADD", 0x5C18000000000000, ("r0", "r8 n49", "{b} n48", "u39.5"), (_CC47,)),
    Form("ISCADD32I", 0x1400000000000000, ("r0", "r8", "i32", "u53.5")),
    # XMAD [grammar] + [nvdisasm]: a and b signedness (bits 48, 49: printed as a pair), the mode
    # (bits 50-52: CLO, CHI, CSFU, CBCC), .H1 of a (bit 53) and of b; the constant forms keep
    # PSL/MRG in other bits (or have none) and no CBCC; printed in nvdisasm's order (XMAD.PSL.CBCC)
    Form("XMAD", 0x5B00000000000000, ("r0", "r8 h53", "r20 h35", "r39"),
         (_XMAD_TYPES, flag(36, "PSL"), _XMAD_MODE, flag(37, "MRG"), flag(38, "X"), _CC47)),
    Form("XMAD", 0x3600000000000000, ("r0", "r8 h53", "u20.16", "r39"),
         (_XMAD_TYPES, flag(36, "PSL"), _XMAD_MODE, flag(37, "MRG"), flag(38, "X"), _CC47)),
    Form("XMAD", 0x4E00000000000000, ("r0", "r8 h53", "c20 h52", "r39"),
         (_XMAD_TYPES, flag(55, "PSL"), mods(50, 2, "CLO=1 CHI=2 CSFU=3"), flag(56, "MRG"), flag(54, "X"), _CC47),
         "nvdisasm"),
    Form("XMAD", 0x5100000000000000, ("r0", "r8 h53", "r39 h52", "c20"),
         (_XMAD_TYPES, mods(50, 2, "CLO=1 CHI=2 CSFU=3"), flag(54, "X"), _CC47), "nvdisasm"),
    # LOP [grammar] + [nvdisasm]: ~a is bit 39, ~b bit 40; bits 48-50 a predicate result (PT: none)
    *alu("LOP", 0x5C47000000000000, ("r0", "r8 ~39", "{b} ~40"),
         (mods(41, 2, "AND=0 OR=1 XOR=2 PASS_B=3", required=True), _X43, _CC47)),
    # with a predicate result of the outcome (.T always, .Z zero, .NZ non-zero) [nvdisasm]
    *alu("LOP", 0x5C40000000000000, ("p48", "r0", "r8 ~39", "{b} ~40"),
         (mods(41, 2, "AND=0 OR=1 XOR=2 PASS_B=3", required=True), _X43, mods(44, 2, "T=1 Z=2 NZ=3"), _CC47),
         source="nvdisasm"),
    Form("LOP32I", 0x0400000000000000, ("r0", "r8", "i32"), (mods(53, 2, "AND=0 OR=1 XOR=2 PASS_B=3", required=True),)),
    # LOP3.LUT [grammar] + [nvdisasm]: .X bit 38 (57 in the immediate form), an optional predicate
    # result in bits 48-50 with .T / .Z / .NZ in 36-37
    Form("LOP3", 0x5BE7000000000000, ("r0", "r8", "r20", "r39", "u28.8"), (flag(38, "X"), _CC47),
         fixed_mods=("LUT",)),
    Form("LOP3", 0x5BE0000000000000, ("p48", "r0", "r8", "r20", "r39", "u28.8"),
         (mods(36, 2, "T=1 Z=2 NZ=3"), flag(38, "X"), _CC47), "nvdisasm", fixed_mods=("LUT",)),
    Form("LOP3", 0x3C00000000000000, ("r0", "r8", "i20", "r39", "u48.8"), (flag(57, "X"), _CC47),
         fixed_mods=("LUT",)),
    Form("LOP3", 0x0200000000000000, ("r0", "r8", "c20", "r39", "u48.8"), (_CC47,), "nvdisasm",
         fixed_mods=("LUT",)),  # with a constant: ptxas's 0x02f8030800670707 is LOP3.LUT R7, R7, c[0x2][0x18], R6, 0xf8
    *alu("SHL", 0x5C48000000000000, ("r0", "r8", "{b}"), (flag(39, "W"),)),
    *alu("SHR", 0x5C28000000000000, ("r0", "r8", "{b}"), (_U32_48,)),
    *alu("BFE", 0x5C00000000000000, ("r0", "r8", "{b}"), (_U32_48, flag(40, "BREV"))),  # BREV [nvdisasm]
    *alu("BFI", 0x5BF0000000000000, ("r0", "r8", "{b}", "r39"), c39=("r0", "r8", "r39", "c20")),
    *alu("SEL", 0x5CA0000000000000, ("r0", "r8", "{b}", "p39 !42")),
    *alu("IMNMX", 0x5C20000000000000, ("r0", "r8", "{b}", "p39 !42"),
         (_U32_48, mods(43, 2, "XLO=1 XHI=3"), _CC47)),
    # ISET / FSET [grammar] + [nvdisasm]: .BF (1.0 / 0 instead of -1 / 0) is bit 44 / 52; FSET's
    # -b, |a| are bits 53, 54
    *alu("ISET", 0x5B50000000000000, ("r0", "r8", "{b}", "p39 !42"),
         (flag(44, "BF"), _ICMP, _U32_48, _X43, _BOOL45, _CC47)),
    *alu("FSET", 0x5800000000000000, ("r0", "r8 n43 a54", "{b} n53 a44", "p39 !42"),
         (flag(52, "BF"), _FCMP, flag(55, "FTZ"), _BOOL45, _CC47), imm="f20", source="nvdisasm"),
    # FCMP.cmp[.FTZ] d, a, b, c: d = a if (c cmp 0.0) else b [nvdisasm 12.8 on ptxas's
    # 0x4bab01080007ff00 = FCMP.LEU R0, RZ, c[0x2][0x0], R2 and its neighbours: the comparison in
    # bits 48-51 as FSETP's plus F (0) and T (15), GT (4) not printed; .FTZ bit 47; immediate,
    # constant and third-source-constant forms]
    *alu("FCMP", 0x5BA0000000000000, ("r0", "r8", "{b}", "r39"),
         (mods(48, 4, "F=0 LT=1 EQ=2 LE=3 GT=4 NE=5 GE=6 NUM=7 NAN=8 LTU=9 EQU=10 LEU=11 GTU=12 NEU=13 GEU=14 "
                      "T=15", default="GT"), flag(47, "FTZ")), imm="f20",
         c39=("r0", "r8", "r39", "c20"), source="nvdisasm"),
    *alu("ISETP", 0x5B60000000000000, ("p3", "p0", "r8", "{b}", "p39 !42"), (_ICMP, _U32_48, _X43, _BOOL45)),
    *alu("ICMP", 0x5B40000000000000, ("r0", "r8", "{b}", "r39"), (_ICMP, _U32_48), c39=("r0", "r8", "r39", "c20")),
    *alu("POPC", 0x5C08000000000000, ("r0", "{b} ~40")),
    *alu("FLO", 0x5C30000000000000, ("r0", "{b} ~40"), (mods(48, 1, "U32=0 S32=1", default="S32"), flag(41, "SH"))),
    Form("SHF", 0x5BF8000000000000, ("r0", "r8", "r20", "r39"),
         (mods(37, 2, "U64=2 S64=3"), flag(50, "W"), flag(48, "HI")), fixed_mods=("L",)),
    Form("SHF", 0x36F8000000000000, ("r0", "r8", "u20.6", "r39"),
         (mods(37, 2, "U64=2 S64=3"), flag(50, "W"), flag(48, "HI")), fixed_mods=("L",)),
    Form("SHF", 0x5CF8000000000000, ("r0", "r8", "r20", "r39"),
         (mods(37, 2, "U64=2 S64=3"), flag(50, "W"), flag(48, "HI")), fixed_mods=("R",)),
    Form("SHF", 0x38F8000000000000, ("r0", "r8", "u20.6", "r39"),
         (mods(37, 2, "U64=2 S64=3"), flag(50, "W"), flag(48, "HI")), fixed_mods=("R",)),
    # LEA [grammar]: the plain form (shift in bits 39-43) and LEA.HI (shift in 28-32)
    *alu("LEA", 0x5BD7000000000000, ("r0", "r8", "{b}", "u39.5"), (_CC47,)),
    # LEA.HI [grammar] code 0x5bdf004000000000, whose bit 38 nvdisasm prints as .X
    Form("LEA", 0x5BDF000000000000, ("r0", "r8", "r20", "r39", "u28.5"), (flag(38, "X"), _CC47), fixed_mods=("HI",)),
    # LEA.HI with a constant [grammar code 0x0a07...; nvdisasm: 0x1807..., .X bit 57, -a bit 56]
    Form("LEA", 0x1807000000000000, ("r0", "r8 n56", "c20", "r39", "u51.5"), (flag(57, "X"), _CC47), "nvdisasm",
         fixed_mods=("HI",)),
    # VMAD [grammar] + [nvdisasm 12.8: words 0x5f04... with each bit set in turn]: a's format and
    # selection in bits 36-38 (0-3: 8-bit, byte 0-3; 4 / 5: 16-bit, half 0 / 1; 6: 32-bit), b's in
    # 28-30; a signed bit 48, b signed 49; -a (the product negated) bit 54, -c bit 53 (both: .PO,
    # not in the table), SHR_7 bit 51, SHR_15 bit 52, SAT bit 55. The 8- and 16-bit formats of a
    # and b, bytes 0 and either half: one form per pair of widths
    *[Form("VMAD", 0x5F04000000000000 | (1 << 38 if wa == 16 else 0) | (1 << 30 if wb == 16 else 0),
           ("r0", "r8 n54" + (" h36" if wa == 16 else ""), "r20" + (" h28" if wb == 16 else ""), "r39 n53"),
           (mods(48, 2, f"U{wa}.U{wb}=0 S{wa}.U{wb}=1 U{wa}.S{wb}=2 S{wa}.S{wb}=3", required=True),
            mods(51, 2, "SHR_7=1 SHR_15=2"), flag(55, "SAT")))
      for wa in (8, 16) for wb in (8, 16)],
    # VMNMX, the 32-bit forms [nvdisasm 12.8: ptxas's 0x3a2403e060470200 = VMNMX.UD.U32.U32.ACC
    # R0, R2, R4, R7 and 0x3b6f03e06047020d = VMNMX.MX.MIN R13, R2, R4, R7, each bit set in turn]: a's
    # selector in 36-38 (6: the 32-bit register), b a 32-bit register (bit 50, selector 6 in 28-30),
    # a / b signed in 48 / 49, bit 54 clear: an unsigned result (.UD), 56 .MX (max, else min), 55
    # .SAT, 51-53 the second operation with c (4 ACC, 5 MIN, 6 MAX, 7 none; 0-3 merges, not modelled)
    Form("VMNMX", 0x3A00000000000000 | 1 << 50 | 6 << 36 | 6 << 28, ("r0", "r8", "r20", "r39"),
         (Mods(1 << 54, (("UD", 0),), 1 << 54),  # (nvdisasm writes the types unless both are S32)
          Mods(1 << 48 | 1 << 49, tuple((f"{'S' if sa else 'U'}32.{'S' if sb else 'U'}32", sa << 48 | sb << 49)
                                        for sa in (0, 1) for sb in (0, 1)), 1 << 48 | 1 << 49),
          flag(56, "MX"), flag(55, "SAT"), Mods(7 << 51, (("ACC", 4 << 51), ("MIN", 5 << 51), ("MAX", 6 << 51)), 7 << 51)),
         source="nvdisasm"),
    *alu("PRMT", 0x5BC0000000000000, ("r0", "r8", "{b}", "r39"),
         (mods(48, 3, "F4E=1 B4E=2 RC8=3 ECL=4 ECR=5 RC16=6"),), c39=("r0", "r8", "r39", "c20")),
    # ---- conversions [grammar]: destination type in bits 8-9 (width) and 12 (signed), source
    # type in 10-11 and 13; rounding in 39-40, bit 42 rounding to an integer (F2F)
    *alu("F2F", 0x5CA8000000000000, ("r0", "{b} n45 a49"),
         (flag(44, "FTZ"), _x2x(True, "F16=1 F32=2 F64=3", "F32"), _x2x(False, "F16=1 F32=2 F64=3", "F32"),
          _RND39, _SAT50), imm="f20"),
    # F2F between equal types [nvdisasm 12.8: words 0x5ca8...0a.. with bits 39-42 set in turn]: bit
    # 42 rounds to an integral value (ROUND FLOOR CEIL TRUNC; between different types nvdisasm
    # ignores it), a rounding mode without it (1-3) is printed .PASS (the value passes unrounded);
    # maxsim writes .PASS as 1. The types are part of the form, so that these words print so.
    *[f for t, v in (("F16", 1), ("F32", 2), ("F64", 3))
      for f in alu("F2F", 0x5CA8000000000000 | v << 8 | v << 10, ("r0", "{b} n45 a49"),
                   (flag(44, "FTZ"), Mods(0xB << 39, tuple((n, v << 39) for n, v in (
                       ("PASS", 1), ("PASS", 2), ("PASS", 3), ("ROUND", 8), ("FLOOR", 9), ("CEIL", 10),
                       ("TRUNC", 11)))), _SAT50), imm="f20" if t == "F32" else None, source="nvdisasm")
      for f in [attrs.evolve(f, fixed_mods=(t, t))]],
    *alu("F2I", 0x5CB0000000000000, ("r0", "{b} n45 a49"),
         (flag(44, "FTZ"), _x2x(True, _F2I_TYPES, "S32"), _x2x(False, "F16=1 F32=2 F64=3", "F32"),
          mods(39, 2, "ROUND=0 FLOOR=1 CEIL=2 TRUNC=3", default="ROUND")), imm="f20"),
    *alu("I2F", 0x5CB8000000000000, ("r0", "{b} n45 a49"),
         (_x2x(True, "F16=1 F32=2 F64=3", "F32"), _x2x(False, _INT_TYPES, "S32"), _RND39)),
    *alu("I2I", 0x5CE0000000000000, ("r0", "{b} n45 a49"),
         (_x2x(True, _INT_TYPES_32, "S32"), _x2x(False, _INT_TYPES_32, "S32"), _SAT50)),
    # ---- moves, predicates ---------------------------------------------------------------
    *alu("MOV", 0x5C98078000000000, ("r0", "{b}")),
    Form("MOV32I", 0x010000000000F000, ("r0", "i32")),
    Form("S2R", 0xF0C8000000000000, ("r0", "sr20")),
    Form("CS2R", 0x50C8000000000000, ("r0", "sr20")),
    Form("PSETP", 0x5090000000000000, ("p3", "p0", "p12 !15", "p29 !32", "p39 !42"),
         (mods(24, 2, "AND=0 OR=1 XOR=2", default="AND", show=True), _BOOL45)),
    Form("P2R", 0x38E8000000000000, ("r0", "kw:PR", "r8", "u20.7")),
    Form("R2P", 0x38F0000000000000, ("kw:PR", "r8", "u20.7")),
    Form("VOTE", 0x50D8000000000000, ("r0", "p45", "p39 !42"), (mods(48, 2, "ALL=0 ANY=1 EQ=2", required=True),)),
    # SHFL [grammar]: bit 28 b immediate (bits 20-27), bit 29 c immediate (bits 34-46)
    Form("SHFL", 0xEF10000000000000, ("p48", "r0", "r8", "r20", "r39"),
         (mods(30, 2, "IDX=0 UP=1 DOWN=2 BFLY=3", required=True),)),
    Form("SHFL", 0xEF10000010000000, ("p48", "r0", "r8", "u20.5", "r39"),
         (mods(30, 2, "IDX=0 UP=1 DOWN=2 BFLY=3", required=True),)),
    Form("SHFL", 0xEF10000020000000, ("p48", "r0", "r8", "r20", "u34.13"),
         (mods(30, 2, "IDX=0 UP=1 DOWN=2 BFLY=3", required=True),)),
    Form("SHFL", 0xEF10000030000000, ("p48", "r0", "r8", "u20.5", "u34.13"),
         (mods(30, 2, "IDX=0 UP=1 DOWN=2 BFLY=3", required=True),)),
    # ---- memory [grammar] + [nvdisasm] ---------------------------------------------------
    Form("LDS", 0xEF48000000000000, ("r0", "m8.20.24"), (flag(44, "U"), _MEMTYPE48)),
    # STS.U [grammar: .U captured, no bits for STS]: a name only, never printed back
    Form("STS", 0xEF58000000000000, ("m8.20.24", "r0"), (Mods(0, (("U", 0),)), _MEMTYPE48)),
    Form("LDG", 0xEED0000000000000, ("r0", "m8.20.24"), (flag(45, "E"), mods(46, 2, "CG=1 CI=2 CV=3"), _MEMTYPE48)),
    Form("STG", 0xEED8000000000000, ("m8.20.24", "r0"), (flag(45, "E"), mods(46, 2, "CG=1 CS=2 WT=3"), _MEMTYPE48)),
    Form("LDL", 0xEF40000000000000, ("r0", "m8.20.24"), (mods(44, 2, "LU=1 CI=2 CV=3"), _MEMTYPE48)),
    Form("STL", 0xEF50000000000000, ("m8.20.24", "r0"), (_MEMTYPE48,)),
    # LD / ST: 32-bit offset, a predicate operand (bits 58-60) written by the instruction
    Form("LD", 0x8000000000000000 | (7 << 58), ("r0", "m8.20.32"),
         (flag(52, "E"), mods(56, 2, "CG=1 CI=2 CV=3"), _LD_TYPE),
         "nvdisasm"),
    Form("ST", 0xA000000000000000 | (7 << 58), ("m8.20.32", "r0"),
         (flag(52, "E"), mods(56, 2, "CG=1 CS=2 WT=3"), _LD_TYPE),
         "nvdisasm"),
    # LDC [nvdisasm]: c[bank (bits 36-40)][register + 16-bit signed offset]
    Form("LDC", 0xEF90000000000000, ("r0", "cx"), (mods(48, 3, "U8=0 S8=1 U16=2 S16=3 32=4 64=5", default="32"),),
         "nvdisasm"),
    Form("ATOM", 0xED00000000000000, ("r0", "m8.28.20", "r20"),
         (flag(48, "E"), mods(52, 4, "ADD=0 MIN=1 MAX=2 INC=3 DEC=4 AND=5 OR=6 XOR=7 EXCH=8", required=True),
          mods(49, 3, "S32=1 U64=2 F32.FTZ.RN=3 F16x2.FTZ.RN=4 S64=5 U32=0")), "nvdisasm"),
    # ATOM.CAS / ATOMS.CAS [grammar codes 0x03f0... / 0x0240... over ATOM / ATOMS; nvdisasm]: the
    # compare value's register b, the new value's b + 1 (not encoded) or RZ (a flag bit)
    Form("ATOM", 0xEEF0000000000000, ("r0", "m8.28.20", "r20", "next20"), (flag(48, "E"), _CAS), "nvdisasm"),
    Form("ATOM", 0xEEF4000000000000, ("r0", "m8.28.20", "r20", "rz"), (flag(48, "E"), _CAS), "nvdisasm"),
    Form("ATOMS", 0xEE40000000000000, ("r0", "m8.30.22x4", "r20", "next20"), (_CAS,), "nvdisasm"),
    Form("ATOMS", 0xEE40000010000000, ("r0", "m8.30.22x4", "r20", "rz"), (_CAS,), "nvdisasm"),
    Form("RED", 0xEBF8000000000000, ("m8.28.20", "r0"),
         (flag(48, "E"), mods(23, 3, "ADD=0 MIN=1 MAX=2 INC=3 DEC=4 AND=5 OR=6 XOR=7", required=True),
          mods(20, 3, "S32=1 U64=2 F32.FTZ.RN=3 F16x2.FTZ.RN=4 S64=5 U32=0"))),
    Form("ATOMS", 0xEC00000000000000, ("r0", "m8.30.22x4", "r20"),
         (mods(52, 4, "ADD=0 MIN=1 MAX=2 INC=3 DEC=4 AND=5 OR=6 XOR=7 EXCH=8", required=True),
          mods(28, 2, "S32=1 U64=2 S64=3 U32=0")), "nvdisasm"),
    # TLD.B.LZ [grammar] + [nvdisasm]: dimension bits 28-30, channel mask 31-34, NODEP bit 49,
    # predicate result bits 51-53 (PT: none); .T / .P are the control word's reuse bits 0 / 1
    Form("TLD", 0xDD38000000000000, ("r0", "r8", "r20", "zero", "dim28", "u31.4"), (flag(49, "NODEP"),),
         "nvdisasm", fixed_mods=("B", "LZ"), reuse_mods=(("T", 1), ("P", 2))),
    # TLD / TEX by texture slot (no .B: the slot in bits 36-48, as TLDS) and TEX.B [nvdisasm 12.8:
    # words 0xdc38..., 0xc038..., 0xdeb8... with each bit set in turn]: TLD's LOD is fixed at LZ
    # (bit 55 gives LL); TEX's LOD mode is bits 55-57 (1 = LZ), TEX.B's bits 37-39
    Form("TLD", 0xDC38000000000000, ("r0", "r8", "r20", "u36.13", "dim28", "u31.4"), (flag(49, "NODEP"),),
         "nvdisasm", fixed_mods=("LZ",), reuse_mods=(("T", 1), ("P", 2))),
    Form("TEX", 0xC038000000000000, ("r0", "r8", "r20", "u36.13", "dim28", "u31.4"),
         (mods(55, 3, "LZ=1"), flag(49, "NODEP")), "nvdisasm", reuse_mods=(("T", 1), ("P", 2))),
    Form("TEX", 0xDEB8000000000000, ("r0", "r8", "r20", "zero", "dim28", "u31.4"),
         (mods(37, 3, "LZ=1"), flag(49, "NODEP")), "nvdisasm", fixed_mods=("B",), reuse_mods=(("T", 1), ("P", 2))),
    # TLDS / TEXS [grammar code 0xda00..., nvdisasm]: two destinations (bits 28-35 and 0-7), the
    # coordinates a, b, the texture slot (bits 36-48), a texture type (bits 53-56: LOD mode and
    # dimension, TEXTURE_TYPES), the channels (bits 50-52, CHANNELS), NODEP bit 49; .T / .P in the
    # reuse field as TLD's
    Form("TLDS", 0xDA00000000000000, ("r28", "r0", "r8", "r20", "u36.13", "textype", "chan"), (flag(49, "NODEP"),),
         "nvdisasm", reuse_mods=(("T", 1), ("P", 2))),
    Form("TEXS", 0xD800000000000000, ("r28", "r0", "r8", "r20", "u36.13", "textype", "chan"), (flag(49, "NODEP"),),
         "nvdisasm", reuse_mods=(("T", 1), ("P", 2))),
    Form("DEPBAR", 0xF0F0000020000000, ("sb26", "u20.6"), (), fixed_mods=("LE",)),
    Form("DEPBAR", 0xF0F0000000000000, ("sbset",), (), "grammar"),  # DEPBAR {5,4,...}: wait for those scoreboards
    Form("MEMBAR", 0xEF98000000000000, (), (mods(8, 2, "CTA=0 GL=1 SYS=2", show=True),
                                            mods(0, 2, "IVALLD=1 IVALLT=2 IVALLTD=3")), "nvdisasm"),
    # ---- control [grammar] + [maxas] ----------------------------------------------------
    # BAR.SYNC with an immediate barrier (bits 8-11, flag bit 44), no thread count (bit 43), no
    # predicate (bits 39-41 PT) [nvdisasm: ptxas's BAR.SYNC 0x0 is 0xf0a81b8000070000]
    Form("BAR", 0xF0A8000000000000 | (1 << 44) | (1 << 43) | (7 << 39), ("u8.4",), (), "nvdisasm",
         fixed_mods=("SYNC",)),
    # BAR.RED.POPC/AND/OR b, P: reduce a predicate over the CTA [grammar: mode RED bit 33, the
    # operation bits 35-36, the predicate bits 39-41 and 42]; B2R.RESULT reads the result
    Form("BAR", 0xF0A8000000000000 | (1 << 44) | (1 << 43) | (2 << 32), ("u8.4", "p39 !42"),
         (mods(35, 2, "POPC=0 AND=1 OR=2", required=True),), fixed_mods=("RED",)),
    Form("B2R", 0xF0B800010000FF00 | (7 << 45), ("r0",), (), fixed_mods=("RESULT",)),  # no predicate (PT)
    Form("B2R", 0xF0B800010000FF00, ("r0", "p45"), (), fixed_mods=("RESULT",)),
    Form("BRA", 0xE24000000000000F, ("t20",), (flag(7, "U"),)),
    # BRA CC.test, target: a branch on the condition code (bits 0-4; 15 is "always", the plain BRA
    # above) [nvdisasm 12.8: BRA words with bits 0-4 set to each value; ptxas's IEEE division
    # branches with BRA CC.EQ after FSET ... RZ.CC]
    Form("BRA", 0xE240000000000000, ("cc0", "t20"), (flag(7, "U"),), "nvdisasm"),
    Form("CAL", 0xE260000000000040, ("t20",), (), guarded=False),
    Form("SSY", 0xE290000000000000, ("t20",), (), guarded=False),
    Form("PBK", 0xE2A0000000000000, ("t20",), (), guarded=False),
    Form("PCNT", 0xE2B0000000000000, ("t20",), (), guarded=False),
    Form("RET", 0xE32000000000000F, ()),
    Form("BRK", 0xE34000000000000F, ()),
    Form("CONT", 0xE35000000000000F, ()),
    Form("SYNC", 0xF0F800000000000F, ()),
    Form("EXIT", 0xE30000000000000F, ()),
    Form("NOP", 0x50B0000000000F00, ()),
]



def _f32_source_only(forms):
    """[nvdisasm] reads a conversion's immediate by its source type (19 high bits of an F32, of an
    F64, or an F16): the immediate forms here take an F32 source only."""
    out = []
    for f in forms:
        if f.opcode in ("F2F", "F2I") and f.code >> 56 in (0x38, 0x39):
            groups = tuple(_x2x(False, "F32=2", "F32") if g.mask == (3 << 10 | 1 << 13) else g for g in f.mods)
            f = attrs.evolve(f, mods=groups)
        out.append(f)
    return out


FORMS = _f32_source_only(FORMS)
# F2F from F16 [nvdisasm]: bit 41 selects the source register's high half (R2.H1); nvdisasm
# prints no .H1 for an F32 or F64 source
FORMS = [attrs.evolve(f, operands=(f.operands[0], f.operands[1] + " h41"))
         if f.opcode == "F2F" and f.operands[1].startswith("r20") and f.fixed_mods in ((), ("F16", "F16"))
         else f for f in FORMS]

# Opcodes without operand reuse [nvdisasm prints no .reuse for them; maxas's types s2r, qtr, mem,
# vote have reuse 0 (maxas marks RRO so too, but nvdisasm shows RRO's reuse flag)]
NO_REUSE = frozenset(("MUFU", "POPC", "FLO", "F2F", "F2I", "I2F", "I2I", "S2R", "CS2R", "VOTE", "SHFL", "LDS",
                      "STS", "LDG", "STG", "LDL", "STL", "LD", "ST", "LDC", "ATOM", "RED", "ATOMS", "TLD", "TEX",
                      "DEPBAR", "MEMBAR", "BAR", "BRA", "CAL", "SSY", "PBK", "PCNT", "RET", "BRK", "CONT",
                      "SYNC", "EXIT", "NOP", "DMNMX", "DSETP", "DSET", "TLDS", "TEXS", "B2R"))
FORMS = [attrs.evolve(f, reuse=False) if f.opcode in NO_REUSE else f for f in FORMS]
# [nvdisasm]: FADD and DADD read their second source through the third operand slot (a*1 + b);
# its reuse flag is the third slot's (bit 2)
FORMS = [attrs.evolve(f, reuse_slots=(-1, 0, 2)) if f.opcode in ("FADD", "DADD") and f.operands[2].startswith("r20")
         else f for f in FORMS]

# the condition-code tests of BRA CC.test (bits 0-4) [nvdisasm 12.8]; 15 (T) is the plain BRA
CC_TESTS = ("F", "LT", "EQ", "LE", "GT", "NE", "GE", "NUM", "NAN", "LTU", "EQU", "LEU", "GTU", "NEU", "GEU", "T",
            "OFF", "LO", "SFF", "LS", "HI", "SFT", "HS", "OFT", "CSM_TA", "CSM_TR", "CSM_MX", "FCSM_TA",
            "FCSM_TR", "FCSM_MX", "RLE", "RGT")

# S2R / CS2R special registers [grammar] (numbers in bits 20-27; the names as nvdisasm prints them)
SPECIAL_REGISTERS = {
    "SR_LANEID": 0x00, "SR_VIRTCFG": 0x02, "SR_VIRTID": 0x03,
    "SR_TID.X": 0x21, "SR_TID.Y": 0x22, "SR_TID.Z": 0x23,
    "SR_CTAID.X": 0x25, "SR_CTAID.Y": 0x26, "SR_CTAID.Z": 0x27,
    "SR_EQMASK": 0x38, "SR_LTMASK": 0x39, "SR_LEMASK": 0x3A, "SR_GTMASK": 0x3B, "SR_GEMASK": 0x3C,
    "SR_CLOCKLO": 0x50, "SR_CLOCKHI": 0x51, "SR_GLOBALTIMERLO": 0x52, "SR_GLOBALTIMERHI": 0x53,
}

# TLDS / TEXS texture types (bits 53-56): (LOD and other modifiers, dimension) [nvdisasm]
TEXTURE_TYPES = {
    "TLDS": {0: (("LZ",), "1D"), 1: (("LL",), "1D"), 2: (("LZ",), "2D"), 4: (("LZ", "AOFFI"), "2D"),
             5: (("LL",), "2D"), 6: (("LZ", "MS"), "2D"), 7: (("LZ",), "3D"), 8: (("LZ",), "ARRAY_2D"),
             12: (("LL", "AOFFI"), "2D")},
    "TEXS": {0: (("LZ",), "1D"), 1: ((), "2D"), 2: (("LZ",), "2D"), 3: (("LL",), "2D"), 4: (("DC",), "2D"),
             5: (("LL", "DC"), "2D"), 6: (("LZ", "DC"), "2D"), 7: ((), "ARRAY_2D"), 8: (("LZ",), "ARRAY_2D"),
             9: (("LZ", "DC"), "ARRAY_2D"), 10: ((), "3D"), 11: (("LZ",), "3D"), 12: ((), "CUBE"),
             13: (("LL",), "CUBE")},
}
TEXTURE_TYPE_MODS = frozenset(("LZ", "LL", "DC", "AOFFI", "MS"))
# TLDS / TEXS channels (bits 50-52) [nvdisasm]: with one destination register (the second RZ),
# with two
CHANNELS = (("R", "G", "B", "A", "RG", "RA", "GA", "BA"), ("RGB", "RGA", "RBA", "GBA", "RGBA"))

# TLD dimensions (bits 28-30) [nvdisasm]
TEXTURE_DIMENSIONS = {"1D": 0, "ARRAY_1D": 1, "2D": 2}
DIMENSION_WORDS = frozenset(("1D", "ARRAY_1D", "2D", "ARRAY_2D", "3D", "CUBE", "ARRAY_CUBE"))

# Control word [maxas MaxAs.pm, MaxAsGrammar.pm printCtrl/readCtrl; wiki Control-Codes]: slot n of
# the group's three instructions takes bits 21n .. 21n+20: 17 control bits (stall 0-3, yield 4 with
# 0 meaning "yield", write barrier 5-7, read barrier 8-10 with 7 meaning none, wait mask 11-16)
# then 4 reuse bits (17-20: first, second, third source operand slot; the fourth is unused).
CONTROL_BITS = 21
REUSE_SHIFT = 17

# The end of a kernel as maxas assembles it [maxas MaxAs.pm]: a BRA to itself (control 0x7ff),
# then NOPs (control 0x7e0) until the code is a whole number of 64-byte (8-word) lines.
TAIL_BRA_CONTROL = 0x7FF
TAIL_NOP_CONTROL = 0x7E0


# The opcode field [nvdisasm 12.8, -b SM52, run on the 8,192 words whose top 13 bits take every
# value and whose other bits are 0 (guard PT)]: the opcode nvdisasm names for each value of bits
# 51-63, as runs "first value (hex): opcode" ("-": nvdisasm reads no instruction there). It names
# the opcode of a word whose form the table above does not know (an error message says which
# opcode it is, never the raw word); it decodes nothing.
_OPCODE_FIELD = """
0:- 20:MOV32I 22:- 40:LOP3 80:LOP32I 100:FADD32I 180:FFMA32I 200:IMAD32I 280:ISCADD32I 300:LEA
380:IADD32I 390:- 3a0:IADD32I 3c0:FMUL32I 3e0:IMUL32I 400:VADD 480:- 500:HFMA2_32I 540:HMUL2_32I
580:HADD2_32I 5c0:- 600:FSET 640:DSET 650:FFMA 660:DSET 670:FFMA 680:IMAD 690:IMADSP 693:-
694:IMADSP 697:- 698:IMADSP 69b:- 69c:IMADSP 69f:- 6a0:IMAD 6b0:IMADSP 6b3:- 6b4:IMADSP 6b7:-
6b8:IMADSP 6bb:- 6bc:IMADSP 6bf:- 6c0:XMAD 6c8:ICMP 6ca:ISET 6cc:ISETP 6ce:DFMA 6d0:DSETP 6d2:-
6d4:FCMP 6d6:FSETP 6d8:PRMT 6da:LEA 6db:- 6de:BFI 6df:SHF 6e0:XMAD 6e8:ICMP 6ea:ISET 6ec:ISETP
6ee:DFMA 6f0:DSETP 6f2:- 6f4:FCMP 6f6:FSETP 6f8:PRMT 6fa:LEA 6fb:- 6fe:BFI 6ff:SHF 700:BFE
701:POPC 702:IADD 703:ISCADD 704:IMNMX 705:SHR 706:FLO 707:IMUL 708:LOP 709:SHL 70a:DMNMX
70b:FADD 70c:FMNMX 70d:FMUL 70e:DADD 70f:- 710:DMUL 711:FCHK 712:RRO 713:MOV 714:SEL 715:F2F
716:F2I 717:I2F 718:IADD3 71a:- 71c:I2I 71d:P2R 71e:R2P 71f:SHF 720:BFE 721:POPC 722:IADD
723:ISCADD 724:IMNMX 725:SHR 726:FLO 727:IMUL 728:LOP 729:SHL 72a:DMNMX 72b:FADD 72c:FMNMX
72d:FMUL 72e:DADD 72f:- 730:DMUL 731:FCHK 732:RRO 733:MOV 734:SEL 735:F2F 736:F2I 737:I2F
738:IADD3 73a:- 73c:I2I 73d:P2R 73e:R2P 73f:SHF 740:VMNMX 780:LOP3 800:VSET 840:- 900:FSET
920:DSET 930:FFMA 940:IMAD 950:IMADSP 953:- 954:IMADSP 957:- 958:IMADSP 95b:- 95c:IMADSP 95f:-
968:ICMP 96a:ISET 96c:ISETP 96e:DFMA 970:DSETP 972:- 974:FCMP 976:FSETP 978:PRMT 97a:LEA 97b:-
97e:BFI 97f:- 980:BFE 981:POPC 982:IADD 983:ISCADD 984:IMNMX 985:SHR 986:FLO 987:IMUL 988:LOP
989:SHL 98a:DMNMX 98b:FADD 98c:FMNMX 98d:FMUL 98e:DADD 98f:- 990:DMUL 991:FCHK 992:RRO 993:MOV
994:SEL 995:F2F 996:F2I 997:I2F 998:IADD3 99a:- 99c:I2I 99d:P2R 99e:R2P 99f:- 9c0:XMAD
a00:VABSDIFF4 a10:MUFU a11:PSET a12:PSETP a13:CSET a14:CSETP a15:- a16:NOP a17:- a19:CS2R
a1a:LEPC a1b:VOTE a1d:- a1e:VSETP a1f:FSWZADD a20:XMAD a30:FFMA a40:IMAD a50:IMADSP a53:-
a54:IMADSP a57:- a58:IMADSP a5b:- a5c:IMADSP a5f:- a68:ICMP a6a:- a6e:DFMA a70:- a74:FCMP a76:-
a78:PRMT a7a:- a7e:BFI a7f:- a80:VABSDIFF aa0:- ac0:VSHR ae0:VSHL b00:FSET b20:DSET b30:FFMA
b40:IMAD b50:IMADSP b53:- b54:IMADSP b57:- b58:IMADSP b5b:- b5c:IMADSP b5f:- b60:XMAD b68:ICMP
b6a:ISET b6c:ISETP b6e:DFMA b70:DSETP b72:- b74:FCMP b76:FSETP b78:PRMT b7a:LEA b7c:LOP3 b7d:-
b7e:BFI b7f:SHF b80:BFE b81:POPC b82:IADD b83:ISCADD b84:IMNMX b85:SHR b86:FLO b87:IMUL b88:LOP
b89:SHL b8a:DMNMX b8b:FADD b8c:FMNMX b8d:FMUL b8e:DADD b8f:- b90:DMUL b91:FCHK b92:RRO b93:MOV
b94:SEL b95:F2F b96:F2I b97:I2F b98:IADD3 b9a:- b9c:I2I b9d:P2R b9e:R2P b9f:SHF ba0:HFMA2
ba1:HMUL2 ba2:HADD2 ba3:HSET2 ba4:HSETP2 ba5:- be0:VMAD c00:- c10:HFMA2 c20:- c30:HFMA2 c40:-
c50:HFMA2 c60:- c70:HFMA2 c80:- c90:HFMA2 ca0:- cb0:HFMA2 cc0:- cd0:HFMA2 ce0:- cf0:HFMA2 d00:-
e00:HFMA2 f00:HMUL2 f40:HADD2 f80:HSET2 fc0:HSETP2 1000:LD 1400:ST 1800:TEX 1900:TLD4 1980:-
1a00:TEXS 1a38:- 1a40:TLDS 1a4c:- 1a50:TLDS 1a64:- 1a70:TLDS 1a74:- 1b00:TEXS 1b38:- 1b40:TLDS
1b4c:- 1b50:TLDS 1b64:- 1b70:TLDS 1b74:- 1b80:TLD 1bc0:TXD 1bd0:TEX 1bd8:TLD4 1be0:TLD4S
1be8:TXA 1be9:- 1beb:TMML 1bed:- 1bf0:TLD4S 1bf8:- 1c40:JMX 1c42:JMP 1c44:JCAL 1c46:PEXIT
1c48:BRA 1c4a:BRX 1c4c:CAL 1c4e:PRET 1c50:PLONGJMP 1c52:SSY 1c54:PBK 1c56:PCNT 1c58:GETCRSPTR
1c5a:GETLMEMBASE 1c5c:SETCRSPTR 1c5e:SETLMEMBASE 1c60:EXIT 1c62:LONGJMP 1c64:RET 1c66:KIL
1c68:BRK 1c6a:CONT 1c6c:RTT 1c6e:SAM 1c70:RAM 1c72:IDE 1c74:BPT 1c76:- 1d40:SUATOM 1d48:-
1d4c:SUATOM 1d4f:- 1d50:SUATOM 1d5b:- 1d60:SULD 1d64:SUST 1d68:SURED 1d6c:- 1d70:SUATOM 1d78:-
1d7c:OUT 1d7d:- 1d7e:CCTLT 1d7f:RED 1d80:ATOMS 1da0:ATOM 1dc0:ATOMS 1dcc:ATOM 1dd0:- 1dd4:STP
1dd5:- 1dd9:LDG 1ddb:STG 1ddc:- 1dde:ATOM 1de0:- 1de2:SHFL 1de3:- 1de8:LDL 1de9:LDS 1dea:STL
1deb:STS 1dec:CCTL 1df0:- 1df2:LDC 1df3:MEMBAR 1df4:AL2P 1df5:- 1dfa:ISBERD 1dfb:ALD 1dfc:-
1dfd:PIXLD 1dfe:AST 1dff:- 1e17:B2R 1e18:R2B 1e19:S2R 1e1a:- 1e1e:DEPBAR 1e1f:SYNC 1e20:-
1edc:OUT 1edd:- 1efc:OUT 1efd:- 1f7c:OUT 1f7d:-
"""
OPCODE_FIELD = tuple((int(v, 16), None if n == "-" else n)
                     for v, n in (item.split(":") for item in _OPCODE_FIELD.split()))


_FIELD_STARTS = tuple(v for v, _ in OPCODE_FIELD)


def opcode_of_word(w: int):
    """The opcode the top 13 bits of instruction word ``w`` name (None: no instruction)."""
    import bisect
    return OPCODE_FIELD[bisect.bisect_right(_FIELD_STARTS, w >> 51 & 0x1FFF) - 1][1]
