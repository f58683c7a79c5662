"""Integer adds with a carry: the compiled pass (maxsim.functional.intpass) against the numpy form."""

import numpy as np

from maxsim.functional.aluops import iadd_carry_numpy
from maxsim.functional.intpass import run_add


class _Group:
    def __init__(self, rng, lanes):
        self.regs = rng.integers(0, 1 << 32, size=(4, lanes), dtype=np.uint64).astype(np.uint32)
        # condition codes of every kind: carry 0/1, the three-input carry (bits 1 + 16), zero, others
        self.cc = rng.choice(np.array([0, 1, 2, 3, 17, 19, 8, 12], dtype=np.uint32), size=lanes)

    def copy(self):
        g = _Group.__new__(_Group)
        g.regs, g.cc = self.regs.copy(), self.cc.copy()
        return g


def _value(rng, lanes):
    """A source: lanes' values (near the wrap-around often) or one value for all."""
    edge = np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF], dtype=np.uint32)
    if rng.random() < 0.3:
        return np.uint32(rng.choice(edge))
    v = rng.integers(0, 1 << 32, size=lanes, dtype=np.uint64).astype(np.uint32)
    pick = rng.random(lanes) < 0.4
    v[pick] = rng.choice(edge, size=int(pick.sum()))
    return v


def test_compiled_add_equals_numpy():
    rng = np.random.default_rng(3)
    lanes = 96
    for trial in range(300):
        g = _Group(rng, lanes)
        a, b = _value(rng, lanes), _value(rng, lanes)
        shift = int(rng.choice([0, 0, 1, 2, 5, 31]))
        use_x, set_cc = bool(rng.random() < 0.5), bool(rng.random() < 0.8)
        cin = int(rng.integers(0, 2))
        dst = int(rng.choice([-1, 0, 3]))
        m = None if rng.random() < 0.5 else rng.random(lanes) < 0.6
        want, got = g.copy(), g.copy()
        iadd_carry_numpy(want, dst, np.asarray(a, np.uint32) << np.uint32(shift), b, cin, use_x, set_cc, m)
        run_add(got, dst, a, b, shift, cin, use_x, set_cc, use_x, m)
        assert np.array_equal(got.regs, want.regs), trial
        assert np.array_equal(got.cc, want.cc), trial


def test_compiled_xmad_equals_numpy():
    from maxsim.functional import alu
    from maxsim.functional.intpass import XMAD_MODES, run_xmad
    from maxsim.functional.operands import writer
    rng = np.random.default_rng(5)
    lanes = 64
    names = list(XMAD_MODES)
    for trial in range(400):
        g = _Group(rng, lanes)
        a, b, c = _value(rng, lanes), _value(rng, lanes), _value(rng, lanes)
        mods = frozenset(n for n in names if rng.random() < 0.3)
        a_h1, b_h1, a_signed, b_signed = (bool(rng.random() < 0.5) for _ in range(4))
        m = None if rng.random() < 0.5 else rng.random(lanes) < 0.6
        want, got = g.copy(), g.copy()
        with np.errstate(over="ignore"):  # (as the launch runs: scalar sources wrap)
            writer(2, None)(want, alu.xmad(a, b, c, b, a_h1, b_h1, mods, a_signed, b_signed), m)
        run_xmad(got, 2, a, b, c, a_h1, b_h1, sum(XMAD_MODES[n] for n in mods), a_signed, b_signed, m)
        assert np.array_equal(got.regs, want.regs), (trial, sorted(mods), a_h1, b_h1, a_signed, b_signed)
