"""maxsim: a cycle-approximate simulator of the NVIDIA Maxwell streaming multiprocessor."""

__version__ = "0.1.0"
