"""Bounds and start values of the fitted parameters of :mod:`planner.calibration.fit`."""

from __future__ import annotations

#: parameters the fit may move, their bounds and the prior width (std-dev of log value)
FIT_BOUNDS: dict[str, tuple[float, float, float]] = {
    "mem_eff": (0.15, 1.0, 0.35),
    "kv_mem_eff": (0.1, 1.0, 0.5),
    "compute_eff": (0.1, 1.0, 0.35),
    "compute_half_tokens": (1.0, 8192.0, 1.5),
    "attn_eff": (0.03, 1.0, 0.6),
    "step_overhead_s": (1e-6, 0.2, 2.5),
    "layer_overhead_s": (1e-8, 2e-3, 2.5),
    "seq_overhead_s": (1e-9, 2e-3, 2.5),
    "eager_layer_s": (1e-7, 5e-3, 3.0),
    # comm_eff bounded below by NCCL's measured all-reduce efficiency, 0.68 on 2 x H200 NVLink
    # (data/benchmarks/nccl_h200_x2_micro.csv, tests/test_tp_comm.py): below it the fit used
    # comm_eff (0.065-0.10) to slow TP > 1 MoE prefill, which moe_compute_scale now carries
    "comm_eff": (0.68, 1.0, 0.6),
    # routed-expert GEMMs / dense GEMMs (planner.engine.moe_eff): GPUStack's MoE prefill needs
    # 0.12-0.21 against ~0.6 dense (docs/changes/2026-12-07c/gpustack.md); a broad prior at 1
    "moe_compute_scale": (0.05, 1.0, 1.0),
    # host time per serving iteration: offline throughput rows cannot tell it from slow kernels
    # (a throughput shortfall of a source's setup went into it: 12-70 ms per iteration with
    # the public vLLM/SGLang rows); at most 2 ms, 4x the slowest host time measured on the
    # reference engine's serving runs (0.48 ms, docs/accuracy.md)
    "sched_overhead_s": (1e-7, 2e-3, 2.5),
}
#: priors of the overheads are not zero in log space: start values for the global node
_START = {
    "step_overhead_s": 2e-4,
    "layer_overhead_s": 5e-6,
    "seq_overhead_s": 1e-6,
    "eager_layer_s": 1e-4,
    "sched_overhead_s": 1e-4,
}
