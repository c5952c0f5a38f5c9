"""The steady part of a simulated open-loop benchmark run: how long to simulate, which window
to score, and whether the queue grows (:mod:`planner.benchmarks.serving_rows` scores a
published serving row on it; :mod:`planner.benchmarks.disagg_rows` too)."""

from __future__ import annotations

import math

import numpy as np

from planner.serving.result import SimResult

__all__ = [
    "MAX_ROW_REQUESTS",
    "OVER_CAPACITY_GROWTH",
    "STEADY_LIFETIMES",
    "STEADY_TAIL",
    "queue_growth",
    "steady_requests",
    "steady_throughput",
    "steady_window",
]

#: an MLPerf Server / Interactive row is simulated until its arrivals span this many mean
#: request lifetimes (arrival to last token) and STEADY_TAIL p99 ones, so the steady window
#: starts after the ramp-up of even the longest answers
STEADY_LIFETIMES = 5.0
STEADY_TAIL = 2.5
#: most requests one row simulates per replica (~0.4 KB each); a row that needs more (a
#: concurrency of 10^9, a stated count of 10^12) gets a reason, and the other rows of its
#: file are still predicted
MAX_ROW_REQUESTS = 200_000
#: an open-loop row whose simulated queue grows by more than this share of the arrivals
#: in its steady window is above the predicted capacity (:func:`queue_growth`): its
#: latencies are those of a queue that grows for as long as the run lasts
OVER_CAPACITY_GROWTH = 0.03


def steady_throughput(res: SimResult, t_lo: float, t_hi: float) -> tuple[float, float, float]:
    """(requests/s, output tok/s, total tok/s) completed between ``t_lo`` and ``t_hi`` [s].

    Counting completions inside a window of a long open-loop run measures what the
    replica delivers in steady state, without the ramp-up or the drain after the last
    arrival (which a first-arrival-to-last-completion span includes).
    """
    f = res.finish_s
    m = (f >= t_lo) & (f <= t_hi)
    span = max(t_hi - t_lo, 1e-12)
    o = float(res.output_tokens[m].sum())
    return float(m.sum()) / span, o / span, (o + float(res.input_tokens[m].sum())) / span


def _lifetimes(res: SimResult) -> tuple[float, float]:
    e = res.finish_s - res.arrival_s
    if not np.isfinite(e).any():
        return float("nan"), float("nan")
    return float(np.nanmean(e)), float(np.nanpercentile(e, 99))


def steady_requests(res: SimResult, n: int) -> int:
    """Requests an open-loop run of ``n`` needs so its arrivals span
    :data:`STEADY_LIFETIMES` mean and :data:`STEADY_TAIL` p99 request lifetimes (``n``
    when they already do; at most :data:`MAX_ROW_REQUESTS`)."""
    mean_e, p99_e = _lifetimes(res)
    span = float(res.arrival_s.max() - res.arrival_s.min())
    need = max(STEADY_LIFETIMES * mean_e, STEADY_TAIL * p99_e)
    if not math.isfinite(need) or span <= 0 or span >= need:
        return n
    return min(MAX_ROW_REQUESTS, math.ceil(n * need / span))


def steady_window(res: SimResult) -> tuple[float, float, np.ndarray | None]:
    """(start, end, scored requests) of an open-loop run's steady part [s]: from the later of
    the 20 % arrival and the first arrival + the p99 lifetime, to the last arrival; latencies
    of the requests arriving in it, the last 10 % of the span left out. The mask is None when
    the 20 % arrival already is the later one (the usual window of a short-answer run)."""
    a = np.sort(res.arrival_s)
    n = len(a)
    a0, a1 = float(a[0]), float(a[-1])
    lo = float(a[int(0.2 * (n - 1))])
    _, p99_e = _lifetimes(res)
    if not math.isfinite(p99_e) or a0 + p99_e <= lo:
        return lo, a1, None
    lo = min(a0 + p99_e, a0 + 0.5 * (a1 - a0))
    arr = res.arrival_s
    return lo, a1, (arr >= lo) & (arr <= a0 + 0.9 * (a1 - a0))


def queue_growth(res: SimResult, t_lo: float, t_hi: float) -> float:
    """Growth of the waiting queue between ``t_lo`` and ``t_hi`` [s], per request arriving
    in between: (arrivals - first tokens) in the window / arrivals in the window.

    A replica that holds the offered rate starts prompts as fast as they arrive (a few
    per cent either way: the queue at the window's two ends); one above its capacity
    falls behind by ``1 - capacity / rate`` of the arrivals (:data:`OVER_CAPACITY_GROWTH`).
    """
    a, f = res.arrival_s, res.first_token_s
    arrived = int(((a >= t_lo) & (a <= t_hi)).sum())
    started = int(((f >= t_lo) & (f <= t_hi)).sum())
    return (arrived - started) / max(arrived, 1)
