"""Recommendation: which GPU, framework, precision and layout, how many, at what cost.

``recommend(model, workload, slo, catalog=..., constraints=..., objective="cost")`` ranks
every deployment the catalog allows (:mod:`planner.recommend.options`), screens them
analytically and simulates only those that can still win (:mod:`planner.recommend.search`),
and returns the top N with their fleet size, $/M tokens, P99 latencies, energy and quality,
the Pareto front of $/M tokens vs P99 latency, and every rejected option with its reason.

Names are imported on first use, so ``planner.recommend.constraints`` (read by every
scenario) does not pull in the search.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Constraints": "constraints",
    "DEFAULT_TPS": "options",
    "GrowthPlan": "grow",
    "MAX_TP_PER_NODE": "options",
    "OBJECTIVES": "objective",
    "Option": "options",
    "Recommendation": "search",
    "Rejection": "options",
    "compare_gpus": "compare",
    "enumerate_options": "options",
    "plan_growth": "grow",
    "recommend": "search",
    "recommend_classes": "classes",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
