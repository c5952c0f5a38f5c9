"""An engine's MoE backend as a per-layer time the fitted step does not hold.

The step model charges a routed-expert layer its weight stream (or FLOPs) and the fitted
per-layer overhead, the same for every engine backend. A published side-by-side timing of
two backends on the same MoE shape (``data/moe_backends.yaml``: TensorRT-LLM's CUTLASS
backend vs its trtllm-gen one, NVFP4 on Blackwell, FlashInfer PR #4985) gives the slower
one's surplus a layer; :func:`with_moe_backend` adds it, times the stage's MoE layers, to the
step's fixed time (``StepModel.moe_backend_s``) of a deployment that names that backend.
:func:`with_adp_step` adds to the same fixed time an engine's per-step attention-DP cost
(``data/adp_step.yaml``; chosen, not published, and off).
"""

from __future__ import annotations

from dataclasses import replace

from planner.catalog.adp_step import adp_step_s
from planner.catalog.moe_backends import backend_surplus_s

__all__ = ["moe_layers_on_stage", "with_adp_step", "with_moe_backend"]


def moe_layers_on_stage(sm) -> float:
    """MoE layers of the busiest pipeline stage of ``sm`` [layers]."""
    m = sm.model
    n = m.num_moe_layers if sm.num_experts else 0
    return n * sm.layers / m.num_hidden_layers if m.num_hidden_layers else 0.0


def with_moe_backend(sm, framework: str | None, backend: str | None, data_dir=None):
    """``sm`` (a :class:`planner.engine.step.StepModel`) charged ``backend``'s surplus on
    every MoE layer of its stage, each step; ``sm`` itself where none applies.

    Example: DeepSeek-R1 (58 MoE layers, one stage) NVFP4 on B200, TensorRT-LLM CUTLASS:
    58 x 21.2 us = 1.2296 ms a step."""
    s = backend_surplus_s(framework, backend, sm.precision.id, sm.gpu.arch, data_dir)
    if s <= 0.0:
        return sm
    return replace(sm, moe_backend_s=s * moe_layers_on_stage(sm))


def with_adp_step(sm, framework: str | None, data_dir=None):
    """``sm`` with ``framework``'s attention-DP step cost added to its fixed time
    (``StepModel.moe_backend_s``) where ``sm.attention_dp > 1`` and a record applies; ``sm``
    itself otherwise (no record, the switch off, or no attention DP).

    Example: TensorRT-LLM DeepSeek-R1 DEP8 with the bundled record on: + 1.0 ms a step, on
    top of a CUTLASS surplus of 1.2296 ms: 2.2296 ms."""
    c = adp_step_s(framework, int(sm.attention_dp), data_dir)
    if c <= 0.0:
        return sm
    return replace(sm, moe_backend_s=sm.moe_backend_s + c)
