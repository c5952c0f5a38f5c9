"""Verdicts known before a run ends, or without numpy's percentile: the early-stop rule of the
capacity probe's runs (:func:`stop_rule`, counted by the compiled event loop) and a
percentile-versus-threshold decision from counts (:func:`percentile_over`). Both give exactly
the verdict of :meth:`planner.workload.SLO.evaluate` on the whole data."""

from __future__ import annotations

import math

import numpy as np

from planner.workload.slo import SLO

#: relative margin above a threshold before a value counts towards a certain percentile miss
#: (numpy's linear interpolation may land a few ulps below the lower of its two points)
_PCT_MARGIN = 1e-6


def stop_rule(
    slo: SLO, output_tokens: np.ndarray, i0: int, i1: int, until_decided: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The event loop's early-stop rule for a verdict on the requests ``i0 <= r < i1``.

    With ``until_decided`` the run stops as soon as the verdict of
    :meth:`planner.workload.SLO.evaluate` is certainly a miss (a run that meets the SLO
    goes to its end, so it can be reported); otherwise (the percentiles of a run known to
    miss) once every scored request has finished (later events cannot change their
    latencies). A miss is certain:

    * attainment: ``ok`` needs ``(n - bad) / n >= attainment - 1e-12`` over the ``n`` scored
      requests, so the run stops at the smallest count of bad requests (a threshold exceeded)
      that breaks it -- the same float comparison, exact;
    * a percentile ``p`` of a metric over its ``m`` values (TPOT: answers longer than one
      token): numpy's linear interpolation is at least the ``j``-th smallest value,
      ``j = floor(p / 100 (m - 1))``, so ``m - j + 1`` values above the threshold (one more
      than needed, and each above it by :data:`_PCT_MARGIN`) make the percentile a miss.

    ``output_tokens``: the run's answer lengths. Returns ``(stop_f, stop_i)`` (see
    ``planner.serving._kernel._loop``).
    """
    n = int(i1 - i0)
    never = n + 2  # a count that cannot be reached
    stop_f = np.full(6, np.inf)
    stop_i = np.array([i0, i1, never, never, never, never, 0 if until_decided else 1], np.int64)
    if not until_decided or n <= 0:
        return stop_f, stop_i
    tg = slo.targets()
    for j, name in enumerate(("ttft", "tpot", "e2e")):
        t = tg.get(name)
        if t is None:
            continue
        stop_f[j] = t.max_s
        stop_f[3 + j] = t.max_s * (1 + _PCT_MARGIN)
        m = int(np.count_nonzero(output_tokens[i0:i1] > 1)) if name == "tpot" else n
        if m > 0:
            stop_i[3 + j] = m - math.floor(t.percentile / 100.0 * (m - 1)) + 1
    if slo.attainment is not None and tg:
        v = max(0, int(n * (1.0 - slo.attainment)) - 2)
        while v <= n and (n - v) / n >= slo.attainment - 1e-12:
            v += 1
        stop_i[2] = v
    return stop_f, stop_i


def engine_stop(
    stop: tuple[np.ndarray, np.ndarray], first_token_s: float
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`stop_rule`'s ``(stop_f, stop_i)`` for the event loop of an engine whose front end
    adds ``first_token_s`` [s] to every TTFT and E2E outside the loop
    (:attr:`planner.serving.replica.EngineConfig.first_token_s`): the loop sees the engine's
    times, so its TTFT and E2E thresholds (``stop_f[0, 2, 3, 5]``) are lowered by the
    offset -- a request is bad for the client (``ttft + first_token_s > t``) exactly when
    the engine's ``ttft > t - first_token_s``. TPOT's (``stop_f[1, 4]``) do not change."""
    if not first_token_s:
        return stop
    f = np.array(stop[0], np.float64, copy=True)
    f[[0, 2, 3, 5]] -= first_token_s
    return f, stop[1]


def percentile_over(x: np.ndarray, percentile: float, threshold: float) -> bool:
    """Whether ``np.percentile(x, percentile) > threshold`` (``x`` free of NaN, not empty),
    from counts where they decide it.

    numpy's linear interpolation lies between the order statistics at ``floor(q (m - 1))``
    and the next one (``q = percentile / 100``, ``m`` values), so it is above the threshold
    when the order statistic one below that index already is, and not above it when the
    one two above it is not (a margin of one index for the float index and 1e-9 of the
    threshold for the interpolation's rounding); otherwise numpy decides."""
    m = len(x)
    j = math.floor(percentile / 100.0 * (m - 1))
    if j >= 1 and np.count_nonzero(x > threshold * (1 + 1e-9)) >= m - j + 1:
        return True  # the (j - 1)-th smallest is above: so is the percentile
    if j + 2 <= m - 1 and np.count_nonzero(x > threshold * (1 - 1e-9)) <= m - j - 3:
        return False  # the (j + 2)-th smallest is not above: nor is the percentile
    return float(np.percentile(x, percentile)) > threshold
