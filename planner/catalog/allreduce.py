"""The fixed cost of one tensor-parallel all-reduce by implementation (``data/allreduce.yaml``).

Records: the implementations (NCCL's default kernels, the TensorRT-LLM / FlashInfer one-shot
all-reduce fused with the residual RMSNorm, NCCL's symmetric-memory kernels), each with the
published latency of one all-reduce at decode sizes where someone published it, and the
launches whose scripts state which implementation their decode steps run.
:func:`launch_latency_s` gives the latency a row's launch states, or ``None`` (the step model
then keeps :attr:`~planner.catalog.efficiency.EfficiencyParams.comm_latency_s`): the
implementation's own latency (file ``charge: absolute``), or the prior less the saving the
source measured against the kernels a fusion replaces (``charge: saving``,
:func:`saving_latency_s`).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Frozen, Sourced
from planner.files import load_data_file

__all__ = [
    "AllReduceImpl",
    "AllReduceLaunch",
    "allreduce_file",
    "launch_latency_s",
    "saving_latency_s",
]


class AllReduceImpl(Sourced):
    """One all-reduce implementation and its published per-call latency."""

    id: str = Field(min_length=2)
    name: str = Field(min_length=3)
    latency_s: float | None = Field(
        default=None, gt=0, lt=1e-3, description="one decode-size all-reduce [s]; None: unknown"
    )
    topology: str = Field(min_length=3, description="the GPUs and message sizes it was timed on")
    replaces_s: float | None = Field(
        default=None,
        gt=0,
        lt=1e-3,
        description="the separate kernels a fused implementation replaces, timed by the same "
        "source on the same step [s]; None: not a fusion, or not timed",
    )


class AllReduceLaunch(Sourced):
    """A benchmark launch whose script states the all-reduce path of its decode steps."""

    name: str = Field(min_length=3)
    applied: bool = True
    framework: str = Field(min_length=2)
    precisions: tuple[str, ...] = Field(min_length=1)
    hardware: tuple[str, ...] = Field(min_length=1)
    notes_contain: str = Field(min_length=10, description="text every matching row's notes hold")
    notes_any: tuple[str, ...] = Field(
        min_length=1, description="texts of which a matching row's notes hold at least one"
    )
    flags: str = Field(min_length=3, description="the launch flags that choose the path")
    implementation: str = Field(min_length=2)

    def matches(self, framework: str, precision: str, hardware: str, notes: str) -> bool:
        """Whether a row (its framework, precision, hardware and notes) is this launch."""
        return (
            framework == self.framework
            and precision in self.precisions
            and hardware in self.hardware
            and self.notes_contain in (notes or "")
            and any(t in (notes or "") for t in self.notes_any)
        )


class AllReduceFile(Frozen):
    applied: bool = False
    #: how a matched launch is charged: ``absolute`` (s8-symmem) replaces the step model's
    #: ``comm_latency_s`` by the implementation's published latency; ``saving`` (s12-sglep)
    #: subtracts only what the source measured the fusion to save against the separate kernels
    #: it replaces (``replaces_s - latency_s``), the rest of the step model left as fitted
    charge: Literal["absolute", "saving"] = "absolute"
    implementations: tuple[AllReduceImpl, ...] = Field(min_length=1)
    launches: tuple[AllReduceLaunch, ...] = ()

    @model_validator(mode="after")
    def _known(self) -> AllReduceFile:
        ids = [i.id for i in self.implementations]
        if len(set(ids)) != len(ids):
            raise ValueError("implementations: an id is given twice")
        for k, la in enumerate(self.launches):
            if la.implementation not in ids:
                raise ValueError(
                    f"launches.{k}.implementation: {la.implementation!r} is not an "
                    f"implementation ({', '.join(ids)})"
                )
        return self

    def impl(self, impl_id: str) -> AllReduceImpl:
        return next(i for i in self.implementations if i.id == impl_id)


@lru_cache(maxsize=4)
def allreduce_file(data_dir: str | None = None) -> AllReduceFile | None:
    """``data/allreduce.yaml`` validated (None where the file is absent)."""
    return load_data_file(Path(data_dir or DATA_DIR) / "allreduce.yaml", AllReduceFile, 140)


def launch_latency_s(
    framework: str, precision: str, hardware: str, notes: str, data_dir: str | None = None
) -> float | None:
    """The per-all-reduce latency [s] a row's launch states: the first applied launch of an
    applied file that matches (:meth:`AllReduceLaunch.matches`) and whose implementation has a
    published latency; ``None`` otherwise (the step model's ``comm_latency_s`` stays)."""
    f = allreduce_file(data_dir)
    if f is None or not f.applied:
        return None
    for la in f.launches:
        if la.applied and la.matches(framework, precision, hardware, notes):
            impl = f.impl(la.implementation)
            if f.charge == "saving":
                return saving_latency_s(impl)
            return impl.latency_s
    return None


def saving_latency_s(impl: AllReduceImpl) -> float | None:
    """The per-all-reduce latency [s] of a fused implementation read as a saving: the step
    model's prior ``comm_latency_s`` (never fitted) less what the source measured the fusion
    to save against the separate kernels it replaces; ``None`` where the implementation is no
    timed fusion or the saving is not positive.

    Example (SGLang PR #7621, B200, DeepSeek-R1-FP4 TP8): separate all-reduce + RMSNorm 13.5
    us, fused 8.7 us: 20 - (13.5 - 8.7) = 15.2 us a collective."""
    from planner.catalog.efficiency import EfficiencyParams

    if impl.latency_s is None or impl.replaces_s is None or impl.replaces_s <= impl.latency_s:
        return None
    prior = EfficiencyParams.model_fields["comm_latency_s"].default
    return max(0.0, prior - (impl.replaces_s - impl.latency_s))
