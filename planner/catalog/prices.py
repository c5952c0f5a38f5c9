"""Price records: rental rows and purchase rows of data/prices.yaml, with the plausible
bands a price must fall in (a strict number: ``true`` or ``"2.5"`` is an error)."""

from __future__ import annotations

import datetime as _dt
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from planner.catalog.records import Sourced

# Plausible band of a rental price [USD per GPU-hour]. The dearest published on-demand
# GPU-hour in data/prices.yaml is about $15 (an 8-GPU hyperscaler instance / 8); a value
# above $200 is an instance or monthly price entered as a GPU-hour, or a typo. The cheapest
# rental in any source is about $0.10 (consumer GPUs); below one cent is a unit slip (a
# per-GPU-second or per-minute price).
MIN_USD_PER_GPU_HOUR = 0.01
MAX_USD_PER_GPU_HOUR = 200.0
# Plausible band of a purchase price [USD per GPU]: no accelerator sells for over $1M
# (datacenter GPUs list at $10k-$70k); a larger number is a server or cluster price.
MAX_PURCHASE_USD = 1_000_000.0
PRICE_BAND_REASON = (
    f"a GPU-hour costs ${MIN_USD_PER_GPU_HOUR:g}-${MAX_USD_PER_GPU_HOUR:g} (the dearest published "
    "on-demand GPU-hour is about $15; a larger number is an instance or monthly price, a smaller "
    "one a per-second or per-minute price)"
)


# strict numbers: a bool (``true``) or a string (``"2.5"``) is an error, not 1.0 / 2.5
def _in_band(v: float) -> float:
    if not MIN_USD_PER_GPU_HOUR <= v <= MAX_USD_PER_GPU_HOUR:
        raise ValueError(
            f"{v:g} USD per GPU-hour is outside the plausible band: {PRICE_BAND_REASON}"
        )
    return v


_UsdHour = Annotated[float, Field(strict=True), AfterValidator(_in_band)]
_UsdPurchase = Annotated[float, Field(strict=True, gt=0, le=MAX_PURCHASE_USD)]


def _not_future(as_of: _dt.date) -> _dt.date:
    # one day of slack for time zones: a row read "today" somewhere east of UTC
    if as_of > _dt.date.today() + _dt.timedelta(days=1):
        raise ValueError(f"as_of {as_of} is in the future (a price is dated when it was read)")
    return as_of


def _ordered(rng: tuple[float, float] | None, name: str) -> None:
    if rng is not None and not rng[0] <= rng[1]:
        raise ValueError(f"{name} must be [low, high] with low <= high, got {list(rng)}")


class RentalPrice(Sourced):
    """A dated rental price for one GPU of a provider's offering [USD per GPU-hour].

    A multi-GPU instance is normalised per GPU: give ``usd_per_instance_hour`` and
    ``gpus_per_instance`` with it and the loader checks that
    ``usd_per_gpu_hour = usd_per_instance_hour / gpus_per_instance`` (to half a cent).
    ``low_confidence`` marks a row that is never a silent default (a third-party figure
    another source contradicts, a tier the source does not state, ...); ``notes`` says why.
    """

    gpu: str
    provider: str
    offering: str | None = None
    kind: Literal["on_demand", "spot", "reserved", "serverless", "community"]
    usd_per_gpu_hour: _UsdHour | None = None
    usd_per_gpu_hour_range: tuple[_UsdHour, _UsdHour] | None = None
    region: str | None = None
    commitment: str | None = Field(
        None, description="reserved term, e.g. '1 year', 'capacity block'; None = none"
    )
    usd_per_instance_hour: Annotated[float, Field(strict=True, gt=0, le=10_000)] | None = None
    gpus_per_instance: Annotated[int, Field(strict=True, ge=1, le=1024)] | None = None
    low_confidence: Annotated[bool, Field(strict=True)] = False

    @model_validator(mode="after")
    def _one_value(self) -> RentalPrice:
        if (self.usd_per_gpu_hour is None) == (self.usd_per_gpu_hour_range is None):
            raise ValueError("give exactly one of usd_per_gpu_hour or usd_per_gpu_hour_range")
        _ordered(self.usd_per_gpu_hour_range, "usd_per_gpu_hour_range")
        _not_future(self.as_of)
        if (self.usd_per_instance_hour is None) != (self.gpus_per_instance is None):
            raise ValueError("give usd_per_instance_hour and gpus_per_instance together")
        if self.usd_per_instance_hour is not None and self.usd_per_gpu_hour is not None:
            per_gpu = self.usd_per_instance_hour / self.gpus_per_instance  # type: ignore[operator]
            if abs(per_gpu - self.usd_per_gpu_hour) > 0.005:
                raise ValueError(
                    f"usd_per_gpu_hour {self.usd_per_gpu_hour} is not usd_per_instance_hour / "
                    f"gpus_per_instance = {self.usd_per_instance_hour} / {self.gpus_per_instance}"
                    f" = {per_gpu:.4f}"
                )
        return self

    def dedup_key(self) -> tuple[Any, ...]:
        """What makes two rows the same offer (a second copy would shift the median)."""
        return (
            self.gpu,
            self.provider.strip().lower(),
            (self.offering or "").strip().lower(),
            self.kind,
            (self.region or "").strip().lower(),
            (self.commitment or "").strip().lower(),
            self.as_of,
        )


class PurchasePrice(Sourced):
    """A dated purchase price of one GPU [USD per GPU]."""

    gpu: str
    kind: Literal["msrp", "estimate", "quote"]
    usd: _UsdPurchase | None = None
    usd_range: tuple[_UsdPurchase, _UsdPurchase] | None = None

    @model_validator(mode="after")
    def _one_value(self) -> PurchasePrice:
        if (self.usd is None) == (self.usd_range is None):
            raise ValueError("give exactly one of usd or usd_range")
        _ordered(self.usd_range, "usd_range")
        _not_future(self.as_of)
        return self

    def dedup_key(self) -> tuple[Any, ...]:
        """What makes two purchase rows the same (one GPU, kind, source and date)."""
        return (self.gpu, self.kind, self.source.strip().lower(), self.as_of)


# --------------------------------------------------------------------------- models
