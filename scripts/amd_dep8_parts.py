"""The SGLang cookbook's DEP8 run on 8x MI300X (issue 29), term by term: the planner's decode
step of DeepSeek-V3 at the run's operating point, DEP8 against TP8, beside the measured TPOT.

The run (``data/benchmarks/public_amd_dep_agg.csv``, sgam-0001..): SGLang 0.5.7,
``--tp 8 --ep 8 --dp 8 --enable-dp-attention``, 100 clients, ShareGPT (means 301.7 in /
188.4 out), 463.80 output tok/s, median TPOT 152.00 ms. Not a schema row (ShareGPT lengths),
so the what-if takes the means. The bundled profile was never fitted on this source: every
number here is held out. The script captures the replica the serving simulator builds for
the what-if row and evaluates one decode step at ``n`` sequences per attention rank and the
mean decoding context (302 + 188 / 2 = 396 tokens), split as
:meth:`planner.engine.step.StepModel.step` does, with the engine's host time.

Usage (repository root)::

    PYTHONPATH=$PWD python scripts/amd_dep8_parts.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.benchmarks import serving_rows  # noqa: E402
from planner.benchmarks.predict import Predictor  # noqa: E402
from planner.catalog import DATA_DIR, load_catalog  # noqa: E402
from planner.engine.phases import decode_step  # noqa: E402

CSV = DATA_DIR / "benchmarks" / "public_amd_dep_agg.csv"
CTX = 302 + 188 / 2  # mean decoding context [tokens]


def _row(rid: str, **upd) -> dict:
    import csv

    with CSV.open(encoding="utf-8") as f:
        (r,) = [r for r in csv.DictReader(f) if r["id"] == rid]
    r.update(isl="302", osl="188", notes="1000 requests; fixed lengths at the run's means", **upd)
    return r


def parts(label: str, row: dict, catalog) -> list[dict]:
    reps = []
    build = serving_rows.build_replica

    def keep(*a, **kw):
        rep = build(*a, **kw)
        reps.append(rep)
        return rep

    serving_rows.build_replica = keep
    try:
        (out,) = Predictor(catalog, CSV.parent, None).predict_rows([row])
    finally:
        serving_rows.build_replica = build
    rep = reps[0]
    sm, eng = rep.sm, rep.engine
    res = []
    for n in (100.0,):  # the run's 100 clients, 12.5 a rank under DEP8
        b = decode_step(sm, n, CTX)
        host = eng.host_time_s(n)
        gpu = float(b.time_s)
        res.append({
            "layout": label, "predicted_out_tok_s": out["predicted"], "seqs": n,
            "gemm_ms": 1e3 * float(b.t_gemm_s), "attn_ms": 1e3 * float(b.t_attn_s),
            "comm_ms": 1e3 * float(b.t_comm_s), "fixed_ms": 1e3 * float(b.t_overhead_s),
            "gpu_ms": 1e3 * gpu, "host_ms": 1e3 * host,
            "step_ms": 1e3 * (max(gpu, host) if eng.host_overlap else gpu + host),
            "weight_GB": float(b.weight_bytes) / 1e9, "kv_GB": float(b.kv_read_bytes) / 1e9,
            "comm_MB": float(b.comm_bytes) / 1e6,
            "eager_layer_us": 1e6 * float(sm.params.eager_layer_s),
            "graph_max": sm.spec_graph_max, "graphs": sm.graph_sizes[:6],
        })  # fmt: skip
    return res


def main() -> int:
    catalog = load_catalog()
    rows = parts("DEP8", _row("sgam-0001"), catalog)
    rows += parts("TP8", _row("sgam-0001", tp="8", ep="1", attention_dp="1", moe_tp="8"), catalog)
    for r in rows:
        print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
