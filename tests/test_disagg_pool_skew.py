"""A disaggregated prefill pool's routing skew: the measured one of its model
(``data/moe_routing_skew.yaml``, :mod:`planner.catalog.routing_skew`) instead of the skew
fitted on aggregated rows (:func:`planner.serving.disagg.prefill_routing_skew`;
docs/changes/2026-12-07e/poolskew.md)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog.catalog import DATA_DIR, load_catalog
from planner.catalog.routing_skew import measured_skew, routing_skews
from planner.serving.disagg import Disaggregated, Pool, build_disagg

CAT = load_catalog()
BLOG4_NO_EPLB = 1.564272  # TensorRT-LLM tech blog 4, Step 1 output, "average ... 1.564272"


def test_records_are_sourced_and_read_as_published():
    recs = {r.id: r for r in routing_skews(applied_only=False)}
    assert recs["deepseek-r1-ep32"].value == BLOG4_NO_EPLB
    assert recs["deepseek-r1-ep32"].tokens_per_rank == 1024  # "average 1024.0 ..."
    assert recs["deepseek-r1-ep36-eplb"].value == 0.115378  # Step 3, 288 slots
    for r in recs.values():
        assert len(r.source) > 20 and r.as_of.year == 2025


@pytest.mark.parametrize("ep", [2, 4, 8, 16, 32])
def test_deepseek_shape_without_a_balancer_reads_the_ep32_bound(ep):
    rec = measured_skew(256, 8, ep)
    assert rec is not None and rec.value == BLOG4_NO_EPLB


def test_no_record_where_none_was_measured():
    assert measured_skew(256, 8, 48) is None  # above the measured EP: no bound
    assert measured_skew(256, 8, 1) is None  # no expert parallelism
    assert measured_skew(128, 8, 8) is None  # Qwen3-235B's 128 experts: not measured
    assert measured_skew(384, 8, 8) is None  # Kimi-K2's 384
    # a load balancer's placement holds at its own EP size only
    assert measured_skew(256, 8, 36, eplb=True).value == 0.115378
    assert measured_skew(256, 8, 8, eplb=True) is None


@settings(max_examples=60, deadline=None)
@given(
    loads=st.lists(st.floats(0.0, 1000.0), min_size=256, max_size=256),
    g=st.sampled_from([2, 4, 8, 16]),
)
def test_contiguous_merge_never_raises_the_busiest_rank_excess(loads, g):
    """The bound the EP32 record relies on: with experts in contiguous blocks, EP(32 / g)'s
    ranks are unions of g EP32 ranks, and a union's relative excess over the mean is the
    mean of its members', so the busiest one's can only fall."""
    x = np.asarray(loads)
    if x.sum() <= 0:
        return
    r32 = x.reshape(32, 8).sum(axis=1)
    rg = x.reshape(32 // g, 8 * g).sum(axis=1)
    excess = lambda r: r.max() / r.mean() - 1.0  # noqa: E731
    assert excess(rg) <= excess(r32) + 1e-12


def test_switched_off_file_reads_no_record(tmp_path):
    src = (DATA_DIR / "moe_routing_skew.yaml").read_text(encoding="utf-8")
    assert "\napplied: true\n" in src
    (tmp_path / "moe_routing_skew.yaml").write_text(
        src.replace("\napplied: true\n", "\napplied: false\n"), encoding="utf-8"
    )
    assert routing_skews(str(tmp_path)) == ()
    assert len(routing_skews(str(tmp_path), applied_only=False)) == 2
    assert measured_skew(256, 8, 8, data_dir=str(tmp_path)) is None


def _r1(prefill: Pool, decode: Pool):
    return build_disagg("deepseek-v3", Disaggregated(prefill=prefill, decode=decode), catalog=CAT)


def test_prefill_pool_takes_the_measured_skew_decode_pool_keeps_its_fit():
    pool = dict(gpu="nvidia-gb200", framework="sglang", precision="fp8")
    d = _r1(Pool(**pool, tp=1, ep=8, attention_dp=8), Pool(**pool, tp=1, ep=8, attention_dp=8))
    pre, dec = d.prefill.sm.params, d.decode.sm.params
    assert pre.moe_imbalance == BLOG4_NO_EPLB and pre.moe_imbalance_prompt == BLOG4_NO_EPLB
    # the decode pool keeps the fitted skews (bundled profile: SGLang 4 / 2.5211)
    assert dec.moe_imbalance > 3.0 and dec.moe_imbalance_prompt > 2.0
    # every other parameter of the prefill pool is the decode pool's (same node)
    skip = {"moe_imbalance", "moe_imbalance_prompt"}
    a, b = pre.model_dump(), dec.model_dump()
    assert {k: a[k] for k in a if k not in skip} == {k: b[k] for k in b if k not in skip}

    # by hand: a 16,384-token chunk on each of the 8 ranks, 2 sequences a rank:
    # T = 131,072, m = T x 8 / 8 = 131,072; prompt tokens T - 16 = 131,056, so the step's
    # skew is 1.564272 + (1.564272 - 1.564272) x share = 1.564272;
    # busiest rank: 131,072 x 2.564272 + sqrt(2 ln 8 x 131,072) = 336,104.3 + 738.3 = 336,842.6
    hot = float(d.prefill.sm.routed_tokens_hot(131072.0, 131056.0))
    assert hot == pytest.approx(131072 * 2.564272 + math.sqrt(2 * math.log(8) * 131072), rel=1e-9)
    assert hot == pytest.approx(336842.6, abs=0.5)
    # the decode pool's fitted skews route the same step to a busier rank
    assert float(d.decode.sm.routed_tokens_hot(131072.0, 131056.0)) > 1.3 * hot


def test_prefill_step_is_faster_with_the_measured_skew():
    pool = dict(gpu="nvidia-b200", framework="trtllm", precision="fp4")
    d = _r1(Pool(**pool, tp=1, ep=4, attention_dp=4), Pool(**pool, tp=1, ep=8, attention_dp=8))
    sm = d.prefill.sm
    fitted = dataclasses.replace(sm, params=d.decode.sm.params)
    # one 8,192-token prompt on each of the 4 ranks: 32,768 tokens, 4 sequences
    t, n = 32768.0, 4.0
    pairs = 4 * 8192 * 8193 / 2
    args = (t, n, n, t, pairs)
    assert float(sm.step(*args).time_s) < float(fitted.step(*args).time_s)


def test_plain_and_unmeasured_pools_are_left_as_fitted():
    # a TP prefill pool (no EP) and a DEP48 one (above the measured EP32) keep the fit
    g = dict(gpu="nvidia-gb200", framework="sglang", precision="fp8")
    d = _r1(Pool(**g, tp=8), Pool(**g, tp=1, ep=48, attention_dp=48))
    assert d.prefill.sm.params == d.decode.sm.params.with_()  # no EP: nothing replaced
    d2 = _r1(Pool(**g, tp=1, ep=48, attention_dp=48), Pool(**g, tp=1, ep=8, attention_dp=8))
    assert d2.prefill.sm.params.moe_imbalance_prompt == d2.decode.sm.params.moe_imbalance_prompt
