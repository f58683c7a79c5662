"""Functional execution of a decoded kernel: warps of 32 lanes stepped with numpy.

Warps that are at the same instruction run together as one *group*: every operation is one numpy
operation over all lanes of the group, however many warps and CTAs it spans. A group splits when
its warps take a branch differently and groups merge again at CTA barriers. The lanes of one warp
that disagree on a branch diverge: the warp runs one path while the other waits on its
reconvergence stack (:mod:`maxsim.functional.simt`), so a group's ``active`` mask is per lane.

Each instruction is compiled once, per launch, into a small closure that reads its operands
straight from the group's register arrays; text is never looked at again. The compilers live in
the op modules (:mod:`aluops`, :mod:`intops`, :mod:`floatops`, :mod:`fp64`, :mod:`memops`), each
registering its opcodes in :mod:`maxsim.functional.opcode_table`; a new opcode needs no change
here. FFMA, FMUL and FADD
become rows of a table run by the compiled kernel of :mod:`maxsim.functional.fp32` (the launch
runs a straight sequence of them as one call).

``values=False`` compiles the part of an instruction a timing-only run needs (see
:mod:`maxsim.functional.slicing`): nothing for an ALU instruction, the address check and the trace
record without the data movement for a memory instruction.
"""

from __future__ import annotations

import numpy as np

from ..errors import SimulationError
from ..isa.opcodes import IMMEDIATE_FORMS
from . import opcode_table
from .operands import ConstantFault, local_window


class Group:
    """Warps executing in lockstep at one pc. Arrays are per lane, warp-major (32 lanes a warp)."""

    __slots__ = ("regs", "fregs", "preds", "cc", "active", "full", "pc", "stack", "warps", "ids_base", "_ids",
                 "segment", "bar_id", "pos", "thr_n", "thr_lanes", "idle_n", "simt")

    # The per-lane ids (``tid``, ``ctaid_x``, ``ctaid_y``, ``cta``, ``shbase``, ``laneid``: see
    # ID_NAMES), which no instruction writes, are the batch's (``ids_base``: the first warp's id and
    # the batch's arrays) at the group's warps, gathered when first read: a group taken or merged
    # copies none of them until an instruction reads them (most groups split off at a branch never
    # do).

    def init_counters(self):
        """Fresh per-group bookkeeping: float view of the registers, trace position, thread counts
        not yet added to the warps (``thr_n`` instructions over every active lane, plus the per-lane
        counts ``thr_lanes`` of guarded ones), and ``idle_n`` instructions whose lanes not active are
        not yet added to the warps' idle lanes."""
        self.fregs = self.regs.view(np.float32)
        self.segment = None
        self.bar_id = -1
        self.pos = 0
        self.thr_n = 0
        self.thr_lanes = None
        self.idle_n = 0
        self._ids = [None] * len(ID_NAMES)

    def _lane_ids(self, k):
        """The group's lanes of the batch's per-lane id array ``k`` (of ID_NAMES): a view of the
        batch's when the group's warps are a run of its warps, in order, else gathered."""
        first, arrays = self.ids_base
        local = self.warps - first
        base = arrays[k]
        n = local.size
        lo = int(local[0]) if n else 0
        if n == 0 or (int(local[-1]) - lo + 1 == n and (n == 1 or bool((np.diff(local) == 1).all()))):
            v = base[lo * 32:(lo + n) * 32]
        else:
            v = _warp_rows(base, base.size // 32, local)
        self._ids[k] = v
        return v

    @property
    def nwarps(self):
        return self.warps.size

    def take(self, rows):
        """A new group made of the warps at positions ``rows`` of this one (state copied); ``rows``
        may be a slice of consecutive warps (copied a slice at a time)."""
        if isinstance(rows, slice):
            return self._take_run(rows.start, rows.stop)
        nw = self.warps.size
        g = Group()
        g.regs = _warp_rows(self.regs, nw, rows)
        g.preds = _warp_rows(self.preds, nw, rows)
        g.cc = _warp_rows(self.cc, nw, rows)
        g.active = _warp_rows(self.active, nw, rows)
        g.full = bool(g.active.all())
        g.pc = self.pc
        g.stack = list(self.stack)
        g.simt = [(kind, pc, _warp_rows(mask, nw, rows)) for kind, pc, mask in self.simt]
        g.warps = self.warps[rows]
        g.ids_base = self.ids_base
        g.init_counters()
        return g

    def _take_run(self, first, end):
        """:meth:`take` of warps ``first`` to ``end`` (excluded): the lanes' state copied as slices;
        the warp ids, which no instruction writes (a batch's first group holds them read-only), are
        a view of this group's."""
        lo, hi = first * 32, end * 32
        g = Group()
        g.regs = self.regs[:, lo:hi].copy()
        g.preds = self.preds[:, lo:hi].copy()
        g.cc = self.cc[lo:hi].copy()
        g.active = self.active[lo:hi].copy()
        g.full = bool(g.active.all())
        g.pc = self.pc
        g.stack = list(self.stack)
        g.simt = [(kind, pc, mask[lo:hi].copy()) for kind, pc, mask in self.simt]
        g.warps = self.warps[first:end]
        g.ids_base = self.ids_base
        g.init_counters()
        return g

    @staticmethod
    def merge(groups):
        groups = sorted(groups, key=lambda g: int(g.warps[0]))
        g = Group()
        g.regs = np.concatenate([x.regs for x in groups], axis=1)
        g.preds = np.concatenate([x.preds for x in groups], axis=1)
        g.cc = np.concatenate([x.cc for x in groups])
        g.active = np.concatenate([x.active for x in groups])
        g.full = bool(g.active.all())
        g.pc = groups[0].pc
        g.stack = list(groups[0].stack)
        # (the caller merges only groups whose reconvergence stacks have the same entries)
        g.simt = [(kind, pc, np.concatenate([x.simt[n][2] for x in groups]))
                  for n, (kind, pc, _) in enumerate(groups[0].simt)]
        g.warps = np.concatenate([x.warps for x in groups])
        g.ids_base = groups[0].ids_base
        g.init_counters()
        return g


ID_NAMES = ("tid", "ctaid_x", "ctaid_y", "cta", "shbase", "laneid")


def _lane_id(k):
    def get(self):
        v = self._ids[k]
        return v if v is not None else self._lane_ids(k)
    return property(get, doc=f"The lanes' {ID_NAMES[k]} (read-only; see Group.ids_base).")


for _k, _name in enumerate(ID_NAMES):
    setattr(Group, _name, _lane_id(_k))


def _warp_rows(a, nw, rows):
    """The lanes of warps ``rows`` (of ``nw``) of a per-lane array (lanes along its last axis), in
    that order: gathered a warp's 32 lanes at a time (a copy of whole rows of an array viewed as
    (..., warps, 32), several times faster than gathering lane by lane)."""
    lead = a.shape[:-1]
    return a.reshape(lead + (nw, 32)).take(rows, axis=len(lead)).reshape(lead + (-1,))


class Context:
    """What every instruction of one launch may touch besides the group: memories and tables."""

    def __init__(self, kernel, const_bank, shared_words, nctas, memory, textures, block, grid, constants=None):
        self.kernel = kernel
        self.const_bank = const_bank  # bytes of constant bank 0
        # bank (1-17) -> bytes given for it: the kernel image's banks (a cubin's .nv.constantN
        # sections, Kernel.banks), overridden bank by bank by the launch's
        self.constants = {**dict(getattr(kernel, "banks", None) or {}), **dict(constants or {})}
        self.shared_words = shared_words
        self.shared = np.zeros(max(1, nctas * shared_words), dtype=np.uint32)
        self.memory = memory
        self.textures = textures
        self.block = block
        self.grid = grid
        self.recorder = None
        self.watchdog = None  # maxsim.functional.watchdog.Watchdog: instruction limit, loops without effect
        # BAR.RED reductions by CTA (batch-local number): (count, all, any, mode) being gathered
        # until the barrier releases, then the result B2R.RESULT reads
        self.bar_pending = {}
        self.bar_result = {}
        # local memory: bytes per thread (the window LDL / STL address, from 0 to the stack pointer
        # c[0x0][0x20]) and, per batch, the words of every lane (lane after lane)
        self.local_bytes = local_window(kernel)
        self.local = np.zeros(0, dtype=np.uint32)

    def bank(self, bank):
        """The bytes given for constant bank ``bank`` (None: not given)."""
        return self.const_bank if bank == 0 else self.constants.get(bank)

    def where(self, instr, g, lane_pos):
        """Name the CTA, warp and lane of group lane ``lane_pos`` for an error message."""
        t = int(g.tid[lane_pos])
        return (f"{instr.where}: {{}} (CTA ({int(g.ctaid_x[lane_pos])},{int(g.ctaid_y[lane_pos])}), "
                f"warp {t // 32}, lane {t % 32})")

    def fail(self, instr, g, bad, message):
        pos = int(np.flatnonzero(bad)[0])
        raise SimulationError(self.where(instr, g, pos).format(message(pos)))


# the op modules: importing them registers their opcodes in the table
from . import aluops, floatops, fp64, intops, memops  # noqa: F401,E402

CONTROL = ("BRA", "CAL", "RET", "EXIT", "BAR", "SSY", "PBK", "PCNT", "SYNC", "BRK", "CONT")


def compile_instruction(ctx, instr, values=True):
    """Return ``fn(g, m)`` executing ``instr`` on group g for lanes m (None: all), or None when
    there is nothing to run (an ALU instruction with ``values=False``).

    With ``values=False`` a memory instruction checks its addresses and records them in the trace
    but moves no data (see :mod:`maxsim.functional.slicing`). An instruction that reads a constant
    the launch did not give faults when a warp executes it (``fn.fault`` is then set)."""
    try:
        return _compile(ctx, instr, values)
    except ConstantFault as e:
        why = str(e)

        def fault(g, m):
            sel = m if m is not None else (np.ones(g.tid.size, dtype=bool) if g.full else g.active)
            if sel.any():
                ctx.fail(instr, g, sel, lambda pos: why)
        fault.fault = True
        return fault


def _compile(ctx, instr, values):
    """The opcode's handler from :mod:`maxsim.functional.opcode_table` (an immediate form such as
    IADD32I is its register form's opcode). A handler registered with ``values=True`` decides
    itself what a timing-only run keeps; the others (ALU work) compile, so their operands are
    checked, and give nothing to run."""
    zrow = ctx.kernel.reg_cnt  # the always-zero row standing for RZ
    handler = opcode_table.handler(IMMEDIATE_FORMS.get(instr.opcode, instr.opcode))
    if handler is None:
        raise SimulationError(f"{instr.where}: opcode {instr.full_opcode} has no functional model")
    if handler.values:
        return handler.compile(ctx, instr, instr.operands, instr.mods, zrow, values)
    fn = handler.compile(ctx, instr, instr.operands, instr.mods, zrow)
    return fn if values else None
