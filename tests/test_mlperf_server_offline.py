"""The Server / Offline error split of planner.benchmarks.mlperf_server_offline (issue 32)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from planner.benchmarks.mlperf_server_offline import (
    limited_by,
    measured_offline_per_gpu,
    server_offline_table,
)


def _offline_rows():
    base = {"model": "llama-2-70b", "mode": "offline", "metric": "output_tok_s_total"}
    return pd.DataFrame(
        [
            {**base, "source": "MLPerf Inference v5.1", "hardware": "nvidia-b200",
             "n_gpus": 8, "value": 101527.0},  # 12,690.875 a GPU (mlp51-0010)
            {**base, "source": "MLPerf Inference v5.1", "hardware": "amd-mi300x",
             "n_gpus": 8, "value": 27800.0},  # 3,475 a GPU
            {**base, "source": "MLPerf Inference v5.1", "hardware": "amd-mi300x",
             "n_gpus": 8, "value": 27325.6},  # 3,415.7 a GPU
            {**base, "source": "MLPerf Inference v5.1", "hardware": "amd-mi300x",
             "mode": "server", "n_gpus": 8, "value": 24000.0},  # not Offline: left out
            {**base, "source": "Other", "hardware": "amd-mi300x", "n_gpus": 8, "value": 1.0},
        ]
    )  # fmt: skip


def test_measured_offline_is_the_median_per_gpu_of_the_round():
    got = measured_offline_per_gpu(_offline_rows())
    assert set(got) == {("v5.1", "nvidia-b200"), ("v5.1", "amd-mi300x")}
    assert got[("v5.1", "nvidia-b200")] == (pytest.approx(12690.875), 1)  # 101,527 / 8
    # median of 3,475 and 3,415.7 = 3,445.35
    assert got[("v5.1", "amd-mi300x")] == (pytest.approx(3445.35), 2)


def test_limited_by_reads_the_provenance():
    assert limited_by("x; limited by the Offline throughput (95% of 11,054 tok/s ...)") == (
        "offline cap"
    )
    assert limited_by("fit (...); tp=1; limited by TPOT p99; node fitted on ...") == "TPOT p99"
    assert limited_by("no limit stated") == ""


def test_split_multiplies_back_to_the_server_error():
    """B200 v5.1 Server, the numbers of the bundled profile (changes note): measured Server
    12,396.9 and Offline 12,690.875 tok/s a GPU (ratio 0.976835); predicted 10,501.6 =
    0.95 x 11,054.3 (the Offline cap; 10,501.6 / 11,054.3 = 0.950001). Offline error
    11,054.3 / 12,690.875 - 1 = -12.8957%; ratio error 0.950001 / 0.976835 - 1 = -2.7471%;
    product 0.871043 x 0.972529 = 0.847115, the Server error 10,501.6 / 12,396.9 - 1 =
    -15.2885%."""
    recs = pd.DataFrame(
        [
            {"mode": "server", "round": "v5.1", "gpu": "nvidia-b200", "measured": m,
             "predicted": 10501.6, "provenance": "limited by the Offline throughput (95% ...)"}
            for m in (12383.2, 12396.9, 12701.3)
        ]
        + [{"mode": "server", "round": "v5.1", "gpu": "nvidia-h200-sxm", "measured": 4162.5,
            "predicted": 3691.8, "provenance": "limited by TPOT p99"}]
    )  # fmt: skip
    t = server_offline_table(
        recs,
        {("v5.1", "nvidia-b200"): (12690.875, 1)},
        {("server", "v5.1", "nvidia-b200"): 11054.3, ("server", "v5.1", "nvidia-h200-sxm"): 3886.1},
    ).set_index("gpu")
    b = t.loc["nvidia-b200"]
    assert b["measured"] == pytest.approx(12396.9)  # median of the three systems
    assert b["measured_ratio"] == pytest.approx(0.976835, abs=1e-6)
    assert b["predicted_ratio"] == pytest.approx(0.95, abs=1e-5)
    assert b["offline_error_pct"] == pytest.approx(-12.8957, abs=1e-4)
    assert b["ratio_error_pct"] == pytest.approx(-2.7471, abs=1e-4)
    assert b["error_pct"] == pytest.approx(-15.2885, abs=1e-4)
    assert (1 + b["error_pct"] / 100) == pytest.approx(
        (1 + b["offline_error_pct"] / 100) * (1 + b["ratio_error_pct"] / 100)
    )
    assert b["limited_by"] == "offline cap"
    h = t.loc["nvidia-h200-sxm"]  # no H200 Offline result in v5.1: no split
    assert math.isnan(h["offline_error_pct"]) and math.isnan(h["ratio_error_pct"])
    assert h["error_pct"] == pytest.approx(100 * (3691.8 / 4162.5 - 1))
    assert h["limited_by"] == "TPOT p99"
