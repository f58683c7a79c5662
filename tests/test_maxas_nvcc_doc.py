"""docs/maxas-and-nvcc-kernels.md: its Python example prints what the page shows, and its command
lines run and give numpy's convolution."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "maxas-and-nvcc-kernels.md"


def _blocks(kind):
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_page_python_example_prints_what_the_page_shows(monkeypatch):
    (block,) = _blocks("python")
    shown = _blocks("text")[-1].splitlines()  # the text block after the example
    monkeypatch.chdir(ROOT)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block, str(PAGE), "exec"), {"__name__": "__doc_page__"})
    assert printed.getvalue().splitlines() == shown == ["[('param_out', 'out'), ('param_W', 'W')]", "True True"]


def test_page_error_example_is_the_real_message(monkeypatch):
    """The page's example of a read beyond the bytes given: the Python example's launch with the
    last two bias words left out of bank 3."""
    import maxsim
    from maxsim.errors import MaxsimError
    (block,) = _blocks("python")
    shown = [b for b in _blocks("text") if "is outside constant bank 3" in b]
    assert len(shown) == 1
    monkeypatch.chdir(ROOT)
    env = {"__name__": "__doc_page__"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(block, str(PAGE), "exec"), env)
    g = env
    try:
        maxsim.launch(g["conv"], grid=((g["Wo"] + 15) // 16, (g["Ho"] + 7) // 8), block=(16, 8),
                      params={"out": "out", "W": g["W"], "Wo": g["Wo"], "Ho": g["Ho"], "ntaps": 9},
                      buffers={"out": maxsim.Buffer.zeros((g["Ho"], g["Wo"]))},
                      textures={0x62: maxsim.Texture(g["img"].ravel(), "float1")},
                      constants={3: g["bank3"][:-2]}, timing=False, predict=False)
    except MaxsimError as e:
        assert str(e) == shown[0].strip()
    else:
        raise AssertionError("no error")


def test_page_command_lines_run_and_match_numpy(tmp_path, monkeypatch, capsys):
    from maxsim.cli import main
    (sh,) = _blocks("sh")
    commands = sh.strip().splitlines()
    assert commands[0].startswith("python3 -c ") and len(commands) == 2
    monkeypatch.chdir(tmp_path)
    subprocess.run([sys.executable] + shlex.split(commands[0])[1:], check=True)
    argv = [a.replace("workloads/kernels/", f"{ROOT}/workloads/kernels/") for a in shlex.split(commands[1])]
    assert argv[:2] == ["maxsim", "run"]
    assert main(argv[1:]) == 0
    err = capsys.readouterr().err
    assert "maxsim: note: " in err and "header RegCnt 14 is less than the registers the code uses" in err
    # numpy, from the same files: the taps' FFMA chain from 0, then the bias
    img = np.load("img.npy").reshape(20, 37)
    bank = np.load("bank3.npy")
    table, bias = bank[:36].reshape(9, 4), bank[36:].view(np.float32)
    ref = np.zeros((18, 35), np.float32)
    for dx, dy, w, _ in table:
        w = np.int32(w).view(np.float32)
        ref = (img[dy:dy + 18, dx:dx + 35].astype(np.float64) * np.float64(w) + ref).astype(np.float32)
    assert np.array_equal(np.load("conv_out/out.npy"), ref + bias)
    # the raw-bytes form of the bank gives the same
    bank.tofile("bank3.bin")
    argv = [a if a != "3=bank3.npy" else "3=bank3.bin" for a in argv]
    argv[argv.index("conv_out")] = "conv_bin"
    assert main(argv[1:]) == 0
    assert np.array_equal(np.load("conv_bin/out.npy"), np.load("conv_out/out.npy"))
