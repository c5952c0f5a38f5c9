"""Shared pieces of the app pages: the catalog (bundled + this session's custom entries),
the model / GPU / precision pickers (bound to the URL's query parameters), cached
computations and formatting.

Pages import from here and from the top-level ``planner`` namespace only. Every number
shown comes from ``planner``; this module turns widgets into arguments and results into
plain dicts / DataFrames that ``st.cache_data`` can cache.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from pydantic import ValidationError

from planner import (
    Accelerator,
    Catalog,
    PlannerError,
    RentalPrice,
    decode_step,
    load_catalog,
    plan_memory,
    resolve_efficiency,
    step_model,
)

GB = 1e9
NO_FRAMEWORK = "(none)"
DEFAULTS = {
    "model": "llama-3.1-70b",
    "gpu": "nvidia-h100-sxm",
    "precision": "fp8",
    "framework": "vllm",
    "tp": 2,
    "pp": 1,
    "context": 8192,
}
TP_OPTIONS = [1, 2, 4, 8, 16, 32]
PP_OPTIONS = [1, 2, 4, 8]

# session_state keys of the custom catalog entries (lists of JSON strings, so they hash)
CUSTOM_GPUS = "custom_gpus"
CUSTOM_PRICES = "custom_prices"


# --------------------------------------------------------------------------- catalog
@st.cache_resource(show_spinner=False)
def base_catalog() -> Catalog:
    """The bundled catalogs (validated once per server process)."""
    return load_catalog()


@st.cache_resource(show_spinner=False, max_entries=32)
def _catalog_with(gpus: tuple[str, ...], prices: tuple[str, ...]) -> Catalog:
    base = base_catalog()
    if not gpus and not prices:
        return base
    return Catalog(
        accelerators=base.accelerators + tuple(Accelerator.model_validate_json(g) for g in gpus),
        models=base.models,
        precisions=base.precisions,
        kv_precisions=base.kv_precisions,
        frameworks=base.frameworks,
        rental_prices=base.rental_prices
        + tuple(RentalPrice.model_validate_json(p) for p in prices),
        purchase_prices=base.purchase_prices,
    )


def custom_key() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Hashable identity of this session's custom entries (part of every cache key)."""
    return (
        tuple(st.session_state.get(CUSTOM_GPUS, ())),
        tuple(st.session_state.get(CUSTOM_PRICES, ())),
    )


def catalog_for(key: tuple[tuple[str, ...], tuple[str, ...]]) -> Catalog:
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
    trial = (tuple(entries), trial[1]) if kind == "gpu" else (trial[0], tuple(entries))
    try:
        catalog_for(trial)
    except ValidationError as e:  # duplicate id, price for an unknown gpu, ...
        return validation_message(e)
    except PlannerError as e:
        return str(e)
    st.session_state[key] = entries
    return None


# --------------------------------------------------------------------------- pickers
def _index(options: list[Any], wanted: Any, default: int = 0) -> int:
    return options.index(wanted) if wanted in options else default


@dataclass(frozen=True)
class Setup:
    """The deployment chosen in the sidebar (ids, so it hashes for st.cache_data)."""

    model: str
    gpu: str
    precision: str
    kv_precision: str
    framework: str | None
    tp: int
    pp: int
    context: int
    utilization: float


def setup_sidebar(cat: Catalog) -> Setup:
    """Model, GPU, precision, KV precision, framework, TP, PP, context, utilization.

    Every widget is bound to a URL query parameter of the same name, so a link
    reproduces the view (``?model=...&gpu=...&precision=...&tp=...&context=...``).
    """
    model_ids = [m.id for m in cat.models]
    gpu_ids = [g.id for g in cat.accelerators]
    prec_ids = [p.id for p in cat.precisions]
    fw_ids = [f.id for f in cat.frameworks]
    with st.sidebar:
        st.header("Deployment")
        model_id = st.selectbox(
            "Model",
            model_ids,
            index=_index(model_ids, DEFAULTS["model"]),
            key="model",
            bind="query-params",
        )
        gpu_id = st.selectbox(
            "GPU",
            gpu_ids,
            index=_index(gpu_ids, DEFAULTS["gpu"]),
            key="gpu",
            bind="query-params",
            help="Custom GPUs added on the Catalog page appear at the end of the list.",
        )
        prec_id = st.selectbox(
            "Precision (weights)",
            prec_ids,
            index=_index(prec_ids, DEFAULTS["precision"]),
            key="precision",
            bind="query-params",
        )
        prec = cat.precision(prec_id)
        kv_opts = list(dict.fromkeys([prec.kv_default, *prec.kv_options]))
        kv_id = st.selectbox(
            "KV-cache precision",
            kv_opts,
            index=0,
            key=f"kv_{prec_id}",  # options depend on the precision
            bind="query-params",
            help=f"options with {prec_id}: {', '.join(kv_opts)}",
        )
        fw_choice = st.selectbox(
            "Serving framework",
            [NO_FRAMEWORK, *fw_ids],
            index=_index(fw_ids, DEFAULTS["framework"], -1) + 1,
            key="framework",
            bind="query-params",
            help="block size, default memory utilization, max_num_seqs and runtime overhead; "
            f"'{NO_FRAMEWORK}': 0.9 utilization, 16-token KV blocks",
        )
        fw = None if fw_choice == NO_FRAMEWORK else cat.framework(fw_choice)
        c1, c2 = st.columns(2)
        tp = c1.selectbox(
            "TP (GPUs per stage)",
            TP_OPTIONS,
            index=_index(TP_OPTIONS, DEFAULTS["tp"]),
            key="tp",
            bind="query-params",
        )
        pp = c2.selectbox(
            "PP (stages)",
            PP_OPTIONS,
            index=_index(PP_OPTIONS, DEFAULTS["pp"]),
            key="pp",
            bind="query-params",
        )
        context = st.number_input(
            "Context per sequence [tokens]",
            min_value=1,
            max_value=10_000_000,
            value=DEFAULTS["context"],
            step=1024,
            key="context",
            bind="query-params",
            help="prompt + output tokens each sequence holds in the KV cache",
        )
        util_default = float(fw.default_memory_utilization) if fw else 0.9
        util = st.slider(
            "GPU memory utilization",
            0.30,
            1.00,
            util_default,
            0.01,
            key=f"util_{fw_choice}",  # the default follows the framework
            bind="query-params",
            help="fraction of GPU memory the engine may use"
            + (
                f" ({fw.id}: of the memory left after weights and activations)"
                if fw is not None and fw.memory_utilization_of == "free"
                else " (of the whole card)"
            ),
        )
    return Setup(
        model=model_id,
        gpu=gpu_id,
        precision=prec_id,
        kv_precision=kv_id,
        framework=fw.id if fw else None,
        tp=int(tp),
        pp=int(pp),
        context=int(context),
        utilization=round(float(util), 4),
    )


# --------------------------------------------------------------------------- computations
@st.cache_data(show_spinner=False, max_entries=512)
def memory_plan(key: tuple, s: Setup) -> dict[str, Any]:
    """``planner.plan_memory`` as a dict, or ``{"error": message}`` (never raises)."""
    cat = catalog_for(key)
    try:
        plan = plan_memory(
            s.model,
            s.gpu,
            s.precision,
            kv_precision=s.kv_precision,
            tp=s.tp,
            pp=s.pp,
            context_len=s.context,
            memory_utilization=s.utilization,
            framework=s.framework,
            catalog=cat,
        )
    except PlannerError as e:
        return {"error": str(e)}
    return {**plan.as_dict(), "reserved_bytes_per_gpu": plan.reserved_bytes_per_gpu}


@st.cache_data(show_spinner=False, max_entries=512)
def decode_curve(key: tuple, s: Setup, max_batch: int) -> dict[str, Any]:
    """Decode-step time and output tokens/s for batch 1..max_batch (the memory limit).

    Returns ``{"df": DataFrame, "provenance": str}`` or ``{"error": message}``.
    """
    cat = catalog_for(key)
    try:
        params, provenance = resolve_efficiency(s.gpu, s.framework, s.precision, None, cat)
        sm = step_model(s.model, s.gpu, s.precision, s.kv_precision, s.tp, s.pp, params, cat)
        n = max(int(max_batch), 1)
        batch = np.unique(np.concatenate([np.geomspace(1, n, 80).round(), [1, n]]).astype(int))
        br = decode_step(sm, batch, s.context)
        t_s = np.broadcast_to(np.asarray(br.time_s, float), batch.shape)
    except PlannerError as e:
        return {"error": str(e)}
    df = pd.DataFrame(
        {
            "batch": batch,
            "decode_step_ms": t_s * 1e3,
            "output_tok_s_replica": batch / t_s,
            "output_tok_s_gpu": batch / t_s / (s.tp * s.pp),
        }
    )
    return {"df": df, "provenance": provenance}


def memory_split(plan: dict[str, Any]) -> pd.DataFrame:
    """One GPU's memory in parts that add up to its capacity [GB], from MemoryPlan fields.

    KV cache = the whole sequences that fit (max_concurrent_sequences x kv_bytes_per_sequence);
    free = the rest of planner's KV budget; reserved = what the memory utilization keeps back
    (capacity minus everything planner hands the engine). When the weights and workspace alone
    exceed the card, there is no KV, free or reserved part.
    """
    w = plan["weight_bytes_per_gpu"]
    act = plan["activation_bytes_per_gpu"]
    ovh = plan["runtime_overhead_bytes_per_gpu"]
    budget = max(plan["kv_budget_bytes_per_gpu"], 0.0)
    kv_used = plan["max_concurrent_sequences"] * plan["kv_bytes_per_sequence"]
    parts = [
        ("weights", w),
        ("activations / workspace", act),
        ("runtime overhead", ovh),
        ("KV cache (max sequences)", kv_used),
        ("KV budget not filled (free)", max(budget - kv_used, 0.0)),
        ("reserved (1 - utilization)", plan["reserved_bytes_per_gpu"]),
    ]
    df = pd.DataFrame(parts, columns=["part", "bytes"])
    df["GB"] = df["bytes"] / GB
    df["order"] = range(len(df))
    return df[df["bytes"] > 0].reset_index(drop=True)


def with_data(template: dict, **datasets: pd.DataFrame) -> dict:
    """A cached Vega-Lite spec (built with altair) with this run's named datasets."""
    spec = copy.deepcopy(template)  # streamlit edits the spec it is given
    spec["datasets"] = dict(datasets)
    return spec


# --------------------------------------------------------------------------- text
DEFINITIONS_MD = """
- **TTFT** (time to first token) includes queueing: from a request's arrival to its first
  output token [s].
- **TPOT** (time per output token) excludes the first token:
  `(E2E - TTFT) / (output tokens - 1)` [s/token].
- **ITL** (inter-token latency): the time between two consecutive output tokens of one
  request [s].
- **E2E** (end-to-end latency): from arrival to the last output token [s].
- **Throughput** is stated per GPU and per replica (one TP x PP group), output-only
  (`output tok/s`) and total, input + output (`total tok/s`).
- **Goodput** counts only requests that met every SLO [requests/s].
- **Decode step**: one forward pass that produces one token for each of `batch` running
  sequences, each holding `context` tokens [ms].
- **Max concurrent sequences**: how many sequences of `context` tokens fit in the KV-cache
  budget of one GPU, in whole KV blocks.
- **Units**: decimal GB (1 GB = 1e9 bytes), kB = 1e3 bytes; FLOPS are dense (no structured
  sparsity); times in seconds or milliseconds as labelled.
"""


def definitions_expander() -> None:
    with st.expander("Metric definitions and units"):
        st.markdown(DEFINITIONS_MD)
