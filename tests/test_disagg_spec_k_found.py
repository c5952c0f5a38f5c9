"""K of the InferenceX disaggregated MTP rows that the first annotation pass left unknown
(``scripts/annotate_spec_recipes.py``): MI355X runs launched by an external fork of the launch
scripts, NVIDIA recipes with no InferenceX copy (read in NVIDIA/srt-slurm), and rows whose
concurrency is in no sweep-config entry. Each pinned row quotes the file, commit and line.

The tests that re-read the mirrors skip where the mirrors are absent; the pinned notes do not.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from planner.benchmarks.disagg_rows import disagg_layout, spec_recipe
from planner.benchmarks.io import read_rows

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import annotate_spec_recipes as ann  # noqa: E402

MAIN = "data/benchmarks/public_inferencex.csv"
HIST = "data/benchmarks/public_inferencex_history.csv"
IX = pytest.mark.skipif(not Path(ann.IX_REPO).exists(), reason="no InferenceX mirror")
SRT = pytest.mark.skipif(not Path(ann.SRT_REPO).exists(), reason="no NVIDIA/srt-slurm mirror")


@pytest.fixture(scope="module")
def rows():
    out = {}
    for f in (MAIN, HIST):
        out.update({r["id"]: r for r in read_rows(f)[0]})
    return out


# ------------------------------------------------------------------ MI355X, before amd_utils/
def test_amd_early_fork_runs_draft_one_token(rows):
    """MI355X FP4 SGLang, 1k/1k (run 2026-02-04), amd-master.yaml @ 6f6afc1cbd76, decode
    ``DECODE_MTP_SIZE=2``. The launcher benchmarks/dsr1_fp4_mi355x_sglang-disagg.sh @
    6f6afc1cbd76, line 32: ``git clone --branch sa-260203 https://github.com/billishyahao/
    sglang_disagg.git``. That branch is in no mirror; InferenceX's first copy of the fork
    (6a2e4f5f0, 2026-02-06) has models.yaml line 38 ``mtp_flags: "--speculative-algorithm
    NEXTN --speculative-num-steps 1 --speculative-eagle-topk 1"`` and server.sh line 287
    ``mtp_config="${MODEL_MTP_FLAGS} --speculative-num-draft-tokens ${decode_mtp_size}"``
    (decode only, line 307). One draft step: K = 1 whatever DECODE_MTP_SIZE is (SGLang's
    ServerArgs sets num_draft_tokens = num_steps + 1 = 2 when topk == 1)."""
    n = rows["ixm-1576"]["notes"]
    assert "dsr1_fp4_mi355x_sglang-disagg.sh @ 6f6afc1cbd76 clones fork " in n
    assert "billishyahao/sglang_disagg@sa-260203" in n
    assert "models.yaml @ 6a2e4f5f0cd2" in n
    assert "DECODE_MTP_SIZE=2: --speculative-num-steps 1 --speculative-eagle-topk 1" in n
    assert spec_recipe(n) == {"method": "mtp", "k_decode": 1, "k_prefill": None}


def test_amd_fork_at_21c60a1_drafts_decode_mtp_size(rows):
    """MI355X FP8 SGLang (run 2026-02-11), amd-master.yaml @ 2376a7182ac1, decode
    ``DECODE_MTP_SIZE=2``. The launcher @ fcd11136cc50 (#674, "bump mi355x sglang disagg
    recipe to sa-260211"), line 32: ``COMMIT_ID="21c60a1f979f..."``. InferenceX's copy of
    the fork at that commit (50cfcdbc1, "update to commit 21c60a1"), server.sh line 278:
    ``mtp_config="${MODEL_MTP_FLAGS} --speculative-num-steps ${decode_mtp_size}
    --speculative-num-draft-tokens $((decode_mtp_size + 1))"``: K = 2."""
    n = rows["ixh-0316"]["notes"]
    assert "@ fcd11136cc50 clones fork 21c60a1f979f" in n
    assert "server.sh @ 50cfcdbc1524" in n
    assert spec_recipe(n) == {"method": "mtp", "k_decode": 2, "k_prefill": None}


@IX
def test_fork_evidence_reads_as_quoted():
    """The lines the notes cite are in the mirror at those commits (and the launcher at the
    run dates clones those fork versions)."""
    m = ann.Mirror(ann.IX_REPO)
    assert ann._fork(m, "fp4", "2026-02-04")[0] == "billishyahao/sglang_disagg@sa-260203"
    assert ann._fork(m, "fp8", "2026-02-06")[0] == "billishyahao/sglang_disagg@sa-260203"
    assert ann._fork(m, "fp8", "2026-02-11")[0] == "21c60a1f979f78e0459913bc37dd88a19344cea8"
    assert ann._fork(m, "fp8", "2026-02-16")[0] == "14606ff7c8a91bad1df816bb92a1d595b05ac541"
    old = m.show(
        "6a2e4f5f0cd2044c6d168f8ae732c51387fd1069", "benchmarks/multi_node/amd_utils/models.yaml"
    )
    assert old.splitlines()[37].strip() == (
        'mtp_flags: "--speculative-algorithm NEXTN --speculative-num-steps 1 '
        '--speculative-eagle-topk 1"'
    )
    new = m.show(
        "50cfcdbc15241eeec15341807dd6cbc17e83f964", "benchmarks/multi_node/amd_utils/server.sh"
    )
    assert "--speculative-num-steps ${decode_mtp_size}" in new.splitlines()[277]


# ------------------------------------------------------------------ NVIDIA, NVIDIA/srt-slurm
def test_nvidia_recipes_read_in_srt_slurm(rows):
    """* H100 FP8 SGLang 1P/1D, 1k/8k (run 2026-02-13): CONFIG_FILE=recipes/h100/1k8k/mtp/
      h100-fp8-1p1d-max-dep-mtp.yaml, no InferenceX copy; NVIDIA/srt-slurm @ 616191ca7e64
      (2026-02-04, before the run): ``speculative-num-steps: 2`` at lines 69 (prefill, from
      line 32) and 105 (decode, from line 73). Its ``model: path`` is the alias ``dsfp8``;
      ``served-model-name: "deepseek-ai/DeepSeek-R1"`` (lines 34 and 75) names the model.
    * GB200 FP4 TensorRT-LLM ctx1_gen7_tep8_batch1_eplb0_mtp3.yaml (run 2026-03-23):
      srt-slurm @ 75f6e32a3cfc (2026-01-27): ``num_nextn_predict_layers: 3`` at lines 65
      (prefill) and 104 (decode); the file name's mtp3 agrees."""
    n = rows["ixm-1512"]["notes"]
    assert (
        "NVIDIA/srt-slurm recipes/h100/1k8k/mtp/h100-fp8-1p1d-max-dep-mtp.yaml @ 616191ca7e64" in n
    )
    assert spec_recipe(n) == {"method": "mtp", "k_decode": 2, "k_prefill": 2}
    n = rows["ixm-1433"]["notes"]
    assert "ctx1_gen7_tep8_batch1_eplb0_mtp3.yaml @ 75f6e32a3cfc, 2026-01-27;" in n
    assert spec_recipe(n) == {"method": "mtp", "k_decode": 3, "k_prefill": 3}


@SRT
def test_srt_slurm_lines_read_as_quoted():
    s = ann.Mirror(ann.SRT_REPO)
    h100 = s.show(
        "616191ca7e64", "recipes/h100/1k8k/mtp/h100-fp8-1p1d-max-dep-mtp.yaml"
    ).splitlines()
    assert [h100[i].strip() for i in (68, 104)] == ["speculative-num-steps: 2"] * 2
    gb = s.show(
        "75f6e32a3cfc", "recipes/trtllm/gb200-fp4/1k8k/mtp/ctx1_gen7_tep8_batch1_eplb0_mtp3.yaml"
    ).splitlines()
    assert [gb[i].strip() for i in (64, 103)] == ["num_nextn_predict_layers: 3"] * 2


def test_served_model_name_identifies_the_model():
    sgl = """
model: {path: dsfp8}
backend:
  sglang_config:
    decode: {served-model-name: deepseek-ai/DeepSeek-R1, speculative-num-steps: 2}
"""
    assert {k: v[0] for k, v in ann._recipe_k(sgl, "sglang").items()} == {"decode": 2}
    other = sgl.replace("DeepSeek-R1", "Kimi-K2")
    assert "not DeepSeek-R1" in ann._recipe_k(other, "sglang")


# ------------------------------------------------------------------ concurrency in no entry
def test_row_whose_concurrency_is_in_no_entry(rows):
    """H200 FP8 TensorRT-LLM 1P(DEP8) + 9D(TEP8), 1k/1k, concurrency 144 (run 2026-03-23):
    nvidia-master.yaml @ f316a0ef6013 has no MTP entry with conc 144; the one entry with these
    pools is conc-list [16] (144 = 16 x 9 decode workers), CONFIG_FILE
    c16_ctx1_gen9_tep8_batch128_eplb0_mtp3.yaml: K = 3 (file name and recipe)."""
    n = rows["ixm-1542"]["notes"]
    assert "concurrency 144 is in no entry" in n and "(1: conc-list [16])" in n
    assert spec_recipe(n) == {"method": "mtp", "k_decode": 3, "k_prefill": 3}


def test_every_disaggregated_mtp_row_has_k():
    """After this pass no InferenceX disaggregated MTP row is left without K (91 + 624), and
    each note's own line gives its K: ``speculative-num-steps`` / ``num_nextn_predict_layers``
    / the fork's ``--speculative-num-steps``."""
    n_rows = {MAIN: 0, HIST: 0}
    for f in n_rows:
        for r in read_rows(f)[0]:
            n = r["notes"]
            if "disaggregated prefill/decode" not in n or "spec 'mtp'" not in n:
                continue
            n_rows[f] += 1
            sp = spec_recipe(n)
            assert sp is not None, r["id"]
            line = re.search(r"K \d+ on decode \((.*?)\); prefill K", n).group(1)
            k = re.search(r"(?:speculative-num-steps:? |num_nextn_predict_layers: )(\d+)", line)
            assert int(k.group(1)) == sp["k_decode"], r["id"]
            assert disagg_layout(n)["spec"] == sp
    assert n_rows == {MAIN: 91, HIST: 624}
