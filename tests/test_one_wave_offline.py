"""Offline rows of N requests submitted at once that the replica holds together: one wave
(:func:`planner.benchmarks.step_rows.one_wave_throughput`), checked by hand, against the
simulator, and on the rows of the dstack Llama-3.1-405B benchmark that exposed it."""

from __future__ import annotations

import numpy as np
import pytest

from planner.benchmarks.step_rows import one_wave_throughput, row_predictor
from planner.catalog import PRIOR, load_catalog
from planner.engine import step_model
from planner.engine.phases import mean_decode_time, prefill_time
from planner.serving import run
from planner.serving.replica import build_replica
from planner.serving.steady_state import offline_throughput
from planner.workload.workload import make_requests

CAT = load_catalog()


def _sm(params=PRIOR, model="llama-3.1-8b", gpu="nvidia-h100-sxm", prec="bf16"):
    return step_model(CAT.model(model), CAT.gpu(gpu), CAT.precision(prec), prec, 1, 1, params, CAT)


def test_one_request_is_its_prefill_then_its_decodes():
    """Hand-derived: n = 1, a 1,000-token prompt within the 8,192-token budget (k = 1): the
    run is one prefill of 1,000 tokens plus 199 decode steps of one sequence, each with one
    scheduler pass: throughput = 200 / (prefill + sched + 199 x (decode step + sched)).
    Checked against the engine's own phase functions (mean_decode_time averages the context
    over the decode; the wave takes it at its mean, isl + osl / 2)."""
    sm = _sm()
    isl, osl = 1000, 200
    sched = sm.params.sched_overhead_s + sm.params.sched_seq_overhead_s * 1
    run_s = prefill_time(sm, 1, isl) + (osl - 1) * mean_decode_time(sm, 1, isl, osl) + osl * sched
    assert one_wave_throughput(sm, isl, osl, 1, 8192) == pytest.approx(osl / run_s, rel=0.01)


def test_decode_steps_of_a_wave_replay_the_cuda_graph():
    """With 1 ms of eager dispatch per layer (32 layers: 32 ms per eager step, far above a
    decode step of 16 sequences of Llama-3.1-8B on an H100, ~8 ms), the even spread of
    offline_throughput puts prompt tokens in every iteration, so every iteration runs eagerly
    and throughput falls several-fold; in a wave only the 2 prefill iterations are eager
    (16 x 1,024 prompt tokens in 8,192-token chunks), so the 511 decode iterations keep their
    speed: the wave loses less than 5%."""
    slow = PRIOR.with_(eager_layer_s=1e-3)
    args = (1024, 512, 16, 8192)
    wave_fast, wave_slow = one_wave_throughput(_sm(), *args), one_wave_throughput(_sm(slow), *args)
    spread_fast = offline_throughput(_sm(), *args)[0]
    spread_slow = offline_throughput(_sm(slow), *args)[0]
    assert wave_slow > 0.95 * wave_fast
    assert spread_slow < 0.5 * spread_fast


@pytest.mark.parametrize("n, isl, osl", [(16, 1024, 512), (64, 128, 1024), (4, 8192, 256)])
def test_one_wave_agrees_with_the_simulated_run(n, isl, osl):
    """The simulator runs the same n requests, all arriving at t = 0 with room for every one
    (request by request, its own chunking and scheduler): within 5%."""
    rep = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm", tp=1, catalog=CAT,
                        max_num_seqs=n)  # fmt: skip
    res = run(rep, make_requests(np.zeros(n), np.full(n, isl), np.full(n, osl)), n)
    sim = float(res.output_tokens.sum()) / res.duration_s
    wave = one_wave_throughput(rep.sm, isl, osl, n, rep.engine.max_num_batched_tokens)
    assert wave == pytest.approx(sim, rel=0.05)


def _dstack_row(n: int, isl: int, notes_extra: str = "") -> dict:
    # dstackai/benchmarks comparison/csv_data/throughput_comparsion.csv (row
    # "8xH100-meta-Llama-31-405B-FP8,2048,2048,4,73.01276787,4,16384,...,224.3991082"):
    # 4 prompts of 2,048 + 2,048 tokens in 73.0 s -> 224.4 tok/s (input + output)
    return {
        "id": "t-1", "source": "test", "source_detail": "", "as_of": "2024-12-05",
        "hardware": "nvidia-h100-sxm", "n_gpus": "8", "tp": "8", "pp": "1", "ep": "",
        "attention_dp": "", "model": "llama-3.1-405b", "precision": "fp8", "kv_precision": "",
        "framework": "vllm",
        "framework_version": "vLLM 0.6.3.post2.dev308+gb489fc3c (CUDA 12.4) | benchmark_throughput.py",
        "mode": "offline", "isl": str(isl), "osl": "2048", "batch": "", "concurrency": "",
        "request_rate": "inf", "context_len": "", "metric": "total_tok_s", "value": "224.4",
        "unit": "tok/s", "notes": f"Offline benchmark_throughput: {n} requests submitted at once{notes_extra}",
    }  # fmt: skip


def test_an_offline_row_of_few_requests_is_one_wave(monkeypatch):
    """4 requests of Llama-3.1-405B fp8 on 8 H100s fit together (vLLM 0.6 V0: 256 sequences,
    and 4 x 4,096 tokens of KV are far below the ~18 GB per GPU left after the weights): the
    row's predictor is the wave, so 1 ms of eager dispatch per layer (126 ms per eager step of
    126 layers) barely moves it. 10,000 requests do not fit at once: the steady stream of
    offline_throughput, eager in every iteration, is the model there and falls several-fold."""
    import planner.benchmarks.step_rows as step_rows

    slow = PRIOR.with_(eager_layer_s=1e-3)
    # off by default (step_rows.ONE_WAVE_OFFLINE: the measured trade-off): the steady stream
    f, why, kind = row_predictor(_dstack_row(4, 2048), CAT)
    assert f is not None, why
    assert f(slow) < 0.5 * f(PRIOR)
    monkeypatch.setattr(step_rows, "ONE_WAVE_OFFLINE", True)
    f, why, kind = row_predictor(_dstack_row(4, 2048), CAT)
    assert f is not None, why
    assert f(slow) > 0.9 * f(PRIOR)
    g, why, _ = row_predictor(_dstack_row(10_000, 2048), CAT)
    assert g is not None, why
    assert g(slow) < 0.5 * g(PRIOR)


def test_a_serving_client_at_rate_inf_is_not_one_wave(monkeypatch):
    """The same 4 requests sent by a serving client over HTTP (GPUStack's rows: "vllm bench
    serve ... request rate inf: all N requests sent at once") reach the engine one by one
    through the API server: the steady stream stays the model (eager in every iteration,
    so 1 ms of dispatch per layer makes it several-fold slower)."""
    import planner.benchmarks.step_rows as step_rows

    monkeypatch.setattr(step_rows, "ONE_WAVE_OFFLINE", True)
    row = {
        **_dstack_row(4, 2048),
        "framework_version": "v0.11.0 | vllm server, client vllm bench serve",
        "notes": "Serving benchmark (vllm bench serve --backend openai-chat, request rate inf: "
        "all 4 requests sent at once, 4 requests completed)",
    }
    f, why, _ = row_predictor(row, CAT)
    assert f is not None, why
    assert f(PRIOR.with_(eager_layer_s=1e-3)) < 0.5 * f(PRIOR)
