"""Published timings of one routed-expert MoE layer (``data/moe_kernels.yaml``).

One record per (kernel, model shape, weight format, architecture, expert-parallel shard):
the time of the whole routed MoE op (routing, expert GEMMs, finalize) at each timed token
count, on its reference GPU. :func:`moe_layer_timing` picks the applied record that matches
a step's shape, or ``None`` (the step model then has no floor). The engine's use of it is
:mod:`planner.engine.moe_floor`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Frozen, Sourced
from planner.files import load_data_file

__all__ = ["MoeLayerTiming", "moe_layer_timing", "moe_layer_timings"]


class MoeLayerTiming(Sourced):
    """Timings of one routed MoE layer of one shape on one architecture."""

    kernel: str = Field(min_length=3)
    applied: bool = True
    engines: tuple[str, ...] = ()
    arch: str = Field(min_length=2)
    precision: str = Field(min_length=2, description="catalog precision id of the weights")
    hidden_size: int = Field(ge=1)
    moe_intermediate_size: int = Field(ge=1)
    num_experts: int = Field(ge=2)
    top_k: int = Field(ge=1)
    local_experts: int = Field(ge=1, description="routed experts on the timed shard")
    memory_bound_max_tokens: float = Field(
        gt=0, description="the last timed count of the memory-bound regime (the floor's range)"
    )
    reference_gpu: str = Field(min_length=2)
    reference_mem_bw_gbs: float = Field(gt=0)
    tokens: tuple[float, ...] = Field(min_length=2, description="tokens into the layer")
    time_us: tuple[float, ...] = Field(min_length=2, description="its time at each [us]")

    @model_validator(mode="after")
    def _table(self) -> MoeLayerTiming:
        if len(self.tokens) != len(self.time_us):
            raise ValueError("tokens and time_us need the same length")
        if any(t <= 0 for t in self.tokens) or any(
            b <= a for a, b in zip(self.tokens, self.tokens[1:], strict=False)
        ):
            raise ValueError("tokens must be positive and increasing")
        if any(t <= 0 for t in self.time_us):
            raise ValueError("time_us must be positive")
        if self.memory_bound_max_tokens not in self.tokens:
            raise ValueError("memory_bound_max_tokens must be one of the timed tokens")
        if self.local_experts > self.num_experts:
            raise ValueError("local_experts exceeds num_experts")
        return self

    def matches(self, m, precision_id: str, arch: str, ep: int, moe_tp: int) -> bool:
        """Whether the record times this step's MoE layer: the model's shape, the weight
        format, the architecture, and a shard of ``num_experts / ep`` whole experts."""
        return (
            self.applied
            and arch == self.arch
            and precision_id == self.precision
            and moe_tp == 1
            and m.hidden_size == self.hidden_size
            and (m.moe_intermediate_size or 0) == self.moe_intermediate_size
            and m.num_experts == self.num_experts
            and m.num_experts_per_tok == self.top_k
            and ep * self.local_experts == self.num_experts
        )


class _File(Frozen):
    moe_layer: tuple[MoeLayerTiming, ...]


@lru_cache(maxsize=4)
def moe_layer_timings(data_dir: str | None = None) -> tuple[MoeLayerTiming, ...]:
    """Every record of ``data/moe_kernels.yaml`` (empty where the file is absent)."""
    f = load_data_file(Path(data_dir or DATA_DIR) / "moe_kernels.yaml", _File, 120)
    return () if f is None else f.moe_layer


def moe_layer_timing(
    m, precision_id: str, arch: str, ep: int, moe_tp: int, data_dir: str | None = None
) -> MoeLayerTiming | None:
    """The first applied record matching the step's shape (:meth:`MoeLayerTiming.matches`),
    or ``None``."""
    for r in moe_layer_timings(data_dir):
        if r.matches(m, precision_id, arch, ep, moe_tp):
            return r
    return None
