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

import argparse
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotate_harness_flags import annotate  # noqa: E402
from annotate_moe_dispatch import _REPOS, _TEXT  # noqa: E402
from annotate_spec_recipes import FILES, IX_REPO, SRT_REPO  # noqa: E402

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
    got = recipe_deepgemm(text)
    if isinstance(got, str):
        return f"-{path}: {got}"
    return (
        f"{TAG}recipe text: {repo} {path} @ {commit}; sglang SGLANG_ENABLE_JIT_DEEPGEMM, "
        f"default on): prefill {got['prefill']}, decode {got['decode']}"
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
