"""The MoE backend of InferenceX's single-node TensorRT-LLM B200 NVFP4 attention-DP rows, read
from the harness scripts that launched them (s11-trtdep, docs/docs/changes/2026-12-08/trtdep.md).

SemiAnalysisAI/InferenceX ``benchmarks/dsr1_fp4_b200_trt.sh`` (from 6eecc0e66, 2026-02-03,
"[NV] dsr1 fp4 b200 trt agg update", PR #620; later ``benchmarks/single_node/fixed_seq_len/``)
and ``dsr1_fp4_b200_trt_mtp.sh`` (from b0c4ed21b, 2026-01-22) both set::

    if [[ "$DP_ATTENTION" == "true" ]]; then
        MOE_BACKEND="CUTLASS"

and write it to the extra LLM-API YAML (``moe_config: backend: $MOE_BACKEND``). Before
6eecc0e66 the non-MTP script chose by ISL / OSL / concurrency (CUTLASS at TP4 1k/1k and 1k/8k
from 256 clients and 8k/1k above 32; TP8 the same), so rows run before 2026-02-03 are left
alone; rows of 2026-02-03 itself are read as the new rule (the sweep of the PR that
introduced it; the old rule gives the same backend for every DEP4 row and the DEP8 8k/1k one,
and TRTLLM for DEP8 1k/1k at 128 clients).

Each row of ``data/benchmarks/public_inferencex_history.csv`` with framework trtllm, precision
nvfp4, hardware nvidia-b200, a single-node sweep, DP-attention=true and a run date on or after
2026-02-03 gets the note ``moe backend CUTLASS (...)``, which
:func:`planner.benchmarks.schema.moe_backend_setting` reads. Running twice changes nothing.

Usage: ``python scripts/annotate_moe_backend.py [--check]``
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "data" / "benchmarks" / "public_inferencex_history.csv"
TAG = "moe backend CUTLASS ("
NOTE = (
    "moe backend CUTLASS (SemiAnalysisAI/InferenceX benchmarks/dsr1_fp4_b200_trt.sh @ "
    "6eecc0e66 (2026-02-03) and dsr1_fp4_b200_trt_mtp.sh @ b0c4ed21b (2026-01-22) and their "
    "successors: DP_ATTENTION=true sets MOE_BACKEND=CUTLASS, written as moe_config backend)"
)
FIRST = "2026-02-03"


def wanted(r: dict) -> bool:
    """Whether a history row ran the script's DP-attention branch after the rule existed."""
    n = r.get("notes") or ""
    return (
        r.get("framework") == "trtllm"
        and r.get("precision") == "nvfp4"
        and r.get("hardware") == "nvidia-b200"
        and "single-node" in n
        and "DP-attention=true" in n
        and (r.get("as_of") or "") >= FIRST
    )


def annotate(rows: list[dict]) -> int:
    """Append :data:`NOTE` to every wanted row without it; returns how many changed."""
    k = 0
    for r in rows:
        if wanted(r) and TAG not in (r.get("notes") or ""):
            r["notes"] = f"{r['notes']}; {NOTE}"
            k += 1
    return k


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only count the rows to annotate")
    a = ap.parse_args(argv)
    with FILE.open(newline="") as f:
        rd = csv.DictReader(f)
        fields, rows = rd.fieldnames, list(rd)
    k = annotate(rows)
    print(f"{k} rows to annotate" if a.check else f"{k} rows annotated")
    if k and not a.check:
        with FILE.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
