"""A GPU of many SMs sharing one L2 and DRAM, with a block dispatcher.

CTAs go to the SMs round-robin (CTA 0 to SM 0, CTA 1 to SM 1, ...) until every SM holds as many
as fit; each further CTA goes to the SM whose slot frees first. That gives full waves and a tail
wave, as on the hardware. The SMs advance in quanta of ``QUANTUM`` cycles, in the order of
simpy processes, so their requests reach the shared L2/DRAM roughly in time order (the
bandwidth servers tolerate the small disorder, see :class:`~maxsim.timing.memory_system.BandwidthServer`):
compiled SMs without leaving compiled code between quanta (:mod:`maxsim.timing.clock`), the
reference SMs (or ``clock="simpy"``) as simpy processes, with the same numbers.
"""

from __future__ import annotations

import collections
import itertools
import time

import attrs
import numpy as np

from ..collector import paced_run
from ..functional.launch import LaunchStream, launch
from ..functional.trace import TraceRecorder
from ..timing.clock import PROGRESS_CYCLES, advance, clock_name
from ..timing.cores import core_name
from ..timing.memory_system import L2_STARTS, MemorySystem, carried_over
from ..timing import core as K
from ..timing.sm import SM, CtaBlock, PartPcs, WarpView, _closed, flatten_items, flatten_queued, flatten_small_queued, flatten_traces, residency
from ..timing.stats import Stats
from ..timing.summaries import make_summariser

QUANTUM = 32  # cycles an SM runs before letting the others catch up (a simulator setting;
# larger quanta let SMs drift apart and reach the shared L2/DRAM out of order: +0.3% cycles at 128,
# +4% at 512 on a latency-bound SGEMM)


@attrs.define
class GpuResult:
    cycles: int  # core cycles from the first CTA's start to the last CTA's end
    seconds: float  # including the launch overhead
    sms_used: int
    waves: float  # CTAs / (SMs x resident CTAs per SM)
    resident_ctas: int
    stats: Stats  # summed over the SMs (cycles = the GPU's)
    l2_hit_rate: float
    dram_bytes: int
    launch: object
    sim_seconds: float
    sms: list = attrs.field(factory=list, repr=False)  # the SM models that ran CTAs
    memory: object = attrs.field(default=None, repr=False)  # the memory system they shared
    timed_sm: object = attrs.field(default=None, repr=False)  # SM 0 as the timed SM (``timed``)
    stopped: object = attrs.field(default=None, repr=False)  # the Watch that stopped the run (``watch``)


def trace_ctas(kernel, grid, block, params, memory, textures, cfg, ctas=None, max_instructions=None,
               progress=None, timing_only=False):
    """Functional run of ``ctas`` (default: the whole grid) with the trace the timing model reads:
    ``(launch result, [(cta id, [warp traces])])`` in the order of ``ctas``. ``timing_only``:
    compute only what the trace needs (memory results then not valid; see
    :mod:`maxsim.functional.slicing`)."""
    rec = TraceRecorder(make_summariser(cfg))
    res = launch(kernel, grid, block, params, memory, textures, recorder=rec, ctas=ctas,
                 max_instructions=max_instructions, progress=progress, timing_only=timing_only)
    gx, gy = (grid, 1) if isinstance(grid, int) else (tuple(grid) + (1,))[:2]
    cta_list = [(x, y) for y in range(gy) for x in range(gx)] if ctas is None else [tuple(c) for c in ctas]
    wpc = (block + 31) // 32
    return res, [(cid, [res.trace[i * wpc + w] for w in range(wpc)]) for i, cid in enumerate(cta_list)]


def stream_ctas(stream):
    """``(cta id, [warp traces])`` of each CTA of a :class:`~maxsim.functional.launch.LaunchStream`
    (made with a trace recorder), in launch order; the next batch of CTAs runs functionally when
    the one before has been handed out. A CTA's traces leave the batch as it is handed out (None:
    its batch was not recorded, see ``LaunchStream.record``). A
    stream run in windows (its ``router``, a :class:`TraceRouter`) hands its traces as they
    begin: the router joins the next windows to them."""
    wpc = stream.wpc
    i = 0
    for batch, traces in stream:
        if traces is None:  # a batch run without recording (the stream's ``record``)
            for cid in batch:
                yield cid, None
            i += len(batch)
            continue
        router = getattr(stream, "router", None)
        if router is not None:
            router.handed(traces)
        left = len(batch)
        for cid in batch:
            left -= 1
            stream.batch_left = left  # CTAs of this batch still to come (taken without running more)
            yield cid, [traces.pop(i * wpc + w) for w in range(wpc)]
            i += 1


STREAM_WINDOW = 4096  # trace positions the functional run records (summed over its segments: about
# that many per warp of a batch that runs as one group) before it pauses, in a whole-GPU run that
# streams its traces in windows (a simulator setting: the traces held are about two windows per
# resident warp; fewer positions mean more pauses and stops of the SMs)
STREAM_MIN_ROOM = 256  # positions a warp with more trace to come keeps loaded and not issued when the
# SMs run (at least 4 quanta at the 2 issues a warp can make per cycle; a simulator setting)


class TraceRouter:
    """Where the windows of a launch's traces go (:meth:`~maxsim.functional.launch.LaunchStream.set_window`):
    a warp's next window is joined to its trace, on the SM that runs it or, before that, to the
    trace it was handed with; a warp that has exited is closed there. :meth:`refill` runs the
    functional run on (a window at a time) until every resident warp with more trace to come has
    enough loaded, and says until when the SMs may run."""

    def __init__(self, stream, quantum):
        self.stream = stream
        self.quantum = quantum
        self.at = {}  # warp id -> its trace not yet on an SM, or (SM, slot, warp view)
        self.sms = set()
        self.dirty = False  # warps loaded since the last refill

    def handed(self, traces):
        for w, tr in traces.items():
            if tr.open:
                self.at[w] = tr

    def loaded(self, warp, sm, slot, view):
        self.at[warp] = (sm, slot, view)
        self.sms.add(sm)
        self.dirty = True

    def take(self, traces, gone, done):
        """A window (:meth:`~maxsim.functional.launch.LaunchStream.more`'s)."""
        at = self.at
        per_sm = {}
        for w, ext in traces.items():
            where = at.get(w)
            if where is None:
                continue  # (a warp whose trace was let go of: a timing run stopped early)
            if isinstance(where, tuple):
                per_sm.setdefault(where[0], []).append((where[1], where[2], ext.parts))
            else:
                where.parts.extend(ext.parts)
        for sm, items in per_sm.items():
            sm.extend_traces(items)
        for w in (list(at) if done else gone):
            where = at.pop(w, None)
            if isinstance(where, tuple):
                where[0].close_trace(where[1], where[2])
            elif where is not None:
                where.open = False

    def refill(self):
        """Run the functional run on until every resident warp with more trace to come has at
        least ``max(STREAM_MIN_ROOM, STREAM_WINDOW / 2)`` positions loaded and not issued; returns
        the cycle up to which the SMs may then run (no warp can issue past its loaded trace
        before it: two issues per cycle, a quantum's overrun), or None when no trace is open."""
        self.dirty = False
        want = max(STREAM_MIN_ROOM, STREAM_WINDOW // 2)
        while True:
            rooms = [r for r in (sm.trace_room() for sm in self.sms) if r is not None]
            if not rooms:
                return None
            if min(r for r, _ in rooms) < want and self.stream.running:
                self.take(*self.stream.more())
                continue
            return min(t + (r - 8) // 2 - 2 * self.quantum for r, t in rooms)


AHEAD_CTAS = 64  # CTAs the block dispatcher takes from its functional batch at once, their complete
# traces flattened together (CtaQueue; a simulator setting: more saves Python work per CTA, and
# holds more flattened traces at once; bounded by FLATTEN_TOGETHER_POSITIONS positions too)


class CtaQueue:
    """The block dispatcher's queue of CTAs (what an SM's ``dispatcher`` reads: truth, ``popleft``)
    over an iterator of ``(cta id, [warp traces])``, taken from it only when asked for: fed by
    :func:`stream_ctas`, a whole-GPU run holds the traces of the CTAs resident on the SMs and of
    the rest of the functional batch, whatever the size of the grid. ``ready()``: how many items
    can be taken without running more of the functional run (the rest of its batch); up to
    AHEAD_CTAS of them are taken at once and, once :meth:`flatten_with` has named the SMs' pc
    units, their complete traces flattened together (``flats``: cta id -> its warps' flattened
    traces, which the SM that starts the CTA takes).

    Given the dispatcher's pace (:meth:`stage_with`), the CTAs taken are staged in a ready queue
    ``rq`` (``maxsim.timing.core.RQ_*``: their flattened traces in one int64 array, with the pace),
    from which the compiled SM core starts a CTA itself when one ends (``core._next_cta``) and
    ``popleft`` takes the next one as well, in the same order; ``staged``: the staged CTAs' items
    and flattened traces by their number (the SM takes a CTA's when it makes its records)."""

    def __init__(self, items, ready=None):
        self._items = iter(items)
        self._head = collections.deque()
        self._ready = ready
        self._unit = None
        self.flats = {}
        self.clock = None
        self.rq = None
        self.staged = {}
        self._seq = 0  # the number of the next CTA staged

    def flatten_with(self, unit, unit_key):
        self._unit = (unit, unit_key)

    def stage_with(self, clock):
        """Stage the CTAs taken from now on in the ready queue, ``clock`` (a :class:`DispatchClock`)
        its pace (kept in the queue's array, which the core reads and advances)."""
        if self._unit is None:
            raise ValueError("a CTA queue stages CTAs once it flattens them (flatten_with)")
        self.clock = clock
        self.rq = np.zeros(K.RQ_HEAD0, np.int64)
        self.rq[:2] = clock.state
        clock.state = self.rq[:2]

    def _fill(self):
        rq = self.rq
        if rq is not None and rq[K.RQ_TAKEN] < rq[K.RQ_COUNT]:
            return True
        if not self._head:
            n = 1 if self._ready is None else max(1, min(self._ready(), AHEAD_CTAS))
            for item in itertools.islice(self._items, n):
                self._head.append(item)
            if len(self._head) > 1 and self._unit is not None:
                self.flats.update(flatten_items(self._head, *self._unit))
        if rq is not None and self._head and all(item[1] is not None and _closed(item[1]) for item in self._head):
            self._stage()
        return bool(self._head) or (self.rq is not None and bool(self.rq[K.RQ_TAKEN] < self.rq[K.RQ_COUNT]))

    def _stage(self):
        """The head's CTAs into a new ready queue (the pace carried over)."""
        items = list(self._head)
        self._head.clear()
        nw_all = sum(len(item[1]) for item in items)
        rows_at = K.RQ_HEAD0 + K.RQ_HW * len(items)
        at = rows_at + K.RW_SIZE * nw_all  # where the next array goes
        head, rows, chunks = [], [], []
        add = chunks.append
        placed = {}  # id(pcs or offs array) -> its place (a CtaBlock's, shared by the CTAs of its group)
        seq0 = self._seq
        r = rows_at
        part_pcs = WarpView.part_pcs
        traces = None
        for cid, traces, *_ in items:
            flats = self.flats.pop(cid, None)
            if flats is None:
                flats = flatten_traces([tr.parts for tr in traces], *self._unit)
            nw = len(traces)
            if type(flats) is CtaBlock:  # (its warps' views share one list of their pcs)
                self.staged[self._seq] = (cid, PartPcs([part_pcs(traces[0].parts)] * nw), flats)
                pcs, offs, b, sec, aux = flats.pcs, flats.offs, flats.bounds, flats.sec, flats.aux
                n, no = pcs.size, offs.size
                p = placed.get(id(pcs))
                if p is None:
                    p = placed[id(pcs)] = at
                    add(pcs)
                    at += n
                o = placed.get(id(offs))
                if o is None:
                    o = placed[id(offs)] = at
                    add(offs)
                    at += no
                s0 = at
                add(sec)
                at += sec.size
                a0 = at
                add(aux.reshape(-1))
                at += aux.size
                for w in range(nw):
                    rows += (p, n, o, no, s0 + b[w], b[w + 1] - b[w], a0 + w * n, 0)
                most = max(flats.most)
            else:
                self.staged[self._seq] = (cid, PartPcs(part_pcs(tr.parts) for tr in traces), flats)
                most = 0
                for pcs, aux, sec, offs, m in flats:
                    rows += (at, pcs.size, at + pcs.size, offs.size, at + pcs.size + offs.size, sec.size,
                             at + pcs.size + offs.size + sec.size, 0)
                    add(pcs)
                    add(offs)
                    add(sec)
                    add(aux)
                    at += pcs.size + offs.size + sec.size + aux.size
                    if m > most:
                        most = m
            self._seq += 1  # (the staged entry holds the views' parts, not the traces and their records)
            head += (nw, r, most, 0)
            r += K.RW_SIZE * nw
        rq = np.empty(at, np.int64)
        rq[:K.RQ_HEAD0] = 0
        rq[:2] = self.rq[:2]
        rq[K.RQ_COUNT] = len(items)
        rq[K.RQ_SEQ] = seq0
        rq[K.RQ_HEAD0:rows_at] = head
        rq[rows_at:rows_at + len(rows)] = rows
        if chunks:
            np.concatenate(chunks, out=rq[rows_at + len(rows):], casting="same_kind")
        self.rq = rq
        self.clock.state = rq[:2]
        items = traces = flats = None

    def __bool__(self):
        return self._fill()

    def popleft(self):
        if not self._fill():
            raise IndexError("pop from an empty CTA queue")
        rq = self.rq
        if rq is None or rq[K.RQ_TAKEN] >= rq[K.RQ_COUNT]:
            return self._head.popleft()
        k = int(rq[K.RQ_TAKEN])
        rq[K.RQ_TAKEN] = k + 1
        cid, parts, flats = self.staged.pop(int(rq[K.RQ_SEQ]) + k)
        self.flats[cid] = flats
        return cid, parts


class DispatchClock:
    """The block dispatcher's pace: a CTA taken from it at cycle ``t`` starts at
    ``take(t)``, no earlier than ``interval`` cycles after the CTA it handed out before
    (``gpu.cta_dispatch_interval``). The SMs of a whole-GPU run ask in the order they run, a
    quantum at a time: a request stamped earlier than the last one waits behind it."""

    __slots__ = ("state",)

    def __init__(self, interval, next_free=0):
        self.state = np.array([next_free, interval], np.int64)  # (a CtaQueue's ready queue holds it once staging)

    @property
    def interval(self):
        return int(self.state[1])

    @property
    def next_free(self):
        return int(self.state[0])

    def take(self, t):
        state = self.state
        nxt = int(state[0])
        start = t if t > nxt else nxt
        state[0] = start + int(state[1])
        return start


def run_sms(kernel, block, cfg, placement, memory_system, *, queue=None, hazards="warn", progress=None,
            total_instructions=None, until=None, keep_branch_times=True, clock=None, flatten_together=False,
            timed=None, router=None, watch=None, dispatch_from=0):
    """Run ``cfg.gpu.sms`` SMs sharing ``memory_system``: SM ``i`` starts with the CTAs
    ``placement[i]`` (a list of ``(cta id, warp traces)``, or ``(cta id, warp traces, delay)`` for a
    CTA whose warps start ``delay`` cycles late, oldest first; the SMs take them: the
    lists are left empty); ``queue`` (a deque or a
    :class:`CtaQueue` of further CTAs) is the block dispatcher's. Runs until every CTA has
    finished, or until cycle ``until``; a CTA from the queue starts at the dispatcher's pace
    (:class:`DispatchClock`), the first no earlier than cycle ``dispatch_from`` (see
    :func:`deal_first_wave`). ``keep_branch_times`` false: the SMs' warps keep no
    backward-branch times (the loop progress measure of the sampled prediction; a list per warp
    that would grow with the grid). ``clock``: "compiled" (the default, or ``$MAXSIM_CLOCK``) runs
    compiled SMs with :func:`~maxsim.timing.clock.run_together`, "simpy" as simpy processes (the
    reference SM always: same order, same numbers). ``flatten_together``: the placed CTAs' traces
    are flattened in one pass for all SMs before they start (:func:`~maxsim.timing.sm.flatten_queued`:
    faster, but holds them all at once; for short runs). ``timed``: SM 0 is also the launch's
    timed SM (:func:`simulate_gpu`), run with the hazard checks ``timed[0]`` and keeping its warps'
    backward-branch times. ``router``: the :class:`TraceRouter` of a stream run in windows that
    feeds the CTAs (compiled SMs and clock only). ``watch``: a progress report given the SMs first
    (:class:`maxsim.gpu.sampling.intime.Watch`: it may stop the run by raising). Returns the SMs
    that ran CTAs."""
    # an SM that starts with no CTA never runs (the dispatcher feeds only running SMs): not built
    sms = [SM(cfg, kernel, block, memory_system, hazards=timed[0] if timed and i == 0 else hazards, sm_id=i)
           for i, ctas in zip(range(cfg.gpu.sms), placement) if ctas]
    for sm in sms:
        sm.keep_branch_times = keep_branch_times or bool(timed and sm.sm_id == 0)
        sm.router = router
    for sm in sms:
        ctas = placement[sm.sm_id]
        for cid, traces, *delay in ctas:
            sm.add_cta(cid, traces, *delay)
        ctas.clear()  # the SM holds them now, and lets each go when it has loaded it
    traces = None  # (nor does this frame hold the last one)
    if flatten_together and router is None:
        flatten_queued([sm for sm in sms if isinstance(sm, SM)])
    else:
        # (a short run's, in one pass; with a router, traces that may grow are flattened as each
        # CTA starts)
        flatten_small_queued(sms, closed_only=router is not None)
    if isinstance(queue, CtaQueue) and sms and all(isinstance(sm, SM) for sm in sms):
        queue.flatten_with(sms[0]._unit, sms[0]._unit_key)
    if queue is not None:
        pace = DispatchClock(cfg.gpu.cta_dispatch_interval, dispatch_from)
        if isinstance(queue, CtaQueue) and queue._unit is not None:
            queue.stage_with(pace)  # (the core starts the next CTA itself when it can)
        for sm in sms:
            sm.dispatcher = queue
            sm.dispatch_clock = pace
    used = [sm for sm in sms if sm.pending]
    if watch is not None:
        watch.start(used, memory_system)
        progress = watch
    advance(used, QUANTUM, clock=clock, until=until, progress=progress, total=total_instructions,
            refill=router.refill if router is not None else None)
    return used


def round_robin(ctas, sms, per_sm, ready=None):
    """The first wave: CTA 0 to SM 0, CTA 1 to SM 1, ... until each SM holds ``per_sm``; returns the
    placement (one list per SM) and the CTAs left for the dispatcher (a deque of a list's, a
    :class:`CtaQueue` of an iterator's, which it reads only as the dispatcher asks; ``ready``:
    see :class:`CtaQueue`)."""
    placement = [[] for _ in range(sms)]
    lazy = not isinstance(ctas, (list, tuple, collections.deque))
    items = iter(ctas)
    queue = collections.deque(itertools.islice(items, sms * per_sm) if lazy else items)
    for _ in range(per_sm):
        for p in placement:
            if queue:
                p.append(queue.popleft())
    return placement, (CtaQueue(items, ready) if lazy else queue)


def deal_first_wave(placement, cfg):
    """The first wave's starts as ``gpu.first_wave`` has them. "together": every placed CTA from
    cycle 0 (``placement`` as it is). "dispatched": the block dispatcher hands the placed CTAs out
    one at a time in the order :func:`round_robin` deals them (CTA q of every SM, SM by SM, then
    q + 1: grid order), ``gpu.cta_dispatch_interval`` cycles apart: the r-th waits r x the interval
    (added to any delay it has; ``placement`` is changed in place). Returns the cycle from which the
    dispatcher may hand out the next CTA (``run_sms``'s ``dispatch_from``)."""
    if cfg.gpu.first_wave != "dispatched":
        return 0
    interval = int(cfg.gpu.cta_dispatch_interval)
    rank = 0
    for q in range(max((len(p) for p in placement), default=0)):
        for p in placement:
            if q < len(p):
                cid, traces, *delay = p[q]
                p[q] = (cid, traces, (delay[0] if delay else 0) + rank * interval)
                rank += 1
    return rank * interval


def wave_alignment(sms, per_wave):
    """How closely the CTAs of a finished launch kept together, from the SMs' CTA logs: CTAs in
    order of their start, taken ``per_wave`` (the GPU's CTA slots) at a time as waves. Returns the
    coefficient of variation of all CTAs' durations, and the widest spread of the starts of one
    wave in cycles and as a share of the mean CTA duration (CTAs that herd: a small share over
    many waves; CTAs that drift apart: a share that grows wave by wave). None without CTAs."""
    log = sorted((s, e) for sm in sms for _, s, e in sm.cta_log)
    if not log:
        return None
    dur = np.array([e - s for s, e in log], dtype=float)
    spread = max((max(s for s, _ in log[i:i + per_wave]) - min(s for s, _ in log[i:i + per_wave])
                  for i in range(0, len(log), per_wave)), default=0)
    mean = float(dur.mean())
    return {"cta_duration_cv": float(dur.std() / mean) if mean else 0.0, "waves": len(log) / per_wave,
            "widest_wave_start_spread_cycles": float(spread),
            "widest_wave_start_spread_share": float(spread / mean) if mean else 0.0}


def merge_stats(sms, cfg):
    """The SMs' statistics summed into one :class:`Stats` (cycles: the latest SM's)."""
    total = Stats()
    total.clock_hz = cfg.clock_hz
    total.schedulers = cfg.sm.schedulers * len(sms)
    for sm in sms:
        st = sm.stats
        for f in ("warp_instructions", "ffma", "flops", "dual_issues", "bank_conflicts", "bank_conflict_cycles",
                  "delayed_conflicts", "reuse_hits", "operand_reads", "shared_requests", "shared_wavefronts",
                  "tex_requests", "tex_sectors", "tex_hits", "stores", "sim_seconds"):
            setattr(total, f, getattr(total, f) + getattr(st, f))
        for k, v in st.opcode_counts.items():
            total.opcode_counts[k] = total.opcode_counts.get(k, 0) + v
        for k, v in st.stall_reasons.items():
            total.stall_reasons[k] += v
        if st.per_pc is not None:
            total.add_per_pc(st.per_pc)
        # warp labels name the CTA: unique on the GPU (dictionaries made when read)
        total.warp_stalls.add_prefixed(st.warp_stalls, f"sm{sm.sm_id}.")
        total.hazards.extend(st.hazards[:100])
    total.cycles = max((sm.now for sm in sms), default=0)
    return total


@paced_run
def simulate_gpu(kernel, grid, block, params=(), memory=None, textures=None, *, cfg, ctas=None,
                 hazards="warn", max_instructions=None, progress=None, memory_system=None, traced=None,
                 stream=None, l2_start="empty", timed=None, watch=None):
    """Run the kernel functionally and every CTA in time on ``cfg.gpu.sms`` SMs (sharing
    ``memory_system``, by default a new :class:`~maxsim.timing.memory_system.MemorySystem`).

    The functional run goes a batch of CTAs at a time (a :class:`~maxsim.functional.launch.LaunchStream`,
    or ``stream``, one made with a trace recorder of ``cfg``'s summariser and not yet iterated, or
    such a stream and the ``(cta id, warp traces)`` of :func:`stream_ctas` over it), as
    the block dispatcher needs CTAs, and an SM lets go of a warp's trace when the warp exits: the
    run holds the traces of the resident CTAs and of one batch, not the grid's (the result's
    ``launch`` carries no trace). A stream not yet begun (compiled SMs and clock) is run in windows
    (:func:`_windows`): a batch's traces are recorded and loaded ``STREAM_WINDOW`` positions at a
    time as the SMs need them, so a launch of few long CTAs holds a few windows per resident warp,
    not its CTAs' whole traces; the figures are the same. ``traced``: a ``(launch result, [(cta id, warp traces)])`` pair
    from :func:`trace_ctas` to time instead.
    ``progress`` (``progress(done, total, what, unit)``, see :mod:`maxsim.report.progress`) is told
    the CTAs done by the functional run as it goes; with ``traced``, the warp instructions issued
    by all SMs.
    ``l2_start``: ``"empty"`` (the L2 as ``memory_system`` has it, by default empty) or
    ``"previous"``: the launch is run twice, back to back (functionally too: the second run sees
    the memory the first left), and the second is the result, starting with the L2 the first left
    (:func:`~maxsim.timing.memory_system.carried_over`); not with ``stream``, which runs once.

    ``timed`` (``(hazards,)``, the hazard checks of :func:`maxsim.timing.run.simulate`): SM 0 of this
    run is also the launch's timed SM (``timed_sm`` of the result, its statistics completed as
    ``simulate`` completes its SM's), so a launch that fits on the GPU is simulated once: its
    figures are those of the CTAs the block dispatcher gave SM 0 (CTA 0, then every ``sms``-th),
    timed beside the other SMs, sharing the L2 and DRAM with them.

    ``watch`` (a :class:`maxsim.gpu.sampling.intime.Watch`, with ``stream``): the run stops once it
    says the rates are stable; the functional run then goes on to its end untimed, and the result
    has ``stopped`` set (its cycles those simulated, its SMs and memory system as they stopped;
    with ``timed``, ``timed_sm`` is SM 0 as it stopped, which
    :func:`maxsim.gpu.sampling.intime.complete_timed` completes)."""
    if l2_start not in L2_STARTS:
        raise ValueError(f"l2_start {l2_start!r}: expected one of {', '.join(L2_STARTS)}")
    if l2_start == "previous":
        if stream is not None:
            raise ValueError("l2_start 'previous' runs the launch twice: give its arguments or traces, not a stream")
        before = simulate_gpu(kernel, grid, block, params, memory, textures, cfg=cfg, ctas=ctas, hazards=None,
                              max_instructions=max_instructions, memory_system=memory_system, traced=traced)
        memory_system = carried_over(before.memory, cfg)
    t0 = time.perf_counter()
    if traced is None:
        if stream is None:
            stream = LaunchStream(kernel, grid, block, params, memory, textures, ctas=ctas,
                                  recorder=TraceRecorder(make_summariser(cfg)), max_instructions=max_instructions,
                                  progress=progress)
        stream, items = stream if isinstance(stream, tuple) else (stream, stream_ctas(stream))
        count = len(stream.ctas)
        router = _windows(stream, clock=None)

        def ready():  # the CTAs of the functional batch not yet handed out
            return getattr(stream, "batch_left", 0)
    else:
        res, items = traced
        count = len(items)
        router = ready = None
    ms = memory_system if memory_system is not None else MemorySystem(cfg)
    per_sm = residency(kernel, block, cfg)[0]
    placement, queue = round_robin(items, cfg.gpu.sms, per_sm, ready)
    dispatch_from = deal_first_wave(placement, cfg)
    if watch is not None:
        from .sampling.intime import Stable
        try:
            run_sms(kernel, block, cfg, placement, ms, queue=queue, hazards=hazards, keep_branch_times=False,
                    router=router, watch=watch, timed=timed, dispatch_from=dispatch_from)
        except Stable:
            placement = queue = items = None
            res = _untimed_rest(stream, router)
            # (with ``timed``, SM 0 as it stopped: see maxsim.gpu.sampling.intime.complete_timed)
            return GpuResult(cycles=watch.stop[0] * PROGRESS_CYCLES, seconds=0.0, sms_used=len(watch.sms),
                             waves=count / (per_sm * cfg.gpu.sms), resident_ctas=per_sm, stats=Stats(),
                             l2_hit_rate=ms.l2_hit_rate, dram_bytes=ms.dram_bytes_read + ms.dram_bytes_written,
                             launch=res, sim_seconds=time.perf_counter() - t0, sms=watch.sms, memory=ms,
                             stopped=watch,
                             timed_sm=next((s for s in watch.sms if s.sm_id == 0), None) if timed else None)
        used = watch.sms
    else:
        used = run_sms(kernel, block, cfg, placement, ms, queue=queue, hazards=hazards,
                       progress=progress if traced is not None else None,
                       total_instructions=res.warp_instructions if traced is not None else None,
                       keep_branch_times=False, timed=timed, router=router, dispatch_from=dispatch_from)
    if traced is None:
        res = stream.finish()
        if router is not None:
            # the run is over: the router lets go of the SMs and the stream of the router (no
            # reference cycle keeps the SMs and their arrays alive until the garbage collector runs)
            router.sms.clear()
            router.at.clear()
            stream.sink = stream.router = None
    timed_sm = _complete_timed(used, res, ms, cfg, block) if timed else None
    total = merge_stats(used, cfg)
    cycles = total.cycles
    total.l2_hits, total.l2_misses = ms.l2_read_hits, ms.l2_read_misses
    total.dram_bytes = ms.dram_bytes_read + ms.dram_bytes_written
    total.functional_seconds = 0.0
    if res.warp_idle is not None:  # the functional run's divergence figures (every traced CTA)
        total.divergent_branches, total.idle_lanes = res.divergent_branches, int(res.warp_idle.sum())
    seconds = cfg.cycles_to_seconds(cycles) + cfg.gpu.launch_overhead_us * 1e-6
    return GpuResult(cycles=cycles, seconds=seconds, sms_used=len(used),
                     waves=count / (per_sm * cfg.gpu.sms), resident_ctas=per_sm, stats=total,
                     l2_hit_rate=ms.l2_hit_rate, dram_bytes=total.dram_bytes, launch=res,
                     sim_seconds=time.perf_counter() - t0, sms=used, memory=ms, timed_sm=timed_sm)


def _untimed_rest(stream, router):
    """A stream whose timing run stopped: its functional run on to its end, recording no more trace
    (the windows of the batch under way are taken and dropped), and its result."""
    if router is not None:
        router.at.clear()  # (no warp takes more trace)
    stream.drop_records()  # (nor the summaries of its memory accesses)
    while stream.running:
        stream.more()
    stream.stop_recording()
    for _ in stream:
        pass
    return stream.finish()


def _windows(stream, clock=None):
    """A :class:`TraceRouter` for ``stream`` run in windows of ``STREAM_WINDOW`` positions (the traces
    held then stay about two windows per resident warp however long the CTAs run), or None: when
    the SMs are not the compiled core run by the compiled clock, or the stream has begun."""
    if stream_windows is False or core_name(None) != "compiled" or clock_name(clock) != "compiled":
        return None
    if stream._next or stream.running or stream.window is not None or not stream._hand_over:
        return None
    router = TraceRouter(stream, QUANTUM)
    stream.set_window(STREAM_WINDOW, router.take)
    stream.router = router
    return router


stream_windows = True  # a whole-GPU run of a functional stream streams its traces in windows (a
# simulator setting: same figures either way; False holds each batch's traces whole)


def _complete_timed(used, res, ms, cfg, block):
    """SM 0 of a whole-GPU run as the launch's timed SM: its statistics completed as
    :func:`maxsim.timing.run.simulate` completes its SM's (thread instructions, divergence and idle
    lanes of its CTAs, warps per scheduler; the L2 and DRAM figures of the memory system it
    shared, the whole GPU's). None when SM 0 ran no CTA."""
    sm = next((s for s in used if s.sm_id == 0), None)
    if sm is None:
        return None
    index = {c: i for i, c in enumerate(res.ctas)}
    rows = [index[cid] for cid, _, _ in sm.cta_log if cid in index]
    st = sm.stats
    wpc = (block + 31) // 32
    st.thread_instructions = sum(res.cta_threads(i, 1) for i in rows)
    st.divergent_branches = sum(res.cta_threads(i, 1, res.warp_divergent) for i in rows) \
        if res.warp_divergent is not None else 0
    st.idle_lanes = sum(res.cta_threads(i, 1, res.warp_idle) for i in rows) if res.warp_idle is not None else 0
    st.warps_per_scheduler = sm.max_ctas * wpc / cfg.sm.schedulers
    st.l2_hits, st.l2_misses = ms.l2_read_hits, ms.l2_read_misses
    st.dram_bytes = ms.dram_bytes_read + ms.dram_bytes_written
    st.functional_seconds = 0.0
    return sm
