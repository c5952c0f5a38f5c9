"""The published routing skew as the ceiling of the decode tokens' fitted skew
(planner.engine.skew_cap, ``StepModel.decode_skew_cap``; issue 29, the DEP8 decode step at
400-600 sequences a rank). Hand-derived numbers in the docstrings."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.layout import layout_of
from planner.engine import skew_cap
from planner.engine.phases import decode_step
from planner.engine.step import step_model

CAT = load_catalog()
BLOG4_EP32 = 1.564272  # data/moe_routing_skew.yaml: TensorRT-LLM tech blog 4, EP32, no EPLB
Z8 = math.sqrt(2 * math.log(8))  # 2.0393340: the multinomial excess factor of 8 shares


@pytest.fixture(autouse=True)
def _cap_on(monkeypatch):
    """The mechanics with the switch on (it ships off: planner/engine/skew_cap.py says why)."""
    monkeypatch.setattr(skew_cap, "APPLY", True)


def _dep8(imb=4.0, imb_prompt=3.0, gpu="nvidia-b200", prec="fp4"):
    p = PRIOR.with_(moe_imbalance=imb, moe_imbalance_prompt=imb_prompt)
    return step_model("deepseek-v3", gpu, prec, "fp8", catalog=CAT, params=p,
                      layout=layout_of(1, 1, 8, 8))  # fmt: skip


def test_cap_of_a_layout():
    """DeepSeek-R1 routing (256 experts, top-8) at EP8 and EP32 reads the EP32 record; EP64
    (above the measured EP), another routing shape or no EP has no ceiling."""
    assert skew_cap.decode_skew_cap(256, 8, 8) == pytest.approx(BLOG4_EP32, abs=1e-9)
    assert skew_cap.decode_skew_cap(256, 8, 32) == pytest.approx(BLOG4_EP32, abs=1e-9)
    assert skew_cap.decode_skew_cap(256, 8, 64) == math.inf
    assert skew_cap.decode_skew_cap(128, 8, 8) == math.inf
    assert skew_cap.decode_skew_cap(256, 8, 1) == math.inf
    assert _dep8().decode_skew_cap == pytest.approx(BLOG4_EP32, abs=1e-9)


def test_switch_off_keeps_the_fitted_skew(monkeypatch):
    """Off (as shipped): no ceiling, every prediction as before the module."""
    monkeypatch.setattr(skew_cap, "APPLY", False)
    assert skew_cap.decode_skew_cap(256, 8, 8) == math.inf
    assert _dep8().decode_skew_cap == math.inf
    assert float(_dep8().routed_tokens_hot(4000.0)) == pytest.approx(20_128.98, abs=0.01)


def test_busiest_gpu_decode_tokens_by_hand():
    """Fitted decode skew 4, DEP8: a decode step of 4,000 tokens (500 a rank) routes
    m = 4,000 x 8 / 8 = 4,000 to each GPU; the busiest runs m (1 + 1.564272) + sqrt(2 ln 8)
    sqrt(m) = 10,257.09 + 2.03933 x 63.2456 = 10,386.07 (uncapped: 5 x 4,000 + 128.98 =
    20,128.98). A fitted skew under the ceiling (0.5) stays: 6,000 + 128.98."""
    sm = _dep8()
    assert float(sm.routed_tokens_hot(4000.0)) == pytest.approx(10_386.07, abs=0.01)
    free = replace(sm, decode_skew_cap=math.inf)
    assert float(free.routed_tokens_hot(4000.0)) == pytest.approx(20_128.98, abs=0.01)
    low = _dep8(imb=0.5)
    assert float(low.routed_tokens_hot(4000.0)) == pytest.approx(6_000 + Z8 * math.sqrt(4000))


def test_prompt_tokens_keep_their_fitted_skew_by_hand():
    """Decode skew 4 (capped to 1.564272), prompt skew 3: a step of 32,768 tokens with 32,512
    prompt tokens has skew 1.564272 + (3 - 1.564272) x 32,512 / 32,768 = 2.988783; the
    busiest GPU runs 32,768 x 3.988783 + 2.03933 x 181.019 = 131,073.6 routed tokens."""
    sm = _dep8()
    assert float(sm.routed_tokens_hot(32_768.0, 32_512.0)) == pytest.approx(131_073.6, abs=0.1)


def test_scalar_path_reads_the_cap():
    """The simulator's scalar step (``StepModel._coeffs``) charges the capped skew as the
    vectorized step does, and the DEP8 decode step at 500 sequences a rank, 5,188-token
    context, is faster with the cap once the busiest GPU's expert GEMMs are compute bound."""
    sm = _dep8()
    free = replace(sm, decode_skew_cap=math.inf)
    args = (4000.0, 4000.0, 4000.0, 4000.0 * 5188, 4000.0 * 5188)
    assert sm.step_time(*args) == pytest.approx(sm.step(*args).time_s, rel=1e-12)
    assert free.step_time(*args) == pytest.approx(free.step(*args).time_s, rel=1e-12)
    assert decode_step(sm, 4000.0, 5188.0).t_gemm_s < decode_step(free, 4000.0, 5188.0).t_gemm_s


@settings(max_examples=30, deadline=None)
@given(T=st.floats(1.0, 2e5), share=st.floats(0.0, 1.0), a=st.floats(0.0, 4.0),
       b=st.floats(0.0, 4.0))  # fmt: skip
def test_cap_never_adds_routed_tokens(T, share, a, b):
    """With the ceiling the busiest GPU never runs more routed tokens than without it, and
    exactly as many when the fitted decode skew is under the ceiling."""
    sm = _dep8(imb=a, imb_prompt=b)
    free = replace(sm, decode_skew_cap=math.inf)
    capped, uncapped = (float(x.routed_tokens_hot(T, share * T)) for x in (sm, free))
    assert capped <= uncapped * (1 + 1e-12)
    if a <= BLOG4_EP32:
        assert capped == pytest.approx(uncapped, rel=1e-12)
