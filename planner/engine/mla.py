"""The compute rate of MLA attention in its absorbed (decode) form.

Decode queries of an MLA model (DeepSeek-V2/V3) run one kernel over the cached latent
(FlashMLA, TensorRT-LLM's and SGLang's MLA generation kernels): every query head attends the
same 576-wide latent + rope key, so with 128 heads per GPU (attention data parallel, or TP1)
the kernel is compute bound (FlashMLA's deep-dive: FLOPs / bytes ~ ``2 x h_q x s_q``, above
the ridge once ``h_q x s_q >= 128`` on H800). It is a different kernel from the prompt's
FlashAttention (the expanded form, ``attn_eff``), and its published rate is a fraction of the
**bf16** peak: FlashMLA computes in bf16 even from an FP8 KV cache ("dequantizes the cache to
bfloat16 and performs attention computation in bfloat16", FlashMLA README).

The step model therefore runs the absorbed decode FLOPs (:func:`planner.engine.parts.
mla_decode_flops_per_pair`) at ``bf16 peak x`` :func:`mla_decode_eff` instead of at the
format's peak x the fitted ``attn_eff``: the published compute-bound rate of the kernel the
engines of the GPU's architecture run with 128 heads (``data/kernel_rates.yaml``, the record
marked ``default``), else :data:`MLA_DECODE_EFF`. Hopper has one (FlashMLA, the same
660 / 990) and CDNA4 one (AITER's ASM kernel on MI355X, 1,170 TFLOPS = 0.468 of its bf16
peak, ROCm/aiter PR #3072: the decode step of MI355X DEP ranks at large batch); the one published Blackwell timing of TensorRT-LLM's trtllm-gen MLA kernel is of
its 16-head low-latency variant and is kept there unapplied (its notes say why). Before this module they ran at fp8 / fp4 peak x
``attn_eff``; the held-out fits put ``attn_eff`` at 0.06-0.18 on the Blackwell nodes (a
fit of the prompt's attention), i.e. 300-800 TFLOPS for a kernel that reaches 660 TFLOPS on
an H800, and the decode step of a DEP8 / DEP16 pool at 8k context came out 2-2.5x the
measured TPOT (docs/changes/2026-12-07/r1long.md).
"""

from __future__ import annotations

from planner.catalog.kernel_rates import mla_decode_rate
from planner.catalog.records import Accelerator

#: FlashMLA dense MLA decoding, compute-bound configuration: 660 TFLOPS on an H800 SXM5
#: (deepseek-ai/FlashMLA README, "Performance"; 2025.04.22 release), against the 990 TFLOPS
#: bf16 dense peak its deep-dive uses for that GPU (docs/20250422-new-kernel-deep-dive.md:
#: "peak FLOPs of 990 TFlops"): 660 / 990 = 0.6667 of the bf16 dense peak.
MLA_DECODE_EFF = 660.0 / 990.0


def mla_decode_eff(g: Accelerator) -> float:
    """Fraction of the bf16 dense peak the absorbed MLA decode kernel reaches on ``g`` [-]:
    the published rate of its architecture's default kernel (``data/kernel_rates.yaml``,
    :func:`planner.catalog.kernel_rates.mla_decode_rate`), else :data:`MLA_DECODE_EFF`
    (FlashMLA's H800 fraction: the rule for an architecture with nothing published)."""
    rec = mla_decode_rate(g.arch)
    return rec.fraction if rec is not None else MLA_DECODE_EFF


def mla_decode_flops_s(g: Accelerator) -> float:
    """Achieved rate of absorbed MLA decode attention on ``g`` [FLOP/s]: its bf16 dense peak
    x :func:`mla_decode_eff`. H200 (FlashMLA record, 989 TFLOPS): 9.89e14 x 660 / 990 =
    6.593e14; MI355X (AITER ASM record): 2.5e15 x 0.46799 = 1.170e15; B200 and MI300X (no
    applied record): 2.25e15 / 1.307e15 x 660 / 990 = 1.5e15 / 8.713e14."""
    return g.peak_tflops("bf16") * 1e12 * mla_decode_eff(g)


def attn_compute_s(sm, a_flops, a_dec, pf_flops):
    """Attention compute time of an MLA step [s]: the expanded-form FLOPs (prompt chunks,
    ``a_flops - a_dec - pf_flops``) at ``peak x attn_eff``, the prefix pairs at ``peak x
    prefix_attn_eff``, the absorbed decode FLOPs ``a_dec`` at ``sm.mla_decode_flops_s``
    (``peak x attn_eff`` where it is 0). ``sm``: the :class:`planner.engine.step.StepModel`."""
    p = sm.params
    rate = sm.mla_decode_flops_s or sm.peak_flops * p.attn_eff
    return (
        (a_flops - a_dec - pf_flops) / (sm.peak_flops * p.attn_eff)
        + pf_flops / (sm.peak_flops * (p.prefix_attn_eff or p.attn_eff))
        + a_dec / rate
    )
