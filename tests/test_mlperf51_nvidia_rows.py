"""The MLPerf v5.1 Llama-2-70B Server / Interactive rows of H200 and B200 systems
(``data/benchmarks/public_mlperf51_nvidia.csv``, issue 32 item 3): each row's number, rate
and engine config are the ones its run log and config file state (quoted in the notes)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from planner.benchmarks.schema import engine_settings, graphs_off, memory_fraction_from_notes
from planner.catalog.catalog import DATA_DIR

ROWS = pd.read_csv(
    DATA_DIR / "benchmarks" / "public_mlperf51_nvidia.csv", dtype=str, keep_default_na=False
)


def _quoted(notes: str, key: str) -> float:
    m = re.search(r"'" + re.escape(key) + r"\s*:\s*([0-9.]+)'", notes)
    assert m, key
    return float(m.group(1))


def test_the_systems():
    """27 runs with a config file in their submitter's configs/ folder: H200 Interactive 5
    (Cisco, Dell, Google, HPE, Nebius), H200 Server 8, B200 Interactive 5, B200 Server 9 (the
    NVIDIA B200 runs are mlp51-0011 / mlp51-0012 of public_amd.csv); all 8 GPUs, TP1, v5.1."""
    assert len(ROWS) == 27 and ROWS["id"].is_unique
    got = ROWS.groupby(["hardware", "mode"]).size().to_dict()
    assert got == {
        ("nvidia-h200-sxm", "interactive"): 5,
        ("nvidia-h200-sxm", "server"): 8,
        ("nvidia-b200", "interactive"): 5,
        ("nvidia-b200", "server"): 9,
    }
    assert set(ROWS["source"]) == {"MLPerf Inference v5.1"}
    assert set(ROWS["n_gpus"]) == {"8"} and set(ROWS["tp"]) == {"1"}
    assert not ROWS["notes"].str.contains("NVIDIA/results").any()


@pytest.mark.parametrize("i", range(len(ROWS)))
def test_each_row_is_its_log(i):
    """The value is the log's 'Completed tokens per second', the rate its target_qps, and
    tokens per completed sample 250-310 (OpenOrca's generated answers, ~290); the sequences
    in flight quoted are completed samples/s x mean latency / 8 GPUs."""
    r = ROWS.iloc[i]
    notes = r["notes"]
    assert "'Result is : VALID'" in notes
    assert float(r["value"]) == pytest.approx(_quoted(notes, "Completed tokens per second"), 1e-6)
    assert float(r["request_rate"]) == _quoted(notes, "target_qps")
    sps = _quoted(notes, "Completed samples per second")
    assert 250 < float(r["value"]) / sps < 310
    inflight = sps * _quoted(notes, "Mean latency (ns)") * 1e-9 / 8
    assert f"= {inflight:.1f} a GPU" in notes


def test_little_by_hand():
    """Dell XE9680 H200 Interactive: 74.73 samples/s x 10.992456099 s / 8 GPUs = 102.7
    sequences a GPU, at a mean TPOT of 37.2 ms (37,193,987 ns)."""
    r = ROWS[ROWS["notes"].str.contains("system XE9680_H200_SXM_141GBx8_TRT; Interactive")]
    assert len(r) == 1
    assert "= 102.7 a GPU" in r.iloc[0]["notes"] and "(mean 37.2 ms)" in r.iloc[0]["notes"]
    assert pytest.approx(102.68, abs=0.01) == 74.73 * 10.992456099 / 8


@pytest.mark.parametrize(
    ("gpu", "mode", "seqs", "tokens", "kv", "frac"),
    [
        ("nvidia-h200-sxm", "interactive", 512, {256}, "fp8", 0.9),
        ("nvidia-h200-sxm", "server", 2048, {1536}, "fp8", 0.9),
        ("nvidia-b200", "interactive", 768, {512, 768}, None, 0.95),
        ("nvidia-b200", "server", 2048, {3584}, "fp8", 0.95),
    ],
)
def test_engine_configs(gpu, mode, seqs, tokens, kv, frac):
    """The config files' values as the planner reads them: gpu_batch_size -> max_num_seqs,
    runtime max_num_tokens -> max_num_batched_tokens (GigaComputing's B200 Interactive file:
    512, the others 768), the checkpoint's kv_cache_dtype (the B200 Interactive files set
    none) and kvcache_free_gpu_mem_frac; CUDA graphs off in every file."""
    d = ROWS[(ROWS["hardware"] == gpu) & (ROWS["mode"] == mode)]
    for notes in d["notes"]:
        s = engine_settings(notes)
        assert s.max_num_seqs == seqs and s.max_num_batched_tokens in tokens
        assert s.kv_cache_dtype == kv
        assert memory_fraction_from_notes(notes) == frac
        assert graphs_off(notes)
    assert set(d["precision"]) == ({"fp4"} if gpu == "nvidia-b200" else {"fp8"})
