"""What-if page: one deployment of the scenario, every knob a widget -> memory split, the
throughput-latency curve (SLO lines, knee), latency percentiles at the scenario's rate,
tokens/s per GPU and $/M tokens; "pin as baseline" shows every number's delta."""

from __future__ import annotations

import html
from dataclasses import asdict, replace
from typing import Any

import numpy as np
import streamlit as st

from app_pages import pools
from app_pages import widgets as w
from app_pages.what_if_eval import CURVE_KEYS, Knobs, evaluate, evaluate_disagg
from planner import PlannerError, default_kv_precision, fmt

BASELINE = "wi_baseline"
TPS = [1, 2, 4, 8]
CONTEXTS = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
MAX_SEQS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
#: requests a point of the curve at least (planner.serving.answer.CURVE_REQUESTS)
CURVE_MIN_REQUESTS = 2000
COLUMN_PX = 520  # a half column's width in a 1500 px window: the charts' text at its size
GPU_BOX_PX = 320  # the GPU selectbox's width [px]: the longest GPU id (36 characters) fits


def disagg_html(r: dict, res: dict) -> str:
    """The P:D knob's answer: the pools, the KV transfer, and the GPUs against the
    aggregated fleet's (``res``: :func:`evaluate`'s)."""
    if "error" in r:
        return _cap(f"Cannot disaggregate this deployment: {r['error']}")
    c = r["check"]
    agg = res.get("num_gpus")
    vs = f" against {agg:,} aggregated" if agg else ""
    return (
        "<h3>Disaggregated prefill/decode</h3>"
        + pools.pools_html(r)
        + _cap(
            f"{r['num_gpus']:,} GPUs{vs}. One group at {c['rate_rps']:.3g} req/s: TTFT P99 "
            f"{(c.get('ttft_p99_s') or float('nan')) * 1e3:,.0f} ms, TPOT P99 "
            f"{(c.get('tpot_p99_s') or float('nan')) * 1e3:,.1f} ms. The ratio needing the "
            f"fewest GPUs is {r['balanced'][0]}:{r['balanced'][1]} (P:D auto)."
        )
    )


def capacity_command(form: Any, k: Knobs, sc: Any = None) -> str:
    """The ``planner capacity`` command whose ``curve`` (``--format json``) is the page's
    curve for the knobs ``k`` (every knob, the context as ``--max-model-len``; requests
    longer than it are cut, as the page does and says, hence ``--allow-truncation``). The
    scenario's expert parallel and attention data-parallel ranks are written out: layout
    flags on the command line replace the file's whole layout (``planner capacity --help``)."""
    cmd = w.cli_command(form).split(" --objective")[0].replace("recommend", "capacity", 1)
    d = sc.deployment if sc is not None else None
    moe = (
        f"--ep {d.ep} --attention-dp {d.attention_dp} "
        if d is not None and (d.ep > 1 or d.attention_dp > 1)
        else ""
    )
    return (
        f"{cmd} --gpu {k.gpu} --framework {k.framework} --precision {k.precision} --tp {k.tp} "
        + moe
        + f"--kv-precision {k.kv_precision} --max-num-seqs {k.max_num_seqs} --max-model-len "
        f"{k.context} "
        + (
            f"--spec-method {k.spec_method} --spec-tokens {k.spec_tokens} "
            + (f"--acceptance-length {k.acceptance_length:g} " if k.acceptance_length else "")
            if k.spec_method
            else ""
        )
        + "--allow-truncation --format json"  # the page cuts longer requests too
    )


def knobs_text(a: dict) -> str:
    """The engine settings of an answer's fields (:meth:`DeploymentAnswer.fields`), one line."""
    chunk = a["prefill_chunk_tokens"]
    return (
        f"max_num_seqs {a['max_num_seqs']:,}, max_num_batched_tokens "
        f"{a['max_num_batched_tokens']:,}, gpu_memory_utilization "
        f"{a['gpu_memory_utilization']:g}, KV {a['kv_cache_dtype']}, prefill chunk "
        + (f"{chunk:,}" if chunk else "off")
        + f", max_model_len {a['max_model_len']:,}"
    )


def band_bounds(x: np.ndarray, y: np.ndarray, band: Any) -> tuple | None:
    """The shaded band of a throughput-latency curve: at each point's throughput ``x``, its
    latency ``y`` [ms] over :meth:`planner.catalog.profile.Band.time_interval` (a card
    measured r times as fast as predicted has latencies / r; r from p10 to p90 of held-out
    measurements): ``(x, low, high)`` arrays, or None without a band."""
    if band is None or not band.known:
        return None
    ok = np.isfinite(x) & np.isfinite(y) & (y > 0)
    if not ok.any():
        return None
    lo, hi = band.time_interval(y[ok])
    return x[ok], np.asarray(lo, float), np.asarray(hi, float)


def curve_svg(curve: list[dict], metric: str, slo_ms: float | None, band: Any) -> tuple[str, bool]:
    """The throughput-latency curve as SVG (:func:`app_pages.svg.line_chart`): a point per
    number of concurrent clients (tooltip: clients, tok/s per GPU, the latency, meets SLO),
    the error band, the SLO line and the knee; and whether the band is drawn.
    ``metric``: "TPOT P99" or "TTFT P99"."""
    from app_pages import svg

    key = CURVE_KEYS[metric]
    curve = sorted(curve, key=lambda r: r["output_tok_s_per_gpu"])  # by x, as Vega drew it
    conc = [int(r["concurrency"]) for r in curve]
    x = np.array([r["output_tok_s_per_gpu"] for r in curve], float)
    y = np.array([r[key] * 1e3 for r in curve], float)
    tips = [
        f"concurrent clients: {c:,}\ntok/s per GPU: {a:,.0f}\n{metric} [ms]: {b:,.1f}\n"
        f"meets SLO: {'yes' if r.get('slo_ok', True) else 'no'}"
        for c, a, b, r in zip(conc, x, y, curve, strict=True)
    ]
    knees = [
        svg.Point(a, b, svg.ORANGE, "diamond", 7.0, f"knee: {c} clients, {b:,.1f} ms",
                  f"knee: {c} clients", label_anchor="end")
        for c, a, b, r in zip(conc, x, y, curve, strict=True) if r["is_knee"]
    ]  # fmt: skip
    area = band_bounds(x, y, band)
    chart = svg.line_chart(
        x,
        y,
        x_axis=svg.Axis("output tokens/s per GPU", zero=True),
        y_axis=svg.Axis(f"{metric} [ms] (log scale)", log=True),
        label=f"{metric} [ms, log scale] against output tokens/s per GPU, one point per "
        "number of concurrent clients, with the error band, the SLO line and the knee",
        tooltips=tips,
        band=area,
        hrule=(slo_ms, f"SLO: {slo_ms:,.0f} ms") if slo_ms is not None else None,
        highlights=knees,
        width=COLUMN_PX,
    )
    return chart, area is not None


def _clear_baseline() -> None:
    st.session_state.pop(BASELINE, None)


TIPS = {
    "$/M output tokens": "at the planned traffic (mean rate), fixed fleet: fleet $/h / "
    "output tokens per hour, as on the Plan page",
    "$/M tokens, full load": "output tokens at full load: price / (output tok/s per GPU "
    "x 3600) x 1e6",
    "Output tok/s per GPU": "at the max rate per replica within the SLO (open loop), as "
    "planner capacity and recommend report it",
    "Sequences that fit": "full-context sequences that fit in the KV cache",
}
GOOD, BAD, SAME = "#09ab3b", "#ff2b2b", "#808495"  # Streamlit's delta colours


def metric_cards(
    vals: dict[str, tuple[float, str, str]], base: dict | None
) -> list[tuple[str, str, str | None, str]]:
    """(label, shown value, delta to the baseline ``base`` or None, its colour) of each of
    the ten numbers. ``vals``: label -> (value, format pattern, "normal" when more is better
    or "inverse" when less is)."""
    out = []
    for label, (v, pattern, sense) in vals.items():
        shown = pattern.format(v) if np.isfinite(v) else "-"
        delta, colour = None, SAME
        if base and label in base["values"]:
            b = base["values"][label]
            if np.isfinite(v) and np.isfinite(b):
                d = v - b
                mag = pattern.format(abs(d))
                same = mag == pattern.format(0)  # a difference smaller than the shown digits
                delta = mag if same else f"{'+' if d > 0 else '-'}{mag}"
                if not same:
                    colour = GOOD if (d > 0) == (sense == "normal") else BAD
        out.append((label, shown, delta, colour))
    return out


def cards_html(vals: dict[str, tuple[float, str, str]], base: dict | None) -> str:
    """The ten numbers, five a row, each with its delta to the baseline ``base`` (an arrow
    and the difference, green when better, red when worse, grey when equal to the shown
    digits), as HTML (:func:`app_pages.widgets.cards_html`)."""
    cards = []
    for label, shown, delta, colour in metric_cards(vals, base):
        arrow = (
            ""
            if delta is None or colour == SAME
            else ("&#8593; " if delta[0] == "+" else "&#8595; ")
        )
        d = (
            f'<div class="pl-d" style="color:{colour};background:{colour}1f">{arrow}'
            f'<span class="pl-dv">{html.escape(delta)}</span></div>'
            if delta is not None
            else ""
        )
        cards.append(w.Card(label, shown, TIPS.get(label), d))
    return w.cards_html(cards)


def alerts(res: dict) -> None:
    """Errors and warnings of the simulation (Streamlit alerts, above the numbers)."""
    if "error" in res:
        st.error(w.md(f"Cannot simulate this deployment: {res['error']}"))
    if res.get("fit_warning"):
        st.warning(w.md(res["fit_warning"]))
    if res.get("no_capacity"):
        st.warning(w.md(f"This deployment cannot meet the SLO: {res['no_capacity']}."))


def latency_note(res: dict, sc: Any) -> str:
    """How the latency numbers were obtained (text; empty when nothing was simulated)."""
    if "replicas" not in res:
        return ""
    a = res["answer"]
    return (
        f"Latency percentiles simulated at the scenario's rate per replica: planning peak "
        f"{fmt.rate(sc.workload.traffic.peak())} x (1 + {sc.constraints.headroom:g}) over "
        f"{res['replicas']} replica(s) = {res['rate_per_replica']:.2f} req/s each. Max rate per "
        f"replica within the SLO: {a['max_rate_per_replica']:.3g} req/s (TTFT P99 "
        f"{a['ttft_p99_at_max_rate_s'] * 1e3:,.0f} ms, TPOT P99 "
        f"{a['tpot_p99_at_max_rate_s'] * 1e3:,.1f} ms there); output tok/s per GPU at that "
        "rate; $/M output tokens at the planned mean traffic with this fleet, and at that full "
        f"load, with ${res['usd_per_gpu_hour'] or float('nan'):.2f}/GPU-h ({res['price_note']}). "
        f"Engine: {knobs_text(a)}. Performance parameters: {res['provenance']}"
        + (f" (release: {res['release_note']})" if res.get("release_note") else "")
        + ". The same numbers as planner capacity, simulate and recommend for this deployment "
        "(one function)."
    )


def curve_html(res: dict, sc: Any, metric: str) -> str:
    """The throughput-latency curve with its error band, the SLO line and the knee, and its
    caption, as HTML (``metric``: "TPOT P99" or "TTFT P99")."""
    curve = res.get("curve")
    if not curve:
        return _cap("No curve: the deployment cannot be simulated (see the message above).")
    target = sc.slo.tpot if metric == "TPOT P99" else sc.slo.ttft
    b = res.get("band")
    chart, banded = curve_svg(curve, metric, target.max_s * 1e3 if target else None, b)
    n_min = CURVE_MIN_REQUESTS
    noise = [n for n in res.get("curve_noise", []) if n.startswith(metric)]
    return chart + _cap(
        f"Each point: that many clients sending back to back (closed loop), at least {n_min:,} "
        "requests a point. " + "".join(f"{n}. " for n in noise) + "The knee "
        "(orange) is the point of best throughput per unit of latency; the red line is the "
        "SLO target. Beyond the knee latency grows faster than throughput. "
        + (
            f"Shaded: each point's latency over the error band of the performance "
            f"numbers ({b.describe()}; its throughput moves by the same factor)."
            if banded
            else "No error band: "
            + (b.describe() if b is not None else res.get("band_error", "unknown"))
            + "."
        )
    )


def _cap(text: str) -> str:
    """A caption (Streamlit's caption style, :data:`app_pages.widgets.HTML_CSS`) of escaped
    ``text``, the first mention of each term of :data:`LINKED` linked to the Definitions page."""
    return f'<p class="pl-cap">{w.link_terms_html(html.escape(text), LINKED)}</p>' if text else ""


#: the terms linked to the Definitions page where a caption first names them
LINKED = ("knee", "error band", "SLO", "planning peak", "provenance")


def outputs_html(cards: str, note: str, memory: str, curve: str, deltas: str) -> str:
    """Everything a knob change redraws, as one HTML element (issue 18: each Streamlit
    element costs the browser a React update on every change; one element costs one): the
    cards, the latency note, the memory bar and the curve side by side (each with its
    heading and caption), and the baseline's caption."""
    return (
        f'<div class="pl-out">{cards}{_cap(note)}<div class="pl-cols"><div>{memory}</div>'
        f"<div>{curve}</div></div>{_cap(deltas)}</div>"
    )


# =========================================================================== page
st.title("What-if: one deployment, every knob")
# the style of the outputs, once per page run and outside the fragment: a <style> sent with
# them on every change would make the browser recompute the style of the whole page each time
w.html_css()
st.caption(
    "The scenario (model, traffic, lengths, SLO, prices) is in the sidebar; change the "
    "deployment below. Pin a baseline to see every number's difference to it."
)
try:
    cat = w.session_catalog()
except PlannerError as e:
    st.error(w.md(f"Cannot load the catalogs: {e}"))
    st.stop()
form = w.scenario_sidebar(cat, search=False)
key = w.custom_key()
if not form.ok:
    st.error(w.md("Fix the scenario first: " + "; ".join(m for _, m in form.errors)))
    st.stop()
sc = w.build_scenario(key, form.scenario_json)
if sc.classes:
    st.error(
        "This scenario has request classes; What-if takes one workload. Plan compares a "
        "shared pool with a pool per class; or forget the loaded file in the sidebar."
    )
    st.stop()
model = cat.model(sc.model)


@st.fragment
def deployment() -> None:
    """The knobs and everything computed from them: a knob change re-runs only this
    fragment (the sidebar scenario form stays as it is)."""
    gpu_ids = [g.id for g in cat.accelerators]
    fw_ids = [f.id for f in cat.frameworks if f.id != "pytorch"]
    prec_ids = [p.id for p in cat.precisions]
    # the knobs in two horizontal containers (one block each; st.columns would add a block
    # per column: fewer elements for the browser to update on every change, issue 18)
    row = st.container(horizontal=True, gap="medium")
    gpu = row.selectbox(  # a fixed width: the longest GPU id fits in it, in any window
        "GPU", gpu_ids, key="wi_gpu", bind="query-params", width=GPU_BOX_PX,
        **w._default("wi_gpu", opts=gpu_ids, index=w._index(gpu_ids, "nvidia-h100-sxm")),
    )  # fmt: skip
    fw = row.selectbox(
        "Framework", fw_ids, key="wi_fw", bind="query-params",
        **w._default("wi_fw", opts=fw_ids, index=fw_ids.index("vllm") if "vllm" in fw_ids else 0),
    )  # fmt: skip
    prec = row.selectbox(
        "Precision", prec_ids, key="wi_prec", bind="query-params",
        **w._default("wi_prec", opts=prec_ids, index=prec_ids.index("fp8") if "fp8" in prec_ids else 0),
    )  # fmt: skip
    p = cat.precision(prec)
    kv_def = default_kv_precision(p, cat.framework(fw), model)  # what fw does with the checkpoint
    kv_opts = list(dict.fromkeys([kv_def.id, *p.kv_options]))
    kv = row.selectbox(
        "KV precision", kv_opts, key=f"wi_kv_{prec}_{fw}", bind="query-params",
        help=f"default {kv_def.id}: {kv_def.basis}",
        **w._default(f"wi_kv_{prec}_{fw}", opts=kv_opts, index=0),
    )  # fmt: skip
    row = st.container(horizontal=True, gap="medium")
    tp = row.select_slider(
        "TP (GPUs per replica)",
        TPS,
        key="wi_tp",
        bind="query-params",
        **w._default("wi_tp", value=2),
    )
    ctx0 = sc.serving.context_len or 8192  # the scenario's serving.context_len, as the CLI
    ctx_opts = [x for x in CONTEXTS if not model.max_position_embeddings or x <= model.max_position_embeddings]  # fmt: skip
    context = row.select_slider(
        "Context length (max_model_len) [tokens]", ctx_opts, key="wi_ctx", bind="query-params",
        format_func=lambda v: f"{v:,}",
        **w._default("wi_ctx", value=next(c for c in (ctx0, 8192, ctx_opts[-1]) if c in ctx_opts)),
    )  # fmt: skip
    # the scenario's serving.max_num_seqs, else the engine's own default on this GPU (vLLM
    # V1: 1024 on >= 70 GiB GPUs), as recommend and capacity use them
    seqs0 = sc.serving.max_num_seqs or cat.framework(fw).scheduler_defaults(cat.gpu(gpu))[0]
    seqs_def = min(MAX_SEQS, key=lambda v: abs(v - seqs0))
    mns = row.select_slider(
        "Max concurrency (max_num_seqs)", MAX_SEQS, key="wi_seqs", bind="query-params",
        help=f"the engine's cap on sequences in a batch; {fw}'s default on {gpu} is {seqs0:,}",
        **w._default("wi_seqs", value=seqs_def),
    )  # fmt: skip
    metric = row.radio(
        "Latency on the y axis",
        ["TPOT P99", "TTFT P99"],
        horizontal=True,
        key="wi_axis",
        bind="query-params",
    )
    for k_, v_ in (("wi_gpu", gpu), ("wi_fw", fw), ("wi_prec", prec), ("wi_tp", tp), ("wi_ctx", context), ("wi_seqs", mns)):  # fmt: skip
        w._keep(k_, v_)
    row = st.container(horizontal=True, gap="medium")  # issue 30: AL and P:D
    sm, sk, sal = pools.spec_knobs(row, cat, model, fw)
    pd = pools.pd_knob(row)
    knobs = Knobs(gpu, fw, prec, kv, int(tp), int(context), int(mns), sm, sk, sal, pd)

    # ---------------------------------------------------------------- memory
    fwrec = cat.framework(fw)
    setup = w.Setup(
        model=sc.model,
        gpu=gpu,
        precision=prec,
        kv_precision=kv,
        framework=fw,
        tp=int(tp),
        pp=1,
        context=int(context),
        utilization=float(fwrec.default_memory_utilization),
    )
    g = cat.gpu(gpu)
    if g.memory_gb is None:
        st.error(
            w.md(
                f"{g.name}: memory size not in the catalog; pick another GPU or add it on Catalog."
            )
        )
        st.stop()
    plan = w.memory_plan(key, setup)
    if "error" in plan:
        st.error(w.md(f"Cannot plan this deployment: {plan['error']}"))
        st.stop()

    # the aggregated deployment's numbers do not depend on the P:D knob (its pools are
    # evaluate_disagg's): one cache entry for every ratio, no simulation again on a P:D change
    res = evaluate(key, form.scenario_json, replace(knobs, pd=pools.AGGREGATED))
    base = st.session_state.get(BASELINE)
    head = st.container(horizontal=True, vertical_alignment="center")
    pin = head.button(
        "Pin as baseline", type="primary", key="wi_pin", help="compare every number with this one"
    )
    if base or pin:  # "Clear" empties the baseline in its callback, before this run
        head.button("Clear baseline", key="wi_clear", on_click=_clear_baseline)

    # ---------------------------------------------------------------- metrics (+ baseline deltas)
    s = res.get("summary", {})
    vals = {
        "Sequences that fit": (plan["max_concurrent_sequences"], "{:,.0f}", "normal"),
        "TTFT P99 [ms]": (s.get("ttft_p99_s", np.nan) * 1e3, "{:,.0f}", "inverse"),
        "TPOT P99 [ms]": (s.get("tpot_p99_s", np.nan) * 1e3, "{:,.1f}", "inverse"),
        "TTFT P50 [ms]": (s.get("ttft_p50_s", np.nan) * 1e3, "{:,.0f}", "inverse"),
        "TPOT P50 [ms]": (s.get("tpot_p50_s", np.nan) * 1e3, "{:,.1f}", "inverse"),
        "Output tok/s per GPU": (res.get("tok_s_per_gpu", np.nan), "{:,.0f}", "normal"),
        "$/M output tokens": (res.get("usd_per_mtok_planned", np.nan), "${:,.3f}", "inverse"),
        "GPUs needed": (res.get("num_gpus", np.nan), "{:,.0f}", "inverse"),
        "Fleet [$/month]": (res.get("usd_per_month", np.nan), "${:,.0f}", "inverse"),
        "$/M tokens, full load": (res.get("usd_per_mtok_full", np.nan), "${:,.3f}", "inverse"),
    }
    if pin:
        st.session_state[BASELINE] = base = {
            "label": knobs.label(),
            "knobs": asdict(knobs),
            "values": {k: float(v[0]) for k, v in vals.items()},
        }
    if base:
        head.markdown(f"**Baseline:** {base['label']}")
    alerts(res)
    cap_gb = plan["gpu_memory_bytes"] / w.GB
    memory = (
        f"<h3>Memory of one {html.escape(g.name)}</h3>"
        + w.memory_bar(plan, f"GPU 1 of {tp}", labelled=False, legend_right=True, width=COLUMN_PX)
        + _cap(
            f"{plan['reason'].rstrip('.')}. Dashed red line: the card's {cap_gb:.0f} GB. "
            f"{plan['max_concurrent_sequences']:,} sequences of {context:,} tokens fit; the "
            f"engine runs at most {mns}."
        )
    )
    w.html_block(
        outputs_html(
            cards_html(vals, base),
            latency_note(res, sc),
            memory,
            "<h3>Throughput vs latency</h3>" + curve_html(res, sc, metric),
            f"Deltas against the baseline: {base['label']}." if base else "",
        )
    )
    if knobs.pd != pools.AGGREGATED:
        w.html_block(disagg_html(evaluate_disagg(key, form.scenario_json, knobs), res))
    st.caption(
        "Same numbers from the command line: the replicas, the max rate per replica, the "
        "latencies, the engine settings and the curve (the scenario: sidebar, Load / save), "
        "and the sequences that fit:"
    )
    w.command_line(capacity_command(form, knobs, sc))
    w.command_line(w.memory_command(setup, cat))


deployment()
w.definitions_expander()
