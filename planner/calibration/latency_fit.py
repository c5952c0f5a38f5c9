"""Fit of the serving simulator's latency terms (:mod:`planner.catalog.latency`) on public
serving rows' TTFT, and its leave-one-source-out form.

The prefill scale of a group (an engine and model family, or a family over all engines) is
the median of measured / predicted TTFT over the group's rows predicted with no scale
(``exp(median(log ratio))``): a run's TTFT is its queueing behind other prompts plus its own
prefill, both in proportion to the time prompts take, so the median ratio is the factor
the prompts' time is off by. A group needs ``MIN_ROWS`` rows from ``MIN_SOURCES`` sources;
the value is clipped to ``SCALE_RANGE``.

Two rules keep the fit to evidence that transfers from one source to another (it is
judged leave-one-source-out):

* only rows of runs dated ``CURRENT_SINCE`` or later count (``as_of``): engines' prompt
  paths changed within months (the public DeepSeek runs of early 2025 with SGLang 0.4,
  vLLM 0.7 and TensorRT-LLM 0.17 took 4-17 times the predicted TTFT, and 1.5-6 times the
  predicted TPOT, where the same GPUs with 2026 releases take 1.2-1.9 and 0.7-1.2): their
  slowness belongs to their release's calibration, not to a prefill term of today's
  engines; undated rows (old tables) are left out too;
* a group is fitted only when its sources agree on the direction (every source's median
  ratio above 1, or every one below): sources that disagree say nothing about the sign.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import numpy as np

from planner.catalog.latency import PrefillScale

MIN_ROWS = 10
MIN_SOURCES = 2
SCALE_RANGE = (0.25, 8.0)
#: earliest run date (``as_of``) whose TTFT counts for the fit
CURRENT_SINCE = _dt.date(2025, 7, 1)


def _date(v: Any) -> _dt.date | None:
    if isinstance(v, _dt.date):
        return v
    try:
        return _dt.date.fromisoformat(str(v)[:10])
    except ValueError:
        return None


def _groups(r: Mapping[str, Any]) -> tuple[tuple[str | None, str], ...]:
    return ((str(r["framework"]), str(r["family"])), (None, str(r["family"])))


def _usable(r: Mapping[str, Any], exclude_source, since) -> tuple[float, float] | None:
    """(measured, predicted) of a row that counts: not of ``exclude_source``, dated on or after
    ``since`` (None: any date), both positive and finite; else None."""
    if exclude_source is not None and r["source"] == exclude_source:
        return None
    if since is not None and ((d := _date(r.get("as_of"))) is None or d < since):
        return None
    m, p = float(r["measured"]), float(r["predicted"])
    return (m, p) if m > 0 and p > 0 and math.isfinite(m) and math.isfinite(p) else None


def fit_prefill_scales(
    records: Iterable[Mapping[str, Any]],
    exclude_source: str | None = None,
    min_rows: int = MIN_ROWS,
    min_sources: int = MIN_SOURCES,
    since: _dt.date | None = CURRENT_SINCE,
) -> tuple[PrefillScale, ...]:
    """Prefill scales from TTFT rows predicted with no scale.

    Parameters
    ----------
    records : mappings with ``framework``, ``family`` (dense / moe), ``source``,
        ``measured`` and ``predicted`` (TTFT [ms], predicted with ``prefill_scale`` 1);
        rows of other metrics are the caller's to leave out; ``as_of`` (the run's date)
        when ``since`` is set
    exclude_source : a source left out (the held-out fold of leave-one-source-out)
    since : only rows dated on or after it count (None: every row)

    Returns
    -------
    One :class:`PrefillScale` per group with enough rows: per (framework, family) and per
    family over every engine (``framework`` None).
    """
    acc: dict[tuple[str | None, str], list[tuple[float, str]]] = {}
    for r in records:
        if (mp := _usable(r, exclude_source, since)) is None:
            continue
        m, p = mp
        for g in _groups(r):
            acc.setdefault(g, []).append((math.log(m / p), str(r["source"])))
    out = []
    lo, hi = SCALE_RANGE
    for (fw, fam), v in sorted(acc.items(), key=lambda kv: (kv[0][1], kv[0][0] or "")):
        n_src = len({s for _, s in v})
        if len(v) < min_rows or n_src < min_sources:
            continue
        by_src = {}
        for x, src in v:
            by_src.setdefault(src, []).append(x)
        signs = {bool(np.median(x) > 0) for x in by_src.values()}
        if len(signs) > 1:  # the sources disagree on the direction
            continue
        scale = float(np.clip(math.exp(float(np.median([x for x, _ in v]))), lo, hi))
        out.append(
            PrefillScale(framework=fw, family=fam, scale=scale, n_rows=len(v), n_sources=n_src)
        )
    return tuple(out)


def scale_for(
    scales: Iterable[PrefillScale],
    framework: str | None,
    family: str,
    engines: Collection[str] | None = None,
    fallback: bool = True,
) -> tuple[float, str]:
    """(scale, group) of an engine and family among ``scales``: the engine's own group,
    else (``fallback``) the family's over all engines, else (1.0, 'none'). ``engines``:
    only these engines take a scale (None: every engine); the others get (1.0, 'none')."""
    if engines is not None and framework not in engines:
        return 1.0, "none"
    sc = tuple(scales)
    for fw in (framework, None) if fallback else (framework,):
        for p in sc:
            if p.framework == fw and p.family == family:
                return p.scale, f"{p.framework or 'all engines'}/{p.family}"
    return 1.0, "none"


def ratio_band(
    ratios: Iterable[float], lo_q: float = 0.1, hi_q: float = 0.9
) -> tuple[float, float] | None:
    """(p10, p90) of measured / predicted ratios, None when there are fewer than 5."""
    x = np.asarray([r for r in ratios if r > 0 and math.isfinite(r)], dtype=float)
    if len(x) < 5:
        return None
    return float(np.quantile(x, lo_q)), float(np.quantile(x, hi_q))


def fit_grid_value(
    predictions: Mapping[float, Iterable[Mapping[str, Any]]],
    exclude_source: str | None = None,
    min_rows: int = MIN_ROWS,
    min_sources: int = MIN_SOURCES,
    since: _dt.date | None = CURRENT_SINCE,
) -> float | None:
    """The candidate value of one latency parameter whose predictions fit best.

    Parameters
    ----------
    predictions : candidate value -> the rows predicted with it: mappings with ``source``,
        ``measured``, ``predicted`` (same unit) and ``as_of``; every candidate holds the
        same rows (a row one candidate cannot predict is left out of all)
    exclude_source : a source left out (the held-out fold of leave-one-source-out)
    since : only rows dated on or after it count (None: every row)

    Returns
    -------
    The candidate with the smallest median |ln(measured / predicted)| over the rows left
    (ties: the smallest candidate), or None when fewer than ``min_rows`` rows from
    ``min_sources`` sources are left.
    """
    keyed: dict[float, dict[tuple[str, str], float]] = {}
    sources: dict[tuple[str, str], str] = {}
    for v, recs in predictions.items():
        k: dict[tuple[str, str], float] = {}
        for r in recs:
            if (mp := _usable(r, exclude_source, since)) is None:
                continue
            m, p = mp
            key = (str(r["source"]), str(r.get("id", "")) + "|" + str(r.get("metric", "")))
            k[key] = abs(math.log(m / p))
            sources[key] = str(r["source"])
        keyed[float(v)] = k
    if not keyed:
        return None
    common = set.intersection(*(set(k) for k in keyed.values()))
    if len(common) < min_rows or len({sources[c] for c in common}) < min_sources:
        return None
    score = {v: float(np.median([k[c] for c in common])) for v, k in keyed.items()}
    return min(score, key=lambda v: (score[v], v))


#: candidate latencies of trtllm-serve's first-token path (TensorRT-LLM's PyTorch backend,
#: :func:`planner.benchmarks.scheduler_waits.first_token_wait`) [s]: 0-200 ms by 20 ms
FIRST_TOKEN_GRID_S = tuple(round(0.02 * i, 2) for i in range(11))


def first_token_candidates(
    records: Iterable[Mapping[str, Any]], grid: Iterable[float] = FIRST_TOKEN_GRID_S
) -> dict[float, list[dict[str, Any]]]:
    """:func:`fit_grid_value`'s predictions of the first-token latency, from one pass.

    The latency sits outside the engine loop: it is added to a row's predicted TTFT after
    the simulation (:func:`planner.benchmarks.serving_rows.predict_serving_row`), so the
    prediction with a candidate ``v`` is the prediction without it plus ``v``, exactly; no
    row is simulated again.

    Parameters
    ----------
    records : the TTFT rows of the path (TensorRT-LLM on the PyTorch backend), predicted
        WITHOUT the term: mappings with ``source``, ``measured`` and ``predicted`` [ms],
        ``as_of``, and ``id`` / ``metric`` (a row's key)
    grid : candidate latencies [s]

    Returns
    -------
    candidate [s] -> the rows with ``predicted`` raised by it [ms]
    """
    recs = [dict(r) for r in records]
    return {
        float(v): [{**r, "predicted": float(r["predicted"]) + 1e3 * float(v)} for r in recs]
        for v in grid
    }


def fit_first_token(
    records: Iterable[Mapping[str, Any]],
    exclude_source: str | None = None,
    grid: Iterable[float] = FIRST_TOKEN_GRID_S,
    since: _dt.date | None = CURRENT_SINCE,
) -> tuple[float, int, int] | None:
    """trtllm-serve's first-token latency fitted on TTFT rows predicted without it.

    Parameters
    ----------
    records : as :func:`first_token_candidates` (first-pass predictions [ms])
    exclude_source : a source left out (the held-out fold of leave-one-source-out)
    grid : candidate latencies [s]
    since : only rows dated on or after it count

    Returns
    -------
    ``(latency [s], rows, sources)`` of :func:`fit_grid_value` on the rows left, or None
    when too few rows are left (fewer than ``MIN_ROWS`` from ``MIN_SOURCES`` sources).
    """
    recs = [
        r for r in records
        if (exclude_source is None or r["source"] != exclude_source)
        and (since is None or ((d := _date(r.get("as_of"))) is not None and d >= since))
        and float(r["measured"]) > 0 and math.isfinite(float(r["measured"]))
        and float(r["predicted"]) > 0 and math.isfinite(float(r["predicted"]))
    ]  # fmt: skip
    v = fit_grid_value(first_token_candidates(recs, grid), since=None)
    if v is None:
        return None
    return (
        v,
        len({(str(r["source"]), str(r.get("id")), str(r.get("metric"))) for r in recs}),
        len({str(r["source"]) for r in recs}),
    )


def _text(record: Mapping[str, Any], key: str) -> str:
    v = record.get(key)
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def first_token_applies(record: Mapping[str, Any], metric: str) -> bool:
    """Whether trtllm-serve's first-token latency is added to ``metric`` of a public row
    (a data-file record): its TTFT or E2E, on a TensorRT-LLM run on the PyTorch backend
    (:func:`planner.benchmarks.scheduler_waits.first_token_wait`), not a static batch; as
    :func:`planner.benchmarks.serving_rows.predict_serving_row` adds it."""
    from planner.benchmarks.scheduler_waits import first_token_wait

    if not metric.startswith(("ttft_ms_", "e2e_ms_")):
        return False
    if _text(record, "mode") in ("static_batch", "single_stream"):
        return False
    fw, ver, notes = (_text(record, k) for k in ("framework", "framework_version", "notes"))
    return first_token_wait(fw, ver, notes, 1.0) > 0


def first_token_folds(
    rows: Iterable[tuple[Any, Mapping[str, Any], str, float, float]],
) -> tuple[set[int], dict[Any, float]]:
    """The first-token latency of each leave-one-source-out fold, from one pass.

    Parameters
    ----------
    rows : ``(fold, record, metric, measured, predicted)`` per row: the fold (the row's
        source), its data-file record, the metric and the prediction WITHOUT the latency
        (same unit as ``measured``, [ms] for TTFT)

    Returns
    -------
    ``(on_path, latency)``: the indices of the rows the latency applies to
    (:func:`first_token_applies`), and fold -> the latency [s] fitted on the TTFT rows of
    the other folds on that path (:func:`fit_first_token`; folds with too few such rows, or
    a fitted 0, are absent).
    """
    rows = list(rows)
    on_path = {i for i, (_, rec, metric, *_) in enumerate(rows) if first_token_applies(rec, metric)}
    ttft = [
        {"source": f, "measured": m, "predicted": p, "as_of": rec.get("as_of"),
         "id": rec.get("id"), "metric": metric}
        for i, (f, rec, metric, m, p) in enumerate(rows)
        if i in on_path and metric.startswith("ttft_ms_")
    ]  # fmt: skip
    out: dict[Any, float] = {}
    for fold in {rows[i][0] for i in on_path}:
        fit = fit_first_token(ttft, exclude_source=fold)
        if fit is not None and fit[0] > 0:
            out[fold] = fit[0]
    return on_path, out


#: forms a TTFT term can take after the simulation (outside the engine loop, so TPOT and
#: throughput do not move): ``constant`` adds ``v`` [ms]; ``per_prompt_token`` adds ``v`` [ms]
#: per 1,000 prompt tokens (tokenisation, HTTP and IPC of the prompt); ``iterations`` adds ``v``
#: of the row's predicted ITL when other requests run (a scheduler that forms its next
#: iteration before it receives: :func:`planner.benchmarks.scheduler_waits.overlap_wait`);
#: ``ttft_factor`` multiplies the predicted TTFT by ``v`` (no mechanism: the reference that
#: says whether the missing time is proportional to the prompts' time)
TTFT_TERM_GRIDS: dict[str, tuple[float, ...]] = {
    "constant": (0.0, 10.0, 20.0, 30.0, 40.0, 60.0, 80.0, 100.0),
    "per_prompt_token": (0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0),
    "iterations": (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0),
    "ttft_factor": (1.0, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.4),
}


def ttft_term(form: str, value: float, record: Mapping[str, Any]) -> float:
    """The predicted TTFT [ms] of ``record`` after a term of ``form`` (:data:`TTFT_TERM_GRIDS`)
    with ``value``.

    ``record`` holds ``predicted`` [ms]; ``prompt_tokens`` (mean prompt length; NaN or absent:
    the per-token term adds 0), ``itl_ms`` (predicted ITL median [ms]) and ``busy`` (share of
    arrivals that find others running, 0-1) where the form reads them. Example: ``constant``
    20 on 100 ms -> 120; ``per_prompt_token`` 10 with 8,000 tokens -> 100 + 80 = 180;
    ``iterations`` 2 with ITL 15 ms, busy 1 -> 130; ``ttft_factor`` 1.2 -> 120.
    """
    p = float(record["predicted"])
    if form == "constant":
        return p + value
    if form == "per_prompt_token":
        n = float(record.get("prompt_tokens") or float("nan"))
        return p + (value * n / 1000.0 if math.isfinite(n) else 0.0)
    if form == "iterations":
        itl = float(record.get("itl_ms") or 0.0)
        busy = float(record.get("busy") or 0.0)
        return p + value * (itl if math.isfinite(itl) else 0.0) * busy
    if form == "ttft_factor":
        return p * value
    raise ValueError(f"unknown TTFT term form {form!r}; expected one of {sorted(TTFT_TERM_GRIDS)}")


def fit_ttft_term(
    records: Iterable[Mapping[str, Any]],
    form: str,
    exclude_source: str | None = None,
    grid: Iterable[float] | None = None,
    since: _dt.date | None = CURRENT_SINCE,
) -> float | None:
    """The grid value of a TTFT term whose predictions fit best (:func:`fit_grid_value`:
    smallest median |log error| over the rows left, runs from ``since``, at least
    ``MIN_ROWS`` rows from ``MIN_SOURCES`` sources; else None).

    Parameters
    ----------
    records : TTFT rows predicted without the term: mappings with ``source``, ``measured``
        and ``predicted`` [ms], ``as_of``, ``id`` / ``metric`` and what :func:`ttft_term`
        reads for ``form``
    form : a key of :data:`TTFT_TERM_GRIDS`
    exclude_source : a source left out (the held-out fold of leave-one-source-out)
    grid : candidate values (default the form's grid)
    """
    recs = list(records)
    cand = {
        float(v): [{**r, "predicted": ttft_term(form, float(v), r)} for r in recs]
        for v in (TTFT_TERM_GRIDS[form] if grid is None else grid)
    }
    return fit_grid_value(cand, exclude_source=exclude_source, since=since)


def ttft_term_loso(
    records: Iterable[Mapping[str, Any]],
    form: str,
    group: str = "engine",
    grid: Iterable[float] | None = None,
) -> list[tuple[float, float | None]]:
    """Leave-one-source-out predictions of a TTFT term fitted per ``group`` (a record key,
    e.g. the engine): each row gets the value fitted on its group's rows of the other
    sources (:func:`fit_ttft_term`); a fold with too few rows gets no term.

    Returns
    -------
    ``(predicted TTFT [ms], value or None)`` per record, in order
    """
    recs = list(records)
    fitted: dict[tuple[Any, Any], float | None] = {}
    out = []
    for r in recs:
        key = (r.get(group), r["source"])
        if key not in fitted:
            mine = [x for x in recs if x.get(group) == r.get(group)]
            fitted[key] = fit_ttft_term(mine, form, exclude_source=r["source"], grid=grid)
        v = fitted[key]
        out.append((float(r["predicted"]) if v is None else ttft_term(form, v, r), v))
    return out


def first_token_train_rows(
    records: Iterable[Mapping[str, Any]],
    exclude: Collection[str] = (),
    since: _dt.date | None = CURRENT_SINCE,
) -> dict[str, set[str]]:
    """The rows :func:`first_token_folds` fits the first-token latency on, by source.

    A fold's latency is fitted on the held-out TTFT of every other source on the path. A
    partial leave-one-source-out run (``holdout``) predicts only some sources, so it must
    also predict these rows (each by its own source's fold, unscored) to give a held-out
    row the prediction of the full run; without them a fold's latency depended on which
    other sources the same run held out (InferenceX's TensorRT-LLM TTFT: 120-140 ms
    missing in an InferenceX-only run).

    Parameters
    ----------
    records : data-file records (``source``, ``id``, ``metric``, ``as_of`` and the cells
        :func:`first_token_applies` reads)
    exclude : sources left out (those the run already predicts)
    since : only rows dated on or after it (as :func:`fit_first_token`; None: every row)

    Returns
    -------
    source -> ids of its TTFT rows on the first-token path
    """
    out: dict[str, set[str]] = {}
    for r in records:
        src, metric = str(r["source"]), str(r["metric"])
        if src in exclude or not metric.startswith("ttft_ms_"):
            continue
        if since is not None and ((d := _date(r.get("as_of"))) is None or d < since):
            continue
        if first_token_applies(r, metric):
            out.setdefault(src, set()).add(str(r["id"]))
    return out
