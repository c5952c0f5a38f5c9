"""Before / after of a release-donor change on two ``planner validate --details`` CSVs
(docs/changes/2026-12-07e/donor.md): docs/accuracy.md's first tables (metric class x kind; throughput by
vendor, framework, family and the issue targets), serving TTFT / TPOT by engine and vendor,
and the groups of rows whose prediction moved.

Usage::

    PYTHONPATH=$PWD python scripts/donor_groups.py BEFORE.csv AFTER.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.calibration.accuracy import error_table, group_table  # noqa: E402


def side_by_side(before: pd.DataFrame, after: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``before`` and ``after`` (error tables with the same ``keys``) joined: n, MdAPE and
    bias of each."""
    cols = [*keys, "n", "mdape_pct", "bias_pct"]
    return before[cols].merge(after[cols], on=keys, how="outer", suffixes=("_before", "_after"))


def tables(before: pd.DataFrame, after: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The before / after tables of the module docstring."""
    out = {
        "metric class x kind": side_by_side(
            error_table(before, ["metric_class", "kind"]),
            error_table(after, ["metric_class", "kind"]),
            ["metric_class", "kind"],
        ),
        "throughput groups": side_by_side(
            group_table(before), group_table(after), ["group", "value"]
        ),
    }
    for col in ("framework", "vendor"):
        sb, sa = (d[(d["kind"] == "serving") & d["metric_class"].isin(["ttft", "tpot/itl"])]
                  for d in (before, after))  # fmt: skip
        out[f"serving latency by {col}"] = side_by_side(
            error_table(sb, ["metric_class", col]),
            error_table(sa, ["metric_class", col]),
            ["metric_class", col],
        )
    k = ["id", "metric"]
    m = before.merge(after[[*k, "predicted", "ape", "provenance"]], on=k, suffixes=("", "_a"))
    moved = m[np.abs(m["predicted_a"] / m["predicted"] - 1) > 1e-3]
    out["moved rows"] = (
        moved.groupby(["source", "gpu", "framework", "precision", "metric_class"])
        .agg(n=("ape", "size"), mdape_before=("ape", "median"), mdape_after=("ape_a", "median"))
        .mul({"n": 1, "mdape_before": 100, "mdape_after": 100})
        .round(1)
        .reset_index()
    )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    a = ap.parse_args(argv)
    before, after = pd.read_csv(a.before), pd.read_csv(a.after)
    with pd.option_context("display.width", 250, "display.max_rows", 400):
        for name, t in tables(before, after).items():
            print(f"== {name}\n{t.to_string(index=False)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
