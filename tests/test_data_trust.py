"""Data trust: shipped files cite public sources, never a path on the machine that built them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
# An absolute path on a build or GPU machine: users do not have these files.
MACHINE_PATH = re.compile(r"(?<![\w.:/-])/(?:work|root|home|tmp|Users)/")
SCANNED = ("data", "docs", "planner")
CATALOGS = (
    "hardware.yaml",
    "models.yaml",
    "prices.yaml",
    "frameworks.yaml",
    "precisions.yaml",
    "ownership.yaml",
    "quality.yaml",
)


def _scanned_files():
    files = [ROOT / "README.md"]
    for folder in SCANNED:
        files += sorted(
            p for p in (ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts
        )
    return files


def test_no_absolute_machine_paths():
    hits = []
    for path in _scanned_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if MACHINE_PATH.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not hits, "absolute machine paths:\n" + "\n".join(hits)


def test_pattern_catches_machine_paths():
    assert MACHINE_PATH.search('source: "/work/shared/reference/x.yaml"')
    assert MACHINE_PATH.search("--out-dir /root/out")
    assert not MACHINE_PATH.search("https://example.com/home/page")
    assert not MACHINE_PATH.search("data/benchmarks/home/x.csv")


def _rows():
    for name in CATALOGS:
        doc = yaml.safe_load((ROOT / "data" / name).read_text(encoding="utf-8"))
        for section, rows in doc.items():
            if isinstance(rows, list):
                for i, row in enumerate(rows):
                    label = row.get("id") or row.get("gpu") or row.get("checkpoint") or ""
                    yield f"{name}:{section}[{i}] {label}", row
            elif isinstance(rows, dict):  # ownership.yaml: one entry per parameter
                for key, row in rows.items():
                    if isinstance(row, dict):
                        yield f"{name}:{section}.{key}", row


@pytest.mark.parametrize("name", CATALOGS)
def test_catalog_files_exist(name):
    assert (ROOT / "data" / name).is_file()


def _cited(row: dict) -> bool:
    """A source, or (a stated assumption, ownership.yaml) notes that justify the value."""
    if row.get("kind") == "assumption":
        return bool(str(row.get("notes") or "").strip())
    return bool(str(row.get("source") or "").strip())


def test_rows_are_found_in_every_catalog():
    names = {where.split(":", 1)[0] for where, _ in _rows()}
    assert names == set(CATALOGS)


def test_every_catalog_row_has_source_and_as_of():
    bad = [
        where
        for where, row in _rows()
        if not _cited(row) or not str(row.get("as_of") or "").strip()
    ]
    assert not bad, "rows without source/as_of: " + ", ".join(bad)


def test_no_private_reference_abbreviation():
    """'REF' pointed at a file on the catalog builder's machine; cite the original source instead."""
    bad = [
        where
        for where, row in _rows()
        for key in ("source", "params_source", "notes")
        if re.search(r"\bREF\b", str(row.get(key) or ""))
    ]
    assert not bad, "rows citing REF: " + ", ".join(bad)
