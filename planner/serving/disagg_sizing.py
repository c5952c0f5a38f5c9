"""Sizing of a disaggregated (xPyD) deployment: each pool's capacity under its own SLO, the
x:y ratio, and the number of xPyD groups a rate needs (:func:`size_disagg`).

* **Decode capacity** (per decode replica): the largest arrival rate at which the decode
  pool alone (requests arriving with their prompt in KV, ``cached_tokens = prompt - 1``)
  meets the TPOT target; its TTFT share (decode queueing + the first decode step, at the
  TTFT target's percentile) is measured at that rate.
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
from dataclasses import dataclass, field
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

__all__ = ["DisaggSizing", "closed_loop", "pool_rate", "size_disagg", "with_counts"]


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
    return Requests(**cols, shared_prefix_tokens=base.shared_prefix_tokens)


def pool_rate(
    replica: Replica,
    reqs: Requests,
    metric: str,
    pct: float,
    limit_s: float,
    *,
    rel_tol: float = 0.03,
    max_evals: int = 24,
) -> tuple[float, float]:
    """Largest rate [req/s] at which ``replica`` serving ``reqs`` (their arrival gaps
    rescaled) keeps ``metric`` (``ttft`` or ``tpot``) at percentile ``pct`` within
    ``limit_s``; and the TTFT at ``pct`` at that rate [s]. 0 when even a light load misses.
    The first quarter of the requests is warm-up (not scored)."""
    if limit_s <= 0:
        return 0.0, float("nan")
    unit = reqs.arrival_s / max(reqs.arrival_s[-1], 1e-12) * len(reqs)  # mean gap 1 s
    check_fits(replica, reqs)
    lo_n = len(reqs) // 4

    def score(rate: float) -> tuple[bool, float]:
        r = run(replica, _scaled(reqs, unit, rate))
        x = getattr(r, f"{metric}_s")[lo_n:]
        x = x[~np.isnan(x)]
        v = float(np.percentile(x, pct)) if len(x) else 0.0
        ttft = float(np.percentile(r.ttft_s[lo_n:], pct))
        return v <= limit_s, ttft

    # saturation: requests / busy time of an all-at-once run
    sat = run(replica, _scaled(reqs, np.zeros(len(reqs)), 1.0))
    hi = len(reqs) / max(sat.busy_s, 1e-12)
    ok_lo, ttft_lo = score(hi * 0.02)
    if not ok_lo:
        return 0.0, ttft_lo
    lo, best_ttft = hi * 0.02, ttft_lo
    ok_hi, ttft_hi = score(hi * 0.95)
    if ok_hi:
        return hi * 0.95, ttft_hi
    hi = hi * 0.95
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
) -> DisaggSizing:
    """Size ``d``'s pools for ``need_rps`` under ``slo`` (see the module docstring).

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
    )
    t_pct = slo.ttft.percentile if slo.ttft else 99.0
    if slo.tpot is not None:
        d_rps, d_ttft = pool_rate(d.decode, dec_req, "tpot", slo.tpot.percentile, slo.tpot.max_s)
    else:  # no TPOT target: the decode pool's own TTFT share decides, at a tenth of the budget
        d_rps, d_ttft = pool_rate(d.decode, dec_req, "ttft", t_pct, 0.1 * slo.ttft.max_s)
    if d_rps <= 0:
        raise PlannerError(
            f"decode pool ({d.decode.label()}) misses the TPOT target even at light load"
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
        p_rps, _ = pool_rate(d.prefill, pre_req, "ttft", t_pct, budget)
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
    check: dict[str, Any] = {}
    if verify:
        spec = d.spec.model_copy(update={"x": x, "y": y})
        dd = DisaggReplicas(
            spec, d.prefill, d.decode, d.link_bytes_s, d.link_kind, d.kv_bytes_per_token
        )
        rate = need_rps / groups
        r = simulate_disagg(dd, _scaled(base, base.arrival_s, rate))
        s = r.summary(slo, warmup_frac=0.25)
        check = {k: s.get(k) for k in ("slo_ok", "slo_attainment", "ttft_p99_s", "tpot_p99_s")}
        check["rate_rps"] = rate
    return DisaggSizing(
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
        check=check,
    )


def with_counts(d: DisaggReplicas, x: int, y: int) -> DisaggReplicas:
    """``d`` with other pool counts."""
    spec: Disaggregated = d.spec.model_copy(update={"x": int(x), "y": int(y)})
    return DisaggReplicas(
        spec, d.prefill, d.decode, d.link_bytes_s, d.link_kind, d.kv_bytes_per_token
    )


def closed_loop(
    d: DisaggReplicas, reqs: Requests, concurrency: float, *, iters: int = 14
) -> tuple[float, SimResult]:
    """A closed loop of ``concurrency`` clients on ``d``, by Little's law: the arrival rate
    [req/s] at which ``rate x mean E2E(rate) = concurrency`` (bisection in log rate; the
    left side grows with the rate), and the open-loop run at that rate. ``reqs``' arrival
    gaps are rescaled (mean gap 1 s first); the mean E2E is taken over the steady part
    (the first quarter and the last eighth of the requests left out)."""
    if not concurrency or concurrency <= 0:
        raise PlannerError(f"concurrency must be > 0 (got {concurrency})")
    n = len(reqs)
    unit = reqs.arrival_s / max(reqs.arrival_s[-1], 1e-12) * n
    keep = slice(n // 4, n - n // 8)

    def little(rate: float) -> tuple[float, SimResult]:
        r = simulate_disagg(d, _scaled(reqs, unit, rate))
        return rate * float(np.mean(r.e2e_s[keep])), r

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
    return rate, little(rate)[1]
