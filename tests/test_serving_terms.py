"""The serving terms of an iteration (issue 10): host time per iteration and per sequence,
the longest-sequence ("straggler") attention term, attention over a cached prefix, and their
fit on iteration logs (planner.calibration.iterations)."""

from __future__ import annotations

import dataclasses
import gzip

import numpy as np
import pandas as pd
import pytest

from planner.calibration.iterations import (
    FIT,
    ITERATION_COLUMNS,
    fit_iterations,
    read_iteration_log,
)
from planner.catalog import PRIOR, load_catalog
from planner.catalog.catalog import DATA_DIR
from planner.engine import step_model
from planner.engine._scalar import straggler_time_scalar
from planner.errors import PlannerError
from planner.serving import build_replica, unloaded_latency
from planner.workload import preset

H200 = "nvidia-h200-sxm"
M8B = "llama-3.1-8b"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_straggler_time_hand_derived(catalog):
    # Llama-3.1-8B: 32 layers, 8 KV heads x 128 x 2 (K, V) x 2 B = 4096 B per token and layer,
    # 512 B per KV head: the longest sequence's program reads 32 x 512 = 16,384 B per token
    sm = step_model(M8B, H200, params=PRIOR.with_(attn_seq_bw_bytes_s=25e9), catalog=catalog)
    # 128 decoders, mean context 600 (sum 76,800), longest 4,600: excess 4,000 tokens;
    # work items 128 x 8 = 1024 >= 528: no split -> 4000 x 16384 / 25e9 = 2.62144 ms
    assert sm.straggler_time(128, 4600, 76_800) == pytest.approx(2.62144e-3, rel=1e-12)
    # 8 decoders (64 items): splits = 528 / 64 = 8.25 -> 2.62144 ms / 8.25
    assert sm.straggler_time(8, 4600, 8 * 600) == pytest.approx(2.62144e-3 / 8.25, rel=1e-12)
    # equal lengths: nothing; no decoders: nothing
    assert sm.straggler_time(64, 600, 64 * 600) == 0.0
    assert sm.straggler_time(0, 0, 0) == 0.0
    # the scalar twin (the simulator's) agrees
    for n, mx, s in [(128, 4600, 76_800), (8, 4600, 4800), (3, 10, 30)]:
        assert straggler_time_scalar(sm._straggler_coeffs, n, mx, s) == pytest.approx(
            sm.straggler_time(n, mx, s), rel=1e-12
        )
    # the prior (a balanced kernel) has no straggler term
    assert step_model(M8B, H200, catalog=catalog).straggler_time(128, 4600, 76_800) == 0.0


def test_prefix_attention_efficiency_hand_derived(catalog):
    # one chunk of 2,048 prompt tokens after 4,096 cached ones: 2048 x 4096 = 8,388,608
    # prefix pairs; 8B attention FLOPs per pair and layer = 2 x 32 heads x (128 + 128) = 16,384;
    # 32 layers -> 4.398e12 FLOPs at prefix_attn_eff instead of attn_eff (989 TFLOP/s dense)
    n, pos = 2048, 4096
    args = (n, 1, 1, pos + n, n * pos + n * (n + 1) / 2, 0.0, 0.0, n * pos)
    base = step_model(M8B, H200, params=PRIOR.with_(attn_eff=0.3), catalog=catalog)
    slow = dataclasses.replace(base, params=base.params.with_(prefix_attn_eff=0.1))
    flops = 16_384 * 32 * n * pos
    want = flops / 989e12 * (1 / 0.1 - 1 / 0.3)
    got = slow.step(*args).t_attn_s - base.step(*args).t_attn_s
    assert got == pytest.approx(want, rel=1e-9)
    assert slow.step_time(*args) == pytest.approx(slow.step(*args).time_s, rel=1e-12)
    # prefix_attn_eff = 0 means "the same as attn_eff"
    same = dataclasses.replace(base, params=base.params.with_(prefix_attn_eff=0.3))
    assert same.step(*args).time_s == pytest.approx(base.step(*args).time_s, rel=1e-12)


def test_host_time_per_sequence_adds_to_unloaded_latency(catalog):
    # a lone request: every iteration has one sequence, so TPOT grows by exactly
    # sched_seq_overhead_s x 1 and TTFT by that per prefill chunk (an engine whose GPU waits
    # for the host: vLLM before 0.14's async scheduling)
    wl = preset("chat")
    p1 = PRIOR.with_(sched_seq_overhead_s=1e-4)
    r0 = build_replica(M8B, H200, "bf16", "vllm", params=PRIOR, catalog=catalog, release="0.13.0")
    r1 = build_replica(M8B, H200, "bf16", "vllm", params=p1, catalog=catalog, release="0.13.0")
    assert not r0.engine.host_overlap
    a = unloaded_latency(r0, wl, n=50)
    b = unloaded_latency(r1, wl, n=50)
    ok = ~np.isnan(a["tpot_s"])
    assert np.allclose(b["tpot_s"][ok] - a["tpot_s"][ok], 1e-4, rtol=0, atol=1e-12)
    assert np.all(b["ttft_s"] - a["ttft_s"] >= 1e-4 - 1e-12)
    # overlapped (the current release): 0.1 ms of host hides behind a decode step of an 8B
    # model (16 GB of weights, > 3 ms at 4.8 TB/s): TPOT does not move
    r2 = build_replica(M8B, H200, "bf16", "vllm", params=p1, catalog=catalog)
    assert r2.engine.host_overlap
    c = unloaded_latency(r2, wl, n=50)
    r3 = build_replica(M8B, H200, "bf16", "vllm", params=PRIOR, catalog=catalog)
    assert np.array_equal(c["tpot_s"], unloaded_latency(r3, wl, n=50)["tpot_s"], equal_nan=True)


def test_simulated_latency_grows_with_the_straggler_term(catalog):
    """Property: a slower attention program (smaller attn_seq_bw) never speeds a run up, and
    the simulator's time per output token grows with it."""
    from planner.serving import simulate

    wl = preset("chat")
    tpot = []
    for bw in (0.0, 1e11, 2.5e10, 5e9):
        rep = build_replica(
            M8B,
            H200,
            "bf16",
            "vllm",
            params=PRIOR.with_(attn_seq_bw_bytes_s=bw),
            catalog=catalog,
        )
        s = simulate(rep, wl, n_requests=600, rate_rps=20.0, rng=np.random.default_rng(1)).summary()
        tpot.append(s["tpot_p50_s"])
    assert all(b >= a - 1e-12 for a, b in zip(tpot, tpot[1:], strict=False)), tpot
    assert tpot[-1] > tpot[0] * 1.05


# ----------------------------------------------------------------------------- the fit
TRUE = {
    "sched_overhead_s": 4e-4,
    "sched_seq_overhead_s": 1e-5,
    "serving_eager_layer_s": 4.5e-4,
    "attn_seq_bw_bytes_s": 2.5e10,
    "attn_split_items": 528.0,
    "prefix_attn_eff": 0.1,
}


def synthetic_log(catalog, n=3000, seed=0) -> pd.DataFrame:
    """Iterations of random composition whose wall time is the iteration model's with TRUE
    (the public functions: StepModel.step, straggler_time, the host terms)."""
    rng = np.random.default_rng(seed)
    base = PRIOR.with_(attn_eff=0.3)
    # the serving loop's eager dispatch is the step model's eager_layer_s in its replica
    params = base.with_(**TRUE).with_(eager_layer_s=TRUE["serving_eager_layer_s"])
    sm = step_model(M8B, H200, params=params, catalog=catalog)
    n_dec = rng.integers(0, 257, n)
    eager = rng.random(n) < 0.3
    n_pf = np.where(eager, rng.integers(1, 3, n), 0)
    n_dec = np.where(n_dec + n_pf == 0, 1, n_dec)
    pf_tok = np.where(eager, rng.integers(64, 2049, n), 0)
    cached = np.where(eager & (rng.random(n) < 0.5), rng.integers(1, 8000, n), 0)
    mean = rng.integers(100, 3000, n)
    dec_ctx = n_dec * mean
    dec_max = mean + rng.integers(0, 6000, n) * (n_dec > 1)
    pf_pairs = pf_tok * cached / np.maximum(n_pf, 1) + pf_tok * (pf_tok + 1) / 2
    pre_pairs = pf_tok * cached / np.maximum(n_pf, 1)
    S = n_dec + n_pf
    T = n_dec + pf_tok
    logits = n_dec + n_pf
    b = sm.step(T, S, logits, dec_ctx + n_dec + cached + pf_tok, dec_ctx + n_dec + pf_pairs,
                0.0, 0.0, pre_pairs)  # fmt: skip
    wall = (
        np.asarray(b.time_s)
        + sm.straggler_time(n_dec, dec_max, dec_ctx)
        + TRUE["sched_overhead_s"]
        + TRUE["sched_seq_overhead_s"] * S
    )
    return pd.DataFrame(
        {
            "source": "test",
            "as_of": "2026-12-01",
            "hardware": H200,
            "framework": "pytorch",
            "model": M8B,
            "precision": "bf16",
            "kv_precision": "bf16",
            "scenario": "synthetic",
            "rate": "1",
            "sched_s": 0.0,
            "prep_launch_s": wall,
            "sync_wait_s": 0.0,
            "book_s": 0.0,
            "graph_batch": np.where(eager, 0, n_dec),
            "n_decode": n_dec,
            "n_prefill_seqs": n_pf,
            "prefill_tokens": pf_tok,
            "decode_ctx_tokens": dec_ctx,
            "prefill_cached_tokens": cached,
            "logits": logits,
            "decode_ctx_max": dec_max,
            "prefill_pairs": pf_pairs,
            "prefill_prefix_pairs": pre_pairs,
        }
    )


def test_fit_iterations_round_trip(catalog):
    """Calibration round trip: a log made by the iteration model with known serving terms is
    fitted back to them."""
    log = synthetic_log(catalog)
    fit = fit_iterations(log, lambda *_: PRIOR.with_(attn_eff=0.3), catalog)
    assert set(fit.params) == set(FIT)
    for k, v in TRUE.items():
        assert fit.params[k] == pytest.approx(v, rel=0.02), k
    assert fit.mdape < 1e-3
    assert fit.mdape_before > 0.05  # the step model alone misses these iterations
    assert fit.n_iterations == len(log) and fit.models == (M8B,)


def test_read_iteration_log_checks(tmp_path, catalog):
    log = synthetic_log(catalog, n=20)
    p = tmp_path / "it.csv.gz"
    with gzip.open(p, "wt") as f:
        log.to_csv(f, index=False)
    back = read_iteration_log(p)
    assert len(back) == 20 and list(ITERATION_COLUMNS) == [
        c for c in back.columns if c in ITERATION_COLUMNS
    ]
    bad = tmp_path / "bad.csv"
    log.drop(columns=["decode_ctx_max"]).to_csv(bad, index=False)
    with pytest.raises(PlannerError, match="missing columns \\['decode_ctx_max'\\]"):
        read_iteration_log(bad)
    neg = log.copy()
    neg.loc[3, "sched_s"] = -1.0
    neg.to_csv(bad, index=False)
    with pytest.raises(PlannerError, match="row 5: sched_s"):
        read_iteration_log(bad)
    nosrc = log.copy()
    nosrc.loc[0, "source"] = ""
    nosrc.to_csv(bad, index=False)
    with pytest.raises(PlannerError, match="row 2: empty source"):
        read_iteration_log(bad)
    with pytest.raises(PlannerError, match="not found"):
        read_iteration_log(tmp_path / "nope.csv")
    mixed = pd.concat([log, log.assign(framework="vllm")])
    with pytest.raises(PlannerError, match="one framework on one GPU"):
        fit_iterations(mixed, lambda *_: PRIOR, catalog)


def test_bundled_profile_has_the_serving_terms_of_the_reference_engine(catalog):
    """The bundled profile's pytorch/H200 node carries serving terms fitted on the committed
    iteration logs; frameworks without logs keep the prior (no host or straggler terms)."""
    from planner.catalog import resolve_params

    p, prov = resolve_params(H200, "pytorch", "bf16", catalog=catalog)
    assert "serving terms fit on iteration logs" in prov
    # physically plausible: a few hundred us per iteration, ~10 us per sequence, the split
    # threshold of bench/ref_engine.py's decode_splits (528 work items) within a factor 1.5
    assert 1e-4 < p.sched_overhead_s < 2e-3
    assert 2e-6 < p.sched_seq_overhead_s < 5e-5
    assert 5e9 < p.attn_seq_bw_bytes_s < 1e11
    assert 350 < p.attn_split_items < 800
    assert 0 < p.prefix_attn_eff < p.attn_eff
    # step rows keep the dispatch of the step sweep's host; the serving host's is separate and
    # the replica of a serving simulation uses it
    assert p.serving_eager_layer_s > p.eager_layer_s > 0
    rep = build_replica(M8B, H200, "bf16", "pytorch", params=p, catalog=catalog)
    assert rep.sm.params.eager_layer_s == p.serving_eager_layer_s
    v, _ = resolve_params(H200, "vllm", "bf16", catalog=catalog)
    assert v.sched_seq_overhead_s == 0.0 and v.attn_seq_bw_bytes_s == 0.0
    assert v.prefix_attn_eff == 0.0


# ------------------------------------------------------------ the measured serving runs
# (the 1B's chat runs are left out: their TTFT p50 is 19 % low even in sample, a known miss of
# the host terms on a model whose iterations are mostly host time; docs/calibration.md)
RUNS = [("llama-3.2-1b", "rag", "4"),
        ("llama-3.1-8b", "chat", "15"), ("llama-3.1-8b", "rag", "2.5"),
        ("qwen2.5-14b", "chat", "10"), ("qwen2.5-14b", "rag", "1")]  # fmt: skip


@pytest.mark.parametrize("model,scenario,rate", RUNS)
def test_simulator_matches_the_reference_engine_serving_runs(catalog, model, scenario, rate):
    """Measured on the H200 (data/benchmarks/reference_h200_serving.csv, runs below 60 % of
    saturation) against the simulator with the bundled profile on the same trace and engine
    settings: throughput within 5 %, TPOT p50 within 10 %, TTFT p50 and E2E p99 within 15 %
    (the targets of issue 10; the serving summaries are never fitted, the serving terms are
    fitted on the iteration log of the same runs, see docs/accuracy.md for out of sample)."""
    import re

    from planner.catalog import resolve_params
    from planner.serving import simulate
    from planner.workload import Workload

    root = DATA_DIR.parent
    df = pd.read_csv(DATA_DIR / "benchmarks" / "reference_h200_serving.csv")
    trace = f"bench/traces/{scenario}_rate{rate}.csv"
    run = df[(df.model == model) & df.notes.str.contains(re.escape(trace))]
    meas = dict(zip(run.metric, run.value, strict=True))
    params, prov = resolve_params(H200, "pytorch", "bf16", catalog=catalog)
    rep = build_replica(
        model, H200, "bf16", "pytorch", params=params, params_source=prov, catalog=catalog,
        max_num_seqs=256, max_num_batched_tokens=2048, block_size=16, prefix_caching=False,
        chunked_prefill=True,
    )  # fmt: skip
    wl = Workload.model_validate(
        {
            "traffic": {"arrival": "trace", "trace_path": str(root / trace)},
            "input_tokens": {"kind": "trace"},
            "output_tokens": {"kind": "trace"},
        }
    )
    n = len(pd.read_csv(root / trace))
    s = simulate(rep, wl, n_requests=n, rate_rps=None).summary()
    assert s["output_tok_s"] == pytest.approx(meas["output_tok_s_total"], rel=0.05)
    assert s["tpot_p50_s"] * 1e3 == pytest.approx(meas["tpot_ms_median"], rel=0.10)
    assert s["ttft_p50_s"] * 1e3 == pytest.approx(meas["ttft_ms_median"], rel=0.15)
    assert s["e2e_p99_s"] * 1e3 == pytest.approx(meas["e2e_ms_p99"], rel=0.15)


def test_cli_calibrate_with_an_iteration_log(tmp_path, catalog, capsys):
    """`planner calibrate STEPS.csv --iterations LOG` writes a profile whose framework x GPU
    nodes carry the serving terms; a log with missing columns is one clear error."""
    from planner.calibration import load_profile
    from planner.cli import main

    log = tmp_path / "it.csv.gz"
    with gzip.open(log, "wt") as f:
        synthetic_log(catalog, n=400).to_csv(f, index=False)
    out = tmp_path / "p.yaml"
    steps = DATA_DIR / "benchmarks" / "reference_h200.csv"
    rc = main(["calibrate", str(steps), "--iterations", str(log), "-o", str(out)])
    assert rc == 0
    prof = load_profile(out)
    fitted = [n for n in prof.nodes if n.serving_fit]
    assert fitted and all(n.framework == "pytorch" for n in fitted)
    assert "400 iterations of 1 serving runs" in fitted[0].serving_fit
    assert any(f.endswith("it.csv.gz") for f in prof.data_files)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    assert main(["calibrate", str(steps), "--iterations", str(bad)]) == 2
    assert "missing columns" in capsys.readouterr().err
