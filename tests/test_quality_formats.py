"""Published quality rows for the int8 / fp8 / 4-bit formats recommend picks for the
catalog's popular models (data/quality.yaml, s13-quality2). Expected values are the
model cards' numbers with the arithmetic shown."""

from __future__ import annotations

import pytest

from planner.cost import load_quality, quality_delta
from planner.recommend.finish import _quality_text


def _row(result, benchmark: str):
    (row,) = (r for r in result.rows if r.benchmark == benchmark)
    return row


def test_llama_3_1_70b_int8_rows_hand_computed(catalog):
    # the example: vLLM W8A8 on H200 for Llama-3.1-70B
    r = quality_delta("llama-3.1-70b", "w8a8", cat=catalog)  # alias of int8
    assert r.status == "measured" and r.precision == "int8"
    assert {x.checkpoint for x in r.rows} == {
        "neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w8a8"
    }
    v1 = _row(r, "OpenLLM v1 (7)")
    # card: 84.5 -> 84.3 = -0.20 points; stated recovery 99.9% (84.3 / 84.5 = 99.76%,
    # within the loader's 0.15-point check), so delta_pct = 99.9 - 100 = -0.1
    assert v1.delta_points == pytest.approx(-0.2)
    assert v1.delta_pct == pytest.approx(-0.1)
    v2 = _row(r, "OpenLLM v2")
    # 40.5 - 41.7 = -1.20 points; the card's 97.3% cell disagrees with 40.5 / 41.7 = 97.12%
    # by 0.18 > 0.15, so it is not stored and the recovery comes from the scores
    assert v2.recovery_pct is None
    assert v2.delta_points == pytest.approx(-1.2)
    assert v2.delta_pct == pytest.approx(40.5 / 41.7 * 100 - 100)
    ah = _row(r, "Arena-Hard")
    # 56.3 - 57.0 = -0.70 points; stated 98.8%
    assert ah.delta_points == pytest.approx(-0.7) and ah.recovery == pytest.approx(98.8)
    # worst relative change: OpenLLM v2, -2.88%
    assert r.worst_delta_pct == pytest.approx(40.5 / 41.7 * 100 - 100)
    # what recommend's quality column shows (first two rows of the file)
    short, _ = _quality_text("llama-3.1-70b", "int8")
    assert short == "OpenLLM v1 (7) -0.20 pts; OpenLLM v2 -1.20 pts"


def test_llama_3_1_405b_int8_and_llama_3_3_fp8(catalog):
    r = quality_delta("llama-3.1-405b", "int8", cat=catalog)
    # 86.2 - 86.8 = -0.60; 47.9 - 48.7 = -0.80; Arena-Hard 64.6 - 67.4 = -2.80 (95.8%)
    assert _row(r, "OpenLLM v1").delta_points == pytest.approx(-0.6)
    assert _row(r, "OpenLLM v2").delta_points == pytest.approx(-0.8)
    assert _row(r, "Arena-Hard").delta_pct == pytest.approx(95.8 - 100)
    r33 = quality_delta("llama-3.3-70b", "fp8", cat=catalog)
    # 78.39 - 77.94 = +0.45 points (the FP8 checkpoint scores above its baseline)
    assert _row(r33, "OpenLLM v1 (7)").delta_points == pytest.approx(0.45)
    # 49.31 - 49.42 = -0.11
    assert _row(r33, "OpenLLM v2").delta_points == pytest.approx(-0.11)
    # Llama 3.3 rows are not Llama 3.1 rows, and the other way round
    r31 = quality_delta("llama-3.1-70b", "fp8", cat=catalog)
    assert not any("3.3" in (x.checkpoint or "") for x in r31.rows)
    assert all("3.3" in (x.checkpoint or "") for x in r33.rows)


def test_disagreeing_recovery_cells_are_not_stored(catalog):
    # Qwen2.5-7B W8A8: card 73.16 -> 73.05 with a Recovery cell of 99.4%; 73.05 / 73.16
    # = 99.85%, so the row keeps the scores: -0.11 points, -0.15%
    r = quality_delta("qwen2.5-7b", "int8", cat=catalog)
    row = _row(r, "OpenLLM v1")
    assert row.recovery_pct is None
    assert row.delta_points == pytest.approx(-0.11)
    assert row.delta_pct == pytest.approx(73.05 / 73.16 * 100 - 100)
    # Llama-3.3-70B W4A16 (GPTQ): 77.94 -> 77.49 = -0.45 points; card cell 98.3% vs 99.42%
    g = _row(quality_delta("llama-3.3-70b", "int4-gptq", cat=catalog), "OpenLLM v1 (7)")
    assert g.recovery_pct is None and g.delta_points == pytest.approx(-0.45)


def test_qwen2_5_72b_instruct_rows_come_first():
    # the catalog's hf_repo is Qwen2.5-72B-Instruct: its card's two averages are shown,
    # 81.30 - 81.50 = -0.20 and 49.63 - 49.84 = -0.21; the base-model row stays in the detail
    short, full = _quality_text("qwen2.5-72b", "int8")
    assert short == "OpenLLM v1 -0.20 pts; OpenLLM v2 -0.21 pts"
    assert "Qwen2.5-72B-quantized.w8a8" in full


def test_qwen3_rows_and_the_group_64_checkpoint(catalog):
    fp8 = quality_delta("qwen3-8b", "fp8", cat=catalog)
    # 64.83 - 64.21 = +0.62 (101.0%); 35.35 - 34.31 = +1.04 (103.0%)
    assert _row(fp8, "OpenLLM v1").delta_points == pytest.approx(0.62)
    assert _row(fp8, "OpenLLM v2").delta_pct == pytest.approx(3.0)
    # Qwen3-8B W4A16 is asymmetric group 64: stored under w4a16, not int4-gptq
    w4 = quality_delta("qwen3-8b", "w4a16", cat=catalog)
    # 32.17 - 34.31 = -2.14 points; stated 93.8% -> -6.2%
    assert _row(w4, "OpenLLM v2").delta_points == pytest.approx(-2.14)
    assert w4.worst_delta_pct == pytest.approx(-6.2)
    assert quality_delta("qwen3-8b", "int4-gptq", cat=catalog).status == "not_measured"
    # the 32B GPTQ (group 128) row: 72.52 - 72.86 = -0.34
    g32 = quality_delta("qwen3-32b", "int4-gptq", cat=catalog)
    assert _row(g32, "OpenLLM v1").delta_points == pytest.approx(-0.34)
    # MoE: 30B-A3B FP8 67.56 - 67.62 = -0.06; GPTQ 66.60 - 67.62 = -1.02
    assert _row(
        quality_delta("qwen3-30b-a3b", "fp8", cat=catalog), "OpenLLM v1"
    ).delta_points == pytest.approx(-0.06)
    assert _row(
        quality_delta("qwen3-30b-a3b", "int4-gptq", cat=catalog), "OpenLLM v1"
    ).delta_points == pytest.approx(-1.02)
    # no row spreads to a size or format it was not measured on
    assert quality_delta("qwen3-32b", "fp8", cat=catalog).status == "not_measured"
    assert quality_delta("qwen3-30b-a3b", "int4-awq", cat=catalog).status == "not_measured"


def test_mistral_and_gemma_rows(catalog):
    # Mistral-7B-Instruct-v0.3 FP8: 65.85 - 66.33 = -0.48
    m = quality_delta("mistral-7b-v0.3", "fp8", cat=catalog)
    assert _row(m, "OpenLLM v1").delta_points == pytest.approx(-0.48)
    # GPTQ 4-bit: 65.05 - 65.21 = -0.16 points, stated 99.75% -> -0.25%
    g = _row(quality_delta("mistral-7b-v0.3", "gptq", cat=catalog), "OpenLLM v1")
    assert g.delta_points == pytest.approx(-0.16) and g.delta_pct == pytest.approx(-0.25)
    # gemma-2-9b-it: FP8 73.49 - 73.23 = +0.26; W8A8 73.71 - 73.80 = -0.09
    assert _row(
        quality_delta("gemma-2-9b", "fp8", cat=catalog), "OpenLLM v1"
    ).delta_points == pytest.approx(0.26)
    assert _row(
        quality_delta("gemma-2-9b", "int8", cat=catalog), "OpenLLM v1"
    ).delta_points == pytest.approx(-0.09)
    # gemma-2-27b has no row: the 9B card does not spread to it
    assert quality_delta("gemma-2-27b", "fp8", cat=catalog).status == "not_measured"


def test_new_rows_carry_source_and_date():
    added = [
        r
        for r in load_quality().rows
        if "(docs index)" in r.source or "public code index (id 7" in r.source
    ]
    assert len(added) >= 25
    for r in added:
        assert r.as_of.year >= 2024 and r.checkpoint and r.method
        # each source quotes the cell or sentence it was read from
        assert "(" in r.source and any(ch.isdigit() for ch in r.source)
