"""Control codes of the generated SGEMM kernels: the general control-code filler of the assembler.

The generator writes each instruction as a :class:`~maxsim.asm.controls.Spec` and lets
:func:`~maxsim.asm.controls.assign_controls` choose the open fields and check the fixed ones; both
live in :mod:`maxsim.asm.controls`, which also serves the maxas source-language front end
(``maxsim asm``). The names are re-exported here for the generator and its tests.
"""

from maxsim.asm.controls import ControlError, Spec, assign_controls, issue_cycles, loop_bounds

__all__ = ["ControlError", "Spec", "assign_controls", "issue_cycles", "loop_bounds"]
