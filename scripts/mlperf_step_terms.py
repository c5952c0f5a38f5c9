"""Where the planner's large mixed step of an MLPerf v5.1 NVIDIA Llama-2-70B run goes, term by
term, and the GEMM rate each run implies, against the TensorRT-LLM perf-overview rows the
same profile node is fitted on (docs/changes/2026-12-07e/mlpstep.md). In-sample diagnosis, nothing fitted.

For each MLPerf run (data/benchmarks/public_mlperf51_nvidia.csv; one per GPU and scenario,
the first system of each): the planner's step at the run's own batch
(:func:`mlperf_step_at_batch.step_at_run_batch`: Little's-law sequences in flight plus the
prompt tokens its rate brings in a step), split into GEMM, attention, overhead, and the
GEMM rate [TFLOP/s] that the run's measured mean TPOT leaves for the GEMMs once the
planner's own attention and overhead terms are taken off (:func:`implied_gemm_rate`).

For each perf-overview TP1 offline row of the same node (trtllm-bench, the bundled
profile's fit rows): the predicted / measured throughput, the average step's terms at the
planner's batch, and the GEMM rate it implies the same way, with the predicted average step
scaled by predicted / measured throughput (the cycle time the row measured). Rows whose
step is GEMM-bound (long prompts, 2048/128 and 5000/500) pin the node's GEMM rate.

What-ifs (same step, one term changed): ``seq_overhead_s`` = 0 (the per-sequence host cost
times the batch).

Usage: PYTHONPATH=$PWD python scripts/mlperf_step_terms.py
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from mlperf_step_at_batch import _LOG, ROWS, step_at_run_batch  # noqa: E402

from planner.catalog import load_catalog  # noqa: E402
from planner.catalog.profile import resolve_params  # noqa: E402
from planner.engine.step import step_model  # noqa: E402
from planner.workload.presets import openorca_lengths  # noqa: E402

#: the perf-overview rows compared (TP1 offline, same GPU and format as the MLPerf runs)
PERF_OVERVIEW = (
    ("data/benchmarks/public_nvidia.csv", "TensorRT-LLM perf-overview (v1.0 data)"),
    ("data/benchmarks/public.csv", "TensorRT-LLM perf-overview (v0.17 data)"),
)


def implied_gemm_rate(matmul_flops: float, step_s: float, attn_s: float, other_s: float) -> float:
    """GEMM rate [FLOP/s] a measured step implies: ``matmul_flops / (step_s - attn_s -
    other_s)``, the step's matmul FLOPs over the time its non-GEMM terms leave (inf when
    they leave none).

    Parameters
    ----------
    matmul_flops : the step's matmul FLOPs [FLOP]
    step_s : the measured step [s]
    attn_s : the planner's attention term of that step [s]
    other_s : the planner's overhead and communication terms [s]
    """
    left = step_s - attn_s - other_s
    return matmul_flops / left if left > 0 else float("inf")


def _node(cat, gpu: str, prec: str):
    p, _ = resolve_params(gpu, "trtllm", prec, catalog=cat, family="dense")
    return p


def mlperf_terms(cat) -> list[dict]:
    """One record per (GPU, scenario) of the MLPerf v5.1 NVIDIA rows (first system each)."""
    i, o = openorca_lengths()
    isl, osl = i.mean_tokens(), o.mean_tokens()
    out, seen = [], set()
    for r in csv.DictReader(ROWS.open()):
        got = {k: re.search(p, r["notes"]) for k, p in _LOG.items()}
        key = (r["hardware"], r["mode"])
        if not all(got.values()) or key in seen:
            continue
        seen.add(key)
        rate, lat, tpot = (float(got[k].group(1)) for k in ("rate", "latency_ns", "tpot_ns"))
        gpus = float(r["n_gpus"])
        p = _node(cat, r["hardware"], r["precision"])
        sm = step_model("llama-2-70b", r["hardware"], r["precision"], "fp8", 1, 1, p, cat)
        n = rate * lat / 1e9 / gpus
        t, pf = step_at_run_batch(sm, rate / gpus, n, tpot / 1e9)
        kv = n * (isl + osl / 2) + pf * isl / 2
        b = sm.step(n + pf, n + 1, n + 1, kv, kv)
        sm0 = step_model(
            "llama-2-70b",
            r["hardware"],
            r["precision"],
            "fp8",
            1,
            1,
            p.model_copy(update={"seq_overhead_s": 0.0}),
            cat,
        )
        t0, _ = step_at_run_batch(sm0, rate / gpus, n, tpot / 1e9)
        out.append(
            {
                "id": r["id"],
                "gpu": r["hardware"],
                "what": r["mode"],
                "seqs": n,
                "tokens": n + pf,
                "measured_ms": tpot / 1e6,
                "step_ms": t * 1e3,
                "gemm_ms": b.t_gemm_s * 1e3,
                "attn_ms": b.t_attn_s * 1e3,
                "over_ms": (b.t_overhead_s + b.t_comm_s) * 1e3,
                "seq_over_ms": p.seq_overhead_s * (n + 1) * 1e3,
                "planner_tflops": b.matmul_flops / b.t_gemm_s / 1e12,
                "implied_tflops": implied_gemm_rate(
                    b.matmul_flops, tpot / 1e9, b.t_attn_s, b.t_overhead_s + b.t_comm_s
                )
                / 1e12,
                "peak_tflops": sm.peak_flops / 1e12,
                "no_seq_over_ms": t0 * 1e3,
            }
        )
    return out


def perf_overview_terms(cat, gpus: dict) -> list[dict]:
    """One record per perf-overview TP1 offline row of ``gpus`` ({gpu: precision})."""
    import planner.benchmarks.step_rows as sr

    seen: dict = {}
    orig = sr.offline_throughput

    def spy(sm, isl, osl, B, budget, *a):
        res = orig(sm, isl, osl, B, budget, *a)
        seen["last"] = (sm, isl, osl, res[1])
        return res

    out = []
    sr.offline_throughput = spy
    try:
        for path, source in PERF_OVERVIEW:
            for r in csv.DictReader((ROOT / path).open()):
                prec = "fp4" if r["precision"] == "nvfp4" else r["precision"]
                if r["source"] != source or r["tp"] != "1" or gpus.get(r["hardware"]) != prec:
                    continue
                if "70b" not in r["model"] or not r["metric"].startswith("output_tok"):
                    continue
                f, _, _ = sr.row_predictor(r, cat)
                if f is None:
                    continue
                pred = f(_node(cat, r["hardware"], prec))
                sm, isl, osl, n = seen["last"]
                pf = n * isl / osl  # prompt tokens a step, averaged over the cycle
                ctx = n * (isl + osl / 2)
                b = sm.step(n + pf, n + 1, n, ctx, ctx)
                ratio = pred / float(r["value"])
                out.append(
                    {
                        "id": r["id"],
                        "gpu": r["hardware"],
                        "what": f"{isl:.0f}/{osl:.0f}",
                        "seqs": n,
                        "tokens": n + pf,
                        "pred_vs_meas": ratio - 1,
                        "step_ms": b.time_s * 1e3,
                        "gemm_ms": b.t_gemm_s * 1e3,
                        "attn_ms": b.t_attn_s * 1e3,
                        "over_ms": (b.t_overhead_s + b.t_comm_s) * 1e3,
                        "planner_tflops": b.matmul_flops / b.t_gemm_s / 1e12,
                        "implied_tflops": implied_gemm_rate(
                            b.matmul_flops,
                            b.time_s * ratio,
                            b.t_attn_s,
                            b.t_overhead_s + b.t_comm_s,
                        )
                        / 1e12,
                        "gemm_share": b.t_gemm_s / b.time_s,
                    }
                )
    finally:
        sr.offline_throughput = orig
    return out


def main() -> int:
    cat = load_catalog()
    print("MLPerf v5.1 NVIDIA Llama-2-70B, the planner's step at each run's own batch (in sample)")
    print(
        "id, GPU, scenario, seqs, tokens, measured TPOT / planner step [ms], GEMM / attention /"
        " overhead [ms] (seq_overhead x seqs), GEMM TFLOP/s planner / implied (peak), step"
        " without seq_overhead [ms]"
    )
    recs = mlperf_terms(cat)
    for x in recs:
        print(
            f"{x['id']}, {x['gpu']}, {x['what']}, {x['seqs']:.0f}, {x['tokens']:.0f}, "
            f"{x['measured_ms']:.1f} / {x['step_ms']:.1f} ({x['step_ms'] / x['measured_ms'] - 1:+.0%}), "
            f"{x['gemm_ms']:.1f} / {x['attn_ms']:.1f} / {x['over_ms']:.1f} ({x['seq_over_ms']:.1f}), "
            f"{x['planner_tflops']:.0f} / {x['implied_tflops']:.0f} ({x['peak_tflops']:.0f}), "
            f"{x['no_seq_over_ms']:.1f} ({x['no_seq_over_ms'] / x['measured_ms'] - 1:+.0%})"
        )
    print()
    print("TensorRT-LLM perf-overview TP1 offline rows of the same nodes (fit rows, in sample)")
    print(
        "id, GPU, ISL/OSL, seqs, tokens a step, predicted / measured - 1, average step [ms], "
        "GEMM / attention / overhead [ms], GEMM share, GEMM TFLOP/s planner / implied"
    )
    for x in perf_overview_terms(cat, {"nvidia-h200-sxm": "fp8", "nvidia-b200": "fp4"}):
        print(
            f"{x['id']}, {x['gpu']}, {x['what']}, {x['seqs']:.0f}, {x['tokens']:.0f}, "
            f"{x['pred_vs_meas']:+.1%}, {x['step_ms']:.1f}, {x['gemm_ms']:.1f} / "
            f"{x['attn_ms']:.1f} / {x['over_ms']:.1f}, {x['gemm_share']:.0%}, "
            f"{x['planner_tflops']:.0f} / {x['implied_tflops']:.0f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
