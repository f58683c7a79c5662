"""Plot of simulated versus measured GFLOPS (``maxsim compare -o``), and the predicted memory
behaviour against N.

The top panel has each curve's simulated GFLOPS, its measured points and cuBLAS as reference
lines. When the predictions carry memory counters (``profiler_metrics`` of the points, see
:mod:`maxsim.report.metrics`), a second row shows, for the same curves, the predicted L2 hit rate
of the texture reads (nvprof's ``l2_tex_read_hit_rate``) and the DRAM utilisation
(``dram_utilization_fraction``: bytes moved / the peak bandwidth) against N: where a kernel turns
bandwidth-bound, and what a lower occupancy does to the L2 (maxas's "Max64-3").
"""

from __future__ import annotations

import os

from ..errors import MaxsimError

FORMATS = (".png", ".svg", ".pdf")
_COLOURS = {"sgemm_64": "tab:blue", "sgemm_128": "tab:red"}
_VARIANT_COLOURS = ("tab:green", "tab:purple", "tab:orange", "tab:brown", "tab:cyan", "tab:olive")
_REF_STYLE = {"cublas_128x64": ("0.55", "--"), "cublas_128x128": ("0.35", ":")}
MEMORY_PANELS = (("l2_tex_read_hit_rate", 1.0, "L2 hit rate of texture reads (%)",
                  "predicted L2 hit rate (nvprof l2_tex_read_hit_rate)"),
                 ("dram_utilization_fraction", 100.0, "DRAM utilisation (% of peak bandwidth)",
                  "predicted DRAM utilisation (dram_utilization_fraction)"))


def _styles(result):
    """label -> (colour, line style): a workload's own curve in its colour, solid; other
    residencies in further colours, dash-dotted."""
    out = {}
    spare = iter(_VARIANT_COLOURS)
    for label, k in result["kernels"].items():
        if label in _COLOURS:
            out[label] = (_COLOURS[label], "-")
        else:
            out[label] = (next(spare, None), "-.")
    return out


def has_memory(result) -> bool:
    """Whether any predicted point carries the metrics of the memory panels."""
    return any(p.get("profiler_metrics", {}).get(key) is not None
               for k in result["kernels"].values() for p in k["points"] for key, *_ in MEMORY_PANELS)


def plot_comparison(result, path):
    """Draw the comparison (see the module docstring) to ``path`` (.png, .svg or .pdf)."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise MaxsimError(f"cannot write plot {path!r}: the file name must end in {', '.join(FORMATS)}")
    import matplotlib.pyplot as plt

    fig = comparison_figure(result)
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise MaxsimError(f"cannot write plot {path!r}: {e.strerror}") from None
    finally:
        plt.close(fig)
    return path


def comparison_figure(result):
    """The matplotlib figure of :func:`plot_comparison` (the caller closes it)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    memory = has_memory(result)
    styles = _styles(result)
    if memory:
        fig = plt.figure(figsize=(9, 8.6), constrained_layout=True)
        grid = fig.add_gridspec(2, 2, height_ratios=(1.6, 1))
        ax = fig.add_subplot(grid[0, :])
        mem_axes = [fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])]
    else:
        fig, ax = plt.subplots(figsize=(9, 5.2), constrained_layout=True)
        mem_axes = []
    for ref, pts in result["reference"].items():
        if pts:
            colour, style = _REF_STYLE.get(ref, ("0.5", "-."))
            ax.plot([n for n, _ in pts], [g for _, g in pts], style, color=colour, lw=1.2,
                    label=f"{ref} (measured, reference)")
    for name, k in result["kernels"].items():
        colour, style = styles[name]
        pts = k["points"]
        ax.plot([p["n"] for p in pts], [p["simulated_gflops"] for p in pts], style, color=colour, lw=1.8,
                label=f"{name} simulated" + (f" (MAPE {k['mape_percent']:.1f}%)" if k["mape_percent"] is not None else ""))
        meas = [p for p in pts if p["measured_gflops"] is not None]
        if meas:
            ax.plot([p["n"] for p in meas], [p["measured_gflops"] for p in meas], "o", ms=4, color=colour,
                    mfc="none", label=f"{name} measured")
    ax.axhline(result["peak_gflops"], color="k", lw=0.8)
    ax.text(ax.get_xlim()[0], result["peak_gflops"], " FP32 peak", va="top", fontsize=8)
    ax.set_xlabel("N (M = N = K)")
    ax.set_ylabel("GFLOPS = (2N³ + N²) / time")
    ax.set_title(f"SGEMM, maxsim (config {result['config']}) vs measured: {result['gpu']}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    for max_, (key, scale, ylabel, title) in zip(mem_axes, MEMORY_PANELS):
        for name, k in result["kernels"].items():
            colour, style = styles[name]
            pts = [(p["n"], p["profiler_metrics"][key]) for p in k["points"]
                   if p.get("profiler_metrics", {}).get(key) is not None]
            if pts:
                max_.plot([n for n, _ in pts], [v * scale for _, v in pts], style, color=colour, lw=1.5,
                          marker=".", ms=4, label=name)
        max_.set_xlabel("N (M = N = K)")
        max_.set_ylabel(ylabel, fontsize=9)
        max_.set_title(title, fontsize=9)
        max_.set_ylim(0, 100)
        max_.grid(alpha=0.3)
        max_.legend(fontsize=7, loc="best")
    return fig
