"""The fields of a run report (text and ``--json``), assembled from the parts' results.

Top-level ``register_bank_conflicts`` / ``reuse_hit_rate`` are the whole run's figures from the
static analysis weighted by execution counts (comparable with maxas's published figures); the timing
model's own counts for the simulated SM, which also see warp switches and late memory reads, carry
an ``sm_`` prefix.

``timed_sm_profiler_metrics`` are nvprof's metrics (see :mod:`maxsim.report.metrics`) of the timed SM:
it runs alone against the whole L2 and DRAM, so its hit rates and throughputs are one SM's, not the
GPU's. The launch's own figures, ``gpu_profiler_metrics``, come from the whole-GPU prediction
(:meth:`maxsim.host.LaunchReport.fields`); ``profiler_metrics`` is the GPU's when there is a
prediction with memory counters, else the timed SM's, and ``profiler_metrics_of`` says which
("gpu" or "timed_sm").
"""

from __future__ import annotations

from ..analysis import analyze_banks, executed_bank_figures
from ..errors import SimulationError
from ..timing.occupancy import occupancy
from .metrics import profiler_metrics, sm_counters
from .source import instruction_rows

_SM_PREFIXED = ("register_bank_conflicts", "reuse_hits", "operand_reads", "reuse_hit_rate",
                "warp_instructions", "opcode_counts")


def functional_fields(kernel, launch_result) -> dict:
    out = {"warp_instructions": launch_result.warp_instructions,
           "opcode_counts": launch_result.opcode_counts}
    out.update(executed_bank_figures(analyze_banks(kernel), launch_result.per_instruction))
    return out


def timing_fields(sm) -> dict:
    out = {}
    for key, value in sm.stats.to_dict().items():
        out[("sm_" + key) if key in _SM_PREFIXED else key] = value
    out["cycles_per_loop_iteration"] = sm.loop_cycles_per_iteration()
    out["hazard_messages"] = sm.stats.hazards[:20]
    seconds = sm.stats.cycles / sm.cfg.clock_hz
    # the clock its cycles become time at: the nominal one x gpu.effective_clock_fraction
    out["sm_clock_mhz"] = sm.cfg.clock_hz / 1e6
    out["timed_sm_profiler_metrics"] = profiler_metrics(sm_counters(sm), seconds, sm.cfg)
    # per instruction (maxsim.report.source): each column sums to the totals above
    out["instructions"] = instruction_rows(sm)
    return out


def occupancy_fields(kernel, block, cfg) -> dict:
    """Residency of the kernel on one SM: CTAs, warps per scheduler, registers per thread, the
    limiting resource and the CTAs each resource alone allows (empty if not one CTA fits)."""
    try:
        occ = occupancy(kernel, block, cfg)
    except SimulationError:
        return {}
    return {"registers_per_thread": occ.registers, "resident_ctas_per_sm": occ.ctas,
            "warps_per_scheduler": occ.warps_per_scheduler, "theoretical_occupancy": occ.theoretical,
            "occupancy_limited_by": occ.limited_by, "occupancy_limits": dict(occ.limits)}
