"""Functional execution of Maxwell SASS: warps of 32 lanes, memories, kernel launch."""

from .launch import LaunchResult, launch
from .memory import GlobalMemory, Texture1D

__all__ = ["launch", "LaunchResult", "GlobalMemory", "Texture1D"]
