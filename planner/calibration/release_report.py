"""The "by engine release" section of docs/accuracy.md (issue 31), written by ``planner
validate --output`` with :func:`planner.calibration.sections.put_section` so that the other
kept sections stay as they are."""

from __future__ import annotations

from typing import Any

from planner.calibration.accuracy import TARGET_GROUPS, _md_table, error_table, ordering_pairs
from planner.calibration.release_fit import (
    RELEASE_MIN_ROWS,
    TREND_MIN_GAIN_PCT,
    release_trend_check,
    release_widening,
    widening_table,
)
from planner.calibration.sections import RELEASE_SECTION


def release_targets(loso):
    """The throughput targets of the measured-truth issue, scored on the leave-one-source-out
    rows as the release level predicts them: group, rows, sources, MdAPE, target, met (a group
    counts only with at least 15 rows from 2 sources)."""
    import pandas as pd

    cols = ["target group", "n", "sources", "mdape_pct", "p90_ape_pct", "bias_pct", "target_pct",
            "met"]  # fmt: skip
    if loso is None or not len(loso):
        return pd.DataFrame(columns=cols)
    thr = loso[loso["metric_class"] == "throughput"]
    recs = []
    for label, col, values, target in TARGET_GROUPS:
        if label not in ("AMD GPUs", "vLLM and SGLang"):
            continue
        t = error_table(thr[thr[col].isin(values)].assign(g=label), ["g"], with_sources=True)
        if not len(t):
            continue
        r = t.iloc[0]
        enough = int(r["n"]) >= 15 and int(r["sources"]) >= 2
        recs.append({"target group": label, "n": int(r["n"]), "sources": int(r["sources"]),
                     "mdape_pct": r["mdape_pct"], "p90_ape_pct": r["p90_ape_pct"],
                     "bias_pct": r["bias_pct"], "target_pct": target,
                     "met": bool(enough and r["mdape_pct"] <= target)})  # fmt: skip
    return pd.DataFrame(recs, columns=cols)


def release_section(result: dict[str, Any]) -> str:
    """The section's Markdown, from its begin marker to its end marker and a newline."""
    loso = result.get("loso")
    begin, end = RELEASE_SECTION
    out = [begin, "## Leave-one-source-out by engine release (issue 31)", ""]
    if loso is None or not len(loso) or "release" not in loso:
        return "\n".join([*out, "_no rows_", end]) + "\n"
    thr = loso[loso["metric_class"] == "throughput"].copy()
    thr["release"] = thr["release"].fillna("").replace("", "(none named)")
    thr["predicted from"] = [
        "own release" if d == 0 and u else ("nearest release" if u else "all-release fit")
        for u, d in zip(thr["release_used"].fillna(""), thr["release_distance"], strict=True)
    ]
    wid = release_widening(loso)
    trend = release_trend_check(loso)
    out += [
        "Every held-out row whose `framework_version` names a release (`planner frameworks "
        "--releases`) is predicted with the release level of its fold "
        "(`planner.calibration.release_fit`): the node of its own release on its GPU (or the "
        "nearest sibling GPU of the architecture) where the other sources hold at least "
        f"{RELEASE_MIN_ROWS} fittable rows of it, else the node of the nearest release of the "
        "same engine on the same GPU family and precision; releases without a node on the "
        "family keep the fit over every release, and rows naming no release the fit over "
        "every release as of their date (without their engine's rows that name a release "
        "and are dated after them: `release_fit.AsOfFits`). Throughput rows only.",
        "",
        "### The targets, scored with the release level",
        "",
        _md_table(release_targets(loso)),
        "### How each row was predicted",
        "",
        _md_table(error_table(thr, ["predicted from"], with_sources=True)),
        "### By engine and release",
        "",
        _md_table(error_table(thr, ["framework", "release"], with_sources=True)),
        "### Error by release distance, and the band's widening",
        "",
        "Distance = how many releases of the engine with a fit lie between the row's release "
        "and the one that predicted it (0 = its own). The band of a prediction widens by "
        "exp(step x distance) on both sides (`planner.catalog.release_profile.widen_band`); the "
        "step is the median over held-out (source, release) groups predicted from another "
        "release of max(0, (their median |log error| - that of distance-0 rows) / distance).",
        "",
        _md_table(widening_table(loso)),
        (
            f"Widening step: x{wid.ratio_p90:.3f} per release ({wid.n_rows} rows, "
            f"{wid.n_sources} sources)."
            if wid is not None
            else "Widening step: not measurable (too few held-out releases)."
        ),
        "",
        "### A trend over releases, checked on held-out releases",
        "",
        "Trend: log(predicted / measured) = beta x signed release distance (+ when the release "
        "used is older than the row's), fitted leaving each (source, release) group out and "
        "applied to it, against the nearest release alone, over the rows predicted from "
        "another release.",
        "",
        (
            f"{trend['groups']} groups, {trend.get('rows', 0)} rows: nearest release MdAPE "
            f"{trend['nearest_mdape_pct']}%, with the trend {trend['trend_mdape_pct']}% "
            f"(beta {100 * trend.get('beta_per_release', 0):+.1f}% per release on every group; "
            f"{trend.get('improved_groups', 0)} of {trend['groups']} groups improved): "
            + (
                "the trend validates."
                if trend["validates"]
                else f"the trend does not validate (it must be at least {TREND_MIN_GAIN_PCT:g} point "
                "lower and improve most groups), so the planner does not use one."
            )
            if trend["groups"]
            else "Too few held-out releases to check a trend; the planner uses none."
        ),  # fmt: skip
        "",
    ]
    t = result.get("mlperf_ordering")
    if t is not None and len(t):
        pairs = ordering_pairs(t)
        rounds = sorted(set(t["round"]))
        wrong = sorted(set(pairs["round"])) if len(pairs) else []
        out += [
            "### MLPerf Llama-2-70B per-GPU ordering with the release level",
            "",
            f"Rounds {', '.join(rounds)}: "
            + (
                f"wrong order in {', '.join(wrong)} (table in the ordering section above)."
                if wrong
                else "every round in the measured order."
            ),  # fmt: skip
            "",
        ]
    return "\n".join([*out, end]) + "\n"
