"""Held-out transfers to a sibling GPU (leave-one-GPU-out), the evidence behind the
``sibling`` provenance tier of :func:`planner.catalog.profile.resolve_params`.

For every (vendor, framework, architecture, precision) fitted on two or more GPUs, each GPU
A in turn loses its rows of that framework and precision (its other rows stay); the profile
is refitted without them (only the nodes the prediction needs, as leave-one-source-out does)
and A's rows are predicted twice:

* ``sibling``: the rule of :func:`~planner.catalog.profile.resolve_params`, the same framework
  and precision fitted on the nearest other GPU of the architecture (the efficiencies
  transfer, the peaks and bandwidth are A's own);
* ``pooled``: the rule before it (``siblings=False``): A's own node of every precision where
  it has one, else the architecture's node of every GPU and precision.

The p10/p90 of measured / predicted throughput over the ``sibling`` predictions is the band
of the ``sibling`` tier (:func:`transfer_band`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planner.calibration.bands import BAND_QUANTILES, metric_class, speed_ratio
from planner.calibration.fit import PreparedRow, fit_profile
from planner.catalog.catalog import Catalog, load_catalog
from planner.catalog.profile import ErrorBand, provenance_tier, resolve_params
from planner.errors import PlannerError
from planner.files import Progress


def transfer_groups(rows: Sequence[PreparedRow]) -> dict[tuple, list[str]]:
    """(vendor, framework, arch, precision) -> the GPUs with predictable rows of it, for
    the groups with at least two GPUs."""
    gpus: dict[tuple, set[str]] = {}
    for r in rows:
        if r.ok and r.vendor not in ("", "?") and r.precision:
            gpus.setdefault((r.vendor, r.framework, r.arch, r.precision), set()).add(r.gpu)
    return {k: sorted(v) for k, v in sorted(gpus.items()) if len(v) >= 2}


def transfer_validation(rows: Sequence[PreparedRow], catalog: Catalog | None = None, **fit_kw: Any):
    """Leave-one-GPU-out predictions (module docstring): a DataFrame with one row per
    predicted measurement: id, source, gpu, framework, precision, metric, kind, model,
    family, measured, predicted (sibling rule), provenance, predicted_pooled,
    provenance_pooled. Rows no sibling could predict are left out."""
    import pandas as pd

    cat = catalog or load_catalog()
    train_all = [r for r in rows if r.ok or r.steady]
    recs: list[dict[str, Any]] = []
    groups = transfer_groups(rows)
    bar = Progress("leave-one-GPU-out", total=sum(len(g) for g in groups.values()))
    i = 0
    for (vendor, fw, arch, prec), gpus in groups.items():
        for gpu in gpus:
            bar.update(i, f"{fw}/{gpu}/{prec}")
            i += 1

            def held(r, gpu=gpu, fw=fw, prec=prec):
                return r.gpu == gpu and r.framework == fw and r.precision == prec

            test = [r for r in rows if r.ok and held(r)]
            train = [r for r in train_all if not held(r)]
            targets = {(vendor, fw, arch, gpu, prec, r.family) for r in test}
            try:
                prof = fit_profile(train, targets=targets, **fit_kw)
            except PlannerError:
                continue
            for r in test:
                got = {}
                for rule, sib in (("", True), ("_pooled", False)):
                    params, prov = resolve_params(r.gpu, fw, prec, catalog=cat, profile=prof,
                                                  family=r.family, siblings=sib)  # fmt: skip
                    try:
                        got[f"predicted{rule}"] = float(r.predict(params))  # type: ignore[misc]
                    except (ValueError, ZeroDivisionError, OverflowError):
                        got[f"predicted{rule}"] = float("nan")
                    got[f"provenance{rule}"] = prov
                if not str(got["provenance"]).startswith(
                    "transferred from"
                ) or ", nearest " not in str(got["provenance"]):
                    continue
                recs.append({
                    "id": r.id, "source": r.source, "gpu": r.gpu, "framework": fw,
                    "precision": prec, "arch": arch, "vendor": vendor, "metric": r.metric,
                    "kind": r.fit_kind, "model": r.model, "family": r.family,
                    "measured": r.value, **got,
                })  # fmt: skip
    bar.close()
    return pd.DataFrame(recs)


def transfer_band(records, quantiles: tuple[float, float] = BAND_QUANTILES) -> ErrorBand | None:
    """The ``sibling`` tier's band: p10/p90 of measured / predicted throughput over the
    held-out sibling transfers of :func:`transfer_validation`, with a ``metric_class``
    column added (:func:`planner.calibration.bands.metric_class`); None without
    throughput rows."""
    import numpy as np

    if records is None or not len(records):
        return None
    df = records[records["metric_class"] == "throughput"]
    df = df[np.isfinite(df["predicted"]) & (df["predicted"] > 0)]
    if not len(df):
        return None
    ratios = [
        speed_ratio("throughput", m, p)
        for m, p in zip(df["measured"], df["predicted"], strict=True)
    ]
    lo, hi = np.quantile(ratios, quantiles)
    return ErrorBand(ratio_p10=round(float(lo), 4), ratio_p90=round(float(hi), 4),
                     n_rows=len(df), n_sources=int(df["source"].nunique()))  # fmt: skip


def sibling_band(loso, moved):
    """The ``sibling`` tier's band: its leave-one-source-out rows (``loso``) and the
    leave-one-GPU-out transfers (``moved``, :func:`~planner.calibration.transfer.
    transfer_validation`) together (:func:`~planner.calibration.transfer.transfer_band`)."""
    import pandas as pd

    cols = ["source", "metric", "measured", "predicted"]
    parts = []
    if loso is not None and len(loso):
        parts.append(loso[[provenance_tier(p) == "sibling" for p in loso["provenance"]]][cols])
    if moved is not None and len(moved):
        parts.append(moved[cols])
    if not parts:
        return None
    both = pd.concat(parts, ignore_index=True)
    both["metric_class"] = [metric_class(m) for m in both["metric"]]
    return transfer_band(both)
