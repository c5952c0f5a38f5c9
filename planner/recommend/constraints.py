"""What a recommendation must respect: one object, read from a scenario's ``constraints``
section or built from keywords (:func:`planner.recommend.recommend`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from planner.catalog.records import Frozen
from planner.errors import PlannerError, shown
from planner.recommend.limits import (
    MAX_GPUS,
    MAX_HEADROOM,
    MAX_LATENCY_COST_CAP,
    MAX_USD_BUDGET,
    MAX_WEIGHT_BITS,
)

__all__ = ["Constraints", "budget_limits", "constraints_of"]


class Constraints(Frozen):
    """What a recommendation must respect. ``headroom`` also sizes the fleet of
    ``planner capacity``; every other field is used by ``planner recommend`` (the search over
    deployments; see docs/recommend.md), not by ``simulate`` / ``capacity``."""

    headroom: float = Field(
        0.2, ge=0, le=MAX_HEADROOM, description="spare capacity above the peak (0.2 = 20 %)"
    )
    max_gpus_per_replica: int | None = Field(None, gt=0, le=MAX_GPUS)
    max_total_gpus: int | None = Field(None, gt=0, le=MAX_GPUS)
    gpus: tuple[str, ...] = ()
    frameworks: tuple[str, ...] = ()
    precisions: tuple[str, ...] = ()
    kv_precisions: tuple[str, ...] = ()
    tps: tuple[int, ...] = Field((1, 2, 4, 8), min_length=1)
    speculative: Literal["off", "auto"] = Field(
        "off",
        description="auto: also search speculative decoding (each published method x K the "
        "engine runs for the model, data/speculative.yaml)",
    )
    spec_workload: str | None = Field(
        None,
        description="the prompts' kind the searched speculative settings read their "
        "acceptance length for: chat, code, math, mixed, random, random-raw; none: natural text",
    )
    acceptance_length: float | None = Field(
        None,
        ge=1.0,
        allow_inf_nan=False,
        description="the user's acceptance length [tokens/step]: replaces the published one "
        "of every searched speculative setting with K + 1 >= it",
    )
    min_weight_bits: float | None = Field(
        None, gt=0, le=MAX_WEIGHT_BITS, description="quality floor, e.g. 8 excludes 4-bit"
    )
    datacenter_only: bool = Field(
        False,
        description="leave out cards whose driver licence excludes datacenter deployment "
        "(hardware.yaml datacenter_licensed: false, e.g. GeForce)",
    )
    max_usd_per_hour: float | None = Field(None, gt=0, le=MAX_USD_BUDGET)
    max_usd_per_month: float | None = Field(None, gt=0, le=MAX_USD_BUDGET)
    price_basis: Literal["on_demand", "reserved", "spot", "serverless", "community", "own"] = (
        "on_demand"
    )
    providers: tuple[str, ...] = ()
    usd_per_gpu_hour: dict[str, float] = Field(
        default_factory=dict, description="price overrides by GPU id [USD per GPU-hour]"
    )
    fit_percentile: float = Field(
        99.0, gt=0, le=100, description="percentile of prompt + answer that must fit [%]"
    )
    latency_cost_cap: float = Field(
        2.0,
        ge=1.0,
        le=MAX_LATENCY_COST_CAP,
        allow_inf_nan=False,
        description="objective latency: only options costing at most this multiple of the "
        "cheapest feasible option [x]",
    )

    @field_validator("spec_workload")
    @classmethod
    def _spec_workload(cls, v: str | None) -> str | None:
        from planner.catalog.speculative import WORKLOADS

        if v is not None and v not in WORKLOADS:
            raise ValueError(f"must be one of {', '.join(WORKLOADS)}")
        return v

    @field_validator("tps")
    @classmethod
    def _tps(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if any(t < 1 for t in v):
            raise ValueError("TP sizes must be >= 1")
        if any(t > MAX_GPUS for t in v):
            raise ValueError(f"TP sizes must be at most {MAX_GPUS} GPUs")
        return v

    @field_validator("usd_per_gpu_hour", mode="before")
    @classmethod
    def _strict_prices(cls, v: Any) -> Any:
        # a price is a number: ``true`` or ``"2.5"`` is refused, as in a price file
        for gpu, usd in v.items() if isinstance(v, dict) else ():
            if isinstance(usd, (bool, str)) or not isinstance(usd, (int, float)):
                raise ValueError(
                    f"price for {gpu} must be a number [USD per GPU-hour], not {shown(usd)}"
                )
        return v

    @field_validator("usd_per_gpu_hour")
    @classmethod
    def _prices(cls, v: dict[str, float]) -> dict[str, float]:
        from planner.cost.pricing import check_usd_per_gpu_hour

        for gpu, usd in v.items():
            try:  # the catalog's plausible band, the same rule as price rows and the CLI flag
                check_usd_per_gpu_hour(usd, f"price for {gpu}")
            except PlannerError as e:
                raise ValueError(str(e)) from None
        return v


def constraints_of(constraints: Constraints | None, fields: dict[str, Any]) -> Constraints:
    """``constraints`` with ``fields`` (Constraints' field names) replacing its values; a
    clear one-line error for a bad value."""
    from pydantic import ValidationError

    base = (constraints or Constraints()).model_dump()
    unknown = sorted(set(fields) - set(base))
    if unknown:
        raise PlannerError(
            f"recommend(): unknown keyword(s) {', '.join(unknown)} (constraints are: "
            f"{', '.join(base)})"
        )
    base.update({k: v for k, v in fields.items()})
    try:
        return Constraints.model_validate(base)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise PlannerError(
            f"{where} {err['msg'].lower()}, got {err.get('input')!r}".replace("value error, ", "")
        ) from None


def budget_limits(c: Constraints) -> list[tuple[float, str]]:
    """The budget limits of the constraints: ``(most $/h, the constraint's text)``."""
    limits: list[tuple[float, str]] = []
    if c.max_usd_per_hour is not None:
        limits.append((c.max_usd_per_hour, f"max_usd_per_hour={c.max_usd_per_hour:,.2f}"))
    if c.max_usd_per_month is not None:
        limits.append(
            (c.max_usd_per_month / 730.0, f"max_usd_per_month={c.max_usd_per_month:,.0f}")
        )
    return limits
