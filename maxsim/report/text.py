"""Plain-text reports of a run, for people (``--json`` gives the same keys for machines)."""

from __future__ import annotations

_ORDER = (
    ("workload", "workload"), ("kernel", "kernel"), ("config", "config"), ("m", "M"), ("n", "N"),
    ("k", "K"), ("grid", "grid"), ("block", "block"), ("verified", "result verified"),
    ("result_checked", "result checked"),
    ("max_abs_error", "max |error|"), ("tolerance", "tolerance"),
    ("gpu", "GPU"), ("gpu_waves", "waves of resident CTAs"),
    ("seconds", "predicted time on the GPU (s)"),
    ("cycles", "predicted cycles on the GPU"),
    ("gflops", "predicted GFLOPS on the GPU"),
    ("gpu_prediction_method", "how predicted"), ("gpu_simulated_share", "share of the launch simulated"),
    ("warp_instructions", "warp instructions"),
    ("functional_warp_instructions", "warp instructions (CTAs run)"),
    ("sm_warp_instructions", "warp instructions (timed SM)"),
    ("sm_cycles", "cycles (timed SM)"), ("sm_ipc", "IPC (timed SM)"),
    ("divergent_branches", "divergent branches"), ("simd_efficiency", "SIMD efficiency (active lanes/32)"),
    ("sm_clock_mhz", "SM clock in effect (MHz)"), ("sm_gflops", "GFLOPS (timed SM, clock in effect)"),
    ("ffma_pipe_utilisation", "FFMA pipe utilisation"),
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
    ("gpu_texture_hit_rate", "texture hit rate (whole GPU)"), ("gpu_l2_hit_rate", "L2 hit rate (whole GPU)"),
    ("gpu_dram_bytes", "DRAM bytes (whole GPU)"),
    ("texture_hit_rate", "texture hit rate (timed SM)"), ("l2_hit_rate", "L2 hit rate (timed SM)"),
    ("dram_bytes", "DRAM bytes (timed SM)"),
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


# What each stall reason means, in the words of the summary (maxsim.timing.stats.STALL_REASONS)
# printed under a sampled prediction marked dram_bound (maxsim.gpu.sampling, DRAM_SATURATED)
DRAM_BOUND_WARNING = ("warning: DRAM busy {busy:.0f}% of the sampled steady state: when DRAM is saturated, "
                      "later waves can drift apart and lose the data they share, which the sampled prediction "
                      "does not follow (-41% to +2% against full simulations there); "
                      "--gpu-method full simulates every CTA")

STALL_WORDS = {
    "stall_count": "waiting out the control codes' stall counts",
    "dependency": "waiting on a dependency barrier: a memory or other variable-latency result",
    "barrier_wait": "waiting at BAR.SYNC for the rest of the CTA",
    "memory_throttle": "memory queue full",
    "pipe_busy": "pipe busy or register bank conflict",
    "not_selected": "ready, but the scheduler issued another warp",
}


def _count(v):
    return f"{v:,}"


def _gflops(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def _time(seconds):
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def summarise(out: dict, peak_gflops=None, sms=None, reference_loop_cycles=None, reference="maxas",
              reference_warps_per_scheduler=None) -> dict:
    """The answer of a run in a few lines of words, and the figures behind them.

    ``out``: the fields of a run (``run_workload`` or ``run_sass_file``); ``peak_gflops``: the
    config's FP32 peak (``cfg.peak_gflops``) and ``sms`` its SM count, to give a share of the peak;
    ``reference_loop_cycles``: a published figure of cycles per main-loop iteration to set the
    run's against, measured at ``reference_warps_per_scheduler`` resident warps per scheduler.
    Returns a dict of the figures with ``"text"``, the lines.
    """
    s = {}
    lines = []
    what = str(out.get("workload", "?"))
    kernel = out.get("kernel")
    head = what if kernel in (None, what) else f"{what} (kernel {kernel})"
    head += f" on {out.get('config', '?')}"
    if out.get("gpu"):
        head += f" ({out['gpu']})"
    parts = []
    if "m" in out:
        m, n, k = out["m"], out["n"], out["k"]
        parts.append(f"M=N=K={m}" if m == n == k else f"M={m} N={n} K={k}")
    if "grid" in out:
        grid = " x ".join(str(x) for x in out["grid"])
        parts.append(f"grid {grid} CTAs of {out.get('block', '?')} threads")
    s["ran"] = head + (": " + ", ".join(parts) if parts else "")
    lines.append(s["ran"])
    if "verified" in out:
        s["verified"] = bool(out["verified"])
        s["verified_against"] = "numpy (float64 product, fp32 error bound per element)"
        err, tol = out.get("max_abs_error"), out.get("tolerance")
        checked = out.get("result_checked")
        part = "" if checked in (None, "whole C") else f" on {checked}"
        if checked is not None:
            s["result_checked"] = checked
        if s["verified"]:
            lines.append(f"result: verified against numpy{part}: max |error| {err:.2g} within the fp32 "
                         f"error bound ({tol:.2g})")
        else:
            lines.append(f"result: NOT verified{part}: max |error| {err:.2g} against numpy, error bound {tol:.2g}")
    if out.get("gflops") is not None and out.get("seconds") is not None:
        g, t = out["gflops"], out["seconds"]
        s["seconds"], s["gflops"] = t, g
        s["predicted_seconds"], s["predicted_gflops"] = t, g  # the old names, one release
        line = f"predicted on the GPU: {_time(t)}, {_gflops(g)} GFLOPS"
        if peak_gflops:
            s["peak_gflops"], s["share_of_peak"] = peak_gflops, g / peak_gflops
            line += f" = {100 * g / peak_gflops:.1f}% of the {_gflops(peak_gflops)} GFLOPS peak"
        waves = out.get("gpu_waves")
        if waves is not None:
            ctas = 1
            for x in out.get("grid", ()):
                ctas *= x
            line += (f" (its {ctas} CTA{'s fill' if ctas != 1 else ' fills'} {waves:.3g} of one wave of "
                     f"resident CTAs)" if waves < 1
                     else f" ({waves:.3g} waves of resident CTAs)")
        if out.get("gpu_l2_start") == "previous":
            line += ", starting with the L2 the same launch left"
        lines.append(line)
        if out.get("gpu_prediction_method"):
            lines.append(how_predicted(out))
        if out.get("gpu_dram_bound"):
            lines.append(DRAM_BOUND_WARNING.format(busy=100 * out["gpu_dram_busy"]))
    if out.get("sm_cycles") is not None:
        s["sm_cycles"], s["sm_ipc"] = out["sm_cycles"], out.get("sm_ipc")
        s["ipc"] = s["sm_ipc"]  # the old name, one release
        if out.get("sm_ctas") is not None:
            ctas = out["sm_ctas"]
            line = f"timed SM ({ctas} CTA{'s' if ctas != 1 else ''}): "
        else:
            line = f"{_count(out.get('warp_instructions', 0))} warp instructions on one SM: "
        line += f"{_count(out['sm_cycles'])} cycles, IPC {out.get('sm_ipc', 0):.2f}"
        if out.get("sm_gflops"):
            s["sm_gflops"] = out["sm_gflops"]
            line += f", {_gflops(out['sm_gflops'])} GFLOPS"
            if peak_gflops and sms:
                share = out["sm_gflops"] / (peak_gflops / sms)
                s["sm_share_of_peak"] = share
                line += f" = {100 * share:.1f}% of an SM's peak"
        if out.get("sm_prediction_method"):  # SM 0 of a whole-GPU run sampled in time
            lo, hi = out.get("sm_cycles_interval") or (None, None)
            line += (f" ({out['sm_prediction_method']} with the GPU: "
                     f"{100 * out.get('sm_simulated_share', 1.0):.3g}% of its work simulated"
                     + (f", cycles {_count(round(lo))} to {_count(round(hi))})" if lo is not None else ")"))
        lines.append(line)
    else:
        lines.append("functional run only (no timing)")
    loop = out.get("cycles_per_loop_iteration")
    if loop is not None and reference_loop_cycles:
        s["cycles_per_loop_iteration"] = loop
        s["reference_cycles_per_loop_iteration"] = reference_loop_cycles
        at = ref_at = ""
        full, resident = out.get("warps_per_scheduler"), out.get("resident_ctas_per_sm")
        if reference_warps_per_scheduler and full and resident and out.get("sm_ctas"):
            # the timed SM's warps per scheduler: fewer when it runs fewer CTAs than fit
            wps = full * min(out["sm_ctas"], resident) / resident
            s["warps_per_scheduler"] = wps
            at, ref_at = f" at {wps:g} warps per scheduler", f" at {reference_warps_per_scheduler:g}"
        lines.append(f"main loop: {loop:.1f} cycles per iteration{at} ({reference}: {reference_loop_cycles}"
                     f"{ref_at}, {100 * (loop / reference_loop_cycles - 1):+.1f}%)")
    reasons = out.get("stall_reasons")
    if reasons:
        total = sum(reasons.values())
        top = sorted(((r, n / total) for r, n in reasons.items() if n), key=lambda x: -x[1])[:2] if total else []
        s["top_stalls"] = [[r, share] for r, share in top]
        if top:
            lines.append("top stalls (share of warp-cycles): " + "; ".join(
                f"{r} {100 * share:.1f}% ({STALL_WORDS.get(r, r)})" for r, share in top))
    if out.get("hazards"):
        n = out["hazards"]
        lines.append(f"warning: {n} control-code hazard{'s' if n != 1 else ''} (listed at the end)")
    s["text"] = lines
    return s


def _profiler_lines(out: dict) -> list:
    """The profiler metrics: of the whole launch on the GPU (the prediction) and of the timed SM
    alone against the L2 and DRAM, side by side when there are both."""
    gpu, sm = out.get("gpu_profiler_metrics") or {}, out.get("timed_sm_profiler_metrics") or {}
    if not gpu and not sm:
        gpu = out.get("profiler_metrics") or {}
        if not gpu:
            return []
    if gpu and sm and out.get("gpu_prediction_method") != "timed SM":
        lines = [f"profiler metrics (nvprof names)   {'whole GPU':>12s} {'timed SM':>12s}",
                 f"  {'':32s} {'(' + out['gpu_prediction_method'] + ')':>12s} {'(alone)':>12s}"]
        for name in list(gpu) + [n for n in sm if n not in gpu]:
            g = _fmt(gpu[name]) if name in gpu else "-"
            t = _fmt(sm[name]) if name in sm else "-"
            lines.append(f"  {name:32s} {g:>12s} {t:>12s} {_METRIC_UNITS.get(name, '')}".rstrip())
        return lines
    if gpu:
        head = "profiler metrics (nvprof names; the whole launch on the GPU):"
    else:
        head = "profiler metrics (nvprof names; the timed SM alone against the L2 and DRAM):"
    return [head] + [f"  {name:32s} {_fmt(v):>12s} {_METRIC_UNITS.get(name, '')}".rstrip()
                     for name, v in (gpu or sm).items()]


def format_run(out: dict) -> str:
    lines = []
    summary = out.get("summary")
    if summary:
        lines += summary["text"] + [""]
    if out.get("timing_only"):
        lines += ["functional results not computed (--timing-only: the functional run computed the addresses, "
                  "guards and control flow the timing model reads, not the values)", ""]
    for key, label in _ORDER:
        if key in out and out[key] is not None:
            if key == "warp_instructions" and out.get("warp_instructions_estimated"):
                label += " (estimated)"
            lines.append(f"{label:34s} {_fmt(out[key])}")
    if "stall_reasons" in out:
        total = sum(out["stall_reasons"].values()) or 1
        lines.append("stall reasons (warp-cycles):")
        for r, n in sorted(out["stall_reasons"].items(), key=lambda kv: -kv[1]):
            lines.append(f"  {r:32s} {n:>12,}  {100 * n / total:5.1f}%")
    lines += _profiler_lines(out)
    if out.get("opcode_counts"):
        lines.append("warp instructions by opcode:")
        for op, n in list(out["opcode_counts"].items())[:16]:
            lines.append(f"  {op:32s} {n:>12,}")
    for msg in out.get("hazard_messages", [])[:5]:
        lines.append("warning: " + msg)
    return "\n".join(lines)


_METHODS = {"timed SM": "the timed SM's run (one CTA: the L2 and DRAM to itself)",
            "full": "full simulation (every CTA on every SM, one shared L2 and DRAM)",
            "sampled": "sampled along the K loop (first wave, steady-state window, tail)"}


def how_predicted(out) -> str:
    """The "how predicted:" line of a whole-GPU prediction: the method, the share of the launch it
    simulated and, when sampled, the interval of its time."""
    method = out["gpu_prediction_method"]
    share = out.get("gpu_simulated_share")
    if method == "sampled" and share is not None and share >= 1:
        return "how predicted: the K-loop method simulated the whole launch (at most one wave, at its own K)"
    line = f"how predicted: {_METHODS.get(method, method)}"
    if share is not None and share < 1:
        line += f", {100 * share:.3g}% of the work simulated"
        lo, hi = out.get("gpu_seconds_interval") or (None, None)
        if lo is not None:
            line += f", time {_time(lo)} to {_time(hi)}"
    return line
