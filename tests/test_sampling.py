"""The sampled whole-GPU prediction against the full simulation, on sizes where both run.

Full simulation: every CTA of the grid on all SMs of the config, sharing the L2 and DRAM, at the
real K. Sampled (see maxsim/gpu/sampling.py): short simulations of one SM's rounds of resident
CTAs at two small K values, extrapolated to the real K; a launch smaller than one wave is
simulated whole at two K values and extrapolated. On the 16-SM GTX 980 the sizes up to 512 are
less than a wave; the one-SM sampling of full waves is checked here on a 4-SM variant of the same
GPU, and on the 16-SM one at N = 1024 by benchmarks/sampling_accuracy.py (too slow for the suite).
"""

import pytest

from maxsim.arch.config import load_config, override
from maxsim.gpu.sampling import WAVE_K_SAMPLES, dram_factor, sm_rounds
from workloads.sgemm.predict import footprint, predict_sgemm

CFG = load_config("gtx980_oc")
CFG4 = override(CFG, {"gpu.sms": 4})  # the same GPU with 4 SMs: N = 512 is two full waves


@pytest.mark.parametrize("name,n", [("sgemm_64", 256), ("sgemm_128", 256), ("sgemm_64", 512),
                                    ("sgemm_128", 512)])
def test_sampled_within_1_percent_of_full_simulation(name, n):
    full = predict_sgemm(name, n, CFG, full=True)
    sampled = predict_sgemm(name, n, CFG)
    assert sampled["method"] == "sampled" and full["method"] == "full"
    assert abs(sampled["cycles"] - full["cycles"]) / full["cycles"] < 0.01


@pytest.mark.parametrize("name", ["sgemm_64", "sgemm_128"])
def test_one_sm_sampling_of_full_waves_within_1_percent(name):
    # 16 CTAs of 8 warps (sgemm_128, 2 resident per SM) or 64 CTAs of 2 warps (sgemm_64, 8
    # resident): two full waves on 4 SMs, predicted from one SM's round with a quarter of the
    # L2 and DRAM bandwidth
    full = predict_sgemm(name, 512, CFG4, k=128, full=True)
    sampled = predict_sgemm(name, 512, CFG4, k=128)
    (rnd,) = sampled["rounds"]
    assert rnd["count"] == 2 and rnd["active_sms"] == 4 and rnd["dram_factor"] == 0.5
    assert rnd["k_samples"] == [32, 64]
    assert abs(sampled["cycles"] - full["cycles"]) / full["cycles"] < 0.01


def test_launch_smaller_than_a_wave_is_simulated_whole():
    # 4 CTAs on 16 SMs: the whole GPU at the two wave K samples; at K no larger than the second
    # sample it is the full simulation itself
    s = predict_sgemm("sgemm_128", 256, CFG)
    (rnd,) = s["rounds"]
    assert rnd["k_samples"] == list(WAVE_K_SAMPLES) and rnd["dram_factor"] == 1.0 and rnd["active_sms"] == 4
    k = WAVE_K_SAMPLES[1]
    assert predict_sgemm("sgemm_128", 256, CFG, k=k)["cycles"] == predict_sgemm("sgemm_128", 256, CFG, k=k,
                                                                                full=True)["cycles"]


def test_rounds_of_the_busiest_sm():
    # 16 SMs x 8 resident: 256 CTAs are two full waves; 300 CTAs add a tail of 44, dealt
    # round-robin like a first wave: 3 on the busiest SM, all 16 SMs busy
    assert sm_rounds(256, 16, 8) == [(2, 8, 16, 0, 128)]
    assert sm_rounds(300, 16, 8) == [(2, 8, 16, 0, 128), (1, 3, 16, 256, 44)]
    assert sm_rounds(36, 16, 2) == [(1, 2, 16, 0, 32), (1, 1, 4, 32, 4)]
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
    # every CTA the sampled SM runs exists and lies in its round, and a round's CTAs are distinct
    from maxsim.gpu.sampling import round_ctas
    for r in sm_rounds(gx * gy, 16, resident):
        ids = round_ctas(r, 16, gx)
        assert len(ids) == r[1] == len(set(ids))
        assert all(0 <= x < gx and 0 <= y < gy for x, y in ids)
        first, size = r[3], r[4]
        assert all(first <= x + y * gx < first + size for x, y in ids)


def test_dram_sharing_of_a_tail():
    # a tail of 4 CTAs in one row of an 8-wide grid, one per SM: they share their B tile
    assert dram_factor(16, 4, 16, 8, footprint) == pytest.approx((4 + 1) / (4 * 2))


def test_tail_after_a_full_wave_matches_full_simulation():
    # sgemm_128 at N = 768: 36 CTAs = one full wave of 32 + a tail of 4, which the dispatcher of
    # the full simulation spreads over 4 SMs (each SM's first free slot takes one). The tail is
    # simulated whole; the full wave is sampled on one SM. K = 128 keeps the full run short
    full = predict_sgemm("sgemm_128", 768, CFG, k=128, full=True)
    sampled = predict_sgemm("sgemm_128", 768, CFG, k=128)
    wave, tail = sampled["rounds"]
    assert tail["ctas"] == 1 and tail["active_sms"] == 4 and tail["k_samples"] == [128]
    assert abs(sampled["cycles"] - full["cycles"]) / full["cycles"] < 0.01
