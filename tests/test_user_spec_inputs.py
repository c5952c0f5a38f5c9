"""Issue 30's bad input tried as a user: a draft model that cannot draft for the target must
be refused in one line naming ``draft_model`` (found by hand, s10 usertest):

* ``--draft-model nosuch`` answered "no published acceptance length for llama-3.1-70b with
  draft K=3" (the unknown id was named only once an acceptance length was given);
* ``--draft-model deepseek-v3`` for ``llama-3.1-70b`` (vocabularies of 129,280 and 128,256
  tokens) and ``--draft-model llama-3.1-70b`` for itself were estimated (rc 0).

A draft model proposes token ids that the target verifies, so both must share one
vocabulary; llama.cpp, the most lenient engine check found, refuses a draft whose vocabulary
size differs by more than 128 tokens (common/speculative.cpp SPEC_VOCAB_MAX_SIZE_DIFFERENCE).
"""

from __future__ import annotations

import pytest

from planner.catalog.catalog import load_catalog
from planner.catalog.speculative import spec_decode
from planner.errors import PlannerError
from tests.test_reliability_hostile import run_cli

CAT = load_catalog()
EST = ["estimate", "--model", "llama-3.1-70b", "--gpu", "nvidia-h200-sxm", "--precision", "fp8",
       "--framework", "vllm", "--tp", "2", "--spec-method", "draft", "--spec-tokens", "3",
       "--batch", "1", "--input-len", "100", "--output-len", "100"]  # fmt: skip


@pytest.mark.parametrize("al", [[], ["--acceptance-length", "2"]])
def test_unknown_draft_model_is_named(al):
    rc, _, err = run_cli([*EST, "--draft-model", "nosuch", *al])
    assert rc == 2
    assert "draft_model" in err and "nosuch" in err


@pytest.mark.parametrize(
    "draft, rule",
    [("deepseek-v3", "vocabular"), ("llama-3.1-70b", "the target model itself")],
)
def test_a_draft_that_cannot_draft_is_refused(draft, rule):
    rc, _, err = run_cli([*EST, "--draft-model", draft, "--acceptance-length", "2"])
    assert rc == 2
    assert "draft_model" in err and rule in err


def test_a_same_vocabulary_draft_is_taken():
    # Llama-3.1-8B drafts for Llama-3.1-70B (both 128,256 tokens): taken, at the given AL
    s = spec_decode(CAT.model("llama-3.1-70b"), "draft", 3, 2.0, "llama-3.1-8b",
                    framework=CAT.framework("vllm"))  # fmt: skip
    assert s is not None and s.draft_model == "llama-3.1-8b" and s.acceptance_length == 2.0
    with pytest.raises(PlannerError, match="draft_model"):
        spec_decode(CAT.model("llama-3.1-70b"), "draft", 3, 2.0, "mistral-7b-v0.1")


MTP3 = """
model: deepseek-v3
workload:
  input_tokens: {kind: fixed, tokens: 1000}
  output_tokens: {kind: fixed, tokens: 1000}
  traffic: {peak_rps: 2}
slo:
  tpot: {max_s: 0.1, percentile: p99}
deployment: {gpu: nvidia-h200-sxm, framework: sglang, precision: fp8, tp: 8,
             spec_method: mtp, spec_tokens: 3, acceptance_length: 2.5}
"""


def _scenario():
    import yaml

    from planner.scenario import scenario_from_dict

    return scenario_from_dict(yaml.safe_load(MTP3))


def test_spec_method_flag_replaces_the_files_setting():
    # found by hand: `--spec-method none` on this file ended in "spec_tokens is set but
    # spec_method is none", and `--spec-method ngram` ran n-gram at the file's MTP K = 3 and
    # AL 2.5 (an acceptance length measured for another method)
    sc = _scenario()
    off = sc.resolve_deployment(spec_method="none")
    assert (off.spec_method, off.spec_tokens, off.acceptance_length) == ("none", None, None)
    ng = sc.resolve_deployment(spec_method="ngram")
    assert (ng.spec_method, ng.spec_tokens, ng.acceptance_length) == ("ngram", None, None)
    # another K: the file's AL (for K = 3) is not carried to K = 1
    k1 = sc.resolve_deployment(spec_tokens=1)
    assert (k1.spec_method, k1.spec_tokens, k1.acceptance_length) == ("mtp", 1, None)
    # the same method and K again, or an AL alone: the file's other fields stay
    same = sc.resolve_deployment(spec_method="mtp", acceptance_length=2.0)
    assert (same.spec_tokens, same.acceptance_length) == (3, 2.0)
    assert sc.resolve_deployment().acceptance_length == 2.5


def test_spec_method_none_turns_the_files_setting_off(tmp_path):
    p = tmp_path / "mtp3.yaml"
    p.write_text(MTP3)
    rc, out, err = run_cli(["simulate", p, "--requests", "30", "--spec-method", "none",
                            "--format", "json"])  # fmt: skip
    assert rc == 0, err
    import json

    assert json.loads(out).get("spec_method") in (None, "none")


R1_REC = """
model: deepseek-v3
workload:
  input_tokens: {kind: fixed, tokens: 1000}
  output_tokens: {kind: fixed, tokens: 1000}
  traffic: {peak_rps: 2}
slo:
  tpot: {max_s: 0.1, percentile: p99}
"""


@pytest.mark.parametrize(
    "constraints, field",
    [
        ("{acceptance_length: 2}", "constraints.acceptance_length"),
        ("{spec_workload: chat}", "constraints.spec_workload"),
        ("{speculative: auto, acceptance_length: 50}", "constraints.acceptance_length"),
    ],
)
def test_recommend_refuses_speculative_constraints_it_would_ignore(tmp_path, constraints, field):
    # found by hand: these scenario constraints answered rc 0 with the plain search (the same
    # values as flags, --acceptance-length / --spec-workload, are refused); AL 50 exceeds
    # K + 1 = 8 of DeepSeek-V3's largest published setting (MTP K = 7)
    p = tmp_path / "r.yaml"
    p.write_text(R1_REC + f"constraints: {constraints}\n")
    rc, _, err = run_cli(["recommend", p, "--gpus", "nvidia-h200-sxm", "--disagg", "off"])
    assert rc == 2
    assert field in err
