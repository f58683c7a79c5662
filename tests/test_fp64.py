"""Double precision: the directed roundings of DADD / DMUL / DFMA against exact rational
arithmetic, and the fp64 unit's rate and latency in both timing cores (hand-derived cycles from
the config: one warp instruction every 1 / pipes.fp64 cycles per scheduler, results after
latency.fp64)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from maxsim.arch.config import load_config
from maxsim.functional.fp64 import round_op
from maxsim.validate import kernels as K
from maxsim.validate.kernels import issues, kernel, s

CFG = load_config()
LAT = CFG.latency
INTERVAL = int(round(1 / CFG.pipes.fp64))


def _operands(n, rng):
    x = rng.standard_normal(n) * 2.0 ** rng.integers(-60, 60, n)
    x[: n // 5] = rng.integers(0, 2 ** 63, n // 5, dtype=np.int64).view(np.float64)  # any bits
    return x[np.isfinite(x)]


@pytest.mark.parametrize("mode", ["RZ", "RM", "RP", "RN"])
def test_directed_rounding_brackets_the_exact_value(mode):
    """Each result is an fp64 neighbour of the exact value, on the mode's side: RM <= exact <= RP,
    and RM, RP one ulp apart unless exact; RN is numpy's; RZ is RM or RP by the sign."""
    rng = np.random.default_rng(11)
    a, b, c = (_operands(300, rng) for _ in range(3))
    n = min(map(len, (a, b, c)))
    a, b, c = a[:n], b[:n], c[:n]
    with np.errstate(over="ignore"):
        near = -(a[:20] * b[:20])
    c[:20] = np.where(np.isfinite(near), near, c[:20])  # cancellation
    for op in ("DADD", "DMUL", "DFMA"):
        got = round_op(op, a, b, c if op == "DFMA" else None, mode)
        for i in range(n):
            x, y, z = Fraction(float(a[i])), Fraction(float(b[i])), Fraction(float(c[i]))
            v = x + y if op == "DADD" else (x * y if op == "DMUL" else x * y + z)
            r = float(got[i])
            if math.isinf(r) or abs(v) > Fraction(np.finfo(np.float64).max) or v == 0:
                continue
            lo, hi = Fraction(r), Fraction(math.nextafter(r, math.inf))
            below = Fraction(math.nextafter(r, -math.inf))
            if mode == "RM" or (mode == "RZ" and v > 0):
                assert lo <= v < hi, (op, mode, a[i], b[i], c[i])
            elif mode == "RP" or mode == "RZ":
                assert below < v <= lo, (op, mode, a[i], b[i], c[i])
            else:
                assert abs(lo - v) <= abs(hi - v) and abs(lo - v) <= abs(below - v), (op, a[i], b[i], c[i])


def test_directed_rounding_signs_and_overflow():
    big = np.finfo(np.float64).max
    assert round_op("DMUL", np.array([big]), np.array([2.0]), None, "RZ")[0] == big
    assert math.isinf(round_op("DMUL", np.array([big]), np.array([2.0]), None, "RP")[0])
    assert math.copysign(1, round_op("DADD", np.array([1.0]), np.array([-1.0]), None, "RM")[0]) < 0
    assert math.copysign(1, round_op("DADD", np.array([1.0]), np.array([-1.0]), None, "RP")[0]) > 0
    assert math.isnan(round_op("DFMA", np.array([np.inf]), np.array([0.0]), np.array([1.0]), "RM")[0])


def _run(k, core, monkeypatch):
    from maxsim.timing.run import simulate
    monkeypatch.setenv("MAXSIM_CORE", core)
    res, sm = simulate(k, 1, 32, cfg=CFG, log=True, hazards="strict")
    return sm, sm.stats.to_dict()


@pytest.mark.parametrize("core", ["python", "compiled"])
def test_independent_dadds_issue_at_the_fp64_rate(core, monkeypatch):
    """n independent DADDs of one warp (stall 1, no dependences): the fp64 pipe takes one every
    1 / pipes.fp64 cycles (32 on GM204), so DADD i issues at i * 32 and the EXIT right after."""
    n = 4
    body = "\n".join(f"--:-:-:-:1 DADD R{2 * i + 8}, R2, R4;" for i in range(n)) + "\n" + K.exit_line(LAT.exit)
    sm, d = _run(kernel(body), core, monkeypatch)
    times = [t for t, _ in issues(sm)]
    assert times[:n] == [i * INTERVAL for i in range(n)]
    assert times[n] == (n - 1) * INTERVAL + 1


@pytest.mark.parametrize("core", ["python", "compiled"])
def test_a_dependent_dfma_waits_for_its_barrier(core, monkeypatch):
    """DFMA R4 with write barrier 1 (stall 2: the barrier is visible one cycle after it is set);
    the next DFMA reads R4 and waits on barrier 1: it issues latency.fp64 cycles after the first
    (the barrier clears when the result is written)."""
    body = (f"--:-:1:-:2 DFMA R4, R2, R2, R2;\n"
            f"01:-:-:-:1 DFMA R6, R4, R2, R2;\n" + K.exit_line(LAT.exit))
    sm, d = _run(kernel(body), core, monkeypatch)
    times = [t for t, _ in issues(sm)]
    assert times[1] - times[0] == LAT.fp64
    assert d["hazards"] == 0


@pytest.mark.parametrize("mode", ["RZ", "RM", "RP"])
def test_narrowing_an_fp64_to_fp32_rounds_by_the_mode(mode):
    """F2F.F32.F64.<mode>: the fp32 neighbour of the fp64 value on the mode's side."""
    from maxsim.functional.ieee import round_directed
    rng = np.random.default_rng(4)
    x = rng.standard_normal(400) * 2.0 ** rng.integers(-140, 140, 400)
    got = round_directed(x, np.zeros_like(x), mode)
    for v, r in zip(x, got):
        fv, fr = Fraction(float(v)), Fraction(float(r)) if np.isfinite(r) else None
        if fr is None or abs(v) > 3.4e38:
            continue
        up = Fraction(float(np.nextafter(r, np.float32(np.inf))))
        down = Fraction(float(np.nextafter(r, np.float32(-np.inf))))
        if mode == "RM" or (mode == "RZ" and v > 0):
            assert fr <= fv < up
        else:
            assert down < fv <= fr
