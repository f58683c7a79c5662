"""CUDA C through the front door: compiler options and defines (Python API, result-cache key), and
the features the model leaves out refused by name (printf, device malloc)."""

from __future__ import annotations

import numpy as np
import pytest

from maxsim.errors import MaxsimError
from nvidia_tools import require_nvrtc

SOURCE = r"""
#ifndef SCALE
#define SCALE 1
#endif
extern "C" __global__ void scaled_ratio(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = SCALE * (a[i] / b[i]);
}
"""

OUT_OF_SCOPE = r"""
extern "C" __global__ void hello(float* a) { printf("thread %d\n", threadIdx.x); a[threadIdx.x] = 1.0f; }
extern "C" __global__ void heap(float* a)
{
    float* p = (float*)malloc(16);
    p[0] = 2.0f;
    a[threadIdx.x] = p[0];
    free(p);
}
"""


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    require_nvrtc()
    d = tmp_path_factory.mktemp("cudac")
    (d / "ratio.cu").write_text(SOURCE)
    (d / "scope.cu").write_text(OUT_OF_SCOPE)
    return d


def _run(k, a, b):
    from maxsim.host import launch
    n = len(a)
    r = launch(k, 1, 64, params={"a": "a", "b": "b", "c": "c", "n": n},
               buffers={"a": a, "b": b, "c": np.zeros(n, np.float32)}, timing=False, predict=False)
    return r.outputs["c"].view(np.float32)


def test_defines_and_options_reach_the_compiler(source):
    from maxsim.host import Kernel
    path = source / "ratio.cu"
    a = np.linspace(1, 2, 64, dtype=np.float32)
    b = np.linspace(3, 7, 64, dtype=np.float32)
    plain = Kernel.load(path)
    assert plain.compile_options == ()
    assert np.array_equal(_run(plain, a, b), a / b)
    k = Kernel.load(path, defines={"SCALE": 3})
    assert k.compile_options == ("-DSCALE=3",)
    assert np.array_equal(_run(k, a, b), np.float32(3) * (a / b))
    # -use_fast_math: the division is a MUFU.RCP and one multiply (no FCHK, no slow path)
    fast = Kernel.load(path, options=["-use_fast_math"])
    ops = [i.opcode for i in fast.code.instructions]
    assert "FCHK" not in ops and "MUFU" in ops and "FCHK" in [i.opcode for i in plain.code.instructions]
    got = _run(fast, a, b)
    assert np.max(np.abs(got - a / b) / (a / b)) < 2 ** -21  # __fdividef: 2 ulp


def test_compile_options_are_refused_where_they_cannot_apply(source, tmp_path):
    from maxsim.host import Kernel
    sass = tmp_path / "k.sass"
    sass.write_text("--:-:-:-:5      EXIT;\n")
    with pytest.raises(MaxsimError, match="apply to a .cu or .ptx file, not to SASS text"):
        Kernel.load(sass, options=["-use_fast_math"])
    with pytest.raises(MaxsimError, match="not a C macro name"):
        Kernel.load(source / "ratio.cu", defines={"2x": 1})


def test_the_cache_key_holds_options_and_defines(source, tmp_path):
    from maxsim.cache import ResultCache, kernel_source
    c = ResultCache(tmp_path, version="v")
    path = source / "ratio.cu"
    keys = {c.key(kernel=kernel_source(path, *args)) for args in
            [(), (["-use_fast_math"],), ((), {"SCALE": 2}), ((), {"SCALE": 3})]}
    assert len(keys) == 4
    assert c.key(kernel=kernel_source(path, (), {"SCALE": 2})) == c.key(kernel=kernel_source(path, [], {"SCALE": 2}))


@pytest.mark.parametrize("name,what", [("hello", r"calls vprintf \(printf\)"), ("heap", r"calls malloc \(device malloc\)")])
def test_out_of_scope_features_are_refused_by_name(source, name, what):
    from maxsim.host import Kernel
    with pytest.raises(MaxsimError, match=rf"scope.cu: kernel {name}: code\+0x[0-9a-f]+: {what}, which maxsim does "
                                          r"not model$"):
        Kernel.load(source / "scope.cu", kernel=name)


def test_cli_run_takes_defines_and_compiler_options(source, tmp_path, capsys):
    """maxsim run K.cu -D NAME=VALUE --nvrtc-option=OPT: the macros and options reach NVRTC (the
    saved output is the defined kernel's; fast math turns the division into MUFU.RCP)."""
    from maxsim.cli import main
    p = tmp_path / "fill.cu"
    p.write_text('extern "C" __global__ void fill(float* out)\n'
                 '{ int i = threadIdx.x; if (i < N) out[i] = SCALE / (i + 1.0f); }\n')
    out = tmp_path / "out"
    common = ["run", str(p), "--block", "32", "--param", "out=out", "--buffer", "out=zeros:32", "--functional"]
    assert main(common + ["-D", "N=16", "-DSCALE=3.0f", "--out", str(out)]) == 0
    got = np.load(out / "out.npy")
    want = np.zeros(32, np.float32)
    want[:16] = np.float32(3.0) / (np.arange(16, dtype=np.float32) + np.float32(1))
    assert np.array_equal(got, want)
    capsys.readouterr()
    assert main(common + ["-D", "N=16", "-DSCALE=3.0f", "--nvrtc-option=-use_fast_math"]) == 0
    text = capsys.readouterr().out
    assert "MUFU.RCP" in text and "FCHK" not in text
    sass = tmp_path / "k.sass"
    sass.write_text("--:-:-:-:5      EXIT;\n")
    assert main(["run", str(sass), "-D", "N=1"]) == 2
    assert "-D and --nvrtc-option apply to a .cu or .ptx file" in capsys.readouterr().err


def test_a_pipeline_of_launches_standardizes_columns(source):
    """Three launches, each reading what the one before wrote: column means, the columns
    centred by them, the centred columns' standard deviations; against numpy."""
    from maxsim.host import Kernel, launch
    from workloads.cuda import HERE
    import os
    stats, precise = os.path.join(HERE, "stats.cu"), os.path.join(HERE, "precise.cu")
    means = Kernel.load(stats, kernel="column_means")
    center = Kernel.load(precise, kernel="center_columns")
    stddev = Kernel.load(stats, kernel="column_stddev")
    m, n = 37, 45
    A = np.random.default_rng(8).standard_normal((m, n)).astype(np.float32) * 2 + 5
    r1 = launch(means, 1, 64, params={"A": "A", "mean": "mean", "m": m, "n": n},
                buffers={"A": A, "mean": np.zeros(n, np.float32)}, timing=False, predict=False)
    mean = r1.outputs["mean"].view(np.float32)
    r2 = launch(center, (1, m), 64, params={"A": "A", "mean": "mean", "m": m, "n": n},
                buffers={"A": A.copy(), "mean": mean}, timing=False, predict=False)
    centred = r2.outputs["A"].view(np.float32).reshape(m, n)
    r3 = launch(stddev, 1, 64, params={"A": "A", "sd": "sd", "m": m, "n": n},
                buffers={"A": centred, "sd": np.zeros(n, np.float32)}, timing=False, predict=False)
    A64 = A.astype(np.float64)
    np.testing.assert_allclose(centred, A64 - A64.mean(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r3.outputs["sd"].view(np.float32), A64.std(axis=0, ddof=1), rtol=1e-5)
    assert np.abs(centred.astype(np.float64).mean(axis=0)).max() < 1e-5
