"""The option space of a recommendation and the rules that remove options before any physics.

An *option* is one way to serve a model: GPU x serving framework x weight precision x KV-cache
precision x tensor-parallel (TP) x pipeline-parallel (PP) size. :func:`enumerate_options`
walks the catalog, keeps what the scenario's constraints allow, and turns every combination
that cannot run into a :class:`Rejection` that names the rule it broke. Nothing here computes
memory or time; :mod:`planner.recommend.search` does that for the survivors.

Rules (each rejection's ``stage`` is the rule's name):

``framework_vendor``
    the framework does not run on the GPU's vendor (``Framework.vendors``; TensorRT-LLM is
    NVIDIA-only).
``framework_gpu``
    the framework's builds do not run on the GPU although it runs on the vendor
    (``data/frameworks.yaml`` ``gpu_support``: LMDeploy's TurboMind has no B300 / GB300
    kernels).
``model_support``
    no release of the framework serves the model's architecture (a ``served: false`` record
    of ``data/model_support.yaml``: Text Generation Inference has no gpt-oss code path), the
    rule every command applies (:func:`planner.catalog.model_support.model_support_problem`).
``framework_precision``
    the framework does not serve the weight format (``Framework.precisions``).
``model_format``
    the framework does not serve the model's mixture-of-experts architecture in the weight
    format (``data/moe_formats.yaml``, the rule every command applies:
    :func:`planner.catalog.compat.model_format_problem`; TensorRT-LLM serves DeepSeek-V3 in
    FP8, NVFP4 and W4AFP8, not W8A8 INT8). Where no record speaks, nothing is removed.
``precision_gpu``
    the GPU's architecture has neither a native nor a weight-only fallback path for the
    precision (``Precision.native_archs`` / ``fallback_archs``).
``tp_heads``
    TP does not divide the model's attention heads.
``tp_node``
    the layout needs more GPUs in one tensor-parallel group than one node holds
    (:data:`MAX_TP_PER_NODE`; an Apple SoC is one device, TP 1 only).
``quality_floor``
    the precision stores fewer bits per weight than ``constraints.min_weight_bits``.
``format_native``
    a format the engine does not serve natively on that GPU, tried only when the scenario
    names it (``constraints.precisions``): GGUF through vLLM / SGLang / TensorRT-LLM on a
    datacenter GPU (GGUF is llama.cpp's format; vLLM moves it to an out-of-tree plugin,
    frameworks.yaml), and FP4 on a GPU without FP4 tensor cores (Hopper, Ada, Ampere run it
    weight-only, slower than FP8: ``Precision.native_archs``), unless FP4 is the model's own
    release and its checkpoint is listed for the architecture
    (:func:`planner.catalog.compat.own_release_on`): gpt-oss ships only MXFP4 experts, and
    vLLM, SGLang and TensorRT-LLM serve that checkpoint on Hopper weight-only (bf16
    activations), so it is offered there like any native format. TensorRT-LLM serves it on
    Hopper only (:data:`OWN_RELEASE_ARCHS`), with bf16 KV (:data:`OWN_RELEASE_BF16_KV`).
``ep_experts``
    an expert-parallel layout whose ``ep`` does not divide the routed experts.

Layouts: every model gets tensor-parallel layouts (``DEFAULT_TPS``, PP across nodes when one
node is too small); a mixture-of-experts model on a framework that offers them
(``Framework.expert_parallel`` / ``attention_dp``) also gets ``TPn EPn`` (experts split
whole over the TP group) and ``DEPn`` (attention data-parallel and expert parallel over the
same n GPUs) for n in ``EP_SIZES`` up to the GPU's scale-up domain
(``Accelerator.nvlink_domain_gpus``; 8 when unknown): :func:`ep_layouts`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..catalog import (
    Accelerator,
    Catalog,
    Framework,
    ModelArch,
    Precision,
    compute_dtype_for,
    default_kv_precision,
)
from ..catalog.catalog import kv_quantized_problem
from ..catalog.compat import (
    framework_gpu_problem,
    framework_precision_problem,
    model_format_problem,
    own_release_on,
)
from ..catalog.layout import EP_REDUNDANT_FRAMEWORKS, Layout, layout_of
from ..catalog.model_support import model_support_problem
from ..catalog.speculative import SpecDecode, published_specs
from ..errors import PlannerError

#: TP sizes tried within one node
DEFAULT_TPS: tuple[int, ...] = (1, 2, 4, 8)
#: GPUs in one tensor-parallel group within a node. HGX / OAM baseboards hold 8 GPUs
#: (NVIDIA HGX H100/H200/B200, AMD MI300X platform); larger TP crosses nodes, where PP is
#: used instead. An assumption of the planner, not a catalog number.
MAX_TP_PER_NODE = 8
#: PP sizes tried (with TP = 8) when no single-node layout holds the model
PP_WHEN_NEEDED: tuple[int, ...] = (2, 4)
#: frameworks that are measurement harnesses, not serving engines (never recommended
#: unless a scenario names them explicitly)
NOT_SERVING_ENGINES = frozenset({"pytorch", "pytorch-naive"})
#: expert-parallel / attention-DP widths tried for MoE models (DEPn, TPn EPn)
EP_SIZES: tuple[int, ...] = (4, 8, 16, 32, 64)
#: DEP widths that need not divide the routed experts, tried only on engines with redundant
#: expert slots (``planner.catalog.layout.EP_REDUNDANT_FRAMEWORKS``) inside a scale-up domain
#: that holds them: the rack-scale decode workers of InferenceX's GB200 / GB300 recipes, DEP48
#: ("1 decode worker at DEP48", github:SemiAnalysisAI/InferenceX
#: configs/deprecated/nvidia-1k1k-master.yaml @ 843c6254, 2026-08-21) and DEP24
#: (benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/8k1k/disagg-gb300-12p1d-dep4-dep24-18-c3000.yaml)
EP_SIZES_REDUNDANT: tuple[int, ...] = (24, 48)
#: engines for which GGUF is not a native datacenter format (``format_native``)
_GGUF_FOREIGN = frozenset({"vllm", "sglang", "trtllm"})
#: (architecture, framework) pairs whose own FP4 release is served on a GPU without FP4 tensor
#: cores with bf16 KV only: TensorRT-LLM's gpt-oss guide, "KV Cache Support Matrix": Hopper
#: "bf16 kv cache dtype yes", "fp8 kv cache dtype no" (NVIDIA/TensorRT-LLM
#: examples/models/core/gpt_oss/README.md, code index id 109909354, read 2026-12-07)
OWN_RELEASE_BF16_KV = frozenset({("gpt_oss", "trtllm")})
#: (architecture, framework) -> the GPU architectures without native FP4 on which the engine
#: documents serving the model's own FP4 release; pairs not listed follow the checkpoint
#: record's archs. TensorRT-LLM's gpt-oss MoE support matrix lists Hopper and Blackwell rows
#: only (same README), so gpt-oss MXFP4 on Ampere is vLLM's (its recipe: "GPT-OSS works on
#: Ampere devices by default ... Marlin MXFP4 MoE") and SGLang's (GPUStack ran it on A100)
OWN_RELEASE_ARCHS: dict[tuple[str, str], tuple[str, ...]] = {("gpt_oss", "trtllm"): ("hopper",)}


@dataclass(frozen=True)
class Option:
    """One deployment to evaluate: records resolved once, ids for output."""

    gpu: Accelerator
    framework: Framework
    precision: Precision
    kv_precision: str
    #: the parallel layout of one replica (tp, pp, ep, attention_dp)
    layout: Layout
    spec: SpecDecode | None = None  # speculative decoding (None: off)
    #: the engine release whose fit predicts the option (``0.11.0``; None: the fit over
    #: every release), set by the search (:mod:`planner.catalog.release_profile`)
    release: str | None = None

    @property
    def engine(self) -> str:
        """``vllm@0.11.0``, or the framework id without a release."""
        return f"{self.framework.id}@{self.release}" if self.release else self.framework.id

    @property
    def gpus_per_replica(self) -> int:
        return self.layout.num_gpus

    @property
    def is_plain(self) -> bool:
        return self.layout.ep == 1 and self.layout.attention_dp == 1

    def ids(self) -> dict[str, Any]:
        lay = self.layout
        return {
            "gpu": self.gpu.id,
            "framework": self.framework.id,
            "release": self.engine if self.release else None,
            "precision": self.precision.id,
            "kv_precision": self.kv_precision,
            "tp": lay.tp,
            "pp": lay.pp,
            "ep": lay.ep,
            "attention_dp": lay.attention_dp,
            "layout": lay.describe(self.gpu),
            "spec_method": self.spec.method if self.spec else None,
            "spec_tokens": self.spec.spec_tokens if self.spec else None,
            "acceptance_length": self.spec.acceptance_length if self.spec else None,
        }

    def label(self) -> str:
        default = default_kv_precision(self.precision, self.framework).id
        kv = "" if self.kv_precision == default else f" kv={self.kv_precision}"
        if self.is_plain:
            pp = f" pp={self.layout.pp}" if self.layout.pp > 1 else ""
            shape = f"tp={self.layout.tp}{pp}"
        else:
            shape = self.layout.describe(self.gpu)
        spec = f", {self.spec.label()}" if self.spec else ""
        return f"{self.gpu.id} {self.engine} {self.precision.id}{kv} {shape}{spec}"


@dataclass(frozen=True)
class Rejection:
    """An option (or a group of options) that cannot be recommended, and why.

    ``why``: the reason, or a function of no argument that makes it (a memory rejection's
    suggestions, ~1 ms each, are made only where the reason is read: :attr:`reason`)."""

    stage: str
    why: str | Callable[[], str]
    gpu: str | None = None
    framework: str | None = None
    precision: str | None = None
    kv_precision: str | None = None
    #: the rejected option's layout (None: a whole group of options was rejected)
    layout: Layout | None = None

    @property
    def reason(self) -> str:
        """The reason (made now, once, where ``why`` is a function)."""
        if not isinstance(self.why, str):
            object.__setattr__(self, "why", self.why())
        return self.why  # type: ignore[return-value]

    @classmethod
    def of(cls, opt: Option, stage: str, reason: str | Callable[[], str]) -> Rejection:
        # positional, in field order (a search makes ~10,000 of them)
        return cls(
            stage, reason, opt.gpu.id, opt.framework.id, opt.precision.id, opt.kv_precision,
            opt.layout,
        )  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        lay = self.layout
        return {
            "gpu": self.gpu,
            "framework": self.framework,
            "precision": self.precision,
            "kv_precision": self.kv_precision,
            "tp": lay.tp if lay else None,
            "pp": lay.pp if lay else None,
            "ep": lay.ep if lay else None,
            "attention_dp": lay.attention_dp if lay else None,
            "stage": self.stage,
            "reason": self.reason,
        }


def _pick(cat: Catalog, kind: str, wanted: tuple[str, ...], all_items: tuple[Any, ...]):
    """Catalog records for the ids a constraint allows (all when it allows everything)."""
    if not wanted:
        return list(all_items)
    get = getattr(cat, kind)
    out, seen = [], set()
    for w in wanted:
        rec = get(w)  # unknown ids raise UnknownIdError with the valid list
        if rec.id not in seen:
            seen.add(rec.id)
            out.append(rec)
    return out


def kv_choices(
    precision: Precision,
    allowed: tuple[str, ...] = (),
    framework: Framework | None = None,
    model: ModelArch | None = None,
) -> list[str]:
    """KV precisions tried with a weight precision: the framework's default for the checkpoint
    (:func:`planner.catalog.default_kv_precision`), plus fp8 KV where offered.

    A constraint list narrows it (and may name any KV option of the precision)."""
    default = default_kv_precision(precision, framework, model).id
    opts = list(dict.fromkeys([default, *precision.kv_options]))
    # an engine whose quantized KV precisions were read offers those, not fp8 (LMDeploy: int8)
    opts = [k for k in opts if not kv_quantized_problem(framework, k, precision, model)]
    quantized = framework.kv_quantized if framework and framework.kv_quantized else ("fp8",)
    if allowed:
        return [k for k in opts if k in allowed]
    return [k for k in opts if k in (default, quantized[0])]


def enumerate_options(
    cat: Catalog,
    model: ModelArch,
    *,
    gpus: tuple[str, ...] = (),
    frameworks: tuple[str, ...] = (),
    precisions: tuple[str, ...] = (),
    kv_precisions: tuple[str, ...] = (),
    tps: tuple[int, ...] = DEFAULT_TPS,
    max_gpus_per_replica: int | None = None,
    min_weight_bits: float | None = None,
    speculative: bool = False,
    spec_workload: str | None = None,
    acceptance_length: float | None = None,
    datacenter_only: bool = False,
) -> tuple[list[Option], list[Rejection]]:
    """Every (GPU, framework, precision, KV precision, TP) the catalog and constraints allow.

    Parameters
    ----------
    cat : catalog
    model : the model (resolved)
    gpus, frameworks, precisions, kv_precisions : allowed ids (empty: all); ids are
        resolved through the catalog, so an unknown id is an error listing the valid ones
    tps : TP sizes to try [GPUs]
    max_gpus_per_replica : largest TP x PP allowed
    min_weight_bits : quality floor [bits per weight], e.g. 8 excludes 4-bit formats
    speculative : also every option with each published speculative setting its engine
        runs for the model (:func:`planner.catalog.speculative.published_specs`)
    spec_workload : the prompts' kind those settings read their acceptance length for
        (chat, code, random, ...; None: natural text)
    acceptance_length : the user's acceptance length, which replaces the published one
        [tokens/step]
    datacenter_only : leave out GPUs whose driver licence excludes datacenter deployment
        (``Accelerator.datacenter_licensed`` False: GeForce), one rejection per GPU

    Returns
    -------
    (options, rejections)
        options that pass every rule of the module docstring, and one rejection per
        option (or per group, e.g. a whole framework on a vendor) that does not.
    """
    g_list = _pick(cat, "gpu", gpus, cat.accelerators)
    f_list = _pick(cat, "framework", frameworks, cat.frameworks)
    if not frameworks:
        f_list = [f for f in f_list if f.id not in NOT_SERVING_ENGINES]
    p_list = _pick(cat, "precision", precisions, cat.precisions)
    for k in kv_precisions:
        cat.kv_precision(k)
    tps = tuple(sorted({int(t) for t in tps}))
    if not tps or tps[0] < 1:
        raise PlannerError(f"TP sizes must be whole numbers >= 1, got {tps}")

    options: list[Option] = []
    rejected: list[Rejection] = []
    # one Layout per shape, shared by the options that have it (a frozen record; building
    # one per option was 8,000 validations of the same few shapes: 0.05 s of a search)
    layouts: dict[tuple[int, ...], Layout] = {}

    def shape(*args: int) -> Layout:
        lay = layouts.get(args)
        if lay is None:
            lay = layouts[args] = layout_of(*args)
        return lay

    for g in g_list:
        if datacenter_only and g.datacenter_licensed is False:
            rejected.append(Rejection("licence", licence_note(g), gpu=g.id))
            continue
        for fw in f_list:
            why = framework_gpu_problem(fw, g, cat.framework_gpus)
            if why:
                stage = "framework_vendor" if g.vendor not in fw.vendors else "framework_gpu"
                rejected.append(Rejection(stage, why, gpu=g.id, framework=fw.id))
                continue
            why = model_support_problem(cat.model_support, fw.id, model)
            if why:
                rejected.append(Rejection("model_support", why, gpu=g.id, framework=fw.id))
                continue
            ids = {p.id for p in p_list}
            for p in p_list:
                base = {"gpu": g.id, "framework": fw.id, "precision": p.id}
                if p.id == "fp16" and "bf16" in ids and _same_as_bf16(g, fw, cat):
                    continue  # identical to bf16 here: evaluated once, as bf16
                if p.id not in fw.precisions:
                    rejected.append(
                        Rejection(
                            "framework_precision",
                            f"{fw.name} does not serve {p.id} weights "
                            f"(it serves {', '.join(fw.precisions)})",
                            **base,
                        )
                    )
                    continue
                why_mf = model_format_problem(cat.moe_formats, model, fw, p)
                if why_mf:
                    rejected.append(Rejection("model_format", why_mf, **base))
                    continue
                try:
                    compute_dtype_for(p, g)
                except PlannerError as e:
                    rejected.append(Rejection("precision_gpu", str(e), **base))
                    continue
                why_gap = framework_precision_problem(fw, p, g)
                if why_gap:
                    rejected.append(Rejection("framework_precision", why_gap, **base))
                    continue
                if min_weight_bits is not None and p.weight_bits < min_weight_bits - 1e-9:
                    rejected.append(
                        Rejection(
                            "quality_floor",
                            f"{p.id} stores {p.weight_bits:g} bits per weight, below the "
                            f"quality floor of {min_weight_bits:g} (constraints.min_weight_bits)",
                            **base,
                        )
                    )
                    continue
                why_fmt = "" if precisions else format_problem(p, g, fw, model)
                if why_fmt:
                    rejected.append(Rejection("format_native", why_fmt, **base))
                    continue
                kvs = kv_choices(p, kv_precisions, fw, model)
                if "fp8" in kvs and _bf16_kv_only(model, p, g, fw):
                    kvs = [k for k in kvs if k != "fp8"]
                    if not kvs:
                        rejected.append(Rejection("format_native", _BF16_KV_WHY, **base))
                        continue
                for tp in tps:
                    for kv in kvs:
                        opt = Option(g, fw, p, kv, shape(tp))
                        why = _layout_problem(model, g, opt.layout, max_gpus_per_replica)
                        if why:
                            rejected.append(Rejection.of(opt, why[0], why[1]))
                        else:
                            options.append(opt)
                for ep, dp in ep_layouts(model, g, fw, tps):
                    for kv in kvs:
                        opt = Option(g, fw, p, kv, shape(ep // dp, 1, ep, dp))
                        why = _ep_problem(model, opt, max_gpus_per_replica)
                        if why:
                            rejected.append(Rejection.of(opt, why[0], why[1]))
                        else:
                            options.append(opt)
    if speculative:  # speculation on, per published method x K, beside every option
        specs = {
            f.id: published_specs(
                model, f, workload=spec_workload, acceptance_length=acceptance_length
            )
            for f in f_list
        }
        options += [replace(o, spec=s) for o in options for s in specs[o.framework.id]]
    return options, rejected


def is_datacenter(g: Accelerator) -> bool:
    """A datacenter accelerator (not a GeForce / RTX workstation card or an Apple SoC)."""
    return g.vendor != "apple" and "rtx" not in g.id


def format_problem(
    p: Precision, g: Accelerator, fw: Framework, model: ModelArch | None = None
) -> str:
    """Why a format is not what ``fw`` serves natively on ``g`` ('' when it is): the
    ``format_native`` rule of the module docstring (``model`` None: no model's own release
    is considered)."""
    if p.id.startswith("gguf") and fw.id in _GGUF_FOREIGN and is_datacenter(g):
        return (
            f"{p.id} is llama.cpp's format: {fw.name} on a datacenter GPU serves FP8 / INT4 / "
            "FP4 checkpoints natively (tried only when the scenario names the format)"
        )
    if p.id == "fp4" and g.arch not in p.native_archs:
        if model is not None and own_release_on(model, p, g):
            archs = OWN_RELEASE_ARCHS.get((model.architecture, fw.id))
            if archs is None or g.arch in archs:
                return ""  # the model's own release, served weight-only (module docstring)
            return (
                f"{fw.name} documents {model.id}'s own {p.id} release without FP4 tensor cores "
                f"on {', '.join(archs)} only, not on {g.id} ({g.arch})"
            )
        return (
            f"{g.id} ({g.arch}) has no FP4 tensor cores: FP4 runs weight-only there (tried "
            "only when the scenario names the format, or for a model whose own release is "
            "FP4)"
        )
    return ""


_BF16_KV_WHY = (
    "TensorRT-LLM serves gpt-oss's own MXFP4 release on Hopper with bf16 KV only (its gpt-oss "
    "guide's KV cache support matrix: fp8 KV on Blackwell only)"
)


def _bf16_kv_only(model: ModelArch, p: Precision, g: Accelerator, fw: Framework) -> bool:
    """Whether ``fw`` serves ``model``'s own ``p`` release on ``g`` with bf16 KV only
    (:data:`OWN_RELEASE_BF16_KV`, on a GPU without native ``p``)."""
    return (
        (model.architecture, fw.id) in OWN_RELEASE_BF16_KV
        and g.arch not in p.native_archs
        and own_release_on(model, p, g)
    )


def ep_layouts(
    model: ModelArch, g: Accelerator, fw: Framework, tps: tuple[int, ...] = DEFAULT_TPS
) -> list[tuple[int, int]]:
    """(ep, attention_dp) pairs tried for a MoE model on ``fw``: ``TPn EPn`` (attention_dp
    1) for the TP sizes tried, and ``DEPn`` (attention_dp = ep = n) for n in
    :data:`EP_SIZES` up to the scale-up domain; none for a dense model or an engine without
    expert parallel."""
    if not model.is_moe or not fw.expert_parallel or g.vendor == "apple":
        return []
    dom = getattr(g, "nvlink_domain_gpus", None) or MAX_TP_PER_NODE
    out: list[tuple[int, int]] = [(t, 1) for t in tps if t > 1]
    if fw.attention_dp:
        out += [(n, n) for n in dep_sizes(model, fw.id, dom)]
    return out


def dep_sizes(model: ModelArch, framework_id: str, domain_gpus: int) -> tuple[int, ...]:
    """``DEP n`` widths tried for ``model`` on an engine inside a scale-up domain of
    ``domain_gpus``: :data:`EP_SIZES`, and :data:`EP_SIZES_REDUNDANT` where the engine places
    experts on redundant slots and ``n`` does not divide the routed experts (a width that
    divides them is a plain EP width, tried as such when listed), in increasing order."""
    n_exp = int(model.num_experts or 0)
    extra = ()
    if framework_id in EP_REDUNDANT_FRAMEWORKS:
        extra = tuple(n for n in EP_SIZES_REDUNDANT if n_exp and n_exp % n and n <= n_exp)
    return tuple(sorted(n for n in (*EP_SIZES, *extra) if n <= domain_gpus))


def _ep_problem(model: ModelArch, opt: Option, max_gpus: int | None) -> tuple[str, str] | None:
    n_exp = int(model.num_experts or 0)
    lay = opt.layout
    if lay.ep > n_exp:
        return ("ep_experts", f"ep={lay.ep} exceeds the {n_exp} routed experts of {model.id}")
    if n_exp % lay.ep and opt.framework.id not in EP_REDUNDANT_FRAMEWORKS:
        return (
            "ep_experts",
            f"ep={lay.ep} does not divide the {n_exp} routed experts of {model.id}, and "
            f"{opt.framework.id} has no redundant expert slots",
        )
    if lay.tp > 1 and model.num_attention_heads % lay.tp:
        return (
            "tp_heads",
            f"tp={lay.tp} does not divide the {model.num_attention_heads} attention heads "
            f"of {model.id}",
        )
    n = opt.gpus_per_replica
    if max_gpus is not None and n > max_gpus:
        return (
            "constraint",
            f"{n} GPUs per replica exceed constraints.max_gpus_per_replica={max_gpus}",
        )
    return None


def licence_note(g: Accelerator) -> str:
    """Why a card is not for a datacenter (its ``datacenter_licensed_source``), or ''."""
    if g.datacenter_licensed is not False:
        return ""
    licence = (g.datacenter_licensed_source or "").split(" '")[0]  # the title, not the quote
    return f"{g.id}: its driver licence does not permit datacenter deployment ({licence})"


def _same_as_bf16(g: Accelerator, fw: Framework, cat: Catalog) -> bool:
    """fp16 weights behave exactly like bf16 (same bits, same tensor rate) on this GPU and
    framework, so the option is a duplicate."""
    if "bf16" not in fw.precisions:
        return False
    try:
        return compute_dtype_for(cat.precision("bf16"), g) == "bf16" and g.peak_tflops(
            "fp16"
        ) == g.peak_tflops("bf16")
    except PlannerError:
        return False


def _layout_problem(
    model: ModelArch,
    gpu: Accelerator,
    lay: Layout,
    max_gpus: int | None,
    max_tp: int = MAX_TP_PER_NODE,
) -> tuple[str, str] | None:
    tp, pp = lay.tp, lay.pp
    if tp > 1 and model.num_attention_heads % tp:
        return (
            "tp_heads",
            f"tp={tp} does not divide the {model.num_attention_heads} attention heads of {model.id}",
        )
    if gpu.vendor == "apple" and lay.num_gpus > 1:
        return ("tp_node", f"{gpu.id} is one system-on-chip: no tensor or pipeline parallelism")
    if tp > max_tp:
        return (
            "tp_node",
            f"tp={tp} exceeds the {MAX_TP_PER_NODE} GPUs of one node (planner assumption: "
            "8-GPU baseboards); use pp across nodes",
        )
    if tp > MAX_TP_PER_NODE and tp > (gpu.nvlink_domain_gpus or 0) and not gpu.scaleout_gbs_per_gpu:
        # a TP group over several servers runs its all-reduces over the scale-out network,
        # whose bandwidth the catalog must give (hardware.yaml scaleout_gbs_per_gpu)
        return (
            "tp_node",
            f"tp={tp} spans servers of {gpu.id}, whose scale-out network bandwidth per GPU is "
            "unknown (hardware.yaml scaleout_gbs_per_gpu); use pp across nodes",
        )
    if pp > model.num_hidden_layers:
        return ("tp_node", f"pp={pp} exceeds the {model.num_hidden_layers} layers of {model.id}")
    if max_gpus is not None and lay.num_gpus > max_gpus:
        return (
            "constraint",
            f"{lay.num_gpus} GPUs per replica exceed constraints.max_gpus_per_replica={max_gpus}",
        )
    return None


def pp_options(
    model: ModelArch, opt: Option, max_gpus_per_replica: int | None = None
) -> list[Option]:
    """Multi-node layouts for an option whose single-node layouts do not hold the model:
    TP = 8 within a node with PP across nodes, and TP 16 over two nodes (or inside one
    NVL72-class scale-up domain); the step model charges TP 16's all-reduces at the
    scale-out bandwidth when it crosses domains (``Accelerator.scaleout_gbs_per_gpu``)."""
    tp2 = 2 * MAX_TP_PER_NODE
    cands = [(layout_of(MAX_TP_PER_NODE, pp), MAX_TP_PER_NODE) for pp in PP_WHEN_NEEDED]
    cands.append((layout_of(tp2), tp2))
    return [
        replace(opt, layout=lay, spec=None, release=None)
        for lay, max_tp in cands
        if _layout_problem(model, opt.gpu, lay, max_gpus_per_replica, max_tp=max_tp) is None
    ]


def layout_text(r: dict[str, Any]) -> str:
    """A result row's layout as the reports write it: ``tp=8`` (`` pp=2``) for a plain
    tensor-parallel replica, the layout's name otherwise (``DEP8``, ``TP8 EP8``)."""
    if r.get("ep", 1) in (1, None) and r.get("attention_dp", 1) in (1, None):
        return f"tp={r['tp']}" + (f" pp={r['pp']}" if (r.get("pp") or 1) > 1 else "")
    return str(r.get("layout") or f"tp={r['tp']} ep={r['ep']} attention_dp={r['attention_dp']}")


def spec_flags(spec: SpecDecode | None) -> str:
    """The CLI flags of a speculative setting (``--spec-method none`` when off, so that a
    scenario file's own setting cannot leak in), e.g. for ``reproduce``."""
    if spec is None:
        return "--spec-method none "
    return (
        f"--spec-method {spec.method} --spec-tokens {spec.spec_tokens} "
        f"--acceptance-length {spec.acceptance_length!r} "
    )
