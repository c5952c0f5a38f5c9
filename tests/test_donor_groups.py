"""scripts/donor_groups.py: the before / after tables of a release-donor change
(docs/changes/2026-12-07e/donor.md), checked on hand-made details rows."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import donor_groups  # noqa: E402


def _rows(preds):
    """Four AMD SGLang serving throughput rows measured at 100 and one NVIDIA TPOT row
    measured at 10, predicted as ``preds`` (five values)."""
    base = dict(source="s", framework="sglang", gpu="amd-mi355x", precision="fp8",
                kind="serving", vendor="amd", arch="cdna4", family="moe", provenance="p")  # fmt: skip
    out = []
    for i, p in enumerate(preds):
        tpot = i == 4
        r = {**base, "id": f"r{i}", "metric": "tpot_ms_median" if tpot else "output_tok_s_total",
             "metric_class": "tpot/itl" if tpot else "throughput", "measured": 10.0 if tpot else 100.0,
             "predicted": p}  # fmt: skip
        if tpot:
            r.update(vendor="nvidia", gpu="nvidia-b200", arch="blackwell")
        r["ape"] = abs(p / r["measured"] - 1)
        r["log_err"] = math.log(p / r["measured"])
        out.append(r)
    return pd.DataFrame(out)


def test_tables_by_hand():
    """Before: throughput predicted 90, 110, 120, 100 -> APE 10, 10, 20, 0 %, median 10 %.
    After: the third row moves 120 -> 105 -> APE 10, 10, 5, 0 %, median (5 + 10) / 2 = 7.5 %.
    The TPOT row (11 for 10: 10 %) does not move."""
    before = _rows([90.0, 110.0, 120.0, 100.0, 11.0])
    after = _rows([90.0, 110.0, 105.0, 100.0, 11.0])
    t = donor_groups.tables(before, after)
    g = t["throughput groups"].set_index(["group", "value"])
    amd = g.loc[("target <= 15%", "AMD GPUs")]
    assert (amd["n_before"], amd["mdape_pct_before"], amd["mdape_pct_after"]) == (4, 10.0, 7.5)
    moved = t["moved rows"]
    assert len(moved) == 1 and moved.iloc[0]["n"] == 1
    assert (moved.iloc[0]["mdape_before"], moved.iloc[0]["mdape_after"]) == (20.0, 5.0)
    lat = t["serving latency by vendor"].set_index(["metric_class", "vendor"])
    assert lat.loc[("tpot/itl", "nvidia"), "mdape_pct_after"] == 10.0
