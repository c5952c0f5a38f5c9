"""Serving simulation of one replica: iteration-level continuous batching and static batching
(:func:`simulate`; the event loop itself is in :mod:`planner.serving._engine`, compiled
in :mod:`planner.serving._kernel`).

The simulator replays the scheduler of a vLLM / SGLang / TensorRT-LLM style engine one
iteration (forward step) at a time:

* **Admission** (FCFS): the head of the queue joins when a sequence slot is free
  (``max_num_seqs``), the iteration's token budget (``max_num_batched_tokens``) has room,
  and the paged KV cache has the blocks for its prompt (``ceil(prompt / block_size)``, a
  1 % watermark kept free). Shared-prefix blocks are held once for everybody.
* **Chunked prefill**: running decodes take one token each from the budget first, then
  unfinished prefills continue, then new prompts start, each cut to what is left of the
  budget. Without chunked prefill a prompt joins only when all of it fits (a lone prompt
  larger than the budget still runs).
* **KV growth and preemption**: a decoding sequence takes a new block whenever its
  context crosses a block boundary; when the cache is full the most recently admitted
  running request is preempted *by recompute* (its blocks are freed and it re-queues at
  the front; on re-admission it prefills its prompt plus the tokens it had produced).
* **Duration** of each iteration: :meth:`planner.engine.step.StepModel.step_time` for exactly the
  prefill chunks and decode tokens it holds (attention pairs ``n*p + n(n+1)/2`` for a chunk
  of n tokens after p cached ones, window-capped on sliding-window layers; the ``n*p`` part
  at ``prefix_attn_eff``), plus the host time ``sched_overhead_s + sched_seq_overhead_s x
  sequences`` and the longest decoder's attention
  (:meth:`~planner.engine.step.StepModel.straggler_time`; the loop keeps a max-heap of the
  decoders' lengths). The serving terms are fitted on iteration logs
  (:mod:`planner.calibration.iterations`); without one they are zero.

Between events (an arrival that can be admitted, a completion, a KV-block shortage, a
sliding-window crossing) the batch is a fixed set of decoders whose step time grows
linearly with the summed context, so those iterations are advanced in one stride with
the exact arithmetic-series sum. Each request then costs O(log n) work, and the loop runs
compiled with numba (:mod:`planner.serving._kernel`): 100k requests take about a
tenth of a second once compiled. The compiled code is cached on disk (``__pycache__`` or
``NUMBA_CACHE_DIR``); the first simulation of a process loads it (a fraction of a second),
or compiles it when there is no cache (~20 s).

Outputs are per-request arrays (TTFT includes queueing; TPOT = (E2E - TTFT)/(output - 1);
E2E) plus aggregates (token-weighted inter-token latency, batch-size distribution, KV
utilisation, preemptions) -- see :class:`SimResult`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.errors import PlannerError, require_positive
from planner.serving.probe import run
from planner.serving.replica import Replica, check_fits
from planner.serving.result import SimResult
from planner.workload.workload import Requests, Workload

# =========================================================================== the simulator
# Request-count caps, set from measurements of the numba-compiled loop (chat-8b example, a
# shared 2-core machine; CPU time and peak RSS of the whole `planner` process): simulate 10^5
# requests 1.3 s / 0.22 GB, 10^6 5.8 s / 0.53 GB, 3*10^6 18 s / 1.27 GB, 10^7 75 s / 3.8 GB;
# capacity --requests 10^5 2.2 s / 0.26 GB, 10^6 16 s / 1.28 GB (each rate of the search
# simulates up to ~12x the scored count). Time is no longer the limit (~7 us per request):
# memory is, ~0.4 KB per simulated request, so the caps keep a run near 1.3 GB and under half
# a minute. Percentiles are converged far below them.
MAX_SIM_REQUESTS = 3_000_000
MAX_CAPACITY_REQUESTS = 1_000_000
_CAP_COST = {
    MAX_SIM_REQUESTS: "about 1.3 GB of memory and 20 s at the cap",
    MAX_CAPACITY_REQUESTS: "about 1.3 GB of memory and 25 s at the cap",
}


def _check_request_count(n: Any, cap: int, what: str) -> None:
    require_positive(what, n)
    if n > cap:
        cost = _CAP_COST.get(cap, "memory grows with the count")
        raise PlannerError(
            f"{what} {n:,} is above the supported {cap:,} (memory is the limit: ~0.4 KB per "
            f"simulated request, {cost}); percentiles are converged well below it"
        )


def simulate(
    replica: Replica,
    requests: Requests | Workload,
    *,
    rng: np.random.Generator | None = None,
    n_requests: int = 2000,
    rate_rps: float | None = None,
    concurrency: int | None = None,
    static_batching: bool | None = None,
    offline: bool | None = None,
) -> SimResult:
    """Simulate one replica serving a request stream.

    Parameters
    ----------
    replica : the :class:`Replica` (a scenario builds one: ``Scenario.build_replica``)
    requests : a :class:`~planner.workload.Requests` list, or a
        :class:`~planner.workload.Workload` to sample ``n_requests`` from
    rng : random generator (default ``np.random.default_rng(0)``); results are
        deterministic given it
    rate_rps : arrival rate when sampling from a workload [req/s] (default its peak)
    concurrency : closed loop with this many clients (each sends its next request when the
        previous completes); arrival times in ``requests`` are then ignored
    static_batching : force static batching (default: the engine's mode)
    offline : queue every request at t = 0 (default: the workload's ``offline`` flag)
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    if requests is None or isinstance(requests, Workload):
        _check_request_count(n_requests, MAX_SIM_REQUESTS, "requests")
    if not isinstance(replica, Replica):
        raise PlannerError("simulate() takes a Replica (see planner.serving.build_replica)")
    if requests is None:
        raise PlannerError("simulate() needs requests or a workload")
    if isinstance(requests, Workload):
        off = requests.offline if offline is None else offline
        reqs = requests.sample_requests(
            n_requests,
            rng,
            rate_rps,
            context_limit=replica.engine.context_limit_tokens,
            prefix_caching=replica.engine.prefix_caching,
        )
        if off:
            reqs = reqs.all_at_once()
    else:
        reqs = requests
        if offline:
            reqs = reqs.all_at_once()
    check_fits(replica, reqs)
    return run(replica, reqs, concurrency, static_batching=static_batching)


def load_kernels() -> None:
    """Load every compiled kernel of the simulator now (numba imported, its caches loaded),
    not on first use: e.g. before a fork (:mod:`planner.recommend.processes`), so that a
    child never needs numba's compiler lock or an import lock that another thread held."""
    from planner.serving._kernel import kernel
    from planner.serving._steady import slo_rate_kernel
    from planner.serving._unloaded import unloaded_kernel

    kernel()
    slo_rate_kernel()
    unloaded_kernel()
