"""vLLM's ``--async-scheduling`` read from a row's launch (issue 32; docs/changes/2026-12-07e/vllmsrc.md).

Before vLLM 0.14 async scheduling (the engine core schedules step n + 1 while the GPU runs
step n) was opt-in: ``--async-scheduling``. GPUStack's performance lab launches gpt-oss with
it on vLLM 0.10.2 / 0.11.0 (e.g. ``vllm serve openai/gpt-oss-120b --async-scheduling -tp 2``),
so those rows' replicas overlap host and GPU although their release's default does not
(``data/frameworks.yaml``: ``host_overlap_since: "0.14.0"``). From 0.14 it is the default
and ``--no-async-scheduling`` turns it off.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import planner.benchmarks.serving_rows as serving_rows
from planner.benchmarks.schema import async_scheduling
from planner.catalog import load_catalog
from planner.catalog.efficiency import PRIOR
from planner.errors import PlannerError

ROOT = Path(__file__).resolve().parents[1]


def _rows():
    out = []
    for path in sorted((ROOT / "data" / "benchmarks").glob("public*.csv")):
        with path.open(newline="") as fh:
            out.extend(csv.DictReader(fh))
    return out


@pytest.mark.parametrize(
    "notes, framework, want",
    [
        ("serving command: vllm serve openai/gpt-oss-120b --async-scheduling -tp 2", "vllm", True),
        ("vllm serve m --no-async-scheduling", "vllm", False),
        ("LLM(model=m, async_scheduling=True)", "vllm", True),
        ("async_scheduling: false", "vllm", False),
        ("vllm serve m --async-scheduling; later run --no-async-scheduling", "vllm", False),
        ("vllm serve m --async-scheduling-foo", "vllm", None),  # a whole flag only
        ("vllm serve openai/gpt-oss-120b --max-model-len 32768", "vllm", None),
        ("", "vllm", None),
        ("--async-scheduling", "sglang", None),  # another engine: its own overlap rule
    ],
)
def test_async_scheduling_spellings(notes, framework, want):
    assert async_scheduling(notes, framework) is want


def test_gpustack_rows_that_launch_with_the_flag():
    """Every row quoting ``--async-scheduling`` is a GPUStack vLLM gpt-oss run on a release
    before 0.14 (where the flag is opt-in), and reads as async; the GPUStack rows launched
    without it (the same pages' baselines) read as unstated."""
    on = [r for r in _rows() if "--async-scheduling" in r["notes"]]
    # 4 runs x 3 prompt lengths (32K / 2K / 128) x 4 metrics (TTFT, TPOT, two throughputs),
    # read from the pages: gpt-oss-120b H100 TP2, gpt-oss-20b H100, gpt-oss-120b A100
    # (its optimized command), gpt-oss-20b A100
    assert len(on) == 48
    for r in on:
        assert r["source"] == "GPUStack performance lab", r["id"]
        assert r["model"].startswith("gpt-oss"), r["id"]
        assert r["framework_version"].split()[0] in ("v0.10.2", "v0.11.0"), r["id"]
        assert async_scheduling(r["notes"], r["framework"]) is True, r["id"]
    base = [
        r
        for r in _rows()
        if r["id"] in ("gpustack-0009", "gpustack-0039", "gpustack-0171", "gpustack-0199")
    ]
    assert len(base) == 4
    assert all(async_scheduling(r["notes"], r["framework"]) is None for r in base)


def _host_overlap(monkeypatch, row):
    """The ``host_overlap`` the serving row builds its replica with."""
    seen = {}

    def capture(*a, **k):
        seen.update(k)
        raise PlannerError("captured")

    monkeypatch.setattr(serving_rows, "build_replica", capture)
    serving_rows._ROW_CACHE.clear()
    d = serving_rows.serving_row_details(row, load_catalog(), PRIOR)
    assert d.get("reason") == "captured"
    return seen["host_overlap"]


def _row(version, notes, pp="1"):
    return {
        "id": "t",
        "source": "test",
        "as_of": "2026-01-06",
        "hardware": "nvidia-h100-sxm",
        "n_gpus": "2",
        "tp": "2",
        "pp": pp,
        "model": "gpt-oss-120b",
        "precision": "mxfp4",
        "framework": "vllm",
        "framework_version": version,
        "mode": "offline",
        "isl": "2000",
        "osl": "100",
        "request_rate": "inf",
        "metric": "ttft_ms_mean",
        "value": "1",
        "unit": "ms",
        "notes": notes,
    }


def test_the_flag_sets_the_replica_host_overlap(monkeypatch):
    cmd = "serving command: vllm serve openai/gpt-oss-120b"
    # 0.10.2: opt-in, off by default; on with the flag
    assert _host_overlap(monkeypatch, _row("v0.10.2", cmd)) is False
    assert _host_overlap(monkeypatch, _row("v0.10.2", cmd + " --async-scheduling")) is True
    # 0.14.0: the default; off with --no-async-scheduling
    assert _host_overlap(monkeypatch, _row("v0.14.0", cmd)) is True
    assert _host_overlap(monkeypatch, _row("v0.14.0", cmd + " --no-async-scheduling")) is False
    # pipeline parallel: vLLM does not overlap (frameworks.yaml host_overlap_not_with), flag or not
    row = _row("v0.10.2", cmd + " --async-scheduling -tp 1 -pp 2", pp="2")
    row["tp"] = "1"
    assert _host_overlap(monkeypatch, row) is False
