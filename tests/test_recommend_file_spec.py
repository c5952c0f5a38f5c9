"""``recommend FILE`` refuses the file's ``deployment:`` speculative fields where ``simulate``
refuses them (a buyer test, 2026-12-08: an acceptance length above K + 1 passed recommend
with exit 0 while simulate refused the same file)."""

from __future__ import annotations

import pytest

from planner.catalog import load_catalog
from planner.errors import PlannerError
from planner.scenario import scenario_from_dict

CAT = load_catalog()
BASE = {
    "model": "llama-3.1-70b",
    "workload": {"preset": "chat", "traffic": {"mean_rps": 5}},
    "slo": {"ttft": {"max_s": 2}, "tpot": {"max_s": 0.1}},
}
DEP = {"gpu": "nvidia-h200-sxm", "framework": "vllm", "precision": "fp8", "tp": 2}


def _sc(**spec):
    return scenario_from_dict({**BASE, "deployment": {**DEP, **spec}})


def test_acceptance_length_above_k_plus_one_names_the_file_field():
    # K = 2 draft tokens: at most K + 1 = 3 tokens per verify step, so AL 5 is impossible
    sc = _sc(spec_method="eagle3", spec_tokens=2, acceptance_length=5)
    with pytest.raises(
        PlannerError, match=r"^deployment\.acceptance_length must be in \[1, K \+ 1\] = \[1, 3\]"
    ):
        sc.check_spec(CAT)


def test_a_valid_or_absent_speculative_setting_passes():
    assert _sc(spec_method="eagle3", spec_tokens=2, acceptance_length=2.5).check_spec(CAT) is None
    assert _sc().check_spec(CAT) is None


def test_the_cli_refuses_the_file_in_one_line(tmp_path, capsys):
    from planner.cli import main

    f = tmp_path / "s.yaml"
    f.write_text(
        "model: llama-3.1-70b\nworkload: {preset: chat, traffic: {mean_rps: 5}}\n"
        "slo: {ttft: {max_s: 2}, tpot: {max_s: 0.1}}\n"
        "deployment: {gpu: nvidia-h200-sxm, framework: vllm, precision: fp8, tp: 2, "
        "spec_method: eagle3, spec_tokens: 2, acceptance_length: 5}\n"
    )
    assert main(["recommend", str(f), "--gpus", "nvidia-h200-sxm"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "deployment.acceptance_length" in err[0]
