"""AMD attention-data-parallel + expert-parallel rows (``data/benchmarks/public_amd_dep.csv``).

Two sources, each registered in ``data/benchmarks/sources.yaml``: AMD's ROCm blog "The vLLM MoE
Playbook" (2025-11-24), DeepSeek-R1 on 8x MI300X with vLLM 0.11.1rc3, DP=8 + EP, AITER off,
8192 / 1024 tokens, 640 requests at a concurrency limit of 1024: "7,114 tok/s"; and AMD's ROCm
blog on a 2P2D MI300X deployment (2025-11-12), DP attention + EP16 decode "12.4k tokens per second
per node", prefill "32.3k". These tests pin the rows to the printed numbers, check the layout read
from the stated command (DEP8: tp 1, attention_dp 8, ep 8), the request count and release the
planner reads, and that every row is kept and never predicted: the Playbook's metric is
ambiguous (output or input + output tokens), the 2P2D rows are disaggregated and multi-node.
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
WIDE = (
    "AMD ROCm blog: Practical, Fault-Robust Distributed Inference for DeepSeek on AMD MI300X "
    "(2P2D, DP attention + EP16)"
)
PREFIX = {PLAYBOOK: "rmoe", WIDE: "rwep"}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return read_rows(CSV)


def test_file_loads_with_the_planners_loader(rows, catalog):
    assert check_loads(CSV, rows, catalog) == 3


@pytest.fixture(scope="module")
def by_id(rows) -> dict[str, dict[str, str]]:
    return {r["id"]: r for r in rows}


def test_every_row_has_source_detail_and_as_of(rows):
    check_provenance(
        rows, PREFIX, (dt.date(2025, 11, 12), dt.date(2025, 11, 24)), ("amd-mi300x",), ("vllm",)
    )
    commits = {"rmoe": "58fdc95fcf04eb9bcc3f4023dc0cc48712729b8a",
               "rwep": "7552daef2d1f2e4be9faf92f8c683bd15a349007"}  # fmt: skip
    for r in rows:
        assert commits[r["id"][:4]] in r["source_detail"], r["id"]


def test_sources_yaml_lists_each_source_with_its_file_and_row_count(rows):
    doc = yaml.safe_load((DATA_DIR / "benchmarks" / "sources.yaml").read_text(encoding="utf-8"))
    counts = collections.Counter(r["source"] for r in rows)
    assert counts == {PLAYBOOK: 1, WIDE: 2}
    for source, n in counts.items():
        (entry,) = [s for s in doc["sources"] if s["source"] == source]
        assert (entry["file"], entry["rows"]) == ("public_amd_dep.csv", n)
        dt.date.fromisoformat(entry["as_of"])


def test_playbook_row_is_the_printed_number_with_its_workload(by_id):
    """'At concurrency=1024, achieves 7,114 tok/s'; 'Input: 8192 tokens', 'Output: 1024 tokens
    per request', 'Workload: 640 total requests'. The two readings the notes give, by hand:
    output tokens 7114 / 8 GPUs = 889.25 tok/s/GPU; input + output tokens: each request carries
    8192 + 1024 = 9216 tokens of which 1024 are output, 7114 x 1024 / 9216 = 790.4 output tok/s
    (98.8 per GPU)."""
    r = by_id["rmoe-0001"]
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


def test_playbook_layout_is_read_from_the_stated_command(by_id):
    """'--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel': eight
    attention-DP ranks and the experts split eight ways (the page's table: 256 / 8 = 32 routed
    experts per GPU), i.e. DEP8 with one GPU per expert shard."""
    r = by_id["rmoe-0001"]
    assert "--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel" in r["notes"]
    lay = row_parallel_layout(r)
    assert (lay.tp, lay.attention_dp, lay.ep, lay.moe_tp, lay.width) == (1, 8, 8, 1, 8)
    assert lay.label == "DEP8"
    rel = row_release(r)
    assert (rel.version, rel.pre) == ((0, 11, 1), "rc3.dev69")


def test_wide_ep_rows_are_the_per_node_numbers_times_the_pool(by_id):
    """'12.4k tokens per second per node' (decode, 2,000 in / 100 out) over the two decode nodes
    of the 2P2D instance: 2 x 12,400 = 24,800 output tok/s on 16 GPUs = 1,550 per GPU;
    '32.3k tokens per second per node' (prefill, 2,000 in) over two prefill nodes: 2 x 32,300 =
    64,600 prompt tok/s on 16 GPUs = 4,037.5 per GPU."""
    dec, pre = by_id["rwep-0001"], by_id["rwep-0002"]
    assert (dec["metric"], float(dec["value"]), dec["n_gpus"]) == (
        "output_tok_s_total",
        2 * 12400,
        "16",
    )
    assert (pre["metric"], float(pre["value"]), pre["n_gpus"]) == ("prefill_tok_s", 2 * 32300, "16")
    assert 24800 / 16 == 1550 and 64600 / 16 == 4037.5
    assert "1,550 per GPU" in dec["notes"] and "4,037.5 per GPU" in pre["notes"]
    assert (dec["isl"], dec["osl"], pre["isl"]) == ("2000", "100", "2000")
    lay = row_parallel_layout(dec)
    assert (lay.tp, lay.attention_dp, lay.ep) == (1, 16, 16)
    assert pre["tp"] == pre["ep"] == ""  # the prefill pool's layout is not stated


def test_every_row_is_kept_and_never_predicted(rows, catalog):
    """Metric 'other' = ambiguous in the source (planner/benchmarks/README.md): no number, a
    reason, instead of guessing which tokens the Playbook counted; the 2P2D rows carry the
    layout_unsupported tag (disaggregated, multi-node) and are never predicted either."""
    outs = Predictor(catalog, CSV.parent, None).predict_rows([dict(r) for r in rows])
    for r, out in zip(rows, outs, strict=True):
        assert out["reason"] and not out["predicted"], r["id"]
        if r["id"].startswith("rwep"):
            assert r["notes"].startswith("layout_unsupported: disaggregated prefill/decode")
