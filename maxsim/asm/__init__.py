"""The maxas source language: named registers and constants, constant expressions, schedule blocks.

:func:`assemble_text` / :func:`assemble_file` turn a kernel written in the source language into a
decoded kernel and maxas's final text form; :func:`load_kernel` reads a file in either form.

The assembler is imported when one of these names is first used: a run of a generated kernel needs
only :mod:`maxsim.asm.controls` (the control fields), not the source language.
"""

__all__ = ["Assembly", "assemble_file", "assemble_text", "load_kernel", "is_source"]


def __getattr__(name):
    if name == "is_source":
        from .source import is_source
        return is_source
    if name in __all__:
        from . import assemble
        return getattr(assemble, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
