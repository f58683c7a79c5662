"""The opcode table: operand signature, accepted modifiers and timing class of each opcode.

What an opcode *computes* lives in :mod:`maxsim.functional.alu` and its neighbours; what it *costs*
comes from the architecture config, looked up by the timing class (``unit``) given here.

Operand signature letters: R register (RZ allowed), V aligned vector register group, P predicate,
I integer immediate, F float immediate, C constant c[b][o], S special register, L label,
M memory address [R+imm], W bare word (texture dimension). Alternatives are joined with "|".
"""

from __future__ import annotations

import attrs

from . import instruction as ins

# Timing classes. alu: full-rate integer/fp32 pipe work; alu_half: the half-rate classes (shifts,
# compares, bit-field, select); lds/sts: shared memory; tex: texture fetch; ldg/stg: global memory;
# s2r: special registers; bar: CTA barrier; branch: BRA/CAL/RET; exit: EXIT.
# The classes of the opcodes beyond SGEMM follow maxas's (MaxAsGrammar.pm: x32 full rate, shift and
# cmp half rate, qtr quarter rate, smem shared memory, gmem global memory) and the CUDA C Programming
# Guide's 5.x throughput table. xu: the quarter-rate unit (MUFU, conversions, POPC, FLO); fixed: a
# fixed-latency result outside the ALU pipes (LDC). SHFL and ATOMS are shared-memory work (lds), ATOM
# a global load (ldg), RED a global store (stg).
UNITS = ("alu", "alu_half", "xu", "fp64", "lds", "sts", "tex", "ldg", "stg", "s2r", "fixed", "bar", "branch", "exit",
         "nop")
MEMORY_UNITS = frozenset(("lds", "sts", "tex", "ldg", "stg"))

_ROUND = {"FTZ", "RN", "RM", "RP", "RZ", "SAT"}
_CMP = {"LT", "LE", "GT", "GE", "EQ", "NE"}
_BOOL = {"AND", "OR", "XOR"}
_WIDTH = {"32": 1, "64": 2, "128": 4}
_SUBWORD = {"U8", "S8", "U16", "S16"}  # one register, 1 or 2 bytes of memory
_FCMP = _CMP | {"LTU", "LEU", "GTU", "GEU", "EQU", "NEU", "NUM", "NAN"}
_ATOM_OPS = {"ADD", "MIN", "MAX", "INC", "DEC", "AND", "OR", "XOR", "EXCH", "CAS"}
_F2I_ROUND = {"TRUNC", "FLOOR", "CEIL", "ROUND"}
_MUFU = {"RCP", "RSQ", "SQRT", "EX2", "LG2", "SIN", "COS", "RCP64H", "RSQ64H"}
_TYPES = {"F32", "F16", "F64", "S64", "U64", "S32", "U32", "S16", "U16", "S8", "U8"}
CONVERSIONS = ("I2F", "F2I", "F2F", "I2I")


@attrs.frozen
class OpSpec:
    name: str
    unit: str
    n_dst: int  # leading operands that are destinations
    signature: tuple  # allowed kinds per operand position
    mod_groups: tuple = ()  # each group: a set of accepted modifier words (at most one per group)
    min_operands: int = -1  # fewer operands accepted (optional trailing), -1: exactly len(signature)


def _spec(name, unit, n_dst, sig, *mod_groups, min_operands=-1):
    return OpSpec(name, unit, n_dst, tuple(sig.split()) if sig else (), tuple(frozenset(g) for g in mod_groups), min_operands)


OPCODES = {s.name: s for s in (
    _spec("FFMA", "alu", 1, "R R R|C|I|F R|C", _ROUND, {"FTZ"}, {"RN", "RM", "RP", "RZ"}, {"SAT"}),
    _spec("FMUL", "alu", 1, "R R R|C|I|F", _ROUND, {"FTZ"}, {"RN", "RM", "RP", "RZ"}, {"SAT"}),
    _spec("FADD", "alu", 1, "R R R|C|I|F", _ROUND, {"FTZ"}, {"RN", "RM", "RP", "RZ"}, {"SAT"}),
    _spec("IADD", "alu", 1, "R R R|C|I", {"X"}, {"CC"}),
    # IADD3.RS / .LS: the sum of the first two sources shifted right / left by 16 before the third
    # is added (nvdisasm's reading of ptxas's multiply-high sequences)
    # .CC / .X: the carry of a three-input sum is 0, 1 or 2, and IADD3.X adds all of it (ptxas's
    # 64-bit n - i - 1 is IADD3 lo.CC, -i_lo, n_lo, -1; IADD3.X hi, -i_hi, n_hi, -1)
    _spec("IADD3", "alu", 1, "R R R|C|I R", {"RS", "LS"}, {"X"}, {"CC"}),
    _spec("ISCADD", "alu", 1, "R R R|C|I I", {"CC"}),
    # XMAD[.S16|.U16[.S16|.U16]]: the types of the a and b halves (unsigned by default)
    _spec("XMAD", "alu", 1, "R R R|C|I R|C", {"S16", "U16"}, {"S16", "U16"},
          {"MRG", "PSL", "CHI", "CLO", "CSFU", "CBCC"}, {"PSL", "CBCC"}, {"CBCC"}),
    _spec("LOP", "alu", 1, "R R R|C|I", {"AND", "OR", "XOR", "PASS_B"}, {"Z", "NZ"}),
    # the forms with a 32-bit immediate that ptxas emits (maxas's grammar: IADD32I, LOP32I, FMUL32I,
    # FADD32I, ISCADD32I): the same operations as their register forms
    _spec("IADD32I", "alu", 1, "R R I", {"X"}, {"CC"}),
    _spec("LOP32I", "alu", 1, "R R I", {"AND", "OR", "XOR", "PASS_B"}),
    # LOP3.LUT d, a, b, c, lut: any logic function of three sources, bit by bit; the 8-bit lut is
    # the function's truth table indexed by (a << 2 | b << 1 | c) ([maxas-grammar] LOP3; PTX lop3.b32)
    _spec("LOP3", "alu", 1, "R R R|C|I R I", {"LUT"}),
    _spec("ISCADD32I", "alu", 1, "R R I I"),
    _spec("FMUL32I", "alu", 1, "R R F|I", {"FTZ"}),
    _spec("FADD32I", "alu", 1, "R R F|I", {"FTZ"}),
    # SHF.L / SHF.R: funnel shift of the 64-bit pair (c:a) by b; .W wraps the shift count (mod 32),
    # else it is clamped to 32
    _spec("SHF", "alu_half", 1, "R R R|C|I R", {"L", "R"}, {"W"}, {"U64", "S64", "U32", "S32"}, {"HI"}),
    # MEMBAR: a memory ordering fence; the model keeps memory operations in program order per warp,
    # so it has nothing to wait for and issues as a NOP (a choice: no published cost)
    _spec("MEMBAR", "nop", 0, "", {"CTA", "GL", "SYS"}),
    _spec("MOV", "alu", 1, "R R|C|I"),
    _spec("MOV32I", "alu", 1, "R I|F"),
    _spec("SHL", "alu_half", 1, "R R R|C|I", {"W"}),
    _spec("SHR", "alu_half", 1, "R R R|C|I", {"U32", "S32"}),
    _spec("BFE", "alu_half", 1, "R R R|C|I", {"U32", "S32"}),
    _spec("SEL", "alu_half", 1, "R R R|C|I P"),
    _spec("ISETP", "alu_half", 2, "P P R R|C|I P", _CMP, {"U32", "S32"}, _BOOL, {"X"}),
    # ISET: the comparison (combined with a predicate) as a register: all ones when true, 0 when
    # false; .BF gives 1.0 / 0.0 (nvdisasm's ISET; its values as Ryujinx's Maxwell translator has them)
    # .CC: the zero and sign flags of the register it writes, as FSET.CC (BRA CC.test reads them)
    _spec("ISET", "alu_half", 1, "R R R|C|I P", _CMP, {"U32", "S32"}, _BOOL, {"BF"}, {"X"}, {"CC"}),
    # ICMP d, a, b, c: d = a if (c cmp 0) else b (nvdisasm's ICMP; ptxas selects with it)
    _spec("ICMP", "alu_half", 1, "R R R|C|I R", _CMP, {"U32", "S32"}),
    _spec("S2R", "s2r", 1, "R S"),
    # CS2R d, SR_CLOCKLO: the clock read (clock(), clock64()) of fixed latency: ptxas gives it a
    # stall of 6 and no dependency barrier, the ALU's figure (latency.alu) [cuobjdump of NVRTC 12.9]
    _spec("CS2R", "alu", 1, "R S"),
    _spec("LDS", "lds", 1, "V M", {"U"}, set(_WIDTH)),
    # STS.U: maxas's grammar reads .U on every shared-memory op but encodes it for LDS only (its
    # STS word is STS's; nvdisasm 12.8 prints no modifier for bit 44 of STS): the same store
    _spec("STS", "sts", 0, "M V", {"U"}, set(_WIDTH)),
    _spec("LDG", "ldg", 1, "V M", {"E"}, {"CG", "CI", "CS", "CV"}, set(_WIDTH) | _SUBWORD),
    _spec("STG", "stg", 0, "M V", {"E"}, {"CG", "CS", "WT"}, set(_WIDTH) | _SUBWORD),
    # generic loads / stores: modelled as global (no shared or local window in the generic space)
    _spec("LD", "ldg", 1, "V M", {"E"}, {"CG", "CI", "CS", "CV"}, set(_WIDTH) | _SUBWORD),
    _spec("ST", "stg", 0, "M V", {"E"}, {"CG", "CS", "WT"}, set(_WIDTH) | _SUBWORD),
    # local memory (a thread's stack frame: spills, dynamically indexed arrays): timed as global
    # memory through the L2 (l1tex.caches_local); .LU marks a last use (nvdisasm 12.8 prints LU for
    # bit 44 = 1, CI = 2, CV = 3 of LDL's cache field)
    _spec("LDL", "ldg", 1, "V M", {"LU", "CI", "CV"}, set(_WIDTH) | _SUBWORD),
    _spec("STL", "stg", 0, "M V", set(_WIDTH) | _SUBWORD),
    _spec("ATOM", "ldg", 1, "R M R|I R|I", {"E"}, _ATOM_OPS, {"U32", "S32", "F32"}, {"FTZ"}, {"RN"}, min_operands=3),
    _spec("RED", "stg", 0, "M R|I", {"E"}, _ATOM_OPS - {"CAS", "EXCH"}, {"U32", "S32", "F32"}, {"FTZ"}, {"RN"}),
    _spec("ATOMS", "lds", 1, "R M R|I R|I", _ATOM_OPS, {"U32", "S32"}, min_operands=3),
    # LDC[.U8|.S8|.U16|.S16|.32|.64|.128] d, c[bank][Ra+imm]: a constant load, indexed by a register
    # (the widths of [maxas-grammar]'s memType; .64 and .128 write a vector group)
    _spec("LDC", "fixed", 1, "V C", set(_WIDTH) | _SUBWORD),
    # DEPBAR.LE SBn, k: wait until at most k ops of scoreboard n are out; DEPBAR {n, ...}: until
    # those scoreboards are clear (nvdisasm's scoreboard set)
    _spec("DEPBAR", "nop", 0, "W I", {"LE"}, min_operands=1),
    # integer
    # .XHI[.CC] / .XLO: the high and low halves of a 64-bit min / max (see functional/intops.py)
    _spec("IMNMX", "alu_half", 1, "R R R|C|I P", {"U32", "S32"}, {"XLO", "XHI"}, {"CC"}),
    _spec("POPC", "xu", 1, "R R|C|I"),
    _spec("FLO", "xu", 1, "R R|C|I", {"U32", "S32"}, {"SH"}),
    _spec("BFI", "alu_half", 1, "R R R|C|I R|C"),
    # LEA d, a, b, s / LEA.HI d, a, b, c, s (the high word of a 64-bit scaled index)
    # VMAD.<a type>.<b type>[.SHR_7|.SHR_15][.SAT] d, [-]a[.H1], b[.H1], [-]c: (a * b) + c of a and b's
    # 16-bit halves (or low bytes) ([maxas-grammar] VMAD; PTX vmad). 16-bit forms are maxas's
    # full-rate class, 8-bit ones its half-rate class (VMAD_8BIT_UNIT)
    _spec("VMAD", "alu", 1, "R R R R", {"U16", "S16", "U8", "S8"}, {"U16", "S16", "U8", "S8"},
          {"SHR_7", "SHR_15"}, {"SAT"}),
    # VMNMX[.UD].<a>.<b>[.MX][.SAT][.ACC|.MIN|.MAX] d, a, b, c: min (max with .MX) of a and b,
    # then added to / min / max with c (PTX vmin / vmax, the 32-bit forms); the compare class of
    # IMNMX (a choice: no published figure)
    _spec("VMNMX", "alu_half", 1, "R R R R", {"UD"}, {"U32", "S32"}, {"U32", "S32"}, {"MX"}, {"SAT"},
          {"ACC", "MIN", "MAX"}),
    _spec("LEA", "alu_half", 1, "R R R|C|I R|I I", {"HI"}, {"X"}, {"CC"}, min_operands=4),
    _spec("PSETP", "alu", 2, "P P P P P", _BOOL, _BOOL),
    _spec("P2R", "alu", 1, "R W R I"),
    _spec("R2P", "alu_half", 0, "W R I"),
    _spec("VOTE", "alu", 2, "R P P", {"ALL", "ANY", "EQ"}),
    _spec("SHFL", "lds", 2, "P R R R|I R|I", {"IDX", "UP", "DOWN", "BFLY"}),
    # float
    _spec("FMNMX", "alu_half", 1, "R R R|C|I|F P", {"FTZ"}),
    _spec("FSETP", "alu_half", 2, "P P R R|C|I|F P", _FCMP, _BOOL, {"FTZ"}),
    _spec("MUFU", "xu", 1, "R R", _MUFU, {"SAT"}),
    # double precision on register pairs (V: the even register of a pair): the fp64 unit, 1/32 of
    # the fp32 rate (config pipes.fp64, [cuda-pg])
    _spec("DADD", "fp64", 1, "V V V|C|I|F", {"RN", "RM", "RP", "RZ"}),
    _spec("DMUL", "fp64", 1, "V V V|C|I|F", {"RN", "RM", "RP", "RZ"}),
    _spec("DFMA", "fp64", 1, "V V V|C|I|F V|C", {"RN", "RM", "RP", "RZ"}),
    _spec("DMNMX", "fp64", 1, "V V V|C|I|F P"),
    _spec("DSETP", "fp64", 2, "P P V V|C|I|F P", _FCMP, _BOOL),
    # DSET: DSETP's comparison as one 32-bit register (all ones / 0, .BF 1.0 / 0), as FSET
    _spec("DSET", "fp64", 1, "R V V|C|I|F P", _FCMP, _BOOL, {"BF"}, {"CC"}),
    # FSET: FSETP's comparison as a register (all ones / 0, .BF 1.0 / 0); the compare class, as
    # FSETP [maxas-grammar: FSET with FSETP in the cmp class]
    _spec("FSET", "alu_half", 1, "R R R|C|I|F P", _FCMP, _BOOL, {"FTZ"}, {"BF"}, {"CC"}),
    # FCHK.DIVIDE p, a, b: whether an IEEE division a / b needs ptxas's slow path. choice: the
    # compare class (it reads two floats and writes a predicate, as FSETP); no published figure
    _spec("FCHK", "alu_half", 1, "P R R|C|I|F", {"DIVIDE"}),
    _spec("RRO", "alu_half", 1, "R R|C|I|F", {"SINCOS", "EX2"}),
    # I2F.F64: to a register pair (the destination's width 2: vector_width)
    # (a 64-bit integer source, .S64 / .U64, is a register pair, as is an F64 destination)
    _spec("I2F", "xu", 1, "V V|C|I", {"F32", "F64"}, {"S64", "U64", "S32", "U32", "S16", "U16", "S8", "U8"},
          {"RN", "RM", "RP", "RZ"}),
    # F2I.S64 / .U64: to a register pair (the destination's width 2: operand_widths)
    _spec("F2I", "xu", 1, "V V|C|I|F", {"S32", "U32", "S64", "U64"}, {"F32", "F64"}, _F2I_ROUND, {"FTZ"}),
    # I2I.<dst>.<src>[.SAT] d, [-|]a[|]: integer to integer of 8, 16 or 32 bits (the conversions'
    # quarter-rate class [maxas-grammar])
    _spec("I2I", "xu", 1, "R R|C|I", {"S32", "U32", "S16", "U16", "S8", "U8"}, {"S32", "U32", "S16", "U16", "S8", "U8"},
          {"SAT"}),
    # PRMT[.F4E|.B4E|.RC8|.ECL|.ECR|.RC16] d, a, selector, b: a byte permute of {b, a} (PTX prmt)
    _spec("PRMT", "alu", 1, "R R R|C|I R|C", {"F4E", "B4E", "RC8", "ECL", "ECR", "RC16"}),
    # FCMP[.cmp] d, a, b, c: d = a if (c cmp 0.0) else b (GT when no test is written, as nvdisasm
    # prints it); the compare class, as FSETP
    _spec("FCMP", "alu_half", 1, "R R R|C|I|F R|C", _FCMP | {"F", "T"}, {"FTZ"}),
    # F2F.<dst>.<src>: F32 <-> F16 (the half in the low 16 bits of a register, or the high ones with
    # the source's .H1) and F32 -> F32 / F16 -> F16; rounding to a type (RN RM RP RZ), to an integral
    # value (ROUND FLOOR CEIL TRUNC), or none between equal types (.PASS, as nvdisasm prints it)
    _spec("F2F", "xu", 1, "V V|C|I|F", {"FTZ"}, {"F32", "F16", "F64"}, {"F32", "F16", "F64"},
          _F2I_ROUND | {"RN", "RM", "RP", "RZ", "PASS"}, {"SAT"}),
    # TLD[.B].LZ.{T|P} d, coordinate, handle, slot, 1D, channel mask: with .B the texture is the
    # handle register's; without, the texture slot (the handle register is then RZ, and may be left out)
    _spec("TLD", "tex", 1, "V R R I W I", {"B"}, {"LZ"}, {"NODEP"}, {"P", "T"}),
    # TEX: the same with a float coordinate (a sampled fetch)
    _spec("TEX", "tex", 1, "V R R I W I", {"B"}, {"LZ"}, {"NODEP"}, {"P", "T"}),
    # TLDS / TEXS d1, d0, coordinate, slot, 1D, channels ([maxas-grammar] TLDS: r28, r0, r8, i36w20):
    # the texture by its slot; the first two channels go to d0, d0+1, the others to d1, d1+1
    _spec("TLDS", "tex", 2, "R R R I W W", {"LZ"}, {"NODEP"}, {"P", "T"}),
    _spec("TEXS", "tex", 2, "R R R I W W", {"LZ"}, {"NODEP"}, {"P", "T"}),
    # BAR.SYNC n / BAR.RED.{POPC|AND|OR} n, p (__syncthreads_count / _and / _or): the barrier with a
    # reduction of p over the CTA's threads; B2R.RESULT d, q reads its result. B2R: choice, the
    # class of S2R (a value from outside the register file, waited for on a dependency barrier)
    _spec("BAR", "bar", 0, "I P", {"SYNC", "RED"}, {"POPC", "AND", "OR"}, min_operands=1),
    _spec("B2R", "s2r", 2, "R P", {"RESULT"}, min_operands=1),
    # BRA [CC.test,] L: a branch, on the condition code when a test is given (FSET.CC sets it)
    _spec("BRA", "branch", 0, "W|L L", {"U"}, min_operands=1),
    _spec("CAL", "branch", 0, "L"),
    _spec("RET", "branch", 0, ""),
    # the reconvergence stack (maxsim.functional.simt): push a token / wait at the nearest one
    _spec("SSY", "branch", 0, "L"),
    _spec("PBK", "branch", 0, "L"),
    _spec("PCNT", "branch", 0, "L"),
    _spec("SYNC", "branch", 0, ""),
    _spec("BRK", "branch", 0, ""),
    _spec("CONT", "branch", 0, ""),
    _spec("EXIT", "exit", 0, ""),
    _spec("NOP", "nop", 0, ""),
)}

KIND_LETTER = {ins.REG: "R", ins.PRED: "P", ins.IMM: "I", ins.FIMM: "F", ins.CONST: "C",
               ins.SREG: "S", ins.LABEL: "L", ins.MEM: "M", ins.WORD: "W"}

SPECIAL_REGISTERS = ("SR_TID.X", "SR_TID.Y", "SR_TID.Z", "SR_CTAID.X", "SR_CTAID.Y", "SR_CTAID.Z",
                     "SR_LANEID", "SR_CLOCKLO", "SR_CLOCKHI", "SR_NTID.X")


# An opcode's alternative form whose first operand is a predicate (LOP.AND.NZ P0, RZ, R9, 0x1f:
# the result also sets P0 when it is non-zero / zero)
PREDICATE_FORMS = {"LOP": _spec("LOP", "alu", 2, "P R R R|C|I", {"AND", "OR", "XOR", "PASS_B"}, {"Z", "NZ"}),
                   "LOP3": _spec("LOP3", "alu", 2, "P R R R|C|I R I", {"LUT"}, {"T", "Z", "NZ"})}
# the immediate forms, by the register form whose operation they perform
IMMEDIATE_FORMS = {"IADD32I": "IADD", "LOP32I": "LOP", "ISCADD32I": "ISCADD", "FMUL32I": "FMUL",
                   "FADD32I": "FADD"}

# Modifiers an opcode cannot do without (one of the set must be present)
REQUIRED_MODIFIERS = {"SHF": {"L", "R"}, "LOP3": {"LUT"}, "VMAD": {"U16", "S16", "U8", "S8"}, "ISET": _CMP, "ICMP": _CMP, "ISETP": _CMP, "FSETP": _FCMP, "ATOM": _ATOM_OPS, "RED": _ATOM_OPS, "ATOMS": _ATOM_OPS,
                      "MUFU": _MUFU, "FSET": _FCMP, "FCHK": {"DIVIDE"}, "DSETP": _FCMP, "DSET": _FCMP,
                      "SHFL": {"IDX", "UP", "DOWN", "BFLY"}, "VOTE": {"ALL", "ANY", "EQ"}, "RRO": {"SINCOS", "EX2"}}
# keyword operands (W) each opcode accepts
# the channel sets of TLDS / TEXS (envytools' GM107 table: the sets with and without a second
# destination; [maxas-grammar] writes R and RGBA)
CHANNEL_SETS = {"R": (0,), "G": (1,), "B": (2,), "A": (3,), "RG": (0, 1), "RA": (0, 3), "GA": (1, 3), "BA": (2, 3),
                "RGB": (0, 1, 2), "RGA": (0, 1, 3), "RBA": (0, 2, 3), "GBA": (1, 2, 3), "RGBA": (0, 1, 2, 3)}
TEXTURE_DIMS = ("1D", "2D", "3D", "ARRAY_1D", "ARRAY_2D", "CUBE", "ARRAY_CUBE")
TEXTURE_OPS = ("TLD", "TEX", "TLDS", "TEXS")
WORDS = {"TLD": TEXTURE_DIMS, "TEX": TEXTURE_DIMS, "TLDS": TEXTURE_DIMS + tuple(CHANNEL_SETS),
         "TEXS": TEXTURE_DIMS + tuple(CHANNEL_SETS), "P2R": ("PR",),
         "BRA": tuple("CC." + t for t in ("F", "LT", "EQ", "LE", "GT", "NE", "GE", "NUM", "NAN", "LTU", "EQU", "LEU",
                                           "GTU", "NEU", "GEU", "OFF", "LO", "SFF", "LS", "HI", "SFT", "HS", "OFT",
                                           "CSM_TA", "CSM_TR", "CSM_MX", "FCSM_TA", "FCSM_TR", "FCSM_MX", "RLE",
                                           "RGT")), "R2P": ("PR",), "DEPBAR": tuple(f"SB{n}" for n in range(6))}


def spec_of(instr) -> OpSpec:
    """The spec of a decoded instruction (the predicate form of LOP when its first operand is a
    predicate)."""
    if instr.opcode in PREDICATE_FORMS and instr.operands and instr.operands[0].kind == ins.PRED:
        return PREDICATE_FORMS[instr.opcode]
    return OPCODES[instr.opcode]


def match_modifiers(spec: OpSpec, mods: tuple):
    """Return None if ``mods`` is acceptable for ``spec``, else the first offending modifier."""
    groups = tuple(spec.mod_groups)
    for n, m in enumerate(mods):
        if m in mods[:n] and not ((spec.name in CONVERSIONS or spec.name in ("XMAD", "VMAD", "VMNMX")) and m in _TYPES) \
                and not (spec.name == "PSETP" and m in _BOOL):
            # a repeated modifier (XMAD.PSL.PSL) is never meaningful, but a conversion names its
            # destination and source types (F2F.F32.F32) and PSETP its two operations
            # (PSETP.AND.AND, as nvdisasm and maxas write it)
            return m
        if not _assignable(mods[:n + 1], groups, frozenset()):
            return m
    return None


def _assignable(mods, groups, used) -> bool:
    """Whether each modifier can take a group of its own (in any order of the groups: nvdisasm
    writes XMAD.PSL.CHI, maxas XMAD.CHI.PSL; the earlier groups are tried first)."""
    if not mods:
        return True
    return any(i not in used and mods[0] in g and _assignable(mods[1:], groups, used | {i})
               for i, g in enumerate(groups))


def conversion_types(opcode: str, mods: tuple) -> tuple:
    """(destination, source) types of an F2F: the first and second type modifier written (F32 for
    one not written)."""
    types = [m for m in mods if m in ("F16", "F32", "F64")] + ["F32", "F32"]
    return types[0], types[1]


VMAD_8BIT_UNIT = "alu_half"  # [maxas-grammar]: VMAD with 8-bit types is in the shift class


def unit_of(spec: OpSpec, mods: tuple) -> str:
    """The timing class of an instruction: its opcode's, except VMAD with an 8-bit type."""
    if spec.name == "VMAD" and any(m in ("U8", "S8") for m in mods):
        return VMAD_8BIT_UNIT
    return spec.unit


def vmad_types(mods: tuple) -> tuple:
    """(a type, b type) of a VMAD: the first and second type modifier written."""
    types = [m for m in mods if m in ("U16", "S16", "U8", "S8")] + ["U16", "U16"]
    return types[0], types[1]


def mask_predicates(instr) -> tuple:
    """The predicates P2R reads / R2P writes: P0-P6 where its mask (the last operand) has the bit."""
    if instr.opcode not in ("P2R", "R2P") or not instr.operands or instr.operands[-1].kind != ins.IMM:
        return ()
    mask = instr.operands[-1].value
    return tuple(n for n in range(7) if mask >> n & 1)


def vector_alignment(width: int) -> int:
    """Register alignment of a vector group of ``width`` registers (a 3-channel fetch takes 4)."""
    return 4 if width > 2 else width


# opcodes of [maxas-grammar] that maxsim does not model: refused by name, with what they are
NOT_MODELLED = {
    "TLD4S": "a four-texel gather from a 2D texture (2D textures are not modelled)",
    "TLD4": "a four-texel gather from a 2D texture (2D textures are not modelled)",
    "TXQ": "a texture query", "SHF": "a funnel shift", "LOP3": "a three-input logic operation",
    "PRMT": "a byte permute", "I2I": "an integer conversion",
    "ICMP": "an integer compare-and-select", "ISET": "an integer compare to a register",
    "FSET": "an fp32 compare to a register", "FCMP": "an fp32 compare-and-select", "PSET": "a predicate set",
    "CS2R": "a special register read to a register pair", "B2R": "a barrier result read",
    "MEMBAR": "a memory barrier", "LDL": "a local-memory load", "STL": "a local-memory store",
    "DADD": "fp64 arithmetic", "DFMA": "fp64 arithmetic", "DMUL": "fp64 arithmetic", "DMNMX": "fp64 arithmetic",
    "DSET": "fp64 arithmetic", "DSETP": "fp64 arithmetic", "HADD2": "fp16 arithmetic", "HMUL2": "fp16 arithmetic",
    "HFMA2": "fp16 arithmetic", "HSETP2": "fp16 arithmetic", "VADD": "a video instruction",
    "VMAD": "a video instruction", "VABSDIFF": "a video instruction", "VMNMX": "a video instruction",
    "VSET": "a video instruction", "DP4A": "a dot product of bytes", "DP2A": "a dot product of halves",
    "JCAL": "an absolute call", "BPT": "a breakpoint", "FCHK": "a division range check", "CCTL": "a cache control",
    "SULD": "a surface load", "SUST": "a surface store", "SURED": "a surface reduction", "SUATOM": "a surface atomic",
}
NOT_MODELLED = {k: v for k, v in NOT_MODELLED.items() if k not in OPCODES}  # (SHF, ISET, ICMP, MEMBAR run)


def texture_channels(instr_ops) -> tuple:
    """The (register, channel) pairs a TLDS / TEXS writes: the first two channels of its set to d0
    and d0+1, the others to d1 and d1+1 (RZ: discarded)."""
    d1, d0 = instr_ops[0].reg, instr_ops[1].reg
    chans = CHANNEL_SETS[instr_ops[5].name]
    out = []
    for n, ch in enumerate(chans):
        base, k = (d0, n) if n < 2 else (d1, n - 2)
        out.append((ins.RZ if base == ins.RZ else base + k, ch))
    return tuple(out)


FP64 = frozenset(("DADD", "DMUL", "DFMA", "DMNMX", "DSETP", "DSET"))


def operand_widths(opcode: str, mods: tuple, n: int, width: int) -> tuple:
    """The registers each of ``n`` operands names: ``width`` (:func:`vector_width`) for every vector
    operand, except a conversion with an F64 side, whose destination and source each take the
    width of their own type (F2F.F64.F32: a pair and one register)."""
    if opcode in ("F2F", "F2I", "I2F") and any(m in ("F64", "S64", "U64") for m in mods):
        floats = [m for m in mods if m in ("F16", "F32", "F64")] + ["F32", "F32"]
        ints = [m for m in mods if m in _TYPES and m[0] in "SU"] + ["S32"]
        dst, src = {"I2F": (floats[0], ints[0]), "F2I": (ints[0], floats[0])}.get(opcode, floats[:2])
        wide = ("F64", "S64", "U64")
        return tuple([2 if dst in wide else 1, 2 if src in wide else 1] + [1] * max(0, n - 2))[:n]
    return (width,) * n


def vector_width(opcode: str, mods: tuple, operands: tuple) -> int:
    """Number of consecutive registers named by the vector operand of a memory instruction (or
    the register pairs of an fp64 instruction)."""
    if opcode in FP64:
        return 2
    if opcode in ("TLD", "TEX"):
        mask = operands[5].value if len(operands) > 5 else 0xF
        return max(1, bin(mask & 0xF).count("1"))
    for m in mods:
        if m in _WIDTH:
            return _WIDTH[m]
    return 1


def memory_bytes(mods: tuple) -> int:
    """Bytes one lane moves in a global / generic load or store with modifiers ``mods``."""
    for m in mods:
        if m in _WIDTH:
            return 4 * _WIDTH[m]
        if m in _SUBWORD:
            return int(m[1:]) // 8
    return 4
