#!/usr/bin/env python3
"""Speed benchmark and measurement validation of the serving simulator.

Speed (single process, one core; medians over ``--repeats`` runs):

* ``simulate_100k_s`` -- 100,000 requests of the ``chat`` preset (ShareGPT-shaped, heavy
  tailed) on Llama-3.1-8B / H100 SXM / vLLM / bf16, Poisson at 60 % of the replica's
  saturation rate. Target: <= 1 s.
* ``capacity_search_s`` -- one :func:`planner.serving.capacity.max_rate` for ``examples/chat-8b.yaml``
  with default settings and a binding SLO (TTFT p99 <= 1 s, TPOT p90 <= 15 ms, 99 %
  attainment), so the bisection runs its full course. Target: <= 0.3 s.
* ``capacity_cli_s`` -- the whole ``planner capacity`` computation (search + curve).
* ``simulate_large_batch_s`` -- 10,000 ``chat`` requests on Llama-3.1-8B / MI300X / SGLang /
  fp8 (fp8 KV, block size 1, up to 4,096 sequences), Poisson at 90 req/s: the kind of run a
  recommender repeats many times. ``simulate_overload_s``: the same at 200 req/s (above
  saturation, ~2,000 sequences in the system).
* ``kernel_first_call_s`` -- the first simulation of this process (loads the compiled event
  loop from numba's cache, or compiles it when there is none); ``kernel_first_call_cold_s`` /
  ``kernel_first_call_warm_s``: the same in a fresh process with an empty / a filled
  ``NUMBA_CACHE_DIR`` (compile vs. load).

Validation (``--validate``): predicts every serving row (modes offline, rate, server,
concurrency, static_batch, single_stream) of a benchmark CSV with the simulator and prints
the error per (mode, metric): number of rows, median absolute percentage error (MdAPE)
and median signed error. ``--params prior`` (default) uses :data:`planner.catalog.efficiency.PRIOR`;
``--params calibrated`` the bundled calibration profile.

Usage::

    python scripts/bench_serving.py                       # speed
    python scripts/bench_serving.py --validate data/benchmarks/public.csv
    python scripts/bench_serving.py --validate data/benchmarks/public.csv --params calibrated -o errors.csv
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SERVING_MODES = (
    "offline",
    "rate",
    "server",
    "interactive",
    "concurrency",
    "static_batch",
    "single_stream",
)


def bench_speed(repeats: int) -> dict:
    import numpy as np

    from planner.scenario import load_scenario
    from planner.serving import (
        build_replica,
        max_rate,
        simulate,
        steady_state,
        throughput_latency_curve,
    )
    from planner.workload import SLO, preset

    rep = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm")
    wl = preset("chat", traffic={"mean_rps": 10})
    sat = steady_state(rep, wl, 1.0).saturation_rps
    rate = 0.6 * sat
    reqs = wl.sample_requests(
        100_000, np.random.default_rng(1), rate, context_limit=rep.engine.context_limit_tokens
    )
    t = time.perf_counter()
    simulate(rep, wl, n_requests=200, rate_rps=rate)
    first_call = time.perf_counter() - t
    sim_t = []
    for _ in range(repeats):
        t = time.perf_counter()
        res = simulate(rep, reqs)
        sim_t.append(time.perf_counter() - t)
    s = res.summary()
    sc = load_scenario(ROOT / "examples" / "chat-8b.yaml")
    rep_sc = sc.build_replica()
    # a TPOT target that binds below saturation, so the search really bisects
    slo = SLO.model_validate(
        {
            "ttft": {"max_s": 1.0, "percentile": "p99"},
            "tpot": {"max_s": 0.015, "percentile": "p90"},
            "attainment": 0.99,
        }
    )
    cap_t, cli_t = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        cap = max_rate(rep_sc, sc.workload, slo)
        cap_t.append(time.perf_counter() - t)
        throughput_latency_curve(rep_sc, sc.workload, slo=slo)
        cli_t.append(time.perf_counter() - t)
    rep_l = build_replica("llama-3.1-8b", "amd-mi300x", "fp8", "sglang", kv_precision="fp8")
    chat = preset("chat")
    large = {}
    for key, r_l in (("large_batch", 90.0), ("overload", 200.0)):
        ts = []
        for _ in range(repeats):
            t = time.perf_counter()
            res_l = simulate(rep_l, chat, n_requests=10_000, rate_rps=r_l)
            ts.append(time.perf_counter() - t)
        large[f"simulate_{key}_s"] = statistics.median(ts)
        large[f"simulate_{key}_in_system_mean"] = res_l.in_system_area_s / res_l.duration_s
    return {
        "python": sys.version.split()[0],
        "machine": os.uname().machine,
        "repeats": repeats,
        "simulate_100k_s": statistics.median(sim_t),
        "simulate_100k_min_s": min(sim_t),
        "simulate_rate_rps": rate,
        "simulate_saturation_rps": sat,
        "simulate_iterations": s["iterations"],
        "simulate_batch_size_mean": s["batch_size_mean"],
        "capacity_search_s": statistics.median(cap_t),
        "capacity_search_evaluations": len(cap.evaluations),
        "capacity_max_rate_rps": cap.max_rate_rps,
        "capacity_limited_by": cap.limited_by,
        "capacity_cli_s": statistics.median(cli_t),
        **large,
        "kernel_first_call_s": first_call,
        **_first_call_cold_warm(),
    }


def _first_call_cold_warm() -> dict:
    """First-simulation time of a fresh process with an empty, then a filled numba cache."""
    import subprocess
    import tempfile

    code = (
        "import time; from planner.serving import build_replica, simulate; "
        "from planner.workload import preset; "
        "rep = build_replica('llama-3.1-8b', 'nvidia-h100-sxm', 'bf16', 'vllm'); "
        "t = time.perf_counter(); simulate(rep, preset('chat'), n_requests=200, rate_rps=5.0); "
        "print(time.perf_counter() - t)"
    )
    out = {}
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=d)
        for key in ("cold", "warm"):
            p = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
            )
            out[f"kernel_first_call_{key}_s"] = float(p.stdout.split()[-1])
    return out


def validate(csv_path: str, params_kind: str, out: str | None) -> list[dict]:
    import numpy as np
    import pandas as pd

    from planner.benchmarks import predict_serving_row, serving_row_details
    from planner.catalog import PRIOR, load_catalog

    cat = load_catalog()
    df = pd.read_csv(csv_path)
    df = df[df["mode"].isin(SERVING_MODES)]
    resolve = None
    if params_kind == "calibrated":
        from planner.catalog import resolve_params

        resolve = resolve_params
    recs = []
    t0 = time.perf_counter()
    for row in df.to_dict("records"):
        params = PRIOR
        if resolve is not None:
            fw = row["framework"] if isinstance(row["framework"], str) else None
            pr = row["precision"] if isinstance(row["precision"], str) else None
            try:
                params, _ = resolve(cat.gpu(str(row["hardware"])).id, fw, pr, catalog=cat)
            except Exception:  # noqa: BLE001 - unknown ids: the row itself says why
                params = PRIOR
        value, note = predict_serving_row(row, cat, params)
        if value is not None:
            note = serving_row_details(row, cat, params).get("note", "")
        recs.append(
            {
                "id": row["id"],
                "source": row["source"],
                "mode": row["mode"],
                "metric": row["metric"],
                "hardware": row["hardware"],
                "model": row["model"],
                "measured": row["value"],
                "predicted": value,
                "note": note,
            }
        )
    elapsed = time.perf_counter() - t0
    r = pd.DataFrame(recs)
    if out:
        r.to_csv(out, index=False)
    ok = r[r.predicted.notna()].copy()
    ok["err"] = ok.predicted / ok.measured - 1
    rows = []
    for (mode, metric), g in ok.groupby(["mode", "metric"]):
        rows.append(
            {
                "mode": mode,
                "metric": metric,
                "n": len(g),
                "mdape_pct": round(100 * float(np.median(g.err.abs())), 1),
                "median_err_pct": round(100 * float(np.median(g.err)), 1),
                "p90_ape_pct": round(100 * float(np.percentile(g.err.abs(), 90)), 1),
            }
        )
    summary = {
        "rows": len(r),
        "predicted": len(ok),
        "not_predicted": int(r.predicted.isna().sum()),
        "seconds": round(elapsed, 1),
        "params": params_kind,
    }
    print(json.dumps(summary))
    from planner.report import emit

    emit(rows, "table")
    reasons = r[r.predicted.isna()].groupby("note").size().sort_values(ascending=False)
    if len(reasons):
        print("\nnot predicted (rows: reason)")
        for why, n in reasons.items():
            print(f"{n:5d}  {why}")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--validate", metavar="CSV", default=None)
    ap.add_argument("--params", choices=("prior", "calibrated"), default="prior")
    ap.add_argument(
        "-o", "--output", default=None, help="per-row predictions (CSV) with --validate"
    )
    args = ap.parse_args(argv)
    if args.validate:
        validate(args.validate, args.params, args.output)
        return 0
    print(json.dumps(bench_speed(args.repeats), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
