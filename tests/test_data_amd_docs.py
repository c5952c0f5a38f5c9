"""Rows transcribed from AMD's own performance documentation (data/benchmarks/public_amd.csv):
the ROCm blog 'Best practices for competitive inference optimization on AMD Instinct MI300X
GPUs' (ROCm/rocm-blogs blogs/artificial-intelligence/LLM_Inference/README.md @ 11235ac2,
29 Jan 2025) and the throughput table of ROCm/vllm docs/dev-docker/README.md at three releases.

Values are checked against hand-derived numbers from the sources, and every row must be one the
planner can predict (no silent skip)."""

from __future__ import annotations

import csv
import re

import pytest

from planner.benchmarks.io import load_measurements
from planner.benchmarks.schema import engine_settings, memory_fraction_from_notes
from planner.calibration.fit import prepare_rows
from planner.catalog import load_catalog
from planner.catalog.catalog import DATA_DIR

AMD_CSV = DATA_DIR / "benchmarks" / "public_amd.csv"
BLOG = "ROCm blog: MI300X inference best practices (Jan 2025)"
README_THR = "ROCm/vllm dev-docker README (MI300X throughput table)"


@pytest.fixture(scope="module")
def rows():
    with AMD_CSV.open(newline="") as f:
        return {r["id"]: r for r in csv.DictReader(f) if r["source"] in (BLOG, README_THR)}


def test_row_counts_per_source(rows):
    """80 blog rows (8 throughput configs x MI300X/H100 + 32 latency configs x MI300X/H100)
    and 24 README rows (8 configs x 3 releases)."""
    by = {}
    for r in rows.values():
        by[(r["source"], r["hardware"])] = by.get((r["source"], r["hardware"]), 0) + 1
    assert by == {
        (BLOG, "amd-mi300x"): 8 + 32,
        (BLOG, "nvidia-h100-sxm"): 8 + 32,
        (README_THR, "amd-mi300x"): 24,
    }


def test_latency_rows_hand_derived(rows):
    """Blog 'vLLM Latency Benchmark Results': Llama 3.1 70B FP8 TP8, batch 1, 128 in / 2048 out,
    MI300X 19,089 ms -> 1 x 2048 / 19.089 s = 107.29 tok/s; Llama 3.1 405B, batch 128,
    2048 / 2048, H100 195,622 ms -> 128 x 2048 / 195.622 s = 262,144 / 195.622 = 1,340.05 tok/s."""
    a, h = rows["amd-0346"], rows["amd-0409"]
    assert (a["hardware"], a["model"], a["batch"], a["isl"], a["osl"]) == (
        "amd-mi300x",
        "llama-3.1-70b",
        "1",
        "128",
        "2048",
    )
    assert float(a["value"]) == pytest.approx(2048 / 19.089, abs=0.01)  # 107.29
    assert float(a["value"]) == pytest.approx(107.29, abs=0.005)
    assert (h["hardware"], h["framework"], h["model"], h["batch"]) == (
        "nvidia-h100-sxm",
        "trtllm",
        "llama-3.1-405b",
        "128",
    )
    assert float(h["value"]) == pytest.approx(1340.05, abs=0.005)


def test_every_static_row_matches_its_printed_latency(rows):
    """Each static-batch row keeps the latency the source printed ('printed as X ms'); its value
    must be batch x output / latency (a transcription slip in either breaks this)."""
    n = 0
    for r in rows.values():
        if r["mode"] != "static_batch":
            continue
        ms = float(re.search(r"printed as ([\d.]+) ms", r["notes"]).group(1))
        expect = int(r["batch"]) * int(r["osl"]) / (ms / 1000.0)
        assert float(r["value"]) == pytest.approx(expect, abs=0.006), r["id"]
        n += 1
    assert n == 64


def test_throughput_rows_engine_settings(rows):
    """Blog throughput row, Llama 3.1 70B 128 / 2048 on MI300X: 15,105 output tok/s, the same
    number the README @ 7a292f9b0 (2025-01-29) prints with num prompts = max num seqs = 3200;
    README @ 040de12d (release 20250812), 405B 2048 / 2048: 2,174.1 tok/s with 500 prompts.
    The engine tags must parse to those settings (max_num_batched_tokens 131072, fp8 KV,
    gpu_memory_utilization 0.9 from the README's command)."""
    blog, rd = rows["amd-0330"], rows["amd-0433"]
    assert float(blog["value"]) == 15105 and blog["metric"] == "output_tok_s_total"
    assert float(rd["value"]) == 2174.1 and (rd["isl"], rd["osl"]) == ("2048", "2048")
    for r, seqs in ((blog, 3200), (rd, 500)):
        s = engine_settings(r["notes"])
        assert (s.max_num_seqs, s.max_num_batched_tokens, s.kv_cache_dtype) == (
            seqs,
            131072,
            "fp8",
        )
        assert memory_fraction_from_notes(r["notes"]) == 0.9
    # the three README releases give the same eight configurations, each once
    confs = {}
    for r in rows.values():
        if r["source"] == README_THR:
            confs.setdefault((r["model"], r["isl"], r["osl"]), set()).add(r["as_of"])
    assert len(confs) == 8
    assert all(v == {"2025-05-21", "2025-07-15", "2025-08-12"} for v in confs.values())


def test_every_new_row_is_predictable():
    """No row of these sources is skipped: each has a layout, precision and predictor."""
    cat = load_catalog()
    df = load_measurements([AMD_CSV], cat)
    df = df[df["source"].isin([BLOG, README_THR])]
    prepared = prepare_rows(df, cat)
    assert len(prepared) == 104
    bad = [(r.id, r.reason) for r in prepared if not r.ok]
    assert not bad, bad
