"""A disaggregated SGLang pool whose recipe sets ``SGLANG_ENABLE_JIT_DEEPGEMM`` false runs its
block-FP8 dense linears on FlashInfer's TRT-LLM groupwise GEMM at its published rate
(``data/kernel_rates.yaml`` ``block_fp8_gemm``, ``planner/engine/dense_rate.py``; read per
pool from the recipe text by scripts/annotate_deepgemm.py; issue 30, "Done when" item 3).
Hand-derived numbers in the comments."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.benchmarks.disagg_rows import deepgemm, disagg_layout
from planner.catalog.catalog import load_catalog
from planner.catalog.kernel_rates import block_fp8_gemm_rate
from planner.engine.dense_rate import dense_gemm_factor, dense_linears_at, no_deepgemm
from planner.serving.disagg import Disaggregated, Pool, build_disagg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import annotate_deepgemm as adg  # noqa: E402

CAT = load_catalog()


def _row(rid: str) -> dict:
    for rel in ("public_inferencex.csv", "public_inferencex_history.csv"):
        with (ROOT / "data/benchmarks" / rel).open(newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                if r["id"] == rid:
                    return r
    raise KeyError(rid)


def _pools(deep: bool, precision: str = "fp8", framework: str = "sglang", gpu="nvidia-b200"):
    p = Pool(gpu=gpu, framework=framework, precision=precision, tp=1, ep=8, attention_dp=8,
             deepgemm=deep)  # fmt: skip
    return build_disagg("deepseek-v3", Disaggregated(prefill=p, decode=p), catalog=CAT)


def test_published_rate_by_hand():
    # sglang PR #13528 on GB200, m 2,048, n 24,576, k 7,168: 2 x 2,048 x 24,576 x 7,168 =
    # 7.21554e11 FLOP in 1,632.544 us = 441.98 TFLOPS = 0.088396 of GB200's 5,000 fp8 dense
    # TFLOPS; on a B200 (4,500): 397.78 TFLOPS
    r = block_fp8_gemm_rate("blackwell", "sglang")
    assert r is not None and r.reference_fp8_tflops == CAT.gpu(r.reference_gpu).fp8_dense_tflops
    assert 2 * 2048 * 24576 * 7168 == 721554505728
    assert r.tflops == pytest.approx(441.98, abs=0.01)
    assert r.fraction * CAT.gpu("nvidia-b200").fp8_dense_tflops == pytest.approx(397.78, abs=0.01)
    # only the engine that falls back to it, only where it was timed
    assert block_fp8_gemm_rate("blackwell", "trtllm") is None
    assert block_fp8_gemm_rate("hopper", "sglang") is None


def test_build_disagg_charges_the_rate_by_hand():
    # B200 fp8 SGLang DEP8: the node runs GEMMs at 4.5e15 x compute_eff; with DeepGEMM off the
    # dense linears (matmul_flops_per_token, per replica token and GPU) take f = 4.5e15 x
    # compute_eff / 3.9778e14 times their count (f - 1 of it as slow FLOPs); the routed
    # experts (the MoE runner), the bytes and the collectives do not change
    on, off = _pools(True), _pools(False)
    for name in ("prefill", "decode"):
        a, b = getattr(on, name).sm, getattr(off, name).sm
        f = 4.5e15 * a.params.compute_eff / (441.98e12 * 4500 / 5000)
        assert f == pytest.approx(dense_gemm_factor(a, 441.98e12 * 0.9), rel=1e-9)
        assert f > 5.0  # any fitted compute_eff above 0.45
        assert b.matmul_slow_flops_per_token - a.matmul_slow_flops_per_token == pytest.approx(
            (f - 1.0) * a.matmul_flops_per_token, rel=1e-4
        )
        assert b.expert_flops_per_routed_token == a.expert_flops_per_routed_token
        assert b.comm_bytes_per_token == a.comm_bytes_per_token
        assert b.dense_weight_bytes == a.dense_weight_bytes
    # a prompt step of 8 ranks x 4,096 tokens is compute bound: slower by the dense linears'
    # extra time, at most f times the whole GEMM term
    n = 8 * 4096
    ta = on.prefill.sm.step(n, 8, 8, n, 8 * 4096 * 4097 / 2)
    tb = off.prefill.sm.step(n, 8, 8, n, 8 * 4096 * 4097 / 2)
    assert float(tb.t_gemm_s) > 1.5 * float(ta.t_gemm_s)
    assert float(tb.t_attn_s) == pytest.approx(float(ta.t_attn_s))
    assert float(tb.t_comm_s) == pytest.approx(float(ta.t_comm_s))
    # a small decode step stays bound by the weights it reads: unchanged
    da = on.decode.sm.step(64, 64, 64, 64 * 1024, 64 * 1024)
    db = off.decode.sm.step(64, 64, 64, 64 * 1024, 64 * 1024)
    assert float(db.time_s) == pytest.approx(float(da.time_s))


@pytest.mark.parametrize(
    ("precision", "framework", "gpu"),
    [
        ("nvfp4", "sglang", "nvidia-b200"),
        ("fp8", "trtllm", "nvidia-b200"),
        ("fp8", "sglang", "nvidia-h200-sxm"),
    ],  # fmt: skip
)
def test_no_record_no_change(precision, framework, gpu):
    # an NVFP4 checkpoint, TensorRT-LLM's own GEMMs, a Hopper GPU: nothing published applies
    on, off = _pools(True, precision, framework, gpu), _pools(False, precision, framework, gpu)
    assert off.prefill.sm == on.prefill.sm and off.decode.sm == on.decode.sm


def test_layout_without_separate_experts_is_left_alone():
    # TP8 (no EP): the experts are part of the same matmul term, so no split is possible
    sm = build_disagg(
        "deepseek-v3",
        Disaggregated(
            prefill=Pool(gpu="nvidia-b200", framework="sglang", precision="fp8", tp=8),
            decode=Pool(gpu="nvidia-b200", framework="sglang", precision="fp8", tp=8),
        ),
        catalog=CAT,
    ).prefill.sm
    assert sm.expert_flops_per_routed_token == 0
    assert no_deepgemm(sm, "sglang") is sm


@settings(max_examples=30, deadline=None)
@given(st.floats(0.05, 20.0))
def test_factor_property(x):
    # a rate x times the node's: slower linears below 1, never faster above it
    sm = _pools(True).prefill.sm
    node = sm.peak_flops * sm.params.compute_eff
    out = dense_linears_at(sm, node * x)
    if x >= 1.0:
        assert out is sm
    else:
        assert out.matmul_slow_flops_per_token == pytest.approx(
            sm.matmul_slow_flops_per_token + (1.0 / x - 1.0) * sm.matmul_flops_per_token
        )


def test_recipe_reader_and_notes():
    text = """backend:
  prefill_environment:
    SGLANG_ENABLE_JIT_DEEPGEMM: "false"
  decode_environment:
    PYTHONUNBUFFERED: "1"
  sglang_config:
    prefill: {tensor-parallel-size: 8}
    decode: {tensor-parallel-size: 8}
"""
    assert adg.recipe_deepgemm(text) == {"prefill": "off", "decode": "on"}
    assert isinstance(adg.recipe_deepgemm("backend: {trtllm_config: {}}"), str)
    # ixh-0786: NVIDIA/srt-slurm recipes/b200-fp8/8k1k/mtp/max-tpt-dep8-2p1d.yaml @
    # 5063eb432640 sets SGLANG_ENABLE_JIT_DEEPGEMM "false" in both environments
    n = _row("ixh-0786")["notes"]
    assert deepgemm(n) == {"prefill": False, "decode": False}
    lay = disagg_layout(n)
    assert lay["prefill"]["deepgemm"] is False and lay["decode"]["deepgemm"] is False
    assert adg.note_for(_row("ixh-0786")) == "-already annotated"
    # TensorRT-LLM rows are left alone; a row without the note keeps DeepGEMM
    assert adg.note_for(_row("ixh-0989")) is None
    assert deepgemm(_row("ixh-0989")["notes"]) is None
