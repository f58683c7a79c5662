"""The reuse-flag pass (maxsim.analysis.reuse) on small hand-written kernels and on the SGEMM."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maxsim.analysis.reuse import clear_reuse_flags, reuse_flag_masks, set_reuse_flags
from maxsim.sass import format_kernel, parse_file, parse_text

REF = Path("/work/ref/maxas")  # maxas's kernels, if a developer saved them there (never committed)


def kernel(body, regs=128):
    lines = [f"# RegCnt: {regs}"]
    for line in body.strip().splitlines():
        line = line.strip()
        lines.append(line if line.endswith(":") else f"--:-:-:-:1      {line}")
    return parse_text("\n".join(lines) + "\n--:-:-:-:5      EXIT;\n")


def flags(body, **kw):
    """The printed instructions (without controls) after the pass."""
    k = set_reuse_flags(kernel(body), **kw)
    return [line.split(None, 1)[1].strip() for line in format_kernel(k).splitlines()
            if line[:1] and line[0] in "-0123456789" and "EXIT" not in line]


def test_next_reader_in_the_same_slot_gets_the_flag():
    assert flags("""
        FFMA R0, R4, R5, R0;
        FFMA R1, R4, R6, R1;
        FFMA R2, R7, R6, R2;
    """) == ["FFMA R0, R4.reuse, R5, R0;", "FFMA R1, R4, R6.reuse, R1;", "FFMA R2, R7, R6, R2;"]


def test_the_same_register_in_another_slot_does_not_count():
    assert flags("FFMA R0, R4, R5, R0; FFMA R1, R5, R4, R1;".replace("; ", ";\n")) == [
        "FFMA R0, R4, R5, R0;", "FFMA R1, R5, R4, R1;"]


@pytest.mark.parametrize("between", ["MOV R4, R9;", "LDS R4, [R9];", "S2R R4, SR_TID.X;",
                                     "LDS.U.128 R4, [R9];", "@P0 MOV R4, R9;"])
def test_a_write_in_between_clears(between):
    out = flags(f"FFMA R0, R4, R5, R0;\n{between}\nFFMA R1, R4, R6, R1;")
    assert out[0] == "FFMA R0, R4, R5, R0;"


def test_a_store_in_between_does_not_clear():
    out = flags("FFMA R0, R4, R5, R0;\nSTS [R9], R4;\nFFMA R1, R4, R6, R1;")
    assert out[0] == "FFMA R0, R4.reuse, R5, R0;"


def test_branches_clear_and_labels_clear_by_default():
    body = "FFMA R0, R4, R5, R0;\nL1:\nFFMA R1, R4, R6, R1;\n@P0 BRA L1;\nFFMA R2, R4, R6, R2;"
    assert flags(body) == ["FFMA R0, R4, R5, R0;", "FFMA R1, R4, R6, R1;", "@P0 BRA L1;",
                           "FFMA R2, R4, R6, R2;"]
    # maxas itself keeps candidates across labels (but not across branches)
    assert flags(body, clear_at_labels=False)[:2] == ["FFMA R0, R4.reuse, R5, R0;", "FFMA R1, R4, R6, R1;"]


def test_only_alu_instructions_take_flags():
    assert flags("LDS R0, [R4];\nLDS R1, [R4];\nSTS [R4], R0;") == [
        "LDS R0, [R4];", "LDS R1, [R4];", "STS [R4], R0;"]
    assert flags("ISETP.LT.AND P0, PT, R4, R5, PT;\nSHL R1, R4, 0x2;\nSEL R2, R6, R4, P0;") == [
        "ISETP.LT.AND P0, PT, R4.reuse, R5, PT;", "SHL R1, R4, 0x2;", "SEL R2, R6, R4, P0;"]


def test_a_source_the_instruction_itself_overwrites_is_not_a_candidate():
    assert flags("IADD R1, R1, R2;\nIADD R1, R1, R2;\nIADD R3, R1, R2;") == [
        "IADD R1, R1, R2.reuse;", "IADD R1, R1, R2.reuse;", "IADD R3, R1, R2;"]


def test_three_candidates_per_slot():
    # slot 1 reads R72, R73, R74, then R72 again: three distinct registers fit, four do not
    three = "FFMA R0, R64, R72, R0;\nFFMA R1, R64, R73, R1;\nFFMA R2, R64, R74, R2;\nFFMA R3, R64, R72, R3;"
    four = three.replace("FFMA R3, R64, R72, R3;", "FFMA R3, R64, R75, R3;\nFFMA R4, R64, R72, R4;")
    assert flags(three)[0] == "FFMA R0, R64.reuse, R72.reuse, R0;"
    assert flags(four)[0] == "FFMA R0, R64.reuse, R72, R0;"
    assert flags(three, entries=2)[0] == "FFMA R0, R64.reuse, R72, R0;"
    # a read refreshes a candidate (least recently *read* is forgotten first)
    refresh = three.replace("FFMA R2, R64, R74, R2;", "FFMA R2, R64, R72, R2;\nFFMA R5, R64, R74, R5;\n"
                                                       "FFMA R6, R64, R75, R6;")
    assert flags(refresh)[2] == "FFMA R2, R64.reuse, R72.reuse, R2;"


def test_existing_flags_are_replaced_and_the_pass_is_idempotent():
    k = kernel("FFMA R0, R4.reuse, R5.reuse, R0;\nFFMA R1, R7, R6, R1;\nFFMA R2, R7, R6, R2;")
    once = set_reuse_flags(k)
    assert [i.reuse_mask for i in once.instructions] == [0, 3, 0, 0]
    assert format_kernel(set_reuse_flags(once)) == format_kernel(once)
    assert [i.reuse_mask for i in clear_reuse_flags(once).instructions] == [0, 0, 0, 0]
    assert format_kernel(parse_text(format_kernel(once))) == format_kernel(once)


def _simple_rule(k):
    """The one-candidate rule written the obvious way: flag a slot when the next reader of that
    slot reads the same register, with no write to it and no branch or label in between."""
    masks = [0] * len(k.instructions)
    labels = {i for _, i in k.labels}
    for i, a in enumerate(k.instructions):
        if a.unit not in ("alu", "alu_half"):
            continue
        for slot, r in enumerate(a.slot_regs):
            if r < 0 or (a.dst_regs and a.dst_regs[0] == r):
                continue
            for j in range(i + 1, len(k.instructions)):
                b = k.instructions[j]
                if j in labels:
                    break
                if b.unit in ("alu", "alu_half") and slot < len(b.slot_regs) and b.slot_regs[slot] >= 0:
                    own = b.dst_regs and b.dst_regs[0] == b.slot_regs[slot]
                    if not own:
                        if b.slot_regs[slot] == r and r not in b.dst_regs:
                            masks[i] |= 1 << slot
                        break
                if r in b.dst_regs or b.unit in ("branch", "exit"):
                    break
    return masks


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["FFMA", "IADD", "MOV", "LDS"]),
                          st.integers(0, 5), st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=14))
def test_one_candidate_is_the_simple_rule(prog):
    lines = []
    for op, d, a, b in prog:
        lines.append({"FFMA": f"FFMA R{d}, R{a}, R{b}, R{d};", "IADD": f"IADD R{d}, R{a}, R{b};",
                      "MOV": f"MOV R{d}, R{a};", "LDS": f"LDS R{d}, [R{a}];"}[op])
    k = kernel("\n".join(lines))
    assert reuse_flag_masks(k, entries=1) == _simple_rule(k)


def test_sgemm_kstep_flags_are_maxas_s():
    gen = pytest.importorskip("workloads.sgemm.generator")
    k = gen.generate_kernel("sgemm_64", "swirl", "maxas", True)
    text = format_kernel(k)
    # the first FFMAs of maxas's main loop (maxas wiki "SGEMM"; sgemm_final_64.sass)
    assert "FFMA R1, R66.reuse, R72.reuse, R1;" in text
    assert "FFMA R0, R66, R73.reuse, R0;" in text
    assert "FFMA R2, R64.reuse, R73.reuse, R2;" in text


@pytest.mark.parametrize("name", ["sgemm_final_64.sass", "sgemm_final_128.sass"])
def test_maxas_kernels_flags_are_reproduced(name):
    if not (REF / name).exists():
        pytest.skip(f"maxas's {name} is not saved in {REF}")
    k = parse_file(REF / name)
    assert reuse_flag_masks(k) == [i.reuse_mask for i in k.instructions]
    assert reuse_flag_masks(k, clear_at_labels=False) == [i.reuse_mask for i in k.instructions]
    assert reuse_flag_masks(k, entries=2) != [i.reuse_mask for i in k.instructions]
