"""A prompt's dense block-FP8 linears at FlashInfer's published rate where the launch turns
DeepGEMM off (``planner.benchmarks.prompt_gemm``; issue 32, item 1, TTFT). The tests set the
switch both ways."""

from __future__ import annotations

import pytest
from _benchmark_rows import schema_row

import planner.benchmarks.prompt_gemm as pg
import planner.benchmarks.serving_rows as serving_rows
from planner.benchmarks.serving_rows import serving_row_details
from planner.catalog import PRIOR
from planner.engine.step import step_model

B200_NOTE = (
    "InferenceX single-node fixed-seq-len sweep, config dsr1-fp8-b200-sglang, script "
    "benchmarks/single_node/dsr1_fp8_b200.sh @ d4948f993748, the last main commit; "
    "--num-prompts 40 --max-concurrency 4"
)


def test_deepgemm_off_reads_script_and_commit():
    assert pg.deepgemm_off(B200_NOTE)
    assert pg.deepgemm_off("script benchmarks/single_node/dsr1_fp8_b300.sh @ dd9c285b3140")
    # a commit not read, another script (H200: no such export), no script at all
    assert not pg.deepgemm_off("script benchmarks/single_node/dsr1_fp8_b200.sh @ 000000000000")
    assert not pg.deepgemm_off("script benchmarks/single_node/dsr1_fp8_h200.sh @ d4948f993748")
    assert not pg.deepgemm_off("")


def test_excess_hand_derived(catalog):
    """DeepSeek-V3 fp8 on B200, TP8, PRIOR's compute_eff: dense parameters 15.263e9
    (attention 11.414e9 + dense MLP 1.189e9 + shared experts 2.554e9 + router), so
    2 x 15.263e9 / 8 = 3.8158 GFLOP per token and GPU; the published rate is 0.08840 x
    4,500 = 397.8 TFLOPS; the node's 4,500 x compute_eff."""
    sm = step_model("deepseek-v3", "nvidia-b200", "fp8", tp=8, params=PRIOR, catalog=catalog)
    dense = pg.dense_flops_per_token(sm)
    assert dense == pytest.approx(3.8158e9, rel=1e-3)
    rate = 2 * 2048 * 24576 * 7168 / 1632.544041e-6 / 5000e12 * 4500e12  # 3.978e14 FLOP/s
    node = 4500e12 * PRIOR.compute_eff
    want = 7373.0 * 3.8158e9 * (1 / rate - 1 / node)
    assert pg.prompt_gemm_excess_s(sm, "sglang", 7373.0) == pytest.approx(want, rel=1e-3)
    # compute_eff 0.6024 (the held-out B200 fp8 node): 8.185 us per token, 60.3 ms at 7,373
    sm6 = step_model("deepseek-v3", "nvidia-b200", "fp8", tp=8,
                     params=PRIOR.with_(compute_eff=0.6024), catalog=catalog)  # fmt: skip
    assert pg.prompt_gemm_excess_s(sm6, "sglang", 7373.0) == pytest.approx(0.0603, rel=2e-3)
    # TP4 doubles the per-GPU dense FLOPs and the excess
    sm4 = step_model("deepseek-v3", "nvidia-b200", "fp8", tp=4,
                     params=PRIOR.with_(compute_eff=0.6024), catalog=catalog)  # fmt: skip
    assert pg.prompt_gemm_excess_s(sm4, "sglang", 7373.0) == pytest.approx(0.1206, rel=2e-3)
    # no record: Hopper, another engine, another format
    h200 = step_model("deepseek-v3", "nvidia-h200-sxm", "fp8", tp=8, params=PRIOR, catalog=catalog)
    assert pg.prompt_gemm_excess_s(h200, "sglang", 7373.0) == 0.0
    assert pg.prompt_gemm_excess_s(sm, "trtllm", 7373.0) == 0.0
    fp4 = step_model("deepseek-v3", "nvidia-b200", "fp4", tp=8, params=PRIOR, catalog=catalog)
    assert pg.prompt_gemm_excess_s(fp4, "sglang", 7373.0) == 0.0


def _row(notes):
    return schema_row(**{
        "hardware": "nvidia-b200", "model": "deepseek-v3", "precision": "fp8",
        "kv_precision": "fp8", "n_gpus": "8", "tp": "8", "framework": "sglang",
        "framework_version": "0.5.12 (image lmsysorg/sglang:v0.5.12-cu130)", "isl": "7373",
        "osl": "64", "as_of": "2026-05-22", "mode": "concurrency", "concurrency": "4",
        "notes": notes,
    })  # fmt: skip


def _both(monkeypatch, catalog, row):
    out = []
    for on in (False, True):
        monkeypatch.setattr(pg, "PROMPT_GEMM_RATE", on)
        serving_rows._ROW_CACHE.clear()
        d = serving_row_details(row, catalog, PRIOR)
        assert "reason" not in d, d.get("reason")
        out.append(d)
    serving_rows._ROW_CACHE.clear()
    return out


def test_serving_row_both_ways(monkeypatch, catalog):
    """ON adds exactly the excess of the row's own step model to TTFT and E2E (mean, median,
    P99); TPOT and throughput do not move. OFF, or a row whose launch keeps DeepGEMM, is
    unchanged."""
    off, on = _both(monkeypatch, catalog, _row(B200_NOTE))
    sm = step_model("deepseek-v3", "nvidia-b200", "fp8", "fp8", tp=8, params=PRIOR, catalog=catalog)
    ms = pg.prompt_gemm_excess_s(sm, "sglang", 7373.0) * 1e3
    assert ms > 40.0
    for m in ("ttft_ms_mean", "ttft_ms_median", "ttft_ms_p99", "e2e_ms_mean", "e2e_ms_median"):
        assert on[m] - off[m] == pytest.approx(ms, rel=1e-6), m
    for m in ("tpot_ms_mean", "itl_ms_median", "req_s"):
        assert on[m] == off[m], m
    assert "FlashInfer" in on["note"] and "FlashInfer" not in off["note"]
    plain = _row("--num-prompts 40 --max-concurrency 4")
    a, b = _both(monkeypatch, catalog, plain)
    assert a["ttft_ms_mean"] == b["ttft_ms_mean"]
