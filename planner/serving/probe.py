"""The capacity probe: "does one replica meet the SLO at this arrival rate, and how many replicas
does the peak need?" -- answered by simulation, for one request class or several sharing a pool.

Every question about a replica's capacity goes through :class:`CapacityProbe`:
:func:`planner.serving.max_rate` bisects the rate with it, the recommender finds the smallest
replica count with it (:meth:`CapacityProbe.min_replicas`), and a pool shared by several
request classes is checked with it (each class's SLO on that class's requests only).

Method (the same for every caller, so they agree for the same seed):

* **One request sample per engine key**, drawn at unit rate and rescaled to each probed
  rate (common random numbers: attainment is a near-monotone function of the rate).
  Several classes are drawn in proportion to their peak rates and merged in arrival order.
* **Scored requests**: at least ``n_requests``, more when the SLO looks far into the tail or
  the arrivals are bursty (:func:`scored_requests`).
* **Window**: a warm-up of twice a p99-long answer's E2E at saturation, then the scored
  requests, then arrivals flowing as long again (no ramp-up, no draining engine).
* **Cap**: a rate above ``max_utilization`` x the analytic saturation rate never passes.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.errors import PlannerError
from planner.serving._engine import _run_continuous, _run_static, loop_key
from planner.serving._jit import freeze_long_lived
from planner.serving.replica import Replica, check_fits
from planner.serving.result import SimResult
from planner.serving.speculative import as_tokens, as_verify_steps
from planner.serving.steady_state import (
    SteadyStateResult,
    _constants,
    engine_limits,
    shape_of_requests,
    steady_state,
)
from planner.serving.verdict import stop_rule
from planner.serving.zero_load import (  # noqa: F401 - unloaded_latency: re-exported
    UNLOADED_SEED,
    check_reachable,
    unloaded_latency,
)
from planner.workload.slo import SLO
from planner.workload.workload import Requests, Workload

#: most requests scored per rate in a multi-class probe (its rarest class sets the count)
MAX_SCORED_MIXED = 60_000


def run(
    replica: Replica,
    requests: Requests,
    concurrency: int | None = None,
    *,
    static_batching: bool | None = None,
    stop: tuple[np.ndarray, np.ndarray] | None = None,
) -> SimResult:
    """Simulate ``requests`` on ``replica`` with the engine's runner (continuous or static
    batching; ``static_batching`` forces one); ``concurrency``: closed loop with this many
    clients; ``stop``: an early-stop rule of a verdict-only run (:func:`stop_rule`)."""
    static = (
        (not replica.engine.continuous_batching) if static_batching is None else static_batching
    )
    steps = as_verify_steps(replica.spec, requests)  # speculative decoding: verify steps
    stop = None if replica.spec is not None else stop  # its loop's TPOT is per step, not token
    if static:
        return as_tokens(replica.spec, _run_static(replica, steps, concurrency), requests)
    return as_tokens(replica.spec, _run_continuous(replica, steps, concurrency, stop), requests)


def scored_requests(
    workload: Workload,
    slo: SLO,
    n_requests: int,
    min_exceedances: float = 50.0,
    max_factor: float = 10.0,
) -> int:
    """Requests to score per rate so that about ``min_exceedances`` of them are expected to
    miss the tightest tail the SLO looks at (1 - percentile, or 1 - attainment), scaled by
    the arrivals' burstiness (squared cv of the gaps: exceedances come in clusters, so a
    bursty stream carries fewer independent ones); between ``n_requests`` and
    ``max_factor * n_requests``."""
    tails = [1.0 - t.percentile / 100.0 for t in slo.targets().values()]
    if slo.attainment is not None and slo.targets():
        tails.append(1.0 - slo.attainment)
    tails = [f for f in tails if f > 1e-12]
    if not tails or min_exceedances <= 0:
        return int(n_requests)
    burst = max(1.0, workload.traffic.burstiness())
    need = math.ceil(min_exceedances * burst / min(tails) - 1e-9)
    return int(max(n_requests, min(need, max_factor * n_requests)))


@dataclass(frozen=True)
class RequestClass:
    """One class of requests: its traffic and lengths, and its own SLO."""

    name: str
    workload: Workload
    slo: SLO


def _copied(x: Any) -> Any:
    """``copy.deepcopy(x)`` of a verdict summary, faster: its dicts and lists copied, its
    strings, numbers and None kept (immutable), anything else deep-copied."""
    if isinstance(x, dict):
        return {k: _copied(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_copied(v) for v in x]
    if x is None or isinstance(x, (str, int, float)):
        return x
    return copy.deepcopy(x)


class WorkloadCache:
    """The request classes of one question and what depends on them only, computed once.

    ``shape`` (mean prompt, answer, cached tokens and the answer-weighted running context)
    and the base request sample depend on the classes, the engine's context limit and
    whether prefix caching is on, never on the GPU: they are computed once per such key.

    Parameters
    ----------
    classes : one :class:`RequestClass` (a plain workload) or several sharing one pool
    seed : seed of the request sample, or a generator (then used for the first sample)
    """

    def __init__(
        self, classes: Sequence[RequestClass], seed: int | np.random.Generator = 0
    ) -> None:
        if not classes:
            raise ValueError("WorkloadCache needs at least one request class")
        self.classes = tuple(
            RequestClass(c.name, c.workload.model_copy(update={"offline": False}), c.slo)
            if c.workload.offline
            else c
            for c in classes
        )
        if len(self.classes) == 1:
            self.shares = np.ones(1)
        else:
            peaks = np.array([c.workload.traffic.peak() for c in self.classes], float)
            if not (np.isfinite(peaks).all() and (peaks > 0).all()):
                raise PlannerError(
                    "request classes: every class needs a finite peak rate > 0, got "
                    + ", ".join(f"{c.name} {p:g}" for c, p in zip(self.classes, peaks, strict=True))
                )
            self.shares = peaks / peaks.sum()
        self.seed = seed
        self._shapes: dict[tuple[int | None, bool], tuple[float, ...]] = {}
        self._bases: dict[tuple[int | None, bool, int], tuple[Requests, np.ndarray]] = {}
        #: longest prompt + answer of each untruncated sample: a context limit at or above
        #: it cuts nothing, so every such engine shares the sample (and its shape)
        self._longest: dict[tuple[str, bool, int], int] = {}
        self._unloaded: dict[tuple[int, int, int | None, bool], Requests] = {}
        #: random draws (lengths, unit-rate arrivals) per (class, n, seed): each context
        #: limit cuts the same draws (Workload.requests_of) instead of drawing again
        self._draws: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._fit: dict[int, tuple[Requests, np.ndarray, int]] = {}
        self._sat: dict[int, tuple[Replica, SteadyStateResult]] = {}
        self._quantiles: dict[tuple[int, str, float], float] = {}
        #: zero-load verdicts (:meth:`reachable`) per (replica id, class, values)
        self._reach: dict[tuple[int, int, bool], tuple[Replica, Any]] = {}
        #: verdict runs made ahead by a helper thread (:meth:`run_ahead`), and those running
        self._ahead: dict[tuple[int, float, int], tuple[Replica, Any]] = {}
        self._ahead_busy: dict[tuple[int, float, int], threading.Event] = {}
        #: verdicts of plain verdict runs per (a probe's run_key, rate): another option's
        #: probe with the same run_key would simulate the very same run (see shared_verdict)
        self._verdicts: dict[tuple[Any, float], dict[str, Any]] = {}

    def quantile_tokens(self, index: int, which: str, q: float) -> float:
        """``classes[index].workload.<which>_quantile_tokens(q)`` (``which``: "input" or
        "output") [tokens], computed once per question."""
        key = (index, which, q)
        if key not in self._quantiles:
            w = self.classes[index].workload
            self._quantiles[key] = getattr(w, f"{which}_quantile_tokens")(q)
        return self._quantiles[key]

    def fit_stats(self, reqs: Requests) -> tuple[np.ndarray, int]:
        """(prompt + answer of each request, the longest) of ``reqs``, one of this cache's
        samples, computed once (:func:`planner.serving.check_fits` on every replica)."""
        key = id(reqs)
        if self._fit.get(key, (None,))[0] is not reqs:
            ctx = reqs.input_tokens + reqs.output_tokens
            self._fit[key] = (reqs, ctx, int(ctx.max()))
        return self._fit[key][1:]

    def sample(
        self, n: int, seed: int, context_limit: int | None, prefix_caching: bool, index: int = 0
    ) -> Requests:
        """``classes[index].workload.sample_requests(n, np.random.default_rng(seed), 1.0,
        context_limit=..., prefix_caching=...)``, the random draws made once."""
        w = self.classes[index].workload
        key = (index, int(n), int(seed))
        if key not in self._draws:  # the same draws as sample_lengths, unit_arrivals
            self._draws[key] = w.unit_draws(n, seed)
        return w.requests_of(
            *self._draws[key], 1.0, context_limit=context_limit, prefix_caching=prefix_caching
        )

    @classmethod
    def of(cls, workload: Workload, slo: SLO, seed: int | np.random.Generator = 0):
        """The cache of a single workload and SLO."""
        return cls([RequestClass("", workload, slo)], seed)

    @property
    def single(self) -> bool:
        return len(self.classes) == 1

    @property
    def workload(self) -> Workload:
        """The workload of a single-class question (the first class otherwise)."""
        return self.classes[0].workload

    def _rng(self) -> np.random.Generator:
        if isinstance(self.seed, np.random.Generator):
            return self.seed
        return np.random.default_rng(self.seed)

    def _limit(self, what: str, limit: int, prefix: bool, n: int, sample) -> int | None:
        """``limit``, or None when it cuts no request of the untruncated sample."""
        k = (what, prefix, n)
        if k not in self._longest:
            r = sample(None)
            self._longest[k] = int(np.max(r.input_tokens + r.output_tokens)) if len(r) else 0
        return limit if limit < self._longest[k] else None

    def shape(self, replica: Replica) -> tuple[float, ...]:
        eng = replica.engine
        if not self.single:
            return shape_of_requests(self.base_requests(replica, 20_000)[0])

        def sample(limit: int | None) -> Requests:  # steady_state's own shape sample (_shape)
            return self.sample(20_000, 2024, limit, eng.prefix_caching)

        pc = eng.prefix_caching
        key = (self._limit("shape", eng.context_limit_tokens, pc, 20_000, sample), pc)
        if key not in self._shapes:
            self._shapes[key] = shape_of_requests(sample(key[0]))
        return self._shapes[key]

    def steady_state(self, replica: Replica, rate_rps: float = 1.0) -> SteadyStateResult:
        return steady_state(replica, self.shape(replica), rate_rps)

    def saturation(self, replica: Replica) -> SteadyStateResult:
        """The analytic steady state past saturation (only its ``saturation_*`` fields);
        remembered per replica (the screen asks, then the probe; the search keeps its screened
        replicas anyway)."""
        hit = self._sat.get(id(replica))
        if hit is not None and hit[0] is replica:
            return hit[1]
        fp = steady_state(replica, self.shape(replica), 1e18)
        if len(self._sat) >= 16384:
            self._sat.pop(next(iter(self._sat)))
        self._sat[id(replica)] = (replica, fp)
        return fp

    def slo_rate(self, replica: Replica, cap_rps: float, steps: int = 14) -> float:
        """Largest rate [req/s] at which the analytic steady state's MEAN TTFT, TPOT and E2E
        meet every class's SLO thresholds (bisection up to ``cap_rps``). A percentile is at
        least the mean here, so the simulated rate meeting a p99 target is below this one, up
        to the analytic model's error (tested within 10 % on mean throughput)."""
        tgs = [c.slo.targets() for c in self.classes]
        if not any(tgs):
            return cap_rps
        # compiled (planner.serving._steady): the same steps as steady_state at each rate
        from planner.serving._steady import slo_rate_kernel

        k, dec, budget, _, (_, t_sat, lam_sat, _) = _constants(replica, self.shape(replica))
        worst = {
            n: min((tg[n].max_s for tg in tgs if n in tg), default=math.inf)
            for n in ("ttft", "tpot", "e2e")
        }
        worst = engine_limits(worst, replica)  # TPOT x AL per step; TTFT, E2E - first-token path
        rate = float(
            slo_rate_kernel()(
                k, dec, budget, lam_sat, t_sat, worst["ttft"], worst["tpot"], worst["e2e"],
                float(cap_rps), int(steps),
            )
        )  # fmt: skip
        freeze_long_lived("slo_rate")  # numba's objects, loaded by the first call
        return rate

    def reachable(self, replica: Replica, index: int = 0, values: bool = True) -> dict[str, float]:
        """:func:`check_reachable` of ``replica`` for class ``index`` on its
        :meth:`unloaded_requests`, remembered per replica (the recommender's screening
        thread may ask first); raises the same :class:`PlannerError` on every call."""
        key = (id(replica), int(index), bool(values))
        hit = self._reach.get(key)
        if hit is None or hit[0] is not replica:
            c = self.classes[index]
            try:
                out: Any = check_reachable(
                    replica, c.workload, c.slo, values=values,
                    requests=self.unloaded_requests(replica, index),
                )  # fmt: skip
            except PlannerError as e:
                out = e.with_traceback(None)
            hit = (replica, out)
            if len(self._reach) >= 16384:
                self._reach.clear()
            self._reach[key] = hit
        if isinstance(hit[1], PlannerError):
            raise hit[1].copy()  # the same error, without the frames of earlier raises
        return dict(hit[1])

    def run_ahead(self, probe: CapacityProbe, rate: float) -> None:
        """Run ``probe``'s verdict at ``rate`` (a helper thread, on its own probe, ahead of
        the search) and keep it for the search's probe of the same replica:
        :meth:`CapacityProbe.run` takes it instead of simulating (the same run), waiting
        for it while it runs."""
        key = (id(probe.replica), rate, probe.n_cap)
        done = threading.Event()
        self._ahead_busy[key] = done
        probe.ahead = True  # its own run takes nothing
        try:
            probe.run(rate)
            if len(self._ahead) >= 64:
                self._ahead.clear()
            self._ahead[key] = (
                probe.replica, (probe.summaries[rate], probe._results.get(rate), probe.n_scored)
            )  # fmt: skip
        finally:
            self._ahead_busy.pop(key, None)
            done.set()

    def take_ahead(self, probe: CapacityProbe, rate: float, wait_s: float = 0.005) -> Any:
        """The run :meth:`run_ahead` made for ``probe`` at ``rate`` (once; waiting for it
        at most ``wait_s`` while it runs: on a busy machine the helper may be starved), or
        None."""
        key = (id(probe.replica), rate, probe.n_cap)
        busy = self._ahead_busy.get(key)
        if busy is not None:
            busy.wait(wait_s)
        hit = self._ahead.pop(key, None)
        if hit is None or hit[0] is not probe.replica or hit[1][2] != probe.n_scored:
            return None
        return hit[1]

    def shared_verdict(self, probe: CapacityProbe, rate: float) -> dict[str, Any] | None:
        """The summary of a plain verdict run (not ``exact``, not ``whole``) that a probe of
        another replica with the same :attr:`CapacityProbe.run_key` made at ``rate``, or None.

        It is the summary ``probe`` would compute itself, not an estimate: the run key holds
        every input of the compiled event loop that comes from the replica
        (:func:`planner.serving._engine.loop_key`) and every setting of the probe that shapes
        the run (requests scored, sample size, warm-up and tail, early stop); the request
        sample and the SLO belong to this cache. So the same key and rate mean the same
        requests through the same deterministic loop: the same latencies, the same verdict.
        (Precision variants the catalog lists apart but models alike, e.g. int4-awq and
        int4-gptq, often share a key.)"""
        if probe.run_key is None:
            return None
        hit = self._verdicts.get((probe.run_key, rate))
        return _copied(hit) if hit is not None else None

    def keep_verdict(self, probe: CapacityProbe, rate: float, summary: dict[str, Any]) -> None:
        """Remember a plain verdict run's summary for :meth:`shared_verdict`."""
        if probe.run_key is None:
            return
        if len(self._verdicts) >= 50_000:
            self._verdicts.clear()
        self._verdicts[(probe.run_key, rate)] = _copied(summary)

    def unloaded_requests(self, replica: Replica, index: int = 0, n: int = 400) -> Requests:
        """The request sample of :func:`unloaded_latency` for class ``index`` (its default
        seed), drawn once per engine context limit and prefix-caching setting."""
        eng = replica.engine
        key = (index, int(n), eng.context_limit_tokens, bool(eng.prefix_caching))
        if key not in self._unloaded:
            self._unloaded[key] = self.sample(n, UNLOADED_SEED, key[2], key[3], index)
        return self._unloaded[key]

    def base_requests(self, replica: Replica, n: int) -> tuple[Requests, np.ndarray]:
        """``n`` requests (at least) at a total rate of 1 req/s and each one's class index."""
        eng = replica.engine
        n = int(n)

        def single(limit: int | None) -> Requests:
            if isinstance(self.seed, np.random.Generator):  # its state moves on: draw again
                return self.workload.sample_requests(
                    n, self._rng(), 1.0, context_limit=limit, prefix_caching=eng.prefix_caching
                )
            return self.sample(n, self.seed, limit, eng.prefix_caching)

        limit = eng.context_limit_tokens
        if self.single and not isinstance(self.seed, np.random.Generator):
            limit = self._limit("base", limit, eng.prefix_caching, n, single)
            if limit is None and (None, eng.prefix_caching, n) not in self._bases:
                r = single(None)
                self._bases[(None, eng.prefix_caching, n)] = (r, np.zeros(len(r), np.int64))
        key = (limit, eng.prefix_caching, n)
        if key not in self._bases:
            rng = self._rng()
            if self.single:
                r = single(limit)
                self._bases[key] = (r, np.zeros(len(r), dtype=np.int64))
            else:
                # classes have different prefixes: no shared-prefix cache across them
                parts = []
                for k, (c, s) in enumerate(zip(self.classes, self.shares, strict=True)):
                    n_c = max(50, int(math.ceil(1.05 * n * s)))
                    r = c.workload.sample_requests(
                        n_c, rng, 1.0, context_limit=eng.context_limit_tokens, prefix_caching=False
                    )
                    parts.append((r.arrival_s / s, r, np.full(n_c, k)))
                arr = np.concatenate([p[0] for p in parts])
                order = np.argsort(arr, kind="stable")[:n]
                cat = lambda f: np.concatenate([getattr(p[1], f) for p in parts])[order]  # noqa: E731
                r = Requests(
                    arr[order],
                    cat("input_tokens"),
                    cat("output_tokens"),
                    cat("cached_tokens"),
                    0,
                    int(sum(p[1].truncated for p in parts)),
                    max(p[1].max_new_tokens for p in parts),
                )
                self._bases[key] = (r, np.concatenate([p[2] for p in parts])[order])
        return self._bases[key]


class CapacityProbe:
    """SLO checks of one replica at chosen arrival rates [req/s], cached by rate.

    Parameters
    ----------
    replica : the replica
    cache : the request classes (:class:`WorkloadCache`)
    n_requests : requests scored per rate, at least
    max_utilization : rates above this fraction of the analytic saturation rate never pass
    min_exceedances, max_scored_factor : see :func:`scored_requests`
    early_stop : stop each run once its verdict is certain (:func:`stop_rule`; one request
        class, continuous batching): every verdict is the same, but a run that missed may
        hold only bounds (``stopped_early`` in its summary: ``slo_attainment`` is then an
        upper bound and the percentiles are absent; :meth:`run` with ``exact=True`` runs it
        again to the last scored request). Reported runs (:meth:`full`) are always whole.
    """

    def __init__(
        self,
        replica: Replica,
        cache: WorkloadCache,
        *,
        n_requests: int = 1200,
        max_utilization: float = 0.95,
        min_exceedances: float = 50.0,
        max_scored_factor: float = 10.0,
        early_stop: bool = False,
    ) -> None:
        self.replica = replica
        self.cache = cache
        self.classes = cache.classes
        self.slo = self.classes[0].slo
        fp = cache.saturation(replica)
        self.saturation_rps = fp.saturation_rps
        self.saturation_limit = fp.limited_by
        self.cap_rps = max_utilization * fp.saturation_rps
        t_sat = fp.saturation_iteration_s
        o99 = max(cache.quantile_tokens(i, "output", 0.99) for i in range(len(self.classes)))
        self.tail_s = max(fp.saturation_e2e_s, o99 * t_sat)
        self.warm_s = 2.0 * self.tail_s
        need = [
            scored_requests(c.workload, c.slo, n_requests, min_exceedances, max_scored_factor)
            / max(s, 1e-9)
            for c, s in zip(self.classes, cache.shares, strict=True)
        ]
        self.n_scored = int(max(need) if cache.single else min(max(need), MAX_SCORED_MIXED))
        self.n_cap = self.n_scored + 11 * int(n_requests)
        self.base, self.labels = cache.base_requests(replica, self.n_cap)
        self.n_cap = len(self.base)
        #: requests cut to the engine's context limit in the base sample
        self.truncated_requests = int(self.base.truncated)
        self.early_stop = bool(early_stop and cache.single)
        #: what makes two probes' runs at one rate the same run (WorkloadCache.shared_verdict);
        #: None: never shared
        lk = loop_key(replica)
        self.run_key = (
            None
            if lk is None
            else (lk, self.n_cap, self.n_scored, self.warm_s, self.tail_s, self.early_stop)
        )
        self.summaries: dict[float, dict[str, Any]] = {}
        #: per rate: the run, its scored mask, its warm-up [s], whether it ran to the end
        self._results: dict[float, tuple[SimResult, np.ndarray, float, bool]] = {}
        self.simulations = 0
        self._checked = 0  # 1: verdict, 2: and the zero-load values
        #: a helper's probe, running ahead of the search (WorkloadCache.run_ahead)
        self.ahead = False
        self.zero_load: dict[str, float] = {}

    def check(self, values: bool = True) -> dict[str, float]:
        """Raise when a request does not fit or misses its SLO even served alone; return the
        zero-load percentiles (:func:`check_reachable`; ``values=False``: the verdict only,
        the dict may be empty)."""
        if self._checked < (2 if values else 1):
            if not self._checked:
                check_fits(self.replica, self.base, self.cache.fit_stats(self.base))
            for i, c in enumerate(self.classes):
                z = self.cache.reachable(self.replica, i, values)
                self.zero_load.update(
                    z if self.cache.single else {f"{c.name}.{k}": v for k, v in z.items()}
                )
            self._checked = 2 if values else 1
        return self.zero_load

    def run(self, rate: float, exact: bool = False, whole: bool = False) -> dict[str, Any]:
        """The SLO verdict of the scored requests at ``rate`` [req/s]: ``slo_ok``,
        ``slo_attainment`` (the lowest class's), the percentiles each SLO names, and per
        class (``classes``) when there are several.

        With ``early_stop`` the run may stop once its verdict is certain (see the class);
        ``exact``: the percentiles and attainment are needed (a run that stopped early is
        run again up to its last scored request); ``whole``: the run goes to its end (the
        arrays :meth:`full` summarises)."""
        if rate in self.summaries:
            s = self.summaries[rate]
            if not (exact and s.get("stopped_early")) and (
                not whole or self._results.get(rate, (None,) * 4)[3]
            ):
                return s
        self.check(values=not self.early_stop)
        plain = not exact and not whole
        if plain:
            # the same run, made for another replica's probe (asked first, and kept only
            # from the search's own probes: a helper thread changes no count)
            shared = self.cache.shared_verdict(self, rate)
            if shared is not None:
                self.summaries[rate] = shared
                return shared
        if self.early_stop and plain and not self.ahead:
            ahead = self.cache.take_ahead(self, rate)  # the same run, made by a helper
            if ahead is not None:
                self.simulations += 1
                self.summaries[rate] = ahead[0]
                if ahead[1] is not None:
                    self._results[rate] = ahead[1]
                self.cache.keep_verdict(self, rate, ahead[0])
                return ahead[0]
        base = self.base
        k = int(min(self.n_cap, self.n_scored + math.ceil(rate * (self.warm_s + self.tail_s)) + 1))
        reqs = Requests(
            base.arrival_s[:k] / rate, base.input_tokens[:k], base.output_tokens[:k],
            base.cached_tokens[:k], base.shared_prefix_tokens, 0, base.max_new_tokens,
        )  # fmt: skip
        a = reqs.arrival_s
        lo_t = min(self.warm_s, float(a[int(0.5 * (k - 1))]))
        i0 = int(np.searchsorted(a, lo_t))
        mask = (a >= lo_t) & (np.arange(k) < i0 + self.n_scored)
        i1 = min(k, i0 + self.n_scored)
        stop = None
        if self.early_stop and not whole and np.count_nonzero(mask) == i1 - i0 > 0:
            stop = stop_rule(self.slo, reqs.output_tokens, i0, i1, until_decided=not exact)
        res = run(self.replica, reqs, stop=stop)
        self.simulations += 1
        stats = res.meta.get("stop")
        s: dict[str, Any] = {"rate_rps": rate}
        if stats is not None and stats[5] == 1:  # a miss was certain: bounds only
            n = i1 - i0
            s.update(
                slo_ok=False,
                slo_attainment=(n - int(stats[0])) / n,
                stopped_early={
                    "scored": n,
                    "finished": int(stats[4]),
                    "bad": int(stats[0]),
                    **{
                        f"{m}_over": int(stats[1 + j])
                        for j, m in enumerate(("ttft", "tpot", "e2e"))
                        if m in self.slo.targets()
                    },
                },
            )
            self.summaries[rate] = s
            self._results.pop(rate, None)
            if plain and not self.ahead:
                self.cache.keep_verdict(self, rate, s)
            return s
        # the verdict needs only the per-request latencies of the scored requests; the full
        # summary (ITL and batch percentiles, throughput) is computed for reported runs only
        per: dict[str, dict[str, Any]] = {}
        for i, c in enumerate(self.classes):
            m = mask if self.cache.single else mask & (self.labels[:k] == i)
            ev = c.slo.evaluate(res.ttft_s[m], res.tpot_s[m], res.e2e_s[m])
            per[c.name] = {
                "ok": ev["ok"],
                "attainment": ev["attainment"],
                **{k2: v for k2, v in ev.items() if k2.endswith("_s")},
            }
        if self.cache.single:
            (only,) = per.values()
            s.update({k2: v for k2, v in only.items() if k2.endswith("_s")})
        else:
            s["classes"] = per
        s["slo_ok"] = all(v["ok"] for v in per.values())
        s["slo_attainment"] = min(v["attainment"] for v in per.values())
        self.summaries[rate] = s
        self._results[rate] = (res, mask, lo_t, stats is None or stats[5] == 0)
        if plain and not self.ahead:
            self.cache.keep_verdict(self, rate, s)
        return s

    def keep_only(self, rate: float | None) -> None:
        """Free the per-request arrays of every run but the one at ``rate`` (memory)."""
        self._results = {r: v for r, v in self._results.items() if r == rate}

    def full(self, rate: float) -> dict[str, Any]:
        """The complete summary (:meth:`planner.serving.SimResult.summary`) of the run at
        ``rate`` (simulated first if needed; again if its arrays were freed). With several
        classes: latencies over every request, each class's verdict under ``classes``."""
        verdict = self.run(rate, whole=True)
        res, mask, warmup_s, _ = self._results[rate]
        s = res.summary(self.slo if self.cache.single else None, mask=mask)
        s["warmup_s"] = warmup_s
        s["rate_rps"] = rate
        if not self.cache.single:
            s.update(
                slo_ok=verdict["slo_ok"],
                slo_attainment=verdict["slo_attainment"],
                classes=verdict["classes"],
            )
        return s

    def ok(self, rate: float) -> bool:
        if rate > self.cap_rps * (1 + 1e-9):
            return False
        return bool(self.run(rate)["slo_ok"])

    def min_replicas(
        self,
        need_rps: float,
        k_lb: int,
        k_max: int,
        k_start: int | None = None,
        cap_next: bool = False,
    ) -> int | None:
        """Smallest replica count ``k >= k_lb`` whose per-replica rate ``need / k`` meets the
        SLO; None when even ``k_max`` replicas fail.

        Starts at ``k_start`` (an estimate, default ``k_lb``) and gallops (steps 1, 2, 4, ...)
        downward while it passes, otherwise upward, then bisects between the last failure and
        the first pass: O(log k) simulations at any fleet size (a one-by-one walk down from a
        high estimate took a simulation per replica: 10 million req/s never ended). With a
        good estimate this takes two simulations.

        ``cap_next``: when ``k_start`` fails, try ``k_max`` next (a cap past which the answer
        no longer matters, e.g. more replicas than a cheaper option needs): an option that
        fails there is settled by two simulations instead of a gallop up to the cap; one that
        passes is bisected between the two. The answer is the same as the gallop's whenever
        the SLO verdict is monotone in the rate (what the bisection assumes anyway)."""
        k_lb = max(1, int(k_lb))
        if k_max < k_lb:
            return None
        k = self.first_k(k_lb, k_max, k_start)
        step = 1
        if self.ok(need_rps / k):  # gallop down: k passes, find a failure below it
            while True:
                if k == k_lb:
                    return k
                lower = max(k_lb, k - step)
                if not self.ok(need_rps / lower):
                    fail = lower
                    break
                k, step = lower, step * 2
        elif cap_next and k < k_max:  # k fails: the cap settles it or bounds the bisection
            if not self.ok(need_rps / k_max):
                return None
            fail, k = k, k_max
        else:  # gallop up: k fails, find a pass above it
            fail = k
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
        while k - fail > 1:  # bisect: fail fails, k passes
            mid = (k + fail) // 2
            if self.ok(need_rps / mid):
                k = mid
            else:
                fail = mid
        return k

    @staticmethod
    def first_k(k_lb: int, k_max: int, k_start: int | None = None) -> int:
        """The first replica count :meth:`min_replicas` tries."""
        return min(max(max(1, int(k_lb)), int(k_start or k_lb)), k_max)

    def refine_max_rate(
        self, lo: float, hi: float, rel_tol: float = 0.03, max_steps: int = 4
    ) -> float:
        """Bisect the largest passing rate in ``[lo, hi)`` (``lo`` passes) [req/s]; the
        answer is always a rate that was simulated and met the SLO."""
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

    def binding_metric(self, summary: dict[str, Any]) -> str:
        """The SLO metric closest to (or furthest past) its threshold in a run's verdict."""
        worst, name = -1.0, "throughput"
        for c in self.classes:
            s = summary if self.cache.single else summary.get("classes", {}).get(c.name, {})
            for k, t in c.slo.targets().items():
                v = s.get(f"{k}_{t.label}_s", float("nan"))
                if v == v and v / t.max_s > worst:
                    pre = "" if self.cache.single else f"{c.name} "
                    worst, name = v / t.max_s, f"{pre}{k.upper()} {t.label}"
        return name

    def binding(self, summary: dict[str, Any]) -> str:
        """:meth:`binding_metric`, with " (attainment)" when a class's attainment also fell
        below its target in that run."""
        name = self.binding_metric(summary)
        for c in self.classes:
            s = summary if self.cache.single else summary.get("classes", {}).get(c.name, {})
            a = s.get("slo_attainment", s.get("attainment", 1.0))
            if c.slo.attainment is not None and a < c.slo.attainment:
                return name + " (attainment)"
        return name
