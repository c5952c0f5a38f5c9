"""InferenceX's reading of a throughput-interactivity front at a target interactivity
(issue 29, "Done when" item 2: the DeepSeek-R1 8-GPU front).

InferenceX's own "throughput at an interactivity level" (its app's throughput calculator,
SemiAnalysisAI/InferenceX-app ``packages/app/src/components/calculator/useThroughputData.ts``
@ 77ca49a, ``interpolateForGPU``) is read this way, for one sequence length (ISL/OSL), one
precision and one hardware key (GPU + engine, ``getHardwareKey``; MTP and disaggregated runs
have keys of their own):

1. the points' upper-left Pareto front over (interactivity, throughput per GPU)
   (``paretoFrontUpperLeft``: sorted by interactivity ascending, a point removes every
   earlier point whose throughput is not above its own; equal interactivity keeps the higher
   throughput);
2. a monotone cubic Hermite spline through the front (Steffen 1990, ``monotoneSlopes`` /
   ``hermiteInterpolate``, the same curve as the charts' ``d3.curveMonotoneX``) evaluated at
   the target;
3. no extrapolation: a target outside the front's interactivity range has no value.

Interactivity is InferenceX's ``median_intvty`` = 1000 / median TPOT [ms]
(SemiAnalysisAI/InferenceX ``utils/process_result.py``), TPOT excluding the first token:
the planner's ``1000 / tpot_ms_median``.

One difference, stated where it is used: below the front's interactivity range the
calculator answers nothing; :func:`value_at` answers the front's end point (its highest
throughput), since that point reaches the level ("best result at >= level"). Above the range
it answers None, as the calculator does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def pareto_upper_left(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The upper-left Pareto front of (interactivity, throughput) points, sorted by
    interactivity ascending (InferenceX-app ``paretoFrontUpperLeft``).

    Parameters
    ----------
    points
        (x, y) pairs: x = interactivity [tok/s/user], y = throughput per GPU [tok/s]. Pairs
        with a non-finite member are dropped.

    Returns
    -------
    list of (x, y)
        Along the front x rises and y falls strictly.
    """
    pts = [(float(x), float(y)) for x, y in points if math.isfinite(x) and math.isfinite(y)]
    pts.sort(key=lambda p: (p[0], -p[1]))
    front: list[tuple[float, float]] = []
    for x, y in pts:
        if front and front[-1][0] == x:
            if y > front[-1][1]:
                front[-1] = (x, y)
            continue
        while front and y >= front[-1][1]:
            front.pop()
        front.append((x, y))
    return front


def _sign(v: float) -> float:
    return -1.0 if v < 0 else 1.0


def monotone_slopes(xs: Sequence[float], ys: Sequence[float]) -> list[float]:
    """Tangents of the monotone cubic Hermite spline through (xs, ys) (Steffen's method as
    d3.curveMonotoneX computes it; InferenceX-app ``monotoneSlopes``). ``xs`` ascending."""
    n = len(xs)
    if n < 2:
        return [0.0] * n
    h = [xs[i + 1] - xs[i] for i in range(n - 1)]
    s = [0.0 if h[i] == 0 else (ys[i + 1] - ys[i]) / h[i] for i in range(n - 1)]
    m = [0.0] * n
    for i in range(1, n - 1):
        s0, s1, h0, h1 = s[i - 1], s[i], h[i - 1], h[i]
        p = (s0 * h1 + s1 * h0) / (h0 + h1)
        m[i] = (_sign(s0) + _sign(s1)) * min(abs(s0), abs(s1), 0.5 * abs(p)) or 0.0
    m[0] = (3 * s[0] - m[1]) / 2 if h[0] else m[1]
    m[n - 1] = (3 * s[n - 2] - m[n - 2]) / 2 if h[n - 2] else m[n - 2]
    return m


def hermite(xs: Sequence[float], ys: Sequence[float], m: Sequence[float], x: float) -> float:
    """The cubic Hermite spline with knots (xs, ys) and tangents ``m`` at ``x`` (clamped to
    the knots' range; InferenceX-app ``hermiteInterpolate``)."""
    n = len(xs)
    if n == 1 or x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    lo, hi = 0, n - 1
    while lo < hi - 1:
        mid = (lo + hi) // 2
        if xs[mid] <= x:
            lo = mid
        else:
            hi = mid
    w = xs[hi] - xs[lo]
    if w == 0:
        return ys[lo]
    t = (x - xs[lo]) / w
    t2, t3 = t * t, t * t * t
    return (
        (2 * t3 - 3 * t2 + 1) * ys[lo]
        + (t3 - 2 * t2 + t) * w * m[lo]
        + (-2 * t3 + 3 * t2) * ys[hi]
        + (t3 - t2) * w * m[hi]
    )


def value_at(points: Sequence[tuple[float, float]], level: float) -> float | None:
    """Throughput per GPU [tok/s] of the front of ``points`` at interactivity ``level``
    [tok/s/user], read as InferenceX's calculator reads it (module docstring): Pareto front,
    monotone cubic through it, None above the front's interactivity range; below it, the
    front's highest throughput (the calculator answers nothing there)."""
    front = pareto_upper_left(points)
    if not front:
        return None
    xs = [p[0] for p in front]
    ys = [p[1] for p in front]
    if level > xs[-1]:
        return None
    if level <= xs[0]:
        return ys[0]
    return max(0.0, hermite(xs, ys, monotone_slopes(xs, ys), level))
