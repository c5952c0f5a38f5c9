"""Current vLLM on AMD Instinct (``data/benchmarks/public_amd2.csv``).

Two sources, each registered in ``data/benchmarks/sources.yaml``: AMD's "Performance results with
AMD ROCm software" page (three later releases of the MI300X vLLM throughput table: vLLM 0.10.1,
0.10.2 and 0.11.1, Llama 3.1 70B / 405B FP8) and MLPerf Inference v6.0 closed single-node
8x MI355X submissions of five submitters running AMD's vLLM harness (Llama-2-70B MXFP4 and
gpt-oss-120b). These tests check that every row loads and carries its provenance, pin rows to the
numbers the sources print (with the arithmetic that ties them together), and check that each row
gets a prediction or a clear reason.
"""

from __future__ import annotations

import collections
import csv
import datetime as dt

import pytest
import yaml
from _benchmark_rows import check_loads, check_provenance, read_rows

from planner.benchmarks.predict import Predictor
from planner.benchmarks.schema import engine_settings, memory_fraction_from_notes
from planner.catalog import DATA_DIR

CSV = DATA_DIR / "benchmarks" / "public_amd2.csv"
PAGE = "AMD ROCm performance results page (vLLM, MI300X)"
MLP60 = "MLPerf Inference v6.0"
MLP51 = "MLPerf Inference v5.1"
PREFIX = {PAGE: "amdperf", MLP60: "mlp60", MLP51: "mlp51b"}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return read_rows(CSV)


@pytest.fixture(scope="module")
def by_id(rows) -> dict[str, dict[str, str]]:
    return {r["id"]: r for r in rows}  # the rows the tests below pin, by id


def test_file_loads_with_the_planners_loader(rows, catalog):
    assert check_loads(CSV, rows, catalog) == 67


def test_every_row_has_source_detail_and_as_of(rows):
    check_provenance(
        rows,
        PREFIX,
        (dt.date(2025, 9, 9), dt.date(2026, 4, 30)),
        ("amd-mi300x", "amd-mi325x", "amd-mi355x"),
        ("vllm",),
    )


def test_sources_yaml_lists_each_source_with_its_file_and_row_count(rows):
    doc = yaml.safe_load((DATA_DIR / "benchmarks" / "sources.yaml").read_text(encoding="utf-8"))
    counts = collections.Counter(r["source"] for r in rows)
    assert counts == {PAGE: 24, MLP60: 23, MLP51: 20}
    for source, n in counts.items():
        (entry,) = [s for s in doc["sources"] if s["source"] == source]
        if source == MLP51:  # the round's other rows live in public_amd.csv
            assert (entry["file"], entry["rows_public_amd2"]) == ("public_amd.csv", n)
        else:
            assert (entry["file"], entry["rows"]) == ("public_amd2.csv", n)
        dt.date.fromisoformat(entry["as_of"])


def test_no_row_repeats_a_number_already_in_public_amd(rows):
    """The page's 0.9.1 table equals the ROCm/vllm README rows amd-0418..0425 and is left out:
    no (model, isl, osl, value) of this file appears in public_amd.csv."""
    with open(DATA_DIR / "benchmarks" / "public_amd.csv", newline="") as f:
        old = {(r["model"], r["isl"], r["osl"], float(r["value"])) for r in csv.DictReader(f)}
    for r in rows:
        assert (r["model"], r["isl"], r["osl"], float(r["value"])) not in old, r["id"]


def test_performance_page_rows_match_the_printed_tables(by_id):
    """Throughput tables of the page (MI300X, TP 8, 'Throughput (tokens/s)'):
    rocm6.4.1_vllm_0.10.1_20250909: 70B 128/2048, 3200 prompts = max num seqs: 13818.7;
    rocm7.0.0_vllm_0.10.2_20251006: 405B 2048/2048, 500 prompts: 2153.7;
    rocm7.0.0_vllm_0.11.1_20251103: 70B 2048/2048, 1500 prompts: 7651.7.
    The 405B 2048/2048 run generates 500 x 2048 = 1,024,000 tokens, so 2153.7 output tok/s is
    1,024,000 / 2153.7 = 475.5 s of wall time; the 70B 128/2048 run 3200 x 2048 / 13818.7 =
    474.3 s: both runs are minutes long, as offline runs of that size are."""
    r = by_id["amdperf-0001"]
    assert (r["hardware"], r["n_gpus"], r["tp"], r["model"], r["precision"]) == (
        "amd-mi300x",
        "8",
        "8",
        "llama-3.1-70b",
        "fp8",
    )
    assert (r["isl"], r["osl"], r["mode"], r["metric"]) == (
        "128",
        "2048",
        "offline",
        "output_tok_s_total",
    )
    assert float(r["value"]) == 13818.7 and "0.10.1" in r["framework_version"]
    assert engine_settings(r["notes"]).max_num_seqs == 3200
    assert "3200 requests" in r["notes"]
    assert abs(3200 * 2048 / 13818.7 - 474.3) < 0.1
    r = by_id["amdperf-0016"]
    assert (r["model"], r["isl"], r["osl"], float(r["value"])) == (
        "llama-3.1-405b",
        "2048",
        "2048",
        2153.7,
    )
    assert "0.10.2" in r["framework_version"] and engine_settings(r["notes"]).max_num_seqs == 500
    assert abs(500 * 2048 / 2153.7 - 475.5) < 0.1
    r = by_id["amdperf-0020"]
    assert (r["model"], r["isl"], r["osl"], float(r["value"])) == (
        "llama-3.1-70b",
        "2048",
        "2048",
        7651.7,
    )
    assert "0.11.1" in r["framework_version"] and r["as_of"] == "2025-11-03"


def test_mlperf_v60_rows_match_the_results_tables(by_id, rows):
    """closed/AMD/results/8xMI355X_2xEPYC_9575F README results table: llama2-70b-99 Offline
    103480, Server 100282, Interactive 73608.2 Tokens/s; gpt-oss-120b Offline 95004.
    Server: mlperf_log_summary.txt states target_qps 360 and 'Completed samples per second :
    354.41'; 100282 / 354.41 = 283.0 tokens per completed sample, the TOKENS_PER_SAMPLE (283.0)
    summary_results.json prints for that system's llama2-70b-99 Server accuracy run, so Tokens/s
    counts generated tokens. Offline engine config offline_mi355x.yaml: tensor_parallel_size 1, max_num_seqs 3392,
    max_num_batched_tokens 65536, kv_cache_dtype fp8, gpu_memory_utilization 0.95."""
    off = by_id["mlp60-0001"]
    assert (
        off["hardware"],
        off["n_gpus"],
        off["tp"],
        off["model"],
        off["precision"],
        off["kv_precision"],
    ) == (
        "amd-mi355x",
        "8",
        "1",
        "llama-2-70b",
        "mxfp4",
        "fp8",
    )
    assert (off["mode"], off["request_rate"], float(off["value"])) == ("offline", "inf", 103480.0)
    s = engine_settings(off["notes"])
    assert (s.max_num_seqs, s.max_num_batched_tokens, s.kv_cache_dtype) == (3392, 65536, "fp8")
    assert memory_fraction_from_notes(off["notes"]) == 0.95
    srv = by_id["mlp60-0002"]
    assert (srv["mode"], float(srv["request_rate"]), float(srv["value"])) == (
        "server",
        360.0,
        100282.0,
    )
    assert abs(100282 / 354.41 - 283.0) < 0.1
    s = engine_settings(srv["notes"])
    assert (s.max_num_seqs, s.max_num_batched_tokens) == (3096, 40960)
    inter = by_id["mlp60-0003"]
    assert (inter["mode"], float(inter["request_rate"]), float(inter["value"])) == (
        "interactive",
        263.0,
        73608.2,
    )
    assert engine_settings(inter["notes"]).max_num_batched_tokens == 8192
    (gpt,) = [
        r
        for r in rows
        if r["model"] == "gpt-oss-120b"
        and "closed/AMD/" in r["source_detail"]
        and r["mode"] == "offline"
    ]
    assert float(gpt["value"]) == 95004.0 and engine_settings(gpt["notes"]).max_num_seqs == 1792
    # five submitters ran the same recipe: Offline llama2-70b spread 103480 / 99874.3 = 1.036
    off_vals = [
        float(r["value"])
        for r in rows
        if r["source"] == MLP60 and r["model"] == "llama-2-70b" and r["mode"] == "offline"
    ]
    assert len(off_vals) == 5 and max(off_vals) / min(off_vals) < 1.04


def test_mlperf_v51_partner_rows_match_the_results_tables(by_id, rows):
    """v5.1 closed, systems running AMD's v5.0 harness build (vLLM 0.6.5.dev964+mlperf50):
    Dell XE9680_MI300X_192GBx8 llama2-70b-99 Offline 27325.9 Tokens/s (mlperf_log_summary.txt
    'Tokens per second: 27325.9', target_qps 93), Server 24747.6 at target_qps 83 with
    'Completed samples per second : 82.24' -> 24747.6 / 82.24 = 300.9 tokens per sample, the
    ~300 generated tokens of a Llama-2 OpenOrca answer. Engine config offline_mi300x.yaml:
    tensor_parallel_size 1, max_num_seqs 1792, max_num_batched_tokens 40960,
    gpu_memory_utilization 0.98. GigaComputing's offline_mi325x.yaml differs from AMD's
    (max_num_batched_tokens 65000, gpu_memory_utilization 0.97)."""
    off = by_id["mlp51b-0004"]
    assert (off["hardware"], off["tp"], off["mode"], float(off["value"])) == (
        "amd-mi300x",
        "1",
        "offline",
        27325.9,
    )
    s = engine_settings(off["notes"])
    assert (s.max_num_seqs, s.max_num_batched_tokens) == (1792, 40960)
    assert memory_fraction_from_notes(off["notes"]) == 0.98
    srv = by_id["mlp51b-0005"]
    assert (srv["mode"], float(srv["request_rate"]), float(srv["value"])) == (
        "server",
        83.0,
        24747.6,
    )
    assert abs(24747.6 / 82.24 - 300.9) < 0.05
    giga = by_id["mlp51b-0007"]
    assert "GigaComputing" in giga["notes"] and float(giga["value"]) == 34483.2
    assert engine_settings(giga["notes"]).max_num_batched_tokens == 65000
    assert memory_fraction_from_notes(giga["notes"]) == 0.97
    assert {r["framework_version"] for r in rows if r["source"] == MLP51} == {
        "vLLM 0.6.5.dev964+mlperf50 (AMD MLPerf v5.0 harness build), PyTorch 2.7.0a0, ROCm 6.3.1"
    }


def test_every_row_is_predicted_or_says_why(rows, catalog):
    """Every llama row is predicted; the gpt-oss-120b MLPerf rows are kept with a reason (the
    planner has no length distribution for that dataset)."""
    outs = Predictor(catalog, CSV.parent, None).predict_rows([dict(r) for r in rows])
    for r, out in zip(rows, outs, strict=True):
        if r["model"] == "gpt-oss-120b":
            assert "no dataset with a known length distribution" in out["reason"], r["id"]
        else:
            assert out["reason"] == "" and float(out["predicted"]) > 0, r["id"]
