"""The MoE dispatch of each pool of the SGLang disaggregated InferenceX rows, read in the
recipe text their ``pool limits`` note already names (issue 30, "Done when" item 3).

SGLang runs a DeepSeek MoE layer under DP attention in one of two ways:

* ``--moe-a2a-backend deepep`` (or another all-to-all backend): each rank sends its tokens
  to the ranks holding their experts, the all-to-all the planner charges for attention-DP
  layouts (:func:`planner.engine.adp.dispatch_bytes_per_token`);
* ``--moe-a2a-backend none``, **the default**: every rank gathers all the step's tokens
  around each MoE layer and reduces the expert outputs back
  (:func:`planner.engine.adp.gathered_dispatch_bytes_per_token`).

The note says which one each pool's section sets, and whether it runs DP attention::

    MoE dispatch (recipe text: NVIDIA/srt-slurm recipes/b200-fp8/8k1k/mtp/
    max-tpt-dep8-2p1d.yaml @ 5063eb432640; sglang --moe-a2a-backend, default none):
    prefill none, decode none

``disagg_rows.moe_dispatch`` reads it; a pool without DP attention gets ``none`` too (its
all-reduce is already the gather form). The TensorRT-LLM rows are left alone. Running twice
changes nothing (a row with the tag is skipped).

Usage: ``python scripts/annotate_moe_dispatch.py [--check]``
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotate_harness_flags import annotate  # noqa: E402
from annotate_spec_recipes import FILES, IX_REPO, SRT_REPO  # noqa: E402

TAG = "MoE dispatch ("
#: the recipe text the ``pool limits`` note of annotate_pool_limits(_srt).py names
_TEXT = re.compile(
    r"recipe text: (NVIDIA/srt-slurm|SemiAnalysisAI/InferenceX) (\S+\.yaml) @ ([0-9a-f]{7,40})"
)
_REPOS = {"NVIDIA/srt-slurm": SRT_REPO, "SemiAnalysisAI/InferenceX": IX_REPO}


def recipe_dispatch(text: str) -> dict[str, str] | str:
    """``{prefill, decode}``: each SGLang pool section's ``moe-a2a-backend`` (``none`` when
    unset, SGLang's default; ``none`` as well without ``enable-dp-attention``), or why the
    text cannot be read."""
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return "recipe is not YAML"
    sec = (doc.get("backend") or {}).get("sglang_config") or {}
    out = {}
    for pool in ("prefill", "decode"):
        c = sec.get(pool)
        if not isinstance(c, dict):
            return f"no sglang_config {pool} section"
        a2a = str(c.get("moe-a2a-backend") or "none").strip().lower()
        out[pool] = a2a if c.get("enable-dp-attention") else "none"
    return out


def note_for(row: dict) -> str | None:
    """The note to append to one row, None (not an SGLang disaggregated row) or ``-reason``."""
    notes = row["notes"]
    if "disaggregated prefill/decode" not in notes or row["framework"] != "sglang":
        return None
    if TAG in notes:
        return "-already annotated"
    i = notes.find("pool limits (")
    m = _TEXT.search(notes, i) if i >= 0 else None
    if not m:
        return "-no recipe text named in a pool limits note"
    repo, path, commit = m.groups()
    git = _REPOS[repo]
    try:
        text = subprocess.run(
            ["git", "--git-dir", f"{git}/.git" if Path(f"{git}/.git").exists() else git,
             "show", f"{commit}:{path}"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (subprocess.CalledProcessError, FileNotFoundError):
        return f"-{repo} {path} @ {commit} not readable"
    got = recipe_dispatch(text)
    if isinstance(got, str):
        return f"-{path}: {got}"
    return (
        f"{TAG}recipe text: {repo} {path} @ {commit}; sglang --moe-a2a-backend, default "
        f"none): prefill {got['prefill']}, decode {got['decode']}"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only count the rows to annotate")
    a = ap.parse_args(argv)
    if not Path(SRT_REPO).exists() and not Path(IX_REPO).exists():
        print("no recipe mirror: nothing annotated")
        return 0
    annotate(FILES, note_for, a.check)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
