"""Kernels of our own in the maxas source language (one ``.sass`` file each).

Each file starts with a comment saying what the kernel computes, its parameters and its launch
shape; ``maxsim asm FILE`` assembles it and ``maxsim run FILE`` runs it.
"""

from __future__ import annotations

from pathlib import Path

DIRECTORY = Path(__file__).resolve().parent


def path(name: str) -> Path:
    """The source file of kernel ``name`` (``"transpose"`` or ``"transpose.sass"``)."""
    p = DIRECTORY / (name if name.endswith(".sass") else name + ".sass")
    if not p.is_file():
        names = ", ".join(sorted(x.stem for x in DIRECTORY.glob("*.sass")))
        raise FileNotFoundError(f"no kernel {name!r} in {DIRECTORY} (kernels: {names})")
    return p


def source(name: str) -> str:
    """The source text of kernel ``name``."""
    return path(name).read_text()
