"""Control codes for generated kernels: a small in-order scheduler over a decoded instruction list.

The generator writes each instruction as a :class:`Spec`: its text, plus whichever control fields
the design fixes (the main loop fixes all of them; the prologue and epilogue fix only their
dependency-barrier numbers). :func:`assign_controls` walks the decoded kernel in program order and

- fills every field left open: the *wait mask* (the barriers of the variable-latency producers whose
  registers the instruction reads or overwrites, and of the memory ops that still hold a register it
  overwrites), the *stall count* of the previous instruction (just enough cycles for each fixed
  latency, 0 to dual-issue an ALU instruction with a following memory op, BAR or BRA) and the yield
  flag (set on stalls the config says need it);
- checks every fixed field against the same rules, raising :class:`ControlError` on a hazard the
  fixed codes leave open, so a hand-placed loop is verified as it is assembled.

The timeline is the straight program order (a backward branch is taken as not taken): hazards that
wrap around a loop are the generator's business (its loop body is symmetric) and are checked end to
end by the timing model's hazard check.

The rules (numbers from the architecture config, ``[latency]`` and ``[sm]`` sections):

- an ALU result (``alu``, ``alu_half``) may be read by an ALU instruction ``latency.alu`` cycles
  after issue, by a memory instruction ``mem_operand_read_*`` cycles earlier (memory ops read their
  operands late);
- a predicate written by ISETP is usable ``latency.predicate`` cycles after issue;
- the results of S2R, LDS, TLD and LDG are only known through their write barrier: a reader or
  overwriter waits on it; a wait sees a barrier ``barrier_set_delay`` cycles after it was set;
- memory ops keep reading their source registers for ``read_barrier_release`` cycles; an
  instruction of another queue that overwrites one of them sooner waits on the op's read barrier
  (or its write barrier: completion implies the reads are done);
- assumptions taken from maxas's own kernels (sgemm_final_64/128.sass rely on them): memory ops of
  one queue (shared, texture, global) complete and release their operands in issue order, so a wait
  on the barrier of a later op covers the earlier ones of the same queue; and BAR.SYNC returns only
  after the warp's earlier shared-memory ops have read their operands;
- BAR, BRA, CAL, RET and EXIT need at least ``latency.branch`` / ``barrier_sync`` / ``exit`` stall
  cycles; a stall of ``sm.yield_stall_threshold`` or more gets the yield flag.
"""

from __future__ import annotations

import attrs

from maxsim.arch.config import load_config
from maxsim.errors import MaxsimError
from maxsim.isa import instruction as ins
from maxsim.isa.opcodes import OPCODES

ALU_UNITS = frozenset(("alu", "alu_half"))
VARIABLE_WRITERS = frozenset(("lds", "tex", "ldg", "s2r"))  # results known only through a barrier
QUEUE = {"lds": "shared", "sts": "shared", "tex": "tex", "ldg": "global", "stg": "global", "s2r": "s2r"}
DUAL_SECOND = frozenset(("lds", "sts", "tex", "ldg", "stg", "bar", "branch"))


class ControlError(MaxsimError):
    """Control codes that leave a hazard open (or cannot be chosen to close it)."""


@attrs.frozen
class Spec:
    """One instruction as the generator writes it. ``None`` fields are chosen by the scheduler."""

    text: str  # opcode and operands, without ';'
    pred: str = ""  # guard, e.g. "@P0" or "@!P0"
    wait: int | None = None  # wait mask; None: derived from the registers (plus extra_wait)
    extra_wait: int = 0  # barriers to wait on besides the derived ones (ordering, not registers)
    read_bar: int = 0
    write_bar: int = 0
    yield_: bool | None = None
    stall: int | None = None

    def line(self) -> str:
        """The instruction as a maxas text line, open fields printed with neutral placeholders."""
        wait = self.wait if self.wait is not None else self.extra_wait
        ctrl = "{}:{}:{}:{}:{:x}".format(f"{wait:02x}" if wait else "--", self.read_bar or "-",
                                         self.write_bar or "-", "Y" if self.yield_ else "-",
                                         1 if self.stall is None else self.stall)
        return f"{ctrl} {self.pred:>4} {self.text};"


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
    done: bool = False  # results written
    released: bool = False  # source registers read


def _min_stall(instr, lat) -> int:
    return {"bar": lat.barrier_sync, "branch": lat.branch, "exit": lat.exit}.get(instr.unit, 1)


def _read_delay(unit, lat) -> int:
    return {"lds": lat.mem_operand_read_shared, "sts": lat.mem_operand_read_shared,
            "ldg": lat.mem_operand_read_global, "stg": lat.mem_operand_read_global,
            "tex": lat.mem_operand_read_tex}.get(unit, 0)


def _pred_sources(instr):
    """Predicates the instruction reads: its guard and predicate source operands."""
    srcs = [op.reg for op in instr.operands[OPCODES[instr.opcode].n_dst:]
            if op.kind == ins.PRED and op.reg != ins.PT]
    if instr.pred != ins.PT:
        srcs.append(instr.pred)
    return srcs


def assign_controls(kernel: ins.Kernel, specs, cfg=None) -> ins.Kernel:
    """Return ``kernel`` with the open control fields of ``specs`` (one per instruction) chosen."""
    cfg = cfg if cfg is not None else load_config()
    lat, sm = cfg.latency, cfg.sm
    instrs = list(kernel.instructions)
    if len(specs) != len(instrs):
        raise ValueError("one Spec per instruction expected")
    controls = [i.control for i in instrs]
    alu_ready = {}  # register -> cycle its last fixed-latency producer's result can be read
    pred_time = {}
    pending = {}  # register -> _Op whose write is outstanding
    inflight = []  # _Op records not yet done/released
    bar_set = {}  # barrier -> issue time of its last setter
    t_prev = None
    dual_prev = False  # the previous instruction was the second of a dual issue

    def where(i):
        return f"{instrs[i].where} ({instrs[i].full_opcode})"

    def covering(op, want_release):
        """The barrier to wait on to finish ``op`` (in issue order within its queue)."""
        for later in inflight:
            if later.queue == op.queue and later.index >= op.index and not later.done:
                if later.write_bar:
                    return later.write_bar
                if want_release and later.read_bar and not later.released:
                    return later.read_bar
        return 0

    for i, (instr, spec) in enumerate(zip(instrs, specs)):
        reads = set(instr.src_regs)
        writes = set(instr.dst_regs)
        queue = QUEUE.get(instr.unit)
        need = set()
        earliest = []  # (time, reason)
        # registers whose producer's result is known only through a barrier
        for r in sorted(reads | writes):
            op = pending.get(r)
            if op is None or op.done:
                continue
            if queue is not None and queue == op.queue and r in writes and r not in reads:
                continue  # same queue overwrite: lands in order
            b = covering(op, want_release=False)
            if not b:
                raise ControlError(f"{where(i)}: R{r} comes from instruction {op.index} "
                                   f"({instrs[op.index].full_opcode}) whose result no barrier covers")
            need.add(b)
        # registers a memory op may still be reading
        for op in inflight:
            if op.released or not (op.regs_read & writes):
                continue
            if queue is not None and queue == op.queue:
                continue  # same queue: ordered
            b = covering(op, want_release=True)
            if b:
                need.add(b)
            else:
                earliest.append((op.t + lat.read_barrier_release, f"overwrites a register instruction {op.index} still reads"))
        need_mask = sum(1 << (b - 1) for b in need) | spec.extra_wait
        if spec.wait is None:
            wait = need_mask
        else:
            wait = spec.wait
            if need_mask & ~wait:
                missing = [b for b in range(1, 7) if need_mask >> (b - 1) & 1 and not wait >> (b - 1) & 1]
                raise ControlError(f"{where(i)}: must wait on barrier(s) {missing} (wait mask 0x{wait:02x})")
        # waits: visibility delay, then completion/release of what they cover
        for b in range(1, 7):
            if wait >> (b - 1) & 1 and b in bar_set:
                earliest.append((bar_set[b] + 1 + lat.barrier_set_delay, f"waits on barrier {b} set too recently"))
        # fixed latencies
        for r in reads:
            if r in alu_ready:
                earliest.append((alu_ready[r] - _read_delay(instr.unit, lat), f"reads R{r} too early"))
        for p in _pred_sources(instr):
            if p in pred_time:
                earliest.append((pred_time[p] + lat.predicate, f"reads P{p} too early"))
        # issue time
        if t_prev is None:
            t = 0
        else:
            pi = instrs[i - 1]
            ps = specs[i - 1]
            can_dual = (pi.unit in ALU_UNITS and instr.unit in DUAL_SECOND and not dual_prev)
            if ps.stall is None:
                t = t_prev + (0 if can_dual else _min_stall(pi, lat))
                if can_dual and any(e > t_prev for e, _ in earliest):
                    t = t_prev + 1
                t = max([t] + [e for e, _ in earliest])
                stall = t - t_prev
                if stall > sm.max_stall:
                    raise ControlError(f"{where(i - 1)}: needs a stall of {stall} cycles (max {sm.max_stall})")
                y = ps.yield_ if ps.yield_ is not None else stall >= sm.yield_stall_threshold
                controls[i - 1] = attrs.evolve(controls[i - 1], stall=stall, yield_=y)
            else:
                stall = controls[i - 1].stall
                if stall == 0 and not can_dual:
                    raise ControlError(f"{where(i - 1)}: stall 0 (dual issue) is not allowed before {instr.full_opcode}")
                if stall and stall < _min_stall(pi, lat):
                    raise ControlError(f"{where(i - 1)}: needs a stall of at least {_min_stall(pi, lat)}")
                t = t_prev + stall
                for e, why in earliest:
                    if t < e:
                        raise ControlError(f"{where(i)}: {why} ({e - t} cycle(s) short)")
            dual_prev = controls[i - 1].stall == 0
        c = controls[i]
        controls[i] = attrs.evolve(c, wait=wait)
        # apply the waits
        for b in range(1, 7):
            if not wait >> (b - 1) & 1:
                continue
            for op in inflight:
                if op.write_bar == b:
                    _finish(op, inflight, done=True)
                elif op.read_bar == b:
                    _finish(op, inflight, done=False)
        for op in inflight:  # operands held past the release time are read by now
            if not op.released and t >= op.t + lat.read_barrier_release:
                op.released = True
        inflight = [op for op in inflight if not (op.done or (op.released and not op.regs_written))]
        # effects of this instruction
        if instr.opcode == "BAR":
            for op in inflight:
                if op.queue == "shared":
                    op.released = True
        if instr.unit in ALU_UNITS:
            for r in writes:
                alu_ready[r] = t + (lat.alu if instr.unit == "alu" else lat.alu_half)
                pending.pop(r, None)
            for p in instr.dst_preds:
                pred_time[p] = t
        if queue is not None:
            op = _Op(i, t, queue, c.write_bar, c.read_bar,
                     frozenset(reads) if instr.unit != "s2r" else frozenset(),
                     frozenset(writes) if instr.unit in VARIABLE_WRITERS else frozenset())
            if instr.unit in ("sts", "stg") and c.write_bar:
                raise ControlError(f"{where(i)}: a store writes no register; it cannot set a write barrier")
            if op.regs_written or op.regs_read:
                inflight.append(op)
            for r in op.regs_written:
                pending[r] = op
                alu_ready.pop(r, None)
        for b in (c.write_bar, c.read_bar):
            if b:
                bar_set[b] = t
        t_prev = t
    # the last instruction
    last = instrs[-1]
    if specs[-1].stall is None:
        controls[-1] = attrs.evolve(controls[-1], stall=_min_stall(last, lat))
    out = tuple(attrs.evolve(instr, control=c) for instr, c in zip(instrs, controls))
    return attrs.evolve(kernel, instructions=out)


def _finish(op, inflight, done):
    """Mark ``op`` (and, issue order, every earlier op of its queue) done or released."""
    for other in inflight:
        if other.queue == op.queue and other.index <= op.index:
            other.released = True
            if done:
                other.done = True


def loop_bounds(kernel: ins.Kernel):
    """(first, last) instruction index of the main loop: the longest backward-branch range."""
    best = None
    for i, instr in enumerate(kernel.instructions):
        if instr.unit == "branch" and instr.opcode == "BRA" and 0 <= instr.target <= i:
            if best is None or i - instr.target > best[1] - best[0]:
                best = (instr.target, i)
    return best


def issue_cycles(instructions) -> int:
    """Issue slots of a straight run of instructions: each instruction takes one, except the
    second of a dual-issued pair (the one after a stall-0 instruction)."""
    n = 0
    prev_stall = 1
    for instr in instructions:
        if prev_stall != 0:
            n += 1
        prev_stall = instr.control.stall
    return n
