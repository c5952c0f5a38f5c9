"""Issue 32, "Latency model": first-token terms outside the engine loop, fitted leave-one-
source-out on public TTFT rows (``planner.calibration.latency_fit.ttft_term`` /
``fit_ttft_term`` / ``ttft_term_loso``), and the prefill scale restricted to chosen engines
(``scale_for``). Every expected value is derived by hand in the test's docstring."""

from __future__ import annotations

import math

import pytest

from planner.calibration.latency_fit import (
    TTFT_TERM_GRIDS,
    fit_ttft_term,
    scale_for,
    ttft_term,
    ttft_term_loso,
)
from planner.catalog.latency import PrefillScale


def _r(src, m, p, i, engine="sglang", **kw):
    return {"source": src, "measured": m, "predicted": p, "as_of": "2026-01-01",
            "id": f"{src}-{i}", "metric": "ttft_ms_median", "engine": engine, **kw}  # fmt: skip


def test_ttft_term_forms_by_hand():
    """constant 20 on 100 ms -> 120; per_prompt_token 10 ms per 1k with 8,000 prompt tokens
    -> 100 + 10 x 8 = 180 (no prompt length: + 0); iterations 2 x ITL 15 ms with busy 1 ->
    130, busy 0 -> 100; ttft_factor 1.2 -> 120."""
    r = {"predicted": 100.0, "prompt_tokens": 8000.0, "itl_ms": 15.0, "busy": 1.0}
    assert ttft_term("constant", 20.0, r) == pytest.approx(120.0)
    assert ttft_term("per_prompt_token", 10.0, r) == pytest.approx(180.0)
    assert ttft_term("per_prompt_token", 10.0, {"predicted": 100.0}) == pytest.approx(100.0)
    assert ttft_term("iterations", 2.0, r) == pytest.approx(130.0)
    assert ttft_term("iterations", 2.0, {**r, "busy": 0.0}) == pytest.approx(100.0)
    assert ttft_term("ttft_factor", 1.2, r) == pytest.approx(120.0)
    with pytest.raises(ValueError, match="unknown TTFT term form"):
        ttft_term("quadratic", 1.0, r)


def test_every_grid_holds_the_no_term_value():
    """Each form's grid contains the value that leaves the prediction unchanged (0 added, or
    a factor of 1), so a fit can always say 'no term'."""
    r = {"predicted": 100.0, "prompt_tokens": 1000.0, "itl_ms": 10.0, "busy": 1.0}
    for form, grid in TTFT_TERM_GRIDS.items():
        assert any(ttft_term(form, v, r) == pytest.approx(100.0) for v in grid), form


def test_fit_ttft_term_constant_hand_derived():
    """Sources A and B, 6 rows each, measured = predicted + 40 ms: with 40 every error is 0,
    so the constant is 40. Without B, A's 6 rows (< 10 rows, one source) fit nothing. Rows
    dated before 2025-07 do not count: the same 12 rows dated 2025-03 fit nothing."""
    recs = [_r("A", 140.0, 100.0, i) for i in range(6)]
    recs += [_r("B", 240.0, 200.0, i) for i in range(6)]
    assert fit_ttft_term(recs, "constant") == 40.0
    assert fit_ttft_term(recs, "constant", exclude_source="B") is None
    old = [{**r, "as_of": "2025-03-01"} for r in recs]
    assert fit_ttft_term(old, "constant") is None


def test_fit_ttft_term_factor_picks_the_median_ratio():
    """Ratios measured / predicted 1.2 (7 rows) and 1.4 (5 rows) over 2 sources: |log error|
    at factor 1.2 is 0 for 7 of 12 rows, so its median is 0 and 1.2 wins over 1.25 / 1.3
    (whose medians are log(1.25/1.2) = 0.041 and more)."""
    recs = [_r("A", 120.0, 100.0, i) for i in range(7)]
    recs += [_r("B", 140.0, 100.0, i) for i in range(5)]
    assert fit_ttft_term(recs, "ttft_factor") == pytest.approx(1.2)


def test_ttft_term_loso_holds_each_source_out():
    """sglang rows: A and B 7 each, 40 ms above the prediction (240 vs 200), C 5 rows 100 ms
    above (300). Held out A: B's 7 rows and C's 5; at 40, 7 of the 12 errors are 0, so the
    6th and 7th sorted are 0 and the median is 0, while at 60 the 7 B errors are
    log(260/240) = 0.080: 40 wins (B alike). Held out C: A and B's 14 rows are all exact at
    40. So every sglang row gets 40: A and B are predicted exactly, C's stay 60 ms short
    (240 / 300 = 0.8), since no fold saw them. A trtllm row with no other trtllm rows keeps
    its prediction (too few rows: no fit)."""
    n = {"A": 7, "B": 7, "C": 5}
    recs = [_r(s, 300.0 if s == "C" else 240.0, 200.0, i) for s in "ABC" for i in range(n[s])]
    recs.append(_r("A", 500.0, 400.0, 99, engine="trtllm"))
    out = ttft_term_loso(recs, "constant")
    assert [v for _, v in out[:19]] == [40.0] * 19
    assert out[0][0] == pytest.approx(240.0) and out[7][0] == pytest.approx(240.0)
    assert math.isclose(out[14][0] / recs[14]["measured"], 0.8)
    assert out[19] == (pytest.approx(400.0), None)


def test_scale_for_only_chosen_engines_and_own_group():
    """sglang/mla 1.2 and mla over all engines 1.19: trtllm takes 1.19 by the family fallback,
    none without it; an engine outside ``engines`` takes none."""
    sc = (
        PrefillScale(framework="sglang", family="mla", scale=1.2, n_rows=10, n_sources=2),
        PrefillScale(framework=None, family="mla", scale=1.19, n_rows=20, n_sources=3),
    )
    assert scale_for(sc, "trtllm", "mla") == (1.19, "all engines/mla")
    assert scale_for(sc, "trtllm", "mla", fallback=False) == (1.0, "none")
    assert scale_for(sc, "sglang", "mla", fallback=False) == (1.2, "sglang/mla")
    assert scale_for(sc, "sglang", "mla", engines={"vllm"}) == (1.0, "none")
    assert scale_for(sc, "sglang", "mla", engines={"sglang"}) == (1.2, "sglang/mla")


@pytest.fixture(scope="module")
def lr():
    import importlib.util
    import sys

    from conftest import REPO_ROOT

    spec = importlib.util.spec_from_file_location(
        "latency_rows_terms", REPO_ROOT / "scripts" / "latency_rows.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules["latency_rows_terms"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_prompt_tokens_from_the_row(lr):
    """The row's isl (1,024); else InferenceX's random dataset, uniform between 0.8 x 8,192
    and 8,192: mean 8,192 x 1.8 / 2 = 7,372.8; range ratio unstated: 0, mean 1,000 x 1 / 2 =
    500; nothing stated: NaN."""
    assert lr._prompt_tokens({"isl": "1024", "notes": ""}) == 1024.0
    notes = "random_input_len=8192; random_output_len=1024; random_range_ratio=0.8; 80 requests"
    assert lr._prompt_tokens({"isl": "", "notes": notes}) == pytest.approx(7372.8)
    assert lr._prompt_tokens({"isl": "", "notes": "--random-input-len 1000"}) == 500.0
    assert math.isnan(lr._prompt_tokens({"isl": "", "notes": "sharegpt"}))


def _row(src, i, m, p, engine="sglang", vendor="nvidia", **kw):
    return {**_r(src, m, p, i, engine=engine), "vendor": vendor, "metric_class": "ttft",
            "err_pct": 100 * (p / m - 1), "family": "mla", "mode": "concurrency",
            "concurrency": 4, "prompt_tokens": 1000.0, "itl_ms": 10.0, "busy": 1.0,
            "tpot_ratio_same_run": 0.8, **kw}  # fmt: skip


def test_ttft_terms_table_and_where_table(lr):
    """sglang rows measured 120 vs predicted 100 (error -16.7%). Two sources A and B, 6 rows
    each: a fold keeps one source (fewer than 2), so no term is fitted and every form stays
    at MdAPE 16.7%. Three sources, 6 rows each: a fold keeps 12 rows of 2 sources, and the
    constant 20 ms, the factor 1.2, 20 ms per 1k prompt tokens x 1,000 tokens and 2
    iterations of 10 ms each make every row exact (MdAPE 0). The where table puts the 18
    rows (dated 2026) in one cell: 1k prompts, 1-4 clients, ratio 1.2, TPOT ratio 0.8."""
    few = [_row(s, i, 120.0, 100.0) for s in "AB" for i in range(6)]
    t = lr.ttft_terms_table(few)
    assert t.loc["constant", "mdape_pct"] == pytest.approx(100 / 6)
    many = [_row(s, i, 120.0, 100.0) for s in "ABC" for i in range(6)]
    t = lr.ttft_terms_table(many)
    assert t.loc["none", "bias_pct"] == pytest.approx(-100 / 6)
    for form in ("constant", "per_prompt_token", "iterations", "ttft_factor"):
        assert t.loc[form, "mdape_pct"] == pytest.approx(0.0, abs=1e-9), form
    w = lr.where_table(many).reset_index()
    assert len(w) == 1
    assert (w.loc[0, "isl_band"], w.loc[0, "conc_band"], w.loc[0, "n"]) == ("<1.5k", "1-4", 18)
    assert w.loc[0, "ttft_ratio"] == pytest.approx(1.2)
    assert w.loc[0, "tpot_ratio_same_run"] == pytest.approx(0.8)


def test_burst_wait_hand_derived():
    """Window 1.0 s, 2.4 requests/s, prefill 0.2 s: 2.4 x (1.0 - 0.2) = 1.92 arrivals in the
    window beyond one prefill, half of them ahead on average: 0.96 x 0.2 s = 192 ms mean;
    the P99 takes all 1.92: 384 ms. Half busy: 96 ms mean. A window no longer than one
    prefill, no arrivals or an idle engine (busy 0, P99 0) add nothing."""
    from planner.benchmarks.scheduler_waits import burst_wait

    mean, p99 = burst_wait(1.0, 2.4, 0.2)
    assert mean == pytest.approx(192.0) and p99 == pytest.approx(384.0)
    assert burst_wait(1.0, 2.4, 0.2, busy=0.5)[0] == pytest.approx(96.0)
    assert burst_wait(0.2, 2.4, 0.2) == (0.0, 0.0)
    assert burst_wait(1.0, 0.0, 0.2) == (0.0, 0.0)
    assert burst_wait(1.0, 2.4, 0.2, busy=0.0) == (0.0, 0.0)


def test_gate_describe():
    """The words a prediction's note uses for each gate; no gate: empty."""
    from planner.benchmarks.scheduler_waits import admission_gate

    g = admission_gate("--scheduler-recv-interval 10 --num-continuous-decode-steps 4")
    assert g.describe() == "4 decode steps per schedule, receives every 10 iterations"
    assert admission_gate("").describe() == ""
    g = admission_gate("batch_wait_timeout_iters: 20, batch_wait_max_tokens_ratio: 0.75")
    assert g.describe() == "batch wait 20 iterations / 0.75 of the token budget"


def test_prompt_slope_table_hand_derived(lr):
    """Four closed-loop rows at 4 clients, prompts of 1,000 and 8,000 tokens: measured TTFT
    100 + 30 ms per 1k tokens (130, 340 ms), predicted 50 + 40 ms per 1k (90, 370 ms). The
    line through them gives a = 100 / 50 ms, b = 30 / 40 ms per 1k, slope ratio 0.75. A row
    at 16 clients and a group with one prompt length are left out."""
    pts = [(1000.0, 130.0, 90.0), (8000.0, 340.0, 370.0)] * 2
    rows = [_row("A", i, m, p, prompt_tokens=n, gpu="nvidia-h200-sxm", precision="fp8", tp=8)
            for i, (n, m, p) in enumerate(pts)]  # fmt: skip
    rows.append(_row("A", 9, 999.0, 1.0, prompt_tokens=4000.0, concurrency=16,
                     gpu="nvidia-h200-sxm", precision="fp8", tp=8))  # fmt: skip
    rows.append(_row("A", 10, 100.0, 90.0, gpu="amd-mi300x", precision="fp8", tp=8))
    t = lr.prompt_slope_table(rows)
    assert len(t) == 1
    r = t.iloc[0]
    assert r["n"] == 4
    assert r["measured_a_ms"] == pytest.approx(100.0)
    assert r["predicted_a_ms"] == pytest.approx(50.0)
    assert r["measured_b_ms_per_k"] == pytest.approx(30.0)
    assert r["predicted_b_ms_per_k"] == pytest.approx(40.0)
    assert r["slope_ratio"] == pytest.approx(0.75)


def test_comm_override_touches_only_the_rows_it_names(lr):
    """The --mla-comm-eff what-if: an MLA row of SGLang on NVIDIA takes comm_eff 0.68; the
    same row on AMD, a TensorRT-LLM row and a dense row keep the fitted 0.21; vendor "all"
    reaches AMD; ``any_model`` (``--comm-any-model``) reaches the dense row, not another
    engine's; no spec changes nothing."""
    from planner.catalog import PRIOR

    p = PRIOR.with_(comm_eff=0.21)
    spec = (0.68, frozenset({"sglang"}), "nvidia")
    assert lr.comm_override(p, "sglang", "nvidia", True, spec).comm_eff == 0.68
    assert lr.comm_override(p, "sglang", "amd", True, spec).comm_eff == 0.21
    assert lr.comm_override(p, "trtllm", "nvidia", True, spec).comm_eff == 0.21
    assert lr.comm_override(p, "sglang", "nvidia", False, spec).comm_eff == 0.21
    assert lr.comm_override(p, "sglang", "amd", True, (0.68, spec[1], "all")).comm_eff == 0.68
    assert lr.comm_override(p, "sglang", "nvidia", True, None) is p
    every = (0.68, frozenset({"vllm"}), "all", True)
    assert lr.comm_override(p, "vllm", "nvidia", False, every).comm_eff == 0.68
    assert lr.comm_override(p, "sglang", "nvidia", False, every).comm_eff == 0.21
    assert lr.comm_override(p, "vllm", "nvidia", False, (*every[:3], False)).comm_eff == 0.21
