"""The compiled SM core: the per-cycle and per-issue work of the SM model, in numba.

It runs exactly the model of :mod:`maxsim.timing.reference` (the specification; read that module
for what each step means and why), on state held in numpy arrays instead of Python objects:

* ``G`` (int64): SM-wide scalars - the clock, where a suspended cycle resumes, the request handed
  to Python, counters, and the config values the loop reads (field names ``G_*`` below).
* ``F`` (float64): the texture paths' throughput and next free cycle, one per texture cache (a fluid
  server, so not an integer).
* ``W`` (int64, warp slot x field ``W_*``): one row per warp slot (its pc and trace position,
  ready/stall/dependency cycles, flags, stall counters, dependency barriers, predicates).
* ``REGS`` (warp slot x 2 x 256): cycle each register's result is ready (0) / is last read (1).
* ``Q`` (warp slot x (shared depth + global depth)): completion cycles of outstanding shared and
  global/texture requests (the per-warp memory queues; counts in ``W``).
* ``S`` (scheduler x field ``S_*``), ``SW`` (scheduler x warp slots, in launch order), ``RC``
  (scheduler x operand slot x reuse entries), ``BANKS`` (scheduler x 2 x ring: tag, busy bits).
* ``C`` (CTA slot x field ``C_*``): live and arrived warps of each resident CTA.
* ``P`` (pc x field ``P_*``), ``L`` (flat register lists of ``P``), ``RD`` (operand reads: slot,
  register, bank, reuse flag): the kernel's static tables.
* ``TPC``, ``TAUX`` (int32 both): the resident warps' flattened traces one after another (warp ``w``'s from
  ``W[w, W_TBASE]``) - pcs, and per position the shared wavefronts / offset of the sector list in
  ``SEC`` (count, then sector byte addresses) / barrier arrival (-1: none).
* ``L1`` (set x way x (2 + sectors per line)): the L1/texture cache's tags, LRU stamps and the
  arrival cycle of each sector; split caches (``l1tex.sharing``) one after another, each of
  ``G[G_L1_SETS]`` sets from ``G[G_L1_BASE]`` for the request under way.
* ``CNT`` (``stats.PC_FIELDS`` x pc): the per-instruction counters (executions, dual issues, bank
  conflicts, reuse hits, shared wavefronts, texture and L2 hits, stall cycles by reason).
* ``ILOG``, ``SLOG``, ``BLOG``, ``HLOG``: issue log, stall log, back-branch times and hazard
  records, drained by Python whenever the core returns; ``REQ`` the sectors of a memory request,
  then (from ``G[G_WQ_BASE]``) the queue of posted stores, also handed on at every return.
* ``MS``: the compiled memory system's arrays (``CompiledMemorySystem._read_args``, the
  address translation's among them; a read is for SM ``G[G_SM_ID]``; stand-ins
  with ``G[G_MEMC]`` = 0 for any other memory system): the core serves a read itself with
  :func:`~maxsim.timing.memory_core.read_request`, exactly as Python's call would, when no posted
  store is waiting to go first and the memory system's tables have room (``G[G_SAFE_N]`` sectors).

:func:`run` advances the SM until something needs Python and returns a status: a quantum ended
(``YIELD``), the L2/DRAM memory system must serve a read or a store the queue has no room for
(``MEM``: Python writes the completion cycle into ``G[G_MEM_RESULT]`` and calls again; the core
resumes inside the same issue),
a CTA's last warp exited (``EXIT``: Python flushes the statistics of the warps that exited since the
last return, in exit order, and launches CTAs into freed slots), the logs
need draining (``DRAIN``), a read served here left the memory system's tables too full (``ROOM``:
Python grows them, every SM takes the new arrays), the SM is idle (``DONE``) or an error
(``ERR_*``). A suspended cycle
resumes at the scheduler where it stopped, so the order of events is that of the reference core.

Speed: the helpers are written as small functions but compiled into their callers: a call between
compiled functions passes every array as 7-9 machine words and counts references to each, which
with ~20 state arrays cost more than the model's work. The issue path's helpers are
``forceinline=True`` (:func:`maxsim.jit.njit`: numba compiles each once, LLVM inlines it), so
:func:`run` holds the whole per-issue work twice, for the first issue of a scheduler's turn
(``_issue_here``) and for the second of a dual issue, and the rare steps it calls (L1
lookups, barrier release, warp exit, hazard records) too; the small scheduling steps (``_schedule``,
``_dual``, ``_next_time``) are ``inline="always"`` (numba's own inliner, cheap for them).
``run`` also passes the arrays on without reference counts (:func:`maxsim.jit.borrow`). The resident warps read
their traces as interleaved streams, which the CPU's prefetchers do not follow: each issue asks for
the trace lines two ahead (:func:`maxsim.jit.prefetch`), and as an SM's turn begins its warps' rows
and next trace lines are asked for at once (:func:`_warm`); the pc table (int32) and
the warp table keep the fields every issue reads in the first cache lines of their rows (perf put
the next-pc load first among the core's instructions before). The L2/DRAM model's
``read_request`` (and ``_post_queued``, which hands stores to it) stays a call, through a pointer
(:func:`bind_memory`): its code is not compiled again into the core's; so do the core's rare steps
(:func:`bind_core`). Every index into the core's arrays is non-negative, so the module is compiled
without numba's negative-index wrap-around (:data:`maxsim.jit.NO_WRAPAROUND`; ~10% of the core's
time). Compiling the core takes ~12-15 s of CPU, once (cached); numba's own inliner for the whole
issue path took ~45 s.

Two compiled drives: :func:`drive`, whose schedulers scan their warps' rows for the oldest ready
warp, and :func:`drive_copies`, whose scheduler rows keep copies of their warps' ready and
last-issue cycles side by side (``S_RDY``) and scan them with a mask of the ready ones, for SMs
whose schedulers hold many warps (``COPIES_FROM``, :func:`drive_for`); the copies' upkeep on every
issue costs the few-warp SGEMMs more than their scan saves. One source (``copies``, a constant of
each compiled function), so neither pays for the other's code; the same figures (docs/design.md).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core.errors import TypingError
from numba.cpython.unsafe.numbers import trailing_zeros as _trailing_zeros
from numba.extending import intrinsic

from ..jit import Callee, call_through, njit, pointer_call
from ..jit import borrow as _borrow
from ..jit import prefetch as _prefetch
from .memory_core import I_READ_HITS, I_READ_MISSES, I_ROOM, read_request, write_requests
from .static import (ALU_HALF, BAR, BAR_HIST, BRANCH, DUAL_CONST, DUAL_FIRST, DUAL_SECOND, EXIT, LDG, LDS,
                     NEVER, S2R, STG, STS, TEX)
from .stats import (PC_BANK_CONFLICTS, PC_BANK_CYCLES, PC_DELAYED, PC_DUAL, PC_EXEC, PC_L2_HITS,
                    PC_L2_MISSES, PC_REUSE_HITS, PC_SHARED_REQ, PC_SHARED_WF, PC_STALLS, PC_TEX_HITS,
                    PC_TEX_REQ, PC_TEX_SECTORS)
from .summaries import sort_prefix

# ---- statuses returned by run() ----
OK, YIELD, DONE, MEM, EXITED, DRAIN, ERR_LIMIT, ERR_DEADLOCK, ERR_TRACE_END, ERR_HAZARD, ROOM = range(11)
_NONE = 11  # a scheduler found no warp to issue (internal)

# ---- G: SM-wide scalars ----
(G_T, G_SI, G_ISSUED, G_PHASE, G_CTX_SLOT, G_CTX_PC, G_CTX_DONE, G_REQ_KIND, G_REQ_NOW, G_REQ_N,
 G_MEM_RESULT, G_EXIT_SLOT, G_ERR_SLOT, G_ERR_PC, G_NEXT_YIELD, G_LIMIT, G_SHARED_FREE, G_L1_CLOCK,
 # counters (statistics)
 G_DUAL, G_REUSE_HITS, G_BANK_CONFLICTS, G_BANK_CYCLES, G_DELAYED, G_SHARED_REQ, G_SHARED_WF,
 G_STORES, G_TEX_REQ, G_TEX_SECTORS, G_TEX_HITS, G_L1_HITS, G_L1_MISSES, G_L1_PENDING, G_L1_EVICT,
 G_SHM_BUSY,
 # log fill levels; the queue of posted stores in REQ (from G_WQ_BASE, G_WQ_N words used)
 G_NILOG, G_NSLOG, G_NBLOG, G_NHLOG, G_WQ_BASE, G_WQ_N,
 # config
 G_NSCHED, G_HAZARDS, G_LOG, G_LOOKAHEAD, G_REUSE_ENTRIES, G_SWITCH_CLEARS, G_PENALTY,
 G_MEM_INTERVAL, G_PIPE_INT0, G_PIPE_INT1, G_REUSE_SLOTS, G_SHARED_DEPTH, G_GLOBAL_DEPTH,
 G_SECTOR, G_DUAL_ON, G_BAR_DELAY, G_LAT_S2R, G_READ_SHARED, G_READ_TEX, G_READ_GLOBAL,
 G_READ_BAR_RELEASE, G_TEX_L1_HIT, G_BARRIER_SYNC, G_LAT_LDS, G_LAT_STS, G_L1_LINE, G_L1_SPL,
 G_L1_SETS, G_L1_ASSOC, G_MEMC, G_SAFE_N, G_BRANCH_TAKEN,
 # warps exited so far (their order: W_EXIT_SEQ)
 G_EXITS,
 # the SM's number in the GPU (its L1 TLB in the memory system's address translation)
 G_SM_ID,
 # the texture caches (l1tex.sharing): how a scheduler picks its cache (0 pooled, 1 s // (schedulers
 # / caches), 2 s % caches), how many, and the first set of the cache of the request under way
 G_L1_MODE, G_L1_CACHES, G_L1_BASE,
 # sm.oldest_warp: 0 the ready warp that issued least recently, 1 the oldest by age (the queue's order)
 G_OLDEST_AGE,
 # whether the last cycles passed over were those after a cycle in which ready warps found their units
 # busy (a hint: only then does run look for such a cycle after one with an issue)
 G_IDLE,
 # whether the scheduler rows keep the copies of the warps' cycles (S_RDY, S_WAKE, S_LASTK): set as
 # drive_copies is called, cleared as drive is (the rare steps keep the copies only then); and whether
 # they are up to date (cleared as drive_copies is called: Python may have changed the warps since;
 # set once they are made, as the SM's turn comes)
 G_COPIES, G_SYNCED, G_SIZE) = range(82)

# request kinds (G_REQ_KIND)
REQ_TEX, REQ_LDG, REQ_STG = range(3)

# ---- F: float scalars ----
# one texture cache's throughput (bytes per cycle), then each cache's next free cycle (F_TEX_FREE + c)
F_TEX_BPC, F_TEX_FREE, F_SIZE = range(3)

# ---- W: per warp slot ----
(W_WID, W_CTA, W_PC, W_POS, W_LEN, W_READY, W_STALL_UNTIL, W_DEP_UNTIL, W_LAST_ISSUE, W_DONE,
 W_AT_BAR, W_YIELDED, W_BLOCKED, W_BAR_WAIT, W_NQ0, W_NQ1) = range(16)
# (the fields every issue reads first: a row starts on a cache line and its first two lines hold them)
W_TBASE = 16  # where the warp's trace starts in TPC and TAUX
# per memory queue (shared, global/texture): a cycle before which it is full (its earliest
# completion when _unit_ok last found it full; 0: not known full)
W_QFULL0 = 17
W_QFULL1 = 18
W_STALLS = 19  # 6 stall counters (stats.STALL_REASONS order)
W_BAR_CLEAR = 25  # 7 entries (barrier 0 unused)
W_BAR_SET = 32  # 7 entries
W_LDG_DONE = 39  # completion cycle of the warp's last global load (they complete in issue order)
W_SHD_DONE = 40  # latest completion cycle of the warp's shared-memory ops
W_PRED = 41  # 8 predicates
W_BAR_HIST = 49  # per barrier 1-6, BAR_HIST entries: completion cycles of its latest ops (DEPBAR.LE)
W_EXIT_SEQ = W_BAR_HIST + 6 * BAR_HIST  # the warp exited as the SM's n-th (G_EXITS)
W_SIZE = -(-(W_EXIT_SEQ + 1) // 8) * 8  # whole cache lines

# ---- S: per scheduler ----
S_LAST, S_BUSY, S_PIPE0, S_PIPE1, S_MEM_FREE, S_RC_WARP, S_NW, S_RCN = range(8)  # S_RCN: 3 counts
S_SIZE = 15
S_PIPE2 = 11  # the quarter-rate (xu) pipe's free cycle
S_PIPE3 = 12  # the fp64 pipe's free cycle
# With the copies (drive_copies, G_COPIES): a cycle before which none of the scheduler's warps is
# ready (at most the least of its S_RDY entries below): until then its turn finds no warp without a
# scan; and the place of warp S_LAST in SW's row (its S_RDY entry)
S_WAKE = 13
S_LASTK = 14
# from column S_SIZE (a row holds S_SIZE + 2 x warp slots), with the copies only: two runs of
# SW.shape[1] entries, one per warp of the scheduler in SW's order (warp SW[s, k] at k): from S_RDY
# the cycle from which the warp may issue as far as its dependencies and barriers say (W_READY;
# NEVER while it waits at a CTA barrier, W_AT_BAR), from S_SIZE + SW.shape[1] the cycle it last
# issued (W_LAST_ISSUE): the schedulers' scans read these side by side instead of one warp row
# each. Made from W as an SM's turn first comes in a call of drive_copies (Python may have changed W
# since, G_SYNCED) and kept by the core's writes of those fields and of SW.
S_RDY = S_SIZE
# the fewest warps a scheduler may hold (the kernel's resident CTAs' warps over the schedulers) for
# which an SM runs with the copies above (drive_copies); with fewer, the per-warp scan of the warps'
# rows costs less than the copies' upkeep (a simulator setting, no figure depends on it; a
# documented choice between the SGEMMs' 4 warps per scheduler, on which the copies cost more than
# they save, and matmul_tiled's 16: benchmarks/sm_speed.py, general_speed.py --cases gemm;
# docs/design.md)
COPIES_FROM = 6

# ---- C: per resident CTA ----
C_LIVE, C_NARRIVED, C_SIZE = range(3)

# ---- P: per instruction ----
# (int32; what every issue reads comes first: a row is two cache lines, the first 16 fields one)
(P_UNIT, P_DUAL, P_STALL, P_YIELD, P_WAITS, P_DEPBAR, P_WBAR, P_LATENCY, P_DST, P_NDST, P_PDST, P_NPDST,
 P_READS, P_NREADS, P_PIPE, P_INTERVAL, P_RBAR, P_DEPBAR_N, P_BACK, P_SRC, P_NSRC, P_PSRC, P_NPSRC,
 P_MREADS, P_NMREADS, P_READ, P_LATE_REG, P_LATE_READ) = range(28)
P_SIZE = 32

PREFETCH_AHEAD = 32  # trace positions (int32) prefetched ahead of the next: two 64-byte cache lines
RING = 64  # register bank ring (cycles remembered), as regfile.RING
LATE = 16  # bit offset of the late-read marks, as regfile.LATE
NO_FILL = -(1 << 62)  # an L1 sector not present
ILOG_W, SLOG_W, HLOG_W = 4, 7, 8  # columns of the issue, stall and hazard logs


# ---- the memory system's functions the core calls, through pointers (maxsim.jit.Callee) ----
# Their compiled code stays out of the core's (the core's compile neither waits for nor repeats
# theirs); bind_memory points at it before the SMs run. Unbound, a read is left to Python (as when
# the memory system's tables have no room) and so are the queued stores (as when the memory system
# is Python's): the same figures.
READ_REQUEST = Callee("read_request")
POST_QUEUED = Callee("post_queued")


@intrinsic
def _read_request(typingctx, now, A, sm, P, I, F, T, LINES, READY, SF, SI, HK, HV, HP, DELAYS):
    """``memory_core.read_request(...)`` through ``READ_REQUEST``; NaN (the read left to Python)
    while it is unbound."""
    sig = types.float64(now, A, sm, P, I, F, T, LINES, READY, SF, SI, HK, HV, HP, DELAYS)
    if (now, A, sm) != READ_HEAD:
        raise TypingError(f"read_request through a pointer takes {READ_HEAD} first, not {(now, A, sm)}")

    def codegen(context, builder, sig, args):
        return call_through(context, builder, sig, args, READ_REQUEST, ir.Constant(ir.DoubleType(), float("nan")))
    return sig, codegen


@intrinsic
def _post_queued_through(typingctx, G, REQ, MS):
    """``_post_queued(G, REQ, MS)`` through ``POST_QUEUED``; nothing while it is unbound (the
    stores stay queued for Python)."""
    sig = types.none(G, REQ, MS)

    def codegen(context, builder, sig, args):
        return call_through(context, builder, sig, args, POST_QUEUED, None)
    return sig, codegen


READ_HEAD = (types.float64, types.Array(types.int64, 1, "C"), types.int64)  # a read's cycle, sectors, SM


def bind_memory(MS):
    """Point the core's calls of the compiled memory system at its code for the arrays ``MS``
    (``CompiledMemorySystem._read_args``), compiling or loading it now if this process has not."""
    if READ_REQUEST.bound and POST_QUEUED.bound:
        return
    import numba
    ms = tuple(numba.typeof(a) for a in MS)
    READ_REQUEST.bind(read_request, READ_HEAD + ms, types.float64)
    POST_QUEUED.bind(_post_queued, (types.Array(types.int64, 1, "C"),) * 2 + (numba.typeof(tuple(MS)),), types.none)


@njit(cache=True, forceinline=True)
def _book(BANKS, s, bank, cycle, collide_from):
    """regfile.RegisterBanks.book: (cycle of the read, collided with a late read)."""
    bit = 1 << bank
    late = False
    while True:
        i = cycle & (RING - 1)
        if BANKS[s, 0, i] != cycle:
            BANKS[s, 0, i] = cycle
            BANKS[s, 1, i] = bit
            return cycle, late
        b = BANKS[s, 1, i]
        if not b & bit:
            BANKS[s, 1, i] = b | bit
            return cycle, late
        if cycle >= collide_from and b & (bit << LATE):
            late = True
        cycle += 1


@njit(cache=True, forceinline=True)
def _book_late_reads(BANKS, P, L, s, pc, when):
    o = P[pc, P_MREADS]
    for k in range(P[pc, P_NMREADS]):
        bank = L[o + k]
        c, _ = _book(BANKS, s, bank, when, when)
        BANKS[s, 1, c & (RING - 1)] |= 1 << (bank + LATE)


@njit(cache=True, forceinline=True)
def _unit_ok(G, W, Q, S, P, w, pc, t, s):
    u = P[pc, P_UNIT]
    if u <= ALU_HALF:
        pipe = P[pc, P_PIPE]
        if S[s, S_PIPE0 + pipe if pipe < 2 else (S_PIPE2 if pipe == 2 else S_PIPE3)] > t:
            W[w, W_BLOCKED] = 4
            return False
    elif u >= LDS and u <= STG:
        if S[s, S_MEM_FREE] > t:
            W[w, W_BLOCKED] = 3
            return False
        if u == LDS or u == STS:
            base, nf, qf, depth = 0, W_NQ0, W_QFULL0, G[G_SHARED_DEPTH]
        else:
            base, nf, qf, depth = G[G_SHARED_DEPTH], W_NQ1, W_QFULL1, G[G_GLOBAL_DEPTH]
        n = W[w, nf]
        # (a queue holding fewer requests than its depth has a place, whatever has completed: it is
        # compacted only when it may be full, the same answer for fewer passes; _unit_free counts
        # only the requests still live, and a request is queued only after this test passed.
        # A queue found full stays full until its earliest completion, W_QFULL*: nothing is queued
        # meanwhile, so until then the answer needs no pass; a later pass runs at or after that
        # cycle, so a value left from before a request was queued is never in the future)
        if n >= depth:
            if W[w, qf] > t:
                W[w, W_BLOCKED] = 3
                return False
            m = 0
            first = NEVER
            for k in range(n):  # drop the requests completed by now
                c = Q[w, base + k]
                if c > t:
                    Q[w, base + m] = c
                    m += 1
                    if c < first:
                        first = c
            W[w, nf] = m
            if m >= depth:
                W[w, qf] = first
                W[w, W_BLOCKED] = 3
                return False
    return True


@njit(cache=True, forceinline=True)
def _collect(G, W, S, RC, BANKS, P, L, RD, CNT, w, s, pc, t):
    """Reuse caches and bank booking for one ALU instruction; returns the dispatch delay."""
    wid = W[w, W_WID]
    if S[s, S_RC_WARP] != wid:  # another warp's caches are no use: start empty
        for k in range(3):
            S[s, S_RCN + k] = 0
    entries = G[G_REUSE_ENTRIES]
    nslots = G[G_REUSE_SLOTS]
    # the distinct registers read (at most one per operand slot, so three) and their banks,
    # in scalars: a small array here would be a heap allocation on every ALU issue
    r0 = r1 = -1
    b0 = b1 = b2 = 0
    nb = 0
    hits = 0
    o = P[pc, P_READS]
    for k in range(P[pc, P_NREADS]):
        slot = RD[o + k, 0]
        r = RD[o + k, 1]
        bank = RD[o + k, 2]
        flagged = RD[o + k, 3]
        if slot < nslots:
            n = S[s, S_RCN + slot]
            j = -1
            for q in range(n):
                if RC[s, slot, q] == r:
                    j = q
                    break
            if j >= 0:
                hits += 1
                for q in range(j, n - 1):
                    RC[s, slot, q] = RC[s, slot, q + 1]
                n -= 1
                if flagged:
                    RC[s, slot, n] = r
                    n += 1
                S[s, S_RCN + slot] = n
                continue
            if flagged:
                if n >= entries:  # evict the least recently used
                    for q in range(n - 1):
                        RC[s, slot, q] = RC[s, slot, q + 1]
                    n -= 1
                RC[s, slot, n] = r
                S[s, S_RCN + slot] = n + 1
        if nb == 0:
            r0, b0, nb = r, bank, 1
        elif nb == 1:
            if r != r0:
                r1, b1, nb = r, bank, 2
        elif r != r0 and r != r1:
            b2, nb = bank, 3
    od = P[pc, P_DST]
    for k in range(P[pc, P_NDST]):
        _forget(S, RC, s, L[od + k])
    S[s, S_RC_WARP] = wid
    if hits:
        G[G_REUSE_HITS] += hits
        CNT[PC_REUSE_HITS, pc] += hits
    if nb == 0:
        return 0
    distinct = 1
    if nb > 1 and b1 != b0:
        distinct += 1
    if nb > 2 and b2 != b0 and b2 != b1:
        distinct += 1
    if nb > distinct:
        G[G_BANK_CONFLICTS] += nb - distinct
        CNT[PC_BANK_CONFLICTS, pc] += nb - distinct
    last = t
    start = t - G[G_LOOKAHEAD]
    delayed = False
    for a in range(nb):
        c, late = _book(BANKS, s, b0 if a == 0 else (b1 if a == 1 else b2), start, t)
        delayed |= late
        if c > last:
            last = c
    delay = (last - t) * G[G_PENALTY]
    if delay:
        G[G_BANK_CYCLES] += delay
        CNT[PC_BANK_CYCLES, pc] += delay
        if delayed:
            G[G_DELAYED] += 1
            CNT[PC_DELAYED, pc] += 1
    return delay


@njit(cache=True, forceinline=True)
def _forget(S, RC, s, r):
    """A write of register r removes it from every reuse cache of scheduler s."""
    for slot in range(3):
        n = S[s, S_RCN + slot]
        for q in range(n):
            if RC[s, slot, q] == r:
                for j in range(q, n - 1):
                    RC[s, slot, j] = RC[s, slot, j + 1]
                S[s, S_RCN + slot] = n - 1
                break


@njit(cache=True, forceinline=True)
def _push(G, W, Q, w, queue, done):
    if queue == 0:
        Q[w, W[w, W_NQ0]] = done
        W[w, W_NQ0] += 1
    else:
        Q[w, G[G_SHARED_DEPTH] + W[w, W_NQ1]] = done
        W[w, W_NQ1] += 1


@njit(cache=True, forceinline=True)
def _set_read_barrier(W, P, w, pc, t, release):
    rb = P[pc, P_RBAR]
    if rb:
        if W[w, W_BAR_CLEAR + rb] < release:
            W[w, W_BAR_CLEAR + rb] = release
        W[w, W_BAR_SET + rb] = t


@njit(cache=True, forceinline=True)
def _mark_reads(W, REGS, P, L, w, pc, when):
    o = P[pc, P_SRC]
    for k in range(P[pc, P_NSRC]):
        REGS[w, 1, L[o + k]] = when


@njit(cache=True)
def _l1_access(G, L1, REQ, start, SEC, off, n):
    """TextureCache.access: look up n sectors at cycle start; the misses go to REQ (allocated,
    filled at start until _l1_fill). Returns (hits, misses, latest fill of a pending hit)."""
    line_sz = G[G_L1_LINE]
    sec_sz = G[G_SECTOR]
    spl = G[G_L1_SPL]
    n_sets = G[G_L1_SETS]
    base = G[G_L1_BASE]
    assoc = G[G_L1_ASSOC]
    hits = 0
    nmiss = 0
    pending = 0
    for k in range(n):
        addr = SEC[off + k]
        ln = addr // line_sz
        st = base + ln % n_sets
        way = -1
        for a in range(assoc):
            if L1[st, a, 0] == ln:
                way = a
                break
        G[G_L1_CLOCK] += 1
        if way < 0:
            free = -1
            used = 0
            lru = -1
            for a in range(assoc):
                if L1[st, a, 0] < 0:
                    if free < 0:
                        free = a
                else:
                    used += 1
                    if lru < 0 or L1[st, a, 1] < L1[st, lru, 1]:
                        lru = a
            if used >= assoc:
                G[G_L1_EVICT] += 1
                free = lru
            way = free
            L1[st, way, 0] = ln
            for q in range(spl):
                L1[st, way, 2 + q] = NO_FILL
        L1[st, way, 1] = G[G_L1_CLOCK]
        i = (addr // sec_sz) % spl
        r = L1[st, way, 2 + i]
        if r == NO_FILL:
            L1[st, way, 2 + i] = start
            REQ[nmiss] = addr
            nmiss += 1
        else:
            hits += 1
            if r > start:
                G[G_L1_PENDING] += 1
                if r > pending:
                    pending = r
    G[G_L1_HITS] += hits
    G[G_L1_MISSES] += nmiss
    return hits, nmiss, pending


@njit(cache=True)
def _l1_fill(G, L1, REQ, n, ready):
    """TextureCache.fill: the missed sectors (still allocated) arrive at cycle ready."""
    line_sz = G[G_L1_LINE]
    spl = G[G_L1_SPL]
    for k in range(n):
        addr = REQ[k]
        ln = addr // line_sz
        st = G[G_L1_BASE] + ln % G[G_L1_SETS]
        for a in range(G[G_L1_ASSOC]):
            if L1[st, a, 0] == ln:
                L1[st, a, 2 + (addr // G[G_SECTOR]) % spl] = ready
                break


@njit(cache=True, forceinline=True)
def _memory(G, F, W, REGS, Q, S, BANKS, P, L, TAUX, SEC, L1, REQ, CNT, w, s, pc, t, u):
    """The memory part of an issue: (needs the memory system, completion cycle).

    When the L2/DRAM memory system is needed, the request is left in G/REQ and the first value
    is True; the issue completes in _memory_done once Python has served it."""
    G_ = G
    S[s, S_MEM_FREE] = t + G_[G_MEM_INTERVAL]
    aux = TAUX[W[w, W_TBASE] + W[w, W_POS]]
    if u == LDS or u == STS:
        read_at = t + G_[G_READ_SHARED]
        _book_late_reads(BANKS, P, L, s, pc, read_at)
        wf = aux if aux >= 0 else 1
        if wf == 0:
            # every lane off: nothing moves, but its barrier clears in the queue's order, after the
            # warp's earlier shared ops (ptxas's scan.cu waits on a guarded LDS for an earlier one)
            done = t + 1
            if W[w, W_SHD_DONE] > done:
                done = W[w, W_SHD_DONE]
            release = t + 1
        else:
            G_[G_SHARED_REQ] += 1
            G_[G_SHARED_WF] += wf
            CNT[PC_SHARED_REQ, pc] += 1
            CNT[PC_SHARED_WF, pc] += wf
            nf = G_[G_SHARED_FREE]
            start = t if t > nf else nf
            G_[G_SHARED_FREE] = start + wf
            G_[G_SHM_BUSY] += wf
            done = start + wf - 1 + (G_[G_LAT_STS] if u == STS else G_[G_LAT_LDS])
            release = G_[G_SHARED_FREE] + G_[G_READ_SHARED]
            if release < read_at + 1:
                release = read_at + 1
        if done > W[w, W_SHD_DONE]:
            W[w, W_SHD_DONE] = done
        _push(G_, W, Q, w, 0, done)
        _set_read_barrier(W, P, w, pc, t, release)
        if G_[G_HAZARDS]:
            _mark_reads(W, REGS, P, L, w, pc, read_at)
        return False, done
    n = SEC[aux] if aux >= 0 else 0
    if n == 0 and u != STG:
        # (a global or local load's barrier clears after the warp's earlier loads: see reference.py)
        if u == LDG and W[w, W_LDG_DONE] > t + 1:
            return False, W[w, W_LDG_DONE]
        return False, t + 1
    read_at = t + (G_[G_READ_TEX] if u == TEX else G_[G_READ_GLOBAL])
    _book_late_reads(BANKS, P, L, s, pc, read_at)
    _set_read_barrier(W, P, w, pc, t, t + G_[G_READ_BAR_RELEASE])
    if G_[G_HAZARDS]:
        _mark_reads(W, REGS, P, L, w, pc, read_at)
    if u == STG:
        G_[G_STORES] += 1
        if n:
            # a posted store: queued (cycle, count, sectors) for Python to hand to the memory system
            # at the core's next return, before anything else (so the memory system sees the
            # requests in the same order as when each store returns at once); the store returns at
            # once only when the queue is full
            q = G_[G_WQ_BASE] + G_[G_WQ_N]
            if q + 2 + n <= REQ.shape[0]:
                REQ[q] = read_at
                REQ[q + 1] = n
                for k in range(n):
                    REQ[q + 2 + k] = SEC[aux + 1 + k]
                G_[G_WQ_N] += 2 + n
                return False, t + 1
            for k in range(n):
                REQ[k] = SEC[aux + 1 + k]
            G_[G_REQ_KIND] = REQ_STG
            G_[G_REQ_NOW] = read_at
            G_[G_REQ_N] = n
            G_[G_CTX_DONE] = t + 1
            return True, 0
        return False, t + 1
    if u == TEX:
        G_[G_TEX_REQ] += 1
        G_[G_TEX_SECTORS] += n
        CNT[PC_TEX_REQ, pc] += 1
        CNT[PC_TEX_SECTORS, pc] += n
        mode = G_[G_L1_MODE]
        unit = 0 if mode == 0 else (s // (G_[G_NSCHED] // G_[G_L1_CACHES]) if mode == 1 else s % G_[G_L1_CACHES])
        G_[G_L1_BASE] = unit * G_[G_L1_SETS]
        tf = F[F_TEX_FREE + unit]
        fstart = tf if tf > read_at else float(read_at)
        F[F_TEX_FREE + unit] = fstart + (n * G_[G_SECTOR]) / F[F_TEX_BPC]
        start = int(np.ceil(fstart))
        hits, nmiss, pending = _l1_access(G_, L1, REQ, start, SEC, aux + 1, n)
        G_[G_TEX_HITS] += hits
        CNT[PC_TEX_HITS, pc] += hits
        issued = start - (read_at - t)
        done = issued + G_[G_TEX_L1_HIT]
        if pending > done:
            done = pending
        if nmiss:
            G_[G_REQ_KIND] = REQ_TEX
            G_[G_REQ_NOW] = issued
            G_[G_REQ_N] = nmiss
            G_[G_CTX_DONE] = done
            return True, 0
        _push(G_, W, Q, w, 1, done)
        return False, done
    # LDG: through the L2
    for k in range(n):
        REQ[k] = SEC[aux + 1 + k]
    G_[G_REQ_KIND] = REQ_LDG
    G_[G_REQ_NOW] = t
    G_[G_REQ_N] = n
    G_[G_CTX_DONE] = 0
    return True, 0


@njit(cache=True, forceinline=True)
def _memory_done(G, W, Q, L1, REQ, w):
    """Complete a memory issue with the memory system's answer: its completion cycle."""
    kind = G[G_REQ_KIND]
    if kind == REQ_STG:
        return G[G_CTX_DONE]
    mdone = G[G_MEM_RESULT]
    if kind == REQ_TEX:
        _l1_fill(G, L1, REQ, G[G_REQ_N], mdone)
        done = G[G_CTX_DONE]
        if mdone > done:
            done = mdone
    else:  # LDG: a warp's global loads complete in issue order
        done = mdone
        if W[w, W_LDG_DONE] > done:
            done = W[w, W_LDG_DONE]
        W[w, W_LDG_DONE] = done
    _push(G, W, Q, w, 1, done)
    return done


@njit(cache=True)
def _hazard(G, W, HLOG, kind, w, pc, t, reg, a, b):
    k = G[G_NHLOG]
    HLOG[k, 0] = kind
    HLOG[k, 1] = W[w, W_WID]
    HLOG[k, 2] = pc
    HLOG[k, 3] = t
    HLOG[k, 4] = reg
    HLOG[k, 5] = a
    HLOG[k, 6] = b
    HLOG[k, 7] = W[w, W_POS]
    G[G_NHLOG] = k + 1


@njit(cache=True, forceinline=True)
def _check_hazards(G, W, REGS, P, L, HLOG, w, pc, t, u):
    """Record reads before results are ready and overwrites before reads (kinds 0, 1, 2);
    True when one was found."""
    read_t = t + P[pc, P_READ]
    found = False
    o = P[pc, P_SRC]
    for k in range(P[pc, P_NSRC]):
        r = L[o + k]
        at = read_t + P[pc, P_LATE_READ] if r == P[pc, P_LATE_REG] else read_t  # a 64-bit address's high word
        if REGS[w, 0, r] > at:
            _call_hazard(G, W, HLOG, 0, w, pc, t, r, at, REGS[w, 0, r])
            found = True
            break
    if found and G[G_HAZARDS] == 2:
        return True
    o = P[pc, P_PSRC]
    for k in range(P[pc, P_NPSRC]):
        p = L[o + k]
        if W[w, W_PRED + p] > t:
            _call_hazard(G, W, HLOG, 1, w, pc, t, p, t, W[w, W_PRED + p])
            found = True
            break
    if found and G[G_HAZARDS] == 2:
        return True
    lat_w = t + (P[pc, P_LATENCY] if u <= ALU_HALF or (u >= LDS and u <= STG) else 1)
    o = P[pc, P_DST]
    for k in range(P[pc, P_NDST]):
        r = L[o + k]
        if REGS[w, 1, r] > lat_w:
            _call_hazard(G, W, HLOG, 2, w, pc, t, r, lat_w, REGS[w, 1, r])
            found = True
            break
    return found


@njit(cache=True)
def _release(G, W, S, SW, C, c, t):
    """The last live warp of CTA slot c arrived at BAR.SYNC: release the waiting ones."""
    when = t + G[G_BARRIER_SYNC]
    for s in range(G[G_NSCHED]):
        for k in range(S[s, S_NW]):
            x = SW[s, k]
            if W[x, W_CTA] == c and W[x, W_AT_BAR]:
                W[x, W_AT_BAR] = 0
                if W[x, W_READY] < when:
                    W[x, W_READY] = when
                if G[G_COPIES]:
                    S[s, S_RDY + k] = W[x, W_READY]
                    if W[x, W_READY] < S[s, S_WAKE]:
                        S[s, S_WAKE] = W[x, W_READY]
                if W[x, W_DEP_UNTIL] < when:
                    W[x, W_DEP_UNTIL] = when
    C[c, C_NARRIVED] = 0


@njit(cache=True)
def _finish_warp(G, W, S, SW, C, w, s, t):
    W[w, W_DONE] = 1
    n = S[s, S_NW]
    li = S_SIZE + SW.shape[1]
    copies = G[G_COPIES]
    gone = n
    for k in range(n):
        if SW[s, k] == w:
            gone = k
            for j in range(k, n - 1):
                SW[s, j] = SW[s, j + 1]
                if copies:
                    S[s, S_RDY + j] = S[s, S_RDY + j + 1]
                    S[s, li + j] = S[s, li + j + 1]
            break
    S[s, S_NW] = n - 1
    if S[s, S_LAST] == w:
        S[s, S_LAST] = -1
    elif copies and S[s, S_LAST] >= 0 and S[s, S_LASTK] > gone:
        S[s, S_LASTK] -= 1
    c = W[w, W_CTA]
    C[c, C_LIVE] -= 1
    if C[c, C_LIVE] > 0 and C[c, C_NARRIVED] > 0 and C[c, C_NARRIVED] == C[c, C_LIVE]:
        _release(G, W, S, SW, C, c, t)
    G[G_EXIT_SLOT] = w
    W[w, W_EXIT_SEQ] = G[G_EXITS]
    G[G_EXITS] += 1


@njit(cache=True)
def _depbar_clear(W, w, b, n, t):
    """When at most ``n`` ops of barrier ``b`` are still out (DEPBAR.LE SB(b-1), n issued at ``t``):
    the (m - n)-th earliest completion of the m outstanding among the barrier's latest ops."""
    h = W_BAR_HIST + (b - 1) * BAR_HIST
    out = np.empty(BAR_HIST, np.int64)
    m = 0
    for k in range(BAR_HIST):
        c = W[w, h + k]
        if c > t:
            out[m] = c
            m += 1
    if m <= n:
        return t
    sort_prefix(out, m)  # (at most BAR_HIST values)
    return out[m - n - 1]


# ---- the core's rare steps, called through pointers ----
# (hazard records, barrier releases, warp exits, DEPBAR): compiled on their own, not into the issue
# path (the core's compile neither types nor translates them; a first run compiles them in another
# process meanwhile); bind_core points at them before the SMs run (maxsim.timing.clock does, as for
# bind_memory). The L1 lookups and fills of texture requests stay direct calls: through a pointer
# they cost the core ~7% of its speed on the SGEMMs (benchmarks/sm_speed.py), these nothing
# measurable.
def _a(dtype, ndim):
    return types.Array(dtype, ndim, "C")


_I1, _I2, _INT = _a(types.int64, 1), _a(types.int64, 2), types.int64
RARE_STEPS = (  # (function, signature)
    (_hazard, types.none(_I1, _I2, _I2, _INT, _INT, _INT, _INT, _INT, _INT, _INT)),
    (_release, types.none(_I1, _I2, _I2, _I2, _I2, _INT, _INT)),
    (_finish_warp, types.none(_I1, _I2, _I2, _I2, _I2, _INT, _INT, _INT)),
    (_depbar_clear, _INT(_I2, _INT, _INT, _INT, _INT)),
)
RARE_CALLEES = tuple(Callee(f.py_func.__name__.lstrip("_")) for f, _ in RARE_STEPS)
_call_hazard, _call_release, _call_finish_warp, _call_depbar_clear = (
    pointer_call(c, sig) for c, (_, sig) in zip(RARE_CALLEES, RARE_STEPS))


def bind_core():
    """Point the core's calls of its rare steps at their compiled code, compiling or loading it
    now if this process has not (needed before any SM runs: unbound, they would do nothing)."""
    for callee, (func, sig) in zip(RARE_CALLEES, RARE_STEPS):
        if not callee.bound:
            callee.bind(func, sig.args, sig.return_type)


@njit(cache=True, forceinline=True)
def _issue_tail(G, W, REGS, S, SW, RC, C, P, L, TPC, TAUX, ILOG, w, s, pc, t, u, delay, done_at, arrives, copies):
    """Everything of an issue after its unit's work: results, barriers, the next pc. ``copies``
    (a constant of the compiled function, :func:`drive_copies`): keep the scheduler row's copies."""
    if G[G_LOG]:
        k = G[G_NILOG]
        ILOG[k, 0] = t
        ILOG[k, 1] = W[w, W_WID]
        ILOG[k, 2] = pc
        ILOG[k, 3] = done_at
        G[G_NILOG] = k + 1
    od = P[pc, P_DST]
    nd = P[pc, P_NDST]
    if nd and u > ALU_HALF and S[s, S_RC_WARP] == W[w, W_WID]:
        for k in range(nd):
            _forget(S, RC, s, L[od + k])
    if G[G_HAZARDS]:  # (the registers' times serve the hazard checks only)
        for k in range(nd):
            REGS[w, 0, L[od + k]] = done_at
    o = P[pc, P_PDST]
    for k in range(P[pc, P_NPDST]):
        W[w, W_PRED + L[o + k]] = done_at
    b = P[pc, P_WBAR]
    if b:
        if W[w, W_BAR_CLEAR + b] < done_at:
            W[w, W_BAR_CLEAR + b] = done_at
        W[w, W_BAR_SET + b] = t
        h = W_BAR_HIST + (b - 1) * BAR_HIST
        for k in range(BAR_HIST - 1):
            W[w, h + k] = W[w, h + k + 1]
        W[w, h + BAR_HIST - 1] = done_at
    pos = W[w, W_POS] + 1
    W[w, W_POS] = pos
    if pos >= W[w, W_LEN]:
        if u != EXIT:
            G[G_ERR_SLOT] = w
            G[G_ERR_PC] = pc
            return ERR_TRACE_END
        _call_finish_warp(G, W, S, SW, C, w, s, t)
        # Python is needed when the CTA has ended (its slot frees: statistics, the next CTA);
        # the other warps' exits wait for it (their rows stay until the CTA's slot is reused)
        return EXITED if C[W[w, W_CTA], C_LIVE] == 0 else OK
    base = W[w, W_TBASE] + pos
    nxt = TPC[base]
    # the resident warps read their traces as interleaved streams, which the CPU's prefetchers
    # miss: ask for the lines two ahead
    _prefetch(TPC, base + PREFETCH_AHEAD)
    _prefetch(TAUX, base + PREFETCH_AHEAD)
    W[w, W_PC] = nxt
    stall = P[pc, P_STALL]
    if u == BRANCH and nxt != pc + 1 and stall < G[G_BRANCH_TAKEN]:
        stall = G[G_BRANCH_TAKEN]  # a taken branch: its target issues latency.branch_taken on at least
    ready = t + delay + (stall if stall > 0 else 1)
    W[w, W_STALL_UNTIL] = ready
    W[w, W_YIELDED] = P[pc, P_YIELD]
    dep = ready
    waits = P[nxt, P_WAITS]
    if waits:
        for b in range(1, 7):
            if waits >> b & 1:
                c = W[w, W_BAR_CLEAR + b]
                if c > dep and ready > W[w, W_BAR_SET + b] + G[G_BAR_DELAY]:
                    dep = c
    if P[pc, P_DEPBAR]:
        c = _call_depbar_clear(W, w, P[pc, P_DEPBAR], P[pc, P_DEPBAR_N], t)
        if c > dep:
            dep = c
    W[w, W_DEP_UNTIL] = dep
    W[w, W_READY] = dep
    if copies:
        S[s, S_RDY + S[s, S_LASTK]] = dep  # (S_WAKE stays below it: the warp was ready by t < dep)
    if u == BAR and arrives:
        c = W[w, W_CTA]
        C[c, C_NARRIVED] += 1
        W[w, W_AT_BAR] = 1
        if copies:
            S[s, S_RDY + S[s, S_LASTK]] = NEVER
        W[w, W_BAR_WAIT] = 1
        if C[c, C_NARRIVED] == C[c, C_LIVE]:
            _call_release(G, W, S, SW, C, c, t)
    return OK


@njit(cache=True, forceinline=True)
def _issue_here(G, F, W, REGS, Q, S, SW, RC, BANKS, C, P, L, RD, TPC, TAUX, SEC, L1, ILOG, BLOG, HLOG,
                REQ, CNT, MS, w, s, pc, t, phase, copies):
    """One issue (a scheduler's pick, or the second instruction of a dual issue): compiled into its caller."""
    CNT[PC_EXEC, pc] += 1
    u = P[pc, P_UNIT]
    W[w, W_LAST_ISSUE] = t
    if copies:
        S[s, S_SIZE + SW.shape[1] + S[s, S_LASTK]] = t  # (the issuing warp is S_LAST)
    delay = 0
    done_at = t
    arrives = True
    if G[G_HAZARDS]:
        if _check_hazards(G, W, REGS, P, L, HLOG, w, pc, t, u) and G[G_HAZARDS] == 2:
            return ERR_HAZARD
    if u <= ALU_HALF:
        if P[pc, P_NREADS]:
            delay = _collect(G, W, S, RC, BANKS, P, L, RD, CNT, w, s, pc, t)
        pipe = P[pc, P_PIPE]
        S[s, S_PIPE0 + pipe if pipe < 2 else (S_PIPE2 if pipe == 2 else S_PIPE3)] = t + P[pc, P_INTERVAL]
        done_at = t + delay + P[pc, P_LATENCY]
        if delay:
            S[s, S_BUSY] = t + 1 + delay
    elif u >= LDS and u <= STG:
        need, done_at = _memory(G, F, W, REGS, Q, S, BANKS, P, L, TAUX, SEC, L1, REQ, CNT, w, s, pc, t, u)
        if need:
            # a read served here by the compiled memory system, as Python would serve
            # it: only with no posted store waiting to go first and room in its tables
            served = False
            if G[G_MEMC] and G[G_REQ_KIND] != REQ_STG and G[G_WQ_N] and not MS[1][I_ROOM]:
                # the posted stores queued before it go first, here as Python would post them
                # (what the compiled memory system cannot take stays queued, for Python)
                _post_queued_through(G, REQ, MS)
            if G[G_MEMC] and G[G_REQ_KIND] != REQ_STG and G[G_WQ_N] == 0 and not MS[1][I_ROOM] \
                    and G[G_REQ_N] <= G[G_SAFE_N]:
                h0, m0 = MS[1][I_READ_HITS], MS[1][I_READ_MISSES]
                r = _read_request(float(G[G_REQ_NOW]), REQ[:G[G_REQ_N]], G[G_SM_ID], MS[0], MS[1], MS[2], MS[3],
                                  MS[4], MS[5], MS[6], MS[7], MS[8], MS[9], MS[10], MS[11])
                CNT[PC_L2_HITS, pc] += MS[1][I_READ_HITS] - h0
                CNT[PC_L2_MISSES, pc] += MS[1][I_READ_MISSES] - m0
                if r == r:  # NaN: a negative address, left to Python to report
                    G[G_MEM_RESULT] = int(np.ceil(r))
                    done_at = _memory_done(G, W, Q, L1, REQ, w)
                    served = True
            if not served:
                G[G_PHASE] = phase
                G[G_CTX_SLOT] = w
                G[G_CTX_PC] = pc
                return MEM
    elif u == S2R:
        done_at = t + P[pc, P_LATENCY]  # S2R, LDC: a fixed latency of their own
        distinct = TAUX[W[w, W_TBASE] + W[w, W_POS]]  # an indexed LDC's distinct addresses (-1: none)
        if distinct > 1:
            done_at += (distinct - 1) * P[pc, P_INTERVAL]
    elif u == BRANCH:
        S[s, S_RC_WARP] = -1  # a branch empties the reuse caches
        if P[pc, P_BACK]:
            k = G[G_NBLOG]
            BLOG[k, 0] = W[w, W_WID]
            BLOG[k, 1] = t
            G[G_NBLOG] = k + 1
    elif u == BAR:
        arrives = TAUX[W[w, W_TBASE] + W[w, W_POS]] != 0  # -1: no record, every warp arrives
    return _issue_tail(G, W, REGS, S, SW, RC, C, P, L, TPC, TAUX, ILOG, w, s, pc, t, u, delay, done_at,
                       arrives, copies)


@njit(cache=True, inline="always")
def _dual(G, F, W, REGS, Q, S, SW, RC, BANKS, C, P, L, RD, TPC, TAUX, SEC, L1, ILOG, BLOG, HLOG,
          REQ, CNT, MS, w, s, pc, t, copies):
    """Dual issue: a stall-0 instruction and the next one of the same warp, a pair the rules allow."""
    if P[pc, P_STALL] == 0 and G[G_DUAL_ON] and not W[w, W_DONE] and not W[w, W_AT_BAR]:
        nxt = W[w, W_PC]
        first = P[pc, P_DUAL]
        second = P[nxt, P_DUAL]
        if first & DUAL_FIRST and second & DUAL_SECOND and not (first & second & DUAL_CONST) \
                and S[s, S_BUSY] <= t + 1:
            waits = P[nxt, P_WAITS]
            clear = True
            for b in range(1, 7):
                if waits >> b & 1 and W[w, W_BAR_CLEAR + b] > t:
                    clear = False
                    break
            if clear and _unit_ok(G, W, Q, S, P, w, nxt, t, s):
                G[G_DUAL] += 1
                CNT[PC_DUAL, nxt] += 1
                return _issue_here(G, F, W, REGS, Q, S, SW, RC, BANKS, C, P, L, RD, TPC, TAUX, SEC, L1,
                              ILOG, BLOG, HLOG, REQ, CNT, MS, w, s, nxt, t, 2, copies)
    return OK


@njit(cache=True, inline="always")
def _schedule(G, F, W, REGS, Q, S, SW, RC, BANKS, C, P, L, RD, TPC, TAUX, SEC, L1, ILOG, SLOG, BLOG,
              HLOG, REQ, CNT, MS, s, t, copies):
    """One scheduler's turn in cycle t: greedy-then-oldest selection (oldest: least recently
    issued, or by age, sm.oldest_warp), stall accounting, issue."""
    if copies and S[s, S_WAKE] > t:
        return _NONE  # (no warp ready: the scan below would find none)
    w = S[s, S_LAST]
    nw = S[s, S_NW]
    if w >= 0 and not W[w, W_DONE] and not W[w, W_AT_BAR] and W[w, W_READY] <= t \
            and not W[w, W_YIELDED] and _unit_ok(G, W, Q, S, P, w, W[w, W_PC], t, s):
        pick = w
    else:
        pick = -1
        pk = -1
        best = NEVER
        age = G[G_OLDEST_AGE] != 0
        if copies:
            # (on the row's copies: the warps ready by t, in launch order, up to 64 at a time:
            # first a mask of them, made without a branch per warp, then those only; the same order
            # and tests as the loop below; S_WAKE made anew)
            wake = NEVER
            li = S_SIZE + SW.shape[1]
            base = 0
            while base < nw:
                end = base + 64 if base + 64 < nw else nw
                ready = np.int64(0)
                for k in range(base, end):
                    r = S[s, S_RDY + k]
                    wake = r if r < wake else wake
                    ready |= np.int64(r <= t) << (k - base)
                while ready != 0 and not (age and pick >= 0):
                    k = base + _trailing_zeros(ready)
                    ready &= ready - 1
                    x = SW[s, k]
                    if S[s, li + k] < best:
                        if x == w and W[x, W_YIELDED] and nw > 1:
                            continue
                        if _unit_ok(G, W, Q, S, P, x, W[x, W_PC], t, s):
                            pick = x
                            pk = k
                            best = S[s, li + k]
                            if age:
                                break
                base = end
            S[s, S_WAKE] = wake
        else:
            for k in range(nw):
                x = SW[s, k]
                if W[x, W_READY] <= t and not W[x, W_AT_BAR] and W[x, W_LAST_ISSUE] < best:
                    if x == w and W[x, W_YIELDED] and nw > 1:
                        continue
                    if _unit_ok(G, W, Q, S, P, x, W[x, W_PC], t, s):
                        pick = x
                        best = W[x, W_LAST_ISSUE]
                        if age:
                            break
        if pick < 0:
            if w >= 0 and W[w, W_YIELDED] and W[w, W_READY] <= t and not W[w, W_AT_BAR] \
                    and _unit_ok(G, W, Q, S, P, w, W[w, W_PC], t, s):
                pick = w
            else:
                return _NONE
    w = pick
    if S[s, S_LAST] != w:  # (picked by the scan, at pk)
        S[s, S_LAST] = w
        if copies:
            S[s, S_LASTK] = pk
        if G[G_SWITCH_CLEARS]:
            S[s, S_RC_WARP] = -1
    # stall accounting for the cycles since this warp last issued (charged to the warp and to the
    # instruction it waited to issue)
    pc = W[w, W_PC]
    gap_start = W[w, W_LAST_ISSUE] + 1
    if t > gap_start:
        a = W[w, W_STALL_UNTIL]
        if a > t:
            a = t
        b = W[w, W_DEP_UNTIL]
        if b < a:
            b = a
        if b > t:
            b = t
        dep_reason = 2 if W[w, W_BAR_WAIT] else 1
        blocked = W[w, W_BLOCKED]
        end_reason = blocked if blocked == 3 or blocked == 4 else 5
        if a > gap_start:
            W[w, W_STALLS] += a - gap_start
            CNT[PC_STALLS, pc] += a - gap_start
        if b > a:
            W[w, W_STALLS + dep_reason] += b - a
            CNT[PC_STALLS + dep_reason, pc] += b - a
        if t > b:
            W[w, W_STALLS + end_reason] += t - b
            CNT[PC_STALLS + end_reason, pc] += t - b
        if G[G_LOG]:
            k = G[G_NSLOG]
            SLOG[k, 0] = W[w, W_WID]
            SLOG[k, 1] = gap_start
            SLOG[k, 2] = a
            SLOG[k, 3] = b
            SLOG[k, 4] = t
            SLOG[k, 5] = dep_reason
            SLOG[k, 6] = end_reason
            G[G_NSLOG] = k + 1
    W[w, W_BLOCKED] = 0
    W[w, W_BAR_WAIT] = 0
    st = _issue_here(G, F, W, REGS, Q, S, SW, RC, BANKS, C, P, L, RD, TPC, TAUX, SEC, L1, ILOG, BLOG, HLOG,
                     REQ, CNT, MS, w, s, pc, t, 1, copies)
    if st != OK:
        return st
    return _dual(G, F, W, REGS, Q, S, SW, RC, BANKS, C, P, L, RD, TPC, TAUX, SEC, L1, ILOG, BLOG, HLOG,
                 REQ, CNT, MS, w, s, pc, t, copies)


@njit(cache=True, inline="always")
def _next_time(G, W, S, SW, copies):
    nxt = NEVER
    for s in range(G[G_NSCHED]):
        busy = S[s, S_BUSY]
        for k in range(S[s, S_NW]):
            if copies:
                r = S[s, S_RDY + k]  # (NEVER at a barrier: no bound)
                if r < busy:
                    r = busy
                if r < nxt:
                    nxt = r
            else:
                x = SW[s, k]
                if not W[x, W_AT_BAR]:
                    r = W[x, W_READY]
                    if r < busy:
                        r = busy
                    if r < nxt:
                        nxt = r
    return nxt


@njit(cache=True, forceinline=True)
def _unit_free(G, W, Q, S, P, w, pc, t, s):
    """A cycle after ``t`` before which warp ``w``'s unit cannot take ``pc`` (as :func:`_unit_ok`
    tests it at cycle ``t``, no other warp issuing meanwhile): when its pipe, the memory issue
    interval and a place in its full memory queue are free; ``t + 1`` for a unit always free."""
    u = P[pc, P_UNIT]
    if u <= ALU_HALF:
        pipe = P[pc, P_PIPE]
        f = S[s, S_PIPE0 + pipe if pipe < 2 else (S_PIPE2 if pipe == 2 else S_PIPE3)]
        return f if f > t else t + 1
    if u >= LDS and u <= STG:
        f = S[s, S_MEM_FREE]
        if f <= t:
            f = t + 1
        if u == LDS or u == STS:
            base, nf, qf, depth = 0, W_NQ0, W_QFULL0, G[G_SHARED_DEPTH]
        else:
            base, nf, qf, depth = G[G_SHARED_DEPTH], W_NQ1, W_QFULL1, G[G_GLOBAL_DEPTH]
        n = W[w, nf]
        if n >= depth:  # (fewer requests than the depth: a place, whatever has completed)
            first = W[w, qf]  # (the queue is full until then, as _unit_ok found it)
            if first <= t:
                live = 0
                first = NEVER
                for k in range(n):
                    c = Q[w, base + k]
                    if c > t:
                        live += 1
                        if c < first:
                            first = c
                if live < depth:
                    first = 0
            if first > f:
                f = first  # (the queue has a place once its earliest request completes)
        return f
    return t + 1


@njit(cache=True, forceinline=True)
def _next_unblocked(G, W, Q, S, SW, P, t, copies):
    """After a cycle ``t`` in which no warp issued though some were ready by then (their units
    were not, :func:`_unit_ok`): the first cycle at which any warp may issue, as far as the SM alone
    decides (a warp ready, its scheduler and unit free; nothing changes before a warp issues)."""
    nxt = NEVER
    for s in range(G[G_NSCHED]):
        busy = S[s, S_BUSY]
        for k in range(S[s, S_NW]):
            x = SW[s, k]
            # (with the copies, their ready cycles: NEVER at a barrier)
            if (S[s, S_RDY + k] < NEVER) if copies else not W[x, W_AT_BAR]:
                r = S[s, S_RDY + k] if copies else W[x, W_READY]
                if r < busy:
                    r = busy
                if r <= t:
                    r = _unit_free(G, W, Q, S, P, x, W[x, W_PC], t, s)
                if r < nxt:
                    if r <= t + 1:
                        return t + 1  # (the next cycle: none can come sooner)
                    nxt = r
    return nxt


@njit(cache=True, inline="always")
def _pass_to(G, nxt, t):
    """The cycle a run passing over cycles from ``t`` goes on at, heading for ``nxt``: no further
    than the quantum's end and the cycle limit (where the cycle-by-cycle run stops too), and at
    least ``t + 1``."""
    cap = G[G_NEXT_YIELD]
    if G[G_LIMIT] >= 0 and G[G_LIMIT] + 1 < cap:
        cap = G[G_LIMIT] + 1
    if nxt > cap:
        nxt = cap
    return nxt if nxt > t + 1 else t + 1


@njit(cache=True, forceinline=True)
def _idle_until(G, W, Q, S, SW, P, t, copies):
    """Cycle ``t`` follows one in which a warp issued: ``t`` if a warp may issue in it (or nothing
    below applies); otherwise the cycle at which :func:`run`, having visited ``t`` without an issue,
    would go on, with what that visit leaves - every warp its schedulers tested found its unit
    busy (``W_BLOCKED``, the reason its stall is charged to) - so the visit is passed over. ``t``
    is before the quantum's end and the cycle limit."""
    nxt = NEVER
    ready = False
    for s in range(G[G_NSCHED]):
        busy = S[s, S_BUSY]
        for k in range(S[s, S_NW]):
            x = SW[s, k]
            if (S[s, S_RDY + k] < NEVER) if copies else not W[x, W_AT_BAR]:
                r = S[s, S_RDY + k] if copies else W[x, W_READY]
                if r < busy:
                    r = busy
                if r <= t:
                    # (its scheduler would test it in t: it issues unless its unit is busy then)
                    if _unit_free(G, W, Q, S, P, x, W[x, W_PC], t - 1, s) <= t:
                        return t
                    ready = True
                    r = _unit_free(G, W, Q, S, P, x, W[x, W_PC], t, s)
                if r < nxt:
                    nxt = r
    if nxt >= NEVER:
        return t  # (no warp left, or none can ever issue: the visit says which)
    if ready:
        # the visit's tests, and the pass to the first cycle a unit frees (as far as the quantum's
        # end and the cycle limit)
        for s in range(G[G_NSCHED]):
            busy = S[s, S_BUSY]
            for k in range(S[s, S_NW]):
                x = SW[s, k]
                if ((S[s, S_RDY + k] <= t) if copies else (not W[x, W_AT_BAR] and W[x, W_READY] <= t)) \
                        and busy <= t:
                    W[x, W_BLOCKED] = 4 if P[W[x, W_PC], P_UNIT] <= ALU_HALF else 3
        nxt = _pass_to(G, nxt, t)
    return nxt


@njit(cache=True, inline="always")
def run(G, F, W, REGS, Q, S, SW, RC, BANKS, C, P, L, RD, TPC, TAUX, SEC, L1, ILOG, SLOG, BLOG, HLOG,
        REQ, CNT, MS, copies):
    """Advance the SM from G[G_T] until Python is needed; returns a status (module docstring).
    ``copies``: the scheduler rows keep and scan the copies of the warps' cycles (:func:`drive_copies`)."""
    G, F, W, REGS, Q, S, SW = _borrow(G), _borrow(F), _borrow(W), _borrow(REGS), _borrow(Q), _borrow(S), \
        _borrow(SW)
    RC, BANKS, C, P, L, RD = _borrow(RC), _borrow(BANKS), _borrow(C), _borrow(P), _borrow(L), _borrow(RD)
    TPC, TAUX, SEC, L1 = _borrow(TPC), _borrow(TAUX), _borrow(SEC), _borrow(L1)
    ILOG, SLOG, BLOG, HLOG = _borrow(ILOG), _borrow(SLOG), _borrow(BLOG), _borrow(HLOG)
    REQ, CNT = _borrow(REQ), _borrow(CNT)
    MS = (_borrow(MS[0]), _borrow(MS[1]), _borrow(MS[2]), _borrow(MS[3]), _borrow(MS[4]), _borrow(MS[5]),
           _borrow(MS[6]), _borrow(MS[7]), _borrow(MS[8]), _borrow(MS[9]), _borrow(MS[10]), _borrow(MS[11]))
    nsched = G[G_NSCHED]
    t = G[G_T]
    phase = G[G_PHASE]
    if phase:
        # resume inside an issue that waited for the memory system
        G[G_PHASE] = 0
        s = G[G_SI]
        w = G[G_CTX_SLOT]
        pc = G[G_CTX_PC]
        done = _memory_done(G, W, Q, L1, REQ, w)
        st = _issue_tail(G, W, REGS, S, SW, RC, C, P, L, TPC, TAUX, ILOG, w, s, pc, t, P[pc, P_UNIT], 0,
                         done, True, copies)
        if st == OK and phase == 1:
            st = _dual(G, F, W, REGS, Q, S, SW, RC, BANKS, C, P, L, RD, TPC, TAUX, SEC, L1, ILOG, BLOG,
                       HLOG, REQ, CNT, MS, w, s, pc, t, copies)
        if st == EXITED:
            G[G_SI] = s + 1
            return st
        if st != OK:
            return st
        G[G_SI] = s + 1
        if MS[1][I_ROOM]:  # (never set in the stand-ins: G_MEMC = 0)
            return ROOM
    ilog_cap = ILOG.shape[0] - 2 * nsched
    slog_cap = SLOG.shape[0] - nsched
    blog_cap = BLOG.shape[0] - 2 * nsched
    hlog_cap = HLOG.shape[0] - 6 * nsched
    while True:
        s = G[G_SI]
        if s == 0:
            # a new cycle
            alive = False
            for q in range(nsched):
                if S[q, S_NW]:
                    alive = True
                    break
            if not alive:
                return DONE
            if G[G_NBLOG] > blog_cap or G[G_NHLOG] > hlog_cap or \
                    (G[G_LOG] and (G[G_NILOG] > ilog_cap or G[G_NSLOG] > slog_cap)):
                return DRAIN
            G[G_ISSUED] = 0
        while s < nsched:
            if S[s, S_BUSY] <= t and S[s, S_NW]:
                st = _schedule(G, F, W, REGS, Q, S, SW, RC, BANKS, C, P, L, RD, TPC, TAUX, SEC, L1, ILOG,
                               SLOG, BLOG, HLOG, REQ, CNT, MS, s, t, copies)
                if st != _NONE:
                    G[G_ISSUED] = 1
                    if st != OK:
                        G[G_SI] = s + 1 if st == EXITED else s
                        return st
                    if MS[1][I_ROOM]:  # (never set in the stand-ins: G_MEMC = 0)
                        # a read served here left the memory system's tables too full: Python
                        # grows them before the next request
                        G[G_SI] = s + 1
                        return ROOM
            s += 1
        G[G_SI] = 0
        if G[G_ISSUED]:
            t += 1
            # (a cycle in which no warp can issue is passed over here as below, with the tests its
            # visit would make; not at the quantum's end, the cycle limit or logs to drain, where
            # the visit returns; looked for only while such cycles come, G_IDLE, so that a run whose
            # warps mostly issue does not pay for the test)
            if G[G_IDLE] and t < G[G_NEXT_YIELD] and (G[G_LIMIT] < 0 or t <= G[G_LIMIT]) and not (
                    G[G_NBLOG] > blog_cap or G[G_NHLOG] > hlog_cap or
                    (G[G_LOG] and (G[G_NILOG] > ilog_cap or G[G_NSLOG] > slog_cap))):
                nxt = _idle_until(G, W, Q, S, SW, P, t, copies)
                if nxt == t:
                    G[G_IDLE] = 0
                t = nxt
        else:
            nxt = _next_time(G, W, S, SW, copies)
            if nxt >= NEVER:
                return ERR_DEADLOCK
            if nxt > t + 1:
                t = nxt
            elif nxt == t + 1:
                t += 1  # (a warp becomes ready then)
            else:
                # a warp was ready but its unit was busy: the cycles before any unit frees would
                # only repeat this one (no issue, the same stall reasons), so they are passed over,
                # as far as the quantum's end (and the cycle limit) where the cycle-by-cycle run
                # stops too
                nxt = _next_unblocked(G, W, Q, S, SW, P, t, copies)
                G[G_IDLE] = 1
                t = _pass_to(G, nxt, t)
        G[G_T] = t
        if G[G_LIMIT] >= 0 and t > G[G_LIMIT]:
            return ERR_LIMIT
        if t >= G[G_NEXT_YIELD]:
            return YIELD


# ---- the SMs of a GPU run together (drive) ----
# statuses drive() returns besides run()'s
START, STOPPED, FINISHED = 12, 13, 14
# E: the driver's scalars - the clock of the last event taken (simpy's env.now), the next sequence
# number, the SM running (-1: none, take the next event), the quantum, whether to return after
# every call of run (one SM under simpy), the cycle at which to stop (-1: none), the SM a returned
# status concerns
E_NOW, E_SEQ, E_CUR, E_QUANTUM, E_SOLO, E_STOP, E_SM, E_SIZE = range(8)
# H: per SM, its next event: cycle, sequence number, state
H_TIME, H_SEQ, H_STATE, H_SIZE = range(4)
H_NONE, H_WAITING, H_UNSTARTED = range(3)  # H_NONE: running now, or finished


@njit(cache=True)
def _post_queued(G, REQ, MS):
    """Hand the SM's queued posted stores to the compiled memory system, in order, as Python's
    ``write_queue`` would after the quantum: what it cannot take here (a store longer than the
    tables' headroom, one with a negative address, those after a store that left the tables too
    full) stays queued, moved to the queue's front, for Python."""
    base = G[G_WQ_BASE]
    n = G[G_WQ_N]
    # (from word np.int64(0), not the literal 0: the signature Python's write_queue compiles too)
    j = write_requests(REQ[base:base + n], np.int64(0), G[G_SAFE_N], MS[0], MS[1], MS[2], MS[3], MS[4], MS[5], MS[6],
                       MS[7], MS[8], MS[9], MS[10])
    if j < 0:
        j = -1 - j  # (that store changed nothing: Python reports it)
    for k in range(n - j):
        REQ[base + k] = REQ[base + j + k]
    G[G_WQ_N] = n - j


# ---- the next CTA started by the core itself (drive) ----
# X: per SM (an (SMs, rows, X_COLS) array the lineup holds, the SM's a plane of it). Rows 0 .. slots -
# 1, per warp slot: whether its exit was taken in, and the place its trace holds in TPC/TAUX and SEC
# (start, room; room -1: the slot holds none); row ``slots`` (XA) and ``slots + 1`` (XB): the SM's
# scalars; then XL_ROWS rows logging the CTAs the core started and XE_ROWS rows the warps whose exits
# it took in (for Python to make its records of them in bulk: SM._sync)
X_TAKEN, X_TB, X_TN, X_SB, X_SN, X_COLS = 0, 1, 2, 3, 4, 8
# XA: whether the core starts the SM's next CTA itself, the SM's CTA slots, the number of its next
# warp, the cycles from a CTA's end to the next one's launch, warps per CTA slot, used lengths of
# TPC/TAUX and SEC; XB: CTAs and exits logged
XA_FAST, XA_CTAS, XA_WID, XA_LAUNCH, XA_WPC, XA_TFILL, XA_SFILL = range(7)
XB_NCTA, XB_NEXIT = range(2)
XL_ROWS, XE_ROWS = 32, 512
# a CTA's log row: its CTA slot, its start, the cycle the CTA before it in the slot ended, its number
# in the ready queue, its warps, the warps resident after its start, the exits logged up to its start,
# its first warp's number
XL_C, XL_START, XL_END, XL_SEQ, XL_NW, XL_RESIDENT, XL_EXITS, XL_WID = range(8)
# RQ: the block dispatcher's ready queue (int64): its pace (next free cycle, interval), the next CTA
# to take, the CTAs queued, the number of the first; from RQ_HEAD0 a header per CTA (its warps,
# where its warps' rows are, its largest request); a warp's row: where its pcs, sector-list
# positions, sector lists and summaries are in RQ, and their counts
RQ_NEXT, RQ_INTERVAL, RQ_TAKEN, RQ_COUNT, RQ_SEQ, RQ_HEAD0 = 0, 1, 2, 3, 4, 8
RQ_HW = 4
RW_PCS, RW_N, RW_OFFS, RW_NO, RW_SEC, RW_NS, RW_AUX = range(7)
RW_SIZE = 8


@njit(cache=True, forceinline=True)
def start_warp(W, REGS, S, SW, slot, c, t0, tb, n, wid, first_pc, nsched):
    """Warp ``wid``'s row as it starts in ``slot`` of CTA slot ``c``, ready at ``t0`` (barriers never
    set, its trace of ``n`` positions at ``tb``), queued on scheduler ``slot mod nsched``, its register
    times zeroed."""
    s = slot % nsched
    SW[s, S[s, S_NW]] = slot
    S[s, S_NW] += 1
    for f in range(W.shape[1]):
        W[slot, f] = 0
    W[slot, W_CTA] = c
    W[slot, W_READY] = t0
    W[slot, W_STALL_UNTIL] = t0
    W[slot, W_DEP_UNTIL] = t0
    W[slot, W_LAST_ISSUE] = t0 - 1
    for b in range(7):
        W[slot, W_BAR_SET + b] = -NEVER
    W[slot, W_TBASE] = tb
    W[slot, W_WID] = wid
    W[slot, W_PC] = first_pc
    W[slot, W_LEN] = n
    for k in range(REGS.shape[1]):
        for r in range(REGS.shape[2]):
            REGS[slot, k, r] = 0


@njit(cache=True, forceinline=True)
def take_exits(W, X, out, at, sums):
    """The slots whose warps exited and were not taken in yet (X_TAKEN, then set), in the order they
    exited, written to ``out[at:]`` as rows (slot, its stall counts) and their counts added to
    ``sums`` when given (size > 0); returns the row after the last."""
    n = at
    for slot in range(W.shape[0]):
        if W[slot, W_DONE] and not X[slot, X_TAKEN]:
            # in exit order (insertion: a CTA's few warps)
            j = n
            while j > at and W[out[j - 1, 0], W_EXIT_SEQ] > W[slot, W_EXIT_SEQ]:
                for f in range(out.shape[1]):
                    out[j, f] = out[j - 1, f]
                j -= 1
            out[j, 0] = slot
            for r in range(6):
                out[j, 1 + r] = W[slot, W_STALLS + r]
            X[slot, X_TAKEN] = 1
            n += 1
    if sums.size:
        for i in range(at, n):
            for r in range(6):
                sums[r] += out[i, 1 + r]
    return n


@njit(cache=True)
def _next_cta(G, W, REGS, S, SW, C, TPC, TAUX, SEC, X, RQ):
    """The CTA whose last warp exited (``G_EXIT_SLOT``) is followed in its CTA slot by the next CTA
    of the ready queue ``RQ``, as Python's SM would (its exits taken in, the dispatcher's pace, the
    warps' traces placed, their rows), logged in ``X`` for Python: when the SM lets the core do it
    (XA_FAST), a CTA is queued, the CTA slot is the SM's only free one, the request buffer holds the
    CTA's longest request and the traces fit (in each slot's own place, else at the buffers' ends)
    and the logs have room. Returns whether it did."""
    slots = W.shape[0]
    xa = slots
    xb = slots + 1
    if X[xa, XA_FAST] == 0:
        return False
    k = RQ[RQ_TAKEN]
    if k >= RQ[RQ_COUNT]:
        return False
    c = W[G[G_EXIT_SLOT], W_CTA]
    for j in range(X[xa, XA_CTAS]):
        if j != c and C[j, C_LIVE] == 0:
            return False  # (another CTA slot is free: Python's, which takes the lowest)
    h = RQ_HEAD0 + RQ_HW * k
    nw = RQ[h]
    rows = RQ[h + 1]
    if RQ[h + 2] > G[G_WQ_BASE] or X[xb, XB_NCTA] >= XL_ROWS or X[xb, XB_NEXIT] + slots > XE_ROWS:
        return False
    slot0 = c * X[xa, XA_WPC]
    tfill = X[xa, XA_TFILL]
    sfill = X[xa, XA_SFILL]
    for w in range(nw):
        r = rows + RW_SIZE * w
        slot = slot0 + w
        if not (X[slot, X_TN] >= RQ[r + RW_N] and X[slot, X_SN] >= RQ[r + RW_NS]):
            tfill += RQ[r + RW_N]
            sfill += RQ[r + RW_NS]
    if tfill > TPC.size or sfill > SEC.size:
        return False
    t = G[G_T]
    e0 = slots + 2 + XL_ROWS
    ne = take_exits(W, X, X[e0:e0 + XE_ROWS], X[xb, XB_NEXIT], X[xb, XB_NEXIT:XB_NEXIT])
    X[xb, XB_NEXIT] = ne
    start = t + X[xa, XA_LAUNCH]
    if RQ[RQ_NEXT] > start:
        start = RQ[RQ_NEXT]
    RQ[RQ_NEXT] = start + RQ[RQ_INTERVAL]
    RQ[RQ_TAKEN] = k + 1
    nsched = G[G_NSCHED]
    wid0 = X[xa, XA_WID]
    tfill = X[xa, XA_TFILL]
    sfill = X[xa, XA_SFILL]
    for w in range(nw):
        r = rows + RW_SIZE * w
        slot = slot0 + w
        n = RQ[r + RW_N]
        ns = RQ[r + RW_NS]
        if X[slot, X_TN] >= n and X[slot, X_SN] >= ns:
            tb = X[slot, X_TB]
            sb = X[slot, X_SB]
        else:
            tb = tfill
            sb = sfill
            tfill += n
            sfill += ns
        p = RQ[r + RW_PCS]
        a = RQ[r + RW_AUX]
        for i in range(n):
            TPC[tb + i] = RQ[p + i]
            TAUX[tb + i] = RQ[a + i]
        o = RQ[r + RW_OFFS]
        for j in range(RQ[r + RW_NO]):
            TAUX[tb + RQ[o + j]] += sb
        q = RQ[r + RW_SEC]
        for i in range(ns):
            SEC[sb + i] = RQ[q + i]
        start_warp(W, REGS, S, SW, slot, c, start, tb, n, wid0 + w, RQ[p] if n else 0, nsched)
        X[slot, X_TAKEN] = 0
        X[slot, X_TB] = tb
        X[slot, X_TN] = n
        X[slot, X_SB] = sb
        X[slot, X_SN] = ns
    X[xa, XA_TFILL] = tfill
    X[xa, XA_SFILL] = sfill
    X[xa, XA_WID] = wid0 + nw
    C[c, C_LIVE] = nw
    C[c, C_NARRIVED] = 0
    total = 0
    for s in range(S.shape[0]):
        total += S[s, S_NW]
    m = slots + 2 + X[xb, XB_NCTA]
    X[m, XL_C] = c
    X[m, XL_START] = start
    X[m, XL_END] = t
    X[m, XL_SEQ] = RQ[RQ_SEQ] + k
    X[m, XL_NW] = nw
    X[m, XL_RESIDENT] = total
    X[m, XL_EXITS] = ne
    X[m, XL_WID] = wid0
    X[xb, XB_NCTA] += 1
    return True


# (a CTA's start by the core is rare too, and long: called through a pointer, bound with the others)
NEXT_CTA = (_next_cta, types.boolean(_I1, _I2, _a(types.int64, 3), _I2, _I2, _I2, _a(types.int32, 1),
                                     _a(types.int32, 1), _I1, _I2, _I1))
RARE_STEPS += (NEXT_CTA,)
RARE_CALLEES += (Callee("next_cta"),)
_call_next_cta = pointer_call(RARE_CALLEES[-1], NEXT_CTA[1])


def drive_types():
    """The argument types of :func:`drive` as every timed run calls it (the arrays
    ``maxsim.timing.sm.SM`` and ``maxsim.timing.memory_core.CompiledMemorySystem`` build, all
    C-contiguous): its signature compiled ahead without running anything
    (tests/test_compile_ahead.py checks it is the one a timed run uses)."""
    def a(dtype, ndim):
        return types.Array(dtype, ndim, "C")
    i64, i32, f64 = types.int64, types.int32, types.float64
    # G F W REGS Q S SW RC BANKS C, P L RD TPC TAUX SEC L1, ILOG SLOG BLOG HLOG REQ CNT
    state = (a(i64, 1), a(f64, 1), a(i64, 2), a(i64, 3), a(i64, 2), a(i64, 2), a(i64, 2), a(i64, 3), a(i64, 3),
             a(i64, 2), a(i32, 2), a(i32, 1), a(i32, 2), a(i32, 1), a(i32, 1), a(i64, 1), a(i64, 3),
             a(i64, 2), a(i64, 2), a(i64, 2), a(i64, 2), a(i64, 1), a(i64, 2))
    # the memory system's P I F T LINES READY SF SI HK HV HP DELAYS
    ms = (a(i64, 1), a(i64, 1), a(f64, 1), a(i64, 2), a(i64, 3), a(f64, 3), a(f64, 2), a(i64, 2), a(i64, 2),
          a(f64, 2), a(i64, 2), a(f64, 1))
    return types.ListType(types.Tuple(state)), types.Tuple(ms), a(i64, 2), a(i64, 1), a(i64, 3), a(i64, 1)


@njit(cache=True, forceinline=True)
def _warm(G, W, S, SW, TPC, TAUX, copies):
    """As an SM's turn begins (the other SMs' turns since its last have pushed its rows out of the
    CPU's caches): ask for the first two lines of each of its warps' rows and for the trace lines
    each warp reads next, all at once, rather than one miss after another as the warps are scanned
    and issue. Hints only (:func:`maxsim.jit.prefetch`): nothing the model computes changes."""
    until = G[G_NEXT_YIELD]
    for s in range(S.shape[0]):
        if copies:  # (the scheduler row's copies, read at every turn)
            r = s * S.shape[1]
            for j in range(0, S_RDY + S[s, S_NW], 8):
                _prefetch(S, r + j)
            for j in range(S_SIZE + SW.shape[1], S_SIZE + SW.shape[1] + S[s, S_NW], 8):
                _prefetch(S, r + j)
        for k in range(S[s, S_NW]):
            if copies and S[s, S_RDY + k] >= until:
                continue  # (with the copies: a warp that cannot issue in this turn is not read)
            x = SW[s, k]
            _prefetch(W, x * W.shape[1])
            _prefetch(W, x * W.shape[1] + 8)
            i = W[x, W_TBASE] + W[x, W_POS]
            _prefetch(TPC, i)
            _prefetch(TAUX, i)
            _prefetch(TPC, i + 16)
            _prefetch(TAUX, i + 16)


@njit(cache=True)
def drive(SMS, MS, H, E, XS, RQ):
    """Run the SMs ``SMS`` sharing the memory system ``MS`` until Python is needed
    (:func:`_drive`), their schedulers scanning the warps' rows: for SMs whose schedulers hold few
    warps (fewer than ``COPIES_FROM``)."""
    return _drive(SMS, MS, H, E, XS, RQ, False)


@njit(cache=True)
def drive_copies(SMS, MS, H, E, XS, RQ):
    """As :func:`drive`, the scheduler rows keeping copies of their warps' ready and last-issue
    cycles side by side (``S_RDY``) and scanning those with a mask of the ready ones, and skipping
    their turns before the earliest (``S_WAKE``): for SMs whose schedulers hold ``COPIES_FROM``
    warps or more, where the scans over the warps' rows cost more than the copies' upkeep on every
    issue. A function of its own (numba compiles each with ``copies`` a constant): neither pays for
    the other's code. The same figures."""
    return _drive(SMS, MS, H, E, XS, RQ, True)


def drive_for(sms):
    """The function that drives the compiled SMs ``sms`` (objects with ``max_ctas``, ``wpc``
    and ``scheds``: :class:`maxsim.timing.sm.SM`): :func:`drive_copies` when any of their
    schedulers may hold ``COPIES_FROM`` warps or more (the kernel's resident CTAs' warps over the
    schedulers), else :func:`drive`."""
    most = max((-(-sm.max_ctas * sm.wpc // len(sm.scheds)) for sm in sms), default=0)
    return drive_copies if most >= COPIES_FROM else drive


@njit(cache=True, forceinline=True)
def _sync(G, W, S, SW):
    """An SM's scheduler rows' copies made from its warps' rows, as its turn comes in a call of
    drive_copies (Python may have changed the warps since the last)."""
    li = S_SIZE + SW.shape[1]
    for s in range(S.shape[0]):
        wake = NEVER
        for k in range(S[s, S_NW]):
            x = SW[s, k]
            if x == S[s, S_LAST]:
                S[s, S_LASTK] = k
            r = NEVER if W[x, W_AT_BAR] else W[x, W_READY]
            S[s, S_RDY + k] = r
            S[s, li + k] = W[x, W_LAST_ISSUE]
            if r < wake:
                wake = r
        S[s, S_WAKE] = wake
    G[G_SYNCED] = 1


@njit(cache=True, inline="always")
def _drive(SMS, MS, H, E, XS, RQ, copies):
    """Run the SMs ``SMS`` (a typed list of their state tuples, ``run``'s arguments but ``MS``)
    sharing one memory system (``MS``) in the order simpy runs their processes, until Python is
    needed; returns a status and leaves the SM it concerns in ``E[E_SM]``.

    simpy's order: an SM's process starts at cycle 0, the SMs in list order (``START``: Python
    runs the SM's start, then calls again); a process that yields cycle ``t`` later than the clock
    waits for an event at ``t``; events run in the order (cycle, sequence number of their
    scheduling); a yield at the current cycle goes on at once. Each SM runs ``run`` from its
    event until it yields (the quantum ended, ``YIELD``) and here it is put back in the queue:
    a quantum costs one compiled call instead of a return to Python, a simpy step and a call with
    ~35 arrays. Any other status returns (the SM goes on from where it stopped at the next call,
    unless Python ends it: ``E[E_CUR]`` = -1), and so does a yield that leaves Python work (posted
    stores to hand on, hazard records, a memory system's tables to grow), once it is queued; the
    back branch, issue and stall logs wait in their buffers (``run`` returns ``DRAIN`` before they
    overflow). A yield's posted stores go to the compiled memory system here when it is the SMs'
    (``_post_queued``). ``FINISHED``: no SM has an event left; ``STOPPED``: the next event is at or after
    ``E[E_STOP]``. With ``E[E_SOLO]``, every status returns (one SM driven by simpy).

    ``XS``: per SM its ``X`` (``X_*``); ``RQ``: the block dispatcher's ready queue (``RQ_*``). When
    a CTA ends on an SM whose ``X`` lets the core start its next CTA, that CTA is taken from ``RQ``
    here (:func:`_next_cta`, after the SM's posted stores are handed on) and the SM goes on, instead
    of returning ``EXITED`` for Python to do it; Python makes the records of such CTAs later, from
    the logs in ``X`` (``SM._sync``)."""
    for i in range(len(SMS)):
        G = SMS[i][0]
        G[G_COPIES] = 1 if copies else 0
        G[G_SYNCED] = 0
    cur = E[E_CUR]
    quantum = E[E_QUANTUM]
    while True:
        if cur < 0:
            best = -1
            for i in range(H.shape[0]):
                if H[i, H_STATE] != H_NONE:
                    if best < 0 or H[i, H_TIME] < H[best, H_TIME] or \
                            (H[i, H_TIME] == H[best, H_TIME] and H[i, H_SEQ] < H[best, H_SEQ]):
                        best = i
            if best < 0:
                return FINISHED
            if E[E_STOP] >= 0 and H[best, H_TIME] >= E[E_STOP]:
                return STOPPED
            cur = best
            E[E_CUR] = cur
            E[E_SM] = cur
            E[E_NOW] = H[cur, H_TIME]
            state = H[cur, H_STATE]
            H[cur, H_STATE] = H_NONE
            if state == H_UNSTARTED:
                return START
            G = SMS[cur][0]
            G[G_NEXT_YIELD] = G[G_T] + quantum
            a = SMS[cur]
            if copies and not G[G_SYNCED]:
                _sync(G, a[2], a[5], a[6])
            _warm(G, a[2], a[5], a[6], a[13], a[14], copies)
        a = SMS[cur]
        G = a[0]
        if copies and not G[G_SYNCED]:
            _sync(G, a[2], a[5], a[6])
        st = run(G, a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14],
                 a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22], MS, copies)
        if st == EXITED and not E[E_SOLO] and XS[cur, a[2].shape[0], XA_FAST]:
            # the CTA's slot takes the next CTA of the ready queue here when it can (Python's part:
            # the stores posted, then the CTA's end and the next one's start, SM._cta_ended), else
            # Python does
            if G[G_WQ_N] and G[G_MEMC] and not MS[1][I_ROOM]:
                _post_queued_through(G, a[21], MS)
            if not (G[G_WQ_N] or G[G_NHLOG] or MS[1][I_ROOM]) and \
                    _call_next_cta(G, a[2], a[3], a[5], a[6], a[9], a[13], a[14], a[15], XS[cur], RQ):
                if copies:
                    G[G_SYNCED] = 0  # (the new CTA's warps: the scheduler rows' copies made again)
                continue
            return st
        if E[E_SOLO] or st != YIELD:
            return st
        t = G[G_T]
        if t > E[E_NOW]:
            H[cur, H_TIME] = t
            H[cur, H_SEQ] = E[E_SEQ]
            H[cur, H_STATE] = H_WAITING
            E[E_SEQ] += 1
            cur = -1
            E[E_CUR] = -1
        else:
            G[G_NEXT_YIELD] = t + quantum
        if G[G_WQ_N] and G[G_MEMC] and not MS[1][I_ROOM]:
            _post_queued_through(G, a[21], MS)
        if G[G_WQ_N] or G[G_NHLOG] or MS[1][I_ROOM]:
            return YIELD
