"""The compiled SM core gives exactly the reference core's numbers.

The reference core (maxsim/timing/reference.py, plain Python) is the specification of the SM model;
the compiled core (maxsim/timing/core.py, numba) must match it event for event. Every micro-kernel
test of test_timing_micro.py runs here again with ``simulate`` replaced by a twin that runs both
cores (the reference on deep copies of the memory objects) and asserts identical cycles, stall
totals and per-warp stalls, bank-conflict, delayed-conflict and reuse counts, dual issues,
texture and shared-memory counters, hazards, issue and stall logs, CTA logs and back-branch times;
then the same comparison runs for a hazard case, a multi-SM GPU and both SGEMM kernels (one
wave, and more CTAs than fit on one SM). Each test runs twice, with the compiled core's scans over
the warps' rows and over the scheduler rows' copies of their cycles (``drive`` / ``drive_copies``).
"""

from __future__ import annotations

import contextlib
import copy
import os

import pytest

import test_timing_micro as micro
from maxsim.arch.config import load_config, override
from maxsim.errors import MaxsimError
from maxsim.functional import GlobalMemory
from maxsim.gpu import simulate_gpu
from maxsim.timing import run as timing_run
from maxsim.timing.memory_system import MemorySystem
from maxsim.timing.sm import SM, ReferenceSM
from maxsim.timing.stats import PC_FIELDS, STALL_REASONS
from workloads.sgemm.harness import _kernel, _prepare, _sizes

# every micro-kernel test, collected again in this module (run with the twin below)
from test_timing_micro import *  # noqa: F401,F403

_simulate = timing_run.simulate


@contextlib.contextmanager
def core(name):
    old = os.environ.get("MAXSIM_CORE")
    os.environ["MAXSIM_CORE"] = name
    try:
        yield
    finally:
        if old is None:
            del os.environ["MAXSIM_CORE"]
        else:
            os.environ["MAXSIM_CORE"] = old


def figures(sm):
    """Everything the two cores must agree on, from one SM after its run."""
    st = sm.stats
    d = st.to_dict()
    for k in ("sim_seconds", "warp_instructions_per_second"):
        d.pop(k)
    return {
        "stats": d,
        "opcode_order": list(st.opcode_counts),
        "warp_stalls": list(st.warp_stalls.items()),  # in the order the warps exited
        "hazards": list(st.hazards),
        "issue_log": sm.issue_log, "issue_done": sm.issue_done, "stall_log": sm.stall_log,
        "cta_log": sm.cta_log, "dispatched": sm.dispatched, "now": sm.now,
        "peak_warps": sm.peak_warps, "max_ctas": (sm.max_ctas, sm.limited_by),
        "warps": [(w.label, w.slot, w.sched.index, w.branch_times) for w in sm.all_warps],
        "loop": sm.loop_cycles_per_iteration(), "issued": sm.issued(),
        "l1": sm.l1.stats(), "l1_tags": [list(s.items()) for s in sm.l1._sets],
        "shared": sm.shared.stats(),
        "per_pc": st.per_pc.tolist(),  # the per-instruction counters (stats.PC_FIELDS)
    }


def assert_same(ref, new):
    assert type(ref) is ReferenceSM and type(new) is SM
    a, b = figures(ref), figures(new)
    for key in a:
        assert a[key] == b[key], key


def _outcome(fn):
    try:
        return fn(), None
    except MaxsimError as e:
        return None, e


def twin_simulate(kernel, grid, block, params=(), memory=None, textures=None, **kw):
    """simulate() with both cores: the reference on deep copies, the compiled one on the
    caller's objects; asserts identical results (or identical errors) and returns the latter."""
    ref_params, ref_memory, ref_textures, ref_ms = copy.deepcopy(
        (params, memory, textures, kw.get("memory_system")))
    ref_kw = dict(kw, memory_system=ref_ms)
    with core("python"):
        ref, ref_err = _outcome(lambda: _simulate(kernel, grid, block, ref_params, ref_memory, ref_textures,
                                                  **ref_kw))
    with core("compiled"):
        new, new_err = _outcome(lambda: _simulate(kernel, grid, block, params, memory, textures, **kw))
    assert (type(ref_err), str(ref_err)) == (type(new_err), str(new_err))
    if new_err is not None:
        raise new_err
    assert_same(ref[1], new[1])
    if ref_ms is not None:
        assert ref_ms.stats() == kw["memory_system"].stats()
    assert_per_pc_sums(new[1], kw.get("memory_system"))
    return new


def assert_per_pc_sums(sm, shared_memory_system=None):
    """Each per-instruction column sums to the run's total (the L2 columns to the memory
    system's read counters when the SM had it to itself)."""
    st = sm.stats
    col = dict(zip(PC_FIELDS, st.per_pc.sum(axis=0).tolist()))
    assert st.per_pc.shape == (len(sm.kernel.instructions), len(PC_FIELDS))
    assert col["executions"] == st.warp_instructions == sm.issued()
    for field, total in (("dual_issued", st.dual_issues), ("bank_conflicts", st.bank_conflicts),
                         ("bank_conflict_cycles", st.bank_conflict_cycles),
                         ("delayed_conflicts", st.delayed_conflicts), ("reuse_hits", st.reuse_hits),
                         ("shared_requests", st.shared_requests), ("shared_wavefronts", st.shared_wavefronts),
                         ("texture_requests", st.tex_requests), ("texture_sectors", st.tex_sectors),
                         ("texture_hits", st.tex_hits)):
        assert col[field] == total, field
    for r in STALL_REASONS:
        assert col["stall_" + r] == st.stall_reasons[r], r
    if shared_memory_system is None:
        assert (col["l2_hits"], col["l2_misses"]) == (st.l2_hits, st.l2_misses)


@pytest.fixture(autouse=True)
def _twin(monkeypatch):
    monkeypatch.setattr(micro, "simulate", twin_simulate)


@pytest.fixture(autouse=True, params=["rows", "copies"])
def scan(request, monkeypatch):
    """Every test with each of the compiled core's two scans: the schedulers' scans over the warps'
    rows (drive) and over the scheduler rows' copies (drive_copies), whatever warps a scheduler
    holds."""
    from maxsim.timing import core as K
    monkeypatch.setattr(K, "COPIES_FROM", 0 if request.param == "copies" else 1 << 30)
    return request.param


# ---- beyond the micro-kernels ------------------------------------------------------------------

def test_the_twin_really_runs_both_cores(monkeypatch):
    built = []
    real_init = ReferenceSM.__init__

    def spy(self, *a, **kw):
        built.append(type(self))
        real_init(self, *a, **kw)
    monkeypatch.setattr(ReferenceSM, "__init__", spy)
    sm, _ = micro.run(micro.kernel(f"""
        --:-:-:-:{micro.s(6)}  FFMA R0, R1, R2, R3;
        {micro.exit_line()}"""))
    assert built == [ReferenceSM] and type(sm) is SM


def test_the_compiled_core_runs_with_the_scan_under_test(scan, monkeypatch):
    from maxsim.timing import core as K
    used = []
    for name in ("drive", "drive_copies"):
        real = getattr(K, name)
        monkeypatch.setattr(K, name, lambda *a, _f=real, _n=name: used.append(_n) or _f(*a))
    micro.run(micro.kernel(f"""
        --:-:-:-:{micro.s(6)}  FFMA R0, R1, R2, R3;
        {micro.exit_line()}"""))
    assert used and set(used) == {"drive_copies" if scan == "copies" else "drive"}


def test_hazard_case_warn_and_strict():
    # one hazard of each kind: a predicate read too early, a register overwritten before a global
    # load has read it, a register read before its result is ready
    mem = GlobalMemory()
    base = mem.alloc(1024)
    k = micro.kernel(f"""
        --:-:-:-:{micro.s(6)}  MOV32I R9, {base:#x};
        --:-:-:-:1  ISETP.LT.AND P0, PT, R1, R2, PT;
        --:-:-:-:1  @P0 FADD R4, R1, R2;
        --:-:1:-:1  LDG R8, [R9];
        --:-:-:-:1  S2R R9, SR_TID.X;
        --:-:-:-:{micro.s(6)}  FFMA R12, R4, R5, R6;
        01:-:-:-:{micro.s(6)}  FFMA R13, R8, R5, R6;
        {micro.exit_line()}""", shared=1024)
    sm, d = micro.run(k, block=64, memory=mem)  # the twin compares the hazard messages
    text = " ".join(sm.stats.hazards)
    assert d["hazards"] == 6  # three per warp
    assert "reads P0" in text and "overwrites R9 before LDG" in text and "reads R4 at cycle" in text
    with pytest.raises(MaxsimError, match="hazard in warp cta0,0.w0 at cycle 7: FADD reads P0"):
        micro.run(k, block=64, memory=mem, hazards="strict")


def _problem(name, m, n, k):
    geo, lda, ldb, ldc = _sizes(name, m, n, k, None, None, None)
    return _kernel(name, "swirl", "maxas", True, None), _prepare(geo, m, n, k, lda, ldb, ldc, 1.0, 0)


@pytest.mark.parametrize("name,tile,ctas", [("sgemm_64", 64, 8), ("sgemm_128", 128, 2)])
def test_sgemm_one_full_wave(name, tile, ctas):
    # one SM holding one full wave of resident CTAs (4 warps per scheduler), K = 64
    cfg = load_config()
    kernel, p = _problem(name, tile * ctas, tile, 64)
    sm_new = twin_simulate(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=cfg, log=True)[1]
    assert sm_new.stats.warp_instructions > 10000 and sm_new.stats.tex_requests > 0
    assert len(sm_new.cta_log) == ctas and sm_new.stats.dual_issues > 0


@pytest.mark.parametrize("sharing", ["pairs_01_23", "pairs_02_13"])
def test_sgemm_with_one_texture_cache_per_pair_of_schedulers(sharing):
    # l1tex.sharing splits the L1/texture cache: each pair of schedulers fetches through its own
    # cache of half the size and its own unit's throughput; both cores agree, and the split differs
    # from the pooled cache (the 8 CTAs of an SM share an A panel: fewer of them share a cache)
    kernel, p = _problem("sgemm_64", 64 * 8, 64, 64)
    runs = {}
    for mode in ("pooled", sharing):
        cfg = override(load_config(), {"l1tex.sharing": mode})
        runs[mode] = twin_simulate(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=cfg)[1]
    split, pooled = runs[sharing], runs["pooled"]
    assert split.stats.tex_requests == pooled.stats.tex_requests > 0
    assert (split.l1.sector_hits, split.stats.cycles) != (pooled.l1.sector_hits, pooled.stats.cycles)


def test_sgemm_with_warps_selected_by_age():
    # sm.oldest_warp = "age": when the greedy warp cannot issue, the scheduler takes the ready warp
    # of the CTA launched first. One SM running 12 CTAs of sgemm_64 where 8 fit (the later CTAs
    # join the queues behind older ones): both cores agree, and the CTAs end in another order and
    # at other cycles than with the least recently issued warp
    kernel, p = _problem("sgemm_64", 64 * 12, 64, 64)
    runs = {}
    for mode in ("least_recent", "age"):
        cfg = override(load_config(), {"sm.oldest_warp": mode})
        runs[mode] = twin_simulate(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=cfg, log=True)[1]
    age, lr = runs["age"], runs["least_recent"]
    assert len(age.cta_log) == len(lr.cta_log) == 12
    assert age.stats.warp_instructions == lr.stats.warp_instructions
    assert age.cta_log != lr.cta_log


def _gpu_on_both(cfg, problem, **kw):
    """``problem`` on a GPU of ``cfg`` with the reference and the compiled SM cores (each its own
    copy: the same texture addresses for both): their GpuResults."""
    kernel, problem = problem
    out = {}
    for name in ("python", "compiled"):
        p = copy.deepcopy(problem)
        with core(name):
            out[name] = simulate_gpu(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=cfg, **kw)
    return out["python"], out["compiled"]


def test_multi_sm_gpu_with_warps_selected_by_age():
    # the same on a GPU: 8 CTAs of sgemm_128 on 3 SMs holding 2 each, CTAs from the shared dispatcher
    cfg = override(load_config("gtx980_oc"), {"gpu.sms": 3, "sm.oldest_warp": "age"})
    ref, new = _gpu_on_both(cfg, _problem("sgemm_128", 512, 256, 32))
    assert ref.cycles == new.cycles and new.memory.stats() == ref.memory.stats()
    for a, b in zip(ref.sms, new.sms):
        assert_same(a, b)


def test_sgemm_later_ctas_reuse_trace_buffers(monkeypatch):
    # one SM running 12 CTAs of sgemm_64 where 8 fit: the later CTAs' traces go into buffers that
    # still hold live warps' traces and sector lists, which must move intact when compacted
    cfg = load_config()
    moved = []
    compact = SM._compact

    def spy(self, more, more_sec):
        moved.append(len(self._slot_trace))
        compact(self, more, more_sec)
    monkeypatch.setattr(SM, "_compact", spy)
    kernel, p = _problem("sgemm_64", 64 * 12, 64, 16)
    sm_new = twin_simulate(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=cfg)[1]
    assert len(sm_new.cta_log) == 12 and sm_new.peak_warps == 16
    assert max(moved) > 0  # a compaction moved the traces of resident warps


def test_multi_sm_gpu():
    # 8 CTAs of sgemm_128 on 3 SMs holding 2 each: a first wave of 6, then 2 CTAs taken from the
    # shared dispatcher by the SMs whose slots free first; one L2/DRAM shared by the SMs
    cfg = override(load_config("gtx980_oc"), {"gpu.sms": 3})
    ref, new = _gpu_on_both(cfg, _problem("sgemm_128", 512, 256, 32))
    assert ref.cycles == new.cycles and ref.l2_hit_rate == new.l2_hit_rate and ref.dram_bytes == new.dram_bytes
    # the compiled core queues its stores and hands them on at its next return: the shared memory
    # system must still end in the same state as with every store handed on at once
    assert new.memory.writes == ref.memory.writes > 0
    assert new.memory.stats() == ref.memory.stats()
    assert len(ref.sms) == len(new.sms) == 3
    for a, b in zip(ref.sms, new.sms):
        assert_same(a, b)
    # per instruction on the GPU: the SMs' rows sum to the merged ones, their L2 reads to the shared
    # memory system's
    assert (new.stats.per_pc == sum(sm.stats.per_pc for sm in new.sms)).all()
    l2 = new.stats.per_pc[:, PC_FIELDS.index("l2_hits"):PC_FIELDS.index("l2_misses") + 1].sum(axis=0).tolist()
    assert l2 == [new.memory.l2_read_hits, new.memory.l2_read_misses] and l2[1] > 0
    assert sum(len(sm.dispatched) for sm in new.sms) > 0  # CTAs came from the shared dispatcher


def test_timed_sm_of_a_gpu_run():
    # a launch of one wave simulated once: SM 0 of the whole-GPU run is the timed SM (its hazard
    # checks on, its backward-branch times kept, its statistics completed from the functional run)
    cfg = override(load_config("gtx980_oc"), {"gpu.sms": 3})
    # 6 CTAs: 2 per SM, one wave
    ref, new = _gpu_on_both(cfg, _problem("sgemm_128", 384, 256, 128), timed=("warn",))
    assert ref.cycles == new.cycles
    a, b = ref.timed_sm, new.timed_sm
    # the dispatcher's first wave: CTA 0 to SM 0, 1 to SM 1, 2 to SM 2, 3 to SM 0, ...
    ctas = new.launch.ctas
    assert a.sm_id == b.sm_id == 0 and sorted(c for c, _, _ in b.cta_log) == sorted([ctas[0], ctas[3]])
    assert_same(a, b)
    assert b.loop_cycles_per_iteration() == a.loop_cycles_per_iteration() is not None
    assert all(sm.keep_branch_times == (sm.sm_id == 0) for sm in new.sms)
    st = b.stats
    assert st.thread_instructions == 2 * new.launch.thread_instructions // 6  # the SGEMM's CTAs are alike
    assert (st.l2_hits, st.l2_misses) == (new.memory.l2_read_hits, new.memory.l2_read_misses)


def test_multi_sm_gpu_translating_small_pages():
    """The same on TLBs made small (4 KB pages, 4-entry L1 TLBs, an 8-entry L2 TLB in sets of 2):
    the SGEMM's reads miss both TLBs and walk, and the reference and the compiled SM cores (each
    with its memory system) agree on every cycle and counter."""
    cfg = override(load_config("gtx980_oc"), {"gpu.sms": 3, "tlb.page_bytes": 4096, "tlb.l1_entries": 4,
                                               "tlb.l1_assoc": 4, "tlb.l2_entries": 8, "tlb.l2_assoc": 2})
    kernel, problem = _problem("sgemm_128", 512, 256, 32)
    ref, new = _gpu_on_both(cfg, (kernel, problem))
    assert ref.cycles == new.cycles
    st = new.memory.stats()
    assert st == ref.memory.stats()
    assert st["tlb_l2_misses"] > 10 and st["tlb_l1_misses"] > st["tlb_l2_misses"]
    assert new.memory.tlb.sets() == ref.memory.tlb.sets()
    for a, b in zip(ref.sms, new.sms):
        assert_same(a, b)
    # the walks cost: the same launch with the TLBs of the GTX 980 takes fewer cycles
    p = copy.deepcopy(problem)
    base = simulate_gpu(kernel, p.grid, p.block, p.params, p.memory, p.textures,
                        cfg=override(load_config("gtx980_oc"), {"gpu.sms": 3}))
    assert base.memory.stats()["tlb_l2_misses"] == 0 and base.cycles < new.cycles


def test_core_selection():
    cfg = load_config()
    k = micro.kernel(f"--:-:-:-:{micro.s(6)}  FFMA R0, R1, R2, R3;\n{micro.exit_line()}")
    ms = MemorySystem(cfg)
    assert type(SM(cfg, k, 32, ms, core="python")) is ReferenceSM
    assert type(SM(cfg, k, 32, ms, core="compiled")) is SM
    with core("python"):
        assert type(SM(cfg, k, 32, ms)) is ReferenceSM
    with pytest.raises(MaxsimError, match="unknown SM core 'fast'"):
        SM(cfg, k, 32, ms, core="fast")


def test_divergent_kernel():
    # divergent warps: serialised paths, reconvergence, loops left lane by lane (test_simt.py)
    import numpy as np
    from sasskit import kernel
    from test_simt import COLLATZ, EPILOGUE, PROLOGUE, collatz_problem, collatz_steps
    x = collatz_problem(256)
    k = kernel(*(PROLOGUE + COLLATZ + EPILOGUE), nparams=2, regs=16)
    mem = GlobalMemory()
    src, out = mem.alloc(4 * x.size), mem.alloc(4 * x.size)
    mem.write(src, x)
    res, sm = twin_simulate(k, 4, 64, [src, out], mem, log=True)
    assert sm.stats.divergent_branches > 0 and sm.stats.to_dict()["simd_efficiency"] < 0.6
    assert mem.read(out, x.size, np.uint32).tolist() == [collatz_steps(int(v)) for v in x]


def test_histogram_and_shuffle_reduction_kernel():
    # SHFL, VOTE, ATOMS, RED, ATOM, 8-bit loads and an EXIT of some warps' lanes (test_opcodes_extra.py)
    from test_opcodes_extra import check_histogram, histogram_problem
    k, data, mem, params, ptrs = histogram_problem()
    res, sm = twin_simulate(k, 3, 128, params, mem, log=True)
    check_histogram(data, mem, ptrs)
    assert sm.stats.shared_wavefronts > sm.stats.shared_requests  # ATOMS lanes collide on 8 bins


def test_constant_bank_texture_slot_and_divergent_ldc_kernel():
    # conv2d_const (test_maxas_nvcc_kernels.py): LDC.64 / LDC from constant bank 3, TLDS by slot, and
    # a bias LDC whose lanes read 16 addresses per warp (served one after another)
    import numpy as np

    from maxsim.functional.launch import ConstantBanks
    from maxsim.host import Kernel
    from maxsim.host.args import Texture, bind
    from maxsim.host.launch import with_geometry
    from test_maxas_nvcc_kernels import CONV, CROSS, conv_case, conv_reference
    img, taps, bias, bank3, wo, ho = conv_case(21, 40, CROSS, 7)
    k = Kernel.load(CONV)
    bound = bind(k, {"out": "out", "W": 40, "Wo": wo, "Ho": ho, "ntaps": len(taps)},
                 {"out": np.zeros((ho, wo), np.float32)}, {0x62: Texture(img.ravel(), "float1")}, {3: bank3})
    grid = ((wo + 15) // 16, (ho + 7) // 8)
    bank0 = with_geometry(bound.const_bank, ((16, 8, 1), (grid[0], grid[1], 1)))  # blockDim, gridDim
    res, sm = twin_simulate(k.code, grid, 128, ConstantBanks(bank0, bound.constants), bound.memory,
                            bound.textures, log=True)
    addr = bound.buffers["out"][0]
    got = bound.memory.read(addr, ho * wo).reshape(ho, wo)
    assert np.array_equal(got, conv_reference(img, taps, bias, wo, ho))
    assert sm.stats.tex_requests > 0


def test_ctas_placed_with_a_start_delay():
    # the sampled prediction starts an SM's later CTAs a few cycles apart (as the first wave's ends
    # are): a placed CTA's warps become ready `delay` cycles after it is launched, in both cores
    from maxsim.gpu.gpu import run_sms, trace_ctas
    cfg = override(load_config("gtx980_oc"), {"gpu.sms": 2})
    kernel, p = _problem("sgemm_128", 512, 256, 32)
    ids = [(0, 0), (1, 0), (2, 0), (3, 0)]
    _, traced = trace_ctas(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg, ids, timing_only=True)
    out = {}
    for name in ("python", "compiled"):
        tr = dict(copy.deepcopy(traced))
        placement = [[(ids[0], tr[ids[0]]), (ids[2], tr[ids[2]], 100)], [(ids[1], tr[ids[1]], 37), (ids[3], tr[ids[3]])]]
        ms = MemorySystem(cfg)
        with core(name):
            used = run_sms(kernel, p.block, cfg, placement, ms, hazards=None)
        out[name] = (used, ms)
    (ref, ref_ms), (new, new_ms) = out["python"], out["compiled"]
    assert ref_ms.stats() == new_ms.stats()
    for a, b in zip(ref, new):
        assert_same(a, b)
    starts = {cid: s for sm in new for cid, s, _ in sm.cta_log}
    assert starts == {(0, 0): 0, (2, 0): 100, (1, 0): 37, (3, 0): 0}


def test_many_waves_of_divergent_ctas_on_a_gpu():
    # 48 CTAs of a divergent kernel on 2 SMs holding 4 each: most start from the shared dispatcher as CTAs end (a
    # CTA's warps loaded and their rows set in one compiled call; its warps' traces differ, so
    # they share no pcs), their exits taken in before their slots are reused and their statistics
    # built when the run ends: the same figures, per-warp stalls in the same order, as the reference
    import numpy as np
    from sasskit import kernel
    from test_simt import COLLATZ, EPILOGUE, PROLOGUE, collatz_problem, collatz_steps
    cfg = override(load_config("gtx980_oc"), {"gpu.sms": 2, "sm.max_ctas": 4})
    x = collatz_problem(48 * 64)
    k = kernel(*(PROLOGUE + COLLATZ + EPILOGUE), nparams=2, regs=16)
    out = {}
    for name in ("python", "compiled"):
        mem = GlobalMemory()
        src, dst = mem.alloc(4 * x.size), mem.alloc(4 * x.size)
        mem.write(src, x)
        with core(name):
            out[name] = simulate_gpu(k, 48, 64, [src, dst], mem, cfg=cfg)
        assert mem.read(dst, x.size, np.uint32).tolist() == [collatz_steps(int(v)) for v in x]
    ref, new = out["python"], out["compiled"]
    assert ref.cycles == new.cycles and new.memory.stats() == ref.memory.stats()
    assert len(new.sms) == 2 and sum(len(sm.cta_log) for sm in new.sms) == 48
    assert sum(len(sm.dispatched) for sm in new.sms) == 40  # all but the first wave's 8
    for a, b in zip(ref.sms, new.sms):
        assert_same(a, b)
    assert list(ref.stats.warp_stalls.items()) == list(new.stats.warp_stalls.items())
    assert ref.stats.stall_reasons == new.stats.stall_reasons
