"""Which instructions a timing-only run must compute: a static backward slice of the kernel.

The timing model reads, per warp, the pcs executed, the memory summaries (shared-memory
addresses, texture and global sectors) and which warps arrive at a guarded barrier. So a launch
whose results are not wanted needs to compute only what those depend on:

* every guard predicate (it selects the lanes of memory accesses, decides branches, EXIT and
  barrier arrival, and the thread-instruction counts),
* the address registers of every memory instruction (texture coordinate and handle included),

and, backwards from those, every instruction whose result may reach them. A load's data is
needed only when its destination reaches a needed use; the stores to that memory space (shared
or global) then have to write their data too, since any of them may be what the load reads
(memory is treated as one location per space: conservative). Textures are read-only.

Register flow is *flow-sensitive*: the reaching definitions of every use are computed over the
control-flow graph, so a register reused for something else (the SGEMM epilogue computes
addresses in registers that held A and B fragments in the main loop) does not drag the earlier
use into the slice. A guarded write does not kill the definitions before it (its lanes may keep
the old value). Calls are context-insensitive (a RET may return to every call site).
Instructions outside the slice still run in the trace, with the same pcs; they only skip their
arithmetic and register writes, so registers no needed instruction reads hold stale values.
"""

from __future__ import annotations

import attrs

from ..isa import instruction as ins
from ..isa.opcodes import mask_predicates

PRED_BASE = 256  # location of predicate p: PRED_BASE + p; registers are their own number
CC = PRED_BASE + 8  # the condition code: .CC writes it, .X (IADD.X, ISETP.X, LEA.HI.X ...) reads it

LOADS = ("LDS", "LDG", "LD", "LDL", "ATOM", "ATOMS")  # (an atomic's value operands are store data)
STORES = ("STS", "STG", "ST", "STL", "RED")
_SPACE = {"LDS": "shared", "STS": "shared", "LDG": "global", "STG": "global", "LD": "global", "ST": "global",
          "ATOM": "global", "RED": "global", "ATOMS": "shared",
          "LDL": "local", "STL": "local"}
CONTROL = ("BRA", "CAL", "RET", "EXIT", "BAR", "SSY", "PBK", "PCNT", "SYNC", "BRK", "CONT")
_WAITS_AT = {"SYNC": "SSY", "BRK": "PBK", "CONT": "PCNT"}


@attrs.frozen
class TimingSlice:
    """``computed[i]``: instruction i computes its values (an ALU result, a load's data, a store's
    data) in a timing-only run; memory addresses, guards and control flow are always evaluated.
    ``global_stores_skipped``: some STG does not write its data (global memory then holds no
    valid results). ``global_loads_needed``: some LDG's data is needed (the run then depends on
    global memory contents)."""

    computed: tuple
    global_stores_skipped: bool
    global_loads_needed: bool

    @property
    def skipped(self) -> int:
        return sum(1 for c in self.computed if not c)


def _reg(op):
    return [] if op.kind not in (ins.REG, ins.MEM) or op.reg == ins.RZ else [op.reg]


def _width(instr):
    for m in instr.mods:
        if m in ("32", "64", "128"):
            return int(m) // 32
    return 1


def accesses(instr):
    """(defs, value uses, address uses, store-data uses) of one instruction, as locations.

    value uses: read to compute the defs; address uses: read by the part the trace always needs
    (memory addresses, texture coordinates and handles); store-data uses: the data a store writes.
    """
    op = instr.opcode
    ops = instr.operands
    defs = list(instr.dst_regs) + [PRED_BASE + p for p in instr.dst_preds]
    uses, addr, data = [], [], []
    if op in ("ATOM", "ATOMS", "RED"):
        k = 1 if op != "RED" else 0
        addr = _reg(ops[k]) + ([ops[k].reg + 1] if "E" in instr.mods and ops[k].reg != ins.RZ else [])
        # the value operands: what a returned value depends on, and the data the memory gets
        uses = data = [r for o in ops[k + 1:] for r in _reg(o)]
    elif op in LOADS:
        addr = _reg(ops[1]) + ([ops[1].reg + 1] if "E" in instr.mods and ops[1].reg != ins.RZ else [])
    elif op in STORES:
        addr = _reg(ops[0]) + ([ops[0].reg + 1] if "E" in instr.mods and ops[0].reg != ins.RZ else [])
        if ops[1].reg != ins.RZ:
            data = list(range(ops[1].reg, ops[1].reg + _width(instr)))
    elif op in ("TLD", "TEX"):
        addr = _reg(ops[1]) + (_reg(ops[2]) if "B" in instr.mods else [])
    elif op in ("TLDS", "TEXS"):
        addr = _reg(ops[2])
    elif op == "LDC" and ops[1].reg >= 0:  # a register-indexed constant load: its addresses are traced
        addr = [] if ops[1].reg == ins.RZ else [ops[1].reg]
    elif op not in CONTROL and op != "NOP":
        for o in ops[_n_dst(instr):]:
            if o.kind == ins.REG and o.reg != ins.RZ:
                uses.append(o.reg)
            elif o.kind == ins.PRED and o.reg != ins.PT:
                uses.append(PRED_BASE + o.reg)
        if op == "P2R":  # the predicates of its mask
            uses += [PRED_BASE + p for p in mask_predicates(instr)]
        if "X" in instr.mods or "XLO" in instr.mods:  # an add or compare with the carry (and zero) flags in,
            # or the low half of a 64-bit min / max (the flags of its high half)
            uses.append(CC)
        if "CC" in instr.mods:
            defs.append(CC)
    if op == "BRA" and len(ops) == 2:  # BRA CC.test: control flow reads the condition code
        addr = [CC]
    return defs, uses, addr, data


def _n_dst(instr):
    from ..isa.opcodes import OPCODES, spec_of
    return spec_of(instr).n_dst


def _guarded(instr):
    return not (instr.pred == ins.PT and not instr.pred_neg)


def successors(kernel):
    """Control-flow successors of every instruction (a RET goes back to every call site)."""
    instrs = kernel.instructions
    n = len(instrs)
    returns = [i.index + 1 for i in instrs if i.opcode == "CAL" and i.index + 1 < n]
    # SYNC / BRK / CONT continue at the target of some SSY / PBK / PCNT, or (the path of a
    # divergent branch ends there) at the target of any BRA
    tokens = {k: [i.target for i in instrs if i.opcode == k] for k in _WAITS_AT.values()}
    bra_targets = [i.target for i in instrs if i.opcode == "BRA"]
    out = []
    for i in instrs:
        nxt = [i.index + 1] if i.index + 1 < n else []
        never = i.pred == ins.PT and i.pred_neg  # @!PT: the instruction never runs
        op = i.opcode
        if never or op not in ("BRA", "CAL", "RET", "EXIT") + tuple(_WAITS_AT):
            s = nxt
        elif op in ("BRA", "CAL"):
            s = [i.target] + (nxt if _guarded(i) else [])
        elif op == "RET":
            # the lanes of a RET wait at their call's token: another path (a divergent branch's
            # target) may run next, as after a SYNC (maxsim.functional.simt)
            s = returns + bra_targets + (nxt if _guarded(i) else [])
        elif op in _WAITS_AT:
            s = tokens[_WAITS_AT[op]] + bra_targets + nxt
        else:  # EXIT
            s = nxt if _guarded(i) else []
        out.append(sorted(set(s)))
    return out


def reaching_definitions(kernel, table=None):
    """For every instruction, the definitions reaching it, as a bit set over definition ids, and
    the list of definitions (instruction, location) the ids stand for."""
    instrs = kernel.instructions
    n = len(instrs)
    table = table if table is not None else [accesses(i) for i in instrs]
    defs = []
    gen = [0] * n
    by_loc = {}
    for i, (d, _, _, _) in enumerate(table):
        if instrs[i].pred == ins.PT and instrs[i].pred_neg:
            continue  # never runs, defines nothing
        for loc in d:
            bit = 1 << len(defs)
            defs.append((i, loc))
            gen[i] |= bit
            by_loc[loc] = by_loc.get(loc, 0) | bit
    kill = [0] * n
    for i, (d, _, _, _) in enumerate(table):
        if not _guarded(instrs[i]):
            for loc in d:
                kill[i] |= by_loc[loc]
    succ = successors(kernel)
    preds = [[] for _ in range(n)]
    for i, s in enumerate(succ):
        for j in s:
            preds[j].append(i)
    live_in = [0] * n
    out = [0] * n
    changed = True
    while changed:
        changed = False
        for i in range(n):
            x = 0
            for p in preds[i]:
                x |= out[p]
            live_in[i] = x
            o = gen[i] | (x & ~kill[i])
            if o != out[i]:
                out[i] = o
                changed = True
    return live_in, defs, by_loc


_SLICES = {}  # id(instructions) -> (instructions, TimingSlice): the slice depends on the code only
SLICE_CACHE = 16  # kernels whose slices are kept (a simulator setting: bounds memory)


def timing_slice(kernel) -> TimingSlice:
    """The instructions a timing-only launch of ``kernel`` must compute (see the module doc).

    Computed once per instruction sequence: a sampled prediction launches the same code dozens of
    times (and kernels that differ only in their declared registers share the instructions)."""
    instrs = kernel.instructions
    hit = _SLICES.get(id(instrs))
    if hit is not None and hit[0] is instrs:
        return hit[1]
    if len(_SLICES) >= SLICE_CACHE:
        del _SLICES[next(iter(_SLICES))]
    out = _timing_slice(kernel)
    _SLICES[id(instrs)] = (instrs, out)
    return out


def _timing_slice(kernel) -> TimingSlice:
    instrs = kernel.instructions
    table = [accesses(i) for i in instrs]
    reach, defs, by_loc = reaching_definitions(kernel, table)
    computed = [False] * len(instrs)
    spaces = set()
    work = []
    for i, instr in enumerate(instrs):
        if _guarded(instr) and instr.pred != ins.PT:
            work.append((i, PRED_BASE + instr.pred))
        work.extend((i, loc) for loc in table[i][2])
    seen = set()
    while work:
        i, loc = work.pop()
        if (i, loc) in seen:
            continue
        seen.add((i, loc))
        bits = reach[i] & by_loc.get(loc, 0)
        while bits:
            low = bits & -bits
            j, _ = defs[low.bit_length() - 1]
            bits ^= low
            if computed[j]:
                continue
            computed[j] = True
            work.extend((j, u) for u in table[j][1])
            space = _SPACE.get(instrs[j].opcode)
            if space is not None and space not in spaces:
                spaces.add(space)
                for s, other in enumerate(instrs):
                    if other.opcode in STORES and _SPACE[other.opcode] == space:
                        computed[s] = True
                        work.extend((s, u) for u in table[s][3])
    # instructions with nothing to compute count as computed (they are never skipped)
    for i, instr in enumerate(instrs):
        if not table[i][0] and instr.opcode not in STORES:
            computed[i] = True
    stg = [i for i, x in enumerate(instrs) if x.opcode == "STG" and not (x.pred == ins.PT and x.pred_neg)]
    return TimingSlice(tuple(computed), any(not computed[i] for i in stg), "global" in spaces)


# ---- where the value of clock() goes -------------------------------------------------------------

CLOCK_REGISTERS = frozenset(("SR_CLOCKLO", "SR_CLOCKHI"))


@attrs.frozen
class ClockUse:
    """A place a value derived from the clock reaches: ``instr`` (an instruction index), ``clock``
    (the index of the clock read it comes from) and ``what``: "guard" (it decides whether the
    instruction runs or, for a branch, where it goes), "address" (a memory address, texture
    coordinate or branch condition) or "store" (the data a store writes)."""

    instr: int
    clock: int
    what: str


def clock_uses(kernel) -> tuple:
    """Where values computed from ``S2R`` / ``CS2R`` of SR_CLOCKLO / SR_CLOCKHI (``clock()``,
    ``clock64()``) reach, by reaching definitions through registers, predicates and the carry
    (not through memory): the guards, addresses and stored data they flow into (ClockUse records,
    in instruction order). The functional model reads the clock as 0 (time is the timing model's),
    so a kernel whose control flow or addresses depend on it would not run as on hardware."""
    instrs = kernel.instructions
    sources = [i.index for i in instrs if i.opcode in ("S2R", "CS2R") and len(i.operands) > 1
               and i.operands[1].name in CLOCK_REGISTERS]
    if not sources:
        return ()
    table = [accesses(i) for i in instrs]
    reach, defs, by_loc = reaching_definitions(kernel, table)
    origin = {}  # definition id -> the clock read its value comes from
    for d, (i, _) in enumerate(defs):
        if i in sources:
            origin[d] = i

    def tainted(j, loc):
        bits = reach[j] & by_loc.get(loc, 0)
        while bits:
            low = bits & -bits
            d = low.bit_length() - 1
            if d in origin:
                return origin[d]
            bits ^= low
        return None

    defs_of = [[] for _ in instrs]
    for d, (i, _) in enumerate(defs):
        defs_of[i].append(d)
    changed = True
    while changed:
        changed = False
        for j, (_, uses, _, data) in enumerate(table):
            if all(d in origin for d in defs_of[j]):
                continue
            src = next((s for s in (tainted(j, u) for u in uses + data) if s is not None), None)
            if src is None:
                continue
            for d in defs_of[j]:
                if d not in origin:
                    origin[d] = src
                    changed = True
    out = []
    for j, instr in enumerate(instrs):
        _, _, addr, data = table[j]
        if _guarded(instr) and instr.pred != ins.PT:
            s = tainted(j, PRED_BASE + instr.pred)
            if s is not None:
                out.append(ClockUse(j, s, "guard"))
                continue
        s = next((s for s in (tainted(j, a) for a in addr) if s is not None), None)
        if s is not None:
            out.append(ClockUse(j, s, "address"))
            continue
        if instr.opcode in STORES:
            s = next((s for s in (tainted(j, a) for a in data) if s is not None), None)
            if s is not None:
                out.append(ClockUse(j, s, "store"))
    return tuple(out)
