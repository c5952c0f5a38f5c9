"""One note per SGLang disaggregated row, read in the recipe text its ``pool limits`` note
names: the shared part of ``annotate_moe_dispatch.py`` (``--moe-a2a-backend``) and
``annotate_deepgemm.py`` (``SGLANG_ENABLE_JIT_DEEPGEMM``).

Each of those scripts gives a reader (recipe text -> ``{prefill, decode}`` or why it cannot
be read) and the setting it names; :func:`pool_note` finds the row's recipe text in the
mirrored repositories and words the note; :func:`run` is the command line
(``[--check]``). A row that already carries the tag is skipped, so running twice changes
nothing; TensorRT-LLM rows are left alone.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotate_harness_flags import annotate  # noqa: E402
from annotate_spec_recipes import FILES, IX_REPO, SRT_REPO  # noqa: E402

#: the recipe text the ``pool limits`` note of annotate_pool_limits(_srt).py names
RECIPE_TEXT = re.compile(
    r"recipe text: (NVIDIA/srt-slurm|SemiAnalysisAI/InferenceX) (\S+\.yaml) @ ([0-9a-f]{7,40})"
)
REPOS = {"NVIDIA/srt-slurm": SRT_REPO, "SemiAnalysisAI/InferenceX": IX_REPO}

Reader = Callable[[str], "dict[str, str] | str"]


def pool_note(row: dict, tag: str, read: Reader, setting: str) -> str | None:
    """The note to append to one row, None (not an SGLang disaggregated row) or ``-reason``.

    Parameters
    ----------
    row : a benchmark row (``notes``, ``framework``)
    tag : the note's opening words, e.g. ``"DeepGEMM ("``
    read : recipe text -> ``{prefill, decode}``, or why it cannot be read
    setting : what the note says was read, e.g. ``"sglang --moe-a2a-backend, default none"``
    """
    notes = row["notes"]
    if "disaggregated prefill/decode" not in notes or row["framework"] != "sglang":
        return None
    if tag in notes:
        return "-already annotated"
    i = notes.find("pool limits (")
    m = RECIPE_TEXT.search(notes, i) if i >= 0 else None
    if not m:
        return "-no recipe text named in a pool limits note"
    repo, path, commit = m.groups()
    git = REPOS[repo]
    try:
        text = subprocess.run(
            ["git", "--git-dir", f"{git}/.git" if Path(f"{git}/.git").exists() else git,
             "show", f"{commit}:{path}"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (subprocess.CalledProcessError, FileNotFoundError):
        return f"-{repo} {path} @ {commit} not readable"
    got = read(text)
    if isinstance(got, str):
        return f"-{path}: {got}"
    return (
        f"{tag}recipe text: {repo} {path} @ {commit}; {setting}): "
        f"prefill {got['prefill']}, decode {got['decode']}"
    )


def run(note_for: Callable[[dict], str | None], doc: str, argv=None) -> int:
    """The command line of an annotating script: ``--check`` only counts the rows."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only count the rows to annotate")
    a = ap.parse_args(argv)
    if not Path(SRT_REPO).exists() and not Path(IX_REPO).exists():
        print("no recipe mirror: nothing annotated")
        return 0
    annotate(FILES, note_for, a.check)
    return 0
