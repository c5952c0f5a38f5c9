"""MLA decode attention in the absorbed form, experts hit per step, and multi-node links.

Hand-derived values for DeepSeek-V3 (data/models.yaml: 61 layers, 128 heads, kv_lora_rank
512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128, head_dim 192, 256 routed
experts, top-8) and properties (hypothesis).
"""

from __future__ import annotations

import math

import pytest
from conftest import DATA_DIR
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.catalog import PRIOR, load_catalog
from planner.catalog.layout import Layout
from planner.engine import step_model
from planner.engine.step import mla_decode_flops_per_pair

_CAT = load_catalog(DATA_DIR)
H200 = "nvidia-h200-sxm"
PROPS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# absorbed: scores 2 x 128 x (512 + 64) = 147,456; values 2 x 128 x 512 = 131,072
ABSORBED_PAIR = 147_456 + 131_072  # 278,528 FLOPs per pair per layer, 128 heads
# expanded (prefill): 2 x 128 x (192 + 128) = 81,920; absorbed / expanded = 3.4
EXPANDED_PAIR = 2 * 128 * (192 + 128)
LAYERS = 61
KV_FP8_TOKEN_LAYER = (512 + 64) * 1  # latent + rope key, 1 byte each: 576 B


def test_absorbed_flops_per_pair_deepseek_v3():
    m = _CAT.model("deepseek-v3")
    assert mla_decode_flops_per_pair(m) == ABSORBED_PAIR
    assert mla_decode_flops_per_pair(_CAT.model("llama-3.1-8b")) == 0.0


def test_tp8_decode_step_flops_and_bytes_by_hand():
    """64 decoding sequences of 2,000 tokens on TP8: each GPU has 16 of the 128 heads and the
    whole latent (MLA's KV is not split by TP)."""
    sm = step_model("deepseek-v3", H200, "fp8", "fp8", tp=8, catalog=_CAT)
    assert sm.attn_flops_per_pair_layer == EXPANDED_PAIR / 8  # 10,240
    assert sm.attn_flops_per_decode_pair_layer == ABSORBED_PAIR / 8  # 34,816
    assert sm.kv_bytes_per_token_layer == KV_FP8_TOKEN_LAYER
    b, ctx = 64, 2000
    s = sm.step(b, b, b, b * ctx, b * ctx)
    # FLOPs: 61 layers x 128,000 pairs x 34,816 = 61 x 4,456,448,000 = 271,843,328,000
    assert s.attention_flops == pytest.approx(61 * 128_000 * 34_816, rel=1e-12)
    assert s.attention_flops == pytest.approx(271_843_328_000, rel=1e-12)
    # bytes: 61 x 576 x 128,000 read + 61 x 576 x 64 written
    assert s.kv_read_bytes == pytest.approx(4_497_408_000, rel=1e-12)
    assert s.kv_write_bytes == pytest.approx(2_248_704, rel=1e-12)
    # roofline: the larger of the two times (intensity 34,816 / 576 = 60 FLOP/B)
    g, p = sm.gpu, sm.params
    t_mem = (4_497_408_000 + 2_248_704) / (g.mem_bw_bytes_s * p.kv_mem_eff)
    # the absorbed decode FLOPs at the MLA kernel's rate (planner.engine.mla): H200 bf16 peak
    # 989 TFLOPS x 660 / 990
    t_comp = 271_843_328_000 / sm.mla_decode_flops_s
    assert sm.mla_decode_flops_s == pytest.approx(989e12 * 660 / 990, rel=1e-3)
    assert s.t_attn_s == pytest.approx(max(t_mem, t_comp), rel=1e-12)


def test_dep8_decode_attention_is_compute_bound():
    """DEP8: each attention rank holds all 128 heads; 8 x 8 = 64 sequences of 2,000 tokens,
    8 per rank. Per GPU: 8 x 2,000 pairs x 61 x 278,528 FLOPs against 8 x 2,000 x 61 x 576 B
    of latent: 483.6 FLOP/B, above any GPU's peak FLOPs / bandwidth ratio at the prior's
    efficiencies, so the step's attention is compute bound."""
    lay = Layout(tp=1, attention_dp=8, ep=8)
    sm = step_model("deepseek-v3", H200, "fp8", "fp8", layout=lay, catalog=_CAT)
    s = sm.step(64, 64, 64, 64 * 2000, 64 * 2000)
    assert s.attention_flops == pytest.approx(8 * 2000 * 61 * ABSORBED_PAIR, rel=1e-12)
    assert s.kv_read_bytes == pytest.approx(8 * 2000 * 61 * 576, rel=1e-12)
    assert not s.attn_memory_bound


def test_prefill_chunk_runs_expanded():
    """One prompt chunk of 512 tokens, nothing cached: 512 x 513 / 2 = 131,328 pairs per layer;
    its 512 context reads count as absorbed (decode_pairs), the other 130,816 expanded."""
    sm = step_model("deepseek-v3", H200, "fp8", "fp8", tp=8, catalog=_CAT)
    pairs = 512 * 513 / 2
    s = sm.step(512, 1, 1, 512, pairs)
    want = 61 * (130_816 * EXPANDED_PAIR / 8 + 512 * ABSORBED_PAIR / 8)
    assert s.attention_flops == pytest.approx(want, rel=1e-12)


def test_dense_model_attention_unchanged():
    """A model without MLA keeps 4 x heads x head_dim FLOPs per pair on every pair."""
    sm = step_model("llama-3.1-8b", "nvidia-h100-sxm", "bf16", tp=1, catalog=_CAT)
    assert sm.attn_flops_per_decode_pair_layer == 0.0
    s = sm.step(8, 8, 8, 8 * 1000, 8 * 1000)
    assert s.attention_flops == pytest.approx(32 * 8000 * 4 * 32 * 128, rel=1e-12)


@PROPS
@given(
    b=st.integers(0, 256),
    ctx=st.integers(1, 8000),
    chunk=st.integers(0, 4096),
    pos=st.integers(0, 8000),
    dp=st.sampled_from([1, 8]),
)
def test_mla_scalar_path_equals_vector_path(b, ctx, chunk, pos, dp):
    lay = Layout(tp=8 // dp, attention_dp=dp, ep=8) if dp > 1 else None
    sm = step_model("deepseek-v3", H200, "fp8", "fp8", tp=8, layout=lay, catalog=_CAT)
    T = b + chunk
    if T == 0:
        return
    pref = chunk * pos
    args = (T, b + (chunk > 0), b + (chunk > 0), b * ctx + (pos + chunk) * (chunk > 0),
            b * ctx + pref + chunk * (chunk + 1) / 2, 0.0, 0.0, pref)  # fmt: skip
    assert sm.step_time(*args) == pytest.approx(sm.step(*args).time_s, rel=1e-12)


# ---- routed experts hit by a step ------------------------------------------------------
def test_experts_hit_one_token_and_many():
    """Uniform top-8 routing picks 8 distinct experts per token: P(an expert is missed by one
    token) = 1 - 8/256, so 1 token hits exactly 8 experts (TP8: every GPU holds a slice of all
    256) and 1 per GPU under EP8 (32 local experts x 8/256); a large batch hits them all."""
    tp8 = step_model("deepseek-v3", H200, "fp8", tp=8, catalog=_CAT)
    assert tp8.expected_experts(1) == pytest.approx(8.0, rel=1e-12)
    assert tp8.expected_experts(100_000) == pytest.approx(256.0, rel=1e-9)
    dep = step_model("deepseek-v3", H200, "fp8", layout=Layout(attention_dp=8, ep=8), catalog=_CAT)
    assert dep.local_experts == 32
    assert dep.expected_experts(1) == pytest.approx(1.0, rel=1e-12)
    assert dep.expected_experts(100_000) == pytest.approx(32.0, rel=1e-9)
    # 64 tokens: 32 x (1 - (248/256)^64) = 32 x (1 - 0.1309) = 27.81 local experts
    assert dep.expected_experts(64) == pytest.approx(32 * (1 - (248 / 256) ** 64), rel=1e-12)
    assert dep.expected_experts(64) == pytest.approx(27.81, abs=0.01)
    # the weights read: only the experts hit (a decode step of 1 token reads 1 of 32 locally)
    s1 = dep.step(1, 1, 1, 100, 100)
    s_all = dep.step(100_000, 1000, 1000, 100_000, 100_000)
    assert s_all.weight_bytes - s1.weight_bytes == pytest.approx(31 * dep.expert_bytes, rel=1e-6)


@PROPS
@given(t=st.integers(0, 50_000), dt=st.integers(1, 5000), ep=st.sampled_from([1, 2, 4, 8]))
def test_more_tokens_never_hit_fewer_experts(t, dt, ep):
    lay = Layout(tp=8 // ep, attention_dp=ep, ep=ep) if ep > 1 else None
    sm = step_model("deepseek-v3", H200, "fp8", tp=8, layout=lay, catalog=_CAT)
    a, b = sm.expected_experts(t), sm.expected_experts(t + dt)
    assert b >= a
    assert b <= sm.local_experts + 1e-9


# ---- multi-node links --------------------------------------------------------------------
@PROPS
@given(
    bw=st.floats(1.0, 400.0),
    more=st.floats(1.0, 10.0),
    b=st.integers(1, 512),
    lay=st.sampled_from([Layout(tp=16), Layout(attention_dp=16, ep=16), Layout(tp=8, attention_dp=2, ep=16)]),
)  # fmt: skip
def test_more_scaleout_bandwidth_never_slows_a_multi_node_step(bw, more, b, lay):
    g = _CAT.gpu(H200)
    slow = g.model_copy(update={"scaleout_gbs_per_gpu": bw})
    fast = g.model_copy(update={"scaleout_gbs_per_gpu": bw * more})
    args = (b, b, b, b * 1500, b * 1500)
    t_slow = step_model("deepseek-v3", slow, "fp8", layout=lay, catalog=_CAT).step_time(*args)
    t_fast = step_model("deepseek-v3", fast, "fp8", layout=lay, catalog=_CAT).step_time(*args)
    assert t_fast <= t_slow


def test_tp16_over_two_nodes_uses_the_scaleout_link():
    """TP16 of 8-GPU H200 servers: the all-reduce runs at the scale-out bandwidth per GPU
    (hardware.yaml scaleout_gbs_per_gpu 50 GB/s), not NVLink's 450 GB/s."""
    g = _CAT.gpu(H200)
    assert g.nvlink_domain_gpus == 8
    sm16 = step_model("deepseek-v3", H200, "fp8", tp=16, params=PRIOR, catalog=_CAT)
    sm8 = step_model("deepseek-v3", H200, "fp8", tp=8, params=PRIOR, catalog=_CAT)
    assert sm16.link_bytes_s == pytest.approx(g.scaleout_gbs_per_gpu * 1e9)
    assert sm8.link_bytes_s == pytest.approx(g.interconnect_gbs_unidir * 1e9)
    assert math.isclose(sm16.link_bytes_s / sm8.link_bytes_s, 50 / 450)
