"""The YAML parse cache: a catalog's parsed value kept on disk for the next process.

:func:`planner.files.load_yaml` with ``keep=True`` (the catalogs and the calibration profile,
never a user's upload) asks :func:`get` before parsing and gives the value to :func:`put`
after a parse without error. An entry is data only, never code: JSON, with the few
non-JSON values the safe YAML loader builds (dates, datetimes, bytes, sets, tuples, mappings
with keys other than strings) as tagged objects. Its first line names the format and holds
the sha256 of the source text and of the payload; an entry whose line does not match, a
malformed payload, a file that is a link, a FIFO or not a regular file, a file or folder not
the user's or that others may write: each is a miss, and the text is parsed. The folder and
its files are private (0700, 0600) under any umask; only the cache's own file names are ever
deleted. This module imports only the standard library and yaml.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import secrets
import stat
import time
from pathlib import Path
from typing import Any

import yaml

# --------------------------------------------------------------------------- parse cache
#: texts shorter than this [characters] are parsed every time (a scenario file: < 1 ms)
PARSE_CACHE_MIN_CHARS = 4096
#: most parsed texts kept on disk; the oldest go first (an edited catalog leaves its old one)
PARSE_CACHE_MAX_FILES = 64
#: largest entry read back [bytes]; a larger file is a miss (the bundled catalogs: < 2 MB)
PARSE_CACHE_MAX_BYTES = 256 * 1024**2
#: what a cached value depends on besides the text: this format and the parser
_PARSE_FORMAT = f"2-yaml{yaml.__version__}"
#: the first line of an entry: magic, format, sha256 of the source text, sha256 of the payload
_ENTRY_MAGIC = b"planner-yaml-cache"
#: the names the cache writes: its entries (this format and the pickles of format 1) and
#: its temporary files; the file limit deletes only names that match
_ENTRY_NAME = re.compile(r"[0-9a-f]{40}-[0-9A-Za-z.-]+\.(?:json|pickle)")
_TEMP_NAME = re.compile(r"\.[0-9a-f]{40}-[0-9A-Za-z.-]+\.json\.[0-9a-z_]+\.tmp")
#: tag of an encoded non-JSON value (a key no YAML mapping may hold as it is: a mapping
#: with a key that starts with NUL is itself encoded as pairs)
_TAG = "\x00t"
#: what :func:`get` returns for no usable entry
MISS = object()
#: the folder for each setting of the environment variables it depends on (None: no cache)
_cache_dirs: dict[tuple[str, str], Path | None] = {}
#: the open flags of an entry: never follow a link, never wait on a FIFO or a device
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_DIR_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
#: the cache needs these (POSIX): folder-relative calls and links never followed
_CACHE_SUPPORTED = (
    hasattr(os, "O_NOFOLLOW")
    and hasattr(os, "O_DIRECTORY")
    and os.open in os.supports_dir_fd
    and os.rename in os.supports_dir_fd  # os.replace takes the same arguments
    and os.unlink in os.supports_dir_fd
    and hasattr(os, "getuid")
)


def parse_cache_dir() -> Path | None:
    """Where parsed YAML texts are kept: ``$PLANNER_CACHE_DIR/yaml``, else
    ``$XDG_CACHE_HOME/planner/yaml``, else ``~/.cache/planner/yaml``; None where it cannot be
    created (then every process parses; nothing else changes). ``PLANNER_CACHE_DIR=off``
    turns the cache off.

    The folders it creates are private (mode 0700 whatever the umask); a folder that is a
    link, is not the user's, or that others may write is never read or written
    (:func:`_open_cache_dir` checks it again at each use)."""
    env = os.environ.get("PLANNER_CACHE_DIR", "").strip()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    if (env, xdg) not in _cache_dirs:
        path: Path | None = None
        if _CACHE_SUPPORTED and env.lower() not in ("off", "0", "none"):
            try:
                base = Path(env) if env else Path(xdg or Path.home() / ".cache") / "planner"
                path = base / "yaml"
                _make_private_dirs(path)
                fd = _open_cache_dir(path)
                if fd is None:
                    path = None
                else:
                    os.close(fd)
            except (OSError, RuntimeError, ValueError):  # unwritable, or no home directory
                path = None
        _cache_dirs[(env, xdg)] = path
    return _cache_dirs[(env, xdg)]


def _make_private_dirs(path: Path) -> None:
    """Create ``path`` and its missing parents with mode 0700 (``mkdir`` applies the umask,
    which can only take bits away from 0700, so the mode holds under any umask)."""
    missing = []
    p = path
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    for p in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(p, 0o700)


def _private(st: os.stat_result) -> bool:
    """The user's own, and nobody else may write it."""
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _open_cache_dir(path: Path) -> int | None:
    """A descriptor of the cache folder, or None where it must not be used: a link, not a
    folder, not the user's, or writable by the group or others (another user could plant or
    swap entries). Every later call works relative to this descriptor, so a folder swapped
    after the check is not the one used."""
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode) and _private(st):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def cache_key(text: str) -> str:
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20)
    return f"{digest.hexdigest()}-{_PARSE_FORMAT}"


def _text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _encode(value: Any) -> Any:
    """``value`` (what the safe YAML loader builds) as plain JSON data: dates, datetimes,
    bytes, sets, tuples and mappings with keys other than strings become tagged objects
    ``{"\\0t": kind, "v": ...}``; anything else is a :class:`TypeError` (nothing is kept)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_encode(x) for x in value]
    if isinstance(value, dict):
        if all(type(k) is str and not k.startswith("\x00") for k in value):
            return {k: _encode(v) for k, v in value.items()}
        return {_TAG: "map", "v": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, dt.datetime):  # before date: a datetime is a date
        return {_TAG: "datetime", "v": value.isoformat()}
    if isinstance(value, dt.date):
        return {_TAG: "date", "v": value.isoformat()}
    if isinstance(value, bytes):
        return {_TAG: "bytes", "v": base64.b64encode(value).decode("ascii")}
    if isinstance(value, tuple):
        return {_TAG: "tuple", "v": [_encode(x) for x in value]}
    if isinstance(value, (set, frozenset)):
        return {_TAG: "set", "v": [_encode(x) for x in value]}
    raise TypeError(f"not kept in the parse cache: {type(value).__name__}")


def _decode_tagged(obj: dict) -> Any:
    """``json.loads``' object hook: a tagged object back to its value; an unknown tag or a
    malformed one raises (the entry is a miss)."""
    if _TAG not in obj:
        return obj
    kind, v = obj[_TAG], obj["v"]
    if len(obj) != 2:
        raise ValueError("malformed tag")
    if kind == "date":
        return dt.date.fromisoformat(v)
    if kind == "datetime":
        return dt.datetime.fromisoformat(v)
    if kind == "map":
        return {_hashable(k): x for k, x in v}
    if kind == "tuple":
        return tuple(v)
    if kind == "set":
        return {_hashable(x) for x in v}
    if kind == "bytes":
        return base64.b64decode(v.encode("ascii"), validate=True)
    raise ValueError(f"unknown tag {kind!r}")


def _hashable(key: Any) -> Any:
    if isinstance(key, (list, dict)):
        raise ValueError("unhashable key")
    return key


def get(key: str, text: str) -> Any:
    """The value kept under ``key`` for ``text``, or :data:`MISS`: no usable folder, or an
    entry that is absent, not a regular file of the user's that only the user may write,
    too large, or whose header (format, sha256 of ``text``, sha256 of the payload) or
    payload does not match. Nothing in an entry is ever run: it is JSON data."""
    d = parse_cache_dir()
    if d is None:
        return MISS
    dfd = _open_cache_dir(d)
    if dfd is None:
        return MISS
    try:
        data = _read_entry(dfd, f"{key}.json")
    finally:
        os.close(dfd)
    if data is None:
        return MISS
    head, _, payload = data.partition(b"\n")
    want = b" ".join(
        (
            _ENTRY_MAGIC,
            _PARSE_FORMAT.encode(),
            _text_sha(text).encode(),
            hashlib.sha256(payload).hexdigest().encode(),
        )
    )
    if head != want:
        return MISS
    try:
        return json.loads(payload, object_hook=_decode_tagged)
    except Exception:  # noqa: BLE001 - a damaged entry is a miss, never an error
        return MISS


def _read_entry(dfd: int, name: str) -> bytes | None:
    """The bytes of ``name`` in the folder ``dfd`` if it is a regular file of the user's
    that only the user may write and not over :data:`PARSE_CACHE_MAX_BYTES`; else None.
    Opened without following a link and without blocking (a FIFO is refused, not waited on)."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dfd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) and _private(st)):
            return None
        if st.st_size > PARSE_CACHE_MAX_BYTES:
            return None
        chunks, left = [], st.st_size + 1  # one byte more: a file that grew is refused
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) == st.st_size else None
    except OSError:
        return None
    finally:
        os.close(fd)


def put(key: str, text: str, value: Any) -> None:
    """Keep ``value`` (parsed from ``text``) under ``key``: written to a private temporary
    file (mode 0600) in the cache folder and renamed over the entry, so a reader sees the old
    entry or the new one; then the oldest entries past :data:`PARSE_CACHE_MAX_FILES` go
    (only files named as the cache names its own). A failure keeps nothing and is no
    error; a folder that is not private is not written into."""
    d = parse_cache_dir()
    if d is None:
        return
    try:
        payload = json.dumps(_encode(value), ensure_ascii=False, separators=(",", ":"))
        body = payload.encode("utf-8", "surrogatepass")
    except (TypeError, ValueError, RecursionError):
        return
    head = b" ".join(
        (
            _ENTRY_MAGIC,
            _PARSE_FORMAT.encode(),
            _text_sha(text).encode(),
            hashlib.sha256(body).hexdigest().encode(),
        )
    )
    dfd = _open_cache_dir(d)
    if dfd is None:
        return
    name = f"{key}.json"
    tmp = f".{name}.{os.getpid()}_{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=dfd,
        )
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(head + b"\n" + body)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)  # atomic, over the old entry
        tmp = ""
        _prune(dfd)
    except OSError:
        pass
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
        os.close(dfd)


def _prune(dfd: int) -> None:
    """Delete the oldest of the cache's own files past :data:`PARSE_CACHE_MAX_FILES` (and
    temporary files over an hour old); a file named otherwise, a link or a folder stays."""
    now = time.time()
    kept: list[tuple[float, str]] = []
    with os.scandir(dfd) as it:
        for e in it:
            try:
                if e.is_symlink() or not e.is_file(follow_symlinks=False):
                    continue
                if _ENTRY_NAME.fullmatch(e.name):
                    kept.append((e.stat(follow_symlinks=False).st_mtime, e.name))
                elif (
                    _TEMP_NAME.fullmatch(e.name)
                    and now - e.stat(follow_symlinks=False).st_mtime > 3600
                ):
                    os.unlink(e.name, dir_fd=dfd)
            except OSError:
                continue
    kept.sort()
    for _, old in kept[: max(0, len(kept) - PARSE_CACHE_MAX_FILES)]:
        with contextlib.suppress(OSError):
            os.unlink(old, dir_fd=dfd)
