"""Static check of control codes: the hazards a kernel's wait masks, barriers and stalls leave open.

Maxwell has no hardware interlocks on most results: the assembler's control codes (see
``docs/maxas-sass-format.md``, "The control field") must make every dependent instruction wait long
enough. :func:`check_controls` walks a decoded kernel in program order, times each instruction from
the stall counts (issue time of the next = this one's + its stall; stall 0 dual-issues) and reports
each place where the control codes do not cover a dependency under the rules below, as
:class:`Hazard` records. It does not raise: a kernel with hazards still gets a full report.

The same rule engine (:class:`ControlState`) drives the control-code *scheduler* of the SGEMM
generator and of the assembler (``maxsim/asm/controls.py``), which fills open fields with the least that satisfies
these rules and raises on a hazard in fixed fields; so a generated kernel checks clean by
construction, and a rule changed here changes both.

Paths. The walk is the straight program order: every branch is taken as not taken (the next
instruction issues the branch's stall count after it). In addition, for each backward branch (a
loop) the loop body is walked once more, from the loop head, starting from the state and time the
straight walk had at the branch (the loop head, the taken branch's target, issues
``max(stall, latency.branch_taken)`` cycles after it, :func:`maxsim.isa.issue.taken_branch_stall`):
hazards between the end of one iteration and the start of the next are found
there (:attr:`Hazard.loop` names the branch). Forward branches taken, and a second wrap of a loop,
are not followed. Past a conditional branch the straight walk knows the branch's guard is false, so
memory ops issued under the same guard (the predicate not written since) did not execute: their
registers are not pending (maxas's SGEMM loads the next iteration's fragments with ``@P0 LDS`` at
the bottom of the loop and reuses those registers right after ``@P0 BRA`` falls through; without
this rule its two files report 16 overwrites each). The generator's scheduler does not use this
path fact and stays conservative.

The rules (numbers from the architecture config, ``[latency]`` and ``[sm]`` sections; the issue
rules from :mod:`maxsim.isa.issue`; each with its source in docs/hazard-rules.md):

- ``raw-alu``: an ALU result (``alu``, ``alu_half`` classes) may be read by an ALU instruction
  ``latency.alu`` cycles after issue; by a memory instruction or LDC ``mem_operand_read_*`` cycles
  earlier (they read their operands late);
- ``raw-predicate``: a predicate written by ISETP is usable ``latency.predicate`` cycles after issue
  (guard or predicate source);
- ``variable-latency-without-wait``: the results of S2R, LDS, TLD and LDG (and of the other
  opcodes of their classes: SHFL, ATOMS, ATOM; and of MUFU, conversions, POPC, FLO and LDC) are
  known only through a write barrier: an instruction that reads, or overwrites, such a register must wait on the barrier
  (``variable-latency-without-barrier`` if no barrier covers the producer at all);
- ``wait-too-soon``: a wait sees a barrier ``barrier_set_delay`` cycles after the cycle following
  its setter's issue (a wait right after the setter needs a stall of 2 on the setter);
- ``war-memory-operand``: memory ops keep reading their source registers up to
  ``read_barrier_release`` cycles after issue; an instruction of another queue that overwrites one
  of them waits on the op's read barrier (or its write barrier: completion implies the reads are
  done), or, when the op set neither, issues ``read_barrier_release`` cycles after it;
- ``short-stall-branch`` / ``short-stall-barrier`` / ``short-stall-exit``: BRA/CAL/RET (and the
  other branching opcodes; not SSY, PBK, PCNT, which only push a token), BAR and EXIT need a stall
  of at least ``latency.branch`` / ``barrier_sync`` / ``exit`` when an instruction follows;
- ``illegal-dual-issue``: stall 0 dual-issues only the pairs :func:`maxsim.isa.issue.can_dual_issue`
  allows (maxas's scheduler classes: an ALU instruction, S2R, POPC or FLO first; a memory op, LDC,
  BAR, MUFU or conversion, or branch second; not two constant-operand reads), and the second of a
  pair cannot start another pair. A stall of 0 on an instruction that may start a pair, before one
  that cannot be a second, is no hazard: the pair is not dual-issued and the second issues a cycle
  later (ptxas writes it: MOV + S2R, VOTE + EXIT, SHR + POPC);
- ``DEPBAR.LE SBn, k`` (ptxas's wait for all but the latest ``k`` ops of barrier n + 1): the
  earlier ops of that barrier are done after it (in an ordered queue);
- ``wait-on-unset-barrier``: a wait mask names a barrier that no instruction on any walked path
  sets before it (the wait does nothing: usually a wrong barrier number).

Two assumptions are taken from maxas's own kernels, which rely on them (``sgemm_final_64.sass`` and
``sgemm_final_128.sass`` check clean only with them):

- memory ops of one queue (shared: LDS/STS; texture; global: LDG/STG) complete and release their
  operands in issue order, so a wait on the barrier of a later op of the queue covers the earlier
  ones (maxas sets one write barrier on the last LDS.U.128 of a group of four, and one on the last
  of the texture loads of a group), and a later op of the same queue may overwrite an earlier one's
  destination or source without a wait. The same for the *results* of global loads and of the
  quarter-rate unit (MUFU and conversions, ``latency.xu``; POPC and FLO, ``latency.bitcount``, a
  queue of their own): ptxas's sm_52 code relies on it (vecadd: the first of two LDGs sets no
  barrier, the reader waits on the second's; transcendental: MUFU.SIN and MUFU.COS set none, the
  reader waits on the later MUFUs' barriers), and the timing model completes a warp's LDGs in issue
  order. Not for S2R, which maxas's Control-Codes page says may complete out of order ("use an
  explicit barrier for each");
- BAR.SYNC returns only after the warp's earlier shared-memory ops have read their operands (maxas
  overwrites the STS.128 source registers with new texture loads after the BAR without a wait).

What is not modelled: forward branches taken (their skipped code could leave a producer closer to
its consumer than the straight order says) and the yield flag (stalls of 12 or more without it are
a performance matter, not a hazard).
"""

from __future__ import annotations

import attrs

from maxsim.arch.config import load_config
from maxsim.isa import instruction as ins
from maxsim.isa.issue import (BITCOUNT_OPCODES, can_dual_issue, depbar_of, dual_first, dual_second, min_stall,
                              operand_read_delay, taken_branch_stall, why_not_dual, late_address_word)
from maxsim.isa.opcodes import mask_predicates, spec_of


ALU_UNITS = frozenset(("alu", "alu_half"))
# results known only through a barrier: memory loads (LDS, ATOMS, TLD, LDG, ATOM), S2R, the
# quarter-rate unit (MUFU, conversions, POPC, FLO) and LDC; SHFL and ATOMS are shared-memory work (lds)
# fp64: the double-precision unit's results, waited for on a barrier as ptxas does
VARIABLE_WRITERS = frozenset(("lds", "tex", "ldg", "s2r", "xu", "fixed", "fp64"))
QUEUE = {"lds": "shared", "sts": "shared", "tex": "tex", "ldg": "global", "stg": "global", "s2r": "s2r",
         "xu": "xu", "fixed": "fixed", "fp64": "fp64"}
# queues whose ops read their registers at issue, like ALU instructions (no late operand reads)
REGISTER_QUEUES = frozenset(("s2r", "xu", "fixed", "fp64"))
# queues whose results may arrive out of issue order: S2R ([maxas-cc]: "It is not wise to share a
# barrier between S2R instructions. These can be processed out of order."). Global loads complete in
# issue order, and so do the quarter-rate unit's results of one latency (MUFU and conversions:
# latency.xu; POPC and FLO: latency.bitcount, a queue of their own): ptxas relies on both for sm_52
# (an LDG with no barrier before one whose barrier the reader waits on; MUFU.SIN / MUFU.COS with no
# barrier, read after waits on later MUFUs' barriers), and the timing model completes them so.
UNORDERED_RESULTS = frozenset(("s2r",))


def queue_of(instr):
    """The completion queue of ``instr`` (None: an ALU instruction or one without a queue)."""
    q = QUEUE.get(instr.unit)
    if q == "xu" and instr.opcode in BITCOUNT_OPCODES:
        return "bitcount"
    return q
SHORT_STALL_KIND = {"bar": "short-stall-barrier", "branch": "short-stall-branch", "exit": "short-stall-exit"}

KINDS = ("raw-alu", "raw-predicate", "variable-latency-without-wait", "variable-latency-without-barrier",
         "wait-too-soon", "war-memory-operand", "short-stall-branch", "short-stall-barrier",
         "short-stall-exit", "illegal-dual-issue", "wait-on-unset-barrier")


@attrs.frozen
class Hazard:
    """One dependency the control codes leave open."""

    index: int  # instruction the hazard is reported at (the consumer; for a stall: the instruction with it)
    line: int  # its source line
    opcode: str  # its full opcode
    kind: str  # one of KINDS
    message: str  # one line naming both instructions and the cycles
    other: int | None = None  # the other instruction: the producer (or, for a stall, the next one)
    other_line: int | None = None
    distance: int | None = None  # cycles between the two as the control codes time them
    required: int | None = None  # cycles the rule asks for (None: a barrier wait is what is missing)
    loop: int | None = None  # the backward branch whose wrap-around the hazard needs (None: straight order)

    def to_dict(self) -> dict:
        return attrs.asdict(self)


def read_delay(instr, lat) -> int:
    """Cycles after issue at which ``instr`` reads its source registers (:mod:`maxsim.isa.issue`)."""
    return operand_read_delay(instr.unit, instr.opcode, lat)


def pred_sources(instr):
    """Predicates the instruction reads: its predicate source operands (P2R: those of its mask) and
    its guard."""
    srcs = [op.reg for op in instr.operands[spec_of(instr).n_dst:]
            if op.kind == ins.PRED and op.reg != ins.PT]
    if instr.opcode == "P2R":
        srcs += list(mask_predicates(instr))
    if instr.pred != ins.PT:
        srcs.append(instr.pred)
    return srcs


def _name(instr) -> str:
    return f"{instr.full_opcode} (line {instr.line})"


@attrs.frozen
class Need:
    """A barrier an instruction must wait on (``barrier`` 0: no barrier covers the producer)."""

    barrier: int
    kind: str  # "variable-latency-without-wait" or "war-memory-operand"
    reg: int
    producer: int  # index of the memory op / variable-latency producer
    since: int  # its issue time
    overwrite: bool  # the instruction overwrites ``reg`` (else it reads it)


@attrs.frozen
class Timing:
    """An instruction may not issue before ``earliest`` (a fixed latency since ``producer``'s issue)."""

    earliest: int
    kind: str  # "war-memory-operand", "wait-too-soon", "raw-alu" or "raw-predicate"
    what: int  # the register, predicate or barrier concerned
    producer: int
    since: int  # the producer's issue time


@attrs.define
class _Op:
    """A memory op or variable-latency producer still in flight (for barriers and read holds)."""

    index: int
    t: int
    queue: str
    write_bar: int
    read_bar: int
    regs_read: frozenset
    regs_written: frozenset
    guard: tuple | None = None  # (predicate, negated, predicate version at issue) of a guarded op
    done: bool = False  # results written
    released: bool = False  # source registers read


class ControlState:
    """What an in-order walk knows after the instructions issued so far: fixed-latency results and
    when they are readable, variable-latency producers and memory ops in flight, barrier setters,
    the previous instruction's issue time. Per instruction: :meth:`needs` and :meth:`timings` give
    what the rules ask of it, :meth:`stall_hazards` checks the previous instruction's stall, then
    :meth:`issue` records it as issued at a cycle with its control codes."""

    def __init__(self, instructions, cfg=None):
        cfg = cfg if cfg is not None else load_config()
        self.instrs = instructions
        self.lat = cfg.latency
        self.sm = cfg.sm
        self.alu_ready = {}  # register -> (cycle its last fixed-latency result can be read, producer)
        self.pred_ready = {}  # predicate -> (issue cycle of its last writer, writer)
        self.pending = {}  # register -> _Op whose write is outstanding
        self.inflight = []  # _Op records not yet done/released
        self.bar_set = {}  # barrier -> (issue cycle of its last setter, setter)
        self.pred_version = {}  # predicate -> number of writes so far (to tell a guard's value unchanged)
        self.t_prev = None  # issue cycle of the previous instruction
        self.prev = None  # the previous instruction
        self.dual_prev = False  # the previous instruction was the second of a dual issue

    def copy(self) -> "ControlState":
        new = object.__new__(ControlState)
        new.__dict__.update(self.__dict__)
        ops = {id(op): attrs.evolve(op) for op in self.inflight}
        for op in self.pending.values():
            ops.setdefault(id(op), attrs.evolve(op))
        new.inflight = [ops[id(op)] for op in self.inflight]
        new.pending = {r: ops[id(op)] for r, op in self.pending.items()}
        new.alu_ready, new.pred_ready, new.bar_set = dict(self.alu_ready), dict(self.pred_ready), dict(self.bar_set)
        new.pred_version = dict(self.pred_version)
        return new

    # ---- what the rules ask of the next instruction --------------------------------------------
    def _covering(self, op, want_release):
        """The barrier to wait on to finish ``op`` (in issue order within its queue, except the
        results of global loads: their own barrier), or 0."""
        for later in self.inflight:
            if later.queue == op.queue and later.index >= op.index and not later.done:
                if not want_release and op.queue in UNORDERED_RESULTS and later is not op:
                    continue
                # to release the operands, the read barrier comes first (it clears when the reads
                # are done; ptxas sets one on an LDG.E whose address registers are reused soon)
                if want_release and later.read_bar and not later.released:
                    return later.read_bar
                if later.write_bar:
                    return later.write_bar
        return 0

    def needs(self, instr):
        """(barrier needs, WAR timings): the barriers ``instr`` must wait on (a :class:`Need` with
        barrier 0 when nothing covers a variable-latency producer), and the issue times required
        by memory ops still reading a register it overwrites with no barrier to wait on."""
        reads = set(instr.src_regs)
        writes = set(instr.dst_regs)
        queue = queue_of(instr)
        needs, timings = [], []
        # registers whose producer's result is known only through a barrier
        for r in sorted(reads | writes):
            op = self.pending.get(r)
            if op is None or op.done:
                continue
            if queue is not None and queue == op.queue and r in writes and r not in reads \
                    and queue not in UNORDERED_RESULTS:
                continue  # same queue overwrite: lands in order
            needs.append(Need(self._covering(op, want_release=False), "variable-latency-without-wait",
                              r, op.index, op.t, r not in reads))
        # registers a memory op may still be reading
        for op in self.inflight:
            if op.released or not (op.regs_read & writes):
                continue
            if queue is not None and queue == op.queue:
                continue  # same queue: ordered
            r = min(op.regs_read & writes)
            b = self._covering(op, want_release=True)
            if b:
                needs.append(Need(b, "war-memory-operand", r, op.index, op.t, True))
            else:
                timings.append(Timing(op.t + self.lat.read_barrier_release, "war-memory-operand", r, op.index, op.t))
        return needs, timings

    def timings(self, instr, wait):
        """Issue-time requirements of ``instr`` with wait mask ``wait``: barrier visibility, then
        fixed-latency registers and predicates."""
        out = []
        for b in range(1, 7):
            if wait >> (b - 1) & 1 and b in self.bar_set:
                t, who = self.bar_set[b]
                out.append(Timing(t + 1 + self.lat.barrier_set_delay, "wait-too-soon", b, who, t))
        delay = read_delay(instr, self.lat)
        late_reg, late = late_address_word(instr, self.lat)  # the high word of a 64-bit global address
        for r in instr.src_regs:
            if r in self.alu_ready:
                ready, who, t = self.alu_ready[r]
                out.append(Timing(ready - delay - (late if r == late_reg else 0), "raw-alu", r, who, t))
        for p in pred_sources(instr):
            if p in self.pred_ready:
                t, who = self.pred_ready[p]
                out.append(Timing(t + self.lat.predicate, "raw-predicate", p, who, t))
        return out

    def can_dual(self, instr) -> bool:
        """Whether the previous instruction may dual-issue with ``instr`` (stall 0 on it)."""
        p = self.prev
        return p is not None and not self.dual_prev and can_dual_issue(p, instr)

    def stall_hazards(self, instr, stall):
        """Hazards of the previous instruction's ``stall`` when ``instr`` follows it."""
        p = self.prev
        out = []
        # stall 0 before an instruction that cannot be the second of a pair (S2R, POPC, EXIT, an
        # ALU op ...) after one that can start a pair: no dual issue, the instruction issues a
        # cycle later (as the timing model does). ptxas writes it for sm_52 (MOV + S2R, VOTE +
        # EXIT, SHR + POPC in workloads/cuda/), so it is no hazard
        lone = p is not None and not self.dual_prev and dual_first(p) and not dual_second(instr)
        if stall == 0 and not self.can_dual(instr) and not lone:
            why = ("it is itself the second of a dual issue" if self.dual_prev and can_dual_issue(p, instr)
                   else why_not_dual(p, instr))
            out.append(self._hazard(p, "illegal-dual-issue", f"{_name(p)} has stall 0 (dual issue) before "
                                    f"{_name(instr)}, which is not allowed: {why}", instr, 0, 1))
        n = min_stall(p, self.lat)
        if stall and stall < n:
            out.append(self._hazard(p, SHORT_STALL_KIND[p.unit], f"{_name(p)} has stall {stall}, it needs a "
                                    f"stall of at least {n} before the next instruction, {_name(instr)}",
                                    instr, stall, n))
        return out

    # ---- hazards --------------------------------------------------------------------------------
    def _hazard(self, at, kind, message, other=None, distance=None, required=None):
        return Hazard(at.index, at.line, at.full_opcode, kind, message,
                      other.index if other is not None else None, other.line if other is not None else None,
                      distance, required)

    def need_hazard(self, instr, need, t):
        """The hazard of ``instr`` (issued at ``t``) not waiting on ``need``."""
        p = self.instrs[need.producer]
        d = t - need.since
        if need.kind == "war-memory-operand":
            msg = (f"{_name(instr)} overwrites R{need.reg} {d} cycle(s) after {_name(p)}, which may still be "
                   f"reading it (up to {self.lat.read_barrier_release} cycles), without waiting on barrier "
                   f"{need.barrier}")
            return self._hazard(instr, need.kind, msg, p, d)
        verb = "overwrites" if need.overwrite else "reads"
        if need.barrier == 0:
            msg = (f"{_name(instr)} {verb} R{need.reg} {d} cycle(s) after {_name(p)}, whose variable-latency "
                   f"result no barrier covers (it sets no write barrier)")
            return self._hazard(instr, "variable-latency-without-barrier", msg, p, d)
        msg = (f"{_name(instr)} {verb} R{need.reg} {d} cycle(s) after {_name(p)} without waiting on its "
               f"write barrier {need.barrier} (variable latency)")
        return self._hazard(instr, need.kind, msg, p, d)

    def timing_hazard(self, instr, x: Timing, t):
        """The hazard of ``instr`` issued at ``t`` before ``x.earliest``."""
        p = self.instrs[x.producer]
        d, req = t - x.since, x.earliest - x.since
        tail = f"{d} cycle(s) after {_name(p)}"
        if x.kind == "raw-alu":
            late = read_delay(instr, self.lat)
            what = f"reads R{x.what} too early: {tail} writes it, it needs {req}"
            if late:
                what += f" ({instr.opcode} reads its operands {late} cycles after issue)"
        elif x.kind == "raw-predicate":
            what = f"reads P{x.what} too early: {tail} sets it, it needs {req}"
        elif x.kind == "wait-too-soon":
            what = f"waits on barrier {x.what} set too recently: {tail} sets it, it needs {req}"
        else:
            what = (f"overwrites R{x.what} too early: {tail}, which sets no barrier and may still read it, "
                    f"it needs {req}")
        return self._hazard(instr, x.kind, f"{_name(instr)} {what}", p, d, req)

    # ---- issue ----------------------------------------------------------------------------------
    def issue(self, instr, control, t):
        """Record ``instr`` as issued at cycle ``t`` with ``control`` (its wait mask applied first)."""
        lat = self.lat
        wait = control.wait
        for b in range(1, 7):
            if not wait >> (b - 1) & 1:
                continue
            for op in self.inflight:
                if op.write_bar == b:
                    self._finish(op, done=True)
                elif op.read_bar == b:
                    self._finish(op, done=False)
        for op in self.inflight:  # operands held past the release time are read by now
            if not op.released and t >= op.t + lat.read_barrier_release:
                op.released = True
        b, n = depbar_of(instr)
        if b:
            # DEPBAR.LE SB(b-1), n: the warp goes on once at most n ops of barrier b are out; in an
            # ordered queue those are the latest n, so the earlier ones are done
            ops = [op for op in self.inflight if op.write_bar == b and not op.done]
            if all(op.queue not in UNORDERED_RESULTS for op in ops):
                for op in ops[:max(0, len(ops) - n)]:
                    self._finish(op, done=True)
        self.inflight = [op for op in self.inflight if not (op.done or (op.released and not op.regs_written))]
        if instr.opcode == "BAR":
            for op in self.inflight:
                if op.queue == "shared":
                    op.released = True
        writes = instr.dst_regs
        if instr.unit in ALU_UNITS:
            ready = t + (lat.alu if instr.unit == "alu" else lat.alu_half)
            for r in writes:
                self.alu_ready[r] = (ready, instr.index, t)
                self.pending.pop(r, None)
            for p in instr.dst_preds:
                self.pred_ready[p] = (t, instr.index)
        for p in instr.dst_preds:
            self.pred_version[p] = self.pred_version.get(p, 0) + 1
        queue = queue_of(instr)
        if queue is not None:
            op = _Op(instr.index, t, queue, control.write_bar, control.read_bar,
                     frozenset(instr.src_regs) if queue not in REGISTER_QUEUES else frozenset(),
                     frozenset(writes) if instr.unit in VARIABLE_WRITERS else frozenset(),
                     self._guard(instr))
            if op.regs_written or op.regs_read:
                self.inflight.append(op)
            for r in op.regs_written:
                self.pending[r] = op
                self.alu_ready.pop(r, None)
        for b in (control.write_bar, control.read_bar):
            if b:
                self.bar_set[b] = (t, instr.index)
        self.dual_prev = self.t_prev is not None and t == self.t_prev
        self.t_prev = t
        self.prev = instr

    def _guard(self, instr):
        if instr.pred == ins.PT:
            return None
        return (instr.pred, instr.pred_neg, self.pred_version.get(instr.pred, 0))

    def fall_through(self, branch):
        """Continue past the conditional ``branch`` not taken: its guard is false there, so the memory
        ops issued under the same guard, the predicate unchanged since, did not execute: they write
        and read no register. (Not for the scheduler, which stays conservative.)"""
        g = self._guard(branch)
        if g is None:
            return
        gone = [op for op in self.inflight if op.guard == g]
        if not gone:
            return
        self.inflight = [op for op in self.inflight if op.guard != g]
        for r in {r for op in gone for r in op.regs_written}:
            if self.pending.get(r) in gone:
                del self.pending[r]
                for op in reversed(self.inflight):  # an earlier, unguarded load of the register
                    if r in op.regs_written and not op.done:
                        self.pending[r] = op
                        break

    def _finish(self, op, done):
        """Mark ``op`` (and, issue order, every earlier op of its queue) done or released."""
        for other in self.inflight:
            if other.queue == op.queue and other.index <= op.index:
                other.released = True
                if done and (other is op or op.queue not in UNORDERED_RESULTS):
                    other.done = True


def check_controls(kernel: ins.Kernel, cfg=None) -> list:
    """The control-code hazards of ``kernel`` (a list of :class:`Hazard`, by instruction index):
    the straight program order, then each loop's wrap-around (see the module documentation)."""
    cfg = cfg if cfg is not None else load_config()
    instrs = kernel.instructions
    found = {}  # (index, kind, other) -> Hazard, first finding kept
    unset = {}  # (index, barrier) -> True if seen set on some walk
    at_branch = {}  # index of a backward branch -> state after it issued

    def walk(st, indices, loop):
        for pos, i in enumerate(indices):
            instr = instrs[i]
            c = instr.control
            if st.t_prev is None:
                t = 0
            else:
                for h in st.stall_hazards(instr, st.prev.control.stall):
                    add(h, loop)
                t = st.t_prev + st.prev.control.stall
                if loop is not None and pos == 0:  # the loop head after the taken back branch
                    t = st.t_prev + taken_branch_stall(st.prev.control.stall, cfg.latency)
            needs, timings = st.needs(instr)
            for n in needs:
                if n.barrier == 0 or not c.wait >> (n.barrier - 1) & 1:
                    add(st.need_hazard(instr, n, t), loop)
            for x in timings + st.timings(instr, c.wait):
                if t < x.earliest:
                    add(st.timing_hazard(instr, x, t), loop)
            for b in range(1, 7):
                if c.wait >> (b - 1) & 1:
                    key = (i, b)
                    unset[key] = unset.get(key, False) or b in st.bar_set
            st.issue(instr, c, t)
            if instr.unit == "branch" and instr.opcode == "BRA":
                if loop is None and 0 <= instr.target <= i:
                    at_branch[i] = st.copy()  # taken: the loop's wrap-around
                st.fall_through(instr)  # not taken: the straight walk goes on

    def add(h, loop):
        key = (h.index, h.kind, h.other)
        if key in found:
            return
        if loop is not None:
            b = instrs[loop]
            h = attrs.evolve(h, loop=loop, message=f"{h.message} [across the back edge of {_name(b)}]")
        found[key] = h

    walk(ControlState(instrs, cfg), range(len(instrs)), None)
    for b, st in at_branch.items():
        walk(st, range(instrs[b].target, b + 1), b)
    for (i, b), seen in unset.items():
        if not seen:
            instr = instrs[i]
            add(Hazard(i, instr.line, instr.full_opcode, "wait-on-unset-barrier",
                       f"{_name(instr)} waits on barrier {b}, which no instruction before it sets "
                       f"(the wait does nothing)"), None)
    return sorted(found.values(), key=lambda h: (h.index, KINDS.index(h.kind), h.other or -1))


def format_hazards(hazards, limit: int | None = 20, title: str = "control-code hazards") -> str:
    """A text section: the count (by kind) and the first ``limit`` hazards (None: all)."""
    out = [f"{title}: {len(hazards)}"]
    if hazards:
        counts = {}
        for h in hazards:
            counts[h.kind] = counts.get(h.kind, 0) + 1
        out[0] += " (" + ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda x: KINDS.index(x[0]))) + ")"
        shown = hazards if limit is None else hazards[:limit]
        for h in shown:
            out.append(f"  line {h.line}: {h.kind}: {h.message}")
        if len(shown) < len(hazards):
            out.append(f"  ... {len(hazards) - len(shown)} more (--json lists them all)")
    return "\n".join(out) + "\n"
