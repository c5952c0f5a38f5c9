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

The same rule ranks an option whose engine has no fit on its GPU's architecture
(:data:`TRANSFER_EDGE_TIERS`: its efficiencies come from the same engine on another
architecture, from every engine of the vendor, from the engine on another vendor or from the
global fit, e.g. ``transferred from lmdeploy on nvidia (nvidia-a100-80gb-sxm, ...)`` for
LMDeploy on an H100) at its band's pessimistic edge, ``ceil(need / (max rate x low_ratio))``
replicas, whether or not it lies beyond the measurements: its band is the one of held-out
predictions of that tier (rows whose parameters came from that kind of transfer,
leave-one-source-out), and the point answer
is a number no measurement of that engine on that architecture vouches for. Fitted options
and transfers within the architecture (``sibling``, ``same_gpu``, ``same_arch``: the engine was
measured on that architecture) keep their point answer. Why: for Llama-3.1-70B at 50 req/s
(the README question) the best H100 and H200 options were LMDeploy int8 TP2 transferred from
LMDeploy's A100 static-batch rows (no LMDeploy row on Hopper), ranked over vLLM / SGLang /
TensorRT-LLM fp8 options fitted on Hopper serving rows (docs/changes/2026-12-09/rank.md).
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import PlannerError
from .objective import Load, Screened, _max_rate, bracket

__all__ = [
    "EDGE_OBJECTIVES",
    "TRANSFER_EDGE_TIERS",
    "edge_bound",
    "edge_sentence",
    "edge_text",
    "edge_value",
    "transfer_text",
    "transfer_tier",
]

#: whether the edge is also capped at the rate the measurements vouch for: a replica carries at
#: most ``best measured tok/s/GPU x threshold x GPUs / mean answer`` req/s (tenth pass: with
#: the band alone, an SGLang-on-AMD DEP option 6.8x beyond its GPU's best measurement ranked
#: first once the refit narrowed the band to 0.659, against InferenceX's B200 ~4.5x cheaper)
APPLY_VOUCHED = True

#: objectives re-ranked at the band's pessimistic edge, and how: ``replicas`` (the fleet at
#: that edge) or ``rate`` (a full-load value that scales with 1 / rate)
EDGE_OBJECTIVES = {"cost": "replicas", "gpus": "replicas", "tokens-per-dollar": "rate",
                   "energy": "rate"}  # fmt: skip

#: provenance tiers (:data:`planner.catalog.profile.TIERS`) whose options are ranked at their
#: band's pessimistic edge even within the measurements: the engine has no fit on the GPU's
#: architecture (same vendor and framework on other architectures, every engine of the
#: vendor, the engine on other vendors, the global fit). ``sibling``, ``same_gpu`` and
#: ``same_arch`` are not in it: the engine was fitted on that architecture or GPU. Empty:
#: the rule is off (point answers rank).
TRANSFER_EDGE_TIERS = ("vendor_framework", "vendor", "framework", "global")


#: remembered lookups of a search's screen (each option asks; a search has few distinct
#: labels): provenance label -> its tier (None: unknown label), and (label, vendor,
#: framework) -> (the bundled profile read, the band's low ratio). Pure functions of their
#: keys (the tier patterns are constants; the band is keyed on the profile object it was read
#: from, so a new or swapped profile reads it again); cleared when large.
_TIERS: dict[str, str | None] = {}
_LOWS: dict[tuple[str, str, str], tuple[Any, float | None]] = {}
_MEMO_MAX = 4096


def _tier(provenance: str) -> str | None:
    """:func:`planner.catalog.profile.provenance_tier`, remembered; None for an unknown
    label."""
    hit = _TIERS.get(provenance, _TIERS)
    if hit is not _TIERS:
        return hit  # type: ignore[return-value]
    from ..catalog.profile import provenance_tier

    try:
        tier: str | None = provenance_tier(provenance)
    except PlannerError:
        tier = None
    if len(_TIERS) >= _MEMO_MAX:
        _TIERS.clear()
    _TIERS[provenance] = tier
    return tier


def transfer_tier(provenance: str) -> str | None:
    """The tier of ``provenance`` when it is one of :data:`TRANSFER_EDGE_TIERS` (an option
    whose engine has no fit on its GPU's architecture), else None."""
    tier = _tier(provenance)
    return tier if tier in TRANSFER_EDGE_TIERS else None


def _low_ratio(s: Screened) -> float | None:
    """The low end of the option's error band (measured / predicted speed), or None."""
    return _low_of(s.provenance, s.opt.gpu.vendor, s.opt.framework.id)


def _low_of(provenance: str, vendor: str, framework: str) -> float | None:
    """The low end of :func:`planner.catalog.profile.error_band` (bundled profile) of a label
    on a vendor's GPU with a framework, when in (0, 1), else None; remembered per bundled
    profile object (:data:`_LOWS`)."""
    from ..catalog.profile import load_profile

    prof = load_profile()  # the object error_band reads (cached per path and mtime)
    key = (provenance, vendor, framework)
    hit = _LOWS.get(key)
    if hit is not None and hit[0] is prof:
        return hit[1]
    lo = _low_band(provenance, vendor, framework)
    if len(_LOWS) >= _MEMO_MAX:
        _LOWS.clear()
    _LOWS[key] = (prof, lo)
    return lo


def _low_band(provenance: str, vendor: str, framework: str) -> float | None:
    """:func:`_low_of` computed (not remembered)."""
    from ..catalog.profile import error_band

    try:
        band = error_band(provenance, None, vendor, framework)
    except PlannerError:
        return None
    lo = band.low_ratio
    return lo if lo is not None and 0 < lo < 1 else None


def edge_bound(s: Screened, objective: str, bound: float, need_rps: float) -> float:
    """An optimistic bound on the value :func:`edge_value` will rank ``s`` by, from the
    analytic screen: ``bound`` (the objective's bound at the point answer), or, for an option
    whose engine has no fit on its GPU's architecture (:func:`transfer_tier`), the bound at
    its band's edge: ``max(k_lb, ceil(need / (cap x low_ratio)))`` replicas instead of
    ``k_lb`` (``cap`` [req/s], 95 % of the analytic saturation rate, bounds the max rate from
    above, so the edge fleet ``ceil(need / (max rate x low_ratio))`` is at least that), or
    ``bound / low_ratio`` for the full-load objectives. Lets the branch and bound prune such
    options by what they will be ranked at."""
    how = EDGE_OBJECTIVES.get(objective)
    if how is None or not bound > 0 or not math.isfinite(bound):
        return bound
    if transfer_tier(s.provenance) is None:
        return bound
    low = _low_ratio(s)
    if low is None:
        return bound
    if how == "rate":
        return bound / low
    k = max(s.k_lb, math.ceil(need_rps / (s.cap_rps * low) - 1e-9))
    return bound * k / s.k_lb


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
    where its predicted output rate is beyond every measurement of its GPU and model or its
    engine has no fit on its GPU's architecture (:func:`transfer_tier`), the
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
    tier = transfer_tier(s.provenance)
    # a serving measurement of this GPU and model only: an offline / static-batch table
    # (other lengths, batch and layout, no latency target) does not bound a serving rate
    measured = measured_ceiling(s.opt.gpu.id, s.replica.sm.model.id) is not None
    if not measured and tier is None:
        return value
    low = _low_ratio(s)
    if low is None:
        return value
    need, mean_out = load.need_rps, load.mean_output_tokens
    # the max rate lies in [tested, upper] (bracket) and the flag grows with the rate: the
    # refined rate (a bisection) is needed only where the two ends disagree; the full-load
    # objectives have it already
    tested, upper = bracket(s, need)
    chk = None
    if measured:
        if how == "rate" or _beyond(s, tested, mean_out, low)["ceiling_note"] is None:
            if _beyond(s, upper, mean_out, low)["ceiling_note"] is not None:
                tested = _max_rate(s, load, True)
                chk = _beyond(s, tested, mean_out, low)
        else:
            chk = _beyond(s, tested, mean_out, low)
        if chk is not None and (chk["ceiling_note"] is None or chk["ceiling_ratio"] is None):
            chk = None
    if chk is None and tier is None:
        return value
    gpr = s.opt.gpus_per_replica
    # the most a replica is vouched for: the best measurement of its GPU and model times the
    # flag's own threshold (beyond it the option is "beyond measurements")
    vouched = (
        chk["measured_ceiling_tok_s_per_gpu"] * chk["ceiling_threshold"] * gpr / mean_out
        if chk is not None
        and APPLY_VOUCHED
        and chk.get("measured_ceiling_tok_s_per_gpu")
        and mean_out > 0
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
        "reason": "beyond" if chk is not None else "transferred",
        "provenance_tier": tier,
        "value": edge,
        "point_value": value,
        "low_ratio": low,
        "replicas": k_edge,
        "num_gpus": k_edge * gpr if k_edge is not None else None,
        "rate_rps": tested,
        "ceiling_ratio": chk["ceiling_ratio"] if chk is not None else None,
        "ceiling_row": chk["ceiling_row"] if chk is not None else None,
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


def transfer_text(r: dict[str, Any]) -> str:
    """The line of an option ranked at its band's edge because its engine has no fit on its
    GPU's architecture (``reason`` "transferred"), or ""."""
    e = r.get("ranked_at_band_edge")
    if not e or e.get("reason") != "transferred":
        return ""
    prov = str(r.get("provenance") or "").split(";")[0]
    edge = edge_text(r).removeprefix("; ")
    return (
        f"{r['framework']} has no fit on {r['gpu']}'s architecture for this model ({prov}): {edge}"
    )


def edge_sentence(recs: list[dict[str, Any]]) -> str:
    """One sentence per reason naming the options of ``recs`` ranked at their band's
    pessimistic edge (at most three each), or "" when none was."""

    def one(r: dict[str, Any]) -> str:
        e, name = r["ranked_at_band_edge"], f"#{r.get('rank')} {r['gpu']} {r['framework']}"
        if e["objective"] == "cost":
            return f"{name} (${e['point_value']:,.2f}/h as predicted, ${e['value']:,.2f}/h at the edge)"
        if e["objective"] == "gpus":
            return f"{name} ({e['point_value']:g} GPUs as predicted, {e['value']:g} at the edge)"
        return f"{name} (x{1 / e['low_ratio']:.2f} its full-load value)"

    ranked = [r for r in recs if r.get("ranked_at_band_edge")]
    moved = [r for r in ranked if r["ranked_at_band_edge"].get("reason") == "transferred"]
    beyond = [r for r in ranked if r not in moved]
    out = []
    if beyond:
        out.append(
            "ranked at their error band's pessimistic edge, their predictions lying far beyond "
            "every serving measurement of their GPU and model: "
            + ", ".join(one(r) for r in beyond[:3])
        )
    if moved:
        out.append(
            "ranked at their error band's pessimistic edge, their engine having no fit on their "
            "GPU's architecture for this model (efficiencies transferred from elsewhere): "
            + ", ".join(one(r) for r in moved[:3])
        )
    return "; ".join(out)
