"""The collectives of a MoE decode step by layout (issue 29, EP decode step too slow at
serving batches): a TP x EP group without attention data-parallel sums its experts' partial
outputs with one all-reduce per MoE layer, as a TP MoE layer does; only attention-DP ranks,
which hold different tokens, need a dispatch and a combine. Hand-derived numbers in the
docstrings; properties with hypothesis."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.layout import layout_of
from planner.engine.adp import moe_collectives_per_layer
from planner.engine.phases import decode_step
from planner.engine.step import step_model

CAT = load_catalog()


def _sm(tp, ep=1, dp=1, model="deepseek-v3", gpu="nvidia-h200-sxm", prec="fp8"):
    return step_model(model, gpu, prec, catalog=CAT, params=PRIOR, layout=layout_of(tp, 1, ep, dp))


def test_collectives_per_step_deepseek_by_hand():
    """DeepSeek-V3: 61 layers, the first 3 dense, 58 MoE.

    * TP8 (plain): two all-reduces per layer, 2 x 61 = 122;
    * TP8 EP8: attention all-reduce in every layer (61), the 3 dense MLPs' (3), one
      all-reduce per MoE layer (58): 122, as TP8 (before: 61 + 3 + 2 x 58 = 180);
    * DEP8 (tp 1, 8 attention-DP ranks): no attention all-reduce, a dispatch and a combine
      per MoE layer: 2 x 58 = 116;
    * TP2 x 4 attention-DP ranks, EP8: 61 + 3 inside each rank + 2 x 58 = 180."""
    assert _sm(8).collectives == 122
    assert _sm(8, 8, 1).collectives == 122
    assert _sm(1, 8, 8).collectives == 116
    assert _sm(2, 8, 4).collectives == 180
    assert moe_collectives_per_layer(layout_of(8, 1, 8, 1)) == 1
    assert moe_collectives_per_layer(layout_of(1, 1, 8, 8)) == 2


def test_tp_ep_step_communicates_what_tp_does_by_hand():
    """TP8 EP8 and TP8 move the same bytes: per replica token and GPU, ring 2 x 7/8 of
    7,168 x 2 B per collective, 122 collectives: 25,088 x 122 = 3,060,736 B. At 64 decoding
    sequences: 195,887,104 B, over the H200's NVLink (catalog interconnect_gbs_unidir) at
    comm_eff, plus 122 x comm_latency_s (at the prior 20 us: 2.44 ms of fixed cost; the
    dispatch + combine pair gave 180 x 20 us = 3.60 ms)."""
    ep, tp = _sm(8, 8, 1), _sm(8)
    b_ep, b_tp = decode_step(ep, 64, 1500), decode_step(tp, 64, 1500)
    per_tok = 2 * 7 / 8 * 7168 * 2 * 122
    assert per_tok == pytest.approx(3_060_736)
    link = CAT.gpu("nvidia-h200-sxm").interconnect_gbs_unidir * 1e9
    t = per_tok * 64 / (link * PRIOR.comm_eff) + 122 * PRIOR.comm_latency_s
    assert b_ep.t_comm_s == pytest.approx(t, rel=1e-9)
    assert b_tp.t_comm_s == pytest.approx(t, rel=1e-9)
    assert 122 * PRIOR.comm_latency_s == pytest.approx(2.44e-3)


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(["deepseek-v3", "qwen3-235b-a22b", "gpt-oss-120b"]),
    width=st.sampled_from([2, 4, 8]),
    batch=st.integers(1, 512),
    ctx=st.integers(1, 16_000),
)
def test_tp_ep_without_attention_dp_communicates_as_tp(model, width, batch, ctx):
    """Property: without attention DP, expert parallelism changes which GPU reads which
    expert, never the step's communication (same bytes, same collectives as TP of the same
    width), for every MoE model and batch."""
    m = CAT.model(model)
    if m.num_experts % width:
        return
    ep, tp = _sm(width, width, 1, model), _sm(width, 1, 1, model)
    assert ep.collectives == tp.collectives
    a, b = decode_step(ep, batch, ctx), decode_step(tp, batch, ctx)
    assert a.t_comm_s == pytest.approx(b.t_comm_s, rel=1e-9)


LAYOUTS = [(8, 8, 1), (1, 8, 8), (2, 8, 4), (4, 4, 1)]


@settings(max_examples=60, deadline=None)
@given(
    lay=st.sampled_from(LAYOUTS),
    batch=st.integers(1, 1024),
    more=st.integers(1, 512),
    ctx=st.integers(1, 16_000),
)
def test_more_tokens_never_lower_an_ep_step(lay, batch, more, ctx):
    """Property: a decode step of more sequences never takes less time (vector and scalar
    paths agree)."""
    sm = _sm(*lay)
    a = decode_step(sm, batch, ctx).time_s
    b = decode_step(sm, batch + more, ctx).time_s
    assert b >= a * (1 - 1e-12)
    c = (ctx + 1) * batch
    assert sm.step_time(batch, batch, batch, c, c) == pytest.approx(a, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(lay=st.sampled_from(LAYOUTS), batch=st.integers(1, 1024), scale=st.floats(1.0, 4.0))
def test_more_bandwidth_never_slows_an_ep_step(lay, batch, scale):
    """Property: more memory or link bandwidth never slows a step."""
    sm = _sm(*lay)
    base = decode_step(sm, batch, 2000).time_s
    for faster in (
        replace(sm, bw_bytes_s=sm.bw_bytes_s * scale),
        replace(sm, link_bytes_s=sm.link_bytes_s * scale),
    ):
        assert decode_step(faster, batch, 2000).time_s <= base * (1 + 1e-12)
