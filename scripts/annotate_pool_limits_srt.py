"""Pool limits of the NVIDIA disaggregated InferenceX rows whose recipe has no InferenceX
copy, read in the NVIDIA/srt-slurm text their speculative note already names (issue 30).

``annotate_pool_limits.py`` reads each run's srt-slurm recipe in InferenceX's own copies and
leaves a row alone when there is none (265 rows). ``annotate_spec_recipes.py`` found the
text of many of those recipes in the NVIDIA/srt-slurm mirror (``SRT_REPO``) and names it in
the row's note (``recipe text: NVIDIA/srt-slurm <path> @ <commit>``). This script reads the
limits in that same text at that same commit, with ``annotate_pool_limits.recipe_limits``
(per attention rank: SGLang ``max-running-requests // dp`` and ``min(max-prefill-tokens,
chunked-prefill-size // dp)`` under DP attention; TensorRT-LLM ``max_batch_size`` /
``max_num_tokens``), the same guard (a TensorRT-LLM file name's ``batch<N>`` equals the
decode ``max_batch_size``) and the same note format, so ``disagg_rows.pool_limits`` reads it.

Example: ixh-0786 (B200 fp8 SGLang 2P(DEP8)+1D(DEP8) MTP, 8k/1k, concurrency 512) runs
``recipes/b200-fp8/8k1k/mtp/max-tpt-dep8-2p1d.yaml`` @ 5063eb432640: prefill
``chunked-prefill-size 32768``, ``max-prefill-tokens 32768``, ``max-running-requests 512``,
``data-parallel-size 8`` with ``enable-dp-attention``: per rank ``512 // 8 = 64`` requests
and ``min(32768, 32768 // 8) = 4096`` tokens a step (an 8k prompt takes two steps).

Running twice changes nothing (a row with the tag is skipped).

Usage: ``python scripts/annotate_pool_limits_srt.py [--check]``
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotate_harness_flags import annotate  # noqa: E402
from annotate_pool_limits import TAG, _fmt, recipe_limits  # noqa: E402
from annotate_spec_recipes import FILES, SRT, SRT_REPO  # noqa: E402

_TEXT = re.compile(
    r"recipe text: NVIDIA/srt-slurm (recipes/\S+\.yaml) @ ([0-9a-f]{7,40}), ([0-9-]{10})"
)
_DAY = re.compile(r"run date (\d{4}-\d{2}-\d{2})")


def note_for(row: dict, repo: str = SRT_REPO) -> str | None:
    """The note to append to one row, None (not a disaggregated row) or ``-reason``."""
    notes = row["notes"]
    if "disaggregated prefill/decode" not in notes:
        return None
    if TAG in notes:
        return "-already annotated"
    m = _TEXT.search(notes)
    if not m:
        return "-no NVIDIA/srt-slurm recipe text named in the notes"
    path, commit, dated = m.groups()
    engine = "trtllm" if "/trtllm/" in path else "sglang"
    try:
        text = subprocess.run(
            ["git", "--git-dir", f"{repo}/.git" if Path(f"{repo}/.git").exists() else repo,
             "show", f"{commit}:{path}"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (subprocess.CalledProcessError, FileNotFoundError):
        return f"-{SRT} {path} @ {commit} not readable"
    lim = recipe_limits(text, engine)
    if isinstance(lim, str):
        return f"-{path}: {lim}"
    nb = re.search(r"_batch(\d+)_", path)
    if engine == "trtllm" and nb and int(nb.group(1)) != lim["decode"].get("max_num_seqs"):
        return f"-{path}: file name and the decode max_batch_size disagree"
    day = _DAY.search(notes)
    late = " (after the run)" if day and dated > day.group(1) else ""
    keys = (
        "max_batch_size / max_num_tokens"
        if engine == "trtllm"
        else "max-running-requests // dp, min(max-prefill-tokens, chunked-prefill-size // dp)"
    )
    return (
        f"{TAG}recipe text: {SRT} {path} @ {commit}, {dated}{late}, the text the speculative "
        f"note reads; {engine} {keys}): prefill {_fmt(lim['prefill'])} (recipe prefill "
        f"section); decode {_fmt(lim['decode'])} (recipe decode section)"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only count the rows to annotate")
    a = ap.parse_args(argv)
    if not Path(SRT_REPO).exists():
        print(f"no {SRT} mirror at {SRT_REPO}: nothing annotated")
        return 0
    annotate(FILES, note_for, a.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
