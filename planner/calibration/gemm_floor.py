"""A measured lower bound on the fitted large-batch GEMM rate of Hopper nodes (OFF).

The step model's GEMM compute rate is ``peak x compute_eff x M / (M + compute_half_tokens)``
(:mod:`planner.engine.step`). One ``compute_eff`` per node is traded off in the fit against
the overhead terms, so a node's rate at large M can come out below what cuBLAS itself does
at the same shape: the ``trtllm`` H200 fp8 node runs a Llama-2-70B TP1 step of 1,305 tokens
at about 1,080 TFLOP/s, against 1,346-1,402 TFLOP/s measured for that layer by cuBLAS on an
H100 (docs/changes/2026-12-11/mlsrv.md). An engine's GEMMs are cuBLAS / CUTLASS, so the
cuBLAS rate at the shape is a lower bound on the engine's, not an upper one.

The bound: for a node of the ``hopper`` architecture (every framework; not an MoE family
child, whose expert GEMMs are other shapes), the fitted parameters must give
``compute_eff x M0 / (M0 + compute_half_tokens) >= floor`` at ``M0`` = :data:`M0_TOKENS`,
where ``floor`` is the slowest whole-layer cuBLAS rate measured for a Llama-70B layer at
TP 1, 2, 4 and 8 and M = 1,024 .. 8,192 tokens, over the catalog's dense peak of the
measured GPU in the node's compute dtype (:func:`floor_fraction`). The ramp rises with M,
so the bound holds at every M >= M0. The measurement is
``data/benchmarks/gemm_width_h100_micro.csv`` (``bench/gemm_width.py``, one H100 SXM at a
1,980 MHz SM clock and 700 W; an H200 SXM has the same die, clocks and dense peaks, more
and faster memory, which a compute-bound GEMM does not use). The slowest shape is taken
because one node predicts every width (the width table of :mod:`planner.engine.gemm_width`
is off for Hopper), so a bound at the widest (TP1) rate would raise the narrow shards above
their own measured rate.

The fit enforces it by projection (:func:`project`): a ``compute_eff`` under the bound is
raised to it, at the ``compute_half_tokens`` the optimiser proposes.

OFF (:data:`APPLY`): scored held out in the s14-gemm hand-back note (changes/s14-gemm.md):
the MLPerf Server rows improve, the held-out serving TPOT / TTFT rows get worse.
"""

from __future__ import annotations

import csv
import functools
from pathlib import Path

#: apply the bound in every Hopper node fit (False: the fit's own bounds, as before)
APPLY = False
#: the token count the bound is checked at: the start of the compute-bound range [tokens]
M0_TOKENS = 1024.0
#: token range of the measured rates the floor is the minimum of [tokens]
M_RANGE = (1024, 8192)
#: the measured GPU whose dense peak the rate is divided by (catalog id)
MEASURED_GPU = "nvidia-h100-sxm"
#: the measurement (repository path, relative to the data directory)
CSV_NAME = "benchmarks/gemm_width_h100_micro.csv"
#: the architectures it applies to
ARCHS = ("hopper",)


def layer_rates(rows: list[dict]) -> dict[tuple[str, int, int], float]:
    """Whole-layer rate ``2 M sum(N K) / sum(t)`` of the Llama-70B rows per (dtype, TP, M).

    Parameters
    ----------
    rows : the CSV's rows as dicts (columns dtype, model, layer, tp, m, k, n, s_per_gemm)

    Returns
    -------
    ``{(dtype, tp, m): rate [TFLOP/s]}``
    """
    flops: dict[tuple[str, int, int], float] = {}
    secs: dict[tuple[str, int, int], float] = {}
    for r in rows:
        if r["model"] != "70b" or r["layer"] == "check":
            continue
        key = (r["dtype"], int(r["tp"]), int(r["m"]))
        m, k, n = float(r["m"]), float(r["k"]), float(r["n"])
        flops[key] = flops.get(key, 0.0) + 2.0 * m * k * n
        secs[key] = secs.get(key, 0.0) + float(r["s_per_gemm"])
    return {k: flops[k] / secs[k] / 1e12 for k in flops}


def min_rate(rates: dict[tuple[str, int, int], float], dtype: str) -> float:
    """Slowest layer rate of ``dtype`` over every TP and M in :data:`M_RANGE` [TFLOP/s]."""
    lo, hi = M_RANGE
    return min(v for (d, _, m), v in rates.items() if d == dtype and lo <= m <= hi)


@functools.lru_cache(maxsize=4)
def _fractions(data_dir: str | None = None) -> dict[str, float]:
    from planner.catalog.catalog import DATA_DIR, load_catalog

    path = Path(data_dir or DATA_DIR) / CSV_NAME
    with open(path, newline="") as f:
        rates = layer_rates(list(csv.DictReader(f)))
    g = load_catalog(data_dir).gpu(MEASURED_GPU)
    return {d: min_rate(rates, d) / g.peak_tflops(d) for d in ("bf16", "fp8")}


def floor_fraction(
    arch: str | None, precision: str | None, family: str | None, data_dir: str | None = None
) -> float:
    """The bound on ``compute_eff x M0 / (M0 + half)`` of a node [fraction of peak].

    Parameters
    ----------
    arch : the node's architecture (None above the architecture level: no bound)
    precision : the node's precision; ``fp8`` takes the fp8 rate, ``bf16`` / ``fp16`` the
        bf16 one, None (a node of several precisions) the lower of the two, any other
        (fp4, int4, ...) no bound
    family : the node's model family (``moe``: no bound)

    Returns
    -------
    the fraction, or 0.0 for no bound (also whenever :data:`APPLY` is off)

    Example: fp8 on Hopper is 1,225.8 TFLOP/s (Llama-70B TP8 at 1,024 tokens) over 1,979
    TFLOP/s, 0.619.
    """
    if not APPLY or arch not in ARCHS or family == "moe":
        return 0.0
    fr = _fractions(data_dir)
    if precision is None:
        return min(fr.values())
    d = {"fp8": "fp8", "bf16": "bf16", "fp16": "bf16"}.get(precision)
    return fr[d] if d else 0.0


def project(compute_eff: float, half_tokens: float, floor: float, hi: float = 1.0) -> float:
    """``compute_eff`` raised so that ``compute_eff x M0 / (M0 + half) >= floor`` (at most
    ``hi``).

    Example: ``project(0.5718, 62.6, 0.619)`` is 0.619 x 1,086.6 / 1,024 = 0.657.
    """
    if floor <= 0.0:
        return compute_eff
    need = floor * (M0_TOKENS + half_tokens) / M0_TOKENS
    return min(max(compute_eff, need), hi)
