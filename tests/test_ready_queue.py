"""The compiled core starting an SM's next CTA itself from the block dispatcher's ready queue
(``core._next_cta``): every figure of a launch the same as when Python starts each CTA."""

import json
import os

import numpy as np
import pytest

import maxsim
from maxsim.gpu import gpu as gpu_module
from maxsim.host.kernel import Kernel
from maxsim.timing import core as K
from maxsim.timing.sm import SM

ROOT = os.path.join(os.path.dirname(__file__), "..")
HOST_FIELDS = ("wall", "host", "seconds_cpu", "elapsed", "time_s", "sim_seconds", "per_second")


def _figures(report):
    d = json.loads(report.to_json())
    return {k: v for k, v in d.items() if not any(w in k for w in HOST_FIELDS)}


def _launch(case, monkeypatch, core_starts):
    """A whole-GPU launch in full; ``core_starts`` false: Python starts every CTA (the SMs never let
    the core). Returns the report and how many CTAs the core started. "windows": the stencil with no
    timed SM, its traces streamed in windows (a trace router joins them to resident warps)."""
    counted = [0]
    routers = []
    sync = SM._sync
    router = gpu_module.TraceRouter.__init__

    def made(self, *args):
        routers.append(self)
        router(self, *args)
    monkeypatch.setattr(gpu_module.TraceRouter, "__init__", made)

    def counting(self):
        counted[0] += int(self._X[self._xa + 1, K.XB_NCTA])
        return sync(self)
    monkeypatch.setattr(SM, "_sync", counting)
    if not core_starts:
        update = SM._update_fast

        def never(self):
            update(self)
            self._X[self._xa, K.XA_FAST] = 0
        monkeypatch.setattr(SM, "_update_fast", never)
    rng = np.random.default_rng(0)
    if case in ("stencil", "windows"):
        # 2-D stencil, CTAs of 8 warps that all run the same code: 512 CTAs, about four waves
        k = Kernel.load(os.path.join(ROOT, "workloads/cuda/stencil.cu"), kernel="stencil5")
        n = 256
        a = rng.standard_normal((n, 2 * n), dtype=np.float32)
        r = maxsim.launch(k, grid=(2 * n // 32, n // 8), block=(32, 8),
                          params={"in": "a", "out": "o", "h": n, "w": 2 * n, "c0": 0.5, "c1": 0.125},
                          buffers=dict(a=a, o=np.zeros_like(a)), config="gm204", gpu_method="full",
                          timing=case == "stencil")
        want = a.copy()
        want[1:-1, 1:-1] = 0.5 * a[1:-1, 1:-1] + 0.125 * (a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1] + a[2:, 1:-1])
        np.testing.assert_allclose(r.outputs["o"], want, rtol=1e-5, atol=1e-5)
        assert bool(routers) == (case == "windows")
    else:
        # a shuffle reduction: a CTA's warps run different code (the first one sums the others')
        k = Kernel.load(os.path.join(ROOT, "workloads/cuda/reduce_shfl.cu"))
        n = 1 << 17
        x = rng.standard_normal(n, dtype=np.float32)
        r = maxsim.launch(k, grid=n // 256, block=256, params=dict(x="x", sums="s", n=n),
                          buffers=dict(x=x, s=np.zeros(n // 256, np.float32)), config="gm204", gpu_method="full")
        np.testing.assert_allclose(r.outputs["s"], x.reshape(-1, 256).astype(np.float64).sum(axis=1),
                                   rtol=1e-4, atol=1e-4)
    return r, counted[0]


@pytest.mark.parametrize("case", ["stencil", "windows", "reduce"])
def test_ctas_the_core_starts_change_no_figure(case, monkeypatch):
    with monkeypatch.context() as m:
        by_python, none = _launch(case, m, core_starts=False)
    with monkeypatch.context() as m:
        by_core, started = _launch(case, m, core_starts=True)
    assert none == 0
    # most of the 512 CTAs after the first wave (16 SMs, 8 or more CTAs each) are started by the
    # core (the rest when its queue runs out, a trace buffer is full, or on the timed SM)
    assert started > 256
    assert _figures(by_core) == _figures(by_python)
    assert by_core.prediction.cycles == by_python.prediction.cycles
