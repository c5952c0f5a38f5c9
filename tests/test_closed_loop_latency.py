"""Closed-loop TTFT / TPOT rows in the fit: the steady state's latencies
(:func:`planner.serving.steady_state.closed_loop_latencies`) against hand-derived cases and the
simulator, and which rows the fit takes through them
(:func:`planner.benchmarks.step_rows.closed_loop_predictor`)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.benchmarks import step_rows
from planner.benchmarks.step_rows import closed_loop_predictor
from planner.catalog import PRIOR, load_catalog
from planner.engine import step_model
from planner.engine.phases import mean_decode_time, prefill_time
from planner.serving import run
from planner.serving.replica import build_replica
from planner.serving.steady_state import (
    closed_loop_cycle,
    closed_loop_latencies,
    closed_loop_throughput,
)
from planner.workload.workload import make_requests

CAT = load_catalog()


@pytest.fixture(autouse=True)
def _latency_rows_on(monkeypatch):
    """The switch is off in the product (docs/changes/2026-12-07e/latfit.md); these tests check the rows
    it fits when on."""
    monkeypatch.setattr(step_rows, "CLOSED_LOOP_LATENCY", True)


def _sm(model="llama-3.1-8b", gpu="nvidia-h100-sxm", prec="bf16", tp=1):
    return step_model(CAT.model(model), CAT.gpu(gpu), CAT.precision(prec), prec, tp, 1, PRIOR, CAT)


def test_one_client_sees_its_prefill_then_one_decode_step_per_token():
    """Hand-derived: one client (B = 1), a 1,000-token prompt in an 8,192-token budget
    (k = 1): TTFT = the prefill of one prompt plus one scheduler pass; TPOT = one decode step
    of one sequence plus a scheduler pass (no other prompt ever shares an iteration)."""
    sm = _sm()
    isl, osl = 1000, 200
    sched = sm.params.sched_overhead_s + sm.params.sched_seq_overhead_s * 1
    ttft, tpot, itl = closed_loop_latencies(sm, isl, osl, 1, 8192)
    assert ttft == pytest.approx(prefill_time(sm, 1, isl) + sched, rel=0.01)
    # the steady state takes the context at its mean isl + osl / 2; mean_decode_time averages
    # over the decode: equal within the attention term's curvature
    assert tpot == pytest.approx(mean_decode_time(sm, 1, isl, osl) + sched, rel=0.01)
    assert itl == tpot  # B = 1: every gap is a decode-only step


@pytest.mark.parametrize("clients", [1, 4, 16, 64])
def test_latencies_and_throughput_obey_littles_law(clients):
    """Each of B clients ends a request every E2E = TTFT + (osl - 1) TPOT, so the output rate
    is B osl / E2E: the latencies split closed_loop_throughput's lifetime, no time is lost or
    counted twice."""
    sm = _sm()
    isl, osl = 3000, 300
    ttft, tpot, _ = closed_loop_latencies(sm, isl, osl, clients, 2048)
    e2e = ttft + (osl - 1) * tpot
    assert clients * osl / e2e == pytest.approx(
        closed_loop_throughput(sm, isl, osl, clients, 2048), rel=1e-12
    )


def test_other_clients_prompts_slow_the_decode_and_set_the_median_gap():
    """16 clients, 3,000-token prompts in 2,048-token chunks (k = 2), 300 outputs: of a
    request's 299 gaps, (16 - 1) x 2 = 30 hold another prompt's chunk (t_mix), 269 are
    decode-only (t_dec): TPOT = (30 t_mix + 269 t_dec) / 299, above t_dec; fewer than half
    are mixed, so the median gap is t_dec. TTFT = k t_mix (its own two chunks)."""
    sm = _sm()
    B, k, n_dec, t_mix, t_dec = closed_loop_cycle(sm, 3000, 300, 16, 2048)
    assert (B, k, n_dec) == (16.0, 2.0, 269.0)
    ttft, tpot, itl = closed_loop_latencies(sm, 3000, 300, 16, 2048)
    assert ttft == pytest.approx(2 * t_mix)
    assert tpot == pytest.approx((30 * t_mix + 269 * t_dec) / 299)
    assert t_mix > tpot > t_dec
    assert itl == t_dec


def test_no_steady_state_when_prompts_overlap_or_one_token():
    """k (B - 1) > osl - 1 (64 clients, 8k prompts in 2k chunks, 16-token answers) has no
    staggered steady state; one output token has no TPOT."""
    sm = _sm()
    assert closed_loop_latencies(sm, 8192, 16, 64, 2048) is None
    assert closed_loop_latencies(sm, 1000, 1, 1, 8192) is None


@pytest.mark.parametrize(
    "model, gpu, prec, tp, clients, isl, osl",
    [
        ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", 1, 1, 1024, 512),
        ("deepseek-v3", "nvidia-h200-sxm", "fp8", 8, 1, 8192, 1024),
        ("deepseek-v3", "nvidia-h200-sxm", "fp8", 8, 4, 1024, 1024),
        ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", 1, 32, 1024, 512),
    ],
)
def test_steady_latencies_agree_with_the_simulated_closed_loop(
    model, gpu, prec, tp, clients, isl, osl
):
    """The simulator runs the same closed loop request by request (20 waves, so the ramp-up
    and the drain weigh little): mean TPOT within 5%; TTFT within 5% at one client. (Clients
    with fixed lengths that start together stay in lock step in the simulator, as in a real
    run: their prompts share iterations, so TTFT at 2-4 clients is fitted only for drawn
    lengths, which drift apart.)"""
    rep = build_replica(model, gpu, prec, "sglang", tp=tp, catalog=CAT, max_num_seqs=clients)
    n = 20 * clients
    res = run(rep, make_requests(np.zeros(n), np.full(n, isl), np.full(n, osl)), clients)
    s = res.summary()
    ttft, tpot, _ = closed_loop_latencies(
        rep.sm, isl, osl, clients, rep.engine.max_num_batched_tokens
    )
    assert tpot == pytest.approx(s["tpot_mean_s"], rel=0.05)
    if clients == 1:
        assert ttft == pytest.approx(s["ttft_p50_s"], rel=0.05)


def _row(**kw):
    row = {
        "id": "t-1", "source": "test", "source_detail": "", "as_of": "2026-05-22",
        "hardware": "nvidia-h200-sxm", "n_gpus": "8", "tp": "8", "pp": "1",
        "model": "deepseek-v3", "precision": "fp8", "kv_precision": "fp8",
        "framework": "sglang", "framework_version": "0.5.12", "mode": "concurrency",
        "isl": "1024", "osl": "1024", "batch": "", "concurrency": "4", "request_rate": "inf",
        "context_len": "", "metric": "tpot_ms_median", "value": "20", "unit": "ms",
        "notes": "client: closed loop; 40 requests",
    }  # fmt: skip
    row.update(kw)
    return row


DRAWN = (
    "client: InferenceX utils/bench_serving/benchmark_serving.py closed loop; "
    "random_input_len=1024; random_output_len=1024; random_range_ratio=1.0; 40 requests"
)


def _h200_dsv3():
    return step_model(CAT.model("deepseek-v3"), CAT.gpu("nvidia-h200-sxm"), CAT.precision("fp8"),
                      "fp8", 8, 1, PRIOR, CAT)  # fmt: skip


@pytest.mark.parametrize(
    "metric, index, conc",
    [("tpot_ms_median", 1, "4"), ("tpot_ms_mean", 1, "4"), ("ttft_ms_median", 0, "1")],
)
def test_a_closed_loop_latency_row_is_its_steady_state_in_ms(metric, index, conc):
    """One TP8 replica, 1k/1k, SGLang's 8,192-token default budget (H200): the predictor is
    the steady state's value x 1000 (ms), mean and median alike."""
    fn = closed_loop_predictor(_row(metric=metric, concurrency=conc), CAT)
    assert fn is not None
    want = 1000 * closed_loop_latencies(_h200_dsv3(), 1024, 1024, float(conc), 8192)[index]
    assert fn(PRIOR) == pytest.approx(want, rel=1e-9)


def test_which_ttft_rows_are_fitted():
    """TTFT is fitted at one client per replica, and at 2-4 only with drawn lengths (fixed
    lengths started together run in lock step); never above 4 clients per replica. TPOT is
    fitted at any count."""
    ttft = "ttft_ms_median"
    assert closed_loop_predictor(_row(metric=ttft, concurrency="1"), CAT) is not None
    assert closed_loop_predictor(_row(metric=ttft, concurrency="4"), CAT) is None
    drawn = dict(isl="", osl="", notes=DRAWN)
    assert closed_loop_predictor(_row(metric=ttft, concurrency="4", **drawn), CAT) is not None
    assert closed_loop_predictor(_row(metric=ttft, concurrency="8", **drawn), CAT) is None
    # 8 clients over two TP8 replicas (16 GPUs): 4 each
    two = _row(metric=ttft, concurrency="8", n_gpus="16", **drawn)
    assert closed_loop_predictor(two, CAT) is not None
    assert closed_loop_predictor(_row(concurrency="64"), CAT) is not None


def test_a_gate_adds_its_window_to_the_fitted_ttft():
    """SGLang ``--scheduler-recv-interval 10`` at 4 clients: a request waits part of the
    gate's window behind the running decoders, so the fitted TTFT is larger than without the
    gate (the same wait validation adds after the simulation); TPOT is unchanged."""
    kw = dict(isl="", osl="", concurrency="4")
    gated = DRAWN + "; --scheduler-recv-interval 10"
    plain = closed_loop_predictor(_row(metric="ttft_ms_median", notes=DRAWN, **kw), CAT)(PRIOR)
    waited = closed_loop_predictor(_row(metric="ttft_ms_median", notes=gated, **kw), CAT)(PRIOR)
    _, tpot_s, itl_s = closed_loop_latencies(_h200_dsv3(), 1024, 1024, 4, 8192)
    # the gate's mean wait is at least W / 2 iterations of one median gap (W >= 1)
    assert waited >= plain + 0.5 * 1000 * itl_s
    tp_plain = closed_loop_predictor(_row(notes=DRAWN, **kw), CAT)(PRIOR)
    assert closed_loop_predictor(_row(notes=gated, **kw), CAT)(PRIOR) == pytest.approx(tp_plain)
    assert tp_plain == pytest.approx(1000 * tpot_s, rel=1e-6)


def test_the_switch_turns_latency_rows_off(monkeypatch):
    """Off (the product's default): a closed-loop TPOT row has no steady predictor, the
    same run's throughput row keeps its own."""
    monkeypatch.setattr(step_rows, "CLOSED_LOOP_LATENCY", False)
    assert closed_loop_predictor(_row(), CAT) is None
    assert closed_loop_predictor(_row(metric="output_tok_s_total", value="500"), CAT) is not None
