"""The list scheduler of ``<SCHEDULE_BLOCK>`` sections: the order in which a block's instructions issue.

maxas reorders the instructions of a block to hide latencies (``MaxAs.pm``, ``Scheduler``); this is
the same kind of scheduler, written for maxsim's decoded instructions. It decides the order only;
the control codes of the ordered code (stalls, barriers, wait masks, yield) then come from
:func:`maxsim.asm.controls.assign_controls`, the rules every kernel is checked with.

Dependencies (edges of the block's graph, each with a latency in cycles):

- read after write, for registers and predicates: from the last writer of the value, and on
  past it while that writer is guarded by a predicate (it may not have written); latency: the
  producer's result latency from the config (``latency.alu`` / ``alu_half``; a predicate
  ``latency.predicate``; the variable-latency producers S2R ``latency.s2r``, LDS ``latency.lds``,
  TLD ``latency.tex_l1_hit``, LDG ``latency.l2_hit``, their usual times), less the cycles after
  issue at which a memory instruction reads its registers (``mem_operand_read_*``); a guard
  predicate is read at issue;
- write after read and write after write: latency 0 (order only);
- memory: a store, an atomic (ATOMS, ATOM, RED) or BAR keeps its place relative to every shared or global access (and BAR to
  texture fetches); loads of one space may pass each other (order only);
- explicit control fields: an instruction that waits on a barrier follows the block's earlier
  setters of that barrier, and a setter follows the earlier waiters (the writer's barrier
  numbering stays meaningful);
- ``<ORDERED>`` runs keep their written order.

Order (maxas's heuristic, ``Scheduler``): a simulated clock; each ready instruction's expected stall
is the cycles until its operands are ready (at least 1), 0 when it can dual-issue with the previous
instruction (the pairs :func:`maxsim.isa.issue.can_dual_issue` allows, ready now). The ready
instruction picked is, in order of preference: the block's first instruction if it waits on a
barrier (it was written to go first), the least expected stall, a change of unit from the
previous instruction, the most instructions depending on it (its descendants through edges with a
latency), the earliest written.
"""

from __future__ import annotations

import attrs

from ..analysis.controls import pred_sources, read_delay
from ..isa.issue import BITCOUNT_OPCODES, can_dual_issue

PRED_KEY = 1 << 20  # predicates are keyed apart from registers (registers may be any other ints)
SHARED, GLOBAL = ("lds", "sts"), ("ldg", "stg")
STORES = ("sts", "stg")
ATOMICS = ("ATOMS", "ATOM", "RED")  # read and write memory: ordered like stores


@attrs.frozen
class Item:
    """One instruction of a block: decoded (its register sets may hold any hashable keys), with the
    explicit control fields that bind the order, and its ``<ORDERED>`` run (0: none)."""

    instr: object
    wait: int = 0
    sets: frozenset = frozenset()
    ordered: int = 0


def result_latency(unit: str, lat, opcode: str = "") -> int:
    """Cycles from issue to a readable result, for ordering (the control rules decide the codes)."""
    if opcode in BITCOUNT_OPCODES:
        return lat.bitcount
    return {"alu": lat.alu, "alu_half": lat.alu_half, "s2r": lat.s2r, "lds": lat.lds,
            "tex": lat.tex_l1_hit, "ldg": lat.l2_hit, "xu": lat.xu, "fixed": lat.ldc,
            "fp64": lat.fp64}.get(unit, 1)


CC_KEY = PRED_KEY + 8  # the carry flag: .CC writes it, .X reads it ([maxas] Scheduler: CC and X are
# among its register operands, so an IADD.X stays after the IADD.CC whose carry it adds)


def _keys(instr):
    reads = list(instr.src_regs) + [PRED_KEY + p for p in pred_sources(instr)]
    writes = list(instr.dst_regs) + [PRED_KEY + p for p in instr.dst_preds]
    if "X" in instr.mods or "XLO" in instr.mods:  # IMNMX.XLO reads the flags of IMNMX.XHI.CC
        reads.append(CC_KEY)
    if "CC" in instr.mods:
        writes.append(CC_KEY)
    return reads, writes


def dependency_graph(items, lat):
    """children[i] = [(j, latency)] and the number of parents of each item."""
    n = len(items)
    children = [dict() for _ in range(n)]

    def edge(a, b, latency):
        if a != b:
            children[a][b] = max(children[a].get(b, 0), latency)

    writers = {}  # key -> indices of writers, newest last, back to the last unguarded one
    readers = {}  # key -> indices reading it since its last unguarded write
    mem_prev = []  # (index, unit, writes memory) of earlier memory ops and BARs
    setters, waiters = {}, {}
    prev_ordered = {}
    for j, it in enumerate(items):
        instr = it.instr
        reads, writes = _keys(instr)
        guarded = instr.pred != 7
        for k in reads:
            for w in reversed(writers.get(k, ())):
                p = items[w].instr
                if k == CC_KEY:
                    latency = result_latency(p.unit, lat, p.opcode)
                elif k >= PRED_KEY:
                    latency = lat.predicate
                else:
                    latency = max(0, result_latency(p.unit, lat, p.opcode) - read_delay(instr, lat))
                edge(w, j, latency)
                if p.pred == 7:
                    break
        for k in writes:
            for r in readers.get(k, ()):
                edge(r, j, 0)
            for w in writers.get(k, ()):
                edge(w, j, 0)
        for k in writes:
            if guarded:
                writers.setdefault(k, []).append(j)
            else:
                writers[k] = [j]
                readers[k] = []
        for k in reads:
            readers.setdefault(k, []).append(j)
        # memory order
        u = instr.unit
        if u in SHARED + GLOBAL + ("bar", "tex"):
            store = u in STORES or instr.opcode in ATOMICS
            for i, pu, pstore in mem_prev:
                same = (u in SHARED and pu in SHARED) or (u in GLOBAL and pu in GLOBAL)
                if u == "bar" or pu == "bar" or (same and (store or pstore)):
                    if not (u == "tex" and pu == "tex"):
                        edge(i, j, 0)
            mem_prev.append((j, u, store))
        # explicit barriers
        for b in range(1, 7):
            if it.wait >> (b - 1) & 1:
                for i in setters.get(b, ()):
                    edge(i, j, 0)
                waiters.setdefault(b, []).append(j)
        for b in it.sets:
            for i in waiters.get(b, ()):
                edge(i, j, 0)
            setters.setdefault(b, []).append(j)
        if it.ordered:
            if it.ordered in prev_ordered:
                edge(prev_ordered[it.ordered], j, 0)
            prev_ordered[it.ordered] = j
    parents = [0] * n
    for a in range(n):
        for b in children[a]:
            parents[b] += 1
    return [sorted(c.items()) for c in children], parents


def _descendants(children):
    """For each node, the number of distinct nodes reachable through edges with a latency."""
    n = len(children)
    reach = [None] * n
    for a in range(n - 1, -1, -1):  # edges run forward in written order
        s = set()
        for b, latency in children[a]:
            if latency > 0:
                s.add(b)
                s |= reach[b]
        reach[a] = s
    return [len(s) for s in reach]


def schedule_block(items, cfg) -> list:
    """The issue order of a block: a permutation of ``range(len(items))``."""
    lat = cfg.latency
    n = len(items)
    if n < 2:
        return list(range(n))
    children, parents = dependency_graph(items, lat)
    deps = _descendants(children)
    first = 0 if items[0].wait else 1
    earliest = [0] * n
    ready = [j for j in range(n) if parents[j] == 0]
    order = []
    clock = 0
    prev = None
    prev_dual = False
    while ready:
        def key(j):
            instr = items[j].instr
            stall = max(1, earliest[j] - clock) if prev is not None else 0
            if prev is not None and not prev_dual and can_dual_issue(prev, instr) and earliest[j] <= clock:
                stall = 0
            mix = prev is not None and instr.unit != prev.unit
            return (0 if (j == 0 and first == 0) else 1, stall, not mix, -deps[j], j)
        best = min(ready, key=key)
        stall = key(best)[1]
        ready.remove(best)
        clock += stall
        prev_dual = stall == 0 and prev is not None
        prev = items[best].instr
        order.append(best)
        for child, latency in children[best]:
            earliest[child] = max(earliest[child], clock + latency)
            parents[child] -= 1
            if parents[child] == 0:
                ready.append(child)
    if len(order) != n:  # a cycle cannot arise from edges that all run forward; kept as a guard
        raise AssertionError("scheduling graph has a cycle")
    return order
