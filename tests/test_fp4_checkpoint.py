"""DeepSeek-V3 / R1 under NVIDIA's NVFP4 checkpoint (data/models.yaml deepseek-v3
``checkpoints``): which parts are 4-bit, at how many bits, and what stays bf16.

Source of the parts and bits (pinned here so a change of the data is a change of a fact):

* NVIDIA/TensorRT-Model-Optimizer ``examples/deepseek/ptq.py`` @ 1030a2210d8d: the recipe
  of NVIDIA's DeepSeek FP4 checkpoints quantizes with NVFP4_DEFAULT_CFG and disables
  ``*head*`` and ``*attn*``; ``--enable_wo_quant`` re-enables ``*wo*``.
* https://huggingface.co/nvidia/DeepSeek-R1-0528-FP4-v2: "Compared to
  nvidia/DeepSeek-R1-0528-FP4, this checkpoint additionally quantizes the wo module in
  attention layers".
* The v1 checkpoint's tensors: ``self_attn.*_proj`` BF16; ``mlp.down_proj.weight`` U8
  [7168, 9216] with ``weight_scale`` F8_E4M3 [7168, 1152] = one 8-bit scale per 16
  weights, so NVFP4 = 4 + 8/16 = 4.5 bits per weight.
* TensorRT-LLM tech blog 1 (Precision Strategy): attention modules bf16, dense and MoE
  FFN nvfp4.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.catalog.catalog import load_catalog
from planner.engine.memory import weight_memory
from planner.engine.step import step_model

CAT = load_catalog()
M = CAT.model("deepseek-v3")
FP4 = CAT.precision("fp4")

# DeepSeek-V3 config_671B.json: hidden 7168, 61 layers (3 dense, 58 MoE), 128 heads,
# q_lora 1536, kv_lora 512, qk_nope 128, qk_rope 64, v_head 128, moe_inter 2048,
# dense inter 18432, 256 routed + 1 shared expert, vocab 129280
H, L, NMOE = 7168, 61, 58
EXPERTS = NMOE * 256 * 3 * H * 2048  # 58 x 256 x 44,040,192 = 653,908,770,816
SHARED = NMOE * 1 * 3 * H * 2048  # 2,554,331,136
DENSE_MLP = 3 * 3 * H * 18432  # 1,189,085,184
# attention per layer: q_a 7168x1536 + q_a_norm 1536 + q_b 1536x(128x192)
#   + kv_a 7168x(512+64) + kv_a_norm 512 + kv_b 512x(128x(128+128)) + wo (128x128)x7168
Q = H * 1536 + 1536 + 1536 * 128 * 192  # 48,760,320
KV = H * 576 + 512 + 512 * 128 * 256  # 20,906,496
WO = 128 * 128 * H  # 117,440,512
ATTN_IN = L * (Q + KV)  # 4,249,675,776
ATTN_OUT = L * WO  # 7,163,871,232
EMB = LM = 129280 * H  # 926,679,040 each (untied)
ROUTER = NMOE * H * 256  # 106,430,464 (no router bias in the catalog entry)
NORMS = (2 * L + 1) * H  # 881,664

NVFP4 = (4 + 8 / 16) / 8  # bytes per quantized weight: 0.5625
BF16 = 2.0


def test_nvfp4_checkpoint_total_weight_bytes_by_hand():
    # quantized: routed + shared experts, dense MLP, wo = 664,816,058,368 params x 0.5625
    #   = 373,959,032,832 B
    # bf16: attention inputs + embedding + lm head + router + norms = 6,210,345,984 x 2
    #   = 12,420,691,968 B; total 386,379,724,800 B (386.4 GB)
    quantized = EXPERTS + SHARED + DENSE_MLP + ATTN_OUT
    assert quantized == 664_816_058_368
    expected = quantized * NVFP4 + (ATTN_IN + EMB + LM + ROUTER + NORMS) * BF16
    assert expected == 386_379_724_800
    w = weight_memory(M, FP4, arch="blackwell")
    assert w.total_bytes == pytest.approx(expected, rel=1e-12)
    assert w.by_part_bytes["attention"] == pytest.approx(
        ATTN_IN * BF16 + ATTN_OUT * NVFP4, rel=1e-12
    )
    assert w.by_part_bytes["experts"] == pytest.approx(EXPERTS * NVFP4, rel=1e-12)


def test_nvfp4_checkpoint_dep8_weights_per_gpu_by_hand():
    # DEP8 on 8 B200 (tp 1 per attention rank, ep 8): each GPU holds 32 of the 256 experts
    # (EXPERTS / 8 x 0.5625 = 45,977,960,448 B) and a whole copy of everything else:
    # attention inputs bf16 8,499,351,552 + wo 4,029,677,568 + dense MLP and shared
    # 2,105,671,680 + router 212,860,928 + norms 1,763,328 + embedding and lm head
    # 3,706,716,160 = 64,534,001,664 B (64.5 GB; the format's default of 4.25 bits for every
    # linear gave 55.4 GB)
    expected = (
        EXPERTS / 8 * NVFP4
        + ATTN_IN * BF16
        + (ATTN_OUT + DENSE_MLP + SHARED) * NVFP4
        + (ROUTER + NORMS + EMB + LM) * BF16
    )
    assert expected == pytest.approx(64_534_001_664, abs=1)
    w = weight_memory(M, FP4, tp=1, pp=1, ep=8, moe_tp=1, arch="blackwell")
    assert w.per_gpu_bytes == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("arch", [None, "cdna4", "hopper"])
def test_other_architectures_keep_the_formats_default(arch):
    # AMD's MXFP4 checkpoint's exclude list was not read: cdna4 keeps all linears at 4.25
    # bits (4 + 8/32), as do Hopper's weight-only runs and callers that name no GPU
    w = weight_memory(M, FP4, arch=arch)
    linear = EXPERTS + SHARED + DENSE_MLP + ATTN_IN + ATTN_OUT
    expected = linear * 4.25 / 8 + (EMB + LM + ROUTER + NORMS) * BF16
    assert w.total_bytes == pytest.approx(expected, rel=1e-12)


def test_other_models_take_the_arch_layout_unless_their_own_release_is_fp4():
    # no checkpoint record on blackwell for any of them; gpt-oss lists its own release for
    # Ampere/Hopper only (test_gptoss_checkpoint.py) and its native MXFP4 keeps 4.25 bits
    # everywhere; the others are NVIDIA ModelOpt NVFP4 on blackwell (4.5 bits,
    # tests/test_nvfp4_bits.py) and MXFP4 elsewhere (cdna4: AMD's layout)
    for mid in ("llama-3.1-8b", "gpt-oss-120b", "qwen3-30b-a3b"):
        m = CAT.model(mid)
        assert m.checkpoint_for(FP4.id, "blackwell") is None
        assert weight_memory(m, FP4, arch="cdna4") is weight_memory(m, FP4)
    gpt_oss = CAT.model("gpt-oss-120b")
    assert weight_memory(gpt_oss, FP4, arch="blackwell") is weight_memory(gpt_oss, FP4)
    for mid in ("llama-3.1-8b", "qwen3-30b-a3b"):
        m = CAT.model(mid)
        w45, w425 = weight_memory(m, FP4, arch="blackwell"), weight_memory(m, FP4)
        # the quantized linears grow by 4.5 / 4.25; embeddings, head and norms stay bf16
        for part in ("attention", "mlp", "experts"):
            assert w45.by_part_bytes[part] == pytest.approx(
                w425.by_part_bytes[part] * 4.5 / 4.25, rel=1e-12
            )
        assert w45.by_part_bytes["embedding"] == w425.by_part_bytes["embedding"]


def test_step_model_reads_bf16_attention_and_runs_its_projections_at_the_bf16_peak():
    b200 = CAT.gpu("nvidia-b200")
    sm = step_model(M, b200, FP4, "fp8", tp=8)
    # attention inputs bf16 split 8 ways, the rest of the dense part at 4.5 bits
    dense = (
        ATTN_IN * BF16 / 8 + (ATTN_OUT + DENSE_MLP + SHARED) * NVFP4 / 8 + (ROUTER + NORMS) * BF16
    )
    assert sm.dense_weight_bytes == pytest.approx(dense, rel=1e-12)
    assert sm.expert_bytes == pytest.approx(3 * H * 2048 / 8 * NVFP4 * NMOE, rel=1e-12)
    # B200 dense peaks (data/hardware.yaml): bf16 2,250 TFLOPS, fp4 9,000 TFLOPS
    assert sm.peak_flops == 9000e12
    # the bf16 input projections cost (9000/2250 - 1) = 3 extra FP4-peak FLOPs per FLOP:
    # 2 x 4,249,675,776 / 8 x 3 = 3,187,256,832 per token
    assert sm.matmul_slow_flops_per_token == pytest.approx(2 * ATTN_IN / 8 * 3, rel=1e-12)
    # the AMD MI355X keeps the format's one peak
    mi = step_model(M, "amd-mi355x", FP4, "fp8", tp=8)
    assert mi.matmul_slow_flops_per_token == 0.0


@pytest.mark.parametrize("layout", [None, "DEP8"])
def test_checkpoint_step_scalar_equals_vector_and_is_slower(layout):
    from planner.catalog.layout import layout_of

    lay = layout_of(1, 1, 8, 8) if layout else None
    sm = step_model(M, "nvidia-b200", FP4, "fp8", tp=8, layout=lay)
    for n, seqs, kv in [(1, 1, 1024), (64, 64, 64 * 1500), (4096, 2, 8192)]:
        pairs = kv + n * (n + 1) / 2 if n > seqs else kv
        args = (n, seqs, seqs, kv, pairs, 0, 0, 0)
        assert sm.step_time(*args) == pytest.approx(sm.step(*args).time_s, rel=1e-12)
    # slower than the same bytes with the bf16 projections at the fp4 peak
    dflt = replace(sm, matmul_slow_flops_per_token=0.0)
    for n, seqs, kv in [(1, 1, 1024), (4096, 1, 4096)]:
        args = (n, seqs, seqs, kv, kv + n * (n + 1) / 2 if n > 1 else kv, 0, 0, 0)
        assert sm.step_time(*args) >= dflt.step_time(*args)


def test_catalog_refuses_a_checkpoint_of_an_unknown_precision():
    from pydantic import ValidationError

    from planner.catalog.catalog import Catalog

    bad = M.model_copy(
        update={"checkpoints": (M.checkpoints[0].model_copy(update={"precision": "fp5"}),)}
    )
    models = tuple(bad if m.id == M.id else m for m in CAT.models)
    fields = {k: getattr(CAT, k) for k in Catalog.model_fields}
    with pytest.raises(ValidationError, match="unknown precision"):
        Catalog(**{**fields, "models": models})
