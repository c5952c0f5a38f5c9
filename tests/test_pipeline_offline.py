"""Pipeline-parallel offline throughput: micro-batches in flight (TensorRT-LLM in-flight
batching runs ``pp`` micro-batches, one per stage: trtGptModelInflightBatching.cpp sets
``mNumMicroBatches = getPipelineParallelism()`` and sizes its capacity scheduler
``getMaxBatchSize() * mNumMicroBatches``)."""

from __future__ import annotations

import pytest

from planner.benchmarks.io import load_measurements
from planner.calibration.fit import prepare_rows
from planner.catalog import PRIOR, load_catalog
from planner.catalog.catalog import DATA_DIR
from planner.engine import step_model
from planner.serving.steady_state import offline_throughput


@pytest.fixture(scope="module")
def rtx_rows():
    cat = load_catalog()
    df = load_measurements([DATA_DIR / "benchmarks" / "public_nvidia.csv"], cat)
    ids = {"trt12-0089", "trt12-0090", "trt12-0091", "trt12-0092"}
    return {r.id: r for r in prepare_rows(df[df["id"].isin(ids)], cat)}


def test_pp_per_gpu_throughput_stays_flat_as_published(rtx_rows):
    """TensorRT-LLM perf-overview (release/1.2), Llama-3.3-70B nvfp4 on RTX PRO 6000 Blackwell
    Server, ISL/OSL 1024/1024, output tok/s per GPU: pp=1 1,724, pp=2 1,881, pp=4 1,798,
    pp=8 1,545, so pp8 / pp1 = 1545 / 1724 = 0.90. Without micro-batch pipelining a pp=8
    replica runs one batch through 8 stages in turn: per-GPU throughput falls about as 1/pp
    (the planner predicted 0.21 before). The predicted ratio must be within 0.6-1.3 (the
    measured 0.90 +-35%), with the parameters held fixed (PRIOR) so only the layout moves."""
    r = rtx_rows
    assert all(r[i].ok for i in r), [r[i].reason for i in r]
    pred = {i: r[i].predict(PRIOR) for i in r}
    meas = {i: r[i].value for i in r}
    ratio_meas = meas["trt12-0092"] / meas["trt12-0089"]  # 1545 / 1724 = 0.896
    ratio_pred = pred["trt12-0092"] / pred["trt12-0089"]
    assert ratio_meas == pytest.approx(0.896, abs=0.001)
    assert 0.6 < ratio_pred < 1.3, (ratio_pred, pred)
    # every pp level predicted within a factor 1.6 of its own measurement relative to pp=1
    for i in ("trt12-0090", "trt12-0091", "trt12-0092"):
        rel_pred = pred[i] / pred["trt12-0089"]
        rel_meas = meas[i] / meas["trt12-0089"]
        assert 1 / 1.6 < rel_pred / rel_meas < 1.6, (i, rel_pred, rel_meas)


def test_pp_throughput_is_micro_batches_times_one_micro_batch():
    """Hand-derived: with pp stages and B sequences, k = min(pp, B) micro-batches of B/k
    sequences each advance one token per pass through every stage, so the replica makes k x
    the tokens of one micro-batch in the same time. For pp=4, B=64: 4 x (16 sequences' rate)."""
    cat = load_catalog()
    m, g, p = cat.model("llama-3.1-70b"), cat.gpu("nvidia-h100-sxm"), cat.precision("fp8")
    sm4 = step_model(m, g, p, "fp8", 1, 4, PRIOR, cat)
    full, b = offline_throughput(sm4, 1024, 256, 64, 8192)
    # one micro-batch of 16 through all 4 stages: the same formula with B=16, k=1, i.e. a
    # replica of 16 sequences whose step model counts the stages
    one_mb, _ = offline_throughput(sm4, 1024, 256, 1, 8192)  # k = 1 (B=1 < pp)
    assert b == 64
    assert full > one_mb
    # B below pp fills only B micro-batches: 2 sequences -> 2 micro-batches of 1 each
    two, _ = offline_throughput(sm4, 1024, 256, 2, 8192)
    assert two == pytest.approx(2 * one_mb, rel=1e-12)
