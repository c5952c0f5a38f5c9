"""The host time per sequence of SGLang's speculative loop (``SPEC_HOST_SEQ_S``), a switch
left OFF (docs/changes/2026-12-09/mtp.md): what it adds to an iteration, where, and that
it is off."""

from __future__ import annotations

import pytest

import planner.engine.speculative as sp
from planner.catalog import load_catalog
from planner.serving import build_replica

_CAT = load_catalog()
H200 = "nvidia-h200-sxm"


def test_switch_is_off_and_adds_nothing():
    assert sp.SPEC_HOST_SEQ_ON is False
    r0 = build_replica("deepseek-v3", H200, "fp8", "sglang", tp=8, catalog=_CAT)
    r1 = build_replica(
        "deepseek-v3", H200, "fp8", "sglang", tp=8, spec_method="mtp", spec_tokens=2,
        catalog=_CAT,
    )  # fmt: skip
    assert r1.engine.sched_seq_overhead_s == r0.engine.sched_seq_overhead_s


def test_on_an_sglang_mtp_iteration_of_64_sequences_waits_16_ms_more(monkeypatch):
    """TP8 SGLang MTP, no attention DP: the host runs serially with the GPU (SGLang turns its
    overlap off for speculative decoding, ``Framework.overlaps_host``), so an iteration of
    64 sequences and 30 ms of GPU work takes 30 ms + sched_overhead_s + (prior per-sequence
    term + 0.25 ms) x 64; the difference ON - OFF is 64 x 0.00025 = 0.016 s."""
    kw = dict(tp=8, spec_method="mtp", spec_tokens=2, catalog=_CAT)
    off = build_replica("deepseek-v3", H200, "fp8", "sglang", **kw).engine
    monkeypatch.setattr(sp, "SPEC_HOST_SEQ_ON", True)
    on = build_replica("deepseek-v3", H200, "fp8", "sglang", **kw).engine
    assert on.host_overlap is False and off.host_overlap is False
    assert on.sched_seq_overhead_s - off.sched_seq_overhead_s == pytest.approx(2.5e-4)
    assert on.iteration_s(0.030, 64) - off.iteration_s(0.030, 64) == pytest.approx(0.016)
    # a plain run of the same engine pays nothing, with the switch on
    plain = build_replica("deepseek-v3", H200, "fp8", "sglang", tp=8, catalog=_CAT).engine
    assert plain.sched_seq_overhead_s == off.sched_seq_overhead_s


def test_on_only_sglang_draft_methods_and_per_attention_rank(monkeypatch):
    """TensorRT-LLM and n-gram runs pay nothing; with attention DP 8 each rank's scheduler
    has 1/8 of the sequences, so the replica's per-sequence term is 0.00025 / 8 = 3.125e-5 s."""
    monkeypatch.setattr(sp, "SPEC_HOST_SEQ_ON", True)
    kw = dict(tp=8, spec_method="mtp", spec_tokens=2, catalog=_CAT)
    rep = build_replica("deepseek-v3", H200, "fp8", "sglang", **kw)
    assert sp.spec_host_seq_s("sglang", rep.spec) == 2.5e-4
    assert sp.spec_host_seq_s("trtllm", rep.spec) == 0.0
    assert sp.spec_host_seq_s("sglang", rep.spec.model_copy(update={"method": "ngram"})) == 0.0
    assert sp.spec_host_seq_s("sglang", None) == 0.0
    base = build_replica("deepseek-v3", H200, "fp8", "sglang", tp=8, catalog=_CAT).engine
    dep8 = build_replica("deepseek-v3", H200, "fp8", "sglang", attention_dp=8, **kw).engine
    assert rep.engine.sched_seq_overhead_s - base.sched_seq_overhead_s == pytest.approx(2.5e-4)
    assert dep8.sched_seq_overhead_s - base.sched_seq_overhead_s == pytest.approx(3.125e-5)
