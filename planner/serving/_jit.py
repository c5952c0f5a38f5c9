"""numba, imported for the compiled kernels (:mod:`planner.serving._kernel`,
:mod:`planner.serving._unloaded`) without the scipy import its CPU target makes."""

from __future__ import annotations

import gc
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


#: the compiled functions after whose first call :func:`freeze_long_lived` froze
_frozen: set[str] = set()


def freeze_long_lived(name: str) -> None:
    """Once per compiled function ``name`` and process, right after its first call (numba's
    import and cache load happen then): move every object the cyclic garbage collector tracks into its permanent generation
    (:func:`gc.freeze`), so that no later collection walks them again.

    numba leaves ~100,000 container objects (types, dispatchers, lowering registries) that live
    as long as the process; every collection pass of a search walked them, and so did the
    passes of the interpreter's exit (0.2-0.4 s of a CLI run on the 2-core machine). Frozen
    objects are still freed by reference counting; only those that later become part of a
    reference cycle are never reclaimed, and at this point nearly every tracked object is
    module state that lives to the end anyway."""
    if name not in _frozen:
        _frozen.add(name)
        gc.freeze()
