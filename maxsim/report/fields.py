"""The fields of a run report (text and ``--json``), assembled from the parts' results.

Top-level ``register_bank_conflicts`` / ``reuse_hit_rate`` are the whole run's figures from the
static analysis weighted by execution counts (comparable with maxas's published figures); the timing
model's own counts for the simulated SM, which also see warp switches and late memory reads, carry
an ``sm_`` prefix.
"""

from __future__ import annotations

from ..analysis import analyze_banks, executed_bank_figures

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
    out["resident_ctas"] = sm.max_ctas
    out["residency_limited_by"] = sm.limited_by
    out["hazard_messages"] = sm.stats.hazards[:20]
    return out
