"""Energy per token: an estimate from board power (TDP) × utilisation.

Power model (per GPU)::

    P [W] = TDP × (idle_power_fraction + (1 − idle_power_fraction) × utilisation)

With ``idle_power_fraction = 0`` (the default, ``data/ownership.yaml`` labels it an
assumption) this is DESIGN.md's "board power × utilisation": a busy GPU draws its TDP
(an upper bound — memory-bound decode often draws less) and an idle one nothing (a lower
bound). Facility energy multiplies by ``host_power_factor`` (server / GPU power, default 1
= board only) and ``pue`` (default 1 = IT energy only).

    J/token  = P × host_power_factor × pue / (tokens/s per GPU)
    kWh/day  = P × host_power_factor × pue × num_gpus × 24 h / 1000

``tokens_per_s_per_gpu`` is the average rate at that utilisation (busy rate × utilisation).
Every result carries ``label = "estimate from TDP × utilisation"``.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from ..errors import PlannerError

__all__ = ["ENERGY_LABEL", "EnergyEstimate", "energy_per_token", "gpu_power_w"]

ENERGY_LABEL = "estimate from TDP × utilisation"


def _num(
    name: str, value: float | None, lo: float, hi: float = math.inf, *, lo_open: bool
) -> float:
    if value is None or isinstance(value, bool):
        raise PlannerError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise PlannerError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or (v <= lo if lo_open else v < lo) or v > hi:
        rng = f"{'>' if lo_open else '>='} {lo}" + (f" and <= {hi}" if hi != math.inf else "")
        raise PlannerError(f"{name} must be {rng}, got {value!r}")
    return v


def gpu_power_w(tdp_w: float | None, utilisation: float, idle_power_fraction: float = 0.0) -> float:
    """Average board power of one GPU [W] = TDP × (idle + (1 − idle) × utilisation).

    Raises PlannerError when ``tdp_w`` is None (no source gives it) or out of range.
    """
    if tdp_w is None:
        raise PlannerError(
            "no TDP (tdp_w) for this GPU in data/hardware.yaml (no source gives it), "
            "so its energy per token cannot be estimated; pass tdp_w"
        )
    tdp = _num("tdp_w", tdp_w, 0, lo_open=True)
    u = _num("utilisation", utilisation, 0, 1, lo_open=False)
    idle = _num("idle_power_fraction", idle_power_fraction, 0, 1, lo_open=False)
    return tdp * (idle + (1 - idle) * u)


class EnergyEstimate(BaseModel):
    """Energy of serving [J/token, kWh/day], an estimate from TDP × utilisation."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    power_w_per_gpu: float = Field(ge=0, description="average board power [W]")
    facility_power_w_per_gpu: float = Field(ge=0, description="× host_power_factor × pue [W]")
    joules_per_token: float = Field(ge=0)
    tokens_per_joule: float | None = Field(None, ge=0, description="None when J/token is 0")
    kwh_per_day: float = Field(ge=0, description="for num_gpus GPUs")
    num_gpus: int = Field(ge=1)
    utilisation: float
    idle_power_fraction: float
    host_power_factor: float
    pue: float
    label: str = ENERGY_LABEL
    model: str = "P = TDP × (idle_power_fraction + (1 − idle_power_fraction) × utilisation)"


def energy_per_token(
    tdp_w: float | None,
    utilisation: float,
    tokens_per_s_per_gpu: float,
    *,
    pue: float = 1.0,
    idle_power_fraction: float = 0.0,
    host_power_factor: float = 1.0,
    num_gpus: int = 1,
) -> EnergyEstimate:
    """Joules per token and kWh per day from TDP × utilisation (an estimate).

    Parameters
    ----------
    tdp_w : board power [W] (``Accelerator.tdp_w``; None → PlannerError naming what is missing)
    utilisation : busy fraction of the time [0, 1]
    tokens_per_s_per_gpu : average tokens served per second per GPU at that utilisation
        [tokens/s], > 0 (output-only or total: the J/token follows the same definition)
    pue : facility / IT power [-], >= 1 (1 = IT energy only)
    idle_power_fraction : fraction of TDP drawn when idle [0, 1]
    host_power_factor : server power / GPU board power [-], >= 1 (1 = GPU board only)
    num_gpus : GPUs in the fleet, for ``kwh_per_day``

    Returns
    -------
    EnergyEstimate
    """
    p = gpu_power_w(tdp_w, utilisation, idle_power_fraction)
    tps = _num("tokens_per_s_per_gpu", tokens_per_s_per_gpu, 0, lo_open=True)
    pue_v = _num("pue", pue, 1, lo_open=False)
    host = _num("host_power_factor", host_power_factor, 1, lo_open=False)
    if isinstance(num_gpus, bool) or not isinstance(num_gpus, int) or num_gpus < 1:
        raise PlannerError(f"num_gpus must be a whole number >= 1, got {num_gpus!r}")
    facility_w = p * host * pue_v
    jpt = facility_w / tps
    tpj = 1 / jpt if jpt > 0 else None
    if tpj is not None and not math.isfinite(tpj):  # a subnormal J/token: no meaningful inverse
        tpj = None
    return EnergyEstimate(
        power_w_per_gpu=p,
        facility_power_w_per_gpu=facility_w,
        joules_per_token=jpt,
        tokens_per_joule=tpj,
        kwh_per_day=facility_w * num_gpus * 24 / 1000,
        num_gpus=num_gpus,
        utilisation=float(utilisation),
        idle_power_fraction=float(idle_power_fraction),
        host_power_factor=host,
        pue=pue_v,
    )
