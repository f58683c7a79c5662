"""Property tests of the front end (and a fuzz of the executor).

- Random valid instruction lines, generated from the opcode table with random registers,
  immediates, constants, control codes, guards and reuse flags, survive parse -> print -> parse
  as the same records.
- Random garbage raises SassParseError (one line), never another exception.
- Random valid kernels either run or raise a MaxsimError: never another exception, never a hang.
"""

from __future__ import annotations

import re

import attrs
import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from maxsim.errors import MaxsimError, SassParseError
from maxsim.functional import GlobalMemory, Texture1D, launch
from maxsim.isa.opcodes import (CHANNEL_SETS, FP64, OPCODES, REQUIRED_MODIFIERS, SPECIAL_REGISTERS, WORDS, match_modifiers,
                                vector_alignment)
from maxsim.sass import format_instruction, format_kernel, parse_text

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LABELS = ("TOP", "MID", "END")
FP_OPS = {"FFMA", "FMUL", "FADD"}

# ---------------------------------------------------------------------------------------------
# strategies


@st.composite
def control(draw):
    wait = draw(st.one_of(st.just("--"), st.integers(0, 0x3F).map(lambda v: f"{v:02x}"),
                          st.integers(0, 0x3F).map(lambda v: f"{v:02X}")))
    rb = draw(st.sampled_from("-123456"))
    wb = draw(st.sampled_from("-123456"))
    y = draw(st.sampled_from("-Yy"))
    v = draw(st.integers(0, 15))
    s = draw(st.sampled_from([f"{v:x}", f"{v:X}"]))
    return f"{wait}:{rb}:{wb}:{y}:{s}"


guard = st.sampled_from([""] + [f"@{n}P{p}" for n in ("", "!") for p in "0123456T"])


def imm_text(lo=-(1 << 31), hi=(1 << 32) - 1):
    return st.integers(lo, hi).flatmap(lambda v: st.sampled_from(
        [f"0x{v:x}" if v >= 0 else f"-0x{-v:x}", str(v), f"0X{v:X}" if v >= 0 else f"-0X{-v:X}"]))


float_text = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
    st.sampled_from(["1.0", "-1.5", "0.5", "2.5e-3", ".25", "-INF", "INF", "NAN", "1e10", "3."]))


def reg_text(source, xmad, allow_rz=True, lo=0, hi=254, align=1):
    """A register operand as text; sources get random .H1 (XMAD), .reuse, '-', '~', '|..|'."""
    @st.composite
    def build(draw):
        if allow_rz and draw(st.integers(0, 9)) == 0:
            name = "RZ"
        else:
            n = draw(st.integers(lo // align, hi // align)) * align
            name = f"R{n}"
        if not source:
            return name
        if xmad and draw(st.booleans()):
            name += ".H1"
        if draw(st.booleans()):
            name += ".reuse"
        prefix = draw(st.sampled_from(["", "", "", "-", "~", "|"]))
        if prefix == "|":
            return f"|{name}|" if draw(st.booleans()) else f"-|{name}|"
        return prefix + name
    return build()


@st.composite
def const_text(draw, runnable=False):
    if runnable:  # bank 0, inside the launch's constant bank (geometry words and parameters)
        c = f"c[0x0][0x{4 * draw(st.integers(0, 0x90)):x}]"
    else:
        c = f"c[0x{draw(st.integers(0, 17)):x}][0x{draw(st.integers(0, 0xFFFF)):x}]"
    return draw(st.sampled_from([c, "-" + c, f"|{c}|", f"-|{c}|"]))


@st.composite
def mem_text(draw, hi_reg=254):
    off = draw(imm_text(-(1 << 23), (1 << 24) - 1))
    base = draw(st.one_of(st.just("RZ"), st.integers(0, hi_reg).map(lambda n: f"R{n}")))
    form = draw(st.integers(0, 3))
    if form == 0:
        return f"[{base}]"
    if form == 1:
        return f"[{off}]" if not off.startswith("-") else f"[{base}{off}]"
    sep = "" if off.startswith("-") else "+"
    return f"[{base}{sep}{off}]" if form == 2 else f"[{base} {sep or '-'} {off.lstrip('-')}]"


def pred_text(source):
    names = [f"P{p}" for p in "0123456T"]
    if source:
        names += ["!" + n for n in names]
    return st.sampled_from(names)


@st.composite
def modifiers(draw, spec):
    mods = []
    for group in spec.mod_groups:
        if draw(st.booleans()):
            choice = draw(st.sampled_from(sorted(group)))
            if choice not in mods:
                mods.append(choice)
    need = REQUIRED_MODIFIERS.get(spec.name)
    if need and not any(m in need for m in mods):
        mods.insert(0, draw(st.sampled_from(sorted(need))))
    assume(match_modifiers(spec, tuple(mods)) is None)
    return mods


@st.composite
def instruction_text(draw, opcodes=None, hi_reg=254, runnable=False):
    name = draw(st.sampled_from(sorted(opcodes or OPCODES)))
    spec = OPCODES[name]
    mods = draw(modifiers(spec))
    if runnable:  # leave out what launch rejects up front (64-bit addresses, directed rounding)
        assume(not {"E", "RM", "RP", "RZ"} & set(mods))
    if name == "BAR" and "RED" in mods:  # BAR.RED names its reduction
        assume({"POPC", "AND", "OR"} & set(mods))
    if name == "F2F":  # rounding to an integral value, or none, between equal types only
        types = [m for m in mods if m in ("F16", "F32", "F64")] + ["F32", "F32"]
        assume(types[0] == types[1] or not {"ROUND", "FLOOR", "CEIL", "TRUNC", "PASS"} & set(mods))
        # an F64 side takes an even register pair, which these random registers are not: the F64
        # forms have their own tests (tests/test_fp64.py and the CUDA C corpus)
        assume("F64" not in mods)
    if name in ("F2I", "I2F"):  # the same for their F64 and 64-bit integer sides (tests/test_fp64.py,
        assume(not {"F64", "S64", "U64"} & set(mods))  # tests/test_local_memory.py, the corpus)
    xmad = name == "XMAD"
    ops = [None] * len(spec.signature)
    width = 1
    for m in mods:
        width = {"32": 1, "64": 2, "128": 4}.get(m, width)
    if name in ("TLD", "TEX"):
        mask = draw(st.integers(1, 15))
        width = max(1, bin(mask).count("1"))
    if name in FP64 or (name == "I2F" and "F64" in mods):  # register pairs
        width = 2
    for n, allowed in enumerate(spec.signature):
        source = n >= spec.n_dst
        letter = draw(st.sampled_from(allowed.split("|")))
        if name in ("TLD", "TEX") and n == 5:
            ops[n] = draw(st.sampled_from([f"0x{mask:x}", str(mask)]))
            continue
        if letter == "R":
            ops[n] = draw(reg_text(source, xmad and source, hi=hi_reg))
        elif letter == "V":
            align = vector_alignment(width)
            ops[n] = draw(reg_text(False, False, lo=0, hi=hi_reg - width + 1, align=align))
        elif letter == "P":
            ops[n] = draw(pred_text(source))
        elif letter == "I":
            ops[n] = draw(imm_text(0, 31) if name in ("ISCADD", "ISCADD32I") and n == 3 else imm_text(0, 15) if name == "BAR"
                          else imm_text(0, 0xFF) if name == "LOP3" and n == 4
                          else imm_text(0, 0xFFFFF) if name in ("TLD", "TEX", "TLDS", "TEXS") else imm_text())
        elif letter == "F":
            ops[n] = draw(float_text)
        elif letter == "C":
            ops[n] = draw(const_text(runnable))
        elif letter == "S":
            ops[n] = draw(st.sampled_from(SPECIAL_REGISTERS))
        elif letter == "L":
            ops[n] = draw(st.sampled_from(LABELS))
        elif letter == "M":
            ops[n] = draw(mem_text(hi_reg))
        elif letter == "W" and name in ("TLD", "TEX", "TLDS", "TEXS"):
            # 1D textures (other dimensions are refused), and TLDS/TEXS's channel set
            ops[n] = "1D" if n == 4 else draw(st.sampled_from(sorted(CHANNEL_SETS)))
        elif letter == "W":
            ops[n] = draw(st.sampled_from(WORDS[name]))
    if name in ("TLD", "TEX") and "B" not in mods:  # the texture by its slot: no handle register
        ops[2] = "RZ"
    if name in ("TLDS", "TEXS"):  # d0 (and d0+1) and d1 (RZ when the channels fit d0, d0+1)
        ops[1] = f"R{draw(st.integers(0, hi_reg - 1))}"
        ops[0] = "RZ" if len(CHANNEL_SETS[ops[5]]) <= 2 else draw(st.sampled_from(
            ["RZ", f"R{draw(st.integers(0, hi_reg - 1))}"]))
    if name == "VMAD":  # it negates the product (-a) or c, nothing else and not both
        assume(not ops[2].startswith(("-", "|")) and "|" not in ops[1] + ops[3]
               and not (ops[1].startswith("-") and ops[3].startswith("-")))
    op_text = ".".join([name] + mods)
    body = op_text + (" " + ", ".join(ops) if ops else "")
    sep = draw(st.sampled_from([" ", "  ", "\t", " \t "]))
    g = "" if name in ("SSY", "PBK", "PCNT") else draw(guard)  # these take no guard
    return f"{draw(control())}{sep}{g:>4} {body};"


def kernel_text(lines):
    out = ["TOP:"]
    for n, x in enumerate(lines):
        if n == len(lines) // 2:
            out.append("MID:")
        out.append(x)
    out += ["END:", "--:-:-:-:5      EXIT;"]
    return "\n".join(out) + "\n"


def without_lines(instrs):
    """Records with line numbers cleared, compared by repr (a NAN immediate is not == itself)."""
    return repr([attrs.evolve(i, line=0) for i in instrs])


# ---------------------------------------------------------------------------------------------
# round trip


@SETTINGS
@given(st.lists(instruction_text(), min_size=1, max_size=6))
def test_valid_lines_round_trip_parse_print_parse(lines):
    text = kernel_text(lines)
    k1 = parse_text(text)
    # line by line: the printed line, in the same place, parses to the very same record
    printed_lines = [format_instruction(i) for i in k1.instructions]
    src_lines = text.split("\n")
    n = 0
    rebuilt = []
    for x in src_lines:
        if x.strip() and not x.rstrip().endswith(":"):
            rebuilt.append(printed_lines[n])
            n += 1
        else:
            rebuilt.append(x)
    k2 = parse_text("\n".join(rebuilt))
    assert repr(k2.instructions) == repr(k1.instructions)
    assert k2.labels == k1.labels
    # the whole kernel printed with its header
    k3 = parse_text(format_kernel(k1))
    assert without_lines(k3.instructions) == without_lines(k1.instructions)
    assert (k3.labels, k3.name, k3.reg_cnt, k3.shared_size, k3.params) == (
        k1.labels, k1.name, k1.reg_cnt, k1.shared_size, k1.params)
    # printing is stable
    assert format_kernel(k3) == format_kernel(k1)


@SETTINGS
@given(st.lists(instruction_text(), min_size=1, max_size=4), st.sampled_from(["\r\n", "\n"]))
def test_printed_text_equals_input_modulo_whitespace(lines, eol):
    # lines in the printer's own spelling (lower-case hex control, 'Y', normalized spacing)
    k1 = parse_text(kernel_text(lines))
    canonical = format_kernel(k1)
    k2 = parse_text(canonical.replace("\n", eol))
    assert format_kernel(k2) == canonical


# ---------------------------------------------------------------------------------------------
# garbage

_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\s*:\s*$", re.ASCII)


def check_garbage(text):
    try:
        parse_text(text, filename="garbage.sass")
    except SassParseError as e:
        assert "\n" not in str(e) and str(e).startswith("garbage.sass:")
        return False
    return True


@SETTINGS
@given(st.text(max_size=80).filter(lambda s: "\n" not in s and "\r" not in s))
def test_random_text_line_raises_sass_parse_error(line):
    ok = check_garbage(line + "\n--:-:-:-:5      EXIT;\n")
    s = line.strip()
    if s and not s.startswith("#") and not _LABEL.match(s):
        assert not ok, f"garbage accepted: {line!r}"


TOKENS = ["--:-:-:-:1", "01:2:3:Y:f", "@P0", "@!P7", "@", "IADD", "FFMA", "XMAD.PSL.CBCC", "LDS.U.128",
          "TLD.B.LZ.P", "ISETP.LT.AND", "BRA", "R1", "R255", "RZ", "R1.reuse", "R2.H1", "-R3", "~R4", "|R5|",
          "P0", "!P1", "PT", "0x10", "-0x8", "1.5", "c[0x0][0x140]", "c[", "[R1+0x4]", "[R1", "SR_TID.X",
          "1D", "TOP", ",", ";", ":", " ", "\t", "#", "//", ".", "-", "+", "[", "]", "|", "!", "~", "\ufeff",
          "\u0663", "é"]


@SETTINGS
@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=14))
def test_token_soup_never_crashes(tokens):
    text = "".join(tokens)
    if check_garbage(kernel_text([text])):
        # whatever was accepted must also round-trip
        k = parse_text(kernel_text([text]))
        assert without_lines(parse_text(format_kernel(k)).instructions) == without_lines(k.instructions)


@st.composite
def mutated_line(draw):
    line = draw(instruction_text())
    edits = draw(st.integers(1, 3))
    alphabet = "R0123456789xXabcdefH[]+-.,;:@!|~cPTZ \t_#é\u0663"
    for _ in range(edits):
        i = draw(st.integers(0, len(line)))
        j = draw(st.integers(i, min(len(line), i + 4)))
        repl = draw(st.text(alphabet=alphabet, max_size=3))
        line = line[:i] + repl + line[j:]
    return line


@SETTINGS
@given(mutated_line())
def test_mutated_valid_lines_parse_or_raise_sass_parse_error(line):
    text = kernel_text([line])
    if check_garbage(text):
        k = parse_text(text)
        assert without_lines(parse_text(format_kernel(k)).instructions) == without_lines(k.instructions)


@SETTINGS
@given(st.lists(instruction_text(), min_size=2, max_size=5), st.data())
def test_garbage_line_in_a_kernel_is_reported_on_its_line(lines, data):
    bad = data.draw(st.integers(0, len(lines) - 1))
    lines[bad] = data.draw(st.sampled_from(["--:-:-:-:1 IADD R1, R2", "--:-:-:-:1 FOO;", "bogus",
                                            "--:-:-:-:1 @P9 EXIT;", "--:-:-:-:1 MOV R1 R2;"]))
    text = kernel_text(lines)
    with __import__("pytest").raises(SassParseError) as e:
        parse_text(text)
    assert text.split("\n")[e.value.line - 1] == lines[bad]


# ---------------------------------------------------------------------------------------------
# executor fuzz: random valid kernels run or raise MaxsimError

@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(instruction_text(hi_reg=31, runnable=True), min_size=1, max_size=8),
       st.sampled_from([0, 4, 8, 1024]), st.sampled_from([0, 4, 4096]))
def test_random_kernels_run_or_raise_a_maxsim_error(lines, shared, nbytes):
    k = parse_text(f"# SharedSize: {shared}\n# RegCnt: 32\n" + kernel_text(lines))
    mem = GlobalMemory()
    if nbytes:
        mem.alloc(nbytes)
    tex = {0: Texture1D(np.ones((8, 4), np.float32)), 1: Texture1D(np.zeros((3, 4), np.float32))}
    try:
        launch(k, (2, 1), 40, [], mem, tex, max_instructions=2000)
    except MaxsimError as e:
        assert "\n" not in str(e)
