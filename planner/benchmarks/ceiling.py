"""The highest published output throughput per GPU of each (GPU, model, engine) and each
(GPU, model): the measured ceiling that ``recommend`` and ``capacity`` compare a predicted
operating point with (:mod:`planner.catalog.ceiling` reads the table this module builds).

A row counts when its metric is an output rate (``output_tok_s_total`` divided by the
measurement's GPUs, or ``output_tok_s_per_gpu`` as published), from serving modes
(``concurrency``, ``rate``, ``server``, ``interactive``) and throughput modes (``offline``,
``static_batch``); the table says which mode each best row came from. The row's
interactivity (``1000 / TPOT [ms]``) comes from the TPOT row of the same operating point
(same file, setup columns and lengths; the nearest row id within eight, as the sources write one
operating point's metrics on consecutive ids) where one is published.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from planner.benchmarks.schema import cell, layout, number
from planner.benchmarks.speculative_rows import spec_of_row
from planner.errors import PlannerError

__all__ = ["CEILING_COLUMNS", "SERVING_MODES", "THROUGHPUT_MODES", "ceiling_rows"]

#: closed-loop or arrival-driven serving runs
SERVING_MODES = ("concurrency", "rate", "server", "interactive")
#: every request queued at once, or a fixed static batch
THROUGHPUT_MODES = ("offline", "static_batch")
_RATE_METRICS = ("output_tok_s_total", "output_tok_s_per_gpu")
#: TPOT statistics in order of preference (the median is what InferenceX publishes)
_TPOT_METRICS = ("tpot_ms_median", "tpot_ms_mean", "tpot_ms_p99")
#: columns that fix one operating point (a TPOT row pairs with a rate row on all of them)
_POINT_COLUMNS = (
    "_file", "source", "as_of", "hardware", "n_gpus", "tp", "pp", "ep", "attention_dp",
    "model", "precision", "kv_precision", "framework", "framework_version", "mode", "isl",
    "osl", "batch", "concurrency", "request_rate",
)  # fmt: skip

CEILING_COLUMNS = (
    "scope", "hardware", "model", "framework", "output_tok_s_per_gpu", "row_id", "source",
    "as_of", "precision", "layout", "n_gpus", "speculative", "mode", "kind", "concurrency",
    "batch", "isl", "osl", "tpot_ms", "tpot_metric", "interactivity_tok_s_per_user",
    "rows_considered",
)  # fmt: skip

#: a point's metrics sit on consecutive ids: a TPOT row further away is another point's
_NEAR_IDS = 8
_ID_NUM = re.compile(r"^(.*?)(\d+)$")


def _id_parts(rid: str) -> tuple[str, int]:
    m = _ID_NUM.match(rid)
    return (m.group(1), int(m.group(2))) if m else (rid, -1)


def _key(row: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(cell(row, c) for c in _POINT_COLUMNS)


def _per_gpu(row: Mapping[str, Any]) -> tuple[float, int, str] | None:
    """(output tok/s per GPU, GPUs of the measurement, layout label), None when the row's
    GPU count is not known (no ``tp`` and several GPUs)."""
    try:
        lay = layout(row)
    except PlannerError:
        return None
    v = number(row, "value")
    if v is None or v <= 0:
        return None
    if cell(row, "metric") == "output_tok_s_per_gpu":
        return v, lay.n_gpus, lay.layout.label
    return v / lay.n_gpus, lay.n_gpus, lay.layout.label


def _whole(row: Mapping[str, Any], key: str) -> str:
    """A whole-number cell as ``64`` (pandas reads ``64.0``); empty stays empty."""
    v = number(row, key)
    return "" if v is None else (str(int(v)) if v.is_integer() else str(v))


def _fmt(v: float | None, nd: int = 2) -> str:
    return "" if v is None else f"{v:.{nd}f}"


def ceiling_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The best output tok/s per GPU of each (hardware, model, framework) (``scope``
    ``engine``) and each (hardware, model) (``scope`` ``any``), separately over serving rows
    (``kind`` ``serving``: :data:`SERVING_MODES`) and throughput rows (``offline``:
    :data:`THROUGHPUT_MODES`), as rows of :data:`CEILING_COLUMNS` sorted by scope, hardware,
    model, framework, kind.

    Parameters
    ----------
    rows
        Benchmark rows (dicts of the schema's columns, e.g. the records of
        :func:`planner.benchmarks.io.load_measurements`); ``_file`` names the file.

    Returns
    -------
    list of dict
        ``output_tok_s_per_gpu`` [tok/s/GPU] with the row's id, layout label, mode, kind,
        concurrency, batch, lengths, TPOT [ms] and
        interactivity [tok/s per user] (empty where no TPOT row of the point is published),
        ``speculative`` (``mtp`` / ``eagle3`` or empty) and ``rows_considered`` (rate rows
        of that key). A tie keeps the lower row id.
    """
    rates: list[tuple[float, int, str, Mapping[str, Any]]] = []
    tpots: dict[tuple[str, ...], list[tuple[str, int, float, str]]] = {}
    for r in rows:
        metric, mode = cell(r, "metric"), cell(r, "mode")
        if mode not in SERVING_MODES + THROUGHPUT_MODES:
            continue
        if metric in _RATE_METRICS:
            got = _per_gpu(r)
            if got is not None:
                rates.append((got[0], got[1], got[2], r))
        elif metric in _TPOT_METRICS and (v := number(r, "value")):
            pre, num = _id_parts(cell(r, "id"))
            tpots.setdefault(_key(r), []).append((pre, num, v, metric))
    best: dict[tuple[str, ...], tuple[float, int, str, Mapping[str, Any]]] = {}
    count: dict[tuple[str, ...], int] = {}
    for item in rates:
        r = item[3]
        hw, model, fw = cell(r, "hardware"), cell(r, "model"), cell(r, "framework")
        kind = "serving" if cell(r, "mode") in SERVING_MODES else "offline"
        for key in (("engine", hw, model, fw, kind), ("any", hw, model, "", kind)):
            count[key] = count.get(key, 0) + 1
            old = best.get(key)
            if (
                old is None
                or item[0] > old[0]
                or (item[0] == old[0] and cell(r, "id") < cell(old[3], "id"))
            ):
                best[key] = item
    out = []
    for key in sorted(best):
        v, n_gpus, label, r = best[key]
        tpot, tmetric = _tpot_of(r, tpots)
        spec = spec_of_row(r)
        mode = cell(r, "mode")
        out.append(
            {
                "scope": key[0],
                "hardware": key[1],
                "model": key[2],
                "framework": cell(r, "framework"),
                "output_tok_s_per_gpu": _fmt(v),
                "row_id": cell(r, "id"),
                "source": cell(r, "source"),
                "as_of": cell(r, "as_of"),
                "precision": cell(r, "precision"),
                "layout": label,
                "n_gpus": str(n_gpus),
                "speculative": spec[0] if spec else "",
                "mode": mode,
                "kind": key[4],
                "concurrency": _whole(r, "concurrency"),
                "batch": _whole(r, "batch"),
                "isl": _whole(r, "isl"),
                "osl": _whole(r, "osl"),
                "tpot_ms": _fmt(tpot, 3),
                "tpot_metric": tmetric,
                "interactivity_tok_s_per_user": _fmt(1000.0 / tpot if tpot else None),
                "rows_considered": str(count[key]),
            }
        )
    return out


def _tpot_of(
    r: Mapping[str, Any], tpots: Mapping[tuple[str, ...], list[tuple[str, int, float, str]]]
) -> tuple[float | None, str]:
    """The TPOT [ms] of ``r``'s operating point: the preferred statistic, nearest id."""
    cands = tpots.get(_key(r))
    if not cands:
        return None, ""
    pre, num = _id_parts(cell(r, "id"))
    for metric in _TPOT_METRICS:
        same = [c for c in cands if c[3] == metric and c[0] == pre and abs(c[1] - num) <= _NEAR_IDS]
        if same:
            hit = min(same, key=lambda c: (abs(c[1] - num), c[1]))
            return hit[2], metric
    return None, ""
