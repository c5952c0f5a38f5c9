"""Growth: the cards needed month by month, when to order them, and what each month costs.

A buyer keeps one deployment for the year (GPU x framework x precision x layout): it is
picked once by :func:`~planner.recommend.search.recommend` at month 1's traffic (or the last
month's, ``size_for="final"``), its per-replica capacity is bisected once (as ``planner
recommend --exact``), and every month is then only re-sized (:func:`size_months`, arithmetic):

* replicas = ``ceil(peak_m x (1 + headroom) / capacity)`` (:func:`planner.serving.size_fleet`),
  cards = replicas x GPUs per replica: non-decreasing when the traffic is;
* the band ``num_gpus_low`` / ``num_gpus_high`` from the option's performance error band
  (:func:`planner.recommend.finish.gpu_band`, the recommender's own);
* rented cards (every basis but ``own``) follow the need: added when it grows, released
  when it falls; $/month = cards x $/GPU-h x 730 h, and autoscaled = the GPU-hours of an
  hourly autoscaler over the month's daily profile x $/GPU-h x 730/24
  (:func:`planner.cost.fleet_cost`);
* owned cards (``own``) are bought once and kept: the fleet held is the largest need so far.
  Each costs its amortised $/GPU-h (capital + power + ops, ``data/ownership.yaml``) x 730 h
  every month from the month it enters service, busy or idle, so autoscaling saves nothing:
  ``usd_per_month_autoscaled`` = ``usd_per_month``. The purchase is amortised, never
  counted as cash in the month bought;
* a card needed in month m must be ordered by month ``m - lead_time_months`` (month 0 and
  below: before the plan starts).

With ``size_for="first"`` month 1 is ``planner recommend``'s answer (its cards, band and
$/month; the autoscaled $ is ``planner recommend --exact``'s, which bisects the capacity the
later months need).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from ..catalog import Catalog, Frozen
from ..cost import fleet_cost
from ..errors import PlannerError
from ..serving import size_fleet
from ..workload import SLO, Traffic, Workload
from .constraints import Constraints, constraints_of
from .finish import gpu_band

__all__ = [
    "DEFAULT_LEAD_TIME_MONTHS",
    "LEAD_TIME_SOURCE",
    "GrowthPlan",
    "MonthPlan",
    "plan_growth",
    "size_months",
]

#: months between ordering cards and serving with them, by price basis: owned servers 3
#: (:data:`LEAD_TIME_SOURCE`), rented capacity 0 (an assumption: on-demand capacity is
#: taken when needed; give the contract's notice for reserved capacity)
DEFAULT_LEAD_TIME_MONTHS = {"own": 3}
LEAD_TIME_SOURCE = (
    "Dell Taiwan (via United Daily News): lead times for H100 servers down to 8-12 weeks in "
    "April 2024 from 39 weeks late in 2023; HPE about 20 weeks ('Dell shaves months off lead "
    "times for GPU-powered AI servers', 2024-04-12, https://klse.i3investor.com/web/blog/detail/"
    "future_tech/2024-04-12-story-h-183863938-Dell_shaves_months_off_lead_times_for_GPU_"
    "powered_AI_servers)"
)
SizeFor = Literal["first", "final"]


def default_lead_time(price_basis: str) -> int:
    """The default lead time [months] of a price basis (:data:`DEFAULT_LEAD_TIME_MONTHS`)."""
    return DEFAULT_LEAD_TIME_MONTHS.get(price_basis, 0)


def _lead_why(given: int | None, owned: bool) -> str:
    if given is not None:
        return ""
    if owned:
        return f" (default for owned servers, 3 months covers Dell's 12 weeks; {LEAD_TIME_SOURCE})"
    return " (default for rented capacity: an assumption; give the provider's notice)"


class MonthPlan(Frozen):
    """One month of a growth plan (rates [req/s], money [USD per month of 730 h])."""

    month: int = Field(ge=1)
    date: str | None = Field(None, description="the month as YYYY-MM, when a start is given")
    peak_rps: float
    mean_rps: float
    replicas: int
    num_gpus: int = Field(description="cards the month's peak needs")
    num_gpus_low: int | None = None
    num_gpus_high: int | None = None
    gpus_held: int = Field(description="cards in service: owned, the most needed so far")
    gpus_added: int
    gpus_released: int
    order_gpus: int = Field(description="cards to order for this month (= gpus_added)")
    order_by: int | None = Field(
        None, description="month by which to order them (<= 0: before the plan starts)"
    )
    order_by_date: str | None = None
    utilization_at_peak: float
    gpu_hours_per_day_autoscaled: float
    usd_per_month: float | None = None
    usd_per_month_autoscaled: float | None = None


class GrowthPlan(Frozen):
    """A year (or any span) of cards and money for one fixed option."""

    model: str
    option: dict[str, Any]
    price_basis: str
    size_for: str
    sized_at_month: int
    headroom: float
    lead_time_months: int
    months: tuple[MonthPlan, ...]
    totals: dict[str, Any]
    notes: tuple[str, ...]
    recommendation: dict[str, Any] = Field(
        description="planner recommend's winner at the sizing month (--exact)"
    )

    def as_dict(self) -> dict[str, Any]:
        d = self.model_dump()
        d["months"] = [m.model_dump() for m in self.months]
        d["notes"] = list(self.notes)
        return d


def _month_label(start: _dt.date | None, m: int) -> str | None:
    """``start``'s month plus ``m - 1`` months as YYYY-MM (None without a start)."""
    if start is None:
        return None
    k = start.year * 12 + start.month - 1 + (m - 1)
    return f"{k // 12:04d}-{k % 12 + 1:02d}"


def size_months(
    traffic: Sequence[Traffic],
    *,
    max_rate_rps: float,
    gpus_per_replica: int,
    headroom: float,
    usd_per_gpu_hour: float | None,
    owned: bool,
    lead_time_months: int,
    band: tuple[float, float] | None = None,
    start: _dt.date | None = None,
) -> list[MonthPlan]:
    """Cards, orders and money of each month for one option of known capacity (no search,
    no simulation: the app can call it on every change of the growth rate).

    Parameters
    ----------
    traffic : each month's traffic, month 1 first (:func:`planner.workload.growth.grown_traffic`)
    max_rate_rps : one replica's rate within the SLO [req/s]
    gpus_per_replica : [-]
    headroom : spare capacity above the peak [fraction]
    usd_per_gpu_hour : the option's price [USD per GPU-hour]; None: no money columns
    owned : cards are bought and kept (price basis ``own``) rather than rented
    lead_time_months : months between the order and the month the cards serve [months]
    band : (low_ratio, high_ratio) of the option's performance error band, or None
    start : the first month's date (for YYYY-MM labels), or None

    Returns
    -------
    list[MonthPlan]
    """
    if not (isinstance(lead_time_months, int) and 0 <= lead_time_months <= 120):
        raise PlannerError(
            f"lead_time_months must be a whole number from 0 to 120, got {lead_time_months!r}"
        )
    out: list[MonthPlan] = []
    held = 0
    for m, tr in enumerate(traffic, 1):
        peak, hourly = tr.peak(), tr.hourly_rps()
        fl = size_fleet(
            max_rate_rps,
            peak,
            headroom=headroom,
            gpus_per_replica=gpus_per_replica,
            hourly_rps=hourly,
        )
        n = fl["num_gpus"]
        low = high = None
        if band is not None:
            low, high = gpu_band(
                peak * (1.0 + headroom), max_rate_rps, band[0], band[1], gpus_per_replica, n
            )
        new_held = max(held, n) if owned else n
        added, released = max(0, new_held - held), max(0, held - new_held)
        auto_gh = fl["gpu_hours_per_day_autoscaled"]
        usd = usd_auto = None
        if usd_per_gpu_hour is not None:
            fc = fleet_cost(
                new_held, usd_per_gpu_hour, gpu_hours_per_day=None if owned else auto_gh
            )
            usd = fc.usd_per_month
            usd_auto = fc.usd_per_month if owned else fc.usd_per_month_autoscaled
        order_by = m - lead_time_months if added else None
        out.append(
            MonthPlan(
                month=m,
                date=_month_label(start, m),
                peak_rps=peak,
                mean_rps=float(hourly.mean()),
                replicas=fl["replicas"],
                num_gpus=n,
                num_gpus_low=low,
                num_gpus_high=high,
                gpus_held=new_held,
                gpus_added=added,
                gpus_released=released,
                order_gpus=added,
                order_by=order_by,
                order_by_date=_month_label(start, order_by) if order_by is not None else None,
                utilization_at_peak=fl["utilization_at_peak"],
                gpu_hours_per_day_autoscaled=auto_gh,
                usd_per_month=usd,
                usd_per_month_autoscaled=usd_auto,
            )
        )
        held = new_held
    return out


def _ranges(months: Sequence[int]) -> str:
    """``[1, 2, 3, 7]`` as ``1-3, 7``."""
    out: list[str] = []
    for m in months:
        if out and out[-1].rsplit("-", 1)[-1] == str(m - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{m}"
        else:
            out.append(str(m))
    return ", ".join(out)


def _totals(months: Sequence[MonthPlan]) -> dict[str, Any]:
    def total(key: str) -> float | None:
        vals = [getattr(m, key) for m in months]
        return None if any(v is None for v in vals) else float(sum(vals))

    return {
        "months": len(months),
        "num_gpus_first": months[0].num_gpus,
        "num_gpus_last": months[-1].num_gpus,
        "num_gpus_max": max(m.num_gpus for m in months),
        "gpus_held_last": months[-1].gpus_held,
        "gpus_ordered": sum(m.order_gpus for m in months),
        "usd_total": total("usd_per_month"),
        "usd_total_autoscaled": total("usd_per_month_autoscaled"),
    }


def _limits(months: Sequence[MonthPlan], c: Constraints, price: float | None) -> list[str]:
    """Notes on the months that break a fleet or budget limit of the constraints."""
    notes = []
    if c.max_total_gpus is not None:
        over = [m.month for m in months if m.gpus_held > c.max_total_gpus]
        if over:
            notes.append(
                f"months {_ranges(over)} need more than max_total_gpus={c.max_total_gpus} GPUs"
            )
    if price is not None:
        for lim, what in (
            (c.max_usd_per_hour, "max_usd_per_hour"),
            (c.max_usd_per_month, "max_usd_per_month"),
        ):
            if lim is None:
                continue
            scale = 1.0 if what == "max_usd_per_month" else 1.0 / 730.0
            over = [
                m.month
                for m in months
                if m.usd_per_month is not None and m.usd_per_month * scale > lim * (1 + 1e-12)
            ]
            if over:
                notes.append(f"months {_ranges(over)} cost more than {what}={lim:,.2f}")
    return notes


def plan_growth(
    model: str,
    workload: Workload,
    slo: SLO,
    traffic: Sequence[Traffic],
    *,
    catalog: Catalog,
    constraints: Constraints | None = None,
    objective: str = "cost",
    lead_time_months: int | None = None,
    size_for: SizeFor = "first",
    start: _dt.date | None = None,
    engine: dict[str, Any] | None = None,
    profile: Any = None,
    seed: int = 0,
    top_n: int = 5,
    notes: Sequence[str] = (),
) -> GrowthPlan:
    """Pick one option, then size every month of ``traffic`` with it.

    Parameters
    ----------
    model : model id
    workload, slo : the scenario's (its traffic is replaced by each month's)
    traffic : each month's traffic, month 1 first (:mod:`planner.workload.growth`)
    catalog, constraints, objective, engine, profile, seed, top_n : as
        :func:`planner.recommend.recommend` (the option is its winner, ``refine=True``)
    lead_time_months : [months]; None: :func:`default_lead_time` of the price basis
    size_for : ``first`` (default): pick the option at month 1's traffic, which then equals
        ``planner recommend``; ``final``: at the last month's
    start : the first month's date, for YYYY-MM labels
    notes : the caller's notes on the traffic (e.g. :func:`planner.workload.growth.series_notes`),
        added to the plan's

    Returns
    -------
    GrowthPlan
    """
    from .search import recommend

    if not traffic:
        raise PlannerError("no months to plan")
    if size_for not in ("first", "final"):
        raise PlannerError(f"size_for must be 'first' or 'final', got {size_for!r}")
    c = constraints_of(constraints, {})
    lead = default_lead_time(c.price_basis) if lead_time_months is None else lead_time_months
    at = 1 if size_for == "first" else len(traffic)
    wl = workload if at == 1 and traffic[0] is workload.traffic else None
    wl = wl or workload.model_copy(update={"traffic": traffic[at - 1]})
    res = recommend(
        model, wl, slo, catalog=catalog, constraints=c, objective=objective, top_n=top_n,
        engine=engine, profile=profile, seed=seed, refine=True,
    )  # fmt: skip
    w = res.recommendations[0]
    eb = w.get("error_band")
    band = (eb["low_ratio"], eb["high_ratio"]) if eb else None
    owned = c.price_basis == "own"
    price = w.get("usd_per_gpu_hour")
    months = size_months(
        traffic,
        max_rate_rps=w["max_rate_per_replica"],
        gpus_per_replica=w["gpus_per_replica"],
        headroom=c.headroom,
        usd_per_gpu_hour=price,
        owned=owned,
        lead_time_months=lead,
        band=band,
        start=start,
    )
    option = {
        k: w.get(k)
        for k in (
            "gpu", "framework", "precision", "precision_label", "kv_precision", "tp", "pp",
            "gpus_per_replica", "max_rate_per_replica", "max_rate_basis", "usd_per_gpu_hour",
            "price_provider", "price_source", "price_as_of", "price_rule", "provenance",
            "robustness", "error_band",
        )
    }  # fmt: skip
    mr = w["max_rate_per_replica"]
    label = w.get("precision_label") or w["precision"]
    label += "" if "kv" in label else f" (kv {w['kv_precision']})"
    said = [
        f"one option for every month: {w['gpu']} / {w['framework']} / {label} tp={w['tp']}"
        + (f" pp={w['pp']}" if w["pp"] > 1 else "")
        + f", picked by planner recommend at month {at}'s traffic "
        f"(peak {months[at - 1].peak_rps:.4g} req/s)"
        + ("; month 1 is its answer" if at == 1 else "; month 1 may differ from planner "
           "recommend at month 1's traffic, which could pick another option"),
        f"cards = ceil(peak x (1 + headroom {c.headroom:g}) / {mr:.4g} req/s per replica) x "
        f"{w['gpus_per_replica']} GPUs per replica; the per-replica rate bisected to 3 % "
        "(as planner recommend --exact)",
        f"lead time {lead} month{'s' if lead != 1 else ''}{_lead_why(lead_time_months, owned)}"
        ": order_by = month - lead time (0 and below: before month 1)",
    ]  # fmt: skip
    if band is None:
        said.append("no performance error band for this option: num_gpus_low/high empty")
    if price is None:
        said.append("no price for this option: the $ columns are empty")
    elif owned:
        said.append(
            "owned: cards are bought once and kept (gpus_held = the most needed so far); "
            f"each costs its amortised ${price:.3g}/GPU-h (capital + power + ops, "
            "data/ownership.yaml) x 730 h a month, busy or idle, so autoscaling saves "
            "nothing (usd_per_month_autoscaled = usd_per_month); the purchase is amortised, "
            "not counted as cash in the month bought"
        )
    else:
        said.append(
            f"rented ({c.price_basis.replace('_', '-')}, ${price:.3g}/GPU-h): cards are added "
            "when the need grows and released when it falls; autoscaled = the GPU-hours of an "
            "hourly autoscaler over the daily profile x $/GPU-h"
        )
    said += _limits(months, c, price)
    said += list(notes)
    return GrowthPlan(
        model=res.summary["model"],
        option=option,
        price_basis=c.price_basis,
        size_for=size_for,
        sized_at_month=at,
        headroom=c.headroom,
        lead_time_months=lead,
        months=tuple(months),
        totals=_totals(months),
        notes=tuple(said),
        recommendation=w,
    )


def chart_rows(plan: GrowthPlan) -> list[dict[str, Any]]:
    """One row per month for a chart: month, date, peak_rps, num_gpus (with the band),
    gpus_held and the two monthly costs [USD]."""
    keys = (
        "month", "date", "peak_rps", "num_gpus", "num_gpus_low", "num_gpus_high", "gpus_held",
        "usd_per_month", "usd_per_month_autoscaled",
    )  # fmt: skip
    return [{k: getattr(m, k) for k in keys} for m in plan.months]
