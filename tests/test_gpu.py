"""The GPU model: block dispatch over many SMs sharing one L2 and DRAM."""

from maxsim.arch.config import load_config, override
from maxsim.gpu import simulate_gpu
from maxsim.timing.run import simulate
from workloads.sgemm.harness import _kernel, _prepare, _sizes

CFG = load_config("gtx980_oc")


def _problem(name, m, n, k):
    geo, lda, ldb, ldc = _sizes(name, m, n, k, None, None, None)
    return _kernel(name, "swirl", "maxas", True, None), _prepare(geo, m, n, k, lda, ldb, ldc, 1.0, 0)


def test_one_sm_gpu_is_the_sm_model():
    # 4 CTAs of sgemm_128, 2 resident per SM: two waves on a single SM
    kernel, p = _problem("sgemm_128", 256, 256, 32)
    one = override(CFG, {"gpu.sms": 1})
    g = simulate_gpu(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=one)
    kernel, p = _problem("sgemm_128", 256, 256, 32)
    _, sm = simulate(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=one)
    assert g.cycles == sm.stats.cycles
    assert g.waves == 2.0 and g.sms_used == 1


def test_ctas_spread_over_sms_run_concurrently():
    kernel, p = _problem("sgemm_128", 256, 256, 32)
    four = override(CFG, {"gpu.sms": 4})
    g4 = simulate_gpu(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=four)
    kernel, p = _problem("sgemm_128", 256, 256, 32)
    g1 = simulate_gpu(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=override(CFG, {"gpu.sms": 1}))
    assert g4.sms_used == 4 and g4.waves == 0.5
    # one CTA per SM instead of two waves of two: well under the single-SM time, and the same work
    assert g4.cycles < 0.6 * g1.cycles
    assert g4.stats.warp_instructions == g1.stats.warp_instructions
    # the four CTAs share A and B tiles in pairs: half the texture sectors hit in the L2
    assert 0.4 < g4.l2_hit_rate < 0.8


def test_merged_statistics_keep_every_warps_stall_reasons():
    kernel, p = _problem("sgemm_128", 256, 256, 32)
    g = simulate_gpu(kernel, p.grid, p.block, p.params, p.memory, p.textures,
                     cfg=override(CFG, {"gpu.sms": 4}))
    per = g.stats.to_dict()["stall_reasons_per_warp"]
    assert len(per) == 4 * 8  # 4 CTAs of 8 warps, labelled by SM
    assert {k.split(".")[0] for k in per} == {"sm0", "sm1", "sm2", "sm3"}
    for reason, total in g.stats.stall_reasons.items():
        assert sum(v[reason] for v in per.values()) == total


def test_a_new_cta_spreads_its_warps_over_the_schedulers():
    """A CTA takes the warp slots of its CTA slot (maxsim.timing.static.cta_warp_slots): its eight
    warps land two per scheduler even when it starts while warps of the other resident CTA have
    already exited and freed lower slots (the lowest free slots could put three on one scheduler,
    which made that CTA's loop 40-60% slower in a tail of sgemm_128 at N = 768)."""
    kernel, p = _problem("sgemm_128", 384, 384, 32)  # 9 CTAs, 2 resident: 4.5 waves on one SM
    g = simulate_gpu(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=override(CFG, {"gpu.sms": 1}))
    (sm,) = g.sms
    ctas = {}
    for w in sm.all_warps:
        ctas.setdefault(w.cta.cid, []).append(w.slot)
    assert len(ctas) == 9
    for slots in ctas.values():
        assert sorted(s % 4 for s in slots) == [0, 0, 1, 1, 2, 2, 3, 3]
        assert max(slots) - min(slots) == 7  # one block of 8 slots


def test_a_cta_with_more_warps_than_its_block_is_refused():
    """Each CTA slot owns the warp slots of one block (cta_warp_slots): a CTA handed more warp
    traces than its block has warps is an error naming both, in either core."""
    import pytest

    from maxsim.errors import SimulationError
    from maxsim.gpu.gpu import trace_ctas
    from maxsim.timing.memory_system import MemorySystem
    from maxsim.timing.sm import SM
    kernel, p = _problem("sgemm_64", 64, 64, 16)
    _, ((cid, traces),) = trace_ctas(kernel, p.grid, p.block, p.params, p.memory, p.textures, CFG, timing_only=True)
    for core in ("compiled", "python"):
        sm = SM(CFG, kernel, p.block, MemorySystem(CFG), core=core)
        sm.add_cta(cid, traces + traces[:1])  # 3 warps for a block of 64 threads
        with pytest.raises(SimulationError, match=r"CTA \(0, 0\) has 3 warps, more than its block of 64 threads"):
            sm.run()


def test_ctas_from_the_dispatcher_start_after_the_launch_cost_at_its_pace():
    """8 CTAs of sgemm_128 on 3 SMs holding 2 each: the 2 CTAs after the first wave start
    sm.cta_launch_cycles after the CTA whose slot they take ended, and at least
    gpu.cta_dispatch_interval apart."""
    from workloads.sgemm.harness import _kernel, _prepare, _sizes
    cfg = override(load_config("gtx980_oc"), {"gpu.sms": 3, "gpu.cta_dispatch_interval": 400})
    geo, lda, ldb, ldc = _sizes("sgemm_128", 512, 256, 32, None, None, None)
    kernel = _kernel("sgemm_128", "swirl", "maxas", True, None)
    p = _prepare(geo, 512, 256, 32, lda, ldb, ldc, 1.0, 0)
    out = simulate_gpu(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=cfg)
    launch = cfg.sm.cta_launch_cycles
    assert launch == 700
    later = sorted((start, cid, sm) for sm in out.sms for start, cid in sm.dispatched)
    assert len(later) == 2 and later[1][0] - later[0][0] >= 400
    ends = sorted(e for sm in out.sms for _, _, e in sm.cta_log)
    first_end = ends[0]  # the first slot to free takes the first later CTA
    assert later[0][0] == first_end + launch
    for start, cid, sm in later:
        assert any(s == start for c, s, _ in sm.cta_log if c == cid)  # the CTA ran from that cycle


def test_a_dispatched_first_wave_starts_in_grid_order_at_the_dispatchers_pace():
    """gpu.first_wave "dispatched": 8 CTAs of sgemm_128 (grid 4 x 2) on 3 SMs holding 2 each, the
    dispatcher one CTA per 400 cycles. Hand-computed: the first wave's 6 CTAs go round-robin in grid
    order, CTA r (r = y x 4 + x) to SM r mod 3 at cycle 400 r; the 2 later CTAs start 700 cycles
    (sm.cta_launch_cycles) after the slot they take frees, no earlier than 2,400 (after the sixth
    hand-out) and 400 apart. "together" starts the whole first wave at 0."""
    from workloads.sgemm.harness import _kernel, _prepare, _sizes
    geo, lda, ldb, ldc = _sizes("sgemm_128", 512, 256, 32, None, None, None)
    starts = {}
    for mode in ("together", "dispatched"):
        cfg = override(load_config("gtx980_oc"), {"gpu.sms": 3, "gpu.cta_dispatch_interval": 400,
                                                  "gpu.first_wave": mode})
        kernel = _kernel("sgemm_128", "swirl", "maxas", True, None)
        p = _prepare(geo, 512, 256, 32, lda, ldb, ldc, 1.0, 0)
        out = simulate_gpu(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=cfg)
        log = {cid[1] * 4 + cid[0]: (sm.sm_id, s, e) for sm in out.sms for cid, s, e in sm.cta_log}
        assert sorted(log) == list(range(8))
        starts[mode] = log
        first = {r: log[r] for r in range(6)}
        step = 400 if mode == "dispatched" else 0
        assert {r: (sm, s) for r, (sm, s, _) in first.items()} == {r: (r % 3, step * r) for r in range(6)}
        ends = sorted(e for _, _, e in first.values())
        later = sorted(log[r][1] for r in (6, 7))
        assert later[0] == max(ends[0] + 700, 6 * step)
        assert later[1] == max(ends[1] + 700, later[0] + 400)
    # each first-wave CTA of the dispatched run takes about as long as the lockstep one (one wave,
    # K = 32: the shift in start is what changes)
    d = [starts["dispatched"][r][2] - starts["dispatched"][r][1] for r in range(6)]
    assert max(d) < 2 * min(d)
