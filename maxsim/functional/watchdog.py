"""Stopping kernels that never end: the instruction limit and loops without effect.

A functional run stops with a :class:`~maxsim.errors.SimulationError` naming file, line, CTA and
warp in two cases:

* **Instruction limit.** The launch may execute at most ``limit`` warp instructions. By default
  the limit grows with the launch: :data:`WARP_INSTRUCTION_BUDGET` per warp launched (see
  :func:`instruction_limit`). A one-warp kernel that spins forever reaches it in a few seconds.

* **A loop without effect.** When a group of warps takes a backward branch (the only way back to
  code already run, with CAL/RET covered by the same test on the branch target), the watchdog
  compares the group's state with that of its previous visit of the same branch: where it went,
  registers, predicates, carry flags, active lanes, call stack, and whether any store instruction
  of the launch executed in between. If all are equal, nothing the warps can read has changed, so the
  same iteration would repeat forever: the run stops at once. This is exact (it never stops a loop
  that would end), and conservative: a loop whose state repeats with a longer period (a predicate
  toggled every iteration) is left to the instruction limit.

The comparison costs next to nothing per iteration. The full state is copied once when a loop is
first seen and compared on the next visit (a branch to itself is caught on its second pass); the
register found to differ (a loop counter, in practice) becomes a *probe*, and from then on every
:data:`CHECK_EVERY`-th visit compares only the probe registers and the launch's store count with
those of the last comparison. Only when they are unchanged is the full state copied, and compared
with the next pass. A loop that runs for a while and then stops changing is caught within
``CHECK_EVERY + 2`` passes.
"""

from __future__ import annotations

import numpy as np

from ..errors import SimulationError
from ..memo import Kept

# choice: 400,000 warp instructions per warp. It is the limit of kernels of unknown size (a .sass
# file, the Python API): a counted micro-benchmark loop of 100,000 iterations of three instructions
# executes 300,000. One warp alone runs about 100,000-150,000 instructions per second of CPU time in
# the functional model, so a one-warp kernel that never ends stops after about three seconds of CPU
# time. SGEMM runs set a limit from the problem size instead (600 instructions per main-loop
# iteration per warp: a warp of sgemm_64 executes about 562 per iteration, 576,000 at K = 8192);
# the sampled whole-GPU prediction simulates K of at most 128 or a short window of the main loop.
WARP_INSTRUCTION_BUDGET = 400_000

# choice: the timing run of a trace of N warp instructions may take at most 100,000 + 2,000 N
# cycles. Its trace is finite (the functional run above stops first), so the limit only guards the
# timing model itself; 2,000 cycles per instruction is several times a DRAM round trip (the
# slowest single instruction) with every instruction waiting alone.
CYCLE_BASE = 100_000
CYCLES_PER_WARP_INSTRUCTION = 2_000

# choice: the probe registers are compared every 16th pass of a backward branch (a pass costs a
# dict look-up and a counter then); when they are unchanged the full state is copied and compared
# with the very next pass. A loop that stops changing is therefore caught within 18 passes of it.
CHECK_EVERY = 16

STORE_UNITS = ("sts", "stg")  # timing classes of the instructions that write memory


def instruction_limit(warps: int, max_instructions=None) -> int:
    """The launch's limit of warp instructions: ``max_instructions`` if given, else
    :data:`WARP_INSTRUCTION_BUDGET` for each of the ``warps`` the launch runs."""
    if max_instructions is not None:
        return int(max_instructions)
    return WARP_INSTRUCTION_BUDGET * max(1, int(warps))


def cycle_limit(warp_instructions: int, max_cycles=None) -> int:
    """The timing run's limit of cycles: ``max_cycles`` if given, else
    :data:`CYCLE_BASE` + :data:`CYCLES_PER_WARP_INSTRUCTION` per warp instruction of its trace."""
    if max_cycles is not None:
        return int(max_cycles)
    return CYCLE_BASE + CYCLES_PER_WARP_INSTRUCTION * max(0, int(warp_instructions))


def pc_address(index: int) -> int:
    """Byte address of instruction ``index`` in Maxwell code: each 32-byte bundle holds a control
    word and three instructions, so the first instruction is at 0x0008 (as in cuobjdump)."""
    return (index // 3) * 32 + 8 + (index % 3) * 8


def instruction_text(instr) -> str:
    """The instruction as written, without its control field: ``@P0 BRA LOOP``."""
    from ..sass.printer import format_instruction
    text = format_instruction(instr)
    return text.split(None, 1)[1].strip().rstrip(";").strip() if " " in text else text


def warp_where(instr, g) -> str:
    """``file:line: warp W of CTA (x,y,0)`` for the first warp of group ``g`` at ``instr``."""
    others = g.warps.size - 1
    tail = f" (and {others} other warp{'s' if others != 1 else ''} in step with it)" if others else ""
    return (f"{instr.where}: warp {int(g.tid[0]) // 32} of CTA ({int(g.ctaid_x[0])},{int(g.ctaid_y[0])},0)"
            f"{tail}")


class _Loop:
    """What the watchdog remembers of one group at one backward branch."""

    __slots__ = ("group", "warps", "dest", "probe", "values", "stores", "snapshot", "skip")

    def __init__(self, g):
        self.group = g  # the group object last seen here (groups are rebuilt at barriers and splits)
        self.warps = g.warps
        self.dest = g.pc  # where the branch went (a RET goes back to where it was called from)
        self.probe = ()  # register rows compared at every visit
        self.values = b""  # their contents at the previous visit
        self.stores = 0  # the launch's store executions at the previous visit
        self.snapshot = None  # full state at the previous visit, when the probes did not change
        self.skip = 0  # visits left before the next comparison


_STORES = Kept(64)  # id(a kernel's instructions) -> the pcs of its stores


def _store_pcs(instrs):
    """The pcs of the instructions that store (read-only; found once per kernel)."""
    def make():
        pcs = np.array([i.index for i in instrs if i.unit in STORE_UNITS], dtype=np.int64)
        pcs.flags.writeable = False
        return pcs
    return _STORES.get(id(instrs), make, owner=instrs)


class Watchdog:
    """Detects loops without effect in one launch (see the module docstring).

    ``counts``: the launch's executions of each static instruction (the executor's per-pc
    counters), read to know whether a store executed between two visits; ``limit``: the
    launch's instruction limit (:func:`instruction_limit`) for ``warps`` warps, ``given`` when the
    caller chose it.
    """

    def __init__(self, kernel, counts, limit, warps, given=False):
        self.kernel = kernel
        self.counts = counts
        self.limit = limit
        self.warps = warps  # warps the launch runs (the default limit is per warp)
        self.given = given  # the limit was chosen by the caller
        self.store_pcs = _store_pcs(kernel.instructions)
        self.loops = {}  # (pc, first warp) -> _Loop
        self.last = {}  # pc -> the _Loop used there last (the common case: the same group again)

    def reset(self):
        """Forget every loop (a new batch of CTAs starts; keeps memory bounded)."""
        self.loops.clear()
        self.last.clear()

    def limit_error(self, ctx, instr, g) -> SimulationError:
        """The error of a launch past its instruction limit, at ``instr`` in group ``g``."""
        how = ("as given" if self.given else
               f"{WARP_INSTRUCTION_BUDGET} per warp x {self.warps} warp{'s' if self.warps != 1 else ''}")
        return SimulationError(ctx.where(instr, g, 0).format(
            f"kernel ran past the instruction limit of {self.limit} warp instructions ({how}) at pc "
            f"0x{pc_address(instr.index):04x} ({instruction_text(instr)}): a loop that never ends? "
            f"(--max-instructions N sets the limit)"))

    def _stores(self):
        return int(self.counts[self.store_pcs].sum()) if self.store_pcs.size else 0

    def _state(self, g, stores):
        return (g.regs.copy(), g.preds.copy(), g.cc.copy(), g.active.copy(),
                (tuple(g.stack), tuple((k, pc, m.tobytes()) for k, pc, m in g.simt)), stores)

    def back_edge(self, g, pc):
        """Group ``g`` takes the backward branch at ``pc``; raise if it loops without effect."""
        e = self.last.get(pc)
        if e is not None and e.group is g:
            e.skip -= 1
            if e.skip > 0:
                return  # the common case: a few attribute reads per pass
        else:
            key = (pc, int(g.warps[0]))
            e = self.loops.get(key)
            if e is None or e.warps.size != g.warps.size or not np.array_equal(e.warps, g.warps):
                e = self.loops[key] = _Loop(g)
                e.stores = self._stores()
                e.snapshot = self._state(g, e.stores)
                self.last[pc] = e
                return
            e.group = g
            self.last[pc] = e
            e.skip -= 1
            if e.skip > 0:
                return
        regs = g.regs
        values = b"".join([regs[r].tobytes() for r in e.probe]) if e.probe else b""
        stores = self._stores() if self.store_pcs.size else 0
        if values != e.values or stores != e.stores or g.pc != e.dest:
            e.snapshot = None
            e.dest = g.pc
            e.skip = CHECK_EVERY  # compare again CHECK_EVERY passes later
        elif e.snapshot is None:
            e.snapshot = self._state(g, stores)
            e.skip = 1  # and compare the very next pass with it
        else:
            changed = self._changed_register(e.snapshot, g, stores)
            if changed is None:
                instr = self.kernel.instructions[pc]
                raise SimulationError(
                    f"{warp_where(instr, g)} loops without effect at pc 0x{pc_address(pc):04x} "
                    f"({instruction_text(instr)}): its registers, predicates and the memory are the same "
                    f"as on its previous pass, so it would never end")
            e.snapshot = None
            e.skip = CHECK_EVERY
            if changed >= 0:
                e.probe = (e.probe + (changed,))[-4:]
                values = b"".join([regs[r].tobytes() for r in e.probe])
        e.values = values
        e.stores = stores

    @staticmethod
    def _changed_register(snapshot, g, stores):
        """``None`` if ``g`` is in the state ``snapshot``; else a register row that changed, or -1
        when what changed is not a register."""
        regs, preds, cc, active, stack, old_stores = snapshot
        if regs.shape != g.regs.shape:
            return -1
        rows = np.flatnonzero((regs != g.regs).any(axis=1))
        if rows.size:
            return int(rows[0])
        if (old_stores != stores or stack != (tuple(g.stack), tuple((k, pc, m.tobytes()) for k, pc, m in g.simt)) or not np.array_equal(preds, g.preds)
                or not np.array_equal(cc, g.cc) or not np.array_equal(active, g.active)):
            return -1
        return None
