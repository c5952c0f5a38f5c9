"""Compiled :func:`planner.serving.steady_state._slo_rate` (numba), for the recommender's
many SLO-rate bisections (each about 900 step times).

The functions are those of :mod:`planner.serving.steady_state` (the one formula), compiled
with their calls bound to compiled twins (the step time of :mod:`planner.serving._kernel`),
so the answers are bit-identical to the interpreter's (``tests/test_serving_kernel.py``
checks it). Cached like the event loop: numba keys the cache on the source file only, so a
stamp over the sources drops stale entries (:func:`planner.serving._kernel.refresh_cache`).
"""

from __future__ import annotations

import importlib
import types
from pathlib import Path

from planner.engine import _scalar
from planner.serving import _kernel

# the module (``planner.serving.steady_state`` the attribute is the function of that name)
_ss = importlib.import_module("planner.serving.steady_state")

#: source files compiled into the function: a change to any of them invalidates its cache
SOURCES = (Path(__file__), Path(_ss.__file__), Path(_scalar.__file__))

_compiled = None


def _bound(f, **names):
    """``f`` with the global ``names`` bound to other objects (its module is unchanged)."""
    return types.FunctionType(f.__code__, {**f.__globals__, **names}, f.__name__, f.__defaults__)


def slo_rate_kernel():
    """The compiled :func:`~planner.serving.steady_state._slo_rate` (numba imported and the
    cache loaded on first use)."""
    global _compiled
    if _compiled is None:
        _kernel.kernel()  # the compiled step time

        def build(jit):
            t_of = jit(_bound(_ss._t_of, _st=_kernel._st))
            fixed = jit(_bound(_ss._fixed_point, _t_of=t_of))
            return jit(_bound(_ss._slo_rate, _fixed_point=fixed, _latencies=jit(_ss._latencies)))

        _compiled, _ = _kernel.compile_cached(
            build, SOURCES, prefix="steady_state", stamp_name="steady_state.sources.sha256"
        )
    return _compiled
