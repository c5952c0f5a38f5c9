"""``planner simulate`` and ``planner capacity``: the serving model on the command line.

:func:`register` adds both subcommands to the main parser (``planner.cli``). Heavy
modules (numpy, the simulator) are imported inside the command functions so that
``planner --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from planner.cli._common import (
    _nonneg_float,
    _positive_float,
    _positive_int,
    _seed,
    _tp_list,
    add_common_args,
    checked_release,
    release_fields,
    release_params,
    say_release,
)
from planner.cli.speculative import (
    acceptance_scaled,
    add_spec_args,
    check_workload_used,
    deployment_fields,
    replica_spec_kwargs,
    spec_kwargs,
)
from planner.errors import PlannerError

SIMULATE_EXAMPLE = (
    "planner simulate examples/chat-8b.yaml --gpu nvidia-h100-sxm --framework vllm "
    "--precision bf16 --rate 20 --requests 5000\n"
    "  planner simulate examples/batch-offline.yaml --offline --format json\n"
    "  planner simulate examples/disagg/disagg-r1.yaml --rate 4   # two pools (xPyD)\n"
    "  planner simulate examples/chat-8b.yaml --gpu nvidia-h100-sxm --framework vllm "
    "--precision bf16 --spec-method eagle3 --spec-tokens 7"
)
CAPACITY_EXAMPLE = (
    "planner capacity examples/rag-70b.yaml --gpu nvidia-h100-sxm --framework vllm "
    "--precision fp8 --tp 4 --compare-tp 2,4,8\n"
    "  planner capacity examples/chat-8b.yaml --format csv > curve.csv\n"
    "  planner capacity examples/disagg/disagg-r1.yaml   # xPyD: pool rates, x:y, groups\n"
    "  planner capacity examples/moe-r1.yaml --attention-dp-balance   # trtllm DEP8, balanced\n"
    "  planner capacity examples/moe-r1.yaml --gpu amd-mi325x --framework vllm --precision fp8 "
    "--tp 8   # TP8: the flag replaces the file's DEP8\n"
    "  planner capacity examples/chat-8b.yaml --gpu nvidia-h100-sxm --framework vllm "
    "--precision bf16 --spec-method eagle3 --spec-tokens 7 --acceptance-length 2.8\n"
    "  planner capacity examples/chat-8b.yaml --gpu nvidia-h100-sxm --framework trtllm "
    "--max-output-tokens 4096   # clients send max_tokens 4096: TensorRT-LLM reserves it"
)
SCENARIOS_NOTE = (
    " Scenario files: see the examples/ folder (chat-8b.yaml, rag-70b.yaml, batch-offline.yaml, "
    "code-completion.yaml)."
)


#: scored requests per rate of the capacity search (``planner capacity --requests``'s
#: default; ``planner simulate`` sizes its default fleet with the same)
CAPACITY_REQUESTS = 1200
#: fields of simulate's own run that the deployment's answer must not replace in its output
RUN_OWN = ("replicas", "output_tok_s_per_gpu")
MAX_RATE_RPS = 1e7  # no single replica or scenario plausibly sees more requests per second


def _rate(text: str) -> float:
    v = _positive_float(text)
    if v < 1e-6:
        raise argparse.ArgumentTypeError(f"must be at least 1e-06 req/s, got {text}")
    if v > MAX_RATE_RPS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_RATE_RPS:.0e} req/s, got {text}")
    return v


def _warmup_fraction(text: str) -> float:
    v = _nonneg_float(text)
    if v >= 1:
        raise argparse.ArgumentTypeError(
            f"is the fraction of requests not scored, so it must be < 1, got {text}"
        )
    return v


def _common(p: argparse.ArgumentParser) -> None:
    add_common_args(p)
    p.add_argument("scenario", metavar="SCENARIO.yaml", help="scenario file (see examples/)")
    d = p.add_argument_group(
        "deployment (default: the scenario's 'deployment:' section; any of --tp / --ep / "
        "--attention-dp replaces the file's layout, the ones not given being 1: --tp 8 on a "
        "DEP8 scenario is TP8)"
    )
    d.add_argument("--gpu", default=None, help="accelerator id (see 'planner gpus')")
    d.add_argument(
        "--framework", default=None, help="serving framework id (see 'planner frameworks')"
    )
    d.add_argument("--precision", default=None, help="weight format id (see 'planner precisions')")
    d.add_argument(
        "--kv-precision",
        default=None,
        help="KV-cache precision (default: what the framework does with the checkpoint)",
    )
    d.add_argument(
        "--tp", type=_positive_int, default=None, help="tensor-parallel GPUs per replica"
    )
    d.add_argument("--pp", type=_positive_int, default=None, help="pipeline stages per replica")
    d.add_argument(
        "--ep",
        type=_positive_int,
        default=None,
        help="expert-parallel size (MoE models; tp x attention-dp = moe-tp x ep)",
    )
    d.add_argument(
        "--attention-dp",
        type=_positive_int,
        default=None,
        help="attention data-parallel ranks (MoE models; e.g. --tp 1 --attention-dp 8 --ep 8 "
        "is DEP8)",
    )
    d.add_argument(
        "--attention-dp-balance",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="balance prompt work over the attention-DP ranks (trtllm "
        "attention_dp_config.enable_balance; default: the scenario's, else the engine's, off)",
    )
    add_spec_args(d)
    d.add_argument(
        "--max-num-seqs", type=_positive_int, default=None, help="engine: max running sequences"
    )
    d.add_argument(
        "--max-num-batched-tokens",
        type=_positive_int,
        default=None,
        help="engine: token budget per iteration (chunked-prefill size)",
    )
    d.add_argument(
        "--max-model-len",
        type=_positive_int,
        default=None,
        help="engine: longest sequence (prompt + answer) it accepts [tokens] (default: the "
        "scenario's serving.context_len, else the model's limit)",
    )
    d.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    w = p.add_argument_group("workload overrides (default: the scenario's)")
    w.add_argument("--peak-rps", type=_rate, default=None, help="peak arrival rate [req/s]")
    w.add_argument(
        "--input-tokens", default=None, help="prompt length: N or KIND:key=value,... (see README)"
    )
    w.add_argument(
        "--output-tokens", default=None, help="answer length: N or KIND:key=value,... (see README)"
    )
    w.add_argument(
        "--max-output-tokens",
        type=_positive_int,
        default=None,
        help="max_tokens each request sends [tokens] (default: the scenario's "
        "workload.max_output_tokens, else the answers' P99; TensorRT-LLM reserves it)",
    )
    w.add_argument(
        "--fit-percentile",
        type=_positive_float,
        default=None,
        help="percentile of prompt + answer that must fit one replica (default: the scenario's "
        "constraints.fit_percentile, 99); longer requests are truncated and counted",
    )
    w.add_argument(
        "--allow-truncation",
        action="store_true",
        help="simulate even when requests at that percentile exceed the context limit "
        "(they are cut to it; the count is shown as truncated_requests)",
    )


def register(subparsers: Any) -> None:
    """Add the ``simulate`` and ``capacity`` subcommands to ``planner``'s subparsers."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser(
        "simulate",
        help="Simulate one replica serving a scenario: TTFT/TPOT/ITL/E2E percentiles, throughput, goodput.",
        description=(
            "Simulate one replica (TP x PP GPUs) of a serving engine with continuous batching "
            "(or static batching) on the scenario's traffic. TTFT includes queueing; TPOT = "
            "(E2E - TTFT) / (output - 1); goodput counts only requests that met every SLO."
            + SCENARIOS_NOTE
        ),
        epilog=f"example:\n  {SIMULATE_EXAMPLE}",
        formatter_class=fmt,
    )
    _common(p)
    p.add_argument(
        "--requests",
        type=_positive_int,
        default=2000,
        help="requests to simulate (default 2000; at most 3,000,000, ~0.4 KB of memory each)",
    )
    p.add_argument(
        "--rate",
        type=_rate,
        default=None,
        help="arrival rate at this replica [req/s] (default: the scenario's peak / --replicas)",
    )
    p.add_argument(
        "--replicas",
        type=_positive_int,
        default=None,
        help="split the scenario's peak evenly over this many replicas (default: the count "
        "'planner capacity' finds for the peak, its SLO and headroom)",
    )
    p.add_argument(
        "--concurrency",
        type=_positive_int,
        default=None,
        help="closed loop: this many clients, each sending its next request when one completes",
    )
    p.add_argument("--offline", action="store_true", help="queue every request at t=0 (batch job)")
    p.add_argument("--static", action="store_true", help="force static batching")
    p.add_argument(
        "--warmup",
        type=_warmup_fraction,
        default=0.0,
        help="fraction of the first requests not scored (default 0)",
    )
    p.set_defaults(func=cmd_simulate)

    c = subparsers.add_parser(
        "capacity",
        help="Max request rate per replica within the SLOs, replicas and GPUs for the peak, "
        "and the throughput-latency curve.",
        description=(
            "Find the largest arrival rate one replica sustains while meeting the scenario's "
            "SLOs (bisection over simulations), size the fleet as ceil(peak x (1 + headroom) / "
            "capacity) replicas, and trace throughput against concurrency with the knee marked. "
            "--format csv prints the curve's points." + SCENARIOS_NOTE
        ),
        epilog=f"example:\n  {CAPACITY_EXAMPLE}",
        formatter_class=fmt,
    )
    _common(c)
    c.add_argument(
        "--headroom",
        type=_nonneg_float,
        default=None,
        help="spare capacity above the peak (default: the scenario's constraints, 0.2)",
    )
    c.add_argument(
        "--requests",
        type=_positive_int,
        default=CAPACITY_REQUESTS,
        help="scored requests per simulated rate in the search, at least (default 1200; "
        "scaled up to ~50 expected SLO misses for far-tail targets and bursty arrivals; at "
        "most 1,000,000)",
    )
    c.add_argument(
        "--compare-tp",
        type=_tp_list,
        default=None,
        metavar="1,2,4,8",
        help="also compare replicas of these TP sizes (one big vs several small)",
    )
    c.add_argument("--no-curve", action="store_true", help="skip the throughput-latency curve")
    c.set_defaults(func=cmd_capacity)


# --------------------------------------------------------------------------- helpers
def _context(args: argparse.Namespace):
    """(scenario, replica, catalog, params provenance, release choice, layout note) from the
    arguments. The layout flags replace the file's layout (``--tp 8`` on a DEP8 scenario is
    TP8); the note says so where a value of the file's was dropped, else None."""
    import os

    from planner.catalog import load_catalog, model_family
    from planner.scenario import load_scenario

    if args.data_dir and not os.path.isdir(args.data_dir):
        raise PlannerError(f"--data-dir {args.data_dir}: not a folder")
    cat = load_catalog(args.data_dir)
    sc = _with_overrides(load_scenario(args.scenario), args)
    fw_arg, rel_arg = checked_release(args.framework, None, args, cat, "--framework")
    dep = sc.resolve_deployment(
        args.gpu,
        fw_arg,
        args.precision,
        args.tp,
        args.pp,
        args.kv_precision,
        ep=args.ep,
        attention_dp=args.attention_dp,
        attention_dp_balance=args.attention_dp_balance,
        release=rel_arg.release if rel_arg else None,
        **spec_kwargs(args),
        flags_replace_layout=True,
    )
    note = sc.layout_replaced(args.tp, args.ep, args.attention_dp, dep)
    where = "--framework" if rel_arg else f"{args.scenario}: deployment.release"
    fw_id, release = checked_release(dep.framework, dep.release, args, cat, where)
    m = cat.model(sc.model)
    params, prov, choice = release_params(
        args, cat.gpu(dep.gpu).id, fw_id, dep.precision, release, cat, model_family(m),
        dep.layout, m, where,
    )  # fmt: skip
    rep = sc.build_replica(
        dep.gpu,
        dep.framework,
        dep.precision,
        dep.tp,
        dep.pp,
        dep.kv_precision,
        ep=dep.ep,
        attention_dp=dep.attention_dp,
        attention_dp_balance=dep.attention_dp_balance,
        spec=spec_kwargs(args),
        catalog=cat,
        params=params,
        params_source=prov,
        release=release,
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        context_len=args.max_model_len,
    )
    check_workload_used(args, rep.spec)
    return sc, rep, cat, prov, choice, note


def _rel(choice) -> dict[str, Any]:
    """The release fields of a simulation (its band is not widened: simulate gives none)."""
    return release_fields(choice)[0]


def _kv(rep) -> str | None:
    """The replica's KV precision and where it comes from (given, or the default)."""
    return rep.memory.kv_precision_basis if rep.memory is not None else None


def _assumptions(rep, wl) -> list[str]:
    """The replica's assumptions, and the assumed max_tokens where the engine reserves the
    answer's KV at admission (TensorRT-LLM, SGLang) and the workload does not set it."""
    note = wl.max_output_assumption() if rep.engine.kv_reserve_fraction > 0 else None
    return [*rep.assumptions, *([note] if note else [])]


def _with_overrides(sc, args: argparse.Namespace):
    """The scenario with the command line's traffic and length flags applied."""
    if (
        args.peak_rps is None
        and args.input_tokens is None
        and args.output_tokens is None
        and args.max_output_tokens is None
    ):
        return sc
    from planner.cli._common import parse_length
    from planner.scenario import scenario_from_dict

    d = sc.model_dump(exclude_none=True)
    wl = d["workload"]
    if args.peak_rps is not None:
        from planner.cli.question import apply_peak

        # the rule recommend applies: one --peak-rps over one file, one planned traffic
        apply_peak(wl.setdefault("traffic", {}), args.peak_rps, mean_given=False)
    if args.input_tokens is not None:
        wl["input_tokens"] = parse_length(args.input_tokens, "--input-tokens")
    if args.output_tokens is not None:
        wl["output_tokens"] = parse_length(args.output_tokens, "--output-tokens")
    if args.max_output_tokens is not None:
        wl["max_output_tokens"] = args.max_output_tokens
    return scenario_from_dict(d, where=args.scenario)


def _fit_percentile(sc, args: argparse.Namespace) -> float | None:
    if args.allow_truncation:
        return None
    return args.fit_percentile if args.fit_percentile is not None else sc.constraints.fit_percentile


def _emit(obj: Any, fmt: str, stream=None) -> None:
    from planner.report import emit

    emit(obj, fmt, stream)


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    import math

    out = {}
    for k, v in d.items():
        if hasattr(v, "item"):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        out[k] = v
    return out


def _print_blocks(blocks: list[tuple[str, Any]], fmt: str) -> None:
    out = sys.stdout
    for i, (title, obj) in enumerate(blocks):
        if obj is None or obj == []:
            continue
        if i:
            out.write("\n")
        if title:
            out.write(f"{title}\n")
        _emit(obj, fmt, out)


# --------------------------------------------------------------------------- commands
def cmd_simulate(args: argparse.Namespace) -> int:
    import math

    import numpy as np

    from planner.serving import check_workload_fits, simulate, steady_state
    from planner.serving.answer import answer_for_deployment, engine_knobs

    conflicts = [
        ("--offline", "--concurrency", args.offline and args.concurrency),
        ("--rate", "--concurrency", args.rate is not None and args.concurrency),
        ("--rate", "--offline", args.rate is not None and args.offline),
    ]
    for b, given in (
        ("--rate", args.rate is not None),
        ("--concurrency", bool(args.concurrency)),
        ("--offline", args.offline),
    ):
        if args.replicas is not None and given:
            raise PlannerError(
                f"--replicas would be ignored with {b}: it splits the scenario's peak rate "
                f"over replicas, and {b} sets this replica's traffic itself; drop one"
            )
    for a, b, both in conflicts:
        if both:
            raise PlannerError(
                f"{a} and {b} conflict: choose one traffic mode (open loop at --rate, closed "
                "loop with --concurrency clients, or --offline)"
            )
    if math.floor(args.warmup * args.requests) >= args.requests:
        raise PlannerError(
            f"--warmup {args.warmup:g} leaves none of the {args.requests} requests to score"
        )
    from planner.cli import disagg

    if (dsc := disagg.disagg_scenario(args)) is not None:
        return disagg.simulate(args, _with_overrides(dsc, args))
    sc, rep, _cat, prov, choice, note = _context(args)
    wl = sc.require_workload()
    check_workload_fits(rep, wl, _fit_percentile(sc, args))
    if wl.offline and (args.rate is not None or args.concurrency):
        flag = "--rate" if args.rate is not None else "--concurrency"
        raise PlannerError(
            f"{flag} would be ignored: the scenario's workload has offline: true (every request "
            f"queued at t=0); drop {flag}, or set offline: false for open- or closed-loop traffic"
        )
    offline = args.offline or wl.offline
    if offline and args.replicas is not None:
        raise PlannerError(
            "--replicas would be ignored: the scenario's workload has offline: true (every "
            "request queued at t=0, no arrival rate to split); drop --replicas"
        )
    replicas, replicas_from = args.replicas, "--replicas"
    ans = None
    if replicas is None and args.rate is None and not offline and not args.concurrency:
        # as many replicas as 'planner capacity' sizes for the peak (with headroom): the same
        # function, requests and seed, so the two commands print the same fleet and max rate
        try:
            ans = answer_for_deployment(
                rep, wl, sc.slo, headroom=sc.constraints.headroom, n_requests=CAPACITY_REQUESTS,
                seed=args.seed, fit_percentile=_fit_percentile(sc, args),
            )  # fmt: skip
        except PlannerError as e:
            replicas_from = f"1 (no replica count meets the SLO: {e})"
        else:
            replicas = ans.replicas
            replicas_from = (
                f"capacity search: {ans.max_rate_rps:.3g} req/s per replica within the SLO, "
                f"headroom {sc.constraints.headroom:g}"
            )
    replicas = replicas or 1
    rate = args.rate if args.rate is not None else wl.traffic.peak() / replicas
    if not offline and not args.concurrency and not (math.isfinite(rate) and rate > 0):
        raise PlannerError(
            f"arrival rate {rate:g} req/s is not a finite number > 0; set the scenario's "
            "traffic (mean_rps / peak_rps) or pass --rate"
        )
    rng = np.random.default_rng(args.seed)
    res = simulate(
        rep,
        wl,
        rng=rng,
        n_requests=args.requests,
        rate_rps=rate,
        concurrency=args.concurrency,
        static_batching=True if args.static else None,
        offline=offline,
    )
    s = res.summary(sc.slo, warmup_frac=args.warmup)
    fp = steady_state(rep, wl, rate)
    mode = (
        "offline"
        if offline
        else (f"closed loop, {args.concurrency} clients" if args.concurrency else "open loop")
    )
    head = {
        "scenario": sc.name or args.scenario,
        "replica": rep.label(),
        **({"layout_note": note} if note else {}),  # the file's layout replaced by the flags
        "kv_precision": _kv(rep),
        "params": prov,
        **_rel(choice),
        **engine_knobs(rep).as_dict(),
        "mode": mode + (", static batching" if res.mode == "static" else ""),
        "rate_rps": None if (offline or args.concurrency) else rate,
        "replicas": None if args.rate is not None else replicas,
        "replicas_from": None if args.rate is not None else replicas_from,
        # the deployment's answer (planner capacity's numbers) when this run used its fleet
        **({k: v for k, v in ans.fields().items() if k not in RUN_OWN} if ans else {}),
        "requests": s["requests"],
        "slo": sc.slo.describe(),
        "slo_ok": s.get("slo_ok"),
        "slo_attainment": s.get("slo_attainment"),
        "goodput_rps": s.get("goodput_rps"),
        "throughput_rps": s["throughput_rps"],
        # the benchmark clients' convention: below the offered rate by the drain after the
        # last arrival (s13 user test: 9.96 printed for 11.57 offered read as a shortfall)
        "throughput_basis": "requests / (last completion - first arrival): the drain after "
        "the last arrival included, as benchmark clients count it",
        "output_tok_s": s["output_tok_s"],
        "output_tok_s_per_gpu": s["output_tok_s_per_gpu"],
        "total_tok_s": s["total_tok_s"],
        "total_tok_s_per_gpu": s["total_tok_s_per_gpu"],
        "saturation_rps": fp.saturation_rps,
        "overloaded": bool(not offline and not args.concurrency and rate >= fp.saturation_rps),
        "batch_size_mean": s["batch_size_mean"],
        "batch_size_p99": s["batch_size_p99"],
        "kv_util_mean": s["kv_util_mean"],
        "kv_util_max": s["kv_util_max"],
        "preemptions": s["preemptions"],
        "duration_s": s["duration_s"],
    }
    head["truncated_requests"] = int(s.get("truncated_requests", 0))
    table = res.percentile_table(warmup_frac=args.warmup)
    if args.format == "json":
        _emit(
            {
                **_clean(head),
                "deployment": deployment_fields(rep),
                "percentiles": [_clean(r) for r in table],
                "assumptions": _assumptions(rep, wl),
            },
            "json",
        )
    elif args.format == "csv":
        trunc = head["truncated_requests"]
        _emit([{**_clean(r), "truncated_requests": trunc} for r in table], "csv")
    else:
        head["assumptions"] = "; ".join(_assumptions(rep, wl)) or "-"
        say_release(args, choice)
        _print_blocks(
            [("", _clean(head)), ("latency percentiles", [_clean(r) for r in table])], "table"
        )
    return 0


def cmd_capacity(args: argparse.Namespace) -> int:
    import numpy as np

    from planner.catalog.profile import error_band, load_profile
    from planner.cli import disagg
    from planner.serving import compare_tp, size_fleet, throughput_latency_curve
    from planner.serving.answer import CURVE_REQUESTS, answer_for_deployment, curve_noise

    if args.no_curve and args.format == "csv":
        raise PlannerError(
            "--no-curve would be ignored: the CSV output is the curve; drop --no-curve or use "
            "--format table or json"
        )
    if (dsc := disagg.disagg_scenario(args)) is not None:
        return disagg.capacity(args, _with_overrides(dsc, args))
    sc, rep, cat, prov, choice, note = _context(args)
    lay = rep.the_layout
    if args.compare_tp and (lay.ep > 1 or lay.attention_dp > 1):
        raise PlannerError(
            f"--compare-tp compares plain TP replicas, and this deployment is {lay.label} "
            "(expert / attention data-parallel): size each layout with planner capacity "
            "--tp N [--ep N --attention-dp N], or rank them with planner recommend"
        )
    wl = sc.require_workload()
    headroom = args.headroom if args.headroom is not None else sc.constraints.headroom
    fit = _fit_percentile(sc, args)
    # the one answer for this deployment (recommend, simulate and What-if print the same)
    ans = answer_for_deployment(
        rep, wl, sc.slo, headroom=headroom, n_requests=args.requests, seed=args.seed,
        fit_percentile=fit,
    )  # fmt: skip
    peak = wl.traffic.peak()
    fleet = size_fleet(
        ans.max_rate_rps,
        peak,
        headroom=headroom,
        gpus_per_replica=rep.num_gpus,
        hourly_rps=wl.traffic.hourly_rps(),
    )
    s = ans.at_max_rate
    prof = load_profile(args.calibration)
    rel_out, band = release_fields(
        choice, error_band(prov, prof, rep.sm.gpu.vendor, rep.engine.framework or None), prof
    )
    rate_lo, rate_hi = band.speed_interval(ans.max_rate_rps)
    rate_lo, rate_hi = acceptance_scaled(rep.spec, rate_lo, rate_hi)
    gpus_band = [  # fewer GPUs at the band's high capacity, more at its low one
        size_fleet(r, peak, headroom=headroom, gpus_per_replica=rep.num_gpus)["num_gpus"]
        if r is not None and r > 0
        else None
        for r in (rate_hi, rate_lo)
    ]
    out: dict[str, Any] = {
        "scenario": sc.name or args.scenario,
        "replica": rep.label(),
        **({"layout_note": note} if note else {}),  # the file's layout replaced by the flags
        "kv_precision": _kv(rep),
        "params": prov,
        **rel_out,
        "slo": sc.slo.describe(),
        **ans.fields(),
        "max_rate_per_replica_low": rate_lo,
        "max_rate_per_replica_high": rate_hi,
        "max_rate_per_gpu": ans.max_rate_rps / rep.num_gpus,
        "limited_by": ans.limited_by,
        "saturation_rps": ans.saturation_rps,
        "peak_rps": peak,
        "headroom": headroom,
        "gpus_per_replica": rep.num_gpus,
        "num_gpus_low": gpus_band[0],
        "num_gpus_high": gpus_band[1],
        "error_band": band.describe(),
        "utilization_at_peak": fleet["utilization_at_peak"],
        "gpu_hours_per_day": fleet["gpu_hours_per_day"],
        "gpu_hours_per_day_autoscaled": fleet.get("gpu_hours_per_day_autoscaled"),
        "ttft_p50_s": s.get("ttft_p50_s"),
        "ttft_p99_s": s.get("ttft_p99_s"),
        "tpot_p50_s": s.get("tpot_p50_s"),
        "tpot_p99_s": s.get("tpot_p99_s"),
        "e2e_p99_s": s.get("e2e_p99_s"),
        "slo_attainment": s.get("slo_attainment"),
        "batch_size_mean": s.get("batch_size_mean"),
        "kv_util_mean": s.get("kv_util_mean"),
        "truncated_requests": int(s.get("truncated_requests", 0)),
        "zero_load": ans.zero_load,
    }
    from planner.catalog.ceiling import ceiling_check

    # the prediction against the best published output tok/s per GPU (no ranking changes)
    out.update(
        ceiling_check(
            out["output_tok_s_per_gpu"], rep.sm.gpu.id, rep.sm.model.id,
            rep.engine.framework, low_ratio=band.low_ratio,
        )
    )  # fmt: skip
    curve: list[dict[str, Any]] = []
    if not args.no_curve or args.format == "csv":
        curve = throughput_latency_curve(
            rep, wl, slo=sc.slo, rng=np.random.default_rng(args.seed), **CURVE_REQUESTS
        )
        noise = [curve_noise(curve, k) for k in ("ttft_p99_s", "tpot_p99_s")]
        out["curve_noise"] = "; ".join(n for n in noise if n) or None
        knee = next((r for r in curve if r["is_knee"]), None)
        if knee:
            out["knee_concurrency"] = knee["concurrency"]
            out["knee_output_tok_s"] = knee["output_tok_s"]
            out["knee_e2e_mean_s"] = knee["e2e_mean_s"]
    tp_rows = None
    if args.compare_tp:
        dep = sc.resolve_deployment(
            args.gpu, args.framework, args.precision, args.tp, args.pp, args.kv_precision,
            ep=args.ep, attention_dp=args.attention_dp, flags_replace_layout=True,
        )  # fmt: skip
        from planner.scenario import EngineOverrides

        eng = {
            **sc.serving.kwargs(),
            **EngineOverrides(
                max_num_seqs=args.max_num_seqs,
                max_num_batched_tokens=args.max_num_batched_tokens,
                context_len=args.max_model_len,
            ).kwargs(),
            **replica_spec_kwargs(rep),  # the same speculative decoding at every TP
        }
        tp_rows = compare_tp(
            sc.model,
            dep.gpu,
            dep.precision,
            dep.framework,
            wl,
            sc.slo,
            tps=args.compare_tp,
            pp=dep.pp,
            kv_precision=dep.kv_precision,
            peak_rps=peak,
            headroom=headroom,
            catalog=cat,
            params=rep.sm.params,
            n_requests=args.requests,
            engine=eng,
            seed=args.seed,
            fit_percentile=fit,
        )
    if args.format == "csv":
        trunc = out["truncated_requests"]
        _emit([{**_clean(r), "truncated_requests": trunc} for r in curve], "csv")
        return 0
    if args.format == "json":
        out["curve"] = [_clean(r) for r in curve]
        if tp_rows is not None:
            out["compare_tp"] = [_clean(r) for r in tp_rows]
        out["assumptions"] = _assumptions(rep, wl)
        out["deployment"] = deployment_fields(rep)
        _emit(_clean(out), "json")
        return 0
    zl = out.pop("zero_load")
    ceiling_note = out.pop("ceiling_note")
    for k in [k for k in out if "ceiling" in k]:  # JSON's; the table prints the line below
        out.pop(k)
    for k, v in zl.items():
        out[f"zero_load_{k}"] = v
    out["assumptions"] = "; ".join(_assumptions(rep, wl)) or "-"
    blocks: list[tuple[str, Any]] = [("", _clean(out))]
    if curve:
        blocks.append(
            (
                "throughput-latency curve (closed loop; * = knee, max tokens/s per second of E2E)",
                [{**_clean(r), "is_knee": "*" if r["is_knee"] else ""} for r in curve],
            )
        )
    if tp_rows is not None:
        blocks.append(("one big-TP replica vs several small ones", [_clean(r) for r in tp_rows]))
    say_release(args, choice)
    _print_blocks(blocks, "table")
    if ceiling_note:
        print(f"\nbeyond measurements: {ceiling_note}")
    return 0
