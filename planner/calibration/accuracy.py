"""Out-of-sample accuracy of the calibrated engine (``planner validate``).

Two schemes, both refitting the whole hierarchy without the held-out rows:

* leave-one-source-out (LOSO): every public source in turn is held out, so a row is predicted
  by parameters fitted on other documents, software versions and often GPUs. Serving rows
  (request-rate, MLPerf server) are never fitted: the simulator predicts them with the fold's.
* 5-fold: random folds over all fitted rows (used for the project's own H200
  measurements, where a source is one harness).

The report (``docs/accuracy.md``) gives MdAPE, P90 APE and the signed bias (median of
predicted/measured - 1) per framework, hardware, metric and mode.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from planner.benchmarks.io import load_measurements
from planner.benchmarks.serving_rows import predict_serving_row
from planner.calibration.bands import (  # noqa: F401 (metric_class and its lists: re-exported)
    THROUGHPUT,
    TPOT,
    TTFT,
    band_coverage,
    coverage_table,
    fit_error_bands,
    fit_pair_bands,
    metric_class,
)
from planner.calibration.fit import (
    PreparedRow,
    data_files_default,
    fit_profile,
    predict_rows,
    prepare_rows,
    split_public_own,
)
from planner.calibration.latency_fit import first_token_folds, fit_prefill_scales, scale_for
from planner.calibration.release_fit import (
    AsOfFits,
    as_of_days,
    fit_release_nodes,
    params_for,
    predict_rows_by_release,
    release_bands,
    release_cols,
    release_kw,
    release_params_for_row,
    signed,
)
from planner.calibration.sections import _md_table, kept_sections
from planner.calibration.transfer import sibling_band, transfer_validation
from planner.catalog.catalog import DATA_DIR, Catalog, load_catalog
from planner.catalog.latency import APPLY_PREFILL_SCALE, latency_family
from planner.catalog.profile import Profile, model_family
from planner.errors import PlannerError
from planner.files import Progress, atomic_write_text


def serving_predictions(
    df, rows: Sequence[PreparedRow], profile_for, catalog: Catalog, fold_of, asof=None
) -> list[dict[str, Any]]:
    """Predict serving rows with the fold's profile (``asof``: AsOfFits), prefill scale and
    trtllm-serve first-token latency (:mod:`planner.calibration.latency_fit`)."""
    records = {str(r["id"]): r for r in df.to_dict("records")}
    first: list[tuple[PreparedRow, Any, str, Any, float, dict[str, Any]]] = []
    for r in rows:
        if r.fit_kind != "serving":
            continue
        fold = fold_of(r)
        prof = profile_for(fold)
        try:  # the row's release node (prior when the fold could not be fitted)
            params, prov, used, dist = release_params_for_row(r, prof, catalog, asof, fold)
        except PlannerError:
            continue
        value = _serving_value(records[r.id], catalog, params, 1.0)
        if value is not None:
            first.append((r, params, prov, fold, value, release_cols(r, used, dist)))
    fam = {}
    for r, *_ in first:
        if r.model not in fam:
            try:
                fam[r.model] = latency_family(catalog.model_ref(r.model))
            except PlannerError:
                fam[r.model] = r.family
    ttft = [
        {"framework": r.framework, "family": fam[r.model], "source": fold, "measured": r.value,
         "predicted": v, "as_of": records[r.id].get("as_of")}
        for r, _, _, fold, v, _ in first if metric_class(r.metric) == "ttft"
    ]  # fmt: skip
    scales: dict[Any, Any] = {}
    out: list[dict[str, Any]] = []
    on_path, ft = first_token_folds(
        (f, records[r.id], r.metric, r.value, v) for r, _, _, f, v, _ in first
    )
    for i, (r, params, prov, fold, value, rel) in enumerate(first):
        if APPLY_PREFILL_SCALE:
            if fold not in scales:
                scales[fold] = fit_prefill_scales(ttft, exclude_source=fold)
            sc, group = scale_for(scales[fold], r.framework, fam[r.model])
            if sc != 1.0:
                value = _serving_value(records[r.id], catalog, params, sc)
                if value is None:
                    continue
                prov = f"{prov}; prefill scale {sc:.3g} ({group})"
        if i in on_path and fold in ft:  # trtllm-serve's first-token path: outside the loop
            value, prov = value + 1e3 * ft[fold], f"{prov}; first token + {1e3 * ft[fold]:.0f} ms"
        out.append({**oos_record(r, float(value), prov, fold), **rel})
    return out


def _serving_value(record, catalog: Catalog, params, scale: float) -> float | None:
    try:
        value, _ = predict_serving_row(record, catalog, params, prefill_scale=scale)
    except PlannerError:
        return None
    if value is None or not (value > 0) or not math.isfinite(value):
        return None
    return float(value)


def assumed_layout_predictions(df, profile_for, catalog: Catalog, asof=None) -> list[dict]:
    """Rows that state ``n_gpus`` but no ``tp`` (MLPerf multi-GPU systems), predicted by the
    serving simulator with the layout a submitter would tune
    (:func:`planner.benchmarks.layouts.assumed_layout`) and the held-out fold's profile."""
    from planner.benchmarks.layouts import assumed_layout, needs_layout
    from planner.benchmarks.schema import cell, layout_unsupported, row_release

    out: list[dict[str, Any]] = []
    for rec in df.to_dict("records"):
        row = {k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))
               for k, v in rec.items()}  # fmt: skip
        if not needs_layout(row) or not cell(row, "precision") or not cell(row, "framework"):
            continue
        if layout_unsupported(cell(row, "notes")) is not None:
            continue
        prof = profile_for(str(rec["source"]))
        family = _family(catalog, cell(row, "model"))
        try:
            gpu = catalog.gpu(cell(row, "hardware")).id
            rel = row_release(row)
            params, prov, used, dist = params_for(gpu, cell(row, "framework"),
                cell(row, "precision"), rel.release if rel else "", prof, catalog, family,
                asof=asof, fold=str(rec["source"]), row_id=str(rec["id"]))  # fmt: skip
            filled, note = assumed_layout(row, catalog, params)
            value, _ = predict_serving_row(filled, catalog, params, prefill_scale=1.0)
        except PlannerError:
            continue
        if value is None or not (value > 0) or not math.isfinite(value):
            continue
        out.append(
            {
                "id": str(rec["id"]),
                "source": str(rec["source"]),
                "framework": cell(row, "framework"),
                "gpu": gpu,
                "precision": cell(row, "precision"),
                "metric": cell(row, "metric"),
                "model": cell(row, "model"),
                "mode": cell(row, "mode"),
                "kind": "assumed layout",
                "vendor": catalog.gpu(gpu).vendor,
                "arch": catalog.gpu(gpu).arch,
                "family": family,
                "measured": float(rec["value"]),
                "predicted": float(value),
                "provenance": f"{prov}; {note.split(' (')[0]}",
                "fold": str(rec["source"]),
                "release": rel.release if rel else "",
                "release_used": used,
                "release_distance": dist,
                "release_signed": signed(cell(row, "framework"), rel, used, dist),
            }
        )
    return out


def _family(catalog: Catalog, model: str) -> str:
    try:
        return model_family(catalog.model_ref(model))
    except PlannerError:
        return "?"


#: the groups issue 16 sets targets for: (label, column, values, target MdAPE %)
TARGET_GROUPS: tuple[tuple[str, str, tuple[str, ...], float], ...] = (
    ("AMD GPUs", "vendor", ("amd",), 15.0),
    ("Blackwell GPUs", "arch", ("blackwell",), 15.0),
    ("vLLM and SGLang", "framework", ("vllm", "sglang"), 15.0),
    ("MoE models", "family", ("moe",), 20.0),
)


def group_table(loso):
    """Throughput error (leave-one-source-out) by vendor, framework, model family and the
    target groups, with row and source counts (``planner validate``, docs/accuracy.md)."""
    import pandas as pd

    cols = ["group", "value", "n", "sources", "mdape_pct", "p90_ape_pct", "bias_pct"]
    if loso is None or not len(loso):
        return pd.DataFrame(columns=cols)
    thr = loso[loso["metric_class"] == "throughput"]
    parts = []
    for col in ("vendor", "framework", "family"):
        t = error_table(thr, [col], with_sources=True).rename(columns={col: "value"})
        parts.append(t.assign(group=col))
    for label, col, values, target in TARGET_GROUPS:
        t = error_table(thr[thr[col].isin(values)].assign(value=label), ["value"],
                        with_sources=True)  # fmt: skip
        parts.append(t.assign(group=f"target <= {target:g}%"))
    out = pd.concat([p for p in parts if len(p)], ignore_index=True)
    return out[cols]


#: the GPUs whose per-GPU ordering on MLPerf Llama-2-70B Offline issue 16 checks, per round
ORDERING_GPUS = ("nvidia-h100-sxm", "nvidia-h200-sxm", "nvidia-b200", "amd-mi300x", "amd-mi325x")


def mlperf_ordering(loso, gpus: Sequence[str] = ORDERING_GPUS, model: str = "llama-2-70b"):
    """Measured and predicted output tok/s PER GPU on MLPerf ``model`` Offline, per round.

    One row per (round, GPU) with the median over that round's systems of measured and of
    predicted ``output_tok_s_total / n_gpus`` (``n_gpus`` column of ``loso``), the spread of
    the measured values (min, max over systems) and both ranks (1 = fastest). The ordering
    holds when ``measured_rank == predicted_rank`` for every GPU of the round;
    :func:`ordering_pairs` lists the pairs that disagree.
    """
    import pandas as pd

    cols = ["round", "gpu", "systems", "measured_per_gpu", "measured_min", "measured_max",
            "predicted_per_gpu", "measured_rank", "predicted_rank"]  # fmt: skip
    if loso is None or not len(loso) or "n_gpus" not in loso:
        return pd.DataFrame(columns=cols)
    d = loso[
        loso["source"].str.startswith("MLPerf Inference")
        & (loso["model"] == model)
        & (loso["mode"] == "offline")
        & (loso["metric"] == "output_tok_s_total")
        & loso["gpu"].isin(list(gpus))
        & (pd.to_numeric(loso["n_gpus"], errors="coerce") > 0)
    ].copy()
    if not len(d):
        return pd.DataFrame(columns=cols)
    n = pd.to_numeric(d["n_gpus"])
    d["meas"], d["pred"] = d["measured"] / n, d["predicted"] / n
    d["round"] = d["source"].str.replace("MLPerf Inference ", "", regex=False)
    out = (
        d.groupby(["round", "gpu"])
        .agg(
            systems=("meas", "size"),
            measured_per_gpu=("meas", "median"),
            measured_min=("meas", "min"),
            measured_max=("meas", "max"),
            predicted_per_gpu=("pred", "median"),
        )
        .reset_index()
    )
    by = out.groupby("round")
    out["measured_rank"] = by["measured_per_gpu"].rank(ascending=False, method="min").astype(int)
    out["predicted_rank"] = by["predicted_per_gpu"].rank(ascending=False, method="min").astype(int)
    out = out.sort_values(["round", "measured_rank"]).reset_index(drop=True)
    return out.round({c: 1 for c in cols[3:7]})[cols]


def ordering_pairs(table):
    """Pairs of GPUs of one round whose predicted order differs from the measured order.

    Columns: round, faster (measured), slower (measured), measured_gap_pct (median per-GPU
    throughput of the faster over the slower - 1), predicted_gap_pct (the same for the
    predictions; negative = the predicted order is reversed) and ``ranges_overlap``: True when
    the faster GPU's slowest system is below the slower GPU's fastest, i.e. the round's own
    systems do not separate the two GPUs.
    """
    import pandas as pd

    recs = []
    for rnd, g in table.groupby("round", sort=True):
        rows = list(g.sort_values("measured_per_gpu", ascending=False).itertuples())
        for i, a in enumerate(rows):
            for b in rows[i + 1 :]:
                if b.predicted_per_gpu < a.predicted_per_gpu:
                    continue
                recs.append(
                    {
                        "round": rnd,
                        "faster": a.gpu,
                        "slower": b.gpu,
                        "measured_gap_pct": round(100 * (a.measured_per_gpu / b.measured_per_gpu - 1), 1),
                        "predicted_gap_pct": round(100 * (a.predicted_per_gpu / b.predicted_per_gpu - 1), 1),
                        "ranges_overlap": bool(a.measured_min <= b.measured_max),
                    }
                )  # fmt: skip
    cols = ["round", "faster", "slower", "measured_gap_pct", "predicted_gap_pct", "ranges_overlap"]
    return pd.DataFrame(recs, columns=cols)


def run_validation(
    public_files: Sequence[str | Path],
    own_files: Sequence[str | Path] = (),
    catalog: Catalog | None = None,
    k: int = 5,
    serving: bool = True,
    kfold: bool = True,
    holdout: Sequence[str] | None = None,
    **fit_kw: Any,
) -> dict[str, Any]:
    """LOSO over the public files (+ the serving rows) and k-fold over the own files
    (``kfold=False``: LOSO only, own rows still in every training set).

    ``holdout``: hold out only the sources whose name contains one of these texts
    (case-insensitive); the other sources are never scored (a quick partial run); those the
    first-token latency is fitted on are predicted unscored, so a held-out row gets the full
    run's prediction (:func:`planner.calibration.latency_fit.first_token_train_rows`)."""
    import pandas as pd

    from planner.calibration.latency_fit import first_token_train_rows

    cat = catalog or load_catalog()
    result: dict[str, Any] = {}
    if public_files:
        df = load_measurements(public_files, cat)
        rows = prepare_rows(df, cat)
        own_rows: list[PreparedRow] = []
        if own_files:
            own_df = load_measurements(own_files, cat)
            own_rows = prepare_rows(own_df, cat)
        # LOSO: own rows always stay in training (they are not a public source)
        sources = sorted({r.source for r in rows})
        if holdout:
            keys = [h.lower() for h in holdout]
            sources = [s for s in sources if any(k in s.lower() for k in keys)]
            if not sources:
                raise PlannerError(
                    f"--holdout {' '.join(holdout)} matches no source; the sources are: "
                    + "; ".join(sorted({r.source for r in rows}))
                )
        recs, asof = [], AsOfFits(as_of_days(df), **fit_kw)  # release-free rows: as of their date
        profiles: dict[str, Profile | None] = {}
        aux = first_token_train_rows(df.to_dict("records"), sources) if holdout and serving else {}
        bar = Progress("validate: leave-one-source-out", total=len(sources) + len(aux))
        for i, s in enumerate([*sources, *aux]):
            bar.update(i, s)
            train = [r for r in rows if r.source != s and (r.ok or r.steady)] + [
                r for r in own_rows if r.ok or r.steady
            ]
            # only the nodes the held-out rows resolve to (and their ancestors): the same
            # parameters as a full refit, at a fraction of its cost
            targets = [(r.vendor or None, r.framework, r.arch, r.gpu, r.precision or None,
                        r.family) for r in rows if r.source == s and r.vendor != "?"]  # fmt: skip
            try:  # and the release nodes the held-out rows may use (release_fit)
                prof = fit_profile(train, targets=targets, **fit_kw)
                only = {(r.framework, r.arch, r.precision) for r in rows if r.source == s}
                prof = fit_release_nodes(prof, train, cat, only=only, **release_kw(fit_kw))
            except PlannerError:
                prof = None
            profiles[s] = prof
            asof.fit_fold(s, [r for r in rows if r.source == s], train)
            test = [r for r in rows if r.source == s and r.ok and s not in aux]
            for r, v, prov, used, dist in predict_rows_by_release(test, prof, cat, asof, s):
                recs.append({**oos_record(r, v, prov, s), **release_cols(r, used, dist)})
        bar.close()
        if serving:
            held = set(sources)  # with ``holdout`` the other sources are not predicted
            sdf, adf = (df[df["source"].astype(str).isin(h)] for h in (held, held | set(aux)))
            srows = [r for r in rows if r.source in held or r.id in aux.get(r.source, ())]
            recs += [x for x in serving_predictions(adf, srows, profiles.get, cat,
                     lambda r: r.source, asof) if x["fold"] in held]  # fmt: skip
            recs += assumed_layout_predictions(sdf, profiles.get, cat, asof)
        profiles = {s: p for s, p in profiles.items() if s not in aux}
        loso = pd.DataFrame(recs)
        if len(loso):
            n_gpus = dict(zip(df["id"].astype(str), df["n_gpus"], strict=True))
            loso["n_gpus"] = pd.to_numeric(loso["id"].map(n_gpus), errors="coerce")
            loso["log_err"] = np.log(loso["predicted"] / loso["measured"])
            loso["ape"] = np.abs(loso["predicted"] / loso["measured"] - 1)
            loso["metric_class"] = [metric_class(m) for m in loso["metric"]]
            result["coverage"] = band_coverage(loso)
            # the tiers' and groups' bands, and the paired bands of comparisons
            result["bands"] = {**fit_error_bands(loso), **fit_pair_bands(loso, df),
                               **release_bands(loso)}  # fmt: skip
            if not holdout:  # the sibling tier: its LOSO rows and the leave-one-GPU-out ones
                moved = transfer_validation([*rows, *own_rows], cat, **fit_kw)
                sib = sibling_band(loso, moved)
                if sib is not None:
                    result["bands"]["sibling"] = sib
            result["mlperf_ordering"] = mlperf_ordering(loso)
        result["loso"], result["profiles"] = loso, profiles  # profiles: None where a fit failed
        result["n_public_rows"] = len(rows)
        result["unpredicted"] = pd.DataFrame(
            [
                {"id": r.id, "source": r.source, "metric": r.metric, "reason": r.reason}
                for r in rows
                if not r.ok and r.fit_kind != "serving"
            ]
        )
    if own_files and kfold:
        own_df = load_measurements(own_files, cat)
        own_rows = prepare_rows(own_df, cat)
        with Progress("validate") as bar:
            bar.update(0, f"{k}-fold cross-validation of {len(own_rows):,} own rows")
            kf = cross_validate(own_rows, scheme="kfold", k=k, catalog=cat, **fit_kw)
        if len(kf):
            kf["metric_class"] = [metric_class(m) for m in kf["metric"]]
        result["kfold_own"] = kf
    return result


def _coverage_section(result: dict[str, Any]) -> list[str]:
    cov = result.get("coverage")
    if cov is None or not len(cov):
        return []
    bands = result.get("bands") or {}
    band_rows = [
        {"band": t, "ratio_p10": b.ratio_p10, "ratio_p90": b.ratio_p90, "n": b.n_rows,
         "sources": b.n_sources}
        for t, b in bands.items()
    ]  # fmt: skip
    import pandas as pd

    tot = coverage_table(cov.assign(all="all held-out throughput rows"), ["all"])
    return [
        "### Error bands and their held-out coverage",
        "",
        "Each prediction carries a band (`planner.catalog.profile.error_band`): p10 to p90 of "
        "measured / predicted throughput over the rows of its provenance tier that were "
        "predicted out of sample (below; `planner calibrate` stores the same in the profile). "
        "A tier with fewer than 20 rows or 2 sources takes the next coarser tier's band; a "
        "tier's band also spans every nearer tier's. The band then also spans the band of the "
        "prediction's nearest vendor / framework group with at least 20 rows from 2 sources "
        "(`vendor_framework:amd/vllm`, else `framework:vllm`, else `vendor:amd`): held-out "
        "errors differ far more between vendors and frameworks than between tiers. The "
        "`sibling` tier's rows include the leave-one-GPU-out transfers (section at the end); "
        "`pair:<kind>[:<vendor>]` are bands of the RATIO between two options (two GPUs, two "
        "engines, two precisions or layouts), from paired held-out rows "
        "(`planner.calibration.bands.fit_pair_bands`; `recommend` uses them). Bands of "
        "this run:",
        "",
        _md_table(pd.DataFrame(band_rows)),
        "Coverage, checked honestly: each source's rows are tested against bands fitted "
        "WITHOUT that source (a band fitted on all rows would cover 80% by construction). "
        "Target: at least 70% inside.",
        "",
        _md_table(
            pd.concat(
                [
                    tot.rename(columns={"all": "group"}),
                    coverage_table(cov, ["band_tier"])
                    .rename(columns={"band_tier": "group"})
                    .assign(group=lambda d: "tier " + d["group"]),
                    coverage_table(cov, ["vendor"])
                    .rename(columns={"vendor": "group"})
                    .assign(group=lambda d: "vendor " + d["group"]),
                    coverage_table(cov, ["framework"])
                    .rename(columns={"framework": "group"})
                    .assign(group=lambda d: "framework " + d["group"]),
                    coverage_table(cov[cov["band_group"] != ""], ["band_group"])
                    .rename(columns={"band_group": "group"})
                    .assign(group=lambda d: "band widened by " + d["group"]),
                ],
                ignore_index=True,
            )
        ),  # fmt: skip
    ]


def _ordering_section(result: dict[str, Any]) -> list[str]:
    t = result.get("mlperf_ordering")
    if t is None or not len(t):
        return []
    pairs = ordering_pairs(t)
    return [
        "### MLPerf Llama-2-70B Offline: per-GPU ordering within each round",
        "",
        "Output tok/s per GPU (median over the round's systems of each GPU; min and max show the "
        "spread between submitters), measured and predicted out of sample, and the rank of each "
        "(1 = fastest). Target (issue 16): the predicted ranks equal the measured ranks in every "
        "round.",
        "",
        _md_table(t),
        "Pairs predicted in the wrong order"
        + (" (`ranges_overlap`: the round's own systems do not separate the two GPUs):" if len(pairs) else ": none."),
        "",
        *([_md_table(pairs)] if len(pairs) else []),
    ]  # fmt: skip


def write_report(
    result: dict[str, Any],
    path: str | Path,
    command: str,
    inputs: Sequence[str | Path] = (),
) -> str:
    """Write the accuracy report as Markdown (atomically, never over one of ``inputs``);
    returns the text."""
    loso = result.get("loso")
    kf = result.get("kfold_own")
    out = [
        "# Accuracy of planner's predictions (generated)",
        "",
        f"Generated {_dt.date.today().isoformat()} by `{command}`. Do not edit by hand: rerun the command.",
        "",
        "APE = |predicted / measured - 1|. MdAPE = median APE, P90 = 90th percentile APE, bias = "
        "median(predicted / measured) - 1 (positive = planner predicts more than measured). Every "
        "number below is out of sample: the rows were not in the data the parameters were fitted on.",
        "Where and why the model misses is explained in [calibration.md](calibration.md#where-the-model-misses-and-why).",
        "",
    ]
    if kf is not None and len(kf):
        out += [
            "## Own H200 measurements, 5-fold cross-validation",
            "",
            "`pytorch` = the reference engine (bench/ref_engine.py: paged KV, Triton attention, CUDA "
            "graphs; one GPU and TP = 2), `pytorch-naive` = the first harness (bench/pytorch_ref.py). "
            "Target: MdAPE <= 7%.",
            "",
            _md_table(error_table(kf, ["framework", "precision", "metric"])),
            "By model shape:",
            "",
        ]
        out += [_md_table(error_table(kf, ["framework", "metric", "model"])), ""]
        tot = error_table(kf.assign(all="all"), ["all"])
        out += [
            f"Overall: n = {int(tot['n'].iloc[0])}, MdAPE {tot['mdape_pct'].iloc[0]}%, "
            f"P90 {tot['p90_ape_pct'].iloc[0]}%, bias {tot['bias_pct'].iloc[0]}%.",
            "",
        ]
    if loso is not None and len(loso):
        out += [
            "## Public measurements, leave-one-source-out",
            "",
            "Targets: throughput MdAPE <= 20%, TPOT/ITL <= 25%, TTFT <= 35% (serving rows).",
            "",
            "### By metric class and row kind",
            "",
            "`kind`: offline = max-throughput rows (fast path, fitted kinds); static / single = static "
            "batches and batch-1 runs; serving = request-rate, closed-loop and MLPerf server rows, "
            "predicted by the serving simulator (closed-loop throughput rows of the other sources are "
            "fitted through their steady state; request-rate rows never); assumed layout = rows that "
            "state n_gpus but no TP "
            "(MLPerf multi-GPU systems), simulated with the TP size that gives the most analytic "
            "throughput on that many GPUs (planner/benchmarks/layouts.py), never fitted.",
            "",
            _md_table(error_table(loso, ["metric_class", "kind"])),
            "### Throughput by vendor, framework and model family",
            "",
            "Throughput rows only (offline, static, serving and assumed-layout kinds); `sources` = "
            "how many independent publications the rows come from. The `target` groups are the "
            "acceptance targets of issue 16 (each over at least 15 rows from at least 2 sources).",
            "",
            _md_table(group_table(loso)),
            *_coverage_section(result),
            *_ordering_section(result),
            "### By source (the held-out fold)",
            "",
            _md_table(error_table(loso, ["source"])),
            "### By framework and hardware",
            "",
            _md_table(error_table(loso, ["framework", "gpu"])),
            "### By metric and mode",
            "",
            _md_table(error_table(loso, ["metric", "mode"])),
            "### Provenance of the parameters used",
            "",
            _md_table(
                loso.groupby("provenance")
                .size()
                .reset_index(name="n")
                .sort_values("n", ascending=False)
                .head(25)
            ),
        ]
    un = result.get("unpredicted")
    if un is not None and len(un):
        out += [
            "## Rows that cannot be predicted",
            "",
            _md_table(
                un.groupby("reason")
                .size()
                .reset_index(name="rows")
                .sort_values("rows", ascending=False)
            ),
        ]
    text = "\n".join(out) + "\n" + kept_sections(path)
    if not any(x is not None and len(x) for x in (loso, kf)):
        raise PlannerError(f"refusing to write {path}: the accuracy report has no rows")
    atomic_write_text(path, text, inputs=inputs, what="accuracy report")
    return text


# =========================================================================== validation
def oos_record(r: PreparedRow, predicted: float, provenance: str, fold: Any) -> dict[str, Any]:
    """One out-of-sample prediction as a flat record (for the accuracy tables)."""
    return {
        "id": r.id,
        "source": r.source,
        "framework": r.framework,
        "gpu": r.gpu,
        "precision": r.precision,
        "metric": r.metric,
        "model": r.model,
        "mode": r.mode,
        "kind": r.fit_kind,
        "vendor": r.vendor,
        "arch": r.arch,
        "family": r.family,
        "measured": r.value,
        "predicted": float(predicted),
        "provenance": provenance,
        "fold": fold,
    }


def cross_validate(
    rows: Sequence[PreparedRow],
    scheme: str = "loso",
    k: int = 5,
    seed: int = 0,
    catalog: Catalog | None = None,
    **fit_kw: Any,
):
    """Out-of-sample predictions: leave-one-source-out (``loso``) or ``kfold``.

    Returns a DataFrame with one row per predicted measurement: id, source, framework,
    gpu, precision, metric, mode, measured, predicted, provenance, fold, ape, log_err.
    """
    import pandas as pd

    cat = catalog or load_catalog()
    usable = [r for r in rows if r.ok]
    if scheme == "loso":
        folds = sorted({r.source for r in usable})
        assign = [r.source for r in usable]
    elif scheme == "kfold":
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(usable))
        assign = [0] * len(usable)
        for j, i in enumerate(perm):
            assign[i] = int(j % k)
        folds = list(range(k))
    else:
        raise PlannerError(f"unknown validation scheme '{scheme}' (use loso or kfold)")
    recs = []
    for f in folds:
        train = [r for r, a in zip(usable, assign, strict=True) if a != f]
        test = [r for r, a in zip(usable, assign, strict=True) if a == f]
        try:
            prof = fit_profile(train, **fit_kw)
        except PlannerError:
            prof = None
        for r, v, prov in predict_rows(test, prof, cat):
            if v is None:
                continue
            recs.append(oos_record(r, v, prov, f))
    df = pd.DataFrame(recs)
    if len(df):
        df["log_err"] = np.log(df["predicted"] / df["measured"])
        df["ape"] = np.abs(df["predicted"] / df["measured"] - 1)
    return df


def error_table(df, by: Sequence[str], with_sources: bool = False):
    """Median and P90 absolute percentage error and signed bias per group [%]
    (``with_sources``: and the number of sources behind each group)."""
    import pandas as pd

    counts = ["n", "sources"] if with_sources else ["n"]
    if df is None or not len(df):
        return pd.DataFrame(columns=[*by, *counts, "mdape_pct", "p90_ape_pct", "bias_pct"])
    g = df.groupby(list(by), dropna=False)
    extra = {"sources": ("source", "nunique")} if with_sources else {}
    out = g.agg(
        n=("ape", "size"),
        **extra,
        mdape_pct=("ape", lambda s: 100 * float(np.median(s))),
        p90_ape_pct=("ape", lambda s: 100 * float(np.quantile(s, 0.9))),
        bias_pct=("log_err", lambda s: 100 * float(np.expm1(np.median(s)))),
    ).reset_index()
    return out.round({"mdape_pct": 1, "p90_ape_pct": 1, "bias_pct": 1})


def with_error_bands(
    profile: Profile,
    rows: Sequence[PreparedRow],
    paths: Sequence[str | os.PathLike[str]] | None = None,
    catalog: Catalog | None = None,
    **fit_kw: Any,
) -> Profile:
    """``profile`` with ``error_bands`` from a leave-one-source-out refit of the CSV files
    it was fitted on (``planner calibrate``; :func:`split_public_own` decides which files
    are held out source by source). Unchanged when the rows come from fewer than two
    sources or a file is not a CSV (:func:`planner.catalog.profile.error_band` then uses
    the bundled profile's bands).
    """
    files = [Path(p) for p in (paths or data_files_default())]
    if not all(f.suffix.lower() == ".csv" for f in files):
        return profile
    public, own = split_public_own(files)
    if not public or len({r.source for r in rows if r.ok}) < 2:
        return profile
    kw = {k: v for k, v in fit_kw.items() if k != "progress"}
    res = run_validation(public, own, catalog=catalog, kfold=False, **kw)
    return profile.model_copy(update={"error_bands": dict(res.get("bands") or {})})


def store_error_bands(
    profile_path: str | os.PathLike[str], result: dict[str, Any], files: Sequence[str | Path]
) -> Profile:
    """Write the bands of a :func:`run_validation` result into the profile at
    ``profile_path`` (``planner validate --bands-into``). The profile must have been fitted on
    every one of ``files`` as they are now (same hash), else PlannerError."""
    from planner.benchmarks.io import _hash_files
    from planner.catalog.profile import load_profile, save_profile

    prof = load_profile(profile_path)
    assert prof is not None  # load_profile raises for an explicit missing path
    fitted = {(DATA_DIR.parent / f).resolve() for f in prof.data_files}  # relative or absolute
    missing = [str(f) for f in files if Path(f).resolve() not in fitted]
    if missing:
        raise PlannerError(
            f"{profile_path} was not fitted on {', '.join(missing)}: refit it with `planner "
            "calibrate` on the same files before storing their error bands"
        )
    paths = sorted(fitted)
    if _hash_files(paths) != prof.data_hash:
        raise PlannerError(
            f"{profile_path}: the measurement files changed since the fit (data hash "
            f"{prof.data_hash}); refit with `planner calibrate` first"
        )
    bands = result.get("bands") or {}
    if not bands:
        raise PlannerError("no out-of-sample throughput rows: no error bands to store")
    out = prof.model_copy(update={"error_bands": bands})
    save_profile(out, profile_path)
    return out
