"""MLPerf Llama-2-70B Server and Interactive (tight TPOT): predicted per-GPU throughput at
the scenario's latency limits against the results, per GPU pooled over rounds, per GPU in
its newest round and per GPU within each round, and the pairs of GPUs a round orders one way and the planner the other
(planner/benchmarks/mlperf_latency.py).

Usage: PYTHONPATH=$PWD python scripts/mlperf_tight_tpot.py [-o table.csv] [--rows rows.csv]
       [--at-measured] [--stated-chunked-prefill] [--harness-gemm] [--poisson-per-engine]
       [--prior-round-speed] [--kv-as-assumed] [--harness-attention]

--stated-chunked-prefill takes each row's stated chunked-prefill switch (AMD's V0 configs:
off, prompt-first steps); a what-if, not the planner's default (docs/changes/2026-12-07b/mlperf.md).
--harness-gemm gives the rows whose engine config names a hipBLASLt tuning file (AMD's v5.1
MI325X configs) the GEMM terms of the file's kernel timings (data/mlperf_harness_gemm.yaml);
a what-if, not the default (changes/s8-mlperfint.md). AMD's v6.0 MI355X rows take the AITER
FP4 GEMM tuning lines their harness image patches in (docs/changes/2026-12-10/mlpint.md).
--poisson-per-engine gives each engine its own Poisson stream instead of its share of the
system's stream dealt round robin (mlperf_latency.engine_traffic); the planner's reading
before docs/changes/2026-12-07e/mlpint.md, for comparison.
--prior-round-speed scales each row's GEMM rate by the factor at which the planner reproduces
the same GPU's, engine's and precision's Offline runs of the newest earlier MLPerf round
(mlperf_latency.prior_round_gemm_speed, held out by round); a what-if, not the default
(docs/changes/2026-12-07e/mlpstep.md).
--kv-as-assumed simulates the TensorRT-LLM rows whose engine config sets no KV dtype with the
rows' kv_precision cell (fp8, an assumption) instead of the fp16 KV cache their checkpoint
step leaves (mlperf_latency.UNSTATED_KV_CHECKPOINT_DTYPE off; docs/changes/2026-12-09/mlpint.md).
--harness-attention gives the rows whose harness states its decode-attention kernel (AMD's v6.0
MI355X runs: AITER pa_fwd_asm) the KV streaming rate of a published timing of that kernel
(data/mlperf_harness_attention.yaml; mlperf_latency.HARNESS_ATTENTION on); a what-if, not
the default (docs/changes/2026-12-10/mlpint.md).
"""

from __future__ import annotations

import argparse
import math

import pandas as pd

from planner.benchmarks import mlperf_latency
from planner.benchmarks.io import load_measurements
from planner.benchmarks.mlperf_latency import (
    CONSTRAINTS_S,
    at_measured_rate,
    offline_per_gpu,
    prior_round_gemm_speed,
    scenario_replica,
    tight_tpot_newest,
    tight_tpot_pooled,
    tight_tpot_records,
    tight_tpot_rounds,
)
from planner.benchmarks.mlperf_server_offline import (
    measured_offline_per_gpu,
    server_offline_table,
)
from planner.calibration.accuracy import ordering_pairs
from planner.calibration.fit import public_files_default
from planner.catalog import load_catalog
from planner.catalog.profile import load_profile


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", default="/tmp/mlperf_tight_tpot.csv")
    ap.add_argument("--rows", default="/tmp/mlperf_tight_tpot_rows.csv", help="per-row CSV")
    ap.add_argument(
        "--at-measured",
        action="store_true",
        help="also simulate one row per (scenario, round, GPU) at the rate it ran",
    )
    ap.add_argument(
        "--stated-chunked-prefill",
        action="store_true",
        help="take each row's stated chunked-prefill switch (off: V0 prompt-first steps)",
    )
    ap.add_argument(
        "--harness-gemm",
        action="store_true",
        help="rows whose engine config names a hipBLASLt tuning file take the GEMM terms of "
        "its kernel timings (data/mlperf_harness_gemm.yaml)",
    )
    ap.add_argument(
        "--poisson-per-engine",
        action="store_true",
        help="each engine its own Poisson stream (not its round-robin share of the system's)",
    )
    ap.add_argument(
        "--prior-round-speed",
        action="store_true",
        help="scale each row's GEMM rate to the harness's Offline runs of the earlier round",
    )
    ap.add_argument(
        "--kv-as-assumed",
        action="store_true",
        help="rows whose config sets no KV dtype keep their kv_precision cell (fp8, assumed)",
    )
    ap.add_argument(
        "--harness-attention",
        action="store_true",
        help="rows whose harness states its decode kernel take the KV rate of a published "
        "timing of it (data/mlperf_harness_attention.yaml)",
    )
    ap.add_argument(
        "--server-offline",
        action="store_true",
        help="also split each (scenario, round, GPU) error into the Offline error and the "
        "Server / Offline ratio error (planner/benchmarks/mlperf_server_offline.py)",
    )
    ap.add_argument(
        "--max-utilization",
        type=float,
        default=None,
        help="what-if: the search bound and the Offline cap as this fraction "
        "(mlperf_latency.MAX_UTILIZATION, default 0.95)",
    )
    a = ap.parse_args(argv)
    if a.max_utilization is not None:
        mlperf_latency.MAX_UTILIZATION = a.max_utilization
    if a.kv_as_assumed:
        mlperf_latency.UNSTATED_KV_CHECKPOINT_DTYPE = False
    if a.harness_attention:
        mlperf_latency.HARNESS_ATTENTION = True
    pd.set_option("display.width", 250)
    cat = load_catalog()
    df = load_measurements(public_files_default(), cat)
    prof = load_profile()
    sc = a.stated_chunked_prefill
    hg = a.harness_gemm
    pe = a.poisson_per_engine
    recs = tight_tpot_records(
        df,
        cat,
        prof,
        stated_chunked=sc,
        harness_gemm=hg,
        poisson_per_engine=pe,
        prior_round=a.prior_round_speed,
    )
    recs.to_csv(a.rows, index=False)
    t = tight_tpot_pooled(recs)
    t.to_csv(a.output, index=False)
    print("Per scenario and GPU, pooled over rounds:")
    print(t.to_string())
    print("\nPer scenario and GPU, each GPU's newest round only:")
    print(tight_tpot_newest(recs).to_string())
    r = tight_tpot_rounds(recs)
    print("\nPer scenario and round:")
    print(r.to_string())
    p = ordering_pairs(r)
    print("\nPairs predicted in the wrong order (ranges_overlap: the round's systems do not "
          "separate them):")  # fmt: skip
    print(p.to_string() if len(p) else "none")
    if a.server_offline:
        print("\nServer / Interactive against Offline (same round and GPU; error split):")
        print(offline_split_table(df, recs, cat, prof, sc, hg, pe).round(3).to_string())
    if a.at_measured:
        print("\nSimulated at the rate each submission ran (one row per scenario, round, GPU):")
        print(
            measured_rate_table(
                df, recs, cat, prof, sc, hg, pe, prior_round=a.prior_round_speed
            ).to_string()
        )
    return 0


def offline_split_table(df, recs, cat, prof, stated_chunked=False, harness_gemm=False,
                        poisson_per_engine=False):  # fmt: skip
    """:func:`server_offline_table` of ``recs``, the Offline throughput of each (scenario,
    round, GPU) simulated for the deployment of its first row (:func:`offline_per_gpu`)."""
    pred = {}
    for rec in recs.drop_duplicates(["mode", "round", "gpu"]).to_dict("records"):
        src = df[df["id"] == rec["id"]].iloc[0].to_dict()
        row = {k: "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
               for k, v in src.items()}  # fmt: skip
        _, _, params, _, row = scenario_replica(
            row, cat, prof, stated_chunked, harness_gemm, poisson_per_engine
        )
        pred[(rec["mode"], rec["round"], rec["gpu"])] = offline_per_gpu(row, cat, params)
    return server_offline_table(recs, measured_offline_per_gpu(df), pred)


def measured_rate_table(
    df,
    recs,
    cat,
    prof,
    stated_chunked=False,
    harness_gemm=False,
    poisson_per_engine=False,
    prior_round=False,
):
    """:func:`at_measured_rate` of the first row of each (scenario, round, GPU) (with
    ``prior_round``, at the GEMM rate of :func:`prior_round_gemm_speed`)."""
    out = []
    first = recs.drop_duplicates(["mode", "round", "gpu"])
    for rec in first.to_dict("records"):
        src = df[df["id"] == rec["id"]].iloc[0].to_dict()
        row = {k: "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
               for k, v in src.items()}  # fmt: skip
        r = at_measured_rate(
            row,
            cat,
            prof,
            stated_chunked=stated_chunked,
            harness_gemm=harness_gemm,
            poisson_per_engine=poisson_per_engine,
            gemm_speed=prior_round_gemm_speed(row, df, cat, prof)[0] if prior_round else 1.0,
        )
        limit_ttft, limit_tpot = CONSTRAINTS_S[rec["mode"]]
        out.append(
            {
                "mode": rec["mode"], "round": rec["round"], "gpu": rec["gpu"], "id": rec["id"],
                "rate_per_replica": round(r["rate_rps_per_replica"], 2),
                "ttft_p99_ms": round(1e3 * r["ttft_p99_s"], 1),
                "ttft_limit_ms": 1e3 * limit_ttft,
                "tpot_p99_ms": round(1e3 * r["tpot_p99_s"], 1),
                "tpot_limit_ms": 1e3 * limit_tpot,
                "batch_mean": round(r["batch_mean"], 1),
                "kv_util_mean": round(r["kv_util_mean"], 3),
            }
        )  # fmt: skip
    return pd.DataFrame(out)


if __name__ == "__main__":
    raise SystemExit(main())
