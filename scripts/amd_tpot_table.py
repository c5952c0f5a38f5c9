"""Where the AMD serving TPOT error sits (issue 32, "Done when" item 1, TPOT half;
changes/s8-amdtpot.md).

Two tables:

1. **Closed-loop identities of the measured runs** (no prediction): for every closed-loop
   serving run of ``data/benchmarks/public*.csv`` that states TTFT, TPOT, E2E and output
   throughput at one concurrency ``C``, with ``n`` the mean output tokens of a request
   (``osl``, or ``random_output_len x (1 + random_range_ratio) / 2`` from the notes):

   * ``e2e_identity = E2E / (TTFT + (n - 1) x TPOT)``: 1 when the three latencies are of the
     same requests and TPOT excludes the first token;
   * ``loop_identity = output tok/s x E2E / (C x n)``: 1 for a closed loop of ``C`` clients
     with no gap between a reply and the next request (a median E2E and client gaps put it a
     few % below 1).

   A run far from 1 mixes definitions or phases (a mean TPOT raised by prefill stalls that
   the median does not see, an E2E of other requests, a throughput over a ramp).

2. **Held-out TPOT by group** from ``scripts/latency_rows.py``'s CSV (``--rows``; with
   ``--before``, the same table of a CSV made with ``--no-release``): rows, MdAPE, bias and
   median predicted / measured by source, GPU, engine release and the release whose node
   predicted it, and by concurrency.

Usage::

    PYTHONPATH=$PWD python scripts/latency_rows.py --no-scale -o /tmp/after.csv
    PYTHONPATH=$PWD python scripts/latency_rows.py --no-scale --no-release -o /tmp/before.csv
    PYTHONPATH=$PWD python scripts/amd_tpot_table.py --rows /tmp/after.csv --before /tmp/before.csv
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.calibration.fit import public_files_default  # noqa: E402

_OUT_LEN = re.compile(r"random_output_len=(\d+)")
_RANGE = re.compile(r"random_range_ratio=([0-9.]+)|random_range_ratio (1)\b")
#: the metrics of one run that the identities read (mean or median, whichever the run states)
_METRICS = {"ttft": ("ttft_ms_median", "ttft_ms_mean"), "tpot": ("tpot_ms_median", "tpot_ms_mean"),
            "e2e": ("e2e_ms_median", "e2e_ms_mean"), "out_tok_s": ("output_tok_s_total",)}  # fmt: skip
_RUN_KEYS = ["source", "hardware", "framework", "framework_version", "model", "precision", "tp",
             "ep", "attention_dp", "isl", "osl", "concurrency", "as_of", "run"]  # fmt: skip
#: the part of a row's notes that names its own metric (``tpot_ms_median = median_tpot ...;``):
#: the rest of the notes is the run's
_OWN_METRIC = re.compile(r"\b(?:ttft|tpot|itl|e2e|output_tok_s|total_tok_s)\w* = [^;]*;?")


def mean_output_tokens(osl: str, notes: str) -> float:
    """Mean output tokens of a request [tokens]: ``osl`` when the row states it, else the
    client's ``random_output_len x (1 + random_range_ratio) / 2`` (uniform lengths between
    ratio x len and len, InferenceX's benchmark_serving.py), NaN when neither is stated."""
    try:
        v = float(osl)
        if v > 0:
            return v
    except ValueError:
        pass
    m = _OUT_LEN.search(notes)
    if m is None:
        return math.nan
    r = _RANGE.search(notes)
    ratio = float(next(g for g in r.groups() if g)) if r else 1.0
    return float(m.group(1)) * (1.0 + ratio) / 2.0


def identities(ttft_ms: float, tpot_ms: float, e2e_ms: float, out_tok_s: float,
               concurrency: float, n_out: float) -> tuple[float, float]:  # fmt: skip
    """(``E2E / (TTFT + (n - 1) TPOT)``, ``throughput x E2E / (C x n)``) of one closed-loop
    run (module docstring); times [ms], output throughput [tok/s] over the whole replica."""
    e2e_id = e2e_ms / (ttft_ms + (n_out - 1.0) * tpot_ms)
    loop_id = out_tok_s * (e2e_ms / 1e3) / (concurrency * n_out)
    return e2e_id, loop_id


def run_identities(df: pd.DataFrame) -> pd.DataFrame:
    """One line per closed-loop run of ``df`` (benchmark rows as strings) with the four
    metrics: its keys, the values read, ``n_out`` and both identities."""
    d = df[df["mode"] == "concurrency"].copy()
    d = d.fillna("")
    d["run"] = [_OWN_METRIC.sub("", n).strip() for n in d["notes"]]
    recs = []
    for key, g in d.groupby(_RUN_KEYS, sort=False):
        by = dict(zip(g["metric"], g["value"], strict=False))
        vals = {}
        for name, names in _METRICS.items():
            hit = next((m for m in names if m in by), None)
            vals[name] = float(by[hit]) if hit else math.nan
            vals[name + "_metric"] = hit or ""
        n_out = mean_output_tokens(key[_RUN_KEYS.index("osl")], g["notes"].iloc[0])
        if any(math.isnan(vals[k]) for k in _METRICS) or math.isnan(n_out):
            continue
        e2e_id, loop_id = identities(vals["ttft"], vals["tpot"], vals["e2e"], vals["out_tok_s"],
                                     float(key[_RUN_KEYS.index("concurrency")]), n_out)  # fmt: skip
        recs.append({**dict(zip(_RUN_KEYS, key, strict=True)), **vals, "n_out": n_out,
                     "e2e_identity": e2e_id, "loop_identity": loop_id})  # fmt: skip
    out = pd.DataFrame(recs)
    if len(out):
        out["vendor"] = np.where(out["hardware"].str.startswith("amd"), "amd", "nvidia")
    return out


def identity_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Median identities and their spread by source, vendor, GPU and TPOT statistic."""
    g = runs.groupby(["source", "vendor", "hardware", "tpot_metric"])
    return g.agg(
        runs=("e2e_identity", "size"),
        e2e_identity=("e2e_identity", "median"),
        e2e_identity_min=("e2e_identity", "min"),
        e2e_identity_max=("e2e_identity", "max"),
        loop_identity=("loop_identity", "median"),
        loop_identity_min=("loop_identity", "min"),
        loop_identity_max=("loop_identity", "max"),
    ).round(3)


def error_table(rows: pd.DataFrame, by: list[str], metric_class: str = "tpot/itl"):
    """Rows, MdAPE [%], bias [%] and median predicted / measured of ``metric_class`` rows of
    a latency_rows CSV, grouped by ``by``."""
    t = rows[rows["metric_class"] == metric_class].copy()
    t["ape"] = t["err_pct"].abs()
    t["ratio"] = t["predicted"] / t["measured"]
    for c in by:
        t[c] = [("" if isinstance(v, float) and math.isnan(v) else str(v)) for v in t[c]]
    return t.groupby(by).agg(n=("ape", "size"), mdape_pct=("ape", "median"),
                             bias_pct=("err_pct", "median"), ratio=("ratio", "median")).round(2)  # fmt: skip


def _short(rows: pd.DataFrame) -> pd.DataFrame:
    rows = rows.copy()
    rows["source"] = rows["source"].str.slice(0, 32)
    rows["release"] = rows["release"].fillna("").astype(str).str.split(" ").str[0]
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", help="scripts/latency_rows.py's CSV (held-out predictions)")
    ap.add_argument("--before", help="the same CSV made with --no-release (the before)")
    ap.add_argument("--vendor", default="amd", help="vendor of the error tables (default amd)")
    ap.add_argument("--save-runs", help="write the per-run identities to this CSV")
    a = ap.parse_args(argv)
    df = pd.concat(
        [pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default()]
    )
    runs = run_identities(df)
    if a.save_runs:
        runs.to_csv(a.save_runs, index=False, float_format="%.4g")
    with pd.option_context("display.width", 250, "display.max_rows", 500):
        print("== closed-loop identities of the measured runs")
        print(identity_table(runs).to_string(), "\n")
        for label, path in (("before (--no-release)", a.before), ("after", a.rows)):
            if not path:
                continue
            rows = _short(pd.read_csv(path))
            print(f"== held-out TPOT, {label}: by vendor and engine")
            print(error_table(rows, ["vendor", "engine"]).to_string(), "\n")
            mine = rows[rows["vendor"] == a.vendor]
            print(f"== {a.vendor}: by source, GPU, release and the release whose node predicted it")
            by = ["source", "engine", "gpu", "release"]
            if "release_used" in mine:
                by.append("release_used")
            print(error_table(mine, by).to_string(), "\n")
            print(f"== {a.vendor}: by source, GPU and concurrency")
            print(error_table(mine, ["source", "gpu", "concurrency"]).to_string(), "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
