"""The opcodes the functional model runs and the compiler of each.

An op module registers the compiler of its opcodes with a decorator::

    @compiles("IADD")
    def _iadd(ctx, instr, ops, mods, zrow):
        ...
        return run  # fn(g, m): execute on group g for the lanes of mask m (None: all)

and :func:`maxsim.functional.executor.compile_instruction` looks the opcode up here, so a new
opcode is one function in an op module. A compiler registered with ``values=True`` takes a
``values`` argument and decides itself what a timing-only run keeps (memory instructions check and
record their addresses); the others are ALU work, compiled (so their operands are checked) and
then left out of a timing-only run. This module imports nothing of the package: every op module
sits above it.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Handler:
    compile: object  # (ctx, instr, ops, mods, zrow[, values]) -> fn(g, m) or None
    values: bool  # whether compile takes the values argument


_TABLE: dict[str, Handler] = {}


def compiles(*opcodes, values=False):
    """Decorator registering a compiler for ``opcodes`` (base opcode names, no modifiers)."""
    def register(fn):
        for op in opcodes:
            if op in _TABLE and _TABLE[op].compile is not fn:
                raise ValueError(f"opcode {op} is registered twice ({_TABLE[op].compile.__module__}, {fn.__module__})")
            _TABLE[op] = Handler(fn, values)
        return fn
    return register


def handler(opcode):
    """The registered handler of ``opcode`` (None: the functional model does not run it)."""
    return _TABLE.get(opcode)


def registered():
    """The opcodes with a registered compiler, sorted."""
    return sorted(_TABLE)
