"""Tag the InferenceX rows whose runs did not serve the prompts their columns state
(``workload_mismatch:``, planner/benchmarks/schema.py: kept, never fitted, never predicted).

**InferenceX DeepSeek-R1 SGLang runs on NVIDIA with the v0.5.10.post1 / v0.5.11 images
(2026-04-17 to 2026-05-15).** The benchmark client's tokenizer did not match the server's:

* SemiAnalysisAI/InferenceX PR #937 (2026-03-27, "Fix tokenizer mismatch between benchmark
  client and sglang server"): "Transformers v5 incorrectly rebuilds pre_tokenizer/decoder
  components for models like DeepSeek-R1 ... causing a ~5x token count inflation (e.g. 7000
  tokens -> 35000 tokens) and false performance regressions in TTFT and throughput
  benchmarks"; its fix resolved ``tokenizer.json`` from a local model directory only.
* PR #1381 (merged 2026-05-15, "bench: fix v5 tokenizer fix when --model is an HF Hub repo
  id"): "For HF Hub repo ids (e.g. "nvidia/DeepSeek-R1-0528-FP4-V2") the path lookup
  silently no-ops ... this produced a ~5x client/server tokenizer mismatch and a false
  throughput regression (DeepSeek-R1 FP4 on B200: 1970 -> 425 tok/s)".
* PR #1502 (2026-05-19): "Re-run DSR1 SGLang agg configs (B200/B300, FP8/FP4, no-MTP/MTP) -
  picks up tokenizer fix from #1381".

The rows tagged: source "SemiAnalysis InferenceX ...", framework sglang, an NVIDIA GPU, model
deepseek-v3, image ``lmsysorg/sglang:v0.5.10.post1-*`` or ``v0.5.11-*`` (the images run
between the client's transformers-v5 symptom and its fix; the v0.5.9 runs of 2026-03-25 and
the v0.5.12 re-runs of 2026-05-17 onwards are not), run date on or before 2026-05-15. Every
such run in the files started before the fix (GitHub run ids 24555249976-25780567235; the
untagged runs dated 2026-05-16 or later start at 25980015344). The rows themselves agree: against the v0.5.12 re-run of
the same launch, their median TTFT at 8k/1k and 4 clients is 5.0-6.9x (the prefill of ~5x
the tokens), at 1k/1k 1.4-2.7x. Nothing else in the launch changed (the scripts' server
commands are the same; perf-changelog.yaml names only the image).

Running the script twice changes nothing (a tagged row is skipped). Usage::

    python scripts/annotate_workload_mismatch.py [--check]
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = (
    "data/benchmarks/public_inferencex.csv",
    "data/benchmarks/public_inferencex_history.csv",
)
TAG = "workload_mismatch:"
REASON = (
    "workload_mismatch: prompts about 5x the stated length (the benchmark client's tokenizer "
    "did not match the server's with transformers v5 and a Hub model id, a ~5x token count "
    "inflation: SemiAnalysisAI/InferenceX PR #937 and PR #1381, fixed 2026-05-15, this run "
    "started before it. PR #1502 re-ran the DSR1 SGLang B200 / B300 configs with the fix)"
)
_IMAGE = re.compile(r"lmsysorg/sglang:v0\.5\.(?:10\.post1|11)-")
_DATE = re.compile(r"run date (\d{4}-\d\d-\d\d)")
FIX_DATE = "2026-05-15"


def affected(row: dict) -> bool:
    """Whether ``row`` is a run of the mismatched client (the rule in the module docstring)."""
    m = _DATE.search(row.get("notes", ""))
    return (
        row.get("source", "").startswith("SemiAnalysis InferenceX")
        and row.get("framework") == "sglang"
        and row.get("hardware", "").startswith("nvidia-")
        and row.get("model") == "deepseek-v3"
        and bool(_IMAGE.search(row.get("framework_version", "")))
        and m is not None
        and m.group(1) <= FIX_DATE
    )


def tagged(row: dict) -> dict:
    """``row`` with :data:`REASON` in front of its notes (unchanged when already tagged)."""
    if TAG in row.get("notes", ""):
        return row
    return {**row, "notes": f"{REASON}; {row['notes']}" if row["notes"] else REASON}


def annotate(files=FILES, check: bool = False) -> int:
    """Tag the affected rows of ``files``; returns how many rows were (or, with ``check``,
    would be) tagged. ``check`` writes nothing and exits non-zero when a row is untagged."""
    total = 0
    for rel in files:
        path = ROOT / rel
        with path.open(newline="") as fh:
            reader = csv.DictReader(fh)
            fields, rows = reader.fieldnames, list(reader)
        new = [tagged(r) if affected(r) else r for r in rows]
        n = sum(a is not b for a, b in zip(rows, new, strict=True) if a["notes"] != b["notes"])
        total += n
        if n and not check:
            with path.open("w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
                w.writeheader()
                w.writerows(new)
        print(f"{rel}: {n} row(s) {'to tag' if check else 'tagged'}")
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; fail if untagged")
    a = ap.parse_args(argv)
    n = annotate(check=a.check)
    return 1 if a.check and n else 0


if __name__ == "__main__":
    sys.exit(main())
