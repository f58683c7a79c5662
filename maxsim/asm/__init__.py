"""The maxas source language: named registers and constants, constant expressions, schedule blocks.

:func:`assemble_text` / :func:`assemble_file` turn a kernel written in the source language into a
decoded kernel and maxas's final text form; :func:`load_kernel` reads a file in either form.
"""

from .assemble import Assembly, assemble_file, assemble_text, load_kernel
from .source import is_source

__all__ = ["Assembly", "assemble_file", "assemble_text", "load_kernel", "is_source"]
