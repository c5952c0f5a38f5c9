"""GPUStack performance lab, Qwen3-235B-A22B on H100 with vLLM 0.11.0: the serving rows read
against the page (issue 32, item 1: are the rows that the planner predicts too slow mis-read?).

Source: gpustack/gpustack ``docs/performance-lab/qwen3-235b-a22b/h100.md`` (section "Other
Benchmark Cases"). Its summary table prints the optimised configuration's throughput as
"Total TPS: 21211.83x2 (+189.2%)": the optimised serving command
``vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 -tp 4 --max-num-batched-tokens 16384``
runs one TP4 instance, and the 8-GPU node holds two of them. The benchmark blocks are one
instance's (984 requests sent to it at once), so the rows carry ``n_gpus`` 4 and ``tp`` 4. The
baseline ``vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507 -tp 8`` is one TP8 instance on the 8
GPUs. These tests pin that reading with the page's own arithmetic.
"""

from __future__ import annotations

import pytest
from _benchmark_rows import read_rows

from planner.catalog import DATA_DIR

CSV = DATA_DIR / "benchmarks" / "public_nvidia.csv"
SRC = "GPUStack performance lab"

# The page's benchmark blocks: case -> (duration [s], total input tokens, generated tokens,
# total token throughput [tok/s], mean TTFT [ms], mean TPOT [ms])
OPTIMISED_TP4_FP8 = {
    128: (6.11, 125650, 3936, 21211.83, 5621.51, 125.18),
    2000: (55.28, 998175, 49471, 18950.04, 26860.95, 125.93),
    4000: (126.76, 1997942, 90966, 16478.79, 60513.14, 89.52),
    32000: (208.79, 3200000, 8281, 15366.32, 103754.50, 194.60),
}
BASELINE_TP8_BF16 = {
    128: (8.83, 125650, 3936, 14668.27, 7042.17, 212.98),
    2000: (43.91, 998175, 49500, 23858.69, 21313.79, 101.08),
    4000: (98.99, 1997942, 92185, 21113.53, 47811.58, 68.94),
    32000: (141.60, 3200000, 8191, 22657.51, 70409.55, 132.10),
}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return [
        r
        for r in read_rows(CSV)
        if r["source"] == SRC
        and r["model"] == "qwen3-235b-a22b"
        and r["hardware"] == "nvidia-h100-sxm"
        and r["framework"] == "vllm"
        and r["isl"]
    ]


def _cell(rows, precision, isl, metric) -> dict[str, str]:
    (r,) = [
        r
        for r in rows
        if r["precision"] == precision and int(r["isl"]) == isl and r["metric"] == metric
    ]
    return r


@pytest.mark.parametrize("table", [OPTIMISED_TP4_FP8, BASELINE_TP8_BF16])
def test_the_page_is_self_consistent(table):
    # total throughput = (input + generated tokens) / duration, e.g. the optimised 128 case:
    # (125,650 + 3,936) / 6.11 s = 21,209 tok/s against the printed 21,211.83 (rounded duration)
    for dur, tin, tout, total, _, _ in table.values():
        assert (tin + tout) / dur == pytest.approx(total, rel=2e-3)


def test_x2_is_two_tp4_instances_on_the_node(rows):
    # "Total TPS: 21211.83x2 (+189.2%)" over the TP8 baseline's 14,668.27 (short prompt):
    # 2 x 21,211.83 / 14,668.27 = 2.892, i.e. +189.2%, so each TP4 row is half the node
    fp8 = float(_cell(rows, "fp8", 128, "total_tok_s")["value"])
    bf16 = float(_cell(rows, "bf16", 128, "total_tok_s")["value"])
    assert pytest.approx(1.892, abs=5e-4) == 2 * fp8 / bf16 - 1


@pytest.mark.parametrize(
    ("precision", "table", "gpus"),
    [("fp8", OPTIMISED_TP4_FP8, 4), ("bf16", BASELINE_TP8_BF16, 8)],
)
def test_rows_are_one_instance_with_the_page_values(rows, precision, table, gpus):
    for isl, (_, _, _, total, ttft, tpot) in table.items():
        got = {
            m: _cell(rows, precision, isl, m)
            for m in ("total_tok_s", "ttft_ms_mean", "tpot_ms_mean")
        }
        for r in got.values():
            assert (int(r["n_gpus"]), int(r["tp"])) == (gpus, gpus)
            assert r["framework_version"].startswith("v0.11.0")
        assert float(got["total_tok_s"]["value"]) == pytest.approx(total, abs=0.006)
        assert float(got["ttft_ms_mean"]["value"]) == pytest.approx(ttft, abs=0.006)
        assert float(got["tpot_ms_mean"]["value"]) == pytest.approx(tpot, abs=0.006)
        note = got["ttft_ms_mean"]["notes"]
        assert "request rate inf" in note
        if precision == "fp8":
            assert "-tp 4 --max-num-batched-tokens 16384" in note
        else:
            assert "Instruct-2507 -tp 8" in note


def test_burst_ttft_is_about_half_the_prefill_time(rows):
    # Every request is sent at t = 0 and the prompts dominate the work, so the mean TTFT is
    # close to half the run (the prompts finish evenly spread over it): for the optimised 2K
    # case 26,860.95 ms against 55.28 s / 2 = 27,640 ms (-2.8%); the TP8 baseline's
    # 21,313.79 ms against 43.91 s / 2 = 21,955 ms (-2.9%). A prediction that is 2x too slow
    # on these rows is a prefill-rate miss, not a queueing one.
    for table in (OPTIMISED_TP4_FP8, BASELINE_TP8_BF16):
        dur, _, _, _, ttft, _ = table[2000]
        assert ttft / (dur * 1e3 / 2) == pytest.approx(0.97, abs=0.01)
