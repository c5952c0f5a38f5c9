"""planner: capacity and cost planning for LLM inference.

Public API (imported lazily, so ``import planner`` stays cheap)::

    from planner import load_catalog, plan_memory, step_model, decode_step, prefill, estimate

    cat = load_catalog()
    plan = plan_memory("llama-3.1-70b", "nvidia-h100-sxm", "fp8", tp=2, context_len=8192)
    sm = step_model("llama-3.1-8b", "nvidia-h100-sxm", "bf16")
    decode_step(sm, batch=16, context_len=2048).time_s   # seconds

    from planner import build_replica, max_rate, preset, SLO
    rep = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm")

Packages, imported in one direction only (``docs/architecture.md``)::

    errors, report < catalog < engine < workload < serving < scenario < benchmarks
        < calibration < cli

Units follow the names: ``_bytes`` bytes, ``_s`` seconds, ``_gb`` decimal GB,
``_tflops`` dense TFLOPS. See ``docs/formulas.md`` for every formula.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "PlannerError": "errors",
    "UnknownIdError": "errors",
    "MissingDataError": "errors",
    # catalogs
    "Catalog": "catalog",
    "Accelerator": "catalog",
    "ModelArch": "catalog",
    "Precision": "catalog",
    "KvPrecision": "catalog",
    "Framework": "catalog",
    "RentalPrice": "catalog",
    "PurchasePrice": "catalog",
    "load_catalog": "catalog",
    "model_from_hf_config": "catalog",
    "default_kv_precision": "catalog",
    # memory
    "ParamCounts": "engine.params",
    "WeightMemory": "engine.memory",
    "MemoryPlan": "engine.memory",
    "param_counts": "engine.params",
    "weight_memory": "engine.memory",
    "kv_bytes_per_token": "engine.memory",
    "kv_bytes_per_sequence": "engine.memory",
    "activation_workspace_bytes": "engine.memory",
    "plan_memory": "engine.memory",
    # performance
    "EfficiencyParams": "catalog.efficiency",
    "PRIOR": "catalog.efficiency",
    "StepModel": "engine.step",
    "StepBreakdown": "engine.step",
    "Estimate": "engine.phases",
    "step_model": "engine.step",
    "prefill": "engine.phases",
    "decode_step": "engine.phases",
    "estimate": "engine.phases",
    "compute_dtype_for": "catalog",
    # prediction of benchmark rows
    "Predictor": "benchmarks.predict",
    "predict_file": "benchmarks.predict",
    "resolve_efficiency": "catalog.profile",
    "model_family": "catalog.profile",
    # workload and serving
    "Workload": "workload",
    "SLO": "workload",
    "preset": "workload",
    "build_replica": "serving",
    "simulate": "serving",
    "max_rate": "serving",
    "size_fleet": "serving",
    "steady_state": "serving",
    "load_scenario": "scenario",
    # recommendation, cost
    "recommend": "recommend",
    "Recommendation": "recommend",
    "plan_growth": "recommend.grow",
    "grown_traffic": "workload.growth",
    "quote_price": "cost",
    "fleet_cost": "cost",
    "breakeven_utilization": "cost",
    "api_crossover": "cost",
    "api_reference": "cost",
    # output
    "emit": "report",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'planner' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
