"""InferenceX's disaggregated MTP rows: K read in each run's recipe
(``scripts/annotate_spec_recipes.py``) and the rows predicted with it
(``planner.benchmarks.disagg_rows.build_spec_row``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from planner.benchmarks.disagg_rows import (
    build_spec_row,
    disagg_layout,
    predict_disagg_row,
    spec_recipe,
)
from planner.benchmarks.io import read_rows
from planner.catalog.catalog import load_catalog
from planner.serving.speculative import verify_steps

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import annotate_spec_recipes as ann  # noqa: E402

CAT = load_catalog()
MAIN = "data/benchmarks/public_inferencex.csv"
HIST = "data/benchmarks/public_inferencex_history.csv"


@pytest.fixture(scope="module")
def rows():
    out = {}
    for f in (MAIN, HIST):
        out.update({r["id"]: r for r in read_rows(f)[0]})
    return out


# ------------------------------------------------------------------ annotated rows, pinned
def test_trtllm_row_pinned_to_its_recipe(rows):
    """B200 FP4 TensorRT-LLM, 1P(DEP4) + 2D(DEP8), 1k/1k, concurrency 1214 (run 2026-01-29).
    nvidia-master.yaml @ d7a6d4e700fe, key dsr1-fp4-b200-dynamo-trt, the entry with
    ``conc-list: [1214]``: ``CONFIG_FILE=recipes/trtllm/b200-fp4/1k1k/mtp/
    ctx1_gen2_dep8_batch64_eplb0_mtp2.yaml``. Its text (InferenceX copy
    benchmarks/multi_node/srt-slurm-recipes/trtllm/b200-fp4/1k1k/mtp/... @ 80d98084fa58,
    lines 66 and 105; the same in connorcarpenter15/srt-slurm @ 5a156f6b):
    ``speculative_config: decoding_type: MTP, num_nextn_predict_layers: 2`` in both the
    prefill and the decode sections."""
    n = rows["ixm-1351"]["notes"]
    assert "nvidia-master.yaml @ d7a6d4e700fe key dsr1-fp4-b200-dynamo-trt" in n
    assert "CONFIG_FILE=recipes/trtllm/b200-fp4/1k1k/mtp/ctx1_gen2_dep8_batch64_eplb0_mtp2" in n
    assert spec_recipe(n) == {"method": "mtp", "k_decode": 2, "k_prefill": 2}


def test_sglang_rows_pinned_to_their_recipes(rows):
    """* B200 FP4 SGLang 1P(TP4) + 1D(TP8), 8k/1k, c 64 (run 2026-06-11): config @
      263aace86de6 -> recipes/sglang/dsr1/b200-fp4/8k1k/disagg/mtp/8k1k_mtp_lowlat_2.yaml,
      InferenceX's own copy @ 2667022429cd (added 2026-06-08, before the run): lines 97 and
      126 ``speculative-num-steps: 3`` (``speculative-num-draft-tokens: 4``, topk 1) in
      prefill and decode;
    * H200 FP8 SGLang, 8k/1k, c 512 (run 2026-02-07): recipes/h200/8k1k/bs128-1p1d-dep-mtp.yaml,
      copy @ 80d98084fa58: ``speculative-num-steps: 2`` at line 109, in the decode section
      only (decode: line 76; the prefill section, lines 38-75, has none)."""
    n = rows["ixm-1331"]["notes"]
    assert "8k1k_mtp_lowlat_2.yaml @ 2667022429cd, added 2026-06-08)" in n
    assert spec_recipe(n) == {"method": "mtp", "k_decode": 3, "k_prefill": 3}
    n = rows["ixm-1532"]["notes"]
    assert "CONFIG_FILE=recipes/h200/8k1k/bs128-1p1d-dep-mtp.yaml" in n
    assert spec_recipe(n) == {"method": "mtp", "k_decode": 2, "k_prefill": None}


def test_amd_row_pinned_to_decode_mtp_size(rows):
    """MI355X FP4 SGLang, 1k/1k, c 64 (run 2026-05-27): amd-master.yaml @ bb00055812e0, key
    dsr1-fp4-mi355x-sglang-disagg-mtp, decode ``DECODE_MTP_SIZE=2``; its meaning in
    benchmarks/multi_node/amd_utils/server_sglang.sh @ bb00055812e0, line 324:
    ``--speculative-num-steps ${decode_mtp_size} --speculative-num-draft-tokens
    $((decode_mtp_size + 1))``, added only ``[[ "$mode" == "decode" ]]`` (line 344)."""
    n = rows["ixm-1570"]["notes"]
    assert "amd-master.yaml @ bb00055812e0 key dsr1-fp4-mi355x-sglang-disagg-mtp" in n
    assert "DECODE_MTP_SIZE=2: --speculative-num-steps 2 --speculative-num-draft-tokens 3" in n
    assert spec_recipe(n) == {"method": "mtp", "k_decode": 2, "k_prefill": None}


def test_every_annotation_agrees_with_its_own_evidence(rows):
    """Property over all annotated rows: a TensorRT-LLM recipe's ``mtp<N>`` file name is its
    K, an AMD row's DECODE_MTP_SIZE is its K (1 under the early fork's one draft step), the
    note parses, and only disaggregated MTP rows carry it. Counts as written by the script:
    all 91 + 624 rows (66 + 419 before the fork and NVIDIA/srt-slurm readings)."""
    per_file = {MAIN: 0, HIST: 0}
    for f in per_file:
        for r in read_rows(f)[0]:
            n = r["notes"]
            if ann.TAG not in n:
                continue
            per_file[f] += 1
            assert "disaggregated prefill/decode" in n and "spec 'mtp'" in n, r["id"]
            sp = spec_recipe(n)
            assert sp is not None and sp["method"] == "mtp", r["id"]
            if m := re.search(r"CONFIG_FILE=recipes/trtllm/\S+_mtp(\d+)", n):
                assert int(m.group(1)) == sp["k_decode"], r["id"]
            if m := re.search(r"DECODE_MTP_SIZE=(\d+): --speculative-num-steps (\d+)", n):
                # the fork versions before amd_utils/ run one draft step whatever N is
                # (tests/test_disagg_spec_k_found.py); later ones N steps
                want = 1 if "fork" in n and m.group(2) == "1" else int(m.group(1))
                assert want == sp["k_decode"] and sp["k_prefill"] is None, r["id"]
            assert disagg_layout(n)["spec"] == sp
    assert per_file == {MAIN: 91, HIST: 624}


def test_annotation_is_idempotent_and_skips_other_rows():
    """A row already tagged or not a disaggregated MTP row is left as it is (no mirror read)."""
    row = {"notes": "disaggregated prefill/decode ...; spec 'mtp'; speculative recipe (x): ..."}
    assert ann.note_for(row, None) == "-already annotated"
    assert ann.note_for({"notes": "TP=8, no MTP"}, None) == "-not a disaggregated MTP row"


def test_recipe_text_is_read_per_pool():
    trt = """
model: {path: dsr1}
backend:
  trtllm_config:
    prefill: {speculative_config: {decoding_type: MTP, num_nextn_predict_layers: 3}}
    decode: {speculative_config: {decoding_type: MTP, num_nextn_predict_layers: 3}}
"""
    got = ann._recipe_k(trt, "trtllm")
    assert {k: v[0] for k, v in got.items()} == {"prefill": 3, "decode": 3}
    sgl = """
model: {path: dsr1}
backend:
  sglang_config:
    prefill: {chunked-prefill-size: 16384}
    decode: {speculative-num-steps: 2, speculative-eagle-topk: 1, speculative-num-draft-tokens: 3}
"""
    got = ann._recipe_k(sgl, "sglang")
    assert {k: v[0] for k, v in got.items()} == {"decode": 2}
    assert "topk" in ann._recipe_k(sgl.replace("topk: 1", "topk: 4"), "sglang")
    assert "not DeepSeek-R1" in ann._recipe_k(sgl.replace("dsr1", "dsv4"), "sglang")


# ------------------------------------------------------------------ the prediction
def test_disagg_mtp_row_built_with_recipe_k_and_random_prior(rows):
    """ixm-1351 (K = 2 in both pools, random-token prompts): the decode pool's AL is the
    random-prompt prior carried down from K = 3 (InferenceX PR #649: ~2.50) by the chain
    rate a: 1 + a + a^2 + a^3 = 2.50 -> a = 0.6914 (1 + 0.6914 + 0.4780 + 0.3305 = 2.4999),
    so AL(K = 2) = 1 + a + a^2 = 2.1694. The prefill pool drafts with K = 2 too. Tokens per
    verify step: a request of O outputs needs ~ (O - 1) / AL verify steps after its first
    token, so over U{819 .. 1024} outputs (1k/1k, range 0.8) the drawn steps give
    mean(O - 1) / mean(steps) = AL within 2 %."""
    d, lay = build_spec_row(rows["ixm-1351"], CAT)
    assert lay["spec"] == {"method": "mtp", "k_decode": 2, "k_prefill": 2}
    s = d.decode.spec
    assert (s.method, s.spec_tokens, s.workload) == ("mtp", 2, "random")
    assert s.acceptance_length == pytest.approx(2.1694, abs=2e-3)
    assert d.prefill.spec is not None and d.prefill.spec.spec_tokens == 2
    rng = np.random.default_rng(1)
    o = rng.integers(819, 1025, 600)
    steps = verify_steps(o, s, rng)
    assert float(np.mean(o - 1) / np.mean(steps)) == pytest.approx(2.1694, rel=0.02)
    # a recipe without MTP in prefill: only the decode pool speculates
    d2, _ = build_spec_row(rows["ixm-1532"], CAT)
    assert d2.prefill.spec is None and d2.decode.spec.spec_tokens == 2


def test_disagg_mtp_row_note_and_tpot(rows):
    """ixm-1351 (B200 nvfp4 TensorRT-LLM 1P(DEP4)+2D(DEP8), 1,214 clients): the recipe's MTP
    is read, and the decode pool's TPOT falls with it by less than the AL (verify steps cost
    more than plain ones); without the note, MTP is not modelled."""
    r = rows["ixm-1351"]
    got = predict_disagg_row(r, CAT)
    assert not isinstance(got, str), got
    assert "MTP k=2, AL 2.17 (random, SemiAnalysisAI/InferenceX PR #649" in got[1]
    plain = dict(r, notes=r["notes"].split("; " + ann.TAG)[0])
    base = predict_disagg_row(plain, CAT)
    assert "MTP not modelled" in base[1]

    def tpot(note: str) -> float:
        return float(re.search(r"TPOT mean ([\d.]+) ms", note)[1])

    assert 1.0 < tpot(base[1]) / tpot(got[1]) < 2.1694


def test_disagg_mtp_row_predicted_within_the_issue_bar(rows):
    """ixm-1351 measured 142,228 total tok/s over 20 GPUs (7,111 per GPU): within 25 % (the
    issue's per-configuration bar). It was, while Little's law let the open loop run above
    what the prefill pool serves; 0.744 with the closed loop capped at the served rate
    (changes/s8-front8k.md: the 1P(DEP4) prefill pool, with its K=2 draft, served 57.4 req/s
    against the 77.2 measured); 1.082 since the prefill pool takes the measured routing skew
    (docs/changes/2026-12-07e/poolskew.md: served rate 83.4 req/s, TPOT mean 10.3 ms)."""
    got = predict_disagg_row(rows["ixm-1351"], CAT)
    assert got[0] == pytest.approx(142227.82, rel=0.25)
