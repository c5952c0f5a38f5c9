"""Catalogs and records: accelerators, prices, models, precisions, frameworks, efficiency
parameters and calibration profiles.

The bottom of the package stack (only :mod:`planner.errors` is below it). Ids become
records here, once (:meth:`Catalog.resolve`); everything above receives records.
"""

from planner.catalog.catalog import (
    DATA_DIR,
    Catalog,
    KvDefault,
    Resolved,
    check_layout,
    compute_dtype_for,
    default_kv_precision,
    kv_precision_basis,
    load_catalog,
    price_rows,
)
from planner.catalog.efficiency import PRIOR, EfficiencyParams
from planner.catalog.hf_config import model_from_hf_config
from planner.catalog.prices import (
    MAX_PURCHASE_USD,
    MAX_USD_PER_GPU_HOUR,
    MIN_USD_PER_GPU_HOUR,
    PRICE_BAND_REASON,
    PurchasePrice,
    RentalPrice,
)
from planner.catalog.profile import (
    DEFAULT_PROFILE,
    Profile,
    ProfileNode,
    load_profile,
    model_family,
    resolve_efficiency,
    resolve_params,
    save_profile,
)
from planner.catalog.records import (
    Accelerator,
    ComputeDtype,
    Framework,
    Frozen,
    KvPrecision,
    ModelArch,
    Precision,
    Sourced,
)

__all__ = [
    "DATA_DIR",
    "DEFAULT_PROFILE",
    "MAX_PURCHASE_USD",
    "MAX_USD_PER_GPU_HOUR",
    "MIN_USD_PER_GPU_HOUR",
    "PRICE_BAND_REASON",
    "PRIOR",
    "Accelerator",
    "Catalog",
    "ComputeDtype",
    "EfficiencyParams",
    "Framework",
    "Frozen",
    "KvDefault",
    "KvPrecision",
    "ModelArch",
    "Precision",
    "Profile",
    "ProfileNode",
    "PurchasePrice",
    "RentalPrice",
    "Resolved",
    "Sourced",
    "check_layout",
    "compute_dtype_for",
    "default_kv_precision",
    "kv_precision_basis",
    "load_catalog",
    "load_profile",
    "model_from_hf_config",
    "price_rows",
    "model_family",
    "resolve_efficiency",
    "resolve_params",
    "save_profile",
]
