"""Expected distinct experts under a skewed expert popularity (planner.engine.routing,
``EfficiencyParams.moe_route_cv2``; issue 29, the MoE decode step's slope with the batch).
Hand-derived numbers in the docstrings; properties with hypothesis."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.layout import layout_of
from planner.engine._scalar import step_time_scalar
from planner.engine.phases import decode_step
from planner.engine.routing import expected_distinct_experts, skew_coeffs
from planner.engine.step import step_model

CAT = load_catalog()


def _sm(cv2, tp=8, ep=1, dp=1, gpu="nvidia-h200-sxm", model="deepseek-v3", mem_eff=None):
    p = PRIOR.with_(moe_route_cv2=cv2)
    if mem_eff is not None:
        p = p.with_(mem_eff=mem_eff)
    return step_model(model, gpu, "fp8", catalog=CAT, params=p, layout=layout_of(tp, 1, ep, dp))


def test_distinct_experts_by_hand():
    """DeepSeek-V3: E = 256 routed experts, top_k = 8, all on the GPU (TP).

    * uniform, 4 tokens: 256 (1 - (31/32)^4); (31/32)^2 = 0.9384766, squared 0.8807383, so
      256 x 0.1192617 = 30.531 experts;
    * cv2 = 1, 4 tokens: lambda = -ln(31/32) = 0.0317487; 1 + 4 lambda = 1.1269948; its
      inverse 0.8873158; 256 x 0.1126842 = 28.847 experts;
    * cv2 = 1, 16 tokens: 1 + 16 lambda = 1.5079792, inverse 0.6631391, 256 x 0.3368609
      = 86.236 experts (uniform: 256 (1 - 0.8807383^4 = 0.6017109) = 101.962)."""
    assert expected_distinct_experts(4, 256, 256, 8, 0.0) == pytest.approx(30.531, abs=1e-3)
    assert expected_distinct_experts(4, 256, 256, 8, 1.0) == pytest.approx(28.847, abs=1e-3)
    assert expected_distinct_experts(16, 256, 256, 8, 1.0) == pytest.approx(86.236, abs=1e-3)
    assert expected_distinct_experts(16, 256, 256, 8, 0.0) == pytest.approx(101.962, abs=1e-3)
    a, b = skew_coeffs(256, 8, 1.0)
    assert a == pytest.approx(0.0317487, abs=1e-7) and b == -1.0
    assert skew_coeffs(256, 8, 0.0) == (0.0, 0.0)


def test_step_reads_the_skewed_expert_bytes_by_hand():
    """H200 TP8 fp8 DeepSeek-V3, 16 decoding sequences: the step's weights fall by exactly the
    experts that skew leaves unread, (101.962 - 86.236) = 15.726 experts x the bytes of one
    expert on one GPU (3 x 7,168 x 2,048 fp8 weights x 58 MoE layers / 8 GPUs, scales
    included by the model)."""
    u, s = decode_step(_sm(0.0), 16, 1500), decode_step(_sm(1.0), 16, 1500)
    eb = _sm(0.0).expert_bytes
    assert eb == pytest.approx(3 * 7168 * 2048 * 58 / 8, rel=0.02)
    assert u.weight_bytes - s.weight_bytes == pytest.approx(15.726 * eb, rel=1e-4)
    assert s.time_s < u.time_s


def test_uniform_prior_is_the_old_formula_exactly():
    """cv2 = 0 takes the uniform branch: the same floats as ``local (1 - (1 - k/E)^T)``."""
    t = np.array([0.0, 1.0, 3.0, 17.0, 250.0, 4096.0])
    old = 32.0 * (1.0 - (1.0 - 8 / 256) ** t)
    assert np.array_equal(expected_distinct_experts(t, 32.0, 256, 8, 0.0), old)


@settings(max_examples=200, deadline=None)
@given(
    t=st.floats(0.0, 5000.0),
    dt=st.floats(0.0, 500.0),
    cv2=st.floats(0.0, 8.0),
    dc=st.floats(0.0, 4.0),
    ek=st.sampled_from([(256, 8), (128, 8), (64, 6), (8, 2), (32, 4)]),
)
def test_distinct_experts_properties(t, dt, cv2, dc, ek):
    """More tokens never read fewer experts; more skew never reads more; never more than
    the GPU holds, nor more than the picks made (k for one token or less); a vanishing skew
    is uniform routing."""
    E, k = ek
    f = expected_distinct_experts
    assert f(t + dt, E, E, k, cv2) >= f(t, E, E, k, cv2) - 1e-9
    assert f(t, E, E, k, cv2 + dc) <= f(t, E, E, k, cv2) + 1e-9
    assert 0.0 <= f(t, E, E, k, cv2) <= min(E, k * max(t, 1.0)) + 1e-9
    assert f(t, E, E, k, 1e-9) == pytest.approx(f(t, E, E, k, 0.0), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("lay", [(8, 1, 1), (8, 8, 1), (1, 8, 8), (4, 4, 1)])
@pytest.mark.parametrize("cv2", [0.0, 0.7, 3.0])
def test_scalar_equals_vector_and_more_tokens_never_faster(lay, cv2):
    """The scalar step (serving kernel) equals the numpy step with skew; a decode step of
    more sequences is never shorter; more memory efficiency (bandwidth) never slows it."""
    tp, ep, dp = lay
    sm = _sm(cv2, tp, ep, dp)
    fast = _sm(cv2, tp, ep, dp, mem_eff=min(1.0, PRIOR.mem_eff * 1.3))
    prev = 0.0
    for B in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        ctx = B * 1400.0
        v = float(sm.step(B, B, B, ctx, ctx).time_s)
        s = step_time_scalar(sm._coeffs, float(B), float(B), float(B), ctx, ctx, 0.0, 0.0, 0.0)
        assert s == pytest.approx(v, rel=1e-12)
        assert v >= prev
        prev = v
        assert float(fast.step(B, B, B, ctx, ctx).time_s) <= v + 1e-15


def test_dense_model_ignores_the_skew():
    """A dense model reads no routed experts: its step is bit-identical at any skew."""
    a = step_model("llama-3.1-70b", "nvidia-h200-sxm", "fp8", tp=4, catalog=CAT, params=PRIOR)
    b = step_model(
        "llama-3.1-70b", "nvidia-h200-sxm", "fp8", tp=4, catalog=CAT,
        params=PRIOR.with_(moe_route_cv2=2.0),
    )  # fmt: skip
    for B in (1, 16, 128):
        assert (
            a.step(B, B, B, B * 900.0, B * 900.0).time_s
            == b.step(B, B, B, B * 900.0, B * 900.0).time_s
        )
    assert math.isfinite(float(a.step(1, 1, 1, 900.0, 900.0).time_s))
