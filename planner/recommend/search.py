"""Branch and bound over the option space: screen analytically, simulate only what can still win.

1. **Enumerate** (:func:`planner.recommend.options.enumerate_options`): compatibility rules.
2. **Screen** every option analytically, in microseconds each:
   memory (weights fit; the p-th percentile request, prompt + answer, fits in the KV cache and
   the engine's context); zero-load floors (a decode step at batch 1 is already slower than
   the TPOT target); price; and a lower bound on the objective from the analytic saturation
   rate (a replica never sustains more than ``max_utilization`` x saturation, so
   ``replicas >= ceil(peak x (1 + headroom) / (0.95 x saturation))``).
3. **Search**: options in order of their bound; each is simulated
   (:class:`planner.serving.CapacityProbe`: the smallest replica count whose per-replica rate
   meets the SLO) only while its bound can still beat the N-th best simulated value. Options
   never simulated are reported as ``pruned`` with the bound that ruled them out: a
   screening figure is never a result.
4. **Finish** the top N (and the Pareto candidates): refine the per-replica maximum rate by
   bisection, simulate the planned load (peak / replicas) for the P99 latencies, and price
   the fleet (fixed and autoscaled with the daily profile), energy and quality.

The same search serves one workload (:func:`recommend`) and a pool shared by several request
classes (:func:`search` with a multi-class :class:`planner.serving.WorkloadCache`).
"""

from __future__ import annotations

import functools
import heapq
import math
import time
from typing import Any

import numpy as np

from ..catalog import Catalog, model_family  # noqa: F401 - model_family: re-exported
from ..cost import load_ownership
from ..errors import PlannerError
from ..files import rare_gc
from ..serving import WorkloadCache
from ..workload import SLO, Workload
from .beyond import edge_value, transfer_tier
from .constraints import Constraints, budget_limits, constraints_of
from .decide import diverse
from .forked import Forked, fill
from .objective import (
    OBJECTIVE_TABLE,
    OBJECTIVES,
    TIE_REL,
    Load,
    RatioBook,
    Screened,
    bracket,
    evaluate,
    over_budget,
    prune_reason,
    sort_key,
)
from .options import (
    MAX_TP_PER_NODE,
    Option,
    Rejection,
    enumerate_options,
    pp_options,
)
from .recommendation import Recommendation, _Reporting
from .screen import _Screening
from .threads import Prefetch, run_ahead, threads

__all__ = [
    "OBJECTIVES",
    "OBJECTIVE_TEXT",
    "Recommendation",
    "recommend",
    "search",
    "constraints_of",
]

#: what each objective minimises, for the output
OBJECTIVE_TEXT = {name: o.text for name, o in OBJECTIVE_TABLE.items()}


def recommend(
    model: str,
    workload: Workload,
    slo: SLO,
    *,
    catalog: Catalog,
    constraints: Constraints | None = None,
    objective: str = "cost",
    top_n: int = 5,
    engine: dict[str, Any] | None = None,
    profile: Any = None,
    n_requests: int = 1200,
    seed: int = 0,
    exhaustive: bool = False,
    refine: bool = False,
    per_gpu: bool = False,
    **constraint_fields: Any,
) -> Recommendation:
    """Rank every deployment of ``model`` that serves ``workload`` within ``slo``.

    Parameters
    ----------
    model : model id (resolved through ``catalog``)
    workload, slo : the traffic, lengths and latency targets (e.g. from a scenario)
    catalog : the catalog (resolve ids once, at the edge)
    constraints : what the answer must respect (a scenario's ``constraints``: option space,
        headroom, fleet and budget limits, quality floor, price basis, providers, price
        overrides, fit percentile, latency cost cap); keywords named like its fields
        (``gpus=``, ``max_usd_per_hour=``, ...) replace single values
    objective : one of :data:`OBJECTIVES` (default ``cost``; docs/recommend.md)
    top_n : recommendations to return
    engine : serving-engine overrides (max_num_seqs, max_num_batched_tokens, ...)
    profile : calibration profile (default: the bundled one)
    n_requests : scored requests per simulation (at least)
    seed : random seed of the request sample
    exhaustive : simulate every feasible option (no pruning; for validation)
    refine : bisect each recommendation's maximum rate per replica to 3 % (more
        simulations); otherwise it is the tested rate ``need / replicas``
    per_gpu : rank within each GPU: the best ``top_n`` options of every GPU (the
        procurement comparison; pruning only within a GPU)

    Returns
    -------
    Recommendation
    """
    c = constraints_of(constraints, constraint_fields)
    return search(
        model,
        WorkloadCache.of(workload, slo, seed),
        catalog=catalog,
        constraints=c,
        objective=objective,
        top_n=top_n,
        engine=engine,
        profile=profile,
        n_requests=n_requests,
        exhaustive=exhaustive,
        refine=refine,
        per_gpu=per_gpu,
    )


@rare_gc()  # the search's garbage is freed by reference counting (planner.files.rare_gc)
def search(
    model: str,
    cache: WorkloadCache,
    *,
    catalog: Catalog,
    constraints: Constraints,
    objective: str = "cost",
    top_n: int = 5,
    engine: dict[str, Any] | None = None,
    profile: Any = None,
    n_requests: int = 1200,
    exhaustive: bool = False,
    refine: bool = False,
    per_gpu: bool = False,
) -> Recommendation:
    """:func:`recommend` for the request class(es) of ``cache`` (several: one shared pool)."""
    t0 = time.perf_counter()
    if objective not in OBJECTIVE_TABLE:
        raise PlannerError(
            f"unknown objective '{objective}' (choose from: {', '.join(OBJECTIVES)})"
        )
    if not (isinstance(top_n, int) and top_n >= 1):
        raise PlannerError(f"top must be a whole number >= 1, got {top_n!r}")
    c = constraints
    limits = budget_limits(c)
    notes = []
    if objective == "latency":
        # the cost cap: the cheapest feasible fleet first (same constraints), then the
        # lowest P99 among the options costing at most latency_cost_cap x as much
        kw = dict(catalog=catalog, constraints=c, top_n=1, engine=engine, profile=profile)
        cheapest = search(model, cache, objective="cost", n_requests=n_requests, **kw)
        usd = cheapest.recommendations[0]["usd_per_hour"]
        cap = c.latency_cost_cap * usd
        limits.append(
            (cap, f"the latency cost cap {c.latency_cost_cap:g} x the cheapest feasible "
             f"option (${usd:,.2f}/h) = ${cap:,.2f}/h")
        )  # fmt: skip
        notes.append(
            f"latency: only options costing at most {c.latency_cost_cap:g} x the cheapest "
            f"feasible fleet (${usd:,.2f}/h, so <= ${cap:,.2f}/h; --latency-cost-cap changes "
            "it); equal P99 (within 1 %) ranks by cost"
        )
    s = _Search(
        model, cache, catalog, c, OBJECTIVE_TABLE[objective], top_n, engine, profile,
        n_requests, exhaustive, refine, per_gpu, tuple(limits),
    )  # fmt: skip
    res = s.run(t0)
    res.assumptions.extend(notes)
    return res


class _Search(_Screening, _Reporting):
    """One branch-and-bound run (state shared by its steps: the screen of an option in
    :class:`~planner.recommend.screen._Screening`, the report in
    :class:`~planner.recommend.recommendation._Reporting`).

    ``n_threads``: threads it uses (None: :func:`~planner.recommend.threads.threads`)."""

    def __init__(
        self, model, cache, catalog, constraints, obj, top_n, engine, profile, n_requests,
        exhaustive, refine, per_gpu, limits, n_threads: int | None = None,
    ) -> None:  # fmt: skip
        c = constraints
        self.n_threads = n_threads
        self.cat, self.c, self.obj, self.top_n = catalog, c, obj, top_n
        self.m = catalog.model(model)
        self.cache, self.profile, self.n_requests = cache, profile, n_requests
        self.exhaustive, self.refine, self.per_gpu, self.limits = (
            exhaustive, refine, per_gpu, limits
        )  # fmt: skip
        self.eng_kw = {k: v for k, v in (engine or {}).items() if v is not None}
        self.overrides = {catalog.gpu(k).id: float(v) for k, v in c.usd_per_gpu_hour.items()}
        self.ownership = load_ownership() if c.price_basis == "own" else None
        cls = cache.classes
        peak = float(sum(x.workload.traffic.peak() for x in cls))
        shares = cache.shares

        def mean(f: Any) -> float:
            return float(sum(s * f(x.workload) for x, s in zip(cls, shares, strict=True)))

        self.load = Load(
            need_rps=peak * (1.0 + c.headroom),
            peak_rps=peak,
            hourly_rps=np.sum([x.workload.traffic.hourly_rps() for x in cls], axis=0),
            mean_input_tokens=mean(lambda w: w.mean_input_tokens()),
            mean_output_tokens=mean(lambda w: w.mean_output_tokens()),
        )
        #: each class's mean prompt [tokens], where its zero-load TPOT floor is read
        self.mean_input = [x.workload.mean_input_tokens() for x in cls]
        self.price_cache: dict[str, Any] = {}
        self.param_cache: dict[tuple[str, str, str], tuple[Any, str, str | None]] = {}
        self.floor_cache: dict[tuple[str, Any], tuple[str, str] | None] = {}
        self.weight_fit: dict[tuple[str, str, int, int], str | None] = {}
        self.rejected: list[Rejection] = []
        self.done: list[Screened] = []
        self.screened: list[Screened] = []
        #: best value of each (group, GPU x framework) pair simulated so far
        self.best: dict[tuple[str | None, tuple[str, str]], float] = {}
        self.pruned = 0

    # ------------------------------------------------------------------ search
    def group(self, opt: Option) -> str | None:
        return opt.gpu.id if self.per_gpu else None

    def nth_best(self, g: str | None = None, best: dict | None = None) -> float:
        """The N-th best value among distinct GPU x framework pairs (the top N is diverse);
        ``best``: the pairs' best values (default: the search's now)."""
        best = self.best if best is None else best
        vals = sorted(v for (g2, _), v in best.items() if g2 == g)
        return vals[self.top_n - 1] if len(vals) >= self.top_n else math.inf

    def threshold(self, opt: Option, best: dict | None = None) -> float:
        """The value an option must beat to matter: the N-th best distinct pair's, or, when
        its own GPU x framework pair is already in the top N, that pair's best; either one
        widened by :data:`TIE_REL`: a value in the same tie bucket can still outrank it on
        :func:`sort_key`'s tie-breaks (at equal $/h, TensorRT-LLM DEP8 fitted on its own B200
        rows beats SGLang DEP4 transferred; pruned at the bare N-th best, ``--top 1`` named
        SGLang where ``--top 3`` ranked TensorRT-LLM first)."""
        best = self.best if best is None else best
        g = self.group(opt)
        nth = self.nth_best(g, best)
        b = best.get((g, (opt.gpu.id, opt.framework.id)))
        return (b if b is not None and b <= nth else nth) * (1 + TIE_REL)

    def prune(self, key: float, stage: int, item: Any, best: float) -> None:
        opt = item if stage == 0 else item.opt
        why = (
            prune_reason(
                item, self.obj, best, self.top_n, transfer_tier(item.provenance) is not None
            )
            if stage >= 1
            else f"cannot beat the top {self.top_n} (not simulated): one replica alone "
            f"({opt.gpus_per_replica} GPUs) already has {self.obj.show(key)}; "
            f"#{self.top_n} has {self.obj.show(best)}"
        )
        self.rejected.append(Rejection.of(opt, "pruned", why))
        self.pruned += 1

    def k_start(self, s: Screened, learned: RatioBook, slo_rate_rps: float) -> int:
        """Seed of the replica search: the analytic SLO rate (mean latencies at the targets)
        times the median ratio simulated / analytic of the options simulated so far on this
        GPU (on any, before the first)."""
        typ = learned.typical(s.opt.gpu.id)
        return max(s.k_lb, math.ceil(self.load.need_rps / (typ * slo_rate_rps) - 1e-9))

    def k_cap(self, s: Screened, best: float) -> int | None:
        """Most replicas that can still beat ``best`` (the threshold), or None: no cap."""
        p = s.usd_per_gpu_hour
        if self.obj.name == "cost" and p and math.isfinite(best) and not self.exhaustive:
            return max(s.k_lb, int(best / (s.opt.gpus_per_replica * p) + 1e-9))
        return None

    def simulate(self, s: Screened, learned: RatioBook) -> None:
        """Simulate one screened option; it joins ``done`` or ``rejected``."""
        ld = self.load

        def k_start() -> int:  # computed only for an option that meets the SLO served alone
            s.slo_rate_rps = self.cache.slo_rate(s.replica, s.cap_rps)
            return self.k_start(s, learned, s.slo_rate_rps)

        # an option that needs more replicas than the N-th best's cost allows cannot win
        k_cap = self.k_cap(s, self.threshold(s.opt))
        k_max, why, stage = self.k_max(s)
        r = evaluate(s, self.cache, ld.need_rps, self.n_requests, k_max, k_start, k_cap, why, stage)
        if isinstance(r, Rejection):
            self.rejected.append(r)
            return
        learned.add(bracket(s, ld.need_rps)[0] / s.slo_rate_rps, s.opt.gpu.id)
        s.value = self.obj.value(s, ld, self.refine)
        if s.value is None:
            self.rejected.append(
                Rejection.of(s.opt, "energy", "no TDP in the catalog for this GPU")
            )
            return
        s.value = edge_value(s, self.obj.name, s.value, ld)  # beyond measurements: band edge
        over = over_budget(s, s.replicas, self.c.max_total_gpus, self.limits)
        if over:
            self.rejected.append(over)
            return
        self.done.append(s)
        k = (self.group(s.opt), (s.opt.gpu.id, s.opt.framework.id))
        self.best[k] = min(self.best.get(k, math.inf), s.value)
        # memory: only options that can still make the top keep their simulated requests
        if len(self.done) > 2 * self.top_n and not self.per_gpu:
            self.done.sort(key=lambda x: sort_key(x, ld.need_rps))
            keep = {id(x) for lead, vs in diverse(self.done, self.top_n) for x in (lead, *vs)}
            for x in self.done:
                if id(x) not in keep:
                    x.probe.keep_only(None)

    def run(self, t0: float) -> Recommendation:
        return self.report(t0, self.explore())

    def threads(self) -> int:
        return threads() if self.n_threads is None else self.n_threads

    def explore(self) -> int:
        """The branch and bound (``done``, ``rejected``, ``screened`` filled); returns the
        count of options enumerated."""
        c, obj, m = self.c, self.obj, self.m
        options, self.rejected = enumerate_options(
            self.cat, m, gpus=c.gpus, frameworks=c.frameworks, precisions=c.precisions,
            kv_precisions=c.kv_precisions, tps=c.tps,
            max_gpus_per_replica=c.max_gpus_per_replica, min_weight_bits=c.min_weight_bits,
            speculative=c.speculative == "auto", datacenter_only=c.datacenter_only,
            spec_workload=c.spec_workload, acceptance_length=c.acceptance_length,
        )  # fmt: skip
        n_enumerated = len(options) + len(self.rejected)
        # best-first over a heap of (bound, stage, seq, item): stage 0 = not yet screened
        # (bound from the price of one replica), 1 = screened (bound from the saturation
        # rate), then simulated. An item whose bound cannot beat the N-th best simulated
        # value is pruned with the bound as its reason; nothing unscreened or unsimulated
        # is ever reported.
        heap: list[tuple[float, int, int, Any]] = []
        self.seq = 0  # insertion order: breaks ties of the bound
        max_tp = max(c.tps)
        for opt in options:
            if obj.needs_price and isinstance(self.price_of(opt.gpu.id), PlannerError):
                why = f"no price: {self.price_of(opt.gpu.id)}"
                self.rejected.append(Rejection.of(opt, "price", why))
                continue
            heap.append((self.lb0(opt), 0, self.seq, opt))
            self.seq += 1
        heapq.heapify(heap)
        learned = RatioBook(own_only=self.per_gpu)
        prefetch: Prefetch | None = None
        forked = Forked.start(self, heap)  # the back options screened on the second core
        try:
            while heap:
                key, stage, seq_i, item = heapq.heappop(heap)
                best = self.threshold(item if stage == 0 else item.opt)
                if not self.exhaustive and math.isfinite(best) and key >= best * (1 - 1e-9):
                    self.prune(key, stage, item, best)
                    # the heap is ordered: once past every pair's threshold, nothing left
                    # can win
                    last = self.nth_best(None) * (1 + TIE_REL)
                    if not self.per_gpu and math.isfinite(last) and key >= last * (1 - 1e-9):
                        for key2, stage2, _, it2 in heap:
                            self.prune(key2, stage2, it2, best)
                        break
                    continue
                if stage == 1:
                    if prefetch is None and self.prefetch_ok():
                        # the first simulation: screen the options to come meanwhile
                        tried: set[int] = set()
                        prefetch = Prefetch(
                            [(q, o) for _, _, q, o in sorted(heap, key=lambda x: x[:3])],
                            self.screen_option,
                            self.zero_load,
                            functools.partial(run_ahead, self, heap, learned, tried),
                        )
                    self.simulate(fill(self, item), learned)
                    continue
                r = (prefetch or forked).take(seq_i) if prefetch or forked else None
                self.step_screened(heap, item, self.screen_option(item) if r is None else r, max_tp)
        finally:
            for helper in (prefetch, forked):
                if helper is not None:
                    helper.close()
        return n_enumerated

    def prefetch_ok(self) -> bool:
        """Whether a second thread may screen ahead: only where it is certain to help
        (``per_gpu``: the search visits nearly every option) and cannot change a number
        (a request sample from a shared random generator depends on the order of draws)."""
        return (
            self.per_gpu
            and not isinstance(self.cache.seed, np.random.Generator)
            and self.threads() > 1
        )

    def screen_option(self, opt: Option) -> Screened | Rejection:
        """The weights check, then :meth:`screen`."""
        wp = self.weights_problem(opt)
        return Rejection.of(opt, "memory", wp) if wp else self.screen(opt)

    def zero_load(self, s: Screened) -> None:
        """Ask (and so remember) the zero-load verdict :func:`evaluate` asks first."""
        for i in range(len(self.cache.classes)):
            try:
                self.cache.reachable(s.replica, i, False)
            except PlannerError:
                return

    def step_screened(self, heap: list, opt: Option, r: Screened | Rejection, max_tp: int) -> None:
        """Queue a screened option for simulation, or record its rejection (a layout too
        small for the weights at the largest TP queues its pipeline-parallel layouts)."""
        if isinstance(r, Screened):
            self.screened.append(r)
            heapq.heappush(heap, (r.bound, 1, self.seq, r))
            self.seq += 1
            return
        self.rejected.append(r)
        if (
            r.stage == "memory"
            and opt.is_plain
            and opt.layout.tp == max_tp == MAX_TP_PER_NODE
            and opt.layout.pp == 1
        ):
            for o in pp_options(self.m, opt, self.c.max_gpus_per_replica):  # PP only where needed
                heapq.heappush(heap, (self.lb0(o), 0, self.seq, o))
                self.seq += 1
