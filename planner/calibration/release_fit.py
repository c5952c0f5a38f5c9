"""The release level of the calibration (issue 31): one node per engine release below the
(GPU, framework, precision) fit, and what its held-out rows say.

* :func:`fit_release_nodes`: for every (GPU, framework, precision, release) with at least
  :data:`RELEASE_MIN_ROWS` fittable rows, a node fitted on those rows with the parameters the
  profile gives (GPU, framework, precision) as its prior (partial pooling, as every node of
  ``planner.calibration.fit``); where the profile splits a model family (dense) and the
  release's rows hold it beside others, a child fitted on that family's rows. Rows of one
  publication without step rows move only the efficiencies (``_free_fields``).
* :func:`release_params_for_row`: the parameters a row of a known release is predicted with
  (:func:`planner.catalog.release_profile.resolve_release_params`); rows naming no release
  keep the fit over every release.
* :class:`AsOfFits`: a held-out row that names no release is predicted as of its date, by
  its fold's fit without its engine's release-named rows dated after it.
* :func:`release_widening`: the widening of the error band per release step, from rows held
  out by source whose release had no node in their fold (predicted from the nearest other
  release) against rows whose release had one.
* :func:`release_trend_check`: whether a trend of the error over release distance predicts
  held-out releases better than the nearest release (leave-one-release-out).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from planner.calibration.fit import FITTED_KINDS, PreparedRow, _fit_node, _rounded, fit_profile
from planner.catalog.catalog import Catalog, load_catalog
from planner.catalog.profile import ErrorBand, Profile, ProfileNode, resolve_params
from planner.catalog.release_donor import no_offline_nodes, offline_only
from planner.catalog.release_profile import (
    RELEASE_STEP_KEY,
    release_order,
    resolve_release_params,
)
from planner.errors import PlannerError

#: a release gets its own node only with at least this many fittable rows (fewer rows of one
#: setup cannot tell a release's kernels from the setup's; 8 gives nodes to 64 of the 110
#: engine x GPU x release groups of the bundled data, 88 nodes with their dense children)
RELEASE_MIN_ROWS = 8
#: a trend over releases is used only when it lowers the held-out error by this many points
#: of MdAPE and improves most held-out groups (:func:`release_trend_check`)
TREND_MIN_GAIN_PCT = 1.0


def _groups(rows: Sequence[PreparedRow], kinds: set[str], min_rows: int, split: Sequence[str]):
    """(vendor, framework, arch, gpu, precision, release, family) -> rows; family "" holds
    every family, a split family's child only where the release's rows are mixed."""
    g: dict[tuple, list[PreparedRow]] = {}
    for r in rows:
        if not r.release or r.vendor == "?" or r.expert_parallel:
            continue
        if r.fit_predictor(kinds) is None:
            continue
        g.setdefault((r.vendor, r.framework, r.arch, r.gpu, r.precision, r.release), []).append(r)
    out = {}
    for k, rs in g.items():
        if len(rs) < min_rows:
            continue
        out[(*k, "")] = rs
        for fam in split:
            sub = [r for r in rs if r.family == fam]
            if len(sub) >= min_rows and len(sub) < len(rs):
                out[(*k, fam)] = sub
    return out


def _with_elsewhere(only: set[tuple] | None, groups: dict[tuple, Any]) -> set[tuple] | None:
    """``only`` and, for each (framework, arch, precision) of it without a release group on
    its architecture, the (framework, arch, precision) of every group of that framework and
    precision on other architectures."""
    if only is None:
        return None
    have = {(k[1], k[2], k[4]) for k in groups}
    out = set(only)
    for fw, arch, prec in only:
        if (fw, arch, prec) not in have:
            same = {t for t in have if t[0] == fw and t[2] == prec}
            out |= same or {t for t in have if t[0] == fw}
    return out


def fit_release_nodes(
    profile: Profile,
    rows: Sequence[PreparedRow],
    catalog: Catalog | None = None,
    *,
    min_rows: int = RELEASE_MIN_ROWS,
    prior_scale: float = 1.0,
    max_nfev: int = 60,
    include_kinds: Iterable[str] = FITTED_KINDS,
    only: set[tuple] | None = None,
    **_: Any,
) -> Profile:
    """``profile`` with one release node per (GPU, framework, precision, release[, family])
    of ``rows`` holding at least ``min_rows`` fittable rows (module docstring).

    ``only``: (framework, arch, precision) triples; when given, only releases of those are
    fitted (leave-one-source-out fits the release nodes its held-out rows can use), and for
    a triple whose architecture has no release of the engine, the engine's releases at that
    precision (any, without one) on every architecture (the donors of
    :func:`~planner.catalog.release_profile.choose_release_elsewhere`)."""
    cat = catalog or load_catalog()
    kinds = set(include_kinds)
    nodes: list[ProfileNode] = []
    groups = _groups(rows, kinds, min_rows, profile.split_families)
    only = _with_elsewhere(only, groups)
    for key, rs in sorted(groups.items()):
        vendor, fw, arch, gpu, prec, rel, fam = key
        if only is not None and (fw, arch, prec) not in only:
            continue
        if no_offline_nodes() and offline_only(r.mode for r in rs):  # off: release_donor
            continue
        # a release whose rows are all of one split family starts from that family's child,
        # not from the mixed node (docs/changes/2026-12-07/mlperf70b.md)
        only_fam = {r.family for r in rs}
        prior_fam = fam or (next(iter(only_fam)) if len(only_fam) == 1 else "")
        if prior_fam not in profile.split_families:
            prior_fam = fam
        try:
            prior, _ = resolve_params(gpu, fw, prec, catalog=cat, profile=profile,
                                      family=prior_fam or None)  # fmt: skip
        except PlannerError:
            continue
        params, mdape = _fit_node(rs, prior, prior_scale, max_nfev, kinds)
        nodes.append(
            ProfileNode(
                vendor=vendor, framework=fw, arch=arch, gpu=gpu, precision=prec, level=5,
                n_rows=len(rs), sources=tuple(sorted({r.source for r in rs})), gpus=(gpu,),
                in_sample_mdape=round(mdape, 4), params=_rounded(params), family=fam,
                families=tuple(sorted({r.family or "?" for r in rs})), release=rel,
            )
        )  # fmt: skip
    return profile.model_copy(update={"release_nodes": tuple(nodes)})


def params_for(gpu, framework, precision, release, profile, catalog, family=None, *,
               asof: AsOfFits | None = None, fold: Any = None, row_id: str = ""):  # fmt: skip
    """(params, provenance, release used, release distance) of a prediction of ``release``
    (text; "" = a row naming none): the release's node where the profile has one, else the
    nearest release's (:func:`~planner.catalog.release_profile.resolve_release_params`); the
    fit over every release for a row naming none (release used "", distance 0), as of the
    row's date when ``asof`` holds a fit for it (:class:`AsOfFits`: fold ``fold``, row
    ``row_id``); the prior without a profile (a fold that could not be fitted: never the
    bundled fit)."""
    from planner.catalog.efficiency import PRIOR

    note = ""
    if asof is not None and not release and framework:
        profile, note = asof.profile_for(fold, framework, row_id, profile)
    if profile is None:
        return PRIOR, "prior" + note, "", 0
    if not release or not framework:
        p, prov = resolve_params(gpu, framework or None, precision or None, catalog=catalog,
                                 profile=profile, family=family)  # fmt: skip
        return p, prov + note, "", 0
    p, prov, ch = resolve_release_params(gpu, framework, precision or None, release,
                                         catalog=catalog, profile=profile, family=family)  # fmt: skip
    if ch is None or ch.used is None:
        return p, prov, "", 0
    return p, prov, ch.used, ch.distance


def release_params_for_row(r: PreparedRow, profile: Profile | None, catalog: Catalog,
                           asof: AsOfFits | None = None, fold: Any = None):  # fmt: skip
    """:func:`params_for` of a prepared row (of fold ``fold`` of ``asof``)."""
    return params_for(r.gpu, r.framework, r.precision, r.release, profile, catalog, r.family,
                      asof=asof, fold=fold, row_id=r.id)  # fmt: skip


def signed(engine: str, release, used: str, distance: int) -> int:
    """``distance`` with a sign: + when the release used is older than the row's (``release``:
    text or EngineRelease), - when newer, 0 when the same or either is unknown."""
    req = getattr(release, "release", release) or ""
    if not req or not used or not distance:
        return 0
    return distance if release_order(engine, used) < release_order(engine, req) else -distance


def release_cols(r: PreparedRow, used: str, distance: int) -> dict[str, Any]:
    """The release columns of an out-of-sample record: the row's release, the release whose
    node predicted it, their distance and its sign (:func:`signed`)."""
    return {"release": r.release, "release_used": used, "release_distance": distance,
            "release_signed": signed(r.framework, r.release, used, distance)}  # fmt: skip


def release_kw(fit_kw: dict[str, Any]) -> dict[str, Any]:
    """The options of a fit that the release nodes share (not ``min_rows`` or ``targets``)."""
    return {k: v for k, v in fit_kw.items() if k in ("prior_scale", "max_nfev", "include_kinds")}


def predict_rows_by_release(rows: Sequence[PreparedRow], profile: Profile | None, catalog,
                            asof: AsOfFits | None = None, fold: Any = None):  # fmt: skip
    """As :func:`planner.calibration.fit.predict_rows`, each row with its release's parameters
    (a row naming none: as of its date, where ``asof`` has a fit of fold ``fold`` for it):
    (row, value, provenance, release used, release distance)."""
    out = []
    for r in rows:
        if not r.ok:
            continue
        try:
            p, prov, used, d = release_params_for_row(r, profile, catalog, asof, fold)
            v = float(r.predict(p))  # type: ignore[misc]
        except (PlannerError, ValueError, ZeroDivisionError, OverflowError):
            continue
        out.append((r, v, prov, used, d))
    return out


# --------------------------------------------------------------------------- as of a date
#: days after a release-free row's ``as_of`` whose rows of its engine still count as the
#: engine it ran: none (``as_of`` is the date the publication states; the build it ran is no
#: newer, and a row published one day later may already run a newer one)
ASOF_GRACE_DAYS = 0


def row_day(value: Any) -> _dt.date | None:
    """The date of an ``as_of`` cell (``2024-09-20``, a date or a timestamp); None when empty
    or not a date."""
    if isinstance(value, _dt.date):
        return value if not isinstance(value, _dt.datetime) else value.date()
    try:
        return _dt.date.fromisoformat(str(value).strip()[:10])
    except ValueError:
        return None


def as_of_days(df) -> dict[str, _dt.date]:
    """Row id -> ``as_of`` date of every row of a benchmark DataFrame that has one."""
    if df is None or "as_of" not in df:
        return {}
    out = {}
    for i, v in zip(df["id"].astype(str), df["as_of"], strict=True):
        d = row_day(v)
        if d is not None:
            out[i] = d
    return out


class AsOfFits:
    """The engine as it was at a row's date (issue 31), for leave-one-source-out.

    A held-out row that names no release ran the build of its engine current at its
    ``as_of``. It is predicted by its fold's fit without the training rows of **its engine**
    that name a release and are dated more than :data:`ASOF_GRACE_DAYS` after it: builds the
    release level tells apart, published after the row, whose kernels it could not have run
    (the vLLM 0.8.5 / 0.10.2 H100 rows of 2025 moved the 2024 Argonne rows from 11.9 % to
    18.1 % held out). A row's ``as_of`` stands for its release's date (the release is no
    newer), so an old build first measured later is left out too.

    Kept: rows of other engines (they tell the GPU, which does not change with time), rows
    without a date, and the engine's rows that name no release: an unnamed build, as the
    held-out row's, which the fit over every release averages. Leaving those out as well
    (every later row of the engine) was measured and left: too few rows of an engine predate
    the 2024 sources (Argonne 18.1 -> 22.7 %, vLLM PR #7117 15.3 -> 75.8 %).

    A fold with nothing to leave out keeps its own fit (the same parameters). A user who
    names no release asks about today: nothing is dated after today, so the product's
    default (the newest release with data) is this rule at today's date.

    Parameters
    ----------
    days : dict
        row id -> ``as_of`` date (:func:`as_of_days`)
    fit_kw : dict
        the options of the fold's fit (:func:`planner.calibration.fit.fit_profile`)
    """

    def __init__(self, days: dict[str, _dt.date], **fit_kw: Any) -> None:
        self.days = days
        self.fit_kw = {k: v for k, v in fit_kw.items() if k != "targets"}
        self.plans: dict[tuple, dict[str, Any]] = {}

    def fit_fold(self, fold: Any, held: Sequence[PreparedRow], train: Sequence[PreparedRow]):
        """Plan, for each (engine, date) of the release-free rows of ``held`` (fold ``fold``),
        the fold's profile on ``train`` without that engine's release-named rows dated after
        the date (only the nodes those rows resolve to, as the fold's own fit; fitted when a
        row first needs it); nothing where no training row is left out."""
        groups: dict[tuple[str, _dt.date], list[PreparedRow]] = {}
        for r in held:
            day = self.days.get(r.id)
            if not r.release and r.framework and day is not None and r.vendor != "?":
                groups.setdefault((r.framework, day), []).append(r)
        grace = _dt.timedelta(days=ASOF_GRACE_DAYS)
        cuts: dict[tuple[str, frozenset[str]], list[tuple[_dt.date, list[PreparedRow]]]] = {}
        for (fw, day), rs in sorted(groups.items()):
            out = frozenset(t.id for t in train if self._later(t, fw, day + grace))
            if out:  # dates that leave out the same rows share one fit
                cuts.setdefault((fw, out), []).append((day, rs))
        for (fw, out), dated in cuts.items():
            targets = [(r.vendor or None, r.framework, r.arch, r.gpu, r.precision or None,
                        r.family) for _, rs in dated for r in rs]  # fmt: skip
            plan = {"train": train, "out": out, "targets": targets}
            for day, _ in dated:
                self.plans[(fold, fw, day)] = plan

    def _fit(self, plan: dict[str, Any]) -> tuple[Profile | None, int]:
        """The fit of a plan, made on first use (a row the fold never predicts, such as a
        disaggregated layout, costs nothing)."""
        if "fit" not in plan:
            cut = [t for t in plan["train"] if t.id not in plan["out"]]
            try:
                prof = fit_profile(cut, targets=plan["targets"], **self.fit_kw)
            except PlannerError:
                prof = None
            plan["fit"] = (prof, len(plan["out"]))
        return plan["fit"]

    def _later(self, t: PreparedRow, fw: str, day: _dt.date) -> bool:
        """``t`` names a release of ``fw`` and is dated after ``day``."""
        d = self.days.get(t.id)
        return t.framework == fw and bool(t.release) and d is not None and d > day

    def profile_for(self, fold: Any, framework: str, row_id: str, profile: Profile | None):
        """(profile, provenance note) of a release-free row: the fit as of its date where
        :meth:`fit_fold` made one, else ``profile`` and no note."""
        day = self.days.get(row_id)
        plan = self.plans.get((fold, framework, day))
        if plan is None:
            return profile, ""
        prof, n = self._fit(plan)
        return prof, f"; as of {day} ({n} later {framework} release rows left out)"


# --------------------------------------------------------------------------- held-out release
def _abs_err(d) -> np.ndarray:
    return np.abs(np.log(d["predicted"].to_numpy() / d["measured"].to_numpy()))


def release_widening(loso, classes: Sequence[str] = ("throughput",)) -> ErrorBand | None:
    """The widening of a band per release step, from leave-one-source-out rows predicted by a
    release node: ``a0`` = median |log(predicted / measured)| of rows whose own release had a
    node in their fold, ``a_i`` = the same for the rows of each held-out (source, release)
    that was predicted from another release ``d_i`` releases away; the step is the median
    over those groups of ``max(0, (a_i - a0) / d_i)``. Rows that kept the fit over every
    release count in neither. None with fewer than 2 such groups or no distance-0 rows.
    Stored as ``ratio_p90 = exp(step)``."""
    if loso is None or not len(loso) or "release_distance" not in loso:
        return None
    used = loso["release_used"].fillna("") != ""
    d = loso[loso["metric_class"].isin(list(classes)) & used]
    d0 = d[d["release_distance"] == 0]
    far = d[d["release_distance"] > 0]
    if not len(d0) or not len(far):
        return None
    a0 = float(np.median(_abs_err(d0)))
    steps = []
    for _, g in far.groupby(["source", "framework", "release"]):
        dist = float(g["release_distance"].median())
        steps.append(max(0.0, (float(np.median(_abs_err(g))) - a0) / dist))
    if len(steps) < 2:
        return None
    s = float(np.median(steps))
    return ErrorBand(ratio_p10=round(math.exp(-s), 4), ratio_p90=round(math.exp(s), 4),
                     n_rows=len(far), n_sources=int(far["source"].nunique()))  # fmt: skip


def widening_table(loso):
    """Median |error| of held-out rows predicted by a release node, by release distance (0 =
    their own release's node)."""
    import pandas as pd

    cols = ["release_distance", "n", "groups", "mdape_pct"]
    if loso is None or not len(loso) or "release_distance" not in loso:
        return pd.DataFrame(columns=cols)
    used = loso["release_used"].fillna("") != ""
    d = loso[(loso["metric_class"] == "throughput") & used]
    recs = []
    for dist, g in d.groupby("release_distance"):
        recs.append({"release_distance": int(dist), "n": len(g),
                     "groups": g.groupby(["source", "release"]).ngroups,
                     "mdape_pct": round(100 * float(np.median(g["ape"])), 1)})  # fmt: skip
    return pd.DataFrame(recs, columns=cols)


def release_trend_check(loso) -> dict[str, Any]:
    """Does a trend over releases predict held-out releases? On the rows predicted from
    another release (distance > 0), the trend is ``log(predicted / measured) = beta x signed
    distance`` (signed: + when the release used is older than the row's), fitted leaving
    each (source, release) group out and applied to it. Returns the median absolute error of
    the nearest release alone and with the trend's correction over the same rows, how many
    groups the trend improves, beta fitted on every group, and ``validates``: the trend
    lowers the error by at least :data:`TREND_MIN_GAIN_PCT` points and improves most groups
    (a smaller gain is within what a refit moves: the release level itself moved the
    bundled leave-one-source-out MdAPE by 0.2-1 point)."""
    out: dict[str, Any] = {"groups": 0, "nearest_mdape_pct": None, "trend_mdape_pct": None,
                           "validates": False}  # fmt: skip
    if loso is None or not len(loso) or "release_signed" not in loso:
        return out
    d = loso[(loso["metric_class"] == "throughput") & (loso["release_distance"] > 0)].copy()
    if not len(d):
        return out
    d["e"] = np.log(d["predicted"] / d["measured"])
    keys = list(d.groupby(["source", "framework", "release"]).groups)
    if len(keys) < 3:
        return out
    d["g"] = [tuple(x) for x in d[["source", "framework", "release"]].to_numpy()]
    near, trend, better = [], [], 0
    for k in keys:
        tr, te = d[d["g"] != k], d[d["g"] == k]
        x, y = tr["release_signed"].to_numpy(float), tr["e"].to_numpy()
        beta = float(x @ y / (x @ x)) if x @ x > 0 else 0.0
        a = np.abs(te["e"].to_numpy())
        b = np.abs(te["e"].to_numpy() - beta * te["release_signed"].to_numpy(float))
        near, trend = near + list(a), trend + list(b)
        better += int(np.median(b) < np.median(a))
    x, y = d["release_signed"].to_numpy(float), d["e"].to_numpy()
    out.update(groups=len(keys), rows=len(d), improved_groups=better,
               beta_per_release=round(float(x @ y / (x @ x)), 4) if x @ x > 0 else 0.0,
               nearest_mdape_pct=round(100 * float(np.median(np.expm1(near))), 1),
               trend_mdape_pct=round(100 * float(np.median(np.expm1(trend))), 1))  # fmt: skip
    gain = out["nearest_mdape_pct"] - out["trend_mdape_pct"]
    out["validates"] = bool(gain >= TREND_MIN_GAIN_PCT and 2 * better > len(keys))
    return out


def release_bands(loso) -> dict[str, ErrorBand]:
    """``{RELEASE_STEP_KEY: band}`` when :func:`release_widening` finds one, else {}."""
    b = release_widening(loso)
    return {RELEASE_STEP_KEY: b} if b is not None else {}
