"""Memory page: does this model fit on this GPU, how many sequences, and how fast is a
decode step up to that limit."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from app_pages import widgets as w
from planner import PlannerError, default_kv_precision, param_counts


# Chart templates: built with altair once per process (its schema validation costs ~60 ms a
# chart), data attached per run as named datasets (w.with_data).
@st.cache_resource(show_spinner=False, max_entries=64)
def curve_spec(field: str, title: str, fmt: str) -> dict:
    curve, limit = alt.Data(name="curve"), alt.Data(name="limit")
    x = alt.X(
        "batch:Q", title="batch [concurrent sequences]", scale=alt.Scale(type="log", nice=False)
    )
    line = (
        alt.Chart(curve)
        .mark_line(point=False, strokeWidth=2.5)
        .encode(
            x=x,
            y=alt.Y(f"{field}:Q", title=title),
            tooltip=[
                alt.Tooltip("batch:Q", title="batch"),
                alt.Tooltip(f"{field}:Q", format=fmt, title=title),
            ],
        )
    )
    rule = (
        alt.Chart(limit)
        .mark_rule(color="#d62728", strokeDash=[5, 3], strokeWidth=2)
        .encode(x="batch:Q")
    )
    text = (
        alt.Chart(limit)
        .mark_text(align="right", dx=-6, dy=10, color="#d62728", baseline="top")
        .encode(x="batch:Q", y=alt.value(0), text="label:N")
    )
    return (line + rule + text).properties(height=300).to_dict()


st.title("Memory: does it fit, and how many sequences?")
st.caption(
    "One GPU of a tensor- (TP) x pipeline-parallel (PP) replica: weights, KV cache, workspace, "
    "and how many sequences of the chosen context fit. Formulas: docs/formulas.md; every "
    "catalog number has a source (Catalog page)."
)

try:
    cat = w.session_catalog()
except PlannerError as e:  # a broken catalog is a message, not a traceback
    st.error(f"Cannot load the catalogs: {e}")
    st.stop()

s = w.setup_sidebar(cat)
key = w.custom_key()
gpu = cat.gpu(s.gpu)

# a GPU whose memory no source gives: say so instead of an empty page
if gpu.memory_gb is None:
    st.sidebar.error(f"{gpu.id}: memory size not in the catalog")
    st.error(
        f"**{gpu.name}** (`{gpu.id}`): memory size not in the catalog, so the memory plan "
        "cannot be computed."
    )
    st.markdown(
        f"- source: {gpu.source} (as of {gpu.as_of})\n"
        + "".join(f"- not read from a source: {u}\n" for u in gpu.unverified)
        + "- add this GPU with its memory size for this session on the **Catalog** page "
        "(it then appears at the end of the GPU list), or pick another GPU."
    )
    w.definitions_expander()
    st.stop()

plan = w.memory_plan(key, s)
if "error" in plan:
    st.sidebar.error(plan["error"])  # next to the widgets that caused it
    st.error(f"Cannot plan this deployment: {plan['error']}")
    w.definitions_expander()
    st.stop()

model = cat.model(s.model)
pc = param_counts(model)
n_gpus = s.tp * s.pp

c1, c2, c3, c4 = st.columns(4)
c1.metric(
    "Weights per GPU",
    f"{plan['weight_bytes_per_gpu'] / w.GB:.1f} GB",
    help=f"whole model: {plan['weight_bytes_total'] / w.GB:.1f} GB, "
    f"{pc.total / 1e9:.2f} B parameters ({pc.active / 1e9:.2f} B active per token)",
    border=True,
)
c2.metric(
    "KV cache per token",
    f"{plan['kv_cache_bytes_per_token'] / 1e3:,.1f} kB",
    help="per GPU, all layers on it, before sliding-window caps",
    border=True,
)
c3.metric(
    "KV per sequence",
    f"{plan['kv_bytes_per_sequence'] / w.GB:.2f} GB",
    help=f"per GPU; {s.context:,} tokens in whole KV blocks, sliding windows applied",
    border=True,
)
c4.metric(
    "Max concurrent sequences",
    f"{plan['max_concurrent_sequences']:,}",
    help=f"{plan['max_kv_tokens']:,} tokens fit in the KV budget of "
    f"{max(plan['kv_budget_bytes_per_gpu'], 0) / w.GB:.1f} GB per GPU",
    border=True,
)

if plan["fits"]:
    st.success(f"**{n_gpus} x {gpu.name}**: {plan['reason']}")
else:
    st.error(f"**{n_gpus} x {gpu.name}**: {plan['reason']}")
    if plan["suggestions"]:
        st.markdown(
            "**What would fit** (same model and context): "
            + "; ".join(f"`{x}`" for x in plan["suggestions"])
        )
    else:
        st.markdown("No change of TP, precision or KV precision makes it fit on this GPU.")
for a in plan["assumptions"]:
    st.info(f"Assumption: {a}")

# --------------------------------------------------------------------------- memory bar
st.subheader(f"Memory of one {gpu.name} ({plan['gpu_memory_bytes'] / w.GB:.1f} GB)")
kv_def = default_kv_precision(
    cat.precision(s.precision), s.framework and cat.framework(s.framework), cat.model(s.model)
)
kv_why = kv_def.basis if s.kv_precision == kv_def.id else f"chosen (the default is {kv_def.id})"
st.caption(f"Device memory: {plan['gpu_memory_basis']}. KV cache {s.kv_precision}: {kv_why}.")
w.svg_chart(w.memory_bar(plan, f"GPU 1 of {n_gpus}"))
split = w.memory_split(plan)
demand = split["GB"].sum()
if demand > plan["gpu_memory_bytes"] / w.GB * 1.0001:
    st.caption(
        f"Weights and workspace need {demand:.1f} GB; the card has "
        f"{plan['gpu_memory_bytes'] / w.GB:.1f} GB (dashed red line)."
    )
else:
    st.caption("Dashed red line: the card's capacity. Hover a segment for its size.")

# --------------------------------------------------------------------------- decode curve
st.subheader("Decode step time and throughput vs batch")
if not plan["fits"]:
    st.info(
        "No curve: not even one sequence of this context fits in memory (see the reason above)."
    )
else:
    limit = int(plan["max_concurrent_sequences"])
    res = w.decode_curve(key, s, limit)
    if "error" in res:
        st.warning(f"No time estimate: {res['error']}")
    else:
        df = res["df"]
        at_limit = df.iloc[-1]
        lim_df = pd.DataFrame({"batch": [limit], "label": [f"memory limit: {limit:,} sequences"]})
        left, right = st.columns(2)
        with left:
            spec = curve_spec("decode_step_ms", "decode step [ms]", ".2f")
            st.vega_lite_chart(spec=w.with_data(spec, curve=df, limit=lim_df), width="stretch")
        with right:
            title = f"output per replica of {n_gpus} GPU{'s' if n_gpus > 1 else ''} [tokens/s]"
            spec = curve_spec("output_tok_s_replica", title, ",.0f")
            st.vega_lite_chart(spec=w.with_data(spec, curve=df, limit=lim_df), width="stretch")
        m1, m2, m3 = st.columns(3)
        m1.metric(
            f"Decode step at batch {limit:,}", f"{at_limit['decode_step_ms']:.1f} ms", border=True
        )
        m2.metric(
            "Output tokens/s per replica at the limit",
            f"{at_limit['output_tok_s_replica']:,.0f}",
            border=True,
        )
        m3.metric(
            "Output tokens/s per GPU at the limit",
            f"{at_limit['output_tok_s_gpu']:,.0f}",
            border=True,
        )
        fw_note = ""
        if s.framework is not None:
            fw = cat.framework(s.framework)
            seqs0, _ = fw.scheduler_defaults(gpu)  # vLLM: 1024 on >= 70 GiB GPUs, else 256
            if seqs0 < limit:
                fw_note = (
                    f" {fw.id}'s default max_num_seqs on this GPU is {seqs0:,}, lower than "
                    "the memory limit: raise it to reach the right end of the curve."
                )
        st.caption(
            f"The curves stop at the memory limit: {limit:,} sequences of {s.context:,} tokens "
            f"each (dashed red line); a larger batch does not fit in the KV cache.{fw_note} "
            f"Efficiency parameters: {res['provenance']}."
        )

w.definitions_expander()
