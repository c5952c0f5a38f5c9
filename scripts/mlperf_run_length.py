"""Diagnosis: do the MLPerf v6.0 DeepSeek-R1 Server rows reach their measured operating point
when the simulation runs as long as the real run (docs/changes/2026-12-07e/mlprun.md)?

``scripts/dep_operating_points.py`` found that at some of these rows' rates the step model has
two stable operating points (either side of the CUDA-graph jump from 256 to 384 sequences a
rank); the simulator, started empty, settles on the lower one and the runs measure the upper
one. A real MLPerf Server run issues ``generated_query_count`` Poisson queries at
``target_qps`` (at least ``min_query_count`` and ``min_duration``; loadgen's
``mlperf_log_detail.txt``) and scores every query. This script reruns each row's held-out
simulation (the parameters ``planner validate --holdout`` uses, from
``scripts/dep_prefilled_start.py``) three ways and prints TPOT mean, output tok/s and the
decoding sequences a rank over time:

* ``planner``: as the planner simulates it now (``serving_rows``: 3,000 requests, lengthened
  until the arrivals span 5 mean / 2.5 p99 lifetimes; scored after the longest one);
* ``real n, window``: the run's real query count (the row's notes: ``loadgen
  generated_query_count``), the planner's steady window;
* ``real n, all``: the planner's rule ``run_length.APPLY_STATED_RUN`` on: the run's real
  query count, every query scored, throughput to the last-issued query's completion
  (loadgen's way).

Usage (repository root, ~10 min on two shared cores)::

    PYTHONPATH=$PWD python scripts/mlperf_run_length.py [--ids mlds60-0029,...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from dep_prefilled_start import held_out_inputs  # noqa: E402

from planner.benchmarks import run_length, serving_rows  # noqa: E402
from planner.benchmarks.run_length import stated_queries  # noqa: E402
from planner.catalog.catalog import load_catalog  # noqa: E402

IDS = "mlds60-0029,mlds60-0052,mlds60-0023,mlds60-0064"


def decoding_per_rank(res, ranks: int = 8, points: int = 12) -> list[float]:
    """Sequences decoding a rank at ``points`` evenly spaced times of the arrival span."""
    a0, a1 = float(res.arrival_s.min()), float(res.arrival_s.max())
    ts = np.linspace(a0, a1, points + 1)[1:]
    f, e = res.first_token_s, res.finish_s
    return [float(((f <= t) & (e > t)).sum()) / ranks for t in ts]


def simulate(record, catalog, params, scale, n: int | None, score_all: bool):
    """(details, last SimResult) of one row: ``n`` queries in the planner's steady window, or
    (``n`` None) the planner's own run, with its stated-run rule on when ``score_all``."""
    kept = {}
    orig_run, orig_steady, orig_n = (
        serving_rows.run,
        serving_rows.steady_requests,
        serving_rows.SERVER_REQUESTS,
    )
    orig_apply = run_length.APPLY_STATED_RUN

    def run(*a, **k):
        kept["res"] = orig_run(*a, **k)
        return kept["res"]

    serving_rows.run = run
    if n is not None:
        serving_rows.SERVER_REQUESTS = n
        serving_rows.steady_requests = lambda res, m: m
    if score_all:  # the planner's own rule (run_length), switched on for this run
        run_length.APPLY_STATED_RUN = True
    serving_rows._ROW_CACHE.clear()
    try:
        d = serving_rows.serving_row_details(record, catalog, params, prefill_scale=scale)
    finally:
        serving_rows.run = orig_run
        serving_rows.steady_requests = orig_steady
        serving_rows.SERVER_REQUESTS = orig_n
        run_length.APPLY_STATED_RUN = orig_apply
        serving_rows._ROW_CACHE.clear()
    return d, kept["res"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ids", default=IDS, help="comma-separated tpot_ms_mean row ids")
    a = ap.parse_args(argv)
    ids = set(a.ids.split(","))
    cat = load_catalog()
    for rid, (rec, params, scale) in sorted(held_out_inputs(ids).items()):
        print(f"{rid} measured TPOT {float(rec['value']):.2f} ms", flush=True)
        for tag, n, all_ in (
            ("planner", None, False),
            ("real n, window", stated_queries(rec["notes"]), False),
            ("real n, all", None, True),
        ):
            t0 = time.perf_counter()
            d, res = simulate(rec, cat, params, scale, n, all_)
            span = float(res.arrival_s.max() - res.arrival_s.min())
            traj = " ".join(f"{x:.0f}" for x in decoding_per_rank(res))
            print(
                f"  {tag:15s} n {len(res.arrival_s):6d} ({span:6.0f} s of arrivals): TPOT "
                f"{d['tpot_ms_mean']:.2f} ms, {d['output_tok_s_total']:.0f} tok/s; decoding a "
                f"rank over the run: {traj}  [{time.perf_counter() - t0:.0f} s]",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
