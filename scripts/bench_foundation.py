#!/usr/bin/env python3
"""Benchmarks of the foundation: CLI cold start and a vectorized decode-time sweep.

Targets (from the foundation issue):

* ``planner memory ...`` as a fresh process: median of 10 runs < 1 s;
* ``decode_step`` over 10^5 (batch, context) points in one vectorized call:
  median of several runs < 100 ms.

Usage::

    python scripts/bench_foundation.py [--runs 10] [--sweep-runs 7]

Uses the ``planner`` console script when it is installed next to this Python,
else ``python -m planner.cli`` (the same code path). Prints one line per number.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MEMORY_ARGS = ["memory", "--model", "llama-3.1-70b", "--gpu", "nvidia-h100-sxm",
               "--precision", "fp8", "--tp", "2", "--context", "8192"]  # fmt: skip


def cli_command() -> tuple[list[str], str]:
    """The command that starts the CLI, and a label for it."""
    exe = Path(sys.executable).with_name("planner")
    if exe.exists():
        return [str(exe)], str(exe)
    found = shutil.which("planner")
    if found and Path(found).resolve().parent == Path(sys.executable).resolve().parent:
        return [found], found
    return [sys.executable, "-m", "planner.cli"], f"{Path(sys.executable).name} -m planner.cli"


def bench_cold_start(runs: int) -> list[float]:
    """Wall time [s] of ``planner memory ...`` as a new process, ``runs`` times."""
    cmd, _ = cli_command()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run([*cmd, *MEMORY_ARGS], capture_output=True, text=True, env=env,
                           cwd=REPO)  # fmt: skip
        times.append(time.perf_counter() - t0)
        if p.returncode != 0:
            raise SystemExit(f"planner memory failed: {p.stderr.strip()}")
    return times


def bench_sweep(runs: int, points: int = 100_000) -> tuple[list[float], float]:
    """Wall time [s] of one ``decode_step`` call over a batch x context grid of ``points``."""
    import numpy as np

    sys.path.insert(0, str(REPO))
    from planner.engine import decode_step, step_model

    sm = step_model("llama-3.1-70b", "nvidia-h100-sxm", "fp8", tp=2)
    n_batch = 400
    batch = np.arange(1, n_batch + 1, dtype=float)[:, None]  # 1..400 sequences
    ctx = np.linspace(128, 131_072, points // n_batch)[None, :]  # 250 contexts, 128..131072
    decode_step(sm, batch, ctx)  # warm-up (first-call allocations)
    times = []
    out = None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = decode_step(sm, batch, ctx).time_s
        times.append(time.perf_counter() - t0)
    return times, float(np.size(out))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="cold-start runs (default 10)")
    ap.add_argument("--sweep-runs", type=int, default=7, help="sweep repetitions (default 7)")
    args = ap.parse_args(argv)

    _, label = cli_command()
    cs = bench_cold_start(args.runs)
    med = statistics.median(cs)
    print(f"cli cold start ({label} {' '.join(MEMORY_ARGS[:1])} ...): median {med * 1e3:.0f} ms "
          f"over {len(cs)} runs (min {min(cs) * 1e3:.0f}, max {max(cs) * 1e3:.0f}); "
          f"target < 1000 ms: {'ok' if med < 1 else 'MISSED'}")  # fmt: skip

    sw, n = bench_sweep(args.sweep_runs)
    med = statistics.median(sw)
    print(f"decode_step sweep of {n:,.0f} (batch, context) points: median {med * 1e3:.1f} ms "
          f"over {len(sw)} runs (min {min(sw) * 1e3:.1f}, max {max(sw) * 1e3:.1f}); "
          f"target < 100 ms: {'ok' if med < 0.1 else 'MISSED'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
