"""The B200 fp4 TensorRT-LLM decode step at the concurrency MLPerf's runs held (issue 32).

Two runs of the same engine (NVIDIA's v5.1 B200 Llama-2-70B fp4, TP1, 8 replicas) state
their rate, mean latency and mean time per output token (data/benchmarks/public_amd.csv
mlp51-0011 / mlp51-0012 notes, quoting each run's mlperf_log_summary.txt). Little's law
gives the sequences a step decodes; the planner's step at that batch (bundled profile,
node trtllm/nvidia-b200/fp4 dense, fitted on max-throughput rows only), with the prompt
tokens the run's rate brings in a step at the OpenOrca set's mean prompt (222.6 tokens, all
24,576 samples), is 22% short at 255 sequences and 24% long at 1,532: not a fixed cost (with
the first 2,162 samples' 120-token prompts it looked like one, ~10 ms short at both;
docs/changes/2026-12-07b/b200fp4.md, docs/changes/2026-12-07e/mlpint.md).
"""

from __future__ import annotations

import pytest

from planner.catalog import load_catalog
from planner.catalog.profile import resolve_params
from planner.engine.step import step_model
from planner.workload.presets import openorca_lengths

GPUS = 8
# (completed samples/s, mean latency [s], mean TPOT [s]) of each run's log summary
INTERACTIVE = (218.82, 9.340421103, 0.034209789)
SERVER = (361.30, 33.924087207, 0.123320085)


def _in_flight(run):
    rate, latency, _ = run
    return rate * latency / GPUS  # Little's law, a GPU


def test_littles_law_from_the_logs_by_hand():
    # 218.82 x 9.3404 / 8 = 255.5; 361.30 x 33.924 / 8 = 1,532.1
    assert _in_flight(INTERACTIVE) == pytest.approx(255.5, abs=0.1)
    assert _in_flight(SERVER) == pytest.approx(1532.1, abs=0.1)
    # two points of one engine: slope (123.32 - 34.21) / (1,532.1 - 255.5) = 0.0698 ms a
    # sequence, intercept 34.21 - 255.5 x 0.0698 = 16.4 ms a step
    slope = (SERVER[2] - INTERACTIVE[2]) / (_in_flight(SERVER) - _in_flight(INTERACTIVE))
    assert slope * 1e3 == pytest.approx(0.0698, abs=0.0005)
    assert (INTERACTIVE[2] - slope * _in_flight(INTERACTIVE)) * 1e3 == pytest.approx(16.4, abs=0.1)


def _sim_step(run) -> float:
    """The planner's step [s] at the run's batch: its decoding sequences plus the prompt
    tokens its rate brings in a step (OpenOrca means), solved for the step time."""
    cat = load_catalog()
    p, _ = resolve_params("nvidia-b200", "trtllm", "fp4", catalog=cat, family="dense")
    sm = step_model("llama-2-70b", "nvidia-b200", "fp4", "fp8", 1, 1, p, cat)
    i, o = openorca_lengths()
    isl, osl = i.mean_tokens(), o.mean_tokens()
    n, t = _in_flight(run), run[2]
    for _ in range(40):
        pf = run[0] / GPUS * isl * t  # prompt tokens a step
        kv = n * (isl + osl / 2) + pf * isl / 2
        t = float(sm.step(n + pf, n + 1, n + 1, kv, kv).time_s)
    return t


@pytest.mark.xfail(
    strict=True,
    reason="B200 fp4 step at MLPerf Server's 1,532 sequences (+1,600 prompt tokens a step at "
    "the OpenOrca mean prompt of 222.6 tokens): 153 ms simulated vs 123.3 ms measured (+24%); "
    "the max-throughput rows the node is fitted on do not separate its per-token terms (GEMM, "
    "KV read at kv_mem_eff 0.48) from the MLPerf harness's (docs/changes/2026-12-07e/mlpint.md)",
)
def test_high_batch_step_is_within_15_percent():
    assert _sim_step(SERVER) == pytest.approx(SERVER[2], rel=0.15)


def test_the_gap_is_not_a_fixed_cost():
    """Short at the small batch, long at the large one: a slope and intercept that differ from
    the runs' line (0.0698 ms a sequence + 16.4 ms), not one missing fixed cost."""
    gap_i = INTERACTIVE[2] - _sim_step(INTERACTIVE)
    gap_s = SERVER[2] - _sim_step(SERVER)
    # bundled profile, OpenOrca prompts of all 24,576 samples: +7.5 ms at 255 sequences
    # (26.7 vs 34.2 ms), -29.7 ms at 1,532 (153.0 vs 123.3 ms)
    assert 0.004 < gap_i < 0.012
    assert -0.040 < gap_s < -0.020


@pytest.mark.xfail(
    strict=True,
    reason="B200 fp4 step at MLPerf Interactive's 255 sequences (+160 prompt tokens a step): "
    "26.7 ms simulated vs 34.2 ms measured (-22%); the trtllm/nvidia-b200/fp4 dense node is "
    "fitted on max-throughput rows (fit.OVERHEAD_BLIND_KINDS) and keeps its parent's fixed "
    "costs; the MLPerf harness runs with use_graphs False (docs/changes/2026-12-07b/b200fp4.md, "
    "docs/changes/2026-12-07e/mlpint.md)",
)
def test_interactive_step_is_within_15_percent():
    assert _sim_step(INTERACTIVE) == pytest.approx(INTERACTIVE[2], rel=0.15)
