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


def test_moe_time_growth_with_verify_tokens_matches_aiter_kernel_timings():
    # aiter's tuned MI355X (gfx950, 256 CUs) fp8-blockscale MoE of one DeepSeek-V3 layer under
    # TP8 (7168 x 256, 257 experts top 9: the shared expert fused in), ROCm/aiter
    # a8w8_blockscale_tuned_fmoe_ds_v3.csv @e4048607: 158.48 / 212.99 / 241.60 / 249.58 us at
    # 32 / 64 / 128 / 256 tokens. The step model's routed bytes follow the expected distinct
    # experts (uniform routing), 256 (1 - (1 - 8/256)^T), plus the shared one:
    #   T = 32:  256 x (1 - 0.36196) + 1 = 164.3;  T = 64: 256 x (1 - 0.13101) + 1 = 223.5
    #   T = 128: 256 x (1 - 0.01716) + 1 = 252.6;  T = 256: 256 x (1 - 0.00029) + 1 = 256.9
    # Relative to 64 tokens: kernel 0.744 / 1.134 / 1.172, model 0.735 / 1.130 / 1.150. A
    # verify step's 3-4x tokens at concurrency 64 do not turn the MoE compute-bound there:
    # the kernel grows 17 % from 64 to 256 tokens, the model 15 %.
    t = mpt.moe_kernel_table().set_index("tokens")
    assert t.loc[64, "experts + shared"] == pytest.approx(223.45, abs=0.1)
    for tok in (32, 128, 256):
        assert t.loc[tok, "model / 64 tok"] == pytest.approx(t.loc[tok, "aiter / 64 tok"], rel=0.05)


@pytest.fixture(scope="module")
def blog():
    return mpt.amd_blog_table().set_index("c")


def test_amd_blog_speedup_falls_with_concurrency_like_the_model_up_to_8(blog):
    # AMD ROCm MTP blog, Table 1 (MI300X, SGLang v0.5.0rc0, DeepSeek-V3 TP8, K = 2): E2E
    # without / with MTP 17,348.25 / 8,229.37 ms at c1 (2.108x) .. 19,919.06 / 11,742.82 at c8
    # (1.696x): 0.805 of the c1 gain. The step model's verify / plain step at c1 and c8 gives
    # 0.848 of its c1 gain; c2 / c4 0.953 / 0.895 against 0.968 / 0.874: within 6 %.
    assert blog.loc[8, "blog / blog at c1"] == pytest.approx(
        (19919.06 / 11742.82) / (17348.25 / 8229.37), abs=1e-3
    )
    for c in (2, 4, 8):
        assert blog.loc[c, "model / model at c1"] == pytest.approx(
            blog.loc[c, "blog / blog at c1"], rel=0.06
        )


@pytest.mark.xfail(
    strict=True,
    reason="issue 30 item 2: above c16 the step model's MTP gain rises again (its verify "
    "step's extra experts vanish once the plain step touches them all: 0.849 of the c1 gain "
    "at c16, 0.994 at c64) while AMD's MI300X SGLang runs keep falling (0.726, 0.684, 0.593: "
    "ROCm MTP blog, Table 1) as InferenceX's MI325X / MI355X / H200 SGLang pairs do; the "
    "missing cost is not the MoE (aiter kernel timings, test above) and no source prices it "
    "(changes/s8-mtpconc.md)",
)
def test_amd_blog_speedup_at_concurrency_64_within_15_percent(blog):
    assert blog.loc[64, "model / model at c1"] == pytest.approx(
        blog.loc[64, "blog / blog at c1"], rel=0.15
    )


def test_sglang_docs_h200_gain_falloff_from_batch_1_to_32():
    # SGLang's DeepSeek docs: MTP speeds decoding "1.8x for batch size 1 and 1.5x for batch
    # size 32 respectively on H200 TP8": the gain at 32 is 1.5 / 1.8 = 0.833 of batch 1's. K is
    # not stated next to the numbers (the example beside them is K = 1; later pages call K = 3
    # the default), and the ratio of the two does not depend on AL; the step model's (bundled
    # H200 SGLang fp8 profile, 1,000-token contexts) is 0.84-0.86 at K = 1, 2 and 3. Read at
    # K = 1 with the natural-text AL 1.897 the claim itself is met within 4 % (1.729 / 1.489).
    t = mpt.sglang_docs_table()
    for k in (1, 2, 3):
        r = t[t["K"] == k].set_index("batch")["model"]
        assert r[32] / r[1] == pytest.approx(1.5 / 1.8, rel=0.05), k
    k1 = t[t["K"] == 1].set_index("batch")
    assert (k1["err %"].abs() <= 5).all()


def test_pair_errors_sit_on_the_mtp_side():
    # sides_table: predicted_ratio's two simulations, each against its own row. Identity:
    # pred ratio / measured ratio (against the same baseline row) = (1 + MTP err) / (1 + base
    # err). ixm-1606 (MI355X SGLang fp8 TP8, 1k/1k, c64, K = 3, AL 2.50) against ixm-1076:
    # 9,407 / 6,054 = 1.554 (MTP +55.4 %), 4,870 / 4,973 = 0.979 (base -2.1 %),
    # 1.554 / 0.979 = 1.587 = 1.932 / 1.217 (ratio +58.7 %).
    t = mpt.sides_table().set_index("id")
    r = t.loc["ixm-1606"]
    assert r["base id"] == "ixm-1076"
    assert r["base err %"] == pytest.approx(-2.1, abs=0.3)
    assert r["MTP err %"] == pytest.approx(55.4, abs=1.0)
    for _, x in t.iterrows():
        lhs = (1 + x["MTP err %"] / 100) / (1 + x["base err %"] / 100)
        assert lhs == pytest.approx(1 + x["ratio err %"] / 100, abs=2e-3)
    # every SGLang baseline is simulated within 10 % of its own value, and every SGLang pair
    # more than 15 % off in the ratio has its MTP run more than 15 % too fast: the error is
    # the MTP side's (acceptance or the verify / draft cost), not the baseline's
    sg = t[t["gpu"] != "nvidia-b200"]
    assert (sg["base err %"].abs() <= 10).all()
    miss = sg[sg["ratio err %"] > 15]
    assert len(miss) == 7 and (miss["MTP err %"] > 15).all()


def test_host_diagnosis_of_the_h200_1k_c64_pair_by_hand(tpot):
    """``--host`` (switch OFF): ixh-1962 (H200 SGLang 0.5.12, 1k/1k, c64, K = 2, AL 2.169).
    The MTP run's predicted TPOT p1 is scaled by the baseline's measured / predicted TPOT
    (30.52 / p0), and ``missing = AL x (31.479 - p1 x 30.52 / p0)`` ms per iteration; divided
    by the 64 sequences and by 64 x 2 verify positions. On the bundled profile that is about
    27 ms (0.42 ms a sequence), far above the ~0.1 ms of host time the model exposes."""
    h = mpt.host_table()
    row = h[(h["gpu"] == "nvidia-h200-sxm") & (h["ISL/OSL"] == "1024/1024") & (h["c"] == 64)]
    assert len(row) == 1
    row = row.iloc[0]
    t = tpot.loc["ixh-1962"]
    p0, p1 = (float(x) for x in t["pred TPOT base / MTP ms"].split(" / "))
    assert t["TPOT base ms"] == pytest.approx(30.52) and t["TPOT MTP ms"] == pytest.approx(31.479)
    miss = 2.169 * (31.479 - p1 * 30.52 / p0)
    assert row["missing ms per iteration"] == pytest.approx(miss, abs=0.01)
    assert row["per sequence ms"] == pytest.approx(miss / 64, abs=0.001)
    assert row["per verify position ms"] == pytest.approx(miss / 128, abs=0.001)
    assert 0.3 < row["per sequence ms"] < 0.55


def test_held_out_profiles_read_the_issue30_cache(tmp_path):
    """``--holdout PKL``: source -> the pickled profile (None for a source not in it); no
    path -> None (the bundled profile)."""
    import pickle

    p = tmp_path / "p.pkl"
    p.write_bytes(pickle.dumps({"SemiAnalysis InferenceX (InferenceMAX) open results": "prof"}))
    get = mpt.held_out_profiles(str(p))
    assert get("SemiAnalysis InferenceX (InferenceMAX) open results") == "prof"
    assert get("another source") is None
    assert mpt.held_out_profiles(None) is None


def test_other_publishers_pairs_read_latency_as_speedup():
    # AMD ROCm MTP blog, Table 1, c1: E2E 17,348.25 ms without MTP, 8,229.37 ms with it, so
    # the speed-up is 17,348.25 / 8,229.37 = 2.108 (the value ratio 0.474 inverted); the
    # TensorRT-LLM blog 1 MTP 1 row is a throughput: 198 / 111 = 1.784 as is. The ShareGPT
    # pairs have no prediction (no length distribution) and say why.
    o = mpt.other_pairs_table().set_index("id")
    assert o.loc["rocmtp-0002", "measured"] == pytest.approx(17348.25 / 8229.37, abs=5e-4)
    assert o.loc["trtb1-0002", "measured"] == pytest.approx(198 / 111, abs=5e-4)
    assert str(o.loc["rocmtp-0016", "predicted"]).startswith("ShareGPT")
    assert o.loc["rocmtp-0016", "err %"] != o.loc["rocmtp-0016", "err %"]  # NaN: no error
    amd = o[o["source"].str.startswith("AMD ROCm") & o["err %"].notna()]
    assert sorted(amd["c"]) == [1, 2, 4, 8, 16, 32, 64]
