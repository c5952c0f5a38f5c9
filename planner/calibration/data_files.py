"""The measurement files calibrate fits and cross-validation holds out: the bundled data
(``data/benchmarks/*.csv``), the published files held out source by source, the project's own
files always trained on, and the files kept out of every fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from planner.catalog.catalog import DATA_DIR

#: measurement files of the project's own harnesses (one source each): always in training
#: in leave-one-source-out, never held out (their accuracy is checked by k-fold)
OWN_FILES = ("reference_h200.csv", "reference_h200_tp2.csv", "pytorch_h200.csv")
#: bundled measurement files kept out of every fit and every leave-one-source-out: the
#: reference engine's serving runs on the H100 (and their repeats on another machine start),
#: held out to test the transfer from its nearest sibling (docs/accuracy.md, "Transfer ...")
HELD_OUT_FILES = ("reference_h100_serving.csv", "reference_h100_repeat_serving.csv")


def data_files_default() -> list[Path]:
    """Measurement files the bundled profile is fitted on (``data/benchmarks/*.csv``)."""
    d = DATA_DIR / "benchmarks"
    return sorted(
        p
        for p in d.glob("*.csv")
        if not p.name.endswith("_micro.csv") and p.name not in HELD_OUT_FILES
    )


def _rel(p: Path) -> str:
    try:
        return p.resolve().relative_to(DATA_DIR.parent.resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def public_files_default() -> list[Path]:
    """Published measurements (``data/benchmarks/public*.csv``): held out source by source."""
    return sorted((DATA_DIR / "benchmarks").glob("public*.csv"))


def own_files_default() -> list[Path]:
    """The project's own step measurements (:data:`OWN_FILES` that exist)."""
    return [p for p in (DATA_DIR / "benchmarks" / f for f in OWN_FILES) if p.exists()]


def split_public_own(files: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """(held out by source, always trained on): the bundled own files are the second; a
    bundled file that is neither (serving runs) is left out; a user's files are public."""
    bundled = (DATA_DIR / "benchmarks").resolve()
    public, own = [], []
    for f in files:
        if f.resolve().parent == bundled:
            if f.name in OWN_FILES:
                own.append(f)
            elif f.name.startswith("public"):
                public.append(f)
        else:
            public.append(f)
    return public, own
