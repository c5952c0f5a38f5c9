"""Error bands (planner.catalog.profile.error_band, planner.calibration.bands) and the
provenance tiers they are keyed by."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import DATA_DIR

import planner.catalog.profile as profile_mod
from planner.benchmarks.predict import Predictor
from planner.benchmarks.schema import SCHEMA_COLUMNS, layout_unsupported
from planner.calibration.bands import band_coverage, fit_error_bands, speed_ratio
from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.catalog.profile import (
    BAND_MIN_ROWS,
    GROUP_LEVELS,
    PAIR_KINDS,
    TIERS,
    Band,
    ErrorBand,
    Profile,
    ProfileNode,
    band_for,
    band_for_tier,
    error_band,
    group_keys,
    load_profile,
    provenance_tier,
)
from planner.catalog.siblings import _describe
from planner.errors import PlannerError

CAT = load_catalog()


def _node(**kw) -> ProfileNode:
    return ProfileNode(level=kw.pop("level", 1), n_rows=48, params=PRIOR, **kw)


# =========================================================================== tiers
@pytest.mark.parametrize(
    ("node", "tier", "text"),
    [
        (_node(framework="vllm", arch="cdna3", gpu="amd-mi300x", vendor="amd"), "same_gpu",
         "vllm on amd-mi300x, all precisions (48 rows)"),
        (_node(framework="vllm", arch="cdna3", vendor="amd"), "same_arch",
         "vllm on cdna3 GPUs (48 rows)"),
        (_node(framework="vllm", vendor="amd", gpus=("amd-mi300x",)), "vendor_framework",
         "vllm on amd (amd-mi300x, 48 rows)"),
        (_node(vendor="amd", gpus=("amd-mi300x", "amd-mi325x")), "vendor",
         "all frameworks on amd (amd-mi300x, amd-mi325x, 48 rows)"),
        (_node(framework="sglang"), "framework", "sglang on all GPUs (48 rows)"),
        (_node(level=0), "global", "global fit over all frameworks (48 rows)"),
    ],
)  # fmt: skip
def test_every_transfer_label_has_its_tier(node, tier, text):
    assert _describe(node) == text
    assert provenance_tier(f"transferred from {text}") == tier
    # suffixes the commands add do not change the tier
    assert provenance_tier(f"transferred from {text}; assumed layout tp=2 dp=4") == tier


def test_fit_and_prior_tiers_and_unknown_label():
    assert provenance_tier("fit (vllm/amd-mi300x/fp8, 12 rows)") == "fit"
    assert provenance_tier("prior") == "prior"
    with pytest.raises(PlannerError, match="unknown provenance label"):
        provenance_tier("guessed")


# =========================================================================== bands
def _eb(lo, hi, n=100, s=3):
    return ErrorBand(ratio_p10=lo, ratio_p90=hi, n_rows=n, n_sources=s)


def test_band_maps_speed_and_time_the_opposite_ways():
    b = Band(0.8, 1.25, "fit", 100, 3)
    # throughput 1,000 tok/s: the truth is 1000 x 0.8 .. 1000 x 1.25
    assert b.speed_interval(1000.0) == pytest.approx((800.0, 1250.0))
    # a time of 10 ms is the inverse of a speed: measured speed x 0.8 = time / 0.8
    # -> 10 / 1.25 = 8 ms .. 10 / 0.8 = 12.5 ms
    assert b.time_interval(10.0) == pytest.approx((8.0, 12.5))
    unknown = Band(None, None, "fit", 0)
    assert unknown.speed_interval(1.0) == (None, None) and not unknown.known


def test_band_of_a_sparse_tier_borrows_from_the_next_coarser():
    bands = {"fit": _eb(0.9, 1.1), "same_gpu": _eb(0.5, 2.0, n=BAND_MIN_ROWS - 1),
             "vendor": _eb(0.7, 1.3)}  # fmt: skip
    b = band_for_tier("same_gpu", bands)
    assert b.tier == "vendor" and "too few held-out rows" in b.note
    # spans the nearer usable tier (fit 0.9..1.1) too: 0.7..1.3 already does
    assert (b.low_ratio, b.high_ratio) == (0.7, 1.3)
    assert band_for_tier("fit", bands).low_ratio == 0.9


def test_band_of_a_far_tier_is_never_narrower_than_a_near_one():
    bands = {"fit": _eb(0.8, 1.3), "global": _eb(0.9, 1.1)}
    b = band_for_tier("global", bands)
    assert (b.low_ratio, b.high_ratio) == (0.8, 1.3)


def test_single_source_tier_is_not_used():
    bands = {"fit": _eb(0.9, 1.1, s=1), "global": _eb(0.6, 1.6)}
    assert band_for_tier("fit", bands).tier == "global"


def test_no_band_known_is_none_not_a_guess():
    b = band_for_tier("fit", {})
    assert b.low_ratio is None and b.high_ratio is None and "no error band" in b.note


def test_error_band_of_a_profile_without_bands_uses_the_bundled_bands():
    bundled = load_profile()
    assert bundled is not None and bundled.error_bands
    empty = bundled.model_copy(update={"error_bands": {}})
    assert error_band("prior", empty) == error_band("prior", bundled)


def test_error_band_without_any_profile_is_unknown(monkeypatch, tmp_path):
    monkeypatch.setattr(profile_mod, "DEFAULT_PROFILE", tmp_path / "none.yaml")
    assert not error_band("fit (a/b/c, 1 rows)").known


@pytest.mark.parametrize("tier", TIERS)
def test_bundled_profile_gives_every_tier_a_band_around_one(tier):
    b = error_band("prior" if tier == "prior" else _label(tier))
    assert b.known and b.low_ratio < 1 < b.high_ratio
    assert b.n_rows >= BAND_MIN_ROWS and b.n_sources >= 2


def _label(tier: str) -> str:
    return {
        "fit": "fit (trtllm/nvidia-h100-sxm/fp8, 10 rows)",
        "sibling": "transferred from trtllm/nvidia-h200-sxm/fp8, nearest hopper sibling (10 rows)",
        "same_gpu": "transferred from trtllm on nvidia-h100-sxm, all precisions (10 rows)",
        "same_arch": "transferred from trtllm on hopper GPUs (10 rows)",
        "vendor_framework": "transferred from vllm on amd (amd-mi300x, 10 rows)",
        "vendor": "transferred from all frameworks on amd (amd-mi300x, 10 rows)",
        "framework": "transferred from vllm on all GPUs (10 rows)",
        "global": "transferred from global fit over all frameworks (10 rows)",
    }[tier]


# =========================================================================== fitting bands
def test_speed_ratio_direction():
    # throughput measured 900 vs predicted 1000: 0.9; a TTFT measured 200 ms vs predicted
    # 100 ms is half the speed: 100 / 200 = 0.5
    assert speed_ratio("throughput", 900.0, 1000.0) == pytest.approx(0.9)
    assert speed_ratio("ttft", 200.0, 100.0) == pytest.approx(0.5)
    with pytest.raises(PlannerError):
        speed_ratio("throughput", 0.0, 1.0)


def _records(ratios_by_source: dict[str, list[float]], prov="fit (x/y/z, 1 rows)"):
    recs = []
    for s, ratios in ratios_by_source.items():
        for r in ratios:
            recs.append({"source": s, "provenance": prov, "metric_class": "throughput",
                         "measured": 100.0 * r, "predicted": 100.0})  # fmt: skip
    return pd.DataFrame(recs)


def test_fit_error_bands_are_p10_p90_of_the_ratio():
    # 11 ratios 0.80, 0.84, ..., 1.20: numpy's linear quantile p10 = 0.84, p90 = 1.16
    ratios = [0.80 + 0.04 * i for i in range(11)]
    df = _records({"a": ratios[:6], "b": ratios[6:]})
    df = pd.concat([df, df.assign(metric_class="ttft")])  # time rows are not used
    b = fit_error_bands(df)["fit"]
    assert (b.ratio_p10, b.ratio_p90) == (pytest.approx(0.84), pytest.approx(1.16))
    assert (b.n_rows, b.n_sources) == (11, 2)


def test_coverage_holds_each_source_out_of_its_own_band():
    # source c's rows all lie at 1.5; bands fitted without c (a and b: 0.9..1.1) miss them
    # all, although a band fitted on everything (p90 over 30+10 rows) would cover some
    base = [0.9 + 0.01 * i for i in range(21)]
    df = _records({"a": base, "b": base, "c": [1.5] * 10})
    cov = band_coverage(df)
    assert len(cov) == 52
    by = cov.groupby("source")["inside"].mean()
    assert by["c"] == 0.0
    # a is tested against the band of b + c: 31 sorted ratios 0.90 .. 1.10, then 1.5 x 10;
    # p10 at index 0.1 x 30 = 3 -> 0.93, p90 at index 27 -> 1.5: a's 0.93 .. 1.10 inside,
    # 18 of 21
    assert by["a"] == pytest.approx(18 / 21)


# =========================================================================== predict
def _row(**kw) -> dict[str, str]:
    base = dict.fromkeys(SCHEMA_COLUMNS, "")
    base.update(
        id="t-1", source="test", hardware="nvidia-h100-sxm", n_gpus="1", tp="1", pp="1",
        model="llama-3.1-8b", precision="fp8", framework="trtllm", mode="offline",
        isl="128", osl="128", metric="output_tok_s_total", value="1000", unit="tok/s",
    )  # fmt: skip
    base.update(kw)
    return base


def test_predict_band_for_throughput_and_for_time():
    pred = Predictor(CAT)
    thr = pred.predict_row(_row())
    assert thr["reason"] == "" and thr["predicted"] > 0
    b = error_band(thr["provenance"], None, "nvidia", "trtllm")  # the row's vendor, framework
    assert thr["predicted_low"] == pytest.approx(thr["predicted"] * b.low_ratio)
    assert thr["predicted_high"] == pytest.approx(thr["predicted"] * b.high_ratio)
    t = pred.predict_row(
        _row(mode="static_batch", batch="4", isl="512", metric="prefill_s", unit="s")
    )
    assert t["reason"] == ""
    b = error_band(t["provenance"], None, "nvidia", "trtllm")
    # a time: low = predicted / high_ratio, high = predicted / low_ratio
    assert t["predicted_low"] == pytest.approx(t["predicted"] / b.high_ratio)
    assert t["predicted_high"] == pytest.approx(t["predicted"] / b.low_ratio)
    assert t["predicted_low"] < t["predicted"] < t["predicted_high"]


def test_layout_unsupported_tag():
    assert layout_unsupported("x; layout_unsupported: disaggregated prefill/decode; y") == (
        "disaggregated prefill/decode"
    )
    assert layout_unsupported("tp=8") is None


def test_layout_unsupported_rows_are_never_fitted(tmp_path):
    from planner.benchmarks import load_measurements
    from planner.calibration import prepare_rows

    rows = [_row(id="a"), _row(id="b", notes="layout_unsupported: expert parallel (EP=8)")]
    p = tmp_path / "rows.csv"
    pd.DataFrame(rows, columns=list(SCHEMA_COLUMNS)).to_csv(p, index=False)
    prepared = prepare_rows(load_measurements(p, CAT), CAT)
    assert prepared[0].ok and not prepared[1].ok
    assert prepared[1].reason.startswith("layout not expressible by the planner: expert parallel")
    assert prepared[1].fit_kind == ""  # nor simulated as a serving row


def test_bundled_profile_loads_with_bands():
    prof = Profile.model_validate(load_profile().model_dump())
    tiers = {k for k in prof.error_bands if ":" not in k}
    groups = {k for k in prof.error_bands if ":" in k}
    assert tiers <= set(TIERS) and "fit" in tiers
    # group bands: "<level>:<value>" with a level of GROUP_LEVELS (vendor_framework:amd/vllm, ...);
    # paired bands of comparisons: "pair:<kind>" and "pair:<kind>:<vendor>" (issue 32)
    # and the widening per engine release step: "release:step" (issue 31)
    assert {k.split(":")[0] for k in groups} <= {*GROUP_LEVELS, "pair", "release"}
    assert {k.split(":")[1] for k in groups if k.startswith("pair:")} <= set(PAIR_KINDS)
    assert "vendor_framework:nvidia/trtllm" in groups
    assert DATA_DIR.exists()


# =========================================================================== storing bands
def _fitted_profile(tmp_path):
    from planner.benchmarks.io import _hash_files

    csv_path = tmp_path / "runs.csv"
    csv_path.write_text("x\n1\n")
    prof = load_profile().model_copy(
        update={"data_files": (str(csv_path),), "data_hash": _hash_files([csv_path]),
                "error_bands": {}}
    )  # fmt: skip
    p = tmp_path / "profile.yaml"
    profile_mod.save_profile(prof, p)
    return p, csv_path


def test_store_error_bands_round_trip(tmp_path):
    from planner.calibration.accuracy import store_error_bands

    p, csv_path = _fitted_profile(tmp_path)
    bands = {"fit": ErrorBand(ratio_p10=0.8, ratio_p90=1.2, n_rows=30, n_sources=3)}
    store_error_bands(p, {"bands": bands}, [csv_path])
    loaded = load_profile(p)
    assert loaded.error_bands == bands
    b = error_band("fit (a/b/c, 3 rows)", loaded)
    assert (b.low_ratio, b.high_ratio, b.n_rows) == (0.8, 1.2, 30)


def test_store_error_bands_refuses_a_profile_of_other_data(tmp_path):
    from planner.calibration.accuracy import store_error_bands

    p, csv_path = _fitted_profile(tmp_path)
    bands = {"fit": ErrorBand(ratio_p10=0.8, ratio_p90=1.2, n_rows=30, n_sources=3)}
    other = tmp_path / "other.csv"
    other.write_text("x\n2\n")
    with pytest.raises(PlannerError, match="was not fitted on"):
        store_error_bands(p, {"bands": bands}, [other])
    csv_path.write_text("x\n3\n")  # changed since the fit
    with pytest.raises(PlannerError, match="changed since the fit"):
        store_error_bands(p, {"bands": bands}, [csv_path])


# =========================================================================== report
def _loso_frame():
    import numpy as np

    recs = []
    for i in range(40):
        src = "abcd"[i % 4]
        ratio = 0.8 + 0.01 * i  # predicted / measured
        recs.append({"id": f"r{i}", "source": src, "framework": "vllm" if i % 2 else "trtllm",
                     "gpu": "amd-mi300x" if i % 2 else "nvidia-h100-sxm",
                     "vendor": "amd" if i % 2 else "nvidia", "arch": "cdna3" if i % 2 else "hopper",
                     "family": "moe" if i % 5 == 0 else "dense", "precision": "fp8",
                     "metric": "output_tok_s_total", "model": "m", "mode": "offline",
                     "kind": "offline", "measured": 100.0, "predicted": 100.0 * ratio,
                     "provenance": "fit (a/b/c, 1 rows)", "fold": src, "metric_class": "throughput"})  # fmt: skip
    df = pd.DataFrame(recs)
    df["log_err"] = np.log(df["predicted"] / df["measured"])
    df["ape"] = np.abs(df["predicted"] / df["measured"] - 1)
    return df


def test_group_table_counts_rows_and_sources():
    from planner.calibration.accuracy import group_table

    t = group_table(_loso_frame())
    amd = t[(t["group"] == "vendor") & (t["value"] == "amd")].iloc[0]
    # odd i are AMD: 20 rows, sources b and d
    assert (amd["n"], amd["sources"]) == (20, 2)
    moe = t[t["value"] == "MoE models"].iloc[0]
    assert (moe["n"], moe["group"]) == (8, "target <= 20%")  # i = 0, 5, ..., 35


def test_report_keeps_the_serving_comparison_section(tmp_path):
    from planner.calibration.accuracy import write_report

    loso = _loso_frame()
    path = tmp_path / "accuracy.md"
    path.write_text(
        "old\n<!-- serving-comparison:begin -->\nKEEP ME\n<!-- serving-comparison:end -->\n"
    )
    res = {"loso": loso, "coverage": band_coverage(loso), "bands": fit_error_bands(loso)}
    text = write_report(res, path, "planner validate --output x")
    assert "KEEP ME" in path.read_text() and "old" not in text.splitlines()[0]
    assert "### Throughput by vendor, framework and model family" in text
    assert "### Error bands and their held-out coverage" in text


def test_tier_without_any_farther_band_takes_the_envelope_of_all():
    # global and prior never held out: p10 = min(0.9, 0.7), p90 = max(1.1, 1.2)
    bands = {"fit": _eb(0.9, 1.1), "vendor": _eb(0.7, 1.2, n=40)}
    for tier in ("global", "prior"):
        b = band_for_tier(tier, bands)
        assert (b.tier, b.low_ratio, b.high_ratio, b.n_rows) == ("envelope", 0.7, 1.2, 140)


# =========================================================================== group bands
def test_group_keys_nearest_first():
    assert group_keys("amd", "vllm") == [
        "vendor_framework:amd/vllm", "framework:vllm", "vendor:amd"
    ]  # fmt: skip
    assert group_keys(None, "sglang") == ["framework:sglang"]
    assert group_keys(None, None) == []


def test_group_band_widens_the_tier_band():
    """fit 0.9-1.1; vLLM on AMD held out 0.5-1.3 (25 rows, 2 sources): a fit prediction of
    vLLM on AMD spans both, min(0.9, 0.5) = 0.5 to max(1.1, 1.3) = 1.3; NVIDIA TensorRT-LLM
    has no group band and keeps the tier's 0.9-1.1; SGLang on AMD has no vendor x framework
    band and takes SGLang's across vendors (0.3-2.0); a group of 10 rows or of one source is
    not used (BAND_MIN_ROWS = 20, BAND_MIN_SOURCES = 2)."""
    bands = {
        "fit": _eb(0.9, 1.1),
        "vendor_framework:amd/vllm": _eb(0.5, 1.3, n=25, s=2),
        "framework:sglang": _eb(0.3, 2.0, n=20, s=2),
        "vendor_framework:nvidia/vllm": _eb(0.2, 5.0, n=10),
        "framework:lmdeploy": ErrorBand(ratio_p10=0.1, ratio_p90=9.0, n_rows=40, n_sources=1),
    }
    b = band_for("fit", bands, "amd", "vllm")
    assert (b.low_ratio, b.high_ratio, b.tier, b.group) == (0.5, 1.3, "fit", "vllm on amd")
    assert (b.group_rows, b.group_sources) == (25, 2)
    assert "vllm on amd predictions held out by source (25 rows, 2 sources)" in b.describe()
    t = band_for("fit", bands, "nvidia", "trtllm")
    assert (t.low_ratio, t.high_ratio, t.group) == (0.9, 1.1, "")
    g = band_for("fit", bands, "amd", "sglang")
    assert (g.low_ratio, g.high_ratio, g.group) == (0.3, 2.0, "sglang on every vendor")
    assert band_for("fit", bands, "nvidia", "vllm").group == ""  # 10 rows: too few
    assert band_for("fit", bands, "nvidia", "lmdeploy").group == ""  # one source
    # error_band reads the same table from a profile
    prof = Profile(created="2026-12-01", data_hash="x", data_files=(), n_rows_fitted=1,
                   method="m", nodes=(), error_bands=bands)  # fmt: skip
    e = error_band("fit (vllm/amd-mi300x/fp8, 9 rows)", prof, "amd", "vllm")
    assert (e.low_ratio, e.high_ratio) == (0.5, 1.3)


def test_group_bands_are_fitted_per_vendor_and_framework():
    # two AMD vLLM sources at 0.5 .. 0.7 (11 ratios 0.50, 0.52, ... 0.70): p10 0.52, p90 0.68
    ratios = [0.50 + 0.02 * i for i in range(11)]
    df = _records({"a": ratios[:6], "b": ratios[6:]}).assign(vendor="amd", framework="vllm")
    bands = fit_error_bands(df)
    for key in ("vendor_framework:amd/vllm", "framework:vllm", "vendor:amd", "fit"):
        b = bands[key]
        assert (b.ratio_p10, b.ratio_p90) == (pytest.approx(0.52), pytest.approx(0.68)), key
        assert (b.n_rows, b.n_sources) == (11, 2)


def test_coverage_uses_the_group_band_of_the_held_out_rows():
    """Four NVIDIA TensorRT-LLM sources (50 rows each, 0.9-1.1) and three AMD vLLM sources
    (20 rows each at 1.50, 1.45, 1.60). Holding out the 1.50 source: the tier band of the other
    240 rows has p90 at index 0.9 x 239 = 215.1 of the sorted ratios, i.e. among the twenty
    1.45s (indices 200-219): 1.45 < 1.50, so the tier band alone misses every held-out row;
    the AMD vLLM band of the two other AMD sources is p10 1.45 to p90 1.60 and holds 1.50."""
    trt = [0.9 + 0.2 * i / 49 for i in range(50)]
    df = pd.concat(
        [
            _records({s: trt for s in "fghk"}).assign(vendor="nvidia", framework="trtllm"),
            _records({"c": [1.5] * 20, "d": [1.45] * 20, "e": [1.6] * 20}).assign(
                vendor="amd", framework="vllm"
            ),
        ],
        ignore_index=True,
    )
    cov = band_coverage(df)
    c = cov[cov["source"] == "c"]
    assert c["inside"].all() and set(c["band_group"]) == {"vllm on amd"}
    tier_only = band_for_tier("fit", fit_error_bands(df[df["source"] != "c"]))
    assert tier_only.high_ratio == pytest.approx(1.45)


def test_estimate_capacity_and_predict_use_the_group_band(tmp_path, capsys):
    """The bundled profile with one extra band, vLLM on AMD at 0.25-4.0 (wider than every tier
    band): estimate and capacity of vLLM on an MI300X print that band (low = predicted x 0.25,
    high = x 4.0) and name the group; TensorRT-LLM on an H100 keeps its tier's band."""
    import json

    from planner import cli
    from planner.catalog.profile import save_profile

    prof = load_profile()
    wide = _eb(0.25, 4.0, n=40, s=3)
    bands = {**prof.error_bands, "vendor_framework:amd/vllm": wide}
    path = tmp_path / "profile.yaml"
    save_profile(prof.model_copy(update={"error_bands": bands}), path)
    base = ["--model", "llama-3.1-8b", "--precision", "bf16", "--calibration", str(path),
            "--format", "json", "--batch", "8", "--input-len", "1024", "--output-len", "256"]  # fmt: skip
    assert cli.main(["estimate", "--gpu", "amd-mi300x", "--framework", "vllm", *base]) == 0
    est = json.loads(capsys.readouterr().out)
    assert "vllm on amd" in est["error_band"]
    assert est["output_tok_s_low"] == pytest.approx(0.25 * est["output_tok_s"])
    assert est["output_tok_s_high"] == pytest.approx(4.0 * est["output_tok_s"])
    assert cli.main(["estimate", "--gpu", "nvidia-h100-sxm", "--framework", "trtllm", *base]) == 0
    nv = json.loads(capsys.readouterr().out)
    assert "vllm on amd" not in nv["error_band"]
    assert nv["output_tok_s_high"] < 4.0 * nv["output_tok_s"]
    chat = str(DATA_DIR.parent / "examples" / "chat-8b.yaml")
    capacity = ["capacity", chat, "--gpu", "amd-mi300x", "--framework", "vllm", "--requests",
                "300", "--calibration", str(path), "--format", "json"]  # fmt: skip
    assert cli.main(capacity) == 0
    cap = json.loads(capsys.readouterr().out)
    assert "vllm on amd" in cap["error_band"]
    # predict: the row's vendor and framework pick the same band
    pred = Predictor(CAT, profile_path=str(path))
    row = pred.predict_row(_row(hardware="amd-mi300x", framework="vllm", precision="bf16"))
    assert row["reason"] == "", row["reason"]
    assert row["predicted_low"] == pytest.approx(0.25 * row["predicted"])
    assert row["predicted_high"] == pytest.approx(4.0 * row["predicted"])


def test_recommend_uses_the_group_band(tmp_path, monkeypatch, capsys):
    """recommend reads the bundled profile's bands: with a vLLM-on-AMD band of 0.25-4.0 added,
    the MI300X vLLM option's error_band is that band and names the group."""
    import json

    from planner.catalog.profile import save_profile
    from planner.cli import main

    prof = load_profile()
    bands = {**prof.error_bands, "vendor_framework:amd/vllm": _eb(0.25, 4.0, n=40, s=3)}
    path = tmp_path / "profile.yaml"
    save_profile(prof.model_copy(update={"error_bands": bands}), path)
    monkeypatch.setattr(profile_mod, "DEFAULT_PROFILE", path)
    rc = main(
        [
            "recommend", "--model", "llama-3.1-8b", "--peak-rps", "5", "--input-tokens", "1000",
            "--output-tokens", "200", "--ttft-p99", "2", "--tpot-p99", "0.05",
            "--gpus", "mi300x", "--frameworks", "vllm", "--precisions", "bf16", "--tp", "1",
            "--format", "json",
        ]
    )  # fmt: skip
    assert rc == 0
    r = json.loads(capsys.readouterr().out)["recommendations"][0]
    assert r["gpu"] == "amd-mi300x" and r["framework"] == "vllm"
    band = r["error_band"]
    assert (band["low_ratio"], band["high_ratio"], band["group"]) == (0.25, 4.0, "vllm on amd")
    assert r["num_gpus_low"] <= r["num_gpus"] <= r["num_gpus_high"]
