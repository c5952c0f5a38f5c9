"""``planner simulate`` / ``planner capacity`` for a scenario whose deployment is
disaggregated (``deployment: {disaggregated: {prefill: ..., decode: ..., x, y}}``): the
composed simulation (:func:`planner.serving.disagg.simulate_disagg`) and the xPyD sizing
(:func:`planner.serving.disagg_sizing.size_disagg`)."""

from __future__ import annotations

import argparse
from typing import Any

from planner.errors import PlannerError


def _emit(obj: Any, fmt: str, stream=None) -> None:
    from planner.report import emit

    emit(obj, fmt, stream)


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    """JSON-safe values: numpy scalars as Python numbers, non-finite floats as None."""
    import math

    out = {}
    for k, v in d.items():
        v = v.item() if hasattr(v, "item") else v
        out[k] = None if isinstance(v, float) and not math.isfinite(v) else v
    return out


def _print_blocks(blocks: list[tuple[str, Any]], fmt: str) -> None:
    import sys

    for i, (title, obj) in enumerate(blocks):
        if i:
            sys.stdout.write("\n")
        if title:
            sys.stdout.write(f"{title}\n")
        _emit(obj, fmt, sys.stdout)


#: flags of simulate / capacity that shape one aggregated replica; the pools of a
#: disaggregated scenario name their own (deployment.disaggregated.prefill / decode), so a
#: flag would be dropped without a word: refused instead (flag, attribute, unset value)
_POOL_FLAGS = (
    ("--kv-precision", "kv_precision", None),
    ("--max-model-len", "max_model_len", None),
    ("--attention-dp-balance", "attention_dp_balance", None),
    ("--compare-tp", "compare_tp", None),
    ("--fit-percentile", "fit_percentile", None),
    ("--allow-truncation", "allow_truncation", False),
)


def disagg_scenario(args: argparse.Namespace):
    """The scenario when its deployment is disaggregated and no ``--gpu`` / ``--framework``
    / ``--precision`` / layout flag replaces it with one aggregated replica; else None (the
    usual path). The caller applies the command line's traffic and length flags to it (as
    to an aggregated scenario); a flag the pools do not take is refused in one line."""
    from planner.scenario import load_scenario

    sc = load_scenario(args.scenario)
    if sc.deployment.disaggregated is None:
        return None
    given = [k for k in ("gpu", "framework", "precision", "tp", "pp", "ep", "attention_dp")
             if getattr(args, k, None)]  # fmt: skip
    if given:  # the flags name one aggregated replica: they replace the pools (the
        return None  # recommender's reproduce lines rely on it)
    for flag, attr, unset in _POOL_FLAGS:
        v = getattr(args, attr, unset)
        if v is not unset and v != unset:
            raise PlannerError(
                f"{flag}: {args.scenario} is disaggregated (deployment.disaggregated), and "
                f"{flag} does not apply to its pools; set the pools' fields in the file, or "
                "give --gpu/--framework/--precision for one aggregated replica"
            )
    return sc


def _spec(args: argparse.Namespace, sc) -> dict[str, Any]:
    """Speculative decoding for both pools: the command line's flags over the scenario's
    ``deployment`` fields (as for an aggregated replica); empty when neither sets any."""
    from planner.cli.speculative import spec_kwargs

    out = sc.deployment.spec_over(**spec_kwargs(args))
    return {k: v for k, v in out.items() if v is not None}


def _build(args: argparse.Namespace, sc):
    from planner.catalog import load_catalog
    from planner.cli.speculative import check_workload_used

    cat = load_catalog(args.data_dir)
    d = sc.build_disagg(
        catalog=cat,
        profile_path=args.calibration,
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        **_spec(args, sc),
    )
    check_workload_used(args, d.decode.spec)
    return d


def _spec_fields(d) -> dict[str, Any]:
    """The speculative setting both pools run (decode's: the one that advances requests)."""
    s = d.decode.spec
    if s is None:
        return {"spec_method": None, "spec_tokens": None, "acceptance_length": None}
    return {
        "spec_method": s.method,
        "spec_tokens": s.spec_tokens,
        "acceptance_length": s.acceptance_length,
        "speculative": s.label(),
    }


def _stages(res) -> dict[str, Any]:
    import numpy as np

    m = res.meta["disagg"]
    return {
        "prefill_s_mean": float(np.mean(m["prefill_done_s"] - res.arrival_s)),
        "transfer_s_mean": float(np.mean(m["transfer_done_s"] - m["prefill_done_s"])),
        "decode_first_step_s_mean": float(np.mean(res.first_token_s - m["transfer_done_s"])),
        "transfer_mb_mean": float(np.mean(m["transfer_bytes"]) / 1e6),
        "link": m["link_kind"],
        "link_gb_s_per_rank": m["link_bytes_s"] / 1e9,
    }


def simulate(args: argparse.Namespace, sc) -> int:
    """``planner simulate`` of one xPyD group."""
    import numpy as np

    from planner.serving.disagg import sample_disagg_requests, simulate_disagg
    from planner.serving.disagg_sizing import closed_loop

    if args.offline or args.static or (args.concurrency and args.rate is not None):
        raise PlannerError(
            "--offline / --static / --rate with --concurrency: a disaggregated deployment is "
            "simulated open loop at --rate, or as a closed loop of --concurrency clients"
        )
    d = _build(args, sc)
    wl = sc.require_workload()
    groups = args.replicas or 1
    rate = args.rate if args.rate is not None else wl.traffic.peak() / groups
    rng = np.random.default_rng(args.seed)
    if args.concurrency:  # a closed loop, by Little's law over the open-loop composition
        reqs = sample_disagg_requests(d, wl, args.requests, rng, 1.0)
        rate, res = closed_loop(d, reqs, float(args.concurrency))
        groups = 1
    else:
        reqs = sample_disagg_requests(d, wl, args.requests, rng, rate)
        res = simulate_disagg(d, reqs)
    s = res.summary(sc.slo, warmup_frac=args.warmup)
    head = {
        "scenario": sc.name or args.scenario,
        "deployment": d.label(),
        **_spec_fields(d),
        "num_gpus": d.num_gpus,
        "mode": (
            f"closed loop of {args.concurrency} clients (Little's law), "
            if args.concurrency
            else "open loop, "
        )
        + "disaggregated (TTFT = prefill queue + prefill + transfer + first decode step)",
        "rate_rps": rate,
        "groups": groups,
        "requests": s["requests"],
        "slo": sc.slo.describe(),
        "slo_ok": s.get("slo_ok"),
        "slo_attainment": s.get("slo_attainment"),
        "throughput_rps": s["throughput_rps"],
        "output_tok_s_per_gpu": s["output_tok_s_per_gpu"],
        "total_tok_s_per_gpu": s["total_tok_s_per_gpu"],
        "preemptions": s["preemptions"],
        **_stages(res),
    }
    table = [r for r in res.percentile_table(warmup_frac=args.warmup) if r["metric"] != "ITL"]
    assumptions = [*d.prefill.assumptions, *d.decode.assumptions]
    if args.format == "json":
        _emit(
            {
                **_clean(head),
                "disaggregated": True,
                "prefill": _pool(d.spec.prefill, d.spec.x),
                "decode": _pool(d.spec.decode, d.spec.y),
                "percentiles": [_clean(r) for r in table],
                "assumptions": assumptions,
            },
            "json",
        )
    elif args.format == "csv":
        _emit([_clean(r) for r in table], "csv")
    else:
        head["assumptions"] = "; ".join(assumptions) or "-"
        _print_blocks(
            [("", _clean(head)), ("latency percentiles", [_clean(r) for r in table])], "table"
        )
    return 0


def _pool(p, count: int) -> dict[str, Any]:
    return {**p.model_dump(exclude_none=True), "count": count, "layout": p.layout.label}


def capacity(args: argparse.Namespace, sc) -> int:
    """``planner capacity``: each pool's rate, x:y and the groups for the peak."""
    from planner.serving.disagg_sizing import size_disagg

    d = _build(args, sc)
    wl = sc.require_workload()
    headroom = args.headroom if args.headroom is not None else sc.constraints.headroom
    need = wl.traffic.peak() * (1 + headroom)
    sz = size_disagg(d, wl, sc.slo, need, n_requests=args.requests, seed=args.seed)
    spec = d.spec.model_copy(update={"x": sz.x, "y": sz.y})
    out = {
        "scenario": sc.name or args.scenario,
        "deployment": spec.label(),
        **_spec_fields(d),
        "need_rps": need,
        "prefill_rps_per_replica": sz.prefill_rps,
        "decode_rps_per_replica": sz.decode_rps,
        "x": sz.x,
        "y": sz.y,
        "group_rps": sz.group_rps,
        "groups": sz.groups,
        "num_gpus": sz.num_gpus,
        "transfer_s": sz.transfer_s,
        "decode_ttft_s": sz.decode_ttft_s,
        "prefill_ttft_budget_s": sz.prefill_budget_s,
        **{f"check_{k}": v for k, v in sz.check.items()},
    }
    if args.format == "json":
        _emit(
            {
                **_clean(out),
                "disaggregated": True,
                "prefill": _pool(d.spec.prefill, sz.x),
                "decode": _pool(d.spec.decode, sz.y),
            },
            "json",
        )
    else:
        _print_blocks([("", _clean(out))], "table" if args.format != "csv" else "csv")
    return 0
