"""The same-image MTP / no-MTP TPOT pairs of scripts/mtp_pairs_table.py (issue 30, item 2)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import mtp_pairs_table as mpt  # noqa: E402


@pytest.fixture(scope="module")
def tpot():
    return mpt.tpot_pairs().set_index("MTP id")


def test_h200_pairs_join_the_same_image_run_by_hand(tpot):
    # InferenceX H200 SGLang v0.5.12-cu130, TP8 fp8, 1k/1k: the baseline run of 2026-05-17
    # (ixm-0483, c4, median TPOT 9.73 ms) and the MTP run of 2026-05-20 (ixh-1953, c4,
    # 9.846 ms): speed-up 9.73 / 9.846 = 0.9882; c64: 30.52 / 31.479 = 0.9695 (ixm-0498,
    # ixh-1962). MTP does not speed these runs up at any concurrency, c4 included.
    r4, r64 = tpot.loc["ixh-1953"], tpot.loc["ixh-1962"]
    assert r4["base id"] == "ixm-0483" and r64["base id"] == "ixm-0498"
    assert r4["TPOT ratio"] == pytest.approx(9.73 / 9.846, abs=5e-4)
    assert r64["TPOT ratio"] == pytest.approx(30.52 / 31.479, abs=5e-4)
    assert r4["K"] == 2 and r4["AL used"] == pytest.approx(2.1695, abs=1e-3)


def test_pairs_never_mix_hardware_of_one_actions_run(tpot):
    # one GitHub Actions run sweeps several GPUs: the join key carries hardware, precision,
    # engine and TP, so every pair's two rows are of one GPU (MI355X fp8 8k/1k c32: ixh-0145
    # 20.119 ms over ixm-1298 26.055 ms, speed-up 26.055 / 20.119 = 1.2950)
    r = tpot.loc["ixh-0145"]
    assert r["gpu"] == "amd-mi355x" and r["base id"] == "ixm-1298"
    assert r["TPOT ratio"] == pytest.approx(26.055 / 20.119, abs=5e-4)
    assert (tpot["TPOT ratio"] > 0.5).all() and (tpot["TPOT ratio"] < 2.5).all()
