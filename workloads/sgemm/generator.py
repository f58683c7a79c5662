"""maxsim's generator of the two maxas SGEMM kernels (``sgemm_64`` and ``sgemm_128``).

The kernels compute ``C = alpha * A * B^T`` in column-major storage ("NT"; see
``docs/maxas-sass-format.md``) with the design of the maxas SGEMM (maxas wiki "SGEMM" page and the
kernels ``sgemm/sgemm_final_64.sass`` / ``sgemm_final_128.sass`` of github.com/NervanaSystems/maxas,
MIT licence). This module is our own code: it builds the instruction stream from the design below;
the facts it reuses (register numbers, shared-memory offsets, instruction placement in the loop)
name their source where they appear.

Design
======

CTA and threads. ``sgemm_64``: 64 threads, a 64x64 tile of C; ``sgemm_128``: 256 threads, 128x128.
``ctaid.x`` picks the tile's rows (A), ``ctaid.y`` its columns (B). Each thread owns an 8x8 block of
C as four 4x4 blocks: rows ``4*a + i`` and ``tile/2 + 4*a + i`` (i < 4), columns ``4*b + j`` and
``tile/2 + 4*b + j``, where ``a = (tid >> 1) & 7`` (+ 8 for threads >= 128 in ``sgemm_128``) and
``b = ((tid >> 4) & 3 or 7) * 2 + (tid & 1)`` [maxas wiki "SGEMM": the thread layout that makes the
LDS.128 fragment loads conflict free].

Registers. C in R0-R63 through a register map ``C(i, j)`` (i: A index 0-7, j: B index 0-7):
``maxas``, the bank-aware map of the maxas wiki (C never shares a bank with its A or B operand):
``32*(i//4) + 16*(j//4) + 8*((j%4)//2) + [[3,2],[7,6],[1,0],[5,4]][i%4][j%2]`` (read off the FFMAs
of sgemm_final_64.sass); or ``naive``, ``8*i + j`` (every FFMA then conflicts with its B operand).
A fragments R64-R71 / R80-R87, B fragments R72-R79 / R88-R95, the two sets alternating between
k values (double buffering). Texture loads stage in R96 and up; loader scalars above them.

Memory. Half the threads load A, half load B, through 1D float4 textures (texture 1 = A, texture 0
= B; handles 0x80000001 / 0x80000000): each k value of a tile is ``tile/4`` texels, a k column of A
is ``lda/4`` texels. Each loader thread fetches ``loads`` texels per 8 values of k (4 in sgemm_64, 2
in sgemm_128), stages them in registers and stores them with STS.128 into one of two shared
buffers (A tile then B tile, 8 rows of ``tile`` floats each). The accumulators start at zero by
loading 16 zero bytes (written with ``STS.128 [buffer 1], RZ``) into every C register.

Main loop, 8 values of k per iteration (all placements from sgemm_final_64/128.sass): for each k
value (a *step*), 64 FFMAs in the traversal order; the first 8 carry, every second one, the four
LDS.U.128 of the next step's fragments (dual issued); the texture loads of the next tile sit in
steps 0-1 after FFMAs 31 and 33, their STS.128 in steps 5-6 (sgemm_64) or step 6 (sgemm_128) after
FFMAs 30 and 34; the BAR.SYNC after FFMA 62 of step 6, then the three LOP.XOR that swap the shared
buffers, FFMA 63; step 7 loads the next iteration's first fragments from the new buffer. The loop
ends with the texture-pointer IADDs and the branch. Every memory op, the BAR and the BRA dual-issue
with an ALU instruction, so an iteration costs 520 issue slots (sgemm_64) or 518 (sgemm_128) for
512 FFMAs (maxas wiki "SGEMM"). ``P0`` (set at the top of the loop) says another tile follows;
it guards the loads, stores, buffer swap and branch, so the last iteration only computes.

Epilogue: through shared memory, 8 rounds, one C column of each 4x4 block per round: each thread
stores its 8 values (times alpha) as two STS.128, each warp reads back a 32-row slab of 4 columns
written by its own threads (no CTA barrier needed) and writes them with coalesced, bounds-checked
``STG.CG`` (row < m and column < n).

Traversal (FFMA order inside a step): ``swirl`` (maxas): the 8 columns in pairs; in each pair the
rows in the order 2,0,3,1,6,4,7,5 (pairs 0, 2) or 7,5,6,4,3,1,2,0 (pairs 1, 3), snaking between the
pair's two columns (the order of the FFMAs in sgemm_final_64.sass); ``zigzag``: row by row, even
rows right to left, odd rows left to right; ``raster``: row by row, left to right.

Control codes: the loop's are fixed by the design above; the prologue's and epilogue's are chosen by
:func:`maxsim.asm.controls.assign_controls`, which also checks the loop's. One deliberate
difference from maxas: every LDS.U.128 and TLD sets its write barrier (barrier 1 for fragments, 2
and 3 for the two halves of the texture loads), where maxas sets it only on the last op of a group
and relies on the group completing in order; waits are the same. Reuse flags come from the generic
pass :func:`maxsim.analysis.reuse.set_reuse_flags`; on the swirl/maxas variant they equal maxas's.
"""

from __future__ import annotations

import functools
from itertools import product

import attrs

from maxsim.analysis.reuse import set_reuse_flags
from maxsim.errors import LaunchError
from maxsim.isa import instruction as ins
from maxsim.sass import format_kernel, parse_text
from maxsim.timing.occupancy import with_registers

from maxsim.asm.controls import Spec, assign_controls

TRAVERSALS = ("swirl", "zigzag", "raster")
REGMAPS = ("maxas", "naive")
PARAMS = ("C", "m", "n", "k", "lda", "ldb", "ldc", "alpha", "debug")  # each 4 bytes from c[0x0][0x140]
PARAM_BASE = 0x140
TEX_A, TEX_B = 0x80000001, 0x80000000  # bindless handles: texture 1 = A, texture 0 = B


def _log2(x: int) -> int:
    assert x > 0 and x & (x - 1) == 0, x
    return x.bit_length() - 1


@attrs.frozen
class Geometry:
    name: str
    threads: int
    tile: int

    @property
    def loaders(self):  # threads loading A (and as many loading B)
        return self.threads // 2

    @property
    def texels_per_row(self):  # float4 texels in one k row of a tile
        return self.tile // 4

    @property
    def loads(self):  # texture loads per loader thread per 8 values of k
        return self.tile * 8 // 4 // self.loaders

    @property
    def row_step(self):  # k rows between a loader's successive loads
        return 8 // self.loads

    @property
    def row_bytes(self):  # one k row of a tile in shared memory
        return self.tile * 4

    @property
    def half_bytes(self):  # offset of a thread's second 4-float fragment (tile/2 floats on)
        return self.tile * 2

    @property
    def buf_bytes(self):  # one shared buffer: 8 rows of A, then 8 rows of B
        return 2 * 8 * self.row_bytes

    @property
    def shared_size(self):
        return 2 * self.buf_bytes


KERNELS = {"sgemm_64": Geometry("sgemm_64", 64, 64), "sgemm_128": Geometry("sgemm_128", 256, 128)}

# Where the loop's memory ops sit: (step, FFMA position it follows) -> load/store number.
# From the instruction order of maxas's sgemm_final_64.sass and sgemm_final_128.sass, and the main
# loops of its sources sgemm64.sass and sgemm128.sass as benchmarked on the GTX 980 (the same places).
_TLD_AT = {"sgemm_64": {(0, 31): 0, (0, 33): 1, (1, 31): 2, (1, 33): 3},
           "sgemm_128": {(0, 31): 0, (0, 33): 1}}
_STS_AT = {"sgemm_64": {(5, 30): 0, (5, 34): 1, (6, 30): 2, (6, 34): 3},
           "sgemm_128": {(6, 30): 0, (6, 34): 1}}
_LDS_AFTER = (0, 2, 4, 6)  # the step's FFMAs that dual-issue its four LDS.U.128
_BAR_AFTER = (6, 62)  # BAR.SYNC (and the buffer swap) in step 6, after FFMA 62
# FFMA of each step carrying the yield hint: FFMA 32 in both main loops of maxas's GM204 sources
# (sgemm64.sass, sgemm128.sass: "Scatter some yields in there to better balance the workload and
# reduce sync stalls"; for the 256-thread kernel "this no longer offers extra performance on GM204 as
# it did on GM107 ... Keeping since it doesn't hurt"). The earlier sgemm_final_128.sass (sm_50) has
# none in its loop.
_YIELD_AT = {"sgemm_64": 32, "sgemm_128": 32}

# Dependency barriers (1-6) the design uses.
BAR_FRAGMENT = 1  # LDS.U.128 of A/B fragments (and the epilogue's LDS)
BAR_TEX = (2, 3)  # texture loads, first and second half
BAR_ZERO = 4  # the LDS that zero the accumulators
BAR_STG = 2  # epilogue: read barrier of the global stores


def c_register(regmap: str, i: int, j: int) -> int:
    """Register of C(i, j): i = A index (row) 0-7, j = B index (column) 0-7."""
    if regmap == "maxas":
        return 32 * (i // 4) + 16 * (j // 4) + 8 * ((j % 4) // 2) + ((3, 2), (7, 6), (1, 0), (5, 4))[i % 4][j % 2]
    if regmap == "naive":
        return 8 * i + j
    raise LaunchError(f"unknown register map {regmap!r}: expected one of {', '.join(REGMAPS)}")


def ffma_order(traversal: str) -> list:
    """The 64 (i, j) positions of one k step in FFMA order."""
    if traversal == "raster":
        return [(i, j) for i in range(8) for j in range(8)]
    if traversal == "zigzag":
        return [(i, j) for i in range(8) for j in (range(8) if i % 2 else range(7, -1, -1))]
    if traversal == "swirl":
        order = []
        for p in range(4):
            rows = (2, 0, 3, 1, 6, 4, 7, 5) if p % 2 == 0 else (7, 5, 6, 4, 3, 1, 2, 0)
            for n, i in enumerate(rows):
                pair = (2 * p, 2 * p + 1) if n % 2 == 0 else (2 * p + 1, 2 * p)
                order += [(i, j) for j in pair]
        return order
    raise LaunchError(f"unknown traversal {traversal!r}: expected one of {', '.join(TRAVERSALS)}")


class _Emitter:
    """Collects labels and instruction Specs in program order."""

    def __init__(self):
        self.items = []  # Spec or label name (str)

    def label(self, name):
        self.items.append(name)

    def __call__(self, text, pred="", **ctrl):
        self.items.append(Spec(text, pred, **ctrl))

    @property
    def specs(self):
        return [x for x in self.items if isinstance(x, Spec)]

    def text(self, header):
        lines = list(header)
        for x in self.items:
            lines.append(f"{x}:" if isinstance(x, str) else x.line())
        return "\n".join(lines) + "\n"


def _header(g: Geometry, name: str, nins: int, regcnt: int):
    lines = [f"# Kernel: {name}", "# Arch: sm_52", f"# InsCnt: {nins - 1}", f"# RegCnt: {regcnt}",
             f"# SharedSize: {g.shared_size}", "# BarCnt: 1", f"# Params({len(PARAMS)}):",
             "#\tord:addr:size:align"]
    lines += [f"#\t{n}:0x{PARAM_BASE + 4 * n:x}:4:0" for n in range(len(PARAMS))]
    return lines + ["#", "# Instructions:", ""]


def _param(name):
    return f"c[0x0][0x{PARAM_BASE + 4 * PARAMS.index(name):x}]"


def _emit(g: Geometry, traversal: str, regmap: str, yields: bool = True) -> _Emitter:
    e = _Emitter()
    loads, tile = g.loads, g.tile
    order = ffma_order(traversal)
    creg = {(i, j): c_register(regmap, i, j) for i in range(8) for j in range(8)}
    stage = [96 + 4 * q for q in range(loads)]  # texture staging registers
    # loader scalars, live through the loop
    s = iter(range(96 + 4 * loads, 255))
    tid, bx, by, hnd = next(s), next(s), next(s), next(s)
    trk = [next(s) for _ in range(loads)]  # texel coordinate of each load
    inc, end, wr, ra, rb = next(s), next(s), next(s), next(s), next(s)
    # prologue temporaries: fragment registers, free until the first fragment loads
    ld, ld4, lt, col, row, blk, tmp, tmp2, step, kk, c16, a, ah, b, b1 = range(64, 79)

    # ---- prologue (independent chains interleaved; the scheduler picks the stalls) ----------------
    e(f"S2R R{tid}, SR_TID.X", write_bar=1)
    e(f"S2R R{bx}, SR_CTAID.X", write_bar=2)
    e(f"S2R R{by}, SR_CTAID.Y", write_bar=3)
    e(f"ISETP.GE.AND P0, PT, R{tid}, 0x{g.loaders:x}, PT")  # P0: this thread loads B
    e(f"LOP.AND R{lt}, R{tid}, 0x{g.loaders - 1:x}")  # loader thread number
    e(f"BFE.U32 R{a}, R{tid}, 0x301")  # A fragment: (tid >> 1) & 7 ...
    e(f"BFE.U32 R{b}, R{tid}, 0x{(_log2(tile) - 4) << 8 | 4:x}")  # B fragment: ((tid >> 4) & 3 or 7) * 2
    e(f"LOP.AND R{b1}, R{tid}, 0x1")  # ... + (tid & 1)
    if g.threads > 128:
        e(f"BFE.U32 R{ah}, R{tid}, 0x107")  # ... + 8 for threads 128-255
    e(f"MOV R{kk}, {_param('k')}")
    e(f"LOP.AND R{col}, R{lt}, 0x{g.texels_per_row - 1:x}")  # texel column in the tile
    e(f"SHR.U32 R{row}, R{lt}, 0x{_log2(g.texels_per_row):x}")  # first k row
    if g.threads > 128:
        e(f"ISCADD R{a}, R{ah}, R{a}, 0x3")
    e(f"ISCADD R{b}, R{b}, R{b1}, 0x1")
    e(f"IADD R{kk}, R{kk}, -0x8")
    e(f"SHL R{ra}, R{a}, 0x4")
    e(f"SHL R{c16}, R{col}, 0x4")
    e(f"ISCADD R{rb}, R{b}, 0x{g.buf_bytes // 2:x}, 0x4")
    e(f"MOV R{ld}, {_param('lda')}", "@!P0")
    e(f"MOV R{ld}, {_param('ldb')}", "@P0")
    e(f"MOV32I R{hnd}, 0x{TEX_A:x}", "@!P0")
    e(f"MOV32I R{hnd}, 0x{TEX_B:x}", "@P0")
    e(f"SEL R{blk}, R{by}, R{bx}, P0")  # tile number along M (A) or N (B)
    e(f"ISCADD R{wr}, R{row}, R{c16}, 0x{_log2(g.row_bytes):x}")  # shared store address
    e(f"SHR.U32 R{ld4}, R{ld}, 0x2")  # texels per k column
    e(f"IADD R{wr}, R{wr}, 0x{g.buf_bytes // 2:x}", "@P0")  # B tiles follow the A tile
    e(f"ISCADD R{trk[0]}, R{blk}, R{col}, 0x{_log2(g.texels_per_row):x}")
    # trk0 += row * ld4 and end = kk * ld4 (three-XMAD multiplies, interleaved)
    e(f"XMAD.MRG R{tmp}, R{row}, R{ld4}.H1, RZ")
    e(f"XMAD.MRG R{tmp2}, R{kk}, R{ld4}.H1, RZ")
    e(f"XMAD R{trk[0]}, R{row}, R{ld4}, R{trk[0]}")
    e(f"XMAD R{end}, R{kk}, R{ld4}, RZ")
    e(f"SHL R{step}, R{ld4}, 0x{_log2(g.row_step):x}")
    e(f"SHL R{inc}, R{ld4}, 0x3")  # 8 k rows
    e(f"XMAD.PSL.CBCC R{trk[0]}, R{row}.H1, R{tmp}.H1, R{trk[0]}")
    e(f"XMAD.PSL.CBCC R{end}, R{kk}.H1, R{tmp2}.H1, R{end}")
    for q in range(1, loads):
        e(f"IADD R{trk[q]}, R{trk[q - 1]}, R{step}")
    e(f"IADD R{end}, R{end}, R{trk[0]}")  # first texel of the last tile
    e(f"STS.128 [0x{g.buf_bytes:x}], RZ")
    tex_bar = [BAR_TEX[q * 2 // loads] for q in range(loads)]
    for q in range(loads):
        e(f"TLD.B.LZ.P R{stage[q]}, R{trk[q]}, R{hnd}, 0x0, 1D, 0xf", write_bar=tex_bar[q])
    for r in range(0, 64, 4):
        e(f"LDS.U.128 R{r}, [0x{g.buf_bytes:x}]", write_bar=BAR_ZERO)
    for q in range(loads):
        e(f"STS.128 [R{wr}{_off(q * g.row_step * g.row_bytes)}], R{stage[q]}")
        e(f"IADD R{trk[q]}, R{trk[q]}, R{inc}")
    e("BAR.SYNC 0x0", extra_wait=1 << (BAR_ZERO - 1))
    e(f"LOP.XOR R{wr}, R{wr}, 0x{g.buf_bytes:x}")
    for k, (base, reg) in enumerate(_fragment_loads(ra, rb, 0)):
        e(f"LDS.U.128 R{reg}, [R{base}{_off(k // 2 * g.half_bytes)}]", write_bar=BAR_FRAGMENT)

    # ---- main loop: every control field fixed ----------------------------------------------------
    def fixed(text, pred="", wait=0, read_bar=0, write_bar=0, yield_=False, stall=1):
        e(text, pred, wait=wait, read_bar=read_bar, write_bar=write_bar, yield_=yield_, stall=stall)

    frag_wait = 1 << (BAR_FRAGMENT - 1)
    e.label("LOOP")
    fixed(f"ISETP.LE.AND P0, PT, R{trk[0]}, R{end}, PT")  # another tile follows
    for st in range(8):
        abase, bbase = (64, 72) if st % 2 == 0 else (80, 88)
        after = {}  # FFMA position -> instructions that dual-issue after it
        if st < 7:
            nxt = 16 if st % 2 == 0 else 0
            for k, (base, reg) in enumerate(_fragment_loads(ra, rb, nxt)):
                off = (st + 1) * g.row_bytes + k // 2 * g.half_bytes
                after[_LDS_AFTER[k]] = [dict(text=f"LDS.U.128 R{reg}, [R{base}{_off(off)}]", write_bar=BAR_FRAGMENT)]
        else:
            for k, (base, reg) in enumerate(_fragment_loads(ra, rb, 0)):
                after[_LDS_AFTER[k]] = [dict(text=f"LDS.U.128 R{reg}, [R{base}{_off(k // 2 * g.half_bytes)}]",
                                             pred="@P0", write_bar=BAR_FRAGMENT)]
        for (s_, p), q in _TLD_AT[g.name].items():
            if s_ == st:
                after[p] = [dict(text=f"TLD.B.LZ.P R{stage[q]}, R{trk[q]}, R{hnd}, 0x0, 1D, 0xf",
                                 pred="@P0", write_bar=tex_bar[q])]
        for (s_, p), q in _STS_AT[g.name].items():
            if s_ == st:
                first = q == 0 or tex_bar[q] != tex_bar[q - 1]
                after[p] = [dict(text=f"STS.128 [R{wr}{_off(q * g.row_step * g.row_bytes)}], R{stage[q]}",
                                 pred="@P0", wait=1 << (tex_bar[q] - 1) if first else 0)]
        if st == _BAR_AFTER[0]:
            after[_BAR_AFTER[1]] = [dict(text="BAR.SYNC 0x0", wait=frag_wait, stall=5)] + [
                dict(text=f"LOP.XOR R{r}, R{r}, 0x{g.buf_bytes:x}", pred="@P0") for r in (ra, rb, wr)]
        for p, (i, j) in enumerate(order):
            c = creg[i, j]
            wait = frag_wait if p == 0 and st < 7 else 0
            fixed(f"FFMA R{c}, R{abase + i}, R{bbase + j}, R{c}", wait=wait,
                  yield_=yields and p == _YIELD_AT[g.name], stall=0 if p in after else 1)
            for x in after.get(p, ()):
                fixed(**x)
    for q in range(loads):
        fixed(f"IADD R{trk[q]}, R{trk[q]}, R{inc}", "@P0", stall=0 if q == loads - 1 else 1)
    fixed("BRA LOOP", "@P0", yield_=True, stall=5)

    # ---- epilogue --------------------------------------------------------------------------------
    # Two sets of staged values and of store addresses alternate between rounds, so a round never
    # waits for the previous round's stores to have read their registers.
    sv = (list(range(64, 72)), list(range(80, 88)))  # C column times alpha, then read back
    ptr = (list(range(72, 76)), list(range(88, 92)))  # C addresses of the 4 columns a thread stores
    ncols = list(range(76, 80))  # their column numbers
    sw, sr, ldc4, djh = range(92, 96)
    # setup temporaries: set 1 of the rounds' registers (first written in round 1) and the staging
    aoff, boff, lane, w, cg, rq, mloc, srt, mrow, c16e, ldc, m2 = sv[1] + ptr[1]
    t, tmp, l16, big, d3 = range(96, 101)
    e(f"LOP.AND R{lane}, R{tid}, 0x1f")
    e(f"SHR.U32 R{w}, R{tid}, 0x5")
    e(f"LOP.AND R{aoff}, R{ra}, 0x{g.buf_bytes // 2 - 1:x}")  # a * 16
    e(f"LOP.AND R{boff}, R{rb}, 0x{g.buf_bytes // 2 - 1:x}")  # b * 16
    e(f"MOV R{ldc}, {_param('ldc')}")
    e(f"LOP.AND R{cg}, R{w}, 0x{tile // 32 - 1:x}")  # the warp's group of 4 shared columns
    e(f"SHR.U32 R{rq}, R{w}, 0x{_log2(tile // 32):x}")  # and its 32-row slab
    e(f"ISCADD R{sw}, R{boff}, R{aoff}, 0x{_log2(tile // 4):x}")  # column b (tile floats each), row 4a
    e(f"SHL R{ldc4}, R{ldc}, 0x2")
    e(f"SHL R{l16}, R{ldc}, 0x4")
    e(f"SHL R{big}, R{ldc}, 0x{_log2(tile // 2) + 2:x}")
    e(f"ISCADD R{mloc}, R{rq}, R{lane}, 0x5")
    e(f"SHL R{c16e}, R{cg}, 0x4")
    e(f"ISCADD R{d3}, R{ldc4}, R{ldc4}, 0x1")
    e(f"ISCADD R{srt}, R{cg}, R{mloc}, 0x{_log2(4 * tile):x}")
    e(f"ISCADD R{mrow}, R{bx}, R{mloc}, 0x{_log2(tile):x}")  # first C row this thread stores
    e(f"ISCADD R{ncols[0]}, R{by}, R{c16e}, 0x{_log2(tile):x}")  # first C column
    e(f"IADD R{djh}, R{big}, -R{d3}")  # (tile/2 - 3) columns: from column 3 of a block to column 0 of the next
    e(f"SHL R{sr}, R{srt}, 0x2")
    e(f"IADD R{m2}, R{mrow}, 0x{tile // 2:x}")
    e(f"ISETP.LT.AND P5, PT, R{mrow}, {_param('m')}, PT")
    e(f"XMAD.MRG R{tmp}, R{ncols[0]}, R{ldc}.H1, RZ")
    e(f"XMAD R{t}, R{ncols[0]}, R{ldc}, R{mrow}")
    e(f"ISETP.LT.AND P6, PT, R{m2}, {_param('m')}, PT")
    for q in range(1, 4):
        e(f"IADD R{ncols[q]}, R{ncols[q - 1]}, 0x4")
    e(f"XMAD.PSL.CBCC R{t}, R{ncols[0]}.H1, R{tmp}.H1, R{t}")  # ncol * ldc + mrow
    e(f"ISCADD R{ptr[0][0]}, R{t}, {_param('C')}, 0x2")
    for q in range(1, 4):
        e(f"IADD R{ptr[0][q]}, R{ptr[0][q - 1]}, R{l16}")
    for rnd, (jh, jj) in enumerate(product(range(2), range(4))):
        j = 4 * jh + jj
        s_, p_ = sv[rnd % 2], ptr[rnd % 2]
        if rnd:
            for q in range(4):
                e(f"IADD R{ncols[q]}, R{ncols[q]}, 0x{1 if jj else tile // 2 - 3:x}")
        for i in range(8):
            e(f"FMUL R{s_[i]}, R{creg[i, j]}, {_param('alpha')}")
        for q in range(4):
            e(f"ISETP.LT.AND P{q}, PT, R{ncols[q]}, {_param('n')}, P5")
        e(f"STS.128 [R{sw}], R{s_[0]}")
        e(f"STS.128 [R{sw}+0x{tile * 2:x}], R{s_[4]}")
        for q, h in product(range(4), range(2)):
            e(f"LDS R{s_[2 * q + h]}, [R{sr}{_off(q * g.row_bytes + h * g.half_bytes)}]", write_bar=BAR_FRAGMENT)
        for q in range(4):
            e(f"STG.CG [R{p_[q]}], R{s_[2 * q]}", f"@P{q}", read_bar=BAR_STG)
            e(f"ISETP.LT.AND P{q}, PT, R{ncols[q]}, {_param('n')}, P6")
        for q in range(4):
            e(f"STG.CG [R{p_[q]}+0x{g.half_bytes:x}], R{s_[2 * q + 1]}", f"@P{q}", read_bar=BAR_STG)
        if rnd < 7:
            nxt = ptr[(rnd + 1) % 2]
            for q in range(4):
                e(f"IADD R{nxt[q]}, R{p_[q]}, R{ldc4 if jj < 3 else djh}")
    e("EXIT")
    return e


def _fragment_loads(ra, rb, buf):
    """(address register, destination) of a step's four LDS.U.128: A lo, B lo, A hi, B hi."""
    return [(ra, 64 + buf), (rb, 72 + buf), (ra, 68 + buf), (rb, 76 + buf)]


def _off(x):
    return f"+0x{x:x}" if x else ""


def kernel_name(kernel: str, traversal: str, regmap: str, reuse: bool, yields: bool = True) -> str:
    return f"{kernel}_{traversal}_{regmap}" + ("" if reuse else "_noreuse") + ("" if yields else "_noyield")


@functools.lru_cache(maxsize=32)
def generate_kernel(kernel: str = "sgemm_64", traversal: str = "swirl", regmap: str = "maxas",
                    reuse: bool = True, regs: int | None = None, yields: bool = True):
    """The generated kernel, decoded (a :class:`maxsim.isa.instruction.Kernel`).

    It declares the registers its code uses (``RegCnt``), or ``regs`` when given: more registers
    per thread, same code, fewer resident CTAs (see :mod:`maxsim.timing.occupancy`). ``yields``:
    False leaves out the yield hint maxas puts on FFMA 32 of every main-loop step (the loop's
    branch keeps its own), to see what the hint does."""
    if regs is not None:
        return with_registers(generate_kernel(kernel, traversal, regmap, reuse, yields=yields), regs)
    g = KERNELS.get(kernel)
    if g is None:
        raise LaunchError(f"unknown SGEMM kernel {kernel!r}: expected one of {', '.join(KERNELS)}")
    e = _emit(g, traversal, regmap, yields)
    specs = e.specs
    name = kernel_name(kernel, traversal, regmap, reuse, yields)
    k = parse_text(e.text(_header(g, name, len(specs), ins.NUM_REGS)), filename=f"<{name}>")
    top = max(r for i in k.instructions for r in i.src_regs + i.dst_regs)
    k = assign_controls(attrs.evolve(k, reg_cnt=top + 1), specs)
    return set_reuse_flags(k) if reuse else k


def generate(kernel: str = "sgemm_64", traversal: str = "swirl", regmap: str = "maxas",
             reuse: bool = True, regs: int | None = None, yields: bool = True) -> str:
    """SASS text (maxas format) of the generated kernel (declaring ``regs`` registers if given;
    ``yields``: see :func:`generate_kernel`)."""
    return format_kernel(generate_kernel(kernel, traversal, regmap, reuse, regs, yields))
