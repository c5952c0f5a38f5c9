"""Engine releases as a level of the calibration profile (issue 31).

Below every (GPU, framework, precision) fit, the profile holds one node per engine release
with enough rows (:attr:`~planner.catalog.profile.Profile.release_nodes`, fitted by
``planner.calibration.release_fit`` with the (GPU, framework, precision) parameters as their
prior). A prediction for a release takes, in this order:

1. the node of that release on the same GPU and precision (``fit (vllm@0.11.0/...)``);
2. the node of that release on the nearest GPU of the same architecture (the sibling rule of
   :func:`~planner.catalog.siblings.nearest_sibling`);
3. the node of the nearest release of the same engine on the same GPU family and precision
   (release distance: :func:`release_distance`); the output says so ("predicted from vllm
   0.6.3 rows; 0.11.0 requested") and the error band widens with the distance
   (:func:`widen_band`);
4. without any release node of the engine on that family and precision, for a named release
   on an architecture where the engine has no fit at all: the node of the nearest release
   of the engine (same precision) on another architecture, either vendor, its efficiencies
   transferred by the two datasheets (:func:`choose_release_elsewhere`; provenance tier
   ``framework``);
5. otherwise: the fit over every release (:func:`~planner.catalog.profile.resolve_params`).

Without a release named, the newest release with a node on the GPU family (and precision) is
used and the output names it.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, replace
from typing import Any

from planner.catalog.bandwidth import transfer_params
from planner.catalog.catalog import Catalog, load_catalog
from planner.catalog.efficiency import EfficiencyParams
from planner.catalog.profile import (
    Band,
    Profile,
    ProfileNode,
    load_profile,
    resolve_params,
)
from planner.catalog.release_donor import elsewhere_rank
from planner.catalog.releases import (
    EngineRelease,
    generation,
    parse_release_text,
    split_generation,
)
from planner.catalog.siblings import sibling_distance
from planner.errors import PlannerError

#: the key of ``Profile.error_bands`` holding the widening of a band per release step:
#: ``ratio_p90`` = exp(step), ``ratio_p10`` = exp(-step) (``planner.calibration.release_fit``)
RELEASE_STEP_KEY = "release:step"


def release_order(engine: str, release: str) -> tuple:
    """Sort key of a release text: numbers (trailing zeros dropped), then pre-releases (a, b,
    rc, dev) before the final release before ``.postN``."""
    rel = parse_release_text(engine, release)
    if rel is None:
        raise PlannerError(f"{engine} release {release!r} is not a version")
    nums, tag = rel.key
    rank = 2 if tag.startswith("post") else (1 if not tag else 0)
    return nums, rank, tag


def engine_releases(profile: Profile, engine: str) -> list[str]:
    """Releases of ``engine`` with a node in ``profile`` (any GPU), oldest first."""
    have = {n.release for n in profile.release_nodes if n.framework == engine and n.release}
    return sorted(have, key=lambda r: release_order(engine, r))


def release_distance(profile: Profile, engine: str, a: str, b: str) -> int:
    """How many releases apart ``a`` and ``b`` are among the releases of ``engine`` with a node
    in ``profile`` (both counted in): 0 for the same release (``0.17`` == ``0.17.0``)."""
    if release_order(engine, a) == release_order(engine, b):
        return 0
    keys = sorted({release_order(engine, r) for r in [*engine_releases(profile, engine), a, b]})
    return abs(keys.index(release_order(engine, a)) - keys.index(release_order(engine, b)))


@dataclass(frozen=True)
class ReleaseChoice:
    """Which release node a prediction uses.

    Attributes
    ----------
    engine : str
        framework id
    requested : str or None
        the release named (None: none named, the newest with data is used)
    used : str or None
        the release whose node gives the parameters (None: no release node of the engine on
        the GPU family and precision; the fit over every release is used)
    distance : int
        releases between ``requested`` and ``used`` (:func:`release_distance`); 0 when equal
        or nothing was requested
    node : ProfileNode or None
        the release node used
    note : str
        one line for the output
    """

    engine: str
    requested: str | None
    used: str | None
    distance: int
    node: ProfileNode | None
    note: str

    @property
    def older(self) -> bool:
        """The prediction is for an older build than the one requested."""
        if self.requested is None or self.used is None:
            return False
        return release_order(self.engine, self.used) < release_order(self.engine, self.requested)

    @property
    def spec(self) -> str:
        """``vllm@0.11.0`` (the release used), or the engine alone without a release node."""
        return f"{self.engine}@{self.used}" if self.used else self.engine


def _candidates(prof: Profile, g, fw: str, prec: str | None, family: str | None,
                any_arch: bool = False):  # fmt: skip
    """Release nodes of ``fw`` at ``prec`` on GPUs of ``g``'s architecture (and vendor) that a
    prediction of ``family`` may use: the family's own child where the family is split, the
    node of every family otherwise (as :meth:`Profile.find` picks base nodes). ``any_arch``:
    on GPUs of every architecture and vendor (:func:`choose_release_elsewhere`).

    Either way only nodes whose rows hold ``family``: a release's rows of dense models say
    nothing of its MoE kernels (fused experts, MLA, block-scaled fp8 GEMMs are other code
    paths of the engine), so a MoE prediction never takes a release node fitted on dense
    rows alone, as a dense one never takes a node of MoE rows alone (e.g. DeepSeek-R1 on
    MI300X with vLLM 0.7.3.dev138 was predicted from the vLLM 0.8.5 node of the ROCm
    dev-docker's Llama rows)."""
    fam = family if family in prof.split_families else ""
    out = [
        n
        for n in prof.release_nodes
        if n.framework == fw and n.precision == prec and n.holds(family or None)
        and (any_arch or (n.arch == g.arch and (n.vendor is None or n.vendor == g.vendor)))
    ]  # fmt: skip
    if fam:  # a family child replaces its node of every family
        childs = {(n.gpu, n.release) for n in out if n.family == fam}
        out = [n for n in out if n.family == fam or (n.gpu, n.release) not in childs]
    else:
        out = [n for n in out if not n.family]
    return out


def choose_release(
    profile: Profile,
    catalog: Catalog,
    gpu: str,
    framework: str,
    precision: str | None,
    release: str | EngineRelease | None = None,
    family: str | None = None,
) -> ReleaseChoice:
    """The release node for a prediction (module docstring order); ties between nodes at the
    same release distance go to the same GPU, then the nearest sibling by datasheet
    (:func:`~planner.catalog.siblings.sibling_distance`), then the newer release, then more
    rows."""
    g = catalog.gpu(gpu)
    fw = catalog.framework(framework).id
    prec = catalog.precision(precision).id if precision else None
    req = release.release if isinstance(release, EngineRelease) else release
    # only nodes of the release's engine generation (vLLM V0 / V1); none: every release's fit
    cands, other = split_generation(fw, req, _candidates(profile, g, fw, prec, family), catalog)
    where = f"{g.arch} GPUs at {prec}"
    if not cands:
        gen = f" {generation(fw, req, catalog)}" if other else ""
        note = f"no {fw}{gen} release has a fit on {where}: the fit over every release"
        d = min((release_distance(profile, fw, req, n.release) for n in other), default=0)
        return ReleaseChoice(fw, req, None, d, None, note + (f" ({req} requested)" if req else ""))

    def gpu_rank(n):
        if n.gpu == g.id:
            return 0.0
        try:
            return sibling_distance(g, catalog.gpu(n.gpu))
        except PlannerError:
            return math.inf

    def rank(n):
        d = release_distance(profile, fw, req, n.release) if req else 0
        newer = tuple(-x for x in release_order(fw, n.release)[0])
        return (d, gpu_rank(n), newer, -n.n_rows, n.gpu or "")

    if req is None:
        newest = max(release_order(fw, n.release) for n in cands)
        best = min((n for n in cands if release_order(fw, n.release) == newest), key=rank)
        note = f"{fw} {best.release}: the newest release with a fit on {where} ({best.n_rows} rows)"
        return ReleaseChoice(fw, None, best.release, 0, best, note)
    best = min(cands, key=rank)
    d = release_distance(profile, fw, req, best.release)
    if d == 0:
        note = f"{fw} {req}: fit on its own rows ({best.n_rows} rows on {best.gpu})"
    else:
        note = (
            f"predicted from {fw} {best.release} rows; {req} requested (nearest release with a "
            f"fit on {where}, {d} release{'s' if d > 1 else ''} apart)"
        )
    return ReleaseChoice(fw, req, best.release, d, best, note + _beyond(profile, fw, req))


def choose_release_elsewhere(
    profile: Profile,
    catalog: Catalog,
    gpu: str,
    framework: str,
    precision: str | None,
    release: str,
    family: str | None = None,
) -> ReleaseChoice | None:
    """The release node of step 4 of the module docstring: for a named ``release`` on a GPU
    whose architecture has neither a release node of the engine at ``precision`` nor any
    other fit of the engine (:func:`_arch_has_engine`), the node of the nearest release of
    the same engine, release series (major.minor: :func:`_series`) and precision on a GPU of
    another architecture (either vendor; of any precision when the series has no release
    node at ``precision``); ties go to the same vendor, then the nearest GPU by datasheet
    (:func:`~planner.catalog.siblings.sibling_distance`), then the newer release, then more
    rows (:func:`~planner.catalog.release_donor.elsewhere_rank`; vendor first when
    :func:`~planner.catalog.release_donor.vendor_first`). None when the series has no release node at all (the fit over every release).

    Only the same series: a series is one generation of the engine's scheduler and kernels
    (vLLM's V1 engine, SGLang 0.5); across series the vendor's pooled node stays. Held out,
    GPUStack's vLLM 0.11.0 MoE rows on the A100 moved from 27.6 % (the NVIDIA vLLM pool) to
    34.3 % when any series could give (vLLM 0.7.4.dev181 on the H200, 2025); this rule was
    added after that run, so GPUStack is no clean check of it.

    Why the release before the vendor: an engine release is one scheduler and one set of
    kernel choices for a model on every GPU it supports, while an old build on another
    architecture of the same vendor carries that build's kernels. Held out by source
    (InferenceX open results, docs/changes/2026-12-07/amdmoe.md), SGLang 0.5.8-0.5.12 on MI355X (CDNA4,
    no SGLang node of its architecture in the fold) was predicted from the only AMD SGLang
    rows left, 0.4.2.post4 on MI300X (2025): output tok/s at 0.60-0.67 of measured; from the
    0.5.3 node on H200 at 0.92-0.95. Where the architecture has a node of the engine, it
    stays first (MI300X / MI325X 0.5.x: the 0.4.2.post4 MI300X node gives 0.70-1.01, the
    H200 0.5.3 node 1.28-1.78)."""
    g = catalog.gpu(gpu)
    series = _series(framework, release)

    def of_series(p):
        return [n for n in _candidates(profile, g, framework, p, family, any_arch=True)
                if _series(framework, n.release) == series]  # fmt: skip

    cands = of_series(precision)
    if not cands:  # no release of the series at ``precision`` anywhere: any precision
        precs = {n.precision for n in profile.release_nodes if n.framework == framework}
        cands = [n for p in sorted(precs, key=str) for n in of_series(p)]
    if not cands:
        return None

    def rank(n):  # the donor order: planner.catalog.release_donor
        try:
            near = sibling_distance(g, catalog.gpu(n.gpu))
        except PlannerError:
            near = math.inf
        return elsewhere_rank(release_distance(profile, framework, release, n.release),
                              n.vendor == g.vendor, near, release_order(framework, n.release)[0],
                              n.n_rows, n.gpu or "")  # fmt: skip

    best = min(cands, key=rank)
    d = release_distance(profile, framework, release, best.release)
    note = (
        f"predicted from {framework} {best.release} rows on {best.gpu} ({best.arch}); "
        f"{release} requested (no {framework} fit on {g.arch} GPUs at {precision}: the "
        f"nearest release on another architecture, {d} release{'s' if d != 1 else ''} apart)"
    )
    return ReleaseChoice(framework, release, best.release, d, best,
                         note + _beyond(profile, framework, release))  # fmt: skip


def _series(engine: str, release: str) -> tuple:
    """The release series: the first two numbers of the release (``0.5.8`` -> (0, 5),
    ``0.11.0`` -> (0, 11), ``1.2.0rc5`` -> (1, 2))."""
    nums = release_order(engine, release)[0]
    return tuple(nums[:2]) + (0,) * (2 - len(nums[:2]))


def _arch_has_engine(profile: Profile, catalog: Catalog, g, framework: str,
                     precision: str | None, family: str | None) -> bool:  # fmt: skip
    """Whether the profile has evidence of ``framework`` on ``g``'s architecture: a release
    node of the engine there (any precision or family), a node of the engine on ``g`` or its
    architecture, or a sibling of the architecture
    (:func:`~planner.catalog.siblings.nearest_sibling`)."""
    from planner.catalog.siblings import nearest_sibling

    if any(n.framework == framework and n.arch == g.arch and n.vendor in (None, g.vendor)
           for n in profile.release_nodes):  # fmt: skip
        return True
    if nearest_sibling(profile, catalog, g.id, framework, precision, family) is not None:
        return True
    node, _ = profile.find_for_family(framework, g.arch, g.id, precision, g.vendor, family)
    return node is not None and node.framework == framework and node.arch == g.arch


def _beyond(profile: Profile, fw: str, req: str) -> str:
    """A warning when ``req`` lies outside every release with a fit: how many releases the
    package index lists between (``data/engine_releases.yaml``)."""
    from planner.catalog.releases import published_releases

    have = [release_order(fw, r) for r in engine_releases(profile, fw)]
    if not have:
        return ""
    key = release_order(fw, req)
    lo, hi = min(have), max(have)
    if lo <= key <= hi:
        return ""
    edge = hi if key > hi else lo
    between = sum(
        1
        for r in published_releases().get(fw, ())
        if min(edge, key) < release_order(fw, r.release) <= max(edge, key)
    )
    side = "newer" if key > hi else "older"
    count = f" ({between} releases on the package index between)" if between else ""
    return f"; {req} is {side} than every {fw} release with a fit{count}: an extrapolation"


#: the launch settings of ``data/engine_flags.yaml`` (read by ``planner.deploy.flags``) that
#: express a layout feature, per engine: any spelling of any listed setting is enough
LAYOUT_SETTINGS: dict[str, dict[str, tuple[str, ...]]] = {
    "expert parallelism": {
        "vllm": ("ep",), "sglang": ("ep", "enable_ep_moe"), "trtllm": ("ep",), "lmdeploy": ("ep",)
    },
    "attention data-parallel": {
        "vllm": ("dp",), "sglang": ("dp_attention",), "trtllm": ("yaml_attention_dp",),
        "lmdeploy": ("dp",),
    },
}  # fmt: skip


@functools.cache
def _engine_flags_raw() -> dict:
    """``data/engine_flags.yaml`` as read (once per process: it is ~1,000 lines)."""
    from pathlib import Path

    from planner.catalog.catalog import DATA_DIR
    from planner.files import load_yaml

    path = Path(DATA_DIR) / "engine_flags.yaml"
    return (load_yaml(path.read_text(encoding="utf-8"), path) if path.exists() else None) or {}


@functools.cache
def _first_since(engine: str) -> dict[str, str]:
    """Setting key -> the first read release of ``engine`` with any of its spellings."""
    eng = (_engine_flags_raw().get("engines") or {}).get(engine) or {}
    out: dict[str, str] = {}
    for key, s in (eng.get("settings") or {}).items():
        since = [str(sp["since"]) for sp in s.get("spellings") or () if sp.get("since")]
        since = [x for x in since if parse_release_text(engine, x) is not None]
        if since:
            out[key] = min(since, key=lambda r: release_order(engine, r))
    return out


def layout_release_floor(engine: str, layout: Any) -> tuple[str, str] | None:
    """The first release of ``engine`` whose launch flags express ``layout``'s expert
    parallelism and attention data-parallel ranks (the first read release with the flag,
    ``data/engine_flags.yaml``), and why; None when the layout uses neither or the engine
    has no such flags on file.

    >>> from planner.catalog.layout import Layout
    >>> layout_release_floor("vllm", Layout(tp=1, ep=8, attention_dp=8))[0]
    '0.8.5'
    """
    feats = [f for f, on in (("expert parallelism", layout.ep > 1),
                             ("attention data-parallel", layout.attention_dp > 1)) if on]  # fmt: skip
    if not feats or not any(engine in LAYOUT_SETTINGS[f] for f in feats):
        return None
    since, floor, why = _first_since(engine), None, []
    for f in feats:
        have = [since[k] for k in LAYOUT_SETTINGS[f].get(engine, ()) if k in since]
        if not have:
            continue
        first = min(have, key=lambda r: release_order(engine, r))
        why.append(f"{f} from {engine} {first}")
        if floor is None or release_order(engine, first) > release_order(engine, floor):
            floor = first
    return (floor, ", ".join(why)) if floor else None


def _floors(engine: str, layout: Any, model: Any, catalog: Catalog | None) -> list[tuple]:
    """(first release, what it does, why) of the layout's launch flags and the model."""
    out = []
    if layout is not None:
        fl = layout_release_floor(engine, layout)
        if fl is not None:
            out.append((fl[0], f"launch {layout.label}", f"{fl[1]}; data/engine_flags.yaml"))
    if model is not None:
        from planner.catalog.model_support import model_floor_record

        rec = model_floor_record((catalog or load_catalog()).model_support, engine, model)
        if rec is not None:
            out.append((rec.since, f"serve {model.id}", f"{model.id} ({rec.architecture}) "
                        f"from {engine} {rec.since}; data/model_support.yaml"))  # fmt: skip
    return out


def release_floor(engine: str, layout: Any = None, model: Any = None,
                  catalog: Catalog | None = None) -> tuple[str, str] | None:  # fmt: skip
    """The first release of ``engine`` that can launch ``layout``
    (:func:`layout_release_floor`) and serves ``model`` (``data/model_support.yaml``): the
    later of the two, and why; None when neither is known.

    >>> release_floor("trtllm", None, load_catalog().model("gpt-oss-120b"))[0]
    '1.0.0'
    """
    floors = _floors(engine, layout, model, catalog)
    if not floors:
        return None
    floor = max((f[0] for f in floors), key=lambda r: release_order(engine, r))
    return floor, "; ".join(f[2] for f in floors)


def _for_floor(gpu, framework, precision, release, profile_path, catalog, profile, family,
               layout, model, field) -> tuple[EfficiencyParams, str, ReleaseChoice | None] | None:  # fmt: skip
    """:func:`resolve_release_params` under a release floor (:func:`release_floor`: the
    layout's launch flags and the model's first release): a named release older than the
    floor is refused; without one, when the newest release with a fit is older, the
    prediction is for the floor release (the nearest fit of its generation, else the fit
    over every release) and the note says why. None: no floor."""
    fw = (catalog or load_catalog()).framework(framework).id
    floors = _floors(fw, layout, model, catalog)
    if not floors:
        return None
    floor = max((f[0] for f in floors), key=lambda r: release_order(fw, r))

    def above(rel: str) -> tuple[str, str]:  # what the release cannot do, and why
        hit = [f for f in floors if release_order(fw, rel) < release_order(fw, f[0])]
        return " or ".join(f[1] for f in hit), "; ".join(f[2] for f in hit)

    req = release.release if isinstance(release, EngineRelease) else release
    if req is not None:
        if release_order(fw, req) < release_order(fw, floor):
            what, why = above(req)
            where = f"{field}: " if field else ""
            tail = ", or a layout without it" if what.startswith("launch") else ""
            raise PlannerError(
                f"{where}{fw} {req} cannot {what} ({why}): name {fw}@{floor} or newer{tail}"
            )
        return None
    args = (gpu, framework, precision)
    kw = dict(profile_path=profile_path, catalog=catalog, profile=profile, family=family)
    p, prov, ch = resolve_release_params(*args, None, **kw)
    used = ch.used if ch is not None else None
    if used is None or release_order(fw, used) >= release_order(fw, floor):
        return p, prov, ch
    what, why = above(used)
    p, prov, ch = resolve_release_params(*args, floor, **kw)
    if ch is not None:
        ch = replace(ch, note=f"{fw} {used}, the newest release with a fit, cannot {what} "
                     f"({why}): {ch.note}")  # fmt: skip
    return p, prov, ch


#: what-if, OFF (docs/changes/2026-12-09/tpot.md; ``scripts/latency_rows.py --series-first``):
#: a named release whose architecture's nearest release node is of another release series
#: (major.minor, :func:`_series`) takes its own series' node on another architecture
#: (:func:`choose_release_elsewhere`, step 4) before that node of step 3
SERIES_FIRST = False


def _elsewhere(o: ProfileNode, g, cat: Catalog) -> tuple[EfficiencyParams, str]:
    """Params of release node ``o`` transferred to GPU ``g`` by the two datasheets, and the
    label of step 4 (:func:`choose_release_elsewhere`)."""
    rows = f"{o.n_rows} {o.family} rows" if o.family else f"{o.n_rows} rows"
    label = (f"transferred from {o.framework}@{o.release}/{o.gpu}/{o.precision} on "
             f"all GPUs ({rows}; nearest release on another architecture)")  # fmt: skip
    return transfer_params(o.params, cat.gpu(o.gpu), g), label


def resolve_release_params(
    gpu: str,
    framework: str | None,
    precision: str | None,
    release: str | EngineRelease | None = None,
    profile_path: str | os.PathLike[str] | None = None,
    catalog: Catalog | None = None,
    profile: Profile | None = None,
    family: str | None = None,
    layout: Any = None,
    model: Any = None,
    field: str | None = None,
) -> tuple[EfficiencyParams, str, ReleaseChoice | None]:
    """Parameters for (gpu, framework, precision, release), their provenance label and the
    release choice (:func:`choose_release`; None without a framework or profile).

    With a ``layout`` (expert parallelism, attention data-parallel ranks) or a ``model``
    (a :class:`~planner.catalog.records.ModelArch`), a release that cannot launch the layout
    or predates the model (:func:`release_floor`) is refused when named (the message starts
    with ``field``, the input that named it) and skipped when it is only the newest with a
    fit (:func:`_for_floor`): the prediction is then for the first release that can.

    The label has the shape of :func:`~planner.catalog.profile.resolve_params`' labels with
    the release in the node's name (``fit (vllm@0.11.0/nvidia-h100-sxm/fp8, 74 rows)``,
    ``transferred from vllm@0.11.0/nvidia-h200-sxm/fp8, nearest hopper sibling (18 rows)``),
    so :func:`~planner.catalog.profile.error_band` reads its tier; :func:`widen_band` adds
    the release distance.
    """
    cat = catalog or load_catalog()
    if (layout is not None or model is not None) and framework:
        out = _for_floor(gpu, framework, precision, release, profile_path, cat, profile,
                         family, layout, model, field)  # fmt: skip
        if out is not None:
            return out
    prof = profile if profile is not None else load_profile(profile_path)
    if prof is None or not framework or not prof.release_nodes:
        p, prov = resolve_params(gpu, framework, precision, profile_path, cat, prof, family)
        return p, prov, None
    choice = choose_release(prof, cat, gpu, framework, precision, release, family)
    n = choice.node
    g = cat.gpu(gpu)
    if (
        SERIES_FIRST
        and n is not None
        and choice.requested
        and n.release
        and (_series(choice.engine, n.release) != _series(choice.engine, choice.requested))
    ):  # the architecture's nearest release is of another series: that series' node elsewhere
        prec = cat.precision(precision).id if precision else None
        other = choose_release_elsewhere(prof, cat, gpu, choice.engine, prec, choice.requested,
                                         family)  # fmt: skip
        if other is not None and other.node is not None:
            return (*_elsewhere(other.node, g, cat), other)
    if n is None and choice.requested:
        fw, prec = choice.engine, cat.precision(precision).id if precision else None
        if not _arch_has_engine(prof, cat, g, fw, prec, family):
            other = choose_release_elsewhere(prof, cat, gpu, fw, prec, choice.requested, family)
            if other is not None and other.node is not None:
                return (*_elsewhere(other.node, g, cat), other)
    if n is None:
        p, prov = resolve_params(gpu, framework, precision, profile_path, cat, prof, family)
        return p, prov, choice
    rows = f"{n.n_rows} {n.family} rows" if n.family else f"{n.n_rows} rows"
    name = f"{n.framework}@{n.release}/{n.gpu}/{n.precision}"
    if n.gpu == g.id:
        return n.params, f"fit ({name}, {rows})", choice
    return n.params, f"transferred from {name}, nearest {g.arch} sibling ({rows})", choice


def release_step(profile: Profile | None = None) -> float:
    """The widening of an error band per release step [log ratio] (``error_bands`` key
    :data:`RELEASE_STEP_KEY`; the bundled profile's when ``profile`` has none); 0 when unknown."""
    bands = profile.error_bands if profile is not None else {}
    if RELEASE_STEP_KEY not in bands:
        bundled = load_profile()
        bands = bundled.error_bands if bundled is not None else {}
    b = bands.get(RELEASE_STEP_KEY)
    return math.log(b.ratio_p90) if b is not None and b.ratio_p90 > 1 else 0.0


def widen_band(band: Band, distance: int, step: float) -> Band:
    """``band`` widened by ``exp(step x distance)`` on both sides (a prediction made from
    rows of a release ``distance`` releases away from the one requested); unchanged at
    distance 0, without a known band or with ``step <= 0``."""
    if not band.known or distance <= 0 or step <= 0:
        return band
    f = math.exp(step * distance)
    note = f"widened x{f:.2f} for {distance} release{'s' if distance > 1 else ''} of distance"
    return replace(
        band,
        low_ratio=band.low_ratio / f,  # type: ignore[operator]
        high_ratio=band.high_ratio * f,  # type: ignore[operator]
        note=f"{band.note}; {note}" if band.note else note,
    )


def date_trend_ratio(rate_per_year: float, gap_years: float, cap_years: float) -> float:
    """The speed ratio of a release ``gap_years`` newer than the release whose node predicts
    it, under a trend of ``rate_per_year`` [log ratio per year]: ``exp(rate x gap)``, the gap
    clipped to ``[-cap_years, cap_years]`` (the range the trend was fitted on). A throughput
    prediction is multiplied by it, a time divided; 1 at a zero gap, a zero rate or a zero cap.

    Measured and left off (scripts/release_trend.py, docs/changes/2026-12-07/reltrend.md):
    no rate fitted without a source predicts that source's borrowed releases better."""
    if not (math.isfinite(rate_per_year) and math.isfinite(gap_years)) or cap_years < 0:
        raise PlannerError(
            f"date trend: rate {rate_per_year!r}/year, gap {gap_years!r} years and cap "
            f"{cap_years!r} years must be finite, the cap >= 0"
        )
    gap = max(-cap_years, min(cap_years, gap_years))
    return math.exp(rate_per_year * gap)
