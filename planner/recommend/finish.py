"""Everything a recommendation reports: rates, latencies, money, energy, quality, the Pareto
front and the reason the winner wins."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..catalog.profile import model_family
from ..catalog.release_gap import generation_fields
from ..cost import (
    ENERGY_LABEL,
    energy_per_token,
    fleet_cost,
    load_ownership,
    quality_delta,
    token_costs,
)
from ..errors import PlannerError
from ..fmt import count
from ..serving import WorkloadCache, size_fleet
from ..serving.answer import LATENCY_KEYS, engine_knobs
from .objective import Load, Objective, Screened, _max_rate, bracket
from .options import Rejection, layout_text, licence_note

# ---------------------------------------------------------------------- the full result
_LIMIT_TEXT = {
    "kv_cache": "memory (KV cache full)",
    "max_num_seqs": "max_num_seqs (engine's sequence cap)",
    "token_budget": "compute (token budget per step)",
}


def _binding(s: Screened, need: float) -> str:
    k, probe = s.replicas, s.probe
    if k == 1:
        limit = _LIMIT_TEXT.get(probe.saturation_limit, probe.saturation_limit)
        return (
            f"none at this traffic: one replica carries the whole planned load "
            f"({need:.3g} req/s); it would saturate at {s.saturation_rps:.3g} req/s on {limit}"
        )
    fail = need / (k - 1) if k > 1 else None
    if fail is not None and fail <= probe.cap_rps * (1 + 1e-9) and fail in probe.summaries:
        # its percentiles (run again if it stopped once the miss was certain)
        return probe.binding(probe.run(fail, exact=True))
    return f"throughput: {_LIMIT_TEXT.get(probe.saturation_limit, probe.saturation_limit)}"


def engine_settings(e: Any, attention_dp: int = 1) -> dict[str, Any]:
    """The engine settings an option was simulated with, as a launch command sets them:
    sequence and token limits per attention rank (what ``--max-num-seqs`` takes), the memory
    fraction in the engine's own sense (``data/frameworks.yaml``), the context limit
    [tokens], chunked prefill and prefix caching."""
    return {
        "max_num_seqs": e.flag_limits(attention_dp)[0],
        "max_num_batched_tokens": e.flag_limits(attention_dp)[1],
        "memory_utilization": e.memory_utilization,
        "max_model_len": e.context_limit_tokens,
        "chunked_prefill": e.chunked_prefill,
        "prefix_caching": e.prefix_caching,
        "block_size_tokens": e.block_size_tokens,
    }


def finish(
    s: Screened,
    cache: WorkloadCache,
    load: Load,
    headroom: float,
    ownership: Any,
    refine: bool,
    reproduce: str = "",
) -> None:
    """Everything a recommendation reports: rates, latencies, money, energy, quality."""
    from ..engine.phases import decode_step

    opt, rep, probe = s.opt, s.replica, s.probe
    need, peak, hourly = load.need_rps, load.peak_rps, load.hourly_rps
    mean_in, mean_out = load.mean_input_tokens, load.mean_output_tokens
    gpr = opt.gpus_per_replica
    # the max rate and its latencies as every command finds them (planner.serving.answer)
    mr = _max_rate(s, load, True)
    at_max = probe.full(mr)
    lo, hi = bracket(s, need)
    fl = size_fleet(mr, peak, headroom=headroom, gpus_per_replica=gpr, hourly_rps=hourly)
    replicas = fl["replicas"]
    num_gpus = fl["num_gpus"]
    # latencies at the load the fleet is sized for: peak x (1 + headroom) per replica
    planned = probe.full(need / s.replicas)
    mem = rep.memory
    batch = max(1.0, float(planned.get("batch_size_mean", 1.0)))
    ctx = cache.shape(rep)[3]
    bound = decode_step(rep.sm, batch=batch, context_len=ctx).bound
    r: dict[str, Any] = {
        "rank": 0,
        **opt.ids(),
        "gpus_per_replica": gpr,
        "replicas": replicas,
        "num_gpus": num_gpus,
        "max_rate_per_replica": mr,
        "max_rate_bracket_rps": [lo, hi],
        "max_rate_basis": "the highest simulated rate that met the SLO (bisected to 2 % "
        "between peak x headroom / replicas and peak x headroom / (replicas - 1))",
        **{k[:-2] + "_at_max_rate_s": at_max.get(k) for k in LATENCY_KEYS},
        **{k[:-2] + "_at_planned_s": planned.get(k) for k in LATENCY_KEYS},
        **engine_knobs(rep).as_dict(),
        "saturation_rps_per_replica": s.saturation_rps,
        "utilization_at_peak": fl["utilization_at_peak"],
        "latency_at_rps": need / s.replicas,
        "ttft_p99_s": planned.get("ttft_p99_s"),
        "tpot_p99_s": planned.get("tpot_p99_s"),
        "e2e_p99_s": planned.get("e2e_p99_s"),
        "ttft_p50_s": planned.get("ttft_p50_s"),
        "tpot_p50_s": planned.get("tpot_p50_s"),
        "output_tok_s_per_gpu_at_peak": planned.get("output_tok_s_per_gpu"),
        "binding_constraint": _binding(s, need),
        "decode_bound": bound,
        "weights_gb_per_gpu": mem.weight_bytes_per_gpu / 1e9 if mem else None,
        "kv_cache_gb_per_gpu": rep.engine.kv_capacity_tokens
        / opt.layout.attention_dp
        * mem.kv_cache_bytes_per_token
        / 1e9
        if mem
        else None,
        "kv_util_at_peak": planned.get("kv_util_mean"),
        "memory_headroom": 1.0 - float(planned.get("kv_util_max", 0.0)),
        "max_concurrent_sequences": rep.engine.max_num_seqs,
        "engine_settings": engine_settings(rep.engine, opt.layout.attention_dp),
        "gpu_hours_per_day": fl["gpu_hours_per_day"],
        "gpu_hours_per_day_autoscaled": fl.get("gpu_hours_per_day_autoscaled"),
        "output_tok_s_per_gpu": mr * mean_out / gpr,
        "provenance": s.provenance,
        "reproduce": reproduce,
        "truncated_requests": probe.truncated_requests,
        "simulations": probe.simulations,
    }
    req_day = float(fl.get("requests_per_day", float(np.mean(hourly)) * 86400))
    if s.price is not None:
        pq = s.price
        fc = fleet_cost(num_gpus, pq, gpu_hours_per_day=fl.get("gpu_hours_per_day_autoscaled"))
        tc = token_costs(
            fc,
            output_tokens_per_s_full_load=replicas * mr * mean_out,
            total_tokens_per_s_full_load=replicas * mr * (mean_in + mean_out),
            output_tokens_per_day=req_day * mean_out,
            total_tokens_per_day=req_day * (mean_in + mean_out),
        )
        fixed_day = fc.usd_per_day
        r.update(
            usd_per_gpu_hour=pq.usd_per_gpu_hour,
            usd_per_hour=fc.usd_per_hour,
            usd_per_month=fc.usd_per_month,
            usd_per_month_autoscaled=fc.usd_per_month_autoscaled,
            usd_per_mtok_output=fixed_day / (req_day * mean_out) * 1e6,
            usd_per_mtok_total=fixed_day / (req_day * (mean_in + mean_out)) * 1e6,
            usd_per_mtok_output_autoscaled=tc.usd_per_mtok_output_planned,
            usd_per_mtok_output_full_load=tc.usd_per_mtok_output_full_load,
            usd_per_mtok_total_full_load=tc.usd_per_mtok_total_full_load,
            price_source=pq.source,
            price_provider=pq.provider,
            price_as_of=str(pq.as_of) if pq.as_of else None,
            price_rule=pq.rule,
            price_rows=pq.spread.n_rows if pq.spread is not None else 1,
            price_warnings=list(pq.warnings),
            price_notes=pq.notes,
            price_spread=(
                {
                    "kind": pq.spread.kind,
                    "n_rows": pq.spread.n_rows,
                    "min": pq.spread.min_usd_per_gpu_hour,
                    "median": pq.spread.median_usd_per_gpu_hour,
                    "max": pq.spread.max_usd_per_gpu_hour,
                }
                if pq.spread is not None
                else None
            ),
        )
    else:
        r.update(
            usd_per_gpu_hour=None,
            usd_per_hour=None,
            usd_per_month=None,
            usd_per_mtok_output=None,
            usd_per_mtok_total=None,
            price_source="no price in data/prices.yaml",
            price_rows=0,
        )
    # energy at the day's average load (estimate from TDP x utilisation)
    util = min(1.0, float(np.mean(hourly)) / (replicas * mr))
    tps_gpu = float(np.mean(hourly)) * mean_out / num_gpus
    try:
        own = ownership or load_ownership()
        en = energy_per_token(
            opt.gpu.tdp_w,
            util,
            tps_gpu,
            pue=own.pue.value,
            idle_power_fraction=own.idle_power_fraction.value,
            host_power_factor=own.host_power_factor.value,
            num_gpus=num_gpus,
        )
        r.update(
            joules_per_token=en.joules_per_token,
            kwh_per_day=en.kwh_per_day,
            energy_basis=f"{ENERGY_LABEL}, utilisation {util:.2f} (daily average)",
        )
    except PlannerError as e:
        r.update(joules_per_token=None, kwh_per_day=None, energy_basis=str(e))
    if "classes" in planned:  # a pool shared by request classes: each class's verdict
        r["per_class"] = planned["classes"]
    r["quality"], r["quality_detail"] = _quality_text(
        rep.sm.model.id, opt.precision.id, rep.sm.model.native_precision, opt.gpu.arch
    )
    _bands(r, s, need, gpr)
    _ceiling(r, s, rep.sm.model.id)
    r.update(generation_fields(opt.framework.id, opt.release, opt.gpu.id, opt.precision.id,
                               model_family(rep.sm.model)))  # fmt: skip
    r["numbers"] = (
        "simulated: max_rate_per_replica, replicas, P99/P50 latencies, kv util; "
        "analytic: saturation_rps_per_replica; estimate: joules_per_token, kwh_per_day"
    )
    r["assumptions"] = list(rep.assumptions)
    r["licence_note"] = licence_note(opt.gpu) or None  # GeForce: not for a datacenter
    s.result.update(r)
    s.result.pop("max_rate_rps", None)


def _quality_text(
    model_id: str,
    precision_id: str,
    native_precision: str | None = None,
    gpu_arch: str | None = None,
) -> tuple[str, str]:
    """(short, full) quality of the weights: the published delta (of the fp4 format the
    GPU's architecture computes), "baseline" for an unquantized format or the model's
    released one, or "not measured"."""
    try:
        q = quality_delta(
            model_id, precision_id, native_precision=native_precision, gpu_arch=gpu_arch
        )
    except PlannerError as e:
        return "not measured", str(e)
    if q.status == "baseline":
        return "baseline", q.message
    if q.status != "measured":
        return "not measured", q.message
    short = "; ".join(
        f"{r.benchmark} "
        + (f"{r.delta_points:+.2f} pts" if r.delta_points is not None else f"{r.delta_pct:+.1f}%")
        for r in q.rows[:2]
    )
    return short, q.message


def _bands(r: dict[str, Any], s: Screened, need: float, gpr: int) -> None:
    """GPUs and $/M output tokens as low-high from the performance error band of the
    option's provenance tier (:func:`planner.catalog.profile.error_band`): the true
    capacity lies in ``[rate x low_ratio, rate x high_ratio]`` for ~80 % of held-out rows,
    so the GPUs needed (and $/M, which scales with them) lie in the inverse interval."""
    from ..catalog.profile import error_band

    try:
        band = error_band(s.provenance, None, s.opt.gpu.vendor, s.opt.framework.id)
    except PlannerError:
        band = None
    mr = r["max_rate_per_replica"]
    keys = ("num_gpus_low", "num_gpus_high", "usd_per_mtok_output_low", "usd_per_mtok_output_high")
    if band is None or band.low_ratio is None or band.high_ratio is None or not mr > 0:
        r.update(dict.fromkeys(keys), error_band=None)
        return
    n, mtok = r["num_gpus"], r.get("usd_per_mtok_output")
    low, high = gpu_band(need, mr, band.low_ratio, band.high_ratio, gpr, n)
    r.update(
        num_gpus_low=low,
        num_gpus_high=high,
        usd_per_mtok_output_low=mtok * low / n if mtok is not None else None,
        usd_per_mtok_output_high=mtok * high / n if mtok is not None else None,
        error_band={
            "low_ratio": band.low_ratio,
            "high_ratio": band.high_ratio,
            "tier": band.tier,
            "n_rows": band.n_rows,
            "group": band.group,
            "note": band.note,
        },
    )


def _ceiling(r: dict[str, Any], s: Screened, model_id: str) -> None:
    """The predicted output tok/s per GPU against the best published measurement of the
    option's GPU and model (:func:`planner.catalog.ceiling.ceiling_check`): the JSON fields
    and, when far above it (or nothing is published), one line; an option ranked at its
    band's pessimistic edge for it (:mod:`planner.recommend.beyond`) says so there."""
    from ..catalog.ceiling import ceiling_check
    from .beyond import edge_text

    band = r.get("error_band") or {}
    r.update(
        ceiling_check(
            r.get("output_tok_s_per_gpu"),
            s.opt.gpu.id,
            model_id,
            s.opt.framework.id,
            low_ratio=band.get("low_ratio"),
        )
    )
    if r.get("ceiling_note"):
        r["ceiling_note"] += edge_text(s.result)


def gpu_band(
    need_rps: float,
    max_rate_rps: float,
    low_ratio: float,
    high_ratio: float,
    gpus_per_replica: int,
    num_gpus: int,
) -> tuple[int, int]:
    """(low, high) GPUs for a planned rate when the true per-replica capacity lies in
    ``[max_rate x low_ratio, max_rate x high_ratio]``: ``ceil(need / (max_rate x high_ratio))``
    and ``ceil(need / (max_rate x low_ratio))`` replicas x ``gpus_per_replica``, widened to
    hold ``num_gpus`` (the point answer).

    Parameters
    ----------
    need_rps : planned rate, peak x (1 + headroom) [req/s]
    max_rate_rps : the per-replica rate the fleet is sized with [req/s]
    low_ratio, high_ratio : the error band's ends (measured / predicted throughput) [-]
    gpus_per_replica : [-]
    num_gpus : the fleet's GPUs at ``max_rate_rps`` [-]
    """
    lo_k = max(1, math.ceil(need_rps / (max_rate_rps * high_ratio) * (1 - 1e-12)))
    hi_k = max(lo_k, math.ceil(need_rps / (max_rate_rps * low_ratio) * (1 - 1e-12)))
    return min(lo_k * gpus_per_replica, num_gpus), max(hi_k * gpus_per_replica, num_gpus)


def ranked_usd_per_mtok(r: dict[str, Any]) -> float:
    """The $/M output tokens an option is ranked at [$/M]: its point value, or, for an option
    ranked at its error band's pessimistic edge (:func:`planner.recommend.beyond.edge_value`),
    the point value times the edge's factor (edge value / point value: the edge fleet over
    the point fleet, or the full-load rate factor)."""
    usd = float(r["usd_per_mtok_output"])
    e = r.get("ranked_at_band_edge")
    if e and e.get("point_value") and e.get("value") is not None:
        return usd * max(1.0, float(e["value"]) / float(e["point_value"]))
    return usd


def pareto_front(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Options no other option beats on both $/M output tokens and P99 E2E latency.

    The cost compared is the one each option is ranked at (:func:`ranked_usd_per_mtok`): an
    option ranked at its band's pessimistic edge does not dominate the winner on a point
    value the ranking did not trust (it did: TGI fp8 on H200, transferred, $143.85/h
    predicted and ranked at $249.34/h, pushed the winner off the front). Its row keeps the
    point value and adds ``usd_per_mtok_output_ranked``."""
    pts = [
        r
        for r in results
        if r.get("usd_per_mtok_output") is not None and r.get("e2e_p99_s") is not None
    ]
    cost = {id(r): ranked_usd_per_mtok(r) for r in pts}
    front = []
    for r in pts:
        c = cost[id(r)]
        dominated = any(
            o is not r
            and cost[id(o)] <= c
            and o["e2e_p99_s"] <= r["e2e_p99_s"]
            and (cost[id(o)] < c or o["e2e_p99_s"] < r["e2e_p99_s"])
            for o in pts
        )
        if not dominated:
            front.append(
                {
                    k: r[k]
                    for k in (
                        "rank",
                        "gpu",
                        "framework",
                        "precision",
                        "tp",
                        "pp",
                        "usd_per_mtok_output",
                        "e2e_p99_s",
                    )
                }
                | {"layout": layout_with_spec(r)}
                | ({"usd_per_mtok_output_ranked": c} if c != r["usd_per_mtok_output"] else {})
            )
    return sorted(
        front, key=lambda x: x.get("usd_per_mtok_output_ranked", x["usd_per_mtok_output"])
    )


#: speculative methods as the reports name them
SPEC_NAMES = {"mtp": "MTP", "eagle3": "EAGLE-3", "draft": "draft", "ngram": "n-gram"}


def spec_suffix(r: dict[str, Any]) -> str:
    """The speculative setting a result row was sized with, as the reports append it to
    the layout (`` + MTP k=2, AL 2.40``; '' without speculation): a speculative option's
    rate holds only with speculation on, so every line naming it must say so."""
    method = r.get("spec_method")
    if not method:
        return ""
    al = r.get("acceptance_length")
    al_text = f", AL {al:.2f}" if isinstance(al, (int, float)) else ""
    return f" + {SPEC_NAMES.get(method, method)} k={r.get('spec_tokens')}{al_text}"


def layout_with_spec(r: dict[str, Any]) -> str:
    """A result row's layout as the tables show it, with its speculative setting:
    ``DEP4``, ``TP2 + MTP k=2, AL 2.40`` (``layout`` when the row has one, else the
    :func:`~planner.recommend.options.layout_text` form)."""
    return f"{r.get('layout') or layout_text(r)}{spec_suffix(r)}"


def why_winner(top: list[Screened], obj: Objective, rejected: list[Rejection]) -> str:
    w = top[0].result
    lead = (
        f"{w['gpu']} / {w['framework']} / {w['precision']} (kv {w['kv_precision']}) {layout_text(w)}{spec_suffix(w)}"
        + f": {count(w['num_gpus'])} GPUs ({count(w['replicas'])} x {w['gpus_per_replica']})"
    )
    if w.get("usd_per_hour") is not None:
        lead += f", ${w['usd_per_hour']:,.2f}/h, ${w['usd_per_mtok_output']:.3g}/M output tokens"
    lead += (
        f"; one replica sustains {w['max_rate_per_replica']:.3g} req/s within the SLO, "
        f"bound by {w['binding_constraint']}"
    )
    if len(top) > 1:
        r2 = top[1].result
        v1, v2 = top[0].value, top[1].value
        diff = (v2 - v1) / abs(v1) * 100 if v1 else float("nan")
        lead += (
            f". Next best: {r2['gpu']} / {r2['framework']} / {r2['precision']} "
            f"(kv {r2['kv_precision']}) {layout_text(r2)}{spec_suffix(r2)} with "
            f"{obj.show(v2)} ({diff:+.0f}% on {obj.name}"
            + (
                ", ranked at its error band's pessimistic edge: "
                f"{obj.show(r2['ranked_at_band_edge']['point_value'])} as predicted)"
                if r2.get("ranked_at_band_edge")
                else ")"
            )
        )
        lead += tie_break_text(top[0], top[1])
    counts: dict[str, int] = {}
    for r in rejected:
        counts[r.stage] = counts.get(r.stage, 0) + 1
    if counts:
        lead += ". Rejected: " + ", ".join(
            f"{n} {k.replace('_', ' ')}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])
        )
    return lead


def fewer_rows(met: list[Screened], shown: int, top_n: int, rejected: list[Rejection]) -> str:
    """Why fewer rows than ``--top N`` are shown ('' when ``shown >= top_n``): every option
    that met the SLOs (``met``) is on the GPU x engine pairs shown, the table keeps one row
    per pair (its best; ties of the same bits and layout on the same line), and the rest were
    pruned (they could not beat a kept row) or rejected (counted by the why line)."""
    if shown >= top_n:
        return ""
    pairs = list(dict.fromkeys(f"{s.opt.gpu.id} / {s.opt.framework.id}" for s in met))
    counts: dict[str, int] = {}
    for r in rejected:
        counts[r.stage] = counts.get(r.stage, 0) + 1
    pruned = counts.pop("pruned", 0)
    text = (
        f". Top {top_n} asked, {shown} shown: the {count(len(met))} option"
        + ("s" if len(met) != 1 else "")
        + f" that met the SLOs {'are' if len(met) != 1 else 'is'} on {len(pairs)} GPU x engine "
        f"pair{'s' if len(pairs) != 1 else ''} ({', '.join(pairs)}), and the table keeps one row "
        "per pair, its best (the others there: other layouts, precisions or KV formats, not "
        "better)"
    )
    rejected_n = sum(counts.values())
    if pruned or rejected_n:
        text += (
            f"; of the other options {count(pruned)} could not beat a kept row (pruned) and "
            f"{count(rejected_n)} were rejected (the counts above): add GPUs or engines, or "
            "relax the SLOs or constraints, for more rows"
        )
    return text


def tie_break_text(a: Screened, b: Screened) -> str:
    """Why ``a`` ranks above ``b`` when they tie on the objective, cost and GPUs and differ
    in format ('' otherwise): the engine's recommended format, or more bits per weight."""
    ra, rb = a.result, b.result
    same = (
        ra.get("usd_per_hour") == rb.get("usd_per_hour")
        and ra.get("num_gpus") == rb.get("num_gpus")
        and a.opt.precision.id != b.opt.precision.id
    )
    if not same:
        return ""
    mt = a.replica.sm.model.architecture
    fa = a.opt.framework.format_rank(a.opt.gpu.arch, a.opt.precision.id, mt)
    fb = b.opt.framework.format_rank(b.opt.gpu.arch, b.opt.precision.id, mt)
    if fa < fb:
        src = a.opt.framework.recommended_formats_source or "frameworks.yaml"
        return (
            f" (a tie on cost and GPUs: {a.opt.precision.id} first because {a.opt.framework.name}'s"
            f" documentation recommends it on {a.opt.gpu.arch} for {mt} models:"
            f" {src.split(' (')[0]})"
        )
    nat = a.replica.sm.model.native_precision
    if fa == fb and a.opt.precision.id == nat != b.opt.precision.id:
        return (
            f" (a tie on cost and GPUs: {nat} first, the precision {a.replica.sm.model.id}"
            " was released in: its own reference, nothing gained by another format)"
        )
    if a.opt.precision.weight_bits > b.opt.precision.weight_bits:
        return (
            f" (a tie on cost and GPUs: {a.opt.precision.id} first, more bits per weight than "
            f"{b.opt.precision.id}: no quantization loss to accept at the same price)"
        )
    return ""


def nothing_meets(rejected: list[Rejection]) -> str:
    counts: dict[str, int] = {}
    for r in rejected:
        counts[r.stage] = counts.get(r.stage, 0) + 1
    head = (
        "no option meets the scenario ("
        + ", ".join(
            f"{n} {k.replace('_', ' ')}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])
        )
        + ")"
    )
    # the constraint that removed what was left: a budget or a fleet limit before the SLO
    # (the search meets options best first, so the first of a stage is its closest)
    for stage, what in (
        ("budget", "the budget removed every option that meets the SLOs"),
        # a GPU limit acts on the layouts listed (per replica, before memory or the SLO is
        # checked) or on a sized fleet: its example is not known to meet the SLOs
        ("constraint", "a GPU limit removed every option not rejected otherwise"),
        ("slo", "no option meets the SLOs"),
        ("slo_zero_load", "no option meets the SLOs even at zero load"),
        # before price: a card without a price is set aside before its memory is checked, so
        # where every priced option failed memory, memory is what removed what was left
        ("memory", "no option holds the model and the request in memory"),
        ("price", "no option could be priced"),
    ):
        near = [r for r in rejected if r.stage == stage]
        if stage == "memory" and near:
            # the widest replica is the closest to fitting (its reason names what would fit)
            near = sorted(near, key=lambda r: -(r.layout.num_gpus if r.layout else 0))
        if near:
            r = near[0]
            shape = f" {r.layout.label}" if r.layout else ""
            head += f"; {what}, e.g. {r.gpu} {r.framework} {r.precision}{shape}: {r.reason}"
            break
    return head
