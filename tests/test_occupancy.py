"""Occupancy as a user choice: residency rules, the register count that gives a residency, the
generated SGEMM declaring more registers (same code, same results, fewer resident CTAs).

Expected residencies are computed by hand from the CUDA occupancy rules for compute capability
5.x with the numbers of gm204.toml: 64 warps, 32 CTAs, 65536 registers in 4 partitions of 16384,
registers allocated per warp in units of 256, 96 KB of shared memory in units of 256 bytes.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from maxsim.arch.config import load_config
from maxsim.errors import SimulationError
from maxsim.timing.occupancy import (OccupancyError, occupancy, registers_for, registers_per_warp,
                                     registers_used, residencies, with_registers)
from workloads.sgemm.generator import generate, generate_kernel
from workloads.sgemm.harness import run_sgemm, run_workload

CFG = load_config("gm204")
K64 = generate_kernel("sgemm_64")  # 64 threads = 2 warps per CTA, 8192 bytes of shared memory
K128 = generate_kernel("sgemm_128")  # 256 threads = 8 warps per CTA, 16384 bytes


def test_the_generated_kernels_declare_the_registers_their_code_uses():
    assert K64.reg_cnt == registers_used(K64) == 125
    assert K128.reg_cnt == registers_used(K128) == 115


@pytest.mark.parametrize("regs,per_warp,ctas", [
    # regs x 32 rounded up to 256 -> warps per 16384-register partition x 4 partitions / 2 warps per CTA
    (125, 4096, 8),  # 4000 -> 4096: 4 per partition, 16 warps, 8 CTAs (as maxas ran it: 4 warps/scheduler)
    (128, 4096, 8),
    (129, 4352, 6),  # 4128 -> 4352: 3 per partition (16384 / 4352 = 3.76), 12 warps, 6 CTAs
    (144, 4608, 6),  # 3.56 per partition: 3. A pooled 65536-register file would hold 7 CTAs here
    (168, 5376, 6),  # 5376 exactly: 3.05 -> 3
    (169, 5632, 4),  # 5408 -> 5632: 2 per partition, 8 warps, 4 CTAs
    (255, 8192, 4),  # 8160 -> 8192: 2 per partition
])
def test_sgemm_64_residency_by_hand(regs, per_warp, ctas):
    assert registers_per_warp(regs, CFG) == per_warp
    occ = occupancy(with_registers(K64, regs), 64, CFG)
    assert occ.limits == {"warps": 32, "ctas": 32, "registers": ctas, "shared memory": 12}
    assert (occ.ctas, occ.limited_by, occ.registers) == (ctas, "registers", regs)
    assert occ.warps == 2 * ctas and occ.warps_per_scheduler == ctas / 2
    assert occ.theoretical == pytest.approx(2 * ctas / 64)


def test_sgemm_128_residency_by_hand():
    # 8 warps per CTA: 115 regs -> 3680 -> 3840 per warp, 4 per partition, 16 warps = 2 CTAs;
    # 129 regs -> 3 per partition = 12 warps = 1 CTA (1.5 do not fit); shared 98304 / 16384 = 6
    occ = occupancy(K128, 256, CFG)
    assert occ.limits == {"warps": 8, "ctas": 32, "registers": 2, "shared memory": 6}
    assert (occ.ctas, occ.limited_by) == (2, "registers")
    assert occupancy(with_registers(K128, 129), 256, CFG).ctas == 1
    assert occupancy(with_registers(K128, 255), 256, CFG).ctas == 1
    assert residencies(K128, 256, CFG) == [(2, 115, 128), (1, 129, 255)]


def test_other_limits_by_hand():
    # 20000 bytes of shared memory round up to 20224: 98304 // 20224 = 4 CTAs
    k = attrs.evolve(with_registers(K64, 130), shared_size=20000)
    occ = occupancy(k, 64, CFG)
    assert (occ.ctas, occ.limited_by, occ.limits["shared memory"], occ.limits["registers"]) == (4, "shared memory", 4, 6)
    # 1024 threads = 32 warps per CTA: 64 // 32 = 2 CTAs; 8 registers allow 16384 / 256 = 64 warps
    # per partition (256 per SM = 8 CTAs)
    small = attrs.evolve(K64, reg_cnt=8, shared_size=0)
    occ = occupancy(small, 1024, CFG)
    assert occ.limits == {"warps": 2, "ctas": 32, "registers": 8}
    assert (occ.ctas, occ.limited_by) == (2, "warps")
    # 32-thread CTAs of a small kernel: the 32 CTA slots
    assert occupancy(small, 32, CFG).limited_by == "ctas"
    # GM107 (64 KB of shared memory per SM): 65536 // 8192 = 8 CTAs, a tie with the registers
    assert occupancy(K64, 64, load_config("gtx750ti")).limits["shared memory"] == 8


def test_registers_for_a_residency():
    assert registers_for(K64, 64, CFG, warps_per_scheduler=3) == 129
    assert registers_for(K64, 64, CFG, ctas_per_sm=6) == 129
    assert registers_for(K64, 64, CFG, warps_per_scheduler=2) == 169
    assert registers_for(K64, 64, CFG, warps_per_scheduler=4) == 125  # as generated
    assert registers_for(K64, 64, CFG, regs=168) == 168
    assert registers_for(K128, 256, CFG, warps_per_scheduler=2) == 129
    assert registers_for(K128, 256, CFG, ctas_per_sm=2) == 115
    assert residencies(K64, 64, CFG) == [(8, 125, 128), (6, 129, 168), (4, 169, 255)]


@pytest.mark.parametrize("kernel,block,choice,fragments", [
    (K64, 64, {"warps_per_scheduler": 5}, ("10 CTAs per SM", "out of reach", "125 registers", "at most 8 CTAs")),
    (K64, 64, {"ctas_per_sm": 7}, ("no register count gives 7 CTAs", "8 (125-128 registers), 6 (129-168 registers), "
                                    "4 (169-255 registers)")),
    (K64, 64, {"warps_per_scheduler": 1}, ("2 CTAs per SM",)),
    (K64, 64, {"regs": 100}, ("uses 125 registers", "only be raised")),
    (K64, 64, {"regs": 256}, ("at most 255",)),
    (K128, 256, {"warps_per_scheduler": 3}, ("12 warps per SM", "8-warp CTAs", "4 (2 CTAs), 2 (1 CTA)")),
    (K128, 256, {"ctas_per_sm": 3}, ("out of reach", "at most 2 CTAs")),
])
def test_impossible_requests_are_one_line_errors(kernel, block, choice, fragments):
    with pytest.raises(OccupancyError) as e:
        registers_for(kernel, block, CFG, **choice)
    msg = str(e.value)
    assert "\n" not in msg
    for f in fragments:
        assert f in msg, (f, msg)


def test_a_kernel_that_never_fits():
    with pytest.raises(SimulationError, match="does not fit"):
        occupancy(with_registers(K64, 255), 1024, CFG)  # 32 warps of 8192 registers: 8 warps fit


def test_more_registers_change_only_the_header():
    k = generate_kernel("sgemm_64", regs=168)
    assert k.reg_cnt == 168 and k.instructions == K64.instructions and k.name == K64.name
    a, b = generate("sgemm_64").splitlines(), generate("sgemm_64", regs=168).splitlines()
    diff = [(x, y) for x, y in zip(a, b) if x != y]
    assert len(a) == len(b) and diff == [("# RegCnt: 125", "# RegCnt: 168")]


@pytest.mark.parametrize("regs", [168, 255])
@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (70, 130, 72), (200, 72, 40), (128, 192, 128)])
def test_sgemm_64_with_more_registers_computes_c(regs, m, n, k):
    r = run_sgemm("sgemm_64", m, n, k, regs=regs)
    assert r.launch.kernel.reg_cnt == regs
    assert r.verified and r.untouched, (r.max_abs_error, r.max_error_ratio)
    assert np.allclose(r.C, r.reference, rtol=1e-4, atol=1e-4)


def test_the_timed_sm_holds_the_chosen_residency():
    out = run_workload("sgemm_64", cfg=CFG, m=256, n=256, k=64, occupancy={"regs": 168})
    assert out["verified"]
    assert (out["registers_per_thread"], out["resident_ctas_per_sm"], out["occupancy_limited_by"]) == (168, 6, "registers")
    assert out["warps_per_scheduler"] == 3 and out["sm_ctas"] == 6
    assert out["occupancy_limits"] == {"warps": 32, "ctas": 32, "registers": 6, "shared memory": 12}
    # 12 warps resident of 64 for most of the run: achieved occupancy just under 12 / 64
    assert 0.9 * 12 / 64 < out["timed_sm_profiler_metrics"]["achieved_occupancy"] <= 12 / 64
    four = run_workload("sgemm_64", cfg=CFG, m=256, n=256, k=64, occupancy={"warps_per_scheduler": 2})
    assert (four["registers_per_thread"], four["resident_ctas_per_sm"], four["sm_ctas"]) == (169, 4, 4)
    assert 0.9 * 8 / 64 < four["timed_sm_profiler_metrics"]["achieved_occupancy"] <= 8 / 64


def test_the_sm_never_holds_more_ctas_than_the_residency():
    from maxsim.timing.run import simulate
    from workloads.sgemm.predict import _builder
    params, mem, tex = _builder(256, 256, 32)(32)
    every = [(x, y) for y in range(4) for x in range(4)]
    for regs, resident in ((125, 8), (168, 6), (255, 4)):
        _, sm = simulate(generate_kernel("sgemm_64", regs=regs), (4, 4), 64, params, mem, tex, cfg=CFG,
                         ctas=every[:12], hazards=None)
        assert sm.max_ctas == resident and sm.peak_warps == 2 * resident
        assert sm.finished_ctas == 12
