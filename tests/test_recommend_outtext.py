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


# --------------------------------------------------------------------------- layout flags
def _moe_r1():
    from conftest import REPO_ROOT

    from planner.scenario import load_scenario

    return load_scenario(REPO_ROOT / "examples" / "moe-r1.yaml")  # tp 1, ep 8, attention_dp 8


def test_tp_flag_on_a_dep_scenario_is_tp_alone():
    sc = _moe_r1()
    kw = dict(gpu="amd-mi325x", framework="vllm", precision="fp8", tp=8)
    # the CLI rule: --tp 8 replaces DEP8: TP8 on 8 GPUs (before: TP8 x DP8 = 64 GPUs)
    dep = sc.resolve_deployment(**kw, flags_replace_layout=True)
    assert (dep.tp, dep.ep, dep.attention_dp) == (8, 1, 1)
    assert dep.layout.tp * dep.layout.attention_dp * dep.layout.pp == 8
    note = sc.layout_replaced(8, None, None, dep)
    assert note.startswith("layout from the command line: TP8 (the scenario's DEP8 replaced")
    assert "--ep / --attention-dp" in note
    # the library's merge (the What-if page passes its TP on every call) is unchanged:
    # 8 x 8 attention ranks = 64 GPUs
    merged = sc.resolve_deployment(**kw)
    assert (merged.tp, merged.ep, merged.attention_dp) == (8, 8, 8)


def test_every_layout_flag_given_keeps_them_and_says_nothing():
    # recommend's reproduce line passes all of --tp --pp --ep --attention-dp
    sc = _moe_r1()
    dep = sc.resolve_deployment(tp=1, pp=1, ep=8, attention_dp=8, flags_replace_layout=True)
    assert (dep.tp, dep.ep, dep.attention_dp) == (1, 8, 8)
    assert sc.layout_replaced(1, 8, 8, dep) is None
    # no layout flag: the file's layout, no line
    dep = sc.resolve_deployment(flags_replace_layout=True)
    assert (dep.tp, dep.ep, dep.attention_dp) == (1, 8, 8)
    assert sc.layout_replaced(None, None, None, dep) is None


def test_capacity_tp8_on_the_dep8_scenario(capsys):
    import json

    from conftest import REPO_ROOT

    from planner.cli.main import main

    argv = ["capacity", str(REPO_ROOT / "examples" / "moe-r1.yaml"), "--gpu", "amd-mi325x",
            "--framework", "vllm", "--precision", "fp8", "--tp", "8", "--no-curve",
            "--format", "json"]  # fmt: skip
    # before: "a replica of 64 GPUs spans 8 scale-up domains of 8 ... bandwidth unknown"
    assert main(argv) == 0, capsys.readouterr().err
    out = json.loads(capsys.readouterr().out)
    assert out["gpus_per_replica"] == 8
    assert "TP8 (the scenario's DEP8 replaced" in out["layout_note"]
    # --ep alone: tp = attention_dp = 1 cannot hold ep 4; the line says why
    assert main([*argv[:2], "--ep", "4", "--no-curve"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "layout flags replace the scenario's DEP8" in err[0]


# --------------------------------------------------------------------------- --top N short
def _met(gpu: str, fw: str):
    return SimpleNamespace(
        opt=SimpleNamespace(gpu=SimpleNamespace(id=gpu), framework=SimpleNamespace(id=fw))
    )


def test_fewer_rows_than_asked_says_why():
    from planner.recommend.finish import fewer_rows

    met = [_met("nvidia-h200-sxm", "trtllm")] * 3  # three layouts / formats of one pair
    rejected = [SimpleNamespace(stage=s) for s in ["pruned"] * 5 + ["memory"] * 2 + ["slo"]]
    text = fewer_rows(met, 1, 4, rejected)
    assert (
        "Top 4 asked, 1 shown: the 3 options that met the SLOs are on 1 GPU x engine pair "
        "(nvidia-h200-sxm / trtllm)" in text
    )
    # 5 pruned; 2 memory + 1 slo = 3 rejected
    assert "5 could not beat a kept row (pruned) and 3 were rejected" in text
    assert fewer_rows(met, 4, 4, rejected) == ""  # as many rows as asked: nothing to say


def test_top4_on_one_gpu_and_engine_says_why_one_row(capsys):
    import json

    from planner.cli.main import main

    argv = ["recommend", "--model", "deepseek-v3", "--peak-rps", "10", "--input-tokens", "1000",
            "--output-tokens", "1000", "--ttft-p99", "5", "--tpot-p99", "0.1", "--gpus", "h200",
            "--frameworks", "trtllm", "--top", "4", "--format", "json"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    d = json.loads(capsys.readouterr().out)
    assert len(d["recommendations"]) == 1  # the premise: one GPU x engine pair, one row
    s = d["summary"]
    assert "Top 4 asked, 1 shown" in d["why"] and "nvidia-h200-sxm / trtllm" in d["why"]
    # the counts are the search's own: options that met the SLOs, options pruned by bound
    assert s["feasible"] > 1  # several layouts / formats of the pair met the SLOs
    assert f"the {s['feasible']} options that met the SLOs" in d["why"]
    assert f"{s['options_pruned']} could not beat a kept row" in d["why"]


def test_the_decision_names_a_speculative_option_with_its_setting():
    from planner.recommend.decide import _label

    assert _label(SPEC) == "amd-mi325x vllm w4a16 tp=2 + MTP k=2, AL 2.40"
    assert _label(DEP) == "nvidia-b200 trtllm fp4 DEP4"
