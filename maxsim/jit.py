"""numba, as the compiled parts of maxsim use it (fp32 arithmetic, the SM core).

The first call of a compiled function (compiled now or loaded from numba's disk cache) makes numba
import its implementations of NumPy, and one of them (``numba.np.arraymath``) imports
``scipy.linalg`` when SciPy is installed, only to learn whether ``np.dot`` may call BLAS. Those
imports (scipy.linalg pulls in numpy.f2py, unittest, ...) cost about half a second of CPU in every
maxsim process, a sixth of a whole ``maxsim run sgemm_64``, and no compiled function of maxsim
uses BLAS. This module imports numba and that implementation once with ``scipy.linalg`` hidden,
so numba records that BLAS is absent (its ``np.dot`` / ``np.convolve`` of 1-D arrays then use
their plain-loop versions in this process; a compiled ``np.dot`` of matrices still imports SciPy
when it is compiled). Nothing changes when ``scipy.linalg`` is already imported.
"""

from __future__ import annotations

import sys


class _HideScipyLinalg:
    """A meta path finder that makes ``import scipy.linalg...`` fail (ImportError)."""

    def find_spec(self, name, path=None, target=None):
        if name == "scipy.linalg" or name.startswith("scipy.linalg."):
            raise ImportError(f"{name} is not imported by maxsim's compiled code")
        return None


def _import_numba():
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    finder = _HideScipyLinalg()
    sys.meta_path.insert(0, finder)
    try:
        import numba.np.arraymath  # noqa: F401  (records "no BLAS" instead of importing scipy.linalg)
    finally:
        sys.meta_path.remove(finder)


_import_numba()

from numba import njit, types  # noqa: E402
from numba.core import cgutils  # noqa: E402
from numba.extending import intrinsic  # noqa: E402
from numba.typed import Dict  # noqa: E402

__all__ = ["njit", "types", "cgutils", "intrinsic", "Dict"]
