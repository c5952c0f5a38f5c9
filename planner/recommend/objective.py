"""Objective values and bounds of the recommender's options, and their simulation.

An option moves through three states in :func:`planner.recommend.search.recommend`: screened
analytically (a :class:`Screened` with a lower bound on the objective), simulated (the
smallest replica count meeting the SLO, :func:`evaluate`), and finished (every reported
number, :mod:`planner.recommend.finish`). Lower objective values are better.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import PlannerError
from ..serving import Replica
from ..workload import SLO
from .options import Option, Rejection
from .probe import CapacityProbe, WorkloadCache


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
    zero_load_e2e_p99_s: float | None = None
    slo_rate_rps: float | None = None
    probe: CapacityProbe | None = None
    replicas: int | None = None
    value: float | None = None
    result: dict[str, Any] = field(default_factory=dict)


class RatioBook:
    """Ratios (simulated rate per replica) / (analytic SLO rate) of the options simulated so
    far; their median seeds the replica search of the next option (1 before any)."""

    def __init__(self) -> None:
        self.ratios: list[float] = []

    def add(self, r: float) -> None:
        if math.isfinite(r) and r > 0:
            self.ratios.append(r)

    def typical(self) -> float:
        return float(np.median(self.ratios)) if self.ratios else 1.0


# ---------------------------------------------------------------------- objective values
def _price(s: Screened) -> float | None:
    return s.price.usd_per_gpu_hour if s.price is not None else None


def _bound(
    s: Screened, objective: str, need: float, mean_out: float, rate_ub: float | None = None
) -> float:
    """Optimistic objective value from the analytic screen (lower is better)."""
    gpr, p = s.opt.gpus_per_replica, _price(s)
    rate = s.cap_rps if rate_ub is None else rate_ub
    if objective == "cost":
        return s.k_lb * gpr * p if p is not None else math.inf
    if objective == "gpus":
        return float(s.k_lb * gpr)
    if objective == "tokens-per-dollar":
        return -(rate * mean_out * 3600.0) / (gpr * p) if p is not None else math.inf
    if objective == "energy":
        tdp = s.opt.gpu.tdp_w
        return gpr * tdp / (rate * mean_out) if tdp else math.inf
    return 0.0  # latency: filled from the zero-load latency


def _zero_load_e2e(s: Screened, cache: WorkloadCache) -> float:
    from ..serving.capacity import unloaded_latency

    z = unloaded_latency(s.replica, cache.workload, n=200)
    return float(np.percentile(z["e2e_s"], 99))


def _value_text(v: float, objective: str) -> str:
    if objective == "cost":
        return f"${v:,.2f}/h"
    if objective == "gpus":
        return f"{v:g} GPUs"
    if objective == "tokens-per-dollar":
        return f"{-v:,.0f} output tokens/$"
    if objective == "energy":
        return f"{v:.3g} J/token"
    return f"{v:.3g} s P99 E2E"


def _prune_reason(s: Screened, objective: str, best: float, top_n: int) -> str:
    what = {
        "cost": f"at least {s.k_lb * s.opt.gpus_per_replica} GPUs = {_value_text(s.bound, objective)}",
        "gpus": f"at least {_value_text(s.bound, objective)}",
        "tokens-per-dollar": f"at most {_value_text(s.bound, objective)}",
        "energy": f"at least {_value_text(s.bound, objective)}",
        "latency": f"a zero-load P99 E2E of {_value_text(s.bound, objective)}",
    }[objective]
    at = f"95% of its analytic saturation rate ({s.saturation_rps:.3g} req/s per replica)"
    return (
        f"cannot beat the top {top_n} (not simulated): even at {at} it needs {what}; "
        f"#{top_n} has {_value_text(best, objective)}"
    )


def evaluate(
    s: Screened,
    cache: WorkloadCache,
    slo: SLO,
    need: float,
    n_requests: int,
    max_total_gpus: int | None,
    k_start: int | None = None,
    k_cap: int | None = None,
) -> Rejection | None:
    """Simulate: the smallest replica count meeting the SLO (sets ``s.replicas``)."""
    probe = CapacityProbe(s.replica, cache, slo, n_requests=n_requests)
    s.probe = probe
    try:
        probe.check()
    except PlannerError as e:
        msg = str(e)
        stage = "slo_zero_load" if "zero load" in msg else "memory"
        return Rejection.of(s.opt, stage, msg)
    gpr = s.opt.gpus_per_replica
    k_max = max_total_gpus // gpr if max_total_gpus else max(4 * s.k_lb, s.k_lb + 64)
    if k_cap is not None and k_cap < k_max:
        k = probe.min_replicas(need, s.k_lb, k_cap, k_start)
        if k is None:
            return Rejection.of(
                s.opt,
                "pruned",
                f"cannot beat the top ones (simulated): at {k_cap} replicas ({need / k_cap:.3g} "
                f"req/s each) it still misses the SLO ({_miss_text(probe.summaries[min(probe.summaries)], slo)}), "
                "and more replicas cost more than the options already found",
            )
        s.replicas = k
        probe.keep_only(need / k)
        return None
    k = probe.min_replicas(need, s.k_lb, k_max, k_start)
    probe.keep_only(need / k if k else None)
    if k is None:
        lowest = min(probe.summaries) if probe.summaries else need / k_max
        sm = probe.summaries.get(lowest, {})
        return Rejection.of(
            s.opt,
            "slo",
            f"SLO not met even at {lowest:.3g} req/s per replica ({k_max} replicas"
            + (", the max_total_gpus limit" if max_total_gpus else "")
            + f"): {_miss_text(sm, slo)}",
        )
    s.replicas = k
    return None


def _miss_text(summary: dict[str, Any], slo: SLO) -> str:
    parts = []
    for k, t in slo.targets().items():
        v = summary.get(f"{k}_{t.label}_s")
        if v is not None and v == v:
            parts.append(f"{k.upper()} {t.label} {v:.3g} s vs {t.max_s:g} s")
    if slo.attainment is not None and "slo_attainment" in summary:
        parts.append(f"attainment {summary['slo_attainment']:.1%} vs {slo.attainment:.1%}")
    return "; ".join(parts) or "unknown"


def _bracket(s: Screened, need: float) -> tuple[float, float]:
    """(tested, upper) per-replica rate [req/s]: ``need / k`` passed; ``need / (k - 1)``
    failed or lies beyond 95 % of the analytic saturation rate."""
    k = s.replicas
    lo = need / k
    hi = min(need / (k - 1), s.cap_rps) if k > 1 else s.cap_rps
    return lo, max(lo, hi)


def _max_rate(s: Screened, need: float, refine: bool) -> float:
    """Per-replica rate within the SLO [req/s]: the tested rate, or bisected to 3 %."""
    if "max_rate_rps" not in s.result:
        lo, hi = _bracket(s, need)
        s.result["max_rate_rps"] = s.probe.refine_max_rate(lo, hi) if refine else lo
    return s.result["max_rate_rps"]


def _value(
    s: Screened,
    objective: str,
    need: float,
    peak: float,
    mean_out: float,
    cache: WorkloadCache,
    refine: bool,
) -> float | None:
    gpr, p = s.opt.gpus_per_replica, _price(s)
    n = s.replicas * gpr
    if objective == "cost":
        return n * p
    if objective == "gpus":
        return float(n) + (n * p * 1e-9 if p else 0.0)
    if objective == "tokens-per-dollar":
        return -(_max_rate(s, need, True) * mean_out * 3600.0) / (gpr * p)
    if objective == "energy":
        tdp = s.opt.gpu.tdp_w
        return gpr * tdp / (_max_rate(s, need, True) * mean_out) if tdp else None
    return float(s.probe.full(peak / s.replicas)["e2e_p99_s"])


def _over_budget(
    s: Screened, per_hour: float | None, per_month: float | None, max_gpus: int | None
) -> Rejection | None:
    n = s.replicas * s.opt.gpus_per_replica
    if max_gpus is not None and n > max_gpus:
        return Rejection.of(s.opt, "constraint", f"needs {n} GPUs > max_total_gpus={max_gpus}")
    p = _price(s)
    if p is None:
        return None
    for lim, hours, name in (
        (per_hour, 1.0, "max_usd_per_hour"),
        (per_month, 730.0, "max_usd_per_month"),
    ):
        if lim is not None and n * p * hours > lim:
            return Rejection.of(
                s.opt,
                "budget",
                f"over budget: {n} GPUs x ${p:.2f}/GPU-h = ${n * p * hours:,.0f} > {name}={lim:,.0f}",
            )
    return None
