"""The published routing skew as the step's expert-popularity skew (planner.engine.route_cv2,
OFF), the log-normal distinct-expert count (planner.engine.routing) and the derivation of
both values (scripts/route_cv2.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.layout import layout_of
from planner.catalog.routing_skew import routing_skews
from planner.engine import route_cv2
from planner.engine._scalar import step_time_scalar
from planner.engine.routing import lognormal_distinct_experts
from planner.engine.step import step_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import route_cv2 as derive  # noqa: E402

CAT = load_catalog()
REC = next(r for r in routing_skews(applied_only=False) if r.id == "deepseek-r1-ep32")


def _sm(model="deepseek-v3", tp=8, ep=1, dp=1, cv2=0.0):
    p = PRIOR.with_(moe_route_cv2=cv2)
    lay = layout_of(tp, 1, ep, dp)
    return step_model(model, "nvidia-h200-sxm", "fp8", catalog=CAT, params=p, layout=lay)


@pytest.fixture
def on(monkeypatch):
    monkeypatch.setattr(route_cv2, "APPLY", True)


@pytest.fixture
def gamma(on, monkeypatch):
    monkeypatch.setattr(route_cv2, "FAMILY", "gamma")


def test_switch_is_off_and_changes_nothing():
    """Shipped OFF: no step model carries a published skew, so every step is as before."""
    assert route_cv2.APPLY is False
    assert route_cv2.published_skew(256, 8) == (0.0, 0.0)
    sm = _sm()
    assert (sm.route_cv2_min, sm.route_ln_s2, sm.route_cv2) == (0.0, 0.0, 0.0)


def test_published_value_only_for_the_records_shape(on, monkeypatch):
    """On: DeepSeek (256 experts, top-8) takes the EP32 record's derived values, log-normal
    sigma^2 1.415 (FAMILY lognormal) or Gamma cv2 3.161; a routing shape with no record
    (Qwen3-235B: 128 experts, top-8; Mixtral: 8, top-2) takes none."""
    assert route_cv2.published_skew(256, 8) == (0.0, 1.415)
    assert route_cv2.published_skew(128, 8) == (0.0, 0.0)
    assert route_cv2.published_skew(8, 2) == (0.0, 0.0)
    monkeypatch.setattr(route_cv2, "FAMILY", "gamma")
    assert route_cv2.published_skew(256, 8) == (3.161, 0.0)
    assert route_cv2.published_skew(0, 0) == (0.0, 0.0)


def test_gamma_distinct_experts_at_16_tokens_by_hand(gamma):
    """DeepSeek-V3 TP8, 16 tokens, cv2 3.161: lambda = -ln(31/32) = 0.0317487; a = 3.161 x
    lambda = 0.1003576; 1 + 16 a = 2.6057222, ln = 0.9577099; x (-1 / 3.161 = -0.3163556) =
    -0.3029768; exp = 0.7386162; 256 x (1 - 0.7386162) = 66.914 experts (uniform: 101.962)."""
    sm = _sm()
    assert sm.route_cv2 == 3.161 and sm.route_ln_s2 == 0.0
    assert float(sm.expected_experts(16)) == pytest.approx(66.914, abs=1e-3)
    assert _sm(cv2=5.0).route_cv2 == 5.0  # a fitted skew above the floor is kept


def test_lognormal_count_matches_monte_carlo():
    """The quadrature against a direct Monte Carlo of the same model (200,000 experts drawn,
    hazards lambda exp(sigma Z - s2 / 2)): within 0.6 experts of 256 at 1-4,096 tokens."""
    rng = np.random.default_rng(7)
    s2, lam = 1.415, -np.log(1 - 8 / 256)
    h = lam * np.exp(rng.normal(-s2 / 2, np.sqrt(s2), 200_000))
    for T in (1, 4, 16, 64, 128, 1024, 4096):
        mc = 256 * (1 - np.exp(-h * T).mean())
        assert float(lognormal_distinct_experts(T, 256, 256, 8, s2)) == pytest.approx(mc, abs=0.6)


def test_lognormal_count_properties():
    """More tokens never fewer experts; never more than held or picked (k a token, under
    skew below k: the hazards' mean is uniform routing's); a vanishing s2 is uniform; at the
    published s2 it lies between the Gamma of the same variance and uniform routing."""
    t = np.array([0.0, 1.0, 2.0, 8.0, 16.0, 64.0, 128.0, 512.0, 1024.0, 4096.0])
    f = lognormal_distinct_experts(t, 256, 256, 8, 1.415)
    uni = 256 * (1 - (1 - 8 / 256) ** t)
    assert np.all(np.diff(f) >= 0)
    assert np.all(f <= np.minimum(256, 8 * np.maximum(t, 1)) + 1e-9)
    assert np.allclose(lognormal_distinct_experts(t, 256, 256, 8, 1e-8), uni, rtol=1e-6)
    from planner.engine.routing import expected_distinct_experts as gam

    g = gam(t, 256, 256, 8, 3.161)
    assert np.all(g[2:] <= f[2:]) and np.all(f <= uni + 1e-9)


@pytest.mark.parametrize("family", ["lognormal", "gamma"])
@pytest.mark.parametrize("lay", [(8, 1, 1), (8, 8, 1), (1, 8, 8)])
def test_scalar_equals_vector_and_skew_only_speeds_up(on, monkeypatch, lay, family):
    """On, the scalar step equals the numpy step (the skew reaches both), and every decode
    step is no slower than with the switch off (fewer expert bytes, nothing else moved)."""
    monkeypatch.setattr(route_cv2, "FAMILY", family)
    tp, ep, dp = lay
    sm = _sm(tp=tp, ep=ep, dp=dp)
    monkeypatch.setattr(route_cv2, "APPLY", False)
    off = _sm(tp=tp, ep=ep, dp=dp)
    for B in (1, 4, 16, 64, 256):
        ctx = B * 1400.0
        v = float(sm.step(B, B, B, ctx, ctx).time_s)
        s = step_time_scalar(sm._coeffs, float(B), float(B), float(B), ctx, ctx, 0.0, 0.0, 0.0)
        assert s == pytest.approx(v, rel=1e-12)
        assert v <= float(off.step(B, B, B, ctx, ctx).time_s) + 1e-15


def test_dense_model_untouched(on):
    a = step_model("llama-3.1-70b", "nvidia-h200-sxm", "fp8", tp=4, catalog=CAT, params=PRIOR)
    assert (a.route_cv2_min, a.route_ln_s2) == (0.0, 0.0)


@pytest.mark.parametrize(
    "family,value", [("gamma", REC.route_cv2), ("lognormal", REC.route_lognormal_s2)]
)
def test_recorded_values_reproduce_the_published_skew(family, value):
    """Each recorded value gives the published busiest-rank excess back within 0.02 (Monte
    Carlo, seed 0; 1.564272 published)."""
    got = derive.rank_excess(value, 256, 8, 32, 1024.0, draws=5000, family=family)
    assert got == pytest.approx(REC.value, abs=0.02)


def test_uniform_routing_gives_only_the_poisson_excess():
    """Uniform routing: the largest of 32 Poisson counts of mean 1,024 is about 2.07 x 32
    above the mean, an excess of 0.065 (against the published 1.564)."""
    got = derive.rank_excess(0.0, 256, 8, 32, 1024.0, draws=2000)
    assert got == pytest.approx(0.065, abs=0.02)


def test_more_popularity_skew_more_rank_skew():
    """Property: the busiest rank's excess rises with the skew (the bisection relies on it)."""
    for fam in ("gamma", "lognormal"):
        xs = [
            derive.rank_excess(c, 256, 8, 32, 1024.0, draws=2000, family=fam)
            for c in (0.5, 1.5, 3.0, 6.0)
        ]
        assert xs == sorted(xs)


def test_compiled_scalar_step_is_bit_identical(on):
    """The numba twin of the scalar step (the simulator's) gives the same floats with the
    log-normal branch (its Gauss-Hermite tuples are compile-time constants)."""
    numba = pytest.importorskip("numba")
    sm = _sm(tp=1, ep=8, dp=8)
    from planner.engine._scalar import distinct_experts
    from planner.serving._kernel import _bound

    # compiled as the simulator's kernel compiles it (planner.serving._kernel.kernel): the
    # distinct-experts helper inlined and bound into the step
    experts = numba.njit(distinct_experts, inline="always")
    f = numba.njit(_bound(step_time_scalar, distinct_experts=experts))
    for B in (1.0, 16.0, 128.0, 512.0):
        args = (sm._coeffs, B, B, B, B * 1400.0, B * 1400.0, 0.0, 0.0, 0.0)
        assert f(*args) == step_time_scalar(*args)
