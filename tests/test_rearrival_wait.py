"""A closed-loop client's next request waits for the iteration it lands in (issue 32, item 1).

The simulator's closed loop sends a client's next request at the instant the last one
finishes, an iteration boundary, so the new prompt joins the next iteration at once. A real
client's request arrives after the response path and the new prompt's tokenisation, inside
an iteration the engine has already formed, and waits for it to end: half an iteration on
average for a uniformly spread landing phase
(:func:`planner.benchmarks.scheduler_waits.rearrival_wait`, switch
``serving_rows.CLOSED_LOOP_REARRIVAL``, on since docs/changes/2026-12-08/ttft.md). The tests
set the switch both ways.
"""

from __future__ import annotations

import math

import pytest
from _benchmark_rows import schema_row

import planner.benchmarks.serving_rows as serving_rows
from planner.benchmarks.scheduler_waits import REARRIVAL_PHASE, rearrival_wait
from planner.benchmarks.serving_rows import serving_row_details
from planner.catalog import PRIOR


def test_rearrival_wait_hand_derived():
    assert REARRIVAL_PHASE == 0.5
    # ITL 20 ms, busy 1: mean 0.5 x 20 = 10 ms, the P99 waits the whole iteration
    assert rearrival_wait(20.0, 1.0) == (10.0, 20.0)
    assert rearrival_wait(36.0, 1.0) == (18.0, 36.0)
    assert rearrival_wait(20.0, 0.0) == (0.0, 0.0)  # one client: the engine is idle
    assert rearrival_wait(20.0, 0.01) == (pytest.approx(0.1), 0.0)  # 0.01 x 0.5 x 20
    assert rearrival_wait(20.0, 3.0) == (10.0, 20.0)  # busy is a share
    assert rearrival_wait(math.nan, 1.0) == (0.0, 0.0)
    assert rearrival_wait(-1.0, 1.0) == (0.0, 0.0)


def test_rearrival_phase_is_read_at_call_time(monkeypatch):
    # scripts/latency_rows.py --rearrival-phase sets it for a what-if: 1.0 x 20 ms = 20 ms
    import planner.benchmarks.scheduler_waits as waits

    monkeypatch.setattr(waits, "REARRIVAL_PHASE", 1.0)
    assert waits.rearrival_wait(20.0, 1.0) == (20.0, 20.0)
    monkeypatch.setattr(waits, "REARRIVAL_PHASE", 0.25)
    assert waits.rearrival_wait(20.0, 1.0) == (5.0, 20.0)


def _row(framework: str, version: str, **kw) -> dict[str, str]:
    return schema_row(**{
        "hardware": "nvidia-h100-sxm", "model": "llama-3.1-8b", "precision": "bf16",
        "framework": framework, "framework_version": version, "isl": "1024", "osl": "128",
        "as_of": "2025-10-01", "mode": "concurrency", "concurrency": "8",
        "notes": "160 requests", **kw,
    })  # fmt: skip


def _both(monkeypatch, catalog, row):
    out = []
    for on in (False, True):
        monkeypatch.setattr(serving_rows, "CLOSED_LOOP_REARRIVAL", on)
        serving_rows._ROW_CACHE.clear()
        d = serving_row_details(row, catalog, PRIOR)
        assert "reason" not in d, d.get("reason")
        out.append(d)
    serving_rows._ROW_CACHE.clear()
    return out


@pytest.mark.parametrize(
    ("framework", "version"), [("sglang", "0.5.3"), ("vllm", "v0.11.0")], ids=["sglang", "vllm"]
)
def test_closed_loop_waits_half_an_iteration(monkeypatch, catalog, framework, version):
    """8 clients: every re-arrival finds the others decoding (busy 1), so TTFT and E2E grow
    by exactly half the same simulation's ITL median (mean and median alike), the P99 by a
    whole one; TPOT and throughput do not move. The engine need not overlap the host (vLLM
    0.11 does not): the wait is the loop's, not the scheduler's."""
    off, on = _both(monkeypatch, catalog, _row(framework, version))
    itl = off["itl_ms_median"]
    assert itl > 0
    for m in ("ttft_ms_mean", "ttft_ms_median", "e2e_ms_mean", "e2e_ms_median"):
        assert on[m] - off[m] == pytest.approx(0.5 * itl, rel=1e-9), m
    for m in ("ttft_ms_p99", "e2e_ms_p99"):
        assert on[m] - off[m] == pytest.approx(itl, rel=1e-9), m
    assert on["tpot_ms_mean"] == off["tpot_ms_mean"]
    assert on["output_tok_s_total"] == off["output_tok_s_total"]
    assert "closed-loop re-arrival: TTFT +" in on["note"]
    assert "re-arrival" not in off["note"]


@pytest.mark.parametrize(
    ("framework", "version", "kw"),
    [
        ("sglang", "0.5.3", {"concurrency": "1"}),  # one client: the engine is idle
        ("trtllm", "1.2.0rc6", {}),  # its fitted first-token path holds it
        ("sglang", "0.5.3", {"mode": "offline", "request_rate": "inf",
                             "notes": "all 400 requests sent at once"}),  # all queued at t=0
        ("sglang", "0.5.3", {"mode": "rate", "request_rate": "4",
                             "notes": "300 requests"}),  # Poisson: simulated at random times
    ],
    ids=["one-client", "trtllm-pytorch", "burst", "poisson"],
)  # fmt: skip
def test_no_wait_outside_a_busy_closed_loop(monkeypatch, catalog, framework, version, kw):
    off, on = _both(monkeypatch, catalog, _row(framework, version, **kw))
    assert on["ttft_ms_mean"] == off["ttft_ms_mean"]
    assert on["ttft_ms_p99"] == off["ttft_ms_p99"]
    assert "re-arrival" not in on["note"]
