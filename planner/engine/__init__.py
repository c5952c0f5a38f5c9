"""The engine: memory of one GPU in a replica, the per-step time model, and the phases
(prefill, decode, static-batch estimate) built on it. Pure functions of catalog records."""

from planner.engine.memory import (
    MemoryPlan,
    WeightMemory,
    activation_workspace_bytes,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    plan_memory,
    weight_memory,
)
from planner.engine.params import ParamCounts, param_counts
from planner.engine.phases import (
    Estimate,
    decode_step,
    decode_step_mixed,
    decode_time,
    estimate,
    mean_decode_time,
    prefill,
    prefill_time,
)
from planner.engine.step import StepBreakdown, StepModel, step_model

__all__ = [
    "Estimate",
    "MemoryPlan",
    "ParamCounts",
    "StepBreakdown",
    "StepModel",
    "WeightMemory",
    "activation_workspace_bytes",
    "decode_step",
    "decode_step_mixed",
    "decode_time",
    "estimate",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "mean_decode_time",
    "param_counts",
    "plan_memory",
    "prefill",
    "prefill_time",
    "step_model",
    "weight_memory",
]
