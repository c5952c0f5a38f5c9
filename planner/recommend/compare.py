"""The procurement view: the same workload on every GPU, the best deployment of each side by side.

:func:`compare_gpus` runs the recommender with ``per_gpu=True`` (branch and bound within each
GPU) and adds the per-GPU figures a buyer compares: $/M tokens, output tokens/s per GPU,
tokens per dollar, joules per token, GPUs needed, memory headroom and provenance. GPUs with
no feasible option are listed with the reason that rules out the last of their options.
"""

from __future__ import annotations

from typing import Any

from ..catalog import Catalog
from ..errors import PlannerError
from ..workload import SLO, Workload
from .search import recommend

#: which rejection explains a GPU best when all its options failed (most specific first)
_STAGE_ORDER = (
    "slo",
    "slo_zero_load",
    "budget",
    "constraint",
    "memory",
    "missing_data",
    "price",
    "precision_gpu",
    "framework_precision",
    "framework_vendor",
    "tp_node",
    "tp_heads",
    "quality_floor",
)


def compare_gpus(
    model: str,
    workload: Workload,
    slo: SLO,
    *,
    catalog: Catalog,
    gpus: tuple[str, ...] = (),
    **kw: Any,
) -> dict[str, Any]:
    """Best option per GPU for one workload.

    Parameters
    ----------
    model, workload, slo, catalog : as :func:`planner.recommend.recommend`
    gpus : GPUs to compare (empty: every GPU of the catalog)
    **kw : any other keyword of :func:`~planner.recommend.recommend` (objective, prices,
        constraints, ...); ``refine`` defaults to True here: tokens/s per GPU is computed
        from each option's maximum rate per replica, bisected to 3 %

    Returns
    -------
    dict
        ``rows``: one per GPU that meets the SLOs, cheapest first (every field of a
        recommendation plus ``output_tok_s_per_gpu``, ``output_tokens_per_usd``);
        ``unanswered``: ``{"gpu", "stage", "reason"}`` for every other GPU;
        ``summary``: the search's summary.
    """
    kw.setdefault("top_n", 1)
    kw.setdefault("refine", True)  # tokens/s per GPU needs the capacity, not the tested rate
    wanted = [catalog.gpu(g).id for g in gpus] if gpus else [g.id for g in catalog.accelerators]
    try:
        res = recommend(
            model, workload, slo, catalog=catalog, gpus=tuple(wanted), per_gpu=True, **kw
        )
        # the Rejection objects: only the one explaining each unanswered GPU becomes a dict
        recs, rejected, summary = res.recommendations, res.rejections, res.summary
    except PlannerError as e:
        if "no option meets" not in str(e):
            raise
        recs, rejected, summary = [], [], {"error": str(e)}
    rows = []
    for r in recs:
        tok_s_gpu = r["output_tok_s_per_gpu"]  # from the bisected rate (refine)
        row = dict(r)
        row["output_tokens_per_usd"] = (
            tok_s_gpu * 3600.0 / r["usd_per_gpu_hour"] if r.get("usd_per_gpu_hour") else None
        )
        rows.append(row)
    answered = {r["gpu"] for r in rows}
    by_gpu: dict[str | None, list[Any]] = {}
    for x in rejected:
        by_gpu.setdefault(x.gpu, []).append(x)
    unanswered = []
    for g in wanted:
        if g in answered:
            continue
        items = by_gpu.get(g, [])
        items.sort(key=lambda x: _STAGE_ORDER.index(x.stage) if x.stage in _STAGE_ORDER else 99)
        if items:
            x = items[0]
            unanswered.append({"gpu": g, "stage": x.stage, "reason": x.reason})
        else:
            unanswered.append({"gpu": g, "stage": "none", "reason": "no option to evaluate"})
    return {"rows": rows, "unanswered": unanswered, "summary": summary}
