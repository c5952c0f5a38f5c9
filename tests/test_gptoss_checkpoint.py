"""gpt-oss checkpoint parts and vLLM's Marlin padding of its MXFP4 experts (issue 32 item 1).

Published figures:
- gpt-oss-120b: 65,248,815,744 bytes of tensors (the HF repo's 15 safetensors files);
  gpt-oss-20b: ``total_size`` 13,761,264,768 (model.safetensors.index.json). Sources in
  data/models.yaml (``checkpoints``).
- vLLM 0.10.1 on one H100 (Marlin MXFP4 MoE): "Model loading took 65.9651 GiB"
  (vllm-project/vllm issue #23278).
"""

from __future__ import annotations

import pytest

from planner.catalog.catalog import load_catalog
from planner.engine.memory import expert_pad_bytes, plan_memory, weight_memory

GIB = 2**30


def _checkpoint_bytes(layers: int, experts: int) -> int:
    """Bytes of the released gpt-oss tensors from the shapes (hidden 2,880, expert FFN 2,880,
    64 query heads and 8 KV heads of 64, vocab 201,088, biases everywhere, untied head).

    Per layer:
    - experts (MXFP4): gate_up blocks E x 5,760 x 2,880 / 2 bytes + scales E x 5,760 x 90
      + bias E x 5,760 x 2; down blocks E x 2,880 x 2,880 / 2 + scales E x 2,880 x 90 + bias
      E x 2,880 x 2;
    - attention (bf16): q 2,880 x 4,096, k and v 2,880 x 512, o 4,096 x 2,880 (x 2 bytes),
      biases 4,096 + 512 + 512 + 2,880, sinks 64 (x 2 bytes);
    - router (bf16): E x 2,880 weights + E biases; two norms of 2,880 (bf16).
    Plus embedding and lm head 201,088 x 2,880 each and the final norm (bf16)."""
    h = i = 2880
    e = experts
    experts_b = e * 2 * i * h // 2 + e * 2 * i * h // 32 + e * 2 * i * 2
    experts_b += e * h * i // 2 + e * h * i // 32 + e * h * 2
    attn = (h * 4096 + 2 * h * 512 + 4096 * h) * 2 + (4096 + 512 + 512 + h) * 2 + 64 * 2
    router = e * h * 2 + e * 2
    norms = 2 * h * 2
    return layers * (experts_b + attn + router + norms) + 2 * 201088 * h * 2 + h * 2


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_hand_count_equals_published_checkpoint_sizes():
    # 120b: 36 layers x 128 experts; 20b: 24 layers x 32 experts. Exact, to the byte.
    assert _checkpoint_bytes(36, 128) == 65_248_815_744
    assert _checkpoint_bytes(24, 32) == 13_761_264_768


@pytest.mark.parametrize(
    "model, published", [("gpt-oss-120b", 65_248_815_744), ("gpt-oss-20b", 13_761_264_768)]
)
def test_catalog_weights_match_published_checkpoint(cat, model, published):
    # The catalog's checkpoint parts (experts at 4.25 bits, the rest bf16). Tolerance 0.2%:
    # the expert biases (120b: 36 x 128 x 8,640 = 39.8 M values) count at 4.25 bits, not 16,
    # = -58.5 MB = -0.09% of 65.2 GB.
    m, g, p, _, _ = cat.resolve(model, "nvidia-h100-sxm", "fp4", "vllm", None)
    w = weight_memory(m, p, 1, 1, arch=g.arch)
    assert w.total_bytes == pytest.approx(published, rel=2e-3)
    assert w.per_gpu_bytes == pytest.approx(published, rel=2e-3)


def test_marlin_pad_bytes_hand_derived(cat):
    m, _, p, _, _ = cat.resolve("gpt-oss-120b", "nvidia-h100-sxm", "fp4", "vllm", None)
    # TP1: experts load as hidden 3,072 (round_up(2,880, 256)) x intermediate 2,944
    # (round_up(2,880, 128)): per expert 3 x (3,072 x 2,944 - 2,880 x 2,880) = 3 x 749,568
    # weights at 4.25 bits = 1,194,624 B, + biases 2 x (2 x 64 + 192) = 640 B -> 1,195,264 B;
    # x 128 experts x 36 layers = 5,507,776,512 B.
    assert expert_pad_bytes(m, p, "hopper", "vllm") == 5_507_776_512
    # TP2: intermediate per rank 1,440 -> 1,536: 3 x (3,072 x 1,536 - 2,880 x 1,440)
    # = 1,714,176 weights x 0.53125 = 910,656 B + biases 2 x (2 x 96 + 192) = 768 B
    # -> 911,424 B x 4,608 = 4,199,841,792 B.
    assert expert_pad_bytes(m, p, "hopper", "vllm", moe_tp=2) == 4_199_841_792
    # EP2: half the experts on a GPU -> half the padding.
    assert expert_pad_bytes(m, p, "hopper", "vllm", ep=2) == 5_507_776_512 / 2


def test_vllm_h100_load_matches_published(cat):
    plan = plan_memory("gpt-oss-120b", "nvidia-h100-sxm", "fp4", framework="vllm", catalog=cat)
    # checkpoint 65,248,815,744 + 5,507,776,512 padding = 70,756,592,256 B = 65.90 GiB
    # (less the 58.5 MB of the bias bits above) against vLLM 0.10.1's 65.9651 GiB: within 1%.
    assert plan.weight_bytes_per_gpu / GIB == pytest.approx(65.9651, rel=0.01)
    assert any("pads the experts" in a for a in plan.assumptions)
    # the plan's weights are the checkpoint's plus exactly the padding, which the KV loses
    m, g, p, _, _ = cat.resolve("gpt-oss-120b", "nvidia-h100-sxm", "fp4", "vllm", None)
    base = weight_memory(m, p, 1, 1, arch=g.arch).per_gpu_bytes
    assert plan.weight_bytes_per_gpu - base == pytest.approx(5_507_776_512, rel=1e-12)
    kv = plan.gpu_memory_bytes * plan.memory_utilization - plan.weight_bytes_per_gpu
    kv -= plan.activation_bytes_per_gpu + plan.runtime_overhead_bytes_per_gpu
    assert plan.kv_budget_bytes_per_gpu == pytest.approx(kv, rel=1e-12)


@pytest.mark.parametrize(
    "gpu, fw, prec",
    [
        ("nvidia-b200", "vllm", "fp4"),  # native MXFP4 on Blackwell: no Marlin
        ("nvidia-h100-sxm", "sglang", "fp4"),  # another engine
        ("nvidia-h100-sxm", "vllm", "bf16"),  # another format
    ],
)
def test_no_padding_elsewhere(cat, gpu, fw, prec):
    plan = plan_memory("gpt-oss-120b", gpu, prec, framework=fw, catalog=cat, context_len=2048)
    m, g, p, _, _ = cat.resolve("gpt-oss-120b", gpu, prec, fw, None)
    assert expert_pad_bytes(m, p, g.arch, fw) == 0.0
    assert not any("pads the experts" in a for a in plan.assumptions)


def test_a100_pads_too(cat):
    # Ampere (capability 8.0 < 9) always takes vLLM's Marlin MXFP4 backend.
    m, g, p, _, _ = cat.resolve("gpt-oss-20b", "nvidia-a100-80gb-sxm", "fp4", "vllm", None)
    # 24 layers x 32 experts x 1,195,264 B = 917,962,752 B
    assert expert_pad_bytes(m, p, g.arch, "vllm") == 917_962_752
