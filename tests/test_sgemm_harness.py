"""The SGEMM host harness: every generated variant computes C = alpha * A * B^T (NT, column-major)."""

from itertools import product
from pathlib import Path

import numpy as np
import pytest

from maxsim.errors import LaunchError
from workloads.sgemm.generator import KERNELS, REGMAPS, TRAVERSALS, generate
from workloads.sgemm.harness import run_sgemm, run_workload

SIZES = [(64, 64, 64), (128, 128, 128), (256, 256, 256), (70, 130, 72)]
REF = Path("/work/ref/maxas")  # maxas's kernels, if a developer saved them there (never committed)


@pytest.mark.parametrize("m,n,k", SIZES)
@pytest.mark.parametrize("kernel,traversal,regmap", list(product(KERNELS, TRAVERSALS, REGMAPS)))
def test_every_variant_computes_c(kernel, traversal, regmap, m, n, k):
    r = run_sgemm(kernel, m, n, k, traversal=traversal, regmap=regmap)
    assert r.verified, (r.max_abs_error, r.max_error_ratio, r.untouched)
    assert r.C.shape == (m, n) and r.max_error_ratio <= 1
    tile, threads = KERNELS[kernel].tile, KERNELS[kernel].threads
    assert r.grid == (-(-m // tile), -(-n // tile)) and r.block == threads
    assert r.warp_instructions == r.launch.warp_instructions > 0


def test_result_is_close_to_numpy_and_uses_alpha_and_leading_dimensions():
    r = run_sgemm("sgemm_64", 70, 130, 16, lda=80, ldb=136, ldc=75, alpha=-0.5, seed=3)
    assert r.verified and r.untouched
    assert np.allclose(r.C, r.reference, rtol=1e-5, atol=1e-5)
    assert r.max_abs_error < 1e-5
    # the error bound is tight enough to catch a wrong result: one element off by 1e-3 fails it
    wrong = r.C.astype(np.float64).copy()
    wrong[3, 5] += 1e-3
    assert np.abs(wrong - r.reference).max() > r.max_bound


def test_functional_results_do_not_depend_on_reuse_flags():
    a = run_sgemm("sgemm_128", 70, 130, 72, reuse=True)
    b = run_sgemm("sgemm_128", 70, 130, 72, reuse=False)
    assert b.verified and np.array_equal(a.C, b.C)


def test_traversals_sum_in_the_same_order():
    # every traversal accumulates each C element over k in the same order: bit-identical results
    res = [run_sgemm("sgemm_64", 64, 64, 32, traversal=t).C for t in TRAVERSALS]
    assert all(np.array_equal(res[0], x) for x in res[1:])


@pytest.mark.parametrize("k", [0, -8, 4, 12, 7])
def test_k_must_be_a_positive_multiple_of_8(k):
    with pytest.raises(LaunchError, match="multiple of 8"):
        run_sgemm("sgemm_64", 64, 64, k)


def test_bad_sizes_and_names():
    with pytest.raises(LaunchError, match="M must be a positive"):
        run_sgemm("sgemm_64", 0, 64, 64)
    with pytest.raises(LaunchError, match="lda must be a multiple of 4"):
        run_sgemm("sgemm_64", 64, 64, 64, lda=66)
    with pytest.raises(LaunchError, match="ldc must be at least"):
        run_sgemm("sgemm_64", 64, 64, 64, ldc=32)
    with pytest.raises(LaunchError, match="unknown SGEMM kernel"):
        run_sgemm("sgemm_256", 64, 64, 64)
    with pytest.raises(LaunchError, match="traversal"):
        run_sgemm("sgemm_64", 64, 64, 64, traversal="diagonal")


def test_a_kernel_file_runs_through_the_same_harness(tmp_path):
    path = tmp_path / "mine.sass"
    path.write_text(generate("sgemm_128", "raster"))
    r = run_sgemm("sgemm_128", 70, 130, 72, sass_path=path)
    assert r.verified and r.launch.kernel.name == "sgemm_128_raster_maxas"


def test_a_kernel_file_with_another_parameter_table_is_refused(tmp_path):
    text = generate("sgemm_64").replace("# Params(9):", "# Params(8):").replace("#\t8:0x160:4:0\n", "")
    path = tmp_path / "eight.sass"
    path.write_text(text)
    with pytest.raises(LaunchError, match="does not take the SGEMM parameters.*expected 9"):
        run_sgemm("sgemm_64", 64, 64, 64, sass_path=path)
    path.write_text(text.replace("#\t7:0x15c:4:0", "#\t7:0x15c:8:0"))
    with pytest.raises(LaunchError, match="SGEMM parameters"):
        run_sgemm("sgemm_64", 64, 64, 64, sass_path=path)


@pytest.mark.parametrize("kernel,name", [("sgemm_64", "sgemm_final_64.sass"), ("sgemm_128", "sgemm_final_128.sass")])
def test_maxas_own_kernel(kernel, name):
    if not (REF / name).exists():
        pytest.skip(f"maxas's {name} is not saved in {REF}")
    mine = run_sgemm(kernel, 70, 130, 72)
    theirs = run_sgemm(kernel, 70, 130, 72, sass_path=REF / name)
    assert theirs.verified and np.array_equal(mine.C, theirs.C)  # same summation order


def test_run_workload_functional_and_timed():
    out = run_workload("sgemm_64", m=64, n=128, k=16, timing=False)
    assert out["verified"] and out["grid"] == [1, 2] and "sm_cycles" not in out and "cycles" not in out
    out = run_workload("sgemm_128", m=128, n=128, k=16, hazards="strict")
    assert out["verified"] and out["hazards"] == 0 and out["sm_ctas"] == 1 and out["sm_cycles"] > 0


def test_the_other_kernel_file_is_refused(tmp_path):
    from maxsim.errors import LaunchError
    from workloads.sgemm.generator import generate
    from workloads.sgemm.harness import run_sgemm
    f = tmp_path / "k128.sass"
    f.write_text(generate("sgemm_128"))
    with pytest.raises(LaunchError, match="SharedSize 16384.*needs 8192"):
        run_sgemm("sgemm_64", 64, 64, 8, sass_path=str(f))


def test_a_large_problem_checks_the_sampled_tiles():
    """2048 x 2048 x 64 on sgemm_64 (1,024 CTAs, ~9.8 million warp instructions) is above the
    whole-grid limit: the timed SM's CTAs and the last one run and their tiles are checked."""
    from workloads.sgemm.harness import WHOLE_CHECK_WORK, functional_work
    assert functional_work("sgemm_64", 2048, 2048, 64)[0] > WHOLE_CHECK_WORK
    out = run_workload("sgemm_64", m=2048, n=2048, k=64, timing=False)
    assert out["verified"] and out["tiles_checked"] == 9  # 8 resident CTAs + the last
    assert out["result_checked"].startswith("9 of 1024 C tiles")
    from workloads.sgemm.generator import generate_kernel
    from workloads.sgemm.harness import _warp_instructions
    # 9 CTAs of 2 warps ran, nothing else
    assert out["functional_warp_instructions"] == 9 * 2 * _warp_instructions(generate_kernel("sgemm_64"), 64)
    assert 0 < out["max_error_over_tolerance"] <= 1


def test_a_corrupted_element_of_a_sampled_tile_is_detected(monkeypatch):
    import workloads.sgemm.harness as h
    real = h.launch

    def corrupt(kernel, *a, **kw):
        res = real(kernel, *a, **kw)  # the launch API's report: its memory holds C
        mem, params = res.bound.memory, kw["params"]
        c_ptr, ldc = res.bound.buffers["C"][0], params["ldc"]
        # row 2047, column 2047 of C: the last CTA's tile
        addr = c_ptr + 4 * (2047 * ldc + 2047)
        v = mem.read(addr, 1)
        mem.write(addr, v + np.float32(0.01))
        return res
    monkeypatch.setattr(h, "launch", corrupt)
    out = run_workload("sgemm_64", m=2048, n=2048, k=64, timing=False)
    assert not out["verified"] and out["max_error_over_tolerance"] > 1


def test_check_all_runs_the_whole_grid_and_sampled_can_be_asked_for_a_small_one():
    out = run_workload("sgemm_64", m=128, n=192, k=16, timing=False, check="sampled")
    assert out["verified"] and out["tiles_checked"] == 6  # 6 CTAs: all are the timed SM's
    out = run_workload("sgemm_64", m=128, n=192, k=16, timing=False, check="all")
    assert out["verified"] and out["result_checked"] == "whole C"
    with pytest.raises(LaunchError, match="unknown check"):
        run_workload("sgemm_64", m=64, n=64, k=8, check="some")
def test_run_workload_times_the_checked_run_as_separate_runs_would():
    """The timed SM and the GPU prediction reuse the whole-grid run's trace: the figures equal
    those of a fresh traced run of the SM's CTAs and of the prediction's own functional runs."""
    from maxsim.arch.config import load_config
    from maxsim.timing.run import simulate
    from workloads.sgemm.harness import _prepare, _sizes
    from workloads.sgemm.predict import predict_sgemm
    cfg = load_config()
    for name, m, n, k in (("sgemm_64", 192, 128, 64), ("sgemm_128", 128, 128, 32)):
        out = run_workload(name, cfg=cfg, m=m, n=n, k=k)
        geo, lda, ldb, ldc = _sizes(name, m, n, k, None, None, None)
        p = _prepare(geo, m, n, k, lda, ldb, ldc, 1.0, 0)
        every = [(x, y) for y in range(p.grid[1]) for x in range(p.grid[0])]
        _, sm = simulate(r_kernel(name), p.grid, p.block, p.params, p.memory, p.textures, cfg=cfg,
                         ctas=every[:out["sm_ctas"]])
        assert out["sm_cycles"] == sm.stats.cycles
        assert out["sm_warp_instructions"] == sm.stats.warp_instructions
        r = run_sgemm(name, m, n, k, trace_cfg=cfg)
        _, again = simulate(r.launch.kernel, r.grid, r.block, cfg=cfg, ctas=every[:out["sm_ctas"]],
                            launched=r.launch)
        assert again.stats.cycles == sm.stats.cycles
        assert again.stats.thread_instructions == sm.stats.thread_instructions > 0
        g = predict_sgemm(name, n, cfg, m=m, k=k)  # K <= 128: simulated at K itself, own functional run
        assert out["seconds"] == out["gpu_predicted_seconds"] == g["seconds"] and out["cycles"] == g["cycles"]
        assert out["gflops"] == out["gpu_predicted_gflops"] == g["gflops"]
        assert out["gpu_waves"] == g["waves"]


def r_kernel(name):
    from workloads.sgemm.generator import generate_kernel
    return generate_kernel(name)


def test_b_begins_a_page_of_its_own_when_it_fills_one():
    """A and B are two device allocations: B after A on a 256-byte boundary while it is smaller than
    a 2 MB page (packed), at the first page boundary after A's end when it fills a page or more."""
    from maxsim.functional.memory import DEVICE_PAGE
    from workloads.sgemm.problem import TEXTURE_BASE, texture_addresses

    assert DEVICE_PAGE == 2 * 1024 * 1024 and TEXTURE_BASE % DEVICE_PAGE == 0
    assert texture_addresses(512, 512) == (TEXTURE_BASE, TEXTURE_BASE + 512 * 512 * 4)  # 1 MB each
    assert texture_addresses(516, 8) == (TEXTURE_BASE, TEXTURE_BASE + 16 * 1024 + 256)  # 16,512 B
    a, b = texture_addresses(1280, 1280)  # 6.25 MB each: B at 8 MB
    assert (a, b - a) == (TEXTURE_BASE, 8 * 1024 * 1024)
    assert texture_addresses(4096, 4096)[1] - TEXTURE_BASE == 64 * 1024 * 1024  # A fills 32 pages
    assert texture_addresses(1280, 1280, ldb=64)[1] - TEXTURE_BASE == 1280 * 1280 * 4  # B of 400 KB
