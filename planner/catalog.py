"""Catalogs: accelerators, prices, models, precisions and serving frameworks.

The YAML files under ``data/`` are loaded into frozen pydantic models with
``extra="forbid"``, so a typo in a field name is an error that names the file,
the entry and the field path. Every entry carries ``source`` and ``as_of``.

Units follow the names: ``_gb`` is decimal gigabytes (1e9 bytes), ``_gbs`` GB/s,
``_tflops`` dense TFLOPS (no structured sparsity), ``_tops`` dense TOPS, ``_w`` watts.
A number that no source gives is ``None``; the engine then raises
:class:`~planner.errors.MissingDataError` saying what it cannot compute.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, NamedTuple

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import MissingDataError, PlannerError, UnknownIdError, read_text

try:  # the C loader is ~10x faster; fall back where libyaml is absent
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

DATA_DIR = Path(os.environ.get("PLANNER_DATA_DIR", Path(__file__).resolve().parent.parent / "data"))

ComputeDtype = Literal["bf16", "fp16", "fp8", "int8", "fp4"]


class Frozen(BaseModel):
    """Base for every catalog record: immutable, no unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


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
    memory_gb: float | None = Field(None, gt=0)
    memory_type: str | None = None
    mem_bw_gbs: float | None = Field(None, gt=0)
    bf16_dense_tflops: float | None = Field(None, gt=0)
    fp16_dense_tflops: float | None = Field(None, gt=0)
    tf32_dense_tflops: float | None = Field(None, gt=0)
    fp8_dense_tflops: float | None = Field(None, gt=0)
    int8_dense_tops: float | None = Field(None, gt=0)
    fp6_dense_tflops: float | None = Field(None, gt=0)
    fp4_dense_tflops: float | None = Field(None, gt=0)
    sparsity_halved: bool = False
    tdp_w: float | None = Field(None, gt=0)
    interconnect: str | None = None
    interconnect_gbs_unidir: float | None = Field(None, gt=0)
    pcie_gen: int | None = Field(None, ge=3, le=6)
    form_factor: str | None = None
    launch_year: int | None = None

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

    def has_peak(self, dtype: str) -> bool:
        try:
            self.peak_tflops(dtype)
        except PlannerError:
            return False
        return True

    @property
    def memory_bytes(self) -> float:
        if self.memory_gb is None:
            raise MissingDataError(f"{self.id}: memory size unknown (no source gives it)")
        return self.memory_gb * 1e9

    @property
    def mem_bw_bytes_s(self) -> float:
        if self.mem_bw_gbs is None:
            raise MissingDataError(
                f"{self.id}: memory bandwidth unknown (no source gives it), so decode time "
                "cannot be estimated"
            )
        return self.mem_bw_gbs * 1e9


class RentalPrice(Sourced):
    """A dated rental price for one GPU of a provider's offering [USD per GPU-hour]."""

    gpu: str
    provider: str
    offering: str | None = None
    kind: Literal["on_demand", "spot", "reserved", "serverless", "community"]
    usd_per_gpu_hour: float | None = Field(None, gt=0)
    usd_per_gpu_hour_range: tuple[float, float] | None = None

    @model_validator(mode="after")
    def _one_value(self) -> RentalPrice:
        if (self.usd_per_gpu_hour is None) == (self.usd_per_gpu_hour_range is None):
            raise ValueError("give exactly one of usd_per_gpu_hour or usd_per_gpu_hour_range")
        if self.usd_per_gpu_hour_range is not None:
            lo, hi = self.usd_per_gpu_hour_range
            if not 0 < lo <= hi:
                raise ValueError("usd_per_gpu_hour_range must be [low, high] with 0 < low <= high")
        return self


class PurchasePrice(Sourced):
    gpu: str
    kind: Literal["msrp", "estimate", "quote"]
    usd: float | None = Field(None, gt=0)
    usd_range: tuple[float, float] | None = None

    @model_validator(mode="after")
    def _one_value(self) -> PurchasePrice:
        if (self.usd is None) == (self.usd_range is None):
            raise ValueError("give exactly one of usd or usd_range")
        return self


# --------------------------------------------------------------------------- models
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
    published_total_params_b: float | None = Field(None, gt=0)
    published_active_params_b: float | None = Field(None, gt=0)
    params_source: str | None = None

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
        if self.is_mla and (self.qk_rope_head_dim is None or self.qk_nope_head_dim is None):
            raise ValueError("MLA needs qk_rope_head_dim and qk_nope_head_dim")
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


class KvPrecision(Sourced):
    id: str
    bits: float = Field(gt=0, le=32)


# --------------------------------------------------------------------------- frameworks
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
    memory_utilization_of: Literal["total", "free"] = Field(
        "total",
        description="'total': the fraction caps all memory (vLLM gpu_memory_utilization); "
        "'free': the fraction of memory left after weights goes to KV (TRT-LLM "
        "kv_cache_free_gpu_mem_fraction)",
    )
    runtime_overhead_gb: float | None = Field(
        None,
        ge=0,
        description="memory the engine reserves beyond weights and KV (CUDA context, graphs)",
    )
    runtime_overhead_source: str | None = None


# --------------------------------------------------------------------------- loading
def _fmt_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for p in loc:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _validate_list(path: Path, key: str, cls: type[Frozen], raw: Any) -> list[Any]:
    if not isinstance(raw, dict) or key not in raw:
        raise PlannerError(f"{path}: expected a top-level mapping with key '{key}'")
    items = raw[key]
    if not isinstance(items, list):
        raise PlannerError(f"{path}: '{key}' must be a list")
    out = []
    for i, item in enumerate(items):
        ident = item.get("id", item.get("gpu", "?")) if isinstance(item, dict) else "?"
        try:
            out.append(cls.model_validate(item))
        except ValidationError as e:
            err = e.errors()[0]
            where = _fmt_loc(tuple(err["loc"]))
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                allowed = ", ".join(sorted(cls.model_fields))
                msg = f"unknown field (allowed: {allowed})"
            raise PlannerError(
                f"{path.name}: {key}[{i}] (id {ident}): field '{where or '<entry>'}': {msg}"
                + (f" (got {err.get('input')!r})" if err["type"] != "extra_forbidden" else "")
            ) from None
    return out


def _read_yaml(path: Path) -> Any:
    text = read_text(path, "catalog file", "YAML file")
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        raise PlannerError(f"{path}: not valid YAML: {str(e).splitlines()[0]}") from None


class Catalog(Frozen):
    """All catalogs together, with lookups that accept ids and aliases."""

    accelerators: tuple[Accelerator, ...]
    models: tuple[ModelArch, ...]
    precisions: tuple[Precision, ...]
    kv_precisions: tuple[KvPrecision, ...]
    frameworks: tuple[Framework, ...]
    rental_prices: tuple[RentalPrice, ...] = ()
    purchase_prices: tuple[PurchasePrice, ...] = ()

    @model_validator(mode="after")
    def _unique_and_linked(self) -> Catalog:
        for name in ("accelerators", "models", "precisions", "kv_precisions", "frameworks"):
            seen: set[str] = set()
            for item in getattr(self, name):
                keys = [item.id.lower(), *(a.lower() for a in getattr(item, "aliases", ()))]
                for k in keys:
                    if k in seen:
                        raise ValueError(f"{name}: duplicate id or alias '{k}'")
                    seen.add(k)
        gpu_ids = {a.id for a in self.accelerators}
        for p in (*self.rental_prices, *self.purchase_prices):
            if p.gpu not in gpu_ids:
                raise ValueError(f"price entry for unknown gpu '{p.gpu}'")
        prec_ids = {p.id for p in self.precisions}
        kv_ids = {k.id for k in self.kv_precisions}
        for p in self.precisions:
            bad = set(p.kv_options) - kv_ids
            if bad or p.kv_default not in kv_ids:
                raise ValueError(f"precision {p.id}: unknown kv precision {sorted(bad)}")
        for f in self.frameworks:
            bad = set(f.precisions) - prec_ids
            if bad:
                raise ValueError(f"framework {f.id}: unknown precisions {sorted(bad)}")
        return self

    # ---- lookups
    @staticmethod
    def _find(kind: str, items: Iterable[Any], key: str) -> Any:
        k = str(key).strip().lower()
        items = tuple(items)
        for it in items:
            if it.id.lower() == k or k in (a.lower() for a in getattr(it, "aliases", ())):
                return it
        raise UnknownIdError(kind, str(key), [it.id for it in items])

    def gpu(self, key: str) -> Accelerator:
        return self._find("gpu", self.accelerators, key)

    def precision(self, key: str) -> Precision:
        return self._find("precision", self.precisions, key)

    def kv_precision(self, key: str) -> KvPrecision:
        return self._find("kv precision", self.kv_precisions, key)

    def framework(self, key: str) -> Framework:
        return self._find("framework", self.frameworks, key)

    def model(self, key: str | os.PathLike[str] | ModelArch) -> ModelArch:
        """Look a model up by id or alias, or read a HuggingFace ``config.json`` path."""
        if isinstance(key, ModelArch):
            return key
        s = str(key)
        if s.endswith(".json") or os.path.sep in s and os.path.exists(s) or os.path.isdir(s):
            return model_from_hf_config(s)
        return self._find("model", self.models, s)

    def model_ref(
        self, key: str | ModelArch, base_dir: str | os.PathLike[str] | None = None
    ) -> ModelArch:
        """Resolve a ``model`` cell of a measurement row or scenario.

        A catalog id or alias, else a path to a ``config.json`` (or a folder holding one),
        tried relative to the working directory, then ``base_dir`` (the CSV's folder), then
        the repository root (rows written by ``bench/`` name ``data/benchmarks/configs/...``).
        """
        if isinstance(key, ModelArch):
            return key
        s = str(key).strip()
        looks_like_path = s.endswith(".json") or "/" in s or os.sep in s
        if not looks_like_path:
            return self._find("model", self.models, s)
        p = Path(s)
        cands = [p] if p.is_absolute() else [Path.cwd() / p]
        if not p.is_absolute():
            if base_dir is not None:
                cands.append(Path(base_dir) / p)
            cands.append(DATA_DIR.parent / p)
        for c in cands:
            f = c if c.suffix == ".json" else c / "config.json"
            if f.is_file():
                return _hf_config_cached(str(f.resolve()), f.stat().st_mtime)
        if not s.endswith(".json"):  # an HF-style id such as "org/name" may be an alias
            try:
                return self._find("model", self.models, s)
            except UnknownIdError:
                pass
        where = ", ".join(str(c.parent) for c in cands)
        raise PlannerError(f"model config not found: {s} (looked in {where})")

    def resolve(
        self,
        model: str | os.PathLike[str] | ModelArch,
        gpu: str | Accelerator,
        precision: str | Precision,
        framework: str | Framework | None = None,
        kv_precision: str | None = None,
    ) -> Resolved:
        """Look up the records of one deployment and check the KV precision against the format.

        Objects pass through unchanged; ``kv_precision`` defaults to the format's ``kv_default``.
        """
        m = self.model(model)
        g = gpu if isinstance(gpu, Accelerator) else self.gpu(gpu)
        p = precision if isinstance(precision, Precision) else self.precision(precision)
        fw = (
            framework
            if isinstance(framework, Framework) or framework is None
            else self.framework(framework)
        )
        kv = self.kv_precision(kv_precision or p.kv_default)
        if kv.id not in p.kv_options and kv.id != p.kv_default:
            raise PlannerError(
                f"kv precision '{kv.id}' is not an option with {p.id} "
                f"(options: {', '.join(p.kv_options)})"
            )
        return Resolved(m, g, p, kv, fw)

    def prices_for(self, gpu_id: str) -> tuple[RentalPrice, ...]:
        return tuple(p for p in self.rental_prices if p.gpu == gpu_id)


def compute_dtype_for(precision: Precision, gpu: Accelerator) -> str:
    """Compute dtype a precision runs in on a GPU: native, a fallback, or an error."""
    if gpu.arch in precision.native_archs:
        return precision.compute_dtype
    if gpu.arch in precision.fallback_archs and precision.fallback_compute_dtype:
        return precision.fallback_compute_dtype
    raise PlannerError(
        f"precision {precision.id} is not supported on {gpu.id} ({gpu.arch}); "
        f"native on: {', '.join(precision.native_archs) or '-'}"
        + (
            f"; weight-only fallback on: {', '.join(precision.fallback_archs)}"
            if precision.fallback_archs
            else ""
        )
    )


def check_layout(m: ModelArch, tp: Any, pp: Any) -> tuple[int, int]:
    """Validate a TP x PP layout for a model; returns (tp, pp) as ints.

    TP must divide the query heads (MLA models too: their heads split the same way), and
    PP cannot exceed the number of layers.
    """
    for name, v in (("tp", tp), ("pp", pp)):
        try:
            ok = float(v) == int(v) and int(v) >= 1
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise PlannerError(f"{name} must be a whole number >= 1, got {v!r}")
    tp, pp = int(tp), int(pp)
    if tp > 1 and m.num_attention_heads % tp:
        raise PlannerError(
            f"tp={tp} does not divide the {m.num_attention_heads} attention heads of {m.id}"
        )
    if pp > m.num_hidden_layers:
        raise PlannerError(f"pp={pp} exceeds the {m.num_hidden_layers} layers of {m.id}")
    return tp, pp


class Resolved(NamedTuple):
    """The catalog records of one deployment (see :meth:`Catalog.resolve`)."""

    model: ModelArch
    gpu: Accelerator
    precision: Precision
    kv: KvPrecision
    framework: Framework | None


def _load_dir(data_dir: Path) -> Catalog:
    hw = _read_yaml(data_dir / "hardware.yaml")
    accelerators = _validate_list(data_dir / "hardware.yaml", "accelerators", Accelerator, hw)
    models = _validate_list(
        data_dir / "models.yaml", "models", ModelArch, _read_yaml(data_dir / "models.yaml")
    )
    prec_raw = _read_yaml(data_dir / "precisions.yaml")
    precisions = _validate_list(data_dir / "precisions.yaml", "precisions", Precision, prec_raw)
    kv = _validate_list(data_dir / "precisions.yaml", "kv_precisions", KvPrecision, prec_raw)
    frameworks = _validate_list(
        data_dir / "frameworks.yaml",
        "frameworks",
        Framework,
        _read_yaml(data_dir / "frameworks.yaml"),
    )
    rental: list[RentalPrice] = []
    purchase: list[PurchasePrice] = []
    prices_path = data_dir / "prices.yaml"
    if prices_path.exists():
        pr = _read_yaml(prices_path)
        rental = _validate_list(prices_path, "rental", RentalPrice, pr)
        if isinstance(pr, dict) and "purchase" in pr:
            purchase = _validate_list(prices_path, "purchase", PurchasePrice, pr)
    try:
        return Catalog(
            accelerators=tuple(accelerators),
            models=tuple(models),
            precisions=tuple(precisions),
            kv_precisions=tuple(kv),
            frameworks=tuple(frameworks),
            rental_prices=tuple(rental),
            purchase_prices=tuple(purchase),
        )
    except ValidationError as e:
        raise PlannerError(f"{data_dir}: {e.errors()[0]['msg']}") from None


@lru_cache(maxsize=8)
def _load_cached(data_dir: str) -> Catalog:
    return _load_dir(Path(data_dir))


def load_catalog(data_dir: str | os.PathLike[str] | None = None) -> Catalog:
    """Load and validate every catalog under ``data_dir`` (default: the bundled ``data/``).

    Results are cached per directory; the returned object is immutable.
    """
    return _load_cached(str(Path(data_dir) if data_dir else DATA_DIR))


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
        "tie_word_embeddings": bool(g("tie_word_embeddings", mt in {"gemma2", "gptj"} and False)),
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
