"""Published MoE rows with expert-parallel, attention-DP, disaggregated and speculative layouts.

Two files, six sources (each registered in ``data/benchmarks/sources.yaml``):

* ``public_mlperf_moe.csv``: MLPerf Inference v5.1 and v6.0 DeepSeek-R1 results with the
  submitters' TensorRT-LLM layouts, written by ``scripts/import_mlperf_moe.py``;
* ``public_blogs_moe.csv``: tables printed by the TensorRT-LLM DeepSeek-R1 best-performance
  guide, TensorRT-LLM tech blog 1 (MTP) and the SGLang large-scale EP blog, and dstack's
  prefill/decode ratio benchmark (``scripts/dstack_pd_rows.py``).

The tests pin rows to the numbers the sources print (the line of the source quoted in each
test), check provenance, uniqueness and that the planner's parsers read the layouts.
"""

from __future__ import annotations

import collections
import datetime as dt
import re

import pytest
import yaml
from _benchmark_rows import check_loads, check_provenance, read_rows

from planner.benchmarks.disagg_rows import disagg_layout, is_disagg_row
from planner.benchmarks.schema import engine_settings, memory_fraction_from_notes
from planner.benchmarks.speculative_rows import spec_of_row, spec_pairs
from planner.catalog import DATA_DIR

MLPERF = DATA_DIR / "benchmarks" / "public_mlperf_moe.csv"
BLOGS = DATA_DIR / "benchmarks" / "public_blogs_moe.csv"
ML51, ML60 = "MLPerf Inference v5.1 DeepSeek-R1", "MLPerf Inference v6.0 DeepSeek-R1"
BP = "TensorRT-LLM DeepSeek-R1 best-performance guide"
BL1 = "TensorRT-LLM tech blog 1: DeepSeek-R1 min-latency on B200"
SG = "SGLang blog: PD disaggregation + large-scale EP on 96 H100"
DS = "dstack benchmark: PD disaggregation ratios, gpt-oss-120b on 8xH200 (SGLang)"
SGM = "SGLang blog: Accelerating SGLang with Multiple Token Prediction (Eigen AI, H200 PD + MTP)"
ROC = "AMD ROCm blog: MTP with DeepSeek-V3 and SGLang on 8x MI300X (SGLang 0.5.0rc0)"


@pytest.fixture(scope="module")
def mlperf() -> list[dict[str, str]]:
    return read_rows(MLPERF)


@pytest.fixture(scope="module")
def blogs() -> list[dict[str, str]]:
    return read_rows(BLOGS)


@pytest.fixture(scope="module")
def by_id(mlperf, blogs) -> dict[str, dict[str, str]]:
    return {r["id"]: r for r in mlperf + blogs}


def _one(rows, detail: str, metric: str) -> dict[str, str]:
    (r,) = [r for r in rows if detail in r["source_detail"] and r["metric"] == metric]
    return r


def test_files_load_with_the_planners_loader(mlperf, blogs, catalog):
    assert check_loads(MLPERF, mlperf, catalog) == 173
    assert check_loads(BLOGS, blogs, catalog) == 15 + 168 + 24 + 4


def test_every_row_has_provenance_and_a_date(mlperf, blogs):
    check_provenance(
        mlperf,
        {ML51: "mlds51", ML60: "mlds60"},
        (dt.date(2025, 9, 9), dt.date(2026, 4, 1)),
        ("nvidia-b200", "nvidia-b300", "nvidia-gb200", "nvidia-gb300", "nvidia-h200-sxm"),
        ("trtllm",),
    )
    check_provenance(
        blogs,
        {BP: "trtbp", BL1: "trtb1", SG: "sgep", DS: "dspd", ROC: "rocmtp", SGM: "sgmtp"},
        (dt.date(2025, 5, 5), dt.date(2026, 12, 6)),
        ("nvidia-b200", "nvidia-h200-sxm", "nvidia-h100-sxm", "amd-mi300x"),
        ("trtllm", "sglang"),
    )


def test_no_duplicate_measurement(mlperf, blogs):
    """One row per (source file + table, metric): no number transcribed twice, and no
    (hardware, GPUs, mode, rate, metric, value) repeated within a file."""
    for rows in (mlperf, blogs):
        keys = [(r["source_detail"], r["metric"], r["value"]) for r in rows]
        assert len(set(keys)) == len(keys)
        vals = [
            (r["hardware"], r["n_gpus"], r["mode"], r["request_rate"], r["metric"], r["value"])
            for r in rows
        ]
        dup = [k for k, n in collections.Counter(vals).items() if n > 1]
        assert not dup, dup


def test_sources_yaml_lists_each_source_with_its_file_and_row_count(mlperf, blogs):
    doc = yaml.safe_load((DATA_DIR / "benchmarks" / "sources.yaml").read_text(encoding="utf-8"))
    for rows, name in ((mlperf, "public_mlperf_moe.csv"), (blogs, "public_blogs_moe.csv")):
        for source, n in collections.Counter(r["source"] for r in rows).items():
            (entry,) = [s for s in doc["sources"] if s["source"] == source]
            assert (entry["file"], entry["rows"]) == (name, n)
            dt.date.fromisoformat(str(entry["as_of"]))


def test_mlperf_v51_nvidia_b200_server_matches_the_log(by_id, mlperf):
    """closed/NVIDIA/results/B200-SXM-180GBx8_TRT/deepseek-r1/Server/performance/run_1/
    mlperf_log_summary.txt: "Completed tokens per second: 18592.24", "Mean Time to Output
    Token (ns) : 66461232", "99.00 percentile time to output token (ns) : 72180235", "Mean
    First Token latency (ns) : 726163084", "target_qps : 5", "tpot_latency (ns):
    80000000"; configs/B200-SXM-180GBx8/Server/deepseek-r1.py: tensor_parallelism 8,
    moe_expert_parallelism 8, 'enable_attention_dp': True, gpu_batch_size 512,
    max_num_tokens 3456, kvcache_free_gpu_mem_frac 0.9 -> DEP8 (tp 1, attention_dp 8, ep 8).
    ns -> ms: 66461232 / 1e6 = 66.461 ms; 72180235 / 1e6 = 72.18 ms; 726163084 / 1e6 = 726.163 ms."""
    d = "closed/NVIDIA/results/B200-SXM-180GBx8_TRT/deepseek-r1/Server"
    rows = [r for r in mlperf if r["source"] == ML51]
    thr = _one(rows, d, "output_tok_s_total")
    assert float(thr["value"]) == 18592.24
    assert float(_one(rows, d, "tpot_ms_mean")["value"]) == pytest.approx(66.461232, abs=5e-4)
    assert float(_one(rows, d, "tpot_ms_p99")["value"]) == pytest.approx(72.180235, abs=5e-4)
    assert float(_one(rows, d, "ttft_ms_mean")["value"]) == pytest.approx(726.163084, abs=5e-4)
    assert (thr["hardware"], thr["n_gpus"], thr["tp"], thr["attention_dp"], thr["ep"]) == (
        "nvidia-b200",
        "8",
        "1",
        "8",
        "8",
    )
    assert (thr["mode"], thr["request_rate"], thr["precision"], thr["kv_precision"]) == (
        "server",
        "5",
        "nvfp4",
        "fp8",
    )
    assert "TPOT p99 <= 80 ms" in thr["notes"]
    eng = engine_settings(thr["notes"])
    assert (eng.max_num_seqs, eng.max_num_batched_tokens, eng.kv_cache_dtype) == (512, 3456, "fp8")
    assert memory_fraction_from_notes(thr["notes"]) == 0.9


def test_mlperf_v60_gb300_interactive_is_disaggregated_with_mtp(mlperf):
    """closed/NVIDIA/results/GB300-NVL72_GB300-288GB_aarch64x72_TRT/deepseek-r1/Interactive:
    "Completed tokens per second: 250633.67", "Mean Time per Output Token (ns) : 11538776",
    "99.00 percentile time to output token (ns) : 13865504", "tpot_latency (ns): 15000000";
    the config's header: "4 CTX DEP2 + 4 GEN DEP16 = 8 + 64 = 72 GPUs", worker yml
    speculative_config MTP num_nextn_predict_layers 3. The system json: 18 nodes x 4 GPUs."""
    d = "GB300-NVL72_GB300-288GB_aarch64x72_TRT/deepseek-r1/Interactive"
    thr = _one(mlperf, d, "output_tok_s_total")
    assert float(thr["value"]) == 250633.67
    assert thr["n_gpus"] == str(18 * 4)
    p99 = float(_one(mlperf, d, "tpot_ms_p99")["value"])
    assert p99 == pytest.approx(13.865504, abs=5e-4) and p99 <= 15.0
    lay = disagg_layout(thr["notes"])
    assert (lay["x"], lay["y"], lay["mtp"]) == (4, 4, True)
    assert lay["prefill"] == {"tp": 1, "attention_dp": 2, "ep": 2}
    assert lay["decode"] == {"tp": 1, "attention_dp": 16, "ep": 16}
    # 4 prefill workers x 2 GPUs + 4 decode workers x 16 GPUs = 72 GPUs
    assert int(thr["n_gpus"]) == 4 * 2 + 4 * 16
    assert spec_of_row(thr) == ("mtp", 3)


def test_server_and_interactive_latencies_meet_their_constraints(mlperf):
    """Every transcribed run is VALID, so its measured TPOT and TTFT p99 sit under the
    scenario's limits the notes record (Server 80 ms / 2 s; Interactive 15 ms / 1.5 s)."""
    n = 0
    for r in mlperf:
        if r["metric"] == "tpot_ms_p99":
            lim = float(re.search(r"TPOT p99 <= ([\d.]+) ms", r["notes"]).group(1))
            assert float(r["value"]) <= lim, r["id"]
            n += 1
        if r["metric"] == "ttft_ms_p99":
            lim = 1e3 * float(re.search(r"TTFT p99 <= ([\d.]+) s", r["notes"]).group(1))
            assert float(r["value"]) <= lim, r["id"]
    assert n == 29  # 8 v5.1 + 21 v6.0 Server / Interactive runs (one p99 row each)


def test_best_practice_guide_rows(by_id):
    """Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md: 'H200 max-throughput' prints
    "Total Output Throughput (tokens/sec): 11489.2671" and "Total Token Throughput
    (tokens/sec): 17233.9007"; 17233.9007 / 11489.2671 = 1.5000 = (1024 + 2048) / 2048, the
    fixed lengths of its prepare_dataset command. 'B200 min-latency' prints 274.4168 with
    --tp 8 --ep 2 and MTP 3 (num_nextn_predict_layers: 3)."""
    h = by_id["trtbp-0005"]
    assert float(h["value"]) == 11489.2671
    # the row's output tok/s x (1024 + 2048) / 2048 gives the printed total token throughput
    assert float(h["value"]) * (1024 + 2048) / 2048 == pytest.approx(17233.9007, rel=1e-6)
    assert "17233.9007" in h["notes"]
    assert (h["isl"], h["osl"], h["concurrency"], h["tp"], h["attention_dp"], h["ep"]) == (
        "1024",
        "2048",
        "1024",
        "1",
        "8",
        "8",
    )
    b = by_id["trtbp-0001"]
    assert float(b["value"]) == 274.4168 and (b["tp"], b["ep"]) == ("8", "2")
    assert spec_of_row(b) == ("mtp", 3)


def test_blog1_mtp_table_pairs_with_its_baseline(blogs):
    """blog1 'Autoregressive MTP Layers': TPS/User 111 without MTP; 198, 250, 253, 245, 239
    with 1..5 MTP layers, printed speed-ups 1.78, 2.25, 2.28, 2.21, 2.15 (= 198 / 111 =
    1.784, 250 / 111 = 2.252, 253 / 111 = 2.279, 245 / 111 = 2.207, 239 / 111 = 2.153)."""
    pairs = sorted(spec_pairs(r for r in blogs if r["source"] == BL1), key=lambda p: p.spec_tokens)
    assert [p.spec_tokens for p in pairs] == [1, 2, 3, 4, 5]
    assert [round(p.measured_ratio, 2) for p in pairs] == [1.78, 2.25, 2.28, 2.21, 2.15]
    assert all(p.base_rows[0]["id"] == "trtb1-0001" for p in pairs)


def test_sglang_pool_rows_are_node_totals(by_id):
    """'per-node throughputs of 57,674, 54,543, and 50,302 tokens per second for prompt
    lengths of 1K, 2K, and 4K' on 4 nodes; decode 'Throughput (per node) 22,282' on 9 nodes:
    4 x 57,674 = 230,696; 9 x 22,282 = 200,538. Pools measured alone are kept, not predicted."""
    assert float(by_id["sgep-0001"]["value"]) == 4 * 57674
    assert float(by_id["sgep-0004"]["value"]) == 9 * 22282
    assert by_id["sgep-0004"]["batch"] == str(256 * 72)
    assert all(is_disagg_row(by_id[f"sgep-000{i}"]) for i in range(1, 5))


def test_sglang_pool_rows_say_why_they_are_not_predicted(by_id):
    """A pool measured alone in a static batch is no xPyD run: the reason says so (it once
    read 'only concurrency rows ... are predicted', as if the metric were the obstacle)."""
    from planner.benchmarks.disagg_rows import predict_disagg_row
    from planner.catalog.catalog import load_catalog

    cat = load_catalog()
    for i in range(1, 5):
        why = predict_disagg_row(by_id[f"sgep-000{i}"], cat)
        assert isinstance(why, str) and why.startswith("one pool measured alone"), why


def test_dstack_rows_are_the_printed_results(blogs):
    """results.csv row of 1p1d_conc32_in128_out2048_20250915_055823.json: median_tpot_ms
    7.525691449995975, output_throughput 4308.553538193353, total_input_tokens 63996,
    total_output_tokens 347501 over 500 completed: mean input 63996 / 500 = 128.0 tokens,
    mean generated 347501 / 500 = 695.0 tokens. The layout is one TP2 prefill and one TP2
    decode worker (4 GPUs); the simulation replays fixed lengths at the means (128, 695)."""
    from planner.benchmarks.disagg_rows import _lengths

    ds = [r for r in blogs if r["source"] == DS]
    assert len(ds) == 56 * 3
    run = [r for r in ds if "1p1d_conc32_in128_out2048_20250915_055823" in r["source_detail"]]
    got = {r["metric"]: float(r["value"]) for r in run}
    assert got["tpot_ms_median"] == pytest.approx(7.525691449995975, rel=1e-5)
    assert got["output_tok_s_total"] == pytest.approx(4308.553538193353, rel=1e-5)
    lay = disagg_layout(run[0]["notes"])
    assert (lay["x"], lay["y"]) == (1, 1)
    assert lay["prefill"] == {"tp": 2, "attention_dp": 1, "ep": 1}
    assert lay["decode"] == {"tp": 2, "attention_dp": 1, "ep": 1}
    assert run[0]["n_gpus"] == "4" and run[0]["isl"] == "128" and run[0]["osl"] == ""
    assert _lengths(run[0]) == ((128, 128), (695, 695))
    # 2,048-token prompts re-tokenize to 2,046.2 on average: isl is left empty
    long = [r for r in ds if "_in2048_" in r["source_detail"]]
    assert long and all(r["isl"] == "" and "mean input 2046.2 tokens" in r["notes"] for r in long)
    # the run that completed 380 of 500 requests is not transcribed
    assert not [r for r in ds if "1p1d_conc128_in2048_out32784" in r["source_detail"]]


def test_mlperf_mtp_runs_pair_with_no_other_scenario(mlperf):
    """The MTP runs are Interactive (Poisson at 1.3 req/s on one B300 node); no run of the
    same system, scenario and rate without MTP was published, so no baseline exists:
    spec_pairs must not pair them with other systems' Server or Offline runs (which once gave
    'speed-ups' of 0.08 to 0.87)."""
    assert [r["id"] for r in mlperf if spec_of_row(r)] and not spec_pairs(mlperf)


#: ROCm MTP blog, Table 1 (random dataset) and Table 2 (ShareGPT): max concurrency ->
#: (without MTP, with MTP, printed speedup) E2E latency [ms]
ROC_T1 = {1: (17348.25, 8229.37, 2.11), 2: (17162.29, 8408.02, 2.04), 4: (17948.30, 9736.64, 1.84),
          8: (19919.06, 11742.82, 1.70), 16: (23708.94, 15483.11, 1.53),
          32: (30868.39, 21399.39, 1.44), 64: (43848.20, 35074.26, 1.25)}  # fmt: skip
ROC_T2 = {4: (3981.91, 2215.44, 1.80), 8: (5007.75, 2854.36, 1.75), 16: (6255.86, 3947.93, 1.58),
          32: (7571.25, 5023.23, 1.51), 64: (11900.36, 8763.65, 1.36)}  # fmt: skip


def _rocm_pairs(blogs):
    return {
        (int(p.concurrency), "sharegpt" in p.spec_row["notes"]): p
        for p in spec_pairs([r for r in blogs if r["source"] == ROC])
    }


def test_rocm_mtp_blog_rows_are_the_printed_cells(blogs):
    """Every cell of the blog's two tables, one row each, and the printed 'Speedup Ratio'
    is the two cells' quotient to two decimals (e.g. c64: 43,848.20 / 35,074.26 = 1.2502)."""
    pairs = _rocm_pairs(blogs)
    assert len(pairs) == len(ROC_T1) + len(ROC_T2) == 12
    for table, share in ((ROC_T1, False), (ROC_T2, True)):
        for c, (base, mtp, printed) in table.items():
            p = pairs[(c, share)]
            (b,) = p.base_rows
            assert (float(b["value"]), float(p.spec_row["value"])) == (base, mtp)
            assert round(base / mtp, 2) == printed
            assert p.spec_tokens == 2 and p.method == "mtp"  # 3 draft tokens, chain (topk 1)
            for r in (b, p.spec_row):
                assert (r["metric"], r["unit"], r["mode"], r["concurrency"]) == (
                    "e2e_ms_mean", "ms", "concurrency", str(c)
                )  # fmt: skip
                assert (r["hardware"], r["tp"], r["attention_dp"], r["ep"]) == (
                    "amd-mi300x", "8", "1", "1"
                )  # fmt: skip
                assert r["as_of"] == ("2025-08-18" if share else "2025-09-11")


def test_rocm_mtp_blog_acceptance_is_strict_and_its_workload_is_sglangs_random(blogs):
    """The server's --speculative-accept-threshold-single=0.001 does not relax acceptance on
    these runs (greedy client, greedy verify: the notes say why), so the pair is predicted
    with the catalog's published AL; the random rows are SGLang's ``random`` dataset (ShareGPT
    text: workload ``chat``) with the printed 3,200 / 800 lengths, the ShareGPT rows carry no
    length distribution and are not predicted."""
    from planner.benchmarks.speculative_rows import row_workload

    pairs = _rocm_pairs(blogs)
    p = pairs[(64, False)]
    assert "strict (lossless) acceptance" in p.spec_row["notes"]
    assert row_workload(p.spec_row) == "chat"
    assert "random_input_len=3200; random_output_len=800" in p.base_rows[0]["notes"]
    assert row_workload(pairs[(64, True)].spec_row) is None


def test_rocm_mtp_blog_pairs_up_to_8_in_the_measured_speedup():
    # bundled profile, catalog AL 2.58 at K = 2 (natural text, TensorRT-LLM blog 1): the
    # measured speed-up (E2E without / with MTP) 2.108 / 2.041 / 1.843 / 1.696 at c1 / 2 / 4
    # / 8, predicted 2.23 / 2.08 / 1.91 / 1.79 (+5.6, +1.9, +3.8, +5.6 %): within 15 %
    from test_speculative import _pair_ratios

    res = _pair_ratios(["public_blogs_moe.csv"], max_conc=8, source=ROC)
    assert len(res) == 4
    for meas, pred in res:
        assert abs(pred / meas - 1) <= 0.15, (meas, pred)


@pytest.mark.xfail(
    strict=True,
    reason="issue 30 item 2, a second publisher: AMD's MI300X SGLang 0.5.0rc0 pairs lose gain "
    "from c16 on (1.53x at c16, 1.44x at c32, 1.25x at c64) while the model's speed-up rises "
    "again (1.80x, 1.95x, 2.09x: +17, +35, +67 %), the same shape as the InferenceX SGLang "
    "pairs (docs/changes/2026-12-10/mtpdata.md)",
)
def test_rocm_mtp_blog_pairs_at_32_and_64_in_the_measured_speedup():
    from test_speculative import _pair_ratios

    res = _pair_ratios(["public_blogs_moe.csv"], min_conc=32, source=ROC)
    assert len(res) == 2
    for meas, pred in res:
        assert abs(pred / meas - 1) <= 0.15, (meas, pred)


def test_sglang_mtp_blog_case_1_is_the_printed_table_and_never_predicted(blogs):
    """Case study 1's per-rank throughputs as printed: MTP 81.5 / 51.0 = 1.598 (+59.8 %
    printed) and 82.0 / 51.0 = 1.608 (+60.8 %); the overlap row's printed +20.4 % is not
    60.4 / 51.0 = 1.184 and the notes say so. Metric other (rank undefined), a decode pool
    measured alone, K uncertain: no pair is formed and nothing is predicted."""
    rows = {r["id"]: r for r in blogs if r["source"] == SGM}
    v = {k: float(r["value"]) for k, r in rows.items()}
    assert v == {"sgmtp-0001": 51.0, "sgmtp-0002": 60.4, "sgmtp-0003": 81.5, "sgmtp-0004": 82.0}
    assert round(100 * (v["sgmtp-0003"] / v["sgmtp-0001"] - 1), 1) == 59.8
    assert round(100 * (v["sgmtp-0004"] / v["sgmtp-0001"] - 1), 1) == 60.8
    assert "+18.4 %" in rows["sgmtp-0002"]["notes"]
    assert "acceptance length of 2.18" in rows["sgmtp-0003"]["notes"]
    assert "acceptance length of 2.44" in rows["sgmtp-0004"]["notes"]
    assert all(r["metric"] == "other" and is_disagg_row(r) for r in rows.values())
    assert [spec_of_row(rows[k]) for k in ("sgmtp-0003", "sgmtp-0004")] == [("mtp", None)] * 2
    assert not spec_pairs(list(rows.values()))
