"""vLLM's API server as a queue ahead of the engine: what it would do held out (issue 32, TTFT).

Reads a full ``scripts/latency_rows.py`` CSV (the before, e.g. ``docs/latency_rows.csv``) and
one or more partial runs of the same script (``--source GPUStack --no-scale``), each with
``--frontend-queue-ms MS`` (planner.benchmarks.frontend_queue, OFF in planner). Each partial
run's TTFT / TPOT predictions replace the before's on the same rows; prints, per run:

1. TTFT MdAPE, bias and rows within 20% (all, by engine, by vendor) and TPOT MdAPE / bias;
2. the vLLM offline bursts (every request sent at t = 0): measured run length and the
   single API server's achieved request rate (a lower bound on its ingest rate, so
   1 / rate is an upper bound on its service time per request), mean TTFT / run length
   measured, and the predicted TTFT before and with each service time.

Nothing is simulated here. The run length of a burst is requests x (ISL + OSL) / the run's
measured total token rate (``scripts/ttft_groups.py`` ``burst_table``).

Usage::

    python scripts/latency_rows.py --no-scale --source GPUStack --cache C -o /tmp/gs0.csv
    python scripts/latency_rows.py --no-scale --source GPUStack --cache C \\
        --frontend-queue-ms 4 -o /tmp/gs4.csv
    python scripts/apiserver_sensitivity.py docs/latency_rows.csv 0=/tmp/gs0.csv 4=/tmp/gs4.csv
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd

_spec = importlib.util.spec_from_file_location(
    "ttft_groups", Path(__file__).with_name("ttft_groups.py")
)
tt = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("ttft_groups", tt)
_spec.loader.exec_module(tt)

MISS_PCT = tt.MISS_PCT


def predictions(csv: str | Path) -> pd.DataFrame:
    """id, metric_class, measured and the unscaled prediction ``pred`` of every TTFT and
    TPOT row of a latency_rows CSV (``measured / measured_over_unscaled`` where the CSV
    has it, else ``predicted``)."""
    o = pd.read_csv(csv)
    o = o[o["metric_class"].isin(["ttft", "tpot/itl"])].copy()
    if "measured_over_unscaled" in o:
        o["pred"] = np.where(
            o["metric_class"] == "ttft", o["measured"] / o["measured_over_unscaled"], o["predicted"]
        )
    else:
        o["pred"] = o["predicted"]
    return o


def replace_rows(base: pd.DataFrame, part: pd.DataFrame) -> pd.DataFrame:
    """``base`` with ``pred`` of the rows ``part`` holds (same id) taken from ``part``."""
    out = base.copy()
    p = part.drop_duplicates("id").set_index("id")["pred"]
    sel = out["id"].isin(p.index)
    out.loc[sel, "pred"] = out.loc[sel, "id"].map(p)
    return out


def score(t: pd.DataFrame) -> dict[str, float]:
    """n, MdAPE [%], median error [%] and rows within :data:`MISS_PCT` of rows ``t``."""
    err = (t["pred"] / t["measured"] - 1.0) * 100.0
    return {
        "n": len(t),
        "mdape": float(err.abs().median()),
        "bias": float(err.median()),
        "within": int((err.abs() <= MISS_PCT).sum()),
    }


def score_table(d: pd.DataFrame) -> pd.DataFrame:
    """:func:`score` of TTFT and TPOT rows: all, by engine and by vendor."""
    rows = []
    for mc, name in (("ttft", "TTFT"), ("tpot/itl", "TPOT")):
        m = d[d["metric_class"] == mc]
        rows.append({"part": f"{name} all", **score(m)})
        for col in ("engine", "vendor"):
            for k, g in m.groupby(col):
                rows.append({"part": f"{name} {k}", **score(g)})
    return pd.DataFrame(rows).set_index("part")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base", help="the before: a full latency_rows CSV")
    ap.add_argument("runs", nargs="+", help="LABEL=CSV: partial runs whose rows replace base's")
    a = ap.parse_args(argv)
    base = predictions(a.base)
    runs = {}
    for spec in a.runs:
        label, _, path = spec.partition("=")
        runs[label] = predictions(path)
    for label, part in runs.items():
        d = replace_rows(base, part)
        print(f"== {label}: {part['id'].nunique()} rows replaced\n"
              f"{score_table(d).round(1).to_string()}\n")  # fmt: skip
    # the vLLM bursts: run length, achieved request rate, TTFT / length, predictions
    first = next(iter(runs.values()))
    b = first[(first["metric_class"] == "ttft") & (first["mode"] == "offline")]
    if "total_tok_s_pred" not in b:
        return 0
    bt = tt.burst_table(b.assign(err=0.0), tt._raw(tt.RAW_GLOB))
    if bt.empty:
        return 0
    bt = bt.set_index("id")
    bt["req_s_measured"] = bt["n_requests"] / bt["len_s_measured"]
    cols = ["engine", "model", "gpu", "tp", "isl", "n_requests", "len_s_measured",
            "req_s_measured", "ttft_over_len_measured"]  # fmt: skip
    out = bt[cols].copy()
    out["ttft_ms_measured"] = b.set_index("id")["measured"]
    for label, part in runs.items():
        out[f"pred_{label}"] = part.drop_duplicates("id").set_index("id")["pred"]
    out = out.sort_values(["engine", "isl", "req_s_measured"])
    print(f"== offline bursts\n{out.round(2).to_string()}\n")
    v = out[out["engine"] == "vllm"]
    if len(v):
        top = v["req_s_measured"].max()
        print(f"vLLM bursts: the fastest run served {top:.0f} req/s through one API server, so "
              f"its service time is at most {1e3 / top:.2f} ms per request\n")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
