"""Serving simulation of one replica and the capacity questions built on it.

* :mod:`~planner.serving.replica` -- :class:`EngineConfig`, :class:`Replica`, :func:`build_replica`
* :mod:`~planner.serving.simulate` -- :func:`simulate` (event loop in ``_engine``, compiled
  with numba in ``_kernel``)
* :mod:`~planner.serving.result` -- :class:`SimResult`
* :mod:`~planner.serving.steady_state` -- :func:`steady_state` (analytic, no event loop)
* :mod:`~planner.serving.probe` -- :class:`CapacityProbe` (does a replica meet the SLO at a
  rate; how many replicas a peak needs; one or several request classes), :func:`run` (the
  simulator's runner for the engine's batching mode)
* :mod:`~planner.serving.capacity` -- :func:`max_rate`, :func:`throughput_latency_curve`,
  :func:`compare_tp`
* :mod:`~planner.serving.zero_load` -- :func:`unloaded_latency`, :func:`check_reachable`
* :mod:`~planner.serving.fleet` -- :func:`size_fleet`
* :data:`SIMULATING` -- set while a simulation's compiled loop runs (without the GIL)
"""

from planner.serving._engine import SIMULATING
from planner.serving.capacity import (
    CapacityResult,
    compare_tp,
    max_rate,
    throughput_latency_curve,
)
from planner.serving.fleet import size_fleet
from planner.serving.probe import (
    CapacityProbe,
    RequestClass,
    WorkloadCache,
    run,
    scored_requests,
)
from planner.serving.replica import (
    EngineConfig,
    Replica,
    build_replica,
    check_fits,
    check_workload_fits,
)
from planner.serving.result import SimResult
from planner.serving.simulate import load_kernels, simulate
from planner.serving.steady_state import SteadyStateResult, steady_state
from planner.serving.zero_load import check_reachable, unloaded_latency

__all__ = [
    "SIMULATING",
    "CapacityProbe",
    "CapacityResult",
    "RequestClass",
    "WorkloadCache",
    "run",
    "scored_requests",
    "EngineConfig",
    "SteadyStateResult",
    "Replica",
    "SimResult",
    "build_replica",
    "check_fits",
    "check_workload_fits",
    "check_reachable",
    "compare_tp",
    "steady_state",
    "max_rate",
    "load_kernels",
    "simulate",
    "size_fleet",
    "throughput_latency_curve",
    "unloaded_latency",
]
