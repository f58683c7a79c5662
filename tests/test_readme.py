"""README.md says what the program prints: its quoted first output is what the command it quotes
prints, and every figure it states is computed here from a run (none is copied from elsewhere)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from maxsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def run_sgemm_64():
    """README's main job, ``maxsim run sgemm_64``: its text output and its ``--json`` object."""
    import contextlib
    import io
    outs = []
    for extra in ([], ["--json"]):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(["run", "sgemm_64", "--quiet", *extra]) == 0
        outs.append(buf.getvalue())
    return outs[0], json.loads(outs[1])


def _first_output_section():
    return README.split("## The first output", 1)[1].split("\n## ", 1)[0]


def test_the_quoted_first_output_is_what_the_quoted_command_prints(run_sgemm_64):
    text, _ = run_sgemm_64
    section = _first_output_section()
    assert "`maxsim run sgemm_64` (M = N = K = 256)" in section
    block = re.findall(r"```text\n(.*?)```", section, re.S)[0].splitlines()
    assert block[-1] == "..."
    quoted = block[:-1]
    assert text.splitlines()[:len(quoted)] == quoted
    assert "M=N=K=256" in quoted[0]


def test_the_count_of_detail_lines(run_sgemm_64):
    """The summary (the quoted lines), a blank line, then the details."""
    text, _ = run_sgemm_64
    lines = text.rstrip("\n").splitlines()
    summary = lines.index("")
    n = int(re.search(r"; (\d+) lines of details follow", _first_output_section()).group(1))
    assert len(lines) - summary - 1 == n


def test_the_main_loops_lds_dual_issue(run_sgemm_64):
    """"the LDS.U.128 loads riding along with FFMAs (16,382 of 16,384 dual-issued)": the LDS.U.128
    rows inside a loop of the source view's instructions (``--json``'s "instructions")."""
    _, out = run_sgemm_64
    rows = [r for r in out["instructions"] if r["opcode"] == "LDS.U.128" and r["loops"]]
    m = re.search(r"`LDS\.U\.128` loads riding along with FFMAs \(([\d,]+) of ([\d,]+)\s+dual-issued\)", README)
    dual, total = (int(g.replace(",", "")) for g in m.groups())
    assert (sum(r["dual_issued"] for r in rows), sum(r["executions"] for r in rows)) == (dual, total)


def test_every_figure_of_the_readme_is_one_of_these():
    """The numbers README.md states outside its commands and links: each is checked above (or is a
    name: a Python version the package requires, a GPU's or an architecture's name)."""
    body = re.sub(r"```.*?```", "", README, flags=re.S)  # the quoted output: checked line by line
    body = re.sub(r"\]\([^)]*\)", "]", body)  # link targets
    body = re.sub(r"`[^`]*`", "", body)  # commands and names in code
    body = re.sub(r"\b\w*(_|fp)\w*\b", "", body)  # names: sgemm_64, sm_52, fp32
    figures = re.findall(r"\d[\d,.]*", body)
    named = {"3.11", "107", "204", "200", "2"}  # Python 3.11; GM107/204/200; a 2-core machine
    checked = {"256", "88", "16,382", "16,384", "980"}  # 980: the GTX 980 of the gm204 config the output names
    assert set(figures) - named - checked == set(), body
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11"
