"""The published decode-attention timing that AMD's MLPerf v6.0 MI355X rows may take
(``data/mlperf_harness_attention.yaml``, :mod:`planner.benchmarks.harness_attention`), and the
switch that applies it (``mlperf_latency.HARNESS_ATTENTION``, off: docs/changes/2026-12-10/mlpint.md)."""

from __future__ import annotations

import pytest

from planner.benchmarks import mlperf_latency
from planner.benchmarks.harness_attention import (
    harness_attention_records,
    kv_mem_eff,
    record_for_row,
)
from planner.benchmarks.io import load_measurements
from planner.calibration.fit import public_files_default
from planner.catalog import load_catalog
from planner.catalog.profile import load_profile
from planner.errors import PlannerError


@pytest.fixture(scope="module")
def data():
    cat = load_catalog()
    return cat, load_measurements(public_files_default(), cat), load_profile()


def _row(df, row_id):
    row = df[df["id"] == row_id].iloc[0].to_dict()
    return {k: "" if v is None or (isinstance(v, float) and v != v) else str(v)
            for k, v in row.items()}  # fmt: skip


def test_pa_fwd_asm_rate_hand_derived(data):
    """ROCm/aiter #4794, MI355X, ASM row batch 32, ctx 8,192, 2 KV heads (64 workgroups),
    bf16: 32 x 8,192 x 2 x 128 x 2 (K, V) x 2 B = 268,435,456 B in 52.6 us = 5.1033 TB/s;
    the table prints 5,103 GB/s. Over MI355X's 8,000 GB/s: 0.63792."""
    cat = data[0]
    rec = record_for_row("mlp60-0003")
    assert rec is not None and rec.gpu == "amd-mi355x"
    assert rec.kv_bytes_streamed() == 268_435_456
    assert rec.rate_bytes_s() == pytest.approx(5.1033e12, rel=1e-4)
    assert rec.rate_bytes_s() / 1e9 == pytest.approx(5103, rel=1e-3)  # as published
    assert kv_mem_eff(rec, cat.gpu("amd-mi355x")) == pytest.approx(0.63792, abs=1e-5)


def test_record_refuses_another_gpu(data):
    cat = data[0]
    rec = record_for_row("mlp60-0003")
    with pytest.raises(PlannerError):
        kv_mem_eff(rec, cat.gpu("amd-mi325x"))


def test_records_list_rows_of_their_gpu_and_harness(data):
    """Every row a record serves is an MLPerf v6.0 vLLM row on the record's GPU with an fp8
    KV cache (AMD's v6.0 harness, whose blog names the kernel); no row is listed twice."""
    _, df, _ = data
    seen = []
    for rec in harness_attention_records():
        for rid in rec.rows:
            row = _row(df, rid)
            assert row["hardware"] == rec.gpu
            assert row["source"] == "MLPerf Inference v6.0"
            assert row["framework"] == "vllm"
            assert row["kv_precision"] == "fp8"
        seen += list(rec.rows)
    assert seen and len(seen) == len(set(seen))


def test_switch_is_off_and_moves_only_the_listed_rows(data, monkeypatch):
    """Off by default (on, MI355X Interactive goes from -10.3% to +33.2% and the newest-round
    Server order breaks: docs/changes/2026-12-10/mlpint.md). On,
    the MI355X v6.0 row takes kv_mem_eff 0.638 and keeps every other parameter; an MI325X
    row (no record) is untouched."""
    cat, df, prof = data
    assert mlperf_latency.HARNESS_ATTENTION is False
    mi355, mi325 = _row(df, "mlp60-0003"), _row(df, "mlp51b-0020")
    off355 = mlperf_latency.scenario_replica(mi355, cat, prof)[2]
    off325 = mlperf_latency.scenario_replica(mi325, cat, prof)[2]
    monkeypatch.setattr(mlperf_latency, "HARNESS_ATTENTION", True)
    on355 = mlperf_latency.scenario_replica(mi355, cat, prof)[2]
    on325 = mlperf_latency.scenario_replica(mi325, cat, prof)[2]
    assert on355.kv_mem_eff == pytest.approx(0.63792, abs=1e-5)
    assert off355.kv_mem_eff != pytest.approx(on355.kv_mem_eff)
    assert on355.model_copy(update={"kv_mem_eff": off355.kv_mem_eff}) == off355
    assert on325 == off325
