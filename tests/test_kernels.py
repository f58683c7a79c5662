"""Small kernels written in maxas SASS, run functionally and checked against numpy."""

from __future__ import annotations

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
07:-:-:-:6      XMAD R1, R2, c[0x0][0xc], R1;
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
07:-:-:-:6      XMAD R3, R2, c[0x0][0xc], R1;
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
--:-:-:-:1      MOV R0, c[0x0][0x0];
--:-:-:-:1      MOV R1, c[0x0][0xc];
--:-:-:-:1      MOV R2, c[0x0][0x10];
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
