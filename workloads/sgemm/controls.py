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

The rules themselves (fixed latencies, barriers, memory-operand holds, the in-order-queue and
BAR.SYNC assumptions taken from maxas's kernels, minimum stalls, dual issue) live in
:mod:`maxsim.analysis.controls`, whose :class:`~maxsim.analysis.controls.ControlState` this
scheduler drives one instruction at a time; ``maxsim analyze`` checks any kernel with the same rules
(:func:`maxsim.analysis.controls.check_controls`), so a generated kernel checks clean by
construction. Scheduler-only choices: an open stall is the least that satisfies every latency (0 to
dual-issue when nothing is pending, else at least 1), an open yield flag is set on stalls of
``sm.yield_stall_threshold`` or more, an open wait mask is exactly the barriers needed (plus the
Spec's ``extra_wait``), and a store may not set a write barrier.

The timeline is the straight program order (a backward branch is taken as not taken): hazards that
wrap around a loop are the generator's business (its loop body is symmetric); ``check_controls``
also walks each loop's wrap-around, and the timing model checks the whole run dynamically.
"""

from __future__ import annotations

import attrs

from maxsim.analysis.controls import ControlState, min_stall
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


def assign_controls(kernel: ins.Kernel, specs, cfg=None) -> ins.Kernel:
    """Return ``kernel`` with the open control fields of ``specs`` (one per instruction) chosen."""
    cfg = cfg if cfg is not None else load_config()
    lat, sm = cfg.latency, cfg.sm
    instrs = list(kernel.instructions)
    if len(specs) != len(instrs):
        raise ValueError("one Spec per instruction expected")
    controls = [i.control for i in instrs]
    st = ControlState(instrs, cfg)

    def fail(i, hazard):
        raise ControlError(f"{instrs[i].where}: {hazard.message}")

    for i, (instr, spec) in enumerate(zip(instrs, specs)):
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
                if stall > sm.max_stall:
                    raise ControlError(f"{instrs[i - 1].where} ({instrs[i - 1].full_opcode}): needs a stall of "
                                       f"{stall} cycles (max {sm.max_stall})")
                y = ps.yield_ if ps.yield_ is not None else stall >= sm.yield_stall_threshold
                controls[i - 1] = attrs.evolve(controls[i - 1], stall=stall, yield_=y)
            else:
                t = t_prev + controls[i - 1].stall
        for n in missing:
            fail(i, st.need_hazard(instr, n, t))
        if spec.extra_wait & ~wait:
            raise ControlError(f"{instr.where} ({instr.full_opcode}): the wait mask 0x{wait:02x} leaves out "
                               f"the barriers 0x{spec.extra_wait & ~wait:02x} the design asks for")
        if i and specs[i - 1].stall is not None:
            for h in st.stall_hazards(instr, controls[i - 1].stall):
                fail(i - 1, h)
            for x in earliest:
                if t < x.earliest:
                    fail(i, st.timing_hazard(instr, x, t))
        c = controls[i] = attrs.evolve(controls[i], wait=wait)
        if instr.unit in ("sts", "stg") and c.write_bar:
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
