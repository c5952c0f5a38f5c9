"""The TensorRT-LLM DeepSeek-R1 NVFP4 DEP8 decode step on B200, part by part, against the
published per-component timings (issue 29 item 1; docs/changes/2026-12-07f/dep8.md).

In sample (the bundled profile's ``trtllm / nvidia-b200 / fp4`` node): a diagnosis, not a
held-out score. One line per sequences a rank (16 .. 1,024; no CUDA-graph padding), at the
time-weighted mean context of the MLPerf DeepSeek-R1 set (5,188 tokens,
``scripts/dep_operating_points.py``):

* ``step``: the model's decode step [ms] and its parts: ``weights`` (every byte it reads
  for the GEMMs at ``mem_eff``), ``experts_fit`` / ``experts_pub`` (the busiest GPU's routed
  expert FLOPs at the fitted decode skew and at the published 1.564), ``dense`` (attention
  projections, dense and shared MLPs), ``attn``, ``comm``, ``fixed``; ``gemm`` is
  max(weights, dense + experts_fit), as the step takes it;
* ``comm_blog18``: one BF16 dispatch + one BF16 combine per MoE layer at that many tokens a
  rank, EP8, x 58 MoE layers (TensorRT-LLM tech blog 18, "Optimizing MoE Communication with
  One-Sided AlltoAll Over NVLink", table "ep_size=8", GB200 NVL72: NVLink 900 GB/s a GPU
  one way, the B200's too);
* ``moe_fi5301``: the published NVFP4 MoE layer of an EP8 shard (32 local experts, uniform
  routing, routing + quantization + GEMMs + finalize) at the replica's tokens, x 58
  (flashinfer-ai/flashinfer PR #5301, B300, ``data/moe_kernels.yaml``), against
  ``moe_model``: the larger of the model's routed-expert bytes (at ``mem_eff``) and the
  busiest GPU's routed-expert FLOPs at the fitted skew (the step's GEMM term takes the larger
  of all bytes and all FLOPs);
  ``moe_fi5301_pub``: the same kernel at ``(1 + 1.564)`` x the tokens, the busiest shard's
  rows at the published skew (the kernel's own routing is uniform).

Usage (repository root, a few seconds)::

    PYTHONPATH=$PWD python scripts/dep8_step_parts.py
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.catalog.catalog import load_catalog  # noqa: E402
from planner.catalog.layout import layout_of  # noqa: E402
from planner.catalog.moe_kernels import moe_layer_timings  # noqa: E402
from planner.catalog.profile import load_profile, resolve_params  # noqa: E402
from planner.catalog.routing_skew import measured_skew  # noqa: E402
from planner.engine.phases import decode_step  # noqa: E402
from planner.engine.step import step_model  # noqa: E402

#: TensorRT-LLM tech blog 18 (docs/source/blogs/tech_blog/
#: blog18_Optimizing_MoE_Communication_with_One_Sided_AlltoAll_Over_NVLink.md @ 22de8b34),
#: "ep_size=8": tokens a rank -> (BF16 dispatch, BF16 combine) [us], DeepSeek-V3 shapes
#: (hidden 7168, top-8, 256 experts), GB200 NVL72
BLOG18_EP8_US = {
    1: (18.9, 31.0), 2: (18.4, 31.1), 4: (18.1, 31.4), 8: (17.6, 31.4), 16: (18.5, 32.6),
    32: (18.2, 32.7), 64: (22.3, 34.1), 128: (31.7, 38.1), 256: (50.8, 53.0),
    512: (89.5, 91.7), 1024: (166.3, 175.6), 2048: (311.8, 322.6),
}  # fmt: skip
MOE_LAYERS = 58  # DeepSeek-V3: 61 layers, the first 3 dense
CONTEXT = 5188.0  # MLPerf DeepSeek-R1 set: E[ISL] + E[OSL^2] / (2 E[OSL]) [tokens]
PER_RANK = (16, 64, 128, 256, 512, 1024)


def blog18_ms(per_rank: int) -> float:
    """One BF16 dispatch + combine per MoE layer x 58 layers [ms] at ``per_rank`` tokens a
    rank (tech blog 18, EP8). 512: (89.5 + 91.7) x 58 / 1000 = 10.51 ms."""
    d, c = BLOG18_EP8_US[per_rank]
    return (d + c) * MOE_LAYERS / 1e3


def fi5301_ms(tokens: float) -> float:
    """The published NVFP4 MoE layer of an EP8 shard at ``tokens`` replica tokens x 58 [ms]
    (the first record of ``data/moe_kernels.yaml``, applied or not; linear between its timed
    counts). 4,096: 311.954 us x 58 = 18.09 ms."""
    rec = moe_layer_timings()[0]
    return float(np.interp(tokens, rec.tokens, rec.time_us)) * MOE_LAYERS / 1e3


def table(gpu: str = "nvidia-b200") -> pd.DataFrame:
    cat, prof = load_catalog(), load_profile()
    p, _ = resolve_params(gpu, "trtllm", "nvfp4", catalog=cat, profile=prof, family=None)
    sm = step_model("deepseek-v3", gpu, "nvfp4", "fp8", layout=layout_of(1, 1, 8, 8),
                    params=p, catalog=cat)  # fmt: skip
    pub = measured_skew(sm.num_experts, sm.top_k, 8).value
    bw = sm.bw_bytes_s * p.mem_eff
    ms, recs = 1e3, []
    for b in PER_RANK:
        T = 8.0 * b
        bd = decode_step(sm, T, CONTEXT)

        def experts(cap, T=T):
            s2 = replace(sm, decode_skew_cap=cap)
            hd = float(s2.routed_tokens_hot(T)) * 8
            eff = p.compute_eff * hd / (hd + p.compute_half_tokens * 8)
            return sm.expert_flops_per_routed_token * (hd / 8) / (sm.peak_flops * eff)

        dense = (
            sm.matmul_flops_per_token
            * T
            / (sm.peak_flops * p.compute_eff * T / (T + p.compute_half_tokens * 8))
        )
        w_moe = float(sm.expected_experts(T)) * sm.expert_bytes / bw
        recs.append({
            "per_rank": b, "step": bd.time_s * ms, "gemm": bd.t_gemm_s * ms,
            "weights": float(bd.weight_bytes) / bw * ms, "dense": dense * ms,
            "experts_fit": experts(math.inf) * ms, "experts_pub": experts(pub) * ms,
            "attn": bd.t_attn_s * ms, "comm": bd.t_comm_s * ms, "fixed": bd.t_overhead_s * ms,
            "comm_blog18": blog18_ms(b), "moe_model": max(w_moe, experts(math.inf)) * ms,
            "moe_fi5301": fi5301_ms(T), "moe_fi5301_pub": fi5301_ms(T * (1.0 + pub)),
        })  # fmt: skip
    out = pd.DataFrame(recs).round(2)
    out.attrs.update(skew_fit=p.moe_imbalance, skew_pub=pub)
    return out


def main() -> int:
    t = table()
    print(f"B200 TensorRT-LLM nvfp4 DEP8, bundled profile (in sample); decode skew fitted "
          f"{t.attrs['skew_fit']:.3f}, published {t.attrs['skew_pub']:.3f}; context {CONTEXT:.0f}")  # fmt: skip
    print(t.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
