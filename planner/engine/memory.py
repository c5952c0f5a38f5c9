"""Weight memory, KV-cache memory and "does it fit" (parameter counts:
:mod:`planner.engine.params`).

All sizes are bytes (decimal GB = 1e9 bytes in reports). Formulas are in
``docs/formulas.md``; the short version:

* Weights: each parameter group at its own precision (quantized linear layers at
  the format's bits per weight including scales; embeddings, norms, biases and
  routers at 16 bit), split across TP (vocabulary-parallel embedding and lm head,
  head-parallel attention, column/row-parallel MLP and experts) and PP (layers).
* KV cache per token and layer: ``2 * n_kv * head_dim * b_kv`` (MHA/GQA),
  ``(kv_lora_rank + qk_rope_head_dim) * b_kv`` (MLA); sliding-window layers
  hold at most ``window`` tokens. Under TP the KV heads split, never below one
  head per GPU; the MLA latent is replicated on every TP rank.
"""

from __future__ import annotations

import math
from contextvars import ContextVar
from dataclasses import asdict, dataclass, replace

import numpy as np

from planner.catalog.catalog import (
    Catalog,
    check_layout,
    compute_dtype_for,
    kv_precision_basis,
    load_catalog,
)
from planner.catalog.layout import Layout, check_for_model, check_framework_layout, layout_of
from planner.catalog.records import Accelerator, Framework, ModelArch, Precision
from planner.engine.params import ParamCounts, param_counts
from planner.errors import PlannerError, check_physical, require_positive
from planner.files import IdentityMemo

BITS_16 = 16.0
#: True: plan_memory skips the suggestions (a search rebuilds a rejection's reason when shown)
DEFER_SUGGESTIONS: ContextVar[bool] = ContextVar("defer_suggestions", default=False)


# --------------------------------------------------------------------------- weights
def _bits(precision: Precision | None, part: str, m: ModelArch, arch: str | None = None) -> float:
    """Bits per weight of one parameter group under a precision.

    ``part``: embedding, lm_head, norms, router (16-bit under every format), experts, or a
    non-expert linear group (attention_in, attention_out, dense_mlp, shared_experts; "linear"
    for any of them). With ``arch`` (the GPU architecture), a published checkpoint of the
    model in this format (:meth:`ModelArch.checkpoint_for`) decides the parts and their bits:
    NVIDIA's NVFP4 DeepSeek-R1 quantizes the MLPs at 4.5 bits and keeps attention bf16.
    Without one, the format's bits on ``arch`` (:func:`bits_on`: fp4 on blackwell
    is NVFP4, 4 + 8/16 = 4.5 bits) unless the model's own release is in the format."""
    if precision is None:
        return BITS_16
    if part in ("embedding", "lm_head", "norms", "router"):
        return BITS_16  # kept at 16 bit by every quantized format in the catalog
    ckpt = m.checkpoint_for(precision.id, arch) if m.checkpoints else None
    if ckpt is not None:
        return ckpt.weight_bits if part in ckpt.quantized else ckpt.other_bits
    parts = precision.quantized_parts
    if m.native_precision == precision.id and m.native_quantized_parts is not None:
        parts = m.native_quantized_parts  # the model's own release (gpt-oss: experts only)
    if parts == "experts_only" and part != "experts":
        return BITS_16
    if m.native_precision == precision.id:
        return precision.weight_bits  # the model's own release (gpt-oss: MXFP4, 4.25 bits)
    return bits_on(precision, arch)  # a vendor quantizer's layout (NVFP4 on blackwell: 4.5)


def bits_on(precision: Precision, arch: str | None) -> float:
    """Bits per weight of a third-party checkpoint on ``arch`` (see :func:`_bits`) [bits]."""
    return next((b for a, b in precision.arch_weight_bits if a == arch), precision.weight_bits)


def attention_out_params(m: ModelArch) -> int:
    """Parameters of the attention output projections (``o_proj`` / ``wo``) of all layers:
    ``heads x v_head_dim x hidden`` per layer (+ its bias). DeepSeek-V3: 128 x 128 x 7168 =
    117,440,512 per layer, 61 layers = 7,163,871,232."""
    v = m.v_head_dim or m.head_dim
    per_layer = m.num_attention_heads * v * m.hidden_size
    per_layer += m.hidden_size if m.attention_out_bias else 0
    return m.num_hidden_layers * per_layer


def dense_layer_bytes_per_gpu(
    m: ModelArch,
    precision: Precision | None,
    tp: int,
    pc: ParamCounts | None = None,
    arch: str | None = None,
) -> float:
    """Weight bytes of the non-expert layer parameters of ALL layers on one GPU of a TP group
    (before any PP split): attention (heads split by TP; K/V projections replicate once TP
    exceeds the KV heads), dense MLP and shared experts (columns split by TP), router and
    norms (replicated, 16 bit). The one per-GPU split of :func:`weight_memory` and
    :func:`planner.engine.step.step_model`; routed experts are added by each (whole vs one).
    ``arch``: the GPU architecture, which picks a published checkpoint (:func:`_bits`)."""
    pc = pc or param_counts(m)
    kv_rep = max(1.0, tp / m.num_key_value_heads) if not m.is_mla else 1.0
    attn_per_gpu = (pc.attention - pc.attention_kv) / tp + pc.attention_kv * kv_rep / tp
    fixed = (
        pc.router * _bits(precision, "router", m) / 8 + pc.norms * _bits(precision, "norms", m) / 8
    )
    if precision is None or m.checkpoint_for(precision.id, arch) is None:
        b_lin = _bits(precision, "linear", m, arch) / 8  # the format's one width for all linears
        return attn_per_gpu * b_lin + (pc.mlp_dense + pc.shared_experts) * b_lin / tp + fixed

    def by(part: str) -> float:
        return _bits(precision, part, m, arch) / 8

    a_out = attention_out_params(m) / tp
    return (
        (attn_per_gpu - a_out) * by("attention_in")
        + a_out * by("attention_out")
        + (pc.mlp_dense * by("dense_mlp") + pc.shared_experts * by("shared_experts")) / tp
        + fixed
    )


@dataclass(frozen=True)
class WeightMemory:
    """Weight bytes for the whole model and for the most loaded GPU [bytes]."""

    total_bytes: float
    per_gpu_bytes: float
    by_part_bytes: dict[str, float]
    tp: int
    pp: int
    ep: int = 1
    moe_tp: int | None = None


#: :func:`weight_memory` answers by (model, precision) object and (tp, pp): a recommendation
#: asks for the same weights once per framework and KV precision
_WEIGHTS = IdentityMemo()


def weight_memory(
    m: ModelArch,
    precision: Precision | None,
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    moe_tp: int | None = None,
    arch: str | None = None,
) -> WeightMemory:
    """Weight bytes, total and on the most loaded GPU of a replica.

    TP splits attention heads (K/V projections replicate once TP exceeds the
    number of KV heads), dense MLP and shared-expert columns and the vocabulary; PP splits
    layers (``ceil(L/pp)`` on the busiest stage, which also holds the larger of the
    embedding and the lm head; with ``pp == 1`` the one stage holds both). Routed experts
    are split ``ep x moe_tp`` ways (``moe_tp`` defaults to ``tp``: a plain TP group splits
    every expert's columns); with attention data-parallel (:class:`planner.catalog.layout.
    Layout`), ``tp`` is the attention split inside one rank and every rank holds a copy of
    the attention, dense and shared-expert weights. ``arch`` (the GPU architecture) picks a
    published checkpoint of the model in this format where the catalog lists one
    (:meth:`ModelArch.checkpoint_for`: its quantized parts and bits replace the format's).
    """
    moe_tp = tp if moe_tp is None else moe_tp
    own = precision is None or _bits(precision, "linear", m, arch) == _bits(precision, "linear", m)
    if own and (precision is None or m.checkpoint_for(precision.id, arch) is None):
        arch = None  # the format's default parts and bits: one answer for every architecture
    if type(tp) is not int or type(pp) is not int:
        return _weight_memory(m, precision, tp, pp, ep, moe_tp, arch)
    key = (tp, pp) if ep == 1 and moe_tp == tp else (tp, pp, ep, moe_tp)
    key = key if arch is None else (*key, arch)
    hit = _WEIGHTS.get((m, precision), key)
    if hit is not None:
        return hit
    w = _weight_memory(m, precision, tp, pp, ep, moe_tp, arch)
    return _WEIGHTS.put((m, precision), key, w)


def _weight_memory(
    m: ModelArch,
    precision: Precision | None,
    tp: int,
    pp: int,
    ep: int = 1,
    moe_tp: int = 1,
    arch: str | None = None,
) -> WeightMemory:
    """:func:`weight_memory`, computed."""
    require_positive("tp", tp)
    require_positive("pp", pp)
    require_positive("ep", ep)
    require_positive("moe_tp", moe_tp)
    if pp > m.num_hidden_layers:
        raise PlannerError(f"pp={pp} exceeds the model's {m.num_hidden_layers} layers")
    pc = param_counts(m)
    b = {
        part: _bits(precision, part, m, arch) / 8
        for part in (
            *("embedding", "lm_head", "norms", "router", "experts", "attention_in"),
            *("attention_out", "dense_mlp", "shared_experts"),
        )
    }
    a_out = attention_out_params(m) if arch is not None else 0  # arch: a checkpoint's parts
    parts = {
        "embedding": pc.embedding * b["embedding"],
        "lm_head": pc.lm_head * b["lm_head"],
        "attention": (pc.attention - a_out) * b["attention_in"] + a_out * b["attention_out"],
        "mlp": (
            pc.mlp_dense * b["dense_mlp"] + pc.shared_experts * b["shared_experts"]
            if arch is not None
            else (pc.mlp_dense + pc.shared_experts) * b["dense_mlp"]
        ),
        "experts": pc.experts * b["experts"],
        "router": pc.router * b["router"],
        "norms": pc.norms * b["norms"],
    }
    total = sum(parts.values())
    # per GPU
    L = m.num_hidden_layers
    # expert-parallel ranks hold ceil(E / ep) expert slots (redundant copies where ep does
    # not divide E: planner.catalog.layout.EP_REDUNDANT_FRAMEWORKS); E / ep where it divides
    n_exp = int(m.num_experts or 0)
    slots = -(-n_exp // ep) * ep / n_exp if n_exp and ep > 1 else 1.0
    per_layer = (
        dense_layer_bytes_per_gpu(m, precision, tp, pc, arch)
        + pc.experts * b["experts"] * slots / (ep * moe_tp)
    ) / L
    layers_busiest = math.ceil(L / pp)
    if pp == 1:
        ends = parts["embedding"] / tp + parts["lm_head"] / tp
    else:
        ends = max(parts["embedding"], parts["lm_head"]) / tp
    per_gpu = per_layer * layers_busiest + ends
    check_physical(f"{m.id}: weight bytes", total)
    check_physical(f"{m.id}: weight bytes per GPU", per_gpu)
    return WeightMemory(
        total_bytes=total,
        per_gpu_bytes=per_gpu,
        by_part_bytes=parts,
        tp=tp,
        pp=pp,
        ep=ep,
        moe_tp=moe_tp,
    )


def expert_pad_bytes(
    m: ModelArch,
    precision: Precision | None,
    arch: str | None,
    engine: str | None,
    ep: int = 1,
    moe_tp: int = 1,
    pp: int = 1,
) -> float:
    """Bytes that ``engine``'s weight-only MoE kernel adds to one GPU's routed experts by
    rounding each expert's hidden and per-rank intermediate dims up to the multiples of the
    checkpoint's ``expert_pad`` (:class:`planner.catalog.records.Checkpoint`) [bytes]; 0
    where none applies. Weights and block scales pad at ``weight_bits``, the bf16 biases at
    16. vLLM's Marlin MXFP4 MoE (n % 256, k % 128): gpt-oss-120b's 2,880 x 2,880 experts
    load as 3,072 x 2,944, +5,507,776,512 B on one GPU (tests/test_gptoss_checkpoint.py)."""
    ckpt = m.checkpoint_for(precision.id, arch) if precision is not None else None
    if ckpt is None or ckpt.expert_pad is None or engine not in ckpt.expert_pad[0]:
        return 0.0
    h_mul, i_mul = max(1, ckpt.expert_pad[1]), max(1, ckpt.expert_pad[2])
    h, i = m.hidden_size, (m.moe_intermediate_size or m.intermediate_size or 0) / moe_tp
    hp, ip = math.ceil(h / h_mul) * h_mul, math.ceil(i / i_mul) * i_mul
    mats = 3 if m.mlp_gated else 2  # gate + up + down
    bias = (mats - 1) * (ip - i) + (hp - h) if m.mlp_bias else 0.0
    per_expert = mats * (hp * ip - h * i) * ckpt.weight_bits / 8 + 2 * bias
    layers = param_counts(m).num_moe_layers * math.ceil(m.num_hidden_layers / pp)
    return per_expert * math.ceil((m.num_experts or 0) / ep) * layers / m.num_hidden_layers


# --------------------------------------------------------------------------- KV cache
def kv_layer_bytes_per_token(m: ModelArch, kv_bits: float = 16, tp: int = 1) -> float:
    """KV bytes one token occupies in ONE layer on one GPU [bytes]."""
    if m.is_mla:
        out = (m.kv_lora_rank + m.qk_rope_head_dim) * kv_bits / 8
    else:
        heads = max(1, math.ceil(m.num_key_value_heads / tp))
        out = 2 * heads * m.head_dim * kv_bits / 8
    return check_physical(f"{m.id}: KV bytes per token per layer", out)


def kv_bytes_per_token(m: ModelArch, kv_bits: float = 16, tp: int = 1) -> float:
    """KV bytes per token over all layers on one GPU, sliding windows ignored [bytes].

    This is the marginal cost of a token while the context is shorter than every
    window. Llama-3.1-70B at fp16: 80*2*8*128*2 = 327,680 B/token.
    """
    return m.num_hidden_layers * kv_layer_bytes_per_token(m, kv_bits, tp)


def kv_bytes_per_sequence(
    m: ModelArch, context, kv_bits: float = 16, tp: int = 1, block_size: int = 1
):
    """KV bytes one sequence of ``context`` tokens holds on one GPU [bytes] (vectorized).

    Sliding-window layers hold ``min(context, window)`` tokens. With ``block_size``
    > 1 each layer's tokens round up to whole blocks, as a paged KV cache allocates.
    """
    per = kv_layer_bytes_per_token(m, kv_bits, tp)
    n_sw = m.num_sliding_layers
    n_full = m.num_hidden_layers - n_sw
    if type(context) in (int, float) and math.isfinite(context):
        # one context: the same float operations without numpy's per-call overhead
        c = float(context)
        full = math.ceil(c / block_size) * block_size
        sw = math.ceil(min(c, m.sliding_window or 0) / block_size) * block_size if n_sw else 0.0
        return float(per * (n_full * float(full) + n_sw * float(sw)))
    c = np.asarray(context, dtype=float)
    full_tok = np.ceil(c / block_size) * block_size
    sw_tok = (
        np.ceil(np.minimum(c, m.sliding_window or 0) / block_size) * block_size if n_sw else 0.0
    )
    out = per * (n_full * full_tok + n_sw * sw_tok)
    return out if out.ndim else float(out)


# --------------------------------------------------------------------------- workspace
def activation_workspace_bytes(
    m: ModelArch, max_batched_tokens: int, max_num_seqs: int, tp: int = 1
) -> float:
    """Peak activation memory of one forward [bytes]; an estimate, documented in docs/formulas.md.

    The largest live tensors of a forward over ``max_batched_tokens`` tokens: the
    residual stream and the layer input (2 x h), the fused QKV output, and the MLP
    gate+up output (2 x I / TP), all in 16 bit; plus fp32 logits for
    ``max_num_seqs`` sequences (V / TP columns each). Serving engines size their KV
    pool after a profiling forward of exactly this shape.
    """
    h = m.hidden_size
    inter = max(
        m.intermediate_size or 0, (m.moe_intermediate_size or 0) * (m.num_experts_per_tok or 1)
    )
    qkv = (m.num_attention_heads + 2 * m.num_key_value_heads) * m.head_dim / tp
    per_tok = 2 * (2 * h + qkv + 2 * inter / tp)
    logits = max_num_seqs * m.vocab_size / tp * 4
    return max_batched_tokens * per_tok + logits


# --------------------------------------------------------------------------- fit
@dataclass(frozen=True)
class MemoryPlan:
    """What one GPU of a TP x PP replica holds, and how many sequences fit [bytes]."""

    model: str
    gpu: str
    precision: str
    kv_precision: str
    tp: int
    pp: int
    context_len: int
    memory_utilization: float
    gpu_memory_bytes: float
    weight_bytes_total: float
    weight_bytes_per_gpu: float
    activation_bytes_per_gpu: float
    runtime_overhead_bytes_per_gpu: float
    kv_cache_bytes_per_token: float  # per GPU, no sliding-window cap
    kv_bytes_per_sequence: float  # per GPU at context_len, block-rounded
    kv_budget_bytes_per_gpu: float
    max_kv_tokens: int
    max_concurrent_sequences: int
    fits: bool
    reason: str
    suggestions: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    gpu_memory_basis: str = ""  # where gpu_memory_bytes comes from (Accelerator.memory_basis)
    kv_precision_basis: str = ""  # why this KV precision (given, or the default and its source)
    ep: int = 1  # expert-parallel size
    attention_dp: int = 1  # attention data-parallel ranks (each holds its own sequences' KV)
    moe_tp: int = 1  # tensor split of each routed expert
    layout: str = ""  # the layout's short name (Layout.label: TP8, DEP8, TP8 EP8)
    num_gpus: int = 1  # GPUs of the replica (tp x attention_dp x pp)

    @property
    def reserved_bytes_per_gpu(self) -> float:
        """Memory the engine leaves unused, ``1 - memory_utilization`` of the card (vLLM-style
        fractions) or of what weights, activations and overhead leave (``free`` fractions, e.g.
        TensorRT-LLM): the rest of the card after the KV budget [bytes]."""
        used = (
            self.weight_bytes_per_gpu
            + self.activation_bytes_per_gpu
            + self.runtime_overhead_bytes_per_gpu
            + self.kv_budget_bytes_per_gpu
        )
        return max(self.gpu_memory_bytes - used, 0.0)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["suggestions"] = list(self.suggestions)
        d["assumptions"] = list(self.assumptions)
        return d


def plan_memory(
    model: ModelArch | str,
    gpu: Accelerator | str,
    precision: Precision | str = "bf16",
    kv_precision: str | None = None,
    tp: int = 1,
    pp: int = 1,
    context_len: int = 4096,
    memory_utilization: float | None = None,
    framework: Framework | str | None = None,
    max_num_seqs: int | None = None,
    max_batched_tokens: int | None = None,
    catalog: Catalog | None = None,
    suggest: bool = True,
    ep: int = 1,
    attention_dp: int = 1,
    layout: Layout | None = None,
    draft=None,
) -> MemoryPlan:
    """Memory plan of one GPU in a replica and the largest concurrency it allows.

    Parameters
    ----------
    model, gpu, precision : catalog ids (or objects; ``model`` may be a config.json path)
    kv_precision : KV-cache precision id; default: what the framework does with a checkpoint
        in this format (:func:`planner.catalog.catalog.default_kv_precision`)
    tp, pp : tensor- and pipeline-parallel sizes
    ep, attention_dp : expert-parallel size and attention data-parallel ranks (MoE models);
        or ``layout``, a :class:`planner.catalog.layout.Layout` (it wins over tp/pp/ep/dp).
        Each attention-DP rank holds its own sequences' KV: the replica's ``max_kv_tokens``
        and ``max_concurrent_sequences`` are ``attention_dp`` times one GPU's;
        ``max_num_seqs`` and ``max_batched_tokens`` are per rank (vLLM and TensorRT-LLM
        semantics)
    context_len : tokens each sequence holds (prompt + output) [tokens]
    memory_utilization : fraction of GPU memory the engine may use; default from the framework
    framework : framework id, for block size, memory utilization and batching defaults
    draft : the speculative drafter (:class:`planner.engine.speculative.DraftCost`): its
        weights (``held_bytes``) join the weights per GPU and its KV per token the cache's

    Returns
    -------
    MemoryPlan
        ``fits`` is False (with ``reason`` and ``suggestions``) when not even one
        sequence of ``context_len`` tokens fits next to the weights.
    """
    cat = catalog or load_catalog()
    m, g, p, kvp, fw = cat.resolve(model, gpu, precision, framework, kv_precision)
    require_positive("context_len", context_len)
    if not math.isfinite(float(context_len)) or context_len > 2**40:
        raise PlannerError(f"context_len must be a finite number of tokens, got {context_len}")
    if layout is None:
        tp, pp = check_layout(m, tp, pp)
        layout = layout_of(tp, pp, ep, attention_dp)
    check_for_model(m, layout)
    if fw is not None:
        check_framework_layout(fw, layout, g)
    tp, pp, dp = layout.tp, layout.pp, layout.attention_dp
    compute_dtype_for(p, g)  # the GPU must run this precision (natively or weight-only)
    util = (
        memory_utilization
        if memory_utilization is not None
        else (fw.default_memory_utilization if fw else 0.9)
    )
    if not 0 < util <= 1:
        raise PlannerError(f"memory_utilization must be in (0, 1], got {util}")
    assumptions: list[str] = []
    if m.max_position_embeddings and context_len > m.max_position_embeddings:
        assumptions.append(
            f"context_len {context_len} exceeds the model's max_position_embeddings {m.max_position_embeddings}"
        )
    block = fw.kv_block_size if fw else 16
    # the engine's own defaults on this GPU (vLLM picks larger ones on >= 70 GiB GPUs)
    seqs0, btok0 = fw.scheduler_defaults(g) if fw else (256, None)
    seqs = max_num_seqs or seqs0
    btok = max_batched_tokens or btok0 or 8192
    w = weight_memory(m, p, tp, pp, layout.ep, layout.moe_split, g.arch)
    n_exp = int(m.num_experts or 0)
    if n_exp and layout.ep > 1 and n_exp % layout.ep:  # planner.catalog.layout
        per_rank = -(-n_exp // layout.ep)
        assumptions.append(
            f"ep={layout.ep} does not divide {n_exp} experts: {per_rank} expert slots a rank, "
            f"{per_rank * layout.ep - n_exp} redundant copies; the launch must ask for them "
            "(TensorRT-LLM moe num_slots, SGLang --ep-num-redundant-experts, vLLM --enable-eplb "
            "--num-redundant-experts)"
        )
    pad = expert_pad_bytes(m, p, g.arch, fw.id if fw else None, layout.ep, layout.moe_split, pp)
    if pad:  # the engine's kernel loads the experts padded (vLLM Marlin MXFP4 on Hopper)
        w = replace(w, per_gpu_bytes=w.per_gpu_bytes + pad)
        assumptions.append(f"{fw.id} pads the experts on {g.arch}: +{pad / 1e9:.2f} GB per GPU")
    if draft is not None and draft.held_bytes:
        w = replace(w, per_gpu_bytes=w.per_gpu_bytes + draft.held_bytes)
        assumptions.append(f"speculative draft weights: {draft.held_bytes / 1e9:.2f} GB per GPU")
    act = activation_workspace_bytes(m, btok, seqs, tp)
    # what the engine's own KV sizing sets aside besides weights and activations (non-torch
    # buffers, CUDA graphs, context; NCCL buffers once tp > 1): Framework.memory_semantics
    overhead = fw.runtime_overhead_bytes(tp) if fw else 0.0
    if fw and fw.runtime_overhead_gb is None:
        assumptions.append(f"runtime overhead of {fw.id} unknown (no source): not counted")
    cap = g.memory_bytes
    layers_frac = math.ceil(m.num_hidden_layers / pp) / m.num_hidden_layers
    kv_tok = kv_bytes_per_token(m, kvp.bits, tp) * layers_frac
    kv_seq = float(kv_bytes_per_sequence(m, context_len, kvp.bits, tp, block)) * layers_frac
    if draft is not None and draft.kv_bytes_per_token and kv_tok > 0:  # the draft's KV too
        grow = (kv_tok + draft.kv_bytes_per_token * dp) / kv_tok
        kv_tok, kv_seq = kv_tok * grow, kv_seq * grow
    of = fw.memory_utilization_of if fw is not None else "total"
    if of == "free":
        budget = (cap - w.per_gpu_bytes - act - overhead) * util
    elif of == "static":  # the fraction of what the set-up leaves holds weights + KV
        budget = (cap - overhead) * util - w.per_gpu_bytes
    else:
        budget = cap * util - w.per_gpu_bytes - act - overhead
    # one GPU's cache holds its attention rank's sequences: the replica holds dp times as many
    max_tokens = dp * int(max(0.0, budget) // kv_tok) if kv_tok > 0 else 0
    max_seqs = dp * int(max(0.0, budget) // kv_seq) if kv_seq > 0 else 0
    fits = max_seqs >= 1
    gb = 1e9
    if fits:
        per_rank = f" ({dp} attention ranks of {max_seqs // dp:,})" if dp > 1 else ""
        reason = (
            f"fits: {w.per_gpu_bytes / gb:.1f} GB weights + {act / gb:.1f} GB activations per GPU; "
            f"{budget / gb:.1f} GB left for KV = {max_seqs:,} sequences of {context_len:,} tokens"
            f"{per_rank}"
        )
    elif {"free": cap, "static": (cap - overhead) * util}.get(of, cap * util) < w.per_gpu_bytes:
        offer = {"free": cap, "static": (cap - overhead) * util}.get(of, cap * util)
        reason = (
            f"does not fit: weights need {w.per_gpu_bytes / gb:.1f} GB per GPU but {g.id} offers "
            f"{offer / gb:.1f} GB" + ("" if offer == cap else f" at memory utilization {util:g}")
        )
    else:
        reason = (
            f"does not fit: after {w.per_gpu_bytes / gb:.1f} GB weights and {act / gb:.1f} GB activations, "
            f"{max(budget, 0) / gb:.2f} GB remain but one sequence of {context_len} tokens needs "
            f"{kv_seq / gb:.2f} GB of KV cache"
        )
    suggestions: tuple[str, ...] = ()
    if not fits and suggest and not DEFER_SUGGESTIONS.get():
        suggestions = _suggest(
            cat, m, g, p, kvp.id, tp, pp, context_len, util, fw, seqs, btok, layout
        )
    return MemoryPlan(
        model=m.id,
        gpu=g.id,
        precision=p.id,
        kv_precision=kvp.id,
        tp=tp,
        pp=pp,
        context_len=int(context_len),
        memory_utilization=util,
        gpu_memory_bytes=cap,
        weight_bytes_total=w.total_bytes,
        weight_bytes_per_gpu=w.per_gpu_bytes,
        activation_bytes_per_gpu=act,
        runtime_overhead_bytes_per_gpu=overhead,
        kv_cache_bytes_per_token=kv_tok,
        kv_bytes_per_sequence=kv_seq,
        kv_budget_bytes_per_gpu=budget,
        max_kv_tokens=max_tokens,
        max_concurrent_sequences=max_seqs,
        fits=fits,
        reason=reason,
        suggestions=suggestions,
        assumptions=tuple(assumptions),
        gpu_memory_basis=g.memory_basis(),
        kv_precision_basis=kv_precision_basis(kv_precision, p, fw, m),
        ep=layout.ep,
        attention_dp=dp,
        moe_tp=layout.moe_split if m.is_moe else 1,  # a dense model has no experts to split
        layout=layout.label,
        num_gpus=layout.num_gpus,
    )


def _suggest(cat, m, g, p, kv_id, tp, pp, ctx, util, fw, seqs, btok, layout) -> tuple[str, ...]:
    out: list[str] = []

    def ok(prec=p, kv=kv_id, lay=layout, c=ctx) -> bool:
        try:
            return plan_memory(
                m, g, prec, kv if kv in prec.kv_options else prec.kv_default, context_len=c,
                memory_utilization=util, framework=fw, max_num_seqs=seqs, max_batched_tokens=btok,
                catalog=cat, suggest=False, layout=lay,
            ).fits  # fmt: skip
        except PlannerError:
            return False

    heads = m.num_attention_heads
    dom = g.nvlink_domain_gpus if hasattr(g, "nvlink_domain_gpus") else None
    for t in sorted({t for t in (2, 3, 4, 6, 8, 12, 16, 24, 32, 64) if heads % t == 0}):
        if t > tp and layout.is_plain and ok(lay=layout_of(t, pp)):
            nodes = f", {-(-t * pp // dom)} nodes" if dom and t * pp > dom else ""
            out.append(f"tp={t} ({t * pp} GPUs{nodes})")
            # across nodes, TP in a node x PP across (vLLM's guide; planner.engine.pipeline)
            k = t // dom if nodes and t % dom == 0 and heads % dom == 0 else 0
            if k and ok(lay=layout_of(dom, pp * k)):
                out.append(f"tp={dom} pp={pp * k} ({t * pp} GPUs{nodes}: PP across nodes)")
            break
    if m.is_moe and fw is not None and fw.expert_parallel and fw.attention_dp:
        # attention data-parallel with expert parallel over the same GPUs (DEPn)
        for n in (2, 4, 8, 16, 32, 64, 72):
            if n <= layout.width or (m.num_experts or 0) % n:
                continue
            lay = layout_of(1, pp, n, n)
            if ok(lay=lay):
                out.append(f"{lay.label} ({lay.num_gpus} GPUs: --attention-dp {n} --ep {n})")
                break
    lower = sorted(
        (q for q in cat.precisions if q.weight_bits < p.weight_bits), key=lambda q: -q.weight_bits
    )
    for q in lower:
        if (g.arch in q.native_archs or g.arch in q.fallback_archs) and ok(prec=q):
            out.append(f"precision {q.id} at tp={tp}")
            break
    for kv in ("fp8", "int8"):
        if kv in p.kv_options and kv != kv_id and ok(kv=kv):
            out.append(f"kv precision {kv}")
            break
    # no longer than the model's window: a context it cannot read is no suggestion
    window = m.max_position_embeddings or 0
    lo, hi = 0, min(ctx, window + 1) if window else ctx
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(c=mid) else (lo, mid)
    if lo >= 1:
        out.append(f"context <= {lo} tokens" + (" (the model's window)" if lo == window else ""))
    if not out:
        out.append("no single change fits: combine more GPUs with a lower precision")
    return tuple(out)
