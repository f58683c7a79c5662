"""The source view (``maxsim run ... --report run.html``, ``--json``'s ``instructions``).

The rows come from the SM cores' per-instruction counters (their attribution to the right
instruction is checked against hand-derived cycle counts in test_timing_micro.py, and the two cores
against each other with every column summing to its total in test_core_parity.py). Here: the rows
of real runs (the SGEMM, a kernel file with global loads through the L2, the launch API) sum to the
``--json`` totals; the page is self-contained; and in a headless Chromium it loads with no network,
shows every row, sorts on a click of a column header and shows the totals of the JSON.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import browser

import maxsim
from maxsim.cli import main
from maxsim.errors import MaxsimError
from maxsim.host import Buffer, Kernel
from maxsim.report.source import TOTALS, loops, row_totals
from maxsim.timing.stats import STALL_REASONS

ROOT = Path(__file__).resolve().parents[1]
VECADD = ROOT / "workloads" / "kernels" / "vecadd.sass"
SGEMM = ["run", "sgemm_64", "--m", "128", "--n", "128", "--k", "64"]


def _run(argv, capsys):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def sgemm_page(tmp_path_factory):
    path = tmp_path_factory.mktemp("source") / "run.html"
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(SGEMM + ["--report", str(path), "--json"]) == 0
    return json.loads(buf.getvalue()), path


def assert_rows_sum_to_totals(out):
    rows = out["instructions"]
    sums = row_totals(rows)
    for _, key in TOTALS:
        assert sums[key] == out[key], key
    assert sums["stall_reasons"] == out["stall_reasons"]
    for key in ("shared_bank_conflicts", "texture_hit_rate", "l2_hit_rate"):
        assert sums[key] == pytest.approx(out[key], abs=1e-12), key
    # each row's own figures are consistent
    for r in rows:
        assert r["stall_cycles"] == sum(r["stalls"].values())
        assert r["issue_cycles"] == r["executions"] - r["dual_issued"] + r["bank_conflict_cycles"]
        assert 0 <= r["dual_issued"] <= r["executions"]
    assert sum(r["heat"] for r in rows) == pytest.approx(1.0)


def test_sgemm_rows_sum_to_the_json_totals(sgemm_page):
    out, path = sgemm_page
    rows = out["instructions"]
    assert_rows_sum_to_totals(out)
    assert [r["index"] for r in rows] == list(range(len(rows)))
    # the generated sgemm_64's main loop: from the LOOP label to its backward branch
    loop = [r for r in rows if r["loops"] == [0]]
    head, last = loop[0], loop[-1]
    assert head["labels"] == ["LOOP"] and last["opcode"] == "BRA"
    # K = 64: 8 k-steps per iteration, 8 iterations of each warp of the timed SM's CTAs (2 warps each;
    # the 128 x 128 problem has 4 CTAs)
    assert out["sm_ctas"] == 4
    warps = 2 * out["sm_ctas"]
    assert head["executions"] == 8 * warps
    ffma = [r for r in loop if r["opcode"] == "FFMA"]
    assert len(ffma) == 8 * 64 and all(r["executions"] == 8 * warps for r in ffma)
    # every LDS of the loop issues beside an FFMA: dual-issued (nearly) every time
    lds = [r for r in loop if r["opcode"].startswith("LDS")]
    assert lds and all(r["dual_issued"] > 0.9 * r["executions"] for r in lds)
    assert all(r["shared_wavefronts"] == r["shared_requests"] for r in lds)  # conflict-free LDS.128
    tld = [r for r in rows if r["opcode"].startswith("TLD")]
    assert tld and all(r["texture_requests"] > 0 and 0 <= r["texture_hit_rate"] <= 1 for r in tld)


def test_kernel_file_with_global_loads_has_l2_rows(tmp_path, capsys):
    n = 4096
    np.save(tmp_path / "a.npy", np.arange(n, dtype=np.float32))
    np.save(tmp_path / "b.npy", np.ones(n, dtype=np.float32))
    page = tmp_path / "vecadd.html"
    out = _run(["run", str(VECADD), "--grid", "32", "--block", "128", "--param", f"n={n}", "--param", "a=a",
                "--param", "b=b", "--param", "c=c", "--buffer", f"a={tmp_path / 'a.npy'}:in",
                "--buffer", f"b={tmp_path / 'b.npy'}:in", "--buffer", f"c=zeros:{n}", "--quiet",
                "--report", str(page)], capsys)
    assert_rows_sum_to_totals(out)
    ldg = [r for r in out["instructions"] if r["opcode"].startswith("LDG")]
    assert len(ldg) == 2
    for r in ldg:
        # a warp's 32 floats: 128 bytes, 4 sectors of 32 bytes, each read once (cold: all miss)
        assert r["l2_sectors"] == 4 * r["executions"] and r["executions"] == 4 * out["sm_ctas"]  # 4 warps a CTA
        assert r["l2_hits"] == 0 and r["l2_hit_rate"] == 0.0
    assert sum(r["l2_sectors"] for r in ldg) == sum(r.get("l2_sectors", 0) for r in out["instructions"])
    text = page.read_text()
    assert text.count('<tr id="i') == len(out["instructions"])


def test_launch_api_gives_the_rows_and_writes_the_page(tmp_path):
    n = 1000
    r = maxsim.launch(Kernel.load(VECADD), grid=8, block=128, params={"a": "a", "b": "b", "c": "c", "n": n},
                      buffers={"a": Buffer.of(np.ones(n, np.float32), "in"),
                               "b": Buffer.of(np.ones(n, np.float32), "in"), "c": Buffer.zeros(n)},
                      predict=False)
    assert r.instructions == r.fields()["instructions"] and len(r.instructions) == len(r.kernel.code.instructions)
    assert_rows_sum_to_totals(r.fields())
    path = r.write_source_page(tmp_path / "v.html")
    assert Path(path).read_text().count('class="ins') == len(r.instructions)
    untimed = maxsim.launch(Kernel.load(VECADD), grid=1, block=32, params={"a": "a", "b": "b", "c": "c", "n": 32},
                            buffers={"a": Buffer.zeros(32), "b": Buffer.zeros(32), "c": Buffer.zeros(32)},
                            timing=False, predict=False)
    assert untimed.instructions == []
    with pytest.raises(MaxsimError, match="needs the timing run"):
        untimed.write_source_page(tmp_path / "x.html")


def test_page_is_self_contained(sgemm_page):
    out, path = sgemm_page
    text = path.read_text()
    assert not re.search(r"https?://", text)
    assert "<link" not in text and not re.search(r'\ssrc=', text) and "@import" not in text
    assert text.count('<tr id="i') == len(out["instructions"])
    assert 'id="total-sm_warp_instructions" data-v="%d"' % out["sm_warp_instructions"] in text


def test_loops_from_branch_targets():
    k = Kernel.load(ROOT / "workloads" / "kernels" / "gcd_divergent.sass").code
    lps = loops(k)
    assert lps and all(k.instructions[b].opcode == "BRA" and k.instructions[b].target == a for a, b in lps)


@pytest.mark.parametrize("args,fragment", [
    (["--report", "run.png"], "ending in .html"),
    (["--report", "/no/such/folder/run.html"], "does not exist"),
    (["--report", "run.html", "--functional"], "needs the timing run"),
])
def test_bad_report_arguments_one_line_exit_2(args, fragment, capsys):
    assert main(["run", "sgemm_64", "--quiet"] + args) == 2
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1


# ---- in a browser ----------------------------------------------------------------------------


# Once loaded: counts the rows, reads the totals and sums the exec column in the page, clicks the
# "stall cyc" header (sorts largest first) and records the order, clicks "#" (program order).
_PROBE = """<script>
window.addEventListener("load", function () {
  function order() { return Array.prototype.map.call(document.querySelectorAll("#source tr.ins"),
                                                     function (tr) { return tr.getAttribute("data-index"); }); }
  function col(key) { var hs = document.querySelectorAll("#source th");
    for (var i = 0; i < hs.length; i++) if (hs[i].getAttribute("data-key") === key) return i; }
  function values(k) { return Array.prototype.map.call(document.querySelectorAll("#source tr.ins"),
                                                        function (tr) { return parseFloat(tr.cells[k].getAttribute("data-v")); }); }
  var out = document.createElement("div");
  out.id = "probe";
  var before = order();
  var exec = values(col("executions")).reduce(function (a, b) { return a + b; }, 0);
  var stall = col("stall_cycles");
  document.querySelectorAll("#source th")[stall].click();
  var sorted = values(stall);
  var after = order();
  document.querySelectorAll("#source th")[0].click();
  var back = order();
  var totals = {};
  document.querySelectorAll("#totals td[id]").forEach(function (td) { totals[td.id] = td.getAttribute("data-v"); });
  out.textContent = JSON.stringify({rows: before.length, exec: exec, before: before, sorted: sorted,
                                    after: after, back: back, totals: totals,
                                    visible_labels: document.querySelectorAll("#source tr.label").length});
  document.body.appendChild(out);
});
</script>"""


@pytest.mark.skipif(browser.chromium() is None, reason=browser.SKIP_REASON)
def test_page_in_a_headless_browser(sgemm_page, tmp_path):
    out, path = sgemm_page
    rows = out["instructions"]
    page = tmp_path / "probe.html"
    page.write_text(path.read_text().replace("</body>", _PROBE + "</body>"))
    dom = browser.dump_dom(page, tmp_path)
    probe = re.search(r'<div id="probe">(.*?)</div>', dom, re.S)
    assert probe, dom[-2000:]
    got = json.loads(probe.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
                     .replace("&quot;", '"'))
    assert got["rows"] == len(rows)
    assert got["before"] == [str(r["index"]) for r in rows]  # program order
    assert got["exec"] == out["sm_warp_instructions"]
    # the click sorted by stall cycles, largest first (ties in program order)
    want = sorted(rows, key=lambda r: (-r["stall_cycles"], r["index"]))
    assert got["after"] == [str(r["index"]) for r in want]
    assert got["sorted"] == sorted(got["sorted"], reverse=True) and got["sorted"][0] > 0
    assert got["back"] == got["before"]
    # the totals shown are the JSON's
    t = got["totals"]
    for _, key in TOTALS:
        assert int(t[f"total-{key}"]) == out[key], key
    for r in STALL_REASONS:
        assert int(t[f"total-stall-{r}"]) == out["stall_reasons"][r], r
    for key in ("texture_hit_rate", "l2_hit_rate"):
        assert float(t[f"total-{key}"]) == pytest.approx(out[key], rel=1e-5)
    # a screenshot is not blank
    shot = tmp_path / "shot.png"
    browser.screenshot(path, shot, tmp_path, size="1400,900")
    assert shot.stat().st_size > 50_000
