"""Values of clock() in the functional model: it reads 0 (time is the timing model's), so a kernel
whose branches, guards or addresses depend on the clock is refused by name, and one that stores
a clock-derived result runs with a warning. The flow is followed through registers, predicates
and redefinitions (a register reused after the clock read is not the clock's)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from maxsim.errors import LaunchError, SourceWarning
from maxsim.functional import GlobalMemory, launch
from maxsim.functional.slicing import clock_uses
from sasskit import kernel


def _run(k, n=32):
    mem = GlobalMemory()
    out = mem.alloc(4 * n)
    launch(k, 1, n, [out], mem)
    return mem.read(out, n, np.uint32)


def test_a_branch_on_the_clock_is_refused_naming_both_lines():
    k = kernel("--:-:1:-:1 S2R R2, SR_CLOCKLO", "01:-:-:-:6 IADD32I R3, R2, 0x5", "ISETP.LT.AND P0, PT, R3, 0x10, PT",
               "--:-:-:-:5 @P0 BRA DONE", "MOV R4, RZ", "DONE:", "--:-:-:-:5 EXIT", nparams=1)
    assert [(u.instr, u.clock, u.what) for u in clock_uses(k)] == [(3, 0, "guard")]
    with pytest.raises(LaunchError, match=r"test.sass:\d+: BRA uses the clock read at test.sass:\d+ "
                                          r"\(S2R SR_CLOCKLO\): its value decides whether it runs.*refused"):
        _run(k)


def test_an_address_from_the_clock_is_refused():
    k = kernel("--:-:1:-:1 CS2R R2, SR_CLOCKLO", "01:-:-:-:6 LOP32I.AND R3, R2, 0x7c",
               "IADD R3, R3, c[0x0][0x140]", "--:-:1:-:1 LDG R4, [R3]", "--:-:-:-:5 EXIT", nparams=1)
    with pytest.raises(LaunchError, match="LDG uses the clock read .* part of its memory address"):
        _run(k)


def test_a_stored_clock_difference_warns_and_reads_zero():
    k = kernel("--:-:1:-:1 S2R R2, SR_CLOCKLO", "--:-:2:-:1 S2R R5, SR_CLOCKLO", "03:-:-:-:6 IADD R6, R5, -R2",
               "--:-:3:-:1 S2R R0, SR_TID.X", "04:-:-:-:6 ISCADD R7, R0, c[0x0][0x140], 0x2", "STG [R7], R6",
               "--:-:-:-:5 EXIT", nparams=1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = _run(k)
    assert np.array_equal(got, np.zeros(32, np.uint32))
    assert [type(x.message) for x in w] == [SourceWarning]
    assert "stores a value computed from the clock read at test.sass:" in str(w[0].message)


def test_a_register_reused_after_the_clock_read_is_not_the_clocks():
    """R2 holds the clock, then (redefined) the output address: no refusal, no warning."""
    k = kernel("--:-:1:-:1 S2R R2, SR_CLOCKLO", "--:-:3:-:1 S2R R0, SR_TID.X",
               "05:-:-:-:6 ISCADD R2, R0, c[0x0][0x140], 0x2", "STG [R2], R0", "--:-:-:-:5 EXIT", nparams=1)
    assert clock_uses(k) == ()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(_run(k), np.arange(32, dtype=np.uint32))
