"""Capacity questions on one replica: zero-load latency, SLO reachability, the max-rate
search, the throughput-latency curve and the TP comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.catalog.catalog import Catalog
from planner.catalog.efficiency import EfficiencyParams
from planner.errors import PlannerError, require_positive
from planner.serving.answer import answer_for_deployment
from planner.serving.probe import CapacityProbe, WorkloadCache, run
from planner.serving.replica import Replica, build_replica, check_workload_fits
from planner.serving.result import SimResult
from planner.serving.simulate import MAX_CAPACITY_REQUESTS, _check_request_count
from planner.serving.steady_state import steady_state
from planner.workload.slo import SLO
from planner.workload.workload import Workload


# =========================================================================== capacity
@dataclass(frozen=True)
class CapacityResult:
    """The largest arrival rate one replica sustains within the SLO, and the run at that rate."""

    max_rate_rps: float
    summary: dict[str, Any]
    slo: SLO
    saturation_rps: float
    zero_load: dict[str, float]
    evaluations: tuple[tuple[float, bool, float], ...]
    num_gpus: int
    label: str
    limited_by: str
    #: smallest replica count meeting the SLO at ``need_rps`` (when given)
    replicas: int | None = None

    @property
    def max_rate_per_gpu_rps(self) -> float:
        return self.max_rate_rps / self.num_gpus


def max_rate(
    replica: Replica,
    workload: Workload,
    slo: SLO,
    *,
    n_requests: int = 1200,
    rng: np.random.Generator | None = None,
    rel_tol: float = 0.02,
    max_evals: int = 16,
    max_utilization: float = 0.95,
    min_exceedances: float = 50.0,
    max_scored_factor: float = 10.0,
    fit_percentile: float | None = 99.0,
    need_rps: float | None = None,
) -> CapacityResult:
    """Largest arrival rate per replica whose SLO attainment meets the target (bisection).

    Every evaluation replays the same requests (lengths and unit-rate arrival gaps are drawn
    once and rescaled to each rate: common random numbers), so attainment is a
    near-monotone function of the rate and a looser SLO can never get a lower answer. The
    bracket is ``[0, max_utilization x`` :func:`steady_state`'s saturation rate``]``: a queue
    closer to saturation has no stable percentiles, whatever a finite run shows.

    At least ``n_requests`` requests are scored per rate, more when the SLO looks far into
    the tail or the arrivals are bursty: enough that ``min_exceedances`` of them are expected
    beyond the tightest percentile (or attainment) even after dividing by the squared cv of
    the arrival gaps, at most ``max_scored_factor x n_requests``. (Too few scored requests
    overestimate the capacity: exceedances come in bursts, so a short window usually holds
    fewer of them than the long run.) Before the scored requests the run warms up for twice
    the E2E latency of a p99-long answer at saturation (the batch reaches steady state only
    once its longest requests have cycled), and after them arrivals continue as long again,
    so the scored requests never see a ramp-up or a draining engine and an overload shows
    as a growing queue.

    ``fit_percentile``: the prompt + answer length at this percentile must fit the replica
    (:func:`~planner.serving.replica.check_workload_fits`); longer requests are truncated
    to the context limit and counted in the summary's ``truncated_requests``. ``None``
    allows any truncation.

    ``need_rps``: the rate a fleet must carry [req/s] (peak x (1 + headroom)). The answer is
    then also the rate of the smallest replica count ``k`` whose per-replica rate
    ``need / k`` meets the SLO (simulated, from ``ceil(need / bisected rate)`` down), when
    that is higher than the bisection's: the fleet size and rate the recommender reports
    for the same replica and seed (``replicas`` in the result). A need that no finite
    replica count carries is left to :func:`size_fleet`'s error.

    Raises
    ------
    PlannerError
        when a request alone already misses the SLO ("unreachable even at zero load"),
        or the ``fit_percentile`` request does not fit in memory.
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    _check_request_count(n_requests, MAX_CAPACITY_REQUESTS, "requests per rate")
    check_workload_fits(replica, workload, fit_percentile)
    probe = CapacityProbe(
        replica,
        WorkloadCache.of(workload, slo, rng),
        n_requests=n_requests,
        max_utilization=max_utilization,
        min_exceedances=min_exceedances,
        max_scored_factor=max_scored_factor,
    )
    cap_rps = probe.cap_rps
    zero = probe.check()
    evals: list[tuple[float, bool, float]] = []

    def ok(rate: float) -> bool:
        s = probe.run(rate)
        evals.append((rate, bool(s["slo_ok"]), float(s["slo_attainment"])))
        # memory: keep the arrays of the highest passing run only (the one reported)
        probe.keep_only(max((r for r, v in probe.summaries.items() if v["slo_ok"]), default=None))
        return bool(s["slo_ok"])

    lo, hi = 0.0, cap_rps
    if ok(hi):
        lo = hi
    while len(evals) < max_evals and hi - lo > rel_tol * hi:
        mid = (lo + hi) / 2 if lo > 0 else (0.7 * hi if len(evals) == 1 else hi / 2)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    if lo <= 0:
        # nothing passed: look for a tiny positive rate that passes (SLO tight but reachable)
        r = hi / 2
        while len(evals) < max_evals + 6 and r > 1e-6 * probe.saturation_rps:
            if ok(r):
                lo = r
                break
            hi = r
            r /= 2
    replicas = None
    if need_rps is not None and lo > 0 and math.isfinite(need_rps / lo):
        k0 = max(1, math.ceil(need_rps / lo * (1 - 1e-12)))
        k_lb = max(1, math.ceil(need_rps / cap_rps - 1e-9))
        replicas = probe.min_replicas(need_rps, min(k_lb, k0), k0, k0)
        if replicas is not None:
            lo = max(lo, need_rps / replicas)
            evals.extend(
                (r, bool(v["slo_ok"]), float(v["slo_attainment"]))
                for r, v in probe.summaries.items()
                if r not in {e[0] for e in evals}
            )
    tried = min(probe.summaries) if lo <= 0 else lo
    summary = probe.full(tried)
    if lo >= cap_rps * (1 - 1e-9):
        limit = probe.saturation_limit
        binding = f"throughput ({max_utilization:.0%} of the saturation rate, {limit})"
    else:
        binding = probe.binding(probe.summaries.get(hi) or summary)
    return CapacityResult(
        max_rate_rps=float(lo),
        summary=summary,
        slo=slo,
        saturation_rps=probe.saturation_rps,
        zero_load=zero,
        evaluations=tuple(evals),
        num_gpus=replica.num_gpus,
        label=replica.label(),
        limited_by=binding,
        replicas=replicas,
    )


# =========================================================================== curve
#: a closed-loop curve point needs this many requests per client (x concurrency) for a
#: steady window between ramp-up and drain (:func:`throughput_latency_curve`)
STEADY_REQUESTS_PER_CLIENT = 3


def throughput_latency_curve(
    replica: Replica,
    workload: Workload,
    *,
    concurrencies: list[int] | None = None,
    slo: SLO | None = None,
    requests_per_client: int = 8,
    min_requests: int = 400,
    max_requests: int = 4000,
    rng: np.random.Generator | None = None,
) -> list[dict[str, Any]]:
    """Throughput and latency against the number of concurrent clients (closed loop).

    Each point runs ``requests_per_client`` x concurrency requests (within the given
    bounds) with the clients all busy; throughput counts completions between the first
    client's second request and the last request's dispatch (no ramp-up, no drain), and the
    latencies are those of the requests dispatched in that window, minus the last
    ``concurrency`` (they finish while the load drains).

    The knee is the point of maximum power, output tokens/s divided by mean E2E latency
    (Kleinrock's optimal operating point of a queue: beyond it latency grows faster than
    throughput). Rows carry ``is_knee``.

    Without ``concurrencies``: 1, 2, 4, ... up to 1.5 x the most sequences the replica can
    run at once, but only while a point has at least :data:`STEADY_REQUESTS_PER_CLIENT` x
    concurrency requests: the window leaves out the first and the last ``concurrency``
    requests (ramp-up, drain), so fewer would measure the transients (with 1,000 requests
    and 512 clients the window is empty, and the point showed less throughput than 256
    clients and a TPOT P99 that fell again past it).
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    eng = replica.engine

    def n_requests(c: int) -> int:
        return int(min(max(requests_per_client * c, min_requests), max_requests))

    if concurrencies is None:
        fp = steady_state(replica, workload, 1.0)
        top = max(2, int(min(eng.max_num_seqs, fp.max_concurrency) * 1.5))
        concurrencies = [1]
        while concurrencies[-1] < top:
            c = concurrencies[-1] * 2
            if n_requests(c) < STEADY_REQUESTS_PER_CLIENT * c:
                break
            concurrencies.append(c)
    seed = int(rng.integers(1 << 31))
    rows: list[dict[str, Any]] = []
    for c in concurrencies:
        require_positive("concurrency", c)
        c = int(c)
        n = n_requests(c)
        reqs = workload.sample_requests(
            n,
            np.random.default_rng(seed),
            1.0,
            context_limit=eng.context_limit_tokens,
            prefix_caching=eng.prefix_caching,
        )
        res = run(replica, reqs, c)
        row = _closed_loop_point(res, c, slo)
        rows.append(row)
    power = [r["output_tok_s"] / r["e2e_mean_s"] if r["e2e_mean_s"] > 0 else 0.0 for r in rows]
    k = int(np.argmax(power)) if rows else 0
    for i, r in enumerate(rows):
        r["is_knee"] = i == k
    return rows


def _closed_loop_point(res: SimResult, c: int, slo: SLO | None) -> dict[str, Any]:
    a = res.arrival_s
    f = res.finish_s
    n = len(a)
    order = np.argsort(a, kind="stable")
    t_a = float(a[order[min(c, n - 1)]]) if n > c else float(a[order[0]])
    t_b = float(a[order[-1]])
    if t_b <= t_a:  # too few requests for a window: whole run
        t_a, t_b = float(a.min()), float(f.max())
    done = (f >= t_a) & (f <= t_b)
    span = t_b - t_a
    out_tok = float(res.output_tokens[done].sum())
    in_tok = float(res.input_tokens[done].sum())
    lat = np.zeros(n, dtype=bool)
    lat[order[min(c, n - 1) : max(n - c, min(c, n - 1) + 1)]] = True
    if lat.sum() < 20:
        lat[:] = True
    s = res.summary(slo, mask=lat, per_iteration=False)  # the row reads none of those
    row = {
        "concurrency": int(c),
        "output_tok_s": out_tok / span,
        "output_tok_s_per_gpu": out_tok / span / res.num_gpus,
        "total_tok_s": (out_tok + in_tok) / span,
        "throughput_rps": float(done.sum()) / span,
        "ttft_p50_s": s["ttft_p50_s"],
        "ttft_p99_s": s["ttft_p99_s"],
        "tpot_p50_s": s["tpot_p50_s"],
        "tpot_p99_s": s["tpot_p99_s"],
        "e2e_mean_s": s["e2e_mean_s"],
        "e2e_p99_s": s["e2e_p99_s"],
        "kv_util_mean": s["kv_util_mean"],
        "preemptions": s["preemptions"],
    }
    if slo is not None:
        row["slo_ok"] = s["slo_ok"]
    return row


# =========================================================================== TP comparison
def compare_tp(
    model: Any,
    gpu: Any,
    precision: Any,
    framework: Any,
    workload: Workload,
    slo: SLO,
    *,
    tps: tuple[int, ...] = (1, 2, 4, 8),
    pp: int = 1,
    kv_precision: str | None = None,
    peak_rps: float | None = None,
    headroom: float = 0.2,
    catalog: Catalog | None = None,
    params: EfficiencyParams | None = None,
    n_requests: int = 800,
    engine: dict[str, Any] | None = None,
    seed: int = 0,
    fit_percentile: float | None = 99.0,
) -> list[dict[str, Any]]:
    """One big-TP replica against several small ones: capacity per replica and per GPU,
    replicas and GPUs for the peak, and the P99 latencies, for each TP size.

    Every TP size keeps the deployment's ``pp`` and ``kv_precision``, and each row is
    :func:`planner.serving.answer.answer_for_deployment` of its replica with ``seed``, so
    the row of the deployment's own TP is ``planner capacity``'s answer for it."""
    peak = peak_rps if peak_rps is not None else workload.traffic.peak()
    rows: list[dict[str, Any]] = []
    for tp in tps:
        row: dict[str, Any] = {"tp": int(tp)}
        try:
            rep = build_replica(
                model,
                gpu,
                precision,
                framework,
                tp=tp,
                pp=pp,
                kv_precision=kv_precision,
                params=params,
                catalog=catalog,
                **(engine or {}),
            )
            ans = answer_for_deployment(
                rep,
                workload,
                slo,
                headroom=headroom,
                peak_rps=peak,
                n_requests=n_requests,
                seed=seed,
                fit_percentile=fit_percentile,
            )
            row.update(
                fits=True,
                max_rate_per_replica=ans.max_rate_rps,
                max_rate_per_gpu=ans.max_rate_rps / rep.num_gpus,
                replicas=ans.replicas,
                num_gpus=ans.num_gpus,
                ttft_p99_s=ans.at_max_rate.get("ttft_p99_s"),
                tpot_p99_s=ans.at_max_rate.get("tpot_p99_s"),
                reason="",
            )
        except PlannerError as e:
            row.update(
                fits=False,
                max_rate_per_replica=None,
                max_rate_per_gpu=None,
                replicas=None,
                num_gpus=None,
                ttft_p99_s=None,
                tpot_p99_s=None,
                reason=str(e),
            )
        rows.append(row)
    ok = [r for r in rows if r.get("num_gpus")]
    if ok:
        best = min(ok, key=lambda r: (r["num_gpus"], -r["max_rate_per_gpu"]))
        for r in rows:
            r["best"] = r is best
    return rows
