"""A whole-grid run and prediction hold what is resident, not the grid: the functional run is
streamed to the whole-GPU simulation a batch of CTAs at a time, and a CTA's traces are let go once
its SM has loaded them. The figures must be those of the run that holds every trace."""

import importlib
import weakref

import numpy as np
import pytest

from maxsim.arch.config import load_config, override
from maxsim.functional.trace import TraceRecorder, WarpTrace
from maxsim.gpu.gpu import simulate_gpu, trace_ctas
from maxsim.host import launch
from maxsim.timing.sm import residency

functional_launch = importlib.import_module("maxsim.functional.launch")  # (the package's launch is a function)
gpu_module = importlib.import_module("maxsim.gpu.gpu")
KERNEL = "workloads/kernels/conv1d8.sass"
CFG = override(load_config("gm204"), {"gpu.sms": 2})


def _conv(grid, taps, seed=3):
    n = grid * 64
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n + taps - 1).astype(np.float32)
    w = rng.standard_normal((taps, 8)).astype(np.float32)
    return dict(params={"x": "x", "w": "w", "out": "out", "n": n, "taps": taps},
                buffers={"x": x, "w": w, "out": np.zeros((8, n), np.float32)}), x, w


def _reference(x, w, n):
    """out[c][i] = sum over t of w[t][c] * x[i + t], each step rounded to fp32 as one FFMA
    (the product and sum in float64 are exact enough to round once)."""
    out = np.zeros((8, n), np.float32)
    for t in range(w.shape[0]):
        out = (w[t][:, None].astype(np.float64) * x[t:t + n][None, :] + out).astype(np.float32)
    return out


def _figures(timing):
    return {k: v for k, v in timing.items()
            if k not in ("sim_seconds", "functional_seconds", "warp_instructions_per_second")}


def _held(block, cfg, grid):
    """The launch of ``_conv`` through the trace that holds every CTA (trace_ctas, then timed)."""
    from maxsim.host.launch import predict_gpu
    arguments, _, _ = _conv(grid, 6)
    r = launch(KERNEL, grid=grid, block=block, config=cfg, timing=True, predict=False, trace=True, **arguments)
    return r, predict_gpu(r.kernel.code, r.grid, r.block, cfg, traced=r.result)


@pytest.mark.parametrize("batch_lanes", [None, 64 * 3])
def test_streamed_prediction_is_the_held_one(monkeypatch, batch_lanes):
    # 150 CTAs on 2 SMs (32 resident each): 2.3 waves; in one functional batch, or in 50 of 3 CTAs
    grid = 150
    held, held_prediction = _held(64, CFG, grid)
    if batch_lanes is not None:
        monkeypatch.setattr(functional_launch, "BATCH_LANES", batch_lanes)
    arguments, x, w = _conv(grid, 6)
    r = launch(KERNEL, grid=grid, block=64, config=CFG, timing=True, predict=True, **arguments)
    assert r.prediction.method == "full" and held_prediction.method == "full"
    assert r.prediction.cycles == held_prediction.cycles
    assert r.prediction.seconds == held_prediction.seconds
    assert r.prediction.memory == held_prediction.memory
    # the timed SM's figures, from the kept copies of its CTAs (but the simulator's own speed)
    assert _figures(r.timing) == _figures(held.timing)
    assert r.fields()["warp_instructions"] == held.fields()["warp_instructions"]
    np.testing.assert_array_equal(r.read("out"), held.read("out"))
    np.testing.assert_array_equal(r.read("out"), _reference(x, w, grid * 64))
    # the streamed result keeps the traces of the timed SM's CTAs only
    assert sorted(r.result.trace) == list(range(2 * r.sm_ctas))


def test_simulate_gpu_streams_by_default_with_the_held_figures(monkeypatch):
    arguments, _, _ = _conv(90, 5)
    from maxsim.host.args import bind
    from maxsim.host.kernel import Kernel
    k = Kernel.load(KERNEL, cfg=CFG)

    def args():
        b = bind(k, arguments["params"], dict(arguments["buffers"]), None, None)
        return b.launch_params, b.memory, b.textures
    held = simulate_gpu(k.code, (90, 1), 64, *args(), cfg=CFG,
                        traced=trace_ctas(k.code, (90, 1), 64, *args(), CFG))
    monkeypatch.setattr(functional_launch, "BATCH_LANES", 64 * 4)
    streamed = simulate_gpu(k.code, (90, 1), 64, *args(), cfg=CFG)
    assert streamed.cycles == held.cycles and streamed.stats.warp_instructions == held.stats.warp_instructions
    assert streamed.l2_hit_rate == held.l2_hit_rate and streamed.dram_bytes == held.dram_bytes
    assert streamed.launch.trace is None and streamed.waves == held.waves


def test_live_traces_are_bounded_by_the_resident_ctas_and_a_batch(monkeypatch):
    """Counted, not measured: at every CTA the block dispatcher hands out, the warp traces still
    alive are at most those of the CTAs resident on the SMs, of one functional batch and of the
    timed SM's kept copies (in fact those of the batch only), however long the grid."""
    batch = 5
    monkeypatch.setattr(functional_launch, "BATCH_LANES", 64 * batch)
    alive = weakref.WeakSet()
    made = [0]

    class Counted(WarpTrace):
        __slots__ = ("__weakref__",)

        def __init__(self, w):
            super().__init__(w)
            alive.add(self)
            made[0] += 1
    monkeypatch.setattr(TraceRecorder, "trace_type", Counted)
    peak = [0]
    popleft = gpu_module.CtaQueue.popleft

    def counting(self):
        item = popleft(self)
        peak[0] = max(peak[0], len(alive))
        return item
    monkeypatch.setattr(gpu_module.CtaQueue, "popleft", counting)
    grid = 400
    arguments, _, _ = _conv(grid, 4)
    r = launch(KERNEL, grid=grid, block=64, config=CFG, timing=True, predict=True, **arguments)
    resident = residency(r.kernel.code, 64, CFG)[0]
    wpc = 2
    assert made[0] >= grid * wpc  # every CTA was traced (the timed SM's copies too)
    bound = (CFG.gpu.sms * resident + batch + r.sm_ctas) * wpc
    assert 0 < peak[0] <= bound < grid * wpc
    # tighter: an SM lets go of a CTA's traces once it has loaded them into its trace buffers, so
    # the trace objects alive are those of the batch being handed out
    assert peak[0] <= batch * wpc


def test_a_timed_launch_keeps_the_timed_ctas_traces_only(monkeypatch):
    monkeypatch.setattr(functional_launch, "BATCH_LANES", 64 * 5)
    arguments, _, _ = _conv(70, 5)
    held = launch(KERNEL, grid=70, block=64, config=CFG, timing=True, predict=False, trace=True, **arguments)
    arguments, _, _ = _conv(70, 5)
    r = launch(KERNEL, grid=70, block=64, config=CFG, timing=True, predict=False, **arguments)
    assert _figures(r.timing) == _figures(held.timing) and r.sm_ctas == held.sm_ctas == 32
    assert sorted(r.result.trace) == list(range(64)) and len(held.result.trace) == 140
    np.testing.assert_array_equal(r.read("out"), held.read("out"))
    # and with the CTAs chosen, more than a batch of them timed
    arguments, _, _ = _conv(70, 5)
    picked = [(i, 0) for i in range(69, 40, -1)]
    a = launch(KERNEL, grid=70, block=64, config=CFG, ctas=picked, sm_ctas=12, timing=True, predict=False,
               **arguments)
    arguments, _, _ = _conv(70, 5)
    b = launch(KERNEL, grid=70, block=64, config=CFG, ctas=picked, sm_ctas=12, timing=True, predict=False,
               trace=True, **arguments)
    assert _figures(a.timing) == _figures(b.timing) and len(a.result.trace) == 24


def test_a_fault_in_a_later_batch_is_the_same_one_line_error(monkeypatch):
    """The functional run of a later batch happens during the GPU's simulation: its error is the
    one the launch gives when run whole."""
    import maxsim
    from maxsim.errors import SimulationError
    monkeypatch.setattr(functional_launch, "BATCH_LANES", 32 * 2)
    vecadd = "workloads/kernels/vecadd.sass"
    n = 300
    messages = []
    for predict in (False, True):
        bufs = {"a": np.zeros(n, np.float32), "b": np.zeros(n - 10, np.float32), "c": np.zeros(n, np.float32)}
        with pytest.raises(SimulationError) as e:
            maxsim.launch(vecadd, 10, 32, params={"a": "a", "b": "b", "c": "c", "n": n}, buffers=bufs, config=CFG,
                          timing=True, predict=predict)
        messages.append(str(e.value))
    assert messages[0] == messages[1] and "\n" not in messages[1]
    assert "out-of-bounds global access" in messages[1] and "(CTA (9,0), warp 0, lane 2)" in messages[1]


def _conv_args(k, arguments):
    from maxsim.host.args import bind
    b = bind(k, arguments["params"], dict(arguments["buffers"]), None, None)
    return b.launch_params, b.memory, b.textures


def test_a_batch_run_in_windows_records_the_whole_batch_traces():
    """Joined window after window, the traces of a batch that pauses are those of the whole run,
    position for position and record for record, and the outputs are the same."""
    from maxsim.host.kernel import Kernel
    from maxsim.timing.summaries import make_summariser
    k = Kernel.load(KERNEL, cfg=CFG)
    arguments, _, _ = _conv(12, 40)
    rec = TraceRecorder(make_summariser(CFG))
    params, memory, textures = _conv_args(k, arguments)
    whole = functional_launch.launch(k.code, (12, 1), 64, params, memory, textures, recorder=rec).trace
    params, memory, textures = _conv_args(k, arguments)
    stream = functional_launch.LaunchStream(k.code, (12, 1), 64, params, memory, textures,
                                            recorder=TraceRecorder(make_summariser(CFG)))
    joined, closed, windows = {}, set(), [0]

    def sink(traces, gone, done):
        windows[0] += 1
        for wid, tr in traces.items():
            assert wid not in closed  # an exited warp records nothing more
            joined[wid].parts.extend(tr.parts)
        closed.update(joined if done else gone)
    stream.set_window(40, sink)
    batch, first = next(stream)
    assert len(batch) == 12 and all(tr.open for tr in first.values())
    joined.update(first)
    with pytest.raises(StopIteration):
        next(stream)  # no batch after it: the batch goes on as windows are asked for
    assert stream.running
    while stream.running:
        sink(*stream.more())
    assert windows[0] >= 8 and closed == set(joined)
    assert sorted(joined) == sorted(whole)
    for wid, tr in whole.items():
        assert joined[wid].pcs() == tr.pcs()
        a, b = joined[wid].records(), tr.records()
        assert sorted(a) == sorted(b)
        for pos in a:
            np.testing.assert_array_equal(np.asarray(a[pos]), np.asarray(b[pos]))
    out = stream.finish()
    assert out.warp_instructions == sum(len(tr) for tr in whole.values())


def test_a_one_wave_launch_of_long_ctas_streams_its_traces_in_windows(monkeypatch):
    """A one-wave launch whose CTAs run long: the SMs hold a few windows of each warp's trace, not
    the whole; every figure is that of the run holding the whole traces."""
    from maxsim.host.kernel import Kernel
    k = Kernel.load(KERNEL, cfg=CFG)
    # (a few CTA slots left empty: the block dispatcher asks the stream for CTAs it does not have)
    grid = CFG.gpu.sms * residency(k.code, 64, CFG)[0] - 3
    arguments, _, _ = _conv(grid, 120)
    runs = {}
    windows = [0]
    take = gpu_module.TraceRouter.take

    def counted(self, *a):
        windows[0] += 1
        return take(self, *a)
    monkeypatch.setattr(gpu_module.TraceRouter, "take", counted)
    monkeypatch.setattr(gpu_module, "STREAM_WINDOW", 64)
    for on in (False, True):
        monkeypatch.setattr(gpu_module, "stream_windows", on)
        runs[on] = simulate_gpu(k.code, (grid, 1), 64, *_conv_args(k, arguments), cfg=CFG, timed=("warn",))
    held, streamed = runs[False], runs[True]
    assert windows[0] >= 20
    assert streamed.cycles == held.cycles and streamed.stats.warp_instructions == held.stats.warp_instructions
    assert streamed.l2_hit_rate == held.l2_hit_rate and streamed.dram_bytes == held.dram_bytes
    assert [sm.now for sm in streamed.sms] == [sm.now for sm in held.sms]
    assert streamed.timed_sm.stats.stall_reasons == held.timed_sm.stats.stall_reasons
    assert streamed.timed_sm.loop_cycles_per_iteration() == held.timed_sm.loop_cycles_per_iteration()
    for a, b in zip(streamed.sms, held.sms):
        # the trace buffers held: a few windows per warp, against every position of the SM's warps
        issued = a.stats.warp_instructions
        assert a._TPC.size < issued / 3 and b._TPC.size >= issued


def test_cta_instructions_are_each_ctas_warp_instructions(monkeypatch):
    """A stream's count of one CTA's warp instructions (kept batch by batch) is the sum over its
    warps in the result, asked during the run or after it, in any order; the stencil's boundary
    CTAs run fewer instructions than the others, so a count taken from the wrong CTA shows."""
    from maxsim.host.kernel import Kernel
    k = Kernel.load("workloads/cuda/stencil.cu", kernel="stencil5")
    n = 64
    a = np.arange(n * n, dtype=np.float32).reshape(n, n)
    arguments = dict(params={"in": "a", "out": "o", "h": n, "w": n, "c0": 0.5, "c1": 0.125},
                     buffers={"a": a, "o": np.zeros_like(a)})
    monkeypatch.setattr(functional_launch, "BATCH_LANES", 256 * 3)  # 3 CTAs of 8 warps a batch
    params, memory, textures = _conv_args(k, arguments)
    grid = (n // 32, n // 8)
    stream = functional_launch.LaunchStream(k.code, grid, 256, params, memory, textures, warp_counts=True)
    during = {}
    for p, _ in enumerate(c for batch, _ in stream for c in batch):
        during[p] = stream.cta_instructions(p)
    res = stream.finish()
    per_cta = res.warp_counts.reshape(-1, 8).sum(axis=1)
    assert len(set(per_cta.tolist())) > 1  # (boundary CTAs differ)
    assert [during[p] for p in range(len(per_cta))] == per_cta.tolist()
    order = np.random.default_rng(1).permutation(len(per_cta))
    assert [stream.cta_instructions(int(p)) for p in order] == per_cta[order].tolist()
