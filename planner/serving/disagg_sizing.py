"""Sizing of a disaggregated (xPyD) deployment: each pool's capacity under its own SLO, the
x:y ratio, and the number of xPyD groups a rate needs (:func:`size_disagg`).

* **Decode capacity** (per decode replica): the largest arrival rate at which the decode
  pool alone (requests arriving with their prompt in KV, ``cached_tokens = prompt - 1``)
  meets the TPOT target and keeps its TTFT share (decode queueing + the first decode step,
  at the TTFT target's percentile) within :data:`DECODE_TTFT_SHARE` (a quarter) of the
  TTFT target: without that a decode pool past saturation would still pass on TPOT, its
  queue growing. The share it actually takes is measured at that rate.
* **Prefill capacity** (per prefill replica): the largest rate at which the prefill pool
  (one output token per request) meets ``TTFT target - transfer - decode share`` at the
  TTFT percentile, the transfer taken unshared for the percentile's prompt
  (:func:`~planner.serving.disagg.transfer_time_s`).
* **Ratio**: a group of ``x`` prefill and ``y`` decode replicas carries
  ``min(x x prefill rate, y x decode rate)``; a need of ``R`` req/s takes
  ``ceil(R / group rate)`` groups (the unit of scaling is the group). ``x:y`` (each at most
  ``max_group``) is the pair that needs the fewest GPUs for ``R``, ties broken by the most
  rate per GPU (the balanced ratio ``x/y ~ decode rate / prefill rate``).

Rates are found by bisection on one drawn request sample whose arrival gaps are rescaled to
each rate (common random numbers, as :func:`planner.serving.max_rate` does), between zero
and the pool's saturation (busy-time) rate. The whole group is then simulated at the
group's rate (:func:`~planner.serving.disagg.simulate_disagg`) and the verdict reported
(``check``): the composition's TTFT adds the stages' tails, so it may miss where the split
budgets passed; the answer then says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from planner.errors import PlannerError
from planner.serving.disagg import (
    Disaggregated,
    DisaggReplicas,
    sample_disagg_requests,
    simulate_disagg,
    transfer_bytes,
    transfer_time_s,
)
from planner.serving.probe import run
from planner.serving.replica import Replica, check_fits
from planner.serving.result import SimResult
from planner.workload.slo import SLO
from planner.workload.workload import Requests, Workload

#: the share of the TTFT target the decode pool may take (its queueing + first step); the
#: prefill pool gets the rest less the transfer
DECODE_TTFT_SHARE = 0.25

__all__ = [
    "DECODE_TTFT_SHARE",
    "DisaggSizing",
    "closed_loop",
    "pool_rate",
    "served_rate",
    "run_memo_key",
    "size_disagg",
    "verify_sizing",
    "with_counts",
]


@dataclass(frozen=True)
class DisaggSizing:
    """Capacities [req/s], the chosen ``x``:``y`` and the groups a rate needs."""

    prefill_rps: float  # per prefill replica, under the TTFT budget
    decode_rps: float  # per decode replica, under the TPOT target
    x: int
    y: int
    group_rps: float  # one xPyD group: min(x * prefill_rps, y * decode_rps)
    groups: int
    num_gpus: int
    transfer_s: float  # unshared transfer of the TTFT percentile's prompt
    decode_ttft_s: float  # decode queueing + first step at the TTFT percentile
    prefill_budget_s: float
    check: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in (
                "prefill_rps",
                "decode_rps",
                "x",
                "y",
                "group_rps",
                "groups",
                "num_gpus",
                "transfer_s",
                "decode_ttft_s",
                "prefill_budget_s",
            )
        } | {"check": self.check}


def _scaled(base: Requests, unit_arrivals: np.ndarray, rate: float, **over: Any) -> Requests:
    cols = dict(
        arrival_s=unit_arrivals / rate,
        input_tokens=base.input_tokens,
        output_tokens=base.output_tokens,
        cached_tokens=base.cached_tokens,
    )
    cols.update(over)
    return Requests(
        **cols, shared_prefix_tokens=base.shared_prefix_tokens, max_new_tokens=base.max_new_tokens
    )


def _tiled(reqs: Requests, unit: np.ndarray, n: int) -> tuple[Requests, np.ndarray]:
    """``reqs`` repeated to ``n`` requests (lengths cycled, unit-rate gaps continued)."""
    if n <= len(reqs):
        return reqs, unit
    gaps = np.diff(unit, prepend=0.0)
    idx = np.arange(n) % len(reqs)
    out = Requests(
        reqs.arrival_s[idx],
        reqs.input_tokens[idx],
        reqs.output_tokens[idx],
        reqs.cached_tokens[idx],
        reqs.shared_prefix_tokens,
        max_new_tokens=reqs.max_new_tokens,
    )
    return out, np.cumsum(gaps[idx])


def run_memo_key(replica: Replica, reqs: Requests) -> tuple | None:
    """What makes two :func:`pool_rate` calls' runs the same runs, as a hashable key (None:
    never remembered): everything of ``replica`` the compiled loop reads
    (:func:`planner.serving._engine.loop_key`, None for a static-batching engine), its
    speculative decoding (read by :func:`~planner.serving.probe.run` around the loop) and
    the requests' every value (the arrays' bytes, not a hash: equal keys are equal inputs).
    A run at rate ``r`` of ``n`` requests is a deterministic function of these, ``r`` and
    ``n`` (``_tiled`` and ``_scaled`` of the same arrays)."""
    from planner.serving._engine import loop_key

    lk = loop_key(replica)
    if lk is None:
        return None
    cols = tuple(
        (a.dtype.str, a.shape, a.tobytes())
        for a in map(np.asarray, (reqs.arrival_s, reqs.input_tokens, reqs.output_tokens,
                                  reqs.cached_tokens))
    )  # fmt: skip
    return (lk, replica.spec, cols, reqs.shared_prefix_tokens, reqs.max_new_tokens)


def pool_rate(
    replica: Replica,
    reqs: Requests,
    checks: list[tuple[str, float, float]],
    *,
    report_pct: float = 99.0,
    rel_tol: float = 0.03,
    max_evals: int = 24,
    max_requests: int = 40_000,
    memo: dict | None = None,
) -> tuple[float, float]:
    """Largest rate [req/s] at which ``replica`` serving ``reqs`` (their arrival gaps
    rescaled) keeps every ``(metric, percentile, limit_s)`` of ``checks`` (metric ``ttft``
    or ``tpot``); and the TTFT at ``report_pct`` at that rate [s]. 0 when even a light load
    misses.

    A finite run hides an overload while it holds fewer requests than the batch would grow
    to, so each rate runs at least ``4 x rate x mean E2E`` requests (the sample cycled, at
    most ``max_requests``) and scores those after the first quarter. The bracket starts at
    the all-at-once throughput of the sample and doubles while the checks pass.

    ``memo``: a dict the caller keeps across calls (e.g. one per
    :func:`planner.recommend.disagg.compare_disagg` option, whose pool pairs repeat a
    pool): each run's measured values (mean E2E, the checks' percentiles, the reported
    TTFT; the saturation run's busy time) are remembered under :func:`run_memo_key`, the
    rate, the request count and the checks' (metric, percentile) pairs, and read back in
    place of the run. The values are the ones the run gives, so the answer is the same;
    only the limits may differ between calls (a prefill pool's TTFT budget)."""
    if any(lim <= 0 for _, _, lim in checks):
        return 0.0, float("nan")
    check_fits(replica, reqs)
    unit0 = reqs.arrival_s / max(reqs.arrival_s[-1], 1e-12) * len(reqs)  # mean gap 1 s
    e2e_est = [0.0]
    key0 = None if memo is None else run_memo_key(replica, reqs)
    shape = (tuple((m, p) for m, p, _ in checks), report_pct)

    def measure(rate: float, n: int) -> tuple[float, tuple[float, ...], float]:
        """The run's mean E2E, the checks' percentiles and the reported TTFT [s]."""
        rq, unit = _tiled(reqs, unit0, n)
        r = run(replica, _scaled(rq, unit, rate))
        lo_n = len(rq) // 4
        vals = []
        for metric, pct, _ in checks:
            x = getattr(r, f"{metric}_s")[lo_n:]
            x = x[~np.isnan(x)]
            vals.append(float(np.percentile(x, pct)) if len(x) else 0.0)
        report = float(np.percentile(r.ttft_s[lo_n:], report_pct))
        return float(np.mean(r.e2e_s[lo_n:])), tuple(vals), report

    def score(rate: float) -> tuple[bool, float]:
        n = int(min(max(len(reqs), 4 * rate * e2e_est[0]), max_requests))
        if key0 is None:
            e2e, vals, report = measure(rate, n)
        else:
            k = (key0, shape, rate, n)
            if k not in memo:
                memo[k] = measure(rate, n)
            e2e, vals, report = memo[k]
        e2e_est[0] = max(e2e_est[0], e2e)
        ok = all(v <= lim for v, (_, _, lim) in zip(vals, checks, strict=True))
        return ok, report

    k_sat = None if key0 is None else (key0, "busy_s")
    if k_sat is not None and k_sat in memo:
        busy = memo[k_sat]
    else:
        busy = run(replica, _scaled(reqs, np.zeros(len(reqs)), 1.0)).busy_s
        if k_sat is not None:
            memo[k_sat] = busy
    hi = len(reqs) / max(busy, 1e-12)
    lo = hi * 0.02
    ok_lo, best_ttft = score(lo)
    if not ok_lo:
        return 0.0, best_ttft
    for _ in range(8):  # the bracket: double while the checks pass
        ok, t = score(hi)
        if not ok:
            break
        lo, best_ttft, hi = hi, t, 2 * hi
    else:
        return lo, best_ttft
    for _ in range(max_evals):
        if hi - lo <= rel_tol * lo:
            break
        mid = math.sqrt(lo * hi) if hi > 4 * lo else 0.5 * (lo + hi)
        ok, t = score(mid)
        if ok:
            lo, best_ttft = mid, t
        else:
            hi = mid
    return lo, best_ttft


def _ratio(
    p_rps: float, d_rps: float, gp: int, gd: int, max_group: int, need_rps: float
) -> tuple[int, int, int]:
    """``(x, y, groups)`` of at most ``max_group`` replicas per pool that carries
    ``need_rps`` on the fewest GPUs (ties: the most rate per GPU, then the smaller group)."""
    best: tuple[float, float, int, int, int] | None = None
    for x in range(1, max_group + 1):
        for y in range(1, max_group + 1):
            rate = min(x * p_rps, y * d_rps)
            groups = max(1, math.ceil(need_rps / rate - 1e-9))
            key = (groups * (x * gp + y * gd), -rate / (x * gp + y * gd), x + y, x, y)
            if best is None or key < best:
                best = key
    assert best is not None
    x, y = best[3], best[4]
    return x, y, max(1, math.ceil(need_rps / min(x * p_rps, y * d_rps) - 1e-9))


def size_disagg(
    d: DisaggReplicas,
    workload: Workload,
    slo: SLO,
    need_rps: float,
    *,
    n_requests: int = 1200,
    seed: int = 0,
    max_group: int = 8,
    verify: bool = True,
    memo: dict | None = None,
) -> DisaggSizing:
    """Size ``d``'s pools for ``need_rps`` under ``slo`` (see the module docstring).

    ``verify``: simulate the whole group at the group's rate (``check``; else ``check`` is
    empty, and :func:`verify_sizing` adds it later, the same). ``memo``: the runs of
    :func:`pool_rate` remembered across calls (its docstring).

    Raises
    ------
    PlannerError
        when the SLO has neither a TTFT nor a TPOT target, or a pool cannot meet its share
        even at light load (the message names the pool).
    """
    if slo.ttft is None and slo.tpot is None:
        raise PlannerError("disaggregated sizing needs a TTFT or a TPOT target in the SLO")
    rng = np.random.default_rng(seed)
    base = sample_disagg_requests(d, workload, n_requests, rng, 1.0)
    n = len(base)
    # decode pool: prompt in KV but its last token; TPOT target (or a loose one)
    dec_req = Requests(
        base.arrival_s,
        base.input_tokens,
        base.output_tokens,
        np.maximum(base.input_tokens - 1, 0),
        base.shared_prefix_tokens,
        max_new_tokens=base.max_new_tokens,
    )
    t_pct = slo.ttft.percentile if slo.ttft else 99.0
    checks = []
    if slo.tpot is not None:
        checks.append(("tpot", slo.tpot.percentile, slo.tpot.max_s))
    if slo.ttft is not None:  # decode queueing + first step: its share of the TTFT target
        checks.append(("ttft", t_pct, DECODE_TTFT_SHARE * slo.ttft.max_s))
    d_rps, d_ttft = pool_rate(d.decode, dec_req, checks, report_pct=t_pct, memo=memo)
    if d_rps <= 0:
        raise PlannerError(
            f"decode pool ({d.decode.label()}) misses the TPOT target (or its "
            f"{DECODE_TTFT_SHARE:.0%} share of the TTFT target) even at light load"
        )
    p_tokens = float(np.percentile(base.input_tokens, t_pct))
    xfer = float(
        transfer_time_s(
            transfer_bytes(p_tokens, d.kv_bytes_per_token), d.link_bytes_s, d.spec.transfer_base_s
        )
    )
    pre_req = Requests(
        base.arrival_s,
        base.input_tokens,
        np.ones(n, np.int64),
        base.cached_tokens,
        base.shared_prefix_tokens,
    )
    if slo.ttft is not None:
        budget = slo.ttft.max_s - xfer - d_ttft
        p_rps, _ = pool_rate(
            d.prefill, pre_req, [("ttft", t_pct, budget)], report_pct=t_pct, memo=memo
        )
        if p_rps <= 0:
            raise PlannerError(
                f"prefill pool ({d.prefill.label()}) misses its TTFT budget of {budget:.3f} s "
                f"(TTFT target {slo.ttft.max_s} s - transfer {xfer:.4f} s - decode "
                f"{d_ttft:.4f} s) even at light load"
            )
    else:  # no TTFT target: the prefill pool runs at 90 % of its saturation
        budget = float("inf")
        sat = run(
            d.prefill,
            Requests(
                np.zeros(n),
                pre_req.input_tokens,
                pre_req.output_tokens,
                pre_req.cached_tokens,
                pre_req.shared_prefix_tokens,
            ),
        )
        p_rps = 0.9 * n / max(sat.busy_s, 1e-12)
    gp, gd = d.prefill.num_gpus, d.decode.num_gpus
    x, y, groups = _ratio(p_rps, d_rps, gp, gd, max_group, need_rps)
    group = min(x * p_rps, y * d_rps)
    sz = DisaggSizing(
        prefill_rps=p_rps,
        decode_rps=d_rps,
        x=x,
        y=y,
        group_rps=group,
        groups=groups,
        num_gpus=groups * (x * gp + y * gd),
        transfer_s=xfer,
        decode_ttft_s=d_ttft,
        prefill_budget_s=budget,
    )
    return replace(sz, check=_check(d, base, slo, need_rps, sz)) if verify else sz


def _check(
    d: DisaggReplicas, base: Requests, slo: SLO, need_rps: float, sz: DisaggSizing
) -> dict[str, Any]:
    """One ``sz.x``P``sz.y``D group of ``d`` simulated at ``need_rps / sz.groups`` on the
    sizing's requests ``base``: the SLO verdict, attainment, TTFT / TPOT p99 and the rate."""
    spec = d.spec.model_copy(update={"x": sz.x, "y": sz.y})
    dd = DisaggReplicas(
        spec, d.prefill, d.decode, d.link_bytes_s, d.link_kind, d.kv_bytes_per_token
    )
    rate = need_rps / sz.groups
    r = simulate_disagg(dd, _scaled(base, base.arrival_s, rate))
    s = r.summary(slo, warmup_frac=0.25)
    check = {k: s.get(k) for k in ("slo_ok", "slo_attainment", "ttft_p99_s", "tpot_p99_s")}
    check["rate_rps"] = rate
    return check


def verify_sizing(
    d: DisaggReplicas,
    workload: Workload,
    slo: SLO,
    need_rps: float,
    sz: DisaggSizing,
    *,
    n_requests: int = 1200,
    seed: int = 0,
) -> DisaggSizing:
    """``sz`` (from ``size_disagg(d, workload, slo, need_rps, n_requests=n_requests,
    seed=seed, verify=False)``) with the ``check`` that ``verify=True`` gives: the same
    request sample drawn again from ``seed``, the same group simulated."""
    base = sample_disagg_requests(d, workload, n_requests, np.random.default_rng(seed), 1.0)
    return replace(sz, check=_check(d, base, slo, need_rps, sz))


def with_counts(d: DisaggReplicas, x: int, y: int) -> DisaggReplicas:
    """``d`` with other pool counts."""
    spec: Disaggregated = d.spec.model_copy(update={"x": int(x), "y": int(y)})
    return DisaggReplicas(
        spec, d.prefill, d.decode, d.link_bytes_s, d.link_kind, d.kv_bytes_per_token
    )


def served_rate(d: DisaggReplicas, reqs: Requests, unit: np.ndarray) -> float:
    """The rate at which ``d``'s pools complete requests when offered more than they serve
    [req/s]: every request of ``reqs`` arrives at once and the completions between the first
    and the third quartile of the finish times are counted (the pipeline is full by then:
    the slowest of the prefill pool, the transfers and the decode pool at its batch limits
    sets the pace)."""
    r = simulate_disagg(d, _scaled(reqs, unit, 1e9))
    f = np.sort(r.finish_s[np.isfinite(r.finish_s)])
    lo, hi = len(f) // 4, (3 * len(f)) // 4
    span = f[hi] - f[lo] if hi > lo else 0.0
    return (hi - lo) / span if span > 0 else math.inf


def closed_loop(
    d: DisaggReplicas, reqs: Requests, concurrency: float, *, iters: int = 14
) -> tuple[float, SimResult]:
    """A closed loop of ``concurrency`` clients on ``d``, by Little's law: the arrival rate
    [req/s] at which ``rate x mean E2E(rate) = concurrency`` (bisection in log rate; the
    left side grows with the rate), and the open-loop run at that rate. ``reqs``' arrival
    gaps are rescaled (mean gap 1 s first); the mean E2E is taken over the steady part
    (the first quarter and the last eighth of the requests left out).

    A closed loop never completes requests faster than the pools serve them
    (:func:`served_rate`). An open-loop run of a few thousand requests above that rate
    builds a queue to its end whose mean still stays finite, so Little's equation can
    balance above it (DeepSeek-R1 8k/1k, GB200 6P(TP4)+1D(DEP48), 2,048 clients: 52.3 req/s
    offered, 36.5 completed, TTFT growing from 13 to 41 s through the run). The rate is
    then the served rate, and the clients the pools do not hold wait before the first
    token: every request's first token and finish move by ``concurrency / rate - mean
    E2E`` of the run at that rate (Little's law again; TPOT unchanged)."""
    if not concurrency or concurrency <= 0:
        raise PlannerError(f"concurrency must be > 0 (got {concurrency})")
    n = len(reqs)
    unit = reqs.arrival_s / max(reqs.arrival_s[-1], 1e-12) * n
    keep = slice(n // 4, n - n // 8)

    def little(rate: float) -> tuple[float, SimResult]:
        r = simulate_disagg(d, _scaled(reqs, unit, rate))
        # the engine's E2E: a client sends its next request when the engine finishes, as in
        # the aggregated closed loop (the front end's first-token path delays no request)
        return rate * float(np.mean(r.e2e_s[keep])) - rate * r.first_token_offset_s, r

    e0 = little(1e-3)[0] / 1e-3  # E2E at light load: rate = C / E2E(0) bounds the answer
    hi = 2.0 * concurrency / e0
    lo = hi / 512
    for _ in range(iters):
        mid = math.sqrt(lo * hi)
        if little(mid)[0] < concurrency:
            lo = mid
        else:
            hi = mid
    rate = math.sqrt(lo * hi)
    cap = served_rate(d, reqs, unit)
    if cap >= rate:
        return rate, little(rate)[1]
    held, res = little(cap)
    wait = max(concurrency - held, 0.0) / cap  # the clients beyond those the run holds
    res = replace(res, first_token_s=res.first_token_s + wait, finish_s=res.finish_s + wait)
    res.meta = {**res.meta, "closed_loop": {"little_rate_rps": rate, "served_rate_rps": cap}}
    return cap, res
