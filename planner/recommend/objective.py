"""Objective values and bounds of the recommender's options, and their simulation.

An option moves through three states in :func:`planner.recommend.search.recommend`: screened
analytically (a :class:`Screened` with a lower bound on the objective), simulated (the
smallest replica count meeting the SLO, :func:`evaluate`), and finished (every reported
number, :mod:`planner.recommend.finish`). Lower objective values are better.

The objectives (:data:`OBJECTIVES`; docs/recommend.md defines each):

============== ============================================ ==================================
name           value (lower is better)                      optimistic bound (screen)
============== ============================================ ==================================
cost           fleet $/h = GPUs x $/GPU-h                   replicas at 95 % of saturation
gpus           GPUs in the fleet                            the same replica count
tokens-per-    $/M output tokens at full load =              the same at 95 % of saturation
dollar         GPUs/replica x $/GPU-h / (max rate x mean
               answer x 3600) x 1e6
energy         J per output token at full load =             the same at 95 % of saturation
               GPUs/replica x TDP / (max rate x mean answer)
latency        P99 E2E at the planned load, among options    P99 E2E served alone (zero load)
               costing at most ``latency_cost_cap`` x the
               cheapest feasible one
============== ============================================ ==================================

Ties: options whose values agree within :data:`TIE_REL` rank by fleet $/h, then GPUs, then
more bits per weight.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..catalog.profile import TIERS, provenance_tier
from ..errors import PlannerError
from ..serving import CapacityProbe, Replica, WorkloadCache, unloaded_latency
from ..serving.answer import max_rate_in_bracket
from .options import Option, Rejection

#: objective values within this relative distance are a tie (then cost decides)
TIE_REL = 0.01


@dataclass
class Screened:
    """An option after the analytic screen: its replica, price and objective bound."""

    opt: Option
    replica: Replica
    provenance: str
    price: Any  # PriceQuote | None
    saturation_rps: float
    cap_rps: float
    k_lb: int
    bound: float
    slo_rate_rps: float | None = None
    probe: CapacityProbe | None = None
    replicas: int | None = None
    value: float | None = None
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def usd_per_gpu_hour(self) -> float | None:
        return self.price.usd_per_gpu_hour if self.price is not None else None

    def usd_per_hour(self, replicas: int | None = None) -> float | None:
        p, k = self.usd_per_gpu_hour, replicas or self.replicas or self.k_lb
        return k * self.opt.gpus_per_replica * p if p is not None else None


@dataclass(frozen=True)
class Load:
    """The traffic every option is sized for: planned rate (peak x (1 + headroom)), peak,
    hourly profile and mean lengths of one question."""

    need_rps: float
    peak_rps: float
    hourly_rps: np.ndarray
    mean_input_tokens: float
    mean_output_tokens: float


class RatioBook:
    """Ratios (simulated rate per replica) / (analytic SLO rate) of the options simulated so
    far, overall and per GPU; the median of the option's own GPU (else of all, else 1)
    seeds the replica search of the next option.

    The ratio depends mostly on the GPU (how its step times and the analytic model's
    error combine at this workload): across GPUs it spans more than 10x, and a seed from
    another GPU's ratios started searches tens of replicas away from their answer.

    ``own_only`` (the per-GPU search of :func:`~planner.recommend.compare_gpus`): a GPU's
    first option starts from 1 (the analytic rate), never from other GPUs' ratios, so that
    each GPU's search is independent of the others' (and may run in another process)."""

    def __init__(self, own_only: bool = False) -> None:
        self.own_only = own_only
        self.ratios: list[float] = []
        self.by_key: dict[str, list[float]] = {}

    def add(self, r: float, key: str | None = None) -> None:
        if math.isfinite(r) and r > 0:
            self.ratios.append(r)
            if key is not None:
                self.by_key.setdefault(key, []).append(r)

    def typical(self, key: str | None = None) -> float:
        own = self.by_key.get(key) if key is not None else None
        rs = own if self.own_only else own or self.ratios
        # statistics.median: np.median's value (the middle one, or the mean of the middle
        # two), without numpy's overhead on a short list
        return float(statistics.median(rs)) if rs else 1.0


# ---------------------------------------------------------------------- the table
def _per_mtok(s: Screened, rate: float, load: Load) -> float:
    """$/M output tokens of one replica at ``rate`` [req/s] (inf without a price)."""
    p = s.usd_per_gpu_hour
    if p is None or not rate > 0:
        return math.inf
    return s.opt.gpus_per_replica * p / (rate * load.mean_output_tokens * 3600.0) * 1e6


def _j_per_tok(s: Screened, rate: float, load: Load) -> float | None:
    tdp = s.opt.gpu.tdp_w
    return s.opt.gpus_per_replica * tdp / (rate * load.mean_output_tokens) if tdp else None


def _zero_load_e2e(s: Screened, cache: WorkloadCache) -> float:
    """P99 E2E of requests served alone (the worst class's) [s]: no fleet does better."""
    return max(
        float(np.percentile(unloaded_latency(s.replica, c.workload, n=200)["e2e_s"], 99))
        for c in cache.classes
    )


def _max_rate(s: Screened, load: Load, refine: bool) -> float:
    """Per-replica rate within the SLO [req/s]: the tested rate ``need / replicas``, or
    (``refine``) the max rate every command reports for this deployment
    (:func:`planner.serving.answer.max_rate_in_bracket`, bisected to 2 %); always a rate
    that was simulated and met the SLO."""
    if not refine:
        return bracket(s, load.need_rps)[0]
    if "max_rate_rps" not in s.result:
        s.result["max_rate_rps"] = max_rate_in_bracket(s.probe, load.need_rps, s.replicas)
    return s.result["max_rate_rps"]


def _tpd_text(v: float) -> str:
    return f"{1e6 / v:,.0f} output tokens/$ (${v:.3g}/M at full load)" if v > 0 else "free"


@dataclass(frozen=True)
class Objective:
    """One way to rank options: its value (lower is better), an optimistic bound from the
    analytic screen, and how a value reads."""

    name: str
    text: str
    needs_price: bool
    bound: Callable[[Screened, Load, WorkloadCache], float]
    value: Callable[[Screened, Load, bool], float | None]
    show: Callable[[float], str]


OBJECTIVE_TABLE: dict[str, Objective] = {
    o.name: o
    for o in (
        Objective(
            "cost",
            "lowest fleet cost [$/h] meeting the SLOs",
            True,
            lambda s, ld, c: s.usd_per_hour(s.k_lb) or math.inf,
            lambda s, ld, r: s.usd_per_hour(),
            lambda v: f"${v:,.2f}/h",
        ),
        Objective(
            "latency",
            "lowest P99 end-to-end latency at the planned load, among options costing at most "
            "the latency cost cap x the cheapest one",
            True,
            lambda s, ld, c: _zero_load_e2e(s, c),
            lambda s, ld, r: float(s.probe.full(ld.need_rps / s.replicas)["e2e_p99_s"]),
            lambda v: f"{v:.3g} s P99 E2E",
        ),
        Objective(
            "tokens-per-dollar",
            "most output tokens per dollar at full load (lowest $/M output tokens at the "
            "maximum rate per replica)",
            True,
            lambda s, ld, c: _per_mtok(s, s.cap_rps, ld),
            lambda s, ld, r: _per_mtok(s, _max_rate(s, ld, True), ld),
            _tpd_text,
        ),
        Objective(
            "gpus",
            "fewest GPUs",
            False,
            lambda s, ld, c: float(s.k_lb * s.opt.gpus_per_replica),
            lambda s, ld, r: float(s.replicas * s.opt.gpus_per_replica),
            lambda v: f"{v:g} GPUs",
        ),
        Objective(
            "energy",
            "lowest energy per output token at full load",
            False,
            lambda s, ld, c: _j_per_tok(s, s.cap_rps, ld) or math.inf,
            lambda s, ld, r: _j_per_tok(s, _max_rate(s, ld, True), ld),
            lambda v: f"{v:.3g} J/token",
        ),
    )
}
OBJECTIVES = tuple(OBJECTIVE_TABLE)


def _evidence_rank(provenance: str) -> int:
    """Position of a provenance label's tier in :data:`planner.catalog.profile.TIERS`
    (0 = fitted on this GPU, framework and precision; larger = borrowed from further away)."""
    try:
        return TIERS.index(provenance_tier(provenance))
    except PlannerError:
        return len(TIERS)


def sort_key(s: Screened, need: float) -> tuple[float, ...]:
    """Rank: the objective value to :data:`TIE_REL` (log buckets), then $/h, then GPUs, then
    the format the engine's documentation recommends on that GPU for that model
    (``Framework.recommended_formats``), then the model's released precision
    (``ModelArch.native_precision``: gpt-oss's MXFP4 checkpoint is its reference, an upcast
    gains nothing), then more bits per weight (at equal cost, no quantization loss is
    better), then the nearer
    evidence (at equal cost, an option fitted on its own measurements beats one whose
    efficiencies are transferred from relatives), then fewer pipeline stages (at equal cost
    and GPUs, TP8 PP2 x 10 beats TP8 PP4 x 5: half the nodes a replica spans, a token crosses
    half the stages; vLLM's distributed-serving guide runs 405B as TP8 PP2), then capacity."""
    v = s.value
    bucket = round(math.log(v) / math.log1p(TIE_REL)) if v and v > 0 and math.isfinite(v) else v
    cost = s.usd_per_hour()
    return (
        bucket,
        cost if cost is not None else math.inf,
        s.replicas * s.opt.gpus_per_replica,
        s.opt.framework.format_rank(
            s.opt.gpu.arch, s.opt.precision.id, s.replica.sm.model.architecture
        ),
        0 if s.opt.precision.id == s.replica.sm.model.native_precision else 1,
        -s.opt.precision.weight_bits,
        _evidence_rank(s.provenance),
        s.opt.layout.pp,
        -bracket(s, need)[1],
    )


def prune_reason(
    s: Screened, obj: Objective, best: float, top_n: int, at_edge: bool = False
) -> str:
    """Why ``s`` was pruned by its bound; ``at_edge``: the bound is at its error band's edge
    (:func:`planner.recommend.beyond.edge_bound`)."""
    point = obj.bound(s, None, None) if obj.name in ("cost", "gpus") else None
    # an engine with no fit on this architecture is bounded at its band's edge (beyond.py)
    k = s.k_lb * (s.bound / point if point and s.bound > point else 1.0)
    what = (
        f"a zero-load P99 E2E of {obj.show(s.bound)}"
        if obj.name == "latency"
        else f"at least {round(k) * s.opt.gpus_per_replica} GPUs = {obj.show(s.bound)}"
        if obj.name in ("cost", "gpus")
        else f"at best {obj.show(s.bound)}"
    )
    if obj.name != "latency" and at_edge:
        what += " at its error band's pessimistic edge (no fit of its engine on this architecture)"
    at = f"95% of its analytic saturation rate ({s.saturation_rps:.3g} req/s per replica)"
    return (
        f"cannot beat the top {top_n} (not simulated): even at {at} it needs {what}; "
        f"#{top_n} has {obj.show(best)}"
    )


# ---------------------------------------------------------------------- simulation
def evaluate(
    s: Screened,
    cache: WorkloadCache,
    need: float,
    n_requests: int,
    k_max: int,
    k_start: int | Callable[[], int] | None = None,
    k_cap: int | None = None,
    k_max_why: str = "",
    k_max_stage: str = "slo",
) -> Rejection | None:
    """Simulate: the smallest replica count meeting the SLO (sets ``s.replicas``).

    ``k_max``: most replicas the constraints allow (``k_max_why`` says which one, a
    failure within it is rejected at ``k_max_stage``);
    ``k_cap``: most replicas that could still beat the options already found;
    ``k_start``: first replica count tried, or a function giving it (called only once the
    option meets the SLO served alone)."""
    probe = CapacityProbe(s.replica, cache, n_requests=n_requests, early_stop=True)
    s.probe = probe
    try:
        probe.check(values=False)
    except PlannerError as e:
        msg = str(e)
        stage = "slo_zero_load" if "zero load" in msg else "memory"
        return Rejection.of(s.opt, stage, msg)
    if callable(k_start):
        k_start = k_start()
    if k_cap is not None and k_cap < k_max:
        k = probe.min_replicas(need, s.k_lb, k_cap, k_start, cap_next=True)
        if k is None:
            lowest = min(probe.summaries) if probe.summaries else need / k_cap
            return Rejection.of(
                s.opt,
                "pruned",
                f"cannot beat the top ones (simulated): at {k_cap} replicas ({need / k_cap:.3g} "
                f"req/s each) it still misses the SLO ({miss_text(probe, lowest)}), "
                "and more replicas cost more than the options already found",
            )
        s.replicas = k
        probe.keep_only(need / k)
        return None
    k = probe.min_replicas(need, s.k_lb, k_max, k_start)
    probe.keep_only(need / k if k else None)
    if k is None:
        lowest = min(probe.summaries) if probe.summaries else need / max(k_max, 1)
        return Rejection.of(
            s.opt,
            k_max_stage,
            f"SLO not met even at {lowest:.3g} req/s per replica ({k_max} replicas"
            + (f", the most {k_max_why} allows" if k_max_why else "")
            + f"): {miss_text(probe, lowest)}",
        )
    s.replicas = k
    return None


def miss_text(probe: CapacityProbe, rate: float) -> str:
    """Which percentile or attainment missed in the run at ``rate``."""
    summary = probe.summaries.get(rate, {})
    early = summary.get("stopped_early")
    if early:  # the run stopped once the miss was certain: counts, not percentiles
        parts = [
            f"{k.upper()} over {t.max_s:g} s for {early[f'{k}_over']:,} of the "
            f"{early['scored']:,} scored requests already ({t.label} target)"
            for k, t in probe.slo.targets().items()
            if early.get(f"{k}_over")
        ]
        if probe.slo.attainment is not None:
            parts.append(
                f"attainment at most {summary['slo_attainment']:.2%} vs {probe.slo.attainment:.1%}"
            )
        return "; ".join(parts) + " (the run stopped once the miss was certain)"
    parts = []
    for c in probe.classes:
        sm = summary if probe.cache.single else summary.get("classes", {}).get(c.name, {})
        pre = "" if probe.cache.single else f"{c.name} "
        for k, t in c.slo.targets().items():
            v = sm.get(f"{k}_{t.label}_s")
            if v is not None and v == v and v > t.max_s:
                parts.append(f"{pre}{k.upper()} {t.label} {v:.3g} s vs {t.max_s:g} s")
        a = sm.get("slo_attainment", sm.get("attainment"))
        if c.slo.attainment is not None and a is not None and a < c.slo.attainment:
            parts.append(f"{pre}attainment {a:.1%} vs {c.slo.attainment:.1%}")
    return "; ".join(parts) or "unknown"


def bracket(s: Screened, need: float) -> tuple[float, float]:
    """(tested, upper) per-replica rate [req/s]: ``need / k`` passed; ``need / (k - 1)``
    failed or lies beyond 95 % of the analytic saturation rate."""
    k = s.replicas
    lo = need / k
    hi = min(need / (k - 1), s.cap_rps) if k > 1 else s.cap_rps
    return lo, max(lo, hi)


def over_budget(
    s: Screened, replicas: int, max_gpus: int | None, limits: tuple[tuple[float, str], ...]
) -> Rejection | None:
    """The constraint that ``replicas`` replicas of ``s`` break, or None: ``max_gpus``, or a
    limit of ``limits`` (``(USD per hour, what it is)``: budgets, the latency cost cap)."""
    n = replicas * s.opt.gpus_per_replica
    if max_gpus is not None and n > max_gpus:
        return Rejection.of(s.opt, "constraint", f"needs {n} GPUs > max_total_gpus={max_gpus}")
    p = s.usd_per_gpu_hour
    if p is None:
        return None
    for lim, name in limits:
        if n * p > lim * (1 + 1e-12):
            return Rejection.of(
                s.opt,
                "budget",
                f"over budget: {n} GPUs x ${p:.2f}/GPU-h = ${n * p:,.2f}/h > {name}",
            )
    return None
