"""Closed-loop serving rows in the fit: their steady state
(:func:`planner.serving.steady_state.closed_loop_throughput`) against hand-derived cases and
the simulator, and the rows the fit takes through it."""

from __future__ import annotations

import numpy as np
import pytest

from planner.benchmarks.step_rows import closed_loop_predictor
from planner.calibration.fit import FITTED_KINDS, fit_profile, prepare_rows
from planner.catalog import PRIOR, load_catalog
from planner.engine import step_model
from planner.engine.phases import mean_decode_time, prefill_time
from planner.serving import run
from planner.serving.replica import build_replica
from planner.serving.steady_state import closed_loop_throughput, offline_throughput
from planner.workload.workload import make_requests

CAT = load_catalog()


def _sm(model="llama-3.1-8b", gpu="nvidia-h100-sxm", prec="bf16"):
    return step_model(CAT.model(model), CAT.gpu(gpu), CAT.precision(prec), prec, 1, 1, PRIOR, CAT)


def test_one_client_is_one_request_after_another():
    """Hand-derived: one client (B = 1), prompt within the budget (k = 1): a request's
    lifetime is its prefill plus osl - 1 decodes of one sequence, so throughput =
    osl / (prefill + (osl - 1) x decode step) plus one scheduler pass per iteration
    (k + osl - 1 = osl iterations). Checked against the engine's own phase functions."""
    sm = _sm()
    isl, osl = 1000, 200
    sched = sm.params.sched_overhead_s + sm.params.sched_seq_overhead_s * 1
    life = prefill_time(sm, 1, isl) + (osl - 1) * mean_decode_time(sm, 1, isl, osl) + osl * sched
    got = closed_loop_throughput(sm, isl, osl, 1, 8192)
    # mean_decode_time averages the context over the decode; the closed loop takes the
    # context at its mean isl + osl / 2: equal to within the attention term's curvature
    assert got == pytest.approx(osl / life, rel=0.01)


def test_moe_decode_reads_only_the_experts_of_its_batch():
    """DeepSeek-V3 at 4 clients, 1k/1k: a decode step of 4 tokens routes to at most 32 of 256
    experts per layer. The even spread of offline_throughput puts 4 decode tokens plus
    4 x 1024 / 1024 = 4 prompt tokens in every step (up to 64 experts), so it is slower; the
    closed loop keeps the prompts in their own steps. A dense model has no such effect: the two
    agree within a few percent."""
    moe = step_model(
        CAT.model("deepseek-v3"), CAT.gpu("nvidia-h200-sxm"), CAT.precision("fp8"), "fp8", 8, 1,
        PRIOR, CAT,
    )  # fmt: skip
    cl = closed_loop_throughput(moe, 1024, 1024, 4, 8192)
    off, _ = offline_throughput(moe, 1024, 1024, 4, 8192)
    assert cl > 1.2 * off
    dense = _sm()
    assert closed_loop_throughput(dense, 1024, 1024, 4, 8192) == pytest.approx(
        offline_throughput(dense, 1024, 1024, 4, 8192)[0], rel=0.05
    )


def test_overlapping_prompts_fall_back_to_the_even_spread():
    """k (B - 1) > osl - 1: 64 clients with 8k prompts in 2k chunks (k = 4) and 16-token
    answers cannot stagger their prompts; the steady state is offline_throughput's."""
    sm = _sm()
    assert (
        closed_loop_throughput(sm, 8192, 16, 64, 2048)
        == offline_throughput(sm, 8192, 16, 64, 2048)[0]
    )


@pytest.mark.parametrize(
    "model, gpu, prec, tp, clients, isl, osl",
    [
        ("llama-3.1-8b", "nvidia-h100-sxm", "bf16", 1, 16, 1024, 512),
        ("deepseek-v3", "nvidia-h200-sxm", "fp8", 8, 4, 1024, 1024),
        ("deepseek-v3", "nvidia-h200-sxm", "fp8", 8, 64, 8192, 1024),
    ],
)
def test_steady_state_agrees_with_the_simulated_closed_loop(
    model, gpu, prec, tp, clients, isl, osl
):
    """The simulator runs the same closed loop request by request (ramp-up and drain
    included, so 20 waves of requests keep the ends small): within 5%."""
    rep = build_replica(model, gpu, prec, "sglang", tp=tp, catalog=CAT, max_num_seqs=clients)
    n = 20 * clients
    res = run(rep, make_requests(np.zeros(n), np.full(n, isl), np.full(n, osl)), clients)
    sim = float(res.output_tokens.sum()) / res.duration_s
    steady = closed_loop_throughput(rep.sm, isl, osl, clients, rep.engine.max_num_batched_tokens)
    assert steady == pytest.approx(sim, rel=0.05)


def _inferencex_row(**kw):
    row = {
        "id": "t-1", "source": "test", "source_detail": "", "as_of": "2026-05-22",
        "hardware": "nvidia-h200-sxm", "n_gpus": "8", "tp": "8", "pp": "1",
        "model": "deepseek-v3", "precision": "fp8", "kv_precision": "fp8",
        "framework": "sglang", "framework_version": "0.5.12", "mode": "concurrency",
        "isl": "", "osl": "", "batch": "", "concurrency": "16", "request_rate": "inf",
        "context_len": "", "metric": "output_tok_s_total", "value": "1000", "unit": "tok/s",
        "notes": "client: InferenceX utils/bench_serving/benchmark_serving.py closed loop; "
        "random_input_len=1024; random_output_len=1024; random_range_ratio=0.8; 160 requests",
    }  # fmt: skip
    row.update(kw)
    return row


def test_closed_loop_rows_use_the_mean_lengths_of_the_client_rule():
    """InferenceX draws both lengths uniformly from [floor(0.8 L), L] = [819, 1024] for
    L = 1024: a mean of (819 + 1024) / 2 = 921.5 tokens. The predictor must equal the
    steady state at those means with 16 clients on the TP8 replica."""
    fn = closed_loop_predictor(_inferencex_row(), CAT)
    assert fn is not None
    sm = step_model(CAT.model("deepseek-v3"), CAT.gpu("nvidia-h200-sxm"), CAT.precision("fp8"),
                    "fp8", 8, 1, PRIOR, CAT)  # fmt: skip
    # the replayed draw of 160 requests (seed 0) has means near 921.5, not exactly
    got = fn(PRIOR)
    at_mean = closed_loop_throughput(sm, 921.5, 921.5, 16, 8192)
    assert got == pytest.approx(at_mean, rel=0.02)


@pytest.mark.parametrize(
    "change",
    [
        {"request_rate": "4"},  # open loop: not a closed loop
        {"metric": "ttft_ms_mean"},  # a TTFT at 16 clients per replica (fitted only <= 4)
        {"concurrency": ""},
        {"notes": "closed loop, lengths not stated"},  # no length rule
    ],
)
def test_rows_that_are_not_closed_loop_throughput_get_no_steady_predictor(change):
    assert closed_loop_predictor(_inferencex_row(**change), CAT) is None


def test_the_fit_takes_closed_loop_rows_and_can_leave_them_out():
    """A closed-loop row is a serving row (simulated in validation) whose steady state the
    fit uses; without the ``closed_loop`` kind the same rows leave nothing to fit."""
    import pandas as pd

    rows = prepare_rows(pd.DataFrame([_inferencex_row(), _inferencex_row(id="t-2",
                                      concurrency="64", value="3000")]), CAT)  # fmt: skip
    assert all(r.fit_kind == "serving" and not r.ok and r.steady is not None for r in rows)
    assert "closed_loop" in FITTED_KINDS
    prof = fit_profile(rows)
    assert prof.n_rows_fitted == 2
    from planner.errors import PlannerError

    with pytest.raises(PlannerError, match="no measurement row can be used"):
        fit_profile(rows, include_kinds=("offline",))
