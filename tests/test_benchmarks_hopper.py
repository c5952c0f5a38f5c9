"""vLLM and SGLang on Hopper, dense models (``data/benchmarks/public_hopper.csv``).

Four sources, each registered in ``data/benchmarks/sources.yaml``: a vLLM pull-request log
(H100, Llama-3-8B), Krai's MLPerf Inference v5.0 and v5.1 Open submissions (H100/H200, vLLM and
SGLang, Llama-2/3.1-70B FP8) and Argonne's LLM-Inference-Bench raw CSVs (vLLM static batches on
1-4 H100s). These tests check that every row loads and carries its provenance, pin rows to the
numbers the sources print (with the arithmetic that ties them together), and check that each
row gets a prediction or a clear reason.
"""

from __future__ import annotations

import collections
import datetime as dt
import re

import pytest
import yaml
from _benchmark_rows import check_loads, check_provenance, read_rows

from planner.benchmarks.predict import Predictor
from planner.benchmarks.schema import engine_settings, memory_fraction_from_notes
from planner.catalog import DATA_DIR

CSV = DATA_DIR / "benchmarks" / "public_hopper.csv"
PR = "vLLM PR #7117 benchmark log (H100)"
KRAI50 = "Krai MLPerf Inference v5.0 open submissions (H200, vLLM/SGLang)"
KRAI51 = "Krai MLPerf Inference v5.1 open submissions (H100/H200, vLLM/SGLang)"
ALCF = "LLM-Inference-Bench (Argonne ALCF): vLLM static batches on H100"
PREFIX = {PR: "vllm7117", KRAI50: "krai50", KRAI51: "krai51", ALCF: "alcf"}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return read_rows(CSV)


@pytest.fixture(scope="module")
def by_id(rows) -> dict[str, dict[str, str]]:
    return {r["id"]: r for r in rows}  # the rows the tests below pin, by id


def test_file_loads_with_the_planners_loader(rows, catalog):
    assert check_loads(CSV, rows, catalog) >= 290


def test_every_row_has_source_detail_and_as_of(rows):
    check_provenance(
        rows,
        PREFIX,
        (dt.date(2024, 8, 1), dt.date(2025, 9, 30)),
        ("nvidia-h100-sxm", "nvidia-h200-sxm"),
        ("vllm", "sglang"),
    )


def test_sources_yaml_lists_each_source_with_its_file_and_row_count(rows):
    doc = yaml.safe_load((DATA_DIR / "benchmarks" / "sources.yaml").read_text(encoding="utf-8"))
    counts = collections.Counter(r["source"] for r in rows)
    for source, n in counts.items():
        (entry,) = [s for s in doc["sources"] if s["source"] == source]
        assert entry["file"] == "public_hopper.csv"
        assert entry["rows"] == n
        dt.date.fromisoformat(entry["as_of"])


def test_pr_7117_rows_match_the_printed_log(by_id):
    """PR #7117, youkaichao 2024-08-04, 'On H100': benchmark_throughput.py --input-len 256
    --output-len 256 (1000 requests by default); main trial 1 prints
    'Throughput: 24.32 requests/s, 12453.04 tokens/s'. The tokens/s count input + output:
      24.32 req/s x (256 + 256) = 12,451.8 tok/s, within 0.01 % of 12,453.04 (req/s is rounded
      to 0.01, i.e. +-0.005 x 512 = +-2.6 tok/s)."""
    r = by_id["vllm7117-0001"]
    assert (r["hardware"], r["model"], r["precision"], r["mode"]) == (
        "nvidia-h100-sxm",
        "llama-3-8b",
        "bf16",
        "offline",
    )
    assert (r["isl"], r["osl"], r["metric"]) == ("256", "256", "total_tok_s")
    assert float(r["value"]) == 12453.04
    assert abs(24.32 * 512 - float(r["value"])) <= 0.005 * 512
    assert "1000 requests" in r["notes"]
    # the PR branch's third trial: 'Throughput: 24.74 requests/s, 12667.68 tokens/s'
    assert float(by_id["vllm7117-0006"]["value"]) == 12667.68
    assert abs(24.74 * 512 - 12667.68) <= 0.005 * 512


def test_krai_rows_match_the_results_tables(by_id):
    """Results tables of the Krai system READMEs (Tokens/s) and the Performance commands:
    v5.0 xd670_h200_x8_vllm_064 llama2-70b-fp8_dyn Offline 15906.10 (tp=1, dp=8,
    max_num_seqs=1024, max_num_batched_tokens=8192, gpu_memory_utilization=0.95); the same with
    FlashInfer attention 21372.30; v5.1 xe9680_h100_x8_vllm_092 llama3_1-70b-fp8_dyn Offline
    22819.60 (tp=2, dp=4: 4 x 2 = 8 GPUs, max_num_seqs=3264, max_num_batched_tokens=14768,
    gpu_memory_utilization=0.9). Server rows: 13716.70 tok/s at loadgen_target_qps 48 with 295.7
    tokens per sample is 46.4 samples/s, 3 % under the target qps (a Server run that kept up)."""
    r = by_id["krai50-0001"]
    assert (r["hardware"], r["n_gpus"], r["tp"], r["model"], r["framework"]) == (
        "nvidia-h200-sxm",
        "8",
        "1",
        "llama-2-70b",
        "vllm",
    )
    assert float(r["value"]) == 15906.10 and r["mode"] == "offline"
    s = engine_settings(r["notes"])
    assert (s.max_num_seqs, s.max_num_batched_tokens) == (1024, 8192)
    assert memory_fraction_from_notes(r["notes"]) == 0.95
    assert float(by_id["krai50-0003"]["value"]) == 21372.30
    assert "FlashInfer" in by_id["krai50-0003"]["framework_version"]
    h = by_id["krai51-0005"]
    assert (h["hardware"], h["n_gpus"], h["tp"], float(h["value"])) == (
        "nvidia-h100-sxm",
        "8",
        "2",
        22819.60,
    )
    s = engine_settings(h["notes"])
    assert (s.max_num_seqs, s.max_num_batched_tokens) == (3264, 14768)
    assert memory_fraction_from_notes(h["notes"]) == 0.9
    srv = by_id["krai50-0002"]
    assert srv["mode"] == "server" and float(srv["request_rate"]) == 48
    assert 0.95 <= float(srv["value"]) / 295.7 / 48 <= 1.0


def test_alcf_rows_match_the_raw_csv(by_id, rows):
    """argonne-lcf/LLM-Inference-Bench Plots/All_results.csv line 1489: 'Nvidia H100 GPU, 1,
    vLLM, meta-llama/Llama-2-7b-hf, 1024, 32, 18.988407..., 3451.369116...'. The script's
    throughput is batch x (input + output) / mean latency:
      32 x (1024 + 1024) / 18.988407 s = 65,536 / 18.988407 = 3451.37 tok/s."""
    (r,) = [x for x in rows if "(line 1489:" in x["source_detail"]]
    assert (r["model"], r["tp"], r["batch"], r["isl"], r["osl"], r["mode"]) == (
        "llama-2-7b",
        "1",
        "32",
        "1024",
        "1024",
        "static_batch",
    )
    assert float(r["value"]) == pytest.approx(3451.37, abs=0.005)
    assert float(r["value"]) == pytest.approx(32 * 2048 / 18.988407, rel=1e-6)
    assert "18.9884" in r["notes"]
    # every ALCF row: value = batch x 2L / the latency its notes print (6 significant digits;
    # the value is rounded to 0.01 tok/s)
    for x in rows:
        if x["source"] != ALCF:
            continue
        lat = float(re.search(r"\(([\d.e+-]+) s printed\)", x["notes"]).group(1))
        b, length = int(x["batch"]), int(x["isl"])
        assert b * 2 * length / lat == pytest.approx(float(x["value"]), rel=1e-5, abs=0.006), x[
            "id"
        ]


def test_every_row_gets_a_prediction_or_a_reason(rows, catalog):
    """`planner predict` on a sample of every source: a predicted value, or (the Llama-3.1-70B
    MLPerf rows) the reason that the OpenOrca lengths are known in Llama-2 tokens only."""
    pred = Predictor(catalog, CSV.parent, None)
    sample = [r for r in rows if r["source"] != ALCF] + [
        r for r in rows if r["source"] == ALCF and r["batch"] in ("1", "64")
    ][::8]
    outs = pred.predict_rows([dict(r) for r in sample])
    for r, out in zip(sample, outs, strict=True):
        if r["model"] == "llama-3.1-70b":
            assert "OpenOrca lengths are known in Llama-2 tokens only" in out["reason"], r["id"]
        else:
            assert out["reason"] == "" and float(out["predicted"]) > 0, r["id"]
