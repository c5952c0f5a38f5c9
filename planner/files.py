"""Reading and writing the user's files safely.

One place for the mechanisms every command shares, so each reader and writer gets them the
same way (this module imports only :mod:`planner.errors`, :mod:`planner.parse_cache`, the standard
library and yaml):

- :func:`load_yaml` parses YAML text: duplicate keys are errors naming the key and both lines,
  alias expansion and nesting are bounded, messages quote at most a short excerpt; a
  catalog's parsed value is kept on disk for the next process (:mod:`planner.parse_cache`:
  data only, checked, private to the user);
- :func:`load_json` parses JSON text with the nesting bounded;
- :func:`atomic_write_text` writes an output so that the old file survives any failure;
- :class:`Progress` prints a progress line on stderr when it is a terminal;
- :func:`rare_gc` runs a block with fewer passes of Python's cyclic garbage collector;
- :class:`IdentityMemo` remembers a pure function's answer per argument objects.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from operator import is_
from pathlib import Path
from typing import IO, Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from . import parse_cache
from .errors import PlannerError, first_validation_error, printable
from .parse_cache import PARSE_CACHE_MIN_CHARS, parse_cache_dir  # noqa: F401 - re-exported

try:  # the C parser is ~10x faster; fall back where libyaml is absent
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _BaseLoader = yaml.SafeLoader

# Aliases may add at most this many nodes to a YAML document (beyond the nodes written out,
# which the size of the text bounds). The bundled catalogs have ~20,000 nodes and use few
# aliases; an alias bomb ("billion laughs") adds 10^9 and is refused at once.
YAML_MAX_NODES = 2_000_000
# Nesting deeper than this in YAML or JSON is refused (Python's recursion would fail anyway).
MAX_DEPTH = 200
MERGE_TAG = "tag:yaml.org,2002:merge"


def iter_lines(text: str) -> Iterator[str]:
    """The lines of ``text``, each with its "\\n", for ``csv.reader``.

    ``io.StringIO(text)`` copies the text into a 4-byte-per-character buffer (1.7 GB for a
    400 MB CSV); this yields slices instead, and splits only at "\\n" (unlike
    ``str.splitlines``, which also splits at characters a quoted CSV field may hold).
    """
    start, n = 0, len(text)
    while start < n:
        end = text.find("\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start : end + 1]
        start = end + 1


def excerpt(value: Any, limit: int = 80) -> str:
    """A short, printable quote of user input for an error message."""
    return printable(value, limit)


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loader that refuses duplicate mapping keys."""

    def construct_mapping(self, node: Node, deep: bool = False):  # type: ignore[override]
        if isinstance(node, MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == MERGE_TAG or not isinstance(key_node, ScalarNode):
                    continue
                key = self.construct_object(key_node)
                line = key_node.start_mark.line + 1
                try:
                    first = seen.get(key)
                except TypeError:  # unhashable key: the base class reports it
                    continue
                if first is not None:
                    raise PlannerError(
                        f"duplicate key '{excerpt(key)}' at lines {first} and {line}; "
                        "a key may appear once per mapping"
                    )
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _check_size(root: Node) -> None:
    """Refuse a node graph whose expansion (aliases counted each time) is too large or deep."""
    size: dict[int, int] = {}
    stack: list[tuple[Node, int, bool]] = [(root, 1, False)]
    on_path: set[int] = set()
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            kids = _children(node)
            total = 1 + sum(size.get(id(k), 0) for k in kids)
            # the values aliases add: the expansion less the distinct nodes (a lower bound:
            # the subtree holds at most len(size) + 1 distinct ones); a large file written
            # out adds none, however large
            if total - len(size) - 1 > YAML_MAX_NODES:
                raise PlannerError(
                    f"aliases expand it by more than {YAML_MAX_NODES:,} values (an alias "
                    "bomb?); write the values out or use fewer aliases"
                )
            size[key] = total
            continue
        if key in size:
            continue
        if key in on_path:
            raise PlannerError("a YAML alias refers to itself (recursive structure)")
        if depth > MAX_DEPTH:
            raise PlannerError(f"nested more than {MAX_DEPTH} levels deep")
        on_path.add(key)
        stack.append((node, depth, True))
        stack.extend((k, depth + 1, False) for k in _children(node) if id(k) not in size)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [x for pair in node.value for x in pair]
    return []


def load_yaml(text: str, where: str | os.PathLike[str], *, keep: bool = False) -> Any:
    """Parse YAML text from ``where`` (a file name for messages); every failure is one line.

    Duplicate keys, an alias bomb, deep nesting and syntax errors are :class:`PlannerError`
    naming ``where``; a quoted piece of the input is at most ~80 characters.

    ``keep``: a catalog file read by every process (the catalogs, the calibration profile;
    never a user's upload or one-off input). Such a text of :data:`PARSE_CACHE_MIN_CHARS` or
    more is parsed once per content: the parsed value is kept on disk
    (:func:`parse_cache_dir`) under a hash of the text, and a later process reads it back
    instead of parsing again (the bundled catalogs and calibration profile took ~0.1 s to
    parse, a tenth of a CLI run; reading them back takes ~15 ms). Only a text that parsed
    without error is kept, so the answer and every error are the same either way; an entry
    is JSON data checked against the sha256 of the text, never code
    (:mod:`planner.parse_cache`).
    """
    if not keep or len(text) < PARSE_CACHE_MIN_CHARS:
        return _parse_yaml(text, where)
    key = parse_cache.cache_key(text)
    hit = parse_cache.get(key, text)
    if hit is not parse_cache.MISS:
        return hit
    value = _parse_yaml(text, where)
    parse_cache.put(key, text, value)
    return value


def load_data_file(path: Path, model: Any, limit: int = 160) -> Any:
    """A bundled data file (``data/*.yaml``) validated by the pydantic ``model``; None where the
    file is absent. A YAML error or the first validation error is one :class:`PlannerError`
    line naming the file and the field path (the message cut to ``limit`` characters)."""
    from pydantic import ValidationError

    if not path.exists():
        return None
    raw = load_yaml(path.read_text(encoding="utf-8"), path)
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        raise first_validation_error(path.name, e, limit) from None


def _parse_yaml(text: str, where: str | os.PathLike[str]) -> Any:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_size(node)
        return loader.construct_document(node)
    except PlannerError as e:
        raise PlannerError(f"{where}: {e}") from None
    except yaml.YAMLError as e:
        raise PlannerError(f"{where}: not valid YAML: {_yaml_message(e)}") from None
    except RecursionError:
        raise PlannerError(f"{where}: nested too deeply to read") from None
    finally:
        loader.dispose()


def _yaml_message(e: yaml.YAMLError) -> str:
    if isinstance(e, yaml.MarkedYAMLError):
        mark = e.problem_mark or e.context_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        return f"{excerpt(e.problem or e.context or 'syntax error')}{where}"
    return excerpt(str(e).splitlines()[0] if str(e) else type(e).__name__)


def load_json(text: str, where: str | os.PathLike[str]) -> Any:
    """Parse JSON text from ``where``; invalid or too deeply nested input is one line."""
    depth = 0
    deepest = 0
    in_str = False
    esc = False
    for c in text:  # cheap pre-scan: json.loads recursion on deep input is not a clean error
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    raise PlannerError(
                        f"{where}: JSON nested more than {MAX_DEPTH} levels deep; "
                        "not a config or result file"
                    )
        elif c in "]}":
            depth -= 1
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise PlannerError(f"{where}: not valid JSON ({e.msg} at line {e.lineno})") from None
    except RecursionError:
        raise PlannerError(f"{where}: JSON nested too deeply to read") from None


# --------------------------------------------------------------------------- writing
#: net new container objects between two passes of the cyclic collector inside :func:`rare_gc`
RARE_GC_THRESHOLD = 1_000_000


@contextlib.contextmanager
def rare_gc(threshold: int = RARE_GC_THRESHOLD, *, ending: bool = False) -> Iterator[None]:
    """Run the block with Python's cyclic garbage collector passing only after ``threshold``
    net new container objects (Python's default: 700), then restore the thresholds.

    The recommender allocates millions of short-lived objects that reference counting
    frees; the collector's passes over the long-lived ones (numba's and pydantic's, imported
    for the run) free almost nothing and took 0.2-0.8 s of a CLI run. Cyclic garbage is
    still collected once that many objects pile up, so memory stays bounded.

    ``ending``: the process ends after the block (the CLI's own run): the collector is
    switched off instead, since the pass that restoring the thresholds sets off walks every
    object the run made (0.1-0.2 s) just before the process frees them all.
    """
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], int(threshold)), *old[1:])
    try:
        yield
    finally:
        if ending:
            gc.disable()
        gc.set_threshold(*old)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def check_output(
    path: str | os.PathLike[str] | None,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    what: str = "output",
) -> None:
    """Refuse an output path that is one of the inputs (call before long work, so that the
    refusal comes at once rather than after it)."""
    if not path:
        return
    p = Path(path)
    for src in inputs:
        if src is not None and str(src) != "" and _same_file(p, Path(src)):
            raise PlannerError(
                f"refusing to write the {what} to {printable(p)}: it is one of the input files; "
                "choose another output path"
            )
    if p.exists() and not p.is_file():
        raise PlannerError(f"cannot write {printable(p)}: not a regular file")


def atomic_write_text(
    path: str | os.PathLike[str],
    text: str,
    *,
    inputs: Iterable[str | os.PathLike[str]] = (),
    what: str = "output",
) -> None:
    """Write ``text`` to ``path`` so that nothing is lost if anything fails.

    The text goes to a temporary file in the same folder, which then replaces ``path``
    (``os.replace``), so a full disk or a size limit leaves the old file intact. An output that
    is one of ``inputs`` is refused (it would destroy the data being read), and so is an empty
    result that would replace a non-empty file. Every OS error is a :class:`PlannerError`
    naming the path.
    """
    with atomic_writer(path, inputs=inputs, what=what) as fh:
        fh.write(text)


@contextlib.contextmanager
def atomic_writer(
    path: str | os.PathLike[str],
    *,
    inputs: Iterable[str | os.PathLike[str]] = (),
    what: str = "output",
    binary: bool = False,
) -> Iterator[IO[Any]]:
    """:func:`atomic_write_text` as a stream, for outputs too large to hold as one string.

    ``with atomic_writer(path, inputs=..., what=...) as fh: fh.write(...)``: ``path`` is
    replaced only when the block ends without an error, and never by an empty result when
    it held data. ``binary``: the stream takes bytes.
    """
    p = Path(path)
    name = printable(p)
    check_output(p, inputs, what)
    tmp = None
    try:
        if p.parent and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent or ".")
        mode = {"mode": "wb"} if binary else {"mode": "w", "encoding": "utf-8", "newline": ""}
        with os.fdopen(fd, **mode) as fh:
            yield fh
            fh.flush()
            empty = fh.tell() == 0
            os.fsync(fh.fileno())
        if empty and p.is_file() and p.stat().st_size > 0:
            raise PlannerError(
                f"refusing to replace {name} with an empty {what}; nothing was written"
            )
        with contextlib.suppress(OSError):
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, p)
        tmp = None
    except OSError as e:
        raise PlannerError(f"cannot write {name}: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --------------------------------------------------------------------------- progress
class Progress:
    """A progress line on stderr, only when stderr is a terminal (quiet otherwise).

    ``with Progress("validate", total=n) as bar: ... bar.update(i)``. Updates are throttled to
    a few per second, so calling ``update`` in a tight loop costs little.
    """

    def __init__(
        self, label: str, total: int | None = None, stream=None, force: bool | None = None
    ):
        """``force``: True always shows, False never, None (default) when ``stream`` (stderr)
        is a terminal."""
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty()) if force is None else force
        self._last = 0.0
        self._shown = False

    def update(self, done: int, note: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.2 and not (self.total and done >= self.total):
            return
        self._last = now
        part = f"{done:,}/{self.total:,}" if self.total else f"{done:,}"
        pct = f" ({100 * done / self.total:.0f}%)" if self.total else ""
        line = f"{self.label}: {part}{pct}{(' ' + note) if note else ''}"
        self.stream.write("\r" + line[:100].ljust(60))
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self.enabled and self._shown:
            self.stream.write("\r" + " " * 100 + "\r")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class IdentityMemo:
    """Answers remembered per argument *objects* (compared by identity, not by value: hashing
    a catalog record field by field would cost more than the answer) plus plain hashable
    extras; emptied when it holds ``max_entries``. For pure functions of immutable records
    (frozen catalog models) asked the same question many times in one search."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._max = max_entries
        self._d: dict[tuple, tuple[tuple, Any]] = {}

    def get(self, objs: tuple, extra: tuple = ()) -> Any:
        """The answer stored for ``objs`` and ``extra``, or None."""
        hit = self._d.get((*map(id, objs), *extra))
        if hit is not None and len(hit[0]) == len(objs) and all(map(is_, hit[0], objs)):
            return hit[1]
        return None

    def put(self, objs: tuple, extra: tuple, value: Any) -> Any:
        """Store ``value`` (kept with ``objs``, so their ids stay theirs) and return it."""
        if len(self._d) >= self._max:
            self._d.clear()
        self._d[(*map(id, objs), *extra)] = (objs, value)
        return value


def precompile_bytecode(root: str | os.PathLike | None = None) -> int:
    """Write the bytecode (``__pycache__/*.pyc``) of every module under ``root`` (default:
    the ``planner`` package) that has none or a stale one; returns how many bytecode files
    it added.

    Python writes bytecode on import, except where ``PYTHONDONTWRITEBYTECODE`` is set (some
    sandboxes and containers set it) or the folder is read-only: then every process compiles
    every module from source again, 0.1-0.15 s of each CLI run on the 2-core machine. It
    still reads bytecode that exists, so :func:`planner.serving._kernel.compile_cached`
    writes it once, when it compiles the kernel on a new install (or after the sources
    changed); ``scripts/warm_up.py`` does too. A folder that cannot be written is left as
    it is."""
    import compileall

    folder = Path(root) if root is not None else Path(__file__).resolve().parent
    before = set(folder.rglob(f"*.{sys.implementation.cache_tag}.pyc"))
    with contextlib.suppress(Exception):  # an optimisation only: never a failure
        compileall.compile_dir(str(folder), quiet=2)
    return len(set(folder.rglob(f"*.{sys.implementation.cache_tag}.pyc")) - before)
