"""The functional executor's modules import downward only.

The modules of ``maxsim/functional`` are ranked, lowest first; a module may import (at any depth of
the file, inside functions too) only modules ranked below it. The op modules register their
compilers in the opcode table, so the executor imports them and none of them imports the executor.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "maxsim" / "functional"

# lowest first; one inner list is one layer (its modules import none of each other, save as the
# order of the whole list allows: a module may import only the modules listed before it)
LAYERS = [
    ["alu", "bounds", "access", "intpass", "memory", "simt", "trace", "watchdog", "slicing", "fp32"],
    ["ieee"],  # (uses alu)
    ["operands", "opcode_table"],
    ["fp64", "intops", "aluops", "atomics"],
    ["floatops", "memops"],  # (floatops converts through fp64; memops dispatches to atomics)
    ["alublock"],  # (the table rows of aluops' and floatops' instructions)
    ["executor"],
    ["launch"],
    ["__init__"],
]
ORDER = [m for layer in LAYERS for m in layer]


def _imported(path):
    """The modules of maxsim.functional that ``path`` imports, at any depth."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                if node.module:
                    out.add(node.module.split(".")[0])
                else:
                    out.update(a.name for a in node.names)
            elif node.level == 0 and (node.module or "").startswith("maxsim.functional"):
                rest = node.module.split(".")[2:]
                out.update([rest[0]] if rest else [a.name for a in node.names])
            elif node.level == 2 and node.module == "functional":
                out.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("maxsim.functional."):
                    out.add(a.name.split(".")[2])
    return out


def test_every_module_has_a_layer():
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert modules == set(ORDER), "place new modules of maxsim/functional in LAYERS"


@pytest.mark.parametrize("module", ORDER)
def test_imports_run_downward(module):
    below = set(ORDER[:ORDER.index(module)])
    upward = sorted(m for m in _imported(PACKAGE / f"{module}.py") if m not in below)
    assert upward == [], f"maxsim.functional.{module} imports {upward}, which are not below it"


def test_the_checker_sees_an_upward_import(tmp_path):
    # the op modules' old imports of the executor's helpers (inside a function too) are found
    src = tmp_path / "x.py"
    src.write_text("from .executor import U32\ndef f():\n    from . import launch\n    from .launch import geometry\n")
    assert _imported(src) == {"executor", "launch"}


def test_op_modules_register_their_opcodes():
    from maxsim.functional import executor  # noqa: F401 (importing it loads the op modules)
    from maxsim.functional.opcode_table import handler, registered
    names = registered()
    assert len(names) >= 60
    # one opcode of each op module
    for opcode, module in (("IADD", "aluops"), ("PRMT", "intops"), ("MUFU", "floatops"), ("DFMA", "fp64"),
                           ("LDG", "memops"), ("FFMA", "floatops")):
        assert handler(opcode).compile.__module__ == f"maxsim.functional.{module}"
    assert handler("BRA") is None  # control flow is the launch's


def test_a_new_opcode_needs_no_change_in_the_executor():
    import numpy as np

    from maxsim.functional import opcode_table
    from maxsim.functional.executor import compile_instruction
    from maxsim.functional.operands import reader_u32, writer
    from maxsim.isa import instruction as ins

    calls = []

    @opcode_table.compiles("TESTOP")
    def _testop(ctx, instr, ops, mods, zrow):
        a = reader_u32(ctx, instr, ops[1], zrow)
        write = writer(ops[0].reg, zrow)
        calls.append(instr.opcode)
        return lambda g, m: write(g, a(g) * np.uint32(3), m)

    try:
        class K:
            reg_cnt = 4

        class C:
            kernel = K()

        class G:
            regs = np.zeros((5, 2), dtype=np.uint32)
        G.regs[1] = [5, 7]
        instr = ins.Instruction(index=0, opcode="TESTOP", mods=(), control=ins.Control(),
                                operands=(ins.Operand(ins.REG, reg=0), ins.Operand(ins.REG, reg=1)))
        fn = compile_instruction(C(), instr)
        fn(G, None)
        assert calls == ["TESTOP"] and list(G.regs[0]) == [15, 21]
        assert compile_instruction(C(), instr, values=False) is None  # ALU work: nothing in a timing-only run
    finally:
        opcode_table._TABLE.pop("TESTOP")
