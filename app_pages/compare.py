"""Compare GPUs page (procurement): the same workload on every GPU, the best deployment of
each side by side (planner.recommend.compare_gpus)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages import tables as T
from app_pages import widgets as w
from planner import PlannerError, fmt

COLS = {
    "gpu": "GPU",
    "framework": "framework",
    "precision": "precision",
    "kv_precision": "KV precision",
    "tp": "TP",
    "num_gpus": "GPUs needed",
    "usd_per_gpu_hour": "price [$/GPU-h]",
    "usd_per_month": "fleet [$/month]",
    "usd_per_mtok_output": "$/M output tokens",
    "output_tok_s_per_gpu": "output tok/s per GPU",
    "output_tokens_per_usd": "output tokens per $",
    "joules_per_token": "energy [J/output token]",
    "memory_headroom": "memory headroom [%]",
    "ttft_p99_s": "TTFT P99 [ms]",
    "tpot_p99_s": "TPOT P99 [ms]",
    "binding_constraint": "binding constraint",
    "provenance": "provenance",
    "price_provider": "price from",
    "price_as_of": "price date",
}

_USD, _D0 = fmt.usd, T.decimals(0)
_FORMATS = {
    "price [$/GPU-h]": _USD,
    "fleet [$/month]": _USD,
    "$/M output tokens": _USD,
    "output tok/s per GPU": fmt.count,
    "output tokens per $": fmt.count,
    "energy [J/output token]": T.decimals(3),
    "memory headroom [%]": _D0,
    "TTFT P99 [ms]": _D0,
    "TPOT P99 [ms]": T.decimals(1),
}
_HELP = {
    "$/M output tokens": "at the planned traffic, fixed fleet",
    "output tok/s per GPU": "at full load: the bisected maximum rate meeting the SLO",
    "output tokens per $": "at full load: the bisected maximum rate meeting the SLO",
}
SIDE_BY_SIDE = T.cols(COLS.values(), _FORMATS, _HELP)

COLUMN_PX = 520  # a half column's width in a 1500 px window: the charts' text at its size


def bar_svg(d: pd.DataFrame, field: str, title: str, value_text, lower_is_better: bool) -> str:
    """One bar per GPU of ``d`` (columns gpu_name, option, provenance, ``field`` and its
    ``_low``/``_high``), best first, the best red and the others blue, with the error band of
    the performance numbers (low to high) as a black bar where known (SVG,
    :func:`app_pages.svg.hbar_chart`). ``value_text``: a value [units of ``field``] as text."""
    from app_pages import svg

    d = d.sort_values(field, ascending=lower_is_better, kind="stable")
    best = d[field].min() if lower_is_better else d[field].max()
    bars = []
    for r in d.to_dict("records"):
        lo, hi = r.get(f"{field}_low"), r.get(f"{field}_high")
        known = lo is not None and hi is not None and pd.notna(lo) and pd.notna(hi)
        bars.append(
            svg.Bar(
                r["gpu_name"],
                float(r[field]),
                svg.RED if r[field] == best else svg.BLUE,
                f"GPU: {r['gpu_name']}\ndeployment: {r['option']}\n{title}: "
                f"{value_text(r[field])}\nprovenance: {r['provenance']}",
                float(lo) if known else None,
                float(hi) if known else None,
                f"band low: {value_text(lo)}\nband high: {value_text(hi)}" if known else None,
            )
        )
    return svg.hbar_chart(
        bars,
        x_axis=svg.Axis(title, prefix="$" if title.startswith("$") else ""),
        label=f"{title} of the best deployment on each GPU, best first, with the error band "
        "of the performance numbers",
        width=COLUMN_PX,
    )


st.title("Compare GPUs: the same workload on each")
w.html_css()  # the style of the tables and number cards
st.caption(
    "For every GPU the cheapest deployment (framework, precision, TP, replicas) that meets the "
    "scenario's latency targets; tokens/s per GPU from each option's bisected capacity. "
    "The scenario (model, traffic, lengths, SLO, prices, GPUs) is in the sidebar."
)
try:
    cat = w.session_catalog()
except PlannerError as e:
    st.error(w.md(f"Cannot load the catalogs: {e}"))
    st.stop()

form = w.scenario_sidebar(cat)
key = w.custom_key()
if not form.ok:
    st.error(w.md("Fix the scenario first: " + "; ".join(m for _, m in form.errors)))
    st.stop()
sc = w.build_scenario(key, form.scenario_json)
if sc.classes:
    st.error(
        "This scenario has request classes; Compare GPUs takes one workload. Plan compares a "
        "shared pool with a pool per class; or forget the loaded file in the sidebar."
    )
    st.stop()
n = len(sc.constraints.gpus) or len(cat.accelerators)
st.markdown(
    w.md(
        f"**{sc.model}** at a planning peak of {fmt.rate(sc.workload.traffic.peak())} "
        f"(+{sc.constraints.headroom:.0%} headroom); {sc.slo.describe()}; "
        f"{sc.constraints.price_basis.replace('_', '-')} prices."
    )
)

with st.status(f"Comparing {n} GPUs ...", expanded=False) as status:
    res = w.run_compare(key, form.scenario_json, form.objective)
    if "error" in res:
        status.update(label="Cannot compare", state="error")
    else:
        status.update(
            label=w.md(
                f"Compared {n} GPUs: {len(res['rows'])} meet the targets, "
                f"{len(res['unanswered'])} cannot (cached for these inputs)"
            ),
            state="complete",
        )
if "error" in res:
    st.error(w.md(res["error"]))
    st.stop()

rows = res["rows"]
if rows:
    df = pd.DataFrame([{v: r.get(k) for k, v in COLS.items()} for r in rows])
    df["memory headroom [%]"] = df["memory headroom [%]"] * 100
    df["TTFT P99 [ms]"] = df["TTFT P99 [ms]"] * 1e3
    df["TPOT P99 [ms]"] = df["TPOT P99 [ms]"] * 1e3
    best = rows[0]
    fastest = max(rows, key=lambda r: r["output_tok_s_per_gpu"])
    w.cards(
        [
            w.Card(
                "Cheapest per token",
                best["gpu"],
                f"{w.gpu_name(cat, best['gpu'])}: {best['framework']}, {best['precision']}, "
                f"TP {best['tp']}",
            ),
            w.Card("$/M output tokens", fmt.usd(best["usd_per_mtok_output"])),
            w.Card(
                "Most output tok/s per GPU",
                f"{fastest['output_tok_s_per_gpu']:,.0f}",
                f"{w.gpu_name(cat, fastest['gpu'])} ({fastest['gpu']})",
            ),
        ]
    )
    st.subheader("Side by side")
    w.table(df, SIDE_BY_SIDE)
    st.caption(
        w.md(
            "Click a column header to sort. Tokens per $ and tok/s per GPU at full load (the "
            "bisected maximum rate meeting the SLO); $/M output tokens and the fleet at the planned "
            f"traffic. {w.term_link('provenance', 'Provenance')}: fit = calibrated on this GPU/framework/precision, transferred = "
            "from a coarser group, prior = no calibration."
        )
    )
    st.caption("Same answer from the command line (the scenario: sidebar, Load / save):")
    w.command_line(w.cli_command(form, per_gpu=True))
    st.download_button(  # the file is made when clicked, not on every run (as Plan's)
        "Comparison (CSV)",
        lambda: (
            pd.DataFrame(rows).drop(columns=["assumptions"], errors="ignore").to_csv(index=False)
        ),
        file_name=f"compare-{sc.model}.csv",
        mime="text/csv",
        on_click="ignore",
    )
    chart = pd.DataFrame(
        {
            "gpu_name": [w.gpu_name(cat, r["gpu"]) for r in rows],
            "option": [f"{r['framework']} {r['precision']} TP{r['tp']}" for r in rows],
            "usd_per_mtok_output": [r["usd_per_mtok_output"] for r in rows],
            "usd_per_mtok_output_low": [r.get("usd_per_mtok_output_low") for r in rows],
            "usd_per_mtok_output_high": [r.get("usd_per_mtok_output_high") for r in rows],
            "output_tok_s_per_gpu": [r["output_tok_s_per_gpu"] for r in rows],
            "provenance": [r["provenance"] for r in rows],
        }
    )
    # tokens/s per GPU is a speed: its band is [x low_ratio, x high_ratio] (planner's Band)
    ratio = [(r.get("error_band") or {}) for r in rows]
    for end in ("low", "high"):
        chart[f"output_tok_s_per_gpu_{end}"] = [
            r["output_tok_s_per_gpu"] * b[f"{end}_ratio"] if b.get(f"{end}_ratio") else None
            for r, b in zip(rows, ratio, strict=True)
        ]
    left, right = st.columns(2)
    with left:
        st.markdown(
            "**Cost per million output tokens** (lower is better; black bars: the error band "
            "of the performance numbers)"
        )
        w.svg_chart(
            bar_svg(chart, "usd_per_mtok_output", "$ per million output tokens",
                    lambda v: f"${v:.4f}", lower_is_better=True)
        )  # fmt: skip
    with right:
        st.markdown(
            "**Output tokens/s per GPU** at the SLO (higher is better; black bars: the error band)"
        )
        w.svg_chart(
            bar_svg(chart, "output_tok_s_per_gpu", "output tokens/s per GPU",
                    lambda v: f"{v:,.0f}", lower_is_better=False)
        )  # fmt: skip
else:
    st.warning("No GPU meets this scenario; the reasons are below.")

if res["unanswered"]:
    st.subheader(w.md(f"GPUs that cannot serve this scenario ({len(res['unanswered'])})"))
    w.table(
        [
            {"GPU": u["gpu"], "name": w.gpu_name(cat, u["gpu"]), "stage": u["stage"], "reason": u["reason"]}
            for u in res["unanswered"]
        ],
        ["GPU", "name", "stage", T.Col(key="reason", wrap=True)],
    )  # fmt: skip
w.definitions_expander()
w.table_sort()
