"""Launch a kernel functionally: grid of CTAs, block of threads, parameters, memories."""

from __future__ import annotations

import struct

import attrs
import numpy as np

from ..errors import LaunchError, SimulationError
from ..isa import instruction as ins
from .executor import CONTROL, Context, Group, compile_instruction
from .watchdog import Watchdog, instruction_limit

PARAM_BASE = 0x140
CONST_BANK_SIZE = 0x10000
MAX_THREADS_PER_CTA = 1024
BATCH_LANES = 1 << 16  # lanes executed together; bounds the register arrays to a few tens of MB


@attrs.define
class LaunchResult:
    kernel: ins.Kernel
    grid: tuple
    block: int
    warp_instructions: int
    thread_instructions: int
    per_instruction: np.ndarray  # warp-level executions of each static instruction
    trace: object = None

    @property
    def opcode_counts(self) -> dict:
        out = {}
        for instr, n in zip(self.kernel.instructions, self.per_instruction):
            if n:
                out[instr.full_opcode] = out.get(instr.full_opcode, 0) + int(n)
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def pack_params(kernel: ins.Kernel, params) -> bytes:
    """Constant bank 0: launch geometry words at 0x0.., kernel parameters from 0x140."""
    params = list(params or [])
    if kernel.params and len(params) != len(kernel.params):
        raise LaunchError(f"kernel {kernel.name} takes {len(kernel.params)} parameters, {len(params)} given")
    bank = bytearray(PARAM_BASE + 4 * max(len(params), 1) + 0x100)
    offsets = [p.offset for p in kernel.params] or [PARAM_BASE + 4 * i for i in range(len(params))]
    sizes = [p.size for p in kernel.params] or [4] * len(params)
    for n, (value, off, size) in enumerate(zip(params, offsets, sizes)):
        if size != 4:
            raise LaunchError(f"parameter {n} of {kernel.name} has size {size}; only 4-byte parameters are supported")
        if isinstance(value, (float, np.floating)):
            raw = struct.pack("<f", float(value))
        else:
            try:
                v = int(value)
            except (TypeError, ValueError):
                raise LaunchError(f"parameter {n} of {kernel.name} is not a number: {value!r}") from None
            if not -(1 << 31) <= v < (1 << 32):
                raise LaunchError(f"parameter {n} of {kernel.name} does not fit in 32 bits: {v}")
            raw = struct.pack("<I", v & 0xFFFFFFFF)
        end = off + 4
        if end > len(bank):
            bank.extend(bytes(end - len(bank)))
        bank[off:end] = raw
    return bytes(bank)


def _geometry_words(bank: bytes, block: int, grid) -> bytes:
    b = bytearray(bank)
    b[0:24] = struct.pack("<6I", block, 1, 1, grid[0], grid[1], 1)
    return bytes(b)


def launch(kernel, grid, block, params=(), memory=None, textures=None, *, max_instructions=None,
           recorder=None, ctas=None, progress=None, expected_instructions=None) -> LaunchResult:
    """Execute ``kernel`` over ``grid`` (x, y) CTAs of ``block`` threads.

    ``ctas`` optionally restricts execution to a list of (x, y) CTA ids (the timing model uses this
    to run the CTAs of one SM); ``recorder`` collects the per-warp dynamic trace.

    ``progress`` (a callback ``progress(done, total, what, unit)``, see
    :mod:`maxsim.report.progress`) is told the CTAs done: after each batch of CTAs, and within a
    batch (at barriers and backward branches) an estimate from the warp instructions executed so far
    against ``expected_instructions`` (an estimate for the whole launch) or the batches before.
    """
    from .memory import GlobalMemory, Texture1D

    gx, gy = (grid, 1) if isinstance(grid, int) else (tuple(grid) + (1,))[:2]
    if gx < 1 or gy < 1 or gx >= 1 << 31 or gy >= 1 << 16:
        raise LaunchError(f"grid ({gx},{gy}) is out of range")
    if not 1 <= block <= MAX_THREADS_PER_CTA:
        raise LaunchError(f"block of {block} threads is out of range 1..{MAX_THREADS_PER_CTA}")
    memory = memory if memory is not None else GlobalMemory()
    textures = dict(textures or {})
    for key, tex in textures.items():
        if not isinstance(tex, Texture1D):
            raise LaunchError(f"texture {key!r} must be a maxsim.functional.Texture1D, got {type(tex).__name__}")
    const_bank = _geometry_words(pack_params(kernel, params), block, (gx, gy))
    if not kernel.instructions:
        raise LaunchError(f"{kernel.filename}: no instructions to run (kernel {kernel.name})")

    wpc = (block + 31) // 32  # warps per CTA
    cta_list = [(x, y) for y in range(gy) for x in range(gx)] if ctas is None else [tuple(c) for c in ctas]
    limit = instruction_limit(len(cta_list) * wpc, max_instructions)
    per_batch = max(1, BATCH_LANES // (wpc * 32))
    shared_words = (kernel.shared_size + 3) // 4
    counts = np.zeros(len(kernel.instructions), dtype=np.int64)
    state = {"total": 0, "threads": 0}
    watch = Watchdog(kernel, counts, limit, len(cta_list) * wpc, given=max_instructions is not None)
    for start in range(0, len(cta_list), per_batch):
        batch = cta_list[start:start + per_batch]
        ctx = Context(kernel, const_bank, shared_words, len(batch), memory, textures, block, (gx, gy))
        ctx.recorder = recorder
        ctx.watchdog = watch
        watch.reset()
        compiled = [None if i.opcode in CONTROL else compile_instruction(ctx, i) for i in kernel.instructions]
        # fp32 overflow and NaN (inf * 0, inf - inf) are ordinary GPU results, not numpy warnings
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            _run_batch(ctx, compiled, batch, wpc, block, counts, state, limit, recorder, start,
                       None if progress is None else
                       _ticker(progress, state, start, len(batch), len(cta_list), expected_instructions))
    if progress is not None:
        progress(len(cta_list), len(cta_list), "functional run", "CTAs")
    return LaunchResult(kernel, (gx, gy), block, state["total"], state["threads"], counts,
                        recorder.finish() if recorder is not None else None)


def _ticker(progress, state, start, n, total, expected):
    """A callable that reports the CTAs done, estimated within the batch of ``n`` CTAs from ``start``."""
    base = state["total"]
    per_cta = expected / total if expected else (base / start if start else 0)

    def tick():
        frac = min(0.99, (state["total"] - base) / (per_cta * n)) if per_cta else 0.0
        progress(start + n * frac, total, "functional run", "CTAs")
    tick()
    return tick


def _initial_group(kernel, batch, wpc, block, shared_words, warp_base):
    nc = len(batch)
    lanes = nc * wpc * 32
    g = Group()
    g.regs = np.zeros((kernel.reg_cnt + 1, lanes), dtype=np.uint32)
    g.preds = np.zeros((8, lanes), dtype=bool)
    g.preds[ins.PT] = True
    g.cc = np.zeros(lanes, dtype=np.uint32)
    tid = np.tile(np.arange(wpc * 32, dtype=np.uint32), nc)
    g.active = tid < block
    g.full = bool(g.active.all())
    g.pc = 0
    g.stack = []
    g.warps = np.arange(nc * wpc, dtype=np.int64) + warp_base * wpc
    g.tid = tid
    cx = np.array([c[0] for c in batch], dtype=np.uint32)
    cy = np.array([c[1] for c in batch], dtype=np.uint32)
    g.ctaid_x = np.repeat(cx, wpc * 32)
    g.ctaid_y = np.repeat(cy, wpc * 32)
    g.cta = np.repeat(np.arange(nc, dtype=np.int64), wpc * 32)
    g.shbase = g.cta * shared_words
    g.laneid = tid % 32
    g.segment = None
    g.bar_id = -1
    return g


def _warp_ok(instr, g, taken, ctx):
    """Per-warp branch outcome; a warp whose active lanes disagree is a divergent branch."""
    t = taken.reshape(-1, 32)
    act = g.active.reshape(-1, 32)
    any_t = (t & act).any(axis=1)
    all_t = (t | ~act).all(axis=1)
    div = any_t & ~all_t
    if div.any():
        w = int(np.flatnonzero(div)[0])
        lane = w * 32 + int(np.flatnonzero(act[w])[0])
        raise SimulationError(ctx.where(instr, g, lane).format(
            f"divergent branch: the active lanes of this warp disagree on {instr.full_opcode} "
            f"(reconvergence of divergent warps is not modelled; make the branch warp-uniform)"))
    return any_t


def _run_batch(ctx, compiled, batch, wpc, block, counts, state, limit, recorder, warp_base, tick=None):
    kernel = ctx.kernel
    instrs = kernel.instructions
    n_instr = len(instrs)
    runnable = [_initial_group(kernel, batch, wpc, block, ctx.shared_words, warp_base)]
    live = np.full(len(batch), wpc, dtype=np.int64)  # live warps per CTA
    waiting = []
    while runnable or waiting:
        if tick is not None:
            tick()
        if not runnable:
            runnable = _release_barriers(ctx, waiting, live)
            waiting = []
            continue
        g = runnable.pop()
        if recorder is not None:
            recorder.start(g)
        while True:
            pc = g.pc
            if pc >= n_instr:
                raise SimulationError(ctx.where(instrs[-1], g, 0).format(
                    "execution ran past the last instruction (missing EXIT?)"))
            instr = instrs[pc]
            nw = g.warps.size
            counts[pc] += nw
            state["total"] += nw
            if state["total"] > limit:
                raise ctx.watchdog.limit_error(ctx, instr, g)
            if recorder is not None:
                recorder.step(g, pc)
            # execution mask: active lanes whose guard predicate holds (None: all lanes)
            if instr.pred == ins.PT and not instr.pred_neg:
                m = None if g.full else g.active
            else:
                p = g.preds[instr.pred]
                # copy: a view would change under an instruction that writes its own guard
                # (@P0 ISETP ... P0, P1, ...) and mask its second destination wrongly
                m = ~p if instr.pred_neg else p.copy()
                if not g.full:
                    m = m & g.active
                if m.all():
                    m = None
            fn = compiled[pc]
            if fn is not None:
                fn(g, m)
                state["threads"] += int(g.active.sum()) if m is None else int(m.sum())
                g.pc = pc + 1
                continue
            op = instr.opcode
            if op == "EXIT":
                done = g.active.copy() if m is None else (m & g.active)
                g.active &= ~done
                state["threads"] += int(done.sum())
                alive = g.active.reshape(-1, 32).any(axis=1)
                if not alive.all():
                    gone = g.warps[~alive]
                    np.subtract.at(live, (gone // wpc) - warp_base, 1)
                    if recorder is not None:
                        recorder.exit(g, ~alive)
                    if not alive.any():
                        g = None
                        break
                    g = g.take(np.flatnonzero(alive))
                    if recorder is not None:
                        recorder.start(g)
                g.full = bool(g.active.all())
                g.pc = pc + 1
                continue
            if op == "BAR":
                bar = instr.operands[0].value
                if not 0 <= bar <= 15:
                    raise SimulationError(ctx.where(instr, g, 0).format(f"barrier {bar} is out of range 0..15"))
                if m is not None:
                    # a guarded BAR: a warp arrives when any of its active lanes executes it (the
                    # pre-Volta per-warp barrier rule); warps whose guard is false go on
                    arrive = (m & g.active).reshape(-1, 32).any(axis=1)
                    if not arrive.all():
                        if recorder is not None:
                            recorder.barrier(g, arrive)
                        if not arrive.any():
                            g.pc = pc + 1
                            continue
                        yes = g.take(np.flatnonzero(arrive))
                        no = g.take(np.flatnonzero(~arrive))
                        yes.pc = no.pc = pc + 1
                        if recorder is not None:
                            recorder.split(g, yes, no)
                        yes.bar_id = bar
                        waiting.append(yes)
                        runnable.append(no)
                        g = None
                        break
                g.bar_id = bar
                g.pc = pc + 1
                waiting.append(g)
                g = None
                break
            # BRA / CAL / RET: warp-uniform outcome, groups split when warps differ
            taken = np.ones(nw, dtype=bool) if m is None else _warp_ok(instr, g, m, ctx)
            if op == "RET":
                if taken.any() and not g.stack:
                    raise SimulationError(ctx.where(instr, g, int(np.flatnonzero(taken)[0]) * 32).format(
                        "RET with an empty call stack"))
                dest = g.stack[-1] if g.stack else pc + 1
            else:
                dest = instr.target
            if taken.all():
                if op == "CAL":
                    g.stack.append(pc + 1)
                elif op == "RET":
                    g.stack.pop()
                g.pc = dest
                if dest <= pc:
                    ctx.watchdog.back_edge(g, pc)
                    if tick is not None:
                        tick()
                continue
            if not taken.any():
                g.pc = pc + 1
                continue
            yes = g.take(np.flatnonzero(taken))
            no = g.take(np.flatnonzero(~taken))
            if op == "CAL":
                yes.stack.append(pc + 1)
            elif op == "RET":
                yes.stack.pop()
            yes.pc = dest
            no.pc = pc + 1
            if recorder is not None:
                recorder.split(g, yes, no)
            runnable.extend([no, yes])
            g = None
            break


def _release_barriers(ctx, waiting, live):
    """All runnable warps are blocked: release the CTA barriers that every live warp has reached."""
    arrived = {}
    bars = {}
    for g in waiting:
        ctas, n = np.unique(g.cta[::32], return_counts=True)
        for c, k in zip(ctas, n):
            arrived[int(c)] = arrived.get(int(c), 0) + int(k)
            bars.setdefault(int(c), set()).add(g.bar_id)
    for c, k in arrived.items():
        if k != live[c] or len(bars[c]) > 1:
            g = next(x for x in waiting if (x.cta == c).any())
            pos = int(np.flatnonzero(g.cta == c)[0])
            instr = ctx.kernel.instructions[g.pc - 1]
            why = (f"{k} of its {int(live[c])} live warps arrived" if k != live[c]
                   else f"its warps wait on different barriers {sorted(bars[c])}")
            raise SimulationError(ctx.where(instr, g, pos).format(
                f"BAR.SYNC can never complete: {why}"))
    # merge released groups that continue at the same pc
    # (groups at the same pc but with different call stacks, e.g. a BAR inside a subroutine
    # called from two places, must stay apart: a merged group keeps only one stack)
    by_pc = {}
    for g in waiting:
        by_pc.setdefault((g.pc, tuple(g.stack)), []).append(g)
    out = []
    for _, gs in sorted(by_pc.items()):
        merged = gs[0] if len(gs) == 1 else Group.merge(gs)
        merged.bar_id = -1
        out.append(merged)
    if ctx.recorder is not None:
        ctx.recorder.merged(waiting, out)
    return out
