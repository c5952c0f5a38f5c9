"""Catalog records: accelerators, models, checkpoints, precisions (serving engines:
:mod:`planner.catalog.frameworks`; prices: :mod:`planner.catalog.prices`).

Every record is a frozen pydantic model (:class:`Frozen`: immutable, no unknown keys, no inf/nan);
catalog entries also carry ``source`` and ``as_of`` (:class:`Sourced`); both live in
:mod:`planner.catalog.frozen` and are re-exported here, as are the framework records.

Units follow the names: ``_gb`` is decimal gigabytes (1e9 bytes), ``_mib`` mebibytes (2**20 bytes),
``_gbs`` GB/s,
``_tflops`` dense TFLOPS (no structured sparsity), ``_tops`` dense TOPS, ``_w`` watts.
A number that no source gives is ``None``; the engine then raises
:class:`~planner.errors.MissingDataError` saying what it cannot compute.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from planner.catalog.frameworks import (  # noqa: F401 - re-exported
    Framework,
    OlderReleaseDefault,
    SchedulerTier,
    version_tuple,
)
from planner.catalog.frozen import (  # noqa: F401 - re-exported
    GIB,
    MIB,
    FieldValueError,
    Frozen,
    Sourced,
    _field_kinds,
    _fmt_loc,
    field_error,
)
from planner.errors import MissingDataError, PlannerError

ComputeDtype = Literal["bf16", "fp16", "fp8", "int8", "fp4"]


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
