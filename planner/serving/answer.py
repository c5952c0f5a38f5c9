"""One answer per deployment (issue 32): the replicas a peak needs, the maximum rate per
replica, the P99 latencies at that rate and the engine knobs, found one way for every caller.

``planner recommend`` (each finished option), ``planner capacity``, ``planner simulate``
(its default replica count) and the app's What-if page all take these numbers from
:func:`answer_from_probe` (through :func:`answer_for_deployment` where no search made the
probe), so they cannot test different rates or print different knobs:

1. **Replicas** ``k``: the smallest count whose per-replica rate ``need / k`` meets the SLO
   (:meth:`CapacityProbe.min_replicas`; ``need`` = peak x (1 + headroom)).
2. **Max rate per replica**: bisected between the tested rate ``need / k`` (passes) and
   ``need / (k - 1)`` (fails; 95 % of the analytic saturation rate when ``k = 1``) to
   :data:`REL_TOL` (:func:`max_rate_in_bracket`): always a simulated rate that met the SLO.
3. **Latencies**: the complete run at the max rate (``at_max_rate``) and at the planned
   rate ``need / k`` (``at_planned``), the same requests and seed for every caller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from planner.errors import PlannerError
from planner.serving.probe import CapacityProbe, WorkloadCache
from planner.serving.replica import Replica, check_workload_fits
from planner.serving.simulate import MAX_CAPACITY_REQUESTS, _check_request_count
from planner.workload.slo import SLO
from planner.workload.workload import Workload

#: relative width of the max-rate bisection (the answers of two callers agree to this)
REL_TOL = 0.02
#: most bisection steps of the max rate (a bracket 100x wide narrows to 2 % in ~12)
MAX_REFINE_STEPS = 16
#: most replicas the search for ``k`` tries (a gallop: O(log k) simulations)
MAX_REPLICAS = 1_000_000
#: requests per point of the throughput-latency curve that ``planner capacity`` prints and
#: What-if draws (:func:`planner.serving.throughput_latency_curve`'s keywords): 2,000 at least,
#: so a P99 rests on 20 requests beyond it (on 150 a point it was the 2nd largest and the
#: curve zigzagged, issue 32)
CURVE_REQUESTS = {"requests_per_client": 16, "min_requests": 2000, "max_requests": 16000}
#: a curve's P99 that falls more than this fraction below an earlier point's (fewer clients)
#: is sampling noise, not physics: the curve says so (:func:`curve_noise`)
CURVE_NOISE_REL = 0.05
#: the latency fields each caller prints from a run (:meth:`DeploymentAnswer.fields`)
LATENCY_KEYS = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p99_s")


@dataclass(frozen=True)
class EngineKnobs:
    """The engine settings a deployment runs with, as the engine's own flags name them.

    ``max_num_seqs`` and ``max_num_batched_tokens`` are per engine instance (per
    attention-DP rank, as ``--max-num-seqs`` takes them); ``gpu_memory_utilization`` is the
    fraction of each GPU's memory the engine may use [1]; ``prefill_chunk_tokens`` is the
    chunked-prefill size [tokens] (None: prefill is not chunked)."""

    max_num_seqs: int
    max_num_batched_tokens: int
    gpu_memory_utilization: float
    kv_precision: str | None
    prefill_chunk_tokens: int | None
    max_model_len: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "max_num_seqs": self.max_num_seqs,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "kv_cache_dtype": self.kv_precision,
            "prefill_chunk_tokens": self.prefill_chunk_tokens,
            "max_model_len": self.max_model_len,
        }

    def text(self) -> str:
        """One line, e.g. ``max_num_seqs 256, max_num_batched_tokens 8,192, ...``."""
        chunk = (
            f"{self.prefill_chunk_tokens:,}"
            if self.prefill_chunk_tokens is not None
            else "off (whole prompts)"
        )
        return (
            f"max_num_seqs {self.max_num_seqs:,}, max_num_batched_tokens "
            f"{self.max_num_batched_tokens:,}, gpu_memory_utilization "
            f"{self.gpu_memory_utilization:g}, KV {self.kv_precision or '-'}, prefill chunk "
            f"{chunk}, max_model_len {self.max_model_len:,}"
        )


def engine_knobs(replica: Replica) -> EngineKnobs:
    """The :class:`EngineKnobs` of ``replica`` (its engine config and memory plan)."""
    e = replica.engine
    dp = max(1, replica.the_layout.attention_dp)
    return EngineKnobs(
        max_num_seqs=int(e.flag_limits(dp)[0]),
        max_num_batched_tokens=int(e.flag_limits(dp)[1]),
        gpu_memory_utilization=float(e.memory_utilization),
        kv_precision=replica.memory.kv_precision if replica.memory is not None else None,
        prefill_chunk_tokens=int(e.flag_limits(dp)[1]) if e.chunked_prefill else None,
        max_model_len=int(e.context_limit_tokens),
    )


def max_rate_in_bracket(probe: CapacityProbe, need_rps: float, replicas: int) -> float:
    """The max rate per replica [req/s] of a fleet of ``replicas`` carrying ``need_rps``:
    bisected to :data:`REL_TOL` between ``need / k`` (passed) and ``need / (k - 1)``
    (failed), capped at the probe's ``cap_rps`` (95 % of the analytic saturation rate)."""
    k = int(replicas)
    lo = need_rps / k
    hi = min(need_rps / (k - 1), probe.cap_rps) if k > 1 else probe.cap_rps
    return probe.refine_max_rate(lo, max(lo, hi), rel_tol=REL_TOL, max_steps=MAX_REFINE_STEPS)


@dataclass(frozen=True)
class DeploymentAnswer:
    """What every command and page prints for one deployment (see the module)."""

    label: str
    knobs: EngineKnobs
    need_rps: float
    replicas: int
    gpus_per_replica: int
    max_rate_rps: float
    planned_rate_rps: float
    at_max_rate: dict[str, Any]
    at_planned: dict[str, Any]
    saturation_rps: float
    cap_rps: float
    limited_by: str
    zero_load: dict[str, float]
    simulations: int
    #: the workload's mean answer [tokens] (output tokens/s = rate x this)
    mean_output_tokens: float
    probe: CapacityProbe | None = field(default=None, compare=False, repr=False)

    @property
    def num_gpus(self) -> int:
        return self.replicas * self.gpus_per_replica

    def fields(self) -> dict[str, Any]:
        """The flat fields every caller prints (JSON keys): the knobs, the fleet, the max
        rate and the latencies at it (``*_at_max_rate_s``) and at the planned rate."""
        out: dict[str, Any] = dict(self.knobs.as_dict())
        out.update(
            replicas=self.replicas,
            num_gpus=self.num_gpus,
            max_rate_per_replica=self.max_rate_rps,
            planned_rate_per_replica=self.planned_rate_rps,
            output_tok_s_per_gpu=self.max_rate_rps
            * self.mean_output_tokens
            / self.gpus_per_replica,
        )
        for k in LATENCY_KEYS:
            out[k[:-2] + "_at_max_rate_s"] = self.at_max_rate.get(k)
        for k in LATENCY_KEYS:
            out[k[:-2] + "_at_planned_s"] = self.at_planned.get(k)
        return out


def limited_by(probe: CapacityProbe, max_rate_rps: float) -> str:
    """What stops a replica above ``max_rate_rps``: the saturation limit when the max rate is
    the probe's cap, else the SLO metric that failed at the lowest failing rate above it."""
    if max_rate_rps >= probe.cap_rps * (1 - 1e-9):
        return f"throughput (95% of the saturation rate, {probe.saturation_limit})"
    fails = [r for r, v in probe.summaries.items() if r > max_rate_rps and not v["slo_ok"]]
    if not fails:
        return probe.binding(probe.full(max_rate_rps))
    return probe.binding(probe.run(min(fails), exact=True))


def answer_from_probe(
    probe: CapacityProbe, need_rps: float, replicas: int
) -> tuple[float, dict[str, Any], dict[str, Any]]:
    """(max rate per replica [req/s], the complete run at it, the complete run at the
    planned rate ``need / replicas``) of a probe whose smallest passing replica count is
    ``replicas``. The one place the max rate and its latencies are found."""
    mr = max_rate_in_bracket(probe, need_rps, replicas)
    at_max = probe.full(mr)
    planned = need_rps / replicas
    at_planned = at_max if planned == mr else probe.full(planned)
    return mr, at_max, at_planned


def answer_for_deployment(
    replica: Replica,
    workload: Workload,
    slo: SLO,
    *,
    headroom: float,
    peak_rps: float | None = None,
    n_requests: int = 1200,
    seed: int = 0,
    fit_percentile: float | None = 99.0,
    find_limit: bool = True,
) -> DeploymentAnswer:
    """The answer for one deployment: replicas for ``peak_rps`` (default the workload's
    peak) x (1 + ``headroom``), the max rate per replica, the latencies there, the knobs.

    ``find_limit=False``: ``limited_by`` is left empty ("") instead of found
    (:func:`limited_by` may simulate the lowest failing rate again to its last scored
    request, for a caller that never shows it: the What-if page); every other field is the
    same, but ``simulations`` counts that run no more.

    The probe is the recommender's (:func:`planner.recommend` builds the same one per
    option: ``WorkloadCache.of(workload, slo, seed)``, ``n_requests`` scored requests per
    rate at least, verdicts that stop once certain; reported runs are whole), so
    ``planner recommend --seed S --requests N`` and this function find the same replicas,
    max rate and percentiles for the same deployment.

    Raises
    ------
    PlannerError
        when the ``fit_percentile`` request does not fit, a request alone misses the SLO, or
        no replica count up to :data:`MAX_REPLICAS` meets it.
    """
    _check_request_count(n_requests, MAX_CAPACITY_REQUESTS, "requests per rate")
    check_workload_fits(replica, workload, fit_percentile)
    peak = float(workload.traffic.peak() if peak_rps is None else peak_rps)
    need = peak * (1.0 + float(headroom))
    if not (math.isfinite(need) and need > 0):
        raise PlannerError(
            f"peak rate {peak:g} req/s x (1 + headroom {headroom:g}) is not a finite number "
            "> 0; set the scenario's traffic (peak_rps)"
        )
    cache = WorkloadCache.of(workload, slo, int(seed))
    probe = CapacityProbe(replica, cache, n_requests=n_requests, early_stop=True)
    probe.check()
    k_lb = max(1, math.ceil(need / probe.cap_rps - 1e-9))
    slo_rate = cache.slo_rate(replica, probe.cap_rps)
    k_start = max(k_lb, math.ceil(need / slo_rate - 1e-9)) if slo_rate > 0 else k_lb
    k_start = min(k_start, MAX_REPLICAS)
    k = probe.min_replicas(need, k_lb, MAX_REPLICAS, k_start)
    if k is None:
        raise PlannerError(
            f"no arrival rate meets the SLO ({slo.describe()}) on {replica.label()}: even "
            f"{MAX_REPLICAS:,} replicas ({need / MAX_REPLICAS:.3g} req/s each) miss it"
        )
    mr, at_max, at_planned = answer_from_probe(probe, need, k)
    return DeploymentAnswer(
        label=replica.label(),
        knobs=engine_knobs(replica),
        need_rps=need,
        replicas=k,
        gpus_per_replica=replica.num_gpus,
        max_rate_rps=mr,
        planned_rate_rps=need / k,
        at_max_rate=at_max,
        at_planned=at_planned,
        saturation_rps=probe.saturation_rps,
        cap_rps=probe.cap_rps,
        limited_by=limited_by(probe, mr) if find_limit else "",
        zero_load=dict(probe.check()),
        simulations=probe.simulations,
        mean_output_tokens=float(workload.mean_output_tokens()),
        probe=probe,
    )


def curve_noise(rows: list[dict[str, Any]], key: str, rel: float = CURVE_NOISE_REL) -> str:
    """Where a closed-loop curve's latency ``key`` (e.g. ``"ttft_p99_s"``) falls more than
    ``rel`` below its value at fewer clients (more clients never serve a request sooner, so
    such a fall is the sampling noise of a percentile): one sentence, or "" when none."""
    falls = []
    best_c, best = None, -math.inf
    for r in sorted(rows, key=lambda r: r["concurrency"]):
        v = r.get(key)
        if v is None or not math.isfinite(v):
            continue
        if best > 0 and v < best * (1 - rel):
            falls.append(f"{best * 1e3:,.0f} ms at {best_c:,} clients to {v * 1e3:,.0f} ms at "
                         f"{int(r['concurrency']):,}")  # fmt: skip
        if v > best:
            best_c, best = int(r["concurrency"]), v
    if not falls:
        return ""
    return (
        f"{key.split('_')[0].upper()} {key.split('_')[1].upper()} is noisy here (it falls from "
        + "; ".join(falls)
        + f", more than {rel:.0%}; more clients never serve a request sooner): read the trend"
    )


# =========================================================================== xPyD
@dataclass(frozen=True)
class DisaggAnswer:
    """An xPyD deployment at a prefill:decode ratio ``x``:``y``: each pool's capacity per
    replica [req/s], the groups a need takes, the GPUs, the KV transfer and the simulated
    verdict of one group at ``need / groups`` (``check``: slo_ok, P99 TTFT / TPOT)."""

    label: str
    x: int
    y: int
    balanced: tuple[int, int]  # the ratio the sizing picks (fewest GPUs)
    groups: int
    num_gpus: int
    prefill_rps: float
    decode_rps: float
    group_rps: float
    transfer_s: float
    link_kind: str
    prefill_gpus: int  # GPUs per prefill replica
    decode_gpus: int
    check: dict[str, Any]

    def pools(self) -> dict[str, Any]:
        """The pools with their counts over the whole fleet (as ``recommend``'s JSON)."""
        return {
            "prefill_count": self.x * self.groups,
            "decode_count": self.y * self.groups,
            "prefill_gpus_per_replica": self.prefill_gpus,
            "decode_gpus_per_replica": self.decode_gpus,
        }


def disagg_answer(
    d: Any,
    workload: Workload,
    slo: SLO,
    need_rps: float,
    ratio: tuple[int, int] | None = None,
    *,
    n_requests: int = 600,
    seed: int = 0,
) -> DisaggAnswer:
    """The xPyD answer for the built pools ``d`` (:class:`planner.serving.disagg.DisaggReplicas`)
    at the prefill:decode ``ratio`` (None: the sizing's own, the fewest GPUs): the pool
    capacities of :func:`~planner.serving.disagg_sizing.size_disagg` (the same requests
    and seed), ``ceil(need / min(x p, y d))`` groups, and one group simulated at
    ``need / groups``.

    Raises
    ------
    PlannerError
        when a pool misses its share of the SLO even at light load (the sizing's message),
        or ``ratio`` is not two whole numbers in [1, 64].
    """
    import numpy as np

    from planner.serving.disagg import sample_disagg_requests, simulate_disagg
    from planner.serving.disagg_sizing import _scaled, size_disagg, with_counts

    sz = size_disagg(d, workload, slo, need_rps, n_requests=n_requests, seed=seed, verify=False)
    x, y = (sz.x, sz.y) if ratio is None else ratio
    for name, v in (("prefill replicas (P of P:D)", x), ("decode replicas (D of P:D)", y)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 64:
            raise PlannerError(f"{name} must be a whole number in [1, 64], got {v!r}")
    group = min(x * sz.prefill_rps, y * sz.decode_rps)
    groups = max(1, math.ceil(need_rps / group - 1e-9))
    dd = with_counts(d, x, y)
    base = sample_disagg_requests(d, workload, n_requests, np.random.default_rng(seed), 1.0)
    s = simulate_disagg(dd, _scaled(base, base.arrival_s, need_rps / groups)).summary(
        slo, warmup_frac=0.25
    )
    check = {k: s.get(k) for k in ("slo_ok", "slo_attainment", "ttft_p99_s", "tpot_p99_s")}
    check["rate_rps"] = need_rps / groups
    gp, gd = d.prefill.num_gpus, d.decode.num_gpus
    return DisaggAnswer(
        label=dd.spec.label(),
        x=x,
        y=y,
        balanced=(sz.x, sz.y),
        groups=groups,
        num_gpus=groups * (x * gp + y * gd),
        prefill_rps=sz.prefill_rps,
        decode_rps=sz.decode_rps,
        group_rps=group,
        transfer_s=sz.transfer_s,
        link_kind=d.link_kind,
        prefill_gpus=gp,
        decode_gpus=gd,
        check=check,
    )
