"""The GEMM time factor of a narrow tensor-parallel shard (planner/engine/gemm_width.py)."""

from __future__ import annotations

import math

import pytest

from planner.catalog.efficiency import PRIOR
from planner.engine import gemm_width as gw
from planner.engine.params import param_counts
from planner.engine.step import step_model

#: Llama-70B layer, one GPU: QKV 10240 x 8192 + O 8192 x 8192 + gate+up 57344 x 8192 +
#: down 8192 x 28672 = 83,886,080 + 67,108,864 + 469,762,048 + 234,881,024 = 855,638,016
W1 = 855_638_016


@pytest.fixture(scope="module")
def table():
    t = gw.table_for("cdna3")
    assert t is not None and t.id == "aiter-gfx950-llama70b-bf16"
    return t


def test_layer_width_is_the_per_gpu_shard_of_one_layer(catalog):
    m = catalog.model("llama-3.1-70b")
    pc = param_counts(m)
    assert gw.layer_width(m, 1, pc.attention + pc.mlp_dense) == W1
    assert gw.layer_width(m, 8, pc.attention + pc.mlp_dense) == W1 / 8 == 106_954_752
    m2 = catalog.model("llama-2-70b")  # the same shapes as Llama-3.1-70B
    pc2 = param_counts(m2)
    assert gw.layer_width(m2, 1, pc2.attention + pc2.mlp_dense) == W1


def test_slowdown_at_the_table_points_is_the_rate_ratio(table):
    # the widest layer is the reference: 1 at every token count
    assert all(gw.slowdown(table, W1, m) == 1.0 for m in table.tokens)
    # TP8 at 128 tokens: 593.3 / 273.3 TFLOP/s = 2.17088
    assert gw.slowdown(table, W1 / 8, 128) == pytest.approx(593.3 / 273.3, rel=1e-12)
    # TP4 at 1024 tokens: 1182.9 / 1059.2 = 1.11679
    assert gw.slowdown(table, W1 / 4, 1024) == pytest.approx(1182.9 / 1059.2, rel=1e-12)


def test_slowdown_is_bilinear_in_logs_and_constant_outside(table):
    # TP2 (width W1 / 2) lies halfway between TP1 and TP4 in log width:
    # (1 + 593.3 / 338.2) / 2 = 1.37714 at 128 tokens
    assert gw.slowdown(table, W1 / 2, 128) == pytest.approx((1 + 593.3 / 338.2) / 2, rel=1e-12)
    # 181.02 tokens = sqrt(128 x 256), halfway in log tokens at TP8:
    # (593.3 / 273.3 + 900.8 / 401.2) / 2 = (2.17088 + 2.24526) / 2 = 2.20807
    mid = math.sqrt(128 * 256)
    want = (593.3 / 273.3 + 900.8 / 401.2) / 2
    assert gw.slowdown(table, W1 / 8, mid) == pytest.approx(want, rel=1e-12)
    # narrower than TP8, or wider than TP1, or beyond the token range: the edge value
    assert gw.slowdown(table, W1 / 64, 128) == gw.slowdown(table, W1 / 8, 128)
    assert gw.slowdown(table, W1 * 4, 128) == 1.0
    assert gw.slowdown(table, W1 / 8, 1) == pytest.approx(92.5 / 64.3, rel=1e-12)
    assert gw.slowdown(table, W1 / 8, 1e6) == pytest.approx(1511.8 / 1414.9, rel=1e-12)


def test_slowdown_never_below_one_inside_the_table(table):
    # the table's widest layer is the fastest at every token count it measures
    for w in (W1, W1 / 2, W1 / 4, W1 / 6, W1 / 8):
        for m in (16, 100, 128, 700, 3000, 16384):
            assert gw.slowdown(table, w, m) >= 1.0


def test_step_model_takes_the_factor_on_cdna_dense_only(catalog):
    amd8 = step_model("llama-3.1-70b", "amd-mi300x", "fp8", tp=8, catalog=catalog)
    amd1 = step_model("llama-3.1-70b", "amd-mi300x", "fp8", tp=1, catalog=catalog)
    assert amd8.gemm_width_points and amd1.gemm_width_points
    assert gw.factor(amd1.gemm_width_points, 128) == pytest.approx(1.0)
    assert gw.factor(amd8.gemm_width_points, 128) == pytest.approx(593.3 / 273.3)
    # no table for Hopper; MoE models keep 1
    h100 = step_model("llama-3.1-70b", "nvidia-h100-sxm", "fp8", tp=8, catalog=catalog)
    assert h100.gemm_width_points == ()
    moe = step_model("mixtral-8x7b", "amd-mi300x", "bf16", tp=8, catalog=catalog)
    assert moe.gemm_width_points == ()


def test_the_gemm_time_scales_by_the_factor(catalog, monkeypatch):
    """TP8 on MI300X at 2,048 tokens (compute bound): the GEMM term is the factor-free one x
    1453.8 / 1179.0 = 1.23308 (the factor scales the compute term, COMPUTE_ONLY)."""
    sm = step_model("llama-3.1-70b", "amd-mi300x", "fp8", tp=8, params=PRIOR, catalog=catalog)
    monkeypatch.setattr(gw, "ENABLED", False)
    off = step_model("llama-3.1-70b", "amd-mi300x", "fp8", tp=8, params=PRIOR, catalog=catalog)
    assert off.gemm_width_points == ()
    args = (2048, 16, 16, 16 * 2000, 16 * 2000)
    assert not off.step(*args).gemm_memory_bound
    assert sm.step(*args).t_gemm_s == pytest.approx(off.step(*args).t_gemm_s * 1453.8 / 1179.0)
    assert sm.step(*args).t_attn_s == off.step(*args).t_attn_s


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_scalar_path_equals_vector_path_with_the_factor(catalog, tp):
    sm = step_model("llama-3.1-70b", "amd-mi300x", "fp8", tp=tp, catalog=catalog)
    assert len(sm._coeffs) == 133  # 130 + the pipelined-PP terms (engine/pipeline.py)
    for n in (1, 16, 100, 128, 181, 3000, 16384, 40000):
        args = (n, 8, 8, 8 * 1500 + n, 8 * 1500 + n * (n + 1) / 2)
        assert sm.step_time(*args) == pytest.approx(sm.step(*args).time_s, rel=1e-12)


def test_a_memory_bound_step_keeps_its_time(catalog):
    """Decode of 16 sequences on MI300X TP8: the weights' read bounds the GEMM time, and the
    factor (on the compute term, COMPUTE_ONLY) leaves it as it was."""
    sm = step_model("llama-3.1-70b", "amd-mi300x", "fp8", tp=8, params=PRIOR, catalog=catalog)
    b = sm.step(16, 16, 16, 16 * 2000, 16 * 2000)
    assert b.gemm_memory_bound
    assert b.t_gemm_s == pytest.approx((sm.dense_weight_bytes + sm.lm_head_bytes + 16 * sm.act_bytes_per_token) / (sm.bw_bytes_s * PRIOR.mem_eff))  # fmt: skip


@pytest.mark.parametrize("compute_only", [True, False])
def test_both_modes_agree_between_the_two_paths(catalog, monkeypatch, compute_only):
    monkeypatch.setattr(gw, "COMPUTE_ONLY", compute_only)
    sm = step_model("llama-2-70b", "amd-mi325x", "fp8", tp=1, catalog=catalog)
    assert sm.gemm_width_points[2] is compute_only
    sm8 = step_model("llama-2-70b", "amd-mi325x", "fp8", tp=8, catalog=catalog)
    for s in (sm, sm8):
        for n in (1, 64, 200, 5000):
            args = (n, 4, 4, 4 * 900 + n, 4 * 900 + n * (n + 1) / 2)
            assert s.step_time(*args) == pytest.approx(s.step(*args).time_s, rel=1e-12)
