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


def test_verify_terms_of_the_h200_pair_by_hand():
    # ixm-1554: InferenceX H200 SGLang TP8 fp8, 1k/1k, concurrency 64, MTP K = 2
    # (dsr1_fp8_h200_mtp.sh: --speculative-num-steps 2 --speculative-num-draft-tokens 3).
    # No attention DP: 64 sequences a rank; the verify step runs 64 x (2 + 1) = 192 positions;
    # the draft: one extend pass over the 192 positions, then K - 1 = 1 pass over 64.
    # Expected distinct routed experts of one MoE layer (256 experts, top 8, TP8: all 256 on
    # every GPU, uniform routing): 256 x (1 - (1 - 8/256)^64) = 256 x (1 - 0.13107) = 222.4
    # plain, 256 x (1 - 0.13107^3) = 256 x (1 - 0.002252) = 255.4 verify.
    t = mpt.terms_table().set_index("id")
    r = t.loc["ixm-1554"]
    assert (r["B / rank"], r["K"], r["verify tok"]) == (64, 2, 192)
    assert r["draft passes"] == "1 x 192 tok + 1 x 64"
    assert r["experts plain -> verify"] == "222 -> 255 of 256"
    assert r["KV passes"] == 1.0  # FlashInfer MLA on Hopper packs 3 x 16 heads in one tile
    # every plain run of H200 SGLang fp8 TP8 stops at 64 sequences: the 192 verify positions
    # lie beyond any plain step the fitted profile has seen there
    assert r["base c max"] == 64
    assert r["verify tok"] > r["base c max"]
    assert 1.0 < r["v/p model"] < 3.0
