"""MLPerf harness facts read from the submissions (issue 32; docs/changes/2026-12-07b/mlperfharness.md):
the run's length is not the dataset's size, and NVIDIA's LLM harness runs without CUDA
graphs, so every step of such a row is eager."""

from __future__ import annotations

import csv

import pytest

from planner.benchmarks.schema import graphs_off, request_count
from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.serving.replica import build_replica

#: the quoted line of the v5.1 B200 Offline run (mlcommons/inference_results_v5.1 @ 965182b0
#: closed/NVIDIA/results/B200-SXM-180GBx8_TRT/llama2-70b-99/Offline/performance/run_1/
#: mlperf_log_detail.txt:62)
_B200_RUN = (
    "dataset OpenOrca (24,576-sample perf set), variable ISL/OSL; run length 1,007,616 requests, "
    "not the 24,576-sample set: ... mlperf_log_detail.txt:62 "
    '\'"key": "generated_samples_per_query", "value": 1007616\''
)
#: the quoted config line of NVIDIA's v5.1 B200 Server config (same commit,
#: closed/NVIDIA/configs/B200-SXM-180GBx8/Server/llama2-70b.py:48)
_B200_GRAPHS = "CUDA graphs off (...): ... llama2-70b.py:48 'harness_fields.use_graphs: False,'"


def test_dataset_size_is_not_a_run_length():
    """MLPerf's 24,576-sample OpenOrca set (Krai: '24,576-sample set') is the dataset loadgen
    draws from; a run repeats it for >= 10 min. The v5.1 B200 Offline run generated
    1,007,616 samples = 41 x 24,576 (41 x 24,576 = 1,007,616)."""
    assert 41 * 24_576 == 1_007_616
    assert request_count("dataset OpenOrca (24,576-sample perf set), variable ISL/OSL") is None
    assert request_count("task llama2 (OpenOrca 24,576-sample set, variable ISL/OSL)") is None
    assert request_count("Mixtral (15,000-sample perf set)") is None
    assert request_count(_B200_RUN) == 1_007_616
    # other rows keep their counts
    assert request_count("sharegpt, 1,000 requests at 4 req/s") == 1000
    assert request_count("a 500-sample run") == 500


def test_graphs_off_clause():
    assert graphs_off(_B200_GRAPHS)
    assert not graphs_off("vLLM V1, CUDA graphs on (default)")
    assert not graphs_off("")


def _rows():
    for f in ("public.csv", "public_amd.csv", "public_amd2.csv"):
        with open(f"data/benchmarks/{f}", newline="") as fh:
            yield from csv.DictReader(fh)


def test_every_nvidia_harness_llama2_row_says_graphs_off_and_quotes_the_source():
    """127 rows: every MLPerf Llama-2-70B TensorRT-LLM row (NVIDIA's harness, v4.1-v5.1) says
    'CUDA graphs off' and quotes the harness ('use_graphs'); no AMD row does. An AMD (vLLM)
    row is graphs-off only where its own engine settings say ``enforce_eager``
    (tests/test_vllm_eager.py; the Dell v4.1 Server rows quote the Offline script's flag and
    say 'CUDA graphs on')."""
    nv = [r for r in _rows() if r["source"].startswith("MLPerf Inference")
          and r["model"] == "llama-2-70b" and r["framework"] == "trtllm"]  # fmt: skip
    assert len(nv) == 127
    for r in nv:
        assert graphs_off(r["notes"]), r["id"]
        assert "use_graphs" in r["notes"] and "@" in r["notes"], r["id"]
    amd = [r for r in _rows() if r["source"].startswith("MLPerf") and r["framework"] == "vllm"]
    assert amd and not any("CUDA graphs off" in r["notes"] for r in amd)
    for r in amd:
        eager = "eager" in r["notes"] and "CUDA graphs on" not in r["notes"]
        assert graphs_off(r["notes"]) is eager, r["id"]


def test_v51_offline_rows_carry_their_run_length():
    """The 12 v5.1 Offline rows whose logs are in the stored copy read their
    generated_samples_per_query (B200: 1,007,616; Quanta MI325X, 600 s: 98,304)."""
    got = {r["id"]: request_count(r["notes"]) for r in _rows()
           if r["source"] == "MLPerf Inference v5.1" and r["model"] == "llama-2-70b"
           and r["mode"] == "offline" and "generated_samples_per_query" in r["notes"]}  # fmt: skip
    assert len(got) == 12
    assert got["mlp51-0010"] == 1_007_616
    assert got["mlp51b-0013"] == 98_304
    assert all(n > 24_576 for n in got.values())


@pytest.fixture(scope="module")
def replicas():
    cat = load_catalog()
    p = PRIOR.with_(eager_layer_s=0.144e-3, serving_eager_layer_s=0.0)
    kw = dict(tp=1, params=p, catalog=cat, max_num_seqs=512, host_overlap=False)
    on = build_replica("llama-2-70b", "nvidia-b200", "fp8", "trtllm", **kw)
    off = build_replica("llama-2-70b", "nvidia-b200", "fp8", "trtllm", graphs_off=True, **kw)
    return on, off


@pytest.mark.parametrize("n", [1, 64, 255])
def test_graphs_off_decode_step_is_the_eager_soft_maximum(replicas, n):
    """A decode step of n sequences (1 new token each, 600 context tokens each): with graphs
    on it is GPU time g plus overheads; with graphs off its GPU part becomes the soft maximum
    (g^4 + E^4)^(1/4) of g and the eager dispatch E = eager_layer_s x 80 layers = 0.144 ms x
    80 = 11.52 ms (step.py, EAGER_K 4)."""
    on, off = replicas
    args = (n, n, n, 600.0 * n, 600.0 * n)
    b = on.sm.step(*args)
    g = float(b.t_gemm_s + b.t_attn_s + b.t_comm_s)
    e = 0.144e-3 * 80
    assert e == pytest.approx(11.52e-3)
    want = float(b.time_s) - g + (g**4 + e**4) ** 0.25
    assert off.sm.step_time(*args) == pytest.approx(want, rel=1e-9)
    assert float(off.sm.step(*args).time_s) == pytest.approx(want, rel=1e-9)
    assert on.sm.step_time(*args) == pytest.approx(float(b.time_s), rel=1e-9)


def test_soft_maximum_by_hand():
    """The B200 Interactive case of changes/s6-b200fp4 (GPU 15.4 ms, E 11.52 ms): 15.4^4 =
    56,245, 11.52^4 = 17,612, sum 73,857, fourth root 16.49 ms: graphs off add ~1.1 ms a step
    there, not the ~10 ms the run shows (the soft maximum overlaps dispatch with the GPU)."""
    g, e = 15.4, 11.52
    assert g**4 == pytest.approx(56_245, rel=1e-4)
    assert e**4 == pytest.approx(17_612, rel=1e-4)
    assert (g**4 + e**4) ** 0.25 == pytest.approx(16.49, abs=0.01)
