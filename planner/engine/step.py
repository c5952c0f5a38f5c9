"""Per-step time of one replica: roofline x efficiency, with a full breakdown.

One forward step ("iteration") processes ``new_tokens`` tokens of ``num_seqs``
sequences (prefill chunks and/or one token per decoding sequence). Its time is

``t = max(t_gemm_mem, t_gemm_comp) + max(t_attn_mem, t_attn_comp) + t_comm + t_overhead``

* GEMMs (all linear layers): bytes = weights touched (MoE: expected distinct
  experts hit by ``new_tokens * top_k`` uniform picks) + GEMM activations in and
  out; FLOPs = 2 x active matmul parameters x tokens (+ lm head on the tokens that
  need logits only).
* Attention: bytes = KV read (each sequence's context, once per layer; an MLA verify step
  as often as the engine's kernel streams it, :mod:`planner.engine.spec_kv`) + KV write
  (new tokens); FLOPs = 4 x heads x head_dim x query-key pairs (QK^T and PV). MLA
  (DeepSeek-V2/V3) decodes in the absorbed form: a decode query's pairs cost
  ``2 x heads x (2 x kv_lora_rank + qk_rope_head_dim)`` FLOPs (scores and values on the
  latent), its prompt chunks the ``2 x heads x (qk_head_dim + v_head_dim)`` of the expanded
  form (:func:`mla_decode_flops_per_pair`).
* Memory time uses the peak bandwidth x ``mem_eff``; compute time uses the dense
  peak of the precision's compute dtype x ``compute_eff * T / (T + compute_half_tokens)``
  (a GEMM with few rows cannot fill the tensor cores; EP expert GEMMs: their routed rows).
* TP: two all-reduces per layer of ``new_tokens * hidden * 2`` bytes, ring cost
  ``2 (tp-1)/tp * bytes / (link_bw * comm_eff) + comm_latency_s``.
* Overheads: ``step_overhead_s + layer_overhead_s * layers + seq_overhead_s * num_seqs``.

All efficiencies and overheads live in :class:`EfficiencyParams`; their defaults are
priors and :mod:`planner.calibration` replaces them with fitted values. Functions are
numpy-vectorized: every count may be an array and the result broadcasts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from functools import cached_property

import numpy as np

from planner.catalog.catalog import Catalog, check_layout, compute_dtype_for, load_catalog
from planner.catalog.efficiency import PRIOR, EfficiencyParams
from planner.catalog.layout import Layout, check_for_model, layout_of
from planner.catalog.records import Accelerator, ModelArch, Precision
from planner.engine import _scalar, adp, gemm_width, mla, moe_floor, pipeline, route_cv2, routing
from planner.engine.adp import busiest_rank_extra, prompt_share
from planner.engine.ep_terms import as_expert_parallel as _as_expert_parallel
from planner.engine.ep_terms import link_bytes_s as _link_bytes_s
from planner.engine.memory import (
    _bits,
    dense_layer_bytes_per_gpu,
    kv_layer_bytes_per_token,
)
from planner.engine.params import param_counts
from planner.engine.parts import mla_decode_flops_per_pair, unquantized_attention
from planner.engine.speculative import DraftCost


@dataclass(frozen=True)
class StepBreakdown:
    """Time and traffic of one step; fields broadcast like the inputs.

    Bytes and FLOPs are per GPU (the busiest pipeline stage counts whole).
    """

    time_s: np.ndarray | float
    t_gemm_s: np.ndarray | float
    t_attn_s: np.ndarray | float
    t_comm_s: np.ndarray | float
    t_overhead_s: np.ndarray | float
    weight_bytes: np.ndarray | float
    kv_read_bytes: np.ndarray | float
    kv_write_bytes: np.ndarray | float
    activation_bytes: np.ndarray | float
    matmul_flops: np.ndarray | float
    attention_flops: np.ndarray | float
    comm_bytes: np.ndarray | float
    gemm_memory_bound: np.ndarray | bool
    attn_memory_bound: np.ndarray | bool
    t_draft_s: np.ndarray | float = 0.0  # speculative decoding's draft passes (in time_s)

    @property
    def bound(self):
        """Dominant term: 'memory', 'compute', 'communication' or 'overhead' (scalar steps)."""
        gemm_mem = np.where(self.gemm_memory_bound, self.t_gemm_s, 0.0) + np.where(
            self.attn_memory_bound, self.t_attn_s, 0.0
        )
        gemm_comp = (self.t_gemm_s + self.t_attn_s) - gemm_mem
        terms = np.stack(np.broadcast_arrays(gemm_mem, gemm_comp, self.t_comm_s, self.t_overhead_s))
        names = np.array(["memory", "compute", "communication", "overhead"])
        out = names[np.argmax(terms, axis=0)]
        return str(out) if out.ndim == 0 else out

    def as_dict(self) -> dict:
        def conv(v):
            a = np.asarray(v)
            return a.item() if a.ndim == 0 else a.tolist()

        d = {f.name: conv(getattr(self, f.name)) for f in fields(self)}
        d["bound"] = self.bound if isinstance(self.bound, str) else self.bound.tolist()
        return d


@dataclass(frozen=True)
class StepModel:
    """Precomputed per-step coefficients of one (model, gpu, precision, kv, tp, pp).

    Build it once with :func:`step_model`, then call :meth:`step` many times (the
    serving simulator does, once per iteration).
    """

    model: ModelArch
    gpu: Accelerator
    precision: Precision
    kv_bits: float
    tp: int
    pp: int
    params: EfficiencyParams
    # coefficients
    bw_bytes_s: float
    peak_flops: float
    layers: int  # layers on the busiest stage
    layers_full: float
    layers_sw: float
    window: float
    dense_weight_bytes: float  # weights always read per step, per GPU
    expert_bytes: float  # one expert, all MoE layers of the stage, per GPU
    num_experts: int
    top_k: int
    lm_head_bytes: float
    matmul_flops_per_token: float  # excluding lm head, per GPU
    lm_head_flops_per_logit: float
    act_bytes_per_token: float
    kv_bytes_per_token_layer: float
    attn_flops_per_pair_layer: float
    comm_bytes_per_token: float
    link_bytes_s: float
    # expert parallel / attention data-parallel (Layout); the defaults are a plain TP x PP group
    ep: int = 1  # expert-parallel groups: each GPU holds num_experts / ep routed experts
    attention_dp: int = 1  # attention ranks: each runs 1/attention_dp of the sequences
    moe_tp: int = 0  # tensor split of each expert (0: tp)
    expert_flops_per_routed_token: float = 0.0  # per GPU, all MoE layers (EP layouts only)
    comm_ring: float = -1.0  # ring factor of comm_bytes_per_token (-1: 2 (tp-1)/tp)
    comm_collectives: float = -1.0  # collectives per step on the busiest stage (-1: 2 x layers)
    layout_label: str = ""
    # unquantized linears (planner.engine.parts): their extra FLOPs at peak_flops per token
    matmul_slow_flops_per_token: float = 0.0
    adp_balanced: bool = False  # the engine balances prompt work over the attention-DP ranks
    # speculative decoding: K draft tokens verified per decoding sequence, and the drafter
    spec_tokens: int = 0
    draft: DraftCost | None = None
    spec_graph_max: float = 0.0  # verify steps of more sequences run eager (0: no limit)
    spec_kv_passes: float = 1.0  # MLA KV reads of a verify step (planner.engine.spec_kv)
    # MLA decode in the absorbed form: FLOPs per decode query-key pair per layer (0: not MLA)
    attn_flops_per_decode_pair_layer: float = 0.0
    mla_decode_flops_s: float = 0.0  # their achieved rate (planner.engine.mla) [FLOP/s]
    graph_sizes: tuple = ()  # CUDA-graph batches a decode step pads to (adp.graph_padded)
    # published MoE layer timing of this shape: ((tokens, seconds), ...) and the MoE layers
    # of the stage it applies to (planner.engine.moe_floor; () : no floor)
    moe_kernel_points: tuple = ()
    moe_kernel_layers: float = 0.0
    # the decode tokens' routing skew is at most this published value (planner.engine.skew_cap;
    # inf: the fitted ``moe_imbalance`` as it is)
    decode_skew_cap: float = math.inf
    # published expert-popularity skew (planner.engine.route_cv2): Gamma cv2 floor, log-normal
    route_cv2_min: float = 0.0
    route_ln_s2: float = 0.0
    # the GEMM time's factor for this per-GPU shard width: ((log tokens), (factors)) of
    # planner.engine.gemm_width (() : none)
    gemm_width_points: tuple = ()
    # an engine MoE backend's published surplus, all MoE layers of the stage (moe_backend) [s]
    moe_backend_s: float = 0.0
    # pipelined pipeline parallelism (planner.engine.pipeline): micro-batches the engine keeps
    # in flight over the ``pp`` stages (1: one, the stages run one after the other), and the
    # stage-to-stage send of one token's activations [s / token]
    pp_micro_batches: int = 1
    pp_send_s_per_token: float = 0.0

    @property
    def local_experts(self) -> float:
        """Routed-expert slots per GPU per MoE layer: ``num_experts / ep``, rounded up where
        ``ep`` does not divide the experts (redundant slots, :func:`adp.expert_slots_per_rank`)."""
        return float(adp.expert_slots_per_rank(self.num_experts, self.ep))

    def expected_experts(self, tokens):
        """Expected distinct experts hit per MoE layer on one GPU by ``tokens`` tokens (of the
        whole replica) choosing top_k each: ``local x (1 - (1 - top_k / E)^tokens)``, or under
        routing skew ``moe_route_cv2`` (:func:`routing.expected_distinct_experts`)."""
        if self.num_experts == 0:
            return 0.0
        if self.route_ln_s2 > 0:
            return routing.lognormal_distinct_experts(
                tokens, self.local_experts, self.num_experts, self.top_k, self.route_ln_s2
            )
        return routing.expected_distinct_experts(
            tokens, self.local_experts, self.num_experts, self.top_k, self.route_cv2
        )

    @property
    def route_cv2(self) -> float:
        """The expert-popularity skew of the step: ``max(moe_route_cv2, route_cv2_min)``."""
        return max(self.params.moe_route_cv2, self.route_cv2_min)

    def routed_tokens_hot(self, tokens, prompt_tokens=0.0):
        """Routed tokens of the busiest expert-parallel GPU per MoE layer [tokens]: the mean
        ``m = tokens x top_k / ep`` times ``1 + skew`` plus the multinomial excess of the
        largest of ``ep`` shares, ``sqrt(2 ln ep x m)`` (the expected maximum of ``ep``
        near-Poisson counts); the rows of its expert GEMMs, whose compute ramp they set
        (:func:`_ramp`). The skew (fitted) is ``moe_imbalance`` for decode tokens and
        ``moe_imbalance_prompt`` for the ``prompt_tokens`` among ``tokens``, weighted by
        their counts. Only for EP layouts (``ep > 1``)."""
        t = np.asarray(tokens, dtype=float)
        mean = t * self.top_k / self.ep
        z = math.sqrt(2.0 * math.log(self.ep)) if self.ep > 1 else 0.0
        p = self.params
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(t > 0, np.asarray(prompt_tokens, float) / t, 0.0)
        dec = min(p.moe_imbalance, self.decode_skew_cap)
        skew = dec + (p.moe_imbalance_prompt - dec) * share
        return mean * (1.0 + skew) + z * np.sqrt(mean)

    @staticmethod
    def decode_pairs(kv_read_tokens_full, attn_pairs_full, attn_pairs_prefix=0.0, spec_tokens=0):
        """Query-key pairs of a full-attention layer that an MLA engine runs in the absorbed
        (decode) form [pairs]: each sequence's context read once per query it decodes,
        ``kv_read_tokens_full x (1 + spec_tokens)``, capped by the step's pairs outside the
        prompt-chunk prefixes. Exact for decode-only steps (a decoding sequence's pairs are
        its context); a prompt chunk of n tokens after p cached ones adds its p + n reads,
        about 1/n of its ``n p + n (n + 1) / 2`` pairs (engines run it expanded)."""
        kv = np.asarray(kv_read_tokens_full, float) * (1.0 + spec_tokens)
        cap = np.maximum(
            np.asarray(attn_pairs_full, float) - np.asarray(attn_pairs_prefix, float), 0.0
        )
        return np.minimum(np.maximum(kv, 0.0), cap)

    def step(
        self,
        new_tokens,
        num_seqs,
        num_logits,
        kv_read_tokens_full,
        attn_pairs_full,
        kv_read_tokens_sw=0.0,
        attn_pairs_sw=0.0,
        attn_pairs_prefix=0.0,
    ) -> StepBreakdown:
        """Breakdown of one step (inputs broadcast as numpy arrays).

        Parameters
        ----------
        new_tokens : tokens processed this step [tokens]
        num_seqs : sequences in the step
        num_logits : tokens whose logits are computed (decode tokens + last prompt tokens)
        kv_read_tokens_full : sum over sequences of tokens attended in a full-attention layer
        attn_pairs_full : sum over sequences of query-key pairs in a full-attention layer
        kv_read_tokens_sw, attn_pairs_sw : the same for sliding-window layers (window-capped)
        attn_pairs_prefix : the part of ``attn_pairs_full`` between prompt chunks and the
            context cached before them (at ``prefix_attn_eff``)
        """
        if self.pp > 1 and self.pp_micro_batches > 1:  # stages at work at once: pipeline.py
            return pipeline.pipelined_step(
                self,
                new_tokens,
                num_seqs,
                num_logits,
                kv_read_tokens_full,
                attn_pairs_full,
                kv_read_tokens_sw,
                attn_pairs_sw,
                attn_pairs_prefix,
            )
        p = self.params
        dp = self.attention_dp  # each attention rank runs 1/dp of the tokens and sequences
        a = (new_tokens, num_seqs, num_logits, kv_read_tokens_full, attn_pairs_full)
        a = adp.graph_padded(self.graph_sizes, dp, *a, kv_read_tokens_sw, attn_pairs_sw)
        T, num_seqs, num_logits, kv_read_tokens_full, attn_pairs_full = a[:5]
        kv_read_tokens_sw, attn_pairs_sw = a[5:]
        T0, n_dec = T, np.asarray(num_logits, dtype=float)
        u = prompt_share(self.adp_balanced, p)  # the busiest attention-DP rank's prompt work
        dT, X_hot = busiest_rank_extra(dp, u, T, num_seqs, kv_read_tokens_full, attn_pairs_full)
        if self.spec_tokens:  # verify K + 1 positions per decoding sequence (one per logit)
            K = float(self.spec_tokens)
            T = T + K * n_dec
            num_logits = n_dec + K * n_dec
            attn_pairs_full = np.asarray(attn_pairs_full, float) + K * np.asarray(
                kv_read_tokens_full, float
            )
            attn_pairs_sw = np.asarray(attn_pairs_sw, float) + K * np.asarray(
                kv_read_tokens_sw, float
            )
        # GEMMs
        experts = self.expected_experts(T) * self.expert_bytes
        w_bytes = self.dense_weight_bytes + experts + self.lm_head_bytes
        Ta = T + dT  # the busiest attention rank's tokens x dp (T when dp = 1)
        act = self.act_bytes_per_token / dp * Ta
        mm_flops = (
            self.matmul_flops_per_token * Ta
            + self.lm_head_flops_per_logit / dp * np.asarray(num_logits, float)
        )
        t_gm = (w_bytes + act) / (self.bw_bytes_s * p.mem_eff)
        eff_c = _ramp(p.compute_eff, Ta, p.compute_half_tokens * dp)
        with np.errstate(divide="ignore", invalid="ignore"):
            mm_t = mm_flops + self.matmul_slow_flops_per_token * Ta  # as FLOPs at peak_flops
            t_gc = np.where(T > 0, mm_t / (self.peak_flops * np.maximum(eff_c, 1e-12)), 0.0)
            if self.expert_flops_per_routed_token:  # EP: the busiest GPU's expert GEMMs, whose
                P = np.maximum(T0 - np.asarray(num_seqs, float), 0.0)  # prompt tokens
                hd = self.routed_tokens_hot(T, P) * dp  # rows: its routed tokens (ramp)
                e_flops = self.expert_flops_per_routed_token * (hd / dp)
                eff_e = _ramp(p.compute_eff, hd, p.compute_half_tokens * dp)
                t_gc = t_gc + np.where(hd > 0, e_flops / (self.peak_flops * eff_e), 0.0)
                mm_flops = mm_flops + e_flops
        fw = 1.0  # a narrow shard's lower GEMM rate (planner.engine.gemm_width)
        if self.gemm_width_points:
            fw = gemm_width.factor(self.gemm_width_points, Ta)
            if self.gemm_width_points[2]:  # on the compute term only
                t_gc, fw = t_gc * fw, 1.0
        t_gemm = np.maximum(t_gm, t_gc) * fw
        if self.moe_kernel_points:  # the routed experts no faster than their published kernel
            t_dense = (self.dense_weight_bytes + self.lm_head_bytes + act) / (
                self.bw_bytes_s * p.mem_eff
            )
            t_moe = self.moe_kernel_layers * moe_floor.layer_time(self.moe_kernel_points, T)
            t_gemm = np.maximum(t_gemm, t_dense + t_moe)
        # attention
        kv_tok = self.layers_full * np.asarray(
            kv_read_tokens_full, float
        ) + self.layers_sw * np.asarray(kv_read_tokens_sw, float)
        kvb = self.kv_bytes_per_token_layer / dp
        kv_read = kvb * kv_tok
        kv_write = kvb * (self.layers_full + self.layers_sw) * Ta
        pairs = self.layers_full * (
            np.asarray(attn_pairs_full, float) + X_hot
        ) + self.layers_sw * np.asarray(attn_pairs_sw, float)
        a_flops = self.attn_flops_per_pair_layer / dp * pairs
        a_dec = None  # MLA: the absorbed decode FLOPs, at their own kernel's rate
        if self.attn_flops_per_decode_pair_layer:  # MLA: decode queries run absorbed
            a_pairs = self.decode_pairs(
                kv_read_tokens_full, attn_pairs_full, attn_pairs_prefix, self.spec_tokens
            )
            a_dec = self.attn_flops_per_decode_pair_layer / dp * self.layers_full * a_pairs
            if self.spec_kv_passes != 1.0:  # the verify kernel re-reads each decoder's context
                x = (self.spec_kv_passes - 1.0) * (a_pairs / (1.0 + self.spec_tokens))
                kv_read = kv_read + kvb * self.layers_full * x
            a_flops = (
                self.attn_flops_per_pair_layer
                / dp
                * (
                    self.layers_full * (np.asarray(attn_pairs_full, float) + X_hot - a_pairs)
                    + self.layers_sw * np.asarray(attn_pairs_sw, float)
                )
                + a_dec
            )
        afp = self.attn_flops_per_pair_layer / dp
        pf_flops = afp * self.layers_full * np.asarray(attn_pairs_prefix, float)
        t_am = (kv_read + kv_write) / (self.bw_bytes_s * p.kv_mem_eff)
        if a_dec is None:
            t_ac = (a_flops - pf_flops) / (self.peak_flops * p.attn_eff) + pf_flops / (
                self.peak_flops * (p.prefix_attn_eff or p.attn_eff)
            )
        else:
            t_ac = mla.attn_compute_s(self, a_flops, a_dec, pf_flops)
        t_attn = np.maximum(t_am, t_ac)
        # communication
        if self.has_comm:
            comm_bytes = self.comm_bytes_per_token * T
            t_comm = (
                self.ring_factor * comm_bytes / (self.link_bytes_s * p.comm_eff)
                + self.collectives * p.comm_latency_s
            )
        else:
            comm_bytes = 0.0 * T
            t_comm = 0.0 * T
        t_over = (
            p.step_overhead_s
            + p.layer_overhead_s * self.layers
            + self.moe_backend_s
            + p.seq_overhead_s / dp * np.asarray(num_seqs, float)
        )
        t_over = t_over + 0.0 * T
        gpu = t_gemm + t_attn + t_comm
        if p.eager_layer_s:
            n_seqs = np.asarray(num_seqs, float)
            eager = np.asarray(n_seqs < T0)
            if self.spec_graph_max:  # beyond the engine's CUDA-graph batch limit
                eager = eager | (n_seqs > self.spec_graph_max)
            gpu = np.where(eager, _soft_max(gpu, p.eager_layer_s * self.layers), gpu)
            t_over = t_over + (gpu - (t_gemm + t_attn + t_comm))
        if self.pp > 1:  # one step traverses every stage in turn: each term counts pp times
            t_gemm, t_attn, t_comm, t_over = (x * self.pp for x in (t_gemm, t_attn, t_comm, t_over))
        time = t_gemm + t_attn + t_comm + t_over
        t_draft = 0.0 * T
        if self.spec_tokens:
            t_draft = self.draft_time(T, n_dec, kv_read_tokens_full)
            time = time + t_draft
        return StepBreakdown(
            time_s=_s(time),
            t_gemm_s=_s(t_gemm),
            t_attn_s=_s(t_attn),
            t_comm_s=_s(t_comm),
            t_overhead_s=_s(t_over),
            weight_bytes=_s(w_bytes + 0.0 * T),
            kv_read_bytes=_s(kv_read + 0.0 * T),
            kv_write_bytes=_s(kv_write),
            activation_bytes=_s(act),
            matmul_flops=_s(mm_flops),
            attention_flops=_s(a_flops + 0.0 * T),
            comm_bytes=_s(comm_bytes),
            gemm_memory_bound=_s(t_gm >= t_gc),
            attn_memory_bound=_s(t_am >= t_ac),
            t_draft_s=_s(t_draft),
        )

    def draft_time(self, new_tokens, num_decode, kv_read_tokens_full):
        """Time of the draft passes of one speculative step [s] (0 without them): one pass over
        ``new_tokens`` (prompt chunks and the K + 1 verified positions per decoder: SGLang's
        draft-extend graph runs ``speculative_num_steps + 1`` tokens per sequence,
        eagle_draft_extend_cuda_graph_runner.py @ 212c357a), then K - 1 over the ``num_decode``
        decoders; each: max(weights + experts + activations at memory bandwidth, FLOPs at the
        GEMM efficiency) + the draft KV of each context + collectives + layer_overhead_s x
        draft layers (:class:`planner.engine.speculative.DraftCost`)."""
        d = self.draft
        out = 0.0 * np.asarray(new_tokens, float)
        if not self.spec_tokens or d is None:
            return _s(out)
        p = self.params
        kv = np.asarray(kv_read_tokens_full, float)
        for n, reps in (
            (np.asarray(new_tokens, float), 1.0),
            (np.asarray(num_decode, float), self.spec_tokens - 1.0),
        ):
            if reps <= 0:
                continue
            ex = self.expected_experts(n) * d.expert_bytes
            t_gm = (d.weight_bytes + ex + d.act_bytes_per_token * n) / (self.bw_bytes_s * p.mem_eff)
            eff_c = _ramp(p.compute_eff, n, p.compute_half_tokens * self.attention_dp)
            with np.errstate(divide="ignore", invalid="ignore"):
                t_gc = np.where(
                    n > 0,
                    d.matmul_flops_per_token * n / (self.peak_flops * np.maximum(eff_c, 1e-12)),
                    0.0,
                )
            t = np.maximum(t_gm, t_gc) + d.kv_bytes_per_token * (kv + n) / (
                self.bw_bytes_s * p.kv_mem_eff
            )
            if self.has_comm:
                t = t + self.ring_factor * d.comm_bytes_per_token * n / (
                    self.link_bytes_s * p.comm_eff
                )
                t = t + d.collectives * p.comm_latency_s
            t = t + p.layer_overhead_s * d.layers
            out = out + np.where(n > 0, reps * t, 0.0)
        return _s(out)

    # ---- communication of the layout ------------------------------------------------
    @property
    def has_comm(self) -> bool:
        """True when a step communicates (TP > 1, or an EP / attention-DP layout)."""
        return self.comm_ring > 0 if self.comm_ring >= 0 else self.tp > 1

    @property
    def ring_factor(self) -> float:
        """Multiplier of ``comm_bytes_per_token``: ``2 (tp-1)/tp`` for a TP ring all-reduce;
        1 where ``step_model`` folded each collective's own factor into the bytes."""
        return self.comm_ring if self.comm_ring >= 0 else 2 * (self.tp - 1) / self.tp

    @property
    def collectives(self) -> float:
        """Collectives per step on the busiest stage (each costs ``comm_latency_s``)."""
        return self.comm_collectives if self.comm_collectives >= 0 else 2 * self.layers

    # ---- the hot scalar path of :meth:`step` (plain floats, no numpy) ------------------
    @cached_property
    def _coeffs(self) -> tuple[float, ...]:
        """Coefficients of :func:`planner.engine._scalar.step_time_scalar` (133 floats): the
        step's constants, with the products that do not depend on its counts done once."""
        p = self.params
        ne = self.num_experts
        dp = self.attention_dp
        d = self.draft
        z = math.sqrt(2.0 * math.log(self.ep)) if self.ep > 1 else 0.0
        return tuple(
            map(
                float,
                (
                    self.local_experts,
                    (1.0 - self.top_k / ne) if ne else 0.0,
                    self.dense_weight_bytes,
                    self.expert_bytes,
                    self.lm_head_bytes,
                    self.bw_bytes_s * p.mem_eff,
                    self.act_bytes_per_token / dp,
                    p.compute_eff,
                    p.compute_half_tokens * dp,
                    self.matmul_flops_per_token + self.matmul_slow_flops_per_token,
                    self.lm_head_flops_per_logit / dp,
                    self.peak_flops,
                    self.kv_bytes_per_token_layer / dp,
                    self.layers_full,
                    self.layers_sw,
                    self.layers_full + self.layers_sw,
                    self.bw_bytes_s * p.kv_mem_eff,
                    self.attn_flops_per_pair_layer / dp,
                    self.peak_flops * p.attn_eff,
                    self.peak_flops * (p.prefix_attn_eff or p.attn_eff),
                    self.has_comm,
                    self.ring_factor,
                    self.comm_bytes_per_token,
                    self.link_bytes_s * p.comm_eff,
                    self.collectives * p.comm_latency_s,
                    p.eager_layer_s,
                    _scalar.EAGER_K,
                    (p.eager_layer_s * self.layers) ** _scalar.EAGER_K,
                    p.step_overhead_s + p.layer_overhead_s * self.layers + self.moe_backend_s,
                    p.seq_overhead_s / dp,
                    self.pp,
                    self.expert_flops_per_routed_token,
                    self.top_k / self.ep,
                    min(p.moe_imbalance, self.decode_skew_cap),
                    z,
                    # speculative decoding (0: off): K, then the draft pass terms
                    self.spec_tokens,
                    *(
                        (
                            d.weight_bytes,
                            d.expert_bytes,
                            d.act_bytes_per_token,
                            d.matmul_flops_per_token,
                            d.kv_bytes_per_token,
                            d.comm_bytes_per_token,
                            d.collectives * p.comm_latency_s,
                            p.layer_overhead_s * d.layers,
                        )
                        if d is not None
                        else (0.0,) * 8
                    ),
                    self.spec_graph_max,
                    self.attn_flops_per_decode_pair_layer / dp,
                    dp,
                    prompt_share(self.adp_balanced, p),
                    *routing.skew_coeffs(ne, self.top_k, self.route_cv2, self.route_ln_s2),
                    self.mla_decode_flops_s or self.peak_flops * p.attn_eff,
                    self.spec_kv_passes - 1.0,
                    *adp.graph_slots(self.graph_sizes),  # decode-graph padding
                    *moe_floor.slots(
                        self.moe_kernel_points, self.moe_kernel_layers
                    ),  # MoE kernel floor
                    p.moe_imbalance_prompt,  # the routing skew of prompt tokens
                    *gemm_width.slots(self.gemm_width_points),  # c[104:130]: GEMM width factor
                    # c[130:133]: pipelined PP (planner.engine.pipeline; 1: stage after stage)
                    self.pp_micro_batches if self.pp > 1 else 1,
                    self.pp_send_s_per_token,
                    p.comm_latency_s,
                ),
            )
        )

    @cached_property
    def _straggler_coeffs(self) -> tuple[float, float]:
        """(seconds per excess context token of one attention program over all layers and
        stages, split work items per decoding sequence) for
        :func:`planner.engine._scalar.straggler_time_scalar`."""
        p = self.params
        heads = max(1, math.ceil(self.model.num_key_value_heads / self.tp))
        if not p.attn_seq_bw_bytes_s or self.model.is_mla:
            return (0.0, 1.0)
        per_head = self.kv_bytes_per_token_layer / heads
        per_tok = (self.layers_full + self.layers_sw) * per_head / p.attn_seq_bw_bytes_s
        return (float(per_tok * self.pp), float(p.attn_split_items / heads))

    def straggler_time(self, n_decode, max_ctx, sum_ctx):
        """Extra attention time [s] when the decoding sequences differ in length.

        An attention kernel that gives each (sequence, KV head) one program, split only when
        the batch has few work items, waits for the longest sequence: time grows by
        ``layers x (max_ctx - sum_ctx / n_decode) x bytes per token and KV head / (splits x
        attn_seq_bw_bytes_s)`` with ``splits = max(1, attn_split_items / (n_decode x KV
        heads per GPU))``. Zero for equal lengths, and when ``attn_seq_bw_bytes_s`` is 0
        (a kernel that balances the work). The scalar form is
        :func:`planner.engine._scalar.straggler_time_scalar`.

        Parameters
        ----------
        n_decode : decoding sequences in the step
        max_ctx : the longest decoding sequence's context [tokens]
        sum_ctx : the decoding sequences' contexts, summed [tokens]
        """
        per_tok, items = self._straggler_coeffs
        n = np.asarray(n_decode, float)
        with np.errstate(divide="ignore", invalid="ignore"):
            excess = np.where(n > 0, np.asarray(max_ctx, float) - np.asarray(sum_ctx, float) / n, 0)
            splits = np.maximum(1.0, np.where(n > 0, items / n, 1.0))
        return _s(per_tok * np.maximum(excess, 0.0) / splits)

    def step_time(
        self,
        new_tokens: float,
        num_seqs: float,
        num_logits: float,
        kv_full: float,
        pairs_full: float,
        kv_sw: float = 0.0,
        pairs_sw: float = 0.0,
        pairs_prefix: float = 0.0,
    ) -> float:
        """Step time [s] with plain floats (no numpy), equal to ``step(...).time_s``.

        The simulator's event loop (compiled), the steady state and the calibration fit call
        it millions of times; the formula is :func:`planner.engine._scalar.step_time_scalar`
        (``tests/test_engine_step.py`` checks the two forms agree)."""
        return _scalar.step_time_scalar(
            self._coeffs,
            float(new_tokens),
            float(num_seqs),
            float(num_logits),
            float(kv_full),
            float(pairs_full),
            float(kv_sw),
            float(pairs_sw),
            float(pairs_prefix),
        )


def _ramp(eff, rows, half):
    """GEMM efficiency at ``rows`` rows, ``eff x rows / (rows + half)`` (few rows: idle cores)."""
    return eff * rows / (rows + half) if half else eff


def _soft_max(a, b):
    return (np.asarray(a) ** _scalar.EAGER_K + np.asarray(b) ** _scalar.EAGER_K) ** (
        1.0 / _scalar.EAGER_K
    )


def _s(x):
    a = np.asarray(x)
    return a.item() if a.ndim == 0 else a


def _route_skew(m, k) -> dict:
    a, b = route_cv2.published_skew(m.num_experts, k) if m.is_moe else (0.0, 0.0)
    return {"route_cv2_min": a, "route_ln_s2": b}


def step_model(
    model: ModelArch | str,
    gpu: Accelerator | str,
    precision: Precision | str = "bf16",
    kv_precision: str | None = None,
    tp: int = 1,
    pp: int = 1,
    params: EfficiencyParams | None = None,
    catalog: Catalog | None = None,
    layout: Layout | None = None,
    pipelined: bool | None = None,
) -> StepModel:
    """Precompute the per-step coefficients of a replica (see module docstring).

    ``pipelined``: with ``pp > 1``, the engine keeps ``pp`` micro-batches in flight, one per
    stage (:mod:`planner.engine.pipeline`); None: :data:`planner.engine.pipeline.PIPELINED`.

    ``layout`` (:class:`planner.catalog.layout.Layout`) replaces ``tp`` / ``pp`` for expert
    parallel and attention data-parallel layouts; its terms are in docs/formulas.md
    ("Expert parallel and attention data-parallel")."""
    cat = catalog or load_catalog()
    m, g, prec, kv, _ = cat.resolve(model, gpu, precision, None, kv_precision)
    if layout is not None and not layout.is_plain:
        check_for_model(m, layout)
        plain = step_model(m, g, prec, kv.id, layout.tp, layout.pp, params, cat, None, pipelined)
        return _as_expert_parallel(plain, layout)
    if layout is not None:
        tp, pp = layout.tp, layout.pp
    tp, pp = check_layout(m, tp, pp)
    dtype = compute_dtype_for(prec, g)
    peak = g.peak_tflops(dtype) * 1e12
    bw = g.mem_bw_bytes_s
    params = params or PRIOR
    pc = param_counts(m)
    L = m.num_hidden_layers
    Ls = math.ceil(L / pp)
    frac = Ls / L
    b_exp = _bits(prec, "experts", m, g.arch) / 8
    b16 = 2.0
    dense_w = dense_layer_bytes_per_gpu(m, prec, tp, pc, g.arch) * frac
    expert_bytes = pc.expert_one / tp * b_exp * (pc.num_moe_layers * frac)
    lm_head_params = pc.lm_head or pc.embedding  # tied: the embedding matrix is the head
    lm_bytes = lm_head_params / tp * b16  # the lm head stays 16-bit under every format
    k = m.num_experts_per_tok or 0
    active_layer_mm = (pc.attention + pc.mlp_dense + pc.shared_experts + pc.router) + (
        pc.num_moe_layers * k * pc.expert_one
    )
    mm_per_token = 2.0 * active_layer_mm / tp * frac
    lm_flops = 2.0 * lm_head_params / tp
    h = m.hidden_size
    qkv = (m.num_attention_heads + 2 * m.num_key_value_heads) * m.head_dim
    inter = m.intermediate_size or 0
    if m.is_moe:
        inter = (m.moe_intermediate_size or inter) * (k + m.num_shared_experts)
    # GEMM inputs + outputs per layer per token (16-bit activations)
    act_layer = (
        (h + qkv)
        + (m.num_attention_heads * m.head_dim + h)
        + (h + (2 if m.mlp_gated else 1) * inter)
        + (inter + h)
    )
    act_bytes = act_layer / tp * b16 * Ls
    kv_layer = kv_layer_bytes_per_token(m, kv.bits, tp)
    n_sw = m.num_sliding_layers
    qk_dim = m.head_dim
    v_dim = m.v_head_dim or m.head_dim
    heads_per_gpu = m.num_attention_heads / tp
    attn_flops_pair = 2.0 * heads_per_gpu * (qk_dim + v_dim)
    attn_flops_decode = mla_decode_flops_per_pair(m) / tp if m.is_mla else 0.0
    comm_per_token = h * b16 * 2 * Ls  # two all-reduces per layer
    link = _link_bytes_s(g, tp * pp, tp)
    slow_params, a_peak = unquantized_attention(m, prec, g)  # (0, 0): the format's peak
    slow_mm = 2.0 * slow_params / tp * frac * (peak / a_peak - 1.0) if a_peak else 0.0
    return StepModel(
        model=m,
        gpu=g,
        precision=prec,
        kv_bits=kv.bits,
        tp=tp,
        pp=pp,
        params=params,
        bw_bytes_s=bw,
        peak_flops=peak,
        layers=Ls,
        layers_full=(L - n_sw) * frac,
        layers_sw=n_sw * frac,
        window=float(m.sliding_window or 0),
        dense_weight_bytes=dense_w,
        expert_bytes=expert_bytes,
        num_experts=m.num_experts if m.is_moe else 0,
        top_k=k,
        **_route_skew(m, k),
        lm_head_bytes=lm_bytes,
        matmul_flops_per_token=mm_per_token,
        lm_head_flops_per_logit=lm_flops,
        act_bytes_per_token=act_bytes,
        kv_bytes_per_token_layer=kv_layer,
        attn_flops_per_pair_layer=attn_flops_pair,
        attn_flops_per_decode_pair_layer=attn_flops_decode,
        mla_decode_flops_s=mla.mla_decode_flops_s(g) if m.is_mla else 0.0,
        comm_bytes_per_token=comm_per_token,
        link_bytes_s=link if link > 0 else 1.0,
        layout_label=f"TP{tp}" + (f" PP{pp}" if pp > 1 else ""),
        matmul_slow_flops_per_token=slow_mm,
        gemm_width_points=gemm_width.coeffs(m, g, tp, pc.attention + pc.mlp_dense, dtype),
        **pipeline.coefficients(g, layout_of(tp, pp), h, pipelined),
    )
