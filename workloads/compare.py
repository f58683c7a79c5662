"""Simulated versus measured GFLOPS of the SGEMM workloads (``maxsim compare``).

The measured series come from ``traces/`` (CSV files with their provenance in their comment
lines). Each point is predicted by :func:`workloads.sgemm.predict.predict_sgemm` (sampled), the error
is (simulated - measured) / measured, and each kernel's mean absolute percentage error (MAPE) is
taken over its measured sizes.
"""

from __future__ import annotations

import csv
import os

from maxsim.errors import MaxsimError
from maxsim.gpu.sampling import DRAM_SATURATED
from maxsim.report.metrics import profiler_metrics
from maxsim.timing.occupancy import occupancy as occupancy_of
from maxsim.timing.occupancy import registers_for, with_registers

from traces import path as trace_path

from .sgemm.generator import KERNELS, generate_kernel
from .sgemm.predict import predict_sgemm

MEASURED = "maxas_gtx980_sgemm.csv"  # both kernels, maxas's BenchSmall and BenchLarge charts
# Every measured series scored (files of traces/), in order: a size given by two files keeps the
# first one's value.
MEASURED_FILES = (MEASURED,
                  "maxas_gtx980_sgemm64_large.csv")  # sgemm_64 above N = 512 (BenchLarge), every 1024
KERNEL_COLUMNS = ("sgemm_64", "sgemm_128")
REFERENCE_COLUMNS = ("cublas_128x64", "cublas_128x128")


def load_measurements(name=MEASURED_FILES):
    """{column: {N: GFLOPS}} from a traces CSV (or several: a tuple of names, merged in order); a size
    given on two charts or in two files keeps the first value."""
    return _load(name)[0]


def measurement_sources(name=MEASURED_FILES):
    """{column: {N: file name}}: the traces file each value of :func:`load_measurements` comes from."""
    return _load(name)[1]


def _load(names):
    out, sources = {}, {}
    for name in ((names,) if isinstance(names, str) else names):
        for col, values in _load_one(name).items():
            for n, v in values.items():
                if n not in out.setdefault(col, {}):
                    out[col][n] = v
                    sources.setdefault(col, {})[n] = os.path.basename(str(name))
    return out, sources


def _load_one(name):
    path = trace_path(name)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise MaxsimError(f"{path}: cannot read measured data: {getattr(e, 'strerror', None) or e}") from None
    numbered = [(i, line) for i, line in enumerate(text.splitlines(), 1)
                if line.strip() and not line.startswith("#")]
    reader = csv.DictReader([line for _, line in numbered])
    if reader.fieldnames is None or "N" not in reader.fieldnames:
        where = f"{path}:{numbered[0][0]}" if numbered else str(path)
        raise MaxsimError(f"{where}: the header row of measured data must name a column N")
    out = {}
    for (lineno, _), row in zip(numbered[1:], reader):
        try:
            n = int(row["N"])
            for col, val in row.items():
                if col in ("chart", "N") or not val:
                    continue
                out.setdefault(col, {}).setdefault(n, float(val))
        except (TypeError, ValueError) as e:
            raise MaxsimError(f"{path}:{lineno}: bad measured value ({e})") from None
    return out


def series_label(workload, occupancy=None):
    """The name of a curve: the workload, or the workload at the residency the user chose."""
    if not occupancy:
        return workload
    (key, value), = occupancy.items()
    return {"regs": f"{workload} with {value} registers",
            "warps_per_scheduler": f"{workload} at {value} warps/scheduler",
            "ctas_per_sm": f"{workload} at {value} CTAs/SM"}[key]


def _series(cfg, workload, occ_choice):
    """(label, register count or None, Occupancy, same residency as the kernel as generated)."""
    geo = KERNELS[workload]
    kernel = generate_kernel(workload)
    own = occupancy_of(kernel, geo.threads, cfg)
    if not occ_choice:
        return series_label(workload), None, own, True
    regs = registers_for(kernel, geo.threads, cfg, **occ_choice)
    occ = occupancy_of(with_registers(kernel, regs), geo.threads, cfg)
    return series_label(workload, occ_choice), regs, occ, occ.ctas == own.ctas


def compare(cfg, workloads=KERNEL_COLUMNS, sizes=None, extra_sizes=None, progress=None, jobs=1,
            occupancy=None, variants=(), engine=None, cache=None, l2_start="previous"):
    """Predict every measured size (or ``sizes``) of each workload; returns a dict for --json.

    ``occupancy`` (``{"regs": N}``, ``{"warps_per_scheduler": W}`` or ``{"ctas_per_sm": C}``,
    see :func:`maxsim.timing.occupancy.registers_for`) runs every workload at that residency
    instead of the generated kernel's own; ``variants`` adds curves ``(workload, occupancy)`` at
    the sizes of that workload's curve (e.g. ``("sgemm_64", {"warps_per_scheduler": 3})``, maxas's
    "Max64-3"). A curve is named by :func:`series_label`; it is set against the measured data only
    when it has the residency of the kernel as generated (the measured kernels').

    The predictions run on ``engine`` (a :class:`maxsim.engine.Engine`), by default one of ``jobs``:
    ``jobs`` > 1 predicts the sizes in that many worker processes of a local Dask cluster (the
    results do not depend on it: every prediction is deterministic). ``cache``: a
    :class:`maxsim.cache.ResultCache` (see :func:`workload_cache`) the predictions are read from
    and written to. ``l2_start``: what the L2 holds when each predicted launch starts:
    ``"previous"`` (default: what the same launch left there, as the measured benchmark times
    back-to-back launches of one kernel on the same buffers, maxas's ``sgemm.cpp``) or ``"empty"``
    (see :func:`maxsim.gpu.sampling.predict`)."""
    measured, sources = _load(MEASURED_FILES)
    result = {"config": cfg.name, "gpu": cfg.gpu.name, "core_clock_mhz": cfg.gpu.core_clock_mhz,
              "effective_clock_mhz": cfg.clock_hz / 1e6, "peak_gflops": cfg.peak_gflops, "kernels": {},
              "reference": {}, "l2_start": l2_start}
    for ref in REFERENCE_COLUMNS:
        result["reference"][ref] = sorted(measured.get(ref, {}).items())
    plan = []
    for name, occ_choice in [(w, occupancy) for w in workloads] + list(variants):
        label, regs, occ, same = _series(cfg, name, occ_choice)
        meas = measured.get(name, {})
        ns = sorted(meas) if sizes is None else sorted(sizes)
        if extra_sizes:
            ns = sorted(set(ns) | set(extra_sizes.get(name, ())))
        plan.append((label, name, regs, occ, ns, meas if same else {}, sources.get(name, {}) if same else {}))
    tasks = sorted({(name, regs, n) for _, name, regs, _, ns, _, _ in plan for n in ns},
                   key=lambda t: (t[2], t[0], -1 if t[1] is None else t[1]))
    predictions = _predict_all(cfg, tasks, jobs, progress, engine, cache, l2_start)
    for label, name, regs, occ, ns, meas, source in plan:
        points = []
        for n in ns:
            p = predictions[name, regs, n]
            m = meas.get(n)
            mem = p.get("memory")
            metrics = profiler_metrics(mem, cfg.cycles_to_seconds(p["cycles"]), cfg) if mem else {}
            points.append({"n": n, "simulated_gflops": p["gflops"], "measured_gflops": m,
                           "measured_source": source.get(n),  # the traces file of the measured value
                           "error_percent": None if m is None else 100.0 * (p["gflops"] - m) / m,
                           "cycles": p["cycles"], "waves": p["waves"], "loop_cycles": p["loop_cycles"],
                           "profiler_metrics": metrics,
                           # DRAM busy share of the sampled steady state (else first wave); dram_bound: the
                           # sampled prediction's warning (maxsim.gpu.sampling.DRAM_SATURATED)
                           "dram_busy": p.get("dram_busy"), "dram_bound": bool(p.get("dram_bound")),
                           # how the point was predicted: the pieces simulated (the K of each sample)
                           # and the wall seconds it took
                           "samples": [{"phase": ph["name"], "ctas": ph["ctas"], "k": ph["k_samples"]}
                                       for ph in p.get("phases", ())],
                           "sim_seconds": p.get("sim_seconds")})
        errs = [abs(pt["error_percent"]) for pt in points if pt["error_percent"] is not None]
        by_source = {}  # the MAPE over each traces file's points (e.g. sgemm_64 up to N = 512 / above)
        for pt in points:
            if pt["error_percent"] is not None:
                by_source.setdefault(pt["measured_source"], []).append(abs(pt["error_percent"]))
        result["kernels"][label] = {
            "workload": name, "registers_per_thread": occ.registers, "resident_ctas_per_sm": occ.ctas,
            "warps_per_scheduler": occ.warps_per_scheduler, "occupancy_limited_by": occ.limited_by,
            "points": points, "mape_percent": sum(errs) / len(errs) if errs else None,
            "measured_points": len(errs),
            "mape_by_source": {f: {"mape_percent": sum(e) / len(e), "measured_points": len(e)}
                               for f, e in by_source.items()}}
    return result


_KERNELS = {}  # per process: generated kernels by (name, registers)


def _predict_point(cfg, name, regs, n, l2_start="empty"):
    kernel = _KERNELS.get((name, regs))
    if kernel is None:
        kernel = _KERNELS[name, regs] = generate_kernel(name, regs=regs)
    return predict_sgemm(name, n, cfg, kernel=kernel, l2_start=l2_start)


def _predict_group(cfg, tasks, l2_start="empty"):
    """The predictions of ``tasks`` (one kernel at one size, several register counts), in order, in
    one process: they share the sectors traced for the launch's history (maxsim.gpu.sampling)."""
    return [_predict_point(cfg, *task, l2_start=l2_start) for task in tasks]


def workload_cache(directory=None):
    """A :class:`~maxsim.cache.ResultCache` whose model version covers the simulator and the SGEMM
    workload's code (its generator, harness and problem builder are part of what a prediction is;
    the comparison and sweep drivers beside it are not)."""
    from pathlib import Path

    import maxsim
    from maxsim.cache import ResultCache, model_version
    return ResultCache(directory, model_version(Path(maxsim.__file__).parent, Path(__file__).parent / "sgemm"))


def point_key(cache, cfg, name, regs, n, l2_start="empty"):
    """The cache key of the sampled prediction of ``name`` (with ``regs`` registers) at size ``n``
    from an L2 that is ``l2_start``."""
    from maxsim.cache import config_values
    from .sgemm.generator import generate
    text = _TEXTS.get(name)
    if text is None:
        text = _TEXTS[name] = generate(name)
    return cache.key(what="sgemm sampled prediction", kernel=text, regs=regs, m=n, n=n, k=n,
                     config=config_values(cfg), l2_start=l2_start)


_TEXTS = {}  # the generated kernels' text by name


def _predict_all(cfg, tasks, jobs, progress, engine=None, cache=None, l2_start="empty"):
    """{(name, regs, n): prediction} for every task; ``progress(done, total)``. The predictions not
    in ``cache`` run on ``engine`` (default: an :class:`~maxsim.engine.Engine` of ``jobs``)."""
    from maxsim.engine import Engine
    out = {}
    total = len(tasks)
    keys = {}
    if cache is not None:
        for task in tasks:
            keys[task] = point_key(cache, cfg, *task, l2_start=l2_start)
            hit = cache.get(keys[task])
            if hit is not None:
                out[task] = hit
        if out and progress is not None:
            progress(len(out), total)
    groups = {}  # (kernel, size) -> its tasks (register counts), in the order of ``tasks``
    for task in tasks:
        if task not in out:
            groups.setdefault((task[0], task[2]), []).append(task)
    # the largest sizes first: the costliest predictions start early, the small ones fill in
    order = [g for _, g in sorted(groups.items(), key=lambda kv: -kv[0][1])]
    if engine is None and len(order) <= 1:
        jobs = 1  # one task: no cluster to start
    own = engine is None
    engine = Engine(jobs=jobs) if own else engine
    try:
        for i, predictions in engine.run(_predict_group, [(cfg, group, l2_start) for group in order]):
            for task, prediction in zip(order[i], predictions):
                out[task] = prediction
                if cache is not None:
                    cache.put(keys[task], prediction)
            if progress is not None:
                progress(len(out), total)
    finally:
        if own:
            engine.close()
    return out


def format_table(result):
    clock = f"{result['core_clock_mhz']:.0f} MHz"
    effective = result.get("effective_clock_mhz")
    if effective is not None and abs(effective - result["core_clock_mhz"]) > 0.5:
        clock += f" ({effective:.0f} effective: gpu.effective_clock_fraction)"
    lines = [f"simulated vs measured SGEMM GFLOPS on {result['gpu']} "
             f"(config {result['config']}, {clock}, FP32 peak {result['peak_gflops']:.0f})"]
    if result.get("l2_start") == "empty":
        lines.append("every launch starts with an empty L2 (the measured launches ran back to back)")
    for name, k in result["kernels"].items():
        mem = any(p.get("profiler_metrics") for p in k["points"])
        lines.append("")
        lines.append(f"{name}: {k['registers_per_thread']} registers per thread, {k['resident_ctas_per_sm']} CTAs per SM "
                     f"= {k['warps_per_scheduler']:g} warps per scheduler (limited by {k['occupancy_limited_by']})")
        lines.append(f"{'':10s}     N   measured  simulated   error   loop cycles  waves"
                     + ("  L2 hit %  DRAM util" if mem else ""))
        for p in k["points"]:
            meas = "-" if p["measured_gflops"] is None else f"{p['measured_gflops']:.0f}"
            err = "" if p["error_percent"] is None else f"{p['error_percent']:+.1f}%"
            row = (f"{'':10s}{p['n']:6d} {meas:>10s} {p['simulated_gflops']:10.0f} {err:>7s} "
                   f"{p['loop_cycles']:12.1f} {p['waves']:6.2f}")
            if mem:
                pm = p.get("profiler_metrics") or {}
                hit, util = pm.get("l2_tex_read_hit_rate"), pm.get("dram_utilization_fraction")
                row += f" {'-' if hit is None else f'{hit:.1f}':>9s} {'-' if util is None else f'{util:.2f}':>10s}"
            if p.get("dram_bound"):
                row += "  DRAM-bound"
            lines.append(row)
        bound = [p["n"] for p in k["points"] if p.get("dram_bound")]
        if bound:
            lines.append(f"{name}: DRAM-bound at N = {', '.join(map(str, bound))}: DRAM busy at least "
                         f"{100 * DRAM_SATURATED:.0f}% of the sampled steady state (at its sustained rate), "
                         f"where waves can drift apart, which the sampled prediction does not follow "
                         f"(see docs/memory-hierarchy.md)")
        if k["mape_percent"] is not None:
            lines.append(f"{name}: MAPE {k['mape_percent']:.1f}% over {k['measured_points']} measured sizes")
            parts = k.get("mape_by_source") or {}
            if len(parts) > 1:
                for f, part in parts.items():
                    lines.append(f"{'':{len(name) + 2}s}{part['mape_percent']:.1f}% over the "
                                 f"{part['measured_points']} of {f}")
        elif not k["measured_points"]:
            lines.append(f"{name}: predicted only (no measured point)")
    return "\n".join(lines)
