"""Time a kernel launch on one SM: functional execution with a trace, then the SM timing model."""

from __future__ import annotations

import time

from ..arch.config import load_config
from ..errors import SimulationError
from ..functional.launch import launch
from ..functional.trace import TraceRecorder
from ..functional.watchdog import cycle_limit
from .clock import advance
from .memory_system import MemorySystem
from .sm import SM, flatten_small_queued
from .summaries import make_summariser


def simulate(kernel, grid, block, params=(), memory=None, textures=None, *, cfg=None, ctas=None,
             hazards="warn", max_cycles=None, max_instructions=None, memory_system=None, log=False,
             progress=None, expected_instructions=None, launched=None, timing_only=False):
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
        traces, thread_instructions = _launched_traces(launched, cta_list, wpc, summarise.key)
        index = {c: i for i, c in enumerate(res.ctas)}
        divergent = sum(res.cta_threads(index[c], 1, res.warp_divergent) for c in cta_list)
        idle = sum(res.cta_threads(index[c], 1, res.warp_idle) for c in cta_list)
    functional_seconds = time.perf_counter() - t0
    ms = memory_system if memory_system is not None else MemorySystem(cfg)
    # the launch's instructions bound the timed CTAs' (a launch traced earlier may hold more CTAs)
    sm = SM(cfg, kernel, block, ms, hazards=hazards, log=log,
            max_cycles=cycle_limit(res.warp_instructions, max_cycles))
    for i, cid in enumerate(cta_list):
        sm.add_cta(cid, [traces[i * wpc + w] for w in range(wpc)])
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
    return res, sm


def _launched_traces(res, cta_list, wpc, key):
    """The traces of ``cta_list``'s warps in a launch result (numbered 0.. in ``cta_list`` order)
    and their thread instructions."""
    if res.trace is None:
        raise SimulationError("the launch given to time was run without a trace recorder")
    if res.trace_key != key:
        raise SimulationError(f"the launch given to time was traced for another configuration "
                              f"({res.trace_key} instead of {key})")
    index = {c: i for i, c in enumerate(res.ctas)}
    missing = [c for c in cta_list if c not in index]
    if missing:
        raise SimulationError(f"CTA {missing[0]} is not in the launch given to time")
    traces, threads = {}, 0
    for j, cid in enumerate(cta_list):
        i = index[cid]
        for w in range(wpc):
            traces[j * wpc + w] = res.trace[i * wpc + w]
        threads += res.cta_threads(i, 1)
    return traces, threads


SOLO_QUANTUM = 256  # cycles one SM runs between two looks at the clock (a simulator setting: with
# one SM nothing else uses the memory system, so it only sets how often progress can be told)
