"""The correlation plot of a validation: simulated against published, one marker per figure.

In the manner of Accel-Sim's correlator: log-log axes, the line y = x and a ±10% band around it, a
marker shape per kind of row. Rows without a published figure, with a MAPE limit instead of a
figure, or with a zero on either side (which a log axis cannot show) are left out; the caption
says how many.
"""

from __future__ import annotations

import io

from .rows import KINDS

BAND = 0.10  # the shaded band around y = x


def plotted(rows):
    """The rows the correlation plot can show (a positive published and simulated value)."""
    return [r for r in rows if r.published is not None and r.limit is None
            and r.published > 0 and r.simulated > 0]


def correlation_figure(rows, title=""):
    """The matplotlib figure (the caller closes it)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    shown = plotted(rows)
    fig, ax = plt.subplots(figsize=(7.2, 6.4), constrained_layout=True)
    values = [v for r in shown for v in (r.published, r.simulated)] or [1.0, 10.0]
    lo, hi = min(values) / 2, max(values) * 2
    x = np.geomspace(lo, hi, 50)
    ax.fill_between(x, x * (1 - BAND), x * (1 + BAND), color="0.85", label=f"±{100 * BAND:g}%")
    ax.plot(x, x, "k-", lw=0.8, label="simulated = published")
    colours = {"pass": "tab:green", "deviation": "tab:red"}
    for kind in KINDS.values():
        mine = [r for r in shown if r.kind == kind.name]
        if not mine:
            continue
        for status in ("pass", "deviation"):
            pts = [r for r in mine if r.status == status]
            if pts:
                ax.scatter([r.published for r in pts], [r.simulated for r in pts], marker=kind.marker,
                           s=36, color=colours[status], alpha=0.8,
                           label=f"{kind.label}" + (" — deviation" if status == "deviation" else ""))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("published (measured on hardware, or documented)")
    ax.set_ylabel("simulated (maxsim)")
    left = len(rows) - len(shown)
    ax.set_title((title + "\n" if title else "") + f"{len(shown)} figures"
                 + (f" ({left} without a positive published figure not shown)" if left else ""), fontsize=9)
    ax.grid(alpha=0.3, which="both", lw=0.4)
    ax.legend(fontsize=7, loc="upper left")
    return fig


def png_bytes(fig, dpi=100) -> bytes:
    """The figure as PNG bytes (and closed)."""
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=dpi)
    finally:
        plt.close(fig)
    return buf.getvalue()
