"""Money: which $/GPU-hour, what a fleet costs per hour and month, and $/M tokens.

Conventions (stated in every result that uses them):

- A month is ``HOURS_PER_MONTH`` = 730 h (8,760 h per year / 12).
- A rental price is per GPU-hour; a row with ``usd_per_gpu_hour_range`` is priced at
  the midpoint of the range and the range is kept on the quote.
- Default price among several rows of one kind: the **median** of the chosen rows
  (:func:`median_usd_per_gpu_hour`: the middle row for an odd count, the mean of the two
  middle rows for an even count). The chosen rows are the *trusted* ones: a row marked
  ``low_confidence`` or older than 12 months (``STALE_AFTER_DAYS`` before ``today``) is
  set aside while any trusted row remains; when none does, every row is used and the
  quote's ``warnings`` say so ("1 price row", "low confidence", "older than 12 months").
  ``provider=`` restricts the choice to that provider's rows.
- $/M tokens = $/h ÷ (tokens/s × 3600 s/h) × 1e6.
"""

from __future__ import annotations

import datetime as _dt
import statistics
from typing import Literal

from pydantic import Field

from ..catalog import (
    MAX_USD_PER_GPU_HOUR,
    MIN_USD_PER_GPU_HOUR,
    PRICE_BAND_REASON,
    Accelerator,
    Catalog,
    Frozen,
    PurchasePrice,
    RentalPrice,
)
from ..errors import PlannerError
from .data import OwnershipDefaults
from .owning import (
    HOURS_PER_MONTH,
    HOURS_PER_YEAR,
    CostTerm,
    OwnCost,
    UsedParam,
    _positive,
    own_cost_per_gpu_hour,
)

__all__ = [
    "HOURS_PER_MONTH",
    "HOURS_PER_YEAR",
    "RENTAL_BASES",
    "CostTerm",
    "FleetCost",
    "OwnCost",
    "PriceOption",
    "PriceQuote",
    "PriceSpread",
    "TokenCosts",
    "UsedParam",
    "check_providers",
    "check_usd_per_gpu_hour",
    "STALE_AFTER_DAYS",
    "fleet_cost",
    "median_usd_per_gpu_hour",
    "own_cost",
    "own_cost_per_gpu_hour",
    "price_options",
    "row_warnings",
    "trusted_rows",
    "quote_price",
    "token_costs",
    "usd_per_mtok",
]


Basis = Literal["on_demand", "reserved", "spot", "serverless", "community", "own"]
RENTAL_BASES: tuple[str, ...] = ("on_demand", "reserved", "spot", "serverless", "community")
_PRICES_FILE = "data/prices.yaml"
STALE_AFTER_DAYS = 365  # a price row older than this is never the silent default


def _kind_label(kind: str) -> str:
    return kind.replace("_", "-")


# --------------------------------------------------------------------------- price rows
class PriceOption(Frozen):
    """One rental row of ``data/prices.yaml`` as a single price [USD per GPU-hour]."""

    gpu: str
    provider: str
    offering: str | None = None
    kind: str
    usd_per_gpu_hour: float = Field(
        gt=0, description="the row's price, or the midpoint of its range"
    )
    usd_per_gpu_hour_range: tuple[float, float] | None = None
    source: str
    as_of: _dt.date
    notes: str | None = None
    region: str | None = None
    commitment: str | None = None
    low_confidence: bool = False

    @classmethod
    def from_row(cls, row: RentalPrice) -> PriceOption:
        if row.usd_per_gpu_hour is not None:
            price = float(row.usd_per_gpu_hour)
        else:
            lo, hi = row.usd_per_gpu_hour_range  # type: ignore[misc]
            price = (lo + hi) / 2
        return cls(
            gpu=row.gpu,
            provider=row.provider,
            offering=row.offering,
            kind=row.kind,
            usd_per_gpu_hour=price,
            usd_per_gpu_hour_range=row.usd_per_gpu_hour_range,
            source=row.source,
            as_of=row.as_of,
            notes=row.notes,
            region=row.region,
            commitment=row.commitment,
            low_confidence=row.low_confidence,
        )


def _today(today: _dt.date | None) -> _dt.date:
    return today if today is not None else _dt.date.today()


def row_warnings(opt: PriceOption, today: _dt.date | None = None) -> tuple[str, ...]:
    """Why a row should not be a silent default: "low confidence", "older than 12 months".

    ``today`` defaults to the system date (injectable for tests). Empty for a trusted row.
    """
    out = []
    if opt.low_confidence:
        out.append("low confidence")
    if (_today(today) - opt.as_of).days > STALE_AFTER_DAYS:
        out.append("older than 12 months")
    return tuple(out)


def trusted_rows(
    opts: tuple[PriceOption, ...], today: _dt.date | None = None
) -> tuple[PriceOption, ...]:
    """The rows a default quote uses: those without :func:`row_warnings`, or every row when
    none is trusted (the quote's ``warnings`` then say why)."""
    return tuple(o for o in opts if not row_warnings(o, today)) or opts


def median_usd_per_gpu_hour(prices: tuple[float, ...] | list[float]) -> float:
    """The median price [USD per GPU-hour]: the middle value for an odd count, the mean of
    the two middle values for an even count. The one definition every output quotes
    (``planner prices``, ``recommend``, the app and the docs).

    Raises
    ------
    PlannerError for an empty sequence.
    """
    if not prices:
        raise PlannerError("no prices to take the median of")
    return float(statistics.median(sorted(float(p) for p in prices)))


class PriceSpread(Frozen):
    """Spread of the rows of one kind for one GPU [USD per GPU-hour] (ranges at their midpoint).

    It covers the rows a default quote is the median of (:func:`trusted_rows`: low-confidence
    and older-than-12-months rows set aside while another row remains), so that its median
    is the quoted price wherever it is shown.
    """

    kind: str
    n_rows: int = Field(ge=1)
    min_usd_per_gpu_hour: float
    median_usd_per_gpu_hour: float
    max_usd_per_gpu_hour: float
    providers: tuple[str, ...]


class PriceQuote(Frozen):
    """The $/GPU-hour a plan uses, where it came from, and the market around it.

    ``rule`` says how the price was chosen ("median of 7 on-demand rows", "provider
    Lambda", "user override", "owned: ..."). ``spread`` covers the trusted rows of this kind
    for this GPU (:func:`trusted_rows`; None when the catalog has none, e.g. a user override
    on an unpriced GPU).
    ``price_rows`` / ``min_`` / ``median_`` / ``max_usd_per_gpu_hour`` describe the rows
    the quote was chosen from (``usd_per_gpu_hour`` is their median); ``warnings`` says
    why the quote is not to be trusted silently ("1 price row", "low confidence",
    "older than 12 months"). For an even count of rows the median is no single row:
    ``provider`` names both middle rows and ``source`` cites both.
    """

    gpu: str
    basis: str
    usd_per_gpu_hour: float = Field(gt=0)
    provider: str | None = None
    offering: str | None = None
    source: str
    as_of: _dt.date | None = None
    notes: str | None = None
    usd_per_gpu_hour_range: tuple[float, float] | None = None
    rule: str
    spread: PriceSpread | None = None
    price_rows: int | None = Field(
        None, description="rows the quote is the median of (None for an override or 'own')"
    )
    min_usd_per_gpu_hour: float | None = None
    median_usd_per_gpu_hour: float | None = None
    max_usd_per_gpu_hour: float | None = None
    rows_set_aside: int = Field(
        0, description="rows of this kind left out: low confidence or older than 12 months"
    )
    warnings: tuple[str, ...] = ()


def _rows(cat: Catalog, gpu_id: str) -> tuple[Accelerator, tuple[RentalPrice, ...]]:
    gpu = cat.gpu(gpu_id)  # UnknownIdError lists the valid ids
    return gpu, tuple(p for p in cat.rental_prices if p.gpu == gpu.id)


def _check_basis(basis: str) -> None:
    if basis not in (*RENTAL_BASES, "own"):
        raise PlannerError(
            f"unknown price basis '{basis}' (valid: {', '.join((*RENTAL_BASES, 'own'))})"
        )


def _available(rows: tuple[RentalPrice, ...]) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.kind] = counts.get(r.kind, 0) + 1
    if not counts:
        return "none"
    return ", ".join(
        f"{_kind_label(k)} ({n} row{'s' if n != 1 else ''})" for k, n in sorted(counts.items())
    )


def price_options(
    cat: Catalog, gpu_id: str, basis: str = "on_demand", provider: str | None = None
) -> tuple[PriceOption, ...]:
    """Rental rows of one kind for one GPU, cheapest first.

    Parameters
    ----------
    cat : the catalog (``load_catalog()``)
    gpu_id : GPU id or alias
    basis : on_demand, reserved, spot, serverless or community
    provider : keep only this provider's rows (case-insensitive exact name)

    Returns
    -------
    tuple of PriceOption, sorted by [USD per GPU-hour] then provider; may be empty
    when the GPU has no row of that kind (``quote_price`` turns that into an error).

    Raises
    ------
    UnknownIdError (a PlannerError) for an unknown GPU, listing the valid ids;
    PlannerError for an unknown basis, for ``basis="own"`` (see ``own_cost_per_gpu_hour``)
    and for a provider with no row of that kind, listing the providers that have one.
    """
    _check_basis(basis)
    if basis == "own":
        raise PlannerError(
            "basis 'own' has no rental rows: use own_cost_per_gpu_hour or quote_price(basis='own')"
        )
    gpu, rows = _rows(cat, gpu_id)
    kind_rows = [r for r in rows if r.kind == basis]
    if provider is not None:
        want = provider.strip().lower()
        sel = [r for r in kind_rows if r.provider.lower() == want]
        if not sel:
            valid = sorted({r.provider for r in kind_rows})
            listing = ", ".join(valid) if valid else "none"
            raise PlannerError(
                f"no {_kind_label(basis)} price for {gpu.id} from provider '{provider}' in "
                f"{_PRICES_FILE}; providers with {_kind_label(basis)} prices for {gpu.id}: {listing}"
            )
        kind_rows = sel
    opts = [PriceOption.from_row(r) for r in kind_rows]
    return tuple(sorted(opts, key=lambda o: (o.usd_per_gpu_hour, o.provider, o.offering or "")))


def _spread(opts: tuple[PriceOption, ...], kind: str) -> PriceSpread | None:
    if not opts:
        return None
    prices = [o.usd_per_gpu_hour for o in opts]
    return PriceSpread(
        kind=kind,
        n_rows=len(prices),
        min_usd_per_gpu_hour=min(prices),
        median_usd_per_gpu_hour=median_usd_per_gpu_hour(prices),
        max_usd_per_gpu_hour=max(prices),
        providers=tuple(sorted({o.provider for o in opts})),
    )


def quote_price(
    cat: Catalog,
    gpu_id: str,
    basis: str = "on_demand",
    provider: str | None = None,
    usd_per_gpu_hour: float | None = None,
    *,
    ownership: OwnershipDefaults | None = None,
    purchase_usd: float | None = None,
    today: _dt.date | None = None,
    **own_overrides: float,
) -> PriceQuote:
    """The $/GPU-hour to plan with, its provenance, and the spread across providers.

    Parameters
    ----------
    cat : the catalog
    gpu_id : GPU id or alias
    basis : on_demand (default), reserved, spot, serverless, community, or own
    provider : use this provider's rows (the median of its rows if it has several)
    usd_per_gpu_hour : user override [USD per GPU-hour]; the quote says "user override"
        and still carries the catalog spread for comparison
    ownership, purchase_usd, **own_overrides : for ``basis="own"``, passed to
        :func:`own_cost_per_gpu_hour` (purchase price from the catalog unless given)
    today : the date rows are aged against (default: the system date); a row older
        than ``STALE_AFTER_DAYS`` is set aside like a low-confidence one

    Returns
    -------
    PriceQuote : ``usd_per_gpu_hour`` is the median of the trusted rows of that kind
    (all rows, with ``warnings``, when none is trusted); ``price_rows``, ``min_`` /
    ``median_`` / ``max_usd_per_gpu_hour`` describe those rows.

    Raises
    ------
    PlannerError
        no price of that kind ("no on-demand price for X in data/prices.yaml; kinds
        available: spot (1 row); add rows with --prices FILE, ..."), a price outside the plausible
        band, an unknown GPU / provider / basis.
    """
    _check_basis(basis)
    gpu, rows = _rows(cat, gpu_id)
    if basis == "own" and usd_per_gpu_hour is None:
        return _own_quote(cat, gpu, ownership, purchase_usd, own_overrides)
    if own_overrides:
        raise PlannerError(
            f"unexpected arguments for basis '{basis}': {', '.join(sorted(own_overrides))}"
        )
    all_opts = () if basis == "own" else price_options(cat, gpu.id, basis)
    spread = _spread(trusted_rows(all_opts, today), basis)
    if usd_per_gpu_hour is not None:
        price = check_usd_per_gpu_hour(usd_per_gpu_hour, "usd_per_gpu_hour")
        return PriceQuote(
            gpu=gpu.id,
            basis=basis,
            usd_per_gpu_hour=price,
            provider=provider,
            source="user override",
            rule="user override",
            spread=spread,
        )
    if not all_opts:
        raise PlannerError(
            f"no {_kind_label(basis)} price for {gpu.id} in {_PRICES_FILE}; kinds available: "
            f"{_available(rows)}; add rows with --prices FILE, or give a price "
            "(recommend: --usd-per-gpu-hour GPU=USD; Python: usd_per_gpu_hour=)"
        )
    opts = price_options(cat, gpu.id, basis, provider) if provider is not None else all_opts
    return _median_quote(gpu.id, basis, opts, spread, provider, today)


def _median_quote(
    gpu_id: str,
    basis: str,
    opts: tuple[PriceOption, ...],
    spread: PriceSpread | None,
    provider: str | None,
    today: _dt.date | None,
) -> PriceQuote:
    """The median of the trusted rows among ``opts`` (sorted cheapest first), said plainly."""
    chosen = trusted_rows(opts, today)
    set_aside = len(opts) - len(chosen)
    n = len(chosen)
    prices = [o.usd_per_gpu_hour for o in chosen]
    median = median_usd_per_gpu_hour(prices)
    label = _kind_label(basis)
    warnings: list[str] = []
    if n == 1 and provider is None:  # a named provider's single row is the buyer's choice
        warnings.append("1 price row")
    for w in ("low confidence", "older than 12 months"):
        k = sum(w in row_warnings(o, today) for o in chosen)
        if k:
            warnings.append(w if n == 1 else f"{w} ({k} of {n} rows)")
    mid = chosen[(n - 1) // 2 : n // 2 + 1]  # one row (odd n) or the two middle rows
    if provider is not None:
        head = f"provider {mid[0].provider}" + (
            f", median of its {n} {label} rows" if n > 1 else ""
        )
    elif n == 1:
        head = f"only {label} row" if not set_aside else f"the one trusted {label} row"
    elif n % 2:
        head = f"median of {n} {label} rows"
    else:
        head = (
            f"median of {n} {label} rows (mean of the two middle rows "
            f"${mid[0].usd_per_gpu_hour:.2f} and ${mid[1].usd_per_gpu_hour:.2f})"
        )
    if set_aside:
        kept = set(chosen)
        why: dict[str, int] = {}
        for o in opts:
            if o not in kept:
                for w in row_warnings(o, today):
                    why[w] = why.get(w, 0) + 1
        reasons = ", ".join(f"{k} {w}" for w, k in why.items())
        head += f"; {set_aside} row{'s' if set_aside != 1 else ''} set aside ({reasons})"
    rule = head + (f" [{', '.join(warnings)}]" if warnings else "")
    one = mid[0]
    if len(mid) == 1:
        src = one.model_dump(
            include={"provider", "offering", "source", "as_of", "notes", "usd_per_gpu_hour_range"}
        )
    else:
        two = mid[1]
        src = dict(
            provider=f"{one.provider} / {two.provider}",
            offering=None,
            source=f"{one.source} | {two.source}",
            as_of=min(one.as_of, two.as_of),
            notes=f"median of {n} rows: mean of {one.provider} "
            f"${one.usd_per_gpu_hour:.3f} and {two.provider} ${two.usd_per_gpu_hour:.3f}",
            usd_per_gpu_hour_range=None,
        )
    return PriceQuote(
        gpu=gpu_id,
        basis=basis,
        usd_per_gpu_hour=median,
        rule=rule,
        spread=spread,
        price_rows=n,
        min_usd_per_gpu_hour=min(prices),
        median_usd_per_gpu_hour=median,
        max_usd_per_gpu_hour=max(prices),
        rows_set_aside=set_aside,
        warnings=tuple(warnings),
        **src,
    )


def check_usd_per_gpu_hour(value: float | int | None, name: str = "usd_per_gpu_hour") -> float:
    """A price [USD per GPU-hour] inside the plausible band, or a PlannerError naming it.

    The band is ``MIN_USD_PER_GPU_HOUR`` .. ``MAX_USD_PER_GPU_HOUR`` (see
    ``PRICE_BAND_REASON``); bools, strings, NaN and infinities are rejected.
    """
    v = _positive(name, value)
    if not MIN_USD_PER_GPU_HOUR <= v <= MAX_USD_PER_GPU_HOUR:
        raise PlannerError(f"{name} {value:g} is outside the plausible band: {PRICE_BAND_REASON}")
    return v


def own_cost(
    cat: Catalog,
    gpu_id: str,
    ownership: OwnershipDefaults | None = None,
    purchase_usd: float | None = None,
    **overrides: float,
) -> OwnCost:
    """The cost of owning a catalog GPU with its terms (:func:`own_cost_per_gpu_hour`) from
    its newest purchase row of ``data/prices.yaml`` (or ``purchase_usd`` [USD per GPU]).

    Raises
    ------
    PlannerError
        no purchase row (naming the GPUs that have one and ``--prices FILE``), a bad value.
    """
    gpu = cat.gpu(gpu_id)
    if purchase_usd is not None:
        purchase: PurchasePrice | float = purchase_usd
    else:
        rows = [p for p in cat.purchase_prices if p.gpu == gpu.id]
        if not rows:
            have = sorted({p.gpu for p in cat.purchase_prices})
            raise PlannerError(
                f"no purchase price for {gpu.id} in {_PRICES_FILE} (GPUs with one: "
                f"{', '.join(have) or 'none'}); add a 'purchase' row with --prices FILE "
                "(Python: purchase_usd=)"
            )
        purchase = max(rows, key=lambda p: p.as_of)  # the newest row
    return own_cost_per_gpu_hour(gpu, purchase, ownership, **overrides)


def _own_quote(
    cat: Catalog,
    gpu: Accelerator,
    ownership: OwnershipDefaults | None,
    purchase_usd: float | None,
    overrides: dict[str, float],
) -> PriceQuote:
    allowed = set(own_cost_per_gpu_hour.__kwdefaults__ or {})
    bad = set(overrides) - allowed
    if bad:
        raise PlannerError(
            f"unknown ownership parameters: {', '.join(sorted(bad))} "
            f"(valid: {', '.join(sorted(allowed))})"
        )
    own = own_cost(cat, gpu.id, ownership, purchase_usd, **overrides)
    src = own.param("purchase_usd")
    assumptions = own.assumptions
    return PriceQuote(
        gpu=gpu.id,
        basis="own",
        usd_per_gpu_hour=own.usd_per_gpu_hour,
        source=f"owned: purchase {src.source}; defaults data/ownership.yaml",
        as_of=src.as_of,
        notes=(
            "terms: "
            + ", ".join(f"{t.name} ${t.usd_per_gpu_hour:.3f}/h" for t in own.terms)
            + (f"; assumptions: {', '.join(assumptions)}" if assumptions else "")
        ),
        rule="owned: capital + power + ops",
    )


# --------------------------------------------------------------------------- fleet money
class FleetCost(Frozen):
    """What a fleet costs [USD]; a month is 730 h.

    ``usd_per_hour`` / ``usd_per_month`` are for ``num_gpus`` provisioned around the clock.
    With ``gpu_hours_per_day`` (an autoscaled fleet following a daily profile) the
    ``*_autoscaled`` fields charge only those GPU-hours: per day = GPU-h/day × $/GPU-h,
    per month = per day × 730/24.
    """

    num_gpus: int = Field(ge=1)
    usd_per_gpu_hour: float = Field(gt=0)
    usd_per_hour: float
    usd_per_day: float
    usd_per_month: float
    hours_per_month: float = HOURS_PER_MONTH
    gpu_hours_per_day: float | None = None
    usd_per_day_autoscaled: float | None = None
    usd_per_month_autoscaled: float | None = None
    price_source: str | None = None


def fleet_cost(
    num_gpus: int,
    price: PriceQuote | float,
    gpu_hours_per_day: float | None = None,
) -> FleetCost:
    """Hourly, daily and monthly cost of ``num_gpus`` GPUs.

    Parameters
    ----------
    num_gpus : GPUs provisioned at peak [-], a whole number >= 1
    price : a ``PriceQuote`` or a price [USD per GPU-hour]
    gpu_hours_per_day : GPU-hours actually run per day by an autoscaled fleet [GPU-h/day],
        at most ``num_gpus × 24``

    Returns
    -------
    FleetCost : usd_per_hour = num_gpus × $/GPU-h; usd_per_month = usd_per_hour × 730 h.
    """
    if isinstance(num_gpus, bool) or not isinstance(num_gpus, int) or num_gpus < 1:
        raise PlannerError(f"num_gpus must be a whole number >= 1, got {num_gpus!r}")
    if isinstance(price, PriceQuote):
        p, src = price.usd_per_gpu_hour, f"{price.source} ({price.rule})"
    else:
        p, src = _positive("usd_per_gpu_hour", price), None
    per_hour = num_gpus * p
    auto_day = auto_month = None
    if gpu_hours_per_day is not None:
        gh = _positive("gpu_hours_per_day", gpu_hours_per_day, allow_zero=True)
        if gh > num_gpus * 24 * (1 + 1e-9):
            raise PlannerError(
                f"gpu_hours_per_day {gh} exceeds {num_gpus} GPUs × 24 h = {num_gpus * 24}"
            )
        auto_day = gh * p
        auto_month = auto_day * HOURS_PER_MONTH / 24
    return FleetCost(
        num_gpus=num_gpus,
        usd_per_gpu_hour=p,
        usd_per_hour=per_hour,
        usd_per_day=per_hour * 24,
        usd_per_month=per_hour * HOURS_PER_MONTH,
        gpu_hours_per_day=gpu_hours_per_day,
        usd_per_day_autoscaled=auto_day,
        usd_per_month_autoscaled=auto_month,
        price_source=src,
    )


def usd_per_mtok(usd_per_hour: float, tokens_per_s: float, utilisation: float = 1.0) -> float:
    """Cost per million tokens [USD per 1e6 tokens].

    ``$/h ÷ (tokens/s × utilisation × 3600 s/h) × 1e6``: ``tokens_per_s`` is the rate
    while busy, ``utilisation`` the busy fraction of the paid hours (0, 1].
    """
    cost = _positive("usd_per_hour", usd_per_hour, allow_zero=True)
    tps = _positive("tokens_per_s", tokens_per_s)
    u = _positive("utilisation", utilisation)
    if u > 1:
        raise PlannerError(f"utilisation must be in (0, 1], got {utilisation}")
    return cost / (tps * u * 3600.0) * 1e6


class TokenCosts(Frozen):
    """$/M tokens [USD per 1e6 tokens], output-only and total (input + output).

    ``*_full_load``: the fleet's hourly cost over its saturated token rate.
    ``*_planned``: the day's cost (autoscaled when the fleet has GPU-hours per day, else
    fixed) over the tokens served per day at the planned traffic. None where not given.
    """

    usd_per_mtok_output_full_load: float | None = None
    usd_per_mtok_total_full_load: float | None = None
    usd_per_mtok_output_planned: float | None = None
    usd_per_mtok_total_planned: float | None = None
    planned_cost_basis: Literal["fixed", "autoscaled"] | None = None


def token_costs(
    fleet: FleetCost,
    *,
    output_tokens_per_s_full_load: float | None = None,
    total_tokens_per_s_full_load: float | None = None,
    output_tokens_per_day: float | None = None,
    total_tokens_per_day: float | None = None,
) -> TokenCosts:
    """$/M output and total tokens at full load and at the planned traffic.

    Parameters
    ----------
    fleet : ``fleet_cost(...)``
    output_tokens_per_s_full_load, total_tokens_per_s_full_load : the fleet's saturated
        rate [tokens/s] (all replicas)
    output_tokens_per_day, total_tokens_per_day : tokens served per day at the planned
        traffic [tokens/day] (from the daily profile)
    """
    out = {}
    for key, tps in (
        ("usd_per_mtok_output_full_load", output_tokens_per_s_full_load),
        ("usd_per_mtok_total_full_load", total_tokens_per_s_full_load),
    ):
        if tps is not None:
            out[key] = usd_per_mtok(fleet.usd_per_hour, tps)
    per_day = fleet.usd_per_day_autoscaled
    basis = "autoscaled" if per_day is not None else "fixed"
    if per_day is None:
        per_day = fleet.usd_per_day
    planned = False
    for key, name, tpd in (
        ("usd_per_mtok_output_planned", "output_tokens_per_day", output_tokens_per_day),
        ("usd_per_mtok_total_planned", "total_tokens_per_day", total_tokens_per_day),
    ):
        if tpd is not None:
            out[key] = per_day / _positive(name, tpd) * 1e6
            planned = True
    return TokenCosts(**out, planned_cost_basis=basis if planned else None)


# --------------------------------------------------------------------------- providers
def check_providers(cat: Catalog, providers: tuple[str, ...] | list[str] | None) -> None:
    """Raise a PlannerError naming every provider no rental row has, and the valid ones.

    Names compare case-insensitively, as in :func:`price_options`. None or empty: no check.
    """
    if not providers:
        return
    known = {r.provider.lower(): r.provider for r in cat.rental_prices}
    unknown = [p for p in providers if p.strip().lower() not in known]
    if unknown:
        raise PlannerError(
            f"--providers: unknown provider{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(p) for p in unknown)} (valid: {', '.join(sorted(known.values()))})"
        )
