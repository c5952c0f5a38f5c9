"""NVFP4 weight bytes on Blackwell: 4 bits + one 8-bit E4M3 scale per 16 weights = 4.5 bits.

The catalog's fp4 format is MXFP4 (4 + 8/32 = 4.25 bits, gpt-oss's own release). NVIDIA's
quantizer (ModelOpt, the checkpoints TensorRT-LLM runs) writes NVFP4 on Blackwell:
``data/precisions.yaml`` fp4 ``arch_weight_bits [[blackwell, 4.5]]``, read from the tensors
of NVIDIA's NVFP4 DeepSeek-R1 checkpoint (weight U8 [7168, 9216] = 18,432 E2M1 inputs a row,
weight_scale F8_E4M3 [7168, 1152]: 18,432 / 1,152 = one scale per 16 weights).
"""

from __future__ import annotations

import pytest

from planner.catalog.catalog import load_catalog
from planner.engine.memory import bits_on, weight_memory
from planner.engine.step import step_model

CAT = load_catalog()
FP4 = CAT.precision("fp4")

# Llama-3.1-70B (data/models.yaml): hidden 8192, 80 layers, 64 heads, 8 KV heads x 128,
# intermediate 28672, vocab 128256, untied embedding / lm head
H, L, KV, INTER, VOCAB = 8192, 80, 8 * 128, 28672, 128256
ATTN = H * H + 2 * H * KV + H * H  # q, k, v, o = 150,994,944 a layer
MLP = 3 * H * INTER  # gate, up, down = 704,643,072 a layer
LINEAR = L * (ATTN + MLP)  # 68,451,041,280
EMB = VOCAB * H  # 1,050,673,152 (and the same for the lm head)
NORMS = (2 * L + 1) * H  # 1,318,912


def test_nvfp4_bits_are_4_plus_8_over_16_and_sourced():
    assert bits_on(FP4, "blackwell") == 4 + 8 / 16 == 4.5
    assert bits_on(FP4, "cdna4") == FP4.weight_bits == 4 + 8 / 32 == 4.25  # MXFP4
    assert bits_on(FP4, None) == 4.25
    for p in CAT.precisions:  # every arch layout names where it was read
        assert not p.arch_weight_bits or p.arch_weight_bits_source


def test_llama_3_1_70b_nvfp4_weight_bytes_by_hand():
    m = CAT.model("llama-3.1-70b")
    assert LINEAR == 68_451_041_280
    w = weight_memory(m, FP4, arch="blackwell")
    # linears: 68,451,041,280 x 4.5 / 8 = 38,503,710,720 B (params x (4 + 8/16) bits / 8)
    assert w.by_part_bytes["attention"] + w.by_part_bytes["mlp"] == 38_503_710_720
    # + embedding and lm head 2 x 1,050,673,152 x 2 B + norms 1,318,912 x 2 B
    #   = 38,503,710,720 + 4,202,692,608 + 2,637,824 = 42,709,041,152 B
    assert w.total_bytes == pytest.approx(42_709_041_152, rel=1e-12)
    # MXFP4 (cdna4, or no arch): 68,451,041,280 x 4.25 / 8 = 36,364,615,680 B of linears,
    # 2,139,095,040 B (5.0% of the total) fewer
    w_mx = weight_memory(m, FP4, arch="cdna4")
    assert w_mx.by_part_bytes["attention"] + w_mx.by_part_bytes["mlp"] == 36_364_615_680
    assert w.total_bytes - w_mx.total_bytes == pytest.approx(2_139_095_040, rel=1e-12)


def test_b200_step_reads_the_nvfp4_bytes():
    # the decode step's dense weight read on one B200 (tp 1): the 80 layers' linears at
    # 4.5 bits + the norms at 16 bits = 38,503,710,720 + 2,637,824 = 38,506,348,544 B
    sm = step_model("llama-3.1-70b", "nvidia-b200", FP4, "fp8", tp=1)
    assert sm.dense_weight_bytes == pytest.approx(38_506_348_544, rel=1e-12)
    mi355 = step_model("llama-3.1-70b", "amd-mi355x", FP4, "fp8", tp=1)
    assert mi355.dense_weight_bytes == pytest.approx(LINEAR * 4.25 / 8 + NORMS * 2, rel=1e-12)
