"""MLPerf Server rows simulated for their stated run length, scored as loadgen scores them
(planner/benchmarks/run_length.py; docs/changes/2026-12-07e/mlprun.md)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from planner.benchmarks.run_length import loadgen_summary, stated_queries

MLPERF = Path(__file__).resolve().parents[1] / "data" / "benchmarks" / "public_mlperf_moe.csv"


def test_stated_queries_reads_the_tag():
    assert stated_queries("x; loadgen generated_query_count 105312 (detail log)") == 105_312
    assert stated_queries("loadgen generated_query_count 30,716") == 30_716
    assert stated_queries("4,388 samples, Poisson at target_qps 11") is None
    assert stated_queries("") is None


class _Res:
    """Three requests: arrivals 0, 1, 2 s; finishes 10, 4, 5 s; 100 / 50 / 50 output tokens,
    10 prompt tokens each."""

    arrival_s = np.array([0.0, 1.0, 2.0])
    finish_s = np.array([10.0, 4.0, 5.0])
    output_tokens = np.array([100, 50, 50])
    input_tokens = np.array([10, 10, 10])

    def summary(self, mask):
        assert mask.all()  # every request scored
        return {"tpot_mean_s": 0.05}


def test_loadgen_summary_divides_by_the_last_issued_querys_completion():
    # loadgen results.cc: completed samples/s = (sample_count - 1) / final_query_all_samples_
    # done_time; tokens/s = token_count / the same time. The last-issued query arrives at 2 s
    # and finishes at 5 s (the first one, still running to 10 s, does not set the end):
    # span 5 - 0 = 5 s; (3 - 1) / 5 = 0.4 req/s; 200 / 5 = 40 tok/s; (200 + 30) / 5 = 46.
    s, t0, t1 = loadgen_summary(_Res())
    assert (t0, t1) == (0.0, 5.0)
    assert s["throughput_rps"] == pytest.approx(0.4)
    assert s["output_tok_s"] == pytest.approx(40.0)
    assert s["total_tok_s"] == pytest.approx(46.0)
    assert s["tpot_mean_s"] == 0.05


def test_mlperf_r1_server_rows_state_their_run_length():
    # every v5.1 / v6.0 DeepSeek-R1 Server / Interactive row states its run's query count,
    # and the rows of one run (one summary file) state the same one; at least min_query_count
    # (v6.0 Dell B200: 30,716 >= 26,382; loadgen mlperf_log_detail.txt)
    d = pd.read_csv(MLPERF, dtype=str, keep_default_na=False)
    r1 = d[d["source"].str.contains("DeepSeek-R1") & d["mode"].isin(["server", "interactive"])]
    assert len(r1) >= 100
    counts = r1["notes"].map(stated_queries)
    assert counts.notna().all()
    run = (
        r1["source"]
        + " "
        + r1["source_detail"].map(lambda s: re.search(r"closed/\S+?/(Server|Interactive)", s)[0])
    )
    assert (counts.groupby(run).nunique() == 1).all()
    assert counts[r1["id"] == "mlds60-0029"].iloc[0] == 30_716
    assert counts.min() >= 26_328  # v5.1's min_query_count for DeepSeek-R1 Server


@pytest.mark.parametrize("apply", [True, False])
def test_a_stated_run_is_simulated_for_its_length_and_fully_scored(monkeypatch, apply):
    # on: the run's 400 queries, every one scored; off (the default): the steady run
    from planner.benchmarks import run_length, serving_rows
    from planner.benchmarks.serving_rows import serving_row_details
    from planner.catalog import PRIOR
    from planner.catalog.catalog import load_catalog

    row = {
        "id": "t-1",
        "source": "test",
        "hardware": "nvidia-h100-sxm",
        "n_gpus": "1",
        "tp": "1",
        "model": "llama-3.1-8b",
        "pp": "1",
        "precision": "bf16",
        "kv_precision": "",
        "framework": "trtllm",
        "batch": "",
        "concurrency": "",
        "mode": "server",
        "isl": "256",
        "osl": "64",
        "request_rate": "2",
        "metric": "tpot_ms_mean",
        "unit": "ms",
        "notes": "loadgen generated_query_count 400",
    }
    monkeypatch.setattr(run_length, "APPLY_STATED_RUN", apply)
    monkeypatch.setattr(serving_rows, "_ROW_CACHE", {})
    d = serving_row_details(row, load_catalog(), PRIOR)
    if not apply:
        assert "3000 requests" in d["note"] and "scored after warm-up" in d["note"], d["note"]
        return
    assert "400 requests" in d["note"] and "scored all" in d["note"], d["note"]
    # every request is scored, so throughput is close to the offered 2 req/s (400 Poisson
    # arrivals: the realised rate is within a few %), not the steady window's
    assert d["req_s"] == pytest.approx(2.0, rel=0.15)
