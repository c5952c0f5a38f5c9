"""scripts/mlperf_stream_gap.py: Little's-law sequences per rank and the Offline full-batch step,
by hand on published MLPerf DeepSeek-R1 rows, and the tables' reading of the notes
(changes/s8-v51host.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location(
        "mlperf_stream_gap", ROOT / "scripts" / "mlperf_stream_gap.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_per_rank_sequences_by_hand():
    # Dell XE9680L B200, v5.1 Server at 3.8 qps (mlds51-0008 / mlds51-0011):
    # 13,913.33 tok/s x 0.061003 s / 8 ranks = 106.09 sequences a rank
    mod = _script()
    assert mod.per_rank_sequences(13913.33, 61.003, 8) == pytest.approx(106.09, abs=0.01)


def test_full_batch_step_by_hand():
    # Dell XE9680L B200, v5.1 Offline (mlds51-0007): 512 a rank x 8 ranks / 30,493.3 tok/s
    # = 0.13432 s; NVIDIA B200 v6.0 Offline (mlds60-0048): 4,096 / 57,116.9 = 0.07171 s
    mod = _script()
    assert mod.full_batch_step_ms(512, 8, 30493.3) == pytest.approx(134.32, abs=0.01)
    assert mod.full_batch_step_ms(512, 8, 57116.9) == pytest.approx(71.71, abs=0.01)


def test_bad_input_is_refused():
    mod = _script()
    with pytest.raises(ValueError):
        mod.per_rank_sequences(0.0, 60.0, 8)
    with pytest.raises(ValueError):
        mod.full_batch_step_ms(512, 0, 1000.0)


@given(st.floats(1.0, 1e6), st.floats(1.0, 1e3), st.integers(1, 512), st.floats(1.01, 10.0))
def test_sequences_scale_with_throughput(tok_s, tpot_ms, ranks, k):
    """Little's law is linear: k x the throughput at the same TPOT is k x the sequences."""
    mod = _script()
    a = mod.per_rank_sequences(tok_s, tpot_ms, ranks)
    assert mod.per_rank_sequences(k * tok_s, tpot_ms, ranks) == pytest.approx(k * a, rel=1e-9)


def test_tables_read_the_notes():
    """Every v5.1 Server run streams every iteration (the harness default; no v5.1 config sets
    it); the v6.0 B200 / B300 Server configs set 20. The gap column is measured - predicted."""
    mod = _script()
    rows = pd.read_csv(mod.DATA, dtype=str, keep_default_na=False)
    ids = rows.loc[rows["metric"] == "tpot_ms_mean", "id"]
    pred = pd.Series(30.0, index=ids.values)  # a flat 30 ms prediction for the check
    server, offline = mod.tables(rows, pred)
    v51 = server[server["round"] == "v5.1"]
    assert len(v51) == 8 and set(v51["stream_interval"]) == {"1"}
    b2 = server[(server["round"] == "v6.0") & server["gpu"].isin(["nvidia-b200", "nvidia-b300"])]
    assert set(b2["stream_interval"]) == {"20"}
    dell = v51[v51["system"] == "XE9680L_B200_SXM_180GBx8_TRT"].iloc[0]
    assert dell["seqs_per_rank"] == pytest.approx(106.1, abs=0.05)
    assert dell["gap_ms"] == pytest.approx(61.003 - 30.0, abs=0.05)
    # the harness turns streaming off in Offline (code/llmlib/config.py of both rounds:
    # "self.gen_config.streaming &= (self.workload.scenario != C.Scenario.Offline)")
    assert set(offline["stream_interval"]) == {"off (no streaming)"}
