"""AMD attention-data-parallel + expert-parallel rows (``data/benchmarks/public_amd_dep.csv``).

One source, registered in ``data/benchmarks/sources.yaml``: AMD's ROCm blog "The vLLM MoE
Playbook" (2025-11-24), DeepSeek-R1 on 8x MI300X with vLLM 0.11.1rc3, DP=8 + EP, AITER off,
8192 / 1024 tokens, 640 requests at a concurrency limit of 1024: "7,114 tok/s". These tests pin
the row to the printed number, check the layout read from the stated command (DEP8: tp 1,
attention_dp 8, ep 8), the request count and release the planner reads, and that the row, whose
metric the page leaves ambiguous (output or input + output tokens), is kept and never predicted.
"""

from __future__ import annotations

import collections
import datetime as dt

import pytest
import yaml
from _benchmark_rows import check_loads, check_provenance, read_rows

from planner.benchmarks.predict import Predictor
from planner.benchmarks.schema import request_count, row_parallel_layout, row_release
from planner.catalog import DATA_DIR

CSV = DATA_DIR / "benchmarks" / "public_amd_dep.csv"
PLAYBOOK = "AMD ROCm blog: The vLLM MoE Playbook (DeepSeek-R1 DP+EP vs TP+EP on MI300X)"


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return read_rows(CSV)


def test_file_loads_with_the_planners_loader(rows, catalog):
    assert check_loads(CSV, rows, catalog) == 1


def test_every_row_has_source_detail_and_as_of(rows):
    check_provenance(
        rows, {PLAYBOOK: "rmoe"}, (dt.date(2025, 11, 24), dt.date(2025, 11, 24)),
        ("amd-mi300x",), ("vllm",),
    )  # fmt: skip
    assert "58fdc95fcf04eb9bcc3f4023dc0cc48712729b8a" in rows[0]["source_detail"]


def test_sources_yaml_lists_the_source_with_its_file_and_row_count(rows):
    doc = yaml.safe_load((DATA_DIR / "benchmarks" / "sources.yaml").read_text(encoding="utf-8"))
    counts = collections.Counter(r["source"] for r in rows)
    assert set(counts) == {PLAYBOOK}
    (entry,) = [s for s in doc["sources"] if s["source"] == PLAYBOOK]
    assert (entry["file"], entry["rows"]) == ("public_amd_dep.csv", counts[PLAYBOOK])
    assert dt.date.fromisoformat(entry["as_of"]) == dt.date(2025, 11, 24)


def test_row_is_the_printed_number_with_its_workload(rows):
    """'At concurrency=1024, achieves 7,114 tok/s'; 'Input: 8192 tokens', 'Output: 1024 tokens
    per request', 'Workload: 640 total requests'. The two readings the notes give, by hand:
    output tokens 7114 / 8 GPUs = 889.25 tok/s/GPU; input + output tokens: each request carries
    8192 + 1024 = 9216 tokens of which 1024 are output, 7114 x 1024 / 9216 = 790.4 output tok/s
    (98.8 per GPU)."""
    (r,) = rows
    assert (r["metric"], float(r["value"]), r["unit"]) == ("other", 7114.0, "tok/s")
    assert (r["mode"], r["isl"], r["osl"], r["concurrency"]) == (
        "concurrency",
        "8192",
        "1024",
        "1024",
    )
    assert request_count(r["notes"]) == 640
    assert pytest.approx(889.25) == 7114 / 8
    assert pytest.approx(790.4, abs=0.05) == 7114 * 1024 / 9216
    assert "889.25" in r["notes"] and "790.4" in r["notes"]
    assert "VLLM_ROCM_USE_AITER=0" in r["notes"]


def test_layout_is_read_from_the_stated_command(rows):
    """'--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel': eight
    attention-DP ranks and the experts split eight ways (the page's table: 256 / 8 = 32 routed
    experts per GPU), i.e. DEP8 with one GPU per expert shard."""
    (r,) = rows
    assert "--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel" in r["notes"]
    lay = row_parallel_layout(r)
    assert (lay.tp, lay.attention_dp, lay.ep, lay.moe_tp, lay.width) == (1, 8, 8, 1, 8)
    assert lay.label == "DEP8"
    rel = row_release(r)
    assert (rel.version, rel.pre) == ((0, 11, 1), "rc3.dev69")


def test_ambiguous_row_is_kept_and_never_predicted(rows, catalog):
    """Metric 'other' = ambiguous in the source (planner/benchmarks/README.md): the predictor
    returns no number and says why instead of guessing which tokens the page counted."""
    (out,) = Predictor(catalog, CSV.parent, None).predict_rows([dict(r) for r in rows])
    assert out["reason"] and not out["predicted"]
