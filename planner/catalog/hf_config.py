"""A Hugging Face ``config.json`` -> :class:`~planner.catalog.records.ModelArch`."""

from __future__ import annotations

import datetime as _dt
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planner.catalog.records import ModelArch, _fmt_loc
from planner.errors import PlannerError, read_text

# --------------------------------------------------------------------------- HF config.json
_SUPPORTED_HF = {
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "qwen2_moe",
    "gemma2",
    "deepseek_v2",
    "deepseek_v3",
    "gpt_oss",
    "gptj",
    "falcon",
    "phi3",
}


def model_from_hf_config(path: str | os.PathLike[str], model_id: str | None = None) -> ModelArch:
    """Build a :class:`ModelArch` from a HuggingFace ``config.json`` (file or folder).

    Supported ``model_type`` values: llama, mistral, mixtral, qwen2, qwen3, qwen3_moe,
    gemma2, deepseek_v2, deepseek_v3, gpt_oss, gptj, falcon, phi3.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    text = read_text(p, "model config", "config.json file")
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as e:
        raise PlannerError(f"{p}: not valid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(cfg, dict):
        raise PlannerError(f"{p}: expected a JSON object")
    try:
        return _arch_from_config(cfg, model_id or str(p), str(p))
    except (TypeError, ValueError, ZeroDivisionError, OverflowError) as e:
        if isinstance(e, PlannerError):
            raise
        raise PlannerError(f"{p}: a size field is not a usable number ({e})") from None


@lru_cache(maxsize=256)
def _hf_config_cached(path: str, mtime: float) -> ModelArch:
    return model_from_hf_config(path)


def _need(cfg: dict[str, Any], where: str, *keys: str) -> Any:
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return cfg[k]
    raise PlannerError(f"{where}: config.json lacks '{keys[0]}', needed to size the model")


def _arch_from_config(cfg: dict[str, Any], model_id: str, where: str) -> ModelArch:
    mt = str(cfg.get("model_type", "")).lower()
    if mt not in _SUPPORTED_HF:
        archs = cfg.get("architectures")
        raise PlannerError(
            f"{where}: unsupported model_type '{mt or '(missing)'}'"
            + (f" (architectures {archs})" if archs else "")
            + f"; supported: {', '.join(sorted(_SUPPORTED_HF))}"
        )
    g = cfg.get
    need = lambda *k: _need(cfg, where, *k)  # noqa: E731
    h = int(need("hidden_size", "n_embd", "d_model"))
    heads = int(need("num_attention_heads", "n_head", "num_heads"))
    kv_heads = int(g("num_key_value_heads") or g("num_kv_heads") or heads)
    if mt == "falcon":
        if g("new_decoder_architecture"):
            kv_heads = int(g("num_kv_heads") or g("num_key_value_heads") or heads)
        elif g("multi_query", True):
            kv_heads = 1
    head_dim = int(g("head_dim") or h // heads)
    d: dict[str, Any] = {
        "id": model_id,
        "architecture": mt,
        "hf_repo": g("_name_or_path") or None,
        "num_hidden_layers": int(need("num_hidden_layers", "n_layer", "num_layers")),
        "hidden_size": h,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "vocab_size": int(need("vocab_size")),
        "max_position_embeddings": g("max_position_embeddings") or g("n_positions"),
        "tie_word_embeddings": bool(g("tie_word_embeddings", False)),
        "source": f"HuggingFace config.json at {where}",
        "as_of": _dt.date.today(),
    }
    if mt in {"gptj"}:
        d.update(
            intermediate_size=int(g("n_inner") or 4 * h),
            mlp_gated=False,
            mlp_bias=True,
            norm="layernorm",
            norms_per_layer=1,
            lm_head_bias=True,
        )
    elif mt == "falcon":
        d.update(
            intermediate_size=int(g("ffn_hidden_size") or 4 * h),
            mlp_gated=False,
            norm="layernorm",
            norms_per_layer=2 if g("new_decoder_architecture") else 1,
            attention_bias=bool(g("bias", False)),
            attention_out_bias=bool(g("bias", False)),
            mlp_bias=bool(g("bias", False)),
            tie_word_embeddings=bool(g("tie_word_embeddings", True)),
        )
    else:
        d["intermediate_size"] = g("intermediate_size")
    if mt == "qwen2":
        d["attention_bias"] = True
    if mt in {"qwen3", "qwen3_moe"}:
        d["qk_norm"] = True
        d["attention_bias"] = bool(g("attention_bias", False))
    if mt == "gemma2":
        d["norms_per_layer"] = 4
        d["tie_word_embeddings"] = bool(g("tie_word_embeddings", True))
    if mt == "llama":
        d["attention_bias"] = bool(g("attention_bias", False))
        d["attention_out_bias"] = d["attention_bias"]
        d["mlp_bias"] = bool(g("mlp_bias", False))
    # sliding windows
    sw = g("sliding_window")
    layer_types = g("layer_types")
    L = d["num_hidden_layers"]
    if isinstance(layer_types, list) and layer_types:
        n_sw = sum(1 for t in layer_types if "sliding" in str(t))
        if n_sw and sw:
            d.update(sliding_window=int(sw), num_sliding_layers=n_sw)
    elif sw and (mt in {"mistral", "phi3"} or (mt == "qwen2" and g("use_sliding_window"))):
        d.update(sliding_window=int(sw), num_sliding_layers=L)
    elif sw and mt == "gemma2":
        d.update(sliding_window=int(sw), num_sliding_layers=L // 2)
    elif sw and mt == "gpt_oss":
        d.update(sliding_window=int(sw), num_sliding_layers=(L + 1) // 2)
    # mixture of experts
    n_exp = g("num_local_experts") or g("num_experts") or g("n_routed_experts")
    if n_exp and int(n_exp) > 1:
        d.update(
            num_experts=int(n_exp),
            num_experts_per_tok=int(need("num_experts_per_tok", "experts_per_token")),
            num_shared_experts=int(g("n_shared_experts") or 0),
            moe_intermediate_size=g("moe_intermediate_size") or g("intermediate_size"),
            num_dense_layers=int(g("first_k_dense_replace") or 0),
        )
        if mt == "gpt_oss":
            d.update(router_bias=True, mlp_bias=True, attention_bias=True, attention_out_bias=True)
            d["native_precision"] = "fp4"
        if mt == "qwen2_moe" and g("shared_expert_intermediate_size"):
            d["num_shared_experts"] = 1
            d["shared_expert_intermediate_size"] = int(g("shared_expert_intermediate_size"))
        if mt == "qwen2_moe":
            d["attention_bias"] = True  # q, k, v biases as in Qwen2
        if mt in {"qwen3_moe"}:
            mlp_only = g("mlp_only_layers") or []
            d["num_dense_layers"] = len(mlp_only)
    # multi-head latent attention
    if g("kv_lora_rank"):
        d.update(
            q_lora_rank=g("q_lora_rank") or None,
            kv_lora_rank=int(g("kv_lora_rank")),
            qk_nope_head_dim=int(need("qk_nope_head_dim")),
            qk_rope_head_dim=int(need("qk_rope_head_dim")),
            v_head_dim=int(need("v_head_dim")),
            num_nextn_predict_layers=int(g("num_nextn_predict_layers") or 0),
        )
        d["head_dim"] = int(g("qk_nope_head_dim")) + int(g("qk_rope_head_dim"))
    try:
        return ModelArch.model_validate(d)
    except ValidationError as e:
        err = e.errors()[0]
        raise PlannerError(f"{where}: {_fmt_loc(tuple(err['loc']))}: {err['msg']}") from None
