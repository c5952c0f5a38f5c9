"""Vega-Lite specs of the Plan page's charts: built with altair, kept on disk as JSON.

A new server's first page paid ~0.4-0.5 s for them (issue 18, cold first load): importing
altair (with jsonschema and narwhals) and validating each chart against the Vega-Lite
schema. A spec depends only on this file and on altair, so it is built once per install
(``scripts/warm_up.py``, or the first page that draws it) and kept in
``app_pages/__pycache__/vega-specs-<hash>.json`` under a hash of this file and of altair's
version; a changed builder or altair never reuses an old spec. Pages get a spec with
:func:`spec` and attach their data with ``widgets.with_data``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import Any

_BUILDERS: dict[str, Callable[[], dict[str, Any]]] = {}
_LOCK = threading.Lock()


def _builder(fn: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    _BUILDERS[fn.__name__] = fn
    return fn


@functools.lru_cache(maxsize=1)
def _store_path() -> Path:
    """The JSON file of this install's specs (the hash of this file and of altair's
    ``__init__.py``, which holds its version; altair is found, not imported)."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    alt = find_spec("altair")
    if alt is not None and alt.origin:
        h.update(Path(alt.origin).read_bytes())
    return Path(__file__).resolve().parent / "__pycache__" / f"vega-specs-{h.hexdigest()[:16]}.json"


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


@functools.cache
def spec(name: str) -> dict[str, Any]:
    """The Vega-Lite spec (a dict, without data; do not change it) of the builder ``name``,
    from disk, or built with altair and stored."""
    path = _store_path()
    with _LOCK:
        stored = _read(path)
        if name in stored:
            return stored[name]
        built = _BUILDERS[name]()
        try:
            path.parent.mkdir(exist_ok=True)
            tmp = path.with_suffix(f".{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps({**stored, name: built}))
            tmp.replace(path)  # atomic: a concurrent reader sees the old file or the new one
            for old in path.parent.glob("vega-specs-*.json"):
                if old != path:
                    old.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only install: built once per server process
        return built


def build_all() -> None:
    """Build and store every spec (``scripts/warm_up.py``)."""
    for name in _BUILDERS:
        spec(name)


# =========================================================================== builders
@_builder
def length_hist() -> dict[str, Any]:
    """Prompt and answer histograms side by side, each binned over its own range (dataset
    ``lengths`` from ``widgets.length_histogram``: which = prompt / answer, bin_start,
    bin_end [tokens], count; binned on the server as Vega-Lite would bin)."""
    import altair as alt

    data = alt.Data(name="lengths")

    def panel(which: str, color: str) -> alt.Chart:
        return (
            alt.Chart(data, title=f"{which} length")
            .transform_filter(alt.datum.which == which)
            .mark_bar(color=color, opacity=0.85)
            .encode(
                x=alt.X("bin_start:Q", bin="binned", title=f"{which} [tokens]"),
                x2="bin_end:Q",
                y=alt.Y("count:Q", title="requests [of 2,000 drawn]"),
                tooltip=[
                    alt.Tooltip("bin_start:Q", format=",.0f", title="tokens from"),
                    alt.Tooltip("bin_end:Q", format=",.0f", title="tokens to"),
                    alt.Tooltip("count:Q", title="requests"),
                ],
            )
            .properties(height=130, width=250)
        )

    return alt.hconcat(panel("prompt", "#4c78a8"), panel("answer", "#f58518")).to_dict()


WINNER_LEGEND = "datum.label == 'winner' ? 'recommended (#1)' : datum.label"


@_builder
def pareto() -> dict[str, Any]:
    """Cost vs P99 end-to-end latency of the ranked options (dataset ``options``: label,
    rank, usd_per_mtok_output, e2e_p99_s, num_gpus, pareto, role, short)."""
    import altair as alt

    pts = alt.Data(name="options")
    x = alt.X(
        "e2e_p99_s:Q", title="P99 end-to-end latency [s]", scale=alt.Scale(zero=False, padding=24)
    )
    y = alt.Y("usd_per_mtok_output:Q", title="cost [$ per million output tokens]")
    tip = [
        alt.Tooltip("label:N", title="option"),
        alt.Tooltip("usd_per_mtok_output:Q", format="$.4f", title="$/M output tokens"),
        alt.Tooltip("e2e_p99_s:Q", format=".2f", title="E2E P99 [s]"),
        alt.Tooltip("num_gpus:Q", title="GPUs"),
    ]
    front = (
        alt.Chart(pts)
        .transform_filter("datum.pareto")
        .mark_line(color="#54a24b", strokeDash=[4, 3], interpolate="step-after")
        .encode(x=x, y=y, order="e2e_p99_s:Q")
    )

    def by_role(*values):  # winner, Pareto front, other
        return alt.Scale(domain=["winner", "Pareto front", "other"], range=list(values))

    legend = alt.Legend(title=None, orient="bottom", labelExpr=WINNER_LEGEND)
    dots = (
        alt.Chart(pts)
        .mark_point(filled=True, size=110)
        .encode(
            x=x,
            y=y,
            shape=alt.Shape("role:N", scale=by_role("diamond", "circle", "circle"), legend=legend),
            color=alt.Color(
                "role:N", scale=by_role("#d62728", "#54a24b", "#9d9d9d"), legend=legend
            ),
            size=alt.Size("role:N", scale=by_role(320, 110, 80), legend=None),
            tooltip=tip,
        )
    )
    # short labels ("#1", "#3, #4") centred above their point: a long label ran over the
    # neighbouring points (issue 18); the legend and the caption name the recommendation
    labels = [
        alt.Chart(pts)
        .mark_text(align="center", baseline="bottom", dy=-11, fontSize=11, fontWeight="bold")
        .encode(
            x=x,
            y=y,
            text="short:N",
            color=alt.condition("datum.rank == 1", alt.value("#d62728"), alt.value("#333")),
        )
    ]
    return alt.layer(front, dots, *labels).properties(height=340).to_dict()
