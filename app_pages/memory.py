"""Memory page: does this model fit on this GPU, how many sequences, and how fast is a
decode step up to that limit."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages import widgets as w
from planner import PlannerError, default_kv_precision, param_counts


def curve_svg(df: pd.DataFrame, field: str, title: str, value_text, limit: int) -> str:
    """Decode step time or output tokens/s against the batch (log x axis, up to the memory
    limit ``limit`` drawn as a dashed red line), as SVG (:func:`app_pages.svg.line_chart`);
    each point's tooltip: the batch and ``value_text`` of its value."""
    from app_pages import svg

    batch, y = df["batch"].to_numpy(float), df[field].to_numpy(float)
    return svg.line_chart(
        batch,
        y,
        x_axis=svg.Axis("batch [concurrent sequences]", log=True, nice=False),
        y_axis=svg.Axis(title, zero=True),
        label=f"{title} against the batch [concurrent sequences, log scale] up to the memory limit",
        tooltips=[
            f"batch: {int(b):,}\n{title}: {value_text(v)}" for b, v in zip(batch, y, strict=True)
        ],
        vrule=(limit, f"memory limit: {limit:,} sequences"),
        points="hidden",
        width=520,
    )


st.title("Memory: does it fit, and how many sequences?")
w.html_css()  # the style of the number cards
st.caption(
    "One GPU of a tensor- (TP) x pipeline-parallel (PP) replica: weights, KV cache, workspace, "
    "and how many sequences of the chosen context fit. Formulas: docs/formulas.md; every "
    "catalog number has a source (Catalog page)."
)

try:
    cat = w.session_catalog()
except PlannerError as e:  # a broken catalog is a message, not a traceback
    st.error(w.md(f"Cannot load the catalogs: {e}"))
    st.stop()

s = w.setup_sidebar(cat)
key = w.custom_key()
gpu = cat.gpu(s.gpu)

# a GPU whose memory no source gives: say so instead of an empty page
if gpu.memory_gb is None:
    st.sidebar.error(w.md(f"{gpu.id}: memory size not in the catalog"))
    st.error(
        w.md(
            f"**{gpu.name}** (`{gpu.id}`): memory size not in the catalog, so the memory plan "
            "cannot be computed."
        )
    )
    st.markdown(
        w.md(
            f"- source: {gpu.source} (as of {gpu.as_of})\n"
            + "".join(f"- not read from a source: {u}\n" for u in gpu.unverified)
            + "- add this GPU with its memory size for this session on the **Catalog** page "
            "(it then appears at the end of the GPU list), or pick another GPU."
        )
    )
    w.definitions_expander()
    st.stop()

plan = w.memory_plan(key, s)
if "error" in plan:
    st.sidebar.error(w.md(plan["error"]))  # next to the widgets that caused it
    st.error(w.md(f"Cannot plan this deployment: {plan['error']}"))
    w.definitions_expander()
    st.stop()

model = cat.model(s.model)
pc = param_counts(model)
n_gpus = s.tp * s.pp

w.cards(  # HTML cards: a long value shrinks to its card instead of being cut (800 px)
    [
        w.Card(
            "Weights per GPU",
            f"{plan['weight_bytes_per_gpu'] / w.GB:.1f} GB",
            f"whole model: {plan['weight_bytes_total'] / w.GB:.1f} GB, "
            f"{pc.total / 1e9:.2f} B parameters ({pc.active / 1e9:.2f} B active per token)",
        ),
        w.Card(
            "KV cache per token",
            f"{plan['kv_cache_bytes_per_token'] / 1e3:,.1f} kB",
            "per GPU, all layers on it, before sliding-window caps",
        ),
        w.Card(
            "KV per sequence",
            f"{plan['kv_bytes_per_sequence'] / w.GB:.2f} GB",
            f"per GPU; {s.context:,} tokens in whole KV blocks, sliding windows applied",
        ),
        w.Card(
            "Max concurrent sequences",
            f"{plan['max_concurrent_sequences']:,}",
            f"{plan['max_kv_tokens']:,} tokens fit in the KV budget of "
            f"{max(plan['kv_budget_bytes_per_gpu'], 0) / w.GB:.1f} GB per GPU",
        ),
    ],
    per_row=4,
)
st.caption("Same numbers from the command line:")
w.command_line(w.memory_command(s, cat))

if plan["fits"]:
    st.success(w.md(f"**{n_gpus} x {gpu.name}**: {plan['reason']}"))
else:
    st.error(w.md(f"**{n_gpus} x {gpu.name}**: {plan['reason']}"))
    if plan["suggestions"]:
        st.markdown(
            w.md(
                "**What would fit** (same model and context): "
                + "; ".join(f"`{x}`" for x in plan["suggestions"])
            )
        )
    else:
        st.markdown("No change of TP, precision or KV precision makes it fit on this GPU.")
for a in plan["assumptions"]:
    st.info(w.md(f"Assumption: {a}"))

# --------------------------------------------------------------------------- memory bar
st.subheader(w.md(f"Memory of one {gpu.name} ({plan['gpu_memory_bytes'] / w.GB:.1f} GB)"))
kv_def = default_kv_precision(
    cat.precision(s.precision), s.framework and cat.framework(s.framework), cat.model(s.model)
)
kv_why = kv_def.basis if s.kv_precision == kv_def.id else f"chosen (the default is {kv_def.id})"
st.caption(w.md(f"Device memory: {plan['gpu_memory_basis']}. KV cache {s.kv_precision}: {kv_why}."))
w.svg_chart(w.memory_bar(plan, f"GPU 1 of {n_gpus}"))
split = w.memory_split(plan)
demand = split["GB"].sum()
if demand > plan["gpu_memory_bytes"] / w.GB * 1.0001:
    st.caption(
        w.md(
            f"Weights and workspace need {demand:.1f} GB; the card has "
            f"{plan['gpu_memory_bytes'] / w.GB:.1f} GB (dashed red line)."
        )
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
        st.warning(w.md(f"No time estimate: {res['error']}"))
    else:
        df = res["df"]
        at_limit = df.iloc[-1]
        left, right = st.columns(2)
        with left:
            w.svg_chart(curve_svg(df, "decode_step_ms", "decode step [ms]", lambda v: f"{v:.2f}", limit))  # fmt: skip
        with right:
            title = f"output per replica of {n_gpus} GPU{'s' if n_gpus > 1 else ''} [tokens/s]"
            w.svg_chart(curve_svg(df, "output_tok_s_replica", title, lambda v: f"{v:,.0f}", limit))  # fmt: skip
        w.cards(
            [
                w.Card(f"Decode step at batch {limit:,}", f"{at_limit['decode_step_ms']:.1f} ms"),
                w.Card(
                    "Output tokens/s per replica at the limit",
                    f"{at_limit['output_tok_s_replica']:,.0f}",
                ),
                w.Card(
                    "Output tokens/s per GPU at the limit", f"{at_limit['output_tok_s_gpu']:,.0f}"
                ),
            ]
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
            w.md(
                f"The curves stop at the memory limit: {limit:,} sequences of {s.context:,} tokens "
                f"each (dashed red line); a larger batch does not fit in the KV cache.{fw_note} "
                f"Efficiency parameters: {res['provenance']}."
            )
        )

w.definitions_expander()
