"""Streamlit app: the memory calculator and a decode-time vs batch curve.

Run with ``streamlit run app.py``. All physics is in ``planner``; this file only
turns widgets into function arguments and results into charts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from planner.catalog import load_catalog, resolve_efficiency
from planner.engine import decode_step, param_counts, plan_memory, step_model
from planner.errors import PlannerError

GB = 1e9
NO_FRAMEWORK = "(none: 0.9 utilization, 16-token blocks)"

st.set_page_config(page_title="planner: LLM inference memory", layout="wide")


@st.cache_resource
def catalog():
    return load_catalog()


def _index(options: list[str], wanted: str | None, default: int = 0) -> int:
    return options.index(wanted) if wanted in options else default


try:
    cat = catalog()
except PlannerError as e:  # a broken catalog is a message, not a traceback
    st.error(f"Cannot load the catalogs: {e}")
    st.stop()

st.title("LLM inference planner")
st.caption(
    "Memory of one GPU in a tensor- (TP) x pipeline-parallel (PP) replica: weights, KV cache, "
    "and how many sequences fit. Every number comes from a formula in docs/formulas.md and a "
    "catalog entry with a source."
)

# --------------------------------------------------------------------------- inputs
with st.sidebar:
    st.header("Setup")
    model_ids = [m.id for m in cat.models]
    gpu_ids = [g.id for g in cat.accelerators]
    prec_ids = [p.id for p in cat.precisions]
    fw_ids = [f.id for f in cat.frameworks]
    model_id = st.selectbox("Model", model_ids, index=_index(model_ids, "llama-3.1-70b"))
    gpu_id = st.selectbox("GPU", gpu_ids, index=_index(gpu_ids, "nvidia-h100-sxm"))
    prec_id = st.selectbox("Precision (weights)", prec_ids, index=_index(prec_ids, "fp8"))
    prec = cat.precision(prec_id)
    kv_opts = list(dict.fromkeys([prec.kv_default, *prec.kv_options]))
    kv_id = st.selectbox("KV-cache precision", kv_opts, index=0)
    fw_choice = st.selectbox(
        "Framework", [NO_FRAMEWORK, *fw_ids], index=_index(fw_ids, "vllm", -1) + 1
    )
    fw = None if fw_choice == NO_FRAMEWORK else cat.framework(fw_choice)
    tp = st.select_slider("TP (GPUs per stage)", options=[1, 2, 4, 8, 16, 32], value=2)
    pp = st.select_slider("PP (pipeline stages)", options=[1, 2, 4, 8], value=1)
    model = cat.model(model_id)
    max_ctx = model.max_position_embeddings or 131072
    context = int(
        st.number_input(
            "Context per sequence (prompt + output) [tokens]",
            min_value=1,
            max_value=max(max_ctx, 1) * 4,
            value=min(8192, max_ctx),
            step=1024,
        )
    )
    util_default = fw.default_memory_utilization if fw else 0.9
    util = st.slider("GPU memory utilization", 0.30, 1.00, float(util_default), 0.01)

# --------------------------------------------------------------------------- memory plan
try:
    plan = plan_memory(
        model, gpu_id, prec, kv_precision=kv_id, tp=tp, pp=pp, context_len=context,
        memory_utilization=util, framework=fw, catalog=cat,
    )  # fmt: skip
except PlannerError as e:
    st.error(str(e))
    st.stop()

pc = param_counts(model)
c1, c2, c3, c4 = st.columns(4)
c1.metric("Weights per GPU", f"{plan.weight_bytes_per_gpu / GB:.1f} GB",
          help=f"whole model: {plan.weight_bytes_total / GB:.1f} GB, {pc.total / 1e9:.2f} B parameters")  # fmt: skip
c2.metric("KV cache per token", f"{plan.kv_cache_bytes_per_token / 1e3:,.1f} kB",
          help="per GPU, all layers on it, before sliding-window caps")  # fmt: skip
c3.metric("KV per sequence", f"{plan.kv_bytes_per_sequence / GB:.2f} GB",
          help=f"{context:,} tokens, rounded up to whole KV blocks, sliding windows applied")  # fmt: skip
c4.metric("Max concurrent sequences", f"{plan.max_concurrent_sequences:,}",
          help=f"{plan.max_kv_tokens:,} tokens fit in the KV budget")  # fmt: skip

if plan.fits:
    st.success(plan.reason)
else:
    st.error(plan.reason)
    if plan.suggestions:
        st.markdown("**What would fit:** " + "; ".join(plan.suggestions))
for a in plan.assumptions:
    st.info(a)

cap = plan.gpu_memory_bytes
kv_budget = max(plan.kv_budget_bytes_per_gpu, 0.0)
split = {
    "weights": plan.weight_bytes_per_gpu,
    "activations": plan.activation_bytes_per_gpu,
    "runtime overhead": plan.runtime_overhead_bytes_per_gpu,
    "KV cache": kv_budget,
    # vLLM-style fractions cap all memory; TRT-LLM / LMDeploy fractions apply to the memory
    # left after weights and activations (computed by planner.engine.memory)
    "reserved (1 - utilization)": plan.reserved_bytes_per_gpu,
}
split_df = pd.DataFrame({k: [v / GB] for k, v in split.items()}, index=[f"one {gpu_id}"])
st.subheader("Memory split of one GPU [GB]")
st.bar_chart(split_df, horizontal=True, stack=True, y_label="", x_label="GB")
used = sum(split.values())
if used > cap * 1.0001:
    st.caption(f"Demand {used / GB:.1f} GB exceeds the {cap / GB:.0f} GB on the card.")

# --------------------------------------------------------------------------- decode time
st.subheader("Decode step time vs batch")
try:
    params, provenance = resolve_efficiency(gpu_id, fw.id if fw else None, prec.id, None, cat)
    sm = step_model(model, gpu_id, prec, kv_id, tp, pp, params, cat)
    top = int(max(8, min(1024, 2 * max(plan.max_concurrent_sequences, 1))))
    batch = np.unique(np.geomspace(1, top, 64).round().astype(int))
    br = decode_step(sm, batch, context)
    t_ms = np.asarray(br.time_s) * 1e3
    curve = pd.DataFrame(
        {"decode step [ms]": t_ms, "output tokens/s per replica": batch / (t_ms / 1e3)},
        index=pd.Index(batch, name="batch (sequences)"),
    )
    left, right = st.columns(2)
    left.line_chart(curve[["decode step [ms]"]])
    right.line_chart(curve[["output tokens/s per replica"]])
    st.caption(
        f"Each sequence holds {context:,} tokens. Memory allows at most "
        f"{plan.max_concurrent_sequences:,} such sequences; points beyond that do not fit. "
        f"Efficiency parameters: {provenance}."
    )
except PlannerError as e:
    st.warning(f"No time estimate: {e}")

with st.expander("Metric definitions"):
    st.markdown(
        "- **TTFT** (time to first token) includes queueing.\n"
        "- **TPOT** (time per output token) excludes the first token: (E2E - TTFT) / (output - 1).\n"
        "- **Throughput** is stated per GPU and per replica, output-only and total (input + output).\n"
        "- **Goodput** counts only requests that met every SLO.\n"
        "- Memory in decimal GB (1 GB = 1e9 bytes); FLOPS are dense (no sparsity)."
    )
