"""What a buyer needs to defend the choice: a diverse top N, the price at which each option
would tie the winner, and whether the winner stays the winner when prices move across their
rows or the performance model errs within its band.

Every number here is arithmetic on finished recommendations (no simulation):

* ``break_even_usd_per_gpu_hour``: the GPU price at which the option's $/M output tokens
  equal the winner's. $/M scales with the price at a fixed fleet, so it is
  ``price x winner's $/M / option's $/M``, each $/M as ranked (at the band's edge for an
  option ranked there: :func:`_ranked_usd`).
* **price robustness** of the winner: every option re-priced at its GPU's min, median and
  max row (of the price basis used); ``winner_at_price_rows`` names the cheapest per $/M at
  each.
* **error bands**: ``num_gpus_low/high`` and ``usd_per_mtok_output_low/high`` from
  :func:`planner.catalog.profile.error_band` (p10-p90 of measured / predicted throughput
  held out by source); two options whose $/M intervals overlap cannot be told apart by the
  model.
* **ratio bands** (``ratio_to_winner``, ``ratio_to_winner_low/high``; on the winner
  ``runner_up_cost_ratio`` and its ``_low/_high``, or ``runner_up_gpus_ratio`` for the
  ``gpus`` objective): an option's $/M (or GPUs) over the winner's, with the band of that
  ratio from paired held-out residuals (:func:`planner.catalog.profile.pair_band`: the same
  source's experiment predicted for both kinds of option). Error a source, an engine or a
  workload puts on both options cancels in their ratio: for two NVIDIA GPUs the band is
  0.77x-1.30x, about one option's own band, half what two own bands side by side span. An
  option whose parameters come from a far relative widens it (its own error beyond the fit
  tier's, in quadrature).
* ``robustness``: one sentence per option: ``robust``, ``depends on price: H200 wins below
  $3.10/GPU-h``, or ``within model uncertainty`` (the ratio band includes 1; where no paired
  band is known, the two options' own bands overlap).
"""

from __future__ import annotations

import math
from typing import Any

from .beyond import edge_sentence
from .buyer import buyer
from .finish import spec_suffix
from .objective import TIE_REL, Screened
from .options import layout_text

#: objectives whose ranking is in money, so prices can reorder it
PRICED = ("cost", "tokens-per-dollar")


def _tie(a: Screened, b: Screened) -> bool:
    va, vb = a.value, b.value
    same = math.isclose(va, vb, rel_tol=TIE_REL) if va and vb else va == vb
    return same and a.replicas * a.opt.gpus_per_replica == b.replicas * b.opt.gpus_per_replica


def diverse(ranked: list[Screened], top_n: int) -> list[tuple[Screened, list[Screened]]]:
    """The best ``top_n`` distinct GPU x framework options of ``ranked`` (best first), each
    with the variants (weight formats of the same bits, or other KV formats; same GPU,
    framework and layout) that tie with it on the objective and the GPU count: one line,
    "fp8 / int8"."""
    top: list[tuple[Screened, list[Screened]]] = []
    lead: dict[tuple[str, str], tuple[Screened, list[Screened]]] = {}
    for s in ranked:
        key = (s.opt.gpu.id, s.opt.framework.id)
        if key in lead:
            first, variants = lead[key]
            same_bits = s.opt.precision.weight_bits == first.opt.precision.weight_bits
            same_layout = s.opt.layout == first.opt.layout
            if same_bits and same_layout and _tie(first, s):
                variants.append(s)
            continue
        if len(top) < top_n:
            lead[key] = (s, [])
            top.append(lead[key])
    return top


def variant_label(lead: Screened, variants: list[Screened]) -> str:
    """``fp8 / int8`` (weights), ``fp8 (kv fp8 / bf16)`` when only the KV format differs."""
    precs = [lead.opt.precision.id]
    for v in variants:
        p = v.opt.precision.id
        if p not in precs:
            precs.append(p)
    kvs = [lead.opt.kv_precision]
    for v in variants:
        if v.opt.kv_precision not in kvs:
            kvs.append(v.opt.kv_precision)
    return " / ".join(precs) + (f" (kv {' / '.join(kvs)})" if len(kvs) > 1 else "")


def _usd(r: dict[str, Any], key: str = "usd_per_mtok_output") -> float | None:
    v = r.get(key)
    return float(v) if v is not None and math.isfinite(v) else None


def _ranked_usd(r: dict[str, Any]) -> float | None:
    """The option's $/M output tokens at the value it is ranked by: its point answer's, or,
    where it is ranked at its error band's pessimistic edge (``ranked_at_band_edge``,
    :func:`planner.recommend.beyond.edge_value`: a fleet or a rate that many times the
    point's), that $/M times edge / point. Compared at the point, an MI355X option ranked
    third at its edge (28 GPUs where the point says 8) was named the winner at every price
    row, the median it was ranked at included."""
    mtok, edge = _usd(r), r.get("ranked_at_band_edge") or {}
    v, v0 = edge.get("value"), edge.get("point_value")
    if mtok is None or not v or not v0 or not math.isfinite(v / v0):
        return mtok
    return mtok * v / v0


def _repriced(r: dict[str, Any], which: str) -> float | None:
    """The option's $/M output tokens (as ranked: :func:`_ranked_usd`) with its GPU at the
    ``which`` (min/median/max) row."""
    mtok, p, sp = _ranked_usd(r), r.get("usd_per_gpu_hour"), r.get("price_spread")
    if (
        mtok is None
        or not p
        or not sp
        or sp.get(which) is None
        or r.get("price_rule") == ("user override")
    ):
        return mtok
    return mtok * sp[which] / p


def _label(r: dict[str, Any]) -> str:
    """An option as the decision names it, with its speculative setting (``amd-mi325x vllm
    w4a16 tp=2 + MTP k=2, AL 2.40``)."""
    return f"{r['gpu']} {r['framework']} {r['precision']} {layout_text(r)}{spec_suffix(r)}"


def _overlap(a: dict[str, Any], b: dict[str, Any], key: str = "usd_per_mtok_output") -> bool:
    """Whether the ``key_low``..``key_high`` bands of two options overlap."""
    lo_a, hi_a = a.get(f"{key}_low"), a.get(f"{key}_high")
    lo_b, hi_b = b.get(f"{key}_low"), b.get(f"{key}_high")
    if None in (lo_a, hi_a, lo_b, hi_b):
        return False
    return lo_a < hi_b * (1 - 1e-9) and lo_b < hi_a * (1 - 1e-9)


def _ratio_band(w: dict[str, Any], r: dict[str, Any], key: str) -> bool | None:
    """Set ``r``'s ``ratio_to_winner`` (``key`` of ``r`` over the winner's) and, with a paired
    band, its ``_low/_high`` and ``ratio_band``; return whether the band includes 1, or None
    when no paired band is known (then the caller compares the two options' own bands)."""
    from ..catalog.catalog import load_catalog
    from ..catalog.profile import pair_band
    from ..errors import PlannerError

    a, b = r.get(key), w.get(key)
    ratio = a / b if a is not None and b and math.isfinite(a) and math.isfinite(b) else None
    r.update(ratio_to_winner=ratio, ratio_to_winner_low=None, ratio_to_winner_high=None,
             ratio_basis=key, ratio_band=None)  # fmt: skip
    if ratio is None:
        return None
    if r["gpu"] != w["gpu"]:
        kind = "gpu"
    elif r["framework"] != w["framework"]:
        kind = "engine"
    else:
        kind = "option"
    try:
        cat = load_catalog()
        band = pair_band(kind, (cat.gpu(w["gpu"]).vendor, cat.gpu(r["gpu"]).vendor))
    except PlannerError:
        band = None
    if band is None:
        return None
    # the true ratio is the predicted one x (s_winner / s_option), s = measured / predicted
    # speed; the paired band gives its p10 / p90 for options fitted as the held-out pairs
    # mostly were (the fit tier). An option whose own band is wider (its parameters borrowed
    # from a far relative) carries that extra error alone: it adds, in log space and in
    # quadrature, to the paired half-width
    extra = _own_extra(w) + _own_extra(r)
    centre = (math.log(band.ratio_p10) + math.log(band.ratio_p90)) / 2
    half = math.hypot(_half_log(band.ratio_p10, band.ratio_p90), math.sqrt(extra))
    lo, hi = ratio * math.exp(centre - half), ratio * math.exp(centre + half)
    r.update(ratio_to_winner_low=lo, ratio_to_winner_high=hi,
             ratio_band={"kind": kind, "p10": band.ratio_p10, "p90": band.ratio_p90,
                         "n_pairs": band.n_rows, "n_sources": band.n_sources,
                         "own_error_beyond_fit": round(math.sqrt(extra), 4)})  # fmt: skip
    return lo <= 1.0 <= hi


def _half_log(lo: float, hi: float) -> float:
    """Half the width of a band in log space."""
    return (math.log(hi) - math.log(lo)) / 2


def _own_extra(r: dict[str, Any]) -> float:
    """The square of what an option's own band (``error_band``) adds, in log half-width,
    over the fit tier's band (the bundled profile's), 0 when it adds nothing or either is
    unknown."""
    from ..catalog.profile import band_for_tier, load_profile

    eb = r.get("error_band") or {}
    prof = load_profile()
    ref = band_for_tier("fit", prof.error_bands) if prof is not None else None
    if not eb.get("low_ratio") or not eb.get("high_ratio") or ref is None or not ref.known:
        return 0.0
    own = _half_log(eb["low_ratio"], eb["high_ratio"])
    return max(0.0, own**2 - _half_log(ref.low_ratio, ref.high_ratio) ** 2)  # type: ignore[arg-type]


def decide(recs: list[dict[str, Any]], objective: str, search: Any = None) -> str:
    """Add ``break_even_usd_per_gpu_hour``, ``robustness`` (and on the winner
    ``winner_at_price_rows``) to ranked recommendations; return a sentence for the ``why``
    ("" when there is nothing to add). With the ``search`` that ranked them, also the buyer's
    own/rent/API fields and flags (:func:`planner.recommend.buyer.buyer`)."""
    if not recs:
        return ""
    extra = buyer(recs, objective, search) if search is not None else []
    w = recs[0]
    w_mtok = _ranked_usd(w)
    for r in recs:
        mtok, p = _ranked_usd(r), r.get("usd_per_gpu_hour")
        r["break_even_usd_per_gpu_hour"] = (
            p * w_mtok / mtok if mtok and p and w_mtok is not None else None
        )
    at_rows: dict[str, str | None] = {}
    for which in ("min", "median", "max"):
        vals = [(_repriced(r, which), i) for i, r in enumerate(recs)]
        vals = [(v, i) for v, i in vals if v is not None]
        at_rows[which] = _label(recs[min(vals)[1]]) if vals else None
    w["winner_at_price_rows"] = at_rows
    priced = objective in PRICED
    band_key = "num_gpus" if objective == "gpus" else "usd_per_mtok_output"
    sentences = []
    for r in recs[1:]:
        if objective in PRICED + ("gpus",):
            includes_one = _ratio_band(w, r, band_key)
            if includes_one is None:
                includes_one = _overlap(r, w, band_key)
            if includes_one:
                r["robustness"] = "within model uncertainty"
                continue
        r["robustness"] = "robust"
        if not priced or r["gpu"] == w["gpu"]:
            continue  # the same GPU's price moves both alike
        be, sp = r.get("break_even_usd_per_gpu_hour"), r.get("price_spread") or {}
        if be is not None and sp.get("min") is not None and sp["min"] < be:
            r["robustness"] = f"depends on price: {r['gpu']} wins below ${be:.2f}/GPU-h"
            continue
        mtok, w_sp, w_p = _ranked_usd(r), w.get("price_spread") or {}, w.get("usd_per_gpu_hour")
        if mtok and w_mtok and w_p and w_sp.get("max") is not None:
            w_be = w_p * mtok / w_mtok  # the winner's price at which it ties this option
            if w_sp["max"] > w_be:
                r["robustness"] = (
                    f"depends on price: {r['gpu']} wins if {w['gpu']} costs above ${w_be:.2f}/GPU-h"
                )
    if len(recs) > 1 and objective in PRICED + ("gpus",):
        name = "runner_up_gpus_ratio" if objective == "gpus" else "runner_up_cost_ratio"
        nxt = recs[1]
        w.update({name: nxt.get("ratio_to_winner"), f"{name}_low": nxt.get("ratio_to_winner_low"),
                  f"{name}_high": nxt.get("ratio_to_winner_high")})  # fmt: skip
    flips = [r for r in recs[1:] if r["robustness"].startswith("depends on price")]
    unsure = [r for r in recs[1:] if r["robustness"] == "within model uncertainty"]
    moved = {v for v in at_rows.values() if v is not None} - {_label(w)}
    if unsure:
        w["robustness"] = "within model uncertainty"
        sentences.append(
            f"the choice is within the model's uncertainty: the model cannot tell {len(unsure)} "
            "of the next options from the winner (their ratio to it has a band that includes 1: "
            + ", ".join(_label(r) for r in unsure[:3])
            + ")"
        )
    elif flips or (priced and moved):
        r = flips[0] if flips else None
        w["robustness"] = (
            r["robustness"]
            if r
            else (f"depends on price: {sorted(moved)[0]} wins at another price row")
        )
        sentences.append(
            f"the winner {w['robustness'].replace('depends on price: ', 'depends on price (')})"
        )
    else:
        w["robustness"] = "robust"
        if priced:
            sentences.append(
                "robust: the winner stays the winner at its GPUs' min, median and max price "
                "rows and within the performance error band"
            )
    edge = edge_sentence(recs)  # options ranked at their band's pessimistic edge
    return "; ".join(sentences + ([edge] if edge else []) + extra)
