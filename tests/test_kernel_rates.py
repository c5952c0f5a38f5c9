"""The MLA decode kernel's rate as data (data/kernel_rates.yaml, planner/catalog/kernel_rates.py)
and its use by the step model (planner/engine/mla.py).

Hand arithmetic (DeepSeek-V3, data/models.yaml: 61 layers, 128 heads, kv_lora_rank 512,
qk_rope_head_dim 64, so d_k = 576 and d_v = 512):

* Blackwell, trtllm-gen (vLLM PR #41778, B200, bs 256, 16 heads, q_len 4, kv_len 80,000,
  4,855 us): 2 x 256 x 16 x 4 x 80,000 x (576 + 512) = 2,852,126,720,000 FLOP
  -> 2.85213e12 / 4.855e-3 s = 5.87461e14 FLOP/s = 587.46 TFLOPS = 0.26109 of 2,250.
  Recorded, not applied (default: false): the 16-head low-latency kernel, streaming the KV
  once per query token (4 x 11.8 GB in 4,855 us = 9.7 TB/s), not the 128-head one.
* Hopper, FlashMLA: 660 / 990 = 0.66667 of the bf16 dense peak (H200: 989 x 2/3 = 659.33).
* Blackwell (no applied record): the rule, B200 2,250 x 2/3 = 1,500 TFLOPS.
* CDNA4, AITER's ASM MLA decode kernel (ROCm/aiter PR #3072, MI355X, nhead 128, qlen 1,
  batch 256, ctx 23,333, 1,422 us): 2 x 256 x 128 x 1 x 23,333 x 1,088 = 1,663,716,818,944
  FLOP -> 1.66372e12 / 1.422e-3 s = 1.16998e15 FLOP/s = 1,169.98 TFLOPS = 0.46799 of 2,500
  (the rule gave 1,666.67: 1.4245x as fast). CDNA3 keeps the rule: MI300X 1,307 x 2/3.
"""

from __future__ import annotations

import datetime as dt

import pytest
from conftest import DATA_DIR

from planner.catalog import PRIOR, load_catalog
from planner.catalog.kernel_rates import mla_decode_rate, mla_decode_rates
from planner.catalog.layout import Layout
from planner.engine import step_model
from planner.engine.mla import MLA_DECODE_EFF, mla_decode_eff, mla_decode_flops_s
from planner.engine.phases import decode_step
from planner.errors import PlannerError

_CAT = load_catalog(DATA_DIR)
B200_FLOPS = 2_852_126_720_000  # 2 x 256 x 16 x 4 x 80,000 x 1,088
RULE = 2.0 / 3.0  # FlashMLA's H800 fraction, 660 / 990


def _blackwell():
    (rec,) = [r for r in mla_decode_rates(str(DATA_DIR)) if r.arch == "blackwell"]
    return rec


def test_every_record_is_sourced_and_dated():
    recs = mla_decode_rates(str(DATA_DIR))
    assert {r.arch for r in recs if r.default} == {"hopper", "cdna4"}
    for r in recs:
        assert len(r.source) > 20 and r.as_of <= dt.date.today()


def test_blackwell_trtllm_gen_timing_by_hand_is_recorded_not_applied():
    r = _blackwell()
    assert "trtllm-gen" in r.kernel and "41778" in r.source and not r.default
    assert "headsQPerKv is <= 32" in r.notes  # why: TensorRT-LLM's kernel choice, quoted
    assert mla_decode_rate("blackwell", str(DATA_DIR)) is None
    assert set(r.engines) == {"trtllm", "sglang"}
    assert r.flops == B200_FLOPS
    assert r.tflops == pytest.approx(587.46, rel=1e-5)
    assert r.fraction == pytest.approx(587.4617 / 2250, rel=1e-5)
    # the reference peak is the catalog's B200 bf16 dense peak
    assert r.reference_bf16_tflops == _CAT.gpu("nvidia-b200").peak_tflops("bf16") == 2250


def test_hopper_flashmla_and_the_fallback_rule():
    r = mla_decode_rate("hopper", str(DATA_DIR))
    assert r.flops is None and r.tflops == 660 and r.fraction == pytest.approx(RULE)
    assert mla_decode_rate("cdna3", str(DATA_DIR)) is None
    h200, mi300x = _CAT.gpu("nvidia-h200-sxm"), _CAT.gpu("amd-mi300x")
    assert mla_decode_flops_s(h200) == pytest.approx(989e12 * 2 / 3, rel=1e-12)
    assert mla_decode_eff(mi300x) == MLA_DECODE_EFF
    assert mla_decode_flops_s(mi300x) == pytest.approx(
        mi300x.peak_tflops("bf16") * 1e12 * 2 / 3, rel=1e-12
    )


def test_cdna4_aiter_asm_timing_by_hand_is_applied():
    """MI355X: AITER's ASM kernel, 1,663,716,818,944 FLOP in 1,422 us (module docstring)."""
    r = mla_decode_rate("cdna4", str(DATA_DIR))
    assert "3072" in r.source and "ASM" in r.kernel and r.q_heads == 128 and r.q_len == 1
    assert r.flops == 1_663_716_818_944  # 2 x 256 x 128 x 1 x 23,333 x 1,088
    assert r.tflops == pytest.approx(1169.98, rel=1e-5)
    assert r.fraction == pytest.approx(0.46799, rel=1e-4)
    mi355x = _CAT.gpu("amd-mi355x")
    assert r.reference_bf16_tflops == mi355x.peak_tflops("bf16") == 2500
    assert mla_decode_flops_s(mi355x) == pytest.approx(1.16998e15, rel=1e-5)
    # compute bound as timed: the FP8 KV read, 256 x 23,333 x 576 B, streams at 2.42 TB/s < 8
    kv_stream = r.batch * r.kv_len * 576 / (r.time_us * 1e-6)
    assert kv_stream == pytest.approx(2.419e12, rel=1e-3) and kv_stream < mi355x.mem_bw_bytes_s


def test_blackwell_keeps_the_rule():
    """B200 2,250 x 2/3 = 1,500 TFLOPS; GB200 2,500 x 2/3 = 1,666.67 TFLOPS."""
    b200, gb200 = _CAT.gpu("nvidia-b200"), _CAT.gpu("nvidia-gb200")
    assert mla_decode_eff(b200) == MLA_DECODE_EFF
    assert mla_decode_flops_s(b200) == pytest.approx(1.5e15, rel=1e-12)
    assert mla_decode_flops_s(gb200) == pytest.approx(2500e12 * RULE, rel=1e-12)


def test_a_default_blackwell_record_would_apply_its_fraction(tmp_path, monkeypatch):
    """Flip the recorded trtllm-gen timing to default: B200 then runs 5.87461e14 FLOP/s and
    GB200 2,500 x 0.26109 = 652.74 TFLOPS (the what-if measured in docs/changes/2026-12-07b/frontier.md)."""
    import planner.engine.mla as mla

    text = (DATA_DIR / "kernel_rates.yaml").read_text().replace("default: false", "default: true")
    (tmp_path / "kernel_rates.yaml").write_text(text)
    monkeypatch.setattr(mla, "mla_decode_rate", lambda a: mla_decode_rate(a, str(tmp_path)))
    b200, gb200 = _CAT.gpu("nvidia-b200"), _CAT.gpu("nvidia-gb200")
    assert mla_decode_flops_s(b200) == pytest.approx(B200_FLOPS / 4.855e-3, rel=1e-12)
    assert mla_decode_flops_s(gb200) == pytest.approx(652.74e12, rel=1e-4)


def test_one_dep8_decode_step_by_hand():
    """DEP8 on B200, fp8 weights and KV, 1k/1k: 128 sequences, 16 per attention rank, each
    attending 1,434 positions (0.9 x 1,024 + 1,024 / 2, the mean context). Per GPU:
    FLOPs = 16 x 1,434 x 61 x 278,528 (2 x 128 heads x 1,088 per pair and layer)
          = 389,823,332,352 -> / 1.5e15 = 0.25988 ms of MLA attention (0.6636 ms at the
          unapplied trtllm-gen 5.87461e14);
    KV read = 16 x 1,434 x 61 x 576 B = 806,160,384 B (+ 16 x 61 x 576 = 562,176 B written)
          -> 806,722,560 / (8e12 x 0.8, the prior's kv_mem_eff) = 0.1260 ms: compute bound.
    This is ixh-1152's layout (B200 DEP8 nvfp4 1k/1k, 128 clients): its attention is ~2 % of
    a ~16 ms step, so no MLA rate can move its 21 % TPOT gap."""
    sm = step_model("deepseek-v3", "nvidia-b200", "fp8", "fp8", params=PRIOR, catalog=_CAT,
                    layout=Layout(tp=1, attention_dp=8, ep=8))  # fmt: skip
    s = decode_step(sm, 128, 1433)
    assert s.attention_flops == pytest.approx(389_823_332_352, rel=1e-12)
    assert s.kv_read_bytes == pytest.approx(806_160_384, rel=1e-12)
    assert not s.attn_memory_bound
    assert s.t_attn_s == pytest.approx(389_823_332_352 / 1.5e15, rel=1e-12)
    assert s.t_attn_s == pytest.approx(0.25988e-3, rel=1e-4)


def test_bad_record_is_one_line_naming_the_field(tmp_path):
    (tmp_path / "kernel_rates.yaml").write_text(
        "mla_decode:\n  - arch: blackwell\n    kernel: x-kernel\n    reference_gpu: b200\n"
        "    reference_bf16_tflops: 2250\n    q_heads: 16\n    batch: 8\n"
        "    source: somewhere\n    as_of: 2026-01-01\n"
    )
    with pytest.raises(PlannerError, match="kernel_rates.yaml: mla_decode.0.*achieved_tflops"):
        mla_decode_rates(str(tmp_path))
    (tmp_path / "kernel_rates.yaml").write_text(
        "mla_decode:\n  - arch: hopper\n    kernel: x-kernel\n    reference_gpu: h800\n"
        "    reference_bf16_tflops: 990\n    achieved_tflops: -1\n    q_heads: 128\n"
        "    source: somewhere\n    as_of: 2026-01-01\n"
    )
    with pytest.raises(PlannerError, match="achieved_tflops"):
        mla_decode_rates(str(tmp_path))


def test_no_file_means_the_rule(tmp_path):
    assert mla_decode_rates(str(tmp_path)) == ()
    assert mla_decode_rate("blackwell", str(tmp_path)) is None
