"""Static register-bank / reuse-cache analysis on small hand-written kernels (hand-computed counts)."""

import json

import pytest

from maxsim.analysis import (DEFAULT_MODEL, MAXAS_HEALTH_MODEL, NO_REUSE_MODEL, ReuseModel,
                             analyze_banks, bank_conflicts, find_loops, format_bank_report,
                             opcode_mix)
from maxsim.sass import parse_text

CTRL = "--:-:-:-:1      "


def kernel(*lines):
    """A kernel from instruction lines (control field added) and labels ("NAME:")."""
    text = "# Kernel: t\n" + "".join(
        (ln if ln.endswith(":") else CTRL + ln) + "\n" for ln in lines)
    return parse_text(text)


def rows(*lines, model=None):
    return analyze_banks(kernel(*lines), model).rows


# -- conflicts without reuse ------------------------------------------------------------------

def test_three_registers_in_one_bank_cost_two_extra_reads():
    (r,) = rows("FFMA R0, R4, R8, R12;")
    assert (r.reads, r.conflicts_no_reuse, r.conflicts_with_reuse, r.reuse_hits) == (3, 2, 2, 0)


def test_registers_in_different_banks_do_not_conflict():
    (r,) = rows("FFMA R0, R1, R2, R3;")
    assert (r.reads, r.conflicts_no_reuse) == (3, 0)


def test_same_register_twice_is_one_bank_read():
    a, b = rows("FFMA R0, R4, R4, R8;", "FFMA R0, R4, R4, R4;")
    assert (a.reads, a.conflicts_no_reuse) == (3, 1)
    assert (b.reads, b.conflicts_no_reuse) == (3, 0)


def test_rz_immediates_and_constants_read_no_bank():
    a, b, c = rows("IADD R0, RZ, R4;", "FFMA R0, R4, 1.5, R8;", "FFMA R0, R4, c[0x0][0x140], R8;")
    assert (a.reads, a.conflicts_no_reuse) == (1, 0)
    assert (b.reads, b.conflicts_no_reuse) == (2, 1)
    assert (c.reads, c.conflicts_no_reuse) == (2, 1)


def test_bank_conflicts_helper():
    assert bank_conflicts((0, 4, 8)) == 2
    assert bank_conflicts((0, 4, 1, 5)) == 2
    assert bank_conflicts((0, 0, -1)) == 0
    assert bank_conflicts((0, 2, 4), banks=2) == 2


def test_non_alu_instructions_are_not_rows():
    rs = rows("LDS.U.128 R4, [R8];", "STS [R0], R4;", "FFMA R0, R4, R8, R12;", "EXIT;")
    assert [r.opcode for r in rs] == ["FFMA"]


def test_half_rate_alu_instructions_are_counted():
    (r,) = rows("ISETP.LT.AND P0, PT, R4, R8, PT;")
    assert (r.reads, r.conflicts_no_reuse) == (2, 1)


# -- reuse caches ----------------------------------------------------------------------------

def test_reuse_hides_one_conflict():
    a, b = rows("FFMA R1, R4.reuse, R5, R6;", "FFMA R0, R4, R8, R12;")
    assert (a.reuse_hits, a.conflicts_with_reuse) == (0, 0)
    assert b.hit_mask == 0b001
    assert (b.reads, b.reuse_hits, b.conflicts_no_reuse, b.conflicts_with_reuse) == (3, 1, 2, 1)


def test_reuse_flag_does_not_serve_its_own_instruction():
    (r,) = rows("FFMA R0, R4.reuse, R8.reuse, R12;")
    assert (r.reuse_hits, r.conflicts_with_reuse) == (0, 2)


def test_caches_are_per_slot():
    _, b = rows("FFMA R1, R4.reuse, R5, R6;", "FFMA R0, R8, R4, R12;")
    assert b.reuse_hits == 0


def test_two_slots_hit_together():
    _, b = rows("FFMA R1, R4.reuse, R8.reuse, R6;", "FFMA R0, R4, R8, R12;")
    assert (b.reuse_hits, b.hit_mask, b.conflicts_with_reuse) == (2, 0b011, 0)


def test_write_invalidates_cached_register():
    *_, c = rows("FFMA R1, R4.reuse, R5, R6;", "MOV R4, R7;", "FFMA R0, R4, R8, R12;")
    assert (c.reuse_hits, c.conflicts_with_reuse) == (0, 2)


def test_memory_write_invalidates_cached_register():
    *_, c = rows("FFMA R1, R5.reuse, R6, R7;", "LDS.U.128 R4, [R20];", "FFMA R0, R5, R8, R12;")
    assert c.reuse_hits == 0


def test_write_to_unrelated_register_keeps_cache():
    *_, c = rows("FFMA R1, R4.reuse, R5, R6;", "MOV R9, R7;", "LDS R10, [R20];",
                 "FFMA R0, R4, R8, R12;")
    assert c.reuse_hits == 1


def test_flagging_instruction_that_writes_the_register_leaves_nothing_stale():
    _, b = rows("IADD R4, R4.reuse, R5;", "IADD R6, R4, R7;")
    assert b.reuse_hits == 0


def test_branch_invalidates():
    rs = rows("FFMA R1, R4.reuse, R5, R6;", "@P0 BRA L;", "FFMA R0, R4, R8, R12;", "L:", "EXIT;")
    assert rs[-1].reuse_hits == 0


def test_branch_target_invalidates():
    rs = rows("FFMA R1, R4.reuse, R5, R6;", "LOOP:", "FFMA R0, R4, R8, R12;",
              "@P0 BRA LOOP;", "EXIT;")
    assert rs[-1].reuse_hits == 0


def test_label_that_is_no_target_does_not_invalidate():
    rs = rows("FFMA R1, R4.reuse, R5, R6;", "HERE:", "FFMA R0, R4, R8, R12;", "EXIT;")
    assert rs[-1].reuse_hits == 1


def test_plain_read_drops_the_register():
    assert [r.reuse_hits for r in rows("FFMA R1, R4.reuse, R5, R6;", "FFMA R2, R4, R5, R6;",
                                       "FFMA R3, R4, R5, R6;")] == [0, 1, 0]
    keep = ReuseModel(drop_on_plain_read=False)
    assert [r.reuse_hits for r in rows("FFMA R1, R4.reuse, R5, R6;", "FFMA R2, R4, R5, R6;",
                                       "FFMA R3, R4, R5, R6;", model=keep)] == [0, 1, 1]


def test_flagged_hit_keeps_the_register():
    rs = rows("FFMA R1, R4.reuse, R5, R6;", "FFMA R2, R4.reuse, R5, R6;", "FFMA R3, R4, R5, R6;")
    assert [r.reuse_hits for r in rs] == [0, 1, 1]


SEQ = ("FFMA R0, R4.reuse, R1, R2;",   # slot 0 cache: R4
       "FFMA R0, R8.reuse, R1, R2;",   # R4 R8
       "FFMA R0, R4.reuse, R1, R2;",   # hit R4; LRU order R8 R4 (FIFO keeps R4 R8)
       "FFMA R0, R12.reuse, R1, R2;",  # LRU evicts R8 -> R4 R12; FIFO evicts R4 -> R8 R12
       "FFMA R0, R8.reuse, R1, R2;",
       "FFMA R0, R4.reuse, R1, R2;")


def test_two_entries_lru():
    assert [r.reuse_hits for r in rows(*SEQ)] == [0, 0, 1, 0, 0, 0]
    # after R8 misses and is inserted (evicting R4, the LRU one), R4 misses too
    assert [r.reuse_hits for r in rows(*SEQ[:5], "FFMA R0, R12.reuse, R1, R2;")] == [0, 0, 1, 0, 0, 1]


def test_two_entries_fifo():
    fifo = ReuseModel(policy="fifo")
    assert [r.reuse_hits for r in rows(*SEQ, model=fifo)] == [0, 0, 1, 0, 1, 0]


def test_unbounded_cache_and_no_reuse_model():
    big = ReuseModel(entries_per_slot=None)
    assert [r.reuse_hits for r in rows(*SEQ, model=big)] == [0, 0, 1, 0, 1, 1]
    assert [r.reuse_hits for r in rows(*SEQ, model=NO_REUSE_MODEL)] == [0] * 6
    (r,) = rows("FFMA R0, R4, R8, R12;", model=NO_REUSE_MODEL)
    assert r.conflicts_with_reuse == r.conflicts_no_reuse == 2


def test_maxas_health_model_ignores_writes_and_branches():
    lines = ("FFMA R1, R4.reuse, R5, R6;", "MOV R4, R7;", "@P0 BRA L;", "L:",
             "FFMA R0, R4, R8, R12;", "EXIT;")
    assert rows(*lines)[-1].reuse_hits == 0
    assert rows(*lines, model=MAXAS_HEALTH_MODEL)[-1].reuse_hits == 1


def test_model_from_regfile_config():
    m = ReuseModel.from_regfile({"banks": 2, "reuse_entries_per_slot": 1})
    assert (m.banks, m.entries_per_slot, m.policy) == (2, 1, "lru")
    (r,) = rows("FFMA R0, R2, R4, R1;", model=m)
    assert r.conflicts_no_reuse == 1


# -- totals, hit rates, loops, per-k-step figures ----------------------------------------------

def test_hit_rate_arithmetic():
    rep = analyze_banks(kernel("FFMA R1, R4.reuse, R8.reuse, R6;",   # 3 reads, 0 hits
                               "FFMA R2, R4, R8, R6;",               # 3 reads, 2 hits
                               "IADD R3, R4, RZ;",                   # 1 read, 0 hits (R4 dropped)
                               "LDS R9, [R4];",                      # not ALU
                               "EXIT;"))
    t = rep.totals
    assert (t.instructions, t.ffma, t.reads, t.reuse_hits) == (3, 2, 7, 2)
    assert rep.reuse_hit_rate_kernel == pytest.approx(2 / 7)
    assert (t.conflicts_no_reuse, t.conflicts_with_reuse, t.hidden_conflicts) == (2, 1, 1)
    assert rep.main_loop is None and rep.reuse_hit_rate_loop == 0.0 and rep.per_kstep == {}


def loop_kernel(n_ffma, reuse=True):
    r = ".reuse" if reuse else ""
    body = [f"FFMA R1, R4{r}, R8, R1;"] * n_ffma   # R4, R8 share bank 0: 1 conflict each
    return kernel("MOV R1, RZ;", "FFMA R2, R4, R8, R12;", "TOP:", "ISETP.LT.AND P0, PT, R3, R5, PT;",
                  *body, "@P0 BRA TOP;", "EXIT;")


def test_loop_detection_and_totals():
    k = loop_kernel(128)
    assert find_loops(k) == [(2, 131)]
    rep = analyze_banks(k)
    lp = rep.main_loop
    assert (lp.start, lp.end, lp.label, lp.ffma, lp.k_steps) == (2, 131, "TOP", 128, 2)
    # first FFMA after the label misses (target invalidation), the other 127 hit R4
    assert (lp.ffma_totals.reads, lp.ffma_totals.reuse_hits) == (384, 127)
    assert (lp.totals.reads, lp.totals.reuse_hits) == (386, 127)   # + ISETP's 2 reads
    assert rep.reuse_hit_rate_loop == pytest.approx(127 / 386)
    assert (lp.ffma_totals.conflicts_no_reuse, lp.ffma_totals.conflicts_with_reuse) == (128, 1)
    assert rep.loop_ffma == 128
    assert rep.per_kstep == pytest.approx({"reads": 192, "reuse_hits": 63.5,
                                           "conflicts_no_reuse": 64, "conflicts_with_reuse": 0.5})
    # whole kernel adds the two FFMA/MOV before the loop: FFMA R2, R4, R8, R12 = 2 conflicts
    assert rep.totals.conflicts_no_reuse == 130 and rep.totals.reads == 386 + 3 + 0


def test_loop_without_reuse_flags():
    rep = analyze_banks(loop_kernel(64, reuse=False))
    assert rep.per_kstep == pytest.approx({"reads": 192, "reuse_hits": 0,
                                           "conflicts_no_reuse": 64, "conflicts_with_reuse": 64})


def test_main_loop_is_the_one_with_most_ffma():
    k = kernel("A:", "IADD R1, R1, 0x1;", "@P0 BRA A;",
               "B:", "FFMA R0, R4, R8, R12;", "FFMA R0, R4, R8, R12;", "@P1 BRA B;",
               "FFMA R1, R2, R3, R1;", "@P2 BRA FWD;", "FWD:", "EXIT;")
    rep = analyze_banks(k)
    assert [(lp.start, lp.end) for lp in rep.loops] == [(0, 1), (2, 4)]
    assert rep.main_loop.label == "B" and rep.loop_ffma == 2


# -- opcode mix, text and JSON reports ---------------------------------------------------------

def test_opcode_mix():
    k = loop_kernel(3)
    assert opcode_mix(k) == {"FFMA": 4, "BRA": 1, "EXIT": 1, "ISETP": 1, "MOV": 1}
    assert opcode_mix(k, 2, 6) == {"FFMA": 3, "BRA": 1, "ISETP": 1}
    assert opcode_mix(k, by="full")["ISETP.LT.AND"] == 1
    assert opcode_mix(k, by="unit") == {"alu": 5, "alu_half": 1, "branch": 1, "exit": 1}
    with pytest.raises(ValueError):
        opcode_mix(k, by="colour")


def test_text_and_json_reports():
    rep = analyze_banks(loop_kernel(64))
    text = format_bank_report(rep)
    assert "main loop TARGET" not in text and "main loop TOP" in text
    assert "per k-step" in text and "unhidden with reuse: 1" in text
    assert "FFMA" in text   # the one unhidden conflict is listed
    assert len(format_bank_report(rep, rows="all").splitlines()) > len(text.splitlines())
    assert "instructions" not in format_bank_report(rep, rows="none")
    with pytest.raises(ValueError):
        format_bank_report(rep, rows="some")
    d = json.loads(json.dumps(rep.to_dict()))
    assert d["main_loop"]["ffma"] == 64 and d["per_kstep"]["conflicts_no_reuse"] == 64
    assert d["model"] == DEFAULT_MODEL.to_dict()
    assert len(d["rows"]) == len(rep.rows) and d["rows"][0]["slot_regs"] == [-1, -1, -1]


# -- SGEMM k-step orders built here (no maxas files): the published reuse figures ---------------
# An 8x8 thread tile: FFMA C[x][y], A[x], B[y], C[x][y]. A in R64-71, B in R72-79 (second buffer
# R80-95 on odd k-steps), C in R0-63 chosen so that C never shares a bank with its A or B.
# Reuse flags as maxas's allocator sets them: when a register is read again in the same slot while
# it is still among the last `window` registers seen in that slot, flag its previous read.

def _c_map(naive=False):
    if naive:
        return {(x, y): 8 * x + y for x in range(8) for y in range(8)}
    # each (A bank, B bank) pair has 4 cells; a != b: 2 cells to each of the 2 other banks;
    # a == b: the other banks get 2, 1, 1 cells. Every bank ends up with 16 C registers.
    free = {b: [r for r in range(64) if r % 4 == b] for b in range(4)}
    out = {}
    for x in range(8):
        for y in range(8):
            a, b, cell = x % 4, y % 4, 2 * (x // 4) + y // 4
            if a != b:
                bank = sorted({0, 1, 2, 3} - {a, b})[cell // 2]
            else:
                bank = (a + (1, 1, 2, 3)[cell]) % 4
            out[x, y] = free[bank].pop(0)
    return out


def _order(kind):
    if kind == "raster":
        return [(x, y) for x in range(8) for y in range(8)]
    if kind == "zigzag":  # row 0 right to left, so the first FFMA's A and B are in different banks
        return [(x, y) for x in range(8) for y in (range(7, -1, -1) if x % 2 == 0 else range(8))]
    out, xs = [], [0, 1, 4, 5]  # swirl: 2x2 twists inside 4x4 blocks, blocks back and forth
    for y in (0, 2, 4, 6):
        for x in xs:
            out += [(x + dx, y + dy) for dx, dy in ((2, 0), (2, 1), (0, 1), (0, 0))]
        xs = xs[::-1]
    return out


def _flags(seq, window):
    flags = [[False, False] for _ in seq]
    seen = [{}, {}]
    for i, regs in enumerate(seq):
        for s in (0, 1):
            h, r = seen[s], regs[s]
            if r in h:
                flags[h[r]][s] = True
            elif len(h) >= window:
                del h[min(h, key=h.get)]
            h[r] = i
    return flags


def sgemm_loop(kind, naive=False, reuse=True, window=3, ksteps=2):
    cmap = _c_map(naive)
    seq = [(64 + 16 * (k % 2) + x, 72 + 16 * (k % 2) + y, cmap[x, y])
           for k in range(ksteps) for x, y in _order(kind)]
    flags = _flags(seq, window) if reuse else [[False, False]] * len(seq)
    body = [f"FFMA R{c}, R{a}{'.reuse' * fa}, R{b}{'.reuse' * fb}, R{c};"
            for (a, b, c), (fa, fb) in zip(seq, flags)]
    return kernel("TOP:", *body, "@P0 BRA TOP;", "EXIT;")


def kstep(kind, model=None, **kw):
    k = analyze_banks(sgemm_loop(kind, **kw), model).per_kstep
    return k["conflicts_no_reuse"], k["conflicts_with_reuse"], k["reuse_hits"], k["reads"]


def test_sgemm_orders_each_ffma_once():
    for kind in ("raster", "zigzag", "swirl"):
        assert sorted(_order(kind)) == [(x, y) for x in range(8) for y in range(8)]
    cmap = _c_map()
    assert sorted(cmap.values()) == list(range(64))
    assert all(c % 4 not in (x % 4, y % 4) for (x, y), c in cmap.items())


def test_sgemm_swirl_49_percent_no_unhidden_conflict():
    assert kstep("swirl") == (16, 0, 94, 192)   # 94/192 = 49.0% (maxas wiki: 49% in the loop)


def test_sgemm_raster_30_percent_two_unhidden_conflicts():
    assert kstep("raster") == (16, 2, 56, 192)  # 29.2% (maxas wiki: about 30%, 2 unhidden)


def test_sgemm_zigzag_no_unhidden_conflict():
    # 2-entry caches: 7 A hits per row + 2 B hits per turn = 70/192 = 36.5%. maxas's own accounting
    # (unbounded history, 3-register allocator window) counts 3 B hits per turn: 77/192 = 40.1%,
    # the wiki's "39%" over the whole kernel.
    assert kstep("zigzag") == (16, 0, 70, 192)
    assert kstep("zigzag", MAXAS_HEALTH_MODEL) == (16, 0, 77, 192)
    assert kstep("zigzag", MAXAS_HEALTH_MODEL, window=2) == (16, 0, 70, 192)


def test_sgemm_without_reuse_and_with_naive_registers():
    assert kstep("swirl", reuse=False) == (16, 16, 0, 192)
    # C = 8x+y is always in B's bank: 64 C-B conflicts + 16 A-B (3 in one bank there: 2 each)
    assert kstep("swirl", naive=True) == (80, 16, 94, 192)
    assert kstep("raster", naive=True, reuse=False) == (80, 80, 0, 192)


# -- our SGEMM generator (workloads/sgemm/generator.py) ----------------------------------------

def _generated(kernel_name, traversal, regmap="maxas", reuse=True):
    gen = pytest.importorskip("workloads.sgemm.generator")
    return parse_text(gen.generate(kernel_name, traversal, regmap, reuse))


def _kstep_of(k, model=None):
    rep = analyze_banks(k, model)
    assert rep.loop_ffma == 512   # 8 values of k per loop iteration
    s = rep.per_kstep
    return s["conflicts_no_reuse"], s["conflicts_with_reuse"], s["reuse_hits"], s["reads"]


@pytest.mark.parametrize("name", ["sgemm_64", "sgemm_128"])
def test_generator_swirl_matches_maxas(name):
    k = _generated(name, "swirl")
    assert _kstep_of(k) == (16, 0, 94, 192)                # maxas: 16 conflicts, 0 unhidden, 49%
    rep = analyze_banks(k)
    assert 0.48 < rep.reuse_hit_rate_loop < 0.50
    assert rep.main_loop.ffma_totals.reuse_hit_rate == pytest.approx(94 / 192)


@pytest.mark.parametrize("name", ["sgemm_64", "sgemm_128"])
def test_generator_zigzag_and_raster(name):
    zig, ras = _generated(name, "zigzag"), _generated(name, "raster")
    assert _kstep_of(zig) == (16, 0, 70, 192)               # 36.5% with 2-entry caches
    assert _kstep_of(zig, MAXAS_HEALTH_MODEL) == (16, 0, 77, 192)   # 40.1%: maxas's "39%"
    assert _kstep_of(ras) == (16, 2, 56, 192)               # 29.2%, 2 unhidden: maxas's "30%"
    rates = [analyze_banks(_generated(name, t)).reuse_hit_rate_kernel
             for t in ("swirl", "zigzag", "raster")]
    assert rates == sorted(rates, reverse=True)


@pytest.mark.parametrize("name", ["sgemm_64", "sgemm_128"])
def test_generator_naive_regmap_and_no_reuse(name):
    naive = _kstep_of(_generated(name, "swirl", "naive"))
    assert naive[0] == 80 and naive[0] >= 5 * 16             # every FFMA's C shares B's bank
    assert _kstep_of(_generated(name, "swirl", reuse=False)) == (16, 16, 0, 192)
