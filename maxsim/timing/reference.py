"""The reference SM core: the timing model of one Maxwell SM in plain Python.

This is the specification of the SM model: small and readable, one Python object per warp and
scheduler. :class:`maxsim.timing.sm.SM` runs the same model compiled (:mod:`maxsim.timing.core`)
and must give identical results (tests/test_core_parity.py); select this one with
``SM(..., core="python")`` or ``MAXSIM_CORE=python`` when debugging the model.

Four warp schedulers issue from the functional trace.

The functional model has already executed the kernel and recorded, per warp, the instructions it
executed and a summary of each memory access. This model decides *when* each of them issues:

* Warps are assigned to schedulers by warp slot mod 4; a CTA takes the warp slots of its CTA
  slot (:func:`~maxsim.timing.static.cta_warp_slots`), so its warps spread evenly. Each scheduler
  issues at most one warp per cycle, and a second instruction of the same warp in the same cycle when the first has stall 0 and
  the pair is one :func:`maxsim.isa.issue.can_dual_issue` allows (an ALU instruction, then a memory
  op, LDC, BAR, quarter-rate op or branch): dual issue. The next instruction after a taken branch
  (the warp's next pc is not the one after it) issues ``max(stall, latency.branch_taken)`` cycles on.
* Warp selection: *greedy then oldest*. The scheduler keeps issuing the warp it issued last while
  that warp is ready and did not set the yield flag; otherwise it takes the ready warp that issued
  least recently. Greedy issue is what lets the operand reuse caches work at all (a warp switch
  empties them [jia18]) and what maxas's reuse figures for the SGEMM imply; "least recently issued"
  keeps the other warps from starving. With ``sm.oldest_warp = "age"`` "oldest" is the warp's age
  instead (GTO as [rogers12] defines it): the first ready warp in the scheduler's queue, which
  holds its warps in the order the SM launched them (CTA by CTA, a CTA's warps in order); a yielded
  warp is passed over while another can issue, in both orders.
* A warp may issue when its previous instruction's stall count has elapsed and every dependency
  barrier in the wait mask is clear. Write barriers clear when the variable-latency result is
  written, read barriers when the memory instruction has read its source registers.
* Register file: 4 banks per scheduler, one read per bank per cycle. An ALU instruction's operand
  reads that are not served by the reuse caches are booked on the banks; the operand collector may
  book them up to ``regfile.collector_lookahead`` cycles before the issue cycle on banks left idle
  by earlier instructions (this is how a collector hides part of the conflicts), and dispatch waits
  for the last read. Memory instructions book their register reads ``latency.mem_operand_read_*``
  cycles after issue, where they collide with later ALU reads ("delayed" conflicts).
* Shared memory (one port per SM), the texture path (L1/texture cache, then the L2/DRAM memory
  system) and CTA barriers complete at times known at issue, so the loop fast-forwards over cycles
  in which nothing can issue.
"""

from __future__ import annotations

import heapq
import inspect
import math
import time

import numpy as np

from ..errors import HazardError, SimulationError
from ..isa.issue import min_stall
from .regfile import RegisterBanks
from .shared_memory import SharedMemoryTiming
from .static import (ALU, ALU_HALF, BAR, BAR_HIST, BRANCH, EXIT, LDG, LDS, MEMORY, NEVER, S2R, STG, STS,
                     TEX, StaticInfo, cta_warp_slots, pairs, residency)
from .stats import (PC_BANK_CONFLICTS, PC_BANK_CYCLES, PC_DELAYED, PC_DUAL, PC_EXEC, PC_L2_HITS,
                    PC_L2_MISSES, PC_REUSE_HITS, PC_SHARED_REQ, PC_SHARED_WF, PC_SIZE, PC_STALLS,
                    PC_TEX_HITS, PC_TEX_REQ, PC_TEX_SECTORS, Stats)

_NO_REUSE = ((), (), ())  # empty reuse caches of the three operand slots


def l2_read_counts(memory_system):
    """(read sectors that hit, that missed) in the L2 so far, or None when the memory system does
    not count them: the difference over one ``read`` call is that request's."""
    hits = getattr(memory_system, "l2_read_hits", None)
    misses = getattr(memory_system, "l2_read_misses", None)
    if hits is None or misses is None:
        return None
    return int(hits), int(misses)


_TAKES_SM = {}  # (class, method name) -> whether the method takes ``sm=`` (signatures are slow to read)


def _takes_sm(memory_system, name):
    method = getattr(memory_system, name)
    attrs = getattr(memory_system, "__dict__", None)
    key = None if attrs is not None and name in attrs else (type(memory_system), name)
    if key is not None and key in _TAKES_SM:
        return _TAKES_SM[key]
    try:
        takes = "sm" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        takes = False
    if key is not None:
        _TAKES_SM[key] = takes
    return takes


def memory_keywords(memory_system, sm_id):
    """Keyword arguments of ``memory_system.read`` and ``.write``: ``sm=sm_id`` where the method
    takes it (a memory system may tell the SMs apart), none otherwise. A method set on the
    instance itself is read each time; a class's is read once."""
    return tuple({"sm": sm_id} if _takes_sm(memory_system, name) else {} for name in ("read", "write"))


class Warp:
    __slots__ = ("slot", "sched", "cta", "label", "parts", "part", "pcs", "mem", "row", "pos",
                 "pc", "ready_at", "stall_until", "dep_until", "last_issue", "bar_clear", "bar_set",
                 "reg_ready", "reg_read", "pred_ready", "mem_out", "gmem_out", "done", "at_bar", "yielded",
                 "blocked", "bar_wait", "stalls", "branch_times", "ldg_done", "shd_done", "bar_hist")

    def __init__(self, slot, sched, cta, label, parts, t, nregs):
        self.slot = slot
        self.sched = sched
        self.cta = cta
        self.label = label
        self.parts = parts
        self.part = next((n for n, (seg, _) in enumerate(parts) if len(seg.pcs)), 0)  # skip empty ones
        seg, self.row = parts[self.part]
        self.pcs = seg.pcs
        self.mem = seg.mem
        self.pos = 0
        self.pc = self.pcs[0]
        self.ready_at = t
        self.stall_until = t
        self.dep_until = t
        self.last_issue = t - 1
        self.bar_clear = [0] * 7
        self.bar_set = [-NEVER] * 7
        self.reg_ready = [0] * (nregs + 1)
        self.reg_read = [0] * (nregs + 1)
        self.pred_ready = [0] * 8
        self.mem_out = []  # completion cycles of outstanding shared loads/stores (a min-heap)
        self.gmem_out = []  # ... of outstanding global loads and texture fetches (a min-heap)
        self.ldg_done = 0  # completion cycle of the warp's last global load (they complete in order)
        self.shd_done = 0  # latest completion cycle of the warp's shared-memory ops
        # per barrier: completion cycles of its latest BAR_HIST ops (for DEPBAR.LE)
        self.bar_hist = [[0] * BAR_HIST for _ in range(7)]
        self.done = False
        self.at_bar = False
        self.yielded = False
        self.blocked = 0  # reason index when last seen ready but held by a unit
        self.bar_wait = False  # the last issue was a BAR.SYNC: the wait until release is barrier_wait
        self.stalls = [0] * 6
        self.branch_times = []


class Scheduler:
    __slots__ = ("index", "warps", "last", "busy_until", "pipe_free", "mem_free", "rcs", "rc_warp",
                 "banks")

    def __init__(self, index):
        self.index = index
        self.warps = []
        self.last = None
        self.busy_until = 0
        self.pipe_free = [0, 0, 0, 0]  # first cycle the ALU / half-rate / xu / fp64 pipe takes an instruction
        self.mem_free = 0
        self.rcs = _NO_REUSE  # reuse caches: one tuple of registers per operand slot
        self.rc_warp = None
        self.banks = RegisterBanks()


class Cta:
    __slots__ = ("cid", "warps", "live", "arrived", "start", "index")

    def __init__(self, cid, start):
        self.cid = cid
        self.index = -1  # its CTA slot on the SM
        self.start = start  # the cycle its warps were placed
        self.warps = []
        self.live = 0
        self.arrived = []


_CONTROL_STALLS = {}  # (id(kernel), id(latencies)) -> (kernel, latencies, messages): the SMs of a GPU share them


def control_stall_messages(kernel, lat):
    """The hazard messages of instructions whose stall count is below the minimum they need
    (:func:`~maxsim.isa.issue.min_stall`), once per kernel and latency table."""
    hit = _CONTROL_STALLS.get((id(kernel), id(lat)))
    if hit is None or hit[0] is not kernel or hit[1] is not lat:
        msgs = []
        for i in kernel.instructions:
            n = min_stall(i, lat)
            if n > 1 and i.control.stall < n and i.index + 1 < len(kernel.instructions):
                msgs.append(f"{i.where}: hazard: {i.full_opcode} has stall {i.control.stall}; it needs "
                            f"a stall of at least {n} (the instruction after it may issue too early)")
        if len(_CONTROL_STALLS) >= 8:
            del _CONTROL_STALLS[next(iter(_CONTROL_STALLS))]
        hit = _CONTROL_STALLS[(id(kernel), id(lat))] = (kernel, lat, msgs)
    return hit[2]


class ReferenceSM:
    """One streaming multiprocessor running the CTAs handed to it (the reference core)."""

    core = "python"

    def __init__(self, cfg, kernel, block, memory_system, l1=None, stats=None, hazards="warn",
                 max_cycles=None, sm_id=0, log=False):
        from .texture import TextureCache

        self.cfg = cfg
        self.kernel = kernel
        self.block = block
        self.static = StaticInfo(kernel, cfg)
        self.memsys = memory_system
        self.l1 = l1 if l1 is not None else TextureCache(cfg)
        self.stats = stats if stats is not None else Stats()
        self.stats.clock_hz = cfg.clock_hz
        self.stats.schedulers = cfg.sm.schedulers
        self.scheds = [Scheduler(s) for s in range(cfg.sm.schedulers)]
        self.max_ctas, self.limited_by = residency(kernel, block, cfg)
        self.wpc = (block + 31) // 32
        self._cta_slots = [None] * self.max_ctas  # the CTA in each CTA slot (its warp slots: cta_warp_slots)
        self.pending = []  # (cta id, [warp traces]) queued for this SM
        self._delays = {}  # cta id -> cycles its warps wait after its launch (add_cta)
        self.dispatcher = None  # a GPU's shared queue of further CTAs (collections.deque)
        self.dispatched = []  # (cycle, cta id) taken from the dispatcher
        self.dispatch_clock = None  # a GPU's block dispatcher's pace (``take(t)``: the start of a CTA taken at t)
        self.all_warps = []
        self.peak_warps = 0
        self.resident = 0
        self.shared = SharedMemoryTiming(cfg)
        self.tex_free = [0] * cfg.l1tex.caches  # each texture cache's path: its next free cycle
        # the texture cache each scheduler's warps fetch through (l1tex.sharing)
        self.tex_unit = [cfg.l1tex.cache_of(s, cfg.sm.schedulers) for s in range(cfg.sm.schedulers)]
        self.hazard_mode = hazards
        self.max_cycles = max_cycles
        self.sm_id = sm_id
        self.now = 0
        self.counts = [0] * len(kernel.instructions)
        # per instruction: the counters of stats.PC_FIELDS (executions as counts above)
        self.per_pc = [[0] * PC_SIZE for _ in kernel.instructions]
        self._reuse_memo = {}
        self.bar_delay = cfg.latency.barrier_set_delay
        self.finished_ctas = 0
        self.cta_log = []  # (cta id, start cycle, end cycle) per CTA run, in the order they finished
        # each warp's backward-branch cycles (loop progress); a whole-GPU run turns it off
        self.keep_branch_times = True
        self._mem_kw = memory_keywords(memory_system, sm_id)
        # optional issue log for tests, debugging and timelines (maxsim.report.timeline):
        # issue_log: (cycle, warp label, pc) per issued instruction; issue_done: the cycle its result
        # (or memory request) completes, same index; stall_log: (warp label, gap start, a, b, issue
        # cycle, reason of [a, b), reason of [b, issue)) per gap between two issues of a warp, the
        # cycles [gap start, a) being stall_count (reasons index stats.STALL_REASONS)
        self.issue_log = [] if log else None
        self.issue_done = [] if log else None
        self.stall_log = [] if log else None
        # config values read in the hot loop
        rf = cfg.regfile
        self.lookahead = rf.collector_lookahead
        self.reuse_entries = rf.reuse_entries_per_slot
        self.switch_clears_reuse = rf.reuse_lost_on_warp_switch
        self.conflict_penalty = rf.conflict_penalty
        lat = cfg.latency
        self.lat = lat
        self.mem_interval = cfg.pipes.mem_issue_interval
        # cycles each math pipe is busy per warp instruction, by unit (ALU, ALU_HALF)
        self.pipe_interval = (cfg.pipes.alu_interval, int(round(cfg.pipes.alu_half_interval)))
        self.reuse_slots = rf.reuse_slots
        self.cta_launch = cfg.sm.cta_launch_cycles
        self.shared_depth = cfg.pipes.shared_queue_depth
        self.global_depth = cfg.pipes.global_queue_depth
        self.tex_bytes_per_clk = cfg.l1tex.cache_bytes_per_clk
        self.sector = cfg.l1tex.sector
        self.dual = cfg.pipes.dual_issue
        self.oldest_by_age = cfg.sm.oldest_warp == "age"
        self._check_control_stalls()

    def _check_control_stalls(self):
        """BAR, BRA, CAL, RET and EXIT need a minimum stall count [maxas-cc]; report shorter ones."""
        if not self.hazard_mode:
            return
        for msg in control_stall_messages(self.kernel, self.lat):
            self._hazard_text(msg)

    # ---- CTAs ----------------------------------------------------------------------------
    def add_cta(self, cid, warp_traces, delay=0):
        """Queue a CTA (its id and the traces of its warps, in warp order); ``delay``: its warps
        become ready that many cycles after it is launched."""
        self.pending.append((cid, warp_traces))
        if delay:
            self._delays[cid] = int(delay)

    def _launch_ready_ctas(self, t):
        while self.resident < self.max_ctas:
            if self.pending:
                cid, traces = self.pending.pop(0)
                start = t
            elif self.dispatcher is not None and self.dispatcher:
                # a GPU's block dispatcher hands the next CTA to the SM whose slot freed first
                cid, traces = self.dispatcher.popleft()
                start = self.dispatch_clock.take(t) if self.dispatch_clock is not None else t
                self.dispatched.append((start, cid))
            else:
                break
            t0 = start + self._delays.pop(cid, 0) if self._delays else start
            cta = Cta(cid, t0)
            cta.index = self._cta_slots.index(None)
            self._cta_slots[cta.index] = cta
            slots = cta_warp_slots(cid, cta.index, self.block, len(traces))
            nregs = self.kernel.reg_cnt
            for w, (slot, tr) in enumerate(zip(slots, traces)):
                sched = self.scheds[slot % len(self.scheds)]
                warp = Warp(slot, sched, cta, f"cta{cid[0]},{cid[1]}.w{w}", tr.parts, t0, nregs)
                if not self.keep_branch_times:
                    warp.branch_times = ()  # none kept: an empty tuple (a warp's view in the compiled SM)
                cta.warps.append(warp)
                sched.warps.append(warp)
                self.all_warps.append(warp)
            cta.live = len(traces)
            self.resident += 1
            self.peak_warps = max(self.peak_warps, sum(len(x.warps) for x in self.scheds))

    def _finish_warp(self, w, t):
        w.done = True
        # its trace is let go (a whole-GPU run would otherwise hold every CTA's)
        w.parts, w.mem, w.pcs = (), {}, w.pcs[:0]
        w.sched.warps.remove(w)
        if w.sched.last is w:
            w.sched.last = None
        self._flush_stalls(w)
        cta = w.cta
        cta.live -= 1
        if cta.live == 0:
            self.resident -= 1
            self._cta_slots[cta.index] = None
            self.finished_ctas += 1
            self.cta_log.append((cta.cid, cta.start, t))
            self._launch_ready_ctas(t + self.cta_launch)
        elif cta.arrived and len(cta.arrived) == cta.live:
            self._release(cta, t)

    def _release(self, cta, t):
        when = t + self.lat.barrier_sync
        for x in cta.arrived:
            x.at_bar = False
            x.ready_at = max(x.ready_at, when)
            x.dep_until = max(x.dep_until, when)
        cta.arrived = []

    def _flush_stalls(self, w):
        st = self.stats
        from .stats import STALL_REASONS
        d = st.warp_stalls.setdefault(w.label, {r: 0 for r in STALL_REASONS})
        for i, r in enumerate(STALL_REASONS):
            d[r] += w.stalls[i]
            st.stall_reasons[r] += w.stalls[i]

    # ---- the clock -----------------------------------------------------------------------
    def run(self, env=None, quantum=256):
        """Run until every queued CTA has finished. With a simpy ``env``, this is a process that
        yields to simpy when time jumps or each ``quantum`` cycles (to interleave SMs)."""
        gen = self._run(quantum)
        if env is None:
            for _ in gen:
                pass
            return self.stats
        return env.process(self._simpy(env, gen))

    def _simpy(self, env, gen):
        for t in gen:
            if t > env.now:
                yield env.timeout(t - env.now)

    def _run(self, quantum=256):
        wall = time.perf_counter()
        self._launch_ready_ctas(self.now)
        t = self.now
        scheds = self.scheds
        next_yield = t + quantum
        limit = self.max_cycles
        while self.warps_alive():
            issued = False
            for s in scheds:
                if s.busy_until <= t and s.warps:
                    if self._schedule(s, t):
                        issued = True
            if issued:
                t += 1
            else:
                nxt = self._next_time(t)
                if nxt >= NEVER:
                    self._deadlock(t)
                t = max(t + 1, nxt)
            if limit is not None and t > limit:
                raise SimulationError(f"{self.kernel.filename}: kernel {self.kernel.name} ran past the cycle limit of {limit} cycles on SM {self.sm_id} (--max-cycles N sets it)")
            if t >= next_yield:
                self.now = t
                yield t
                next_yield = t + quantum
        # the kernel ends when the last warp has exited and its stores are posted
        self.now = t
        st = self.stats
        st.cycles = max(st.cycles, t)
        st.sim_seconds += time.perf_counter() - wall
        static = self.static
        for row, n in zip(self.per_pc, self.counts):
            row[PC_EXEC] = n
        st.add_per_pc(np.array(self.per_pc, dtype=np.int64).reshape(-1, PC_SIZE))
        for pc, n in enumerate(self.counts):
            if n:
                op = self.kernel.instructions[pc].full_opcode
                st.opcode_counts[op] = st.opcode_counts.get(op, 0) + n
                st.warp_instructions += n
                st.flops += n * static.flops[pc]
                st.operand_reads += n * len(static.reads[pc])
                if static.is_ffma[pc]:
                    st.ffma += n
        st.opcode_counts = dict(sorted(st.opcode_counts.items(), key=lambda kv: -kv[1]))
        yield t

    def loop_cycles_per_iteration(self, skip=2):
        """Steady-state scheduler cycles per main-loop iteration of one warp.

        Each warp's interval between consecutive back-branches is the wall time of one iteration
        while it shares its scheduler with the other resident warps; dividing by the warps per
        scheduler gives the issue cycles one iteration costs (520 for maxas's sgemm_64 by its own
        accounting). The first ``skip`` iterations (pipeline fill) and the last are left out.
        """
        per_warp = []
        for w in self.all_warps:
            bt = w.branch_times
            if len(bt) > skip + 2:
                per_warp.append((bt[-2] - bt[skip]) / (len(bt) - 2 - skip))
        if not per_warp:
            return None
        return float(np.mean(per_warp)) / (self.peak_warps / len(self.scheds))

    def issued(self):
        """Warp instructions issued so far (the statistics are summed when the run ends)."""
        return sum(self.counts)

    def warps_alive(self):
        return any(s.warps for s in self.scheds) or bool(self.pending) or \
            (bool(self.dispatcher) and self.resident < self.max_ctas)

    def _next_time(self, t):
        nxt = NEVER
        for s in self.scheds:
            for w in s.warps:
                if not w.at_bar:
                    r = w.ready_at if w.ready_at > s.busy_until else s.busy_until
                    if r < nxt:
                        nxt = r
        return nxt

    def _deadlock(self, t):
        stuck = [w for s in self.scheds for w in s.warps if w.at_bar]
        if stuck:
            w = stuck[0]
            instr = self.kernel.instructions[w.pcs[w.pos - 1] if w.pos else w.pc]
            raise SimulationError(f"{instr.where}: BAR.SYNC can never complete (CTA ({w.cta.cid[0]},{w.cta.cid[1]}): "
                                  f"{len(w.cta.arrived)} of {w.cta.live} live warps arrived) at cycle {t}")
        raise SimulationError(f"SM {self.sm_id}: no warp can ever issue again at cycle {t}")

    # ---- issue ---------------------------------------------------------------------------
    def _unit_ok(self, w, pc, t, s):
        u = self.static.unit[pc]
        if u <= ALU_HALF:
            if s.pipe_free[self.static.pipe[pc]] > t:
                w.blocked = 4
                return False
        elif u in MEMORY:
            if s.mem_free > t:
                w.blocked = 3
                return False
            # separate per-warp queues for shared and global/texture [maxas-cc]; requests do not
            # complete in issue order (a texture fetch outlives the shared loads behind it), so
            # each queue is a min-heap of completion cycles
            if u in (LDS, STS):
                out, depth = w.mem_out, self.shared_depth
            else:
                out, depth = w.gmem_out, self.global_depth
            if out:
                while out and out[0] <= t:
                    heapq.heappop(out)
                if len(out) >= depth:
                    w.blocked = 3
                    return False
        return True

    def _schedule(self, s, t):
        w = s.last
        st = self.static
        if w is not None and not w.done and not w.at_bar and w.ready_at <= t and not w.yielded \
                and self._unit_ok(w, w.pc, t, s):
            pick = w
        else:
            pick = None
            best = NEVER
            for x in s.warps:
                if x.ready_at <= t and not x.at_bar and x.last_issue < best:
                    if x is w and x.yielded and len(s.warps) > 1:
                        continue
                    if self._unit_ok(x, x.pc, t, s):
                        pick = x
                        best = x.last_issue
                        if self.oldest_by_age:
                            break  # the first ready one in the queue's order (launch order)
            if pick is None:
                if w is not None and w.yielded and w.ready_at <= t and not w.at_bar and self._unit_ok(w, w.pc, t, s):
                    pick = w
                else:
                    return False
        w = pick
        if s.last is not w:
            s.last = w
            if self.switch_clears_reuse:
                s.rc_warp = None
        # stall accounting for the cycles since this warp last issued (charged to the warp and
        # to the instruction it waited to issue)
        gap_start = w.last_issue + 1
        if t > gap_start:
            a = min(w.stall_until, t)
            b = min(max(w.dep_until, a), t)
            stalls = w.stalls
            at = self.per_pc[w.pc]
            dep_reason = 2 if w.bar_wait else 1
            # (a unit seen busy after the release must not turn the barrier wait into a dependency)
            if a > gap_start:
                stalls[0] += a - gap_start
                at[PC_STALLS] += a - gap_start
            if b > a:
                stalls[dep_reason] += b - a
                at[PC_STALLS + dep_reason] += b - a
            if t > b:
                end_reason = w.blocked if w.blocked in (3, 4) else 5
                stalls[end_reason] += t - b
                at[PC_STALLS + end_reason] += t - b
            if self.stall_log is not None:
                self.stall_log.append((w.label, gap_start, a, b, t, dep_reason,
                                       w.blocked if w.blocked in (3, 4) else 5))
        w.blocked = 0
        w.bar_wait = False
        pc = w.pc
        self._issue(w, s, pc, t)
        # dual issue: a stall-0 instruction and the next one of the same warp, a pair the rules allow
        # (maxsim.isa.issue)
        if st.stall[pc] == 0 and self.dual and not w.done and not w.at_bar:
            nxt = w.pc
            if pairs(st.dual[pc], st.dual[nxt]) and s.busy_until <= t + 1 \
                    and all(w.bar_clear[b] <= t for b in st.waits[nxt]) and self._unit_ok(w, nxt, t, s):
                self.stats.dual_issues += 1
                self.per_pc[nxt][PC_DUAL] += 1
                self._issue(w, s, nxt, t)
        return True

    def _issue(self, w, s, pc, t):
        st = self.static
        lat = self.lat
        self.counts[pc] += 1  # warp instructions, FFMAs and flops are summed from these at the end
        u = st.unit[pc]
        w.last_issue = t
        delay = 0
        done_at = t
        if self.hazard_mode:
            self._check_hazards(w, pc, t, u)
        if u <= ALU_HALF:
            # operand reads through the reuse caches and the banks
            reads = st.reads[pc]
            if reads:
                delay = self._collect(w, s, pc, t, reads)
            s.pipe_free[st.pipe[pc]] = t + st.interval[pc]
            done_at = t + delay + st.latency[pc]
            if delay:
                s.busy_until = t + 1 + delay
        elif u in MEMORY:
            done_at = self._memory(w, s, pc, t, u)
        elif u == S2R:
            done_at = t + st.latency[pc]  # S2R, LDC: a fixed latency of their own
            distinct = w.mem.get(w.pos)  # a register-indexed LDC: its warp's distinct addresses,
            if distinct is not None and distinct[w.row] > 1:  # served one after another
                done_at += (int(distinct[w.row]) - 1) * st.interval[pc]
        elif u == BRANCH:
            s.rc_warp = None  # a branch empties the reuse caches
            if st.back_branch[pc] and self.keep_branch_times:
                w.branch_times.append(t)
        elif u == BAR:
            # a guarded BAR.SYNC whose guard is false for this warp issues but does not arrive
            # (the functional run records which warps arrive when some do not)
            arrive = w.mem.get(w.pos)
            arrives = arrive is None or arrive[w.row]
        if self.issue_log is not None:
            self.issue_log.append((t, w.label, pc))
            self.issue_done.append(done_at)
        # results and dependency barriers; a write by any unit invalidates reuse-cached copies
        dsts = st.dsts[pc]
        if dsts and u > ALU_HALF and s.rc_warp is w and s.rcs is not _NO_REUSE:
            s.rcs = tuple(tuple(r for r in c if r not in dsts) for c in s.rcs)
        for r in dsts:
            w.reg_ready[r] = done_at
        for p in st.pdsts[pc]:
            w.pred_ready[p] = done_at
        b = st.wbar[pc]
        if b:
            if w.bar_clear[b] < done_at:
                w.bar_clear[b] = done_at
            w.bar_set[b] = t
            hist = w.bar_hist[b]
            del hist[0]
            hist.append(done_at)
        # advance along the trace
        w.pos += 1
        while w.pos >= len(w.pcs):  # (a segment may be empty: a group split before it ran)
            w.part += 1
            if w.part >= len(w.parts):
                if u != EXIT:
                    instr = self.kernel.instructions[pc]
                    raise SimulationError(f"{instr.where}: trace of warp {w.label} ends without EXIT")
                self._finish_warp(w, t)
                return
            seg, w.row = w.parts[w.part]
            w.pcs = seg.pcs
            w.mem = seg.mem
            w.pos = 0
        nxt = w.pcs[w.pos]
        w.pc = nxt
        stall = st.stall[pc]
        if u == BRANCH and nxt != pc + 1 and stall < lat.branch_taken:
            stall = lat.branch_taken  # a taken branch: its target issues latency.branch_taken on at least
        # a dispatch held back by bank conflicts shifts the warp's later instructions with it
        ready = t + delay + (stall if stall > 0 else 1)
        w.stall_until = ready
        w.yielded = st.yld[pc]
        dep = ready
        for b in st.waits[nxt]:
            c = w.bar_clear[b]
            # a barrier set too recently is not yet visible to the wait (the hazard check reports
            # what that lets through)
            if c > dep and ready > w.bar_set[b] + self.bar_delay:
                dep = c
        b, n = st.depbar[pc]
        if b:
            # DEPBAR.LE SB(b-1), n: the next instruction waits until at most n of the barrier's ops
            # are out (among its latest BAR_HIST)
            out = sorted(c for c in w.bar_hist[b] if c > t)
            if len(out) > n and out[len(out) - n - 1] > dep:
                dep = out[len(out) - n - 1]
        w.dep_until = dep
        w.ready_at = dep
        if u == BAR and arrives:
            cta = w.cta
            cta.arrived.append(w)
            w.at_bar = True
            w.bar_wait = True
            if len(cta.arrived) == cta.live:
                self._release(cta, t)

    def _reuse_step(self, pc, rcs):
        """The reuse caches through one ALU instruction: (caches after, hits, reads, banks read).

        ``rcs`` holds one tuple per operand slot, most recent last. A register in its slot's
        cache is served from it (and kept only if flagged again); a flagged register not yet there
        is inserted, evicting the least recently used beyond ``reuse_entries_per_slot``; a write
        removes the destination from every slot; slots from ``regfile.reuse_slots`` on have no
        cache. Pure: the SM memoizes it per (pc, caches).
        """
        rc = [list(c) for c in rcs]
        banks = []
        from_banks = set()  # registers this instruction already reads from a bank
        hits = 0
        entries = self.reuse_entries
        nslots = self.reuse_slots
        for slot, r, bank, flagged, _dup in self.static.reads[pc]:
            if slot < nslots:  # a slot from reuse_slots on has no cache: always a bank read
                cache = rc[slot]
                if r in cache:
                    hits += 1
                    cache.remove(r)
                    if flagged:
                        cache.append(r)
                    continue
                if flagged:
                    cache.append(r)
                    if len(cache) > entries:
                        del cache[0]
            # a register named in two slots is read from its bank once, unless the other slot got
            # it from that slot's reuse cache (a cache serves only its own slot)
            if r not in from_banks:
                from_banks.add(r)
                banks.append(bank)
        for r in self.static.dsts[pc]:
            for cache in rc:
                if r in cache:
                    cache.remove(r)
        banks = tuple(banks)
        return (tuple(tuple(c) for c in rc), hits, len(self.static.reads[pc]), banks,
                len(banks) - len(set(banks)))

    def _collect(self, w, s, pc, t, reads):
        """Reuse caches and bank booking for one ALU instruction; returns the dispatch delay."""
        rcs = s.rcs if s.rc_warp is w else _NO_REUSE
        key = (pc, rcs)
        step = self._reuse_memo.get(key)
        if step is None:
            step = self._reuse_memo[key] = self._reuse_step(pc, rcs)
        s.rcs, hits, nreads, banks, extra = step
        s.rc_warp = w
        stats = self.stats
        at = self.per_pc[pc]
        if hits:
            stats.reuse_hits += hits
            at[PC_REUSE_HITS] += hits
        if not banks:
            return 0
        if extra:
            stats.bank_conflicts += extra
            at[PC_BANK_CONFLICTS] += extra
        last = t
        start = t - self.lookahead
        book = s.banks.book
        delayed = False
        for bank in banks:
            c, late = book(bank, start, t)
            delayed |= late
            if c > last:
                last = c
        delay = (last - t) * self.conflict_penalty
        if delay:
            stats.bank_conflict_cycles += delay
            at[PC_BANK_CYCLES] += delay
            if delayed:
                stats.delayed_conflicts += 1
                at[PC_DELAYED] += 1
        return delay

    def _book_late_reads(self, s, pc, when):
        """A memory instruction reads its registers late: book those bank reads at ``when``."""
        book = s.banks.book_late
        for bank in self.static.mem_reads[pc]:
            book(bank, when)

    def _memory(self, w, s, pc, t, u):
        st = self.static
        lat = self.lat
        stats = self.stats
        s.mem_free = t + self.mem_interval
        summary = w.mem.get(w.pos)
        if u in (LDS, STS):
            read_at = t + lat.mem_operand_read_shared
            self._book_late_reads(s, pc, read_at)
            wf = int(summary[w.row]) if summary is not None else 1
            if wf == 0:
                # every lane off: nothing moves, but its barrier clears in the queue's order, after
                # the warp's earlier shared ops (ptxas's scan.cu waits on a guarded LDS for an earlier one)
                done = max(t + 1, w.shd_done)
                release = t + 1
            else:
                stats.shared_requests += 1
                stats.shared_wavefronts += wf
                at = self.per_pc[pc]
                at[PC_SHARED_REQ] += 1
                at[PC_SHARED_WF] += wf
                done = self.shared.issue(t, wf, store=(u == STS))
                # the data registers are read while the banks take them in
                release = max(self.shared.next_free + lat.mem_operand_read_shared, read_at + 1)
            w.shd_done = max(w.shd_done, done)
            heapq.heappush(w.mem_out, done)
            rb = st.rbar[pc]
            if rb:
                if w.bar_clear[rb] < release:
                    w.bar_clear[rb] = release
                w.bar_set[rb] = t
            for r in st.srcs[pc]:
                w.reg_read[r] = read_at
            return done
        sectors = summary[w.row] if summary is not None else ()
        n = len(sectors)
        if n == 0 and u != STG:
            # every lane predicated off, or (texture) every active lane outside the texture: no
            # sector is fetched, the instruction leaves the pipe at once (a border-only fetch is
            # modelled as free; the trace does not tell it from a predicated-off one). A global or
            # local load's barrier still clears in its queue's order, after the warp's earlier loads
            # (ptxas waits on a guarded LDL for an earlier, unguarded one that set no barrier)
            if u == LDG and w.ldg_done > t + 1:
                return w.ldg_done
            return t + 1
        read_at = t + (lat.mem_operand_read_tex if u == TEX else lat.mem_operand_read_global)
        self._book_late_reads(s, pc, read_at)
        rb = st.rbar[pc]
        if rb:
            release = t + lat.read_barrier_release
            if w.bar_clear[rb] < release:
                w.bar_clear[rb] = release
            w.bar_set[rb] = t
        for r in st.srcs[pc]:
            w.reg_read[r] = read_at
        if u == STG:
            stats.stores += 1
            if n:
                self.memsys.write(read_at, [int(x) for x in sectors], **self._mem_kw[1])
            return t + 1
        if u == TEX:
            stats.tex_requests += 1
            stats.tex_sectors += n
            at = self.per_pc[pc]
            at[PC_TEX_REQ] += 1
            at[PC_TEX_SECTORS] += n
            unit = self.tex_unit[s.index]
            tf = self.tex_free[unit]
            start = tf if tf > read_at else read_at
            self.tex_free[unit] = start + n * self.sector / self.tex_bytes_per_clk
            start = math.ceil(start)
            hits, misses = self.l1.access(start, [int(x) for x in sectors], unit)
            stats.tex_hits += hits
            at[PC_TEX_HITS] += hits
            # the latencies (tex_l1_hit, l2_hit, dram) count from the instruction's issue, which
            # includes the operand read: time the request from its issue-equivalent cycle
            issued = start - (read_at - t)
            done = issued + lat.tex_l1_hit
            if self.l1.pending_ready > done:
                done = self.l1.pending_ready
            if misses:
                mdone = self._read(pc, issued, misses)
                self.l1.fill(misses, mdone, unit)
                if mdone > done:
                    done = mdone
        else:  # LDG: through the L2
            done = self._read(pc, t, [int(x) for x in sectors])  # l2_hit / dram count from issue
            # a warp's global loads complete in issue order (docs/hazard-rules.md: ptxas waits on the
            # barrier of the last of a group of LDGs only): an L2 hit behind a miss waits for it
            if done < w.ldg_done:
                done = w.ldg_done
            w.ldg_done = done
        heapq.heappush(w.gmem_out, done)
        return done

    def _read(self, pc, now, sectors):
        """A read of the L2/DRAM memory system for instruction ``pc``: its completion cycle; the
        request's L2 hits and misses go to the instruction's counters."""
        before = l2_read_counts(self.memsys)
        done = self.memsys.read(now, sectors, **self._mem_kw[0])
        if before is not None:
            after = l2_read_counts(self.memsys)
            at = self.per_pc[pc]
            at[PC_L2_HITS] += after[0] - before[0]
            at[PC_L2_MISSES] += after[1] - before[1]
        return done

    def _check_hazards(self, w, pc, t, u):
        st = self.static
        read_t = t + st.read_delay[pc]  # memory ops and LDC read their sources late (maxsim.isa.issue)
        rr = w.reg_ready
        late_reg, late = st.late_reg[pc], st.late_read[pc]  # a 64-bit global address's high word: later
        for r in st.srcs[pc]:
            at = read_t + late if r == late_reg else read_t
            if rr[r] > at:
                src = self._earlier(w, lambda q: r in st.dsts[q])
                self._hazard(w, pc, t, f"reads R{r} at cycle {at}, {rr[r] - at} cycle(s) before the result of "
                                       f"{src} is ready")
                break
        for p in st.psrcs[pc]:
            if w.pred_ready[p] > t:
                src = self._earlier(w, lambda q: p in st.pdsts[q])
                self._hazard(w, pc, t, f"reads P{p} {w.pred_ready[p] - t} cycle(s) before the result of {src} is ready")
                break
        lat_w = t + (st.latency[pc] if u <= ALU_HALF or u in MEMORY else 1)
        for r in st.dsts[pc]:
            if w.reg_read[r] > lat_w:
                src = self._earlier(w, lambda q: st.unit[q] in MEMORY and r in st.srcs[q])
                self._hazard(w, pc, t, f"overwrites R{r} before {src} has read it (read at cycle {w.reg_read[r]})")
                break

    def _earlier(self, w, match):
        """``"OPCODE at file:line"`` of the latest instruction before the current one in the warp's
        trace that satisfies ``match(pc)`` (for hazard messages; only runs when one is found)."""
        parts = [w.pcs[:w.pos]] + [seg.pcs for seg, _ in reversed(w.parts[:w.part])]
        for pcs in parts:
            for q in reversed(pcs):
                if match(q):
                    i = self.kernel.instructions[q]
                    return f"{i.full_opcode} at {i.where}"
        return "an earlier instruction"

    def _hazard(self, w, pc, t, what):
        instr = self.kernel.instructions[pc]
        msg = (f"{instr.where}: hazard in warp {w.label} at cycle {t}: {instr.full_opcode} {what}; "
               f"control codes do not cover it (real hardware would silently compute garbage)")
        self._hazard_text(msg)

    def _hazard_text(self, msg):
        if self.hazard_mode == "strict":
            raise HazardError(msg)
        if self.hazard_mode and len(self.stats.hazards) < 1000:
            self.stats.hazards.append(msg)
