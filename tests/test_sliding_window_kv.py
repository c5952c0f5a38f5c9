"""vLLM's hybrid KV cache manager (data/engine_policies.yaml ``sliding_window_kv``; issue 32,
docs/changes/2026-12-07f/vllmlat.md): sliding-window layers stored for their window only. The record is
sourced and off; switched on, a gpt-oss replica holds L / (L - n_sliding) = 36 / 18 = 2x the
KV blocks from vLLM 0.8.3 on, and nothing else changes."""

from __future__ import annotations

import pytest

import planner.serving.replica as replica_mod
from planner.catalog.engine_policies import sliding_window_kv, sliding_window_kv_factor
from planner.serving import build_replica


def test_the_record_is_sourced_and_off():
    rec = sliding_window_kv("vllm")
    assert rec is not None and rec.applied is False
    assert rec.since_version == "0.8.3"
    assert "hybrid memory allocator" in rec.source and rec.as_of is not None
    assert sliding_window_kv("sglang") is None


def test_factor():
    # gpt-oss: 36 layers, 18 of them sliding -> 36 / (36 - 18) = 2
    assert sliding_window_kv_factor("vllm", "0.10.2", 36, 18, applied=True) == 2.0
    # 52 of 62 layers sliding (Gemma-3-like) -> 62 / (62 - 52) = 6.2
    assert sliding_window_kv_factor("vllm", None, 62, 52, applied=True) == pytest.approx(6.2)
    # before 0.8.3 (V0 or V1 without the manager), another engine, no sliding layer: 1
    assert sliding_window_kv_factor("vllm", "0.8.2", 36, 18, applied=True) == 1.0
    assert sliding_window_kv_factor("sglang", "0.5.6", 36, 18, applied=True) == 1.0
    assert sliding_window_kv_factor("vllm", "0.10.2", 80, 0, applied=True) == 1.0
    assert sliding_window_kv_factor(None, None, 36, 18, applied=True) == 1.0
    # the record's own switch (off) when not overridden
    assert sliding_window_kv_factor("vllm", "0.10.2", 36, 18) == 1.0


def _blocks(framework="vllm", release="0.10.2", model="gpt-oss-120b"):
    rep = build_replica(model, "nvidia-h100-sxm", "fp4", framework, release=release)
    return rep.engine.num_blocks, rep.assumptions


def test_replica_takes_the_factor_only_when_switched_on(monkeypatch):
    off, notes_off = _blocks()
    monkeypatch.setattr(replica_mod, "SLIDING_WINDOW_KV", True)
    on, notes_on = _blocks()
    assert on == int(off * 2.0)
    assert any("sliding-window layers only for their window" in a for a in notes_on)
    assert not any("sliding-window" in a for a in notes_off)
    # vLLM 0.8.2 keeps every layer for every token
    assert _blocks(release="0.8.2")[0] == off
