"""An overlap scheduler's extra iteration before a prompt joins (issue 32, item 1).

SGLang's ``event_loop_overlap`` receives new requests, forms and launches batch ``n + 1``,
then waits for batch ``n``: a request arriving while ``n`` runs is received after ``n + 1``
was formed, so its prompt joins ``n + 2``, one iteration later than the simulator's loop
(which admits at the next iteration boundary). The public rows add that iteration to TTFT
and E2E (:func:`planner.benchmarks.scheduler_waits.overlap_wait`) on engines that overlap the
host (``Framework.overlaps_host``), only where no fitted first-token path holds it already,
when ``serving_rows.OVERLAP_LAG`` is on (on by default since the tenth pass, together with SGLang's release rule for its dead decode-steps gate: docs/changes/2026-12-07f/sglttft.md; off before: docs/changes/2026-12-07b/ttft.md). The
tests set it both ways.
"""

from __future__ import annotations

import math

import pytest
from _benchmark_rows import schema_row

import planner.benchmarks.serving_rows as serving_rows
from planner.benchmarks.scheduler_waits import overlap_wait
from planner.benchmarks.serving_rows import serving_row_details
from planner.catalog import PRIOR


def test_overlap_wait_hand_derived():
    # one iteration of the ITL median, weighted by the share of arrivals finding one running
    assert overlap_wait(20.0, 1.0) == (20.0, 20.0)
    assert overlap_wait(20.0, 0.5) == (10.0, 20.0)  # mean 0.5 x 20; the P99 waits it whole
    assert overlap_wait(20.0, 0.0) == (0.0, 0.0)  # an idle engine polls at once
    assert overlap_wait(20.0, 0.01) == (pytest.approx(0.2), 0.0)  # under 2 % wait: P99 none
    assert overlap_wait(20.0, 3.0) == (20.0, 20.0)  # busy is a share
    assert overlap_wait(math.nan, 1.0) == (0.0, 0.0)
    assert overlap_wait(0.0, 1.0) == (0.0, 0.0)


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
        monkeypatch.setattr(serving_rows, "OVERLAP_LAG", on)
        serving_rows._ROW_CACHE.clear()
        d = serving_row_details(row, catalog, PRIOR)
        assert "reason" not in d, d.get("reason")
        out.append(d)
    serving_rows._ROW_CACHE.clear()
    return out


def test_sglang_closed_loop_waits_one_iteration(monkeypatch, catalog):
    """SGLang 0.5.3 (overlap scheduler on by default since 0.4.0), 8 clients: every arrival
    finds the other clients decoding (busy 1), so TTFT and E2E grow by exactly the same
    simulation's ITL median, mean and median alike; TPOT does not move."""
    off, on = _both(monkeypatch, catalog, _row("sglang", "0.5.3"))
    itl = off["itl_ms_median"]
    assert itl > 0
    for m in ("ttft_ms_mean", "ttft_ms_median", "ttft_ms_p99", "e2e_ms_mean", "e2e_ms_median"):
        assert on[m] - off[m] == pytest.approx(itl, rel=1e-9), m
    assert on["tpot_ms_mean"] == off["tpot_ms_mean"]
    assert on["itl_ms_median"] == itl
    assert "overlap scheduler: TTFT +" in on["note"]
    assert "overlap scheduler" not in off["note"]


@pytest.mark.parametrize(
    ("framework", "version", "kw"),
    [
        ("sglang", "0.3.0", {}),  # before the overlap scheduler (0.4.0)
        ("vllm", "v0.11.0", {}),  # async scheduling opt-in before 0.14.0
        ("trtllm", "1.2.0rc6", {}),  # overlaps, but its fitted first-token path holds it
        ("sglang", "0.5.3", {"concurrency": "1"}),  # one client: the engine is idle
        ("sglang", "0.5.3", {"mode": "offline", "request_rate": "inf",
                             "notes": "all 400 requests sent at once"}),  # all queued at t=0
    ],
    ids=["sglang-0.3", "vllm-0.11", "trtllm-pytorch", "one-client", "burst"],
)  # fmt: skip
def test_no_wait_without_overlap_or_a_busy_engine(monkeypatch, catalog, framework, version, kw):
    off, on = _both(monkeypatch, catalog, _row(framework, version, **kw))
    assert on["ttft_ms_mean"] == off["ttft_ms_mean"]
    assert "overlap scheduler" not in on["note"]


def test_poisson_wait_is_weighted_by_the_busy_share(monkeypatch, catalog):
    """Poisson arrivals at 4 req/s: a share ``1 - exp(-C)`` of arrivals finds ``C`` running
    decoders (Little's law), so the mean wait is above 0 and below one ITL median."""
    row = _row("sglang", "0.5.3", mode="rate", request_rate="4", notes="300 requests")
    off, on = _both(monkeypatch, catalog, row)
    d = on["ttft_ms_mean"] - off["ttft_ms_mean"]
    assert 0 < d < off["itl_ms_median"]
    assert on["ttft_ms_p99"] - off["ttft_ms_p99"] == pytest.approx(off["itl_ms_median"])
