"""The maxas source language as other authors write it: names that share a register
(``NUMBER = NAMES``), text after an instruction's ';' (ignored with a note, as maxas does)."""

from __future__ import annotations

import pytest

from maxsim.asm import assemble_text
from maxsim.asm.registers import read_register_map
from maxsim.asm.source import Span
from maxsim.errors import SassParseError


def _spans(*lines):
    return [Span.of(x, n, "m.sass") for n, x in enumerate(lines, start=1)]


def test_names_sharing_one_register():
    m = read_register_map(_spans("83 = blkC, blkK", "0-3 : a<0-3>", "84=x"))
    assert m.fixed["blkC"] == m.fixed["blkK"] == 83 and m.fixed["x"] == 84
    with pytest.raises(SassParseError, match=r"m\.sass:1:1: '=' gives its names one register to share, not 2"):
        read_register_map(_spans("83-84 = p, q"))
    with pytest.raises(SassParseError, match="duplicate name 'p'"):
        read_register_map(_spans("83 = p, q", "84 = p"))


def test_shared_names_assemble_and_order_by_the_register():
    """Two names on one register: a dependency through either is one through the register (the
    scheduler may not move the second value's write above the first value's read)."""
    src = """\
<REGISTER_MAPPING>
    0 : tid
    4 = first, second
    5-6 : out, addr
</REGISTER_MAPPING>
<SCHEDULE_BLOCK>
S2R tid, SR_TID.X;
IADD first, tid, 0x1;
IADD out, first, first;
IADD second, tid, 0x7;
IADD out, out, second;
SHL addr, tid, 0x2;
IADD addr, addr, c[0x0][0x140];
</SCHEDULE_BLOCK>
STG [addr], out;
EXIT;
"""
    import numpy as np
    from maxsim.functional import GlobalMemory
    from maxsim.timing.run import simulate
    asm = assemble_text(src, "share.sass")
    assert asm.registers["first"] == asm.registers["second"] == 4
    mem = GlobalMemory()
    out = mem.alloc(4 * 64)
    _, sm = simulate(asm.kernel, 1, 64, [out], mem, hazards="strict")
    t = np.arange(64)
    assert mem.read(out, 64, np.uint32).tolist() == (2 * (t + 1) + t + 7).tolist()


def test_text_after_the_semicolon_is_a_note_as_maxas_ignores_it():
    src = """\
<REGISTER_MAPPING>
    0-1 : a, b
</REGISTER_MAPPING>
MOV a, RZ;
ISETP.EQ.AND P6, PT, a, RZ, PT;
@P6 BRA.U SKIP4;S
MOV b, 0x1;
SKIP4:
EXIT;
"""
    asm = assemble_text(src, "stray.sass")
    assert [i.opcode for i in asm.kernel.instructions][:3] == ["MOV", "ISETP", "BRA"]
    assert any(n.startswith("stray.sass:6:17: text after ';' ignored, as maxas ignores it: 'S'") for n in asm.notes)


def test_p2r_and_r2p_take_pr_and_carry_their_mask_predicates():
    """P2R reads, R2P writes the predicates of its mask: the assembler's names pass PR through, the
    scheduler keeps a predicate's writer before P2R and R2P before the predicate's reader, and the
    timing model sees R2P's predicates as results."""
    import numpy as np
    from maxsim.functional import GlobalMemory
    from maxsim.timing.run import simulate
    src = """\
<REGISTER_MAPPING>
    0-3 : tid, preds, out, addr
</REGISTER_MAPPING>
<SCHEDULE_BLOCK>
S2R tid, SR_TID.X;
ISETP.GE.AND P2, PT, tid, 0x10, PT;
ISETP.GE.AND P3, PT, tid, 0x20, PT;
P2R preds, PR, RZ, 0xc;
ISETP.GE.AND P2, PT, RZ, 0x1, PT;
ISETP.GE.AND P3, PT, RZ, 0x1, PT;
R2P PR, preds, 0xc;
MOV out, RZ;
@P2 IADD out, out, 0x1;
@P3 IADD out, out, 0x10;
SHL addr, tid, 0x2;
IADD addr, addr, c[0x0][0x140];
</SCHEDULE_BLOCK>
STG [addr], out;
EXIT;
"""
    asm = assemble_text(src, "p2r.sass")
    assert asm.hazards == ()
    r2p = next(i for i in asm.kernel.instructions if i.opcode == "R2P")
    assert r2p.dst_preds == (2, 3)
    mem = GlobalMemory()
    out = mem.alloc(4 * 64)
    simulate(asm.kernel, 1, 64, [out], mem, hazards="strict")
    t = np.arange(64)
    assert mem.read(out, 64, np.uint32).tolist() == ((t >= 16) * 1 + (t >= 32) * 16).tolist()


@pytest.mark.parametrize("stall,hazards", [(1, 1), (13, 0)])
def test_a_predicate_read_too_soon_after_r2p_is_a_hazard_in_both_checks_and_cores(stall, hazards):
    from maxsim.analysis import check_controls
    from maxsim.arch.config import load_config
    from sasskit import kernel
    from test_core_parity import twin_simulate
    assert load_config().latency.predicate == 13
    k = kernel(f"--:-:-:-:{stall:x} R2P PR, RZ, 0x4", "--:-:-:-:1 @P2 IADD R1, R1, 0x1", "--:-:-:-:5 EXIT")
    assert len(check_controls(k, load_config())) == hazards
    _, sm = twin_simulate(k, 1, 32)
    assert sm.stats.to_dict()["hazards"] == hazards


def test_cli_names_text_after_the_semicolon_in_one_line(tmp_path, capsys):
    from maxsim.cli import main
    from sasskit import header
    p = tmp_path / "stray.sass"
    p.write_text(header("stray", regs=8) + "--:-:-:-:1      MOV R1, RZ;S\n--:-:-:-:5      EXIT;\n")
    assert main(["analyze", str(p), "--rows", "none"]) == 0
    err = capsys.readouterr().err
    assert f"maxsim: warning: {p}:" in err and "text after ';' ignored, as maxas ignores it: 'S'" in err
