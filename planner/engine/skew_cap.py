"""The published routing skew as a ceiling on the decode tokens' fitted skew (issue 29).

The EP fit (``planner.calibration.ep_fit``) puts the routing skew of decode tokens,
``EfficiencyParams.moe_imbalance``, at its bound 4 on every engine: the busiest expert-parallel
GPU then runs 5x the mean routed tokens in every decode step. The one published measurement of
DeepSeek-R1's routing is far lower: 1.564 at EP32 without a load balancer, the busiest rank's
(max - mean) / mean averaged over the MoE layers (TensorRT-LLM tech blog 4,
``data/moe_routing_skew.yaml``), an upper bound at a smaller EP (a rank of EP8 holds the
experts of four EP32 ranks, so its excess is the mean of theirs).

At small batch the skew does not matter (the routed experts are read from memory, whatever
the busiest rank's row count); it sets the decode step once the busiest GPU's expert GEMMs are
compute bound. A DeepSeek-R1 DEP8 rank of 500 sequences routes 4,000 tokens to each GPU on
average; with the fitted 4 the busiest runs 20,000 + 129 and its expert GEMMs take ~32 ms of an
~81 ms step on B200 (bundled profile, 5.2k context), against ~20 ms with the published 1.564.

:func:`decode_skew_cap` gives the ceiling of a layout (``inf``: none applies, or the switch
:data:`APPLY` is off); :func:`planner.engine.ep_terms.as_expert_parallel` stores it on the
step model (``StepModel.decode_skew_cap``), whose decode skew is then
``min(moe_imbalance, cap)``. The prompt tokens keep their fitted skew
(``moe_imbalance_prompt``): on aggregated rows it stands in for a prompt cost of mixed steps
(docs/changes/2026-12-07e/msplit.md), which no routing measurement bounds.
"""

from __future__ import annotations

import math

from planner.catalog.routing_skew import measured_skew

#: apply the published skew as the decode tokens' ceiling (False: the fitted skew as it is).
#: OFF: scored held out by source (scripts/ep_accuracy.py, docs/changes/2026-12-07f/dep8.md note) it makes
#: issue 29's EP + DEP TPOT worse, 28.8% -> 33.2% (49 -> 40 rows within 25%), and with the
#: MLPerf run-length rule on as well (planner.benchmarks.run_length) 31.4% (50 within), EP + DEP
#: TTFT 22.0% -> 30.8%: a faster DEP8 step moves the MLPerf v6.0 Server runs further down their
#: lower operating branch (0.70-0.78 -> 0.58-0.65 of the measured TPOT).
APPLY = False


def decode_skew_cap(num_experts: int, top_k: int, ep: int) -> float:
    """Ceiling on the decode tokens' routing skew of an EP layout of ``ep`` ranks [-]: the
    published skew of the routing shape (:func:`planner.catalog.routing_skew.measured_skew`,
    no load balancer: none of the engines' default placements is one), else ``inf``.

    Example: DeepSeek-R1 (256 experts, top-8) at EP8: the EP32 record, 1.564272; at EP64 or
    with 128 experts: ``inf`` (no measurement bounds it)."""
    if not APPLY or ep <= 1 or not num_experts:
        return math.inf
    rec = measured_skew(num_experts, top_k, ep, eplb=False)
    return rec.value if rec is not None else math.inf
