"""KV passes of a speculative verify step (data/spec_kernels.yaml, planner/catalog/spec_kernels.py,
planner/engine/spec_kv.py) and their charge in the step model.

Hand arithmetic (DeepSeek-V3, data/models.yaml: 61 layers, 128 query heads, MLA latent
kv_lora_rank 512 + qk_rope_head_dim 64 = 576 elements a token a layer; fp8 KV: 576 B):

* TensorRT-LLM on B200 (trtllm-gen, ``per_token``, token_pass_fraction 0.652 = (1,413 / 254
  - 1) / 7, FlashInfer issue #4390): K = 3 -> passes = 1 + 0.652 x 3 = 2.956.
  A decode-only verify step of B = 64 sequences at context L = 8,192 under TP8 (the latent
  is not split: every GPU reads all of it): one pass = 576 B x 61 layers x 64 x 8,192
  tokens = 18,421,383,168 B (35,136 x 524,288); the verify step reads 2.956 x that = 54,453,608,644.608 B.
* SGLang on H200 (FlashInfer MLA / FlashMLA, ``packed`` in 64-row tiles): TP8, 16 heads a
  GPU, K = 3 -> 4 x 16 = 64 rows, one tile: ceil(64 / 64) / ceil(16 / 64) = 1 pass.
  Attention DP 8 (128 heads a GPU): ceil(4 x 128 / 64) / ceil(128 / 64) = 8 / 2 = 4 passes;
  each rank reads its own B / 8 sequences: 576 x 61 x (64 x 8,192 / 8) x 4 = 9,210,691,584 B.
* SGLang on MI355X (aiter asm, ``packed``, read up to 16 heads): TP8 K = 3 -> 1 pass; with
  32 heads a GPU (TP4) the record says nothing -> 1.
"""

from __future__ import annotations

import pytest
from conftest import DATA_DIR
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.catalog.layout import Layout
from planner.catalog.spec_kernels import verify_kernel, verify_kernels
from planner.catalog.speculative import SpecDecode, spec_decode
from planner.engine import step_model
from planner.engine.spec_kv import kernel_passes, verify_kv_passes
from planner.engine.speculative import with_spec
from planner.errors import PlannerError

_CAT = load_catalog(DATA_DIR)
ONE_PASS = 576 * 61 * 64 * 8192  # = 18,421,383,168 B
assert ONE_PASS == 18_421_383_168


def _sm(gpu, engine, k=3, layout=None, tp=8, model="deepseek-v3"):
    sm = step_model(model, gpu, "fp8", "fp8", tp=tp, catalog=_CAT, layout=layout)
    if k is None:
        return sm
    spec = SpecDecode(method="mtp", spec_tokens=k, acceptance_length=1.0 + k / 2, engine=engine)
    return with_spec(sm, spec, _CAT)


def _decode(sm, b=64, ctx=8192):
    """A decode-only step of ``b`` sequences at context ``ctx`` (pairs = KV reads)."""
    return sm.step(b, b, b, b * ctx, b * ctx)


def test_records_load_and_name_their_kernel():
    recs = verify_kernels(str(DATA_DIR))
    assert {(r.engine, r.arch) for r in recs} >= {("trtllm", "blackwell"), ("sglang", "hopper")}
    for r in recs:
        assert r.source and r.as_of and r.kernel
    tr = verify_kernel("trtllm", "nvidia-b200", "blackwell")
    assert tr.rule == "per_token" and tr.token_pass_fraction == pytest.approx(
        (1413 / 254 - 1) / 7, abs=5e-4
    )
    # trtllm-gen is an SM100 / SM103 kernel: no record for the SM120 RTX 5090
    assert verify_kernel("trtllm", "nvidia-rtx-5090", "blackwell") is None
    assert verify_kernel(None, "nvidia-b200", "blackwell") is None


def test_kernel_passes_by_hand():
    tr = verify_kernel("trtllm", "nvidia-b200", "blackwell")
    assert kernel_passes(tr, 3, 16) == pytest.approx(1 + 0.652 * 3)  # 2.956
    assert kernel_passes(tr, 1, 128) == pytest.approx(1.652)
    sg = verify_kernel("sglang", "nvidia-h200-sxm", "hopper")
    assert kernel_passes(sg, 3, 16) == 1.0  # 64 rows, one 64-row tile
    assert kernel_passes(sg, 2, 16) == 1.0  # 48 rows
    assert kernel_passes(sg, 3, 32) == 2.0  # 128 rows: 2 tiles against 1
    assert kernel_passes(sg, 3, 128) == 4.0  # 512 rows: 8 tiles against 2
    amd = verify_kernel("sglang", "amd-mi355x", "cdna4")
    assert kernel_passes(amd, 3, 16) == 1.0
    assert kernel_passes(amd, 3, 32) == 1.0  # above the record's 16 heads: not read, once
    assert kernel_passes(None, 3, 16) == 1.0
    assert kernel_passes(tr, 0, 16) == 1.0  # no drafts, no verify tokens


def test_trtllm_b200_verify_step_kv_bytes_by_hand():
    """K = 3 verify step of 64 sequences at 8,192 tokens, TP8: 2.956 passes of the latent."""
    plain = _decode(_sm("nvidia-b200", "trtllm", k=None))
    assert float(plain.kv_read_bytes) == ONE_PASS
    spec = _sm("nvidia-b200", "trtllm")
    assert spec.spec_kv_passes == pytest.approx(2.956)
    b = _decode(spec)
    assert float(b.kv_read_bytes) == pytest.approx(2.956 * ONE_PASS, rel=1e-12)
    assert float(b.kv_read_bytes) == pytest.approx(54_453_608_644.608, rel=1e-12)


def test_sglang_h200_reads_once_under_tp8_and_k_plus_1_times_under_attention_dp():
    tp8 = _sm("nvidia-h200-sxm", "sglang")
    assert tp8.spec_kv_passes == 1.0
    assert float(_decode(tp8).kv_read_bytes) == ONE_PASS
    dep = _sm("nvidia-h200-sxm", "sglang", layout=Layout(tp=1, attention_dp=8, ep=8))
    assert dep.spec_kv_passes == 4.0
    assert float(_decode(dep).kv_read_bytes) == pytest.approx(ONE_PASS / 8 * 4, rel=1e-12)
    assert ONE_PASS / 8 * 4 == 9_210_691_584


def test_engine_without_record_and_gqa_models_read_once():
    assert _sm("nvidia-b200", None).spec_kv_passes == 1.0  # engine not given
    assert _sm("nvidia-b200", "vllm").spec_kv_passes == 1.0  # no source read for vLLM
    m = _CAT.model("llama-3.1-70b")
    assert verify_kv_passes(m, _CAT.gpu("nvidia-b200"), "trtllm", 3, 8) == 1.0  # GQA


def test_spec_decode_carries_the_engine():
    fw = _CAT.framework("trtllm")
    spec = spec_decode(_CAT.model("deepseek-v3"), "mtp", 3, 2.4, framework=fw)
    assert spec.engine == "trtllm"
    assert spec_decode(_CAT.model("deepseek-v3"), "mtp", 3, 2.4).engine is None


def test_spec_off_is_unchanged():
    """Without speculative decoding nothing of the verify passes enters the step."""
    sm = _sm("nvidia-b200", "trtllm", k=None)
    assert sm.spec_kv_passes == 1.0 and with_spec(sm, None) is sm
    assert sm._coeffs[51] == 0.0  # the scalar path's extra-pass coefficient
    # a spec model whose kernel reads once is the step model before the passes existed
    once = _sm("nvidia-b200", None)
    twice = _sm("nvidia-b200", "trtllm")
    args = (64, 64, 64, 64 * 8192, 64 * 8192)
    assert once.step_time(*args) < twice.step_time(*args)
    assert float(once.step(*args).kv_read_bytes) == ONE_PASS


@pytest.mark.parametrize(
    "gpu,engine,layout",
    [
        ("nvidia-b200", "trtllm", None),
        ("nvidia-b200", "sglang", Layout(tp=1, attention_dp=8, ep=8)),
        ("nvidia-h200-sxm", "sglang", Layout(tp=1, attention_dp=8, ep=8)),
    ],
)
@pytest.mark.parametrize(
    "args",
    [
        (64, 64, 64, 64 * 8192, 64 * 8192),  # decode only
        (2048 + 31, 32, 32, 31 * 4000 + 2048, 31 * 4000 + 2048 * 2049 / 2),  # a prompt chunk
    ],
)
def test_scalar_path_equals_vector_path_with_verify_passes(gpu, engine, layout, args):
    sm = _sm(gpu, engine, layout=layout)
    assert sm.spec_kv_passes > 1.0
    assert sm.step_time(*args) == pytest.approx(sm.step(*args).time_s, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    b=st.integers(1, 512),
    ctx=st.integers(1, 32768),
    case=st.sampled_from(
        [
            ("nvidia-b200", "trtllm", 0),
            ("nvidia-h200-sxm", "sglang", 8),
            ("amd-mi355x", "sglang", 0),
        ]
    ),
)
def test_more_draft_tokens_never_lower_the_verify_step(b, ctx, case):
    """Property: K + 1 never costs less than K, whatever the kernel's passes."""
    gpu, engine, dp = case
    lay = Layout(tp=1, attention_dp=dp, ep=dp) if dp else None
    times = [
        _sm(gpu, engine, k=k, layout=lay).step_time(b, b, b, b * ctx, b * ctx) for k in range(1, 6)
    ]
    assert all(t2 >= t1 for t1, t2 in zip(times[:-1], times[1:], strict=True))


def test_bad_record_is_one_line_naming_the_field(tmp_path):
    (tmp_path / "spec_kernels.yaml").write_text(
        "verify_attention:\n  - engine: sglang\n    arch: hopper\n    kernel: FlashMLA\n"
        "    rule: packed\n    source: x y z\n    as_of: 2026-01-01\n"
    )
    with pytest.raises(PlannerError, match="spec_kernels.yaml: verify_attention.0.*tile_rows"):
        verify_kernels(str(tmp_path))
