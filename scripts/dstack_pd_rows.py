"""Transcribe dstack's prefill/decode ratio benchmark (gpt-oss-120b, SGLang PD on 8x H200)
into ``data/benchmarks/public_blogs_moe.csv`` (issue 30: disaggregated rows with TPOT from a
third publisher).

Source: dstackai/benchmarks @ 06c957ab51572ca18db9c1f4bb254a9eb86df4d7 (2025-09-24, PR #7
"Add PD disagg ratio benchmark"), ``comparison/pd_ratio/csv_data/results.csv`` (one row per
``vllm bench serve`` result JSON of ``comparison/pd_ratio/raw_data/``), launch commands in
``comparison/pd_ratio/README.md``, client in ``comparison/pd_ratio/scripts/run_benchmark.sh``;
blog dstackai/dstack "Benchmarking Prefill-Decode: fixed 1:3 as a strong default"
(2025-09-25). Every worker is one SGLang server of TP 2 (``--tp-size 2``, no EP, no DP
attention) with ``--disaggregation-transfer-backend nixl``; the router
(``sglang_router.launch_router --pd-disaggregation --policy round_robin``) spreads requests
over ``x`` prefill and ``y`` decode workers. The client sends 500 prompts at
``--max-concurrency C`` (closed loop) with ``--dataset-name random --random-input-len L
--random-output-len O`` and no ``--ignore-eos``: inputs are the fixed length (the printed
``total_input_tokens / completed`` is L, or 2,046.2 for L = 2,048), outputs end at the model's
EOS (e.g. 533 of 2,048 requested tokens on average), so each row states the measured means.

Three metrics per run: ``median_tpot_ms``, ``median_ttft_ms`` and ``output_throughput``
(output tok/s over all GPUs of both pools). The run with fewer completed requests than sent
(1P1D, concurrency 128, 2,048 / 32,784: 380 of 500) is not transcribed.

Usage (from the repository root; ``results.csv`` from the commit above)::

    python scripts/dstack_pd_rows.py --results results.csv            # print the rows
    python scripts/dstack_pd_rows.py --results results.csv --append   # append them
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data/benchmarks/public_blogs_moe.csv"
SOURCE = "dstack benchmark: PD disaggregation ratios, gpt-oss-120b on 8xH200 (SGLang)"
COMMIT = "06c957ab51572ca18db9c1f4bb254a9eb86df4d7"
DETAIL = (
    f"dstackai/benchmarks @ {COMMIT} comparison/pd_ratio/csv_data/results.csv (row of "
    "{file}); launch commands comparison/pd_ratio/README.md, client "
    "comparison/pd_ratio/scripts/run_benchmark.sh; blog dstackai/dstack 'Benchmarking "
    "Prefill-Decode: fixed 1:3 as a strong default' (2025-09-25)"
)
#: CSV column -> (metric, unit)
METRICS = {
    "median_tpot_ms": ("tpot_ms_median", "ms"),
    "median_ttft_ms": ("ttft_ms_median", "ms"),
    "output_throughput": ("output_tok_s_total", "tok/s"),
}
TP_PER_WORKER = 2


def rows_of(results: Path) -> list[dict[str, str]]:
    with results.open(newline="", encoding="utf-8") as fh:
        runs = list(csv.DictReader(fh))
    runs.sort(key=lambda r: (int(r["prefill"]), int(r["decode"]), int(r["isl"]),
                             int(r["osl"]), int(r["conc"])))  # fmt: skip
    out = []
    for r in runs:
        x, y, conc = int(r["prefill"]), int(r["decode"]), int(r["conc"])
        done, sent = int(r["completed"]), int(r["num_prompts"])
        if done != sent:
            continue
        mean_in = int(r["total_input_tokens"]) / done
        mean_out = int(r["total_output_tokens"]) / done
        isl, osl = int(r["isl"]), int(r["osl"])
        p_gpus, d_gpus = x * TP_PER_WORKER, y * TP_PER_WORKER
        for col, (metric, unit) in METRICS.items():
            value = float(r[col])
            notes = (
                f"layout_unsupported: disaggregated prefill/decode ({p_gpus} prefill + {d_gpus} "
                f"decode GPUs, {x}P/{y}D workers); prefill TP={TP_PER_WORKER} EP=1 "
                f"DP-attention=false x {p_gpus} GPUs; decode TP={TP_PER_WORKER} EP=1 "
                f"DP-attention=false x {d_gpus} GPUs; {col} {r[col]} as printed "
                f"(output_throughput: generated tok/s over all {p_gpus + d_gpus} GPUs); "
                f"client vllm bench serve --backend vllm --endpoint /v1/completions "
                f"--dataset-name random --num-prompts {sent} --random-input-len {isl} "
                f"--random-output-len {osl} --max-concurrency {conc}, no --ignore-eos; "
                f"mean input {mean_in:.1f} tokens; mean generated {mean_out:.1f} of {osl} "
                f"requested tokens (total_input_tokens {r['total_input_tokens']}, "
                f"total_output_tokens {r['total_output_tokens']}, completed {done}); "
                f"duration {float(r['duration']):.1f} s; run date {r['date']}; workers: SGLang "
                f"launch_server --tp-size {TP_PER_WORKER} --disaggregation-mode prefill|decode "
                "--disaggregation-transfer-backend nixl, router sglang_router.launch_router "
                "--pd-disaggregation --policy round_robin; model openai/gpt-oss-120b "
                "(MXFP4 MoE weights)"
            )
            out.append(
                {
                    "source": SOURCE,
                    "source_detail": DETAIL.format(file=r["source_file"]),
                    "as_of": "2025-09-24",
                    "hardware": "nvidia-h200-sxm",
                    "n_gpus": str(p_gpus + d_gpus),
                    "model": "gpt-oss-120b",
                    "precision": "mxfp4",
                    "framework": "sglang",
                    "framework_version": (
                        "lmsysorg/sglang:latest of September 2025 (release not stated) | "
                        "SGLang PD disaggregation with NIXL"
                    ),
                    "mode": "concurrency",
                    "isl": str(isl) if abs(mean_in - isl) < 0.5 else "",
                    "concurrency": str(conc),
                    "request_rate": "inf",
                    "metric": metric,
                    "value": f"{value:.6g}",
                    "unit": unit,
                    "notes": notes,
                }
            )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", required=True, type=Path, help="results.csv of the commit")
    ap.add_argument("--append", action="store_true", help=f"append to {OUT.name}")
    a = ap.parse_args(argv)
    if not a.results.is_file():
        print(f"error: no file {a.results}", file=sys.stderr)
        return 2
    with OUT.open(newline="", encoding="utf-8") as fh:
        rd = csv.DictReader(fh)
        cols, have = rd.fieldnames or [], list(rd)
    if any(r["source"] == SOURCE for r in have):
        print(f"error: {OUT.name} already has rows of {SOURCE!r}", file=sys.stderr)
        return 2
    new = [{c: "" for c in cols} | r | {"id": f"dspd-{i:04d}"}
           for i, r in enumerate(rows_of(a.results), 1)]  # fmt: skip
    if not a.append:
        csv.DictWriter(sys.stdout, cols).writerows(new)
        return 0
    with OUT.open("a", newline="", encoding="utf-8") as fh:
        csv.DictWriter(fh, cols).writerows(new)
    print(f"appended {len(new)} rows to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
