"""``planner recommend``: the recommender (``planner prices`` lives in :mod:`planner.cli.catalogs`).

A thin shell: arguments become a scenario (file or flags), :func:`planner.recommend.recommend`
does the work, and the result is printed as a table, JSON, CSV or Markdown.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from planner.catalog.speculative import WORKLOADS
from planner.cli._common import _positive_float as _pos_float
from planner.cli._common import _positive_int as _pos_int
from planner.cli._common import _seed, add_price_args
from planner.cli._common import _tp_list as _ints
from planner.cli.ceiling import ceiling_lines, md_ceiling
from planner.cli.question import fill_reproduce, save_scenario, scenario_of
from planner.cli.speculative import check_acceptance_length, check_spec_flags, with_spec
from planner.errors import PlannerError, shown
from planner.recommend.limits import (
    MAX_GPUS,
    MAX_HEADROOM,
    MAX_LATENCY_COST_CAP,
    MAX_TOP,
    MAX_TOP_PER_GPU,
    MAX_USD_BUDGET,
    MAX_WEIGHT_BITS,
)

RECOMMEND_EXAMPLE = """\
  planner recommend examples/chat-8b.yaml
  planner recommend examples/rag-70b.yaml --objective latency --top 3 --format md
  planner recommend examples/rag-70b.yaml --price-basis own --top 3
  planner recommend examples/chat-8b.yaml --segment hyperscaler-owned --format json
  planner recommend examples/rag-70b.yaml --disagg only   # aggregated vs xPyD, same GPUs
  planner recommend examples/moe-r1.yaml --emit planner-deploy --force --emit-top 2
  planner recommend examples/moe-r1.yaml --speculative auto --spec-workload random \\
      --gpus h200 --frameworks sglang --tp 8   # MTP options priced at the random-prompt AL
  planner recommend --model llama-3.1-70b --peak-rps 50 --input-tokens 1500 \\
      --output-tokens 300 --ttft-p99 2 --tpot-p99 0.05 --gpus h100,h200,mi300x \\
      --save-scenario chat-70b.yaml   # reproduce lines then name chat-70b.yaml
  planner recommend --model llama-3.1-8b --preset chat --peak-rps 20 \\
      --input-tokens lognormal:mean=800,p90=1600 --tpot-p99 0.04 --price-basis spot
  planner recommend examples/chat-8b.yaml --max-output-tokens 4096   # the clients' max_tokens

length syntax (--input-tokens, --output-tokens, and in scenario files):
  300                          every request has 300 tokens (fixed)
  lognormal:mean=800,p90=1600  lognormal from the mean (or median=) and p90 (or p99=, sigma=)
  normal:mean=2048,std=400     normal, clipped at min_tokens (default 1)
  uniform:min_tokens=100,max_tokens=900
  a lognormal's p90 is at most 2.27 x its mean (p99: 14.9 x); for a wider spread give median=
  any kind also takes max_tokens=N (cap) and min_tokens=N; scenario files write the same
  as a mapping, e.g. output_tokens: {kind: lognormal, mean: 250, p90: 500}"""

OBJECTIVE_CHOICES = ("cost", "latency", "tokens-per-dollar", "gpus", "energy")
BASES = ("on_demand", "reserved", "spot", "serverless", "community", "own")


# --------------------------------------------------------------------------- parsing


def _bounded(parse, low: float | None, high: float, unit: str = ""):
    """``parse`` with a plausible range: a value outside it is a typo, not a workload."""

    def check(text: str):
        v = parse(text)
        if low is not None and v < low:
            raise argparse.ArgumentTypeError(f"must be at least {low:g}{unit}, got {text}")
        if v > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:g}{unit}, got {text}")
        return v

    check.__name__ = parse.__name__
    return check


def _ids(text: str) -> tuple[str, ...]:
    out = tuple(x.strip() for x in text.split(",") if x.strip())
    if not out:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of ids, got {shown(text)}"
        )
    return out


def _price_override(text: str) -> tuple[str, float]:
    """``GPU=USD`` or a bare ``USD`` (then for every GPU), inside the plausible price band."""
    from planner.cost import check_usd_per_gpu_hour

    gpu, _, value = text.rpartition("=")
    v = _usd_per_gpu_hour(value)
    try:
        check_usd_per_gpu_hour(v, "price")
    except PlannerError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return gpu.strip() or "*", v


# plausible ranges (issue 12): rates as in scenarios and `planner simulate`, latency targets
# up to a day, fleets up to 100k GPUs, prices up to $10k per GPU-hour
_rps = _bounded(_pos_float, 1e-6, 1e7, " req/s")
_seconds = _bounded(_pos_float, None, 86_400.0, " s")
_gpus = _bounded(_pos_int, None, MAX_GPUS, " GPUs")
_usd_per_gpu_hour = _bounded(_pos_float, None, 10_000.0, " USD/GPU-h")
_usd_budget = _bounded(_pos_float, None, MAX_USD_BUDGET, " USD")


# --------------------------------------------------------------------------- register
def register(subparsers: Any) -> None:
    """Add ``recommend`` to ``planner``'s subparsers."""
    from planner.cli._common import add_common_args

    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser(
        "recommend",
        help="Rank GPU x framework x precision x layout for a workload and SLO: GPUs, $/M tokens, why.",
        description=(
            "Rank every deployment of a model that serves the traffic within the SLOs: GPU x "
            "serving framework x weight/KV precision x TP (PP across nodes where needed). "
            "Options are screened analytically and simulated only while they can still win "
            "(branch and bound); the output says which numbers are simulated and which "
            "analytic, names the price row used (provider, date, spread), the binding "
            "constraint and the provenance of the performance numbers, and lists every "
            "rejected option with its reason. Give a scenario file or --model with traffic "
            "and SLO flags."
        ),
        epilog=f"examples:\n{RECOMMEND_EXAMPLE}",
        formatter_class=fmt,
    )
    add_common_args(p)
    p._option_string_actions["--format"].choices = ("table", "json", "csv", "md")
    p.add_argument("scenario", nargs="?", metavar="SCENARIO.yaml", help="scenario file (examples/)")
    w = p.add_argument_group("workload without a scenario file")
    w.add_argument("--model", help="model id (see 'planner models') or config.json")
    w.add_argument("--preset", help="length/traffic preset: chat, rag, code, summarization, batch")
    w.add_argument("--peak-rps", type=_rps, help="peak arrival rate to plan for [req/s]")
    w.add_argument("--mean-rps", type=_rps, help="mean arrival rate [req/s]")
    w.add_argument("--input-tokens", help="prompt length (number or KIND:key=value,...)")
    w.add_argument("--output-tokens", help="answer length (number or KIND:key=value,...)")
    w.add_argument(
        "--max-output-tokens", type=_pos_int,
        help="max_tokens each request sends [tokens] (default: the answers' P99; TensorRT-LLM "
        "reserves it at admission)",
    )  # fmt: skip
    w.add_argument("--ttft-p99", type=_seconds, help="TTFT p99 target [s] (queueing included)")
    w.add_argument("--tpot-p99", type=_seconds, help="TPOT p99 target [s]")
    w.add_argument("--e2e-p99", type=_seconds, help="end-to-end p99 target [s]")
    w.add_argument(
        "--save-scenario", metavar="FILE",
        help="write the question asked (model, workload, SLO, constraints with the constraint "
        "flags given, deployment) as a scenario file; every reproduce line then names it",
    )  # fmt: skip
    w.add_argument(
        "--attainment", type=_pos_float, help="fraction of requests that must meet every target"
    )
    c = p.add_argument_group("options and constraints (override the scenario's)")
    c.add_argument("--objective", choices=OBJECTIVE_CHOICES, default="cost",
                   help="what to minimise (default cost: the cheapest fleet meeting the SLOs)")  # fmt: skip
    c.add_argument(
        "--top",
        type=_bounded(_pos_int, None, MAX_TOP),
        default=None,
        help=f"recommendations to show (default 5, at most {MAX_TOP}; with --per-gpu: per GPU, "
        f"default 1, at most {MAX_TOP_PER_GPU})",
    )
    c.add_argument("--gpus", type=_ids, help="allowed GPU ids or aliases, e.g. h100,h200,mi300x")
    c.add_argument("--frameworks", type=_ids, help="allowed frameworks, e.g. vllm,sglang")
    c.add_argument("--precisions", type=_ids, help="allowed weight precisions, e.g. bf16,fp8")
    c.add_argument("--kv-precisions", type=_ids, help="allowed KV-cache precisions")
    c.add_argument("--tp", type=_ints,
                   help="TP sizes to try (default 1,2,4,8); a MoE model's TPn EPn layouts "
                   "take these sizes, and its DEP widths (attention-DP = EP) up to the "
                   "scale-up domain are tried beside them")  # fmt: skip
    c.add_argument("--max-gpus", type=_gpus, help="most GPUs in the fleet")
    c.add_argument("--max-gpus-per-replica", type=_gpus, help="most GPUs in one replica")
    c.add_argument("--speculative", choices=("off", "auto"), default=None,
                   help="auto: also search speculative decoding (published method x K the "
                   "engine runs; default off)")  # fmt: skip
    c.add_argument("--spec-workload", choices=WORKLOADS, default=None,
                   help="with --speculative auto: the prompts' kind the searched speculative "
                   "settings read their "
                   "published acceptance length for (default: the scenario's "
                   "deployment.spec_workload, else natural text)")  # fmt: skip
    c.add_argument("--acceptance-length", type=_bounded(_pos_float, 1.0, 65.0, " tokens/step"),
                   help="your acceptance length [tokens/step, >= 1: the bonus token counts], with "
                   "--speculative auto: replaces the published one of every searched "
                   "speculative setting with K + 1 >= it")  # fmt: skip
    c.add_argument("--min-weight-bits", type=_bounded(_pos_float, None, MAX_WEIGHT_BITS, " bits"),
                   help="quality floor [bits per weight], e.g. 8 excludes 4-bit formats")  # fmt: skip
    c.add_argument("--datacenter-only", action="store_true", default=None,
                   help="leave out cards whose driver licence excludes datacenter deployment "
                   "(GeForce; hardware.yaml datacenter_licensed)")  # fmt: skip
    c.add_argument("--budget-usd-per-hour", type=_usd_budget, help="fleet budget [USD/h]")
    c.add_argument("--budget-usd-per-month", type=_usd_budget, help="fleet budget [USD/month]")
    c.add_argument(
        "--headroom",
        type=_bounded(float, None, MAX_HEADROOM),
        help="spare capacity above the peak (default 0.2)",
    )
    c.add_argument("--price-basis", choices=BASES,
                   help="on_demand (default), reserved, spot, serverless, community, or own (purchase amortised)")  # fmt: skip
    c.add_argument("--providers", type=_ids, help="rental providers to price with")
    c.add_argument("--usd-per-gpu-hour", type=_price_override, action="append", metavar="[GPU=]USD",
                   help="price override [USD per GPU-hour], repeatable; without GPU= for every GPU")  # fmt: skip
    c.add_argument("--segment", metavar="ID",
                   help="price each GPU at an InferenceX buyer segment's all-in USD per GPU-hour "
                   "(hyperscaler-owned, neocloud-owned, rented-3y; see planner prices "
                   "--segments); only the segment's GPUs are ranked")  # fmt: skip
    add_price_args(c)
    c.add_argument("--latency-cost-cap", type=_bounded(_pos_float, 1.0, MAX_LATENCY_COST_CAP, "x"),
                   help="--objective latency: only options costing at most this multiple of the "
                   "cheapest feasible one (default 2)")  # fmt: skip
    c.add_argument("--fit-percentile", type=_bounded(_pos_float, None, 100.0), default=None,
                   help="percentile of prompt + answer that must fit in memory (default 99)")  # fmt: skip
    c.add_argument("--exact", action="store_true",
                   help="kept for old command lines: every recommendation's max rate per replica is bisected to 2%% (as planner capacity does)")  # fmt: skip
    c.add_argument("--exhaustive", action="store_true",
                   help="simulate every feasible option (no pruning; slow, for validation)")  # fmt: skip
    c.add_argument("--rejected", choices=("summary", "all"), default="summary",
                   help="rejected options in the output: 'summary' (default: counts per reason "
                   "and the first --show-rejected of each) or 'all'")  # fmt: skip
    c.add_argument("--show-rejected", type=_bounded(int, 0, 100_000), default=None, metavar="N",
                   help="rejected options shown per reason in the table (default 3; JSON has all)")  # fmt: skip
    c.add_argument(
        "--per-gpu",
        action="store_true",
        help="the best option of EACH allowed GPU side by side (procurement view), "
        "with tokens/s per GPU from the bisected capacity",
    )
    c.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    c.add_argument("--disagg", choices=("auto", "off", "only"), default="auto",
                   help="also size disaggregated prefill/decode (xPyD) with the top options' "
                   "GPUs and say whether it pays (auto, default), skip it (off), or show "
                   "only the xPyD comparison (only)")  # fmt: skip
    from planner.cli.emit import add_emit_args

    add_emit_args(p)
    p.set_defaults(func=cmd_recommend)


# --------------------------------------------------------------------------- scenario
def _constraints(args: argparse.Namespace, sc, cat):
    """The scenario's constraints with every flag given replacing its value."""
    from planner.cost import check_providers
    from planner.recommend.search import constraints_of

    c = sc.constraints
    check_providers(cat, args.providers or c.providers)
    prices = dict(c.usd_per_gpu_hour)
    for gpu, usd in args.usd_per_gpu_hour or ():
        if gpu == "*":
            prices.update({g.id: usd for g in cat.accelerators})
        else:
            prices[cat.gpu(gpu).id] = usd
    flags = {
        "headroom": args.headroom,
        "gpus": args.gpus,
        "frameworks": args.frameworks,
        "precisions": args.precisions,
        "kv_precisions": args.kv_precisions,
        "tps": args.tp,
        "max_gpus_per_replica": args.max_gpus_per_replica,
        "speculative": getattr(args, "speculative", None),  # grow shares these flags
        # the flag, else the constraints' own, else the prompts' kind the deployment names
        "spec_workload": getattr(args, "spec_workload", None)
        or (None if c.spec_workload else sc.deployment.spec_workload),
        "acceptance_length": getattr(args, "acceptance_length", None),
        "max_total_gpus": args.max_gpus,
        "min_weight_bits": args.min_weight_bits,
        "datacenter_only": args.datacenter_only or None,
        "max_usd_per_hour": args.budget_usd_per_hour,
        "max_usd_per_month": args.budget_usd_per_month,
        "price_basis": args.price_basis,
        "providers": args.providers,
        "fit_percentile": args.fit_percentile,
        "latency_cost_cap": args.latency_cost_cap,
    }
    if args.headroom is not None and not (math.isfinite(args.headroom) and args.headroom >= 0):
        raise PlannerError(f"--headroom must be a finite number >= 0, got {args.headroom}")
    fields = {k: v for k, v in flags.items() if v is not None}
    check_spec_flags(args, fields.get("speculative", c.speculative))
    if getattr(args, "acceptance_length", None) is not None:
        check_acceptance_length(args.acceptance_length, cat.model(sc.model), args.data_dir)
    _check_spec_constraints(c, fields.get("speculative", c.speculative), args, cat, sc.model)
    if getattr(args, "segment", None) is not None:
        from planner.cli.buyer_views import segment_fields

        fields.update(segment_fields(args, cat, fields))
        prices = fields.pop("usd_per_gpu_hour")
    fields["usd_per_gpu_hour"] = prices
    return constraints_of(c, fields)


def _check_spec_constraints(c, speculative: str, args, cat, model_id: str) -> None:
    """The scenario's ``constraints.acceptance_length`` / ``spec_workload`` as their flags are
    checked (:func:`check_spec_flags`, :func:`check_acceptance_length`): refused while the
    speculative search is off (they would change nothing), an AL above every K + 1 refused."""
    where = f"{args.scenario}: " if getattr(args, "scenario", None) else ""
    if speculative != "auto":
        for name in ("acceptance_length", "spec_workload"):
            if getattr(c, name) is not None and getattr(args, name, None) is None:
                raise PlannerError(
                    f"{where}constraints.{name} applies to the speculative search, which is off "
                    "for this run (constraints.speculative, or --speculative, is off); set "
                    f"speculative: auto or drop {name}"
                )
        return
    if c.acceptance_length is not None and getattr(args, "acceptance_length", None) is None:
        try:
            check_acceptance_length(c.acceptance_length, cat.model(model_id), args.data_dir)
        except PlannerError as e:
            raise PlannerError(
                where + str(e).replace("--acceptance-length", "constraints.acceptance_length", 1)
            ) from None


def _per_reason(args: argparse.Namespace) -> int:
    return 3 if args.show_rejected is None else args.show_rejected


def _check_flag_pairs(args: argparse.Namespace) -> None:
    """Refuse a flag that would be ignored: each one here works only with another."""
    if args.latency_cost_cap is not None and args.objective != "latency":
        raise PlannerError(
            f"--latency-cost-cap applies to --objective latency (this run ranks by "
            f"{args.objective}); add --objective latency or drop --latency-cost-cap"
        )
    if args.show_rejected is not None and (args.rejected == "all" or args.format == "csv"):
        why = (
            "--rejected all lists every one" if args.rejected == "all" else "CSV has no rejections"
        )
        raise PlannerError(f"--show-rejected would be ignored ({why}); drop it")
    if args.per_gpu and (args.top or 1) > MAX_TOP_PER_GPU:
        raise PlannerError(
            f"--top {args.top} with --per-gpu lists that many options of every GPU: at most "
            f"{MAX_TOP_PER_GPU} (a GPU has few frameworks; a longer list per GPU prunes nothing "
            "and simulates every option)"
        )
    if args.providers and args.price_basis == "own":
        raise PlannerError(
            "--providers picks rental rows; --price-basis own prices owned cards (purchase "
            "rows); drop one of them"
        )


def cmd_recommend(args: argparse.Namespace) -> int:
    import os

    _check_flag_pairs(args)
    from planner.cli.emit import check_emit_args, run_emit

    asked = check_emit_args(args)
    from planner.catalog.profile import load_profile
    from planner.cli._common import _catalog

    if args.data_dir and not os.path.isdir(args.data_dir):
        raise PlannerError(f"--data-dir {args.data_dir}: not a folder")
    cat = _catalog(args)  # with --prices applied
    sc = scenario_of(args)
    sc.check_spec(cat, args.data_dir)  # the file's deployment: is not searched from
    c = _constraints(args, sc, cat)
    if args.save_scenario:  # the question asked: the constraint flags given included
        save_scenario(sc.model_copy(update={"constraints": c}), args.save_scenario)
    profile = load_profile(args.calibration) if args.calibration else None
    kw = dict(
        catalog=cat,
        constraints=c,
        objective=args.objective,
        engine=sc.serving.kwargs(),
        profile=profile,
        seed=args.seed,
        refine=args.exact or args.per_gpu,
    )
    if sc.classes:
        if args.emit:
            raise PlannerError("--emit takes a scenario with one workload, not request classes")
        return _classes(args, sc, kw)
    from planner.recommend.search import recommend

    res = recommend(
        sc.model,
        sc.workload,
        sc.slo,
        top_n=args.top or (1 if args.per_gpu else 5),
        exhaustive=args.exhaustive,
        per_gpu=args.per_gpu,
        **kw,
    )
    fill_reproduce(res.recommendations, args)
    for r in res.recommendations:  # aggregated; the xPyD comparison carries the pools
        r.setdefault("disaggregated", False)
    from planner.cli.buyer_views import label_segment

    label_segment(res, args)
    if args.disagg != "off" and res.recommendations:
        from planner.recommend.disagg import compare_disagg

        need = sc.workload.traffic.peak() * (1 + c.headroom)
        res.summary["disaggregated"] = compare_disagg(
            sc.model, sc.workload, sc.slo, res.recommendations, need, catalog=cat,
            engine=sc.serving.kwargs(), seed=args.seed, profile=profile,
        )  # fmt: skip
        if args.disagg == "only":
            _print_disagg(res.summary["disaggregated"], args)
            if args.emit:
                run_emit(args, res, sc, cat, asked)
            return 0
    _print_recommendation(res, args.format, _per_reason(args), sc.name or args.scenario, args)
    if args.emit:
        run_emit(args, res, sc, cat, asked)
    if args.format == "table" and res.summary.get("disaggregated"):
        sys.stdout.write("\n")
        _print_disagg(res.summary["disaggregated"], args)
    return 0


def _print_disagg(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """The xPyD comparison (``--disagg only`` prints just this, JSON as a list)."""
    from planner.report import emit

    if args.format == "json":
        emit(rows, "json")
        return
    table = [
        {
            "gpu": r["gpu"],
            "aggregated": f"{r['aggregated']} ({r['aggregated_gpus']} GPUs)",
            "disaggregated": (
                f"{r['groups']} x {r['option']} ({r['num_gpus']} GPUs)" if "option" in r else "-"
            ),
            "pays": "yes" if r["pays"] else "no",
        }
        for r in rows
    ]
    sys.stdout.write("aggregated vs disaggregated (same GPUs)\n")
    emit(table, "table" if args.format != "csv" else "csv")
    for r in rows:
        sys.stdout.write(f"  {r['gpu']}: " + "; ".join(_without_gpu(r["gpu"], r["why"])) + "\n")


def _pareto_rows(front: list[dict[str, Any]], recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Pareto rows with the option's ``layout`` (speculative setting included) in place
    of its ``tp`` / ``pp``.

    ``tp`` alone misreads an expert-parallel replica: DeepSeek-V3 fp4 on DEP4 (attention data
    parallel 4, experts over 4 GPUs) has ``tp`` 1, which reads as one GPU.
    """
    layout = {r.get("rank"): with_spec(r) for r in recs}
    out = []
    for row in front:
        lay = row.get("layout") or layout.get(row.get("rank"))
        if lay is None:
            out.append(row)
            continue
        new: dict[str, Any] = {}
        for k, v in row.items():
            if k == "tp":
                new["layout"] = lay
            elif k not in ("pp", "layout"):
                new[k] = v
        out.append(new)
    return out


def _without_gpu(gpu: str, why: list[str]) -> list[str]:
    """The reasons without a leading ``GPU: `` (the line already names the GPU)."""
    return [w[len(gpu) + 2 :] if w.startswith(f"{gpu}: ") else w for w in why]


def _classes(args, sc, kw) -> int:
    """A scenario with request classes: a pool per class against one shared pool."""
    from planner.recommend.classes import recommend_classes
    from planner.report import emit
    from planner.serving import RequestClass

    if args.per_gpu or args.exhaustive:
        raise PlannerError("--per-gpu and --exhaustive take a single workload, not request classes")
    out = recommend_classes(
        sc.model,
        [RequestClass(k.name, k.workload, k.slo) for k in sc.classes],
        top_n=args.top or 5,
        **kw,
    )
    if args.format == "json":
        emit(out, "json")
        return 0
    rows = [
        {"class": name, **({short: r.get(k) for k, short in TABLE_COLS if k != "rank"} if r else
                           {"gpu": "none: " + out["per_class_not"].get(name, "")})}
        for name, r in out["per_class"].items()
    ]  # fmt: skip
    if args.format == "csv":
        emit(rows, "csv")
        return 0
    sys.stdout.write(f"verdict: {out['verdict']}\n\na pool per class\n")
    emit(rows, "table")
    sys.stdout.write("\none shared pool\n")
    sh = out["shared"]
    if sh:
        sys.stdout.write(f"why: {sh['why']}\n")
        emit(_rows(sh["recommendations"]), "table")
        w = sh["recommendations"][0]
        if w.get("per_class"):
            sys.stdout.write("\nper class in the winner's pool (at the rate it is sized for)\n")
            emit([{"class": k, **v} for k, v in w["per_class"].items()], "table")
    else:
        sys.stdout.write(f"none: {out['shared_not']}\n")
    sys.stdout.write("\nnotes: " + "; ".join(out["notes"]) + "\n")
    return 0


TABLE_COLS = (
    ("rank", "rank"),
    ("gpu", "gpu"),
    ("framework", "framework"),
    ("precision_label", "precision"),
    ("kv_precision", "kv"),
    ("layout", "layout"),
    ("replicas", "replicas"),
    ("num_gpus", "gpus"),
    ("max_rate_per_replica", "rps_per_replica"),
    ("output_tok_s_per_gpu", "tok_s_per_gpu"),
    ("usd_per_hour", "usd_per_hour"),
    ("usd_per_month", "usd_per_month"),
    ("usd_per_mtok_output", "usd_per_mtok_out"),
    ("break_even_usd_per_gpu_hour", "break_even_usd_gpu_h"),
    ("ttft_p99_s", "ttft_p99_s"),
    ("tpot_p99_s", "tpot_p99_s"),
    ("joules_per_token", "j_per_tok"),
    ("quality", "quality"),
    ("robustness", "robustness"),
    ("binding_constraint", "binding"),
    ("provenance", "provenance"),
)


def _range(v: Any, lo: Any, hi: Any, fmt: str) -> Any:
    """``v (lo-hi)`` when the error band gives an interval that differs from ``v``."""
    if v is None or lo is None or hi is None or lo == hi == v:
        return v
    return f"{format(v, fmt)} ({format(lo, fmt)}-{format(hi, fmt)})"


def _rows(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for r in recs:
        row = {short: r.get(k) for k, short in TABLE_COLS}
        row["precision"] = r.get("precision_label") or r.get("precision")
        row["framework"] = r.get("release") or r.get("framework")  # vllm@0.11.0
        row["layout"] = with_spec(r)
        row["gpus"] = _range(r["num_gpus"], r.get("num_gpus_low"), r.get("num_gpus_high"), ",d")
        row["usd_per_mtok_out"] = _range(
            r.get("usd_per_mtok_output"),
            r.get("usd_per_mtok_output_low"),
            r.get("usd_per_mtok_output_high"),
            ".3g",
        )
        rows.append(row)
    return rows


def _asked_as(model_id: str, asked: str | None) -> str:
    """The model's catalog id, and the name asked when an alias led to it (``deepseek-r1``
    is ``deepseek-v3``'s architecture: the answer must not look like another model's)."""
    if not asked or asked.lower() == model_id or asked.endswith(".json"):
        return model_id
    return f"{model_id} (asked as {asked}: an alias of it in models.yaml, the same architecture)"


def _rejected_summary(rejections: list[Any], per_reason: int) -> list[dict[str, Any]]:
    """The first ``per_reason`` rejected options of each reason, each with its reason's
    count (``stage_count``); in the search's order (closest first)."""
    counts: dict[str, int] = {}
    out = []
    for r in rejections:
        counts[r.stage] = counts.get(r.stage, 0) + 1
        if counts[r.stage] <= per_reason:
            out.append(r)
    return [{**r.as_dict(), "stage_count": counts[r.stage]} for r in out]


def _print_recommendation(res, fmt: str, per_reason: int, name: str | None, args=None) -> None:
    from planner.report import emit

    out = sys.stdout
    rejected_all = getattr(args, "rejected", "summary") == "all"
    if fmt == "json":
        if not rejected_all:
            res.rejected = _rejected_summary(res.rejections, per_reason)
        d = res.as_dict()
        emit(d, "json")
        return
    if fmt == "csv":  # one row per option: the GPUs not priced are no option (JSON has them)
        emit([{k: v for k, v in r.items() if k != "unpriced_gpus"} for r in res.recommendations],
             "csv")  # fmt: skip
        return
    if not rejected_all:
        res.rejected = _rejected_summary(res.rejections, max(per_reason, 1))
    if fmt == "md":
        out.write(_markdown(res, name))
        return
    s = res.summary
    head = {
        "model": _asked_as(s["model"], getattr(args, "model", None)),
        "objective": s["objective_text"],
        "peak_rps": s["peak_rps"],
        "headroom": s["headroom"],
        "slo": s["slo"],
        "search": (
            f"{s['options_enumerated']:,} options: {s['options_screened']:,} screened analytically, "
            f"{s['options_simulated']} simulated ({s['simulations']} runs), "
            f"{s['options_pruned']:,} pruned by bound, in {s['elapsed_s']:.1f} s"
        ),
    }
    emit(head, "table", out)
    out.write("\nwhy: " + res.why + "\n\n")
    emit(_rows(res.recommendations), "table", out)
    out.write(ceiling_lines(res.recommendations))
    from planner.cli.buyer_views import print_buyer

    print_buyer(res.recommendations, out)
    w = res.recommendations[0]
    out.write("\nwinner details\n")
    detail = {
        k: w.get(k)
        for k in (
            "reproduce", "robustness", "winner_at_price_rows", "error_band",
            "price_source", "price_provider", "price_as_of", "price_rule", "price_rows",
            "price_spread",
            "usd_per_month_autoscaled", "usd_per_mtok_total", "usd_per_mtok_output_full_load",
            "gpu_hours_per_day", "gpu_hours_per_day_autoscaled", "max_rate_bracket_rps",
            "max_rate_basis", "ttft_p99_at_max_rate_s", "tpot_p99_at_max_rate_s",
            "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "kv_cache_dtype",
            "prefill_chunk_tokens", "max_model_len",  # the knobs capacity / simulate print too
            "latency_at_rps", "saturation_rps_per_replica", "utilization_at_peak",
            "weights_gb_per_gpu", "kv_cache_gb_per_gpu", "memory_headroom", "decode_bound",
            "kwh_per_day", "energy_basis", "quality_detail", "truncated_requests", "numbers",
            "price_notes", "price_flag", "winner_with_trusted_prices", "breakeven_note",
            "api_crossover_note", "licence_note", "measured_ceiling_tok_s_per_gpu",
            "ceiling_ratio", "ceiling_row",
        )
    }  # fmt: skip
    detail["assumptions"] = "; ".join(w.get("assumptions") or []) or "-"
    emit(detail, "table", out)
    if "SCENARIO.yaml" in (w.get("reproduce") or ""):
        out.write(
            "(SCENARIO.yaml in the reproduce line: the question came from flags; add "
            "--save-scenario FILE to write it to a file the line can name)\n"
        )
    if res.pareto:
        out.write("\npareto front ($/M output tokens vs P99 E2E latency, among the shown)\n")
        emit(_pareto_rows(res.pareto, res.recommendations), "table", out)
    if res.rejected:
        by: dict[str, list[dict[str, Any]]] = {}
        for r in res.rejected:
            by.setdefault(r["stage"], []).append(r)
        total = sum(items[0].get("stage_count", len(items)) for items in by.values())
        keep = len(res.rejected) if rejected_all else max(per_reason, 0)
        shown_n = sum(min(len(items), keep) for items in by.values())
        more = (
            ""
            if shown_n >= total
            else f", {shown_n:,} shown (--show-rejected N per reason; --rejected all lists "
            "every one)"
        )
        out.write(f"\nrejected: {total:,} options by reason{more}\n")
        rows = []
        for stage, items in sorted(by.items(), key=lambda kv: -len(kv[1])):
            n = items[0].get("stage_count", len(items))
            for r in items[:keep]:
                rows.append(
                    {
                        "stage": f"{stage} ({n})",
                        "option": " ".join(
                            str(x) for x in (r["gpu"], r["framework"], r["precision"]) if x
                        )
                        + (f" kv={r['kv_precision']}" if r.get("kv_precision") else "")
                        + (f" {_shape(r)}" if r["tp"] else ""),
                        "reason": r["reason"],
                    }
                )
        if rows:
            from planner.report import render

            text = render(rows, "table")
            out.write(text)
    out.write("\nassumptions: " + "; ".join(res.assumptions) + "\n")


def _markdown(res, name: str | None) -> str:
    s = res.summary
    lines = [
        f"# Recommendation: {s['model']}" + (f" ({name})" if name else ""),
        "",
        f"* Objective: {s['objective_text']}",
        f"* Traffic: peak {s['peak_rps']:g} req/s, headroom {s['headroom']:g}",
        f"* SLO: {s['slo']}",
        f"* Search: {s['options_enumerated']:,} options, {s['options_simulated']} simulated, "
        f"{s['options_pruned']:,} pruned by bound ({s['elapsed_s']:.1f} s)",
        "",
        "## Conclusion",
        "",
        res.why,
        *md_ceiling(res.recommendations),
        "",
        "## Ranked options",
        "",
    ]
    rows = _rows(res.recommendations)
    cols = list(rows[0])
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "---|" * len(cols))
    for r in rows:
        lines.append("| " + " | ".join(_md(r[c], c) for c in cols) + " |")
    from planner.cli.buyer_views import markdown_buyer

    lines += markdown_buyer(res.recommendations)
    lines += [
        "",
        "## Rejected options (first 20)",
        "",
        "| option | stage | reason |",
        "|---|---|---|",
    ]
    for r in res.rejected[:20]:
        opt = " ".join(str(x) for x in (r["gpu"], r["framework"], r["precision"]) if x)
        opt += f" {_shape(r)}" if r["tp"] else ""
        lines.append(f"| {opt} | {r['stage']} | {r['reason']} |")
    lines += ["", "## Assumptions", ""] + [f"* {a}" for a in res.assumptions] + [""]
    return "\n".join(lines)


def _shape(r: dict[str, Any]) -> str:
    """A row's layout: ``tp=8`` for tensor parallel, ``DEP8`` / ``TP8 EP8`` otherwise."""
    if (r.get("ep") or 1) == 1 and (r.get("attention_dp") or 1) == 1:
        return f"tp={r['tp']}"
    from planner.catalog.layout import layout_of

    return layout_of(r["tp"], r.get("pp") or 1, r["ep"], r["attention_dp"]).label


def _md(v: Any, key: str = "") -> str:
    from planner.report import human

    return human(key, v).replace("|", "/")
