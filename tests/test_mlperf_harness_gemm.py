"""The GEMM timings AMD publishes with its MLPerf v5.1 MI325X configs
(``data/mlperf_harness_gemm.yaml``, :mod:`planner.benchmarks.harness_gemm`) and the
``harness_gemm`` what-if of :mod:`planner.benchmarks.mlperf_latency` (issue 32, item 3;
changes/s8-mlperfint.md)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.benchmarks.harness_gemm import (
    COMPUTE_FROM_TOKENS,
    gemm_params,
    harness_gemm_tables,
    table_for_row,
)
from planner.benchmarks.io import load_measurements
from planner.benchmarks.mlperf_latency import scenario_replica
from planner.calibration.fit import public_files_default
from planner.catalog import load_catalog
from planner.catalog.profile import load_profile, resolve_params


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


@pytest.fixture(scope="module")
def tables():
    return {t.name: t for t in harness_gemm_tables()}


def _row(df, row_id):
    row = df[df["id"] == row_id].iloc[0].to_dict()
    return {k: "" if v is None or (isinstance(v, float) and v != v) else str(v)
            for k, v in row.items()}  # fmt: skip


def test_the_four_shapes_are_one_llama2_70b_layer(tables):
    """Llama-2-70B: hidden 8192, 64 query heads and 8 KV heads of 128, MLP 28,672. QKV is
    8192 x (64 + 2 x 8) x 128 = 8192 x 10,240; out 8192 x 8192; gate+up 8192 x 2 x 28,672 =
    8192 x 57,344; down 28,672 x 8192. Weights: 83,886,080 + 67,108,864 + 469,762,048 +
    234,881,024 = 855,638,016 fp8 bytes a layer."""
    for t in tables.values():
        assert t.shapes == ((10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672))
        assert t.weight_bytes_per_layer() == 855_638_016


def test_a_file_line_is_read_as_its_bucket_edge():
    """The line quoted in the data file's header: m 10240, n 688, k 8192, 1.07984e6 GFLOPS,
    106.893 us: 2 x 10240 x 688 x 8192 / 106.893e-6 s = 1.0799e15 FLOP/s, so the timing is
    of n = 688, the upper edge of the 673-688 bucket (every kept token count is a multiple
    of 16)."""
    assert pytest.approx(1.07984e15, rel=1e-4) == 2 * 10240 * 688 * 8192 / 106.893e-6
    for t in harness_gemm_tables():
        assert all(n % 16 == 0 for n in t.tokens)


def test_layer_time_by_hand(tables):
    """Interactive table at n = 256: 52.6018 + 42.4654 + 198.556 + 126.287 = 419.9102 us;
    at n = 16 (a weight read): 21.5994 + 18.4791 + 93.977 + 49.5739 = 183.6294 us."""
    t = tables["mi325x-interactive"]
    times = dict(zip(t.tokens, t.layer_time_s(), strict=True))
    assert times[256] == pytest.approx(419.9102e-6, rel=1e-9)
    assert times[16] == pytest.approx(183.6294e-6, rel=1e-9)


def test_gemm_params_reproduce_the_table(cat, tables):
    """mem_eff from the weight read at 16 tokens: 855,638,016 B / (6.0e12 B/s x 183.6294e-6
    s) = 0.7766 (MI325X 6.0 TB/s). The fitted compute form, F (n + h) / (peak x eff) with F =
    2 x 855,638,016 FLOPs a token and the 2,610 TFLOPS fp8 peak, is within 6% of every
    compute-bound point of both tables (token counts >= 64)."""
    g = cat.gpu("amd-mi325x")
    for name, t in tables.items():
        if t.gpu != "amd-mi325x":
            continue
        p = gemm_params(t, g)
        n = np.asarray(t.tokens, float)
        sel = n >= COMPUTE_FROM_TOKENS
        f = 2.0 * t.weight_bytes_per_layer()
        model = f * (n + p["compute_half_tokens"]) / (2610e12 * p["compute_eff"])
        ratio = model[sel] / t.layer_time_s()[sel]
        assert np.all(np.abs(ratio - 1) < 0.06), (name, ratio)
        assert 0.45 < p["compute_eff"] < 0.7 and 50 < p["compute_half_tokens"] < 200
    p = gemm_params(tables["mi325x-interactive"], g)
    assert p["mem_eff"] == pytest.approx(855_638_016 / (6.0e12 * 183.6294e-6), rel=1e-6)
    assert "mem_eff" not in gemm_params(tables["mi325x-server"], g)  # no weight-read point


def test_the_profiles_cdna3_gemm_term_is_slower_than_the_harness_kernels(cat, tables):
    """The finding (a diagnosis of the bundled profile): the vLLM fp8 node MI325X takes
    (transferred from MI300X) times a Llama-2-70B layer's GEMMs 1.2-1.8x slower than AMD's
    tuned hipBLASLt kernels at 64-2,048 tokens, the token counts of Interactive and Server
    steps (e.g. n = 256: max(W / (6e12 x 0.476), F (256 + 225) / (2.61e15 x 0.479)) = 658
    us against 420 us timed). 1.3-2.1x before the tenth pass: the shard-width factor
    (planner/engine/gemm_width.py) lets the node's TP4 / TP8 rows be slow for their narrow
    shards, so the refit raised its GEMM rate (this TP1 term carries no factor)."""
    g = cat.gpu("amd-mi325x")
    p, _ = resolve_params("amd-mi325x", "vllm", "fp8", catalog=cat, family="dense")
    t = tables["mi325x-interactive"]
    n = np.asarray(t.tokens, float)
    w = t.weight_bytes_per_layer()
    node = np.maximum(
        w / (g.mem_bw_bytes_s * p.mem_eff),
        2 * w * (n + p.compute_half_tokens) / (2610e12 * p.compute_eff),
    )
    ratio = (node / t.layer_time_s())[n >= COMPUTE_FROM_TOKENS]
    assert np.all((ratio > 1.15) & (ratio < 1.9)), ratio


def test_the_tables_serve_the_rows_whose_config_names_them(cat, tables):
    """Each table's rows are MI325X v5.1 rows of its scenario; Vultr's rows (mlp51b-0017
    Server, mlp51b-0018 Interactive) ran configs that name no tuning file, so no table."""
    df = load_measurements(public_files_default(), cat)
    for name, t in tables.items():
        if t.gpu != "amd-mi325x":
            continue
        mode = name.split("-")[1]
        for rid in t.rows:
            r = df[(df["id"] == rid) & (df["metric"] == "output_tok_s_total")].iloc[0]
            assert (r["hardware"], r["mode"], r["source"]) == (
                "amd-mi325x",
                mode,
                "MLPerf Inference v5.1",
            )
            assert table_for_row(rid) is t
    assert table_for_row("mlp51b-0017") is None and table_for_row("mlp51b-0018") is None


def test_harness_gemm_is_a_what_if(cat, tables):
    """Off by default: the replica keeps the profile's GEMM terms; on, a listed row takes the
    table's and Vultr's row (no table) keeps the profile's."""
    df = load_measurements(public_files_default(), cat)
    prof = load_profile()
    row = _row(df, "mlp51b-0009")
    base = scenario_replica(row, cat, prof)[2]
    on = scenario_replica(row, cat, prof, harness_gemm=True)[2]
    want = gemm_params(tables["mi325x-interactive"], cat.gpu("amd-mi325x"))
    assert on.compute_eff == pytest.approx(want["compute_eff"])
    assert on.compute_half_tokens == pytest.approx(want["compute_half_tokens"])
    assert on.mem_eff == pytest.approx(want["mem_eff"])
    assert on.kv_mem_eff == base.kv_mem_eff and base.compute_eff != on.compute_eff
    vultr = _row(df, "mlp51b-0018")
    assert scenario_replica(vultr, cat, prof, harness_gemm=True)[2] == base


def test_mi355x_table_by_hand(cat, tables):
    """AMD's v6.0 AITER tuning lines (cu_num 256): at M = 128 the layer's four FP4 GEMMs take
    18.8448 + 15.7396 + 51.6511 + 48.3096 = 134.5451 us; the 8192 x 8192 line's own tflops
    column agrees with its us (2 x 128 x 8192 x 8192 / 15.7396e-6 = 1.0915e15). The weight
    read at M = 16 (15.7701 + 15.0951 + 45.8961 + 47.3667 = 124.128 us) of 855,638,016 MXFP4
    weights at 4.25 bits (454,557,696 B) over 8 TB/s: mem_eff = 0.45775. The compute form
    with MI355X's 10,100 TFLOPS fp4 peak is within 8% of every point from 64 tokens up."""
    t = tables["mi355x-v6.0"]
    times = dict(zip(t.tokens, t.layer_time_s(), strict=True))
    assert times[128] == pytest.approx(134.5451e-6, rel=1e-9)
    assert times[16] == pytest.approx(124.128e-6, rel=1e-9)
    assert pytest.approx(1091.51e12, rel=1e-5) == 2 * 128 * 8192 * 8192 / 15.7396e-6
    assert t.weights_read_bytes() == 454_557_696
    g = cat.gpu("amd-mi355x")
    p = gemm_params(t, g)
    assert p["mem_eff"] == pytest.approx(454_557_696 / (8.0e12 * 124.128e-6), rel=1e-6)
    n = np.asarray(t.tokens, float)
    sel = n >= COMPUTE_FROM_TOKENS
    model = 2 * 855_638_016 * (n + p["compute_half_tokens"]) / (10100e12 * p["compute_eff"])
    assert np.all(np.abs(model[sel] / t.layer_time_s()[sel] - 1) < 0.08)


def test_mi355x_table_serves_amds_v60_rows(cat, tables):
    """The v6.0 harness image carries the patched AITER for every scenario
    (vllm_gfx950.config): the table serves the MI355X v6.0 Server and Interactive rows."""
    df = load_measurements(public_files_default(), cat)
    t = tables["mi355x-v6.0"]
    for rid in t.rows:
        r = df[(df["id"] == rid) & (df["metric"] == "output_tok_s_total")].iloc[0]
        assert r["hardware"] == "amd-mi355x" and r["source"] == "MLPerf Inference v6.0"
        assert r["mode"] in ("server", "interactive") and r["precision"] == t.precision
        assert table_for_row(rid) is t
