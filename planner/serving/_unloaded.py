"""Compiled loop of :func:`planner.serving.probe.unloaded_latency` (numba): each request
served alone, its prompt in chunks, then its first and last decode steps.

It calls the compiled step time of :mod:`planner.serving._kernel` (the one formula,
:func:`planner.engine._scalar.step_time_scalar`), so its times are bit-identical to the
interpreter's (``tests/test_serving_kernel.py`` checks it). Cached like the event loop:
numba keys the cache on this file only, so a stamp over this file and the step-time
formula's drops stale entries (:func:`planner.serving._kernel.refresh_cache`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from planner.engine import _scalar
from planner.serving import _kernel

#: source files compiled into the loop: a change to any of them invalidates its cache
SOURCES = (Path(__file__), Path(_scalar.__file__))

_st = _scalar.step_time_scalar  # replaced by the compiled versions in unloaded_kernel()
_wp = _scalar.window_pairs
_compiled = None


def _unloaded(coef, inp, out, cch, budget, window, sched, overlap):
    """TTFT and TPOT [s] of each request served alone (batch 1, no queueing); the same steps
    in the same order of operations as the model in ``unloaded_latency``. Each step adds the
    host time ``sched`` [s], or with ``overlap`` (the engine overlaps them) takes the longer
    of the two."""
    n = len(inp)
    ttft = np.empty(n)
    tpot = np.full(n, np.nan)
    for k in range(n):
        p = inp[k]
        oq = out[k]
        pos = cch[k]
        t = 0.0
        while pos < p:
            m = min(p - pos, budget)
            end = pos + m
            kvs = min(end, window) if window else 0
            prs = _wp(pos, m, window) if window else 0.0
            g = _st(
                coef, float(m), 1.0, 1.0 if end == p else 0.0, float(end),
                m * pos + m * (m + 1) / 2, float(kvs), float(prs), float(m * pos),
            )  # fmt: skip
            t += max(g, sched) if overlap else g + sched
            pos = end
        ttft[k] = t
        if oq > 1:
            a = p + 1
            b = p + oq - 1
            t0 = _st(coef, 1.0, 1.0, 1.0, float(a), float(a), float(min(a, window)),
                     float(min(a, window)), 0.0)  # fmt: skip
            t1 = _st(coef, 1.0, 1.0, 1.0, float(b), float(b), float(min(b, window)),
                     float(min(b, window)), 0.0)  # fmt: skip
            t0 = max(t0, sched) if overlap else t0 + sched
            t1 = max(t1, sched) if overlap else t1 + sched
            tpot[k] = (t0 + t1) / 2
    return ttft, tpot


def unloaded_kernel():
    """The compiled :func:`_unloaded` (numba imported and the cache loaded on first use)."""
    global _st, _wp, _compiled
    if _compiled is None:
        _kernel.kernel()  # the compiled step time
        _st = _kernel._st
        (_wp, _compiled), _ = _kernel.compile_cached(
            lambda jit: (jit(_scalar.window_pairs), jit(_unloaded)),
            SOURCES, prefix="_unloaded", stamp_name="_unloaded.sources.sha256",
        )  # fmt: skip
    return _compiled
