"""Plan page: scenario in, ranked deployments out (planner.recommend.recommend).

The scenario form lives in the sidebar (app_pages/scenario_form.py, shared with What-if and Compare
GPUs); this page shows the chosen lengths, the ranked recommendations, the Pareto chart of
$/M output tokens vs P99 end-to-end latency, why the winner wins, and every rejected option.
"""

from __future__ import annotations

import datetime as dt
import platform

import pandas as pd
import streamlit as st

from app_pages import pools
from app_pages import tables as T
from app_pages import widgets as w
from planner import PlannerError, fmt
from planner.cli.ceiling import ceiling_warning

# recommendation field -> column title (units in the titles)
TABLE = {
    "rank": "rank",
    "gpu": "GPU",
    "framework": "framework",
    "precision": "precision",
    "kv_precision": "KV precision",
    "tp": "TP",
    "pp": "PP",
    "layout": "layout",
    "replicas": "replicas",
    "num_gpus": "GPUs",
    "num_gpus_low": "GPUs, band low",
    "num_gpus_high": "GPUs, band high",
    "usd_per_hour": "fleet [$/h]",
    "usd_per_month": "fleet [$/month]",
    "usd_per_month_autoscaled": "autoscaled [$/month]",
    "usd_per_mtok_output": "$/M output tokens",
    "usd_per_mtok_output_low": "$/M output, band low",
    "usd_per_mtok_output_high": "$/M output, band high",
    "robustness": "robustness",
    "usd_per_mtok_total": "$/M tokens (in + out)",
    "max_rate_per_replica": "tested rate [req/s per replica]",
    "ttft_p99_s": "TTFT P99 [ms]",
    "tpot_p99_s": "TPOT P99 [ms]",
    "e2e_p99_s": "E2E P99 [s]",
    "joules_per_token": "energy [J/output token]",
    "memory_headroom": "memory headroom [%]",
    "binding_constraint": "binding constraint",
    "provenance": "provenance",
    "price_provider": "price from",
    "price_as_of": "price date",
}


_USD, _D0, _D1 = fmt.usd, T.decimals(0), T.decimals(1)
# how the ranked options' columns are shown (formats as the data grid's were, via planner.fmt)
_FORMATS = {
    "fleet [$/h]": _USD,
    "fleet [$/month]": _USD,
    "autoscaled [$/month]": _USD,
    "$/M output tokens": _USD,
    "$/M output, band low": _USD,
    "$/M output, band high": _USD,
    "$/M tokens (in + out)": _USD,
    "tested rate [req/s per replica]": T.decimals(2),
    "TTFT P99 [ms]": _D0,
    "TPOT P99 [ms]": _D1,
    "E2E P99 [s]": _D1,
    "energy [J/output token]": T.decimals(3),
    "memory headroom [%]": _D0,
}
_HELP = {
    "$/M output tokens": "at the planned traffic (mean rate), fixed fleet",
    "autoscaled [$/month]": "the fleet autoscaled to the daily traffic profile",
    "tested rate [req/s per replica]": "a rate per replica that was simulated and met the SLO",
}
# one line per option (the long texts, binding constraint and provenance, scroll sideways)
RANKED_COLUMNS = T.cols(TABLE.values(), _FORMATS, _HELP)

# the request-class tables (raw values; seconds shown as ms or s by fmt.seconds)
CLASS_COLUMNS = [
    "class",
    T.Col(key="peak [req/s]", fmt=fmt.num),
    T.Col(key="SLO", wrap=True),
    "deployment",
    "GPUs",
    T.Col(key="fleet [$/h]", fmt=_USD),
    T.Col(key="$/M output tokens", fmt=_USD, help=_HELP["$/M output tokens"]),
    T.Col(key="TTFT P99", fmt=fmt.seconds),
    T.Col(key="TPOT P99", fmt=fmt.seconds),
    T.Col(key="E2E P99", fmt=fmt.seconds),
    T.Col(key="binding constraint", wrap=True),
]
SHARED_COLUMNS = [
    "class",
    T.Col(key="SLO", wrap=True),
    "meets it",
    T.Col(key="attainment [%]", fmt=lambda v: fmt.num(v, 3)),
    T.Col(key="TTFT P99", fmt=fmt.seconds),
    T.Col(key="TPOT P99", fmt=fmt.seconds),
    T.Col(key="E2E P99", fmt=fmt.seconds),
]
REJECTED = {"gpu": "GPU", "kv_precision": "KV precision", "tp": "TP", "pp": "PP"}


option_label = w.option_label


def table(recs: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame([{TABLE[k]: r.get(k) for k in TABLE} for r in recs])
    for c in ("TTFT P99 [ms]", "TPOT P99 [ms]"):
        df[c] = df[c] * 1e3
    df["memory headroom [%]"] = df["memory headroom [%]"] * 100
    return df


def markdown_report(res: dict, form: w.ScenarioForm, cat) -> str:
    import planner

    s, win = res["summary"], res["recommendations"][0]
    sc = w.build_scenario((), form.scenario_json)
    wl = sc.workload
    df = table(res["recommendations"])
    cols = [
        "rank",
        "GPU",
        "framework",
        "precision",
        "TP",
        "GPUs",
        "fleet [$/month]",
        "$/M output tokens",
        "TTFT P99 [ms]",
        "TPOT P99 [ms]",
        "E2E P99 [s]",
        "provenance",
    ]
    lines = [
        f"# Capacity plan: {s['model']}",
        "",
        "## Environment",
        "",
        f"* planner {getattr(planner, '__version__', '?')}, Python {platform.python_version()}, "
        f"streamlit {st.__version__}",
        f"* generated {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC from the planner app",
        f"* search: {s['options_enumerated']:,} options, {s['options_simulated']} simulated, "
        f"{s['options_pruned']:,} pruned by bound, {s['elapsed_s']:.1f} s",
        "",
        "## Workload",
        "",
        f"* traffic: peak {fmt.rate(s['peak_rps'])}, mean {fmt.rate(wl.traffic.base_mean_rps())}, "
        f"headroom {s['headroom']:g}",
        f"* lengths: prompt mean {wl.mean_input_tokens():,.0f} tokens "
        f"(p99 {wl.input_quantile_tokens(0.99):,.0f}), answer mean "
        f"{wl.mean_output_tokens():,.0f} (p99 {wl.output_quantile_tokens(0.99):,.0f})"
        + (f", preset {wl.preset}" if wl.preset else ""),
        f"* SLO: {s['slo']}",
        f"* objective: {s['objective_text']}; price basis {sc.constraints.price_basis}",
        "",
        "## Metrics",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for _, r in df[cols].iterrows():
        cells = []
        for c in cols:
            v = r[c]
            if isinstance(v, float):
                cells.append(fmt.usd(v) if "$" in c else fmt.num(v))
            else:
                cells.append(fmt.MISSING if v is None else str(v).replace("|", "/"))
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Conclusion",
        "",
        res["why"],
        "",
        f"* binding constraint: {win['binding_constraint']}",
        f"* price: ${win['usd_per_gpu_hour']:.2f}/GPU-h, {win['price_provider']} "
        f"({win['price_as_of']}), {win['price_rule']}; source {win['price_source']}",
        f"* quality: {win['quality']}",
        f"* performance numbers: {win['provenance']}; {win['numbers']}",
        "",
        "## Assumptions",
        "",
        *[f"* {a}" for a in res["assumptions"]],
        "",
        "## Scenario (planner recommend scenario.yaml)",
        "",
        "```yaml",
        w.scenario_yaml(form).rstrip(),
        "```",
        "",
    ]
    return "\n".join(lines)


def length_charts(lengths: pd.DataFrame) -> str:
    """The prompt and answer histograms side by side (SVG, :func:`app_pages.svg.histogram_chart`)
    from ``widgets.length_histogram``'s bins."""
    from app_pages import svg

    charts = []
    for which, colour in (("prompt", svg.BLUE), ("answer", svg.ORANGE)):
        d = lengths[lengths["which"] == which]
        charts.append(
            svg.histogram_chart(
                d["bin_start"].tolist(),
                d["bin_end"].tolist(),
                d["count"].tolist(),
                x_axis=svg.Axis(f"{which} [tokens]"),
                y_axis=svg.Axis("requests [of 2,000 drawn]"),
                title=f"{which} length",
                label=f"Histogram of the {which} lengths [tokens] of 2,000 requests drawn "
                "from the workload",
                colour=colour,
                width=310,
                plot_height=150,
                tooltip=lambda a, b, c: f"tokens from {a:,.0f} to {b:,.0f}: {c:,.0f} requests",
            )
        )
    return (
        '<div style="display:flex;gap:0.5rem">'
        + "".join(f'<div style="flex:1;min-width:0">{c}</div>' for c in charts)
        + "</div>"
    )


WINNER_LEGEND = "recommended (#1)"


def pareto_chart(rows: list[dict], win: dict) -> str:
    """Cost vs P99 end-to-end latency of the ranked options (SVG,
    :func:`app_pages.svg.scatter_chart`): the winner a red diamond, the Pareto front green and
    joined by a dashed step line, the others grey; each option's cost error band (band low to
    high) as a vertical bar; the ranks of the front's options above their points, options at
    the same point sharing one label ("#3, #4"; dominated ones: tooltip only, so the front's
    labels stay readable). ``rows``: label, rank, usd_per_mtok_output (+ ``_low``/``_high``),
    e2e_p99_s, num_gpus, pareto, role."""
    from app_pages import svg

    look = {  # role -> colour, shape, radius [px]
        "winner": (svg.RED, "diamond", 8.0),
        "Pareto front": (svg.GREEN, "circle", 5.5),
        "other": (svg.GREY, "circle", 4.5),
    }
    front_ranks = {r["rank"] for r in rows if r["pareto"]}
    at: dict[tuple[float, float], list[int]] = {}
    for r in rows:
        at.setdefault((round(r["e2e_p99_s"], 6), round(r["usd_per_mtok_output"], 6)), []).append(
            r["rank"]
        )
    first = {min(ks): ks for ks in at.values() if any(k == 1 or k in front_ranks for k in ks)}
    pts, bars = [], []
    for r in sorted(rows, key=lambda r: {"other": 0, "Pareto front": 1, "winner": 2}[r["role"]]):
        colour, shape, rad = look[r["role"]]
        ks = sorted(first.get(r["rank"], []))
        tip = (
            f"option: #{r['rank']} {r['label']}\n$/M output tokens: ${r['usd_per_mtok_output']:.4f}"
            f"\nE2E P99 [s]: {r['e2e_p99_s']:.2f}\nGPUs: {r['num_gpus']:,}"
        )
        lo, hi = r.get("usd_per_mtok_output_low"), r.get("usd_per_mtok_output_high")
        if lo is not None and hi is not None:
            tip += f"\n$/M output, band: ${lo:.4f} to ${hi:.4f}"
            bars.append(
                (r["e2e_p99_s"], lo, hi, f"#{r['rank']}: $/M output tokens ${lo:.4f} to ${hi:.4f}")
            )
        pts.append(
            svg.Point(
                r["e2e_p99_s"], r["usd_per_mtok_output"], colour, shape, rad, tip,
                ", ".join(f"#{k}" for k in ks), svg.RED if r["rank"] == 1 else None,
            )
        )  # fmt: skip
    front = sorted((r for r in rows if r["pareto"]), key=lambda r: r["e2e_p99_s"])
    return svg.scatter_chart(
        pts,
        x_axis=svg.Axis("P99 end-to-end latency [s]"),
        y_axis=svg.Axis("cost [$ per million output tokens]", prefix="$", zero=True),
        label="Cost [$ per million output tokens] against P99 end-to-end latency [s] of the "
        f"ranked options: the recommendation #1 {option_label(win)}, the Pareto front and the "
        "others, with each option's cost error band",
        width=1040,
        plot_height=300,
        step_line=(
            [r["e2e_p99_s"] for r in front],
            [r["usd_per_mtok_output"] for r in front],
            svg.GREEN,
        ),
        error_bars=bars,
        legend=[
            (WINNER_LEGEND, svg.RED, "diamond"),
            ("Pareto front", svg.GREEN, "circle"),
            ("other", svg.GREY, "circle"),
        ],
    )


dominated_note = w.dominated_note


# =========================================================================== page
st.title("Plan: which GPUs, how many, at what cost")
w.html_css()  # the style of the tables and number cards
st.caption(
    "Describe the service in the sidebar; planner ranks every GPU x framework x precision x "
    "TP that meets the latency targets (simulated, branch and bound; docs/recommend.md)."
)
try:
    cat = w.session_catalog()
except PlannerError as e:
    st.error(w.md(f"Cannot load the catalogs: {e}"))
    st.stop()

form = w.scenario_sidebar(cat)
key = w.custom_key()
if not form.ok:
    st.error(
        w.md(
            "Fix the scenario first (the message is next to the widget in the sidebar): "
            + "; ".join(m for _, m in form.errors)
        )
    )
    st.stop()
sc = w.build_scenario(key, form.scenario_json)


def growth_section(sc, win: dict, cat) -> None:
    """Cards and $ month by month as traffic grows: ``planner grow`` itself
    (:func:`planner.recommend.grow.plan_growth`: the option ``recommend`` picks at month 1,
    its exact capacity per replica, then each month re-sized), so the numbers are the CLI's."""
    from planner.recommend.grow import chart_rows, default_lead_time, plan_growth
    from planner.workload.growth import grown_traffic

    g1, g2, g3 = st.columns(3)
    growth = g1.number_input("growth per month [%]", 0.0, 100.0, 10.0, 1.0, key="grow_pct")
    months = int(g2.number_input("months", 1, 60, 12, 1, key="grow_months"))
    basis = sc.constraints.price_basis
    lead = int(g3.number_input("lead time [months]", 0, 24, default_lead_time(basis), 1,
                               key="grow_lead"))  # fmt: skip
    wl = sc.require_workload()
    plan = plan_growth(
        sc.model,
        wl,
        sc.slo,
        grown_traffic(wl.traffic, growth / 100.0, months),
        catalog=cat,
        constraints=sc.constraints,
        lead_time_months=lead,
        engine=sc.serving.kwargs(),
    )
    df = pd.DataFrame(chart_rows(plan)).set_index("month")
    st.line_chart(df[["num_gpus", "gpus_held"]], x_label="month", y_label="GPUs")
    st.dataframe(df.drop(columns=["date"], errors="ignore"), width="stretch")
    st.caption(
        w.md(
            f"{option_label(win)} picked at month 1 and kept all year. Same numbers: "
            f"`planner grow SCENARIO.yaml --growth-per-month {growth / 100:g} --months "
            f"{months} --lead-time-months {lead}`"
        )
    )


def classes_view() -> None:
    """A request-class scenario: a pool per class against one shared pool (as the CLI)."""
    n = len(sc.classes)
    with st.status(f"Sizing {n} request classes, then one shared pool ...") as status:
        out = w.run_classes(key, form.scenario_json, form.objective, form.top_n)
        status.update(
            label=w.md(
                "Cannot plan these classes"
                if "error" in out
                else f"Sized {n} request classes, each in its own pool and all in one shared pool"
            ),
            state="error" if "error" in out else "complete",
        )
    if "error" in out:
        st.error(w.md(out["error"]))
        return
    st.subheader(w.md(out["verdict"]))
    tot = out.get("per_class_total") or {}
    sh = out["shared"]
    best = sh["recommendations"][0] if sh else None
    w.cards(
        [
            w.Card("A pool per class: GPUs", fmt.count(tot.get("num_gpus"))),
            w.Card("A pool per class: fleet [$/h]", fmt.usd(tot.get("usd_per_hour"))),
            w.Card("Shared pool: GPUs", fmt.count(best["num_gpus"]) if best else "none"),
            w.Card("Shared pool: fleet [$/h]", fmt.usd(best["usd_per_hour"]) if best else "-"),
        ]
    )
    st.markdown("#### A pool per class")
    rows = []
    for k in sc.classes:
        r = out["per_class"].get(k.name)
        row = {"class": k.name, "peak [req/s]": k.workload.traffic.peak(), "SLO": k.slo.describe()}  # fmt: skip
        if r:
            row.update(
                {
                    "deployment": option_label(r),
                    "GPUs": r["num_gpus"],
                    "fleet [$/h]": r["usd_per_hour"],
                    "$/M output tokens": r["usd_per_mtok_output"],
                    "TTFT P99": r["ttft_p99_s"],
                    "TPOT P99": r["tpot_p99_s"],
                    "E2E P99": r["e2e_p99_s"],
                    "binding constraint": r["binding_constraint"],
                }
            )
        else:
            row["deployment"] = "none: " + str((out.get("per_class_not") or {}).get(k.name, ""))
        rows.append(row)
    w.table(rows, CLASS_COLUMNS, download=("Pool per class (CSV)", f"plan-classes-{sc.model}.csv"))
    st.markdown("#### One shared pool")
    if best:
        st.markdown(
            w.md(
                f"**{fmt.count(best['num_gpus'])} x {w.gpu_name(cat, best['gpu'])}** "
                f"({option_label(best)}, {best['replicas']} replicas) at "
                f"{fmt.usd(best['usd_per_hour'])}/h; {best['provenance']}"
            )
        )
        rows = []
        for k in sc.classes:
            p = (best.get("per_class") or {}).get(k.name, {})
            rows.append(
                {
                    "class": k.name,
                    "SLO": k.slo.describe(),
                    "meets it": "yes" if p.get("ok") else "no",
                    "attainment [%]": 100 * p["attainment"] if p.get("attainment") is not None else None,
                    "TTFT P99": p.get("ttft_p99_s"),
                    "TPOT P99": p.get("tpot_p99_s"),
                    "E2E P99": p.get("e2e_p99_s"),
                }
            )  # fmt: skip
        w.table(rows, SHARED_COLUMNS, download=("Shared pool by class (CSV)", f"plan-shared-{sc.model}.csv"))  # fmt: skip
        st.caption("each class's latency and attainment on its own requests in the merged stream, at the rate the shared fleet is sized for")  # fmt: skip
        if sh.get("why"):
            st.markdown(w.md(f"**Why this shared pool.** {sh['why']}"))
    else:
        st.warning(w.md(f"No shared deployment serves every class: {out.get('shared_not')}"))
    st.markdown(w.md("**Notes.** " + "; ".join(out["notes"])))
    st.markdown("Same answer from the command line:")
    w.command_line(w.cli_command(form))


if sc.classes:
    classes_view()
    w.definitions_expander()
    w.table_sort()
    st.stop()
wl = sc.workload

# ---------------------------------------------------------------- workload summary + lengths
left, right = st.columns([2, 3])
with left:
    st.subheader("Workload")
    peak = wl.traffic.peak()
    st.markdown(
        w.md(
            f"- **{sc.model}**, {w.term_link('planning peak')} **{fmt.rate(peak)}** x (1 + "
            f"{sc.constraints.headroom:g} {w.term_link('headroom')}) = "
            f"{fmt.rate(peak * (1 + sc.constraints.headroom))}; {w.term_link('mean rate', 'mean')} "
            f"{fmt.rate(wl.traffic.base_mean_rps())}\n"
            f"- prompt: mean **{wl.mean_input_tokens():,.0f}** tokens, p99 "
            f"{wl.input_quantile_tokens(0.99):,.0f}\n"
            f"- answer: mean **{wl.mean_output_tokens():,.0f}** tokens, p99 "
            f"{wl.output_quantile_tokens(0.99):,.0f}\n"
            f"- SLO: {sc.slo.describe()}"
        )
    )
    if wl.source:
        st.caption(w.md(f"Preset source: {wl.source}"))
with right:
    w.svg_chart(length_charts(w.length_histogram(key, form.scenario_json)))

# ---------------------------------------------------------------- recommendation
n_gpus = len(sc.constraints.gpus) or len(cat.accelerators)
first_compile = st.empty()
if not w.kernel_cached():  # a fresh install that skipped scripts/warm_up.py: say why it waits
    first_compile.info(w.md(w.COMPILE_NOTE))
with st.status(f"Searching deployments on {n_gpus} GPU types ...", expanded=False) as status:
    res = w.run_recommend(key, form.scenario_json, form.objective, form.top_n)
    if "error" in res:
        status.update(label="No deployment meets this scenario", state="error")
    else:
        s = res["summary"]
        status.update(
            label=(
                w.md(
                    f"Searched {s['options_enumerated']:,} options on {n_gpus} GPU types: "
                    f"{s['options_simulated']} simulated, {s['options_pruned']:,} pruned by bound "
                    + (
                        f"(searched ahead of this page in {s['elapsed_s']:.1f} s and kept)"
                        if s.get("precomputed")
                        else f"({s['elapsed_s']:.1f} s; cached for these inputs)"
                    )
                )
            ),
            state="complete",
        )
first_compile.empty()
if "error" in res:
    st.error(w.md(res["error"]))
    st.info(
        "Loosen a target (TTFT / TPOT / E2E), allow more GPUs (sidebar: Search and "
        "constraints) or a lower precision."
    )
    st.stop()

recs = res["recommendations"]
win = recs[0]
st.subheader(
    w.md(
        f"Recommended: {fmt.count(win['num_gpus'])} x {w.gpu_name(cat, win['gpu'])} "
        f"({win['framework']}, {win['precision']}, TP {win['tp']})"
    )
)
w.cards(
    [
        w.Card("GPUs", fmt.count(win["num_gpus"]), f"{win['replicas']} replicas x {win['tp']} TP"),
        w.Card(
            "Fleet [$/month]",
            fmt.usd(win["usd_per_month"]),
            f"{fmt.usd(win['usd_per_hour'])}/h; autoscaled to the daily profile "
            f"{fmt.usd(win['usd_per_month_autoscaled'])}/month",
        ),
        w.Card(
            "$/M output tokens",
            fmt.usd(win["usd_per_mtok_output"]),
            "at the planned traffic, fixed fleet; in + out tokens: "
            f"{fmt.usd(win['usd_per_mtok_total'])}/M",
        ),
        w.Card(
            "TTFT P99", f"{win['ttft_p99_s'] * 1e3:,.0f} ms", "at the rate the fleet is sized for"
        ),
        w.Card(
            "TPOT P99", f"{win['tpot_p99_s'] * 1e3:,.1f} ms", "at the rate the fleet is sized for"
        ),
    ]
)

# the CLI's "beyond measurements" line for the winner (planner.cli.ceiling; JSON ceiling_*)
ceil = ceiling_warning(win)
if ceil:
    (st.warning if ceil[0] == "beyond" else st.caption)(w.md(ceil[1]))

band = win.get("error_band") or {}
if win.get("num_gpus_low") is not None:
    lo, hi = win["num_gpus_low"], win["num_gpus_high"]
    usd_lo, usd_hi = win["usd_per_mtok_output_low"], win["usd_per_mtok_output_high"]
    # the same fleet at both ends of the band (e.g. one replica carries the load): say so,
    # not "1 to 1 GPUs"
    needs = (
        f"**{fmt.count(lo)} to {fmt.count(hi)} GPUs** and costs {fmt.usd(usd_lo)} to "
        f"{fmt.usd(usd_hi)}"
        if lo != hi
        else f"**{fmt.count(lo)} GPU{'' if lo == 1 else 's'}** at both ends of the band and "
        f"costs {fmt.usd(usd_lo)}"
    )
    st.caption(
        w.md(
            f"Uncertainty: with the {band.get('tier', '')} error band of the performance numbers "
            f"(capacity x {band.get('low_ratio', float('nan')):.2f} to "
            f"{band.get('high_ratio', float('nan')):.2f}, ~80 % of held-out measurements), the "
            f"fleet needs {needs}"
            " per million output tokens"
            + (
                f"; the choice is {win['robustness']} ({w.term_link('robustness')})."
                if win.get("robustness")
                else "."
            )
        )
    )
st.markdown(w.md(f"**Why it wins.** {res['why']}"))
spread = win.get("price_spread") or {}
st.markdown(
    w.md(
        f"- **{w.term_link('binding constraint', 'Binding constraint')}:** "
        f"{win['binding_constraint']}\n"
        f"- **Price:** ${win['usd_per_gpu_hour']:.2f} per GPU-hour from {win['price_provider']} "
        f"(as of {win['price_as_of']}; {win['price_rule']}); spread of {spread.get('n_rows', '?')} "
        f"{str(spread.get('kind', '')).replace('_', '-')} rows: "
        f"${spread.get('min', float('nan')):.2f} / ${spread.get('median', float('nan')):.2f} / "
        f"${spread.get('max', float('nan')):.2f} (min / median / max). "
        f"[source]({win['price_source']})"
        if str(win.get("price_source", "")).startswith("http")
        else f"- **{w.term_link('binding constraint', 'Binding constraint')}:** "
        f"{win['binding_constraint']}\n"
        f"- **Price:** ${win['usd_per_gpu_hour']:.2f} per GPU-hour ({win.get('price_source')})"
    )
)
st.markdown(
    w.md(
        f"- **Quality:** {win['quality']}\n"
        f"- **Performance numbers:** {win['provenance']}; {win['numbers']}"
    )
)

st.subheader("Ranked options")
df = table(recs)
w.table(df, RANKED_COLUMNS)
c0, c1, c2, c3, c4 = st.columns(5)
c0.page_link(
    "app_pages/what_if.py",
    label="Open #1 in What-if",
    icon=":material/tune:",
    help="tune the recommended deployment knob by knob",
    query_params={
        "model": sc.model,
        "wi_gpu": win["gpu"],
        "wi_fw": win["framework"],
        "wi_prec": win["precision"],
        f"wi_kv_{win['precision']}_{win['framework']}": win["kv_precision"],
        "wi_tp": str(win["tp"] if win["tp"] in (1, 2, 4, 8) else 8),
    },
)
c1.download_button(  # the files are made when clicked, not on every run
    "Results (CSV)",
    lambda: pd.DataFrame(recs).drop(columns=["assumptions"], errors="ignore").to_csv(index=False),
    file_name=f"plan-{sc.model}.csv",
    mime="text/csv",
    on_click="ignore",
)
c2.download_button(
    "Report (Markdown)",
    lambda: markdown_report(res, form, cat),
    file_name=f"plan-{sc.model}.md",
    mime="text/markdown",
    on_click="ignore",
)
c3.download_button(
    "Scenario (YAML)", w.scenario_yaml(form), file_name="scenario.yaml", mime="application/x-yaml"
)

c4.download_button(  # planner recommend --emit: made when clicked
    "Deploy files (zip)",
    lambda: w.deploy_zip(res, sc, cat),
    file_name=f"deploy-{sc.model}.zip",
    mime="application/zip",
    on_click="ignore",
    help="per ranked option: serve.sh for its engine release, Kubernetes manifests, bench.sh "
    "and expected.json (the same folders as `planner recommend ... --emit DIR`; docs/deploy.md)",
)

st.caption("Same answer from the command line (download the scenario above):")
w.command_line(w.cli_command(form))

# ---------------------------------------------------------------- pareto
st.subheader("Cost vs latency")
front = {p["rank"] for p in res["pareto"]}
rows = []
for r in recs:
    on_front = r["rank"] in front
    rows.append(
        {
            "label": option_label(r),
            "rank": r["rank"],
            "usd_per_mtok_output": r["usd_per_mtok_output"],
            "e2e_p99_s": r["e2e_p99_s"],
            "num_gpus": r["num_gpus"],
            "pareto": on_front,
            "role": "winner" if r["rank"] == 1 else ("Pareto front" if on_front else "other"),
            "usd_per_mtok_output_low": r.get("usd_per_mtok_output_low"),
            "usd_per_mtok_output_high": r.get("usd_per_mtok_output_high"),
        }
    )
w.svg_chart(pareto_chart(rows, win))
st.caption(
    w.md(
        "Each point is a ranked option at the traffic the fleet is sized for; the dashed line "
        "joins the options no other beats on both cost and P99 end-to-end latency (the "
        f"{w.term_link('Pareto front')}); the red diamond is the recommendation, #1 {option_label(win)}. Labels: the "
        "ranks in the table above of the front's options; vertical bars: the cost's "
        f"{w.term_link('error band')} "
        "(band low to band high in the table); hover any point for its details."
    )
)
note = dominated_note(
    recs, form.objective, res["summary"].get("objective_text", form.objective), cat
)
if note:
    st.info(w.md(note))

# ---------------------------------------------------------------- growth
with st.expander("Growth over the year (planner grow)", expanded=False, key="grow_open",
                 on_change="rerun"):  # fmt: skip
    if st.session_state.get("grow_open"):
        growth_section(sc, win, cat)

# ---------------------------------------------------------------- xPyD (issue 30)
with st.expander("Disaggregated prefill/decode (xPyD)", expanded=False, key="xpyd_open",
                 on_change="rerun"):  # fmt: skip
    if st.session_state.get("xpyd_open"):  # sized only once the expander is open
        pools.plan_pools(key, form.scenario_json, recs)

# ---------------------------------------------------------------- rejected
by_stage = res["rejected_by_stage"]
with st.expander(
    f"Rejected options ({res['n_rejected']:,}) by reason",
    expanded=False,
    key="rej_open",
    on_change="rerun",  # the tables are built only once the expander is open
):
    if st.session_state.get("rej_open"):
        w.table(
            [{"stage": k, "options": v["n"], "example": v["rows"][0]["reason"]} for k, v in
             sorted(by_stage.items(), key=lambda kv: -kv[1]["n"])],
            ["stage", "options", T.Col(key="example", wrap=True)],
        )  # fmt: skip
        stage = st.selectbox("Show the options rejected at stage", sorted(by_stage), key="rej_stage")  # fmt: skip
        if stage:
            w.table(
                by_stage[stage]["rows"],
                [T.Col(key=c, label=REJECTED.get(c), wrap=c == "reason") for c in w.REJECTED_COLUMNS],
                download=("These rejected options (CSV)", f"plan-rejected-{stage}-{sc.model}.csv"),
                max_height_rem=28,
            )  # fmt: skip
            if by_stage[stage]["n"] > len(by_stage[stage]["rows"]):
                st.caption(
                    w.md(
                        f"first {len(by_stage[stage]['rows']):,} of {by_stage[stage]['n']:,}; "
                        "the CSV of the CLI has all"
                    )
                )
with st.expander("Assumptions"):
    st.markdown(w.md("\n".join(f"- {a}" for a in res["assumptions"])))
w.definitions_expander()
w.table_sort()
