"""Rows that state ``n_gpus`` but no layout: predicted with the layout a submitter would tune.

MLPerf multi-GPU results give the system (e.g. 8 GPUs) but not how it was split into
tensor-parallel replicas. :func:`assumed_layout` picks, among the TP sizes that divide both
``n_gpus`` and the model's attention heads and hold the model and the row's requests in
memory, the one with the most analytic throughput for the whole system: ``n_gpus / tp``
replicas x each replica's saturation output rate (:func:`planner.serving.steady_state`) at
the row's prompt and answer lengths. That is how a submitter maximising throughput on that
many GPUs would choose. The choice is labelled in the prediction's provenance
(``assumed layout tp=4 dp=2 ...``) and ``planner validate`` reports such rows as their own
group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.benchmarks.schema import (
    cell,
    engine_settings,
    memory_fraction_from_notes,
    number,
    row_kv_precision,
)
from planner.catalog.catalog import Catalog
from planner.catalog.efficiency import EfficiencyParams
from planner.errors import PlannerError
from planner.serving.replica import build_replica
from planner.serving.steady_state import steady_state

#: TP sizes a submitter would use within one node
TPS = (1, 2, 4, 8)
#: the OpenOrca shape of the MLPerf Llama-2-70B set, for rows without isl/osl
#: (planner.workload.presets.openorca_lengths has the full distribution)
_DEFAULT_LENGTHS = (1024.0, 290.0)

_CACHE: dict[tuple, tuple[int, str] | str] = {}


def needs_layout(row: Mapping[str, Any]) -> bool:
    """True for a row that states more than one GPU but no ``tp``."""
    if cell(row, "tp"):
        return False
    n = number(row, "n_gpus")
    return n is not None and n > 1


def assumed_layout(
    row: Mapping[str, Any], catalog: Catalog, params: EfficiencyParams
) -> tuple[dict[str, Any], str]:
    """The row with ``tp`` (and ``pp`` 1) filled in, and the provenance note.

    Raises
    ------
    PlannerError
        when no TP size holds the model on the row's GPU.
    """
    n = int(number(row, "n_gpus"))
    hw, prec, fw = cell(row, "hardware"), cell(row, "precision"), cell(row, "framework")
    model_key = cell(row, "model")
    isl, osl = number(row, "isl"), number(row, "osl")
    lengths = (isl, osl) if isl and osl else _DEFAULT_LENGTHS
    util = memory_fraction_from_notes(cell(row, "notes"))
    settings = engine_settings(cell(row, "notes"))  # a tuned run's own settings
    key = (hw, model_key, prec, fw, row_kv_precision(row), settings, n, lengths, util, params)
    if key not in _CACHE:
        _CACHE[key] = _choose(catalog, row, n, lengths, util, params)
    choice = _CACHE[key]
    if isinstance(choice, str):
        raise PlannerError(f"n_gpus={n} without tp, and no TP size in {TPS} works: {choice}")
    tp, note = choice
    out = dict(row)
    out["tp"], out["pp"] = str(tp), "1"
    return out, note


def _choose(
    catalog: Catalog,
    row: Mapping[str, Any],
    n: int,
    lengths: tuple[float, float],
    util: float | None,
    params: EfficiencyParams,
) -> tuple[int, str] | str:
    m = catalog.model_ref(cell(row, "model"), cell(row, "_dir") or None)
    kv = row_kv_precision(row)
    settings = engine_settings(cell(row, "notes"))
    best: tuple[float, int] | None = None
    why = f"no TP size divides {n} and the {m.num_attention_heads} heads"
    for tp in TPS:
        if n % tp or (tp > 1 and m.num_attention_heads % tp):
            continue
        try:
            rep = build_replica(
                m,
                cell(row, "hardware"),
                cell(row, "precision"),
                cell(row, "framework") or None,
                tp=tp,
                kv_precision=kv,
                params=params,
                catalog=catalog,
                memory_utilization=util,
                max_num_seqs=settings.max_num_seqs,
                max_num_batched_tokens=settings.max_num_batched_tokens,
                first_token_s=0.0,  # the MLPerf harness: its front end is not trtllm-serve
            )
            if rep.engine.context_limit_tokens < lengths[0] + lengths[1]:
                why = (
                    f"tp={tp}: a request of {lengths[0] + lengths[1]:.0f} tokens exceeds the "
                    f"context limit of {rep.engine.context_limit_tokens}"
                )
                continue
            sat = steady_state(rep, lengths, 1e18).saturation_output_tok_s * (n // tp)
        except PlannerError as e:
            why = f"tp={tp}: {e}"
            continue
        if best is None or sat > best[0] * (1 + 1e-9):
            best = (sat, tp)
    if best is None:
        return why
    sat, tp = best
    return tp, (
        f"assumed layout tp={tp} dp={n // tp} (the TP size with the most analytic throughput "
        f"on {n} GPUs: {sat:,.0f} output tok/s at saturation)"
    )
