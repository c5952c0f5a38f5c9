"""numba, imported for the compiled kernels (:mod:`planner.serving._kernel`,
:mod:`planner.serving._unloaded`) without the scipy import its CPU target makes."""

from __future__ import annotations

import sys


def import_numba():
    """Import numba, and its CPU target's lowering registries without scipy.

    On its first compile or cache load, numba's CPU target imports ``numba.np.arraymath``,
    which imports ``scipy.linalg`` (about 0.3 s, a fifth of a CLI run) only to set a flag
    (``_HAVE_BLAS``) that picks BLAS for the inner products of ``np.correlate`` /
    ``np.convolve``. The kernels here use no BLAS, so that module is imported once with
    ``scipy.linalg.cython_blas`` blocked: the flag is False (those two functions would use
    numba's plain loop), and every function that needs BLAS (``np.dot``, ``np.linalg``)
    still imports scipy when it is compiled (``numba.np.linalg.ensure_blas``). Nothing is
    blocked when scipy or that module is already loaded.

    Returns
    -------
    module
        ``numba``
    """
    import numba

    blas = "scipy.linalg.cython_blas"
    if "numba.np.arraymath" not in sys.modules and blas not in sys.modules:
        sys.modules[blas] = None  # type: ignore[assignment]  # import raises ImportError
        try:
            import numba.np.arraymath  # noqa: F401
        finally:
            if sys.modules.get(blas, 0) is None:
                del sys.modules[blas]
    return numba
