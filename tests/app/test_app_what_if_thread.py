"""What-if draws its curve in a helper thread beside the answer where a core is free
(:func:`app_pages.what_if_eval.curve_beside`): the page's numbers are the same dict, key for
key and bit for bit, as one after the other; for an answer, for an answer's error and for a
deployment that cannot be built."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")

from app_pages import what_if_eval as E  # noqa: E402
from app_pages.runs import default_scenario_json  # noqa: E402

NO_CUSTOM = ((), (), ())


def _sj(model: str, tpot_s: float | None = None) -> str:
    d = json.loads(default_scenario_json())
    d["model"] = model
    if tpot_s is not None:
        d["slo"]["tpot"]["max_s"] = tpot_s
    return json.dumps(d, sort_keys=True)


CASES = [
    (_sj("llama-3.1-8b"), E.Knobs("nvidia-h100-sxm", "vllm", "fp8", "fp8", 1, 8192, 1024)),
    # TPOT 1 ms: no rate meets it (the answer's error, the curve still drawn)
    (_sj("llama-3.1-70b", 0.001), E.Knobs("nvidia-h100-sxm", "vllm", "fp8", "fp8", 2, 8192, 256)),
    # 70B bf16 on one A100 80 GB: the weights alone do not fit (no replica)
    (_sj("llama-3.1-70b"), E.Knobs("nvidia-a100-80gb-sxm", "vllm", "bf16", "bf16", 1, 4096, 64)),
]


@pytest.mark.parametrize("sj, k", CASES)
def test_threaded_evaluate_equals_one_after_the_other(monkeypatch, sj, k):
    raw = E.evaluate.__wrapped__  # not the cache: each call computes
    seen = []

    def forced(on):
        def beside():
            seen.append(on)
            return on

        return beside

    monkeypatch.setattr(E, "curve_beside", forced(False))
    alone = raw(NO_CUSTOM, sj, k)
    monkeypatch.setattr(E, "curve_beside", forced(True))
    both = raw(NO_CUSTOM, sj, k)
    assert list(both) == list(alone)  # the same keys in the same order
    assert repr(both) == repr(alone)  # every value, floats bit for bit
    if "replicas" in alone or "no_capacity" in alone:
        assert seen == [False, True]  # both paths ran


def test_curve_beside_needs_a_free_core(monkeypatch):
    import os

    from planner.recommend import processes

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(processes, "others_running", lambda: 0)
    assert E.curve_beside()
    monkeypatch.setattr(processes, "others_running", lambda: 1)  # both cores taken
    assert not E.curve_beside()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(processes, "others_running", lambda: 0)
    assert not E.curve_beside()  # one CPU
