"""Dense block-FP8 linears at a published kernel's rate (an engine without DeepGEMM).

SGLang runs a block-FP8 checkpoint's dense linears (attention projections, shared experts,
the dense MLP layers) on DeepGEMM when it is enabled; with ``SGLANG_ENABLE_JIT_DEEPGEMM``
false on Blackwell it falls back to FlashInfer's TRT-LLM groupwise GEMM (``fp8_utils.
_dispatch_auto_backend``), which sgl-project/sglang PR #13528 times at 442 TFLOPS on a GB200
(``data/kernel_rates.yaml``, ``block_fp8_gemm``) where DeepGEMM reaches 2,771. The step model
fits one GEMM rate per node (``peak x compute_eff``), on rows whose engines ran DeepGEMM or
did not say; :func:`dense_linears_at` charges a pool whose recipe turns DeepGEMM off the
published rate for those linears instead.

How: the dense linears' FLOPs per token (``matmul_flops_per_token``) take
``peak x compute_eff / rate - 1`` times their own count in ``matmul_slow_flops_per_token``
(FLOPs the step runs at ``peak x`` its GEMM efficiency), so at large steps, where the ramp
has reached ``compute_eff``, they take ``FLOPs / rate``. Only for an expert-parallel MoE
layout, where the routed experts are a separate term (``expert_flops_per_routed_token``: the
engine's MoE runner, which DeepGEMM does not serve in these recipes); elsewhere the linears
and the experts share one term and the pool is returned unchanged.
"""

from __future__ import annotations

from dataclasses import replace

from planner.catalog.kernel_rates import block_fp8_gemm_rate

__all__ = ["dense_gemm_factor", "dense_linears_at", "no_deepgemm", "published_dense_rate"]


def dense_gemm_factor(sm, rate_flops_s: float) -> float:
    """How many times the node's asymptotic GEMM rate (``peak x compute_eff``) exceeds
    ``rate_flops_s`` [-] (at least 1: a published rate never speeds a step up)."""
    return max(1.0, sm.peak_flops * sm.params.compute_eff / rate_flops_s)


def dense_linears_at(sm, rate_flops_s: float):
    """``sm`` (a :class:`planner.engine.step.StepModel`) with its dense linears at
    ``rate_flops_s`` [FLOP/s] (module docstring); ``sm`` itself where the layout has no
    separate routed-expert term or the rate is not slower than the node's.

    Example: DeepSeek-V3 fp8 on B200, SGLang DEP8 node of the held-out fit (compute_eff
    0.60231): 4.5e15 x 0.60231 / 3.9778e14 = 6.814, so the 3.8158 GFLOP of dense linears per
    replica token and GPU gain 5.814 x 3.8158 = 22.19 GFLOP of slow FLOPs."""
    if not sm.expert_flops_per_routed_token:
        return sm
    f = dense_gemm_factor(sm, rate_flops_s)
    if f <= 1.0:
        return sm
    slow = sm.matmul_slow_flops_per_token + (f - 1.0) * sm.matmul_flops_per_token
    return replace(sm, matmul_slow_flops_per_token=slow)


def published_dense_rate(sm, framework: str | None) -> float | None:
    """The applied ``block_fp8_gemm`` rate [FLOP/s] of ``sm``'s GPU architecture and
    ``framework`` (fraction x the GPU's fp8 dense peak) for a block-FP8 (``fp8``) deployment;
    None where no record applies (another format, architecture or engine, or the record's
    switch off)."""
    if sm.precision.id != "fp8":
        return None
    rec = block_fp8_gemm_rate(sm.gpu.arch, framework)
    return None if rec is None else rec.fraction * sm.gpu.peak_tflops("fp8") * 1e12


def no_deepgemm(sm, framework: str | None):
    """``sm`` with its dense linears at :func:`published_dense_rate`; ``sm`` itself where no
    record applies."""
    rate = published_dense_rate(sm, framework)
    return sm if rate is None else dense_linears_at(sm, rate)
