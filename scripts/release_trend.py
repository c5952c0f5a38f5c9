"""Is there a trend of engine speed over release dates (issue 31, section 1)?

Two views, both printed as markdown tables (docs/changes/2026-12-07/reltrend.md):

A. **Node pairs (in-sample diagnosis).** Every pair of release nodes of the bundled profile on
   the same (engine, GPU, precision, family): the speed ratio newer / older, as the geometric
   mean over the rows of both nodes of ``speed(prediction with the newer node) /
   speed(prediction with the older node)`` (speed = the value for a throughput, 1 / value for
   a time), against the date gap. A release's date is its upload date on PyPI
   (``data/engine_release_dates.yaml``; a build PyPI does not list takes the date of the
   newest listed release before it). The rate per engine is the least-squares slope through
   the origin of log(ratio) on the gap in years, with its spread (the rates of single pairs).

B. **Held out by source.** From the cached leave-one-source-out predictions
   (``--loso``, default /work/keep/ep_after_s4.csv), the rows a fold predicted from another
   release's node (``release_distance > 0``): the error ``log(predicted / measured)`` against
   the signed date gap (row's release date - date of the release used; + when the node is
   older). A trend ``ratio = exp(rate x gap)`` multiplies a throughput prediction (divides a
   time) with the gap capped to the training range; the rate of each held-out source is
   fitted without that source, (i) from the node pairs of A whose nodes hold none of its rows
   and (ii) from the other sources' held-out errors. MdAPE of the borrowing rows before /
   after, by source and metric class.

    PYTHONPATH=$PWD python scripts/release_trend.py [--loso FILE] [--no-pairs]
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.calibration.bands import TIME_CLASSES, metric_class  # noqa: E402
from planner.calibration.fit import (  # noqa: E402
    FITTED_KINDS,
    prepare_rows,
    public_files_default,
)
from planner.catalog import load_catalog  # noqa: E402
from planner.catalog.profile import load_profile  # noqa: E402
from planner.catalog.release_profile import date_trend_ratio, release_distance  # noqa: E402
from planner.catalog.releases import release_date, release_dates  # noqa: E402

YEAR_DAYS = 365.25


def load_rows() -> pd.DataFrame:
    return pd.concat(
        pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default()
    )


class Dates(dict):
    """(engine, release) -> release date (:func:`planner.catalog.releases.release_date`: the
    upload date on the package index, data/engine_release_dates.yaml), None when unknown."""

    def __missing__(self, key):
        self[key] = release_date(*key, _TABLE)
        return self[key]


_TABLE = release_dates()


# --------------------------------------------------------------------------- A: node pairs
def _speed(r, params) -> float | None:
    fn = r.fit_predictor(set(FITTED_KINDS))
    if fn is None:
        return None
    cls = metric_class(r.metric)
    if fn is r.steady and cls != "throughput":
        return None
    try:
        v = float(fn(params))
    except Exception:  # noqa: BLE001 - a row a node cannot predict counts in no pair
        return None
    if not (v > 0 and math.isfinite(v)):
        return None
    return 1.0 / v if cls in TIME_CLASSES else v


def node_pairs(df: pd.DataFrame, dates) -> pd.DataFrame:
    cat = load_catalog()
    prof = load_profile()
    prepared = prepare_rows(df, cat)
    by_key: dict[tuple, list] = {}
    for r in prepared:
        if r.release and not r.expert_parallel:
            by_key.setdefault((r.framework, r.gpu, r.precision, r.release), []).append(r)
    nodes = [n for n in prof.release_nodes if dates[(n.framework, n.release)]]
    recs = []
    groups = itertools.groupby(
        sorted(nodes, key=lambda n: (n.framework, n.gpu, n.precision, n.family)),
        key=lambda n: (n.framework, n.gpu, n.precision, n.family),
    )
    for (fw, gpu, prec, fam), grp in groups:
        grp = sorted(grp, key=lambda n: dates[(fw, n.release)])
        for old, new in itertools.combinations(grp, 2):
            rows = [
                r
                for n in (old, new)
                for r in by_key.get((fw, gpu, prec, n.release), [])
                if not fam or r.family == fam
            ]
            logs = []
            for r in rows:
                a, b = _speed(r, old.params), _speed(r, new.params)
                if a and b:
                    logs.append(math.log(b / a))
            if not logs:
                continue
            gap = (dates[(fw, new.release)] - dates[(fw, old.release)]).days / YEAR_DAYS
            recs.append({
                "engine": fw, "gpu": gpu, "precision": prec, "family": fam or "all",
                "older": old.release, "newer": new.release, "gap_years": round(gap, 2),
                "distance": release_distance(prof, fw, old.release, new.release),
                "n_rows": len(logs), "ratio": round(math.exp(float(np.mean(logs))), 3),
                "sources": sorted(set(old.sources) | set(new.sources)),
            })  # fmt: skip
    return pd.DataFrame(recs)


def pair_rate(pairs: pd.DataFrame) -> float:
    """Least-squares slope of log(ratio) on the gap through the origin [1/year]."""
    p = pairs[pairs["gap_years"] > 0]
    if not len(p):
        return 0.0
    x, y = p["gap_years"].to_numpy(float), np.log(p["ratio"].to_numpy(float))
    return float(x @ y / (x @ x))


def rate_table(pairs: pd.DataFrame) -> pd.DataFrame:
    recs = []
    for fw, p in pairs.groupby("engine"):
        p = p[p["gap_years"] > 0.05]  # same-day releases say nothing of a rate
        if not len(p):
            continue
        single = np.log(p["ratio"].to_numpy(float)) / p["gap_years"].to_numpy(float)
        recs.append({
            "engine": fw, "pairs": len(p), "gpus": p["gpu"].nunique(),
            "rate_per_year": round(pair_rate(p), 3),
            "single_p10": round(float(np.percentile(single, 10)), 3),
            "single_median": round(float(np.median(single)), 3),
            "single_p90": round(float(np.percentile(single, 90)), 3),
            "faster_newer": f"{int((p['ratio'] > 1).sum())}/{len(p)}",
        })  # fmt: skip
    return pd.DataFrame(recs)


# --------------------------------------------------------------------------- B: held out
def borrowed(loso: pd.DataFrame, dates) -> pd.DataFrame:
    d = loso[(loso["release_used"] != "") & (loso["release_distance"].astype(float) > 0)].copy()
    gaps = []
    for fw, rel, used in d[["framework", "release", "release_used"]].itertuples(index=False):
        a, b = dates[(fw, rel)], dates[(fw, used)]
        gaps.append((a - b).days / YEAR_DAYS if a and b else math.nan)
    d["gap_years"] = gaps
    d["e"] = np.log(d["predicted"].astype(float) / d["measured"].astype(float))
    # speed error: + when the prediction is too fast
    d["se"] = np.where(d["metric_class"].isin(TIME_CLASSES), -d["e"], d["e"])
    return d[np.isfinite(d["gap_years"])]


def residual_rate(d: pd.DataFrame) -> float:
    """The rate that best removes the speed errors of borrowing rows (throughput only):
    se + rate x gap ~ 0 (least squares through the origin)."""
    t = d[d["metric_class"] == "throughput"]
    x, y = t["gap_years"].to_numpy(float), t["se"].to_numpy(float)
    return float(-(x @ y) / (x @ x)) if x @ x > 0 else 0.0


def node_sources() -> dict[tuple[str, str, str], set[str]]:
    """(engine, release, precision) -> sources of the bundled release nodes (any GPU)."""
    out: dict[tuple[str, str, str], set[str]] = {}
    prof = load_profile()
    for n in prof.release_nodes if prof is not None else ():
        out.setdefault((n.framework, n.release, n.precision or ""), set()).update(n.sources)
    return out


def heldout(d: pd.DataFrame, pairs: pd.DataFrame | None):
    """(per-source table, rows with the corrected errors ``e_residual`` / ``e_clean`` /
    ``e_pairs``). ``residual``: the rate from every other source's borrowing rows;
    ``clean``: only from those whose node (engine, release used, precision) holds none of the
    held-out source's rows (a source B borrowing source A's release node measures A against
    B: that rate would carry A's own rows into A's check)."""
    srcs = node_sources()
    recs, parts = [], []
    for src, te in d.groupby("source"):
        tr = d[d["source"] != src]
        keys = zip(tr["framework"], tr["release_used"], tr["precision"], strict=True)
        clean = tr[[src not in srcs.get(k, set()) for k in keys]]
        cap = float(np.abs(tr["gap_years"]).max()) if len(tr) else 0.0
        rates: dict[str, dict[str, float]] = {"residual": {}, "clean": {}, "pairs": {}}
        for fw in te["framework"].unique():
            rates["residual"][fw] = residual_rate(tr[tr["framework"] == fw])
            rates["clean"][fw] = residual_rate(clean[clean["framework"] == fw])
            if pairs is not None and len(pairs):
                p = pairs[
                    (pairs["engine"] == fw) & pairs["sources"].map(lambda s, x=src: x not in s)
                ]
                rates["pairs"][fw] = pair_rate(p)
        te = te.copy()
        for how, rate in rates.items():
            if not rate:
                continue
            ratio = np.array([
                date_trend_ratio(rate.get(fw, 0.0), gap, cap)
                for fw, gap in zip(te["framework"], te["gap_years"], strict=True)
            ])  # fmt: skip
            lr = np.where(te["metric_class"].isin(TIME_CLASSES), -np.log(ratio), np.log(ratio))
            te[f"e_{how}"] = te["e"] + lr
            te[f"rate_{how}"] = ";".join(f"{k}:{v:+.2f}" for k, v in sorted(rate.items()))
        parts.append(te)
        for cls, g in te.groupby("metric_class"):
            rec = {"source": src[:40], "class": cls, "n": len(g),
                   "gap_years": f"{g['gap_years'].min():+.2f}..{g['gap_years'].max():+.2f}",
                   "before_pct": _mdape(g["e"])}  # fmt: skip
            for how in rates:
                if f"e_{how}" in g:
                    rec[f"rate_{how}"] = g[f"rate_{how}"].iloc[0]
                    rec[f"after_{how}_pct"] = _mdape(g[f"e_{how}"])
            recs.append(rec)
    return pd.DataFrame(recs), pd.concat(parts)


def md(df: pd.DataFrame) -> str:
    """A markdown table (no tabulate dependency)."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


def _mdape(e) -> float:
    return round(100 * float(np.median(np.expm1(np.abs(np.asarray(e, float))))), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loso", default="/work/keep/ep_after_s4.csv")
    ap.add_argument("--no-pairs", action="store_true", help="skip A (it predicts every row)")
    args = ap.parse_args()
    df = load_rows()
    dates = Dates()
    pd.set_option("display.width", 250)
    pairs = None
    if not args.no_pairs:
        pairs = node_pairs(df, dates)
        print("## A. Release-node pairs (bundled profile; in-sample)\n")
        print(md(pairs.drop(columns="sources")))
        print("\nRate per engine [log ratio per year] (pairs at least 0.05 years apart):\n")
        print(md(rate_table(pairs)))
    loso = pd.read_csv(args.loso, dtype={"release": str, "release_used": str},
                       keep_default_na=False)  # fmt: skip
    d = borrowed(loso, dates)
    print("\n## B. Rows predicted from another release's node, held out by source\n")
    summ = (
        d.groupby(["source", "framework", "gpu", "release", "release_used", "metric_class"])
        .agg(n=("id", "size"), gap_years=("gap_years", "first"), med_log_err=("e", "median"))
        .round(3)
        .reset_index()
    )
    summ["source"] = summ["source"].str[:40]
    print(md(summ))
    t = d[d["metric_class"] == "throughput"]
    if len(t) > 2:
        c = float(np.corrcoef(t["gap_years"], t["se"])[0, 1])
        print(f"\nthroughput rows: {len(t)}, corr(gap, speed error) = {c:+.2f}, "
              f"pooled residual rate {residual_rate(d):+.3f}/year (in-sample)")  # fmt: skip
    print("\n### Trend applied, rate fitted without the held-out source\n")
    h, rows = heldout(d, pairs)
    print(md(h))
    print("\nAll borrowing rows, MdAPE [%] before / after (rate fitted without each source):\n")
    recs = []
    for cls, g in rows.groupby("metric_class"):
        rec = {"class": cls, "n": len(g), "before": _mdape(g["e"])}
        for how in ("residual", "clean", "pairs"):
            if f"e_{how}" in g:
                rec[how] = _mdape(g[f"e_{how}"].fillna(g["e"]))
                rec[f"{how}_better_groups"] = _better(g, f"e_{how}")
        recs.append(rec)
    print(md(pd.DataFrame(recs)))


def _better(g: pd.DataFrame, col: str) -> str:
    keys = ["source", "framework", "gpu", "release"]
    n = better = 0
    for _, x in g.groupby(keys):
        n += 1
        better += int(np.median(np.abs(x[col].fillna(x["e"]))) < np.median(np.abs(x["e"])))
    return f"{better}/{n}"


if __name__ == "__main__":
    main()
