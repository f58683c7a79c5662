"""A run of ALU instructions as one table (maxsim.functional.alublock) against the instructions'
numpy closures (maxsim.functional.aluops, floatops), the specification: every register, predicate
and condition-code bit the same, lane by lane, on random operands (values near the wrap-around
often), with and without a mask of lanes, over more lanes than a chunk of the table's loop."""

import numpy as np
import pytest

from sasskit import kernel

from maxsim.functional import alublock
from maxsim.functional.executor import ID_NAMES, Context, Group, compile_instruction
from maxsim.functional.memory import GlobalMemory

CONSTS = [0x10, 0xFFFFFFF0, 0x80000000, 0x3FC00000, 7, 33]  # c[0x0][0x140 + 4n]

LINES = [
    "MOV R3, R5", "MOV R3, c[0x0][0x144]", "MOV32I R3, 0x12345678", "MOV R3, RZ",
    "IADD R3, R4, R5", "IADD R3, -R4, R5", "IADD R3, R4, -R5", "IADD R3, R4, c[0x0][0x140]",
    "IADD R3, R4, -c[0x0][0x140]", "IADD32I R3, R4, -0x7", "IADD R4, R4, R5",
    "IADD.CC R3, R4, R5", "IADD.CC R3, R4, -R5", "IADD.X R3, R4, R5", "IADD.X R3, R4, -R5",
    "IADD.X R3, R4, c[0x0][0x144]", "IADD RZ.CC, R4, -R5", "IADD.CC R5, R4, R5", "IADD.X.CC R3, R4, R5",
    "ISCADD R3, R4, R5, 0x2", "ISCADD R3, R4, c[0x0][0x140], 0x1f", "ISCADD.CC R3, R4, R5, 0x4",
    "ISCADD R3, -R4, R5, 0x3",
    "IADD3 R3, R4, R5, R6", "IADD3 R3, -R4, 0x10, R5", "IADD3 R3, R4, -R5, -R6",
    "XMAD R3, R4, R5, R6", "XMAD.MRG R3, R4, R5.H1, RZ", "XMAD.PSL.CBCC R3, R4.H1, R5.H1, R6",
    "XMAD.PSL.CBCC R6, R4.H1, R5.H1, R6", "XMAD.S16.U16 R3, R4, R5, R6", "XMAD.U16.S16.CHI R3, R4, R5.H1, R6",
    "XMAD.S16.S16.CSFU R3, R4.H1, R5.H1, R6", "XMAD.CLO R3, R4, R5, R6", "XMAD R3, R4, 0x1234, R6",
    "XMAD R3, R4, c[0x0][0x144], RZ",
    "SHL R3, R4, 0x5", "SHL R3, R4, 0x21", "SHL R3, R4, R7", "SHL.W R3, R4, R7", "SHR R3, R4, 0x3",
    "SHR.U32 R3, R4, 0x3", "SHR R3, R4, R7", "SHR.U32 R3, R4, R7", "SHR.U32 R3, R4, 0x20", "SHR R3, R4, 0x28",
    "SHL R3, R4, c[0x0][0x154]",
    "LOP.AND R3, R4, R5", "LOP.OR R3, R4, ~R5", "LOP.XOR R3, R4, 0xff", "LOP.PASS_B R3, RZ, ~R5",
    "LOP32I.AND R3, R4, 0xff00ff", "LOP3.LUT R3, R4, R5, R6, 0x96", "LOP3.LUT R3, R4, c[0x0][0x148], R6, 0xe8",
    "SEL R3, R4, R5, P0", "SEL R3, R4, 0x5, !P1",
    "ISETP.LT.AND P0, PT, R4, R5, PT", "ISETP.GE.U32.AND P1, P2, R4, 0x10, P0", "ISETP.EQ.OR P0, PT, R4, R5, P0",
    "ISETP.NE.XOR P0, P1, R4, R5, !P0", "ISETP.GT.OR P1, P0, R4, c[0x0][0x148], P1", "ISETP.LE.AND P2, P0, R4, R5, P2",
    "ISETP.EQ.U32.AND P0, P1, R4, R4, !P1",
    "FFMA R3, R4, R5, R6", "FFMA R6, R4, R5, R6", "FMUL R3, R4, -R5", "FADD R3, -|R4|, R5", "FFMA.FTZ R3, R4, R5, R6",
    "FADD.SAT R3, R4, R5", "FMUL32I R3, R4, 1.5", "FADD R3, R4, c[0x0][0x14c]", "FMUL R4, R4, R4",
]


def _context(k):
    bank = bytearray(0x400)
    bank[0x140:0x140 + 4 * len(CONSTS)] = np.array(CONSTS, dtype=np.uint32).tobytes()
    return Context(k, bytes(bank), 0, 1, GlobalMemory(), {}, 128, (1, 1))


def _group(rng, k, lanes, full):
    edge = np.array([0, 1, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF,
                     0x3F800000, 0x00000001, 0x80400000, 0x7F800000], dtype=np.uint32)
    g = Group()
    g.regs = rng.integers(0, 1 << 32, size=(k.reg_cnt + 1, lanes), dtype=np.uint64).astype(np.uint32)
    pick = rng.random(g.regs.shape) < 0.3
    g.regs[pick] = rng.choice(edge, size=int(pick.sum()))
    g.regs[5, : lanes // 8] = g.regs[4, : lanes // 8]  # (equal operands)
    g.regs[7] = rng.integers(0, 40, size=lanes, dtype=np.uint32)  # (shift counts, some 32 or more)
    g.regs[k.reg_cnt] = 0
    g.preds = rng.random((8, lanes)) < 0.5
    g.preds[7] = True
    g.cc = rng.choice(np.array([0, 1, 2, 3, 17, 19, 8, 12], dtype=np.uint32), size=lanes)
    g.active = np.ones(lanes, bool) if full else rng.random(lanes) < 0.7
    g.full = bool(g.active.all())
    g.pc, g.stack, g.simt = 0, [], []
    g.warps = np.arange((lanes + 31) // 32)
    g.ids_base = (0, tuple(np.arange(lanes, dtype=np.uint32) for _ in ID_NAMES))
    g.init_counters()
    return g


def _copy(g):
    x = Group()
    x.regs, x.preds, x.cc, x.active, x.full = g.regs.copy(), g.preds.copy(), g.cc.copy(), g.active, g.full
    x.pc, x.stack, x.simt, x.warps, x.ids_base = 0, [], [], g.warps, g.ids_base
    x.init_counters()
    return x


def _same(got, want, what):
    assert np.array_equal(got.regs, want.regs), (what, np.flatnonzero((got.regs != want.regs).any(axis=1)))
    assert np.array_equal(got.preds, want.preds), what
    assert np.array_equal(got.cc, want.cc), what


@pytest.fixture(scope="module")
def program():
    k = kernel(*LINES, "EXIT", nparams=len(CONSTS), regs=16)
    ctx = _context(k)
    instrs = k.instructions[:len(LINES)]
    rows = [alublock.row(ctx, instr, k.reg_cnt) for instr in instrs]
    return k, ctx, instrs, rows


def test_every_listed_instruction_has_a_row(program):
    _, _, instrs, rows = program
    missing = [i.full_opcode for i, r in zip(instrs, rows) if r is None]
    assert missing == []


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("full", [True, False])
def test_each_row_equals_its_closure(program, full):
    k, ctx, instrs, rows = program
    rng = np.random.default_rng(11 if full else 12)
    lanes = alublock.CHUNK + 96  # (two chunks, the second short)
    for instr, r in zip(instrs, rows):
        g = _group(rng, k, lanes, full)
        want, got = _copy(g), _copy(g)
        m = None if full else g.active
        with np.errstate(all="ignore"):
            compile_instruction(ctx, instr)(want, m)
        alublock.runner(*alublock.table([r]))(got, m)
        _same(got, want, LINES[instrs.index(instr)])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_random_runs_equal_their_closures_in_turn(program):
    """Runs of rows reading what the rows before them wrote (a row's result the next one's source,
    a predicate the next compare's), as the launch builds them."""
    k, ctx, instrs, rows = program
    rng = np.random.default_rng(13)
    closures = [compile_instruction(ctx, i) for i in instrs]
    for trial in range(40):
        pick = rng.choice(len(instrs), size=int(rng.integers(2, 12)))
        full = bool(trial % 2)
        lanes = int(rng.choice([32, 96, alublock.CHUNK * 2 + 64]))
        g = _group(rng, k, lanes, full)
        want, got = _copy(g), _copy(g)
        m = None if full else g.active
        with np.errstate(all="ignore"):
            for n in pick:
                closures[n](want, m)
        alublock.runner(*alublock.table([rows[n] for n in pick]))(got, m)
        _same(got, want, [LINES[n] for n in pick])
