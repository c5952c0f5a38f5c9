"""Expert-parallel / attention data-parallel decode physics (issue 29, the open accuracy
items): the busiest attention-DP rank's prompt work, the busiest EP GPU's routed tokens,
and the expert weights a step reads. Hand-derived numbers are shown in the docstrings."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.layout import layout_of
from planner.engine.adp import busiest_rank_extra
from planner.engine.step import step_model

CAT = load_catalog()
KW = dict(model="deepseek-v3", gpu="nvidia-b200", precision="fp8", catalog=CAT)


def _dep8(u: float = 1.0, imb: float = 0.0):
    return step_model(
        **KW,
        layout=layout_of(1, 1, 8, 8),
        params=PRIOR.with_(adp_prompt_imbalance=u, moe_imbalance=imb),
    )


def _one_prompt_step():
    """DEP8, 64 decoding sequences per rank (512, contexts 1,000 each) and one fresh prompt
    of 1,024 tokens: new_tokens 512 + 1,024 = 1,536; sequences 513; KV reads 512 x 1,000 +
    1,024 = 513,024; query-key pairs 512,000 + 1,024 x 1,025 / 2 = 1,036,800."""
    return (1536, 513, 513, 513_024, 1_036_800)


def _extra(sm, args=None):
    """busiest_rank_extra of a step model's layout and share for a step's counts."""
    T, seqs, _, kv, pairs = args or _one_prompt_step()
    return busiest_rank_extra(sm.attention_dp, sm.params.adp_prompt_imbalance, T, seqs, kv, pairs)


def test_one_prompt_chunk_runs_whole_on_one_rank_hand_derived():
    """P = 1,536 - 513 = 1,023 prompt tokens; X = 1,036,800 - 513,024 = 523,776
    (= 1,024 x 1,023 / 2); n_eff = 2 X / P = 1,024 >= P, so the busiest rank holds all of
    P: h = 1, extra tokens (8 x 1 - 1) x 1,023 = 7,161 and extra pairs 7 x 523,776 =
    3,666,432 (1,536 + 7,161 = 8,697 = 8 x 1,087: 64 decoders + the 1,023-token chunk)."""
    dT, dX = _extra(_dep8())
    assert float(dT) == pytest.approx(7_161.0)
    assert float(dX) == pytest.approx(3_666_432.0)
    # with the engine balancing prompt chunks (u = 0, TensorRT-LLM enable_balance): none
    dT0, dX0 = _extra(_dep8(0.0))
    assert float(dT0) == 0.0 and float(dX0) == 0.0
    # half of the prompt work kept on its rank: half the extra work
    dTh, dXh = _extra(_dep8(0.5))
    assert float(dTh) == pytest.approx(3_580.5) and float(dXh) == pytest.approx(1_833_216.0)


def test_many_small_chunks_are_already_balanced_hand_derived():
    """16 fresh 64-token prompts, no decoders: T = 1,024, 16 sequences, P = 1,008; pairs
    16 x 64 x 65 / 2 = 33,280, KV reads 1,024, X = 32,256, n_eff = 2 X / P = 64 < P / 8 =
    126: round-robin gives each rank two chunks, the balanced share: no extra work."""
    dT, dX = _extra(_dep8(), (1024, 16, 16, 1024, 33_280))
    assert float(dT) == 0.0 and float(dX) == 0.0


def test_plain_and_decode_only_steps_are_unchanged():
    """A plain TP8 step and a decode-only DEP8 step carry no prompt imbalance (the plain
    path is bit-identical to before: both increments are exactly 0)."""
    tp8 = step_model(**KW, layout=layout_of(8), params=PRIOR.with_(adp_prompt_imbalance=1.0))
    assert [float(x) for x in _extra(tp8)] == [0.0, 0.0]
    dec = (512, 512, 512, 512_000, 512_000)
    a, b = _dep8(0.0), _dep8(1.0)
    assert a.step(*dec).time_s == b.step(*dec).time_s
    assert a.step_time(*dec) == b.step_time(*dec)


def test_a_prompt_on_one_rank_slows_the_step():
    """The one-prompt step of the hand example is slower when the chunk stays on its rank;
    the scalar path (the simulator's) equals the vector path."""
    a, b = _dep8(0.0), _dep8(1.0)
    args = _one_prompt_step()
    assert b.step(*args).time_s > a.step(*args).time_s
    for sm in (a, _dep8(0.37), b):
        assert sm.step_time(*args) == pytest.approx(sm.step(*args).time_s, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    dec=st.integers(0, 2048),
    chunks=st.lists(st.integers(1, 8192), min_size=0, max_size=12),
    u=st.floats(0.0, 1.0),
    more=st.floats(0.0, 1.0),
)
def test_prompt_imbalance_properties(dec, chunks, u, more):
    """For any step of ``dec`` decoders (context 1,500) and fresh prompt chunks: the extra
    work is >= 0, at most all prompt tokens on one rank ((dp - 1) P), grows with the kept
    share u, and the scalar path equals the vector path."""
    T = dec + sum(chunks)
    seqs = dec + len(chunks)
    kv = dec * 1500 + sum(chunks)
    pairs = dec * 1500 + sum(n * (n + 1) / 2 for n in chunks)
    if T == 0:
        return
    lo, hi = _dep8(u), _dep8(min(1.0, u + more))
    dT, dX = (float(x) for x in _extra(lo, (T, seqs, 0, kv, pairs)))
    P = T - seqs
    assert 0.0 <= dT <= 7 * P + 1e-6 and dX >= 0.0
    dT2, _ = (float(x) for x in _extra(hi, (T, seqs, 0, kv, pairs)))
    assert dT2 >= dT - 1e-9
    args = (T, seqs, dec + len(chunks), kv, pairs)
    assert hi.step_time(*args) >= lo.step_time(*args) * (1 - 1e-12)
    assert lo.step_time(*args) == pytest.approx(lo.step(*args).time_s, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(tokens=st.integers(1, 1_000_000))
def test_busiest_gpu_factor_is_at_least_one_and_tends_to_one(tokens):
    """With uniform routing (no fitted skew) the busiest of ep GPUs gets
    ``mean + sqrt(2 ln ep) sqrt(mean)`` routed tokens: the factor over the mean is
    ``1 + sqrt(2 ln ep / mean)`` >= 1, and it falls toward 1 as tokens grow."""
    sm = _dep8()
    mean = tokens * 8 / 8  # top-8 over ep 8
    f = float(sm.routed_tokens_hot(tokens)) / mean
    assert f >= 1.0
    assert f == pytest.approx(1 + math.sqrt(2 * math.log(8) / mean), rel=1e-12)
    f4 = float(sm.routed_tokens_hot(4 * tokens)) / (4 * mean)
    assert 1.0 <= f4 < f  # 4x the tokens: the excess halves


def test_busiest_gpu_factor_hand_derived():
    """10,000 replica tokens, top-8, ep 8: mean 10,000 per GPU; sqrt(2 ln 8) = 2.03933,
    sqrt(10,000) = 100: 10,203.9 on the busiest GPU, a factor 1.0204."""
    assert float(_dep8().routed_tokens_hot(10_000)) == pytest.approx(10_203.93, abs=0.01)


@settings(max_examples=40, deadline=None)
@given(tokens=st.integers(1, 20_000))
def test_more_ep_ranks_never_read_more_expert_bytes_per_gpu(tokens):
    """Expert weights read per GPU per step = distinct local experts hit x bytes per expert,
    ``E / ep x (1 - (1 - k / E)^T)`` experts: more EP ranks never read more."""
    per_gpu = []
    for ep in (1, 2, 4, 8):
        lay = layout_of(8) if ep == 1 else layout_of(8 // ep, 1, 8, ep)
        sm = step_model(**KW, layout=lay)
        per_gpu.append(float(sm.expected_experts(tokens)) * sm.expert_bytes)
    assert all(b <= a * (1 + 1e-12) for a, b in zip(per_gpu, per_gpu[1:], strict=False))


def test_expert_bytes_read_hand_derived():
    """DeepSeek-V3 (256 routed experts, top-8, 58 MoE layers, expert 3 x 7,168 x 2,048 =
    44,040,192 parameters, fp8 1 B) under DEP8, one token: 32 local experts x (1 - (1 -
    8 / 256)^1) = 1 expert expected per layer and GPU: 58 x 44,040,192 B = 2,554,331,136 B."""
    sm = step_model(**KW, layout=layout_of(1, 1, 8, 8))
    assert float(sm.expected_experts(1)) == pytest.approx(1.0)
    assert sm.expert_bytes == 58 * 44_040_192 == 2_554_331_136
