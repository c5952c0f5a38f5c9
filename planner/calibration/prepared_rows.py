"""Prepared rows: a measurement row of the benchmark schema turned into a predictor of its
value given :class:`~planner.catalog.efficiency.EfficiencyParams` (step rows, static batches,
single stream, offline throughput, a closed loop's steady state), or the reason why it
cannot be predicted; with the ids (framework, GPU, arch, precision, vendor, model family,
release) the fit tree (:mod:`planner.calibration.fit_tree`) groups it by.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from planner.benchmarks.schema import row_release, unexpressible_reason
from planner.benchmarks.step_rows import (
    _canonical_precision,
    closed_loop_predictor,
    row_predictor,
)
from planner.catalog.catalog import Catalog, load_catalog
from planner.catalog.efficiency import EfficiencyParams
from planner.catalog.profile import model_family
from planner.errors import PlannerError


@dataclass(frozen=True)
class PreparedRow:
    """A measurement row ready for fitting: a predictor of ``value`` given params."""

    id: str
    source: str
    framework: str
    gpu: str
    arch: str
    precision: str
    metric: str
    mode: str
    value: float
    predict: Callable[[EfficiencyParams], float] | None
    reason: str = ""
    fit_kind: str = ""  # step, static, single, offline, serving
    model: str = ""
    vendor: str = ""
    family: str = ""  # dense or moe
    #: a closed-loop serving row's steady-state throughput predictor (the fit's; the row
    #: itself is predicted by the simulator)
    steady: Callable[[EfficiencyParams], float] | None = None
    #: the row's layout is expert parallel or attention data-parallel (``ep > 1`` or
    #: ``attention_dp > 1``): fitted in the second stage only (:mod:`planner.calibration.ep_fit`)
    expert_parallel: bool = False
    release: str = ""  # the engine release the row names (``0.11.0``; "" when none)
    tp: int = 1  # the row's tensor-parallel size [GPUs] (1 when the cell is empty)

    @property
    def ok(self) -> bool:
        return self.predict is not None

    def fit_predictor(self, kinds: Iterable[str]) -> Callable[[EfficiencyParams], float] | None:
        """The predictor the fit uses when it fits ``kinds`` of rows, or None."""
        if self.predict is not None and self.fit_kind in kinds:
            return self.predict
        if self.steady is not None and "closed_loop" in kinds:
            return self.steady
        return None


def prepare_rows(df, catalog: Catalog | None = None) -> list[PreparedRow]:
    """One :class:`PreparedRow` per measurement (unpredictable rows carry a reason)."""
    cat = catalog or load_catalog()
    out = []
    for row in df.to_dict("records"):
        fn, reason, kind = row_predictor(row, cat)
        try:
            g = cat.gpu(str(row["hardware"]))
            gid, arch, vendor = g.id, g.arch, g.vendor
        except PlannerError:
            gid, arch, vendor = str(row["hardware"]), "?", "?"
        try:
            fw = cat.framework(str(row["framework"]))
            fwid, fw_vendors = fw.id, fw.vendors
        except PlannerError:
            fwid, fw_vendors = str(row["framework"]), None
        why = unexpressible_reason(row, None if vendor == "?" else vendor, fw_vendors)
        steady = None
        if why:  # kept in the data, never fitted nor simulated
            fn, reason, kind = None, why, ""
        elif kind == "serving":
            steady = closed_loop_predictor(row, cat)
        out.append(
            PreparedRow(
                id=str(row.get("id")),
                source=str(row.get("source")),
                framework=fwid,
                gpu=gid,
                arch=arch,
                precision=_canonical_precision(cat, row.get("precision")),
                metric=str(row.get("metric")),
                mode=str(row.get("mode")),
                value=float(row["value"]),
                predict=fn,
                reason=reason,
                fit_kind=kind,
                model=Path(str(row.get("model"))).parent.name
                if str(row.get("model", "")).endswith(".json")
                else str(row.get("model")),
                vendor=vendor,
                family=_family(cat, row),
                steady=steady,
                expert_parallel=_expert_parallel(row),
                release=getattr(row_release(row), "release", ""),
                tp=_tp(row),
            )
        )
    return out


def _expert_parallel(row: dict) -> bool:
    """True when a row's ``ep`` or ``attention_dp`` cell is a number above 1."""
    for c in ("ep", "attention_dp"):
        try:
            if float(str(row.get(c) or 1)) > 1:
                return True
        except ValueError:
            continue
    return False


def _tp(row: dict) -> int:
    """A row's ``tp`` cell as an integer [GPUs]; 1 when empty or not a number."""
    try:
        return max(1, int(float(str(row.get("tp") or 1))))
    except ValueError:
        return 1


def _family(cat: Catalog, row: dict) -> str:
    """``moe`` or ``dense`` for a row's model; ``?`` when the model cannot be read."""
    try:
        m = cat.model_ref(str(row.get("model")), str(row.get("_dir", ".")))
    except PlannerError:
        return "?"
    return model_family(m)
