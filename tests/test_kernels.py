"""Small kernels written in maxas SASS, run functionally and checked against numpy."""

from __future__ import annotations

import re

import numpy as np
import pytest

from maxsim.functional import GlobalMemory, Texture1D, launch
from maxsim.sass import parse_text

from sasskit import header

# ---------------------------------------------------------------------------------------------
# vector add through two textures (border addressing: out-of-range texels read as 0)

VECADD_TEX = header("vecadd_tex", regs=32, nparams=1) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
--:-:2:-:1      S2R R1, SR_CTAID.X;
--:-:-:-:1      MOV32I R8, 0x80000001;
--:-:-:-:1      MOV32I R9, 0x80000000;
03:-:-:-:6      ISCADD R0, R1, R0, 0x6;
--:-:-:-:6      IADD R3, R0, -0x3;
--:-:1:-:1      TLD.B.LZ.P R12, R3, R8, 0x0, 1D, 0xf;
--:-:2:-:1      TLD.B.LZ.P R16, R3, R9, 0x0, 1D, 0xf;
--:-:-:-:6      SHL R2, R0, 0x4;
--:-:-:-:6      IADD R2, R2, c[0x0][0x140];
03:-:-:-:1      FADD R20, R12, R16;
--:-:-:-:1      FADD R21, R13, R17;
--:-:-:-:1      FFMA R22, R14, 1.0, R18;
--:-:-:-:6      FADD R23, R15, R19;
--:-:-:-:1      STG.CG [R2], R20;
--:-:-:-:1      STG.CG [R2+0x4], R21;
--:-:-:-:1      STG.CG [R2+0x8], R22;
--:-:-:-:1      STG.CG [R2+0xc], R23;
--:-:-:-:5      EXIT;
"""


def test_vector_add_through_textures_with_border():
    rng = np.random.default_rng(1)
    na, nb = 150, 155
    a = rng.standard_normal((na, 4)).astype(np.float32)
    b = rng.standard_normal((nb, 4)).astype(np.float32)
    grid, block = 4, 64
    n = grid * block
    mem = GlobalMemory()
    out = mem.alloc(16 * n)
    k = parse_text(VECADD_TEX, filename="vecadd_tex.sass")
    res = launch(k, grid, block, [out], mem, textures={1: Texture1D(a), 0: Texture1D(b)})
    got = mem.read(out, 4 * n).reshape(n, 4)
    exp = np.zeros((n, 4), np.float32)
    for i in range(n):
        c = i - 3
        ta = a[c] if 0 <= c < na else 0
        tb = b[c] if 0 <= c < nb else 0
        exp[i] = np.float32(ta) + np.float32(tb)
    assert np.array_equal(got, exp)
    assert (got[:3] == 0).all() and (got[nb + 3:] == 0).all()  # both sides of the border
    assert res.warp_instructions == 19 * n // 32
    assert res.opcode_counts["TLD.B.LZ.P"] == 2 * n // 32


def test_texture_fetch_of_fewer_channels():
    src = header("tex2", regs=16) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
--:-:-:-:1      MOV32I R1, 0x80000000;
--:-:-:-:1      MOV32I R4, 0x7;
--:-:-:-:1      MOV32I R5, 0x7;
--:-:-:-:1      MOV32I R6, 0x7;
01:-:1:-:1      TLD.B.LZ.P R4, R0, R1, 0x0, 1D, 0x3;
--:-:-:-:6      SHL R2, R0, 0x4;
01:-:-:-:1      STG.CG [R2+0x1000], R4;
--:-:-:-:1      STG.CG [R2+0x1004], R5;
--:-:-:-:1      STG.CG [R2+0x1008], R6;
--:-:-:-:5      EXIT;
"""
    tex = np.arange(32 * 4, dtype=np.float32).reshape(32, 4)
    mem = GlobalMemory()
    base = mem.alloc(16 * 32)
    assert base == 0x1000
    launch(parse_text(src), 1, 32, [], mem, textures={0: Texture1D(tex)})
    got = mem.read(base, 4 * 32).reshape(32, 4)
    assert np.array_equal(got[:, :2], tex[:, :2])  # channels x, y into R4, R5
    assert (got[:, 2].view(np.uint32) == 7).all()  # R6 untouched


# ---------------------------------------------------------------------------------------------
# shared-memory transpose across 8 warps, with the warps reaching the barrier at different times

TRANSPOSE = header("transpose16", regs=16, shared=1024, bar=1, nparams=2) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
--:-:2:-:1      S2R R1, SR_CTAID.X;
--:-:3:-:1      S2R R2, SR_CTAID.Y;
07:-:-:-:6      XMAD R1, R2, c[0x0][0x14], R1;
--:-:-:-:6      ISCADD R3, R1, R0, 0x8;
--:-:-:-:6      SHL R3, R3, 0x2;
--:-:-:-:6      IADD R4, R3, c[0x0][0x140];
--:-:1:-:1      LDG R5, [R4];
--:-:-:-:1      SHR.U32 R6, R0, 0x4;
--:-:-:-:1      LOP.AND R7, R0, 0xf;
--:-:-:-:6      ISCADD R8, R7, R6, 0x4;
--:-:-:-:6      SHL R8, R8, 0x2;
--:-:-:-:6      BFE.U32 R9, R0, 0x105;
--:-:-:-:6      ISETP.EQ.AND P0, PT, R9, RZ, PT;
--:-:-:-:5  @P0 BRA FAST;
--:-:-:-:1      MOV R10, RZ;
SPIN:
--:-:-:-:6      IADD R10, R10, 0x1;
--:-:-:-:6      ISETP.LT.AND P1, PT, R10, 0x20, PT;
--:-:-:-:5  @P1 BRA SPIN;
01:-:-:-:1      STS [R8], R5;
--:-:-:-:5      BAR.SYNC 0x0;
--:-:-:-:5      BRA READ;
FAST:
01:-:-:-:1      STS [R8], R5;
--:-:-:-:5      BAR.SYNC 0x0;
READ:
--:-:-:-:6      SHL R11, R0, 0x2;
--:-:1:-:1      LDS R12, [R11];
--:-:-:-:6      IADD R4, R3, c[0x0][0x144];
01:-:-:-:1      STG.CG [R4], R12;
--:-:-:-:5      EXIT;
"""


def test_shared_memory_transpose_with_bar_sync_across_warps():
    gx, gy = 2, 3
    ntiles = gx * gy
    rng = np.random.default_rng(2)
    tiles = rng.integers(0, 1 << 32, size=(ntiles, 16, 16), dtype=np.uint64).astype(np.uint32)
    mem = GlobalMemory()
    src = mem.alloc(tiles.nbytes)
    dst = mem.alloc(tiles.nbytes)
    mem.write(src, tiles)
    k = parse_text(TRANSPOSE, filename="transpose.sass")
    res = launch(k, (gx, gy), 256, [src, dst], mem)
    got = mem.read(dst, tiles.size, np.uint32).reshape(ntiles, 16, 16)
    assert np.array_equal(got, tiles.transpose(0, 2, 1))
    # even warps take the branch to the fast path (and, as the taken side, run first: without a
    # working barrier they would read the tile before the odd warps, spinning, have stored it);
    # odd warps spin 32 times
    spin = k.label_map["SPIN"]
    assert res.per_instruction[spin] == ntiles * 4 * 32
    bars = [i.index for i in k.instructions if i.opcode == "BAR"]
    assert [res.per_instruction[b] for b in bars] == [ntiles * 4, ntiles * 4]


VEC_SHARED = header("vec_shared", regs=16, shared=2048, bar=1, nparams=1) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      SHL R1, R0, 0x4;
--:-:-:-:1      MOV R4, R0;
--:-:-:-:1      IADD R5, R0, 0x1000;
--:-:-:-:1      IADD R6, R0, 0x2000;
--:-:-:-:6      IADD R7, R0, 0x3000;
--:-:-:-:1      STS.128 [R1], R4;
--:-:-:-:5      BAR.SYNC 0x0;
--:-:-:-:6      IADD R2, R0, 0x20;
--:-:-:-:6      LOP.AND R2, R2, 0x7f;
--:-:-:-:6      SHL R2, R2, 0x4;
--:-:1:-:1      LDS.U.128 R8, [R2];
--:-:-:-:6      IADD R3, R1, c[0x0][0x140];
01:-:-:-:1      STG.CG [R3], R8;
--:-:-:-:1      STG.CG [R3+0x4], R9;
--:-:-:-:1      STG.CG [R3+0x8], R10;
--:-:-:-:1      STG.CG [R3+0xc], R11;
--:-:-:-:5      BAR.SYNC 0x0;
--:-:-:-:1      STS.128 [R1], RZ;
--:-:-:-:5      BAR.SYNC 0x0;
--:-:1:-:1      LDS R12, [R2+0x4];
--:-:-:-:6      IADD R3, R3, 0x800;
01:-:-:-:1      STG.CG [R3], R12;
--:-:-:-:5      EXIT;
"""


def test_vector_shared_loads_and_stores_between_warps():
    mem = GlobalMemory()
    out = mem.alloc(128 * 16 + 0x800 + 4 * 128 * 4)
    launch(parse_text(VEC_SHARED), 1, 128, [out], mem)
    got = mem.read(out, 128 * 4, np.uint32).reshape(128, 4)
    src = (np.arange(128) + 0x20) % 128
    assert np.array_equal(got, np.stack([src, src + 0x1000, src + 0x2000, src + 0x3000], axis=1))
    zeros = mem.read(out + 0x800, 128 * 4, np.uint32).reshape(128, 4)[:, 0]
    assert (zeros == 0).all()  # STS.128 of RZ stored zeros


# ---------------------------------------------------------------------------------------------
# a loop with a back branch (trip count differs per warp: groups split and run apart)

LOOP = header("loop", regs=16, nparams=2) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      SHR.U32 R1, R0, 0x5;
--:-:-:-:6      XMAD R2, R1, 0x3, RZ;
--:-:-:-:6      IADD R2, R2, c[0x0][0x140];
--:-:-:-:1      MOV R3, RZ;
--:-:-:-:1      MOV R4, RZ;
--:-:-:-:6      MOV R5, RZ;
LOOP:
--:-:-:-:6      IADD R3, R3, R4;
--:-:-:-:6      IADD R4, R4, 0x1;
--:-:-:-:1      IADD R5, R5, 0x1;
--:-:-:-:d      ISETP.LT.AND P0, PT, R4, R2, PT;
--:-:-:Y:5  @P0 BRA LOOP;
--:-:-:-:6      SHL R6, R0, 0x3;
--:-:-:-:6      IADD R6, R6, c[0x0][0x144];
--:-:-:-:1      STG.CG [R6], R3;
--:-:-:-:1      STG.CG [R6+0x4], R5;
--:-:-:-:5      EXIT;
"""


@pytest.mark.parametrize("n0", [1, 5, 40])
def test_loop_with_back_branch(n0):
    block = 128
    mem = GlobalMemory()
    out = mem.alloc(8 * block)
    k = parse_text(LOOP)
    res = launch(k, 1, block, [n0, out], mem)
    got = mem.read(out, 2 * block, np.uint32).reshape(block, 2)
    n = n0 + 3 * (np.arange(block) // 32)
    assert np.array_equal(got[:, 0], n * (n - 1) // 2)
    assert np.array_equal(got[:, 1], n)
    loop = k.label_map["LOOP"]
    trips = int(sum(n0 + 3 * w for w in range(4)))
    assert res.per_instruction[loop] == trips
    assert res.per_instruction[loop - 1] == 4
    assert res.opcode_counts["BRA"] == trips


# ---------------------------------------------------------------------------------------------
# subroutines: CAL / RET, called from several places and nested

CALL = header("call", regs=16, nparams=1) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      MOV R4, R0;
--:-:-:-:5      CAL TRIPLE1;
--:-:-:-:6      MOV R6, R5;
--:-:-:-:6      MOV R4, R5;
--:-:-:-:5      CAL TRIPLE1;
--:-:-:-:6      MOV R7, R5;
--:-:-:-:5      CAL TWICE;
--:-:-:-:6      SHL R1, R0, 0x4;
--:-:-:-:6      IADD R1, R1, c[0x0][0x140];
--:-:-:-:1      STG.CG [R1], R6;
--:-:-:-:1      STG.CG [R1+0x4], R7;
--:-:-:-:1      STG.CG [R1+0x8], R5;
--:-:-:-:5      EXIT;
TRIPLE1:
--:-:-:-:6      ISCADD R5, R4, R4, 0x1;
--:-:-:-:6      IADD R5, R5, 0x1;
--:-:-:-:5      RET;
TWICE:
--:-:-:-:6      MOV R4, R0;
--:-:-:-:5      CAL TRIPLE1;
--:-:-:-:6      MOV R4, R5;
--:-:-:-:5      CAL TRIPLE1;
--:-:-:-:5      RET;
"""


def test_subroutine_called_with_cal_and_ret():
    block = 64
    mem = GlobalMemory()
    out = mem.alloc(16 * block)
    k = parse_text(CALL)
    res = launch(k, 1, block, [out], mem)
    got = mem.read(out, 4 * block, np.uint32).reshape(block, 4)
    t = np.arange(block)
    f1 = 3 * t + 1
    f2 = 3 * f1 + 1
    assert np.array_equal(got[:, 0], f1)
    assert np.array_equal(got[:, 1], f2)
    assert np.array_equal(got[:, 2], f2)  # nested call: TWICE calls TRIPLE1 twice
    assert res.opcode_counts["CAL"] == 5 * 2 and res.opcode_counts["RET"] == 5 * 2


def test_bar_sync_inside_a_subroutine_called_from_two_places():
    # warp 0 calls from site A, warp 1 from site B; after the barrier each must return home
    src = header("bar_in_sub", regs=8, shared=4, bar=1, nparams=1) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      SHL R1, R0, 0x2;
--:-:-:-:6      IADD R1, R1, c[0x0][0x140];
--:-:-:-:d      ISETP.GE.AND P0, PT, R0, 0x20, PT;
--:-:-:-:5  @P0 BRA SITEB;
--:-:-:-:5      CAL SUB;
--:-:-:-:1      MOV32I R2, 0xa;
--:-:-:-:1      STG.CG [R1], R2;
--:-:-:-:5      EXIT;
SITEB:
--:-:-:-:5      CAL SUB;
--:-:-:-:1      MOV32I R2, 0xb;
--:-:-:-:1      STG.CG [R1], R2;
--:-:-:-:5      EXIT;
SUB:
--:-:-:-:5      BAR.SYNC 0x0;
--:-:-:-:5      RET;
"""
    mem = GlobalMemory()
    out = mem.alloc(4 * 64)
    launch(parse_text(src), 1, 64, [out], mem)
    assert list(mem.read(out, 64, np.uint32)) == [0xA] * 32 + [0xB] * 32


def test_guarded_bar_sync_does_not_stop_warps_whose_guard_is_false():
    src = header("guarded_bar", regs=8, bar=2, nparams=1) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:d      ISETP.GE.AND P0, PT, R0, 0x20, PT;
--:-:-:-:5  @P0 BRA B;
--:-:-:-:5      BAR.SYNC 0x0;
--:-:-:-:5      BRA OUT;
B:
--:-:-:-:5 @!P0 BAR.SYNC 0x1;
--:-:-:-:5      BAR.SYNC 0x0;
OUT:
--:-:-:-:6      SHL R1, R0, 0x2;
--:-:-:-:6      IADD R1, R1, c[0x0][0x140];
--:-:-:-:1      STG.CG [R1], R0;
--:-:-:-:5      EXIT;
"""
    mem = GlobalMemory()
    out = mem.alloc(4 * 64)
    launch(parse_text(src), 1, 64, [out], mem)
    assert list(mem.read(out, 64, np.uint32)) == list(range(64))


def test_a_warp_that_exits_does_not_hold_up_a_barrier():
    # the modelled rule (launch._release_barriers): a barrier completes when every warp of the CTA
    # that has not exited has arrived
    src = header("exit_then_bar", regs=8, bar=1, nparams=1) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:d      ISETP.GE.AND P0, PT, R0, 0x40, PT;
--:-:-:-:5  @P0 EXIT;
--:-:-:-:5      BAR.SYNC 0x0;
--:-:-:-:6      SHL R1, R0, 0x2;
--:-:-:-:6      IADD R1, R1, c[0x0][0x140];
--:-:-:-:1      STG.CG [R1], R0;
--:-:-:-:5      EXIT;
"""
    mem = GlobalMemory()
    out = mem.alloc(4 * 128)
    mem.write(out, np.full(128, 0xFFFFFFFF, np.uint32))
    res = launch(parse_text(src), 1, 128, [out], mem)
    got = mem.read(out, 128, np.uint32)
    assert list(got[:64]) == list(range(64)) and (got[64:] == 0xFFFFFFFF).all()
    assert res.per_instruction[3] == 2  # two warps reached the barrier


def test_partial_exit_within_a_warp_and_partial_last_warp():
    src = header("partial_exit", regs=8, nparams=1) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:d      LOP.AND R2, R0, 0x1;
--:-:-:-:d      ISETP.NE.AND P0, PT, R2, RZ, PT;
--:-:-:-:5  @P0 EXIT;
--:-:-:-:6      SHL R1, R0, 0x2;
--:-:-:-:6      IADD R1, R1, c[0x0][0x140];
--:-:-:-:1      STG.CG [R1], R0;
--:-:-:-:5      EXIT;
"""
    block = 50  # the second warp has 18 threads
    mem = GlobalMemory()
    out = mem.alloc(4 * 64)
    mem.write(out, np.full(64, 0xFFFFFFFF, np.uint32))
    res = launch(parse_text(src), 1, block, [out], mem)
    got = mem.read(out, 64, np.uint32)
    exp = [i if (i < block and i % 2 == 0) else 0xFFFFFFFF for i in range(64)]
    assert list(got) == exp
    assert res.warp_instructions == 2 * 8
    # the guarded EXIT counts the lanes it ends; then half the lanes run the 4 remaining
    assert res.thread_instructions == 3 * block + block // 2 + 4 * (block // 2)


def test_many_ctas_in_a_2d_grid_across_execution_batches():
    # more lanes than one execution batch (functional.launch.BATCH_LANES): CTA ids must stay right
    src = header("ids", regs=8, nparams=1) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
--:-:2:-:1      S2R R1, SR_CTAID.X;
--:-:3:-:1      S2R R2, SR_CTAID.Y;
07:-:-:-:6      XMAD R3, R2, c[0x0][0x14], R1;
--:-:-:-:6      ISCADD R4, R3, R0, 0x7;
--:-:-:-:6      SHL R4, R4, 0x2;
--:-:-:-:6      IADD R4, R4, c[0x0][0x140];
--:-:-:-:1      ISCADD R5, R2, R1, 0x10;
--:-:-:-:1      STG.CG [R4], R5;
--:-:-:-:5      EXIT;
"""
    gx, gy, block = 40, 17, 128
    mem = GlobalMemory()
    out = mem.alloc(4 * gx * gy * block)
    res = launch(parse_text(src), (gx, gy), block, [out], mem)
    got = mem.read(out, gx * gy * block, np.uint32).reshape(gy, gx, block)
    y, x = np.meshgrid(np.arange(gy), np.arange(gx), indexing="ij")
    assert np.array_equal(got, np.broadcast_to(((y << 16) | x)[:, :, None], got.shape))
    assert res.warp_instructions == 10 * gx * gy * block // 32


def test_geometry_constants_and_parameters():
    src = header("geom", regs=8, nparams=3) + """\
--:-:-:-:1      MOV R0, c[0x0][0x8];
--:-:-:-:1      MOV R1, c[0x0][0x14];
--:-:-:-:1      MOV R2, c[0x0][0x18];
--:-:-:-:1      MOV R3, c[0x0][0x144];
--:-:-:-:1      MOV R4, c[0x0][0x148];
--:-:-:-:1      MOV R5, c[0x0][0x140];
--:-:-:-:1      STG.CG [R5], R0;
--:-:-:-:1      STG.CG [R5+0x4], R1;
--:-:-:-:1      STG.CG [R5+0x8], R2;
--:-:-:-:1      STG.CG [R5+0xc], R3;
--:-:-:-:1      STG.CG [R5+0x10], R4;
--:-:-:-:5      EXIT;
"""
    mem = GlobalMemory()
    out = mem.alloc(20)
    launch(parse_text(src), (3, 2), 96, [out, -5, 1.5], mem, ctas=[(2, 1)])
    got = mem.read(out, 5, np.uint32)
    assert list(got[:4]) == [96, 3, 2, 0xFFFFFFFB]
    assert got[4:].view(np.float32)[0] == 1.5


@pytest.mark.parametrize("shared,nbytes", [(0, 0), (4, 4), (8, 16)])
def test_predicated_off_loads_touch_no_memory(shared, nbytes):
    # lanes that do not load must not be looked up anywhere, even when no memory could hold them
    src = header("noload", regs=16, shared=shared) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:d      ISETP.GE.AND P0, PT, R0, 0x100, PT;
--:-:1:-:1  @P0 LDG R4, [RZ];
--:-:1:-:1  @P0 LDG.128 R4, [RZ+0x1000];
--:-:1:-:1  @P0 LDS.U.128 R8, [RZ];
--:-:1:-:1  @P0 LDS.64 R8, [RZ];
--:-:1:-:1 @!PT TLD.B.LZ.P R12, R0, R0, 0x0, 1D, 0xf;
--:-:-:-:5      EXIT;
"""
    mem = GlobalMemory()
    if nbytes:
        mem.alloc(nbytes)
    launch(parse_text(src), 1, 64, [], mem)


# =============================================================================================
# The kernel library (workloads/kernels/*.sass): kernels of our own in the maxas source language,
# each assembled by maxsim with no control-code hazard, checked against numpy for several shapes
# and run through the timing model (hazards strict) with a figure counted by hand.

import attrs

from maxsim.analysis import check_controls
from maxsim.arch.config import load_config
from maxsim.asm import assemble_text
from maxsim.sass import format_kernel
from maxsim.timing.memory_system import MemorySystem
from maxsim.timing.run import simulate
from workloads import kernels as library

LIBRARY = ("transpose", "conv3x3", "stencil5_tex", "pointer_chase", "scan_tile", "gcd_divergent",
           "reduce_shfl", "histogram_atoms", "colsum", "conv1d8", "hgemm_f16", "conv_direct_lut", "nbr8_p2r")


def assemble_library(name, **constants):
    """Assemble a library kernel, optionally with other values for ``<CONSTANT_MAPPING>`` names
    (``stride=32``); the result must carry no control-code hazard."""
    src = library.source(name)
    for key, value in constants.items():
        src, n = re.subn(rf"(?m)^(\s*{key}\s*:\s*)\S+", rf"\g<1>{value}", src)
        assert n == 1, f"{name}: no constant {key}"
    asm = assemble_text(src, f"{name}.sass")
    assert asm.hazards == () and check_controls(asm.kernel) == []
    return asm.kernel


def timed(kernel, grid, block, params, memory, textures=None, **kw):
    """Run a kernel functionally and on one SM in time, control-code hazards as errors."""
    return simulate(kernel, grid, block, params, memory=memory, textures=textures, hazards="strict", **kw)


def fma_chain(terms):
    """fp32 reference of ``FMUL acc, x0, w0`` then ``FFMA acc, xk, wk, acc`` for the pairs
    ``terms`` in order. The product of two fp32 numbers is exact in float64 and the float64 sum
    is rounded once more to fp32: the same as the FFMA's single rounding except in the
    (probability ~2^-29) case of a float64 tie, so the kernels must match it exactly."""
    (x0, w0), rest = terms[0], terms[1:]
    acc = (x0 * np.float32(w0)).astype(np.float32)
    for x, w in rest:
        acc = (x.astype(np.float64) * np.float64(np.float32(w)) + acc).astype(np.float32)
    return acc


@pytest.mark.parametrize("name", LIBRARY)
def test_library_kernel_is_source_with_named_registers_and_scheduled_blocks(name):
    src = library.source(name)
    lines = src.splitlines()
    assert lines[0] == f"# Kernel: {name}"
    assert "<REGISTER_MAPPING>" in src and "<CONSTANT_MAPPING>" in src
    assert "Launch:" in src  # the header comment gives the launch shape
    asm = assemble_text(src, f"{name}.sass")
    assert asm.hazards == () and check_controls(asm.kernel) == []
    assert len(asm.registers) >= 3 and not re.search(r"\bR\d+\b", src.split("</REGISTER_MAPPING>")[1])
    if name != "pointer_chase":  # a loop of dependent loads: nothing to schedule
        assert "<SCHEDULE_BLOCK>" in src
    # the final text reads back as the same kernel
    assert format_kernel(parse_text(asm.text, filename=f"{name}_final.sass")) == asm.text


# ---- transpose through shared memory --------------------------------------------------------

def _transpose(kernel, rows, cols, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2 ** 32, (rows, cols), dtype=np.uint64).astype(np.uint32)
    m = GlobalMemory()
    pi, po = m.alloc(x.nbytes), m.alloc(x.nbytes)
    m.write(pi, x)
    res, sm = timed(kernel, (cols // 32, rows // 32), 256, (pi, po, rows, cols), m)
    assert np.array_equal(m.read(po, rows * cols, np.uint32).reshape(cols, rows), x.T)
    return sm.stats


@pytest.mark.parametrize("rows,cols", [(32, 32), (64, 96), (96, 32)])
def test_transpose_matches_numpy_without_bank_conflicts(rows, cols):
    st = _transpose(assemble_library("transpose"), rows, cols)
    ctas = rows * cols // 1024
    # per CTA 8 warps x (4 STS + 4 LDS); a tile row 33 words apart: every request one wavefront
    assert st.shared_requests == ctas * 64
    assert st.shared_wavefronts == st.shared_requests


def test_transpose_without_padding_pays_32_way_conflicts_on_the_column_reads():
    rows, cols = 64, 96
    padded = _transpose(assemble_library("transpose"), rows, cols)
    plain = _transpose(assemble_library("transpose", stride=32), rows, cols)
    ctas = rows * cols // 1024
    # stride 32: the 32 lanes of a column read all hit bank ty -> 32 wavefronts, 31 more than one,
    # for each of the 4 LDS of the 8 warps of a CTA; the row-wise STS stay conflict-free
    assert plain.shared_wavefronts - plain.shared_requests == ctas * 8 * 4 * 31
    assert padded.shared_wavefronts == padded.shared_requests
    # the 5952 extra bank cycles go through the SM's one shared-memory pipeline
    assert plain.cycles - padded.cycles >= ctas * 8 * 4 * 31 // 2


# ---- 3 x 3 convolution -----------------------------------------------------------------------

def _conv(kernel, hout, wout, seed=0):
    rng = np.random.default_rng(seed)
    img = rng.standard_normal((hout + 2, wout + 2)).astype(np.float32)
    w = rng.standard_normal(9).astype(np.float32)
    ref = fma_chain([(img[dy:dy + hout, dx:dx + wout], w[3 * dy + dx]) for dy in range(3) for dx in range(3)])
    m = GlobalMemory()
    pi, po = m.alloc(img.nbytes), m.alloc(4 * hout * wout)
    m.write(pi, img)
    res, sm = timed(kernel, (wout // 16, hout // 16), 256, [pi, po, wout + 2, wout] + [np.float32(v) for v in w], m)
    got = m.read(po, hout * wout).reshape(hout, wout)
    assert np.array_equal(got, ref)
    # a check of the reference itself: float64 convolution within fp32 rounding
    ref64 = sum(img[dy:dy + hout, dx:dx + wout].astype(np.float64) * w[3 * dy + dx]
                for dy in range(3) for dx in range(3))
    assert np.allclose(got, ref64, rtol=0, atol=1e-5 * np.abs(img).max() * np.abs(w).sum())
    return res, sm.stats


@pytest.mark.parametrize("hout,wout", [(16, 16), (32, 48), (48, 16)])
def test_conv3x3_matches_numpy_without_bank_conflicts(hout, wout):
    res, st = _conv(assemble_library("conv3x3"), hout, wout)
    ctas = hout * wout // 256
    assert st.shared_wavefronts == st.shared_requests  # pitch 48 = 16 mod 32: the two rows of a warp apart
    assert res.opcode_counts["FFMA"] == ctas * 8 * 8 and res.opcode_counts["FMUL"] == ctas * 8
    assert st.flops == ctas * 256 * (8 * 2 + 1)


def test_conv3x3_with_a_pitch_of_18_has_two_way_conflicts_counted_by_hand():
    _, st = _conv(assemble_library("conv3x3", pitch=18), 16, 16)
    # a warp covers tile rows 2w, 2w+1 (16 lanes each): words a..a+15 and a+18..a+33; a+32, a+33
    # share banks with a, a+1 -> 2 wavefronts for the 9 window LDS and the tile STS of each of the
    # 8 warps, and for the bottom-halo STS of warp 0 (rows 16, 17); the right-halo and corner
    # STS (lanes tx < 2) stay at one
    assert st.shared_wavefronts - st.shared_requests == 8 * 10 + 1


# ---- texture-fed stencil ---------------------------------------------------------------------

@pytest.mark.parametrize("n", [100, 256, 300])
def test_stencil5_tex_matches_numpy_and_the_texture_cache_serves_the_overlap(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    w = rng.standard_normal(5).astype(np.float32)
    xp = np.zeros((n + 4, 4), np.float32)
    xp[2:n + 2] = x  # border addressing: texels -2, -1, n, n+1 read as 0
    ref = fma_chain([(xp[j:j + n], w[j]) for j in range(5)])
    m = GlobalMemory()
    po = m.alloc(16 * n)
    k = assemble_library("stencil5_tex")
    ctas = (n + 127) // 128
    res, sm = timed(k, ctas, 128, [po, n] + [np.float32(v) for v in w], m, textures={0: Texture1D(x)})
    assert np.array_equal(m.read(po, 4 * n).reshape(n, 4), ref)
    st = sm.stats
    # by hand: each warp's fetch at offset d touches the 32-byte sectors (2 texels each) of its
    # texels i+d that lie inside the texture; a fetch with no texel inside (border only) goes
    # nowhere
    sectors = requests = 0
    for wp in range(ctas * 4):
        i = np.arange(32 * wp, 32 * wp + 32)
        for d in range(-2, 3):
            c = i + d
            inside = np.unique(c[(c >= 0) & (c < n)] // 2).size
            sectors += inside
            requests += inside > 0
    assert st.tex_requests == requests and st.tex_sectors == sectors
    # the texture (16 n bytes) fits in the 24 KB L1: each sector comes from the L2 once
    assert st.tex_sectors - st.tex_hits == n // 2


# ---- pointer chase ---------------------------------------------------------------------------

def _chase(hops, warm, cfg, nodes=256, stride=128, seed=1):
    rng = np.random.default_rng(seed)
    m = GlobalMemory()
    base, out = m.alloc(nodes * stride), m.alloc(4)
    addr = base + rng.permutation(nodes) * stride  # one node per 128 bytes, in random order
    words = np.zeros(nodes * stride // 4, np.uint32)
    words[(addr - base) // 4] = np.roll(addr, -1)
    m.write(base, words)
    ms = MemorySystem(cfg)
    if warm:
        ms.warm([int(a) for a in addr])
    k = assemble_library("pointer_chase")
    res, sm = timed(k, 1, 1, (int(addr[0]), hops, out), m, cfg=cfg, memory_system=ms)
    assert m.read(out, 1, np.uint32)[0] == addr[hops % nodes]
    return sm.stats.cycles


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("latencies", [None, (250, 500)])
def test_pointer_chase_measures_the_configured_latency_per_hop(warm, latencies):
    cfg = load_config()
    if latencies is not None:
        cfg = attrs.evolve(cfg, latency=attrs.evolve(cfg.latency, l2_hit=latencies[0], dram=latencies[1]))
    per_hop = (_chase(128, warm, cfg) - _chase(64, warm, cfg)) / 64
    # by hand: each LDG waits on the barrier of the one before and issues the cycle its result is
    # written, `latency` cycles after that load issued; the loop's other instructions (IADD, ISETP,
    # the 8 + 5 stall cycles of the last LDG and the BRA) fit under the wait. So a hop costs the
    # latency exactly: the L2 hit on a chain already in the L2, DRAM on a cold one (every node its
    # own sector, 256 nodes cycled through once in 128 hops: all misses).
    assert per_hop == (cfg.latency.l2_hit if warm else cfg.latency.dram)


# ---- tiled prefix scan -----------------------------------------------------------------------

def _scan(n, x):
    tiles = (n + 511) // 512
    m = GlobalMemory()
    pi, po, pt = m.alloc(4 * n), m.alloc(4 * n), m.alloc(4 * tiles)
    m.write(pi, x)
    res, sm = timed(assemble_library("scan_tile"), tiles, 128, (pi, po, pt, n), m)
    return m.read(po, n, np.uint32), m.read(pt, tiles, np.uint32), res, sm.stats


@pytest.mark.parametrize("n", [512, 1000, 2060])
def test_scan_tile_matches_numpy_and_composes_to_the_whole_scan(n):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    out, totals, res, st = _scan(n, x)
    tiles = totals.size
    xp = np.zeros(tiles * 512, np.uint64)
    xp[:n] = x
    ref = np.cumsum(xp.reshape(tiles, 512), axis=1) % 2 ** 32
    assert np.array_equal(out, ref.reshape(-1)[:n].astype(np.uint32))
    assert np.array_equal(totals, ref[:, -1].astype(np.uint32))
    # the second pass: the same kernel scans the tile totals; tile c then adds the scan up to c-1
    scanned, _, _, _ = _scan(4 * ((tiles + 3) // 4), np.pad(totals, (0, -tiles % 4)))
    offsets = np.concatenate([[0], scanned[:tiles - 1]]).astype(np.uint32)
    whole = out + np.repeat(offsets, 512)[:n]
    assert np.array_equal(whole, (np.cumsum(x.astype(np.uint64)) % 2 ** 32).astype(np.uint32))
    # shared requests by hand, per CTA: 4 warps x 8 STS, and the LDS of the 7 steps except those
    # of warps whose lanes are all below the step (warp 0 at steps 32 and 64, warp 1 at 64): 25
    assert st.shared_requests == tiles * (32 + 25) and st.shared_wavefronts == st.shared_requests
    assert res.opcode_counts["BAR.SYNC"] == tiles * 4 * 15


# ---- a divergent kernel: Euclid's subtraction GCD (PBK/BRK loop, SSY/SYNC if/else) -----------

def _euclid(a, b):
    """(gcd, the x > y choice of each pass) of Euclid's subtraction form."""
    sides = []
    while a != b:
        sides.append(a > b)
        if a > b:
            a -= b
        else:
            b -= a
    return a, sides


def _gcd_run(a, b):
    n = len(a)
    m = GlobalMemory()
    pa, pb, pg, ps = (m.alloc(4 * n) for _ in range(4))
    m.write(pa, np.asarray(a, np.uint32))
    m.write(pb, np.asarray(b, np.uint32))
    res, sm = timed(assemble_library("gcd_divergent"), (n + 127) // 128, 128, (pa, pb, pg, ps, n), m)
    return m.read(pg, n, np.uint32), m.read(ps, n, np.uint32), res, sm.stats


def _loop_issues(lanes):
    """Warp instructions one warp issues in the loop, counted by hand: each pass k that any lane
    reaches issues ISETP + BRK; if a lane goes on, ISETP + SSY + BRA, then IADD + SYNC for each
    side of the if/else some lane takes (both when they disagree), then IADD + BRA."""
    most = max(len(s) for s in lanes)
    count = 0
    for k in range(most + 1):
        count += 2
        on = [s[k] for s in lanes if len(s) > k]
        if on:
            count += 3 + 2 * len(set(on)) + 2
    return count


@pytest.mark.parametrize("n,top", [(64, 40), (200, 60), (300, 25)])
def test_gcd_divergent_matches_python_and_issues_every_serialised_path(n, top):
    rng = np.random.default_rng(n)
    a, b = rng.integers(1, top, n), rng.integers(1, top, n)
    g, steps, res, st = _gcd_run(a, b)
    ref = [_euclid(int(x), int(y)) for x, y in zip(a, b)]
    assert g.tolist() == [r[0] for r in ref] and steps.tolist() == [len(r[1]) for r in ref]
    # against the same launch with a == b (one pass of ISETP + BRK per warp): the extra warp
    # instructions are the loop passes counted by hand per warp
    _, _, base, _ = _gcd_run(np.ones(n), np.ones(n))
    extra = sum(_loop_issues([r[1] for r in ref[w:w + 32]]) - 2 for w in range(0, n, 32))
    assert res.warp_instructions == base.warp_instructions + extra
    assert st.warp_instructions == res.warp_instructions  # the timing model issues every one
    assert res.divergent_branches > 0


def test_gcd_divergent_pays_the_second_side_of_the_if_else_in_cycles():
    k = assemble_library("gcd_divergent")
    passes = 12
    # one warp, every lane 12 passes: all lanes on the x > y side, or half on each side
    uniform = _gcd_run([passes + 1] * 32, [1] * 32)
    split = _gcd_run([passes + 1, 1] * 16, [1, passes + 1] * 16)
    assert uniform[1].tolist() == split[1].tolist() == [passes] * 32
    # by hand from the assembled control codes: a pass where the lanes disagree also issues the
    # fall-through side, IADD y then SYNC; one warp alone hides nothing, so each such pass costs
    # their two stall counts (the IADD dual-issues with the SYNC: stall 0). The uniform warp takes
    # BRA XBIG every pass (its target issues max(stall, latency.branch_taken) cycles on); the split
    # warp falls through it (the stall count) and reaches XBIG from that side's SYNC, the next pc
    ins_ = k.instructions
    fall = next(n for n in range(len(ins_) - 1) if ins_[n].opcode == "IADD" and ins_[n + 1].opcode == "SYNC")
    side = ins_[fall].control.stall + ins_[fall + 1].control.stall
    assert side >= 5
    bra = ins_[fall - 1].control.stall  # @P2 BRA XBIG, just before the fall-through side
    taken = max(bra, load_config().latency.branch_taken) - bra
    assert split[3].warp_instructions - uniform[3].warp_instructions == 2 * passes
    assert split[3].cycles - uniform[3].cycles == (side - taken) * passes


# ---- the same kernels through the launch API (named parameters, numpy buffers, textures) -----

def test_library_kernels_through_the_launch_api():
    import maxsim
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 96)).astype(np.float32)
    for stride, conflicts in ((33, 0), (32, 6 * 8 * 4 * 31)):
        src = library.source("transpose").replace("stride     : 33", f"stride     : {stride}")
        r = maxsim.launch(src, grid=(3, 2), block=256, params={"in": "x", "out": "y", "rows": 64, "cols": 96},
                          buffers={"x": x, "y": np.zeros((96, 64), np.float32)}, hazards="strict", predict=False)
        assert np.array_equal(r.read("y"), x.T)
        assert r.sm_ctas == 6 and r.timing["shared_bank_conflicts"] == conflicts
    n = 150
    t = rng.standard_normal((n, 4)).astype(np.float32)
    w = [np.float32(v) for v in rng.standard_normal(5)]
    xp = np.zeros((n + 4, 4), np.float32)
    xp[2:n + 2] = t
    r = maxsim.launch(library.path("stencil5_tex"), grid=2, block=128, textures={0: t},
                      params={"out": "out", "n": n, **{f"w{j}": w[j] for j in range(5)}},
                      buffers={"out": np.zeros((n, 4), np.float32)}, hazards="strict", predict=False)
    assert np.array_equal(r.read("out"), fma_chain([(xp[j:j + n], w[j]) for j in range(5)]))


# ---- reduction with warp shuffles ------------------------------------------------------------

def _shfl_reduce_reference(x, n):
    """The kernel's order of fp32 additions (see reduce_shfl.sass), in numpy float32."""
    ctas = (n + 1023) // 1024
    xp = np.zeros(ctas * 1024, np.float32)
    xp[:n] = x
    w = xp.reshape(ctas, 8, 32, 4)
    v = (w[..., 0] + w[..., 1]) + (w[..., 2] + w[..., 3])
    lane = np.arange(32)
    for off in (16, 8, 4, 2, 1):
        v = v + v[..., lane ^ off]
    s = np.zeros((ctas, 32), np.float32)
    s[:, :8] = v[:, :, 0]
    for off in (4, 2, 1):
        s = s + s[:, lane ^ off]
    return s[:, 0]


@pytest.mark.parametrize("n", [1024, 1500, 4104])
def test_reduce_shfl_matches_numpy_with_shared_requests_counted_by_hand(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    ctas = (n + 1023) // 1024
    m = GlobalMemory()
    px, po = m.alloc(4 * n), m.alloc(4 * ctas)
    m.write(px, x)
    res, sm = timed(assemble_library("reduce_shfl"), ctas, 256, (px, po, n), m)
    got = m.read(po, ctas)
    assert np.array_equal(got, _shfl_reduce_reference(x, n))
    assert np.allclose(got.sum(dtype=np.float64), x.sum(dtype=np.float64), rtol=0, atol=1e-4 * np.abs(x).sum())
    st = sm.stats
    # by hand, per CTA: 5 SHFL in each of 8 warps and 3 more in warp 0, each one conflict-free
    # request through the shared-memory crossbar; data in shared memory: lane 0 of each warp
    # stores its warp sum (8 requests), warp 0 reads the 8 sums (1); no conflicts
    assert res.opcode_counts["SHFL.BFLY"] == ctas * 43
    assert st.shared_requests == ctas * (43 + 9) and st.shared_wavefronts == st.shared_requests


# ---- histogram with shared-memory atomics ----------------------------------------------------

def _histogram(data):
    n = data.size
    ctas = (n + 1023) // 1024
    m = GlobalMemory()
    pd, ph = m.alloc(4 * n), m.alloc(1024)
    m.write(pd, data)
    res, sm = timed(assemble_library("histogram_atoms"), ctas, 256, (pd, ph, n), m)
    assert np.array_equal(m.read(ph, 256, np.uint32), np.bincount(data & 0xFF, minlength=256))
    return res, sm.stats


def _atoms_conflicts(data):
    """Extra shared wavefronts of the ATOMS, counted by hand: ATOMS j of warp w has lane l add to
    bin data[4 (32 w + l) + j] & 0xff (word = bin, bank = bin % 32); lanes on one bin take one
    pass each, distinct bins of one bank one pass each: max of the two, less one."""
    n = data.size
    extra = 0
    for w in range(0, n // 4, 32):
        for j in range(4):
            bins = data[4 * np.arange(w, min(w + 32, n // 4)) + j] & 0xFF
            same = np.bincount(bins).max()
            per_bank = np.bincount(np.unique(bins) % 32).max()
            extra += max(same, per_bank) - 1
    return extra


@pytest.mark.parametrize("n,top", [(1024, 2 ** 32), (3000, 300), (5000, 7)])
def test_histogram_atoms_matches_numpy_and_its_atomics_serialise_as_counted(n, top):
    rng = np.random.default_rng(n)
    data = rng.integers(0, top, n, dtype=np.uint64).astype(np.uint32)
    res, st = _histogram(data)
    # the zeroing STS and the bin reads are one wavefront each: every extra one is an ATOMS's
    assert st.shared_wavefronts - st.shared_requests == _atoms_conflicts(data)
    assert res.opcode_counts["ATOMS.ADD"] == 4 * 8 * ((n + 1023) // 1024)


def test_histogram_atoms_one_bin_costs_31_passes_per_atomic_and_spread_bins_none():
    n = 2048
    _, one = _histogram(np.full(n, 0x1234_5605, np.uint32))  # every word in bin 5
    spread = (np.arange(n, dtype=np.uint32) // 4) % 32 + 32 * (np.arange(n, dtype=np.uint32) % 4)
    _, apart = _histogram(spread)  # ATOMS j: lane l -> bin l + 32 j, one per bank
    # 2 CTAs x 8 warps x 4 ATOMS, each 32 passes on one address (31 more than one) or one
    assert one.shared_wavefronts - one.shared_requests == 2 * 8 * 4 * 31
    assert apart.shared_wavefronts == apart.shared_requests
    assert one.cycles > apart.cycles


# ---- control-code rules the kernels rely on ------------------------------------------------

def test_global_loads_complete_in_issue_order():
    # ptxas's pattern (vecadd, compiled for sm_52): the first of two LDGs sets no barrier and its
    # reader waits on the second's. The second is an L2 hit (its line loaded before), the first a
    # DRAM miss: the timing model completes a warp's LDGs in issue order, so the hit waits for the
    # miss and the wait covers both; the static check agrees
    src = """\
<REGISTER_MAPPING>
    0-7 : a, b, x, y, w
</REGISTER_MAPPING>
--:-:-:-:1      MOV a, c[0x0][0x140];
--:-:-:-:6      MOV b, c[0x0][0x144];
--:-:3:-:2      LDG w, [b];
04:-:-:-:1      LDG x, [a];
--:-:2:-:2      LDG y, [b];
02:-:-:-:1      STG [a+0x100], y;
--:-:-:-:1      STG [a+0x104], x;
--:-:-:-:1      STG [a+0x108], w;
--:-:-:-:5      EXIT;
"""
    k = assemble_text(src, "ldg_order.sass").kernel
    assert check_controls(k) == []
    m = GlobalMemory()
    a, b = m.alloc(4 * 128), m.alloc(4 * 64)
    _, sm = simulate(k, 1, 32, (a, b), memory=m, hazards="strict")  # no hazard: x is there at the wait
    assert sm.stats.cycles > load_config().latency.dram * 2  # the DRAM miss of w, then of x
    # an S2R result is not covered so: S2R may complete out of order ([maxas-cc])
    s2r = src.replace("--:-:-:-:1      MOV a, c[0x0][0x140];", "--:-:-:-:1      S2R a, SR_TID.X;")
    s2r = s2r.replace("--:-:-:-:6      MOV b, c[0x0][0x144];", "--:-:1:-:1      S2R b, SR_LANEID;\n--:-:-:-:6      MOV b, c[0x0][0x144];")
    assert "variable-latency" in check_controls(assemble_text(s2r, "s2r.sass").kernel)[0].kind


def test_shfl_result_is_read_through_a_barrier():
    src = """\
<REGISTER_MAPPING>
    0-7 : v, t, s
</REGISTER_MAPPING>
S2R v, SR_LANEID;
SHFL.BFLY PT, t, v, 0x1, 0x1f;
IADD s, v, t;
EXIT;
"""
    k = assemble_text(src, "shfl.sass").kernel
    shfl, iadd = k.instructions[1], k.instructions[2]
    assert shfl.control.write_bar and iadd.control.wait >> (shfl.control.write_bar - 1) & 1
    m = GlobalMemory()
    simulate(k, 1, 32, (), memory=m, hazards="strict")  # the timing model agrees: no hazard


# ---- conv1d8: a 1D convolution layer of 8 channels (the memory benchmark's kernel) -------------

@pytest.mark.parametrize("ctas,taps", [(1, 1), (3, 7), (5, 20)])
def test_conv1d8_matches_numpy_and_counts_its_instructions(ctas, taps):
    kernel = assemble_library("conv1d8")
    n = 64 * ctas
    rng = np.random.default_rng(taps)
    x = rng.standard_normal(n + taps - 1).astype(np.float32)
    w = rng.standard_normal((taps, 8)).astype(np.float32)
    m = GlobalMemory()
    px, pw, po = m.alloc(x.nbytes), m.alloc(w.nbytes), m.alloc(8 * n * 4)
    m.write(px, x)
    m.write(pw, w)
    res, sm = timed(kernel, (ctas, 1), 64, (px, pw, po, n, taps), m)
    out = m.read(po, 8 * n, np.float32).reshape(8, n)
    for c in range(8):
        # channel c: FFMA from zero, tap after tap (the first FFMA's product rounded once, as FMUL)
        want = fma_chain([(x[t:t + n], w[t, c]) for t in range(taps)])
        np.testing.assert_array_equal(out[c], want)
    # by hand, per warp: 2 S2R, MOV, the XMAD.LO macro (3), ISCADD, 2 MOV, 8 MOV (17); 16 per tap
    # (LDG, 2 LDG.128, 3 IADD, ISETP, 8 FFMA, BRA); ISCADD, MOV, SHL, 8 STG, 7 IADD, EXIT (19)
    assert res.warp_instructions == ctas * 2 * (36 + 16 * taps)
    assert sm.stats.opcode_counts["FFMA"] == ctas * 2 * 8 * taps
