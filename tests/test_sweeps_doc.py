"""docs/sweeps.md: its specs load as it says, its example is the spec shipped beside it, and two
figures of its results table are what the model predicts for those points."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "sweeps.md"
EXAMPLE = ROOT / "docs" / "sweeps" / "l2_dram.toml"


def _toml_blocks():
    return re.findall(r"```toml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_format_example_loads(tmp_path):
    from workloads.sweep import load_spec
    spec = tmp_path / "spec.toml"
    spec.write_text(_toml_blocks()[0])
    s = load_spec(spec)
    # 2 explicit points x 3 L2 sizes x 2 bandwidths x 2 kernels x 4 sizes (512 to 4096, doubling)
    assert len(s.points) == 2 * 3 * 2 * 2 * 4
    assert dict(s.fixed) == {"dram.efficiency": 0.79} and s.plot["x"] == "gpu.dram_bandwidth_gbs"


def test_the_page_shows_the_shipped_example():
    from workloads.sweep import load_spec
    shown = [b for b in _toml_blocks() if '"l2.size" = [524288, 1048576, 2097152]' in b and "n = [2048]" in b]
    assert len(shown) == 1
    assert tomllib.loads(shown[0]) == tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    assert len(load_spec(EXAMPLE).points) == 30


def _table():
    out = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| (sgemm_\d+) \| (\d+) (KB|MB) \|((?: [\d,]+(?: \*)? \|)+)$", line)
        if m:
            size = int(m.group(2)) << (10 if m.group(3) == "KB" else 20)
            cells = [v.strip() for v in m.group(4).strip(" |").split("|")]
            # a value, and whether it is marked DRAM-bound (*)
            values = [(int(v.rstrip(" *").replace(",", "")), v.endswith("*")) for v in cells]
            out[m.group(1), size] = dict(zip((32.0, 64.0, 96.0, 128.0, 256.0), values))
    return out


def test_the_results_table_has_every_point():
    table = _table()
    assert len(table) == 6 and all(len(v) == 5 for v in table.values())


@pytest.mark.parametrize("workload,l2,bandwidth", [("sgemm_64", 2 << 20, 96.0), ("sgemm_128", 1 << 20, 64.0)])
def test_figures_of_the_table_are_the_models(workload, l2, bandwidth):
    from workloads.sweep import load_spec, point_config
    from workloads.sgemm.predict import predict_sgemm
    spec = load_spec(EXAMPLE)
    point, = [p for p in spec.points if p.get("workload") == workload and p.get("l2.size") == l2
              and p.get("gpu.dram_bandwidth_gbs") == bandwidth]
    p = predict_sgemm(workload, 2048, point_config(spec, point))
    assert (round(p["gflops"]), p["dram_bound"]) == _table()[workload, l2][bandwidth]
