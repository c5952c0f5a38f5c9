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

import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError, model_validator

from planner.catalog.compat import (
    check_framework_gpu,
    check_framework_precision,
    check_model_format,
)
from planner.catalog.framework_gpus import GpuRefused, read_gpu_support
from planner.catalog.hf_config import _hf_config_cached, model_from_hf_config
from planner.catalog.model_support import ModelSupport, check_model_served, read_model_support
from planner.catalog.moe_formats import EngineFormats, read_moe_formats
from planner.catalog.prices import PurchasePrice, RentalPrice
from planner.catalog.records import (
    Accelerator,
    Framework,
    Frozen,
    KvPrecision,
    ModelArch,
    Precision,
    _fmt_loc,
    field_error,
)
from planner.errors import PlannerError, UnknownIdError, printable, read_text, shown
from planner.files import load_yaml

DATA_DIR = Path(
    os.environ.get("PLANNER_DATA_DIR", Path(__file__).resolve().parent.parent.parent / "data")
)


# --------------------------------------------------------------------------- loading


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
            # a misspelt field is both "unknown" and "missing": name the misspelling first
            err = field_error(sorted(e.errors(), key=lambda x: x["type"] != "extra_forbidden")[0])
            where = _fmt_loc(tuple(err["loc"]))
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                allowed = ", ".join(sorted(cls.model_fields))
                msg = f"unknown field (allowed: {allowed})"
            raise PlannerError(
                f"{path.name}: {key}[{i}] (id {printable(ident)}): field '{where or '<entry>'}': "
                f"{msg}"
                + (
                    f" (got {shown(err.get('input'))})"
                    if err["type"] not in ("extra_forbidden", "missing")
                    else ""
                )
            ) from None
    return out


def price_rows(
    path: Path, raw: Any, *, require_rental: bool = True
) -> tuple[list[RentalPrice], list[PurchasePrice]]:
    """Validate the ``rental`` and ``purchase`` lists of a prices mapping (``data/prices.yaml``
    or a buyer's ``--prices`` file); a bad row is a PlannerError naming file, row and field.
    """
    rental: list[RentalPrice] = []
    if require_rental or (isinstance(raw, dict) and "rental" in raw):
        rental = _validate_list(path, "rental", RentalPrice, raw)
    purchase: list[PurchasePrice] = []
    if isinstance(raw, dict) and "purchase" in raw:
        purchase = _validate_list(path, "purchase", PurchasePrice, raw)
    return rental, purchase


def _read_yaml(path: Path) -> Any:
    text = read_text(path, "catalog file", "YAML file")
    return load_yaml(text, path, keep=True)


# id/alias -> record, per tuple of records (catalogs are immutable); the tuple is kept
# alive with its index so that its id() is never reused. One lookup per predict row made
# the linear scan a hot spot on large files.
_INDEXES: dict[int, tuple[tuple[Any, ...], dict[str, Any]]] = {}


def _lookup_index(items: tuple[Any, ...]) -> dict[str, Any]:
    entry = _INDEXES.get(id(items))
    if entry is not None and entry[0] is items:
        return entry[1]
    index: dict[str, Any] = {}
    for it in reversed(items):  # the first matching record wins, as in a linear scan
        for a in (it.id, *getattr(it, "aliases", ())):
            index[a.lower()] = it
    if len(_INDEXES) > 256:
        _INDEXES.clear()
    _INDEXES[id(items)] = (items, index)
    return index


#: :meth:`Catalog.resolve`'s answers by (catalog, model, GPU, precision, framework: the
#: objects' ids, ids given as strings; KV precision), with the arguments they were made for
#: (held, so that no other object takes one of their ids; an error is not remembered);
#: emptied past :data:`_RESOLVED_MAX` entries. Records are frozen: an answer never goes stale
_RESOLVED: dict[tuple, tuple[tuple, Resolved]] = {}
_RESOLVED_MAX = 50_000


class Catalog(Frozen):
    """All catalogs together, with lookups that accept ids and aliases."""

    accelerators: tuple[Accelerator, ...]
    models: tuple[ModelArch, ...]
    precisions: tuple[Precision, ...]
    kv_precisions: tuple[KvPrecision, ...]
    frameworks: tuple[Framework, ...]
    rental_prices: tuple[RentalPrice, ...] = ()
    purchase_prices: tuple[PurchasePrice, ...] = ()
    #: formats each engine serves / refuses per MoE architecture (data/moe_formats.yaml)
    moe_formats: tuple[EngineFormats, ...] = ()
    #: the first release of each engine serving each architecture (data/model_support.yaml)
    model_support: tuple[ModelSupport, ...] = ()
    #: GPUs a framework's builds do not run on (data/frameworks.yaml gpu_support)
    framework_gpus: tuple[GpuRefused, ...] = ()

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
        for name, rows in (("rental", self.rental_prices), ("purchase", self.purchase_prices)):
            first: dict[tuple[Any, ...], int] = {}
            for i, p in enumerate(rows):
                j = first.setdefault(p.dedup_key(), i)
                if j != i:  # a second copy of a row shifts the median toward it
                    raise ValueError(
                        f"prices: {name}[{i}] ({p.gpu}) duplicates {name}[{j}] (same gpu, "
                        "provider, offering, kind, region, commitment and as_of); remove one"
                    )
        prec_ids = {p.id for p in self.precisions}
        kv_ids = {k.id for k in self.kv_precisions}
        for p in self.precisions:
            bad = set(p.kv_options) - kv_ids
            if p.kv_default not in kv_ids:
                raise ValueError(
                    f"precision {p.id}: kv_default '{printable(p.kv_default)}' is not a kv "
                    f"precision (known: {', '.join(sorted(kv_ids))})"
                )
            if bad:
                raise ValueError(f"precision {p.id}: unknown kv precision {sorted(bad)}")
            if p.checkpoint_kv is not None and p.checkpoint_kv not in p.kv_options:
                raise ValueError(
                    f"precision {p.id}: checkpoint_kv '{printable(p.checkpoint_kv)}' is not one "
                    f"of its kv_options ({', '.join(p.kv_options)})"
                )
        for f in self.frameworks:
            bad = set(f.precisions) - prec_ids
            if bad:
                raise ValueError(f"framework {f.id}: unknown precisions {sorted(bad)}")
        fw_ids = {f.id for f in self.frameworks}
        for r in self.moe_formats:
            named = {x.precision for x in (*r.serves, *r.refuses) if x.precision}
            if r.framework not in fw_ids or named - prec_ids:
                bad = sorted(({r.framework} - fw_ids) | (named - prec_ids))
                raise ValueError(
                    f"moe_formats {r.architecture} / {r.framework}: unknown framework or "
                    f"precision {bad}"
                )
        for g in self.framework_gpus:
            bad = sorted(({g.framework} - fw_ids) | (set(g.gpus) - gpu_ids))
            if bad:
                raise ValueError(f"gpu_support {g.framework}: unknown framework or gpu {bad}")
        for r in self.model_support:
            if r.framework not in fw_ids:
                raise ValueError(f"model_support {r.architecture}: unknown framework {r.framework}")
        for m in self.models:
            pairs = [(c.precision, a) for c in m.checkpoints for a in c.archs]
            for c in m.checkpoints:
                if c.precision not in prec_ids:
                    raise ValueError(f"model {m.id}: checkpoint {c.repo}: unknown precision")
            if len(set(pairs)) != len(pairs):
                raise ValueError(f"model {m.id}: two checkpoints for one (precision, arch)")
        return self

    # ---- lookups
    @staticmethod
    def _find(kind: str, items: Iterable[Any], key: str) -> Any:
        k = str(key).strip().lower()
        items = tuple(items)
        hit = _lookup_index(items).get(k)
        if hit is not None:
            return hit
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

        Objects pass through unchanged; ``kv_precision`` defaults to
        :func:`default_kv_precision` (what the framework does with a checkpoint in this format).
        A framework that does not run on the GPU's vendor is an error
        (:func:`~planner.catalog.compat.check_framework_gpu`), and so is a weight format the
        framework does not serve for the model's MoE architecture
        (:func:`~planner.catalog.compat.check_model_format`, ``data/moe_formats.yaml``), and so
        is a weight format the engine has no kernels for on the GPU's vendor
        (:func:`~planner.catalog.compat.check_framework_precision`), and so
        is an engine no release of which serves the model
        (:func:`~planner.catalog.model_support.check_model_served`).

        Where the model is a record, the answer is remembered (:data:`_RESOLVED`, records
        compared by identity): a search resolves each option's records ~3 times.
        """
        if not isinstance(model, ModelArch):
            return self._resolve(model, gpu, precision, framework, kv_precision)
        args = (self, model, gpu, precision, framework)
        key = (*(a if a is None or type(a) is str else id(a) for a in args), kv_precision)
        hit = _RESOLVED.get(key)
        if hit is not None:  # the entry holds its objects alive: their ids are not reused
            return hit[1]
        out = self._resolve(model, gpu, precision, framework, kv_precision)
        if len(_RESOLVED) >= _RESOLVED_MAX:
            _RESOLVED.clear()
        _RESOLVED[key] = (args, out)
        return out

    def _resolve(
        self,
        model: str | os.PathLike[str] | ModelArch,
        gpu: str | Accelerator,
        precision: str | Precision,
        framework: str | Framework | None = None,
        kv_precision: str | None = None,
    ) -> Resolved:
        """:meth:`resolve`, not remembered."""
        m = self.model(model)
        g = gpu if isinstance(gpu, Accelerator) else self.gpu(gpu)
        p = precision if isinstance(precision, Precision) else self.precision(precision)
        fw = (
            framework
            if isinstance(framework, Framework) or framework is None
            else self.framework(framework)
        )
        check_framework_gpu(fw, g, self.framework_gpus)
        check_framework_precision(fw, p, g)
        check_model_format(self.moe_formats, m, fw, p)
        check_model_served(self.model_support, fw.id if fw else None, m)
        kv = self.kv_precision(kv_precision or default_kv_precision(p, fw, m).id)
        if kv.id not in p.kv_options and kv.id != p.kv_default:
            raise PlannerError(
                f"kv precision '{kv.id}' is not an option with {p.id} "
                f"(options: {', '.join(p.kv_options)})"
            )
        if kv_quantized_problem(fw, kv.id, p, m):
            raise PlannerError(kv_quantized_problem(fw, kv.id, p, m))
        return Resolved(m, g, p, kv, fw)


class KvDefault(NamedTuple):
    """The KV precision a deployment uses when none is given, and why."""

    id: str
    basis: str


def kv_quantized_problem(fw: Framework | None, kv: str, p: Precision, m: Any = None) -> str:
    """Why ``fw`` cannot store KV in ``kv`` ('' when it can): an engine whose quantized KV
    precisions were read (``Framework.kv_quantized``) stores only those, besides 16-bit KV
    and the checkpoint's own default (:func:`default_kv_precision`)."""
    if fw is None or fw.kv_quantized is None or kv in ("bf16", "fp16"):
        return ""
    if kv in fw.kv_quantized or kv == default_kv_precision(p, fw, m).id:
        return ""
    return (
        f"{fw.id} stores no {kv} KV cache: its quantized KV precisions are "
        f"{', '.join(fw.kv_quantized)} ({fw.kv_default_source or 'data/frameworks.yaml'})"
    )


def default_kv_precision(
    precision: Precision, framework: Framework | None = None, model: ModelArch | None = None
) -> KvDefault:
    """THE default KV-cache precision of (weight format, framework, model checkpoint).

    An engine whose default KV setting follows the checkpoint (``kv_follows_checkpoint``:
    vLLM, TensorRT-LLM) stores KV in the precision the checkpoint declares: published
    checkpoints in a format with ``checkpoint_kv`` (fp8 and NVFP4 checkpoints from NVIDIA
    Model Optimizer declare ``kv_cache_quant_algo: FP8``) get an fp8 KV cache. A model's
    own release in its native format (gpt-oss MXFP4) declares no KV quantization and keeps
    the format's ``kv_default``, as does every other engine and no engine at all. A model
    read from a ``config.json`` carries what its checkpoint declares (``checkpoint_kv``, from
    ``kv_cache_scheme`` / ``kv_cache_quant_algo``), which then decides instead. Where
    GPUs differ, no source read makes the default depend on the GPU (every architecture in
    the catalog stores fp8 KV), so the GPU does not enter.

    Returns
    -------
    KvDefault
        ``id`` (a KV precision id) and ``basis``, one line for outputs, with the source.
    """
    declared = model.checkpoint_kv if model is not None else None
    follows = framework is not None and framework.kv_follows_checkpoint
    if follows and declared is not None:  # read from the checkpoint's own config files
        if declared != "none":
            return KvDefault(
                declared,
                f"default for {framework.id} with this checkpoint, whose quantization config "
                f"declares {declared} KV: {framework.kv_default_source}",
            )
        return KvDefault(
            precision.kv_default,
            f"default for {precision.id} weights: this checkpoint's quantization config "
            "declares no KV quantization",
        )
    ckpt = precision.checkpoint_kv
    own_release = model is not None and model.native_precision == precision.id
    if framework is not None and framework.kv_follows_checkpoint and ckpt and not own_release:
        return KvDefault(
            ckpt,
            f"default for {framework.id} with an {precision.id} checkpoint, which declares "
            f"{ckpt} KV: {framework.kv_default_source}",
        )
    if own_release and framework is not None and ckpt:
        why = f"{model.id}'s own {precision.id} release declares no KV quantization"
    elif framework is not None and ckpt:
        why = f"{framework.id} keeps the model dtype unless asked" + (
            f" ({framework.kv_default_source})" if framework.kv_default_source else ""
        )
    elif framework is None and ckpt:
        why = "no framework given"
    else:
        why = f"{precision.id} checkpoints declare no KV quantization"
    return KvDefault(precision.kv_default, f"default for {precision.id} weights: {why}")


def kv_precision_basis(
    kv_precision: str | None,
    precision: Precision,
    framework: Framework | None = None,
    model: ModelArch | None = None,
) -> str:
    """One line saying where a deployment's KV precision comes from (given or default)."""
    if kv_precision:
        return f"{kv_precision} (given)"
    d = default_kv_precision(precision, framework, model)
    return f"{d.id} ({d.basis})"


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
            raise PlannerError(f"{name} must be a whole number >= 1, got {shown(v)}")
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
    fw_raw = _read_yaml(data_dir / "frameworks.yaml")
    frameworks = _validate_list(data_dir / "frameworks.yaml", "frameworks", Framework, fw_raw)
    rental: list[RentalPrice] = []
    purchase: list[PurchasePrice] = []
    prices_path = data_dir / "prices.yaml"
    if prices_path.exists():
        rental, purchase = price_rows(prices_path, _read_yaml(prices_path))
    try:
        return Catalog(
            accelerators=tuple(accelerators),
            models=tuple(models),
            precisions=tuple(precisions),
            kv_precisions=tuple(kv),
            frameworks=tuple(frameworks),
            rental_prices=tuple(rental),
            purchase_prices=tuple(purchase),
            moe_formats=read_moe_formats(data_dir),
            model_support=read_model_support(data_dir),
            framework_gpus=read_gpu_support(fw_raw, data_dir / "frameworks.yaml"),
        )
    except ValidationError as e:
        raise PlannerError(f"{data_dir}: {e.errors()[0]['msg']}") from None


@lru_cache(maxsize=8)
def _load_cached(data_dir: str) -> Catalog:
    return _load_dir(Path(data_dir))


def load_catalog(data_dir: str | os.PathLike[str] | None = None) -> Catalog:
    """Load and validate every catalog under ``data_dir`` (default: the bundled ``data/``).

    Results are cached per directory; the returned object is immutable. The default comes
    from ``$PLANNER_DATA_DIR`` where it is set: an empty value or one that is not a folder is
    an error naming the variable.
    """
    if not data_dir:
        check_data_dir_env()
    return _load_cached(str(Path(data_dir) if data_dir else DATA_DIR))


def check_data_dir_env() -> None:
    """Raise a PlannerError naming ``PLANNER_DATA_DIR`` when it is set to an empty value
    or to something that is not a folder (otherwise a missing file's message would not say
    where the folder came from)."""
    env = os.environ.get("PLANNER_DATA_DIR")
    if env is None:
        return
    if not env.strip():
        raise PlannerError(
            "PLANNER_DATA_DIR is set but empty; unset it (the bundled data/ is used) or "
            "name a folder with hardware.yaml, models.yaml, ..."
        )
    if not os.path.isdir(env):
        raise PlannerError(
            f"PLANNER_DATA_DIR={printable(env)}: not a folder; unset it or name a folder with "
            "hardware.yaml, models.yaml, ..."
        )
