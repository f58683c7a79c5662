"""Property tests of the instruction codec, on generated instructions of every opcode.

- Words: hypothesis draws a word of every form of the encoding table (each field and modifier from
  its legal values, reuse flags on the slots the form has): decoding it and encoding the text
  gives the same bytes, and where the simulator's parser reads the decoded text, the parser's
  records encode to the same bytes too.
- Text: hypothesis draws instruction lines of every opcode the simulator knows (the generator of
  tests/test_roundtrip_property.py): each either has no Maxwell encoding, and encoding it says so
  in one line naming it, or it round-trips encode -> decode -> parse to the same record.
"""

from __future__ import annotations

import collections

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import codec_words
from maxsim.errors import EncodingError, SassParseError
from maxsim.isa.opcodes import OPCODES
from maxsim.sass import encoding as E
from maxsim.sass import parse_text
from test_encoding import same_instruction
from test_roundtrip_property import instruction_text, kernel_text

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FORMS = list(range(len(E.COMPILED)))


def _word_code(c, data):
    rnd = lambda n: data.draw(st.integers(0, n - 1))  # noqa: E731
    return codec_words.lone_code([(codec_words.random_word(c, rnd), codec_words.reuse_bits(c, rnd))])


@SETTINGS
@given(st.sampled_from(FORMS), st.data())
def test_decoded_words_encode_back(n, data):
    c = E.COMPILED[n]
    code = _word_code(c, data)
    lines = E.decode(code, stop_at_self_branch=False)
    assert lines[0].text.split(".")[0].split(" ")[0] == c.form.opcode
    text = E.format_lines(lines)
    assert E.encode_text(text, tail=False) == code
    try:
        k = parse_text(text)
    except SassParseError:
        return  # outside the simulator's syntax (see test below for how often that is)
    assert E.encode(k, tail=False) == code


def test_the_parser_reads_decoded_words_of_every_opcode_it_knows():
    """The property above is not empty: for every opcode both the table and the simulator know,
    decoded words of its forms parse (a fixed sample of 100 words per form)."""
    import random

    rng = random.Random(7)
    parsed = collections.Counter()
    total = collections.Counter()
    for c in E.COMPILED:
        if c.form.opcode not in OPCODES:
            continue
        for _ in range(100):
            word = codec_words.random_word(c, rng.randrange)
            if c.form.opcode in ("TLDS", "TEXS") and _ % 2:
                # every other word a 1D fetch (texture type 0, the second coordinate RZ): the
                # simulator runs 1D textures only, which random words seldom are
                word = word & ~(0xF << 53) | 0xFF << 20
            code = codec_words.lone_code([(word, codec_words.reuse_bits(c, rng.randrange))])
            total[c.form.opcode] += 1
            try:
                k = parse_text(E.format_lines(E.decode(code, stop_at_self_branch=False)))
            except SassParseError:
                continue
            parsed[c.form.opcode] += 1
            assert E.encode(k, tail=False) == code
    assert set(total) == set(OPCODES) & set(E.OPCODES_ENCODED)
    assert {op for op in total if parsed[op] == 0} == set()


@SETTINGS
@given(st.lists(instruction_text(), min_size=1, max_size=4))
@example(lines=["--:-:-:-:0      DMNMX RZ, RZ, NAN, P0;"])  # an fp64 NaN immediate compares equal to itself
@example(lines=["--:-:-:-:0      F2F.RN RZ, RZ;"])  # F32 to F32 with .RN: the word of no rounding modifier
def test_generated_instructions_round_trip_or_are_refused_by_name(lines):
    k = parse_text(kernel_text(lines), filename="gen.sass")
    for i in k.instructions:
        try:
            E.encode([i], tail=False)
        except EncodingError as e:
            assert str(e).startswith(f"gen.sass:{i.line}: {i.full_opcode}: ") and "\n" not in str(e)
    try:
        code = E.encode(k)
    except EncodingError:
        return
    k2 = parse_text(E.decode_text(code))
    assert len(k2.instructions) == len(k.instructions)
    for a, b in zip(k.instructions, k2.instructions):
        assert same_instruction(a, b), (a, b)


def test_every_opcode_the_simulator_runs_is_in_the_table():
    """Each opcode of maxsim's opcode table has a Maxwell encoding (none is left out)."""
    assert sorted(set(OPCODES) - set(E.OPCODES_ENCODED)) == []
