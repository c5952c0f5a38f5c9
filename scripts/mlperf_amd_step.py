"""Why the AMD MLPerf Llama-2-70B Server / Interactive rows sit 16-60% low: the planner's step
at each AMD run's own batch, term by term, with the profile's node and with the GEMM terms of
the harness's own hipBLASLt tuning file, and the rows that node was fitted on
(docs/changes/2026-12-07f/mlpamd.md). In-sample diagnosis, nothing fitted.

Each run (first AMD system of each GPU and scenario) is read from its own
``mlperf_log_summary.txt`` (:data:`RUNS`): completed samples per second, mean latency and mean
time per output token. The batch is the in-flight count by Little's law, the prompt tokens a
step the rate x the step x the OpenOrca mean prompt
(:func:`mlperf_step_at_batch.step_at_run_batch`). The step is the one
:func:`planner.benchmarks.mlperf_latency.scenario_replica` builds for the row (its GPU, engine,
precision, layout and stated engine tags); ``harness GEMM`` takes the kernel timings of
``data/mlperf_harness_gemm.yaml`` where the row's engine config names a tuning file (MI325X)
or its harness image patches in AITER's tuning lines (MI355X v6.0).

Then the fit domain of the node every AMD MLPerf row resolves to: the tensor-parallel sizes,
models and GPUs of the benchmark rows of its sources, GPU, engine and precision
(:func:`planner.benchmarks.mlperf_fit_domain.node_rows`).

Usage: PYTHONPATH=$PWD python scripts/mlperf_amd_step.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from mlperf_step_at_batch import step_at_run_batch  # noqa: E402

from planner.benchmarks.io import load_measurements  # noqa: E402
from planner.benchmarks.mlperf_fit_domain import fit_domain_note  # noqa: E402
from planner.benchmarks.mlperf_latency import scenario_replica  # noqa: E402
from planner.calibration.fit import public_files_default  # noqa: E402
from planner.catalog import load_catalog  # noqa: E402
from planner.catalog.profile import load_profile  # noqa: E402
from planner.workload.presets import openorca_lengths  # noqa: E402

_V51 = "mlcommons/inference_results_v5.1 @ 965182b0 closed/AMD/results/"
_V60 = "gbeezybez/inference_results_v6.0 @ 232fbf9 (copy of mlcommons/inference_results_v6.0) closed/AMD/results/"
#: (row id, GPUs, completed samples/s, mean latency [s], mean time per output token [s], log):
#: "Completed samples per second", "Mean latency (ns)", "Mean Time to / per Output Token (ns)"
#: of each run's performance/run_1/mlperf_log_summary.txt
RUNS = (
    ("mlp51b-0020", 8, 61.24, 10.670346921, 0.035266243,
     _V51 + "8xMI325X_2xEPYC_9575F_2/llama2-70b-99/Interactive"),
    ("mlp51-0003", 8, 29.41, 9.716742157, 0.032102490,
     _V51 + "8xMI300X_2xEPYC_9575F/llama2-70b-99/Interactive"),
    ("mlp51-0006", 8, 106.28, 44.905421880, 0.148690311,
     _V51 + "8xMI325X_2xEPYC_9575F_1/llama2-70b-99/Server"),
    ("mlp51-0002", 8, 81.68, 43.579602295, 0.144594078,
     _V51 + "8xMI300X_2xEPYC_9575F/llama2-70b-99/Server"),
    ("mlp60-0003", 8, 260.10, 10.121546184, 0.034999429,
     _V60 + "8xMI355X_2xEPYC_9575F/llama2-70b-99/Interactive"),
    ("mlp60-0002", 8, 354.41, 41.319947501, 0.144435776,
     _V60 + "8xMI355X_2xEPYC_9575F/llama2-70b-99/Server"),
)  # fmt: skip


def main() -> int:
    cat = load_catalog()
    prof = load_profile()
    df = load_measurements(public_files_default(), cat)
    i, o = openorca_lengths()
    isl, osl = i.mean_tokens(), o.mean_tokens()
    print("id, GPU, scenario, GEMM terms, in flight a GPU, prompt tokens a step, measured mean "
          "TPOT / planner step [ms], planner GEMM / attention / overhead [ms]")  # fmt: skip
    notes = {}
    for rid, gpus, qps, lat_s, tpot_s, _ in RUNS:
        src = df[df["id"] == rid].iloc[0].to_dict()
        row = {k: "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
               for k, v in src.items()}  # fmt: skip
        for hg in (False, True):
            rep, _, _, prov, r = scenario_replica(row, cat, prof, harness_gemm=hg)
            if hg and "hipBLASLt" not in prov:
                continue
            n = qps * lat_s / gpus
            t, pf = step_at_run_batch(rep.sm, qps / gpus, n, tpot_s)
            kv = n * (isl + osl / 2) + pf * isl / 2
            b = rep.sm.step(n + pf, n + 1, n + 1, kv, kv)
            print(
                f"{rid}, {r['hardware']}, {r['mode']}, {'harness' if hg else 'profile'}, "
                f"{n:.0f}, {pf:.0f}, {tpot_s * 1e3:.1f} / {t * 1e3:.1f} "
                f"({100 * (t / tpot_s - 1):+.0f}%), {float(b.t_gemm_s) * 1e3:.1f} / "
                f"{float(b.t_attn_s) * 1e3:.1f} / {float(b.t_overhead_s) * 1e3:.1f}"
            )
            if not hg:
                notes[prov.split(";")[0]] = fit_domain_note(df, prof, row, cat)
    print("\nThe node each row resolves to, and the rows it was fitted on:")
    for prov, note in notes.items():
        print(f"- {prov}: {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
