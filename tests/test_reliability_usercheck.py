"""What a new user met following the README and docs/recommend.md (session 6 user check):
speculative flags that were ignored without a word, an acceptance length below 1 refused with
the wrong rule, a speculative winner shown as a plain one, a Pareto row of an expert-parallel
layout that read as one GPU, and notes that named the GPU twice."""

from __future__ import annotations

import pytest
from conftest import DATA_DIR, REPO_ROOT

from planner.catalog.speculative import acceptance_records
from planner.cli.main import main
from planner.cli.recommend import _pareto_rows, _without_gpu
from planner.cli.speculative import check_spec_flags, with_spec

MOE_R1 = str(REPO_ROOT / "examples" / "moe-r1.yaml")  # constraints: no speculative (off)
FLAG_ROW = ["--model", "mixtral-8x7b", "--preset", "chat", "--peak-rps", "5", "--ttft-p99", "2"]


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize(
    ("flag", "value"), [("--acceptance-length", "2.4"), ("--spec-workload", "chat")]
)
def test_spec_flag_without_the_speculative_search_is_refused(flag, value, capsys):
    # before: exit 0 and the plain answer; the flag changed nothing and nothing said so
    assert main(["recommend", MOE_R1, flag, value]) == 2
    line = _one_line_error(capsys)
    assert flag in line and "--speculative auto" in line


def test_spec_flags_pass_when_the_search_is_on():
    # the scenario's constraints.speculative: auto counts as much as the flag
    args = type("A", (), {"acceptance_length": 2.4, "spec_workload": "chat"})()
    check_spec_flags(args, "auto")  # no error


def test_acceptance_length_below_one_names_the_rule(capsys):
    # AL counts the bonus token: at least 1 token per step (the flag said "> 0" and the
    # refusal then came from inside, without the flag's name)
    argv = ["recommend", MOE_R1, "--speculative", "auto", "--acceptance-length", "0.5"]
    assert main(argv) == 2
    line = _one_line_error(capsys)
    assert "--acceptance-length" in line and "at least 1" in line


def test_acceptance_length_for_a_model_without_a_published_setting(capsys):
    with_rows = sorted({r.model for r in acceptance_records(DATA_DIR) if r.method != "draft"})
    assert "mixtral-8x7b" not in with_rows  # the premise: nothing to search for Mixtral
    argv = ["recommend", *FLAG_ROW, "--speculative", "auto", "--acceptance-length", "2.4"]
    assert main(argv) == 2
    line = _one_line_error(capsys)
    assert "mixtral-8x7b" in line and "--acceptance-length" in line
    assert all(m in line for m in with_rows)  # names the models that have settings


def test_acceptance_length_above_every_k_plus_one(capsys):
    # AL <= K + 1 (K drafted tokens + the bonus one); the largest published K for
    # DeepSeek-V3 bounds what any searched setting can take
    top_k = max(
        r.spec_tokens
        for r in acceptance_records(DATA_DIR)
        if r.model == "deepseek-v3" and r.method != "draft"
    )
    al = top_k + 2  # one above the largest K + 1
    argv = ["recommend", MOE_R1, "--speculative", "auto", "--acceptance-length", str(al)]
    assert main(argv) == 2
    line = _one_line_error(capsys)
    assert f"K + 1 = {top_k + 1}" in line and "deepseek-v3" in line


def test_a_speculative_row_says_so_in_its_layout():
    # MTP K=2 at AL 2.4: its rate holds only with MTP on, so the table must name it
    row = {"layout": "TP2", "spec_method": "mtp", "spec_tokens": 2, "acceptance_length": 2.4}
    assert with_spec(row) == "TP2 + MTP k=2, AL 2.40"
    assert with_spec({"layout": "DEP8", "spec_method": None}) == "DEP8"


def test_pareto_row_shows_the_layout_not_tp_alone():
    # DeepSeek-V3 fp4 on DEP4: tp 1 (attention data parallel 4), 4 GPUs in the replica
    front = [{"rank": 1, "gpu": "nvidia-b200", "tp": 1, "pp": 1, "usd_per_mtok_output": 0.79}]
    recs = [{"rank": 1, "layout": "DEP4"}]
    (row,) = _pareto_rows(front, recs)
    assert row["layout"] == "DEP4" and "tp" not in row and "pp" not in row
    assert list(row) == ["rank", "gpu", "layout", "usd_per_mtok_output"]
    # a row with no ranked twin keeps its own columns
    assert _pareto_rows(front, []) == front


def test_disagg_note_names_the_gpu_once():
    why = ["amd-mi325x: scale-out bandwidth per GPU unknown", "no saving: both need 6 GPUs"]
    assert _without_gpu("amd-mi325x", why) == [
        "scale-out bandwidth per GPU unknown",
        "no saving: both need 6 GPUs",
    ]


def test_readme_python_example_gives_the_number_it_prints():
    # README's "From Python" block said 25 sequences where `planner memory` (the table above
    # it, and the app paragraph) says 29 for the same question
    import math
    import re

    from planner import plan_memory

    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    said = int(re.search(r"plan\.max_concurrent_sequences  # (\d+)", text).group(1))
    plan = plan_memory("llama-3.1-70b", "nvidia-h100-sxm", "fp8", tp=2, context_len=8192)
    # whole sequences in the KV budget: 39.75 GB / 1.342 GB = 29.6 -> 29 (README's table)
    by_hand = math.floor(plan.kv_budget_bytes_per_gpu / plan.kv_bytes_per_sequence)
    assert said == plan.max_concurrent_sequences == by_hand == 29


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", str(REPO_ROOT / "examples" / "chat-8b.yaml")],
        [
            "estimate", "--model", "llama-3.1-8b", "--gpu", "nvidia-h100-sxm", "--precision",
            "bf16", "--framework", "vllm", "--batch", "8", "--input-len", "1024",
            "--output-len", "256",
        ],
    ],
)  # fmt: skip
def test_spec_workload_without_a_method_is_refused(argv, capsys):
    # before: exit 0, the plain answer, the flag ignored (no method, so no AL to pick)
    assert main([*argv, "--spec-workload", "chat"]) == 2
    line = _one_line_error(capsys)
    assert "--spec-workload" in line and "--spec-method" in line


def test_an_alias_is_named_in_the_answer():
    # `recommend --model deepseek-r1` answered under the heading "model deepseek-v3" alone
    from planner.cli.recommend import _asked_as

    assert _asked_as("deepseek-v3", "deepseek-r1").startswith("deepseek-v3 (asked as deepseek-r1")
    assert _asked_as("deepseek-v3", "deepseek-v3") == "deepseek-v3"
    assert _asked_as("deepseek-v3", None) == "deepseek-v3"  # a scenario file
