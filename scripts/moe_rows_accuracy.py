"""What the planner makes of the MLPerf / blog MoE rows (public_mlperf_moe.csv, public_blogs_moe.csv).

Three tables:

1. rows by source and layout kind (TP, TP+EP, DEP / DP-attention, disaggregated, speculative)
   and metric class, with how many the planner predicts;
2. leave-one-source-out errors of the predicted rows (``scripts/ep_accuracy.py``'s
   ``evaluate``: each source refitted without its own rows), by layout kind;
3. speculative decoding: the measured speed-up of each MTP row over its baseline without MTP
   (``planner.benchmarks.speculative_rows.spec_pairs``, also over the InferenceX file for the
   pairs at concurrency >= 32) and the predicted one (``predicted_ratio``), with the
   acceptance length the source prints, with the DeepSeek-V3 report's prior (K = 1: AL 1.875,
   i.e. a per-position rate of 0.875 in a chain of K drafts) and with the catalog's published
   AL for that K (``data/speculative.yaml`` via ``spec_decode``);
4. issue 30's rows: every aggregated speculative row (also the InferenceX history file's)
   predicted with the catalog's AL for the row's prompts (``predict_spec_row``,
   ``row_workload``) and every disaggregated row (``disagg_rows.disagg_accuracy``), by
   source and metric. These rows are never fitted; their GPU x engine x precision parameters
   come from the bundled profile (which the rows' non-speculative twins of the same source
   helped fit), so this table is not held out by source (``scripts/issue30_holdout.py``
   predicts the same rows with profiles fitted without each row's source).

Usage (from the repository root; a few minutes on two cores)::

    python scripts/moe_rows_accuracy.py
    python scripts/moe_rows_accuracy.py --spec   # only table 3 and its summary
    python scripts/moe_rows_accuracy.py --issue30   # only table 4's summary
    python scripts/moe_rows_accuracy.py --issue30 --disagg-history   # + the history file's
        # disaggregated rows (every metric; a second record of InferenceX's runs); --csv PATH
        # writes table 4's rows
    python scripts/moe_rows_accuracy.py --history   # InferenceX history's MTP rows, by metric
    python scripts/moe_rows_accuracy.py --verify   # the pairs' verify step, term by term
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from ep_accuracy import evaluate, kind_table  # noqa: E402

from planner.benchmarks.disagg_rows import disagg_accuracy, is_disagg_row  # noqa: E402
from planner.benchmarks.io import read_rows  # noqa: E402
from planner.benchmarks.predict import Predictor  # noqa: E402
from planner.benchmarks.schema import TIME_UNITS_S, cell, row_params  # noqa: E402
from planner.benchmarks.schema import layout as row_layout  # noqa: E402
from planner.benchmarks.serving_rows import predict_serving_row  # noqa: E402
from planner.benchmarks.speculative_rows import (  # noqa: E402
    chain_acceptance_length,
    predict_spec_row,
    predicted_ratio,
    row_workload,
    spec_of_row,
    spec_pairs,
)
from planner.calibration.accuracy import _md_table  # noqa: E402
from planner.catalog.catalog import load_catalog  # noqa: E402
from planner.catalog.profile import model_family  # noqa: E402
from planner.catalog.speculative import spec_decode  # noqa: E402
from planner.errors import PlannerError  # noqa: E402
from planner.serving.replica import build_replica  # noqa: E402

FILES = [
    ROOT / "data/benchmarks/public_mlperf_moe.csv",
    ROOT / "data/benchmarks/public_blogs_moe.csv",
]
#: InferenceX: its MTP / no-MTP pairs at high concurrency and its disaggregated rows
INFERENCEX = ROOT / "data/benchmarks/public_inferencex.csv"
#: InferenceX dashboard history: aggregated MTP rows with TPOT / TTFT / E2E medians
INFERENCEX_HISTORY = ROOT / "data/benchmarks/public_inferencex_history.csv"
#: the new sources with rows the planner predicts (held out one at a time)
PREDICTED_SOURCES = (
    "TensorRT-LLM DeepSeek-R1 best-performance guide",
    "TensorRT-LLM tech blog 1: DeepSeek-R1 min-latency on B200",
    "MLPerf Inference v5.1 DeepSeek-R1",
    "MLPerf Inference v6.0 DeepSeek-R1",
)
#: DeepSeek-V3 report: 2nd-token acceptance 85-90 % (data/speculative.yaml): K = 1, AL 1.875
PRIOR_RATE = 0.875


def kind(row) -> str:
    notes = cell(row, "notes")
    if "disaggregated prefill/decode" in notes:
        return "disaggregated" + (" + MTP" if "speculative decoding" in notes else "")
    if "speculative decoding" in notes:
        return "speculative (MTP)"
    dp = int(cell(row, "attention_dp") or 1)
    ep = int(cell(row, "ep") or 1)
    return "DEP / DP-attention" if dp > 1 else ("TP+EP" if ep > 1 else "TP")


def metric_class(metric: str) -> str:
    if metric.startswith(("tpot", "itl")):
        return "TPOT"
    if metric.startswith("ttft"):
        return "TTFT"
    return "E2E" if metric.startswith("e2e") else "throughput"


def counts() -> pd.DataFrame:
    cat = load_catalog()
    pred = Predictor(catalog=cat)
    recs = []
    for f in FILES:
        rows = read_rows(f)[0]
        for r, p in zip(rows, pred.predict_rows(rows), strict=True):
            v = p.get("predicted")
            recs.append(
                {
                    "source": cell(r, "source"),
                    "layout kind": kind(r),
                    "metric": metric_class(cell(r, "metric")),
                    "predicted": isinstance(v, (int, float)) and v == v,
                }
            )
    d = pd.DataFrame(recs)
    return (
        d.groupby(["source", "layout kind", "metric"])
        .agg(rows=("predicted", "size"), predicted=("predicted", "sum"))
        .reset_index()
    )


def _params(cat, row, profile=None):
    """The row's efficiency parameters from ``profile`` (None: the bundled profile)."""
    m = cat.model_ref(cell(row, "model"), None)
    params, _ = row_params(
        row, cat, cat.gpu(cell(row, "hardware")).id, cat.precision(cell(row, "precision")).id,
        model_family(m), profile,
    )  # fmt: skip
    return params


def catalog_al(cat, row, method: str, k: int | None, workload: str | None = None) -> float | None:
    """The published acceptance length of the row's model x method x K (None: none), for
    ``workload`` (the prompts' kind, ``row_workload``) where given."""
    if k is None:
        return None
    try:
        s = spec_decode(cat.model_ref(cell(row, "model"), None), method, k, workload=workload)
    except PlannerError:
        return None
    return s.acceptance_length if s is not None else None


def _pct(pred, meas):
    return round(100 * (pred / meas - 1), 1) if pred else None


def as_speedup(ratio: float | None, row) -> float | None:
    """A pair's value ratio (MTP / baseline) as a speed-up (> 1: MTP faster): inverted for a
    row whose metric is a time (unit ``ms`` / ``s``: an E2E or TPOT latency), as is for a
    rate (tok/s). Item 2 of issue 30 compares speed-ups, so a latency pair's error is taken
    on ``baseline / MTP``."""
    if ratio is None or not ratio:
        return ratio
    return 1.0 / ratio if cell(row, "unit") in TIME_UNITS_S else ratio


def spec_table() -> pd.DataFrame:
    """Every MTP / no-MTP pair of ``FILES`` and InferenceX: the measured and predicted speed-up
    (:func:`as_speedup`) with each acceptance-length basis."""
    cat = load_catalog()
    rows = [r for f in [*FILES, INFERENCEX] for r in read_rows(f)[0]]
    recs = []
    for p in spec_pairs(rows):
        if p.spec_tokens is None:
            continue
        b = p.base_rows[0]
        params = _params(cat, b)
        al_src = re.search(r"Acceptance Rate ([\d.]+)", cell(p.spec_row, "notes"))
        al_prior = chain_acceptance_length(PRIOR_RATE, p.spec_tokens)
        al_cat = catalog_al(cat, b, p.method, p.spec_tokens)
        wl = row_workload(p.spec_row)
        al_wl = catalog_al(cat, b, p.method, p.spec_tokens, wl)

        def sp(r, row=p.spec_row):
            return as_speedup(r, row)

        r_wl = sp(predicted_ratio(p, al_wl, cat, params)[0]) if al_wl else None
        r_src = sp(predicted_ratio(p, float(al_src.group(1)), cat, params)[0]) if al_src else None
        r_prior, why = predicted_ratio(p, al_prior, cat, params)
        r_prior = sp(r_prior)
        r_cat = sp(predicted_ratio(p, al_cat, cat, params)[0]) if al_cat else None
        measured = sp(p.measured_ratio)
        recs.append(
            {
                "id": cell(p.spec_row, "id"),
                "gpu": cell(p.spec_row, "hardware"),
                "concurrency": p.concurrency,
                "K": p.spec_tokens,
                "metric": cell(p.spec_row, "metric"),
                "measured ratio": round(measured, 3),
                "AL (source)": float(al_src.group(1)) if al_src else None,
                "predicted (source AL)": round(r_src, 3) if r_src else None,
                "error (source AL) %": round(100 * (r_src / measured - 1), 1) if r_src else None,
                "AL (prior)": round(al_prior, 2),
                "predicted (prior AL)": round(r_prior, 3) if r_prior else why,
                "error (prior AL) %": round(100 * (r_prior / measured - 1), 1) if r_prior else None,
                "AL (catalog)": round(al_cat, 4) if al_cat else None,
                "predicted (catalog AL)": round(r_cat, 3) if r_cat else None,
                "error (catalog AL) %": _pct(r_cat, measured),
                "workload": wl,
                "AL (workload prior)": round(al_wl, 4) if al_wl else None,
                "predicted (workload AL)": round(r_wl, 3) if r_wl else None,
                "error (workload AL) %": _pct(r_wl, measured),
            }
        )
    return pd.DataFrame(recs)


def _nominal(row) -> tuple[float, float, float] | None:
    """(input, output, range ratio) of an InferenceX row's random dataset, None elsewhere."""
    m = re.search(r"nominal input (\d+) / output (\d+) tokens, range ratio ([\d.]+)",
                  cell(row, "notes") or "")  # fmt: skip
    return (float(m.group(1)), float(m.group(2)), float(m.group(3))) if m else None


def verify_table() -> pd.DataFrame:
    """The verify step of every MTP / no-MTP pair at concurrency >= 16, term by term.

    Each pair's replica (bundled profile, the row's layout) steps ``B = concurrency`` decoding
    sequences at the run's mean decode context, ``(1 + r) / 2 x (I + O / 2)`` for InferenceX's
    nominal input I / output O at range ratio r, once plain and once as a verify step (K + 1
    positions per sequence + the draft passes). ``implied`` is what the measured speed-up
    says a verify step costs in plain steps, ``AL / measured ratio`` (the row's workload AL;
    prefill, scheduler and KV-lag terms taken equal in both runs), ``modelled`` the step
    model's ``t_verify / t_plain``; ``gap`` their difference in ms and per extra verify token
    (``K x B``) in microseconds; ``baseline error`` and ``MTP row error`` are each row's own
    prediction (simulated, bundled profile) against its measured value, which says on which
    side of the ratio an error sits."""
    cat = load_catalog()
    rows = [r for f in [*FILES, INFERENCEX] for r in read_rows(f)[0]]
    recs = []
    for p in spec_pairs(rows):
        conc = p.concurrency or 1
        nom = _nominal(p.spec_row)
        if p.spec_tokens is None or conc < 16 or nom is None:
            continue
        b = p.base_rows[0]
        params = _params(cat, b)
        k = p.spec_tokens
        al = catalog_al(cat, b, p.method, k, row_workload(p.spec_row))
        lay = row_layout(b)
        fw = cell(b, "framework")
        ctx = (1 + nom[2]) / 2 * (nom[0] + nom[1] / 2)
        steps = {}
        for on in (False, True):
            kw = dict(spec_method=p.method, spec_tokens=k, acceptance_length=al) if on else {}
            rep = build_replica(cell(b, "model"), cell(b, "hardware"), cell(b, "precision"), fw,
                                layout=lay.layout, params=params, catalog=cat, **kw)  # fmt: skip
            n = conc  # the replica's decoding sequences (step() splits them over DP ranks)
            steps[on] = rep.sm.step(n, n, n, n * ctx, n * ctx)
        t0, t1 = float(steps[False].time_s), float(steps[True].time_s)
        implied = al / p.measured_ratio
        gap_s = (implied - t1 / t0) * t0
        rec = {"id": cell(p.spec_row, "id"), "gpu": cell(b, "hardware"), "engine": fw,
               "ISL/OSL": f"{nom[0]:.0f}/{nom[1]:.0f}", "B": conc, "K": k, "AL": round(al, 3),
               "measured ratio": round(p.measured_ratio, 3), "plain ms": round(1e3 * t0, 2)}  # fmt: skip
        for term in ("t_gemm_s", "t_attn_s", "t_comm_s", "t_overhead_s", "t_draft_s"):
            rec[f"{term[2:-2]} ms plain -> verify"] = (
                f"{1e3 * float(getattr(steps[False], term)):.2f} -> "
                f"{1e3 * float(getattr(steps[True], term)):.2f}"
            )
        base_v = predict_serving_row(b, cat, params)[0]
        spec_v = predict_spec_row(p.spec_row, al, cat, params)[0]
        rec["baseline error %"] = _pct(base_v, float(cell(b, "value")))
        rec["MTP row error %"] = _pct(spec_v, float(cell(p.spec_row, "value")))
        rec.update({"verify ms": round(1e3 * t1, 2), "modelled verify/plain": round(t1 / t0, 3),
                    "implied verify/plain": round(implied, 3), "gap ms": round(1e3 * gap_s, 1),
                    "gap us / extra token": round(1e6 * gap_s / (k * conc), 1)})  # fmt: skip
        recs.append(rec)
    return pd.DataFrame(recs)


def issue30_rows(disagg_history: bool = False, profile_for=None) -> pd.DataFrame:
    """Every speculative (aggregated) and disaggregated row: measured, predicted, error
    (the InferenceX history file's aggregated speculative rows too; its disaggregated rows
    only with ``disagg_history``: they record the same InferenceX runs as
    ``public_inferencex.csv`` with more metrics). A disaggregated MTP row whose K is not known
    (no ``scripts/annotate_spec_recipes.py`` note) is predicted without MTP and grouped as
    ``+ MTP (not modelled: K unknown)``.

    ``profile_for``: source -> the profile to predict its rows with (``scripts/
    issue30_holdout.py``: fitted without that source; a None profile leaves the row
    unpredicted); None: the bundled profile for every row."""
    cat = load_catalog()
    recs = []
    for f in [*FILES, INFERENCEX, INFERENCEX_HISTORY]:
        rows = read_rows(f)[0]
        for r in rows:
            if is_disagg_row(r):
                continue
            s = spec_of_row(r)
            if s is None:
                continue
            al = catalog_al(cat, r, s[0], s[1], row_workload(r))
            base = {
                "id": cell(r, "id"),
                "source": cell(r, "source"),
                "kind": "speculative",
                "metric": metric_class(cell(r, "metric")),
                "measured": float(cell(r, "value")),
            }
            if al is None:
                recs.append({**base, "reason": f"no published AL for {s[0]} K={s[1]}"})
                continue
            prof = profile_for(base["source"]) if profile_for is not None else None
            if profile_for is not None and prof is None:
                recs.append({**base, "reason": "no profile fitted without this source"})
                continue
            v, why = predict_spec_row(r, al, cat, _params(cat, r, prof))
            recs.append({**base, "predicted": v, "reason": why})
        by_id = {cell(r, "id"): r for r in rows}
        dis = f != INFERENCEX_HISTORY or disagg_history
        for d in disagg_accuracy(rows, cat, profile_for) if dis else ():
            row = by_id[d["id"]]
            off = "MTP not modelled" in d.get("note", "")
            recs.append(
                {
                    "id": d["id"],
                    "source": d["source"],
                    "kind": "disaggregated"
                    + (
                        (" + MTP (not modelled: K unknown)" if off else " + MTP")
                        if d["mtp"]
                        else ""
                    ),  # fmt: skip
                    "metric": metric_class(cell(row, "metric")),
                    "measured": d["value"],
                    "predicted": d.get("predicted"),
                    "reason": d.get("reason", ""),
                }
            )
    df = pd.DataFrame(recs)
    ok = df["predicted"].notna()
    df.loc[ok, "ape"] = (df.loc[ok, "predicted"] / df.loc[ok, "measured"] - 1).abs()
    df.loc[ok, "signed"] = df.loc[ok, "predicted"] / df.loc[ok, "measured"] - 1
    return df


def issue30_table(df: pd.DataFrame) -> pd.DataFrame:
    recs = []
    for (kind, metric), g in df.groupby(["kind", "metric"]):
        ok = g[g["predicted"].notna()]
        recs.append(
            {
                "kind": kind,
                "metric": metric,
                "rows": len(g),
                "predicted": len(ok),
                "sources": ok["source"].nunique(),
                "MdAPE %": round(100 * float(ok["ape"].median()), 1) if len(ok) else None,
                "median signed %": round(100 * float(ok["signed"].median()), 1)
                if len(ok)
                else None,
            }
        )
    ok = df[df["predicted"].notna()]
    for metric in ("throughput", "TPOT"):
        g = ok[ok["metric"] == metric]
        recs.append(
            {
                "kind": "all speculative + disaggregated",
                "metric": metric,
                "rows": int((df["metric"] == metric).sum()),
                "predicted": len(g),
                "sources": g["source"].nunique(),
                "MdAPE %": round(100 * float(g["ape"].median()), 1) if len(g) else None,
                "median signed %": round(100 * float(g["signed"].median()), 1) if len(g) else None,
            }
        )
    return pd.DataFrame(recs)


def history_spec_table() -> pd.DataFrame:
    """The aggregated speculative rows of the InferenceX history file (every metric),
    predicted with the general natural-text prior and with the row's workload prior."""
    cat = load_catalog()
    recs = []
    for r in read_rows(INFERENCEX_HISTORY)[0]:
        s = spec_of_row(r)
        if s is None or is_disagg_row(r):
            continue
        rec = {"id": cell(r, "id"), "metric": cell(r, "metric"), "K": s[1],
               "measured": float(cell(r, "value"))}  # fmt: skip
        for name, wl in (("natural", None), ("workload", row_workload(r))):
            al = catalog_al(cat, r, s[0], s[1], wl)
            v = predict_spec_row(r, al, cat, _params(cat, r))[0] if al else None
            rec[f"AL {name}"] = al
            rec[f"error {name} %"] = _pct(v, rec["measured"])
        recs.append(rec)
    return pd.DataFrame(recs)


def history_summary(t: pd.DataFrame) -> pd.DataFrame:
    recs = []
    for metric, g in t.groupby("metric"):
        rec = {"metric": metric, "rows": len(g)}
        for name in ("natural", "workload"):
            e = g[f"error {name} %"].dropna()
            rec[f"predicted ({name})"] = len(e)
            rec[f"MdAPE {name} %"] = round(float(e.abs().median()), 1) if len(e) else None
            rec[f"median signed {name} %"] = round(float(e.median()), 1) if len(e) else None
        recs.append(rec)
    return pd.DataFrame(recs)


def spec_summary(t: pd.DataFrame) -> pd.DataFrame:
    """Pairs within 15 % and median |error| by concurrency class and AL basis."""
    recs = []
    for name, sel in (
        ("batch 1", t["concurrency"].fillna(1) <= 1),
        ("concurrency 2-16", (t["concurrency"] > 1) & (t["concurrency"] <= 16)),
        ("concurrency >= 32", t["concurrency"] >= 32),
    ):
        g = t[sel]
        for col in ("error (catalog AL) %", "error (workload AL) %"):
            e = g[col].dropna().abs()
            recs.append(
                {
                    "pairs": name,
                    "AL": col.split("(")[1].split(")")[0],
                    "n": len(e),
                    "within 15 %": int((e <= 15).sum()),
                    "median |error| %": round(float(e.median()), 1) if len(e) else None,
                }
            )
    return pd.DataFrame(recs)


def main() -> int:
    if "--spec" in sys.argv:  # the MTP / no-MTP pairs only (a minute or two)
        t = spec_table()
        print(_md_table(t))
        print(_md_table(spec_summary(t)))
        return 0
    if "--verify" in sys.argv:  # the pairs' verify step term by term (seconds)
        print(_md_table(verify_table()))
        return 0
    if "--history" in sys.argv:  # InferenceX history's aggregated MTP rows, both priors
        t = history_spec_table()
        if "--rows" in sys.argv:
            print(_md_table(t))
        print(_md_table(history_summary(t)))
        return 0
    if "--issue30" in sys.argv:  # table 4 only
        i30 = issue30_rows(disagg_history="--disagg-history" in sys.argv)
        if "--csv" in sys.argv:
            i30.to_csv(sys.argv[sys.argv.index("--csv") + 1], index=False)
        print(_md_table(issue30_table(i30)))
        return 0
    print("## Rows by source, layout kind and metric\n")
    print(_md_table(counts()))
    print("## Speculative decoding: MTP rows over their baseline\n")
    t = spec_table()
    print(_md_table(t))
    print(_md_table(spec_summary(t)))
    print("## Issue 30: speculative (catalog AL) and disaggregated rows\n")
    i30 = issue30_rows()
    print(_md_table(issue30_table(i30)))
    print(_md_table(i30.groupby(["source", "kind", "metric"]).agg(
        rows=("id", "size"), predicted=("predicted", "count"), mdape=("ape", "median"),
    ).reset_index()))  # fmt: skip
    print("## Leave-one-source-out errors of the predicted rows, by layout kind\n")
    loso = evaluate(sources=PREDICTED_SOURCES)
    cols = ["id", "source", "gpu", "metric", "measured", "predicted", "ape", "layout_kind"]
    if "--rows" in sys.argv:
        print(_md_table(loso[[c for c in cols if c in loso]]))
    print(_md_table(kind_table(loso)))
    by = loso.groupby(["source", "metric_class"]).agg(rows=("id", "size"), mdape=("ape", "median"))
    print(_md_table(by.reset_index()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
