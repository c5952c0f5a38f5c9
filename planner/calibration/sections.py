"""The sections of docs/accuracy.md that other generators own (the scripts' ``--write``):
kept as they are when ``planner validate`` rewrites the report (:func:`kept_sections`), and
written in place by their owner (:func:`put_section`)."""

from __future__ import annotations

import math
from pathlib import Path

#: a section of the report another generator owns (scripts/serving_comparison.py --write):
#: kept as it is when validate rewrites the file
KEPT_SECTION = ("<!-- serving-comparison:begin -->", "<!-- serving-comparison:end -->")
#: the error table by layout kind (TP, TP multi-node, TP+EP, DEP / DP-attention) that
#: scripts/ep_accuracy.py --write owns
LAYOUT_SECTION = ("<!-- layout-kinds:begin -->", "<!-- layout-kinds:end -->")
#: the leave-one-source-out error by engine release that ``planner validate --output`` writes
#: after the report (planner/calibration/release_report.py)
RELEASE_SECTION = ("<!-- engine-releases:begin -->", "<!-- engine-releases:end -->")
#: every such section, in the order they are kept: the engine releases, the layout kinds,
#: the leave-one-GPU-out
#: transfers (scripts/transfer_validation.py --write), the H100 runs (scripts/h100_transfer.py
#: --write) and the H200 serving comparison
#: the serving latency tables (TTFT / TPOT by engine and vendor, before and after the
#: latency terms; MLPerf Server / Interactive) that scripts/latency_rows.py --write owns
LATENCY_SECTION = ("<!-- serving-latency:begin -->", "<!-- serving-latency:end -->")
KEPT_SECTIONS = (
    RELEASE_SECTION,
    LATENCY_SECTION,
    LAYOUT_SECTION,
    ("<!-- sibling-transfer:begin -->", "<!-- sibling-transfer:end -->"),
    ("<!-- h100-transfer:begin -->", "<!-- h100-transfer:end -->"),
    KEPT_SECTION,
)


def put_section(path: str | Path, block: str, section: tuple[str, str]) -> None:
    """Write one kept section (``block``: from its begin marker to its end marker and a
    newline) into the report at ``path``: in place of the old one, else before the next kept
    section (the order of :data:`KEPT_SECTIONS`), else at the end. The ``--write`` of the
    scripts that own a section (ep_accuracy, transfer_validation, h100_transfer)."""
    begin, end = section
    doc = Path(path).read_text(encoding="utf-8")
    if begin in doc:
        doc = doc[: doc.index(begin)] + block + doc[doc.index(end) + len(end) + 1 :]
    else:
        later = (
            KEPT_SECTIONS[KEPT_SECTIONS.index(section) + 1 :] if section in KEPT_SECTIONS else ()
        )
        i = next((doc.index(b) for b, _ in later if b in doc), -1)
        doc = doc[:i] + block + "\n" + doc[i:] if i >= 0 else doc.rstrip("\n") + "\n\n" + block
    Path(path).write_text(doc, encoding="utf-8")


def kept_sections(path: str | Path) -> str:
    """The kept sections of the report at ``path`` ('' when it cannot be read)."""
    try:
        old = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    kept = []
    for begin, end in KEPT_SECTIONS:
        i, j = old.find(begin), old.find(end)
        if i >= 0 and j > i:
            kept.append("\n" + old[i : j + len(end)] + "\n")
    return "".join(kept)


def _md_table(df) -> str:
    """A markdown table of a DataFrame (NaN cells empty); ``_no rows_`` when empty."""
    if df is None or not len(df):
        return "_no rows_\n"
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for rec in df.itertuples(index=False):
        lines.append(
            "| "
            + " | ".join("" if (isinstance(v, float) and math.isnan(v)) else str(v) for v in rec)
            + " |"
        )
    return "\n".join(lines) + "\n"
