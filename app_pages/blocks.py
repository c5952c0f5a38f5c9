"""The app's own HTML: number cards, SVG charts, tables, the metric definitions, the CLI
command line and small formatters."""

from __future__ import annotations

import functools
import html
import json
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from app_pages import tables
from planner import (
    Catalog,
    PlannerError,
    fmt,
)

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
#: every term the pages use, ``(term, definition)`` in Markdown; the Definitions page shows
#: each under a heading whose anchor is :func:`term_anchor` (a link: :func:`term_link`)
GLOSSARY: tuple[tuple[str, str], ...] = (
    ("TTFT", "Time to first token, which includes queueing: from a request's arrival to its first "
     "output token [s]."),
    ("TPOT", "Time per output token after the first: `(E2E - TTFT) / (output tokens - 1)` "
     "[s/token]; a one-token answer meets any TPOT target."),
    ("ITL", "Inter-token latency: the time between two consecutive output tokens of one "
     "request [s]."),
    ("E2E", "End-to-end latency: from a request's arrival to its last output token [s]."),
    ("percentile", "P50 / P90 / P99: the latency that 50 / 90 / 99 % of requests stay under. "
     "A target such as `TTFT P99 1 s` is met when the 99th percentile is at most 1 s."),
    ("SLO", "Service-level objective: the latency targets (TTFT, TPOT, E2E at a percentile) "
     "and the attainment a deployment must reach."),
    ("attainment", "The share of requests that meet every latency target at once (0.99: 99 % "
     "of requests). A replica's capacity is the highest arrival rate whose attainment stays at "
     "or above the target."),
    ("goodput", "Requests per second that met every SLO (the others do not count) "
     "[requests/s]."),
    ("throughput", "Tokens per second, stated per GPU and per replica (one TP x PP group), "
     "output only (`output tok/s`) or input + output (`total tok/s`)."),
    ("planning peak", "The busiest arrival rate the fleet is sized for: the larger of the "
     "Peak field and the busiest hour of the daily profile [req/s]."),
    ("headroom", "Spare capacity above the planning peak: the fleet is sized for peak x "
     "(1 + headroom); 0.2 = 20 % more than the peak."),
    ("mean rate", "The day's average arrival rate [req/s]; $/M output tokens at the planned "
     "traffic and the autoscaled cost use it. The app's Mean follows Peak until you set it, as "
     "`planner recommend --peak-rps` without `--mean-rps` plans a flat day at the peak."),
    ("replica", "One copy of the model served by TP x PP GPUs; the fleet is a number of "
     "replicas."),
    ("TP and PP", "Tensor parallelism (TP: each layer split across GPUs) and pipeline "
     "parallelism (PP: the layers split into stages); a replica has TP x PP GPUs."),
    ("KV cache", "The keys and values of every token a running sequence holds, kept on the "
     "GPU; its size per token is `layers x 2 x KV heads x head size x bytes` (docs/formulas.md)."),
    ("memory utilization", "The fraction of GPU memory the engine may use (vLLM's "
     "`gpu_memory_utilization`); `planner memory` without `--framework` uses 0.9 of the card."),
    ("max concurrent sequences", "How many sequences of the chosen context fit in one GPU's "
     "KV-cache budget, in whole KV blocks."),
    ("memory headroom", "The share of the KV cache left free at the planned load (1 - the "
     "largest KV use seen in the simulation)."),
    ("decode step", "One forward pass producing one token for each of `batch` running "
     "sequences, each holding `context` tokens [ms]."),
    ("prefill", "The forward pass over a prompt's tokens before its first output token."),
    ("knee", "The point of a throughput-latency curve with the most output tokens/s per second "
     "of mean E2E latency (maximum power): past it, latency grows faster than throughput."),
    ("binding constraint", "What limits one replica at the planned load: the latency target it "
     "would miss first with one replica fewer, or, when the fleet is sized by throughput, what "
     "saturates (KV cache full, compute, the batch limit)."),
    ("objective", "What the ranking minimises: `cost` (fleet $/h), `gpus`, `tokens-per-dollar` "
     "and `energy` at full load, or `latency` (P99 E2E among options costing at most the "
     "latency cost cap times the cheapest; docs/recommend.md)."),
    ("tie-break", "Options whose objective values agree within 1 % tie; a tie goes to the lower "
     "fleet $/h, then the fewer GPUs, then more bits per weight, then the nearer evidence "
     "(provenance), then the higher tested rate. Latency does not break a tie, so the "
     "recommendation can sit off the cost / latency front of its chart (the Plan page says "
     "why when it does)."),
    ("Pareto front", "The options no other option beats on both cost ($/M output tokens) and "
     "P99 E2E latency."),
    ("error band", "The range of a prediction given the calibration's measured error (about 80 "
     "% of held-out measurements fall inside): GPUs and $/M output tokens from band low to band "
     "high."),
    ("robustness", "Whether the winner stays the winner: `robust`; `depends on price` (another "
     "GPU wins at a price inside its price rows' spread); `within model uncertainty` (the error "
     "bands of the winner and another option overlap, so the model cannot tell them apart)."),
    ("provenance", "Where a time estimate's efficiency parameters come from: `fit` (fitted to "
     "measurements of this framework, GPU and precision), `transferred from ...` (no such "
     "measurements: the nearest measured relative is used, e.g. the same GPU in another "
     "precision, the same vendor and framework, or all data; the label names it; wider error "
     "band) or `prior` (no calibration profile). The Accuracy page shows each."),
    ("tested rate", "A rate per replica that was simulated and met the SLO [req/s per "
     "replica]; the fleet is the planning peak x (1 + headroom) divided by it, rounded up."),
    ("$/M output tokens", "Fleet dollars per million output tokens at the planned (mean) "
     "traffic with a fixed fleet; `full load`: at the capacity the fleet is sized for."),
    ("autoscaled cost", "The fleet's monthly cost when the replica count follows the daily "
     "profile hour by hour instead of staying sized for the peak."),
    ("price basis", "Which price rows are used: on-demand, reserved, spot, serverless, "
     "community (rented, median-priced row of `data/prices.yaml`) or own (purchase price "
     "amortised with `data/ownership.yaml`)."),
    ("units", "Decimal GB (1 GB = 1e9 bytes), kB = 1e3 bytes; FLOPS are dense (no structured "
     "sparsity); times in seconds or milliseconds as labelled."),
)  # fmt: skip


def term_anchor(term: str) -> str:
    """The anchor of ``term``'s heading on the Definitions page (Streamlit's heading slug:
    lower case, spaces to ``-``; ``$`` and ``/`` dropped)."""
    return re.sub(r"[^a-z0-9 -]", "", term.lower()).strip().replace(" ", "-")


#: the Definitions page's URL path, relative (so it works under a server's base path)
DEFINITIONS_PAGE = "definitions"


def term_link(term: str, shown: str | None = None) -> str:
    """A Markdown link to ``term`` on the Definitions page (``term`` must be in
    :data:`GLOSSARY`; ``tests/app`` checks every link)."""
    return f"[{shown or term}]({DEFINITIONS_PAGE}#{term_anchor(term)})"


def link_terms_html(escaped: str, terms: tuple[str, ...]) -> str:
    """HTML text ``escaped`` (already escaped) with the first mention of each of ``terms`` a
    link to its definition (:func:`term_link`), opened in a new tab."""
    for term in terms:
        m = re.search(rf"\b{re.escape(html.escape(term))}\b", escaped)
        if m:
            a = f'<a href="{DEFINITIONS_PAGE}#{term_anchor(term)}" target="_blank">{m.group(0)}</a>'
            escaped = escaped[: m.start()] + a + escaped[m.end() :]
    return escaped


DEFINITIONS_MD = "\n".join(f"- **{term}**: {text}" for term, text in GLOSSARY)


def glossary_md() -> str:
    """The Definitions page's text: each term a heading (its anchor: :func:`term_anchor`)."""
    return "\n\n".join(f"##### {md(term)}\n{md(text)}" for term, text in GLOSSARY)


def md(text: str) -> str:
    """``text`` for Streamlit's Markdown (``st.markdown``, ``st.caption``, ``st.error``, a
    heading...) with every ``$`` escaped: Streamlit renders what lies between two ``$`` of one
    paragraph as LaTeX (a price line with two prices; the class verdict of
    ``examples/mixed-70b.yaml``)."""
    return re.sub(r"(?<!\\)\$", r"\\$", text)


def definitions_expander() -> None:
    with st.expander("Definitions of the terms used (glossary)"):
        st.markdown(md(DEFINITIONS_MD))


def fmt_money(v: float | None, digits: int = 2) -> str:
    """Dollars for people (:func:`planner.fmt.usd`; ``digits`` is kept for old callers)."""
    return fmt.usd(v)


def gpu_name(cat: Catalog, gpu_id: str) -> str:
    try:
        return cat.gpu(gpu_id).name
    except PlannerError:
        return gpu_id


# --------------------------------------------------------------------------- options
def option_label(r: dict) -> str:
    kv = f" kv {r['kv_precision']}" if r.get("kv_precision") else ""
    plain = f"TP{r['tp']}" + (f" PP{r['pp']}" if r.get("pp", 1) > 1 else "")
    lay = r.get("layout") or plain  # DEP8, TP8 EP8, TP16 (2 nodes): planner's own name
    return f"{r['gpu']} {r['framework']} {r['precision']}{kv} {lay}"


def dominated_note(
    recs: list[dict], objective: str, objective_text: str, cat: Catalog | None = None
) -> str | None:
    """Why the recommendation (#1) is not on the cost / latency front of its own chart: the
    first option at most as costly per output token and at most as slow (P99 E2E), better on
    one, and the rule that ranked #1 first anyway: the objective, or, for ``cost``, the
    ranking's tie-break (:func:`planner.recommend.objective.sort_key`: the same
    :data:`~planner.recommend.objective.TIE_REL` log bucket of fleet $/h, then the lower $/h,
    the fewer GPUs, more bits per weight (``cat``'s precisions), the nearer evidence, the
    higher tested rate). None when #1 is on the front."""
    import math

    from planner.catalog.profile import TIERS, provenance_tier
    from planner.recommend.objective import TIE_REL

    win = recs[0]
    c0, l0 = win["usd_per_mtok_output"], win["e2e_p99_s"]
    better = [
        r
        for r in recs[1:]
        if r["usd_per_mtok_output"] <= c0 and r["e2e_p99_s"] <= l0
        and (r["usd_per_mtok_output"] < c0 or r["e2e_p99_s"] < l0)
    ]  # fmt: skip
    if not better:
        return None
    d, k = better[0], f"#{better[0]['rank']}"
    head = (
        f"Why #1 is not on the front: {k} ({option_label(d)}) costs "
        f"{fmt.usd(d['usd_per_mtok_output'])} per million output tokens at a P99 E2E of "
        f"{d['e2e_p99_s']:.2f} s, #1 {fmt.usd(c0)} at {l0:.2f} s. "
    )
    if objective != "cost":
        return (
            head + f"The ranking is by the objective ({objective_text}), not by this chart's axes."
        )
    a, b = win["usd_per_hour"], d["usd_per_hour"]

    def bucket(v: float) -> int:
        return round(math.log(v) / math.log1p(TIE_REL))

    if bucket(a) != bucket(b):
        return (
            head + f"On the objective, fleet $/h, #1 costs {fmt.usd(a)}/h and {k} {fmt.usd(b)}/h."
        )

    def evidence(r: dict) -> int:
        try:
            return TIERS.index(provenance_tier(str(r.get("provenance", ""))))
        except PlannerError:
            return len(TIERS)

    def bits(r: dict) -> float | None:
        try:
            return cat.precision(r["precision"]).weight_bits if cat is not None else None
        except PlannerError:
            return None

    steps = (  # (what decides, #1's value, the other's, the better is the lower)
        ("the lower fleet $/h", a, b, True),
        ("the fewer GPUs", win["num_gpus"], d["num_gpus"], True),
        ("more bits per weight", bits(win), bits(d), False),
        ("the nearer evidence (fit, then transferred from nearer relatives, then prior)",
         evidence(win), evidence(d), True),
        ("the higher tested rate per replica", win.get("max_rate_per_replica"),
         d.get("max_rate_per_replica"), False),
    )  # fmt: skip
    decided = next(
        (s for s in steps if s[1] is not None and s[2] is not None and s[1] != s[2]), None
    )
    rule = (
        f"On the objective, fleet $/h, they tie ({fmt.usd(a)}/h and {fmt.usd(b)}/h, within "
        f"{TIE_REL:.0%}); a tie goes to the lower fleet $/h, then the fewer GPUs, then more bits "
        "per weight, then the nearer evidence, then the higher tested rate"
    )
    if decided is None:
        why = "; here every tie-break is equal, and the search's order decides"
    elif decided[0].startswith("the nearer"):
        why = f": here {decided[0]}: #1 {win.get('provenance')}; {k} {d.get('provenance')}"
    else:
        why = f": here {decided[0]} (#1: {decided[1]:,.4g}, {k}: {decided[2]:,.4g})"
    return head + rule + why + f". Latency does not break a tie ({term_link('tie-break')})."
