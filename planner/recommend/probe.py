"""Capacity probes: "does one replica meet the SLO at this arrival rate?" answered by simulation,
with everything that depends only on the workload computed once.

:func:`planner.simulate.max_rate` bisects the rate to 2 %. A recommendation needs less: the
number of replicas ``k = ceil(need / rate)`` is an integer, so the smallest ``k`` whose rate
``need / k`` passes is found in one to three simulations, starting from the analytic lower
bound (a replica never sustains more than the saturation rate). The probe replays the same
requests at every rate (common random numbers), exactly as ``max_rate`` does, so both give
the same answer for the same seed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import PlannerError
from ..serving._engine import _run_continuous, _run_static
from ..serving.capacity import _scored_requests, check_reachable
from ..serving.replica import Replica, check_fits
from ..serving.steady_state import SteadyStateResult, _shape, steady_state
from ..workload import SLO, Requests, Workload


class WorkloadCache:
    """Per-workload quantities shared by every option of one recommendation.

    ``shape`` (mean prompt, answer, cached tokens and the answer-weighted running context)
    and the base request sample depend only on the workload, the engine's context limit and
    whether prefix caching is on, never on the GPU: they are computed once per such key.
    """

    def __init__(self, workload: Workload, seed: int = 0) -> None:
        self.workload = (
            workload.model_copy(update={"offline": False}) if workload.offline else workload
        )
        self.seed = int(seed)
        self._shapes: dict[tuple[int, bool], tuple[float, float, float, float]] = {}
        self._bases: dict[tuple[int, bool, int], Requests] = {}

    def shape(self, replica: Replica) -> tuple[float, float, float, float]:
        eng = replica.engine
        key = (eng.context_limit_tokens, eng.prefix_caching)
        if key not in self._shapes:
            self._shapes[key] = _shape(self.workload, eng)
        return self._shapes[key]

    def steady_state(self, replica: Replica, rate_rps: float = 1.0) -> SteadyStateResult:
        return steady_state(replica, self.shape(replica), rate_rps)

    def saturation(self, replica: Replica) -> SteadyStateResult:
        """The analytic steady state past saturation (only its ``saturation_*`` fields)."""
        return steady_state(replica, self.shape(replica), 1e18)

    def slo_rate(self, replica: Replica, slo: SLO, cap_rps: float, steps: int = 14) -> float:
        """Largest rate [req/s] at which the analytic steady state's MEAN TTFT, TPOT and E2E
        meet the SLO thresholds (bisection on the rate up to ``cap_rps``).

        A percentile is at least the mean for the latency distributions met here, so the
        simulated rate meeting a p99 target is below this one, up to the analytic model's
        error against the simulation (tested within 10 % on mean throughput)."""
        tg = slo.targets()
        shape = self.shape(replica)

        def ok(rate: float) -> bool:
            fp = steady_state(replica, shape, rate)
            if not fp.stable:
                return False
            return all(getattr(fp, f"{name}_s") <= t.max_s for name, t in tg.items())

        if not tg or ok(cap_rps):
            return cap_rps
        lo, hi = 0.0, cap_rps
        for _ in range(steps):
            mid = (lo + hi) / 2
            if ok(mid):
                lo = mid
            else:
                hi = mid
        return hi

    def base_requests(self, replica: Replica, n: int) -> Requests:
        eng = replica.engine
        key = (eng.context_limit_tokens, eng.prefix_caching, int(n))
        if key not in self._bases:
            self._bases[key] = self.workload.sample_requests(
                n,
                np.random.default_rng(self.seed),
                1.0,
                context_limit=eng.context_limit_tokens,
                prefix_caching=eng.prefix_caching,
            )
        return self._bases[key]


class CapacityProbe:
    """SLO checks of one replica at chosen arrival rates [req/s], cached by rate.

    Parameters mirror :func:`planner.simulate.max_rate`: ``n_requests`` scored at least,
    more for deep tails (``min_exceedances`` expected misses beyond the tightest
    percentile), warm-up of twice a p99-long answer's E2E at saturation, arrivals flowing as
    long again after the scored requests. Rates above ``max_utilization`` x the analytic
    saturation rate are never accepted.
    """

    def __init__(
        self,
        replica: Replica,
        cache: WorkloadCache,
        slo: SLO,
        *,
        n_requests: int = 1200,
        max_utilization: float = 0.95,
        min_exceedances: float = 50.0,
        max_scored_factor: float = 10.0,
    ) -> None:
        self.replica = replica
        self.slo = slo
        self.workload = wl = cache.workload
        fp = cache.saturation(replica)
        self.saturation_rps = fp.saturation_rps
        self.saturation_limit = fp.limited_by
        self.cap_rps = max_utilization * fp.saturation_rps
        t_sat = fp.saturation_iteration_s
        self.tail_s = max(fp.saturation_e2e_s, wl.output_quantile_tokens(0.99) * t_sat)
        self.warm_s = 2.0 * self.tail_s
        self.n_scored = _scored_requests(wl, slo, n_requests, min_exceedances, max_scored_factor)
        self.n_cap = self.n_scored + 11 * int(n_requests)
        self.base = cache.base_requests(replica, self.n_cap)
        #: requests cut to the engine's context limit in the base sample
        self.truncated_requests = int(self.base.truncated)
        self.summaries: dict[float, dict[str, Any]] = {}
        self._results: dict[float, tuple[Any, np.ndarray]] = {}
        self.simulations = 0
        self._checked = False
        self.zero_load: dict[str, float] = {}

    def check(self) -> dict[str, float]:
        """Raise when a request does not fit or misses the SLO even served alone."""
        if not self._checked:
            check_fits(self.replica, self.base)
            self.zero_load = check_reachable(self.replica, self.workload, self.slo)
            self._checked = True
        return self.zero_load

    def run(self, rate: float) -> dict[str, Any]:
        """Summary (latency percentiles, SLO verdict) of the scored requests at ``rate``."""
        if rate in self.summaries:
            return self.summaries[rate]
        self.check()
        base, eng = self.base, self.replica.engine
        k = int(min(self.n_cap, self.n_scored + math.ceil(rate * (self.warm_s + self.tail_s)) + 1))
        reqs = Requests(
            base.arrival_s[:k] / rate,
            base.input_tokens[:k],
            base.output_tokens[:k],
            base.cached_tokens[:k],
            base.shared_prefix_tokens,
            0,
        )
        res = (
            _run_continuous(self.replica, reqs, None)
            if eng.continuous_batching
            else _run_static(self.replica, reqs)
        )
        self.simulations += 1
        a = res.arrival_s
        lo_t = min(self.warm_s, float(a[int(0.5 * (k - 1))]))
        mask = (a >= lo_t) & (np.arange(k) < np.searchsorted(a, lo_t) + self.n_scored)
        # the verdict needs only the per-request latencies of the scored requests; the full
        # summary (ITL and batch percentiles, throughput) is computed for reported runs only
        ev = self.slo.evaluate(res.ttft_s[mask], res.tpot_s[mask], res.e2e_s[mask])
        s = {k2: v for k2, v in ev.items() if k2.endswith("_s")}
        s.update(slo_ok=ev["ok"], slo_attainment=ev["attainment"], rate_rps=rate)
        self.summaries[rate] = s
        self._results[rate] = (res, mask)
        return s

    def keep_only(self, rate: float | None) -> None:
        """Free the per-request arrays of every run but the one at ``rate`` (memory)."""
        self._results = {r: v for r, v in self._results.items() if r == rate}

    def full(self, rate: float) -> dict[str, Any]:
        """The complete summary (:meth:`planner.serving.SimResult.summary`) of the run at
        ``rate`` (simulated first if needed)."""
        self.run(rate)
        res, mask = self._results[rate]
        s = res.summary(self.slo, mask=mask)
        s["rate_rps"] = rate
        return s

    def ok(self, rate: float) -> bool:
        if rate > self.cap_rps * (1 + 1e-9):
            return False
        return bool(self.run(rate)["slo_ok"])

    def min_replicas(
        self, need_rps: float, k_lb: int, k_max: int, k_start: int | None = None
    ) -> int | None:
        """Smallest replica count ``k >= k_lb`` whose per-replica rate ``need / k`` meets the
        SLO; None when even ``k_max`` replicas fail.

        Starts at ``k_start`` (an estimate, default ``k_lb``): downward while it passes,
        otherwise galloping upward, then bisection between the last failure and the first
        pass. With a good estimate this takes two simulations."""
        k_lb = max(1, int(k_lb))
        k = min(max(k_lb, int(k_start or k_lb)), k_max)
        if self.ok(need_rps / k):
            while k > k_lb and self.ok(need_rps / (k - 1)):
                k -= 1
            return k
        fail, step = k, 1
        while True:
            k = fail + step
            if k > k_max:
                if fail < k_max and self.ok(need_rps / k_max):
                    k = k_max
                    break
                return None
            if self.ok(need_rps / k):
                break
            fail, step = k, step * 2
        while k - fail > 1:
            mid = (k + fail) // 2
            if self.ok(need_rps / mid):
                k = mid
            else:
                fail = mid
        return k

    def refine_max_rate(
        self, lo: float, hi: float, rel_tol: float = 0.03, max_steps: int = 4
    ) -> float:
        """Bisect the largest passing rate in ``[lo, hi)`` (``lo`` passes) [req/s]."""
        hi = min(hi, self.cap_rps)
        if hi <= lo:
            return lo
        if self.ok(hi):
            return hi
        for _ in range(max_steps):
            if hi - lo <= rel_tol * hi:
                break
            mid = (lo + hi) / 2
            if self.ok(mid):
                lo = mid
            else:
                hi = mid
        return lo


def binding_metric(summary: dict[str, Any], slo: SLO) -> str:
    """The SLO metric closest to (or furthest past) its threshold in a run's summary."""
    worst, name = -1.0, "throughput"
    for k, t in slo.targets().items():
        v = summary.get(f"{k}_{t.label}_s", float("nan"))
        if v == v and v / t.max_s > worst:
            worst, name = v / t.max_s, f"{k.upper()} {t.label}"
    return name


def require_finite(name: str, x: float) -> float:
    if not math.isfinite(x):
        raise PlannerError(f"{name} is not a finite number ({x})")
    return x
