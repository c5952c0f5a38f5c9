"""vLLM's eager mode read as CUDA graphs off (issue 32; changes/s8-vllmlat.md).

A vLLM engine started with ``enforce_eager`` (``--enforce-eager``) captures no CUDA / HIP
graphs, so every step, decode-only ones included, is dispatched from the host. The rows that
say so: AMD's MLPerf vLLM harnesses (v4.1 Offline, every v5.1 scenario) and dstack's
Llama-3.1-405B FP8 runs on 8 MI300X (vLLM 0.6.4 ROCm, ``--enforce-eager``). The MLPerf v4.1
Dell MI300X Server rows quote the *Offline* script's ``--enforce-eager`` for their precision;
their own Server harness keeps ``enforce_eager`` False, so they carry ``CUDA graphs on``.
"""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.benchmarks.schema import graphs_off
from planner.benchmarks.step_rows import row_predictor
from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.engine.graphs import NO_GRAPH_MAX_SEQS, without_graphs
from planner.engine.step import step_model

ROOT = Path(__file__).resolve().parents[1]
DELL_V41_SERVER = (
    "inference_results_v4.1 @ 198fc46799b3 closed/Dell/results/XE9680_MI300X_192GBx8/"
    "llama2-70b-99/Server/"
)


def _rows():
    out = []
    for path in sorted((ROOT / "data" / "benchmarks").glob("public*.csv")):
        with path.open(newline="") as fh:
            out.extend(csv.DictReader(fh))
    return out


@pytest.mark.parametrize(
    "notes, off",
    [
        ("num_scheduler_steps 11, enforce_eager; VLLM_...", True),  # AMD MLPerf v5.1 README
        ("--tensor-parallel-size 8 --enforce-eager --num-scheduler-step 1", True),  # dstack
        ("LLM(model=..., enforce_eager=True)", True),
        ("compilation_config={'cudagraph_mode': 'NONE'}", True),
        ("enforce_eager=False", False),
        ("enforce_eager: bool = False", False),
        ("--no-enforce-eager", False),
        ("enforce_eagerness", False),  # a whole key only
        ("compilation_config={'level': 0}", False),  # V1 full graphs need no compilation
        ("cudagraph_mode FULL_AND_PIECEWISE", False),
        ("--enforce-eager (the Offline script); CUDA graphs on (the Server run)", False),
        ("CUDA graphs off", True),
        ("", False),
    ],
)
def test_graphs_off_reads_vllm_eager_mode(notes, off):
    assert graphs_off(notes) is off


def test_which_rows_are_eager():
    """Every row quoting vLLM's eager flag is graphs-off except the three Dell v4.1 Server
    rows, which carry the Server harness's own setting; all of them are AMD vLLM rows:
    MLPerf v4.1 Offline (4), MLPerf v5.1 (25: AMD and partners' README engine settings) and
    dstack's Llama-3.1-405B on MI300X (19)."""
    eager_flag = [r for r in _rows() if "enforce" in r["notes"] and "eager" in r["notes"]]
    dell = [r for r in eager_flag if DELL_V41_SERVER in r["source_detail"]]
    assert sorted(r["id"] for r in dell) == ["mlp41-0057", "mlp41-0058", "mlp41-0060"]
    for r in dell:
        assert not graphs_off(r["notes"]), r["id"]
        assert "enforce_eager: bool = False" in r["notes"]  # the harness's dataclass default
    off = [r for r in eager_flag if r not in dell]
    assert all(graphs_off(r["notes"]) for r in off)
    assert {(r["framework"], r["hardware"][:4]) for r in off} == {("vllm", "amd-")}
    counts: dict[str, int] = {}
    for r in off:
        counts[r["source"]] = counts.get(r["source"], 0) + 1
    assert counts == {
        "MLPerf Inference v4.1": 4,
        "MLPerf Inference v5.1": 25,
        "dstack benchmark: Llama 3.1 405B FP8 on 8xMI300X vs 8xH100": 19,
    }


def _static_row(notes: str) -> dict:
    """A static batch of one Llama-2-70B fp8 request on one MI300X under vLLM: 128 prompt
    tokens, 256 generated, TPOT in ms."""
    return {
        "id": "t",
        "source": "test",
        "hardware": "amd-mi300x",
        "model": "llama-2-70b",
        "precision": "fp8",
        "framework": "vllm",
        "framework_version": "",
        "mode": "static_batch",
        "metric": "tpot_ms_mean",
        "batch": "1",
        "isl": "128",
        "osl": "256",
        "tp": "1",
        "pp": "1",
        "n_gpus": "1",
        "notes": notes,
    }


def test_the_fit_reads_eager_rows_as_eager():
    """The fit's predictor of a decode-only row: with graphs a batch-1 decode step is the
    GPU time g (~14 ms: 70 GB of fp8 weights at ~5.3 TB/s x the prior's efficiency) plus
    overheads; eager it is at least the dispatch floor E = eager_layer_s x 80 layers =
    1 ms x 80 = 80 ms (Llama-2-70B has 80 layers), the smooth maximum (g^4 + E^4)^(1/4)."""
    cat = load_catalog()
    p = PRIOR.with_(eager_layer_s=1e-3)
    on, _, kind = row_predictor(_static_row("engine defaults"), cat)
    off, _, _ = row_predictor(_static_row("--enforce-eager"), cat)
    assert kind == "static"
    e_ms = 1e-3 * 80 * 1000
    assert off(p) >= e_ms
    assert on(p) < e_ms / 2  # the graphed step is far below the floor


@pytest.fixture(scope="module")
def llama70b_mi300x():
    cat = load_catalog()
    return step_model("llama-2-70b", "amd-mi300x", "fp8", None, 1, 1, PRIOR, cat)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 512),
    ctx=st.integers(1, 4096),
    eager=st.sampled_from([0.0, 5e-5, 2e-4, 1e-3]),
)
def test_without_graphs_never_speeds_a_step(llama70b_mi300x, n, ctx, eager):
    """A decode step of n sequences of ctx tokens: without graphs it is never faster; with
    no eager cost (eager_layer_s = 0) it is the same step; the flag is the step model's
    captured-batch limit."""
    sm = llama70b_mi300x
    sm = replace(sm, params=sm.params.with_(eager_layer_s=eager))
    off = without_graphs(sm)
    assert off.spec_graph_max == NO_GRAPH_MAX_SEQS
    args = (n, n, n, float(n * ctx), float(n * ctx))
    t_on, t_off = sm.step_time(*args), off.step_time(*args)
    assert t_off >= t_on * (1 - 1e-12)
    if eager == 0.0:
        assert t_off == t_on
    else:
        assert t_off >= eager * 80
