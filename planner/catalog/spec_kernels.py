"""Which attention kernel verifies speculative tokens of an MLA model (``data/spec_kernels.yaml``).

One record per (engine, GPU architecture): how the kernel the engine runs for a verify step's
K + 1 query tokens per sequence reads the KV cache, as its source code says. ``per_token``:
one CTA per query token, each streaming the KV (TensorRT-LLM's trtllm-gen MLA generation
kernels on SM100); ``packed``: the tokens x query heads of a sequence are the rows of
``tile_rows``-row tiles, each tile reading the KV once (FlashMLA, FlashInfer MLA, aiter's
asm MLA decode). :func:`planner.engine.spec_kv.verify_kv_passes` turns a record into the KV
passes of a verify step; :func:`verify_kernel` finds the record (``None``: no source read,
the KV is read once).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Frozen, Sourced
from planner.errors import PlannerError
from planner.files import load_data_file

__all__ = ["VerifyKernel", "verify_kernel", "verify_kernels"]


class VerifyKernel(Sourced):
    """How one engine's MLA verify kernel reads the KV cache on one GPU architecture.

    Attributes
    ----------
    engine : framework id (``data/frameworks.yaml``)
    arch : GPU architecture (``data/hardware.yaml`` ``arch``)
    gpus : the catalog GPUs of ``arch`` the kernel runs on (empty: every one)
    kernel : the kernel, in words
    rule : ``per_token`` (K + 1 passes) or ``packed`` (tiles of ``tile_rows`` rows)
    tile_rows : query rows (tokens x heads) per tile [rows] (``packed`` only)
    max_heads_per_gpu : the record says nothing above this many query heads per GPU (0: no
        limit)
    token_pass_fraction : ``per_token`` only: what each further query token's stream costs
        in HBM passes, from a published timing of the kernel at q > 1 against q = 1 (the
        token CTAs of one sequence run side by side and share some of the KV through L2);
        1: every token a full pass
    """

    engine: str = Field(min_length=2)
    arch: str = Field(min_length=2)
    gpus: tuple[str, ...] = ()
    kernel: str = Field(min_length=3)
    rule: Literal["per_token", "packed"]
    tile_rows: int | None = Field(default=None, ge=1)
    max_heads_per_gpu: int = Field(default=0, ge=0)
    token_pass_fraction: float = Field(default=1.0, gt=0.0, le=1.0)

    @model_validator(mode="after")
    def _tile(self) -> VerifyKernel:
        if (self.rule == "packed") != (self.tile_rows is not None):
            raise ValueError("tile_rows is given for rule packed, and only for it")
        if self.rule == "packed" and self.token_pass_fraction != 1.0:
            raise ValueError("token_pass_fraction is for rule per_token only")
        return self


class _File(Frozen):
    verify_attention: tuple[VerifyKernel, ...]


@lru_cache(maxsize=4)
def verify_kernels(data_dir: str | None = None) -> tuple[VerifyKernel, ...]:
    """Every record of ``data/spec_kernels.yaml`` (empty where the file is absent)."""
    path = Path(data_dir or DATA_DIR) / "spec_kernels.yaml"
    f = load_data_file(path, _File, 120)
    if f is None:
        return ()
    recs = f.verify_attention
    seen: set[tuple[str, str]] = set()
    for r in recs:
        if (r.engine, r.arch) in seen:
            raise PlannerError(f"{path.name}: two records for engine '{r.engine}' on '{r.arch}'")
        seen.add((r.engine, r.arch))
    return recs


def verify_kernel(
    engine: str | None, gpu_id: str, arch: str, data_dir: str | None = None
) -> VerifyKernel | None:
    """The record of ``engine`` on GPU ``gpu_id`` of architecture ``arch``, or ``None``."""
    if not engine:
        return None
    for r in verify_kernels(data_dir):
        if r.engine == engine and r.arch == arch and (not r.gpus or gpu_id in r.gpus):
            return r
    return None
