"""Routed-expert GEMM efficiency of the step model (:meth:`planner.engine.step.StepModel.step`).

The routed experts of a MoE layer run in a fused / grouped kernel (vLLM ``fused_moe``,
Marlin MoE, triton ``matmul_ogs``), not in the dense GEMMs of attention and the shared
layers. :attr:`EfficiencyParams.moe_compute_scale` gives their FLOPs an efficiency of their
own, ``compute_eff x moe_compute_scale`` on the same row ramp; at the prior 1 the step is
the dense-efficiency step, bit for bit (the term is skipped). The scalar twin is in
:func:`planner.engine._scalar.step_time_scalar`.
"""

from __future__ import annotations

import numpy as np

from planner.catalog.efficiency import EfficiencyParams


def split_time(mm_flops, moe_flops, peak_flops: float, eff, p: EfficiencyParams):
    """GEMM compute time [s] with the routed-expert FLOPs at their own efficiency.

    Parameters
    ----------
    mm_flops : all GEMM FLOPs of the step, routed experts included [FLOP]
    moe_flops : the routed-expert part of ``mm_flops`` [FLOP]
    peak_flops : dense peak of the compute dtype [FLOP/s]
    eff : dense GEMM efficiency at the step's rows (ramped ``compute_eff``)
    p : the efficiencies (``moe_compute_scale``)
    """
    e = np.maximum(eff, 1e-12)
    return (mm_flops - moe_flops) / (peak_flops * e) + moe_flops / (
        peak_flops * (e * p.moe_compute_scale)
    )
