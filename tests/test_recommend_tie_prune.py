"""The winner does not depend on ``--top``: an option whose bound ties the N-th best of
another GPU x framework pair can still outrank it on :func:`planner.recommend.objective.sort_key`'s
tie-breaks, so the branch and bound must not prune it.

DeepSeek-R1, 20 req/s, 2,000 -> 1,000 tokens, TTFT p99 3 s, TPOT p99 50 ms, MTP searched, on
B200 in fp4: TensorRT-LLM DEP8 (1 x 8 GPUs, fitted on its own B200 rows) and SGLang DEP4 + MTP
(2 x 4 GPUs, transferred) both cost 8 x $7.15 = $57.20/h. ``--top 3`` ranks TensorRT-LLM first
(same cost, same GPUs, nearer evidence); ``--top 1`` used to prune it once SGLang had set the
threshold at $57.20 (bound 57.20 >= 57.20) and answered SGLang.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from planner.cli.main import main as cli_main

SCENARIO = """\
name: r1-tie
model: deepseek-r1
workload:
  traffic: {mean_rps: 20, peak_rps: 20, arrival: poisson}
  input_tokens: {kind: fixed, tokens: 2000}
  output_tokens: {kind: fixed, tokens: 1000}
slo:
  ttft: {max_s: 3.0, percentile: p99}
  tpot: {max_s: 0.05, percentile: p99}
constraints:
  headroom: 0.2
  speculative: auto
"""


def _winners(path, top: int) -> list[tuple[str, str, float]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli_main(
            ["recommend", str(path), "--gpus", "b200", "--precisions", "fp4", "--top", str(top),
             "--disagg", "off", "--format", "json"]
        )  # fmt: skip
    assert rc in (0, None)
    recs = json.loads(out.getvalue())["recommendations"]
    return [(r["framework"], r["layout"], r["usd_per_hour"]) for r in recs]


def test_top_1_names_the_winner_of_top_3(tmp_path):
    path = tmp_path / "r1.yaml"
    path.write_text(SCENARIO)
    three = _winners(path, 3)
    one = _winners(path, 1)
    # the tie: 8 B200s at $7.15/GPU-h each way (the catalog's median on-demand row)
    assert three[0][2] == pytest.approx(8 * 7.15) == three[1][2]
    assert three[0][:2] == ("trtllm", "DEP8")
    assert one[0] == three[0]
