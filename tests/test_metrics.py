"""Profiler metrics with nvprof's names: hand-computed values from given counters, metrics left
out when their counters are absent, and agreement with the counters of a real run."""

from __future__ import annotations

import types

import pytest

from maxsim.arch.config import load_config
from maxsim.report.metrics import METRICS, profiler_metrics, resident_warp_counters

CFG = load_config("gm204")  # 32-byte L2 and L1 sectors, 224 GB/s peak DRAM, 64 warps per SM


def test_hand_computed_metrics():
    counters = {"l2_read_hits": 300, "l2_read_misses": 100, "tex_sector_hits": 50, "tex_sector_misses": 450,
                "dram_bytes_read": 3_200_000, "dram_bytes_written": 800_000,
                "resident_warp_cycles": 12_000, "active_cycles": 1_000}
    m = profiler_metrics(counters, 1e-4, CFG)
    assert list(m) == list(METRICS)  # every metric, in the documented order
    assert m["l2_tex_read_hit_rate"] == pytest.approx(75.0)  # 300 / 400, percent
    assert m["tex_cache_hit_rate"] == pytest.approx(10.0)  # 50 / 500
    assert m["dram_read_throughput"] == pytest.approx(32.0)  # 3.2 MB / 100 us = 32 GB/s
    assert m["dram_write_throughput"] == pytest.approx(8.0)
    assert m["l2_read_throughput"] == pytest.approx(400 * 32 / 1e-4 / 1e9)  # 128 GB/s
    assert m["tex_cache_throughput"] == pytest.approx(500 * 32 / 1e-4 / 1e9)  # 160 GB/s
    assert m["dram_utilization_fraction"] == pytest.approx(40.0 / 224.0)  # of the peak 224 GB/s
    assert m["dram_utilization"] == 2  # round(10 x 0.179)
    assert m["achieved_occupancy"] == pytest.approx(12 / 64)  # 12 warps per active cycle of 64


def test_saturated_dram_reads_ten_and_empty_counters_read_zero():
    m = profiler_metrics({"dram_bytes_read": 224_000, "dram_bytes_written": 0}, 1e-6, CFG)
    assert m["dram_utilization_fraction"] == pytest.approx(1.0) and m["dram_utilization"] == 10
    m = profiler_metrics({"l2_read_hits": 0, "l2_read_misses": 0, "tex_sector_hits": 0, "tex_sector_misses": 0},
                         1e-6, CFG)
    assert m["l2_tex_read_hit_rate"] == 0.0 and m["tex_cache_hit_rate"] == 0.0


def test_metrics_without_their_counters_are_left_out():
    assert profiler_metrics({}, 1e-3, CFG) == {}
    m = profiler_metrics({"l2_read_hits": 3, "l2_read_misses": 1}, None, CFG)
    assert m == {"l2_tex_read_hit_rate": 75.0}  # no time: no throughputs
    m = profiler_metrics({"dram_bytes_read": 1000}, 1e-6, CFG)
    assert set(m) == {"dram_read_throughput"}  # utilisation needs the written bytes too
    assert "achieved_occupancy" not in profiler_metrics({"resident_warp_cycles": 5, "active_cycles": 0}, 1.0, CFG)


def test_achieved_occupancy_from_a_cta_log():
    # two SMs with CTAs of 2 warps: SM a holds CTAs over [0, 100) and [50, 150) -> 2 x 200 warp-cycles,
    # active 150 cycles; SM b one CTA over [10, 60) -> 100 warp-cycles, active 50 cycles
    a = types.SimpleNamespace(cta_log=[((0, 0), 0, 100), ((1, 0), 50, 150)], wpc=2)
    b = types.SimpleNamespace(cta_log=[((2, 0), 10, 60)], wpc=2)
    c = resident_warp_counters([a, b])
    assert c == {"resident_warp_cycles": 500, "active_cycles": 200}
    assert profiler_metrics(c, 1.0, CFG)["achieved_occupancy"] == pytest.approx(500 / 200 / 64)


def test_run_metrics_agree_with_the_run_counters():
    from maxsim.arch.config import override
    from workloads.sgemm.harness import run_workload
    # counted as the model counts (a lookup merged into a fill under way is a hit), the metrics
    # are the run's own hit rates; the counting does not change the timing
    merged = override(CFG, {"l1tex.count_inflight_as_hit": True, "l2.count_inflight_as_hit": True})
    out = run_workload("sgemm_64", cfg=merged, m=256, n=256, k=64)
    m = out["timed_sm_profiler_metrics"]  # the timed SM's, beside its own counters
    seconds = out["sm_cycles"] / CFG.clock_hz
    assert m["l2_tex_read_hit_rate"] == pytest.approx(100 * out["l2_hit_rate"])
    assert m["tex_cache_hit_rate"] == pytest.approx(100 * out["texture_hit_rate"])
    nv = run_workload("sgemm_64", cfg=CFG, m=256, n=256, k=64)
    assert (nv["sm_cycles"], nv["texture_hit_rate"], nv["seconds"]) == (
        out["sm_cycles"], out["texture_hit_rate"], out["seconds"])
    # the configs count as nvprof on a GTX 980 does ([cupti-980]: a lookup that sends no request
    # to the L2 is a hit, merged ones too): the run's own rate; counting only completed data, the
    # 8 CTAs of the timed SM, which read each A and B sector together, lose most of their hits
    assert nv["timed_sm_profiler_metrics"]["tex_cache_hit_rate"] == pytest.approx(m["tex_cache_hit_rate"])
    done = override(CFG, {"l1tex.count_inflight_as_hit": False})
    only = run_workload("sgemm_64", cfg=done, m=256, n=256, k=64)["timed_sm_profiler_metrics"]
    assert only["tex_cache_hit_rate"] < 0.5 * m["tex_cache_hit_rate"]
    total = (m["dram_read_throughput"] + m["dram_write_throughput"]) * 1e9 * seconds
    assert total == pytest.approx(out["dram_bytes"])
    # 8 CTAs of 2 warps resident for all but the last cycles of the run: just under 16 / 64
    assert 0.9 * 16 / 64 < m["achieved_occupancy"] <= 16 / 64
    assert 0 <= m["dram_utilization_fraction"] < CFG.dram.efficiency + 1e-9


def test_launch_metrics_are_the_whole_gpus_and_labelled():
    """With a whole-GPU prediction, the launch's profiler metrics are the GPU's (from the
    prediction's counters: every SM's L1/texture cache, the L2 and DRAM), and the timed SM's stay
    beside them under their own key; the text report shows both columns."""
    from maxsim.report.text import format_run
    from workloads.sgemm.harness import run_workload
    # sgemm_64 at N = 256: 16 CTAs; the timed SM runs 8 of them (they share rows and columns of
    # tiles: texture hits), the GPU one per SM (no CTA shares an SM's cache: no texture hit)
    out = run_workload("sgemm_64", cfg=CFG, m=256, n=256, k=64)
    gpu, sm = out["gpu_profiler_metrics"], out["timed_sm_profiler_metrics"]
    assert out["profiler_metrics"] is gpu and out["profiler_metrics_of"] == "gpu"
    assert out["gpu_prediction_method"] == "sampled"
    # the L2 and the texture cache count a lookup merged into a fill under way as a hit
    # (l2 / l1tex.count_inflight_as_hit), as the model's own rates do
    assert gpu["l2_tex_read_hit_rate"] == pytest.approx(100 * out["gpu_l2_hit_rate"])
    assert gpu["tex_cache_hit_rate"] == 0 == out["gpu_texture_hit_rate"]
    assert 0 < sm["tex_cache_hit_rate"] == pytest.approx(100 * out["texture_hit_rate"])
    # 16 CTAs on 16 SMs: one CTA (2 of 64 warps) on each; 8 CTAs on the timed SM
    assert 0.9 * 2 / 64 < gpu["achieved_occupancy"] <= 2 / 64 < 0.9 * 16 / 64 < sm["achieved_occupancy"]
    # every A and B sector the 16 CTAs read comes from DRAM once: (256 x 64) x 2 matrices x 4 bytes
    assert out["gpu_dram_bytes"] >= 2 * 256 * 64 * 4
    text = format_run(out)
    assert "whole GPU" in text and "timed SM" in text
    assert "L2 hit rate (whole GPU)" in text and "L2 hit rate (timed SM)" in text


def test_a_launch_without_prediction_labels_its_metrics_as_the_timed_sms():
    from maxsim.host import launch
    from maxsim.validate import kernels as K
    r = launch(K.tld_kernel(), 1, 32, textures={0: K.texture()}, predict=False)
    f = r.fields()
    assert f["profiler_metrics_of"] == "timed_sm" and "gpu_profiler_metrics" not in f
    assert f["profiler_metrics"] == f["timed_sm_profiler_metrics"]
    # one CTA: the whole launch is the timed SM's run
    f = launch(K.tld_kernel(), 1, 32, textures={0: K.texture()}).fields()
    assert f["gpu_prediction_method"] == "timed SM" and f["profiler_metrics_of"] == "gpu"
    assert f["gpu_profiler_metrics"] == f["timed_sm_profiler_metrics"]
    assert f["gpu_l2_hit_rate"] == f["l2_hit_rate"]


def test_inflight_lookups_count_as_the_config_says():
    from maxsim.arch.config import override
    c = {"l2_read_hits": 60, "l2_read_misses": 40, "l2_pending_hits": 20,
         "tex_sector_hits": 30, "tex_sector_misses": 70, "tex_pending_hits": 25}
    # the configs: both count a lookup merged into a fill under way as a hit (the texture cache as
    # nvprof computes its rate on a GTX 980, [cupti-980]; the L2 a choice)
    m = profiler_metrics(c, 1e-6, CFG)
    assert (m["l2_tex_read_hit_rate"], m["tex_cache_hit_rate"]) == (60.0, 30.0)
    none = override(CFG, {"l1tex.count_inflight_as_hit": False, "l2.count_inflight_as_hit": False})
    assert (profiler_metrics(c, 1e-6, none)["l2_tex_read_hit_rate"],
            profiler_metrics(c, 1e-6, none)["tex_cache_hit_rate"]) == (40.0, 5.0)
    # the traffic is the same either way: every sector looked up
    assert m["tex_cache_throughput"] == profiler_metrics(c, 1e-6, CFG)["tex_cache_throughput"]
    # counters without a pending count: none
    del c["tex_pending_hits"], c["l2_pending_hits"]
    assert profiler_metrics(c, 1e-6, CFG)["tex_cache_hit_rate"] == 30.0
