"""The Memory and What-if pages' deployment pickers (model, GPU, precision, KV precision,
framework, TP, PP, context, utilization; bound to the URL's query parameters) and their cached
computations (memory plan, decode curve, the memory bar)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from app_pages.catalogs import catalog_for
from planner import (
    Catalog,
    PlannerError,
    decode_step,
    default_kv_precision,
    model_family,
    plan_memory,
    step_model,
)
from planner.catalog.release_profile import resolve_release_params

GB = 1e9
NO_FRAMEWORK = "(none)"
DEFAULTS = {
    "model": "llama-3.1-70b",
    "gpu": "nvidia-h100-sxm",
    "precision": "fp8",
    "framework": None,  # `planner memory`'s default: no framework (bf16 KV, 0.9 of the card)
    "tp": 2,
    "pp": 1,
    "context": 8192,
}
TP_OPTIONS = [1, 2, 4, 8, 16, 32]
PP_OPTIONS = [1, 2, 4, 8]


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
        fw_choice = st.selectbox(
            "Serving framework",
            [NO_FRAMEWORK, *fw_ids],
            index=_index(fw_ids, DEFAULTS["framework"], -1) + 1,
            key="framework",
            bind="query-params",
            help="block size, default memory utilization, max_num_seqs and runtime overhead; "
            f"'{NO_FRAMEWORK}' (the default, as `planner memory` without `--framework`): 0.9 "
            "utilization of the whole card, 16-token KV blocks, KV in the compute precision",
        )
        fw = None if fw_choice == NO_FRAMEWORK else cat.framework(fw_choice)
        # the default follows what the framework does with a checkpoint in this format
        kv_def = default_kv_precision(prec, fw, cat.model(model_id))
        kv_opts = list(dict.fromkeys([kv_def.id, *prec.kv_options]))
        kv_id = st.selectbox(
            "KV-cache precision",
            kv_opts,
            index=0,
            key=f"kv_{prec_id}_{fw_choice}",  # options and default depend on both
            bind="query-params",
            help=f"default {kv_def.id}: {kv_def.basis}. Options with {prec_id}: "
            + ", ".join(kv_opts),
        )
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
            help="fraction of GPU memory the engine may use" + _util_help(fw),
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


def memory_command(s: Setup, cat: Catalog) -> str:
    """The ``planner memory`` command that prints the numbers the Memory page shows for
    ``s``: every choice that is not the CLI's default spelled out."""
    parts = [
        f"planner memory --model {s.model} --gpu {s.gpu} --precision {s.precision} --tp {s.tp}"
    ]
    if s.pp != 1:
        parts.append(f"--pp {s.pp}")
    parts.append(f"--context {s.context}")
    fw = cat.framework(s.framework) if s.framework else None
    if fw is not None:
        parts.append(f"--framework {fw.id}")
    kv_def = default_kv_precision(cat.precision(s.precision), fw, cat.model(s.model))
    if s.kv_precision != kv_def.id:
        parts.append(f"--kv-precision {s.kv_precision}")
    util_def = float(fw.default_memory_utilization) if fw is not None else 0.9
    if abs(s.utilization - util_def) > 1e-9:
        parts.append(f"--memory-utilization {s.utilization:g}")
    return " ".join(parts)


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
        family = model_family(cat.model(s.model))
        params, provenance, _ = resolve_release_params(  # the newest release with a fit, as the CLI
            s.gpu,
            s.framework or None,
            s.precision,
            None,
            catalog=cat,
            family=family,
            model=cat.model(s.model),  # a release older than the model is not predicted
        )
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


def memory_parts(plan: dict[str, Any]) -> list[tuple[str, float]]:
    """One GPU's memory in parts that add up to its capacity: (part, bytes) in stacking
    order, from MemoryPlan fields.

    KV cache = the whole sequences that fit (max_concurrent_sequences x kv_bytes_per_sequence);
    free = the rest of planner's KV budget; reserved = what the memory utilization keeps back
    (capacity minus everything planner hands the engine). When the weights and workspace alone
    exceed the card, there is no KV, free or reserved part (those parts are 0 bytes).
    """
    budget = max(plan["kv_budget_bytes_per_gpu"], 0.0)
    kv_used = plan["max_concurrent_sequences"] * plan["kv_bytes_per_sequence"]
    return [
        ("weights", plan["weight_bytes_per_gpu"]),
        ("activations / workspace", plan["activation_bytes_per_gpu"]),
        ("runtime overhead", plan["runtime_overhead_bytes_per_gpu"]),
        ("KV cache (max sequences)", kv_used),
        ("KV budget not filled (free)", max(budget - kv_used, 0.0)),
        ("reserved (1 - utilization)", plan["reserved_bytes_per_gpu"]),
    ]


def memory_split(plan: dict[str, Any]) -> pd.DataFrame:
    """:func:`memory_parts` as a table: columns ``part``, ``bytes``, ``GB`` and ``order`` (the
    part's place in the stack), without the parts of 0 bytes."""
    df = pd.DataFrame(memory_parts(plan), columns=["part", "bytes"])
    df["GB"] = df["bytes"] / GB
    df["order"] = range(len(df))
    return df[df["bytes"] > 0].reset_index(drop=True)


#: colours of the parts of :func:`memory_split`, in stacking order
MEMORY_COLORS = {
    "weights": "#4c78a8",
    "activations / workspace": "#f58518",
    "runtime overhead": "#b279a2",
    "KV cache (max sequences)": "#54a24b",
    "KV budget not filled (free)": "#b7e4a7",
    "reserved (1 - utilization)": "#bab0ac",
}


def memory_bar(
    plan: dict[str, Any],
    gpu_label: str,
    *,
    labelled: bool = True,
    legend_right: bool = False,
    width: float = 1040,
) -> str:
    """The one-GPU memory bar as SVG (:mod:`app_pages.svg`): the parts of
    :func:`memory_parts` of more than 0 bytes stacked in :data:`MEMORY_COLORS`, the card's
    capacity as a dashed red line (with the text ``card: <GB> GB`` when ``labelled``), and
    the legend of every part, beside the bar (``legend_right``) or below it; ``width``: the
    chart's width [px] at which its text has the page's size (the column's width in a 1500
    px wide window)."""
    from app_pages import svg

    segs = [
        (part, b / GB, MEMORY_COLORS[part], f"{part}: {b / GB:,.2f} GB")
        for part, b in memory_parts(plan)
        if b > 0
    ]
    cap_gb = plan["gpu_memory_bytes"] / GB
    return svg.stacked_hbar_chart(
        [(gpu_label, segs)],
        x_axis=svg.Axis("memory per GPU [GB]", nice=False),
        label="Memory of one GPU [GB]: weights, activations, runtime overhead, KV cache, the "
        "KV budget left free and the reserved part, against the card's capacity",
        legend=list(MEMORY_COLORS.items()),
        rule=(cap_gb, f"card: {cap_gb:,.0f} GB", f"card: {cap_gb:.1f} GB" if labelled else ""),
        legend_right=legend_right,
        bar_px=36.0 if legend_right else 42.0,
        width=width,
    )


#: the style of the app's own HTML (:func:`cards_html`, What-if's outputs, captions and


def _util_help(fw) -> str:
    """What the engine's memory fraction is a fraction of (frameworks.yaml
    memory_utilization_of), for the slider's help."""
    if fw is None:
        return " (of the whole card)"
    return {
        "free": f" ({fw.id}: of the memory left after weights and activations)",
        "static": f" ({fw.id}: of the memory left after its set-up, for weights and KV; "
        "activations use the rest)",
    }.get(fw.memory_utilization_of, " (of the whole card)")
