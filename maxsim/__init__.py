"""maxsim: a cycle-approximate simulator of the NVIDIA Maxwell streaming multiprocessor.

The launch API (:mod:`maxsim.host`) is available here: ``maxsim.Kernel.load(path_or_text)``,
``maxsim.launch(kernel, grid=, block=, params=, buffers=, textures=, constants=, config=)``,
``maxsim.Buffer``, ``maxsim.Texture``; it is imported on first use (``import maxsim`` stays light).
"""

from ._version import __version__  # noqa: F401

_API = ("Kernel", "Buffer", "Texture", "launch", "LaunchReport", "Prediction", "Sampling")


def __getattr__(name):
    if name in _API:
        from . import host
        return getattr(host, name)
    raise AttributeError(f"module 'maxsim' has no attribute {name!r}")
