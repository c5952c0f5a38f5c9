"""MLPerf DeepSeek-R1 dataset lengths (planner.workload.presets.mlperf_deepseek_r1_lengths),
the MLPerf R1 rows that read them, and the TensorRT-LLM blog 1 MTP acceptance lengths."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from planner.benchmarks.io import read_rows
from planner.benchmarks.predict import Predictor
from planner.catalog.catalog import load_catalog
from planner.catalog.speculative import acceptance_records, spec_decode
from planner.workload.presets import (
    DEEPSEEK_R1_MAX_OUTPUT_TOKENS,
    DEEPSEEK_R1_REF_OUTPUT_QUANTILES,
    mlperf_deepseek_r1_lengths,
)

ROOT = Path(__file__).resolve().parents[1]
MLPERF = ROOT / "data/benchmarks/public_mlperf_moe.csv"


def test_caps_match_the_reference_implementation():
    # mlcommons/inference language/deepseek-r1/utils/backend_registry.py:
    #   MAX_ISL = 3136, MAX_OSL = 20 * 1000, MAX_TEMPLATE_TOKS = 4
    inp, out = mlperf_deepseek_r1_lengths()
    assert inp.quantile_tokens(1.0) == 3136 + 4
    assert DEEPSEEK_R1_MAX_OUTPUT_TOKENS == 20 * 1000
    assert out.quantile_tokens(1.0) == 20_000
    # the reference run's answers reach its own 32,768 cap above p99 (83 of 4,388 samples)
    assert max(DEEPSEEK_R1_REF_OUTPUT_QUANTILES) == 32768


def test_answer_mean_matches_the_reference_readme():
    # language/deepseek-r1/README.md, "Reference Evals": "mean-output-tok-len": 3886.2274
    # over "num-samples": 4388. The 25-point table (trapezoid between quantiles, capped at
    # 20,000) gives 3,898.8: 3898.8 / 3886.2 - 1 = +0.33 %.
    _, out = mlperf_deepseek_r1_lengths()
    assert out.mean_tokens() == pytest.approx(3886.2274, rel=0.01)


def test_prompt_statistics():
    # per-sample table (performance-dashboard deepseek-r1.csv): mean 803.8, median 901.5
    inp, _ = mlperf_deepseek_r1_lengths()
    assert inp.mean_tokens() == pytest.approx(803.8, rel=0.01)
    assert inp.quantile_tokens(0.5) == 901


def test_submitters_generate_about_the_reference_mean():
    # each row's notes: mean generated tokens per sample = tokens/s / samples/s of its run
    rows, _ = read_rows(MLPERF)
    gen = [
        int(m.group(1))
        for r in rows
        if (m := re.search(r"mean generated tokens per sample (\d+)", r["notes"]))
    ]
    assert len(gen) >= 100
    _, out = mlperf_deepseek_r1_lengths()
    for g in gen:  # 3,650 .. 3,828 vs 3,899: within 7 %
        assert abs(g / out.mean_tokens() - 1) < 0.07


@pytest.fixture(scope="module")
def predicted():
    rows, _ = read_rows(MLPERF)
    pr = Predictor(load_catalog(), csv_dir=MLPERF.parent)
    want = {"mlds51-0007", "mlds51-0008", "mlds51-0011", "mlds60-0026"}
    return {r["id"]: pr.predict_row(r) for r in rows if r["id"] in want}


def test_r1_rows_are_predicted(predicted):
    assert set(predicted) == {"mlds51-0007", "mlds51-0008", "mlds51-0011", "mlds60-0026"}
    for out in predicted.values():
        assert out["reason"] == "", out["reason"]
        assert math.isfinite(float(out["predicted"])) and float(out["predicted"]) > 0


def test_server_throughput_follows_the_offered_load(predicted):
    # A Server run that keeps up completes target_qps x mean answer tokens per second:
    # mlds51-0008 (B200, target_qps 3.8): 3.8 x 3,898.8 = 14,815 tok/s; measured 13,913.33
    # (= 3.8 x its 3,661 generated tokens per sample).
    # The simulated Poisson arrivals and sampled answers scatter around that by a few %.
    assert float(predicted["mlds51-0008"]["predicted"]) == pytest.approx(3.8 * 3898.8, rel=0.1)


def test_blog1_acceptance_lengths_loaded():
    # TensorRT-LLM tech blog 1, table 'Autoregressive MTP Layers', column 'Acceptance Rate'
    blog = {
        r.spec_tokens: r.acceptance_length
        for r in acceptance_records()
        if r.model == "deepseek-v3" and r.method == "mtp" and "tech blog 1" in r.source
    }
    assert blog == {1: 1.92, 2: 2.58, 3: 2.82, 4: 2.99, 5: 3.01}
    m = load_catalog().model_ref("deepseek-v3")
    # K = 3 has one published row: AL 2.82, no spread
    s3 = spec_decode(m, "mtp", 3)
    assert s3.acceptance_length == 2.82 and s3.spread == 0.0
    # K = 1 averages the DeepSeek-V3 report (1.875, range 1.85-1.90) and the blog (1.92):
    # (1.875 + 1.92) / 2 = 1.8975; spread = max(1.8975 - 1.85, 1.92 - 1.8975) = 0.0475
    s1 = spec_decode(m, "mtp", 1)
    assert s1.acceptance_length == pytest.approx(1.8975)
    assert s1.spread == pytest.approx(0.0475)


def test_steady_token_rate_spreads_each_answer_over_its_decode_span():
    # two requests: A decodes 101 tokens between t = 0 and 10 s (first token at 0, 100 more
    # tokens evenly to 10 s), B has its first token at 5 s and 51 tokens to 15 s. Window
    # [5, 10]: A gives 100 x 5/10 = 50, B gives 50 x 5/10 = 25 plus its first token (at 5 s,
    # inside): 76 tokens / 5 s = 15.2 tok/s
    import numpy as np

    from planner.benchmarks.serving_rows import steady_token_rate

    class R:
        first_token_s = np.array([0.0, 5.0])
        finish_s = np.array([10.0, 15.0])
        output_tokens = np.array([101, 51])

    assert steady_token_rate(R(), 5.0, 10.0) == pytest.approx(76 / 5)


def test_disaggregated_mlperf_rows_are_predicted():
    # GB200 NVL72 Interactive: 2 prefill DEP4 + 4 decode DEP16 workers at target_qps 64, MTP 3
    # with the published K = 3 acceptance length 2.82 (TensorRT-LLM blog 1)
    from planner.benchmarks.disagg_rows import predict_disagg_row

    rows, _ = read_rows(MLPERF)
    cat = load_catalog()
    row = next(r for r in rows if r["id"] == "mlds60-0069")  # tpot_ms_mean, measured 11.89
    out = predict_disagg_row(row, cat)
    assert not isinstance(out, str), out
    tpot_ms, note = out
    # a verify step of AL 2.82 tokens cannot be below a per-token time of 1 ms nor above
    # the scenario's 15 ms p99 limit by much: a loose physical range
    assert 1.0 < tpot_ms < 30.0
    assert "MTP k=3, AL 2.82" in note and "2P(DEP4)+4D(DEP16)" in note
