"""``planner prices --own | --coverage | --api [MODEL] | --segments``: the buyer's views of the
price data (owning terms and break-even, price coverage per GPU, hosted-API prices, InferenceX
buyer segments)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from planner.errors import PlannerError

RENTAL_KINDS = ("on_demand", "reserved", "spot", "serverless", "community")


def _emit(rows: list[dict[str, Any]], fmt: str) -> None:
    from planner.report import emit

    emit(rows, fmt)


def own_view(args: argparse.Namespace, cat: Any, gpu: str | None, today: dt.date) -> int:
    """Owning cost per GPU (capital, power, ops), the terms used, and the break-even
    utilisation against the on-demand median."""
    from planner.cost import breakeven_utilization, load_ownership, own_cost, quote_price

    ownership = load_ownership(args.data_dir)
    have = sorted({p.gpu for p in cat.purchase_prices})
    gpus = [gpu] if gpu else have
    if gpu and gpu not in have:
        raise PlannerError(
            f"no purchase price for {gpu} in data/prices.yaml (GPUs with one: {', '.join(have)})"
        )
    rows, first = [], None
    for g in gpus:
        oc = own_cost(cat, g, ownership)
        first = first or oc
        t = {x.name: x.usd_per_gpu_hour for x in oc.terms}
        p = oc.param("purchase_usd")
        row: dict[str, Any] = {
            "gpu": g,
            "purchase_usd": p.value,
            "purchase_as_of": str(p.as_of) if p.as_of else None,
            "capital_usd_per_gpu_hour": t["capital"],
            "power_usd_per_gpu_hour": t["power"],
            "ops_usd_per_gpu_hour": t["ops"],
            "own_usd_per_gpu_hour": oc.usd_per_gpu_hour,
            "rent_on_demand_usd_per_gpu_hour": None,
            "breakeven_utilization": None,
            "note": None,
        }
        try:
            q = quote_price(cat, g, "on_demand", today=today)
            row["rent_on_demand_usd_per_gpu_hour"] = q.usd_per_gpu_hour
            row["breakeven_utilization"] = breakeven_utilization(
                oc.usd_per_gpu_hour, q.usd_per_gpu_hour
            )
            row["note"] = ", ".join(q.warnings) or None
        except PlannerError as e:
            row["note"] = str(e).split(";")[0]
        rows.append(row)
    if args.format != "table":
        terms = [p.model_dump(mode="json") for p in first.params] if first else []
        _emit([{**r, "terms": terms} for r in rows] if args.format == "json" else rows, args.format)
        return 0
    _emit(rows, "table")
    sys.stdout.write(
        "\nown = capital + power + ops per GPU-hour of the year (power at full use); owning beats "
        "renting when the GPU is busy more than breakeven_utilization = own / rent of the hours\n"
        "\nowning terms (data/ownership.yaml; kind: sourced / derived / assumption / catalog)\n"
    )
    if first is not None:
        _emit(
            [
                {
                    "term": p.name,
                    "value": p.value if p.name not in ("purchase_usd", "tdp_w") else "per GPU",
                    "unit": p.unit,
                    "kind": p.kind,
                    "as_of": str(p.as_of) if p.as_of else None,
                    "source": p.source,
                }
                for p in first.params
            ],
            "table",
        )
        sys.stdout.write("\nformulas: " + "; ".join(f"{t.name} = {t.formula}" for t in first.terms))
        sys.stdout.write("\n")
    return 0


def coverage_view(args: argparse.Namespace, cat: Any, gpu: str | None, today: dt.date) -> int:
    """Per GPU: rental rows per kind (trusted / all) and purchase price yes/no."""
    from planner.cost import PriceOption, row_warnings

    rows = []
    for a in cat.accelerators:
        if gpu and a.id != gpu:
            continue
        row: dict[str, Any] = {"gpu": a.id}
        for k in RENTAL_KINDS:
            opts = [
                PriceOption.from_row(r) for r in cat.rental_prices if r.gpu == a.id and r.kind == k
            ]
            ok = sum(not row_warnings(o, today) for o in opts)
            row[k] = f"{ok}/{len(opts)}" if opts else "-"
        row["purchase"] = "yes" if any(p.gpu == a.id for p in cat.purchase_prices) else "no"
        rows.append(row)
    _emit(rows, args.format)
    if args.format == "table":
        sys.stdout.write(
            "\nrows per kind: trusted / all (a row is not trusted when it is low confidence or "
            "older than 12 months); '-' = none: recommend cannot price that GPU on that basis "
            "and says so\n"
        )
    return 0


def api_view(args: argparse.Namespace, cat: Any, gpu: str | None, today: dt.date) -> int:
    """The hosted-API price rows (all models or one)."""
    from planner.cost import load_api_prices

    if gpu:
        raise PlannerError("--api lists API prices per model: drop --gpu")
    model = cat.model(args.api).id if args.api else None
    rows = []
    for r in load_api_prices(args.data_dir):
        if model and r.model != model:
            continue
        flags = []
        if r.low_confidence:
            flags.append("low confidence")
        if (today - r.as_of).days > 365:
            flags.append("older than 12 months")
        rows.append(
            {
                "model": r.model,
                "provider": r.provider,
                "provider_model": r.provider_model,
                "usd_per_mtok_input": r.usd_per_mtok_input,
                "usd_per_mtok_output": r.usd_per_mtok_output,
                "as_of": str(r.as_of),
                "flags": ", ".join(flags) or None,
                "source": r.source,
            }
        )
    if not rows:
        raise PlannerError(f"no hosted-API price for {model} in data/api_prices.yaml")
    _emit(rows, args.format)
    return 0


def segments_view(args: argparse.Namespace, cat: Any, gpu: str | None, today: dt.date) -> int:
    """InferenceX buyer segments: all-in USD per GPU-hour per GPU."""
    from planner.cost import load_segments

    rows = []
    for s in load_segments(args.data_dir):
        for p in s.prices:
            if gpu and p.gpu != gpu:
                continue
            rows.append(
                {
                    "segment": s.id,
                    "basis": s.basis,
                    "life_years": s.life_years,
                    "gpu": p.gpu,
                    "usd_per_gpu_hour": p.usd_per_gpu_hour,
                    "flags": "low confidence" if p.low_confidence else None,
                    "as_of": str(s.as_of),
                    "source": s.source,
                }
            )
    if not rows:
        raise PlannerError(f"no buyer segment prices {gpu}")
    _emit(rows, args.format)
    if args.format == "table":
        sys.stdout.write(
            "\n" + "; ".join(f"{s.id}: {s.name}" for s in load_segments(args.data_dir)) + "\n"
        )
    return 0


VIEWS = {"own": own_view, "coverage": coverage_view, "api": api_view, "segments": segments_view}
