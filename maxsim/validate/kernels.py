"""The micro-benchmark kernels, in maxas text, and the helpers that run them on one SM.

Each builder returns a decoded kernel; the arguments are the control codes a kernel writer would
choose (stall counts), so a test can build the very kernel it derives cycle counts for from the
config, and the validation can build it with the stall counts maxas's rules give. The kernels are
parameterless: a launch needs no host data except, for the texture kernels, a bound texture.

Conventions the cycle figures rest on (see :mod:`maxsim.timing.sm`): the first warp instruction
issues at cycle 0; a stall count S delays the warp's next issue to ``t + S``; ``stats.cycles`` is
the cycle after the last issue.
"""

from __future__ import annotations

import re

import numpy as np

from ..functional.memory import Texture1D
from ..sass import parse_text
from ..timing.run import simulate

# Stall counts of the control-code rules [maxas-cc]: what a kernel writer puts in the kernel text
# (the model's latencies come from the config; these only have to be long enough).
EXIT_STALL = 5       # EXIT, BRA, BAR need stall >= 5
BRANCH_STALL = 5
BAR_STALL = 5
PREDICATE_STALL = 13  # ISETP result -> predicate use
ALU_STALL = 6         # ALU result -> dependent ALU instruction
HALF_STALL = 6

_CTRL = re.compile(r"^([0-9a-fA-F-]{2}:[1-6-]:[1-6-]:[yY-]:[0-9a-fA-F])\s+(.*)$")
_GUARD = re.compile(r"^(@!?P[0-6T])\s+(.*)$")

# an independent FFMA reading banks 1, 2, 3 (R5, R6, R7): no conflict, leaves bank 0 idle
FILL = "--:-:-:-:1 FFMA R20, R5, R6, R7;"


def s(n):
    """A stall count as the control field's hex digit (0-15)."""
    if not 0 <= n <= 15:
        raise ValueError(f"stall count {n} outside 0-15")
    return f"{n:x}"


def exit_line(stall=EXIT_STALL):
    return f"--:-:-:-:{s(stall)} EXIT;"


def _line(text):
    """One maxas instruction line from ``"CTRL [@P] INSTR"`` (or a label ``NAME:``)."""
    text = text.strip()
    if text.endswith(":"):
        return text
    m = _CTRL.match(text)
    if m is None:
        raise ValueError(f"micro-benchmark line without a control field: {text!r}")
    ctrl, rest = m.groups()
    pred = ""
    g = _GUARD.match(rest)
    if g:
        pred, rest = g.groups()
    return f"{ctrl} {pred:>5} {rest.rstrip(';')};"


def kernel_text(body, *, name="micro", regs=32, shared=0, bar=0, params=0):
    """A kernel in maxas text format from lines ``"CTRL [@P] INSTR"``; ``params`` 32-bit parameters
    (``p0``, ``p1``, ... at c[0x0][0x140], 0x144, ...)."""
    lines = [_line(x) for x in body.strip().splitlines() if x.strip()]
    n = sum(1 for x in lines if not x.endswith(":"))
    plist = "".join(f"#\t{i}:{hex(0x140 + 4 * i)}:4:0 p{i}\n" for i in range(params))
    head = (f"# Kernel: {name}\n# Arch: sm_52\n# InsCnt: {n - 1}\n# RegCnt: {regs}\n"
            f"# SharedSize: {shared}\n# BarCnt: {bar}\n# Params({params}):\n"
            + (plist if params else "#\tord:addr:size:align\n") + "#\n"
            f"# Instructions:\n\n")
    return head + "\n".join(lines) + "\n"


def kernel(body, **kw):
    """:func:`kernel_text`, decoded."""
    return parse_text(kernel_text(body, **kw), filename=f"{kw.get('name', 'micro')}.sass")


def run(k, block=32, cfg=None, grid=1, **kw):
    """Simulate ``k`` on one SM with the issue log on: ``(sm, stats as a dict)``."""
    res, sm = simulate(k, grid, block, cfg=cfg, log=True, **kw)
    return sm, sm.stats.to_dict()


def issues(sm, warp=None):
    """[(cycle, pc)] of one warp (label suffix ``.w<n>``), or of all warps."""
    return [(t, pc) for t, lab, pc in sm.issue_log if warp is None or lab.endswith(f".w{warp}")]


def first_issue(sm, pc, warp=0):
    return next(t for t, p in issues(sm, warp) if p == pc)


def done_times(sm, pcs):
    """Completion cycles (``sm.issue_done``) of the instructions at ``pcs``, all warps, in issue order."""
    return [sm.issue_done[i] for i, (_, _, pc) in enumerate(sm.issue_log) if pc in pcs]


# ---------------------------------------------------------------------------------------------
# ALU: dependent chains, independent streams, dual issue, register banks

def dependent_chain(n, stall, op="FFMA R0, R1, R2, R0", exit_stall=EXIT_STALL):
    """``n`` instructions each reading the previous one's result (R0), ``stall`` cycles apart."""
    return kernel("\n".join([f"--:-:-:-:{s(stall)} {op};"] * n + [exit_line(exit_stall)]))


def independent_ffma(n, exit_stall=EXIT_STALL, shared=0):
    """``n`` independent FFMAs at stall 1, reading banks 1, 2, 3 (no bank conflict); their
    destinations are never read. ``shared``: bytes of shared memory the kernel declares."""
    return kernel("\n".join([f"--:-:-:-:1 FFMA R{4 + 4 * (i % 4)}, R1, R2, R3;" for i in range(n)]
                            + [exit_line(exit_stall)]), shared=shared)


def pair(first_stall, second, exit_stall=EXIT_STALL):
    """An FFMA with stall ``first_stall`` followed by the instruction line ``second``: with stall 0
    the two may dual-issue."""
    return kernel(f"""
--:-:-:-:{first_stall} FFMA R5, R1, R2, R3;
{second}
{exit_line(exit_stall)}
""", shared=128)


def bank_kernel(mid, exit_stall=EXIT_STALL):
    """The lines ``mid`` between four filler FFMAs (banks 1-3 only) on each side."""
    return kernel("\n".join([FILL] * 4 + list(mid) + [FILL] * 4 + [exit_line(exit_stall)]))


def bank_stream(n, conflict=True, reuse=False, exit_stall=EXIT_STALL):
    """``n`` back-to-back independent FFMAs (stall 1). With ``conflict`` each reads two registers of
    bank 0 (R4, R8), so every cycle wants two bank-0 reads and no idle bank-0 cycle is left for the
    operand collector to read ahead; without, the second is R10 (bank 2). ``reuse`` flags R4 for
    the reuse cache of operand slot 0, so from the second FFMA on only R8 is read from bank 0."""
    b = "R8" if conflict else "R10"
    r = ".reuse" if reuse else ""
    return kernel("\n".join([f"--:-:-:-:1 FFMA R{12 + 4 * (i % 4) + 1}, R4{r}, {b}, R1;" for i in range(n)]
                            + [exit_line(exit_stall)]))


# ---------------------------------------------------------------------------------------------
# shared memory

def lds_kernel(shift, lds_stall=2, s2r_stall=2, half_stall=HALF_STALL, exit_stall=EXIT_STALL):
    """Lane i loads the word at byte address ``tid << shift`` (word stride ``2^(shift-2)``); a
    dependent FADD waits on the load's barrier 2. pc 2 is the LDS, pc 3 the FADD."""
    return kernel(f"""
--:-:1:-:{s(s2r_stall)} S2R R0, SR_TID.X;
01:-:-:-:{s(half_stall)} SHL R1, R0, {hex(shift)};
--:-:2:-:{s(lds_stall)} LDS R2, [R1];
02:-:-:-:1 FADD R3, R2, R2;
{exit_line(exit_stall)}
""", shared=32 * 32 * 4)


def lds_stream(n, exit_stall=EXIT_STALL):
    """``n`` independent shared loads at stall 1 (all lanes on word 0: one wavefront each), then
    a filler FFMA."""
    return kernel("\n".join([f"--:-:-:-:1 LDS R{4 + i}, [R1];" for i in range(n)] + [FILL, exit_line(exit_stall)]),
                  shared=128, regs=max(32, 8 + n))


def lds128_stream(n, exit_stall=EXIT_STALL):
    """``n`` independent 128-bit shared loads at stall 1, lane i at byte ``16 x tid`` (a warp reads
    512 consecutive bytes: no bank conflict), then a filler FFMA. pcs 2 .. n + 1 are the loads."""
    loads = "\n".join(f"--:-:-:-:1 LDS.U.128 R{4 + 4 * (i % 4)}, [R1];" for i in range(n))
    return kernel(f"""
--:-:1:-:1 S2R R0, SR_TID.X;
01:-:-:-:{s(ALU_STALL)} SHL R1, R0, 0x4;
{loads}
{FILL}
{exit_line(exit_stall)}
""", shared=16 * 1024, regs=32)


def lds_chase(n, alu_stall=ALU_STALL, exit_stall=EXIT_STALL):
    """A pointer chase through shared memory: ``n`` loads, each from the address the previous one
    returned (shared memory starts zeroed, so every link reads word 0: one wavefront, no
    conflict). pc 1 .. n are the loads."""
    links = "\n".join(f"{'01' if i else '--'}:-:1:-:2 LDS R2, [R2];" for i in range(n))
    return kernel(f"""
--:-:-:-:{s(alu_stall)} MOV R2, RZ;
{links}
01:-:-:-:1 FADD R3, R2, R2;
{exit_line(exit_stall)}
""", shared=128)


# ---------------------------------------------------------------------------------------------
# texture path: L1/texture cache, L2, DRAM

TEXTURE_ADDRESS = 1 << 20


def texture(n_texels=64, address=TEXTURE_ADDRESS):
    """A float4 texture whose texel i holds (4i, 4i+1, 4i+2, 4i+3) as floats."""
    return Texture1D(np.arange(n_texels * 4, dtype=np.float32).reshape(-1, 4), address=address)


def tld_kernel(alu_stall=ALU_STALL, exit_stall=EXIT_STALL):
    """All 32 lanes fetch texel 0 of texture 0 (one 32-byte sector); the second TLD (pc 3) waits
    for the first (pc 2) so it finds the sector in the L1/texture cache; the FADD (pc 4) waits for
    the second."""
    return kernel(f"""
--:-:-:-:1 MOV32I R8, 0x80000000;
--:-:-:-:{s(alu_stall)} MOV R0, RZ;
--:-:1:-:2 TLD.B.LZ.P R4, R0, R8, 0x0, 1D, 0xf;
01:-:2:-:2 TLD.B.LZ.P R12, R0, R8, 0x0, 1D, 0xf;
02:-:-:-:1 FADD R3, R12, R4;
{exit_line(exit_stall)}
""")


def tld_pair_kernel(alu_stall=ALU_STALL, exit_stall=EXIT_STALL):
    """Lanes fetch texels tid and tid + 32: 32 distinct float4 = 512 bytes = 16 sectors per TLD.
    Both sets are fetched once and waited for (barriers 1, 2), then fetched again: two L1 hits
    (pc 6, 7) that issue a memory issue interval apart and queue on the texture path."""
    return kernel(f"""
--:-:1:-:1 S2R R0, SR_TID.X;
--:-:-:-:1 MOV32I R8, 0x80000000;
01:-:-:-:{s(alu_stall)} IADD R1, R0, 0x20;
--:-:1:-:2 TLD.B.LZ.P R4, R0, R8, 0x0, 1D, 0xf;
--:-:2:-:2 TLD.B.LZ.P R12, R1, R8, 0x0, 1D, 0xf;
03:-:-:-:1 MOV R2, RZ;
--:-:3:-:2 TLD.B.LZ.P R16, R0, R8, 0x0, 1D, 0xf;
--:-:4:-:2 TLD.B.LZ.P R20, R1, R8, 0x0, 1D, 0xf;
0c:-:-:-:1 FADD R3, R16, R20;
{exit_line(exit_stall)}
""")


def tld_stream_kernel(n_hits, alu_stall=ALU_STALL, exit_stall=EXIT_STALL):
    """Each warp fetches its own 32 texels (512 bytes, 16 sectors: texel 32 * warp + lane) once and
    waits for them, then fetches them ``n_hits`` more times back to back: L1/texture hits that
    queue on the texture path. pc 5 .. 4 + n_hits are the hits."""
    hits = "\n".join(f"--:-:{'2' if i == n_hits - 1 else '-'}:-:2 TLD.B.LZ.P R{16 + 4 * (i % 8)}, R0, R8, 0x0, 1D, 0xf;"
                     for i in range(n_hits))
    return kernel(f"""
--:-:1:-:1 S2R R0, SR_TID.X;
--:-:-:-:1 MOV32I R8, 0x80000000;
01:-:-:-:{s(alu_stall)} MOV R1, RZ;
--:-:1:-:2 TLD.B.LZ.P R4, R0, R8, 0x0, 1D, 0xf;
01:-:-:-:1 MOV R2, RZ;
{hits}
02:-:-:-:1 FADD R3, R16, R16;
{exit_line(exit_stall)}
""", regs=64)


def tld_chase_kernel(warm_fetches, links, alu_stall=ALU_STALL, exit_stall=EXIT_STALL):
    """A pointer chase through a texture after a warm-up pass.

    Warm-up: ``warm_fetches`` TLDs in which lane l fetches texel ``32 * i + l + WARM_BASE`` of texture
    1 (handle 0x80000001), a streaming pass that brings a footprint into the caches (or pushes
    earlier data out), all waited for. Chase: every lane follows one chain in texture 0 (all lanes
    the same texel, one sector per fetch): the x channel of texel i holds the index of the next
    link, so each TLD needs the previous one's result. The links are at pc ``chase_pc(warm_fetches)``
    onwards, the FADD that uses the last one right after them."""
    warm = "\n".join(f"--:-:{'1' if i == warm_fetches - 1 else '-'}:-:2 TLD.B.LZ.P R{12 + 4 * (i % 4)}, R1, R9, 0x0, 1D, 0xf;\n"
                     f"--:-:-:-:{s(alu_stall)} IADD R1, R1, 0x20;"
                     for i in range(warm_fetches))
    chase = "\n".join(f"{'01' if i == 0 else '02'}:-:2:-:2 TLD.B.LZ.P R4, R4, R8, 0x0, 1D, 0x1;" for i in range(links))
    return kernel(f"""
--:-:1:-:1 S2R R0, SR_TID.X;
--:-:-:-:1 MOV32I R8, 0x80000000;
--:-:-:-:1 MOV32I R9, 0x80000001;
--:-:-:-:1 MOV R4, RZ;
01:-:-:-:{s(alu_stall)} MOV R1, R0;
{warm}
{chase}
02:-:-:-:1 FADD R3, R4, R4;
{exit_line(exit_stall)}
""", regs=32)


def chase_pc(warm_fetches):
    """The pc of the first chase link of :func:`tld_chase_kernel`."""
    return 5 + 2 * warm_fetches


def chase_textures(footprint, links, sector, warm_bytes, warm_address=TEXTURE_ADDRESS):
    """Textures 0 and 1 of :func:`tld_chase_kernel`, on one address range: texture 1 covers the
    first ``warm_bytes`` (the warm-up pass), texture 0 the ``footprint`` bytes the chase visits
    (``links`` links spread evenly, each in its own sector, the last one pointing back to the first).
    Both start at :data:`TEXTURE_ADDRESS` (unless ``warm_address`` moves the warm-up elsewhere), so
    the warm-up touches the chase's sectors when it covers them."""
    texel_bytes = 16
    n0 = max(1, footprint // texel_bytes)
    stride = max(sector // texel_bytes, n0 // links)
    nxt = np.zeros((n0, 4), np.uint32)
    idx = np.arange(links) * stride
    if idx[-1] >= n0:
        raise ValueError(f"{links} links of {stride * texel_bytes} bytes do not fit {footprint} bytes")
    nxt[idx, 0] = np.roll(idx, -1)
    chase = Texture1D(nxt.view(np.float32), address=TEXTURE_ADDRESS)
    warm = Texture1D(np.zeros((max(1, warm_bytes // texel_bytes), 4), np.float32), address=warm_address)
    return {0: chase, 1: warm}


def stride_textures(links, stride_bytes, warm_bytes=512, warm_address=None):
    """Textures 0 and 1 of :func:`tld_chase_kernel` for a chase over consecutive addresses:
    ``links`` links ``stride_bytes`` apart (a multiple of the 16-byte texel), in address order, the
    last pointing back to the first. The warm-up (texture 1) lies elsewhere (``warm_address``,
    default just past the chase) so the chase runs over data nothing has touched: the fine-grained
    pointer chase that finds a cache's line (fetch) size by the pattern of misses along it."""
    texel_bytes = 16
    if stride_bytes % texel_bytes or stride_bytes <= 0:
        raise ValueError(f"stride {stride_bytes} bytes: a positive multiple of {texel_bytes}")
    step = stride_bytes // texel_bytes
    n0 = links * step
    nxt = np.zeros((n0, 4), np.uint32)
    idx = np.arange(links) * step
    nxt[idx, 0] = np.roll(idx, -1)
    chase = Texture1D(nxt.view(np.float32), address=TEXTURE_ADDRESS)
    if warm_address is None:
        warm_address = TEXTURE_ADDRESS + ((n0 * texel_bytes + 4095) // 4096 + 1) * 4096
    warm = Texture1D(np.zeros((max(1, warm_bytes // texel_bytes), 4), np.float32), address=warm_address)
    return {0: chase, 1: warm}


# ---------------------------------------------------------------------------------------------
# CTA barrier

def bar_kernel(n_chain, alu_stall=ALU_STALL, s2r_stall=2, predicate_stall=PREDICATE_STALL,
               branch_stall=BRANCH_STALL, bar_stall=BAR_STALL, exit_stall=EXIT_STALL):
    """Two warps: warp 0 (tid < 32) branches straight to BAR.SYNC; warp 1 first runs a dependent
    chain of ``n_chain`` FFMAs. The BAR is at pc ``3 + n_chain``, the instruction after it one
    further: the cycles from warp 1's arrival to that instruction are the barrier's cost."""
    chain = "\n".join([f"--:-:-:-:{s(alu_stall)} FFMA R4, R5, R6, R4;"] * n_chain)
    return kernel(f"""
--:-:1:-:{s(s2r_stall)} S2R R0, SR_TID.X;
01:-:-:-:{s(predicate_stall)} ISETP.LT.AND P0, PT, R0, 0x20, PT;
--:-:-:-:{s(branch_stall)} @P0 BRA SYNC;
{chain}
SYNC:
--:-:-:-:{s(bar_stall)} BAR.SYNC 0x0;
--:-:-:-:1 FADD R7, R4, R4;
{exit_line(exit_stall)}
""", bar=1)
