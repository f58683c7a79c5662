"""maxsim compare: simulated versus measured GFLOPS, error per point, MAPE per kernel."""

import json

import pytest

from maxsim.cli import main
from workloads.compare import load_measurements


def test_measured_data_is_installed_with_its_provenance():
    m = load_measurements()
    assert m["sgemm_128"][4096] == 6199.0 and m["sgemm_64"][512] == 5118.0
    assert len(m["sgemm_128"]) == 67 and len(m["sgemm_64"]) == 16
    from traces import path
    assert "Source: maxas wiki 'SGEMM' page" in path("maxas_gtx980_sgemm.csv").read_text()


def test_the_large_sgemm64_slice_is_scored_with_its_own_provenance():
    from traces import path
    from workloads.compare import MEASURED_FILES, measurement_sources
    text = path("maxas_gtx980_sgemm64_large.csv").read_text()
    assert "Source: maxas wiki 'SGEMM' page, chart BenchLarge" in text and "1607 MHz" in text
    assert "maxas_gtx980_sgemm64_large.csv" in MEASURED_FILES
    m, src = load_measurements(), measurement_sources()
    large = {n: v for n, v in m["sgemm_64"].items() if n > 512}
    assert large == {1024: 6081, 2048: 6116, 3072: 6150, 4096: 6116, 5120: 5644, 6144: 5385, 7168: 5185,
                     8192: 5100}
    assert {src["sgemm_64"][n] for n in large} == {"maxas_gtx980_sgemm64_large.csv"}
    assert {src["sgemm_64"][n] for n in m["sgemm_64"] if n <= 512} == {"maxas_gtx980_sgemm.csv"}
    # one file alone still loads as before
    assert len(load_measurements("maxas_gtx980_sgemm.csv")["sgemm_64"]) == 8


def test_compare_json_table_and_plot(tmp_path, capsys):
    out = tmp_path / "cmp.png"
    assert main(["compare", "--workload", "sgemm_128", "--sizes", "256,512", "--quiet", "--json",
                 "-o", str(out)]) == 0
    res = json.loads(capsys.readouterr().out)
    pts = res["kernels"]["sgemm_128"]["points"]
    assert [p["n"] for p in pts] == [256, 512]
    for p in pts:
        assert p["measured_gflops"] == load_measurements()["sgemm_128"][p["n"]]
        assert p["error_percent"] == pytest.approx(100 * (p["simulated_gflops"] / p["measured_gflops"] - 1))
        assert 0 < p["simulated_gflops"] < res["peak_gflops"]
    mape = sum(abs(p["error_percent"]) for p in pts) / 2
    assert res["kernels"]["sgemm_128"]["mape_percent"] == pytest.approx(mape)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["compare", "--workload", "sgemm_128", "--sizes", "512", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "MAPE" in text and "4818" in text


@pytest.mark.parametrize("args", [["--sizes", "abc"], ["--sizes", "0"], ["--workload", "nosuch"],
                                  ["--gpu", "nosuch"], ["--sizes", "256", "-o", "x.bmp"]])
def test_bad_arguments_one_line_exit_2(args, capsys):
    try:
        rc = main(["compare", "--quiet"] + args)
    except SystemExit as e:  # argparse's own usage errors
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("maxsim: error") or "error" in err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_worker_processes_do_not_change_the_results():
    from maxsim.arch.config import load_config
    from workloads.compare import compare
    cfg = load_config("gtx980_oc")
    one = compare(cfg, ("sgemm_64",), sizes=[128, 1024], jobs=1)
    two = compare(cfg, ("sgemm_64",), sizes=[128, 1024], jobs=2)
    for res in (one, two):  # the seconds each prediction took are the one thing that may differ
        for pt in res["kernels"]["sgemm_64"]["points"]:
            assert pt.pop("sim_seconds") > 0
    assert one == two
    assert [p["n"] for p in two["kernels"]["sgemm_64"]["points"]] == [128, 1024]


# ---------------------------------------------------------------------------------------------
# residency as a user choice, the Max64-3 curve, memory metrics and panels

def test_compare_at_3_warps_per_scheduler(capsys):
    assert main(["compare", "--workload", "sgemm_64", "--warps-per-scheduler", "3", "--sizes", "1024",
                 "--quiet", "--json", "--jobs", "1"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert list(res["kernels"]) == ["sgemm_64 at 3 warps/scheduler"]
    k = res["kernels"]["sgemm_64 at 3 warps/scheduler"]
    assert (k["workload"], k["registers_per_thread"], k["resident_ctas_per_sm"], k["warps_per_scheduler"],
            k["occupancy_limited_by"]) == ("sgemm_64", 129, 6, 3, "registers")
    (p,) = k["points"]
    assert p["waves"] == pytest.approx(256 / (16 * 6))  # 16 x 16 CTAs, 6 resident on each of 16 SMs
    assert p["measured_gflops"] is None and k["mape_percent"] is None
    assert main(["compare", "--workload", "sgemm_64", "--sizes", "1024", "--quiet", "--json", "--jobs", "1"]) == 0
    own = json.loads(capsys.readouterr().out)["kernels"]["sgemm_64"]
    assert own["resident_ctas_per_sm"] == 8 and own["points"][0]["waves"] == pytest.approx(2.0)
    assert own["points"][0]["simulated_gflops"] != p["simulated_gflops"]


@pytest.fixture
def fake_predictions(monkeypatch, tmp_path):
    """Replace the (slow) predictions by made-up ones that carry memory counters, and record the
    register count of each kernel predicted."""
    calls = []

    def fake(name, n, cfg, *, kernel=None, **_):
        calls.append((name, kernel.reg_cnt, n))
        cycles = 1000.0 * n
        hits = 600 + (50 if kernel.reg_cnt > 128 else 0)
        return {"kernel": name, "n": n, "gflops": n / 2.0, "seconds": cfg.cycles_to_seconds(cycles),
                "cycles": cycles, "waves": 1.0, "loop_cycles": 520.0,
                "memory": {"l2_read_hits": hits, "l2_read_misses": 1000 - hits,
                           "dram_bytes_read": 32 * (1000 - hits) * n, "dram_bytes_written": 0}}
    import workloads.compare
    monkeypatch.setattr(workloads.compare, "predict_sgemm", fake)
    # a cache of its own: the stand-in's results must not be read back as the model's elsewhere
    monkeypatch.setenv("MAXSIM_CACHE_DIR", str(tmp_path / "fake-cache"))
    return calls


def test_default_comparison_has_the_max64_3_curve(tmp_path, capsys, fake_predictions):
    out = tmp_path / "cmp.png"
    assert main(["compare", "--quiet", "--json", "--jobs", "1", "-o", str(out)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert list(res["kernels"]) == ["sgemm_64", "sgemm_128", "sgemm_64 at 3 warps/scheduler"]
    m = load_measurements()
    own, max3 = res["kernels"]["sgemm_64"], res["kernels"]["sgemm_64 at 3 warps/scheduler"]
    sizes = sorted(set(m["sgemm_64"]) | {768} | set(range(1024, 8193, 512)))
    assert [p["n"] for p in own["points"]] == [p["n"] for p in max3["points"]] == sizes
    assert max(sizes) == 8192 and own["measured_points"] == 16
    parts = own["mape_by_source"]
    assert {f: v["measured_points"] for f, v in parts.items()} == {"maxas_gtx980_sgemm.csv": 8,
                                                                   "maxas_gtx980_sgemm64_large.csv": 8}
    errs = {p["n"]: abs(p["error_percent"]) for p in own["points"] if p["error_percent"] is not None}
    assert parts["maxas_gtx980_sgemm64_large.csv"]["mape_percent"] == pytest.approx(
        sum(e for n, e in errs.items() if n > 512) / 8)
    assert all(p["measured_gflops"] is None for p in max3["points"]) and max3["mape_percent"] is None
    assert (max3["registers_per_thread"], max3["resident_ctas_per_sm"]) == (129, 6)
    assert {(n, r) for n, r, _ in fake_predictions} == {("sgemm_64", 125), ("sgemm_64", 129), ("sgemm_128", 115)}
    # memory metrics of each point, from the prediction's counters
    assert own["points"][0]["profiler_metrics"]["l2_tex_read_hit_rate"] == pytest.approx(60.0)
    assert max3["points"][0]["profiler_metrics"]["l2_tex_read_hit_rate"] == pytest.approx(65.0)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["compare", "--quiet", "--jobs", "1", "--workload", "sgemm_64", "--sizes", "256,512"]) == 0
    text = capsys.readouterr().out
    assert "L2 hit %" in text and "60.0" in text and "sgemm_64: 125 registers per thread, 8 CTAs per SM" in text
    # the header names the nominal and the effective clock (gtx980_oc: 1607 x 0.96 / 0.98 = 1574 MHz)
    assert "1607 MHz (1574 effective: gpu.effective_clock_fraction)" in text.splitlines()[0]
    assert res["core_clock_mhz"] == 1607 and res["effective_clock_mhz"] == pytest.approx(1607 * 0.96 / 0.98, rel=1e-4)


def test_memory_panels_of_the_plot(fake_predictions):
    import matplotlib.pyplot as plt

    from maxsim.arch.config import load_config
    from maxsim.report.compare_plot import comparison_figure
    from workloads.compare import compare
    res = compare(load_config("gtx980_oc"), ("sgemm_64",), sizes=[256, 512, 1024],
                  variants=[("sgemm_64", {"warps_per_scheduler": 3})])
    fig = comparison_figure(res)
    try:
        top, l2, dram = fig.axes
        assert top.get_xlabel() == l2.get_xlabel() == dram.get_xlabel() == "N (M = N = K)"
        assert "GFLOPS" in top.get_ylabel()
        assert "L2 hit rate" in l2.get_ylabel() and "DRAM utilisation" in dram.get_ylabel()
        for ax in (l2, dram):
            assert [t.get_text() for t in ax.get_legend().get_texts()] == ["sgemm_64", "sgemm_64 at 3 warps/scheduler"]
        lines = {ln.get_label(): ln for ln in l2.get_lines()}
        assert list(lines["sgemm_64 at 3 warps/scheduler"].get_ydata()) == pytest.approx([65.0] * 3)
        assert list(lines["sgemm_64"].get_xdata()) == [256, 512, 1024]
        util = {ln.get_label(): ln for ln in dram.get_lines()}["sgemm_64"].get_ydata()
        # 32 x 400 x n bytes in 1000 n cycles at 1607 MHz x 0.96 / 0.98 (the effective clock, gm204.toml),
        # of 256 GB/s (gtx980_oc's 8 Gbps), in percent
        assert util[0] == pytest.approx(100 * 32 * 400 / (1000 / (1.607e9 * 0.96 / 0.98)) / 256e9, rel=1e-4)
    finally:
        plt.close(fig)


def test_plot_without_memory_counters_has_one_panel(tmp_path, capsys, monkeypatch):
    import matplotlib.pyplot as plt

    import workloads.compare
    from maxsim.arch.config import load_config
    from maxsim.report.compare_plot import comparison_figure

    def bare(name, n, cfg, *, kernel=None, **_):
        return {"gflops": 1.0 * n, "cycles": 1e6, "waves": 1.0, "loop_cycles": 520.0, "seconds": 1e-3}
    monkeypatch.setattr(workloads.compare, "predict_sgemm", bare)
    out = tmp_path / "cmp.svg"
    # --no-cache: the stand-in model must run (the cache holds the real model's prediction)
    assert main(["compare", "--quiet", "--jobs", "1", "--no-cache", "--workload", "sgemm_128", "--sizes", "512",
                 "-o", str(out)]) == 0
    assert "no memory panels" in capsys.readouterr().err and out.stat().st_size > 0
    res = workloads.compare.compare(load_config("gtx980_oc"), ("sgemm_128",), sizes=[512])
    assert res["kernels"]["sgemm_128"]["points"][0]["profiler_metrics"] == {}
    fig = comparison_figure(res)
    assert len(fig.axes) == 1
    plt.close(fig)


@pytest.mark.parametrize("args,fragments", [
    (["--workload", "sgemm_128", "--warps-per-scheduler", "3"], ("--warps-per-scheduler 3:", "8-warp CTAs")),
    (["--warps-per-scheduler", "3"], ("--warps-per-scheduler 3:", "sgemm_128")),  # every kernel of 'all'
    (["--workload", "sgemm_64", "--regs", "300"], ("--regs 300:", "at most 255")),
    (["--workload", "sgemm_64", "--regs", "64"], ("--regs 64:", "uses 125 registers")),
    (["--workload", "sgemm_64", "--ctas-per-sm", "5"], ("--ctas-per-sm 5:", "no register count gives 5 CTAs")),
    (["--workload", "sgemm_64", "--warps-per-scheduler", "5"], ("--warps-per-scheduler 5:", "out of reach")),
    (["--regs", "130", "--ctas-per-sm", "6"], ("not allowed with",)),
    (["--warps-per-scheduler", "0"], ("expected a positive integer",)),
    (["--sizes", "256", "-o", "x.bmp"], ("x.bmp", ".png")),
])
def test_bad_residency_options_one_line_exit_2(args, fragments, capsys):
    try:
        rc = main(["compare", "--quiet", "--jobs", "1"] + args)
    except SystemExit as e:
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1
    for f in fragments:
        assert f in err, (f, err)


def test_dram_bound_points_are_marked():
    """A point whose sampled prediction saturates DRAM (maxsim.gpu.sampling.DRAM_SATURATED) is
    marked in the JSON and the table: sgemm_64 at N = 1024 (8 waves, from an empty L2) on a quarter GTX 980 with
    25 GB/s of DRAM; at N = 512 (two waves) DRAM is busy 64% of the steady state, and not marked."""
    from maxsim.arch.config import load_config, override
    from workloads.compare import compare, format_table
    cfg = override(load_config("gtx980_oc"), {"gpu.sms": 4, "l2.size": 524288, "l2.slices": 2, "dram.channels": 2,
                                              "gpu.dram_bus_bits": 64, "gpu.dram_bandwidth_gbs": 64.0,
                                              "dram.efficiency": 0.395})
    res = compare(cfg, ("sgemm_64",), sizes=[512, 1024], l2_start="empty")
    points = {p["n"]: p for p in res["kernels"]["sgemm_64"]["points"]}
    assert points[1024]["dram_bound"] and points[1024]["dram_busy"] > 0.8
    assert not points[512]["dram_bound"] and points[512]["dram_busy"] < 0.8
    table = format_table(res)
    assert "sgemm_64: DRAM-bound at N = 1024: DRAM busy at least 80% of the sampled steady state" in table
    assert [ln for ln in table.splitlines() if ln.rstrip().endswith("DRAM-bound")][0].split()[0] == "1024"


def test_compare_with_the_l2_the_previous_launch_left():
    """maxsim compare (--l2-start previous, the default): each launch starts with the L2 the same
    launch left, as in the measured benchmark's back-to-back launches (sgemm_64 at N = 256 keeps its 0.75 MB
    in the L2, and its one warp per scheduler, which exposes the texture latency, runs faster; at
    N = 1024, 12 MB, the L2 holds the previous launch's last CTAs' data and results, which the first
    wave does not read: within 2%)."""
    from maxsim.arch.config import load_config
    from workloads.compare import compare, format_table
    cfg = load_config("gtx980_oc")
    runs = {st: compare(cfg, ("sgemm_64",), sizes=[256, 1024], l2_start=st) for st in ("empty", "previous")}
    assert runs["previous"]["l2_start"] == "previous" and runs["empty"]["l2_start"] == "empty"
    g = {st: {p["n"]: p["simulated_gflops"] for p in r["kernels"]["sgemm_64"]["points"]} for st, r in runs.items()}
    assert g["previous"][256] > 1.05 * g["empty"][256]
    assert g["previous"][1024] == pytest.approx(g["empty"][1024], rel=0.02)
    assert "every launch starts with an empty L2" in format_table(runs["empty"])
    assert "every launch starts" not in format_table(runs["previous"])
    assert compare(cfg, ("sgemm_128",), sizes=[384])["l2_start"] == "previous"  # the measured benchmark's
