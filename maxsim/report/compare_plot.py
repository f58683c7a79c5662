"""Plot of simulated versus measured GFLOPS (``maxsim compare -o``)."""

from __future__ import annotations

import os

from ..errors import MaxsimError

FORMATS = (".png", ".svg", ".pdf")
_COLOURS = {"sgemm_64": "tab:blue", "sgemm_128": "tab:red"}
_REF_STYLE = {"cublas_128x64": ("0.55", "--"), "cublas_128x128": ("0.35", ":")}


def plot_comparison(result, path):
    """Draw each kernel's simulated curve and measured points, with cuBLAS as reference lines."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise MaxsimError(f"cannot write plot {path!r}: the file name must end in {', '.join(FORMATS)}")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.2), constrained_layout=True)
    for ref, pts in result["reference"].items():
        if pts:
            colour, style = _REF_STYLE.get(ref, ("0.5", "-."))
            ax.plot([n for n, _ in pts], [g for _, g in pts], style, color=colour, lw=1.2,
                    label=f"{ref} (measured, reference)")
    for name, k in result["kernels"].items():
        colour = _COLOURS.get(name, None)
        pts = k["points"]
        ax.plot([p["n"] for p in pts], [p["simulated_gflops"] for p in pts], "-", color=colour, lw=1.8,
                label=f"{name} simulated" + (f" (MAPE {k['mape_percent']:.1f}%)" if k["mape_percent"] is not None else ""))
        meas = [p for p in pts if p["measured_gflops"] is not None]
        ax.plot([p["n"] for p in meas], [p["measured_gflops"] for p in meas], "o", ms=4, color=colour,
                mfc="none", label=f"{name} measured")
    ax.axhline(result["peak_gflops"], color="k", lw=0.8)
    ax.text(ax.get_xlim()[0], result["peak_gflops"], " FP32 peak", va="top", fontsize=8)
    ax.set_xlabel("N (M = N = K)")
    ax.set_ylabel("GFLOPS = (2N³ + N²) / time")
    ax.set_title(f"SGEMM, maxsim (config {result['config']}) vs measured: {result['gpu']}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise MaxsimError(f"cannot write plot {path!r}: {e.strerror}") from None
    finally:
        plt.close(fig)
    return path
