"""Efficiencies and overheads of the step model (:class:`EfficiencyParams`) and their priors.

The defaults are priors; :mod:`planner.calibration` fits them and
:func:`planner.catalog.profile.resolve_params` picks the fitted node for a deployment.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from planner.catalog.records import Frozen


class EfficiencyParams(Frozen):
    """Efficiencies and overheads of one (hardware family, framework, precision).

    Defaults are priors used before calibration (provenance ``prior``).
    """

    @model_validator(mode="before")
    @classmethod
    def _prompt_skew_follows_decode_skew(cls, data: Any) -> Any:
        """A record that gives ``moe_imbalance`` and no ``moe_imbalance_prompt`` (a profile
        saved before the two were split, 2026-12-07) keeps one skew for every token."""
        if (
            isinstance(data, dict)
            and "moe_imbalance" in data
            and "moe_imbalance_prompt" not in data
        ):
            data = {**data, "moe_imbalance_prompt": data["moe_imbalance"]}
        return data

    mem_eff: float = Field(0.80, gt=0, le=1, description="achieved / peak HBM bandwidth, GEMMs")
    kv_mem_eff: float = Field(
        0.80, gt=0, le=1, description="achieved / peak HBM bandwidth, KV reads"
    )
    compute_eff: float = Field(
        0.70, gt=0, le=1, description="achieved / peak dense FLOPS, large GEMMs"
    )
    compute_half_tokens: float = Field(
        64.0, ge=0, description="GEMM rows at which efficiency halves [tokens]"
    )
    attn_eff: float = Field(
        0.50, gt=0, le=1, description="achieved / peak FLOPS in attention kernels"
    )
    prefix_attn_eff: float = Field(
        0.0,
        ge=0,
        le=1,
        description="achieved / peak FLOPS of the attention between a prompt chunk and the "
        "context already cached before it (chunked prefill, prefix caching: a paged kernel "
        "reading the cache, not a fresh prompt's); 0 = attn_eff",
    )
    # comm priors: NCCL all-reduce on 2 x H200 NVLink (data/benchmarks/nccl_h200_x2_micro.csv,
    # bench/nccl_allreduce.py): t = 20 us + S / (450 GB/s x 0.68) within 5% from 4 MiB up
    comm_eff: float = Field(0.68, gt=0, le=1, description="achieved / link bandwidth in all-reduce")
    comm_latency_s: float = Field(20e-6, ge=0, description="fixed cost per all-reduce [s]")
    step_overhead_s: float = Field(0.0, ge=0, description="fixed cost per forward step [s]")
    layer_overhead_s: float = Field(0.0, ge=0, description="fixed cost per layer per step [s]")
    seq_overhead_s: float = Field(0.0, ge=0, description="cost per sequence per step [s]")
    eager_layer_s: float = Field(
        0.0,
        ge=0,
        description="CPU dispatch time per layer of a step that runs eagerly (any step with "
        "prefill tokens; decode-only steps replay a CUDA graph); the GPU time is hidden "
        "behind it when shorter [s]",
    )
    sched_overhead_s: float = Field(
        0.0, ge=0, description="serving scheduler cost per iteration [s]"
    )
    serving_eager_layer_s: float = Field(
        0.0,
        ge=0,
        description="eager_layer_s of the serving host: CPU dispatch per layer of a mixed "
        "prefill + decode iteration as the serving loop runs it (its host CPU, its extra "
        "launches); the serving simulation uses it in place of eager_layer_s, step rows keep "
        "eager_layer_s; 0 = eager_layer_s [s]",
    )
    sched_seq_overhead_s: float = Field(
        0.0,
        ge=0,
        description="serving host cost per scheduled sequence per iteration: building the "
        "step's inputs and book-keeping its tokens, while the GPU waits [s]",
    )
    attn_seq_bw_bytes_s: float = Field(
        0.0,
        ge=0,
        description="KV bandwidth of one attention program (one sequence x KV head, or one "
        "split of it): the longest decoding sequence's excess over the batch mean costs "
        "layers x excess x bytes / this (a batch of mixed lengths waits for its longest "
        "sequence); 0 = a kernel that balances the work (no such cost) [B/s]",
    )
    attn_split_items: float = Field(
        528.0,
        ge=1,
        description="work items (decoding sequences x KV heads per GPU) below which the "
        "attention kernel splits each sequence: splits = max(1, this / items); used with "
        "attn_seq_bw_bytes_s",
    )
    moe_imbalance: float = Field(
        0.0,
        ge=0,
        le=4,
        description="expert-parallel routing skew of decode tokens: the busiest EP GPU's routed "
        "tokens are the mean m x (1 + skew) plus the multinomial excess sqrt(2 ln ep x m) "
        "(which alone is uniform routing, the prior 0); skew = this for a step's decode tokens, "
        "moe_imbalance_prompt for its prompt tokens (weighted by their counts); fitted per "
        "framework on the expert-parallel rows (calibration.ep_fit; free, it goes to its bound "
        "4, a stand-in for costs the step lacks: docs/formulas.md 5b)",
    )
    moe_imbalance_prompt: float = Field(
        0.0,
        ge=0,
        le=4,
        description="the routing skew of a step's prompt tokens (moe_imbalance: its decode "
        "tokens): a prompt step routes thousands of tokens a GPU, whose experts' popularity "
        "averages out (LMSYS large-scale EP blog, 2025-05-05: default vs perfectly balanced "
        "experts 50,302 vs 59,337 prefill tok/s a node, 16,384 tokens a GPU, EP32); fitted "
        "beside moe_imbalance (calibration.ep_fit); the prior 0",
    )

    moe_route_cv2: float = Field(
        0.0,
        ge=0,
        le=8,
        description="routing skew of the expert popularity: the squared coefficient of "
        "variation of the experts' per-token hit rates (Gamma-distributed); a step reads "
        "E (1 - (1 + this x lambda x T)^(-1/this)) distinct experts, lambda = -ln(1 - k/E), "
        "instead of uniform routing's E (1 - (1 - k/E)^T) (the prior 0; "
        "planner.engine.routing)",
    )

    adp_prompt_imbalance: float = Field(
        0.0,
        ge=0,
        le=1,
        description="attention data-parallel: share of a step's prompt work that stays on the "
        "rank owning the request (1: every rank waits for the one running a prompt chunk, the "
        "engines' default scheduling; 0, the prior: prompt chunks balanced over the ranks, as "
        "TensorRT-LLM's attention_dp_config.enable_balance that InferenceX's DEP runs set); "
        "fitted per framework on the expert-parallel / attention-DP rows",
    )

    def with_(self, **kw: float) -> EfficiencyParams:
        return self.model_copy(update=kw)


PRIOR = EfficiencyParams()
