"""``expected.json``: the planner's prediction for one emitted option at the benchmark's rate
(schema ``planner-expected/1``), written and read by one frozen model."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from planner.catalog.records import Frozen
from planner.errors import PlannerError, read_text
from planner.files import atomic_write_text, load_json

SCHEMA = "planner-expected/1"


class Band(Frozen):
    """A predicted value and its error band (None: no band)."""

    value: float
    low: float | None = None
    high: float | None = None


class ExpectedOption(Frozen):
    label: str
    gpu: str
    framework: str
    release: str | None
    precision: str
    kv_precision: str
    tp: int = Field(gt=0)
    pp: int = Field(gt=0)
    ep: int = Field(gt=0)
    attention_dp: int = Field(gt=0)
    replicas: int = Field(gt=0)
    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    gpu_memory_utilization: float | None


class ExpectedWorkload(Frozen):
    model: str
    input_tokens: int = Field(gt=0)
    output_tokens: int = Field(gt=0)
    rate_rps_per_replica: float = Field(gt=0)
    num_prompts: int = Field(gt=0)
    arrival: str


class Predicted(Frozen):
    output_throughput_tok_s: Band
    request_throughput_rps: Band
    ttft_p50_s: Band
    ttft_p99_s: Band
    tpot_p50_s: Band
    tpot_p99_s: Band
    e2e_p99_s: Band


class Expected(Frozen):
    """What ``bench.sh`` should measure on one replica, by the planner's prediction."""

    schema_: Literal["planner-expected/1"] = Field(SCHEMA, alias="schema")
    planner_version: str
    option: ExpectedOption
    workload: ExpectedWorkload
    predicted: Predicted
    provenance: str

    model_config = {**Frozen.model_config, "populate_by_name": True}

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")


def write_expected(exp: Expected, path: str | os.PathLike[str]) -> None:
    """Write ``exp`` as JSON (atomically)."""
    atomic_write_text(Path(path), json.dumps(exp.as_dict(), indent=2) + "\n")


def read_expected(path: str | os.PathLike[str]) -> Expected:
    """Read expected.json; a wrong shape is one line naming the field path and what it needs."""
    text = read_text(path, "expected.json", "JSON file")
    d = load_json(text, path)
    if not isinstance(d, dict):
        raise PlannerError(f"{path}: expected a JSON object (planner-expected/1)")
    schema = d.get("schema")
    if not (isinstance(schema, str) and schema.startswith("planner-expected/")):
        raise PlannerError(
            f"{path}: schema: expected 'planner-expected/1' (the expected.json of "
            f"`planner recommend --emit`), got {schema!r}"
        )
    try:
        return Expected.model_validate(d)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
        got = err.get("input")
        shown = "missing" if err["type"] == "missing" else f"got {got!r}"[:80]
        raise PlannerError(f"{path}: {loc}: {err['msg'].lower()} ({shown})") from None
