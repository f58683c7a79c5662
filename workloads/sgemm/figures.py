"""The register-bank figure: register bank conflicts and operand reuse of the generated SGEMM kernels.

Every function here builds a :class:`matplotlib.figure.Figure` directly (no ``pyplot``, no window,
no global state) on the Agg canvas; :func:`save_figure` writes it to a ``.png``, ``.svg`` or ``.pdf``
file (:func:`maxsim.report.plots.save_figure`). ``maxsim plot conflicts`` is the command-line front end.

:func:`conflicts_figure` has two parts:

(a) bar charts, for each FFMA traversal order (raster, zigzag, swirl) and C register map (maxas,
    naive): register bank conflicts with the reuse caches off (outline) and left unhidden with them
    on (filled), and the reuse hit rate (operand reads served by a reuse cache), per k-step (64
    FFMA of the main loop) and over the whole kernel (every ALU instruction of the program counted
    once, as maxas counts its own figures). The numbers come from
    :func:`maxsim.analysis.analyze_banks` on the kernels of :mod:`workloads.sgemm.generator`.
(b) the 8x8 register-bank map of one thread's C block, as in the maxas SGEMM write-up: each cell
    is the C register of ``FFMA C, A[i], B[j], C`` coloured by its bank (register mod 4), the A
    fragment registers down the left and the B fragment registers across the top coloured by
    theirs; a thick black border marks a cell whose C register shares a bank with its A or B
    operand (a conflict no reuse flag can avoid every time), a black corner triangle a cell whose A
    and B operands share a bank (the 16 per k-step that the register map cannot avoid; reuse
    hides them). One map for the maxas register map, one for the naive map.
"""

from __future__ import annotations

TRAVERSALS = ("raster", "zigzag", "swirl")
REGMAPS = ("maxas", "naive")
BANKS = 4
# light colours (black text stays readable), distinct for the usual kinds of colour blindness
BANK_COLOURS = ("#a6cee3", "#fdbf6f", "#b2df8a", "#f4a6c8")
REGMAP_COLOURS = {"maxas": "#1f78b4", "naive": "#e66101"}
A_FIRST, B_FIRST = 64, 72  # fragment registers of the first buffer (the second, +16, has the same banks)


# ---------------------------------------------------------------------------------------------
# the numbers

def conflict_figures(kernel: str = "sgemm_64") -> list:
    """Bank and reuse figures of the generated ``kernel`` for every traversal and register map.

    One dict per (traversal, regmap), in the order of :data:`TRAVERSALS` x :data:`REGMAPS`, with
    per-k-step figures of the main loop's FFMAs (``kstep_*``) and whole-kernel figures of every
    ALU instruction counted once (``kernel_*``): ``conflicts_no_reuse``, ``conflicts_unhidden``
    (left with the reuse caches on) and ``reuse_hit_rate`` (hits / operand reads, 0-1).
    """
    from maxsim.analysis import analyze_banks

    from .generator import generate_kernel

    out = []
    for traversal in TRAVERSALS:
        for regmap in REGMAPS:
            rep = analyze_banks(generate_kernel(kernel, traversal, regmap, True))
            loop = rep.main_loop
            k = loop.per_kstep
            out.append({
                "kernel": kernel, "traversal": traversal, "regmap": regmap,
                "kstep_conflicts_no_reuse": k["conflicts_no_reuse"],
                "kstep_conflicts_unhidden": k["conflicts_with_reuse"],
                "kstep_reuse_hit_rate": loop.ffma_totals.reuse_hit_rate,
                "kernel_conflicts_no_reuse": rep.totals.conflicts_no_reuse,
                "kernel_conflicts_unhidden": rep.totals.conflicts_with_reuse,
                "kernel_reuse_hit_rate": rep.totals.reuse_hit_rate,
            })
    return out


def bank_map(regmap: str) -> dict:
    """The register-bank map of a thread's 8x8 C block under ``regmap``.

    Returns ``c[i][j]`` (C register of A index i, B index j), ``a[i]``, ``b[j]`` (fragment
    registers), ``c_conflict[i][j]`` (C shares a bank with A[i] or B[j]), ``ab_conflict[i][j]``
    (A[i] and B[j] share a bank) and the counts of both.
    """
    from .generator import c_register

    a = [A_FIRST + i for i in range(8)]
    b = [B_FIRST + j for j in range(8)]
    c = [[c_register(regmap, i, j) for j in range(8)] for i in range(8)]
    cc = [[c[i][j] % BANKS in (a[i] % BANKS, b[j] % BANKS) for j in range(8)] for i in range(8)]
    ab = [[a[i] % BANKS == b[j] % BANKS for j in range(8)] for i in range(8)]
    return {"regmap": regmap, "a": a, "b": b, "c": c, "c_conflict": cc, "ab_conflict": ab,
            "c_conflicts": sum(map(sum, cc)), "ab_conflicts": sum(map(sum, ab))}


# ---------------------------------------------------------------------------------------------
# drawing

def _bars(ax, figs, key_filled, key_outline, title, ylabel, percent=False):
    import numpy as np

    x = np.arange(len(TRAVERSALS))
    width = 0.38
    scale = 100 if percent else 1
    top = scale * max(max(f[key_filled] for f in figs), max(f[key_outline] for f in figs) if key_outline else 0)
    for n, regmap in enumerate(REGMAPS):
        rows = [next(f for f in figs if f["traversal"] == t and f["regmap"] == regmap) for t in TRAVERSALS]
        xs = x + (n - 0.5) * width
        colour = REGMAP_COLOURS[regmap]
        if key_outline:
            outline = [scale * r[key_outline] for r in rows]
            ax.bar(xs, outline, width * 0.92, facecolor="white", edgecolor=colour, hatch="///",
                   linewidth=1.0)
            for xv, v in zip(xs, outline):
                ax.annotate(f"{v:g}", (xv, v), xytext=(0, 2), textcoords="offset points", ha="center",
                            va="bottom", fontsize=8, color="#555555")
        filled = [scale * r[key_filled] for r in rows]
        ax.bar(xs, filled, width * 0.92, color=colour)
        for xv, v in zip(xs, filled):
            ax.annotate(f"{v:.1f}" if percent else f"{v:g}", (xv, v), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=8.5,
                        fontweight="bold")
    ax.set_xticks(x, TRAVERSALS)
    ax.set_xlabel("FFMA traversal order", fontsize=9)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel, fontsize=9)
    ax.set_ylim(0, top * 1.18)
    ax.spines[["top", "right"]].set_visible(False)


def _map(ax, regmap):
    from matplotlib.patches import Polygon, Rectangle

    m = bank_map(regmap)
    gap = 0.25

    def cell(x, y, reg, text, bold_border=False):
        ax.add_patch(Rectangle((x, y), 1, 1, facecolor=BANK_COLOURS[reg % BANKS], edgecolor="#555555",
                               linewidth=0.6))
        if bold_border:
            ax.add_patch(Rectangle((x + 0.06, y + 0.06), 0.88, 0.88, fill=False, edgecolor="black",
                                   linewidth=2.6))
        ax.text(x + 0.5, y + 0.5, text, ha="center", va="center", fontsize=9)

    for j, r in enumerate(m["b"]):  # B fragment across the top
        cell(j, -1 - gap, r, f"R{r}")
    for i, r in enumerate(m["a"]):  # A fragment down the left
        cell(-1 - gap, i, r, f"R{r}")
    for i in range(8):
        for j in range(8):
            cell(j, i, m["c"][i][j], f"R{m['c'][i][j]}", m["c_conflict"][i][j])
            if m["ab_conflict"][i][j]:
                ax.add_patch(Polygon([(j + 1, i), (j + 0.72, i), (j + 1, i + 0.28)], closed=True,
                                     facecolor="black", edgecolor="none"))
    ax.text(4, -1.1 - gap, "B fragment (R72-R79; R88-R95 same banks)", ha="center",
            va="bottom", fontsize=9)
    ax.text(-1.1 - gap, 4, "A fragment (R64-R71; R80-R87 same banks)", ha="right", va="center",
            rotation=90, fontsize=9)
    ax.set_xlim(-1.75 - gap, 8.05)
    ax.set_ylim(8.05, -1.75 - gap)
    ax.set_aspect("equal")
    ax.axis("off")
    name = {"maxas": "maxas register map", "naive": "naive register map (C(i, j) = R(8i + j))"}[regmap]
    ax.set_title(f"{name}\nC shares a bank with its A or B operand: {m['c_conflicts']} of 64 cells; "
                 f"A with B: {m['ab_conflicts']}", fontsize=10)


def conflicts_figure(kernel: str = "sgemm_64"):
    """The register-bank figure of the generated ``kernel`` (see the module docstring)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    figs = conflict_figures(kernel)
    fig = Figure(figsize=(13, 11.2), layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subfigures(2, 1, height_ratios=[1, 1.45])
    top.suptitle(f"(a) Register bank conflicts and operand reuse of the generated {kernel} "
                 "(static analysis: 4 banks, 2-entry reuse cache per operand slot)", fontsize=12)
    axs = top.subplots(1, 4)
    _bars(axs[0], figs, "kstep_conflicts_unhidden", "kstep_conflicts_no_reuse",
          "Bank conflicts per k-step (64 FFMA)", "register bank conflicts")
    _bars(axs[1], figs, "kstep_reuse_hit_rate", None, "Reuse hit rate per k-step",
          "% of FFMA operand reads from reuse caches", percent=True)
    _bars(axs[2], figs, "kernel_conflicts_unhidden", "kernel_conflicts_no_reuse",
          "Bank conflicts, whole kernel", "register bank conflicts")
    _bars(axs[3], figs, "kernel_reuse_hit_rate", None, "Reuse hit rate, whole kernel",
          "% of ALU operand reads from reuse caches", percent=True)
    keys = [Patch(color=REGMAP_COLOURS[r], label=f"{r} register map") for r in REGMAPS]
    keys += [Patch(facecolor="white", edgecolor="#555555", hatch="///", label="conflicts with the reuse caches off"),
             Patch(facecolor="#555555", label="conflicts left unhidden with reuse on")]
    top.legend(handles=keys, loc="outside lower center", ncols=4, fontsize=9, frameon=False,
               title="Per k-step: the main loop's FFMAs, divided by its k-steps (64 FFMA each).  Whole "
                     "kernel: every ALU instruction of the program counted once (the loop body once), as "
                     "maxas counts its published figures.", title_fontsize=8.5)

    bottom.suptitle("(b) Register banks of one thread's 8x8 C block: FFMA C, A[i], B[j], C  "
                    "(cell colour = bank = register mod 4)", fontsize=12)
    maps = bottom.subplots(1, 2)
    for ax, regmap in zip(maps, REGMAPS):
        _map(ax, regmap)
    handles = [Patch(facecolor=col, edgecolor="#555555", label=f"bank {b}") for b, col in enumerate(BANK_COLOURS)]
    handles += [Patch(facecolor="white", edgecolor="black", linewidth=2.6,
                      label="C shares a bank with its A or B operand"),
                Line2D([], [], marker=[(-1, 1), (1, 1), (1, -1)], linestyle="none", markerfacecolor="black",
                       markeredgecolor="black", markersize=9,
                       label="A and B share a bank (unavoidable; hidden by reuse)")]
    bottom.legend(handles=handles, loc="outside lower center", ncols=6, fontsize=9, frameon=False)
    return fig
