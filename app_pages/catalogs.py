"""The session's catalog: the bundled catalogs plus this session's custom GPUs, prices and
models (``st.session_state``), cached per combination."""

from __future__ import annotations

import streamlit as st
from pydantic import ValidationError

from planner import (
    Accelerator,
    Catalog,
    ModelArch,
    PlannerError,
    RentalPrice,
    load_catalog,
)

# session_state keys of the custom catalog entries (lists of JSON strings, so they hash)
CUSTOM_GPUS = "custom_gpus"
CUSTOM_PRICES = "custom_prices"
CUSTOM_MODELS = "custom_models"


# --------------------------------------------------------------------------- catalog
@st.cache_resource(show_spinner=False)
def base_catalog() -> Catalog:
    """The bundled catalogs (validated once per server process)."""
    return load_catalog()


@st.cache_resource(show_spinner=False, max_entries=32)
def _catalog_with(
    gpus: tuple[str, ...], prices: tuple[str, ...], models: tuple[str, ...] = ()
) -> Catalog:
    base = base_catalog()
    if not gpus and not prices and not models:
        return base
    return Catalog(
        accelerators=base.accelerators + tuple(Accelerator.model_validate_json(g) for g in gpus),
        models=base.models + tuple(ModelArch.model_validate_json(m) for m in models),
        precisions=base.precisions,
        kv_precisions=base.kv_precisions,
        frameworks=base.frameworks,
        rental_prices=base.rental_prices
        + tuple(RentalPrice.model_validate_json(p) for p in prices),
        purchase_prices=base.purchase_prices,
    )


def custom_key() -> tuple[tuple[str, ...], ...]:
    """Hashable identity of this session's custom entries (part of every cache key):
    custom GPUs, custom prices and models uploaded as config.json."""
    return (
        tuple(st.session_state.get(CUSTOM_GPUS, ())),
        tuple(st.session_state.get(CUSTOM_PRICES, ())),
        tuple(st.session_state.get(CUSTOM_MODELS, ())),
    )


def catalog_for(key: tuple[tuple[str, ...], ...]) -> Catalog:
    return _catalog_with(*key)


def session_catalog() -> Catalog:
    """Bundled catalogs plus the custom GPUs and prices added on the Catalog page."""
    return catalog_for(custom_key())


def validation_message(e: ValidationError) -> str:
    """One line per pydantic error, in the words of the YAML schema (field: message)."""
    lines = []
    for err in e.errors():
        where = ".".join(str(p) for p in err["loc"]) or "entry"
        lines.append(f"{where}: {err['msg']}")
    return "; ".join(lines)


def add_custom(kind: str, record: Accelerator | RentalPrice) -> str | None:
    """Append a validated record to the session catalog; return an error message or None."""
    key = CUSTOM_GPUS if kind == "gpu" else CUSTOM_PRICES
    entries = [*st.session_state.get(key, []), record.model_dump_json()]
    trial = custom_key()
    trial = (
        (tuple(entries), *trial[1:]) if kind == "gpu" else (trial[0], tuple(entries), *trial[2:])
    )
    try:
        catalog_for(trial)
    except ValidationError as e:  # duplicate id, price for an unknown gpu, ...
        return validation_message(e)
    except PlannerError as e:
        return str(e)
    st.session_state[key] = entries
    return None
