"""The source view: the timed SM's figures per SASS instruction, as ``--json`` rows and as one
self-contained HTML page (``maxsim run ... --report run.html``).

Each row is one instruction of the kernel, in program order: its control code and text, how often
it issued (warp instructions), the issue cycles it took on its scheduler, the warp-cycles warps
spent stalled *waiting to issue it* split by the stall reasons of the run's totals
(:data:`maxsim.timing.stats.STALL_REASONS`), its register-bank conflicts and reuse hits, and for
memory instructions its shared-memory wavefronts and the L1/texture and L2 hit rates of its
requests. The SM cores keep these counters per instruction at the same points as the totals
(:data:`maxsim.timing.stats.PC_FIELDS`), so every column sums to the run's total.

Issue cycles: one per issue, none for the second instruction of a dual issue (it shares the
cycle), plus the dispatch cycles lost to register-bank conflicts (the scheduler is held for them).
Heat: the instruction's issue cycles and stall cycles as a share of all of them, the warp-cycles
spent at that instruction.
"""

from __future__ import annotations

import datetime
import html

from ..sass.printer import format_control, format_operand
from ..isa import instruction as ins
from ..timing.stats import PC_FIELDS, STALL_REASONS

# the --json totals each column of the rows sums to: (row field, --json key)
TOTALS = (
    ("executions", "sm_warp_instructions"),
    ("dual_issued", "dual_issues"),
    ("bank_conflicts", "sm_register_bank_conflicts"),
    ("bank_conflict_cycles", "bank_conflict_cycles"),
    ("delayed_conflicts", "delayed_bank_conflicts"),
    ("reuse_hits", "sm_reuse_hits"),
    ("operand_reads", "sm_operand_reads"),
    ("shared_requests", "shared_requests"),
    ("texture_requests", "texture_requests"),
)


def _text(i: ins.Instruction) -> str:
    pred = ""
    if i.pred != ins.PT or i.pred_neg:
        pred = "@" + ("!" if i.pred_neg else "") + ("PT" if i.pred == ins.PT else f"P{i.pred}") + " "
    body = i.full_opcode
    if i.operands:
        body += " " + ", ".join(format_operand(o) for o in i.operands)
    return pred + body


def loops(kernel) -> list:
    """The loops of the kernel from its branch targets: ``(head, branch)`` instruction indices of
    every backward branch (its target at or before it), outermost first."""
    out = [(i.target, i.index) for i in kernel.instructions
           if i.unit == "branch" and 0 <= i.target <= i.index]
    return sorted(set(out), key=lambda lp: (lp[0], -lp[1]))


def _rate(hits, total):
    return hits / total if total else None


# (id(kernel), id(its StaticInfo)) -> (kernel, static, per instruction its fixed columns): a kernel
# launched many times words its rows once
_STATIC_ROWS = {}


def _static_rows(kernel, static) -> list:
    """Per instruction of ``kernel`` the columns of its row that do not depend on the run: index,
    line, labels, control, text, opcode, unit, loops, operand reads per execution."""
    key = (id(kernel), id(static))
    hit = _STATIC_ROWS.get(key)
    if hit is None or hit[0] is not kernel or hit[1] is not static:
        labels = {}
        for name, idx in kernel.labels:
            labels.setdefault(idx, []).append(name)
        lps = loops(kernel)
        rows = [(i.index, i.line, tuple(labels.get(i.index, ())), format_control(i.control), _text(i),
                 i.full_opcode, i.unit, tuple(k for k, (a, b) in enumerate(lps) if a <= i.index <= b),
                 len(static.reads[i.index]))
                for i in kernel.instructions]
        if len(_STATIC_ROWS) >= 8:
            del _STATIC_ROWS[next(iter(_STATIC_ROWS))]
        hit = _STATIC_ROWS[key] = (kernel, static, rows)
    return hit[2]


def instruction_rows(sm) -> list:
    """One dict per instruction of the timed SM's kernel (program order): the ``--json``
    ``instructions`` rows."""
    per_pc = sm.stats.per_pc
    counts = per_pc.tolist() if per_pc is not None else None
    zero = [0] * len(PC_FIELDS)
    rows = []
    for index, line, labels, control, text, opcode, unit, in_loops, nreads in _static_rows(sm.kernel, sm.static):
        c = dict(zip(PC_FIELDS, counts[index] if counts is not None else zero))
        stalls = {r: c["stall_" + r] for r in STALL_REASONS}
        n = c["executions"]
        row = {
            "index": index, "line": line, "labels": list(labels),
            "control": control, "instruction": text, "opcode": opcode,
            "unit": unit,
            "loops": list(in_loops),
            "executions": n, "dual_issued": c["dual_issued"],
            "issue_cycles": n - c["dual_issued"] + c["bank_conflict_cycles"],
            "stall_cycles": sum(stalls.values()), "stalls": stalls,
            "bank_conflicts": c["bank_conflicts"], "bank_conflict_cycles": c["bank_conflict_cycles"],
            "delayed_conflicts": c["delayed_conflicts"], "reuse_hits": c["reuse_hits"],
            "operand_reads": n * nreads,
        }
        if unit in ("lds", "sts") or c["shared_requests"]:
            row.update(shared_requests=c["shared_requests"], shared_wavefronts=c["shared_wavefronts"])
        if c["texture_requests"]:
            row.update(texture_requests=c["texture_requests"], texture_sectors=c["texture_sectors"],
                       texture_hits=c["texture_hits"],
                       texture_hit_rate=_rate(c["texture_hits"], c["texture_sectors"]))
        else:
            row["texture_requests"] = 0
        if c["l2_hits"] + c["l2_misses"]:
            row.update(l2_sectors=c["l2_hits"] + c["l2_misses"], l2_hits=c["l2_hits"],
                       l2_hit_rate=_rate(c["l2_hits"], c["l2_hits"] + c["l2_misses"]))
        rows.append(row)
    spent = sum(r["issue_cycles"] + r["stall_cycles"] for r in rows)
    for r in rows:
        r["heat"] = (r["issue_cycles"] + r["stall_cycles"]) / spent if spent else 0.0
    return rows


def row_totals(rows) -> dict:
    """The sums of the rows' columns, named as the ``--json`` totals they equal."""
    out = {key: sum(r.get(field, 0) for r in rows) for field, key in TOTALS}
    out["stall_reasons"] = {x: sum(r["stalls"][x] for r in rows) for x in STALL_REASONS}
    wf = sum(r.get("shared_wavefronts", 0) for r in rows)
    out["shared_bank_conflicts"] = wf - out["shared_requests"]
    sectors = sum(r.get("texture_sectors", 0) for r in rows)
    out["texture_hit_rate"] = sum(r.get("texture_hits", 0) for r in rows) / sectors if sectors else 0.0
    l2 = sum(r.get("l2_sectors", 0) for r in rows)
    out["l2_hit_rate"] = sum(r.get("l2_hits", 0) for r in rows) / l2 if l2 else 0.0
    out["issue_cycles"] = sum(r["issue_cycles"] for r in rows)
    return out


# ---- the page -------------------------------------------------------------------------------------

_SHORT = {"stall_count": "stall count", "dependency": "depend&shy;ency", "barrier_wait": "BAR wait",
          "memory_throttle": "mem throttle", "pipe_busy": "pipe busy", "not_selected": "not selected"}

# columns: (key, header, title, kind) - kind "n" numbers, "t" text, "p" rates
def _columns():
    from .text import STALL_WORDS
    cols = [("index", "#", "instruction index (click: program order)", "n"),
            ("loop", "loop", "loops, from the backward branches: ┌ head, │ body, └ the branch", "t"),
            ("control", "control", "control code: wait mask : read barrier : write barrier : yield : stall", "t"),
            ("instruction", "instruction", "the SASS instruction", "t"),
            ("executions", "exec", "executions: warp instructions issued", "n"),
            ("dual_issued", "dual", "issued as the second of a dual-issued pair (shares the first's cycle)", "n"),
            ("issue_cycles", "issue cyc", "issue cycles: executions - dual + bank-conflict cycles", "n"),
            ("stall_cycles", "stall cyc", "warp-cycles stalled waiting to issue this instruction, all reasons", "n")]
    cols += [("s_" + r, _SHORT[r], f"warp-cycles stalled at it: {r} ({STALL_WORDS[r]})", "n") for r in STALL_REASONS]
    cols += [("bank_conflicts", "bank confl", "register-bank conflicts: extra bank reads after the reuse caches", "n"),
             ("bank_conflict_cycles", "confl cyc", "dispatch cycles lost to register-bank conflicts", "n"),
             ("reuse_hits", "reuse hits", "operands served by the reuse caches", "n"),
             ("shared_wavefronts", "shm wavefr", "shared-memory wavefronts (per request: 1 = no bank conflict)", "n"),
             ("texture_hit_rate", "L1 hit", "L1/texture cache hit rate of its sectors", "p"),
             ("l2_hit_rate", "L2 hit", "L2 hit rate of the sectors it read from the L2", "p"),
             ("heat", "heat", "share of all warp-cycles (issue + stalled) spent at this instruction", "p")]
    return cols


_STYLE = """
body { font-family: sans-serif; margin: 1.2em; color: #222; }
h1 { font-size: 20px; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 1px 5px; }
#source th { background: #eee; position: sticky; top: 0; cursor: pointer; user-select: none; }
#source th.sorted-asc::after { content: " ▲"; } #source th.sorted-desc::after { content: " ▼"; }
tr.ins { scroll-margin-top: 40px; }
tr.hidden { display: none; }
td.n, td.p { text-align: right; font-variant-numeric: tabular-nums; }
td.z { color: #bbb; }
td.t { white-space: pre; font-family: monospace; }
td.loop { color: #36c; font-family: monospace; white-space: pre; }
tr.label td { background: #f3f6fb; color: #36c; font-family: monospace; font-weight: bold; }
tr.inloop td.instruction { background: #f7f9ff; }
tr.hot td { background: #fff0e0; }
tr.hot td.instruction { font-weight: bold; }
td.heat { position: relative; min-width: 70px; }
td.heat span.bar { position: absolute; left: 0; top: 1px; bottom: 1px; background: #f08c3c; opacity: .55; }
td.heat span.v { position: relative; }
td.stall.big { background: #fbd3d3; }
td.confl.big { background: #f5d7f5; }
#totals td { text-align: right; font-variant-numeric: tabular-nums; }
#totals th { text-align: left; background: #eee; }
p.note { color: #555; font-size: 12px; max-width: 1100px; }
"""

_SCRIPT = """
(function () {
  var table = document.getElementById('source');
  var body = table.tBodies[0];
  var heads = table.tHead.rows[0].cells;
  function val(tr, k) {
    var c = tr.cells[k];
    var v = c.getAttribute('data-v');
    if (v === null) return c.textContent;
    return v === '' ? -1 : parseFloat(v);
  }
  function sortBy(k, desc) {
    var rows = Array.prototype.slice.call(body.querySelectorAll('tr.ins'));
    var labels = body.querySelectorAll('tr.label');
    var byLabel = k === 0 && !desc;
    rows.sort(function (a, b) {
      var x = val(a, k), y = val(b, k), r;
      if (typeof x === 'number' && typeof y === 'number') r = x - y; else r = String(x).localeCompare(String(y));
      if (desc) r = -r;
      return r !== 0 ? r : val(a, 0) - val(b, 0);
    });
    for (var i = 0; i < labels.length; i++) labels[i].style.display = byLabel ? '' : 'none';
    if (byLabel) {
      var all = Array.prototype.slice.call(body.rows);
      all.sort(function (a, b) { return parseFloat(a.getAttribute('data-order')) - parseFloat(b.getAttribute('data-order')); });
      all.forEach(function (tr) { body.appendChild(tr); });
    } else {
      rows.forEach(function (tr) { body.appendChild(tr); });
    }
    for (var j = 0; j < heads.length; j++) heads[j].className = '';
    heads[k].className = desc ? 'sorted-desc' : 'sorted-asc';
    table.setAttribute('data-sorted', k + (desc ? ':desc' : ':asc'));
  }
  for (var k = 0; k < heads.length; k++) {
    (function (k) {
      heads[k].addEventListener('click', function () {
        var now = table.getAttribute('data-sorted');
        // numbers sort largest first on the first click, text and the index in program order
        var numeric = heads[k].getAttribute('data-kind') !== 't' && k !== 0;
        var desc = now === k + ':desc' ? false : (now === k + ':asc' ? true : numeric);
        sortBy(k, desc);
      });
    })(k);
  }
  table.setAttribute('data-sorted', '0:asc');
  // the rows shown: all, one loop's (data-loops holds the row's loops) or the hot ones
  var pick = document.getElementById('show');
  function show(what) {
    var rows = body.rows;
    for (var i = 0; i < rows.length; i++) {
      var tr = rows[i], on = true;
      if (what === 'hot') on = tr.classList.contains('hot');
      else if (what.indexOf('loop') === 0) on = (' ' + (tr.getAttribute('data-loops') || '') + ' ').indexOf(' ' + what.slice(4) + ' ') >= 0;
      tr.classList.toggle('hidden', !on);
    }
    pick.value = what;
  }
  pick.addEventListener('change', function () { show(pick.value); });
  var want = location.hash.slice(1);
  for (var j = 0; j < pick.options.length; j++) if (pick.options[j].value === want) show(want);
})();
"""


def _fmt(v, kind):
    if v is None:
        return "", ""
    if kind == "p":
        return f"{100 * v:.1f}%" if v else "0", f"{v:.6g}"
    return f"{v:,}", str(v)


def _loop_marks(rows, n_loops):
    """Per row the loop bracket text: one column per loop, ┌ at its head, └ at its branch."""
    out = []
    for r in rows:
        marks = []
        for k in range(n_loops):
            if k in r["loops"]:
                marks.append("┌" if r.get("_head_of") and k in r["_head_of"] else
                             ("└" if r.get("_branch_of") and k in r["_branch_of"] else "│"))
            else:
                marks.append(" ")
        out.append("".join(marks).rstrip())
    return out


def render(out: dict, title: str = "") -> str:
    """The page's text for the figures of a run (``maxsim run --json``'s object, with
    ``instructions``)."""
    e = html.escape
    rows = out.get("instructions") or []
    cols = _columns()
    totals = row_totals(rows)
    heads = {}
    branches = {}
    lps = sorted({(min(x["index"] for x in rows if k in x["loops"]),
                   max(x["index"] for x in rows if k in x["loops"]), k)
                  for r in rows for k in r["loops"]})
    for a, b, k in lps:
        heads.setdefault(a, set()).add(k)
        branches.setdefault(b, set()).add(k)
    n_loops = len(lps)
    marked = [dict(r, _head_of=heads.get(r["index"]), _branch_of=branches.get(r["index"])) for r in rows]
    marks = _loop_marks(marked, n_loops)
    hottest = sorted((r["heat"] for r in rows), reverse=True)
    # hot: at least a quarter of the hottest row's heat and twice the average row's
    hot_cut = max(hottest[0] / 4, 2 / len(hottest)) if hottest else 1.0
    stall_max = max((r["stall_cycles"] for r in rows), default=0)
    name = out.get("workload") or out.get("kernel") or ""
    title = title or f"maxsim source view: {name}"
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{e(title)}</title>",
             f"<style>{_STYLE}</style></head><body>", f"<h1>{e(title)}</h1>"]
    geo = ", ".join(f"{k} {out[k]}" for k in ("kernel", "config", "m", "n", "k") if out.get(k) is not None)
    sm_ctas = out.get("sm_ctas")
    parts.append(f'<p>{e(geo)}; the timed SM{f" ({sm_ctas} CTAs)" if sm_ctas else ""}: '
                 f'<b>{out.get("sm_cycles", 0):,}</b> cycles, IPC {out.get("sm_ipc", 0):.3f}, '
                 f'{datetime.date.today().isoformat()}.</p>')
    # totals: the sums of the rows (equal to the run's --json totals)
    stall_total = sum(totals["stall_reasons"].values()) or 1
    parts.append('<table id="totals"><tr><th>totals (sums of the rows)</th><th>value</th><th>--json key</th></tr>')
    for field, key in TOTALS + (("shared_bank_conflicts", "shared_bank_conflicts"),
                                ("texture_hit_rate", "texture_hit_rate"), ("l2_hit_rate", "l2_hit_rate"),
                                ("issue_cycles", "")):
        v = totals[key or field]
        shown = f"{100 * v:.1f}%" if isinstance(v, float) else f"{v:,}"
        data = f"{v:.6g}" if isinstance(v, float) else str(v)
        parts.append(f'<tr><th>{e(field.replace("_", " "))}</th><td id="total-{e(key or field)}" data-v="{data}">'
                     f'{shown}</td><td>{e(key)}</td></tr>')
    for r in STALL_REASONS:
        v = totals["stall_reasons"][r]
        parts.append(f'<tr><th>stalled: {e(r)}</th><td id="total-stall-{r}" data-v="{v}">{v:,} '
                     f'({100 * v / stall_total:.1f}%)</td><td>stall_reasons.{r}</td></tr>')
    parts.append("</table>")
    parts.append('<p class="note">One row per SASS instruction in program order (labels in blue rows; '
                 "loops marked from the backward branches). <b>exec</b>: warp instructions; <b>dual</b>: "
                 "issued as the second of a dual-issued pair; <b>issue cyc</b>: exec &minus; dual + "
                 "bank-conflict cycles; <b>stall cyc</b> and the six reason columns: warp-cycles warps "
                 "spent stalled <i>waiting to issue this instruction</i>, by the reasons of the run's "
                 "totals; <b>heat</b>: its issue and stall cycles as a share of all. Hot rows (heat at least a "
                 "quarter of the hottest's and twice the average) are shaded. Click a column header to sort by it (again to reverse; "
                 "<b>#</b> restores program order). Hover a header for its meaning.</p>")
    options = ['<option value="all">all instructions</option>']
    for a, b, k in lps:
        at = next((r["labels"][0] for r in rows if r["index"] == a and r["labels"]), f"instruction {a}")
        options.append(f'<option value="loop{k}">loop {k + 1}: {e(at)} (instructions {a}-{b})</option>')
    options.append('<option value="hot">hot rows</option>')
    parts.append(f'<p>Show: <select id="show">{"".join(options)}</select> (or open the page with '
                 f'#loop0, #hot ... after its name)</p>')
    parts.append(f'<table id="source" data-rows="{len(rows)}"><thead><tr>')
    for key, head, tip, kind in cols:
        parts.append(f'<th data-key="{e(key)}" data-kind="{kind}" title="{e(tip)}">{head}</th>')
    parts.append("</tr></thead><tbody>")
    order = 0
    for r, mark in zip(rows, marks):
        for lab in r["labels"]:
            parts.append(f'<tr class="label" data-order="{order}" data-loops="{" ".join(map(str, r["loops"]))}">'
                         f'<td colspan="{len(cols)}">{e(lab)}:</td></tr>')
            order += 1
        cls = ["ins"] + (["inloop"] if r["loops"] else [])
        if r["heat"] >= hot_cut and r["heat"] > 0:
            cls.append("hot")
        tds = []
        for key, head, tip, kind in cols:
            if key == "loop":
                tds.append(f'<td class="loop">{e(mark)}</td>')
                continue
            if key in ("control", "instruction"):
                tds.append(f'<td class="t {key}" title="line {r["line"]}">{e(r[key])}</td>')
                continue
            v = r["stalls"][key[2:]] if key.startswith("s_") else r.get(key)
            text, data = _fmt(v, kind)
            klass = [kind]
            if v == 0:
                klass.append("z")
            if key.startswith("s_") or key == "stall_cycles":
                klass.append("stall")
                if stall_max and v and v >= 0.25 * stall_max:
                    klass.append("big")
            if key in ("bank_conflicts", "bank_conflict_cycles") and v:
                klass += ["confl", "big"]
            if key == "shared_wavefronts" and v is not None and r.get("shared_requests"):
                text = f"{v:,} / {r['shared_requests']:,}"
            if key == "heat":
                klass.append("heat")
                width = 100 * v / hottest[0] if hottest and hottest[0] else 0
                text = f'<span class="bar" style="width:{width:.1f}%"></span><span class="v">{e(text)}</span>'
                tds.append(f'<td class="{" ".join(klass)}" data-v="{data}">{text}</td>')
                continue
            tds.append(f'<td class="{" ".join(klass)}" data-v="{data}">{e(text)}</td>')
        parts.append(f'<tr id="i{r["index"]}" class="{" ".join(cls)}" data-order="{order}" data-index="{r["index"]}" '
                     f'data-loops="{" ".join(map(str, r["loops"]))}">' + "".join(tds) + "</tr>")
        order += 1
    parts.append("</tbody></table>")
    parts.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(parts)


def write_page(path, out: dict, title: str = "") -> str:
    """Write the source view of a run's figures to ``path`` (HTML); returns the path."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(render(out, title))
    return path
