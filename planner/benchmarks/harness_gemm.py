"""The GEMM rate an MLPerf harness publishes for its own kernels (``data/mlperf_harness_gemm.yaml``):
AMD's MLPerf v5.1 Llama-2-70B MI325X configs load a hipBLASLt tuning file whose lines time
every linear layer of the model at every token count; AMD's v6.0 MI355X harness image
patches the same kind of lines (AITER's FP4 ASM GEMMs, MXFP4) into AITER.

:func:`gemm_params` reads one table as the step model's GEMM term,
``t(n) = max(W / (BW x mem_eff), F x (n + compute_half_tokens) / (peak x compute_eff))`` per
layer (W the layer's fp8 weight bytes, F = 2 W its FLOPs per token, ``planner.engine.step``'s
ramp written out): ``mem_eff`` from the smallest token count (a weight read), ``compute_eff``
and ``compute_half_tokens`` by least squares in log time over the token counts from 64 up.

The tables are kernel timings, not throughputs: nothing here is fitted to a benchmark row's
result. Applied only by the what-if ``harness_gemm=True`` of
:mod:`planner.benchmarks.mlperf_latency` to the rows each table lists (the rows whose engine
config names the file).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
from pydantic import Field

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Accelerator, Frozen, Sourced
from planner.errors import PlannerError
from planner.files import load_data_file

__all__ = ["GemmTable", "gemm_params", "harness_gemm_tables", "table_for_row"]

#: token counts at or above which a table's times are read as compute-bound [tokens]
COMPUTE_FROM_TOKENS = 64


class GemmTable(Frozen):
    """One tuning file: per-layer GEMM times at each token count, and the rows it serves."""

    name: str = Field(min_length=3)
    gpu: str = Field(min_length=3)
    precision: str = Field(min_length=2)
    file: str = Field(min_length=10)
    named_by: str = Field(min_length=10)
    clock_note: str = ""
    #: the repository the table was read from, where it is not the file's ``source``
    source: str = ""
    #: the compute dtype whose dense peak ``compute_eff`` is a fraction of ("": precision)
    compute_dtype: str = ""
    #: bits a weight moves in a weight read [bit] (fp8: 8; MXFP4: 4.25)
    weight_bits: float = Field(default=8.0, gt=0)
    rows: tuple[str, ...]
    #: (m, k) of each GEMM of one layer: weight rows x columns
    shapes: tuple[tuple[int, int], ...] = Field(min_length=1)
    tokens: tuple[int, ...] = Field(min_length=3)
    #: per token count, the time of each shape [us]
    layer_us: tuple[tuple[float, ...], ...]

    def layer_time_s(self) -> np.ndarray:
        """Time of one layer's GEMMs at each of :attr:`tokens` [s]."""
        return np.array([sum(r) for r in self.layer_us]) * 1e-6

    def weight_bytes_per_layer(self, bytes_per_weight: float = 1.0) -> float:
        """The layer's weight bytes, ``sum(m x k) x bytes_per_weight`` [B] (fp8: 1)."""
        return float(sum(m * k for m, k in self.shapes)) * bytes_per_weight

    def weights_read_bytes(self) -> float:
        """The bytes one weight read of the layer moves, ``sum(m x k) x weight_bits / 8``
        [B]."""
        return self.weight_bytes_per_layer(self.weight_bits / 8.0)


class _File(Sourced):
    tables: tuple[GemmTable, ...]


@lru_cache(maxsize=2)
def _file(data_dir: str | None) -> _File | None:
    path = Path(data_dir or DATA_DIR) / "mlperf_harness_gemm.yaml"
    f = load_data_file(path, _File, 120)
    if f is None:
        return None
    for t in f.tables:
        if len(t.layer_us) != len(t.tokens) or any(len(r) != len(t.shapes) for r in t.layer_us):
            raise PlannerError(
                f"{path.name}: table '{t.name}': layer_us needs one row per token count and "
                "one time per shape"
            )
    return f


def harness_gemm_tables(data_dir: str | None = None) -> tuple[GemmTable, ...]:
    """Every table of ``data/mlperf_harness_gemm.yaml`` (empty when the file is absent)."""
    f = _file(data_dir)
    return () if f is None else f.tables


def table_for_row(row_id: str, data_dir: str | None = None) -> GemmTable | None:
    """The table whose engine config a benchmark row ran with, or None."""
    return next((t for t in harness_gemm_tables(data_dir) if row_id in t.rows), None)


def gemm_params(table: GemmTable, gpu: Accelerator) -> dict[str, float]:
    """The step model's GEMM terms that reproduce ``table`` on ``gpu``: ``compute_eff`` and
    ``compute_half_tokens`` (least squares of log time over the token counts from
    :data:`COMPUTE_FROM_TOKENS` up, with F = 2 x the layer's weights FLOPs a token and the
    GPU's dense peak of the table's compute dtype), and ``mem_eff`` (the weight read at the
    smallest token count, ``W / (BW x t)``, W the layer's weights at ``weight_bits``) only
    where that count is below :data:`COMPUTE_FROM_TOKENS`; ``rms_log_err``: how well the form fits the table [-]."""
    from scipy.optimize import least_squares

    n = np.asarray(table.tokens, float)
    t = table.layer_time_s()
    flops = 2.0 * table.weight_bytes_per_layer()  # 2 FLOPs a weight a token
    w = table.weights_read_bytes()
    peak = gpu.peak_tflops(table.compute_dtype or table.precision) * 1e12
    sel = n >= COMPUTE_FROM_TOKENS

    def resid(x):
        eff, half = x
        return np.log(flops * (n[sel] + half) / (peak * eff)) - np.log(t[sel])

    fit = least_squares(resid, [0.5, 100.0], bounds=([0.01, 0.0], [1.0, 4096.0]))
    eff, half = (float(v) for v in fit.x)
    out = {"compute_eff": eff, "compute_half_tokens": half}
    if n[0] < COMPUTE_FROM_TOKENS:
        out["mem_eff"] = float(min(1.0, w / (gpu.mem_bw_bytes_s * t[0])))
    out["rms_log_err"] = float(np.sqrt(np.mean(fit.fun**2)))
    return out
