"""The dstack DeepSeek-R1 rows (data/benchmarks/public_amd.csv, source "dstack benchmark:
DeepSeek-R1 on 8xMI300X vs 8xH200"), checked against what the source measured.

Source: dstackai/benchmarks @ 7f37e6697725 (branch deepseek-r1-benchmark),
Deepseek-R1/raw_data/online_results.csv and offline_results.csv, Deepseek-R1/bench_serving.py
(SGLang's bench_serving with a TensorRT-LLM backend added) and Deepseek-R1/README.md.

The client (README "Online Benchmarking Commands"): ``bench_serving.py --dataset-name random
--num-prompts 500 --random-input 3200 --random-output 800|1600|3200|6400
--random-range-ratio 1 --max-concurrency 4..128`` with no ``--request-rate`` (inf): a closed
loop of ``c`` clients; ``ignore_eos`` on by default for the vLLM / SGLang / trt-torch-flow
backends (bench_serving.py ``async_request_openai_completions``), so every request reads exactly
3200 tokens and writes exactly ``osl`` (raw total_input_tokens 1,600,000 = 500 x 3200,
total_output_tokens 400,000 = 500 x 800). Its metrics (``calculate_metrics``):
``tpot = (latency - ttft) / (output_len - 1)`` per request, ``mean_tpot_ms`` the mean over
requests; ``output_throughput = sum(output_lens) / duration``; ``mean_ttft_ms`` from the send
of the request (so it holds the server's queue, not the client's semaphore wait).

These tests pin what the rows must satisfy if they were read right: the bench_serving
identities between their metrics, the closed loop's Little law, and the agreement of the
online runs with the offline runs of the same engine at the same batch (a whole online wave
of ``c`` clients is one offline batch of ``c`` prompts). A mis-read (TTFT and TPOT swapped,
a median for a mean, a rate for a concurrency, s for ms, a per-GPU figure) breaks one.
"""

from __future__ import annotations

import csv
from collections import defaultdict

import pytest

from planner.catalog.catalog import DATA_DIR

AMD_CSV = DATA_DIR / "benchmarks" / "public_amd.csv"
SOURCE = "dstack benchmark: DeepSeek-R1 on 8xMI300X vs 8xH200"


@pytest.fixture(scope="module")
def rows():
    with AMD_CSV.open(newline="") as f:
        return [r for r in csv.DictReader(f) if r["source"] == SOURCE]


@pytest.fixture(scope="module")
def online(rows):
    """{(hardware, framework, concurrency, osl): {metric: value}} of the online rows."""
    runs: dict = defaultdict(dict)
    for r in rows:
        if r["mode"] == "concurrency":
            key = (r["hardware"], r["framework"], int(r["concurrency"]), int(r["osl"]))
            runs[key][r["metric"]] = float(r["value"])
    return runs


def test_row_counts(rows, online):
    """README tables: offline batches 32..1024 at output 800, 256/512/1024 at 1600 and 3200;
    online concurrency 4..128 at output 800 and 128 at 1600 / 3200 / 6400.
    Offline (the TensorRT-LLM offline runs used a BF16 engine build, not kept): vLLM MI300X
    6 + 6 + 3 (it also ran 32..128 at 1600) = 15, SGLang MI300X 6 + 6 + 3 = 15, SGLang H200
    6 + 3 + 3 = 12, vLLM H200 6 + 3 = 9 -> 51. Online: 5 engine/GPU pairs x 6 concurrencies
    at output 800 = 30 runs, plus 5 pairs x 3 lengths at c 128 = 15 -> 45 runs of 4 metrics =
    180 rows (the raw file's 45 random-dataset rows; its generated-shared-prefix rows run with
    a prefix cache and are not kept)."""
    offline = [r for r in rows if r["mode"] == "offline"]
    assert len(offline) == 51
    assert len(online) == 45
    assert len(rows) == 51 + 45 * 4
    for metrics in online.values():
        assert set(metrics) == {"output_tok_s_total", "ttft_ms_mean", "tpot_ms_mean", "e2e_ms_mean"}
    # every online row: input 3200, closed loop, no request rate
    for r in rows:
        if r["mode"] == "concurrency":
            assert r["isl"] == "3200" and r["request_rate"] == "inf", r["id"]
            assert "500 requests" in r["notes"] or "499 requests" in r["notes"], r["id"]


def test_raw_values_hand_checked(online):
    """Four runs quoted from raw_data/online_results.csv (columns mean_ttft_ms, mean_tpot_ms,
    mean_e2e_latency_ms, output_throughput):
    h200,vllm,c 4,out 800: 975.6508477, 25.72997376, 21533.89988, 148.581247;
    mi300x,vllm,c 128,out 800: 22245.64614, 109.0719536, 109394.1371, 914.7383228;
    h200,trt-llm,c 4,out 800: 1003.803258, 55.12166024, 45046.00979, 71.03764423;
    h200,vllm,c 128,out 6400: 1059605.396, 133.1230548, 1911459.824, 376.9031192."""
    quoted = {
        ("nvidia-h200-sxm", "vllm", 4, 800): (975.6508477, 25.72997376, 21533.89988, 148.581247),
        ("amd-mi300x", "vllm", 128, 800): (22245.64614, 109.0719536, 109394.1371, 914.7383228),
        ("nvidia-h200-sxm", "trtllm", 4, 800): (1003.803258, 55.12166024, 45046.00979, 71.03764423),
        ("nvidia-h200-sxm", "vllm", 128, 6400): (
            1059605.396,
            133.1230548,
            1911459.824,
            376.9031192,
        ),
    }
    for key, (ttft, tpot, e2e, out) in quoted.items():
        m = online[key]
        assert m["ttft_ms_mean"] == pytest.approx(ttft, rel=1e-5), key
        assert m["tpot_ms_mean"] == pytest.approx(tpot, rel=1e-4), key
        assert m["e2e_ms_mean"] == pytest.approx(e2e, rel=1e-5), key
        assert m["output_tok_s_total"] == pytest.approx(out, rel=1e-4), key


def test_tpot_is_bench_serving_mean(online):
    """With every output exactly osl tokens, the mean of (latency_i - ttft_i) / (osl - 1) is
    (mean e2e - mean TTFT) / (osl - 1). E.g. H200 vLLM c 4: (21,533.9 - 975.65) / 799 =
    25.730 ms, the row's 25.730. Fails if TTFT / TPOT were swapped, a median stood for a mean,
    or the row's osl were not the run's."""
    for key, m in online.items():
        osl = key[3]
        derived = (m["e2e_ms_mean"] - m["ttft_ms_mean"]) / (osl - 1)
        assert m["tpot_ms_mean"] == pytest.approx(derived, rel=2e-3), key


def test_closed_loop_little_law(online):
    """Closed loop of c clients: requests in flight = request rate x mean e2e <= c, and close to
    c (the semaphore refills at once; only the tail of the 500 requests runs below c). Output
    tok/s = in-flight x osl / e2e, so in-flight / c = out_tok_s x e2e / (osl x c) is in
    (0.85, 1]. E.g. MI300X vLLM c 128: 914.74 x 109.394 s / (800 x 128) = 0.977 (raw
    concurrency column 125.08 = 0.977 x 128); H200 vLLM c 128 out 6400: 376.90 x 1911.46 /
    (6400 x 128) = 0.879 (raw 112.57). Fails on a per-GPU throughput (/8), a rate read as a
    concurrency, or a latency in s."""
    for key, m in online.items():
        c, osl = key[2], key[3]
        in_flight = m["output_tok_s_total"] * m["e2e_ms_mean"] / 1000.0 / osl
        assert 0.85 * c < in_flight <= c * 1.001, (key, in_flight)


def test_online_waves_match_offline_batches(rows, online):
    """A closed loop of c clients with fixed lengths runs in waves of c; an offline batch of c
    prompts is one such wave. So the online mean e2e at c (output 800) is close to the offline
    elapsed time of c prompts, elapsed = c x 4000 tokens / total tok/s:
    MI300X vLLM c 32: 32 x 4000 / 2261.35 = 56.60 s offline vs 56.60 s online (same server
    flags); H200 vLLM c 128: 512,000 / 3757.22 = 136.3 s vs 124.2 s. SGLang's online runs
    differ in flags (H200: --enable-dp-attention online only) and run up to 1.3x faster online
    (MI300X c 32: 70.5 s vs 55.0 s). Within 0.75..1.35 for every pair: the online rows are as
    slow as the offline rows of the same source, so their slowness is the runs', not a
    mis-read."""
    offline_s = {}
    for r in rows:
        if r["mode"] == "offline" and r["osl"] == "800":
            n = int(r["notes"].split(" requests submitted")[0].rsplit(" ", 1)[-1])
            offline_s[(r["hardware"], r["framework"], n)] = n * 4000 / float(r["value"])
    pairs = 0
    for (hw, fw, c, osl), m in online.items():
        if osl != 800 or (hw, fw, c) not in offline_s:
            continue
        ratio = offline_s[(hw, fw, c)] / (m["e2e_ms_mean"] / 1000.0)
        assert 0.75 < ratio < 1.35, (hw, fw, c, ratio)
        pairs += 1
    # c = 32, 64, 128 for the 4 engine/GPU pairs with offline runs (TensorRT-LLM has none)
    assert pairs == 12
