"""Control codes for a decoded instruction list: an in-order filler and checker.

Each instruction comes with a :class:`Spec`: its text, plus whichever control fields the writer
fixed (the SGEMM generator fixes all of its main loop's and only the dependency-barrier numbers of
its prologue and epilogue; the source-language assembler, :mod:`maxsim.asm.assemble`, fixes the
fields of every instruction written with a control field and leaves all fields of the others open).
:func:`assign_controls` walks the decoded kernel in program order and

- fills every field left open: the *write barrier* of a variable-latency producer (S2R, LDS, TLD,
  LDG: a free one of the six, see :func:`_pick_barrier`), the *wait mask* (the barriers of the variable-latency producers whose
  registers the instruction reads or overwrites, and of the memory ops that still hold a register it
  overwrites), the *stall count* of the previous instruction (just enough cycles for each fixed
  latency, 0 to dual-issue a pair :func:`maxsim.isa.issue.can_dual_issue` allows) and the yield
  flag (set on stalls the config says need it);
- checks every fixed field against the same rules, raising :class:`ControlError` on a hazard the
  fixed codes leave open, so a hand-placed loop is verified as it is assembled (``strict=False``
  keeps the fixed fields as written instead: the assembler keeps a writer's control codes and
  reports their hazards as warnings through :func:`maxsim.analysis.controls.check_controls`).

The rules themselves (fixed latencies, barriers, memory-operand holds, the in-order-queue and
BAR.SYNC assumptions taken from maxas's kernels, minimum stalls, dual issue) live in
:mod:`maxsim.analysis.controls`, whose :class:`~maxsim.analysis.controls.ControlState` this
scheduler drives one instruction at a time; ``maxsim analyze`` checks any kernel with the same rules
(:func:`maxsim.analysis.controls.check_controls`), so a generated kernel checks clean by
construction. Scheduler-only choices: an open stall is the least that satisfies every latency (0 to
dual-issue when nothing is pending, else at least 1), an open yield flag is set on stalls of
``sm.yield_stall_threshold`` or more, an open wait mask is exactly the barriers needed (plus the
Spec's ``extra_wait``), an open read barrier is none unless a register the op reads is overwritten
soon (:func:`_overwritten_soon`), and a store may not set a write barrier.

The timeline is the straight program order (a backward branch is taken as not taken): hazards that
wrap around a loop are the generator's business (its loop body is symmetric); ``check_controls``
also walks each loop's wrap-around, and the timing model checks the whole run dynamically.
"""

from __future__ import annotations

import attrs

from maxsim.analysis.controls import QUEUE, REGISTER_QUEUES, VARIABLE_WRITERS, ControlState, min_stall
from maxsim.arch.config import load_config
from maxsim.errors import MaxsimError
from maxsim.isa import instruction as ins


class ControlError(MaxsimError):
    """Control codes that leave a hazard open (or cannot be chosen to close it)."""


@attrs.frozen
class Spec:
    """One instruction as the generator writes it. ``None`` fields are chosen by the scheduler."""

    text: str  # opcode and operands, without ';'
    pred: str = ""  # guard, e.g. "@P0" or "@!P0"
    wait: int | None = None  # wait mask; None: derived from the registers (plus extra_wait)
    extra_wait: int = 0  # barriers to wait on besides the derived ones (ordering, not registers)
    read_bar: int | None = 0  # None: chosen (none)
    write_bar: int | None = 0  # None: chosen (a free barrier for a variable-latency producer)
    yield_: bool | None = None
    stall: int | None = None

    def line(self) -> str:
        """The instruction as a maxas text line, open fields printed with neutral placeholders."""
        wait = self.wait if self.wait is not None else self.extra_wait
        ctrl = "{}:{}:{}:{}:{:x}".format(f"{wait:02x}" if wait else "--", self.read_bar or "-",
                                         self.write_bar or "-", "Y" if self.yield_ else "-",
                                         1 if self.stall is None else self.stall)
        return f"{ctrl} {self.pred:>4} {self.text};"


def _pick_barrier(st: ControlState, preferred) -> int:
    """A dependency barrier for a new variable-latency producer: the first of ``preferred`` that no
    op still in flight sets; if all six are busy, the one whose last setter issued longest ago (a
    wait on it then also waits for that older op, which has most likely finished)."""
    busy = {b for op in st.inflight if not op.done for b in (op.write_bar, op.read_bar) if b}
    for b in preferred:
        if b not in busy:
            return b
    return min(preferred, key=lambda b: st.bar_set.get(b, (-1, -1))[0])


def _overwritten_soon(instrs, i, window) -> bool:
    """Whether an instruction of another queue overwrites a source register of memory op ``i``
    within the next ``window`` instructions (it would wait out the op's register reads by stalls,
    more than one stall count holds, without a read barrier to wait on)."""
    op = instrs[i]
    queue = QUEUE.get(op.unit)
    if queue is None or queue in REGISTER_QUEUES or not op.src_regs:
        return False
    src = set(op.src_regs)
    for later in instrs[i + 1:i + 1 + window]:
        if QUEUE.get(later.unit) != queue and src & set(later.dst_regs):
            return True
        if later.unit in ("branch", "exit"):
            return False
    return False


def assign_controls(kernel: ins.Kernel, specs, cfg=None, strict: bool = True) -> ins.Kernel:
    """Return ``kernel`` with the open control fields of ``specs`` (one per instruction) chosen.

    ``strict``: a hazard left open by fixed fields raises :class:`ControlError`; otherwise the
    fixed fields are kept as they are (the caller reports their hazards)."""
    cfg = cfg if cfg is not None else load_config()
    lat, sm = cfg.latency, cfg.sm
    instrs = list(kernel.instructions)
    if len(specs) != len(instrs):
        raise ValueError("one Spec per instruction expected")
    controls = [i.control for i in instrs]
    st = ControlState(instrs, cfg)
    # open barriers go first to those no fixed field of the kernel names
    fixed_bars = {b for s in specs for b in (s.read_bar, s.write_bar) if b}
    fixed_bars |= {b for s in specs if s.wait for b in range(1, 7) if s.wait >> (b - 1) & 1}
    preferred = [b for b in range(1, 7) if b not in fixed_bars] + sorted(fixed_bars)

    def fail(i, hazard):
        if strict:
            raise ControlError(f"{instrs[i].where}: {hazard.message}")

    for i, (instr, spec) in enumerate(zip(instrs, specs)):
        if spec.write_bar is None or spec.read_bar is None:
            wb = controls[i].write_bar if spec.write_bar is not None else (
                _pick_barrier(st, preferred) if instr.unit in VARIABLE_WRITERS and instr.dst_regs else 0)
            rb = controls[i].read_bar if spec.read_bar is not None else (
                _pick_barrier(st, preferred) if _overwritten_soon(instrs, i, lat.read_barrier_release) else 0)
            controls[i] = attrs.evolve(controls[i], write_bar=wb, read_bar=rb)
        needs, earliest = st.needs(instr)
        need_mask = sum(1 << (b - 1) for b in {n.barrier for n in needs if n.barrier}) | spec.extra_wait
        wait = need_mask if spec.wait is None else spec.wait
        missing = [n for n in needs if n.barrier == 0 or not wait >> (n.barrier - 1) & 1]
        earliest = earliest + st.timings(instr, wait)
        # issue time
        if st.t_prev is None:
            t = 0
        else:
            t_prev = st.t_prev
            ps = specs[i - 1]
            if ps.stall is None:
                can_dual = st.can_dual(instr)
                t = t_prev + (0 if can_dual else min_stall(instrs[i - 1], lat))
                if can_dual and any(x.earliest > t_prev for x in earliest):
                    t = t_prev + 1
                t = max([t] + [x.earliest for x in earliest])
                stall = t - t_prev
                if stall > sm.max_stall and not strict:  # the fixed fields leave it open: checked later
                    stall = sm.max_stall
                    t = t_prev + stall
                elif stall > sm.max_stall:
                    raise ControlError(f"{instrs[i - 1].where} ({instrs[i - 1].full_opcode}): needs a stall of "
                                       f"{stall} cycles (max {sm.max_stall})")
                y = ps.yield_ if ps.yield_ is not None else stall >= sm.yield_stall_threshold
                controls[i - 1] = attrs.evolve(controls[i - 1], stall=stall, yield_=y)
            else:
                t = t_prev + controls[i - 1].stall
        for n in missing:
            fail(i, st.need_hazard(instr, n, t))
        if spec.extra_wait & ~wait and strict:
            raise ControlError(f"{instr.where} ({instr.full_opcode}): the wait mask 0x{wait:02x} leaves out "
                               f"the barriers 0x{spec.extra_wait & ~wait:02x} the design asks for")
        if i and specs[i - 1].stall is not None:
            for h in st.stall_hazards(instr, controls[i - 1].stall):
                fail(i - 1, h)
            for x in earliest:
                if t < x.earliest:
                    fail(i, st.timing_hazard(instr, x, t))
        c = controls[i] = attrs.evolve(controls[i], wait=wait)
        if instr.unit in ("sts", "stg") and c.write_bar and strict:
            raise ControlError(f"{instr.where} ({instr.full_opcode}): a store writes no register; it cannot "
                               f"set a write barrier")
        st.issue(instr, c, t)
    # the last instruction
    last = instrs[-1]
    if specs[-1].stall is None:
        controls[-1] = attrs.evolve(controls[-1], stall=min_stall(last, lat))
    out = tuple(attrs.evolve(instr, control=c) for instr, c in zip(instrs, controls))
    return attrs.evolve(kernel, instructions=out)


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
