"""The YAML parse cache (planner.files.load_yaml): a large text is parsed once per content and
read back from disk afterwards, with the very value (and every error) a fresh parse gives."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import files, parse_cache
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
    return sorted(p for p in d.glob("*.json") if len(p.name.split("-")[0]) == 40)


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
    monkeypatch.setattr(parse_cache, "PARSE_CACHE_MAX_FILES", 3)
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


# ------------------------------------------------------------------ a hostile cache folder
# An entry is data only, checked against the text; the folder and its files are private.
# Each attack below must leave the answer a fresh parse gives, and run nothing.


def _entry(d: Path, text: str) -> Path:
    return d / f"{parse_cache.cache_key(text)}.json"


class _Boom:
    """A pickle that, loaded, creates a folder: proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.mkdir, (str(self.marker),))


def test_a_planted_pickle_never_runs(cache_dir, tmp_path):
    import pickle

    text = _big()
    fresh = load_yaml(text, "x.yaml")  # keep=False: the reference parse
    parse_cache_dir()  # creates the folder
    marker = tmp_path / "pwned"
    bomb = pickle.dumps(_Boom(marker))
    stem = parse_cache.cache_key(text)
    (cache_dir / f"{stem}.json").write_bytes(bomb)  # under the entry's own name
    old = stem.replace(parse_cache._PARSE_FORMAT, "1-yaml" + yaml_version())
    (cache_dir / f"{old}.pickle").write_bytes(bomb)  # and where format 1 kept its pickles
    assert load_yaml(text, "x.yaml", keep=True) == fresh
    assert not marker.exists()
    # the planted file was a miss, and the parse replaced it with a data entry
    assert _entry(cache_dir, text).read_bytes().startswith(b"planner-yaml-cache ")


def yaml_version() -> str:
    import sys

    import yaml

    return f"{yaml.__version__}-py{sys.version_info[0]}.{sys.version_info[1]}"


def test_an_entry_for_another_text_or_a_changed_value_is_a_miss(cache_dir):
    """An entry whose header names another text, or whose payload was changed but is still
    valid JSON (a price 2.49 -> 9.49), is never read back."""
    text = _big()
    fresh = load_yaml(text, "x.yaml", keep=True)
    entry = _entry(cache_dir, text)
    head, payload = entry.read_bytes().split(b"\n", 1)
    assert payload.count(b"2.49") == 200
    entry.write_bytes(head + b"\n" + payload.replace(b"2.49", b"9.49"))  # payload sha differs
    assert load_yaml(text, "x.yaml", keep=True) == fresh
    # a consistent entry (payload sha right) made for another text: the text sha differs
    other = payload.replace(b"2.49", b"9.49")
    parts = head.split(b" ")
    parts[2] = hashlib.sha256(_big(price="9.49").encode()).hexdigest().encode()
    parts[3] = hashlib.sha256(other).hexdigest().encode()
    entry.write_bytes(b" ".join(parts) + b"\n" + other)
    assert load_yaml(text, "x.yaml", keep=True) == fresh
    for damaged in (b"", head, head + b"\n", head + b"\n" + payload[:-5], b"\x00" * 64):
        entry.write_bytes(damaged)
        assert load_yaml(text, "x.yaml", keep=True) == fresh, damaged[:40]


def test_tagged_values_round_trip_exactly(cache_dir):
    """Every kind of value the safe loader builds comes back equal and of the same type."""
    text = (
        "a: !!binary aGVsbG8=\n"
        "b: !!set {x, y}\n"
        "c: !!omap [{k1: 1}, {k2: 2}]\n"
        "d: 2026-01-01T10:00:00.25+02:00\n"
        "e: 2026-01-01 10:00:00\n"
        "f: 2026-01-01\n"
        "g: {7: one, 2026-01-02: date, null: none, true: yes, 1.5: f}\n"
        '"\\0t": {"\\0t": date, v: 1}\n'
        "h: [.inf, -.inf, 12345678901234567890123]\n"
        "pad: '" + "p" * PARSE_CACHE_MIN_CHARS + "'\n"
    )
    fresh = load_yaml(text, "t.yaml")
    load_yaml(text, "t.yaml", keep=True)
    back = load_yaml(text, "t.yaml", keep=True)
    assert len(_kept(cache_dir)) == 1
    assert back == fresh
    assert back["a"] == b"hello" and back["b"] == {"x", "y"}
    assert back["c"] == [("k1", 1), ("k2", 2)]
    tz = dt.timezone(dt.timedelta(hours=2))
    assert back["d"] == dt.datetime(2026, 1, 1, 10, 0, 0, 250000, tzinfo=tz)
    assert type(back["e"]) is dt.datetime and type(back["f"]) is dt.date
    assert back["\x00t"] == {"\x00t": "date", "v": 1}  # a user's key that looks like a tag
    assert [type(k) for k in back["g"]] == [int, dt.date, type(None), bool, float]


def test_private_under_any_umask_and_a_shared_folder_is_not_used(cache_dir):
    import os
    import stat as st

    old = os.umask(0)
    try:
        text = _big()
        fresh = load_yaml(text, "x.yaml", keep=True)
    finally:
        os.umask(old)
    assert st.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert st.S_IMODE(cache_dir.parent.stat().st_mode) == 0o700
    (entry,) = _kept(cache_dir)
    assert st.S_IMODE(entry.stat().st_mode) == 0o600
    # others may write the folder: it is neither read nor written
    cache_dir.chmod(0o777)
    calls = []
    real = files._parse_yaml

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    files._parse_yaml = counting
    try:
        assert load_yaml(text, "x.yaml", keep=True) == fresh  # parsed: not read back
        assert load_yaml(_big(price="7.5"), "y.yaml", keep=True)["rows"][0]["id"] == "gpu-0"
    finally:
        files._parse_yaml = real
    assert len(calls) == 2
    assert _kept(cache_dir) == [entry]  # nothing written into it
    # an entry that others may write is not read either
    cache_dir.chmod(0o700)
    entry.chmod(0o666)
    assert parse_cache.get(parse_cache.cache_key(text), text) is parse_cache.MISS
    entry.chmod(0o600)
    assert parse_cache.get(parse_cache.cache_key(text), text) == fresh


def test_a_fifo_never_blocks_and_a_link_is_never_followed(cache_dir, tmp_path):
    import os
    import signal

    text = _big()
    fresh = load_yaml(text, "x.yaml", keep=True)
    entry = _entry(cache_dir, text)
    good = entry.read_bytes()
    key = parse_cache.cache_key(text)
    entry.unlink()
    os.mkfifo(entry)
    signal.alarm(10)  # a blocking open would hang here
    try:
        assert parse_cache.get(key, text) is parse_cache.MISS
        assert load_yaml(text, "x.yaml", keep=True) == fresh
    finally:
        signal.alarm(0)
    assert entry.is_file()  # the parse's entry replaced the FIFO
    # a link to a valid entry elsewhere is not followed
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(good)
    elsewhere.chmod(0o600)
    entry.unlink()
    entry.symlink_to(elsewhere)
    assert parse_cache.get(key, text) is parse_cache.MISS
    assert load_yaml(text, "x.yaml", keep=True) == fresh
    assert elsewhere.read_bytes() == good  # written through? no: the link was replaced
    assert not entry.is_symlink()


def test_a_linked_cache_folder_is_not_used(tmp_path, monkeypatch):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    base = tmp_path / "base"
    base.mkdir(mode=0o700)
    (base / "yaml").symlink_to(real)
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(base))
    assert parse_cache_dir() is None
    assert load_yaml(_big(), "x.yaml", keep=True)["rows"][1]["id"] == "gpu-1"
    assert list(real.iterdir()) == []


def test_the_file_limit_deletes_only_the_caches_own_files(cache_dir, monkeypatch):
    monkeypatch.setattr(parse_cache, "PARSE_CACHE_MAX_FILES", 3)
    parse_cache_dir()
    foreign = ["notes.txt", "a.pickle", "abc-1.json", "0" * 40 + ".json.bak", ".hidden"]
    for name in foreign:
        (cache_dir / name).write_text("mine")
    (cache_dir / "sub").mkdir()
    for i in range(6):
        load_yaml(_big(price=f"{i}.5"), "p.yaml", keep=True)
    assert len(_kept(cache_dir)) == 3
    for name in foreign:
        assert (cache_dir / name).read_text() == "mine"
    assert (cache_dir / "sub").is_dir()


@pytest.mark.skipif(
    not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0,
    reason="changing a file's owner needs root",
)
def test_an_entry_or_folder_of_another_user_is_not_used(cache_dir):
    import os

    text = _big()
    fresh = load_yaml(text, "x.yaml", keep=True)
    key = parse_cache.cache_key(text)
    entry = _entry(cache_dir, text)
    os.chown(entry, 12345, -1)
    assert parse_cache.get(key, text) is parse_cache.MISS
    os.chown(entry, os.getuid(), -1)
    assert parse_cache.get(key, text) == fresh
    os.chown(cache_dir, 12345, -1)
    assert parse_cache.get(key, text) is parse_cache.MISS
    assert load_yaml(text, "x.yaml", keep=True) == fresh


_TEXT = _big(50)
_FRESH = load_yaml(_TEXT, "h.yaml")


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))  # fmt: skip
@given(
    st.binary(max_size=400),
    st.sampled_from(["raw", "header"]),
)
def test_any_bytes_in_an_entry_give_the_fresh_value(cache_dir, junk, how):
    """Whatever bytes sit under the entry's name (random, or behind a header line that names
    this text with another payload's sha256), the answer is the fresh parse's, and nothing
    raises. (An entry whose payload matches its own sha256 is read back as the data it holds:
    only the user can write one, the folder being private.)"""
    parse_cache_dir()
    entry = _entry(cache_dir, _TEXT)
    head = b" ".join(
        (
            b"planner-yaml-cache",
            parse_cache._PARSE_FORMAT.encode(),
            hashlib.sha256(_TEXT.encode()).hexdigest().encode(),
            hashlib.sha256(junk + b"x").hexdigest().encode(),
        )
    )
    entry.write_bytes(junk if how == "raw" else head + b"\n" + junk)
    entry.chmod(0o600)
    assert load_yaml(_TEXT, "h.yaml", keep=True) == _FRESH
