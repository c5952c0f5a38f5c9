"""The YAML parse cache (planner.files.load_yaml): a large text is parsed once per content and
read back from disk afterwards, with the very value (and every error) a fresh parse gives."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from planner import files
from planner.catalog.catalog import _load_dir
from planner.catalog.profile import DEFAULT_PROFILE, _load_profile_cached
from planner.errors import PlannerError
from planner.files import PARSE_CACHE_MIN_CHARS, load_yaml, parse_cache_dir

DATA = Path(__file__).resolve().parent.parent / "data"


def _big(n_rows: int = 200, price: str = "2.49") -> str:
    """A catalog-like text past the size threshold: dates, nested maps, an alias."""
    rows = "".join(
        f"- {{id: gpu-{i}, usd_per_gpu_hour: {price}, as_of: 2026-11-{1 + i % 28:02d}, "
        f"tags: [a, b], where: *w}}\n"
        for i in range(n_rows)
    )
    text = "where: &w {region: us-east, commitment: on-demand}\nrows:\n" + rows
    assert len(text) >= PARSE_CACHE_MIN_CHARS
    return text


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(d))
    return d / "yaml"


def _kept(d: Path) -> list[Path]:
    return sorted(d.glob("*.pickle"))


def test_second_load_is_read_back_and_equal(cache_dir, monkeypatch):
    text = _big()
    first = load_yaml(text, "big.yaml", keep=True)
    assert parse_cache_dir() == cache_dir
    assert len(_kept(cache_dir)) == 1
    # the value a fresh parse gives: dates as dates, the alias expanded
    assert first["rows"][0] == {
        "id": "gpu-0",
        "usd_per_gpu_hour": 2.49,
        "as_of": dt.date(2026, 11, 1),
        "tags": ["a", "b"],
        "where": {"region": "us-east", "commitment": "on-demand"},
    }
    assert len(first["rows"]) == 200

    def no_parse(*a, **k):  # a hit must not parse
        raise AssertionError("parsed again")

    monkeypatch.setattr(files, "_parse_yaml", no_parse)
    second = load_yaml(text, "big.yaml", keep=True)
    assert second == first
    assert second is not first  # a fresh object each time: a caller may change it


def test_an_edited_text_is_parsed_again(cache_dir):
    a = load_yaml(_big(price="2.49"), "a.yaml", keep=True)
    b = load_yaml(_big(price="3.10"), "a.yaml", keep=True)  # the same file, edited
    assert a["rows"][5]["usd_per_gpu_hour"] == 2.49
    assert b["rows"][5]["usd_per_gpu_hour"] == 3.10
    assert len(_kept(cache_dir)) == 2


def test_a_damaged_file_is_a_miss_and_is_replaced(cache_dir):
    text = _big()
    good = load_yaml(text, "x.yaml", keep=True)
    (path,) = _kept(cache_dir)
    path.write_bytes(b"not a pickle")
    assert load_yaml(text, "x.yaml", keep=True) == good
    assert path.read_bytes() != b"not a pickle"  # rewritten by the parse


def test_errors_are_never_kept(cache_dir):
    text = _big() + "where: again\n"  # a duplicate top-level key, past the threshold
    for _ in range(2):  # the same one-line error both times
        with pytest.raises(PlannerError, match=r"dup.yaml: duplicate key 'where' at lines 1 and"):
            load_yaml(text, "dup.yaml", keep=True)
    assert _kept(cache_dir) == []


def test_small_texts_and_one_off_inputs_are_not_kept(cache_dir):
    assert load_yaml("a: 1\nb: [2, 3]\n", "s.yaml", keep=True) == {"a": 1, "b": [2, 3]}
    assert load_yaml(_big(), "upload.yaml")["rows"][3]["id"] == "gpu-3"  # keep=False
    assert _kept(cache_dir) == []


def test_oldest_files_go_past_the_limit(cache_dir, monkeypatch):
    monkeypatch.setattr(files, "PARSE_CACHE_MAX_FILES", 3)
    for i in range(5):
        load_yaml(_big(price=f"{i}.5"), "p.yaml", keep=True)
    assert len(_kept(cache_dir)) == 3


def test_unwritable_or_off_means_no_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(blocker))  # mkdir under a file fails
    assert parse_cache_dir() is None
    assert load_yaml(_big(), "u.yaml", keep=True)["rows"][1]["id"] == "gpu-1"
    monkeypatch.setenv("PLANNER_CACHE_DIR", "off")
    assert parse_cache_dir() is None
    assert load_yaml(_big(), "u.yaml", keep=True)["rows"][2]["id"] == "gpu-2"


def test_bundled_catalog_and_profile_are_the_same_read_back(cache_dir, monkeypatch):
    """The catalogs and the calibration profile, parsed (first) and read back (second),
    validate to equal objects; with the cache off, too."""
    fresh = _load_dir(DATA)
    n = len(_kept(cache_dir))
    assert n >= 5  # hardware, models, frameworks, precisions, prices (each > 4 KB)
    again = _load_dir(DATA)
    assert len(_kept(cache_dir)) == n  # read back: nothing new written
    assert again == fresh
    prof = _load_profile_cached.__wrapped__(str(DEFAULT_PROFILE), 0.0)
    assert _load_profile_cached.__wrapped__(str(DEFAULT_PROFILE), 0.0) == prof
    monkeypatch.setenv("PLANNER_CACHE_DIR", "off")
    assert _load_dir(DATA) == fresh
    assert _load_profile_cached.__wrapped__(str(DEFAULT_PROFILE), 0.0) == prof
