"""Simulated versus measured GFLOPS of the SGEMM workloads (``maxsim compare``).

The measured series come from ``traces/`` (CSV files with their provenance in their comment
lines). Each point is predicted by :func:`workloads.sgemm.predict.predict_sgemm` (sampled), the error
is (simulated - measured) / measured, and each kernel's mean absolute percentage error (MAPE) is
taken over its measured sizes.
"""

from __future__ import annotations

import csv

from maxsim.errors import MaxsimError

from traces import path as trace_path

from .sgemm.generator import generate_kernel
from .sgemm.predict import predict_sgemm

MEASURED = "maxas_gtx980_sgemm.csv"
KERNEL_COLUMNS = ("sgemm_64", "sgemm_128")
REFERENCE_COLUMNS = ("cublas_128x64", "cublas_128x128")


def load_measurements(name=MEASURED):
    """{column: {N: GFLOPS}} from a traces CSV; a size given on two charts keeps the first value."""
    try:
        text = trace_path(name).read_text()
    except OSError as e:
        raise MaxsimError(f"cannot read measured data {name}: {e.strerror}") from None
    rows = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    reader = csv.DictReader(rows)
    out = {}
    for row in reader:
        n = int(row["N"])
        for col, val in row.items():
            if col in ("chart", "N") or not val:
                continue
            out.setdefault(col, {}).setdefault(n, float(val))
    return out


def compare(cfg, workloads=KERNEL_COLUMNS, sizes=None, extra_sizes=None, progress=None, jobs=1):
    """Predict every measured size (or ``sizes``) of each workload; returns a dict for --json.

    ``jobs`` > 1 predicts the sizes in that many worker processes (the results do not depend on
    it: every prediction is deterministic)."""
    measured = load_measurements()
    result = {"config": cfg.name, "gpu": cfg.gpu.name, "core_clock_mhz": cfg.gpu.core_clock_mhz,
              "peak_gflops": cfg.peak_gflops, "kernels": {}, "reference": {}}
    for ref in REFERENCE_COLUMNS:
        result["reference"][ref] = sorted(measured.get(ref, {}).items())
    plan = []
    for name in workloads:
        meas = measured.get(name, {})
        ns = sorted(meas) if sizes is None else sorted(sizes)
        if extra_sizes:
            ns = sorted(set(ns) | set(extra_sizes.get(name, ())))
        plan.append((name, ns, meas))
    tasks = [(name, n) for name, ns, _ in plan for n in ns]
    predictions = _predict_all(cfg, tasks, jobs, progress)
    for name, ns, meas in plan:
        points = []
        for n in ns:
            p = predictions[name, n]
            m = meas.get(n)
            points.append({"n": n, "simulated_gflops": p["gflops"], "measured_gflops": m,
                           "error_percent": None if m is None else 100.0 * (p["gflops"] - m) / m,
                           "cycles": p["cycles"], "waves": p["waves"], "loop_cycles": p["loop_cycles"]})
        errs = [abs(pt["error_percent"]) for pt in points if pt["error_percent"] is not None]
        result["kernels"][name] = {"points": points, "mape_percent": sum(errs) / len(errs) if errs else None,
                                   "measured_points": len(errs)}
    return result


_KERNELS = {}  # per process: generated kernels by name


def _predict_point(cfg, name, n):
    kernel = _KERNELS.get(name)
    if kernel is None:
        kernel = _KERNELS[name] = generate_kernel(name)
    return predict_sgemm(name, n, cfg, kernel=kernel)


def _predict_all(cfg, tasks, jobs, progress):
    """{(name, n): prediction} for every task, in ``jobs`` processes; ``progress(done, total)``."""
    out = {}
    total = len(tasks)
    if jobs <= 1 or total <= 1:
        for name, n in tasks:
            out[name, n] = _predict_point(cfg, name, n)
            if progress is not None:
                progress(len(out), total)
        return out
    from concurrent.futures import ProcessPoolExecutor, as_completed
    with ProcessPoolExecutor(max_workers=min(jobs, total)) as pool:
        # the largest sizes first: the costliest predictions start early, the small ones fill in
        futures = {pool.submit(_predict_point, cfg, name, n): (name, n)
                   for name, n in sorted(tasks, key=lambda t: -t[1])}
        for f in as_completed(futures):
            out[futures[f]] = f.result()
            if progress is not None:
                progress(len(out), total)
    return out


def format_table(result):
    lines = [f"simulated vs measured SGEMM GFLOPS on {result['gpu']} "
             f"(config {result['config']}, {result['core_clock_mhz']:.0f} MHz, FP32 peak {result['peak_gflops']:.0f})"]
    for name, k in result["kernels"].items():
        lines.append("")
        lines.append(f"{name}:      N   measured  simulated   error   loop cycles  waves")
        for p in k["points"]:
            meas = "-" if p["measured_gflops"] is None else f"{p['measured_gflops']:.0f}"
            err = "" if p["error_percent"] is None else f"{p['error_percent']:+.1f}%"
            lines.append(f"{'':10s}{p['n']:6d} {meas:>10s} {p['simulated_gflops']:10.0f} {err:>7s} "
                         f"{p['loop_cycles']:12.1f} {p['waves']:6.2f}")
        if k["mape_percent"] is not None:
            lines.append(f"{name}: MAPE {k['mape_percent']:.1f}% over {k['measured_points']} measured sizes")
    return "\n".join(lines)
