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

import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sglang_recipe_notes import pool_note, run  # noqa: E402

TAG = "MoE dispatch ("


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
    return pool_note(row, TAG, recipe_dispatch, "sglang --moe-a2a-backend, default none")


def main(argv=None) -> int:
    return run(note_for, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
