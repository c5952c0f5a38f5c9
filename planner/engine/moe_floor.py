"""A floor on a step's routed-expert time from a published timing of the MoE layer.

The step model reads the routed experts' weights at ``mem_eff`` of the peak bandwidth, one
fitted efficiency shared with the dense weights. A published timing of the whole routed MoE
op of the same shape (``data/moe_kernels.yaml``: routing, expert GEMMs, finalize, on a GPU of
the same architecture and bandwidth) says how fast the layer can run: no engine runs it
faster than the fastest kernel published for it. So where a record matches
(:func:`planner.catalog.moe_kernels.moe_layer_timing`) the GEMM term of a step of ``T``
replica tokens is at least

``(dense + lm head + activation bytes) / (bw x mem_eff) + moe layers x t(T)``

with ``t`` the record's time at ``T`` tokens (linear between the timed counts of its
memory-bound regime, ``memory_bound_max_tokens``, and that count's time above it: a lower
bound, since the timings rise with the tokens; scaled by the reference GPU's bandwidth over
this GPU's). Above the memory-bound counts the kernel is compute bound, which the step's
fitted compute term owns.
:meth:`planner.engine.step.StepModel.step` applies it in vector form and
:func:`planner.engine._scalar.step_time_scalar` in scalar form (the tail :func:`slots`; the step model's ``moe_kernel_points`` and ``moe_kernel_layers``).

The one record (``data/moe_kernels.yaml``) is kept ``applied: false``: held out it fixes the
B200 DeepSeek-R1 front but moves SGLang's NVFP4 TP8 EP8 rows further off (its notes); with
no applied record every step model has no floor and its coefficient tail is zeros.

Example (record applied; DeepSeek-R1 NVFP4, B200 DEP8, 128 decoding sequences, the record of flashinfer PR
#5301): t(128) = 143.617 us, 58 MoE layers: 8.33 ms of routed experts, where 31.45 expected
local experts x 1.437 GB at 0.772 x 8 TB/s give 7.32 ms.
"""

from __future__ import annotations

import numpy as np

from planner.catalog.moe_kernels import MoeLayerTiming

#: timed token counts a step model carries in its scalar coefficients (a longer table keeps
#: its first 16)
MOE_SLOTS = 16


def floor_points(rec: MoeLayerTiming, mem_bw_gbs: float) -> tuple[tuple[float, float], ...]:
    """``((tokens, seconds), ...)`` of ``rec``'s memory-bound counts (up to
    ``memory_bound_max_tokens``) on a GPU of ``mem_bw_gbs`` [GB/s]: each time x
    ``rec.reference_mem_bw_gbs / mem_bw_gbs`` (1 for B200 / B300 / GB200 / GB300)."""
    scale = rec.reference_mem_bw_gbs / mem_bw_gbs
    pts = tuple(
        (float(n), float(t) * 1e-6 * scale)
        for n, t in zip(rec.tokens, rec.time_us, strict=True)
        if n <= rec.memory_bound_max_tokens
    )
    return pts[:MOE_SLOTS]


def layer_time(points, tokens):
    """Time of one MoE layer at ``tokens`` tokens [s] (0 where ``tokens <= 0``): the first
    point's time up to its count, linear between points (``s0 + (s1 - s0) (T - t0) / (t1 -
    t0)``), the last point's time above it."""
    T = np.asarray(tokens, dtype=float)
    if not points:
        return 0.0 * T
    tok = np.array([p[0] for p in points])
    sec = np.array([p[1] for p in points])
    j = np.clip(np.searchsorted(tok, T, side="left"), 1, tok.size - 1)
    t0, t1, s0, s1 = tok[j - 1], tok[j], sec[j - 1], sec[j]
    mid = s0 + (s1 - s0) * (T - t0) / (t1 - t0)
    out = np.where(tok[0] >= T, sec[0], np.where(tok[-1] <= T, sec[-1], mid))
    return np.where(T > 0, out, 0.0)


def slots(points, layers: float) -> tuple[float, ...]:
    """``(layers, count, tokens_1..16, seconds_1..16)``: the fixed-length tail of
    :func:`planner.engine._scalar.step_time_scalar`'s coefficients (zeros: no floor)."""
    pts = tuple(points)[:MOE_SLOTS]
    pad = (0.0,) * (MOE_SLOTS - len(pts))
    return (
        float(layers if pts else 0.0),
        float(len(pts)),
        *(p[0] for p in pts),
        *pad,
        *(p[1] for p in pts),
        *pad,
    )
