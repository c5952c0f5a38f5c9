#!/usr/bin/env python3
"""Responsiveness of the Streamlit app (issue 9 targets: first load <= 3 s, re-render after a
widget change <= 200 ms on the Memory and What-if pages, Plan recomputation <= 1 s).

Measures
* browser (Playwright + Debian's chromium, ``streamlit run app.py`` on 127.0.0.1):
  - cold first load: a freshly started server, first page load until the first chart is drawn;
  - warm first load: a new browser session each time, same server (median);
  - re-render: change the context number input, until the page shows the new value's
    results (median over distinct, uncached values);
* ``streamlit.testing`` AppTest (no browser): script re-run after a widget change, uncached
  and cached (median), on the Memory page;
  - Plan: recomputation after a peak-rate change (a new recommend() search, uncached) with the
    default GPU set (6 datacenter GPUs, llama-3.1-70b, chat preset) and with one GPU;
  - What-if: re-render after a knob change (TP / context / max_num_seqs), uncached and cached.

Usage::

    python scripts/bench_app.py [--runs 7] [--no-browser]

Prints one line per number (seconds / milliseconds as labelled).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# one copy of the server and browser helpers: scripts/bench_browser.py (this folder)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_browser import (  # noqa: E402
    CHROMIUM_ARGS,
    _free_port,  # noqa: E402
    start_server,
    stop_server,
)

CHART = ".pl-chart svg"  # the app's SVG charts (app_pages/svg.py)


def bench_browser(runs: int) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("browser: skipped (pip install playwright)")
        return
    exe = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
    if not exe:
        print("browser: skipped (chromium not installed)")
        return
    port = _free_port()
    proc = start_server(REPO, port)
    url = f"http://127.0.0.1:{port}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)

            cached_ctx = browser.new_context(viewport={"width": 1400, "height": 1200})

            def load(fresh: bool) -> tuple[float, object]:
                """Open the app in a new session; fresh: a new browser profile (empty cache)."""
                page = (
                    browser.new_page(viewport={"width": 1400, "height": 1200})
                    if fresh
                    else cached_ctx.new_page()
                )
                t0 = time.perf_counter()
                page.goto(f"{url}/memory", wait_until="commit")
                page.wait_for_selector(CHART, timeout=30_000)
                return time.perf_counter() - t0, page

            cold, page = load(fresh=True)
            page.close()
            warm_fresh, warm_cached = [], []
            for _ in range(runs):
                t, page = load(fresh=True)
                warm_fresh.append(t)
                page.close()
            for _ in range(runs + 1):  # the first fills the browser cache
                t, page = load(fresh=False)
                warm_cached.append(t)
                if _ < runs:
                    page.close()
            warm_cached = warm_cached[1:]
            page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
            ctx = page.locator('input[aria-label="Context per sequence [tokens]"]')
            rerender = []
            for i in range(runs):
                value = 8192 + 16 * (i + 1)  # distinct: no cache hit
                ctx.fill(str(value))
                t0 = time.perf_counter()
                ctx.press("Enter")
                page.wait_for_function(
                    "v => document.body.innerText.includes(v + ' tokens each')",
                    arg=f"{value:,}",
                    timeout=30_000,
                )
                rerender.append(time.perf_counter() - t0)
            browser.close()
    finally:
        stop_server(proc)
    print(f"browser first load, new server + empty browser cache  {cold:.2f} s")
    print(
        f"browser first load, running server, empty browser cache, median of {runs}  "
        f"{statistics.median(warm_fresh):.2f} s"
    )
    print(
        f"browser first load, running server, cached static files, median of {runs}  "
        f"{statistics.median(warm_cached):.2f} s"
    )
    print(
        f"browser re-render after a context change, median of {runs}  "
        f"{statistics.median(rerender) * 1e3:.0f} ms"
    )


def bench_apptest(runs: int) -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.switch_page("app_pages/memory.py")
    t0 = time.perf_counter()
    at.run()
    first = time.perf_counter() - t0
    uncached, cached = [], []
    for i in range(runs):
        t0 = time.perf_counter()
        at.number_input(key="context").set_value(4096 + 32 * (i + 1)).run()
        uncached.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        at.number_input(key="context").set_value(8192).run()
        cached.append(time.perf_counter() - t0)
    assert not at.exception, at.exception
    print(f"AppTest first run (catalog load, in-process)      {first * 1e3:.0f} ms")
    print(
        f"AppTest re-run after a change, uncached, median   {statistics.median(uncached) * 1e3:.0f} ms"
    )
    print(
        f"AppTest re-run after a change, cached, median     {statistics.median(cached) * 1e3:.0f} ms"
    )


def bench_plan(runs: int) -> None:
    """Plan page: a new search after each peak-rate change (distinct values: no cache hit)."""
    from streamlit.testing.v1 import AppTest

    for label, state in (
        ("default 6 GPUs", {}),
        ("1 GPU (H100 SXM)", {"gpus": ["nvidia-h100-sxm"]}),
    ):
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
        for k, v in state.items():
            at.session_state[k] = v
        t0 = time.perf_counter()
        at.run()
        first = time.perf_counter() - t0
        times, cached = [], []
        for i in range(runs):
            t0 = time.perf_counter()
            at.number_input(key="peak_rps").set_value(10.0 + 0.5 * (i + 1)).run()
            times.append(time.perf_counter() - t0)
        for i in range(runs):
            t0 = time.perf_counter()
            at.number_input(key="peak_rps").set_value(10.0 + 0.5 * (i + 1)).run()
            cached.append(time.perf_counter() - t0)
        assert not at.exception, at.exception
        print(f"Plan first run, {label}, llama-3.1-70b chat            {first:.2f} s")
        print(
            f"Plan recomputation after a peak change, {label}, median of {runs}  "
            f"{statistics.median(times):.2f} s (cached: {statistics.median(cached) * 1e3:.0f} ms)"
        )


def bench_what_if(runs: int) -> None:
    """What-if page: re-render after a knob change (uncached: a new curve; cached)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.switch_page("app_pages/what_if.py")
    at.run()
    knobs = [("wi_tp", v) for v in (1, 4, 8, 2)] + [("wi_ctx", v) for v in (4096, 16384, 8192)]
    knobs += [("wi_seqs", v) for v in (64, 128, 512, 256)]
    uncached, cached = [], []
    for k, v in knobs:
        t0 = time.perf_counter()
        at.select_slider(key=k).set_value(v).run()
        uncached.append(time.perf_counter() - t0)
    for k, v in knobs:
        t0 = time.perf_counter()
        at.select_slider(key=k).set_value(v).run()
        cached.append(time.perf_counter() - t0)
    assert not at.exception, at.exception
    print(
        f"What-if re-render after a knob change, uncached, median of {len(knobs)}  "
        f"{statistics.median(uncached) * 1e3:.0f} ms (max {max(uncached) * 1e3:.0f} ms)"
    )
    print(
        f"What-if re-render after a knob change, cached, median of {len(knobs)}    "
        f"{statistics.median(cached) * 1e3:.0f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    bench_apptest(args.runs)
    bench_what_if(args.runs)
    bench_plan(min(args.runs, 5))
    if not args.no_browser:
        bench_browser(args.runs)


if __name__ == "__main__":
    main()
