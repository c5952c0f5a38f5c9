"""Rank an option whose prediction lies far beyond every measurement at its band's
pessimistic edge.

An option's point prediction ranks it (:func:`planner.recommend.objective.sort_key`). Where
that prediction is far above the best published output rate of its GPU and model
(:func:`planner.catalog.ceiling.ceiling_check`: more than ``max(1.5, 1 / low_ratio)`` x the
best serving measurement, the "beyond measurements" line of ``recommend``), nothing measured
supports the point answer, and the option's own error band says the true capacity may be as
low as ``max rate x low_ratio``, and no measurement vouches for more than the best one times
the flag's threshold. Such an option is ranked by the fleet it needs at the lower of the two:
``max(ceil(need / (max rate x low_ratio)), ceil(need / vouched))`` replicas, ``vouched =
best measured tok/s/GPU x threshold x GPUs per replica / mean answer`` [req/s] (objectives
``cost`` and ``gpus``), or its full-load value times ``max rate / min(max rate x low_ratio,
vouched)`` (``tokens-per-dollar``, ``energy``). The
``latency`` objective is not changed (a band on speed says little about a P99 at a fixed
load). The reported numbers stay the point answer; the option's ``ranked_at_band_edge``
says what it was ranked at, and its ``ceiling_note`` says so.

Why: DeepSeek-R1 on MI325X (examples/moe-r1.yaml) was ranked first on a predicted 1,856
output tok/s/GPU with SGLang DEP8, 8.4x the best published MI325X number (InferenceX SGLang
TP8); no AMD DP-attention + EP measurement of an MI300X / MI325X exists, and held out, the
InferenceX MI355X disaggregated points with a DEP decode pool are predicted 1.84x too fast
(docs/changes/2026-12-07d/amddep.md). No factor is fitted here: the band is the one every
command prints (:func:`planner.catalog.profile.error_band`), the ceiling the published one.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import PlannerError
from .objective import Load, Screened, _max_rate, bracket

__all__ = ["EDGE_OBJECTIVES", "edge_sentence", "edge_text", "edge_value"]

#: whether the edge is also capped at the rate the measurements vouch for: a replica carries at
#: most ``best measured tok/s/GPU x threshold x GPUs / mean answer`` req/s (tenth pass: with
#: the band alone, an SGLang-on-AMD DEP option 6.8x beyond its GPU's best measurement ranked
#: first once the refit narrowed the band to 0.659, against InferenceX's B200 ~4.5x cheaper)
APPLY_VOUCHED = True

#: objectives re-ranked at the band's pessimistic edge, and how: ``replicas`` (the fleet at
#: that edge) or ``rate`` (a full-load value that scales with 1 / rate)
EDGE_OBJECTIVES = {"cost": "replicas", "gpus": "replicas", "tokens-per-dollar": "rate",
                   "energy": "rate"}  # fmt: skip


def _low_ratio(s: Screened) -> float | None:
    """The low end of the option's error band (measured / predicted speed), or None."""
    from ..catalog.profile import error_band

    try:
        band = error_band(s.provenance, None, s.opt.gpu.vendor, s.opt.framework.id)
    except PlannerError:
        return None
    lo = band.low_ratio
    return lo if lo is not None and 0 < lo < 1 else None


def _beyond(s: Screened, rate_rps: float, mean_out: float, low: float) -> dict[str, Any]:
    """:func:`~planner.catalog.ceiling.ceiling_check` of the option at ``rate_rps`` per
    replica (output tok/s per GPU = rate x mean answer / GPUs per replica)."""
    from ..catalog.ceiling import ceiling_check

    tok = rate_rps * mean_out / s.opt.gpus_per_replica
    return ceiling_check(
        tok, s.opt.gpu.id, s.replica.sm.model.id, s.opt.framework.id, low_ratio=low
    )


def edge_value(s: Screened, objective: str, value: float, load: Load) -> float:
    """The value ``s`` is ranked by: ``value`` (its objective's value at the point answer), or,
    where its predicted output rate is beyond every measurement of its GPU and model, the
    value at its error band's pessimistic edge (module docstring). Sets
    ``s.result["ranked_at_band_edge"]`` in the second case.

    Parameters
    ----------
    s : a simulated option (``replicas`` set)
    objective : the objective's name
    value : its objective value at the point answer (lower is better)
    load : the planned load (``need_rps`` [req/s], ``mean_output_tokens`` [tokens])

    Returns
    -------
    float
        the value to rank and prune by (same unit as ``value``)
    """
    from ..catalog.ceiling import measured_ceiling

    how = EDGE_OBJECTIVES.get(objective)
    if how is None or not value > 0 or not math.isfinite(value):
        return value
    # a serving measurement of this GPU and model only: an offline / static-batch table
    # (other lengths, batch and layout, no latency target) does not bound a serving rate
    if measured_ceiling(s.opt.gpu.id, s.replica.sm.model.id) is None:
        return value
    low = _low_ratio(s)
    if low is None:
        return value
    need, mean_out = load.need_rps, load.mean_output_tokens
    # the max rate lies in [tested, upper] (bracket) and the flag grows with the rate: the
    # refined rate (a bisection) is needed only where the two ends disagree; the full-load
    # objectives have it already
    tested, upper = bracket(s, need)
    if how == "rate" or _beyond(s, tested, mean_out, low)["ceiling_note"] is None:
        if _beyond(s, upper, mean_out, low)["ceiling_note"] is None:
            return value
        tested = _max_rate(s, load, True)
    chk = _beyond(s, tested, mean_out, low)
    if chk["ceiling_note"] is None or chk["ceiling_ratio"] is None:
        return value
    gpr = s.opt.gpus_per_replica
    # the most a replica is vouched for: the best measurement of its GPU and model times the
    # flag's own threshold (beyond it the option is "beyond measurements")
    vouched = (
        chk["measured_ceiling_tok_s_per_gpu"] * chk["ceiling_threshold"] * gpr / mean_out
        if APPLY_VOUCHED and chk.get("measured_ceiling_tok_s_per_gpu") and mean_out > 0
        else math.inf
    )
    if how == "replicas":
        k_v = math.ceil(need / vouched - 1e-9) if math.isfinite(vouched) else 0
        if k_v >= math.ceil(need / (tested * low) - 1e-9):
            # the band's fleet is at most ceil(need / (tested x low)) (tested <= max rate):
            # the vouched rate decides, no simulation needed
            k_edge = max(s.replicas, k_v)
        else:
            # the fewest replicas whose rate need / k is within the SLO at capacity x low:
            # need / (k x low) passes in the simulation, i.e. k >= need / (max rate x low)
            k0 = max(s.replicas, math.ceil(need / (upper * low) - 1e-9))
            k_edge = s.probe.min_replicas(need / low, s.replicas, max(k0, 4 * k0), k0)
            if k_edge is None:  # not within 4x: the analytic cap bounds it
                k_edge = math.ceil(need / (tested * low) - 1e-9)
            k_edge = max(k_edge, k_v)
        edge = value * k_edge / s.replicas
    else:
        k_edge, edge = None, value * tested / min(tested * low, vouched)
    s.result["ranked_at_band_edge"] = {
        "objective": objective,
        "value": edge,
        "point_value": value,
        "low_ratio": low,
        "replicas": k_edge,
        "num_gpus": k_edge * gpr if k_edge is not None else None,
        "rate_rps": tested,
        "ceiling_ratio": chk["ceiling_ratio"],
        "ceiling_row": chk["ceiling_row"],
        "vouched_rps": vouched if math.isfinite(vouched) else None,
    }
    return edge


def edge_text(r: dict[str, Any]) -> str:
    """``; ranked at its band's pessimistic edge (x0.55: 16 GPUs)``-like text for an option
    ranked by :func:`edge_value`, or ""."""
    e = r.get("ranked_at_band_edge")
    if not e:
        return ""
    at = f": {e['num_gpus']} GPUs" if e.get("num_gpus") is not None else ""
    return (
        f"; ranked at its error band's pessimistic edge (capacity x{e['low_ratio']:.2f}{at}), "
        "not at this prediction"
    )


def edge_sentence(recs: list[dict[str, Any]]) -> str:
    """One sentence naming the options of ``recs`` ranked at their band's pessimistic edge
    (at most three), or "" when none was."""
    ranked = [r for r in recs if r.get("ranked_at_band_edge")]
    if not ranked:
        return ""

    def one(r: dict[str, Any]) -> str:
        e, name = r["ranked_at_band_edge"], f"#{r.get('rank')} {r['gpu']} {r['framework']}"
        if e["objective"] == "cost":
            return f"{name} (${e['point_value']:,.2f}/h as predicted, ${e['value']:,.2f}/h at the edge)"
        if e["objective"] == "gpus":
            return f"{name} ({e['point_value']:g} GPUs as predicted, {e['value']:g} at the edge)"
        return f"{name} (x{1 / e['low_ratio']:.2f} its full-load value)"

    return (
        "ranked at their error band's pessimistic edge, their predictions lying far beyond "
        "every serving measurement of their GPU and model: " + ", ".join(one(r) for r in ranked[:3])
    )
