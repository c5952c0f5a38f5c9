"""An option predicted from an older generation of its engine than the engine's newest release
says so, with the published gap where one is stored (planner/catalog/release_gap.py,
data/release_gaps.yaml; s13-vllmdense)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from planner.catalog import load_catalog
from planner.catalog.profile import load_profile
from planner.catalog.release_gap import generation_fields, release_gaps
from planner.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
H200 = "nvidia-h200-sxm"


def _gap(gpu: str):
    return next(g for g in release_gaps() if g.gpu == gpu and g.engine == "vllm")


def test_a_v0_node_gets_the_note_and_the_published_gap():
    f = generation_fields("vllm", "0.6.3.post2.dev308", H200, "fp8", "dense")
    g = _gap(H200)
    note = f["generation_note"]
    # vLLM's generations (data/frameworks.yaml): V0 from 0.1.0, V1 from 0.8.0
    assert note.startswith("predicted from vllm 0.6.3.post2.dev308 (V0)")
    assert "is V1" in note and "vllm 0.9.2 (V1)" in note
    assert f"{g.ratio_low:.2f}-{g.ratio_high:.2f}x" in note
    assert f["generation_gap"]["rows"] == list(g.rows)
    assert (
        f["generation_gap"]["source"] == g.source and f["generation_gap"]["as_of"] == "2025-09-09"
    )


def test_the_stored_h200_gap_is_the_published_one():
    # Krai MLPerf v5.1, vLLM 0.9.2 on 8-24 H200: measured 3,203-3,862 tok/s/GPU against the V0
    # node's ~1,480-1,530 (scripts/release_mlperf51.py): 2.1-2.7x (vllmh200.md section 3)
    g = _gap(H200)
    assert g.measured_release == "0.9.2" and len(g.rows) == 8
    assert 2.0 <= g.ratio_low <= g.ratio_high <= 2.8


@pytest.mark.parametrize(
    ("engine", "release", "gpu"),
    [
        ("vllm", "0.11.0", H200),  # V1 node: the engine's own generation
        ("vllm", None, H200),  # the fit over every release: no release node
        ("trtllm", "1.0", H200),  # an engine without generations
    ],
)
def test_no_note_where_the_node_is_of_the_current_generation(engine, release, gpu):
    assert generation_fields(engine, release, gpu, "fp8", "dense") == {
        "generation_note": None,
        "generation_gap": None,
    }


def test_a_gpu_without_a_stored_gap_gets_the_generation_line_only():
    f = generation_fields("vllm", "0.6.3.post2.dev308", "nvidia-h20", "fp8", "dense")
    assert f["generation_gap"] is None
    assert f["generation_note"].endswith("is V1")


def test_the_stored_gaps_are_what_the_bundled_profile_gives():
    """data/release_gaps.yaml is generated from the bundled profile: after a refit this fails
    until `scripts/release_mlperf51.py --write-gaps` is rerun."""
    spec = importlib.util.spec_from_file_location("rel51", ROOT / "scripts/release_mlperf51.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows, _ = mod.krai_rows()
    now = mod.default_release_gaps(rows, load_catalog(), load_profile(None))
    stored = {(g.gpu, g.predicted_from): g for g in release_gaps()}
    assert {(r["gpu"], r["predicted_from"]) for r in now} == set(stored)
    for r in now:
        g = stored[(r["gpu"], r["predicted_from"])]
        assert (r["ratio_low"], r["ratio_high"]) == pytest.approx(
            (g.ratio_low, g.ratio_high), abs=0.011
        )
        assert tuple(r["rows"]) == g.rows


def test_recommend_carries_the_note_in_json_and_text(capsys):
    argv = ["recommend", "--model", "llama-3.1-70b", "--peak-rps", "50", "--input-tokens",
            "1500", "--output-tokens", "300", "--ttft-p99", "2", "--tpot-p99", "0.05",
            "--frameworks", "vllm", "--gpus", H200, "--precisions", "fp8"]  # fmt: skip
    main([*argv, "--format", "json"])
    r = json.loads(capsys.readouterr().out)["recommendations"][0]
    assert r["framework"] == "vllm" and r["release"].endswith("0.6.3.post2.dev308")
    assert "(V0)" in r["generation_note"] and r["generation_gap"]["gpu"] == H200
    main(argv)
    text = capsys.readouterr().out
    assert "predicted from an older engine generation" in text
    assert "vllm 0.9.2 (V1) measured" in text
