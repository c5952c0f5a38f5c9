"""One helper gives build_replica the speculative decoding arguments of a setting
(:func:`planner.catalog.speculative.replica_kwargs`): the recommender's options and
``capacity --compare-tp`` used two copies, the recommender's without the draft model and
the workload."""

from __future__ import annotations

from planner.catalog.speculative import SpecDecode, replica_kwargs
from planner.serving import build_replica


def test_off_is_no_arguments():
    assert replica_kwargs(None) == {}


def test_a_setting_rebuilds_itself():
    spec = SpecDecode(method="mtp", spec_tokens=2, acceptance_length=2.4, engine="sglang")
    kw = replica_kwargs(spec)
    assert kw == {"spec_method": "mtp", "spec_tokens": 2, "acceptance_length": 2.4,
                  "draft_model": None, "spec_workload": None}  # fmt: skip
    rep = build_replica("deepseek-v3", "nvidia-h200-sxm", "fp8", "sglang", tp=8, **kw)
    assert (rep.spec.method, rep.spec.spec_tokens, rep.spec.acceptance_length) == ("mtp", 2, 2.4)
