"""SMs run together in compiled code give the numbers of the same SMs as simpy processes, exactly.

:func:`maxsim.timing.clock.run_together` takes the SMs' quanta in simpy's order without returning to
Python between them; ``clock="simpy"`` (``MAXSIM_CLOCK=simpy``) runs the same compiled SMs as simpy
processes, one quantum per simpy step. Whole-GPU runs with a block dispatcher and several waves,
memory-bound sampled predictions and a run stopped at a cycle must agree in every figure: the
statistics of every SM, its CTAs' start and end cycles, the loop progress measure (back-branch
times) and the memory system's counters.
"""

from __future__ import annotations

import numpy as np
import pytest

from maxsim.arch.config import load_config, override
from maxsim.errors import SimulationError
from maxsim.functional import GlobalMemory, Texture1D
from maxsim.gpu.gpu import round_robin, run_sms, simulate_gpu, trace_ctas
from maxsim.timing.clock import clock_name, run_together
from maxsim.timing.memory_system import MemorySystem
from maxsim.timing.sm import SM, residency
from workloads.sgemm.generator import generate_kernel
from workloads.sgemm.predict import predict_sgemm

CFG = load_config("gm204")


def inputs(n, k):
    rng = np.random.default_rng(1)
    return rng.standard_normal((k, n)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)


def sgemm_launch(name, n, k):
    kernel = generate_kernel(name)
    tile, threads = (64, 64) if name == "sgemm_64" else (128, 256)
    a, b = inputs(n, k)
    mem = GlobalMemory()
    c_ptr = mem.alloc(n * n * 4)
    # fixed addresses: a texture without one gets a new private range each time (other L2 slices)
    tex = {1: Texture1D(a.reshape(-1, 4), address=1 << 40), 0: Texture1D(b.reshape(-1, 4), address=2 << 40)}
    params = [c_ptr, n, n, k, n, n, n, np.float32(1.0), 0]
    return kernel, (n // tile, n // tile), threads, params, mem, tex


def sm_figures(sm):
    st = sm.stats
    return (sm.now, st.cycles, st.warp_instructions, st.dual_issues, st.bank_conflicts, st.reuse_hits,
            st.shared_wavefronts, st.tex_requests, st.tex_hits, dict(st.stall_reasons), st.opcode_counts,
            list(sm.cta_log), list(sm.dispatched), [list(w.branch_times) for w in sm.all_warps],
            sm.l1.sector_hits, sm.l1.sector_misses)


def memory_figures(ms):
    return (ms.l2_read_hits, ms.l2_read_misses, ms.dram_bytes_read, ms.dram_bytes_written)


@pytest.mark.parametrize("name,n,sms", [("sgemm_64", 384, 4), ("sgemm_128", 512, 3)])
def test_whole_gpu_run_with_dispatcher_is_the_same_on_both_clocks(name, n, sms):
    """Several waves (the dispatcher hands CTAs to the SM whose slot frees first), stores at the end."""
    cfg = override(CFG, {"gpu.sms": sms})
    kernel, grid, block, params, _, _ = sgemm_launch(name, n, 64)
    out = {}
    for clock in ("simpy", "compiled"):
        _, _, _, _, mem, tex = sgemm_launch(name, n, 64)
        traced = trace_ctas(kernel, grid, block, params, mem, tex, cfg)
        ms = MemorySystem(cfg)
        per_sm = residency(kernel, block, cfg)[0]
        placement, queue = round_robin(traced[1], sms, per_sm)
        assert len(queue) > 0  # the dispatcher has work: more than one wave
        used = run_sms(kernel, block, cfg, placement, ms, queue=queue, clock=clock)
        out[clock] = ([sm_figures(sm) for sm in used], memory_figures(ms))
    assert out["compiled"] == out["simpy"]


def test_simulate_gpu_is_the_same_on_both_clocks(monkeypatch):
    cfg = override(CFG, {"gpu.sms": 5})
    results = {}
    for clock in ("simpy", "compiled"):
        monkeypatch.setenv("MAXSIM_CLOCK", clock)
        kernel, grid, block, params, mem, tex = sgemm_launch("sgemm_64", 512, 32)
        r = simulate_gpu(kernel, grid, block, params, mem, tex, cfg=cfg)
        results[clock] = (r.cycles, r.stats.warp_instructions, r.stats.dual_issues, r.stats.bank_conflicts,
                          dict(r.stats.stall_reasons), r.l2_hit_rate, r.dram_bytes,
                          [sm_figures(sm) for sm in r.sms])
        # and the launch computed the product (stored row by row as B^T A here)
        a, b = inputs(512, 32)
        c = mem.read(params[0], 512 * 512, np.float32).reshape(512, 512)
        np.testing.assert_allclose(c, b.T.astype(np.float64) @ a, rtol=1e-4, atol=1e-4)
    assert results["compiled"] == results["simpy"]


@pytest.mark.parametrize("name,n", [("sgemm_64", 1536), ("sgemm_128", 2048)])
def test_memory_bound_predictions_are_the_same_on_both_clocks(monkeypatch, name, n):
    """Sampled predictions (first wave, steady-state windows with histories, the tail) on a GPU cut
    to 4 SMs and a sixteenth of the DRAM bandwidth: memory-bound, the order of requests matters."""
    cfg = override(CFG, {"gpu.sms": 4, "dram.efficiency": CFG.dram.efficiency / 16})
    out = {}
    for clock in ("simpy", "compiled"):
        monkeypatch.setenv("MAXSIM_CLOCK", clock)
        p = predict_sgemm(name, n, cfg, k=256)
        p.pop("sim_seconds")
        out[clock] = p
    assert out["compiled"] == out["simpy"]


def test_a_run_stopped_at_a_cycle_stops_at_the_same_point():
    cfg = override(CFG, {"gpu.sms": 3})
    kernel, grid, block, params, mem, tex = sgemm_launch("sgemm_64", 192, 64)
    out = {}
    for clock in ("simpy", "compiled"):
        _, _, _, _, mem, tex = sgemm_launch("sgemm_64", 192, 64)
        traced = trace_ctas(kernel, grid, block, params, mem, tex, cfg)
        ms = MemorySystem(cfg)
        placement, queue = round_robin(traced[1], 3, residency(kernel, block, cfg)[0])
        used = run_sms(kernel, block, cfg, placement, ms, queue=queue, clock=clock, until=3000)
        out[clock] = ([(sm.issued(), [list(w.branch_times) for w in sm.all_warps]) for sm in used],
                      memory_figures(ms))
    _, _, _, _, mem, tex = sgemm_launch("sgemm_64", 192, 64)
    traced = trace_ctas(kernel, grid, block, params, mem, tex, cfg)
    placement, queue = round_robin(traced[1], 3, residency(kernel, block, cfg)[0])
    whole = run_sms(kernel, block, cfg, placement, MemorySystem(cfg), queue=queue)
    assert 0 < sum(i for i, _ in out["compiled"][0]) < sum(sm.issued() for sm in whole)  # stopped part-way
    assert out["compiled"] == out["simpy"]


def test_progress_is_reported_as_the_run_goes(monkeypatch):
    cfg = override(CFG, {"gpu.sms": 2})
    kernel, grid, block, params, mem, tex = sgemm_launch("sgemm_64", 128, 128)
    calls = []
    r = simulate_gpu(kernel, grid, block, params, mem, tex, cfg=cfg,
                     traced=trace_ctas(kernel, grid, block, params, mem, tex, cfg),
                     progress=lambda done, total, what, unit: calls.append((done, total, what)))
    timing = [c for c in calls if c[2] == "timing"]
    assert len(timing) >= r.cycles // 2048
    assert [d for d, _, _ in timing] == sorted(d for d, _, _ in timing)
    assert timing[-1][0] == timing[-1][1] == r.stats.warp_instructions


def test_unknown_clock_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("MAXSIM_CLOCK", "sundial")
    with pytest.raises(SimulationError, match="unknown clock 'sundial'.*compiled, simpy"):
        clock_name()


def test_the_schedulers_scan_is_chosen_by_the_warps_they_may_hold():
    from types import SimpleNamespace

    from maxsim.timing import core as K
    sgemm = SM(CFG, generate_kernel("sgemm_128"), 256, MemorySystem(CFG))
    assert (sgemm.max_ctas, sgemm.wpc, len(sgemm.scheds)) == (2, 8, 4)  # 4 warps a scheduler
    assert K.drive_for([sgemm]) is K.drive
    tiled = SimpleNamespace(max_ctas=8, wpc=8, scheds=sgemm.scheds)  # matmul_tiled's 16 warps a scheduler
    assert K.drive_for([sgemm, tiled]) is K.drive_copies
    assert K.drive_for([]) is K.drive


def test_sms_driven_together_must_share_a_memory_system():
    kernel, grid, block, params, mem, tex = sgemm_launch("sgemm_64", 128, 32)
    _, traces = trace_ctas(kernel, grid, block, params, mem, tex, CFG)
    sms = [SM(CFG, kernel, block, MemorySystem(CFG), sm_id=i) for i in range(2)]
    for sm, (cid, tr) in zip(sms, traces):
        sm.add_cta(cid, tr)
    with pytest.raises(ValueError, match="share one memory system"):
        run_together(sms, 32)


def test_the_core_calls_the_memory_system_through_pointers_and_unbound_python_does_it(monkeypatch):
    """The compiled SMs serve reads and hand on their stores with the compiled memory system's code,
    called through pointers (maxsim.timing.core.bind_memory, maxsim.jit.Callee); with the pointers
    unbound the core leaves both to Python: the same figures, and Python then serves every read."""
    from maxsim.timing import core as K
    from maxsim.timing.memory_core import CompiledMemorySystem
    calls = {"read": 0, "write_queue": 0}

    def counted(name):
        original = getattr(CompiledMemorySystem, name)

        def call(self, *args, **kwargs):
            calls[name] += 1
            return original(self, *args, **kwargs)
        monkeypatch.setattr(CompiledMemorySystem, name, call)
    counted("read")
    counted("write_queue")
    cfg = override(CFG, {"gpu.sms": 3})
    out = {}
    for bound in (True, False):
        if not bound:
            monkeypatch.setattr(K, "bind_memory", lambda MS: None)
            K.READ_REQUEST.unbind()
            K.POST_QUEUED.unbind()
        calls.update(read=0, write_queue=0)
        kernel, grid, block, params, mem, tex = sgemm_launch("sgemm_64", 192, 64)
        traced = trace_ctas(kernel, grid, block, params, mem, tex, cfg)
        ms = MemorySystem(cfg)
        assert isinstance(ms, CompiledMemorySystem)
        placement, queue = round_robin(traced[1], 3, residency(kernel, block, cfg)[0])
        used = run_sms(kernel, block, cfg, placement, ms, queue=queue)
        assert (K.READ_REQUEST.bound, K.POST_QUEUED.bound) == (bound, bound)
        assert all(c.bound for c in K.RARE_CALLEES)  # (the core's own rare steps: always)
        out[bound] = ([sm_figures(sm) for sm in used], memory_figures(ms), dict(calls))
    assert out[True][:2] == out[False][:2]
    # (bound: Python serves only the reads the core leaves it, e.g. those after a posted store)
    assert 2 * out[True][2]["read"] < out[False][2]["read"]
    assert out[True][2]["write_queue"] < out[False][2]["write_queue"]
    monkeypatch.undo()
    K.bind_memory(ms._read_args)


def test_the_lineup_holds_the_sms_arrays_borrowed_and_the_run_is_unchanged():
    """The compiled lineup points at each SM's own arrays without counting references to them (a
    switch between SMs then counts none): the SMs' arrays have the references they had before it
    was made, and the lineup reads the same data."""
    import sys

    from maxsim.timing.clock import STATE_ARRAYS, Lineup
    kernel, grid, block, params, mem, tex = sgemm_launch("sgemm_64", 128, 32)
    _, traces = trace_ctas(kernel, grid, block, params, mem, tex, CFG)
    ms = MemorySystem(CFG)
    sms = [SM(CFG, kernel, block, ms, sm_id=i) for i in range(2)]
    for sm, (cid, tr) in zip(sms, traces):
        sm.add_cta(cid, tr)
    arrays = [sm._args[:-1] for sm in sms]
    assert all(len(a) == STATE_ARRAYS for a in arrays)
    before = [[sys.getrefcount(x) for x in a] for a in arrays]
    lineup = Lineup(sms)
    assert [[sys.getrefcount(x) for x in a] for a in arrays] == before
    for i, a in enumerate(arrays):
        state = lineup.states[i]
        assert all(np.array_equal(s, x) and s.ctypes.data == x.ctypes.data for s, x in zip(state, a))
