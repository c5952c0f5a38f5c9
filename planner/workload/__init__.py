"""Workload: prompt / answer length distributions, traffic, prefix reuse, SLOs, presets.

* :class:`Workload` -- traffic + length distributions + prefix reuse; ``sample_requests``
  draws a concrete :class:`Requests` list (``input_tokens`` / ``output_tokens`` per request).
* :class:`SLO` -- TTFT / TPOT / E2E thresholds at percentiles plus an attainment target.
* :func:`preset` -- the bundled workload presets (``chat``, ``rag``, ``batch``, ...).
"""

from planner.workload.lengths import (
    FixedLength,
    HistogramLength,
    LengthDist,
    LognormalLength,
    NormalLength,
    QuantileLength,
    TraceLength,
    UniformLength,
)
from planner.workload.presets import PRESETS, mlperf_deepseek_r1_lengths, openorca_lengths
from planner.workload.slo import SLO, SloTarget
from planner.workload.traffic import PrefixReuse, Trace, Traffic, load_trace
from planner.workload.workload import (
    Requests,
    Workload,
    make_requests,
    preset,
    resolve_path,
    sample_memo_held,
)

__all__ = [
    "sample_memo_held",
    "PRESETS",
    "SLO",
    "FixedLength",
    "HistogramLength",
    "LengthDist",
    "LognormalLength",
    "NormalLength",
    "PrefixReuse",
    "QuantileLength",
    "Requests",
    "SloTarget",
    "Trace",
    "TraceLength",
    "Traffic",
    "UniformLength",
    "Workload",
    "load_trace",
    "make_requests",
    "mlperf_deepseek_r1_lengths",
    "openorca_lengths",
    "preset",
    "resolve_path",
]
