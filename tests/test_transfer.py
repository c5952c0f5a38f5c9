"""Transfer to the nearest sibling GPU (issue 32): an unfitted (GPU, framework, precision)
takes the same framework and precision fitted on the nearest GPU of its architecture before
any pooled level; the H100 serving runs of the reference engine stay out of every fit."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from conftest import DATA_DIR

from planner.calibration.fit import (
    HELD_OUT_FILES,
    PreparedRow,
    _fit_tree,
    _needed_keys,
    data_files_default,
    split_public_own,
)
from planner.calibration.iterations import HELD_OUT_LOGS, iteration_logs_default
from planner.calibration.transfer import transfer_band, transfer_groups
from planner.catalog import EfficiencyParams, Profile, load_catalog, load_profile, resolve_params
from planner.catalog.profile import (
    ErrorBand,
    ProfileNode,
    band_for_tier,
    provenance_tier,
)
from planner.catalog.siblings import nearest_sibling, sibling_distance

CAT = load_catalog(DATA_DIR)
H100, H200, GH200 = "nvidia-h100-sxm", "nvidia-h200-sxm", "nvidia-gh200-96gb"
H100_SERVING = DATA_DIR / "benchmarks" / "reference_h100_serving.csv"
H100_LOG = DATA_DIR / "benchmarks" / "serving_raw" / "reference_h100_iterations.csv.gz"


# ---------------------------------------------------------------- the held-out H100 runs
def test_h100_serving_runs_are_held_out_of_the_fit():
    assert H100_SERVING.exists() and H100_LOG.exists()
    assert H100_SERVING.name in HELD_OUT_FILES and H100_LOG.name in HELD_OUT_LOGS
    assert H100_SERVING not in data_files_default()
    assert H100_LOG not in iteration_logs_default()
    # the H100 decode steps that move the KV transfer (planner.catalog.bandwidth) are a
    # *_micro.csv file: never fitted either
    steps = H100_SERVING.with_name("reference_h100_steps_micro.csv")
    assert steps.exists() and steps not in data_files_default()
    # validate's split leaves a bundled file that is neither public nor own out
    assert split_public_own([H100_SERVING]) == ([], [])
    prof = load_profile()
    assert not any("h100" in f for f in prof.data_files)
    # no node of the reference engine was fitted on an H100 row
    assert not any(n.framework == "pytorch" and H100 in n.gpus for n in prof.nodes)


def test_h100_repeat_runs_are_held_out_of_the_fit():
    """The repeat runs of 2026-12-07 (another H100 machine start): never fitted either."""
    rows = H100_SERVING.with_name("reference_h100_repeat_serving.csv")
    log = H100_LOG.with_name("reference_h100_repeat_iterations.csv.gz")
    assert rows.exists() and log.exists()
    assert rows.name in HELD_OUT_FILES and log.name in HELD_OUT_LOGS
    assert rows not in data_files_default() and log not in iteration_logs_default()
    assert split_public_own([rows]) == ([], [])
    d = pd.read_csv(rows)
    # 9 runs x 14 metrics, all on the H100, each with the device call in its provenance
    assert len(d) == 9 * 14 and set(d["hardware"]) == {H100}
    assert d["source_detail"].str.contains("nvidia-h100-x1").all()
    assert (d["as_of"] == "2026-12-07").all()


def test_h100_serving_rows_are_the_h200_runs_on_an_h100():
    h100 = pd.read_csv(H100_SERVING)
    h200 = pd.read_csv(DATA_DIR / "benchmarks" / "reference_h200_serving.csv")
    assert set(h100["hardware"]) == {H100}
    assert h100["source_detail"].str.contains("GPU NVIDIA H100 80GB HBM3").all()
    key = ["model", "request_rate", "metric", "isl", "osl"]
    # the same 20 runs x 14 metrics (model, trace, lengths), measured on the other GPU
    assert len(h100) == len(h200) == 280
    assert sorted(map(tuple, h100[key].astype(str).values)) == sorted(
        map(tuple, h200[key].astype(str).values)
    )
    assert h100["id"].is_unique and not set(h100["id"]) & set(h200["id"])


# ---------------------------------------------------------------- nearest sibling
def test_sibling_distance_is_the_datasheet_ratio():
    h100, h200, gh200 = CAT.gpu(H100), CAT.gpu(H200), CAT.gpu(GH200)
    # same bf16 peak (989 TFLOPS dense); HBM 3.35 vs 4.8 vs 4.0 TB/s
    assert sibling_distance(h100, h200) == pytest.approx(math.log(4800 / 3350))  # 0.360
    assert sibling_distance(h100, gh200) == pytest.approx(math.log(4000 / 3350))  # 0.177
    assert sibling_distance(h100, h100) == 0.0


def _node(key, mem_eff, n=10, families=("dense", "moe"), family=""):
    level = max((i + 1 for i, x in enumerate(key) if x is not None), default=0)
    return ProfileNode(
        vendor=key[0], framework=key[1], arch=key[2], gpu=key[3], precision=key[4],
        level=level, n_rows=n, params=EfficiencyParams(mem_eff=mem_eff), family=family,
        families=families, gpus=(key[3],) if key[3] else (),
    )  # fmt: skip


def _profile(*nodes) -> Profile:
    return Profile(created="2026-12-06", data_hash="x", data_files=(), n_rows_fitted=1,
                   method="hand-made", nodes=nodes, split_families=("dense",))  # fmt: skip


def _hopper(gh200_families=("dense", "moe")) -> Profile:
    pt = ("nvidia", "pytorch", "hopper")
    return _profile(
        _node((None,) * 5, 0.30, n=100),
        _node(("nvidia", None, None, None, None), 0.31, n=100),
        _node(("nvidia", "pytorch", None, None, None), 0.32, n=80),
        _node((*pt, None, None), 0.33, n=80),  # the pooled architecture node
        _node((*pt, H200, None), 0.34, n=40),
        _node((*pt, H200, "bf16"), 0.80, n=20),
        _node((*pt, H200, "fp8"), 0.50, n=20),
        _node((*pt, GH200, None), 0.70, n=10, families=gh200_families),
        _node((*pt, GH200, "bf16"), 0.70, n=10, families=gh200_families),
        _node((*pt, H100, None), 0.40, n=30),
        _node((*pt, H100, "fp8"), 0.40, n=30),
    )


def test_unfitted_precision_takes_the_nearest_sibling_before_its_own_gpu_node():
    prof = _hopper()
    p, prov = resolve_params(H100, "pytorch", "bf16", catalog=CAT, profile=prof, family="dense")
    # GH200 (4.0 TB/s) is nearer the H100 (3.35) than the H200 (4.8): 0.177 < 0.360
    assert p.mem_eff == 0.70
    assert prov == f"transferred from pytorch/{GH200}/bf16, nearest hopper sibling (10 rows)"
    assert provenance_tier(prov) == "sibling"
    # the rule before: the H100's own node of every precision (pooled)
    p, prov = resolve_params(H100, "pytorch", "bf16", catalog=CAT, profile=prof, family="dense",
                             siblings=False)  # fmt: skip
    assert p.mem_eff == 0.40 and provenance_tier(prov) == "same_gpu"


def test_fitted_triple_keeps_its_fit_and_a_missing_precision_pools():
    prof = _hopper()
    p, prov = resolve_params(H100, "pytorch", "fp8", catalog=CAT, profile=prof, family="dense")
    assert (p.mem_eff, provenance_tier(prov)) == (0.40, "fit")
    # fp16 was fitted on no Hopper GPU: no sibling, the H100's own node
    p, prov = resolve_params(H100, "pytorch", "fp16", catalog=CAT, profile=prof, family="dense")
    assert (p.mem_eff, provenance_tier(prov)) == (0.40, "same_gpu")
    # another architecture is never a sibling
    p, prov = resolve_params("nvidia-a100-80gb-sxm", "pytorch", "bf16", catalog=CAT, profile=prof)
    assert (p.mem_eff, provenance_tier(prov)) == (0.32, "vendor_framework")


def test_sibling_without_rows_of_the_family_is_skipped(monkeypatch):
    import planner.catalog.bandwidth as bw

    prof = _hopper(gh200_families=("moe",))
    p, prov = resolve_params(H100, "pytorch", "bf16", catalog=CAT, profile=prof, family="dense")
    # both GPUs ran the reference engine's batch-1 decode steps: the H200's 0.80 moves by
    # their measured weight-read rate ratio (tests/test_bandwidth_transfer.py)
    sw = bw.step_weight_ratio(EfficiencyParams(mem_eff=0.80), CAT.gpu(H200), CAT.gpu(H100))
    assert p.mem_eff == pytest.approx(0.80 * sw.ratio * 4800 / 3350, abs=1e-5)
    # with that rule off (the GEMV rule):
    monkeypatch.setattr(bw, "STEP_WEIGHT_RULE", False)
    p, prov = resolve_params(H100, "pytorch", "bf16", catalog=CAT, profile=prof, family="dense")
    # the H200's 0.80 moves with its per-kernel latency kept in seconds
    # (planner.catalog.bandwidth; GEMV micro fits: H200 stream 4.4666 TB/s = 0.93055 of 4.8;
    # H100 3.0312 TB/s = 0.90483 of 3.35): latency = 1/0.80 - 1/0.93055 = 0.17537;
    # 1/eff = 1/0.90483 + (3350/4800) x 0.17537 = 1.10518 + 0.12239 = 1.22757 -> 0.81462
    assert p.mem_eff == pytest.approx(0.81462, abs=2e-4)
    assert prov.startswith(f"transferred from pytorch/{H200}/bf16")
    # no family asked: the nearest of all (GH200)
    assert nearest_sibling(prof, CAT, H100, "pytorch", "bf16").gpu == GH200


def test_bundled_profile_gives_the_h100_the_h200s_bf16_fit():
    p, prov = resolve_params(H100, "pytorch", "bf16", family="dense")
    h200, _ = resolve_params(H200, "pytorch", "bf16", family="dense")
    # all of it but the weight- and KV-read efficiencies, which keep the H200's per-kernel
    # latency and so come out above the H200's fractions (tests/test_bandwidth_transfer.py),
    # and the GEMM efficiency, which moves by the two GPUs' prefill steps (0.976x at equal
    # peaks: tests/test_compute_transfer.py)
    assert p.with_(mem_eff=h200.mem_eff, kv_mem_eff=h200.kv_mem_eff,
                   compute_eff=h200.compute_eff) == h200  # fmt: skip
    assert h200.mem_eff < p.mem_eff < 1
    assert h200.kv_mem_eff < p.kv_mem_eff < 1
    assert 0.95 * h200.compute_eff < p.compute_eff < h200.compute_eff
    assert prov.startswith(f"transferred from pytorch/{H200}/bf16, nearest hopper sibling (")
    assert "serving terms fit on iteration logs" in prov


def test_sibling_tier_without_a_band_borrows_the_next_one():
    bands = {"same_gpu": ErrorBand(ratio_p10=0.8, ratio_p90=1.2, n_rows=40, n_sources=3),
             "fit": ErrorBand(ratio_p10=0.9, ratio_p90=1.1, n_rows=40, n_sources=3)}  # fmt: skip
    b = band_for_tier("sibling", bands)
    assert (b.low_ratio, b.high_ratio, b.tier) == (0.8, 1.2, "same_gpu")
    bands["sibling"] = ErrorBand(ratio_p10=0.85, ratio_p90=1.3, n_rows=30, n_sources=2)
    b = band_for_tier("sibling", bands)
    # its own band, spanning the nearer fit tier's: [min(0.85, 0.9), max(1.3, 1.1)]
    assert (b.low_ratio, b.high_ratio, b.tier) == (0.85, 1.3, "sibling")


# ---------------------------------------------------------------- leave-one-GPU-out
def _row(gpu, fw="pytorch", prec="bf16", source="s", metric="output_tok_s_total", value=1.0):
    g = CAT.gpu(gpu)
    return PreparedRow(id=f"{gpu}-{prec}-{value}", source=source, framework=fw, gpu=g.id,
                       arch=g.arch, precision=prec, metric=metric, mode="offline", value=value,
                       predict=lambda p: 1.0, fit_kind="offline", model="m", vendor=g.vendor,
                       family="dense")  # fmt: skip


def test_loso_targets_fit_the_sibling_donor():
    rows = [_row(H200), _row(H200, prec="fp8"), _row(GH200), _row(H100, prec="fp8")]
    tree = _fit_tree(rows, 1, ("dense",))
    need = _needed_keys(tree, [("nvidia", "pytorch", "hopper", H100, "bf16", "dense")], ("dense",))
    keys = {k for k, _ in need}
    # both candidate donors (the nearest is chosen at resolve time) and the pooled chain
    assert ("nvidia", "pytorch", "hopper", H200, "bf16") in keys
    assert ("nvidia", "pytorch", "hopper", GH200, "bf16") in keys
    assert ("nvidia", "pytorch", "hopper", H100, None) in keys
    assert ("nvidia", "pytorch", "hopper", H200, "fp8") not in keys


def test_transfer_groups_and_band():
    rows = [_row(H200), _row(GH200), _row(H100, prec="fp8"), _row(H200, fw="vllm")]
    assert transfer_groups(rows) == {("nvidia", "pytorch", "hopper", "bf16"): [GH200, H200]}
    # measured / predicted throughput 0.5, 1.0, ..., p10 / p90 by numpy's linear rule
    recs = pd.DataFrame({"metric": ["output_tok_s_total"] * 5 + ["ttft_ms_median"],
                         "measured": [0.5, 1.0, 1.0, 1.0, 2.0, 9.0],
                         "predicted": [1.0] * 6, "source": list("aabbcc"),
                         "metric_class": ["throughput"] * 5 + ["ttft"]})  # fmt: skip
    b = transfer_band(recs)
    # ratios sorted [0.5, 1, 1, 1, 2]: p10 at 0.4 -> 0.5 + 0.4 x 0.5 = 0.7; p90 at 3.6 ->
    # 1 + 0.6 x 1 = 1.6; the TTFT row is no throughput
    assert (b.ratio_p10, b.ratio_p90, b.n_rows, b.n_sources) == (0.7, 1.6, 5, 3)


def test_sibling_band_pools_loso_and_leave_one_gpu_out_rows():
    from planner.calibration.transfer import sibling_band

    sib = f"transferred from trtllm/{H200}/fp8, nearest hopper sibling (10 rows)"
    loso = pd.DataFrame({"source": ["a", "b", "c"], "metric": ["output_tok_s_total"] * 3,
                         "measured": [0.5, 1.0, 2.0], "predicted": [1.0] * 3,
                         "provenance": [sib, sib, "fit (trtllm/x/fp8, 3 rows)"]})  # fmt: skip
    moved = pd.DataFrame({"source": ["d", "d"], "metric": ["req_s", "ttft_ms_p99"],
                          "measured": [1.5, 9.0], "predicted": [1.0, 1.0]})  # fmt: skip
    b = sibling_band(loso, moved)
    # throughput ratios of the sibling rows: 0.5, 1.0 (LOSO; the fit row is another tier) and
    # 1.5 (moved; the TTFT row is no throughput): p10 = 0.5 + 0.2 x 0.5 = 0.6, p90 = 1.0 +
    # 0.8 x 0.5 = 1.4
    assert (b.ratio_p10, b.ratio_p90, b.n_rows, b.n_sources) == (0.6, 1.4, 3, 3)
