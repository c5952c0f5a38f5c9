"""Pipelined pipeline parallelism (planner/engine/pipeline.py): hand-derived steps and
properties."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.catalog.efficiency import PRIOR
from planner.engine import pipeline
from planner.engine.step import step_model

H100 = "nvidia-h100-sxm"
#: no fixed costs and a flat GEMM rate: a stage's time is linear in its tokens
LINEAR = PRIOR.with_(
    step_overhead_s=0.0,
    layer_overhead_s=0.0,
    seq_overhead_s=0.0,
    compute_half_tokens=0.0,
    eager_layer_s=0.0,
    comm_latency_s=20e-6,
)


def _linear(pipelined: bool):
    sm = step_model("llama-2-70b", H100, "fp8", tp=1, pp=2, params=LINEAR, pipelined=pipelined)
    # no weight read: the GEMM time is max(activations, FLOPs), both linear in the tokens
    return dataclasses.replace(sm, dense_weight_bytes=0.0, lm_head_bytes=0.0)


def test_send_coefficient_by_hand():
    # Llama-2-70B hidden 8,192 x 2 B / TP1 over H100 NVLink 450 GB/s one way:
    # 16,384 / 450e9 = 3.6409e-8 s per token
    sm = step_model("llama-2-70b", H100, "fp8", tp=1, pp=2)
    assert sm.pp_send_s_per_token == pytest.approx(16_384 / 450e9, rel=1e-12)
    assert sm.pp_micro_batches == 2
    # TP2 x PP2: each GPU sends its half, 8,192 B per token
    assert step_model("llama-2-70b", H100, "fp8", tp=2, pp=2).pp_send_s_per_token == (
        pytest.approx(8_192 / 450e9, rel=1e-12)
    )
    off = step_model("llama-2-70b", H100, "fp8", tp=1, pp=2, pipelined=False)
    assert off.pp_micro_batches == 1
    assert step_model("llama-2-70b", H100, "fp8", tp=2).pp_micro_batches == 1


@pytest.mark.parametrize("n", [64, 1024])
def test_two_stages_at_full_occupancy_give_twice_the_throughput_less_the_send(n):
    ser, pip = _linear(False), _linear(True)
    args = (n, n, n, n * 1000, n * 1000)  # n decoders with 1,000 tokens of context each
    t_ser = ser.step(*args).time_s  # 2 x t_stage(n): the stages one after the other
    t_stage_half = ser.step(*(a / 2 for a in args)).time_s / 2  # one stage, n/2 sequences
    # linear stage: t_stage(n / 2) = t_stage(n) / 2 = t_ser / 4
    assert t_stage_half == pytest.approx(t_ser / 4, rel=1e-9)
    # pipelined: 2 x t_stage(n / 2) + 1 send of n / 2 tokens
    send = (n / 2) * (16_384 / 450e9) + 20e-6
    t_pip = pip.step(*args).time_s
    assert t_pip == pytest.approx(2 * t_stage_half + send, rel=1e-9)
    assert t_pip == pytest.approx(t_ser / 2 + send, rel=1e-9)
    # throughput n / t: twice the stage-after-stage figure, less the send
    assert n / t_pip == pytest.approx(2 * (n / t_ser) / (1 + 2 * send / t_ser), rel=1e-9)
    assert pip.step_time(*args) == pytest.approx(t_pip, rel=1e-12)


def test_one_sequence_runs_stage_after_stage():
    # one sequence is one micro-batch: the two stages in turn, plus the send of its token
    ser, pip = _linear(False), _linear(True)
    args = (1, 1, 1, 4000, 4000)
    send = 16_384 / 450e9 + 20e-6
    assert pip.step(*args).time_s == pytest.approx(ser.step(*args).time_s + send, rel=1e-12)
    assert pipeline.micro_batches(pip, 1) == 1.0
    assert pipeline.micro_batches(pip, 7) == 2.0


@pytest.mark.parametrize("pp", [2, 4, 8])
def test_more_stages_never_beat_one_stage_for_a_single_token(pp):
    # a single decoding sequence passes all pp stages in turn: its step is never shorter
    # than the whole model's step on one stage of the same width (pp = 1)
    one = step_model("llama-3.1-70b", H100, "bf16", tp=1, pp=1)
    many = step_model("llama-3.1-70b", H100, "bf16", tp=1, pp=pp)
    for ctx in (100, 4000, 30000):
        args = (1, 1, 1, ctx, ctx)
        assert many.step(*args).time_s >= one.step(*args).time_s
        assert many.step_time(*args) >= one.step_time(*args)


@pytest.mark.parametrize("pp", [2, 4])
def test_pipelined_within_serial_bounds(pp):
    # never slower than stage after stage (plus the sends), never more than pp x faster
    ser = step_model("llama-2-70b", H100, "fp8", tp=2, pp=pp, pipelined=False)
    pip = step_model("llama-2-70b", H100, "fp8", tp=2, pp=pp, pipelined=True)
    for n in (1, 3, 16, 256, 2048):
        for ctx in (200, 3000):
            args = (n, n, n, n * ctx, n * ctx)
            t_s, t_p = ser.step(*args).time_s, pip.step(*args).time_s
            m = min(pp, n)
            send = (pp - 1) * (pip.pp_send_s_per_token * n / m + pip.params.comm_latency_s)
            assert t_p <= t_s + send * (1 + 1e-12)
            assert t_p >= t_s / pp
            assert pip.step_time(*args) == pytest.approx(t_p, rel=1e-12)


def test_prompt_chunks_and_arrays_agree_with_the_scalar_form():
    pip = step_model("llama-2-70b", H100, "fp8", tp=1, pp=2)
    T = np.array([2048.0, 512.0 + 60, 1.0, 0.0])
    seqs = np.array([1.0, 61.0, 1.0, 0.0])
    kv = np.array([2048.0, 60 * 800 + 512, 10.0, 0.0])
    pairs = np.array([2048 * 2049 / 2, 60 * 800 + 512 * 513 / 2, 10.0, 0.0])
    v = pip.step(T, seqs, seqs, kv, pairs).time_s
    for i in range(len(T)):
        assert pip.step_time(T[i], seqs[i], seqs[i], kv[i], pairs[i]) == pytest.approx(
            v[i], rel=1e-12
        )
    # an empty step sends nothing: the same as stage after stage
    ser = step_model("llama-2-70b", H100, "fp8", tp=1, pp=2, pipelined=False)
    assert v[3] == ser.step(0, 0, 0, 0, 0).time_s


def test_switch_off_is_the_stage_after_stage_model(monkeypatch):
    args = (512, 512, 512, 512 * 1000, 512 * 1000)
    on = step_model("llama-2-70b", H100, "fp8", tp=1, pp=2).step(*args).time_s
    monkeypatch.setattr(pipeline, "PIPELINED", False)
    sm = step_model("llama-2-70b", H100, "fp8", tp=1, pp=2)
    assert sm.pp_micro_batches == 1
    assert sm.step_time(*args) == sm.step(*args).time_s
    assert sm.step(*args).time_s > 1.5 * on  # 512 decoders: the serial step is ~2x longer
