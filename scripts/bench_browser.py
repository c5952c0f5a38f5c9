#!/usr/bin/env python3
"""What a user feels: the app in a real browser (Playwright + Debian's chromium), timed
"until the page has settled" (issue 18).

Settled means: the new values are on the page (a marker text that only the new run
renders), Streamlit's running indicator (``stStatusWidget``) is gone, no element is still
marked stale (``data-stale="true"``) and the charts are drawn. Every timed action asks for
something not computed before in that server (distinct peaks, GPUs, models), so no result
comes from the app's cache.

Actions and the issue-18 targets::

    cold first load of a new server (Plan, defaults)           <= 3 s
    Plan: recomputation after an input change (peak)          <= 1 s
    What-if: a changed input (GPU)                            <= 200 ms
    Compare GPUs: first load, 70B RAG, default GPU set       <= 3 s
    Compare GPUs: a model switch                              <= 1.5 s

Usage::

    python scripts/bench_browser.py [--runs 5] [--repo PATH] [--only plan,what_if,...]

``--repo`` benchmarks another checkout (e.g. the previous commit, for old vs new). Prints
min / median / max of each action and writes them as JSON with ``--json FILE``. On a shared
machine the numbers move with the load: report them with the load (``uptime``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 300_000
TARGETS_S = {
    "cold_first_load": 3.0,
    "plan_change": 1.0,
    "what_if_change": 0.2,
    "compare_first_load": 3.0,
    "compare_model_switch": 1.5,
}
SETTLED_JS = """
marker => {
  if (!document.body.innerText.includes(marker)) return false;
  if (document.querySelector('[data-testid="stStatusWidget"]')) return false;
  if (document.querySelector('[data-stale="true"]')) return false;
  return true;
}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(repo: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(repo)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false"],
        cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("streamlit did not become healthy within 120 s")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def settle(page, marker: str, t0: float) -> float:
    """Seconds from ``t0`` until the page shows ``marker`` and has settled."""
    page.wait_for_function(SETTLED_JS, arg=marker, timeout=WAIT_MS, polling=20)
    return time.perf_counter() - t0


def pick(page, label: str, option: str) -> float:
    """Choose ``option`` in the selectbox labelled ``label``; returns the click's time."""
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=label).first
    box.locator("input").click()
    box.locator("input").fill(option)
    opt = page.locator('[role="option"]').filter(has_text=option).first
    opt.wait_for(timeout=WAIT_MS)
    t0 = time.perf_counter()
    opt.click()
    return t0


def set_number(page, label: str, value: str) -> float:
    box = page.locator(f'input[aria-label="{label}"]')
    box.fill(value)
    t0 = time.perf_counter()
    box.press("Enter")
    return t0


def gpu_names(ids: list[str]) -> dict[str, str]:
    sys.path.insert(0, str(REPO))
    from planner.catalog import load_catalog

    cat = load_catalog()
    return {g: cat.gpu(g).name for g in ids}


def run(repo: Path, runs: int, only: set[str]) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    exe = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
    if not exe:
        raise SystemExit("chromium not found (apt-get install chromium)")
    out: dict[str, list[float]] = {k: [] for k in TARGETS_S if k in only}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        view = {"width": 1500, "height": 1400}
        # ------------------------------------------------ cold first load: a new server each
        n_cold = runs if "cold_first_load" in only else 0
        proc = None
        for i in range(max(n_cold, 1)):
            port = _free_port()
            proc = start_server(repo, port)
            url = f"http://127.0.0.1:{port}"
            if i < n_cold:
                page = browser.new_page(viewport=view)
                t0 = time.perf_counter()
                page.goto(f"{url}/", wait_until="commit")
                out["cold_first_load"].append(settle(page, "Ranked options", t0))
                page.close()
            if i < n_cold - 1:
                stop_server(proc)
        try:
            # -------------------------------------------- Plan: peak changes (new searches)
            if "plan_change" in only:
                page = browser.new_page(viewport=view)
                page.goto(f"{url}/", wait_until="commit")
                settle(page, "Ranked options", time.perf_counter())
                for i in range(runs):
                    v = f"{10 + 0.5 * (i + 1):g}"
                    t0 = set_number(page, "Peak [req/s]", v)
                    out["plan_change"].append(settle(page, f"planning peak {v} req/s", t0))
                page.close()
            # -------------------------------------------- What-if: GPU changes
            if "what_if_change" in only:
                page = browser.new_page(viewport=view)
                page.goto(f"{url}/what_if?model=llama-3.1-70b", wait_until="commit")
                settle(page, "Memory of one", time.perf_counter())
                gpus = ["nvidia-h200-sxm", "nvidia-b200", "amd-mi300x", "nvidia-h100-sxm",
                        "nvidia-a100-80gb-sxm", "amd-mi325x", "nvidia-h100-pcie", "nvidia-gh200"]  # fmt: skip
                names = gpu_names(gpus[:runs])
                for g in gpus[:runs]:
                    t0 = pick(page, "GPU", g)
                    out["what_if_change"].append(settle(page, f"Memory of one {names[g]}", t0))
                page.close()
            # -------------------------------------------- Compare: first loads, model switches
            if "compare_first_load" in only:
                for i in range(runs):
                    page = browser.new_page(viewport=view)
                    peak = f"{10 + 0.25 * (i + 1):g}"  # a new scenario each time
                    t0 = time.perf_counter()
                    page.goto(
                        f"{url}/compare?model=llama-3.1-70b&preset=rag&peak_rps={peak}",
                        wait_until="commit",
                    )
                    out["compare_first_load"].append(settle(page, "Side by side", t0))
                    page.close()
            if "compare_model_switch" in only:
                page = browser.new_page(viewport=view)
                page.goto(f"{url}/compare?model=llama-3.1-70b&preset=rag", wait_until="commit")
                settle(page, "Side by side", time.perf_counter())
                models = ["llama-3.1-8b", "qwen2.5-72b", "qwen2.5-32b", "llama-3.3-70b",
                          "qwen3-32b", "gemma-2-27b", "mistral-7b-v0.3"]  # fmt: skip
                for m in models[:runs]:
                    t0 = pick(page, "Model", m)
                    out["compare_model_switch"].append(settle(page, f"{m} at a planning", t0))
                page.close()
        finally:
            stop_server(proc)
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout to benchmark")
    ap.add_argument("--only", default=",".join(TARGETS_S), help="comma-separated actions")
    ap.add_argument("--json", type=Path, help="write the times here")
    a = ap.parse_args()
    only = {x.strip() for x in a.only.split(",") if x.strip()}
    res = run(a.repo.resolve(), a.runs, only)
    load = os.getloadavg()
    print(f"repo {a.repo}  runs {a.runs}  load average {load[0]:.1f} {load[1]:.1f}")
    print(f"{'action':24s} {'min':>8s} {'median':>8s} {'max':>8s}  target")
    for k, v in res.items():
        if v:
            print(f"{k:24s} {min(v):8.2f} {statistics.median(v):8.2f} {max(v):8.2f}  "
                  f"<= {TARGETS_S[k]:g} s")  # fmt: skip
    if a.json:
        a.json.write_text(json.dumps({"repo": str(a.repo), "load": load, "times_s": res}, indent=1))


if __name__ == "__main__":
    main()
