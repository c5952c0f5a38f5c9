"""What a public source's TPOT / ITL number is, as its benchmark client computes it, and
which statistic of the simulation answers it.

A serving benchmark's "TPOT" is not one quantity everywhere. Clients differ in

* the **definition**: time per output token *per request*, ``(E2E_i - TTFT_i) / (n_i - 1)``
  and then a statistic over requests (vLLM ``benchmark_serving.py`` / ``vllm bench serve``,
  ``sglang.bench_serving``, InferenceX's copy of vLLM's client, MLPerf loadgen), against an
  inter-token latency *pooled over tokens* (every gap between two streamed chunks of every
  request, so long answers weigh more; the "ITL" of the same clients), or genai-perf's
  "inter token latency", which is the per-request quantity again;
* the **token count** ``n_i``: the server's ``usage.completion_tokens``, the requested length
  (equal under ``--ignore-eos``), or a re-tokenization of the streamed text;
* what a **chunk** carries: a server streaming every k tokens (SGLang ``--stream-interval``,
  TensorRT-LLM ``stream_interval``) or a speculative step's accepted tokens make the pooled ITL
  a per-chunk number, while the per-request TPOT is unchanged (its ends are the first and the
  last chunk, both on time when the server sends the first token at once and the last at
  the finish).

Each source that publishes serving TPOT / ITL rows states its client in
``data/benchmarks/sources.yaml`` (``client_metrics``: client, where its code was read, the
definition, the token count, the first chunk, the scored requests). :func:`row_definition`
says which simulated statistic a row's ``metric`` column is scored against
(:data:`PLANNER_COMPUTES`); :func:`definition_check` says whether that is the source's own
definition. The simulator's per-request TPOT (``SimResult.tpot_s``) and its pooled ITL
(``SimResult.itl_values_s`` weighted by the decode tokens of each iteration) are the two
quantities; :func:`client_tpot` is the clients' per-request formula, kept here so that a test
can hold the simulator to it.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import cache
from pathlib import Path
from typing import Literal

import numpy as np

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Frozen
from planner.errors import PlannerError, read_text
from planner.files import load_yaml

SOURCES_FILE = DATA_DIR / "benchmarks" / "sources.yaml"

#: a client's TPOT / ITL definitions (the values ``tpot`` and ``itl`` of ``client_metrics``)
Definition = Literal["per_request", "pooled_itl", "unstated"]
DEFINITIONS: dict[str, str] = {
    "per_request": "per request (E2E - TTFT) / (output tokens - 1), requests of 2 or more "
    "tokens; the row's statistic (mean, median, p99) over requests",
    "pooled_itl": "every gap between two streamed chunks of every request, pooled (token-"
    "weighted when a chunk carries one token); the row's statistic over the gaps",
    "unstated": "the source does not name its client, so its definition is not known",
}

#: what the simulator computes for a row's metric column (``serving_rows._row_metrics``)
PLANNER_COMPUTES: dict[str, tuple[str, str]] = {
    "tpot_ms_mean": ("per_request", "mean of SimResult.tpot_s over the scored requests"),
    "tpot_ms_median": ("per_request", "median of SimResult.tpot_s over the scored requests"),
    "tpot_ms_p99": ("per_request", "P99 of SimResult.tpot_s over the scored requests"),
    "itl_ms_mean": (
        "pooled_itl",
        "mean of the decode-iteration durations weighted by their decode tokens (one token "
        "per chunk)",
    ),
    "itl_ms_median": (
        "pooled_itl",
        "median of the decode-iteration durations weighted by their decode tokens (one "
        "token per chunk)",
    ),
}


class ClientMetrics(Frozen):
    """How one source's benchmark client reports TPOT / ITL (``client_metrics`` of a
    ``data/benchmarks/sources.yaml`` entry).

    Attributes
    ----------
    client : the client program as the source names it
    code : where its metric code was read (repository @ commit : path, or a URL)
    tpot : definition of the source's ``tpot_ms_*`` rows (:data:`DEFINITIONS`)
    itl : definition of its ``itl_ms_*`` rows, when it has any
    output_tokens : the token count the client divides by: ``usage`` (the server's
        completion_tokens), ``requested`` (the length asked for; the actual one under
        ignore-eos), ``retokenized`` (the streamed text re-tokenized), ``sut`` (MLPerf: the
        tokens the system under test reports), ``unstated``
    first_chunk : what starts the client's TTFT clock and ends it (so what TPOT excludes)
    scored : which requests the statistic is over
    as_of : the date the client code was read
    note : anything a reader needs (streaming interval, ignore-eos, lengths)
    """

    client: str
    code: str
    tpot: Definition
    itl: Definition | None = None
    output_tokens: Literal["usage", "requested", "retokenized", "sut", "unstated"]
    first_chunk: str
    scored: str
    as_of: dt.date
    note: str = ""


@cache
def load_client_metrics(path: Path = SOURCES_FILE) -> dict[str, ClientMetrics]:
    """``{source name: ClientMetrics}`` for every ``sources.yaml`` entry with a
    ``client_metrics`` block; a malformed block is a one-line :class:`PlannerError` naming
    the source and the field."""
    raw = load_yaml(read_text(path, "benchmark sources file"), path)
    out: dict[str, ClientMetrics] = {}
    for entry in (raw or {}).get("sources", []):
        block = entry.get("client_metrics")
        if block is None:
            continue
        try:
            out[entry["source"]] = ClientMetrics.model_validate(block)
        except Exception as e:  # pydantic's message names the field
            first = str(e).splitlines()
            detail = " ".join(first[1:3]).strip() if len(first) > 1 else str(e)
            raise PlannerError(
                f"{path}: client_metrics of source '{entry.get('source')}': {detail}"
            ) from None
    return out


def row_definition(metric: str) -> str | None:
    """The definition (:data:`DEFINITIONS` key) the simulator scores a row's ``metric`` with,
    None for a metric that is not a TPOT / ITL."""
    got = PLANNER_COMPUTES.get(metric)
    return got[0] if got else None


_KIND = re.compile(r"^(tpot|itl)_ms_")


def definition_check(source: str, metric: str) -> tuple[str, bool | None]:
    """``(the source's definition of this metric, whether the simulator computes it)``.

    ``None`` in the second place when the source's client is not recorded or does not say
    (``unstated``): the row is scored with the simulator's statistic of the metric's name.
    """
    m = _KIND.match(metric)
    if m is None or metric not in PLANNER_COMPUTES:
        return "", None
    cm = load_client_metrics().get(source)
    if cm is None:
        return "not recorded", None
    own = cm.tpot if m.group(1) == "tpot" else cm.itl
    if own is None:
        return "not recorded", None
    if own == "unstated":
        return own, None
    return own, own == row_definition(metric)


def client_tpot(e2e_s: np.ndarray, ttft_s: np.ndarray, output_tokens: np.ndarray) -> np.ndarray:
    """The clients' per-request TPOT [s]: ``(e2e - ttft) / (n - 1)`` for ``n > 1``, the rest
    dropped (vLLM ``benchmark_serving.calculate_metrics``; ``sglang.bench_serving``; InferenceX
    ``utils/bench_serving/benchmark_serving.py``; MLPerf loadgen
    ``AsyncLog::RecordSampleCompletion``)."""
    e2e, ttft = np.asarray(e2e_s, float), np.asarray(ttft_s, float)
    n = np.asarray(output_tokens)
    keep = n > 1
    return (e2e[keep] - ttft[keep]) / (n[keep] - 1)


def pooled_tpot(e2e_s: np.ndarray, ttft_s: np.ndarray, output_tokens: np.ndarray) -> float:
    """Decode time per decode token pooled over requests [s]: ``sum(e2e - ttft) / sum(n - 1)``
    (what a token-weighted mean ITL is when every chunk carries one token)."""
    e2e, ttft = np.asarray(e2e_s, float), np.asarray(ttft_s, float)
    n = np.asarray(output_tokens)
    keep = n > 1
    return float(np.sum(e2e[keep] - ttft[keep]) / np.sum(n[keep] - 1))
