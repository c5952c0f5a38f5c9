"""Owning a GPU: the cost per GPU-hour of a purchase amortised plus power and operations.

``capital = purchase × (1 + server_overhead) × crf / 8760 h`` with the capital recovery factor
``crf = r / (1 − (1 + r)^−years)`` (``r`` the cost of capital per year; ``r = 0``: ``1 / years``),
``power = TDP/1000 × (idle + (1 − idle) × util) × host_power_factor × PUE × $/kWh``,
``ops = purchase × (1 + server_overhead) × ops_fraction / 8760 h``; every parameter carries
its provenance. Re-exported by :mod:`planner.cost.pricing` and :mod:`planner.cost`.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Literal

from pydantic import Field

from ..catalog import Accelerator, Frozen, PurchasePrice
from ..errors import PlannerError
from .data import OwnershipDefaults, load_ownership

__all__ = [
    "HOURS_PER_MONTH",
    "HOURS_PER_YEAR",
    "CostTerm",
    "OwnCost",
    "UsedParam",
    "capital_recovery_factor",
    "own_cost_per_gpu_hour",
]

HOURS_PER_YEAR = 8760.0
HOURS_PER_MONTH = 730.0  # 8760 / 12


def _positive(name: str, value: float | int | None, *, allow_zero: bool = False) -> float:
    if value is None or isinstance(value, bool):
        raise PlannerError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise PlannerError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise PlannerError(f"{name} must be a finite number, got {value!r}")
    if allow_zero and v < 0:
        raise PlannerError(f"{name} must be >= 0, got {value}")
    if not allow_zero and v <= 0:
        raise PlannerError(f"{name} must be > 0, got {value}")
    return v


def capital_recovery_factor(rate_per_year: float, years: float) -> float:
    """The share of a purchase to recover each year [1/year] so that ``years`` equal payments
    repay it with interest at ``rate_per_year``: ``r / (1 − (1 + r)^−n)``; ``1 / n`` at ``r = 0``
    (straight line, no cost of money). E.g. r = 0.11, n = 5: 0.11 / (1 − 1.11^−5) = 0.2706."""
    r, n = float(rate_per_year), float(years)
    if r == 0:
        return 1.0 / n
    return r / (1.0 - (1.0 + r) ** -n)


# --------------------------------------------------------------------------- owning
class UsedParam(Frozen):
    """A parameter value used in an ownership cost, with where it came from."""

    name: str
    value: float
    unit: str
    kind: Literal["sourced", "derived", "assumption", "user override", "catalog"]
    source: str | None = None
    as_of: _dt.date | None = None


class CostTerm(Frozen):
    """One additive term of a cost [USD per GPU-hour] with its formula and provenance."""

    name: str
    usd_per_gpu_hour: float = Field(ge=0)
    formula: str
    inputs: tuple[str, ...] = Field(description="names of the UsedParam values it uses")


class OwnCost(Frozen):
    """Cost of owning one GPU [USD per GPU-hour] = capital + power + ops.

    ``capital = purchase × (1 + server_overhead) × crf(cost_of_capital, years) / 8760 h``;
    ``power = TDP/1000 × (idle + (1 − idle) × util) × host_power_factor × PUE × $/kWh``;
    ``ops = purchase × (1 + server_overhead) × ops_fraction / 8760 h``.
    """

    gpu: str
    usd_per_gpu_hour: float = Field(gt=0)
    terms: tuple[CostTerm, ...]
    params: tuple[UsedParam, ...]
    purchase_usd_range: tuple[float, float] | None = None

    @property
    def assumptions(self) -> tuple[str, ...]:
        """Names of the parameters that no source gives (labelled ``assumption``)."""
        return tuple(p.name for p in self.params if p.kind == "assumption")

    def param(self, name: str) -> UsedParam:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)


def _purchase(cat_gpu: Accelerator, purchase: PurchasePrice | float) -> UsedParam:
    if isinstance(purchase, PurchasePrice):
        if purchase.gpu != cat_gpu.id:
            raise PlannerError(
                f"purchase row is for {purchase.gpu}, not {cat_gpu.id}; pass the matching row"
            )
        if purchase.usd is not None:
            value = float(purchase.usd)
        else:
            lo, hi = purchase.usd_range  # type: ignore[misc]
            value = (lo + hi) / 2
        return UsedParam(
            name="purchase_usd",
            value=value,
            unit="USD per GPU" + (" (midpoint of range)" if purchase.usd_range else ""),
            kind="catalog",
            source=f"{purchase.source} [{purchase.kind}]",
            as_of=purchase.as_of,
        )
    return UsedParam(
        name="purchase_usd",
        value=_positive("purchase_usd", purchase),
        unit="USD per GPU",
        kind="user override",
        source="user override",
    )


def own_cost_per_gpu_hour(
    gpu: Accelerator,
    purchase: PurchasePrice | float,
    ownership: OwnershipDefaults | None = None,
    *,
    tdp_w: float | None = None,
    amortisation_years: float | None = None,
    cost_of_capital_per_year: float | None = None,
    server_overhead_fraction: float | None = None,
    host_power_factor: float | None = None,
    pue: float | None = None,
    electricity_usd_per_kwh: float | None = None,
    ops_fraction_of_capex_per_year: float | None = None,
    utilisation: float | None = None,
    idle_power_fraction: float | None = None,
) -> OwnCost:
    """Cost of owning one GPU, per hour of the year, as a sum of labelled terms.

    Parameters
    ----------
    gpu : the catalog record (``cat.gpu(id)``); its ``tdp_w`` [W] drives the power term
    purchase : a ``PurchasePrice`` row (``usd``, or the midpoint of ``usd_range``) or a
        user price [USD per GPU]
    ownership : defaults (``load_ownership()`` when None)
    tdp_w : board power [W] when the catalog has none, or to override it
    amortisation_years : [years], zero salvage
    cost_of_capital_per_year : interest on the capital [1/year]; the capital is recovered as an
        annuity (:func:`capital_recovery_factor`); 0 = straight line
    server_overhead_fraction : server/host/network cost as a fraction of the GPU price [-]
    host_power_factor : server power / GPU board power [-] (1 = GPU board only)
    pue : facility power / IT power [-]
    electricity_usd_per_kwh : [USD per kWh]
    ops_fraction_of_capex_per_year : operations cost per year as a fraction of capex [-]
    utilisation : busy fraction of the hour for the power term [0, 1]
    idle_power_fraction : fraction of TDP drawn when idle [0, 1]

    Returns
    -------
    OwnCost : ``usd_per_gpu_hour`` [USD per GPU-hour], the terms, and every parameter
    with its provenance (sourced / derived / assumption / user override / catalog).

    Raises
    ------
    PlannerError
        no TDP for the GPU and none given, a value out of range.
    """
    d = ownership or load_ownership()
    overrides = {
        "amortisation_years": amortisation_years,
        "cost_of_capital_per_year": cost_of_capital_per_year,
        "server_overhead_fraction": server_overhead_fraction,
        "host_power_factor": host_power_factor,
        "pue": pue,
        "electricity_usd_per_kwh": electricity_usd_per_kwh,
        "ops_fraction_of_capex_per_year": ops_fraction_of_capex_per_year,
        "utilisation": utilisation,
        "idle_power_fraction": idle_power_fraction,
    }
    used: dict[str, UsedParam] = {"purchase_usd": _purchase(gpu, purchase)}
    for name, override in overrides.items():
        default = getattr(d, name)
        if override is None:
            used[name] = UsedParam(
                name=name,
                value=default.value,
                unit=default.unit,
                kind=default.kind,
                source=default.source or default.notes,
                as_of=default.as_of,
            )
        else:
            used[name] = UsedParam(
                name=name,
                value=_positive(name, override, allow_zero=True),
                unit=default.unit,
                kind="user override",
                source="user override",
            )
    for name, ok, rule in (
        ("amortisation_years", lambda v: v > 0, "> 0"),
        ("cost_of_capital_per_year", lambda v: v <= 1, "in [0, 1]"),
        ("host_power_factor", lambda v: v >= 1, ">= 1"),
        ("pue", lambda v: v >= 1, ">= 1"),
        ("utilisation", lambda v: v <= 1, "in [0, 1]"),
        ("idle_power_fraction", lambda v: v <= 1, "in [0, 1]"),
    ):
        if not ok(used[name].value):
            raise PlannerError(f"{name} must be {rule}, got {used[name].value}")
    if tdp_w is not None:
        used["tdp_w"] = UsedParam(
            name="tdp_w", value=_positive("tdp_w", tdp_w), unit="W", kind="user override"
        )
    elif gpu.tdp_w is not None:
        used["tdp_w"] = UsedParam(
            name="tdp_w",
            value=float(gpu.tdp_w),
            unit="W",
            kind="catalog",
            source=gpu.source,
            as_of=gpu.as_of,
        )
    else:
        raise PlannerError(
            f"{gpu.id}: no TDP (tdp_w) in data/hardware.yaml (no source gives it), so the power "
            "term of owning it cannot be computed; pass tdp_w= (--tdp-w) or rent instead"
        )
    v = {k: p.value for k, p in used.items()}
    capex = v["purchase_usd"] * (1 + v["server_overhead_fraction"])
    crf = capital_recovery_factor(v["cost_of_capital_per_year"], v["amortisation_years"])
    capital = capex * crf / HOURS_PER_YEAR
    power_kw = (
        v["tdp_w"]
        / 1000
        * (v["idle_power_fraction"] + (1 - v["idle_power_fraction"]) * v["utilisation"])
        * v["host_power_factor"]
    )
    energy = power_kw * v["pue"] * v["electricity_usd_per_kwh"]
    ops = capex * v["ops_fraction_of_capex_per_year"] / HOURS_PER_YEAR
    terms = (
        CostTerm(
            name="capital",
            usd_per_gpu_hour=capital,
            formula=(
                "purchase_usd × (1 + server_overhead_fraction) × crf / 8760 h, crf = r / (1 − (1 + r)"
                "^−amortisation_years), r = cost_of_capital_per_year (r = 0: 1 / amortisation_years)"
            ),
            inputs=(
                "purchase_usd",
                "server_overhead_fraction",
                "amortisation_years",
                "cost_of_capital_per_year",
            ),
        ),
        CostTerm(
            name="power",
            usd_per_gpu_hour=energy,
            formula=(
                "tdp_w/1000 × (idle_power_fraction + (1 − idle_power_fraction) × utilisation)"
                " × host_power_factor × pue × electricity_usd_per_kwh"
            ),
            inputs=(
                "tdp_w",
                "idle_power_fraction",
                "utilisation",
                "host_power_factor",
                "pue",
                "electricity_usd_per_kwh",
            ),
        ),
        CostTerm(
            name="ops",
            usd_per_gpu_hour=ops,
            formula="purchase_usd × (1 + server_overhead_fraction) × ops_fraction_of_capex_per_year / 8760 h",
            inputs=("purchase_usd", "server_overhead_fraction", "ops_fraction_of_capex_per_year"),
        ),
    )
    total = capital + energy + ops
    if total <= 0:
        raise PlannerError(f"{gpu.id}: owning cost came out as {total} $/h; check the inputs")
    return OwnCost(
        gpu=gpu.id,
        usd_per_gpu_hour=total,
        terms=terms,
        params=tuple(used.values()),
        purchase_usd_range=purchase.usd_range if isinstance(purchase, PurchasePrice) else None,
    )
