"""maxsim's version, in a module of its own so that low layers (the compiled code's cache key) read it
without importing the package's API."""

__version__ = "0.1.0"
