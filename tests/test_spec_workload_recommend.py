"""The prompts' kind and the user's acceptance length in the recommender's speculative
options, and the source each option's AL is shown with (issue 30: "acceptance as a
workload-dependent prior", the options naming ``AL 2.6±0.3``)."""

from __future__ import annotations

import pytest
from conftest import DATA_DIR
from pydantic import ValidationError

from planner.catalog import load_catalog
from planner.catalog.speculative import (
    acceptance_records,
    chain_acceptance_length,
    chain_rate,
    cite_of,
    published_specs,
)
from planner.errors import PlannerError
from planner.recommend.constraints import Constraints

_CAT = load_catalog(DATA_DIR)
H200 = "nvidia-h200-sxm"
PR649 = "SemiAnalysisAI/InferenceX PR #649"


def _specs(**kw):
    return published_specs(
        _CAT.model("deepseek-v3"), _CAT.framework("sglang"), data_dir=DATA_DIR, **kw
    )


def test_cite_is_the_source_up_to_its_title():
    # the text before the first title quote, parenthesis, comma or ": "
    assert cite_of("SemiAnalysisAI/InferenceX PR #649 '[AMD] fix: add ...' (description)") == (
        PR649
    )
    assert cite_of("DeepSeek-V3 Technical Report, arXiv:2412.19437, section 5.4.3") == (
        "DeepSeek-V3 Technical Report"
    )
    assert cite_of("huggingface.co/nebius/MTP-DeepSeek-V3-0324 model card, 'Performance'") == (
        "huggingface.co/nebius/MTP-DeepSeek-V3-0324 model card"
    )
    # every row of data/speculative.yaml gets a short, non-empty name
    for r in acceptance_records(DATA_DIR):
        assert 0 < len(cite_of(r.source)) <= 64, r.source


def test_random_prompt_options_read_the_random_prior_and_name_it():
    got = {s.spec_tokens: s for s in _specs(workload="random")}
    # the random-prompt rows exist at K = 3 only (InferenceX PR #649, ~2.50): K = 1 and 2
    # are carried down by the chain rate, K = 4, 5, 7 have no random prior and are left out
    assert sorted(got) == [1, 2, 3]
    assert got[3].acceptance_length == pytest.approx(2.50)
    # 1 + r + r^2 + r^3 = 2.5 -> r = 0.6914; K = 2: 1 + r + r^2 = 2.1695; K = 1: 1 + r = 1.6914
    assert got[2].acceptance_length == pytest.approx(2.1695, abs=2e-3)
    assert got[1].acceptance_length == pytest.approx(1.6914, abs=2e-3)
    assert got[3].label() == f"MTP k=3, AL 2.50 (random, {PR649})"
    assert got[1].label() == f"MTP k=1, AL 1.69 (random, {PR649}, carried from K=3)"
    # the chain rate is the same one both ways
    r = chain_rate(2.5, 3)
    assert got[1].acceptance_length == pytest.approx(chain_acceptance_length(r, 1))


def test_natural_text_options_are_unchanged_by_the_new_arguments():
    plain = {s.spec_tokens: s.acceptance_length for s in _specs()}
    # TensorRT-LLM tech blog 1 (K = 2..5: 2.58, 2.82, 2.99, 3.01); K = 1 the mean of it and
    # the DeepSeek-V3 report, (1.92 + 1.875) / 2 = 1.8975; K = 7 nebius (3.20 + 3.09) / 2
    assert plain == pytest.approx({1: 1.8975, 2: 2.58, 3: 2.82, 4: 2.99, 5: 3.01, 7: 3.145})


def test_user_acceptance_length_wins_over_every_prior():
    got = _specs(workload="random", acceptance_length=2.4)
    # K + 1 >= 2.4 leaves K = 2, 3, 4, 5, 7 (K = 1 allows at most 2 tokens per step); the
    # user's AL replaces the random prior even where that prior exists (K = 2, 3)
    assert [s.spec_tokens for s in got] == [2, 3, 4, 5, 7]
    assert all(s.acceptance_length == 2.4 and s.spread == 0.0 for s in got)
    assert got[0].label() == "MTP k=2, AL 2.40 (given)"


def test_bad_prompt_kind_or_acceptance_length_is_one_line_naming_the_field():
    with pytest.raises(PlannerError, match="^spec_workload must be one of chat, code"):
        _specs(workload="noise")
    with pytest.raises(PlannerError, match="^acceptance_length must be >= 1"):
        _specs(acceptance_length=0.5)
    with pytest.raises(ValidationError, match="spec_workload"):
        Constraints(spec_workload="noise")
    with pytest.raises(ValidationError, match="acceptance_length"):
        Constraints(acceptance_length=0.9)
    assert Constraints(spec_workload="random").spec_workload == "random"


def test_recommender_options_carry_the_prompt_kind():
    from planner.recommend.options import enumerate_options

    m = _CAT.model("deepseek-v3")
    kw = dict(gpus=(H200,), frameworks=("sglang",), precisions=("fp8",), tps=(8,))
    on, _ = enumerate_options(_CAT, m, speculative=True, spec_workload="random", **kw)
    spec = [o for o in on if o.spec is not None]
    assert {o.spec.spec_tokens for o in spec} == {1, 2, 3}
    assert all(o.spec.workload == "random" for o in spec)
    # the option's label shows the AL used and its source
    assert any(f"MTP k=3, AL 2.50 (random, {PR649})" in o.label() for o in spec)


def test_recommend_flags_then_constraints_then_deployment_name_the_prompt_kind(tmp_path):
    from planner.cli.main import build_parser
    from planner.cli.recommend import _constraints
    from planner.scenario import load_scenario

    src = (DATA_DIR.parent / "examples" / "moe-r1.yaml").read_text(encoding="utf-8")

    def got(text, *flags):
        f = tmp_path / "s.yaml"
        f.write_text(text, encoding="utf-8")
        args = build_parser().parse_args(["recommend", str(f), *flags])
        return _constraints(args, load_scenario(f), _CAT)

    # the example names no kind: natural text
    assert got(src).spec_workload is None
    # the deployment's kind (what estimate / capacity read) reaches recommend
    dep = src.replace("deployment:\n", "deployment:\n  spec_workload: random\n", 1)
    assert got(dep).spec_workload == "random"
    # the constraints' own kind wins over the deployment's; the flag over both
    both = dep.replace("constraints:\n", "constraints:\n  spec_workload: code\n", 1)
    on = ("--speculative", "auto")
    assert got(both, *on).spec_workload == "code"
    # (both flags, and the constraints' own field, act only on the speculative search:
    # without it they are refused, tests/test_reliability_usercheck.py and
    # tests/test_user_spec_inputs.py)
    with pytest.raises(PlannerError, match="constraints.spec_workload"):
        got(both)
    assert got(both, *on, "--spec-workload", "chat").spec_workload == "chat"
    # the user's AL rides along as a constraint
    assert got(src, *on, "--acceptance-length", "2.2").acceptance_length == 2.2
    with pytest.raises(SystemExit):  # argparse refuses an unknown kind
        got(src, "--spec-workload", "noise")
