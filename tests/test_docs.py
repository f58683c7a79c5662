"""The manual (docs/, an MkDocs site) and the README front page stay true.

* Every fenced block of a docs page marked runnable (the line ``<!-- run -->`` just before it) is
  executed, in the page's order, in one scratch folder per page (with ``workloads/`` linked in, so
  paths relative to the repository's root work): a ``sh`` block line by line (``maxsim`` and
  ``python3`` are this interpreter's; each line must exit 0), a ``python`` block in-process. The
  tests below also check what some of them print or write.
* ``mkdocs build --strict`` passes: no broken link or anchor, every page in the nav.
* The README's commands are the two the project runs (``.ci/run`` runs both, in order, in one fresh
  environment),
  its pasted output has the shape of the real one, and its links lead to files that exist.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RUN_MARK = "<!-- run -->"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)


def page_text(name):
    return (DOCS / name).read_text(encoding="utf-8")


def section(text, title):
    """The ``## title`` section of a page (up to the next ``## ``)."""
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def runnable_blocks(text):
    """[(language, code, line number)] of the blocks marked runnable, in order."""
    out = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if before.strip() == RUN_MARK:
            out.append((m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1))
    return out


def shell_commands(code):
    """The commands of a ``sh`` block: continuation lines joined, comments and blank lines dropped."""
    joined = code.replace("\\\n", " ")
    return [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _this_python(command):
    """``maxsim ...`` and ``python3 ...`` as this interpreter runs them."""
    words = shlex.split(command, comments=True)
    if words[0] == "maxsim":
        words = [sys.executable, "-m", "maxsim.cli"] + words[1:]
    elif words[0] == "python3":
        words = [sys.executable] + words[1:]
    return words


def run_page(name, folder):
    """Execute the page's runnable blocks in ``folder``: [(language, code, what it printed)] (for
    ``sh``: a list of (command, stdout))."""
    (folder / "workloads").symlink_to(ROOT / "workloads")
    env = {**os.environ, "MAXSIM_PROGRESS": "0"}
    results = []
    for lang, code, line in runnable_blocks(page_text(name)):
        where = f"docs/{name}:{line}"
        if lang == "sh":
            printed = []
            for command in shell_commands(code):
                p = subprocess.run(_this_python(command), cwd=folder, env=env, capture_output=True, text=True,
                                   timeout=900)
                assert p.returncode == 0, f"{where}: {command}\n{p.stderr}"
                printed.append((command, p.stdout))
            results.append((lang, code, printed))
        elif lang == "python":
            printed = io.StringIO()
            here = os.getcwd()
            os.chdir(folder)
            try:
                with contextlib.redirect_stdout(printed):
                    exec(compile(code, where, "exec"), {"__name__": "__docs__"})
            finally:
                os.chdir(here)
            results.append((lang, code, printed.getvalue()))
        else:
            raise AssertionError(f"{where}: a runnable block is sh or python, not {lang!r}")
    return results


PAGES_WITH_RUNNABLE_BLOCKS = sorted(p.name for p in DOCS.glob("*.md") if runnable_blocks(p.read_text(encoding="utf-8")))
_RUNS = {}


@pytest.fixture(scope="module")
def page_run(tmp_path_factory):
    """Each page's blocks run once per test session: name -> (folder, results)."""
    def get(name):
        if name not in _RUNS:
            folder = tmp_path_factory.mktemp(name.replace(".md", ""))
            _RUNS[name] = (folder, run_page(name, folder))
        return _RUNS[name]
    return get


def test_the_mechanism_finds_marked_blocks_only():
    text = "a\n\n<!-- run -->\n```sh\nmaxsim configs\n```\n\n```sh\nnot this\n```\n<!-- run -->\n\n```python\nx = 1\n```\n"
    assert runnable_blocks(text) == [("sh", "maxsim configs\n", 4), ("python", "x = 1\n", 13)]
    assert shell_commands("# a comment\nmaxsim run a \\\n    --grid 2   # trailing\n\n") == ["maxsim run a      --grid 2   # trailing"]
    assert _this_python("maxsim run a --grid 2   # trailing") == [sys.executable, "-m", "maxsim.cli", "run", "a", "--grid", "2"]


def test_pages_have_runnable_blocks():
    assert {"getting-started.md", "launching.md", "timing-model.md"} <= set(PAGES_WITH_RUNNABLE_BLOCKS)


@pytest.mark.parametrize("name", PAGES_WITH_RUNNABLE_BLOCKS)
def test_every_runnable_block_runs(name, page_run):
    folder, results = page_run(name)
    assert len(results) == len(runnable_blocks(page_text(name)))


def test_the_site_builds_strictly(tmp_path):
    """No broken link or anchor, no page missing from the nav, no unknown page in it."""
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "site" / "index.html").exists() and (tmp_path / "site" / "launching" / "index.html").exists()


def test_first_session_prints_a_verified_sgemm(page_run):
    folder, results = page_run("getting-started.md")
    (command, out), *_ = results[0][2]
    assert command.startswith("maxsim run sgemm_64 --m 128 --n 128 --k 64")
    assert out.startswith("sgemm_64 (kernel sgemm_64_swirl_maxas) on gm204")
    assert out.splitlines()[1].startswith("result: verified against numpy")


def test_trace_window_command_writes_the_trace(page_run):
    folder, results = page_run("timing-model.md")
    trace = json.loads((folder / "sgemm.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert 1000 < len(events) < 50_000  # "~10K events" for one main-loop iteration


def test_python_api_example_runs(page_run):
    folder, results = page_run("launching.md")
    code = re.findall(r"```python\n(.*?)```", section(page_text("launching.md"), "Python API"), re.S)
    assert len(code) == 1
    (printed,) = [out for lang, c, out in results if c == code[0]]
    lines = printed.splitlines()
    # the SGEMM fields: verified, cycles, GFLOPS; then the summary in words; then the small kernel
    verified, cycles, gflops = lines[0].split()
    assert verified == "True" and int(cycles) > 0 and int(gflops) > 0
    assert lines[1].startswith("sgemm_64 (kernel sgemm_64_swirl_maxas) on gm204")
    assert lines[2].startswith("result: verified against numpy")
    assert any(x.startswith("main loop: ") and "(maxas: 520" in x for x in lines)
    # 4 warps x 6 instructions
    assert re.fullmatch(r"24 warp instructions in \d+ cycles", lines[-1]), lines[-1]


def _summary_has_the_real_shape(block):
    """A pasted `maxsim run sgemm_64` output starts with the summary lines `format_run` writes, in order."""
    assert block[0].startswith("sgemm_64 (kernel sgemm_64_swirl_maxas) on gm204 (GeForce GTX 980): M=N=K=256")
    starts = ("result: verified against numpy", "predicted on the GPU: ", "how predicted: ",
              "timed SM (8 CTAs): ", "main loop: ", "top stalls (share of warp-cycles): ")
    assert len(block) > len(starts)
    for line, start in zip(block[1:7], starts):
        assert line.startswith(start), line


def test_run_summary_in_the_manual_has_the_shape_of_the_real_one():
    block = re.findall(r"```text\n(.*?)```", page_text("run-output.md"), re.S)[0].splitlines()
    _summary_has_the_real_shape(block)
    assert block[7] == "" and block[8].startswith("workload ")


def test_launch_api_example_prints_what_the_page_shows(page_run):
    """The Python block on launching our own kernels prints the lines of the text block after it (the
    cycle count and time in their shape: the timing model may change)."""
    text = section(page_text("launching.md"), "Launching your own kernels")
    code = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(code) == 1
    shown = re.findall(r"```text\n(.*?)```", text, re.S)[0].splitlines()
    folder, results = page_run("launching.md")
    (printed,) = [out for lang, c, out in results if c == code[0]]
    lines = printed.splitlines()
    assert len(lines) == len(shown) == 4
    assert lines[0] == shown[0] == "['a', 'b', 'c', 'n']"
    shape = r"\d+ cycles on the timed SM; full prediction of the GPU: \d+\.\d us"
    assert re.fullmatch(shape, lines[1]) and re.fullmatch(shape, shown[1]), (lines[1], shown[1])
    assert lines[2] == shown[2] == "499500.0 499500.0"  # integers below 2^24: every fp32 sum is exact
    assert lines[3] == shown[3]


def test_launch_api_command_lines_write_what_numpy_computes(page_run):
    """The section's shell block (the .npy files it makes, then each `maxsim run` line): the saved
    outputs are what numpy computes."""
    import numpy as np

    text = section(page_text("launching.md"), "Launching your own kernels")
    commands = shell_commands(re.findall(r"```sh\n(.*?)```", text, re.S)[0])
    assert commands[0].startswith("python3 -c ") and len(commands) == 3
    assert all(c.startswith("maxsim run workloads/kernels/") for c in commands[1:])
    folder, results = page_run("launching.md")
    a, b = np.load(folder / "a.npy"), np.load(folder / "b.npy")
    assert (np.load(folder / "vecadd_out/c.npy") == a + b).all()
    assert json.loads((folder / "vecadd_out/report.json").read_text())["gpu_prediction_method"] == "full"  # --predict
    partial = np.load(folder / "reduce_out/p.npy")
    assert partial.shape == (8,) and partial.sum() == a.sum() == 499500.0
    assert sorted(p.name for p in (folder / "reduce_out").iterdir()) == ["p.npy", "report.json", "summary.txt"]


# ---- the README front page ----------------------------------------------------------------------

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_gives_the_two_commands_and_ci_runs_its_test_command():
    commands = shell_commands(re.findall(r"```sh\n(.*?)```", README, re.S)[0])
    assert [c.split("#")[0].strip() for c in commands] == [
        "python3 -m pip install . && maxsim run sgemm_64",
        'python3 -m pip install -e ".[test]" && python3 -m pytest -q']
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    ran = [line for line in ci if line in [c.split("#")[0].strip() for c in commands]]
    assert ran == [c.split("#")[0].strip() for c in commands]  # both, in README's order


def test_readme_first_output_has_the_shape_of_the_real_one():
    block = re.findall(r"```text\n(.*?)```", README, re.S)[0].splitlines()
    _summary_has_the_real_shape(block)
    assert block[7] == "..."


def test_readme_links_lead_to_files_that_exist():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [x for x in links if "://" not in x]
    assert "docs/index.md" in local and "docs/img/compare.png" in local
    assert [x for x in local if not (ROOT / x).exists()] == []
