"""trtllm-serve's first-token path on TensorRT-LLM's PyTorch backend (issue 32, "Latency
model"): which rows run it, the grid fit of its latency, and what it adds to a row."""

from __future__ import annotations

import pytest
from _benchmark_rows import schema_row

from planner.benchmarks.scheduler_waits import first_token_wait, trtllm_pytorch_backend
from planner.benchmarks.serving_rows import serving_row_details
from planner.calibration.latency_fit import fit_grid_value
from planner.catalog import PRIOR


def _row(**kw) -> dict[str, str]:
    return schema_row(**{
        "hardware": "nvidia-h200-sxm", "model": "llama-3.1-8b", "precision": "bf16",
        "framework": "trtllm", "concurrency": "4", "isl": "1024", "osl": "128",
        "framework_version": "1.2.0rc6.post2 (image nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6)",
        "notes": "40 requests", **kw,
    })  # fmt: skip


@pytest.mark.parametrize(
    ("version", "notes", "expected"),
    [
        # the InferenceX rows: the server command names the backend
        ("1.2.0rc6.post2 (image nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6.post2)",
         "trtllm-serve X --backend=pytorch --tp_size=4", True),
        # release 1.0 or later, nothing named: the LLM API's default (PyTorch)
        ("v1.2.0rc1 | trtllm-serve server, client vllm bench serve", "", True),
        ("image nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14 | TensorRT-LLM", "", True),
        ("release/1.2 | trtllm-bench throughput, PyTorch backend", "", True),
        # the engine path named
        ("0.14.0 | via Triton tensorrtllm_backend (online serving)", "", False),
        ("0.17 | trtllm-bench throughput, C++ engine", "", False),
        # before the PyTorch backend existed (0.17)
        ("TensorRT-LLM 0.16.0 | trtllm-bench throughput", "", False),
        # the row does not say: an MLPerf harness, a 0.17-0.21 release with no backend
        ("TensorRT 10.14, CUDA 13.1", "MLPerf Inference v6.0 closed", None),
        ("0.18 | serve", "", None),
    ],
)  # fmt: skip
def test_backend_read_from_the_row(version, notes, expected):
    assert trtllm_pytorch_backend(version, notes) is expected


def test_first_token_wait_only_where_the_path_runs():
    v = "v1.2.0rc1 | trtllm-serve"
    assert first_token_wait("trtllm", v, "", 0.12) == 0.12
    assert first_token_wait("vllm", v, "", 0.12) == 0.0
    assert first_token_wait("trtllm", "0.14.0 | via Triton tensorrtllm_backend", "", 0.12) == 0.0
    assert first_token_wait("trtllm", v, "", None) == 0.0


def _r(src, i, m, p):
    return {"source": src, "id": i, "metric": "ttft_ms_median", "measured": m, "predicted": p,
            "as_of": "2026-02-03"}  # fmt: skip


def test_grid_fit_hand_derived():
    """Measured 200, 200 (source a) and 100, 100 (source b).

    * candidate 0: predicted 100 each: |ln| = 0.693, 0.693, 0, 0: median 0.347;
    * candidate 0.1: predicted 190, 210, 110, 100: |ln(200/190)| = 0.051, |ln(200/210)| =
      0.049, |ln(100/110)| = 0.095, 0: median (0.049 + 0.051) / 2 = 0.050: chosen;
    * without source a (rows 100, 100 of b): candidate 0 has median 0, candidate 0.1 has
      (0 + 0.095) / 2 = 0.048: 0 is chosen (when enough rows and sources are asked);
    * two sources are needed by default: without a, one is left: None.
    """
    preds = {
        0.0: [_r("a", "1", 200, 100), _r("a", "2", 200, 100),
              _r("b", "3", 100, 100), _r("b", "4", 100, 100)],
        0.1: [_r("a", "1", 200, 190), _r("a", "2", 200, 210),
              _r("b", "3", 100, 110), _r("b", "4", 100, 100)],
    }  # fmt: skip
    assert fit_grid_value(preds, min_rows=4) == 0.1
    assert fit_grid_value(preds, exclude_source="a", min_rows=2, min_sources=1) == 0.0
    assert fit_grid_value(preds, exclude_source="a", min_rows=2) is None
    # a run before CURRENT_SINCE (2025-07-01) does not count
    old = {v: [dict(r, as_of="2025-03-18") for r in rs] for v, rs in preds.items()}
    assert fit_grid_value(old, min_rows=1, min_sources=1) is None


def test_row_gains_exactly_the_first_token_latency(catalog):
    """A PyTorch-backend row: TTFT mean, median and P99 and E2E mean, median and P99 each
    gain 120 ms; TPOT and throughput do not change (the path is outside the engine loop).
    The same row on the TensorRT backend (Triton) is unchanged."""
    base = serving_row_details(_row(), catalog, PRIOR, prefill_scale=1.0)
    with_ = serving_row_details(_row(), catalog, PRIOR, prefill_scale=1.0, first_token_s=0.12)
    for m in ("ttft_ms_mean", "ttft_ms_median", "ttft_ms_p99", "e2e_ms_mean", "e2e_ms_median",
              "e2e_ms_p99"):  # fmt: skip
        assert with_[m] - base[m] == pytest.approx(120.0)
    for m in ("tpot_ms_median", "tpot_ms_mean", "itl_ms_median", "req_s", "output_tok_s_total"):
        assert with_[m] == pytest.approx(base[m])
    assert "first-token path + 120 ms" in with_["note"]
    trt = _row(framework_version="0.14.0 | via Triton tensorrtllm_backend (online serving)")
    a = serving_row_details(trt, catalog, PRIOR, prefill_scale=1.0)
    b = serving_row_details(trt, catalog, PRIOR, prefill_scale=1.0, first_token_s=0.12)
    assert a["ttft_ms_median"] == pytest.approx(b["ttft_ms_median"])
