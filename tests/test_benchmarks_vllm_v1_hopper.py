"""vLLM V1-engine releases on Hopper, dense models (``data/benchmarks/public_vllm_v1_hopper.csv``).

One source, registered in ``data/benchmarks/sources.yaml``: Red Hat's MLPerf Inference v5.1
closed submission, Llama-3.1-8B FP8 on one H100 SXM with vLLM 0.10.0 (a release of the V1
generation, issue 31). These tests check that every row loads with its provenance, pin the rows
to the numbers the LoadGen summaries print (with the arithmetic that ties them together), check
the release and its engine generation, and that each row says why it is not predicted.
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
from planner.catalog.releases import generation

CSV = DATA_DIR / "benchmarks" / "public_vllm_v1_hopper.csv"
REDHAT = "Red Hat MLPerf Inference v5.1 closed submission (Llama-3.1-8B FP8, vLLM 0.10.0, 1x H100)"
PREFIX = {REDHAT: "rhmlp51"}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return read_rows(CSV)


@pytest.fixture(scope="module")
def by_id(rows) -> dict[str, dict[str, str]]:
    return {r["id"]: r for r in rows}


def test_file_loads_with_the_planners_loader(rows, catalog):
    assert check_loads(CSV, rows, catalog) == 4


def test_every_row_has_source_detail_and_as_of(rows):
    check_provenance(
        rows,
        PREFIX,
        (dt.date(2025, 9, 9), dt.date(2025, 9, 9)),
        ("nvidia-h100-sxm",),
        ("vllm",),
    )
    for r in rows:
        assert "965182b03376a00fcae415c54e560e1c83937932" in r["source_detail"], r["id"]
        assert "mlperf_log_summary.txt" in r["source_detail"], r["id"]


def test_sources_yaml_lists_the_source_with_its_file_and_row_count(rows):
    doc = yaml.safe_load((DATA_DIR / "benchmarks" / "sources.yaml").read_text(encoding="utf-8"))
    counts = collections.Counter(r["source"] for r in rows)
    assert set(counts) == {REDHAT}
    (entry,) = [s for s in doc["sources"] if s["source"] == REDHAT]
    assert entry["file"] == "public_vllm_v1_hopper.csv"
    assert entry["rows"] == counts[REDHAT] == 4
    assert dt.date.fromisoformat(entry["as_of"]) == dt.date(2025, 9, 9)


def test_every_row_names_a_v1_release(rows):
    """The system description says 'vLLM 0.10.0'; 0.10.0 >= 0.8.0, the first V1 release of
    ``data/frameworks.yaml`` (vLLM 0.8.0 made V1 the default engine)."""
    for r in rows:
        release = str(row_release(r).release)
        assert release == "0.10.0", r["id"]
        assert generation("vllm", release) == "V1", r["id"]


def test_rows_match_the_loadgen_summaries(by_id):
    """Offline log: 'Samples per second: 45.1334', 'Tokens per second: 5777.08', so
    5777.08 / 45.1334 = 128.0 generated tokens per sample (the set's answers are capped at 128).
    Server log: 'Completed tokens per second: 5103.99', 'Completed samples per second : 39.56'
    (5103.99 / 39.56 = 129.0 tokens per sample, the same answers), target_qps 39.5;
    'Mean First Token latency (ns) : 359333144' = 359.33 ms; 'Mean Time to Output Token (ns) :
    23113051' = 23.11 ms. A request of ~129 tokens then takes 0.359 + 128 x 0.02311 = 3.32 s,
    the log's 'Mean latency (ns) : 3317798521' (3.318 s) within 0.1 %."""
    printed = {
        "rhmlp51-0001": ("offline", "inf", "output_tok_s_total", 5777.08),
        "rhmlp51-0002": ("server", "39.5", "output_tok_s_total", 5103.99),
        "rhmlp51-0003": ("server", "39.5", "ttft_ms_mean", 359.33),
        "rhmlp51-0004": ("server", "39.5", "tpot_ms_mean", 23.11),
    }
    for rid, (mode, rate, metric, value) in printed.items():
        r = by_id[rid]
        assert (r["model"], r["precision"], r["n_gpus"], r["tp"]) == (
            "llama-3.1-8b",
            "fp8",
            "1",
            "1",
        )
        assert (r["mode"], r["request_rate"], r["isl"], r["osl"]) == (mode, rate, "", "")
        assert (r["metric"], float(r["value"])) == (metric, value)
    assert pytest.approx(128.0, abs=0.05) == 5777.08 / 45.1334
    assert pytest.approx(129.0, abs=0.05) == 5103.99 / 39.56
    assert pytest.approx(359.33, abs=0.005) == 359333144 / 1e6
    assert pytest.approx(23.11, abs=0.005) == 23113051 / 1e6
    assert pytest.approx(3.3178, rel=1e-3) == 0.359333144 + 128 * 0.023113051
    # the Offline run sets an FP8 KV cache, the Server run leaves it on auto (bf16)
    assert by_id["rhmlp51-0001"]["kv_precision"] == "fp8"
    assert {by_id[f"rhmlp51-000{i}"]["kv_precision"] for i in (2, 3, 4)} == {"bf16"}
    assert "--kv-cache-dtype fp8" in by_id["rhmlp51-0001"]["notes"]


def test_each_row_says_why_it_is_not_predicted(rows, catalog):
    """MLPerf CNN/DailyMail rows have no isl/osl and the planner knows no length distribution
    for that set: kept for the record, with the reason given, not a number."""
    outs = Predictor(catalog, CSV.parent, None).predict_rows([dict(r) for r in rows])
    for r, out in zip(rows, outs, strict=True):
        assert out["reason"], r["id"]
        assert "isl/osl are empty" in out["reason"], r["id"]
