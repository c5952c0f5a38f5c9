"""Efficiencies and overheads of the step model (:class:`EfficiencyParams`) and their priors.

The defaults are priors; :mod:`planner.calibration` fits them and
:func:`planner.catalog.profile.resolve_params` picks the fitted node for a deployment.
"""

from __future__ import annotations

from pydantic import Field

from planner.catalog.records import Frozen


class EfficiencyParams(Frozen):
    """Efficiencies and overheads of one (hardware family, framework, precision).

    Defaults are priors used before calibration (provenance ``prior``).
    """

    mem_eff: float = Field(0.80, gt=0, le=1, description="achieved / peak HBM bandwidth, GEMMs")
    kv_mem_eff: float = Field(
        0.80, gt=0, le=1, description="achieved / peak HBM bandwidth, KV reads"
    )
    compute_eff: float = Field(
        0.70, gt=0, le=1, description="achieved / peak dense FLOPS, large GEMMs"
    )
    compute_half_tokens: float = Field(
        64.0, ge=0, description="GEMM rows at which efficiency halves [tokens]"
    )
    attn_eff: float = Field(
        0.50, gt=0, le=1, description="achieved / peak FLOPS in attention kernels"
    )
    # comm priors: NCCL all-reduce on 2 x H200 NVLink (data/benchmarks/nccl_h200_x2_micro.csv,
    # bench/nccl_allreduce.py): t = 20 us + S / (450 GB/s x 0.68) within 5% from 4 MiB up
    comm_eff: float = Field(0.68, gt=0, le=1, description="achieved / link bandwidth in all-reduce")
    comm_latency_s: float = Field(20e-6, ge=0, description="fixed cost per all-reduce [s]")
    step_overhead_s: float = Field(0.0, ge=0, description="fixed cost per forward step [s]")
    layer_overhead_s: float = Field(0.0, ge=0, description="fixed cost per layer per step [s]")
    seq_overhead_s: float = Field(0.0, ge=0, description="cost per sequence per step [s]")
    eager_layer_s: float = Field(
        0.0,
        ge=0,
        description="CPU dispatch time per layer of a step that runs eagerly (any step with "
        "prefill tokens; decode-only steps replay a CUDA graph); the GPU time is hidden "
        "behind it when shorter [s]",
    )
    sched_overhead_s: float = Field(
        0.0, ge=0, description="serving scheduler cost per iteration [s]"
    )

    def with_(self, **kw: float) -> EfficiencyParams:
        return self.model_copy(update=kw)


PRIOR = EfficiencyParams()
