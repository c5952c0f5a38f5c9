"""SemiAnalysis InferenceX open results (``data/benchmarks/public_inferencex.csv``).

The rows come from the InferenceX dashboard API as captured in SemiAnalysisAI/InferenceX-app's
fixtures (DeepSeek-R1-0528 only); see ``data/benchmarks/sources.yaml``. These tests check that
the file loads and carries its provenance, that rows reproduce the source's printed numbers,
that the rows are internally consistent with a closed-loop client (Little's law), and the
InferenceX client's random-length rule.
"""

from __future__ import annotations

import collections
import csv
import datetime as dt
import re

import numpy as np
import pytest
import yaml

from planner.benchmarks.io import load_measurements
from planner.benchmarks.predict import Predictor
from planner.benchmarks.random_lengths import (
    DrawnLengths,
    inferencex_random_bounds,
    random_dataset_lengths,
)
from planner.benchmarks.schema import layout_unsupported, workload_mismatch
from planner.catalog import DATA_DIR

CSV = DATA_DIR / "benchmarks" / "public_inferencex.csv"
SOURCE = "SemiAnalysis InferenceX (InferenceMAX) open results"


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    with open(CSV, newline="") as f:
        return list(csv.DictReader(f))


def _measured(rows):
    return [r for r in rows if layout_unsupported(r["notes"]) is None]


def test_file_loads_with_the_planners_loader(rows, catalog):
    df = load_measurements(CSV, catalog)
    assert len(df) == len(rows) >= 1500
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"ixm-\d{4}", i) for i in ids)


def test_every_row_has_source_detail_and_as_of(rows):
    for r in rows:
        assert r["source"] == SOURCE, r["id"]
        assert "SemiAnalysisAI/InferenceX-app" in r["source_detail"], r["id"]
        assert "github.com/SemiAnalysisAI/InferenceX/actions/runs/" in r["notes"], r["id"]
        day = dt.date.fromisoformat(r["as_of"])
        # only runs with the client in the InferenceX repository (d053ae24e, 2026-01-21)
        assert dt.date(2026, 1, 21) <= day <= dt.date(2026, 6, 14), r["id"]


def test_sources_yaml_lists_the_file_and_its_row_count(rows):
    doc = yaml.safe_load((DATA_DIR / "benchmarks" / "sources.yaml").read_text(encoding="utf-8"))
    (entry,) = [s for s in doc["sources"] if s["source"] == SOURCE]
    assert entry["file"] == "public_inferencex.csv"
    assert entry["rows"] == len(rows)


def test_rows_reproduce_the_source_by_hand(rows):
    """ixm-0886..0890: 4x MI355X, SGLang v0.5.9, DeepSeek-R1-0528 MXFP4, TP4, 1k/1k, conc 4,
    run 22469096331 (2026-02-27). The API prints (read independently from the upstream copy,
    SemiAnalysisAI/InferenceX-app packages/app/cypress/fixtures/api/benchmarks.json @ 3a600f1d):
    tput_per_gpu 180.65719659379948, output_tput_per_gpu 89.88905796876784 [tok/s/GPU],
    median_tpot 0.01064601337724555, median_ttft 0.10738262953236699, median_e2el
    9.95336338551715 [s]. InferenceX divides the client's throughputs by TP = 4 GPUs:
      total  = 180.65719659379948 x 4 = 722.6288 -> 722.63 tok/s
      output =  89.88905796876784 x 4 = 359.5562 -> 359.56 tok/s
      TPOT 10.646 ms, TTFT 107.383 ms, E2E 9953.363 ms (s x 1000)."""
    by_id = {r["id"]: r for r in rows}
    expect = {
        "ixm-0886": ("total_tok_s", 722.63),
        "ixm-0887": ("output_tok_s_total", 359.56),
        "ixm-0888": ("tpot_ms_median", 10.646),
        "ixm-0889": ("ttft_ms_median", 107.383),
        "ixm-0890": ("e2e_ms_median", 9953.363),
    }
    for rid, (metric, value) in expect.items():
        r = by_id[rid]
        assert (r["hardware"], r["tp"], r["n_gpus"], r["concurrency"]) == (
            "amd-mi355x",
            "4",
            "4",
            "4",
        )
        assert (
            r["precision"] == "mxfp4" and r["framework"] == "sglang" and r["as_of"] == "2026-02-27"
        )
        assert "runs/22469096331/" in r["notes"] and "random_input_len=1024" in r["notes"]
        assert r["metric"] == metric and float(r["value"]) == pytest.approx(value, abs=1e-9)


def test_throughputs_obey_littles_law(rows):
    """A closed loop of C clients with --ignore-eos: output tok/s = C x E[O] / E[E2E]. With the
    client's lengths O ~ U{floor(0.8 O_nom) .. O_nom} (E[O] = 921.5 for 1024, 7372.5 for 8192)
    and the median E2E standing in for the mean, every measured point lands within 0.85-1.05
    (258 points: 0.907 .. 1.008 when written); the input/output split matches the drawn means
    to 5%. A per-node or per-GPU misreading would be off by the TP factor (4x or 8x)."""
    pts: dict[tuple, dict[str, float]] = collections.defaultdict(dict)
    for r in _measured(rows):
        lens = re.search(r"random_input_len=(\d+); random_output_len=(\d+)", r["notes"]).groups()
        run = re.search(r"run (\S+);", r["notes"]).group(1)
        key = (run, r["hardware"], r["precision"], r["tp"], int(r["concurrency"]), lens)
        pts[key][r["metric"]] = float(r["value"])
    # the EP / DEP points of the latest snapshot publish total_tok_s only (convert_ep_rows.py)
    pts = {k: m for k, m in pts.items() if "e2e_ms_median" in m}
    assert len(pts) >= 250
    for (_, _, _, _, conc, (li, lo)), m in pts.items():
        ei = sum(inferencex_random_bounds(int(li), 0.8)) / 2
        eo = sum(inferencex_random_bounds(int(lo), 0.8)) / 2
        little = conc * eo / (m["e2e_ms_median"] / 1000)
        assert 0.85 <= m["output_tok_s_total"] / little <= 1.05
        assert m["total_tok_s"] / m["output_tok_s_total"] == pytest.approx((ei + eo) / eo, rel=0.05)


def test_inferencex_client_rule_by_hand():
    # sample_uniform: randint(int(L * 0.8), L + 1): 1024 * 0.8 = 819.2 -> 819; 8192 -> 6553.6 -> 6553
    assert inferencex_random_bounds(1024, 0.8) == (819, 1024)
    assert inferencex_random_bounds(8192, 0.8) == (6553, 8192)
    notes = (
        "InferenceX utils/bench_serving/benchmark_serving.py closed loop; random_input_len=1024; "
        "random_output_len=8192; random_range_ratio=0.8; 40 requests"
    )
    row = {"framework": "sglang", "framework_version": "0.5.9", "notes": notes}
    i, o, note = random_dataset_lengths(row)
    assert isinstance(i, DrawnLengths) and len(i.tokens) == len(o.tokens) == 40
    # np.random.seed(0); randint(0, vocab, size=0) draws nothing; randint(819, 1025, 40) starts
    # 991, 866, 936, 1011, 886 (numpy's legacy Mersenne Twister, stable across releases)
    assert i.tokens[:5] == (991, 866, 936, 1011, 886)
    assert min(i.tokens) >= 819 and max(i.tokens) <= 1024
    assert min(o.tokens) >= 6553 and max(o.tokens) <= 8192
    assert "InferenceX" in note and "--seed 0" in note
    # --seed in the notes is used instead of 0
    i1, _, _ = random_dataset_lengths(dict(row, notes=notes + "; --seed 1"))
    assert i1.tokens != i.tokens
    # without the request count: the distribution, both ends included
    iu, ou, _ = random_dataset_lengths(dict(row, notes=notes.replace("; 40 requests", "")))
    assert (iu.min_tokens, iu.max_tokens, ou.min_tokens, ou.max_tokens) == (819, 1024, 6553, 8192)
    # the ratio has no default the row can rely on
    reason = random_dataset_lengths(dict(row, notes=notes.replace("random_range_ratio=0.8; ", "")))
    assert isinstance(reason, str) and "random_range_ratio" in reason
    # the sglang client's rule is unchanged (output from 0 at ratio 0)
    sgl = {"framework": "sglang", "framework_version": "0.5.6", "notes": "sglang.bench_serving; "}
    _, o0, _ = random_dataset_lengths(
        dict(sgl, notes=sgl["notes"] + "random_input_len=10; random_output_len=10")
    )
    assert (o0.min_tokens, o0.max_tokens) == (1, 10)


def test_unsupported_layouts_are_kept_and_say_why(rows, catalog):
    unsupported = [r for r in rows if layout_unsupported(r["notes"]) is not None]
    assert len(unsupported) >= 250
    words = ("expert parallel", "attention data-parallel", "speculative", "disaggregated")
    assert all(any(w in layout_unsupported(r["notes"]) for w in words) for r in unsupported)
    pred = Predictor(catalog, CSV.parent, None)
    for r in unsupported[:: max(1, len(unsupported) // 20)]:
        out = pred.predict_row(dict(r))
        assert out["predicted"] in (None, "") and (
            "layout not expressible" in out["reason"] or "not predicted row by row" in out["reason"]
        )


def test_a_measured_row_is_predicted(rows, catalog):
    """One point through the simulator: 8x MI300X SGLang v0.5.12, 1k/1k, conc 4 (2026-05-18);
    the InferenceX client's lengths are replayed and the engine settings of the row are used."""
    (r,) = [
        x
        for x in rows
        if x["hardware"] == "amd-mi300x"
        and x["as_of"] == "2026-05-18"
        and x["concurrency"] == "4"
        and x["metric"] == "total_tok_s"
        and "random_input_len=1024; random_output_len=1024" in x["notes"]
    ]
    out = Predictor(catalog, CSV.parent, None).predict_row(dict(r))
    assert out["reason"] == "" and float(out["predicted"]) > 0
    assert "max_num_batched_tokens=131072 (row)" in out["settings"]
    assert np.isfinite(float(out["predicted"]))


def test_every_row_gets_a_prediction_or_a_reason(rows, catalog):
    """`planner predict` on the whole file: each measured row is simulated (no reason), each
    unsupported layout says why (the brief's check; ~10 s, the simulator runs 266 points)."""
    pred = Predictor(catalog, CSV.parent, None)
    outs = pred.predict_rows([dict(r) for r in rows])
    for r, out in zip(rows, outs, strict=True):
        if workload_mismatch(r["notes"]) is not None:  # scripts/annotate_workload_mismatch.py
            assert "workload_mismatch" in out["reason"] and not out["predicted"], r["id"]
        elif layout_unsupported(r["notes"]) is None:
            assert out["reason"] == "" and float(out["predicted"]) > 0, r["id"]
        else:
            assert out["reason"].startswith("layout not expressible") or (
                "not predicted row by row" in out["reason"]
            ), r["id"]
