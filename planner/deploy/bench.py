"""``bench.sh``: a load test of one running replica with the scenario's lengths, arrivals and
the rate the planner tested per replica (``vllm bench serve``, result saved as JSON)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from planner.deploy import flags as F
from planner.errors import PlannerError

#: seconds of arrivals the benchmark runs at its rate (prompts = rate x this, at least 200)
BENCH_SECONDS = 300.0
MIN_PROMPTS = 200
MAX_PROMPTS = 20_000
#: vllm bench's --backend per engine (the server's OpenAI-compatible API)
_BACKEND = {"vllm": "vllm", "sglang": "sglang", "tgi": "tgi", "lmdeploy": "lmdeploy"}


@dataclass(frozen=True)
class BenchPlan:
    """The benchmark's workload: lengths [tokens], spread, arrivals, rate [req/s], prompts."""

    input_tokens: int
    output_tokens: int
    range_ratio: float
    burstiness: float
    rate_rps: float
    num_prompts: int
    arrival: str
    notes: tuple[str, ...]


def _length(dist: Any, name: str) -> tuple[int, float, str | None]:
    """(length, range ratio, note) closest to a length distribution: fixed exactly; uniform
    as its centre +- ratio (vLLM's random dataset samples [L(1-r), L(1+r)]); any other kind
    as its mean with ratio 0, said in a note."""
    kind = getattr(dist, "kind", "fixed")
    if kind == "fixed":
        return int(dist.tokens), 0.0, None
    if kind == "uniform":
        lo, hi = int(dist.min_tokens), int(dist.max_tokens)
        centre = (lo + hi) / 2
        return round(centre), round((hi - lo) / (hi + lo), 4), None
    mean = float(dist.mean_tokens())
    return (
        max(1, round(mean)),
        0.0,
        f"{name}: {kind} distribution run at its mean, {mean:.0f} tokens (vllm bench's random "
        "dataset draws uniform lengths only)",
    )


def bench_plan(workload: Any, rate_rps: float) -> BenchPlan:
    """The benchmark of one replica at ``rate_rps`` [req/s] for ``workload``."""
    if not (rate_rps > 0 and math.isfinite(rate_rps)):
        raise PlannerError(f"bench: rate per replica must be a positive number, got {rate_rps}")
    li, ri, ni = _length(workload.input_tokens, "prompts")
    lo, ro, no = _length(workload.output_tokens, "answers")
    tr = workload.traffic
    notes = [n for n in (ni, no) if n]
    if ri != ro:
        r = max(ri, ro)
        notes.append(f"one --random-range-ratio for both lengths: {r} (prompts {ri}, answers {ro})")
        ri = r
    if tr.arrival == "poisson":
        burst = 1.0
    elif tr.arrival == "gamma":
        # vllm bench's gamma intervals have shape = burstiness, so CV = 1 / sqrt(burstiness)
        burst = round(1.0 / float(tr.cv) ** 2, 6)
    elif tr.arrival == "uniform":
        burst = 100.0
        notes.append("uniform arrivals: gamma intervals with burstiness 100 (CV 0.1) are closest")
    else:
        burst = 1.0
        notes.append(f"{tr.arrival} arrivals: run as poisson at the rate the planner tested")
    n = int(min(MAX_PROMPTS, max(MIN_PROMPTS, math.ceil(rate_rps * BENCH_SECONDS))))
    return BenchPlan(li, lo, ri, burst, float(rate_rps), n, tr.arrival, tuple(notes))


def bench_source(source: str) -> str:
    """Where ``vllm bench serve`` defines its flags, from a read release's ``source`` (its
    ``vllm/engine/arg_utils.py``, the server's flags): ``vllm/benchmarks/serve.py`` of the
    same tag, the random dataset's in ``vllm/benchmarks/datasets.py`` (both read:
    ``data/engine_flags.yaml`` files)."""
    base, sep, _ = source.partition("/vllm/engine/arg_utils.py")
    if not sep:
        return source
    return f"{base}/vllm/benchmarks/serve.py (random dataset: vllm/benchmarks/datasets.py)"


def bench_script(plan: BenchPlan, framework: str, header: list[str]) -> str:
    """``bench.sh``: ``vllm bench serve`` against ``$BASE_URL`` (default the local server).

    The client is vLLM's newest read release (any server speaks the OpenAI API)."""
    res = F.resolve("vllm", None, "benchmark client")
    if not F.has(res, "bench_command"):  # pragma: no cover - data check
        raise PlannerError(f"vllm {res.read}: no 'vllm bench serve' in the read release")
    backend = _BACKEND.get(framework, "openai")

    def f(key: str) -> str:
        return F.flag(res, key)

    args = [
        (f("bench_backend"), backend),
        (f("bench_base_url"), '"$BASE_URL"'),
        ("--model", '"$MODEL"'),
        (f("bench_dataset"), "random"),
        (f("bench_input_len"), str(plan.input_tokens)),
        (f("bench_output_len"), str(plan.output_tokens)),
        (f("bench_range_ratio"), f"{plan.range_ratio:g}"),
        (f("bench_ignore_eos"), None),
        (f("bench_rate"), f"{plan.rate_rps:.6g}"),
        (f("bench_burstiness"), f"{plan.burstiness:g}"),
        (f("bench_num_prompts"), str(plan.num_prompts)),
        (f("bench_percentile_metrics"), "ttft,tpot,itl,e2el"),
        (f("bench_percentiles"), "50,99"),
        (f("bench_save"), None),
        (f("bench_result_file"), '"${RESULT:-result.json}"'),
    ]
    lines = ["#!/usr/bin/env bash"] + [f"# {h}" for h in header]
    lines += [
        f"# client: vllm bench serve of vllm {res.read} (pip install vllm=={res.read}); flags "
        f"checked against {bench_source(res.source)}",
        "# servers older than vLLM 0.8.5 shipped the same client as benchmarks/"
        "benchmark_serving.py of their tag (flags not checked here)",
    ]
    lines += [f"# {n}" for n in plan.notes]
    lines += [
        "set -euo pipefail",
        'BASE_URL="${BASE_URL:-http://127.0.0.1:8000}"',
        'MODEL="${MODEL:?set MODEL to the served model (as in serve.sh)}"',
    ]
    parts = [res and F.flag(res, "bench_command")]
    parts += [a if v is None else f"{a} {v}" for a, v in args]
    lines.append(" \\\n  ".join(parts))
    return "\n".join(lines) + "\n"
