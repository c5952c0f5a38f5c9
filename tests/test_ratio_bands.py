"""Bands for comparisons (issue 32): the uncertainty of the ratio between two options comes
from paired held-out residuals (one source's experiment predicted for both), where the error
the two share cancels; "within model uncertainty" only when that ratio band includes 1."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import planner.catalog.profile as profile_mod
from planner.calibration.bands import fit_error_bands, fit_pair_bands, pair_kind
from planner.catalog.profile import ErrorBand, pair_band
from planner.errors import PlannerError
from planner.recommend.decide import decide

SETUP = {"model": "m", "mode": "offline", "isl": 1000, "osl": 1000, "batch": "",
         "concurrency": 64, "request_rate": "", "context_len": 2000}  # fmt: skip


def _loso(rows):
    """(id, source, gpu, framework, measured, predicted, setup overrides) -> (loso, bench)."""
    loso, bench = [], []
    for i, (src, gpu, fw, meas, pred, extra) in enumerate(rows):
        rid = f"r{i}"
        loso.append({"id": rid, "source": src, "gpu": gpu, "framework": fw, "precision": "fp8",
                     "metric": "output_tok_s_total", "metric_class": "throughput",
                     "measured": meas, "predicted": pred, "provenance": "fit (x/y/z, 1 rows)"})  # fmt: skip
        bench.append({"id": rid, "source": src, "metric": "output_tok_s_total", "tp": 1,
                      **SETUP, **extra})  # fmt: skip
    return pd.DataFrame(loso), pd.DataFrame(bench)


def test_shared_error_cancels_in_the_ratio():
    # each source's harness runs 40% slow on one setup and 30% fast on another, on both GPUs
    # alike: each option's own band is wide (0.6x to 1.3x), the ratio's is exactly 1
    rows = []
    for src, s in (("a", 0.6), ("b", 1.3), ("c", 0.6), ("d", 1.3)):
        rows += [(src, "h100", "vllm", 100 * s, 100, {}), (src, "h200", "vllm", 150 * s, 150, {})]
    loso, bench = _loso(rows)
    own = fit_error_bands(loso)["fit"]
    assert (own.ratio_p10, own.ratio_p90) == (0.6, 1.3)
    pair = fit_pair_bands(loso, bench)["pair:gpu"]
    assert (pair.ratio_p10, pair.ratio_p90, pair.n_rows, pair.n_sources) == (1.0, 1.0, 4, 4)


def test_pair_band_quantiles_by_hand():
    # s1: two GPUs, speed ratios (measured / predicted) 1.2 and 1.0; s2: two engines on one
    # GPU, 0.9 and 0.9; s3: two rows of different setups (no pair)
    rows = [("s1", "b200", "trtllm", 120, 100, {}), ("s1", "h200", "trtllm", 100, 100, {}),
            ("s2", "b200", "trtllm", 90, 100, {"isl": 8000}),
            ("s2", "b200", "vllm", 90, 100, {"isl": 8000}),
            ("s3", "b200", "trtllm", 50, 100, {}), ("s3", "b200", "trtllm", 50, 100, {"osl": 9})]  # fmt: skip
    loso, bench = _loso(rows)
    bands = fit_pair_bands(loso, bench)
    # s3's rows are two setups (osl differs): no pair; s2 pairs two engines on one GPU
    assert set(bands) == {"pair:gpu", "pair:engine"}
    g = bands["pair:gpu"]  # one pair, both orders: [-a, a] -> p10 = -a + 0.1 x 2a = -0.8a
    assert g.ratio_p10 == pytest.approx(1.2**-0.8, abs=1e-4)
    assert g.ratio_p90 == pytest.approx(1.2**0.8, abs=1e-4)
    assert bands["pair:engine"].ratio_p10 == bands["pair:engine"].ratio_p90 == 1.0
    assert pair_kind({"gpu": "a", "framework": "x", "precision": "fp8", "tp": 1},
                     {"gpu": "a", "framework": "x", "precision": "fp8", "tp": 2}) == "option"  # fmt: skip


def test_pair_band_needs_enough_pairs_and_a_known_kind():
    few = profile_mod.Profile(created="2026-12-06", data_hash="x", data_files=(), n_rows_fitted=1,
                              method="m", nodes=(), error_bands={"pair:gpu": ErrorBand(
                                  ratio_p10=0.9, ratio_p90=1.1, n_rows=5, n_sources=2)})  # fmt: skip
    assert pair_band("gpu", profile=few) is None
    with pytest.raises(PlannerError, match="unknown comparison kind"):
        pair_band("vendor", profile=few)


def _rec(gpu, usd, lo, hi, fw="vllm"):
    return {"gpu": gpu, "framework": fw, "precision": "fp8", "tp": 1, "usd_per_mtok_output": usd,
            "usd_per_mtok_output_low": lo, "usd_per_mtok_output_high": hi,
            "usd_per_gpu_hour": 3.0, "price_spread": {}, "num_gpus": 8}  # fmt: skip


@pytest.mark.parametrize(
    ("band", "verdict"),
    [
        # paired band 0.8x-1.25x: 1.5 x [0.8, 1.25] = [1.2, 1.875], above 1: told apart
        ((0.8, 1.25), "robust"),
        # paired band 0.6x-1.7x: [0.9, 2.55] includes 1
        ((0.6, 1.7), "within model uncertainty"),
        # no paired band: the two own bands (10 up to 14, 15 down to 11) overlap
        (None, "within model uncertainty"),
    ],
)
def test_within_model_uncertainty_only_when_the_ratio_band_includes_one(monkeypatch, band, verdict):
    eb = None if band is None else ErrorBand(ratio_p10=band[0], ratio_p90=band[1], n_rows=50,
                                             n_sources=5)  # fmt: skip
    monkeypatch.setattr(profile_mod, "pair_band", lambda kind, vendors=None, profile=None: eb)
    recs = [_rec("nvidia-h200-sxm", 10.0, 8.0, 14.0), _rec("nvidia-h100-sxm", 15.0, 11.0, 20.0)]
    decide(recs, "cost")
    w, r = recs
    assert r["robustness"] == verdict
    assert w["runner_up_cost_ratio"] == pytest.approx(1.5)
    if band is None:
        assert w["runner_up_cost_ratio_low"] is None and r["ratio_band"] is None
    else:
        assert w["runner_up_cost_ratio_low"] == pytest.approx(1.5 * band[0])
        assert w["runner_up_cost_ratio_high"] == pytest.approx(1.5 * band[1])
        assert r["ratio_band"]["kind"] == "gpu"
    assert math.isclose(r["ratio_to_winner"], 1.5)


def test_pair_bands_by_vendor():
    # one source: two NVIDIA GPUs share their error (1.0 vs 1.0), the AMD GPU is 0.5x of its
    # prediction: the NVIDIA pair's ratio is exact, every pair with the AMD GPU is off by 2x
    rows = [("s", "nvidia-h100-sxm", "vllm", 100, 100, {}), ("s", "nvidia-h200-sxm", "vllm", 100, 100, {}),
            ("s", "amd-mi300x", "vllm", 50, 100, {})]  # fmt: skip
    loso, bench = _loso(rows)
    loso["vendor"] = ["nvidia", "nvidia", "amd"]
    b = fit_pair_bands(loso, bench)
    assert (b["pair:gpu:nvidia"].ratio_p10, b["pair:gpu:nvidia"].ratio_p90) == (1.0, 1.0)
    # two mixed pairs, both orders: log ratios [-ln2, -ln2, ln2, ln2]: p10 / p90 = 1/2, 2
    assert (b["pair:gpu:mixed"].ratio_p10, b["pair:gpu:mixed"].ratio_p90) == (0.5, 2.0)
    assert b["pair:gpu"].n_rows == 3 and "pair:gpu:amd" not in b
    prof = profile_mod.Profile(created="2026-12-06", data_hash="x", data_files=(), n_rows_fitted=1,
                               method="m", nodes=(), error_bands={
        "pair:gpu": ErrorBand(ratio_p10=0.6, ratio_p90=1.6, n_rows=50, n_sources=5),
        "pair:gpu:nvidia": ErrorBand(ratio_p10=0.8, ratio_p90=1.25, n_rows=40, n_sources=4),
        "pair:gpu:mixed": ErrorBand(ratio_p10=0.5, ratio_p90=2.0, n_rows=10, n_sources=2)})  # fmt: skip
    assert pair_band("gpu", ("nvidia", "nvidia"), prof).ratio_p10 == 0.8
    # too few mixed pairs (10 < 20): the band of every pair
    assert pair_band("gpu", ("nvidia", "amd"), prof).ratio_p10 == 0.6


def test_an_option_borrowing_from_a_far_relative_widens_the_ratio_band(monkeypatch):
    from planner.catalog.profile import band_for_tier, load_profile

    eb = ErrorBand(ratio_p10=0.8, ratio_p90=1.25, n_rows=50, n_sources=5)
    monkeypatch.setattr(profile_mod, "pair_band", lambda kind, vendors=None, profile=None: eb)
    ref = band_for_tier("fit", load_profile().error_bands)
    w = _rec("nvidia-h200-sxm", 10.0, 8.0, 14.0)
    r = _rec("nvidia-h100-sxm", 15.0, 11.0, 20.0)
    w["error_band"] = {"low_ratio": ref.low_ratio, "high_ratio": ref.high_ratio}  # the fit tier
    r["error_band"] = {"low_ratio": 0.5, "high_ratio": 2.0}  # a far relative's band
    decide([w, r], "cost")
    # half-widths in log space: paired ln 1.25 = 0.2231; the runner-up's own ln 2 = 0.6931
    # over the fit tier's (ln p90 - ln p10) / 2: extra = 0.6931^2 - w_fit^2; the winner adds 0
    w_fit = (math.log(ref.high_ratio) - math.log(ref.low_ratio)) / 2
    half = math.sqrt(math.log(1.25) ** 2 + math.log(2.0) ** 2 - w_fit**2)
    assert r["ratio_to_winner_low"] == pytest.approx(1.5 * math.exp(-half))
    assert r["ratio_to_winner_high"] == pytest.approx(1.5 * math.exp(half))
    # with the bundled fit band (0.63x-1.30x, w_fit = 0.365): half = 0.63, low = 0.80 < 1
    assert r["robustness"] == "within model uncertainty"
    assert r["ratio_band"]["own_error_beyond_fit"] == pytest.approx(
        math.sqrt(math.log(2.0) ** 2 - w_fit**2), abs=1e-4
    )


def test_70b_chat_at_50_rps_a_far_dearer_option_is_not_within_model_uncertainty(capsys):
    """Issue 32: Llama-3.1-70B chat at 50 req/s on H100 / H200 / B200; before, every option
    of the 9 runners-up of the top 10 but one was "within model uncertainty", up to 2.68x the winner's $/M."""
    import json

    from planner.cli import main

    args = ["recommend", "--model", "llama-3.1-70b", "--preset", "chat", "--peak-rps", "50",
            "--ttft-p99", "1.0", "--tpot-p99", "0.05", "--gpus", "h100,h200,b200", "--top", "15",
            "--format", "json"]  # fmt: skip
    assert main(args) == 0
    recs = json.loads(capsys.readouterr().out)["recommendations"]
    w = recs[0]
    assert w["runner_up_cost_ratio"] == pytest.approx(
        recs[1]["usd_per_mtok_output"] / w["usd_per_mtok_output"]
    )
    assert w["runner_up_cost_ratio_low"] == recs[1]["ratio_to_winner_low"]
    for r in recs[1:]:
        lo, hi = r["ratio_to_winner_low"], r["ratio_to_winner_high"]
        assert lo < r["ratio_to_winner"] < hi
        # the verdict is the ratio band's, and only the ratio band's
        assert (r["robustness"] == "within model uncertainty") == (lo <= 1.0 <= hi)
        if r["ratio_to_winner"] >= 2.55:
            assert r["robustness"] != "within model uncertainty"
    # the case: the runners-up 2.55x dearer or more are told apart (after the fourth
    # pass's refit the first of them ranks 11th, 2.6x: hence the top 15). (A 2.0x option can
    # still be within it when its numbers are transferred, not fitted: SGLang on B200 has no
    # fit of its own, and its ratio band to the winner runs 0.98-4.1x after the 2026-12-06 refit.)
    far = [r for r in recs[1:] if r["ratio_to_winner"] >= 2.55]
    assert far and all(r["robustness"] != "within model uncertainty" for r in far)
