"""Parameter counts of a model architecture, by group (embedding, attention, dense MLP,
routed and shared experts, router, norms), counted from the architecture's dimensions, not
from the published total.

:func:`param_counts` is memoised per model object: the recommend search asks once per option
it screens. Split out of ``planner/engine/memory.py`` (2026-12-07), which sizes the weights
from these counts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from planner.catalog.records import ModelArch
from planner.errors import PlannerError, check_physical
from planner.files import IdentityMemo


@dataclass(frozen=True)
class ParamCounts:
    """Parameter counts of a model, by group [parameters].

    ``experts`` counts every routed expert of every MoE layer; ``expert_one`` is one
    expert of one layer. ``active`` follows the published convention: everything
    except the routed experts a token does not use (embeddings included).
    """

    embedding: int
    lm_head: int
    attention: int  # all layers, linear weights + biases
    attention_kv: int  # the K and V projections (replicated when TP > n_kv heads)
    mlp_dense: int  # dense-FFN layers
    experts: int  # routed experts, all layers
    expert_one: int
    shared_experts: int
    router: int
    norms: int
    total: int
    active: int
    num_moe_layers: int

    @property
    def matmul_active(self) -> int:
        """Parameters multiplied per token (excludes the embedding lookup and norms)."""
        return self.active - self.embedding - self.norms

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def _attention_params(m: ModelArch) -> tuple[int, int]:
    """(all attention params per layer, K/V projection params per layer)."""
    h, nh, nkv, d = m.hidden_size, m.num_attention_heads, m.num_key_value_heads, m.head_dim
    if m.is_mla:
        rope, nope, v = m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim or m.head_dim
        kvl = m.kv_lora_rank
        qk = nope + rope
        q = (
            (h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * nh * qk)
            if m.q_lora_rank
            else h * nh * qk
        )
        kv = h * (kvl + rope) + kvl + kvl * nh * (nope + v)
        o = nh * v * h
        return q + kv + o, kv
    q = h * nh * d
    kv = 2 * h * nkv * d
    o = nh * d * h
    bias = (nh * d + 2 * nkv * d) if m.attention_bias else 0
    bias += h if m.attention_out_bias else 0
    qkn = 2 * d if m.qk_norm else 0
    sinks = nh if m.attention_sinks else 0  # one learned sink logit per head (gpt-oss)
    kv_bias = 2 * nkv * d if m.attention_bias else 0
    return q + kv + o + bias + qkn + sinks, kv + kv_bias


def _mlp_params(h: int, inter: int, gated: bool, bias: bool) -> int:
    w = (3 if gated else 2) * h * inter
    b = ((2 * inter if gated else inter) + h) if bias else 0
    return w + b


#: :func:`param_counts` by model object: the search asks once per option it screens
_PARAM_COUNTS = IdentityMemo()


def param_counts(m: ModelArch) -> ParamCounts:
    """Count parameters from the architecture (not from the published total).

    Examples
    --------
    Llama-3.1-8B: 32 layers x (attention 4096*(4096+2*1024+4096) = 41,943,040 + MLP
    3*4096*14336 = 176,160,768 + norms 8,192) + embedding and lm head 2*128256*4096
    + final norm 4096 = 8,030,261,248.
    """
    hit = _PARAM_COUNTS.get((m,))
    if hit is not None:
        return hit
    return _PARAM_COUNTS.put((m,), (), _param_counts(m))


def _param_counts(m: ModelArch) -> ParamCounts:
    """:func:`param_counts`, computed."""
    h, L = m.hidden_size, m.num_hidden_layers
    attn_layer, kv_layer = _attention_params(m)
    norm_w = 2 if m.norm == "layernorm" else 1
    norms = (m.norms_per_layer * L + 1) * h * norm_w
    # (MLA: the q_a / kv_a layernorms are counted inside attention)
    embedding = m.vocab_size * h
    lm_head = (
        0 if m.tie_word_embeddings else m.vocab_size * h + (m.vocab_size if m.lm_head_bias else 0)
    )
    n_moe = m.num_moe_layers
    n_dense = L - n_moe
    mlp_dense = (
        n_dense * _mlp_params(h, m.intermediate_size or 0, m.mlp_gated, m.mlp_bias)
        if n_dense
        else 0
    )
    experts = expert_one = shared = router = 0
    if m.is_moe:
        inter = m.moe_intermediate_size or m.intermediate_size or 0
        expert_one = _mlp_params(h, inter, m.mlp_gated, m.mlp_bias)
        experts = n_moe * m.num_experts * expert_one
        shared_inter = m.shared_expert_intermediate_size or inter
        shared = n_moe * m.num_shared_experts * _mlp_params(h, shared_inter, m.mlp_gated, False)
        router = n_moe * (h * m.num_experts + (m.num_experts if m.router_bias else 0))
    attention = L * attn_layer
    total = embedding + lm_head + attention + mlp_dense + experts + shared + router + norms
    inactive = n_moe * ((m.num_experts or 0) - (m.num_experts_per_tok or 0)) * expert_one
    # physical invariants: a count is finite and > 0, and a token uses at most every parameter
    check_physical(f"{m.id}: total parameters", total, minimum=1)
    check_physical(f"{m.id}: active parameters", total - inactive, minimum=1)
    if inactive < 0:
        raise PlannerError(
            f"impossible result: {m.id} has more active ({total - inactive:,}) than total "
            f"({total:,}) parameters; check num_experts_per_tok against num_experts"
        )
    return ParamCounts(
        embedding=embedding,
        lm_head=lm_head,
        attention=attention,
        attention_kv=L * kv_layer,
        mlp_dense=mlp_dense,
        experts=experts,
        expert_one=expert_one,
        shared_experts=shared,
        router=router,
        norms=norms,
        total=total,
        active=total - inactive,
        num_moe_layers=n_moe,
    )
