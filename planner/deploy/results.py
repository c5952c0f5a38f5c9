"""Saved results of a serving benchmark client, read into one record per run.

Read: the JSON that ``vllm bench serve --save-result`` writes (``vllm/benchmarks/serve.py``)
and the older ``benchmarks/benchmark_serving.py --save-result`` (same keys): one JSON object
per file, or one per line when runs were appended to one file (``--append-result``, or a
harness that concatenates them). Keys (vLLM source, ``benchmark()`` and its
``process_one_metric``):

- run: ``date`` (``%Y%m%d-%H%M%S``), ``backend``, ``model_id``, ``num_prompts``,
  ``request_rate`` (a number or ``"inf"``), ``burstiness``, ``max_concurrency``,
  ``duration`` [s], ``completed``, ``failed`` (newer clients);
- totals: ``total_input_tokens``, ``total_output_tokens``;
- throughput: ``request_throughput`` [req/s], ``output_throughput`` and
  ``total_token_throughput`` [tok/s] (``completed`` / ``duration`` and the token totals /
  ``duration``);
- latency, per metric ``ttft``, ``tpot``, ``itl``, ``e2el`` (those in
  ``--percentile-metrics``; default ``ttft,tpot,itl``, so E2E is often absent):
  ``mean_<m>_ms``, ``median_<m>_ms``, ``std_<m>_ms`` and ``p<P>_<m>_ms`` for each
  ``--metric-percentiles`` P (default 99; ``p99.9`` for a fraction).

Other keys (``tokenizer_id``, ``--metadata`` pairs, per-request arrays of
``--save-detailed``) are kept in :attr:`BenchResult.extra` or ignored. A ``guidellm``
report (a ``benchmarks`` list) is recognised and refused with that reason: it is not read yet.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.errors import DATA_READ_LIMIT, PlannerError, read_text
from planner.files import load_json

#: latency metrics of the client (key infix) and the planner's name for each
LATENCY_METRICS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2e"}
_LATENCY_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
#: keys without which a file is not a result of the client
REQUIRED_KEYS = ("completed", "duration", "total_input_tokens", "total_output_tokens")


@dataclass(frozen=True)
class BenchResult:
    """One run of the benchmark client (times in seconds, rates per second).

    ``latency_s[metric][stat]``: metric ``ttft``, ``tpot``, ``itl`` or ``e2e``; stat
    ``mean``, ``median``, ``std`` or ``p99`` (any percentile the run asked for, ``p99.9``).
    """

    path: str
    index: int  # which run of the file (0 = first line / the only object)
    model_id: str
    date: str
    backend: str
    num_prompts: int | None
    completed: int
    failed: int | None
    request_rate_rps: float  # inf: every request sent at once
    max_concurrency: int | None
    burstiness: float | None
    duration_s: float
    total_input_tokens: int
    total_output_tokens: int
    request_throughput_rps: float
    output_throughput_tok_s: float
    total_token_throughput_tok_s: float | None
    latency_s: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """The file, and the run's line when the file holds several."""
        return self.path if self.index == 0 else f"{self.path} (run {self.index + 1})"

    @property
    def input_tokens_mean(self) -> float:
        """Mean prompt length [tokens] of the completed requests."""
        return self.total_input_tokens / self.completed

    @property
    def output_tokens_mean(self) -> float:
        """Mean answer length [tokens] of the completed requests."""
        return self.total_output_tokens / self.completed

    @property
    def as_of(self) -> _dt.date | None:
        """The day of the run, from ``date`` (``20250530-194738``); None when unreadable."""
        try:
            return _dt.datetime.strptime(self.date[:8], "%Y%m%d").date()
        except ValueError:
            return None

    def latency(self, metric: str, stat: str) -> float | None:
        """A latency statistic [s] (``metric`` ttft/tpot/itl/e2e, ``stat`` mean/median/p99),
        or None when the run did not record it."""
        return self.latency_s.get(metric, {}).get(stat)

    def e2e_mean_s(self) -> float | None:
        """Mean end-to-end latency [s]: ``mean_e2el_ms`` when recorded, else
        ``mean_ttft + mean_tpot * (mean output - 1)`` (exact when answer lengths and TPOT
        are uncorrelated; TPOT is per request over its tokens after the first)."""
        e2e = self.latency("e2e", "mean")
        if e2e is not None:
            return e2e
        ttft, tpot = self.latency("ttft", "mean"), self.latency("tpot", "mean")
        if ttft is None or tpot is None:
            return None
        return ttft + tpot * max(self.output_tokens_mean - 1.0, 0.0)


def read_results(path: str | os.PathLike[str]) -> list[BenchResult]:
    """Every run saved in one result file (one JSON object, or one per line).

    Raises
    ------
    PlannerError
        a missing or unreadable file, text that is not JSON, a guidellm report, an object
        without the client's keys (named), a count or time that is not a positive number
    """
    p = Path(path)
    text = read_text(p, "benchmark result", "JSON file", limit=DATA_READ_LIMIT)
    stripped = text.strip()
    if not stripped:
        raise PlannerError(
            f"{p}: empty file; expected the JSON of `vllm bench serve --save-result`"
        )
    try:
        docs = [load_json(stripped, p)]
    except PlannerError:
        lines = [ln for ln in stripped.split("\n") if ln.strip()]
        if len(lines) < 2:
            raise
        docs = [load_json(ln, f"{p} line {i + 1}") for i, ln in enumerate(lines)]
    if len(docs) == 1 and isinstance(docs[0], list):
        docs = docs[0]
    out = [_result(p, i, d) for i, d in enumerate(docs)]
    if not out:
        raise PlannerError(f"{p}: no run in the file")
    return out


def read_result(path: str | os.PathLike[str], run: int | None = None) -> BenchResult:
    """One run of a result file: the only one, or ``run`` (1-based) of several."""
    runs = read_results(path)
    if run is None:
        if len(runs) > 1:
            raise PlannerError(
                f"{path}: {len(runs)} runs in one file; name one with {path}:N (N = 1..{len(runs)})"
            )
        return runs[0]
    if not 1 <= run <= len(runs):
        raise PlannerError(f"{path}: run {run} asked, the file holds runs 1..{len(runs)}")
    return runs[run - 1]


def split_run(spec: str) -> tuple[str, int | None]:
    """``result.json:2`` -> (``result.json``, 2); a path without ``:N`` -> (path, None)."""
    m = re.match(r"^(.*\S):(\d+)$", spec)
    if m and not Path(spec).exists():
        return m.group(1), int(m.group(2))
    return spec, None


def _result(p: Path, i: int, d: Any) -> BenchResult:
    where = str(p) if i == 0 else f"{p} run {i + 1}"
    if not isinstance(d, dict):
        raise PlannerError(f"{where}: expected a JSON object from `vllm bench serve --save-result`")
    if "benchmarks" in d and "completed" not in d:
        raise PlannerError(
            f"{where}: a guidellm report; the planner reads `vllm bench serve --save-result` "
            "JSON only (guidellm reports are not read yet)"
        )
    miss = [k for k in REQUIRED_KEYS if d.get(k) is None]
    if miss:
        raise PlannerError(
            f"{where}: not a `vllm bench serve --save-result` file: missing {', '.join(miss)}"
        )

    def num(key: str, positive: bool = True, default: Any = None) -> Any:
        v = d.get(key, default)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            if isinstance(v, str) and v.strip().lower() in ("inf", "infinity"):
                return math.inf
            raise PlannerError(f"{where}: {key} must be a number, got {v!r}")
        if not math.isfinite(v) or (v <= 0 if positive else v < 0):
            raise PlannerError(f"{where}: {key} must be {'> 0' if positive else '>= 0'}, got {v}")
        return v

    completed = num("completed")
    duration = num("duration")
    if math.isinf(completed) or math.isinf(duration):
        raise PlannerError(f"{where}: completed and duration must be finite numbers")
    rate = d.get("request_rate", "inf")
    rate_rps = math.inf if rate is None else num("request_rate", default="inf")
    conc = num("max_concurrency")
    lat: dict[str, dict[str, float]] = {}
    for k, v in d.items():
        m = _LATENCY_KEY.match(k)
        if m and v is not None:
            lat.setdefault(LATENCY_METRICS[m.group(2)], {})[m.group(1)] = (
                num(k, positive=False) / 1000.0
            )
    total_in = num("total_input_tokens", positive=False)
    total_out = num("total_output_tokens")
    return BenchResult(
        path=str(p),
        index=i,
        model_id=str(d.get("model_id") or ""),
        date=str(d.get("date") or ""),
        backend=str(d.get("backend") or ""),
        num_prompts=None if d.get("num_prompts") is None else int(num("num_prompts")),
        completed=int(completed),
        failed=None if d.get("failed") is None else int(num("failed", positive=False)),
        request_rate_rps=float(rate_rps),
        max_concurrency=None if conc is None else int(conc),
        burstiness=num("burstiness"),
        duration_s=float(duration),
        total_input_tokens=int(total_in),
        total_output_tokens=int(total_out),
        request_throughput_rps=float(
            num("request_throughput", default=None) or completed / duration
        ),
        output_throughput_tok_s=float(
            num("output_throughput", default=None) or total_out / duration
        ),
        total_token_throughput_tok_s=num("total_token_throughput"),
        latency_s=lat,
    )
