"""TensorRT-LLM's attention-DP balance gate in the serving loop (planner.serving._phases
gate_closed / gate_left / gate_count; scheduler_waits.loop_gated; OFF by default:
scheduler_waits.ADP_GATE_IN_LOOP). Source: ``_balance_adp_requests``
(tensorrt_llm/_torch/pyexecutor/py_executor.py): context requests wait until every rank has
one, then ``batching_wait_iters`` more, or ``timeout_iters`` iterations."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.benchmarks import scheduler_waits as sw
from planner.serving import _phases as ph


def _state(dec, waiting, t=9, b=3, r=8, held=0, bw=0):
    s = np.zeros(ph.N_S, np.int64)
    s[ph.DEC], s[ph.WQ_LEN] = dec, waiting
    s[ph.GATE_T], s[ph.GATE_B], s[ph.GATE_R] = t, b, r
    s[ph.GATE_HELD], s[ph.GATE_BW] = held, bw
    return s


def test_gate_by_hand():
    # no gate (0 ranks), or not every rank decoding: prompts join at once
    assert not ph.gate_closed(_state(100, 3, r=0))
    assert not ph.gate_closed(_state(7, 3))
    # 3 prompts for 8 ranks: held until the timeout, 9 - 4 = 5 iterations left at 4 held
    s = _state(100, 3, held=4)
    assert ph.gate_closed(s) and ph.gate_left(s) == 5
    ph.gate_count(s, 5, False)
    assert s[ph.GATE_HELD] == 9 and not ph.gate_closed(s)
    # 8 prompts (one a rank): the batching wait of 3, the timeout count reset
    s = _state(100, 8, held=6)
    assert ph.gate_closed(s) and ph.gate_left(s) == 3
    ph.gate_count(s, 2, False)
    assert (s[ph.GATE_BW], s[ph.GATE_HELD]) == (2, 0) and ph.gate_closed(s)
    ph.gate_count(s, 1, False)
    assert not ph.gate_closed(s)
    # a release resets both counts; with no prompt waiting the timeout count wraps
    ph.gate_count(s, 1, True)
    assert (s[ph.GATE_BW], s[ph.GATE_HELD]) == (0, 0)
    s = _state(100, 0, held=7)
    ph.gate_count(s, 5, False)
    assert s[ph.GATE_HELD] == (7 + 5) % 9


def _replica():
    from planner.catalog.layout import layout_of
    from planner.serving.replica import build_replica

    return build_replica(
        "deepseek-v3", "nvidia-b200", "nvfp4", "trtllm", tp=1, layout=layout_of(1, 1, 8, 8),
        kv_precision="fp8",
    )  # fmt: skip


NOTES = "harness flags (...): enable_balance: true, timeout_iters: 9, batching_wait_iters: 3"


def test_loop_gated_both_settings(monkeypatch):
    rep = _replica()
    monkeypatch.setattr(sw, "ADP_GATE_IN_LOOP", False)
    assert sw.loop_gated(rep, NOTES, "trtllm") is rep
    assert sw.admission_gate(NOTES).adp_timeout_iters == 9  # the wait added after the loop
    monkeypatch.setattr(sw, "ADP_GATE_IN_LOOP", True)
    g = sw.loop_gated(rep, NOTES, "trtllm")
    assert g.engine.adp_gate == (9, 3, 8)
    assert not g.sm.adp_balanced and g.sm.params.adp_prompt_imbalance == 1.0
    assert sw.admission_gate(NOTES).adp_timeout_iters == 0  # the loop holds the prompts now
    # other engines, no balance, or no attention DP: unchanged
    assert sw.loop_gated(rep, NOTES, "sglang") is rep
    assert sw.loop_gated(rep, "enable_balance: false", "trtllm") is rep
    plain = replace(rep, sm=replace(rep.sm, attention_dp=1))
    assert sw.loop_gated(plain, NOTES, "trtllm") is plain


def test_gated_loop_holds_prompts():
    """A DEP8 B200 replica at 40 req/s of 1,000 / 200 tokens (Poisson, seed 0): with the
    gate (9 / 3 / 8 ranks) the prompts wait for a release, so the mean TTFT is longer than
    without it, every request still finishes, and a released iteration runs several prompts
    (fewer iterations carry prompts)."""
    from planner.serving.simulate import simulate
    from planner.workload.workload import make_requests

    rng = np.random.default_rng(0)
    n = 400
    arr = np.cumsum(rng.exponential(1 / 40.0, n))
    reqs = make_requests(arr, np.full(n, 1000), np.full(n, 200))
    rep = _replica()
    off = simulate(rep, reqs)
    on = simulate(replace(rep, engine=replace(rep.engine, adp_gate=(9, 3, 8))), reqs)
    for res in (off, on):
        assert np.isfinite(res.finish_s).all()
    ttft_off = float(np.mean(off.first_token_s - off.arrival_s))
    ttft_on = float(np.mean(on.first_token_s - on.arrival_s))
    assert ttft_on > ttft_off
