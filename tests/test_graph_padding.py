"""Decode steps padded to a captured CUDA-graph batch (planner.engine.adp.graph_padded):
TensorRT-LLM's ``_get_padded_batch`` under attention DP (issue 29, TPOT of the DEP rows)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.benchmarks.schema import graph_padding_sizes
from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.layout import layout_of
from planner.engine.adp import GRAPH_SLOTS, graph_padded, graph_slots
from planner.engine.phases import decode_step
from planner.engine.step import step_model

CAT = load_catalog()
#: the v6.0 MLPerf DeepSeek-R1 B300 / GB300 configs' list (row notes, e.g. mlds60-0098)
SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 640, 768, 896, 1024)


def _dep8(sizes=SIZES):
    sm = step_model(
        "deepseek-v3", "nvidia-b200", "fp8", layout=layout_of(1, 1, 8, 8), params=PRIOR, catalog=CAT
    )
    return replace(sm, graph_sizes=tuple(float(s) for s in sizes))


def _decode_args(n, ctx=3000.0):
    """A decode-only step of n sequences of ``ctx`` tokens: (T, seqs, logits, KV, pairs, 0, 0)."""
    return (n, n, n, n * (ctx + 1), n * (ctx + 1), 0.0, 0.0)


def test_padding_counts_hand_derived():
    """DEP8, 1,160 decoding sequences: the busiest rank holds ceil(1,160 / 8) = 145; the
    smallest captured size >= 145 is 256, so every rank runs 256: 8 x 256 = 2,048 sequences,
    d = 2,048 - 1,160 = 888 dummies of one token each. Counts: T = seqs = logits = 2,048; KV
    reads and pairs 1,160 x 3,001 + 888 = 3,482,048."""
    T, n, lg, kv, pairs, kv_sw, pairs_sw = graph_padded(SIZES, 8, *_decode_args(1160.0))
    assert (float(T), float(n), float(lg)) == (2048.0, 2048.0, 2048.0)
    assert float(kv) == float(pairs) == 1160 * 3001 + 888 == 3_482_048
    assert float(kv_sw) == float(pairs_sw) == 888.0


def test_no_padding_where_the_engine_does_not_pad():
    """Unchanged: a step with prompt tokens (1,160 decoders + a 1,000-token chunk: the graph
    cannot run), a batch already on a captured size (8 x 256), a batch above the largest size
    (8 x 1,100 > 1,024: eager, no padding), and no list at all."""
    mixed = (2160.0, 1161.0, 1161.0, 1160 * 3001 + 1000, 1160 * 3001 + 500_500, 0.0, 0.0)
    for sizes, args in [
        (SIZES, mixed),
        (SIZES, _decode_args(2048.0)),
        (SIZES, _decode_args(8800.0)),
        ((), _decode_args(1160.0)),
    ]:
        out = graph_padded(sizes, 8, *args)
        assert [float(x) for x in out] == [float(x) for x in args]


def test_tp_group_pads_its_one_batch():
    """attention_dp = 1: a TP group pads its whole batch: 100 sequences -> 128, d = 28."""
    T, n, *_ = graph_padded(SIZES, 1, *_decode_args(100.0))
    assert float(T) == float(n) == 128.0


def test_padded_step_equals_the_step_of_the_padded_counts():
    """The step model's time with padding is its time without padding at the padded counts
    (the dummies are one-token sequences), in both the vector and the scalar form."""
    sm = _dep8()
    plain = replace(sm, graph_sizes=())
    args = _decode_args(1160.0)
    padded = tuple(float(x) for x in graph_padded(SIZES, 8, *args))
    want = float(plain.step(*padded).time_s)
    assert float(sm.step(*args).time_s) == pytest.approx(want, rel=1e-12)
    assert sm.step_time(*args, 0.0) == pytest.approx(want, rel=1e-12)
    assert want > float(plain.step(*args).time_s)  # 2,048 tokens cost more than 1,160


def test_graph_slots_fixed_length():
    assert graph_slots(()) == (0.0,) + (0.0,) * GRAPH_SLOTS
    s = graph_slots((256, 128, 384))
    assert len(s) == 1 + GRAPH_SLOTS and s[:4] == (3.0, 128.0, 256.0, 384.0)
    assert set(s[4:]) == {0.0}


def test_notes_clause_parsed():
    notes = (
        "stream_interval 20 (...); CUDA graphs for batch sizes [128, 256, 384, 512] per rank, "
        "padding on; mean generated tokens per sample 3693"
    )
    assert graph_padding_sizes(notes) == (128, 256, 384, 512)
    assert graph_padding_sizes("CUDA graphs for batch sizes [1, 2] per rank, padding off") is None
    assert graph_padding_sizes("") is None


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 8 * 1024),
    more=st.integers(1, 400),
    ctx=st.floats(10.0, 20_000.0),
)
def test_more_sequences_never_lower_the_padded_step(n, more, ctx):
    """Property: more decoding sequences (same context) never shorten the padded step, and the
    padded step is never shorter than the unpadded one; scalar = vector."""
    sm = _dep8()
    plain = replace(sm, graph_sizes=())
    a, b = _decode_args(float(n), ctx), _decode_args(float(n + more), ctx)
    ta, tb = sm.step_time(*a, 0.0), sm.step_time(*b, 0.0)
    assert tb >= ta * (1 - 1e-12)
    assert ta >= plain.step_time(*a, 0.0) * (1 - 1e-12)
    assert ta == pytest.approx(float(sm.step(*a).time_s), rel=1e-12)


def test_decode_step_sweep_is_a_staircase():
    """decode_step over a sweep: the padded time is flat within one captured size (129..256
    sequences a rank run as 256, up to the context each sequence adds to the KV reads)."""
    sm = _dep8()
    t = np.asarray(decode_step(sm, np.array([8 * 129.0, 8 * 200.0, 8 * 256.0]), 0.0).time_s)
    assert t[0] == pytest.approx(t[2], rel=1e-3) and t[1] == pytest.approx(t[2], rel=1e-3)
