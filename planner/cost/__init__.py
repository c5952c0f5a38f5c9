"""Cost, energy and quantization quality: pure functions over dated, sourced data.

Prices
------
``price_options(cat, gpu_id, basis="on_demand", provider=None) -> tuple[PriceOption, ...]``
    Rental rows of one kind (on_demand, reserved, spot, serverless, community) for a GPU,
    cheapest first; a ``usd_per_gpu_hour_range`` row is priced at its midpoint, range kept.
``quote_price(cat, gpu_id, basis="on_demand", provider=None, usd_per_gpu_hour=None, *,
ownership=None, purchase_usd=None, today=None, **own_overrides) -> PriceQuote``
    The $/GPU-hour to plan with: the median (:func:`median_usd_per_gpu_hour`; even count:
    the mean of the two middle rows) of that kind's trusted rows (low-confidence rows and
    rows older than 12 months before ``today`` are set aside while a trusted row remains),
    or the named provider's rows, or the user's override (source "user override"), or
    ``basis="own"`` (purchase amortised + power + ops). Carries provider, offering,
    source, as_of, notes, the rule used, ``price_rows`` / ``min_`` / ``median_`` /
    ``max_usd_per_gpu_hour`` of the rows it was chosen from, ``warnings`` ("1 price row",
    "low confidence", "older than 12 months") and the spread of those rows.
    No price → PlannerError naming the kinds that exist and ``--usd-per-gpu-hour``.
``load_price_file(path, cat)`` / ``apply_price_rows(cat, rental, purchase, mode)``
    A buyer's own price rows (YAML or CSV in the catalog's row format), validated like
    the catalog, replacing (per GPU and kind) or extending the catalog's rows for one run.

Owning
------
``own_cost_per_gpu_hour(gpu, purchase, ownership=None, *, tdp_w=None, amortisation_years=None,
cost_of_capital_per_year=None, server_overhead_fraction=None, host_power_factor=None, pue=None, electricity_usd_per_kwh=None,
ops_fraction_of_capex_per_year=None, utilisation=None, idle_power_fraction=None) -> OwnCost``
    ``capital = purchase × (1 + overhead) × crf / 8760 h``, ``crf = r / (1 − (1 + r)^−years)``
    (:func:`capital_recovery_factor`, ``r`` the cost of capital; 0: ``1 / years``),
    ``power = TDP/1000 × (idle + (1 − idle) × util) × host_power_factor × PUE × $/kWh``,
    ``ops = purchase × (1 + overhead) × ops_fraction / 8760 h``; every parameter with its
    provenance (sourced / derived / assumption / user override / catalog); defaults in
    ``data/ownership.yaml`` (``load_ownership()``).

``own_cost(cat, gpu_id, ownership=None, purchase_usd=None, **overrides) -> OwnCost``
    The same for a catalog GPU from its newest purchase row (the terms, not only the total).

Fleet money
-----------
``fleet_cost(num_gpus, price, gpu_hours_per_day=None) -> FleetCost``
    $/h = GPUs × $/GPU-h; $/month = $/h × 730 h; autoscaled: GPU-h/day × $/GPU-h × 730/24.
``usd_per_mtok(usd_per_hour, tokens_per_s, utilisation=1.0) -> float``
    $/h ÷ (tokens/s × utilisation × 3600) × 1e6.
``token_costs(fleet, *, output_tokens_per_s_full_load=None, total_tokens_per_s_full_load=None,
output_tokens_per_day=None, total_tokens_per_day=None) -> TokenCosts``
    $/M output and total tokens at full load and at the planned traffic.

Own, rent or buy tokens (:mod:`planner.cost.buyer`)
--------------------------------------------------
``breakeven_utilization(own, rent) -> float``
    ``u* = own / rent``: above it owning beats renting (own at full use [$/GPU-h of the year]).
``api_crossover(fixed_usd_per_month, api_usd_per_mtok, marginal_usd_per_mtok=0,
capacity_mtok_per_month=None) -> Crossover``
    ``V* = F / (p_api − m)`` [M tokens/month]; None when the API wins at every volume the
    fleet can carry. ``blended_usd_per_mtok(p_in, p_out, mean_in, mean_out)``.
``load_api_prices()``, ``api_reference(model, mean_in, mean_out) -> ApiQuote | None``
    ``data/api_prices.yaml``; the cheapest trusted row at the workload's token mix.
``load_segments()``, ``segment(id)``
    InferenceX buyer segments (``data/segments.yaml``): all-in $/GPU-hour per GPU.

Energy
------
``energy_per_token(tdp_w, utilisation, tokens_per_s_per_gpu, *, pue=1.0, idle_power_fraction=0.0,
host_power_factor=1.0, num_gpus=1) -> EnergyEstimate``
    J/token and kWh/day from P = TDP × (idle + (1 − idle) × utilisation), labelled
    "estimate from TDP × utilisation". ``gpu_power_w(tdp_w, utilisation, idle_power_fraction=0)``.

Quality
-------
``quality_delta(model, precision, *, quality=None, cat=None) -> QualityResult``
    Rows of ``data/quality.yaml`` whose explicit ``models:`` list holds the model id and
    whose precision matches: delta in points and %, benchmark, source, as_of; status
    ``baseline`` for bf16/fp16, ``not_measured`` ("quality not measured") otherwise.

Data
----
``load_ownership(data_dir=None) -> OwnershipDefaults``, ``load_quality(data_dir=None) -> QualityData``.
"""

from __future__ import annotations

from .buyer import (
    ApiPrice,
    ApiQuote,
    BuyerSegment,
    Crossover,
    api_crossover,
    api_reference,
    blended_usd_per_mtok,
    breakeven_utilization,
    load_api_prices,
    load_segments,
    segment,
)
from .data import (
    PRICE_FILE_MODES,
    OwnershipDefaults,
    OwnershipParam,
    QualityData,
    QualityRow,
    apply_price_rows,
    load_ownership,
    load_price_file,
    load_quality,
)
from .energy import ENERGY_LABEL, EnergyEstimate, energy_per_token, gpu_power_w
from .owning import capital_recovery_factor
from .pricing import (
    HOURS_PER_MONTH,
    HOURS_PER_YEAR,
    RENTAL_BASES,
    STALE_AFTER_DAYS,
    CostTerm,
    FleetCost,
    OwnCost,
    PriceOption,
    PriceQuote,
    PriceSpread,
    TokenCosts,
    UsedParam,
    check_providers,
    check_usd_per_gpu_hour,
    fleet_cost,
    median_usd_per_gpu_hour,
    own_cost,
    own_cost_per_gpu_hour,
    price_options,
    quote_price,
    row_warnings,
    token_costs,
    trusted_rows,
    usd_per_mtok,
)
from .quality import BASELINE_PRECISIONS, NOT_MEASURED, QualityResult, quality_delta

__all__ = [
    "ApiPrice",
    "ApiQuote",
    "BuyerSegment",
    "Crossover",
    "api_crossover",
    "api_reference",
    "blended_usd_per_mtok",
    "breakeven_utilization",
    "load_api_prices",
    "load_segments",
    "segment",
    "BASELINE_PRECISIONS",
    "ENERGY_LABEL",
    "HOURS_PER_MONTH",
    "HOURS_PER_YEAR",
    "NOT_MEASURED",
    "PRICE_FILE_MODES",
    "RENTAL_BASES",
    "STALE_AFTER_DAYS",
    "CostTerm",
    "EnergyEstimate",
    "FleetCost",
    "OwnCost",
    "OwnershipDefaults",
    "OwnershipParam",
    "PriceOption",
    "PriceQuote",
    "PriceSpread",
    "QualityData",
    "QualityResult",
    "QualityRow",
    "TokenCosts",
    "UsedParam",
    "apply_price_rows",
    "capital_recovery_factor",
    "check_providers",
    "check_usd_per_gpu_hour",
    "energy_per_token",
    "fleet_cost",
    "gpu_power_w",
    "load_ownership",
    "load_price_file",
    "load_quality",
    "median_usd_per_gpu_hour",
    "own_cost",
    "own_cost_per_gpu_hour",
    "price_options",
    "quality_delta",
    "quote_price",
    "row_warnings",
    "token_costs",
    "trusted_rows",
    "usd_per_mtok",
]
