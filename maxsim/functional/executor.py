"""Functional execution of a decoded kernel: warps of 32 lanes stepped with numpy.

Warps that are at the same instruction run together as one *group*: every operation is one numpy
operation over all lanes of the group, however many warps and CTAs it spans. A group splits when
its warps take a branch differently and groups merge again at CTA barriers. The lanes of one warp
that disagree on a branch diverge: the warp runs one path while the other waits on its
reconvergence stack (:mod:`maxsim.functional.simt`), so a group's ``active`` mask is per lane.

Each instruction is compiled once, per launch, into a small closure that reads its operands
straight from the group's register arrays; text is never looked at again. FFMA, FMUL and FADD
become rows of a table run by the compiled kernel of :mod:`maxsim.functional.fp32` (the launch
runs a straight sequence of them as one call).

``values=False`` compiles the part of an instruction a timing-only run needs (see
:mod:`maxsim.functional.slicing`): nothing for an ALU instruction, the address check and the trace
record without the data movement for a memory instruction.
"""

from __future__ import annotations

import struct

import attrs

import numpy as np

from ..errors import SimulationError
from ..isa import instruction as ins
from . import alu
from ..isa.opcodes import IMMEDIATE_FORMS, memory_bytes
from .memory import GLOBAL_BASE, texture_index

U32 = np.uint32


# the condition code of a lane (Group.cc): the carry of IADD.CC and friends (bit 0); FSET.CC's
# zero and sign flags (bits 1, 2) with bit 3 saying they are set (BRA CC.test reads them)
CC_CARRY, CC_ZERO, CC_SIGN, CC_FLAGS = 1, 2, 4, 8


class Group:
    """Warps executing in lockstep at one pc. Arrays are per lane, warp-major (32 lanes a warp)."""

    __slots__ = ("regs", "fregs", "preds", "cc", "active", "full", "pc", "stack", "warps", "tid", "ctaid_x",
                 "ctaid_y", "cta", "shbase", "laneid", "segment", "bar_id", "pos", "thr_n", "thr_lanes", "simt")

    def init_counters(self):
        """Fresh per-group bookkeeping: float view of the registers, trace position, thread counts
        not yet added to the warps (``thr_n`` instructions over every active lane, plus the per-lane
        counts ``thr_lanes`` of guarded ones)."""
        self.fregs = self.regs.view(np.float32)
        self.segment = None
        self.bar_id = -1
        self.pos = 0
        self.thr_n = 0
        self.thr_lanes = None

    @property
    def nwarps(self):
        return self.warps.size

    def take(self, rows):
        """A new group made of the warps at positions ``rows`` of this one (state copied)."""
        lanes = (rows[:, None] * 32 + np.arange(32)).reshape(-1)
        g = Group()
        g.regs = self.regs[:, lanes]
        g.preds = self.preds[:, lanes]
        g.cc = self.cc[lanes]
        g.active = self.active[lanes]
        g.full = bool(g.active.all())
        g.pc = self.pc
        g.stack = list(self.stack)
        g.simt = [(kind, pc, mask[lanes]) for kind, pc, mask in self.simt]
        g.warps = self.warps[rows]
        for name in ("tid", "ctaid_x", "ctaid_y", "cta", "shbase", "laneid"):
            setattr(g, name, getattr(self, name)[lanes])
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
        for name in ("tid", "ctaid_x", "ctaid_y", "cta", "shbase", "laneid"):
            setattr(g, name, np.concatenate([getattr(x, name) for x in groups]))
        g.init_counters()
        return g


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


# ---------------------------------------------------------------------------------------------
# operand readers: closures g -> uint32 array or uint32 scalar

class ConstantFault(Exception):
    """A constant read outside what the launch gave for its bank: the instruction faults when a warp
    executes it (:func:`compile_instruction` turns it into an error naming CTA, warp and lane)."""


def constant_bank_fault(ctx, bank, off, nbytes):
    """Why ``nbytes`` at byte ``off`` of constant ``bank`` cannot be read (None: they can)."""
    data = ctx.bank(bank)
    where = f"c[0x{bank:x}][0x{off:x}]" if off >= 0 else f"c[0x{bank:x}][-0x{-off:x}]"
    if data is None:
        given = ", ".join(str(b) for b in sorted({0, *ctx.constants}))
        return (f"constant {where}: constant bank {bank} was not given (banks given: {given}; "
                f"maxsim.launch(..., constants={{{bank}: data}}) or --constant {bank}=FILE)")
    if off % nbytes:
        return f"constant {where}: a {nbytes}-byte constant read must be {nbytes}-byte aligned"
    if off < 0 or off + nbytes > len(data):
        return (f"constant {where} (+{nbytes} bytes) is outside constant bank {bank} "
                f"(0x{len(data):x} bytes given)")
    return None


def _const_word(ctx, instr, op):
    off = op.value
    why = constant_bank_fault(ctx, op.bank, off, 4)
    if why is not None:
        raise ConstantFault(why)
    return np.frombuffer(ctx.bank(op.bank), dtype=np.uint32, count=1, offset=off)[0]


def _reader_u32(ctx, instr, op, zrow):
    """Integer view of a source operand, with '-' (two's complement negate) and '~' applied."""
    if op.kind == ins.REG:
        r = zrow if op.reg == ins.RZ else op.reg
        if op.neg:
            return lambda g: (U32(0) - g.regs[r])
        if op.not_:
            return lambda g: ~g.regs[r]
        return lambda g: g.regs[r]
    if op.kind == ins.IMM:
        v = U32(op.value & 0xFFFFFFFF)
    elif op.kind == ins.CONST:
        v = _const_word(ctx, instr, op)
        if op.neg:
            v = U32(-int(v) & 0xFFFFFFFF)  # (numpy scalar 0 - v warns about the wrap)
    elif op.kind == ins.FIMM:
        v = np.float32(op.fvalue).view(np.uint32)
    else:
        raise SimulationError(f"{instr.where}: operand {op.kind} cannot be read as a value")
    if op.not_:
        v = ~v
    return lambda g: v


def _reader_f32(ctx, instr, op, zrow):
    """Float view of a source operand, with '-' and '|x|' applied."""
    if op.kind == ins.REG:
        r = zrow if op.reg == ins.RZ else op.reg
        if op.abs and op.neg:
            return lambda g: -np.abs(g.regs[r].view(np.float32))
        if op.abs:
            return lambda g: np.abs(g.regs[r].view(np.float32))
        if op.neg:
            return lambda g: -g.regs[r].view(np.float32)
        return lambda g: g.regs[r].view(np.float32)
    if op.kind == ins.FIMM:
        v = np.float32(op.fvalue)
    elif op.kind == ins.IMM:
        # hexadecimal immediates of float instructions are bit patterns; decimal ones are numbers
        v = U32(op.value & 0xFFFFFFFF).view(np.float32) if op.text.lstrip("-")[:2].lower() == "0x" else np.float32(op.value)
    elif op.kind == ins.CONST:
        v = _const_word(ctx, instr, op).view(np.float32)
    else:
        raise SimulationError(f"{instr.where}: operand {op.kind} cannot be read as a float")
    if op.abs:
        v = np.abs(v)
    if op.neg:
        v = -v
    v = np.float32(v)
    return lambda g: v


def _writer(dst, zrow):
    """Store a value into register ``dst`` for the lanes of mask m (None: every lane)."""
    if dst == ins.RZ:
        return lambda g, v, m: None

    def write(g, v, m):
        if m is None:
            g.regs[dst] = v
        else:
            np.copyto(g.regs[dst], np.asarray(v, dtype=np.uint32) if not isinstance(v, np.ndarray) else v.view(np.uint32), where=m)
    return write


def _fwriter(dst, zrow):
    w = _writer(dst, zrow)

    def write(g, v, m):
        w(g, np.asarray(v, dtype=np.float32).view(np.uint32), m)
    return write


# ---------------------------------------------------------------------------------------------
# compiling one instruction

CONTROL = ("BRA", "CAL", "RET", "EXIT", "BAR", "SSY", "PBK", "PCNT", "SYNC", "BRK", "CONT")
FLOAT_OPS = ("FFMA", "FMUL", "FADD", "FMUL32I", "FADD32I")
DIRECTED = frozenset(("RZ", "RM", "RP"))


def table_float(instr) -> bool:
    """Whether ``instr`` runs in an fp32 table (:mod:`fp32`): FFMA / FMUL / FADD rounding to
    nearest (the directed roundings run in :func:`floatops.directed`)."""
    return instr.opcode in FLOAT_OPS and DIRECTED.isdisjoint(instr.mods)


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
    k = ctx.kernel
    zrow = k.reg_cnt  # the always-zero row standing for RZ
    op = IMMEDIATE_FORMS.get(instr.opcode, instr.opcode)  # IADD32I is IADD with an immediate ...
    mods = instr.mods
    ops = instr.operands
    if op in ("LDG", "STG", "LD", "ST") and memory_bytes(mods) < 4:
        from .atomics import subword
        return subword(ctx, instr, ops, mods, zrow, values)
    if op in ("LDS", "STS", "LDG", "STG", "LD", "ST"):
        return _memory(ctx, instr, ops, mods, zrow, values)
    if op in ("ATOM", "RED", "ATOMS"):
        from .atomics import atomic
        return atomic(ctx, instr, ops, mods, zrow, values)
    if op == "LDC":
        return _ldc(ctx, instr, ops, mods, zrow, values)
    if op in ("DEPBAR", "MEMBAR"):
        return lambda g, m: None
    if op == "SHFL":
        from .intops import shfl
        return shfl(ctx, instr, ops, mods, zrow, values)
    if op in ("TLD", "TEX", "TLDS", "TEXS"):
        return _texture(ctx, instr, ops, mods, zrow, values)
    if op in FLOAT_OPS and not table_float(instr):
        from .floatops import directed
        fn = directed(ctx, instr, zrow)
        return fn if values else None
    if op in FLOAT_OPS:
        row, consts = float_row(ctx, instr, zrow)
        if not values:
            return None
        return _float_single(row, consts)
    fast = _ALU.get(op) or _extra().get(op)
    if fast is not None:
        fn = fast(ctx, instr, ops, mods, zrow)
        return fn if values else None
    if op in ("S2R", "CS2R"):
        fn = _s2r(ctx, instr, ops, zrow)
        return fn if values else None
    if op == "NOP":
        return lambda g, m: None
    raise SimulationError(f"{instr.where}: opcode {instr.full_opcode} has no functional model")


def float_row(ctx, instr, zrow):
    """The row of an fp32 instruction in a :mod:`fp32` table, and the constants its sources
    read: ``(row, consts)``; a constant source is ``-1 - n`` for the n-th constant (each table
    renumbers them when it concatenates rows). A write to RZ gives ``None``: nothing to do."""
    from . import fp32
    for m in instr.mods:
        if m in ("RM", "RP", "RZ"):
            raise SimulationError(f"{instr.where}: rounding mode .{m} is not modelled (only round-to-nearest)")
    ops = instr.operands
    flags = (fp32.FTZ if "FTZ" in instr.mods else 0) | (fp32.SAT if "SAT" in instr.mods else 0)
    srcs = []
    consts = []
    for n, o in enumerate(ops[1:]):
        if o.kind == ins.REG:
            srcs.append(zrow if o.reg == ins.RZ else o.reg)
            flags |= (fp32.NEG[n] if o.neg else 0) | (fp32.ABS[n] if o.abs else 0)
        else:
            consts.append(_reader_f32(ctx, instr, o, zrow)(None))
            srcs.append(-len(consts))
    while len(srcs) < 3:
        srcs.append(zrow)
    if ops[0].reg == ins.RZ:
        return None, consts
    return [fp32.OPCODES[IMMEDIATE_FORMS.get(instr.opcode, instr.opcode)], ops[0].reg, srcs[0], srcs[1], srcs[2],
            flags], consts


def float_table(rows):
    """One :mod:`fp32` table from ``(row, consts)`` pairs: ``(int64 table, float32 constants)``."""
    table, consts = [], []
    for row, cs in rows:
        if row is None:
            continue
        r = list(row)
        for n in (2, 3, 4):
            if r[n] < 0:
                r[n] = -1 - (len(consts) + (-1 - r[n]))
        consts.extend(cs)
        table.append(r)
    from . import fp32
    return (np.array(table, dtype=np.int64).reshape(-1, fp32.COLUMNS),
            np.array(consts or [0.0], dtype=np.float32))


_NO_MASK = np.zeros(1, dtype=bool)


def run_floats(table, consts):
    """``fn(g, m)`` running an :mod:`fp32` table on group g for lanes m (None: all)."""
    from . import fp32
    kernel = fp32.run
    if not len(table):
        return lambda g, m: None

    def run(g, m):
        if m is None:
            kernel(g.fregs, table, consts, _NO_MASK, False)
        else:
            kernel(g.fregs, table, consts, m, True)
    return run


def _float_single(row, consts):
    return run_floats(*float_table([(row, consts)]))


def _iadd(ctx, instr, ops, mods, zrow):
    a, b = (_reader_u32(ctx, instr, o, zrow) for o in ops[1:])
    write = _writer(ops[0].reg, zrow)
    use_x = "X" in mods
    set_cc = "CC" in mods
    if not use_x and not set_cc:
        return lambda g, m: write(g, a(g) + b(g), m)

    def run(g, m):
        x = np.asarray(a(g), dtype=np.uint64) + np.asarray(b(g), dtype=np.uint64)
        if use_x:
            x = x + (g.cc & U32(CC_CARRY))
        r = (x & 0xFFFFFFFF).astype(np.uint32)
        if set_cc:
            carry = (x >> np.uint64(32)).astype(np.uint32)
            if m is None:
                g.cc[:] = carry
            else:
                np.copyto(g.cc, np.broadcast_to(carry, g.cc.shape), where=m)
        write(g, r, m)
    return run


def _iadd3(ctx, instr, ops, mods, zrow):
    a, b, c = (_reader_u32(ctx, instr, o, zrow) for o in ops[1:])
    write = _writer(ops[0].reg, zrow)
    if "RS" in mods or "LS" in mods:  # (a + b) shifted by 16 (a 33-bit sum), then + c
        right = "RS" in mods

        def run(g, m):
            x = np.asarray(a(g), dtype=np.uint64) + np.asarray(b(g), dtype=np.uint64)
            x = (x >> np.uint64(16)) if right else (x << np.uint64(16))
            write(g, (x & np.uint64(0xFFFFFFFF)).astype(np.uint32) + c(g), m)
        return run
    return lambda g, m: write(g, a(g) + b(g) + c(g), m)


def _iscadd(ctx, instr, ops, mods, zrow):
    a, b = (_reader_u32(ctx, instr, o, zrow) for o in ops[1:3])
    s = ops[3].value
    if not 0 <= s < 32:
        raise SimulationError(f"{instr.where}: ISCADD shift {s} is out of range 0..31")
    sh = U32(s)
    write = _writer(ops[0].reg, zrow)
    if "CC" in mods:
        def run(g, m):
            x = np.asarray(a(g) << sh, dtype=np.uint64) + np.asarray(b(g), dtype=np.uint64)
            carry = (x >> np.uint64(32)).astype(np.uint32)
            if m is None:
                g.cc[:] = carry
            else:
                np.copyto(g.cc, np.broadcast_to(carry, g.cc.shape), where=m)
            write(g, (x & np.uint64(0xFFFFFFFF)).astype(np.uint32), m)
        return run
    return lambda g, m: write(g, (a(g) << sh) + b(g), m)


def _xmad(ctx, instr, ops, mods, zrow):
    a = _reader_u32(ctx, instr, attr_plain(ops[1]), zrow)
    b = _reader_u32(ctx, instr, attr_plain(ops[2]), zrow)
    c = _reader_u32(ctx, instr, ops[3], zrow)
    a_h1, b_h1 = ops[1].h1, ops[2].h1
    modset = frozenset(mods)
    types = [x for x in mods if x in ("S16", "U16")] + ["U16", "U16"]
    a_signed, b_signed = types[0] == "S16", types[1] == "S16"
    write = _writer(ops[0].reg, zrow)

    def run(g, m):
        bv = b(g)
        write(g, alu.xmad(a(g), bv, c(g), bv, a_h1, b_h1, modset, a_signed, b_signed), m)
    return run


def attr_plain(op):
    """The operand without its .H1 selector (XMAD applies the selector itself)."""
    return attrs.evolve(op, h1=False)


def _lop(ctx, instr, ops, mods, zrow):
    pred = ops[0].reg if ops[0].kind == ins.PRED else None  # LOP.AND.NZ P0, R, a, b
    if pred is not None:
        ops = ops[1:]
    a, b = (_reader_u32(ctx, instr, o, zrow) for o in ops[1:])
    write = _writer(ops[0].reg, zrow)
    kind = next((x for x in mods if x in ("AND", "OR", "XOR", "PASS_B")), "AND")
    f = {"AND": np.bitwise_and, "OR": np.bitwise_or, "XOR": np.bitwise_xor,
         "PASS_B": lambda x, y: np.broadcast_to(y, np.shape(x)) if np.ndim(x) else y}[kind]
    if pred is None:
        return lambda g, m: write(g, f(a(g), b(g)), m)
    zero = "Z" in mods
    if not zero and "NZ" not in mods:
        raise SimulationError(f"{instr.where}: {instr.full_opcode} with a predicate needs .Z or .NZ to be modelled")

    def run(g, m):
        r = np.asarray(f(a(g), b(g)), dtype=np.uint32)
        p = (r == 0) if zero else (r != 0)
        write_pred(g, pred, np.broadcast_to(p, g.preds[0].shape).copy(), m)
        write(g, r, m)
    return run


def lop3(a, b, c, lut):
    """LOP3.LUT's function of three 32-bit words: bit i of the result is bit (a_i << 2 | b_i << 1 |
    c_i) of the 8-bit table ``lut`` (PTX lop3.b32: the table of F(0xF0, 0xCC, 0xAA))."""
    a, b, c = (np.asarray(x, dtype=np.uint32) for x in (a, b, c))
    r = np.zeros(np.broadcast(a, b, c).shape, dtype=np.uint32)
    for k in range(8):
        if lut >> k & 1:
            r |= (a if k & 4 else ~a) & (b if k & 2 else ~b) & (c if k & 1 else ~c)
    return r


def _lop3(ctx, instr, ops, mods, zrow):
    """LOP3.LUT [P,] d, a, b, c, lut; with a predicate result, .Z / .NZ set it when the result is
    zero / non-zero and .T always (as LOP's)."""
    pred = ops[0].reg if ops[0].kind == ins.PRED else None
    if pred is not None:
        ops = ops[1:]
    a, b, c = (_reader_u32(ctx, instr, o, zrow) for o in ops[1:4])
    lut = ops[4].value & 0xFF
    write = _writer(ops[0].reg, zrow)
    if pred is None:
        return lambda g, m: write(g, np.broadcast_to(lop3(a(g), b(g), c(g), lut), g.tid.shape).copy(), m)
    test = next((x for x in mods if x in ("T", "Z", "NZ")), None)
    if test is None:
        raise SimulationError(f"{instr.where}: {instr.full_opcode} with a predicate needs .T, .Z or .NZ")

    def run(g, m):
        r = np.broadcast_to(lop3(a(g), b(g), c(g), lut), g.tid.shape).copy()
        p = np.ones(r.shape, bool) if test == "T" else (r == 0) if test == "Z" else (r != 0)
        write_pred(g, pred, p, m)
        write(g, r, m)
    return run


def _shf(ctx, instr, ops, mods, zrow):
    a, b, c = (_reader_u32(ctx, instr, o, zrow) for o in ops[1:])
    write = _writer(ops[0].reg, zrow)
    left, wrap = "L" in mods, "W" in mods
    if any(x in mods for x in ("S64", "S32", "HI")):
        raise SimulationError(f"{instr.where}: {instr.full_opcode} is not modelled (SHF.L/.R of the unsigned pair only)")

    def run(g, m):
        pair = (np.asarray(c(g), dtype=np.uint64) << np.uint64(32)) | np.asarray(a(g), dtype=np.uint64)
        n = np.asarray(b(g), dtype=np.uint64)
        n = n & np.uint64(31) if wrap else np.minimum(n, np.uint64(32))
        if left:
            r = ((pair << n) >> np.uint64(32)) & np.uint64(0xFFFFFFFF)
        else:
            r = (pair >> n) & np.uint64(0xFFFFFFFF)
        write(g, r.astype(np.uint32), m)
    return run


def _mov(ctx, instr, ops, mods, zrow):
    a = _reader_u32(ctx, instr, ops[1], zrow)
    write = _writer(ops[0].reg, zrow)
    return lambda g, m: write(g, a(g), m)


def _shift(ctx, instr, ops, mods, zrow):
    a, b = (_reader_u32(ctx, instr, o, zrow) for o in ops[1:])
    write = _writer(ops[0].reg, zrow)
    if instr.opcode == "SHL":
        wrap = "W" in mods
        return lambda g, m: write(g, alu.shl(a(g), b(g), wrap), m)
    signed = "U32" not in mods
    return lambda g, m: write(g, alu.shr(a(g), b(g), signed), m)


def _bfe(ctx, instr, ops, mods, zrow):
    a, b = (_reader_u32(ctx, instr, o, zrow) for o in ops[1:])
    write = _writer(ops[0].reg, zrow)
    signed = "U32" not in mods
    return lambda g, m: write(g, alu.bfe(a(g), b(g), signed), m)


def _pred_reader(op):
    p, neg = op.reg, op.not_
    if neg:
        return lambda g: ~g.preds[p]
    return lambda g: g.preds[p]


def _sel(ctx, instr, ops, mods, zrow):
    a, b = (_reader_u32(ctx, instr, o, zrow) for o in ops[1:3])
    p = _pred_reader(ops[3])
    write = _writer(ops[0].reg, zrow)
    return lambda g, m: write(g, np.where(p(g), a(g), b(g)).astype(np.uint32), m)


def _isetp(ctx, instr, ops, mods, zrow):
    cmp = next(x for x in mods if x in ("LT", "LE", "GT", "GE", "EQ", "NE"))
    bname = next((x for x in mods if x in ("AND", "OR", "XOR")), "AND")
    signed = "U32" not in mods
    a, b = (_reader_u32(ctx, instr, o, zrow) for o in ops[2:4])
    pc = _pred_reader(ops[4])
    bop = alu.boolop(bname)
    pd, pq = ops[0].reg, ops[1].reg

    def run(g, m):
        r = alu.isetp(a(g), b(g), cmp, signed)
        c = pc(g)
        write_pred(g, pd, bop(r, c), m)
        write_pred(g, pq, bop(~r, c), m)
    return run


def _iset(ctx, instr, ops, mods, zrow):
    cmp = next(x for x in mods if x in ("LT", "LE", "GT", "GE", "EQ", "NE"))
    bop = alu.boolop(next((x for x in mods if x in ("AND", "OR", "XOR")), "AND"))
    signed = "U32" not in mods
    a, b = (_reader_u32(ctx, instr, o, zrow) for o in ops[1:3])
    pc = _pred_reader(ops[3])
    true = U32(0x3F800000) if "BF" in mods else U32(0xFFFFFFFF)
    write = _writer(ops[0].reg, zrow)

    def run(g, m):
        r = bop(alu.isetp(a(g), b(g), cmp, signed), pc(g))
        write(g, np.where(r, true, U32(0)).astype(np.uint32), m)
    return run


def _icmp(ctx, instr, ops, mods, zrow):
    cmp = next(x for x in mods if x in ("LT", "LE", "GT", "GE", "EQ", "NE"))
    signed = "U32" not in mods
    a, b, c = (_reader_u32(ctx, instr, o, zrow) for o in ops[1:4])
    write = _writer(ops[0].reg, zrow)
    zero = U32(0)

    def run(g, m):
        pick = alu.isetp(c(g), zero, cmp, signed)
        write(g, np.where(pick, a(g), b(g)).astype(np.uint32), m)
    return run


def write_pred(g, dst, val, m):
    """Predicate ``dst`` := val on the lanes of mask m (None: all lanes); PT is not written."""
    if dst == ins.PT:
        return
    if m is None:
        g.preds[dst] = val
    else:
        np.copyto(g.preds[dst], np.broadcast_to(val, m.shape), where=m)


_ALU = {
    "IADD": _iadd, "IADD3": _iadd3, "ISCADD": _iscadd, "IADD32I": _iadd, "ISCADD32I": _iscadd,
    "XMAD": _xmad, "LOP": _lop, "LOP32I": _lop, "LOP3": _lop3, "MOV": _mov, "MOV32I": _mov, "SHL": _shift, "SHR": _shift,
    "BFE": _bfe, "SEL": _sel, "ISETP": _isetp, "ISET": _iset, "ICMP": _icmp, "SHF": _shf,
}


def _extra():
    from . import floatops, fp64, intops
    return {**intops.OPS, **floatops.OPS, **fp64.OPS}


def _s2r(ctx, instr, ops, zrow):
    name = ops[1].name
    write = _writer(ops[0].reg, zrow)
    # a block of (X, Y, Z) threads runs as X * Y * Z linear ones, a grid of (X, Y, Z) CTAs as (X, Y * Z):
    # the geometry words of constant bank 0 say how to split them (see launch._geometry_words)
    from .launch import geometry
    (bx, by, bz), (_, gy, _) = geometry(ctx.const_bank)
    bx, by, bz, gy = U32(bx), U32(by), U32(bz), U32(gy)
    getters = {
        "SR_TID.X": (lambda g: g.tid) if by == 1 and bz == 1 else (lambda g: g.tid % bx),
        "SR_TID.Y": lambda g: (g.tid // bx) % by,
        "SR_TID.Z": lambda g: g.tid // (bx * by),
        "SR_CTAID.X": lambda g: g.ctaid_x,
        "SR_CTAID.Y": lambda g: g.ctaid_y % gy,
        "SR_CTAID.Z": lambda g: g.ctaid_y // gy,
        "SR_LANEID": lambda g: g.laneid,
        "SR_NTID.X": lambda g: np.full_like(g.tid, bx),
        # the functional model has no clock: the timing model owns time
        "SR_CLOCKLO": lambda g: np.zeros_like(g.tid),
        "SR_CLOCKHI": lambda g: np.zeros_like(g.tid),
    }
    get = getters[name]
    return lambda g, m: write(g, get(g), m)


def _address(ctx, instr, op, zrow):
    base = zrow if op.reg == ins.RZ else op.reg
    off = U32(op.value & 0xFFFFFFFF)
    return lambda g: g.regs[base] + off


def high_word(instr, op, zrow):
    """For a .E (64-bit) address [Rn+imm]: ``fn(g, low) -> the high word`` (R(n+1) plus the carry
    of the low word's add), which the model's 32-bit global memory needs to be 0; else None."""
    if "E" not in instr.mods or op.reg == ins.RZ:
        return None
    base, off = op.reg, U32(op.value & 0xFFFFFFFF)
    # the offset is sign-extended to 64 bits: a negative one adds 0xffffffff to the high word
    borrow = U32(0xFFFFFFFF) if op.value < 0 else U32(0)
    return lambda g, low: g.regs[base + 1] + (low < g.regs[base]).astype(np.uint32) * (off != 0) + borrow


def _memory(ctx, instr, ops, mods, zrow, values=True):
    op = instr.opcode
    width = 1
    for m in mods:
        if m in ("32", "64", "128"):
            width = int(m) // 32
    nbytes = 4 * width
    load = op in ("LDS", "LDG", "LD")
    shared = op in ("LDS", "STS")
    mem_op = ops[1] if load else ops[0]
    data_op = ops[0] if load else ops[1]
    addr_of = _address(ctx, instr, mem_op, zrow)
    high_of = high_word(instr, mem_op, zrow)
    what = "shared" if shared else "global"
    offsets = np.arange(width, dtype=np.int64)
    recorder_kind = ("lds" if load else "sts") if shared else ("ldg" if load else "stg")
    from .bounds import lanes_out_of_range as out_of_range

    def check(g, m, addr):
        if shared:
            limit_lo, limit_hi = 0, ctx.kernel.shared_size
        else:
            limit_lo, limit_hi = GLOBAL_BASE, ctx.memory.top
        if high_of is None and (shared or not ctx.memory.gapped) and limit_hi - nbytes >= limit_lo:
            # every lane in range and aligned (the common case): one compiled pass
            sel = m if m is not None else (None if g.full else g.active)
            if not out_of_range(addr, limit_lo, limit_hi - nbytes, nbytes - 1,
                                _NO_MASK if sel is None else sel, sel is not None):
                return
        if limit_hi - nbytes < limit_lo:
            bad = np.ones(addr.shape, dtype=bool)
        else:
            # uint32 compares: aligned and within [lo, hi - nbytes] (nbytes is a power of two)
            bad = ((addr & U32(nbytes - 1)) != 0) | (addr < U32(limit_lo)) | (addr > U32(limit_hi - nbytes))
        if not shared and ctx.memory.gapped:
            bad |= ctx.memory.unmapped(addr, nbytes)
        if high_of is not None:
            bad |= high_of(g, addr) != 0
        if m is not None:
            bad &= m
        elif not g.full:
            bad &= g.active
        if bad.any():
            def msg(pos):
                a = int(addr[pos])
                if high_of is not None and int(high_of(g, addr)[pos]):
                    return (f"64-bit global address 0x{int(high_of(g, addr)[pos]):x}{a:08x} is beyond the "
                            f"model's 32-bit global address space")
                if a % nbytes:
                    return f"misaligned {nbytes}-byte {what} access at address 0x{a:x}"
                if not shared and ctx.memory.allocations:
                    return (f"out-of-bounds {what} access at address 0x{a:x} (+{nbytes} bytes): "
                            f"{ctx.memory.describe(a)}")
                return (f"out-of-bounds {what} access at address 0x{a:x} (+{nbytes} bytes); valid range "
                        f"[0x{limit_lo:x}, 0x{limit_hi:x})")
            ctx.fail(instr, g, bad, msg)

    def word_index(g, m, addr):
        sel = m if m is not None else (None if g.full else g.active)
        a = addr if sel is None else np.where(sel, addr, U32(limit_safe))
        idx = (a >> U32(2)).astype(np.int64)
        if shared:
            idx = idx + g.shbase
        return idx, sel

    limit_safe = 0 if shared else GLOBAL_BASE
    if not values:
        def run(g, m):
            addr = addr_of(g)
            check(g, m, addr)
            if ctx.recorder is not None:
                sel = m if m is not None else (None if g.full else g.active)
                ctx.recorder.memory(recorder_kind, g, addr, sel, nbytes)
        return run

    if load:
        dst = data_op.reg
        writes = [_writer(dst + j if dst != ins.RZ else ins.RZ, zrow) for j in range(width)]
        rows = dst != ins.RZ and dst + width <= zrow  # destination rows written in one assignment

        def run(g, m):
            addr = addr_of(g)
            check(g, m, addr)
            idx, sel = word_index(g, m, addr)
            store = ctx.shared if shared else ctx.memory.words
            if sel is None and rows:
                if width == 1:
                    g.regs[dst] = store[idx]
                else:
                    g.regs[dst:dst + width] = store[idx + offsets[:, None]]
                if ctx.recorder is not None:
                    ctx.recorder.memory(recorder_kind, g, addr, sel, nbytes)
                return
            if sel is None:
                vals = store[idx[:, None] + offsets] if width > 1 else store[idx][:, None]
            else:
                # gather only the lanes that load: the placeholder address of the others need not
                # lie in memory (no allocation yet, or a shared size below the vector width)
                vals = np.zeros((idx.size, width), dtype=np.uint32)
                vals[sel] = store[idx[sel][:, None] + offsets]
            for j in range(width):
                writes[j](g, vals[:, j], m)
            if ctx.recorder is not None:
                ctx.recorder.memory(recorder_kind, g, addr, sel, nbytes)
        return run

    src = data_op.reg

    def run(g, m):
        addr = addr_of(g)
        check(g, m, addr)
        idx, sel = word_index(g, m, addr)
        store = ctx.shared if shared else ctx.memory.words
        if src == ins.RZ:
            vals = np.zeros((width, idx.size), dtype=np.uint32)
        else:
            vals = g.regs[src:src + width]
        if sel is None:
            for j in range(width):
                store[idx + j] = vals[j]
        else:
            for j in range(width):
                store[idx[sel] + j] = vals[j][sel]
        if ctx.recorder is not None:
            ctx.recorder.memory(recorder_kind, g, addr, sel, nbytes)
    return run


_SUBWORD_DTYPE = {"U8": np.uint8, "S8": np.int8, "U16": np.uint16, "S16": np.int16}


def _ldc(ctx, instr, ops, mods, zrow, values=True):
    """LDC d, c[bank][Ra+imm]: each lane reads the constant at Ra + imm (a uniform read without Ra);
    .U8/.S8/.U16/.S16 extend a narrower value, .64/.128 fill a vector group. The trace records, per
    warp, how many distinct addresses its lanes read (the constant cache serves them one at a time)."""
    src = ops[1]
    nbytes = memory_bytes(mods)
    width = max(1, nbytes // 4)
    sub = next((_SUBWORD_DTYPE[m] for m in mods if m in _SUBWORD_DTYPE), None)
    dst = ops[0].reg
    writes = [_writer(dst + j if dst != ins.RZ else ins.RZ, zrow) for j in range(width)]
    bank = src.bank

    def extend(raw):  # raw: uint8 rows of nbytes -> width uint32 words per lane
        if sub is not None:
            return raw.view(sub).astype(np.int64).astype(np.uint32)[:, :1]
        return raw.view(np.uint32)

    if src.reg < 0:  # a uniform read: checked (and, when values are kept, read) once
        why = constant_bank_fault(ctx, bank, src.value, nbytes)
        if why is not None:
            raise ConstantFault(why)
        if not values:
            return None
        data = np.frombuffer(ctx.bank(bank), dtype=np.uint8)
        words = extend(data[src.value:src.value + nbytes].reshape(1, nbytes).copy())[0]

        def uniform(g, m):
            for j in range(width):
                writes[j](g, words[j], m)
        return uniform
    reg = zrow if src.reg == ins.RZ else src.reg
    off = U32(src.value & 0xFFFFFFFF)
    data = ctx.bank(bank)
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    cols = np.arange(nbytes, dtype=np.int64)

    def run(g, m):
        sel = m if m is not None else (None if g.full else g.active)
        addr = g.regs[reg] + off
        a = addr.astype(np.int64)
        a = np.where(a >= 1 << 31, a - (1 << 32), a)  # Ra + imm below 0 reads before the bank
        bad = (a < 0) | (a + nbytes > raw.size) | (a % nbytes != 0)
        if sel is not None:
            bad &= sel
        if bad.any():
            ctx.fail(instr, g, bad, lambda pos: constant_bank_fault(ctx, bank, int(a[pos]), nbytes))
        if ctx.recorder is not None:
            ctx.recorder.constant(g, addr, sel)
        if not values:
            return
        safe = a if sel is None else np.where(sel, a, 0)
        got = extend(raw[safe[:, None] + cols])
        for j in range(width):
            writes[j](g, got[:, j], m)
    return run


def _slot_handle(ctx, slot):
    """The texture a fetch by slot reads. The slot names the word c[0x0][4 x slot] (ptxas compiles
    tex1Dfetch on a cudaTextureObject_t parameter at 0x140 to TLDS slot 0x50: the word of the
    parameter); when that word is one of the kernel's parameters, it holds the texture's handle (a
    texture object: handle n, or 0x80000000 | n, is texture n, as for TLD.B). Otherwise (a texture
    reference, whose word the driver fills) the slot is the texture's number."""
    word = 4 * slot
    if any(p.offset <= word < p.offset + p.size for p in ctx.kernel.params) and word + 4 <= len(ctx.const_bank):
        return int(np.frombuffer(ctx.const_bank, dtype=np.uint32, count=1, offset=word)[0])
    return slot


def _texture(ctx, instr, ops, mods, zrow, values=True):
    """TLD / TEX (``.B``: the texture of the handle register; else of the slot) and TLDS / TEXS (the
    slot; channels by name, split over two destinations). TLD/TLDS read texel ``coordinate``; TEX/TEXS
    sample at a float coordinate with point filtering and unnormalised coordinates (texel
    floor(x)); an address mode of a sampled fetch is not modelled, so a coordinate outside the
    texture is an error there (TLD's border addressing reads 0)."""
    op = instr.opcode
    if op in ("TLD", "TEX"):
        dst = ops[0].reg
        coord_r = zrow if ops[1].reg == ins.RZ else ops[1].reg
        handle_r = (zrow if ops[2].reg == ins.RZ else ops[2].reg) if "B" in mods else None
        slot = ops[3].value
        mask = ops[5].value & 0xF
        outs = [(dst + j if dst != ins.RZ else ins.RZ, c) for j, c in enumerate(c for c in range(4) if mask >> c & 1)]
    else:
        from ..isa.opcodes import texture_channels
        coord_r = zrow if ops[2].reg == ins.RZ else ops[2].reg
        handle_r = None
        slot = ops[3].value
        outs = list(texture_channels(ops))
    slot_handle = _slot_handle(ctx, slot) if handle_r is None else None
    sampled = op in ("TEX", "TEXS")
    channels = [c for _, c in outs]
    writes = [_writer(r, zrow) for r, _ in outs]

    def run(g, m):
        sel = m if m is not None else (None if g.full else g.active)
        if handle_r is None:
            handles = np.full(g.tid.size, slot_handle, dtype=np.uint32)
        else:
            handles = g.regs[handle_r]
        if sampled:
            x = g.regs[coord_r].view(np.float32)
            coords = np.floor(np.where(np.isfinite(x), x, -1)).astype(np.int64)
        else:
            coords = g.regs[coord_r].view(np.int32).astype(np.int64)
        hs = np.unique(handles if sel is None else handles[sel])
        vals = np.zeros((handles.size, 4), dtype=np.uint32)
        sizes = np.zeros(handles.size, dtype=np.int64)
        bases = np.zeros(handles.size, dtype=np.int64)
        tbytes = 16  # texel bytes: an int, or an array per lane when the textures' formats differ
        for h in hs:
            tex = ctx.textures.get(texture_index(int(h)))
            if tex is None:
                bad = handles == h
                if sel is not None:
                    bad &= sel
                bound = sorted(ctx.textures)
                what = f"texture handle 0x{int(h):x}" if handle_r is not None else f"texture slot 0x{slot:x}"
                if handle_r is None and slot_handle != slot:
                    what += f" (handle 0x{slot_handle:x}, the parameter at c[0x0][0x{4 * slot:x}])"
                ctx.fail(instr, g, bad, lambda pos: f"{what} is not bound (bound textures: {bound})")
            if sampled:
                bad = (handles == h) & ((coords < 0) | (coords >= tex.size))
                if sel is not None:
                    bad &= sel
                if bad.any():
                    ctx.fail(instr, g, bad, lambda pos: (
                        f"{op} at coordinate {float(g.regs[coord_r].view(np.float32)[pos])!r} is outside the "
                        f"texture of {tex.size} texels: the address mode of a sampled fetch is not modelled"))
            if len(hs) == 1:
                sizes[:] = tex.size
                bases[:] = tex.address
                tbytes = tex.texel_bytes
                if values:
                    vals = tex.fetch(coords)
                continue
            lanes = handles == h
            sizes[lanes] = tex.size
            bases[lanes] = tex.address
            if tex.texel_bytes != 16:
                tbytes = np.where(lanes, tex.texel_bytes, tbytes)
            if values:
                vals[lanes] = tex.fetch(coords[lanes])
        if values:
            for j, ch in enumerate(channels):
                writes[j](g, vals[:, ch], m)
        if ctx.recorder is not None:
            ctx.recorder.texture(g, coords, bases, sel, sizes, tbytes)
    return run
