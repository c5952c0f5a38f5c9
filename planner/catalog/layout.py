"""The parallel layout of one replica: tensor, pipeline, expert and attention-data parallel.

One :class:`Layout` says how a model is spread over the GPUs of a replica, in the terms the
engines use (vLLM / SGLang / TensorRT-LLM):

* ``tp``: tensor parallel of the attention (and dense) layers inside one attention rank;
* ``attention_dp``: attention data-parallel ranks ("DP attention", TensorRT-LLM's
  ``enable_attention_dp``): each rank holds a whole copy of the attention weights (split by
  ``tp``) and its own sequences' KV cache;
* ``ep``: expert parallel: the routed experts are divided among ``ep`` groups;
* ``moe_tp``: the tensor split of each expert inside an EP group (the width rule below fixes
  it unless given);
* ``pp``: pipeline stages (each stage holds ``ceil(L / pp)`` layers).

**Width rule** (AIConfigurator's model config, SGLang's ``--tp`` with ``--dp`` and ``--ep``):
the GPUs of one pipeline stage are counted once by the attention side and once by the MoE
side, and both must agree::

    width = tp x attention_dp = moe_tp x ep        GPUs per replica = width x pp

So ``DEP8`` (SGLang ``--tp 8 --dp 8 --enable-dp-attention --ep 8``; TensorRT-LLM
``tp_size 8, enable_attention_dp, moe_expert_parallel_size 8``) is ``tp=1,
attention_dp=8, ep=8, moe_tp=1``; ``TP8 EP8`` is ``tp=8, ep=8, moe_tp=1``; plain ``TP8`` of
a MoE model is ``tp=8, ep=1, moe_tp=8`` (every GPU holds 1/8 of every expert).

A layout is a value: frozen, validated on construction (whole numbers >= 1, the width rule);
the model-dependent rules (heads, layers, experts, dense models) are :func:`check_for_model`.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field, model_validator

from planner.catalog.records import Accelerator, Framework, Frozen, ModelArch
from planner.errors import PlannerError, shown

__all__ = [
    "ADP_BALANCE_DEFAULT",
    "ADP_BALANCE_FRAMEWORKS",
    "EP_REDUNDANT_FRAMEWORKS",
    "Layout",
    "check_for_model",
    "check_framework_layout",
    "hosts_spanned",
    "layout_of",
    "nodes_spanned",
]


#: the engines' default attention-DP balance: off. TensorRT-LLM ``AttentionDpConfig.enable_balance``
#: "default=False" (tensorrt_llm/llmapi/llm_args.py, release/1.2); SGLang and vLLM have no such
#: gate (each attention-DP rank schedules its own requests' prompts), so a prompt chunk runs
#: on its own rank while the others wait at the next MoE layer.
ADP_BALANCE_DEFAULT = False
#: frameworks that offer the balance knob (TensorRT-LLM ``attention_dp_config``)
ADP_BALANCE_FRAMEWORKS = ("trtllm",)
#: frameworks that place ``E`` routed experts over ``ep`` ranks that do not divide them, with
#: redundant copies filling ``ep x ceil(E / ep)`` slots (each rank holds ``ceil(E / ep)``):
#: TensorRT-LLM's MoE load balancer ``num_slots`` ("Must be >= total experts", 288 slots for
#: DeepSeek-R1's 256 experts: examples/wide_ep/README.md); SGLang ``--ep-num-redundant-experts``
#: ("Allocate this number of redundant experts in expert parallel", server_args.py; 32 in its
#: DeepSeek wide-EP recipes); vLLM ``--enable-eplb --num-redundant-experts``
#: (``ParallelConfig.num_redundant_experts``, ``FusedMoE(num_redundant_experts=...)``).
#: The other frameworks offer no expert parallel at all (frameworks.yaml expert_parallel).
EP_REDUNDANT_FRAMEWORKS = ("trtllm", "sglang", "vllm")


class Layout(Frozen):
    """Parallel layout of one replica (see the module docstring for the width rule)."""

    tp: int = Field(1, ge=1, le=4096)
    pp: int = Field(1, ge=1, le=1024)
    ep: int = Field(1, ge=1, le=4096)
    attention_dp: int = Field(1, ge=1, le=4096)
    moe_tp: int | None = Field(None, ge=1, le=4096)
    attention_dp_balance: bool | None = Field(
        None,
        description="attention-DP balance (TensorRT-LLM attention_dp_config.enable_balance: "
        "prompt work spread over the ranks); None: the engine's default, off "
        "(ADP_BALANCE_DEFAULT)",
    )

    @model_validator(mode="after")
    def _width_rule(self) -> Layout:
        if self.attention_dp_balance and self.attention_dp == 1:
            raise ValueError(
                "attention_dp_balance: balancing needs attention data-parallel ranks "
                "(attention_dp > 1), got attention_dp=1"
            )
        width = self.tp * self.attention_dp
        if self.moe_tp is None:
            if width % self.ep:
                raise ValueError(
                    f"width rule: tp x attention_dp = {self.tp} x {self.attention_dp} = {width} "
                    f"GPUs must equal moe_tp x ep, and ep={self.ep} does not divide {width}"
                )
            object.__setattr__(self, "moe_tp", width // self.ep)
        elif self.moe_tp * self.ep != width:
            raise ValueError(
                f"width rule: tp x attention_dp = {self.tp} x {self.attention_dp} = {width} GPUs "
                f"but moe_tp x ep = {self.moe_tp} x {self.ep} = {self.moe_tp * self.ep}"
            )
        return self

    # ------------------------------------------------------------------ counts
    @property
    def width(self) -> int:
        """GPUs of one pipeline stage: ``tp x attention_dp`` (= ``moe_tp x ep``)."""
        return self.tp * self.attention_dp

    @property
    def num_gpus(self) -> int:
        """GPUs of the replica: ``width x pp``."""
        return self.width * self.pp

    @property
    def moe_split(self) -> int:
        """``moe_tp`` as an int (the validator always sets it)."""
        return int(self.moe_tp or 1)

    @property
    def is_plain(self) -> bool:
        """True for a TP x PP layout (no expert or attention-data parallel)."""
        return self.ep == 1 and self.attention_dp == 1

    @property
    def balanced(self) -> bool:
        """Whether the engine balances prompt work over the attention-DP ranks: the knob, or
        the engine default :data:`ADP_BALANCE_DEFAULT` (off) when unset."""
        if self.attention_dp_balance is None:
            return ADP_BALANCE_DEFAULT
        return self.attention_dp_balance

    # ------------------------------------------------------------------ text
    @property
    def label(self) -> str:
        """Short name as engine docs and InferenceX write it: ``TP8``, ``TP8 EP8``, ``DEP8``
        (attention data-parallel over every GPU with expert parallel over every GPU),
        ``TP2 DP4 EP8``, with `` PP2`` for pipeline stages."""
        w = self.width
        if self.is_plain:
            core = f"TP{self.tp}"
        elif self.tp == 1 and self.attention_dp == w and self.ep == w:
            core = f"DEP{w}"
        else:
            parts = [f"TP{self.tp}"] if self.tp > 1 or self.attention_dp == 1 else []
            if self.attention_dp > 1:
                parts.append(f"DP{self.attention_dp}")
            if self.ep > 1:
                parts.append(f"EP{self.ep}")
            if self.moe_split > 1 and self.ep > 1:
                parts.append(f"MoE-TP{self.moe_split}")
            core = " ".join(parts)
        return core + (f" PP{self.pp}" if self.pp > 1 else "")

    def describe(self, gpu: Accelerator | None = None) -> str:
        """:attr:`label`, with the node count when the replica spans more than one
        scale-up (NVLink) domain of ``gpu``: ``TP16 (2 nodes)``."""
        n = nodes_spanned(self, gpu) if gpu is not None else 1
        return self.label + (f" ({n} nodes)" if n > 1 else "")

    def as_dict(self) -> dict[str, int]:
        return {
            "tp": self.tp,
            "pp": self.pp,
            "ep": self.ep,
            "attention_dp": self.attention_dp,
            "moe_tp": self.moe_split,
        }


def layout_of(
    tp: Any = 1,
    pp: Any = 1,
    ep: Any = 1,
    attention_dp: Any = 1,
    moe_tp: Any = None,
    attention_dp_balance: bool | None = None,
) -> Layout:
    """A :class:`Layout` from loose values (CLI flags, scenario fields, CSV cells), with a
    one-line error naming the field: ``ep must be a whole number >= 1, got 2.5``."""
    vals: dict[str, int | None] = {}
    for name, v in (
        ("tp", tp),
        ("pp", pp),
        ("ep", ep),
        ("attention_dp", attention_dp),
        ("moe_tp", moe_tp),
    ):
        if v is None:
            if name == "moe_tp":
                vals[name] = None
                continue
            v = 1
        try:
            ok = not isinstance(v, bool) and float(v) == int(v) and int(v) >= 1
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise PlannerError(f"{name} must be a whole number >= 1, got {shown(v)}")
        vals[name] = int(v)
    if (vals["tp"] or 1) * (vals["attention_dp"] or 1) > 4096 or (vals["pp"] or 1) > 1024:
        raise PlannerError(
            f"layout too large: tp x attention_dp = {vals['tp']} x {vals['attention_dp']} "
            f"(at most 4096 GPUs a stage), pp = {vals['pp']} (at most 1024)"
        )
    if attention_dp_balance is not None and not isinstance(attention_dp_balance, bool):
        raise PlannerError(
            f"attention_dp_balance must be true or false, got {shown(attention_dp_balance)}"
        )
    try:
        return Layout(**vals, attention_dp_balance=attention_dp_balance)
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        msg = str(e)
        i = msg.find("width rule")
        if i < 0:
            i = msg.find("attention_dp_balance: ")
        if i >= 0:
            raise PlannerError(msg[i:].splitlines()[0].split(" [type=")[0]) from None
        raise PlannerError(f"invalid layout {vals}: {msg.splitlines()[-1]}") from None


def check_for_model(m: ModelArch, layout: Layout, framework_id: str | None = None) -> Layout:
    """Refuse a layout the model cannot take, with a one-line error naming the field.

    * ``tp`` divides the query heads; ``pp`` at most the layers (as for dense models);
    * ``ep > 1`` needs a MoE model and at most as many ranks as routed experts; an ``ep``
      that does not divide them is placed with redundant expert slots (``ceil(E / ep)`` per
      rank) where the framework offers them (:data:`EP_REDUNDANT_FRAMEWORKS`; ``framework_id``
      None: the caller checks the framework);
    * ``moe_tp`` divides the expert FFN width (each GPU holds whole columns);
    * ``attention_dp > 1`` needs a framework that offers attention data-parallel (checked by
      the caller with the framework record: :func:`check_framework_layout`).
    """
    if layout.tp > 1 and m.num_attention_heads % layout.tp:
        raise PlannerError(
            f"tp={layout.tp} does not divide the {m.num_attention_heads} attention heads of {m.id}"
        )
    if layout.pp > m.num_hidden_layers:
        raise PlannerError(f"pp={layout.pp} exceeds the {m.num_hidden_layers} layers of {m.id}")
    if not m.is_moe:
        if layout.ep > 1:
            raise PlannerError(
                f"ep={layout.ep}: expert parallel needs a mixture-of-experts model; {m.id} is dense"
            )
        if layout.attention_dp > 1:
            raise PlannerError(
                f"attention_dp={layout.attention_dp}: attention data-parallel is offered for "
                f"mixture-of-experts models (the expert layers span the ranks); {m.id} is dense: "
                "use more replicas instead"
            )
        return layout
    n_exp = int(m.num_experts or 0)
    if layout.ep > n_exp:
        raise PlannerError(
            f"ep={layout.ep} exceeds the {n_exp} routed experts of {m.id} "
            "(every expert-parallel rank holds at least one expert)"
        )
    if layout.ep > 1 and n_exp % layout.ep and framework_id not in (None, *EP_REDUNDANT_FRAMEWORKS):
        raise PlannerError(
            f"ep={layout.ep} does not divide the {n_exp} routed experts of {m.id}, and "
            f"{framework_id} has no redundant expert slots (only {', '.join(EP_REDUNDANT_FRAMEWORKS)})"
        )
    inter = m.moe_intermediate_size or m.intermediate_size or 0
    if layout.moe_split > 1 and inter and inter % layout.moe_split:
        raise PlannerError(
            f"moe_tp={layout.moe_split} does not divide the expert FFN width {inter} of {m.id}"
        )
    return layout


def nodes_spanned(layout: Layout, gpu: Accelerator) -> int:
    """Scale-up (NVLink / Infinity Fabric) domains a replica spans: ``ceil(GPUs /
    domain size)``; 1 when the GPU's domain size is unknown."""
    dom = getattr(gpu, "nvlink_domain_gpus", None)
    if not dom:
        return 1
    return math.ceil(layout.num_gpus / dom)


def hosts_spanned(layout: Layout, gpu: Accelerator) -> int:
    """Hosts (OS instances, each its own engine process group) a replica spans:
    ``ceil(GPUs / gpus_per_host)``, where the host is smaller than the scale-up domain (4 GPUs
    of a GB200 NVL72 compute tray), else :func:`nodes_spanned`."""
    per_host = getattr(gpu, "gpus_per_host", None)
    if per_host:
        return math.ceil(layout.num_gpus / per_host)
    return nodes_spanned(layout, gpu)


def check_framework_layout(fw: Framework, layout: Layout, gpu: Accelerator | None = None) -> Layout:
    """Refuse a layout the framework does not offer (one line naming the field and the
    framework's source): ``ep > 1`` needs ``Framework.expert_parallel``, ``attention_dp >
    1`` needs ``Framework.attention_dp``, and (with ``gpu``) a replica over more than one
    node or scale-up domain needs ``Framework.multi_node`` (documented, not unknown)."""
    if gpu is not None and fw.multi_node is not True:
        n = hosts_spanned(layout, gpu)
        if n > 1:
            why = (
                f"{fw.name} does not serve one replica across nodes (frameworks.yaml "
                f"multi_node: false; {(fw.multi_node_source or '').split(' ')[0]})"
                if fw.multi_node is False
                else f"no multi-node mode of {fw.name} is documented in data/frameworks.yaml "
                "(multi_node)"
            )
            raise PlannerError(
                f"{layout.label} spans {n} hosts ({gpu.gpus_per_host or gpu.nvlink_domain_gpus} "
                f"{gpu.id} each): {why}; "
                "use vllm, sglang or trtllm, or a layout inside one node"
            )
    if layout.ep > 1 and not fw.expert_parallel:
        raise PlannerError(
            f"ep={layout.ep}: {fw.name} does not offer expert parallel (frameworks.yaml "
            "expert_parallel); use vllm, sglang or trtllm, or ep=1"
        )
    if layout.attention_dp > 1 and not fw.attention_dp:
        raise PlannerError(
            f"attention_dp={layout.attention_dp}: {fw.name} does not offer attention "
            "data-parallel (frameworks.yaml attention_dp); use vllm, sglang or trtllm, or "
            "attention_dp=1"
        )
    if layout.attention_dp_balance and fw.id not in ADP_BALANCE_FRAMEWORKS:
        raise PlannerError(
            f"attention_dp_balance: {fw.name} has no attention-DP balance setting (TensorRT-LLM's "
            "attention_dp_config.enable_balance); use trtllm, or leave it unset"
        )
    return layout
