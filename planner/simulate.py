"""Serving simulation of one replica: iteration-level continuous batching, static batching,
an analytical fast path, capacity search and fleet sizing.

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
* **Duration** of each iteration: :meth:`planner.perf.StepModel.step_time` for exactly the
  prefill chunks and decode tokens it holds (attention pairs ``n*p + n(n+1)/2`` for a chunk
  of n tokens after p cached ones, window-capped on sliding-window layers), plus the
  serving scheduler's ``sched_overhead_s``.

Between events (an arrival that can be admitted, a completion, a KV-block shortage, a
sliding-window crossing) the batch is a fixed set of decoders whose step time grows
linearly with the summed context, so those iterations are advanced in one stride with
the exact arithmetic-series sum. Each request then costs O(log n) work, which is what
makes 100k requests run in about a second of pure Python.

Outputs are per-request arrays (TTFT includes queueing; TPOT = (E2E - TTFT)/(output - 1);
E2E) plus aggregates (token-weighted inter-token latency, batch-size distribution, KV
utilisation, preemptions) -- see :class:`SimResult`.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import PlannerError, require_positive
from .workload import SLO, Requests, Workload, make_requests

if TYPE_CHECKING:  # pragma: no cover
    from .catalog import Accelerator, Catalog, Framework, ModelArch, Precision
    from .memory import MemoryPlan
    from .perf import EfficiencyParams, StepModel

__all__ = [
    "EngineConfig",
    "Replica",
    "SimResult",
    "FastPathResult",
    "CapacityResult",
    "build_replica",
    "simulate",
    "fast_path",
    "unloaded_latency",
    "max_rate",
    "size_fleet",
    "throughput_latency_curve",
    "compare_tp",
    "check_fits",
    "predict_serving_row",
    "serving_row_details",
]


# =========================================================================== replica
@dataclass(frozen=True)
class EngineConfig:
    """Scheduler settings of one serving engine instance (one replica)."""

    framework: str | None
    continuous_batching: bool
    chunked_prefill: bool
    prefix_caching: bool
    block_size_tokens: int
    num_blocks: int
    max_num_seqs: int
    max_num_batched_tokens: int
    context_limit_tokens: int
    memory_utilization: float
    sched_overhead_s: float

    @property
    def kv_capacity_tokens(self) -> int:
        return self.num_blocks * self.block_size_tokens


@dataclass(frozen=True)
class Replica:
    """One model instance on ``tp * pp`` GPUs: its step model, engine settings and memory plan."""

    sm: StepModel
    engine: EngineConfig
    memory: MemoryPlan | None
    tp: int = 1
    pp: int = 1
    params_source: str = "prior"
    assumptions: tuple[str, ...] = ()

    @property
    def num_gpus(self) -> int:
        return self.tp * self.pp

    def label(self) -> str:
        fw = self.engine.framework or "engine"
        return (
            f"{self.sm.model.id} on {self.num_gpus}x {self.sm.gpu.id} ({self.sm.precision.id}, "
            f"tp={self.tp}{f' pp={self.pp}' if self.pp > 1 else ''}, {fw})"
        )

    def with_engine(self, **kw: Any) -> Replica:
        from dataclasses import replace

        return replace(self, engine=replace(self.engine, **kw))


def build_replica(
    model: ModelArch | str,
    gpu: Accelerator | str,
    precision: Precision | str = "bf16",
    framework: Framework | str | None = None,
    *,
    tp: int = 1,
    pp: int = 1,
    kv_precision: str | None = None,
    params: EfficiencyParams | None = None,
    params_source: str = "prior",
    catalog: Catalog | None = None,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    memory_utilization: float | None = None,
    context_len: int | None = None,
    block_size: int | None = None,
    chunked_prefill: bool | None = None,
    prefix_caching: bool | None = None,
    continuous_batching: bool | None = None,
) -> Replica:
    """Resolve a (model, GPU, precision, framework, TP) combination into a :class:`Replica`.

    Parameters
    ----------
    model, gpu, precision, framework : catalog ids or objects
    tp, pp : tensor- / pipeline-parallel sizes (GPUs per replica = tp * pp)
    kv_precision : KV-cache precision id (default: the precision's default)
    params : efficiency parameters (default :data:`planner.perf.PRIOR`)
    max_num_seqs, max_num_batched_tokens, memory_utilization, block_size, chunked_prefill,
    prefix_caching, continuous_batching : engine overrides (default: the framework record);
        ``memory_utilization`` means what the framework's record says (a fraction of total
        memory, or of the memory left after weights for TensorRT-LLM)
    context_len : longest sequence the engine accepts (``max_model_len``) [tokens];
        default the model's limit, reduced to what the KV cache holds if needed

    Raises
    ------
    PlannerError
        when the weights do not fit, or the precision does not run on the GPU.
    """
    from .catalog import load_catalog
    from .memory import plan_memory
    from .perf import PRIOR, step_model

    cat = catalog or load_catalog()
    m, g, p, _, fw = cat.resolve(model, gpu, precision, framework, kv_precision)
    params = params or PRIOR
    require_positive("tp", tp)
    require_positive("pp", pp)
    assumptions: list[str] = []
    sm = step_model(m, g, p, kv_precision, tp, pp, params, cat)
    cb = (
        continuous_batching
        if continuous_batching is not None
        else (fw.continuous_batching if fw else True)
    )
    chunked = (
        chunked_prefill if chunked_prefill is not None else (fw.chunked_prefill if fw else True)
    )
    pcache = prefix_caching if prefix_caching is not None else (fw.prefix_caching if fw else False)
    bs = int(block_size or (fw.kv_block_size if fw else 16))
    seqs = int(max_num_seqs or (fw.default_max_num_seqs if fw else 256))
    model_max = int(m.max_position_embeddings or 4096)
    ctx = int(min(context_len or model_max, model_max))
    if context_len and context_len > model_max:
        assumptions.append(f"context {context_len} capped at the model's {model_max} tokens")
    if max_num_batched_tokens:
        btok = int(max_num_batched_tokens)
    elif fw and fw.default_max_num_batched_tokens:
        btok = int(fw.default_max_num_batched_tokens)
    else:
        btok = 8192 if chunked else max(ctx, 8192)
    for name, v in (("max_num_seqs", seqs), ("max_num_batched_tokens", btok), ("block_size", bs)):
        require_positive(name, v)
    if seqs > btok:
        assumptions.append(f"max_num_seqs {seqs} limited to the token budget {btok}")
        seqs = btok
    util = memory_utilization
    plan_kw = dict(
        kv_precision=kv_precision,
        tp=tp,
        pp=pp,
        framework=fw,
        max_num_seqs=seqs,
        max_batched_tokens=btok,
        catalog=cat,
        suggest=False,
    )
    probe = plan_memory(m, g, p, context_len=min(ctx, 2048), memory_utilization=util, **plan_kw)
    if probe.fits and bs > probe.max_kv_tokens > 0:
        raise PlannerError(
            f"KV block size {bs} tokens is larger than the whole KV cache of {m.id} on "
            f"{tp * pp}x {g.id} ({p.id}, {probe.max_kv_tokens} tokens); use a smaller block_size"
        )
    if probe.max_kv_tokens < bs:
        full = plan_memory(
            m,
            g,
            p,
            context_len=min(ctx, 2048),
            memory_utilization=util,
            **{**plan_kw, "suggest": True},
        )
        hint = f" Try: {'; '.join(full.suggestions)}." if full.suggestions else ""
        raise PlannerError(f"{m.id} on {tp * pp}x {g.id} ({p.id}): {full.reason}.{hint}")
    num_blocks = int(probe.max_kv_tokens // bs)
    if num_blocks * bs < ctx:
        assumptions.append(
            f"max_model_len reduced from {ctx} to {num_blocks * bs} tokens: the KV cache holds no more"
        )
        ctx = num_blocks * bs
    plan = plan_memory(m, g, p, context_len=ctx, memory_utilization=util, **plan_kw)
    assumptions.extend(plan.assumptions)
    eng = EngineConfig(
        framework=fw.id if fw else None,
        continuous_batching=bool(cb),
        chunked_prefill=bool(chunked),
        prefix_caching=bool(pcache),
        block_size_tokens=bs,
        num_blocks=num_blocks,
        max_num_seqs=seqs,
        max_num_batched_tokens=btok,
        context_limit_tokens=ctx,
        memory_utilization=float(plan.memory_utilization),
        sched_overhead_s=float(params.sched_overhead_s),
    )
    return Replica(
        sm=sm,
        engine=eng,
        memory=plan,
        tp=int(tp),
        pp=int(pp),
        params_source=params_source,
        assumptions=tuple(assumptions),
    )


# =========================================================================== results
def _wpct(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """Weighted percentile (q in 0..100) of ``values``."""
    if len(values) == 0:
        return float("nan")
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    c = np.cumsum(w)
    if c[-1] <= 0:
        return float("nan")
    i = int(np.searchsorted(c, q / 100.0 * c[-1], side="left"))
    return float(v[min(i, len(v) - 1)])


def _pct(x: np.ndarray, q: float) -> float:
    x = x[~np.isnan(x)]
    return float(np.percentile(x, q)) if len(x) else float("nan")


@dataclass
class SimResult:
    """Per-request outcomes and aggregates of one simulation.

    Attributes
    ----------
    arrival_s, first_token_s, finish_s : per request [s] (simulation clock)
    input_tokens, output_tokens, cached_tokens, preemptions : per request
    itl_values_s, itl_weights : iteration durations that produced decode tokens and the
        number of tokens each produced (the per-token inter-token-latency distribution)
    batch_values, batch_weights : sequences per iteration and iterations at that size
    kv_util_mean, kv_util_max : time-weighted and peak fraction of KV blocks in use
    in_system_area_s : integral over time of the number of requests in the system [req*s]
    """

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    cached_tokens: np.ndarray
    preemptions: np.ndarray
    num_gpus: int
    iterations: int
    busy_s: float
    itl_values_s: np.ndarray
    itl_weights: np.ndarray
    batch_values: np.ndarray
    batch_weights: np.ndarray
    kv_util_mean: float
    kv_util_max: float
    in_system_area_s: float
    prefill_tokens_computed: int
    mode: str = "open"
    label: str = ""
    truncated: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    # ---- per request
    @property
    def ttft_s(self) -> np.ndarray:
        """Time to first token, queueing included [s]."""
        return self.first_token_s - self.arrival_s

    @property
    def e2e_s(self) -> np.ndarray:
        return self.finish_s - self.arrival_s

    @property
    def tpot_s(self) -> np.ndarray:
        """(E2E - TTFT) / (output - 1); NaN for one-token answers [s]."""
        d = self.output_tokens - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(d > 0, (self.finish_s - self.first_token_s) / np.maximum(d, 1), np.nan)

    @property
    def duration_s(self) -> float:
        """From the first arrival to the last completion [s] (benchmark convention)."""
        return float(np.max(self.finish_s) - np.min(self.arrival_s)) if len(self.finish_s) else 0.0

    def window(
        self, warmup_frac: float = 0.0, cooldown_frac: float = 0.0, warmup_s: float = 0.0
    ) -> np.ndarray:
        """Boolean mask of the requests kept after dropping the first / last arrivals.

        The first ``max(warmup_frac * n, arrivals before warmup_s)`` requests (by arrival,
        at most 60 %) and the last ``cooldown_frac * n`` are dropped.
        """
        n = len(self.arrival_s)
        order = np.argsort(self.arrival_s, kind="stable")
        lo = int(math.floor(warmup_frac * n))
        if warmup_s > 0:
            t0 = float(self.arrival_s[order[0]]) if n else 0.0
            lo = max(lo, int(np.searchsorted(self.arrival_s[order], t0 + warmup_s)))
        lo = min(lo, int(0.6 * n))
        hi = n - int(math.floor(cooldown_frac * n))
        m = np.zeros(n, dtype=bool)
        m[order[lo : max(hi, lo + 1)]] = True
        return m

    def summary(
        self,
        slo: SLO | None = None,
        warmup_frac: float = 0.0,
        cooldown_frac: float = 0.0,
        warmup_s: float = 0.0,
        mask: np.ndarray | None = None,
    ) -> dict[str, Any]:
        """Latency percentiles, throughput, goodput and engine statistics.

        Throughput is measured over the kept requests, from the first one's arrival to the
        last one's completion (what benchmark clients report); per GPU divides by the
        replica's GPUs. Goodput counts only requests that met every SLO threshold.
        ``mask`` (a boolean array) selects the scored requests directly.
        """
        m = (
            self.window(warmup_frac, cooldown_frac, warmup_s)
            if mask is None
            else np.asarray(mask, bool)
        )
        ttft, tpot, e2e = self.ttft_s[m], self.tpot_s[m], self.e2e_s[m]
        out_t, in_t = self.output_tokens[m], self.input_tokens[m]
        dur = float(np.max(self.finish_s[m]) - np.min(self.arrival_s[m])) if m.any() else 0.0
        dur = dur if dur > 0 else float("nan")
        s: dict[str, Any] = {"requests": int(m.sum())}
        for name, x in (("ttft", ttft), ("tpot", tpot), ("e2e", e2e)):
            s[f"{name}_mean_s"] = float(np.nanmean(x)) if np.isfinite(x).any() else float("nan")
            for q in (50, 90, 99):
                s[f"{name}_p{q}_s"] = _pct(x, q)
        w = self.itl_weights
        s["itl_mean_s"] = (
            float(np.dot(self.itl_values_s, w) / w.sum()) if w.sum() > 0 else float("nan")
        )
        for q in (50, 90, 99):
            s[f"itl_p{q}_s"] = _wpct(self.itl_values_s, w, q)
        s["throughput_rps"] = float(m.sum()) / dur
        s["output_tok_s"] = float(out_t.sum()) / dur
        s["total_tok_s"] = float(out_t.sum() + in_t.sum()) / dur
        s["output_tok_s_per_gpu"] = s["output_tok_s"] / self.num_gpus
        s["total_tok_s_per_gpu"] = s["total_tok_s"] / self.num_gpus
        s["mean_input_tokens"] = float(in_t.mean()) if len(in_t) else 0.0
        s["mean_output_tokens"] = float(out_t.mean()) if len(out_t) else 0.0
        s["concurrency_mean"] = self.in_system_area_s / max(self.duration_s, 1e-12)
        bw = self.batch_weights
        s["batch_size_mean"] = (
            float(np.dot(self.batch_values, bw) / bw.sum()) if bw.sum() > 0 else 0.0
        )
        s["batch_size_p50"] = _wpct(self.batch_values, bw, 50)
        s["batch_size_p99"] = _wpct(self.batch_values, bw, 99)
        s["batch_size_max"] = float(self.batch_values.max()) if len(self.batch_values) else 0.0
        s["kv_util_mean"] = self.kv_util_mean
        s["kv_util_max"] = self.kv_util_max
        s["preemptions"] = int(self.preemptions.sum())
        s["iterations"] = int(self.iterations)
        s["duration_s"] = self.duration_s
        if self.truncated:
            s["truncated_requests"] = int(self.truncated)
        if slo is not None:
            ev = slo.evaluate(ttft, tpot, e2e)
            s["slo_ok"] = ev["ok"]
            s["slo_attainment"] = ev["attainment"]
            s["goodput_rps"] = float(ev["met"].sum()) / dur
            for k, v in ev.items():
                if k.endswith("_s") and k not in s:
                    s[k] = v
        return s

    def percentile_table(
        self, warmup_frac: float = 0.0, cooldown_frac: float = 0.0
    ) -> list[dict[str, Any]]:
        """Rows ``metric, mean_s, p50_s, p90_s, p99_s`` for TTFT, TPOT, ITL and E2E."""
        s = self.summary(None, warmup_frac, cooldown_frac)
        rows = []
        for name in ("ttft", "tpot", "itl", "e2e"):
            rows.append(
                {
                    "metric": name.upper(),
                    **{f"{k}_s": s[f"{name}_{k}_s"] for k in ("mean", "p50", "p90", "p99")},
                }
            )
        return rows


# =========================================================================== the simulator
def simulate(
    target: Replica | Any,
    requests: Requests | Workload | None = None,
    *,
    rng: np.random.Generator | None = None,
    n_requests: int = 2000,
    rate_rps: float | None = None,
    concurrency: int | None = None,
    static_batching: bool | None = None,
    offline: bool | None = None,
    **deployment: Any,
) -> SimResult:
    """Simulate one replica serving a request stream.

    Parameters
    ----------
    target : a :class:`Replica`, or a :class:`planner.scenario.Scenario` (then give
        ``gpu=``, ``framework=``, ``precision=``, ``tp=``... as keywords, or a
        ``deployment`` section in the scenario)
    requests : a :class:`~planner.workload.Requests` list, or a
        :class:`~planner.workload.Workload` to sample ``n_requests`` from (default: the
        scenario's workload)
    rng : random generator (default ``np.random.default_rng(0)``); results are
        deterministic given it
    rate_rps : arrival rate when sampling from a workload [req/s] (default its peak)
    concurrency : closed loop with this many clients (each sends its next request when the
        previous completes); arrival times in ``requests`` are then ignored
    static_batching : force static batching (default: the engine's mode)
    offline : queue every request at t = 0 (default: the workload's ``offline`` flag)
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    if not isinstance(target, Replica):
        from .scenario import Scenario

        if not isinstance(target, Scenario):
            raise PlannerError("simulate() takes a Replica or a Scenario")
        replica = target.build_replica(**deployment)
        requests = requests if requests is not None else target.workload
    else:
        replica = target
        if deployment:
            raise PlannerError(f"unexpected keywords for a Replica: {', '.join(deployment)}")
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
    static = (
        (not replica.engine.continuous_batching) if static_batching is None else static_batching
    )
    check_fits(replica, reqs)
    if static:
        return _run_static(replica, reqs, concurrency)
    return _run_continuous(replica, reqs, concurrency)


def check_fits(replica: Replica, reqs: Requests) -> None:
    """Raise a one-line error when the longest request cannot fit in the KV cache."""
    eng = replica.engine
    bs = eng.block_size_tokens
    ctx = reqs.input_tokens + reqs.output_tokens
    worst = int(ctx.max())
    if worst > eng.context_limit_tokens:
        raise PlannerError(
            f"a request of {worst} tokens exceeds the engine's context limit of {eng.context_limit_tokens} "
            "tokens; truncate the workload (make_requests(context_limit=...)) or raise context_len"
        )
    need = math.ceil(worst / bs)
    shared_blk = (reqs.shared_prefix_tokens // bs) if eng.prefix_caching else 0
    if shared_blk and need <= eng.num_blocks:
        # continuous batching holds the shared prefix's blocks once, for everybody, and each
        # request's own blocks beside them
        own = np.ceil(ctx / bs).astype(np.int64) - np.minimum(shared_blk, reqs.cached_tokens // bs)
        if shared_blk + int(own.max()) > eng.num_blocks:
            kvb = replica.memory.kv_cache_bytes_per_token if replica.memory else float("nan")
            raise PlannerError(
                f"scenario overflows memory: the shared prefix ({reqs.shared_prefix_tokens} "
                f"tokens) plus the longest request's own KV blocks need "
                f"{(shared_blk + int(own.max())) * bs * kvb / 1e9:.2f} GB of KV cache per GPU "
                f"but {replica.label()} has {eng.kv_capacity_tokens * kvb / 1e9:.2f} GB "
                f"({eng.kv_capacity_tokens} tokens) free"
            )
    if need > eng.num_blocks:
        kvb = replica.memory.kv_cache_bytes_per_token if replica.memory else float("nan")
        raise PlannerError(
            f"scenario overflows memory: a request of {worst} tokens needs {worst * kvb / 1e9:.2f} GB of KV "
            f"cache per GPU but {replica.label()} has {eng.kv_capacity_tokens * kvb / 1e9:.2f} GB "
            f"({eng.kv_capacity_tokens} tokens) free"
        )


def _window_pairs(pos: int, n: int, w: float) -> float:
    """Query-key pairs of a chunk of n tokens after pos cached ones in a layer of window w."""
    i_cap = w - pos
    if i_cap < 0:
        i_cap = 0
    elif i_cap > n:
        i_cap = n
    return i_cap * pos + i_cap * (i_cap + 1) / 2 + (n - i_cap) * w


def _run_continuous(replica: Replica, reqs: Requests, concurrency: int | None) -> SimResult:  # noqa: C901
    eng = replica.engine
    sm = replica.sm
    st = sm.step_time
    sched = eng.sched_overhead_s
    bs = eng.block_size_tokens
    maxseq = eng.max_num_seqs
    budget0 = eng.max_num_batched_tokens
    chunked = eng.chunked_prefill
    n = len(reqs)
    inp = reqs.input_tokens.tolist()
    out = reqs.output_tokens.tolist()
    cch = reqs.cached_tokens.tolist()
    shared_blk = (reqs.shared_prefix_tokens // bs) if eng.prefix_caching else 0
    sb = [min(shared_blk, c // bs) for c in cch] if shared_blk else [0] * n
    nblocks = eng.num_blocks - shared_blk
    if nblocks <= 0:
        raise PlannerError("the shared prefix alone fills the KV cache")
    watermark = max(1, int(0.01 * eng.num_blocks))
    W = int(sm.window) if sm.layers_sw > 0 and sm.window > 0 else 0
    has_sw = W > 0
    closed = concurrency is not None
    if closed:
        require_positive("concurrency", concurrency)
        n_initial = min(int(concurrency), n)
        arr = [0.0] * n_initial + [float("inf")] * (n - n_initial)
    else:
        arr = reqs.arrival_s.tolist()
        n_initial = 0

    nan = float("nan")
    first = [nan] * n
    fin = [nan] * n
    npre = [0] * n
    g = [0] * n  # tokens emitted so far (at decode start for decoders)
    epoch = [0] * n
    adm = [0] * n
    status = [0] * n  # 0 waiting/not arrived, 1 prefill, 2 decode, 3 done
    dI0 = [0] * n
    dP = [0] * n
    waiting: deque[int] = deque()
    pf: list[list[int]] = []
    running_order: list[tuple[int, int]] = []
    fin_heap: list[tuple[int, int, int]] = []
    sw_heap: list[tuple[int, int, int]] = []
    cnt = [0] * bs
    B = 0
    S = 0  # sum of decoders' KV tokens before the current iteration
    Tsw = 0  # sum over decoders of min(kv_before + 1, W)
    nbelow = 0
    free = nblocks
    n_running = 0
    cur = 0  # iteration index
    now = 0.0
    done = 0
    next_arr = 0
    arrived = 0
    area = 0.0
    kv_area = 0.0
    kv_max = 0
    busy = 0.0
    pf_tokens = 0
    events: list[
        tuple[int, int, int, float, float]
    ] = []  # (decoders, seqs, iterations, t_first, t_last)
    ev_append = events.append
    hpush, hpop = heapq.heappush, heapq.heappop
    ceil = math.ceil

    if closed:
        for r in range(n_initial):
            waiting.append(r)
        next_arr = n_initial
        arrived = n_initial

    def spawn() -> None:
        nonlocal next_arr, arrived
        if closed and next_arr < n:
            arr[next_arr] = now
            waiting.append(next_arr)
            next_arr += 1
            arrived += 1

    def preempt_one() -> bool:
        nonlocal B, S, Tsw, nbelow, free, n_running, running_order
        while running_order:
            r, a = running_order.pop()
            if adm[r] != a or status[r] not in (1, 2):
                continue
            if status[r] == 2:
                kvb = dP[r] + (cur - dI0[r])
                S -= kvb
                cnt[(dP[r] - dI0[r]) % bs] -= 1
                if has_sw:
                    Tsw -= min(kvb + 1, W)
                    if dI0[r] + W - dP[r] - 1 > cur:
                        nbelow -= 1
                free += ceil(kvb / bs) - sb[r]
                g[r] += cur - dI0[r]
                B -= 1
            else:
                for j, it in enumerate(pf):
                    if it[0] == r:
                        free += ceil(it[1] / bs) - sb[r]
                        del pf[j]
                        break
            epoch[r] += 1
            status[r] = 0
            n_running -= 1
            npre[r] += 1
            waiting.appendleft(r)
            return True
        return False

    def finish_decoders(i_last: int) -> None:
        nonlocal B, S, Tsw, nbelow, free, n_running, done
        while fin_heap and fin_heap[0][0] <= i_last:
            _, r, ep = hpop(fin_heap)
            if ep != epoch[r]:
                continue
            kva = dP[r] + (i_last - dI0[r]) + 1
            S -= kva
            cnt[(dP[r] - dI0[r]) % bs] -= 1
            if has_sw:
                Tsw -= min(kva + 1, W)
                if dI0[r] + W - dP[r] - 1 > i_last + 1:
                    nbelow -= 1
            free += ceil(kva / bs) - sb[r]
            epoch[r] += 1
            status[r] = 3
            fin[r] = now
            B -= 1
            n_running -= 1
            done += 1
            spawn()

    inf = float("inf")
    arr.append(inf)  # sentinel: the arrival loop needs no bounds check
    while done < n:
        # ---- arrivals up to now join the queue
        while arr[next_arr] <= now:
            waiting.append(next_arr)
            area += now - arr[next_arr]
            next_arr += 1
            arrived += 1
        if n_running == 0 and not waiting:
            if not closed and next_arr < n:
                now = arr[next_arr]
                continue
            raise PlannerError("simulation stalled with requests outstanding")  # pragma: no cover

        # ---- can the next iterations run as one stride of pure decode?
        blocked = True
        if waiting and not pf:
            h = waiting[0]
            if n_running < maxseq and budget0 - B > 0:
                P = inp[h] + g[h]
                need_dec = cnt[(-cur) % bs] if B else 0
                if ceil(P / bs) - sb[h] <= free - need_dec - watermark and (
                    chunked or P - cch[h] <= budget0 - B
                ):
                    blocked = False
        if not pf and B > 0 and (not waiting or blocked):
            # completion limit
            while fin_heap and fin_heap[0][2] != epoch[fin_heap[0][1]]:
                hpop(fin_heap)
            k = fin_heap[0][0] - cur + 1
            # KV limit: iterations whose decode block allocations fit in the free blocks
            if free >= B * (k // bs + 1):
                k_kv = k
            else:
                full = free // B
                rem = free - full * B
                kk = full * bs
                j = 0
                while j < bs:
                    c = cnt[(-(cur + kk + j)) % bs]
                    if c > rem:
                        break
                    rem -= c
                    j += 1
                k_kv = kk + j
            if k_kv < k:
                k = k_kv
            if has_sw:
                while sw_heap and sw_heap[0][2] != epoch[sw_heap[0][1]]:
                    hpop(sw_heap)
                if sw_heap:
                    ksw = sw_heap[0][0] - cur + 1
                    if ksw < k:
                        k = ksw
            if k >= 1:
                t0 = st(B, B, B, S + B, S + B, Tsw, Tsw) + sched
                if k > 1:
                    S1 = S + B * (k - 1)
                    T1 = Tsw + nbelow * (k - 1)
                    t1 = st(B, B, B, S1 + B, S1 + B, T1, T1) + sched
                    d = (t1 - t0) / (k - 1)
                else:
                    t1, d = t0, 0.0
                if not waiting and not closed and next_arr < n:
                    gap = arr[next_arr] - now
                    # smallest j >= 1 with j*t0 + d*j*(j-1)/2 >= gap
                    if d > 1e-18:
                        a2 = d / 2
                        b2 = t0 - d / 2
                        # root of a2*j**2 + b2*j = gap in the form without cancellation
                        j = math.ceil(2 * gap / (b2 + math.sqrt(b2 * b2 + 4 * a2 * gap)) - 1e-9)
                    else:
                        j = math.ceil(gap / t0 - 1e-9)
                    j = max(1, j)
                    if j < k:
                        k = j
                        t1 = t0 + d * (k - 1)
                dur = k * t0 + d * k * (k - 1) / 2
                # blocks allocated by the decoders over the k iterations
                full, remk = divmod(k, bs)
                alloc = full * B
                if remk:  # phases hit by iterations cur .. cur+remk-1: p0, p0-1, ... (mod bs)
                    p0 = (-cur) % bs
                    lo_p = p0 - remk + 1
                    if lo_p >= 0:
                        alloc += sum(cnt[lo_p : p0 + 1])
                    else:
                        alloc += sum(cnt[: p0 + 1]) + sum(cnt[bs + lo_p :])
                used0 = nblocks - free
                free -= alloc
                kv_area += (used0 + alloc / 2) * dur
                if used0 + alloc > kv_max:
                    kv_max = used0 + alloc
                area += (arrived - done) * dur
                busy += dur
                ev_append((B, B, k, t0, t1))
                now += dur
                S += B * k
                if has_sw:
                    Tsw += nbelow * k
                    lim = cur + k
                    while sw_heap and sw_heap[0][0] <= lim:
                        e, r, ep = hpop(sw_heap)
                        if ep == epoch[r]:
                            nbelow -= 1
                            Tsw -= lim - e
                cur += k
                if fin_heap[0][0] < cur:
                    finish_decoders(cur - 1)
                continue

        # ---- one full iteration: preemption, prefill chunks, admissions
        need = cnt[(-cur) % bs] if B else 0
        while need > free:
            if not preempt_one():
                raise PlannerError(
                    "KV cache too small for the running sequences"
                )  # pragma: no cover
            need = cnt[(-cur) % bs] if B else 0
        free -= need
        budget = budget0 - B
        T = B
        nseq = B
        nlog = B
        kvf = S + B
        prf = float(S + B)
        kvs = Tsw
        prs = float(Tsw)
        chunks: list[tuple[list[int], int]] = []
        for it in pf:
            if budget <= 0:
                break
            c = it[1] - it[2]
            if chunked and c > budget:
                c = budget
            budget -= c
            chunks.append((it, c))
        while waiting and budget > 0 and n_running < maxseq:
            h = waiting[0]
            P = inp[h] + g[h]
            nb = ceil(P / bs) - sb[h]
            if nb > free - watermark and (n_running > 0 or nb > free):
                break
            todo = P - cch[h]
            if not chunked and todo > budget and (T > 0 or chunks):
                break
            waiting.popleft()
            free -= nb
            status[h] = 1
            n_running += 1
            adm[h] += 1
            running_order.append((h, adm[h]))
            if len(running_order) > 4 * n_running + 256:
                running_order = [
                    (r, a) for (r, a) in running_order if adm[r] == a and status[r] in (1, 2)
                ]
            it = [h, P, cch[h]]
            pf.append(it)
            c = todo if (not chunked or todo <= budget) else budget
            budget -= c
            chunks.append((it, c))
        for it, c in chunks:
            pos = it[2]
            end = pos + c
            T += c
            nseq += 1
            kvf += end
            prf += c * pos + c * (c + 1) / 2
            if has_sw:
                kvs += end if end < W else W
                prs += _window_pairs(pos, c, W)
            if end == it[1]:
                nlog += 1
        if T == 0:  # pragma: no cover - guarded by check_fits
            raise PlannerError("no request can be scheduled: the KV cache is too small")
        dt = st(T, nseq, nlog, kvf, prf, kvs, prs) + sched
        used = nblocks - free
        kv_area += used * dt
        if used > kv_max:
            kv_max = used
        area += (arrived - done) * dt
        busy += dt
        now += dt
        ev_append((B, nseq, 1, dt, dt))
        # decoders advance one token
        S += B
        if has_sw:
            Tsw += nbelow
            lim = cur + 1
            while sw_heap and sw_heap[0][0] <= lim:
                e, r, ep = hpop(sw_heap)
                if ep == epoch[r]:
                    nbelow -= 1
                    Tsw -= lim - e
        if fin_heap and fin_heap[0][0] <= cur:
            finish_decoders(cur)
        # prefill progress
        any_done = False
        for it, c in chunks:
            it[2] += c
            pf_tokens += c
            if it[2] < it[1]:
                continue
            any_done = True
            r = it[0]
            P = it[1]
            g[r] += 1
            if first[r] != first[r]:
                first[r] = now
            if g[r] >= out[r]:
                free += ceil(P / bs) - sb[r]
                epoch[r] += 1
                status[r] = 3
                fin[r] = now
                n_running -= 1
                done += 1
                spawn()
                continue
            I0 = cur + 1
            dI0[r] = I0
            dP[r] = P
            status[r] = 2
            B += 1
            S += P
            cnt[(P - I0) % bs] += 1
            hpush(fin_heap, (I0 + out[r] - g[r] - 1, r, epoch[r]))
            if has_sw:
                Tsw += P + 1 if P + 1 < W else W
                e = I0 + W - P - 1
                if e > I0:
                    nbelow += 1
                    hpush(sw_heap, (e, r, epoch[r]))
        if any_done:
            pf = [it for it in pf if it[2] < it[1]]
        cur += 1

    horizon = max(busy, 1e-12)
    itl_v, itl_w, bat_v, bat_w = _event_stats(events)
    return SimResult(
        arrival_s=np.asarray(arr[:n], float),
        first_token_s=np.asarray(first, float),
        finish_s=np.asarray(fin, float),
        input_tokens=reqs.input_tokens.copy(),
        output_tokens=reqs.output_tokens.copy(),
        cached_tokens=reqs.cached_tokens.copy(),
        preemptions=np.asarray(npre, dtype=np.int64),
        num_gpus=replica.num_gpus,
        iterations=cur,
        busy_s=busy,
        itl_values_s=itl_v,
        itl_weights=itl_w,
        batch_values=bat_v,
        batch_weights=bat_w,
        # the shared prefix's blocks are in use too (held once, outside ``nblocks``)
        kv_util_mean=(kv_area / horizon + shared_blk) / eng.num_blocks,
        kv_util_max=(kv_max + shared_blk) / eng.num_blocks,
        in_system_area_s=area,
        prefill_tokens_computed=pf_tokens,
        mode="closed" if closed else "open",
        label=replica.label(),
        truncated=reqs.truncated,
    )


def _event_stats(events: list[tuple[int, int, int, float, float]]):
    """Per-token ITL samples and the batch-size distribution from the iteration records.

    A stride of k decode iterations with B decoders and step times growing linearly from
    t_first to t_last contributes its two end points with weight B*k/2 each.
    """
    if not events:
        z = np.zeros(0)
        return z, z, z, z
    e = np.asarray(events, dtype=float)
    b, nseq, k, t0, t1 = e.T
    multi = k > 1
    itl_v = np.concatenate([t0, t1[multi]])
    itl_w = np.concatenate([np.where(multi, b * k / 2, b), (b * k / 2)[multi]])
    keep = itl_w > 0
    return itl_v[keep], itl_w[keep], nseq, k


def _run_static(replica: Replica, reqs: Requests, concurrency: int | None = None) -> SimResult:
    """Static batching: a batch is formed from the queue, prefilled in one forward, and
    decoded until its longest answer ends (finished sequences keep their slot, as in a
    padded static batch); the next batch starts after that.

    Every request reserves KV for its whole context (prompt + answer) up front.

    ``concurrency`` c: closed loop with c clients. The first c requests arrive at t = 0;
    each client sends its next request when its previous one finishes (its last token, which
    may be before the padded batch ends), so a batch holds at most min(c, max_num_seqs)
    requests and one client alone sees a TTFT of one prefill.
    """
    eng = replica.engine
    sm = replica.sm
    st = sm.step_time
    sched = eng.sched_overhead_s
    bs = eng.block_size_tokens
    W = int(sm.window) if sm.layers_sw > 0 and sm.window > 0 else 0
    n = len(reqs)
    closed = concurrency is not None
    if closed:
        require_positive("concurrency", concurrency)
        arr = np.full(n, np.inf)
        next_arr = min(int(concurrency), n)
        arr[:next_arr] = 0.0
    else:
        arr = np.asarray(reqs.arrival_s, float)
        next_arr = n
    inp = reqs.input_tokens.astype(float)
    out = reqs.output_tokens
    cch = reqs.cached_tokens.astype(float)
    first = np.full(n, np.nan)
    fin = np.full(n, np.nan)
    now = 0.0
    i = 0
    iters = 0
    busy = 0.0
    area = 0.0
    kv_area = 0.0
    kv_max = 0.0
    pf_tokens = 0
    itl_v: list[float] = []
    itl_w: list[float] = []
    bat_v: list[int] = []
    bat_w: list[int] = []
    blocks_need = np.ceil((reqs.input_tokens + reqs.output_tokens) / bs).astype(np.int64)
    while i < n:
        if arr[i] > now:
            if arr[i] == np.inf:  # pragma: no cover - a closed loop always has one queued
                raise PlannerError("simulation stalled with requests outstanding")
            now = float(arr[i])
        j = i
        blocks = 0
        while j < n and arr[j] <= now and j - i < eng.max_num_seqs:
            if blocks + blocks_need[j] > eng.num_blocks and j > i:
                break
            blocks += int(blocks_need[j])
            j += 1
        idx = slice(i, j)
        b = j - i
        p = cch[idx]
        c = inp[idx] - p
        end = inp[idx]
        kv_sw = float(np.minimum(end, W).sum()) if W else 0.0
        pr_sw = (
            float(sum(_window_pairs(int(pp_), int(cc_), W) for pp_, cc_ in zip(p, c, strict=True)))
            if W
            else 0.0
        )
        t_pf = (
            st(
                float(c.sum()),
                b,
                b,
                float(end.sum()),
                float((c * p + c * (c + 1) / 2).sum()),
                kv_sw,
                pr_sw,
            )
            + sched
        )
        area += float((now - arr[idx]).sum())
        start = now
        now += t_pf
        busy += t_pf
        iters += 1
        pf_tokens += int(c.sum())
        first[idx] = now
        bat_v.append(b)
        bat_w.append(1)
        L = int(out[idx].max()) - 1
        S = float(end.sum())
        if L > 0:
            sw0 = float(np.minimum(end + 1, W).sum()) if W else 0.0
            t0 = st(b, b, b, S + b, S + b, sw0, sw0) + sched
            if L > 1:
                S1 = S + b * (L - 1)
                sw1 = float(np.minimum(end + L, W).sum()) if W else 0.0
                t1 = st(b, b, b, S1 + b, S1 + b, sw1, sw1) + sched
                d = (t1 - t0) / (L - 1)
            else:
                t1, d = t0, 0.0
            m = out[idx] - 1
            fin[idx] = now + m * t0 + d * m * (m - 1) / 2
            dur = L * t0 + d * L * (L - 1) / 2
            itl_v += [t0, t1]
            itl_w += [float(m.sum()) / 2] * 2
            bat_v.append(b)
            bat_w.append(L)
            iters += L
        else:
            fin[idx] = now
            dur = 0.0
        if next_arr < n:  # closed loop: each finished client sends its next request
            done_t = np.sort(fin[idx])[: n - next_arr]
            arr[next_arr : next_arr + len(done_t)] = done_t
            next_arr += len(done_t)
        now += dur
        busy += dur
        area += float((fin[idx] - start).sum())
        used = blocks
        kv_area += used * (t_pf + dur)
        kv_max = max(kv_max, used)
        i = j
    horizon = max(busy, 1e-12)
    return SimResult(
        arrival_s=arr.copy(),
        first_token_s=first,
        finish_s=fin,
        input_tokens=reqs.input_tokens.copy(),
        output_tokens=reqs.output_tokens.copy(),
        cached_tokens=reqs.cached_tokens.copy(),
        preemptions=np.zeros(n, dtype=np.int64),
        num_gpus=replica.num_gpus,
        iterations=iters,
        busy_s=busy,
        itl_values_s=np.asarray(itl_v, float),
        itl_weights=np.asarray(itl_w, float),
        batch_values=np.asarray(bat_v, float),
        batch_weights=np.asarray(bat_w, float),
        kv_util_mean=kv_area / horizon / eng.num_blocks,
        kv_util_max=kv_max / eng.num_blocks,
        in_system_area_s=area,
        prefill_tokens_computed=pf_tokens,
        mode="static",
        label=replica.label(),
        truncated=reqs.truncated,
    )


# =========================================================================== fast path
@dataclass(frozen=True)
class FastPathResult:
    """Steady state of one replica from a Little's-law fixed point (no queueing detail).

    At arrival rate lambda each iteration of duration t starts ``a = lambda*t`` prompts and
    carries ``B = lambda*t*(O-1)`` decoding sequences (each spends O-1 iterations decoding);
    t solves ``t = step_time(B + a*(I-c) tokens, ...) + sched_overhead``. Saturation is
    reached when B hits the sequence or KV limit, or the token budget is full.
    """

    rate_rps: float
    stable: bool
    iteration_s: float
    decode_batch: float
    concurrency: float
    ttft_s: float
    tpot_s: float
    e2e_s: float
    output_tok_s: float
    total_tok_s: float
    saturation_rps: float
    saturation_output_tok_s: float
    saturation_e2e_s: float
    saturation_iteration_s: float
    max_concurrency: float
    limited_by: str
    num_gpus: int

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        d = asdict(self)
        d["output_tok_s_per_gpu"] = self.output_tok_s / self.num_gpus
        return d


def _shape(
    workload: Workload | tuple[float, ...], eng: EngineConfig
) -> tuple[float, float, float, float]:
    """(mean prompt, mean answer, mean cached prompt tokens, mean context of a running
    decoder) [tokens]. A decoder's context is weighted by how long it stays in the batch
    (its answer length): ``E[O*I]/E[O] + E[O**2]/(2 E[O])`` -- for heavy-tailed answers this
    is far above ``I + O/2``."""
    if isinstance(workload, Workload):
        rng = np.random.default_rng(2024)
        wl = workload.model_copy(update={"offline": False})
        r = wl.sample_requests(
            20000,
            rng,
            1.0,
            context_limit=eng.context_limit_tokens,
            prefix_caching=eng.prefix_caching,
        )
        i = r.input_tokens.astype(float)
        o = r.output_tokens.astype(float)
        c = r.cached_tokens.astype(float)
        dec = np.maximum(o - 1, 0)
        w = dec.sum()
        ctx = float((dec * (i + (o - 1) / 2)).sum() / w) if w > 0 else float(i.mean())
        return float(i.mean()), float(o.mean()), float(c.mean()), ctx
    t = tuple(float(x) for x in workload)
    i, o = t[0], t[1]
    c = t[2] if len(t) > 2 else 0.0
    return i, o, c, i + (o - 1) / 2


def fast_path(
    replica: Replica,
    workload: Workload | tuple[float, ...],
    rate_rps: float | None = None,
) -> FastPathResult:
    """Analytical steady state at ``rate_rps`` (default: the workload's peak) [req/s].

    ``workload`` may also be ``(mean_input_tokens, mean_output_tokens[, cached_tokens])``.
    Used to bracket the capacity search and for quick sweeps; the simulation is the
    reference (they agree within 10 % on mean throughput at moderate load, see tests).
    """
    eng, sm = replica.engine, replica.sm
    st = sm.step_time
    sched = eng.sched_overhead_s
    I_, O_, c_, ctx_run = _shape(workload, eng)
    if rate_rps is None:
        if not isinstance(workload, Workload):
            raise PlannerError("fast_path needs rate_rps when given plain lengths")
        rate_rps = workload.traffic.peak()
    lam = float(rate_rps)
    require_positive("rate_rps", lam)
    W = sm.window if sm.layers_sw > 0 else 0.0
    n_pf = max(I_ - c_, 1.0)
    budget = float(eng.max_num_batched_tokens)
    mean_ctx = ctx_run
    per_seq_tokens = ctx_run + eng.block_size_tokens / 2
    n_max_kv = eng.kv_capacity_tokens / per_seq_tokens
    n_max = min(float(eng.max_num_seqs), n_max_kv)
    limit = "max_num_seqs" if eng.max_num_seqs <= n_max_kv else "kv_cache"
    pf_pairs = n_pf * c_ + n_pf * (n_pf + 1) / 2
    pf_pairs_sw = _window_pairs(int(c_), int(n_pf), W) if W else 0.0
    dec = O_ - 1.0

    def t_of(a: float, b: float) -> float:
        kv = b * (mean_ctx + 1) + a * I_
        pr = b * (mean_ctx + 1) + a * pf_pairs
        kvs = b * min(mean_ctx + 1, W) + a * min(I_, W) if W else 0.0
        prs = b * min(mean_ctx + 1, W) + a * pf_pairs_sw if W else 0.0
        return st(b + a * n_pf, b + a, b + a, kv, pr, kvs, prs) + sched

    # saturation
    if dec > 0:
        a_sat = min(n_max / dec, budget / (n_pf + dec))
        limit = limit if n_max / dec <= budget / (n_pf + dec) else "token_budget"
    else:
        a_sat = min(float(eng.max_num_seqs), max(budget / n_pf, 1.0))
        limit = "token_budget"
    t_sat = t_of(a_sat, a_sat * dec)
    lam_sat = a_sat / t_sat
    sat_out = lam_sat * O_
    e2e_sat = t_sat / 2 + math.ceil(n_pf / max(budget - a_sat * dec, 1.0)) * t_sat + dec * t_sat
    stable = lam < lam_sat
    if stable:
        lo, hi = 0.0, t_sat
        for _ in range(60):
            mid = (lo + hi) / 2
            if t_of(lam * mid, lam * mid * dec) > mid:
                lo = mid
            else:
                hi = mid
        t = hi
        a = lam * t
        b = a * dec
    else:
        t, a, b = t_sat, a_sat, a_sat * dec
    lam_eff = lam if stable else lam_sat
    left = max(budget - b, 1.0)
    ttft = t / 2 + math.ceil(n_pf / left) * t
    e2e = ttft + dec * t
    return FastPathResult(
        rate_rps=lam,
        stable=stable,
        iteration_s=t,
        decode_batch=b,
        concurrency=lam_eff * e2e,
        ttft_s=ttft if stable else float("inf"),
        tpot_s=t,
        e2e_s=e2e if stable else float("inf"),
        output_tok_s=lam_eff * O_,
        total_tok_s=lam_eff * (O_ + I_),
        saturation_rps=lam_sat,
        saturation_output_tok_s=sat_out,
        saturation_e2e_s=e2e_sat,
        saturation_iteration_s=t_sat,
        max_concurrency=n_max,
        limited_by=limit,
        num_gpus=replica.num_gpus,
    )


# =========================================================================== zero load
def unloaded_latency(
    replica: Replica, workload: Workload, n: int = 400, rng: np.random.Generator | None = None
) -> dict[str, np.ndarray]:
    """Per-request TTFT, TPOT and E2E of requests served alone (no queueing, batch 1) [s]."""
    rng = rng if rng is not None else np.random.default_rng(12345)
    eng, sm = replica.engine, replica.sm
    st = sm.step_time
    sched = eng.sched_overhead_s
    W = int(sm.window) if sm.layers_sw > 0 and sm.window > 0 else 0
    reqs = workload.sample_requests(
        n, rng, 1.0, context_limit=eng.context_limit_tokens, prefix_caching=eng.prefix_caching
    )
    budget = eng.max_num_batched_tokens if eng.chunked_prefill else 1 << 60
    ttft = np.empty(len(reqs))
    tpot = np.full(len(reqs), np.nan)
    for k, (P, Oq, c) in enumerate(
        zip(
            reqs.input_tokens.tolist(),
            reqs.output_tokens.tolist(),
            reqs.cached_tokens.tolist(),
            strict=True,
        )
    ):
        pos, t = c, 0.0
        while pos < P:
            m = min(P - pos, budget)
            end = pos + m
            kvs = min(end, W) if W else 0
            prs = _window_pairs(pos, m, W) if W else 0.0
            t += st(m, 1, 1 if end == P else 0, end, m * pos + m * (m + 1) / 2, kvs, prs) + sched
            pos = end
        ttft[k] = t
        if Oq > 1:
            t0 = st(1, 1, 1, P + 1, P + 1, min(P + 1, W), min(P + 1, W)) + sched
            t1 = st(1, 1, 1, P + Oq - 1, P + Oq - 1, min(P + Oq - 1, W), min(P + Oq - 1, W)) + sched
            tpot[k] = (t0 + t1) / 2
    e2e = ttft + np.nan_to_num(tpot) * (reqs.output_tokens - 1)
    return {"ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e}


def check_reachable(replica: Replica, workload: Workload, slo: SLO) -> dict[str, float]:
    """Raise when a single unloaded request already misses an SLO threshold.

    Returns the zero-load percentile of each metric with a target [s].
    """
    z = unloaded_latency(replica, workload)
    out: dict[str, float] = {}
    if slo.attainment is not None and slo.targets():
        ev = slo.evaluate(z["ttft_s"], z["tpot_s"], z["e2e_s"])
        out["attainment"] = ev["attainment"]
        if not ev["attainment_ok"]:
            raise PlannerError(
                f"SLO unreachable even at zero load: served alone, only {ev['attainment']:.1%} of the "
                f"requests meet every threshold (target {slo.attainment:.1%}) on {replica.label()}; "
                "long prompts or answers in the tail miss it - loosen a threshold or the attainment"
            )
    for name, tgt in slo.targets().items():
        x = z[f"{name}_s"]
        x = x[~np.isnan(x)]
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


# =========================================================================== capacity
@dataclass(frozen=True)
class CapacityResult:
    """The largest arrival rate one replica sustains within the SLO, and the run at that rate."""

    max_rate_rps: float
    summary: dict[str, Any]
    slo: SLO
    saturation_rps: float
    zero_load: dict[str, float]
    evaluations: tuple[tuple[float, bool, float], ...]
    num_gpus: int
    label: str
    limited_by: str

    @property
    def max_rate_per_gpu_rps(self) -> float:
        return self.max_rate_rps / self.num_gpus


def _binding(summary: dict[str, Any], slo: SLO) -> str:
    worst, name = -1.0, "throughput"
    for k, t in slo.targets().items():
        v = summary.get(f"{k}_{t.label}_s", float("nan"))
        if v == v and v / t.max_s > worst:
            worst, name = v / t.max_s, f"{k.upper()} {t.label}"
    if slo.attainment is not None and summary.get("slo_attainment", 1.0) < slo.attainment:
        name += " (attainment)"
    return name


def _scored_requests(
    workload: Workload, slo: SLO, n_requests: int, min_exceedances: float, max_factor: float
) -> int:
    """Requests to score per rate so that about ``min_exceedances`` of them are expected to
    miss the tightest tail the SLO looks at (1 - percentile, or 1 - attainment), scaled by
    the arrivals' burstiness (squared cv of the gaps: exceedances come in clusters, so a
    bursty stream carries fewer independent ones); between ``n_requests`` and
    ``max_factor * n_requests``."""
    tails = [1.0 - t.percentile / 100.0 for t in slo.targets().values()]
    if slo.attainment is not None and slo.targets():
        tails.append(1.0 - slo.attainment)
    tails = [f for f in tails if f > 1e-12]
    if not tails or min_exceedances <= 0:
        return int(n_requests)
    burst = max(1.0, workload.traffic.burstiness())
    need = math.ceil(min_exceedances * burst / min(tails) - 1e-9)
    return int(max(n_requests, min(need, max_factor * n_requests)))


def max_rate(
    replica: Replica,
    workload: Workload,
    slo: SLO,
    *,
    n_requests: int = 1200,
    rng: np.random.Generator | None = None,
    rel_tol: float = 0.02,
    max_evals: int = 16,
    max_utilization: float = 0.95,
    min_exceedances: float = 50.0,
    max_scored_factor: float = 10.0,
) -> CapacityResult:
    """Largest arrival rate per replica whose SLO attainment meets the target (bisection).

    Every evaluation replays the same requests (lengths and unit-rate arrival gaps are drawn
    once and rescaled to each rate: common random numbers), so attainment is a
    near-monotone function of the rate and a looser SLO can never get a lower answer. The
    bracket is ``[0, max_utilization x`` :func:`fast_path`'s saturation rate``]``: a queue
    closer to saturation has no stable percentiles, whatever a finite run shows.

    At least ``n_requests`` requests are scored per rate, more when the SLO looks far into
    the tail or the arrivals are bursty: enough that ``min_exceedances`` of them are expected
    beyond the tightest percentile (or attainment) even after dividing by the squared cv of
    the arrival gaps, at most ``max_scored_factor x n_requests``. (Too few scored requests
    overestimate the capacity: exceedances come in bursts, so a short window usually holds
    fewer of them than the long run.) Before the scored requests the run warms up for twice
    the E2E latency of a p99-long answer at saturation (the batch reaches steady state only
    once its longest requests have cycled), and after them arrivals continue as long again,
    so the scored requests never see a ramp-up or a draining engine and an overload shows
    as a growing queue.

    Raises
    ------
    PlannerError
        when a request alone already misses the SLO ("unreachable even at zero load"),
        or a request does not fit in memory.
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    eng = replica.engine
    require_positive("n_requests", n_requests)
    fp = fast_path(replica, workload, 1.0)
    # The batch reaches steady state only after its longest requests have cycled through:
    # warm up for the E2E of a p99-long answer at saturation, score the requests, and keep
    # arrivals flowing as long again so the scored ones never see a draining engine.
    t_sat = fp.saturation_iteration_s
    tail_s = max(fp.saturation_e2e_s, workload.output_quantile_tokens(0.99) * t_sat)
    warm_s = 2.0 * tail_s
    cap_rps = max_utilization * fp.saturation_rps
    n_scored = _scored_requests(workload, slo, n_requests, min_exceedances, max_scored_factor)
    n_cap = n_scored + 11 * int(n_requests)
    wl = workload.model_copy(update={"offline": False}) if workload.offline else workload

    base = wl.sample_requests(
        n_cap, rng, 1.0, context_limit=eng.context_limit_tokens, prefix_caching=eng.prefix_caching
    )
    check_fits(replica, base)
    zero = check_reachable(replica, workload, slo)
    evals: list[tuple[float, bool, float]] = []
    cache: dict[float, dict[str, Any]] = {}

    def ok(rate: float) -> bool:
        k = int(min(n_cap, n_scored + math.ceil(rate * (warm_s + tail_s)) + 1))
        reqs = Requests(
            base.arrival_s[:k] / rate,
            base.input_tokens[:k],
            base.output_tokens[:k],
            base.cached_tokens[:k],
            base.shared_prefix_tokens,
            0,
        )
        res = (
            _run_continuous(replica, reqs, None)
            if eng.continuous_batching
            else _run_static(replica, reqs)
        )
        a = res.arrival_s
        lo_t = min(warm_s, float(a[int(0.5 * (k - 1))]))
        mask = (a >= lo_t) & (np.arange(k) < np.searchsorted(a, lo_t) + n_scored)
        s = res.summary(slo, mask=mask)
        s["warmup_s"] = lo_t
        s["rate_rps"] = rate
        cache[rate] = s
        evals.append((rate, bool(s["slo_ok"]), float(s["slo_attainment"])))
        return bool(s["slo_ok"])

    lo, hi = 0.0, cap_rps
    if ok(hi):
        lo = hi
    while len(evals) < max_evals and hi - lo > rel_tol * hi:
        mid = (lo + hi) / 2 if lo > 0 else (0.7 * hi if len(evals) == 1 else hi / 2)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    if lo <= 0:
        # nothing passed: look for a tiny positive rate that passes (SLO tight but reachable)
        r = hi / 2
        while len(evals) < max_evals + 6 and r > 1e-6 * fp.saturation_rps:
            if ok(r):
                lo = r
                break
            hi = r
            r /= 2
    summary = cache.get(lo) if lo > 0 else cache.get(min(cache))
    if lo >= cap_rps * (1 - 1e-9):
        binding = f"throughput ({max_utilization:.0%} of the saturation rate, {fp.limited_by})"
    else:
        binding = _binding(cache.get(hi) or summary, slo)
    return CapacityResult(
        max_rate_rps=float(lo),
        summary=summary,
        slo=slo,
        saturation_rps=fp.saturation_rps,
        zero_load=zero,
        evaluations=tuple(evals),
        num_gpus=replica.num_gpus,
        label=replica.label(),
        limited_by=binding,
    )


def size_fleet(
    max_rate_rps: float,
    peak_rps: float,
    *,
    headroom: float = 0.2,
    gpus_per_replica: int = 1,
    hourly_rps: np.ndarray | list[float] | None = None,
) -> dict[str, Any]:
    """Replicas and GPUs for a peak rate: ``replicas = ceil(peak * (1 + headroom) / capacity)``.

    With an hourly profile, GPU-hours per day are given both for a fixed fleet sized for
    the peak (24 h x GPUs) and for an ideal hourly autoscaler (each hour sized alone).
    """
    require_positive("peak_rps", peak_rps)
    require_positive("headroom", headroom, allow_zero=True)
    require_positive("gpus_per_replica", gpus_per_replica)
    if not max_rate_rps > 0:
        raise PlannerError("no capacity: the replica cannot serve any rate within the SLO")
    need = peak_rps * (1 + headroom) / max_rate_rps
    if not math.isfinite(need):
        raise PlannerError(
            f"cannot size a fleet for peak {peak_rps:g} req/s with headroom {headroom:g} at "
            f"{max_rate_rps:g} req/s per replica: the replica count is not a finite number"
        )
    replicas = max(1, math.ceil(need - 1e-9))
    gpus = replicas * int(gpus_per_replica)
    out: dict[str, Any] = {
        "peak_rps": float(peak_rps),
        "headroom": float(headroom),
        "max_rate_per_replica": float(max_rate_rps),
        "replicas": replicas,
        "gpus_per_replica": int(gpus_per_replica),
        "num_gpus": gpus,
        "utilization_at_peak": float(peak_rps / (replicas * max_rate_rps)),
        "gpu_hours_per_day": gpus * 24.0,
    }
    if hourly_rps is not None:
        h = np.asarray(hourly_rps, float)
        if not np.isfinite(h).all():
            raise PlannerError("hourly arrival rates must be finite numbers")
        per_hour = (
            np.maximum(1, np.ceil(h * (1 + headroom) / max_rate_rps - 1e-9)) * gpus_per_replica
        )
        out["gpu_hours_per_day_autoscaled"] = float(per_hour.sum())
        out["requests_per_day"] = float(h.sum() * 3600)
    return out


# =========================================================================== curve
def throughput_latency_curve(
    replica: Replica,
    workload: Workload,
    *,
    concurrencies: list[int] | None = None,
    slo: SLO | None = None,
    requests_per_client: int = 8,
    min_requests: int = 400,
    max_requests: int = 4000,
    rng: np.random.Generator | None = None,
) -> list[dict[str, Any]]:
    """Throughput and latency against the number of concurrent clients (closed loop).

    Each point runs ``requests_per_client`` x concurrency requests (within the given
    bounds) with the clients all busy; throughput counts completions between the first
    client's second request and the last request's dispatch (no ramp-up, no drain), and the
    latencies are those of the requests dispatched in that window, minus the last
    ``concurrency`` (they finish while the load drains).

    The knee is the point of maximum power, output tokens/s divided by mean E2E latency
    (Kleinrock's optimal operating point of a queue: beyond it latency grows faster than
    throughput). Rows carry ``is_knee``.
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    eng = replica.engine
    if concurrencies is None:
        fp = fast_path(replica, workload, 1.0)
        top = max(2, int(min(eng.max_num_seqs, fp.max_concurrency) * 1.5))
        concurrencies = [1]
        while concurrencies[-1] < top:
            concurrencies.append(concurrencies[-1] * 2)
    seed = int(rng.integers(1 << 31))
    rows: list[dict[str, Any]] = []
    for c in concurrencies:
        require_positive("concurrency", c)
        c = int(c)
        n = int(min(max(requests_per_client * c, min_requests), max_requests))
        reqs = workload.sample_requests(
            n,
            np.random.default_rng(seed),
            1.0,
            context_limit=eng.context_limit_tokens,
            prefix_caching=eng.prefix_caching,
        )
        if eng.continuous_batching:
            res = _run_continuous(replica, reqs, c)
        else:
            res = _run_static(replica, reqs, c)
        row = _closed_loop_point(res, c, slo)
        rows.append(row)
    power = [r["output_tok_s"] / r["e2e_mean_s"] if r["e2e_mean_s"] > 0 else 0.0 for r in rows]
    k = int(np.argmax(power)) if rows else 0
    for i, r in enumerate(rows):
        r["is_knee"] = i == k
    return rows


def _closed_loop_point(res: SimResult, c: int, slo: SLO | None) -> dict[str, Any]:
    a = res.arrival_s
    f = res.finish_s
    n = len(a)
    order = np.argsort(a, kind="stable")
    t_a = float(a[order[min(c, n - 1)]]) if n > c else float(a[order[0]])
    t_b = float(a[order[-1]])
    if t_b <= t_a:  # too few requests for a window: whole run
        t_a, t_b = float(a.min()), float(f.max())
    done = (f >= t_a) & (f <= t_b)
    span = t_b - t_a
    out_tok = float(res.output_tokens[done].sum())
    in_tok = float(res.input_tokens[done].sum())
    lat = np.zeros(n, dtype=bool)
    lat[order[min(c, n - 1) : max(n - c, min(c, n - 1) + 1)]] = True
    if lat.sum() < 20:
        lat[:] = True
    s = res.summary(slo, mask=lat)
    row = {
        "concurrency": int(c),
        "output_tok_s": out_tok / span,
        "output_tok_s_per_gpu": out_tok / span / res.num_gpus,
        "total_tok_s": (out_tok + in_tok) / span,
        "throughput_rps": float(done.sum()) / span,
        "ttft_p50_s": s["ttft_p50_s"],
        "ttft_p99_s": s["ttft_p99_s"],
        "tpot_p50_s": s["tpot_p50_s"],
        "tpot_p99_s": s["tpot_p99_s"],
        "e2e_mean_s": s["e2e_mean_s"],
        "e2e_p99_s": s["e2e_p99_s"],
        "kv_util_mean": s["kv_util_mean"],
        "preemptions": s["preemptions"],
    }
    if slo is not None:
        row["slo_ok"] = s["slo_ok"]
    return row


# =========================================================================== TP comparison
def compare_tp(
    model: Any,
    gpu: Any,
    precision: Any,
    framework: Any,
    workload: Workload,
    slo: SLO,
    *,
    tps: tuple[int, ...] = (1, 2, 4, 8),
    pp: int = 1,
    kv_precision: str | None = None,
    peak_rps: float | None = None,
    headroom: float = 0.2,
    catalog: Catalog | None = None,
    params: EfficiencyParams | None = None,
    n_requests: int = 800,
    engine: dict[str, Any] | None = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One big-TP replica against several small ones: capacity per replica and per GPU,
    replicas and GPUs for the peak, and the P99 latencies, for each TP size.

    Every TP size keeps the deployment's ``pp`` and ``kv_precision``, and its capacity
    search draws its requests from ``np.random.default_rng(seed)``, so the row of the
    deployment's own TP equals :func:`max_rate` of that replica with the same seed."""
    peak = peak_rps if peak_rps is not None else workload.traffic.peak()
    rows: list[dict[str, Any]] = []
    for tp in tps:
        row: dict[str, Any] = {"tp": int(tp)}
        try:
            rep = build_replica(
                model,
                gpu,
                precision,
                framework,
                tp=tp,
                pp=pp,
                kv_precision=kv_precision,
                params=params,
                catalog=catalog,
                **(engine or {}),
            )
            cap = max_rate(
                rep, workload, slo, n_requests=n_requests, rng=np.random.default_rng(seed)
            )
            fl = size_fleet(
                cap.max_rate_rps, peak, headroom=headroom, gpus_per_replica=rep.num_gpus
            )
            row.update(
                fits=True,
                max_rate_per_replica=cap.max_rate_rps,
                max_rate_per_gpu=cap.max_rate_per_gpu_rps,
                replicas=fl["replicas"],
                num_gpus=fl["num_gpus"],
                ttft_p99_s=cap.summary.get("ttft_p99_s"),
                tpot_p99_s=cap.summary.get("tpot_p99_s"),
                reason="",
            )
        except PlannerError as e:
            row.update(
                fits=False,
                max_rate_per_replica=None,
                max_rate_per_gpu=None,
                replicas=None,
                num_gpus=None,
                ttft_p99_s=None,
                tpot_p99_s=None,
                reason=str(e),
            )
        rows.append(row)
    ok = [r for r in rows if r.get("num_gpus")]
    if ok:
        best = min(ok, key=lambda r: (r["num_gpus"], -r["max_rate_per_gpu"]))
        for r in rows:
            r["best"] = r is best
    return rows


# =========================================================================== serving rows
#: metrics of the benchmark schema this module predicts, with their unit
SERVING_METRICS = {
    "output_tok_s_total": "tok/s",
    "output_tok_s_per_gpu": "tok/s/gpu",
    "total_tok_s": "tok/s",
    "req_s": "req/s",
    "ttft_ms_mean": "ms",
    "ttft_ms_median": "ms",
    "ttft_ms_p99": "ms",
    "tpot_ms_mean": "ms",
    "tpot_ms_median": "ms",
    "itl_ms_mean": "ms",
    "itl_ms_median": "ms",
    "e2e_ms_mean": "ms",
    "e2e_ms_median": "ms",
    "decode_tok_s_single_stream": "tok/s",
    "prefill_tok_s": "tok/s",
}
SERVING_ROW_MODES = (
    "offline",
    "rate",
    "server",
    "interactive",
    "concurrency",
    "static_batch",
    "single_stream",
)

#: simulated requests: offline rows (extrapolated to the row's request count), MLPerf Server
OFFLINE_MIN_REQUESTS = 2000
OFFLINE_WAVES = 6
SERVER_REQUESTS = 3000
RATE_SEEDS = 3

_ROW_CACHE: dict[tuple, dict[str, Any] | str] = {}


def _cell(row: dict[str, Any], key: str) -> str:
    v = row.get(key)
    if v is None:
        return ""
    if isinstance(v, float) and math.isnan(v):
        return ""
    return str(v).strip()


def _num_cell(row: dict[str, Any], key: str) -> float | None:
    s = _cell(row, key)
    if not s:
        return None
    try:
        return float(s)
    except ValueError:
        return None


def _request_count(notes: str) -> int | None:
    import re

    m = re.search(r"(\d[\d,]*)\s+requests", notes) or re.search(r"(\d[\d,]*)-sample", notes)
    return int(m.group(1).replace(",", "")) if m else None


def steady_throughput(res: SimResult, t_lo: float, t_hi: float) -> tuple[float, float, float]:
    """(requests/s, output tok/s, total tok/s) completed between ``t_lo`` and ``t_hi`` [s].

    Counting completions inside a window of a long open-loop run measures what the
    replica delivers in steady state, without the ramp-up or the drain after the last
    arrival (which a first-arrival-to-last-completion span includes).
    """
    f = res.finish_s
    m = (f >= t_lo) & (f <= t_hi)
    span = max(t_hi - t_lo, 1e-12)
    o = float(res.output_tokens[m].sum())
    return float(m.sum()) / span, o / span, (o + float(res.input_tokens[m].sum())) / span


def _dataset_lengths(row: dict[str, Any], model_id: str) -> tuple[Any, Any, str] | str:
    """(input dist, output dist, note) for a variable-length row, or a reason string."""
    from .workload import openorca_lengths

    notes = _cell(row, "notes").lower()
    if "openorca" in notes and "mix" not in notes.split("dataset", 1)[-1][:20]:
        if not model_id.startswith("llama-2-70b"):
            return (
                f"OpenOrca lengths are known in Llama-2 tokens only (MLPerf llama2-70b set); model "
                f"{model_id} tokenizes differently"
            )
        i, o = openorca_lengths()
        return (
            i,
            o,
            "MLPerf OpenOrca length distribution (2,162-sample quantiles; answers ~290 tokens)",
        )
    if "mix" in notes or "mixtral" in model_id:
        return (
            "the MLPerf Mixtral-8x7B dataset (OpenOrca + GSM8K + MBXP, 15,000 samples) has no "
            "transcribed length distribution; isl/osl are empty"
        )
    if "sharegpt" in notes:
        return "ShareGPT rows need their filtered length distribution, which no source here gives"
    return "isl/osl are empty and the notes name no dataset with a known length distribution"


def predict_serving_row(
    row: dict[str, Any], catalog: Catalog, params: EfficiencyParams
) -> tuple[float | None, str]:
    """Predict one serving row of the benchmark schema with the simulator.

    Modes: ``offline`` (all requests queued at t = 0), ``rate`` / ``server`` /
    ``interactive`` (open-loop Poisson at ``request_rate``), ``concurrency`` (closed loop),
    ``static_batch`` / ``single_stream`` (one static batch). Metrics: see
    :data:`SERVING_METRICS`. A multi-GPU row is split into ``n_gpus / (tp * pp)``
    replicas sharing the load evenly; system totals add them up.

    Returns
    -------
    (value, reason)
        ``value`` in the row's unit and an empty reason, or None with the reason saying
        what is missing. :func:`serving_row_details` gives every metric of the row's
        simulation and a note on how it was run (request count, length distribution).
    """
    metric = _cell(row, "metric")
    mode = _cell(row, "mode")
    if metric not in SERVING_METRICS:
        if metric == "other":
            return (
                None,
                "metric 'other' is ambiguous in the source (per GPU or per group not stated)",
            )
        return None, f"metric {metric or '(empty)'} is not a serving metric"
    if mode not in SERVING_ROW_MODES:
        return None, f"mode {mode or '(empty)'} not supported by the serving simulator"
    try:
        out = _serving_row_result(row, catalog, params)
    except PlannerError as e:
        return None, str(e)
    if isinstance(out, str):
        return None, out
    val = out.get(metric)
    if val is None or not (isinstance(val, float) and math.isfinite(val)):
        return (
            None,
            f"metric {metric} is not defined for this row (e.g. TPOT with one output token)",
        )
    return float(val), ""


def serving_row_details(
    row: dict[str, Any], catalog: Catalog, params: EfficiencyParams
) -> dict[str, Any]:
    """Every metric of the simulation behind a serving row, plus ``note`` (how it was run)
    or ``reason`` (why it cannot be)."""
    try:
        out = _serving_row_result(row, catalog, params)
    except PlannerError as e:
        return {"reason": str(e)}
    if isinstance(out, str):
        return {"reason": out}
    d = {k: v for k, v in out.items() if not k.startswith("_")}
    d["note"] = out["_note"]
    return d


def _serving_row_result(
    row: dict[str, Any], cat: Catalog, params: EfficiencyParams
) -> dict[str, Any] | str:
    mode = _cell(row, "mode")
    hw = _cell(row, "hardware")
    model_key = _cell(row, "model")
    prec = _cell(row, "precision")
    fw_id = _cell(row, "framework")
    if not hw or not model_key:
        return "hardware or model is empty"
    if not prec:
        return "precision is empty (the source does not say), so it cannot be modelled"
    if not fw_id:
        return "framework is empty, so the scheduler cannot be modelled"
    n_gpus = _num_cell(row, "n_gpus") or 1.0
    tp = _num_cell(row, "tp")
    pp = _num_cell(row, "pp") or 1.0
    if tp is None:
        if n_gpus == 1:
            tp = 1.0
        else:
            return f"tp is empty and n_gpus={n_gpus:g}, so the number of replicas is unknown"
    if n_gpus % (tp * pp):
        return f"n_gpus={n_gpus:g} is not a multiple of tp x pp = {tp * pp:g}"
    replicas = int(n_gpus // (tp * pp))
    kv = _cell(row, "kv_precision") or None
    isl, osl = _num_cell(row, "isl"), _num_cell(row, "osl")
    batch = _num_cell(row, "batch")
    conc = _num_cell(row, "concurrency")
    rate = _num_cell(row, "request_rate")
    notes = _cell(row, "notes")
    count = _request_count(notes)
    util = 0.95 if "fraction 0.95" in notes else None
    key = (
        hw,
        model_key,
        prec,
        kv,
        fw_id,
        int(tp),
        int(pp),
        replicas,
        mode,
        isl,
        osl,
        batch,
        conc,
        rate,
        count,
        util,
        notes if isl is None else "",
        params,
    )
    if key in _ROW_CACHE:
        return _ROW_CACHE[key]
    m = cat.model_ref(model_key, _cell(row, "_dir") or None)
    if kv is not None and kv not in {k.id for k in cat.kv_precisions}:
        kv = None
    rep = build_replica(
        m,
        hw,
        prec,
        fw_id,
        tp=int(tp),
        pp=int(pp),
        kv_precision=kv,
        params=params,
        catalog=cat,
        memory_utilization=util,
    )
    if (isl is not None and osl is not None) or mode in ("static_batch", "single_stream"):
        ilen: Any = None
        note_len = (
            f"fixed lengths {int(isl)}/{int(osl)}"
            if isl and osl
            else f"prompt {int(isl or 1)}, {int(osl or 128)} generated tokens (unstated ones assumed)"
        )
    else:
        ds = _dataset_lengths(row, m.id)
        if isinstance(ds, str):
            _ROW_CACHE[key] = ds
            return ds
        ilen, olen, note_len = ds
    rng = np.random.default_rng(20240601)

    def requests(n: int, r: float | None) -> Requests:
        if ilen is None:
            i = np.full(n, int(isl))
            o = np.full(n, int(osl))
        else:
            i, o = ilen.sample(n, rng), olen.sample(n, rng)
        a = np.zeros(n) if r is None else np.cumsum(rng.exponential(1.0 / r, n))
        return make_requests(a, i, o, context_limit=rep.engine.context_limit_tokens)

    out: dict[str, Any]
    if mode in ("static_batch", "single_stream"):
        b = int(batch) if batch else (1 if mode == "single_stream" else 0)
        if b <= 0:
            return "static batch without a batch size"
        i_ = int(isl) if isl else 1
        o_ = int(osl) if osl else 128
        reqs = make_requests(np.zeros(b), np.full(b, i_), np.full(b, o_))
        res = _run_static(rep.with_engine(max_num_seqs=max(b, 1)), reqs)
        s = res.summary()
        e2e = float(res.finish_s.max())
        t_pf = float(res.first_token_s.max())
        out = _row_metrics(s, replicas, rep.num_gpus)
        out.update(
            output_tok_s_total=b * o_ * replicas / e2e,
            output_tok_s_per_gpu=b * o_ / e2e / rep.num_gpus,
            total_tok_s=b * (i_ + o_) * replicas / e2e,
            req_s=b * replicas / e2e,
            decode_tok_s_single_stream=1.0 / s["tpot_mean_s"] if o_ > 1 else float("nan"),
            prefill_tok_s=b * i_ / t_pf,
        )
        out["_note"] = f"one static batch of {b}; {note_len}"
    elif mode == "offline":
        total = count or OFFLINE_MIN_REQUESTS
        eng = rep.engine
        ctx_mean = (isl + osl) if ilen is None else (ilen.mean_tokens() + olen.mean_tokens())
        b_max = min(eng.max_num_seqs, eng.kv_capacity_tokens / max(ctx_mean, 1.0))
        per_rep = math.ceil(total / replicas)
        n = int(min(per_rep, max(OFFLINE_MIN_REQUESTS, OFFLINE_WAVES * b_max)))
        res = (
            _run_continuous(rep, requests(n, None), None)
            if eng.continuous_batching
            else _run_static(rep, requests(n, None))
        )
        s = res.summary()
        span = res.duration_s
        if per_rep > n:  # extrapolate the steady middle of the run to the row's request count
            f = np.sort(res.finish_s)
            lo, hi = int(0.3 * n), int(0.8 * n)
            ss_rate = (hi - lo) / max(f[hi] - f[lo], 1e-12)
            span = span + (per_rep - n) / ss_rate
        o_tok = float(res.output_tokens.mean()) * per_rep
        i_tok = float(res.input_tokens.mean()) * per_rep
        out = _row_metrics(s, replicas, rep.num_gpus)
        out.update(
            output_tok_s_total=o_tok / span * replicas,
            output_tok_s_per_gpu=o_tok / span / rep.num_gpus,
            total_tok_s=(o_tok + i_tok) / span * replicas,
            req_s=per_rep / span * replicas,
        )
        out["_note"] = (
            f"offline: {n} of {per_rep} requests per replica simulated"
            + (", steady rate extrapolated" if per_rep > n else "")
            + f"; {note_len}"
        )
    elif mode in ("rate", "server", "interactive"):
        if rate is None or not math.isfinite(rate) or rate <= 0:
            return f"mode {mode} without a finite request_rate"
        r = rate / replicas
        if mode == "rate" and count:
            n = math.ceil(count / replicas)
            seeds = RATE_SEEDS
            mask_fn = None
        else:
            n = SERVER_REQUESTS
            seeds = 1
            mask_fn = "steady"
        acc: list[dict[str, Any]] = []
        for _ in range(seeds):
            reqs = requests(n, r)
            res = (
                _run_continuous(rep, reqs, None)
                if rep.engine.continuous_batching
                else _run_static(rep, reqs)
            )
            if mask_fn:
                s = res.summary(warmup_frac=0.2, cooldown_frac=0.1)
                a = np.sort(res.arrival_s)
                lo_t, hi_t = float(a[int(0.2 * (n - 1))]), float(a[-1])
                s["throughput_rps"], s["output_tok_s"], s["total_tok_s"] = steady_throughput(
                    res, lo_t, hi_t
                )
            else:
                s = res.summary()
            acc.append(s)
        s = {
            k: float(np.mean([a[k] for a in acc]))
            for k in acc[0]
            if isinstance(acc[0][k], (int, float))
        }
        out = _row_metrics(s, replicas, rep.num_gpus)
        out["_note"] = (
            f"Poisson at {r:.4g} req/s per replica x {replicas}, {n} requests"
            + (f" x {seeds} seeds" if seeds > 1 else ", scored after warm-up")
            + f"; {note_len}"
        )
    elif mode == "concurrency":
        if not conc:
            return "concurrency row without a concurrency"
        c = max(1, int(round(conc / replicas)))
        n = int(count / replicas) if count else max(8 * c, 500)
        res = _run_continuous(rep, requests(n, None), c)
        s = res.summary()
        out = _row_metrics(s, replicas, rep.num_gpus)
        out["_note"] = (
            f"closed loop, {c} clients per replica x {replicas}, {n} requests; {note_len}"
        )
    else:  # pragma: no cover
        return f"mode {mode} not supported"
    if rep.params_source != "prior":
        out["_note"] += f"; params {rep.params_source}"
    _ROW_CACHE[key] = out
    return out


def _row_metrics(s: dict[str, Any], replicas: int, gpus_per_replica: int) -> dict[str, Any]:
    ms = 1000.0
    return {
        "output_tok_s_total": s["output_tok_s"] * replicas,
        "output_tok_s_per_gpu": s["output_tok_s"] / gpus_per_replica,
        "total_tok_s": s["total_tok_s"] * replicas,
        "req_s": s["throughput_rps"] * replicas,
        "ttft_ms_mean": s["ttft_mean_s"] * ms,
        "ttft_ms_median": s["ttft_p50_s"] * ms,
        "ttft_ms_p99": s["ttft_p99_s"] * ms,
        "tpot_ms_mean": s["tpot_mean_s"] * ms,
        "tpot_ms_median": s["tpot_p50_s"] * ms,
        "itl_ms_mean": s["itl_mean_s"] * ms,
        "itl_ms_median": s["itl_p50_s"] * ms,
        "e2e_ms_mean": s["e2e_mean_s"] * ms,
        "e2e_ms_median": s["e2e_p50_s"] * ms,
        "decode_tok_s_single_stream": 1.0 / s["tpot_mean_s"]
        if s.get("tpot_mean_s")
        else float("nan"),
        "prefill_tok_s": float("nan"),
    }
