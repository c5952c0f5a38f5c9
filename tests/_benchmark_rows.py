"""Checks every transcribed benchmark file shares (used by tests/test_benchmarks_*.py): the
rows as the CSV holds them, and the provenance each row must carry."""

from __future__ import annotations

import csv
import datetime as dt
import re
from collections.abc import Iterable
from pathlib import Path


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a benchmark CSV, as strings (what the source printed, untouched)."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def check_provenance(
    rows: Iterable[dict[str, str]],
    prefix: dict[str, str],
    dates: tuple[dt.date, dt.date],
    hardware: Iterable[str],
    frameworks: Iterable[str],
) -> None:
    """Every row names one of the file's sources (``prefix``: source -> id prefix, ids
    ``<prefix>-NNNN``), a source detail, an ``as_of`` date within ``dates``, a GPU of
    ``hardware``, a framework of ``frameworks``, its framework version and notes."""
    hardware, frameworks = set(hardware), set(frameworks)
    for r in rows:
        assert r["source"] in prefix, r["id"]
        assert re.fullmatch(prefix[r["source"]] + r"-\d{4}", r["id"]), r["id"]
        assert r["source_detail"].strip(), r["id"]
        assert dates[0] <= dt.date.fromisoformat(r["as_of"]) <= dates[1], r["id"]
        assert r["hardware"] in hardware, r["id"]
        assert r["framework"] in frameworks, r["id"]
        assert r["framework_version"].strip() and r["notes"].strip(), r["id"]


def check_loads(path: Path, rows: list[dict[str, str]], catalog) -> int:
    """The planner's loader reads every row of ``path`` (no row rejected) and the ids are
    unique; returns the row count."""
    from planner.benchmarks.io import load_measurements

    df = load_measurements(path, catalog)
    assert len(df) == len(rows)
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids)
    return len(rows)


def schema_row(**cells) -> dict[str, str]:
    """One benchmark row as a CSV holds it (every column of
    ``planner.benchmarks.schema.SCHEMA_COLUMNS``, blank unless given): a single-GPU serving
    run at fixed concurrency whose TTFT is 10 ms, with ``cells`` (as strings) over that."""
    from planner.benchmarks.schema import SCHEMA_COLUMNS

    row = dict.fromkeys(SCHEMA_COLUMNS, "")
    row.update(
        id="t-0001", source="test", n_gpus="1", tp="1", pp="1", mode="concurrency",
        metric="ttft_ms_median", value="10", unit="ms",
    )  # fmt: skip
    row.update({k: str(v) for k, v in cells.items()})
    return row
