"""Error bands of predictions, from leave-one-source-out residuals (``planner calibrate``).

A prediction's band depends on how its parameters were obtained — its provenance tier
(:data:`planner.catalog.profile.TIERS`: fit, same GPU, same vendor + framework, same
vendor, same framework, global, prior). For each tier, the band is the p10 and p90 of the
SPEED ratio measured / predicted over the rows of that tier predicted out of sample
(leave-one-source-out, :func:`planner.calibration.accuracy.run_validation`). Speed means
throughput: for a time metric (TTFT, TPOT, step time) the speed ratio is predicted /
measured, because a time measured x r longer is a speed r times slower.

The held-out errors also differ by vendor and framework far more than by tier (AMD, vLLM and
SGLang rows miss more often than NVIDIA TensorRT-LLM rows of the same tier), so the same
quantiles are taken per group of :data:`planner.catalog.profile.GROUP_LEVELS` (vendor x
framework, framework, vendor), and a prediction's band spans its tier's band and its nearest
group's (:func:`planner.catalog.profile.band_for`).

The bands are fitted on THROUGHPUT rows (offline, static, serving and assumed-layout
throughput, the numbers that size fleets and price tokens); :func:`band_coverage` checks
them honestly: each source's rows are tested against bands fitted without that source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from planner.catalog.profile import (
    TIERS,
    ErrorBand,
    band_for,
    group_keys,
    provenance_tier,
)
from planner.errors import PlannerError

THROUGHPUT = ("output_tok_s_total", "output_tok_s_per_gpu", "total_tok_s", "req_s")
TPOT = ("tpot_ms_mean", "tpot_ms_median", "tpot_ms_p99", "itl_ms_mean", "itl_ms_median")
TTFT = ("ttft_ms_mean", "ttft_ms_median", "ttft_ms_p99")


def metric_class(metric: str) -> str:
    if metric in THROUGHPUT or metric.startswith("decode_tok_s") or metric == "prefill_tok_s":
        return "throughput"
    if metric in TPOT:
        return "tpot/itl"
    if metric in TTFT:
        return "ttft"
    if metric.startswith("e2e"):
        return "e2e"
    return metric


#: metric classes (:func:`metric_class`) whose value is a time
TIME_CLASSES = ("tpot/itl", "ttft", "e2e", "prefill_s", "decode_step_s")
#: metric classes the bands are fitted on
BAND_CLASSES = ("throughput",)
#: quantiles of the band
BAND_QUANTILES = (0.1, 0.9)


def speed_ratio(metric_class: str, measured: float, predicted: float) -> float:
    """measured / predicted speed: ``measured / predicted`` for a throughput,
    ``predicted / measured`` for a time (a time measured twice as long = half the speed)."""
    if not (measured > 0 and predicted > 0):
        raise PlannerError(f"ratio needs positive values, got {measured!r}, {predicted!r}")
    if metric_class in TIME_CLASSES:
        return predicted / measured
    return measured / predicted


def _with_ratio(loso):
    df = loso.copy()
    df["tier"] = [provenance_tier(p) for p in df["provenance"]]
    df["speed_ratio"] = [
        speed_ratio(c, m, p)
        for c, m, p in zip(df["metric_class"], df["measured"], df["predicted"], strict=True)
    ]
    return df


def fit_error_bands(
    loso, classes: Sequence[str] = BAND_CLASSES, quantiles: tuple[float, float] = BAND_QUANTILES
) -> dict[str, ErrorBand]:
    """Tier -> :class:`ErrorBand` from out-of-sample records (columns provenance,
    metric_class, measured, predicted, source, and vendor / framework when known), using the
    rows of ``classes``; plus one band per vendor / framework group
    (:func:`planner.catalog.profile.group_keys`), keyed ``<level>:<value>``."""
    if loso is None or not len(loso):
        return {}
    df = _with_ratio(loso)
    df = df[df["metric_class"].isin(list(classes))]
    out: dict[str, ErrorBand] = {}

    def add(key, g):
        if not len(g):
            return
        lo, hi = np.quantile(g["speed_ratio"].to_numpy(), quantiles)
        out[key] = ErrorBand(
            ratio_p10=round(float(lo), 4),
            ratio_p90=round(float(hi), 4),
            n_rows=len(g),
            n_sources=int(g["source"].nunique()),
        )

    for tier in TIERS:
        add(tier, df[df["tier"] == tier])
    if {"vendor", "framework"} <= set(df.columns):
        groups: dict[str, list[int]] = {}
        for i, (v, f) in enumerate(zip(df["vendor"], df["framework"], strict=True)):
            known_v = v if isinstance(v, str) and v not in ("", "?") else None
            known_f = f if isinstance(f, str) and f else None
            for key in group_keys(known_v, known_f):
                groups.setdefault(key, []).append(i)
        for key in sorted(groups):
            add(key, df.iloc[groups[key]])
    return out


def band_coverage(loso, classes: Sequence[str] = BAND_CLASSES):
    """Held-out coverage of the bands: for each source, bands fitted WITHOUT that source's
    rows (:func:`fit_error_bands` on the others) are applied to its rows (with the tier
    fallback and the group widening of :func:`planner.catalog.profile.band_for`).

    Returns the records with columns ``tier``, ``speed_ratio``, ``band_tier``,
    ``band_group``, ``band_low``, ``band_high`` and ``inside`` (bool) added; rows of
    ``classes`` only.
    """
    import pandas as pd

    if loso is None or not len(loso):
        return pd.DataFrame()
    df = _with_ratio(loso)
    df = df[df["metric_class"].isin(list(classes))].copy()
    pieces = []
    for src, g in df.groupby("source", sort=True):
        bands = fit_error_bands(loso[loso["source"] != src], classes)
        got: list[dict[str, Any]] = []
        vendors = g["vendor"] if "vendor" in g else [None] * len(g)
        fws = g["framework"] if "framework" in g else [None] * len(g)
        for tier, r, v, f in zip(g["tier"], g["speed_ratio"], vendors, fws, strict=True):
            v = v if isinstance(v, str) and v not in ("", "?") else None
            f = f if isinstance(f, str) and f else None
            b = band_for(tier, bands, v, f)
            inside = b.known and b.low_ratio <= r <= b.high_ratio  # type: ignore[operator]
            got.append(
                {"band_tier": b.tier, "band_group": b.group, "band_low": b.low_ratio,
                 "band_high": b.high_ratio, "inside": bool(inside), "band_known": b.known}
            )  # fmt: skip
        pieces.append(pd.concat([g.reset_index(drop=True), pd.DataFrame(got)], axis=1))
    return pd.concat(pieces, ignore_index=True) if pieces else pd.DataFrame()


def coverage_table(cov, by: Sequence[str]):
    """Share of held-out rows inside their band per group [%], with row and source counts."""
    import pandas as pd

    if cov is None or not len(cov):
        return pd.DataFrame(columns=[*by, "n", "sources", "inside_pct"])
    g = cov[cov["band_known"]].groupby(list(by), dropna=False)
    out = g.agg(
        n=("inside", "size"),
        sources=("source", "nunique"),
        inside_pct=("inside", lambda s: 100 * float(np.mean(s))),
    ).reset_index()
    return out.round({"inside_pct": 1})


# =========================================================================== paired bands
#: columns that make two held-out rows the same experiment on two options (one source, one
#: model, one workload, one metric)
PAIR_SETUP = ("source", "model", "metric", "mode", "isl", "osl", "batch", "concurrency",
              "request_rate", "context_len")  # fmt: skip


def pair_kind(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """``gpu`` (the two options run on different GPUs), ``engine`` (same GPU, different
    framework), ``option`` (same GPU and framework, other precision or layout) or None (the
    same option); ``a`` and ``b`` need gpu, framework, precision and tp."""
    if a["gpu"] != b["gpu"]:
        return "gpu"
    if a["framework"] != b["framework"]:
        return "engine"
    if (a["precision"], a.get("tp")) != (b["precision"], b.get("tp")):
        return "option"
    return None


def fit_pair_bands(
    loso, measurements, classes: Sequence[str] = BAND_CLASSES
) -> dict[str, ErrorBand]:
    """Bands of the RATIO between two options, from paired held-out residuals.

    Two out-of-sample rows (``loso``: id, source, gpu, framework, precision, metric_class,
    measured, predicted) pair when ``measurements`` (the benchmark rows, by id) says they are
    the same experiment (:data:`PAIR_SETUP`) on two options (:func:`pair_kind`). The error
    a source, an engine version or a workload puts on both cancels in their ratio: the true
    ratio of A's to B's speed is the predicted ratio x ``s_A / s_B`` (``s`` = measured /
    predicted speed). Each unordered pair counts once in each order, so the band is
    symmetric (p10 = 1 / p90). Keys ``pair:gpu``, ``pair:engine``, ``pair:option`` over
    every pair, and ``pair:<kind>:<vendor>`` over pairs of two GPUs of one vendor
    (``pair:<kind>:mixed`` across vendors: AMD rows miss by more and otherwise than NVIDIA's,
    so a cross-vendor ratio keeps more error) (:func:`planner.catalog.profile.pair_band`
    reads them)."""
    if loso is None or not len(loso) or measurements is None or not len(measurements):
        return {}
    df = _with_ratio(loso)
    df = df[df["metric_class"].isin(list(classes))]
    setup = measurements.drop_duplicates("id").set_index(measurements["id"].astype(str))
    cols = [c for c in PAIR_SETUP if c != "source" and c in setup.columns]
    df = df[df["id"].astype(str).isin(setup.index)].copy()
    for c in [*cols, "tp"]:
        if c in setup.columns:
            df[f"_{c}"] = setup.loc[df["id"].astype(str), c].astype(str).to_numpy()
    keys = ["source", *(f"_{c}" for c in cols)]
    logs: dict[str, list[float]] = {}
    srcs: dict[str, set[str]] = {}
    for _, g in df.groupby(keys, sort=False, dropna=False):
        if len(g) < 2:
            continue
        recs = g.assign(tp=g.get("_tp", "")).to_dict("records")
        for i in range(len(recs)):
            for j in range(i + 1, len(recs)):
                kind = pair_kind(recs[i], recs[j])
                if kind is None:
                    continue
                d = float(np.log(recs[i]["speed_ratio"] / recs[j]["speed_ratio"]))
                vs = [recs[k].get("vendor") for k in (i, j)]
                known = all(isinstance(v, str) and v not in ("", "?") for v in vs)
                both = (vs[0] if vs[0] == vs[1] else "mixed") if known else None
                for key in (kind, f"{kind}:{both}") if both else (kind,):
                    logs.setdefault(key, []).extend((d, -d))
                    srcs.setdefault(key, set()).add(str(recs[i]["source"]))
    out: dict[str, ErrorBand] = {}
    for kind, v in sorted(logs.items()):
        lo, hi = np.exp(np.quantile(np.asarray(v), BAND_QUANTILES))
        out[f"pair:{kind}"] = ErrorBand(ratio_p10=round(float(lo), 4), ratio_p90=round(float(hi), 4),
                                        n_rows=len(v) // 2, n_sources=len(srcs[kind]))  # fmt: skip
    return out
