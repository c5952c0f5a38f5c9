"""Step-time model: hand-derived roofline goldens and properties (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA_DIR, IDEAL
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from planner.catalog import PRIOR, load_catalog
from planner.engine import decode_step, estimate, kv_bytes_per_sequence, prefill, step_model
from planner.errors import MissingDataError, PlannerError

_CAT = load_catalog(DATA_DIR)
_MODELS = [m.id for m in _CAT.models]
_MOE = [m.id for m in _CAT.models if m.is_moe]
H100 = "nvidia-h100-sxm"

# Llama-3.1-8B, by hand (see test_engine_memory.test_param_count_llama31_8b_by_hand)
ATTN_8B = 32 * 41_943_040  # q, k, v, o of 32 layers
MLP_8B = 32 * 176_160_768  # gate, up, down of 32 layers
NORMS_8B = (2 * 32 + 1) * 4096
LM_HEAD_8B = 128_256 * 4096
KV_TOKEN_8B = 32 * 2 * 8 * 128 * 2  # 131,072 B per token, bf16

PROPS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)  # fmt: skip


def test_h100_catalog_numbers_used_below(catalog):
    g = catalog.gpu(H100)
    assert (g.mem_bw_gbs, g.bf16_dense_tflops, g.interconnect_gbs_unidir) == (3350, 989, 450)


# --------------------------------------------------------------------------- goldens
def test_decode_step_memory_bound_by_hand(catalog):
    sm = step_model("llama-3.1-8b", H100, "bf16", params=IDEAL, catalog=catalog)
    # every weight matrix is read once per step; the embedding table is only looked up
    weight_bytes = 2 * (ATTN_8B + MLP_8B + NORMS_8B + LM_HEAD_8B)
    assert weight_bytes == 15_009_849_344
    # 16-bit GEMM inputs + outputs per layer: qkv (4096 in, 6144 out), o (4096, 4096),
    # gate_up (4096, 2 x 14336), down (14336, 4096)
    act_bytes = 2 * 32 * ((4096 + 6144) + (4096 + 4096) + (4096 + 2 * 14336) + (14336 + 4096))
    assert act_bytes == 4_456_448
    # KV: read the 1024 cached tokens + the new one, write the new one
    kv_bytes = KV_TOKEN_8B * (1024 + 1 + 1)
    expected_s = (weight_bytes + act_bytes + kv_bytes) / 3.35e12  # peak HBM bandwidth
    assert expected_s == pytest.approx(4.522026e-3, rel=1e-6)

    br = decode_step(sm, 1, 1024)
    assert br.time_s == pytest.approx(expected_s, rel=1e-12)
    assert br.weight_bytes == weight_bytes
    assert br.activation_bytes == act_bytes
    assert br.kv_read_bytes + br.kv_write_bytes == kv_bytes
    # compute for comparison: 2 FLOPs per weight, lm head for the one new token
    assert br.matmul_flops == 2 * (ATTN_8B + MLP_8B) + 2 * LM_HEAD_8B
    assert br.matmul_flops / 989e12 < expected_s / 100
    assert br.bound == "memory"


def test_prefill_compute_bound_by_hand(catalog):
    sm = step_model("llama-3.1-8b", H100, "bf16", params=IDEAL, catalog=catalog)
    T = 4096
    # linear layers on all 4096 tokens, lm head on the last token only
    gemm_flops = 2 * (ATTN_8B + MLP_8B) * T + 2 * LM_HEAD_8B * 1
    # causal attention: token i attends to i keys -> T(T+1)/2 pairs per layer;
    # QK^T and PV: 2 x 2 x heads 32 x head_dim 128 FLOPs per pair
    pairs = T * (T + 1) // 2
    attn_flops = 32 * pairs * (2 * 2 * 32 * 128)
    expected_s = gemm_flops / 989e12 + attn_flops / 989e12
    assert expected_s == pytest.approx(0.06225964, rel=1e-6)

    br = prefill(sm, 1, T)
    assert br.matmul_flops == gemm_flops
    assert br.attention_flops == attn_flops
    assert br.time_s == pytest.approx(expected_s, rel=1e-12)
    # the memory side is smaller: weights + activations of 4096 tokens at 3.35 TB/s
    act_bytes = 4_456_448 * T
    assert (15_009_849_344 + act_bytes) / 3.35e12 < gemm_flops / 989e12
    assert br.bound == "compute"


def test_tp_all_reduce_by_hand(catalog):
    sm1 = step_model("llama-3.1-70b", H100, "bf16", tp=1, params=IDEAL, catalog=catalog)
    sm2 = step_model("llama-3.1-70b", H100, "bf16", tp=2, params=IDEAL, catalog=catalog)
    br = decode_step(sm2, 1, 1024)
    # two all-reduces per layer of one token's hidden state (8192 x 2 bytes), 80 layers
    comm_bytes = 2 * 80 * 8192 * 2
    assert br.comm_bytes == comm_bytes
    # ring all-reduce moves 2 (tp - 1) / tp of the bytes over the 450 GB/s link
    assert br.t_comm_s == pytest.approx(2 * (2 - 1) / 2 * comm_bytes / 450e9, rel=1e-12)
    # each GPU reads half the weights: the step is faster, but less than 2x
    t1 = decode_step(sm1, 1, 1024).time_s
    assert t1 / 2 < br.time_s < t1


def test_comm_latency_and_overheads_add_up(catalog):
    p = IDEAL.with_(comm_latency_s=5e-6, step_overhead_s=1e-3, layer_overhead_s=2e-6,
                    seq_overhead_s=3e-6)  # fmt: skip
    sm = step_model("llama-3.1-70b", H100, "bf16", tp=4, params=p, catalog=catalog)
    br = decode_step(sm, 8, 512)
    assert br.t_overhead_s == pytest.approx(1e-3 + 2e-6 * 80 + 3e-6 * 8, rel=1e-12)
    wire = 2 * 3 / 4 * (8 * 2 * 80 * 8192 * 2) / 450e9
    assert br.t_comm_s == pytest.approx(wire + 2 * 80 * 5e-6, rel=1e-12)


def test_estimate_static_batch(catalog):
    sm = step_model("llama-3.1-8b", H100, "bf16", params=PRIOR, catalog=catalog)
    est = estimate(sm, batch=4, input_len=512, output_len=129)
    assert est.prefill_s == pytest.approx(float(prefill(sm, 4, 512).time_s))
    assert est.ttft_s == est.prefill_s
    # TPOT excludes the first token: 128 decode steps with contexts 512..639
    steps = np.arange(512, 640)
    exact_tpot = float(np.mean(decode_step(sm, 4, steps).time_s))
    assert est.tpot_s == pytest.approx(exact_tpot, rel=1e-3)
    assert est.e2e_s == pytest.approx(est.prefill_s + 128 * est.tpot_s)
    assert est.output_tok_s == pytest.approx(4 * 129 / est.e2e_s)
    assert est.total_tok_s == pytest.approx(4 * (512 + 129) / est.e2e_s)


def test_vectorized_matches_scalar_and_fast_path(catalog):
    sm = step_model("mixtral-8x7b", H100, "fp8", tp=2, params=PRIOR, catalog=catalog)
    batch = np.array([1, 4, 32, 256])
    ctx = np.array([[128], [4096]])
    grid = decode_step(sm, batch, ctx).time_s
    assert grid.shape == (2, 4)
    for i, c in enumerate((128, 4096)):
        for j, b in enumerate(batch):
            one = decode_step(sm, int(b), c)
            assert grid[i, j] == pytest.approx(one.time_s, rel=1e-12)
            fast = sm.step_time(b, b, b, b * (c + 1), b * (c + 1))
            assert fast == pytest.approx(one.time_s, rel=1e-12)


def test_eager_prefill_dispatch_floor(catalog):
    # a prefill step runs eagerly: with GPU work far below the CPU dispatch time of
    # 32 layers x 100 µs = 3.2 ms, the step takes about the dispatch time
    p = IDEAL.with_(eager_layer_s=1e-4)
    sm = step_model("llama-3.1-8b", H100, "bf16", params=p, catalog=catalog)
    ideal = step_model("llama-3.1-8b", H100, "bf16", params=IDEAL, catalog=catalog)
    g = prefill(ideal, 1, 16).time_s  # GPU time of a 16-token prefill, ~4.5 ms
    br = prefill(sm, 1, 16)
    assert br.time_s == pytest.approx((g**4 + 3.2e-3**4) ** 0.25, rel=1e-12)
    assert br.t_overhead_s == pytest.approx(br.time_s - g, rel=1e-9)
    # the scalar fast path agrees; decode steps replay a CUDA graph and pay nothing
    assert sm.step_time(16, 1, 1, 16, 16 * 17 / 2) == pytest.approx(br.time_s, rel=1e-12)
    assert decode_step(sm, 1, 16).time_s == decode_step(ideal, 1, 16).time_s


# --------------------------------------------------------------------------- errors
def test_precision_unsupported_on_gpu(catalog):
    # CDNA2 has no fp8 tensor cores and no weight-only fp8 path in the catalog
    with pytest.raises(PlannerError, match="not supported on amd-mi250x"):
        step_model("llama-3.1-8b", "amd-mi250x", "fp8", catalog=catalog)
    with pytest.raises(PlannerError, match="not supported on amd-mi300x"):
        step_model("llama-3.1-8b", "amd-mi300x", "int4-awq", catalog=catalog)


def test_weight_only_fallback_computes_in_16_bit(catalog):
    # fp8 weights on Ampere: dequantized to 16 bit, so the fp16/bf16 peak applies
    sm = step_model("llama-3.1-8b", "nvidia-a100-80gb-sxm", "fp8", catalog=catalog)
    assert sm.peak_flops == 312e12


def test_tp_must_divide_heads(catalog):
    with pytest.raises(PlannerError, match="does not divide"):
        step_model("llama-3.1-8b", H100, "bf16", tp=3, catalog=catalog)


def test_tp_without_interconnect_data(catalog):
    gpu = catalog.gpu(H100).model_copy(update={"interconnect_gbs_unidir": None})
    with pytest.raises(MissingDataError, match="interconnect"):
        step_model("llama-3.1-8b", gpu, "bf16", tp=2, catalog=catalog)
    step_model("llama-3.1-8b", gpu, "bf16", tp=1, catalog=catalog)  # TP 1 needs no link


# --------------------------------------------------------------------------- properties
@PROPS
@given(
    model_id=st.sampled_from(_MODELS),
    c1=st.integers(1, 300_000),
    c2=st.integers(1, 300_000),
    block=st.sampled_from([1, 16, 64]),
    tp=st.sampled_from([1, 2, 8]),
)
def test_kv_monotone_in_context(model_id, c1, c2, block, tp):
    m = _CAT.model(model_id)
    lo, hi = sorted((c1, c2))
    assert kv_bytes_per_sequence(m, lo, 16, tp, block) <= kv_bytes_per_sequence(
        m, hi, 16, tp, block
    )


@PROPS
@given(
    model_id=st.sampled_from(_MODELS),
    bw=st.floats(100, 20_000),
    factor=st.floats(1.0, 10.0),
    batch=st.integers(1, 512),
    ctx=st.integers(1, 32_768),
)
def test_more_bandwidth_never_slows_decode(model_id, bw, factor, batch, ctx):
    g = _CAT.gpu(H100)
    slow = step_model(model_id, g.model_copy(update={"mem_bw_gbs": bw}), "bf16", catalog=_CAT)
    fast = step_model(model_id, g.model_copy(update={"mem_bw_gbs": bw * factor}), "bf16",
                      catalog=_CAT)  # fmt: skip
    assert decode_step(fast, batch, ctx).time_s <= decode_step(slow, batch, ctx).time_s * (
        1 + 1e-12
    )


@PROPS
@given(
    model_id=st.sampled_from(_MODELS),
    tp=st.sampled_from([1, 2, 4, 8]),
    batch=st.integers(1, 256),
    ctx=st.integers(1, 65_536),
    phase=st.sampled_from(["prefill", "decode"]),
)
def test_breakdown_terms_sum_to_time(model_id, tp, batch, ctx, phase):
    m = _CAT.model(model_id)
    assume(m.is_mla or m.num_attention_heads % tp == 0)
    params = PRIOR.with_(
        step_overhead_s=1e-3, layer_overhead_s=1e-5, seq_overhead_s=1e-6, eager_layer_s=2e-5
    )
    sm = step_model(m, H100, "bf16", tp=tp, params=params, catalog=_CAT)
    br = prefill(sm, batch, min(ctx, 8192)) if phase == "prefill" else decode_step(sm, batch, ctx)
    parts = br.t_gemm_s + br.t_attn_s + br.t_comm_s + br.t_overhead_s
    assert br.time_s == pytest.approx(parts, rel=1e-12)
    assert min(br.t_gemm_s, br.t_attn_s, br.t_comm_s, br.t_overhead_s) >= 0


@PROPS
@given(
    model_id=st.sampled_from(_MODELS),
    b1=st.integers(1, 1024),
    b2=st.integers(1, 1024),
    ctx=st.integers(1, 32_768),
    tp=st.sampled_from([1, 2, 4]),
)
def test_more_batch_never_lowers_step_time(model_id, b1, b2, ctx, tp):
    m = _CAT.model(model_id)
    assume(m.is_mla or m.num_attention_heads % tp == 0)
    lo, hi = sorted((b1, b2))
    sm = step_model(m, H100, "bf16", tp=tp, params=PRIOR, catalog=_CAT)
    assert decode_step(sm, lo, ctx).time_s <= decode_step(sm, hi, ctx).time_s * (1 + 1e-12)
    isl = min(ctx, 4096)
    assert prefill(sm, lo, isl).time_s <= prefill(sm, hi, isl).time_s * (1 + 1e-12)


@PROPS
@given(model_id=st.sampled_from(_MOE), t1=st.integers(0, 100_000), t2=st.integers(0, 100_000))
def test_moe_expected_experts_bounded_and_monotone(model_id, t1, t2):
    sm = step_model(model_id, H100, "bf16", params=PRIOR, catalog=_CAT)
    m = _CAT.model(model_id)
    lo, hi = sorted((t1, t2))
    e_lo, e_hi = float(sm.expected_experts(lo)), float(sm.expected_experts(hi))
    assert 0 <= e_lo <= e_hi <= m.num_experts
    if lo >= 1:  # one token touches exactly top_k experts
        assert e_lo >= min(m.num_experts_per_tok, m.num_experts) * (1 - 1e-12)


def test_moe_expected_experts_single_token(catalog):
    sm = step_model("mixtral-8x7b", H100, "bf16", catalog=catalog)
    # one token picks 2 of 8: 8 x (1 - (1 - 2/8)^1) = 2
    assert float(sm.expected_experts(1)) == pytest.approx(2.0)
    # 4 tokens: 8 x (1 - 0.75^4) = 5.46875
    assert float(sm.expected_experts(4)) == pytest.approx(8 * (1 - 0.75**4))


# --------------------------------------------------------------------------- scalar == vector
@pytest.mark.parametrize(
    ("model", "pp", "eager_layer_s"),
    [
        ("gemma-2-9b", 1, 0.0),  # sliding-window layers
        ("mistral-7b-v0.1", 2, 0.0),  # every layer windowed, pp > 1
        ("gpt-oss-20b", 2, 2e-4),  # MoE + windows, pp > 1, eager dispatch floor
        ("gemma-2-9b", 2, 2e-4),  # all three at once
    ],
)
def test_scalar_path_equals_vector_path(catalog, model, pp, eager_layer_s):
    """ONE equivalence test of the kernel's two forms (planner.engine._scalar): the step
    time, the window sums, and the scalar phase forms the fit and the simulator use."""
    from planner.engine._scalar import window_pairs
    from planner.engine.phases import _window_sums, decode_time, prefill_time

    params = PRIOR.with_(eager_layer_s=eager_layer_s, prefix_attn_eff=0.12)
    sm = step_model(model, H100, "bf16", tp=2, pp=pp, params=params, catalog=catalog)
    assert sm.pp == pp and (sm.window > 0) and (not eager_layer_s or sm.params.eager_layer_s)
    for pos, n in [(0, 1), (0, 300), (1000, 1), (3000, 2000), (5000, 512), (9000, 7)]:
        _, pairs = _window_sums(pos + n, n, sm.window)
        assert window_pairs(pos, n, sm.window) == pytest.approx(float(pairs), rel=1e-15)
        kv_sw = min(pos + n, sm.window)
        args = (n * 3, 3, 3, 3 * (pos + n), 3 * (n * pos + n * (n + 1) / 2), 3 * kv_sw,
                3 * window_pairs(pos, n, sm.window), 3 * n * pos)  # fmt: skip
        assert sm.step_time(*args) == pytest.approx(sm.step(*args).time_s, rel=1e-12)
    for batch, isl in [(1, 128), (4, 2048), (2, 8192)]:
        assert prefill_time(sm, batch, isl) == pytest.approx(
            prefill(sm, batch, isl).time_s, rel=1e-12
        )
    for batch, ctx in [(1, 100), (64, 4095), (16, 9000)]:
        assert decode_time(sm, batch, ctx) == pytest.approx(
            decode_step(sm, batch, ctx).time_s, rel=1e-12
        )


def test_gpt_oss_decode_bytes_by_hand():
    # gpt-oss-120b in its own MXFP4 release, one sequence at 8,192 tokens, H200, TP 1
    from planner.engine import decode_step, step_model

    sm = step_model("gpt-oss-120b", "nvidia-h200-sxm", "fp4")
    b = decode_step(sm, 1, 8192)
    # bf16 (not MXFP4) dense part: attention 36 x (q 2,880 x 4,096 + o 4,096 x 2,880
    # + k, v 2 x 2,880 x 512 + biases 4,096 + 1,024 + 2,880 + 64 sinks) = 955,805,184;
    # router 36 x (2,880 x 128 + 128) = 13,275,648; norms (2 x 36 + 1) x 2,880 = 210,240
    # -> 969,291,072 params x 2 B = 1,938,582,144 B
    dense = (955_805_184 + 13_275_648 + 210_240) * 2
    assert sm.dense_weight_bytes == dense == 1_938_582_144
    # one token picks 4 of 128 experts per layer: 4 x 36 x 24,891,840 params x 4.25 / 8 B
    # = 4 x 476,056,440 B; lm head 201,088 x 2,880 x 2 B = 1,158,266,880 B
    assert float(b.weight_bytes) == dense + 4 * 476_056_440 + 1_158_266_880
    # KV read: 2 x 8 x 64 x 2 B = 2,048 B per token and layer over 18 full layers of 8,193
    # tokens and 18 windowed layers of 128 = 306,745,344 B
    assert float(b.kv_read_bytes) == 2048 * (18 * 8193 + 18 * 128) == 306_745_344
