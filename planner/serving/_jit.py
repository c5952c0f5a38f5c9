"""numba, imported for the compiled kernels (:mod:`planner.serving._kernel`,
:mod:`planner.serving._unloaded`), their machine code loaded without the parts of numba's
CPU target that only compiling needs (:func:`light_cache_load`), and without the scipy
import that target makes (:func:`before_compile`)."""

from __future__ import annotations

import gc
import sys


def before_compile() -> None:
    """Import numba's CPU target's lowering registries without scipy; call before anything
    may compile.

    To compile (and, in numba's own cache load, before loading), numba's CPU target imports
    ``numba.np.arraymath``, which imports ``scipy.linalg`` (about 0.3 s, a fifth of a CLI
    run) only to set a flag (``_HAVE_BLAS``) that picks BLAS for the inner products of
    ``np.correlate`` / ``np.convolve``. The kernels here use no BLAS, so that module is
    imported once with ``scipy.linalg.cython_blas`` blocked: the flag is False (those two
    functions would use numba's plain loop), and every function that needs BLAS (``np.dot``,
    ``np.linalg``) still imports scipy when it is compiled (``numba.np.linalg.ensure_blas``).
    Nothing is blocked when scipy or that module is already loaded. A cache load through
    :func:`light_cache_load` needs it too: unpickling the cached data imports that module.
    """
    blas = "scipy.linalg.cython_blas"
    if "numba.np.arraymath" not in sys.modules and blas not in sys.modules:
        sys.modules[blas] = None  # type: ignore[assignment]  # import raises ImportError
        try:
            import numba.np.arraymath  # noqa: F401
        finally:
            if sys.modules.get(blas, 0) is None:
                del sys.modules[blas]


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


def light_cache_load(dispatcher):
    """Let ``dispatcher`` (a ``numba.njit`` function with ``cache=True``) load its machine
    code from numba's cache without setting up numba's whole CPU target first.

    Before it reads a cache entry, numba installs every typing and lowering registry of its
    CPU target (``BaseContext.refresh``: ~60 modules imported and thousands of templates
    registered, 0.16 s on the 2-core machine: a tenth of a CLI run), which only compiling
    needs. Loading machine code needs numba's runtime (NRT) only, so that is all this sets up
    before the load. A compile (a cache miss, or new argument types) still sets up the whole
    target first (numba's compiler does so itself), and any failure of the light load falls
    back to numba's own load. Where numba's cache has another layout, nothing changes.

    Returns
    -------
    the dispatcher
    """
    cache = getattr(dispatcher, "_cache", None)
    load = getattr(cache, "_load_overload", None)
    guard = getattr(cache, "_guard_against_spurious_io_errors", None)
    full = getattr(cache, "load_overload", None)
    try:
        from numba.core.runtime import rtsys
    except ImportError:  # pragma: no cover - another numba layout
        rtsys = None
    if load is None or guard is None or full is None or rtsys is None:
        before_compile()  # no cache (every process compiles), or another numba
        return dispatcher

    def load_overload(sig, target_context):
        # the cached data's unpickling imports numba.np.arraymath (through the types it
        # names): without scipy, as for a compile
        before_compile()
        try:
            rtsys.initialize(target_context)
            with guard():
                return load(sig, target_context)
        except Exception:  # noqa: BLE001 - numba's own load decides (and raises)
            return full(sig, target_context)

    cache.load_overload = load_overload
    return dispatcher
