"""A fixed per-step time of an engine's attention data-parallel decode (``data/adp_step.yaml``).

One record per engine: a time [s] added to every step of a deployment with attention data
parallel ranks (``attention_dp > 1``) that the fitted step model does not hold. The bundled
record's value is chosen, not published (the file says why and how it scores);
:func:`adp_step_s` gives it for a deployment, 0 where no record applies or the file's
``applied`` is false (the switch). Its user is :func:`planner.engine.moe_backend.with_adp_step`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Frozen, Sourced
from planner.files import load_data_file

__all__ = ["AdpStepCost", "adp_step_costs", "adp_step_s"]


class AdpStepCost(Sourced):
    """A fixed time on every step of one engine's attention-DP deployments."""

    id: str = Field(min_length=2)
    framework: str = Field(min_length=2, description="engine id (catalog framework)")
    step_ms: float = Field(gt=0, le=100, description="time added to every step [ms]")
    chosen: bool = Field(description="true: a chosen value (neither published nor fitted)")


class _File(Frozen):
    applied: bool = False
    costs: tuple[AdpStepCost, ...]


@lru_cache(maxsize=4)
def adp_step_costs(data_dir: str | None = None, applied_only: bool = True) -> tuple:
    """The records of ``data/adp_step.yaml``: empty where the file is absent or, with
    ``applied_only``, where its ``applied`` is false."""
    f = load_data_file(Path(data_dir or DATA_DIR) / "adp_step.yaml", _File, 120)
    if f is None or (applied_only and not f.applied):
        return ()
    return f.costs


def adp_step_s(
    framework: str | None,
    attention_dp: int,
    data_dir: str | None = None,
    applied_only: bool = True,
) -> float:
    """Fixed time of every step of ``framework`` with ``attention_dp`` attention ranks [s]:
    the record's ``step_ms / 1000`` where ``attention_dp > 1`` and a record names the engine,
    else 0.0.

    Example: TensorRT-LLM DEP8 with the bundled (chosen) record switched on: 1.0 ms = 0.001 s."""
    if not framework or attention_dp <= 1:
        return 0.0
    for r in adp_step_costs(data_dir, applied_only):
        if r.framework == framework:
            return r.step_ms / 1e3
    return 0.0
