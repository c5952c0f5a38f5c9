"""Where the NVIDIA serving TPOT error sits (issue 32, "Done when" item 1, TPOT half;
changes/s8-nvtpot.md).

Reads ``scripts/latency_rows.py``'s CSV (held-out predictions, one line per row and metric)
and prints, for the NVIDIA TensorRT-LLM and SGLang TPOT / ITL rows (``--engines``):

* rows, MdAPE, median bias and median predicted / measured by source, GPU, engine release
  and the release / node that predicted it (``provenance``), by model family (dense / MoE),
  by layout (TP, EP, attention-DP, joined from the benchmark rows by ``id``), by concurrency
  or request rate, by ISL / OSL, and the share of rows predicted too slow (sign);
* the closed-loop identities of the NVIDIA runs (``amd_tpot_table.run_identities``:
  ``E2E / (TTFT + (n - 1) TPOT)`` and ``throughput x E2E / (C x n)``), so that a group whose
  TPOT misses can be told apart from one whose rows mix TPOT definitions or phases;
* with ``--before``, the same headline table of a second CSV (the before).

Usage::

    PYTHONPATH=$PWD python scripts/latency_rows.py --no-scale -o /tmp/after.csv
    PYTHONPATH=$PWD python scripts/nv_tpot_table.py --rows /tmp/after.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from amd_tpot_table import error_table, identity_table, run_identities  # noqa: E402

from planner.calibration.fit import public_files_default  # noqa: E402

#: the groupings printed, in order (each a list of CSV / joined columns)
GROUPS = (
    ["source", "engine"],
    ["source", "engine", "gpu", "precision", "release", "provenance"],
    ["engine", "family"],
    ["engine", "layout"],
    ["source", "engine", "load"],
    ["source", "engine", "lengths"],
)


def layout_label(tp: str, ep: str, adp: str) -> str:
    """``TP8``, ``TP8 EP8``, ``DEP8`` (attention-DP 8, EP 8) or ``ADP8`` (attention-DP 8, MoE
    TP) from a benchmark row's ``tp`` / ``ep`` / ``attention_dp`` cells (empty = 1)."""

    def whole(v: str) -> int:
        try:
            return max(int(float(v)), 1)
        except (TypeError, ValueError):
            return 1

    t, e, a = whole(tp), whole(ep), whole(adp)
    if a > 1:
        return f"DEP{a}" if e > 1 else f"ADP{a}"
    return f"TP{t} EP{e}" if e > 1 else f"TP{t}"


def nvidia_rows(rows: pd.DataFrame, bench: pd.DataFrame, engines: list[str]) -> pd.DataFrame:
    """The NVIDIA TPOT / ITL rows of ``engines`` in a latency_rows CSV, with the columns the
    tables group by: ``layout`` (from the benchmark rows ``bench``, indexed by id), ``load``
    (``c<concurrency>`` or ``r<rate>``), ``lengths`` (``isl/osl``), short ``source`` and
    ``release`` names."""
    t = rows[(rows["vendor"] == "nvidia") & rows["engine"].isin(engines)].copy()
    t = t[t["metric_class"] == "tpot/itl"]
    b = bench.reindex(t["id"].astype(str))
    t["layout"] = [layout_label(*x) for x in zip(b["tp"], b["ep"], b["attention_dp"], strict=True)]

    def num(v) -> str:
        return "" if pd.isna(v) or v == "" else f"{float(v):g}"

    t["load"] = [
        f"c{num(c)}" if num(c) else (f"r{num(r)}" if num(r) else "")
        for c, r in zip(t["concurrency"], t["rate"], strict=True)
    ]
    t["lengths"] = [f"{num(i)}/{num(o)}" for i, o in zip(t["isl"], t["osl"], strict=True)]
    t["source"] = t["source"].str.slice(0, 30)
    t["release"] = t["release"].fillna("").astype(str).str.split(" ").str[0].str.slice(0, 16)
    t["provenance"] = t["provenance"].fillna("").astype(str).str.slice(0, 60)
    return t


def sign_table(t: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Share of rows predicted too slow (predicted > measured) [%] and within 15 % [%]."""
    g = t.assign(slow=(t["err_pct"] > 0) * 100.0, within15=(t["err_pct"].abs() <= 15) * 100.0)
    return g.groupby(by).agg(n=("slow", "size"), slow_pct=("slow", "mean"),
                             within15_pct=("within15", "mean")).round(1)  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", required=True, help="scripts/latency_rows.py's CSV")
    ap.add_argument("--before", help="a second CSV: its headline table is printed first")
    ap.add_argument("--engines", default="trtllm,sglang", help="engines (default trtllm,sglang)")
    a = ap.parse_args(argv)
    engines = a.engines.split(",")
    bench = pd.concat(
        [pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default()]
    ).set_index("id")
    with pd.option_context("display.width", 250, "display.max_rows", 500):
        if a.before:
            t0 = nvidia_rows(pd.read_csv(a.before), bench, engines)
            print("== before: by source and engine")
            print(error_table(t0, GROUPS[0]).to_string(), "\n")
        t = nvidia_rows(pd.read_csv(a.rows), bench, engines)
        print(f"== NVIDIA {'/'.join(engines)} TPOT: {len(t)} rows, MdAPE "
              f"{t['err_pct'].abs().median():.1f} %, bias {t['err_pct'].median():+.1f} %\n")  # fmt: skip
        for by in GROUPS:
            print("== by", ", ".join(by))
            print(error_table(t, by).to_string(), "\n")
        print("== sign and share within 15 %, by source and engine")
        print(sign_table(t, ["source", "engine"]).to_string(), "\n")
        runs = run_identities(bench.reset_index())
        runs = runs[(runs["vendor"] == "nvidia")]
        print("== closed-loop identities of the NVIDIA runs")
        print(identity_table(runs).to_string(), "\n")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
