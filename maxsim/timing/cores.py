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
    name = core if core is not None else (os.environ.get("MAXSIM_CORE") or "compiled")
    if name not in CORES:
        raise SimulationError(f"unknown {what} {name!r} (MAXSIM_CORE or core=): choose one of {', '.join(CORES)}")
    return name
