"""The absorbed MLA decode attention runs at its own kernel's rate (planner/engine/mla.py):
bf16 dense peak x 660 / 990 (FlashMLA, H800 SXM5: 660 TFLOPS compute bound against the 990
TFLOPS its deep-dive gives as peak), not the format's peak x the fitted ``attn_eff``.

Hand-derived values for DeepSeek-V3 (data/models.yaml: 61 layers, 128 heads, kv_lora_rank
512, qk_rope_head_dim 64) on B200 (data/hardware.yaml: bf16 dense 2,250 TFLOPS, fp8 4,500,
8,000 GB/s) and properties (hypothesis).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import DATA_DIR
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.catalog import PRIOR, load_catalog
from planner.catalog.layout import Layout
from planner.engine import step_model
from planner.engine.mla import MLA_DECODE_EFF, mla_decode_flops_s
from planner.engine.phases import decode_step

_CAT = load_catalog(DATA_DIR)
B200 = "nvidia-b200"
PROPS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ABSORBED_PAIR = 278_528  # 2 x 128 x (512 + 64) + 2 x 128 x 512 FLOPs per pair per layer
DEP8 = Layout(tp=1, attention_dp=8, ep=8)


def _dep8(params=PRIOR, **kw):
    return step_model("deepseek-v3", B200, "fp8", "fp8", layout=DEP8, params=params,
                      catalog=_CAT, **kw)  # fmt: skip


def test_rate_by_hand_b200():
    """2,250e12 x 660 / 990 = 1.5e15 FLOP/s."""
    assert abs(MLA_DECODE_EFF - 2.0 / 3.0) < 1e-12
    assert mla_decode_flops_s(_CAT.gpu(B200)) == pytest.approx(1.5e15, rel=1e-12)
    assert _dep8().mla_decode_flops_s == pytest.approx(1.5e15, rel=1e-12)
    dense = step_model("llama-3.1-8b", B200, "bf16", tp=1, catalog=_CAT)
    assert dense.mla_decode_flops_s == 0.0


def test_dep8_decode_step_at_8k_by_hand():
    """512 sequences of 8,191 cached tokens on DEP8 (64 per attention rank), decode: each
    attends 8,192 positions. Per GPU:
    FLOPs = 64 x 8,192 x 61 x 278,528 = 8,907,762,171,904 (64 x 8,192 x 61 = 31,981,568
    query-key pairs)
    -> 8.9078e12 / 1.5e15 = 5.938 ms at the MLA kernel's rate;
    KV read = 64 x 8,192 x 61 x 576 B (fp8 latent + rope key) = 18,421,383,168 B, + 64 x 61 x
    576 written = 2,248,704 B -> 18,423,631,872 / (8e12 x 0.8 kv_mem_eff prior) = 2.878 ms.
    Compute bound: 5.938 ms. At the old rate (fp8 peak 4.5e15 x attn_eff prior 0.5 =
    2.25e15) it was 3.959 ms; with the held-out B200 fit's attn_eff 0.066 it was 30 ms."""
    s = decode_step(_dep8(), 512, 8191)
    assert s.attention_flops == pytest.approx(8_907_762_171_904, rel=1e-12)
    assert s.kv_read_bytes == pytest.approx(18_421_383_168, rel=1e-12)
    assert not s.attn_memory_bound
    assert s.t_attn_s == pytest.approx(8_907_762_171_904 / 1.5e15, rel=1e-12)
    assert s.t_attn_s == pytest.approx(5.938e-3, rel=1e-3)


def test_decode_attention_does_not_read_attn_eff_but_prompts_do():
    """attn_eff is the prompt's (expanded form) attention efficiency: a decode-only MLA step
    keeps its attention time at any attn_eff; a prompt chunk's does not."""
    lo, hi = PRIOR.model_copy(update={"attn_eff": 0.05}), PRIOR.model_copy(update={"attn_eff": 0.9})
    a, b = decode_step(_dep8(lo), 512, 8191), decode_step(_dep8(hi), 512, 8191)
    assert a.t_attn_s == b.t_attn_s
    pairs = 8 * 4096 * 4097 / 2  # one 4,096-token prompt per attention rank, nothing cached
    pa = _dep8(lo).step(8 * 4096, 8, 8, 8 * 4096, pairs)
    pb = _dep8(hi).step(8 * 4096, 8, 8, 8 * 4096, pairs)
    assert pa.t_attn_s > pb.t_attn_s


def test_mtp_verify_positions_scale_the_compute():
    """K = 3 verify positions: 4 queries per sequence attend the same latent, so the
    absorbed FLOPs are 4x (4 x 8.9078e12 / 1.5e15 = 23.75 ms) while the KV read is not."""
    sm = replace(_dep8(), spec_tokens=3)
    s = sm.step(512, 512, 512, 512 * 8192, 512 * 8192)
    assert s.attention_flops == pytest.approx(4 * 8_907_762_171_904, rel=1e-12)
    assert s.t_attn_s == pytest.approx(4 * 8_907_762_171_904 / 1.5e15, rel=1e-12)


_LAYS = [None, Layout(tp=8, ep=8), DEP8, Layout(tp=2, attention_dp=4, ep=8)]


@PROPS
@given(
    b=st.integers(1, 512),
    ctx=st.integers(1, 16_000),
    more=st.integers(1, 16_000),
    lay=st.sampled_from(_LAYS),
    k=st.sampled_from([0, 1, 3]),
)
def test_more_context_never_shortens_a_step(b, ctx, more, lay, k):
    sm = step_model("deepseek-v3", B200, "fp8", "fp8", tp=8, layout=lay, catalog=_CAT)
    sm = replace(sm, spec_tokens=k)
    assert decode_step(sm, b, ctx + more).time_s >= decode_step(sm, b, ctx).time_s


@PROPS
@given(
    b=st.integers(1, 512),
    ctx=st.integers(1, 16_000),
    f=st.floats(1.0, 4.0),
    lay=st.sampled_from(_LAYS),
)
def test_more_bandwidth_or_mla_rate_never_slows_a_step(b, ctx, f, lay):
    sm = step_model("deepseek-v3", B200, "fp8", "fp8", tp=8, layout=lay, catalog=_CAT)
    t = decode_step(sm, b, ctx).time_s
    assert decode_step(replace(sm, bw_bytes_s=sm.bw_bytes_s * f), b, ctx).time_s <= t
    faster = replace(sm, mla_decode_flops_s=sm.mla_decode_flops_s * f)
    assert decode_step(faster, b, ctx).time_s <= t


@PROPS
@given(
    b=st.integers(0, 256),
    ctx=st.integers(1, 9000),
    chunk=st.integers(0, 4096),
    pos=st.integers(0, 8000),
    lay=st.sampled_from(_LAYS),
    k=st.sampled_from([0, 2]),
)
def test_scalar_path_equals_vector_path(b, ctx, chunk, pos, lay, k):
    sm = step_model("deepseek-v3", B200, "fp8", "fp8", tp=8, layout=lay, catalog=_CAT)
    sm = replace(sm, spec_tokens=k)
    T = b + chunk
    if T == 0:
        return
    pref = chunk * pos
    args = (T, b + (chunk > 0), b + (chunk > 0), b * ctx + (pos + chunk) * (chunk > 0),
            b * ctx + pref + chunk * (chunk + 1) / 2, 0.0, 0.0, pref)  # fmt: skip
    assert sm.step_time(*args) == pytest.approx(sm.step(*args).time_s, rel=1e-12)
