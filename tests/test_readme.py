"""README.md's Python API example runs as printed, and its `maxsim run` summary is the real one."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _section(title):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_python_api_example_runs(monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", _section("Python API"), re.S)
    assert len(blocks) == 1
    monkeypatch.chdir(ROOT)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(blocks[0], "README.md (Python API)", "exec"), {"__name__": "__readme__"})
    lines = printed.getvalue().splitlines()
    # the SGEMM fields: verified, cycles, GFLOPS; then the summary in words; then the small kernel
    verified, cycles, gflops = lines[0].split()
    assert verified == "True" and int(cycles) > 0 and int(gflops) > 0
    assert lines[1].startswith("sgemm_64 (kernel sgemm_64_swirl_maxas) on gm204")
    assert lines[2].startswith("result: verified against numpy")
    assert any(x.startswith("main loop: ") and "(maxas: 520" in x for x in lines)
    # 4 warps x 6 instructions
    assert re.fullmatch(r"24 warp instructions in \d+ cycles", lines[-1]), lines[-1]


def test_run_summary_in_readme_has_the_shape_of_the_real_one():
    """The pasted output starts with the summary lines `format_run` writes, in their order."""
    block = re.findall(r"```text\n(.*?)```", _section("What `maxsim run` answers"), re.S)[0].splitlines()
    assert block[0].startswith("sgemm_64 (kernel sgemm_64_swirl_maxas) on gm204 (GeForce GTX 980): M=N=K=256")
    for line, start in zip(block[1:6], ("result: verified against numpy", "predicted on the GPU: ",
                                        "timed SM (8 CTAs): ", "main loop: ", "top stalls (share of warp-cycles): ")):
        assert line.startswith(start), line
    assert block[6] == "" and block[7].startswith("workload ")


def test_launch_api_example_runs_and_prints_what_the_readme_shows(monkeypatch):
    """The section on launching our own kernels: its Python block runs and prints the lines of the
    text block after it (the cycle count and time in their shape: the timing model may change)."""
    section = _section("Launching your own kernels")
    block = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(block) == 1
    shown = re.findall(r"```text\n(.*?)```", section, re.S)[0].splitlines()
    monkeypatch.chdir(ROOT)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block[0], "README.md (Launching your own kernels)", "exec"), {"__name__": "__readme__"})
    lines = printed.getvalue().splitlines()
    assert len(lines) == len(shown) == 4
    assert lines[0] == shown[0] == "['a', 'b', 'c', 'n']"
    shape = r"\d+ cycles on the timed SM; full prediction of the GPU: \d+\.\d us"
    assert re.fullmatch(shape, lines[1]) and re.fullmatch(shape, shown[1]), (lines[1], shown[1])
    assert lines[2] == shown[2] == "499500.0 499500.0"  # integers below 2^24: every fp32 sum is exact
    assert lines[3] == shown[3]


def test_launch_api_command_lines_run(tmp_path, monkeypatch, capsys):
    """The section's shell block: the .npy files it makes, then each `maxsim run` line, run from a
    scratch folder; the saved outputs are what numpy computes."""
    import shlex
    import subprocess
    import sys

    import numpy as np

    from maxsim.cli import main
    section = _section("Launching your own kernels")
    commands = re.findall(r"```sh\n(.*?)```", section, re.S)[0].strip().splitlines()
    assert commands[0].startswith("python3 -c ") and len(commands) == 3
    monkeypatch.chdir(tmp_path)
    subprocess.run([sys.executable] + shlex.split(commands[0])[1:], check=True)
    for line in commands[1:]:
        argv = [a.replace("workloads/kernels/", f"{ROOT}/workloads/kernels/") for a in shlex.split(line)]
        assert argv[:2] == ["maxsim", "run"]
        assert main(argv[1:]) == 0, capsys.readouterr().err
    a, b = np.load("a.npy"), np.load("b.npy")
    assert (np.load("vecadd_out/c.npy") == a + b).all()
    assert json.loads(Path("vecadd_out/report.json").read_text())["gpu_prediction_method"] == "full"  # --predict
    partial = np.load("reduce_out/p.npy")
    assert partial.shape == (8,) and partial.sum() == a.sum() == 499500.0
    assert sorted(p.name for p in (tmp_path / "reduce_out").iterdir()) == ["p.npy", "report.json", "summary.txt"]
