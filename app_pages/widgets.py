"""Shared pieces of the app pages: the catalog (bundled + this session's custom entries),
the model / GPU / precision pickers (bound to the URL's query parameters), cached
computations and formatting.

Pages import from here and from the top-level ``planner`` namespace only. Every number
shown comes from ``planner``; this module turns widgets into arguments and results into
plain dicts / DataFrames that ``st.cache_data`` can cache.
"""

from __future__ import annotations

import functools
import html
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from pydantic import ValidationError

from app_pages import tables
from planner import (
    Accelerator,
    Catalog,
    ModelArch,
    PlannerError,
    RentalPrice,
    decode_step,
    default_kv_precision,
    fmt,
    load_catalog,
    model_family,
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
CUSTOM_MODELS = "custom_models"


# --------------------------------------------------------------------------- warm-up
def warm_up() -> float:
    """Load the simulator's compiled kernel (compile it on a fresh install, 20-60 s; load it
    from numba's cache otherwise, ~0.5-3 s), compute the Plan page's default answer
    (:func:`default_plan`), kept on disk for later server processes; returns the seconds
    taken.

    ``scripts/warm_up.py`` runs it once at install; the app runs it in a background thread
    when a server process starts (:func:`warm_up_in_background`)."""
    import time

    from planner.recommend import recommend
    from planner.workload import SLO, Workload

    t0 = time.perf_counter()
    default_plan()
    wl = Workload.model_validate({"preset": "chat", "traffic": {"mean_rps": 1.0, "peak_rps": 1.0}})
    slo = SLO.model_validate({"tpot": {"max_s": 0.1}})
    recommend(
        "llama-3.1-8b",
        wl,
        slo,
        catalog=base_catalog(),
        gpus=("nvidia-h100-sxm",),
        frameworks=("vllm",),
        precisions=("fp8",),
        top_n=1,
    )  # fmt: skip  (the kernel, when the default answer came from disk)
    return time.perf_counter() - t0


#: seconds between the end of a server's first script run and its warm-up: the browser is
#: still drawing that page (loading the code of charts and tables), and on a 2-core machine
#: the warm-up's kernel load would take a core from it
WARM_UP_DELAY_S = 3.0


@st.cache_resource(show_spinner=False)
def warm_up_in_background() -> Any:
    """Start :func:`warm_up` in a daemon thread, once per server process, after
    :data:`WARM_UP_DELAY_S` (a page that needs a simulation sooner loads the kernel itself)."""

    t = threading.Timer(WARM_UP_DELAY_S, warm_up)
    t.name, t.daemon = "planner-warm-up", True
    t.start()
    return t


def canonical(scenario_json: str) -> str:
    """The scenario's JSON with sorted keys: one cache entry per scenario, whatever the order
    in which the form or a file wrote its fields."""
    import json

    return json.dumps(json.loads(scenario_json), sort_keys=True)


def default_scenario_json() -> str:
    """The scenario the sidebar form holds before any change (:data:`SCENARIO_DEFAULTS`), in
    :func:`canonical` form; ``tests/app`` checks that the form produces exactly this."""
    import json

    D = SCENARIO_DEFAULTS
    slo: dict[str, Any] = {"attainment": D["attainment"]}
    if D["ttft"]:
        slo["ttft"] = {"max_s": float(D["ttft"]), "percentile": "p99"}
    if D["tpot_ms"]:
        slo["tpot"] = {"max_s": D["tpot_ms"] / 1e3, "percentile": "p99"}
    data = {
        "name": "app-scenario",
        "description": "saved from the planner app",
        "model": D["model"],
        "workload": {
            "preset": D["preset"],
            "traffic": {"mean_rps": float(D["mean_rps"]), "peak_rps": float(D["peak_rps"])},
        },
        "slo": slo,
        "constraints": {
            "price_basis": D["basis"],
            "gpus": list(D["gpus"]),
            "headroom": float(D["headroom"]),
        },
    }
    return json.dumps(data, sort_keys=True)


_NO_CUSTOM: tuple[tuple[str, ...], ...] = ((), (), ())
_DEFAULT_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _fingerprint() -> str:
    """Hash of everything a recommendation depends on: planner's code and data files and
    this module (the shape of the cached dict)."""
    import hashlib

    import planner
    from planner.catalog.catalog import DATA_DIR  # PLANNER_DATA_DIR or the bundled data/

    code = Path(planner.__file__).resolve().parent
    h = hashlib.sha256()
    for base, pattern in ((code, "*.py"), (DATA_DIR, "*"), (Path(__file__).parent, "widgets.py")):
        for f in sorted(Path(base).rglob(pattern)):
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(str(f.relative_to(base)).encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


def default_plan() -> dict[str, Any]:
    """The Plan page's answer for the default scenario (:func:`default_scenario_json`, cost,
    top 5), computed once per install: kept as a pickle in ``app_pages/__pycache__`` under a
    fingerprint of planner's code and data (:func:`_fingerprint`), so a new server process
    shows it without a search and a changed catalog or planner never reuses an old answer."""
    import pickle

    path = Path(__file__).resolve().parent / "__pycache__" / f"default-plan-{_fingerprint()}.pkl"
    with _DEFAULT_LOCK:  # the warm-up thread and the first page: one search, not two
        try:
            res = pickle.loads(path.read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError):
            res = _store_default(
                path, _recommend_dict(_NO_CUSTOM, default_scenario_json(), "cost", 5)
            )
    # its search time is that of the install's or the warm-up's search, not this page's wait
    if "summary" in res:
        res = {**res, "summary": {**res["summary"], "precomputed": True}}
    return res


def _store_default(path: Path, res: dict[str, Any]) -> dict[str, Any]:
    import pickle

    try:
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_suffix(f".{id(res)}.tmp")
        tmp.write_bytes(pickle.dumps(res))
        tmp.replace(path)  # atomic: a concurrent reader sees the old file or the new one
        for old in path.parent.glob("default-plan-*.pkl"):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only install: computed again by each server process
    return res


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
            f"'{NO_FRAMEWORK}': 0.9 utilization, 16-token KV blocks",
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
        family = model_family(cat.model(s.model))
        params, provenance = resolve_efficiency(s.gpu, s.framework, s.precision, None, cat, family)
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
#: headings drawn as Streamlit draws ``st.metric``, ``st.caption`` and ``st.subheader``)
HTML_CSS = (
    ".pl-cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(max(8.5rem,"
    "calc((100% - (var(--n,5) - 1) * 1rem) / var(--n,5))),1fr));gap:1rem;margin-bottom:1rem}"
    ".pl-card{border:1px solid rgba(128,132,149,.3);border-radius:.5rem;"
    "padding:.75rem 1rem;container-type:inline-size}.pl-l{font-size:.875rem}"
    ".pl-l abbr{text-decoration:none;cursor:help;opacity:.6;margin-left:.35rem;"
    "border:1px solid;border-radius:50%;display:inline-block;width:1.1em;height:1.1em;"
    "line-height:1em;text-align:center;font-size:.75rem}.pl-v{line-height:1.3;"
    "white-space:nowrap}.pl-d{font-size:.875rem;border-radius:1rem;padding:.1rem .5rem;"
    "display:inline-block}"
    ".pl-cap{font-size:.875rem;opacity:.6;margin:.25rem 0 1rem;overflow-wrap:break-word}"
    ".pl-cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(20rem,1fr));"
    "gap:1rem}.pl-cols>div{min-width:0}.pl-out h3{font-size:1.5rem;font-weight:600;"
    "line-height:1.2;margin:.5rem 0 .75rem;padding:0;scroll-margin-top:3.75rem}"
)


def html_css() -> None:
    """The style of the app's own HTML, :data:`HTML_CSS` and the tables'
    (:data:`app_pages.tables.CSS`), once per page run, before any of it and outside any
    fragment (a ``<style>`` sent again on every change would make the browser recompute the
    whole page's style). A ``st.html`` of style only goes to the page's event container (no
    space on the page) and stays the same element from run to run."""
    st.html(f"<style>{HTML_CSS}{tables.CSS}</style>")


@dataclass(frozen=True)
class Card:
    """A number card: its label, the value as shown, a tooltip, and HTML under the value
    (What-if's delta to the baseline)."""

    label: str
    value: str
    tip: str | None = None
    below_html: str = ""


def value_size(shown: str) -> str:
    """CSS font size of a card's value: Streamlit's 2.25rem, smaller where the text (digits
    ~0.6 em wide) would not fit the card's width (container query units, 100cqi = the card)."""
    return f"min(2.25rem,{100 / (0.62 * max(len(shown), 1)):.1f}cqi)"


def cards_html(cards: list[Card], per_row: int = 5) -> str:
    """Number cards, ``per_row`` a row (fewer in a narrow window), as one piece of HTML: the
    look of bordered ``st.metric`` cards without a React component each (issue 18: each
    costs the browser an update on every run, and their code loads after the numbers on a
    first visit). A long value shrinks to its card's width (:func:`value_size`) rather than
    being cut off. Every text is escaped; style: :data:`HTML_CSS` (:func:`html_css`)."""
    out = []
    for c in cards:
        tip = f'<abbr title="{html.escape(c.tip)}">?</abbr>' if c.tip else ""
        out.append(
            f'<div class="pl-card"><div class="pl-l">{html.escape(c.label)}{tip}</div>'
            f'<div class="pl-v" style="font-size:{value_size(c.value)}">'
            f"{html.escape(c.value)}</div>{c.below_html}</div>"
        )
    return f'<div class="pl-cards" style="--n:{per_row}">' + "".join(out) + "</div>"


_CARD_RE = re.compile(
    r'<div class="pl-card"><div class="pl-l">(.*?)(?:<abbr title="[^"]*">\?</abbr>)?</div>'
    r'<div class="pl-v" style="[^"]*">(.*?)</div>'
)


def cards_of(markup: str) -> dict[str, str]:
    """Label -> shown value of the number cards in ``markup`` (:func:`cards_html`; tests,
    tools)."""
    return {html.unescape(a): html.unescape(b) for a, b in _CARD_RE.findall(markup)}


def cards(items: list[Card], per_row: int | None = None) -> None:
    """Draw number cards (:func:`cards_html`) as one ``st.html`` element, ``per_row``
    (default: all) in a row."""
    st.html(cards_html(items, per_row or len(items)))


def svg_chart(svg_text: str) -> None:
    """Draw an SVG chart of :mod:`app_pages.svg` (:func:`html_block`)."""
    html_block(svg_text)


def html_block(markup: str) -> None:
    """Draw our own HTML with SVG in it (a chart of :mod:`app_pages.svg`, or What-if's
    outputs): one ``st.html`` element whose only script inserts the text as DOM (one
    ``innerHTML``; issue 18, the browser does no more).

    ``st.html`` sanitises its HTML with DOMPurify's HTML-only profile, which removes any
    ``<svg>``; Markdown's raw HTML keeps it, but parsing it and building React elements for
    every mark cost the browser more than the Vega charts did (measured). The script is
    our own text: every text in ``markup`` is escaped by its makers (:func:`app_pages.svg.esc`,
    ``html.escape``) and it goes in as a JSON string with every ``<`` escaped, so nothing in
    it can end the script."""
    js = json.dumps(markup).replace("<", "\\u003c")
    st.html(
        f'<div class="pl-chart"><script>document.currentScript.parentElement.innerHTML={js}'
        "</script></div>",
        unsafe_allow_javascript=True,
    )


def svg_of(body: str) -> str:
    """The SVG (or HTML) text of a :func:`html_block` element's HTML ``body`` (tests, tools)."""
    start = body.index("innerHTML=") + len("innerHTML=")
    return json.loads(body[start : body.rindex("</script>")])


def table_sort() -> None:
    """A click on a header of any :func:`table` sorts it (:data:`app_pages.tables.SORT_JS`):
    one listener on the document, installed by one script element per page (it checks it
    has not run before). Call it last on the page: the element is empty but takes the gap
    between two elements.

    So each table is plain, sanitised HTML without a script of its own: with a script,
    ``st.html`` inserts its HTML only after React's commit (``unsafe_allow_javascript``), one
    more layout of the page (measured on Compare's model switch: renderer CPU 0.56-0.82 s
    without against 0.76-0.89 s with a script per table)."""
    st.html(f"<script>{tables.SORT_JS}</script>", unsafe_allow_javascript=True)


def table(
    rows: pd.DataFrame | list[dict[str, Any]],
    columns: list[tables.Col | str] | None = None,
    *,
    download: tuple[str, str] | None = None,
    max_height_rem: float = 32.0,
) -> None:
    """One table of :func:`app_pages.tables.html_table` as one ``st.html`` element, in place
    of ``st.dataframe`` (issue 18: its data grid cost the browser ~0.7 s on a first load).
    The page calls :func:`html_css` once first and :func:`table_sort` last.

    ``download`` = (button label, file name) adds a CSV of the raw values under the
    columns' headers, made when clicked."""
    st.html(tables.html_table(rows, columns, max_height_rem=max_height_rem))
    if download:
        label, name = download
        st.download_button(
            label,
            functools.partial(tables.csv_text, rows, columns),
            file_name=name,
            mime="text/csv",
            on_click="ignore",
        )


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


# =========================================================================== scenario form
# The Plan, What-if and Compare pages share one scenario (model, traffic, lengths, SLOs,
# prices, search constraints) in the sidebar; every widget is bound to a URL query parameter
# and stashed in session_state so that it survives a page switch.
PLAN_GPUS = [
    "nvidia-h100-sxm",
    "nvidia-h200-sxm",
    "nvidia-b200",
    "amd-mi300x",
    "nvidia-a100-80gb-sxm",
    "nvidia-l40s",
]
PRESET_NAMES = ["chat", "rag", "code", "summarization", "batch"]
CUSTOM_LENGTHS = "custom (lognormal)"
BASES = ["on_demand", "reserved", "spot", "own", "serverless", "community"]
ANY_PROVIDER = "(median of all providers)"
# 24 hourly multipliers of the mean (00:00 ... 23:00); the shapes are inputs, not data
DAILY_SHAPES: dict[str, tuple[float, ...] | None] = {
    "flat (no daily profile)": None,
    "daytime peak (examples/chat-8b.yaml)": (
        0.3, 0.2, 0.2, 0.2, 0.3, 0.5, 0.8, 1.1, 1.4, 1.6, 1.7, 1.7,
        1.6, 1.7, 1.8, 1.8, 1.7, 1.5, 1.3, 1.1, 0.9, 0.7, 0.5, 0.4,
    ),
    "office hours (09:00-18:00)": (
        0.2, 0.2, 0.2, 0.2, 0.2, 0.3, 0.5, 0.9, 1.5, 2.0, 2.1, 2.1,
        1.8, 2.0, 2.1, 2.0, 1.8, 1.3, 0.8, 0.5, 0.4, 0.3, 0.2, 0.2,
    ),
    "evening peak (consumer)": (
        0.6, 0.4, 0.3, 0.2, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1,
        1.1, 1.1, 1.1, 1.2, 1.3, 1.5, 1.8, 2.1, 2.2, 2.0, 1.5, 1.0,
    ),
}  # fmt: skip
SCENARIO_DEFAULTS: dict[str, Any] = {
    "model": DEFAULTS["model"],
    "preset": "chat",
    "peak_rps": 10.0,
    "mean_rps": 4.0,
    "daily": "flat (no daily profile)",
    "in_mean": 1000,
    "in_p90": 2000,
    "out_mean": 250,
    "out_p90": 500,
    "ttft": 1.0,
    "tpot_ms": 50,
    "e2e": 0.0,
    "attainment": 0.99,
    "headroom": 0.2,
    "basis": "on_demand",
    "provider": ANY_PROVIDER,
    "objective": "cost",
    "gpus": PLAN_GPUS,
    "all_gpus": False,
    "frameworks": [],
    "precisions": [],
    "max_gpus": 0,
    "budget": 0,
    "top_n": 5,
}
_STASH = "_scenario_stash"
_LOADED = "_scenario_loaded_id"
_BASE = "_scenario_base"  # the uploaded file: name, JSON, the form values it set, notes
_UPLOAD_ERROR = "_scenario_upload_error"
#: session_state key of a pending scenario upload, ``(file name, bytes)`` (the uploader's
#: file, or one a test puts there: AppTest has no file uploader)
UPLOAD = "scenario_upload"
RPS_MIN, RPS_MAX = 1e-6, 1e7


def _stash() -> dict[str, Any]:
    return st.session_state.setdefault(_STASH, {})


def _restore(key: str) -> None:
    """Put a value kept from another page back before its widget is created."""
    if key not in st.session_state and key in _stash() and key not in st.query_params:
        st.session_state[key] = _stash()[key]


def _keep(key: str, value: Any) -> Any:
    _stash()[key] = value
    return value


def _default(key: str, opts: list[Any] | None = None, **kw: Any) -> dict[str, Any]:
    """The widget's ``value`` / ``index`` / ``default`` keyword: the default, or the value it
    already holds (kept from another page). A URL-bound widget whose parameter is missing from
    the URL (a page link, a page switch) falls back to its default, so the default must be the
    value it holds, not the first option."""
    _restore(key)
    if key not in st.session_state:
        return kw
    cur = st.session_state[key]
    if "index" in kw:
        return {"index": opts.index(cur)} if opts is not None and cur in opts else kw
    name = next(iter(kw))
    return {name: cur}


@dataclass(frozen=True)
class ScenarioForm:
    """What the sidebar produced: the scenario (as the CLI's YAML dict, JSON text so it
    hashes), the objective, how many options to rank, and the first error of each section."""

    scenario_json: str
    objective: str
    top_n: int
    errors: tuple[tuple[str, str], ...]

    @property
    def data(self) -> dict[str, Any]:
        import json

        return json.loads(self.scenario_json)

    @property
    def ok(self) -> bool:
        return not self.errors


def _length_to_form(dist: Any) -> tuple[int, int]:
    return int(round(dist.mean_tokens())), int(round(dist.quantile_tokens(0.9)))


def _form_values(sc: Any, data: dict[str, Any], cat: Catalog) -> tuple[dict[str, Any], list[str]]:
    """The form's widget values for a validated scenario, and notes on what the widgets show
    only approximately (the file's own value is used until the widget is changed)."""
    notes: list[str] = []
    if sc.model not in [m.id for m in cat.models]:
        raise PlannerError(f"uploaded scenario: model '{sc.model}' is not in the catalog")
    vals: dict[str, Any] = {"model": cat.model(sc.model).id}
    if not sc.classes:
        raw_wl = data.get("workload", {}) or {}
        wl = sc.require_workload()
        preset = raw_wl.get("preset")
        if preset in PRESET_NAMES and not (
            raw_wl.get("input_tokens") or raw_wl.get("output_tokens")
        ):
            vals["preset"] = preset
        else:
            vals["preset"] = CUSTOM_LENGTHS
            vals["in_mean"], vals["in_p90"] = _length_to_form(wl.input_tokens)
            vals["out_mean"], vals["out_p90"] = _length_to_form(wl.output_tokens)
            if not (
                getattr(wl.input_tokens, "kind", "") == "lognormal"
                and getattr(wl.output_tokens, "kind", "") == "lognormal"
            ):
                notes.append("lengths: the form shows a lognormal with the file's mean and p90")
        tr = wl.traffic
        vals["mean_rps"] = float(tr.base_mean_rps())
        vals["peak_rps"] = float(tr.peak_rps or tr.peak())
        shape = "flat (no daily profile)"
        if tr.daily_profile is not None:
            match = [k for k, v in DAILY_SHAPES.items() if v == tuple(tr.daily_profile)]
            if match:
                shape = match[0]
            else:
                notes.append("the file's daily profile is not one of the form's shapes")
        vals["daily"] = shape
        for k in ("ttft", "tpot", "e2e"):
            t = getattr(sc.slo, k)
            if t is not None and t.percentile != 99:
                notes.append(f"{k.upper()} target at p{t.percentile:g}: the form shows P99")
        vals["ttft"] = float(sc.slo.ttft.max_s) if sc.slo.ttft else 0.0
        vals["tpot_ms"] = int(round(sc.slo.tpot.max_s * 1e3)) if sc.slo.tpot else 0
        vals["e2e"] = float(sc.slo.e2e.max_s) if sc.slo.e2e else 0.0
        vals["attainment"] = float(sc.slo.attainment or 0.99)
    c = sc.constraints
    vals["headroom"] = float(c.headroom)
    vals["basis"] = c.price_basis
    vals["provider"] = c.providers[0] if c.providers else ANY_PROVIDER
    if len(c.providers) > 1:
        notes.append(f"providers {', '.join(c.providers)}: the form shows the first")
    vals["gpus"] = [cat.gpu(g).id for g in c.gpus] if c.gpus else list(PLAN_GPUS)
    vals["all_gpus"] = not c.gpus
    vals["frameworks"] = [cat.framework(f).id for f in c.frameworks]
    vals["precisions"] = [cat.precision(p).id for p in c.precisions]
    vals["max_gpus"] = int(c.max_total_gpus or 0)
    vals["budget"] = int(c.max_usd_per_month or 0)
    hidden = [
        k
        for k in (
            "max_gpus_per_replica",
            "kv_precisions",
            "min_weight_bits",
            "usd_per_gpu_hour",
            "fit_percentile",
            "tps",
            "max_usd_per_hour",
        )
        if k in (data.get("constraints") or {})
    ]
    if "serving" in data:
        hidden.append("serving")
    if hidden:
        notes.append("used from the file (not in the form): " + ", ".join(hidden))
    return vals, notes


def _set_form(vals: dict[str, Any]) -> None:
    for k, v in vals.items():
        st.session_state[k] = v
        _stash()[k] = v


def apply_scenario(data: dict[str, Any], cat: Catalog) -> list[str]:
    """Copy a validated scenario (a loaded YAML) into the form's widgets; returns notes on
    what the form cannot show exactly."""
    from planner.scenario import scenario_from_dict

    sc = scenario_from_dict(data, where="uploaded scenario")
    vals, notes = _form_values(sc, data, cat)
    _set_form(vals)
    return notes


def read_uploaded_scenario(name: str, raw: bytes) -> tuple[dict[str, Any], Any]:
    """An uploaded scenario file read exactly as ``planner recommend FILE`` reads it
    (:func:`planner.scenario.load_scenario`: size and encoding checks, duplicate keys,
    validation); returns the raw mapping and the :class:`~planner.scenario.Scenario`.
    Errors are the CLI's one-line :class:`PlannerError`, naming the file."""
    import tempfile

    from planner.errors import read_text
    from planner.files import load_yaml
    from planner.scenario import scenario_from_dict

    fname = Path(name).name or "scenario.yaml"
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / fname
        p.write_bytes(raw)
        try:
            data = load_yaml(read_text(p, "scenario file", "scenario file"), p)
            if data is None:
                raise PlannerError(f"{p}: empty scenario file")
            sc = scenario_from_dict(data, where=fname)
        except PlannerError as e:
            raise PlannerError(str(e).replace(f"{d}/", "")) from None
    return data, sc


def accept_scenario_upload(name: str, raw: bytes, cat: Catalog) -> str | None:
    """Read an uploaded scenario (the CLI's loader), keep it as the form's base and fill the
    widgets from it; returns the error message, or None."""
    import json

    try:
        data, sc = read_uploaded_scenario(name, raw)
        vals, notes = _form_values(sc, data, cat)
        text = json.dumps(data)
    except PlannerError as e:
        return str(e)
    except (TypeError, ValueError) as e:  # a YAML timestamp or set: not JSON
        return f"{name}: cannot use this scenario: {e}"
    _set_form(vals)
    st.session_state[_BASE] = {
        "name": Path(name).name,
        "json": text,
        "applied": vals,
        "notes": notes,
        "classes": [k.name for k in sc.classes] if sc.classes else [],
    }
    st.session_state.pop(_UPLOAD_ERROR, None)
    return None


def loaded_base() -> dict[str, Any] | None:
    """The uploaded scenario the form starts from (None: the form's defaults)."""
    return st.session_state.get(_BASE)


def forget_scenario() -> None:
    st.session_state.pop(_BASE, None)
    st.session_state.pop(_UPLOAD_ERROR, None)


# form keys -> the scenario's constraint keys they set
_CONSTRAINT_WIDGETS = (
    (("basis",), "price_basis"),
    (("provider",), "providers"),
    (("gpus", "all_gpus"), "gpus"),
    (("frameworks",), "frameworks"),
    (("precisions",), "precisions"),
    (("max_gpus",), "max_total_gpus"),
    (("budget",), "max_usd_per_month"),
    (("headroom",), "headroom"),
)


def _merged(base: dict[str, Any], form: dict[str, Any], search: bool) -> dict[str, Any]:
    """The loaded file with the sections whose widgets were changed taken from the form: an
    unchanged form is the file exactly as the CLI reads it (serving, TP sizes, price
    overrides, fit percentile, request classes, ... included)."""
    import json

    d = json.loads(base["json"])
    cur, applied = _stash(), base["applied"]

    def changed(*keys: str) -> bool:
        return any(k in cur and cur[k] != applied.get(k) for k in keys)

    if changed("model"):
        d["model"] = form["model"]
    if not base.get("classes"):
        wl = dict(d.get("workload") or {})
        fwl = form["workload"]
        if changed("peak_rps", "mean_rps", "daily"):
            tr = {**(wl.get("traffic") or {}), **fwl["traffic"]}
            if "daily_profile" not in fwl["traffic"]:
                tr.pop("daily_profile", None)
            wl["traffic"] = tr
        if changed("preset", "in_mean", "in_p90", "out_mean", "out_p90"):
            for k in ("preset", "input_tokens", "output_tokens"):
                wl.pop(k, None)
            wl.update({k: v for k, v in fwl.items() if k != "traffic"})
        d["workload"] = wl
        if changed("ttft", "tpot_ms", "e2e", "attainment"):
            keep = {
                k: v
                for k, v in (d.get("slo") or {}).items()
                if k not in ("ttft", "tpot", "e2e", "attainment")
            }
            d["slo"] = {**keep, **form["slo"]}
    c, fc = dict(d.get("constraints") or {}), form["constraints"]
    for keys, ck in _CONSTRAINT_WIDGETS:
        if (search or ck == "headroom" or ck in fc) and changed(*keys):
            if ck in fc:
                c[ck] = fc[ck]
            else:
                c.pop(ck, None)
    d["constraints"] = c
    return d


def _providers(cat: Catalog) -> list[str]:
    return sorted({p.provider for p in cat.rental_prices if p.provider})


def model_upload(cat: Catalog) -> None:
    """A config.json uploader that adds the model to this session's catalog."""
    import tempfile

    from planner.catalog import model_from_hf_config

    up = st.file_uploader(
        "Model from a HuggingFace config.json",
        type=["json"],
        key="config_json",
        help="adds the model to this session's catalog (it appears at the end of the list)",
    )
    if up is None:
        return
    name = Path(up.name).stem
    model_id = f"uploaded-{name}" if name != "config" else "uploaded-model"
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "config.json"
        p.write_bytes(up.getvalue())
        try:
            arch = model_from_hf_config(p, model_id=model_id)
        except PlannerError as e:
            st.error(str(e).replace(str(p), up.name))
            return
    js = arch.model_dump_json()
    have = list(st.session_state.get(CUSTOM_MODELS, []))
    if js not in have:
        have = [h for h in have if ModelArch.model_validate_json(h).id != arch.id] + [js]
        try:
            catalog_for((custom_key()[0], custom_key()[1], tuple(have)))
        except (ValidationError, PlannerError) as e:
            st.error(f"{up.name}: {e}")
            return
        st.session_state[CUSTOM_MODELS] = have
        st.session_state["model"] = arch.id
        _stash()["model"] = arch.id
        st.rerun()
    st.caption(f"uploaded: `{arch.id}`")


def scenario_sidebar(cat: Catalog, *, search: bool = True) -> ScenarioForm:
    """The scenario form (sidebar). ``search``: show the objective and constraints."""
    D = SCENARIO_DEFAULTS
    errors: list[tuple[str, str]] = []
    model_ids = [m.id for m in cat.models]
    gpu_ids = [g.id for g in cat.accelerators]
    with st.sidebar:
        st.header("Scenario")
        with st.expander("Load / save scenario (YAML)", expanded=bool(loaded_base())):
            up = st.file_uploader(
                "Load a scenario file (the CLI's YAML, e.g. examples/chat-8b.yaml)",
                type=["yaml", "yml"],
                key="scenario_file",
            )
            pending = st.session_state.pop(UPLOAD, None)  # (name, bytes); tests put it here
            if up is not None and st.session_state.get(_LOADED) != up.file_id:
                st.session_state[_LOADED] = up.file_id
                pending = (up.name, up.getvalue())
            if pending is not None:
                err = accept_scenario_upload(pending[0], pending[1], cat)
                if err is None:
                    st.rerun()
                st.session_state[_UPLOAD_ERROR] = err
            if st.session_state.get(_UPLOAD_ERROR):
                st.error(st.session_state[_UPLOAD_ERROR])
            base = loaded_base()
            if base:
                st.caption(
                    f"loaded **{base['name']}**: every field is used as `planner recommend` "
                    "reads it; a field changed below overrides the file's"
                )
                for n in base["notes"]:
                    st.caption(n)
                if st.button("Forget the loaded file", key="forget_scenario"):
                    forget_scenario()
                    st.rerun()
            save_slot = st.empty()
        model_id = st.selectbox(
            "Model",
            model_ids,
            key="model",
            bind="query-params",
            **_default("model", opts=model_ids, index=_index(model_ids, D["model"])),
        )
        _keep("model", model_id)
        with st.expander("Upload a model (config.json)"):
            model_upload(cat)

        base = loaded_base()
        classes = bool(base and base.get("classes"))
        wl: dict[str, Any] | None = None
        slo: dict[str, Any] | None = None
        if classes:
            with st.expander("Request classes", expanded=True):
                st.markdown(
                    f"**{base['name']}** has request classes "
                    + ", ".join(f"`{n}`" for n in base["classes"])
                    + "; their traffic, lengths and SLOs come from the file (edit it to "
                    "change them). Plan compares one shared pool with a pool per class."
                )
        else:
            with st.expander("Traffic", expanded=True):
                c1, c2 = st.columns(2)
                peak = c1.number_input(
                    "Peak [req/s]",
                    min_value=0.0,
                    step=1.0,
                    key="peak_rps",
                    bind="query-params",
                    help="the busiest rate to plan for (the planning peak is the larger of this "
                    "and the busiest hour of the daily profile)",
                    **_default("peak_rps", value=D["peak_rps"]),
                )
                mean = c2.number_input(
                    "Mean [req/s]",
                    min_value=0.0,
                    step=1.0,
                    key="mean_rps",
                    bind="query-params",
                    help="the day's average (autoscaled cost, kWh per day)",
                    **_default("mean_rps", value=D["mean_rps"]),
                )
                shapes = list(DAILY_SHAPES)
                daily = st.selectbox(
                    "Daily profile",
                    shapes,
                    key="daily",
                    bind="query-params",
                    help="24 hourly multipliers of the mean; the autoscaled cost follows it",
                    **_default("daily", opts=shapes, index=0),
                )
                for name, v in (("Peak", peak), ("Mean", mean)):
                    if not RPS_MIN <= v <= RPS_MAX:  # the CLI's range for --peak-rps/--mean-rps
                        msg = (
                            f"{name} [req/s] must be above 0 and at most {RPS_MAX:,.0f}; "
                            f"got {fmt.num(v)}"
                        )
                        st.error(msg)
                        errors.append(("traffic", msg))
                traffic = {"mean_rps": float(mean), "peak_rps": float(peak)}
                if DAILY_SHAPES[daily] is not None:
                    traffic["daily_profile"] = list(DAILY_SHAPES[daily])
                try:
                    from planner.workload import Traffic

                    if not errors:
                        Traffic.model_validate(traffic)
                except ValidationError as e:
                    st.error(validation_message(e))
                    errors.append(("traffic", validation_message(e)))
                _keep("peak_rps", peak), _keep("mean_rps", mean), _keep("daily", daily)

            with st.expander("Prompt and answer lengths", expanded=True):
                opts = [*PRESET_NAMES, CUSTOM_LENGTHS]
                preset = st.selectbox(
                    "Length preset",
                    opts,
                    key="preset",
                    bind="query-params",
                    help="presets with their sources: docs/workloads; custom: lognormal from the "
                    "mean and the 90th percentile",
                    **_default("preset", opts=opts, index=0),
                )
                _keep("preset", preset)
                wl: dict[str, Any] = {"traffic": traffic}
                if preset == CUSTOM_LENGTHS:
                    c1, c2 = st.columns(2)
                    vals = {}
                    for col, k, label in (
                        (c1, "in_mean", "Prompt mean [tokens]"),
                        (c2, "in_p90", "Prompt p90 [tokens]"),
                        (c1, "out_mean", "Answer mean [tokens]"),
                        (c2, "out_p90", "Answer p90 [tokens]"),
                    ):
                        vals[k] = col.number_input(
                            label,
                            min_value=1,
                            max_value=2_000_000,
                            step=50,
                            key=k,
                            bind="query-params",
                            **_default(k, value=D[k]),
                        )
                        _keep(k, vals[k])
                    wl["input_tokens"] = {
                        "kind": "lognormal",
                        "mean": float(vals["in_mean"]),
                        "p90": float(vals["in_p90"]),
                    }
                    wl["output_tokens"] = {
                        "kind": "lognormal",
                        "mean": float(vals["out_mean"]),
                        "p90": float(vals["out_p90"]),
                    }
                    wl["traffic"] = {**traffic, "arrival": "poisson"}
                else:
                    wl = {"preset": preset, "traffic": traffic}
                try:
                    from planner.workload import Workload

                    Workload.model_validate(wl)
                except ValidationError as e:
                    msg = validation_message(e)
                    if not any(k == "traffic" for k, _ in errors):
                        st.error(msg)
                        errors.append(("lengths", msg))

            with st.expander("Latency targets (SLO)", expanded=True):
                c1, c2 = st.columns(2)
                ttft = c1.number_input(
                    "TTFT P99 [s]",
                    min_value=0.0,
                    max_value=3600.0,
                    step=0.1,
                    key="ttft",
                    bind="query-params",
                    help="time to first token, queueing included; 0 = no target",
                    **_default("ttft", value=D["ttft"]),
                )
                tpot = c2.number_input(
                    "TPOT P99 [ms]",
                    min_value=0,
                    max_value=100_000,
                    step=5,
                    key="tpot_ms",
                    bind="query-params",
                    help="time per output token after the first; 0 = no target",
                    **_default("tpot_ms", value=D["tpot_ms"]),
                )
                e2e = c1.number_input(
                    "E2E P99 [s]",
                    min_value=0.0,
                    max_value=86_400.0,
                    step=1.0,
                    key="e2e",
                    bind="query-params",
                    help="end-to-end latency target; 0 = none",
                    **_default("e2e", value=D["e2e"]),
                )
                att = c2.number_input(
                    "Attainment",
                    min_value=0.5,
                    max_value=1.0,
                    step=0.005,
                    format="%.3f",
                    key="attainment",
                    bind="query-params",
                    help="share of requests that must meet every target at once",
                    **_default("attainment", value=D["attainment"]),
                )
                for k, v in (("ttft", ttft), ("tpot_ms", tpot), ("e2e", e2e), ("attainment", att)):
                    _keep(k, v)
                slo: dict[str, Any] = {"attainment": float(att)}
                if ttft > 0:
                    slo["ttft"] = {"max_s": float(ttft), "percentile": "p99"}
                if tpot > 0:
                    slo["tpot"] = {"max_s": float(tpot) / 1e3, "percentile": "p99"}
                if e2e > 0:
                    slo["e2e"] = {"max_s": float(e2e), "percentile": "p99"}
                if not any(k in slo for k in ("ttft", "tpot", "e2e")):
                    msg = "give at least one latency target (TTFT, TPOT or E2E)"
                    st.error(msg)
                    errors.append(("slo", msg))

        with st.expander("Prices", expanded=search):
            basis = st.selectbox(
                "Price basis",
                BASES,
                key="basis",
                bind="query-params",
                format_func=lambda b: b.replace("_", "-"),
                help="rental kind from data/prices.yaml (median-priced row), or own: the "
                "purchase price amortised with data/ownership.yaml",
                **_default("basis", opts=BASES, index=0),
            )
            provs = [ANY_PROVIDER, *_providers(cat)]
            provider = st.selectbox(
                "Provider",
                provs,
                key="provider",
                bind="query-params",
                **_default("provider", opts=provs, index=0),
            )
            _keep("basis", basis), _keep("provider", provider)
        constraints: dict[str, Any] = {"price_basis": basis}
        if provider != ANY_PROVIDER:
            constraints["providers"] = [provider]

        objective, top_n = D["objective"], D["top_n"]
        headroom = st.session_state.get("headroom", _stash().get("headroom", D["headroom"]))
        if search:
            from planner.recommend import OBJECTIVES
            from planner.recommend.objective import OBJECTIVE_TABLE

            OBJECTIVE_TEXT = {k: v.text for k, v in OBJECTIVE_TABLE.items()}

            with st.expander("Search and constraints", expanded=True):
                objs = list(OBJECTIVES)
                objective = st.selectbox(
                    "Objective",
                    objs,
                    key="objective",
                    bind="query-params",
                    format_func=lambda o: f"{o}: {OBJECTIVE_TEXT.get(o, '')}",
                    **_default("objective", opts=objs, index=_index(objs, D["objective"])),
                )
                all_gpus = st.checkbox(
                    "Whole GPU catalog (slower)",
                    key="all_gpus",
                    bind="query-params",
                    help=f"all {len(gpu_ids)} GPUs instead of the list below",
                    **_default("all_gpus", value=False),
                )
                gpus = st.multiselect(
                    "GPUs",
                    gpu_ids,
                    key="gpus",
                    bind="query-params",
                    disabled=all_gpus,
                    **_default("gpus", default=[g for g in PLAN_GPUS if g in gpu_ids]),
                )
                fws = st.multiselect(
                    "Frameworks (empty: all)",
                    [f.id for f in cat.frameworks],
                    key="frameworks",
                    bind="query-params",
                    **_default("frameworks", default=[]),
                )
                precs = st.multiselect(
                    "Weight precisions (empty: all)",
                    [p.id for p in cat.precisions],
                    key="precisions",
                    bind="query-params",
                    **_default("precisions", default=[]),
                )
                c1, c2 = st.columns(2)
                max_gpus = c1.number_input(
                    "Max GPUs (0: any)",
                    min_value=0,
                    max_value=100_000,
                    step=1,
                    key="max_gpus",
                    bind="query-params",
                    **_default("max_gpus", value=D["max_gpus"]),
                )
                budget = c2.number_input(
                    "Budget [$/month] (0: any)",
                    min_value=0,
                    max_value=10**9,
                    step=1000,
                    key="budget",
                    bind="query-params",
                    **_default("budget", value=D["budget"]),
                )
                headroom = st.slider(
                    "Headroom above the peak",
                    0.0,
                    1.0,
                    step=0.05,
                    key="headroom",
                    bind="query-params",
                    help="spare capacity: the fleet is sized for peak x (1 + headroom)",
                    **_default("headroom", value=D["headroom"]),
                )
                top_n = st.number_input(
                    "Options to rank",
                    min_value=1,
                    max_value=20,
                    step=1,
                    key="top_n",
                    bind="query-params",
                    **_default("top_n", value=D["top_n"]),
                )
                for k, v in (
                    ("objective", objective),
                    ("all_gpus", all_gpus),
                    ("gpus", gpus),
                    ("frameworks", fws),
                    ("precisions", precs),
                    ("max_gpus", max_gpus),
                    ("budget", budget),
                    ("headroom", headroom),
                    ("top_n", top_n),
                ):
                    _keep(k, v)
                if not all_gpus:
                    if not gpus:
                        st.error("choose at least one GPU (or the whole catalog)")
                        errors.append(("gpus", "no GPU chosen"))
                    constraints["gpus"] = list(gpus)
                if fws:
                    constraints["frameworks"] = list(fws)
                if precs:
                    constraints["precisions"] = list(precs)
                if max_gpus:
                    constraints["max_total_gpus"] = int(max_gpus)
                if budget:
                    constraints["max_usd_per_month"] = float(budget)
        constraints["headroom"] = float(headroom)
    import json

    data = {
        "name": "app-scenario",
        "description": "saved from the planner app",
        "model": model_id,
        "workload": wl,
        "slo": slo,
        "constraints": constraints,
    }
    if base:
        data = _merged(base, data, search)
    form = ScenarioForm(json.dumps(data), str(objective), int(top_n), tuple(errors))
    with save_slot:
        st.download_button(
            "Download this scenario (YAML)",
            scenario_yaml(form),
            file_name="scenario.yaml",
            mime="application/x-yaml",
            disabled=not form.ok,
            help="the same format as examples/*.yaml: planner recommend scenario.yaml",
        )
    return form


def scenario_yaml(form: ScenarioForm) -> str:
    import yaml

    head = (
        "# Scenario saved from the planner app; run it with\n"
        f"#   planner recommend scenario.yaml --objective {form.objective} --top {form.top_n}\n"
    )
    return head + yaml.safe_dump(form.data, sort_keys=False)


def build_scenario(key: tuple, scenario_json: str):
    """The validated :class:`planner.scenario.Scenario` (raises PlannerError)."""
    import json

    from planner.scenario import scenario_from_dict

    return scenario_from_dict(json.loads(scenario_json), where="scenario")


def recommend_kwargs(sc: Any) -> dict[str, Any]:
    """The CLI's mapping of a scenario's constraints onto ``recommend``'s keywords."""
    c = sc.constraints
    return {
        "headroom": c.headroom,
        "gpus": c.gpus,
        "frameworks": c.frameworks,
        "precisions": c.precisions,
        "kv_precisions": c.kv_precisions,
        "tps": c.tps,
        "max_gpus_per_replica": c.max_gpus_per_replica,
        "max_total_gpus": c.max_total_gpus,
        "min_weight_bits": c.min_weight_bits,
        "max_usd_per_hour": c.max_usd_per_hour,
        "max_usd_per_month": c.max_usd_per_month,
        "price_basis": c.price_basis,
        "providers": c.providers,
        "usd_per_gpu_hour": dict(c.usd_per_gpu_hour),
        "fit_percentile": c.fit_percentile,
        "engine": sc.serving.kwargs(),
    }


#: rejected options kept per stage for the Plan page's table (the CLI's CSV has all)
REJECTED_SHOWN = 500
REJECTED_COLUMNS = ("gpu", "framework", "precision", "kv_precision", "tp", "pp", "reason")


def _recommend_dict(key: tuple, scenario_json: str, objective: str, top_n: int) -> dict[str, Any]:
    """``planner.recommend.recommend`` for a scenario as the CLI calls it, as a dict, or
    ``{"error"}``; the rejected options are grouped by stage (``rejected_by_stage``: count,
    first :data:`REJECTED_SHOWN` rows), which keeps the cached dict small (a search rejects
    ~2,000 options; their dicts were most of its size)."""
    from planner.recommend import recommend

    cat = catalog_for(key)
    try:
        sc = build_scenario(key, scenario_json)
        res = recommend(
            sc.model,
            sc.workload,
            sc.slo,
            catalog=cat,
            objective=objective,
            top_n=int(top_n),
            **recommend_kwargs(sc),
        )
    except PlannerError as e:
        return {"error": str(e)}
    out = res.as_dict()
    by_stage: dict[str, dict[str, Any]] = {}
    for r in out.pop("rejected"):
        g = by_stage.setdefault(r["stage"], {"n": 0, "rows": []})
        g["n"] += 1
        if len(g["rows"]) < REJECTED_SHOWN:
            g["rows"].append({c: r.get(c) for c in REJECTED_COLUMNS})
    out["rejected_by_stage"] = by_stage
    out["n_rejected"] = sum(g["n"] for g in by_stage.values())
    return out


@st.cache_data(show_spinner=False, max_entries=64)
def _run_recommend(key: tuple, scenario_json: str, objective: str, top_n: int) -> dict[str, Any]:
    if key == _NO_CUSTOM and (scenario_json, objective, int(top_n)) == (
        default_scenario_json(),
        "cost",
        5,
    ):
        return default_plan()  # computed at install or by this server's warm-up
    return _recommend_dict(key, scenario_json, objective, top_n)


def run_recommend(key: tuple, scenario_json: str, objective: str, top_n: int) -> dict[str, Any]:
    """``planner.recommend.recommend`` for the form's scenario as a dict (rejected options
    grouped by stage: :func:`_recommend_dict`), or ``{"error"}``; cached per scenario."""
    return _run_recommend(key, canonical(scenario_json), objective, int(top_n))


@st.cache_data(show_spinner=False, max_entries=16)
def run_classes(key: tuple, scenario_json: str, objective: str, top_n: int) -> dict[str, Any]:
    """``planner.recommend.classes.recommend_classes`` for a request-class scenario (a pool
    per class against one shared pool), with the CLI's arguments; or ``{"error"}``."""
    from planner.recommend.classes import recommend_classes
    from planner.serving import RequestClass

    cat = catalog_for(key)
    try:
        sc = build_scenario(key, scenario_json)
        return recommend_classes(
            sc.model,
            [RequestClass(k.name, k.workload, k.slo) for k in sc.classes],
            catalog=cat,
            constraints=sc.constraints,
            objective=objective,
            top_n=int(top_n),
            engine=sc.serving.kwargs(),
        )
    except PlannerError as e:
        return {"error": str(e)}


def cli_command(form: ScenarioForm, *, per_gpu: bool = False) -> str:
    """The ``planner recommend`` command that answers what the page shows: the loaded file
    when the form is unchanged, else the scenario downloaded from the sidebar."""
    import json

    base = loaded_base()
    same = base is not None and json.loads(base["json"]) == form.data
    path = base["name"] if same else "scenario.yaml"
    cmd = f"planner recommend {path}"
    if form.data.get("classes"):
        return cmd + f" --objective {form.objective} --top {form.top_n}"
    if per_gpu:
        return cmd + f" --per-gpu --objective {form.objective}"
    return cmd + f" --objective {form.objective} --top {form.top_n}"


def command_line(cmd: str) -> None:
    """Show the equivalent CLI command ``cmd`` as inline code (select it to copy).

    Not ``st.code``: a code block makes the browser load and run Streamlit's 1.5 MB syntax
    highlighter on a page's first visit, 0.2-0.5 s of a new server's first Plan page on the
    2-core machine (issue 18, cold first load), for one line of shell."""
    st.markdown(f"`` {cmd} ``" if "`" in cmd else f"`{cmd}`")  # a file name may hold a `


@st.cache_data(show_spinner=False, max_entries=64)
def run_compare(key: tuple, scenario_json: str, objective: str) -> dict[str, Any]:
    """``planner.recommend.compare_gpus`` for the form's scenario, or ``{"error"}``."""
    from planner.recommend import compare_gpus

    cat = catalog_for(key)
    try:
        sc = build_scenario(key, scenario_json)
        kw = recommend_kwargs(sc)
        gpus = kw.pop("gpus")
        return compare_gpus(
            sc.model, sc.workload, sc.slo, catalog=cat, gpus=gpus, objective=objective, **kw
        )
    except PlannerError as e:
        return {"error": str(e)}


def nice_bins(lo: float, hi: float, maxbins: int = 40) -> tuple[float, float, float]:
    """Vega-Lite's bins for values from ``lo`` to ``hi`` with at most ``maxbins`` bins
    (``bin: {maxbins}``): (start, stop, step), as vega-statistics ``bin`` chooses them (base
    10, steps divided by 5 or 2 where that stays within ``maxbins``, start and stop on
    multiples of the step), so a histogram binned here looks as one Vega-Lite would bin."""
    import math

    span = hi - lo
    if not span > 0:
        span = abs(lo) or 1.0
    level = math.ceil(math.log10(maxbins))
    step = 10.0 ** (round(math.log10(span)) - level)
    while math.ceil(span / step) > maxbins:
        step *= 10
    for div in (5, 2):
        if span / (step / div) <= maxbins:
            step /= div
    v = math.log10(step)
    eps = 10.0 ** (-(0 if v >= 0 else int(-v) + 1) - 1)
    start = math.floor(lo / step + eps) * step
    start = start - step if lo < start else start
    stop = math.ceil(hi / step) * step
    return start, (stop if stop > start else start + step), step


@st.cache_data(show_spinner=False, max_entries=64)
def length_histogram(key: tuple, scenario_json: str, n: int = 2000) -> pd.DataFrame:
    """Prompt and answer lengths of ``n`` requests drawn from the workload, binned as
    Vega-Lite would (:func:`nice_bins`, at most 40 bins each): columns ``which`` (prompt /
    answer), ``bin_start`` and ``bin_end`` [tokens], ``count`` [requests]. Binned here, the
    browser draws ~80 bars instead of binning 2 x ``n`` rows itself."""
    sc = build_scenario(key, scenario_json)
    parts = []
    drawn = sc.workload.sample_lengths(n, np.random.default_rng(0))
    for which, x in zip(("prompt", "answer"), drawn, strict=True):
        x = np.asarray(x, dtype=float)
        start, stop, step = nice_bins(float(x.min()), float(x.max()))
        edges = start + step * np.arange(round((stop - start) / step) + 1)
        counts, _ = np.histogram(x, bins=edges)
        parts.append(
            pd.DataFrame(
                {"which": which, "bin_start": edges[:-1], "bin_end": edges[1:], "count": counts}
            )
        )
    return pd.concat(parts, ignore_index=True)


def fmt_money(v: float | None, digits: int = 2) -> str:
    """Dollars for people (:func:`planner.fmt.usd`; ``digits`` is kept for old callers)."""
    from planner import fmt

    return fmt.usd(v)


def gpu_name(cat: Catalog, gpu_id: str) -> str:
    try:
        return cat.gpu(gpu_id).name
    except PlannerError:
        return gpu_id
