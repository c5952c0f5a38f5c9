"""Catalog records: accelerators, prices, models, precisions, frameworks.

Every record is a frozen pydantic model (:class:`Frozen`: immutable, no unknown keys, no inf/nan);
catalog entries also carry ``source`` and ``as_of`` (:class:`Sourced`).

Units follow the names: ``_gb`` is decimal gigabytes (1e9 bytes), ``_mib`` mebibytes (2**20 bytes),
``_gbs`` GB/s,
``_tflops`` dense TFLOPS (no structured sparsity), ``_tops`` dense TOPS, ``_w`` watts.
A number that no source gives is ``None``; the engine then raises
:class:`~planner.errors.MissingDataError` saying what it cannot compute.
"""

from __future__ import annotations

import datetime as _dt
import re
from functools import cache
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, model_validator

from planner.errors import MissingDataError, PlannerError
from planner.files import IdentityMemo

MIB = 2**20  # bytes in a mebibyte
GIB = 2**30  # bytes in a gibibyte

ComputeDtype = Literal["bf16", "fp16", "fp8", "int8", "fp4"]


class Frozen(BaseModel):
    """Base for every catalog record: immutable, no unknown keys, and one rule for every
    field at once (:func:`_check_value`): a number field takes numbers only (not ``true``
    nor ``"80"``), a ``*_range`` pair is ordered, a date is not in the future (a date written
    with a time of day, ``2026-01-01T10:00:00``, is read as its day)."""

    # defer_build: a model's validator is built on its first validation, so the many records
    # a command never validates cost no start-up time
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _one_rule_per_field(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, kind in _field_kinds(cls).items():
                value = data.get(name)
                if value is not None:
                    if kind == "date" and isinstance(value, _dt.datetime):
                        # a date written with a time of day (2026-01-01T10:00:00): its day
                        data = {**data, name: (value := value.date())}
                    _check_value(name, kind, value)
        return data


class FieldValueError(ValueError):
    """A ValueError about one field, raised before pydantic sees the field: ``field`` and
    ``value`` let an error message name it as pydantic names its own field errors."""

    def __init__(self, field: str, message: str, value: Any):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.value = value


def field_error(err: dict[str, Any]) -> dict[str, Any]:
    """A pydantic error dict with the location, message and input of a
    :class:`FieldValueError` put where pydantic puts them for a field (others unchanged)."""
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, FieldValueError):
        return {
            **err,
            "loc": (*err["loc"], cause.field),
            "msg": cause.message,
            "input": cause.value,
        }
    return err


def _kind_of(annotation: Any) -> str | None:
    """'number', 'numbers' (a tuple of numbers) or 'date' for the field types the rule checks."""
    args = (
        set(get_args(annotation)) if get_origin(annotation) in (Union, UnionType) else {annotation}
    )
    args.discard(type(None))
    if args and args <= {int, float}:
        return "number"
    if args == {_dt.date}:
        return "date"
    if len(args) == 1:
        (a,) = args
        inner = set(get_args(a)) - {Ellipsis}
        if get_origin(a) is tuple and inner and inner <= {int, float}:
            return "numbers"
    return None


@cache
def _field_kinds(cls: type[BaseModel]) -> dict[str, str]:
    """Field name -> kind, for the fields the rule checks; a field with its own ``before``
    validator (e.g. ``percentile: p90``) parses its text itself and is left to it."""
    own = {
        f
        for d in cls.__pydantic_decorators__.field_validators.values()
        if d.info.mode in ("before", "plain", "wrap")
        for f in d.info.fields
    }
    kinds = {name: _kind_of(f.annotation) for name, f in cls.model_fields.items()}
    return {k: v for k, v in kinds.items() if v and k not in own}


def _check_value(name: str, kind: str, value: Any) -> None:
    """Raise a ValueError naming field ``name`` and what it expects, when ``value`` breaks the
    rule for its ``kind``."""
    if kind == "date":
        day = value
        if isinstance(value, str):
            try:
                day = _dt.date.fromisoformat(value.strip())
            except ValueError:
                return  # pydantic names the bad date
        if isinstance(day, _dt.datetime):
            day = day.date()
        if isinstance(day, _dt.date) and day > _dt.date.today():
            raise FieldValueError(
                name,
                f"{name} {day.isoformat()} is in the future (today is {_dt.date.today()})",
                value,
            )
        return
    items = value if kind == "numbers" and isinstance(value, (list, tuple)) else (value,)
    for v in items:
        if isinstance(v, (bool, str)):
            raise FieldValueError(name, f"must be a number, not a {type(v).__name__}", value)
    if kind == "numbers" and name.endswith("_range") and len(items) == 2:
        lo, hi = items
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
            raise FieldValueError(name, "must be [low, high] with low <= high", value)


class Sourced(Frozen):
    source: str = Field(min_length=3, description="where the numbers were read (URL or document)")
    as_of: _dt.date = Field(description="date of the source or of the reading")
    unverified: tuple[str, ...] = ()
    notes: str | None = None


# --------------------------------------------------------------------------- hardware
class Accelerator(Sourced):
    """One accelerator SKU; every figure is per GPU (per package for multi-die parts)."""

    id: str
    name: str
    vendor: Literal["nvidia", "amd", "intel", "google", "apple"]
    arch: str = Field(description="architecture family: ampere, ada, hopper, blackwell, cdna2, ...")
    aliases: tuple[str, ...] = ()
    sku_of: str | None = None
    memory_gb: float | None = Field(
        None, gt=0, le=100_000, description="capacity as the vendor sells it ('80 GB')"
    )
    memory_type: str | None = None
    memory_mib: float | None = Field(
        None,
        gt=0,
        le=1e8,
        description="capacity the driver reports (nvidia-smi 'memory.total') [MiB]; "
        "needs memory_mib_source",
    )
    memory_mib_source: str | None = Field(None, min_length=3)
    mem_bw_gbs: float | None = Field(None, gt=0, le=1e6)
    bf16_dense_tflops: float | None = Field(None, gt=0, le=1e6)
    fp16_dense_tflops: float | None = Field(None, gt=0, le=1e6)
    tf32_dense_tflops: float | None = Field(None, gt=0, le=1e6)
    fp8_dense_tflops: float | None = Field(None, gt=0, le=1e6)
    int8_dense_tops: float | None = Field(None, gt=0, le=1e6)
    fp6_dense_tflops: float | None = Field(None, gt=0, le=1e6)
    fp4_dense_tflops: float | None = Field(None, gt=0, le=1e6)
    sparsity_halved: bool = False
    tdp_w: float | None = Field(None, gt=0, le=1e5)
    interconnect: str | None = None
    interconnect_gbs_unidir: float | None = Field(None, gt=0, le=1e6)
    nvlink_domain_gpus: int | None = Field(
        None, gt=0, le=100_000, description="GPUs in one scale-up (NVLink / Infinity Fabric) domain"
    )
    scaleout_gbs_per_gpu: float | None = Field(
        None, gt=0, le=1e5, description="scale-out network per GPU, one way [GB/s] (400 Gb/s = 50)"
    )
    scaleout: str | None = Field(None, description="the scale-out NICs the figure describes")
    gpus_per_host: int | None = Field(
        None,
        gt=0,
        le=64,
        description="GPUs of one host (OS instance) where it differs from the scale-up domain: "
        "a GB200 NVL72 compute tray holds 4 of the domain's 72",
    )
    pcie_gen: int | None = Field(None, ge=3, le=6)
    form_factor: str | None = None
    launch_year: int | None = None
    datacenter_licensed: bool | None = Field(
        None,
        description="False where the card's driver licence excludes datacenter deployment "
        "(GeForce: 'No Datacenter Deployment'); needs datacenter_licensed_source",
    )
    datacenter_licensed_source: str | None = Field(None, min_length=3)

    def peak_tflops(self, dtype: str) -> float:
        """Dense peak [TFLOPS] for a compute dtype; raises if no source gives it.

        fp16 falls back to bf16 (and vice versa) where the datasheet gives one rate
        for both, which is the case on every chip in the catalog.
        """
        field = {
            "bf16": ("bf16_dense_tflops", "fp16_dense_tflops"),
            "fp16": ("fp16_dense_tflops", "bf16_dense_tflops"),
            "fp8": ("fp8_dense_tflops",),
            "int8": ("int8_dense_tops",),
            "fp4": ("fp4_dense_tflops",),
        }.get(dtype)
        if field is None:
            raise PlannerError(f"unknown compute dtype '{dtype}'")
        for f in field:
            v = getattr(self, f)
            if v is not None:
                return float(v)
        raise MissingDataError(
            f"{self.id}: no dense {dtype} tensor throughput in the catalog (no source gives it), "
            f"so compute-bound times in {dtype} cannot be estimated on this GPU"
        )

    @model_validator(mode="after")
    def _memory_reading_sourced(self) -> Accelerator:
        if self.memory_mib is not None and self.memory_mib_source is None:
            raise ValueError("memory_mib needs memory_mib_source (where the reading was taken)")
        if self.datacenter_licensed is not None and self.datacenter_licensed_source is None:
            raise ValueError("datacenter_licensed needs datacenter_licensed_source (the licence)")
        return self

    @property
    def memory_bytes(self) -> float:
        """Memory the device has [bytes] (see :meth:`memory_basis`)."""
        if self.memory_mib is not None:
            return self.memory_mib * MIB
        if self.memory_gb is None:
            raise MissingDataError(f"{self.id}: memory size unknown (no source gives it)")
        if self.memory_is_hbm:
            return self.memory_gb * GIB
        return self.memory_gb * 1e9

    @property
    def memory_is_hbm(self) -> bool:
        return (self.memory_type or "").upper().startswith("HBM")

    def memory_basis(self) -> str:
        """How :attr:`memory_bytes` was obtained, for reports.

        1. A capacity the driver reports (``memory_mib``, with its source) wins.
        2. HBM sold as "N GB" is N GiB (HBM stacks come in power-of-two densities; the
           driver readings in the catalog agree within 1%: H100 81,559 MiB of 81,920).
        3. Other memory (GDDR, LPDDR) counts as N decimal GB: data-center GDDR cards run
           ECC, which keeps 1/16 of the chips, and report about N GB (A10 "24 GB":
           23,028 MiB = 24.15e9 B); the decimal figure is the conservative reading.
        """
        if self.memory_mib is not None:
            return f"{self.memory_mib:,.0f} MiB as the driver reports it ({self.memory_mib_source})"
        if self.memory_gb is None:
            return "unknown"
        if self.memory_is_hbm:
            return f"{self.memory_gb:g} GB as sold, taken as {self.memory_gb:g} GiB (HBM)"
        return f"{self.memory_gb:g} GB as sold, taken as decimal GB (no driver reading)"

    @property
    def mem_bw_bytes_s(self) -> float:
        if self.mem_bw_gbs is None:
            raise MissingDataError(
                f"{self.id}: memory bandwidth unknown (no source gives it), so decode time "
                "cannot be estimated"
            )
        return self.mem_bw_gbs * 1e9


#: the linear-weight groups a checkpoint may quantize (or leave in higher precision)
WeightPart = Literal["attention_in", "attention_out", "dense_mlp", "shared_experts", "experts"]


class Checkpoint(Sourced):
    """A published checkpoint of a model in one weight format whose quantized parts differ
    from the format's default (``Precision.quantized_parts``): which linear weights it
    quantizes, at how many bits, and what the rest stay in. Embeddings, lm head, router and
    norms stay 16-bit under every format (planner.engine.memory)."""

    precision: str = Field(description="catalog precision id this checkpoint is served as")
    repo: str = Field(min_length=3, description="the checkpoint (Hugging Face repo id)")
    archs: tuple[str, ...] = Field(
        min_length=1, description="GPU architectures whose deployments load this checkpoint"
    )
    weight_bits: float = Field(gt=0, le=32, description="bits per quantized weight incl. scales")
    quantized: tuple[WeightPart, ...] = Field(min_length=1)
    other_bits: float = Field(16, gt=0, le=32, description="bits of the unquantized linears")
    other_compute_dtype: ComputeDtype = Field(
        "bf16", description="dtype of the math of the unquantized linears"
    )
    #: (engine ids, hidden multiple, intermediate multiple): those engines' weight-only MoE
    #: kernels on ``archs`` round each expert's dims up to these (planner.engine.memory)
    expert_pad: tuple[tuple[str, ...], int, int] | None = None


class ModelArch(Sourced):
    """A transformer's shape, with Hugging Face ``config.json`` field names where they exist."""

    id: str
    name: str | None = None
    hf_repo: str | None = None
    architecture: str = Field(description="HF model_type: llama, qwen2, mixtral, deepseek_v3, ...")
    aliases: tuple[str, ...] = ()
    architecture_family: str | None = None
    num_hidden_layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    intermediate_size: int | None = Field(None, gt=0)
    num_attention_heads: int = Field(gt=0)
    num_key_value_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    vocab_size: int = Field(gt=0)
    max_position_embeddings: int | None = Field(None, gt=0)
    tie_word_embeddings: bool = False
    # layer details that change parameter counts
    mlp_gated: bool = True
    attention_bias: bool = False
    attention_out_bias: bool = False
    mlp_bias: bool = False
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    norms_per_layer: int = Field(2, ge=0)
    qk_norm: bool = False
    lm_head_bias: bool = False
    # sliding-window / hybrid attention
    sliding_window: int | None = Field(None, gt=0)
    num_sliding_layers: int = Field(0, ge=0)
    # mixture of experts
    num_experts: int | None = Field(None, gt=0)
    num_experts_per_tok: int | None = Field(None, gt=0)
    num_shared_experts: int = Field(0, ge=0)
    shared_expert_intermediate_size: int | None = Field(
        None, gt=0, description="FFN width of the shared expert(s) when it differs (Qwen2-MoE)"
    )
    moe_intermediate_size: int | None = Field(None, gt=0)
    num_dense_layers: int = Field(
        0, ge=0, description="leading dense layers (first_k_dense_replace)"
    )
    router_bias: bool = False
    # multi-head latent attention (DeepSeek)
    q_lora_rank: int | None = Field(None, gt=0)
    kv_lora_rank: int | None = Field(None, gt=0)
    qk_nope_head_dim: int | None = Field(None, gt=0)
    qk_rope_head_dim: int | None = Field(None, gt=0)
    v_head_dim: int | None = Field(None, gt=0)
    num_nextn_predict_layers: int = Field(0, ge=0)
    # native weight format of the released checkpoint (e.g. gpt-oss experts in mxfp4)
    native_precision: str | None = None
    native_quantized_parts: Literal["all_linear", "experts_only"] | None = Field(
        None,
        description="which weights the released checkpoint quantizes in native_precision "
        "(gpt-oss: the MoE experts only; attention, router and embeddings stay bf16)",
    )
    attention_sinks: bool = Field(
        False, description="one learned sink logit per attention head and layer (gpt-oss)"
    )
    quantization_source: str | None = Field(
        None, description="where native_precision / native_quantized_parts / sinks were read"
    )
    checkpoint_kv: Literal["fp8", "int8", "none"] | None = Field(
        None,
        description="KV quantization the checkpoint's own quantization config declares, read "
        "from a config.json (kv_cache_scheme) or hf_quant_config.json (kv_cache_quant_algo); "
        "'none': it quantizes weights but declares no KV quantization; None: not read",
    )
    checkpoints: tuple[Checkpoint, ...] = Field(
        (),
        description="published checkpoints whose quantized parts differ from their format's "
        "default (NVIDIA's NVFP4 DeepSeek-R1 keeps most of attention bf16)",
    )
    published_total_params_b: float | None = Field(None, gt=0)
    published_active_params_b: float | None = Field(None, gt=0)
    params_source: str | None = None

    def checkpoint_for(self, precision_id: str, arch: str | None) -> Checkpoint | None:
        """The published checkpoint a deployment in ``precision_id`` on ``arch`` loads, if the
        catalog lists one (None: the format's default parts and bits apply)."""
        if arch is None:
            return None
        for c in self.checkpoints:
            if c.precision == precision_id and arch in c.archs:
                return c
        return None

    @property
    def is_moe(self) -> bool:
        return self.num_experts is not None and self.num_experts > 1

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def num_moe_layers(self) -> int:
        return self.num_hidden_layers - self.num_dense_layers if self.is_moe else 0

    @model_validator(mode="after")
    def _consistent(self) -> ModelArch:
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                f"num_key_value_heads ({self.num_key_value_heads})"
            )
        if self.num_sliding_layers > self.num_hidden_layers:
            raise ValueError("num_sliding_layers exceeds num_hidden_layers")
        if self.num_sliding_layers and self.sliding_window is None:
            raise ValueError("num_sliding_layers > 0 needs sliding_window")
        if self.is_moe and not self.num_experts_per_tok:
            raise ValueError("a MoE model needs num_experts_per_tok")
        if self.is_moe and self.num_experts_per_tok > self.num_experts:
            raise ValueError(
                f"num_experts_per_tok ({self.num_experts_per_tok}) exceeds num_experts "
                f"({self.num_experts})"
            )
        if self.num_dense_layers > self.num_hidden_layers:
            raise ValueError(
                f"num_dense_layers ({self.num_dense_layers}) exceeds num_hidden_layers "
                f"({self.num_hidden_layers})"
            )
        if self.is_mla and (self.qk_rope_head_dim is None or self.qk_nope_head_dim is None):
            raise ValueError("MLA needs qk_rope_head_dim and qk_nope_head_dim")
        if self.native_quantized_parts is not None and self.native_precision is None:
            raise ValueError("native_quantized_parts needs native_precision")
        if self.intermediate_size is None and (not self.is_moe or self.num_dense_layers):
            raise ValueError("intermediate_size is required for dense MLP layers")
        return self


# --------------------------------------------------------------------------- precisions
class Precision(Sourced):
    """A weight format: bits per weight including scale overhead, and how it computes."""

    id: str
    name: str
    aliases: tuple[str, ...] = ()
    weight_bits: float = Field(gt=0, le=32, description="bits per weight incl. scales/zeros")
    compute_dtype: ComputeDtype = Field(description="dtype of the tensor-core math")
    activation_bits: int = Field(gt=0, le=32)
    kv_default: str
    kv_options: tuple[str, ...]
    native_archs: tuple[str, ...] = Field(description="architectures with hardware support")
    fallback_archs: tuple[str, ...] = Field(
        (), description="architectures that run it through a slower path (weight-only dequant)"
    )
    fallback_compute_dtype: ComputeDtype | None = None
    quantized_parts: Literal["all_linear", "experts_only"] = "all_linear"
    checkpoint_kv: str | None = Field(
        None,
        description="KV precision that published checkpoints in this format declare "
        "(hf_quant_config.json kv_cache_quant_algo); engines that follow the checkpoint "
        "(Framework.kv_follows_checkpoint) use it by default",
    )
    checkpoint_kv_source: str | None = None
    arch_weight_bits: tuple[tuple[str, float], ...] = ()  # (arch, bits): a vendor's layout
    arch_weight_bits_source: str | None = None  # required with it (tests/test_nvfp4_bits.py)

    @model_validator(mode="after")
    def _checkpoint_kv_sourced(self) -> Precision:
        if self.checkpoint_kv is not None and not self.checkpoint_kv_source:
            raise ValueError("checkpoint_kv needs checkpoint_kv_source")
        return self


class KvPrecision(Sourced):
    id: str
    bits: float = Field(gt=0, le=32)


# --------------------------------------------------------------------------- frameworks
_VERSION_NUM = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def version_tuple(text: str | None) -> tuple[int, int, int] | None:
    """The first ``X.Y[.Z]`` version number in ``text`` (e.g. ``"v0.10.2 | vllm serve"``
    -> ``(0, 10, 2)``); None when there is none."""
    m = _VERSION_NUM.search(text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


class SchedulerTier(Frozen):
    """Scheduler defaults an engine picks by itself on larger GPUs (vLLM's V1 engine:
    ``max_num_seqs`` 1024 and ``max_num_batched_tokens`` 8192 on GPUs with >= 70 GiB that
    are not A100s, instead of 256 / 2048)."""

    min_memory_gib: float = Field(
        0.0, ge=0, description="the GPU's total memory at least this [GiB]"
    )
    max_memory_gib: float | None = Field(
        None, gt=0, description="and below this [GiB] (None: no upper bound)"
    )
    exclude_gpu_names: tuple[str, ...] = Field(
        (), description="lower-case texts; a GPU whose id or name contains one keeps the base"
    )
    since_version: str | None = Field(
        None,
        description="first engine release with this rule; a row of an older stated "
        "release keeps the base defaults",
    )
    since_date: _dt.date | None = Field(
        None,
        description="that release's date: a row that states no release but is dated "
        "before it keeps the base defaults",
    )
    not_in_versions: tuple[str, ...] = Field(
        (),
        description="lower-case texts of a release string that turn the rule off "
        "(vLLM's VLLM_USE_V1=0 runs the V0 engine)",
    )
    max_num_seqs: int = Field(gt=0)
    max_num_batched_tokens: int | None = Field(None, gt=0)
    source: str = Field(min_length=3)

    def describe(self) -> str:
        """One line, e.g. ``>= 70 GiB, not a100, from 0.8.0: 1024 seqs / 8192 tokens``."""
        bounds = [f">= {self.min_memory_gib:g} GiB"] if self.min_memory_gib else []
        if self.max_memory_gib is not None:
            bounds.append(f"< {self.max_memory_gib:g} GiB")
        mem = " and ".join(bounds) or "any memory"
        parts = [mem]
        parts += [f"not {x}" for x in self.exclude_gpu_names]
        if self.since_version:
            parts.append(f"from {self.since_version}")
        tok = self.max_num_batched_tokens
        return f"{', '.join(parts)}: {self.max_num_seqs} seqs / {tok if tok else '-'} tokens"

    def applies(self, gpu: Any, version: str | None = None, as_of: Any = None) -> bool:
        """Whether the engine picks this tier on ``gpu`` (an :class:`Accelerator`) in the
        release named by ``version`` (free text; None or no number = a current release, or
        for a run dated ``as_of`` before :attr:`since_date`, an older one)."""
        if gpu is None:
            return False
        if any(x in (version or "").lower() for x in self.not_in_versions):
            return False
        v, since = version_tuple(version), version_tuple(self.since_version)
        if v is not None and since is not None and v < since:
            return False
        if v is None and self.since_date is not None and as_of:
            try:
                day = as_of if isinstance(as_of, _dt.date) else _dt.date.fromisoformat(str(as_of))
            except ValueError:
                day = None
            if day is not None and day < self.since_date:
                return False
        names = f"{gpu.id} {gpu.name}".lower()
        if any(x in names for x in self.exclude_gpu_names):
            return False
        try:
            mem = float(gpu.memory_bytes)
        except MissingDataError:
            return False
        if self.max_memory_gib is not None and mem >= self.max_memory_gib * GIB:
            return False
        return mem >= self.min_memory_gib * GIB


class OlderReleaseDefault(Frozen):
    """A default memory fraction an engine's older releases used (vLLM's
    ``gpu_memory_utilization`` was 0.9 before it became 0.92)."""

    through_version: str = Field(description="the last release read with this default")
    memory_utilization: float = Field(gt=0, le=1)
    source: str = Field(min_length=3)


class Framework(Sourced):
    """A serving engine and the scheduler settings that matter for capacity."""

    id: str
    name: str
    aliases: tuple[str, ...] = ()
    continuous_batching: bool
    chunked_prefill: bool
    prefix_caching: bool
    cuda_graphs: bool
    vendors: tuple[str, ...]
    precisions: tuple[str, ...]
    kv_block_size: int = Field(gt=0)
    default_max_num_seqs: int = Field(gt=0)
    default_max_num_batched_tokens: int | None = Field(None, gt=0)
    default_memory_utilization: float = Field(gt=0, le=1)
    memory_utilization_of: Literal["total", "free", "static"] = Field(
        "total",
        description="'total': the fraction caps all memory (vLLM gpu_memory_utilization); "
        "'free': the fraction of memory left after weights goes to KV (TRT-LLM "
        "kv_cache_free_gpu_mem_fraction); 'static': the fraction of the memory free after "
        "the runtime's own set-up holds weights and KV, activations come from the rest "
        "(SGLang mem_fraction_static)",
    )
    runtime_overhead_gb: float | None = Field(
        None, ge=0, le=1000, description="set aside beyond weights, activations, KV at tp=1 [GB]"
    )
    runtime_overhead_gb_multi_gpu: float = Field(
        0.0, ge=0, le=1000, description="added per GPU when tp > 1 (NCCL / all-reduce buffers) [GB]"
    )
    runtime_overhead_source: str | None = Field(None, min_length=3)
    memory_semantics: str | None = Field(None, description="how it sizes its KV pool, sourced")
    # parallel layouts the engine offers (catalog/layout.py) and the formats its docs recommend
    expert_parallel: bool = False  # EP: --enable-expert-parallel / --ep-size / moe_ep_size
    attention_dp: bool = False  # attention data-parallel for MoE models (DP attention)
    parallel_source: str | None = None
    #: one replica over several nodes / domains: True documented, False not offered, None unread
    multi_node: bool | None = None
    multi_node_source: str | None = None
    recommended_formats: dict[str, tuple[str, ...]] = {}  # per GPU arch, best first
    recommended_formats_source: str | None = None
    recommended_formats_models: tuple[str, ...] | None = None  # HF model_types; None: all

    def format_rank(self, arch: str, precision_id: str, model_type: str | None = None) -> int:
        """Position of a format in the engine's recommendation for ``arch`` and the model's
        HF ``model_type`` (0 = first); past the list's end where the source does not say."""
        covered = self.recommended_formats_models
        on = model_type is None or covered is None or model_type in covered
        rec = self.recommended_formats.get(arch, ()) if on else ()
        return rec.index(precision_id) if precision_id in rec else len(rec) + 1

    kv_follows_checkpoint: bool = Field(
        False,
        description="with its default KV dtype setting ('auto') the engine stores KV in the "
        "precision the checkpoint declares (Precision.checkpoint_kv); False: the model dtype",
    )
    kv_default_source: str | None = Field(None, description="where that default was read")
    #: the quantized KV precisions the engine stores (None: not read; fp8 KV is then offered)
    kv_quantized: tuple[str, ...] | None = Field(None, description="with kv_default_source")
    #: GPU-dependent scheduler defaults (the last that applies wins over default_max_num_*)
    scheduler_tiers: tuple[SchedulerTier, ...] = ()
    #: where it is read that the default scheduler never mixes prompt chunks and decoders in
    #: one step, a prompt step first whenever one can be formed (SGLang); None: mixed steps
    prefill_first_source: str | None = Field(None, min_length=3)
    host_overlap_since: str | None = Field(
        None,
        description="first release whose scheduler overlaps its host work with the GPU by "
        "default (SGLang's overlap scheduler, vLLM's async scheduling, TensorRT-LLM's overlap "
        "scheduler): the CPU prepares iteration n+1 while the GPU runs n, so an iteration "
        "takes max(GPU, host) instead of GPU + host; None: not by default",
    )
    #: release date of host_overlap_since (a run with no stated release dated before it ran
    #: without the overlap)
    host_overlap_since_date: _dt.date | None = None
    host_overlap_source: str | None = Field(None, min_length=3)
    generations: dict[str, str] = {}  # name -> first release; catalog/releases.generation
    generations_source: str | None = Field(None, min_length=3)
    #: features with which the engine turns its overlap off (SGLang: EAGLE / MTP speculative
    #: decoding and pipeline parallelism; vLLM: pipeline parallelism)
    host_overlap_not_with: tuple[Literal["speculative", "pipeline"], ...] = ()

    def overlaps_host(
        self,
        version: Any = None,
        as_of: Any = None,
        *,
        speculative: Any = False,
        pipeline: bool = False,
    ) -> bool:
        """Whether a run of release ``version`` (free text or a parsed release with a
        ``release`` attribute; None = current, or for a run dated ``as_of`` before
        :attr:`host_overlap_since_date`, an older one) hides its host time behind the GPU;
        ``speculative`` (speculative decoding on) and ``pipeline`` (pp > 1)
        turn it off where :attr:`host_overlap_not_with` says so."""
        if self.host_overlap_since is None:
            return False
        if speculative and "speculative" in self.host_overlap_not_with:
            return False
        if pipeline and "pipeline" in self.host_overlap_not_with:
            return False
        if version is not None and not isinstance(version, str):
            version = str(getattr(version, "release", "") or "") or None
        v, since = version_tuple(version), version_tuple(self.host_overlap_since)
        if v is not None and since is not None:
            return v >= since
        if self.host_overlap_since_date is not None and as_of:
            try:
                day = as_of if isinstance(as_of, _dt.date) else _dt.date.fromisoformat(str(as_of))
            except ValueError:
                day = None
            if day is not None and day < self.host_overlap_since_date:
                return False
        return True

    older_memory_utilization: tuple[OlderReleaseDefault, ...] = Field(
        (),
        description="default_memory_utilization of older releases (a benchmark row of a "
        "stated release at or before through_version ran with it)",
    )

    @model_validator(mode="after")
    def _overhead_sourced(self) -> Framework:
        if self.runtime_overhead_gb is not None and self.runtime_overhead_source is None:
            raise ValueError("runtime_overhead_gb needs runtime_overhead_source")
        return self

    def runtime_overhead_bytes(self, tp: int = 1) -> float:
        """Memory outside weights, activations and KV that the engine's KV sizing sets aside
        on one GPU of a ``tp``-wide group [bytes]; 0 where no source gives it."""
        extra = self.runtime_overhead_gb_multi_gpu if tp > 1 else 0.0
        return 0.0 if self.runtime_overhead_gb is None else (self.runtime_overhead_gb + extra) * 1e9

    def memory_utilization_default(self, version: str | None = None) -> float:
        """The memory fraction the release ``version`` (free text; None or no number = a
        current release) uses when the run does not set one."""
        v = version_tuple(version)
        if v is not None:
            for old in sorted(
                self.older_memory_utilization, key=lambda o: version_tuple(o.through_version) or ()
            ):
                through = version_tuple(old.through_version)
                if through is not None and v <= through:
                    return old.memory_utilization
        return self.default_memory_utilization

    def scheduler_defaults(
        self, gpu: Any = None, version: str | None = None, as_of: Any = None
    ) -> tuple[int, int | None]:
        """(max_num_seqs, max_num_batched_tokens) the engine picks when a run sets neither,
        on ``gpu`` (an :class:`Accelerator`; None = the base defaults) in the release
        ``version`` (free text such as a row's ``framework_version``; None = current) of a
        run dated ``as_of`` (a row's ``as_of``, used when no release number is stated)."""
        current = version is None and as_of is None  # the common question: remembered
        hit = _SCHEDULER_DEFAULTS.get((self, gpu)) if current else None
        if hit is not None:
            return hit
        seqs, btok = self.default_max_num_seqs, self.default_max_num_batched_tokens
        for t in self.scheduler_tiers:
            if t.applies(gpu, version, as_of):
                seqs, btok = t.max_num_seqs, t.max_num_batched_tokens
        if current:
            _SCHEDULER_DEFAULTS.put((self, gpu), (), (seqs, btok))
        return seqs, btok


#: :meth:`Framework.scheduler_defaults` of the current release per (framework, GPU) object
#: (compared by identity; the search asks three times per option)
_SCHEDULER_DEFAULTS = IdentityMemo()


def _fmt_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for p in loc:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out
