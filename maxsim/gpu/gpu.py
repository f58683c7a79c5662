"""A GPU of many SMs sharing one L2 and DRAM, with a block dispatcher.

CTAs go to the SMs round-robin (CTA 0 to SM 0, CTA 1 to SM 1, ...) until every SM holds as many
as fit; each further CTA goes to the SM whose slot frees first. That gives full waves and a tail
wave, as on the hardware. The SMs are simpy processes that advance in quanta of
``QUANTUM`` cycles, so their requests reach the shared L2/DRAM roughly in time order (the
bandwidth servers tolerate the small disorder, see :class:`~maxsim.timing.memory_system.BandwidthServer`).
"""

from __future__ import annotations

import collections
import time

import attrs
import simpy

from ..functional.launch import launch
from ..functional.trace import TraceRecorder
from ..timing.memory_system import MemorySystem
from ..timing.sm import SM
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


def simulate_gpu(kernel, grid, block, params=(), memory=None, textures=None, *, cfg, ctas=None,
                 hazards="warn", max_instructions=None, progress=None, memory_system=None):
    """Run the kernel functionally, then every CTA in time on ``cfg.gpu.sms`` SMs (sharing
    ``memory_system``, by default a new :class:`~maxsim.timing.memory_system.MemorySystem`).

    ``progress`` (``progress(done, total, what, unit)``, see :mod:`maxsim.report.progress`) is told
    the CTAs done by the functional run, then the warp instructions issued by all SMs."""
    t0 = time.perf_counter()
    rec = TraceRecorder(make_summariser(cfg))
    res = launch(kernel, grid, block, params, memory, textures, recorder=rec, ctas=ctas,
                 max_instructions=max_instructions, progress=progress)
    gx, gy = (grid, 1) if isinstance(grid, int) else (tuple(grid) + (1,))[:2]
    cta_list = [(x, y) for y in range(gy) for x in range(gx)] if ctas is None else [tuple(c) for c in ctas]
    wpc = (block + 31) // 32
    queue = collections.deque((cid, [res.trace[i * wpc + w] for w in range(wpc)])
                              for i, cid in enumerate(cta_list))
    ms = memory_system if memory_system is not None else MemorySystem(cfg)
    sms = [SM(cfg, kernel, block, ms, hazards=hazards, sm_id=i) for i in range(cfg.gpu.sms)]
    per_sm = sms[0].max_ctas
    for _ in range(per_sm):  # the first wave, round-robin over the SMs
        for sm in sms:
            if queue:
                sm.add_cta(*queue.popleft())
    for sm in sms:
        sm.dispatcher = queue
    env = simpy.Environment()
    used = [sm for sm in sms if sm.pending]
    procs = [sm.run(env, quantum=QUANTUM) for sm in used]
    if progress is None:
        env.run()
    else:
        from ..timing.run import watch_progress
        watch_progress(env, procs, used, res.warp_instructions, progress)
    cycles = max(sm.now for sm in used)
    total = Stats()
    total.clock_hz = cfg.clock_hz
    total.schedulers = cfg.sm.schedulers * len(used)
    for sm in used:
        st = sm.stats
        for f in ("warp_instructions", "ffma", "flops", "dual_issues", "bank_conflicts", "bank_conflict_cycles",
                  "delayed_conflicts", "reuse_hits", "operand_reads", "shared_requests", "shared_wavefronts",
                  "tex_requests", "tex_sectors", "tex_hits", "stores", "sim_seconds"):
            setattr(total, f, getattr(total, f) + getattr(st, f))
        for k, v in st.opcode_counts.items():
            total.opcode_counts[k] = total.opcode_counts.get(k, 0) + v
        for k, v in st.stall_reasons.items():
            total.stall_reasons[k] += v
        for label, reasons in st.warp_stalls.items():  # warp labels name the CTA: unique on the GPU
            total.warp_stalls[f"sm{sm.sm_id}.{label}"] = reasons
        total.hazards.extend(st.hazards[:100])
    total.cycles = cycles
    total.l2_hits, total.l2_misses = ms.l2_read_hits, ms.l2_read_misses
    total.dram_bytes = ms.dram_bytes_read + ms.dram_bytes_written
    total.functional_seconds = 0.0
    seconds = cfg.cycles_to_seconds(cycles) + cfg.gpu.launch_overhead_us * 1e-6
    return GpuResult(cycles=cycles, seconds=seconds, sms_used=len(used),
                     waves=len(cta_list) / (per_sm * len(sms)), resident_ctas=per_sm, stats=total,
                     l2_hit_rate=ms.l2_hit_rate, dram_bytes=total.dram_bytes, launch=res,
                     sim_seconds=time.perf_counter() - t0, sms=used)
