"""Published EP / DEP / disaggregated MoE rows of ``data/benchmarks/public_ep2026.csv``.

Four sources, each registered in ``data/benchmarks/sources.yaml``: the SGLang team's GB200 NVL72
posts (Part I, 2025-06-16; Part II, 2025-09-25), the NVIDIA / SGLang GB300 long-context post
(2026-02-19) and TensorRT-LLM's ADP-balance tech blog (DeepSeek V3 DEP8 on 8 GB200). These
tests pin every row to the printed number (per-GPU values kept as printed, per-instance prefill
totals derived with the arithmetic shown), check the layouts the posts state, and that every
row is kept and never predicted: the pools are measured alone (disaggregated), the GB300 and
ADP-balance throughputs do not say which tokens they count.
"""

from __future__ import annotations

import collections
import datetime as dt

import pytest
import yaml
from _benchmark_rows import check_loads, check_provenance, read_rows

from planner.benchmarks.predict import Predictor
from planner.benchmarks.schema import row_parallel_layout
from planner.catalog import DATA_DIR

CSV = DATA_DIR / "benchmarks" / "public_ep2026.csv"
PART1 = "SGLang blog: DeepSeek on GB200 NVL72 with PD and large-scale EP (Part I)"
PART2 = "SGLang blog: DeepSeek on GB200 NVL72 with PD and large-scale EP (Part II)"
GB300 = "SGLang blog: DeepSeek-R1 on GB300 NVL72, long-context 128K/8K (PD, Wide-EP, MTP)"
ADP = "TensorRT-LLM tech blog 10: ADP balance strategy (DeepSeek-V3 DEP8 on GB200)"
PREFIX = {PART1: "sgb1", PART2: "sgb2", GB300: "sgb3", ADP: "tadp"}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return read_rows(CSV)


@pytest.fixture(scope="module")
def by_id(rows) -> dict[str, dict[str, str]]:
    return {r["id"]: r for r in rows}


def test_file_loads_with_the_planners_loader(rows, catalog):
    assert check_loads(CSV, rows, catalog) == 20


def test_every_row_has_source_detail_and_as_of(rows):
    check_provenance(
        rows,
        PREFIX,
        (dt.date(2025, 6, 16), dt.date(2026, 12, 7)),
        ("nvidia-gb200", "nvidia-gb300"),
        ("sglang", "trtllm"),
    )
    commits = {"sgb1": "00766f6b72b99cccd775561f9f8d31e966e05e3f",
               "sgb2": "007d070f20cbec71b8e91a24a0bd25fb90d2d481",
               "sgb3": "5b8a5044200f7c485737210f318c23ada337f278",
               "tadp": "011cfc2cc18a24a95603f91dc53f8fc60bc80189"}  # fmt: skip
    for r in rows:
        assert commits[r["id"][:4]] in r["source_detail"], r["id"]


def test_sources_yaml_lists_each_source_with_its_file_and_row_count(rows):
    doc = yaml.safe_load((DATA_DIR / "benchmarks" / "sources.yaml").read_text(encoding="utf-8"))
    counts = collections.Counter(r["source"] for r in rows)
    assert counts == {PART1: 1, PART2: 4, GB300: 12, ADP: 3}
    for source, n in counts.items():
        (entry,) = [s for s in doc["sources"] if s["source"] == source]
        assert (entry["file"], entry["rows"]) == ("public_ep2026.csv", n)
        dt.date.fromisoformat(entry["as_of"])


def test_gb200_decode_rows_are_the_printed_per_gpu_numbers(by_id):
    """Part I: '7,583 tokens per second per GPU for decoding'; Part II: '26,156 input and 13,386
    output tokens per second per GPU' (FP8 attention, NVFP4 MoE) and '18,471 input and 9,087
    output' (BF16 attention, FP8 MoE). Decode pools: 12 nodes x 4 GPUs = 48 ranks, so the pool
    totals in the notes are 7,583 x 48 = 363,984, 13,386 x 48 = 642,528 and 9,087 x 48 =
    436,176 output tok/s."""
    want = {"sgb1-0001": 7583, "sgb2-0002": 13386, "sgb2-0004": 9087}
    for rid, per_gpu in want.items():
        r = by_id[rid]
        assert (r["metric"], float(r["value"]), r["unit"], r["n_gpus"]) == (
            "output_tok_s_per_gpu",
            per_gpu,
            "tok/s/gpu",
            "48",
        )
        assert f"{per_gpu * 48:,}" in r["notes"], rid
    assert 12 * 4 == 48
    assert (7583 * 48, 13386 * 48, 9087 * 48) == (363984, 642528, 436176)
    assert (by_id["sgb2-0002"]["precision"], by_id["sgb2-0002"]["kv_precision"]) == ("nvfp4", "fp8")
    assert (by_id["sgb2-0004"]["precision"], by_id["sgb2-0004"]["kv_precision"]) == ("fp8", "bf16")


def test_gb200_prefill_rows_are_per_gpu_times_the_instance(by_id):
    """'for prefill, we use 4 ranks per instance for high-precision and 2 for low-precision':
    26,156 x 2 = 52,312 prompt tok/s (NVFP4) and 18,471 x 4 = 73,884 (FP8) per instance."""
    low, high = by_id["sgb2-0001"], by_id["sgb2-0003"]
    assert (low["metric"], float(low["value"]), low["n_gpus"]) == ("prefill_tok_s", 52312, "2")
    assert (high["metric"], float(high["value"]), high["n_gpus"]) == ("prefill_tok_s", 73884, "4")
    assert float(low["value"]) / int(low["n_gpus"]) == 26156
    assert float(high["value"]) / int(high["n_gpus"]) == 18471
    assert low["tp"] == low["ep"] == high["tp"] == high["ep"] == ""  # not stated
    assert low["isl"] == high["isl"] == "2000"


def test_part2_decode_layout_is_dep48(by_id):
    """'For decode, we use 48 ranks, i.e. large scale EP' with DP attention (the series' decode
    setup): tp 1, attention_dp 48, ep 48; 48 does not divide the 256 routed experts."""
    lay = row_parallel_layout(by_id["sgb2-0002"])
    assert (lay.tp, lay.attention_dp, lay.ep, lay.moe_tp, lay.width) == (1, 48, 48, 1, 48)
    assert 256 % 48 != 0


def test_gb300_rows_are_the_printed_pairs(by_id):
    """Max throughput 226.2 vs 147.9 TPS/GPU (1.53X) without MTP, 224.2 vs 169.1 with it; the
    two latency bands: 204.7 (GB300, GB200 147.9), 167.9 vs 106.5, 196.4 vs 140.0; TTFT 15.2 s /
    18.6 s without chunking and 8.6 s with 32K dynamic chunking. The printed ratios check the
    transcription: 226.2 / 147.9 = 1.529, 224.2 / 169.1 = 1.326, 204.7 / 147.9 = 1.384,
    167.9 / 106.5 = 1.577, 196.4 / 140.0 = 1.403."""
    v = {rid: float(by_id[rid]["value"]) for rid in by_id if rid.startswith("sgb3")}
    assert [v[f"sgb3-{i:04d}"] for i in range(1, 10)] == [
        226.2, 147.9, 224.2, 169.1, 204.7, 167.9, 106.5, 196.4, 140.0,
    ]  # fmt: skip
    assert round(v["sgb3-0001"] / v["sgb3-0002"], 2) == 1.53
    assert round(v["sgb3-0003"] / v["sgb3-0004"], 2) == 1.33
    assert round(v["sgb3-0005"] / v["sgb3-0002"] - 1, 3) == 0.384
    assert round(v["sgb3-0006"] / v["sgb3-0007"], 2) == 1.58
    assert round(v["sgb3-0008"] / v["sgb3-0009"], 2) == 1.40
    assert [v[f"sgb3-{i:04d}"] for i in (10, 11, 12)] == [15200, 18600, 8600]
    for i in range(1, 10):
        assert by_id[f"sgb3-{i:04d}"]["metric"] == "other"
    for i in (10, 11, 12):
        assert by_id[f"sgb3-{i:04d}"]["metric"] == "ttft_ms_mean"


def test_adp_balance_rows_and_their_speedups(by_id):
    """'Baseline 25,664', 'Context Wait 33,499 ... 1.31x', 'Full Strategy 34,140 ... 1.33x':
    33,499 / 25,664 = 1.305, 34,140 / 25,664 = 1.330; DEP8 on 8 GB200."""
    vals = [float(by_id[f"tadp-{i:04d}"]["value"]) for i in (1, 2, 3)]
    assert vals == [25664, 33499, 34140]
    assert round(vals[1] / vals[0], 2) == 1.31 and round(vals[2] / vals[0], 2) == 1.33
    for i in (1, 2, 3):
        r = by_id[f"tadp-{i:04d}"]
        lay = row_parallel_layout(r)
        assert (lay.tp, lay.attention_dp, lay.ep, r["n_gpus"]) == (1, 8, 8, "8")
        assert (r["metric"], r["precision"]) == ("other", "")


def test_every_row_is_kept_and_never_predicted(rows, catalog):
    """Disaggregated pools measured alone, MTP, an undefined TPS or an unstated precision: each
    row gets a reason and no number."""
    outs = Predictor(catalog, CSV.parent, None).predict_rows([dict(r) for r in rows])
    for r, out in zip(rows, outs, strict=True):
        assert out["reason"] and not out["predicted"], r["id"]
        if r["id"].startswith(("sgb1", "sgb2")):
            assert r["notes"].startswith("layout_unsupported: disaggregated prefill/decode")


def test_no_row_enters_the_fit(catalog):
    """The calibration's row preparation gives none of these rows a predictor, so the fitted
    profile (and every held-out number of issue 29 / 30) is the same with or without the file."""
    from planner.benchmarks.io import load_measurements
    from planner.calibration.fit import prepare_rows

    prepared = prepare_rows(load_measurements(CSV, catalog), catalog)
    assert len(prepared) == 20
    for p in prepared:
        assert p.predict is None and p.reason, p.id
