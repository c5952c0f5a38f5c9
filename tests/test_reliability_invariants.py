"""Physical invariants on every result: bytes and parameters finite and >= 0, active <= total."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.catalog import ModelArch, load_catalog
from planner.engine.memory import (
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    weight_memory,
)
from planner.engine.params import param_counts
from planner.errors import PlannerError, check_physical

ROOT = Path(__file__).resolve().parent.parent
CAT = load_catalog(ROOT / "data")
FAST = settings(
    max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None
)


@st.composite
def architectures(draw):
    """Valid architectures of every kind: dense, GQA/MQA, MoE (+ shared, dense layers), MLA,
    sliding windows."""
    kv = draw(st.sampled_from([1, 2, 4, 8, 16]))
    heads = kv * draw(st.integers(1, 16))
    head_dim = draw(st.sampled_from([32, 64, 80, 128, 256]))
    layers = draw(st.integers(1, 160))
    d = {
        "id": "prop",
        "name": "prop",
        "architecture": "llama",
        "num_hidden_layers": layers,
        "hidden_size": draw(st.integers(64, 32768)),
        "intermediate_size": draw(st.integers(64, 131072)),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "vocab_size": draw(st.integers(256, 300_000)),
        "tie_word_embeddings": draw(st.booleans()),
        "mlp_gated": draw(st.booleans()),
        "attention_bias": draw(st.booleans()),
        "source": "property test",
        "as_of": "2026-12-01",
    }
    if draw(st.booleans()):
        n = draw(st.integers(2, 512))
        d.update(
            num_experts=n,
            num_experts_per_tok=draw(st.integers(1, n)),
            num_shared_experts=draw(st.integers(0, 2)),
            moe_intermediate_size=draw(st.integers(64, 8192)),
            num_dense_layers=draw(st.integers(0, layers)),
        )
    if draw(st.booleans()):
        d.update(
            kv_lora_rank=draw(st.sampled_from([128, 512])),
            qk_rope_head_dim=64,
            qk_nope_head_dim=128,
            v_head_dim=128,
            num_key_value_heads=heads,
        )
    elif draw(st.booleans()):
        d.update(
            sliding_window=draw(st.integers(1, 8192)),
            num_sliding_layers=draw(st.integers(0, layers)),
        )
    return ModelArch.model_validate(d)


@FAST
@given(architectures(), st.sampled_from(["bf16", "fp8", "int4-awq", "fp4"]), st.data())
def test_invariants_hold_for_every_architecture(m, prec_id, data):
    pc = param_counts(m)
    assert 0 < pc.active <= pc.total
    assert pc.expert_one >= 0 and pc.experts >= 0 and pc.matmul_active > 0
    prec = CAT.precision(prec_id) if prec_id in {p.id for p in CAT.precisions} else None
    tp = data.draw(st.sampled_from([1, 2, 4, 8]))
    pp = data.draw(st.integers(1, m.num_hidden_layers))
    w = weight_memory(m, prec, tp=tp, pp=pp)
    for v in (w.total_bytes, w.per_gpu_bytes, *w.by_part_bytes.values()):
        assert math.isfinite(v) and v >= 0
    kv = kv_bytes_per_token(m, 16, tp)
    seq = kv_bytes_per_sequence(m, data.draw(st.integers(1, 1_000_000)), 8, tp)
    assert math.isfinite(kv) and kv > 0 and math.isfinite(seq) and seq >= 0


@FAST
@given(architectures())
def test_catalog_and_generated_models_satisfy_active_le_total(m):
    pc = param_counts(m)
    assert pc.active <= pc.total


def test_bundled_models_satisfy_invariants():
    for m in CAT.models:
        pc = param_counts(m)
        assert 0 < pc.active <= pc.total, m.id
        w = weight_memory(m, CAT.precision("bf16"))
        assert 0 < w.total_bytes < math.inf, m.id


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("num_experts_per_tok", 16, "exceeds num_experts"),
        ("num_dense_layers", 100, "exceeds num_hidden_layers"),
        ("num_key_value_heads", 3, "multiple of"),
    ],
)
def test_impossible_architectures_are_refused(field, value, match):
    base = next(m for m in CAT.models if m.id == "mixtral-8x7b").model_dump()
    base[field] = value
    with pytest.raises(ValueError, match=match):
        ModelArch.model_validate(base)


@pytest.mark.parametrize("value", [-1.0, float("nan"), float("inf"), "x"])
def test_check_physical_raises_planner_error(value):
    with pytest.raises(PlannerError, match="impossible result: weights"):
        check_physical("weights", value)
    assert check_physical("weights", 0.0) == 0.0
