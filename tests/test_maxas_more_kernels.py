"""Kernels of our own written as the second public collection of maxas kernels writes them (half-
precision storage with fp32 arithmetic, direct convolution with VMAD index arithmetic and a table
in shared memory, predicates saved and restored with P2R / R2P, names sharing one register), each
against numpy, in time with control-code hazards as errors, with no static hazard, and in both
timing cores."""

from __future__ import annotations

import re

import numpy as np
import pytest

import maxsim
from maxsim.analysis import check_controls
from maxsim.asm import assemble_text
from workloads import kernels as library

KERNELS = ("hgemm_f16", "conv_direct_lut", "nbr8_p2r")


@pytest.mark.parametrize("name", KERNELS)
def test_assembles_with_no_hazard_and_uses_the_forms_it_is_written_for(name):
    src = library.source(name)
    asm = assemble_text(src, f"{name}.sass")
    assert asm.hazards == () and check_controls(asm.kernel) == [] and asm.notes == ()
    ops = {i.full_opcode for i in asm.kernel.instructions}
    want = {"hgemm_f16": {"F2F.F32.F16", "F2F.F16.F32", "LOP3.LUT", "LDG.E.CI", "STG.E", "LEA.HI.X"},
            "conv_direct_lut": {"VMAD.U16.U16", "STS", "LDS", "BAR.SYNC"},
            "nbr8_p2r": {"P2R", "R2P", "BFI"}}[name]
    assert want <= ops
    assert re.search(r"(?m)^\s*\d+ = \w+, \w+", src.split("</REGISTER_MAPPING>")[0]) or name == "conv_direct_lut"


def _hgemm(m, n, k, seed, **kw):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((m, k)) * 2).astype(np.float16)
    b = (rng.standard_normal((k, n)) * 2).astype(np.float16)
    r = maxsim.launch(library.path("hgemm_f16"), grid=(n // 128, m), block=64,
                      params={"a": "a", "b": "b", "c": "c", "n": n, "k": k},
                      buffers={"a": a.view(np.uint16), "b": b.view(np.uint16), "c": np.zeros((m, n), np.uint16)},
                      hazards="strict", predict=False, **kw)
    acc = np.zeros((m, n), np.float32)
    for j in range(k):  # the kernel's order: one FFMA per k (the fp32 product of two halves is exact)
        acc = (a[:, j:j + 1].astype(np.float64) * b[j:j + 1, :].astype(np.float64) + acc).astype(np.float32)
    return r, acc


@pytest.mark.parametrize("m,n,k", [(1, 128, 2), (3, 256, 10), (5, 384, 64)])
def test_hgemm_f16_matches_numpy_bit_for_bit(m, n, k):
    r, acc = _hgemm(m, n, k, seed=m * n + k)
    assert r.timing["hazards"] == 0
    np.testing.assert_array_equal(r.read("c"), acc.astype(np.float16).view(np.uint16))
    assert r.timing["sm_cycles"] > 0


def test_hgemm_f16_large_sums_round_to_half_and_overflow_to_infinity():
    r, acc = _hgemm(2, 128, 64, seed=5)
    big = maxsim.launch(library.path("hgemm_f16"), grid=(1, 1), block=64,
                        params={"a": "a", "b": "b", "c": "c", "n": 128, "k": 2},
                        buffers={"a": np.array([[60000.0, 60000.0]], np.float16).view(np.uint16),
                                 "b": np.full((2, 128), 2.0, np.float16).view(np.uint16),
                                 "c": np.zeros((1, 128), np.uint16)}, hazards="strict", predict=False)
    assert (big.read("c") == 0x7C00).all()  # 240000 is above the largest half: +inf (round to nearest)


def _conv_reference(x, f):
    C, H, W = x.shape
    P, Q = H - 2, W - 2
    acc = np.zeros((P, Q), np.float32)
    for c in range(C):  # the table's order: j = c * 9 + r * 3 + s
        for r in range(3):
            for s in range(3):
                acc = (x[c, r:r + P, s:s + Q].astype(np.float64) * np.float64(f[c, r, s]) + acc).astype(np.float32)
    return acc


@pytest.mark.parametrize("C,H,W", [(1, 3, 3), (3, 7, 140), (14, 4, 20)])
def test_conv_direct_lut_matches_numpy(C, H, W):
    rng = np.random.default_rng(C * 100 + H)
    x = rng.standard_normal((C, H, W)).astype(np.float32)
    f = rng.standard_normal((C, 3, 3)).astype(np.float32)
    P, Q = H - 2, W - 2
    r = maxsim.launch(library.path("conv_direct_lut"), grid=(-(-Q // 128), P), block=128,
                      params={"x": "x", "f": "f", "y": "y", "w": W, "hw": H * W, "q": Q, "crs": C * 9},
                      buffers={"x": x, "f": f, "y": np.zeros((P, Q), np.float32)}, hazards="strict", predict=False)
    assert r.timing["hazards"] == 0
    np.testing.assert_array_equal(r.read("y"), _conv_reference(x, f))


@pytest.mark.parametrize("n", [1, 5, 300])
def test_nbr8_p2r_matches_numpy(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    r = maxsim.launch(library.path("nbr8_p2r"), grid=-(-n // 128), block=128, params={"x": "x", "out": "out", "n": n},
                      buffers={"x": x, "out": np.zeros(n, np.float32)}, hazards="strict", predict=False)
    xp = np.concatenate([np.zeros(4, np.float32), x, np.zeros(4, np.float32)])
    acc = np.zeros(n, np.float32)
    for d in (-4, -3, -2, -1, 1, 2, 3, 4):
        acc = (acc + xp[4 + d:4 + d + n]).astype(np.float32)
    assert r.timing["hazards"] == 0
    np.testing.assert_array_equal(r.read("out"), acc)


@pytest.mark.parametrize("name", KERNELS)
def test_both_timing_cores_agree(name):
    """The three kernels through the reference timing core and the compiled one: identical
    figures (tests/test_core_parity.py's comparison), no hazard."""
    from maxsim.functional import GlobalMemory
    from test_core_parity import twin_simulate
    k = assemble_text(library.source(name), f"{name}.sass").kernel
    mem = GlobalMemory()
    rng = np.random.default_rng(0)
    if name == "hgemm_f16":
        a, b, c = (mem.alloc(2 * s) for s in (2 * 8, 8 * 128, 2 * 128))
        mem.write(a, rng.standard_normal(16).astype(np.float16).view(np.uint16))
        mem.write(b, rng.standard_normal(8 * 128).astype(np.float16).view(np.uint16))
        grid, block, params = (1, 2), 64, [a, b, c, 128, 8]
    elif name == "conv_direct_lut":
        x, f, y = mem.alloc(4 * 2 * 4 * 20), mem.alloc(4 * 18), mem.alloc(4 * 2 * 18)
        mem.write(x, rng.standard_normal(160).astype(np.float32))
        mem.write(f, rng.standard_normal(18).astype(np.float32))
        grid, block, params = (1, 2), 128, [x, f, y, 20, 80, 18, 18]
    else:
        x, out = mem.alloc(4 * 200), mem.alloc(4 * 200)
        mem.write(x, rng.standard_normal(200).astype(np.float32))
        grid, block, params = 2, 128, [x, out, 200]
    _, sm = twin_simulate(k, grid, block, params, mem, hazards="strict")
    assert sm.stats.to_dict()["hazards"] == 0


def test_hgemm_f16_relies_on_the_late_high_word_as_the_collection_does():
    """Without the rule (the high word read with the rest, 4 cycles after issue) the one written
    stall the kernel keeps, LEA.HI.X at 1 before the loop's first LDG.E, is the hazard both checks
    and the timing model report; with it none."""
    from maxsim.arch.config import load_config, override
    cfg = override(load_config(), {"latency.mem_operand_read_address_high": 0})
    asm = assemble_text(library.source("hgemm_f16"), "hgemm_f16.sass", cfg=cfg)
    assert [(h.kind, h.distance, h.required) for h in asm.hazards] == [("raw-alu", 1, 2)]
    assert "LDG.E.CI" in asm.hazards[0].message and "LEA.HI.X" in asm.hazards[0].message
    from maxsim.functional import GlobalMemory
    from maxsim.timing.run import simulate
    mem = GlobalMemory()
    a, b, c = mem.alloc(8), mem.alloc(4 * 256), mem.alloc(256)
    _, sm = simulate(asm.kernel, (1, 1), 64, [a, b, c, 128, 4], mem, cfg=cfg)
    assert len(sm.stats.hazards) == 2 and all("reads R7" in h for h in sm.stats.hazards)  # 2 warps
