"""The finite SA-Bench run of InferenceX's multi-node rows (planner.benchmarks.finite_run)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from planner.benchmarks import finite_run
from planner.benchmarks.finite_run import applies, drain_factor
from planner.benchmarks.random_lengths import inferencex_random_bounds

HISTORY = "data/benchmarks/public_inferencex_history.csv"


def test_switch_is_on_and_reads_only_inferencex_multi_node_rows(monkeypatch):
    """On (held out, issue 30 throughput 16.5 -> 16.1 %; docs/changes/2026-12-10/i30fast.md)."""
    assert finite_run.APPLY is True
    note = "InferenceX multi-node fixed-seq-len sweep, framework 'dynamo-trt'"
    assert applies(note)
    monkeypatch.setattr(finite_run, "APPLY", False)
    assert not applies(note)
    monkeypatch.setattr(finite_run, "APPLY", True)
    assert not applies("InferenceX single-node sweep")
    assert not applies("dstack benchmark")


def test_equal_lengths_have_no_drain():
    """10 C requests of one length on C clients: ten rounds that end together, makespan
    = 10 x (TTFT + (L - 1) TPOT), so the run's rate is the steady C x L / duration: 1."""
    assert drain_factor(64, (1024, 1024), 0.5, 0.02) == pytest.approx(1.0, abs=1e-12)


def test_one_client_has_no_drain():
    """C = 1: the makespan is the sum of the durations, so sum L / sum d = mean L / mean d."""
    assert drain_factor(1, (819, 1024), 0.2, 0.01) == pytest.approx(1.0, abs=1e-12)


def test_drain_grows_with_the_clients_and_stays_below_one():
    """U[819, 1024] outputs (range ratio 0.8 of 1,024): the last round's spread is a larger
    share of the run at many clients (their longest answer sets the end)."""
    f = [drain_factor(c, (819, 1024), 0.3, 0.02) for c in (8, 64, 512, 4096)]
    assert all(0.9 < v < 1.0 for v in f)
    assert f[-1] < f[0]


def _runs():
    """InferenceX disaggregated runs of the history file with output throughput, median
    E2E / TTFT / TPOT: (concurrency, output bounds, TTFT [s], TPOT [s], measured ratio)."""
    b = pd.read_csv(HISTORY, dtype=str, keep_default_na=False)
    b = b[b.notes.str.contains("disaggregated prefill/decode") & (b["mode"] == "concurrency")]
    b["key"] = b.notes.str.replace(r"^.*?InferenceX multi-node", "", regex=True).str.replace(
        r"; image.*$", "", regex=True
    )
    out = []
    for _, g in b.groupby(["hardware", "framework", "concurrency", "key"]):
        v = dict(zip(g.metric, g.value.astype(float), strict=False))
        m = re.search(
            r"nominal input \d+ / output (\d+) tokens, range ratio ([0-9.]+)", g.notes.iloc[0]
        )
        need = ("output_tok_s_total", "e2e_ms_median", "ttft_ms_median", "tpot_ms_median")
        if not m or not all(n in v for n in need):
            continue
        osl, rr = int(m[1]), float(m[2])
        c = float(g.concurrency.iloc[0])
        lo, hi = inferencex_random_bounds(osl, rr)
        little = v["output_tok_s_total"] * v["e2e_ms_median"] / 1e3 / (c * (lo + hi) / 2)
        out.append((c, (lo, hi), v["ttft_ms_median"] / 1e3, v["tpot_ms_median"] / 1e3, little))
    return out


def test_measured_runs_lose_what_the_drain_predicts():
    """Published: InferenceX's disaggregated runs deliver less than Little's law at their
    median E2E (output tok/s x median E2E / (C x mean output) = 0.951 median over the history
    file's 303 runs; docs/changes/2026-12-10/i30fast.md). The finite run at each run's measured TTFT and TPOT
    gives 0.962: the medians agree within 2.5 %, and both lie below 1."""
    runs = _runs()
    assert len(runs) >= 100
    meas = np.median([r[4] for r in runs])
    pred = np.median([drain_factor(*r[:4]) for r in runs])
    assert meas < 0.97 and pred < 0.98
    assert pred == pytest.approx(meas, rel=0.025)


def test_disagg_row_throughput_takes_the_drain_and_tpot_does_not(monkeypatch):
    """ixm-1351 (B200 TensorRT-LLM 1P(DEP4) + 2D(DEP8), 1k/1k, 1,214 clients): with the switch
    on, the throughput is the steady prediction times the drain of 12,140 prompts (0.9-1.0,
    the note says it), the median TPOT the same."""
    from planner.benchmarks.disagg_rows import predict_disagg_row
    from planner.benchmarks.io import read_rows
    from planner.catalog.catalog import load_catalog

    cat = load_catalog()
    row = {r["id"]: r for r in read_rows("data/benchmarks/public_inferencex.csv")[0]}["ixm-1351"]
    tpot = dict(row, metric="tpot_ms_median")
    monkeypatch.setattr(finite_run, "APPLY", False)
    off, off_t = predict_disagg_row(row, cat), predict_disagg_row(tpot, cat)
    monkeypatch.setattr(finite_run, "APPLY", True)
    on, on_t = predict_disagg_row(row, cat), predict_disagg_row(tpot, cat)
    assert 0.9 < on[0] / off[0] < 1.0
    assert "finite run of 10 C" in on[1] and "finite run" not in off[1]
    assert on_t[0] == off_t[0]


# ---- the fit's closed-loop rows (finite_run.CLOSED_LOOP_FIT, step_rows.closed_loop_predictor)


def test_closed_loop_fit_switch_is_off():
    """Off: held out it did not pass the brief's rule (changes/s14-ixagg.md)."""
    assert finite_run.CLOSED_LOOP_FIT is False


def test_one_client_runs_at_its_steady_rate():
    """C = 1: makespan = sum of the durations, so (sum L / sum d) / (mean L / mean d) = 1."""
    lens = np.array([5, 300, 17, 1024])
    dur = 0.2 + (lens - 1) * 0.01
    assert finite_run.run_over_steady(1, lens, dur) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(
    "clients, n, expected",
    [
        (16, 160, 1.0),  # ten full rounds
        (4, 5, 5 / 8),  # two rounds, the second with one request: (C + 1) / (2 C)
        (64, 500, 500 / 512),  # dstack: 500 prompts at 64 clients, ceil(500 / 64) = 8 rounds
        (16, 100, 100 / 112),  # ceil(100 / 16) = 7 rounds
    ],
)
def test_equal_requests_run_in_rounds(clients, n, expected):
    """N requests of one length L and one duration d on C clients: ceil(N / C) rounds that
    end together, makespan ceil(N / C) d; the run's N L / makespan over the steady C L / d is
    N / (C ceil(N / C))."""
    lens = np.full(n, 800)
    dur = np.full(n, 0.4 + 799 * 0.02)
    assert finite_run.run_over_steady(clients, lens, dur) == pytest.approx(expected, rel=1e-12)


def test_closed_loop_factor_on_a_hand_case():
    """C = 2, outputs [1, 5, 1, 1], TTFT = TPOT (r = 1, a grid point: log 1 = 0): durations
    r + L - 1 = [1, 5, 1, 1] TPOTs. Client A takes 1 (ends at 1), B takes 5 (ends at 5); A
    takes the third (ends at 2) and the fourth (ends at 3): makespan 5. Run: 8 / 5 = 1.6
    tokens per TPOT; steady: 2 x mean L / mean d = 2 x 2 / 2 = 2; factor 0.8."""
    f = finite_run.closed_loop_factor(2, np.array([1, 5, 1, 1]))
    assert f(0.01, 0.01) == pytest.approx(0.8, rel=1e-12)
    # between grid points: linear in log r between the two simulated neighbours
    step = finite_run.RATIO_STEP_LOG
    lo = finite_run.run_over_steady(
        2, np.array([1, 5, 1, 1]), np.exp(step) + np.array([0, 4, 0, 0])
    )
    hi = finite_run.run_over_steady(
        2, np.array([1, 5, 1, 1]), np.exp(2 * step) + np.array([0, 4, 0, 0])
    )
    got = f(np.exp(1.5 * step) * 0.01, 0.01)
    assert got == pytest.approx((lo + hi) / 2, rel=1e-9)


def _fixed_row(**kw):
    row = {
        "id": "t-1", "source": "test", "source_detail": "", "as_of": "2026-05-22",
        "hardware": "nvidia-h200-sxm", "n_gpus": "8", "tp": "8", "pp": "1",
        "model": "deepseek-v3", "precision": "fp8", "kv_precision": "fp8",
        "framework": "sglang", "framework_version": "0.5.12", "mode": "concurrency",
        "isl": "1024", "osl": "1024", "batch": "", "concurrency": "16", "request_rate": "inf",
        "context_len": "", "metric": "output_tok_s_total", "value": "1000", "unit": "tok/s",
        "notes": "closed loop, fixed lengths; 100 requests",
    }  # fmt: skip
    row.update(kw)
    return row


def test_the_fit_scales_a_closed_loop_row_by_its_finite_run_when_on(monkeypatch):
    """Fixed 1k/1k, 100 requests from 16 clients on one TP8 replica: every request lasts
    the same, so the run is ceil(100 / 16) = 7 rounds and the finite run gives
    100 / (16 x 7) = 0.892857 of the steady state. Off, or with no stated prompt count, the
    fit's predictor is the steady state."""
    from planner.benchmarks.step_rows import closed_loop_predictor
    from planner.catalog import PRIOR, load_catalog

    cat = load_catalog()
    monkeypatch.setattr(finite_run, "CLOSED_LOOP_FIT", False)
    off = closed_loop_predictor(_fixed_row(), cat)(PRIOR)
    monkeypatch.setattr(finite_run, "CLOSED_LOOP_FIT", True)
    on = closed_loop_predictor(_fixed_row(), cat)(PRIOR)
    assert on / off == pytest.approx(100 / 112, rel=1e-9)
    no_count = closed_loop_predictor(_fixed_row(notes="closed loop, fixed lengths"), cat)(PRIOR)
    assert no_count == pytest.approx(off, rel=1e-12)
