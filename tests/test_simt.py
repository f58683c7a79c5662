"""SIMT divergence and reconvergence (maxsim.functional.simt): if/else, nested if, loops left
with BRK, CONT, EXIT of some lanes, a data-dependent divergent kernel against Python, and the
issue cost of the serialised paths in the timing model."""

from __future__ import annotations

import numpy as np
import pytest

from maxsim.functional import GlobalMemory, launch
from maxsim.timing.run import simulate
from sasskit import kernel

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

# R0 = global thread index (block of 64), R1 = its word offset, R7 = &out[R0], R2 = &in[R0]
PROLOGUE = [
    "--:-:1:-:1 S2R R0, SR_TID.X",
    "--:-:2:-:2 S2R R8, SR_CTAID.X",
    "03:-:-:-:6 ISCADD R0, R8, R0, 0x6",
    "SHL R1, R0, 0x2",
    "IADD R7, R1, c[0x0][0x144]",
    "IADD R2, R1, c[0x0][0x140]",
]
EPILOGUE = ["STG [R7], R3", "--:-:-:-:5 EXIT"]


def run(body, inputs=None, n=64, block=64, sentinel=0xDEADBEEF, regs=16):
    """Run PROLOGUE + body + EPILOGUE on n threads; return out[] (int64 view of the uint32s)."""
    k = kernel(*(PROLOGUE + body + EPILOGUE), nparams=2, regs=regs)
    mem = GlobalMemory()
    src = mem.alloc(4 * n)
    out = mem.alloc(4 * n)
    mem.write(src, np.asarray(inputs if inputs is not None else np.zeros(n), dtype=np.uint32))
    mem.write(out, np.full(n, sentinel, np.uint32))
    res = launch(k, (n + block - 1) // block, block, [src, out], mem)
    return mem.read(out, n, np.uint32).astype(np.int64), res


IF_ELSE = [
    "LOP.AND R4, R0, 0x1",
    "--:-:-:-:d ISETP.NE.AND P0, PT, R4, RZ, PT",
    "SSY END",
    "--:-:-:-:5 @P0 BRA ODD",
    "MOV32I R3, 0x64",
    "IADD R3, R3, R0",
    "--:-:-:-:5 SYNC",
    "ODD:",
    "MOV32I R3, 0xc8",
    "IADD R3, R3, -R0",
    "--:-:-:-:5 SYNC",
    "END:",
    "IADD R3, R3, 0x1",
]


def test_if_else():
    out, res = run(IF_ELSE)
    t = np.arange(64)
    assert out.tolist() == (np.where(t % 2, 200 - t, 100 + t) + 1).tolist()
    # every warp diverges once; per warp 6 + 4 + 3 + 3 + 3 instructions, the 6 of the two
    # paths with 16 of 32 lanes active
    assert res.divergent_branches == 2
    assert res.warp_instructions == 2 * 19
    assert res.simd_efficiency == pytest.approx((13 * 32 + 6 * 16) / (19 * 32))


def test_if_else_partial_warp():
    # 40 threads: the second warp has 8 lanes; the lanes past the block never run
    out, res = run(IF_ELSE, n=40, block=40)
    t = np.arange(40)
    assert out.tolist() == (np.where(t % 2, 200 - t, 100 + t) + 1).tolist()


def test_uniform_branch_does_not_diverge():
    body = ["LOP.AND R4, R0, 0x20"] + IF_ELSE[1:]  # the condition is bit 5: the same in a warp
    out, res = run(body)
    t = np.arange(64)
    assert out.tolist() == (np.where(t & 32, 200 - t, 100 + t) + 1).tolist()
    assert res.divergent_branches == 0 and res.simd_efficiency == 1.0


def test_nested_if():
    body = [
        "MOV R3, RZ",
        "LOP.AND R4, R0, 0x1",
        "--:-:-:-:d ISETP.NE.AND P0, PT, R4, RZ, PT",
        "LOP.AND R4, R0, 0x2",
        "--:-:-:-:d ISETP.NE.AND P1, PT, R4, RZ, PT",
        "SSY END1",
        "--:-:-:-:5 @!P0 BRA EVEN",
        "SSY END2",
        "--:-:-:-:5 @P1 BRA ODD_B1",
        "IADD R3, R3, 0x10",
        "--:-:-:-:5 SYNC",
        "ODD_B1:",
        "IADD R3, R3, 0x20",
        "--:-:-:-:5 SYNC",
        "END2:",
        "IADD R3, R3, 0x1",
        "--:-:-:-:5 SYNC",
        "EVEN:",
        "IADD R3, R3, 0x100",
        "--:-:-:-:5 SYNC",
        "END1:",
        "IADD R3, R3, R0",
    ]
    out, res = run(body)
    t = np.arange(64)
    want = np.where(t % 2 == 0, 0x100, np.where(t & 2, 0x21, 0x11)) + t
    assert out.tolist() == want.tolist()
    assert res.divergent_branches == 4  # two per warp


def test_divergent_loop_with_brk():
    # for (i = 0; i < (tid & 7); i++) sum += i;  the loop is left lane by lane with BRK
    body = [
        "LOP.AND R4, R0, 0x7",
        "MOV R3, RZ",
        "MOV R5, RZ",
        "PBK DONE",
        "LOOP:",
        "--:-:-:-:d ISETP.GE.AND P0, PT, R5, R4, PT",
        "--:-:-:-:5 @P0 BRK",
        "IADD R3, R3, R5",
        "IADD R5, R5, 0x1",
        "--:-:-:-:5 BRA LOOP",
        "DONE:",
        "IADD R3, R3, 0x1000",  # after the loop, every lane again
    ]
    out, res = run(body)
    n = np.arange(64) & 7
    assert out.tolist() == (n * (n - 1) // 2 + 0x1000).tolist()
    # each warp loops 7 times (its longest lane), ISETP + BRK + 3 per pass, then ISETP + BRK
    assert res.warp_instructions == 2 * (6 + 4 + 7 * 5 + 2 + 1 + 2)


def test_divergent_back_edge_then_brk():
    # do { sum += i; i++; } while (i < n); a divergent backward branch, the lanes that fall out
    # of the loop wait at the PBK with BRK
    body = [
        "LDG R4, [R2]",
        "MOV R3, RZ",
        "MOV R5, RZ",
        "PBK DONE",
        "LOOP:",
        "IADD R3, R3, R5",
        "IADD R5, R5, 0x1",
        "--:-:-:-:d ISETP.LT.AND P1, PT, R5, R4, PT",
        "--:-:-:-:5 @P1 BRA LOOP",
        "--:-:-:-:5 BRK",
        "DONE:",
    ]
    n = (np.arange(64) * 7) % 11
    out, res = run(body, inputs=n)
    want = [sum(range(max(int(v), 1))) for v in n]
    assert out.tolist() == want


def test_cont():
    # for (i = 0; i < 8; i++) { if (i & tid) continue; sum += i; }
    body = [
        "MOV R3, RZ",
        "MOV R5, RZ",
        "PBK DONE",
        "LOOP:",
        "--:-:-:-:d ISETP.GE.AND P0, PT, R5, 0x8, PT",
        "--:-:-:-:5 @P0 BRK",
        "PCNT NEXT",
        "LOP.AND R6, R5, R0",
        "--:-:-:-:d ISETP.NE.AND P1, PT, R6, RZ, PT",
        "--:-:-:-:5 @P1 CONT",
        "IADD R3, R3, R5",
        "--:-:-:-:5 CONT",
        "NEXT:",
        "IADD R5, R5, 0x1",
        "--:-:-:-:5 BRA LOOP",
        "DONE:",
    ]
    out, res = run(body)
    want = [sum(i for i in range(8) if not i & t) for t in range(64)]
    assert out.tolist() == want


def test_exit_of_some_lanes():
    # lanes with tid % 4 == 0 exit at once; inside an SSY region the fall-through lanes of a
    # divergent branch exit, the others reconverge without them
    body = [
        "LOP.AND R4, R0, 0x3",
        "--:-:-:-:d ISETP.EQ.AND P0, PT, R4, RZ, PT",
        "--:-:-:-:5 @P0 EXIT",
        "--:-:-:-:d ISETP.EQ.AND P1, PT, R4, 0x1, PT",
        "SSY END",
        "--:-:-:-:5 @!P1 BRA KEEP",
        "MOV32I R3, 0x11",
        "STG [R7], R3",
        "--:-:-:-:5 EXIT",
        "KEEP:",
        "MOV32I R3, 0x22",
        "--:-:-:-:5 SYNC",
        "END:",
        "IADD R3, R3, R4",
    ]
    out, res = run(body)
    r = np.arange(64) % 4
    want = np.where(r == 0, 0xDEADBEEF, np.where(r == 1, 0x11, 0x22 + r))
    assert out.tolist() == want.tolist()


def test_whole_warp_exits_in_a_divergent_path_with_barrier_after():
    # warp 0 exits entirely (inside a divergent region of warp 1); the BAR.SYNC after it waits
    # only for the live warp
    body = [
        "--:-:-:-:d ISETP.LT.U32.AND P0, PT, R0, 0x28, PT",
        "SSY END",
        "--:-:-:-:5 @!P0 BRA LIVE",
        "--:-:-:-:5 EXIT",
        "LIVE:",
        "--:-:-:-:5 SYNC",
        "END:",
        "--:-:-:-:5 BAR.SYNC 0x0",
        "MOV R3, R0",
    ]
    out, res = run(body)
    t = np.arange(64)
    assert out.tolist() == np.where(t < 40, 0xDEADBEEF, t).tolist()


COLLATZ = [
    "--:-:1:-:2 LDG R3, [R2]",
    "MOV R5, RZ",
    "PBK DONE",
    "LOOP:",
    "01:-:-:-:d ISETP.LE.U32.AND P0, PT, R3, 0x1, PT",
    "--:-:-:-:5 @P0 BRK",
    "LOP.AND R6, R3, 0x1",
    "--:-:-:-:d ISETP.NE.AND P1, PT, R6, RZ, PT",
    "SSY JOIN",
    "--:-:-:-:5 @P1 BRA ODD",
    "SHR.U32 R3, R3, 0x1",
    "--:-:-:-:5 SYNC",
    "ODD:",
    "ISCADD R3, R3, R3, 0x1",
    "IADD R3, R3, 0x1",
    "--:-:-:-:5 SYNC",
    "JOIN:",
    "IADD R5, R5, 0x1",
    "--:-:-:-:5 BRA LOOP",
    "DONE:",
    "MOV R3, R5",
]


def collatz_steps(x):
    n = 0
    while x > 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        n += 1
    return n


def collatz_problem(n=128, seed=5):
    return np.random.default_rng(seed).integers(1, 200, size=n).astype(np.uint32)


def test_collatz_against_python():
    # a data-dependent loop with an if/else inside: divergence nested in divergence
    x = collatz_problem()
    out, res = run(COLLATZ, inputs=x, n=x.size)
    assert out.tolist() == [collatz_steps(int(v)) for v in x]
    assert res.divergent_branches > 0 and res.simd_efficiency < 0.6


def test_collatz_timing_only_trace_matches_full_run():
    # the timing-only slice keeps every guard: the same trace as the full run
    from maxsim.functional.trace import TraceRecorder
    x = collatz_problem(64)
    k = kernel(*(PROLOGUE + COLLATZ + EPILOGUE), nparams=2, regs=16)
    pcs = []
    for only in (False, True):
        mem = GlobalMemory()
        src, out = mem.alloc(256), mem.alloc(256)
        mem.write(src, x)
        rec = TraceRecorder(lambda kind, addr, act, nbytes: [0] * addr.shape[0])
        res = launch(k, 1, 64, [src, out], mem, recorder=rec, timing_only=only)
        pcs.append([res.trace[w].pcs() for w in range(2)])
    assert pcs[0] == pcs[1]


# ---- timing: the serialised paths cost issue slots ---------------------------------------------

def _paths_kernel(cond_bit, n=16):
    body = [f"LOP.AND R4, R0, {cond_bit:#x}",
            "--:-:-:-:d ISETP.NE.AND P0, PT, R4, RZ, PT",
            "SSY END",
            "--:-:-:-:6 @P0 BRA TAKEN"]
    body += ["--:-:-:-:6 IADD R3, R3, 0x1"] * n + ["--:-:-:-:6 SYNC", "TAKEN:"]
    body += ["--:-:-:-:6 IADD R3, R3, 0x2"] * n + ["--:-:-:-:6 SYNC", "END:"]
    return kernel(*(PROLOGUE + ["MOV R3, RZ"] + body + EPILOGUE), nparams=2, regs=16)


def _timed(k, core=None):
    mem = GlobalMemory()
    src, out = mem.alloc(256), mem.alloc(256)
    res, sm = simulate(k, 1, 64, [src, out], mem)
    return res, sm.stats, mem.read(out, 64, np.uint32)


def test_divergent_paths_cost_issue_slots():
    uniform = _timed(_paths_kernel(0x20))  # warp 0 falls through, warp 1 takes the branch
    divergent = _timed(_paths_kernel(0x1))  # both warps run both paths
    t = np.arange(64)
    assert uniform[2].tolist() == np.where(t & 0x20, 32, 16).tolist()
    assert divergent[2].tolist() == np.where(t & 1, 32, 16).tolist()
    su, sd = uniform[1], divergent[1]
    # each warp issues one more path: 16 IADD + SYNC, each with stall 6; the two warps sit on
    # different schedulers and never wait on anything else, so the run is 17 x 6 cycles longer
    assert sd.warp_instructions - su.warp_instructions == 2 * 17
    assert sd.cycles - su.cycles == 17 * 6
    du, dd = su.to_dict(), sd.to_dict()
    assert du["divergent_branches"] == 0 and dd["divergent_branches"] == 2
    assert du["simd_efficiency"] == 1.0
    per_warp = 6 + 1 + 4 + 2 * 17 + 2  # prologue, MOV, LOP..BRA, the two paths, STG + EXIT
    assert dd["simd_efficiency"] == pytest.approx(1 - (2 * 17 * 16) / (per_warp * 32))


def test_ssy_takes_no_guard():
    from maxsim.errors import SassParseError
    with pytest.raises(SassParseError, match=r"test.sass:\d+:\d+: SSY cannot be guarded"):
        kernel("@P0 SSY END", "END:", "EXIT")


@pytest.mark.parametrize("edge", [511, 100])
def test_warps_that_go_on_after_a_divergent_branch_keep_their_own_lanes(edge):
    """Threads 0 and ``edge`` of two CTAs of 256 take a branch: their warps diverge and the others
    go on as one group, a run of consecutive warps (edge 511: warps 1-14, taken as a slice) or not
    (edge 100: warp 3 diverges too); every lane's result and its thread id read after the
    reconvergence are its own."""
    body = [
        "--:-:-:-:d ISETP.EQ.AND P0, PT, R0, RZ, PT",
        f"--:-:-:-:d ISETP.EQ.OR P0, PT, R0, {hex(edge)}, P0",
        "SSY END",
        "--:-:-:-:5 @P0 BRA EDGE",
        "MOV32I R3, 0x64",
        "IADD R3, R3, R0",
        "--:-:-:-:5 SYNC",
        "EDGE:",
        "MOV32I R3, 0xc8",
        "IADD R3, R3, -R0",
        "--:-:-:-:5 SYNC",
        "END:",
        "--:-:1:-:1 S2R R5, SR_TID.X",
        "01:-:-:-:6 IADD R3, R3, R5",
    ]
    prologue = PROLOGUE[:2] + ["03:-:-:-:6 ISCADD R0, R8, R0, 0x8"] + PROLOGUE[3:]
    k = kernel(*(prologue + body + EPILOGUE), nparams=2, regs=16)
    mem = GlobalMemory()
    src, out = mem.alloc(4 * 512), mem.alloc(4 * 512)
    res = launch(k, 2, 256, [src, out], mem)
    t = np.arange(512)
    want = np.where((t == 0) | (t == edge), 200 - t, 100 + t) + t % 256
    assert (mem.read(out, 512, np.uint32).astype(np.int64) == want % (1 << 32)).all()
    assert res.warp_instructions > 0
