"""docs/source-view.md quotes the figures of two runs (sgemm_64 with and without reuse flags):
this test runs both and checks every figure the page quotes, and the facts it states about the
rows, so the page cannot drift from what the simulator gives."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from maxsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "source-view.md"


def _run(*extra):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["run", "sgemm_64", "--json", "--quiet", *extra]) == 0
    return json.loads(buf.getvalue())


@pytest.fixture(scope="module")
def runs():
    return _run(), _run("--no-reuse")


def _n(v):
    return f"{v:,}"


def test_the_page_shows_its_screenshot():
    text = PAGE.read_text()
    assert "(img/source-view-sgemm64.png)" in text
    png = ROOT / "docs" / "img" / "source-view-sgemm64.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 50_000


def test_figures_quoted_are_those_of_the_runs(runs):
    text = " ".join(PAGE.read_text().split())  # line breaks as spaces
    a, b = runs
    rows, nrows = a["instructions"], b["instructions"]
    loop = [r for r in rows if r["loops"] == [0]]
    head, branch = loop[0]["index"], loop[-1]["index"]
    quoted = []

    def q(value, fmt=_n):
        quoted.append(fmt(value))

    assert rows[head]["labels"] == ["LOOP"] and rows[branch]["instruction"] == "@P0 BRA LOOP"
    assert f"(instruction {head}) to `@P0 BRA LOOP` ({branch})" in text
    assert {r["executions"] for r in loop} == {512} and "16 warps × 32 iterations" in text
    # dual issue
    lds = [r for r in loop if r["opcode"].startswith("LDS")]
    short = [r for r in lds if r["dual_issued"] < r["executions"]]
    assert len(short) == 1 and f"({short[0]['dual_issued']} at instruction {short[0]['index']})" in text
    q(sum(r["dual_issued"] for r in lds))
    q(sum(r["executions"] for r in lds))
    pairs = {}
    for r in loop:
        if r["dual_issued"]:
            key = (rows[r["index"] - 1]["opcode"], r["opcode"])
            pairs[key] = pairs.get(key, 0) + 1
    assert pairs == {("FFMA", "LDS.U.128"): 32, ("FFMA", "TLD.B.LZ.P"): 4, ("FFMA", "STS.128"): 4,
                     ("FFMA", "BAR.SYNC"): 1, ("IADD", "BRA"): 1}
    assert f"{sum(pairs.values())} pairs per iteration" in text
    q(sum(r["dual_issued"] for r in loop))
    q(a["dual_issues"])
    # dependency stalls
    stalled = sum(a["stall_reasons"].values())
    dep = a["stall_reasons"]["dependency"]
    q(dep)
    q(100 * dep / stalled, lambda v: f"{v:.1f}%")
    q(sum(r["stalls"]["dependency"] for r in loop))
    in_loop = [r for r in loop if r["stalls"]["dependency"]]
    assert [r["index"] for r in sorted(in_loop, key=lambda r: -r["stalls"]["dependency"])] == [452, 73]
    assert rows[452]["instruction"] == "@P0 STS.128 [R122], R96" and rows[452]["control"].startswith("02")
    assert rows[73]["control"].startswith("01") and rows[109]["opcode"].startswith("TLD")
    q(rows[452]["stalls"]["dependency"])
    q(rows[73]["stalls"]["dependency"])
    assert rows[58]["instruction"] == "STS.128 [R122], R96"
    q(rows[58]["stalls"]["dependency"])
    # the hot rows (the page's rule): behind a yield flag or BAR.SYNC
    top = max(r["heat"] for r in rows)
    hot = [r for r in rows if r["heat"] >= max(top / 4, 2 / len(rows))]
    ksteps = [r for r in hot if r["instruction"].startswith("FFMA R16,")]
    assert len(ksteps) == 8 and all(rows[r["index"] - 1]["instruction"].startswith("FFMA R17,")
                                    and "Y" in rows[r["index"] - 1]["control"] for r in ksteps)
    assert sorted(r["index"] for r in hot if r not in ksteps) == [72, 557] and len(hot) == 10
    assert "Y" in rows[branch]["control"] and ksteps[0]["index"] == 111
    assert f"The {len(hot)} shaded rows hold" in text
    q(100 * sum(r["heat"] for r in hot), lambda v: f"{v:.1f}%")
    q(100 * min(r["heat"] for r in ksteps), lambda v: f"{v:.1f}% to")
    q(100 * max(r["heat"] for r in ksteps), lambda v: f"to {v:.1f}% each")
    for i in (72, 557):
        q(100 * rows[i]["heat"], lambda v: f"{v:.1f}%")
    assert rows[556]["opcode"] == "BAR.SYNC"
    q(rows[557]["stalls"]["barrier_wait"])
    q(100 * a["stall_reasons"]["not_selected"] / stalled, lambda v: f"{v:.1f}%")
    # reuse off
    for out in (a, b):
        q(out["sm_register_bank_conflicts"])
        q(out["bank_conflict_cycles"])
        q(out["cycles_per_loop_iteration"], lambda v: f"{v:.1f} cycles")
        q(out["dual_issues"])
        q(out["sm_cycles"])
    nloop = [r for r in nrows if r["loops"] == [0]]
    ffma = [r for r in nloop if r["opcode"] == "FFMA"]
    own = [r for r in ffma if r["bank_conflicts"]]
    losing = [r for r in ffma if r["bank_conflict_cycles"]]
    assert f"{len(own)} of the loop's {len(ffma)} FFMAs" in text
    q(sum(r["bank_conflicts"] for r in own))
    assert f"only {len(losing)} FFMAs lose cycles ({_n(sum(r['bank_conflict_cycles'] for r in losing))} in the loop)" in text
    for name in ("FFMA R35, R68, R72, R35", "FFMA R35, R84, R88, R35"):
        places = [r for r in ffma if r["instruction"] == name]
        assert len(places) == 4 and all(r["bank_conflict_cycles"] == r["bank_conflicts"] == 512 for r in places)
    assert "512 at each of their 8 places" in text
    assert nrows[148]["instruction"] == "FFMA R3, R80, R88, R3"
    assert nrows[148]["bank_conflicts"] == 512 and nrows[148]["bank_conflict_cycles"] == 0
    assert nrows[149]["instruction"] == "FFMA R5, R83, R88, R5" and nrows[149]["bank_conflicts"] == 0
    assert nrows[149]["bank_conflict_cycles"] == nrows[149]["delayed_conflicts"] == 512
    assert nrows[147]["instruction"] == "LDS.U.128 R72, [R124+0x200]" and nrows[147]["dual_issued"] == 512
    assert nrows[150]["opcode"] == "LDS.U.128" and nrows[150]["dual_issued"] == 0
    assert "is dual-issued 0 times of 512" in text
    # reuse on: where the conflicts and their cycles are
    conf = [r for r in rows if r["bank_conflicts"]]
    iadd = [r for r in conf if r["instruction"] == "@P0 IADD R116, R116, R120.reuse"]
    assert len(iadd) == 1 and iadd[0]["bank_conflicts"] == 512 and iadd[0]["bank_conflict_cycles"] == 0
    outside = sum(r["bank_conflicts"] for r in conf if r not in iadd)
    assert all(not r["loops"] for r in conf if r not in iadd)
    assert f"and {outside} in the prologue" in text
    fl = [r for r in loop if r["opcode"] == "FFMA" and r["bank_conflict_cycles"]]
    assert all(r["delayed_conflicts"] == r["bank_conflict_cycles"] for r in fl)
    assert f"at {len(fl)} FFMAs ({sum(r['bank_conflict_cycles'] for r in fl)} cycles)" in text
    top = max(fl, key=lambda r: r["bank_conflict_cycles"])
    assert f"{top['bank_conflict_cycles']} of them at `{top['instruction']}` (instruction {top['index']})" in text
    missing = [s for s in quoted if s not in text]
    assert not missing, missing
