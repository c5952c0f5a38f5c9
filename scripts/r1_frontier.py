"""InferenceX's DeepSeek-R1 front on B200 / GB200 against the planner, held out (issue 30).

Every InferenceX DeepSeek-R1 point on the chosen GPUs and lengths that publishes both output
throughput and median TPOT (aggregated TP / TP+EP / DEP, disaggregated xPyD, each with and
without MTP; ``public_inferencex.csv`` and ``public_inferencex_history.csv``) is predicted
with a profile fitted **without any InferenceX row** (both source names are one harness, so
they are held out together: the leave-one-source-out fit of ``planner validate --holdout``,
restricted to the nodes these GPUs resolve to), then:

* aggregated points without MTP: the serving simulator
  (:func:`planner.benchmarks.serving_rows.serving_row_details`, one closed loop per point);
* aggregated MTP points: :func:`planner.benchmarks.speculative_rows.predict_spec_row` with
  K from the InferenceX scripts and the catalog's published acceptance length for that K;
* disaggregated points: :func:`planner.benchmarks.disagg_rows.predict_disagg_row` (the
  composed simulation); InferenceX's multi-node MTP recipes do not say their K, so those
  points are predicted **without** MTP (their kind says ``MTP not modelled``).

Parameters are the held-out profile's node for (GPU, engine, precision), not its release
nodes (the disaggregated path resolves nodes only, so every kind is predicted alike).

For each (GPU, lengths, precision) and interactivity level (1000 / median TPOT
[tok/s/user]) the table gives the best measured output tok/s per GPU (over all GPUs of the
deployment, prefill pool included) among points reaching the level, its layout kind (the
kind of the measured Pareto front there), the planner's prediction of that same point, and
the planner's own best among the measured points (its own TPOT deciding which qualify).
:func:`ep_accuracy.best_at_levels` does the selection for this script and for
``ep_accuracy.deepseek_frontier``.

Usage (from the repository root; 1-3 min on two shared cores for both GPUs and lengths)::

    python scripts/r1_frontier.py                              # B200 + GB200, 1k/1k and 8k/1k
    python scripts/r1_frontier.py --gpus nvidia-b200 --lengths 1024/1024 --save /tmp/r1.csv
    python scripts/r1_frontier.py --load /tmp/r1.csv           # the tables from a saved run
    python scripts/r1_frontier.py --profile /tmp/held.yaml     # fit once, reuse the fit after
    python scripts/r1_frontier.py --load /tmp/r1.csv --recommend [--recommend-gpu nvidia-gb200]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from ep_accuracy import _int, best_at_levels  # noqa: E402

from planner.benchmarks.disagg_rows import disagg_layout, is_disagg_row  # noqa: E402
from planner.benchmarks.io import read_rows  # noqa: E402
from planner.benchmarks.schema import cell, number  # noqa: E402
from planner.benchmarks.speculative_rows import spec_of_row  # noqa: E402
from planner.calibration.accuracy import _md_table  # noqa: E402
from planner.catalog.catalog import load_catalog  # noqa: E402

FILES = (
    ROOT / "data/benchmarks/public_inferencex.csv",
    ROOT / "data/benchmarks/public_inferencex_history.csv",
)
#: the harness's source names (substrings), held out together
HOLDOUT = ("SemiAnalysis InferenceX",)
GPUS = ("nvidia-b200", "nvidia-gb200")
LENGTHS = ("1024/1024", "8192/1024")
LEVELS = (20.0, 40.0, 60.0)
#: the two metrics a point needs
THR, TPOT = "output_tok_s_total", "tpot_ms_median"
_METRIC_TEXT = re.compile(r"\b[a-z_0-9]+ = [^;]*; ?")
_LEN = re.compile(r"(?:random_input_len=|nominal input )(\d+)")
_OLEN = re.compile(r"(?:random_output_len=|nominal input \d+ / output )(\d+)")


def pool_label(p: dict) -> str:
    """``DEP8``, ``TP8EP8``, ``TP4`` of a pool (or aggregated layout) dict."""
    if p["attention_dp"] > 1:
        return f"DEP{p['attention_dp'] * p['tp']}"
    return f"TP{p['tp']}" + (f"EP{p['ep']}" if p["ep"] > 1 else "")


def point_kind(row) -> tuple[str, str]:
    """(layout kind, configuration label) of an InferenceX row.

    Kinds: ``TP``, ``TP+EP``, ``DEP`` (aggregated, one 8-GPU server or less), ``disagg``
    (``wide-EP`` when a decode worker's expert-parallel width exceeds 8 GPUs), each with
    `` + MTP`` when measured with it."""
    notes = cell(row, "notes")
    mtp = spec_of_row(row) is not None
    if is_disagg_row(row):
        lay = disagg_layout(notes)
        if isinstance(lay, str):
            m = re.search(r"\((\d+) prefill \+ (\d+) decode GPUs, (\d+)P/(\d+)D", notes)
            label = f"{m.group(3)}P+{m.group(4)}D (unread)" if m else "disagg (unread)"
            kind = "disagg"
        else:
            label = f"{lay['x']}P({pool_label(lay['prefill'])})+{lay['y']}D({pool_label(lay['decode'])})"
            wide = lay["decode"]["ep"] > 8
            kind = "disagg wide-EP" if wide else "disagg"
    else:
        p = {k: _int(cell(row, k)) for k in ("tp", "ep", "attention_dp")}
        label = pool_label(p)
        kind = "DEP" if p["attention_dp"] > 1 else ("TP+EP" if p["ep"] > 1 else "TP")
    if mtp:
        k = spec_of_row(row)[1]
        kind += " + MTP"
        label += f" MTP{'' if k is None else f' k={k}'}"
    return kind, label


def points(gpus=GPUS, lengths=LENGTHS, files=FILES) -> pd.DataFrame:
    """One record per measured point with both metrics: its rows, kind, measured values."""
    groups: dict[tuple, dict] = {}
    for f in files:
        for r in read_rows(f)[0]:
            if cell(r, "hardware") not in gpus or cell(r, "model") != "deepseek-v3":
                continue
            if cell(r, "metric") not in (THR, TPOT) or cell(r, "mode") != "concurrency":
                continue
            notes = cell(r, "notes")
            i, o = _LEN.search(notes), _OLEN.search(notes)
            if not (i and o) or f"{i.group(1)}/{o.group(1)}" not in lengths:
                continue
            key = (
                cell(r, "source"), cell(r, "hardware"), cell(r, "framework"),
                cell(r, "precision"), cell(r, "concurrency"), cell(r, "n_gpus"),
                cell(r, "as_of"), _METRIC_TEXT.sub("", notes),
            )  # fmt: skip
            g = groups.setdefault(key, {"lengths": f"{i.group(1)}/{o.group(1)}"})
            g[cell(r, "metric")] = r
    recs = []
    for g in groups.values():
        if THR not in g or TPOT not in g:
            continue
        r = g[THR]
        kind, label = point_kind(r)
        recs.append(
            {
                "id": cell(r, "id"),
                "tpot_id": cell(g[TPOT], "id"),
                "gpu": cell(r, "hardware"),
                "lengths": g["lengths"],
                "precision": cell(r, "precision"),
                "framework": cell(r, "framework"),
                "concurrency": _int(cell(r, "concurrency")),
                "n_gpus": _int(cell(r, "n_gpus")),
                "kind": kind,
                "config": label,
                "measured_thr": number(r, "value"),
                "measured_tpot_ms": number(g[TPOT], "value"),
                "src_rows": (r, g[TPOT]),
            }
        )
    return pd.DataFrame(recs)


def held_out_profile(gpus=GPUS, holdout=HOLDOUT):
    """The profile fitted without any row of the ``holdout`` sources (only the nodes the
    held-out rows on ``gpus`` resolve to, and their ancestors: ``run_validation``'s rule)."""
    from planner.calibration.accuracy import load_measurements
    from planner.calibration.fit import (
        fit_profile,
        own_files_default,
        prepare_rows,
        public_files_default,
    )
    from planner.calibration.release_fit import fit_release_nodes

    cat = load_catalog()
    rows = prepare_rows(load_measurements(public_files_default(), cat), cat)
    own = prepare_rows(load_measurements(own_files_default(), cat), cat)

    def out(r):
        return any(h.lower() in r.source.lower() for h in holdout)

    train = [r for r in [*rows, *own] if not out(r) and (r.ok or r.steady)]
    held = [r for r in rows if out(r) and r.gpu in gpus and r.vendor != "?"]
    targets = {(r.vendor or None, r.framework, r.arch, r.gpu, r.precision or None, r.family)
               for r in held}  # fmt: skip
    prof = fit_profile(train, targets=sorted(targets, key=str))
    only = {(r.framework, r.arch, r.precision) for r in held}
    return fit_release_nodes(prof, train, cat, only=only)


def predict_points(pts: pd.DataFrame, profile_path: str | Path | None) -> pd.DataFrame:
    """Predicted output tok/s and median TPOT of each point (``profile_path``: the profile;
    None: the bundled one)."""
    import planner.catalog.profile as profile_mod

    before = profile_mod.DEFAULT_PROFILE
    if profile_path is not None:  # the disaggregated path resolves the default profile
        profile_mod.DEFAULT_PROFILE = Path(profile_path)
    try:
        return _predict_points(pts, profile_path)
    finally:
        profile_mod.DEFAULT_PROFILE = before


def _predict_points(pts: pd.DataFrame, profile_path: str | Path | None) -> pd.DataFrame:
    from planner.benchmarks.disagg_rows import predict_disagg_row
    from planner.benchmarks.serving_rows import serving_row_details
    from planner.benchmarks.speculative_rows import predict_spec_row
    from planner.catalog.profile import model_family, resolve_efficiency
    from planner.catalog.speculative import spec_decode
    from planner.errors import PlannerError

    cat = load_catalog()
    model = cat.model_ref("deepseek-v3", None)
    out = pts.copy()
    thr, tpot, why = [], [], []
    for rec in pts.itertuples():
        r_thr, r_tpot = rec.src_rows
        params, _ = resolve_efficiency(rec.gpu, rec.framework, cat.precision(rec.precision).id,
                                       profile_path, cat, model_family(model))  # fmt: skip
        v: dict[str, float | None] = {THR: None, TPOT: None}
        reason = ""
        try:
            if is_disagg_row(r_thr):
                for m, r in ((THR, r_thr), (TPOT, r_tpot)):
                    p = predict_disagg_row(r, cat)
                    v[m], reason = (None, p) if isinstance(p, str) else (p[0], reason)
            elif spec_of_row(r_thr) is not None:
                method, k = spec_of_row(r_thr)
                if k is None:
                    reason = "MTP without K"
                else:
                    al = spec_decode(model, method, k).acceptance_length
                    for m, r in ((THR, r_thr), (TPOT, r_tpot)):
                        v[m], reason = predict_spec_row(r, al, cat, params)
            else:
                d = serving_row_details(dict(r_thr), cat, params)
                v = {THR: d.get(THR), TPOT: d.get(TPOT)}
                reason = d.get("reason", "")
        except PlannerError as e:
            reason = str(e).splitlines()[0]
        thr.append(v[THR])
        tpot.append(v[TPOT])
        why.append(reason or "")
    out["predicted_thr"] = pd.to_numeric(pd.Series(thr, index=out.index), errors="coerce")
    out["predicted_tpot_ms"] = pd.to_numeric(pd.Series(tpot, index=out.index), errors="coerce")
    out["reason"] = why
    return out.drop(columns=["src_rows"])


def per_gpu(pred: pd.DataFrame) -> pd.DataFrame:
    """The columns :func:`ep_accuracy.best_at_levels` reads, per GPU of each deployment."""
    d = pred.copy()
    d["thr_m"] = d["measured_thr"] / d["n_gpus"]
    d["thr_p"] = d["predicted_thr"] / d["n_gpus"]
    d["int_m"] = 1000.0 / d["measured_tpot_ms"]
    d["int_p"] = 1000.0 / d["predicted_tpot_ms"]
    return d


def frontier(pred: pd.DataFrame, levels=LEVELS, by=("gpu", "lengths", "precision")):
    """The table: measured best (kind, configuration), the planner on that point, the
    planner's own best (kind), at each level and group."""
    return best_at_levels(per_gpu(pred), list(by), levels)


def kind_errors(pred: pd.DataFrame) -> pd.DataFrame:
    """MdAPE and median signed error of throughput and TPOT by GPU and layout kind."""
    d = pred.dropna(subset=["predicted_thr", "predicted_tpot_ms"])
    recs = []
    for (gpu, kind), g in d.groupby(["gpu", "kind"]):
        e_t = g["predicted_thr"] / g["measured_thr"] - 1
        e_l = g["predicted_tpot_ms"] / g["measured_tpot_ms"] - 1
        recs.append(
            {
                "gpu": gpu,
                "kind": kind,
                "points": len(g),
                "thr MdAPE %": round(100 * float(np.median(e_t.abs())), 1),
                "thr signed %": round(100 * float(np.median(e_t)), 1),
                "TPOT MdAPE %": round(100 * float(np.median(e_l.abs())), 1),
                "TPOT signed %": round(100 * float(np.median(e_l)), 1),
            }
        )
    return pd.DataFrame(recs)


def recommended(tpot_s: float, rps: float = 400.0, gpus: str = "nvidia-b200") -> dict:
    """``planner recommend`` for DeepSeek-R1 at 1k/1k (fixed lengths), TPOT p99 ``tpot_s``
    [s], TTFT p99 5 s, ``rps`` [req/s] peak, speculative decoding and xPyD searched: the
    winner's ``kind`` (:func:`point_kind`'s words) and ``config``, and the aggregated
    option it came from. The xPyD answer is the recommendation when it pays (fewer GPUs
    than the aggregated fleet for the same need)."""
    import contextlib
    import io
    import json

    from planner.cli.main import main as cli

    argv = ["recommend", "--model", "deepseek-v3", "--input-tokens", "1000",
            "--output-tokens", "1000", "--gpus", gpus, "--tpot-p99", f"{tpot_s:.6g}",
            "--ttft-p99", "5", "--peak-rps", f"{rps:g}", "--speculative", "auto",
            "--disagg", "auto", "--format", "json"]  # fmt: skip
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli(argv)
    if code != 0:
        raise RuntimeError(f"planner {' '.join(argv)} exited {code}")
    res = json.loads(buf.getvalue())
    win = res["recommendations"][0]
    p = {k: int(win[k] or 1) for k in ("tp", "ep", "attention_dp")}
    agg = pool_label(p)
    kind = "DEP" if p["attention_dp"] > 1 else ("TP+EP" if p["ep"] > 1 else "TP")
    config = agg
    dis = [d for d in res["summary"].get("disaggregated") or [] if d["gpu"] == win["gpu"]]
    spec = win
    if dis and dis[0].get("pays"):
        spec = d = dis[0]  # its own speculative setting (none before the pools kept it)
        kind = "disagg wide-EP" if d["decode"]["ep"] > 8 else "disagg"
        config = d["option"].split(",")[0].removeprefix("disagg ")
        config = f"{d['groups']} x {config}"
    if spec.get("spec_method"):
        kind += " + MTP"
        config += f" MTP k={spec['spec_tokens']}"
    return {
        "kind": kind,
        "config": config,
        "engine": f"{win['framework']} {win['precision']}",
        "aggregated": f"{win['replicas']}x {agg} ({win['num_gpus']} GPUs)",
        "xpyd": (f"{dis[0].get('num_gpus')} GPUs, pays: {dis[0].get('pays')}" if dis else "-"),
    }


def recommend_table(
    front: pd.DataFrame, levels=LEVELS, rps: float = 400.0, gpu: str = "nvidia-b200"
) -> pd.DataFrame:
    """The recommender's kind at TPOT p99 = 1 / level against the measured front's kind at
    that level (``gpu``, 1k/1k, each precision of ``front``)."""
    recs = []
    f = front[(front["gpu"] == gpu) & (front["lengths"] == "1024/1024")]
    for lv in levels:
        r = recommended(1.0 / lv, rps, gpu)
        kinds = f[f["interactivity >= tok/s/user"] == lv]
        measured = "; ".join(f"{k} ({p})" for k, p in zip(kinds["measured kind"],
                             kinds["precision"], strict=True))  # fmt: skip
        recs.append(
            {
                "interactivity >= tok/s/user": lv,
                "TPOT p99 target ms": round(1000 / lv, 1),
                "recommended kind": r["kind"],
                "recommended": f"{r['engine']} {r['config']}",
                "aggregated option": r["aggregated"],
                "xPyD": r["xpyd"],
                "measured front kind": measured,
                "same kind": all(k == r["kind"] for k in kinds["measured kind"]),
            }
        )
    return pd.DataFrame(recs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default=",".join(GPUS))
    ap.add_argument("--lengths", default=",".join(LENGTHS), help="ISL/OSL, e.g. 1024/1024")
    ap.add_argument("--levels", default=",".join(f"{v:g}" for v in LEVELS))
    ap.add_argument(
        "--bundled",
        action="store_true",
        help="the bundled profile (NOT held out) instead of the held-out fit",
    )
    ap.add_argument("--save", help="write the per-point predictions to this CSV")
    ap.add_argument(
        "--profile",
        help="the held-out profile's YAML: read it if the file exists, else fit and write it",
    )
    ap.add_argument("--load", help="read per-point predictions saved by --save")
    ap.add_argument(
        "--recommend",
        action="store_true",
        help="also run `planner recommend` at TPOT p99 = 1 / level (B200, 1k/1k)",
    )
    ap.add_argument("--rps", type=float, default=400.0, help="peak req/s of --recommend")
    ap.add_argument("--recommend-gpu", default="nvidia-b200", help="GPU of --recommend")
    a = ap.parse_args(argv)
    levels = tuple(float(v) for v in a.levels.split(","))
    if a.load:
        pred = pd.read_csv(a.load, keep_default_na=False, na_values=[""])
    else:
        gpus = tuple(a.gpus.split(","))
        pts = points(gpus, tuple(a.lengths.split(",")))
        print(f"{len(pts)} points with output tok/s and TPOT", file=sys.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            path = None
            if not a.bundled:
                from planner.catalog.profile import save_profile

                path = Path(a.profile) if a.profile else Path(tmp) / "held_out.yaml"
                if not path.exists():
                    save_profile(held_out_profile(gpus), path)
            pred = predict_points(pts, path)
        if a.save:
            pred.to_csv(a.save, index=False)
    print("## Errors by GPU and layout kind\n")
    print(_md_table(kind_errors(pred)))
    print("## Best output tok/s per GPU at each interactivity level\n")
    front = frontier(pred, levels)
    print(_md_table(front))
    if a.recommend:
        g = a.recommend_gpu
        print(f"## planner recommend, DeepSeek-R1 1k/1k on {g} at {a.rps:g} req/s\n")
        print(_md_table(recommend_table(front, levels, a.rps, g)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
