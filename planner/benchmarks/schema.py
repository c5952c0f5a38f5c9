"""The benchmark-row schema (``planner/benchmarks/README.md``): columns, units, modes."""

from __future__ import annotations

import math

REQUIRED_COLUMNS = (
    "hardware",
    "model",
    "framework",
    "mode",
    "metric",
    "value",
    "unit",
)
SCHEMA_COLUMNS = (
    "id",
    "source",
    "source_detail",
    "as_of",
    "hardware",
    "n_gpus",
    "tp",
    "pp",
    "model",
    "precision",
    "kv_precision",
    "framework",
    "framework_version",
    "mode",
    "isl",
    "osl",
    "batch",
    "concurrency",
    "request_rate",
    "context_len",
    "metric",
    "value",
    "unit",
    "notes",
)
SERVING_MODES = ("rate", "server", "concurrency", "interactive")
#: time units accepted for step metrics, in seconds
TIME_UNITS_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}


def _num(v) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
