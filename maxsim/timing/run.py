"""Time a kernel launch on one SM: functional execution with a trace, then the SM timing model."""

from __future__ import annotations

import collections
import time

import attrs
import numpy as np

from ..arch.config import load_config
from ..errors import SimulationError
from ..functional.launch import launch
from ..functional.trace import TraceRecorder
from ..functional.watchdog import cycle_limit
from .clock import advance, clock_name
from .cores import core_name
from .memory_system import MemorySystem
from .sm import FLATTEN_TOGETHER_POSITIONS, SM, flatten_small_queued, flatten_traces, kernel_tables
from .summaries import make_summariser


def simulate(kernel, grid, block, params=(), memory=None, textures=None, *, cfg=None, ctas=None,
             hazards="warn", max_cycles=None, max_instructions=None, memory_system=None, log=False,
             progress=None, expected_instructions=None, launched=None, timing_only=False, reuse=False):
    """Run ``kernel`` functionally and in time on one SM.

    ``ctas`` selects which CTAs (x, y) the SM runs (default: the whole grid, in launch order,
    as many resident at once as fit). Returns ``(launch_result, sm)``; ``sm.stats`` holds the
    timing statistics; with ``log=True``, ``sm.issue_log`` lists ``(cycle, warp label, pc)`` of
    every issued instruction (and ``sm.issue_done``, ``sm.stall_log`` what
    :mod:`maxsim.report.timeline` draws).

    ``progress`` (``progress(done, total, what, unit)``, see :mod:`maxsim.report.progress`) is told
    the CTAs done by the functional run (within a batch of CTAs estimated against
    ``expected_instructions``, the warp instructions the CTAs will execute, when known), then the
    warp instructions issued by the timing run.

    ``launched``: a traced :class:`~maxsim.functional.launch.LaunchResult` that ran (at least) the
    CTAs ``ctas`` (e.g. the whole grid, run once for its results): the SM times their traces
    instead of running them again; ``memory`` and ``textures`` are then not used. ``timing_only``:
    the functional run computes only what the trace needs (see :mod:`maxsim.functional.slicing`);
    its memory results are not valid.

    ``reuse`` (with ``launched``, a new memory system, no log and no progress; compiled cores): a
    run whose inputs are those of one of the last :data:`REUSED_RUNS` runs made so (the kernel,
    config, block, CTA ids, hazard mode, cycle limit, thread-instruction and divergence counts,
    every warp's flattened trace compared whole, and the clock in effect) is not run again: the SM
    returned is a copy of that run's, its statistics the same (the timing model is deterministic)
    but for ``functional_seconds`` (this call's; ``sim_seconds`` stays the wall time of the run
    that produced the figures). A kernel launched again and again over the same addresses (a
    time-stepped stencil) is timed once. Only short runs (at most
    :data:`~maxsim.timing.sm.FLATTEN_TOGETHER_POSITIONS` trace positions) that reported no hazard
    are kept.
    """
    cfg = cfg if cfg is not None else load_config()
    t0 = time.perf_counter()
    gx, gy = (grid, 1) if isinstance(grid, int) else (tuple(grid) + (1,))[:2]
    cta_list = [(x, y) for y in range(gy) for x in range(gx)] if ctas is None else [tuple(c) for c in ctas]
    wpc = (block + 31) // 32
    summarise = make_summariser(cfg)
    if launched is None:
        rec = TraceRecorder(summarise)
        res = launch(kernel, grid, block, params, memory, textures, recorder=rec, ctas=ctas,
                     max_instructions=max_instructions, expected_instructions=expected_instructions,
                     timing_only=timing_only,
                     progress=None if progress is None else
                     (lambda d, n, what, unit: progress(d, n, "functional run (traced, timed SM)", unit)))
        traces = res.trace
        thread_instructions = res.thread_instructions
        divergent, idle = res.divergent_branches, int(res.warp_idle.sum())
    else:
        res = launched
        traces, warps = _launched_traces(launched, cta_list, wpc, summarise.key)
        thread_instructions = int(res.warp_threads[warps].sum())
        divergent = int(res.warp_divergent[warps].sum())
        idle = int(res.warp_idle[warps].sum())
    functional_seconds = time.perf_counter() - t0
    # the launch's instructions bound the timed CTAs' (a launch traced earlier may hold more CTAs)
    limit = cycle_limit(res.warp_instructions, max_cycles)
    key = flats = None
    if reuse and launched is not None and memory_system is None and not log and progress is None \
            and core_name(None) == "compiled":
        key, flats = _run_key(kernel, cfg, block, cta_list, [traces[i] for i in range(len(cta_list) * wpc)],
                              (hazards, limit, thread_instructions, divergent, idle))
        if key is not None:
            hit = _RUNS.get(key)
            if hit is not None and hit[0] is kernel and hit[1] is cfg:
                _RUNS.move_to_end(key)
                return res, _copy_of(hit[2], functional_seconds)
    ms = memory_system if memory_system is not None else MemorySystem(cfg)
    sm = SM(cfg, kernel, block, ms, hazards=hazards, log=log, max_cycles=limit)
    for i, cid in enumerate(cta_list):
        sm.add_cta(cid, [traces[i * wpc + w] for w in range(wpc)])
    if flats is not None:  # flattened for the key: the SM loads these (as flatten_small_queued would)
        for i, cid in enumerate(cta_list):
            sm._flat_of[cid] = flats[i * wpc:(i + 1) * wpc]
    else:
        flatten_small_queued([sm])
    advance([sm], SOLO_QUANTUM, progress=progress, total=res.warp_instructions)
    st = sm.stats
    st.thread_instructions = thread_instructions
    st.divergent_branches = divergent
    st.idle_lanes = idle
    st.warps_per_scheduler = sm.max_ctas * wpc / cfg.sm.schedulers
    st.l2_hits = ms.l2_read_hits
    st.l2_misses = ms.l2_read_misses
    st.dram_bytes = ms.dram_bytes_read + ms.dram_bytes_written
    st.functional_seconds = functional_seconds
    if key is not None and not st.hazards and type(sm) is SM:
        sm.run_key = key  # (the inputs it was run for: its copies say so too)
        _RUNS[key] = (kernel, cfg, _copy_of(sm, functional_seconds))
        while len(_RUNS) > REUSED_RUNS:
            _RUNS.popitem(last=False)
    return res, sm


# the SMs of the last runs made with ``reuse`` (simulate), by their inputs: (kernel, config, SM)
_RUNS = collections.OrderedDict()
REUSED_RUNS = 4  # runs kept (a simulator setting: each holds an SM and its memory system)


def _run_key(kernel, cfg, block, cta_list, traces, counts):
    """The inputs of a timed SM's run of ``traces`` (the CTAs' warps in order) as a key, and the
    warps' flattened traces (:func:`~maxsim.timing.sm.flatten_traces`, as the SM loads them); (None,
    None) for a run too long to keep."""
    total = 0
    for tr in traces:
        for seg, _ in tr.parts:
            total += len(seg.pcs)
        if total > FLATTEN_TOGETHER_POSITIONS:
            return None, None
    _, tables = kernel_tables(kernel, cfg)
    unit, unit_key = tables[3], tables[4]
    flats = flatten_traces([tr.parts for tr in traces], unit, unit_key)
    # (loading a trace moves its offsets: the key holds copies of the arrays' bytes, taken now)
    data = tuple(part for pcs, aux, sec, offs, most in flats
                 for part in (pcs.tobytes(), aux.tobytes(), sec.tobytes(), offs.tobytes(), most))
    return (id(kernel), id(cfg), block, tuple(cta_list), counts, clock_name(None), data), flats


def _copy_of(sm, functional_seconds):
    """A copy of the finished SM ``sm`` whose statistics are a copy with ``functional_seconds``
    (the rest of the SM shared: nothing changes it once its run has ended)."""
    new = object.__new__(type(sm))
    new.__dict__.update(sm.__dict__)
    new.stats = attrs.evolve(sm.stats, functional_seconds=functional_seconds)
    return new


def _launched_traces(res, cta_list, wpc, key):
    """The traces of ``cta_list``'s warps in a launch result (numbered 0.. in ``cta_list`` order)
    and those warps' numbers in the result (an array, to sum its per-warp counts over)."""
    if res.trace is None:
        raise SimulationError("the launch given to time was run without a trace recorder")
    if res.trace_key != key:
        raise SimulationError(f"the launch given to time was traced for another configuration "
                              f"({res.trace_key} instead of {key})")
    index = {c: i for i, c in enumerate(res.ctas)}
    missing = [c for c in cta_list if c not in index]
    if missing:
        raise SimulationError(f"CTA {missing[0]} is not in the launch given to time")
    traces, warps = {}, []
    for j, cid in enumerate(cta_list):
        i = index[cid]
        for w in range(wpc):
            traces[j * wpc + w] = res.trace[i * wpc + w]
            warps.append(i * wpc + w)
    return traces, np.array(warps, dtype=np.int64)


SOLO_QUANTUM = 256  # cycles one SM runs between two looks at the clock (a simulator setting: with
# one SM nothing else uses the memory system, so it only sets how often progress can be told)
