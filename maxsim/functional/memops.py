"""Memory opcodes: LDS / STS / LDG / STG / LD / ST (32 to 128 bits; narrower global ones in
:mod:`maxsim.functional.atomics`), LDC, the texture fetches TLD / TEX / TLDS / TEXS, and the
orderings MEMBAR / DEPBAR (nothing to do functionally: a warp's memory operations complete in
order here).

With ``values=False`` an instruction checks its addresses and records them in the trace but moves
no data (see :mod:`maxsim.functional.slicing`).
"""

from __future__ import annotations

import numpy as np

from ..isa import instruction as ins
from ..isa.opcodes import memory_bytes
from . import access
from .atomics import atomic, subword
from .bounds import lanes_out_of_range as out_of_range
from .bounds import lanes_outside_allocations as outside_allocations
from .memory import GLOBAL_BASE, texture_index
from .opcode_table import compiles
from .operands import (NO_MASK, U32, ConstantFault, address_reader, constant_bank_fault, high_word, high_word_set,
                       writer)


@compiles("LDS", "STS", "LDG", "STG", "LD", "ST", values=True)
def _load_store(ctx, instr, ops, mods, zrow, values=True):
    if instr.opcode in ("LDG", "STG", "LD", "ST") and memory_bytes(mods) < 4:
        return subword(ctx, instr, ops, mods, zrow, values)
    return _memory(ctx, instr, ops, mods, zrow, values)


@compiles("ATOM", "RED", "ATOMS", values=True)
def _atomic(ctx, instr, ops, mods, zrow, values=True):
    return atomic(ctx, instr, ops, mods, zrow, values)


def nothing(g, m):
    """What DEPBAR, MEMBAR and NOP do to the values (a launch's straight-line steps leave it out)."""


nothing.nothing = True


@compiles("DEPBAR", "MEMBAR", "NOP", values=True)
def _nothing(ctx, instr, ops, mods, zrow, values=True):
    return nothing


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
    addr_of = address_reader(ctx, instr, mem_op, zrow)
    high_of = high_word(instr, mem_op, zrow)
    what = "shared" if shared else "global"
    offsets = np.arange(width, dtype=np.int64)
    recorder_kind = ("lds" if load else "sts") if shared else ("ldg" if load else "stg")

    def check(g, m, addr):
        if shared:
            limit_lo, limit_hi = 0, ctx.kernel.shared_size
        else:
            limit_lo, limit_hi = GLOBAL_BASE, ctx.memory.top
        sel = m if m is not None else (None if g.full else g.active)
        # a .E address's high word 0 on every lane (the common case), checked in one compiled pass
        low_only = high_of is None or not high_word_set(high_of, g, addr, sel)
        if low_only and (shared or not ctx.memory.gapped) and limit_hi - nbytes >= limit_lo:
            # every lane in range and aligned (the common case): one compiled pass
            if not out_of_range(addr, limit_lo, limit_hi - nbytes, nbytes - 1,
                                NO_MASK if sel is None else sel, sel is not None):
                return
        elif low_only and not shared and ctx.memory.allocations:
            # a memory with gaps between its allocations: the same, against each allocation
            bases, ends = ctx.memory.extents()
            if not outside_allocations(addr, bases, ends, nbytes, NO_MASK if sel is None else sel, sel is not None):
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
    # the compiled pass of maxsim.functional.access (check and move at once; a lane that fails
    # the check leaves it to check() to say which and why)
    high, carry, borrow = high_of.parts if high_of is not None else (-1, False, 0)
    no_index = np.zeros(1, dtype=np.int64)

    def bounds():
        """How access checks the lanes: (mode, lowest address, highest, allocation starts, ends)."""
        if shared:
            return access.RANGE, 0, ctx.kernel.shared_size - nbytes, no_index, no_index
        mem = ctx.memory
        if not mem.gapped:
            return access.RANGE, GLOBAL_BASE, mem.top - nbytes, no_index, no_index
        if mem.allocations:
            bases, ends = mem.extents()
            return access.ALLOCATIONS, 0, 0, bases, ends
        return access.RANGE, 1, 0, no_index, no_index  # (no lane passes: check() says why)

    def compiled(g, m, sel, addr, move, reg, *rest):
        mode, lo, last, bases, ends = bounds()
        return move(addr, g.regs, high, carry, borrow, mode, lo, last, nbytes - 1, bases, ends,
                    NO_MASK if sel is None else sel, sel is not None,
                    ctx.shared if shared else ctx.memory.words, g.shbase if shared else no_index, shared,
                    reg, width, *rest)

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
        writes = [writer(dst + j if dst != ins.RZ else ins.RZ, zrow) for j in range(width)]
        rows = dst != ins.RZ and dst + width <= zrow  # destination rows written in one assignment

        def run(g, m):
            addr = addr_of(g)
            if rows:
                sel = m if m is not None else (None if g.full else g.active)
                # (lanes not loading: with a mask m they keep their rows, else they are inactive
                # and get 0, as the numpy steps below leave them)
                if compiled(g, m, sel, addr, access.load, dst, m is not None):
                    if ctx.recorder is not None:
                        ctx.recorder.memory(recorder_kind, g, addr, sel, nbytes)
                    return
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
    fast = src == ins.RZ or src + width <= zrow

    def run(g, m):
        addr = addr_of(g)
        if fast:
            sel = m if m is not None else (None if g.full else g.active)
            if compiled(g, m, sel, addr, access.store, -1 if src == ins.RZ else src):
                if ctx.recorder is not None:
                    ctx.recorder.memory(recorder_kind, g, addr, sel, nbytes)
                return
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


@compiles("LDC", values=True)
def _ldc(ctx, instr, ops, mods, zrow, values=True):
    """LDC d, c[bank][Ra+imm]: each lane reads the constant at Ra + imm (a uniform read without Ra);
    .U8/.S8/.U16/.S16 extend a narrower value, .64/.128 fill a vector group. The trace records, per
    warp, how many distinct addresses its lanes read (the constant cache serves them one at a time)."""
    src = ops[1]
    nbytes = memory_bytes(mods)
    width = max(1, nbytes // 4)
    sub = next((_SUBWORD_DTYPE[m] for m in mods if m in _SUBWORD_DTYPE), None)
    dst = ops[0].reg
    writes = [writer(dst + j if dst != ins.RZ else ins.RZ, zrow) for j in range(width)]
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


@compiles("TLD", "TEX", "TLDS", "TEXS", values=True)
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
    writes = [writer(r, zrow) for r, _ in outs]

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


# Local memory (LDL / STL). Each thread has a window of ctx.local_bytes (the kernel's frame);
# functionally the words of a batch's lanes lie lane after lane in ctx.local. For the timing model
# a warp's window is laid out as the hardware does [cuda-pg] ("Local Memory": consecutive 32-bit
# words are accessed by consecutive thread IDs): word n of lane l of warp w at
# LOCAL_BASE + w * 32 * window + n * 128 + 4 * l, so that lanes reading one offset read one 128-byte
# line; a 64- or 128-bit access then spans 2 or 4 lines (a documented choice: how the hardware
# splits wide local accesses is not published). Each warp of a launch has a window of its own (the
# hardware reuses those of finished warps: not modelled). Timed as global memory through the L2
# (l1tex.caches_local = false).
LOCAL_BASE = 1 << 48  # the local space in trace addresses: far above global memory and textures (n << 40)


def local_lanes(ctx, g):
    """The position of each lane of group g among its batch's lanes (rows of ctx.local)."""
    return g.cta * (((ctx.block + 31) // 32) * 32) + g.tid.astype(np.int64)


def local_trace_addresses(ctx, g, addr, pieces):
    """(lanes, pieces) int64 byte addresses of an access at local ``addr`` for the trace."""
    window = ctx.local_bytes
    warp = np.repeat(g.warps, 32)
    base = LOCAL_BASE + warp * (32 * window) + g.laneid.astype(np.int64) * 4
    a = addr.astype(np.int64)
    word = (a >> 2)[:, None] + np.arange(pieces, dtype=np.int64)
    return base[:, None] + word * 128 + (a & 3)[:, None]


@compiles("LDL", "STL", values=True)
def _local(ctx, instr, ops, mods, zrow, values=True):
    """LDL d, [Ra+imm] / STL [Ra+imm], d of 8 to 128 bits (8/16-bit loads zero- or sign-extend)."""
    load = instr.opcode == "LDL"
    mem_op, data_op = (ops[1], ops[0]) if load else (ops[0], ops[1])
    addr_of = address_reader(ctx, instr, mem_op, zrow)
    nbytes = memory_bytes(mods)
    width = max(1, nbytes // 4)
    sub = next((_SUBWORD_DTYPE[m] for m in mods if m in _SUBWORD_DTYPE), None)
    reg = data_op.reg
    writes = [writer(reg + j if reg != ins.RZ else ins.RZ, zrow) for j in range(width)] if load else None
    src = zrow if reg == ins.RZ else reg
    kind = "ldg" if load else "stg"

    def run(g, m):
        sel = m if m is not None else (None if g.full else g.active)
        addr = addr_of(g)
        window = ctx.local_bytes
        bad = ((addr & U32(nbytes - 1)) != 0) | (addr.astype(np.int64) > window - nbytes)
        if sel is not None:
            bad &= sel
        if bad.any():
            def msg(pos):
                a = int(addr[pos])
                if a % nbytes:
                    return f"misaligned {nbytes}-byte local access at address 0x{a:x}"
                where = "" if a < 1 << 31 else " (below the stack: a negative offset)"
                return (f"local access at address 0x{a:x} (+{nbytes} bytes){where} is outside the thread's "
                        f"local memory [0x0, 0x{window:x}) (the kernel's frame: LocalSize {ctx.kernel.local_size})")
            ctx.fail(instr, g, bad, msg)
        if ctx.recorder is not None:
            pieces = width if sub is None else 1
            ctx.recorder.local(kind, g, local_trace_addresses(ctx, g, addr, pieces), sel, min(nbytes, 4))
        if not values:
            return
        lanes = local_lanes(ctx, g)
        a = addr.astype(np.int64)
        if sel is not None:
            lanes, a = lanes[sel], a[sel]
        if sub is not None:
            view = ctx.local.view(sub)
            at = (lanes * window + a) // nbytes
            if load:
                vals = np.zeros(g.tid.size, dtype=np.uint32)
                got = view[at].astype(np.int64).astype(np.uint32)
                if sel is None:
                    vals = got
                else:
                    vals[sel] = got
                writes[0](g, vals, m)
            else:
                data = g.regs[src] if sel is None else g.regs[src][sel]
                view[at] = data.astype(sub)  # (lanes are distinct threads: no two write one byte)
            return
        at = (lanes * (window // 4) + (a >> 2))[:, None] + np.arange(width, dtype=np.int64)
        if load:
            got = ctx.local[at]
            for j in range(width):
                if sel is None:
                    writes[j](g, got[:, j], m)
                else:
                    vals = np.zeros(g.tid.size, dtype=np.uint32)
                    vals[sel] = got[:, j]
                    writes[j](g, vals, m)
        else:
            rows = g.regs[src:src + width] if src != zrow else np.zeros((width, g.tid.size), np.uint32)
            data = rows.T if sel is None else rows.T[sel]
            ctx.local[at] = data
    return run
