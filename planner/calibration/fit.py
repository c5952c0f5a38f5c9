"""Calibration: fit the engine's efficiencies and overheads to measured data.

Pipeline (pvlib style: every model has its ``fit_*``):

1. :func:`load_measurements` reads rows in the benchmark schema
   (``planner/benchmarks/README.md``) or the JSON that ``vllm bench serve``
   writes, and validates them (missing columns, unknown ids, non-positive values
   are errors that name the rows; nothing is fitted from a partly valid file).
2. :func:`prepare_rows` turns each row into a predictor ``params -> value``
   (step rows, static batches, single stream, offline throughput) or a reason why
   it cannot be predicted.
3. :func:`fit_profile` fits :class:`~planner.catalog.efficiency.EfficiencyParams` with
   ``scipy.optimize.least_squares`` on log error, top-down over a hierarchy
   ``global -> vendor -> vendor x framework -> x arch -> x gpu -> x precision``, plus one
   node per framework across vendors (child of global). Each node is pulled toward its
   parent by a Gaussian prior in log space, so sparse nodes shrink toward the family
   value (partial pooling); a node with exactly its parent's rows is the parent. A node
   whose rows hold dense and MoE models also gets a child fitted on its dense rows only,
   with the node as its prior (:func:`~planner.calibration.fit_tree._fit_tree`; the families split:
   :data:`~planner.catalog.profile.SPLIT_FAMILIES`): MoE and MLA models run far from the
   dense physics on some engines, and a dense prediction must not take efficiencies
   dragged by them.
4. :func:`resolve_params` picks the nearest measured relative of a (gpu, framework,
   precision) — same GPU, same vendor + framework (+ arch), same vendor, same framework,
   global — that holds rows of the model's family, and labels the prediction ``fit``,
   ``transferred from ...`` or ``prior``.
5. :func:`cross_validate` refits without each source (leave-one-source-out) or
   fold (k-fold) and predicts the held-out rows; :func:`accuracy_report` writes
   ``docs/accuracy.md``.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from planner.benchmarks.io import _hash_files, load_measurements
from planner.calibration import gemm_floor, seq_bound
from planner.calibration.data_files import (  # noqa: F401 - re-exported
    HELD_OUT_FILES,
    OWN_FILES,
    _rel,
    data_files_default,
    own_files_default,
    public_files_default,
    split_public_own,
)
from planner.calibration.ep_fit import fit_ep_fields
from planner.calibration.fit_tree import _fit_tree, _level, _needed_keys, _parent_key
from planner.calibration.identifiable import identifiable
from planner.calibration.iterations import (
    check_enough_iterations,
    fit_iterations,
    iteration_logs_default,
    read_iteration_log,
)
from planner.calibration.prepared_rows import PreparedRow, prepare_rows
from planner.catalog.catalog import Catalog, load_catalog
from planner.catalog.compat import check_framework_gpu
from planner.catalog.efficiency import PRIOR, EfficiencyParams
from planner.catalog.profile import (
    FAMILIES,
    SPLIT_FAMILIES,
    Profile,
    ProfileNode,
    resolve_params,
)
from planner.errors import PlannerError
from planner.files import Progress

#: parameters the fit may move, their bounds and the prior width (std-dev of log value)
FIT_BOUNDS: dict[str, tuple[float, float, float]] = {
    "mem_eff": (0.15, 1.0, 0.35),
    "kv_mem_eff": (0.1, 1.0, 0.5),
    "compute_eff": (0.1, 1.0, 0.35),
    "compute_half_tokens": (1.0, 8192.0, 1.5),
    "attn_eff": (0.03, 1.0, 0.6),
    "step_overhead_s": (1e-6, 0.2, 2.5),
    "layer_overhead_s": (1e-8, 2e-3, 2.5),
    "seq_overhead_s": (1e-9, 2e-3, 2.5),
    "eager_layer_s": (1e-7, 5e-3, 3.0),
    "comm_eff": (0.05, 1.0, 0.6),
    # host time per serving iteration: offline throughput rows cannot tell it from slow kernels
    # (a throughput shortfall of a source's setup went into it: 12-70 ms per iteration with
    # the public vLLM/SGLang rows); at most 2 ms, 4x the slowest host time measured on the
    # reference engine's serving runs (0.48 ms, docs/accuracy.md)
    "sched_overhead_s": (1e-7, 2e-3, 2.5),
}
#: priors of the overheads are not zero in log space: start values for the global node
_START = {
    "step_overhead_s": 2e-4,
    "layer_overhead_s": 5e-6,
    "seq_overhead_s": 1e-6,
    "eager_layer_s": 1e-4,
    "sched_overhead_s": 1e-4,
}
FIT_FIELDS = tuple(FIT_BOUNDS)


def _bounds(f: str) -> tuple[float, float, float]:
    """``FIT_BOUNDS[f]`` with the switched per-sequence bound
    (:mod:`planner.calibration.seq_bound`, off: as it is)."""
    return seq_bound.bound(f, *FIT_BOUNDS[f])


#: what a node whose rows all come from one publication and hold no step rows may move: the
#: efficiencies. Throughput rows of one setup cannot tell a per-layer or per-step overhead
#: from a slower kernel (two fits of the 12 dstack H200 SGLang rows, one with 1.5 ms of eager
#: dispatch per layer and one with 0.8 ms of fixed cost per layer, explain them equally well,
#: and which one comes out flips with unrelated data elsewhere); transferred to a model with
#: other layer counts or batch sizes the two answers differ by 2-3x. Such a node keeps its
#: parent's overheads; step rows (decode and prefill steps timed apart) do separate them.
ONE_SOURCE_FIELDS = ("mem_eff", "kv_mem_eff", "compute_eff", "attn_eff")
#: row kinds that cannot tell overheads from efficiencies from any number of publications:
#: an offline row times a whole run of mixed iterations (docs/changes/2026-12-07/sgl053.md)
OVERHEAD_BLIND_KINDS = ("offline",)
#: row kinds the fit uses by default: ``closed_loop`` = the throughput of a closed loop of
#: clients (a serving row), fitted through its steady state
#: (:func:`planner.benchmarks.step_rows.closed_loop_predictor`) and, like every serving row,
#: validated by simulation; other serving rows are validated, not fitted
FITTED_KINDS = ("step", "static", "single", "offline", "closed_loop")


# =========================================================================== fitting
def _to_x(p: EfficiencyParams, fields: Sequence[str] = FIT_FIELDS) -> np.ndarray:
    return np.array([math.log(max(getattr(p, f), FIT_BOUNDS[f][0])) for f in fields])


def _from_x(
    x: np.ndarray,
    base: EfficiencyParams,
    fields: Sequence[str] = FIT_FIELDS,
    gemm_floor_frac: float = 0.0,
) -> EfficiencyParams:
    """Parameters from log values ``x``, clipped to their bounds; ``gemm_floor_frac`` > 0
    raises ``compute_eff`` to the measured large-M GEMM floor (:mod:`gemm_floor`)."""
    upd = {}
    for f, v in zip(fields, x, strict=True):
        lo, hi, _ = _bounds(f)
        upd[f] = float(min(max(math.exp(v), lo), hi))
    if gemm_floor_frac > 0.0 and "compute_eff" in upd:
        half = upd.get("compute_half_tokens", base.compute_half_tokens)
        upd["compute_eff"] = gemm_floor.project(
            upd["compute_eff"], half, gemm_floor_frac, _bounds("compute_eff")[1]
        )
    return base.model_copy(update=upd)


def _free_fields(rows: Sequence[PreparedRow]) -> tuple[str, ...]:
    """The parameters ``rows`` can pin down: all of :data:`FIT_FIELDS`, or only
    :data:`ONE_SOURCE_FIELDS` when none is a step row and they come from one publication
    or are all of :data:`OVERHEAD_BLIND_KINDS`; without step rows, also without ``comm_eff``
    where its TP > 1 rows cannot identify it
    (:func:`planner.calibration.identifiable.identifiable`)."""
    if any(r.fit_kind == "step" for r in rows):
        return FIT_FIELDS
    if len({r.source for r in rows}) < 2 or all(r.fit_kind in OVERHEAD_BLIND_KINDS for r in rows):
        return ONE_SOURCE_FIELDS
    return identifiable(FIT_FIELDS, rows)


def _fit_node(
    rows: list[PreparedRow],
    parent: EfficiencyParams,
    prior_scale: float,
    max_nfev: int,
    kinds: Iterable[str] = FITTED_KINDS,
    gemm_floor_frac: float = 0.0,
) -> tuple[EfficiencyParams, float]:
    from scipy.optimize import least_squares

    fields = _free_fields(rows)
    x0 = _to_x(parent, fields)
    lo = np.array([math.log(_bounds(f)[0]) for f in fields])
    hi = np.array([math.log(_bounds(f)[1]) for f in fields])
    x0 = np.clip(x0, lo + 1e-9, hi - 1e-9)
    sig = np.array([FIT_BOUNDS[f][2] for f in fields]) * prior_scale
    meas = np.log(np.array([r.value for r in rows]))
    preds = [r.fit_predictor(kinds) for r in rows]

    def resid(x):
        q = _from_x(x, parent, fields, gemm_floor_frac)
        out = np.empty(len(preds))
        for i, fn in enumerate(preds):
            try:
                v = fn(q)
                out[i] = math.log(v) if v > 0 and math.isfinite(v) else 10.0
            except (ValueError, ZeroDivisionError, OverflowError):
                out[i] = 10.0
        return np.concatenate([(out - meas), (x - x0) / sig])

    res = least_squares(
        resid,
        x0,
        bounds=(lo, hi),
        method="trf",
        loss="soft_l1",
        f_scale=0.2,
        max_nfev=max_nfev,
        x_scale=1.0,
        diff_step=1e-3,
    )
    fitted = _from_x(res.x, parent, fields, gemm_floor_frac)
    err = resid(res.x)[: len(rows)]
    mdape = float(np.median(np.abs(np.expm1(err)))) if len(rows) else float("nan")
    return fitted, mdape


def _why_none(rows: Sequence[PreparedRow], kinds: set[str]) -> str:
    """Why none of ``rows`` can be fitted: the most common reason, in one line."""
    if not rows:
        return "the files hold no rows"
    other = [r for r in rows if r.ok and r.fit_predictor(kinds) is None]
    if other:
        got = ", ".join(sorted({r.fit_kind or "?" for r in other}))
        return (
            f"{len(other)} of {len(rows)} rows are {got} measurements, which calibrate checks "
            f"but does not fit (it fits {', '.join(sorted(kinds))} rows)"
        )
    reasons = Counter(r.reason for r in rows if not r.ok)
    reason, n = reasons.most_common(1)[0]
    return f"{n} of {len(rows)} rows: {reason} (see `planner predict` for every row's reason)"


def fit_profile(
    rows: Sequence[PreparedRow],
    *,
    data_files: Sequence[str] = (),
    data_hash: str = "",
    min_rows: int = 1,
    prior_scale: float = 1.0,
    max_nfev: int = 60,
    include_kinds: Iterable[str] = FITTED_KINDS,
    base: EfficiencyParams | None = None,
    progress: str | None = None,
    targets: Iterable[tuple] | None = None,
    split_families: Sequence[str] = SPLIT_FAMILIES,
) -> Profile:
    """Fit the hierarchy of nodes top-down (see module docstring).

    ``progress``: a label to show a progress line on stderr (when it is a terminal).

    ``targets``: (vendor, framework, arch, gpu, precision, family) tuples (family may be
    left out); when given, only the nodes that :func:`resolve_params` would pick for them,
    and their ancestors, are fitted. A node's parameters depend only on its rows and its
    ancestors', so those nodes are exactly the ones of the full fit (leave-one-source-out
    predicts one source's rows this way).

    Each node is fitted with its parent (:func:`_parent_key`) as the prior: a family child
    under its node of every family, any other node under its nearest ancestor.

    ``split_families``: the model families (of
    :data:`~planner.catalog.profile.FAMILIES`) that get a child under every node whose rows
    are not all theirs (default :data:`~planner.catalog.profile.SPLIT_FAMILIES`).

    Parameters
    ----------
    rows : prepared measurement rows; rows without a predictor are ignored
    min_rows : a node is fitted only if it has at least this many rows
    prior_scale : multiplies every prior width (smaller = stronger shrinkage)
    include_kinds : which row kinds the fit uses (serving rows are validated, not fitted)
    """
    kinds = set(include_kinds)
    split = tuple(f for f in FAMILIES if f in set(split_families))
    if len(split) != len(set(split_families)):
        raise PlannerError(
            f"split_families {', '.join(split_families)}: the model families are "
            f"{', '.join(FAMILIES)}"
        )
    # expert-parallel / attention-DP rows are fitted in a second stage (ep_fit):
    # the first is the fit of the plain TP x PP rows, unchanged by them
    use = [r for r in rows if r.fit_predictor(kinds) is not None and not r.expert_parallel]
    ep_use = [r for r in rows if r.fit_predictor(kinds) is not None and r.expert_parallel]
    if not use:
        raise PlannerError(f"no measurement row can be used for the fit: {_why_none(rows, kinds)}")
    base = base or PRIOR.with_(**_START)
    nodes: list[ProfileNode] = []

    def add(key, subset, parent_key):
        k, fam = key
        bar.update(len(nodes), f"node {'/'.join(str(x) for x in (*k, fam) if x) or 'global'}")
        parent = fitted.get(parent_key) if parent_key is not None else None
        ids = frozenset(id(r) for r in subset)
        prior = parent or base
        ff = gemm_floor.floor_fraction(k[2], k[4], fam)  # 0: off, or not Hopper dense
        same = (ids, tuple(prior.model_dump().values()), ff)
        floor_ok = (
            parent is None
            or gemm_floor.project(parent.compute_eff, parent.compute_half_tokens, ff)
            == parent.compute_eff
        )  # the parent's GEMM rate already meets this node's floor
        if parent is not None and ids == members[parent_key] and floor_ok:
            # the same rows as the parent: a refit would count them twice
            params, mdape = parent, mdapes[parent_key]
        elif same in done:  # the same rows and prior as a node fitted already (the family
            params, mdape = done[same]  # child of a node with its parent's rows)
        else:
            params, mdape = done[same] = _fit_node(
                subset, prior, prior_scale, max_nfev, kinds, gemm_floor_frac=ff
            )
        fitted[key], mdapes[key], members[key] = params, mdape, ids
        nodes.append(
            ProfileNode(
                vendor=k[0],
                framework=k[1],
                arch=k[2],
                gpu=k[3],
                precision=k[4],
                level=_level(k),
                n_rows=len(subset),
                sources=tuple(sorted({r.source for r in subset})),
                gpus=tuple(sorted({r.gpu for r in subset})),
                in_sample_mdape=round(mdape, 4),
                params=_rounded(params),
                family=fam,
                families=tuple(sorted({r.family or "?" for r in subset})),
            )
        )

    tree = _fit_tree(use, min_rows, split)
    if targets is not None:
        tree = {k: tree[k] for k in _needed_keys(tree, targets, split)}
    fitted: dict[tuple, EfficiencyParams] = {}
    mdapes: dict[tuple, float] = {}
    members: dict[tuple, frozenset[int]] = {}
    done: dict[tuple, tuple[EfficiencyParams, float]] = {}
    bar = Progress(progress or "", total=len(tree), force=None if progress else False)
    # top-down: every parent (:func:`_parent_key`) is fitted before its children (a family
    # child right after its node: "" sorts before every family)
    for key in sorted(tree, key=lambda t: (_level(t[0]), str(t[0]), t[1])):
        add(key, tree[key], _parent_key(key, tree))
    bar.close()
    prof = Profile(
        created=_dt.date.today(),
        data_hash=data_hash,
        data_files=tuple(data_files),
        n_rows_fitted=len(use),
        method=(
            "scipy.optimize.least_squares (trf, soft_l1 loss, f_scale 0.2) on log(predicted/measured), "
            "parameters in log space with bounds; each node regularised toward its parent by a "
            "Gaussian prior in log space (widths FIT_BOUNDS x prior_scale); hierarchy global -> "
            "vendor -> vendor x framework -> x arch -> x gpu -> x precision, and global -> "
            "framework (all vendors); a node with exactly its parent's rows is the parent; "
            f"under a node with rows of several model families, one child per family of "
            f"{', '.join(split) or 'none'} fitted on that family's rows (a leaf: the node is "
            "its prior)"
        ),
        nodes=tuple(nodes),
        split_families=split,
    )
    return fit_ep_fields(prof, ep_use, kinds, max_nfev) if ep_use else prof


def _rounded(p: EfficiencyParams) -> EfficiencyParams:
    return p.model_copy(update={f: float(f"{getattr(p, f):.5g}") for f in type(p).model_fields})


def predict_rows(
    rows: Sequence[PreparedRow], profile: Profile | None, catalog: Catalog | None = None
):
    """Predictions of the rows a profile can predict: list of (row, value, provenance)."""
    cat = catalog or load_catalog()
    out = []
    for r in rows:
        if not r.ok:
            out.append((r, None, r.reason))
            continue
        params, prov = (
            resolve_params(
                r.gpu, r.framework, r.precision, catalog=cat, profile=profile, family=r.family
            )
            if profile
            else (PRIOR, "prior")
        )
        try:
            out.append((r, float(r.predict(params)), prov))
        except (ValueError, ZeroDivisionError, OverflowError) as e:
            out.append((r, None, f"prediction failed: {e}"))
    return out


def poor_fits(
    profile: Profile,
    rows: Sequence[PreparedRow],
    threshold: float = 0.25,
    max_rows: int = 2000,
) -> list[tuple[str, str, int, float]]:
    """Groups of fitted rows (node x metric) whose in-sample MdAPE exceeds ``threshold``.

    A node's own MdAPE can hide one metric given in the wrong unit (prefill times 1000x
    too large among many decode rows), so the error is taken per metric under the most
    specific node that applies. At most ``max_rows`` rows per group are evaluated.
    Returns (node label, metric, rows evaluated, MdAPE) tuples.
    """
    groups: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        if not r.ok:
            continue
        node = profile.find(
            r.framework or None,
            r.arch or None,
            r.gpu or None,
            r.precision,
            r.vendor or None,
            family=r.family,
        )
        if node is None:
            continue
        apes = groups.setdefault((node.label, r.metric), [])
        if len(apes) >= max_rows:
            continue
        try:
            with np.errstate(all="ignore"):
                pred = float(r.predict(node.params))
        except (PlannerError, ArithmeticError, ValueError):
            continue
        if math.isfinite(pred) and r.value > 0:
            apes.append(abs(pred / r.value - 1))
    out = []
    for (label, metric), apes in groups.items():
        if apes:
            mdape = float(np.median(apes))
            if mdape > threshold:
                out.append((label, metric, len(apes), mdape))
    return out


# Largest measurement file calibrate accepts. Measured (scripts/bench_reliability.py) on a
# loaded 2-core machine: 5,000 step rows 24 s CPU / 90 s wall, 20,000 rows 287 s wall; the
# fit grows linearly with the rows, so 10,000 rows is ~50 s CPU (about two minutes of wall
# time here). A few hundred rows per node already pin its parameters.
MAX_CALIBRATE_ROWS = 10_000


def calibrate(
    paths: Sequence[str | os.PathLike[str]] | None = None,
    catalog: Catalog | None = None,
    iteration_logs: Sequence[str | os.PathLike[str]] | None = None,
    **kw: Any,
) -> tuple[Profile, list[PreparedRow]]:
    """Load measurements, prepare rows and fit a profile (``planner calibrate``).

    ``iteration_logs``: serving iteration logs whose framework x GPU nodes get the serving
    terms of :func:`planner.calibration.iterations.fit_iterations` after the step fit. Default:
    the bundled logs when ``paths`` is the bundled data too, else none.

    The error bands are added by :func:`planner.calibration.bands.with_error_bands`.
    """
    cat = catalog or load_catalog()
    if iteration_logs is None:
        iteration_logs = iteration_logs_default() if not paths else []
    files = [Path(p) for p in (paths or data_files_default())]
    vllm_kw = {
        k: v
        for k in ("gpu", "model", "precision", "tp", "framework")
        if (v := kw.pop(k, None)) is not None
    }
    df = load_measurements(files, cat, **vllm_kw)
    if len(df) > MAX_CALIBRATE_ROWS:
        raise PlannerError(
            f"{len(df):,} measurement rows is above the {MAX_CALIBRATE_ROWS:,} that calibrate "
            "fits in about two minutes (the least-squares fit evaluates every row many times); "
            "fit a representative subset (e.g. a few hundred rows per GPU, model and metric)"
        )
    rows = prepare_rows(df, cat)
    logs = [Path(p) for p in iteration_logs]
    frames = [read_iteration_log(p) for p in logs]  # checked before the (long) step fit
    if frames:  # what fit_serving_terms will need, said before the step fit
        import pandas as pd

        fitted_fws = {r.framework for r in rows if r.ok and r.fit_kind != "serving"}
        all_logs = pd.concat(frames, ignore_index=True)
        for (fw_raw, hw_raw), g in all_logs.groupby(["framework", "hardware"], sort=True):
            fw, gpu = cat.framework(str(fw_raw)), cat.gpu(str(hw_raw))
            check_framework_gpu(fw, gpu)
            _check_log_has_node(g, fw.id, gpu.id, fitted_fws)
            check_enough_iterations(g, fw.id, gpu.id)
    prof = fit_profile(
        rows,
        data_files=[_rel(f) for f in files + logs],
        data_hash=_hash_files(files + logs),
        **kw,
    )
    if frames:
        prof = fit_serving_terms(prof, frames, cat)
    return prof, rows


def _check_log_has_node(log: Any, fw: str, gpu: str, frameworks: set[str]) -> None:
    """An iteration log's serving terms go into its framework's profile nodes; a framework
    the step data has no rows of has none, and its fit would be thrown away without a word."""
    if fw in frameworks:
        return
    files = ", ".join(sorted(log["path"].astype(str).unique())) if "path" in log else "a log"
    raise PlannerError(
        f"{files}: iterations of {fw} on {gpu}, but the step data has no {fw} rows, so the "
        f"profile has no {fw} node to hold the serving terms (step data frameworks: "
        f"{', '.join(sorted(frameworks)) or 'none'}); add {fw} step rows or leave this log out"
    )


def fit_serving_terms(profile: Profile, logs: Sequence[Any], catalog: Catalog) -> Profile:
    """The profile with the serving terms fitted on iteration logs, one fit per framework x
    GPU, written into that framework's nodes (its GPU's and the framework-wide ones)."""
    import pandas as pd

    df = pd.concat(list(logs), ignore_index=True)
    nodes = list(profile.nodes)
    for (fw_raw, hw_raw), g in df.groupby(["framework", "hardware"], sort=True):
        fw, gpu = catalog.framework(str(fw_raw)).id, catalog.gpu(str(hw_raw))
        check_framework_gpu(catalog.framework(fw), gpu)
        _check_log_has_node(g, fw, gpu.id, {n.framework for n in nodes if n.framework})
        g = g.assign(framework=fw, hardware=gpu.id)

        def params_for(gpu_id, fw_id, prec):
            return resolve_params(gpu_id, fw_id, prec, catalog=catalog, profile=profile)[0]

        fit = fit_iterations(g, params_for, catalog)
        for i, n in enumerate(nodes):
            if n.framework == fw and n.gpu in (None, gpu.id) and n.arch in (None, gpu.arch):
                nodes[i] = n.model_copy(
                    update={"params": n.params.with_(**fit.params), "serving_fit": fit.describe()}
                )
    return profile.model_copy(update={"nodes": tuple(nodes)})
