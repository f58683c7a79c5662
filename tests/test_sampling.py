"""The sampled whole-GPU prediction against the full simulation, on sizes where both run.

Full simulation: every CTA of the grid on all 16 SMs of the GTX 980 config, sharing the L2 and
DRAM. Sampled: short simulations of one SM's rounds of resident CTAs at two small K values,
extrapolated to the real K (see maxsim/gpu/sampling.py). Larger sizes (N = 1024) are compared by
benchmarks/sampling_accuracy.py, too slow for the test suite.
"""

import pytest

from maxsim.arch.config import load_config
from maxsim.gpu.sampling import dram_factor, sm_rounds
from workloads.sgemm.predict import footprint, predict_sgemm

CFG = load_config("gtx980_oc")


@pytest.mark.parametrize("name,n", [("sgemm_64", 256), ("sgemm_128", 256), ("sgemm_64", 512),
                                    ("sgemm_128", 512)])
def test_sampled_within_1_percent_of_full_simulation(name, n):
    full = predict_sgemm(name, n, CFG, full=True)
    sampled = predict_sgemm(name, n, CFG)
    assert sampled["method"] == "sampled" and full["method"] == "full"
    assert abs(sampled["cycles"] - full["cycles"]) / full["cycles"] < 0.01


def test_rounds_of_the_busiest_sm():
    # 16 SMs x 8 resident: 256 CTAs are two full waves; 300 CTAs add a tail of 44, taken 8 at a
    # time by the 6 SMs that finish first
    assert sm_rounds(256, 16, 8) == [(2, 8, 16, 0, 128)]
    assert sm_rounds(300, 16, 8) == [(2, 8, 16, 0, 128), (1, 8, 6, 256, 44)]
    assert sm_rounds(20, 16, 8) == [(1, 2, 16, 0, 20)]
    assert sm_rounds(4, 16, 8) == [(1, 1, 4, 0, 4)]


def test_dram_sharing_of_a_wave():
    # 4 x 4 grid, one CTA per SM: 8 distinct tiles for 16 SMs reading 2 each
    assert dram_factor(0, 16, 16, 4, footprint) == pytest.approx(8 / 32)
    # no sharing declared: every miss goes to DRAM
    assert dram_factor(0, 16, 16, 4, None) == 1.0


def test_rectangular_prediction_matches_full_simulation_and_run_reports_it():
    from workloads.sgemm.harness import run_workload
    full = predict_sgemm("sgemm_128", 500, CFG, m=300, k=64, full=True)
    sampled = predict_sgemm("sgemm_128", 500, CFG, m=300, k=64)
    assert abs(sampled["cycles"] - full["cycles"]) / full["cycles"] < 0.01
    out = run_workload("sgemm_128", cfg=CFG, m=300, n=500, k=64)
    assert out["gpu_predicted_gflops"] == sampled["gflops"]
    assert out["gpu_predicted_seconds"] == pytest.approx((2 * 300 * 500 * 64 + 300 * 500) / (sampled["gflops"] * 1e9))
    assert 0 < out["gpu_predicted_gflops"] < CFG.peak_gflops


@pytest.mark.parametrize("gx,gy,resident", [(20, 15, 8), (3, 100, 2), (16, 9, 8), (7, 5, 1)])
def test_sampled_rounds_run_only_ctas_of_the_grid(gx, gy, resident):
    # every CTA the sampled SM runs exists, and a round's CTAs are distinct: a tail round after
    # full waves (300 CTAs = 2 waves of 128 + 44) is taken by the SMs that free first, R at a time
    from maxsim.gpu.sampling import round_ctas
    for r in sm_rounds(gx * gy, 16, resident):
        ids = round_ctas(r, 16, gx)
        assert len(ids) == r[1] == len(set(ids))
        assert all(0 <= x < gx and 0 <= y < gy for x, y in ids)
        first, size = r[3], r[4]
        assert all(first <= x + y * gx < first + size for x, y in ids)


def test_dram_sharing_of_a_tail_taken_in_runs():
    # a tail of 4 CTAs in one row of an 8-wide grid, taken 2 at a time: each pair shares its B tile
    assert dram_factor(16, 4, 16, 8, footprint, per_sm=2) == pytest.approx((4 + 1) / (3 + 3))
