"""What the simulator ran for each MLPerf DeepSeek-R1 Server row, held out by source (issue 29:
TPOT of the EP / DEP rows): one line per (round, system) with the rate, the harness'
``stream_interval``, measured and predicted TPOT / TTFT / output tok/s, and the decoding
sequences per attention-DP rank, measured (Little's law: output tok/s x mean TPOT / GPUs, one
rank per GPU in these DEP8 layouts) and simulated (completed req/s x mean decode time / GPUs).

The predictions are the ones ``planner validate --holdout`` makes (the same fits and
``accuracy.serving_predictions``): the script wraps ``accuracy._serving_value`` to keep
``serving_row_details`` of each prediction. Usage (repository root, ~1 min)::

    PYTHONPATH=$PWD python scripts/mlperf_r1_diagnosis.py [--csv OUT.csv]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from planner.benchmarks import serving_rows  # noqa: E402
from planner.calibration import accuracy  # noqa: E402
from planner.calibration.fit import own_files_default, public_files_default  # noqa: E402

SOURCES = ("MLPerf Inference v5.1 DeepSeek-R1", "MLPerf Inference v6.0 DeepSeek-R1")
KEYS = ("output_tok_s_total", "tpot_ms_mean", "tpot_ms_p99", "ttft_ms_mean", "req_s",
        "e2e_ms_mean", "queue_growth")  # fmt: skip


def run(sources=SOURCES) -> pd.DataFrame:
    """One record per held-out Server row id: its cells and the simulation's metrics."""
    seen: dict[str, dict] = {}
    value = accuracy._serving_value

    def keep(record, catalog, params, scale):
        v = value(record, catalog, params, scale)
        rid = str(record["id"])
        if str(record.get("mode")) == "server" and rid not in seen:
            d = serving_rows.serving_row_details(record, catalog, params, prefill_scale=scale)
            seen[rid] = {"id": rid, **{f"sim_{k}": d.get(k) for k in KEYS}}
        return v

    accuracy._serving_value = keep
    try:
        res = accuracy.run_validation(
            public_files_default(), own_files_default(), kfold=False, holdout=list(sources)
        )
    finally:
        accuracy._serving_value = value
    loso = res["loso"]
    raw = pd.concat(
        pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default()
    ).set_index("id")
    pred = loso.pivot_table(index="id", columns="metric", values="predicted", aggfunc="first")
    out = []
    for rid, sim in seen.items():
        r = raw.loc[rid]
        # the row group of one run: the rows that share its source_detail
        group = raw[raw["source_detail"] == r["source_detail"]]
        meas = dict(zip(group["metric"], pd.to_numeric(group["value"]), strict=True))
        ids = dict(zip(group["metric"], group.index, strict=True))
        si = re.search(r"stream_interval (\d+) \(", r["notes"])
        n = float(r["n_gpus"])
        rec = {
            "round": r["source"].split()[2],
            "system": r["source_detail"].split("/results/")[1].split("/deepseek-r1")[0],
            "gpu": r["hardware"],
            "n_gpus": int(n),
            "qps": float(r["request_rate"]),
            "stream_interval": int(si.group(1)) if si else None,
        }
        for m in ("output_tok_s_total", "tpot_ms_mean", "tpot_ms_p99", "ttft_ms_mean"):
            rec[f"meas_{m}"] = meas.get(m)
            p = pred.loc[ids[m], m] if m in ids and ids[m] in pred.index else None
            rec[f"pred_{m}"] = p
        rec["meas_decoding_per_rank"] = meas["output_tok_s_total"] * meas["tpot_ms_mean"] / 1e3 / n
        dec_s = (sim["sim_e2e_ms_mean"] - sim["sim_ttft_ms_mean"]) / 1e3
        rec["sim_decoding_per_rank"] = sim["sim_req_s"] * dec_s / n
        rec["sim_queue_growth"] = sim["sim_queue_growth"]
        out.append(rec)
    return pd.DataFrame(out).drop_duplicates(["round", "system", "qps"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", help="also write the table here")
    a = ap.parse_args(argv)
    t = run().sort_values(["round", "gpu", "qps"])
    pd.set_option("display.width", 250)
    print(t.round(1).to_string(index=False))
    if a.csv:
        t.to_csv(a.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
