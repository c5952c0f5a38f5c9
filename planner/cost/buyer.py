"""Own, rent or buy tokens: the utilisation above which owning beats renting, the hosted-API
price table, the monthly volume above which self-hosting beats the cheapest API, and the
InferenceX buyer segments.

Formulas (``docs/recommend.md``, "Own, rent or buy tokens"):

* **Break-even utilisation** ``u* = own / rent``: an owned GPU costs ``own`` [USD per
  GPU-hour of the year, at full use: capital + power at full load + ops] whether it is busy or
  not; renting only the busy hours costs ``u × rent``. Owning is cheaper when
  ``u > u*``; ``u* ≥ 1`` means renting is cheaper at any utilisation. (Charging the owned
  GPU's power at full use makes ``u*`` an upper bound.)
* **API crossover** ``V* = F / (p_api − m)`` [million tokens per month]: a self-hosted fleet
  costs ``F + m × V`` a month (``F`` fixed [USD per month], ``m`` marginal [USD per million
  tokens]); the API costs ``p_api × V``. Above ``V*`` self-hosting is cheaper. A fleet carries
  at most ``C`` [million tokens per month] at full load: when ``V* > C`` (equivalently
  ``p_api ≤ F / C + m``) the API is cheaper at every volume the fleet can serve, and a larger
  fleet at full load costs the same per token, so self-hosting never wins.
* ``p_api`` is the API's price blended at the workload's token mix:
  ``(mean_in × p_in + mean_out × p_out) / (mean_in + mean_out)`` [USD per million tokens].
"""

from __future__ import annotations

import datetime as _dt
import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError

from ..catalog import Frozen
from ..errors import PlannerError
from .data import _error, _key, _read_yaml
from .owning import _positive

__all__ = [
    "API_PRICES_FILE",
    "SEGMENTS_FILE",
    "ApiPrice",
    "ApiQuote",
    "BuyerSegment",
    "Crossover",
    "SegmentPrice",
    "api_crossover",
    "api_reference",
    "blended_usd_per_mtok",
    "breakeven_utilization",
    "load_api_prices",
    "load_segments",
    "segment",
]

API_PRICES_FILE = "api_prices.yaml"
SEGMENTS_FILE = "segments.yaml"
_STALE_AFTER_DAYS = 365  # the rental rule (pricing.STALE_AFTER_DAYS)
_UsdMtok = Annotated[float, Field(gt=0, le=1000)]


# --------------------------------------------------------------------------- own vs rent
def breakeven_utilization(own_usd_per_gpu_hour: float, rent_usd_per_gpu_hour: float) -> float:
    """The utilisation above which owning a GPU beats renting it [-]: ``own / rent``.

    Parameters
    ----------
    own_usd_per_gpu_hour : cost of owning at full use [USD per GPU-hour of the year]
    rent_usd_per_gpu_hour : rental price [USD per GPU-hour rented]

    Returns
    -------
    float : ``u*``; owning is cheaper when the GPU is busy more than ``u*`` of the hours
    (``u* >= 1``: renting is cheaper at any utilisation).
    """
    own = _positive("own_usd_per_gpu_hour", own_usd_per_gpu_hour)
    rent = _positive("rent_usd_per_gpu_hour", rent_usd_per_gpu_hour)
    return own / rent


# --------------------------------------------------------------------------- API vs self-hosting
def blended_usd_per_mtok(
    usd_per_mtok_input: float,
    usd_per_mtok_output: float,
    mean_input_tokens: float,
    mean_output_tokens: float,
) -> float:
    """An API's price per million tokens (input + output) at a workload's token mix [USD]:
    ``(mean_in × p_in + mean_out × p_out) / (mean_in + mean_out)``."""
    i = _positive("mean_input_tokens", mean_input_tokens, allow_zero=True)
    o = _positive("mean_output_tokens", mean_output_tokens, allow_zero=True)
    if i + o <= 0:
        raise PlannerError("mean_input_tokens + mean_output_tokens must be > 0")
    p_in = _positive("usd_per_mtok_input", usd_per_mtok_input)
    p_out = _positive("usd_per_mtok_output", usd_per_mtok_output)
    return (i * p_in + o * p_out) / (i + o)


class Crossover(Frozen):
    """The monthly token volume above which a self-hosted fleet beats an API.

    ``mtok_per_month`` is ``F / (p_api − m)`` [million tokens per month], or None when
    self-hosting never wins (``reason`` says why); ``capacity_mtok_per_month`` is what the
    fleet carries at full load (None: not given, no capacity check)."""

    mtok_per_month: float | None
    fixed_usd_per_month: float
    api_usd_per_mtok: float
    marginal_usd_per_mtok: float
    capacity_mtok_per_month: float | None = None
    reason: str


def api_crossover(
    fixed_usd_per_month: float,
    api_usd_per_mtok: float,
    marginal_usd_per_mtok: float = 0.0,
    capacity_mtok_per_month: float | None = None,
) -> Crossover:
    """The monthly volume [million tokens] above which self-hosting beats an API.

    Parameters
    ----------
    fixed_usd_per_month : the fleet's cost that does not depend on the volume [USD per month]
    api_usd_per_mtok : the API's price at the workload's mix [USD per million tokens]
    marginal_usd_per_mtok : the fleet's cost per million tokens served [USD] (0 for a rented
        fleet; the power for an owned one)
    capacity_mtok_per_month : what the fleet carries at full load [million tokens per month]

    Returns
    -------
    Crossover : ``V* = F / (p_api − m)``; None with a reason when ``p_api ≤ m`` or
    ``V* > C`` (the API is cheaper at every volume the fleet can carry).
    """
    f = _positive("fixed_usd_per_month", fixed_usd_per_month, allow_zero=True)
    p = _positive("api_usd_per_mtok", api_usd_per_mtok)
    m = _positive("marginal_usd_per_mtok", marginal_usd_per_mtok, allow_zero=True)
    c = (
        None
        if capacity_mtok_per_month is None
        else _positive("capacity_mtok_per_month", capacity_mtok_per_month)
    )
    base = dict(
        fixed_usd_per_month=f, api_usd_per_mtok=p, marginal_usd_per_mtok=m,
        capacity_mtok_per_month=c,
    )  # fmt: skip
    if p <= m:
        return Crossover(
            mtok_per_month=None,
            reason=f"the API (${p:.4g}/M) costs no more than the fleet's own cost per token "
            f"(${m:.4g}/M): self-hosting never wins",
            **base,
        )
    v = f / (p - m)
    if c is not None and v > c * (1 + 1e-12):
        full = f / c + m
        return Crossover(
            mtok_per_month=None,
            reason=f"the API (${p:.4g}/M) is cheaper than this fleet even at full load "
            f"(${full:.4g}/M at {c:,.0f} M tokens a month): self-hosting never wins",
            **base,
        )
    return Crossover(
        mtok_per_month=v,
        reason=f"${f:,.0f}/month fixed / (${p:.4g} − ${m:.4g}) per M tokens",
        **base,
    )


# --------------------------------------------------------------------------- API price table
class ApiPrice(Frozen):
    """A dated hosted-API price of one catalog model [USD per million tokens]."""

    model: str = Field(min_length=1, description="data/models.yaml id")
    provider: str = Field(min_length=1)
    provider_model: str = Field(min_length=1, description="the provider's own model id")
    usd_per_mtok_input: _UsdMtok
    usd_per_mtok_output: _UsdMtok
    source: str = Field(min_length=3)
    as_of: _dt.date
    low_confidence: Annotated[bool, Field(strict=True)] = False
    notes: str | None = None


class ApiQuote(Frozen):
    """The API price a plan compares with: the cheapest trusted row of the model at the
    workload's token mix (``usd_per_mtok_blended``), with its provenance."""

    model: str
    provider: str
    provider_model: str
    usd_per_mtok_input: float
    usd_per_mtok_output: float
    usd_per_mtok_blended: float
    source: str
    as_of: _dt.date
    rows: int = Field(ge=1, description="rows of the model compared")
    rows_set_aside: int = 0
    warnings: tuple[str, ...] = ()
    notes: str | None = None


def _row_warnings(row: ApiPrice, today: _dt.date) -> tuple[str, ...]:
    out = []
    if row.low_confidence:
        out.append("low confidence")
    if (today - row.as_of).days > _STALE_AFTER_DAYS:
        out.append("older than 12 months")
    return tuple(out)


def _top_list(path: Path, key: str) -> list:
    """The list under ``key``, the one top-level key a price-side file may have."""
    raw = _read_yaml(path)
    if not isinstance(raw, dict) or not isinstance(raw.get(key), list):
        raise PlannerError(f"{path}: expected a top-level mapping with a list '{key}'")
    extra = sorted(set(raw) - {key})
    if extra:
        raise PlannerError(f"{path.name}: unknown top-level key {extra[0]!r} (allowed: {key})")
    return raw[key]


@lru_cache(maxsize=8)
def _api_cached(file: str, _mtime_ns: int, _size: int) -> tuple[ApiPrice, ...]:
    path = Path(file)
    raw = _top_list(path, "api_prices")
    rows: list[ApiPrice] = []
    seen: dict[tuple[str, str, str, _dt.date], int] = {}
    for i, item in enumerate(raw):
        ident = item.get("model", "?") if isinstance(item, dict) else "?"
        try:
            rows.append(ApiPrice.model_validate(item))
        except ValidationError as e:
            raise _error(path, f"api_prices[{i}] ({ident})", e, ApiPrice) from None
        r = rows[-1]
        j = seen.setdefault((r.model, r.provider.lower(), r.provider_model, r.as_of), i)
        if j != i:
            raise PlannerError(
                f"{path.name}: api_prices[{i}] ({ident}) repeats api_prices[{j}] (same model, "
                "provider, provider_model and as_of)"
            )
    return tuple(rows)


def load_api_prices(data_dir: str | os.PathLike[str] | None = None) -> tuple[ApiPrice, ...]:
    """Load ``api_prices.yaml`` from ``data_dir`` (default: the bundled ``data/``).

    Raises
    ------
    PlannerError
        missing file, bad YAML, a bad row (file, row index, model, field), a repeated row.
    """
    return _api_cached(*_key(data_dir, API_PRICES_FILE))


def api_reference(
    model_id: str,
    mean_input_tokens: float,
    mean_output_tokens: float,
    *,
    prices: tuple[ApiPrice, ...] | None = None,
    today: _dt.date | None = None,
) -> ApiQuote | None:
    """The cheapest hosted API for a model at a workload's token mix, or None without a row.

    Rows marked ``low_confidence`` or older than 12 months are set aside while a trusted row
    of the model remains (as for rental prices); otherwise every row is used and
    ``warnings`` say why the price is not to be trusted silently.
    """
    day = today or _dt.date.today()
    rows = [r for r in (prices if prices is not None else load_api_prices()) if r.model == model_id]
    if not rows:
        return None
    trusted = [r for r in rows if not _row_warnings(r, day)] or rows
    blended = [
        (
            blended_usd_per_mtok(
                r.usd_per_mtok_input, r.usd_per_mtok_output, mean_input_tokens, mean_output_tokens
            ),
            r.provider,
            i,
        )
        for i, r in enumerate(trusted)
    ]
    price, _, k = min(blended)
    best = trusted[k]
    warnings = list(_row_warnings(best, day))
    if len(rows) == 1:
        warnings.insert(0, "1 API row")
    return ApiQuote(
        model=model_id,
        provider=best.provider,
        provider_model=best.provider_model,
        usd_per_mtok_input=best.usd_per_mtok_input,
        usd_per_mtok_output=best.usd_per_mtok_output,
        usd_per_mtok_blended=price,
        source=best.source,
        as_of=best.as_of,
        rows=len(rows),
        rows_set_aside=len(rows) - len(trusted),
        warnings=tuple(warnings),
        notes=best.notes,
    )


# --------------------------------------------------------------------------- buyer segments
class SegmentPrice(Frozen):
    gpu: str = Field(min_length=1)
    usd_per_gpu_hour: Annotated[float, Field(gt=0, le=1000)]
    low_confidence: Annotated[bool, Field(strict=True)] = False


class BuyerSegment(Frozen):
    """An InferenceX-style buyer segment: the all-in $/GPU-hour per GPU for one kind of buyer
    (``basis`` own or rent, over ``life_years``)."""

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    basis: Literal["own", "rent"]
    life_years: Annotated[float, Field(gt=0, le=20)]
    source: str = Field(min_length=3)
    as_of: _dt.date
    notes: str | None = None
    prices: tuple[SegmentPrice, ...] = Field(min_length=1)

    def price(self, gpu_id: str) -> SegmentPrice | None:
        return next((p for p in self.prices if p.gpu == gpu_id), None)


@lru_cache(maxsize=8)
def _segments_cached(file: str, _mtime_ns: int, _size: int) -> tuple[BuyerSegment, ...]:
    path = Path(file)
    raw = _top_list(path, "segments")
    out: list[BuyerSegment] = []
    for i, item in enumerate(raw):
        ident = item.get("id", "?") if isinstance(item, dict) else "?"
        try:
            out.append(BuyerSegment.model_validate(item))
        except ValidationError as e:
            raise _error(path, f"segments[{i}] ({ident})", e, BuyerSegment) from None
    ids = [s.id for s in out]
    dup = next((x for x in ids if ids.count(x) > 1), None)
    if dup:
        raise PlannerError(f"{path.name}: segment id {dup!r} appears twice")
    return tuple(out)


def load_segments(data_dir: str | os.PathLike[str] | None = None) -> tuple[BuyerSegment, ...]:
    """Load ``segments.yaml`` (InferenceX buyer segments) from ``data_dir``."""
    return _segments_cached(*_key(data_dir, SEGMENTS_FILE))


def segment(segment_id: str, data_dir: str | os.PathLike[str] | None = None) -> BuyerSegment:
    """One buyer segment by id, or a PlannerError listing the ids."""
    segs = load_segments(data_dir)
    for s in segs:
        if s.id == segment_id:
            return s
    raise PlannerError(
        f"--segment: unknown buyer segment {segment_id!r} (valid: {', '.join(s.id for s in segs)})"
    )
