"""Several request classes in one scenario (chat + RAG + batch ...): one shared pool against a
pool per class.

* **A pool per class**: :func:`planner.recommend.recommend` for each class on its own, with
  its own SLO and the scenario's constraints and objective; the fleet is the sum, and it may
  mix GPU types.
* **One shared pool**: the same search (:func:`planner.recommend.search.search`) over the
  whole catalog, every option serving the merged traffic. Its requests are drawn from every
  class in proportion to the classes' peak rates and merged in arrival order; each class's
  SLO is checked on that class's requests only (a batch class does not have to meet the
  chat class's TTFT). The replica count is the smallest that meets every class's SLO at the
  merged peak (x headroom); the objective, budgets, GPU limits and quality floor apply as to
  one workload.

The merged stream holds no shared-prefix cache (classes have different prefixes), which is
conservative for the shared pool. A budget applies to each pool per class and to their sum.
"""

from __future__ import annotations

from typing import Any

from ..catalog import Catalog
from ..errors import PlannerError
from ..serving import RequestClass, WorkloadCache
from .constraints import Constraints
from .objective import OBJECTIVE_TABLE
from .search import constraints_of, recommend, search

__all__ = ["RequestClass", "recommend_classes"]


def recommend_classes(
    model: str,
    classes: list[RequestClass],
    *,
    catalog: Catalog,
    constraints: Constraints | None = None,
    objective: str = "cost",
    top_n: int = 5,
    seed: int = 0,
    **kw: Any,
) -> dict[str, Any]:
    """A pool per class against one shared pool (see the module docstring).

    Parameters
    ----------
    model, catalog, constraints, objective, top_n, seed : as :func:`planner.recommend.recommend`
    classes : at least two :class:`planner.serving.RequestClass` with distinct names
    **kw : ``engine``, ``profile``, ``n_requests``, ``refine`` or constraint fields

    Returns
    -------
    dict
        ``per_class``: each class's best recommendation (``None`` with ``per_class_not``
        saying why when a class has none); ``per_class_total``: GPUs and $/h of the pools
        together; ``shared``: the shared pool's ranked options (``recommendations``,
        ``summary``, ``why``, ...); ``verdict``: which is better on the objective and cost.
    """
    if len(classes) < 2:
        raise PlannerError("request classes: give at least two classes (or use a plain workload)")
    names = [c.name for c in classes]
    if len(set(names)) != len(names):
        raise PlannerError(f"request classes need distinct names, got {names}")
    search_kw = {k: kw.pop(k) for k in ("engine", "profile", "n_requests", "refine") if k in kw}
    c = constraints_of(constraints, kw)
    per: dict[str, Any] = {}
    per_not: dict[str, str] = {}
    for rc in classes:
        try:
            res = recommend(
                model, rc.workload, rc.slo, catalog=catalog, constraints=c,
                objective=objective, top_n=1, seed=seed, **search_kw,
            )  # fmt: skip
            per[rc.name] = res.recommendations[0]
        except PlannerError as e:  # named with its SLO: the blame stays on this class
            per[rc.name], per_not[rc.name] = None, f"(SLO {rc.slo.describe()}): {e}"
    shared_error = None
    try:
        shared = search(
            model, WorkloadCache(classes, seed), catalog=catalog, constraints=c,
            objective=objective, top_n=top_n, **search_kw,
        ).as_dict()  # fmt: skip
    except PlannerError as e:
        shared, shared_error = None, str(e)
    if shared is None and per_not:
        failed = "; ".join(f"class '{k}' {v}" for k, v in per_not.items())
        raise PlannerError(f"no option serves {failed}; one shared pool: {shared_error}")
    total = None
    if not per_not:
        usd = [r.get("usd_per_hour") for r in per.values()]
        total = {
            "num_gpus": sum(r["num_gpus"] for r in per.values()),
            "usd_per_hour": sum(usd) if all(u is not None for u in usd) else None,
        }
        over = _over(total, c)
        if over:
            per_not["(all)"] = f"the pools together break {over}"
    return {
        "objective": objective,
        "per_class": per,
        "per_class_not": per_not,
        "per_class_total": total,
        "shared": shared,
        "shared_not": shared_error,
        "verdict": _verdict(shared, total, per_not, objective),
        "notes": [
            "shared pool searched over the whole catalog with every constraint and the "
            "objective; each class's SLO is checked on its own requests in the merged stream; "
            "no shared prefix cache across classes (conservative)",
            "a pool per class: each class's best option on its own (same constraints and "
            "objective); a budget applies to each and to their sum",
        ],
    }


def _over(total: dict[str, Any], c: Constraints) -> str | None:
    usd = total["usd_per_hour"]
    if c.max_total_gpus is not None and total["num_gpus"] > c.max_total_gpus:
        return f"max_total_gpus={c.max_total_gpus} ({total['num_gpus']} GPUs)"
    if usd is not None and c.max_usd_per_hour is not None and usd > c.max_usd_per_hour:
        return f"max_usd_per_hour={c.max_usd_per_hour:,.2f} (${usd:,.2f}/h)"
    if usd is not None and c.max_usd_per_month is not None and usd * 730 > c.max_usd_per_month:
        return f"max_usd_per_month={c.max_usd_per_month:,.0f} (${usd * 730:,.0f}/month)"
    return None


def _verdict(shared, total, per_not, objective: str) -> str:
    if shared is None:
        return "no option serves every class in one pool; use a pool per class"
    best = shared["recommendations"][0]
    head = f"one shared pool: {best['num_gpus']} x {best['gpu']}" + (
        f" at ${best['usd_per_hour']:,.2f}/h" if best.get("usd_per_hour") is not None else ""
    )
    if per_not:
        return head + "; a pool per class: " + "; ".join(f"{k}: {v}" for k, v in per_not.items())
    if total["usd_per_hour"] is not None and best.get("usd_per_hour") is not None:
        d = (best["usd_per_hour"] - total["usd_per_hour"]) / total["usd_per_hour"] * 100
        cmp = f"the shared pool is {'cheaper' if d < 0 else 'dearer'} by {abs(d):.0f}%"
        tail = f"${total['usd_per_hour']:,.2f}/h"
    else:
        cmp, tail = "no price for every option", ""
    text = OBJECTIVE_TABLE[objective].text
    return (
        f"{head}; a pool per class: {total['num_gpus']} GPUs {tail}; {cmp} "
        f"(each ranked by {objective}: {text})"
    ).replace("  ", " ")
