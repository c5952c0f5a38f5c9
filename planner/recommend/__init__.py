"""Recommendation: which GPU, framework, precision and layout, how many, at what cost.

``recommend(model, workload, slo, catalog=..., objective="cost")`` ranks every deployment the
catalog allows (:mod:`planner.recommend.options`), screens them analytically and simulates
only those that can still win (:mod:`planner.recommend.search`), and returns the top N with
their fleet size, $/M tokens, P99 latencies, energy and quality, the Pareto front of $/M tokens
vs P99 latency, and every rejected option with its reason.
"""

from __future__ import annotations

from .compare import compare_gpus
from .options import DEFAULT_TPS, MAX_TP_PER_NODE, Option, Rejection, enumerate_options
from .search import OBJECTIVES, Recommendation, recommend

__all__ = [
    "DEFAULT_TPS",
    "MAX_TP_PER_NODE",
    "OBJECTIVES",
    "Option",
    "Recommendation",
    "Rejection",
    "compare_gpus",
    "enumerate_options",
    "recommend",
]
