"""The SGEMM main loop in time: one full wave of resident CTAs (4 warps per scheduler).

maxas's own issue accounting: 520 cycles per 512-FFMA loop iteration for sgemm_64, 518 for
sgemm_128 (memory ops, BAR and BRA dual-issued) [maxas-sgemm]. The model must reach a steady state
within 2% of those figures, with no control-code hazards, and must reproduce the two published
reuse facts: the swirl order with reuse loses (almost) nothing, and turning reuse off costs only a
few percent (maxas: "a couple hundred Gflops" of ~6100), not the ~25% that 16 exposed conflicts per
64 FFMAs would cost at one cycle each.
"""

import pytest

from maxsim.arch.config import load_config
from workloads.sgemm.harness import run_workload

CFG = load_config("gm204")


def _loop(name, **kw):
    out = run_workload(name, cfg=CFG, m=256, n=256, k=128, **kw)
    assert out["verified"]
    assert out["hazards"] == 0, out["hazard_messages"]
    return out["cycles_per_loop_iteration"], out


@pytest.mark.parametrize("name,issue_cycles", [("sgemm_64", 520), ("sgemm_128", 518)])
def test_loop_steady_state_within_2_percent(name, issue_cycles):
    loop, out = _loop(name)
    assert abs(loop - issue_cycles) / issue_cycles < 0.02, loop
    # 4 warps per scheduler: 16 warps resident (8 CTAs of 2 warps, or 2 CTAs of 8)
    assert out["sm_ctas"] == (8 if name == "sgemm_64" else 2)


def test_reuse_off_costs_a_few_percent_not_a_quarter():
    with_reuse, _ = _loop("sgemm_64")
    without, out = _loop("sgemm_64", reuse=False)
    assert out["reuse_hit_rate"] == 0.0
    loss = without / with_reuse - 1
    assert 0.005 < loss < 0.10, loss


def test_runs_are_deterministic():
    def figures():
        out = run_workload("sgemm_128", cfg=CFG, m=130, n=140, k=32)
        return {k: v for k, v in out.items() if "seconds" not in k and k != "warp_instructions_per_second"}
    assert figures() == figures()
