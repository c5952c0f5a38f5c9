"""Memory goldens, each derived by hand from the architecture (arithmetic in the test)."""

from __future__ import annotations

import pytest
from conftest import DATA_DIR

from planner.catalog import load_catalog
from planner.engine import (
    activation_workspace_bytes,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    param_counts,
    plan_memory,
    weight_memory,
)
from planner.errors import PlannerError

_CAT = load_catalog(DATA_DIR)
_PUBLISHED = [m.id for m in _CAT.models if m.published_total_params_b is not None]


# --------------------------------------------------------------------------- KV cache
def test_kv_llama31_70b_fp16(catalog):
    # layers 80 x (K and V) 2 x kv heads 8 x head_dim 128 x 2 bytes
    assert kv_bytes_per_token(catalog.model("llama-3.1-70b"), kv_bits=16) == 80 * 2 * 8 * 128 * 2
    assert 80 * 2 * 8 * 128 * 2 == 327_680


def test_kv_llama31_8b_fp16_and_fp8(catalog):
    m = catalog.model("llama-3.1-8b")
    assert kv_bytes_per_token(m, 16) == 32 * 2 * 8 * 128 * 2 == 131_072
    assert kv_bytes_per_token(m, 8) == 32 * 2 * 8 * 128 * 1 == 65_536


def test_kv_deepseek_v3_mla(catalog):
    # MLA caches the compressed latent (kv_lora_rank 512) + the decoupled RoPE key (64) per layer
    m = catalog.model("deepseek-v3")
    assert m.is_mla
    assert kv_bytes_per_token(m, 16) == 61 * (512 + 64) * 2 == 70_272
    # the latent is replicated on every TP rank: no split
    assert kv_bytes_per_token(m, 16, tp=8) == 70_272


def test_kv_mistral_sliding_window_caps_at_4096(catalog):
    m = catalog.model("mistral-7b-v0.1")
    assert (m.sliding_window, m.num_sliding_layers) == (4096, 32)
    per_token_layer = 2 * 8 * 128 * 2  # 4,096 B
    # at 8k context every layer holds only its window of 4096 tokens
    assert kv_bytes_per_sequence(m, 8192, 16) == 32 * 4096 * per_token_layer == 536_870_912
    # below the window nothing is capped: 2048 tokens x 131,072 B/token
    assert kv_bytes_per_sequence(m, 2048, 16) == 2048 * 32 * per_token_layer == 268_435_456
    # the uncapped marginal cost per token is unchanged
    assert kv_bytes_per_token(m, 16) == 32 * per_token_layer == 131_072


def test_kv_gemma2_half_the_layers_capped(catalog):
    m = catalog.model("gemma-2-9b")
    assert (m.num_hidden_layers, m.num_sliding_layers, m.sliding_window) == (42, 21, 4096)
    per_token_layer = 2 * 8 * 256 * 2  # 8,192 B
    # 21 global layers hold all 8192 tokens, 21 local layers hold 4096
    expected = per_token_layer * (21 * 8192 + 21 * 4096)
    assert expected == 2_113_929_216
    assert kv_bytes_per_sequence(m, 8192, 16) == expected


def test_kv_block_rounding():
    m = load_catalog(DATA_DIR).model("llama-3.1-8b")
    # 100 tokens in 16-token blocks occupy 7 blocks = 112 token slots
    assert kv_bytes_per_sequence(m, 100, 16, block_size=16) == 112 * 131_072


@pytest.mark.parametrize(
    ("tp", "heads_per_gpu"),
    [(1, 8), (2, 4), (4, 2), (8, 1), (16, 1)],  # never below one KV head per GPU
)
def test_gqa_kv_heads_split_under_tp(catalog, tp, heads_per_gpu):
    m = catalog.model("llama-3.1-70b")
    assert kv_bytes_per_token(m, 16, tp=tp) == 80 * 2 * heads_per_gpu * 128 * 2


# --------------------------------------------------------------------------- parameters
def test_param_count_llama31_8b_by_hand(catalog):
    pc = param_counts(catalog.model("llama-3.1-8b"))
    h, inter, v, layers = 4096, 14336, 128_256, 32
    attn = h * (32 * 128) + 2 * h * (8 * 128) + (32 * 128) * h  # q + k,v + o = 41,943,040
    mlp = 3 * h * inter  # gate, up, down = 176,160,768
    norms = 2 * h  # input + post-attention RMSNorm = 8,192
    assert (attn, mlp) == (41_943_040, 176_160_768)
    total = layers * (attn + mlp + norms) + 2 * v * h + h  # + embedding, lm head, final norm
    assert total == 8_030_261_248
    assert pc.total == total
    assert pc.active == total  # dense: every parameter is active
    assert pc.embedding == pc.lm_head == 525_336_576


def test_param_count_deepseek_v3_by_hand(catalog):
    pc = param_counts(catalog.model("deepseek-v3"))
    h, v = 7168, 129_280
    # MLA attention per layer
    q = h * 1536 + 1536 + 1536 * 128 * (128 + 64)  # q_a, q_a_norm, q_b = 48,760,320
    kv = h * (512 + 64) + 512 + 512 * 128 * (128 + 128)  # kv_a (+rope key), kv_a_norm, kv_b
    o = 128 * 128 * h
    attn = q + kv + o
    assert (q, kv, o) == (48_760_320, 20_906_496, 117_440_512)
    dense_mlp = 3 * h * 18432  # first 3 layers
    expert = 3 * h * 2048  # 44,040,192 per expert
    moe_layers = 61 - 3
    total = (
        61 * attn
        + 3 * dense_mlp
        + moe_layers * (256 + 1) * expert  # 256 routed + 1 shared expert
        + moe_layers * h * 256  # router
        + (2 * 61 + 1) * h  # norms
        + 2 * v * h  # embedding + lm head (the MTP module is not counted)
    )
    active = total - moe_layers * (256 - 8) * expert  # a token uses 8 of 256 routed experts
    assert pc.total == total
    assert pc.active == active
    assert round(total / 1e9, 1) == 671.0
    assert round(active / 1e9, 1) == 37.6


@pytest.mark.parametrize("model_id", _PUBLISHED)
def test_param_count_matches_published_total(catalog, model_id):
    m = catalog.model(model_id)
    computed_b = param_counts(m).total / 1e9
    assert computed_b == pytest.approx(m.published_total_params_b, rel=0.03), (
        f"{model_id}: computed {computed_b:.3f} B vs published {m.published_total_params_b} B"
    )


def test_catalog_has_published_totals_to_check():
    assert len(_PUBLISHED) >= 5


# --------------------------------------------------------------------------- weights
def test_weight_bytes_llama31_70b_bf16_tp4(catalog):
    w = weight_memory(catalog.model("llama-3.1-70b"), catalog.precision("bf16"), tp=4)
    h, inter, v, layers = 8192, 28672, 128_256, 80
    attn = 2 * h * (64 * 128) + 2 * h * (8 * 128)  # q + o, k + v = 150,994,944 per layer
    mlp = 3 * h * inter
    norms = (2 * layers + 1) * h  # replicated on every GPU
    total_params = layers * (attn + mlp) + norms + 2 * v * h
    assert total_params == 70_553_706_496
    assert w.total_bytes == 2 * total_params
    # tp=4: 8 KV heads -> 2 per GPU, nothing replicated except the norms
    per_gpu = 2 * (layers * (attn + mlp) / 4 + norms + 2 * v * h / 4)
    assert per_gpu == 35_278_831_616
    assert w.per_gpu_bytes == pytest.approx(per_gpu, rel=1e-12)


def test_weight_bytes_pipeline_parallel(catalog):
    m, bf16 = catalog.model("llama-3.1-70b"), catalog.precision("bf16")
    w1 = weight_memory(m, bf16, tp=1, pp=1)
    w2 = weight_memory(m, bf16, tp=1, pp=2)
    # the busiest stage: 40 of 80 layers + the larger of embedding / lm head (equal here)
    ends = 2 * 128_256 * 8192
    assert w2.per_gpu_bytes == pytest.approx((w1.per_gpu_bytes - 2 * ends) / 2 + ends, rel=1e-12)


def test_int4_awq_weight_bits(catalog):
    p = catalog.precision("int4-awq")
    # 4-bit weights + fp16 scale (and zero point) per group of 128 weights
    assert 4 + 16 / 128 <= p.weight_bits <= 4.5
    m = catalog.model("llama-3.1-8b")
    pc = param_counts(m)
    w = weight_memory(m, p)
    linear = pc.attention + pc.mlp_dense  # quantized
    unquantized = pc.embedding + pc.lm_head + pc.norms  # kept at 16 bit
    assert w.total_bytes == pytest.approx(linear * p.weight_bits / 8 + unquantized * 2, rel=1e-12)
    # 6,979,321,856 linear weights x 4.156 / 8 = 3.626 GB, + 2 x 525,336,576 embedding and
    # lm head + 266,240 norm weights at 2 bytes = 2.102 GB -> 5.728 GB (bf16: 16.06 GB)
    assert linear == 6_979_321_856 and unquantized == 1_050_939_392
    assert w.total_bytes / 1e9 == pytest.approx(
        (6_979_321_856 * p.weight_bits / 8 + 1_050_939_392 * 2) / 1e9, rel=1e-12
    )
    if p.weight_bits == 4.156:
        assert round(w.total_bytes / 1e9, 3) == 5.728


# --------------------------------------------------------------------------- plan
def test_max_concurrent_sequences_by_hand(catalog):
    # Llama-3.1-8B bf16 on one 80 GB H100, 90 % utilization, no framework (no runtime
    # overhead, 16-token blocks, workspace for 8192 batched tokens and 256 sequences)
    plan = plan_memory(
        "llama-3.1-8b", "nvidia-h100-sxm", "bf16", tp=1, context_len=4096,
        memory_utilization=0.9, catalog=catalog,
    )  # fmt: skip
    weights = 2 * 8_030_261_248  # 16,060,522,496 B
    act = 8192 * 2 * (2 * 4096 + (32 + 2 * 8) * 128 + 2 * 14336) + 256 * 128_256 * 4
    assert act == 835_977_216
    assert plan.activation_bytes_per_gpu == act
    # the H100 has 81,559 MiB as nvidia-smi reports it = 85,520,809,984 B (not 80e9)
    cap = 81_559 * 2**20
    assert plan.gpu_memory_bytes == cap == 85_520_809_984
    budget = cap * 0.9 - weights - act  # 76,968,728,985.6 - 16,896,499,712 = 60,072,229,273.6 B
    kv_seq = 4096 * 131_072  # 536,870,912 B
    assert plan.kv_bytes_per_sequence == kv_seq
    assert plan.max_concurrent_sequences == int(budget // kv_seq) == 111  # 111.9
    assert plan.max_kv_tokens == int(budget // 131_072)
    assert plan.fits and "111 sequences" in plan.reason


def test_free_memory_fraction_semantics_trtllm(catalog):
    # TensorRT-LLM gives the KV cache a fraction (0.9) of the memory left after weights and
    # workspace, not of the total
    fw = catalog.framework("trtllm")
    assert (fw.memory_utilization_of, fw.default_memory_utilization) == ("free", 0.9)
    assert (fw.default_max_num_seqs, fw.default_max_num_batched_tokens) == (2048, 8192)
    plan = plan_memory("llama-3.1-8b", "nvidia-h100-sxm", "bf16", framework=fw, catalog=catalog)
    act = 8192 * 2 * (2 * 4096 + 6144 + 2 * 14336) + 2048 * 128_256 * 4  # 8192 tokens, 2048 seqs
    assert plan.activation_bytes_per_gpu == act == 1_755_316_224
    # the memory outside torch (CUDA context, graphs, workspaces) comes off before the fraction:
    # 2.6 GB at tp = 1 (data/frameworks.yaml, TensorRT-LLM's own H100 test allowance of 2,500 MiB)
    assert plan.runtime_overhead_bytes_per_gpu == 2.6e9
    # 81,559 MiB = 85,520,809,984 B on the H100 (nvidia-smi); (85,520,809,984 - 16,060,522,496
    # - 1,755,316,224 - 2,600,000,000) x 0.9 = 58,594,474,137.6 B = 109.1 sequences of 536,870,912 B
    budget = (81_559 * 2**20 - 2 * 8_030_261_248 - act - 2.6e9) * 0.9
    assert plan.kv_budget_bytes_per_gpu == pytest.approx(budget, rel=1e-12)
    # 4096 tokens fill 128 blocks of 32 exactly: 4096 x 131,072 B per sequence
    assert plan.max_concurrent_sequences == int(budget // (4096 * 131_072)) == 109


def test_405b_bf16_does_not_fit_one_80gb_gpu(catalog):
    plan = plan_memory("llama-3.1-405b", "nvidia-h100-sxm", "bf16", catalog=catalog)
    assert not plan.fits
    assert plan.max_concurrent_sequences == 0
    assert plan.weight_bytes_per_gpu > 800e9  # ~405.9 B params x 2 bytes
    assert "does not fit" in plan.reason and "weights" in plan.reason
    assert plan.suggestions, "a plan that does not fit must say what would"
    # 811 GB / 16 = 51 GB per GPU is the first power-of-two TP that fits in 72 GB
    # (an H100 HGX server's NVLink domain holds 8 GPUs: 16 span two nodes)
    assert plan.suggestions[0] == "tp=16 (16 GPUs, 2 nodes)"
    # and the layout teams run across nodes: TP8 inside each node, 2 pipeline stages (811 GB
    # / 8 GPUs / 2 stages = 51 GB per GPU, as TP16)
    assert plan.suggestions[1] == "tp=8 pp=2 (16 GPUs, 2 nodes: PP across nodes)"


def test_fits_false_when_only_kv_is_short(catalog):
    # 8B bf16 leaves ~55 GB for KV; one sequence of 1M tokens needs 131 GB
    plan = plan_memory(
        "llama-3.1-8b", "nvidia-h100-sxm", "bf16", context_len=1_000_000, catalog=catalog
    )
    assert not plan.fits
    assert "KV cache" in plan.reason
    assert any(s.startswith("context <=") for s in plan.suggestions)
    assert any("max_position_embeddings" in a for a in plan.assumptions)
    # 55 GB / 131,072 B per token holds ~458,000 tokens, but Llama-3.1-8B reads 131,072 at
    # most: the suggestion stops at the model's window (it said "context <= 458304 tokens")
    assert "context <= 131072 tokens (the model's window)" in plan.suggestions


@pytest.mark.parametrize(
    "kwargs",
    [
        {"context_len": 0},
        {"context_len": -5},
        {"tp": 0},
        {"pp": 0},
        {"memory_utilization": 1.5},
        {"memory_utilization": 0.0},
        {"pp": 1000},
        {"kv_precision": "int3"},
    ],
)
def test_impossible_numbers_rejected(catalog, kwargs):
    with pytest.raises(PlannerError):
        plan_memory("llama-3.1-8b", "nvidia-h100-sxm", "bf16", catalog=catalog, **kwargs)


def test_activation_workspace_scales_with_tp(catalog):
    m = catalog.model("llama-3.1-70b")
    a1 = activation_workspace_bytes(m, 8192, 256, tp=1)
    a8 = activation_workspace_bytes(m, 8192, 256, tp=8)
    # the residual stream (2 x h per token) is not split, everything else is
    resid = 8192 * 2 * 2 * 8192
    assert a8 == pytest.approx(resid + (a1 - resid) / 8, rel=1e-12)


def test_qwen2_moe_shared_expert_width_from_config(tmp_path):
    """Qwen1.5-MoE-A2.7B: the shared expert has its own width (5632 vs 1408 per routed
    expert) and q/k/v carry biases. Published: 14.3B total, 2.7B activated (model card)."""
    import json

    from planner.catalog import model_from_hf_config
    from planner.engine import param_counts

    cfg = {
        "model_type": "qwen2_moe",
        "hidden_size": 2048,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "intermediate_size": 5632,
        "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632,
        "num_experts": 60,
        "num_experts_per_tok": 4,
        "vocab_size": 151936,
        "tie_word_embeddings": False,
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    pc = param_counts(model_from_hf_config(tmp_path / "config.json"))
    # shared expert per layer: 3 * 2048 * 5632 = 34,603,008 (not 3 * 2048 * 1408)
    assert pc.shared_experts == 24 * 3 * 2048 * 5632
    assert pc.total / 1e9 == pytest.approx(14.3, rel=0.03)
    assert pc.active / 1e9 == pytest.approx(2.7, rel=0.03)


@pytest.mark.parametrize("framework", [None, "vllm", "trtllm"])
def test_reserved_memory_is_the_rest_of_the_card(catalog, framework):
    plan = plan_memory("llama-3.1-8b", "nvidia-h100-sxm", "bf16", context_len=4096,
                       memory_utilization=0.8, framework=framework, catalog=catalog)  # fmt: skip
    fw = catalog.framework(framework) if framework else None
    free = plan.gpu_memory_bytes - (
        plan.weight_bytes_per_gpu + plan.activation_bytes_per_gpu
        + plan.runtime_overhead_bytes_per_gpu
    )  # fmt: skip
    expected = free * 0.2 if fw is not None and fw.memory_utilization_of == "free" else (
        plan.gpu_memory_bytes * 0.2
    )  # fmt: skip
    assert plan.reserved_bytes_per_gpu == pytest.approx(expected, rel=1e-9)


# --------------------------------------------------------------------------- default KV, gpt-oss
def test_memory_plan_uses_and_says_the_frameworks_default_kv(catalog):
    # Llama-3.1-70B fp8 with vLLM: the fp8 checkpoint's fp8 KV, 80 layers x 2 (K, V)
    # x 8 KV heads / TP 2 x 128 head_dim x 1 byte = 81,920 B per token per GPU
    plan = plan_memory(
        "llama-3.1-70b", "nvidia-h200-sxm", "fp8", tp=2, framework="vllm", catalog=catalog
    )
    assert plan.kv_precision == "fp8" and plan.kv_cache_bytes_per_token == 80 * 2 * 4 * 128
    assert plan.kv_precision_basis.startswith("fp8 (default for vllm with an fp8 checkpoint")
    given = plan_memory(
        "llama-3.1-70b", "nvidia-h200-sxm", "fp8", "bf16", 2, framework="vllm", catalog=catalog
    )
    assert given.kv_precision_basis == "bf16 (given)"
    assert given.kv_cache_bytes_per_token == 2 * plan.kv_cache_bytes_per_token


def test_gpt_oss_kv_memory_with_its_alternating_128_token_window(catalog):
    # gpt-oss-120b: 36 layers, every other one a 128-token sliding window; 8 KV heads x 64.
    # Per layer and token: 2 (K, V) x 8 x 64 x 2 B (bf16) = 2,048 B.
    # 8,192 tokens: 18 full layers x 8,192 + 18 window layers x 128 tokens
    # = (147,456 + 2,304) x 2,048 B = 306,708,480 B (not 36 x 8,192 x 2,048 = 603,979,776 B)
    m = catalog.model("gpt-oss-120b")
    assert (m.num_sliding_layers, m.sliding_window, m.vocab_size) == (18, 128, 201_088)
    assert kv_bytes_per_sequence(m, 8192, 16, 1, 16) == 306_708_480
    # below the window every layer holds every token: 36 x 100 x 2,048 B = 7,372,800 B
    assert kv_bytes_per_sequence(m, 100, 16, 1, 1) == 7_372_800
    # gpt-oss-20b: 24 layers, 12 windowed: (12 x 8,192 + 12 x 128) x 2,048 B = 204,472,320 B
    assert kv_bytes_per_sequence(catalog.model("gpt-oss-20b"), 8192, 16, 1, 16) == 204_472_320


def test_gpt_oss_weights_mxfp4_experts_bf16_rest(catalog):
    # the released checkpoint quantizes only the MoE experts to MXFP4 (4 bits + one 8-bit
    # scale per 32 = 4.25 bits); attention, router, embeddings and lm head stay bf16
    m = catalog.model("gpt-oss-120b")
    p = catalog.precision("fp4")
    pc = param_counts(m)
    # one expert: gate_up 2,880 x 5,760 + down 2,880 x 2,880 = 3 x 2,880^2 weights
    # + 3 x 2,880 biases = 24,891,840; 36 layers x 128 experts
    assert pc.expert_one == 3 * 2880**2 + 3 * 2880 == 24_891_840
    assert pc.experts == 36 * 128 * 24_891_840
    w = weight_memory(m, p, 1, 1)
    assert w.by_part_bytes["experts"] == pytest.approx(pc.experts * 4.25 / 8, rel=1e-12)
    assert w.by_part_bytes["attention"] == pytest.approx(pc.attention * 2, rel=1e-12)
    # 114,701,598,720 experts x 4.25/8 = 60.93e9 B; embedding + lm head 2 x 201,088 x 2,880
    # x 2 B = 2.32e9 B; attention 36 x (per-layer weights, biases and 64 sinks) x 2 B
    assert w.by_part_bytes["embedding"] + w.by_part_bytes["lm_head"] == 2 * 201_088 * 2880 * 2
    # attention per layer: q 2,880 x 4,096 + k, v 2 x 2,880 x 512 + o 4,096 x 2,880, biases
    # 4,096 + 2 x 512 + 2,880, sinks 64
    per_layer = 2880 * 4096 + 2 * 2880 * 512 + 4096 * 2880 + 4096 + 1024 + 2880 + 64
    assert pc.attention == 36 * per_layer
    # the same checkpoint on dense models is all-linear fp4 (NVFP4-style)
    llama = weight_memory(catalog.model("llama-3.1-8b"), p, 1, 1)
    assert llama.by_part_bytes["attention"] == pytest.approx(
        param_counts(catalog.model("llama-3.1-8b")).attention * 4.25 / 8, rel=1e-12
    )
