"""The buyer's views: ``planner prices --own | --coverage | --api [MODEL] | --segments`` (owning
terms and break-even, price coverage per GPU, hosted-API prices, InferenceX buyer segments), and
``planner recommend``'s ``--segment`` and its own / rent / API output."""

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


# --------------------------------------------------------------------------- recommend
def segment_fields(args: argparse.Namespace, cat, fields: dict[str, Any]) -> dict[str, Any]:
    """``--segment``: the segment's GPUs (within ``--gpus``), each at its all-in price, on
    the segment's basis (own, or reserved for a rental contract)."""
    from planner.cost import segment

    clash = [f for f, v in (("--usd-per-gpu-hour", args.usd_per_gpu_hour),
                            ("--price-basis", args.price_basis),
                            ("--providers", args.providers)) if v]  # fmt: skip
    if clash:
        raise PlannerError(f"--segment sets the prices: drop {', '.join(clash)}")
    seg = segment(args.segment, args.data_dir)
    gpus = [p.gpu for p in seg.prices]
    if fields.get("gpus"):
        want = {cat.gpu(g).id for g in fields["gpus"]}
        gpus = [g for g in gpus if g in want]
        if not gpus:
            raise PlannerError(
                f"--gpus: none of them is in segment {seg.id} "
                f"(its GPUs: {', '.join(p.gpu for p in seg.prices)})"
            )
    return {
        "gpus": gpus,
        "price_basis": "own" if seg.basis == "own" else "reserved",
        "usd_per_gpu_hour": {p.gpu: p.usd_per_gpu_hour for p in seg.prices if p.gpu in gpus},
    }


def label_segment(res, args: argparse.Namespace) -> None:
    """Name the segment as the source of every price (the search saw them as overrides)."""
    if getattr(args, "segment", None) is None:
        return
    from planner.cost import segment

    seg = segment(args.segment, args.data_dir)
    for r in res.recommendations:
        sp = seg.price(r["gpu"])
        r.update(
            price_source=seg.source,
            price_provider=f"segment {seg.id}",
            price_as_of=str(seg.as_of),
            price_rule=f"segment {seg.id}: {seg.name}",
            price_warnings=["low confidence"] if sp is not None and sp.low_confidence else [],
        )
    res.assumptions.append(
        f"prices: InferenceX buyer segment {seg.id} ({seg.name}), all-in USD per GPU-hour as of "
        f"{seg.as_of}: {seg.source}"
    )
    w = res.recommendations[0] if res.recommendations else None
    if w is not None and w["price_warnings"]:
        res.why += (
            f"; the winner's segment price is low confidence ({w['gpu']}: a placeholder in the "
            "source, 'until official pricing is available')"
        )


def _band(v: Any, lo: Any, hi: Any, fmt: str) -> Any:
    """``v (lo-hi)`` when the band differs from ``v`` (as recommend's table shows bands)."""
    if v is None:
        return None
    if lo is None or hi is None or lo == hi == v:
        return format(v, fmt)
    return f"{format(v, fmt)} ({format(lo, fmt)}-{format(hi, fmt)})"


def print_buyer(recs: list[dict[str, Any]], out) -> None:
    """Own vs rent vs a hosted API per option, the API used, and the GPUs not priced."""
    from planner.report import emit

    rows = [
        {
            "rank": r["rank"],
            "gpu": r["gpu"],
            "framework": r["framework"],
            "own_usd_gpu_h": r.get("own_usd_per_gpu_hour"),
            "rent_usd_gpu_h": r.get("rent_usd_per_gpu_hour"),
            "breakeven_util": _band(
                r.get("breakeven_utilization"),
                r.get("breakeven_utilization_low"),
                r.get("breakeven_utilization_high"),
                ".0%",
            ),  # fmt: skip
            "plan_util": r.get("planned_utilization"),
            "own_or_rent": None
            if r.get("owning_beats_renting") is None
            else ("own" if r["owning_beats_renting"] else "rent"),
            "api_crossover_mtok_month": _band(
                r.get("api_crossover_mtok_per_month"),
                r.get("api_crossover_mtok_per_month_low"),
                r.get("api_crossover_mtok_per_month_high"),
                ",.0f",
            ),  # fmt: skip
            "plan_mtok_month": r.get("planned_mtok_per_month"),
            "self_host_or_api": None
            if r.get("self_hosting_beats_api") is None
            else ("self-host" if r["self_hosting_beats_api"] else "API"),
        }
        for r in recs
    ]
    if not any(x["breakeven_util"] is not None or x["api_crossover_mtok_month"] is not None
               or recs[0].get("api_reference") for x in rows):  # fmt: skip
        return
    out.write(
        "\nown, rent or buy tokens (owning beats renting above breakeven_util = own / rent; "
        "self-hosting beats the API above api_crossover M tokens a month; docs/recommend.md)\n"
    )
    emit(rows, "table", out)
    ref = recs[0].get("api_reference")
    if ref:
        warn = f" [{', '.join(ref['warnings'])}]" if ref.get("warnings") else ""
        out.write(
            f"API: {ref['provider']} {ref['provider_model']} ${ref['usd_per_mtok_input']:g} in / "
            f"${ref['usd_per_mtok_output']:g} out per M tokens (${ref['usd_per_mtok_blended']:.3g}/M "
            f"at this mix), {ref['as_of']}{warn}: {ref['source']}\n"
        )
    miss = recs[0].get("unpriced_gpus") or {}
    if miss:
        out.write(f"\nnot priced ({len(miss)} GPUs, left out of the ranking)\n")
        emit([{"gpu": g, "why": why} for g, why in sorted(miss.items())], "table", out)
        out.write(
            "price one with --usd-per-gpu-hour GPU=USD, --prices FILE or --segment ID "
            "(planner prices --coverage shows the rows per GPU and kind)\n"
        )


def markdown_buyer(recs: list[dict[str, Any]]) -> list[str]:
    """The own / rent / API answers of the options, and the GPUs not priced."""
    out = ["", "## Own, rent or buy tokens", ""]
    for r in recs:
        u, v = r.get("breakeven_utilization"), r.get("api_crossover_mtok_per_month")
        own = f"owning beats renting above {u:.0%} utilisation" if u is not None else (
            r.get("breakeven_note") or "no own/rent comparison")  # fmt: skip
        api = (
            f"self-hosting beats the API above {v:,.0f} M tokens/month"
            if v is not None
            else (r.get("api_crossover_note") or "no API comparison")
        )
        out.append(f"* {r['rank']}. {r['gpu']} {r['framework']}: {own}; {api}")
    ref = recs[0].get("api_reference") if recs else None
    if ref:
        out.append(
            f"* API reference: {ref['provider']} `{ref['provider_model']}` "
            f"${ref['usd_per_mtok_input']:g} in / ${ref['usd_per_mtok_output']:g} out per M "
            f"tokens, {ref['as_of']} ({ref['source']})"
        )
    miss = (recs[0].get("unpriced_gpus") or {}) if recs else {}
    if miss:
        out.append(
            "* Not priced (left out): " + "; ".join(f"{g}: {w}" for g, w in sorted(miss.items()))
        )
    return [line.replace("$", "\\$") for line in out]  # "$...$" would render as math


VIEWS = {"own": own_view, "coverage": coverage_view, "api": api_view, "segments": segments_view}
