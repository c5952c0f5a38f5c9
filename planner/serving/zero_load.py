"""Requests served alone (zero load): their latencies (:func:`unloaded_latency`) and whether
a replica can meet an SLO at all (:func:`check_reachable`), before any simulation."""

from __future__ import annotations

import numpy as np

from planner.errors import PlannerError
from planner.serving._jit import freeze_long_lived
from planner.serving.replica import Replica
from planner.serving.verdict import percentile_over
from planner.workload.slo import SLO
from planner.workload.workload import Requests, Workload

#: seed of the requests :func:`unloaded_latency` serves alone
UNLOADED_SEED = 12345


def _unloaded_sample(
    replica: Replica, workload: Workload, n: int, rng: np.random.Generator | None = None
) -> Requests:
    """The requests :func:`unloaded_latency` serves alone (default seed 12345)."""
    eng = replica.engine
    return workload.sample_requests(
        n,
        rng if rng is not None else np.random.default_rng(UNLOADED_SEED),
        1.0,
        context_limit=eng.context_limit_tokens,
        prefix_caching=eng.prefix_caching,
    )


def unloaded_latency(
    replica: Replica,
    workload: Workload,
    n: int = 400,
    rng: np.random.Generator | None = None,
    *,
    requests: Requests | None = None,
    e2e: bool = True,
) -> dict[str, np.ndarray]:
    """Per-request TTFT, TPOT and E2E of requests served alone (no queueing, batch 1) [s].

    ``requests``: the sample to serve (default: ``n`` requests of ``workload`` drawn with
    ``rng``, seed 12345; :meth:`WorkloadCache.unloaded_requests` keeps that sample).
    ``e2e=False``: without ``e2e_s`` (a verdict with no E2E target reads none)."""
    eng, sm = replica.engine, replica.sm
    sched = eng.host_time_s(1)
    W = int(sm.window) if sm.layers_sw > 0 and sm.window > 0 else 0
    reqs = requests if requests is not None else _unloaded_sample(replica, workload, n, rng)
    budget = eng.max_num_batched_tokens if eng.chunked_prefill else 1 << 60
    # each request alone: its prompt in chunks of at most `budget` tokens (TTFT), then the
    # mean of its first and last decode steps (TPOT); compiled (planner.serving._unloaded)
    from planner.serving._unloaded import unloaded_kernel

    ttft, tpot = unloaded_kernel()(
        sm._coeffs,
        np.ascontiguousarray(reqs.input_tokens, np.int64),
        np.ascontiguousarray(reqs.output_tokens, np.int64),
        np.ascontiguousarray(reqs.cached_tokens, np.int64),
        int(budget),
        W,
        float(sched),
        bool(eng.host_overlap),
    )
    freeze_long_lived(
        "unloaded"
    )  # numba's objects, loaded by the first call: no collection walks them
    if replica.spec is not None:  # a step gives AL tokens (speculative decoding)
        tpot = tpot / replica.spec.acceptance_length
    if eng.first_token_s:  # the front end's first-token path (E2E follows from TTFT)
        ttft = ttft + eng.first_token_s
    if not e2e:
        return {"ttft_s": ttft, "tpot_s": tpot}
    # tpot is NaN for a one-token answer (no decode step) and finite otherwise (the compiled
    # step times raise on a division by zero): np.nan_to_num's result, without its overhead
    e2e_s = ttft + np.where(np.isnan(tpot), 0.0, tpot) * (reqs.output_tokens - 1)
    return {"ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e_s}


def check_reachable(
    replica: Replica,
    workload: Workload,
    slo: SLO,
    *,
    requests: Requests | None = None,
    values: bool = True,
) -> dict[str, float]:
    """Raise when a single unloaded request already misses an SLO threshold.

    Returns the zero-load percentile of each metric with a target [s] (``values=False``:
    only the verdict, an empty dict; the same one, faster). ``requests``: as
    :func:`unloaded_latency`.
    """
    tg = slo.targets()
    z = unloaded_latency(replica, workload, requests=requests, e2e="e2e" in tg)
    out: dict[str, float] = {}
    if slo.attainment is not None and tg:
        if values:  # (SLO.evaluate reads the metrics with a target only)
            att = slo.evaluate(z["ttft_s"], z["tpot_s"], z.get("e2e_s"))["attainment"]
        else:  # SLO.evaluate's attainment without its percentiles
            met = np.ones(len(z["ttft_s"]), dtype=bool)
            for name, tgt in tg.items():
                x = z[f"{name}_s"]
                met &= np.isnan(x) | (x <= tgt.max_s)
            att = np.count_nonzero(met) / len(met) if len(met) else 0.0  # = met.mean()
        if values:
            out["attainment"] = att
        if not (att >= slo.attainment - 1e-12):
            raise PlannerError(
                f"SLO unreachable even at zero load: served alone, only {att:.1%} of the "
                f"requests meet every threshold (target {slo.attainment:.1%}) on {replica.label()}; "
                "long prompts or answers in the tail miss it - loosen a threshold or the attainment"
            )
    for name, tgt in tg.items():
        x = z[f"{name}_s"]
        x = x[~np.isnan(x)]
        if not values and not (len(x) and percentile_over(x, tgt.percentile, tgt.max_s)):
            continue
        v = float(np.percentile(x, tgt.percentile)) if len(x) else 0.0
        out[f"{name}_{tgt.label}_s"] = v
        if v > tgt.max_s:
            what = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "E2E"}[name]
            raise PlannerError(
                f"SLO unreachable even at zero load: {what} alone is {v:.3g} s at {tgt.label} "
                f"(target {tgt.max_s:g} s) for {replica.label()}; use a faster GPU, more TP, "
                f"a lower precision or a looser {what} target"
            )
    return out
