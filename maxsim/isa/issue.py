"""Issue rules of Maxwell instructions: which two may dual-issue, and when one reads its sources.

The static control-code check (:mod:`maxsim.analysis.controls`), the assembler's control-code
scheduler (:mod:`maxsim.asm.controls`) and both SM timing cores (through
:class:`maxsim.timing.static.StaticInfo`) take these rules from here, so they cannot disagree.
docs/hazard-rules.md lists every hazard rule with its source; the latencies these rules use live
in the architecture config (``[latency]``).

Sources (short names of docs/maxwell-facts.md):

- [maxas-cc] maxas wiki "Control-Codes": a stall count of 0 dual-issues an instruction with the
  next one, "only legal for instructions using two different chip resources (like a cuda core and
  a memory unit)"; IADDs dual-issue with STS and with BAR.SYNC.
- [maxas-sched] maxas's scheduler (``MaxAs.pm``, ``Scheduler``) with its per-opcode classes
  (``MaxAsGrammar.pm``): it dual-issues a ready instruction with the one just scheduled when the
  ready one's class is marked ``dual`` (the shared-memory class: LDS, STS, SHFL, ATOMS; the
  global-memory class: LDG, STG, LD, ST, LDL, STL, LDC, ATOM, RED, the texture fetches, BAR,
  DEPBAR; the quarter-rate class: MUFU and the conversions F2F, F2I, I2F, I2I), the one just
  scheduled is of a class not marked ``dual`` whose throughput interval is at most 2 (the full-rate
  x32 class, the shift and compare classes, and the s2r class: S2R, POPC, FLO), and "can't dual
  issue two instructions that both load a constant" (both have a ``c[bank][offset]`` operand;
  LDC's ``c[bank][Ra+imm]`` is its address, not such an operand). The pair issues in one cycle
  (the scheduler's clock advances by the second's stall only).
- [maxas-sgemm64] maxas's hand-scheduled ``sgemm64.sass``: its main loop ends with
  ``IADD track6`` (stall 0) dual-issued with ``@P0 BRA LOOP`` (its efficiency count lists "bra: 1
  dual issued"), and its epilogue dual-issues an FMUL (stall 0, "// Dual Issue") with
  ``CAL STORE_C``: a full-rate instruction pairs with a branch or call, which maxas's scheduler
  never places (branches stay outside its scheduled blocks).
- [maxas-grammar] the same grammar gives each class an operand read latency (``rlat``): 2 for
  shared memory, 4 for the global-memory class, which holds LDC.
"""

from __future__ import annotations

from . import instruction as ins

# ---- dual issue ------------------------------------------------------------------------------
# [maxas-sched]: classes not marked dual with a throughput interval of at most 2 may be the first of
# a pair: full rate (alu; nop: NOP is in maxas's x32 class), shift and compare (alu_half), s2r
# (S2R here; POPC and FLO are in maxas's s2r class, in the model's quarter-rate unit xu). BAR,
# branches and EXIT need their own stall count [maxas-cc], so they never start a pair.
_FIRST_UNITS = frozenset(("alu", "alu_half", "s2r", "nop", "fp64"))
# fp64: ptxas gives DADD a stall of 0 before a MUFU.RSQ64H [cuobjdump of NVRTC 12.9's sqrt(double)]
# POPC and FLO: in the quarter-rate unit (xu) but in maxas's s2r class; their results take
# latency.bitcount (the others of xu latency.xu) and they read their operands at issue
BITCOUNT_OPCODES = frozenset(("POPC", "FLO"))
_FIRST_OPCODES = BITCOUNT_OPCODES
# [maxas-sched]: the dual-marked classes may be the second: shared and global memory, texture, BAR,
# LDC (unit "fixed"), MUFU and conversions (unit xu, less POPC and FLO); [maxas-sgemm64]: a branch.
_SECOND_UNITS = frozenset(("lds", "sts", "tex", "ldg", "stg", "bar", "fixed", "branch", "xu"))
_NOT_SECOND_OPCODES = BITCOUNT_OPCODES
_SECOND_OPCODES = frozenset(("DEPBAR",))  # in maxas's global-memory class


def dual_first(instr) -> bool:
    """Whether ``instr`` may be the first of a dual-issued pair (it carries the stall 0)."""
    if instr.opcode in _SECOND_OPCODES:
        return False
    return instr.unit in _FIRST_UNITS or instr.opcode in _FIRST_OPCODES


def dual_second(instr) -> bool:
    """Whether ``instr`` may be the second of a dual-issued pair."""
    if instr.opcode in _NOT_SECOND_OPCODES:
        return False
    return instr.unit in _SECOND_UNITS or instr.opcode in _SECOND_OPCODES


def reads_constant_operand(instr) -> bool:
    """Whether ``instr`` has a ``c[bank][offset]`` source operand (LDC's address does not count)."""
    return instr.opcode != "LDC" and any(op.kind == ins.CONST for op in instr.operands)


def can_dual_issue(first, second) -> bool:
    """Whether ``first`` (with stall 0) and ``second``, the next instruction, issue in one cycle."""
    return dual_first(first) and dual_second(second) and not (
        reads_constant_operand(first) and reads_constant_operand(second))


def why_not_dual(first, second) -> str:
    """The reason :func:`can_dual_issue` refuses the pair (for messages)."""
    if not dual_first(first):
        return f"{first.opcode} cannot start a dual issue (only ALU-type instructions and S2R/POPC/FLO can)"
    if not dual_second(second):
        return (f"{second.opcode} cannot be the second of a dual issue (only memory ops, LDC, BAR, "
                f"branches and the quarter-rate unit can)")
    return "both read a constant-bank operand"


# ---- branches --------------------------------------------------------------------------------

def taken_branch_stall(stall: int, lat) -> int:
    """Cycles from a taken branch (one whose next instruction is not the one after it) with stall
    count ``stall`` to the issue of its target: at least ``latency.branch_taken`` (see the config
    for the evidence). A branch not taken costs its stall count."""
    return stall if stall > lat.branch_taken else lat.branch_taken


# ---- operand reads ---------------------------------------------------------------------------

def operand_read_delay(instr_unit: str, opcode: str, lat) -> int:
    """Cycles after issue at which an instruction reads its source registers (``lat``: the config's
    latency section). Memory instructions read late [maxas-cc]: shared 2, global 4, texture
    ``mem_operand_read_tex``; LDC like its maxas class, global memory [maxas-grammar]
    (``mem_operand_read_constant``); MUFU and the conversions ``xu_operand_read`` (maxas's qtr class,
    rlat 4 [maxas-grammar]); everything else, POPC and FLO too, at issue."""
    if opcode == "LDC":
        return lat.mem_operand_read_constant
    if (instr_unit == "xu" and opcode not in BITCOUNT_OPCODES) or instr_unit == "fp64":
        return lat.xu_operand_read  # fp64: choice, as the quarter-rate unit (ptxas sets read barriers on DFMA)
    return {"lds": lat.mem_operand_read_shared, "sts": lat.mem_operand_read_shared,
            "ldg": lat.mem_operand_read_global, "stg": lat.mem_operand_read_global,
            "tex": lat.mem_operand_read_tex}.get(instr_unit, 0)


def late_address_word(instr, lat) -> tuple:
    """``(register, extra cycles)`` of a global memory instruction with a 64-bit (.E) address
    ``[Rn+imm]``: its high word R(n+1) is read ``mem_operand_read_address_high`` cycles after the
    other sources (docs/hazard-rules.md); ``(-1, 0)`` for any other instruction, or when R(n+1) is
    also one of its other sources (read at the usual time)."""
    if instr.unit not in ("ldg", "stg") or "E" not in instr.mods or not lat.mem_operand_read_address_high:
        return -1, 0
    from .opcodes import spec_of, vector_width
    mems = [op for op in instr.operands if op.kind == ins.MEM and op.reg != ins.RZ]
    if not mems:
        return -1, 0
    high = mems[0].reg + 1
    width = vector_width(instr.opcode, instr.mods, instr.operands)
    sig = spec_of(instr).signature
    others = {r for n, op in enumerate(instr.operands) if n >= spec_of(instr).n_dst and op.kind == ins.REG
              and op.reg != ins.RZ for r in range(op.reg, op.reg + (width if "V" in sig[n] else 1))}
    if high in others:
        return -1, 0
    return high, lat.mem_operand_read_address_high


# ---- minimum stall counts --------------------------------------------------------------------

# branch-class opcodes that never branch: they only push a token on the reconvergence stack
TOKEN_PUSHES = frozenset(("SSY", "PBK", "PCNT"))


def min_stall(instr, lat) -> int:
    """Least stall count of ``instr`` when another instruction follows it: ``latency.branch``,
    ``barrier_sync``, ``exit`` for branches, BAR and EXIT [maxas-cc]; 1 for the others, SSY, PBK
    and PCNT included (they never branch; ptxas gives SSY a stall of 1 for sm_52)."""
    if instr.opcode in TOKEN_PUSHES:
        return 1
    return {"bar": lat.barrier_sync, "branch": lat.branch, "exit": lat.exit}.get(instr.unit, 1)


def depbar_set(instr) -> int:
    """The scoreboards ``DEPBAR {n, ...}`` waits for, as a control code's wait mask (bit n:
    scoreboard SBn, barrier n + 1); 0 for any other instruction."""
    if instr.opcode != "DEPBAR" or len(instr.operands) != 1 or not instr.operands[0].name.startswith("{"):
        return 0
    return sum(1 << int(x) for x in instr.operands[0].name.strip("{}").split(",") if x.strip())


def depbar_of(instr) -> tuple:
    """(barrier, count) of ``DEPBAR.LE SBn, count`` (barrier n + 1: the numbering of the control
    codes' barriers), or (0, 0) for any other instruction."""
    if instr.opcode != "DEPBAR" or "LE" not in instr.mods or len(instr.operands) < 2:
        return (0, 0)
    sb, count = instr.operands[0], instr.operands[1]
    if not sb.name.startswith("SB"):
        return (0, 0)
    return (int(sb.name[2:]) + 1, int(count.value))
