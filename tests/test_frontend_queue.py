"""vLLM's API server as a FIFO queue ahead of admission (planner.benchmarks.frontend_queue, OFF;
docs/changes/2026-12-10/apiserver.md)."""

from __future__ import annotations

import numpy as np
import pytest

import planner.benchmarks.frontend_queue as fe
import planner.benchmarks.serving_rows as rows_mod
from planner.benchmarks.serving_rows import serving_row_details
from planner.catalog import PRIOR


def test_switch_is_off():
    assert fe.FRONTEND_QUEUE is False
    assert fe.frontend_service_s("vllm", "v0.11.0 | vllm server, client vllm bench serve") is None


def test_a_burst_leaves_the_front_end_one_service_time_apart():
    # by hand: 3 requests at t = 0, 2 ms each, one server: served at 2, 4, 6 ms
    d = fe.ingest_departures([0.0, 0.0, 0.0], 0.002)
    assert d == pytest.approx([0.002, 0.004, 0.006])
    # two servers take two at a time: 1, 1, 2, 2 s
    assert fe.ingest_departures([0, 0, 0, 0], 1.0, servers=2) == pytest.approx([1, 1, 2, 2])


def test_spaced_arrivals_do_not_wait():
    # gaps of 1 s, service 0.5 s: each leaves 0.5 s after it came
    assert fe.ingest_departures([0.0, 1.0, 2.0], 0.5) == pytest.approx([0.5, 1.5, 2.5])
    # a late arrival after a burst: 0, 0 -> 1, 2; the third at 5 s waits for nothing
    assert fe.ingest_departures([0, 0, 5], 1.0) == pytest.approx([1, 2, 6])


def test_poisson_wait_is_pollaczek_khinchine():
    # M/D/1 mean wait in queue: lambda s^2 / (2 (1 - rho)); 100 req/s, 4 ms: rho 0.4,
    # 100 x 16e-6 / 1.2 = 1.333 ms. At 10 req/s it is 10 x 16e-6 / (2 x 0.96) = 0.083 ms.
    rng = np.random.default_rng(7)
    for lam, want_ms in ((100.0, 1.3333), (10.0, 0.0833)):
        a = np.cumsum(rng.exponential(1.0 / lam, 200_000))
        wait_ms = (fe.ingest_departures(a, 0.004) - a - 0.004).mean() * 1e3
        assert wait_ms == pytest.approx(want_ms, rel=0.05)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        fe.ingest_departures([0.0], 0.001, servers=0)
    with pytest.raises(ValueError):
        fe.ingest_departures([0.0], -1.0)


def test_only_vllm_openai_server_launches(monkeypatch):
    monkeypatch.setattr(fe, "FRONTEND_QUEUE", True)
    monkeypatch.setattr(fe, "SERVICE_S_PER_REQUEST", 0.004)
    assert fe.frontend_service_s("vllm", "v0.11.0 | vllm server") == 0.004
    assert fe.frontend_service_s("sglang", "v0.5.3 | python3 server, openai-chat") is None
    assert fe.frontend_service_s("vllm", "LLM class, offline harness") is None


def _burst_row(n: int) -> dict[str, str]:
    return {
        "id": "t-fe", "source": "test", "hardware": "nvidia-h100-sxm", "n_gpus": "1",
        "tp": "1", "pp": "1", "model": "llama-3.1-8b", "precision": "bf16",
        "framework": "vllm", "framework_version": "v0.11.0 | vllm server",
        "mode": "offline", "isl": "128", "osl": "4", "request_rate": "inf",
        "metric": "ttft_ms_mean", "value": "1", "unit": "ms", "as_of": "2026-01-06",
        "notes": f"request rate inf: all {n} requests sent at once",
    }  # fmt: skip


def test_a_front_end_bound_burst_has_ttft_half_its_length(catalog, monkeypatch):
    # 1000 requests of 128 / 4 tokens for an 8B model on an H100: the engine alone takes well
    # under 1 s. With 10 ms per request the front end binds: request k reaches the engine at
    # (k + 1) x 10 ms, so the run lasts >= 10 s and the mean TTFT is about (1000 + 1) / 2 x
    # 10 ms = 5.0 s: half the run, never more (an ingest queue cannot give 0.63-0.92).
    row = _burst_row(1000)
    monkeypatch.setattr(rows_mod, "_ROW_CACHE", {})
    off = serving_row_details(row, catalog, PRIOR)
    monkeypatch.setattr(fe, "FRONTEND_QUEUE", True)
    monkeypatch.setattr(fe, "SERVICE_S_PER_REQUEST", 0.010)
    on = serving_row_details(row, catalog, PRIOR)
    assert off["ttft_ms_mean"] < 2000.0
    length_s = 1000 * 132 / on["total_tok_s"]
    assert length_s == pytest.approx(10.0, rel=0.05)
    assert on["ttft_ms_mean"] == pytest.approx(5005.0, rel=0.05)
    assert on["ttft_ms_mean"] / 1e3 / length_s <= 0.51
