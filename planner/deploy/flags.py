"""Engine flags per release: ``data/engine_flags.yaml`` read once, and the spelling of each
setting a launch command needs for one engine release.

Every spelling carries the first and last release whose argument definitions were read with
it (``since`` / ``until``, both read releases); a release between two read ones takes the
flags of the newest read release at or below it (its *floor*, stated in the emitted script).
A setting whose flag the release lacks is a one-line :class:`~planner.errors.PlannerError`
naming the flag and the release.
"""

from __future__ import annotations

import functools
import re
from datetime import date
from pathlib import Path

from pydantic import Field

from planner.catalog.records import Frozen
from planner.errors import PlannerError
from planner.files import load_yaml

FLAGS_FILE = Path(__file__).resolve().parent.parent.parent / "data" / "engine_flags.yaml"

_V = re.compile(
    r"^v?(?P<num>\d+(?:\.\d+){0,3})(?P<pre>(?:a|b|rc)\d*)?(?:\.?post(?P<post>\d*))?"
    r"(?:\.?dev(?P<dev>\d*))?(?:\+[0-9A-Za-z.]+)?$"
)
_PRE = {"a": 0, "b": 1, "rc": 2}


def release_order(text: str) -> tuple | None:
    """A PEP 440 sort key of a release (``0.14.0rc3.dev30`` < ``0.14.0rc3`` < ``0.14.0`` <
    ``0.14.0.post1``); None for a text that is not a version (a commit)."""
    m = _V.match(text.strip())
    if m is None:
        return None
    nums = [int(x) for x in m.group("num").split(".")]
    nums += [0] * (5 - len(nums))
    pre, post, dev = m.group("pre"), m.group("post"), m.group("dev")
    if pre:
        kind = re.match(r"[a-z]+", pre).group(0)
        pre_key: tuple = (0, _PRE[kind], int(pre[len(kind) :] or 0))
    elif dev is not None and post is None:
        pre_key = (-1,)
    else:
        pre_key = (1,)
    post_key = int(post or 0) if post is not None else -1
    dev_key = int(dev or 0) if dev is not None else 10**9
    return (tuple(nums), pre_key, post_key, dev_key)


class ReadRelease(Frozen):
    """One release whose argument definitions were read."""

    release: str = Field(min_length=1, description="the release as the engine tags it")
    files: tuple[str, ...] = Field(min_length=1, description="files read, as in the repository")
    source: str = Field(min_length=1, description="URL of the files at the release tag")
    read: str = Field(min_length=1, description="what was read (wheel, tag, commit)")
    as_of: date


class Spelling(Frozen):
    """One spelling of a setting, valid from ``since`` to ``until`` (read releases)."""

    flag: str = Field(min_length=1)
    since: str = Field(min_length=1)
    until: str | None = None
    source: str = Field(min_length=1)
    as_of: date


class ValueRange(Frozen):
    """A choice value of a setting, present from ``since`` to ``until`` (read releases)."""

    value: str = Field(min_length=1)
    since: str = Field(min_length=1)
    until: str | None = None


class Setting(Frozen):
    """A setting the emitter sets, with its spellings over releases and, for choice
    settings, the values the emitter passes (a value not listed is not checked)."""

    what: str = Field(min_length=1, description="what the setting is, for error messages")
    spellings: tuple[Spelling, ...] = Field(min_length=1)
    values: tuple[ValueRange, ...] = ()


class Engine(Frozen):
    """One engine: its read releases (oldest first) and its settings."""

    name: str
    repo: str
    notes: str | None = None
    releases: tuple[ReadRelease, ...] = Field(min_length=1)
    settings: dict[str, Setting]


class EngineFlags(Frozen):
    engines: dict[str, Engine]


@functools.lru_cache(maxsize=4)
def load_engine_flags(path: str | None = None) -> EngineFlags:
    """``data/engine_flags.yaml`` (or ``path``) as an :class:`EngineFlags`."""
    p = Path(path) if path else FLAGS_FILE
    data = load_yaml(p.read_text(encoding="utf-8"), p)
    try:
        out = EngineFlags.model_validate(data)
    except Exception as e:  # pydantic's message, first line
        raise PlannerError(f"{p}: {str(e).splitlines()[0]}") from None
    for eid, eng in out.engines.items():
        names = [r.release for r in eng.releases]
        for key, s in eng.settings.items():
            for sp in s.spellings:
                for r in (sp.since, sp.until):
                    if r is not None and r not in names:  # pragma: no cover - data check
                        raise PlannerError(
                            f"{p}: {eid}.{key} {sp.flag}: release {r} is not among the read "
                            f"releases ({', '.join(names)})"
                        )
    return out


class Resolved(Frozen):
    """The release a script is emitted for and the read release whose flags it uses."""

    engine: str
    release: str = Field(description="the release asked for")
    read: str = Field(description="the read release whose flags are used (its floor)")
    how: str = Field(description="why this release, for the script's header")
    source: str

    def note(self) -> str:
        same = self.read == self.release
        return (
            f"{self.engine} {self.release} ({self.how}); flags checked against "
            + (f"{self.engine} {self.read}" if same else f"{self.read}, the newest read "
               f"release at or below {self.release}")
            + f": {self.source}"
        )  # fmt: skip


def _order(eng: Engine, i: int) -> tuple:
    """The sort key of read release ``i``: its version, or for a commit (``main@00209af1``)
    the version of the nearest numbered read release listed before it (the list is oldest
    first), so a commit read after 1.2.0 is the floor of releases above 1.2.0 only."""
    for r in reversed(eng.releases[: i + 1]):
        key = release_order(r.release)
        if key is not None:
            return key
    return ((0,),)


def _index(eng: Engine, release: str) -> int:
    return [r.release for r in eng.releases].index(release)


def resolve(
    engine: str,
    release: str | None,
    how: str,
    known: tuple[str, ...] = (),
    flags: EngineFlags | None = None,
) -> Resolved:
    """The read release whose flags an emitted script for ``engine`` ``release`` uses.

    Parameters
    ----------
    engine : str
        Framework id.
    release : str or None
        The release to emit for; None: the newest read release.
    how : str
        Why this release (printed in the script's header).
    known : tuple of str
        Releases with benchmark rows; a release neither read nor among these is unknown.
    flags : EngineFlags, optional
        Default :func:`load_engine_flags`.

    Raises
    ------
    PlannerError
        An engine without flags, an unknown release, or one older than every read release.
    """
    fl = flags or load_engine_flags()
    eng = fl.engines.get(engine)
    if eng is None:
        raise PlannerError(
            f"no launch flags for engine {engine!r} in data/engine_flags.yaml; engines with "
            f"flags: {', '.join(sorted(fl.engines))}"
        )
    read = [r.release for r in eng.releases]
    if release is None:
        r = eng.releases[-1]
        return Resolved(engine=engine, release=r.release, read=r.release, how=how, source=r.source)
    if release in read:
        r = eng.releases[read.index(release)]
        return Resolved(engine=engine, release=release, read=release, how=how, source=r.source)
    key = release_order(release)
    if key is None or not any(release_order(k) == key for k in known):
        listed = sorted(set(read) | set(known), key=lambda x: release_order(x) or ((0,),))
        raise PlannerError(f"unknown {engine} release {release!r}; known: {', '.join(listed)}")
    below = [r for i, r in enumerate(eng.releases) if _order(eng, i) <= key]
    if not below:
        raise PlannerError(
            f"{engine} {release}: older than every release whose flags were read "
            f"({', '.join(read)}); emit for one of those"
        )
    r = below[-1]
    return Resolved(engine=engine, release=release, read=r.release, how=how, source=r.source)


def _in(eng: Engine, i: int, since: str, until: str | None) -> bool:
    hi = _index(eng, until) if until else len(eng.releases) - 1
    return _index(eng, since) <= i <= hi


def flag(
    res: Resolved, key: str, flags: EngineFlags | None = None, value: str | None = None
) -> str:
    """The spelling of setting ``key`` in ``res``'s read release (and ``value`` checked
    when the setting lists it).

    Raises
    ------
    PlannerError
        The release has no flag for it, or lacks the value (named with the releases that
        have it).
    """
    eng = (flags or load_engine_flags()).engines[res.engine]
    s = eng.settings.get(key)
    if s is not None and value is not None:
        ranges = [v for v in s.values if v.value == value]
        i = _index(eng, res.read)
        if ranges and not any(_in(eng, i, v.since, v.until) for v in ranges):
            have = "; ".join(f"{v.since}" + (f"-{v.until}" if v.until else "+") for v in ranges)
            raise PlannerError(
                f"{res.engine} {res.release} has no value {value!r} for {s.what} (read at "
                f"{res.read}; {value} in {have}); emit for a release that has it"
            )
    if s is None:
        raise PlannerError(f"{res.engine}: no flag for {key!r} in data/engine_flags.yaml")
    i = _index(eng, res.read)
    for sp in reversed(s.spellings):
        lo = _index(eng, sp.since)
        hi = _index(eng, sp.until) if sp.until else len(eng.releases) - 1
        if lo <= i <= hi:
            return sp.flag
    have = "; ".join(
        f"{sp.flag} in {sp.since}" + (f"-{sp.until}" if sp.until else "+") for sp in s.spellings
    )
    raise PlannerError(
        f"{res.engine} {res.release} has no flag for {s.what} (flags read at {res.read}; "
        f"{have}); emit for a release that has it"
    )


def has(res: Resolved, key: str, flags: EngineFlags | None = None) -> bool:
    """Whether ``res``'s release has a flag for setting ``key``."""
    try:
        flag(res, key, flags)
    except PlannerError:
        return False
    return True


def all_flags(engine: str, read: str, flags: EngineFlags | None = None) -> set[str]:
    """Every flag spelling valid in read release ``read`` of ``engine`` (for checks)."""
    eng = (flags or load_engine_flags()).engines[engine]
    i = _index(eng, read)
    out = set()
    for s in eng.settings.values():
        for sp in s.spellings:
            hi = _index(eng, sp.until) if sp.until else len(eng.releases) - 1
            if _index(eng, sp.since) <= i <= hi:
                out.add(sp.flag)
    return out
