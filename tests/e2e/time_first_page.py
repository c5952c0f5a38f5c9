#!/usr/bin/env python3
"""Time from a new server to its first answered page (issue 33's newcomer path), in chromium.

Starts ``streamlit run app.py`` in the repository root (chromium launched first, so its own
start is not counted), waits for ``/_stcore/health``, opens ``/`` and waits until the Plan
page's "Recommended:" heading is visible; prints both times. For a fresh machine, empty the
caches first and compare with and without ``python scripts/warm_up.py``::

    export NUMBA_CACHE_DIR=$(mktemp -d) PLANNER_CACHE_DIR=$(mktemp -d)
    rm -f app_pages/__pycache__/default-plan-*.pkl
    python tests/e2e/time_first_page.py                     # before: ~36 s (compile + search)
    python scripts/warm_up.py && python tests/e2e/time_first_page.py   # after: ~3 s

Needs Debian's chromium (``/usr/bin/chromium``, or ``$CHROMIUM``) and the playwright package;
``APP_PYTHON=/other/.venv/bin/python`` serves the app from another environment (a fresh
install without playwright), ``APP_ROOT`` from another checkout.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(os.environ.get("APP_ROOT") or Path(__file__).resolve().parents[2])


def main() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
            args=["--no-sandbox", "--disable-gpu"],
            headless=True,
        )
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [os.environ.get("APP_PYTHON", sys.executable), "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1",
             "--browser.gatherUsageStats", "false"],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            while True:
                try:
                    with urllib.request.urlopen(
                        f"http://127.0.0.1:{port}/_stcore/health", timeout=2
                    ):
                        break
                except OSError:
                    time.sleep(0.05)
            t_up = time.monotonic()
            page.goto(f"http://127.0.0.1:{port}/")
            page.get_by_text("Recommended:").first.wait_for(timeout=300_000)
            t_answer = time.monotonic()
        finally:
            proc.terminate()
            proc.wait(10)
            browser.close()
    print(
        f"server healthy after {t_up - t0:.1f} s; first answered page "
        f"{t_answer - t_up:.2f} s after the server was up"
    )


if __name__ == "__main__":
    main()
