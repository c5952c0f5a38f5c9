"""The buyer's comparison on finished recommendations: own vs rent, self-host vs a hosted API,
which GPUs could not be priced, and whether an untrusted price row decided the winner.

Arithmetic only (no simulation); formulas in :mod:`planner.cost.buyer` and
``docs/recommend.md`` ("Own, rent or buy tokens"). Per option it adds:

* ``own_usd_per_gpu_hour`` / ``rent_usd_per_gpu_hour`` and ``breakeven_utilization`` =
  own / rent (``_low`` / ``_high`` over the rental rows' min..max), the plan's
  ``planned_utilization`` (autoscaled GPU-hours / provisioned GPU-hours) and
  ``owning_beats_renting`` at it; ``breakeven_note`` says why one is missing.
* ``api_reference`` (the cheapest trusted hosted API of the model at the workload's mix),
  ``api_crossover_mtok_per_month`` = F / (p_api − m) (``_low`` / ``_high`` from the GPU
  band), ``planned_mtok_per_month``, ``api_usd_per_month_at_plan`` and
  ``self_hosting_beats_api``; ``api_crossover_note`` says why one is missing.

On the winner: ``unpriced_gpus`` (GPU → why no price) and, when its price carries warnings,
``price_flag`` and ``winner_with_trusted_prices``.
"""

from __future__ import annotations

import math
from typing import Any

from ..cost import (
    HOURS_PER_MONTH,
    api_crossover,
    api_reference,
    load_ownership,
    own_cost,
    quote_price,
)
from ..errors import PlannerError

#: objectives whose ranking is in money (decide.PRICED)
_PRICED = ("cost", "tokens-per-dollar")


def _label(r: dict[str, Any]) -> str:
    layout = r.get("layout") or f"tp={r['tp']}"
    return f"{r['gpu']} {r['framework']} {r['precision']} {layout}"


def _quotes(search: Any, gpu: str, used: float) -> dict[str, Any]:
    """Own and rent prices of one GPU [USD per GPU-hour] beside the one the plan used, and
    the owned power term (at full use, its share that scales with use) for the crossover."""
    c, cat = search.c, search.cat
    out: dict[str, Any] = {"own": None, "rent": None, "rent_min": None, "rent_max": None,
                           "power": 0.0, "why": []}  # fmt: skip
    override = gpu in search.overrides
    ownership = search.ownership or load_ownership()
    if c.price_basis == "own":
        out["own"] = used
        if not override:
            try:
                oc = own_cost(cat, gpu, ownership)
                p = next(t.usd_per_gpu_hour for t in oc.terms if t.name == "power")
                out["power"] = p * (1 - oc.param("idle_power_fraction").value)
            except PlannerError:
                pass
        try:
            q = quote_price(cat, gpu, "on_demand")
            sp = q.spread
            out.update(rent=q.usd_per_gpu_hour, rent_basis="on-demand median")
            if sp is not None:
                out.update(rent_min=sp.min_usd_per_gpu_hour, rent_max=sp.max_usd_per_gpu_hour)
        except PlannerError as e:
            out["why"].append(f"no rental price: {e}")
    else:
        out.update(rent=used, rent_basis=f"{c.price_basis.replace('_', '-')} price used")
        try:
            out["own"] = own_cost(cat, gpu, ownership).usd_per_gpu_hour
        except PlannerError as e:
            out["why"].append(f"no owning cost: {e}")
    return out


def _own_vs_rent(r: dict[str, Any], q: dict[str, Any]) -> None:
    own, rent = q["own"], q["rent"]
    keys = ("breakeven_utilization", "breakeven_utilization_low", "breakeven_utilization_high")
    r.update(own_usd_per_gpu_hour=own, rent_usd_per_gpu_hour=rent, **dict.fromkeys(keys))
    hp, ha = r.get("gpu_hours_per_day"), r.get("gpu_hours_per_day_autoscaled")
    r["planned_utilization"] = ha / hp if hp and ha is not None else None
    r["owning_beats_renting"] = None
    if own is None or rent is None:
        r["breakeven_note"] = "; ".join(q["why"]) or "no price"
        return
    u = own / rent
    lo = own / q["rent_max"] if q.get("rent_max") else u
    hi = own / q["rent_min"] if q.get("rent_min") else u
    r.update(breakeven_utilization=u, breakeven_utilization_low=min(lo, u),
             breakeven_utilization_high=max(hi, u))  # fmt: skip
    util = r["planned_utilization"]
    if util is not None:
        r["owning_beats_renting"] = util > u
    r["breakeven_note"] = (
        f"own ${own:.3f}/GPU-h at full use / rent ${rent:.3f}/GPU-h ({q.get('rent_basis')})"
        + ("; renting is cheaper at any utilisation" if u >= 1 else "")
    )


def _api(r: dict[str, Any], search: Any, q: dict[str, Any], api: Any) -> None:
    ld = search.load
    tokens = ld.mean_input_tokens + ld.mean_output_tokens
    req_month = float(ld.hourly_rps.mean()) * 3600 * HOURS_PER_MONTH
    r["planned_mtok_per_month"] = req_month * tokens / 1e6
    keys = ("api_crossover_mtok_per_month", "api_crossover_mtok_per_month_low",
            "api_crossover_mtok_per_month_high", "api_usd_per_month_at_plan",
            "self_hosting_beats_api")  # fmt: skip
    r.update(dict.fromkeys(keys))
    r["api_reference"] = (
        None
        if api is None
        else {
            "provider": api.provider,
            "provider_model": api.provider_model,
            "usd_per_mtok_input": api.usd_per_mtok_input,
            "usd_per_mtok_output": api.usd_per_mtok_output,
            "usd_per_mtok_blended": api.usd_per_mtok_blended,
            "as_of": str(api.as_of),
            "source": api.source,
            "rows": api.rows,
            "warnings": list(api.warnings),
        }
    )
    month = r.get("usd_per_month")
    if api is None:
        r["api_crossover_note"] = f"no hosted-API price for {search.m.id} in data/api_prices.yaml"
        return
    r["api_usd_per_month_at_plan"] = r["planned_mtok_per_month"] * api.usd_per_mtok_blended
    if month is None:
        r["api_crossover_note"] = "the option has no price"
        return
    n = r["num_gpus"]
    cap = r["replicas"] * r["max_rate_per_replica"] * tokens * 3600 * HOURS_PER_MONTH / 1e6
    power_month = q["power"] * n * HOURS_PER_MONTH  # owned: the power that scales with use
    m = power_month / cap if cap > 0 else 0.0
    cx = api_crossover(month - power_month, api.usd_per_mtok_blended, m, cap if cap > 0 else None)
    v = cx.mtok_per_month
    r["api_crossover_note"] = cx.reason + (
        "; owned: power is the marginal cost" if power_month else ""
    )
    if v is None:
        r["self_hosting_beats_api"] = False
        return
    lo, hi = r.get("num_gpus_low"), r.get("num_gpus_high")
    r.update(
        api_crossover_mtok_per_month=v,
        api_crossover_mtok_per_month_low=v * lo / n if lo else v,
        api_crossover_mtok_per_month_high=v * hi / n if hi else v,
        self_hosting_beats_api=r["planned_mtok_per_month"] >= v,
    )


def unpriced(search: Any) -> dict[str, str]:
    """GPU → why it has no price under the constraints (options rejected at the price stage)."""
    out: dict[str, str] = {}
    for rej in search.rejected:
        if rej.stage == "price" and rej.gpu and rej.gpu not in out:
            why = rej.reason.removeprefix("no price: ")
            for cut in (" (GPUs with one:", "; pass --"):  # the flags of another command
                why = why.split(cut)[0]
            out[rej.gpu] = why
    return out


def buyer(recs: list[dict[str, Any]], objective: str, search: Any) -> list[str]:
    """Add the own/rent/API fields to ``recs`` (best first); return sentences for the ``why``."""
    ld = search.load
    api = None
    if recs:
        try:
            api = api_reference(search.m.id, ld.mean_input_tokens, ld.mean_output_tokens)
        except PlannerError:
            api = None
    for r in recs:
        used = r.get("usd_per_gpu_hour")
        q = _quotes(search, r["gpu"], used) if used is not None else {"own": None, "rent": None,
                                                                       "power": 0.0, "why": []}  # fmt: skip
        _own_vs_rent(r, q)
        _api(r, search, q, api)
    sentences: list[str] = []
    if not recs:
        return sentences
    w = recs[0]
    if w.get("licence_note"):  # a consumer card: the buyer must know before the price
        sentences.append(
            w["licence_note"] + "; --datacenter-only (constraints.datacenter_only) leaves "
            "such cards out"
        )
    miss = unpriced(search) if objective in _PRICED else {}
    w["unpriced_gpus"] = miss
    if miss:
        basis = search.c.price_basis.replace("_", "-")
        sentences.append(
            f"{len(miss)} GPU{'s' if len(miss) != 1 else ''} could not be priced on the {basis} "
            f"basis and were left out: {', '.join(sorted(miss))} (unpriced_gpus says why)"
        )
    warn = w.get("price_warnings") or []
    if objective in _PRICED and warn:
        trusted = next(
            (x for x in recs[1:] if x.get("usd_per_gpu_hour") and not x.get("price_warnings")),
            None,
        )
        w["price_flag"] = (
            f"the winner's price is not trusted silently ({', '.join(warn)}): "
            f"{w.get('price_provider')}, {w.get('price_as_of')}"
        )
        w["winner_with_trusted_prices"] = _label(trusted) if trusted else None
        sentences.append(
            w["price_flag"]
            + (
                f"; among options priced on trusted rows the best is {_label(trusted)}"
                if trusted
                else "; no other option shown has a trusted price"
            )
        )
    others = {x["gpu"]: x["price_warnings"] for x in recs[1:] if x.get("price_warnings")}
    others.pop(w["gpu"], None)
    if objective in _PRICED and others:  # a loser's untrusted price can decide the order too
        sentences.append(
            "prices not trusted silently among the other options shown: "
            + ", ".join(f"{g} ({', '.join(v)})" for g, v in others.items())
        )
    u, beats = w.get("breakeven_utilization"), w.get("owning_beats_renting")
    if u is not None and math.isfinite(u):
        plan = w.get("planned_utilization")
        sentences.append(
            f"owning beats renting above {u:.0%} utilisation"
            + (
                f" (this plan: {plan:.0%}, {'own' if beats else 'rent'})"
                if plan is not None
                else ""
            )
            if u < 1
            else "renting is cheaper than owning at any utilisation"
        )
    v = w.get("api_crossover_mtok_per_month")
    ref = w.get("api_reference")
    if ref is not None:
        if v is not None:
            sentences.append(
                f"self-hosting beats the cheapest API ({ref['provider']}, "
                f"${ref['usd_per_mtok_blended']:.3g}/M at this mix) above {v:,.0f} M tokens a "
                f"month (this plan: {w['planned_mtok_per_month']:,.0f} M)"
            )
        else:
            sentences.append(
                f"the cheapest API ({ref['provider']}) wins: {w['api_crossover_note']}"
            )
    return sentences
