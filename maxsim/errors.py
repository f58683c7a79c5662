"""Errors that maxsim reports to its users.

Every problem with user input (a SASS file, a kernel launch, a config) raises a subclass of
:class:`MaxsimError` whose message is one line saying what went wrong and where. The CLI prints
that line and exits with status 2; it never shows a Python traceback for these.
"""


class MaxsimError(Exception):
    """Base class of every error maxsim reports to a user."""


class SassParseError(MaxsimError):
    """A SASS text that does not follow the maxas format: names file, line and column."""

    def __init__(self, message, filename="<string>", line=0, column=0):
        self.filename = filename
        self.line = line
        self.column = column
        self.reason = message
        super().__init__(f"{filename}:{line}:{column}: {message}")


class SimulationError(MaxsimError):
    """A kernel that does something the hardware model cannot execute correctly."""


class LaunchError(MaxsimError):
    """A launch whose arguments do not fit the kernel (grid, block, parameters, textures)."""


class ConfigError(MaxsimError):
    """An architecture config that is missing a key or has a bad value."""


class HazardError(SimulationError):
    """A control-code hazard found in --strict mode."""


class EncodingError(MaxsimError):
    """An instruction with no Maxwell encoding, or an instruction word the encoding table does not
    know: names the instruction (file:line) or the word's byte offset in the code."""


class SourceWarning(UserWarning):
    """Text maxsim reads as maxas does but that is probably a slip (e.g. a character after an
    instruction's ';', which maxas takes as a comment): names file, line and column."""
