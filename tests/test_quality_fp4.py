"""Published fp4 quality rows for the formats recommend picks, and the released-precision
baseline (data/quality.yaml, planner.cost.quality_delta)."""

from __future__ import annotations

import re

import pytest

from planner.cost import load_quality, quality_delta
from planner.recommend.finish import _quality_text


def _row(result, benchmark: str):
    (row,) = (r for r in result.rows if r.benchmark == benchmark)
    return row


def test_llama_3_1_70b_fp4_rows_hand_computed(catalog):
    r = quality_delta("llama-3.1-70b", "fp4", cat=catalog)
    assert r.status == "measured" and len(r.rows) == 2
    v1 = _row(r, "OpenLLM v1 (7)")
    # card: 82.83 -> 81.75; 81.75 - 82.83 = -1.08 points; recovery stated 98.70%
    # (81.75 / 82.83 = 0.98696 -> 98.70%)
    assert v1.delta_points == pytest.approx(-1.08)
    assert v1.recovery == pytest.approx(98.70)
    assert abs(81.75 / 82.83 * 100 - 98.70) < 0.005
    v2 = _row(r, "OpenLLM v2")
    # 48.45 - 49.81 = -1.36 points; 48.45 / 49.81 = 97.27% (card: 97.28%)
    assert v2.delta_points == pytest.approx(-1.36)
    assert r.worst_delta_pct == pytest.approx(97.28 - 100)
    assert all(x.checkpoint == "RedHatAI/Meta-Llama-3.1-70B-Instruct-NVFP4A16" for x in r.rows)


def test_llama_3_3_card_is_not_applied_to_llama_3_1(catalog):
    r33 = quality_delta("llama-3.3-70b", "fp4", cat=catalog)
    v1 = _row(r33, "OpenLLM v1 (7)")
    # 78.57 - 79.77 = -1.20 points; 78.57 / 79.77 = 98.496% (card: 98.49)
    assert v1.delta_points == pytest.approx(-1.20)
    assert v1.recovery == pytest.approx(98.49)
    r31 = quality_delta("llama-3.1-70b", "fp4", cat=catalog)
    assert not any("3.3" in (x.checkpoint or "") for x in r31.rows)
    assert not any("3.1" in (x.checkpoint or "") for x in r33.rows)


def test_deepseek_v3_fp4_rows_against_fp8(catalog):
    r = quality_delta("deepseek-v3", "fp4", cat=catalog)
    assert r.status == "measured"
    assert {x.checkpoint for x in r.rows} == {"nvidia/DeepSeek-R1-0528-FP4"}
    assert all(x.baseline_precision == "fp8" for x in r.rows)
    # MMLU-Pro 85 -> 84.2: -0.80 points; 84.2 / 85 = 99.06% -> -0.94%
    mp = _row(r, "MMLU-Pro")
    assert mp.delta_points == pytest.approx(-0.8)
    assert mp.delta_pct == pytest.approx(84.2 / 85 * 100 - 100)
    # worst: GPQA Diamond 80.0 / 81 = 98.77% -> -1.23%
    assert r.worst_delta_pct == pytest.approx(80.0 / 81 * 100 - 100)
    # the original R1 (January) rows stay under their own name
    assert "deepseek-v3" not in _row(quality_delta("deepseek-r1", "fp4"), "MMLU").models


def test_released_precision_is_the_baseline(catalog):
    # deepseek-v3 ships fp8 weights: fp8 is its baseline, with or without the catalog
    assert quality_delta("deepseek-v3", "fp8", cat=catalog).status == "baseline"
    assert quality_delta("deepseek-v3", "fp8", native_precision="fp8").status == "baseline"
    # without the native precision it is only an fp8 with no row
    assert quality_delta("deepseek-v3", "fp8").status == "not_measured"
    # a dense bf16 model's fp8 stays measured / not measured, never baseline
    assert quality_delta("llama-3.1-70b", "fp8", cat=catalog).status == "measured"
    assert quality_delta("qwen2.5-7b", "fp8", cat=catalog).status == "not_measured"
    short, full = _quality_text("deepseek-v3", "fp8", "fp8")
    assert short == "baseline" and "released precision" in full
    short, _ = _quality_text("deepseek-v3", "fp4", "fp8")
    assert short.startswith("MMLU-Pro -0.80 pts")


def test_llama_3_1_8b_fp8_row(catalog):
    (row,) = quality_delta("llama-3.1-8b", "fp8", cat=catalog).rows
    # 73.44 - 73.79 = -0.35 points; 73.44 / 73.79 = 99.526% (card: 99.52%)
    assert row.delta_points == pytest.approx(-0.35)
    assert row.recovery == pytest.approx(99.52)
    assert row.checkpoint == "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8"


def test_new_rows_have_provenance():
    for r in load_quality().rows:
        if r.as_of.isoformat() == "2026-12-07" or "NVFP4A16" in (r.checkpoint or ""):
            # a card read through a code-index copy (id) or, since s13-quality2, a page of
            # the docs index (its URL)
            assert r.source.startswith(("huggingface.co/", "https://huggingface.co/"))
            assert re.search(r"code index \(?id \d{6,}", r.source) or (
                "(docs index)" in r.source
            ), r.source
            assert r.notes


def test_fp4_rows_follow_the_format_the_gpu_computes(catalog):
    # CDNA4 (MI355X) runs MXFP4: AMD's card, MMLU 83.29 -> 80.99 = -2.30 points, 97.24%
    amd = quality_delta("llama-3.3-70b", "fp4", cat=catalog, gpu_arch="cdna4")
    assert {r.fp4_format for r in amd.rows} == {"mxfp4"}
    mmlu = _row(amd, "MMLU")
    assert mmlu.delta_points == pytest.approx(-2.30)
    assert mmlu.recovery == pytest.approx(97.24)
    # Blackwell runs NVFP4: NVIDIA's card, MMLU 83.3 -> 81.1 = -2.2 points
    nv = quality_delta("llama-3.3-70b", "fp4", cat=catalog, gpu_arch="blackwell")
    assert {r.fp4_format for r in nv.rows} == {"nvfp4"}
    assert _row(nv, "MMLU").delta_points == pytest.approx(-2.2)
    # elsewhere fp4 is weight-only: rows of both formats are shown
    anywhere = quality_delta("llama-3.3-70b", "fp4", cat=catalog, gpu_arch="hopper")
    assert len(anywhere.rows) == len(amd.rows) + len(nv.rows)
    # an NVFP4 row is never shown as an MXFP4 GPU's quality
    miss = quality_delta("llama-3.1-70b", "fp4", cat=catalog, gpu_arch="cdna4")
    assert miss.status == "not_measured" and "mxfp4" in miss.message
    assert "NVFP4A16" in miss.message
    short, _ = _quality_text("deepseek-v3", "fp4", "fp8", "cdna4")
    assert short == "not measured"


def test_every_fp4_row_names_its_format():
    rows = load_quality().rows
    assert all((r.precision == "fp4") == (r.fp4_format is not None) for r in rows)
    assert {r.fp4_format for r in rows if r.precision == "fp4"} == {"nvfp4", "mxfp4"}
