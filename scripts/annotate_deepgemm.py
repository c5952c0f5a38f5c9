"""Whether each pool of the SGLang disaggregated InferenceX rows runs DeepGEMM, read in the
recipe text their ``pool limits`` note already names (issue 30, "Done when" item 3).

SGLang runs a block-FP8 checkpoint's dense linears on DeepGEMM unless the environment sets
``SGLANG_ENABLE_JIT_DEEPGEMM`` false; on Blackwell it then runs FlashInfer's TRT-LLM
groupwise GEMM (``fp8_utils._dispatch_auto_backend``), which ``data/kernel_rates.yaml``
(``block_fp8_gemm``) times at about a sixth of DeepGEMM's rate. NVIDIA's srt-slurm recipes for
B200 set it false in both pools' environment, e.g. ``recipes/b200-fp8/8k1k/mtp/
max-tpt-dep8-2p1d.yaml`` @ 5063eb432640::

    prefill_environment:  SGLANG_ENABLE_JIT_DEEPGEMM: "false"
    decode_environment:   SGLANG_ENABLE_JIT_DEEPGEMM: "false"

The note::

    DeepGEMM (recipe text: NVIDIA/srt-slurm recipes/b200-fp8/8k1k/mtp/max-tpt-dep8-2p1d.yaml
    @ 5063eb432640; sglang SGLANG_ENABLE_JIT_DEEPGEMM, default on): prefill off, decode off

``disagg_rows.deepgemm`` reads it (``Pool.deepgemm``). TensorRT-LLM rows are left alone.
Running twice changes nothing (a row with the tag is skipped).

Usage: ``python scripts/annotate_deepgemm.py [--check]``
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sglang_recipe_notes import pool_note, run  # noqa: E402

TAG = "DeepGEMM ("
_OFF = {"false", "0", "no", "off"}


def recipe_deepgemm(text: str) -> dict[str, str] | str:
    """``{prefill, decode}``: ``off`` where the pool's environment section sets
    ``SGLANG_ENABLE_JIT_DEEPGEMM`` false (or 0), ``on`` otherwise (SGLang's default); or why
    the text cannot be read."""
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return "recipe is not YAML"
    be = doc.get("backend") or {}
    if not isinstance((be.get("sglang_config") or None), dict):
        return "no sglang_config section"
    out = {}
    for pool in ("prefill", "decode"):
        env = be.get(f"{pool}_environment") or {}
        v = str(env.get("SGLANG_ENABLE_JIT_DEEPGEMM", "")).strip().lower()
        out[pool] = "off" if v in _OFF else "on"
    return out


def note_for(row: dict) -> str | None:
    """The note to append to one row, None (not an SGLang disaggregated row) or ``-reason``."""
    return pool_note(row, TAG, recipe_deepgemm, "sglang SGLANG_ENABLE_JIT_DEEPGEMM, default on")


def main(argv=None) -> int:
    return run(note_for, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
