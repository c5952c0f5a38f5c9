"""The FLOPs of a DeepSeek-V3 prompt step, counted by hand (issue 32: is a term of the MLA
prompt missing or mis-sized?).

DeepSeek-V3 (data/models.yaml, from the model's config.json): 61 layers (3 dense, 58 MoE),
hidden 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64,
v_head_dim 128, dense intermediate 18432, 256 routed experts of intermediate 2048, top-8,
one shared expert, vocab 129280. Engines run a prompt chunk in the expanded
("non-absorbed") form: q_b_proj gives 128 heads x (128 + 64), kv_b_proj expands the 512-wide
latent into 128 heads x (128 K + 128 V) for the chunk's tokens; scores are 192 wide, values
128 wide (DeepSeek-V2 paper, arXiv 2405.04434, section 2.1; vLLM
``vllm/v1/attention/backends/mla/common.py``: "compute friendly approach" for prefill).
"""

from __future__ import annotations

import pytest
from conftest import DATA_DIR

from planner.catalog import load_catalog
from planner.engine import step_model
from planner.engine.phases import prefill

_CAT = load_catalog(DATA_DIR)
H200 = "nvidia-h200-sxm"
LAYERS = 61

# Parameters per layer that each prompt token multiplies (2 FLOPs per parameter):
Q_A = 7168 * 1536  # 11,010,048
Q_B = 1536 * 128 * (128 + 64)  # 37,748,736
KV_A = 7168 * (512 + 64)  # 4,128,768 (latent + the shared rope key)
KV_B = 512 * 128 * (128 + 128)  # 16,777,216 (the chunk's own tokens' K_nope and V)
O_PROJ = 128 * 128 * 7168  # 117,440,512
NORMS = 1536 + 512  # q_a / kv_a layernorms, counted with attention in planner.engine.memory
ATTN_LAYER = Q_A + Q_B + KV_A + KV_B + O_PROJ + NORMS  # 187,107,328
DENSE_MLP = 3 * 7168 * 18432  # 396,361,728 (layers 0-2)
EXPERT = 3 * 7168 * 2048  # 44,040,192 (gate, up, down)
ROUTER = 7168 * 256  # 1,835,008
MOE_LAYER = 8 * EXPERT + EXPERT + ROUTER  # top-8 routed + the shared expert: 398,196,736
ACTIVE = LAYERS * ATTN_LAYER + 3 * DENSE_MLP + 58 * MOE_LAYER  # 35,698,042,880
LM_HEAD = 129280 * 7168  # 926,679,040 (the last token of a prompt only)
# the expanded attention per query-key pair per layer, all heads: QK^T 2 x 128 x 192 +
# PV 2 x 128 x 128
PAIR = 2 * 128 * (192 + 128)  # 81,920
ABSORBED_PAIR = 2 * 128 * (512 + 64) + 2 * 128 * 512  # 278,528 (decode form)


def test_hand_count_of_the_parameters_a_prompt_token_multiplies():
    assert ATTN_LAYER == 187_107_328
    assert LAYERS * ATTN_LAYER == 11_413_547_008  # planner.engine.parts' docstring
    assert MOE_LAYER == 398_196_736
    assert ACTIVE == 35_698_042_880  # ~35.7 B, DeepSeek's "37B activated" less embeddings


@pytest.mark.parametrize("tp", [1, 8])
def test_prompt_matmul_flops_per_token_equal_the_hand_count(tp):
    """2 x 35,698,042,880 = 71,396,085,760 FLOPs per prompt token over the replica, split
    evenly by TP (every linear of attention, dense MLP and experts is sharded)."""
    sm = step_model("deepseek-v3", H200, "fp8", "fp8", tp=tp, catalog=_CAT)
    assert sm.matmul_flops_per_token * tp == pytest.approx(2 * ACTIVE, rel=1e-12)
    assert sm.lm_head_flops_per_logit * tp == pytest.approx(2 * LM_HEAD, rel=1e-12)
    assert sm.attn_flops_per_pair_layer * tp == PAIR


@pytest.mark.parametrize(
    ("n", "matmul_gpu", "attn_gpu"),
    [
        # 1k: matmul 1,024 x 71,396,085,760 / 8 (= 8,924,510,720 per token and GPU) + the
        #     lm head of the last token 2 x 926,679,040 / 8 = 231,669,760:
        #     9,138,698,977,280 + 231,669,760 = 9,138,930,647,040
        #     attention 1,024 x 1,025 / 2 = 524,800 pairs x 81,920 x 61 / 8 = 327,811,072,000
        (1024, 9_138_930_647_040, 327_811_072_000),
        # 8k: matmul 8,192 x 8,924,510,720 + 231,669,760 = 73,109,823,488,000
        #     attention 8,192 x 8,193 / 2 = 33,558,528 pairs x 10,240 x 61 = 20,961,998,929,920
        (8192, 73_109_823_488_000, 20_961_998_929_920),
    ],
)
def test_prompt_step_flops_of_a_1k_and_an_8k_prompt(n, matmul_gpu, attn_gpu):
    """One prompt of ``n`` tokens, no cached prefix, TP8 (InferenceX's H200 SGLang launch).

    The planner's attention count is the hand count plus the ``n`` query-key pairs
    :meth:`StepModel.decode_pairs` books in the absorbed form (one read of each token per
    query, 3.4x a pair's FLOPs): ``n x (278,528 - 81,920) x 61 / 8`` = 1.5 GFLOP at 1k
    (+0.47%), 12.3 GFLOP at 8k (+0.06%): a prompt chunk's count is right to within 0.5%."""
    sm = step_model("deepseek-v3", H200, "fp8", "fp8", tp=8, catalog=_CAT)
    s = prefill(sm, 1, n)
    assert s.matmul_flops == pytest.approx(matmul_gpu, rel=1e-12)
    extra = n * (ABSORBED_PAIR - PAIR) * LAYERS / 8
    assert s.attention_flops == pytest.approx(attn_gpu + extra, rel=1e-12)
    assert s.attention_flops / attn_gpu - 1.0 < 0.005
    # the attention share of a prompt's FLOPs: 3.5% at 1k, 22.3% at 8k
    share = attn_gpu / (attn_gpu + matmul_gpu)
    assert share == pytest.approx({1024: 0.0346, 8192: 0.2228}[n], abs=5e-4)


def test_prefix_re_expansion_is_a_few_percent_of_a_chunk():
    """A chunk after cached tokens re-expands the prefix's latent with kv_b_proj (SGLang's
    MHA_CHUNKED_KV, vLLM's chunked context): 2 x 16,777,216 = 33,554,432 FLOPs per cached
    token per layer, which the step model does not count. Per cached token over the model:
    61 x 33,554,432 = 2,046,820,352 FLOPs, 2.87% of a new token's 71,396,085,760: a chunk of
    ``n`` after ``p`` cached tokens misses ``2.87% x p / n`` of its matmul FLOPs (left out;
    docs/changes: s9-mlaprompt)."""
    per_cached = LAYERS * 2 * KV_B
    assert per_cached == 2_046_820_352
    assert per_cached / (2 * ACTIVE) == pytest.approx(0.02867, abs=5e-5)
