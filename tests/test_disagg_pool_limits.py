"""Each pool's batch limits of InferenceX's NVIDIA disaggregated runs: read in the run's
srt-slurm recipe (scripts/annotate_pool_limits.py), parsed from the notes and applied by
planner/benchmarks/disagg_rows.py; and what a decode cap does to TTFT in the simulation."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from planner.benchmarks.disagg_rows import disagg_layout, pool_limits
from planner.catalog.catalog import load_catalog
from planner.serving.disagg import Disaggregated, Pool, build_disagg, simulate_disagg
from planner.workload.workload import make_requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import annotate_pool_limits as apl  # noqa: E402

CAT = load_catalog()

_TRT = """
model: {path: dsr1}
backend:
  trtllm_config:
    prefill: {max_batch_size: 8, max_num_tokens: 10240, enable_attention_dp: true}
    decode: {max_batch_size: 64, max_num_tokens: 192, enable_attention_dp: true}
"""
_SGL = """
model: {path: dsr1-fp8}
backend:
  sglang_config:
    prefill:
      max-running-requests: 8
      max-prefill-tokens: 8192
      chunked-prefill-size: 65536
      data-parallel-size: 8
      enable-dp-attention: true
    decode:
      max-running-requests: 128
      data-parallel-size: 8
"""


def test_recipe_limits_per_rank_by_engine():
    # TensorRT-LLM: max_batch_size / max_num_tokens are per rank already
    assert apl.recipe_limits(_TRT, "trtllm") == {
        "prefill": {"max_num_seqs": 8, "max_num_batched_tokens": 10240},
        "decode": {"max_num_seqs": 64, "max_num_batched_tokens": 192},
    }
    # SGLang with DP attention: 8 // 8 = 1 request per rank; token budget
    # min(max-prefill-tokens 8192, chunked-prefill-size 65536 // 8 = 8192) = 8192.
    # Without DP attention (the decode section): the total, 128, undivided
    assert apl.recipe_limits(_SGL, "sglang") == {
        "prefill": {"max_num_seqs": 1, "max_num_batched_tokens": 8192},
        "decode": {"max_num_seqs": 128},
    }
    assert "not DeepSeek-R1" in apl.recipe_limits(_TRT.replace("dsr1", "glm5"), "trtllm")


def _row(rid: str) -> dict:
    for f in apl.FILES:
        with (ROOT / f).open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                if row["id"] == rid:
                    return row
    raise AssertionError(rid)


def test_ixm1351_limits_parsed_and_applied():
    # ixm-1351 (B200 fp4 TensorRT-LLM, 1P(DEP4) + 2D(DEP8), MTP 2) ran
    # recipes/trtllm/b200-fp4/1k1k/mtp/ctx1_gen2_dep8_batch64_eplb0_mtp2.yaml, whose text
    # (InferenceX copy @ 80d98084fa58) has prefill max_batch_size 8, max_num_tokens 10240
    # and decode max_batch_size 64 (the file name's batch64), max_num_tokens 192
    notes = _row("ixm-1351")["notes"]
    assert "ctx1_gen2_dep8_batch64_eplb0_mtp2.yaml" in notes
    assert pool_limits(notes) == {
        "prefill": {"max_num_seqs": 8, "max_num_batched_tokens": 10240},
        "decode": {"max_num_seqs": 64, "max_num_batched_tokens": 192},
    }
    lay = disagg_layout(notes)
    assert lay["prefill"]["max_num_seqs"] == 8
    assert lay["prefill"]["max_num_batched_tokens"] == 10240
    # the decode pool takes the batch only (its token budget is batch x verify width)
    assert lay["decode"]["max_num_seqs"] == 64
    assert "max_num_batched_tokens" not in lay["decode"]
    # a row without the note keeps the engine's defaults
    assert pool_limits(re.sub(r"; pool limits \(.*$", "", notes)) is None


def test_every_annotated_row_parses_and_trt_names_agree():
    n = srt = 0
    for f in apl.FILES:
        with (ROOT / f).open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                if apl.TAG not in row["notes"]:
                    continue
                n += 1
                srt += "pool limits (recipe text: NVIDIA/srt-slurm" in row["notes"]
                assert "disaggregated prefill/decode" in row["notes"]
                assert not row["hardware"].startswith("amd")
                lim = pool_limits(row["notes"])
                assert lim is not None, row["id"]
                b = re.search(r"CONFIG_FILE=\S*/trtllm/\S*_batch(\d+)_", row["notes"])
                if b:
                    assert lim["decode"]["max_num_seqs"] == int(b.group(1)), row["id"]
    # 133 + 702 from InferenceX's copies (scripts/annotate_pool_limits.py output), 13 + 97
    # from the NVIDIA/srt-slurm text the speculative note names
    # (scripts/annotate_pool_limits_srt.py output)
    assert (n - srt, srt) == (835, 110)


def test_a_decode_cap_moves_the_wait_into_ttft():
    # one 1P1D group of H100 vLLM replicas serving llama-3.1-8b; two requests arrive
    # together. With one decode slot the second request is admitted into decode only when
    # the first finishes, so its first token comes after the first request's last one
    # (TTFT_2 >= E2E_1); with the default slots both decode together.
    h100 = Pool(gpu="nvidia-h100-sxm", framework="vllm")
    capped = Pool(gpu="nvidia-h100-sxm", framework="vllm", max_num_seqs=1)
    reqs = make_requests([0.0, 0.0], [2000, 2000], [50, 50])
    free = simulate_disagg(
        build_disagg("llama-3.1-8b", Disaggregated(prefill=h100, decode=h100), catalog=CAT), reqs
    )
    one = simulate_disagg(
        build_disagg("llama-3.1-8b", Disaggregated(prefill=h100, decode=capped), catalog=CAT),
        reqs,
    )
    first, second = np.argsort(one.first_token_s)
    assert one.ttft_s[second] >= one.e2e_s[first] - 1e-12
    assert free.ttft_s[second] < free.e2e_s[first]
    # the mean TTFT rises by the wait (the first request's own first step is a batch of one,
    # slightly faster, so not every request is later), and the decode batch the cap leaves
    # is smaller, so TPOT does not rise
    assert one.ttft_s.mean() > free.ttft_s.mean()
    assert np.nanmean(one.tpot_s) <= np.nanmean(free.tpot_s) + 1e-12


@pytest.mark.skipif(not Path(apl.IX_REPO).exists(), reason="no InferenceX mirror")
def test_rerun_changes_nothing():
    # running the script again annotates no row (a row with the tag is skipped)
    m = apl.Mirror(apl.IX_REPO)
    row = _row("ixm-1351")
    assert apl.note_for(row, m) == "-already annotated"


def test_srt_text_ixh0786_sglang_dp_attention_chunk():
    # ixh-0786 (B200 fp8 SGLang 2P(DEP8)+1D(DEP8) MTP, 8k/1k, 512 clients): its recipe
    # recipes/b200-fp8/8k1k/mtp/max-tpt-dep8-2p1d.yaml @ 5063eb432640 sets, in both pools,
    # max-running-requests 512, max-prefill-tokens 32768, chunked-prefill-size 32768,
    # data-parallel-size 8 and enable-dp-attention: per rank 512 // 8 = 64 requests and
    # min(32768, 32768 // 8) = 4096 tokens a step, so each 6,554-8,192-token prompt is two
    # chunks (the TensorRT-LLM 4P run, ixh-0989, prefills one whole prompt per rank a step:
    # max_batch_size 1, max_num_tokens 8320)
    lay = disagg_layout(_row("ixh-0786")["notes"])
    assert lay["prefill"]["max_num_seqs"] == 64
    assert lay["prefill"]["max_num_batched_tokens"] == 4096
    assert lay["decode"]["max_num_seqs"] == 64
    assert disagg_layout(_row("ixh-0989")["notes"])["prefill"]["max_num_batched_tokens"] == 8320


def test_srt_rerun_changes_nothing():
    import annotate_pool_limits_srt as srt

    assert srt.note_for(_row("ixh-0786")) == "-already annotated"
    # a row without a named srt-slurm text is left, with the reason
    row = {"notes": "layout_unsupported: disaggregated prefill/decode (8 prefill + 8 decode)"}
    assert srt.note_for(row) == "-no NVIDIA/srt-slurm recipe text named in the notes"
