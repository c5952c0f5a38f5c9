#!/usr/bin/env python3
"""The serving simulator against the reference engine's serving runs on the H200.

For every serving run in ``data/benchmarks/reference_h200_serving.csv`` (Llama-3.1-8B bf16,
continuous batching, chunked prefill with a 2,048-token budget, max_num_seqs 256, paged KV
blocks of 16, no prefix caching; ``bench/serve_ref.py``), the same requests
(``bench/traces/<scenario>_rate<r>.csv``: arrival times, prompt and answer lengths) are
simulated with the same engine settings and a profile fitted on the reference engine's STEP
rows only (``data/benchmarks/reference_h200.csv``: the serving runs are never fitted), and the
two are put side by side: output throughput, TTFT p50/p99, TPOT p50/p99, E2E p99.

Targets (issue 10): throughput within 5 %, TPOT p50 within 10 %, TTFT and the p99s within 15 %
below 80 % of saturation.

Usage::

    python scripts/serving_comparison.py              # print the table
    python scripts/serving_comparison.py --write      # also replace its section of docs/accuracy.md
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.calibration import calibrate  # noqa: E402
from planner.calibration.fit import fit_serving_terms  # noqa: E402
from planner.calibration.iterations import read_iteration_log  # noqa: E402
from planner.catalog import load_catalog, resolve_params  # noqa: E402
from planner.serving import build_replica, simulate, steady_state  # noqa: E402
from planner.workload import Workload  # noqa: E402

GPU, PREC, FW = "nvidia-h200-sxm", "bf16", "pytorch"
MODEL_NAMES = {
    "llama-3.2-1b": "Llama-3.2-1B",
    "llama-3.1-8b": "Llama-3.1-8B",
    "qwen2.5-14b": "Qwen2.5-14B",
}
ENGINE = dict(
    max_num_seqs=256,
    max_num_batched_tokens=2048,
    block_size=16,
    prefix_caching=False,
    chunked_prefill=True,
)
METRICS = (
    ("output_tok_s_total", "throughput", "output_tok_s", 1.0),
    ("ttft_ms_median", "TTFT p50", "ttft_p50_s", 1e3),
    ("ttft_ms_p99", "TTFT p99", "ttft_p99_s", 1e3),
    ("tpot_ms_median", "TPOT p50", "tpot_p50_s", 1e3),
    ("tpot_ms_p99", "TPOT p99", "tpot_p99_s", 1e3),
    ("e2e_ms_p99", "E2E p99", "e2e_p99_s", 1e3),
)
TARGET = {"throughput": 5.0, "TPOT p50": 10.0}  # others: 15 %
BEGIN, END = "<!-- serving-comparison:begin -->", "<!-- serving-comparison:end -->"
STEP_ROWS = ROOT / "data" / "benchmarks" / "reference_h200.csv"
LOG = ROOT / "data" / "benchmarks" / "serving_raw" / "reference_h200_iterations.csv.gz"


def measured_runs() -> dict[tuple[str, str, str], dict[str, float]]:
    """(model, scenario, rate) -> metric -> measured value."""
    runs: dict[tuple[str, str, str], dict[str, float]] = {}
    path = ROOT / "data" / "benchmarks" / "reference_h200_serving.csv"
    with path.open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            m = re.search(r"bench/traces/(\w+)_rate([\d.]+)\.csv", r["notes"])
            if not m:
                continue
            key = (r["model"], m.group(1), m.group(2))
            runs.setdefault(key, {})[r["metric"]] = float(r["value"])
    return runs


def simulate_run(rep, scen: str, rate: str) -> tuple[dict[str, float], float]:
    trace = ROOT / "bench" / "traces" / f"{scen}_rate{rate}.csv"
    wl = Workload.model_validate(
        {
            "traffic": {"arrival": "trace", "trace_path": str(trace)},
            "input_tokens": {"kind": "trace"},
            "output_tokens": {"kind": "trace"},
        }
    )
    n = sum(1 for _ in trace.open()) - 1
    s = simulate(rep, wl, n_requests=n, rate_rps=None).summary()
    return s, float(rate) / steady_state(rep, wl, 1.0).saturation_rps


def median(v: list[float]) -> float:
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--write", action="store_true", help="replace the section in docs/accuracy.md")
    args = ap.parse_args()
    cat = load_catalog()
    step_prof, _ = calibrate([STEP_ROWS], cat)
    log = read_iteration_log(LOG)
    runs = measured_runs()
    models = [m for m in MODEL_NAMES if any(k[0] == m for k in runs)]
    # profiles: step rows only; + serving terms from every log; + from the OTHER models' logs
    profiles = {"step": step_prof, "all": fit_serving_terms(step_prof, [log], cat)}
    fits = {}
    for m in models:
        other = log[log.model != m]
        profiles[m] = fit_serving_terms(step_prof, [other], cat)
        fits[m] = next(n.serving_fit for n in profiles[m].nodes if n.serving_fit)
    reps = {}
    for key in ("step", "all", *models):
        params, prov = resolve_params(GPU, FW, PREC, catalog=cat, profile=profiles[key])
        for m in models:
            reps[key, m] = build_replica(
                m, GPU, PREC, FW, params=params, params_source=prov, catalog=cat, **ENGINE
            )
    rows, errs = [], {}
    for (model, scen, rate), meas in sorted(
        runs.items(), key=lambda kv: (models.index(kv[0][0]), kv[0][1], float(kv[0][2]))
    ):
        sims = {k: simulate_run(reps[k, model], scen, rate) for k in ("step", "all", model)}
        load = sims[model][1]
        row = {
            "model": MODEL_NAMES.get(model, model),
            "scenario": scen,
            "rate_rps": rate,
            "load": f"{load:.0%}",
        }
        for key, name, skey, scale in METRICS:
            mv = meas.get(key)
            if mv is None:
                continue
            e = {k: (sims[k][0][skey] * scale / mv - 1) * 100 for k in sims}
            sv = sims[model][0][skey] * scale
            row[name] = (
                f"{mv:,.0f} / {sv:,.0f} ({e[model]:+.0f}%)"
                if scale == 1.0 or mv > 100
                else f"{mv:.1f} / {sv:.1f} ({e[model]:+.0f}%)"
            )
            if load < 0.8:
                for k, v in e.items():
                    errs.setdefault((k if k in ("step", "all") else "oos", name), []).append(abs(v))
        rows.append(row)
    cols = ["model", "scenario", "rate_rps", "load", *[m[1] for m in METRICS]]
    lines = [
        "## Serving runs on the H200: simulator vs the reference engine",
        "",
        "Llama-3.2-1B, Llama-3.1-8B and Qwen2.5-14B, bf16, one H200, `bench/serve_ref.py` "
        "(continuous batching, "
        "chunked prefill, token budget 2,048, max_num_seqs 256, KV blocks of 16, no prefix "
        "caching; the same requests, `bench/traces/`). Simulated with `planner.serving.simulate` "
        "on those traces and engine settings. The step model is fitted on the reference engine's "
        "step rows only (`data/benchmarks/reference_h200.csv`); the serving terms (host time per "
        "iteration and per sequence, eager dispatch, the longest-sequence attention term; "
        "`planner.calibration.iterations`) are fitted on the iteration logs of the OTHER models' "
        "serving runs, so every simulated number below is out of sample: the serving summaries "
        "are never fitted. Each cell: measured / simulated (error). TTFT, TPOT, E2E in ms; "
        "throughput in output tok/s; load = rate / the analytic saturation rate. Regenerate with "
        "`python scripts/serving_comparison.py --write`.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for r in rows:
        lines.append("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    n_runs = len(errs.get(("oos", "throughput"), []))
    lines += [
        "",
        f"Median absolute error over the {n_runs} runs below 80 % of saturation: out of sample "
        "(serving terms from the other models' logs) / in sample (serving terms from every log) / "
        "the step model alone (no serving terms, as before this comparison existed):",
        "",
        "| metric | out of sample | in sample | step model alone | target |",
        "|---|---|---|---|---|",
    ]
    for _, name, _, _ in METRICS:
        cells = [f"{median(errs[k, name]):.1f}%" for k in ("oos", "all", "step")]
        lines.append(f"| {name} | {' | '.join(cells)} | {TARGET.get(name, 15.0):g}% |")
    lines += ["", "Serving terms used for each model (fitted on the other models' logs):", ""]
    for m in models:
        lines.append(f"* {MODEL_NAMES.get(m, m)}: {fits[m]}")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        acc = ROOT / "docs" / "accuracy.md"
        doc = acc.read_text(encoding="utf-8")
        block = f"{BEGIN}\n{text}{END}\n"
        if BEGIN in doc:
            doc = doc[: doc.index(BEGIN)] + block + doc[doc.index(END) + len(END) + 1 :]
        else:
            doc = doc.rstrip("\n") + "\n\n" + block
        acc.write_text(doc, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
