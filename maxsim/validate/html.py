"""The validation as one self-contained HTML page (``maxsim validate -o report.html``): the table
with pass / deviation coloured, the correlation plot and the SGEMM GFLOPS-against-N plot embedded as
base64 PNG, the config and the maxsim version, and every source cited named in full. No external
file, script or style sheet: the page opens anywhere, offline.
"""

from __future__ import annotations

import base64
import datetime
import html

from .. import __version__
from . import COLUMNS, Validation, cell
from .rows import KINDS, SOURCES, source_names

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #bbb; padding: 3px 7px; }
th { background: #eee; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.pass td.status { background: #c8f0c8; }
tr.deviation td.status { background: #f6c0c0; font-weight: bold; }
tr.deviation td.dev { color: #a00; }
tr.kind th { background: #dde6f3; }
td.note { color: #555; font-size: 12px; }
figure { display: inline-block; margin: 1em 1em 1em 0; vertical-align: top; }
figcaption { font-size: 12px; color: #444; max-width: 720px; }
"""


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="plot" alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def render(v: Validation, correlation_png: bytes, compare_png: bytes | None = None, config_text: str = "") -> str:
    """The page's text."""
    e = html.escape
    n = v.counts()
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>maxsim validation: {e(v.config)}</title>", f"<style>{_STYLE}</style></head><body>",
           f"<h1>maxsim validation against hardware</h1>",
           f'<p>maxsim {e(__version__)}, config <b id="config">{e(v.config)}</b> ({e(v.gpu)}), '
           f'{"quick" if v.quick else "full"} run, {datetime.date.today().isoformat()}. '
           f'<span id="summary">{len(v.rows)} figures: {n["pass"]} pass, {n["deviation"]} deviation, '
           f'{n["—"]} without a published figure.</span></p>',
           "<p>Each row is one figure the model produces by simulation (micro-benchmark kernels run "
           "through the simulator, the static analysis of the generated SGEMM kernels, the SGEMM "
           "harness and the whole-GPU prediction), set against its published hardware figure. A row "
           "passes within the tolerance of its kind; a deviation is shown, not hidden. "
           "“—”: no published figure.</p>"]
    out.append('<table id="validation"><thead><tr>' + "".join(f"<th>{e(h)}</th>" for _, h in COLUMNS)
               + "<th>how measured / note</th></tr></thead><tbody>")
    kind = None
    for r in v.rows:
        if r.kind != kind:
            kind = r.kind
            out.append(f'<tr class="kind"><th colspan="{len(COLUMNS) + 1}">{e(KINDS[kind].label)}</th></tr>')
        cls = {"pass": "pass", "deviation": "deviation"}.get(r.status, "none")
        tds = []
        for c, _ in COLUMNS:
            klass = {"simulated": "num", "published": "num", "deviation": "num dev", "status": "status"}.get(c, c)
            tds.append(f'<td class="{klass}">{e(cell(r, c))}</td>')
        out.append(f'<tr class="row {cls}" data-kind="{e(r.kind)}">' + "".join(tds)
                   + f'<td class="note">{e(r.note)}</td></tr>')
    out.append("</tbody></table>")
    out.append("<h2>Plots</h2>")
    out.append("<figure>" + _img(correlation_png, "simulated against published, log-log")
               + "<figcaption>Simulated against published, log-log: one marker per figure, shape by kind, "
                 "green within its tolerance, red a deviation; the line is simulated = published, the "
                 "band ±10%.</figcaption></figure>")
    if compare_png is not None:
        out.append("<figure>" + _img(compare_png, "SGEMM GFLOPS against N, simulated and measured")
                   + "<figcaption>SGEMM GFLOPS against N: the whole-GPU prediction against the measured "
                     "maxas curves (cuBLAS as reference).</figcaption></figure>")
    out.append('<h2>Sources</h2><ul id="sources">')
    for s in source_names(v.rows):
        out.append(f"<li>[{e(s)}] {e(SOURCES.get(s, ''))}</li>")
    out.append("</ul>")
    if config_text:
        out.append(f"<h2>Config {e(v.config)}</h2><pre id=\"config-text\">{e(config_text)}</pre>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def config_text(cfg) -> str:
    """The resolved config, section by section, with the file it was read from."""
    d = cfg.to_dict()
    lines = [f"# {d['description']}", f"# read from {d['source']}"]
    for sec, vals in d.items():
        if isinstance(vals, dict):
            lines.append(f"[{sec}]")
            lines += [f"{k} = {v!r}" for k, v in vals.items()]
    return "\n".join(lines)


def write_report(v: Validation, path, cfg_text: str = "") -> str:
    """Draw the plots and write the page to ``path``; returns the path."""
    from ..errors import MaxsimError
    from .plot import correlation_figure, png_bytes

    corr = png_bytes(correlation_figure(v.rows, title=f"maxsim {v.config} against hardware"))
    comp = None
    if v.comparison is not None:
        from ..report.compare_plot import comparison_figure
        comp = png_bytes(comparison_figure(v.comparison), dpi=90)
    text = render(v, corr, comp, cfg_text)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as err:
        raise MaxsimError(f"cannot write the report {path}: {err.strerror or err}") from None
    return path
