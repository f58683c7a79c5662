"""maxsim compare: simulated versus measured GFLOPS, error per point, MAPE per kernel."""

import json

import pytest

from maxsim.cli import main
from workloads.compare import load_measurements


def test_measured_data_is_installed_with_its_provenance():
    m = load_measurements()
    assert m["sgemm_128"][4096] == 6199.0 and m["sgemm_64"][512] == 5118.0
    assert len(m["sgemm_128"]) == 67 and len(m["sgemm_64"]) == 8
    from traces import path
    assert "Source: maxas wiki 'SGEMM' page" in path("maxas_gtx980_sgemm.csv").read_text()


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
    assert one == two
    assert [p["n"] for p in two["kernels"]["sgemm_64"]["points"]] == [128, 1024]
