"""Timing-only launches: the static slice keeps what the trace depends on, so the trace equals the
full run's, and the results of such a launch cannot be read by mistake.

(Every kernel of test_kernels.py and of the single-instruction tests is also checked this way:
see conftest.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import timing_only_check as toc
from maxsim.errors import LaunchError
from maxsim.functional import GlobalMemory, launch
from maxsim.functional import fp32, slicing
from maxsim.functional.alu import fma32
from maxsim.sass import parse_text

from sasskit import header

# ---------------------------------------------------------------------------------------------
# the SGEMM kernels, sizes with partial tiles


@pytest.mark.parametrize("name,m,n,k", [("sgemm_64", 64, 64, 16), ("sgemm_64", 100, 70, 24),
                                        ("sgemm_128", 130, 40, 16), ("sgemm_128", 128, 128, 8)])
def test_sgemm_timing_only_trace_equals_full_trace(name, m, n, k):
    from workloads.sgemm.harness import _prepare, _sizes
    from workloads.sgemm.generator import generate_kernel
    geo, lda, ldb, ldc = _sizes(name, m, n, k, None, None, None)
    p = _prepare(geo, m, n, k, lda, ldb, ldc, 1.0, 0)
    kernel = generate_kernel(name)
    full, fast = toc.compare(kernel, p.grid, p.block, p.params, p.memory, p.textures)
    assert fast.timing_only and not full.timing_only


def test_sgemm_slice_skips_the_ffmas_and_their_shared_loads():
    from workloads.sgemm.generator import generate_kernel
    kernel = generate_kernel("sgemm_64")
    s = slicing.timing_slice(kernel)
    ops = [i.opcode for i in kernel.instructions]
    ffma = [c for c, op in zip(s.computed, ops) if op == "FFMA"]
    assert len(ffma) >= 512 and not any(ffma)
    # the fragments of A and B the FFMAs read from shared memory are not loaded
    lds128 = [c for c, i in zip(s.computed, kernel.instructions) if i.full_opcode == "LDS.U.128"]
    assert lds128 and not any(lds128)
    assert s.global_stores_skipped and not s.global_loads_needed
    # but the address arithmetic is computed
    assert all(c for c, op in zip(s.computed, ops) if op in ("ISCADD", "XMAD", "S2R"))


# ---------------------------------------------------------------------------------------------
# kernels whose control flow or addresses depend on loaded or computed values

# each thread follows a chain of two pointers through global memory, then through shared memory
POINTER_CHASE = header("chase", regs=32, shared=256, nparams=2) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      SHL R1, R0, 0x2;
--:-:-:-:6      IADD R2, R1, c[0x0][0x140];
--:-:1:-:1      LDG R3, [R2];
01:-:-:-:6      SHL R4, R3, 0x2;
--:-:-:-:6      IADD R4, R4, c[0x0][0x140];
--:-:1:-:1      LDG R5, [R4];
01:-:-:-:1      STS [R1], R5;
--:-:-:-:5      BAR.SYNC 0x0;
--:-:-:-:6      SHL R6, R5, 0x2;
--:-:1:-:1      LDS R7, [R6];
01:-:-:-:6      SHL R8, R7, 0x2;
--:-:-:-:6      IADD R8, R8, c[0x0][0x144];
--:-:-:-:1      STG.CG [R8], R0;
--:-:-:-:5      EXIT;
"""


def _chase_memory(n=64, seed=3):
    rng = np.random.default_rng(seed)
    mem = GlobalMemory()
    src = mem.alloc(4 * n)
    dst = mem.alloc(4 * n)
    mem.write(src, rng.permutation(n).astype(np.uint32))
    return mem, [src, dst]


def test_pointer_chase_through_global_and_shared_memory():
    k = parse_text(POINTER_CHASE)
    s = slicing.timing_slice(k)
    assert s.global_loads_needed
    assert all(s.computed)  # every value reaches an address
    mem, params = _chase_memory()
    full, fast = toc.compare(k, 1, 64, params, mem)
    assert full.trace is not None


# a float sum decides, per warp, whether the warp loads twice more
FLOAT_BRANCH = header("fbranch", regs=32, nparams=2) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      SHR.U32 R1, R0, 0x5;
--:-:-:-:6      SHL R1, R1, 0x2;
--:-:-:-:6      IADD R2, R1, c[0x0][0x140];
--:-:-:-:1      MOV32I R9, 0xbf800000;
--:-:1:-:1      LDG R3, [R2];
01:-:-:-:6      FFMA R4, R3, 2.0, R9;
--:-:-:-:6      ISETP.GT.AND P0, PT, R4, RZ, PT;
--:-:-:-:5  @P0 BRA SKIP;
--:-:1:-:1      LDG R5, [R2+0x40];
--:-:1:-:1      LDG R6, [R2+0x80];
SKIP:
--:-:-:-:6      SHL R7, R0, 0x2;
--:-:-:-:6      IADD R7, R7, c[0x0][0x144];
--:-:-:-:1      STG.CG [R7], R4;
--:-:-:-:5      EXIT;
"""


def test_float_result_feeding_a_branch_is_computed():
    k = parse_text(FLOAT_BRANCH)
    s = slicing.timing_slice(k)
    ffma = next(i for i in k.instructions if i.opcode == "FFMA")
    assert s.computed[ffma.index]
    mem = GlobalMemory()
    src = mem.alloc(4 * 64)
    dst = mem.alloc(4 * 256)
    mem.write(src, np.array([0.2, 0.9, 0.4, 0.7] + [0.0] * 60, np.float32))  # warps 1 and 3 branch
    full, fast = toc.compare(k, 1, 128, [src, dst], mem)
    lens = [len(full.trace[w]) for w in range(4)]
    assert lens[0] == lens[2] == lens[1] + 2 == lens[3] + 2


def test_a_slice_that_drops_needed_work_gives_another_trace(monkeypatch):
    """The comparison can fail: computing nothing (no slice) changes the float-branch trace."""
    k = parse_text(FLOAT_BRANCH)
    nothing = slicing.TimingSlice(tuple(i.opcode in ("LDG", "STG", "S2R", "SHR", "SHL", "IADD", "MOV32I")
                                        for i in k.instructions), True, True)
    monkeypatch.setattr(slicing, "timing_slice", lambda kernel: nothing)
    mem = GlobalMemory()
    src = mem.alloc(4 * 64)
    dst = mem.alloc(4 * 256)
    mem.write(src, np.array([0.2, 0.9, 0.4, 0.7] + [0.0] * 60, np.float32))
    with pytest.raises(AssertionError, match="differs"):
        toc.compare(k, 1, 128, [src, dst], mem)


# ---------------------------------------------------------------------------------------------
# misuse


def test_results_of_a_timing_only_launch_cannot_be_read():
    k = parse_text(FLOAT_BRANCH)
    mem = GlobalMemory()
    src = mem.alloc(4 * 64)
    dst = mem.alloc(4 * 256)
    res = launch(k, 1, 128, [src, dst], mem, timing_only=True)
    assert res.timing_only
    with pytest.raises(LaunchError, match="timing-only"):
        mem.read(dst, 4)


# ---------------------------------------------------------------------------------------------
# the compiled fp32 kernel against the numpy reference


def test_compiled_ffma_equals_numpy_reference_bit_for_bit():
    rng = np.random.default_rng(7)
    n = 4096
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38, 3.4e38, 1.0],
                        np.float32)
    vals = []
    for _ in range(3):
        v = (rng.standard_normal(n) * np.exp2(rng.integers(-140, 120, n))).astype(np.float32)
        v[rng.integers(0, n, 200)] = rng.choice(specials, 200)
        vals.append(v)
    a, b, c = vals
    fr = np.zeros((4, n), np.float32)
    fr[0], fr[1], fr[2] = a, b, c
    table = np.array([[fp32.FFMA, 3, 0, 1, 2, 0]], np.int64)
    fp32.run(fr, table, np.zeros(1, np.float32), np.zeros(1, bool), False)
    with np.errstate(all="ignore"):
        want = fma32(a, b, c)
    same = (fr[3].view(np.uint32) == np.asarray(want, np.float32).view(np.uint32)) | (np.isnan(fr[3]) & np.isnan(want))
    assert same.all()
    # masked lanes keep their old values
    fr[3] = 5.0
    mask = rng.random(n) < 0.5
    fp32.run(fr, table, np.zeros(1, np.float32), mask, True)
    assert (fr[3][~mask] == 5.0).all()
    got = fr[3][mask]
    ok = (got.view(np.uint32) == np.asarray(want, np.float32)[mask].view(np.uint32)) | (np.isnan(got) & np.isnan(want[mask]))
    assert ok.all()


# ---------------------------------------------------------------------------------------------
# the summaries the trace records


def test_sector_summaries_equal_a_per_warp_unique():
    from maxsim.timing.summaries import sectors
    rng = np.random.default_rng(5)
    for t in range(60):
        nw, nb = int(rng.integers(1, 6)), int(rng.choice([4, 8, 16]))
        addr = rng.integers(0, 4000, (nw, 32)) // nb * nb
        act = rng.random((nw, 32)) < (0.0 if t % 7 == 0 else 0.7)
        got = sectors(addr, act, nb)
        for w in range(nw):
            want = sorted({(int(a) + j) // 32 * 32 for a, on in zip(addr[w], act[w]) if on for j in range(0, nb, 4)})
            assert got[w].tolist() == want


def test_sector_summaries_of_many_warps_in_any_lane_order():
    # the functional model's own dtype (uint32 addresses) and group sizes (hundreds of warps), lanes
    # in address order, reversed or shuffled, addresses far above 2^31
    from maxsim.timing.summaries import sectors
    rng = np.random.default_rng(9)
    for order in ("sorted", "reversed", "shuffled"):
        nw, nb = 300, 16
        base = rng.integers(0, 1 << 27, nw)[:, None] * 16 + (3 << 30)
        addr = (base + 16 * np.arange(32)[None, :] * rng.integers(1, 5, (nw, 1))).astype(np.uint32)
        if order == "reversed":
            addr = addr[:, ::-1].copy()
        elif order == "shuffled":
            addr = rng.permuted(addr, axis=1)
        act = rng.random((nw, 32)) < 0.9
        got = sectors(addr, act, nb)
        assert len(got) == nw
        for w in range(0, nw, 7):
            want = sorted({int(a) // 32 * 32 for a, on in zip(addr[w], act[w]) if on})
            assert got[w].tolist() == want


def test_repeated_shared_patterns_get_the_same_summary():
    from maxsim.arch.config import load_config
    from maxsim.timing.shared_memory import warp_wavefronts
    from maxsim.timing.summaries import make_summariser
    cfg = load_config()
    summarise = make_summariser(cfg)
    rng = np.random.default_rng(2)
    addr = (rng.integers(0, 1024, (3, 32)) * 4).astype(np.uint32)
    act = np.ones((3, 32), bool)
    a = summarise("lds", addr, act, 4)
    assert summarise("lds", addr.copy(), act, 4) is a
    assert summarise("lds", addr, act, 16) is not a  # another width is another pattern
    addr[1, 3] += 128
    b = summarise("lds", addr, act, 4)
    assert b.tolist() == warp_wavefronts(addr, act, 4, cfg.shared.banks, cfg.shared.bank_width).tolist()
