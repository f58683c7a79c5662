"""The sampled whole-GPU prediction against the full simulation, on sizes where both run.

Full simulation: every CTA of the grid on all SMs of the config, sharing the L2 and DRAM, at the
real K. Sampled (see maxsim/gpu/sampling/): the first wave simulated whole at two small K and
extrapolated, the steady state of later waves from a window of the population the dispatcher model
gives (every SM at once, the L2 warmed with the launch's history; the CTAs of a wave kept together,
as the full simulation keeps them) and from the start of such a wave simulated whole, tails
simulated whole. Both
regimes are checked: compute-bound (the stock GTX 980 and a 4-SM variant, where N = 512 is two full
waves) and memory-bound (the 4-SM variant with its DRAM cut to 12 GB/s: sgemm_64's first wave then
waits on DRAM for about half its time).
"""

import types

import numpy as np
import pytest

from maxsim.arch.config import load_config, override
from maxsim.gpu.sampling import DRAM_SATURATED, WAVE_K_SAMPLES, dispatch, resident_at, samples_needed
from workloads.sgemm.predict import predict_sgemm

CFG = load_config("gtx980_oc")
CFG4 = override(CFG, {"gpu.sms": 4})  # the same GPU with 4 SMs: N = 512 is two full waves
# memory-bound: 4 SMs and 12 GB/s of DRAM (a 375 MHz x 256-bit bus), a 16-SM GPU's 48 GB/s share
CFG4_SLOW_DRAM = override(CFG4, {"gpu.mem_clock_mhz": 375, "gpu.dram_bandwidth_gbs": 12.0})


def _error(name, n, cfg, **kw):
    full = predict_sgemm(name, n, cfg, full=True, **kw)
    sampled = predict_sgemm(name, n, cfg, **kw)
    assert sampled["method"] == "sampled" and full["method"] == "full"
    return (sampled["cycles"] - full["cycles"]) / full["cycles"], sampled, full


@pytest.mark.parametrize("name,n", [("sgemm_64", 256), ("sgemm_128", 256), ("sgemm_64", 512),
                                    ("sgemm_128", 512)])
def test_launch_of_at_most_a_wave_within_1_percent_of_full_simulation(name, n):
    err, _, _ = _error(name, n, CFG)
    assert abs(err) < 0.01


@pytest.mark.parametrize("name", ["sgemm_64", "sgemm_128"])
def test_two_full_waves_compute_bound_within_2_percent(name):
    # 16 CTAs of 8 warps (sgemm_128, 2 resident per SM) or 64 CTAs of 2 warps (sgemm_64, 8
    # resident): two full waves on 4 SMs; the second is predicted from a steady-state window and
    # the start of its wave
    err, sampled, _ = _error(name, 512, CFG4, k=256)
    assert [p["name"] for p in sampled["phases"]] == ["first wave", "steady state", "wave start"]
    assert abs(err) < 0.02


def test_two_full_waves_memory_bound_within_2_percent():
    # sgemm_64, 4 SMs, 12 GB/s: the first wave's 12 distinct A/B tiles per k-slice come from DRAM;
    # the second wave finds its A tiles in the L2 (the first wave read them): only a history-warmed
    # L2 gets the second wave right
    err, sampled, full = _error("sgemm_64", 512, CFG4_SLOW_DRAM, k=256)
    first, steady, start = sampled["phases"]
    # memory-bound indeed: the first wave's loop is far slower than the compute-bound one
    assert first["loop_cycles"] > 1.5 * 2080
    assert full["memory"]["dram_busy_cycles"] > 0.8 * full["cycles"]
    assert abs(err) < 0.02


def test_launch_smaller_than_a_wave_is_simulated_whole():
    # 4 CTAs on 16 SMs: the whole GPU at the two wave K samples; at K no larger than the second
    # sample it is the full simulation itself
    s = predict_sgemm("sgemm_128", 256, CFG)
    (phase,) = s["phases"]
    assert phase["k_samples"] == list(WAVE_K_SAMPLES) and phase["ctas"] == 4
    k = WAVE_K_SAMPLES[1]
    assert predict_sgemm("sgemm_128", 256, CFG, k=k)["cycles"] == predict_sgemm("sgemm_128", 256, CFG, k=k,
                                                                                full=True)["cycles"]


def test_dispatcher_model_hands_the_next_cta_to_the_slot_that_frees_first():
    # 2 slots with CTAs of 10 and 15 cycles: hand-derived schedule
    sched = dispatch(5, 2, lambda slot, cta: (10, 15)[slot])
    assert sched == [(0, 0, 10), (1, 0, 15), (0, 10, 20), (1, 15, 30), (0, 20, 30)]
    assert resident_at(sched, 16) == {0: (2, 10, 20), 1: (3, 15, 30)}
    # a tie goes to the lower slot
    assert dispatch(3, 2, lambda slot, cta: 10)[2] == (0, 10, 20)


def test_samples_needed_counts_the_simulations():
    # 300 CTAs on 16 SMs x 8: first wave (2 K samples), steady window, the start of its wave,
    # tail (2 K samples)
    assert samples_needed((20, 15), 1024, 16, 8) == 6
    # under a wave at small K: one simulation
    assert samples_needed((4, 4), 64, 16, 8) == 1


def test_rectangular_prediction_matches_full_simulation_and_run_reports_it():
    from workloads.sgemm.harness import run_workload
    full = predict_sgemm("sgemm_128", 500, CFG, m=300, k=64, full=True)
    sampled = predict_sgemm("sgemm_128", 500, CFG, m=300, k=64)
    assert abs(sampled["cycles"] - full["cycles"]) / full["cycles"] < 0.01
    out = run_workload("sgemm_128", cfg=CFG, m=300, n=500, k=64)
    assert out["gflops"] == out["gpu_predicted_gflops"] == sampled["gflops"]
    assert out["seconds"] == pytest.approx((2 * 300 * 500 * 64 + 300 * 500) / (sampled["gflops"] * 1e9))
    assert out["cycles"] == sampled["cycles"]
    assert 0 < out["gflops"] < CFG.peak_gflops


def test_tail_after_a_full_wave_matches_full_simulation():
    # sgemm_128 at N = 768: 36 CTAs = one full wave of 32 + a tail of 4, which the dispatcher of
    # the full simulation spreads over 4 SMs (each SM's first free slot takes one). The tail is
    # simulated whole. K = 128 keeps the full run short
    err, sampled, _ = _error("sgemm_128", 768, CFG, k=128)
    first, tail = sampled["phases"]
    assert tail["name"] == "tail" and tail["ctas"] == 4 and tail["k_samples"] == [128]
    assert abs(err) < 0.01


# a quarter of the GTX 980: 4 SMs, 512 KB of L2 in 2 slices, 2 DRAM channels (64 GB/s): sgemm_64 at
# N = 1024 is 8 full waves of 32 CTAs, and each wave's results (512 KB) fill the L2
QUARTER = override(CFG, {"gpu.sms": 4, "l2.size": 524288, "l2.slices": 2, "dram.channels": 2,
                         "gpu.dram_bus_bits": 64, "gpu.dram_bandwidth_gbs": 64.0})


def test_the_ctas_of_a_wave_stay_together_in_the_full_simulation():
    """What the dispatcher model's keeping the waves together rests on: over 8 waves of sgemm_64 (K = 512, 64 main-loop
    iterations) the CTAs that start together end together, and the CTAs of a later wave start
    within 6 iterations of one another (a dispatcher that kept the first wave's per-slot costs,
    which differ by up to 0.8%, drifts without bound: 42 iterations of skew at N = 4096)."""
    from maxsim.gpu.gpu import simulate_gpu
    from workloads.sgemm.predict import _builder, generate_kernel
    params, memory, textures = _builder(1024, 1024, 512)(512)
    r = simulate_gpu(generate_kernel("sgemm_64"), (16, 16), 64, params, memory, textures, cfg=QUARTER,
                     hazards=None)
    log = sorted((s, e) for sm in r.sms for _, s, e in sm.cta_log)
    assert len(log) == 256
    for w in range(8):
        starts, ends = zip(*log[32 * w:32 * w + 32])
        cycles_per_iteration = (max(ends) - min(starts)) / 64
        assert (max(starts) - min(starts)) / cycles_per_iteration < 6
    first = [e - s for s, e in log[:32]]
    assert max(first) / min(first) - 1 < 0.01


def test_a_launch_that_saturates_dram_is_marked_dram_bound():
    """Where DRAM is saturated the waves of the full simulation drift apart, which the sampled
    prediction does not follow: such a launch is marked. The quarter GPU at 25 GB/s (8 waves of
    sgemm_64 at N = 1024) keeps DRAM busy 87% of its steady-state window (off by -13% against its
    full simulation; 82% from the L2 the launch before left, 82.4% before C began a page of its
    own, maxsim.functional.memory.place); at 51 GB/s 48% (within 1.6%). The
    busy share is the channels' bytes over their sustained rate, and a launch without a
    steady-state window (no later waves to drift) is never marked."""
    slow = override(QUARTER, {"dram.efficiency": 0.395})
    for cfg, bound in ((slow, True), (QUARTER, False)):
        for start in ("empty", "previous"):
            p = predict_sgemm("sgemm_64", 1024, cfg, l2_start=start)
            assert p["dram_bound"] is bound and (p["dram_busy"] >= DRAM_SATURATED) is bound
            window, = [ph["memory"] for ph in p["phases"] if ph["name"] == "steady state"]
            by_bytes = (window["dram_bytes_read"] + window["dram_bytes_written"]) / (window["cycles"] * cfg.dram_bytes_per_clk)
            assert p["dram_busy"] == pytest.approx(by_bytes, rel=0.01)
            assert (0.81 < p["dram_busy"] < 0.9) if bound else (0.4 < p["dram_busy"] < 0.6)
    one = predict_sgemm("sgemm_64", 256, slow)  # 16 CTAs: half a wave
    assert not one["dram_bound"] and one["dram_busy"] > 0


@pytest.mark.parametrize("cfg,name,n", [(CFG, "sgemm_64", 256), (CFG, "sgemm_128", 384), (CFG4, "sgemm_64", 512)])
def test_a_launch_after_the_same_launch_matches_the_full_simulation(cfg, name, n):
    """``l2_start="previous"``: the launch finds the L2 as the same launch left it (back-to-back
    launches, as maxas's benchmark times them). The sampled prediction warms its L2 from the
    launch's own schedule one period earlier; the full simulation runs the launch twice and times
    the second from the L2 the first left. They agree within 0.5% (one wave on the GTX 980, and two
    full waves on 4 SMs). sgemm_64 at N = 256 reads 768 KB, which the 2 MB L2 keeps: the second
    launch's reads all but all hit (the empty L2 gives the first reader of each sector a miss, 25%
    of the reads, four CTAs sharing each panel) and it runs faster."""
    empty = predict_sgemm(name, n, cfg, full=True)
    full = predict_sgemm(name, n, cfg, full=True, l2_start="previous")
    sampled = predict_sgemm(name, n, cfg, l2_start="previous")
    assert abs(sampled["cycles"] / full["cycles"] - 1) < 0.005
    if n == 256:
        m, e = full["memory"], empty["memory"]
        assert m["l2_read_hits"] / (m["l2_read_hits"] + m["l2_read_misses"]) > 0.99
        assert e["l2_read_hits"] / (e["l2_read_hits"] + e["l2_read_misses"]) == pytest.approx(0.75, abs=0.01)
        assert full["cycles"] < 0.9 * empty["cycles"] and m["dram_bytes_read"] < 0.01 * e["dram_bytes_read"]


def test_l2_start_is_checked():
    with pytest.raises(ValueError, match="l2_start 'warm': expected one of empty, previous"):
        predict_sgemm("sgemm_64", 256, CFG, l2_start="warm")


def test_wave_alignment_of_a_cta_log():
    """Two SMs, 2 slots: waves of 2 CTAs by start. Durations 100, 100, 100, 140: mean 110, std
    17.32; the second wave starts at 100 and 120: a spread of 20 cycles, 20/110 of a CTA."""
    from maxsim.gpu.gpu import wave_alignment
    sms = [types.SimpleNamespace(cta_log=[(0, 0, 100), (2, 100, 200)]),
           types.SimpleNamespace(cta_log=[(1, 0, 100), (3, 120, 260)])]
    a = wave_alignment(sms, 2)
    assert a["waves"] == 2 and a["widest_wave_start_spread_cycles"] == 20
    assert a["widest_wave_start_spread_share"] == pytest.approx(20 / 110)
    assert a["cta_duration_cv"] == pytest.approx(np.std([100, 100, 100, 140]) / 110)
    assert wave_alignment([types.SimpleNamespace(cta_log=[])], 2) is None


def test_a_later_wave_starts_by_writing_back_the_previous_waves_results():
    """Each wave's results (32 CTAs x 64 x 64 floats = 512 KiB) fill the L2 and are written back as
    the next wave's first reads evict them. A steady-state window in mid-wave sees none of that;
    the simulated start of a wave writes back one wave's results, and the launch's write-backs
    and cycles come out as in the full simulation."""
    err, sampled, full = _error("sgemm_64", 1024, QUARTER, k=512)
    phases = {p["name"]: p for p in sampled["phases"]}
    assert list(phases) == ["first wave", "steady state", "wave start"]
    assert phases["steady state"]["memory"]["dram_bytes_written"] < 0.05 * 512 * 1024
    assert phases["wave start"]["memory"]["dram_bytes_written"] == pytest.approx(512 * 1024, rel=0.02)
    # the results of the first 7 waves leave the L2 during the launch, and some of the last's
    assert 7 * 512 * 1024 <= full["memory"]["dram_bytes_written"] <= 8 * 512 * 1024
    assert sampled["memory"]["dram_bytes_written"] == pytest.approx(full["memory"]["dram_bytes_written"], rel=0.03)
    assert abs(err) < 0.04


class _Warp:
    def __init__(self, branch_times):
        self.branch_times = branch_times


def test_sm_rate_needs_every_resident_cta_in_its_loop():
    """Two CTAs on an SM, each 2,048 cycles per iteration: the rate is 2,048. When one of them has
    only two iterations in the window (it ends there), the SM had fewer CTAs in their loop than
    slots for most of the window: no rate (the window's other SMs stand for it)."""
    from maxsim.gpu.sampling import _sm_loop_cycles
    steady = [_Warp([100.0 + 2048 * i for i in range(20)]) for _ in range(16)]
    assert _sm_loop_cycles(steady, stop=10 ** 9) == pytest.approx(2048)
    ending = [_Warp([50.0, 2098.0, 4146.0])] * 8
    assert _sm_loop_cycles(steady[:8] + ending, stop=10 ** 9) is None


def test_sm_rate_over_whole_page_periods_charges_a_walk_at_its_real_rate():
    """Warps at 2,000 cycles per iteration that stall 1,600 cycles once per page crossing, every
    10.7 iterations: 2,149.5 cycles per iteration over the loop. Measured over a whole number of
    periods (a window of 18 iterations) the rate is that at every phase of the crossings, but for
    the stall's position at whole iterations (one phase: 2.1% short); over the 12 iterations of a
    window as they come (no period) it is -7.0% or +5.5% by the phase."""
    from maxsim.gpu.sampling import _sm_loop_cycles
    period, base, stall = 10.7, 2000.0, 1600.0
    want = base + stall / period
    with_period, without = [], []
    for phase in np.linspace(0.0, period, 12, endpoint=False):
        crossings = phase + period * np.arange(4)
        times = [100.0 + base * i + stall * np.count_nonzero(crossings < i) for i in range(18)]
        with_period.append(_sm_loop_cycles([_Warp(times)] * 8, stop=10 ** 9, period=period) / want - 1)
        without.append(_sm_loop_cycles([_Warp(times[:12])] * 8, stop=10 ** 9) / want - 1)
    assert max(abs(r) for r in with_period) < 0.025
    assert sum(abs(r) < 0.001 for r in with_period) >= 10
    assert min(without) < -0.05 and max(without) > 0.05


def test_page_period_of_sgemm_operands_above_the_l2_tlb_reach():
    """A CTA of an SGEMM (A and B stored K-major, N floats per row of K) enters a new page every
    page / (4 N x 8) main-loop iterations; below the L2 TLB's reach (A and B in fewer pages than
    it holds) no period: a sweep in K order finds its pages translated."""
    from maxsim.gpu.sampling import _History
    from workloads.sgemm.generator import generate_kernel
    from workloads.sgemm.problem import _builder, _shift

    def period(n, entries):
        cfg = override(CFG4, {"tlb.page_bytes": 64 * 1024, "tlb.l2_entries": entries, "tlb.l2_assoc": 4})
        grid = (n // 64, n // 64)
        return _History(generate_kernel("sgemm_64"), grid, 64, _builder(n, n, n), _shift(n, n), cfg, 8,
                        n // 8, grid[0], 8).page_period()

    assert period(256, 4) == pytest.approx(64 * 1024 / (256 * 4 * 8))  # 8 pages of A and B: 4 entries
    assert period(256, 16) is None


def test_prediction_stays_below_the_fp32_peak_when_a_window_has_ctas_ending():
    """sgemm_128 at N = 4864 on the GTX 980 (45 waves + 4): in the second steady-state window some
    SMs have a CTA that ends early; their rate, measured while that CTA was in its epilogue, once
    made the prediction 7,111 GFLOPS, above the 6,582 GFLOPS an SM can issue (measured: 6,170)."""
    cfg = load_config("gtx980_oc")
    p = predict_sgemm("sgemm_128", 4864, cfg)
    assert p["gflops"] < cfg.peak_gflops
    assert p["loop_cycles"] >= 2048  # 4 warps per scheduler x 512 FFMA per iteration
    for phase in p["phases"]:
        if phase["name"] == "steady state":
            assert phase["loop_cycles"] >= 2048


def test_a_tail_is_sampled_again_only_while_its_drift_matters_to_the_launch():

    from maxsim.gpu.sampling import TAIL_SETTLE, WAVE_SETTLE, _settled, _share
    # 2 loop-filling gaps, 12 gaps whose second half costs 2% less than the first, the last
    gaps = np.array([1500.0, 1200.0] + [1020.0] * 6 + [1000.0] * 6 + [700.0])
    assert not _settled(gaps)  # a wave that is the whole launch: a 2% drift > WAVE_SETTLE
    assert not _settled(gaps, share=0.5)  # half the launch: 1% of it could still move
    assert _settled(gaps, share=TAIL_SETTLE / 0.03)  # tolerance 3%: the 2% drift is settled
    assert _settled(np.array([1500.0, 1200.0] + [1000.0] * 12 + [700.0]))
    assert 0.02 > WAVE_SETTLE and 0.02 * 0.5 > TAIL_SETTLE
    # a tail's share of the launch: its length at K (the line through its samples) over the whole
    assert _share(0.0, [100.0, 180.0], [64, 128], 1024) == 1.0  # a launch of at most one wave
    length = 100.0 + 80.0 * (1024 - 64) / 64  # 1,300 cycles at K = 1024
    assert _share(3900.0, [100.0, 180.0], [64, 128], 1024) == pytest.approx(length / (3900.0 + length))
    assert _share(3900.0, [180.0], [128], 1024) == pytest.approx(1440.0 / (3900.0 + 1440.0))


def test_a_steady_window_does_not_start_just_before_aligned_ctas_end():
    from maxsim.gpu.sampling import STEADY_SKIP, WINDOW_SHIFTS, _clear_of_ends
    # 4 slots on 2 SMs running CTAs of 100 cycles (100 iterations) back to back, in step
    schedule = dispatch(12, 4, lambda j, i: 100.0)
    step = 100.0 / (2 * WINDOW_SHIFTS)
    # at cycle 199 every resident CTA has 1 iteration left, no SM could be measured: the nearest
    # start where one can is one step (100 / 32 cycles) later, after the next CTAs began
    assert _clear_of_ends(schedule, 199.0, 150.0, 250.0, 100, 2) == pytest.approx(199.0 + step)
    # where the CTAs have enough left, the window stays
    assert _clear_of_ends(schedule, 150.0, 100.0, 200.0, 100, 2) == 150.0
    assert _clear_of_ends(schedule, 200.0 - (STEADY_SKIP + 2), 100.0, 200.0, 100, 2) == 194.0
    # confined to [lo, hi]: 195 leaves 5 iterations (< STEADY_SKIP + 2), 195 - 3.125 leaves 8.1
    assert _clear_of_ends(schedule, 195.0, 190.0, 199.0, 100, 2) == pytest.approx(195.0 - step)


def _sgemm_64_launch(cfg, skewed, n=256, k_step=8):
    """sgemm_64 at n on 8 CTA slots: the dispatcher model's schedule (CTAs of unequal length when
    ``skewed``, as the model gives them after the first wave), the launch's _History, its CTA count
    and K-loop iterations."""
    from maxsim.gpu.sampling import _History
    from workloads.sgemm.generator import generate_kernel
    from workloads.sgemm.problem import _builder, _shift

    grid = (n // 64, n // 64)
    ctas, iters = grid[0] * grid[1], n // k_step
    schedule = dispatch(ctas, 8, lambda j, i: 4000.0 + (370.0 * (i % 5) if skewed else 0.0))
    history = _History(generate_kernel("sgemm_64"), grid, 64, _builder(n, n, n), _shift(n, n), cfg, k_step,
                       iters, grid[0], 8)
    return schedule, history, ctas, iters


@pytest.mark.parametrize("skewed", [False, True])
def test_writeback_time_equals_the_replay_of_the_whole_launch(skewed):
    # the replay starts at the launch's first store; the answer must be that of replaying every
    # read from cycle 0 (here through the plain-Python LRU list), on a launch whose L2 (256 KB on
    # a 4-SM GPU; a wave stores 128 KB of C) fills with results in its second wave
    import heapq

    from maxsim.gpu.sector_lru import ReferenceLRU

    cfg = override(CFG4, {"l2.size": 256 * 1024})
    schedule, history, ctas, iters = _sgemm_64_launch(cfg, skewed)
    until = max(e for _, _, e in schedule)
    got = history.writeback_time(schedule, until)
    # the reference: every (cycle, CTA, slice) read and each CTA's store at its end, in time order
    history._trace(list(range(ctas)))
    events = []
    for i, (_, s, e) in enumerate(schedule):
        events += [(s + (q + 0.5) / iters * (e - s), i, q) for q in range(iters)] + [(e, i, -1)]
    heapq.heapify(events)
    lru = ReferenceLRU(cfg.l2.size // cfg.l2.sector)
    want = None
    while events:
        t, i, q = heapq.heappop(events)
        secs = history.stores[i] if q < 0 else history.sectors(i, q)
        if lru.access(secs, q < 0):
            want = t
            break
    assert want is not None and want > min(e for _, _, e in schedule) + 100  # well after the first store
    assert got == want


@pytest.mark.parametrize("skewed", [False, True])
def test_pages_read_are_the_launchs_pages_least_recently_read_first(skewed):
    # the TLB history of a window (_History.pages_read): every page of A and B the launch's CTAs
    # read before the cycle asked for, in the order of their last reads; against a replay of every
    # (cycle, CTA, slice) read in time order, each read's pages taken from the sectors it names
    import heapq

    cfg = override(CFG4, {"tlb.page_bytes": 64 * 1024})  # A and B: 4 pages each of 64 rows of K
    schedule, history, ctas, iters = _sgemm_64_launch(cfg, skewed)
    history._trace(list(range(ctas)))
    shift = cfg.tlb.page_bytes.bit_length() - 1
    for t in (1500.0, 5100.0, max(e for _, _, e in schedule) + 1):
        events = []
        for i, (_, s, e) in enumerate(schedule):
            events += [(s + (q + 0.5) / iters * (e - s), i, q) for q in range(iters)]
        heapq.heapify(events)
        lru = {}
        while events and events[0][0] < t:
            when, i, q = heapq.heappop(events)
            for p in np.unique(history.sectors(i, q) >> shift):
                lru.pop(int(p), None)
                lru[int(p)] = when
        want = sorted(lru, key=lambda p: (lru[p], p))
        got = [int(a) >> shift for a in history.pages_read(schedule, t)]
        assert got == want
        assert len(want) > 1
    assert len(want) == 8  # after the launch: all of A and B


def test_relocated_records_are_each_rows_own_moved_by_its_ranges():
    """A window's copy of a segment (_moved_records): the chosen rows in their order, a texture or
    global load's sectors moved by the row's ranges (the addresses in [lo, hi) by its delta), a
    store's emptied where the row stores nothing, shared wavefronts taken as they are; against the
    same done row by row in plain Python."""


    from maxsim.functional.trace import Segment
    from maxsim.gpu.sampling import _moved_records
    from maxsim.timing.summaries import SectorLists

    rng = np.random.default_rng(5)
    n_rows = 6
    units = [types.SimpleNamespace(unit=u) for u in ("tex", "lds", "stg", "ldg", "alu")]
    seg = Segment(np.arange(n_rows))
    seg.pcs = [0, 1, 4, 3, 2, 0]
    plain = {}
    for pos, pc in enumerate(seg.pcs):
        unit = units[pc].unit
        if unit == "lds":
            seg.mem[pos] = rng.integers(1, 5, n_rows)
        elif unit != "alu":
            rows = [np.unique(rng.integers(0, 64, rng.integers(0, 5))) * 32 for _ in range(n_rows)]
            ends = np.cumsum([len(r) for r in rows]).astype(np.int32)
            seg.mem[pos] = SectorLists(np.concatenate(rows).astype(np.int64), ends)
        plain[pos] = seg.mem.get(pos)
    rows = [4, 1, 5, 2]
    ranges = [[(0, 512, 4096), (1024, 2048, -64)], [], [(0, 512, 32), (1024, 2048, 96)],
              [(0, 512, 0), (1024, 2048, 8192)]]
    stores = [True, False, True, False]
    out = _moved_records(seg, rows, ranges, stores, units)
    assert list(out) == [pos for pos in range(len(seg.pcs)) if pos in seg.mem]
    for pos, summ in out.items():
        unit = units[seg.pcs[pos]].unit
        for i, (r, rg, keep) in enumerate(zip(rows, ranges, stores)):
            if unit == "lds":
                assert summ[i] == plain[pos][r]
                continue
            want = [int(a) for a in plain[pos][r]]
            if unit in ("tex", "ldg"):
                moved = []
                for a in want:
                    for lo, hi, d in rg:
                        if lo <= a < hi:
                            a += d
                            break
                    moved.append(a)
                want = moved
            if unit == "stg" and not keep:
                want = []
            assert summ[i].tolist() == want, (pos, unit, i)


def test_texture_hits_of_later_waves_follow_the_full_simulation():
    """The co-resident CTAs of a later wave start as the previous ones of their slots end, a few
    hundred cycles apart, not in lockstep: sgemm_128's two CTAs on an SM, which read the same B
    panel, then find one another's data in the L1. The sampled windows start an SM's CTAs at the
    spacing of the first wave's ends; started together they read the panel in lockstep, every
    shared lookup merged (counting completed-data hits only, the quarter GPU at N = 1024: 9.5%
    against the full simulation's 20.7%; the configs now count merged lookups as hits too, as nvprof
    does, docs/memory-hierarchy.md)."""
    from maxsim.report.metrics import profiler_metrics
    rates = {}
    for method in ("full", "sampled"):
        p = predict_sgemm("sgemm_128", 1024, QUARTER, full=method == "full")
        rates[method] = profiler_metrics(p["memory"], p["seconds"], QUARTER)["tex_cache_hit_rate"]
    assert rates["full"] > 15
    assert rates["sampled"] == pytest.approx(rates["full"], abs=3)


def test_a_tail_goes_to_the_slots_that_free_first():
    """The block dispatcher hands each tail CTA to the slot that frees first; an SM's slots free
    close together, so a tail lands on both slots of the SMs that end first. The sampled prediction
    takes the order of the slots' ends from the first wave (slot j on SM j mod SMs)."""
    from maxsim.gpu.sampling import _tail_sms
    ends = [100, 500, 300, 90, 105, 510, 310, 95]  # 4 SMs x 2 slots: SM 0 and SM 3 end first
    assert _tail_sms(ends, 4, 4) == [3, 3, 0, 0]
    assert _tail_sms(ends, 8, 4) == [3, 3, 0, 0, 2, 2, 1, 1]


def test_a_sixteen_cta_tail_of_sgemm_128_matches_the_full_simulation():
    """sgemm_128 at N = 1536 on the GTX 980: 144 CTAs, four waves of 32 and a tail of 16. The full
    simulation puts the tail two to an SM on some SMs (which then take a whole CTA's time); dealt
    one per SM, the sampled prediction was 9.5% short of it."""
    error, sampled, full = _error("sgemm_128", 1536, CFG, l2_start="previous")
    assert abs(error) < 0.01


def test_dispatch_model_launch_cost_and_dispatcher_pace():
    """Hand-computed: 5 CTAs of 10 cycles on 2 slots. The first two start at 0; each later CTA
    starts ``launch`` cycles after its slot freed and ``interval`` after the CTA handed out before."""
    plain = dispatch(5, 2, lambda slot, cta: 10)
    assert [(s, e) for _, s, e in plain] == [(0, 10), (0, 10), (10, 20), (10, 20), (20, 30)]
    paced = dispatch(5, 2, lambda slot, cta: 10, launch=7, interval=3)
    # CTA 2: slot 0 freed at 10, +7 = 17; CTA 3: slot 1 freed at 10, +7 = 17, but the dispatcher
    # handed CTA 2 out at 17: 20; CTA 4: slot 0 freed at 27, +7 = 34
    assert [(j, s, e) for j, s, e in paced] == [(0, 0, 10), (1, 0, 10), (0, 17, 27), (1, 20, 30), (0, 34, 44)]


def test_dispatch_model_with_a_dispatched_first_wave():
    """Hand-computed: 5 CTAs of 10 cycles on 2 slots, first_wave "dispatched" (gpu.first_wave): CTA
    j of the first wave starts at j x interval; the later ones as before, the dispatcher next free
    after the first wave's last hand-out."""
    paced = dispatch(5, 2, lambda slot, cta: 10, interval=3, first_wave="dispatched")
    # CTA 0 at 0, CTA 1 at 3 (free from 6); CTA 2: slot 0 freed at 10; CTA 3: slot 1 freed at 13
    # (the dispatcher free from 13); CTA 4: slot 0 freed at 20
    assert [(j, s, e) for j, s, e in paced] == [(0, 0, 10), (1, 3, 13), (0, 10, 20), (1, 13, 23), (0, 20, 30)]
    launched = dispatch(5, 2, lambda slot, cta: 10, launch=7, interval=3, first_wave="dispatched")
    # CTA 2: 10 + 7 = 17 (free from 20); CTA 3: 13 + 7 = 20; CTA 4: slot 0 freed at 27, + 7 = 34
    assert [(j, s, e) for j, s, e in launched] == [(0, 0, 10), (1, 3, 13), (0, 17, 27), (1, 20, 30), (0, 34, 44)]
    # a first wave longer than the CTAs: the dispatcher's pace holds the later CTAs back
    slow = dispatch(4, 2, lambda slot, cta: 2, interval=5, first_wave="dispatched")
    assert [(j, s, e) for j, s, e in slow] == [(0, 0, 2), (1, 5, 7), (0, 10, 12), (1, 15, 17)]
    with pytest.raises(ValueError, match="first_wave 'late'"):
        dispatch(3, 2, lambda slot, cta: 10, first_wave="late")


def test_dispatch_model_frees_tied_slots_in_the_order_of_the_first_waves_ends():
    """Hand-computed: 7 CTAs of 10 cycles on 3 slots, whose first-wave CTAs ended (in the first
    wave's simulation) at 5, 3 and 4: the slots free together at 10 and take CTAs 3, 4, 5 in that
    order (slot 1, then 2, then 0); CTA 6 goes to the slot whose CTA was handed out first (slot 1).
    Without ``ends`` the lower slot goes first: CTA i on slot i mod 3."""
    sched = dispatch(7, 3, lambda slot, cta: 10, ends=[5.0, 3.0, 4.0])
    assert [j for j, _, _ in sched] == [0, 1, 2, 1, 2, 0, 1]
    assert [(s, e) for _, s, e in sched][3:] == [(10, 20), (10, 20), (10, 20), (20, 30)]
    assert [j for j, _, _ in dispatch(7, 3, lambda slot, cta: 10)] == [0, 1, 2, 0, 1, 2, 0]
    # with the dispatcher's pace the order of hand-out holds over the waves: CTA 3 at 10, 4 at 11, 5 at 12
    paced = dispatch(9, 3, lambda slot, cta: 10, interval=1, ends=[5.0, 3.0, 4.0])
    assert [(j, s) for j, s, _ in paced][3:] == [(1, 10), (2, 11), (0, 12), (1, 20), (2, 21), (0, 22)]


def test_the_start_spacing_of_an_sms_ctas_grows_with_the_waves_before_them():
    """Hand-computed, ``kloop.stagger_growth`` "waves": an SM whose first-wave CTAs ended 0, 100 and
    250 cycles after its first starts the CTAs of a window after 4 waves of its slots 0, 400 and
    1,000 cycles apart; the first wave's spacing when the CTAs cross TLB pages that leave the L2
    TLB (a page period: every crossing brings them together again), in the first two waves, and
    with "none" (shipped)."""
    from maxsim.gpu.sampling.kloop_choose import _grown
    stagger = [[0.0, 100.0, 250.0], [0.0, 30.0]]
    assert _grown(stagger, 4, None, "waves") == [[0.0, 400.0, 1000.0], [0.0, 120.0]]
    assert _grown(stagger, 4, 10.7, "waves") == stagger
    assert _grown(stagger, 1, None, "waves") == stagger
    assert _grown([], 4, None, "waves") == []
    assert _grown(stagger, 4, None, "none") == stagger


def test_the_dispatch_clock_paces_the_ctas_it_hands_out():
    from maxsim.gpu.gpu import DispatchClock
    pace = DispatchClock(5)
    # in order: at most one CTA per 5 cycles; a request stamped earlier than the last waits behind it
    assert [pace.take(t) for t in (100, 100, 103, 200, 150)] == [100, 105, 110, 200, 205]


@pytest.mark.parametrize("name", ["sgemm_64", "sgemm_128"])
def test_a_dispatched_first_wave_in_the_sampled_prediction_follows_the_full_simulation(name):
    """gpu.first_wave "dispatched" at 122 cycles per CTA (CTA r of the first wave starts 122 r
    cycles late): a launch of one wave at N = 512 (64 CTAs of sgemm_64, the last 7,686 cycles late;
    16 of sgemm_128), sampled against the full simulation, within 1%; and longer than with the
    first wave together."""
    dealt = override(CFG, {"gpu.first_wave": "dispatched", "gpu.cta_dispatch_interval": 122})
    err, sampled, full = _error(name, 512, dealt)
    assert abs(err) < 0.01
    together = predict_sgemm(name, 512, override(CFG, {"gpu.cta_dispatch_interval": 122}), full=True)
    assert full["cycles"] > together["cycles"]


@pytest.mark.parametrize("tlb_history", [True, False])
def test_steady_window_walks_each_page_it_crosses_once_for_the_gpu(monkeypatch, tlb_history):
    """sgemm_64 at N = 512, K = 512 on 4 SMs (two waves of 32 CTAs), pages of 64 KB and an L2 TLB of
    4 entries: A and B (1 MB each, K-major, 2 KB a row of K) take 16 pages each, a CTA enters a new
    page of each every 4 main-loop iterations. A window in the second wave runs its resident CTAs
    from their place d along K for W iterations: they read the tiles of iterations d ... d + W - 1
    (rows 8d ... 8(d + W) - 1). As in the full simulation past the first wave, every page was read
    before (by the first wave) and left the TLBs since: the page of the last row a CTA read before
    the window is held, each later one is walked once for the whole GPU (the L2 TLB is shared:
    the SMs that come to a page while its walk is under way wait for that walk) and missed once
    by each SM's L1 TLB. Without the TLB history (``kloop.tlb_history`` off) the TLBs know only the
    pages of what the L2 is warmed with (an L2 of 256 KB: the last 12 slices of K, pages 5-7), and
    every page the window enters is a first touch, free: no walk."""
    from maxsim.gpu.sampling import STEADY_SKIP, STEADY_ITERATIONS, _History, _steady_state
    from maxsim.gpu.sampling import settings
    from maxsim.timing.sm import residency
    from workloads.sgemm.generator import generate_kernel
    from workloads.sgemm.problem import _builder, _shift

    monkeypatch.setattr(settings, "TLB_HISTORY", tlb_history)
    cfg = override(CFG4, {"tlb.page_bytes": 64 * 1024, "tlb.l1_entries": 4, "tlb.l1_assoc": 4,
                          "tlb.l2_entries": 4, "tlb.l2_assoc": 4, "l2.size": 256 * 1024, "l2.slices": 2,
                          "dram.channels": 2})
    n = k = 512
    kernel = generate_kernel("sgemm_64")
    grid = (n // 64, n // 64)
    iters = k // 8
    resident = residency(kernel, 64, cfg)[0]
    slots = resident * cfg.gpu.sms
    assert grid[0] * grid[1] == 2 * slots
    cta = 4000.0 * iters  # cycles of a CTA in the dispatcher model
    schedule = dispatch(grid[0] * grid[1], slots, lambda j, i: cta)
    mid = cta + 0.5 * cta  # the second wave, half way: no CTA starts after it
    history = _History(kernel, grid, 64, _builder(n, n, k), _shift(n, n), cfg, 8, iters, grid[0], slots)
    assert history.page_period() == 4
    window = _steady_state(kernel, 64, grid, k, 8, _builder(n, n, k), _shift(n, n), cfg, schedule, mid,
                           resident, grid[0], None, history)
    mem = window.phase.memory
    d = iters // 2  # every resident CTA's place (the second wave started together)
    w = window.phase.ks[0] // 8  # iterations the window ran
    assert w == (STEADY_SKIP + 4 * 2 + 2 if tlb_history else STEADY_ITERATIONS)  # whole page periods
    rows_per_page = 64 * 1024 // (n * 4)
    # pages entered: from the page of the last row read before the window (8d - 1) to that of its last
    crossings = (8 * (d + w) - 1) // rows_per_page - (8 * d - 1) // rows_per_page
    # 14 iterations: rows 256 ... 367, pages 8 ... 11 after page 7; 12: rows 256 ... 351, pages 8 ... 10
    assert crossings == (4 if tlb_history else 3)
    if tlb_history:
        assert mem["tlb_l2_misses"] == 2 * crossings  # A's and B's new pages, one walk each
        assert mem["tlb_l1_misses"] == cfg.gpu.sms * 2 * crossings
        assert mem["tlb_first_touches"] == 0
    else:
        assert mem["tlb_l2_misses"] == 0 and mem["tlb_l1_misses"] == 0
