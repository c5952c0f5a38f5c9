#!/usr/bin/env python3
"""Compile the simulator's kernel once, at install, so that no user waits for it.

numba compiles the event loop on first use (20-60 s on a fresh install) and caches the
machine code next to the package (``__pycache__``) or under ``NUMBA_CACHE_DIR``; later
processes load it in about a second. Run this after installing (or after an upgrade)::

    python scripts/warm_up.py

The app also loads the kernel in a background thread when its server starts. It also writes
the bytecode of the package and the app's modules (Python would not where
``PYTHONDONTWRITEBYTECODE`` is set, and every process would compile them again).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app_pages.widgets import warm_up  # noqa: E402
from planner.files import precompile_bytecode  # noqa: E402

if __name__ == "__main__":
    print(f"simulator kernel ready in {warm_up():.1f} s")
    # bytecode of the package and the app's modules, also where PYTHONDONTWRITEBYTECODE is set
    root = Path(__file__).resolve().parent.parent
    n = precompile_bytecode(root / "planner") + precompile_bytecode(root / "app_pages")
    print(f"bytecode written for {n} modules")
