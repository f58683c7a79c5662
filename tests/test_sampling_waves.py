"""Sampling across waves (maxsim.gpu.sampling.waves): a launch of many waves of any kernel predicted
from a few chunks simulated whole, against the full simulation of every CTA; every prediction says
how it was made and how sure it is."""

import numpy as np
import pytest

from maxsim.arch.config import load_config, override
from maxsim.errors import LaunchError
from maxsim.gpu.sampling import waves
from maxsim.host import Kernel, launch
from maxsim.report.text import how_predicted

CFG = override(load_config("gm204"), {"gpu.sms": 2})  # two SMs: a launch of 24+ waves stays small
SUITE = "workloads/cuda/sampling_suite.cu"


def _stencil(h, method, w=512, cfg=CFG):
    k = Kernel.load(SUITE, cfg=cfg, kernel="stencil2d")
    a = np.random.default_rng(1).random(h * w, dtype=np.float32)
    r = launch(k, (w // 128, h), 128, params={"in": "in", "out": "out", "h": h, "w": w},
               buffers={"in": a, "out": np.zeros_like(a)}, config=cfg, timing=False, gpu_method=method)
    return r, a.reshape(h, w)


def test_chunk_starts_begin_with_the_first_wave_and_stay_inside_the_launch():
    slots = 64
    for n in (24 * slots, 100 * slots + 17, 1000 * slots):
        starts = waves.chunk_starts(n, slots)
        span = waves.CHUNK_WAVES * slots
        assert starts[0] == 0 and waves.MIN_CHUNKS <= len(starts) <= waves.CHUNKS
        assert all(b - a >= span for a, b in zip(starts, starts[1:]))  # chunks do not overlap
        assert starts[-1] + span <= n
    # the chunks always simulated are centred on equal parts of the launch after the first (5 waves
    # of 64 CTAs = 320: the parts of 100 waves after it are 320-3,360 and 3,360-6,400, centres 1,840
    # and 4,880); those simulated only when they disagree, on equal parts of what is left after them
    # (a fourth chunk: 5,040-6,400, centre 5,720), as many as fit whole (34 waves: 1,872-2,176 is
    # less than a chunk)
    assert waves.chunk_starts(100 * 64, 64, chunks=3) == [0, 1840 - 160, 4880 - 160]
    assert waves.chunk_starts(100 * 64, 64, chunks=4) == [0, 1680, 4720, 5720 - 160]
    assert waves.chunk_starts(34 * 64, 64, chunks=4) == [0, 784 - 160, 1712 - 160]


def test_later_chunks_are_simulated_only_when_the_first_ones_disagree():
    # two chunks in mid-launch whose CTAs all do the same work: a CTA's modelled duration is the mean
    # of both chunks' (105 cycles); measured 100 and 110, their ratios 100/105 and 110/105: two
    # standard errors of the mean of two ratios is their difference, 10/105
    def chunk(first, d):
        return waves.Chunk(first=first, durations=tuple((first + j, 40, d) for j in range(4)), early=(),
                           cycles=1.0, memory={})
    first = chunk(0, 300.0)  # (the launch's start: not part of the spread)
    assert waves.chunk_spread([first, chunk(100, 100.0), chunk(200, 110.0)]) == pytest.approx(10 / 105)
    assert waves.more_chunks([first, chunk(100, 100.0), chunk(200, 110.0)])  # 9.5% > the 2% agreement
    assert waves.chunk_spread([first, chunk(100, 100.0), chunk(200, 101.0)]) == pytest.approx(1 / 100.5)
    assert not waves.more_chunks([first, chunk(100, 100.0), chunk(200, 101.0)])  # 1% < 2%
    assert waves.chunk_spread([first, chunk(100, 100.0)]) == float("inf")  # one chunk: no spread


def test_the_interval_holds_the_methods_measured_error_and_the_launchs_start_for_the_same_work():
    # 400 CTAs of 40 warp instructions on 4 slots; the chunks in mid-launch measured every CTA at 100
    # cycles (no spread): the interval is the prediction +-least_half_width (the method's measured
    # error on the suite, methods.toml)
    instr = np.full(400, 40)

    def chunk(first, d, w=40):
        return waves.Chunk(first=first, durations=tuple((first + j, w, d) for j in range(4)), early=(),
                           cycles=1.0, memory={})
    later = [chunk(100, 100.0), chunk(200, 100.0)]
    p = waves.extrapolate(instr, [chunk(0, 100.0)] + later, 4, CFG)
    assert p.interval == pytest.approx((p.cycles * (1 - waves.LEAST_HALF_WIDTH), p.cycles * (1 + waves.LEAST_HALF_WIDTH)))
    # the launch's first chunk measured the same work at 150 cycles: the interval reaches the launch
    # with every later CTA at 1.5 times its modelled 100 cycles (396 CTAs of 150 on 4 slots: at least
    # 99 x 150 cycles)
    p = waves.extrapolate(instr, [chunk(0, 150.0)] + later, 4, CFG)
    assert p.interval[1] >= 99 * 150
    # ... but CTAs of other work (80 warp instructions, none measured in mid-launch) do not widen it:
    # their modelled durations come from the line through other CTAs' samples
    instr[:4] = 80
    p = waves.extrapolate(instr, [chunk(0, 300.0, w=80)] + later, 4, CFG)
    assert p.interval == pytest.approx((p.cycles * (1 - waves.LEAST_HALF_WIDTH), p.cycles * (1 + waves.LEAST_HALF_WIDTH)))


def test_a_ctas_duration_is_its_groups_measured_mean_or_the_line_through_the_samples():
    # CTAs of 10, 20 and 40 warp instructions; the chunk measured CTAs of 10 (100 and 110 cycles)
    # and of 40 (400): the group of 20 has no sample and takes the line through the three samples
    instr = np.array([10, 20, 40, 10, 20, 40])
    chunk = waves.Chunk(first=3, durations=((3, 10, 100.0), (5, 40, 400.0), (0, 10, 110.0)), early=(),
                        cycles=500.0, memory={})
    d = waves.durations(instr, [chunk])
    slope, icpt = np.polyfit([10, 40, 10], [100.0, 400.0, 110.0], 1)
    assert d[0] == d[3] == pytest.approx(105.0)
    assert d[2] == d[5] == pytest.approx(400.0)
    assert d[1] == d[4] == pytest.approx(icpt + 20 * slope)


def test_the_launchs_memory_counters_are_its_first_chunk_and_the_later_chunks_measured_spans():
    # the first chunk (the launch's start, 1,000 warp instructions) counts whole; the rest of a
    # launch of 10,000 at the later chunks' counts per warp instruction over their measured spans
    # (30 hits, 10 misses over 100 + 300 hits, 100 misses over 1,000: 0.3 and 0.1 per instruction),
    # not their whole runs' (which include a chunk's own start and end)
    first = waves.Chunk(first=0, durations=(), early=(), cycles=1.0, memory={"hits": 400.0, "misses": 600.0},
                        instructions=1000)
    later = [waves.Chunk(first=f, durations=(), early=(), cycles=1.0, memory={"hits": 1.0, "misses": 99.0},
                         instructions=2000, steady={"hits": h, "misses": m}, steady_instructions=n)
             for f, h, m, n in ((5000, 30.0, 10.0, 100.0), (9000, 300.0, 100.0, 1000.0))]
    got = waves._steady_counters([first] + later, 10_000)
    assert got == {"hits": pytest.approx(400 + 0.3 * 9000), "misses": pytest.approx(600 + 0.1 * 9000)}
    assert waves._steady_counters([first], 10_000) == {}  # no later chunk measured a span: none
    # the span: the whole progress windows between two cycles (reports at the end of each window)
    counts = waves._Counts()
    W = waves.PROGRESS_CYCLES
    counts.rows = [{"hits": 10.0 * k * k, "issued": 100.0 * k} for k in range(1, 11)]  # at cycles W .. 10 W
    d, n = counts.between(2.5 * W, 7.9 * W)  # windows ending at 3 W .. 7 W
    assert d == {"hits": 10.0 * (49 - 9)} and n == 400.0
    assert counts.between(2.5 * W, 4.5 * W) is None  # fewer than two windows


def test_the_compiled_layout_ends_where_the_dispatcher_model_does():
    from maxsim.gpu.sampling.dispatcher import dispatch, makespan
    rng = np.random.default_rng(3)
    for n, slots in ((5, 8), (1000, 64), (20000, 256)):
        d = rng.random(n) * 1000 + 100
        want = max(e for _, _, e in dispatch(n, slots, lambda j, i: d[i], launch=700, interval=1))
        assert makespan(d, slots, launch=700, interval=1) == want
        for first_wave in ("together", "dispatched"):  # (gpu.first_wave) at a slow pace
            want = max(e for _, _, e in dispatch(n, slots, lambda j, i: d[i], launch=700, interval=97,
                                                 first_wave=first_wave))
            assert makespan(d, slots, launch=700, interval=97, first_wave=first_wave) == want


def test_a_timing_only_prediction_counts_the_ctas_not_run_from_a_stratified_sample():
    slots, n = 256, 300_000
    look = 1000
    run = np.array(waves.needed(n, slots, look, seed=1))
    span = waves.CHUNK_WAVES * slots
    for s in waves.chunk_starts(n, slots):  # every chunk and the CTAs before it run
        assert np.isin(np.arange(max(0, s - look), s + span), run).all()
    assert len(run) < 0.2 * n
    i = np.arange(n)
    # the standard error is small for work that changes along the grid, larger for work that changes
    # from one CTA to the next (a sample of 2,560 of 300,000 CTAs, an eighth of them 16x longer: ~3.4%)
    for name, instr, bound in (("divergent", np.where(i % 8 == 0, 1600, 100), 0.05),
                               ("triangular", 50 + i * 1000 // n, 0.001),
                               ("boundary", np.where((i % 1024 == 0) | (i % 1024 == 1023), 20, 300), 0.01)):
        partial = np.full(n, -1)
        partial[run] = instr[run]
        filled, total, se = waves.estimated(partial, slots)
        assert abs(total - instr.sum()) <= 3 * se + 1e-9 * instr.sum(), name
        assert se < bound * instr.sum(), name
        assert (filled[run] == instr[run]).all() and set(np.unique(filled)) <= set(np.unique(instr)), name


def test_a_timing_only_launch_runs_a_share_of_the_ctas_and_predicts_as_the_whole_run():
    h, w = 8192, 512  # 32,768 CTAs: 1,024 waves on two SMs
    k = Kernel.load(SUITE, cfg=CFG, kernel="stencil2d")
    a = np.random.default_rng(1).random(h * w, dtype=np.float32)
    out = {}
    for only in (False, True):
        out[only] = launch(k, (w // 128, h), 128, params={"in": "in", "out": "out", "h": h, "w": w},
                           buffers={"in": a, "out": np.zeros_like(a)}, config=CFG, timing=False, timing_only=only)
    whole, part = out[False], out[True]
    p, q = whole.prediction, part.prediction
    assert q.method == "sampled across waves"
    assert p.details["ctas_run"] == h * w // 128 and q.details["ctas_run"] < 0.5 * h * w // 128
    counted, se = q.details["warp_instructions"], q.details["warp_instructions_standard_error"]
    assert abs(counted - whole.result.warp_instructions) <= 3 * se + 1
    assert q.cycles == pytest.approx(p.cycles, rel=0.01)
    assert q.interval[0] <= q.cycles <= q.interval[1]
    f = part.fields()
    assert f["warp_instructions_estimated"] and f["warp_instructions"] == counted and f["gpu_ctas_run"] < h * w // 128
    with pytest.raises(LaunchError, match="timing-only"):
        part.read("out")


def test_a_launch_of_many_waves_is_sampled_and_within_2_percent_of_the_full_simulation():
    # 2 SMs x 16 CTAs of 128 threads: 1,024 rows of 4 CTAs are 128 waves
    sampled, a = _stencil(1024, "auto")
    full, _ = _stencil(1024, "full")
    p, f = sampled.prediction, full.prediction
    assert p.method == "sampled across waves" and f.method == "full"
    assert p.simulated_share < 0.2 and f.simulated_share == 1.0
    assert p.cycles == pytest.approx(f.cycles, rel=0.02)
    assert p.interval[0] <= p.cycles <= p.interval[1]
    fs, ff = sampled.fields(), full.fields()
    assert abs(fs["gpu_l2_hit_rate"] - ff["gpu_l2_hit_rate"]) < 0.02
    # the functional results stay whole: every output computed
    out = sampled.read("out").reshape(a.shape)
    ref = 0.5 * a[1:-1, 1:-1] + 0.125 * (a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1] + a[2:, 1:-1])
    np.testing.assert_allclose(out[1:-1, 1:-1], ref, rtol=1e-5)
    assert np.array_equal(out[0], a[0]) and np.array_equal(out[-1], a[-1])
    line = how_predicted(fs)
    assert line.startswith("how predicted: sampled across waves") and "% of the work simulated" in line
    assert fs["gpu_cycles_interval"][0] <= fs["cycles"] <= fs["gpu_cycles_interval"][1]
    assert how_predicted(ff) == "how predicted: full simulation (every CTA on every SM, one shared L2 and DRAM)"


def test_a_short_launch_is_simulated_whole_and_the_method_is_checked():
    r, _ = _stencil(64, "auto")  # 8 waves
    assert r.prediction.method == "full" and r.fields()["gpu_simulated_share"] == 1.0
    with pytest.raises(LaunchError, match="gpu_method 'sometimes'"):
        _stencil(64, "sometimes")


def test_a_launch_repeated_with_the_same_shape_reuses_the_figures_once_they_repeat():
    from maxsim.gpu.sampling import launches
    launches.forget()
    k = Kernel.load(SUITE, cfg=CFG, kernel="heat_step")
    n = 64 * 128  # 64 CTAs: 2 waves on two SMs
    rng = np.random.default_rng(3)
    u = rng.random(n, dtype=np.float32)
    ref = u.astype(np.float64)
    methods, cycles = [], []
    for step in range(launches.REPEATS + 2):
        r = launch(k, n // 128, 128, params={"in": "in", "out": "out", "n": n, "alpha": 0.25},
                   buffers={"in": u, "out": np.zeros_like(u)}, config=CFG, timing=False)
        methods.append(r.prediction.method)
        cycles.append(r.prediction.cycles)
        u = r.read("out")  # the next step reads this one's output: the functional run went on
        nxt = ref.copy()
        nxt[1:-1] = ref[1:-1] + 0.25 * (ref[:-2] - 2 * ref[1:-1] + ref[2:])
        ref = nxt
        np.testing.assert_allclose(u, ref, rtol=1e-4, atol=1e-5)
    assert methods[:launches.REPEATS] == ["full"] * launches.REPEATS
    assert methods[launches.REPEATS:] == ["reused across launches"] * 2
    first = cycles[:launches.REPEATS]
    assert max(first) - min(first) <= launches.AGREE * np.mean(first)
    assert cycles[-1] == pytest.approx(np.mean(first))
    assert r.prediction.simulated_share == 0.0 and r.prediction.interval == (min(first), max(first))
    # "full" simulates whatever the launches before did
    again = launch(k, n // 128, 128, params={"in": "in", "out": "out", "n": n, "alpha": 0.25},
                   buffers={"in": u, "out": np.zeros_like(u)}, config=CFG, timing=False, gpu_method="full")
    assert again.prediction.method == "full"
    launches.forget()


_WALL = ("sim_seconds", "functional_seconds", "warp_instructions_per_second")


def _timed_figures(r):
    return {k: v for k, v in r.timing.items() if not any(w in k for w in _WALL)}


def test_a_timed_sm_with_the_same_inputs_launch_after_launch_is_reused_without_a_trace():
    from maxsim.gpu.sampling import launches
    launches.forget()
    k = Kernel.load(SUITE, cfg=CFG, kernel="heat_step")
    n = 64 * 128
    u = np.random.default_rng(4).random(n, dtype=np.float32)
    ref = u.astype(np.float64)
    runs = []
    for step in range(2 * launches.REPEATS + 2):
        r = launch(k, n // 128, 128, params={"in": "in", "out": "out", "n": n, "alpha": 0.25},
                   buffers={"in": u, "out": np.zeros_like(u)}, config=CFG)
        runs.append(r)
        u = r.read("out")  # computed every step, whatever the figures
        ref[1:-1] = ref[1:-1] + 0.25 * (ref[:-2] - 2 * ref[1:-1] + ref[2:])
        np.testing.assert_allclose(u, ref, rtol=1e-4, atol=1e-5)
    methods = [r.prediction.method for r in runs]
    assert methods == ["full"] * launches.REPEATS + ["reused across launches"] * (launches.REPEATS + 2)
    # the prediction's launches record traces; then the timed SM is timed from its CTAs' traces
    # (the same run each time) until REPEATS launches in a row timed it; the later ones record none
    traced = [r.result.trace is not None for r in runs]
    assert traced == [True] * (2 * launches.REPEATS) + [False, False]
    late, timed = runs[-1], runs[2 * launches.REPEATS - 1]
    assert late.sm.run_key is timed.sm.run_key and late.sm.stats is not timed.sm.stats
    assert _timed_figures(late) == _timed_figures(timed) and late.sm_cycles > 0
    assert late.sm_ctas == timed.sm_ctas
    # a fresh simulation of the same launch (no figures kept) gives the same timed SM's figures
    launches.forget()
    from maxsim.timing import run
    run._RUNS.clear()
    r = launch(k, n // 128, 128, params={"in": "in", "out": "out", "n": n, "alpha": 0.25},
               buffers={"in": runs[-1].bound.buffers["in"][1].data, "out": np.zeros_like(u)}, config=CFG,
               gpu_method="full", predict=False)
    assert _timed_figures(r) == _timed_figures(late)
    launches.forget()


def _histogram(k, data, cfg=CFG, **kw):
    r = launch(k, 4, 128, params={"data": "data", "bins": "bins", "n": data.size},
               buffers={"data": data, "bins": np.zeros(64, np.uint32)}, config=cfg, **kw)
    runs = 2 if kw.get("l2_start") == "previous" else 1  # (the launch before is run too)
    np.testing.assert_array_equal(r.read("bins"), runs * np.bincount(data % 64, minlength=64))
    return r


def test_a_launch_whose_arguments_work_or_config_changed_is_simulated_and_not_reused():
    from maxsim.gpu.sampling import launches
    launches.forget()
    k = Kernel.load("workloads/cuda/histogram.cu", cfg=CFG)
    rng = np.random.default_rng(6)
    spread = rng.integers(0, 256, 4096).astype(np.uint8)  # every bin: 64 global atomics a CTA
    for _ in range(2 * launches.REPEATS + 1):
        r = _histogram(k, spread)
    assert r.prediction.method == "reused across launches" and r.result.trace is None
    # the same arguments, other data: the same control flow is reused
    other = rng.integers(0, 256, 4096).astype(np.uint8)
    assert _histogram(k, other).prediction.method == "reused across launches"
    # data in one bin: one global atomic a CTA, the work is another (seen in the functional run):
    # simulated, with the figures of a fresh run, and the shape's figures forgotten
    one = np.full(4096, 7, np.uint8)
    r = _histogram(k, one)
    assert r.prediction.method == "full" and r.result.trace is not None
    fresh = _histogram(k, one, gpu_method="full")
    assert r.prediction.cycles == fresh.prediction.cycles
    assert _timed_figures(r) == _timed_figures(fresh)
    assert r.result.warp_instructions < _histogram(k, spread, gpu_method="full").result.warp_instructions
    # that launch was the first of its work: two more, and the next reuses their figures
    assert [_histogram(k, one).prediction.method for _ in range(launches.REPEATS)] == \
        ["full"] * (launches.REPEATS - 1) + ["reused across launches"]
    launches.forget()
    for _ in range(launches.REPEATS):
        _histogram(k, spread)
    assert _histogram(k, spread).prediction.method == "reused across launches"
    # another argument (n: fewer elements, the same grid) or another config: another shape
    r = _histogram(k, spread[:4000])
    assert r.prediction.method == "full"
    assert _histogram(k, spread, cfg=override(CFG, {"gpu.sms": 3})).prediction.method == "full"
    assert _histogram(k, spread, l2_start="previous").prediction.method == "full"
    launches.forget()


def test_a_launch_of_one_wave_of_long_ctas_is_sampled_in_time():
    # 32 CTAs of 128 threads on two SMs (one wave), each thread 3,000 iterations of a column-order
    # matrix-vector product: 2.3 M warp instructions; "auto" (not timed on SM 0 of the run) watches
    # the rates and stops once they are stable and checked
    k = Kernel.load(SUITE, cfg=CFG, kernel="matvec_cols")
    rows, cols = 2 * 16 * 128, 3000
    rng = np.random.default_rng(2)
    a, x = rng.random(rows * cols, dtype=np.float32), rng.random(cols, dtype=np.float32)
    out = {}
    for method in ("auto", "full"):
        out[method] = launch(k, rows // 128, 128, params={"a": "a", "x": "x", "y": "y", "rows": rows, "cols": cols},
                             buffers={"a": a, "x": x, "y": np.zeros(rows, np.float32)}, config=CFG, timing=False,
                             gpu_method=method)
    p, f = out["auto"].prediction, out["full"].prediction
    assert p.method == "sampled in time" and f.method == "full"
    assert 0 < p.simulated_share < 1
    assert p.details["warp_instructions"] == out["full"].result.warp_instructions
    assert p.details["stopped_at_cycle"] < p.interval[0] <= p.cycles <= p.interval[1]
    # measured: +2.95% (the launch issues 3-10% faster in its second half than in its first
    # windows: a drift too slow for the stop rule to see)
    assert p.cycles == pytest.approx(f.cycles, rel=0.04)
    for r in out.values():  # the functional results stay whole
        np.testing.assert_allclose(r.read("y"), a.reshape(cols, rows).T.astype(np.float64) @ x, rtol=1e-4)


class _Issuing:
    """An SM that has issued ``rate(window)`` warp instructions a window (for :class:`intime.Watch`)."""

    def __init__(self):
        self.done = 0.0

    def issued(self):
        return self.done


def _watch(rates):
    """The window at which a Watch stops a run issuing ``rates`` (per window), or None."""
    from types import SimpleNamespace

    from maxsim.gpu.sampling import intime
    sm = _Issuing()
    ms = SimpleNamespace(l2_server=SimpleNamespace(next_free=0.0), dram_server=SimpleNamespace(next_free=0.0))
    w = intime.Watch()
    w.start([sm], ms)
    for n, r in enumerate(rates, 1):
        sm.done += r
        try:
            w(sm.done)
        except intime.Stable:
            return n, w
    return None, w


def test_the_in_time_watch_stops_on_a_checked_rate_and_not_on_a_pace_that_changes():
    from maxsim.gpu.sampling import intime
    steady = [1000.0] * 400
    n, w = _watch(steady)
    assert n is not None and w.stop[0] == n
    first = intime.MIN_WINDOWS  # stable from the first look, checked over CHECK x as many windows again
    assert n == first + max(1, int(intime.CHECK * first))
    # the same pace up to the first look, then 20% faster: the check sees the change, and the
    # run goes on until the new pace is stable and checked in its turn
    changed = steady[:first] + [1200.0] * 384
    m, w = _watch(changed)
    assert m is not None and m > n
    a = w.stop[1]
    assert a >= first  # the blocks it extrapolates from are all of the new pace
    # a pace that keeps changing (a ramp of 1% a window) never stops the run; one that swings 5%
    # from window to window does, once the blocks hold enough windows to average the swings out
    assert _watch([1000.0 * 1.01 ** i for i in range(400)])[0] is None
    noisy, w = _watch([1000.0 + (50 if i % 2 else -50) for i in range(400)])
    assert noisy is not None and noisy > n


def test_batches_whose_traces_no_one_reads_run_unrecorded_with_the_same_prediction(monkeypatch):
    # 64 waves on two SMs: the batches of CTAs outside the chunks and their histories run without
    # recording their traces (their warps counted instead); the prediction is the same as with every
    # batch recorded
    from maxsim.functional.launch import LaunchStream
    answers = []

    def counted(self, want):  # the stream's record(batch), its answers noted
        self._record = lambda batch: answers.append(want(batch)) or answers[-1]
    monkeypatch.setattr(LaunchStream, "record", property(lambda self: getattr(self, "_record", None), counted),
                        raising=False)
    r, _ = _stencil(2048, "auto")
    assert False in answers and True in answers  # some batches went unrecorded, some not
    monkeypatch.setattr(LaunchStream, "record", property(lambda self: None, lambda self, want: None))
    whole, _ = _stencil(2048, "auto")
    assert r.prediction.method == whole.prediction.method == "sampled across waves"
    assert r.prediction.cycles == whole.prediction.cycles and r.prediction.memory == whole.prediction.memory
    assert r.result.warp_instructions == whole.result.warp_instructions


@pytest.mark.parametrize("agreement, simulated", [(1.0, 3), (0.0, 4)])
def test_a_fourth_chunk_is_simulated_only_when_the_first_ones_disagree(monkeypatch, agreement, simulated):
    # a 2-D stencil of 128 waves on two SMs: its two chunks in mid-launch agree within 100% (the
    # fourth is left out) and never within 0% (the fourth is simulated, where chunk_starts put it)
    monkeypatch.setattr(waves, "AGREEMENT", agreement)
    r, _ = _stencil(1024, "auto")
    p = r.prediction
    slots = 2 * 16
    starts = waves.chunk_starts(1024 * 4, slots)
    assert len(starts) == 4
    assert [c["first_cta"] for c in p.details["chunks"]] == starts[:simulated]
    assert p.simulated_share == pytest.approx(simulated * waves.CHUNK_WAVES * slots / (1024 * 4), rel=0.05)


def test_for_timing_only_a_fourth_chunk_not_simulated_is_not_run(monkeypatch):
    # the 2-D stencil of 1,024 waves on two SMs for timing only, its chunks agreeing (within 100%):
    # the fourth chunk is not simulated, and its CTAs and those of its history (from the third
    # chunk's end to the fourth's) are not run but the CTAs counted for the CTAs not run, and those
    # of the batch that ran the third chunk's last CTA (a batch of the functional run: 512 of the CTAs
    # run, of 128 threads)
    from maxsim.functional.launch import BATCH_LANES
    monkeypatch.setattr(waves, "AGREEMENT", 1.0)
    h, w = 8192, 512
    k = Kernel.load(SUITE, cfg=CFG, kernel="stencil2d")
    a = np.random.default_rng(1).random(h * w, dtype=np.float32)
    r = launch(k, (w // 128, h), 128, params={"in": "in", "out": "out", "h": h, "w": w},
               buffers={"in": a, "out": np.zeros_like(a)}, config=CFG, timing=False, timing_only=True)
    n, slots, span = h * 4, 2 * 16, waves.CHUNK_WAVES * 2 * 16
    starts = waves.chunk_starts(n, slots)
    ran = {y * 4 + x for x, y in r.result.ctas}
    assert len(r.prediction.details["chunks"]) == 3 and r.prediction.details["ctas_run"] == len(ran)
    counted = set(waves.counted_sample(n, slots).tolist())
    order = [y * 4 + x for x, y in r.result.ctas]  # (the CTAs in the order they ran)
    batch = BATCH_LANES // 128
    end = (order.index(starts[2] + span - 1) // batch + 1) * batch  # the end of that batch
    assert set(order[end:]) & set(range(starts[2] + span, starts[3] + span)) <= counted
    fourth = set(range(starts[3], starts[3] + span))
    assert fourth & ran == fourth & counted and len(fourth & counted) < span / 2
