"""Plain-text reports of a run, for people (``--json`` gives the same keys for machines)."""

from __future__ import annotations

_ORDER = (
    ("workload", "workload"), ("kernel", "kernel"), ("config", "config"), ("m", "M"), ("n", "N"),
    ("k", "K"), ("grid", "grid"), ("block", "block"), ("verified", "result verified"),
    ("max_abs_error", "max |error|"), ("tolerance", "tolerance"),
    ("gpu", "GPU"), ("gpu_waves", "waves of resident CTAs"),
    ("gpu_predicted_seconds", "predicted time on the GPU (s)"),
    ("gpu_predicted_gflops", "predicted GFLOPS on the GPU"),
    ("warp_instructions", "warp instructions"), ("sm_warp_instructions", "warp instructions (timed SM)"),
    ("cycles", "cycles (timed SM)"), ("ipc", "IPC"),
    ("gflops", "GFLOPS (SM, config clock)"), ("ffma_pipe_utilisation", "FFMA pipe utilisation"),
    ("cycles_per_loop_iteration", "cycles per main-loop iteration"),
    ("dual_issues", "dual issues"), ("register_bank_conflicts", "register bank conflicts"),
    ("bank_conflict_cycles", "bank conflict cycles"), ("delayed_bank_conflicts", "delayed bank conflicts"),
    ("reuse_hit_rate", "reuse hit rate"), ("sm_register_bank_conflicts", "bank conflicts (timed SM)"),
    ("sm_reuse_hit_rate", "reuse hit rate (timed SM)"), ("sm_ctas", "CTAs on the timed SM"),
    ("registers_per_thread", "registers per thread"), ("resident_ctas_per_sm", "resident CTAs per SM"),
    ("warps_per_scheduler", "resident warps per scheduler"),
    ("theoretical_occupancy", "theoretical occupancy"), ("occupancy_limited_by", "occupancy limited by"),
    ("occupancy_limits", "CTAs per SM allowed by"),
    ("shared_bank_conflicts", "shared bank conflicts (replays)"),
    ("texture_hit_rate", "texture hit rate"), ("l2_hit_rate", "L2 hit rate"), ("dram_bytes", "DRAM bytes"),
    ("hazards", "control-code hazards"), ("sim_seconds", "timing model wall time (s)"),
    ("warp_instructions_per_second", "simulated warp instructions / s"),
)


_METRIC_UNITS = {"l2_tex_read_hit_rate": "%", "tex_cache_hit_rate": "%", "dram_read_throughput": "GB/s",
                 "dram_write_throughput": "GB/s", "l2_read_throughput": "GB/s", "tex_cache_throughput": "GB/s",
                 "dram_utilization": "(0-10)", "dram_utilization_fraction": "of peak",
                 "achieved_occupancy": "of max warps"}


def _fmt(v):
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e6):
            return f"{v:.4g}"
        return f"{v:,.4f}".rstrip("0").rstrip(".") if abs(v) < 100 else f"{v:,.1f}"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, (list, tuple)):
        return " x ".join(str(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k} {_fmt(x)}" for k, x in v.items())
    return str(v)


def format_run(out: dict) -> str:
    lines = []
    for key, label in _ORDER:
        if key in out and out[key] is not None:
            lines.append(f"{label:34s} {_fmt(out[key])}")
    if "stall_reasons" in out:
        total = sum(out["stall_reasons"].values()) or 1
        lines.append("stall reasons (warp-cycles):")
        for r, n in sorted(out["stall_reasons"].items(), key=lambda kv: -kv[1]):
            lines.append(f"  {r:32s} {n:>12,}  {100 * n / total:5.1f}%")
    if out.get("profiler_metrics"):
        lines.append("profiler metrics (nvprof names; the timed SM alone against the L2 and DRAM):")
        for name, v in out["profiler_metrics"].items():
            lines.append(f"  {name:32s} {_fmt(v):>12s} {_METRIC_UNITS.get(name, '')}".rstrip())
    if out.get("opcode_counts"):
        lines.append("warp instructions by opcode:")
        for op, n in list(out["opcode_counts"].items())[:16]:
            lines.append(f"  {op:32s} {n:>12,}")
    for msg in out.get("hazard_messages", [])[:5]:
        lines.append("warning: " + msg)
    return "\n".join(lines)
