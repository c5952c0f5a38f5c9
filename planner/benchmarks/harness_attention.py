"""The decode-attention rate of the kernel an MLPerf harness states it runs
(``data/mlperf_harness_attention.yaml``).

AMD's MLPerf v6.0 Llama-2-70B runs (MI355X, vLLM's ``ROCM_AITER_FA`` backend) decode with
AITER's ``pa_fwd_asm``, as AMD's v6.0 blog states. A published timing of that kernel on the
same GPU gives its KV streaming rate, ``kv_mem_eff = KV bytes / (time x bandwidth)``
(:func:`kv_mem_eff`), which the what-if ``harness_attention=True`` of
:mod:`planner.benchmarks.mlperf_latency` puts in place of the profile node's ``kv_mem_eff``
(the MI300X vLLM node's, fitted on TP8 runs with one KV head a GPU) for the rows a record
lists. The record is a kernel timing: nothing in it is read off an MLPerf result.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Accelerator, Frozen, Sourced
from planner.errors import PlannerError
from planner.files import load_data_file

__all__ = ["AttentionTiming", "harness_attention_records", "kv_mem_eff", "record_for_row"]


class AttentionTiming(Frozen):
    """One published timing of a paged-attention decode kernel, and the rows it serves."""

    name: str = Field(min_length=3)
    gpu: str = Field(min_length=3)
    kernel: str = Field(min_length=10)
    named_by: str = Field(min_length=10)
    timed_by: str = Field(min_length=10)
    rows: tuple[str, ...] = Field(min_length=1)
    batch: int = Field(gt=0)
    ctx: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    #: bytes of one K or V element in the timed call [B]
    kv_bytes: float = Field(gt=0)
    time_us: float = Field(gt=0)
    notes: str = ""

    def kv_bytes_streamed(self) -> float:
        """``batch x ctx x kv_heads x head_dim x 2 x kv_bytes``: K and V read once [B]."""
        return float(self.batch * self.ctx * self.kv_heads * self.head_dim * 2) * self.kv_bytes

    def rate_bytes_s(self) -> float:
        """The timed call's KV streaming rate [B/s]."""
        return self.kv_bytes_streamed() / (self.time_us * 1e-6)


class _File(Sourced):
    records: tuple[AttentionTiming, ...]


@lru_cache(maxsize=2)
def _file(data_dir: str | None) -> _File | None:
    return load_data_file(Path(data_dir or DATA_DIR) / "mlperf_harness_attention.yaml", _File, 120)


def harness_attention_records(data_dir: str | None = None) -> tuple[AttentionTiming, ...]:
    """Every record of ``data/mlperf_harness_attention.yaml`` (empty when absent)."""
    f = _file(data_dir)
    return () if f is None else f.records


def record_for_row(row_id: str, data_dir: str | None = None) -> AttentionTiming | None:
    """The timing of the decode kernel a benchmark row's harness states, or None."""
    return next((r for r in harness_attention_records(data_dir) if row_id in r.rows), None)


def kv_mem_eff(rec: AttentionTiming, gpu: Accelerator) -> float:
    """The record's streaming rate over ``gpu``'s datasheet bandwidth [-], capped at 1.

    Raises PlannerError when the record times another GPU."""
    if gpu.id != rec.gpu:
        raise PlannerError(f"attention timing '{rec.name}' is of {rec.gpu}, not {gpu.id}")
    return float(min(1.0, rec.rate_bytes_s() / gpu.mem_bw_bytes_s))
