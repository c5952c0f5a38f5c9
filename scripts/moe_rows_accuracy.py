"""What the planner makes of the MLPerf / blog MoE rows (public_mlperf_moe.csv, public_blogs_moe.csv).

Three tables:

1. rows by source and layout kind (TP, TP+EP, DEP / DP-attention, disaggregated, speculative)
   and metric class, with how many the planner predicts;
2. leave-one-source-out errors of the predicted rows (``scripts/ep_accuracy.py``'s
   ``evaluate``: each source refitted without its own rows), by layout kind;
3. speculative decoding: the measured speed-up of each MTP row over its baseline without MTP
   (``planner.benchmarks.speculative_rows.spec_pairs``) and the predicted one
   (``predicted_ratio``), once with the acceptance length the source prints and once with the
   DeepSeek-V3 report's prior (K = 1: AL 1.875, i.e. a per-position rate of 0.875 in a chain
   of K drafts).

Usage (from the repository root; a few minutes on two cores)::

    python scripts/moe_rows_accuracy.py
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

from planner.benchmarks.io import read_rows  # noqa: E402
from planner.benchmarks.predict import Predictor  # noqa: E402
from planner.benchmarks.schema import cell  # noqa: E402
from planner.benchmarks.speculative_rows import (  # noqa: E402
    chain_acceptance_length,
    predicted_ratio,
    spec_pairs,
)
from planner.calibration.accuracy import _md_table  # noqa: E402
from planner.catalog.catalog import load_catalog  # noqa: E402
from planner.catalog.profile import model_family, resolve_efficiency  # noqa: E402

FILES = [
    ROOT / "data/benchmarks/public_mlperf_moe.csv",
    ROOT / "data/benchmarks/public_blogs_moe.csv",
]
#: the new sources with rows the planner predicts (held out one at a time)
PREDICTED_SOURCES = (
    "TensorRT-LLM DeepSeek-R1 best-performance guide",
    "TensorRT-LLM tech blog 1: DeepSeek-R1 min-latency on B200",
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
    return (
        "TPOT"
        if metric.startswith(("tpot", "itl"))
        else ("TTFT" if metric.startswith("ttft") else "throughput")
    )


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


def spec_table() -> pd.DataFrame:
    cat = load_catalog()
    rows = [r for f in FILES for r in read_rows(f)[0]]
    recs = []
    for p in spec_pairs(rows):
        b = p.base_rows[0]
        m = cat.model_ref(cell(b, "model"), None)
        params, _ = resolve_efficiency(
            cell(b, "hardware"), cell(b, "framework"), cat.precision(cell(b, "precision")).id,
            None, cat, model_family(m),
        )  # fmt: skip
        al_src = re.search(r"Acceptance Rate ([\d.]+)", cell(p.spec_row, "notes"))
        al_prior = chain_acceptance_length(PRIOR_RATE, p.spec_tokens)
        r_src = predicted_ratio(p, float(al_src.group(1)), cat, params)[0] if al_src else None
        r_prior, why = predicted_ratio(p, al_prior, cat, params)
        recs.append(
            {
                "id": cell(p.spec_row, "id"),
                "K": p.spec_tokens,
                "measured ratio": round(p.measured_ratio, 3),
                "AL (source)": float(al_src.group(1)) if al_src else None,
                "predicted (source AL)": round(r_src, 3) if r_src else None,
                "error (source AL) %": round(100 * (r_src / p.measured_ratio - 1), 1)
                if r_src
                else None,
                "AL (prior)": round(al_prior, 2),
                "predicted (prior AL)": round(r_prior, 3) if r_prior else why,
                "error (prior AL) %": round(100 * (r_prior / p.measured_ratio - 1), 1)
                if r_prior
                else None,
            }
        )
    return pd.DataFrame(recs)


def main() -> int:
    print("## Rows by source, layout kind and metric\n")
    print(_md_table(counts()))
    print("## Speculative decoding: MTP rows over their baseline\n")
    print(_md_table(spec_table()))
    print("## Leave-one-source-out errors of the predicted rows, by layout kind\n")
    loso = evaluate(sources=PREDICTED_SOURCES)
    cols = ["id", "source", "gpu", "metric", "measured", "predicted", "ape", "layout_kind"]
    print(_md_table(loso[[c for c in cols if c in loso]]))
    print(_md_table(kind_table(loso)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
