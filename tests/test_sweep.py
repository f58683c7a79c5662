"""``maxsim sweep``: the spec's grid, the table (Parquet and CSV, one row per point with the figures
of ``maxsim run --json``), --resume, the result cache and the plot. Small SGEMM sizes and a kernel
file of the library keep each sweep to a few seconds; the points run in this process (--jobs 1):
the runs on Dask clusters are in test_cluster.py."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from maxsim.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _spec(tmp_path, text, name="spec.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


SMALL = """\
config = "gtx980_oc"
[grid]
"latency.l2_hit,latency.dram" = [[207, 375], [400, 700]]
workload = ["sgemm_64"]
n = [128, 256]
"""


def _run_json(capsys, args):
    assert main(["run"] + args + ["--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def test_grid_expansion_ranges_and_explicit_points(tmp_path):
    from workloads.sweep import load_spec
    spec = load_spec(_spec(tmp_path, """\
[grid]
"l2.size" = [524288, 1048576, 2097152]
"gpu.mem_clock_mhz,gpu.dram_bandwidth_gbs" = [[4000, 128.0], [8000, 256.0]]
workload = ["sgemm_64", "sgemm_128"]
n = {from = 256, to = 1024, times = 2}
[[point]]
[[point]]
warps_per_scheduler = 3
"""))
    # 2 explicit points x 3 L2 sizes x 2 bandwidths x 2 kernels x 3 sizes, the linked keys together
    assert len(spec.points) == 2 * 3 * 2 * 2 * 3
    assert len({p.id for p in spec.points}) == len(spec.points)
    first = dict(spec.points[0].values)
    assert first == {"l2.size": 524288, "gpu.mem_clock_mhz": 4000, "gpu.dram_bandwidth_gbs": 128.0,
                     "workload": "sgemm_64", "n": 256}
    assert sorted({p.get("n") for p in spec.points}) == [256, 512, 1024]
    assert sum(1 for p in spec.points if p.get("warps_per_scheduler") == 3) == 36


@pytest.mark.parametrize("text,fragment", [
    ('[grid]\n"l2.sise" = [1]\nworkload = ["sgemm_64"]\n', "no such key in [l2]"),
    ('[grid]\nworkload = ["sgemm_65"]\n', "unknown workload 'sgemm_65'"),
    ('[grid]\nworkload = ["sgemm_64"]\nregs = [130]\nctas_per_sm = [6]\n', "not regs and ctas_per_sm"),
    ('[grid]\n"a.b,l2.size" = [[1, 2]]\n', "unknown key 'a.b'"),
    ('[grid]\n"gpu.mem_clock_mhz,gpu.dram_bandwidth_gbs" = [4000]\nworkload = ["sgemm_64"]\n', "a list of 2"),
    ('[grid]\nn = {from = 1, to = 8}\nworkload = ["sgemm_64"]\n', "a range is"),
    ('[grid]\nworkload = ["sgemm_64"]\n"l2.size" = [1000]\n', "l2.size"),  # the config refuses it
    ('sizes = [1]\n', "unknown key 'sizes'"),
    ('[grid\n', "bad TOML syntax"),
])
def test_bad_specs_one_line_exit_2(tmp_path, capsys, text, fragment):
    spec = _spec(tmp_path, text)
    assert main(["sweep", str(spec), "--jobs", "1", "--quiet", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("maxsim: error:") and str(spec) in err and fragment in err, err


def test_rows_hold_the_figures_of_run_json(tmp_path, capsys):
    """Each row is one point with the figures `maxsim run --json` gives for it, the config key set
    as a config file that inherits the base would set it; Parquet and CSV hold the same rows."""
    spec = _spec(tmp_path, SMALL)
    assert main(["sweep", str(spec), "--jobs", "1", "--quiet", "--no-cache", "--table", str(tmp_path / "t")]) == 0
    assert "4 points: 4 computed in this process" in capsys.readouterr().out
    rows = pq.read_table(tmp_path / "t.parquet").to_pylist()
    assert [(r["latency.l2_hit"], r["n"]) for r in rows] == [(207, 128), (207, 256), (400, 128), (400, 256)]
    slow = tmp_path / "slow.toml"
    slow.write_text('inherit = "gtx980_oc"\n[latency]\nl2_hit = 400\ndram = 700\n')
    ref = _run_json(capsys, ["sgemm_64", "--m", "256", "--n", "256", "--k", "256", "--gpu", str(slow)])
    row = rows[3]
    for key in ("cycles", "seconds", "gflops", "sm_cycles", "sm_gflops", "sm_seconds", "gpu_predicted_gflops",
                "gpu_predicted_seconds", "warp_instructions", "sm_ipc", "ipc", "cycles_per_loop_iteration",
                "registers_per_thread", "verified"):
        assert row[key] == ref[key], key
    assert row["profiler_metrics.l2_tex_read_hit_rate"] == ref["profiler_metrics"]["l2_tex_read_hit_rate"]
    assert row["stall_reasons.dependency"] == ref["stall_reasons"]["dependency"]
    assert rows[1]["sm_cycles"] < row["sm_cycles"]  # longer memory latencies cost cycles
    assert rows[1]["gflops"] > row["gflops"]  # and the launch's GFLOPS
    with open(tmp_path / "t.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert [r["point"] for r in table] == [r["point"] for r in rows]
    assert [float(r["gflops"]) for r in table] == [r["gflops"] for r in rows]


def test_resume_runs_only_the_missing_points(tmp_path, capsys):
    spec = _spec(tmp_path, SMALL.replace("n = [128, 256]", "n = [128]"))
    base = str(tmp_path / "t")
    assert main(["sweep", str(spec), "--jobs", "1", "--quiet", "--no-cache", "--table", base]) == 0
    first = pq.read_table(base + ".parquet").to_pylist()
    capsys.readouterr()
    spec.write_text(SMALL)  # two more points
    assert main(["sweep", str(spec), "--jobs", "1", "--quiet", "--no-cache", "--table", base, "--resume"]) == 0
    assert "4 points: 2 computed in this process, 0 from the result cache, 2 already in the table" \
        in capsys.readouterr().out
    rows = pq.read_table(base + ".parquet").to_pylist()
    assert len(rows) == 4 and len({r["point"] for r in rows}) == 4
    kept = {r["point"]: r for r in rows}
    for r in first:  # the rows of the first run are kept as they were
        assert kept[r["point"]]["sim_seconds"] == r["sim_seconds"]


def test_the_cache_reads_back_and_a_model_change_misses(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MAXSIM_CACHE_DIR", str(tmp_path / "cache"))
    spec = _spec(tmp_path, SMALL)
    args = ["sweep", str(spec), "--jobs", "1", "--quiet", "--json", "--table", str(tmp_path / "t")]
    assert main(args) == 0
    one = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    two = json.loads(capsys.readouterr().out)
    assert one == two  # read back whole, even the seconds the simulation took
    assert main(args[:-3] + ["--table", str(tmp_path / "u")]) == 0
    assert "0 computed in this process, 4 from the result cache" in capsys.readouterr().out
    from maxsim.cache import ResultCache
    from workloads.compare import workload_cache
    from workloads.sweep import Task, load_spec, point_config, task_key
    s = load_spec(spec)
    task = Task(point=s.points[0], cfg=point_config(s, s.points[0]), kernel=None)
    here = workload_cache()
    assert here.get(task_key(here, task)) is not None
    other = ResultCache(here.directory, version=here.version + "-changed")  # another model version
    assert other.get(task_key(other, task)) is None
    # another config value is another key
    changed = Task(point=s.points[0], cfg=point_config(s, s.points[2]), kernel=None)
    assert task_key(here, changed) != task_key(here, task)


def test_a_kernel_file_with_its_launch_arguments(tmp_path, capsys):
    """A library kernel with parameters and buffers, over two grid sizes: each row's figures are
    those of `maxsim run FILE --predict --json` with the same arguments."""
    import numpy as np
    np.save(tmp_path / "a.npy", np.arange(4096, dtype=np.float32))
    np.save(tmp_path / "b.npy", np.ones(4096, dtype=np.float32))
    vecadd = ROOT / "workloads" / "kernels" / "vecadd.sass"
    spec = _spec(tmp_path, f"""\
config = "gm204"
[[kernel]]
name = "vecadd"
file = "{vecadd}"
block = 128
param = ["n=4096", "a=a", "b=b", "c=c"]
buffer = ["a=a.npy:in", "b=b.npy:in", "c=zeros:4096"]
[grid]
workload = ["vecadd"]
grid = [[8], [32]]
""")
    assert main(["sweep", str(spec), "--jobs", "1", "--quiet", "--no-cache", "--table", str(tmp_path / "t"),
                 "-o", str(tmp_path / "p.png"), "--x", "gpu_sms", "--y", "gpu_predicted_seconds"]) == 0
    # an old column name still plots (kept one release), with a note of its new name
    assert "the column gpu_predicted_seconds is now named seconds" in capsys.readouterr().err
    rows = pq.read_table(tmp_path / "t.parquet").to_pylist()
    assert [r["grid"] for r in rows] == ["[8]", "[32]"]
    capsys.readouterr()
    ref = _run_json(capsys, [str(vecadd), "--grid", "32", "--block", "128", "--param", "n=4096", "--param", "a=a",
                             "--param", "b=b", "--param", "c=c", "--buffer", f"a={tmp_path / 'a.npy'}:in",
                             "--buffer", f"b={tmp_path / 'b.npy'}:in", "--buffer", "c=zeros:4096", "--predict"])
    for key in ("cycles", "seconds", "sm_cycles", "warp_instructions", "gpu_predicted_seconds", "gpu_waves"):
        assert rows[1][key] == ref[key], key
    assert (tmp_path / "p.png").stat().st_size > 0


def test_the_plot_has_a_line_per_config(tmp_path, capsys):
    import matplotlib.pyplot as plt
    spec = _spec(tmp_path, SMALL)
    png = tmp_path / "p.png"
    assert main(["sweep", str(spec), "--jobs", "1", "--quiet", "--table", str(tmp_path / "t"),
                 "-o", str(png), "--x", "n", "--y", "sm_cycles"]) == 0
    assert "plot written to" in capsys.readouterr().out and png.stat().st_size > 0
    from workloads.sweep import load_spec, plot_sweep
    rows = pq.read_table(tmp_path / "t.parquet").to_pylist()
    orig = plt.close
    plt.close = lambda *a: None  # keep the figure to look at it
    try:
        plot_sweep(rows, "n", "sm_cycles", str(tmp_path / "q.svg"), load_spec(spec))
        ax = plt.gcf().axes[0]
        assert ax.get_ylabel() == "sm_cycles (the timed SM)"
        lines = {ln.get_label(): list(ln.get_ydata()) for ln in ax.get_lines()}
    finally:
        plt.close = orig
        plt.close("all")
    assert set(lines) == {"latency.l2_hit=207, latency.dram=375", "latency.l2_hit=400, latency.dram=700"}
    assert lines["latency.l2_hit=400, latency.dram=700"] == [rows[2]["sm_cycles"], rows[3]["sm_cycles"]]
    assert main(["sweep", str(spec), "--jobs", "1", "--quiet", "--table", str(tmp_path / "t"),
                 "-o", str(png), "--x", "nope"]) == 2
    assert "--x nope: no such column" in capsys.readouterr().err


def test_a_point_the_model_refuses_is_one_line_naming_it(tmp_path, capsys):
    spec = _spec(tmp_path, '[grid]\nworkload = ["sgemm_64"]\nn = [128]\nregs = [64]\n')
    assert main(["sweep", str(spec), "--jobs", "1", "--quiet", "--no-cache", "--table", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"maxsim: error: {spec}: point workload=sgemm_64, n=128, regs=64: ") and "125" in err, err


def test_the_progress_bar_counts_points(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MAXSIM_PROGRESS", "1")
    spec = _spec(tmp_path, SMALL.replace("n = [128, 256]", "n = [128]"))
    assert main(["sweep", str(spec), "--jobs", "1", "--no-cache", "--table", str(tmp_path / "t")]) == 0
    err = capsys.readouterr().err
    assert "sweep  [" in err and "2/2 points" in err and "Traceback" not in err
