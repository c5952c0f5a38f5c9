"""The fitted large-M GEMM rate of each NVIDIA Hopper / Blackwell node against cuBLAS.

For every per-precision node (level 5, fp8 / bf16 / fp16) of a profile, the step model's
compute rate ``peak x compute_eff x M / (M + compute_half_tokens)`` (planner/engine/step.py;
the shard-width factor is off for NVIDIA) at M = 1,024, 2,048 and 8,192 tokens, and its ratio
to the whole-layer cuBLAS rate of Llama-70B at TP1 and TP8 measured on one H100 SXM
(data/benchmarks/gemm_width_h100_micro.csv, or ``--csv`` for another run of
bench/gemm_width.py). Blackwell has no measurement: its rows show the fitted rate only.

Usage: ``python scripts/gemm_floor_table.py [--profile F] [--csv C]``
"""

from __future__ import annotations

import argparse
import csv

from planner.calibration.gemm_floor import layer_rates
from planner.catalog.catalog import DATA_DIR, compute_dtype_for, load_catalog
from planner.catalog.profile import load_profile

MS = (1024, 2048, 8192)


def fitted_rate(peak_tflops: float, eff: float, half: float, m: float) -> float:
    """The step model's GEMM compute rate at ``m`` tokens [TFLOP/s]."""
    return peak_tflops * eff * m / (m + half)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default=None, help="profile yaml (default: the bundled one)")
    ap.add_argument("--csv", default=str(DATA_DIR / "benchmarks/gemm_width_h100_micro.csv"))
    a = ap.parse_args(argv)
    with open(a.csv, newline="") as f:
        rates = layer_rates(list(csv.DictReader(f)))
    cat = load_catalog()
    prof = load_profile(a.profile)
    print(
        "| node | family | rows | compute_eff | half | "
        + " | ".join(f"fit @{m} [TF/s] | /cuBLAS TP1 | /TP8" for m in MS)
        + " |"
    )
    print("|---" * (5 + 3 * len(MS)) + "|")
    for n in prof.nodes:
        if n.vendor != "nvidia" or n.level != 5 or n.arch not in ("hopper", "blackwell"):
            continue
        if n.precision not in ("fp8", "bf16", "fp16") or n.family == "moe":
            continue
        g = cat.gpu(n.gpu)
        dt = compute_dtype_for(cat.precision(n.precision), g)
        mdt = "fp8" if dt == "fp8" else "bf16"
        p = n.params
        cells = []
        for m in MS:
            r = fitted_rate(g.peak_tflops(dt), p.compute_eff, p.compute_half_tokens, m)
            t1, t8 = rates.get((mdt, 1, m)), rates.get((mdt, 8, m))
            hop = n.arch == "hopper" and t1
            cells.append(f"{r:,.0f} | {r / t1:.2f} | {r / t8:.2f}" if hop else f"{r:,.0f} | — | —")
        print(
            f"| {n.framework}/{n.gpu}/{n.precision} | {n.family or 'all'} | {n.n_rows} | "
            f"{p.compute_eff:.3f} | {p.compute_half_tokens:.0f} | " + " | ".join(cells) + " |"
        )


if __name__ == "__main__":
    main()
