"""The procurement view: the same workload on every GPU, the best deployment of each side by side.

:func:`compare_gpus` runs the recommender with ``per_gpu=True`` (branch and bound within each
GPU) and adds the per-GPU figures a buyer compares: $/M tokens, output tokens/s per GPU,
tokens per dollar, joules per token, GPUs needed, memory headroom and provenance. GPUs with
no feasible option are listed with the reason that rules out the last of their options.

Each GPU's search is independent of the others' (pruning and the replica search's seed
look at its own options only), so on two CPUs the GPUs are searched in two processes: a
forked child and this one take GPUs from one queue and search each alone
(:mod:`planner.recommend.processes`); the shares merge into the very answer one process
gives. ``PLANNER_PROCESSES=1`` keeps it in one process.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..catalog import Catalog
from ..errors import PlannerError
from ..files import rare_gc
from ..serving import WorkloadCache
from ..workload import SLO, Workload
from .constraints import budget_limits, constraints_of
from .decide import decide
from .objective import OBJECTIVE_TABLE, sort_key
from .options import Rejection
from .processes import Child, prepare, processes
from .search import _Search, recommend

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
    "model_format",
    "model_support",
    "framework_precision",
    "framework_vendor",
    "framework_gpu",
    "tp_node",
    "tp_heads",
    "quality_floor",
    "licence",
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

    Notes
    -----
    Where :func:`~planner.recommend.processes.processes` gives 2 (Linux, two CPUs;
    ``PLANNER_PROCESSES``), there are two GPUs or more, and the search's GPUs are independent
    (any objective but ``latency``, an integer seed), the GPUs are searched in two processes,
    each GPU alone. ``rows`` and ``unanswered`` are then exactly the one-process answer (the
    same fields, values and order). In ``summary``, ``options_*``, ``simulations`` and
    ``feasible`` are sums over the GPUs' searches (the ``options_*`` and ``feasible`` counts
    equal the one-process ones; ``simulations`` counts each process's runs: a verdict one
    process shared with another GPU's option may be run again by the other) and
    ``elapsed_s`` is the whole call's. When no GPU has a row, the one-process search runs
    again to word the error the same way.
    """
    t0 = time.perf_counter()
    kw.setdefault("top_n", 1)
    kw.setdefault("refine", True)  # tokens/s per GPU needs the capacity, not the tested rate
    wanted = [catalog.gpu(g).id for g in gpus] if gpus else [g.id for g in catalog.accelerators]
    if _may_fork(wanted, kw):
        out = _compare_forked(model, workload, slo, catalog, wanted, kw, t0)
        if out is not None:
            return out
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
    rows = _rows(recs)
    by_gpu: dict[str | None, list[Any]] = {}
    for x in rejected:
        by_gpu.setdefault(x.gpu, []).append(x)
    answered = {r["gpu"] for r in rows}
    unanswered = [_explain(g, by_gpu.get(g, [])) for g in wanted if g not in answered]
    return {"rows": rows, "unanswered": unanswered, "summary": summary}


def _rows(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows: each recommendation with its output tokens per dollar."""
    rows = []
    for r in recs:
        tok_s_gpu = r["output_tok_s_per_gpu"]  # from the bisected rate (refine)
        row = dict(r)
        row["output_tokens_per_usd"] = (
            tok_s_gpu * 3600.0 / r["usd_per_gpu_hour"] if r.get("usd_per_gpu_hour") else None
        )
        rows.append(row)
    return rows


def _explain(gpu: str, items: list[Rejection]) -> dict[str, str]:
    """Why ``gpu`` has no row: the most specific of its rejections (the first of a stage)."""
    items = sorted(
        items, key=lambda x: _STAGE_ORDER.index(x.stage) if x.stage in _STAGE_ORDER else 99
    )
    if items:
        return {"gpu": gpu, "stage": items[0].stage, "reason": items[0].reason}
    return {"gpu": gpu, "stage": "none", "reason": "no option to evaluate"}


# ---------------------------------------------------------------------- two processes
#: recommend's keywords other than the constraints' fields
_NAMED = (
    "constraints", "objective", "top_n", "engine", "profile", "n_requests", "seed", "exhaustive",
    "refine",
)  # fmt: skip

#: helper threads (:mod:`planner.recommend.threads`) of each process's search when two
#: processes search: both cores are busy with the processes' Python already (measured:
#: docs/recommend.md); ``PLANNER_THREADS`` decides instead
FORK_THREADS = 1


def _may_fork(wanted: list[str], kw: dict[str, Any]) -> bool:
    """Whether two processes may search: two CPUs (:func:`processes`), two GPUs or more,
    and a search whose GPUs are independent (not the latency objective, whose cost cap
    comes from the cheapest option of all GPUs; not a shared random generator, whose draws
    depend on the order of the searches); arguments the search refuses take the one-process
    path (and its error)."""
    if len(wanted) < 2 or processes() < 2:
        return False
    objective, top_n = kw.get("objective", "cost"), kw.get("top_n")
    return (
        objective in OBJECTIVE_TABLE
        and objective != "latency"
        and isinstance(top_n, int)
        and top_n >= 1
        and not isinstance(kw.get("seed", 0), np.random.Generator)
    )


@dataclass
class _Share:
    """One GPU's part of the answer, from a search of that GPU alone (whichever process ran
    it): its finished recommendations (no rank, no decision yet), the sort key of its best
    option (the GPUs' order), why it has none, and the search's counts and summary."""

    results: list[dict[str, Any]]
    order: tuple[float, ...] | None
    unanswered: dict[str, str] | None
    summary: dict[str, Any]
    unpriced: list[Rejection] = dataclasses.field(default_factory=list)  # its price rejection


def _compare_forked(
    model: str,
    workload: Workload,
    slo: SLO,
    catalog: Catalog,
    wanted: list[str],
    kw: dict[str, Any],
    t0: float,
) -> dict[str, Any] | None:
    """:func:`compare_gpus` in two processes: a forked child and this one take GPUs from one
    queue (most work first) and search each alone; the answers merge into the one-process
    answer. None when no GPU has a row (the one-process path words that error)."""
    named = {k: v for k, v in kw.items() if k in _NAMED}
    c = constraints_of(
        named.pop("constraints", None), {k: v for k, v in kw.items() if k not in _NAMED}
    )
    obj = OBJECTIVE_TABLE[named.pop("objective", "cost")]
    cache = WorkloadCache.of(workload, slo, named.pop("seed", 0))
    limits = tuple(budget_limits(c))
    env = os.environ.get("PLANNER_THREADS", "").strip()
    n_threads = None if env else FORK_THREADS
    top_n, engine, profile = named.get("top_n", 1), named.get("engine"), named.get("profile")
    n_requests, exhaustive = named.get("n_requests", 1200), named.get("exhaustive", False)
    refine = named.get("refine", True)

    def search_of(gpus: tuple[str, ...]) -> _Search:
        return _Search(
            model, cache, catalog, c.model_copy(update={"gpus": gpus}), obj, top_n, engine,
            profile, n_requests, exhaustive, refine, True, limits, n_threads,
        )  # fmt: skip

    # most work first, so that the last GPU either process takes is a short one (the two
    # end together): a GPU without a price takes ~2 ms (every option rejected unpriced), and
    # among the others the GPUs with the most memory first: they hold the most layouts that
    # fit, and so have the most options to simulate (RAG 70B: 0.2-0.3 s for 80-256 GiB,
    # 0.01-0.1 s for 24-32 GiB, where most layouts are too small for the weights)
    base = search_of(tuple(wanted))
    jobs = list(dict.fromkeys(wanted))
    jobs.sort(
        key=lambda g: (
            obj.needs_price and isinstance(base.price_of(g), PlannerError),
            -_memory(catalog, g),
        )
    )

    def share(gpu: str, s: _Search, counts: dict[str, int]) -> _Share:
        """The finished share of a searched GPU."""
        _, top = s.finished()
        summary = s.summary(time.perf_counter(), counts, len(s.done))
        price = [r for r in s.rejected if r.stage == "price"][:1]
        if not top:
            return _Share([], None, _explain(gpu, s.rejected), summary, price)
        key = sort_key(top[0], s.load.need_rps)
        return _Share([x.result for x in top], key, None, summary, price)

    @rare_gc()  # as the one-process search (planner.files.rare_gc)
    def work(take: Callable[[], int | None]) -> dict[str, _Share]:
        searched = []
        while (i := take()) is not None:
            s = search_of((jobs[i],))
            searched.append((jobs[i], s, s.counts(s.explore())))
        # every GPU's finishing last, as the one-process search does: the mean ITL of a
        # whole run (np.dot over >10,000 samples) wakes OpenBLAS's worker thread, which then
        # spins for a while; finishing after each GPU kept it spinning through the whole
        # search (0.7-1 s of a core: the other process's)
        return {g: share(g, s, counts) for g, s, counts in searched}

    prepare()
    child = Child.start(len(jobs), work)
    try:
        if child is None:  # the fork failed: every GPU here
            shares = work(_queue(range(len(jobs))))
        else:
            shares = work(child.take)
            ok, theirs = child.result()  # a PlannerError of the child is raised here
            if ok:
                shares.update(theirs)
            # a child that failed (crashed, killed, an answer that cannot be pickled): its
            # GPUs are searched here
            shares.update(work(_queue(i for i, g in enumerate(jobs) if g not in shares)))
    finally:
        if child is not None:
            child.close()
    # the buyer's fields (own / rent / API, unpriced GPUs) as the one-process search adds
    # them: the base search with every GPU's price rejection, in the GPUs' order
    base.rejected = [r for g in wanted for r in shares[g].unpriced]
    return _merge(wanted, shares, obj.name, t0, base)


def _memory(catalog: Catalog, gpu: str) -> float:
    """The GPU's memory [bytes]; 0 when no source gives it (its options are all rejected)."""
    try:
        return catalog.gpu(gpu).memory_bytes
    except PlannerError:
        return 0.0


def _queue(indices: Iterable[int]) -> Callable[[], int | None]:
    it = iter(indices)
    return lambda: next(it, None)


def _merge(
    wanted: list[str], shares: dict[str, _Share], objective: str, t0: float, base: Any = None
) -> dict[str, Any] | None:
    """The one-process answer from the GPUs' shares: GPUs in order of their best option
    (as :func:`~planner.recommend.recommend` ranks them), ranks and the decision over all
    rows, counts summed; None when no GPU has a row."""
    order = {g: i for i, g in enumerate(wanted)}
    ranked = sorted(
        (g for g in order if shares[g].results), key=lambda g: (shares[g].order, order[g])
    )
    if not ranked:
        return None
    recs = [r for g in ranked for r in shares[g].results]
    for i, r in enumerate(recs, 1):
        r["rank"] = i
    decide(recs, objective, base)
    rows = _rows(recs)
    unanswered = [dict(shares[g].unanswered) for g in wanted if not shares[g].results]
    summary = dict(shares[wanted[0]].summary)
    for k in (*_SUMMED, "feasible"):
        summary[k] = sum(shares[g].summary[k] for g in order)
    summary["elapsed_s"] = time.perf_counter() - t0
    return {"rows": rows, "unanswered": unanswered, "summary": summary}


#: the summary's counts that are sums over the GPUs' searches
_SUMMED = (
    "options_enumerated", "options_screened", "options_simulated", "options_pruned",
    "simulations",
)  # fmt: skip
