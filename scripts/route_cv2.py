"""The expert-popularity skew (``moe_route_cv2``) that reproduces a published per-rank skew.

``data/moe_routing_skew.yaml`` records the busiest EP rank's routed tokens over the mean,
minus one, averaged over the MoE layers (TensorRT-LLM tech blog 4: DeepSeek-R1, EP32, no load
balancer, 1,024 routed tokens a rank: 1.564272). The step model's distinct-expert count
(:mod:`planner.engine.routing`) takes the experts' per-token hazards ``h`` Gamma-distributed
around ``lambda = -ln(1 - top_k / E)`` with squared coefficient of variation ``cv2``. The same
model gives a rank's expected load: expert ``i`` is picked by a token with probability
``1 - exp(-h_i)``; a rank holds ``E / ep`` contiguous experts (the engines' default placement),
so its load is the sum of theirs; a layer's routed counts are Poisson around those loads at the
published mean per rank. :func:`rank_excess` is the expected ``(max - mean) / mean`` of the
``ep`` counts over independent layers (Monte Carlo, fixed seed), and :func:`solve_cv2` the
``cv2`` that gives the published value (bisection).

Usage::

    python scripts/route_cv2.py    # every record without a load balancer: the cv2 it implies

DeepSeek-R1 at EP32: Gamma cv2 = 3.161 (the record's ``route_cv2``); log-normal (the family
DeepEP pull request #393 found to fit best) sigma^2 = 1.415 (``route_lognormal_s2``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.catalog.routing_skew import routing_skews  # noqa: E402


def rank_excess(
    cv2: float,
    num_experts: int,
    top_k: int,
    ep: int,
    tokens_per_rank: float,
    draws: int = 20000,
    seed: int = 0,
    family: str = "gamma",
) -> float:
    """Expected ``(max - mean) / mean`` of the routed tokens of ``ep`` ranks [1], the experts'
    per-token hazards of mean ``lambda = -ln(1 - top_k / num_experts)`` either Gamma with
    squared coefficient of variation ``cv2`` or (``family="lognormal"``) log-normal
    ``lambda exp(sigma Z - cv2 / 2)`` with ``sigma^2 = cv2`` (0: uniform), each layer an
    independent draw of ``draws``."""
    rng = np.random.default_rng(seed)
    lam = -np.log(1.0 - top_k / num_experts)
    if cv2 <= 0:
        h = np.full((draws, num_experts), lam)
    elif family == "lognormal":
        h = lam * np.exp(rng.normal(-0.5 * cv2, np.sqrt(cv2), (draws, num_experts)))
    else:
        h = rng.gamma(1.0 / cv2, lam * cv2, (draws, num_experts))
    load = (1.0 - np.exp(-h)).reshape(draws, ep, -1).sum(axis=2)
    load = load / load.mean(axis=1, keepdims=True) * tokens_per_rank
    counts = rng.poisson(load)
    mean = counts.mean(axis=1)
    return float(np.mean((counts.max(axis=1) - mean) / mean))


def solve_cv2(
    target: float, num_experts: int, top_k: int, ep: int, tokens_per_rank: float, **kw
) -> float:
    """The ``cv2`` in [0, 8] whose :func:`rank_excess` equals ``target`` (bisection, 25 steps;
    ``rank_excess`` rises with ``cv2``)."""
    lo, hi = 0.0, 8.0
    for _ in range(25):
        mid = 0.5 * (lo + hi)
        if rank_excess(mid, num_experts, top_k, ep, tokens_per_rank, **kw) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def main() -> None:
    for r in routing_skews(applied_only=False):
        if r.eplb or r.num_experts % r.ep:
            print(f"{r.id}: experts placed by a load balancer, not contiguous: no cv2")
            continue
        args = (r.value, r.num_experts, r.top_k, r.ep, r.tokens_per_rank)
        cv2 = solve_cv2(*args)
        s2 = solve_cv2(*args, family="lognormal")
        print(
            f"{r.id}: E {r.num_experts} top-{r.top_k} EP{r.ep} eplb {r.eplb}: "
            f"published {r.value:.4f} -> Gamma cv2 {cv2:.3f} (recorded {r.route_cv2}), "
            f"log-normal sigma^2 {s2:.3f} (recorded {r.route_lognormal_s2})"
        )


if __name__ == "__main__":
    main()
