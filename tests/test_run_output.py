"""What `maxsim run` says first (the summary in words), and how it ends: Ctrl-C exits 130 with one
line, a closed pipe (`| head -1`) is quiet, and every error names its file."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maxsim.cli import main
from maxsim.report.text import format_run
from sasskit import header

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "MAXSIM_PROGRESS": "0"}

CHAIN = header("chain", regs=8) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      SHL R1, R0, 0x2;
--:-:-:-:6      IADD R2, R1, R1;
--:-:-:-:6      FFMA R3, R1, R2, R1;
--:-:-:-:5      EXIT;
"""

SPIN = header("spin", regs=8) + """\
--:-:-:-:1      MOV R1, RZ;
LOOP:
--:-:-:-:1      IADD R1, R1, 0x1;
--:-:-:-:1      BRA LOOP;
--:-:-:-:1      EXIT;
"""

# the config's FP32 peak by hand: 16 SMs x 128 FFMA lanes x 2 flops x 1.216 GHz [wp980]
GM204_PEAK = 16 * 128 * 2 * 1.216


def cli(argv):
    try:
        return main([str(a) for a in argv])
    except SystemExit as e:
        return e.code


@pytest.fixture(scope="module")
def sgemm_run():
    """`maxsim run sgemm_64 --m 64 --n 64 --k 64 --json`, parsed."""
    p = subprocess.run([sys.executable, "-m", "maxsim.cli", "run", "sgemm_64", "--m", "64", "--n", "64",
                        "--k", "64", "--json"], capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=300)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    return json.loads(p.stdout)


def test_sgemm_summary_says_the_answer_first(sgemm_run):
    out = sgemm_run
    s = out["summary"]
    text = s["text"]
    assert text[0] == ("sgemm_64 (kernel sgemm_64_swirl_maxas) on gm204 (GeForce GTX 980): M=N=K=64, "
                       "grid 1 x 1 CTAs of 64 threads")
    assert s["verified"] is True and text[1].startswith("result: verified against numpy: max |error| ")
    g = out["gflops"]
    assert s["gflops"] == s["predicted_gflops"] == out["gpu_predicted_gflops"] == g and s["peak_gflops"] == pytest.approx(GM204_PEAK)
    assert s["share_of_peak"] == pytest.approx(g / GM204_PEAK)
    assert text[2].startswith("predicted on the GPU: ") and f"{g:.3g} GFLOPS" in text[2]
    assert f"= {100 * g / GM204_PEAK:.1f}% of the 4,981 GFLOPS peak" in text[2]
    assert text[3] == "how predicted: the timed SM's run (one CTA: the L2 and DRAM to itself)"
    assert text[4].startswith(f"timed SM (1 CTA): {out['sm_cycles']:,} cycles, IPC {out['sm_ipc']:.2f}")
    loop = out["cycles_per_loop_iteration"]
    # one CTA of 2 warps on 4 schedulers: 0.5 warps per scheduler; maxas's figure is at 4
    assert text[5] == (f"main loop: {loop:.1f} cycles per iteration at 0.5 warps per scheduler (maxas: 520 at 4, "
                       f"{100 * (loop / 520 - 1):+.1f}%)")
    stalls = out["stall_reasons"]
    total = sum(stalls.values())
    first, second = sorted(stalls, key=lambda r: -stalls[r])[:2]
    assert [r for r, _ in s["top_stalls"]] == [first, second]
    assert text[6].startswith(f"top stalls (share of warp-cycles): {first} {100 * stalls[first] / total:.1f}% (")
    assert f"; {second} {100 * stalls[second] / total:.1f}% (" in text[6]
    # the SM's cycles become time at the clock in effect: 1216 MHz x 0.96 / 0.98 (gm204.toml); its
    # GFLOPS are the run's flops in that time (64 x 64 x 64 FFMAs + the beta term: 2 n^3 + n^2 flops)
    assert out["sm_clock_mhz"] == pytest.approx(1216 * 0.96 / 0.98, rel=1e-4)
    assert out["sm_seconds"] == pytest.approx(out["sm_cycles"] / (out["sm_clock_mhz"] * 1e6), rel=1e-9)
    assert out["sm_gflops"] == pytest.approx((2 * 64 ** 3 + 64 ** 2) / out["sm_seconds"] / 1e9, rel=1e-6)
    # the launch's figures carry the plain names: its time includes the launch overhead, so one CTA's
    # launch is slower than the timed SM alone
    assert out["seconds"] > out["sm_seconds"] and out["gflops"] < out["sm_gflops"]
    # the text report starts with the same lines, then the details as before
    report = format_run(out).split("\n")
    assert report[:len(text)] == text and report[len(text)] == ""
    assert report[len(text) + 1].startswith("workload ")


def test_sass_file_summary_and_json_keys(tmp_path, capsys):
    src = tmp_path / "chain.sass"
    src.write_text(CHAIN)
    assert cli(["run", src, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("workload", "kernel", "grid", "block", "config", "warp_instructions", "sm_cycles", "sm_ipc",
                "stall_reasons", "profiler_metrics", "opcode_counts", "summary"):
        assert key in out, key
    assert cli(["run", src]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[0] == f"{src} (kernel chain) on gm204: grid 1 x 1 CTAs of 32 threads"
    assert lines[1] == (f"5 warp instructions on one SM: {out['sm_cycles']:,} cycles, IPC {out['sm_ipc']:.2f}, "
                        f"{out['sm_gflops']:.3g} GFLOPS = {100 * out['sm_gflops'] / (GM204_PEAK / 16):.1f}% of an SM's peak")
    assert lines[2].startswith("top stalls (share of warp-cycles): ")
    assert out["hazards"] == 1 and lines[3] == "warning: 1 control-code hazard (listed at the end)"
    assert lines[4] == "" and lines[5].startswith("workload ")
    assert lines[-1] == "" and lines[-2].startswith(f"warning: {src}:1")  # the hazard, its file and line
    assert cli(["run", src, "--functional"]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[1] == "functional run only (no timing)"


def test_ctrl_c_exits_130_with_one_line(tmp_path):
    src = tmp_path / "spin.sass"
    src.write_text(SPIN)
    p = subprocess.Popen([sys.executable, "-m", "maxsim.cli", "run", src, "--max-instructions", "1000000000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                         env={**os.environ, "MAXSIM_PROGRESS": "1"})
    seen = b""
    deadline = time.monotonic() + 120
    while b"functional run" not in seen and time.monotonic() < deadline:  # the run is going
        if select.select([p.stderr], [], [], 1.0)[0]:
            seen += os.read(p.stderr.fileno(), 4096)
    assert b"functional run" in seen
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    err = (seen + err).decode()
    assert p.returncode == 130 and out == b""
    assert "Traceback" not in err
    messages = [x for x in err.replace("\r", "\n").split("\n") if x and not x.startswith("functional run")]
    assert messages == ["maxsim: interrupted"], err


def test_output_into_a_closed_pipe_is_quiet(tmp_path):
    src = tmp_path / "chain.sass"
    src.write_text(CHAIN)
    # as a user types it
    p = subprocess.run(["bash", "-c", f"'{sys.executable}' -m maxsim.cli run '{src}' --json | head -1"],
                       capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=300)
    assert p.stdout == "{\n" and p.stderr == ""
    # and with the reader gone before the first byte is written
    p = subprocess.Popen([sys.executable, "-m", "maxsim.cli", "run", src, "--json"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=ROOT, env=ENV)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 1 and err == ""


@pytest.mark.parametrize("argv, message", [
    (["run", "{empty}"], "maxsim: error: {empty}: no instructions to run (kernel kernel)"),
    (["analyze", "{empty}"], "maxsim: error: {empty}: no instructions to analyze (an empty kernel file?)"),
    (["run", "{badop}"], "maxsim: error: {badop}:2:17: unknown opcode 'FOO'"),
    (["run", "{chain}", "--gpu", "{missing}"], "maxsim: error: {missing}: no such config file"),
    (["run", "{chain}", "--gpu", "{badtoml}"], "maxsim: error: {badtoml}:1: bad TOML syntax"),
    (["run", "{chain}", "--block", "2000"], "maxsim: error: {chain}: block of 2000 threads: at most 1024 threads per CTA (and Z <= 64)"),
    (["run", "{chain}", "--regs", "3"], "maxsim: error: {chain}: --regs 3: kernel chain uses 4 registers"),
])
def test_every_error_names_its_file(tmp_path, capsys, argv, message):
    files = {"empty": tmp_path / "empty.sass", "badop": tmp_path / "badop.sass", "chain": tmp_path / "chain.sass",
             "missing": tmp_path / "nosuch.toml", "badtoml": tmp_path / "bad.toml"}
    files["empty"].write_text("")
    files["badop"].write_text("# Kernel: k\n--:-:-:-:1      FOO R1, R2;\n")
    files["chain"].write_text(CHAIN)
    files["badtoml"].write_text("[gpu\n")
    names = {k: str(v) for k, v in files.items()}
    assert cli([a.format(**names) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith(message.format(**names)), err


def test_a_file_name_after_json_gets_advice(capsys):
    assert cli(["run", "sgemm_64", "--json", "out.json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("maxsim: error: --json takes no file name (got 'out.json')") and "--json > out.json" in err
    assert cli(["run", "sgemm_64", "--bogus"]) == 2
    assert capsys.readouterr().err.startswith("maxsim: error: unrecognized arguments: --bogus")


def test_bad_measured_data_names_its_file_and_line(tmp_path):
    from maxsim.errors import MaxsimError
    from workloads.compare import load_measurements
    bad = tmp_path / "mine.csv"
    bad.write_text("# provenance\nchart,N,sgemm_64\nA,64,12.5\nB,x,3\n")
    with pytest.raises(MaxsimError, match=f"^{bad}:4: bad measured value"):
        load_measurements(str(bad))
    bad.write_text("chart,size\nA,64\n")
    with pytest.raises(MaxsimError, match=f"^{bad}:1: the header row of measured data must name a column N"):
        load_measurements(str(bad))
    with pytest.raises(MaxsimError, match="nosuch.csv: cannot read measured data"):
        load_measurements(str(tmp_path / "nosuch.csv"))
