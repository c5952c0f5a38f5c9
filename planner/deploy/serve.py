"""``serve.sh``: the engine launch command of one ranked option, for one engine release.

:class:`Knobs` holds what the planner assumed for the option (model, layout, precisions,
engine limits); :func:`launch` turns them into the engine's arguments, each spelled as the
release spells it (:mod:`planner.deploy.flags`), and :func:`serve_script` into the script.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from planner.catalog.layout import Layout
from planner.deploy import flags as F
from planner.errors import PlannerError

#: engines with a launch command here
ENGINES = ("vllm", "sglang", "trtllm", "tgi", "llama.cpp", "lmdeploy")
PORT = 8000
#: the health endpoint each engine's HTTP server answers (probes)
HEALTH = {
    "vllm": "/health",
    "sglang": "/health",
    "trtllm": "/health",
    "tgi": "/health",
    "llama.cpp": "/health",
    "lmdeploy": "/v1/models",
}
_DTYPE = {"bf16": "bfloat16", "fp16": "float16"}
#: weight precisions an engine quantizes on the fly from a bf16/fp16 checkpoint
_ONLINE = {("vllm", "fp8"): "fp8", ("sglang", "fp8"): "fp8", ("tgi", "fp8"): "fp8"}
#: KV precision -> the value of the engine's KV dtype setting
_KV = {
    "vllm": {"fp8": "fp8"},
    "sglang": {"fp8": "fp8_e4m3"},
    "trtllm": {"fp8": "fp8"},
    "tgi": {"fp8": "fp8"},
    "lmdeploy": {"int8": "8", "int4": "4"},
    "llama.cpp": {"int8": "q8_0", "fp16": "f16", "bf16": "bf16"},
}


@dataclass(frozen=True)
class Knobs:
    """What the planner assumed for one option (one replica, or one pool of xPyD)."""

    model_id: str
    hf_repo: str | None
    framework: str
    precision: str
    kv_precision: str
    layout: Layout = Layout()
    max_num_seqs: int | None = None  # per attention rank
    max_num_batched_tokens: int | None = None  # per attention rank
    memory_utilization: float | None = None
    max_model_len: int | None = None
    chunked_prefill: bool | None = None
    prefix_caching: bool | None = None
    spec_method: str | None = None
    spec_tokens: int | None = None
    draft_model: str | None = None
    nodes: int = 1
    role: str | None = None  # None, "prefill" or "decode"
    #: the precision the model's own release ships (DeepSeek-V3: fp8): MODEL is then that
    #: checkpoint, and the engine reads its quantization config (no online quantization)
    native_precision: str | None = None
    #: the published checkpoint ``data/models.yaml`` names for this precision on this GPU's
    #: architecture (``ModelArch.checkpoint_for``: DeepSeek-V3 fp4 on Blackwell is
    #: nvidia/DeepSeek-R1-0528-FP4-v2); MODEL is then that checkpoint
    checkpoint_repo: str | None = None

    @property
    def model_repo(self) -> str | None:
        """The Hugging Face id MODEL defaults to: the precision's checkpoint, else the
        model's own release."""
        return self.checkpoint_repo or self.hf_repo


@dataclass
class Launch:
    """An engine command: the executable, its arguments in order, and comments."""

    command: str
    args: list[tuple[str, str | None]] = field(default_factory=list)  # (flag, value)
    positional: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # extra files (trtllm YAML)
    before: list[str] = field(default_factory=list)  # shell lines run before the engine
    #: what the other pods of a multi-node replica run: "serve" (serve.sh with their rank
    #: from the LeaderWorkerSet's environment) or "ray" (join the leader's Ray cluster)
    workers: str | None = None

    def flags(self) -> list[str]:
        return [f for f, _ in self.args]


def _add(la: Launch, res: F.Resolved, key: str, value: Any = None) -> None:
    """Append setting ``key`` (its value checked against the release where listed)."""
    v = None if value is None else str(value)
    la.args.append((F.flag(res, key, value=v), v))


def _add_set(la: Launch, res: F.Resolved, *pairs: tuple[str, Any]) -> None:
    """:func:`_add` each ``(setting, value)`` in order whose value is set (None, 0 and
    False leave the setting to the engine's default)."""
    for key, value in pairs:
        if value:
            _add(la, res, key, value)


def _mem(k: Knobs) -> float | None:
    """The memory fraction as the scripts write it (4 decimals), or None."""
    return round(k.memory_utilization, 4) if k.memory_utilization else None


def _kv_value(k: Knobs) -> str | None:
    """The engine's KV dtype value, or None when the KV stays in the model's dtype."""
    if k.kv_precision in ("bf16", "fp16") and k.framework != "llama.cpp":
        return None
    v = _KV.get(k.framework, {}).get(k.kv_precision)
    if v is None:
        raise PlannerError(
            f"{k.framework}: no KV-cache dtype value for kv precision {k.kv_precision!r} here"
        )
    return v


def names_no_checkpoint(k: Knobs) -> bool:
    """Whether the weights need a checkpoint of ``k.precision`` the planner cannot name: not
    bf16/fp16, not the model's own release format, no checkpoint in ``data/models.yaml`` and
    no online quantization by the engine (gpt-oss-120b fp8 on TensorRT-LLM)."""
    return not (
        k.precision in _DTYPE
        or k.precision == k.native_precision
        or k.checkpoint_repo
        or (k.framework, k.precision) in _ONLINE
    )


def _precision(la: Launch, res: F.Resolved, k: Knobs) -> None:
    """dtype / quantization: a bf16/fp16 checkpoint, an online-quantized one, or a note that
    MODEL must be a checkpoint of the precision (the engine reads its quantization config)."""
    if k.precision in _DTYPE:
        if k.framework in ("vllm", "sglang", "lmdeploy", "tgi"):
            _add(la, res, "dtype", _DTYPE[k.precision])
        return
    if k.precision == k.native_precision:
        la.comments.append(
            f"weights: {k.precision}, the format of {k.model_id}'s own release (MODEL is that "
            "checkpoint); the engine reads the quantization from its config"
        )
        return
    if k.checkpoint_repo:
        la.comments.append(
            f"weights: {k.precision}, the checkpoint {k.checkpoint_repo} (data/models.yaml "
            "checkpoints); the engine reads the quantization from its config"
        )
        return
    online = _ONLINE.get((k.framework, k.precision))
    if online:
        _add(la, res, "quantization", online)
        la.comments.append(
            f"weights: {k.precision}, quantized by the engine on load from the bf16 checkpoint"
        )
        return
    la.comments.append(
        f"weights: {k.precision}: set MODEL to a {k.precision} checkpoint of {k.model_id} "
        "(the planner names none); the engine reads the quantization from its config"
    )


#: the rendezvous port of a multi-node SGLang / LMDeploy replica on its leader
DIST_PORT = 20000
RAY_PORT = 6379


def _multi_node(la: Launch, res: F.Resolved, k: Knobs) -> None:
    """A replica over ``k.nodes`` pods: the engine's own multi-node flags, each pod's rank and
    the leader's address from the LeaderWorkerSet's environment (LWS_GROUP_SIZE,
    LWS_WORKER_INDEX, LWS_LEADER_ADDRESS), or Ray for vLLM."""
    if k.nodes <= 1:
        return
    if k.framework == "vllm":
        _add(la, res, "executor", "ray")
        la.before.append(
            f"ray start --head --port={RAY_PORT}  # the workers join it (worker.sh); vLLM "
            "places its ranks on the Ray cluster"
        )
        la.workers = "ray"
        return
    if k.framework in ("sglang", "lmdeploy"):
        _add(la, res, "nnodes", f'"${{LWS_GROUP_SIZE:-{k.nodes}}}"')
        _add(la, res, "node_rank", '"${LWS_WORKER_INDEX:-0}"')
        _add(la, res, "dist_init_addr", f'"${{LWS_LEADER_ADDRESS:-127.0.0.1}}:{DIST_PORT}"')
        la.workers = "serve"
        return
    raise PlannerError(
        f"{k.framework}: a replica over {k.nodes} nodes needs the engine's multi-node launcher "
        "(MPI / RPC), which is not emitted here"
        if k.framework != "tgi"
        else f"tgi: the launcher serves one node; this replica spans {k.nodes}"
    )


def _vllm(la: Launch, res: F.Resolved, k: Knobs) -> None:
    if k.layout.ep > 1 and k.layout.ep != k.layout.width:
        raise PlannerError(
            f"vllm: ep={k.layout.ep} with tp={k.layout.tp} x attention_dp={k.layout.attention_dp}: vLLM's "
            "--enable-expert-parallel spans every TP x DP rank; no flag sets a smaller EP"
        )
    _add(la, res, "tp", k.layout.tp)
    if k.layout.pp > 1:
        _add(la, res, "pp", k.layout.pp)
    if k.layout.attention_dp > 1:
        _add(la, res, "dp", k.layout.attention_dp)
    if k.layout.ep > 1:
        _add(la, res, "ep")
    _precision(la, res, k)
    _add_set(
        la, res, ("kv_dtype", _kv_value(k)), ("max_num_seqs", k.max_num_seqs),
        ("max_num_batched_tokens", k.max_num_batched_tokens), ("memory_fraction", _mem(k)),
        ("max_model_len", k.max_model_len),
    )  # fmt: skip
    if k.chunked_prefill:
        _add(la, res, "chunked_prefill")
    if k.prefix_caching:
        _add(la, res, "prefix_caching")
    elif k.prefix_caching is False:
        la.comments.append("prefix caching: assumed off; no disable flag emitted (see docs)")
    if k.spec_method:
        import json

        if F.has(res, "spec_config"):
            cfg: dict[str, Any] = {"method": k.spec_method, "num_speculative_tokens": k.spec_tokens}
            if k.draft_model:
                cfg["model"] = k.draft_model
            _add(la, res, "spec_config", shlex.quote(json.dumps(cfg, separators=(",", ":"))))
        else:
            _add(la, res, "spec_model", k.draft_model or k.spec_method)
            _add(la, res, "spec_tokens", k.spec_tokens)
    if k.role:
        la.comments.append(
            f"{k.role} pool: KV connector assumed NixlConnector (vLLM's --kv-transfer-config; "
            "the planner's KV transfer time assumes the scale-out link's bandwidth)"
        )
        cfg = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
        _add(la, res, "kv_transfer", shlex.quote(json.dumps(cfg, separators=(",", ":"))))


def _sglang(la: Launch, res: F.Resolved, k: Knobs) -> None:
    _add(
        la, res, "tp", k.layout.width
    )  # SGLang's tp_size counts every rank of the attention DP too
    if k.layout.pp > 1:
        _add(la, res, "pp", k.layout.pp)
    if k.layout.attention_dp > 1:
        _add(la, res, "dp_attention")
        _add(la, res, "dp", k.layout.attention_dp)
    if k.layout.ep > 1:
        _add(la, res, "ep", k.layout.ep)
        if F.has(res, "enable_ep_moe"):
            _add(la, res, "enable_ep_moe")
    _precision(la, res, k)
    _add_set(la, res, ("kv_dtype", _kv_value(k)))
    if k.max_num_seqs:
        _add(la, res, "max_num_seqs", k.max_num_seqs * k.layout.attention_dp)
        la.comments.append(
            "--max-running-requests: the planner's cap per attention rank x dp-size (SGLang "
            "gives each DP worker max_running_requests // dp_size: 0.5.12 "
            "model_runner_kv_cache_mixin.py _resolve_max_num_reqs)"
        )
    if k.max_num_batched_tokens:
        dp = k.layout.attention_dp
        size = k.max_num_batched_tokens * dp if k.chunked_prefill is not False else -1
        _add(la, res, "max_num_batched_tokens", size)
        if dp > 1 and size > 0:
            la.comments.append(
                "--chunked-prefill-size: the planner's chunk per attention rank x dp-size (with "
                "DP attention SGLang gives each rank chunked_prefill_size // dp_size: 0.5.7 and "
                "0.5.12 server_args.py _handle_data_parallelism)"
            )
    if k.layout.attention_dp > 1 and k.layout.ep > 1:
        la.comments.append(
            "MoE tokens: no --moe-a2a-backend (SGLang's default 'none': every token is gathered "
            "over the DP ranks around each MoE layer; data/moe_dispatch.yaml says where the "
            "planner charges that gather)"
        )
    _add_set(la, res, ("memory_fraction", _mem(k)), ("max_model_len", k.max_model_len))
    if k.prefix_caching is False:
        _add(la, res, "no_prefix_caching")
    if k.spec_method:
        algo = {"mtp": "EAGLE", "eagle": "EAGLE", "eagle3": "EAGLE3"}.get(k.spec_method)
        if algo is None:
            raise PlannerError(f"sglang: speculative method {k.spec_method!r} has no mapping here")
        _add(la, res, "spec_algorithm", algo)
        _add(la, res, "spec_tokens", (k.spec_tokens or 1) + 1)
        _add(la, res, "spec_steps", k.spec_tokens)
        _add(la, res, "spec_topk", 1)
    if k.role:
        _add(la, res, "disagg_mode", k.role)
        _add(la, res, "disagg_backend", "mooncake")
        la.comments.append(f"{k.role} pool: KV transfer backend assumed mooncake (RDMA)")


def _trtllm(la: Launch, res: F.Resolved, k: Knobs) -> None:
    import yaml

    _add(la, res, "backend", "pytorch")
    _add(la, res, "tp", k.layout.width)
    if k.layout.pp > 1:
        _add(la, res, "pp", k.layout.pp)
    if k.layout.ep > 1:
        _add(la, res, "ep", k.layout.ep)
    _add_set(
        la, res, ("max_num_seqs", k.max_num_seqs),
        ("max_num_batched_tokens", k.max_num_batched_tokens),
        ("max_model_len", k.max_model_len), ("memory_fraction", _mem(k)),
    )  # fmt: skip
    _precision(la, res, k)
    extra: dict[str, Any] = {}
    if k.layout.attention_dp > 1:
        extra[F.flag(res, "yaml_attention_dp")] = True
        if k.layout.attention_dp_balance is not None:  # unset: the engine's default (off)
            extra[F.flag(res, "yaml_attention_dp_config")] = {
                F.flag(res, "yaml_adp_enable_balance"): k.layout.attention_dp_balance
            }
    kv = _kv_value(k)
    kvc: dict[str, Any] = {}
    if kv:
        kvc[F.flag(res, "yaml_kv_dtype")] = kv
    if k.prefix_caching is not None:
        kvc[F.flag(res, "yaml_block_reuse")] = bool(k.prefix_caching)
    if kvc:
        extra[F.flag(res, "yaml_kv_cache_config")] = kvc
    if k.chunked_prefill:
        if F.has(res, "chunked_prefill") or not F.has(res, "yaml_chunked_prefill"):
            _add(la, res, "chunked_prefill")  # the one-line error where neither exists
        else:  # before trtllm-serve had the flag: the LLM-API key, in the YAML file
            extra[F.flag(res, "yaml_chunked_prefill")] = True
    elif (
        k.chunked_prefill is False
        and k.max_num_batched_tokens
        and (k.max_model_len or 0) > (k.max_num_batched_tokens)
    ):  # planned without it, as trtllm-serve runs by default (data/frameworks.yaml)
        la.comments.append(
            f"chunked prefill: off (the engine's default, as planned); a prompt longer than "
            f"max_num_tokens {k.max_num_batched_tokens} is refused (set chunked_prefill in the "
            "scenario to plan and launch with it)"
        )
    if k.spec_method == "mtp":  # DeepSeek-class MTP: speculative_config in the LLM-API YAML
        extra[F.flag(res, "yaml_speculative_config")] = {
            "decoding_type": "MTP",
            F.flag(res, "yaml_mtp_layers"): int(k.spec_tokens or 1),
        }
    elif k.spec_method:
        raise PlannerError(
            f"trtllm: no checked speculative_config keys here for {k.spec_method!r}; "
            "emit the option without speculative decoding"
        )
    if extra:
        la.files["extra_llm_api_options.yaml"] = yaml.safe_dump(extra, sort_keys=False)
        _add(la, res, "extra_options", '"$(dirname "$0")/extra_llm_api_options.yaml"')


def _tgi(la: Launch, res: F.Resolved, k: Knobs) -> None:
    if k.layout.ep > 1 or k.layout.attention_dp > 1 or k.layout.pp > 1:
        raise PlannerError("tgi: the launcher has no flag for pipeline, expert or attention-DP")
    _add(la, res, "tp", k.layout.tp)
    _precision(la, res, k)
    _add_set(
        la, res, ("kv_dtype", _kv_value(k)), ("max_num_seqs", k.max_num_seqs),
        ("max_num_batched_tokens", k.max_num_batched_tokens), ("max_model_len", k.max_model_len),
    )  # fmt: skip
    la.comments.append(
        "memory: TGI sizes its KV cache from the memory left after warm-up; no fraction passed"
    )


def _llama_cpp(la: Launch, res: F.Resolved, k: Knobs) -> None:
    if k.layout.ep > 1 or k.layout.attention_dp > 1 or k.layout.pp > 1 or k.layout.tp > 1:
        la.comments.append(
            f"{k.layout.tp * k.layout.pp} GPUs: llama.cpp splits layers over every visible GPU by default"
        )
    _add(la, res, "gpu_layers", 999)
    la.comments.append("weights: MODEL must be a GGUF file of the precision (" + k.precision + ")")
    kv = _kv_value(k)
    if kv:
        _add(la, res, "kv_dtype_k", kv)
        _add(la, res, "kv_dtype_v", kv)
    if k.max_num_seqs:
        _add(la, res, "max_num_seqs", k.max_num_seqs)
    if k.max_model_len:
        # the context is shared by the slots: n_ctx = slots x context per slot
        _add(la, res, "max_model_len", k.max_model_len * (k.max_num_seqs or 1))
    if k.max_num_batched_tokens:
        _add(la, res, "max_num_batched_tokens", k.max_num_batched_tokens)


def _lmdeploy(la: Launch, res: F.Resolved, k: Knobs) -> None:
    _add(la, res, "tp", k.layout.tp)
    if k.layout.ep > 1:
        _add(la, res, "ep", k.layout.ep)
    if k.layout.attention_dp > 1:
        _add(la, res, "dp", k.layout.attention_dp)
    _precision(la, res, k)
    _add_set(
        la, res, ("kv_dtype", _kv_value(k)), ("max_num_seqs", k.max_num_seqs),
        ("max_num_batched_tokens", k.max_num_batched_tokens),
        ("max_model_len", k.max_model_len), ("memory_fraction", _mem(k)),
    )  # fmt: skip
    if k.prefix_caching:
        _add(la, res, "prefix_caching")


_BUILD = {
    "vllm": _vllm,
    "sglang": _sglang,
    "trtllm": _trtllm,
    "tgi": _tgi,
    "llama.cpp": _llama_cpp,
    "lmdeploy": _lmdeploy,
}


def launch(k: Knobs, res: F.Resolved) -> Launch:
    """The launch command of ``k`` for release ``res`` (every flag checked against it).

    Raises
    ------
    PlannerError
        An engine without a launch command here, or a flag the release lacks.
    """
    if k.framework not in _BUILD:
        raise PlannerError(
            f"no launch command for {k.framework} (engines with one: {', '.join(ENGINES)})"
        )
    cmd = F.flag(res, "command")
    la = Launch(command=cmd)
    model = '"$MODEL"'
    if (k.framework, cmd) == ("vllm", "vllm serve") or k.framework in ("trtllm", "lmdeploy"):
        la.positional.append(model)
    else:
        _add(la, res, "model", model)
    host = "0.0.0.0"
    _add(la, res, "host", host)
    _add(la, res, "port", '"$PORT"')
    _BUILD[k.framework](la, res, k)
    _multi_node(la, res, k)
    return la


def serve_script(la: Launch, k: Knobs, header: list[str]) -> str:
    """``serve.sh``: a bash script that runs the launch command (MODEL and PORT overridable)."""
    lines = ["#!/usr/bin/env bash"]
    lines += [f"# {h}" for h in header]
    lines += [f"# {c}" for c in la.comments]
    model = k.model_repo or k.model_id
    if not k.model_repo:
        lines.append(
            f"# model: data/models.yaml has no Hugging Face id for {k.model_id}; set MODEL"
        )
    # no default where the planner names no checkpoint of the precision: the release's
    # weights (gpt-oss-120b's MXFP4 for an fp8 plan) would start silently, in another format
    # than the one predicted (a k8s pod has no MODEL unless one is added)
    default = (
        f":?set MODEL to a {k.precision} checkpoint of {k.model_id}"
        if names_no_checkpoint(k)
        else f":-{model}"
    )
    lines += [
        "set -euo pipefail",
        f'MODEL="${{MODEL{default}}}"',
        f'PORT="${{PORT:-{PORT}}}"',
    ]
    lines += la.before
    parts = [la.command + "".join(f" {p}" for p in la.positional)]
    for fl, v in la.args:
        parts.append(fl if v is None else f"{fl} {v}")
    lines.append("exec " + " \\\n  ".join(parts))
    return "\n".join(lines) + "\n"
