"""Engine admission gates a run states (issue 32, TTFT on public serving rows): SGLang's
scheduler-recv-interval and continuous decode steps, TensorRT-LLM's batch wait; and the
open-loop rows above the predicted capacity (their queue grows)."""

from __future__ import annotations

import math

import pytest
from _benchmark_rows import schema_row

from planner.benchmarks.scheduler_waits import (
    AdmissionGate,
    admission_gate,
    admission_wait,
    adp_balance,
    batch_wait,
    burst_wait,
    recv_interval,
    window_iterations,
)
from planner.benchmarks.serving_rows import continuous_decode_steps, serving_row_details
from planner.catalog import PRIOR
from planner.engine.phases import prefill_time
from planner.serving.replica import build_replica


def _row(**kw) -> dict[str, str]:
    return schema_row(**{
        "hardware": "nvidia-h200-sxm", "model": "llama-3.2-1b", "precision": "bf16",
        "framework": "sglang", "concurrency": "8", "isl": "256", "osl": "64",
        "notes": "80 requests", **kw,
    })  # fmt: skip


def test_flags_read_from_the_notes():
    """The SGLang command line and TensorRT-LLM's extra options (JSON, as the InferenceX
    rows quote them) both parse; unstated flags are off."""
    sgl = (
        "server: python3 -m sglang.launch_server --scheduler-recv-interval 30 --stream-interval 30"
    )
    assert recv_interval(sgl) == 30 and continuous_decode_steps(sgl) == 1
    trt = '{"stream_interval":10,"batch_wait_timeout_iters":40,"batch_wait_max_tokens_ratio":0.8}'
    assert batch_wait(trt) == (40, 0.8)
    assert admission_gate("no flags").off
    assert admission_gate("--num-continuous-decode-steps 4").continuous_decode_steps == 4


def test_sglang_windows_hand_derived():
    """recv interval 10: requests are received every 10 decode iterations, so one waits at
    most 10 - 1 = 9; 4 continuous decode steps: at most 3; both: every 4 x 10 = 40
    iterations, at most 39. With an ITL of 20 ms the recv-10 wait is 9 / 2 x 20 = 90 ms on
    average and 9 x 20 = 180 ms at the P99."""
    assert window_iterations(AdmissionGate(recv_interval=10)) == 9
    assert window_iterations(AdmissionGate(continuous_decode_steps=4)) == 3
    assert window_iterations(AdmissionGate(continuous_decode_steps=4, recv_interval=10)) == 39
    assert admission_wait(AdmissionGate(recv_interval=10), 20.0) == pytest.approx((90.0, 180.0))
    assert admission_wait(AdmissionGate(), 20.0) == (0.0, 0.0)


def test_trtllm_batch_wait_window_hand_derived():
    """InferenceX's B200 TensorRT-LLM run at concurrency 128 (batch_wait_timeout_iters 40,
    ratio 0.8, max_num_tokens 8192): the threshold is 0.8 x 8192 = 6553.6 tokens, 128 of
    them the decoders' own; prompts of ~922 tokens arriving at ~0.138 per 27 ms iteration
    bring 127 tokens per iteration, so filling the rest takes ceil(6425.6 / 127) = 51
    iterations: the 40-iteration timeout ends the wait first (W = 40; mean 20 x 27 ms =
    540 ms; the run measured 532 ms TTFT against 33 ms predicted without the gate). At 200
    tokens per iteration the threshold wins: ceil(6425.6 / 200) = 33. With 7,000 decoders
    the threshold is met already (W = 0); with no ratio the timeout alone counts."""
    g = AdmissionGate(batch_wait_iters=40, batch_wait_ratio=0.8)
    kw = dict(decoders=128, max_num_tokens=8192)
    assert window_iterations(g, arrivals_per_iteration_tokens=127, **kw) == 40
    assert window_iterations(g, arrivals_per_iteration_tokens=200, **kw) == 33
    assert window_iterations(g, decoders=7000, max_num_tokens=8192) == 0
    assert window_iterations(AdmissionGate(batch_wait_iters=20)) == 20
    assert admission_wait(g, 27.0, arrivals_per_iteration_tokens=127, **kw) == pytest.approx(
        (540.0, 1080.0)
    )


def test_trtllm_attention_dp_balance_window_hand_derived():
    """InferenceX's B200 TensorRT-LLM scripts with DP attention set enable_balance, timeout
    60, batching wait 0. DEP8 at concurrency 128 (1k/1k, ITL ~21 ms): ~128 / 19.5 s = 6.6
    requests/s, 0.138 per iteration, so covering 8 ranks takes ceil(8 / 0.138) = 58
    iterations (< 60): W = 58, a mean wait of 29 x 21 ms = 609 ms (measured 717-775 ms TTFT
    against 20 ms predicted without the gate). An MLPerf submission's 9 / 3 at 0.75 arrivals
    per iteration: ceil(8 / 0.75) = 11 > 9, so W = 9 + 3 = 12. One rank: no balancing."""
    notes = 'attention_dp_config: {"batching_wait_iters": 0, "enable_balance": true, "timeout_iters": 60}'
    g = admission_gate(notes)
    assert (g.adp_timeout_iters, g.adp_batching_wait_iters) == (60, 0)
    assert window_iterations(g, dp_ranks=8, arrivals_per_iteration=0.138) == 58
    assert admission_wait(g, 21.0, dp_ranks=8, arrivals_per_iteration=0.138)[0] == pytest.approx(
        609.0
    )
    mlperf = AdmissionGate(adp_timeout_iters=9, adp_batching_wait_iters=3)
    assert window_iterations(mlperf, dp_ranks=8, arrivals_per_iteration=0.75) == 12
    assert window_iterations(mlperf, dp_ranks=1, arrivals_per_iteration=0.75) == 0
    # enabled without its numbers: TensorRT-LLM's defaults (timeout 50, batching wait 10);
    # the batch-wait timeout is not read as the balance timeout
    assert adp_balance('"enable_balance": true') == (50, 10)
    assert adp_balance('"batch_wait_timeout_iters": 40') == (0, 0)


@pytest.mark.parametrize("tokens", [1.0, 10.0, 50.0, 127.0, 400.0, 5000.0])
def test_batch_wait_never_grows_with_more_arrivals(tokens):
    """More prompt tokens arriving per iteration fill the batch sooner: the window never
    grows with the arrival rate, and never exceeds the timeout."""
    g = AdmissionGate(batch_wait_iters=40, batch_wait_ratio=0.8)
    w1 = window_iterations(
        g, decoders=64, arrivals_per_iteration_tokens=tokens, max_num_tokens=8192
    )
    w2 = window_iterations(
        g, decoders=64, arrivals_per_iteration_tokens=2 * tokens, max_num_tokens=8192
    )
    assert 0 <= w2 <= w1 <= 40


def test_recv_interval_adds_its_wait_to_a_serving_row(catalog, monkeypatch):
    """The same closed-loop row with --scheduler-recv-interval 10: TTFT median and mean
    rise by 9 / 2 x the row's predicted ITL median, the P99 by 9 x; TPOT is unchanged.
    With the prompts the gate releases together (``GATE_BURST``, on): + the burst wait of
    a window of 9 ITLs at the row's request rate and one prompt's prefill
    (:func:`burst_wait`, hand-derived in tests/test_ttft_terms.py)."""
    import planner.benchmarks.serving_rows as sr

    row = _row()
    gated_row = {**row, "notes": "80 requests; --scheduler-recv-interval 10"}
    base = serving_row_details(row, catalog, PRIOR)
    gated = serving_row_details(gated_row, catalog, PRIOR)
    itl = base["itl_ms_median"]
    rep = build_replica("llama-3.2-1b", "nvidia-h200-sxm", "bf16", "sglang", params=PRIOR,
                        catalog=catalog)  # fmt: skip
    b_mean, b_p99 = burst_wait(9 * itl / 1e3, base["req_s"], prefill_time(rep.sm, 1, 256))
    assert b_mean > 0
    assert gated["ttft_ms_median"] == pytest.approx(base["ttft_ms_median"] + 4.5 * itl + b_mean)
    assert gated["ttft_ms_mean"] == pytest.approx(base["ttft_ms_mean"] + 4.5 * itl + b_mean)
    assert gated["ttft_ms_p99"] == pytest.approx(base["ttft_ms_p99"] + 9 * itl + b_p99)
    assert gated["tpot_ms_median"] == pytest.approx(base["tpot_ms_median"])
    assert "receives every 10 iterations" in gated["note"]
    monkeypatch.setattr(sr, "GATE_BURST", False)
    alone_gate = serving_row_details(gated_row, catalog, PRIOR)
    assert alone_gate["ttft_ms_median"] == pytest.approx(base["ttft_ms_median"] + 4.5 * itl)
    assert alone_gate["ttft_ms_p99"] == pytest.approx(base["ttft_ms_p99"] + 9 * itl)
    monkeypatch.setattr(sr, "GATE_BURST", True)
    # one client: the engine is idle when its next request comes, and an idle engine
    # receives at once (the recv counter and the batch wait run only while decoding)
    one = {**row, "concurrency": "1", "notes": "10 requests"}
    alone = serving_row_details(one, catalog, PRIOR)
    alone_gated = serving_row_details(
        {**one, "notes": "10 requests; --scheduler-recv-interval 10"}, catalog, PRIOR
    )
    assert alone_gated["ttft_ms_median"] == pytest.approx(alone["ttft_ms_median"])


def test_wait_is_weighted_by_the_share_of_busy_arrivals():
    """Half the arrivals finding a decoder: half the mean wait (recv 10, ITL 20 ms: 45 ms),
    the P99 still the whole window (180 ms); under 2 % busy the P99 takes no wait."""
    g = AdmissionGate(recv_interval=10)
    assert admission_wait(g, 20.0, busy=0.5) == pytest.approx((45.0, 180.0))
    assert admission_wait(g, 20.0, busy=0.01) == pytest.approx((0.9, 0.0))


def _server(catalog, rate):
    row = _row(mode="server", concurrency="", request_rate=str(rate), isl="512", osl="128",
               metric="ttft_ms_p99", notes="")  # fmt: skip
    return serving_row_details(row, catalog, PRIOR)


def test_rate_above_capacity_is_flagged_and_ttft_p99_never_falls(catalog):
    """Poisson rows of one H200 serving Llama-3.2-1B at 512/128 tokens: far below the
    predicted capacity (the closed-loop throughput at 256 clients) the queue does not grow;
    at 4x that capacity it grows by ~3/4 of the arrivals (1 - capacity / rate) and the row
    is flagged. A higher rate never lowers the TTFT P99."""
    cap = serving_row_details(
        _row(concurrency="256", isl="512", osl="128", metric="req_s", notes="2560 requests"),
        catalog, PRIOR,
    )["req_s"]  # fmt: skip
    rates = [0.1 * cap, 0.3 * cap, 0.6 * cap, 4.0 * cap]
    d = [_server(catalog, r) for r in rates]
    assert not d[0]["over_capacity"] and d[0]["queue_growth"] < 0.03
    assert d[-1]["over_capacity"] and d[-1]["queue_growth"] > 0.5
    p99 = [x["ttft_ms_p99"] for x in d]
    assert all(b >= a * (1 - 1e-9) for a, b in zip(p99, p99[1:], strict=False)), p99
    assert math.isfinite(p99[-1])
