"""The node behind the AMD MLPerf Llama-2-70B rows and the rows it was fitted on
(planner/benchmarks/mlperf_fit_domain.py, docs/changes/2026-12-07f/mlpamd.md, issue 32 item 3).

Every AMD MLPerf Server / Interactive row runs one engine per GPU (``tensor_parallel_size:
1``, ``device_count: 8`` of AMD's harness YAMLs, mlcommons/inference_results_v5.1 @ 965182b0
closed/AMD/code/llama2-70b-99/harness_llm/models/llama2-70b/*.yaml); the node they resolve to
was fitted on TP4 / TP8 rows only."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from planner.benchmarks.harness_gemm import harness_gemm_tables
from planner.benchmarks.io import load_measurements
from planner.benchmarks.mlperf_fit_domain import fit_domain_note, node_for, node_rows
from planner.benchmarks.mlperf_latency import mlperf_latency_rows
from planner.calibration.fit import public_files_default
from planner.catalog import load_catalog
from planner.catalog.profile import load_profile, resolve_params


@pytest.fixture(scope="module")
def data():
    cat = load_catalog()
    return cat, load_measurements(public_files_default(), cat), load_profile()


def _row(rec) -> dict[str, str]:
    return {k: "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
            for k, v in rec.items()}  # fmt: skip


def test_node_rows_are_the_rows_the_fit_counted(data):
    """The domain filter (sources, GPUs, engine, precision, dense models) finds exactly the
    rows the fit recorded for the CDNA3 vLLM fp8 dense node (its ``n_rows``, 169 in the
    bundled profile: two independent counts of one set)."""
    cat, df, prof = data
    node = node_for(prof, cat, "amd-mi300x", "vllm", "fp8", "dense")
    assert (node.gpu, node.framework, node.precision, node.family) == (
        "amd-mi300x", "vllm", "fp8", "dense")  # fmt: skip
    assert len(node_rows(df, node, cat)) == node.n_rows


def test_every_amd_mlperf_row_is_tp1_and_its_node_has_no_tp1_row(data):
    """All AMD MLPerf Server / Interactive rows (MI300X, MI325X, MI355X) run TP1; the node
    each resolves to was fitted on TP4 and TP8 rows (Llama-3.1-70B / 405B on MI300X), and the
    note says the row lies outside them. When TP1 rows enter that node's fit this fails and
    docs/changes/2026-12-07f/mlpamd.md's diagnosis must be redone."""
    cat, df, prof = data
    rows = mlperf_latency_rows(df)
    amd = rows[rows["hardware"].str.startswith("amd-")]
    assert len(amd) >= 20
    for rec in amd.to_dict("records"):
        row = _row(rec)
        assert float(row["tp"]) == 1, row["id"]
        node = node_for(prof, cat, row["hardware"], "vllm", row["precision"], "dense")
        tps = {int(t) for t in pd.to_numeric(node_rows(df, node, cat)["tp"], errors="coerce")}
        assert tps == {4, 8}, (row["id"], tps)
        assert "this row runs TP1, outside them" in fit_domain_note(df, prof, row, cat)


def test_a_tp1_row_inside_its_nodes_domain_says_so(data):
    """The H200 TensorRT-LLM fp8 node is fitted on trtllm-bench TP1 rows among others: an
    MLPerf H200 row (TP1 in the v5.1 NVIDIA configs) lies among them."""
    cat, df, prof = data
    rows = mlperf_latency_rows(df)
    rec = rows[(rows["hardware"] == "nvidia-h200-sxm") & (pd.to_numeric(rows["tp"]) == 1)]
    note = fit_domain_note(df, prof, _row(rec.iloc[0].to_dict()), cat)
    assert "this row runs TP1, among them" in note, note


@pytest.mark.xfail(
    strict=True,
    reason="the CDNA3 vLLM fp8 node's GEMM term for one whole (TP1) Llama-2-70B layer at 128 "
    "tokens is 511 us, 1.86x the 274 us of the harness's own hipBLASLt timings: its rate was "
    "fitted on TP4 / TP8 rows, whose GEMMs are a quarter or an eighth as wide "
    "(docs/changes/2026-12-07f/mlpamd.md); a fit with TP1 CDNA3 rows is fit.py scope",
)
def test_node_gemm_term_at_tp1_matches_the_harness_kernels(data):
    """One Llama-2-70B decoder layer at TP1, fp8, 128 tokens on MI325X.

    Harness (data/mlperf_harness_gemm.yaml, table mi325x-interactive, n = 128): QKV 36.7269 +
    attention out 31.118 + gate/up 127.874 + down 78.4811 = 274.2 us.
    Node (the step model's GEMM term written out, planner/benchmarks/harness_gemm.py):
    W = 10240 x 8192 + 8192 x 8192 + 57344 x 8192 + 8192 x 28672 = 855,638,016 B (fp8), F =
    2 W = 1.711e9 FLOP per token; t = max(W / (BW mem_eff), F (n + compute_half_tokens) /
    (peak compute_eff)); bundled profile: 1.711e9 x (128 + 185.2) / (2.61e15 x 0.4017) =
    511 us (the weight read, 855.6e6 / (6e12 x 0.5255) = 271 us, is shorter)."""
    cat, _, prof = data
    table = next(t for t in harness_gemm_tables() if t.name == "mi325x-interactive")
    harness_us = 1e6 * table.layer_time_s()[table.tokens.index(128)]
    assert harness_us == pytest.approx(274.2, abs=0.1)
    p, _ = resolve_params("amd-mi325x", "vllm", "fp8", catalog=cat, profile=prof, family="dense")
    g = cat.gpu("amd-mi325x")
    w = table.weight_bytes_per_layer()
    assert w == 855_638_016
    t_mem = w / (g.mem_bw_gbs * 1e9 * p.mem_eff)
    t_gemm = 2 * w * (128 + p.compute_half_tokens) / (g.fp8_dense_tflops * 1e12 * p.compute_eff)
    node_us = 1e6 * max(t_mem, t_gemm)
    assert node_us == pytest.approx(harness_us, rel=0.20), (node_us, harness_us)
