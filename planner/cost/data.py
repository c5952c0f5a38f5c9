"""Loaders for ``data/ownership.yaml``, ``data/quality.yaml`` and a buyer's own price file.

Both files are validated into frozen pydantic models with ``extra="forbid"``; a bad
entry is a :class:`~planner.errors.PlannerError` that names the file, the entry and
the field path (``quality.yaml: quality[3] (llama-3.1-70b fp8): field 'recovery_pct':
...``). Results are cached per directory and immutable.
"""

from __future__ import annotations

import datetime as _dt
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from ..catalog import DATA_DIR, Catalog, Frozen, PurchasePrice, RentalPrice, price_rows
from ..catalog.records import field_error
from ..errors import PlannerError, read_text, shown
from ..files import load_yaml

__all__ = [
    "OWNERSHIP_FILE",
    "QUALITY_FILE",
    "OwnershipDefaults",
    "OwnershipParam",
    "PRICE_FILE_MODES",
    "QualityData",
    "QualityRow",
    "apply_price_rows",
    "load_price_file",
    "load_ownership",
    "load_quality",
]

OWNERSHIP_FILE = "ownership.yaml"
QUALITY_FILE = "quality.yaml"

ParamKind = Literal["sourced", "derived", "assumption"]


# --------------------------------------------------------------------------- ownership
class OwnershipParam(Frozen):
    """One default of owning hardware, with its provenance.

    ``kind`` is ``sourced`` (read in ``source``), ``derived`` (arithmetic on sourced
    numbers, shown in ``notes``) or ``assumption`` (no source; ``notes`` says why the
    value was chosen). Every parameter can be overridden by the caller.
    """

    value: float
    unit: str = Field(min_length=1)
    kind: ParamKind
    source: str | None = None
    as_of: _dt.date
    notes: str | None = None

    @model_validator(mode="after")
    def _provenance(self) -> OwnershipParam:
        if self.kind in ("sourced", "derived") and not (self.source and len(self.source) >= 3):
            raise ValueError(f"a {self.kind} value needs a source")
        if self.kind == "assumption" and not self.notes:
            raise ValueError("an assumption needs notes that justify its value")
        return self


class OwnershipDefaults(Frozen):
    """Defaults for :func:`planner.cost.own_cost_per_gpu_hour` (see ``data/ownership.yaml``)."""

    amortisation_years: OwnershipParam
    cost_of_capital_per_year: OwnershipParam
    server_overhead_fraction: OwnershipParam
    host_power_factor: OwnershipParam
    pue: OwnershipParam
    electricity_usd_per_kwh: OwnershipParam
    ops_fraction_of_capex_per_year: OwnershipParam
    utilisation: OwnershipParam
    idle_power_fraction: OwnershipParam

    @model_validator(mode="after")
    def _ranges(self) -> OwnershipDefaults:
        for name, ok, rule in _OWNERSHIP_RANGES:
            if not ok(getattr(self, name).value):
                raise ValueError(f"{name}.value must be {rule}")
        return self


_OWNERSHIP_RANGES: tuple[tuple[str, Any, str], ...] = (
    ("amortisation_years", lambda v: v > 0, "> 0"),
    ("cost_of_capital_per_year", lambda v: 0 <= v <= 1, "in [0, 1]"),
    ("server_overhead_fraction", lambda v: v >= 0, ">= 0"),
    ("host_power_factor", lambda v: v >= 1, ">= 1"),
    ("pue", lambda v: v >= 1, ">= 1"),
    ("electricity_usd_per_kwh", lambda v: v >= 0, ">= 0"),
    ("ops_fraction_of_capex_per_year", lambda v: v >= 0, ">= 0"),
    ("utilisation", lambda v: 0 <= v <= 1, "in [0, 1]"),
    ("idle_power_fraction", lambda v: 0 <= v <= 1, "in [0, 1]"),
)


# --------------------------------------------------------------------------- quality
class QualityRow(Frozen):
    """Published accuracy of one quantized checkpoint on one benchmark.

    Scores are in the benchmark's points (percent). A row gives both scores, or the
    recovery the source states, or both.
    """

    models: tuple[str, ...] = Field(min_length=1, description="catalog model ids it applies to")
    precision: str = Field(min_length=1)
    baseline_precision: str = "bf16"
    variant: Literal["instruct", "base", "reasoning"] | None = None
    checkpoint: str | None = None
    method: str | None = None
    fp4_format: Literal["nvfp4", "mxfp4"] | None = Field(
        None,
        description="fp4 rows: the checkpoint's block format (NVFP4: 16-element blocks, "
        "E4M3 scales; MXFP4: 32-element blocks, E8M0 scales)",
    )
    benchmark: str = Field(min_length=1)
    baseline_score: float | None = Field(None, gt=0)
    quantized_score: float | None = Field(None, ge=0)
    recovery_pct: float | None = Field(None, gt=0)
    source: str = Field(min_length=3)
    as_of: _dt.date
    notes: str | None = None

    @model_validator(mode="after")
    def _scores(self) -> QualityRow:
        if (self.precision == "fp4") != (self.fp4_format is not None):
            raise ValueError("fp4_format is given for fp4 rows, and only for them")
        both = self.baseline_score is not None and self.quantized_score is not None
        if not both and self.recovery_pct is None:
            raise ValueError(
                "give baseline_score and quantized_score, or recovery_pct (as the source states it)"
            )
        if both and self.recovery_pct is not None:
            implied = self.quantized_score / self.baseline_score * 100  # type: ignore[operator]
            if abs(implied - self.recovery_pct) > 0.15:
                raise ValueError(
                    f"recovery_pct {self.recovery_pct} disagrees with the scores "
                    f"({self.quantized_score} / {self.baseline_score} = {implied:.2f}%)"
                )
        return self

    @property
    def delta_points(self) -> float | None:
        """quantized − baseline [benchmark points]; None when the source gives only a recovery."""
        if self.baseline_score is None or self.quantized_score is None:
            return None
        return self.quantized_score - self.baseline_score

    @property
    def recovery(self) -> float:
        """quantized / baseline × 100 [%] (the stated recovery where the source gives one)."""
        if self.recovery_pct is not None:
            return self.recovery_pct
        return self.quantized_score / self.baseline_score * 100  # type: ignore[operator]

    @property
    def delta_pct(self) -> float:
        """Relative change of the score [%]: recovery − 100 (negative = worse)."""
        return self.recovery - 100.0


class QualityData(Frozen):
    rows: tuple[QualityRow, ...] = ()


# --------------------------------------------------------------------------- loading
def _fmt_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for p in loc:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _error(path: Path, where: str, e: ValidationError, cls: type[BaseModel]) -> PlannerError:
    err = field_error(e.errors()[0])
    loc = _fmt_loc(tuple(err["loc"]))
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = f"unknown field (allowed: {', '.join(sorted(cls.model_fields))})"
        got = ""
    else:
        got = f" (got {shown(err.get('input'))})" if loc else ""
    return PlannerError(f"{path.name}: {where}: field '{loc or '<entry>'}': {msg}{got}")


def _read_yaml(path: Path) -> Any:
    text = read_text(path, "catalog file", "YAML file")
    return load_yaml(text, path, keep=True)


def _key(data_dir: str | os.PathLike[str] | None, name: str) -> tuple[str, int, int]:
    """Cache key: the file's path, modification time and size (an edited file is re-read)."""
    path = (Path(data_dir) if data_dir else DATA_DIR) / name
    try:
        st = path.stat()
        return str(path), st.st_mtime_ns, st.st_size
    except OSError:
        return str(path), -1, -1


@lru_cache(maxsize=8)
def _ownership_cached(file: str, _mtime_ns: int, _size: int) -> OwnershipDefaults:
    path = Path(file)
    raw = _read_yaml(path)
    if not isinstance(raw, dict) or not isinstance(raw.get("ownership"), dict):
        raise PlannerError(f"{path}: expected a top-level mapping 'ownership: {{name: {{...}}}}'")
    items = raw["ownership"]
    params: dict[str, OwnershipParam] = {}
    for name, item in items.items():
        if name not in OwnershipDefaults.model_fields:
            allowed = ", ".join(OwnershipDefaults.model_fields)
            raise PlannerError(
                f"{path.name}: ownership.{name}: unknown parameter (allowed: {allowed})"
            )
        try:
            params[name] = OwnershipParam.model_validate(item)
        except ValidationError as e:
            raise _error(path, f"ownership.{name}", e, OwnershipParam) from None
    missing = [n for n in OwnershipDefaults.model_fields if n not in params]
    if missing:
        raise PlannerError(f"{path.name}: ownership: missing parameters: {', '.join(missing)}")
    try:
        return OwnershipDefaults(**params)
    except ValidationError as e:
        raise PlannerError(f"{path.name}: ownership: {e.errors()[0]['msg']}") from None


def load_ownership(data_dir: str | os.PathLike[str] | None = None) -> OwnershipDefaults:
    """Load ``ownership.yaml`` from ``data_dir`` (default: the bundled ``data/``).

    Raises
    ------
    PlannerError
        missing file, bad YAML, an unknown or missing parameter, a bad field (with its
        path), a sourced value without a source, an assumption without notes.
    """
    return _ownership_cached(*_key(data_dir, OWNERSHIP_FILE))


@lru_cache(maxsize=8)
def _quality_cached(file: str, _mtime_ns: int, _size: int) -> QualityData:
    path = Path(file)
    raw = _read_yaml(path)
    if not isinstance(raw, dict) or "quality" not in raw:
        raise PlannerError(f"{path}: expected a top-level mapping with key 'quality'")
    items = raw["quality"]
    if not isinstance(items, list):
        raise PlannerError(f"{path}: 'quality' must be a list")
    rows = []
    seen: dict[tuple, int] = {}
    for i, item in enumerate(items):
        ident = "?"
        if isinstance(item, dict):
            ident = (
                f"{','.join(map(str, item.get('models') or ['?']))} {item.get('precision', '?')}"
            )
        try:
            rows.append(QualityRow.model_validate(item))
        except ValidationError as e:
            raise _error(path, f"quality[{i}] ({ident})", e, QualityRow) from None
        key = tuple(getattr(rows[-1], f) for f in _SAME_ROW)
        j = seen.setdefault(key, i)
        if j != i:
            raise PlannerError(
                f"{path.name}: quality[{i}] ({ident}) repeats quality[{j}] (same "
                f"{', '.join(_SAME_ROW)}); a duplicate row would count twice"
            )
    return QualityData(rows=tuple(rows))


#: fields that make two quality rows the same measurement
_SAME_ROW = ("models", "precision", "baseline_precision", "variant", "checkpoint", "benchmark")


def load_quality(data_dir: str | os.PathLike[str] | None = None) -> QualityData:
    """Load ``quality.yaml`` from ``data_dir`` (default: the bundled ``data/``).

    Raises
    ------
    PlannerError
        missing file, bad YAML, a bad row (file, row index, model/precision, field path).
    """
    return _quality_cached(*_key(data_dir, QUALITY_FILE))


# --------------------------------------------------------------------------- a buyer's prices
PRICE_FILE_MODES = ("replace", "extend")
_CSV_NUMBERS = ("usd_per_gpu_hour", "usd_per_instance_hour")
_CSV_INTS = ("gpus_per_instance",)
#: columns of the `planner prices --format csv` table that are not rental fields: ``flags``
#: is derived (read again, it is recomputed); ``usd`` / ``usd_range`` belong to purchase rows
_PRICES_TABLE_COLUMNS = frozenset({"flags", "usd", "usd_range"})


def _csv_number(text: str, path: Path, row: int, field: str, kind: type) -> float | int:
    t = text.strip()
    try:
        v = kind(t)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise PlannerError(
            f"{path.name}: rental[{row}]: field '{field}': expected {what}, got {shown(t)}"
        ) from None
    if v != v or v in (float("inf"), float("-inf")):
        raise PlannerError(
            f"{path.name}: rental[{row}]: field '{field}': expected a finite number, got {shown(t)}"
        )
    return v


def _csv_rows(path: Path, text: str) -> dict[str, Any]:
    """A CSV price file as ``{"rental": [row, ...]}`` with its numbers parsed.

    Columns are ``RentalPrice`` fields; ``usd_per_gpu_hour_range`` is written ``low-high``
    (e.g. ``1.80-2.40``) and ``low_confidence`` ``true``/``false``; empty cells are absent.
    """
    import csv
    import io

    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise PlannerError(f"{path}: empty CSV file (expected a header row of price fields)")
    seen: set[str] = set()
    for f in reader.fieldnames:
        if f in seen:  # DictReader would keep the last column's value without a word
            raise PlannerError(
                f"{path.name}: column {shown(f)} appears twice in the header; give each field once"
            )
        seen.add(f)
    known = set(RentalPrice.model_fields) | _PRICES_TABLE_COLUMNS
    unknown = [f for f in reader.fieldnames if f not in known]
    if unknown:
        allowed = ", ".join(sorted(RentalPrice.model_fields))
        raise PlannerError(f"{path.name}: unknown column {shown(unknown[0])} (allowed: {allowed})")
    rows: list[dict[str, Any]] = []
    purchases: list[dict[str, Any]] = []
    for i, rec in enumerate(reader):
        kind = (rec.get("kind") or "").strip()
        if kind.startswith("purchase "):  # a purchase row of `planner prices --format csv`
            purchases.append(_csv_purchase(rec, kind, path, i))
            continue
        row: dict[str, Any] = {}
        if "low confidence" in (rec.get("flags") or ""):  # how the prices table writes it
            row["low_confidence"] = True
        for k, v in rec.items():
            if k is None or v is None or not v.strip() or k in _PRICES_TABLE_COLUMNS:
                continue
            if k in _CSV_NUMBERS:
                row[k] = _csv_number(v, path, i, k, float)
            elif k in _CSV_INTS:
                row[k] = _csv_number(v, path, i, k, int)
            elif k == "usd_per_gpu_hour_range":
                lo, sep, hi = (
                    v.strip().strip("[]").replace(";", "-").replace(",", "-").partition("-")
                )
                if not sep:
                    raise PlannerError(
                        f"{path.name}: rental[{i}]: field '{k}': expected low-high, e.g. "
                        f"1.80-2.40, got {shown(v)}"
                    )
                row[k] = [_csv_number(x, path, i, k, float) for x in (lo, hi)]
            elif k == "low_confidence":
                b = v.strip().lower()
                if b not in ("true", "false"):
                    raise PlannerError(
                        f"{path.name}: rental[{i}]: field '{k}': expected true or false, "
                        f"got {shown(v)}"
                    )
                row[k] = b == "true"
            else:
                row[k] = v.strip()
        rows.append(row)
    return {"rental": rows, "purchase": purchases} if purchases else {"rental": rows}


def _csv_purchase(rec: dict[str, Any], kind: str, path: Path, i: int) -> dict[str, Any]:
    """A purchase row of the ``planner prices --format csv`` table (``kind`` ``purchase
    msrp`` etc., ``usd`` or ``usd_range`` ``low-high``) as a ``PurchasePrice`` mapping."""
    row: dict[str, Any] = {"kind": kind.removeprefix("purchase ").strip()}
    for k in ("gpu", "source", "as_of"):
        if (rec.get(k) or "").strip():
            row[k] = rec[k].strip()
    if (rec.get("usd") or "").strip():
        row["usd"] = _csv_number(rec["usd"], path, i, "usd", float)
    if (rec.get("usd_range") or "").strip():
        lo, sep, hi = (
            rec["usd_range"].strip().strip("[]").replace(";", "-").replace(",", "-").partition("-")
        )
        if not sep:
            raise PlannerError(
                f"{path.name}: rental[{i}]: field 'usd_range': expected low-high, got "
                f"{shown(rec['usd_range'])}"
            )
        row["usd_range"] = [_csv_number(x, path, i, "usd_range", float) for x in (lo, hi)]
    return row


def load_price_file(
    path: str | os.PathLike[str], cat: Catalog
) -> tuple[tuple[RentalPrice, ...], tuple[PurchasePrice, ...]]:
    """Read a buyer's price file: YAML (``rental:`` and/or ``purchase:`` lists, as in
    ``data/prices.yaml``) or CSV (rental rows, one column per field; ``.csv`` suffix).

    Every row passes the catalog's own rules (strict numbers, the plausible $/GPU-hour
    band, ordered ranges, no future ``as_of``); a GPU id or alias is resolved to its
    catalog id, and an unknown one names the valid ids.

    Raises
    ------
    PlannerError
        unreadable file, bad YAML/CSV, a bad row (file, row, field and what was expected),
        an unknown GPU, a file without any row.
    """
    p = Path(path)
    text = read_text(p, "price file", "YAML or CSV file")
    raw = _csv_rows(p, text) if p.suffix.lower() == ".csv" else load_yaml(text, p)
    if not isinstance(raw, dict) or not ({"rental", "purchase"} & set(raw)):
        raise PlannerError(
            f"{p}: expected a mapping with a 'rental' and/or 'purchase' list (the format of "
            "data/prices.yaml) or a CSV file with a header row"
        )
    extra = [k for k in raw if k not in ("rental", "purchase")]
    if extra:  # e.g. 'currency: EUR' would be read as USD without a word
        raise PlannerError(
            f"{p.name}: unknown top-level key {shown(extra[0])} (allowed: rental, purchase; "
            "every price is in USD)"
        )
    for key in ("rental", "purchase"):
        items = raw.get(key)
        for i, item in enumerate(items if isinstance(items, list) else ()):
            if isinstance(item, dict) and isinstance(item.get("gpu"), str):
                try:
                    item["gpu"] = cat.gpu(item["gpu"]).id
                except PlannerError:
                    valid = ", ".join(a.id for a in cat.accelerators)
                    raise PlannerError(
                        f"{p.name}: {key}[{i}]: field 'gpu': unknown GPU {shown(item['gpu'])} "
                        f"(valid: {valid})"
                    ) from None
    rental, purchase = price_rows(p, raw, require_rental=False)
    if not rental and not purchase:
        raise PlannerError(f"{p}: no price rows")
    for key, rows in (("rental", rental), ("purchase", purchase)):
        first: dict[tuple[Any, ...], int] = {}
        for i, r in enumerate(rows):
            j = first.setdefault(r.dedup_key(), i)
            if j != i:
                raise PlannerError(
                    f"{p.name}: {key}[{i}] ({r.gpu}) duplicates {key}[{j}] (same gpu, provider, "
                    "offering, kind, region, commitment and as_of); a copy would shift the median"
                )
    return tuple(rental), tuple(purchase)


def apply_price_rows(
    cat: Catalog,
    rental: tuple[RentalPrice, ...],
    purchase: tuple[PurchasePrice, ...] = (),
    mode: str = "replace",
    where: str = "--prices",
) -> Catalog:
    """The catalog with a buyer's rows, for one run (nothing on disk changes).

    ``mode="replace"`` (default): the file's rows for a GPU and kind (on_demand, spot, ...;
    purchase rows per GPU) replace the catalog's rows of that GPU and kind, and every
    other row stays. ``mode="extend"``: the file's rows are added to the catalog's; a row
    that duplicates a catalog row is an error (it would shift the median).
    """
    if mode not in PRICE_FILE_MODES:
        raise PlannerError(f"unknown price-file mode {shown(mode)} (valid: replace, extend)")
    old_r, old_p = cat.rental_prices, cat.purchase_prices
    if mode == "extend":
        have = {r.dedup_key() for r in (*old_r, *old_p)}
        for key, rows in (("rental", rental), ("purchase", purchase)):
            for i, r in enumerate(rows):
                if r.dedup_key() in have:
                    raise PlannerError(
                        f"{where}: {key}[{i}] ({r.gpu}) duplicates a row of data/prices.yaml "
                        "(same gpu, provider, offering, kind, region, commitment and as_of); "
                        "drop it or use replace mode"
                    )
    if mode == "replace":
        gone = {(r.gpu, r.kind) for r in rental}
        old_r = tuple(r for r in old_r if (r.gpu, r.kind) not in gone)
        gone_p = {p.gpu for p in purchase}
        old_p = tuple(p for p in old_p if p.gpu not in gone_p)
    data = {name: getattr(cat, name) for name in type(cat).model_fields}
    data.update(rental_prices=(*old_r, *rental), purchase_prices=(*old_p, *purchase))
    try:
        return Catalog(**data)
    except ValidationError as e:
        msg = str(e.errors()[0]["msg"]).removeprefix("Value error, ")
        raise PlannerError(f"{where}: {msg}") from None
