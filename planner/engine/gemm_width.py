"""GEMM time against the width of the weight shard each GPU multiplies (``data/gemm_width.yaml``).

The step model's GEMM rate has a ramp in the token count (``compute_half_tokens``), fitted
per node, but none in the per-GPU matrix size. Tensor parallelism divides every weight
matrix: at TP8 each GPU runs an eighth of each layer's N (QKV, gate+up) or K (O, down), with
fewer output tiles and shorter kernels, and reaches a lower rate at the same token count. A
node fitted on TP8 rows therefore under-rates TP1 (the AMD MLPerf rows: the
``vllm/amd-mi300x/fp8`` node's GEMM term of one Llama-2-70B layer at 128 tokens, fitted on
TP4 / TP8 rows only, is 1.86x the MLPerf harness's own TP1 hipBLASLt timings).

:func:`slowdown` is the measured time per FLOP of a layer of per-GPU width ``w`` at ``M``
tokens over that of the table's widest layer at the same ``M`` (>= 1 inside the table;
bilinear in ``log w`` and ``log M``, held constant outside the measured widths and token
counts). :meth:`planner.engine.step.StepModel.step` multiplies the GEMM compute time
``t_gemm_comp`` by it (:data:`COMPUTE_ONLY`; else the whole ``max(t_gemm_mem,
t_gemm_comp)``); the fitted efficiencies then describe the widest
layer, and a node fitted on narrow shards predicts wide ones through the measured curve (and
back). Only dense models take it (the table is of dense layers; MoE steps keep 1), only GPUs
of an architecture a table names.

:data:`ENABLED` is the module switch (False: every factor is 1, the step model of before).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numpy as np
from pydantic import Field, model_validator

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Accelerator, Frozen, ModelArch, Sourced
from planner.files import load_data_file

__all__ = [
    "COMPUTE_ONLY",
    "ENABLED",
    "NPTS",
    "GemmWidthTable",
    "coeffs",
    "factor",
    "layer_width",
    "slowdown",
]

#: module switch: False gives every step a factor of 1
ENABLED = True
#: True: the factor scales the compute term of the GEMM time only (``t_gemm_comp``, whose
#: ramp in tokens the fit sets), False: the whole GEMM time ``max(t_gemm_mem, t_gemm_comp)``
COMPUTE_ONLY = True
#: slots of the scalar coefficient tail (planner.engine._scalar: count, log tokens, factors)
NPTS = 12


class GemmWidthTable(Sourced):
    """One measured table: a layer's rate [TFLOP/s] per (width, tokens)."""

    id: str = Field(min_length=3)
    archs: tuple[str, ...] = Field(min_length=1)
    measured_gpu: str = Field(min_length=2)
    dtype: str = Field(min_length=2)
    kernel: str = Field(min_length=3)
    shapes: str = Field(min_length=3)
    tokens: tuple[float, ...] = Field(min_length=2, max_length=NPTS)
    widths: tuple[float, ...] = Field(min_length=1)
    tflops: tuple[tuple[float, ...], ...]
    #: False: the table is data only (scored and left off); :func:`table_for` skips it
    enabled: bool = True

    @model_validator(mode="after")
    def _grid(self) -> GemmWidthTable:
        if list(self.tokens) != sorted(set(self.tokens)) or self.tokens[0] <= 0:
            raise ValueError("tokens must be positive and increasing")
        if list(self.widths) != sorted(set(self.widths), reverse=True) or self.widths[-1] <= 0:
            raise ValueError("widths must be positive and decreasing (widest first)")
        if len(self.tflops) != len(self.widths) or any(
            len(r) != len(self.tokens) or min(r) <= 0 for r in self.tflops
        ):
            raise ValueError("tflops needs one positive value per (width, tokens)")
        return self


class _File(Frozen):
    tables: tuple[GemmWidthTable, ...]


@lru_cache(maxsize=4)
def tables(data_dir: str | None = None) -> tuple[GemmWidthTable, ...]:
    """Every table of ``data/gemm_width.yaml`` (empty where the file is absent)."""
    f = load_data_file(Path(data_dir or DATA_DIR) / "gemm_width.yaml", _File, 120)
    return () if f is None else f.tables


def table_for(arch: str, dtype: str | None = None) -> GemmWidthTable | None:
    """The enabled table naming architecture ``arch`` measured in ``dtype`` (the step's
    compute dtype), else the first enabled one naming ``arch``, else None."""
    ts = [t for t in tables() if t.enabled and arch in t.archs]
    for t in ts:
        if t.dtype == dtype:
            return t
    return ts[0] if ts else None


def layer_width(m: ModelArch, tp: int, matmul_params: float) -> float:
    """Matmul parameters of one layer on one GPU [-]: ``matmul_params / layers / tp``.
    Llama-3.1-70B at TP8: 80 layers of 855,638,016 (QKV 10240 x 8192 + O 8192 x 8192 +
    gate+up 57344 x 8192 + down 8192 x 28672) / 8 = 106,954,752."""
    return matmul_params / m.num_hidden_layers / tp


def _interp(xs, ys, x):
    """Piecewise-linear ``ys(x)`` over increasing ``xs``, constant outside."""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    for j in range(1, len(xs)):
        if x <= xs[j]:
            f = (x - xs[j - 1]) / (xs[j] - xs[j - 1])
            return ys[j - 1] + (ys[j] - ys[j - 1]) * f
    return ys[-1]  # pragma: no cover


def slowdown(t: GemmWidthTable, width: float, tokens: float) -> float:
    """Time per FLOP of a layer of per-GPU ``width`` at ``tokens`` over that of the table's
    widest layer at the same tokens [-]: ``rate(widest, M) / rate(w, M)``, bilinear in
    ``log w`` and ``log M`` over the table (constant outside it). Example (AITER gfx950
    table, Llama-70B TP8 width 106,954,752 at 128 tokens): 593.3 / 273.3 = 2.171."""
    lm = [math.log(x) for x in t.tokens]
    lw = [-math.log(w) for w in t.widths]  # increasing as the width shrinks
    x = math.log(max(tokens, 1e-9))
    col = [
        _interp(lm, [a / b for a, b in zip(t.tflops[0], row, strict=True)], x) for row in t.tflops
    ]
    # a narrower shard is never faster per FLOP: measured ratios under 1 (the H100 table at
    # M >= 2,048, up to 8%) are run-to-run and kernel-choice scatter, read as 1
    return max(1.0, _interp(lw, col, -math.log(width)))


def coeffs(
    m: ModelArch, g: Accelerator, tp: int, matmul_params: float, dtype: str | None = None
) -> tuple:
    """(log tokens, factors) of a step model: :func:`slowdown` at the table's token counts for
    this model's per-GPU width, or ``()`` (factor 1: switched off, an MoE model, or no enabled
    table for ``g``'s architecture). ``dtype``: the GEMM compute dtype, which picks among an
    architecture's tables (:func:`table_for`)."""
    t = table_for(g.arch, dtype) if ENABLED and not m.is_moe else None
    if t is None:
        return ()
    w = layer_width(m, tp, matmul_params)
    key = (id(t), w, COMPUTE_ONLY)
    hit = _COEFFS.get(key)
    if hit is not None and hit[0] is t:
        return hit[1]
    out = (
        tuple(math.log(x) for x in t.tokens),
        tuple(slowdown(t, w, x) for x in t.tokens),
        COMPUTE_ONLY,
    )
    if len(_COEFFS) >= 4096:
        _COEFFS.clear()
    _COEFFS[key] = (t, out)
    return out


#: :func:`coeffs`' answers by (table id, per-GPU width, COMPUTE_ONLY), with the table they
#: were made from (compared by identity): a search builds thousands of step models over a few
#: tens of (architecture, width) pairs
_COEFFS: dict[tuple, tuple[GemmWidthTable, tuple]] = {}


def factor(points: tuple, tokens):
    """The GEMM-time factor at ``tokens`` rows (numpy-vectorized): linear in ``log tokens``
    between the step model's ``points`` (:func:`coeffs`), constant outside; 1 for ``()``."""
    if not points:
        return 1.0
    lx, gv = points[:2]
    t = np.maximum(np.asarray(tokens, dtype=float), 1e-9)
    return np.interp(np.log(t), lx, gv)


def slots(points: tuple) -> tuple[float, ...]:
    """The scalar path's fixed-length tail: count, NPTS log tokens, NPTS factors (zeros pad),
    1 where the factor scales the compute term only."""
    if not points:
        return (0.0,) * (2 + 2 * NPTS)
    lx, gv, comp = points
    pad = (0.0,) * (NPTS - len(lx))
    return (float(len(lx)), *lx, *pad, *gv, *pad, float(comp))
