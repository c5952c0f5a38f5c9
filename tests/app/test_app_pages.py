"""Every app page through ``streamlit.testing`` (no browser): values shown equal planner's.

Expected numbers are computed through ``planner`` in the test; one is also checked by hand.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

from planner import (  # noqa: E402
    decode_step,
    load_catalog,
    model_family,
    plan_memory,
    predict_file,
    step_model,
)

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TIMEOUT = 60


MEMORY = "app_pages/memory.py"


def _app(page: str = MEMORY, state: dict | None = None, **query: str) -> AppTest:
    """The app on ``page`` (Plan is the landing page; most tests start elsewhere), with
    URL query parameters and session_state values set before the first run."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    for k, v in (state or {}).items():
        at.session_state[k] = v
    if page:
        at.switch_page(page)
    return at.run()


def _metrics(at: AppTest) -> dict[str, str]:
    """Label -> value of every number on the page: ``st.metric`` cards and the app's own
    HTML cards (``widgets.cards``)."""
    from app_pages.widgets import cards_of

    out = {m.label: m.value for m in at.metric}
    for h in at.get("html"):
        out.update(cards_of(h.value))
    return out


def _num(text: str) -> float:
    return float(re.sub(r"[^0-9.\-]", "", text))


def _charts(at: AppTest) -> list[tuple[dict, list[pd.DataFrame]]]:
    """(spec, datasets) of every altair chart on the page."""
    out = []
    for el in at.get("vega_lite_chart"):
        frames = [pa.ipc.open_stream(d.data.data).read_pandas() for d in el.proto.datasets]
        out.append((json.loads(el.proto.spec), frames))
    return out


def _svgs(at: AppTest) -> list[ET.Element]:
    """Every SVG chart on the page (``app_pages.svg`` via ``widgets.svg_chart``: one
    ``st.html`` element each, whose script inserts the SVG), parsed."""
    from app_pages.widgets import svg_of

    out = []
    for el in at.get("html"):
        if el.proto.body.startswith('<div class="pl-chart">'):
            out += ET.fromstring(f"<div>{svg_of(el.proto.body)}</div>").iter(SVG_NS + "svg")
    return out


def _tables(at: AppTest) -> list:
    """Every result table on the page (``app_pages.tables`` via ``widgets.table``: one
    ``st.html`` element each), read back from its HTML: ``.shown`` (the text of each cell),
    ``.values`` (the raw numbers of its ``data-v``, ``None`` where missing, else the text)
    and ``.help`` (header tooltips)."""
    from app_pages.tables import WRAP_CLASS, parse_tables

    out = []
    for el in at.get("html"):
        if el.proto.body.startswith(f'<div class="{WRAP_CLASS}"'):
            out += parse_tables(el.proto.body)
    return out


SVG_NS = "{http://www.w3.org/2000/svg}"


def _all(el: ET.Element, tag: str, cls: str | None = None) -> list[ET.Element]:
    return [e for e in el.iter(SVG_NS + tag) if cls is None or e.get("class") == cls]


def _texts(el: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in _all(el, "text")]


def _tips(el: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in _all(el, "title")]


def _unescaped_dollars(at: AppTest) -> list[str]:
    """The Markdown texts of the page with a `$` not escaped as `\\$` (Streamlit draws what
    lies between two of them as LaTeX)."""
    els = [*at.markdown, *at.caption, *at.subheader, *at.title, *at.error, *at.info,
           *at.warning, *at.success]  # fmt: skip
    return [e.value for e in els if re.search(r"(?<!\\)\$", str(e.value))]


def _no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


# --------------------------------------------------------------------------- memory page
def test_memory_default_view_matches_planner():
    at = _app()
    _no_exception(at)
    s = {sb.key: sb.value for sb in at.selectbox}
    # the README's opening question with `planner memory`'s defaults: no framework
    assert (s["model"], s["gpu"], s["precision"], s["framework"], s["tp"]) == (
        "llama-3.1-70b",
        "nvidia-h100-sxm",
        "fp8",
        "(none)",
        2,
    )
    util = at.slider[0].value
    assert util == pytest.approx(0.9)  # `planner memory`'s default without --framework
    plan = plan_memory("llama-3.1-70b", "nvidia-h100-sxm", "fp8", tp=2, context_len=8192)
    m = _metrics(at)
    assert int(_num(m["Max concurrent sequences"])) == plan.max_concurrent_sequences
    assert m["Weights per GPU"] == f"{plan.weight_bytes_per_gpu / 1e9:.1f} GB"
    assert any(plan.reason in x.value and "fits:" in x.value for x in at.success)
    # the memory bar (SVG): planner's weights, KV of the sequences that fit, the card's line
    bar = _svgs(at)[0]
    segs = {e.get("data-part"): e for e in _all(bar, "rect", "seg")}
    assert segs["weights"].find(SVG_NS + "title").text == (
        f"weights: {plan.weight_bytes_per_gpu / 1e9:,.2f} GB"
    )
    kv_gb = plan.max_concurrent_sequences * plan.kv_bytes_per_sequence / 1e9
    assert f"KV cache (max sequences): {kv_gb:,.2f} GB" in _tips(bar)
    cap = plan.gpu_memory_bytes / 1e9
    assert f"card: {cap:.1f} GB" in _texts(bar) and "memory per GPU [GB]" in _texts(bar)
    # the segments' widths are their sizes on one scale: weights / KV = their GB ratio
    w_px, kv_px = (float(segs[k].get("width")) for k in ("weights", "KV cache (max sequences)"))
    assert w_px / kv_px == pytest.approx(plan.weight_bytes_per_gpu / 1e9 / kv_gb, rel=0.01)


def test_memory_readme_example_29_sequences_and_hand_checked_kv():
    """README: llama-3.1-70b fp8 on 2 x H100 SXM, 8k context, no framework (0.9) -> 29: the
    page's default view, as `planner memory` answers it."""
    at = _app()
    _no_exception(at)
    assert at.slider[0].value == pytest.approx(0.9)
    plan = plan_memory("llama-3.1-70b", "nvidia-h100-sxm", "fp8", tp=2, context_len=8192)
    m = _metrics(at)
    # by hand: 0.9 x 81,559 MiB (the H100 as nvidia-smi reports it, 85,520,809,984 B)
    # = 76,968,728,985.6 B, less 36,329,504,768 B fp8 weights and 887,750,656 B activations
    # per GPU = 39,751,473,561.6 B; one 8,192-token sequence holds 8,192 x 163,840 B
    # = 1,342,177,280 B of bf16 KV -> 29.6 -> 29 sequences
    assert plan.weight_bytes_per_gpu == 36_329_504_768
    assert plan.activation_bytes_per_gpu == 887_750_656
    assert (
        plan.max_concurrent_sequences
        == int((0.9 * 81_559 * 2**20 - 36_329_504_768 - 887_750_656) // (8192 * 163_840))
        == 29
    )
    assert m["Max concurrent sequences"] == "29"
    # by hand: 80 layers x 2 (K, V) x 8 KV heads / TP 2 x 128 head_dim x 2 bytes (bf16 KV)
    assert 80 * 2 * (8 // 2) * 128 * 2 == 163_840
    assert m["KV cache per token"] == "163.8 kB"


def test_memory_curve_stops_at_the_memory_limit():
    at = _app(framework="vllm")
    _no_exception(at)
    limit = int(_num(_metrics(at)["Max concurrent sequences"]))
    assert not _charts(at)
    bar, step_chart, tok_chart = _svgs(at)  # memory bar, decode time, tokens/s
    for chart in (step_chart, tok_chart):
        # the last point's tooltip is the limit; the red line and its text are at it
        tips = [p.find(SVG_NS + "title").text for p in _all(chart, "circle", "pt")]
        assert tips[0].startswith("batch: 1\n") and tips[-1].startswith(f"batch: {limit:,}\n")
        assert f"memory limit: {limit:,} sequences" in _texts(chart)
        (rule,) = _all(chart, "line", "vrule")
        assert float(rule.get("x1")) == pytest.approx(_curve_points(chart)[-1][0], abs=0.1)
        texts = _texts(chart)
        assert "batch [concurrent sequences]" in texts  # axis titles with units
        assert any(re.search(r"\[.+\]", t) and t != "batch [concurrent sequences]" for t in texts)
    # the value at the limit is planner's decode step
    util = at.slider[0].value
    cat = load_catalog()
    # the page resolves the parameters of the model's family (a dense model: the dense fit)
    # at the newest vLLM release with a fit on Hopper at fp8, as the CLI does (issue 31)
    from planner.catalog.release_profile import resolve_release_params

    family = model_family(cat.model("llama-3.1-70b"))
    assert family == "dense"
    params, _, choice = resolve_release_params(
        "nvidia-h100-sxm", "vllm", "fp8", None, catalog=cat, family=family
    )
    assert choice is not None and choice.used is not None  # a release node, named
    # the page's KV default: vLLM with an fp8 checkpoint -> fp8 KV (the memory plan's too)
    sm = step_model("llama-3.1-70b", "nvidia-h100-sxm", "fp8", "fp8", 2, 1, params, cat)
    t_ms = float(np.asarray(decode_step(sm, limit, 8192).time_s)) * 1e3
    shown = _metrics(at)[f"Decode step at batch {limit}"]
    assert shown == f"{t_ms:.1f} ms"
    assert util > 0


def test_memory_context_change_updates_the_limit_and_the_url():
    at = _app()
    at.number_input(key="context").set_value(32768).run()
    _no_exception(at)
    plan = plan_memory(
        "llama-3.1-70b",
        "nvidia-h100-sxm",
        "fp8",
        tp=2,
        context_len=32768,
        memory_utilization=at.slider[0].value,
    )
    assert int(_num(_metrics(at)["Max concurrent sequences"])) == plan.max_concurrent_sequences
    assert plan.max_concurrent_sequences < 29  # 8k context: 29 (README); 32k holds fewer


def test_memory_query_params_reproduce_the_view():
    at = _app(model="llama-3.1-8b", gpu="nvidia-h200-sxm", precision="bf16", tp="1", context="4096")
    _no_exception(at)
    assert at.selectbox(key="model").value == "llama-3.1-8b"
    assert at.selectbox(key="gpu").value == "nvidia-h200-sxm"
    assert at.selectbox(key="tp").value == 1
    assert at.number_input(key="context").value == 4096
    plan = plan_memory(
        "llama-3.1-8b",
        "nvidia-h200-sxm",
        "bf16",
        tp=1,
        context_len=4096,
        memory_utilization=at.slider[0].value,
    )
    assert int(_num(_metrics(at)["Max concurrent sequences"])) == plan.max_concurrent_sequences


def test_memory_does_not_fit_shows_reason_and_suggestions_and_no_curve():
    at = _app(model="llama-3.1-405b", tp="1")
    _no_exception(at)
    plan = plan_memory(
        "llama-3.1-405b",
        "nvidia-h100-sxm",
        "fp8",
        tp=1,
        context_len=8192,
        memory_utilization=at.slider[0].value,
    )
    assert not plan.fits
    assert any(plan.reason in e.value and "does not fit:" in e.value for e in at.error)
    text = " ".join(md.value for md in at.markdown)
    for sug in plan.suggestions:
        assert sug in text
    assert len(_svgs(at)) == 1 and not _charts(at)  # the memory bar only: no decode curve
    assert not any(label.startswith("Decode step at batch") for label in _metrics(at))
    assert any("No curve" in i.value for i in at.info)


def test_memory_gpu_without_memory_size_says_so():
    at = _app(gpu="nvidia-h200-nvl")
    _no_exception(at)
    gpu = load_catalog().gpu("nvidia-h200-nvl")
    assert gpu.memory_gb is None
    assert any("memory size not in the catalog" in e.value for e in at.error)
    assert any(gpu.source in md.value for md in at.markdown)
    assert not at.metric


def test_memory_unsupported_precision_is_an_inline_error():
    at = _app(model="llama-3.1-8b", gpu="amd-mi300x", precision="int4-awq", tp="1")
    _no_exception(at)
    msg = "precision int4-awq is not supported on amd-mi300x"
    assert any(msg in e.value for e in at.sidebar.error)  # next to the widgets
    assert any(msg in e.value for e in at.main.error)
    assert not at.metric and not _charts(at) and not _svgs(at)


# --------------------------------------------------------------------------- catalog page
def test_catalog_tables_list_every_entry_with_sources():
    at = _app()
    at.switch_page("app_pages/catalog.py").run()
    _no_exception(at)
    cat = load_catalog()
    gpus = at.dataframe[0].value
    assert list(gpus["id"]) == [g.id for g in cat.accelerators]
    assert {"source", "as_of", "memory_gb"} <= set(gpus.columns)
    h100 = gpus.set_index("id").loc["nvidia-h100-sxm"]
    assert h100["memory_gb"] == 80
    frames = [d.value for d in at.dataframe]
    assert any(len(f) == len(cat.rental_prices) and "usd_h" in f.columns for f in frames)
    assert any(len(f) == len(cat.purchase_prices) and "usd" in f.columns for f in frames)
    assert any(len(f) == len(cat.models) and "params_total_b" in f.columns for f in frames)


def test_catalog_custom_gpu_is_validated_and_used_by_memory_page():
    at = _app()
    at.switch_page("app_pages/catalog.py").run()
    # invalid: negative memory -> inline error naming the field, nothing added
    at.text_input(key="cg_id").input("my-gpu")
    at.text_input(key="cg_src").input("vendor quote 2026")
    at.number_input(key="cg_mem").set_value(-5.0)
    at.button[0].click().run()  # first button: the GPU form's submit
    _no_exception(at)
    assert any("memory_gb" in e.value and "greater than 0" in e.value for e in at.error)
    assert "my-gpu" not in list(at.dataframe[0].value["id"])
    # valid
    at.number_input(key="cg_mem").set_value(141.0)
    at.number_input(key="cg_bw").set_value(4800.0)
    at.number_input(key="cg_bf16").set_value(989.0)
    at.number_input(key="cg_fp8").set_value(1979.0)
    at.button[0].click().run()
    _no_exception(at)
    assert "my-gpu" in list(at.dataframe[0].value["id"])
    assert any("Added GPU `my-gpu`" in s.value for s in at.success)
    # duplicate id -> inline error
    at.button[0].click().run()
    _no_exception(at)
    assert any("duplicate" in e.value for e in at.error)
    # the Memory page plans on it, with the same numbers planner gives on a 141 GB card: the
    # form names no memory type, so "141 GB" counts as 141e9 B (not the H200's 143,771 MiB)
    at.switch_page("app_pages/memory.py").run()
    at.selectbox(key="gpu").select("my-gpu").run()
    _no_exception(at)
    h200 = load_catalog().gpu("nvidia-h200-sxm")
    same = h200.model_copy(update={"memory_mib": None, "memory_type": None})
    assert same.memory_bytes == 141e9
    ref = plan_memory(
        "llama-3.1-70b",
        same,  # same memory size and arch as the custom entry
        "fp8",
        tp=2,
        context_len=8192,
        memory_utilization=at.slider[0].value,
    )
    assert int(_num(_metrics(at)["Max concurrent sequences"])) == ref.max_concurrent_sequences


def test_catalog_custom_price_validated():
    at = _app()
    at.switch_page("app_pages/catalog.py").run()
    n_before = len(load_catalog().rental_prices)
    at.selectbox(key="cp_gpu").select("nvidia-h100-sxm")
    at.text_input(key="cp_provider").input("my cloud")
    at.text_input(key="cp_src").input("x")  # too short: source needs >= 3 characters
    at.number_input(key="cp_usd").set_value(2.5)
    at.button[1].click().run()
    _no_exception(at)
    assert any("source" in e.value for e in at.error)
    at.text_input(key="cp_src").input("quote from my cloud, 2026-11")
    at.button[1].click().run()
    _no_exception(at)
    rental = next(d.value for d in at.dataframe if "usd_h" in d.value.columns)
    assert len(rental) == n_before + 1
    assert rental.iloc[-1]["provider"] == "my cloud"
    assert rental.iloc[-1]["usd_h"] == pytest.approx(2.5)


# --------------------------------------------------------------------------- accuracy page
def test_accuracy_tables_from_the_report():
    at = _app()
    at.switch_page("app_pages/accuracy.py").run()
    _no_exception(at)
    frames = [d.value for d in at.dataframe]
    by_source = next(f for f in frames if "source" in f.columns)
    text = (ROOT / "docs/accuracy.md").read_text(encoding="utf-8")
    row = by_source.iloc[0]
    assert f"| {row['source']} | {int(row['n'])} | {row['mdape_pct']}" in text
    assert any({"framework", "gpu"} <= set(f.columns) for f in frames)


def test_accuracy_scatter_on_demand():
    at = _app()
    at.switch_page("app_pages/accuracy.py").run()
    assert not _charts(at)
    at.button(key="acc_go").click().run()
    _no_exception(at)
    at.selectbox(key="acc_metric").select("decode_step_s [s]").run()
    _no_exception(at)
    rows, _ = predict_file(ROOT / "data/benchmarks/pytorch_h200.csv")
    n_decode = sum(
        1
        for r in rows
        if r["metric"] == "decode_step_s" and r["predicted"] not in ("", None) and r["unit"] == "s"
    )
    assert any(f"{n_decode:,} rows" in c.value for c in at.caption)
    assert not _charts(at)
    (chart,) = _svgs(at)
    assert len(_all(chart, "circle", "pt")) == n_decode  # a point per row
    texts = _texts(chart)
    assert "measured [s]" in texts and "predicted [s]" in texts
    assert _all(chart, "line", "diag") and _all(chart, "polygon", "band")
    # log axes: the tick labels are 1-2-5 x 10^k or powers of ten, none in exponent form
    ticks = [t.text for t in _all(chart, "text", "tk")]
    assert ticks and all(re.fullmatch(r"[0-9.,]+", t) for t in ticks)
    vals = [float(t.replace(",", "")) for t in ticks]
    assert {round(v / 10 ** np.floor(np.log10(v)), 6) for v in vals} <= {1, 2, 5}


# --------------------------------------------------------------------------- definitions
def test_definitions_page():
    at = _app()
    at.switch_page("app_pages/definitions.py").run()
    _no_exception(at)
    text = " ".join(md.value for md in at.markdown)
    assert "TTFT" in text and "includes queueing" in text
    assert "TPOT" in text and "after the first" in text
    for term in ("goodput", "ITL", "E2E", "attainment", "headroom", "binding constraint",
                 "knee", "robustness", "provenance", "transferred from"):  # fmt: skip
        assert term in text, term


# --------------------------------------------------------------------------- plan page
PLAN = "app_pages/plan.py"
SMALL = {  # a small search: one framework and precision, two GPUs
    "gpus": ["nvidia-h100-sxm", "nvidia-l40s"],
    "frameworks": ["vllm"],
    "precisions": ["fp8"],
}


def _workload(peak: float = 10.0, mean: float | None = None, preset: str = "chat"):
    """The app's default workload at ``peak``; the mean follows the peak unless given, as the
    app's Mean does and as `planner recommend --peak-rps R` without --mean-rps plans."""
    from planner.workload import SLO, Workload

    mean = peak if mean is None else mean
    wl = Workload.model_validate(
        {"preset": preset, "traffic": {"mean_rps": mean, "peak_rps": peak}}
    )
    slo = SLO.model_validate(
        {
            "ttft": {"max_s": 1.0, "percentile": "p99"},
            "tpot": {"max_s": 0.05, "percentile": "p99"},
            "attainment": 0.99,
        }
    )
    return wl, slo


def _recommend(peak: float = 10.0, **kw):
    from planner.recommend import recommend

    wl, slo = _workload(peak)
    args = {"gpus": tuple(SMALL["gpus"]), "frameworks": ("vllm",), "precisions": ("fp8",)}
    args.update(kw)
    return recommend("llama-3.1-8b", wl, slo, catalog=load_catalog(), headroom=0.2, **args)


def _money(v: float) -> str:
    """Dollars as the app shows them: planner.fmt.usd (its rules: tests/test_fmt.py)."""
    from planner import fmt

    return fmt.usd(v)


def test_plan_is_the_landing_page_and_matches_recommend():
    at = _app(page=None, state=dict(SMALL), model="llama-3.1-8b")
    _no_exception(at)
    assert at.title[0].value.startswith("Plan")
    res = _recommend()
    win = res.recommendations[0]
    m = _metrics(at)
    assert m["GPUs"] == str(win["num_gpus"])
    assert m["$/M output tokens"] == _money(win["usd_per_mtok_output"])
    assert m["Fleet [$/month]"] == _money(win["usd_per_month"])
    # the uncertainty line: the winner's fleet band from the CLI's numbers, never "1 to 1"
    unc = [c.value for c in at.caption if c.value.startswith("Uncertainty")]
    lo, hi = win["num_gpus_low"], win["num_gpus_high"]
    if lo != hi:
        assert f"**{lo:,} to {hi:,} GPUs**" in unc[0]
    else:
        assert f"**{lo:,} GPU{'' if lo == 1 else 's'}** at both ends of the band" in unc[0]
    head = [s.value for s in at.subheader if s.value.startswith("Recommended")][0]
    gpu_name = load_catalog().gpu(win["gpu"]).name
    assert f"{win['num_gpus']} x {gpu_name}" in head
    assert not at.dataframe  # no data grid on the Plan page (issue 18): an HTML table
    ranked = _tables(at)[0]
    table = ranked.values
    assert list(table["GPU"]) == [r["gpu"] for r in res.recommendations]
    assert list(table["GPUs"]) == [r["num_gpus"] for r in res.recommendations]
    assert table["$/M output tokens"].tolist() == pytest.approx(
        [r["usd_per_mtok_output"] for r in res.recommendations]
    )
    assert table["TTFT P99 [ms]"].tolist() == pytest.approx(
        [r["ttft_p99_s"] * 1e3 for r in res.recommendations]
    )
    assert "provenance" in table.columns and "calibrated" in ranked.help["provenance"]
    # the text shown: planner.fmt, as the metrics above; the raw value under each
    assert ranked.shown["$/M output tokens"].tolist() == [
        _money(r["usd_per_mtok_output"]) for r in res.recommendations
    ]
    assert ranked.shown["fleet [$/month]"].tolist() == [
        _money(r["usd_per_month"]) for r in res.recommendations
    ]
    assert ranked.shown["TPOT P99 [ms]"].tolist() == [
        f"{r['tpot_p99_s'] * 1e3:,.1f}" for r in res.recommendations
    ]
    assert table["fleet [$/h]"].tolist() == [r["usd_per_hour"] for r in res.recommendations]
    # the why, the binding constraint and the price source of the winner
    assert not _unescaped_dollars(at)  # prices as text, not LaTeX between two `$`
    md = " ".join(x.value for x in at.markdown).replace("\\$", "$")
    assert res.why in md and win["binding_constraint"] in md and win["price_provider"] in md
    # the charts: the two length histograms, then the Pareto chart (SVG, no Vega-Lite)
    assert not _charts(at)
    prompt, answer, pareto = _svgs(at)
    assert "prompt [tokens]" in _texts(prompt) and "answer [tokens]" in _texts(answer)
    # the Pareto chart: a point per option, units on both axes, the winner highlighted
    recs = res.recommendations
    pts = _all(pareto, "circle", "pt") + _all(pareto, "polygon", "pt")
    assert len(pts) == len(recs)
    (diamond,) = _all(pareto, "polygon", "pt")
    tip = diamond.find(SVG_NS + "title").text
    assert tip.startswith("option: #1 ") and f"${win['usd_per_mtok_output']:.4f}" in tip
    labels = {t.text: t.get("fill") for t in _all(pareto, "text", "pl")}
    assert labels["#1"] == "#d62728"  # the winner's label, red
    texts = _texts(pareto)
    assert "P99 end-to-end latency [s]" in texts and "cost [$ per million output tokens]" in texts
    banded = [r for r in recs if r.get("usd_per_mtok_output_low") is not None]
    assert len(_all(pareto, "g", "err")) == len(banded)
    # rejected options grouped by stage, in a collapsed expander
    exp = [e for e in at.expander if e.label.startswith("Rejected options")]
    assert exp and f"({len(res.rejected):,})" in exp[0].label
    assert len(_tables(at)) == 1  # the rejected tables are built once the expander opens
    at.session_state["rej_open"] = True
    at.run()
    _no_exception(at)
    _, stages, rejected = _tables(at)
    by_stage: dict[str, list] = {}
    for r in res.rejected:
        by_stage.setdefault(r["stage"], []).append(r)
    assert dict(zip(stages.values["stage"], stages.values["options"], strict=True)) == {
        k: len(v) for k, v in by_stage.items()
    }
    first = sorted(by_stage)[0]  # the stage the selectbox shows first
    assert rejected.values["reason"].tolist() == [r["reason"] for r in by_stage[first][:500]]
    assert rejected.shown.columns.tolist()[:2] == ["GPU", "framework"]


def test_the_default_form_is_the_precomputed_default_scenario(monkeypatch):
    """The landing page with an untouched form asks for exactly the scenario that
    ``scripts/warm_up.py`` precomputes (widgets.default_scenario_json), and shows that answer."""
    import threading

    import streamlit as st

    from app_pages import widgets as w

    answer = w._recommend_dict(w._NO_CUSTOM, w.default_scenario_json(), "cost", 5)
    asked = []

    def fake_default_plan() -> dict:
        if threading.current_thread().name != "planner-warm-up":
            asked.append(1)
        return answer

    from app_pages import runs

    monkeypatch.setattr(runs, "default_plan", fake_default_plan)
    st.cache_data.clear()
    at = _app(page=None)
    _no_exception(at)
    assert asked, "the default form did not match default_scenario_json()"
    win = answer["recommendations"][0]
    m = _metrics(at)
    assert m["GPUs"] == str(win["num_gpus"])
    assert m["$/M output tokens"] == _money(win["usd_per_mtok_output"])
    # the answer is recommend()'s for the same scenario file, rejected options only regrouped
    assert sum(g["n"] for g in answer["rejected_by_stage"].values()) == answer["n_rejected"]


def test_plan_peak_change_resizes_the_fleet_like_recommend():
    at = _app(page=None, state=dict(SMALL), model="llama-3.1-8b")
    at.number_input(key="peak_rps").set_value(60.0).run()
    _no_exception(at)
    win = _recommend(60.0).recommendations[0]
    m = _metrics(at)
    assert m["GPUs"] == str(win["num_gpus"]) and int(m["GPUs"]) > 1
    assert m["$/M output tokens"] == _money(win["usd_per_mtok_output"])


def test_plan_scenario_yaml_is_the_cli_format():
    from app_pages import widgets as w
    from planner.scenario import scenario_from_dict

    at = _app(page=None, state=dict(SMALL), model="llama-3.1-8b")
    _no_exception(at)
    labels = [b.label for b in at.get("download_button")]
    assert {"Results (CSV)", "Report (Markdown)", "Scenario (YAML)"} <= set(labels)
    form = w.ScenarioForm(
        json.dumps(
            {
                "model": "llama-3.1-8b",
                "workload": {"preset": "chat", "traffic": {"mean_rps": 4.0, "peak_rps": 10.0}},
                "slo": {"ttft": {"max_s": 1.0}, "attainment": 0.99},
                "constraints": {"gpus": SMALL["gpus"], "headroom": 0.2},
            }
        ),
        "cost",
        5,
        (),
    )
    import yaml

    sc = scenario_from_dict(yaml.safe_load(w.scenario_yaml(form)))
    assert sc.model == "llama-3.1-8b" and sc.constraints.gpus == tuple(SMALL["gpus"])
    assert sc.workload.traffic.peak() == 10.0


def test_plan_without_latency_target_is_an_inline_error():
    at = _app(page=None, state={**SMALL, "ttft": 0.0, "tpot_ms": 0}, model="llama-3.1-8b")
    _no_exception(at)
    assert any("at least one latency target" in e.value for e in at.error)
    assert not _tables(at) and not at.dataframe  # no search ran


def test_plan_impossible_target_says_why_without_a_traceback():
    at = _app(page=None, state={**SMALL, "tpot_ms": 1}, model="llama-3.1-8b")
    _no_exception(at)
    assert (
        at.error
        and "no option meets" in at.error[0].value.lower()
        or any("TPOT" in e.value for e in at.error)
    )


# --------------------------------------------------------------------------- compare page
def test_compare_gpus_matches_compare_gpus():
    from planner.recommend import compare_gpus

    at = _app(page="app_pages/compare.py", state=dict(SMALL), model="llama-3.1-8b")
    _no_exception(at)
    wl, slo = _workload()
    res = compare_gpus(
        "llama-3.1-8b",
        wl,
        slo,
        catalog=load_catalog(),
        gpus=tuple(SMALL["gpus"]),
        frameworks=("vllm",),
        precisions=("fp8",),
        headroom=0.2,
    )
    assert not at.dataframe  # no data grid on the Compare page (issue 18): an HTML table
    side = _tables(at)[0]
    df = side.values
    assert list(df["GPU"]) == [r["gpu"] for r in res["rows"]]
    assert df["output tok/s per GPU"].tolist() == pytest.approx(
        [r["output_tok_s_per_gpu"] for r in res["rows"]]
    )
    assert df["$/M output tokens"].tolist() == pytest.approx(
        [r["usd_per_mtok_output"] for r in res["rows"]]
    )
    assert df["GPUs needed"].tolist() == [r["num_gpus"] for r in res["rows"]]
    for col in (
        "output tokens per $",
        "energy [J/output token]",
        "memory headroom [%]",
        "provenance",
    ):
        assert col in df.columns
    assert side.shown["$/M output tokens"].tolist() == [
        _money(r["usd_per_mtok_output"]) for r in res["rows"]
    ]
    assert side.shown["output tokens per $"].tolist() == [
        f"{r['output_tokens_per_usd']:,.0f}" for r in res["rows"]
    ]
    assert "provenance" in side.help
    m = _metrics(at)
    assert m["$/M output tokens"] == _money(res["rows"][0]["usd_per_mtok_output"])
    assert not _charts(at)
    cost, speed = _svgs(at)  # $/M tokens and tok/s per GPU by GPU (SVG)
    rows = res["rows"]
    for chart, field, title, best in (
        (cost, "usd_per_mtok_output", "$ per million output tokens", min),
        (speed, "output_tok_s_per_gpu", "output tokens/s per GPU", max),
    ):
        assert title in _texts(chart)
        bars = _all(chart, "rect", "bar")
        assert len(bars) == len(rows)
        # best first, red; the bars' lengths are the values on one scale from 0
        ordered = sorted(rows, key=lambda r: r[field], reverse=best is max)
        names = [load_catalog().gpu(r["gpu"]).name for r in ordered]
        assert [b.find(SVG_NS + "title").text.split("\n")[0] for b in bars] == [
            f"GPU: {n}" for n in names
        ]
        assert bars[0].get("fill") == "#d62728"
        widths = [float(b.get("width")) for b in bars]
        if ordered[-1][field] > 0:
            assert widths[0] / widths[-1] == pytest.approx(
                ordered[0][field] / ordered[-1][field], rel=0.02
            )
        banded = [r for r in rows if r.get(f"{field}_low") is not None] if field[0] == "u" else [
            r for r in rows if (r.get("error_band") or {}).get("low_ratio")
        ]  # fmt: skip
        assert len(_all(chart, "line", "err")) == len(banded)


def test_compare_lists_unanswerable_gpus_with_reason():
    state = {**SMALL, "gpus": ["nvidia-h100-sxm", "nvidia-rtx-3090"], "tpot_ms": 8}
    at = _app(page="app_pages/compare.py", state=state, model="llama-3.1-8b")
    _no_exception(at)
    un = [t.values for t in _tables(at) if "reason" in t.values.columns]
    assert un and "nvidia-rtx-3090" in set(un[0]["GPU"])
    assert all(isinstance(r, str) and r for r in un[0]["reason"])


# --------------------------------------------------------------------------- what-if page
WHAT_IF = "app_pages/what_if.py"


CARD = re.compile(
    r'<div class="pl-card"><div class="pl-l">(?P<label>.*?)(?:<abbr title="(?P<tip>[^"]*)">\?</abbr>)?'
    r'</div><div class="pl-v" style="font-size:[^"]*">(?P<value>.*?)</div>'
    r'(?:<div class="pl-d" style="color:(?P<colour>#[0-9a-f]{6});[^"]*">[^<]*'
    r'<span class="pl-dv">(?P<delta>.*?)</span></div>)?</div>'
)


@dataclass(frozen=True)
class Card:
    label: str
    value: str
    delta: str | None
    colour: str | None
    tip: str | None


def _what_if_out(at: AppTest) -> str:
    """The HTML of the What-if page's one output element (cards, notes, memory bar, curve)."""
    from app_pages.widgets import svg_of

    (out,) = [
        svg_of(h.value)
        for h in at.get("html")
        if h.value.startswith('<div class="pl-chart">') and "pl-out" in h.value
    ]
    return out


def _cards(at: AppTest) -> dict[str, Card]:
    """The What-if page's ten numbers (part of the page's one output element): label -> Card."""
    from html import unescape

    els = [x for x in [_what_if_out(at)] if 'class="pl-cards"' in x]
    if not els:
        return {}
    assert len(els) == 1
    out = {}
    for c in CARD.finditer(els[0]):
        g = {k: (unescape(v) if v is not None else None) for k, v in c.groupdict().items()}
        out[g["label"]] = Card(**g)
    assert els[0].count('class="pl-card"') == len(out) == 10  # every card parsed
    return out


def test_what_if_values_and_baseline_delta_after_tp_change():
    at = _app(page=WHAT_IF, model="llama-3.1-70b")
    _no_exception(at)
    m2 = {k: c.value for k, c in _cards(at).items()}
    p2 = plan_memory("llama-3.1-70b", "nvidia-h100-sxm", "fp8", tp=2, context_len=8192, framework="vllm")  # fmt: skip
    assert m2["Sequences that fit"] == f"{p2.max_concurrent_sequences:,}"
    at.button[0].click().run()  # pin as baseline
    _no_exception(at)
    at.select_slider(key="wi_tp").set_value(4).run()
    _no_exception(at)
    p4 = plan_memory("llama-3.1-70b", "nvidia-h100-sxm", "fp8", tp=4, context_len=8192, framework="vllm")  # fmt: skip
    by = _cards(at)
    assert by["Sequences that fit"].value == f"{p4.max_concurrent_sequences:,}"
    d = p4.max_concurrent_sequences - p2.max_concurrent_sequences
    assert by["Sequences that fit"].delta == f"+{d:,}"
    # more sequences is better: green; more GPUs or dollars is worse: red, fewer green
    assert by["Sequences that fit"].colour == "#09ab3b"
    for label in ("GPUs needed", "Fleet [$/month]"):
        c = by[label]
        if c.delta and c.delta[0] in "+-":
            assert c.colour == ("#ff2b2b" if c.delta[0] == "+" else "#09ab3b"), c
    # every metric shows its delta; GPUs needed per replica doubles with TP
    assert all(x.delta for x in by.values() if x.value != "-")
    assert by["GPUs needed"].value != m2["GPUs needed"] or by["GPUs needed"].delta
    assert "full-context sequences" in by["Sequences that fit"].tip


def test_what_if_clear_baseline_drops_every_delta_in_the_same_run():
    at = _app(page=WHAT_IF, model="llama-3.1-70b")
    at.button(key="wi_pin").click().run()
    _no_exception(at)
    assert any("Baseline:" in m.value for m in at.markdown)
    assert "Deltas against the baseline: nvidia-h100-sxm" in _what_if_out(at)
    assert [b.label for b in at.button] == ["Pin as baseline", "Clear baseline"]
    # pinned now: every shown number has a zero delta against itself, in grey
    cards = _cards(at).values()
    assert all(x.delta and x.colour == "#808495" for x in cards if x.value != "-")
    at.button(key="wi_clear").click().run()
    _no_exception(at)
    assert not any(x.delta for x in _cards(at).values())
    assert not any("Baseline:" in m.value for m in at.markdown)
    assert "Deltas against the baseline" not in _what_if_out(at)
    assert [b.label for b in at.button] == ["Pin as baseline"]


def _what_if_curve(cat) -> list[dict]:
    """The curve the What-if page simulates by default for llama-3.1-8b: H100, vLLM, fp8, TP 2,
    the parameters of the model family's fit, the page's KV default (vLLM with an fp8
    checkpoint -> fp8 KV) and the engine's own max_num_seqs on an H100 (1,024); the curve
    of `planner capacity` (its request counts, CURVE_REQUESTS, seed 0)."""
    from planner.serving import throughput_latency_curve
    from planner.serving.answer import CURVE_REQUESTS

    rep, wl, slo = _what_if_replica(cat)
    return throughput_latency_curve(
        rep, wl, slo=slo, rng=np.random.default_rng(0), **CURVE_REQUESTS
    )


def _what_if_replica(cat):
    """(replica, workload, SLO) of the What-if page's default for llama-3.1-8b (above)."""
    from planner.catalog import model_family
    from planner.catalog.release_profile import resolve_release_params
    from planner.serving import build_replica

    wl, slo = _workload()
    # the newest vLLM release with a fit on Hopper at fp8, as the page and the CLI take it
    params, prov, _ = resolve_release_params(
        "nvidia-h100-sxm", "vllm", "fp8", None, catalog=cat,
        family=model_family(cat.model("llama-3.1-8b")),
    )  # fmt: skip
    rep = build_replica(
        "llama-3.1-8b", "nvidia-h100-sxm", "fp8", "vllm", tp=2, kv_precision="fp8",
        params=params, params_source=prov, catalog=cat, max_num_seqs=1024, context_len=8192,
    )  # fmt: skip
    return rep, wl, slo


def _curve_points(chart: ET.Element) -> list[tuple[float, float]]:
    """(x, y) [px] of the points of a line chart's polyline."""
    (line,) = _all(chart, "polyline", "line")
    return [tuple(map(float, p.split(","))) for p in line.get("points").split()]


def test_what_if_curve_plots_the_simulated_percentiles_in_ms():
    at = _app(page=WHAT_IF, model="llama-3.1-8b")
    _no_exception(at)
    rows = sorted(_what_if_curve(load_catalog()), key=lambda r: r["output_tok_s_per_gpu"])
    bar, chart = _svgs(at)  # memory bar, then the curve
    assert chart.get("role") == "img" and "log scale" in chart.get("aria-label")
    # one point per simulated concurrency, in the order of tok/s per GPU, its tooltip the
    # simulated TPOT P99 [s] x 1000 -> [ms]
    pts = _all(chart, "circle", "pt")
    assert len(pts) == len(rows) == len(_curve_points(chart))
    for r, p in zip(rows, pts, strict=True):
        tip = p.find(SVG_NS + "title").text
        assert f"concurrent clients: {r['concurrency']:,}" in tip
        assert f"TPOT P99 [ms]: {r['tpot_p99_s'] * 1e3:,.1f}" in tip
        assert f"tok/s per GPU: {r['output_tok_s_per_gpu']:,.0f}" in tip
    # a log y axis: equal ratios are equal distances (pixels from the points' latencies)
    xy = _curve_points(chart)
    (i, j), k = (0, len(rows) - 1), len(rows) // 2
    ms = [r["tpot_p99_s"] * 1e3 for r in rows]
    import math

    frac = (xy[k][1] - xy[i][1]) / (xy[j][1] - xy[i][1])
    assert frac == pytest.approx(math.log(ms[k] / ms[i]) / math.log(ms[j] / ms[i]), abs=0.01)
    k = next(r for r in rows if r["is_knee"])
    assert f"knee: {k['concurrency']} clients" in _texts(chart)
    assert len(_all(chart, "polygon", "hl")) == 1  # the knee's diamond
    assert "SLO: 50 ms" in _texts(chart) and len(_all(chart, "line", "hrule")) == 1
    assert _all(chart, "polygon", "band")  # the error band
    at.radio(key="wi_axis").set_value("TTFT P99").run()
    _no_exception(at)
    chart = _svgs(at)[1]
    assert "TTFT P99 [ms] (log scale)" in _texts(chart)
    tips = [p.find(SVG_NS + "title").text for p in _all(chart, "circle", "pt")]
    assert [t.split("TTFT P99 [ms]: ")[1].split("\n")[0] for t in tips] == [
        f"{r['ttft_p99_s'] * 1e3:,.1f}" for r in rows
    ]


def test_what_if_charts_follow_a_gpu_change():
    at = _app(page=WHAT_IF, model="llama-3.1-70b")
    before = [ET.tostring(c) for c in _svgs(at)]
    at.selectbox(key="wi_gpu").select("nvidia-h200-sxm").run()
    _no_exception(at)
    assert "<h3>Memory of one NVIDIA H200" in _what_if_out(at)
    after = _svgs(at)
    assert len(after) == len(before) == 2
    assert all(ET.tostring(a) != b for a, b in zip(after, before, strict=True))
    for chart in after:
        assert chart.get("aria-label")  # the chart's description for screen readers
    cap = load_catalog().gpu("nvidia-h200-sxm")
    assert any(t.startswith("card: ") for t in _tips(after[0])), cap.id


def test_what_if_max_num_seqs_defaults_to_the_engines_own_on_that_gpu():
    # vLLM V1 (arg_utils.py, 0.11.0): 1024 sequences on >= 70 GiB GPUs other than A100s
    # (an H100 SXM has 81,559 MiB), 256 on an A100; the same default recommend and capacity use
    at = _app(page=WHAT_IF, model="llama-3.1-70b")
    _no_exception(at)
    assert at.select_slider(key="wi_seqs").value == 1024
    at = _app(page=WHAT_IF, model="llama-3.1-70b", wi_gpu="nvidia-a100-80gb-sxm")
    _no_exception(at)
    assert at.select_slider(key="wi_seqs").value == 256


def test_what_if_tok_s_per_gpu_and_cost_come_from_the_deployments_answer():
    """GPUs needed and output tok/s per GPU are the deployment's answer (issue 32: the numbers
    of planner capacity, simulate and recommend), not the closed-loop curve's best point."""
    from planner.cost import quote_price
    from planner.serving.answer import answer_for_deployment

    at = _app(page=WHAT_IF, model="llama-3.1-8b")
    _no_exception(at)
    cat = load_catalog()
    rep, wl, slo = _what_if_replica(cat)
    ans = answer_for_deployment(rep, wl, slo, headroom=0.2, seed=0, fit_percentile=None)
    m = {k: c.value for k, c in _cards(at).items()}
    # tok/s per GPU at the max rate: rate x mean answer / GPUs per replica (2)
    tok_s = ans.max_rate_rps * wl.mean_output_tokens() / 2
    assert m["Output tok/s per GPU"] == f"{tok_s:,.0f}"
    assert m["GPUs needed"] == f"{ans.num_gpus:,.0f}"
    assert m["TTFT P99 [ms]"] == f"{ans.at_planned['ttft_p99_s'] * 1e3:,.0f}"
    usd = quote_price(cat, "nvidia-h100-sxm", "on_demand").usd_per_gpu_hour
    full = usd / (tok_s * 3600) * 1e6
    assert m["$/M tokens, full load"] == f"${full:,.3f}"
    n_gpus = int(m["GPUs needed"])
    planned = usd * n_gpus / (wl.mean_output_tokens() * wl.traffic.base_mean_rps() * 3600) * 1e6
    assert m["$/M output tokens"] == f"${planned:,.3f}"
    assert m["Fleet [$/month]"] == f"${usd * n_gpus * 730:,.0f}"
    chart = _svgs(at)[1]  # memory bar, then the curve
    assert len(_all(chart, "polygon", "hl")) == 1  # one knee
    texts = _texts(chart)
    assert "output tokens/s per GPU" in texts and "TPOT P99 [ms] (log scale)" in texts
    assert "SLO: 50 ms" in texts


def _load_example_then_render():
    """AppTest script: load examples/chat-8b.yaml into the form, then render the form."""
    import json as _json
    from pathlib import Path as _Path

    import streamlit as st
    import yaml as _yaml

    from app_pages import widgets as w

    cat = w.session_catalog()
    if "_loaded_once" not in st.session_state:
        st.session_state["_loaded_once"] = True
        data = _yaml.safe_load(_Path("examples/chat-8b.yaml").read_text())
        st.session_state["_notes"] = w.apply_scenario(data, cat)
    form = w.scenario_sidebar(cat)
    st.code(_json.dumps(form.data), language="json")


def test_a_loaded_scenario_fills_the_form_and_saves_the_same_workload(monkeypatch):
    from planner.scenario import load_scenario

    monkeypatch.chdir(ROOT)
    at = AppTest.from_function(_load_example_then_render, default_timeout=TIMEOUT)
    at.run()
    _no_exception(at)
    data = json.loads(at.code[0].value)
    from planner.scenario import scenario_from_dict

    got = scenario_from_dict(data)
    ref = load_scenario(ROOT / "examples" / "chat-8b.yaml")
    assert got.model == ref.model == "llama-3.1-8b"
    assert got.workload.traffic.peak() == ref.workload.traffic.peak()
    assert got.workload.traffic.daily_profile == ref.workload.traffic.daily_profile
    assert got.workload.mean_input_tokens() == pytest.approx(ref.workload.mean_input_tokens())
    assert got.slo.tpot.max_s == pytest.approx(ref.slo.tpot.max_s)
    assert got.constraints.headroom == ref.constraints.headroom
