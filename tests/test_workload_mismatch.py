"""Rows whose run did not serve the stated workload (``workload_mismatch:``): the tag, the
InferenceX runs of the mismatched benchmark client, and that such rows are never modelled."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.benchmarks.schema import unexpressible_reason, workload_mismatch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import annotate_workload_mismatch as awm  # noqa: E402


def _row(**kw):
    base = {
        "source": "SemiAnalysis InferenceX (InferenceMAX) open results",
        "framework": "sglang",
        "hardware": "nvidia-b300",
        "model": "deepseek-v3",
        "framework_version": "0.5.11 (image lmsysorg/sglang:v0.5.11-cu130) | client",
        "notes": "x; run date 2026-05-13; y",
    }
    return {**base, **kw}


def test_tag_parsing_and_reason():
    assert workload_mismatch("a; b") is None
    assert workload_mismatch("workload_mismatch: prompts 5x; rest") == "prompts 5x"
    assert workload_mismatch("workload_mismatch:; rest") == "no reason given"
    why = unexpressible_reason({"notes": "workload_mismatch: prompts 5x; run date"}, None, None)
    assert "prompts 5x" in why and "never fitted" in why
    # a layout the planner cannot express keeps its own reason (it is scored elsewhere)
    both = "workload_mismatch: p; layout_unsupported: speculative decoding (MTP); z"
    assert "speculative" in unexpressible_reason({"notes": both}, None, None)
    assert unexpressible_reason({"notes": "plain"}, None, None) == ""


def test_rule_by_hand():
    assert awm.affected(_row())
    assert awm.affected(_row(framework_version="image lmsysorg/sglang:v0.5.10.post1-cu130 | S"))
    # the fix merged 2026-05-15: a later run, the v0.5.12 / v0.5.9 images, AMD, vLLM: no
    assert not awm.affected(_row(notes="run date 2026-05-16"))
    assert not awm.affected(_row(framework_version="0.5.12 (image lmsysorg/sglang:v0.5.12-cu130)"))
    assert not awm.affected(_row(framework_version="0.5.9 (image lmsysorg/sglang:v0.5.9-cu130)"))
    assert not awm.affected(_row(hardware="amd-mi355x"))
    assert not awm.affected(_row(framework="vllm"))
    assert not awm.affected(_row(source="SGLang cookbook benchmarks"))
    t = awm.tagged(_row())
    assert t["notes"].startswith(awm.REASON + "; x") and awm.tagged(t) == t  # idempotent
    assert ";" not in awm.REASON  # the reason ends at the first ';'
    assert workload_mismatch(t["notes"]) == awm.REASON[len(awm.TAG) :].strip()


def test_data_files_are_tagged_as_the_rule_says():
    # nothing left to tag, and the TPOT rows tagged are, per run (group tables of the files):
    # open results B200 v0.5.11 3, B300 v0.5.10.post1 3, B300 v0.5.11 6, H200 v0.5.11 6 = 18;
    # history B300 nvfp4 v0.5.10.post1 10 + v0.5.11 6 = 16, and 9 MTP rows (B200 fp8 v0.5.11
    # 3, B300 fp8 v0.5.10.post1 6), which issue 30's scoring skips (next test)
    assert awm.annotate(check=True) == 0
    rows = pd.concat(
        [pd.read_csv(ROOT / f, dtype=str, keep_default_na=False) for f in awm.FILES]
    )  # fmt: skip
    tag = rows["notes"].str.contains(awm.TAG, regex=False)
    assert (tag == rows.apply(lambda r: awm.affected(r.to_dict()), axis=1)).all()
    tp = rows[tag & (rows["metric"] == "tpot_ms_median")]
    spec = tp["notes"].str.contains("layout_unsupported: speculative", regex=False)
    per = tp[~spec].groupby(["source", "hardware", "framework_version"]).size()
    assert sorted(per.to_list()) == [3, 3, 6, 6, 6, 10] and spec.sum() == 9


@given(st.text(alphabet=st.characters(blacklist_characters=";"), max_size=40), st.text(max_size=40))
def test_tag_property(reason, rest):
    # the reason is the text after the tag up to the first ';', stripped, wherever it sits
    notes = f"{rest}{awm.TAG} {reason}; tail"
    got = workload_mismatch(notes)
    if awm.TAG in rest:
        return  # an earlier tag wins
    assert got == (reason.strip() or "no reason given")
    assert "never fitted" in unexpressible_reason({"notes": notes}, None, None) or (
        "layout_unsupported:" in notes
    )


@pytest.mark.parametrize("metric", ["tpot_ms_median", "ttft_ms_median", "total_tok_s"])
def test_tagged_rows_are_not_predicted(metric):
    from planner.benchmarks.predict import Predictor

    rows = pd.read_csv(ROOT / awm.FILES[1], dtype=str, keep_default_na=False)
    row = rows[rows["id"] == "ixh-1245"].iloc[0].to_dict()  # B300 nvfp4 v0.5.11, 8k/1k, c128
    out = Predictor(None, ROOT / "data" / "benchmarks", None).predict_row({**row, "metric": metric})
    assert out["predicted"] in ("", None) and "workload_mismatch" in out["reason"]


def test_tagged_speculative_rows_are_neither_scored_nor_paired():
    # the 45 tagged MTP rows of the history file (all metrics) keep their speculative
    # layout_unsupported tag but are no speculative row: spec_of_row None, and no tagged row
    # is a pair's speculative or base side
    from planner.benchmarks.speculative_rows import spec_of_row, spec_pairs

    rows = pd.read_csv(ROOT / awm.FILES[1], dtype=str, keep_default_na=False).to_dict("records")
    tagged = [r for r in rows if workload_mismatch(r["notes"]) is not None]
    spec_tagged = [r for r in tagged if "layout_unsupported: speculative" in r["notes"]]
    assert len(spec_tagged) == 45
    assert all(spec_of_row(r) is None for r in tagged)
    ids = {r["id"] for r in tagged}
    for p in spec_pairs(rows):
        assert p.spec_row["id"] not in ids
        assert not ids & {b["id"] for b in p.base_rows}
