"""Published per-layer surplus of an engine's MoE backend (``data/moe_backends.yaml``).

One record per (engine, MoE backend, precision, architecture): the backend's and a reference
backend's MoE layer time at the token counts a source timed side by side. The surplus is the
mean of their differences [s per MoE layer and step]; :func:`backend_surplus_s` gives it for a
deployment, 0 where no record applies or the file's ``applied`` is false (the switch). Its user
is :func:`planner.engine.moe_backend.with_moe_backend`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Frozen, Sourced
from planner.files import load_data_file

__all__ = ["MoeBackendSurplus", "backend_surplus_s", "moe_backends"]


class MoeBackendSurplus(Sourced):
    """One backend's MoE layer time against a reference backend's, on the same shape."""

    id: str = Field(min_length=2)
    framework: str = Field(min_length=2, description="engine id (catalog framework)")
    backend: str = Field(min_length=2, description="the engine's MoE backend name")
    reference_backend: str = Field(min_length=2, description="the backend compared with")
    precision: str = Field(min_length=2, description="precision id of the experts")
    arch: str = Field(min_length=2, description="GPU architecture")
    tokens: tuple[int, ...] = Field(min_length=1, description="tokens a layer [tokens]")
    backend_ms: tuple[float, ...] = Field(description="the backend's layer time [ms]")
    reference_ms: tuple[float, ...] = Field(description="the reference's layer time [ms]")

    @model_validator(mode="after")
    def _same_lengths(self):
        if not len(self.tokens) == len(self.backend_ms) == len(self.reference_ms):
            raise ValueError("tokens, backend_ms and reference_ms need the same length")
        if min(self.backend_ms + self.reference_ms) <= 0:
            raise ValueError("layer times must be positive")
        return self

    @property
    def surplus_s(self) -> float:
        """Mean of ``backend_ms - reference_ms`` over the timed token counts [s per layer]."""
        d = [b - r for b, r in zip(self.backend_ms, self.reference_ms, strict=True)]
        return sum(d) / len(d) / 1e3


class _File(Frozen):
    applied: bool = True
    backends: tuple[MoeBackendSurplus, ...]


@lru_cache(maxsize=4)
def moe_backends(
    data_dir: str | None = None, applied_only: bool = True
) -> tuple[MoeBackendSurplus, ...]:
    """The records of ``data/moe_backends.yaml``: empty where the file is absent or, with
    ``applied_only``, where its ``applied`` is false."""
    f = load_data_file(Path(data_dir or DATA_DIR) / "moe_backends.yaml", _File, 120)
    if f is None or (applied_only and not f.applied):
        return ()
    return f.backends


def backend_surplus_s(
    framework: str | None,
    backend: str | None,
    precision: str,
    arch: str,
    data_dir: str | None = None,
    applied_only: bool = True,
) -> float:
    """Surplus of ``backend`` on ``framework`` for ``precision`` experts on ``arch`` [s per
    MoE layer and step]; 0.0 where the backend is unstated or no record applies.

    Example: TensorRT-LLM's CUTLASS backend, NVFP4, Blackwell (FlashInfer PR #4985):
    (22 + 22 + 19 + 22 + 21) / 5 = 21.2 us."""
    if not framework or not backend:
        return 0.0
    for r in moe_backends(data_dir, applied_only):
        if (r.framework, r.backend.upper(), r.precision, r.arch) == (
            framework,
            backend.upper(),
            precision,
            arch,
        ):
            return r.surplus_s
    return 0.0
