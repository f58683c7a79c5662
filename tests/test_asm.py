"""The maxas source-language front end (maxsim/asm) and `maxsim asm`.

Kernels of our own in the source language (tests/asm_kernels.py) are assembled, run functionally
(results against numpy) and through the timing model with the hazard checker strict; the final
text round-trips; the scheduler keeps dependencies (randomised blocks); the ~ allocator avoids
the bank conflicts maxas's rule promises to avoid; bad input gives one-line errors.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from maxsim.analysis import NO_REUSE_MODEL, analyze_banks, check_controls
from maxsim.asm import assemble_text, is_source, load_kernel
from maxsim.asm.expressions import ExpressionError, evaluate
from maxsim.asm.registers import read_register_map
from maxsim.asm.source import Span
from maxsim.cli import main
from maxsim.errors import SassParseError
from maxsim.functional import GlobalMemory, Texture1D, launch
from maxsim.sass import format_kernel, parse_text
from maxsim.timing.run import simulate

from asm_kernels import FFMA_CHAIN, SHARED_SUM, TEX_SUM, VADD, reduction

RNG = np.random.default_rng(7)


# ---- the four kernels: functional result, timing (strict hazards), round trip ---------------------

def _vadd_case():
    x = RNG.standard_normal(128).astype(np.float32)
    y = RNG.standard_normal(128).astype(np.float32)

    def setup():
        m = GlobalMemory()
        pa, pb, pc = m.alloc(512), m.alloc(512), m.alloc(512)
        assert (pa, pb, pc) == (0x1000, 0x1200, 0x1400)  # the layout the kernel's constants name
        m.write(pa, x)
        m.write(pb, y)
        return dict(memory=m, params=()), lambda: m.read(pc, 128)
    return VADD, (2, 64), setup, x + y


def _reduce_case():
    x = RNG.standard_normal(256).astype(np.float32)
    v = x.reshape(2, 128).copy()
    s = 64
    while s:  # the kernel's tree order, in fp32
        v[:, :s] = v[:, :s] + v[:, s:2 * s]
        s //= 2

    def setup():
        m = GlobalMemory()
        px, po = m.alloc(1024), m.alloc(8)
        m.write(px, x)
        return dict(memory=m, params=(px, po)), lambda: m.read(po, 2)
    return reduction(), (2, 128), setup, v[:, 0]


def _ffma_case():
    n = 64
    x = RNG.standard_normal(n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    ref = np.zeros((n, 4), np.float32)
    for j in range(4):
        acc = np.zeros(n, np.float32)
        yj = y + np.float32(j)
        for _ in range(6):  # FFMA: one rounding of the exact a*b + c (exact in float64 here)
            acc = (acc.astype(np.float64) * x + yj).astype(np.float32)
        ref[:, j] = acc

    def setup():
        m = GlobalMemory()
        px, py, po = m.alloc(4 * n), m.alloc(4 * n), m.alloc(16 * n)
        m.write(px, x)
        m.write(py, y)
        return dict(memory=m, params=(px, py, po)), lambda: m.read(po, 4 * n).reshape(n, 4)
    return FFMA_CHAIN, (2, 32), setup, ref


def _tex_case():
    n = 64
    tex = RNG.standard_normal((50, 4)).astype(np.float32)
    t = np.zeros((n + 1, 4), np.float32)
    t[:50] = tex  # border addressing: texels past the end read as 0
    ref = ((t[:n, 0] + t[1:, 0]) + (t[:n, 1] + t[1:, 1])) + ((t[:n, 2] + t[1:, 2]) + (t[:n, 3] + t[1:, 3]))

    def setup():
        m = GlobalMemory()
        po = m.alloc(4 * n)
        return dict(memory=m, params=(po,), textures={0: Texture1D(tex)}), lambda: m.read(po, n)
    return TEX_SUM, (2, 32), setup, ref


CASES = {"vadd": _vadd_case, "reduce": _reduce_case, "ffma_chain": _ffma_case, "tex_sum": _tex_case}


@pytest.mark.parametrize("name", CASES)
def test_kernel_runs_functionally_and_in_time(name):
    src, (grid, block), setup, ref = CASES[name]()
    asm = assemble_text(src, f"{name}.sass")
    k = asm.kernel
    assert is_source(src) and not is_source(asm.text)
    assert asm.hazards == () and check_controls(k) == []
    assert any(line.strip() == "<SCHEDULE_BLOCK>" for line in src.splitlines())
    assert asm.allocated and all(0 <= r <= 254 for r in asm.registers.values())
    kw, read = setup()
    launch(k, grid, block, kw.pop("params"), **kw)
    assert np.array_equal(read(), ref)
    # timing model, control-code hazards as errors
    kw, read = setup()
    res, sm = simulate(k, grid, block, kw.pop("params"), cfg=None, hazards="strict", **kw)
    assert np.array_equal(read(), ref)
    # the final text parses to the same kernel and times the same
    final = parse_text(asm.text, filename=f"{name}_final.sass")
    assert format_kernel(final) == asm.text
    kw, read = setup()
    res2, sm2 = simulate(final, grid, block, kw.pop("params"), hazards="strict", **kw)
    assert np.array_equal(read(), ref)
    assert sm2.stats.cycles == sm.stats.cycles
    assert res2.warp_instructions == res.warp_instructions


# ---- scheduling ----------------------------------------------------------------------------------

def _without_blocks(src):
    return "\n".join(x for x in src.splitlines() if x.strip() not in ("<SCHEDULE_BLOCK>", "</SCHEDULE_BLOCK>"))


def test_schedule_block_interleaves_chains_and_saves_cycles():
    src, (grid, block), setup, ref = _ffma_case()
    sched = assemble_text(src, "ffma.sass").kernel
    plain = assemble_text(_without_blocks(src), "ffma_plain.sass").kernel
    dsts = [i.dst_regs[0] for i in sched.instructions if i.opcode == "FFMA"]
    assert dsts[:8] == [8, 9, 10, 11, 8, 9, 10, 11]  # the four chains interleaved
    assert [i.dst_regs[0] for i in plain.instructions if i.opcode == "FFMA"][:2] == [8, 8]  # as written
    cycles = []
    for k in (sched, plain):
        kw, read = setup()
        _, sm = simulate(k, grid, block, kw.pop("params"), hazards="strict", **kw)
        assert np.array_equal(read(), ref)
        cycles.append(sm.stats.cycles)
    # a dependent FFMA waits 6 cycles: written order stalls 5 of them per FFMA, interleaved ~2 per 4
    assert cycles[0] < cycles[1] - 24 * 3, cycles


_ALU_OPS = ("IADD {d}, {a}, {b}", "LOP.XOR {d}, {a}, {b}", "SHL {d}, {a}, 0x3", "IADD3 {d}, {a}, {b}, {c}",
            "XMAD {d}, {a}, {b}, {c}", "SEL {d}, {a}, {b}, P1", "ISETP.LT.AND P1, PT, {a}, {b}, PT",
            "@P1 IADD {d}, {a}, 0x11", "@!P1 LOP.OR {d}, {a}, {b}", "MOV {d}, {a}")


def _random_block(seed, n=28):
    rng = np.random.default_rng(seed)
    regs = [f"v{k}" for k in range(6)] + ["w0", "w1"]
    lines = []
    for _ in range(n):
        a, b, c, d = (regs[x] for x in rng.integers(0, len(regs), 4))
        kind = rng.integers(0, 11)
        if kind == 10:
            lines.append("BAR.SYNC 0;")
        elif kind < 2:
            word = rng.integers(0, 8)
            lines.append(f"STS [base + 4x<{word}>], {a};" if kind == 0 else f"LDS {d}, [base + 4x<{word}>];")
        else:
            lines.append(_ALU_OPS[rng.integers(0, len(_ALU_OPS))].format(a=a, b=b, c=c, d=d) + ";")
    init = "".join(f"XMAD {r}, tid, {k * 7 + 3}, tid;\n" for k, r in enumerate(regs))
    stores = "".join(f"STG [out + 4x<{k}>], {r};\n" for k, r in enumerate(regs))
    body = "\n".join(lines)
    return f"""\
# SharedSize: 1024
<REGISTER_MAPPING>
    0      : tid
    8-15   : v<0-5>, w0, w1
    16-31  ~ base, out
</REGISTER_MAPPING>
S2R tid, SR_TID.X;
SHL base, tid, 5;
{init}ISETP.GT.AND P1, PT, tid, 5, PT;
<SCHEDULE_BLOCK>
{body}
</SCHEDULE_BLOCK>
ISCADD out, tid, c[0x0][0x140], 5;
{stores}EXIT;
""", len(regs)


@pytest.mark.parametrize("seed", range(12))
def test_scheduled_block_computes_what_the_written_order_computes(seed):
    src, nregs = _random_block(seed)
    sched = assemble_text(src, "sched.sass").kernel
    plain = assemble_text(_without_blocks(src), "plain.sass").kernel
    outs = []
    for k in (sched, plain):
        m = GlobalMemory()
        out = m.alloc(32 * 4 * nregs)
        launch(k, 1, 32, (out,), memory=m)
        outs.append(m.read(out, 32 * nregs, np.uint32))
        assert check_controls(k) == []
    assert np.array_equal(outs[0], outs[1])
    test_scheduled_block_computes_what_the_written_order_computes.reordered += \
        [i.line for i in sched.instructions] != [i.line for i in plain.instructions]


test_scheduled_block_computes_what_the_written_order_computes.reordered = 0


def test_random_blocks_were_actually_reordered():
    # run after the seeds above (file order): most random blocks must have been reordered
    assert test_scheduled_block_computes_what_the_written_order_computes.reordered >= 8


def test_random_block_in_time_with_strict_hazards():
    src, nregs = _random_block(3)
    k = assemble_text(src, "sched.sass").kernel
    m = GlobalMemory()
    out = m.alloc(64 * 4 * nregs)
    simulate(k, 2, 32, (out,), memory=m, hazards="strict")


def test_ordered_run_keeps_its_order():
    src = """\
<REGISTER_MAPPING>
    0-7 : a, b, c, d, e, f
</REGISTER_MAPPING>
<SCHEDULE_BLOCK>
<ORDERED>
MOV a, 0x1;
MOV b, 0x2;
MOV c, 0x3;
</ORDERED>
IADD d, a, b;
IADD e, d, c;
IADD f, e, e;
</SCHEDULE_BLOCK>
EXIT;
"""
    k = assemble_text(src, "o.sass").kernel
    movs = [i.dst_regs[0] for i in k.instructions if i.opcode == "MOV"]
    assert movs == [0, 1, 2]


# ---- register allocation -------------------------------------------------------------------------

BANKS_SRC = """\
<REGISTER_MAPPING>
    0-3    : f0, f1, f2, f3
    4-5    : g0, g1
    8-31   ~ t, u, w, d, e
</REGISTER_MAPPING>
S2R f0, SR_TID.X;
MOV f1, f0;
MOV f2, f0;
MOV f3, f0;
MOV g0, f0;
MOV g1, f0;
MOV t, f0;
MOV u, f1;
MOV w, f2;
FFMA d, t, g0, g1;
FFMA e, u, w, f2;
STS [RZ], d;
STS [RZ+0x4], e;
EXIT;
"""


def test_allocated_registers_avoid_the_banks_of_their_partners():
    asm = assemble_text(BANKS_SRC, "banks.sass")
    r = asm.allocated
    # t is read with g0 (bank 0) and g1 (bank 1): bank 2 or 3; u and w meet f2 (bank 2) and each other
    assert r["t"] % 4 not in (0, 1)
    assert r["u"] % 4 != 2 and r["w"] % 4 != 2 and r["u"] % 4 != r["w"] % 4
    rep = analyze_banks(asm.kernel, NO_REUSE_MODEL)
    assert rep.totals.conflicts_no_reuse == 0
    # the test can fail: the registers in the order the line names them (t = R8 ...) conflict
    naive = dict(zip(("t", "u", "w", "d", "e"), range(8, 13)))
    text = BANKS_SRC.replace("8-31   ~ t, u, w, d, e", ", ".join(f"{v}" for v in naive.values()) + " : "
                             + ", ".join(naive))
    naive_k = assemble_text(text, "naive.sass").kernel
    assert analyze_banks(naive_k, NO_REUSE_MODEL).totals.conflicts_no_reuse >= 2


def test_register_map_grammar():
    def spans(*lines):
        return [Span.of(x, n, "m.sass") for n, x in enumerate(lines, start=1)]
    m = read_register_map(spans("0-3 : cz<00-03>", "3, 2,11,10 : cx<0-1|8-9>", "64-71 : j0Ax<00-03|32-35>",
                                "80 : zOffset", "90-99 ~ p, q[1], r"))
    assert m.fixed["cz00"] == 0 and m.fixed["cz03"] == 3
    assert [m.fixed[f"cx{k}"] for k in (0, 1, 8, 9)] == [3, 2, 11, 10]
    assert m.fixed["j0Ax32"] == 68 and m.fixed["j0Ax"] == 64  # the group's bare name
    assert "cx" not in m.fixed  # registers not consecutive: no group name
    assert m.auto[0].names == ("p", "q", "r") and m.auto[0].banks == (-1, 1, -1)


def test_requested_bank_is_given():
    src = "<REGISTER_MAPPING>\n 8-15 ~ a, b[3], c[2]\n</REGISTER_MAPPING>\nMOV a, RZ;\nMOV b, RZ;\nMOV c, RZ;\nEXIT;\n"
    r = assemble_text(src, "b.sass").allocated
    assert r["b"] == 11 and r["c"] == 10 and r["a"] == 8


# ---- control codes --------------------------------------------------------------------------------

def test_written_control_codes_are_kept_and_missing_ones_filled():
    src = """\
<REGISTER_MAPPING>
    0-7 : tid, a, b, c
</REGISTER_MAPPING>
--:-:3:-:2      S2R tid, SR_TID.X;
04:-:-:Y:9      SHL a, tid, 0x2;
LDS b, [a];
IADD c, b, 0x1;
STS [a], c;
EXIT;
"""
    k = assemble_text(src, "c.sass").kernel
    text = format_kernel(k).splitlines()
    assert "--:-:3:-:2      S2R R0, SR_TID.X;" in text
    assert "04:-:-:Y:9      SHL R1, R0, 0x2;" in text
    lds, iadd = k.instructions[2], k.instructions[3]
    assert lds.control.write_bar and iadd.control.wait == 1 << (lds.control.write_bar - 1)
    assert lds.control.write_bar != 3  # an open barrier avoids the writer's
    assert check_controls(k) == []


def test_written_hazard_is_kept_and_reported():
    src = "<REGISTER_MAPPING>\n 0-3 : a, b\n</REGISTER_MAPPING>\n--:-:-:-:1 MOV a, 0x1;\n--:-:-:-:1 IADD b, a, 0x1;\nEXIT;\n"
    asm = assemble_text(src, "h.sass")
    assert asm.kernel.instructions[0].control.stall == 1
    assert [h.kind for h in asm.hazards] == ["raw-alu"]


# ---- expressions, detection ---------------------------------------------------------------------

def test_expressions():
    assert evaluate("16*64") == 1024 and evaluate("0*64 + 08") == 8 and evaluate("(1<<4)|0x3") == 19
    for bad in ("a + 1", "$x * 2", "1/3", "print(1)", ""):
        with pytest.raises(ExpressionError):
            evaluate(bad)
    src = "<REGISTER_MAPPING>\n 0-3 : a\n</REGISTER_MAPPING>\nMOV a, [+ 3*7 +];\nLDS a, [a + 4x<2*3>];\nEXIT;\n"
    k = assemble_text(src, "e.sass").kernel
    assert k.instructions[0].operands[1].value == 21 and k.instructions[1].operands[1].value == 24


def test_final_form_files_are_not_source():
    from workloads.sgemm.generator import generate
    assert not is_source(generate("sgemm_64"))
    assert is_source("--:-:-:-:1 MOV R1, RZ;\nEXIT;\n")  # an instruction without a control field


# ---- errors ---------------------------------------------------------------------------------------

ERRORS = [
    ("<REGISTER_MAPPING>\n 0-3 : a\n</REGISTER_MAPPING>\nMOV a, b;\nEXIT;\n", 4, 8, "unknown name 'b'"),
    ("<REGISTER_MAPPING>\n 250-260 : a<0-10>\n</REGISTER_MAPPING>\nEXIT;\n", 2, 2, "over the limit"),
    ("<REGISTER_MAPPING>\n 8-9 ~ a, b, c\n</REGISTER_MAPPING>\nEXIT;\n", 2, 8, "do not fit"),
    ("<REGISTER_MAPPING>\n 0-3 : a, b\n 4 : a\n</REGISTER_MAPPING>\nEXIT;\n", 3, 6, "duplicate name 'a'"),
    ("<CONSTANT_MAPPING>\n a : c[0x0][0x140]\n</CONSTANT_MAPPING>\n<REGISTER_MAPPING>\n 0 : a\n"
     "</REGISTER_MAPPING>\nEXIT;\n", 5, 6, "duplicate name 'a'"),
    ("<REGISTER_MAPPING>\n 0-3 : a\n</REGISTER_MAPPING>\nMOV a, [+ 3 * q +];\nEXIT;\n", 4, 11, "bad expression"),
    ("<REGISTER_MAPPING>\n 0-3 : a\n</REGISTER_MAPPING>\nLDS a, [RZ + 4x<1/0>];\nEXIT;\n", 4, 17, "bad expression"),
    ("<REGISTER_MAPPING>\n 0-3 : a\n</REGISTER_MAPPING>\n\n<CODE>\n return '';\n</CODE>\nEXIT;\n", 5, 1,
     "<CODE> block is maxas's Perl preprocessor"),
    ("<SCHEDULE_BLOCK>\nMOV R1, RZ;\nL1:\n</SCHEDULE_BLOCK>\nEXIT;\n", 3, 1, "cannot hold labels"),
    ("<SCHEDULE_BLOCK>\nMOV R1, RZ;\nEXIT;\n", 1, 1, "<SCHEDULE_BLOCK> is not closed"),
    ("<REGISTER_MAPPING>\n 8-15 ~ a\n</REGISTER_MAPPING>\nLDS.U.128 a, [RZ];\nEXIT;\n", 4, 11, "vector group"),
]


@pytest.mark.parametrize("src,line,col,what", ERRORS)
def test_errors_name_file_line_column(src, line, col, what, tmp_path, capsys):
    with pytest.raises(SassParseError) as e:
        assemble_text(src, "bad.sass")
    assert (e.value.line, e.value.column) == (line, col), str(e.value)
    assert what in str(e.value)
    path = tmp_path / "bad.sass"
    path.write_text(src)
    assert main(["asm", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"maxsim: error: {path}:{line}:{col}: ") and what in err


# ---- command line ---------------------------------------------------------------------------------

def test_cli_asm_then_run_equals_run_of_the_source(tmp_path, capsys):
    src = tmp_path / "sum.sass"
    src.write_text(SHARED_SUM)
    out = tmp_path / "sum_final.sass"
    assert main(["asm", str(src), "-o", str(out), "--registers"]) == 0
    err = capsys.readouterr().err
    assert "wrote" in err and "warning" not in err and re.search(r"addr = R\d+", err)
    assert not is_source(out.read_text())
    runs = []
    for path in (src, out):
        assert main(["run", str(path), "--block", "128", "--json", "--strict", "--quiet"]) == 0
        d = json.loads(capsys.readouterr().out)
        runs.append({k: d[k] for k in ("sm_cycles", "warp_instructions", "sm_ipc", "stall_reasons") if k in d})
    assert runs[0] == runs[1] and runs[0]["sm_cycles"] > 0
    assert main(["analyze", str(src), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hazards"] == []


def test_load_kernel_reads_both_forms(tmp_path):
    src = tmp_path / "k.sass"
    src.write_text(SHARED_SUM)
    a = load_kernel(src)
    fin = tmp_path / "f.sass"
    fin.write_text(format_kernel(a))
    assert format_kernel(load_kernel(fin)) == format_kernel(a)


def test_manual_example_assembles_and_runs():
    """The saxpy kernel of docs/writing-kernels.md."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "writing-kernels.md").read_text()
    part = page.split("## Writing kernels in the maxas source language", 1)[1]
    src = re.search(r"```text\n(.*?)```", part, re.S).group(1)
    asm = assemble_text(src, "saxpy.sass")
    assert asm.hazards == ()
    n = 64
    x = RNG.standard_normal(n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    m = GlobalMemory()
    px, py = m.alloc(4 * n), m.alloc(4 * n)
    m.write(px, x)
    m.write(py, y)
    simulate(asm.kernel, 2, 32, (px, py, np.float32(2.5)), memory=m, hazards="strict")
    ref = (np.float64(np.float32(2.5)) * x + y).astype(np.float32)
    assert np.array_equal(m.read(py, n), ref)


def test_xmad_lo_macro_multiplies_32_bit():
    src = """\
# Params(1):
#   0:0x140:4:0 a,
#   1:0x144:4:0 out      // the listed parameters count, as in maxas own sources
<REGISTER_MAPPING>
    0-7  : tid, x, y, t
    8-15 ~ o, scratch
</REGISTER_MAPPING>
S2R tid, SR_TID.X;
<SCHEDULE_BLOCK>
MOV x, c[0x0][0x140];
IADD y, tid, 0x3;
XMAD.LO t, x, y, tid, scratch;
ISCADD o, tid, c[0x0][0x144], 2;
STG [o], t;
</SCHEDULE_BLOCK>
EXIT;
"""
    asm = assemble_text(src, "xmad.sass")
    assert len(asm.kernel.params) == 2 and asm.hazards == ()
    assert [i.full_opcode for i in asm.kernel.instructions].count("XMAD.PSL.CBCC") == 1
    m = GlobalMemory()
    out = m.alloc(128)
    launch(asm.kernel, 1, 32, [0x9E3779B9, out], memory=m)
    t = np.arange(32, dtype=np.uint64)
    assert np.array_equal(m.read(out, 32, np.uint32), ((0x9E3779B9 * (t + 3) + t) % 2 ** 32).astype(np.uint32))


def test_generated_sgemm_reassembles_unchanged_also_with_named_registers():
    from workloads.sgemm.generator import generate
    text = generate("sgemm_64")
    assert assemble_text(text, "sgemm.sass").text == text  # every control field written: all kept
    used = sorted({int(r) for r in re.findall(r"\bR(\d+)\b", text)})
    mapping = "<REGISTER_MAPPING>\n" + "".join(f"    {r} : acc{r}\n" for r in used) + "</REGISTER_MAPPING>\n"
    head, body = text.split("# Instructions:\n", 1)
    named = head + mapping + re.sub(r"\bR(\d+)\b", lambda m: f"acc{m.group(1)}", body)
    assert is_source(named) or "<REGISTER_MAPPING>" in named
    assert assemble_text(named, "sgemm_named.sass").text == text


def test_cli_warns_about_written_hazards_and_strict_refuses(tmp_path, capsys):
    path = tmp_path / "h.sass"
    path.write_text("<REGISTER_MAPPING>\n 0-3 : a, b\n</REGISTER_MAPPING>\n--:-:-:-:1 MOV a, 0x1;\n"
                    "--:-:-:-:1 IADD b, a, 0x1;\nEXIT;\n")
    assert main(["asm", str(path)]) == 0
    out = capsys.readouterr()
    assert "IADD R1, R0, 0x1;" in out.out
    assert out.err.startswith(f"maxsim: warning: {path}:5: raw-alu: ") and out.err.count("\n") == 1
    assert main(["asm", str(path), "--strict"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"maxsim: error: {path}:5: raw-alu: ") and err.count("\n") == 1
