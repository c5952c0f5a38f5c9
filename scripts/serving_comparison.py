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
from planner.catalog import load_catalog, resolve_params  # noqa: E402
from planner.serving import build_replica, simulate, steady_state  # noqa: E402
from planner.workload import Workload  # noqa: E402

GPU, MODEL, PREC, FW = "nvidia-h200-sxm", "llama-3.1-8b", "bf16", "pytorch"
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


def measured_runs() -> dict[tuple[str, str], dict[str, float]]:
    runs: dict[tuple[str, str], dict[str, float]] = {}
    path = ROOT / "data" / "benchmarks" / "reference_h200_serving.csv"
    with path.open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            m = re.search(r"bench/traces/(\w+)_rate([\d.]+)\.csv", r["notes"])
            if not m:
                continue
            runs.setdefault((m.group(1), m.group(2)), {})[r["metric"]] = float(r["value"])
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--write", action="store_true", help="replace the section in docs/accuracy.md")
    args = ap.parse_args()
    cat = load_catalog()
    prof, _ = calibrate([ROOT / "data" / "benchmarks" / "reference_h200.csv"], cat)
    params, prov = resolve_params(GPU, FW, PREC, catalog=cat, profile=prof)
    rep = build_replica(
        MODEL, GPU, PREC, FW, params=params, params_source=prov, catalog=cat, **ENGINE
    )
    rows, errs = [], {}
    for (scen, rate), meas in sorted(
        measured_runs().items(), key=lambda kv: (kv[0][0], float(kv[0][1]))
    ):
        trace = ROOT / "bench" / "traces" / f"{scen}_rate{rate}.csv"
        wl = Workload.model_validate(
            {
                "traffic": {"arrival": "trace", "trace_path": str(trace)},
                "input_tokens": {"kind": "trace"},
                "output_tokens": {"kind": "trace"},
            }
        )
        n = sum(1 for _ in trace.open()) - 1
        res = simulate(rep, wl, n_requests=n, rate_rps=None)
        s = res.summary()
        sat = steady_state(rep, wl, 1.0).saturation_rps
        load = float(rate) / sat
        row = {"scenario": scen, "rate_rps": rate, "load": f"{load:.0%}"}
        for key, name, skey, scale in METRICS:
            mv, sv = meas.get(key), s[skey] * scale
            if mv is None:
                continue
            e = (sv / mv - 1) * 100
            row[name] = (
                f"{mv:,.0f} / {sv:,.0f} ({e:+.0f}%)"
                if scale == 1.0 or mv > 100
                else (f"{mv:.1f} / {sv:.1f} ({e:+.0f}%)")
            )
            if load < 0.8:
                errs.setdefault(name, []).append(abs(e))
        rows.append(row)
    cols = ["scenario", "rate_rps", "load", *[m[1] for m in METRICS]]
    lines = [
        "## Serving runs on the H200: simulator vs the reference engine",
        "",
        f"Llama-3.1-8B bf16 on one H200, `bench/serve_ref.py` (continuous batching, chunked prefill, "
        f"token budget 2,048, max_num_seqs 256, KV blocks of 16, no prefix caching; the same "
        f"requests, `bench/traces/`). Simulated with `planner.serving.simulate` on those traces and "
        f"the engine settings, parameters {prov} fitted on the reference engine's step rows only "
        f"(`data/benchmarks/reference_h200.csv`; the serving runs are never fitted). Each cell: "
        f"measured / simulated (error). TTFT, TPOT, E2E in ms; throughput in output tok/s; load = "
        f"rate / the analytic saturation rate. Regenerate with `python scripts/serving_comparison.py --write`.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for r in rows:
        lines.append("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    lines += ["", "Median absolute error below 80 % of saturation (target):", ""]
    for name, v in errs.items():
        v = sorted(v)
        med = v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
        lines.append(
            f"* {name}: {med:.1f}% over {len(v)} runs (target {TARGET.get(name, 15.0):g}%)"
        )
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
