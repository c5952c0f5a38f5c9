"""vLLM 2025 releases on Hopper, dense models (``data/benchmarks/public_vllm_hopper25.csv``).

Two sources, each registered in ``data/benchmarks/sources.yaml``: vLLM issue #25915 (Qwen3-8B
bf16 and FP8 on one H100, ``vllm bench throughput`` 1024 / 2048, vLLM 0.8.5 and 0.10.2) and
GPUStack's page on quantization in vLLM (Qwen3-8B on one H100, ShareGPT, vLLM 0.9.2). These
tests check that every row loads with its provenance, pin rows to the numbers the sources print
(with the arithmetic that ties them together), check that each row names its engine release,
and that each row gets a prediction or a clear reason (issue 31: dense vLLM FP8 rows on Hopper
from a named 2025 release).
"""

from __future__ import annotations

import collections
import datetime as dt

import pytest
import yaml
from _benchmark_rows import check_loads, check_provenance, read_rows

from planner.benchmarks.predict import Predictor
from planner.benchmarks.schema import row_release
from planner.catalog import DATA_DIR

CSV = DATA_DIR / "benchmarks" / "public_vllm_hopper25.csv"
ISSUE = "vLLM issue #25915 (Qwen3-8B bf16 vs FP8 on H100, vLLM 0.8.5 and 0.10.2)"
GPSQ = "GPUStack performance lab: the impact of quantization on vLLM (vLLM 0.9.2, Qwen3-8B)"
PREFIX = {ISSUE: "vllm25915", GPSQ: "gpsq"}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return read_rows(CSV)


@pytest.fixture(scope="module")
def by_id(rows) -> dict[str, dict[str, str]]:
    return {r["id"]: r for r in rows}


def test_file_loads_with_the_planners_loader(rows, catalog):
    assert check_loads(CSV, rows, catalog) == 8


def test_every_row_has_source_detail_and_as_of(rows):
    check_provenance(
        rows,
        PREFIX,
        (dt.date(2025, 1, 1), dt.date(2025, 12, 31)),
        ("nvidia-h100-sxm",),
        ("vllm",),
    )


def test_sources_yaml_lists_each_source_with_its_file_and_row_count(rows):
    doc = yaml.safe_load((DATA_DIR / "benchmarks" / "sources.yaml").read_text(encoding="utf-8"))
    counts = collections.Counter(r["source"] for r in rows)
    assert set(counts) == {ISSUE, GPSQ}
    for source, n in counts.items():
        (entry,) = [s for s in doc["sources"] if s["source"] == source]
        assert entry["file"] == "public_vllm_hopper25.csv"
        assert entry["rows"] == n
        dt.date.fromisoformat(entry["as_of"])


def test_every_row_names_a_2025_vllm_release(rows):
    """The release parser reads each row's framework_version: 0.8.5 and 0.10.2 (issue), 0.9.2
    (GPUStack); all released in 2025, the years the issue asks for (>= 0.7)."""
    got = {r["id"]: str(row_release(r).release) for r in rows}
    assert {got[f"vllm25915-000{i}"] for i in (1, 2)} == {"0.8.5"}
    assert {got[f"vllm25915-000{i}"] for i in (3, 4)} == {"0.10.2"}
    assert {got[f"gpsq-000{i}"] for i in (1, 2, 3, 4)} == {"0.9.2"}


def test_issue_rows_match_the_printed_progress_bars(by_id):
    """Issue #25915's description prints the final progress bar of each run:
      v0.8.5 bf16  '2375.11 toks/s, output: 4481.69 toks/s'
      v0.8.5 fp8   'speed input: 2783.16 toks/s, output: 4868.31 toks/s'
      v0.10.2 bf16 'speed input: 2697.18 toks/s, output: 5408.88 toks/s'
      v0.10.2 fp8  'speed input: 2794.50 toks/s, output: 5304.03 toks/s'
    Every request generates 2048 tokens, so prompt tokens per request = 2048 x input / output:
    v0.10.2 bf16 2048 x 2697.18 / 5408.88 = 1,021.3 (the requested 1024 within 0.3 %); v0.8.5
    fp8 2048 x 2783.16 / 4868.31 = 1,170.8 (the re-tokenized random prompt drifts up to 14 %)."""
    printed = {
        "vllm25915-0001": ("0.8.5", "bf16", 2375.11, 4481.69),
        "vllm25915-0002": ("0.8.5", "fp8", 2783.16, 4868.31),
        "vllm25915-0003": ("0.10.2", "bf16", 2697.18, 5408.88),
        "vllm25915-0004": ("0.10.2", "fp8", 2794.50, 5304.03),
    }
    for rid, (ver, prec, inp, out) in printed.items():
        r = by_id[rid]
        assert (r["model"], r["precision"], r["n_gpus"], r["tp"]) == ("qwen3-8b", prec, "1", "1")
        assert (r["mode"], r["isl"], r["osl"], r["request_rate"]) == (
            "offline",
            "1024",
            "2048",
            "inf",
        )
        assert (r["metric"], float(r["value"])) == ("output_tok_s_total", out)
        assert f"v{ver}" in r["framework_version"]
        assert f"{inp} / {out}" in r["notes"]
    assert pytest.approx(1021.3, abs=0.1) == 2048 * 2697.18 / 5408.88
    assert pytest.approx(1170.8, abs=0.1) == 2048 * 2783.16 / 4868.31
    assert "1021 prompt tokens" in by_id["vllm25915-0003"]["notes"]
    assert "1171 prompt tokens" in by_id["vllm25915-0002"]["notes"]


def test_gpustack_rows_match_the_h100_table_and_read_as_total_tokens(by_id):
    """Section 'H100 80GB': FP8 Static 16452.52 (+26.7%), FP8 Dynamic 15275.64 (+14.8%), BF16
    13305.38; 'KV Cache Quantization': BF16 + KV Cache FP8 (E4M3) 13513.19 (+1.6%). The printed
    gains against BF16 check the transcription: 15275.64 / 13305.38 = 1.148 (+14.8 %) and
    13513.19 / 13305.38 = 1.016 (+1.6 %); FP8 Static's '+26.7%' does not match (16452.52 /
    13305.38 = 1.237, +23.7 %) while its TTFT and TPOT gains do (4116.87 / 5172.78 = -20.4 %,
    85.57 / 126.55 = -32.4 %), so the value is kept as printed and its note says so.
    Total tokens: the same harness and prompts on the Qwen3-14B page print 217,393 input +
    201,648 generated = 419,041 tokens; at 13,305.38 tok/s that is a 31.5 s run, while as output
    tokens alone 201,648 / 13,305.38 = 15.2 s would be shorter than the mean request (TTFT 5.17 s
    + TPOT 126.55 ms x ~200 tokens = 30.5 s)."""
    vals = {f"gpsq-000{i}": float(by_id[f"gpsq-000{i}"]["value"]) for i in (1, 2, 3, 4)}
    assert vals == {
        "gpsq-0001": 16452.52,
        "gpsq-0002": 15275.64,
        "gpsq-0003": 13305.38,
        "gpsq-0004": 13513.19,
    }
    assert pytest.approx(1.016, abs=0.001) == 13513.19 / 13305.38
    assert pytest.approx(1.148, abs=0.001) == 15275.64 / 13305.38
    assert pytest.approx(1.237, abs=0.001) == 16452.52 / 13305.38
    assert pytest.approx(-0.204, abs=0.001) == 4116.87 / 5172.78 - 1
    assert "does not match the BF16 row" in by_id["gpsq-0001"]["notes"]
    assert pytest.approx(31.5, abs=0.05) == 419041 / 13305.38
    assert pytest.approx(15.2, abs=0.05) == 201648 / 13305.38
    assert pytest.approx(30.5, abs=0.05) == (5172.78 + 126.55 * 200) / 1000
    assert {by_id[k]["metric"] for k in vals} == {"total_tok_s"}
    assert [by_id[k]["precision"] for k in sorted(vals)] == ["fp8", "fp8", "bf16", "bf16"]
    assert by_id["gpsq-0004"]["kv_precision"] == "fp8"


def test_each_row_is_predicted_or_says_why(rows, catalog):
    """The issue's rows are fixed-length offline runs: predicted. ShareGPT rows are kept for the
    record: the planner has no filtered ShareGPT length distribution and says so."""
    outs = Predictor(catalog, CSV.parent, None).predict_rows([dict(r) for r in rows])
    for r, out in zip(rows, outs, strict=True):
        if r["source"] == ISSUE:
            assert out["reason"] == "" and float(out["predicted"]) > 0, r["id"]
        else:
            assert "ShareGPT rows need their filtered length distribution" in out["reason"]
