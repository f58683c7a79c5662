"""Set operand-reuse flags on any decoded kernel, by the rule the maxas assembler uses.

:func:`set_reuse_flags` derives every ``.reuse`` flag from the instruction stream alone; flags
already present are discarded first, so the pass is idempotent and a kernel written without flags
gets the same flags as one written with them.

The rule
========

Each ALU instruction (timing class ``alu`` or ``alu_half``: FFMA, FMUL, IADD, XMAD, LOP, shifts,
compares, SEL ...) reads up to three source *slots* (:attr:`Instruction.slot_regs`). For each slot
the pass keeps a small table of *candidates*: registers recently read in that slot, each with the
index of the instruction that last read it there. Walking the kernel in program order:

1. An instruction that writes registers removes them from the candidate tables of every slot (the
   value that could be cached is gone). Any instruction counts, ALU or memory, predicated or not.
2. A control transfer (``BRA``, ``CAL``, ``RET``, ``EXIT``) empties every table; so does a label
   (a branch target), when ``clear_at_labels`` is set (the default), because control can arrive
   there with caches the fall-through path did not fill.
3. For an ALU instruction, each slot holding a register ``r`` (not ``RZ``, and not the register the
   instruction itself writes):

   - if ``r`` is a candidate of that slot, the instruction that last read ``r`` there gets the
     ``.reuse`` flag on that slot (it keeps the value in the slot's reuse cache for this one);
   - otherwise, if the table already holds ``entries`` candidates, the least recently read one
     is forgotten;
   - ``r`` becomes (or stays) a candidate, now last read by this instruction.

With ``entries=1`` this is the simple rule "flag a slot when the next reader of that slot reads the
same register, with no write or branch in between". maxas tracks more: its ``Assemble`` step in
``lib/MaxAs/MaxAs.pm`` forgets the oldest candidate only once a slot's table holds more than two
entries, so up to three candidates live per slot (the reuse cache itself holds 2 registers, 8 bytes,
per slot per the maxas wiki "SGEMM" page). ``entries=3`` (the default) reproduces every flag of
maxas's ``sgemm_final_64.sass`` (851 flags) and ``sgemm_final_128.sass`` (844) exactly, from the
instructions alone (``tests/test_reuse_flags.py`` checks it when those files are saved locally).
Fewer candidates miss flags: ``entries=1`` the ``R72.reuse`` of ``FFMA R1, R66.reuse, R72.reuse, R1``
(R73 passes through slot 1 before R72 is read there again), ``entries=2`` the ``R2.reuse`` of the
prologue's ``SHR.U32 R1, R2.reuse, 0x2`` (three other registers pass through slot 0 before
``IADD R121, R2, R2``).
maxas itself does not clear at labels; in the maxas SGEMM kernels no flag crosses a label either
way. Three candidates are one more than the cache holds, so a flag can ask to keep a value that a
2-entry cache has dropped by the time it is read again: flags are requests; which reads actually
hit is the register-file model's business (:mod:`maxsim.analysis.banks`, the timing model).
"""

from __future__ import annotations

import attrs

from ..isa import instruction as ins
from ..isa.opcodes import OPCODES, spec_of

ALU_UNITS = frozenset(("alu", "alu_half"))
TRANSFER_UNITS = frozenset(("branch", "exit"))
_SLOT_KINDS = (ins.REG, ins.MEM, ins.IMM, ins.FIMM, ins.CONST)  # operand kinds that occupy a slot


def reuse_flag_masks(kernel: ins.Kernel, entries: int = 3, clear_at_labels: bool = True) -> list:
    """The reuse mask (bit n = slot n) each instruction of ``kernel`` gets under the rule above."""
    if entries < 1:
        return [0] * len(kernel.instructions)
    label_at = {i for _, i in kernel.labels}
    tables = ({}, {}, {})  # per slot: register -> index of its last reader in that slot (LRU order)
    masks = [0] * len(kernel.instructions)
    for i, instr in enumerate(kernel.instructions):
        if clear_at_labels and i in label_at:
            for t in tables:
                t.clear()
        for r in instr.dst_regs:
            for t in tables:
                t.pop(r, None)
        if instr.unit in ALU_UNITS:
            own = instr.dst_regs[0] if instr.dst_regs else -1
            for slot, r in enumerate(instr.slot_regs):
                if r < 0 or r == own:
                    continue
                t = tables[slot]
                last = t.pop(r, None)
                if last is not None:
                    masks[last] |= 1 << slot
                elif len(t) >= entries:
                    del t[next(iter(t))]  # dicts keep insertion order: the first key is the LRU one
                t[r] = i
        if instr.unit in TRANSFER_UNITS:
            for t in tables:
                t.clear()
    return masks


def with_reuse_mask(instr: ins.Instruction, mask: int) -> ins.Instruction:
    """``instr`` rebuilt so that exactly the slots in ``mask`` carry ``.reuse``."""
    n_dst = spec_of(instr).n_dst
    operands = list(instr.operands)
    slot = 1 if instr.opcode == "MOV" else 0  # MOV's source is the second slot (as the parser counts)
    changed = False
    for n in range(n_dst, len(operands)):
        op = operands[n]
        if op.kind not in _SLOT_KINDS:
            continue
        want = slot < 3 and op.kind == ins.REG and bool(mask >> slot & 1)
        if op.reuse != want:
            operands[n] = attrs.evolve(op, reuse=want)
            changed = True
        slot += 1
    if not changed and instr.reuse_mask == mask:
        return instr  # already so (instructions are immutable)
    return attrs.evolve(instr, operands=tuple(operands), reuse_mask=mask)


def set_reuse_flags(kernel: ins.Kernel, entries: int = 3, clear_at_labels: bool = True) -> ins.Kernel:
    """A copy of ``kernel`` whose ``.reuse`` flags are exactly those the rule above derives."""
    masks = reuse_flag_masks(kernel, entries, clear_at_labels)
    return attrs.evolve(kernel, instructions=tuple(
        with_reuse_mask(i, m) for i, m in zip(kernel.instructions, masks)))


def clear_reuse_flags(kernel: ins.Kernel) -> ins.Kernel:
    """A copy of ``kernel`` without any ``.reuse`` flag."""
    return attrs.evolve(kernel, instructions=tuple(with_reuse_mask(i, 0) for i in kernel.instructions))
