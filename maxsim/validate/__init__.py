"""``maxsim validate``: every correlation of the model with hardware, as one table.

Three groups of figures, each row a figure with its published counterpart and source:

* the micro-benchmarks of the timing model (:mod:`maxsim.validate.micro`): small kernels in maxas
  text (:mod:`maxsim.validate.kernels`) run through the simulator — ALU latency and issue rate,
  dual issue, register-bank conflicts and reuse, shared-memory latency and bank conflicts, the
  latencies of the L1/texture cache, L2 and DRAM by pointer chasing, texture and DRAM throughput,
  BAR.SYNC;
* the SGEMM figures (given by the caller as ``sgemm``, the command line gives
  :mod:`workloads.sgemm.validate`): static bank-conflict and reuse figures of the generated
  kernels, main-loop cycles, and whole-GPU GFLOPS against the measured curves.

Nothing in the simulator imports this module, and it imports no workload: the SGEMM rows come in
through ``validate(..., sgemm=)``.
"""

from __future__ import annotations

import attrs

from .rows import KINDS, SOURCES, Row, source_names

__all__ = ["validate", "Validation", "Row", "KINDS", "SOURCES", "format_table", "PARTS"]

PARTS = ("micro", "sgemm_static", "sgemm_loop", "sgemm_gflops")


@attrs.frozen
class Validation:
    """The rows of one validation run, the config they were run with, and the SGEMM comparison
    (the comparison result of the SGEMM rows' provider, or None when that part was not run)."""

    rows: tuple
    config: str
    gpu: str
    quick: bool
    comparison: dict | None = None

    def to_list(self) -> list:
        return [r.to_dict() for r in self.rows]

    def counts(self) -> dict:
        out = {"pass": 0, "deviation": 0, "—": 0}
        for r in self.rows:
            out[r.status] += 1
        return out


def validate(cfg, quick=False, parts=None, progress=None, jobs=1, sgemm=None, engine=None, cache=None) -> Validation:
    """Run the chosen ``parts`` of the validation with the architecture config ``cfg`` (default:
    every part, the SGEMM ones only when ``sgemm`` is given). ``sgemm``: the provider of the SGEMM
    rows, a module or object with ``static_rows()``, ``loop_rows(cfg, quick, progress)`` and
    ``gflops_rows(cfg, quick, progress, jobs)`` (:mod:`workloads.sgemm.validate`).
    ``quick``: the SGEMM loop cycles on a shorter K and the GFLOPS at the provider's quick sizes
    only. ``progress(done, total, what, unit)``: see :mod:`maxsim.report.progress`. ``jobs``:
    worker processes of the GFLOPS predictions; ``engine`` (a :class:`maxsim.engine.Engine`) and
    ``cache`` (a :class:`maxsim.cache.ResultCache`): where they run and are kept, given to the
    provider's ``gflops_rows`` when set."""
    from . import micro

    if parts is None:
        parts = PARTS if sgemm is not None else ("micro",)
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise ValueError(f"unknown validation part(s) {unknown}: choose from {', '.join(PARTS)}")
    if sgemm is None and any(p.startswith("sgemm") for p in parts):
        raise ValueError("the SGEMM parts of the validation need the SGEMM rows: validate(..., sgemm=...)")

    def tell(what, unit):
        if progress is None:
            return None
        return lambda done, total, *_: progress(done, total, what, unit)

    rows, comparison = [], None
    if "micro" in parts:
        rows += micro.micro_rows(cfg, quick=quick, progress=tell("micro-benchmarks", "benchmarks"))
    if "sgemm_static" in parts:
        rows += sgemm.static_rows()
    if "sgemm_loop" in parts:
        rows += sgemm.loop_rows(cfg, quick=quick, progress=tell("SGEMM main loops", "kernels"))
    if "sgemm_gflops" in parts:
        where = {k: v for k, v in (("engine", engine), ("cache", cache)) if v is not None}
        more, comparison = sgemm.gflops_rows(cfg, quick=quick, jobs=jobs, **where,
                                             progress=None if progress is None else
                                             (lambda d, n, name: progress(d, n, f"SGEMM GFLOPS {name}", "sizes")))
        rows += more
    order = list(KINDS)
    rows.sort(key=lambda r: order.index(r.kind))  # grouped by kind, each group in measuring order
    return Validation(rows=tuple(rows), config=cfg.name, gpu=cfg.gpu.name, quick=quick, comparison=comparison)


def _num(v):
    if v is None:
        return "—"
    if v != v or v in (float("inf"), float("-inf")):
        return str(v)
    if float(v).is_integer() and abs(v) < 1e6:
        return f"{int(v)}"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:.1f}" if abs(v) < 1000 else f"{v:.0f}"


def cell(row, column) -> str:
    """The text of one table cell (shared by the text table and the HTML report)."""
    if column == "simulated":
        return _num(row.simulated)
    if column == "published":
        return _num(row.published)
    if column == "deviation":
        d = row.deviation_percent
        if d is None:
            return "—"
        return f"{d:+.1f}%"
    return str(getattr(row, column))


COLUMNS = (("name", "figure"), ("simulated", "simulated"), ("published", "published"), ("unit", "unit"),
           ("source", "source"), ("deviation", "deviation"), ("tolerance", "tolerance"), ("status", "status"))


def format_table(v: Validation) -> str:
    """The plain-text table: one row per figure, then the sources cited and a count."""
    rows = v.rows
    widths = {c: max([len(h)] + [len(cell(r, c)) for r in rows]) for c, h in COLUMNS}
    right = {"simulated", "published", "deviation"}

    def fmt(values):
        return "  ".join(v.rjust(widths[c]) if c in right else v.ljust(widths[c])
                         for (c, _), v in zip(COLUMNS, values)).rstrip()

    mode = "quick" if v.quick else "full"
    lines = [f"maxsim validation ({mode}) with config {v.config} ({v.gpu})", "",
             fmt([h for _, h in COLUMNS]), fmt(["-" * widths[c] for c, _ in COLUMNS])]
    kind = None
    for r in rows:
        if r.kind != kind:
            if kind is not None:
                lines.append("")
            kind = r.kind
        lines.append(fmt([cell(r, c) for c, _ in COLUMNS]))
    n = v.counts()
    lines += ["", f"{len(rows)} figures: {n['pass']} pass, {n['deviation']} deviation, "
                  f"{n['—']} without a published figure",
              "sources:"] + [f"  [{s}] {SOURCES.get(s, '')}" for s in source_names(rows)]
    return "\n".join(lines)
