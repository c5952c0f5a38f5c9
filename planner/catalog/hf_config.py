"""A Hugging Face ``config.json`` -> :class:`~planner.catalog.records.ModelArch`."""

from __future__ import annotations

import datetime as _dt
import functools
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planner.catalog.records import ModelArch, _fmt_loc
from planner.errors import PlannerError, read_text, shown, whole_number
from planner.files import load_json

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
    cfg = load_json(text, p)
    if not isinstance(cfg, dict):
        raise PlannerError(f"{p}: expected a JSON object")
    modelopt = p.parent / "hf_quant_config.json"  # NVIDIA Model Optimizer exports
    if modelopt.is_file():
        q = load_json(read_text(modelopt, "quantization config", "hf_quant_config.json"), modelopt)
        cfg = {**cfg, "_hf_quant_config": q}
    try:
        return _arch_from_config(cfg, model_id or str(p), str(p))
    except (TypeError, ValueError, ZeroDivisionError, OverflowError) as e:
        if isinstance(e, PlannerError):
            raise
        raise PlannerError(f"{p}: a size field is not a usable number ({e})") from None


#: KV dtypes a checkpoint's quantization config may declare -> catalog KV ids
_DECLARED_KV = {"fp8": "fp8", "int8": "int8"}


def checkpoint_kv(cfg: dict[str, Any]) -> str | None:
    """KV quantization a checkpoint declares: ``fp8`` / ``int8``, ``"none"`` when it has a
    quantization config without a KV entry, None when it has no quantization config (or
    declares a KV format the catalog does not know).

    Read where engines read it (vLLM ``resolve_kv_cache_dtype_string``, PR #29980):
    ``hf_quant_config.json`` ``quantization.kv_cache_quant_algo`` (Model Optimizer),
    ``config.json`` ``quantization_config.kv_cache_quant_algo`` (Model Optimizer in
    config.json) or ``quantization_config.kv_cache_scheme`` (compressed-tensors:
    ``{"num_bits": 8, "type": "float"}`` is fp8).
    """
    sources = []
    mo = cfg.get("_hf_quant_config")
    if isinstance(mo, dict) and isinstance(mo.get("quantization"), dict):
        sources.append(mo["quantization"])
    qc = cfg.get("quantization_config")
    if isinstance(qc, dict):
        sources.append(qc)
    if not sources:
        return None
    for q in sources:
        algo = q.get("kv_cache_quant_algo")
        if isinstance(algo, str):
            return _DECLARED_KV.get(algo.strip().lower())
        scheme = q.get("kv_cache_scheme")
        if isinstance(scheme, dict):
            bits, kind = scheme.get("num_bits"), str(scheme.get("type", "")).lower()
            if bits == 8 and kind in ("float", "int"):
                return "fp8" if kind == "float" else "int8"
            return None
    return "none"


@lru_cache(maxsize=256)
def _hf_config_cached(path: str, mtime: float) -> ModelArch:
    return model_from_hf_config(path)


def _need(cfg: dict[str, Any], where: str, *keys: str) -> Any:
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return cfg[k]
    raise PlannerError(f"{where}: config.json lacks '{keys[0]}', needed to size the model")


def _int_field(
    cfg: dict[str, Any],
    where: str,
    *keys: str,
    minimum: int = 1,
    maximum: int = 10**7,
    required: bool = False,
    default: int | None = None,
) -> int | None:
    """The first of ``keys`` present (not null) as a checked whole number; errors name the key.

    A present value is never replaced by a default: ``num_key_value_heads: 0`` is an error,
    not multi-head attention.
    """
    for k in keys:
        if cfg.get(k) is not None:
            return whole_number(f"{where}: field '{k}'", cfg[k], minimum=minimum, maximum=maximum)
    if required:
        _need(cfg, where, *keys)
    return default


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
    num = functools.partial(_int_field, cfg, where)
    h = num("hidden_size", "n_embd", "d_model", required=True)
    heads = num("num_attention_heads", "n_head", "num_heads", required=True)
    layers = num("num_hidden_layers", "n_layer", "num_layers", required=True, maximum=100_000)
    kv_keys = ("num_key_value_heads", "num_kv_heads")
    if mt == "falcon" and g("new_decoder_architecture"):
        kv_keys = ("num_kv_heads", "num_key_value_heads")
    kv_heads = num(*kv_keys, default=heads)
    if mt == "falcon" and not g("new_decoder_architecture") and g("multi_query", True):
        kv_heads = 1
    if not g("kv_lora_rank") and heads % kv_heads:
        raise PlannerError(
            f"{where}: field '{kv_keys[0]}': {kv_heads} KV heads do not divide "
            f"num_attention_heads {heads} (grouped-query attention needs a whole group size)"
        )
    head_dim = num("head_dim")
    if head_dim is None:  # the architecture derives head_dim = hidden_size / heads
        if h % heads and not g("kv_lora_rank"):
            raise PlannerError(
                f"{where}: field 'num_attention_heads': {heads} heads do not divide "
                f"hidden_size {h} (no head_dim given, so head_dim = hidden_size / heads)"
            )
        head_dim = max(1, h // heads)
    d: dict[str, Any] = {
        "id": model_id,
        "architecture": mt,
        "hf_repo": g("_name_or_path") or None,
        "num_hidden_layers": layers,
        "hidden_size": h,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "vocab_size": num("vocab_size", required=True, maximum=10**8),
        "max_position_embeddings": num("max_position_embeddings", "n_positions", maximum=10**10),
        "tie_word_embeddings": bool(g("tie_word_embeddings", False)),
        "source": f"HuggingFace config.json at {where}",
        "as_of": _dt.date.today(),
    }
    if mt in {"gptj"}:
        d.update(
            intermediate_size=num("n_inner", default=4 * h),
            mlp_gated=False,
            mlp_bias=True,
            norm="layernorm",
            norms_per_layer=1,
            lm_head_bias=True,
        )
    elif mt == "falcon":
        d.update(
            intermediate_size=num("ffn_hidden_size", default=4 * h),
            mlp_gated=False,
            norm="layernorm",
            norms_per_layer=2 if g("new_decoder_architecture") else 1,
            attention_bias=bool(g("bias", False)),
            attention_out_bias=bool(g("bias", False)),
            mlp_bias=bool(g("bias", False)),
            tie_word_embeddings=bool(g("tie_word_embeddings", True)),
        )
    else:
        d["intermediate_size"] = num("intermediate_size")
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
    sw = num("sliding_window", maximum=10**10)
    layer_types = g("layer_types")
    L = d["num_hidden_layers"]
    if isinstance(layer_types, list) and layer_types:
        n_sw = sum(1 for t in layer_types if "sliding" in str(t))
        if n_sw and sw:
            d.update(sliding_window=sw, num_sliding_layers=min(n_sw, L))
    elif sw and (mt in {"mistral", "phi3"} or (mt == "qwen2" and g("use_sliding_window"))):
        d.update(sliding_window=sw, num_sliding_layers=L)
    elif sw and mt == "gemma2":
        d.update(sliding_window=sw, num_sliding_layers=L // 2)
    elif sw and mt == "gpt_oss":
        d.update(sliding_window=sw, num_sliding_layers=(L + 1) // 2)
    # mixture of experts
    n_exp = num("num_local_experts", "num_experts", "n_routed_experts", minimum=0)
    if n_exp and n_exp > 1:
        per_tok = num("num_experts_per_tok", "experts_per_token", required=True)
        if per_tok > n_exp:
            raise PlannerError(
                f"{where}: field 'num_experts_per_tok': {per_tok} experts per token but only "
                f"{n_exp} experts"
            )
        dense = num("first_k_dense_replace", minimum=0, default=0)
        if dense > layers:
            raise PlannerError(
                f"{where}: field 'first_k_dense_replace': {dense} dense layers but only "
                f"{layers} layers"
            )
        d.update(
            num_experts=n_exp,
            num_experts_per_tok=per_tok,
            num_shared_experts=num("n_shared_experts", minimum=0, default=0),
            moe_intermediate_size=num("moe_intermediate_size", "intermediate_size"),
            num_dense_layers=dense,
        )
        if mt == "gpt_oss":
            d.update(router_bias=True, mlp_bias=True, attention_bias=True, attention_out_bias=True)
            # MXFP4 experts, everything else bf16; one sink logit per head and layer
            d.update(native_precision="fp4", native_quantized_parts="experts_only")
            d["attention_sinks"] = True
        if mt == "qwen2_moe" and g("shared_expert_intermediate_size"):
            d["num_shared_experts"] = 1
            d["shared_expert_intermediate_size"] = num("shared_expert_intermediate_size")
        if mt == "qwen2_moe":
            d["attention_bias"] = True  # q, k, v biases as in Qwen2
        if mt in {"qwen3_moe"}:
            mlp_only = g("mlp_only_layers") or []
            if not isinstance(mlp_only, list) or len(mlp_only) > layers:
                raise PlannerError(
                    f"{where}: field 'mlp_only_layers': expected a list of at most {layers} "
                    f"layer indices, got {shown(mlp_only)}"
                )
            d["num_dense_layers"] = len(mlp_only)
    # multi-head latent attention
    if g("kv_lora_rank") is not None:
        q_lora = g("q_lora_rank")
        d.update(
            q_lora_rank=None if not q_lora else num("q_lora_rank"),
            kv_lora_rank=num("kv_lora_rank"),
            qk_nope_head_dim=num("qk_nope_head_dim", required=True),
            qk_rope_head_dim=num("qk_rope_head_dim", required=True),
            v_head_dim=num("v_head_dim", required=True),
            num_nextn_predict_layers=num("num_nextn_predict_layers", minimum=0, default=0),
        )
        d["head_dim"] = d["qk_nope_head_dim"] + d["qk_rope_head_dim"]
    kv = checkpoint_kv(cfg)
    if kv is not None:
        d["checkpoint_kv"] = kv
    try:
        return ModelArch.model_validate(d)
    except ValidationError as e:
        err = e.errors()[0]
        raise PlannerError(f"{where}: {_fmt_loc(tuple(err['loc']))}: {err['msg']}") from None
