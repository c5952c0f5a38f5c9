"""Catalog page: GPUs, models, frameworks, precisions and prices with their sources and
dates; add a custom GPU or rental price for this session (validated like the YAML)."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import streamlit as st
from pydantic import ValidationError

from app_pages import widgets as w
from planner import Accelerator, PlannerError, RentalPrice, param_counts

st.title("Catalog")
st.caption(
    "The data behind every number, as loaded from data/*.yaml, with the source and date of "
    "each entry. Custom entries added below live in this browser session only and are used by "
    "the other pages."
)

try:
    cat = w.session_catalog()
except PlannerError as e:
    st.error(f"Cannot load the catalogs: {e}")
    st.stop()

custom_gpu_ids = {Accelerator.model_validate_json(j).id for j in w.custom_key()[0]}
n_custom_prices = len(w.custom_key()[1])

TC = st.column_config.TextColumn
NC = st.column_config.NumberColumn
DC = st.column_config.DateColumn


def _src(rec) -> dict:
    return {
        "source": rec.source,
        "as_of": rec.as_of,
        "unverified": "; ".join(rec.unverified),
    }


def _numeric(df: pd.DataFrame) -> pd.DataFrame:
    """Columns of numbers and None become float (NaN shows as an empty cell, not "None")."""
    for c in df.columns:
        vals = df[c].dropna()
        if (
            df[c].dtype == object
            and len(vals)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
        ):
            df[c] = pd.to_numeric(df[c])
    return df


SRC_COLS = {
    "source": TC("source", width="large"),
    "as_of": DC("as of", format="YYYY-MM-DD"),
    "unverified": TC("not read from a source", help="fields no source gave"),
}

tab_gpu, tab_model, tab_fw, tab_prec, tab_price, tab_add = st.tabs(
    ["GPUs", "Models", "Frameworks", "Precisions", "Prices", "Add custom GPU / price"]
)

with tab_gpu:
    gpus = pd.DataFrame(
        [
            {
                "id": g.id,
                "custom": g.id in custom_gpu_ids,
                "name": g.name,
                "vendor": g.vendor,
                "arch": g.arch,
                "memory_gb": g.memory_gb,
                "mem_bw_gbs": g.mem_bw_gbs,
                "bf16": g.bf16_dense_tflops or g.fp16_dense_tflops,
                "fp8": g.fp8_dense_tflops,
                "fp4": g.fp4_dense_tflops,
                "tdp_w": g.tdp_w,
                "link_gbs": g.interconnect_gbs_unidir,
                "interconnect": g.interconnect,
                **_src(g),
            }
            for g in cat.accelerators
        ]
    )
    num_cols = ["memory_gb", "mem_bw_gbs", "bf16", "fp8", "fp4", "tdp_w", "link_gbs"]
    gpus[num_cols] = gpus[num_cols].apply(pd.to_numeric, errors="coerce")
    if not custom_gpu_ids:
        gpus = gpus.drop(columns="custom")
    st.dataframe(
        gpus,
        hide_index=True,
        placeholder="",
        height=600,
        column_config={
            "memory_gb": NC("memory [GB]", format="%,.0f"),
            "mem_bw_gbs": NC("bandwidth [GB/s]", format="%,.0f"),
            "bf16": NC("bf16 [TFLOPS]", format="%,.0f", help="dense, no sparsity"),
            "fp8": NC("fp8 [TFLOPS]", format="%,.0f", help="dense, no sparsity"),
            "fp4": NC("fp4 [TFLOPS]", format="%,.0f", help="dense, no sparsity"),
            "tdp_w": NC("TDP [W]", format="%,.0f"),
            "link_gbs": NC("GPU link [GB/s]", format="%,.0f", help="per direction"),
            "custom": st.column_config.CheckboxColumn("custom", help="added in this session"),
            **SRC_COLS,
        },
    )
    st.caption(
        "Empty cells: no source gives the number; the planner then says what it cannot compute."
    )

with tab_model:
    rows = []
    for m in cat.models:
        pc = param_counts(m)
        rows.append(
            {
                "id": m.id,
                "architecture": m.architecture,
                "layers": m.num_hidden_layers,
                "hidden": m.hidden_size,
                "heads": m.num_attention_heads,
                "kv_heads": m.num_key_value_heads,
                "head_dim": m.head_dim,
                "experts": f"{m.num_experts_per_tok}/{m.num_experts}" if m.num_experts else "",
                "params_total_b": pc.total / 1e9,
                "params_active_b": pc.active / 1e9,
                "published_total_b": m.published_total_params_b,
                "max_ctx": m.max_position_embeddings,
                **_src(m),
            }
        )
    st.dataframe(
        _numeric(pd.DataFrame(rows)),
        hide_index=True,
        placeholder="",
        column_config={
            "params_total_b": NC(
                "params [B]", format="%.2f", help="computed from the architecture"
            ),
            "params_active_b": NC("active params [B]", format="%.2f", help="touched per token"),
            "published_total_b": NC("published [B]", format="%.2f"),
            "max_ctx": NC("max context [tokens]", format="%d"),
            "experts": TC("experts (active/total)"),
            **SRC_COLS,
        },
    )

with tab_fw:
    st.dataframe(
        _numeric(
            pd.DataFrame(
                [
                    {
                        "id": f.id,
                        "name": f.name,
                        "continuous_batching": f.continuous_batching,
                        "chunked_prefill": f.chunked_prefill,
                        "prefix_caching": f.prefix_caching,
                        "kv_block": f.kv_block_size,
                        "max_num_seqs": f.default_max_num_seqs,
                        "mem_util": f.default_memory_utilization,
                        "util_of": f.memory_utilization_of,
                        "overhead_gb": f.runtime_overhead_gb,
                        "precisions": ", ".join(f.precisions),
                        **_src(f),
                    }
                    for f in cat.frameworks
                ]
            )
        ),
        hide_index=True,
        placeholder="",
        column_config={
            "kv_block": NC("KV block [tokens]", format="%d"),
            "max_num_seqs": NC("default max_num_seqs", format="%d"),
            "mem_util": NC("default memory utilization", format="%.2f"),
            "util_of": TC("utilization of", help="total memory, or memory left after weights"),
            "overhead_gb": NC("runtime overhead [GB]", format="%.1f"),
            **SRC_COLS,
        },
    )

with tab_prec:
    st.dataframe(
        _numeric(
            pd.DataFrame(
                [
                    {
                        "id": p.id,
                        "name": p.name,
                        "weight_bits": p.weight_bits,
                        "compute": p.compute_dtype,
                        "kv_default": p.kv_default,
                        "kv_options": ", ".join(p.kv_options),
                        "native_archs": ", ".join(p.native_archs),
                        "fallback_archs": ", ".join(p.fallback_archs),
                        **_src(p),
                    }
                    for p in cat.precisions
                ]
            )
        ),
        hide_index=True,
        placeholder="",
        column_config={
            "weight_bits": NC("bits per weight", format="%.2f", help="including scales/zeros"),
            "compute": TC("compute dtype"),
            **SRC_COLS,
        },
    )

with tab_price:
    st.markdown("**Rental** [USD per GPU-hour]")
    st.dataframe(
        _numeric(
            pd.DataFrame(
                [
                    {
                        "gpu": p.gpu,
                        "provider": p.provider,
                        "offering": p.offering,
                        "kind": p.kind,
                        "usd_h": p.usd_per_gpu_hour,
                        "usd_h_range": (
                            f"{p.usd_per_gpu_hour_range[0]:.2f} - {p.usd_per_gpu_hour_range[1]:.2f}"
                            if p.usd_per_gpu_hour_range
                            else ""
                        ),
                        **_src(p),
                    }
                    for p in cat.rental_prices
                ]
            )
        ),
        hide_index=True,
        placeholder="",
        column_config={
            "usd_h": NC("price [USD/GPU-h]", format="$%.2f"),
            "usd_h_range": TC("range [USD/GPU-h]"),
            **SRC_COLS,
        },
    )
    st.markdown("**Purchase** [USD per GPU]")
    st.dataframe(
        _numeric(
            pd.DataFrame(
                [
                    {
                        "gpu": p.gpu,
                        "kind": p.kind,
                        "usd": p.usd,
                        "usd_range": (
                            f"{p.usd_range[0]:,.0f} - {p.usd_range[1]:,.0f}" if p.usd_range else ""
                        ),
                        **_src(p),
                    }
                    for p in cat.purchase_prices
                ]
            )
        ),
        hide_index=True,
        placeholder="",
        column_config={
            "usd": NC("price [USD]", format="$%,.0f"),
            "usd_range": TC("range [USD]"),
            **SRC_COLS,
        },
    )
    if n_custom_prices:
        st.caption(f"{n_custom_prices} custom rental price(s) from this session are included.")

with tab_add:
    st.markdown(
        "Entries are validated by the same record classes as `data/hardware.yaml` and "
        "`data/prices.yaml`; they last for this browser session."
    )
    flash = st.session_state.pop("catalog_flash", None)
    if flash:
        st.success(flash)
    left, right = st.columns(2)
    with left, st.form("add_gpu", clear_on_submit=False):
        st.markdown("**Custom GPU**")
        g_id = st.text_input("id", placeholder="my-h200-nvl", key="cg_id")
        g_name = st.text_input("name", placeholder="H200 NVL (vendor quote)", key="cg_name")
        c1, c2 = st.columns(2)
        g_vendor = c1.selectbox(
            "vendor", ["nvidia", "amd", "intel", "google", "apple"], key="cg_vendor"
        )
        g_arch = c2.text_input("architecture family", value="hopper", key="cg_arch")
        c1, c2 = st.columns(2)
        g_mem = c1.number_input("memory [GB]", value=None, step=1.0, key="cg_mem")
        g_bw = c2.number_input("memory bandwidth [GB/s]", value=None, step=100.0, key="cg_bw")
        c1, c2 = st.columns(2)
        g_bf16 = c1.number_input("bf16 dense [TFLOPS]", value=None, step=10.0, key="cg_bf16")
        g_fp8 = c2.number_input("fp8 dense [TFLOPS]", value=None, step=10.0, key="cg_fp8")
        c1, c2 = st.columns(2)
        g_tdp = c1.number_input("TDP [W]", value=None, step=50.0, key="cg_tdp")
        g_link = c2.number_input(
            "GPU link per direction [GB/s]", value=None, step=50.0, key="cg_link"
        )
        g_src = st.text_input("source (URL or document)", key="cg_src")
        g_date = st.date_input("as of", value=dt.date.today(), key="cg_date")
        if st.form_submit_button("Add GPU"):
            try:
                rec = Accelerator.model_validate(
                    {
                        "id": g_id.strip(),
                        "name": g_name.strip() or g_id.strip(),
                        "vendor": g_vendor,
                        "arch": g_arch.strip(),
                        "memory_gb": g_mem,
                        "mem_bw_gbs": g_bw,
                        "bf16_dense_tflops": g_bf16,
                        "fp8_dense_tflops": g_fp8,
                        "tdp_w": g_tdp,
                        "interconnect_gbs_unidir": g_link,
                        "source": g_src.strip(),
                        "as_of": g_date,
                        "notes": "custom entry (this session)",
                    }
                )
            except ValidationError as e:
                st.error(f"Not added: {w.validation_message(e)}")
            else:
                if not rec.id:
                    st.error("Not added: id: must not be empty")
                else:
                    err = w.add_custom("gpu", rec)
                    if err:
                        st.error(f"Not added: {err}")
                    else:
                        st.session_state["catalog_flash"] = (
                            f"Added GPU `{rec.id}`: it is in the GPUs table and at the end of "
                            "the GPU list on the Memory page."
                        )
                        st.rerun()
    with right, st.form("add_price"):
        st.markdown("**Custom rental price**")
        p_gpu = st.selectbox("GPU", [g.id for g in cat.accelerators], key="cp_gpu")
        c1, c2 = st.columns(2)
        p_provider = c1.text_input("provider", key="cp_provider")
        p_kind = c2.selectbox(
            "kind", ["on_demand", "reserved", "spot", "serverless", "community"], key="cp_kind"
        )
        p_usd = st.number_input("price [USD per GPU-hour]", value=None, step=0.1, key="cp_usd")
        p_src = st.text_input("source (URL or document)", key="cp_src")
        p_date = st.date_input("as of", value=dt.date.today(), key="cp_date")
        if st.form_submit_button("Add price"):
            try:
                if not p_provider.strip():
                    raise ValueError("provider: must not be empty")
                rec = RentalPrice.model_validate(
                    {
                        "gpu": p_gpu,
                        "provider": p_provider.strip(),
                        "kind": p_kind,
                        "usd_per_gpu_hour": p_usd,
                        "source": p_src.strip(),
                        "as_of": p_date,
                        "notes": "custom entry (this session)",
                    }
                )
            except ValidationError as e:
                st.error(f"Not added: {w.validation_message(e)}")
            except ValueError as e:
                st.error(f"Not added: {e}")
            else:
                err = w.add_custom("price", rec)
                if err:
                    st.error(f"Not added: {err}")
                else:
                    st.session_state["catalog_flash"] = (
                        f"Added {rec.provider} {rec.kind} price for `{rec.gpu}` (Prices tab)."
                    )
                    st.rerun()
    if (custom_gpu_ids or n_custom_prices) and st.button("Remove all custom entries"):
        st.session_state[w.CUSTOM_GPUS] = []
        st.session_state[w.CUSTOM_PRICES] = []
        st.rerun()
