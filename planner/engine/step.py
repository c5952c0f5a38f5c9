"""Per-step time of one replica: roofline x efficiency, with a full breakdown.

One forward step ("iteration") processes ``new_tokens`` tokens of ``num_seqs``
sequences (prefill chunks and/or one token per decoding sequence). Its time is

``t = max(t_gemm_mem, t_gemm_comp) + max(t_attn_mem, t_attn_comp) + t_comm + t_overhead``

* GEMMs (all linear layers): bytes = weights touched (MoE: expected distinct
  experts hit by ``new_tokens * top_k`` uniform picks) + GEMM activations in and
  out; FLOPs = 2 x active matmul parameters x tokens (+ lm head on the tokens that
  need logits only).
* Attention: bytes = KV read (each sequence's context, once per layer) + KV write
  (new tokens); FLOPs = 4 x heads x head_dim x query-key pairs (QK^T and PV).
* Memory time uses the peak bandwidth x ``mem_eff``; compute time uses the dense
  peak of the precision's compute dtype x ``compute_eff * T / (T + compute_half_tokens)``
  (a GEMM with few rows cannot fill the tensor cores).
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
from planner.catalog.records import Accelerator, ModelArch, Precision
from planner.engine import _scalar
from planner.engine.memory import (
    _bits,
    dense_layer_bytes_per_gpu,
    kv_layer_bytes_per_token,
    param_counts,
)
from planner.errors import MissingDataError


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

    def expected_experts(self, tokens):
        """Expected distinct experts hit per MoE layer by ``tokens`` tokens choosing top_k each."""
        if self.num_experts == 0:
            return 0.0
        t = np.asarray(tokens, dtype=float)
        return self.num_experts * (1.0 - (1.0 - self.top_k / self.num_experts) ** t)

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
        p = self.params
        T = np.asarray(new_tokens, dtype=float)
        # GEMMs
        experts = self.expected_experts(T) * self.expert_bytes
        w_bytes = self.dense_weight_bytes + experts + self.lm_head_bytes
        act = self.act_bytes_per_token * T
        mm_flops = self.matmul_flops_per_token * T + self.lm_head_flops_per_logit * np.asarray(
            num_logits, float
        )
        t_gm = (w_bytes + act) / (self.bw_bytes_s * p.mem_eff)
        eff_c = (
            p.compute_eff * T / (T + p.compute_half_tokens)
            if p.compute_half_tokens
            else p.compute_eff
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            t_gc = np.where(T > 0, mm_flops / (self.peak_flops * np.maximum(eff_c, 1e-12)), 0.0)
        t_gemm = np.maximum(t_gm, t_gc)
        # attention
        kv_tok = self.layers_full * np.asarray(
            kv_read_tokens_full, float
        ) + self.layers_sw * np.asarray(kv_read_tokens_sw, float)
        kv_read = self.kv_bytes_per_token_layer * kv_tok
        kv_write = self.kv_bytes_per_token_layer * (self.layers_full + self.layers_sw) * T
        pairs = self.layers_full * np.asarray(attn_pairs_full, float) + self.layers_sw * np.asarray(
            attn_pairs_sw, float
        )
        a_flops = self.attn_flops_per_pair_layer * pairs
        pf_flops = (
            self.attn_flops_per_pair_layer * self.layers_full * np.asarray(attn_pairs_prefix, float)
        )
        t_am = (kv_read + kv_write) / (self.bw_bytes_s * p.kv_mem_eff)
        t_ac = (a_flops - pf_flops) / (self.peak_flops * p.attn_eff) + pf_flops / (
            self.peak_flops * (p.prefix_attn_eff or p.attn_eff)
        )
        t_attn = np.maximum(t_am, t_ac)
        # communication
        if self.tp > 1:
            comm_bytes = self.comm_bytes_per_token * T
            n_ar = 2 * self.layers
            t_comm = (2 * (self.tp - 1) / self.tp) * comm_bytes / (
                self.link_bytes_s * p.comm_eff
            ) + n_ar * p.comm_latency_s
        else:
            comm_bytes = 0.0 * T
            t_comm = 0.0 * T
        t_over = (
            p.step_overhead_s
            + p.layer_overhead_s * self.layers
            + p.seq_overhead_s * np.asarray(num_seqs, float)
        )
        t_over = t_over + 0.0 * T
        gpu = t_gemm + t_attn + t_comm
        if p.eager_layer_s:
            eager = np.asarray(np.asarray(num_seqs, float) < T)
            gpu = np.where(eager, _soft_max(gpu, p.eager_layer_s * self.layers), gpu)
            t_over = t_over + (gpu - (t_gemm + t_attn + t_comm))
        if self.pp > 1:  # one step traverses every stage in turn: each term counts pp times
            t_gemm, t_attn, t_comm, t_over = (x * self.pp for x in (t_gemm, t_attn, t_comm, t_over))
        time = t_gemm + t_attn + t_comm + t_over
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
        )

    # ---- the hot scalar path of :meth:`step` (plain floats, no numpy) ------------------
    @cached_property
    def _coeffs(self) -> tuple[float, ...]:
        """Coefficients of :func:`planner.engine._scalar.step_time_scalar` (31 floats): the
        step's constants, with the products that do not depend on its counts done once."""
        p = self.params
        ne = self.num_experts
        return tuple(
            float(x)
            for x in (
                ne,
                (1.0 - self.top_k / ne) if ne else 0.0,
                self.dense_weight_bytes,
                self.expert_bytes,
                self.lm_head_bytes,
                self.bw_bytes_s * p.mem_eff,
                self.act_bytes_per_token,
                p.compute_eff,
                p.compute_half_tokens,
                self.matmul_flops_per_token,
                self.lm_head_flops_per_logit,
                self.peak_flops,
                self.kv_bytes_per_token_layer,
                self.layers_full,
                self.layers_sw,
                self.layers_full + self.layers_sw,
                self.bw_bytes_s * p.kv_mem_eff,
                self.attn_flops_per_pair_layer,
                self.peak_flops * p.attn_eff,
                self.peak_flops * (p.prefix_attn_eff or p.attn_eff),
                self.tp > 1,
                2 * (self.tp - 1) / self.tp,
                self.comm_bytes_per_token,
                self.link_bytes_s * p.comm_eff,
                2 * self.layers * p.comm_latency_s,
                p.eager_layer_s,
                _scalar.EAGER_K,
                (p.eager_layer_s * self.layers) ** _scalar.EAGER_K,
                p.step_overhead_s + p.layer_overhead_s * self.layers,
                p.seq_overhead_s,
                self.pp,
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


def _soft_max(a, b):
    return (np.asarray(a) ** _scalar.EAGER_K + np.asarray(b) ** _scalar.EAGER_K) ** (
        1.0 / _scalar.EAGER_K
    )


def _s(x):
    a = np.asarray(x)
    return a.item() if a.ndim == 0 else a


def step_model(
    model: ModelArch | str,
    gpu: Accelerator | str,
    precision: Precision | str = "bf16",
    kv_precision: str | None = None,
    tp: int = 1,
    pp: int = 1,
    params: EfficiencyParams | None = None,
    catalog: Catalog | None = None,
) -> StepModel:
    """Precompute the per-step coefficients of a replica (see module docstring)."""
    cat = catalog or load_catalog()
    m, g, prec, kv, _ = cat.resolve(model, gpu, precision, None, kv_precision)
    tp, pp = check_layout(m, tp, pp)
    dtype = compute_dtype_for(prec, g)
    peak = g.peak_tflops(dtype) * 1e12
    bw = g.mem_bw_bytes_s
    params = params or PRIOR
    pc = param_counts(m)
    L = m.num_hidden_layers
    Ls = math.ceil(L / pp)
    frac = Ls / L
    b_exp = _bits(prec, "experts", m) / 8
    b16 = 2.0
    dense_w = dense_layer_bytes_per_gpu(m, prec, tp, pc) * frac
    expert_bytes = pc.expert_one / tp * b_exp * (pc.num_moe_layers * frac)
    lm_head_params = (
        pc.lm_head if pc.lm_head else pc.embedding
    )  # tied: the embedding matrix is the head
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
    comm_per_token = h * b16 * 2 * Ls  # two all-reduces per layer
    link = (g.interconnect_gbs_unidir or 0) * 1e9
    if tp > 1 and link <= 0:
        raise MissingDataError(
            f"{g.id}: interconnect bandwidth unknown, so TP={tp} cannot be estimated"
        )
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
        lm_head_bytes=lm_bytes,
        matmul_flops_per_token=mm_per_token,
        lm_head_flops_per_logit=lm_flops,
        act_bytes_per_token=act_bytes,
        kv_bytes_per_token_layer=kv_layer,
        attn_flops_per_pair_layer=attn_flops_pair,
        comm_bytes_per_token=comm_per_token,
        link_bytes_s=link if link > 0 else 1.0,
    )
