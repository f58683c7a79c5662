"""The ``maxsim`` command line: every bad argument is one line on stderr with exit status 2 (never a
traceback), and the commands that work print what they promise.

The CLI is called in process (``maxsim.cli.main``) for speed; one test runs the installed console
script in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from maxsim.cli import main

TINY = """\
# Kernel: tiny
# Arch: sm_50
# InsCnt: 4
# RegCnt: 8
# SharedSize: 0
# BarCnt: 0
# Params(0):
#\tord:addr:size:align
#
# Instructions:

--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      SHL R1, R0, 0x2;
--:-:-:-:6      IADD R2, R1.reuse, R1;
--:-:-:-:6      FFMA R3, R1, R2, R1;
--:-:-:-:6      FFMA R4, R3, R1, R2;
--:-:-:-:5      EXIT;
"""

WITH_PARAMS = TINY.replace("# Params(0):\n#\tord:addr:size:align\n",
                           "# Params(1):\n#\tord:addr:size:align\n#\t0:0x140:4:0\n")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def cli(argv):
    """Run the CLI in process; the exit status (argparse errors exit through SystemExit)."""
    try:
        return main([str(a) for a in argv])
    except SystemExit as e:
        return e.code


def one_line_error(capsys, argv, *fragments):
    """``argv`` fails with status 2 and exactly one line on stderr containing ``fragments``."""
    status = cli(argv)
    out, err = capsys.readouterr()
    assert status == 2, (status, out, err)
    assert "Traceback" not in err + out
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("maxsim"), err
    for f in fragments:
        assert f in err, (f, err)
    return err


@pytest.fixture
def files(tmp_path):
    tiny = tmp_path / "tiny.sass"
    tiny.write_text(TINY)
    params = tmp_path / "params.sass"
    params.write_text(WITH_PARAMS)
    bad = tmp_path / "bad.sass"
    bad.write_text(TINY.replace("SHL R1, R0, 0x2;", "SHL R1 R0, 0x2;"))
    syntax = tmp_path / "syntax.toml"
    syntax.write_text("[gpu\nsms = 1\n")
    value = tmp_path / "value.toml"
    value.write_text('inherit = "gm204"\n[gpu]\nsms = 0\n')
    return {"tiny": tiny, "params": params, "bad": bad, "syntax": syntax, "value": value,
            "missing": tmp_path / "nosuch.sass", "dir": tmp_path}


# ---------------------------------------------------------------------------------------------
# bad arguments: one line, status 2

@pytest.mark.parametrize("command", ["run", "analyze"])
def test_missing_file(capsys, files, command):
    one_line_error(capsys, [command, files["missing"]], "nosuch.sass", "cannot read file")


@pytest.mark.parametrize("command", ["run", "analyze"])
def test_unknown_workload(capsys, command):
    one_line_error(capsys, [command, "sgemm_32"], "unknown workload 'sgemm_32'", "sgemm_64")


@pytest.mark.parametrize("argv,fragment", [
    (["--m", "0"], "argument --m: expected a positive integer, got '0'"),
    (["--m", "abc"], "argument --m: expected a positive integer, got 'abc'"),
    (["--n", "-64"], "argument --n"),
    (["--k", "12"], "multiple of 8"),
    (["--traversal", "spiral"], "argument --traversal: invalid choice: 'spiral'"),
])
def test_bad_size_or_choice(capsys, argv, fragment):
    one_line_error(capsys, ["run", "sgemm_64", "--functional"] + argv, fragment)


def test_bad_grid_and_block(capsys, files):
    one_line_error(capsys, ["run", files["tiny"], "--grid", "2,0"], "argument --grid")
    one_line_error(capsys, ["run", files["tiny"], "--block", "x"], "argument --block")


def test_options_that_do_not_apply(capsys, files):
    one_line_error(capsys, ["run", files["tiny"], "--m", "64"], "--m does not apply to a .sass file")
    one_line_error(capsys, ["run", "sgemm_64", "--grid", "2", "--block", "64"],
                   "--grid, --block do not apply to the sgemm_64 workload")


def test_gpu_method(capsys, files):
    one_line_error(capsys, ["run", files["tiny"], "--gpu-method", "full"],
                   "--gpu-method sets how the whole-GPU prediction is made: it needs --predict")
    one_line_error(capsys, ["run", "sgemm_64", "--gpu-method", "exact"], "argument --gpu-method")
    one_line_error(capsys, ["run", "sgemm_64", "--check", "sampled", "--gpu-method", "full"],
                   "the full whole-GPU simulation runs the whole grid", "'sampled'")
    # sgemm_128 at M = N = 768, K = 128 on the GTX 980: 36 CTAs, a full wave of 32 and a tail of 4,
    # every one of them simulated; the same time as the full simulation of predict_sgemm
    from maxsim.arch.config import load_config
    from workloads.sgemm.predict import predict_sgemm
    assert cli(["run", "sgemm_128", "--m", "768", "--n", "768", "--k", "128", "--gpu", "gtx980_oc",
                "--gpu-method", "full", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    full = predict_sgemm("sgemm_128", 768, load_config("gtx980_oc"), k=128, full=True)
    assert out["gpu_prediction_method"] == "full" and out["result_checked"] == "whole C" and out["verified"]
    assert out["seconds"] == pytest.approx(full["seconds"], rel=1e-12)
    assert out["gpu_waves"] == 36 / 32 and out["gpu_wave_alignment"]["waves"] == 36 / 32


QUARTER_25 = """\
description = "a quarter of the GTX 980 with its DRAM at 25 GB/s"
inherit = "gtx980_oc"
[gpu]
sms = 4
dram_bus_bits = 64
dram_bandwidth_gbs = 64.0
[l2]
size = 524288
slices = 2
[dram]
channels = 2
efficiency = 0.395
"""


def test_a_dram_bound_sampled_prediction_is_flagged(capsys, tmp_path):
    """A sampled prediction of a launch that saturates DRAM (8 waves of sgemm_64 on a quarter GTX 980
    at 25 GB/s) says so, in the text and the JSON; the same launch at the stock DRAM rate does not."""
    toml = tmp_path / "quarter25.toml"
    toml.write_text(QUARTER_25)
    args = ["run", "sgemm_64", "--m", "1024", "--n", "1024", "--k", "1024", "--check", "sampled", "--gpu"]
    assert cli(args + [str(toml)]) == 0
    text = capsys.readouterr().out
    assert "warning: DRAM busy 87% of the sampled steady state" in text
    assert "--gpu-method full" in text
    assert cli(args + [str(toml), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gpu_dram_bound"] is True and 0.85 < out["gpu_dram_busy"] < 0.9
    assert cli(args + ["gtx980_oc", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gpu_dram_bound"] is False and out["gpu_dram_busy"] < 0.5


def test_l2_start(capsys, files):
    """--l2-start previous: the predicted launch starts with the L2 the same launch left (sgemm_128
    at N = 384: its 1.7 MB stay in the 2 MB L2, and the launch runs faster than from an empty L2)."""
    one_line_error(capsys, ["run", "sgemm_64", "--functional", "--l2-start", "previous"],
                   "--l2-start sets the L2 of the whole-GPU prediction", "not --functional")
    one_line_error(capsys, ["run", files["tiny"], "--l2-start", "previous"], "needs --predict for a kernel file")
    one_line_error(capsys, ["run", "sgemm_64", "--l2-start", "warm"], "argument --l2-start")
    args = ["run", "sgemm_128", "--m", "384", "--n", "384", "--k", "384", "--gpu", "gtx980_oc", "--json"]
    assert cli(args) == 0
    empty = json.loads(capsys.readouterr().out)
    assert cli(args + ["--l2-start", "previous"]) == 0
    previous = json.loads(capsys.readouterr().out)
    assert empty["gpu_l2_start"] == "empty" and previous["gpu_l2_start"] == "previous"
    assert previous["seconds"] < empty["seconds"]
    assert previous["gpu_l2_hit_rate"] > empty["gpu_l2_hit_rate"] + 0.15
    assert cli(args[:-1] + ["--l2-start", "previous"]) == 0
    assert ", starting with the L2 the same launch left" in capsys.readouterr().out
    # the full simulation streams the launch through the GPU twice (no trace of the grid held):
    # the same time as predict_sgemm's full simulation run twice on its arguments
    from maxsim.arch.config import load_config
    from workloads.sgemm.predict import predict_sgemm
    assert cli(args + ["--l2-start", "previous", "--gpu-method", "full"]) == 0
    full = json.loads(capsys.readouterr().out)
    ref = predict_sgemm("sgemm_128", 384, load_config("gtx980_oc"), full=True, l2_start="previous")
    assert full["verified"] and full["gpu_prediction_method"] == "full" and full["gpu_l2_start"] == "previous"
    assert full["seconds"] == pytest.approx(ref["seconds"], rel=1e-12)


def test_bad_config(capsys, files):
    one_line_error(capsys, ["run", "sgemm_64", "--gpu", "nosuch"], "no config named 'nosuch'", "gm204")
    one_line_error(capsys, ["run", files["tiny"], "--gpu", files["syntax"]], "syntax.toml", "TOML syntax")
    one_line_error(capsys, ["run", files["tiny"], "--config", files["value"]], "value.toml",
                   "'gpu.sms' must be a positive integer, got 0")
    one_line_error(capsys, ["run", files["tiny"], "--gpu", files["dir"] / "absent.toml"], "absent.toml")


@pytest.mark.parametrize("command", ["run", "analyze"])
def test_malformed_sass(capsys, files, command):
    one_line_error(capsys, [command, files["bad"]], f"{files['bad']}:13:", "cannot read operand")


def test_malformed_sass_through_the_sgemm_harness(capsys, files):
    one_line_error(capsys, ["run", "sgemm_64", "--functional", "--sass", files["bad"]], "bad.sass:13:")
    one_line_error(capsys, ["run", "sgemm_64", "--functional", "--sass", files["missing"]], "nosuch.sass")


def test_kernel_with_parameters_is_not_run_as_a_file(capsys, files):
    one_line_error(capsys, ["run", files["params"]], "takes 1 parameter", "--param NAME=VALUE")


@pytest.mark.parametrize("name", ["out.jpg", "out", "out.PNG.txt"])
def test_plot_bad_extension(capsys, files, name):
    one_line_error(capsys, ["plot", "conflicts", "-o", files["dir"] / name], "cannot write a figure",
                   ".png, .svg, .pdf")
    assert not (files["dir"] / name).exists()


def test_plot_unwritable_path(capsys, files):
    one_line_error(capsys, ["plot", "conflicts", "-o", files["dir"] / "no" / "such" / "dir.png"],
                   "cannot write the figure", "no directory")


@pytest.mark.parametrize("argv,fragment", [
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["run"], "required: target"),
    (["plot"], "required: FIGURE"),
    (["plot", "histogram"], "invalid choice: 'histogram'"),
    (["configs", "--bogus"], "unrecognized arguments: --bogus"),
    (["analyze", "sgemm_64", "--rows", "some"], "argument --rows"),
])
def test_usage_errors(capsys, argv, fragment):
    err = one_line_error(capsys, argv, fragment)
    assert "--help" in err


def test_no_command_prints_help(capsys):
    assert cli([]) == 2
    assert "usage: maxsim" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# what works

def test_run_sass_json(capsys, files):
    assert cli(["run", files["tiny"], "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("workload", "kernel", "grid", "block", "config", "warp_instructions", "opcode_counts",
                "register_bank_conflicts", "reuse_hit_rate", "sm_cycles", "sm_ipc", "stall_reasons"):
        assert key in out, key
    assert out["kernel"] == "tiny" and out["grid"] == [1, 1] and out["block"] == 32
    assert out["warp_instructions"] == 6 and out["opcode_counts"]["FFMA"] == 2
    assert out["sm_cycles"] > 0 and out["sm_seconds"] > 0
    # a kernel file without --predict: no launch figures, the timed SM's say so
    assert not {"cycles", "seconds", "gflops", "gpu_predicted_seconds"} & set(out)


def test_run_sass_text_and_functional(capsys, files):
    assert cli(["run", files["tiny"], "--grid", "2", "--block", "64", "--functional"]) == 0
    out = capsys.readouterr().out
    assert "warp instructions" in out and "cycles" not in out


def test_analyze_small_kernel(capsys, files):
    assert cli(["analyze", files["tiny"], "--rows", "all"]) == 0
    out = capsys.readouterr().out
    assert "Register banks and operand reuse: tiny" in out and "whole kernel" in out
    assert cli(["analyze", files["tiny"], "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["totals"]["instructions"] == 4 and rep["opcode_mix"]["FFMA"] == 2
    assert rep["totals"]["reuse_hits"] == 1  # IADD's R1.reuse serves the first FFMA's slot 0


def test_analyze_generated_sgemm(capsys):
    assert cli(["analyze", "sgemm_64", "--traversal", "raster", "--rows", "none", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["per_kstep"]["conflicts_with_reuse"] == 2  # the maxas write-up's raster figure


def test_configs(capsys):
    assert cli(["configs"]) == 0
    out = capsys.readouterr().out
    assert "gm204" in out and "gtx980" in out
    assert cli(["configs", "--json"]) == 0
    assert "gm204" in json.loads(capsys.readouterr().out)


def test_plot_conflicts_png(capsys, tmp_path):
    path = tmp_path / "tmp.png"
    assert cli(["plot", "conflicts", "-o", path]) == 0
    assert str(path) in capsys.readouterr().out
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000


def test_conflict_figures_numbers():
    from workloads.sgemm.figures import bank_map, conflict_figures

    figs = {(f["traversal"], f["regmap"]): f for f in conflict_figures("sgemm_64")}
    assert len(figs) == 6
    # per k-step: 16 A-vs-B conflicts with the maxas map; naive adds the 64 C-vs-B ones
    assert {f["kstep_conflicts_no_reuse"] for (t, r), f in figs.items() if r == "maxas"} == {16}
    assert {f["kstep_conflicts_no_reuse"] for (t, r), f in figs.items() if r == "naive"} == {80}
    assert [figs[t, "maxas"]["kstep_conflicts_unhidden"] for t in ("raster", "zigzag", "swirl")] == [2, 0, 0]
    rates = [figs[t, "maxas"]["kstep_reuse_hit_rate"] for t in ("raster", "zigzag", "swirl")]
    assert rates == sorted(rates) and abs(rates[2] - 0.49) < 0.005  # maxas: 49% for swirl
    maxas, naive = bank_map("maxas"), bank_map("naive")
    assert (maxas["c_conflicts"], maxas["ab_conflicts"]) == (0, 16)
    assert (naive["c_conflicts"], naive["ab_conflicts"]) == (64, 16)
    assert maxas["c"][0][:2] == [3, 2] and naive["c"][1][0] == 8


# ---------------------------------------------------------------------------------------------
# residency as a user choice (tests/test_occupancy.py has the rules; these, the command line)

@pytest.mark.parametrize("argv,fragments", [
    (["--regs", "100"], ("--regs 100:", "uses 125 registers per thread", "only be raised")),
    (["--regs", "256"], ("--regs 256:", "at most 255")),
    (["--regs", "0"], ("argument --regs: expected a positive integer",)),
    (["--warps-per-scheduler", "5"], ("--warps-per-scheduler 5:", "10 CTAs per SM", "out of reach",
                                      "at most 8 CTAs")),
    (["--ctas-per-sm", "7"], ("--ctas-per-sm 7:", "no register count gives 7 CTAs per SM",
                              "6 (129-168 registers)")),
    (["--regs", "168", "--warps-per-scheduler", "3"], ("argument --warps-per-scheduler: not allowed with argument --regs",)),
])
def test_bad_residency_options(capsys, argv, fragments):
    one_line_error(capsys, ["run", "sgemm_64", "--functional", "--m", "64", "--n", "64", "--k", "8"] + argv,
                   *fragments)


def test_bad_residency_options_of_a_sass_file(capsys, files):
    # TINY's code uses R0-R4: 5 registers (its header declares 8; any count from 5 up is allowed)
    one_line_error(capsys, ["run", files["tiny"], "--regs", "4"], "--regs 4:", "uses 5 registers")
    # 5-warp CTAs: 12 warps are not whole CTAs; 4, 8 and 12 CTAs make 5, 10 and 15 warps per scheduler
    one_line_error(capsys, ["run", files["tiny"], "--block", "160", "--warps-per-scheduler", "3"],
                   "--warps-per-scheduler 3:", "12 warps per SM", "5-warp CTAs", "15 (12 CTAs), 10 (8 CTAs), 5 (4 CTAs)")
    one_line_error(capsys, ["run", files["tiny"], "--ctas-per-sm", "33"], "--ctas-per-sm 33:", "at most 32 CTAs",
                   "limited by ctas")


def test_run_sgemm_at_a_chosen_residency(capsys):
    argv = ["run", "sgemm_64", "--functional", "--m", "70", "--n", "130", "--k", "16", "--json"]
    assert cli(argv + ["--warps-per-scheduler", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verified"] and out["kernel"] == "sgemm_64_swirl_maxas"
    assert (out["registers_per_thread"], out["resident_ctas_per_sm"], out["warps_per_scheduler"]) == (129, 6, 3)
    assert out["occupancy_limited_by"] == "registers"
    assert out["occupancy_limits"] == {"warps": 32, "ctas": 32, "registers": 6, "shared memory": 12}
    assert cli(argv[:-1] + ["--regs", "255"]) == 0
    text = capsys.readouterr().out
    for line in ("registers per thread               255", "resident CTAs per SM               4",
                 "resident warps per scheduler       2", "occupancy limited by               registers",
                 "CTAs per SM allowed by             warps 32, ctas 32, registers 4, shared memory 12"):
        assert line in text, line


def test_run_sass_file_with_more_registers(capsys, files):
    # 1-warp CTAs: 200 x 32 = 6400 registers per warp, 16384 // 6400 = 2 warps per partition = 8 CTAs
    assert cli(["run", files["tiny"], "--regs", "200", "--grid", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["registers_per_thread"], out["resident_ctas_per_sm"], out["occupancy_limited_by"]) == (200, 8, "registers")
    assert out["warps_per_scheduler"] == 2 and out["warp_instructions"] == 8 * 6
    assert 0 < out["profiler_metrics"]["achieved_occupancy"] <= 8 / 64
    # 3 warps per scheduler of 1-warp CTAs = 12 CTAs: 3 warps per partition needs 129-136 registers
    assert cli(["run", files["tiny"], "--warps-per-scheduler", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["registers_per_thread"], out["resident_ctas_per_sm"]) == (129, 12)
    assert cli(["run", files["tiny"], "--grid", "4"]) == 0  # text: the residency and the metrics
    text = capsys.readouterr().out
    assert "resident CTAs per SM               32" in text and "occupancy limited by               ctas" in text
    assert "profiler metrics (nvprof names" in text and "achieved_occupancy" in text


# ---------------------------------------------------------------------------------------------
# the installed console script

def _console_script():
    here = Path(sys.executable).parent / ("maxsim.exe" if os.name == "nt" else "maxsim")
    return str(here) if here.exists() else shutil.which("maxsim")


def test_installed_console_script(files):
    exe = _console_script()
    if exe is None:
        pytest.skip("the maxsim console script is not installed (pip install -e .)")
    ok = subprocess.run([exe, "run", str(files["tiny"]), "--json"], capture_output=True, text=True,
                        timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["kernel"] == "tiny"
    bad = subprocess.run([exe, "analyze", str(files["bad"])], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("maxsim: error: ") and "bad.sass:13:" in bad.stderr


def test_cache_info_and_clear(tmp_path, monkeypatch, capsys):
    """``maxsim cache info`` shows both caches of the cache folder, ``clear`` empties one or both."""
    from maxsim.cache import ResultCache
    from maxsim.jit import cache_key
    monkeypatch.setenv("MAXSIM_CACHE_DIR", str(tmp_path))
    results = ResultCache()
    results.put(results.key(point=1), {"cycles": 1})
    results.put(results.key(point=2), {"cycles": 2})
    for key, size in ((cache_key(), 1000), ("0.0.9-old", 500)):
        (tmp_path / "numba" / key / "timing").mkdir(parents=True)
        (tmp_path / "numba" / key / "timing" / "core.drive-1.py311.nbc").write_bytes(b"x" * size)
    assert main(["cache", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["folder"] == str(tmp_path) and info["results"]["entries"] == 2
    entries = {e["key"]: e for e in info["compiled"]["entries"]}
    assert {k: (e["files"], e["bytes"], e["in_use"]) for k, e in entries.items()} == {
        cache_key(): (1, 1000, True), "0.0.9-old": (1, 500, False)}
    assert main(["cache", "info"]) == 0
    assert "(this maxsim)" in capsys.readouterr().out
    assert main(["cache", "clear", "--results"]) == 0
    assert "cleared the results" in capsys.readouterr().out
    assert not (tmp_path / "results").exists() and (tmp_path / "numba").exists()
    assert main(["cache", "clear"]) == 0
    assert "cleared the compiled code: 0.0 MB freed" in capsys.readouterr().out
    assert not (tmp_path / "numba").exists()


# what `maxsim run` must not import: plotting, data frames and files, ELF reading, SciPy's linear
# algebra, and numba's compiler (a process that finds the compiled code in the cache only loads it)
NOT_IMPORTED_BY_RUN = ("matplotlib", "dask", "pyarrow", "pandas", "elftools", "scipy.linalg", "numba.np.arraymath",
                       "numba.np.random.legacy", "numba.core.inline_closurecall", "numba.typed.dictobject")
AS_PROGRAM = """
import gc, sys
from maxsim.cli import main
sys.argv = ["maxsim", "run", "sgemm_64"]
status = main()
print(sorted(m for m in {modules!r} if m in sys.modules), gc.get_freeze_count() > 0, gc.isenabled(), file=sys.stderr)
sys.exit(status)
"""


def test_a_second_run_imports_no_plotting_nor_the_compiler_and_freezes_the_modules_objects():
    """`maxsim run sgemm_64` as a program, twice (the first may compile into the cache, the second
    only loads): the second imports none of NOT_IMPORTED_BY_RUN, prints what the first printed, and
    has moved the modules' objects out of the cycle collector's reach and collects again
    (cli/common.py); a call of main() from Python leaves the collector as it was."""
    code = AS_PROGRAM.format(modules=NOT_IMPORTED_BY_RUN)
    root = Path(__file__).resolve().parents[1]
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=600)
            for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    def figures(out):  # the output but the host's timing of the run
        return [line for line in out.splitlines() if not line.startswith(("timing model wall time", "simulated warp"))]
    assert figures(runs[1].stdout) == figures(runs[0].stdout) and "predicted on the GPU" in runs[1].stdout
    assert runs[1].stderr.splitlines()[-1] == "[] True True"  # none imported, frozen, collecting again
    import gc
    before = gc.get_freeze_count()
    assert main(["run", "sgemm_64", "--functional", "--json"]) == 0
    assert gc.get_freeze_count() == before and gc.isenabled()


def test_run_timing_only(capsys, files):
    """--timing-only: the functional run computes what the timing model reads, not the results; the
    figures are those of the whole run and the output says the results were not computed."""
    vecadd = Path(__file__).resolve().parents[1] / "workloads" / "cuda" / "vecadd.cu"
    args = ["run", vecadd, "--grid", "64", "--block", "128", "--param", "n=8192", "--param", "a=a", "--param", "b=b",
            "--param", "c=c", "--buffer", "a=zeros:8192",
            "--buffer", "b=zeros:8192", "--buffer", "c=zeros:8192", "--predict"]
    assert cli(args + ["--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert cli(args + ["--json", "--timing-only"]) == 0
    only = json.loads(capsys.readouterr().out)
    assert only["timing_only"] is True and "timing_only" not in whole
    for key in ("warp_instructions", "sm_cycles", "cycles", "gpu_l2_hit_rate", "gpu_dram_bytes"):
        assert only[key] == whole[key], key
    assert cli(args + ["--timing-only"]) == 0
    assert "functional results not computed (--timing-only" in capsys.readouterr().out
    one_line_error(capsys, ["run", files["tiny"], "--timing-only", "--functional"],
                   "--timing-only", "not --functional")
    one_line_error(capsys, ["run", files["tiny"], "--timing-only", "--out", files["dir"] / "o"],
                   "--out saves the output buffers, which --timing-only does not compute")
    one_line_error(capsys, ["run", "sgemm_64", "--timing-only"], "--timing-only", "does not apply")


def test_every_command_run_as_the_program_collects_again():
    """The maxsim program collects no cycles until a command has imported what it runs: a command
    other than `run` (which says so itself) gets its collector back before it starts."""
    code = ("import gc, sys\nfrom maxsim.cli import main\nsys.argv = ['maxsim', 'configs']\n"
            "status = main()\nprint(gc.isenabled(), gc.get_freeze_count() > 0)\nsys.exit(status)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "True True"


def test_run_predict_samples_a_one_wave_launch_in_time_with_its_timed_sm(capsys, tmp_path):
    """`maxsim run FILE --predict` of a launch of one wave of long CTAs (a naive SGEMM, 32 CTAs on a
    GPU of two SMs, K = 2,048): "auto" simulates it once, on the whole GPU until its rates are
    stable, and extrapolates the launch and its timed SM (SM 0 of that run); the JSON says how, and
    the figures of --gpu-method full lie in the intervals it states."""
    suite = Path(__file__).resolve().parents[1] / "workloads" / "cuda" / "sampling_suite.cu"
    config = tmp_path / "two_sms.toml"
    config.write_text('inherit = "gm204"\n[gpu]\nsms = 2\n')
    rng = np.random.default_rng(11)
    n, k, rows = 512, 2048, 8
    np.save(tmp_path / "a.npy", rng.random(rows * k, dtype=np.float32))
    np.save(tmp_path / "b.npy", rng.random(k * n, dtype=np.float32))
    args = ["run", suite, "--kernel", "sgemm_naive", "--config", config, "--grid", f"{n // 128},{rows}",
            "--block", "128", "--param", "a=a", "--param", "b=b", "--param", "c=c", "--param", f"n={n}",
            "--param", f"k={k}", "--buffer", f"a={tmp_path / 'a.npy'}:in", "--buffer", f"b={tmp_path / 'b.npy'}:in",
            "--buffer", f"c=zeros:{rows * n}", "--predict", "--json"]
    out = {}
    for method in ("auto", "full"):
        assert cli(args + ["--gpu-method", method]) == 0
        out[method] = json.loads(capsys.readouterr().out)
    s, f = out["auto"], out["full"]
    assert s["gpu_prediction_method"] == "sampled in time" and f["gpu_prediction_method"] == "full"
    assert s["timed_sm_in_gpu"] and f["timed_sm_in_gpu"] and s["sm_ctas"] == f["sm_ctas"] == 16
    assert s["sm_prediction_method"] == "sampled in time" and "sm_prediction_method" not in f
    assert 0 < s["gpu_simulated_share"] < 1 and 0 < s["sm_simulated_share"] < 1
    lo, hi = s["gpu_cycles_interval"]
    assert lo <= f["cycles"] <= hi  # measured: +0.10% (interval +-0.6%)
    lo, hi = s["sm_cycles_interval"]
    assert lo <= f["sm_cycles"] <= hi  # measured: -0.29%
    # the timed SM's counts are its own (the functional run's), its rates those of the stretch simulated
    assert s["sm_warp_instructions"] == f["sm_warp_instructions"] == s["warp_instructions"] // 2
    assert s["sm_ipc"] == pytest.approx(f["sm_ipc"], rel=0.01)
    assert sum(r["executions"] for r in s["instructions"]) == s["sm_warp_instructions"]
    assert s["l2_hit_rate"] == pytest.approx(f["l2_hit_rate"], abs=0.02)
    assert cli(args[:-1] + ["--gpu-method", "auto"]) == 0
    text = capsys.readouterr().out
    assert "sampled in time" in text and "of its work simulated" in text
