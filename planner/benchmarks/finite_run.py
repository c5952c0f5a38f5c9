"""The finite run of an InferenceX multi-node (disaggregated) benchmark: its drain.

InferenceX runs its NVIDIA multi-node rows with srt-slurm's SA-Bench (``srtctl/benchmarks/
sa_bench.py``): ``num_prompts = concurrency x num_prompts_mult`` with ``num_prompts_mult``
10 by default (warm-up: a separate ``2 x concurrency`` prompts), request rate ``inf``, and
output lengths drawn uniformly from ``[osl x range_ratio, osl]``; its AMD disaggregated
``bench.sh`` sends ``max_concurrency x num_prompts_multiplier`` prompts (default 10, at
least 16). Its throughput is every
completed token over the run's wall time (``benchmark_serving.py``: ``dur_s`` from the
first request to the last completion), so the run's end counts: once the last prompt is
sent, fewer than ``C`` requests stay in flight until the longest one finishes.

The planner predicts a disaggregated row at its steady state (``disagg_sizing.
closed_loop``: Little's law over the steady part of an open-loop run), so the drain is not
in its throughput. :func:`drain_factor` is the ratio of a finite closed loop's throughput
to its steady one: ``C`` clients each take the next of ``10 C`` requests when their last
one ends, request ``j`` lasting ``TTFT + (L_j - 1) x TPOT`` at the predicted mean TTFT and
TPOT; the run's tokens over its makespan, divided by ``C x mean L / mean duration``.
Nothing here is fitted: the prompt count is SA-Bench's default, the lengths are the row's
stated rule, the durations the prediction's own.

Measured (docs/changes/2026-12-10/i30fast.md): on 302 InferenceX disaggregated runs that publish
output throughput and the median E2E, throughput x median E2E / (C x mean output) is
0.94-0.96 (median per GPU and framework), while the planner's is 0.997; a constant-step
finite run of ``10 C`` requests with U[0.8, 1.0] x 1024 outputs gives 0.97 (C = 8) to
0.945 (C = 4096).

The same finite run serves the fit's aggregated closed-loop rows
(:func:`closed_loop_factor`, :data:`CLOSED_LOOP_FIT`): each source states its client's
prompt count in the row (``"N requests"``), e.g. InferenceX single-node ``benchmarks/*.sh``
(SemiAnalysisAI/InferenceX, ``dsr1_fp8_mi325x.sh``): ``--num-prompts $(( $CONC * 10 ))``;
the SGLang cookbook's printed ``--num-prompts``; dstack's "500 requests completed of 500";
the TensorRT-LLM guide's ``num_requests``. Rows that state none keep the steady state.

Not modelled: the decode step getting faster as the batch drains (shortens the drain), and
the burst of ``C`` prompts at the start (lengthens it).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np

__all__ = [
    "APPLY",
    "CLOSED_LOOP_FIT",
    "PROMPTS_PER_CLIENT",
    "applies",
    "closed_loop_factor",
    "drain_factor",
    "run_over_steady",
]

#: whether InferenceX multi-node throughput rows are scored over the finite run (on: held
#: out, issue 30 throughput 16.5 -> 16.1 %, docs/changes/2026-12-10/i30fast.md)
APPLY = True
#: SA-Bench's ``num_prompts_mult`` default (srt-slurm ``sa_bench.py``): prompts per client
PROMPTS_PER_CLIENT = 10
#: the fewest prompts of a run (InferenceX's AMD disaggregated ``bench.sh``)
MIN_PROMPTS = 16
_TAG = "InferenceX multi-node"


def applies(notes: str) -> bool:
    """Whether a row is an InferenceX multi-node (SA-Bench) run and :data:`APPLY` is on."""
    return APPLY and _TAG in (notes or "")


def run_over_steady(clients: int, out_tokens: np.ndarray, duration: np.ndarray) -> float:
    """Finite-run over steady-state throughput [-] of ``clients`` closed-loop clients that
    take requests in order, each the next one the moment its last one ends.

    Parameters
    ----------
    clients : int
        Clients ``C`` [-], all starting at time 0.
    out_tokens : numpy.ndarray
        Output length of each request, in the order they are sent [tokens].
    duration : numpy.ndarray
        Each request's time from sent to last token [any time unit; the ratio is unitless].

    Returns
    -------
    float
        ``(sum L / makespan) / (C x mean L / mean duration)`` [-]. E.g. ``N = m C`` requests
        of one length and one duration ``d``: ``m`` rounds that end together, makespan
        ``m d``, so 1; ``N = C + 1`` of them: two rounds, ``(C + 1) / (2 C)``.
    """
    slots = [0.0] * max(int(clients), 1)
    end = 0.0
    for d in duration:
        f = heapq.heappop(slots) + float(d)
        end = max(end, f)
        heapq.heappush(slots, f)
    run = float(np.sum(out_tokens)) / end
    steady = len(slots) * float(np.mean(out_tokens)) / float(np.mean(duration))
    return run / steady


@lru_cache(maxsize=4096)
def _factor(conc: int, lo: int, hi: int, ttft_ms: float, tpot_us: float, mult: int) -> float:
    rng = np.random.default_rng(20261210)
    n = max(mult * conc, MIN_PROMPTS)
    lens = rng.integers(lo, hi + 1, n)
    dur = ttft_ms * 1e-3 + np.maximum(lens - 1, 0) * tpot_us * 1e-6
    return run_over_steady(conc, lens, dur)


def drain_factor(
    concurrency: float,
    out_bounds: tuple[int, int],
    ttft_mean_s: float,
    tpot_mean_s: float,
    *,
    prompts_per_client: int = PROMPTS_PER_CLIENT,
) -> float:
    """Finite-run over steady-state throughput of a closed loop [-], at most 1.

    Parameters
    ----------
    concurrency : float
        Clients ``C`` [-].
    out_bounds : tuple of int
        Inclusive bounds of the uniform output length [tokens].
    ttft_mean_s : float
        Mean time to first token [s].
    tpot_mean_s : float
        Mean time per output token after the first [s].
    prompts_per_client : int
        Requests per client in the run [-].

    Returns
    -------
    float
        Ratio of the run's tokens over its makespan to ``C x mean L / mean duration`` [-].
    """
    c = max(int(round(concurrency)), 1)
    lo, hi = int(out_bounds[0]), int(out_bounds[1])
    # rounded so that nearby predictions share one cached simulation
    return _factor(
        c, lo, hi, round(ttft_mean_s * 1e3, 1), round(tpot_mean_s * 1e6, 0), prompts_per_client
    )


#: whether the fit scales a closed-loop serving row's steady-state throughput
#: (:func:`planner.benchmarks.step_rows.closed_loop_predictor`) by its finite run, where the
#: row states its prompt count (``"N requests"``: the client's ``--num-prompts``), so that
#: the fit reads the run as validation simulates it (ramp-up from C clients at once, the
#: drain after the last prompt, the drawn lengths)
CLOSED_LOOP_FIT = False
#: spacing of the TTFT / TPOT ratio grid the fit's factor is interpolated on [-, in log]:
#: the factor is piecewise linear in the ratio between simulated points, so the fit's finite
#: differences (``diff_step`` 1e-3) see a continuous function, each point simulated once
RATIO_STEP_LOG = 0.02


def closed_loop_factor(clients: int, out_tokens: np.ndarray) -> Callable[[float, float], float]:
    """Finite-run factor of one closed-loop row as a function of its predicted TTFT and TPOT.

    Request ``j`` lasts ``TTFT + (L_j - 1) TPOT`` (:func:`run_over_steady`): in TPOT units
    ``r + L_j - 1`` with ``r = TTFT / TPOT``, so the factor depends on ``r`` alone. It is
    simulated at ``r`` on a geometric grid (:data:`RATIO_STEP_LOG`) and interpolated
    linearly in ``log r`` in between.

    Parameters
    ----------
    clients : int
        Clients of one replica ``C`` [-].
    out_tokens : numpy.ndarray
        Output lengths of the replica's requests, in the order the client sends them
        [tokens] (the lengths validation simulates).

    Returns
    -------
    callable
        ``f(ttft_s, tpot_s) -> factor`` [-], the arguments in seconds.
    """
    lens = np.asarray(out_tokens, dtype=np.float64)
    tail = np.maximum(lens - 1.0, 0.0)
    memo: dict[int, float] = {}

    def at(i: int) -> float:
        if i not in memo:
            memo[i] = run_over_steady(clients, lens, math.exp(i * RATIO_STEP_LOG) + tail)
        return memo[i]

    def factor(ttft_s: float, tpot_s: float) -> float:
        if not (ttft_s > 0.0 and tpot_s > 0.0):
            return 1.0
        x = math.log(ttft_s / tpot_s) / RATIO_STEP_LOG
        i = math.floor(x)
        w = x - i
        return (1.0 - w) * at(i) + w * at(i + 1)

    return factor
