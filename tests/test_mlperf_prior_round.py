"""The prior-round harness speed what-if of MLPerf Llama-2-70B Server / Interactive
(planner/benchmarks/mlperf_latency.py: gemm_speed_for_offline, prior_round_gemm_speed;
docs/changes/2026-12-07e/mlpstep.md): the factor on the GEMM rate is read off the newest earlier round's
Offline rows of the same GPU, engine and precision (another source: held out by round), and
it stays off by default."""

from __future__ import annotations

import math

import pytest

from planner.benchmarks.io import load_measurements
from planner.benchmarks.layouts import assumed_layout, needs_layout
from planner.benchmarks.mlperf_latency import (
    gemm_speed_for_offline,
    mlperf_latency_rows,
    offline_per_gpu,
    prior_round_gemm_speed,
    scenario_replica,
    tight_tpot_newest,
    tight_tpot_records,
)
from planner.calibration.fit import public_files_default
from planner.catalog import load_catalog
from planner.catalog.profile import load_profile, resolve_params


@pytest.fixture(scope="module")
def data():
    cat = load_catalog()
    return cat, load_measurements(public_files_default(), cat), load_profile()


def _row(df, row_id):
    rec = df[df["id"] == row_id].iloc[0].to_dict()
    return {
        k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))
        for k, v in rec.items()
    }


def _first(df, source, gpu, mode):
    rows = mlperf_latency_rows(df)
    rows = rows[(rows["source"] == source) & (rows["hardware"] == gpu) & (rows["mode"] == mode)]
    return _row(df, rows["id"].iloc[0])


def test_the_factor_reproduces_the_offline_run(data):
    # mlp50-0002, MLPerf v5.0 H200 x8 Offline: 34,988.2 tok/s / 8 = 4,373.5 tok/s a GPU
    cat, df, prof = data
    row = _row(df, "mlp50-0002")
    p, _ = resolve_params("nvidia-h200-sxm", "trtllm", "fp8", catalog=cat, profile=prof,
                          family="dense")  # fmt: skip
    if needs_layout(row):
        row, _ = assumed_layout(row, cat, p)
    k = gemm_speed_for_offline(row, cat, p)
    assert k is not None and k > 1.0  # the profile's own rate predicts this run low
    q = p.model_copy(update={"compute_eff": p.compute_eff * k})
    assert offline_per_gpu(row, cat, q) == pytest.approx(34988.2 / 8, rel=3e-3)
    assert offline_per_gpu(row, cat, p) < 34988.2 / 8


def test_the_factor_comes_from_the_newest_earlier_round(data):
    cat, df, prof = data
    # v5.1 H200 Server: v5.0 holds one H200 x8 Offline row (mlp50-0002); v4.1's six are older
    k, note = prior_round_gemm_speed(
        _first(df, "MLPerf Inference v5.1", "nvidia-h200-sxm", "server"), df, cat, prof
    )
    assert "from MLPerf Inference v5.0 Offline (mlp50-0002)" in note and k > 1.0
    # v5.0 H100 Server: v4.1's thirteen H100 SXM Offline rows, none of v5.0 itself
    k, note = prior_round_gemm_speed(
        _first(df, "MLPerf Inference v5.0", "nvidia-h100-sxm", "server"), df, cat, prof
    )
    assert "MLPerf Inference v4.1" in note and note.count("mlp41-") == 13
    assert "mlp50-0001" not in note  # the row's own round is never read
    # v4.1 H200 Server: no earlier round in the data
    k, note = prior_round_gemm_speed(
        _first(df, "MLPerf Inference v4.1", "nvidia-h200-sxm", "server"), df, cat, prof
    )
    assert k == 1.0 and note.startswith("no earlier round")


def test_gemm_speed_scales_only_the_gemm_rate(data):
    cat, df, prof = data
    row = _first(df, "MLPerf Inference v5.1", "nvidia-h200-sxm", "server")
    _, _, p1, prov1, _ = scenario_replica(row, cat, prof)
    _, _, p2, prov2, _ = scenario_replica(row, cat, prof, gemm_speed=1.25)
    assert p2.compute_eff == pytest.approx(1.25 * p1.compute_eff)
    assert p2.model_copy(update={"compute_eff": p1.compute_eff}) == p1
    assert "GEMM rate x 1.250" in prov2 and "GEMM rate" not in prov1


def test_prior_round_is_off_by_default_and_raises_h200_server(data):
    cat, df, prof = data
    base = tight_tpot_newest(tight_tpot_records(df, cat, prof)).set_index(["mode", "gpu"])
    what = tight_tpot_newest(tight_tpot_records(df, cat, prof, prior_round=True)).set_index(
        ["mode", "gpu"]
    )
    key = ("server", "nvidia-h200-sxm")
    # a factor > 1 on the GEMM rate can only shorten the step: more throughput at the limits
    assert what.loc[key, "predicted_per_gpu"] > base.loc[key, "predicted_per_gpu"]
    # v4.1-only GPUs' rows and rounds without an earlier Offline run keep the default
    assert (base["measured_per_gpu"] == what["measured_per_gpu"]).all()
