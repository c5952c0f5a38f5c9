"""Write the engine flags a benchmark harness passed into the notes of the rows it ran,
where the rows themselves do not carry the server command (issue 32: TTFT of public runs).

Two harnesses, each read in its own repository:

* **InferenceX single-node DeepSeek-R1 scripts** (SemiAnalysisAI/InferenceX,
  ``benchmarks/dsr1_fp{4,8}_b{200,300}.sh`` and their ``single_node/`` and
  ``single_node/fixed_seq_len/`` successors): SGLang on B200 / B300 ran with
  ``--scheduler-recv-interval 10``, or ``30`` from concurrency 16, from 2025-09-21
  (commit 27f29acbe, "Reduce B200 Runs & add B200 FP4 Docker Script (#35)") to 2026-06-02;
  TensorRT-LLM on B200 with DP attention ran with ``attention_dp_config: {enable_balance:
  true, timeout_iters: 60, batching_wait_iters: 0}`` (``dsr1_fp{4,8}_b200_trt.sh`` and
  successors, from 2026-01-22, the scripts' first version in the repository). Applied to
  the InferenceX history rows (``public_inferencex_history.csv``) of those engines, GPUs
  and dates whose notes carry no server command.
* **TensorRT-LLM perf-overview** attention-DP rows (``public_nvidia.csv``): the page's
  ``llm_options.yml`` per model (:func:`_perf_overview_flags`).
* **MLPerf DeepSeek-R1 Server submissions** (TensorRT-LLM, DEP8): the submission's own
  ``adp_balancing_*`` runtime flags, read from the config file the row's ``source_detail``
  names, in the results repositories (``MLPERF_REPOS``, local mirrors of
  mlcommons/inference_results_v5.1 and the v6.0 results); rows whose mirror is absent are
  left as they are.

The flags are appended to ``notes`` as ``harness flags (<where they were read>): ...``;
:mod:`planner.benchmarks.scheduler_waits` reads them like any flag a row states. Running
the script twice changes nothing (a row that has the tag is skipped).

Run it after ``scripts/import_inferencex_history.py`` or ``scripts/import_mlperf_moe.py``
rewrites those files. Usage: ``python scripts/annotate_harness_flags.py [--check]``
"""

from __future__ import annotations

import argparse
import collections
import csv
import datetime as dt
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = (
    "data/benchmarks/public_inferencex_history.csv",
    "data/benchmarks/public_mlperf_moe.csv",
    "data/benchmarks/public_nvidia.csv",
)
TAG = "harness flags ("
MLPERF_REPOS = {
    "v5.1": "/work/.mirror/mlcommons+inference_results_v5.1/repo",
    "v6.0": "/work/.mirror/gbeezybez+inference_results_v6.0/repo",
}
IX = "SemiAnalysisAI/InferenceX"


def _mlperf_flags(row: dict) -> str | None:
    m = re.search(r"config (\S+\.py)", row.get("source_detail", ""))
    ver = next((v for v in MLPERF_REPOS if f"MLPerf Inference {v}" in row["source"]), None)
    if m is None or ver is None or not Path(MLPERF_REPOS[ver]).exists():
        return None
    txt = subprocess.run(
        ["git", "-C", MLPERF_REPOS[ver], "show", "HEAD:" + m.group(1)],
        capture_output=True, text=True, check=False,
    ).stdout  # fmt: skip
    on = re.search(r"adp_balancing_enable[\"']?\s*:\s*True", txt)
    t = re.search(r"adp_balancing_timeout_iters[\"']?\s*:\s*(\d+)", txt)
    b = re.search(r"adp_balancing_batching_wait_iters[\"']?\s*:\s*(\d+)", txt)
    if not (on and t and b):
        return None
    return (
        f"{TAG}the submission's config {m.group(1)}, MLPerf Inference {ver} results): "
        f"enable_balance: true, timeout_iters: {t.group(1)}, batching_wait_iters: {b.group(1)}"
    )


def _inferencex_flags(row: dict) -> str | None:
    notes = row["notes"]
    if "InferenceX benchmarks history" not in row["source"] or row["model"] != "deepseek-v3":
        return None
    if "server:" in notes:
        return None
    day = dt.date.fromisoformat(row["as_of"][:10])
    fw, hw = row["framework"], row["hardware"]
    sgl_window = dt.date(2025, 9, 21) <= day < dt.date(2026, 6, 2)
    if fw == "sglang" and hw in ("nvidia-b200", "nvidia-b300") and sgl_window:
        k = 30 if float(row["concurrency"] or 0) >= 16 else 10
        return (
            f"{TAG}{IX} benchmarks/dsr1_fp*_b200.sh / b300 and successors, 2025-09-21 to "
            f"2026-06-02): --scheduler-recv-interval {k}"
        )
    trt = fw == "trtllm" and hw == "nvidia-b200" and "DP-attention=true" in notes
    if trt and day >= dt.date(2026, 1, 22):
        return (
            f"{TAG}{IX} benchmarks/dsr1_fp*_b200_trt.sh and successors, from 2026-01-22): "
            "attention_dp_config: enable_balance: true, timeout_iters: 60, "
            "batching_wait_iters: 0"
        )
    return None


def _perf_overview_flags(row: dict) -> str | None:
    """TensorRT-LLM perf-overview attention-DP rows: the page's ``llm_options.yml`` per model
    (docs/source/performance/perf-overview.md, both the per-GPU pre-B300 and the release/1.2
    texts): DeepSeek R1 with ``attention_dp_config: {batching_wait_iters: 0, enable_balance:
    true, timeout_iters: 60}``; GPT-OSS, Qwen3 MoE (and Kimi K2, Llama4 Maverick) with
    ``enable_attention_dp: true`` and no ``attention_dp_config`` (the engine's default,
    ``AttentionDpConfig.enable_balance`` False, tensorrt_llm/llmapi/llm_args.py)."""
    if "TensorRT-LLM perf-overview" not in row["source"]:
        return None
    if (row.get("attention_dp") or "1").strip() in ("", "1"):
        return None
    where = f"{TAG}NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md llm_options.yml"
    if row["model"] == "deepseek-v3":
        return (
            f"{where}, DeepSeek R1): attention_dp_config: enable_balance: true, "
            "timeout_iters: 60, batching_wait_iters: 0"
        )
    return f"{where}): enable_attention_dp: true, no attention_dp_config (balance off)"


def flags_for(row: dict) -> str | None:
    """The harness-flags note for one CSV row (a dict of its cells), or None."""
    if TAG in row["notes"]:
        return None
    if row["source"].startswith("MLPerf") and "DeepSeek-R1" in row["source"]:
        return _mlperf_flags(row)
    return _perf_overview_flags(row) or _inferencex_flags(row)


def annotate(files, note_for, check: bool) -> None:
    """Append ``note_for(row)`` to the notes of each row of ``files`` (repository paths) and
    rewrite them unless ``check``; ``note_for`` gives the text, None to leave a row, or
    ``"-reason"`` to leave it and count why. The files keep their exact format (csv module,
    every cell a string, ``\\n`` line ends: a file read and written unchanged is byte-equal)."""
    for rel in files:
        path = ROOT / rel
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            fields, rows = reader.fieldnames, list(reader)
        n, why = 0, collections.Counter()
        for row in rows:
            extra = note_for(row)
            if not extra or extra.startswith("-"):
                if extra:
                    why[extra[1:]] += 1
                continue
            row["notes"] = f"{row['notes']}; {extra}" if row["notes"] else extra
            n += 1
        print(f"{rel}: {n} rows annotated")
        for reason, c in why.most_common():
            print(f"  left as they are: {c} rows: {reason}")
        if n and not check:
            with path.open("w", newline="", encoding="utf-8") as f:
                w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
                w.writeheader()
                w.writerows(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only count the rows to annotate")
    a = ap.parse_args(argv)
    annotate(FILES, flags_for, a.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
