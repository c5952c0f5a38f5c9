"""Engine releases: the ``framework_version`` text of a benchmark row parsed into a release.

A row's ``framework_version`` is free text (``planner/benchmarks/README.md``): a version
first (``"0.12.0 | trtllm-bench ..."``, ``"v0.11.0 | vllm server ..."``), the engine's name and a
version (``"vLLM 0.10.1 (rocm/vllm:..., ROCm 6.4.1) | ..."``), or the container image the
engine ran in (``"image lmsysorg/sglang:v0.5.12-cu130 | SGLang"``). :func:`parse_release` reads
only these shapes and returns None for anything else (a commit, a branch, ``"not stated"``,
an MLPerf harness, an image whose tag is another product's version, such as NVIDIA Dynamo's
runtime images): a release is never guessed. :func:`unparsed_versions` lists what was not read.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import Field

from planner.catalog.records import Frozen
from planner.errors import PlannerError

#: X.Y[.Z[.W]] then an optional pre-release (a1, b2, rc5, bare ``a``), ``.postN``, ``.devN``
#: (N optional) and a local label ``+...`` (PEP 440 spelling, as the engines tag releases)
_VERSION = (
    r"(?P<num>\d+(?:\.\d+){1,3})"
    r"(?P<pre>(?:a|b|rc)\d*)?"
    r"(?P<post>\.post\d+)?"
    r"(?P<dev>\.dev\d*)?"
    r"(?:\+(?P<local>[0-9A-Za-z.]+))?"
)
#: a version that ends where the token ends (space, comma, parenthesis or end of text)
_END = r"(?=$|[\s,(])"
_BARE = re.compile(rf"^v?{_VERSION}{_END}")
_FULL = re.compile(rf"^v?{_VERSION}$")

#: names the data spells an engine with before its version (``"vLLM 0.10.1"``)
ENGINE_NAMES: dict[str, tuple[str, ...]] = {
    "vllm": ("vLLM",),
    "sglang": ("SGLang",),
    "trtllm": ("TensorRT-LLM",),
}
#: container repositories whose tag is the engine's own release (``v0.5.12-cu130``,
#: ``sglang-0.5.9-rocm720-...``); other images (NVIDIA Dynamo's ``tensorrtllm-runtime:0.8.1``
#: carries Dynamo's version) are not read
ENGINE_IMAGES: dict[str, tuple[str, ...]] = {
    "vllm": ("vllm/vllm-openai",),
    "sglang": ("lmsysorg/sglang", "lmsysorg/sglang-rocm", "rocm/sgl-dev"),
    "trtllm": ("nvcr.io/nvidia/tensorrt-llm/release",),
}
_IMAGE = re.compile(r"^image\s+(?P<repo>[^\s:]+):(?P<tag>\S+)")


class EngineRelease(Frozen):
    """One engine release as a benchmark row names it."""

    engine: str = Field(min_length=1, description="framework id (``vllm``, ``sglang``, ...)")
    version: tuple[int, ...] = Field(min_length=2, description="release numbers, (0, 10, 1)")
    pre: str | None = Field(
        None, description="pre-release / post / dev tag after the numbers: rc5, post1, rc6.post2"
    )
    local: str | None = Field(None, description="local build label after ``+``: cu130, rocm614")
    text: str = Field(description="the row's framework_version text, as written")
    build_notes: str | None = Field(
        None, description="what the text says besides the release (image, CUDA, client)"
    )

    @property
    def release(self) -> str:
        """The release as text, without the local label: ``0.5.12``, ``1.2.0rc6.post2``."""
        pre = self.pre or ""
        sep = "." if pre.startswith(("post", "dev")) else ""
        return ".".join(str(n) for n in self.version) + sep + pre

    @property
    def key(self) -> tuple[tuple[int, ...], str]:
        """What two rows of one release share: numbers without trailing zeros (0.17 is 0.17.0,
        as in PEP 440) and the tag; the local label and notes are not part of it."""
        v = list(self.version)
        while len(v) > 1 and v[-1] == 0:
            v.pop()
        return tuple(v), self.pre or ""

    def label(self) -> str:
        return f"{self.engine} {self.release}"


def _release(engine: str, m: re.Match, text: str, notes: str | None) -> EngineRelease:
    pre = "".join(m.group(g) or "" for g in ("pre", "post", "dev")).lstrip(".") or None
    return EngineRelease(
        engine=engine,
        version=tuple(int(x) for x in m.group("num").split(".")),
        pre=pre,
        local=m.group("local"),
        text=text,
        build_notes=notes or None,
    )


def parse_release(engine: str, text: str | None) -> EngineRelease | None:
    """The release a row's ``framework_version`` names; None when the text names none.

    Parameters
    ----------
    engine : str
        The row's ``framework`` id (``vllm``, ``sglang``, ``trtllm``, ...).
    text : str or None
        The row's ``framework_version``.

    Returns
    -------
    EngineRelease or None
        None for a text of another shape (commit, branch, "not stated", a harness name, an
        image that is not the engine's own): such texts are listed by
        :func:`unparsed_versions`, not guessed.
    """
    text = (text or "").strip()
    head, _, rest = text.partition(" | ")
    head = head.strip()
    client = rest.strip()
    m = _IMAGE.match(head)
    if m:
        repo, tag = m.group("repo"), m.group("tag")
        if repo not in ENGINE_IMAGES.get(engine, ()):
            return None
        tag = tag.removeprefix(f"{engine}-").removeprefix("v")
        # the tag's version runs to the first "-" (``0.5.12.post1-rocm720-mi35x-20260529``)
        tm = _FULL.match(tag.split("-", 1)[0])
        if tm is None:
            return None
        notes = "; ".join(x for x in (f"image {repo}:{m.group('tag')}", client) if x)
        return _release(engine, tm, text, notes)
    for name in ENGINE_NAMES.get(engine, ()):
        if head.startswith(name + " "):
            head = head[len(name) + 1 :].lstrip()
            break
    m = _BARE.match(head)
    if m is None:
        return None
    notes = "; ".join(x for x in (head[m.end() :].strip(" ,"), client) if x)
    return _release(engine, m, text, notes)


def parse_release_text(engine: str, text: str) -> EngineRelease | None:
    """A release typed by a user (``0.11.0``, ``v0.5.12``, ``1.2.0rc5``); None if malformed."""
    m = _FULL.match(text.strip())
    return _release(engine, m, text, None) if m else None


# --------------------------------------------------------------------------- published
def published_releases(data_dir: str | None = None) -> dict[str, list[EngineRelease]]:
    """Engine -> every release its package index lists (``data/engine_releases.yaml``, read
    with ``pip index versions``; empty when the file is absent). A release listed here but
    named by no benchmark row is real: it borrows the nearest release with a fit (and the
    output says so); one listed nowhere is refused."""
    from pathlib import Path

    from planner.catalog.catalog import DATA_DIR
    from planner.files import load_yaml

    path = Path(data_dir or DATA_DIR) / "engine_releases.yaml"
    if not path.exists():
        return {}
    raw = load_yaml(path.read_text(encoding="utf-8"), path) or {}
    out: dict[str, list[EngineRelease]] = {}
    for engine, rec in (raw.get("engines") or {}).items():
        rels = (parse_release_text(engine, str(v)) for v in rec.get("releases") or ())
        out[engine] = [r for r in rels if r is not None]
    return out


def release_dates(data_dir: str | None = None) -> dict[str, dict[tuple, _dt.date]]:
    """Engine -> release sort key (:func:`_order`) -> upload date on the package index
    (``data/engine_release_dates.yaml``; empty when the file is absent)."""
    from pathlib import Path

    from planner.catalog.catalog import DATA_DIR
    from planner.files import load_yaml

    path = Path(data_dir or DATA_DIR) / "engine_release_dates.yaml"
    if not path.exists():
        return {}
    raw = load_yaml(path.read_text(encoding="utf-8"), path) or {}
    out: dict[str, dict[tuple, _dt.date]] = {}
    for engine, rec in (raw.get("engines") or {}).items():
        got = out.setdefault(engine, {})
        for text, day in (rec.get("dates") or {}).items():
            rel = parse_release_text(engine, str(text))
            if rel is not None:
                got[_order(rel)] = _dt.date.fromisoformat(str(day))
    return out


def release_date(
    engine: str, release: str, dates: dict[str, dict[tuple, _dt.date]] | None = None
) -> _dt.date | None:
    """The date of ``release`` of ``engine``: its upload date on the package index
    (:func:`release_dates`); a build the index does not list (``0.7.4.dev181``, a container
    tag) takes the date of the newest listed release ordered before it (a build is cut after
    the release before it). None when the release is not a version or nothing listed
    precedes it."""
    rel = parse_release_text(engine, release)
    table = (release_dates() if dates is None else dates).get(engine, {})
    if rel is None or not table:
        return None
    key = _order(rel)
    if key in table:
        return table[key]
    before = [k for k in table if k < key]
    return table[max(before)] if before else None


# --------------------------------------------------------------------------- inventory
def release_inventory(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per engine, GPU and release: rows, first/last ``as_of`` and sources.

    ``rows`` are benchmark rows as dicts of strings (``framework``, ``framework_version``,
    ``hardware``, ``as_of``, ``source``); rows whose text names no release are left out (see
    :func:`unparsed_versions`). Sorted by engine, GPU and release number.
    """
    groups: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        rel = parse_release(str(r.get("framework") or ""), r.get("framework_version"))
        if rel is None:
            continue
        k = (rel.engine, str(r.get("hardware") or ""), rel.key)
        g = groups.setdefault(
            k,
            {"engine": rel.engine, "gpu": k[1], "release": rel.release, "rows": 0, "_d": set()},
        )
        g["rows"] += 1
        d = str(r.get("as_of") or "").strip()
        if d:
            g["_d"].add(d)
        g.setdefault("_s", set()).add(str(r.get("source") or "").strip())
    out = []
    for k in sorted(groups):
        g = groups[k]
        dates = sorted(g.pop("_d"))
        sources = sorted(s for s in g.pop("_s") if s)
        g["first_as_of"] = dates[0] if dates else None
        g["last_as_of"] = dates[-1] if dates else None
        g["sources"] = len(sources)
        out.append(g)
    return out


def unparsed_versions(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every distinct ``framework_version`` that names no release, with row count and sources."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        engine, text = str(r.get("framework") or ""), str(r.get("framework_version") or "")
        if parse_release(engine, text) is not None:
            continue
        g = groups.setdefault((engine, text), {"rows": 0, "sources": set()})
        g["rows"] += 1
        g["sources"].add(str(r.get("source") or "").strip())
    return [
        {
            "engine": e,
            "framework_version": t,
            "rows": g["rows"],
            "source": "; ".join(sorted(s for s in g["sources"] if s)) or None,
        }
        for (e, t), g in sorted(groups.items())
    ]


def parse_framework_spec(
    spec: str,
    framework_ids: Sequence[str],
    releases: Mapping[str, Sequence[EngineRelease]] | None = None,
    *,
    field: str = "--framework",
) -> tuple[str, EngineRelease | None]:
    """``ENGINE`` or ``ENGINE@RELEASE`` (``vllm@0.11.0``) -> (framework id, release or None).

    Parameters
    ----------
    spec : str
        The text typed.
    framework_ids : sequence of str
        Known engines.
    releases : mapping of str to sequence of EngineRelease, optional
        Releases with benchmark rows per engine; when given, a release with no rows is an error
        that lists the releases that have rows.
    field : str
        The flag or field named in errors.

    Raises
    ------
    PlannerError
        Unknown engine, malformed release, or a release with no rows.
    """
    engine, at, rel_text = spec.strip().partition("@")
    engine = engine.strip()
    if engine not in framework_ids:
        raise PlannerError(
            f"{field} {spec}: unknown engine {engine!r}; known: {', '.join(sorted(framework_ids))}"
        )
    if not at:
        return engine, None
    rel = parse_release_text(engine, rel_text)
    if rel is None:
        raise PlannerError(
            f"{field} {spec}: release {rel_text.strip()!r} is not a version "
            f"(write ENGINE@X.Y[.Z][rcN|.postN], e.g. {engine}@0.11.0)"
        )
    if releases is not None:
        have = releases.get(engine, ())
        match = [r for r in have if r.key == rel.key]
        if not match:
            names = sorted({r.key: r.release for r in have}.items())
            listed = ", ".join(n for _, n in names) or "none"
            raise PlannerError(
                f"{field} {spec}: no benchmark rows for {engine} {rel.release}; "
                f"releases of {engine} with rows: {listed}"
            )
    return engine, rel


# --------------------------------------------------------------------------- generations
def generation(engine: str, release: str | EngineRelease | None, catalog: Any = None) -> str | None:
    """The engine generation a release belongs to (vLLM: ``V0`` before 0.8.0, ``V1`` from it).

    Generations are data: ``generations`` of the engine in ``data/frameworks.yaml`` (name ->
    first release, with ``generations_source``). A release belongs to the generation with the
    newest first release at or before it (pre-releases of a first release, ``0.8.0rc1``,
    belong to the generation before it).

    Parameters
    ----------
    engine : str
        Framework id (``vllm``).
    release : str or EngineRelease or None
        The release (``0.9.2``, ``0.6.3.post2.dev308``).
    catalog : Catalog, optional
        Where the engine's generations are read (the bundled catalog when None).

    Returns
    -------
    str or None
        The generation's name; None when the engine lists no generations, the release is
        None or not a version, or it predates every listed generation.

    Raises
    ------
    PlannerError
        A listed first release that is not a version (names the engine and generation).
    """
    from planner.catalog.catalog import load_catalog

    if release is None:
        return None
    text = release.release if isinstance(release, EngineRelease) else str(release)
    rel = parse_release_text(engine, text)
    cat = catalog or load_catalog()
    try:
        gens = cat.framework(engine).generations
    except PlannerError:  # an engine the catalog does not list has no generations
        gens = {}
    if rel is None or not gens:
        return None
    key = _order(rel)
    best: tuple[tuple, str] | None = None
    for name, since in gens.items():
        first = parse_release_text(engine, since)
        if first is None:
            raise PlannerError(
                f"frameworks.yaml {engine}.generations.{name}: {since!r} is not a release"
            )
        if _order(first) <= key and (best is None or _order(first) > best[0]):
            best = (_order(first), name)
    return best[1] if best else None


def _order(rel: EngineRelease) -> tuple:
    """Sort key of a release: pre-releases (a, b, rc, dev) < the release < ``.postN``."""
    nums, tag = rel.key
    return nums, 2 if tag.startswith("post") else (1 if not tag else 0), tag


def split_generation(
    engine: str, release: str | None, nodes: Sequence[Any], catalog: Any = None
) -> tuple[list[Any], list[Any]]:
    """``nodes`` (anything with a ``release`` text) split into those of ``release``'s engine
    generation (:func:`generation`) and the rest. A release never borrows a node of another
    generation: vLLM V1 (0.8.0 on) schedules, batches and overlaps differently from V0, and
    a V0 node predicted the V1 rows held out 0.4-0.6x (docs/changes/2026-12-07/vllmv1.md). With no
    ``release`` (the newest is wanted) every node is kept."""
    if not release:
        return list(nodes), []
    gen = generation(engine, release, catalog)
    same = [n for n in nodes if generation(engine, n.release, catalog) == gen]
    return same, [n for n in nodes if generation(engine, n.release, catalog) != gen]
