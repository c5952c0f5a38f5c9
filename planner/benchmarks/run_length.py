"""How long an MLPerf Server / Interactive run lasts, and how loadgen scores it.

A loadgen Server run issues ``generated_query_count`` Poisson queries at ``target_qps``
(at least ``min_query_count`` and ``min_duration``; the run's ``mlperf_log_detail.txt``) and
scores every one of them: the latency, TTFT and TPOT statistics are over all samples, and
"Completed samples / tokens per second" divide by ``final_query_all_samples_done_time``, the
time the last *issued* query completed, from the run's start (mlcommons/inference
``loadgen/results.cc``). A row whose notes state the run's query count
(``loadgen generated_query_count N``) is simulated for that many arrivals and scored that
way (``serving_rows``, while :data:`APPLY_STATED_RUN` is on); otherwise the planner's
own steady run is used.

Why it matters (docs/changes/2026-12-07e/mlprun.md): MLPerf v6.0 DeepSeek-R1 Server runs last 30,716 to
105,312 queries (46 min to 3 h of arrivals), answers up to 20,000 tokens long take up to
22 min each, and at some rates the decode step curve has two stable operating points; a
run of ~12,000 arrivals (the planner's steady run) ends while the replica is still filling.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from planner.serving.result import SimResult

#: whether a row's stated run length is simulated (off, 2026-12-07: held out, the long runs
#: move the bistable MLPerf v6.0 DeepSeek-R1 B200 rows to their measured upper operating
#: point, but the model's step at 400-600 sequences a rank is 1.1-1.2x too slow, so the
#: high-rate rows fall behind their offered rate over 2-hour runs and their TTFT grows
#: 100-1,000x; v6.0 TTFT MdAPE 10.2% -> 33.4%, and through the fitted prefill scale
#: InferenceX's TTFT 10.2% -> 27.3%; docs/changes/2026-12-07e/mlprun.md, ``scripts/mlperf_run_length.py``)
APPLY_STATED_RUN = False
_STATED = re.compile(r"loadgen generated_query_count (\d[\d,]*)")


def stated_queries(notes: str) -> int | None:
    """Queries the row's run issued, from its notes (``loadgen generated_query_count N``),
    None when the notes do not say."""
    m = _STATED.search(notes or "")
    return int(m.group(1).replace(",", "")) if m else None


def stated_run(notes: str) -> int | None:
    """Queries to simulate for the row's run: :func:`stated_queries` while
    :data:`APPLY_STATED_RUN` is on, else None (the planner's steady run)."""
    return stated_queries(notes) if APPLY_STATED_RUN else None


def loadgen_summary(res: SimResult) -> tuple[dict[str, Any], float, float]:
    """(summary, start [s], end [s]) of a simulated run scored as loadgen scores a Server run.

    Every request is scored; throughput divides every request's tokens by the time from the
    first arrival to the completion of the last-arriving request (loadgen's
    ``final_query_all_samples_done_time``), so answers still running after it count, as
    loadgen counts their tokens.
    """
    a = res.arrival_s
    t0 = float(a.min())
    t1 = float(res.finish_s[int(np.argmax(a))])
    s = res.summary(mask=np.ones(len(a), bool))
    span = max(t1 - t0, 1e-12)
    out, inp = float(res.output_tokens.sum()), float(res.input_tokens.sum())
    s["throughput_rps"] = (len(a) - 1) / span  # results.cc: (sample_count - 1) / done time
    s["output_tok_s"] = out / span
    s["total_tok_s"] = (out + inp) / span
    return s, t0, t1


def steady_token_rate(res: SimResult, t_lo: float, t_hi: float) -> float:
    """Output tokens generated between ``t_lo`` and ``t_hi`` per second [tok/s].

    Each request's tokens after the first are spread evenly over its decode span
    (first token to finish); the window takes the part of every span inside it. Unlike
    counting completions, this is unbiased while answers of minutes (long reasoning
    traces) are still in flight at the window's edges.
    """
    first, fin = res.first_token_s, res.finish_s
    n_dec = np.maximum(res.output_tokens - 1, 0).astype(float)
    dur = np.maximum(fin - first, 1e-12)
    overlap = np.clip(np.minimum(fin, t_hi) - np.maximum(first, t_lo), 0.0, None)
    firsts = ((first >= t_lo) & (first <= t_hi)).sum()
    return float((n_dec * overlap / dur).sum() + firsts) / max(t_hi - t_lo, 1e-12)
