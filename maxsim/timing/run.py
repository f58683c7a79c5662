"""Time a kernel launch on one SM: functional execution with a trace, then the SM timing model."""

from __future__ import annotations

import time

import simpy

from ..arch.config import load_config
from ..functional.launch import launch
from ..functional.trace import TraceRecorder
from ..functional.watchdog import cycle_limit
from .memory_system import MemorySystem
from .sm import SM
from .summaries import make_summariser


def simulate(kernel, grid, block, params=(), memory=None, textures=None, *, cfg=None, ctas=None,
             hazards="warn", max_cycles=None, max_instructions=None, memory_system=None, log=False,
             progress=None, expected_instructions=None):
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
    """
    cfg = cfg if cfg is not None else load_config()
    t0 = time.perf_counter()
    rec = TraceRecorder(make_summariser(cfg))
    res = launch(kernel, grid, block, params, memory, textures, recorder=rec, ctas=ctas,
                 max_instructions=max_instructions, expected_instructions=expected_instructions,
                 progress=None if progress is None else
                 (lambda d, n, what, unit: progress(d, n, "functional run (traced, timed SM)", unit)))
    functional_seconds = time.perf_counter() - t0
    gx, gy = (grid, 1) if isinstance(grid, int) else (tuple(grid) + (1,))[:2]
    cta_list = [(x, y) for y in range(gy) for x in range(gx)] if ctas is None else [tuple(c) for c in ctas]
    wpc = (block + 31) // 32
    ms = memory_system if memory_system is not None else MemorySystem(cfg)
    sm = SM(cfg, kernel, block, ms, hazards=hazards, log=log,
            max_cycles=cycle_limit(res.warp_instructions, max_cycles))
    traces = res.trace
    for i, cid in enumerate(cta_list):
        sm.add_cta(cid, [traces[i * wpc + w] for w in range(wpc)])
    env = simpy.Environment()
    proc = sm.run(env)
    if progress is None:
        env.run()
    else:
        watch_progress(env, [proc], [sm], res.warp_instructions, progress)
    st = sm.stats
    st.thread_instructions = res.thread_instructions
    st.warps_per_scheduler = sm.max_ctas * wpc / cfg.sm.schedulers
    st.l2_hits = ms.l2_read_hits
    st.l2_misses = ms.l2_read_misses
    st.dram_bytes = ms.dram_bytes_read + ms.dram_bytes_written
    st.functional_seconds = functional_seconds
    return res, sm


PROGRESS_CYCLES = 2048  # simulated cycles between two progress reports of a timing run


def watch_progress(env, procs, sms, total, progress):
    """Run ``env`` until the SM processes ``procs`` end, telling ``progress`` every
    ``PROGRESS_CYCLES`` simulated cycles the warp instructions the ``sms`` have issued of ``total``
    (the functional run's count). It only reads the counters: the simulation is unchanged."""
    def watch():
        while True:
            progress(sum(sm.issued() for sm in sms), total, "timing", "warp instructions")
            yield env.timeout(PROGRESS_CYCLES)
    env.process(watch())
    env.run(until=env.all_of(procs))
    progress(total, total, "timing", "warp instructions")
