"""Thirteenth pass, speed: the What-if change and the screen do less work, same numbers.

* ``SimResult.summary(per_iteration=False)`` (a closed-loop curve point) is the full summary
  without its ``itl_*`` / ``batch_size_*`` fields, every other value bit for bit, and never
  builds the per-iteration statistics;
* ``answer_for_deployment(find_limit=False)`` (What-if) is the full answer but for
  ``limited_by`` (empty) and the run :func:`planner.serving.answer.limited_by` makes;
* the screen's remembered band lookups (:mod:`planner.recommend.beyond`) equal the computed
  ones, follow a swapped profile and a switched-off :data:`TRANSFER_EDGE_TIERS`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.catalog import load_catalog
from planner.catalog import profile as profile_mod
from planner.recommend import beyond
from planner.serving import build_replica, throughput_latency_curve
from planner.serving.answer import answer_for_deployment
from planner.serving.probe import run
from planner.workload import SLO, preset

CAT = load_catalog()
SLO_CHAT = SLO.model_validate({"ttft": {"max_s": 1.0}, "tpot": {"max_s": 0.05}})
PER_ITERATION = ("itl_mean_s", "itl_p50_s", "itl_p90_s", "itl_p99_s", "batch_size_mean",
                 "batch_size_p50", "batch_size_p99", "batch_size_max")  # fmt: skip


def _replica(**kw):
    return build_replica("llama-3.1-8b", "nvidia-h100-sxm", "fp8", "vllm", catalog=CAT, **kw)


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


def test_summary_without_per_iteration_fields_is_the_rest_bit_for_bit():
    wl = preset("chat")
    reqs = wl.sample_requests(600, np.random.default_rng(3), 1.0)
    calls = []
    res = run(_replica(), reqs, 32)  # closed loop, 32 clients
    stats = res.iteration_stats
    assert callable(stats)  # built on first use only

    def counted():
        calls.append(1)
        return stats()

    res.iteration_stats = counted
    mask = np.zeros(len(reqs), bool)
    mask[50:550] = True
    light = res.summary(SLO_CHAT, mask=mask, per_iteration=False)
    assert calls == []  # the per-iteration statistics were never built
    full = res.summary(SLO_CHAT, mask=mask)
    assert calls == [1]
    assert set(full) - set(light) == set(PER_ITERATION)
    assert list(light) == [k for k in full if k not in PER_ITERATION]  # the same order
    for k, v in light.items():
        assert _same(v, full[k]), k


def test_curve_rows_unchanged_by_the_lighter_summary(monkeypatch):
    """Each point of the curve reads none of the per-iteration fields: the rows with the
    light summary equal those with the full one (every key, every value)."""
    from planner.serving import result

    rep, wl = _replica(max_num_seqs=64), preset("chat")
    kw = dict(slo=SLO_CHAT, concurrencies=[1, 8, 64], min_requests=300, max_requests=600)
    light = throughput_latency_curve(rep, wl, rng=np.random.default_rng(0), **kw)
    summary = result.SimResult.summary

    def full_summary(self, *a, per_iteration=True, **k):
        return summary(self, *a, per_iteration=True, **k)

    monkeypatch.setattr(result.SimResult, "summary", full_summary)
    full = throughput_latency_curve(rep, wl, rng=np.random.default_rng(0), **kw)
    assert light == full


def test_answer_without_its_limit_is_the_same_answer():
    rep, wl = _replica(), preset("chat")
    kw = dict(headroom=0.2, peak_rps=20.0, seed=0, fit_percentile=None)
    full = answer_for_deployment(rep, wl, SLO_CHAT, **kw)
    quick = answer_for_deployment(rep, wl, SLO_CHAT, find_limit=False, **kw)
    assert full.limited_by and quick.limited_by == ""
    assert quick.fields() == full.fields()
    assert quick.at_max_rate == full.at_max_rate and quick.at_planned == full.at_planned
    # limited_by runs the lowest failing rate again to its end, or reads a run it has
    assert full.simulations - quick.simulations in (0, 1)
    for f in ("replicas", "max_rate_rps", "planned_rate_rps", "zero_load", "cap_rps"):
        assert getattr(quick, f) == getattr(full, f), f


LABELS = [
    "fit (vllm/nvidia-h100-sxm/fp8, 120 rows)",  # fit: not a transfer tier
    "transferred from global fit over all frameworks (3,000 rows)",  # global
    "transferred from lmdeploy on nvidia (nvidia-a100-80gb-sxm, 40 rows)",  # vendor_framework
    "transferred from vllm on all GPUs (900 rows)",  # framework
    "transferred from vllm on hopper GPUs (500 rows)",  # same_arch: not a transfer tier
    "no such label",  # unknown: no tier, no band
]


@pytest.mark.parametrize("label", LABELS)
@pytest.mark.parametrize("vendor, fw", [("nvidia", "vllm"), ("amd", "sglang")])
def test_remembered_band_lookups_equal_the_computed_ones(label, vendor, fw):
    beyond._LOWS.clear()
    beyond._TIERS.clear()
    want_low = beyond._low_band(label, vendor, fw)
    try:
        want_tier = profile_mod.provenance_tier(label)
    except Exception:  # noqa: BLE001 - an unknown label: no tier
        want_tier = None
    for _ in range(2):  # computed, then remembered
        assert beyond._low_of(label, vendor, fw) == want_low
        assert beyond._tier(label) == want_tier
        assert beyond.transfer_tier(label) == (
            want_tier if want_tier in beyond.TRANSFER_EDGE_TIERS else None
        )


def test_remembered_lookups_follow_the_profile_and_the_switch(monkeypatch, tmp_path):
    label = "transferred from global fit over all frameworks (3,000 rows)"
    beyond._LOWS.clear()
    low = beyond._low_of(label, "nvidia", "vllm")
    assert low is not None and 0 < low < 1  # the bundled profile has a global band
    assert beyond.transfer_tier(label) == "global"
    # no profile: no band (error_band's ratios are None), not the remembered one
    monkeypatch.setattr(profile_mod, "DEFAULT_PROFILE", tmp_path / "none.yaml")
    assert beyond._low_band(label, "nvidia", "vllm") is None
    assert beyond._low_of(label, "nvidia", "vllm") is None
    monkeypatch.undo()
    assert beyond._low_of(label, "nvidia", "vllm") == low
    # the rule switched off after the tier was remembered
    monkeypatch.setattr(beyond, "TRANSFER_EDGE_TIERS", ())
    assert beyond.transfer_tier(label) is None


def test_unit_draws_are_the_fresh_draws_and_copies():
    """``Workload.unit_draws(n, seed)``: the lengths and unit arrivals a fresh
    ``default_rng(seed)`` draws (sample_lengths, then unit_arrivals), on the first call and
    from the memo; a caller changing its arrays changes no later answer."""
    from planner.workload import workload as wmod

    wl = preset("chat")
    wmod._DRAWS._items.clear()
    rng = np.random.default_rng(7)
    i, o = wl.sample_lengths(500, rng)
    unit = wl.traffic.unit_arrivals(500, rng)
    first = wl.unit_draws(500, 7)
    again = wl.unit_draws(500, 7)
    assert len(again[0]) == 500 and len(wmod._DRAWS._items) == 1  # one draw kept
    for got in (first, again):
        for a, b in zip(got, (i, o, unit), strict=True):
            assert np.array_equal(a, b) and a.dtype == b.dtype
    again[0][:] = 0  # the caller's copy
    assert np.array_equal(wl.unit_draws(500, 7)[0], i)
    assert not np.array_equal(wl.unit_draws(500, 8)[0], i)  # another seed: other draws


def test_draw_memo_keeps_to_its_bytes():
    from planner.workload.workload import _DrawMemo

    memo = _DrawMemo(max_bytes=3 * 8 * 100)  # room for one entry of 3 x 100 float64
    a = tuple(np.zeros(100) for _ in range(3))
    memo.put(("a",), a)
    memo.put(("b",), a)
    assert memo.get(("a",)) is None and memo.get(("b",)) is not None
    memo.put(("big",), tuple(np.zeros(200) for _ in range(3)))  # larger than the memo
    assert memo.get(("big",)) is None and memo._bytes == 3 * 8 * 100
