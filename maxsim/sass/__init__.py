"""Front end: the maxas SASS text format."""

from .parser import parse_file, parse_text
from .printer import format_instruction, format_kernel

__all__ = ["parse_file", "parse_text", "format_kernel", "format_instruction"]
