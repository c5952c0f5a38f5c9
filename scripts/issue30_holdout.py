"""Issue 30's disaggregated and speculative rows, held out by source (``Done when`` item 1).

``scripts/moe_rows_accuracy.py --issue30`` predicts every aggregated speculative row and every
disaggregated row with the bundled profile, which the same sources' plain rows helped fit.
This script predicts each row with a profile fitted WITHOUT the row's source instead: the
leave-one-source-out fit of ``planner.calibration.accuracy.run_validation`` (``holdout``: one
fit per held-out source, only the nodes its rows resolve to, plus its release nodes), run once
per source and reused by every row of that source.

A publisher whose files carry two source names is held out as one: InferenceX's open results
(``public_inferencex.csv``) and its dashboard history (``public_inferencex_history.csv``)
record the same runs, and dstack published three benchmarks, so each publisher's sources are
renamed to one source in temporary copies of the public files before the fits
(:data:`PUBLISHERS`); the ``sources`` columns count publishers.

Not held out: the acceptance priors (``data/speculative.yaml``: sourced, never fitted) and the
serving latency terms (``data/calibration/latency.yaml``: the prefill scale, a TTFT term).

Usage (from the repository root; about 10 minutes on two shared cores)::

    python scripts/issue30_holdout.py                   # held out, with the history file
    python scripts/issue30_holdout.py --bundled         # + the bundled (in-sample) columns
    python scripts/issue30_holdout.py --csv /tmp/i30.csv    # + the per-row predictions
    python scripts/issue30_holdout.py --cache /tmp/i30.pkl  # reuse the held-out fits
"""

from __future__ import annotations

import argparse
import pickle
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from moe_rows_accuracy import FILES, INFERENCEX, INFERENCEX_HISTORY, issue30_rows  # noqa: E402

from planner.benchmarks.disagg_rows import is_disagg_row  # noqa: E402
from planner.benchmarks.io import read_rows  # noqa: E402
from planner.benchmarks.schema import cell  # noqa: E402
from planner.benchmarks.speculative_rows import spec_of_row  # noqa: E402
from planner.calibration.accuracy import _md_table, run_validation  # noqa: E402
from planner.calibration.fit import own_files_default, public_files_default  # noqa: E402

#: source names of one publisher's files (held out together) -> the one name of the fits;
#: dstack's three benchmarks (its disaggregated gpt-oss-120b rows and the fitted DeepSeek-R1
#: and Llama 405B rows of public_amd.csv) are one publisher as well
PUBLISHERS = {
    "SemiAnalysis InferenceX (InferenceMAX) open results": "SemiAnalysis InferenceX",
    "SemiAnalysis InferenceX benchmarks history (InferenceX-app fixtures)": "SemiAnalysis InferenceX",
    "dstack benchmark: PD disaggregation ratios, gpt-oss-120b on 8xH200 (SGLang)": "dstack",
    "dstack benchmark: DeepSeek-R1 on 8xMI300X vs 8xH200": "dstack",
    "dstack benchmark: Llama 3.1 405B FP8 on 8xMI300X vs 8xH100": "dstack",
}
#: the layout kinds of the issue (``issue30_rows``' ``kind``) -> the label of the tables
KINDS = {
    "speculative": "aggregated + MTP/EAGLE",
    "disaggregated": "disaggregated",
    "disaggregated + MTP": "disaggregated + MTP",
    "disaggregated + MTP (not modelled: K unknown)": "disaggregated + MTP (K unknown: no MTP)",
}


#: a per-user output speed the source prints for a batch-1 row (tok/s/user): TensorRT-LLM's
#: "TPS/User" (tech blog 1) and trtllm-bench's "Per User Output Throughput" (the guide)
_PER_USER = re.compile(r"(?:TPS/User|Per User Output Throughput) ([0-9.]+)")


def publisher(source: str) -> str:
    return PUBLISHERS.get(source, source)


def holdout_profiles(sources) -> dict[str, object]:
    """``source`` -> the profile fitted without its publisher's rows (None: the fit failed)."""
    keep = sorted({publisher(s) for s in sources})
    with tempfile.TemporaryDirectory() as d:
        files = []
        for f in public_files_default():
            df = pd.read_csv(f, dtype=str, keep_default_na=False)
            df["source"] = [publisher(s) for s in df["source"]]
            p = Path(d) / f.name
            df.to_csv(p, index=False)
            files.append(p)
        res = run_validation(files, own_files_default(), kfold=False, serving=False, holdout=keep)
    fitted = res.get("profiles", {})
    return {s: fitted.get(publisher(s)) for s in sources}


def issue30_sources() -> list[str]:
    """The sources with a speculative or disaggregated row (those ``issue30_rows`` reads)."""
    rows = [r for f in [*FILES, INFERENCEX, INFERENCEX_HISTORY] for r in read_rows(f)[0]]
    return sorted({cell(r, "source") for r in rows if is_disagg_row(r) or spec_of_row(r)})


def per_user_tpot(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """The batch-1 throughput rows whose source prints a per-user speed (tok/s/user) read as
    TPOT: measured ``1000 / printed tok/s/user`` [ms]; predicted ``1000 / predicted output
    tok/s`` (one stream: its output tok/s is its per-user speed). Metric
    ``TPOT (1000 / tok/s/user)``; the rows stay in the throughput class as well."""
    rows = {cell(r, "id"): r for f in [*FILES, INFERENCEX] for r in read_rows(f)[0]}
    recs = []
    for _, d in df[df["metric"] == "throughput"].iterrows():
        r = rows.get(d["id"])
        if r is None or cell(r, "concurrency") != "1" or cell(r, "metric") != "output_tok_s_total":
            continue
        m = _PER_USER.search(cell(r, "notes"))
        if not m:
            continue
        rec = d.to_dict() | {"metric": "TPOT (1000 / tok/s/user)", "measured": 1e3 / float(m[1])}
        for c in cols:
            rec[c] = 1e3 / d[c] if d[c] == d[c] and d[c] else np.nan
        recs.append(rec)
    return pd.DataFrame(recs, columns=df.columns)


def _stats(g: pd.DataFrame, col: str) -> dict:
    ok = g[g[col].notna()]
    e = ok[col] / ok["measured"] - 1
    return {
        "predicted": len(ok),
        "publishers": ok["source"].map(publisher).nunique(),
        "MdAPE %": round(100 * float(e.abs().median()), 1) if len(ok) else None,
        "median signed %": round(100 * float(e.median()), 1) if len(ok) else None,
    }


def tables(df: pd.DataFrame, cols: list[str]) -> dict[str, pd.DataFrame]:
    """By kind and metric, by source, kind and metric, and the issue's two totals."""
    df = df.assign(kind=df["kind"].map(KINDS))
    out = {}
    for name, by in (("kind", ["kind", "metric"]), ("source", ["source", "kind", "metric"])):
        recs = []
        for key, g in df.groupby(by):
            rec = dict(zip(by, key, strict=True)) | {"rows": len(g)}
            for c in cols:
                rec |= {f"{k} ({c})": v for k, v in _stats(g, c).items()}
            recs.append(rec)
        out[name] = pd.DataFrame(recs)
    recs = []
    per_user = df["metric"] == "TPOT (1000 / tok/s/user)"
    for metric, g in (
        ("throughput", df[df["metric"] == "throughput"]),
        ("TPOT", df[df["metric"] == "TPOT"]),
        ("TPOT incl. 1000 / tok/s/user at batch 1", df[(df["metric"] == "TPOT") | per_user]),
    ):
        rec = {"all speculative + disaggregated": metric, "rows": len(g)}
        for c in cols:
            rec |= {f"{k} ({c})": v for k, v in _stats(g, c).items()}
        recs.append(rec)
    out["total"] = pd.DataFrame(recs)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundled", action="store_true", help="also predict with the bundled profile")
    ap.add_argument("--no-history", action="store_true",
                    help="leave out the history file's disaggregated rows")  # fmt: skip
    ap.add_argument("--csv", help="write the per-row predictions here")
    ap.add_argument("--cache", help="pickle of the held-out profiles: read if it exists, else "
                    "written (only for a change that does not alter what is fitted)")  # fmt: skip
    a = ap.parse_args(argv)
    hist = not a.no_history
    if a.cache and Path(a.cache).exists():
        with open(a.cache, "rb") as fh:
            profiles = pickle.load(fh)
    else:
        profiles = holdout_profiles(issue30_sources())
        if a.cache:
            with open(a.cache, "wb") as fh:
                pickle.dump(profiles, fh)
    held = issue30_rows(disagg_history=hist, profile_for=profiles.get)
    held = held.rename(columns={"predicted": "held out"})
    cols = ["held out"]
    if a.bundled:
        bundled = issue30_rows(disagg_history=hist)[["id", "metric", "predicted"]]
        held = held.merge(bundled.rename(columns={"predicted": "bundled"}), on=["id", "metric"])
        cols.append("bundled")
    held = held.replace([np.inf, -np.inf], np.nan)
    held = pd.concat([held, per_user_tpot(held, cols)], ignore_index=True)
    if a.csv:
        held.to_csv(a.csv, index=False)
    t = tables(held, cols)
    print("## Issue 30 rows held out by source (publishers: InferenceX's two files are one)\n")
    print(_md_table(t["total"]))
    print(_md_table(t["kind"]))
    print(_md_table(t["source"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
