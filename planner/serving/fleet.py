"""Fleet sizing: replicas for a peak rate with headroom, GPU-hours over a daily profile."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from planner.errors import PlannerError, require_positive

#: relative rounding tolerance of the replica count
_REL_TOL = 1e-12


def size_fleet(
    max_rate_rps: float,
    peak_rps: float,
    *,
    headroom: float = 0.2,
    gpus_per_replica: int = 1,
    hourly_rps: np.ndarray | list[float] | None = None,
) -> dict[str, Any]:
    """Replicas and GPUs for a peak rate: ``replicas = ceil(peak * (1 + headroom) / capacity)``.

    With an hourly profile, GPU-hours per day are given both for a fixed fleet sized for
    the peak (24 h x GPUs) and for an ideal hourly autoscaler (each hour sized alone).
    """
    require_positive("peak_rps", peak_rps)
    require_positive("headroom", headroom, allow_zero=True)
    require_positive("gpus_per_replica", gpus_per_replica)
    if not max_rate_rps > 0:
        raise PlannerError("no capacity: the replica cannot serve any rate within the SLO")
    need = peak_rps * (1 + headroom) / max_rate_rps
    if not math.isfinite(need):
        raise PlannerError(
            f"cannot size a fleet for peak {peak_rps:g} req/s with headroom {headroom:g} at "
            f"{max_rate_rps:g} req/s per replica: the replica count is not a finite number"
        )
    # a relative tolerance absorbs rounding in ``need`` (5.000000000000001 -> 5) but never a
    # real excess (an absolute one made 1 + 1e-9 replicas round down to 1)
    replicas = max(1, math.ceil(need * (1 - _REL_TOL)))
    gpus = replicas * int(gpus_per_replica)
    out: dict[str, Any] = {
        "peak_rps": float(peak_rps),
        "headroom": float(headroom),
        "max_rate_per_replica": float(max_rate_rps),
        "replicas": replicas,
        "gpus_per_replica": int(gpus_per_replica),
        "num_gpus": gpus,
        "utilization_at_peak": float(peak_rps / (replicas * max_rate_rps)),
        "gpu_hours_per_day": gpus * 24.0,
    }
    if hourly_rps is not None:
        h = np.asarray(hourly_rps, float)
        if not np.isfinite(h).all():
            raise PlannerError("hourly arrival rates must be finite numbers")
        per_hour = (
            np.maximum(1, np.ceil(h * (1 + headroom) / max_rate_rps * (1 - _REL_TOL)))
            * gpus_per_replica
        )
        out["gpu_hours_per_day_autoscaled"] = float(per_hour.sum())
        out["requests_per_day"] = float(h.sum() * 3600)
    return out
