"""``planner grow``: cards, orders and money month by month as traffic grows.

A thin shell over :func:`planner.recommend.grow.plan_growth`: the scenario and the flags
become month-by-month traffic (:mod:`planner.workload.growth`) and constraints, and the plan
is printed as a table, JSON or CSV (one row per month).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
from typing import Any

from planner.cli._common import _seed, add_common_args, add_price_args
from planner.cli._common import _tp_list as _ints
from planner.cli.recommend import (
    BASES,
    OBJECTIVE_CHOICES,
    _bounded,
    _gpus,
    _ids,
    _price_override,
)
from planner.errors import PlannerError, shown

GROW_EXAMPLE = """\
  planner grow examples/chat-8b.yaml --growth-per-month 0.1 --months 12
  planner grow examples/chat-8b.yaml --growth-per-month 0.1 --months 12 --format json
  planner grow examples/rag-70b.yaml --growth-per-month 0.05 --months 24 --price-basis own \\
      --gpus h100,h200 --lead-time-months 4 --start 2027-01
  planner grow examples/chat-8b.yaml --traffic examples/traffic-chat-8b.csv --size-for final

traffic series (--traffic): one row per month, month 1 first, rates in req/s
  CSV:  month,peak_rps,mean_rps      (month and mean_rps optional)
        1,60,25
        2,66,27.5
  YAML: months: [{peak_rps: 60, mean_rps: 25}, {peak_rps: 66}, 72.6]
  a row without mean_rps scales the scenario's traffic (mean and daily profile) to its peak

with --size-for first (the default) month 1 is what 'planner recommend SCENARIO.yaml' answers"""


def _growth(text: str) -> float:
    from planner.workload.growth import MAX_GROWTH_PER_MONTH, MIN_GROWTH_PER_MONTH

    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a fraction per month like 0.1 (+10 %), got {shown(text)}"
        ) from None
    if not MIN_GROWTH_PER_MONTH <= v <= MAX_GROWTH_PER_MONTH:  # NaN fails too
        raise argparse.ArgumentTypeError(
            f"must be between {MIN_GROWTH_PER_MONTH:g} and {MAX_GROWTH_PER_MONTH:g} "
            f"(a fraction per month: 0.1 is +10 %), got {text}"
        )
    return v


def _months(text: str) -> int:
    from planner.workload.growth import MAX_MONTHS

    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {shown(text)}") from None
    if not 1 <= v <= MAX_MONTHS:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_MONTHS}, got {text}")
    return v


def _lead(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {shown(text)}") from None
    if not 0 <= v <= 120:
        raise argparse.ArgumentTypeError(f"must be from 0 to 120 months, got {text}")
    return v


def _start(text: str) -> _dt.date:
    try:
        d = _dt.datetime.strptime(text.strip(), "%Y-%m").date()
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a month as YYYY-MM, e.g. 2027-01, got {shown(text)}"
        ) from None
    if not 1970 <= d.year <= 2200:
        raise argparse.ArgumentTypeError(f"the year must be from 1970 to 2200, got {d.year}")
    return d


# flags of `planner recommend` that grow does not offer (its constraints helper reads them)
_NOT_OFFERED = (
    "min_weight_bits", "budget_usd_per_hour", "budget_usd_per_month", "fit_percentile",
    "latency_cost_cap", "kv_precisions", "datacenter_only",
)  # fmt: skip


def register(subparsers: Any) -> None:
    """Add ``grow`` to ``planner``'s subparsers."""
    p = subparsers.add_parser(
        "grow",
        help="Cards month by month as traffic grows: when to order them, $ per month.",
        description=(
            "Plan a year (or any span) of growing traffic on ONE deployment: the recommender "
            "picks the option (GPU x framework x precision x layout) at month 1's traffic "
            "(--size-for final: the last month's), bisects its per-replica capacity once, and "
            "every month is re-sized with it: the cards needed (with the band from the "
            "performance error band), cards added or released, the month by which to order "
            "them given a lead time, and $ per month peak-sized and autoscaled over the daily "
            "profile. Owned cards (--price-basis own) are bought once and kept, costed at "
            "their amortised $/GPU-h every month; rented ones follow the need."
        ),
        epilog=f"examples:\n{GROW_EXAMPLE}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_args(p)
    p.add_argument("scenario", metavar="SCENARIO.yaml", help="scenario file (examples/)")
    g = p.add_argument_group("traffic over time (give --growth-per-month or --traffic)")
    g.add_argument("--growth-per-month", type=_growth, metavar="G",
                   help="traffic growth per month [fraction], e.g. 0.1 for +10 %% a month")  # fmt: skip
    g.add_argument("--months", type=_months, metavar="N",
                   help="months to plan with --growth-per-month (default 12)")  # fmt: skip
    g.add_argument("--traffic", metavar="FILE",
                   help="monthly peak (and optionally mean) req/s, CSV or YAML (see below)")  # fmt: skip
    g.add_argument("--lead-time-months", type=_lead, metavar="L",
                   help="months from order to service (default: 3 with --price-basis own, "
                   "Dell's 8-12 weeks for H100 servers in 2024; 0 for rented capacity)")  # fmt: skip
    g.add_argument("--size-for", choices=("first", "final"), default="first",
                   help="pick the option at month 1's traffic (default; month 1 then equals "
                   "'planner recommend') or at the last month's")  # fmt: skip
    g.add_argument("--start", type=_start, metavar="YYYY-MM",
                   help="calendar month of month 1 (labels the months and order dates)")  # fmt: skip
    c = p.add_argument_group("options and constraints (as 'planner recommend')")
    c.add_argument("--objective", choices=OBJECTIVE_CHOICES, default="cost",
                   help="what the option minimises at the sizing month (default cost)")  # fmt: skip
    c.add_argument("--gpus", type=_ids, help="allowed GPU ids or aliases, e.g. h100,h200,mi300x")
    c.add_argument("--frameworks", type=_ids, help="allowed frameworks, e.g. vllm,sglang")
    c.add_argument("--precisions", type=_ids, help="allowed weight precisions, e.g. bf16,fp8")
    c.add_argument("--tp", type=_ints, help="TP sizes to try (default 1,2,4,8)")
    c.add_argument("--max-gpus", type=_gpus, help="most GPUs in the fleet (months above are named)")
    c.add_argument("--max-gpus-per-replica", type=_gpus, help="most GPUs in one replica")
    c.add_argument("--headroom", type=_bounded(float, 0.0, 100.0),
                   help="spare capacity above each month's peak (default: the scenario's, else 0.2)")  # fmt: skip
    c.add_argument("--price-basis", choices=BASES,
                   help="on_demand (default), reserved, spot, serverless, community, or own "
                   "(bought once and kept, purchase amortised)")  # fmt: skip
    c.add_argument("--providers", type=_ids, help="rental providers to price with")
    c.add_argument("--usd-per-gpu-hour", type=_price_override, action="append", metavar="[GPU=]USD",
                   help="price override [USD per GPU-hour], repeatable; without GPU= for every GPU")  # fmt: skip
    add_price_args(c)
    c.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    p.set_defaults(func=cmd_grow, **dict.fromkeys(_NOT_OFFERED))


def _traffic(args: argparse.Namespace, sc) -> tuple[list, list[str]]:
    """Each month's traffic and the notes on it."""
    from planner.workload.growth import (
        grown_traffic,
        read_traffic_series,
        series_notes,
        series_traffic,
    )

    if args.traffic is not None and args.growth_per_month is not None:
        raise PlannerError("give --growth-per-month or --traffic, not both")
    if args.traffic is not None:
        if args.months is not None:
            raise PlannerError(
                "--months goes with --growth-per-month; a --traffic file gives its own months"
            )
        rows = read_traffic_series(args.traffic)
        traffic = series_traffic(sc.workload.traffic, rows, str(args.traffic))
        return traffic, series_notes(rows, traffic)
    if args.growth_per_month is None:
        raise PlannerError(
            "give --growth-per-month G (e.g. 0.1 for +10 % a month) or --traffic FILE "
            "(see 'planner grow --help')"
        )
    return grown_traffic(sc.workload.traffic, args.growth_per_month, args.months or 12), []


def cmd_grow(args: argparse.Namespace) -> int:
    from planner.catalog.profile import load_profile
    from planner.cli._common import _catalog
    from planner.cli.recommend import _constraints
    from planner.recommend.grow import plan_growth
    from planner.scenario import load_scenario

    cat = _catalog(args)
    sc = load_scenario(args.scenario)
    if sc.classes:
        raise PlannerError(
            f"{args.scenario}: grow plans a single workload, not request classes "
            "(plan each class's scenario on its own)"
        )
    traffic, notes = _traffic(args, sc)
    source = (
        {"file": str(args.traffic)}
        if args.traffic is not None
        else {"growth_per_month": args.growth_per_month, "months": len(traffic)}
    )
    c = _constraints(args, sc, cat)
    plan = plan_growth(
        sc.model,
        sc.workload,
        sc.slo,
        traffic,
        catalog=cat,
        constraints=c,
        objective=args.objective,
        lead_time_months=args.lead_time_months,
        size_for=args.size_for,
        start=args.start,
        engine=sc.serving.kwargs(),
        profile=load_profile(args.calibration) if args.calibration else None,
        seed=args.seed,
        notes=notes,
    )
    _print(plan, args.format, sc.name or args.scenario, source)
    return 0


def _gpus_cell(m) -> Any:
    if m.num_gpus_low is None or m.num_gpus_low == m.num_gpus_high == m.num_gpus:
        return m.num_gpus
    return f"{m.num_gpus} ({m.num_gpus_low}-{m.num_gpus_high})"


def _order_cell(m) -> str:
    if not m.order_gpus:
        return "-"
    when = m.order_by_date or (
        f"month {m.order_by}" if m.order_by >= 1 else f"{1 - m.order_by} mo. before month 1"
    )
    return f"{m.order_gpus} by {when}"


def _option_text(o: dict[str, Any]) -> str:
    label = o.get("precision_label") or o["precision"]
    if "kv" not in label:
        label += f" (kv {o['kv_precision']})"
    return f"{o['gpu']} / {o['framework']} / {label} tp={o['tp']}" + (
        f" pp={o['pp']}" if o["pp"] > 1 else ""
    )


def _print(plan, fmt: str, name: str | None, source: dict[str, Any]) -> None:
    from planner.report import emit

    out = sys.stdout
    if fmt == "json":
        emit({"scenario": name, "traffic": source, **plan.as_dict()}, "json")
        return
    if fmt == "csv":
        emit([m.model_dump() for m in plan.months], "csv")
        return
    o = plan.option
    owned = plan.price_basis == "own"
    head = {
        "scenario": name,
        "model": plan.model,
        "traffic": f"file {source['file']}"
        if "file" in source
        else f"{source['growth_per_month'] * 100:+.4g} % a month for {source['months']} months",
        "option": _option_text(o),
        "max_rate_per_replica": f"{o['max_rate_per_replica']:.4g} req/s "
        f"({o['gpus_per_replica']} GPUs per replica)",
        "price": f"${o['usd_per_gpu_hour']:.3g}/GPU-h {plan.price_basis.replace('_', '-')}"
        if o.get("usd_per_gpu_hour") is not None
        else "none",
        "sized_at_month": plan.sized_at_month,
        "lead_time_months": plan.lead_time_months,
    }
    emit(head, "table", out)
    out.write("\n")
    rows = []
    for m in plan.months:
        row: dict[str, Any] = {"month": m.date or m.month, "peak_rps": f"{m.peak_rps:.4g}"}
        row["gpus_needed"] = _gpus_cell(m)
        if owned:
            row["gpus_owned"] = m.gpus_held
        else:
            row["released"] = m.gpus_released or "-"
        row["order"] = _order_cell(m)
        row["usd_per_month"] = m.usd_per_month
        row["usd_per_month_autoscaled"] = m.usd_per_month_autoscaled
        rows.append(row)
    emit(rows, "table", out)
    t = plan.totals
    out.write("\n")
    emit(
        {
            "months": t["months"],
            "gpus": f"{t['num_gpus_first']} in month 1, {t['num_gpus_max']} at most, "
            f"{t['gpus_ordered']} ordered in all",
            "usd_total": t["usd_total"],
            "usd_total_autoscaled": t["usd_total_autoscaled"],
        },
        "table",
        out,
    )
    out.write("\nnotes:\n" + "".join(f"  - {n}\n" for n in plan.notes))
