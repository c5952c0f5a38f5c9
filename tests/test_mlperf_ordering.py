"""MLPerf Llama-2-70B Offline: the per-GPU ordering of H100, H200, B200, MI300X and MI325X the
planner predicts must be the measured one within each round (issue 16)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from planner.benchmarks.io import load_measurements
from planner.calibration.accuracy import (
    ORDERING_GPUS,
    assumed_layout_predictions,
    mlperf_ordering,
    ordering_pairs,
    serving_predictions,
)
from planner.calibration.fit import prepare_rows, public_files_default
from planner.catalog import load_catalog
from planner.catalog.profile import load_profile


def _loso_like(rows):
    return pd.DataFrame(
        [
            {"source": s, "model": "llama-2-70b", "mode": "offline",
             "metric": "output_tok_s_total", "gpu": g, "n_gpus": n, "measured": m,
             "predicted": p}
            for s, g, n, m, p in rows
        ]
    )  # fmt: skip


def test_ordering_table_hand_derived():
    """Per-GPU values are the medians over a round's systems. Round X: A has systems of 8
    GPUs at 8,000 and 8,800 tok/s -> 1,000 and 1,100 per GPU, median 1,050; B one system of 4
    GPUs at 4,400 -> 1,100. Measured: B (1,100) > A (1,050). Predicted: A 8 x 1,200 -> 1,200
    per GPU (both systems), B 4 x 1,000 -> 1,000: the order is reversed, by 1,200 / 1,000 - 1
    = +20%; measured gap 1,100 / 1,050 - 1 = 4.8%; B's only system (1,100) lies inside A's
    range 1,000-1,100, so the round's systems do not separate them (ranges_overlap)."""
    src = "MLPerf Inference vX"
    d = _loso_like(
        [
            (src, "nvidia-h100-sxm", 8, 8000, 9600),
            (src, "nvidia-h100-sxm", 8, 8800, 9600),
            (src, "amd-mi300x", 4, 4400, 4000),
        ]
    )
    t = mlperf_ordering(d)
    a = t.set_index("gpu").loc["nvidia-h100-sxm"]
    b = t.set_index("gpu").loc["amd-mi300x"]
    assert (a.measured_per_gpu, a.measured_min, a.measured_max) == (1050, 1000, 1100)
    assert (b.measured_rank, a.measured_rank, a.predicted_rank, b.predicted_rank) == (1, 2, 1, 2)
    p = ordering_pairs(t)
    assert len(p) == 1
    r = p.iloc[0]
    assert (r.faster, r.slower) == ("amd-mi300x", "nvidia-h100-sxm")
    assert r.measured_gap_pct == pytest.approx(4.8, abs=0.05)
    assert r.predicted_gap_pct == pytest.approx(-16.7, abs=0.05)  # 1000 / 1200 - 1
    assert bool(r.ranges_overlap)


@pytest.fixture(scope="module")
def bundled_ordering():
    """Predictions of every MLPerf Llama-2-70B Offline row of the five GPUs with the bundled
    profile. These rows give no ISL/OSL (the OpenOrca set), so they are never fitted: the
    serving simulator predicts them from parameters fitted on other rows. Rows of the same
    configuration (GPU, GPU count, layout, precision, engine tags) get one simulation."""
    cat = load_catalog()
    prof = load_profile()
    df = load_measurements(public_files_default(), cat)
    df = df[
        df["source"].str.startswith("MLPerf Inference")
        & (df["model"] == "llama-2-70b")
        & (df["mode"] == "offline")
        & (df["metric"] == "output_tok_s_total")
        & df["hardware"].isin(list(ORDERING_GPUS))
    ]
    keycols = ["hardware", "n_gpus", "tp", "pp", "precision", "kv_precision", "framework"]
    df = df.assign(_settings=df["notes"].str.extract(r"((?:max_num_\w+|kv_cache_dtype)=\S+.*)$")[0])
    first = df.drop_duplicates([*keycols, "_settings"])
    rows = prepare_rows(first, cat)
    recs = serving_predictions(first, rows, lambda f: prof, cat, lambda r: r.source)
    recs += assumed_layout_predictions(first, lambda f: prof, cat)
    by_key = {}
    for rec in recs:
        src = first.set_index("id").loc[rec["id"]]
        by_key[tuple(str(src[c]) for c in [*keycols, "_settings"])] = rec["predicted"]
    out = []
    for rec in df.to_dict("records"):
        k = tuple(str(rec[c]) for c in [*keycols, "_settings"])
        if k in by_key and not math.isnan(by_key[k]):
            out.append((rec["source"], rec["hardware"], rec["n_gpus"], rec["value"], by_key[k]))
    return mlperf_ordering(_loso_like(out))


def test_every_round_has_its_gpus(bundled_ordering):
    """The rounds and GPUs the check covers (one row per GPU measured in that round)."""
    got = {(r, g) for r, g in zip(bundled_ordering["round"], bundled_ordering["gpu"], strict=True)}
    for need in [("v4.1", "nvidia-h100-sxm"), ("v4.1", "nvidia-h200-sxm"), ("v4.1", "amd-mi300x"),
                 ("v5.0", "nvidia-b200"), ("v5.0", "amd-mi325x"), ("v5.0", "nvidia-h100-sxm"),
                 ("v5.1", "amd-mi325x"), ("v5.1", "amd-mi300x"), ("v5.1", "nvidia-b200")]:  # fmt: skip
        assert need in got, (need, sorted(got))


#: rounds whose separated pairs the bundled profile predicts in the wrong order (strict marks,
#: with the reason). None now. v5.0 was one (MI325X predicted 0.7% below H100, measured 8.4%
#: above) while the simulated Offline run was 24,576 / 8 = 3,072 requests a replica, the
#: dataset size read as the run length, ~1.5-3 batches of mostly fill and drain. Run as long
#: as MLPerf's (>= 10 min; v5.1 B200 generated 1,007,616 samples), MI325X is 4,161 (-1.9%),
#: H100 4,011 (+2.5%), H200 5,008 (+14.5%): measured order 4,374 > 4,241 > 3,913 kept
#: (docs/changes/2026-12-07b/mlperfharness.md).
KNOWN_WRONG_ROUNDS: dict[str, str] = {}


@pytest.mark.parametrize(
    "rnd",
    [
        pytest.param(r, marks=pytest.mark.xfail(strict=True, reason=KNOWN_WRONG_ROUNDS[r]))
        if r in KNOWN_WRONG_ROUNDS
        else r
        for r in ("v4.1", "v5.0", "v5.1")
    ],
)
def test_predicted_order_matches_measured_where_the_round_separates_the_gpus(bundled_ordering, rnd):
    """Every pair of GPUs of round ``rnd`` whose measured systems do not overlap (the faster
    GPU's slowest system beats the slower GPU's fastest) is predicted in the measured order.
    v4.1 H100 SXM (13 systems, 2,533-3,066 tok/s per GPU) and MI300X (4 systems, 2,835-3,063)
    overlap: the round does not order them (medians 1.4% apart), and this test does not
    require it; the report (docs/accuracy.md) lists every wrongly ordered pair."""
    pairs = ordering_pairs(bundled_ordering)
    wrong = pairs[~pairs["ranges_overlap"] & (pairs["round"] == rnd)]
    assert not len(wrong), wrong.to_string()
