"""Diagnosis: refit held-out folds with some training rows left out, and compare the held-out
latency predictions with a base run (changes/s8-nvtpot.md).

A held-out row is predicted from nodes fitted on the other sources' rows. When a node is
taught by a few rows, this script says how much those rows set the prediction: it runs
``scripts/latency_rows.py`` with the rows named by ``--drop-ids`` (benchmark ids) and / or
``--drop`` (``SOURCE_PREFIX:ENGINE``, e.g. ``dstack:sglang``) removed from every fold's
training data (they are not predicted either), in a cache of its own, then prints MdAPE and
median bias before / after by vendor, engine, GPU and precision for the rows both runs hold.

It answers "what if these rows were not there", not "what should be fitted": a row is left
out of the data only with a source that says the run did not serve what its columns state
(``workload_mismatch`` in planner/benchmarks/README.md). Scoring a source after choosing
rows to leave out by that source's errors is tuning on the scored rows.

With ``--source``, trtllm-serve's first-token latency is fitted on that source's rows only
(``latency_rows._first_token_loso`` over the rows kept), so the TTFT of TensorRT-LLM rows is
not comparable with a base run over every source; TPOT is.

Usage::

    PYTHONPATH=$PWD python scripts/latency_rows.py --no-scale -o /tmp/base.csv --cache C
    PYTHONPATH=$PWD python scripts/fold_without_rows.py --base /tmp/base.csv \\
        --drop dstack:sglang --source "InferenceX (InferenceMAX)" \\
        --cache /tmp/nodstack.pkl -o /tmp/nodstack.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import latency_rows  # noqa: E402


def dropper(ids: set[str], source_engines: list[tuple[str, str]]):
    """A predicate on prepared rows: True for a row to leave out (its id in ``ids``, or its
    source starting with a prefix of ``source_engines`` and its engine the one paired)."""

    def drop(r) -> bool:
        if str(r.id) in ids:
            return True
        return any(r.source.startswith(s) and r.framework == e for s, e in source_engines)

    return drop


def compare(base: pd.DataFrame, after: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """MdAPE and median bias [%] before (``base``) / after, by metric class, then by vendor,
    engine, GPU and precision, over the (id, metric) rows both CSVs hold."""
    k = ["id", "metric"]
    m = base.merge(after[k + ["err_pct"]], on=k, suffixes=("", "_after"))
    m = m.assign(ape=m["err_pct"].abs(), ape_after=m["err_pct_after"].abs())
    out = {}
    for mc, t in m.groupby("metric_class"):
        out[mc] = (
            t.groupby(["vendor", "engine", "gpu", "precision"])
            .agg(
                n=("ape", "size"),
                mdape_before=("ape", "median"),
                mdape_after=("ape_after", "median"),
                bias_before=("err_pct", "median"),
                bias_after=("err_pct_after", "median"),
            )
            .round(1)
        )
        out[mc].loc[("all", "", "", "")] = [
            len(t), round(t["ape"].median(), 1), round(t["ape_after"].median(), 1),
            round(t["err_pct"].median(), 1), round(t["err_pct_after"].median(), 1),
        ]  # fmt: skip
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="latency_rows.py CSV of the full data")
    ap.add_argument("--drop-ids", default="", help="comma-separated benchmark ids")
    ap.add_argument("--drop", action="append", default=[], help="SOURCE_PREFIX:ENGINE")
    ap.add_argument("--source", default="", help="held-out sources to score (substring)")
    ap.add_argument("--cache", required=True, help="a pickle of its own (never the base's)")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    pairs = [tuple(x.rsplit(":", 1)) for x in a.drop]
    drop = dropper({x for x in a.drop_ids.split(",") if x}, pairs)
    orig = latency_rows.prepare_rows

    def prepare(df, cat):
        return [r for r in orig(df, cat) if not drop(r)]

    latency_rows.prepare_rows = prepare
    args = ["--no-scale", "--cache", a.cache, "-o", a.output]
    if a.source:
        args += ["--source", a.source]
    latency_rows.main(args)
    with pd.option_context("display.width", 250, "display.max_rows", 200):
        for mc, t in compare(pd.read_csv(a.base), pd.read_csv(a.output)).items():
            print(f"== {mc}: before (base) / after (rows left out)")
            print(t.to_string(), "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
