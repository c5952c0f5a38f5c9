"""Routed-expert GEMM efficiency (``moe_compute_scale``, planner.engine.moe_eff)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.catalog import PRIOR, load_catalog
from planner.catalog.layout import Layout
from planner.engine import step_model

H100 = "nvidia-h100-sxm"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _prefill(sm, n):
    """One prompt chunk of n tokens from position 0 (one sequence, one logit)."""
    return (n, 1, 1, n, n * (n + 1) / 2)


def test_moe_prefill_step_by_hand(catalog):
    # Qwen3-30B-A3B bf16 on one H100, one 8,192-token prompt chunk.
    # routed experts: 48 MoE layers x top-8 x 3 x 2,048 x 768 (gate, up, down) params
    # = 48 x 8 x 4,718,592 = 1,811,939,328 params -> 2 x that = 3,623,878,656 FLOP per token
    p = PRIOR.with_(compute_eff=0.6, compute_half_tokens=64.0)
    sm1 = step_model("qwen3-30b-a3b", H100, "bf16", params=p, catalog=catalog)
    assert sm1.moe_flops_per_token == 2 * 48 * 8 * 3 * 2048 * 768 == 3_623_878_656
    sm4 = step_model(
        "qwen3-30b-a3b", H100, "bf16", params=p.with_(moe_compute_scale=0.25), catalog=catalog
    )
    b1, b4 = sm1.step(*_prefill(sm1, 8192)), sm4.step(*_prefill(sm4, 8192))
    assert b1.bound == b4.bound == "compute"
    # dense GEMM efficiency at 8,192 rows: 0.6 x 8,192 / (8,192 + 64) = 0.595349 of
    # 989 TFLOP/s (H100 SXM bf16 dense); the experts' 8,192 x 3.6239e9 = 2.96866e13 FLOP take
    # 2.96866e13 / (989e12 x 0.595349) = 50.419 ms at scale 1 and 4 x that at 0.25, so the
    # step's GEMM time grows by 3 x 50.419 = 151.26 ms; nothing else moves
    eff = 0.6 * 8192 / (8192 + 64)
    t_exp = 8192 * 3_623_878_656 / (989e12 * eff)
    assert t_exp == pytest.approx(0.050419, rel=1e-4)
    assert float(b4.t_gemm_s - b1.t_gemm_s) == pytest.approx(3 * t_exp, rel=1e-9)
    assert float(b4.time_s - b1.time_s) == pytest.approx(3 * t_exp, rel=1e-9)
    assert float(b4.t_attn_s) == float(b1.t_attn_s)
    assert float(b4.matmul_flops) == float(b1.matmul_flops)  # same work, slower kernel


def test_unfitted_scale_is_the_dense_step(catalog):
    # at the prior (1) every FLOP runs at compute_eff: the GEMM time is all FLOPs / (peak x
    # ramped compute_eff), the formula before the expert term existed
    assert PRIOR.moe_compute_scale == 1.0
    sm = step_model("qwen3-30b-a3b", H100, "bf16", catalog=catalog)
    b = sm.step(*_prefill(sm, 4096))
    eff = PRIOR.compute_eff * 4096 / (4096 + PRIOR.compute_half_tokens)
    assert float(b.t_gemm_s) == float(b.matmul_flops) / (989e12 * eff)
    # a dense model has no routed-expert FLOPs: any scale gives the same step, bit for bit
    for scale in (1.0, 0.3):
        d = step_model(
            "qwen3-32b", H100, "bf16", params=PRIOR.with_(moe_compute_scale=scale), catalog=catalog
        )
        assert d.moe_flops_per_token == 0.0
        assert d.step_time(*_prefill(d, 2048)) == step_model(
            "qwen3-32b", H100, "bf16", catalog=catalog
        ).step_time(*_prefill(d, 2048))


def test_bundled_profile_has_no_expert_efficiency_yet():
    # the branch ships the term unfitted: every node of the bundled profile resolves to 1,
    # so every planner answer stays the one of the dense-efficiency step until the lead refits
    from planner.catalog.profile import load_profile

    prof = load_profile()
    for node in (*prof.nodes, *prof.release_nodes):
        assert node.params.moe_compute_scale == 1.0


_CASES = [
    ("qwen3-30b-a3b", 1, None),
    ("qwen3-235b-a22b", 4, None),
    ("deepseek-v3", 8, Layout(tp=1, attention_dp=8, ep=8)),
]


@pytest.mark.parametrize(("model", "tp", "layout"), _CASES)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    s_lo=st.floats(0.05, 1.0),
    s_hi=st.floats(0.05, 1.0),
    n=st.integers(1, 16384),
    seqs=st.integers(1, 256),
    ctx=st.integers(0, 32768),
)
def test_higher_expert_efficiency_never_slows_a_step(
    catalog, model, tp, layout, s_lo, s_hi, n, seqs, ctx
):
    s_lo, s_hi = min(s_lo, s_hi), max(s_lo, s_hi)
    prec = "fp8" if model == "deepseek-v3" else "bf16"
    gpu = "nvidia-h200-sxm" if model == "deepseek-v3" else H100
    kw = dict(tp=tp, catalog=catalog, layout=layout)
    lo = step_model(model, gpu, prec, params=PRIOR.with_(moe_compute_scale=s_lo), **kw)
    hi = step_model(model, gpu, prec, params=PRIOR.with_(moe_compute_scale=s_hi), **kw)
    T = n + seqs  # a prompt chunk of n tokens beside seqs decoding sequences at ctx
    args = (T, seqs + 1, seqs + 1, seqs * ctx + n, seqs * ctx + n * (n + 1) / 2)
    t_lo, t_hi = lo.step_time(*args), hi.step_time(*args)
    assert t_hi <= t_lo * (1 + 1e-12)
    # the scalar kernel equals the vector path with the expert term on
    assert t_lo == pytest.approx(float(lo.step(*args).time_s), rel=1e-12)
