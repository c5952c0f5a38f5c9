"""What-if, a diagnosis only: MLPerf v6.0 DeepSeek-R1 DEP8 Server rows simulated from a
pre-filled replica (docs/changes/2026-12-07e/b200dep.md).

``scripts/dep_operating_points.py`` finds two stable operating points of the step model at
some of these rows' rates, on either side of the CUDA-graph jump from 256 to 384 sequences a
rank. The simulator starts empty and settles on the lower one; the measured runs sit on the
upper one. This script reruns the held-out simulation of the given rows (the parameters and
prefill scale ``planner validate --holdout`` uses, kept by wrapping
``accuracy._serving_value`` as ``scripts/mlperf_r1_diagnosis.py`` does) with the first
``N0`` of the Poisson arrivals moved to t = 0, so the decode batch starts near ``N0`` (a
burst of prompts, then the same arrivals), and prints the scored TPOT, output tok/s and
decoding sequences a rank (completed req/s x mean decode time / 8). Nothing in the planner
changes: the rows' predictions are the ``N0 = 0`` lines.

``--score F`` instead scores a rule over whole sources, held out one source at a time: every
Server row of the MLPerf DeepSeek-R1 sources is simulated from a replica pre-filled with ``F``
times the decoding sequences of its empty-start run (its upper operating point where the step
model has one), against the empty start of the same run; MdAPE and median predicted /
measured by source and metric (docs/changes/2026-12-07e/b200dep.md: F = 1.5 makes v6.0 TPOT worse).

Usage (repository root, about 3 min on two shared cores; ``--score`` about 6 min)::

    PYTHONPATH=$PWD python scripts/dep_prefilled_start.py [--ids mlds60-0029,...] [--bursts 0,1600]
    PYTHONPATH=$PWD python scripts/dep_prefilled_start.py --score 1.5
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.benchmarks import serving_rows  # noqa: E402
from planner.calibration import accuracy  # noqa: E402
from planner.calibration.fit import own_files_default, public_files_default  # noqa: E402
from planner.catalog.catalog import load_catalog  # noqa: E402

SOURCE = "MLPerf Inference v6.0 DeepSeek-R1"
SOURCES_SCORED = (SOURCE, "MLPerf Inference v5.1 DeepSeek-R1")
IDS = "mlds60-0023,mlds60-0029,mlds60-0052,mlds60-0064"  # TPOT-mean rows of the bistable runs


def held_out_inputs(ids: set[str]) -> dict[str, tuple]:
    """{row id: (record, params, prefill scale)} as the held-out validation predicts them."""
    keep: dict[str, tuple] = {}
    value = accuracy._serving_value

    def wrap(record, catalog, params, scale):
        rid = str(record["id"])
        if rid in ids and rid not in keep:
            keep[rid] = (dict(record), params, scale)
        return value(record, catalog, params, scale)

    accuracy._serving_value = wrap
    try:
        accuracy.run_validation(
            public_files_default(), own_files_default(), kfold=False, holdout=[SOURCE]
        )
    finally:
        accuracy._serving_value = value
    return keep


def with_burst(record, catalog, params, scale, n0: int) -> dict:
    """The row's simulated details with the first ``n0`` arrivals at t = 0."""
    orig = serving_rows.make_requests

    def burst(a, i, o, context_limit=None):
        if n0 and len(a) > 1:
            k = min(n0, len(a) - 1)
            a = np.concatenate([np.zeros(k), a[: len(a) - k]])
        return orig(a, i, o, context_limit=context_limit)

    serving_rows.make_requests = burst
    serving_rows._ROW_CACHE.clear()
    try:
        return serving_rows.serving_row_details(record, catalog, params, prefill_scale=scale)
    finally:
        serving_rows.make_requests = orig
        serving_rows._ROW_CACHE.clear()


def replicas_of(record) -> int:
    """Replicas of a row: its GPUs over the layout's width ``max(tp, ep, tp x attention_dp)``."""
    tp = float(record.get("tp") or 0) or 1.0
    ep = float(record.get("ep") or 0) or 1.0
    dp = float(record.get("attention_dp") or 0) or 1.0
    return max(1, round(float(record["n_gpus"]) / max(tp, ep, tp * dp)))


def score(factor: float, sources=SOURCES_SCORED) -> pd.DataFrame:
    """MdAPE [%] and median predicted / measured by (source, metric), empty start vs a start
    pre-filled with ``factor`` x the empty run's decoding sequences (Server rows only)."""
    value = accuracy._serving_value
    memo: dict = {}

    def prefilled(record, catalog, params, scale):
        if str(record.get("mode")) != "server":
            return value(record, catalog, params, scale)
        key = (record.get("source_detail"), id(params), scale)
        if key not in memo:
            serving_rows._ROW_CACHE.clear()
            d = serving_rows.serving_row_details(record, catalog, params, prefill_scale=scale)
            memo[key] = d["req_s"] * (d["e2e_ms_mean"] - d["ttft_ms_mean"]) / 1e3
        n0 = int(factor * memo[key] / replicas_of(record))
        orig = serving_rows.make_requests

        def burst(a, i, o, context_limit=None):
            if n0 and len(a) > 1:
                k = min(n0, len(a) - 1)
                a = np.concatenate([np.zeros(k), a[: len(a) - k]])
            return orig(a, i, o, context_limit=context_limit)

        serving_rows.make_requests = burst
        serving_rows._ROW_CACHE.clear()
        try:
            return value(record, catalog, params, scale)
        finally:
            serving_rows.make_requests = orig
            serving_rows._ROW_CACHE.clear()

    out = []
    for tag, fn in (("empty", value), (f"x{factor:g}", prefilled)):
        for src in sources:
            accuracy._serving_value = fn
            serving_rows._ROW_CACHE.clear()
            try:
                res = accuracy.run_validation(
                    public_files_default(), own_files_default(), kfold=False, holdout=[src]
                )
            finally:
                accuracy._serving_value = value
            loso = res["loso"]
            out.append(loso[loso["source"] == src].assign(run=tag))
    d = pd.concat(out)
    r = d["predicted"].astype(float) / d["measured"].astype(float)
    d = d.assign(ape=(r - 1.0).abs() * 100.0, ratio=r)
    g = d.groupby(["source", "metric", "run"])
    return g.agg(n=("ape", "size"), mdape=("ape", "median"), ratio=("ratio", "median")).unstack(
        "run"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ids", default=IDS, help="comma-separated tpot_ms_mean row ids")
    ap.add_argument("--bursts", default="0,1600,2000", help="comma-separated N0 values")
    ap.add_argument("--score", type=float, help="score the pre-fill rule with this factor")
    a = ap.parse_args(argv)
    if a.score:
        pd.set_option("display.width", 250)
        print(score(a.score).round(3).to_string())
        return 0
    ids = set(a.ids.split(","))
    cat = load_catalog()
    for rid, (rec, params, scale) in sorted(held_out_inputs(ids).items()):
        for n0 in (int(x) for x in a.bursts.split(",")):
            d = with_burst(rec, cat, params, scale, n0)
            dec_s = (d["e2e_ms_mean"] - d["ttft_ms_mean"]) / 1e3
            print(
                f"{rid} measured TPOT {float(rec['value']):.2f} ms | N0 {n0:5d}: "
                f"TPOT {d['tpot_ms_mean']:.2f} ms, {d['output_tok_s_total']:.0f} tok/s, "
                f"{d['req_s'] * dec_s / 8:.1f} decoding a rank",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
