"""Kernels written the way maxas and nvcc users write them: textures by slot (TLDS, TEXS, TLD/TEX
without .B), register-indexed LDC, constant banks other than 0 and their timing, maxas's operand
spellings, a maxas source's skeleton header, and param_* names after `maxas.pl -p`."""

from __future__ import annotations

import os

import attrs
import numpy as np
import pytest

import maxsim
from maxsim.arch.config import load_config
from maxsim.errors import MaxsimError, SassParseError, SimulationError
from maxsim.functional import GlobalMemory, Texture1D, launch
from maxsim.functional.launch import ConstantBanks
from maxsim.sass import parse_text
from maxsim.sass.parser import parse_instruction
from workloads.kernels import path

from sasskit import header

CONV = path("conv2d_const")


def conv_case(H, W, taps, seed):
    """(image, taps as (dx, dy, fp32 w), bias, bank 3 bytes, Wo, Ho) of a convolution problem."""
    rng = np.random.default_rng(seed)
    img = rng.standard_normal((H, W)).astype(np.float32)
    taps = [(dx, dy, np.float32(rng.standard_normal())) for dx, dy in taps]
    Wo = W - max(t[0] for t in taps)
    Ho = H - max(t[1] for t in taps)
    bias = rng.standard_normal(Wo).astype(np.float32)
    table = np.array([[dx, dy, w.view(np.int32), 0] for dx, dy, w in taps], np.int32)
    return img, taps, bias, np.concatenate([table.ravel(), bias.view(np.int32)]), Wo, Ho


def conv_reference(img, taps, bias, Wo, Ho):
    """The kernel's order: FFMA per tap from 0 (one rounding: the fp32 product is exact in
    float64), then + bias."""
    acc = np.zeros((Ho, Wo), np.float32)
    for dx, dy, w in taps:
        acc = (img[dy:dy + Ho, dx:dx + Wo].astype(np.float64) * np.float64(w) + acc).astype(np.float32)
    return (acc + bias).astype(np.float32)


def run_conv(img, taps, bank3, Wo, Ho, **kw):
    kw.setdefault("hazards", "strict")
    return maxsim.launch(CONV, grid=((Wo + 15) // 16, (Ho + 7) // 8), block=(16, 8),
                         params={"out": "out", "W": img.shape[1], "Wo": Wo, "Ho": Ho, "ntaps": len(taps)},
                         buffers={"out": maxsim.Buffer.zeros((Ho, Wo))},
                         textures={0x62: maxsim.Texture(img.ravel(), "float1")}, constants={3: bank3}, **kw)


SQUARE = [(dx, dy) for dy in range(3) for dx in range(3)]
CROSS = [(2, 0), (0, 2), (2, 2), (4, 2), (2, 4)]
ROW = [(0, 0), (1, 0), (2, 0), (3, 0)]


@pytest.mark.parametrize("H,W,taps,seed", [(20, 37, SQUARE, 0), (29, 21, CROSS, 1), (9, 50, ROW, 2)])
def test_conv2d_const_matches_numpy(H, W, taps, seed):
    img, taps, bias, bank3, Wo, Ho = conv_case(H, W, taps, seed)
    r = run_conv(img, taps, bank3, Wo, Ho)
    assert np.array_equal(r.outputs["out"], conv_reference(img, taps, bias, Wo, Ho))
    # the reference itself, against float64 arithmetic
    ref64 = sum(img[dy:dy + Ho, dx:dx + Wo].astype(np.float64) * float(w) for dx, dy, w in taps) + bias
    assert np.allclose(r.outputs["out"], ref64, atol=1e-5 * len(taps) * np.abs(img).max())
    # per thread: 2 LDC per tap and one for the bias; a TLDS per tap, on the texture path
    ctas = r.grid[0] * r.grid[1]
    counts = r.result.opcode_counts
    warps_in = sum(int(n) for i, n in zip(r.kernel.code.instructions, r.result.per_instruction)
                   if i.opcode == "STG")
    assert counts["TLDS.LZ.NODEP.T"] == warps_in * len(taps)
    assert counts["LDC.64"] == warps_in * len(taps) and counts["LDC"] == warps_in * (len(taps) + 1)
    # each TLDS the timed SM issued is a request on the texture path
    assert r.timing["texture_requests"] == r.timing["sm_opcode_counts"]["TLDS.LZ.NODEP.T"] > 0 and ctas > 1


def test_the_bias_ldc_serialises_per_distinct_address_in_both_cores(monkeypatch):
    """One warp (16 columns x 2 rows), no tap: the bias LDC's lanes read 16 distinct words, so its
    result comes 15 x latency.ldc_per_address cycles after a uniform LDC's would, and the FADD
    that waits on it (and the rest of the warp) that much later: hand count 15 per cycle of the key."""
    img, taps, bias, bank3, Wo, Ho = conv_case(4, 20, [(0, 0)], 3)
    base = load_config()
    cycles = {}
    for core in ("python", "compiled"):
        if core == "python":
            monkeypatch.setenv("MAXSIM_CORE", "python")
        else:
            monkeypatch.delenv("MAXSIM_CORE", raising=False)
        for per in (0, 1, 3):
            cfg = attrs.evolve(base, latency=attrs.evolve(base.latency, ldc_per_address=per))
            r = maxsim.launch(CONV, grid=1, block=(16, 2), params={"out": "out", "W": 20, "Wo": 16, "Ho": 2,
                                                                   "ntaps": 0},
                              buffers={"out": maxsim.Buffer.zeros((2, 16))},
                              textures={0x62: maxsim.Texture(img.ravel(), "float1")},
                              constants={3: bias.tobytes()}, config=cfg, hazards="strict", predict=False)
            assert np.array_equal(r.outputs["out"], np.tile(bias[:16], (2, 1)))
            cycles[core, per] = r.timing["sm_cycles"]
    for core in ("python", "compiled"):
        assert cycles[core, 1] - cycles[core, 0] == 15
        assert cycles[core, 3] - cycles[core, 0] == 45
    assert cycles["python", 1] == cycles["compiled", 1]
    assert load_config().latency.ldc_per_address == 1


def test_the_trace_counts_distinct_constant_addresses_per_warp():
    from maxsim.functional.trace import TraceRecorder
    from maxsim.timing.summaries import make_summariser
    k = parse_text(header("ldcd", regs=8) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      LOP.AND R1, R0, 0x7;
--:-:-:-:6      SHL R1, R1, 0x2;
--:-:1:-:1      LDC R2, c[0x3][R1];
--:-:-:-:1      LDC R3, c[0x3][0x4];
01:-:-:-:5      EXIT;
""", filename="ldcd.sass")
    rec = TraceRecorder(make_summariser(load_config()))
    launch(k, 1, 64, ConstantBanks([0], {3: np.arange(8, dtype=np.uint32).tobytes()}), recorder=rec)
    seg = rec.segments[0]
    ldc_pos = list(seg.pcs).index(3)
    assert list(seg.mem[ldc_pos]) == [8, 8]  # tid & 7: eight words per warp
    assert list(seg.pcs).index(4) not in seg.mem  # c[0x3][0x4]: one address, no record


# ---- textures by slot -----------------------------------------------------------------------

def _tex_kernel(body):
    return parse_text(header("tex", regs=16) + "--:-:1:-:1      S2R R0, SR_TID.X;\n" + body
                      + "--:-:-:-:5      EXIT;\n", filename="tex.sass")


def _store(regs):
    """STG of registers ``regs`` (up to 4) to out[4 tid + j]."""
    lines = ["--:-:-:-:6      SHL R12, R0, 0x4;",
             "--:-:-:-:6      IADD R12, R12, c[0x0][0x140];"]
    lines += [f"--:-:-:-:1      STG [R12+0x{4 * j:x}], R{r};" for j, r in enumerate(regs)]
    return "\n".join(lines) + "\n"


def _run_tex(body, regs, tex, block=32):
    k = _tex_kernel(body + _store(regs))
    mem = GlobalMemory()
    out = mem.alloc(16 * block)
    launch(k, 1, block, [out], mem, tex)
    return mem.read(out, 4 * block, np.float32).reshape(block, 4)[:, :len(regs)]


def test_tlds_channel_sets_split_over_two_destinations():
    texels = np.arange(40 * 4, dtype=np.float32).reshape(40, 4)
    tex = {0x62: Texture1D(texels)}
    # RGBA: R, G into R4, R5; B, A into R6, R7
    got = _run_tex("01:-:1:-:1      TLDS.LZ.NODEP.T R6, R4, R0, 0x62, 1D, RGBA;\n01:-:-:-:1      NOP;\n",
                   [4, 5, 6, 7], tex)
    assert np.array_equal(got, texels[:32])
    # RBA: R, B into R4, R5; A into R6
    got = _run_tex("01:-:1:-:1      TLDS.LZ.T R6, R4, R0, 0x62, 1D, RBA;\n01:-:-:-:1      NOP;\n", [4, 5, 6], tex)
    assert np.array_equal(got, texels[:32][:, [0, 2, 3]])
    # one channel, RZ for the second destination; past the end: border texels read 0
    got = _run_tex("01:-:-:-:6      IADD R1, R0, 0x14;\n--:-:1:-:1      TLDS.LZ.P RZ, R4, R1, 0x62, 1D, G;\n"
                   "01:-:-:-:1      NOP;\n", [4], tex)
    exp = np.where(np.arange(32) + 20 < 40, np.arange(32) * 4 + 81.0, 0)
    assert np.array_equal(got[:, 0], exp.astype(np.float32))


def test_tld_and_tex_without_b_take_the_texture_from_the_slot():
    texels = np.arange(64, dtype=np.float32) * 0.5
    tex = {0x63: Texture1D(texels, format="float1")}
    got = _run_tex("01:-:1:-:1      TLD.LZ.T R4, R0, 0x63, 1D, 0x1;\n01:-:-:-:1      NOP;\n", [4], tex)
    assert np.array_equal(got[:, 0], texels[:32])
    # a float coordinate, point sampled: texel floor(x)
    got = _run_tex("01:-:-:-:6      I2F.F32.S32 R1, R0;\n--:-:-:-:6      FMUL R1, R1, 1.5;\n--:-:-:-:6      FADD R1, R1, 0.75;\n"
                   "--:-:1:-:1      TEX.LZ.T R4, R1, RZ, 0x63, 1D, 0x1;\n01:-:-:-:1      NOP;\n", [4], tex)
    assert np.array_equal(got[:, 0], texels[np.floor(np.arange(32) * 1.5 + 0.75).astype(int)])
    got = _run_tex("01:-:-:-:6      I2F.F32.S32 R1, R0;\n--:-:-:-:6      FMUL R1, R1, 0.5;\n"
                   "--:-:1:-:1      TEXS.NODEP.T RZ, R4, R1, 0x63, 1D, R;\n01:-:-:-:1      NOP;\n", [4], tex)
    assert np.array_equal(got[:, 0], texels[np.arange(32) // 2])


def test_texture_slot_errors_name_the_lane():
    with pytest.raises(SimulationError, match=r"tex.sass:\d+: texture slot 0x62 is not bound \(bound textures: "
                                              r"\[99\]\) \(CTA \(0,0\), warp 0, lane 0\)"):
        _run_tex("01:-:1:-:1      TLDS.LZ.T RZ, R4, R0, 0x62, 1D, R;\n01:-:-:-:1      NOP;\n", [4],
                 {99: Texture1D(np.zeros(4, np.float32), format="float1")})
    with pytest.raises(SimulationError, match=r"TEXS at coordinate 4\.0 is outside the texture of 4 texels: the "
                                              r"address mode of a sampled fetch is not modelled .*lane 4\)"):
        _run_tex("01:-:-:-:6      I2F.F32.S32 R1, R0;\n--:-:1:-:1      TEXS.T RZ, R4, R1, 0x1, 1D, R;\n"
                 "01:-:-:-:1      NOP;\n", [4], {1: Texture1D(np.zeros(4, np.float32), format="float1")})


# ---- register-indexed LDC -------------------------------------------------------------------

@pytest.mark.parametrize("mod,scale,regs,view", [("", 4, 1, np.uint32), (".64", 8, 2, np.uint32),
                                                 (".128", 16, 4, np.uint32), (".U8", 1, 1, np.uint8),
                                                 (".S8", 1, 1, np.int8), (".U16", 2, 1, np.uint16),
                                                 (".S16", 2, 1, np.int16)])
def test_ldc_widths_read_each_lanes_constant(mod, scale, regs, view):
    rng = np.random.default_rng(5)
    data = rng.integers(0, 256, 32 * 16 + 64, dtype=np.uint8)
    shift = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4}[scale]
    k = parse_text(header("ldc", regs=16) + f"""\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      SHL R1, R0, 0x{shift:x};
--:-:1:-:1      LDC{mod} R4, c[0x3][R1+0x{scale * 2:x}];
01:-:-:-:6      SHL R12, R0, 0x4;
--:-:-:-:6      IADD R12, R12, c[0x0][0x140];
--:-:-:-:1      STG.128 [R12], R4;
--:-:-:-:5      EXIT;
""", filename="ldc.sass")
    mem = GlobalMemory()
    out = mem.alloc(16 * 32)
    launch(k, 1, 32, ConstantBanks([out], {3: data.tobytes()}), mem)
    got = mem.read(out, 4 * 32, np.uint32).reshape(32, 4)
    lane = np.arange(32)
    if view in (np.uint32,):
        words = data.view(np.uint32)
        exp = np.stack([words[(lane * scale + 2 * scale) // 4 + j] for j in range(regs)], axis=1)
        assert np.array_equal(got[:, :regs], exp)
    else:
        vals = np.array([data[a:a + scale].view(view)[0] for a in lane * scale + 2 * scale])
        assert np.array_equal(got[:, 0], vals.astype(np.int64).astype(np.uint32))


def test_constant_reads_outside_what_was_given_name_bank_offset_and_lane():
    k = parse_text(header("ldce", regs=8) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      SHL R1, R0, 0x2;
--:-:1:-:1      LDC R2, c[0x3][R1-0x4];
01:-:-:-:5      EXIT;
""", filename="ldce.sass")
    with pytest.raises(SimulationError, match=r"ldce.sass:\d+: constant c\[0x3\]\[-0x4\] \(\+4 bytes\) is outside "
                                              r"constant bank 3 \(0x40 bytes given\) \(CTA \(0,0\), warp 0, lane 0\)"):
        launch(k, 1, 32, ConstantBanks([0], {3: bytes(64)}))
    with pytest.raises(SimulationError, match=r"constant c\[0x3\]\[0x40\] \(\+4 bytes\) is outside constant bank 3 "
                                              r"\(0x40 bytes given\) \(CTA \(0,0\), warp 0, lane 16\)"):
        launch(parse_text(header("ldce", regs=8) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      SHL R1, R0, 0x2;
--:-:1:-:1      LDC R2, c[0x3][R1];
01:-:-:-:5      EXIT;
""", filename="ldce.sass"), 1, 32, ConstantBanks([0], {3: bytes(64)}))
    # a static operand of bank 2, not given; the instruction faults only when a warp runs it
    with pytest.raises(SimulationError, match=r"constant c\[0x2\]\[0x8\]: constant bank 2 was not given \(banks "
                                              r"given: 0, 3;.*\(CTA \(0,0\), warp 0, lane 0\)"):
        launch(parse_text(header("c2", regs=8) + "--:-:-:-:6      FFMA R0, R1, c[0x2][0x8], R1;\n"
                          "--:-:-:-:5      EXIT;\n", filename="c2.sass"), 1, 32, ConstantBanks([0], {3: bytes(4)}))
    # never executed: no error
    launch(parse_text(header("c2", regs=8) + "--:-:-:-:5      EXIT;\n--:-:-:-:6      MOV R0, c[0x2][0x8];\n"
                      "--:-:-:-:5      EXIT;\n", filename="c2.sass"), 1, 32, [0])


def test_launch_constants_argument_checks():
    from maxsim.errors import LaunchError
    k = maxsim.Kernel.load(CONV)
    for bad, msg in (({0: b"x"}, "bank 0 holds"), ({18: b"x"}, "expected a bank number 1-17"),
                     ({3: "abc"}, "expected bytes or a numpy array"), ({3: b""}, "is empty"),
                     ({3: bytes(0x10001)}, "do not fit")):
        with pytest.raises(LaunchError, match=msg):
            maxsim.launch(k, params={"out": 0, "W": 1, "Wo": 1, "Ho": 1, "ntaps": 0}, constants=bad,
                          timing=False, predict=False)


# ---- maxas spellings ------------------------------------------------------------------------

def _same(a, b):
    x, y = parse_instruction(a), parse_instruction(b)
    return attrs.evolve(x, line=0) == attrs.evolve(y, line=0)


def test_maxas_spellings_mean_what_maxas_means():
    assert _same("--:-:-:-:1 IADD R72.CC, R1, R2;", "--:-:-:-:1 IADD.CC R72, R1, R2;")
    assert _same("--:-:-:-:1 IADD.X R72.CC, R1, -R2;", "--:-:-:-:1 IADD.X.CC R72, R1, -R2;")
    assert _same("--:-:-:-:1 LEA R4.CC, R1, R2, 0x2;", "--:-:-:-:1 LEA.CC R4, R1, R2, 0x2;")
    assert _same("--:-:-:-:1 LOP.AND R1, R2, R3.INV;", "--:-:-:-:1 LOP.AND R1, R2, ~R3;")
    assert _same("--:-:-:-:1 LOP.AND R1, R2, c[0x0][0x140].INV;", "--:-:-:-:1 LOP.AND R1, R2, ~c[0x0][0x140];")
    assert _same("--:-:-:-:1 LDC R1, c[0x3] [R2 + 0x8];", "--:-:-:-:1 LDC R1, c[0x3][R2+0x8];")
    assert _same("--:-:-:-:1 LDC R1, c[0x3][R2+-0x8];", "--:-:-:-:1 LDC R1, c[0x3][R2-0x8];")
    assert parse_instruction("--:-:-:-:1 FADD R1, R2, +1.5;").operands[2].fvalue == 1.5  # $f20's '+'
    assert parse_instruction("--:-:-:-:1 MOV32I R1, +2.5;").operands[1].fvalue == 2.5
    # and they compute it: a 64-bit add through the carry, ~ of a constant and an immediate
    k = parse_text(header("sp", regs=12, nparams=2) + """\
--:-:-:-:1      MOV32I R2, 0xfffffff0;
--:-:-:-:1      MOV32I R3, 0x1;
--:-:-:-:6      MOV32I R4, 0x20;
--:-:-:-:6      IADD R6.CC, R2, R4;
--:-:-:-:6      IADD.X R7, R3, RZ;
--:-:-:-:6      LOP.AND R8, R2, c[0x0][0x144].INV;
--:-:-:-:6      LOP.XOR R9, RZ, ~0xff;
--:-:-:-:6      MOV R10, c[0x0][0x140];
--:-:-:-:1      STG [R10], R6;
--:-:-:-:1      STG [R10+0x4], R7;
--:-:-:-:1      STG [R10+0x8], R8;
--:-:-:-:1      STG [R10+0xc], R9;
--:-:-:-:5      EXIT;
""", filename="sp.sass")
    mem = GlobalMemory()
    out = mem.alloc(16)
    launch(k, 1, 1, [out, 0xf0f0], mem)
    assert list(mem.read(out, 4, np.uint32)) == [0x10, 0x2, 0xfffffff0 & ~0xf0f0 & 0xffffffff, 0xffffff00]


@pytest.mark.parametrize("line,col,fragment", [
    ("--:-:-:-:1      XMAD R72.CC, R1, R2, R3;", 22, "the condition-code output of XMAD (R72.CC) is not modelled"),
    ("--:-:1:-:1      TLD4S R0, R1, R2, 0x1, 2D, R;", 17, "opcode TLD4S is not modelled: a four-texel gather"),
    ("--:-:1:-:1      TLDS.LZ.T RZ, R4, R2, R3, 0x62, 2D, R;", 39, "TLDS with two coordinate registers (a 2D "
                                                                     "texture) is not modelled"),
    ("--:-:1:-:1      TLDS.LZ.T R8, R4, R2, 0x62, 1D, R;", 27, "TLDS with channels R writes no second destination"),
    ("--:-:1:-:1      TLD.LZ.T R4, R2, R3, 0x62, 1D, 0xf;", 34, "TLD without .B takes the texture from its slot"),
    ("--:-:1:-:1      TEX.LZ.T R4, R2, RZ, 0x62, ARRAY_2D, 0xf;", 44, "TEX of a ARRAY_2D texture is not modelled"),
    ("--:-:-:-:1      MOV R1, c[0x3][R4];", 25, "a register-indexed constant is read by LDC only"),
    ("--:-:-:-:1      I2F.F32.S8 R1, R2.B1;", 32, "the register part selector .B1 in 'R2.B1' is not modelled"),
    ("--:-:-:-:1      HADD2 R1, R2, R3;", 17, "opcode HADD2 is not modelled: fp16 arithmetic"),
])
def test_remaining_refusals_name_file_line_column_and_what(line, col, fragment):
    text = header("bad", regs=16) + line + "\n--:-:-:-:5      EXIT;\n"
    with pytest.raises(SassParseError) as e:
        parse_text(text, filename="bad.sass")
    assert fragment in e.value.reason, e.value.reason
    assert (e.value.filename, e.value.line, e.value.column) == ("bad.sass", text.count("\n") - 1, col)


# ---- header and parameter names -------------------------------------------------------------

def test_a_maxas_source_header_is_raised_to_what_the_code_shows_with_a_note(capsys):
    from maxsim.asm import assemble_file
    from maxsim.cli import main
    asm = assemble_file(CONV)
    assert asm.kernel.reg_cnt == 30 and len(asm.notes) == 1
    assert asm.notes[0] == (f"{CONV}:4:11: header RegCnt 14 is less than the registers the code uses (R0-R29): "
                            f"RegCnt 30, from the code (the header of a maxas source is the CUDA skeleton's)")
    assert maxsim.Kernel.load(CONV).notes == asm.notes
    assert main(["asm", str(CONV), "-o", os.devnull]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"maxsim: note: {asm.notes[0]}"
    # a declared value above what the code shows is kept (the occupancy choice), and the final form's
    # header is the binary's
    src = CONV.read_text().replace("# RegCnt: 14", "# RegCnt: 64").replace("# SharedSize: 0", "# SharedSize: 0")
    from maxsim.asm import assemble_text
    a = assemble_text(src, "conv.sass")
    assert a.kernel.reg_cnt == 64 and a.notes == ()
    a = assemble_text("# Kernel: s\n# RegCnt: 2\n# SharedSize: 16\n# BarCnt: 0\nS2R R3, SR_TID.X;\n"
                      "STS [R3+0x200], R3;\nBAR.SYNC 0x2;\nEXIT;\n", "s.sass")
    assert (a.kernel.reg_cnt, a.kernel.shared_size, a.kernel.bar_cnt) == (4, 0x204, 3)
    assert [n.split(": ")[1].split(" is ")[0] for n in a.notes] == ["header RegCnt 2", "header BarCnt 0",
                                                                    "header SharedSize 16"]
    with pytest.raises(SassParseError, match="RegCnt 4 .*R0-R3"):
        parse_text("# RegCnt: 4\n--:-:-:-:1      MOV R4, RZ;\n--:-:-:-:5      EXIT;\n", filename="f.sass")


def test_param_names_of_a_p_expanded_header_answer_without_their_prefix():
    k = maxsim.Kernel.load(CONV)
    assert [p.names for p in k.params] == [("param_out", "out"), ("param_W", "W"), ("param_Wo", "Wo"),
                                           ("param_Ho", "Ho"), ("param_ntaps", "ntaps")]
    assert k.param("out").size == 8 and k.param("param_ntaps").offset == 0x154
    # maxas.pl -e's names for the words of a wider parameter
    src = ("# Kernel: e\n# Params(2):\n#\t0:0x140:8:0\n#\t1:0x148:4:0\n<CONSTANT_MAPPING>\n"
           "    param_0[0] : c[0x0][0x140]\n    param_0[1] : c[0x0][0x144]\n    param_1 : c[0x0][0x148]\n"
           "</CONSTANT_MAPPING>\n--:-:-:-:1      MOV R0, param_1;\n--:-:-:-:5      EXIT;\n")
    e = maxsim.Kernel.load(src)
    assert [p.names for p in e.params] == [("param_0[0]", "param_0"), ("param_1",)]


def test_run_the_convolution_from_the_command_line_with_a_raw_bank(tmp_path, monkeypatch, capsys):
    from maxsim.cli import main
    img, taps, bias, bank3, Wo, Ho = conv_case(12, 40, CROSS, 4)
    monkeypatch.chdir(tmp_path)
    np.save("img.npy", img.ravel())
    bank3.tofile("bank3.bin")
    argv = ["run", str(CONV), "--grid", f"{(Wo + 15) // 16},{(Ho + 7) // 8}", "--block", "16,8",
            "--param", "out=o", "--param", "W=40", "--param", f"Wo={Wo}", "--param", f"Ho={Ho}",
            "--param", f"ntaps={len(taps)}", "--texture", "0x62=img.npy:float1", "--constant", "3=bank3.bin",
            "--buffer", f"o=zeros:{Ho}x{Wo}", "--out", "res", "--strict", "--json"]
    assert main(argv) == 0
    assert capsys.readouterr().err.startswith("maxsim: note: ")
    assert np.array_equal(np.load("res/o.npy"), conv_reference(img, taps, bias, Wo, Ho))
    for spec, msg in (("3=nothere.bin", "--constant 3=nothere.bin: no file nothere.bin"),
                      ("0=bank3.bin", "bank 0 is not one of 1-17"), ("x=bank3.bin", "is not a constant bank number")):
        bad = [a if a != "3=bank3.bin" else spec for a in argv]
        assert main(bad) == 2
        assert msg in capsys.readouterr().err


def test_no_bank_given_to_the_convolution_is_one_line(capsys):
    img, taps, bias, bank3, Wo, Ho = conv_case(10, 20, SQUARE, 6)
    with pytest.raises(MaxsimError) as e:
        maxsim.launch(CONV, grid=(1, 1), block=(16, 8), params={"out": "o", "W": 20, "Wo": Wo, "Ho": Ho,
                                                                "ntaps": 9},
                      buffers={"o": maxsim.Buffer.zeros((Ho, Wo))},
                      textures={0x62: maxsim.Texture(img.ravel(), "float1")}, timing=False, predict=False)
    assert "\n" not in str(e.value) and "constant bank 3 was not given" in str(e.value)


def test_conv2d_const_final_text_reads_back_and_checks_clean():
    from maxsim.analysis.controls import check_controls
    from maxsim.asm import assemble_file
    from maxsim.sass.printer import format_kernel
    asm = assemble_file(CONV)
    assert asm.hazards == () and check_controls(asm.kernel) == []
    assert format_kernel(parse_text(asm.text, filename="conv_final.sass")) == asm.text
    text = asm.text
    assert "TLDS.LZ.NODEP.T RZ, " in text and "LDC.64 R4, c[0x3][R" in text and "IADD.CC R6, " in text


def test_the_32_bit_immediate_forms_nvcc_emits():
    k = parse_text(header("i32", regs=12, nparams=1) + """\
--:-:1:-:1      S2R R0, SR_TID.X;
01:-:-:-:6      IADD32I R1, R0, 0x12345678;
--:-:-:-:6      LOP32I.XOR R2, R0, 0xf0f0f0f0;
--:-:-:-:6      ISCADD32I R3, R0, 0x1000, 0x4;
--:-:-:-:6      I2F.F32.S32 R4, R0;
--:-:-:-:6      FMUL32I R5, R4, 0.75;
--:-:-:-:6      FADD32I.FTZ R6, R5, -2.5;
--:-:-:-:6      IADD32I R8.CC, R0, 0xfffffff0;
--:-:-:-:6      IADD.X R7, RZ, RZ;
--:-:-:-:6      SHL R10, R0, 0x5;
--:-:-:-:6      IADD R10, R10, c[0x0][0x140];
--:-:-:-:1      STG.128 [R10], R0;
--:-:-:-:1      STG.128 [R10+0x10], R4;
--:-:-:-:5      EXIT;
""", filename="i32.sass")
    mem = GlobalMemory()
    out = mem.alloc(32 * 32)
    launch(k, 1, 32, [out], mem)
    got = mem.read(out, 8 * 32, np.uint32).reshape(32, 8)
    t = np.arange(32, dtype=np.uint32)
    assert np.array_equal(got[:, 1], t + np.uint32(0x12345678))
    assert np.array_equal(got[:, 2], t ^ np.uint32(0xf0f0f0f0))
    assert np.array_equal(got[:, 3], (t << 4) + 0x1000)
    f = got[:, 4:7].view(np.float32)
    assert np.array_equal(f[:, 1], t.astype(np.float32) * np.float32(0.75))
    assert np.array_equal(f[:, 2], t.astype(np.float32) * np.float32(0.75) - np.float32(2.5))
    assert np.array_equal(got[:, 7], (t >= 16).astype(np.uint32))  # the carry of t + 0xfffffff0 (R7)


def test_a_source_file_names_an_opcode_it_cannot_run_with_its_place():
    from maxsim.asm import assemble_text
    with pytest.raises(SassParseError) as e:
        assemble_text("<REGISTER_MAPPING>\n    0-3 : a, b, c, d\n</REGISTER_MAPPING>\n"
                      "S2R a, SR_TID.X;\n    TLD4S b, a, a, 0x62, 2D, R;\nEXIT;\n", "g.sass")
    assert str(e.value) == ("g.sass:5:5: opcode TLD4S is not modelled: a four-texel gather from a 2D texture "
                            "(2D textures are not modelled)")
