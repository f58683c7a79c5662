"""The SGEMM generator: text round trip, register map, FFMA orders, main-loop accounting, controls."""

from collections import Counter
from itertools import product
from pathlib import Path

import numpy as np
import pytest

from maxsim.errors import LaunchError
from maxsim.functional import GlobalMemory, Texture1D
from maxsim.sass import format_kernel, parse_file, parse_text
from workloads.sgemm.controls import ControlError, Spec, assign_controls, issue_cycles, loop_bounds
from workloads.sgemm.generator import (KERNELS, REGMAPS, TRAVERSALS, c_register, ffma_order, generate,
                                       generate_kernel)

VARIANTS = list(product(KERNELS, TRAVERSALS, REGMAPS))
REF = Path("/work/ref/maxas")  # maxas's kernels, if a developer saved them there (never committed)


def loop(k):
    lo, hi = loop_bounds(k)
    return k.instructions[lo:hi + 1]


@pytest.mark.parametrize("reuse", [True, False])
@pytest.mark.parametrize("kernel,traversal,regmap", VARIANTS)
def test_text_parses_back_and_prints_the_same(kernel, traversal, regmap, reuse):
    text = generate(kernel, traversal, regmap, reuse)
    k = parse_text(text)
    assert format_kernel(k) == text
    assert k.name == f"{kernel}_{traversal}_{regmap}" + ("" if reuse else "_noreuse")
    assert [(p.ordinal, p.offset, p.size) for p in k.params] == [(n, 0x140 + 4 * n, 4) for n in range(9)]
    assert k.shared_size == {"sgemm_64": 8192, "sgemm_128": 16384}[kernel]
    assert k.ins_cnt == len(k.instructions) - 1 and k.instructions[-1].opcode == "EXIT"
    assert k.reg_cnt <= 128  # 4 warps per scheduler, as maxas's kernels
    assert any(i.reuse_mask for i in k.instructions) == reuse


def test_register_maps():
    maxas = {(i, j): c_register("maxas", i, j) for i in range(8) for j in range(8)}
    naive = {(i, j): c_register("naive", i, j) for i in range(8) for j in range(8)}
    assert sorted(maxas.values()) == list(range(64)) == sorted(naive.values())
    for (i, j), r in maxas.items():  # A fragment R64+i, B fragment R72+j: never C's bank
        assert r % 4 != (64 + i) % 4 and r % 4 != (72 + j) % 4
    assert all(r % 4 == (72 + j) % 4 for (i, j), r in naive.items())
    assert [maxas[i, 0] for i in range(4)] == [3, 7, 1, 5]  # maxas wiki: C column 0 is R3, R7, R1, R5
    with pytest.raises(LaunchError, match="register map"):
        c_register("random", 0, 0)


def test_ffma_orders():
    for t in TRAVERSALS:
        assert sorted(ffma_order(t)) == [(i, j) for i in range(8) for j in range(8)]
    assert ffma_order("raster")[:9] == [(0, j) for j in range(8)] + [(1, 0)]
    assert ffma_order("zigzag")[:9] == [(0, j) for j in range(7, -1, -1)] + [(1, 0)]
    assert ffma_order("swirl")[:8] == [(2, 0), (2, 1), (0, 1), (0, 0), (3, 0), (3, 1), (1, 1), (1, 0)]
    with pytest.raises(LaunchError, match="traversal"):
        ffma_order("spiral")


@pytest.mark.parametrize("kernel,traversal,regmap", VARIANTS)
def test_main_loop_accounting(kernel, traversal, regmap):
    body = loop(generate_kernel(kernel, traversal, regmap))
    small = kernel == "sgemm_128"
    counts = Counter(i.full_opcode for i in body)
    assert counts == Counter({
        "FFMA": 512, "LDS.U.128": 32, "TLD.B.LZ.P": 2 if small else 4, "STS.128": 2 if small else 4,
        "IADD": 2 if small else 4, "LOP.XOR": 3, "ISETP.LE.AND": 1, "BAR.SYNC": 1, "BRA": 1})
    # memory ops, BAR and BRA dual-issue with the ALU instruction before them (stall 0)
    for prev, cur in zip(body, body[1:]):
        if cur.unit in ("lds", "sts", "tex", "bar", "branch"):
            assert prev.control.stall == 0 and prev.unit == "alu", cur.full_opcode
        if prev.control.stall == 0:
            assert cur.unit in ("lds", "sts", "tex", "bar", "branch")
    # issue slots per iteration (maxas wiki "SGEMM": 520 for the 64-thread kernel, 518 for 128)
    assert issue_cycles(body) == (518 if small else 520)
    assert sum(i.control.stall for i in body) == issue_cycles(body) + 8  # + BAR and BRA (5 each)


@pytest.mark.parametrize("kernel", KERNELS)
def test_loop_control_codes(kernel):
    body = loop(generate_kernel(kernel))
    ffma = [i for i in body if i.opcode == "FFMA"]
    lds = [i for i in body if i.full_opcode == "LDS.U.128"]
    assert all(i.control.write_bar == 1 for i in lds)
    # each k step's first FFMA waits for its fragments (the last step's for the BAR, which waits)
    assert [f.control.wait for f in ffma[::64]] == [1] * 7 + [0]
    assert next(i for i in body if i.opcode == "BAR").control.wait == 1
    tld = [i for i in body if i.opcode == "TLD"]
    assert all(i.control.write_bar in (2, 3) and i.pred == 0 for i in tld)
    assert body[-1].control.yield_ and body[-1].control.stall == 5
    assert ffma[0].operands[1].reuse  # FFMA R1, R66.reuse, R72.reuse, R1


@pytest.mark.parametrize("kernel", KERNELS)
def test_yield_hint_on_ffma_32_of_every_step(kernel):
    """Both main loops carry maxas's yield hint on FFMA 32 of each k step (sgemm64.sass and the GM204
    sgemm128.sass); yields=False leaves those out and nothing else (the branch keeps its own)."""
    body = loop(generate_kernel(kernel))
    ffma = [i for i in body if i.opcode == "FFMA"]
    assert [p for p, i in enumerate(ffma) if i.control.yield_] == [64 * s + 32 for s in range(8)]
    plain = loop(generate_kernel(kernel, yields=False))
    assert not any(i.control.yield_ for i in plain if i.opcode == "FFMA") and plain[-1].control.yield_
    assert [(i.opcode, i.operands, i.control.stall, i.control.wait) for i in plain] == \
        [(i.opcode, i.operands, i.control.stall, i.control.wait) for i in body]
    assert generate(kernel, yields=False).startswith(f"# Kernel: {kernel}_swirl_maxas_noyield\n")


def test_swirl_loop_is_maxas_s_ffma_stream():
    """The FFMAs of our swirl/maxas loop, flags included, are those of maxas's kernels."""
    for kernel, name in (("sgemm_64", "sgemm_final_64.sass"), ("sgemm_128", "sgemm_final_128.sass")):
        if not (REF / name).exists():
            pytest.skip(f"maxas's {name} is not saved in {REF}")
        ours = [i for i in loop(generate_kernel(kernel)) if i.opcode == "FFMA"]
        theirs = [i for i in loop(parse_file(REF / name)) if i.opcode == "FFMA"]
        assert [i.operands for i in ours] == [i.operands for i in theirs]
        assert [(i.opcode, i.control.stall) for i in loop(generate_kernel(kernel))] == \
            [(i.opcode, i.control.stall) for i in loop(parse_file(REF / name))]


def test_unknown_kernel():
    with pytest.raises(LaunchError, match="sgemm_64"):
        generate("sgemm_32")


def _kernel(specs):
    return assign_controls(parse_text("# RegCnt: 64\n" + "\n".join(s.line() for s in specs) + "\n"), specs)


def test_scheduler_fills_stalls_waits_and_dual_issue():
    specs = [Spec("S2R R0, SR_TID.X", write_bar=1), Spec("IADD R1, R0, 0x1"), Spec("SHL R2, R1, 0x2"),
             Spec("ISETP.LT.AND P0, PT, R2, 0x40, PT"), Spec("MOV R3, R2", "@P0"),
             Spec("LDS R4, [R2]", write_bar=2), Spec("IADD R5, R4, R3"), Spec("EXIT")]
    k = _kernel(specs)
    c = [i.control for i in k.instructions]
    assert c[1].wait == 1  # reads the S2R result
    assert c[1].stall == 6  # ALU -> ALU
    assert c[3].stall == 13 and c[3].yield_  # ISETP -> predicated use; long stalls yield
    assert c[4].stall == 0  # MOV dual-issues with the LDS (its address R2 is ready)
    assert c[6].wait == 2 and c[7].stall == 5


def test_scheduler_rejects_fixed_controls_with_a_hazard():
    ok = [Spec("IADD R1, R0, 0x1", stall=6, wait=0), Spec("IADD R2, R1, 0x1", stall=5, wait=0), Spec("EXIT")]
    _kernel(ok)
    with pytest.raises(ControlError, match="reads R1 too early"):
        _kernel([Spec("IADD R1, R0, 0x1", stall=5, wait=0)] + ok[1:])
    with pytest.raises(ControlError, match="barrier"):
        _kernel([Spec("LDS R1, [R0]", write_bar=1, stall=2, wait=0), Spec("IADD R2, R1, 0x1", wait=0), Spec("EXIT")])
    with pytest.raises(ControlError, match="dual issue"):  # LDS cannot start a pair
        _kernel([Spec("LDS R1, [R0]", write_bar=1, stall=0, wait=0), Spec("IADD R2, R0, 0x1"),
                 Spec("EXIT", wait=1)])


@pytest.mark.parametrize("kernel,traversal,regmap", [("sgemm_64", "swirl", "maxas"), ("sgemm_128", "zigzag", "naive")])
def test_timing_model_finds_no_hazard(kernel, traversal, regmap):
    """End to end: the SM timing model's strict hazard check over a whole launch."""
    from maxsim.timing.run import simulate
    geo = KERNELS[kernel]
    n, kk = geo.tile, 24
    rng = np.random.default_rng(1)
    mem = GlobalMemory()
    c = mem.alloc(n * n * 4)
    tex = {1: Texture1D(rng.standard_normal(n * kk).astype(np.float32)),
           0: Texture1D(rng.standard_normal(n * kk).astype(np.float32))}
    res, sm = simulate(generate_kernel(kernel, traversal, regmap), (1, 1), geo.threads,
                       [c, n, n, kk, n, n, n, np.float32(1), 0], mem, tex, hazards="strict")
    assert sm.stats.hazards == []
    # K = 24 is three loop iterations: every warp issues the loop's (guarded) back branch three
    # times, taken twice and not taken at the end
    assert all(len(w.branch_times) == kk // 8 for w in sm.all_warps)
    assert res.warp_instructions > 512 * 3 * geo.threads // 32
