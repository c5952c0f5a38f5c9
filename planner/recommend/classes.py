"""Several request classes in one scenario (chat + RAG + batch ...): one shared pool against a
pool per class.

* **A pool per class**: :func:`planner.recommend.recommend` for each class on its own, with
  its own SLO; the fleet is the sum, and it may mix GPU types.
* **One shared pool**: one deployment serving the merged traffic. Its requests are drawn from
  every class in proportion to the classes' peak rates and merged in arrival order; each
  class's SLO is checked on that class's requests only (a batch class does not have to meet
  the chat class's TTFT). The replica count is the smallest that meets every class's SLO at
  the merged peak (x headroom). The shared pool is searched over the union of each class's
  top options (not the whole catalog), which the output says.

The merged stream holds no shared-prefix cache (classes have different prefixes), which is
conservative for the shared pool.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..catalog import Catalog, resolve_params
from ..errors import PlannerError
from ..serving import build_replica, check_reachable, check_workload_fits
from ..serving._engine import _run_continuous, _run_static
from ..serving.capacity import _scored_requests
from ..serving.steady_state import shape_of_requests, steady_state
from ..workload import SLO, Requests, Workload
from .search import recommend


@dataclass(frozen=True)
class RequestClass:
    """One class of requests: its traffic and lengths, and its own SLO."""

    name: str
    workload: Workload
    slo: SLO


class MixedProbe:
    """SLO checks of one replica serving several classes at once, at a total rate [req/s]."""

    def __init__(self, replica, classes: list[RequestClass], n_requests: int = 1200, seed: int = 0):
        self.replica, self.classes = replica, classes
        peaks = np.array([c.workload.traffic.peak() for c in classes], float)
        self.shares = peaks / peaks.sum()
        eng = replica.engine
        need = [
            _scored_requests(c.workload, c.slo, n_requests, 50.0, 10.0) / max(s, 1e-9)
            for c, s in zip(classes, self.shares, strict=True)
        ]
        self.n_scored = int(min(max(need), 60_000))
        parts = []
        rng = np.random.default_rng(seed)
        for k, (c, s) in enumerate(zip(classes, self.shares, strict=True)):
            n_c = max(50, int(math.ceil(1.6 * self.n_scored * s)))
            wl = c.workload.model_copy(update={"offline": False})
            r = wl.sample_requests(
                n_c, rng, 1.0, context_limit=eng.context_limit_tokens, prefix_caching=False
            )
            parts.append((r.arrival_s / s, r, np.full(n_c, k)))
        arr = np.concatenate([p[0] for p in parts])
        order = np.argsort(arr, kind="stable")
        self.labels = np.concatenate([p[2] for p in parts])[order]
        cat = lambda f: np.concatenate([getattr(p[1], f) for p in parts])[order]  # noqa: E731
        self.base = Requests(
            arr[order], cat("input_tokens"), cat("output_tokens"), cat("cached_tokens"), 0, 0
        )
        self.shape = shape_of_requests(self.base)
        fp = steady_state(replica, self.shape, 1e18)
        self.saturation_rps = fp.saturation_rps
        self.cap_rps = 0.95 * fp.saturation_rps
        t_sat = fp.saturation_iteration_s
        tail = max(
            fp.saturation_e2e_s,
            max(c.workload.output_quantile_tokens(0.99) for c in classes) * t_sat,
        )
        self.warm_s = 2.0 * tail
        self.summaries: dict[float, dict[str, Any]] = {}
        self.simulations = 0
        for c in classes:  # every class alone must fit and be reachable at zero load
            check_reachable(replica, c.workload, c.slo)

    def run(self, rate: float) -> dict[str, Any]:
        if rate in self.summaries:
            return self.summaries[rate]
        b, eng = self.base, self.replica.engine
        reqs = Requests(b.arrival_s / rate, b.input_tokens, b.output_tokens, b.cached_tokens, 0, 0)
        res = (
            _run_continuous(self.replica, reqs, None)
            if eng.continuous_batching
            else _run_static(self.replica, reqs)
        )
        self.simulations += 1
        a = res.arrival_s
        t_end = float(a[-1]) - self.warm_s / 2
        window = (a >= min(self.warm_s, float(a[len(a) // 2]))) & (
            a <= max(t_end, float(a[len(a) // 2]))
        )
        out: dict[str, Any] = {"rate_rps": rate, "slo_ok": True, "classes": {}}
        for k, c in enumerate(self.classes):
            m = window & (self.labels == k)
            ev = c.slo.evaluate(res.ttft_s[m], res.tpot_s[m], res.e2e_s[m])
            out["classes"][c.name] = {
                "ok": ev["ok"],
                "attainment": ev["attainment"],
                **{k2: v for k2, v in ev.items() if k2.endswith("_s")},
            }
            out["slo_ok"] = out["slo_ok"] and ev["ok"]
        self.summaries[rate] = out
        return out

    def min_replicas(self, need: float, k_max: int = 4096) -> int | None:
        k = max(1, math.ceil(need / self.cap_rps - 1e-9))
        fail, step = k - 1, 1
        while k <= k_max:
            if need / k <= self.cap_rps * (1 + 1e-9) and self.run(need / k)["slo_ok"]:
                break
            fail, step = k, step * 2
            k = fail + step
        else:
            return None
        while k - fail > 1:
            mid = (k + fail) // 2
            if need / mid <= self.cap_rps * (1 + 1e-9) and self.run(need / mid)["slo_ok"]:
                k = mid
            else:
                fail = mid
        return k


def recommend_classes(
    model: str,
    classes: list[RequestClass],
    *,
    catalog: Catalog,
    headroom: float = 0.2,
    top_n: int = 5,
    fit_percentile: float = 99.0,
    **kw: Any,
) -> dict[str, Any]:
    """A pool per class against one shared pool (see the module docstring).

    Returns
    -------
    dict
        ``per_class``: each class's best recommendation; ``per_class_total``: GPUs and $/h of
        the pools together; ``shared``: the best shared deployment (``None`` with a reason when
        none of the candidates serves every class); ``shared_candidates``: how many were
        tried; ``verdict``: which is cheaper and by how much.
    """
    if len(classes) < 2:
        raise PlannerError("request classes: give at least two classes (or use a plain workload)")
    names = [c.name for c in classes]
    if len(set(names)) != len(names):
        raise PlannerError(f"request classes need distinct names, got {names}")
    per: dict[str, Any] = {}
    cands: dict[tuple, dict[str, Any]] = {}
    for c in classes:
        res = recommend(
            model, c.workload, c.slo, catalog=catalog, headroom=headroom, top_n=top_n,
            fit_percentile=fit_percentile, **kw,
        )  # fmt: skip
        per[c.name] = res.recommendations[0]
        for r in res.recommendations:
            key = (r["gpu"], r["framework"], r["precision"], r["kv_precision"], r["tp"], r["pp"])
            cands.setdefault(key, r)
    total_gpus = sum(r["num_gpus"] for r in per.values())
    usd = [r.get("usd_per_hour") for r in per.values()]
    total_usd = sum(usd) if all(u is not None for u in usd) else None
    need = sum(c.workload.traffic.peak() for c in classes) * (1 + headroom)
    best = None
    tried, why_not = 0, []
    for key, r in cands.items():
        gpu, fw, prec, kv, tp, pp = key
        params, prov = resolve_params(gpu, fw, prec, catalog=catalog)
        try:
            rep = build_replica(
                model, gpu, prec, fw, tp=tp, pp=pp, kv_precision=kv, params=params,
                params_source=prov, catalog=catalog,
            )  # fmt: skip
            for c in classes:
                check_workload_fits(rep, c.workload, fit_percentile)
            probe = MixedProbe(rep, classes)
            k = probe.min_replicas(need)
        except PlannerError as e:
            why_not.append(f"{gpu} {fw} {prec} tp={tp}: {e}")
            continue
        tried += 1
        if k is None:
            why_not.append(f"{gpu} {fw} {prec} tp={tp}: no replica count meets every class's SLO")
            continue
        n = k * tp * pp
        cost = n * r["usd_per_gpu_hour"] if r.get("usd_per_gpu_hour") else None
        key_v = (cost if cost is not None else math.inf, n)
        if best is None or key_v < best["_key"]:
            at = probe.run(need / k)
            best = {
                "_key": key_v,
                "gpu": gpu, "framework": fw, "precision": prec, "kv_precision": kv, "tp": tp,
                "pp": pp, "replicas": k, "num_gpus": n, "usd_per_hour": cost,
                "usd_per_month": cost * 730 if cost is not None else None,
                "rate_per_replica": need / k, "provenance": prov,
                "per_class_p99": at["classes"],
            }  # fmt: skip
    if best is not None:
        best.pop("_key")
    if best is None:
        verdict = "no candidate serves every class in one pool; use a pool per class"
    elif total_usd is not None and best["usd_per_hour"] is not None:
        d = (best["usd_per_hour"] - total_usd) / total_usd * 100
        verdict = (
            f"one shared pool: {best['num_gpus']} x {best['gpu']} at ${best['usd_per_hour']:,.2f}/h; "
            f"a pool per class: {total_gpus} GPUs at ${total_usd:,.2f}/h; the shared pool is "
            f"{'cheaper' if d < 0 else 'dearer'} by {abs(d):.0f}%"
        )
    else:
        verdict = (
            f"one shared pool: {best['num_gpus']} GPUs; a pool per class: {total_gpus} GPUs "
            "(no price for every option)"
        )
    return {
        "per_class": per,
        "per_class_total": {"num_gpus": total_gpus, "usd_per_hour": total_usd},
        "shared": best,
        "shared_candidates": tried,
        "shared_not": why_not[:10],
        "verdict": verdict,
        "notes": [
            "shared pool searched over the union of each class's top options, not the whole "
            "catalog",
            "each class's SLO is checked on its own requests in the merged stream; no shared "
            "prefix cache across classes (conservative)",
        ],
    }
