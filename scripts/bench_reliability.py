"""Time `planner predict` and `planner calibrate` on large step-row files, with peak RSS.

    python scripts/bench_reliability.py                 # 1,000,000 rows (the issue's size)
    python scripts/bench_reliability.py --rows 100000   # quicker

Rows are copies of the bundled own H200 step measurements (data/benchmarks/pytorch_h200.csv)
with fresh ids, so every row is predictable and fittable. Each command runs in a child
process; peak RSS is that child's ru_maxrss (resource.getrusage(RUSAGE_CHILDREN)).
Targets (issue 12): predict 1M rows <= 15 s and <= 1.5 GB; calibrate 1M rows <= 120 s or a
clear refusal naming the supported size.

Measured for issue 19 (2 cores; CPU seconds of the child): predict 1M rows 17.7 s on main
(with its `settings` and band columns, quiet machine; 20.9 s under load), 12.8 s on this
branch merged with it (12.6-14.6 s under load), 0.90 GB peak RSS both. Profile first
(``python -m cProfile -m planner.cli predict ...``): writing the output CSV cost as much as
parsing and predicting together; an input row's cells are now copied as the file had them
(``iter_rows(keep_text=True)``) and only the added cells are quoted; a row's notes tags
are parsed once per distinct notes text.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "data" / "benchmarks" / "pytorch_h200.csv"


def make_rows(path: Path, n: int) -> None:
    with SOURCE.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        cols = list(reader.fieldnames or [])
        base = list(reader)
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        for i in range(n):
            r = dict(base[i % len(base)])
            r["id"] = f"bench-{i:07d}"
            r["notes"] = ""
            w.writerow(r)


# The child runs the CLI in-process and reports its own peak RSS (ru_maxrss, KiB on Linux)
# and CPU time as its last stderr line, so each step is measured on its own.
CHILD = (
    "import resource, sys\n"
    "from planner.cli.main import main\n"
    "rc = main(sys.argv[1:])\n"
    "u = resource.getrusage(resource.RUSAGE_SELF)\n"
    "print(f'BENCH {u.ru_maxrss} {u.ru_utime + u.ru_stime:.1f}', file=sys.stderr)\n"
    "sys.exit(rc)\n"
)


def run(label: str, argv: list[str], timeout: float) -> dict:
    t = time.perf_counter()
    rss_kib, cpu, err = 0, float("nan"), [""]
    try:
        p = subprocess.run(
            [sys.executable, "-c", CHILD, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
        )
        rc = p.returncode
        lines = p.stderr.strip().splitlines()
        if lines and lines[-1].startswith("BENCH "):
            _, rss, cpu_s = lines.pop().split()
            rss_kib, cpu = int(rss), float(cpu_s)
        err = lines[-1:] or [""]
    except subprocess.TimeoutExpired:
        rc, err = "timeout", [f"killed after {timeout:.0f} s"]
    wall = time.perf_counter() - t
    peak_gb = rss_kib * 1024 / 1e9
    out = {"step": label, "rc": rc, "wall_s": round(wall, 1), "cpu_s": cpu, "peak_gb": peak_gb}
    print(
        f"{label:<26} rc={rc!s:<3} wall {wall:6.1f} s  cpu {cpu:6.1f} s  "
        f"peak RSS {peak_gb:5.2f} GB  {err[0][:80]}"
    )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--skip-calibrate", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="planner-bench-") as tmp:
        src = Path(tmp) / "rows.csv"
        t = time.perf_counter()
        make_rows(src, args.rows)
        size = os.path.getsize(src) / 1e6
        print(
            f"generated {args.rows:,} step rows ({size:.0f} MB) in {time.perf_counter() - t:.1f} s"
        )
        run(
            f"predict {args.rows:,} rows",
            ["predict", str(src), "-o", str(Path(tmp) / "p.csv")],
            args.timeout,
        )
        if not args.skip_calibrate:
            run(
                f"calibrate {args.rows:,} rows",
                ["calibrate", str(src), "-o", str(Path(tmp) / "profile.yaml")],
                args.timeout,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
