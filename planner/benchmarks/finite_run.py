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

Not modelled: the decode step getting faster as the batch drains (shortens the drain), and
the burst of ``C`` prompts at the start (lengthens it).
"""

from __future__ import annotations

import heapq
from functools import lru_cache

import numpy as np

__all__ = ["APPLY", "PROMPTS_PER_CLIENT", "applies", "drain_factor"]

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


@lru_cache(maxsize=4096)
def _factor(conc: int, lo: int, hi: int, ttft_ms: float, tpot_us: float, mult: int) -> float:
    rng = np.random.default_rng(20261210)
    n = max(mult * conc, MIN_PROMPTS)
    lens = rng.integers(lo, hi + 1, n)
    dur = ttft_ms * 1e-3 + np.maximum(lens - 1, 0) * tpot_us * 1e-6
    slots = [0.0] * conc
    end = 0.0
    for d in dur:
        f = heapq.heappop(slots) + float(d)
        end = max(end, f)
        heapq.heappush(slots, f)
    run = float(lens.sum()) / end
    steady = conc * float(lens.mean()) / float(dur.mean())
    return run / steady


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
