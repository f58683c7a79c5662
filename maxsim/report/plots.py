"""Figures for people: writing a :class:`matplotlib.figure.Figure` to a ``.png``, ``.svg`` or ``.pdf``.

Every figure of maxsim is built directly (no ``pyplot``, no window, no global state) on the Agg
canvas; :func:`check_output_path` checks a file name before the work and :func:`save_figure`
writes it. The SGEMM's register-bank figure (``maxsim plot conflicts``) is
:mod:`workloads.sgemm.figures`; the comparison plot is :mod:`maxsim.report.compare_plot`.
"""

from __future__ import annotations

import os

from ..errors import MaxsimError

FORMATS = (".png", ".svg", ".pdf")


class PlotError(MaxsimError):
    """A figure that cannot be written (unknown file type, unwritable path)."""


def check_output_path(path) -> str:
    """The file extension of ``path`` if maxsim can write that format into an existing directory;
    else a :class:`PlotError`."""
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in FORMATS:
        got = f"{ext!r}" if ext else "no extension"
        raise PlotError(f"{path}: cannot write a figure with {got}: use one of {', '.join(FORMATS)}")
    folder = os.path.dirname(str(path)) or "."
    if not os.path.isdir(folder):
        raise PlotError(f"{path}: cannot write the figure: no directory {folder}")
    return ext


def save_figure(fig, path, dpi: int = 100, palette: bool = True) -> str:
    """Write ``fig`` to ``path`` (format from the extension: .png, .svg or .pdf); returns the path.

    With ``palette`` a PNG is stored with a 256-colour palette: these figures use a handful of flat
    colours, so it looks the same at about a third of the size.
    """
    ext = check_output_path(path)
    try:
        if ext == ".png" and palette:
            import io

            from PIL import Image

            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=dpi)
            buf.seek(0)
            with Image.open(buf) as im:
                im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(
                    path, format="PNG", optimize=True)
        else:
            fig.savefig(path, dpi=dpi)
    except OSError as e:
        raise PlotError(f"{path}: cannot write the figure: {e.strerror or e}") from None
    return str(path)
