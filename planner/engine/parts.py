"""Per-part compute terms of a layer that the step model adds to its matmul and attention
totals: the absorbed MLA decode FLOPs, and the linears a published checkpoint leaves in a
higher precision than its format (NVIDIA's NVFP4 DeepSeek-R1 keeps most of attention in
bf16, :class:`planner.catalog.records.Checkpoint`), whose GEMMs run at that dtype's peak."""

from __future__ import annotations

from planner.catalog.records import Accelerator, ModelArch, Precision
from planner.engine.memory import attention_out_params
from planner.engine.params import param_counts


def mla_decode_flops_per_pair(m: ModelArch) -> float:
    """FLOPs per query-key pair per layer of MLA attention in the absorbed (decode) form,
    all heads of one layer [FLOP]: ``2 x heads x (kv_lora_rank + qk_rope_head_dim)`` for the
    scores (the query, its no-rope part multiplied by W_UK into the latent space, against
    the cached latent and rope key) + ``2 x heads x kv_lora_rank`` for the values (weights
    times the latent; W_UV applied after). DeepSeek-V3: 2 x 128 x (576 + 512) = 278,528,
    3.4x the 2 x 128 x (192 + 128) = 81,920 of the expanded form that prompt chunks run.

    Engines decode MLA this way: DeepSeek-V2 paper (arXiv 2405.04434, section 2.1.2: W_UK
    absorbed into W_Q, W_UV into W_O, so the keys and values are never expanded); vLLM
    ``vllm/v1/attention/backends/mla/common.py`` ("data-movement friendly approach" for
    decode, "compute friendly approach" for prefill, latent 512 and rope 64 in DSV3);
    FlashMLA (deepseek-ai/FlashMLA: head dim 576 for QK, 512 for V); SGLang's and
    TensorRT-LLM's MLA generation kernels. The per-token W_UK / W_UV products cost what
    ``kv_b_proj`` costs in the expanded form (``2 x kv_lora_rank x heads x (qk_nope + v)``
    per token), already among the matmul parameters. 0 for a model without MLA."""
    if not m.is_mla:
        return 0.0
    r, rope = m.kv_lora_rank, m.qk_rope_head_dim
    return 2.0 * m.num_attention_heads * (r + rope) + 2.0 * m.num_attention_heads * r


def unquantized_attention(m: ModelArch, prec: Precision, g: Accelerator) -> tuple[float, float]:
    """The attention a published checkpoint leaves unquantized, on ``g``: ``(params, peak)``
    = the attention input-projection parameters of all layers that stay in the
    checkpoint's ``other_compute_dtype`` [params] and that dtype's dense peak [FLOP/s];
    ``(0, 0)`` where no checkpoint applies (:meth:`ModelArch.checkpoint_for`) or it
    quantizes them.

    The step model runs these projections at this peak instead of the format's (bf16
    weights run bf16 GEMMs; TensorRT-LLM tech blog 1, "Pushing Latency Boundaries",
    Precision Strategy: DeepSeek-R1's attention modules in bf16, its MoE and dense FFN in
    nvfp4). The attention core (scores and values over the KV cache) keeps the format's
    peak: with an fp8 KV cache the engines may run it in fp8 (the blog's footnote: FP8
    attention is supported), which no source read settles; running it at the bf16 peak
    made InferenceX's held-out DEP TPOT 46.8% off instead of 14.5% (changes/fp4parts.md).
    DeepSeek-V3 under nvidia/DeepSeek-R1-0528-FP4-v2: 11,413,547,008 attention parameters
    - 7,163,871,232 of wo (NVFP4) = 4,249,675,776 in bf16."""
    ckpt = m.checkpoint_for(prec.id, g.arch)
    if ckpt is None or "attention_in" in ckpt.quantized:
        return 0.0, 0.0
    params = param_counts(m).attention
    if "attention_out" in ckpt.quantized:
        params -= attention_out_params(m)
    return float(params), g.peak_tflops(ckpt.other_compute_dtype) * 1e12
