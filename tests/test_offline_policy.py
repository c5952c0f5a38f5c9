"""The offline predictor's engine policy (``engine_policy=True``, the switch
:data:`planner.serving.steady_state.OFFLINE_ENGINE_POLICY`, off by default): a cycle runs the
way the engine schedules it and only the iterations that carry prompt tokens run eagerly
(:func:`planner.serving.steady_state.offline_throughput`, :func:`offline_cycle_iterations`),
checked by hand and by a property; off, the even spread of before."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import PRIOR, load_catalog
from planner.engine import step_model
from planner.serving.steady_state import (
    offline_cycle_iterations,
    offline_throughput,
    prompt_iterations,
)

CAT = load_catalog()


def _sm(params=PRIOR):
    return step_model(
        CAT.model("llama-3.1-8b"), CAT.gpu("nvidia-h100-sxm"), CAT.precision("bf16"), "bf16",
        1, 1, params, CAT,
    )  # fmt: skip


def test_hundred_prompts_in_an_8k_budget_take_13_prompt_iterations():
    """100 prompts x 1,000 tokens, answers of 500, a budget of 8,192 tokens, B = 100.

    Mixed batches: the 100 running decoders are scheduled first, leaving 8,192 - 100 = 8,092
    prompt tokens a step: ceil(100,000 / 8,092) = ceil(12.36) = 13 prompt iterations. The
    cycle is max(500, 100 x 1,500 / 8,192 = 18.3) = 500 iterations, so 487 are decode-only.
    Prompts first: ceil(100,000 / 8,192) = ceil(12.2) = 13, then 499 decode iterations;
    without chunked prefill floor(8,192 / 1,000) = 8 whole prompts a step, ceil(100 / 8) =
    13 as well."""
    assert prompt_iterations(100, 1000, 8092) == 13
    assert offline_cycle_iterations(100, 1000, 500, 8192) == (13, 487)
    assert offline_cycle_iterations(100, 1000, 500, 8192, prefill_first=True) == (13, 499)
    assert offline_cycle_iterations(100, 1000, 500, 8192, True, chunked=False) == (13, 499)
    # the throughput is B osl over 13 mixed + 487 decode-only steps; a mixed step holds the
    # cycle's 100 x (1,000 + 500) new tokens less the 487 x 100 of the decode-only steps,
    # (150,000 - 48,700) / 13 = 7,792.3 tokens, and query-key pairs 100 x (1,000^2 / 2 +
    # 500 x 1,250) less 487 x 100 x 1,250, over 13; every step has 100 sequences at the
    # mean context 1,000 + 500 / 2 = 1,250 and one scheduler pass
    sm = _sm()
    sched = sm.params.sched_overhead_s + sm.params.sched_seq_overhead_s * 100
    pairs = (100 * (1000**2 / 2 + 500 * 1250) - 487 * 100 * 1250) / 13
    t_mix = sm.step_time(101_300 / 13, 100, 100, 100 * 1250, pairs) + sched
    t_dec = sm.step_time(100, 100, 100, 100 * 1250, 100 * 1250) + sched
    got, batch = offline_throughput(sm, 1000, 500, 100, 8192, engine_policy=True)
    assert batch == 100
    assert got == pytest.approx(100 * 500 / (13 * t_mix + 487 * t_dec), rel=1e-9)


def test_prefill_bound_cycles_carry_prompts_in_every_iteration():
    """32 prompts x 32,000 tokens, answers of 100, budget 8,192: the cycle is 32 x 32,100 /
    8,192 = 125.4 iterations (> 100), and ceil(1,024,000 / 8,160) = 126 prompt iterations
    exceed it: every iteration carries prompt tokens (the bound is the prefill)."""
    n_pf, n_dec = offline_cycle_iterations(32, 32000, 100, 8192)
    assert n_pf == pytest.approx(32 * 32100 / 8192)
    assert n_dec == 0


@settings(max_examples=40, deadline=None)
@given(
    B=st.integers(1, 256),
    isl=st.integers(16, 8192),
    osl=st.integers(2, 2048),
    budget=st.sampled_from([2048, 4096, 8192, 16384]),
)
def test_the_eager_floor_applies_to_at_most_the_prompt_iterations(B, isl, osl, budget):
    """A dispatch floor of 1 s per layer (32 s per eager step of 32 layers, far above any
    step here, < 1 s) adds between 31 and 32 s to each eager iteration of the cycle (the
    soft maximum of the GPU time t and the floor E lies in [E, E + t]) and nothing to a
    decode-only one. So (cycle with the floor - cycle without) / 32 s counts the eager
    iterations to within 3%: at
    most ceil(B isl / (budget - B)) (the prompt tokens over the room the decoders leave),
    never more than the cycle's iterations max(osl, B (isl + osl) / budget)."""
    fast, slow = _sm(), _sm(PRIOR.with_(eager_layer_s=1.0))
    floor = 1.0 * fast.layers
    cyc_fast = B * osl / offline_throughput(fast, isl, osl, B, budget, engine_policy=True)[0]
    cyc_slow = B * osl / offline_throughput(slow, isl, osl, B, budget, engine_policy=True)[0]
    eager = (cyc_slow - cyc_fast) / floor
    bound = min(math.ceil(B * isl / (budget - B)), max(osl, B * (isl + osl) / budget))
    assert eager <= bound * 1.0001 + 1e-6
    assert eager >= 0.97 * min(1.0, bound)  # at least one prompt iteration per cycle


def _row(row_id: str) -> dict:
    import pandas as pd

    name = "public_amd.csv" if row_id.startswith("amd-") else "public_nvidia.csv"
    rows = pd.read_csv(f"data/benchmarks/{name}", dtype=str, keep_default_na=False)
    return rows.set_index("id").loc[row_id].to_dict() | {"id": row_id}


@pytest.mark.parametrize(
    "row_id, first, chunked, budget",
    [
        # dstack's MI300X vLLM 0.7.3 (V0) DeepSeek-R1 run, --max-model-len=32768: V0 serves
        # MLA without chunked prefill, prompts first, in max(32,768, 2,048) = 32,768 tokens
        # (planner.benchmarks.serving_rows.v0_mla_unchunked_tokens, as the simulator runs it)
        ("amd-0003", True, False, 32768.0),
        # GPUStack's vLLM 0.11.0 (V1) and SGLang 0.5.3 runs on the H200: mixed batches in
        # chunks of the engine's default budget (V1: 8,192 on >= 70 GiB GPUs; SGLang
        # chunked_prefill_size 8,192 up to 160 GiB); SGLang runs prompts first only with
        # ENGINE_PREFILL_FIRST_DEFAULT, off as in the serving simulator
        ("gpustack-0133", False, True, None),
        ("gpustack-0149", False, True, None),
    ],
)
def test_the_row_is_predicted_with_its_engine_policy(monkeypatch, row_id, first, chunked, budget):
    """With the switch on, the offline row's predictor calls offline_throughput with its
    engine's policy."""
    import importlib

    import planner.benchmarks.step_rows as step_rows

    steady_state = importlib.import_module("planner.serving.steady_state")

    seen = []

    def spy(sm, isl, osl, B, tok, ov=False, prefill_first=False, chunk=True, policy=None):
        assert policy is True
        seen.append((prefill_first, chunk, tok))
        return 1.0, B

    monkeypatch.setattr(steady_state, "OFFLINE_ENGINE_POLICY", True)
    monkeypatch.setattr(step_rows, "offline_throughput", spy)
    f, why, kind = step_rows.row_predictor(_row(row_id), CAT)
    assert f is not None, why
    assert kind == "offline"
    f(PRIOR)
    assert [s[:2] for s in seen] == [(first, chunked)]
    if budget is not None:
        assert seen[0][2] == budget


def test_off_is_the_even_spread_of_before():
    """The switch off (the default): the 100 x 1,000 / 500 cycle of B = 100 in an 8,192-token
    budget is max(500, 18.3) = 500 iterations, each with 100 x 1,500 / 500 = 300 new tokens,
    100 sequences and 100 x (1,000^2 / 2 + 500 x 1,250) / 500 query-key pairs: all eager."""
    sm = _sm(PRIOR.with_(eager_layer_s=1e-3))
    assert offline_cycle_iterations(100, 1000, 500, 8192, even=True) == (500, 0)
    sched = sm.params.sched_overhead_s + sm.params.sched_seq_overhead_s * 100
    pairs = 100 * (1000**2 / 2 + 500 * 1250) / 500
    t = sm.step_time(300, 100, 100, 100 * 1250, pairs) + sched
    assert offline_throughput(sm, 1000, 500, 100, 8192)[0] == pytest.approx(
        100 * 500 / (500 * t), rel=1e-9
    )
    assert (
        offline_throughput(sm, 1000, 500, 100, 8192, engine_policy=False)[0]
        == (offline_throughput(sm, 1000, 500, 100, 8192)[0])
    )


def test_with_the_policy_the_decode_steps_replay_the_cuda_graph():
    """1 ms of eager dispatch per layer (32 ms per eager step of Llama-3.1-8B's 32 layers, far
    above a decode step of 16 sequences on an H100, ~8 ms): the even spread is eager in all
    512 iterations of the cycle and loses more than half; the engine's cycle only in
    ceil(16 x 1,024 / (8,192 - 16)) = 3 of them and loses less than 5%."""
    slow = PRIOR.with_(eager_layer_s=1e-3)
    args = (1024, 512, 16, 8192)
    even = [offline_throughput(_sm(q), *args)[0] for q in (PRIOR, slow)]
    policy = [offline_throughput(_sm(q), *args, engine_policy=True)[0] for q in (PRIOR, slow)]
    assert even[1] < 0.5 * even[0]
    assert policy[1] > 0.95 * policy[0]


def test_with_the_policy_an_moe_offline_cycle_matches_the_closed_loop():
    """DeepSeek-V3 on 8 H200s at 4 sequences, 1k/1k: the closed loop keeps the prompts in
    their own steps (a decode step of 4 tokens reads at most 32 of 256 experts per layer), and
    so does the engine's cycle: ceil(4 x 1,024 / (8,192 - 4)) = 1 of its 1,024 iterations
    carries prompts, the other 1,023 decode 4 tokens. They agree within 5% (the even spread
    puts 4 prompt tokens in every step and is > 20% slower, tests/test_closed_loop_fit.py)."""
    from planner.serving.steady_state import closed_loop_throughput

    moe = step_model(
        CAT.model("deepseek-v3"), CAT.gpu("nvidia-h200-sxm"), CAT.precision("fp8"), "fp8", 8, 1,
        PRIOR, CAT,
    )  # fmt: skip
    cl = closed_loop_throughput(moe, 1024, 1024, 4, 8192)
    off, _ = offline_throughput(moe, 1024, 1024, 4, 8192, engine_policy=True)
    assert cl == pytest.approx(off, rel=0.05)
