"""Calibration profiles: fitted :class:`EfficiencyParams` per (vendor, framework, arch, gpu,
precision) node, saved as YAML, the ONE resolver from a deployment to its parameters
(:func:`resolve_params`) and the ONE error band of a prediction (:func:`error_band`). Lives
below every predictor that needs parameters.

The hierarchy (each node shrunk toward its parent by the fit, ``planner.calibration.fit``)::

    global -> vendor -> vendor x framework -> x arch -> x gpu -> x precision
    global -> framework (all vendors)

and one child per split family (``Profile.split_families``, :data:`SPLIT_FAMILIES`: dense)
under every node of several families; release nodes below (``release_profile``).

An unmeasured (gpu, framework, precision) borrows from its nearest measured relative: the
nearest GPU of its architecture (same framework and precision), same GPU other precision,
same vendor + framework (+ arch), same vendor, same framework (other vendors), global; a split
family uses only relatives holding its rows (their family child) unless none does.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pydantic import Field, ValidationError

from planner.catalog.bandwidth import transfer_params
from planner.catalog.catalog import DATA_DIR, Catalog, load_catalog
from planner.catalog.efficiency import PRIOR, EfficiencyParams
from planner.catalog.records import Frozen, field_error
from planner.catalog.siblings import _describe, _key_of, _rows, nearest_sibling
from planner.errors import PlannerError, read_text, shown
from planner.files import IdentityMemo, atomic_write_text, load_yaml

DEFAULT_PROFILE = DATA_DIR / "calibration" / "profile.yaml"


# =========================================================================== profile
class ProfileNode(Frozen):
    """Fitted parameters of one node of the hierarchy."""

    vendor: str | None = None
    framework: str | None = None
    arch: str | None = None
    gpu: str | None = None
    precision: str | None = None
    level: int = Field(ge=0, le=5)
    n_rows: int = Field(ge=0)
    sources: tuple[str, ...] = ()
    #: the GPUs whose rows the node was fitted on (names the donor of a transfer)
    gpus: tuple[str, ...] = ()
    in_sample_mdape: float | None = None
    params: EfficiencyParams
    #: what fitted the serving terms on iteration logs (planner.calibration.iterations),
    #: None when they are the parent's or priors
    serving_fit: str | None = None
    #: the model family (:data:`FAMILIES`) whose rows alone the node was fitted on: a child
    #: of the node with the same key and ``family`` ""; "" = rows of every family
    family: str = ""
    #: the model families of the node's rows (``?``: a model that could not be read);
    #: empty in profiles written before families (then any family may use the node)
    families: tuple[str, ...] = ()
    release: str = ""  #: a release node's engine release (``0.11.0``), else ""

    @property
    def label(self) -> str:
        parts = [
            x
            for x in (self.vendor if not (self.gpu or self.arch) else None, self.framework,
                      self.gpu or self.arch, self.precision)
            if x
        ]  # fmt: skip
        label = "/".join(parts) if parts else "global (all frameworks)"
        return f"{label} [{self.family}]" if self.family else label

    def holds(self, family: str | None) -> bool:
        """Whether the node's rows include models of ``family`` (True when either is
        unknown: no family asked, or a profile that does not record them)."""
        return not family or not self.families or family in self.families


class ErrorBand(Frozen):
    """Out-of-sample spread of one provenance tier: quantiles of measured / predicted
    throughput (speed) over rows held out by source (``planner.calibration.bands``)."""

    ratio_p10: float = Field(gt=0)
    ratio_p90: float = Field(gt=0)
    n_rows: int = Field(ge=0)
    n_sources: int = Field(ge=0)


#: the calibration profile format this planner writes; it reads every one in PROFILE_FORMATS
PROFILE_FORMAT = 3
#: 1: nodes without a vendor level (still read: arch implies the vendor); 2: vendor level,
#: node GPUs, error bands; 3: model-family children, the families of each node's rows and
#: the families split
PROFILE_FORMATS = (1, 2, 3)
#: model families a node may be split by (``planner.calibration.fit`` fits one child per
#: family under a node whose rows hold more than one)
FAMILIES = ("dense", "moe")
#: the families the fit splits by default (``planner.calibration.fit.fit_profile``). Dense
#: only: the step model's physics is built and validated on dense models, so a dense child
#: removes deviations that do not belong to it (MoE / MLA runs far below the physics on some
#: engines). MoE models deviate from it by model-specific amounts (MLA kernels, MXFP4 and
#: attention sinks, expert routing): an MoE child learns the deviation of whichever MoE
#: models its node holds and gives it to another one (held out, Mixtral-8x7B on H200 with
#: TensorRT-LLM v0.17 went from 13% to 37% error with an MoE child fitted mostly on gpt-oss
#: rows), so MoE predictions keep the node of every family. docs/calibration.md has the
#: leave-one-source-out numbers of both choices.
SPLIT_FAMILIES = ("dense",)


def model_family(model) -> str:
    """``moe`` or ``dense``: the family of a :class:`~planner.catalog.records.ModelArch`."""
    return "moe" if model.is_moe else "dense"


class Profile(Frozen):
    """A versioned calibration profile: fitted nodes plus the hash of the data."""

    planner_calibration_profile: int = PROFILE_FORMAT
    created: _dt.date
    data_hash: str
    data_files: tuple[str, ...]
    n_rows_fitted: int
    method: str
    nodes: tuple[ProfileNode, ...]
    #: provenance tier (and vendor / framework group, :func:`group_keys`) -> out-of-sample
    #: band (written by ``planner calibrate``); see :func:`error_band`
    error_bands: dict[str, ErrorBand] = Field(default_factory=dict)
    #: the model families (:data:`FAMILIES`) the fit gave their own child nodes; a
    #: prediction of one of them uses only nodes holding its rows (:meth:`find`); empty in
    #: profiles written before families
    split_families: tuple[str, ...] = ()
    release_nodes: tuple[ProfileNode, ...] = ()  #: one engine release's rows each

    def find(
        self,
        framework: str | None,
        arch: str | None,
        gpu: str | None,
        precision: str | None,
        vendor: str | None = None,
        family: str | None = None,
    ) -> ProfileNode | None:
        """The nearest node for a deployment (:func:`_lookup_keys` order); None if none.

        ``family`` (``dense``/``moe``): for a family of :attr:`split_families`, the nearest
        node whose rows hold that family, its family child where it has one; when no
        relative holds it, the nearest node of any family (:meth:`find_for_family` says
        which case it was). Any other family: the nearest node."""
        return self.find_for_family(framework, arch, gpu, precision, vendor, family)[0]

    def find_for_family(
        self,
        framework: str | None,
        arch: str | None,
        gpu: str | None,
        precision: str | None,
        vendor: str | None = None,
        family: str | None = None,
    ) -> tuple[ProfileNode | None, bool]:
        """(node, whether it holds ``family``) for a deployment: see :meth:`find`."""
        family = family if family in self.split_families else None
        by_key = _BY_KEY.get((self,))
        if by_key is None:  # once per profile: a search resolves hundreds of options
            by_key = _BY_KEY.put((self,), (), {(_key_of(n), n.family): n for n in self.nodes})
        nearest = None
        for k in _lookup_keys(vendor, framework, arch, gpu, precision):
            node = by_key.get((k, ""))
            if node is None and k[2] is not None:  # format 1: arch implies vendor
                node = by_key.get(((None, *k[1:]), ""))
                k = (None, *k[1:])
            if node is None:
                continue
            if not family or node.holds(family):
                return by_key.get((k, family or ""), node), True
            nearest = nearest or node
        return nearest, nearest is None


#: each profile's nodes by (fit-tree key, family), built once (profiles are frozen)
_BY_KEY = IdentityMemo(max_entries=16)


def _node_keys(vendor, fw, arch, gpu, prec) -> list[tuple]:
    """The chain of fit-tree keys (vendor, framework, arch, gpu, precision), global first;
    a node's parent is the entry before it (the framework-wide node, across vendors, is a
    child of global: :func:`_framework_key`)."""
    return [
        (None, None, None, None, None),
        (vendor, None, None, None, None),
        (vendor, fw, None, None, None),
        (vendor, fw, arch, None, None),
        (vendor, fw, arch, gpu, None),
        (vendor, fw, arch, gpu, prec),
    ]


def _framework_key(fw) -> tuple:
    """Key of the node of one framework across every vendor."""
    return (None, fw, None, None, None)


def _lookup_keys(vendor, fw, arch, gpu, prec) -> list[tuple]:
    """Keys to try for a deployment, nearest relative first: exact, same GPU, same vendor
    + framework + arch, same vendor + framework, same vendor, same framework, global."""
    chain = _node_keys(vendor, fw, arch, gpu, prec)
    keys = [chain[5], chain[4], chain[3], chain[2], chain[1]]
    if fw is not None:
        keys.append(_framework_key(fw))
    keys.append(chain[0])
    return keys


def save_profile(
    profile: Profile,
    path: str | os.PathLike[str],
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> None:
    """Write ``profile`` as YAML (atomically; an output that is one of ``inputs`` is refused)."""
    import yaml

    d = profile.model_dump(mode="json")
    text = (
        "# planner calibration profile (generated by `planner calibrate`; do not edit by hand)\n"
        + yaml.safe_dump(d, sort_keys=False, width=100)
    )
    atomic_write_text(path, text, inputs=inputs, what="calibration profile")


@lru_cache(maxsize=8)
def _load_profile_cached(path: str, mtime: float) -> Profile:
    text = read_text(path, "calibration profile", "YAML file")
    data = load_yaml(text, path, keep=True)
    if not isinstance(data, dict):
        raise PlannerError(f"{path}: not a calibration profile (expected a YAML mapping)")
    version = data.get("planner_calibration_profile")
    if version not in PROFILE_FORMATS:
        raise PlannerError(
            f"{path}: calibration profile format version {shown(version)}; this planner reads "
            f"versions {', '.join(map(str, PROFILE_FORMATS))} (regenerate it with "
            "`planner calibrate`)"
        )
    try:
        return Profile.model_validate(data)
    except ValidationError as e:
        err = field_error(e.errors()[0])
        loc = ".".join(str(x) for x in err["loc"])
        raise PlannerError(f"{path}: field '{loc}': {err['msg']}") from None


def load_profile(path: str | os.PathLike[str] | None = None) -> Profile | None:
    """The calibration profile at ``path`` (default: the bundled one; None if absent)."""
    p = Path(path) if path else DEFAULT_PROFILE
    if not p.exists():
        if path:
            raise PlannerError(f"calibration profile not found: {p}")
        return None
    return _load_profile_cached(str(p), p.stat().st_mtime)


def resolve_params(
    gpu: str,
    framework: str | None,
    precision: str | None,
    profile_path: str | os.PathLike[str] | None = None,
    catalog: Catalog | None = None,
    profile: Profile | None = None,
    family: str | None = None,
    siblings: bool = True,
) -> tuple[EfficiencyParams, str]:
    """Parameters for (gpu, framework, precision) and their provenance label.

    An unfitted (gpu, framework, precision) first takes the same framework and precision
    fitted on the nearest GPU of its architecture
    (:func:`planner.catalog.siblings.nearest_sibling`; the label names
    the donor: ``transferred from pytorch/nvidia-h200-sxm/bf16, nearest hopper sibling (198
    rows)``); only without one, the nearest pooled relative below. ``siblings=False`` skips
    that step (the rule before 2026-12-06, kept to measure what the transfer changes).

    ``family``: the model family (``dense`` or ``moe``, :func:`model_family`) of the
    prediction; when the profile split that family (``Profile.split_families``), nodes
    fitted only on other families' rows are skipped and a node with a child of this family
    gives the child (otherwise, or None: the nearest node of any family, as profiles
    without families did).

    Returns
    -------
    (EfficiencyParams, str)
        provenance is ``fit (<node>, n rows)`` when the profile has a node for exactly
        this framework, GPU and precision; ``transferred from <node>`` when the nearest
        measured relative is used (same GPU other precision, same vendor + framework +
        architecture, same vendor + framework, same vendor, same framework on other
        vendors, all data; the label names it, e.g. ``transferred from vllm on amd
        (amd-mi300x, 48 rows)``); ``prior`` without a profile. The row count names the
        family when the node is a family child (``34 dense rows``), and the label says
        when no relative holds rows of ``family``.
        :func:`error_band` turns the label into an out-of-sample interval.
    """
    cat = catalog or load_catalog()
    prof = profile if profile is not None else load_profile(profile_path)
    if prof is None:
        return PRIOR, "prior"
    g = cat.gpu(gpu)
    fw = cat.framework(framework).id if framework else None
    prec = cat.precision(precision).id if precision else None
    node, same_family = prof.find_for_family(fw, g.arch, g.id, prec, g.vendor, family)
    exact = node is not None and same_family and node.gpu == g.id and node.precision == prec
    if not exact and siblings:
        sib = nearest_sibling(prof, cat, g.id, fw, prec, family)
        if sib is not None:
            rows = _rows(sib) + ("; serving terms fit on iteration logs" if sib.serving_fit else "")
            return transfer_params(sib.params, cat.gpu(sib.gpu), g, node=sib), (
                f"transferred from {sib.framework}/{sib.gpu}/{sib.precision}, nearest "
                f"{g.arch} sibling ({rows})"
            )
    if node is None:
        return PRIOR, "prior"
    rows = _rows(node)
    if not same_family:
        rows += f"; no relative has {family} rows"
    if node.serving_fit:
        rows += "; serving terms fit on iteration logs"
    if node.gpu is not None and node.precision is not None:
        return node.params, f"fit ({node.framework}/{node.gpu}/{node.precision}, {rows})"
    return node.params, f"transferred from {_describe(node, rows)}"


# --------------------------------------------------------------------------- error bands
#: provenance tiers, nearest first; a tier without enough held-out rows borrows the band of
#: the next one (coarser relatives are never more accurate)
TIERS = (
    "fit",
    "sibling",
    "same_gpu",
    "same_arch",
    "vendor_framework",
    "vendor",
    "framework",
    "global",
    "prior",
)
#: (tier, pattern of the provenance label :func:`resolve_params` writes), tried in order
TIER_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("fit", re.compile(r"^fit \(")),
    ("sibling", re.compile(r"^transferred from \S+, nearest \S+ sibling \(")),
    ("same_gpu", re.compile(r"^transferred from \S+ on \S+, all precisions \(")),
    ("global", re.compile(r"^transferred from global fit")),
    ("framework", re.compile(r"^transferred from \S+ on all GPUs \(")),
    ("same_arch", re.compile(r"^transferred from \S+ on \S+ GPUs \(")),
    ("vendor", re.compile(r"^transferred from all frameworks on \S+ \(")),
    ("vendor_framework", re.compile(r"^transferred from \S+ on \S+ \(")),
    ("prior", re.compile(r"^prior\b")),
)
#: a tier's band is used only with at least this many held-out rows from this many sources
BAND_MIN_ROWS = 20
BAND_MIN_SOURCES = 2
#: groups of predictions whose held-out errors differ beyond the tier (AMD, vLLM and SGLang
#: rows miss far more often than NVIDIA TensorRT-LLM rows of the same tier), nearest first;
#: a band key is ``<level>:<value>`` (``vendor_framework:amd/vllm``, ``framework:sglang``,
#: ``vendor:amd``) next to the tier keys of :data:`TIERS`
GROUP_LEVELS = ("vendor_framework", "framework", "vendor")


def group_keys(vendor: str | None, framework: str | None) -> list[str]:
    """Band keys of the groups a prediction of ``framework`` on a ``vendor`` GPU belongs to,
    nearest first (:data:`GROUP_LEVELS`); levels whose value is unknown are left out."""
    keys = []
    if vendor and framework:
        keys.append(f"vendor_framework:{vendor}/{framework}")
    if framework:
        keys.append(f"framework:{framework}")
    if vendor:
        keys.append(f"vendor:{vendor}")
    return keys


def _group_label(key: str) -> str:
    level, _, value = key.partition(":")
    if level == "vendor_framework":
        vendor, _, fw = value.partition("/")
        return f"{fw} on {vendor}"
    if level == "framework":
        return f"{value} on every vendor"
    return f"every framework on {value}"


def provenance_tier(provenance: str) -> str:
    """The tier (one of :data:`TIERS`) of a provenance label; PlannerError if unknown."""
    text = (provenance or "").strip()
    for tier, pat in TIER_PATTERNS:
        if pat.search(text):
            return tier
    raise PlannerError(f"unknown provenance label {shown(text)}: cannot give an error band")


@dataclass(frozen=True)
class Band:
    """Out-of-sample error band of a prediction, as ratios of measured to predicted SPEED
    (throughput, tokens or requests per second, capacity): the true value lies in
    ``[predicted x low_ratio, predicted x high_ratio]`` for about 80% of held-out rows (p10
    to p90). For a TIME (latency, seconds per token) the band maps the other way:
    ``[predicted / high_ratio, predicted / low_ratio]`` (:meth:`time_interval`).

    Attributes
    ----------
    low_ratio, high_ratio : float or None
        p10 and p90 of measured / predicted speed; None when no band is known (no profile
        with bands)
    tier : str
        the provenance tier whose held-out rows gave the band (may be coarser than the
        prediction's own tier when that has too few rows; ``note`` says so)
    n_rows : int
        held-out rows behind the band
    n_sources : int
        sources those rows come from
    note : str
        how the band was chosen, for display
    group : str
        the vendor / framework group whose held-out rows widened the band (e.g. ``vllm on
        amd``); empty when the tier's band stands alone
    group_rows, group_sources : int
        held-out rows and sources of that group
    """

    low_ratio: float | None
    high_ratio: float | None
    tier: str
    n_rows: int
    n_sources: int = 0
    note: str = ""
    group: str = ""
    group_rows: int = 0
    group_sources: int = 0

    @property
    def known(self) -> bool:
        return self.low_ratio is not None and self.high_ratio is not None

    def describe(self) -> str:
        """One line saying what the band is, for the commands' output."""
        if not self.known:
            return self.note
        return (
            f"p10-p90 of measured/predicted throughput, {self.low_ratio:.2f}x-"
            f"{self.high_ratio:.2f}x: {self.tier} predictions held out by "
            f"{'GPU or source' if self.tier == 'sibling' else 'source'} "
            f"({self.n_rows} rows, {self.n_sources} sources)"
            + (
                f", spanning the band of {self.group} predictions held out by source "
                f"({self.group_rows} rows, {self.group_sources} sources)"
                if self.group
                else ""
            )
            + (f"; {self.note}" if self.note else "")
        )

    def speed_interval(self, predicted: float) -> tuple[float | None, float | None]:
        """(low, high) of a predicted throughput / rate / capacity [its unit]."""
        if not self.known:
            return None, None
        return predicted * self.low_ratio, predicted * self.high_ratio  # type: ignore[operator]

    def time_interval(self, predicted: float) -> tuple[float | None, float | None]:
        """(low, high) of a predicted time or cost per unit of work (seconds, $/Mtok, GPUs
        needed): a measured speed x r means a time / r."""
        if not self.known:
            return None, None
        return predicted / self.high_ratio, predicted / self.low_ratio  # type: ignore[operator]


def error_band(
    provenance: str,
    profile: Profile | None = None,
    vendor: str | None = None,
    framework: str | None = None,
) -> Band:
    """THE error band of a prediction, from its provenance label and its vendor / framework.

    Every command uses this one function: ``predict`` (``predicted_low``/``predicted_high``),
    ``estimate``, ``capacity``, ``recommend``.

    Parameters
    ----------
    provenance : str
        the label :func:`resolve_params` returned for the parameters the prediction used
        (suffixes such as ``; assumed layout ...`` are ignored)
    profile : Profile, optional
        the profile whose ``error_bands`` to use (default: the bundled profile); a profile
        without bands (a user's fit on one source) uses the bundled profile's bands
    vendor, framework : str, optional
        the GPU's vendor and the framework id of the prediction: the band also spans the
        band of the nearest group (:func:`group_keys`: same vendor and framework, same
        framework, same vendor) with at least :data:`BAND_MIN_ROWS` held-out rows from
        :data:`BAND_MIN_SOURCES` sources (:func:`band_for`)

    Returns
    -------
    Band
        ``low_ratio``/``high_ratio`` are p10/p90 of measured / predicted SPEED over rows held
        out by source (leave-one-source-out, ``planner calibrate``) whose parameters came
        from the same tier. Throughput, rate, capacity: ``[x * low_ratio, x * high_ratio]``
        (:meth:`Band.speed_interval`). Times, GPUs needed, $/Mtok (inverse of a speed):
        ``[x / high_ratio, x / low_ratio]`` (:meth:`Band.time_interval`). A tier with fewer
        than :data:`BAND_MIN_ROWS` held-out rows or :data:`BAND_MIN_SOURCES` sources takes
        the band of the next coarser tier (``note`` says so); with no band known at all,
        both ratios are None; with none as far or farther, the envelope of every measured
        band (``tier`` "envelope").

    Raises
    ------
    PlannerError
        when the label is not one :func:`resolve_params` writes
    """
    tier = provenance_tier(provenance)
    bands = profile.error_bands if profile is not None else {}
    if not bands:
        bundled = load_profile()
        bands = bundled.error_bands if bundled is not None else {}
    return band_for(tier, bands, vendor, framework)


#: kinds of comparison a paired band exists for (``pair:<kind>`` in ``error_bands``,
#: :func:`planner.calibration.bands.fit_pair_bands`): two GPUs, two engines on one GPU, two
#: precisions or layouts of one GPU and engine
PAIR_KINDS = ("gpu", "engine", "option")


def pair_band(
    kind: str, vendors: tuple[str, str] | None = None, profile: Profile | None = None
) -> ErrorBand | None:
    """The band of the ratio between two options' predictions, from paired held-out
    residuals (the same source's experiment predicted for both): p10/p90 of the true ratio
    over the predicted one. ``kind``: one of :data:`PAIR_KINDS`; ``vendors``: the two
    options' GPU vendors (the band of pairs of that vendor, or of mixed vendors, where it
    has enough pairs; else the band of every pair). None when the profile (or, without
    bands, the bundled one) has too few pairs (:data:`BAND_MIN_ROWS` from
    :data:`BAND_MIN_SOURCES` sources)."""
    if kind not in PAIR_KINDS:
        raise PlannerError(f"unknown comparison kind {shown(kind)}: one of {', '.join(PAIR_KINDS)}")
    bands = profile.error_bands if profile is not None else {}
    if not bands:
        bundled = load_profile()
        bands = bundled.error_bands if bundled is not None else {}
    if vendors is not None:
        both = vendors[0] if vendors[0] == vendors[1] else "mixed"
        b = _usable(bands.get(f"pair:{kind}:{both}"))
        if b is not None:
            return b
    return _usable(bands.get(f"pair:{kind}"))


def _usable(b: ErrorBand | None) -> ErrorBand | None:
    ok = b is not None and b.n_rows >= BAND_MIN_ROWS and b.n_sources >= BAND_MIN_SOURCES
    return b if ok else None


def band_for(
    tier: str,
    bands: dict[str, ErrorBand],
    vendor: str | None = None,
    framework: str | None = None,
) -> Band:
    """The band of a prediction of ``tier`` for ``framework`` on a ``vendor`` GPU: the tier's
    band (:func:`band_for_tier`) widened to span the band of the nearest group with enough
    held-out rows (:func:`group_keys`). The tier pools every framework and vendor, the group
    every tier: neither alone says how far off this prediction may be, so the band spans
    both. Without a usable group band it is the tier's band."""
    t = band_for_tier(tier, bands)
    for key in group_keys(vendor, framework):
        g = _usable(bands.get(key))
        if g is None:
            continue
        if not t.known:
            return Band(g.ratio_p10, g.ratio_p90, tier, 0, 0, t.note, _group_label(key),
                        g.n_rows, g.n_sources)  # fmt: skip
        return Band(
            min(t.low_ratio, g.ratio_p10),  # type: ignore[type-var]
            max(t.high_ratio, g.ratio_p90),  # type: ignore[type-var]
            t.tier, t.n_rows, t.n_sources, t.note, _group_label(key), g.n_rows, g.n_sources,
        )  # fmt: skip
    return t


def band_for_tier(tier: str, bands: dict[str, ErrorBand]) -> Band:
    """The band of ``tier`` from a tier -> :class:`ErrorBand` table, borrowing from the
    next coarser tier with enough rows (see :func:`error_band`)."""

    def usable(t):
        return _usable(bands.get(t))

    i = TIERS.index(tier)
    for t in TIERS[i:]:
        b = usable(t)
        if b is not None:
            note = "" if t == tier else f"{tier} has too few held-out rows; band of {t}"
            # a farther relative is never trusted more than a nearer one: the band also
            # spans every nearer tier's band
            nearer = [n for n in (usable(x) for x in TIERS[: TIERS.index(t)]) if n is not None]
            lo = min([b.ratio_p10, *(n.ratio_p10 for n in nearer)])
            hi = max([b.ratio_p90, *(n.ratio_p90 for n in nearer)])
            return Band(lo, hi, t, b.n_rows, b.n_sources, note)
    # nothing as far or farther was measured: the envelope of every measured band
    usable = [(t, b) for t, b in bands.items() if t in TIERS and b.n_rows >= BAND_MIN_ROWS]
    if usable:
        return Band(
            min(b.ratio_p10 for _, b in usable), max(b.ratio_p90 for _, b in usable),
            "envelope", sum(b.n_rows for _, b in usable), max(b.n_sources for _, b in usable),
            f"no held-out rows for {tier} or coarser; envelope of the bands of "
            + ", ".join(t for t, _ in usable),
        )  # fmt: skip
    return Band(None, None, tier, 0, 0, "no error band known (profile without error bands)")


# --------------------------------------------------------------------------- parameters
def resolve_efficiency(
    gpu: str,
    framework: str | None,
    precision: str,
    profile_path: str | os.PathLike[str] | None = None,
    catalog: Catalog | None = None,
    family: str | None = None,
) -> tuple[EfficiencyParams, str]:
    """Efficiency parameters for (gpu, framework, precision) and where they come from.

    :func:`resolve_params` with the CLI's conventions (an empty ``framework`` means none).

    Parameters
    ----------
    gpu, framework, precision : catalog ids (``framework`` may be empty)
    profile_path : a calibration profile (YAML) to use instead of the bundled fits
    catalog : the catalogs the ids refer to (default: the bundled ones)
    family : the model family, ``dense`` or ``moe`` (:func:`model_family`)

    Returns
    -------
    (EfficiencyParams, str)
        the parameters and their provenance
    """
    return resolve_params(
        gpu, framework or None, precision, profile_path, catalog=catalog, family=family
    )
