"""Which implementation of the timing model runs: the compiled one or the plain-Python reference.

The SM (:class:`~maxsim.timing.sm.SM` / :class:`~maxsim.timing.reference.ReferenceSM`) and the
memory system (:class:`~maxsim.timing.memory_core.CompiledMemorySystem` /
:class:`~maxsim.timing.memory_system.MemorySystem`) each exist twice with identical numbers: the
plain-Python one states the model (change it there first), the compiled one runs it fast.
``core="python"`` or the environment variable ``MAXSIM_CORE=python`` selects the reference;
``"compiled"`` is the default.
"""

from __future__ import annotations

import os

from ..errors import SimulationError

CORES = ("compiled", "python")


def core_name(core=None, what="SM core"):
    """The implementation to run: ``core`` if given, else ``$MAXSIM_CORE``, else "compiled"."""
    return choose(core, "MAXSIM_CORE", "core", CORES, what)


def choose(value, variable, keyword, choices, what):
    """``value`` if given, else the environment variable ``variable``, else the first of
    ``choices``; anything else is an error naming where it came from."""
    name = value if value is not None else (os.environ.get(variable) or choices[0])
    if name not in choices:
        raise SimulationError(f"unknown {what} {name!r} ({variable} or {keyword}=): choose one of {', '.join(choices)}")
    return name
