"""Output text of ``planner recommend`` (session 6, after the user check): a speculative
winner named with its setting in the ``why`` sentence and the Pareto rows, the layout in the
JSON Pareto rows, a line saying why ``--top N`` shows fewer rows, and the command line's
layout replacing a scenario's in ``capacity`` / ``simulate``."""

from __future__ import annotations

from types import SimpleNamespace

from planner.cli.recommend import _pareto_rows
from planner.recommend.finish import layout_with_spec, pareto_front, spec_suffix, why_winner

#: the user check's speculative winner (MI325X w4a16 TP2, MTP K=2 at AL 2.4) and a DEP4
#: replica: cheaper-but-slower and dearer-but-faster, so both are on the Pareto front
SPEC = {
    "rank": 1, "gpu": "amd-mi325x", "framework": "vllm", "precision": "w4a16",
    "kv_precision": "fp8", "tp": 2, "pp": 1, "ep": 1, "attention_dp": 1, "layout": "TP2",
    "spec_method": "mtp", "spec_tokens": 2, "acceptance_length": 2.4,
    "num_gpus": 6, "replicas": 3, "gpus_per_replica": 2, "usd_per_hour": 11.70,
    "usd_per_mtok_output": 0.325, "e2e_p99_s": 49.4, "max_rate_per_replica": 5.54,
    "binding_constraint": "throughput: max_num_seqs",
}  # fmt: skip
DEP = {
    **SPEC, "rank": 2, "gpu": "nvidia-b200", "framework": "trtllm", "precision": "fp4",
    "tp": 1, "ep": 4, "attention_dp": 4, "layout": "DEP4", "spec_method": None,
    "spec_tokens": None, "acceptance_length": None, "usd_per_mtok_output": 0.794,
    "e2e_p99_s": 20.0,
}  # fmt: skip


def test_spec_suffix_names_method_k_and_al():
    assert spec_suffix(SPEC) == " + MTP k=2, AL 2.40"
    assert spec_suffix(DEP) == ""
    assert layout_with_spec(SPEC) == "TP2 + MTP k=2, AL 2.40"
    assert layout_with_spec(DEP) == "DEP4"
    # a row without a layout name: the report's tp= form
    assert layout_with_spec({"tp": 4, "pp": 1, "spec_method": "eagle3", "spec_tokens": 3}) == (
        "tp=4 + EAGLE-3 k=3"
    )


def test_why_names_the_speculative_setting_of_the_winner():
    # before: "amd-mi325x / vllm / w4a16 (kv fp8) tp=2: 6 GPUs": the rate holds only with MTP
    why = why_winner([SimpleNamespace(result=SPEC)], None, [])
    assert why.startswith("amd-mi325x / vllm / w4a16 (kv fp8) tp=2 + MTP k=2, AL 2.40: 6 GPUs")


def test_json_pareto_rows_carry_the_layout():
    # $0.325/M at 49.4 s and $0.794/M at 20.0 s: neither beats the other on both
    front = pareto_front([SPEC, DEP])
    assert [r["layout"] for r in front] == ["TP2 + MTP k=2, AL 2.40", "DEP4"]
    assert [r["tp"] for r in front] == [2, 1]  # tp / pp kept for existing readers
    # the table shows the layout in place of tp / pp, once
    rows = _pareto_rows(front, [SPEC, DEP])
    assert [list(r) for r in rows] == [
        ["rank", "gpu", "framework", "precision", "layout", "usd_per_mtok_output", "e2e_p99_s"]
    ] * 2
    assert rows[0]["layout"] == "TP2 + MTP k=2, AL 2.40"
