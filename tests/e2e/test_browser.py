"""The app in a real browser: ``streamlit run app.py`` on 127.0.0.1, driven by Playwright
with Debian's chromium (``/usr/bin/chromium``; Playwright's own browser download is never used).

Skips (with the reason) only when chromium or the playwright package is missing; ``.ci/run``
installs chromium. Screenshots go to a temporary folder, or to ``$APP_SHOTS_DIR`` if set.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from app_pages.tables import parse_tables
from planner import fmt, load_catalog, plan_memory

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 20_000


def _chromium() -> str:
    path = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if not path:
        pytest.skip(
            "chromium not installed (apt-get install chromium; .ci/run does this): "
            "browser test skipped"
        )
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, timeout_s: float = 60.0) -> subprocess.Popen:
    """``streamlit run app.py`` headless on 127.0.0.1:port; returns once /_stcore/health is ok."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{out[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.2)
    stop_server(proc)
    raise RuntimeError(f"streamlit did not become healthy within {timeout_s:.0f} s")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    if proc.stdout:
        proc.stdout.close()


@pytest.fixture(scope="module")
def server():
    pytest.importorskip(
        "playwright.sync_api", reason="playwright not installed: pip install playwright"
    )
    _chromium()
    port = _free_port()
    proc = start_server(port)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_server(proc)


@pytest.fixture()
def shots(tmp_path) -> Path:
    d = Path(os.environ.get("APP_SHOTS_DIR") or tmp_path / "shots")
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    exe = _chromium()
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


# --------------------------------------------------------------------------- helpers
def metric_value(page, label: str) -> str:
    m = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    return m.locator('[data-testid="stMetricValue"]').inner_text().strip()


def card_value(page, label: str) -> str:
    """The value of the number card ``label`` (``widgets.cards``: Plan, Compare, What-if)."""
    return page.locator(".pl-card").filter(has_text=label).first.locator(".pl-v").inner_text()


def wait_until(read, expected, what: str) -> None:
    """Until ``read()`` returns ``expected`` (a read that fails while the element re-renders
    counts as not yet), at most WAIT_MS."""
    deadline, last = time.monotonic() + WAIT_MS / 1000, None
    while time.monotonic() < deadline:
        try:
            last = read()
        except Exception:  # element re-rendering
            last = None
        if last == expected:
            return
        time.sleep(0.1)
    raise AssertionError(f"{what}: expected {expected!r}, last seen {last!r}")


def wait_metric(page, label: str, expected: str, value=metric_value) -> None:
    wait_until(lambda: value(page, label).strip(), expected, f"metric {label!r}")


CHART = ".pl-chart svg"  # the app's SVG charts (app_pages/svg.py via widgets.svg_chart)
TABLE = ".pl-tw table tbody tr"  # the app's result tables (app_pages/tables.py via widgets.table)


def wait_idle(page) -> None:
    """Until Streamlit's 'running' indicator is gone and the charts are on the page."""
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=WAIT_MS)
    page.wait_for_selector(CHART, timeout=WAIT_MS)


def chart_marks(chart, selector: str) -> int:
    """How many marks ``selector`` (e.g. ``rect.bar``) the SVG chart ``chart`` draws."""
    return chart.locator(selector).count()


def pick(page, label: str, option: str) -> None:
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=label).first
    box.locator("input").click()
    box.locator("input").fill(option)
    page.locator('[role="option"]').filter(has_text=option).first.click()


def expected_max_seqs(**kw) -> str:
    plan = plan_memory(
        kw.get("model", "llama-3.1-70b"),
        kw.get("gpu", "nvidia-h100-sxm"),
        kw.get("precision", "fp8"),
        tp=kw.get("tp", 2),
        context_len=kw.get("context", 8192),
        # the page's defaults are `planner memory`'s: no framework, 0.9 of the card
    )
    return f"{plan.max_concurrent_sequences:,}"


# --------------------------------------------------------------------------- tests
def test_memory_page_in_a_browser(server, browser, shots):
    page = browser.new_page(viewport={"width": 1500, "height": 1700})
    try:
        page.goto(f"{server}/memory", wait_until="domcontentloaded", timeout=WAIT_MS)
        page.wait_for_selector(".pl-card", timeout=WAIT_MS)
        wait_idle(page)
        wait_metric(page, "Max concurrent sequences", expected_max_seqs(), card_value)
        assert expected_max_seqs() == "29"  # the README's opening question
        page.screenshot(path=str(shots / "memory_default.png"), full_page=True)
        charts = page.locator(CHART)
        assert charts.count() == 3  # memory bar, decode step, tokens/s
        limit = expected_max_seqs()
        assert (
            charts.nth(1).locator("text", has_text=f"memory limit: {limit} sequences").count() == 1
        )
        assert chart_marks(charts.nth(0), "rect.seg") >= 4  # weights, activations, ..., KV
        before = charts.nth(1).inner_html()

        # number input: context 8192 -> 32768
        ctx = page.locator('input[aria-label="Context per sequence [tokens]"]')
        ctx.fill("32768")
        ctx.press("Enter")
        wait_metric(page, "Max concurrent sequences", expected_max_seqs(context=32768), card_value)
        wait_idle(page)
        limit = expected_max_seqs(context=32768)
        chart = page.locator(CHART).nth(1)
        chart.locator("text", has_text=f"memory limit: {limit} sequences").wait_for(timeout=WAIT_MS)
        assert chart.inner_html() != before, "the decode chart did not change with the context"
        assert "context=32768" in page.url
        page.screenshot(path=str(shots / "memory_context_32k.png"), full_page=True)

        # selectbox: GPU -> H200 SXM
        pick(page, "GPU", "nvidia-h200-sxm")
        wait_metric(
            page,
            "Max concurrent sequences",
            expected_max_seqs(gpu="nvidia-h200-sxm", context=32768),
            card_value,
        )
        assert "gpu=nvidia-h200-sxm" in page.url
        wait_idle(page)
        page.screenshot(path=str(shots / "memory_h200.png"), full_page=True)

        # does not fit: the reason and suggestions, no decode curve
        pick(page, "Model", "llama-3.1-405b")
        page.get_by_text("does not fit:", exact=False).first.wait_for(timeout=WAIT_MS)
        page.get_by_text("What would fit", exact=False).first.wait_for(timeout=WAIT_MS)
        page.get_by_text("No curve", exact=False).first.wait_for(timeout=WAIT_MS)
        page.screenshot(path=str(shots / "memory_does_not_fit.png"), full_page=True)

        # unknown memory size: a message, not an empty page
        pick(page, "GPU", "nvidia-h200-nvl")
        page.get_by_text("memory size not in the catalog", exact=False).first.wait_for(
            timeout=WAIT_MS
        )
        page.screenshot(path=str(shots / "memory_unknown_gpu.png"), full_page=True)
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        page.close()


def test_memory_cards_keep_their_values_whole_at_800_px(server, browser, shots):
    """Issue 33: at 800 px the page's number cards cut their values; each value now fits its
    card (the text shrinks to the card's width: widgets.value_size)."""
    page = browser.new_page(viewport={"width": 800, "height": 1200})
    try:
        page.goto(f"{server}/memory", wait_until="domcontentloaded", timeout=WAIT_MS)
        page.wait_for_selector(".pl-card", timeout=WAIT_MS)
        wait_idle(page)
        cut = page.locator(".pl-v").evaluate_all(
            "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"
        )
        assert page.locator(".pl-v").count() >= 4 and not cut, cut
        page.screenshot(path=str(shots / "memory_800px.png"), full_page=True)
    finally:
        page.close()


def test_other_pages_in_a_browser(server, browser, shots):
    page = browser.new_page(viewport={"width": 1500, "height": 1700})
    try:
        page.goto(f"{server}/catalog", wait_until="domcontentloaded", timeout=WAIT_MS)
        page.wait_for_selector('[data-testid="stDataFrame"]', timeout=WAIT_MS)
        page.screenshot(path=str(shots / "catalog.png"), full_page=True)
        page.goto(f"{server}/accuracy", wait_until="domcontentloaded", timeout=WAIT_MS)
        page.wait_for_selector('[data-testid="stDataFrame"]', timeout=WAIT_MS)
        page.get_by_role("tab", name="Predicted vs measured (chart)").click()
        page.get_by_role("button", name="Compute predictions").click()
        page.wait_for_selector(CHART, timeout=60_000)
        assert page.locator(CHART).first.locator("circle.pt").count() > 10  # a point per row
        page.get_by_text("grey band", exact=False).first.wait_for(timeout=WAIT_MS)
        page.screenshot(path=str(shots / "accuracy_scatter.png"), full_page=True)
        page.goto(f"{server}/definitions", wait_until="domcontentloaded", timeout=WAIT_MS)
        page.get_by_text("includes queueing", exact=False).first.wait_for(timeout=WAIT_MS)
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        page.close()


# --------------------------------------------------------------------------- plan, what-if, compare
SMALL_QUERY = (
    "model=llama-3.1-8b&gpus=nvidia-h100-sxm&gpus=nvidia-l40s&frameworks=vllm&precisions=fp8"
)
SEARCH_MS = 120_000


def expected_plan(peak: float = 10.0, preset: str = "chat") -> dict:
    """The winner of :func:`expected_recs`."""
    return expected_recs(peak, preset)[0]


def expected_recs(peak: float = 10.0, preset: str = "chat") -> list[dict]:
    from planner.recommend import recommend
    from planner.workload import SLO, Workload

    # the app's Mean follows Peak (as `planner recommend --peak-rps` alone plans a flat day)
    wl = Workload.model_validate(
        {"preset": preset, "traffic": {"mean_rps": peak, "peak_rps": peak}}
    )
    slo = SLO.model_validate({"ttft": {"max_s": 1.0}, "tpot": {"max_s": 0.05}, "attainment": 0.99})
    res = recommend(
        "llama-3.1-8b",
        wl,
        slo,
        catalog=load_catalog(),
        gpus=("nvidia-h100-sxm", "nvidia-l40s"),
        frameworks=("vllm",),
        precisions=("fp8",),
        headroom=0.2,
    )
    return res.recommendations


def wait_plan(page) -> None:
    """Until the search is done and the table and the Pareto chart are drawn."""
    page.get_by_text("Ranked options", exact=True).first.wait_for(timeout=SEARCH_MS)
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=SEARCH_MS)
    page.wait_for_selector(TABLE, timeout=WAIT_MS)
    page.wait_for_selector(CHART, timeout=WAIT_MS)


def plan_table(page):
    """The ranked options as the page shows them (app_pages/tables.py), read from its HTML:
    ``.shown`` the text of each cell, ``.values`` the raw numbers (``data-v``)."""
    return parse_tables(page.locator(".pl-tw").first.evaluate("e => e.outerHTML"))[0]


def wait_table(page, recs: list[dict]) -> None:
    """Until the ranked options on the page are ``recs`` (GPU and GPU count, in order)."""

    def read() -> list[tuple]:
        v = plan_table(page).values
        return list(zip(v["GPU"], v["GPUs"], strict=True))

    wait_until(read, [(r["gpu"], r["num_gpus"]) for r in recs], "ranked options")


def pareto_chart(page):
    return page.locator('.pl-chart svg[data-chart="scatter"]')


def test_plan_page_in_a_browser(server, browser, shots):
    page = browser.new_page(viewport={"width": 1500, "height": 2400})
    try:
        page.goto(f"{server}/?{SMALL_QUERY}", wait_until="domcontentloaded", timeout=WAIT_MS)
        wait_plan(page)
        win = expected_plan()
        wait_metric(page, "GPUs", str(win["num_gpus"]), card_value)
        assert page.get_by_text("Plan: which GPUs", exact=False).count() >= 1
        page.screenshot(path=str(shots / "plan_default.png"), full_page=True)
        recs = expected_recs()
        wait_table(page, recs)
        table0, chart0 = plan_table(page), pareto_chart(page).inner_html()
        assert table0.shown["$/M output tokens"].tolist() == [
            fmt.usd(r["usd_per_mtok_output"]) for r in recs
        ]
        # a click on a header sorts (numbers on their raw value), a second click reverses
        head = page.locator(".pl-tw th").filter(has_text=re.compile(r"^TTFT P99 \[ms\]$"))
        head.click()
        ttft = sorted(r["ttft_p99_s"] * 1e3 for r in recs)
        assert plan_table(page).values["TTFT P99 [ms]"].tolist() == pytest.approx(ttft)
        assert head.get_attribute("aria-sort") == "ascending"
        head.click()
        assert plan_table(page).values["TTFT P99 [ms]"].tolist() == pytest.approx(ttft[::-1])
        # nothing cut: the box scrolls sideways to the last column, whose text is whole
        box = page.locator(".pl-tw").first
        assert box.evaluate("e => e.scrollWidth > e.clientWidth")
        last = box.locator("tbody tr").first.locator("td").last
        assert last.evaluate("e => e.scrollWidth <= e.clientWidth")
        assert page.locator('.pl-chart svg[data-chart="histogram"]').count() == 2
        # one point per ranked option; the winner's red "#1" is inside the chart
        assert chart_marks(pareto_chart(page), ".pt") == len(expected_recs())
        assert pareto_chart(page).locator("text.pl", has_text=re.compile(r"^#1(,|$)")).count() == 1

        # number input: peak 10 -> 60 req/s: more GPUs, a new table and chart
        peak = page.locator('input[aria-label="Peak [req/s]"]')
        peak.fill("60")
        peak.press("Enter")
        win60 = expected_plan(60.0)
        assert win60["num_gpus"] != win["num_gpus"]
        wait_metric(page, "GPUs", str(win60["num_gpus"]), card_value)
        wait_plan(page)
        assert "peak_rps=60" in page.url
        wait_table(page, expected_recs(60.0))
        table1, chart1 = plan_table(page), pareto_chart(page).inner_html()
        assert not table1.shown.equals(table0.shown), "the table did not change with the peak"
        assert chart1 != chart0, "the Pareto chart did not change with the peak"
        page.screenshot(path=str(shots / "plan_peak_60.png"), full_page=True)

        # selectbox: length preset chat -> rag
        pick(page, "Length preset", "rag")
        win_rag = expected_plan(60.0, "rag")
        wait_metric(page, "GPUs", str(win_rag["num_gpus"]), card_value)
        page.get_by_text("prompt: mean 4,000", exact=False).first.wait_for(timeout=WAIT_MS)
        wait_plan(page)
        assert "preset=rag" in page.url
        wait_table(page, expected_recs(60.0, "rag"))
        table2 = plan_table(page)
        assert not table2.shown.equals(table1.shown), "the table did not change with the preset"
        page.screenshot(path=str(shots / "plan_rag.png"), full_page=True)
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        page.close()


def test_what_if_and_compare_in_a_browser(server, browser, shots):
    page = browser.new_page(viewport={"width": 1500, "height": 1900})
    try:
        page.goto(f"{server}/what_if?model=llama-3.1-70b", wait_until="domcontentloaded")
        page.wait_for_selector(".pl-card", timeout=WAIT_MS)
        wait_idle(page)
        kw = {"tp": 2, "framework": "vllm", "context_len": 8192, "memory_utilization": 0.92}
        plan2 = plan_memory("llama-3.1-70b", "nvidia-h100-sxm", "fp8", **kw)
        wait_metric(page, "Sequences that fit", f"{plan2.max_concurrent_sequences:,}", card_value)
        page.get_by_role("button", name="Pin as baseline").click()
        page.get_by_text("Baseline:", exact=False).first.wait_for(timeout=WAIT_MS)
        curve = page.locator('.pl-chart svg[data-chart="line"]')
        assert chart_marks(curve, "circle.pt") >= 3 and chart_marks(curve, "polygon.hl") == 1
        curve_before = curve.inner_html()
        pick(page, "GPU", "nvidia-h200-sxm")
        plan_h200 = plan_memory("llama-3.1-70b", "nvidia-h200-sxm", "fp8", **kw)
        seqs = f"{plan_h200.max_concurrent_sequences:,}"
        wait_metric(page, "Sequences that fit", seqs, card_value)
        wait_idle(page)
        time.sleep(0.8)
        curve.locator("circle.pt").first.wait_for(timeout=WAIT_MS)
        assert curve.inner_html() != curve_before, "the curve did not change with the GPU"
        deltas = page.locator(".pl-card .pl-d")
        assert deltas.count() >= 5
        page.screenshot(path=str(shots / "what_if_baseline.png"), full_page=True)

        page.goto(f"{server}/compare?{SMALL_QUERY}", wait_until="domcontentloaded")
        page.get_by_text("Side by side", exact=True).first.wait_for(timeout=SEARCH_MS)
        page.wait_for_selector(
            '[data-testid="stStatusWidget"]', state="detached", timeout=SEARCH_MS
        )
        page.wait_for_selector(CHART, timeout=WAIT_MS)
        page.wait_for_selector(TABLE, timeout=WAIT_MS)
        charts = page.locator(CHART)
        assert charts.count() == 2
        n_bars = chart_marks(charts.nth(0), "rect.bar")  # one per GPU that meets the targets
        assert n_bars >= 1 and chart_marks(charts.nth(1), "rect.bar") == n_bars
        assert page.locator(".pl-tw").first.locator("tbody tr").count() == n_bars  # a row each
        page.screenshot(path=str(shots / "compare.png"), full_page=True)
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        page.close()
