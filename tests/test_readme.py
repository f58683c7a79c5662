"""README.md's Python API example runs as printed, and its `maxsim run` summary is the real one."""

from __future__ import annotations

import contextlib
import io
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
