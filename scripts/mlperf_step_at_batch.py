"""In-sample diagnosis of MLPerf v5.1 NVIDIA Llama-2-70B runs: the planner's step at each
run's own batch against the run's mean time per output token (docs/changes/2026-12-07e/mlpint.md).

Each row of data/benchmarks/public_mlperf51_nvidia.csv quotes its log's completed samples/s,
mean latency and mean TPOT. Little's law gives the sequences in flight a GPU; the step
decodes them plus the prompt tokens the run's rate brings in a step (the OpenOrca mean
prompt, solved for the step time), with the bundled profile's TensorRT-LLM node of the
row's GPU and precision (TP1, fp8 KV, as the configs state). Nothing is fitted; the rows
are never fitted either.

Usage: PYTHONPATH=$PWD python scripts/mlperf_step_at_batch.py
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from planner.catalog import load_catalog
from planner.catalog.profile import resolve_params
from planner.engine.step import step_model
from planner.workload.presets import openorca_lengths

ROWS = Path(__file__).resolve().parents[1] / "data/benchmarks/public_mlperf51_nvidia.csv"
_LOG = {
    "rate": r"Completed samples per second\s*: ([\d.]+)",
    "latency_ns": r"Mean latency \(ns\)\s*: (\d+)",
    "tpot_ns": r"Mean Time to Output Token \(ns\)\s*: (\d+)",
}


def step_at_run_batch(sm, rate_per_gpu: float, in_flight: float, tpot_s: float) -> tuple:
    """(step [s], prompt tokens a step) of ``sm`` at ``in_flight`` decoding sequences plus
    the prompt tokens ``rate_per_gpu`` [req/s] brings in one step (fixed point)."""
    i, o = openorca_lengths()
    isl, osl = i.mean_tokens(), o.mean_tokens()
    t = tpot_s
    for _ in range(40):
        pf = rate_per_gpu * isl * t
        kv = in_flight * (isl + osl / 2) + pf * isl / 2
        t = float(sm.step(in_flight + pf, in_flight + 1, in_flight + 1, kv, kv).time_s)
    return t, pf


def main() -> int:
    cat = load_catalog()
    models = {}
    print("id, GPU, scenario, in flight a GPU, prompt tokens a step, measured / planner step [ms]")
    for r in csv.DictReader(ROWS.open()):
        got = {k: re.search(p, r["notes"]) for k, p in _LOG.items()}
        if not all(got.values()):
            continue
        rate, lat, tpot = (float(got[k].group(1)) for k in ("rate", "latency_ns", "tpot_ns"))
        gpus = float(r["n_gpus"])
        key = (r["hardware"], r["precision"])
        if key not in models:
            p, _ = resolve_params(*key[:1], "trtllm", key[1], catalog=cat, family="dense")
            models[key] = step_model("llama-2-70b", key[0], key[1], "fp8", 1, 1, p, cat)
        n = rate * lat / 1e9 / gpus
        t, pf = step_at_run_batch(models[key], rate / gpus, n, tpot / 1e9)
        print(
            f"{r['id']}, {r['hardware']}, {r['mode']}, {n:.0f}, {pf:.0f}, "
            f"{tpot / 1e6:.1f} / {t * 1e3:.1f} ({100 * (t * 1e9 / tpot - 1):+.0f}%)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
