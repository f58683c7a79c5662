"""Launch a kernel functionally: grid of CTAs, block of threads, parameters, memories."""

from __future__ import annotations

import struct

import attrs
import numpy as np

from ..errors import LaunchError, SimulationError
from ..memo import Kept
from ..isa import instruction as ins
from . import alublock, simt
from .simt import warp_lanes
from .executor import CONTROL, ID_NAMES, Context, Group, compile_instruction
from .operands import ConstantFault, CC_FLAGS, CC_SIGN, CC_ZERO, GEOMETRY, STACK_POINTER, local_window
from .watchdog import Watchdog, instruction_limit

PARAM_BASE = 0x140
# (c[0x0][0x8..0x1c], the launch geometry: maxsim.functional.operands.GEOMETRY)
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
    timing_only: bool = False  # values were not computed: memory holds no valid results
    warp_threads: np.ndarray = None  # thread instructions of each warp (CTA i's warp w at i * wpc + w)
    ctas: tuple = ()  # the CTAs run, in the order of the warp numbering
    trace_key: object = None  # the trace summariser's parameters (see TraceRecorder)
    warp_divergent: np.ndarray = None  # divergent branches of each warp (numbered as warp_threads)
    warp_idle: np.ndarray = None  # per warp: lanes not active, summed over its warp instructions
    warp_counts: np.ndarray = None  # per warp: its warp instructions (LaunchStream's warp_counts)

    @property
    def divergent_branches(self) -> int:
        return int(self.warp_divergent.sum()) if self.warp_divergent is not None else 0

    @property
    def simd_efficiency(self) -> float:
        """Active lanes per warp instruction over 32 (nvprof's warp execution efficiency)."""
        if not self.warp_instructions or self.warp_idle is None:
            return 1.0
        return 1.0 - int(self.warp_idle.sum()) / (32 * self.warp_instructions)

    def cta_threads(self, first, count, per_warp=None):
        """Thread instructions of the CTAs ``first .. first + count - 1`` (in ``ctas`` order); or
        the sum of another per-warp array (``warp_divergent``, ``warp_idle``) over them."""
        wpc = (self.block + 31) // 32
        arr = self.warp_threads if per_warp is None else per_warp
        return int(arr[first * wpc:(first + count) * wpc].sum())

    @property
    def opcode_counts(self) -> dict:
        out = {}
        for instr, n in zip(self.kernel.instructions, self.per_instruction):
            if n:
                out[instr.full_opcode] = out.get(instr.full_opcode, 0) + int(n)
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def pack_params(kernel: ins.Kernel, params) -> bytes:
    """Constant bank 0: launch geometry words at 0x8.., kernel parameters from 0x140.

    ``params``: the 4-byte parameters in order, or the bank already packed (``bytes``, as
    :mod:`maxsim.host` packs named parameters of any size)."""
    if isinstance(params, (bytes, bytearray)):
        return bytes(params) + bytes(max(0, PARAM_BASE + 0x100 - len(params)))
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
    """c[0x0][0x8..0x1c]: the block's (X, Y, Z) threads and the grid's (X, Y, Z) CTAs. A bank that
    already describes this launch in three dimensions (``block`` = X * Y * Z threads, ``grid`` =
    (X, Y * Z) CTAs: see :func:`maxsim.host.launch._geometry`) keeps its words; otherwise the launch
    is (block, 1, 1) threads and (grid X, grid Y, 1) CTAs."""
    b = bytearray(bank)
    if len(b) >= GEOMETRY + 24:
        bx, by, bz, gx, gy, gz = struct.unpack_from("<6I", b, GEOMETRY)
        if min(bx, by, bz, gx, gy, gz) >= 1 and bx * by * bz == block and (gx, gy * gz) == tuple(grid):
            return bytes(b)
    b[GEOMETRY:GEOMETRY + 24] = struct.pack("<6I", block, 1, 1, grid[0], grid[1], 1)
    return bytes(b)


_CLOCK_CHECKED = {}  # id(instructions) -> instructions: kernels whose clock reads were looked at


def _check_clock(kernel):
    """Refuse a kernel whose branches, guards or addresses depend on clock() (the functional model
    reads the clock as 0, so it would not run as on hardware: a delay loop would never end); warn
    once when a stored result does (it holds the difference of two zero readings)."""
    instrs = kernel.instructions
    if _CLOCK_CHECKED.get(id(instrs)) is instrs:
        return
    from .slicing import clock_uses
    uses = clock_uses(kernel)
    for u in uses:
        at, clock = instrs[u.instr], instrs[u.clock]
        if u.what in ("guard", "address"):
            role = ("decides whether it runs or where it branches" if u.what == "guard" else
                    "is part of its memory address")
            raise LaunchError(f"{at.where}: {at.full_opcode} uses the clock read at {clock.where} "
                              f"({clock.full_opcode} {clock.operands[1].name}): its value {role}. The functional "
                              f"model reads the clock as 0 (time is the timing model's), so this kernel would not "
                              f"run as on hardware; refused")
    stores = [u for u in uses if u.what == "store"]
    if stores:
        import warnings
        from ..errors import SourceWarning
        at, clock = instrs[stores[0].instr], instrs[stores[0].clock]
        warnings.warn(SourceWarning(f"{at.where}: {at.full_opcode} stores a value computed from the clock read at "
                                    f"{clock.where}; the functional model reads the clock as 0, so the stored "
                                    f"result is not a time (the timing model's cycle counts are)"), stacklevel=2)
    if len(_CLOCK_CHECKED) > 64:
        _CLOCK_CHECKED.clear()
    _CLOCK_CHECKED[id(instrs)] = instrs


def _place_variables(kernel, memory, banks) -> dict:
    """The constant banks with the words that hold __device__ variables' addresses filled in,
    the variables placed in ``memory`` (once per memory: see GlobalMemory.variable)."""
    sizes = {name: (size, data) for name, size, data in kernel.variables}
    out = {b: bytearray(d) for b, d in banks.items()}
    for bank, off, nbytes, name, addend in kernel.variable_words:
        size, data = sizes[name]
        addr = memory.variable(name, size, data) + addend
        if bank not in out:
            raise LaunchError(f"kernel {kernel.name}: the address of __device__ variable {name} goes to "
                              f"constant bank {bank}, which the kernel image does not have")
        b = out[bank]
        if len(b) < off + nbytes:
            b.extend(bytes(off + nbytes - len(b)))
        b[off:off + nbytes] = addr.to_bytes(8, "little")[:nbytes]
    return {b: bytes(d) for b, d in out.items()}


_BANKS = Kept(64)  # (kernel, packed parameters, block, grid) -> constant bank 0 as a launch of it reads it


def _bank_zero(kernel, params, block, grid) -> bytes:
    """Constant bank 0 of a launch: the parameters packed (:func:`pack_params`), with the geometry
    words and the stack pointer; made once for parameters given packed and launched again alike."""
    def make():
        return _stack_pointer(_geometry_words(pack_params(kernel, params), block, grid), kernel)
    if not isinstance(params, bytes):
        return make()
    return _BANKS.get((id(kernel), params, block, grid), make, owner=kernel)


_GRIDS = Kept(16)  # (grid X, grid Y) -> its CTA ids in launch order
GRIDS_KEPT_CTAS = 1 << 16  # the largest grid whose CTA ids are kept (a simulator setting: bounds their memory)


def _grid_ctas(gx, gy) -> tuple:
    """The CTA ids (x, y) of a grid in launch order (x fastest), made once per grid."""
    def make():
        return tuple((x, y) for y in range(gy) for x in range(gx))
    return make() if gx * gy > GRIDS_KEPT_CTAS else _GRIDS.get((gx, gy), make)


def _stack_pointer(bank: bytes, kernel) -> bytes:
    """c[0x0][0x20], the local-memory stack pointer, set to the top of each thread's local window
    (a kernel without local memory keeps the bank as it is)."""
    top = local_window(kernel)
    if not top:
        return bank
    b = bytearray(bank)
    if len(b) < STACK_POINTER + 4:
        b.extend(bytes(STACK_POINTER + 4 - len(b)))
    b[STACK_POINTER:STACK_POINTER + 4] = struct.pack("<I", top)
    return bytes(b)


@attrs.frozen
class ConstantBanks:
    """Constant bank 0 (``params``: the packed bank or the 4-byte parameters, as :func:`launch`
    takes them) with the data of further banks (``banks``: {bank 1-17: bytes}, e.g. a kernel's
    ``__constant__`` data in bank 3): pass it as ``params`` to :func:`launch`."""

    params: object
    banks: dict = attrs.field(factory=dict)


def launch(kernel, grid, block, params=(), memory=None, textures=None, *, max_instructions=None,
           recorder=None, ctas=None, progress=None, expected_instructions=None,
           timing_only=False) -> LaunchResult:
    """Execute ``kernel`` over ``grid`` (x, y) CTAs of ``block`` threads.

    ``params``: the 4-byte parameters in order or constant bank 0 packed (:func:`pack_params`), or
    a :class:`ConstantBanks` holding either with the data of further constant banks.

    ``ctas`` optionally restricts execution to a list of (x, y) CTA ids (the timing model uses this
    to run the CTAs of one SM); ``recorder`` collects the per-warp dynamic trace (the result's
    ``trace``: every warp's; :class:`LaunchStream` hands them over a batch of CTAs at a time).

    ``timing_only`` computes only what the trace depends on (the backward slice of
    :mod:`maxsim.functional.slicing`): the trace is the same as a full run's, but memory results
    are not. The result then says so (``timing_only``) and carries no memory to read; ``memory``
    is left holding partial results and must not be checked.

    ``progress`` (a callback ``progress(done, total, what, unit)``, see
    :mod:`maxsim.report.progress`) is told the CTAs done: after each batch of CTAs, and within a
    batch (at barriers and backward branches) an estimate from the warp instructions executed so far
    against ``expected_instructions`` (an estimate for the whole launch) or the batches before.
    """
    run = LaunchStream(kernel, grid, block, params, memory, textures, max_instructions=max_instructions,
                       recorder=recorder, ctas=ctas, progress=progress,
                       expected_instructions=expected_instructions, timing_only=timing_only, hand_over=False,
                       reuse=True)
    for _ in run:
        pass
    if progress is not None and not run.ctas:
        progress(0, 0, "functional run", "CTAs")
    result = run.finish(recorder.finish() if recorder is not None else None)
    run.release()
    return result


class LaunchStream:
    """A functional launch run a batch of CTAs at a time, as its consumer asks for them.

    Iterating runs the next batch (the CTAs :func:`launch` executes together, in the same order:
    the memory results are those of :func:`launch`) and gives ``(its CTA ids, {warp id: its
    trace})``, the traces taken from ``recorder`` (which then forgets them: a consumer that drops
    a trace once timed holds only the traces of the CTAs it has not finished; ``hand_over``
    false: the recorder keeps them all and the batch's are None). A warp id numbers CTA i's warp w
    as ``i * warps per CTA + w`` (CTAs in ``ctas`` order). Once every batch has run,
    :meth:`finish` gives the :class:`LaunchResult`. ``warp_counts``: the result counts each warp's
    warp instructions (``warp_counts``). Other arguments as for :func:`launch`.
    """

    def __init__(self, kernel, grid, block, params=(), memory=None, textures=None, *, max_instructions=None,
                 recorder=None, ctas=None, progress=None, expected_instructions=None, timing_only=False,
                 hand_over=True, reuse=False, warp_counts=False):
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
        banks = {}
        if isinstance(params, ConstantBanks):
            params, banks = params.params, dict(params.banks)
        _check_clock(kernel)
        if kernel.variable_words:
            banks = _place_variables(kernel, memory, {**dict(kernel.banks or ()), **banks})
        const_bank = _bank_zero(kernel, params, block, (gx, gy))
        if not kernel.instructions:
            raise LaunchError(f"{kernel.filename}: no instructions to run (kernel {kernel.name})")

        wpc = (block + 31) // 32  # warps per CTA
        cta_list = list(_grid_ctas(gx, gy)) if ctas is None else [tuple(c) for c in ctas]
        limit = instruction_limit(len(cta_list) * wpc, max_instructions)
        per_batch = max(1, BATCH_LANES // (wpc * 32))
        shared_words = (kernel.shared_size + 3) // 4
        counts = np.zeros(len(kernel.instructions), dtype=np.int64)
        warp_threads = np.zeros(len(cta_list) * wpc, dtype=np.int64)
        # divergent branches and idle lanes (32 less the active lanes, summed over the warp's
        # instructions) of each warp
        state = {"total": 0, "divergent": 0, "warp_divergent": np.zeros_like(warp_threads),
                 "warp_idle": np.zeros_like(warp_threads),
                 "warp_counts": np.zeros_like(warp_threads) if warp_counts else None}
        ctx = Context(kernel, const_bank, shared_words, 0, memory, textures, block, (gx, gy), constants=banks)
        ctx.recorder = recorder
        ctx.watchdog = Watchdog(kernel, counts, limit, len(cta_list) * wpc, given=max_instructions is not None)
        if timing_only:
            from .slicing import timing_slice
            computed = timing_slice(kernel).computed
            memory.invalid = (f"a timing-only launch of {kernel.name} computed addresses, not values "
                              f"(run it without timing_only to get results)")
        else:
            computed = (True,) * len(kernel.instructions)
        self._reuse = _program_key(ctx, computed) if reuse else None
        program = _idle_program(self._reuse, ctx) if reuse else None
        if program is None:
            program = Program(ctx, computed)
        else:
            ctx = program.ctx  # (now this launch's: see _idle_program)
        self.kernel, self.grid, self.block, self.wpc, self.recorder = kernel, (gx, gy), block, wpc, recorder
        self.ctas, self.per_batch, self.timing_only = cta_list, per_batch, timing_only
        self._ctx, self._program, self._counts, self._state, self._limit = ctx, program, counts, state, limit
        self._warp_threads, self._progress, self._expected = warp_threads, progress, expected_instructions
        self._next = 0
        self._hand_over = hand_over and recorder is not None
        self._key = recorder.key if recorder is not None else None

    def __iter__(self):
        return self

    window = None  # trace positions a batch records before it pauses (see set_window)
    # record(batch's CTA ids) -> whether to record the batch's traces (None: every batch); a batch not
    # recorded is handed out with None for its traces (its warps' counts: cta_instructions)
    record = None
    sink = None
    _open = None  # (the running batch's generator, its CTAs) while it pauses between windows
    _cta_counts = None  # (a batch's first position, its CTAs' warp instructions): see cta_instructions

    def set_window(self, positions, sink):
        """Run each batch in windows of about ``positions`` trace positions (summed over the
        recorder's segments: a window of a batch whose warps run together in one group gives each
        warp about that many) instead of whole: iterating then gives a batch's CTAs with the traces
        of its first window (a trace's ``open`` says more may come), and :meth:`more` runs the
        next window. ``sink(traces, gone, done)`` takes the windows of a batch still running when
        the next batch is asked for (as :meth:`more` returns them). Same results and, joined,
        the same traces as whole batches."""
        self.window = int(positions)
        self.sink = sink

    def __next__(self):
        start = self._next
        cta_list, progress, state = self.ctas, self._progress, self._state
        if start >= len(cta_list):
            raise StopIteration  # (a batch still running in windows goes on: see more)
        while self._open is not None:  # the batch before still runs in windows: its rest first
            self.sink(*self.more())
        ctx, wpc = self._ctx, self.wpc
        batch = cta_list[start:start + self.per_batch]
        self._next = start + len(batch)
        ctx.shared = np.zeros(max(1, len(batch) * ctx.shared_words), dtype=np.uint32)
        ctx.local = np.zeros(len(batch) * wpc * 32 * (ctx.local_bytes // 4), dtype=np.uint32)
        ctx.watchdog.reset()
        tick = None if progress is None else _ticker(progress, state, start, len(batch), len(cta_list), self._expected)
        rec, window = self.recorder, self.window
        if rec is not None and self.record is not None and not self.record(batch):
            rec = None  # a batch whose traces no one reads: run without recording them
        ctx.recorder = rec
        pause = None
        if window is not None and self._hand_over:
            def pause():
                return rec.positions() >= window
        self._open = (_batch_steps(ctx, self._program, batch, wpc, self.block, self._counts, state, self._limit,
                                   rec, start, self._warp_threads, tick, pause), batch)
        done = self._step()
        if not self._hand_over or rec is None:
            return batch, None
        traces = rec.take()
        if not done:
            gone = set(rec.take_gone())
            for w, tr in traces.items():
                tr.open = w not in gone
        return batch, traces

    def _step(self):
        """Run the open batch to its next pause or its end; true at the end."""
        # fp32 overflow and NaN (inf * 0, inf - inf) are ordinary GPU results, not numpy warnings
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            for _ in self._open[0]:
                return False
        self._open = None
        self.recorder.take_gone() if self.recorder is not None else None
        self._ctx.watchdog.reset()  # it let go of the batch's last groups (their registers and trace)
        if self._progress is not None and self._next == len(self.ctas):
            self._progress(len(self.ctas), len(self.ctas), "functional run", "CTAs")
        return True

    @property
    def running(self):
        """Whether a batch has paused between windows (:meth:`more` runs on)."""
        return self._open is not None

    def more(self):
        """The next window of the running batch: ``(traces, gone, done)``: the traces the warps
        recorded in it (``{warp id: trace}``, to be joined to theirs), the warps that exited in it
        (their traces are complete), and whether the batch has ended (every warp's trace is)."""
        if self._open is None:
            raise LaunchError(f"kernel {self.kernel.name}: no batch is running to take a window from")
        rec = self.recorder
        done = self._step()
        traces = rec.take()
        gone = rec.take_gone() if not done else []
        return traces, gone, done

    def cta_instructions(self, position) -> int:
        """The warp instructions of the CTA at ``position`` of ``ctas``, once its batch has run
        (made with ``warp_counts``)."""
        wpc = self.wpc
        counts = self._state["warp_counts"]
        first = position - position % self.per_batch  # (batches start at multiples of per_batch)
        cached = self._cta_counts
        if cached is not None and cached[0] == first:
            return cached[1][position - first]
        end = min(first + self.per_batch, len(self.ctas))
        if end > self._next or (self._open is not None and end == self._next):
            return int(counts[position * wpc:(position + 1) * wpc].sum())  # (its batch still runs)
        # the batch's CTAs at once, kept for the calls that follow (one a CTA, in order)
        self._cta_counts = (first, counts[first * wpc:end * wpc].reshape(-1, wpc).sum(axis=1).tolist())
        return self._cta_counts[1][position - first]

    def drop_records(self):
        """The batch under way summarises no more memory accesses (its windows still come, their
        traces without the records: for a consumer that drops them, see
        maxsim.gpu.gpu._untimed_rest); the next batch records as before."""
        self._ctx.recorder = None

    def drop(self, unwanted) -> int:
        """Leave out the CTAs not run yet whose ids ``unwanted(cta id)`` holds (a consumer that no
        longer needs them: a prediction for timing only); the result then holds the CTAs run.
        Returns how many were left out."""
        rest = self.ctas[self._next:]
        keep = [c for c in rest if not unwanted(c)]
        if len(keep) == len(rest):
            return 0
        self.ctas = self.ctas[:self._next] + keep
        end = len(self.ctas) * self.wpc  # (the arrays' entries past what has run are still empty)
        self._warp_threads = self._warp_threads[:end]
        for key in ("warp_divergent", "warp_idle", "warp_counts"):
            if self._state[key] is not None:
                self._state[key] = self._state[key][:end]
        return len(rest) - len(keep)

    def stop_recording(self):
        """Run the batches still to come without recording their traces (for a consumer that holds
        the traces it needs already); the result keeps the recorder's key."""
        self.recorder = self._ctx.recorder = None
        self._hand_over = False

    def release(self):
        """The launch is over: its compiled kernel may serve the next launch of the same kernel with
        the same constants (made with ``reuse``; see :func:`_idle_program`)."""
        if self._reuse is not None and self._next >= len(self.ctas):
            _release_program(self._reuse, self._program)
            self._reuse = None

    def finish(self, trace=None) -> LaunchResult:
        """The launch's result once every batch has run (``trace``: the warps' traces to keep in it)."""
        while self._open is not None:  # (a batch run in windows whose warps have all been timed)
            self.sink(*self.more())
        if self._next < len(self.ctas):
            raise LaunchError(f"kernel {self.kernel.name}: the launch's result was asked for after "
                              f"{self._next} of its {len(self.ctas)} CTAs")
        state = self._state
        return LaunchResult(self.kernel, self.grid, self.block, state["total"], int(self._warp_threads.sum()),
                            self._counts, trace, self.timing_only, self._warp_threads, tuple(self.ctas),
                            self._key, state["warp_divergent"], state["warp_idle"], state["warp_counts"])


MAX_BLOCK = 256  # instructions one straight-line step may run

# Compiled kernels of finished launches, for the next launch of the same code with the same constants
# (a sampled prediction launches the same kernel with the same arguments many times, each compile
# costing ~10 ms for an SGEMM). An instruction's closure folds in what the launch fixes (constants,
# texture handles, the block and grid) and reads the rest (memories, textures, trace recorder,
# watchdog) from its Context when it runs: a launch taking an idle Program gives its Context the
# new launch's fields. Taken out while a launch runs, so two live launches never share one.
_IDLE = {}
IDLE_PROGRAMS = 8  # compiled kernels kept (a simulator setting: bounds the memory they hold)


def _program_key(ctx, computed):
    constants = tuple(sorted((bank, bytes(data)) for bank, data in ctx.constants.items()))
    return (id(ctx.kernel), bytes(ctx.const_bank), constants, tuple(computed), ctx.block, tuple(ctx.grid),
            ctx.shared_words)


def _idle_program(key, ctx):
    """The idle Program compiled for ``key`` with its Context now ``ctx``'s fields, or None."""
    program = _IDLE.pop(key, None)
    if program is None or program.ctx.kernel is not ctx.kernel:
        return None
    program.ctx.__dict__.update(ctx.__dict__)
    return program


def _release_program(key, program):
    ctx = program.ctx
    # let go of the launch's memories and traces (the next launch sets its own)
    ctx.memory = ctx.textures = ctx.recorder = ctx.watchdog = None
    ctx.shared = np.zeros(1, dtype=np.uint32)
    program.work.clear()  # (the rows its tables worked in: made again at their next call)
    _IDLE.pop(key, None)
    _IDLE[key] = program
    while len(_IDLE) > IDLE_PROGRAMS:
        del _IDLE[next(iter(_IDLE))]


class Program:
    """The kernel compiled for one launch: per pc, the straight-line block that starts there.

    A block is the longest run of instructions from a pc that contains no control instruction;
    it runs as one step of the launch loop (its pcs appended to the trace together, its counts
    added together). A run of consecutive unguarded ALU instructions of a block (FFMA/FMUL/FADD,
    MOV, IADD, ISCADD, XMAD, shifts, logic, ISETP, ...) becomes one table of
    :mod:`maxsim.functional.alublock` run in one call. ``computed[i]`` false (a timing-only launch)
    leaves instruction i's values uncomputed (see :mod:`maxsim.functional.slicing`)."""

    def __init__(self, ctx, computed):
        self.ctx = ctx
        self.instrs = ctx.kernel.instructions
        self.computed = computed
        self.single = [None] * len(self.instrs)
        self.blocks = {}
        self.work = alublock.Work()  # (the rows its ALU tables work in)
        for i, instr in enumerate(self.instrs):
            if instr.opcode not in CONTROL:
                self.single[i] = compile_instruction(ctx, instr, computed[i])

    def _row(self, i):
        """Instruction i's row in a table of :mod:`maxsim.functional.alublock` (None: it has none)."""
        try:
            return alublock.row(self.ctx, self.instrs[i], self.ctx.kernel.reg_cnt)
        except ConstantFault:
            return None

    def block(self, pc):
        """``(length, steps, guarded)`` of the block at pc: steps are ``(offset, fn, guard)``
        with guard None (unguarded) or ``(pred, negated)``; ``guarded`` counts guarded steps."""
        b = self.blocks.get(pc)
        if b is not None:
            return b
        instrs = self.instrs
        end = pc
        while end < len(instrs) and end - pc < MAX_BLOCK and instrs[end].opcode not in CONTROL:
            end += 1
        steps = []
        # the pending run of unguarded instructions that have a table row: (offset, index, row)
        run = []

        def flush():
            if not run:
                return
            # (the fp32-only runs too: alublock's rows write a register that is also a source
            # through a scratch row, where fp32.run's loop (FADD R0, R0, R6) runs without vector
            # instructions; stencil2d's functional run ~5-10% less, SGEMM's the same)
            if len(run) == 1:
                fn = self.single[run[0][1]]  # (one instruction: its closure costs no more)
            else:
                fn = alublock.runner(*alublock.table([r for _, _, r in run]), self.work)
            steps.append((run[0][0], fn, None))
            run.clear()
        for i in range(pc, end):
            instr = instrs[i]
            guard = None if instr.pred == ins.PT and not instr.pred_neg else (instr.pred, instr.pred_neg)
            fn = self.single[i]
            if guard is None and not getattr(fn, "fault", False):
                if (not self.computed[i] and fn is None) or getattr(fn, "nothing", False):
                    continue  # (a value not computed, or no value changed: nothing to run, the run goes on)
                r = self._row(i)
                if r is not None:
                    run.append((i - pc, i, r))
                    continue
            flush()
            if getattr(fn, "nothing", False):
                fn = None  # (an instruction that changes no value: only its guard's thread count stays)
            if fn is not None or guard is not None:
                steps.append((i - pc, fn, guard))
        flush()
        b = (end - pc, tuple(steps), sum(1 for s in steps if s[2] is not None))
        self.blocks[pc] = b
        return b


def _ticker(progress, state, start, n, total, expected):
    """A callable that reports the CTAs done, estimated within the batch of ``n`` CTAs from ``start``."""
    base = state["total"]
    per_cta = expected / total if expected else (base / start if start else 0)

    def tick():
        frac = min(0.99, (state["total"] - base) / (per_cta * n)) if per_cta else 0.0
        progress(start + n * frac, total, "functional run", "CTAs")
    tick()
    return tick


_LANES = Kept(16)  # (CTAs, warps per CTA, block, shared words) -> a batch's per-lane arrays (read-only)


def _batch_lanes(nc, wpc, block, shared_words):
    """The per-lane arrays every batch of ``nc`` CTAs has alike: thread ids, lane ids, CTA numbers
    (in the batch) and shared-memory bases, made once and shared read-only (groups gather from
    them, never write them), with the lanes that exist (``tid < block``) and whether that is
    every lane."""
    def make():
        tid = np.tile(np.arange(wpc * 32, dtype=np.uint32), nc)
        cta = np.repeat(np.arange(nc, dtype=np.int64), wpc * 32)
        out = (tid, tid % 32, cta, cta * shared_words, tid < block)
        for a in out:
            a.flags.writeable = False
        return out + (bool(out[4].all()),)
    return _LANES.get((nc, wpc, block, shared_words), make)


def _initial_group(kernel, batch, wpc, block, shared_words, warp_base):
    nc = len(batch)
    lanes = nc * wpc * 32
    g = Group()
    g.regs = np.zeros((kernel.reg_cnt + 1, lanes), dtype=np.uint32)
    g.preds = np.zeros((8, lanes), dtype=bool)
    g.preds[ins.PT] = True
    g.cc = np.zeros(lanes, dtype=np.uint32)
    tid, laneid, cta, shbase, active, g.full = _batch_lanes(nc, wpc, block, shared_words)
    g.active = active.copy()
    g.pc = 0
    g.stack = []
    g.simt = []
    g.warps, ctaid_x, ctaid_y = _batch_ids(batch, wpc, warp_base)
    ids = dict(tid=tid, ctaid_x=ctaid_x, ctaid_y=ctaid_y, cta=cta, shbase=shbase, laneid=laneid)
    g.ids_base = (int(g.warps[0]), tuple(ids[name] for name in ID_NAMES))
    g.init_counters()
    g._ids = list(g.ids_base[1])  # (every warp of the batch: the arrays themselves)
    return g


_IDS = Kept(64)  # (CTA ids, warps per CTA, first CTA's number) -> a batch's warp ids and per-lane CTA ids


def _batch_ids(batch, wpc, warp_base):
    """The warp ids of a batch of CTAs (``batch``, the first numbered ``warp_base`` in the launch) and
    their lanes' CTA ids (x, y): made once for a batch run again (the same batch of a launch
    repeated) and shared read-only, as :func:`_batch_lanes`'s arrays."""
    def make():
        nc = len(batch)
        warps = np.arange(nc * wpc, dtype=np.int64) + warp_base * wpc
        cx, cy = np.array(batch, dtype=np.uint32).reshape(nc, 2).T
        out = (warps, np.repeat(cx, wpc * 32), np.repeat(cy, wpc * 32))
        for a in out:
            a.flags.writeable = False
        return out
    return _IDS.get((tuple(batch), wpc, warp_base), make)


def _divergent(g, taken):
    """Per warp, whether its active lanes disagree on a branch (None: no warp diverges)."""
    if g.full:  # (every lane active)
        n = warp_lanes(taken)
        div = (n > 0) & (n < 32)
    else:
        n = warp_lanes(taken & g.active)
        div = (n > 0) & (n < warp_lanes(g.active))
    return div if div.any() else None


def _warp_ok(instr, g, taken, ctx):
    """Per-warp outcome of CAL / RET; a warp whose active lanes disagree is an error."""
    if g.full:  # (every lane active)
        n = warp_lanes(taken)
        any_t, all_t = n > 0, n == 32
    else:
        n = warp_lanes(taken & g.active)
        any_t, all_t = n > 0, n == warp_lanes(g.active)
    div = any_t & ~all_t
    if div.any():
        act = g.active.reshape(-1, 32)
        w = int(np.flatnonzero(div)[0])
        lane = w * 32 + int(np.flatnonzero(act[w])[0])
        raise SimulationError(ctx.where(instr, g, lane).format(
            f"divergent {instr.opcode}: the active lanes of this warp disagree on {instr.full_opcode} "
            f"(a divergent call or return is not modelled; make it warp-uniform or use BRA)"))
    return any_t


def _guard_mask(g, pred, neg):
    """Lanes of group g whose guard predicate holds, among the active ones (None: every lane)."""
    p = g.preds[pred]
    # copy: a view would change under an instruction that writes its own guard
    # (@P0 ISETP ... P0, P1, ...) and mask its second destination wrongly
    m = ~p if neg else p.copy()
    if not g.full:
        m &= g.active
    if m.all():
        return None
    return m


def _flush_threads(g, warp_threads, warp_idle):
    """Add group g's pending thread-instruction counts to its warps, and its pending instructions'
    idle lanes (32 less the active ones) to theirs (before its active lanes change or it ends)."""
    lanes = g.thr_lanes
    counts = None if lanes is None else warp_lanes(lanes)
    if g.thr_n or (g.idle_n and not g.full):
        active = warp_lanes(g.active)
        if g.thr_n:
            counts = active * g.thr_n if counts is None else counts + active * g.thr_n
        if g.idle_n and not g.full:
            warp_idle[g.warps] += g.idle_n * (32 - active)
    if counts is not None:
        warp_threads[g.warps] += counts
    g.thr_n = 0
    g.thr_lanes = None
    g.idle_n = 0


def _run_batch(ctx, program, batch, wpc, block, counts, state, limit, recorder, warp_base, warp_threads,
               tick=None):
    for _ in _batch_steps(ctx, program, batch, wpc, block, counts, state, limit, recorder, warp_base,
                          warp_threads, tick):
        pass


def _batch_steps(ctx, program, batch, wpc, block, counts, state, limit, recorder, warp_base, warp_threads,
                 tick=None, pause=None):
    """Run a batch of CTAs (a generator). ``pause()`` (None: never) is asked at the points where the
    run may stop for a while, a group at a backward branch or between groups: when true, the
    generator yields there (the consumer takes the trace recorded so far) and goes on when resumed
    exactly as if it had not stopped; a group that goes on after a pause starts a new segment."""
    kernel = ctx.kernel
    instrs = kernel.instructions
    n_instr = len(instrs)
    runnable = [_initial_group(kernel, batch, wpc, block, ctx.shared_words, warp_base)]
    warp_divergent = state["warp_divergent"]
    warp_idle = state["warp_idle"]
    warp_counts = state.get("warp_counts")
    live = np.full(len(batch), wpc, dtype=np.int64)  # live warps per CTA
    waiting = []
    while runnable or waiting:
        if tick is not None:
            tick()
        if not runnable:
            runnable = _release_barriers(ctx, waiting, live)
            waiting = []
            continue
        if pause is not None and pause():
            yield
        g = _next_group(runnable)
        if recorder is not None:
            recorder.go_on(g)
        while True:
            pc = g.pc
            if pc >= n_instr:
                raise SimulationError(ctx.where(instrs[-1], g, 0).format(
                    "execution ran past the last instruction (missing EXIT?)"))
            instr = instrs[pc]
            nw = g.warps.size
            seg = g.segment
            if instr.opcode not in CONTROL:
                length, steps, nguarded = program.block(pc)
                counts[pc:pc + length] += nw
                state["total"] += length * nw
                g.idle_n += length
                if warp_counts is not None:
                    warp_counts[g.warps] += length
                if state["total"] > limit:
                    raise ctx.watchdog.limit_error(ctx, instr, g)
                base = 0
                if seg is not None:
                    base = len(seg.pcs)
                    seg.pcs.extend(range(pc, pc + length))
                every = None if g.full else g.active
                g.thr_n += length - nguarded
                for off, fn, guard in steps:
                    if guard is None:
                        m = every
                    else:
                        m = _guard_mask(g, guard[0], guard[1])
                        if m is None:
                            g.thr_n += 1
                        elif g.thr_lanes is None:
                            g.thr_lanes = m.astype(np.int64)
                        else:
                            g.thr_lanes += m
                    if fn is not None:
                        g.pos = base + off
                        fn(g, m)
                g.pc = pc + length
                continue
            counts[pc] += nw
            state["total"] += nw
            g.idle_n += 1
            if warp_counts is not None:
                warp_counts[g.warps] += 1
            if state["total"] > limit:
                raise ctx.watchdog.limit_error(ctx, instr, g)
            if seg is not None:
                g.pos = len(seg.pcs)
                seg.pcs.append(pc)
            # execution mask: active lanes whose guard predicate holds (None: all lanes)
            if instr.pred == ins.PT and not instr.pred_neg:
                m = None if g.full else g.active
            else:
                m = _guard_mask(g, instr.pred, instr.pred_neg)
            op = instr.opcode
            if op == "EXIT" or op in simt.OPS:
                if op in simt.PUSH:
                    simt.push(g, instr)
                    g.pc = pc + 1
                    continue
                lanes = g.active.copy() if m is None else (m & g.active)
                if not np.count_nonzero(lanes):  # (cheaper than lanes.any())
                    g.pc = pc + 1
                    continue
                _flush_threads(g, warp_threads, warp_idle)
                if op == "EXIT":
                    warp_threads[g.warps] += warp_lanes(lanes)
                    simt.leave(g, lanes)
                else:
                    simt.wait(ctx, instr, g, lanes)
                g.pc = pc + 1
                groups, gone = simt.settle(g)
                if gone.size:
                    np.subtract.at(live, (gone // wpc) - warp_base, 1)
                    if recorder is not None:
                        # (every warp of the group, the common case, without a search)
                        recorder.exit(g, np.isin(g.warps, gone) if gone.size != g.warps.size else slice(None))
                if len(groups) == 1 and groups[0] is g:
                    continue
                runnable.extend(groups)
                g = None
                break
            if op == "BAR":
                bar = instr.operands[0].value
                if not 0 <= bar <= 15:
                    raise SimulationError(ctx.where(instr, g, 0).format(f"barrier {bar} is out of range 0..15"))
                _flush_threads(g, warp_threads, warp_idle)
                if "RED" in instr.mods:
                    _reduce_at_barrier(ctx, instr, g, m)
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
            # BRA / CAL: groups split when warps differ; a BRA whose active lanes disagree
            # diverges (CAL must be warp-uniform; RET waits at its call's token, see simt)
            if op == "BRA" and len(instr.operands) == 2:
                m = _cc_test(ctx, instr, g, m)
            if op == "BRA" and m is not None:
                div = _divergent(g, m)
                if div is not None:
                    _flush_threads(g, warp_threads, warp_idle)
                    state["divergent"] += int(div.sum())
                    warp_divergent[g.warps[div]] += 1
                    rest = np.flatnonzero(~div)
                    d = g.take(np.flatnonzero(div))
                    simt.diverge(d, m.reshape(-1, 32)[div].reshape(-1), instr.target)
                    d.pc = pc + 1
                    if recorder is not None:
                        recorder.split(g, d, None)
                    if rest.size:
                        # (the warps that go on together, most often a run of them: taken as a slice)
                        run = rest[-1] - rest[0] + 1 == rest.size
                        g = g.take(slice(int(rest[0]), int(rest[-1]) + 1) if run else rest)
                        m = m.reshape(-1, 32)[rest].reshape(-1)
                        runnable.append(d)
                        if recorder is not None:
                            recorder.start(g)
                        nw = g.warps.size
                    else:
                        runnable.append(d)
                        g = None
                        break
            taken = np.ones(nw, dtype=bool) if m is None else _warp_ok(instr, g, m, ctx)
            dest = instr.target
            if taken.all():
                if op == "CAL":
                    g.stack.append(pc + 1)
                    simt.call(g, pc + 1)
                g.pc = dest
                if dest <= pc:
                    ctx.watchdog.back_edge(g, pc)
                    if tick is not None:
                        tick()
                    if runnable:  # let the groups behind catch up (see _next_group)
                        _flush_threads(g, warp_threads, warp_idle)
                        runnable.append(g)
                        g = None
                        break
                    if pause is not None and pause():
                        yield
                        if recorder is not None:
                            recorder.start(g)  # (the recorder has handed over the segment so far)
                continue
            if not taken.any():
                g.pc = pc + 1
                continue
            _flush_threads(g, warp_threads, warp_idle)
            yes = g.take(np.flatnonzero(taken))
            no = g.take(np.flatnonzero(~taken))
            if op == "CAL":
                yes.stack.append(pc + 1)
                simt.call(yes, pc + 1)
            yes.pc = dest
            no.pc = pc + 1
            if recorder is not None:
                recorder.split(g, yes, no)
            runnable.extend([no, yes])
            g = None
            break


def _group_key(g):
    return g.pc, tuple(g.stack), simt.signature(g)


def _next_group(runnable):
    """Take the runnable group to run next: the one at the lowest pc, merged with every other
    runnable group at the same pc with the same call and reconvergence stacks. Warps whose paths
    split (divergence, warp-uniform branches taken differently) run as separate groups; a group
    that takes a backward branch while others are runnable goes back to the pool (see
    ``_run_batch``), so the groups behind reach the loop head and run on as one again. The order
    only matters to speed: each warp executes its own instructions whatever group it is in."""
    if len(runnable) == 1:
        return runnable.pop()
    first = min(range(len(runnable)), key=lambda i: runnable[i].pc)
    key = _group_key(runnable[first])
    same = [x for x in runnable if x.pc == key[0] and _group_key(x) == key]
    if len(same) == 1:
        return runnable.pop(first)
    runnable[:] = [x for x in runnable if not (x.pc == key[0] and _group_key(x) == key)]
    return Group.merge(same)


# the condition-code tests the model evaluates: on FSET.CC's / ISET.CC's zero (Z) and sign (S) flags, with
# carry and overflow clear (a signed comparison of the result with 0) [the flag tests of the CC
# register as envytools documents them for Fermi-Maxwell: LT = S xor O, EQ = Z, LE = Z or (S xor O)]
_CC_TESTS = {"F": lambda z, s: np.zeros_like(z), "LT": lambda z, s: s, "EQ": lambda z, s: z,
             "LE": lambda z, s: z | s, "GT": lambda z, s: ~z & ~s, "NE": lambda z, s: ~z, "GE": lambda z, s: ~s}


def _cc_test(ctx, instr, g, m):
    """The lanes of a BRA CC.test (among ``m``, None: all active) whose condition code passes."""
    test = instr.operands[0].name[3:]
    lanes = g.active if m is None else (m & g.active)
    fn = _CC_TESTS.get(test)
    if fn is None:
        raise SimulationError(ctx.where(instr, g, int(np.flatnonzero(lanes)[0]) if lanes.any() else 0).format(
            f"BRA CC.{test}: this condition-code test is not modelled (CC.{', CC.'.join(_CC_TESTS)} are)"))
    unset = lanes & (g.cc & CC_FLAGS == 0)
    if unset.any():
        raise SimulationError(ctx.where(instr, g, int(np.flatnonzero(unset)[0])).format(
            f"BRA CC.{test} reads a condition code that no FSET.CC or ISET.CC set (the model keeps the zero "
            f"and sign flags of FSET.CC and ISET.CC only)"))
    return lanes & fn((g.cc & CC_ZERO) != 0, (g.cc & CC_SIGN) != 0)


def _reduce_at_barrier(ctx, instr, g, m):
    """BAR.RED.{POPC|AND|OR} n, p: the arriving lanes' p added to their CTA's pending reduction
    (how many hold p, whether all do, whether any does); :func:`_release_barriers` makes it the
    CTA's result, which B2R.RESULT reads (:func:`maxsim.functional.intops.barrier_result`)."""
    op = instr.operands[1] if len(instr.operands) > 1 else None
    lanes = g.active if m is None else (m & g.active)
    val = np.ones_like(lanes) if op is None else (~g.preds[op.reg] if op.not_ else g.preds[op.reg])
    val = val & lanes
    mode = next(x for x in instr.mods if x in ("POPC", "AND", "OR"))
    pending = ctx.bar_pending
    for c in np.unique(g.cta[lanes]) if lanes.any() else ():
        sel = (g.cta == c) & lanes
        n, al, an, _ = pending.get(int(c), (0, True, False, mode))
        pending[int(c)] = (n + int(val[sel].sum()), al and bool(val[sel].all()), an or bool(val[sel].any()), mode)


def _release_barriers(ctx, waiting, live):
    """All runnable warps are blocked: release the CTA barriers that every live warp has reached."""
    if len(waiting) == 1 and not ctx.bar_pending and waiting[0].warps.size == int(live.sum()):
        # (the common case, one group holding every live warp of the batch: each CTA's warps have
        # all arrived at the one barrier; what the checks below find, without sorting the CTAs)
        g = waiting[0]
        g.bar_id = -1
        if ctx.recorder is not None:
            ctx.recorder.merged(waiting, waiting)
        return [g]
    # per CTA (in the order the waiting groups first name them): warps arrived, and the least and
    # the greatest barrier they wait on (one array pass for all CTAs of a batch)
    ctas, warps, ids = [], [], []
    for g in waiting:
        c, n = np.unique(g.cta[::32], return_counts=True)
        ctas.append(c)
        warps.append(n)
        ids.append(np.full(c.size, g.bar_id, dtype=np.int64))
    ctas = np.concatenate(ctas)
    warps = np.concatenate(warps)
    ids = np.concatenate(ids)
    every, first, inv = np.unique(ctas, return_index=True, return_inverse=True)
    arrived = np.bincount(inv, weights=warps, minlength=every.size).astype(np.int64)
    least = np.full(every.size, np.iinfo(np.int64).max, dtype=np.int64)
    most = np.full(every.size, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(least, inv, ids)
    np.maximum.at(most, inv, ids)
    bad = (arrived != live[every]) | (least != most)
    if bad.any():
        j = int(np.flatnonzero(bad)[np.argmin(first[bad])])  # the first such CTA named
        c, k = int(every[j]), int(arrived[j])
        g = next(x for x in waiting if (x.cta == c).any())
        pos = int(np.flatnonzero(g.cta == c)[0])
        instr = ctx.kernel.instructions[g.pc - 1]
        why = (f"{k} of its {int(live[c])} live warps arrived" if k != live[c]
               else f"its warps wait on different barriers {sorted(set(ids[inv == j].tolist()))}")
        raise SimulationError(ctx.where(instr, g, pos).format(
            f"BAR.SYNC can never complete: {why}"))
    # the reductions of BAR.RED become their CTAs' results (B2R.RESULT reads them)
    pending = ctx.bar_pending
    if pending:
        results = ctx.bar_result
        for c in every[np.argsort(first, kind="stable")].tolist():
            if c in pending:
                results[c] = pending.pop(c)
    # merge released groups that continue at the same pc
    # (groups at the same pc but with different call stacks, e.g. a BAR inside a subroutine
    # called from two places, must stay apart: a merged group keeps only one stack)
    by_pc = {}
    for g in waiting:
        by_pc.setdefault((g.pc, tuple(g.stack), simt.signature(g)), []).append(g)
    out = []
    for _, gs in sorted(by_pc.items()):
        merged = gs[0] if len(gs) == 1 else Group.merge(gs)
        merged.bar_id = -1
        out.append(merged)
    if ctx.recorder is not None:
        ctx.recorder.merged(waiting, out)
    return out
