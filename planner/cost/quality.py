"""Published accuracy of quantized models: lookup by (model id, precision id).

A row of ``data/quality.yaml`` lists the catalog model ids it applies to (``models:``)
and one precision id. ``quality_delta(model, precision)`` returns every row whose
``models`` contains the model id and whose ``precision`` equals the precision id —
exact ids, never a guess from a neighbouring size or generation. With a catalog,
aliases are resolved to ids first (``llama-3.1-70b-instruct`` → ``llama-3.1-70b``,
``awq`` → ``int4-awq``). Unquantized precisions (bf16, fp16) are the baseline, and so
is the model's own released format (``native_precision``: deepseek-v3's fp8, gpt-oss's
fp4), against which the rows of its quantized checkpoints are stated; any other
combination without a row is "quality not measured".
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..catalog import Catalog
from ..errors import PlannerError
from .data import QualityData, QualityRow, load_quality

__all__ = [
    "BASELINE_PRECISIONS",
    "FP4_FORMAT_BY_ARCH",
    "NOT_MEASURED",
    "QualityResult",
    "quality_delta",
]

BASELINE_PRECISIONS: tuple[str, ...] = ("bf16", "fp16")
NOT_MEASURED = "quality not measured"
#: the fp4 block format a GPU architecture computes natively (data/precisions.yaml, fp4:
#: Blackwell deployments load NVIDIA's NVFP4 checkpoints, CDNA4 AMD's MXFP4 ones); elsewhere
#: fp4 weights are dequantized (weight-only) and rows of either format are shown
FP4_FORMAT_BY_ARCH: dict[str, str] = {"blackwell": "nvfp4", "cdna4": "mxfp4"}


class QualityResult(BaseModel):
    """Outcome of a quality lookup.

    ``status``: ``measured`` (``rows`` holds one row per checkpoint × benchmark),
    ``baseline`` (an unquantized precision, or the model's released one: no quantization
    loss to report) or
    ``not_measured`` (no published number in ``data/quality.yaml``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    precision: str
    status: Literal["measured", "baseline", "not_measured"]
    rows: tuple[QualityRow, ...] = ()
    message: str

    @property
    def measured(self) -> bool:
        return self.status == "measured"

    @property
    def worst_delta_pct(self) -> float | None:
        """Most negative relative change over the rows [%]; None unless measured."""
        return min((r.delta_pct for r in self.rows), default=None)


def quality_delta(
    model: str,
    precision: str,
    *,
    quality: QualityData | None = None,
    cat: Catalog | None = None,
    native_precision: str | None = None,
    gpu_arch: str | None = None,
) -> QualityResult:
    """Published accuracy delta of ``model`` quantized to ``precision``.

    Parameters
    ----------
    model : model id (or alias when ``cat`` is given)
    precision : precision id (or alias when ``cat`` is given)
    quality : rows (``load_quality()`` when None)
    cat : resolve aliases and reject unknown ids (UnknownIdError lists the valid ones);
        with it, the model's ``native_precision`` is read from the catalog
    native_precision : the model's released precision id (``ModelArch.native_precision``);
        that precision is the baseline (None: only bf16/fp16 are)
    gpu_arch : the GPU architecture that serves it; for fp4 on an architecture of
        :data:`FP4_FORMAT_BY_ARCH` only rows of the format it computes count (an nvfp4
        row is not the quality of an MXFP4 checkpoint on CDNA4)

    Returns
    -------
    QualityResult : rows with ``delta_points`` [benchmark points], ``delta_pct`` [%],
    benchmark, source and as_of; or status ``baseline`` / ``not_measured``.
    """
    if not isinstance(model, str) or not model.strip():
        raise PlannerError(f"model must be a model id, got {model!r}")
    if not isinstance(precision, str) or not precision.strip():
        raise PlannerError(f"precision must be a precision id, got {precision!r}")
    if cat is not None:
        arch = cat.model(model)
        model_id = arch.id
        precision_id = cat.precision(precision).id
        native_precision = native_precision or arch.native_precision
    else:
        model_id, precision_id = model.strip().lower(), precision.strip().lower()
    if precision_id in BASELINE_PRECISIONS:
        return QualityResult(
            model=model_id,
            precision=precision_id,
            status="baseline",
            message=f"{precision_id} is unquantized: the baseline, no quantization loss",
        )
    if native_precision is not None and precision_id == native_precision.strip().lower():
        return QualityResult(
            model=model_id,
            precision=precision_id,
            status="baseline",
            message=(
                f"{precision_id} is {model_id}'s released precision: the baseline, "
                "no quantization loss"
            ),
        )
    data = quality if quality is not None else load_quality()
    rows = tuple(
        r
        for r in data.rows
        if r.precision.lower() == precision_id and model_id in (m.lower() for m in r.models)
    )
    fmt = FP4_FORMAT_BY_ARCH.get(gpu_arch or "") if precision_id == "fp4" else None
    other = tuple(r for r in rows if fmt is not None and r.fp4_format != fmt)
    rows = tuple(r for r in rows if r not in other)
    if not rows and other:
        return QualityResult(
            model=model_id,
            precision=precision_id,
            status="not_measured",
            message=(
                f"{NOT_MEASURED} for {model_id} at fp4 as {fmt} ({gpu_arch}); published "
                f"{', '.join(sorted({r.fp4_format or '' for r in other}))} rows: "
                + "; ".join(sorted({r.checkpoint or r.source for r in other}))
            ),
        )
    if not rows:
        return QualityResult(
            model=model_id,
            precision=precision_id,
            status="not_measured",
            message=f"{NOT_MEASURED} for {model_id} at {precision_id} (no published row in data/quality.yaml)",
        )
    parts = []
    for r in rows:
        d = (
            f"{r.delta_points:+.2f} points"
            if r.delta_points is not None
            else f"{r.delta_pct:+.1f}%"
        )
        parts.append(f"{r.benchmark} {d} vs {r.baseline_precision} ({r.checkpoint or r.source})")
    return QualityResult(
        model=model_id,
        precision=precision_id,
        status="measured",
        rows=rows,
        message="; ".join(parts),
    )
