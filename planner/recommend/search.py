"""Branch and bound over the option space: screen analytically, simulate only what can still win.

1. **Enumerate** (:func:`planner.recommend.options.enumerate_options`): compatibility rules.
2. **Screen** every option analytically, in microseconds each:
   memory (weights fit; the p-th percentile request, prompt + answer, fits in the KV cache and
   the engine's context); zero-load floors (a decode step at batch 1 is already slower than
   the TPOT target); price; and a lower bound on the objective from the analytic saturation
   rate (a replica never sustains more than ``max_utilization`` x saturation, so
   ``replicas >= ceil(peak x (1 + headroom) / (0.95 x saturation))``).
3. **Search**: options in order of their bound; each is simulated (:class:`CapacityProbe`:
   the smallest replica count whose per-replica rate meets the SLO) only while its bound can
   still beat the N-th best simulated value. Options never simulated are reported as
   ``pruned`` with the bound that ruled them out: a screening figure is never a result.
4. **Finish** the top N (and the Pareto candidates): refine the per-replica maximum rate by
   bisection, simulate the planned load (peak / replicas) for the P99 latencies, and price
   the fleet (fixed and autoscaled with the daily profile), energy and quality.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass
from typing import Any

from ..catalog import Catalog, resolve_params
from ..cost import load_ownership, quote_price
from ..engine.memory import weight_memory
from ..errors import MissingDataError, PlannerError
from ..serving import Replica, build_replica, check_workload_fits
from ..workload import SLO, Workload
from .finish import finish, nothing_meets, pareto_front, why_winner
from .objective import (
    RatioBook,
    Screened,
    _bound,
    _bracket,
    _over_budget,
    _price,
    _prune_reason,
    _value,
    _value_text,
    _zero_load_e2e,
    evaluate,
)
from .options import MAX_TP_PER_NODE, Option, Rejection, enumerate_options, pp_options
from .probe import WorkloadCache

OBJECTIVES = ("cost", "latency", "tokens-per-dollar", "gpus", "energy")

#: what each objective minimises, for the output
OBJECTIVE_TEXT = {
    "cost": "lowest fleet cost [$/h] meeting the SLOs",
    "latency": "lowest P99 end-to-end latency at the planned load",
    "tokens-per-dollar": "most output tokens per dollar at full load",
    "gpus": "fewest GPUs",
    "energy": "lowest energy per output token at full load",
}


@dataclass
class Recommendation:
    """The ranked options, the rejected ones with reasons, and how the search went."""

    objective: str
    recommendations: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    pareto: list[dict[str, Any]]
    why: str
    summary: dict[str, Any]
    assumptions: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {
            "objective": self.objective,
            "summary": self.summary,
            "why": self.why,
            "recommendations": self.recommendations,
            "pareto": self.pareto,
            "rejected": self.rejected,
            "assumptions": self.assumptions,
        }


def _tpot_floor(rep: Replica, ctx_tokens: float) -> float:
    """Time of one decode step of a lone sequence at ``ctx_tokens`` of context [s]."""
    sm, W = rep.sm, rep.sm.window if rep.sm.layers_sw > 0 else 0
    c = ctx_tokens + 1
    kvs = min(c, W) if W else 0.0
    return sm.step_time(1, 1, 1, c, c, kvs, kvs) + rep.engine.host_time_s(1)


def _why_tpot(rep: Replica, floor_s: float, target_s: float) -> str:
    mem = rep.memory
    w = mem.weight_bytes_per_gpu if mem else float("nan")
    bw = rep.sm.gpu.mem_bw_gbs
    return (
        f"SLO unreachable even at zero load: TPOT floor {floor_s * 1e3:.1f} ms > "
        f"{target_s * 1e3:.0f} ms target ({w / 1e9:.1f} GB of weights per GPU / {bw:g} GB/s "
        f"= {w / (bw * 1e9) * 1e3:.1f} ms of reading alone); use more TP, a lower precision or "
        "a faster GPU"
    )


def recommend(
    model: str,
    workload: Workload,
    slo: SLO,
    *,
    catalog: Catalog,
    objective: str = "cost",
    top_n: int = 5,
    headroom: float = 0.2,
    gpus: tuple[str, ...] = (),
    frameworks: tuple[str, ...] = (),
    precisions: tuple[str, ...] = (),
    kv_precisions: tuple[str, ...] = (),
    tps: tuple[int, ...] = (1, 2, 4, 8),
    max_gpus_per_replica: int | None = None,
    max_total_gpus: int | None = None,
    min_weight_bits: float | None = None,
    max_usd_per_hour: float | None = None,
    max_usd_per_month: float | None = None,
    price_basis: str = "on_demand",
    providers: tuple[str, ...] = (),
    usd_per_gpu_hour: dict[str, float] | None = None,
    fit_percentile: float = 99.0,
    engine: dict[str, Any] | None = None,
    profile: Any = None,
    n_requests: int = 1200,
    seed: int = 0,
    exhaustive: bool = False,
    refine: bool = False,
    per_gpu: bool = False,
) -> Recommendation:
    """Rank every deployment of ``model`` that serves ``workload`` within ``slo``.

    Parameters
    ----------
    model : model id (resolved through ``catalog``)
    workload, slo : the traffic, lengths and latency targets (e.g. from a scenario)
    catalog : the catalog (resolve ids once, at the edge)
    objective : one of :data:`OBJECTIVES` (default ``cost``)
    top_n : recommendations to return
    headroom : spare capacity above the peak [fraction]
    gpus, frameworks, precisions, kv_precisions, tps : the option space (empty: all)
    max_gpus_per_replica, max_total_gpus : layout and fleet limits [GPUs]
    min_weight_bits : quality floor [bits per weight]
    max_usd_per_hour, max_usd_per_month : budget [USD]
    price_basis : on_demand, reserved, spot, serverless, community or own
    providers : rental providers allowed (first with a price wins; empty: median of all)
    usd_per_gpu_hour : price overrides by GPU id [USD per GPU-hour]
    fit_percentile : percentile of prompt + answer length that must fit [%]
    engine : serving-engine overrides (max_num_seqs, max_num_batched_tokens, ...)
    profile : calibration profile (default: the bundled one)
    n_requests : scored requests per simulation (at least)
    seed : random seed of the request sample
    exhaustive : simulate every feasible option (no pruning; for validation)
    refine : bisect each recommendation's maximum rate per replica to 3 % (more
        simulations); otherwise it is bracketed by the replica count
    per_gpu : rank within each GPU: the best ``top_n`` options of every GPU (the
        procurement comparison; pruning only within a GPU)

    Returns
    -------
    Recommendation
    """
    t0 = time.perf_counter()
    if objective not in OBJECTIVES:
        raise PlannerError(
            f"unknown objective '{objective}' (choose from: {', '.join(OBJECTIVES)})"
        )
    if not (isinstance(top_n, int) and top_n >= 1):
        raise PlannerError(f"top must be a whole number >= 1, got {top_n!r}")
    for name, v in (
        ("max_usd_per_hour", max_usd_per_hour),
        ("max_usd_per_month", max_usd_per_month),
        ("max_total_gpus", max_total_gpus),
    ):
        if v is not None and not v > 0:
            raise PlannerError(f"{name} must be > 0, got {v!r}")
    if not 0 < fit_percentile <= 100:
        raise PlannerError(f"fit_percentile must be in (0, 100], got {fit_percentile!r}")
    m = catalog.model(model)
    overrides = {catalog.gpu(k).id: float(v) for k, v in (usd_per_gpu_hour or {}).items()}
    for g, v in overrides.items():
        if not (v > 0 and math.isfinite(v)):
            raise PlannerError(f"price override for {g} must be a number > 0, got {v!r}")
    ownership = load_ownership() if price_basis == "own" else None
    cache = WorkloadCache(workload, seed)
    peak = workload.traffic.peak()
    need = peak * (1.0 + headroom)
    hourly = workload.traffic.hourly_rps()
    q = fit_percentile / 100.0
    need_tokens = int(
        math.ceil(workload.input_quantile_tokens(q) + workload.output_quantile_tokens(q))
    )
    mean_in, mean_out = workload.mean_input_tokens(), workload.mean_output_tokens()
    assumptions = [
        f"planning peak {peak:g} req/s x (1 + headroom {headroom:g}) = {need:g} req/s",
        f"the p{fit_percentile:g} request (prompt + answer {need_tokens:,} tokens) must fit in "
        "one replica's KV cache and context",
        f"prices: {price_basis.replace('_', '-')} basis, median-priced row unless a provider or "
        "an override is given; a month is 730 h",
        "TP within one node of 8 GPUs; PP across nodes only when no single-node layout holds "
        "the model",
        "fp16 is evaluated only where it differs from bf16 (same bits and tensor rate elsewhere)",
        "KV precisions tried: each precision's default and fp8 where offered",
    ]

    options, rejected = enumerate_options(
        catalog,
        m,
        gpus=gpus,
        frameworks=frameworks,
        precisions=precisions,
        kv_precisions=kv_precisions,
        tps=tps,
        max_gpus_per_replica=max_gpus_per_replica,
        min_weight_bits=min_weight_bits,
    )
    n_enumerated = len(options) + len(rejected)
    eng_kw = {k: v for k, v in (engine or {}).items() if v is not None}

    # ------------------------------------------------------------------ screen
    price_cache: dict[str, Any] = {}
    param_cache: dict[tuple[str, str, str], tuple[Any, str]] = {}

    def price_of(gpu_id: str) -> Any:
        if gpu_id not in price_cache:
            try:
                if gpu_id in overrides:
                    pq = quote_price(
                        catalog,
                        gpu_id,
                        price_basis if price_basis != "own" else "on_demand",
                        usd_per_gpu_hour=overrides[gpu_id],
                    )
                elif price_basis == "own":
                    pq = quote_price(catalog, gpu_id, "own", ownership=ownership)
                else:
                    pq, err = None, None
                    for prov in providers or (None,):
                        try:
                            pq = quote_price(catalog, gpu_id, price_basis, provider=prov)
                            break
                        except PlannerError as e:
                            err = e
                    if pq is None:
                        raise err  # type: ignore[misc]
                price_cache[gpu_id] = pq
            except PlannerError as e:
                price_cache[gpu_id] = e
        return price_cache[gpu_id]

    def screen(opt: Option) -> Screened | Rejection:
        """Build the replica and bound the option analytically (no simulation)."""
        key = (opt.gpu.id, opt.framework.id, opt.precision.id)
        if key not in param_cache:
            param_cache[key] = resolve_params(*key, catalog=catalog, profile=profile)
        params, prov = param_cache[key]
        try:
            rep = build_replica(
                m,
                opt.gpu,
                opt.precision,
                opt.framework,
                tp=opt.tp,
                pp=opt.pp,
                kv_precision=opt.kv_precision,
                params=params,
                params_source=prov,
                catalog=catalog,
                **eng_kw,
            )
        except MissingDataError as e:
            return Rejection.of(opt, "missing_data", str(e))
        except PlannerError as e:
            return Rejection.of(opt, "memory", str(e))
        try:
            check_workload_fits(rep, workload, fit_percentile)
        except PlannerError as e:
            return Rejection.of(opt, "memory", str(e))
        if slo.tpot is not None:
            floor = _tpot_floor(rep, mean_in)
            if floor > slo.tpot.max_s:
                return Rejection.of(opt, "slo_zero_load", _why_tpot(rep, floor, slo.tpot.max_s))
        pq = price_of(opt.gpu.id)
        fp = cache.saturation(rep)
        cap = 0.95 * fp.saturation_rps
        if not cap > 0:
            return Rejection.of(opt, "throughput", "the replica saturates at 0 req/s")
        k_lb = max(1, math.ceil(need / cap - 1e-9))
        gpr = opt.gpus_per_replica
        if max_total_gpus is not None and k_lb * gpr > max_total_gpus:
            return Rejection.of(
                opt,
                "constraint",
                f"needs at least {k_lb * gpr} GPUs ({k_lb} replicas of {gpr}; one saturates at "
                f"{fp.saturation_rps:.3g} req/s) > max_total_gpus={max_total_gpus}",
            )
        s = Screened(
            opt,
            rep,
            prov,
            None if isinstance(pq, PlannerError) else pq,
            fp.saturation_rps,
            cap,
            k_lb,
            0.0,
        )
        s.bound = _bound(s, objective, need, mean_out)
        s.replicas = k_lb
        over = _over_budget(s, max_usd_per_hour, max_usd_per_month, None)
        s.replicas = None
        return over or s

    weight_fit: dict[tuple[str, str, int, int], str | None] = {}

    def weights_problem(opt: Option) -> str | None:
        """Cheap check before building a replica: do the weights alone fit one GPU?"""
        key = (opt.gpu.id, opt.precision.id, opt.tp, opt.pp)
        if key not in weight_fit:
            g = opt.gpu
            if g.memory_gb is None:
                weight_fit[key] = f"{g.id}: memory size not in the catalog (no source gives it)"
            else:
                w = weight_memory(m, opt.precision, opt.tp, opt.pp).per_gpu_bytes
                weight_fit[key] = (
                    f"does not fit: {m.id} in {opt.precision.id} needs {w / 1e9:.1f} GB of weights "
                    f"per GPU at tp={opt.tp}"
                    + (f" pp={opt.pp}" if opt.pp > 1 else "")
                    + f"; {g.id} has {g.memory_bytes / 1e9:.1f} GB"
                    if w >= g.memory_bytes
                    else None
                )
        return weight_fit[key]

    def lb0(opt: Option) -> float:
        """A bound that needs no replica: at least one replica of tp x pp GPUs."""
        if objective == "cost":
            pq = price_of(opt.gpu.id)
            return (
                math.inf
                if isinstance(pq, PlannerError)
                else opt.gpus_per_replica * pq.usd_per_gpu_hour
            )
        if objective == "gpus":
            return float(opt.gpus_per_replica)
        return -math.inf

    # ------------------------------------------------------------------ search
    # best-first over a heap of (bound, stage, seq, item): stage 0 = not yet screened (bound
    # from the price of one replica), 1 = screened (bound from the saturation rate), then
    # simulated. An item whose bound cannot beat the N-th best simulated value is pruned
    # with the bound as its reason; nothing unscreened or unsimulated is ever reported.
    heap: list[tuple[float, int, int, Any]] = []
    seq = 0
    max_tp = max(tps)
    for opt in options:
        if objective in ("cost", "tokens-per-dollar") and isinstance(
            price_of(opt.gpu.id), PlannerError
        ):
            rejected.append(Rejection.of(opt, "price", f"no price: {price_of(opt.gpu.id)}"))
            continue
        heap.append((lb0(opt), 0, seq, opt))
        seq += 1
    heapq.heapify(heap)
    done: list[Screened] = []
    screened: list[Screened] = []
    pruned = 0
    learned = RatioBook()

    def group(opt: Option) -> str | None:
        return opt.gpu.id if per_gpu else None

    def nth_best(g: str | None = None) -> float:
        vals = sorted(s.value for s in done if s.value is not None and group(s.opt) == g)
        return vals[top_n - 1] if len(vals) >= top_n else math.inf

    def prune(key2: float, stage2: int, it2: Any, best: float) -> None:
        opt2 = it2 if stage2 == 0 else it2.opt
        why = (
            _prune_reason(it2, objective, best, top_n)
            if stage2 >= 1
            else f"cannot beat the top {top_n} (not simulated): one replica alone "
            f"({opt2.gpus_per_replica} GPUs) already has {_value_text(key2, objective)}; "
            f"#{top_n} has {_value_text(best, objective)}"
        )
        rejected.append(Rejection.of(opt2, "pruned", why))

    while heap:
        key, stage, _, item = heapq.heappop(heap)
        g = group(item if stage == 0 else item.opt)
        best = nth_best(g)
        if not exhaustive and math.isfinite(best) and key >= best * (1 - 1e-9):
            pruned += 1
            prune(key, stage, item, best)
            if per_gpu:
                continue  # other GPUs' options may still be open
            for key2, stage2, _, it2 in heap:  # the heap is ordered: nothing left can win
                prune(key2, stage2, it2, best)
                pruned += 1
            break
        if stage == 0:
            opt = item
            wp = weights_problem(opt)
            r = Rejection.of(opt, "memory", wp) if wp else screen(opt)
            if isinstance(r, Screened):
                screened.append(r)
                if objective == "latency":
                    r.bound = _zero_load_e2e(r, cache)
                heapq.heappush(heap, (r.bound, 1, seq, r))
                seq += 1
            else:
                rejected.append(r)
                if r.stage == "memory" and opt.tp == max_tp == MAX_TP_PER_NODE and opt.pp == 1:
                    for o in pp_options(m, opt, max_gpus_per_replica):  # PP only where needed
                        heapq.heappush(heap, (lb0(o), 0, seq, o))
                        seq += 1
            continue
        s = item
        # seed the replica search: the analytic SLO rate (mean latencies at the targets)
        # times the median ratio simulated / analytic of the options simulated so far
        s.slo_rate_rps = cache.slo_rate(s.replica, slo, s.cap_rps)
        k_start = max(s.k_lb, math.ceil(need / (learned.typical() * s.slo_rate_rps) - 1e-9))
        # an option that needs more replicas than the N-th best's cost allows cannot win
        p = _price(s)
        k_cap = None
        best = nth_best(group(s.opt))
        if objective == "cost" and p and math.isfinite(best) and not exhaustive:
            k_cap = max(s.k_lb, int(best / (s.opt.gpus_per_replica * p) + 1e-9))
        r = evaluate(s, cache, slo, need, n_requests, max_total_gpus, k_start, k_cap)
        if isinstance(r, Rejection):
            rejected.append(r)
            continue
        learned.add(_bracket(s, need)[0] / s.slo_rate_rps)
        s.value = _value(s, objective, need, peak, mean_out, cache, refine)
        if s.value is None:
            rejected.append(Rejection.of(s.opt, "energy", "no TDP in the catalog for this GPU"))
            continue
        over = _over_budget(s, max_usd_per_hour, max_usd_per_month, max_total_gpus)
        if over:
            rejected.append(over)
            continue
        done.append(s)
    done.sort(key=lambda s: (s.value, s.replicas * s.opt.gpus_per_replica, -_bracket(s, need)[1]))
    if per_gpu:  # the best top_n of every GPU, GPUs in order of their best
        seen: dict[str, int] = {}
        top = []
        for s in done:
            if seen.get(s.opt.gpu.id, 0) < top_n:
                seen[s.opt.gpu.id] = seen.get(s.opt.gpu.id, 0) + 1
                top.append(s)
    else:
        top = done[:top_n]
    for s in top:
        finish(s, cache, slo, need, peak, hourly, mean_in, mean_out, headroom, ownership, refine)
    recs = [s.result for s in top]
    for i, r in enumerate(recs, 1):
        r["rank"] = i
    front = pareto_front(recs)
    elapsed = time.perf_counter() - t0
    sims = sum(s.probe.simulations for s in screened if s.probe is not None)
    summary = {
        "model": m.id,
        "objective": objective,
        "objective_text": OBJECTIVE_TEXT[objective],
        "peak_rps": peak,
        "headroom": headroom,
        "slo": slo.describe(),
        "options_enumerated": n_enumerated,
        "options_screened": len(screened),
        "options_simulated": sum(1 for s in screened if s.probe is not None),
        "options_pruned": pruned,
        "simulations": sims,
        "elapsed_s": elapsed,
        "feasible": len(done),
    }
    if not recs:
        raise PlannerError(nothing_meets(rejected, slo))
    if per_gpu:
        firsts = {}
        for r in recs:
            firsts.setdefault(r["gpu"], r)
        why = "best option of each GPU that meets the SLOs: " + "; ".join(
            f"{g} {r['framework']} {r['precision']} tp={r['tp']}: {r['num_gpus']} GPUs"
            + (f", ${r['usd_per_hour']:,.2f}/h" if r.get("usd_per_hour") is not None else "")
            for g, r in firsts.items()
        )
        return Recommendation(
            objective, recs, [r.as_dict() for r in rejected], front, why, summary, assumptions
        )
    why = why_winner(top, objective, rejected)
    rejected_d = [r.as_dict() for r in rejected]
    return Recommendation(objective, recs, rejected_d, front, why, summary, assumptions)
