"""Global and shared atomics (ATOM, RED, ATOMS) and the 8/16-bit global loads and stores.

Functional order of atomics: the lanes of one warp instruction apply their operations one after
the other in lane order (warp by warp in the group's order, which is the order the warps issue
in); ATOM returns to each lane the value its own operation found. The order among the lanes of a
warp is not documented by NVIDIA; any order gives the same final value for the commutative
operations (ADD, MIN, MAX, AND, OR, XOR, INC and DEC with the same bound) and only the values
returned and EXCH / CAS results depend on it.

Timing classes (maxsim.isa.opcodes): ATOMS is shared-memory work whose wavefronts count the
serialisation of lanes on one address (maxsim.timing.summaries, kind "atoms"); ATOM is timed as
a global load and RED as a global store (their sectors); the serialisation of global atomics at
the L2 is not modelled.
"""

from __future__ import annotations

import numpy as np

from ..errors import SimulationError
from ..isa import instruction as ins
from ..isa.opcodes import memory_bytes
from .operands import U32, address_reader, high_word, reader_u32, writer
from .memory import GLOBAL_BASE


def _step(op, typ, old, v, v2):
    """One atomic operation on uint32 arrays: the new values (``old`` the values found)."""
    if op == "ADD":
        if typ == "F32":
            return (old.view(np.float32) + v.view(np.float32)).astype(np.float32).view(np.uint32)
        return old + v
    if op in ("MIN", "MAX"):
        view = np.int32 if typ == "S32" else np.uint32
        f = np.minimum if op == "MIN" else np.maximum
        return f(old.view(view), v.view(view)).view(np.uint32)
    if op == "INC":
        return np.where(old >= v, U32(0), old + U32(1))
    if op == "DEC":
        return np.where((old == 0) | (old > v), v, old - U32(1))
    if op == "AND":
        return old & v
    if op == "OR":
        return old | v
    if op == "XOR":
        return old ^ v
    if op == "EXCH":
        return v.copy()
    return np.where(old == v, v2, old)  # CAS: compare with v, swap in v2


_UFUNC_AT = {"AND": np.bitwise_and, "OR": np.bitwise_or, "XOR": np.bitwise_xor}


def apply_atomics(store, idx, op, typ, v1, v2, want_old):
    """Apply the operations of lanes ``idx`` (word indices into ``store``, in lane order) one after
    the other; return the value each lane found (None unless ``want_old``).

    Vectorised: integer ADD by prefix sums over the lanes of each address; the operations whose
    order does not matter and whose found values are not wanted by ``ufunc.at``; the others in
    rounds, one lane per address per round (the rounds follow lane order)."""
    v1 = np.asarray(v1, dtype=np.uint32)
    v2 = np.asarray(v2, dtype=np.uint32)
    if not idx.size:
        return np.zeros(0, np.uint32) if want_old else None
    order = np.argsort(idx, kind="stable")  # lane order within each address
    sidx = idx[order]
    start = np.ones(sidx.size, dtype=bool)
    start[1:] = sidx[1:] != sidx[:-1]
    if op == "ADD" and typ != "F32":
        sv = v1[order].astype(np.uint64)
        incl = np.cumsum(sv)
        first = np.flatnonzero(start)
        group = np.cumsum(start) - 1
        base = incl[first] - sv[first]  # the running sum before each address's first lane
        excl = incl - sv - base[group]
        init = store[sidx[first]].astype(np.uint64)
        old_sorted = ((init[group] + excl) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        last = np.append(first[1:], sidx.size) - 1
        store[sidx[first]] = ((init + incl[last] - base) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        if not want_old:
            return None
        old = np.empty(idx.size, dtype=np.uint32)
        old[order] = old_sorted
        return old
    if not want_old and op in ("MIN", "MAX", "AND", "OR", "XOR") and typ != "F32":
        if op in _UFUNC_AT:
            _UFUNC_AT[op].at(store, idx, v1)
        else:
            view = np.int32 if typ == "S32" else np.uint32
            (np.minimum if op == "MIN" else np.maximum).at(store.view(view), idx, v1.view(view))
        return None
    rank = np.arange(sidx.size) - np.maximum.accumulate(np.where(start, np.arange(sidx.size), 0))
    old = np.empty(idx.size, dtype=np.uint32)
    for r in range(int(rank.max()) + 1):
        lanes = order[rank == r]  # at most one lane per address
        at = idx[lanes]
        found = store[at]
        old[lanes] = found
        store[at] = _step(op, typ, found, v1[lanes], v2[lanes])
    return old if want_old else None


def atomic(ctx, instr, ops, mods, zrow, values=True):
    opc = instr.opcode
    kind = next(x for x in mods if x in ("ADD", "MIN", "MAX", "INC", "DEC", "AND", "OR", "XOR", "EXCH", "CAS"))
    typ = next((x for x in mods if x in ("U32", "S32", "F32")), "U32")
    if typ == "F32" and kind != "ADD":
        raise SimulationError(f"{instr.where}: {instr.full_opcode}: only ADD has an F32 form")
    shared = opc == "ATOMS"
    ret = opc != "RED"
    mem_op = ops[1] if ret else ops[0]
    srcs = ops[2:] if ret else ops[1:]
    if kind == "CAS" and len(srcs) != 2:
        raise SimulationError(f"{instr.where}: {instr.full_opcode} takes d, [a], compare, value")
    if kind != "CAS" and len(srcs) != 1:
        raise SimulationError(f"{instr.where}: {instr.full_opcode} takes one value operand")
    addr_of = address_reader(ctx, instr, mem_op, zrow)
    high_of = high_word(instr, mem_op, zrow)
    v1 = reader_u32(ctx, instr, srcs[0], zrow)
    v2 = reader_u32(ctx, instr, srcs[1], zrow) if kind == "CAS" else None
    write = writer(ops[0].reg, zrow) if ret else None
    what = "shared" if shared else "global"
    rec_kind = "atoms" if shared else ("ldg" if ret else "stg")

    def run(g, m):
        sel = m if m is not None else (None if g.full else g.active)
        addr = np.asarray(addr_of(g), dtype=np.uint32)
        lo, hi = (0, ctx.kernel.shared_size) if shared else (GLOBAL_BASE, ctx.memory.top)
        _check(ctx, instr, g, addr, sel, lo, hi, 4, high_of, f"{what} atomic")
        if ctx.recorder is not None:
            ctx.recorder.memory(rec_kind, g, addr, sel, 4)
        if not values:
            return
        store = ctx.shared if shared else ctx.memory.words
        idx = (addr >> U32(2)).astype(np.int64)
        if shared:
            idx = idx + g.shbase
        lanes = np.flatnonzero(sel) if sel is not None else np.arange(addr.size)
        a1 = np.broadcast_to(np.asarray(v1(g), dtype=np.uint32), addr.shape)[lanes]
        a2 = np.broadcast_to(np.asarray(v2(g), dtype=np.uint32), addr.shape)[lanes] if v2 is not None else a1
        found = apply_atomics(store, idx[lanes], kind, typ, a1, a2, ret)
        if ret:
            old = np.zeros(addr.size, dtype=np.uint32)
            old[lanes] = found
            write(g, old, m)
    return run


def _check(ctx, instr, g, addr, sel, lo, hi, nbytes, high_of, what):
    """Stop the run at a lane of ``sel`` whose ``nbytes`` access at ``addr`` is misaligned, outside
    [lo, hi) or above the 32-bit address space."""
    bad = ((addr & U32(nbytes - 1)) != 0) | (addr < U32(lo)) | (addr.astype(np.int64) > hi - nbytes)
    if high_of is not None:
        bad |= high_of(g, addr) != 0
    if sel is not None:
        bad &= sel
    if bad.any():
        ctx.fail(instr, g, bad, lambda pos: (
            f"out-of-bounds or misaligned {what} at address 0x{int(addr[pos]):x}; valid range "
            f"[0x{lo:x}, 0x{hi:x})"))


def subword(ctx, instr, ops, mods, zrow, values=True):
    """LDG/STG/LD/ST .U8/.S8/.U16/.S16: one register holds the zero- or sign-extended value."""
    nbytes = memory_bytes(mods)
    signed = any(x in ("S8", "S16") for x in mods)
    load = instr.opcode in ("LDG", "LD")
    mem_op, data_op = (ops[1], ops[0]) if load else (ops[0], ops[1])
    addr_of = address_reader(ctx, instr, mem_op, zrow)
    high_of = high_word(instr, mem_op, zrow)
    dtype = {1: np.uint8, 2: np.uint16}[nbytes]
    sdtype = {1: np.int8, 2: np.int16}[nbytes]
    write = writer(data_op.reg, zrow) if load else None
    src = data_op.reg if data_op.reg != ins.RZ else zrow

    def run(g, m):
        sel = m if m is not None else (None if g.full else g.active)
        addr = np.asarray(addr_of(g), dtype=np.uint32)
        _check(ctx, instr, g, addr, sel, GLOBAL_BASE, ctx.memory.top, nbytes, high_of,
               f"{nbytes}-byte global access")
        if ctx.recorder is not None:
            ctx.recorder.memory("ldg" if load else "stg", g, addr, sel, nbytes)
        if not values:
            return
        view = ctx.memory.words.view(dtype)
        at = (addr // U32(nbytes)).astype(np.int64)
        lanes = sel if sel is not None else slice(None)
        if load:
            vals = np.zeros(addr.size, dtype=np.uint32)
            raw = view[at[lanes]]
            vals[lanes] = raw.view(sdtype).astype(np.int32).view(np.uint32) if signed else raw.astype(np.uint32)
            write(g, vals, m)
        else:
            # lanes storing to one address: the last in lane order wins
            view[at[lanes]] = g.regs[src][lanes].astype(dtype)
    return run
