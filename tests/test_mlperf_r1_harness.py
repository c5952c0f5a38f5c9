"""The MLPerf DeepSeek-R1 rows as the submissions' harness ran them (issue 29, TPOT of the
EP / DEP rows): the engine's token budget, the front end and the streaming interval, read
by ``scripts/import_mlperf_moe.py`` from the submitters' configs and NVIDIA's harness code.

Each pinned value quotes the line of the submission it comes from (mirrors of
mlcommons/inference_results_v5.1 and of the v6.0 results, paths in the rows'
``source_detail`` and notes).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from _benchmark_rows import read_rows

from planner.benchmarks.disagg_rows import is_disagg_row
from planner.benchmarks.scheduler_waits import trtllm_pytorch_backend
from planner.benchmarks.schema import cell, engine_settings
from planner.catalog import DATA_DIR

ROOT = Path(__file__).resolve().parents[1]
MLPERF = DATA_DIR / "benchmarks" / "public_mlperf_moe.csv"


def _importer():
    spec = importlib.util.spec_from_file_location(
        "import_mlperf_moe", ROOT / "scripts" / "import_mlperf_moe.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("import_mlperf_moe", mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return read_rows(MLPERF)


def _row(rows, rnd: str, results_dir: str, metric: str) -> dict[str, str]:
    """The one row of round ``rnd`` ("v5.1" / "v6.0"), results folder and metric."""
    (r,) = [
        r
        for r in rows
        if f"Inference {rnd} " in r["source"]
        and f"{results_dir}/" in r["source_detail"]
        and r["metric"] == metric
    ]
    return r


# the harness passes the RUNTIME max_num_tokens to trtllm-serve (code/llmlib/config.py:
# ``runtime_flags[config] = runtime_flags.get(config) or build_flags[config]``;
# launch_server.py: ``'--max_num_tokens': self.trtllm_runtime_flags['max_num_tokens']``)
@pytest.mark.parametrize(
    ("rnd", "results_dir", "budget"),
    [
        # v6.0 closed/NVIDIA/configs/GB300-NVL72_GB300-288GB_aarch64x72/Server/deepseek-r1.py:
        # build flags "'max_num_tokens': 3456", runtime flags "'max_num_tokens': 4608"
        (
            "v6.0",
            "closed/NVIDIA/results/GB300-NVL72_GB300-288GB_aarch64x72_TRT/deepseek-r1/Server",
            4608,
        ),  # fmt: skip
        # v5.1 closed/CoreWeave/configs/GB300-NVL8-CoreWeave/Server/deepseek-r1.py:
        # build "'max_num_tokens': 3456", runtime "'max_num_tokens': 6656"
        ("v5.1", "closed/CoreWeave/results/GB300-NVL8-CoreWeave_TRT/deepseek-r1/Server", 6656),
        # v6.0 closed/NVIDIA/configs/B300-SXM-270GBx8/Offline/deepseek-r1.py:
        # build "'max_num_tokens': 4608", runtime "'max_num_tokens': 6144"
        ("v6.0", "closed/NVIDIA/results/B300-SXM-270GBx8_TRT/deepseek-r1/Offline", 6144),
        # v5.1 closed/NVIDIA/configs/B200-SXM-180GBx8/Server/deepseek-r1.py: both 3456
        ("v5.1", "closed/NVIDIA/results/B200-SXM-180GBx8_TRT/deepseek-r1/Server", 3456),
    ],
)
def test_token_budget_is_the_runtime_flag(rows, rnd, results_dir, budget):
    r = _row(rows, rnd, results_dir, "output_tok_s_total")
    assert engine_settings(r["notes"]).max_num_batched_tokens == budget


def test_runtime_flag_wins_over_the_build_flag_in_the_parser():
    imp = _importer()
    both = (
        "llm_fields.trtllm_build_flags: {\n 'max_num_tokens': 3456,\n},\n"
        "llm_fields.trtllm_runtime_flags: {\n 'max_num_tokens': 4608,\n"
        " 'cuda_graph_batch_sizes': [1, 2, 4],\n 'cuda_graph_padding_enabled': True,\n"
        ' "stream_interval": 20,\n},\n'
    )
    c = imp.py_config(both)
    assert (c["max_tokens"], c["stream_interval"], c["graph_sizes"], c["graph_padding"]) == (
        4608,
        20,
        "1, 2, 4",
        True,
    )
    # no runtime value: the build flag (the harness' fallback)
    only_build = "llm_fields.trtllm_build_flags: {\n 'max_num_tokens': 3456,\n},\n"
    assert imp.py_config(only_build)["max_tokens"] == 3456
    # a commented-out runtime value is not read
    commented = only_build + "llm_fields.trtllm_runtime_flags: {\n # 'max_num_tokens': 9999,\n},\n"
    assert imp.py_config(commented)["max_tokens"] == 3456


def test_aggregated_rows_run_trtllm_serve_on_the_pytorch_backend(rows):
    """closed/NVIDIA/code/deepseek-r1/tensorrt/__init__.py (both rounds):
    ``DEFAULT_CORE_TYPE = CoreType.TRTLLM_ENDPOINT``; code/llmlib/config.py:
    ``'trtllm_backend': 'pytorch',  # can be pytorch or cpp``. So trtllm-serve's first-token
    path applies to their TTFT (planner.benchmarks.scheduler_waits.first_token_wait)."""
    agg = [r for r in rows if not is_disagg_row(r)]
    dis = [r for r in rows if is_disagg_row(r)]
    assert len(agg) == 163 and len(dis) == 10  # 173 rows (test_benchmarks_moe_sources)
    assert all(trtllm_pytorch_backend(r["framework_version"], r["notes"]) for r in agg)
    # a disaggregated run is served by its own front end: no endpoint-core note
    assert not any("front end trtllm-serve" in r["notes"] for r in dis)


@pytest.mark.parametrize(
    ("rnd", "results_dir", "interval"),
    [
        # v6.0 configs/GB300-NVL72_GB300-288GB_aarch64x72/Server: '"stream_interval": 100,'
        ("v6.0", "closed/NVIDIA/results/GB300-NVL72_GB300-288GB_aarch64x72_TRT/deepseek-r1/Server",
         100),
        # v6.0 closed/Google/configs/B200-SXM-180GBx8/Server: '"stream_interval": 20,'
        ("v6.0", "closed/Google/results/B200-SXM-180GBx8_TRT/deepseek-r1/Server", 20),
        # v5.1 configs/B200-SXM-180GBx8/Server: none; v5.1 code/llmlib/config.py
        # DEFAULT_EXTRA_CONFIG "'stream_interval': 1,"
        ("v5.1", "closed/NVIDIA/results/B200-SXM-180GBx8_TRT/deepseek-r1/Server", 1),
    ],
)  # fmt: skip
def test_stream_interval_is_in_the_notes(rows, rnd, results_dir, interval):
    r = _row(rows, rnd, results_dir, "tpot_ms_mean")
    m = re.search(r"stream_interval (\d+) \(", r["notes"])
    assert m and int(m.group(1)) == interval


def test_tpot_rows_keep_the_printed_numbers(rows):
    """v5.1 closed/NVIDIA/results/B200-SXM-180GBx8_TRT/deepseek-r1/Server/performance/run_1/
    mlperf_log_summary.txt: "Mean Time to Output Token (ns)               : 66461232";
    v6.0 closed/NVIDIA/results/GB300-NVL72_GB300-288GB_aarch64x72_TRT/.../Server/...:
    "Mean Time per Output Token (ns)               : 56151598" (ns / 1e6 = ms)."""
    b200 = _row(rows, "v5.1", "closed/NVIDIA/results/B200-SXM-180GBx8_TRT/deepseek-r1/Server",
                "tpot_ms_mean")  # fmt: skip
    assert float(cell(b200, "value")) == pytest.approx(66.461232, abs=5e-4)  # kept to 0.001 ms
    gb300 = _row(
        rows,
        "v6.0",
        "closed/NVIDIA/results/GB300-NVL72_GB300-288GB_aarch64x72_TRT/deepseek-r1/Server",
        "tpot_ms_mean",
    )
    assert float(gb300["value"]) == pytest.approx(56.151598, abs=5e-4)


def test_a_rate_tuned_outside_the_config_is_said(rows):
    """v6.0 closed/Google: configs/GB200-NVL72_GB200-186GB_aarch64x72/Server/deepseek-r1.py
    "loadgen_fields.server_target_qps: 110," but the run's user.conf "*.Server.target_qps =
    45.0" and its summary "target_qps : 45": the row's rate is loadgen's (45) and its notes
    say the config names another."""
    r = _row(
        rows,
        "v6.0",
        "closed/Google/results/GB200-NVL72_GB200-186GB_aarch64x72_TRT/deepseek-r1/Server",
        "tpot_ms_mean",
    )
    assert float(r["request_rate"]) == 45.0
    assert "server_target_qps 110 differs from the run's loadgen target_qps 45" in r["notes"]
    # the NVIDIA run of the same config file ran at the config's rate: no such note
    n = _row(
        rows,
        "v6.0",
        "closed/NVIDIA/results/GB200-NVL72_GB200-186GB_aarch64x72_TRT/deepseek-r1/Server",
        "tpot_ms_mean",
    )
    assert float(n["request_rate"]) == 110.0 and "differs from the run's" not in n["notes"]


def test_offline_rows_do_not_stream(rows):
    """The NVIDIA LLM harness of both rounds turns streaming off in Offline (v5.1 and v6.0
    closed/NVIDIA/code/llmlib/config.py ``__post_init__``: "self.gen_config.streaming &=
    (self.workload.scenario != C.Scenario.Offline)"; the client sends ``"stream":
    self.config.gen_config.streaming``). So the 28 aggregated Offline rows say no streaming
    and that their ``stream_interval`` is not applied; every Server / Interactive row of an
    aggregated run keeps the streamed clause, and the front-end clause
    (:func:`trtllm_pytorch_backend`) is read the same on all of them."""
    agg = [r for r in rows if not is_disagg_row(r)]
    off = [r for r in agg if r["mode"] == "offline"]
    on = [r for r in agg if r["mode"] != "offline"]
    assert (len(off), len(on)) == (28, 135)
    for r in off:
        assert "Offline: no streaming" in r["notes"], r["id"]
        assert "loadgen's client streams the tokens" not in r["notes"], r["id"]
        assert re.search(r"stream_interval \d+ not applied \(no streamed responses; ", r["notes"])
        assert not re.search(r"stream_interval \d+ \(a streamed response", r["notes"])
    for r in on:
        assert "loadgen's client streams the tokens from it" in r["notes"], r["id"]
        assert re.search(r"stream_interval \d+ \(a streamed response per request", r["notes"])
    assert all(trtllm_pytorch_backend(r["framework_version"], r["notes"]) for r in off)


def test_offline_front_end_text_by_hand():
    """The importer's rewrite of one clause pair, character by character."""
    imp = _importer()
    server = (
        "front end trtllm-serve on the PyTorch backend (harness core TRTLLM_ENDPOINT: X; "
        "code/llmlib/launch_server.py starts trtllm-serve --backend pytorch, loadgen's client "
        "streams the tokens from it); stream_interval 1 (a streamed response per request every "
        "iteration; the harness default in closed/Dell/code/llmlib/config.py); CUDA graphs"
    )
    assert imp.offline_front_end(server, "closed/Dell/code/llmlib/config.py") == (
        "front end trtllm-serve on the PyTorch backend (harness core TRTLLM_ENDPOINT: X; "
        "code/llmlib/launch_server.py starts trtllm-serve --backend pytorch; Offline: no "
        "streaming, the harness sets gen_config.streaming &= (scenario != Offline) in "
        "closed/Dell/code/llmlib/config.py and its client sends stream false); "
        "stream_interval 1 not applied (no streamed responses; the harness default in "
        "closed/Dell/code/llmlib/config.py); CUDA graphs"
    )
    # idempotent: an Offline text is left as it is
    once = imp.offline_front_end(server, "closed/Dell/code/llmlib/config.py")
    assert imp.offline_front_end(once, "closed/Dell/code/llmlib/config.py") == once
