"""One Maxwell SM in time: four warp schedulers issuing from the functional trace.

The functional model has already executed the kernel and recorded, per warp, the instructions it
executed and a summary of each memory access. The SM model decides *when* each of them issues:
greedy-then-oldest warp selection with the yield flag, dual issue, control-code stall counts and
dependency barriers, register banks with the operand collector's look-ahead and the late operand
reads of memory instructions, reuse caches, the ALU and half-rate pipes, the memory issue interval
and per-warp memory queues, the shared-memory bank pipeline, the texture path (throughput server
and L1/texture cache), CTA barriers and the stall reasons. :mod:`maxsim.timing.reference` states
the model in plain Python; read it for what each step does and why.

:class:`SM` runs that model in the compiled core (:mod:`maxsim.timing.core`): the per-cycle and
per-issue work happens in numba on numpy arrays, and the core comes back to Python only when a
request must go to the L2/DRAM memory system (a Python object shared by the SMs of a GPU, itself
compiled unless MAXSIM_CORE=python: :mod:`maxsim.timing.memory_core`),
when a warp exits (to launch the next CTA), when its logs need draining and at the end of each
simpy quantum. The numbers are identical to the reference core's (tests/test_core_parity.py).

``SM(..., core="python")`` or the environment variable ``MAXSIM_CORE=python`` selects the
reference core instead (for debugging the model; the variable selects the reference memory system
too); ``core="compiled"`` is the default.
"""

from __future__ import annotations

import itertools
import math
import time
import weakref

import numpy as np

from .. import jit  # (numba without scipy.linalg, before the core's first call)
from ..jit import njit
from ..errors import HazardError, SimulationError
from . import core as K
from .clock import PACKED, Solo
from .cores import CORES, core_name  # noqa: F401  (CORES: the choices)
from .memory_core import I_SIZE
from .owner import WeakOwner
from .reference import ReferenceSM, l2_read_counts, memory_keywords
from .shared_memory import SharedMemoryTiming
from .static import BAR, LDG, LDS, MEMORY, S2R, STG, STS, TEX, StaticInfo, cta_warp_slots, residency
from .stats import PC_EXEC, PC_L2_HITS, PC_L2_MISSES, PC_SIZE, STALL_REASONS, Stats, WarpStalls
from .summaries import SectorLists

__all__ = ["SM", "ReferenceSM", "residency", "StaticInfo", "core_name"]

LOG_ROWS = 4096  # rows of each log buffer the core fills between two returns to Python
# stand-ins for the compiled memory system's arrays when the core does not serve reads itself
# (the reference memory system, or one that takes keywords): the types core.run is compiled for
_NO_MEMORY_ARRAYS = (np.zeros(1, np.int64), np.zeros(I_SIZE, np.int64), np.zeros(1, np.float64),
                     np.zeros((1, 1), np.int64), np.zeros((1, 1, 1), np.int64), np.zeros((1, 1, 1), np.float64),
                     np.zeros((1, 1), np.float64), np.zeros((1, 1), np.int64), np.zeros((1, 1), np.int64),
                     np.zeros((1, 1), np.float64), np.zeros((1, 1), np.int64), np.zeros(1, np.float64))
STORE_QUEUE_WORDS = 4096  # room for the posted stores the core queues between two returns (each
# takes 2 + its sector count; a store that does not fit returns at once, so this only sets speed)
REGISTERS = 256  # register numbers an instruction can name (R0-R254, RZ is not tracked)


def serves_in_core(memory_system):
    """Whether the SM core can serve this memory system's reads itself (from its arrays, in the same
    order and with the same answers as calling its ``read``): the compiled one, ``read`` not
    replaced (a recording or instrumented memory system is called from Python instead)."""
    from .memory_core import CompiledMemorySystem
    return (isinstance(memory_system, CompiledMemorySystem)
            and type(memory_system).read is CompiledMemorySystem.read
            and "read" not in getattr(memory_system, "__dict__", {}))


class SchedulerView(WeakOwner):
    """A warp scheduler as reports see it: its index and its resident warps."""

    __slots__ = ("index", "_owner")

    def __init__(self, index, sm):
        self.index = index
        self._set_owner(sm)  # (weakly: maxsim.timing.owner)

    @property
    def _sm(self):
        return self._owner()

    @property
    def warps(self):
        sm = self._sm
        return [sm._slot_warp[x] for x in sm._SW[self.index, :sm._S[self.index, K.S_NW]].tolist()]


class PartPcs(list):
    """A CTA's warps as a staged block dispatcher hands them (``maxsim.gpu.gpu.CtaQueue``): per warp
    its view's ``parts`` (:meth:`WarpView.part_pcs`), the traces themselves let go of."""

    __slots__ = ()


class CtaView:
    __slots__ = ("cid", "index", "start", "wid0", "slot0")

    def __init__(self, cid, index, start, wid0=0, slot0=0):
        self.cid = cid
        self.index = index  # row of the core's CTA table
        self.start = start  # the cycle its warps were placed
        self.wid0 = wid0  # the number of its first warp (its warps' are consecutive)
        self.slot0 = slot0  # the slot of its first warp (its warps' are consecutive)


class WarpList:
    """An SM's warps in the order they started (``all_warps``: item ``wid`` is warp ``wid``'s
    :class:`WarpView`). The warps of a CTA that has ended are held as their CTA's view alone when
    no backward-branch times are kept (:meth:`ended`), and each one's view is made again when read,
    the same as it was (exited, no trace kept): a whole-GPU run ends hundreds of thousands of warps,
    and Python's cyclic collector would scan every view kept."""

    __slots__ = ("_items", "_scheds")

    def __init__(self, scheds):
        self._items = []  # a WarpView, or the CtaView of its ended CTA
        self._scheds = scheds

    def __len__(self):
        return len(self._items)

    def append(self, view):
        self._items.append(view)

    def __getitem__(self, wid):
        x = self._items[wid]
        if type(x) is WarpView:
            return x
        wid = range(len(self._items))[wid]  # (a negative index counts from the end)
        w = wid - x.wid0
        slot = x.slot0 + w
        scheds = self._scheds
        view = WarpView(wid, slot, scheds[slot % len(scheds)], x, f"cta{x.cid[0]},{x.cid[1]}.w{w}", (), False)
        view.parts = ()
        view.done = True
        return view

    def __iter__(self):
        return (self[wid] for wid in range(len(self._items)))

    def ended(self, cta, views):
        """The warps ``views`` (the views of CTA ``cta``'s warps, all exited with no trace kept,
        none keeping branch times: each one is made again the same when read) held as ``cta``."""
        items = self._items
        for v in views:
            items[v.wid] = cta


class WarpView:
    """A warp the SM ran: where it ran and its back-branch times (the loop progress measure).
    Of its trace it keeps the instruction indices of each part (``parts``, for messages; the
    records are in the SM's trace buffers once loaded), until it exits."""

    __slots__ = ("wid", "slot", "sched", "cta", "label", "parts", "branch_times", "done", "_flat", "base")

    def __init__(self, wid, slot, sched, cta, label, parts, branch_times=True):
        self.wid = wid
        self.slot = slot
        self.sched = sched
        self.cta = cta
        self.label = label
        self.parts = parts  # each part's instruction indices (see part_pcs; a list shared by the views of
        # a CTA's warps that ran the same code: it is replaced, not changed, when it changes)
        # cycles at which it issued a backward branch (``branch_times`` false: none are kept, and an
        # empty tuple, not a list per warp, leaves the collector fewer long-lived objects to scan)
        self.branch_times = [] if branch_times else ()
        self.done = False
        self._flat = None
        self.base = 0  # trace positions before ``parts`` (let go of in a launch run in windows)

    @staticmethod
    def part_pcs(parts):
        """A view's ``parts`` from a warp trace's: each part's instruction indices."""
        return [seg.pcs for seg, _ in parts]

    def flat_pcs(self):
        if self._flat is None:
            out = []
            for pcs in self.parts:
                out.extend(pcs)
            self._flat = out
        return self._flat


_RECORD_LISTS = {}  # id(segment) -> (the segment, weakly; positions, the arrays of _record_lists)
RECORD_LISTS = 16  # segments whose lists are kept (a simulator setting: the chunks of a segment's rows
# are built one after another, each reading every record)


def _plain_lists(recs):
    """Whether every record is a :class:`SectorLists` of int64 sectors and int32 ends over the same
    rows (the records the compiled gathering reads)."""
    return all(isinstance(rec, SectorLists) and rec.ends.dtype == np.int32 and rec.flat.dtype == np.int64
               and rec.ends.shape == recs[0].ends.shape for rec in recs)


def _record_lists(seg, sec_pos, recs):
    """The sector-list records of segment ``seg`` (at positions ``sec_pos``) as three arrays, made
    once for all chunks of its rows: every record's ``flat`` one after another (int64), where each
    record's starts in it (int64, one more than records), and the records' ``ends`` stacked (int32,
    records x rows); None when a record is not a :class:`SectorLists` of int64 sectors and int32
    ends over the same rows. (Plain arrays, not a numba typed list: a typed list's methods compile
    in every new process, ~0.7 s.)"""
    hit = _RECORD_LISTS.get(id(seg))
    if hit is not None and hit[0]() is seg and np.array_equal(hit[1], sec_pos):
        return hit[2]
    if not _plain_lists(recs):
        return None
    key = id(seg)

    def gone(_, key=key):  # the segment has died: let go of its records' arrays at once
        hit = _RECORD_LISTS.get(key)
        if hit is not None and hit[0]() is None:
            del _RECORD_LISTS[key]
    starts = np.zeros(len(recs) + 1, np.int64)
    np.cumsum([rec.flat.size for rec in recs], out=starts[1:])
    arrays = (np.concatenate([rec.flat for rec in recs]), starts, np.stack([rec.ends for rec in recs]))
    out = (weakref.ref(seg, gone), sec_pos, arrays)
    _RECORD_LISTS.pop(id(seg), None)
    while len(_RECORD_LISTS) >= RECORD_LISTS:
        del _RECORD_LISTS[next(iter(_RECORD_LISTS))]
    _RECORD_LISTS[id(seg)] = out
    return arrays


@njit(cache=True)
def _gather_plan(ends, lo, hi, npos, sec_pos, shared_pos, shared, bar_pos, bar):
    """Where the sector blocks of rows ``lo .. hi - 1`` of sector-list records go (record j, at
    position ``sec_pos[j]`` of a segment of ``npos`` positions, row r's list ending at
    ``ends[j, r]``), with the rows' memory summaries: per row and position (int32, -1 for none)
    the offset of a sector list's count in the row's block, the wavefronts ``shared`` of the
    shared-memory records at ``shared_pos`` and the numbers ``bar`` of the records at ``bar_pos``
    (per row, one column per record); the array of the blocks (each list: count, then its sectors;
    not yet filled: :func:`_gather_record`); where each row's block starts and its size; per row
    the largest count."""
    nrec = ends.shape[0]
    rows = hi - lo
    aux = np.full((rows, npos), -1, np.int32)
    for r in range(rows):
        for k in range(shared_pos.size):
            aux[r, shared_pos[k]] = shared[r, k]
        for k in range(bar_pos.size):
            aux[r, bar_pos[k]] = bar[r, k]
    per_row = np.zeros(rows, np.int64)
    most = np.zeros(rows, np.int64)
    for j in range(nrec):
        q = sec_pos[j]
        prev = np.int64(ends[j, lo - 1]) if lo else np.int64(0)
        for r in range(rows):
            x = np.int64(ends[j, lo + r])
            n = x - prev
            aux[r, q] = per_row[r]
            per_row[r] += n + 1
            if n > most[r]:
                most[r] = n
            prev = x
    starts = np.empty(rows, np.int64)
    total = 0
    for r in range(rows):
        starts[r] = total
        total += per_row[r]
    flat = np.empty(total, np.int64)
    return aux, flat, starts, per_row, most


@njit(cache=True, forceinline=True)
def _copy_lists(flat, src, base, ends, j, lo, hi, q, aux, starts):
    """Record j's lists of rows ``lo .. hi - 1`` (row r's: ``src[base + ends[j, r - 1]:base +
    ends[j, r]]``) into their places in the blocks ``flat`` (:func:`_gather_plan`), each after its
    count."""
    prev = np.int64(ends[j, lo - 1]) if lo else np.int64(0)
    for r in range(hi - lo):
        x = np.int64(ends[j, lo + r])
        at = starts[r] + aux[r, q]
        flat[at] = x - prev
        for i in range(x - prev):
            flat[at + 1 + i] = src[base + prev + i]
        prev = x


@njit(cache=True)
def _gather_record(flat, src, ends, j, lo, hi, q, aux, starts):
    """:func:`_copy_lists` of record j from its own array ``src`` (its ``flat``)."""
    _copy_lists(flat, src, 0, ends, j, lo, hi, q, aux, starts)


@njit(cache=True)
def _gather_lists(flats, first, ends, lo, hi, npos, sec_pos, shared_pos, shared, bar_pos, bar):
    """The sector blocks of rows ``lo .. hi - 1`` of sector-list records and the rows' memory
    summaries (:func:`_gather_plan`'s, the blocks filled), every record's lists one after another
    in ``flats`` (record j's in ``flats[first[j]:first[j + 1]]``)."""
    aux, flat, starts, per_row, most = _gather_plan(ends, lo, hi, npos, sec_pos, shared_pos, shared, bar_pos, bar)
    for j in range(ends.shape[0]):
        _copy_lists(flat, flats, first[j], ends, j, lo, hi, sec_pos[j], aux, starts)
    return aux, flat, starts, per_row, most


# records of a segment read one by one (not first copied into one array, _record_lists) when its
# rows are gathered at once and its records hold at least this many sectors on average (a
# simulator setting, a documented choice: the copy of a 32 KiB record and its page faults cost
# more than the call that reads it alone, ~1 us; short records are better copied together)
RECORD_SECTORS_ALONE = 1024


def segment_tables(seg, unit, lo=0, hi=None):
    """A trace segment's memory records as flattening reads them, for the warps (rows) ``lo .. hi - 1``
    that ran it (default: all), built at once: its pcs (int32); the positions of its sector-list
    records; per row its sector block (each list: count, then the sorted sector byte addresses) and
    the block's largest count; the memory summary of every position per row (int32: the wavefront
    count of a shared-memory record, the arrival (0/1) of a barrier record, the offset of a sector
    list in the row's block, -1 for none); the blocks' sizes. The blocks lie one after another in one
    array (int64), given with where each row's starts. Rows are numbered from ``lo``."""
    pcs = np.asarray(seg.pcs, dtype=np.int32)
    hi = len(seg.warps) if hi is None else hi
    rows = hi - lo
    pos = np.fromiter(seg.mem, dtype=np.int64, count=len(seg.mem))
    kinds = unit[pcs[pos]] if pos.size else pos
    shared_pos = pos[(kinds == LDS) | (kinds == STS)]
    # barrier arrivals, and the distinct addresses of a register-indexed LDC (the s2r class): one
    # number per warp each
    bar_pos = pos[(kinds == BAR) | (kinds == S2R)]
    sec_pos = pos[(kinds == TEX) | (kinds == LDG) | (kinds == STG)]
    shared = np.array([np.asarray(seg.mem[q], dtype=np.int64)[lo:hi] for q in shared_pos.tolist()],
                      dtype=np.int64).reshape(-1, rows).T.copy()
    bar = (np.array([np.asarray(seg.mem[q]).astype(np.int64)[lo:hi] for q in bar_pos.tolist()], dtype=np.int64)
           .reshape(-1, rows).T.copy())
    if sec_pos.size and rows:
        recs = [seg.mem[q] for q in sec_pos.tolist()]
        if lo == 0 and hi == len(seg.warps) and id(seg) not in _RECORD_LISTS and \
                sum(rec.flat.size for rec in recs if isinstance(rec, SectorLists)) >= RECORD_SECTORS_ALONE * len(recs) \
                and _plain_lists(recs):
            # every row at once: each record read where it is, not copied into one array first (a
            # copy made for one use)
            ends = np.stack([rec.ends for rec in recs])
            aux, flat, starts, per_row, most = _gather_plan(ends, lo, hi, pcs.size, sec_pos, shared_pos, shared,
                                                            bar_pos, bar)
            for j, rec in enumerate(recs):
                _gather_record(flat, rec.flat, ends, j, lo, hi, int(sec_pos[j]), aux, starts)
            return pcs, sec_pos, flat, starts, most, aux, per_row
        lists = _record_lists(seg, sec_pos, recs)
        if lists is not None:
            # every record's lists of these rows gathered, and the rows' summaries made, in one
            # compiled pass
            aux, flat, starts, per_row, most = _gather_lists(*lists, lo, hi, pcs.size, sec_pos, shared_pos, shared,
                                                             bar_pos, bar)
            return pcs, sec_pos, flat, starts, most, aux, per_row
        lists = [rec[r] for r in range(lo, hi) for rec in recs]  # row-major
        lens = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists)).reshape(rows, -1)
        size = lens + 1
        heads = np.cumsum(size, axis=1) - size  # where each list's count goes in its row's block
        most = lens.max(axis=1)
        per_row = size.sum(axis=1)
        starts = np.cumsum(per_row) - per_row
        flat = np.empty(int(per_row.sum()), dtype=np.int64)
        at = (heads + starts[:, None]).ravel()
        flat[at] = lens.ravel()
        body = np.ones(flat.size, dtype=bool)
        body[at] = False
        if body.any():
            flat[body] = np.concatenate(lists)
    else:
        heads = np.zeros((rows, sec_pos.size), dtype=np.int64)
        flat = np.zeros(0, np.int64)
        starts = per_row = np.zeros(rows, dtype=np.int64)
        most = np.zeros(rows, dtype=np.int64)
    aux = np.full((rows, pcs.size), -1, dtype=np.int32)
    aux[:, shared_pos] = shared
    aux[:, bar_pos] = bar
    aux[:, sec_pos] = heads
    return pcs, sec_pos, flat, starts, most, aux, np.asarray(per_row, dtype=np.int64)


# the types every call of _gather_lists has (_record_lists' three arrays, two row numbers, the
# positions, the records' positions and numbers)
GATHER_TYPES = (jit.types.int64[::1], jit.types.int64[::1], jit.types.int32[:, ::1], jit.types.int64, jit.types.int64,
                jit.types.int64, jit.types.int64[::1], jit.types.int64[::1], jit.types.int64[:, ::1],
                jit.types.int64[::1], jit.types.int64[:, ::1])


# those of _gather_plan and _gather_record (a record's own sectors: read only)
PLAN_TYPES = GATHER_TYPES[2:]
RECORD_TYPES = (jit.types.int64[::1], jit.types.Array(jit.types.int64, 1, "C", readonly=True), jit.types.int32[:, ::1],
                jit.types.int64, jit.types.int64, jit.types.int64, jit.types.int64, jit.types.int32[:, ::1],
                jit.types.int64[::1])


@jit.compile_ahead
def _gather_lists_ahead():
    _gather_lists.compile(GATHER_TYPES)
    _gather_plan.compile(PLAN_TYPES)
    _gather_record.compile(RECORD_TYPES)


# (id(segment), chunk of its rows) -> (the segment, weakly; units it was read with, the chunk's
# segment_tables, their bytes), least recently used first: the warps of a segment are launched
# close together, in row order, on one SM or on many (a GPU's first wave). Tables are built
# TABLE_ROWS rows at a time and kept up to SEGMENT_CACHE entries and TABLE_BYTES in all.
_SEGMENTS = {}
HAZARD_HISTORY = 4096  # issued positions a trace run in windows keeps for hazard messages to name the
# instruction a hazard waited on (a simulator setting; beyond them a message says "an earlier instruction")
TRACE_SLACK = 0.125  # room a grown trace buffer leaves beyond the resident traces, as a share of them
# (a simulator setting: more means fewer moves of the traces, less means less memory)
SEGMENT_CACHE = 64  # table chunks kept (a simulator setting: bounds the memory the cache holds; with
# TABLE_ROWS, 32,768 rows, as many as 256 chunks of 128)
TABLE_ROWS = 512  # rows of a segment whose tables are built together (a simulator setting: the warps
# of the CTAs the block dispatcher takes at once lie in fewer chunks, flattened in fewer passes; more
# rows than the warps flattened at once build tables that wait in the cache)
TABLE_BYTES = 32 << 20  # bytes of tables kept (a simulator setting: bounds the memory the cache holds)
_table_bytes = [0]


def _tables(seg, unit, key, row):
    """The tables (:func:`segment_tables`) of the chunk of ``seg``'s rows holding ``row``, and the
    chunk's first row."""
    chunk = row // TABLE_ROWS
    hit = _SEGMENTS.get((id(seg), chunk))
    if hit is None or hit[0]() is not seg or hit[1] != key:
        if hit is not None:
            del _SEGMENTS[(id(seg), chunk)]
            _table_bytes[0] -= hit[3]
        lo = chunk * TABLE_ROWS
        tables = segment_tables(seg, unit, lo, min(lo + TABLE_ROWS, len(seg.warps)))
        size = sum(t.nbytes for t in tables if isinstance(t, np.ndarray))
        while _SEGMENTS and (len(_SEGMENTS) >= SEGMENT_CACHE or _table_bytes[0] + size > TABLE_BYTES):
            _table_bytes[0] -= _SEGMENTS.pop(next(iter(_SEGMENTS)))[3]
        hit = _SEGMENTS[(id(seg), chunk)] = (weakref.ref(seg), key, tables, size)
        _table_bytes[0] += size
    else:
        _SEGMENTS[(id(seg), chunk)] = _SEGMENTS.pop((id(seg), chunk))  # the most recently used last
    return hit[2], chunk * TABLE_ROWS


def flatten_trace(parts, unit, unit_key=None):
    """A warp's trace as arrays: pcs (int32), per position the memory summary (int32: shared
    wavefronts, offset of the sector list in the third array, barrier arrival 0/1, or -1 for
    none), the sector lists (each: count, then the sorted sector byte addresses), the positions
    whose summary is such an offset, and the largest sector count. ``unit`` is the static
    unit of each pc (int array); its ``unit_key`` (``unit.tobytes()``) names cached tables."""
    key = unit.tobytes() if unit_key is None else unit_key
    return _flatten_together([parts], unit, key)[0]


def _warp_groups(traces):
    """The warps of ``traces`` (a list of their ``parts``) that ran the same segments in the same
    order, each part's rows in the same chunk of its tables: lists of their indices, ascending."""
    groups = {}
    rows = TABLE_ROWS
    for w, parts in enumerate(traces):
        # (the segments themselves in the key, each followed by its chunk: compared by identity)
        k = []
        add = k.append
        for seg, row in parts:
            add(seg)
            add(row // rows)
        k = tuple(k)
        ws = groups.get(k)
        if ws is None:
            groups[k] = [w]
        else:
            ws.append(w)
    return groups.values()


def flatten_traces(traces, unit, unit_key=None):
    """:func:`flatten_trace` of several warps' traces (a list of their ``parts``), the same arrays
    per warp. Warps that ran the same segments in the same order (a CTA's, unless they diverged)
    are flattened together: each part once for all of them, with their rows side by side (grouped
    by the chunks of the segments' tables their rows lie in)."""
    key = unit.tobytes() if unit_key is None else unit_key
    out = [None] * len(traces)
    for ws in _warp_groups(traces):
        for w, f in zip(ws, _flatten_together([traces[w] for w in ws], unit, key)):
            out[w] = f
    return out


def _closed(traces):
    """Whether no more of these warp traces may come (a launch run in windows: see extend_traces)."""
    return not any(getattr(tr, "open", False) for tr in traces)


def flatten_items(items, unit, unit_key):
    """{cta id: its warps' flattened traces} of the CTAs ``items`` (``(cta id, warp traces, ...)``)
    whose traces are complete, flattened in one pass (:func:`flatten_traces`), up to
    FLATTEN_TOGETHER_POSITIONS trace positions in all (the CTAs after them are left out: each is
    flattened as it starts). A CTA whose warps ran the same code is given as a :class:`CtaBlock`,
    any other as a list of its warps' (:func:`flatten_trace`'s)."""
    chosen = []
    total = 0
    for item in items:
        traces = item[1]
        if not _closed(traces):
            continue
        for tr in traces:
            for seg, _ in tr.parts:
                total += len(seg.pcs)
        if total > FLATTEN_TOGETHER_POSITIONS:
            break
        chosen.append(item)
    if len(chosen) < 2:
        return {}
    return dict(zip([item[0] for item in chosen], _flatten_ctas([item[1] for item in chosen], unit, unit_key)))


def _flatten_ctas(ctas, unit, unit_key):
    """The flattened traces of CTAs (``ctas``: each a list of its warps' traces) in one pass
    (:func:`flatten_traces`): per CTA a :class:`CtaBlock` when its warps ran the same code, else a
    list of its warps' (:func:`flatten_trace`'s)."""
    every = [tr.parts for traces in ctas for tr in traces]
    # per warp: its group's arrays (_flatten_group) and its row in them
    group_of = [None] * len(every)
    row_of = [0] * len(every)
    for ws in _warp_groups(every):
        arrays = _flatten_group([every[w] for w in ws], unit, unit_key)
        for i, w in enumerate(ws):
            group_of[w] = arrays
            row_of[w] = i
    out = []
    k = 0
    for traces in ctas:
        n = len(traces)
        if not n:
            out.append([])
            continue
        arrays, i = group_of[k], row_of[k]
        if group_of[k + n - 1] is arrays and row_of[k + n - 1] == i + n - 1:
            # (a group's warps ascend: the CTA's first and last warps n - 1 rows apart: all of them)
            pcs, aux, sec, bounds, offs, most = arrays
            b0 = bounds[i]
            out.append(CtaBlock(pcs, aux[i:i + n], sec[b0:bounds[i + n]], [b - b0 for b in bounds[i:i + n + 1]],
                                offs, most[i:i + n]))
        else:
            warps = []
            for w in range(k, k + n):
                pcs, aux, sec, bounds, offs, most = group_of[w]
                j = row_of[w]
                warps.append((pcs, aux[j], sec[bounds[j]:bounds[j + 1]], offs, most[j]))
            out.append(warps)
        k += n
    return out


def flatten_queued(sms, closed_only=False):
    """Flatten the traces of the CTAs queued on the compiled SMs ``sms`` (of one kernel) all together,
    for each SM to load when it starts: the warps of every SM that ran the same segments in one
    pass per segment (a first wave's CTAs come from one functional launch). Holds every queued
    CTA's flattened traces at once: for short runs (the sampled prediction's), not a whole grid's
    first wave of long CTAs. ``closed_only``: only the CTAs whose traces are complete (a launch
    run in windows: the others' traces may grow before they start)."""
    items = [(sm, cid, traces) for sm in sms for cid, traces in sm.pending if not closed_only or _closed(traces)]
    if not items:
        return
    flats = _flatten_ctas([traces for _, _, traces in items], sms[0]._unit, sms[0]._unit_key)
    for (sm, cid, _), f in zip(items, flats):
        sm._flat_of[cid] = f


FLATTEN_TOGETHER_POSITIONS = 1 << 16  # queued trace positions up to which the CTAs queued on SMs
# are flattened in one pass before they start (flatten_small_queued; a simulator setting: more
# saves Python work per CTA of larger runs, and holds their flattened traces all at once)


def flatten_small_queued(sms, closed_only=False):
    """:func:`flatten_queued` when the CTAs queued on ``sms`` hold at most
    FLATTEN_TOGETHER_POSITIONS trace positions in all (a short run: its CTAs' warps flattened in one
    pass, not CTA by CTA as each starts); else nothing (each CTA is flattened as it starts). Same
    flattened traces either way. ``closed_only``: see :func:`flatten_queued`."""
    sms = [sm for sm in sms if isinstance(sm, SM) and sm.pending]
    if not sms or any(sm.kernel is not sms[0].kernel or sm.cfg is not sms[0].cfg for sm in sms):
        return
    total = 0
    for sm in sms:
        for _, traces in sm.pending:
            for tr in traces:
                for seg, _ in tr.parts:
                    total += len(seg.pcs)
                if total > FLATTEN_TOGETHER_POSITIONS:
                    return
    flatten_queued(sms, closed_only)


@njit(cache=True)
def _place_blocks(every, at, flat, starts, sizes, rows):
    """Copy the sector block of row ``rows[i]`` of a part's tables (``sizes[r]`` entries of ``flat``
    from ``starts[r]``) to ``every`` at ``at[i]``, for every i, and move ``at[i]`` past it."""
    for i in range(rows.size):
        r = rows[i]
        a = starts[r]
        d = at[i]
        for k in range(sizes[r]):
            every[d + k] = flat[a + k]
        at[i] = d + sizes[r]


# the types every call of _place_blocks has
PLACE_TYPES = (jit.types.int64[::1], jit.types.int64[::1], jit.types.int64[::1], jit.types.int64[::1],
               jit.types.int64[::1], jit.types.int64[::1])


@jit.compile_ahead
def _place_blocks_ahead():
    _place_blocks.compile(PLACE_TYPES)


def _flatten_together(group, unit, key):
    """:func:`flatten_traces` of warps whose traces run through the same segments, each part's rows
    in one chunk of its tables: one numpy pass per part for all of them, and one compiled pass per
    part placing their sector blocks in one array (each warp's a view of it)."""
    pcs, aux, every, bounds, offs, most = _flatten_group(group, unit, key)
    return [(pcs, a, every[b:e], offs, w) for a, b, e, w in zip(aux, bounds, bounds[1:], most)]


class CtaBlock:
    """The flattened traces of a CTA's warps that ran the same code (:func:`_flatten_group`'s rows
    of them, consecutive): their pcs and sector-list positions (shared), their summaries (a row
    each), their sector lists one warp after another, where each warp's start in them (one more
    than the warps), and each warp's largest sector count. :meth:`SM._start_cta` places them
    without gathering them warp by warp; ``warps()`` gives them as :func:`flatten_trace`'s."""

    __slots__ = ("pcs", "aux", "sec", "bounds", "offs", "most")

    def __init__(self, pcs, aux, sec, bounds, offs, most):
        self.pcs, self.aux, self.sec, self.bounds, self.offs, self.most = pcs, aux, sec, bounds, offs, most

    def __len__(self):
        return len(self.most)

    def warps(self):
        pcs, sec, offs, b = self.pcs, self.sec, self.offs, self.bounds
        return [(pcs, a, sec[b[i]:b[i + 1]], offs, m) for i, (a, m) in enumerate(zip(self.aux, self.most))]


def _flatten_group(group, unit, key):
    """The flattened traces of warps that run through the same segments (:func:`_flatten_together`)
    as arrays for all of them: pcs (int32) and sector-list positions (int64), shared; the summaries
    (int32, a row per warp); the sector lists (int64) of every warp one after another, where each
    warp's start (a list, one more than the warps) and each warp's largest count (a list)."""
    n = len(group)
    pcs_parts, aux_parts, off_parts, sec_parts = [], [], [], []
    nsec = np.zeros(n, dtype=np.int64)
    most = np.zeros(n, dtype=np.int64)
    npos = 0
    for j, (seg, row0) in enumerate(group[0]):
        rows = np.array([parts[j][1] for parts in group], dtype=np.int64)
        (spcs, sec_pos, flat, starts, row_most, row_aux, sizes), lo = _tables(seg, unit, key, row0)
        rows -= lo
        a = row_aux[rows]
        if sec_pos.size:
            if j:  # (the first part's lists start each warp's: nothing to add)
                a[:, sec_pos] += nsec[:, None].astype(np.int32)
            off_parts.append(sec_pos + npos)
            sec_parts.append((flat, starts, sizes, rows))
            nsec += sizes[rows]
            most = np.maximum(most, row_most[rows])
        pcs_parts.append(spcs)
        aux_parts.append(a)
        npos += spcs.size
    if not pcs_parts:
        e = np.zeros(0, np.int64)
        return np.zeros(0, np.int32), np.zeros((n, 0), np.int32), e, [0] * (n + 1), e, [0] * n
    most = most.tolist()
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(nsec, out=bounds[1:])
    if len(sec_parts) == 1 and len(pcs_parts) == 1:
        # one part (a window of a stream): its pcs as they are, the summaries (a copy) as the
        # warps' own; the rows' sector blocks as they lie in the tables (a view; no one writes
        # them) when the rows are consecutive (a CTA's warps), else gathered
        flat, starts, sizes, rows = sec_parts[0]
        if n == 1 or bool((np.diff(rows) == 1).all()):
            first = int(starts[rows[0]])
            return (pcs_parts[0], aux_parts[0], flat[first:first + int(bounds[-1])], bounds.tolist(),
                    off_parts[0], most)
    if len(pcs_parts) == 1:
        pcs, aux = pcs_parts[0], aux_parts[0]
    else:
        pcs = np.concatenate(pcs_parts)
        aux = np.concatenate(aux_parts, axis=1)
    offs = np.concatenate(off_parts) if off_parts else np.zeros(0, np.int64)
    # every warp's sector lists one after another in one array
    every = np.empty(int(bounds[-1]), dtype=np.int64)
    if every.size:
        at = bounds[:-1].copy()
        for flat, starts, sizes, rows in sec_parts:
            _place_blocks(every, at, flat, starts, sizes, rows)
    return pcs, aux, every, bounds.tolist(), offs, most


def _place_for(freed, pcs, sec):
    """The index of the first of the exited warps' places ``freed`` ((start in TPC, length, start
    in SEC, length)) that holds a trace of ``pcs`` positions and ``sec`` sector-list entries, or -1."""
    n, ns = pcs.size, sec.size
    for k, f in enumerate(freed):
        if f[1] >= n and f[3] >= ns:
            return k
    return -1


@njit(cache=True)
def _start_warps(W, REGS, S, SW, C, pos0, X, TPC, TAUX, SEC, c, t0, wid0, nsched, slot0, T, pcs, aux, sec, offs):
    """A CTA's warps start (:meth:`SM._start_cta`): warp ``w`` in slot ``slot0 + w`` of CTA slot
    ``c``; by its row of ``T`` (place in TPC/TAUX, place in SEC, first of its pcs in ``pcs``, their
    count, first of its sector-list positions in ``offs``, their count, first of its sector lists
    in ``sec``, their size), its trace copied to the trace buffers (its summaries the next of
    ``aux``; the sector lists' offsets moved with them), the warp queued on scheduler ``slot mod
    nsched``, its row as a warp starts (ready at ``t0``, barriers never set, its trace's place),
    its register times zeroed (:func:`~maxsim.timing.core.start_warp`); the CTA's live count; each slot's
    trace place in ``X``, its exit not taken in. Returns the warps resident on the SM."""
    nw = T.shape[0]
    a = 0
    for w in range(nw):
        slot = slot0 + w
        tb, sb, p0, n, o0, no, s0, ns = T[w, 0], T[w, 1], T[w, 2], T[w, 3], T[w, 4], T[w, 5], T[w, 6], T[w, 7]
        for i in range(n):
            TPC[tb + i] = pcs[p0 + i]
            TAUX[tb + i] = aux[a + i]
        a += n
        for j in range(o0, o0 + no):
            TAUX[tb + offs[j]] += sb
        for i in range(ns):
            SEC[sb + i] = sec[s0 + i]
        K.start_warp(W, REGS, S, SW, slot, c, t0, tb, n, wid0 + w, pcs[p0] if n else 0, nsched)
        pos0[slot] = 0
        X[slot, K.X_TAKEN] = 0
        X[slot, K.X_TB] = tb
        X[slot, K.X_TN] = n
        X[slot, K.X_SB] = sb
        X[slot, K.X_SN] = ns
    C[c, K.C_LIVE] = nw
    C[c, K.C_NARRIVED] = 0
    total = 0
    for s in range(S.shape[0]):
        total += S[s, K.S_NW]
    return total


@njit(cache=True)
def _exited(W, X, sums):
    """The slots whose warps exited and were not taken in yet (``X``'s ``X_TAKEN``, then set), in the
    order they exited, and their stall counts (a row each); the counts added to ``sums``
    (:func:`~maxsim.timing.core.take_exits`)."""
    out = np.empty((W.shape[0], K.X_COLS), np.int64)
    n = K.take_exits(W, X, out, 0, sums)
    return out[:n, 0].copy(), out[:n, 1:1 + sums.size].copy()


@njit(cache=True)
def _trace_room(W, open_):
    """SM.trace_room's count: the fewest positions loaded and not issued of the warps in slots with
    more trace to come (``open_``) that have not exited, and whether there is any such warp."""
    best = 0
    found = False
    for slot in range(open_.shape[0]):
        if open_[slot] and W[slot, K.W_DONE] == 0:
            r = W[slot, K.W_LEN] - W[slot, K.W_POS]
            if not found or r < best:
                best = r
                found = True
    return best, found


def _start_types():
    """The argument types of every call of :func:`_start_warps` (the SM's arrays, C-contiguous)."""
    def a(dtype, ndim):
        return jit.types.Array(dtype, ndim, "C")
    i64, i32 = jit.types.int64, jit.types.int32
    return ((a(i64, 2), a(i64, 3), a(i64, 2), a(i64, 2), a(i64, 2), a(i64, 1), a(i64, 2), a(i32, 1), a(i32, 1),
             a(i64, 1))
            + (i64,) * 5 + (a(i64, 2), a(i32, 1), a(i32, 1), a(i64, 1), a(i64, 1)))


def _exited_types():
    """The argument types of every call of :func:`_exited`."""
    return (jit.types.Array(jit.types.int64, 2, "C"), jit.types.Array(jit.types.int64, 2, "C"),
            jit.types.Array(jit.types.int64, 1, "C"))


@jit.compile_ahead
def _start_warps_ahead():
    _start_warps.compile(_start_types())
    _exited.compile(_exited_types())
    _trace_room.compile((_exited_types()[0], jit.types.Array(jit.types.boolean, 1, "C")))


def _static_tables(static, kernel, cfg):
    """StaticInfo as the core's arrays P (per pc), L (register lists), RD (operand reads)."""
    n = len(kernel.instructions)
    P = _aligned((max(n, 1), K.P_SIZE), np.int32)
    L = []
    RD = []
    rows = []  # P's rows as lists, written into P at once (a numpy store per field was most of the time)

    for pc in range(n):
        row = [0] * K.P_SIZE

        def put(field, regs):
            row[field] = len(L)
            row[field + 1] = len(regs)
            L.extend(regs)

        row[K.P_UNIT] = static.unit[pc]
        row[K.P_DUAL] = static.dual[pc]
        row[K.P_READ] = static.read_delay[pc]
        row[K.P_LATE_REG], row[K.P_LATE_READ] = static.late_reg[pc], static.late_read[pc]
        row[K.P_STALL] = static.stall[pc]
        row[K.P_YIELD] = static.yld[pc]
        row[K.P_WAITS] = sum(1 << b for b in static.waits[pc])
        row[K.P_RBAR] = static.rbar[pc]
        row[K.P_WBAR] = static.wbar[pc]
        row[K.P_DEPBAR], row[K.P_DEPBAR_N] = static.depbar[pc]
        row[K.P_LATENCY] = static.latency[pc]
        row[K.P_PIPE] = static.pipe[pc]
        row[K.P_INTERVAL] = static.interval[pc]
        row[K.P_BACK] = static.back_branch[pc]
        put(K.P_SRC, static.srcs[pc])
        put(K.P_DST, static.dsts[pc])
        put(K.P_PSRC, static.psrcs[pc])
        put(K.P_PDST, static.pdsts[pc])
        put(K.P_MREADS, static.mem_reads[pc])
        row[K.P_READS] = len(RD)
        row[K.P_NREADS] = len(static.reads[pc])
        for slot, r, bank, flagged, _dup in static.reads[pc]:
            RD.append((slot, r, bank, int(flagged)))
        rows.append(row)
    if rows:
        P[:n] = rows
    L = np.array(L or [0], dtype=np.int32)
    RD = np.array(RD or [(0, 0, 0, 0)], dtype=np.int32).reshape(-1, 4)
    return P, L, RD


def _aligned(shape, dtype, align=64):
    """A zeroed C-order array whose data starts on an ``align``-byte boundary (a cache line: a row
    of the core's pc table then spans as few lines as its size allows)."""
    size = math.prod(shape) * np.dtype(dtype).itemsize
    raw = np.zeros(size + align, dtype=np.uint8)
    start = -raw.__array_interface__["data"][0] % align  # (the address; ``.ctypes`` is slow to make)
    return raw[start:start + size].view(dtype).reshape(shape)


_START_ARRAYS = {}  # (id(config), CTA slots, pcs) -> (config, the arrays of _start_arrays)


def _start_arrays(cfg, max_ctas, npc):
    """A new SM's state arrays that only the config, its CTA slots and the kernel's length shape
    (F, Q, S, SW, RC, BANKS, C, REQ, CNT of SM._build_state, read only): made once, each SM starts
    from copies."""
    key = (id(cfg), max_ctas, npc)
    hit = _START_ARRAYS.get(key)
    if hit is not None and hit[0] is cfg:
        return hit[1]
    rf, pipes, l1c = cfg.regfile, cfg.pipes, cfg.l1tex
    nsched, nwarps = cfg.sm.schedulers, cfg.sm.max_warps
    F = np.zeros(K.F_TEX_FREE + l1c.caches, dtype=np.float64)
    F[K.F_TEX_BPC] = l1c.cache_bytes_per_clk
    Q = np.zeros((nwarps, pipes.shared_queue_depth + pipes.global_queue_depth), dtype=np.int64)
    S = np.zeros((nsched, K.S_SIZE + 2 * nwarps), dtype=np.int64)  # (K.S_RDY: two entries per warp slot)
    S[:, K.S_LAST] = -1
    S[:, K.S_RC_WARP] = -1
    SW = np.zeros((nsched, nwarps), dtype=np.int64)
    RC = np.zeros((nsched, 3, rf.reuse_entries_per_slot), dtype=np.int64)
    BANKS = np.zeros((nsched, 2, K.RING), dtype=np.int64)
    BANKS[:, 0, :] = -1
    C = np.zeros((max(max_ctas, 1), K.C_SIZE), dtype=np.int64)
    REQ = np.zeros(64 + STORE_QUEUE_WORDS, dtype=np.int64)  # (G_WQ_BASE = 64)
    # per instruction: stats.PC_FIELDS x pc (a field's counters side by side: the loop's rows
    # of one field stay in a few cache lines)
    CNT = np.zeros((PC_SIZE, npc), dtype=np.int64)
    arrays = (F, Q, S, SW, RC, BANKS, C, REQ, CNT)
    for a in arrays:
        a.flags.writeable = False
    if len(_START_ARRAYS) >= 16:
        del _START_ARRAYS[next(iter(_START_ARRAYS))]
    _START_ARRAYS[key] = (cfg, arrays)
    return arrays


def _pc_summaries(static, kernel):
    """What the statistics add up per executed instruction, as arrays over the pcs: the index of
    its opcode in a list of the kernel's opcodes (with the list), its flops, its operand reads,
    whether it is an FFMA, and the last three as a row per pc of (1, flops, reads, 1 for an FFMA)."""
    names = [i.full_opcode for i in kernel.instructions]
    opcodes = sorted(set(names))
    index = {op: k for k, op in enumerate(opcodes)}
    flops = np.asarray(static.flops, dtype=np.int64)
    reads = np.array([len(r) for r in static.reads], dtype=np.int64)
    is_ffma = np.asarray(static.is_ffma, dtype=bool)
    # per pc: 1 (an issue), its flops, its operand reads, 1 for an FFMA: executions @ sums = the four totals
    sums = np.stack([np.ones(len(names), dtype=np.int64), flops, reads, is_ffma.astype(np.int64)],
                    axis=1).reshape(len(names), 4)
    return np.array([index[op] for op in names], dtype=np.int64), opcodes, flops, reads, is_ffma, sums


_EMPTY_L1 = {}  # shape -> the core's tag array of an empty L1/texture cache
_CONFIG_FIELDS = {}  # id(config) -> (config, the core's G fields that only the config sets)


def _config_fields(cfg):
    """The core's scalars G with the fields only the config sets (every SM of a GPU starts from a
    copy: building them is per config, not per SM)."""
    hit = _CONFIG_FIELDS.get(id(cfg))
    if hit is not None and hit[0] is cfg:
        return hit[1]
    lat, rf, pipes, l1c = cfg.latency, cfg.regfile, cfg.pipes, cfg.l1tex
    G = np.zeros(K.G_SIZE, dtype=np.int64)
    G[K.G_NSCHED] = cfg.sm.schedulers
    G[K.G_LOOKAHEAD] = rf.collector_lookahead
    G[K.G_REUSE_ENTRIES] = rf.reuse_entries_per_slot
    G[K.G_SWITCH_CLEARS] = rf.reuse_lost_on_warp_switch
    G[K.G_PENALTY] = rf.conflict_penalty
    G[K.G_MEM_INTERVAL] = pipes.mem_issue_interval
    G[K.G_PIPE_INT0] = pipes.alu_interval
    G[K.G_PIPE_INT1] = int(round(pipes.alu_half_interval))
    G[K.G_REUSE_SLOTS] = rf.reuse_slots
    G[K.G_SHARED_DEPTH] = pipes.shared_queue_depth
    G[K.G_GLOBAL_DEPTH] = pipes.global_queue_depth
    G[K.G_SECTOR] = l1c.sector
    G[K.G_DUAL_ON] = pipes.dual_issue
    G[K.G_BAR_DELAY] = lat.barrier_set_delay
    G[K.G_LAT_S2R] = lat.s2r
    G[K.G_READ_SHARED] = lat.mem_operand_read_shared
    G[K.G_READ_TEX] = lat.mem_operand_read_tex
    G[K.G_READ_GLOBAL] = lat.mem_operand_read_global
    G[K.G_READ_BAR_RELEASE] = lat.read_barrier_release
    G[K.G_BRANCH_TAKEN] = lat.branch_taken
    G[K.G_OLDEST_AGE] = cfg.sm.oldest_warp == "age"
    G[K.G_TEX_L1_HIT] = lat.tex_l1_hit
    G[K.G_BARRIER_SYNC] = lat.barrier_sync
    G[K.G_LAT_LDS] = lat.lds
    G[K.G_LAT_STS] = lat.sts
    G[K.G_L1_MODE] = ("pooled", "pairs_01_23", "pairs_02_13").index(l1c.sharing)
    G[K.G_L1_CACHES] = l1c.caches
    if len(_CONFIG_FIELDS) >= 8:
        del _CONFIG_FIELDS[next(iter(_CONFIG_FIELDS))]
    _CONFIG_FIELDS[id(cfg)] = (cfg, G)
    return G


# (id(kernel), id(config)) -> (kernel, config, StaticInfo, tables): the SMs of a GPU share them
_KERNELS = {}


def kernel_tables(kernel, cfg):
    """The kernel's StaticInfo under ``cfg`` and the core's read-only tables built from it
    (P, L, RD, the unit of each pc and its bytes), built once for all the SMs that run it."""
    key = (id(kernel), id(cfg))
    hit = _KERNELS.get(key)
    if hit is None or hit[0] is not kernel or hit[1] is not cfg:
        static = StaticInfo(kernel, cfg)
        unit = np.asarray(static.unit, dtype=np.int64)
        tables = (*_static_tables(static, kernel, cfg), unit, unit.tobytes(), _pc_summaries(static, kernel))
        if len(_KERNELS) >= 8:
            del _KERNELS[next(iter(_KERNELS))]
        hit = _KERNELS[key] = (kernel, cfg, static, tables)
    return hit[2], hit[3]


_RESIDENCY = {}  # (id(kernel), block, id(config)) -> (kernel, config, residency()): a GPU's SMs share it


def _residency(kernel, block, cfg):
    """:func:`residency`, worked out once for all the SMs of a run (and of runs of the same launch)."""
    key = (id(kernel), block, id(cfg))
    hit = _RESIDENCY.get(key)
    if hit is None or hit[0] is not kernel or hit[1] is not cfg:
        if len(_RESIDENCY) >= 8:
            del _RESIDENCY[next(iter(_RESIDENCY))]
        hit = _RESIDENCY[key] = (kernel, cfg, residency(kernel, block, cfg))
    return hit[2]


# the core's run counters that SM._end adds to the statistics (name, G field), in one index
# with G_SHM_BUSY last (the shared memory's)
_END_FIELDS = (("dual_issues", K.G_DUAL), ("reuse_hits", K.G_REUSE_HITS),
               ("bank_conflicts", K.G_BANK_CONFLICTS), ("bank_conflict_cycles", K.G_BANK_CYCLES),
               ("delayed_conflicts", K.G_DELAYED), ("shared_requests", K.G_SHARED_REQ),
               ("shared_wavefronts", K.G_SHARED_WF), ("stores", K.G_STORES),
               ("tex_requests", K.G_TEX_REQ), ("tex_sectors", K.G_TEX_SECTORS),
               ("tex_hits", K.G_TEX_HITS))
_END_NAMES = tuple(n for n, _ in _END_FIELDS)
_END_INDEX = np.array([f for _, f in _END_FIELDS] + [K.G_SHM_BUSY], dtype=np.intp)
_END_SHARED_REQ = _END_NAMES.index("shared_requests")
_END_SHARED_WF = _END_NAMES.index("shared_wavefronts")
_END_TEX_REQ = _END_NAMES.index("tex_requests")


class SM:
    """One streaming multiprocessor running the CTAs handed to it (compiled core)."""

    core = "compiled"

    def __new__(cls, *args, core=None, **kw):
        if cls is SM and core_name(core) == "python":
            return ReferenceSM(*args, **kw)
        return super().__new__(cls)

    def __init__(self, cfg, kernel, block, memory_system, l1=None, stats=None, hazards="warn",
                 max_cycles=None, sm_id=0, log=False, core=None):
        from .texture import TextureCache

        self.cfg = cfg
        self.kernel = kernel
        self.block = block
        self.static, self._tables = kernel_tables(kernel, cfg)
        self.memsys = memory_system
        self.l1 = l1 if l1 is not None else TextureCache(cfg)
        self.stats = stats if stats is not None else Stats()
        self.stats.clock_hz = cfg.clock_hz
        self.stats.schedulers = cfg.sm.schedulers
        nsched = cfg.sm.schedulers
        self.scheds = [SchedulerView(s, self) for s in range(nsched)]
        self.max_ctas, self.limited_by = _residency(kernel, block, cfg)
        self.wpc = (block + 31) // 32
        self.pending = []  # (cta id, [warp traces]) queued for this SM
        self._delays = {}  # cta id -> cycles its warps wait after its launch (add_cta)
        self._flat_of = {}  # cta id -> its warps' flattened traces, made ahead (flatten_queued)
        self.dispatcher = None  # a GPU's shared queue of further CTAs (collections.deque)
        self.dispatched = []  # (cycle, cta id) taken from the dispatcher
        self.dispatch_clock = None  # a GPU's block dispatcher's pace (``take(t)``: the start of a CTA taken at t)
        self.router = None  # where the windows of a launch run in windows go (maxsim.gpu.gpu.TraceRouter)
        self.all_warps = WarpList(self.scheds)
        self.peak_warps = 0
        self.resident = 0
        self.shared = SharedMemoryTiming(cfg)
        self.hazard_mode = hazards
        self.max_cycles = max_cycles
        self.sm_id = sm_id
        self.now = 0
        self.finished_ctas = 0
        self.cta_log = []  # (cta id, start cycle, end cycle) per CTA run, in the order they finished
        # each warp's backward-branch cycles (loop progress); a whole-GPU run turns it off
        self.keep_branch_times = True
        self.lat = cfg.latency
        self.cta_launch = cfg.sm.cta_launch_cycles
        # optional logs (see ReferenceSM): issue_log (cycle, warp label, pc), issue_done, stall_log
        self.issue_log = [] if log else None
        self.issue_done = [] if log else None
        self.stall_log = [] if log else None
        self._mem_kw = memory_keywords(memory_system, sm_id)
        # a memory system that takes the core's whole store queue in one call (and no keywords)
        self._write_queue = None if self._mem_kw[1] else getattr(memory_system, "write_queue", None)
        # the compiled memory system as it is (no keywords, its own read): the core serves reads from
        # its arrays itself; a wrapped or instrumented one is called from Python
        # (its read takes the SM's number, which the core passes itself)
        self._memc = memory_system if serves_in_core(memory_system) and not self._mem_kw[1] else None
        if self._memc is not None:
            self._memc.tlb.check_sm(sm_id)
        self._mem_version = -1
        self._slot_warp = [None] * cfg.sm.max_warps
        self._ctas = [None] * self.max_ctas
        self._build_state(log)
        self._check_control_stalls()

    _check_control_stalls = ReferenceSM._check_control_stalls
    _hazard_text = ReferenceSM._hazard_text

    # ---- state arrays ----------------------------------------------------------------------
    def _build_state(self, log):
        cfg = self.cfg
        nwarps = cfg.sm.max_warps
        G = _config_fields(cfg).copy()
        G[K.G_LIMIT] = -1 if self.max_cycles is None else self.max_cycles
        G[K.G_HAZARDS] = 0 if not self.hazard_mode else (2 if self.hazard_mode == "strict" else 1)
        G[K.G_LOG] = 1 if log else 0
        G[K.G_SM_ID] = self.sm_id
        G[K.G_SHARED_FREE] = self.shared.next_free
        W = _aligned((nwarps, K.W_SIZE), np.int64)
        # a warp slot's register times are zeroed when a warp is launched in it (_launch_ready_ctas),
        # and the core reads only launched slots
        REGS = np.empty((nwarps, 2, REGISTERS), dtype=np.int64)
        P, L, RD, self._unit, self._unit_key, self._pc_sums = self._tables
        F, Q, S, SW, RC, BANKS, C, REQ, CNT = [a.copy() for a in _start_arrays(cfg, self.max_ctas, len(P))]
        L1 = self._import_l1(G)
        rows = LOG_ROWS if log else 1
        # the logs: the core writes a row whole before counting it, and only counted rows are read
        # (_drain); left unwritten (np.empty), a log's pages are not touched until it is used
        ILOG = np.empty((rows, K.ILOG_W), dtype=np.int64)
        SLOG = np.empty((rows, K.SLOG_W), dtype=np.int64)
        BLOG = np.empty((LOG_ROWS, 2), dtype=np.int64)
        HLOG = np.empty((LOG_ROWS, K.HLOG_W), dtype=np.int64)
        G[K.G_WQ_BASE] = 64
        self._G, self._F, self._W, self._REGS, self._Q, self._S, self._SW = G, F, W, REGS, Q, S, SW
        self._C, self._L1, self._ILOG, self._SLOG, self._BLOG, self._HLOG = C, L1, ILOG, SLOG, BLOG, HLOG
        self._CNT = CNT
        self._TPC = np.zeros(0, dtype=np.int32)
        self._TAUX = np.zeros(0, dtype=np.int32)  # int32: a summary or an offset in SEC
        self._SEC = np.zeros(0, dtype=np.int64)
        # per warp slot its exit taken in and its trace's place, the SM's scalars for the core's starts
        # of CTAs and their logs (core.X_TAKEN ...: the plane of a lineup's array while one runs the SM)
        slots = cfg.sm.max_warps
        X = np.zeros((slots + 2 + K.XL_ROWS + K.XE_ROWS, K.X_COLS), dtype=np.int64)
        X[:slots, K.X_TN] = X[:slots, K.X_SN] = -1
        X[slots, K.XA_CTAS] = self.max_ctas
        X[slots, K.XA_LAUNCH] = self.cta_launch
        X[slots, K.XA_WPC] = self.wpc
        self._X, self._xa = X, slots
        self._logged = X[slots + 1]  # (XB_NCTA, XB_NEXIT)
        self._rq_queue = None  # the block dispatcher whose ready queue the core is given (clock.Lineup)
        self._slot_trace = {}  # warp slot -> (start in TPC, length, start in SEC, length, offset positions)
        # per warp slot: positions of its trace let go of before its start in TPC (a trace that grows
        # in windows keeps only what its warp has not issued; W_TBASE is its start less these), and
        # whether more of it may come (see extend_traces)
        self._pos0 = np.zeros(cfg.sm.max_warps, dtype=np.int64)
        self._open = np.zeros(cfg.sm.max_warps, dtype=bool)
        # (start in TPC, length, start in SEC, length) of traces whose warps exited, for the traces of a
        # launch run in windows (with no trace router, a slot keeps its place for its next warp: X)
        self._freed = []
        self._stall_sum = np.zeros(len(STALL_REASONS), dtype=np.int64)  # exited warps' stalls not yet in stats
        self._stall_rows = []  # (warp labels, their stall counts) taken in, not yet in stats
        self._REQ = REQ
        self._fixed = (RC, BANKS, C, P, L, RD)
        self._pack()

    @property
    def _tfill(self):
        """Used length of TPC/TAUX."""
        return int(self._X[self._xa, K.XA_TFILL])

    @_tfill.setter
    def _tfill(self, v):
        self._X[self._xa, K.XA_TFILL] = v

    @property
    def _sfill(self):
        """Used length of SEC."""
        return int(self._X[self._xa, K.XA_SFILL])

    @_sfill.setter
    def _sfill(self, v):
        self._X[self._xa, K.XA_SFILL] = v

    def bind_x(self, plane):
        """Keep the SM's ``X`` in ``plane`` (a lineup's, which the core reads) from now on."""
        plane[...] = self._X
        self._X = plane
        self._logged = plane[self._xa + 1]

    def _pack(self):
        RC, BANKS, C, P, L, RD = self._fixed
        memc = self._memc
        if memc is not None:
            # the compiled memory system's arrays: the core serves reads itself (see core.run)
            self._mem_version = memc._version
            self._G[K.G_MEMC] = 1
            self._G[K.G_SAFE_N] = memc._safe_n
            margs = memc._read_args
        else:
            self._G[K.G_MEMC] = 0
            margs = _NO_MEMORY_ARRAYS
        PACKED[0] += 1
        self._args = (self._G, self._F, self._W, self._REGS, self._Q, self._S, self._SW, RC, BANKS, C,
                      P, L, RD, self._TPC, self._TAUX, self._SEC, self._L1, self._ILOG, self._SLOG,
                      self._BLOG, self._HLOG, self._REQ, self._CNT, tuple(margs))

    def _import_l1(self, G):
        """The L1/texture cache's tags as the core's array (in LRU order from its sets)."""
        l1 = self.l1
        G[K.G_L1_LINE] = l1.line
        G[K.G_L1_SPL] = l1.sectors_per_line
        G[K.G_L1_SETS] = l1.unit_sets
        G[K.G_L1_ASSOC] = l1.assoc
        shape = (l1.n_sets, l1.assoc, 2 + l1.sectors_per_line)
        empty = _EMPTY_L1.get(shape)
        if empty is None:
            empty = _EMPTY_L1[shape] = np.full(shape, K.NO_FILL, dtype=np.int64)
            empty[:, :, 0] = -1
        arr = empty.copy()
        if l1._tags is None and (l1._set_list is None or not any(l1._set_list)):  # an empty cache (a new SM's)
            G[K.G_L1_CLOCK] = 0
            return arr
        clock = 0
        for si, s in enumerate(l1._sets):
            for way, (ln, entry) in enumerate(s.items()):
                clock += 1
                arr[si, way, 0] = ln
                arr[si, way, 1] = clock
                arr[si, way, 2:] = [K.NO_FILL if r is None else r for r in entry]
        G[K.G_L1_CLOCK] = clock
        return arr

    def _export_l1(self):
        """Write the core's L1 tags and counters back to the TextureCache object."""
        l1, G, arr = self.l1, self._G, self._L1
        l1.take_tags(arr.copy(), K.NO_FILL)
        l1.sector_hits += int(G[K.G_L1_HITS])
        l1.sector_misses += int(G[K.G_L1_MISSES])
        l1.pending_hits += int(G[K.G_L1_PENDING])
        l1.evictions += int(G[K.G_L1_EVICT])
        for f in (K.G_L1_HITS, K.G_L1_MISSES, K.G_L1_PENDING, K.G_L1_EVICT):
            G[f] = 0

    def _load_trace(self, slot, flat):
        """Append a warp's flattened trace (:func:`flatten_trace`) to the trace buffers; returns
        (its pcs, start in TPC)."""
        pcs, aux, sec, offs, most = flat
        # the place of an exited warp's trace when this one fits there (a CTA's successor runs
        # traces of about the same length: most loads then move nothing), else the end, after
        # moving the live traces to the front when there is no room
        k = _place_for(self._freed, pcs, sec)
        if k >= 0:
            place = self._freed.pop(k)
            tb, sb = place[0], place[2]
        else:
            if self._tfill + pcs.size > self._TPC.size or self._sfill + sec.size > self._SEC.size:
                self._compact(pcs.size, sec.size)
            tb, sb = self._tfill, self._sfill
            self._tfill += pcs.size
            self._sfill += sec.size
        if offs.size:
            aux[offs] += sb
        self._TPC[tb:tb + pcs.size] = pcs
        self._TAUX[tb:tb + aux.size] = aux
        self._SEC[sb:sb + sec.size] = sec
        self._slot_trace[slot] = (tb, pcs.size, sb, sec.size, offs)
        self._X[slot, K.X_TB:K.X_SN + 1] = (tb, pcs.size, sb, sec.size)
        self._room_for_requests(most)
        return pcs, tb

    def _room_for_requests(self, most):
        """REQ with room for a request of ``most`` words: it grows when a longer one comes (any
        queued stores move with the queue)."""
        G = self._G
        if most > G[K.G_WQ_BASE]:
            base, used = int(G[K.G_WQ_BASE]), int(G[K.G_WQ_N])
            req = np.zeros(most + STORE_QUEUE_WORDS, dtype=np.int64)
            req[most:most + used] = self._REQ[base:base + used]
            self._REQ = req
            G[K.G_WQ_BASE] = most
            self._pack()

    def _make_room(self, flats):
        """Room for a CTA's flattened traces (:meth:`_load_trace` places them): those that no exited
        warp's place takes go to the end of the buffers, moved there once for the whole CTA when
        they do not fit (not once per warp, each move copying every live trace)."""
        free = list(self._freed)
        rest = rest_sec = 0
        for pcs, _, sec, _, _ in flats:
            k = _place_for(free, pcs, sec) if free else -1
            if k >= 0:
                del free[k]
            else:
                rest += pcs.size
                rest_sec += sec.size
        if self._tfill + rest > self._TPC.size or self._sfill + rest_sec > self._SEC.size:
            self._compact(sum(f[0].size for f in flats), sum(f[2].size for f in flats))

    def _compact(self, more, more_sec):
        """Move the resident warps' traces to the front of the trace buffers, leaving room for
        ``more`` positions and ``more_sec`` sector-list entries: in place when they fit, else in
        new buffers with an eighth as much again to grow into (TRACE_SLACK). A buffer's touched pages
        stay resident: its size, not the traces in it, is what the SM holds."""
        live = self._slot_trace
        need = sum(v[1] for v in live.values()) + more
        need_sec = sum(v[3] for v in live.values()) + more_sec
        old_pc, old_aux, old_sec = self._TPC, self._TAUX, self._SEC
        if need <= old_pc.size and need_sec <= old_sec.size:
            TPC, TAUX, SEC = old_pc, old_aux, old_sec
        else:
            TPC = np.empty(max(need + int(need * TRACE_SLACK) + 1024, old_pc.size), dtype=np.int32)
            TAUX = np.empty(TPC.size, dtype=np.int32)
            SEC = np.empty(max(need_sec + int(need_sec * TRACE_SLACK) + 1024, old_sec.size), dtype=np.int64)
        t = q = 0
        # in start order, each trace moves to a lower (or the same) place: it never overwrites a
        # trace not yet moved (numpy copies overlapping slices correctly)
        for slot, (tb, n, sb, ns, offs) in sorted(live.items(), key=lambda kv: kv[1][0]):
            TPC[t:t + n] = old_pc[tb:tb + n]
            TAUX[t:t + n] = old_aux[tb:tb + n]
            live[slot] = (t, n, sb, ns, offs)
            t += n
        # then the sector lists, in their start order, and the offsets in TAUX that point at them
        for slot, (tb, n, sb, ns, offs) in sorted(live.items(), key=lambda kv: kv[1][2]):
            SEC[q:q + ns] = old_sec[sb:sb + ns]
            if offs.size:
                TAUX[tb + offs] += q - sb
            self._W[slot, K.W_TBASE] = tb - self._pos0[slot]
            live[slot] = (tb, n, q, ns, offs)
            q += ns
        self._TPC, self._TAUX, self._SEC = TPC, TAUX, SEC
        self._tfill, self._sfill = t, q
        self._freed = []
        X, slots = self._X, self._xa
        X[:slots, K.X_TN] = X[:slots, K.X_SN] = -1  # (the places of exited warps' traces are gone)
        for slot, (tb, n, sb, ns, _) in live.items():
            X[slot, K.X_TB], X[slot, K.X_TN], X[slot, K.X_SB], X[slot, K.X_SN] = tb, n, sb, ns
        self._pack()

    # ---- CTAs ----------------------------------------------------------------------------
    def add_cta(self, cid, warp_traces, delay=0):
        """Queue a CTA (its id and the traces of its warps, in warp order); ``delay``: its warps
        become ready that many cycles after it is launched."""
        self.pending.append((cid, warp_traces))
        if delay:
            self._delays[cid] = int(delay)

    def _launch_ready_ctas(self, t):
        nsched = len(self.scheds)
        dispatcher = self.dispatcher
        ahead = getattr(dispatcher, "flats", None)  # CTAs the dispatcher flattened ahead
        pending, ctas, flat_of = self.pending, self._ctas, self._flat_of
        scheds, slot_warp, items = self.scheds, self._slot_warp, self.all_warps._items
        router = self.router
        keep = self.keep_branch_times
        part_pcs = WarpView.part_pcs
        while self.resident < self.max_ctas:
            if pending:
                cid, traces = pending.pop(0)
                start = t
            elif dispatcher is not None and dispatcher:
                # a GPU's block dispatcher hands the next CTA to the SM whose slot freed first
                cid, traces = dispatcher.popleft()
                start = self.dispatch_clock.take(t) if self.dispatch_clock is not None else t
                self.dispatched.append((start, cid))
            else:
                break
            t0 = start + self._delays.pop(cid, 0) if self._delays else start
            c = ctas.index(None)
            slots = cta_warp_slots(cid, c, self.block, len(traces))
            wid0 = len(items)
            slot0 = slots.start
            cta = CtaView(cid, c, t0, wid0, slot0)
            ctas[c] = cta
            flats = flat_of.pop(cid, None) if flat_of else None
            if flats is None and ahead is not None:
                flats = ahead.pop(cid, None)
            if flats is None:
                flats = flatten_traces([tr.parts for tr in traces], self._unit, self._unit_key)
            label = f"cta{cid[0]},{cid[1]}.w"
            # (the warps of a CtaBlock ran the same segments: their views share one list of their
            # pcs; with a trace router a warp's trace may grow, so each view keeps its own)
            staged = type(traces) is PartPcs
            shared = part_pcs(traces[0].parts) if router is None and type(flats) is CtaBlock and traces \
                and not staged else None
            nw = self._start_cta(c, t0, wid0, slot0, flats)
            if router is not None:
                self._open[slots.start:slots.stop] = False
            slot = slot0
            for w, tr in enumerate(traces):
                view = WarpView(wid0 + w, slot, scheds[slot % nsched], cta, label + str(w),
                                tr if staged else shared if shared is not None else part_pcs(tr.parts), keep)
                if router is not None and getattr(tr, "open", False):
                    self._open[slot] = True
                    router.loaded(tr.warp, self, slot, view)
                slot_warp[slot] = view
                items.append(view)
                slot += 1
            self.resident += 1
            if nw > self.peak_warps:
                self.peak_warps = nw
            # loaded: let go of the traces before asking the dispatcher for more (asking may run
            # the next functional batch; these would keep their batch's records alive meanwhile)
            traces = tr = flats = view = None
        self._update_fast()

    def _update_fast(self):
        """Whether the core starts this SM's next CTA itself when a CTA ends (core._next_cta): the
        block dispatcher's ready queue is the one the core is given, no CTA is queued on the SM
        itself, and the SM keeps no record a CTA's start or end would have to make at once (no
        backward-branch times, no issue logs); the number of its next warp."""
        X, xa = self._X, self._xa
        q = self.dispatcher
        X[xa, K.XA_FAST] = (q is not None and q is self._rq_queue and getattr(q, "rq", None) is not None
                            and self.dispatch_clock is q.clock and not self.pending and not self._delays
                            and not self.keep_branch_times and not self._G[K.G_LOG])
        X[xa, K.XA_WID] = len(self.all_warps._items)

    def _places(self, sizes, slot0):
        """Where a CTA's warps' traces go, in warp order, from their ``sizes`` ((trace positions,
        sector-list entries) each) and the slot of its first warp, as (start in TPC, start in SEC):
        the place the slot's last warp's trace held (X) when it holds both (the core's choice too:
        core._next_cta), else the end of the buffers (their fill advanced); when those at the end
        do not fit there, the buffers are compacted first (the exited warps' places let go of) and
        every warp goes at the end."""
        X = self._X
        own = X[slot0:slot0 + len(sizes), K.X_TB:K.X_SN + 1].tolist()
        tfill, sfill = self._tfill, self._sfill
        tend, send = tfill, sfill
        for (n, ns), (_, tn, _, sn) in zip(sizes, own):
            if not (tn >= n and sn >= ns):
                tend += n
                send += ns
        if tend > self._TPC.size or send > self._SEC.size:
            self._compact(sum(v[0] for v in sizes), sum(v[1] for v in sizes))
            own = [(0, -1, 0, -1)] * len(sizes)
            tfill, sfill = self._tfill, self._sfill
        starts = []
        for (n, ns), (tb, tn, sb, sn) in zip(sizes, own):
            if tn >= n and sn >= ns:
                starts.append((tb, sb))
            else:
                starts.append((tfill, sfill))
                tfill += n
                sfill += ns
        self._tfill, self._sfill = tfill, sfill
        return starts

    def _start_cta(self, c, t0, wid0, slot0, flats):
        """Place the flattened traces ``flats`` of a CTA's warps (:func:`flatten_trace`'s, in warp
        order) in the trace buffers and start the warps in the consecutive slots from ``slot0``, in
        CTA slot ``c``, ready at cycle ``t0``, numbered from ``wid0``: each goes where its slot's last
        warp's trace was when it fits there, else at the end of the buffers (moved to the front
        first when the CTA's do not fit there: :meth:`_places`). The copies and the
        warps' rows are one compiled call (:func:`_start_warps`). Returns the warps now resident."""
        if type(flats) is CtaBlock:
            return self._start_block(c, t0, wid0, slot0, flats)
        places = self._places([(f[0].size, f[2].size) for f in flats], slot0)
        live = self._slot_trace
        # per warp: its trace's place, and where its pcs, record positions and sector lists are in
        # the arrays passed (pcs and positions once for warps that share them: a CTA's warps that
        # ran the same code, usually one after another)
        table = []
        pcs_at, offs_at = {}, {}
        pcs_list, offs_list = [], []
        npc = noff = nsec = 0
        most = 0
        last_pcs = last_offs = None
        slot = slot0
        for (pcs, _, sec, offs, m), (tb, sb) in zip(flats, places):
            n, ns = pcs.size, sec.size
            live[slot] = (tb, n, sb, ns, offs)
            slot += 1
            if pcs is not last_pcs:
                p0 = pcs_at.get(id(pcs))
                if p0 is None:
                    p0 = pcs_at[id(pcs)] = npc
                    pcs_list.append(pcs)
                    npc += n
                last_pcs = pcs
            if offs is not last_offs:
                o0 = offs_at.get(id(offs))
                if o0 is None:
                    o0 = offs_at[id(offs)] = noff
                    offs_list.append(offs)
                    noff += offs.size
                last_offs = offs
            table += (tb, sb, p0, n, o0, offs.size, nsec, ns)
            nsec += ns
            if m > most:
                most = m
        self._room_for_requests(most)
        cat = np.concatenate
        return _start_warps(self._W, self._REGS, self._S, self._SW, self._C, self._pos0, self._X, self._TPC, self._TAUX,
                            self._SEC, c, t0, wid0, len(self.scheds), slot0, np.array(table, np.int64).reshape(-1, 8),
                            pcs_list[0] if len(pcs_list) == 1 else cat(pcs_list).astype(np.int32, copy=False),
                            cat([f[1] for f in flats]).astype(np.int32, copy=False),
                            cat([f[2] for f in flats]).astype(np.int64, copy=False),
                            (offs_list[0] if len(offs_list) == 1 else cat(offs_list)).astype(np.int64, copy=False))

    def _start_block(self, c, t0, wid0, slot0, blk):
        """:meth:`_start_cta` of a :class:`CtaBlock`: the same places and warps' rows, its arrays
        passed as they are (not gathered warp by warp)."""
        pcs, offs, bounds = blk.pcs, blk.offs, blk.bounds
        nw = len(blk.most)
        n = pcs.size
        places = self._places([(n, bounds[w + 1] - bounds[w]) for w in range(nw)], slot0)
        live = self._slot_trace
        no = offs.size
        table = []
        slot = slot0
        s0 = 0
        for (tb, sb), s1 in zip(places, bounds[1:]):
            ns = s1 - s0
            live[slot] = (tb, n, sb, ns, offs)
            slot += 1
            table += (tb, sb, 0, n, 0, no, s0, ns)
            s0 = s1
        self._room_for_requests(max(blk.most))
        return _start_warps(self._W, self._REGS, self._S, self._SW, self._C, self._pos0, self._X, self._TPC, self._TAUX,
                            self._SEC, c, t0, wid0, len(self.scheds), slot0, np.array(table, np.int64).reshape(-1, 8),
                            pcs.astype(np.int32, copy=False), np.ascontiguousarray(blk.aux, np.int32).reshape(-1),
                            np.ascontiguousarray(blk.sec, np.int64), offs.astype(np.int64, copy=False))

    def extend_traces(self, items):
        """Join the next window of their traces to resident warps' (``items``: ``(slot, warp view,
        the window's parts)``; a warp no longer in its slot is passed over). A warp's trace keeps
        only what it has not issued, then the window: moved to a new place in the trace buffers."""
        items = [(slot, view, parts) for slot, view, parts in items if self._slot_warp[slot] is view and not view.done]
        if not items:
            return
        flats = flatten_traces([parts for _, _, parts in items], self._unit, self._unit_key)
        W, cat = self._W, np.concatenate
        joined = []
        for (slot, view, parts), (pcs, aux, sec, offs, most) in zip(items, flats):
            tb, n, sb, ns, old_offs = self._slot_trace.pop(slot)
            pos = int(W[slot, K.W_POS])
            r0 = pos - int(self._pos0[slot])  # the next position to issue, in the buffer's trace
            keep = old_offs[old_offs >= r0]
            s0 = int(self._TAUX[tb + keep[0]]) if keep.size else sb + ns  # its first sector list
            rest_sec = self._SEC[s0:sb + ns]
            # the summaries not issued, then the window's: sector-list offsets from the new start
            both = cat((self._TAUX[tb + r0:tb + n], aux))
            both[keep - r0] -= s0
            new_offs = offs + (n - r0)
            both[new_offs] += rest_sec.size
            joined.append((slot, pos, (cat((self._TPC[tb + r0:tb + n], pcs)), both, cat((rest_sec, sec)),
                                       cat((keep - r0, new_offs)), most)))
            self._freed.append((tb, n, sb, ns))
            # what a hazard message may name: the parts not yet issued
            view.parts = list(view.parts) + [seg.pcs for seg, _ in parts]
            view._flat = None
            while len(view.parts) > 1 and view.base + len(view.parts[0]) <= pos - HAZARD_HISTORY:
                view.base += len(view.parts[0])
                view.parts.pop(0)
        self._make_room([f for _, _, f in joined])
        for slot, pos, flat in joined:
            pcs, tbase = self._load_trace(slot, flat)
            self._pos0[slot] = pos
            W[slot, K.W_TBASE] = tbase - pos
            W[slot, K.W_LEN] = pos + pcs.size

    def close_trace(self, slot, view):
        """The warp in ``slot`` has no more trace to come (its functional run has exited)."""
        if self._slot_warp[slot] is view:
            self._open[slot] = False

    def trace_room(self):
        """``(fewest positions any warp with more trace to come has loaded and not issued, the SM's
        cycle)``, or None when no such warp is resident."""
        room, found = _trace_room(self._W, self._open)
        if not found:
            return None
        return int(room), int(self._G[K.G_T])

    def flush_exits(self):
        """Take in the warps that exited since the last time, in the order they exited: their
        stall statistics, and their traces let go (a whole-GPU run would otherwise hold every
        CTA's), after the records of the CTAs the core started itself (:meth:`_sync`). The core
        takes exits in only when a CTA's last warp exits (the others' rows stay as they were until
        their CTA's slot is reused); a run stopped at a cycle calls this too."""
        self._sync()
        self._take_exits()
        self._fold_stalls()

    def _take_exits(self):
        """:meth:`flush_exits` but the statistics' dictionaries: the exited warps' traces let go,
        their stall counts summed and kept (in the order they exited) for :meth:`_fold_stalls`,
        which builds the per-warp dictionaries of many CTAs' warps at once."""
        slots, rows = _exited(self._W, self._X, self._stall_sum)
        if slots.size:
            self._stall_rows.append((self._let_go(slots.tolist()), rows))

    def _let_go(self, slots):
        """The warps of ``slots`` (a list, in the order they exited) taken in: their views done,
        their traces let go of (each slot keeps its trace's place for its next warp: X); returns
        their labels."""
        views, live = self._slot_warp, self._slot_trace
        if self.router is not None:  # (else no slot is open)
            self._open[slots] = False
        labels = []
        for slot in slots:
            view = views[slot]
            view.done = True
            view.parts = ()
            view._flat = None
            del live[slot]
            labels.append(view.label)
        return labels

    def _fold_stalls(self):
        """The stall counts :meth:`_take_exits` kept, into the statistics: the sums to the totals,
        a row to each warp (added to an earlier warp's of the same label)."""
        st = self.stats
        totals = st.stall_reasons
        for r, n in zip(STALL_REASONS, self._stall_sum.tolist()):
            totals[r] += n
        self._stall_sum[:] = 0
        kept = self._stall_rows
        if not kept:
            return
        self._stall_rows = []
        labels = [x for ls, _ in kept for x in ls]
        rows = kept[0][1] if len(kept) == 1 else np.concatenate([r for _, r in kept])
        if not isinstance(st.warp_stalls, WarpStalls):  # (replaced by a plain dictionary)
            st.warp_stalls = WarpStalls(st.warp_stalls)
        st.warp_stalls.add_rows(labels, rows)  # (each warp's dictionary made when it is read)

    def _cta_ended(self):
        """The core returned EXITED: the warp in ``G_EXIT_SLOT`` was its CTA's last (the core
        returns only then). Its warps' statistics, its slot freed, the next CTAs launched."""
        t = int(self._G[K.G_T])
        cta = self._slot_warp[int(self._G[K.G_EXIT_SLOT])].cta
        self._take_exits()  # (the statistics' dictionaries are built when the run ends or stops)
        self._ended(cta, t)
        self.resident -= 1
        self._ctas[cta.index] = None
        self._launch_ready_ctas(t + self.cta_launch)

    def _ended(self, cta, t):
        """CTA ``cta`` ended at cycle ``t`` (its warps' exits taken in): its record."""
        if not self.keep_branch_times:
            # its warps held as the CTA alone (WarpList.ended): their views are all alike
            views = [v for v in self._slot_warp[cta.slot0:cta.slot0 + self.wpc] if v is not None and v.cta is cta]
            for v in views:
                if not v.done or v.base or v.branch_times != ():
                    break
            else:
                self.all_warps.ended(cta, views)
        self.finished_ctas += 1
        self.cta_log.append((cta.cid, cta.start, t))

    def _sync(self):
        """The records of the CTAs the core ended and started since the last time (core._next_cta,
        logged in X), made in the order it did: each start's exits taken in (their stall counts, as
        :meth:`_take_exits`), the CTA that ended, the next one's views and places, as
        :meth:`_cta_ended` and :meth:`_launch_ready_ctas` make them."""
        X, xa = self._X, self._xa
        xb = xa + 1
        ncta = int(X[xb, K.XB_NCTA])
        if not ncta:
            return
        log = X[xa + 2:xa + 2 + ncta].tolist()
        e0 = xa + 2 + K.XL_ROWS
        exits = X[e0:e0 + int(X[xb, K.XB_NEXIT]), :7].copy()
        X[xb, K.XB_NCTA] = X[xb, K.XB_NEXIT] = 0
        places = X[:xa, K.X_TB:K.X_SN + 1].tolist()
        self._stall_sum += exits[:, 1:].sum(axis=0)
        exit_slots = exits[:, 0].tolist()
        staged = self.dispatcher.staged
        views, live, ctas, items = self._slot_warp, self._slot_trace, self._ctas, self.all_warps._items
        scheds = self.scheds
        nsched = len(scheds)
        wpc = self.wpc
        cta_log = self.cta_log
        ended = self.all_warps.ended
        router = self.router
        at = 0
        for c, start, end, seq, nw, resident, ne, wid0 in log:
            if ne > at:
                self._stall_rows.append((self._let_go(exit_slots[at:ne]), exits[at:ne, 1:]))
                at = ne
            # the CTA that ended (_ended: with no backward-branch times nor trace router, as the
            # core's SMs run, its warps' views are all alike and held as the CTA alone)
            cta = ctas[c]
            ended(cta, [v for v in views[cta.slot0:cta.slot0 + wpc] if v is not None and v.cta is cta])
            self.finished_ctas += 1
            cta_log.append((cta.cid, cta.start, end))
            cid, parts, flats = staged.pop(seq)
            self.dispatched.append((start, cid))
            slot0 = c * wpc
            cta = CtaView(cid, c, start, wid0, slot0)
            ctas[c] = cta
            label = f"cta{cid[0]},{cid[1]}.w"
            if type(flats) is CtaBlock:
                n, b, offs = flats.pcs.size, flats.bounds, flats.offs
                sizes = [(n, b[w + 1] - b[w], offs) for w in range(nw)]
            else:
                sizes = [(f[0].size, f[2].size, f[3]) for f in flats]
            slot = slot0
            for w, pcs in enumerate(parts):
                view = WarpView(wid0 + w, slot, scheds[slot % nsched], cta, label + str(w), pcs, False)
                views[slot] = view
                items.append(view)
                n, ns, offs = sizes[w]
                tb, _, sb, _ = places[slot]  # (the place of the latest warp in the slot: those before exit here)
                live[slot] = (tb, n, sb, ns, offs)
                slot += 1
            self._pos0[slot0:slot] = 0  # (whole traces, as _start_warps has them)
            if router is not None:
                self._open[slot0:slot] = False  # (a staged CTA's traces are complete)
            if resident > self.peak_warps:
                self.peak_warps = resident
        parts = flats = view = None

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

    _simpy = ReferenceSM._simpy

    def _run(self, quantum=256):
        self._begin(quantum)
        G = self._G
        solo = Solo(self)
        while True:
            status = solo.call()  # (it takes the memory system's current tables first)
            if self._after_call(status):
                break
            if status == K.YIELD:
                t = int(G[K.G_T])
                self.now = t
                yield t
                G[K.G_NEXT_YIELD] = t + quantum
        self._end()
        yield self.now

    def _begin(self, quantum):
        """Start running: launch the queued CTAs at the SM's clock, the first quantum from it."""
        self._wall = time.perf_counter()
        self._launch_ready_ctas(self.now)
        G = self._G
        G[K.G_T] = self.now
        G[K.G_SI] = 0
        G[K.G_PHASE] = 0
        G[K.G_NEXT_YIELD] = self.now + quantum

    def _before_call(self):
        memc = self._memc
        if memc is not None and memc._version != self._mem_version:
            self._pack()  # the memory system's tables grew (here or on another SM)

    def _after_call(self, status):
        """Python's part after the core returned ``status`` (a yield is the caller's): true when
        the SM has finished."""
        G = self._G
        if self._logged[K.XB_NCTA]:
            self._sync()  # (CTAs the core started)
        memc = self._memc
        if memc is not None and memc._I[K.I_ROOM]:
            memc._check_room()  # a read the core served left its tables too full: grow them first
        if G[K.G_WQ_N]:
            self._post_stores()
        if G[K.G_NBLOG] or G[K.G_NHLOG] or G[K.G_NILOG] or G[K.G_NSLOG]:
            self._drain()
        if status == K.MEM:
            memsys = self.memsys
            read_kw, write_kw = self._mem_kw
            n = int(G[K.G_REQ_N])
            sectors = self._REQ[:n]  # a view: the memory system reads it before the core runs again
            if G[K.G_REQ_KIND] == K.REQ_STG:
                memsys.write(int(G[K.G_REQ_NOW]), sectors, **write_kw)
            else:
                before = l2_read_counts(memsys)
                G[K.G_MEM_RESULT] = memsys.read(int(G[K.G_REQ_NOW]), sectors, **read_kw)
                if before is not None:  # the request's L2 hits and misses, to its instruction
                    after = l2_read_counts(memsys)
                    pc = int(G[K.G_CTX_PC])
                    self._CNT[PC_L2_HITS, pc] += after[0] - before[0]
                    self._CNT[PC_L2_MISSES, pc] += after[1] - before[1]
        elif status == K.EXITED:
            self._cta_ended()
        elif status == K.DONE:
            if self.warps_alive():
                raise SimulationError(f"SM {self.sm_id}: no warp can ever issue again at cycle {int(G[K.G_T])}")
            return True
        elif status not in (K.DRAIN, K.ROOM, K.YIELD):
            self._fail(status)
        return False

    def _end(self):
        """The run has ended (the last warp has exited and its stores are posted): the statistics."""
        self.flush_exits()
        G = self._G
        t = int(G[K.G_T])
        self.now = t
        st = self.stats
        st.cycles = max(st.cycles, t)
        st.sim_seconds += time.perf_counter() - self._wall
        # the core's run counters, read (and zeroed) in one pass: _END_FIELDS, then G_SHM_BUSY
        vals = G[_END_INDEX].tolist()
        G[_END_INDEX] = 0
        for name, v in zip(_END_NAMES, vals):
            setattr(st, name, getattr(st, name) + v)
        sh = self.shared
        sh.next_free = int(G[K.G_SHARED_FREE])
        sh.requests += vals[_END_SHARED_REQ]
        sh.total_wavefronts += vals[_END_SHARED_WF]
        sh.busy_cycles += vals[-1]
        self.l1.requests += vals[_END_TEX_REQ]
        self._export_l1()
        npc = len(self.kernel.instructions)
        st.add_per_pc(self._CNT[:, :npc].T)
        op_index, opcodes, _, _, _, sums = self._pc_sums
        n = self._CNT[PC_EXEC, :npc]
        issued, flops, reads, ffma = (n @ sums).tolist()
        st.warp_instructions += issued
        st.flops += flops
        st.operand_reads += reads
        st.ffma += ffma
        ran = np.flatnonzero(n)
        counts = st.opcode_counts
        for k, c in zip(op_index[ran].tolist(), n[ran].tolist()):  # (new opcodes in the order of the first pc that ran each)
            op = opcodes[k]
            counts[op] = counts.get(op, 0) + c
        st.opcode_counts = dict(sorted(counts.items(), key=lambda kv: -kv[1]))

    def _post_stores(self):
        """Hand the stores the core queued since its last return to the memory system, in order."""
        G = self._G
        base, used = int(G[K.G_WQ_BASE]), int(G[K.G_WQ_N])
        G[K.G_WQ_N] = 0
        queue = self._REQ[base:base + used]
        if self._write_queue is not None:
            self._write_queue(queue)
            return
        write_kw = self._mem_kw[1]
        i = 0
        while i < used:
            n = int(queue[i + 1])
            self.memsys.write(int(queue[i]), queue[i + 2:i + 2 + n], **write_kw)
            i += 2 + n

    def _drain(self):
        """Move what the core logged since the last return into Python lists."""
        G = self._G
        n = int(G[K.G_NBLOG])
        if n:
            if self.keep_branch_times:
                # each warp's times in the order logged, a run of them at a time
                warps = self.all_warps
                log = self._BLOG[:n]
                order = np.argsort(log[:, 0], kind="stable")
                wids = log[order, 0]
                times = log[order, 1].tolist()
                cuts = [0] + (np.flatnonzero(wids[1:] != wids[:-1]) + 1).tolist() + [n]
                for a, b in zip(cuts[:-1], cuts[1:]):
                    w = warps[int(wids[a])]
                    if w.branch_times == ():  # (placed while none were kept)
                        w.branch_times = []
                    w.branch_times.extend(times[a:b])
            G[K.G_NBLOG] = 0
        n = int(G[K.G_NILOG])
        if n:
            warps = self.all_warps
            rows = self._ILOG[:n].tolist()
            self.issue_log.extend((t, warps[wid].label, pc) for t, wid, pc, _ in rows)
            self.issue_done.extend(r[3] for r in rows)
            G[K.G_NILOG] = 0
        n = int(G[K.G_NSLOG])
        if n:
            warps = self.all_warps
            self.stall_log.extend((warps[wid].label, g, a, b, t, mid, end)
                                  for wid, g, a, b, t, mid, end in self._SLOG[:n].tolist())
            G[K.G_NSLOG] = 0
        n = int(G[K.G_NHLOG])
        if n:
            G[K.G_NHLOG] = 0
            for rec in self._HLOG[:n].tolist():
                self._hazard(*rec)

    # ---- messages ------------------------------------------------------------------------
    def _hazard(self, kind, wid, pc, t, reg, a, b, pos):
        st = self.static
        w = self.all_warps[wid]
        if kind == 0:
            src = self._earlier(w, pos, lambda q: reg in st.dsts[q])
            what = f"reads R{reg} at cycle {a}, {b - a} cycle(s) before the result of {src} is ready"
        elif kind == 1:
            src = self._earlier(w, pos, lambda q: reg in st.pdsts[q])
            what = f"reads P{reg} {b - t} cycle(s) before the result of {src} is ready"
        else:
            src = self._earlier(w, pos, lambda q: st.unit[q] in MEMORY and reg in st.srcs[q])
            what = f"overwrites R{reg} before {src} has read it (read at cycle {b})"
        instr = self.kernel.instructions[pc]
        self._hazard_text(f"{instr.where}: hazard in warp {w.label} at cycle {t}: {instr.full_opcode} {what}; "
                          f"control codes do not cover it (real hardware would silently compute garbage)")

    def _earlier(self, w, pos, match):
        """``"OPCODE at file:line"`` of the latest instruction before position ``pos`` of the
        warp's trace that satisfies ``match(pc)``."""
        for q in reversed(w.flat_pcs()[:max(0, pos - w.base)]):
            if match(q):
                i = self.kernel.instructions[q]
                return f"{i.full_opcode} at {i.where}"
        return "an earlier instruction"

    def _fail(self, status):
        G = self._G
        if status == K.ERR_LIMIT:
            raise SimulationError(f"{self.kernel.filename}: kernel {self.kernel.name} ran past the cycle limit "
                                  f"of {self.max_cycles} cycles on SM {self.sm_id} (--max-cycles N sets it)")
        if status == K.ERR_TRACE_END:
            instr = self.kernel.instructions[int(G[K.G_ERR_PC])]
            w = self._slot_warp[int(G[K.G_ERR_SLOT])]
            raise SimulationError(f"{instr.where}: trace of warp {w.label} ends without EXIT")
        if status == K.ERR_DEADLOCK:
            self._deadlock(int(G[K.G_T]))
        raise HazardError("hazard in strict mode")  # strict hazards are raised while draining

    def _deadlock(self, t):
        W, S, SW, C = self._W, self._S, self._SW, self._C
        for s in range(len(self.scheds)):
            for slot in SW[s, :S[s, K.S_NW]].tolist():
                if W[slot, K.W_AT_BAR]:
                    w = self._slot_warp[slot]
                    pos = int(W[slot, K.W_POS])
                    # the reference names the instruction before the current one within the
                    # current part of the trace, else the current one
                    start = w.base
                    for pcs in w.parts:
                        if pos < start + len(pcs):
                            break
                        start += len(pcs)
                    pc = w.flat_pcs()[pos - 1 - w.base] if pos > start else int(W[slot, K.W_PC])
                    instr = self.kernel.instructions[pc]
                    c = w.cta.index
                    raise SimulationError(
                        f"{instr.where}: BAR.SYNC can never complete (CTA ({w.cta.cid[0]},{w.cta.cid[1]}): "
                        f"{int(C[c, K.C_NARRIVED])} of {int(C[c, K.C_LIVE])} live warps arrived) at cycle {t}")
        raise SimulationError(f"SM {self.sm_id}: no warp can ever issue again at cycle {t}")

    # ---- queries ---------------------------------------------------------------------------
    loop_cycles_per_iteration = ReferenceSM.loop_cycles_per_iteration

    def issued(self):
        """Warp instructions issued so far (the statistics are summed when the run ends)."""
        return int(self._CNT[PC_EXEC].sum())

    def warps_alive(self):
        return bool(self._S[:, K.S_NW].any()) or bool(self.pending) or \
            (bool(self.dispatcher) and self.resident < self.max_ctas)

