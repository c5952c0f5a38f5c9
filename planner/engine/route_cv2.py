"""The published routing skew as the step's expert-popularity skew (issue 29, OFF).

A decode step reads the weights of every routed expert one of its tokens picks
(:mod:`planner.engine.routing`). Under uniform routing 64 DeepSeek-R1 tokens hit 222 of the
256 experts of a layer; under a skewed popularity of squared coefficient of variation ``cv2``
fewer, since popular experts are hit again and again. The fitted ``moe_route_cv2`` is 0 on
every node (the prior: no fit frees it; fitted it comes out 0.025-0.10,
docs/changes/2026-12-07/r1h200.md).

The one published measurement of DeepSeek-R1's routing (TensorRT-LLM tech blog 4: the busiest
EP32 rank's routed tokens 1.564 above the mean, no load balancer; ``data/moe_routing_skew.yaml``)
implies ``cv2`` = 3.161 under the same Gamma model (``route_cv2`` of that record, derived by
``scripts/route_cv2.py``), or ``sigma^2`` = 1.415 for log-normal hit rates
(``route_lognormal_s2``; the family DeepEP pull request #393 found to fit best). The Gamma of
shape 1 / 3.161 leaves many experts near zero popularity, so it reads only 197 of 256 experts
at 1,024 tokens; the log-normal reads 251.6 (uniform 256), while both read far fewer than
uniform routing at 16-128 tokens (:func:`planner.engine.routing.lognormal_distinct_experts`).

:func:`published_skew` gives the value of :data:`FAMILY` for a model of the record's routed
experts and top-k, and :func:`planner.engine.step.step_model` stores it on the step model:
``StepModel.route_cv2_min`` (Gamma: the distinct-expert count takes ``max(moe_route_cv2,
route_cv2_min)``) or ``StepModel.route_ln_s2`` (log-normal, in place of the fitted Gamma).

OFF (:data:`APPLY`): scored held out by source both families make issue 29's EP + DEP TPOT
worse (docs/changes/2026-12-10/epdep.md).
"""

from __future__ import annotations

from planner.catalog.routing_skew import routing_skews

#: take the published routing skew as the step's expert-popularity skew (False: the fitted
#: ``moe_route_cv2`` as it is, every answer as before)
APPLY = False
#: the popularity family: "lognormal" (DeepEP #393's) or "gamma" (the step's fitted form)
FAMILY = "lognormal"


def published_skew(num_experts: int, top_k: int) -> tuple[float, float]:
    """``(gamma cv2, log-normal sigma^2)`` of the published record of this routing shape (no
    load balancer) [1], the one of :data:`FAMILY` set and the other 0; ``(0, 0)`` where no
    record has one or :data:`APPLY` is off.

    Example: DeepSeek-R1 (256 experts, top-8): (0, 1.415), or (3.161, 0) with FAMILY "gamma";
    Qwen3-235B (128, top-8): (0, 0)."""
    if not APPLY or not num_experts:
        return 0.0, 0.0
    for r in routing_skews(applied_only=False):
        if (r.num_experts, r.top_k) != (num_experts, top_k) or r.eplb:
            continue
        if FAMILY == "gamma" and r.route_cv2 is not None:
            return r.route_cv2, 0.0
        if FAMILY == "lognormal" and r.route_lognormal_s2 is not None:
            return 0.0, r.route_lognormal_s2
    return 0.0, 0.0
