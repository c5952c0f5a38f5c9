"""A prompt's dense block-FP8 linears at FlashInfer's published rate, where a public run's
launch script turns DeepGEMM off (aggregated serving rows; issue 32, item 1, TTFT).

InferenceX's SGLang DeepSeek-R1 FP8 scripts for B200 and B300 export, before
``sglang.launch_server`` (SemiAnalysisAI/InferenceX ``benchmarks/single_node/dsr1_fp8_b200.sh``
lines 23-24 and ``dsr1_fp8_b300.sh`` lines 27-28, at every commit in
:data:`DEEPGEMM_OFF_SCRIPTS`, read with ``git show <commit>:<path>``)::

    export SGL_ENABLE_JIT_DEEPGEMM=false
    export SGLANG_ENABLE_FLASHINFER_GEMM=true

SGLang renames every ``SGL_*`` variable to ``SGLANG_*`` at import
(``srt/environ.py _convert_SGL_to_SGLANG``), so JIT DeepGEMM is off, and its FP8 dispatch
then runs a block-FP8 checkpoint's dense linears (attention projections, shared experts, the
three dense MLP layers) on FlashInfer's TRT-LLM groupwise GEMM (``fp8_utils.
_dispatch_auto_backend``). sgl-project/sglang PR #13528 times that kernel at 442 TFLOPS at
m = 2,048 (6.3x DeepGEMM's time), and faster than DeepGEMM at m <= 32
(``data/kernel_rates.yaml`` ``block_fp8_gemm``). So a prompt (m = its tokens) runs these
linears at the published rate, a decode step (m = the batch, <= 128 here) does not lose.

The step model fits one GEMM rate per node (``peak x compute_eff``) on rows that ran
DeepGEMM or did not say. :func:`prompt_gemm_excess_s` charges the prompt the difference:

    excess = prompt tokens x dense FLOPs per token and GPU x (1 / rate - 1 / (peak x compute_eff))

and the serving rows add it to TTFT and E2E after the simulation (mean, median and P99),
like the other first-token waits (:mod:`planner.benchmarks.scheduler_waits`). Exact for one
client; at more clients the longer prompts also queue behind each other and delay the
decoders, which this leaves out (it adds nothing to TPOT). Not fitted: the rate is the
published one and ``compute_eff`` the node's own. Disaggregated pools charge the same rate
inside their steps (:func:`planner.engine.dense_rate.no_deepgemm`, expert-parallel layouts).
"""

from __future__ import annotations

import re

from planner.engine.dense_rate import dense_gemm_factor, published_dense_rate
from planner.engine.params import param_counts

__all__ = [
    "DEEPGEMM_OFF_SCRIPTS",
    "PROMPT_GEMM_RATE",
    "deepgemm_off",
    "dense_flops_per_token",
    "prompt_gemm_excess_s",
    "with_prompt_gemm",
]

#: the switch: add the prompt's dense-linear excess to TTFT / E2E of matched rows
PROMPT_GEMM_RATE = True

#: InferenceX launch scripts (path -> commits, 12 hex digits) whose text exports
#: ``SGL_ENABLE_JIT_DEEPGEMM=false`` and ``SGLANG_ENABLE_FLASHINFER_GEMM=true``; each commit
#: read in SemiAnalysisAI/InferenceX with ``git show`` (the commits the rows' notes cite)
DEEPGEMM_OFF_SCRIPTS = {
    "benchmarks/single_node/dsr1_fp8_b200.sh": frozenset(
        {"12ba0ae07289", "2fc18b7594be", "370a162f3f9b", "70bf3a25b6b1", "d4948f993748"}
    ),
    "benchmarks/single_node/dsr1_fp8_b300.sh": frozenset(
        {"2fc18b7594be", "472dd063447b", "70bf3a25b6b1", "d4948f993748", "dd9c285b3140"}
    ),
}

_SCRIPT = re.compile(r"script (\S+) @ ([0-9a-f]{12})")


def deepgemm_off(notes: str) -> bool:
    """Whether a row's notes cite a launch script and commit of :data:`DEEPGEMM_OFF_SCRIPTS`."""
    m = _SCRIPT.search(notes or "")
    return bool(m) and m.group(2) in DEEPGEMM_OFF_SCRIPTS.get(m.group(1), ())


def dense_flops_per_token(sm) -> float:
    """Dense linears' FLOPs per replica token and GPU [FLOP] of a step model: attention,
    dense MLP, shared experts and router, the terms ``step_model`` puts in
    ``matmul_flops_per_token`` beside the routed experts (which an expert-parallel layout
    keeps apart, so there the whole term)."""
    if sm.expert_flops_per_routed_token:
        return float(sm.matmul_flops_per_token)
    m = sm.model
    pc = param_counts(m)
    dense = pc.attention + pc.mlp_dense + pc.shared_experts + pc.router
    return 2.0 * dense / sm.tp * sm.layers / m.num_hidden_layers


def prompt_gemm_excess_s(sm, framework: str | None, prompt_tokens: float) -> float:
    """Seconds a prompt of ``prompt_tokens`` spends beyond the step model's in its dense
    block-FP8 linears at the published ``block_fp8_gemm`` rate of ``sm``'s architecture and
    ``framework`` [s]; 0 for another format, architecture or engine, or a rate not slower
    than the node's.

    Example: DeepSeek-V3 fp8, B200 TP8 (15.263e9 dense parameters: 3.8158 GFLOP per token and
    GPU), compute_eff 0.6024: 3.8158e9 x (1 / 3.978e14 - 1 / (4.5e15 x 0.6024)) = 8.185 us per
    token, 60.3 ms for a 7,373-token prompt."""
    if not prompt_tokens or prompt_tokens <= 0:
        return 0.0
    rate = published_dense_rate(sm, framework)
    if rate is None:
        return 0.0
    # (node / rate - 1) / node = 1 / rate - 1 / node, 0 where the rate is not slower
    node = sm.peak_flops * sm.params.compute_eff
    return (
        float(prompt_tokens)
        * dense_flops_per_token(sm)
        * (dense_gemm_factor(sm, rate) - 1.0)
        / node
    )


def with_prompt_gemm(out: dict, sm, framework, notes: str, mode, isl, ilen) -> dict:
    """``out`` (a serving row's metrics [ms]) with the prompt's excess added to TTFT and E2E
    (mean, median, P99) where :data:`PROMPT_GEMM_RATE` is on and the row's launch turns
    DeepGEMM off (:func:`deepgemm_off`); ``out`` itself otherwise. The prompt is ``isl`` or
    the mean of the length distribution ``ilen``; static batches and single streams are left
    alone (no serving TTFT)."""
    if not PROMPT_GEMM_RATE or mode in ("static_batch", "single_stream") or not deepgemm_off(notes):
        return out
    prompt = float(isl) if ilen is None else float(ilen.mean_tokens())
    ms = prompt_gemm_excess_s(sm, framework, prompt) * 1e3
    if ms <= 0:
        return out
    new = dict(out)
    for k in ("ttft_ms_mean", "ttft_ms_median", "ttft_ms_p99", "e2e_ms_mean", "e2e_ms_median",
              "e2e_ms_p99"):  # fmt: skip
        if k in new:
            new[k] += ms
    new["_note"] = (
        f"{new.get('_note', '')}; prompt's dense FP8 linears on FlashInfer: TTFT + {ms:.3g} ms"
    )
    return new
