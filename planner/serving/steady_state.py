"""Analytic steady state of one replica (no event loop): the closed form the capacity search
starts from and the offline-throughput predictor the calibration fit uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.engine._scalar import step_time_scalar, window_pairs
from planner.engine.phases import _window_sums
from planner.engine.step import StepModel
from planner.errors import PlannerError, require_positive
from planner.serving.replica import EngineConfig, Replica
from planner.workload.workload import Requests, Workload


# =========================================================================== steady state
@dataclass(frozen=True)
class SteadyStateResult:
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


def _shape(workload: Workload | tuple[float, ...], eng: EngineConfig) -> tuple[float, ...]:
    """(mean prompt, mean answer, mean cached prompt tokens, mean context of a running
    decoder, mean max new tokens) [tokens]. A decoder's context is weighted by how long it
    stays in the batch (its answer length): ``E[O*I]/E[O] + E[O**2]/(2 E[O])`` -- for
    heavy-tailed answers this is far above ``I + O/2``. The max new tokens (what admission
    reserves, :func:`_constants`) is ``max(answer, Requests.max_new_tokens)`` per request; a
    tuple of four (a benchmark row's lengths) reserves the answer itself."""
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
        return shape_of_requests(r)
    t = tuple(float(x) for x in workload)
    i, o = t[0], t[1]
    c = t[2] if len(t) > 2 else 0.0
    return (i, o, c, (t[3] if len(t) > 3 else i + (o - 1) / 2), *t[4:5])


def shape_of_requests(r: Requests) -> tuple[float, float, float, float, float]:
    """:func:`_shape` of a concrete request list (e.g. several request classes merged)."""
    i = r.input_tokens.astype(float)
    o = r.output_tokens.astype(float)
    c = r.cached_tokens.astype(float)
    dec = np.maximum(o - 1, 0)
    w = dec.sum()
    ctx = float((dec * (i + (o - 1) / 2)).sum() / w) if w > 0 else float(i.mean())
    mx = float(np.maximum(o, r.max_new_tokens).mean())
    return float(i.mean()), float(o.mean()), float(c.mean()), ctx, mx


#: (coefficient tuple, host time per iteration [s], per sequence [s], mean prompt I,
#: prefill tokens n_pf, cached tokens c, running context, window W, prefill pairs, windowed
#: prefill pairs, host overlapped): what the step time of an iteration at rate lambda needs (:func:`_t_of`)
Shape = tuple


def _t_of(k, a, b):
    """Step time [s] of an iteration that starts ``a`` prompts and carries ``b`` decoders,
    ``k`` the constants of :data:`Shape` (the replica and the request shape)."""
    coeffs, h0, h1, I_, n_pf, c_, mean_ctx, W, pf_pairs, pf_pairs_sw, ov = k
    kv = b * (mean_ctx + 1) + a * I_
    pr = b * (mean_ctx + 1) + a * pf_pairs
    kvs = b * min(mean_ctx + 1, W) + a * min(I_, W) if W else 0.0
    prs = b * min(mean_ctx + 1, W) + a * pf_pairs_sw if W else 0.0
    gpu = _st(coeffs, b + a * n_pf, b + a, b + a, kv, pr, kvs, prs, a * n_pf * c_)
    host = h0 + h1 * (b + a)
    return max(gpu, host) if ov else gpu + host  # the engine overlaps them: the longer


def _fixed_point(k, lam, dec, t_sat):
    """Iteration time [s] at a stable rate ``lam`` [req/s]: the fixed point
    ``t = t_of(lam t, lam t dec)`` by 60 bisection steps in ``(0, t_sat]``."""
    lo, hi = 0.0, t_sat
    for _ in range(60):
        mid = (lo + hi) / 2
        if _t_of(k, lam * mid, lam * mid * dec) > mid:
            lo = mid
        else:
            hi = mid
    return hi


def _latencies(t, a, dec, n_pf, budget):
    """Mean TTFT and E2E [s] at iteration time ``t`` [s] with ``a`` prompts started per
    iteration: half an iteration of wait, the prompt's chunks, then ``dec`` decode
    iterations."""
    b = a * dec
    left = max(budget - b, 1.0)
    ttft = t / 2 + math.ceil(n_pf / left) * t
    return ttft, ttft + dec * t


def _slo_rate(k, dec, budget, lam_sat, t_sat, ttft_max, tpot_max, e2e_max, cap, steps):
    """:meth:`planner.serving.WorkloadCache.slo_rate` on the constants ``k``: the largest
    rate [req/s] up to ``cap`` whose mean TTFT, TPOT and E2E meet the thresholds (bisection,
    ``steps`` steps; ``cap`` itself when it meets them)."""
    n_pf = k[4]
    lo, hi = 0.0, cap
    for i in range(steps + 1):
        rate = cap if i == 0 else (lo + hi) / 2
        ok = rate < lam_sat
        if ok:
            t = _fixed_point(k, rate, dec, t_sat)
            ttft, e2e = _latencies(t, rate * t, dec, n_pf, budget)
            ok = ttft <= ttft_max and t <= tpot_max and e2e <= e2e_max
        if i == 0:
            if ok:
                return cap
        elif ok:
            lo = rate
        else:
            hi = rate
    return hi


_st = step_time_scalar  # the compiled twin in planner.serving._steady


def tokens_per_step(replica: Replica) -> float:
    """Tokens a decoding sequence gains per iteration: the acceptance length with
    speculative decoding (:mod:`planner.serving.speculative`), else 1."""
    spec = getattr(replica, "spec", None)
    return float(spec.acceptance_length) if spec is not None else 1.0


def engine_limits(worst: dict[str, float], replica: Replica) -> dict[str, float]:
    """SLO thresholds [s] (``ttft``, ``tpot``, ``e2e``) in the engine's terms: TPOT's per
    step (x the tokens per step, :func:`tokens_per_step`), TTFT's and E2E's less the front
    end's first-token path (``EngineConfig.first_token_s``, added outside the engine)."""
    off = replica.engine.first_token_s
    return {
        "ttft": worst["ttft"] - off,
        "tpot": worst["tpot"] * tokens_per_step(replica),
        "e2e": worst["e2e"] - off,
    }


def _constants(replica: Replica, shape: tuple[float, ...]) -> tuple:
    """The constants of :data:`Shape`, the answer's decode iterations and the token budget,
    and the saturation point ``(a_sat, t_sat, lam_sat, limit)`` of ``replica`` for requests
    of ``shape`` (mean prompt, answer, cached tokens, running context and, optionally, max
    new tokens: the answer when absent)."""
    eng, sm = replica.engine, replica.sm
    I_, O_, c_, ctx_run = shape[:4]
    max_new = shape[4] if len(shape) > 4 else O_
    W = sm.window if sm.layers_sw > 0 else 0.0
    n_pf = max(I_ - c_, 1.0)
    budget = float(eng.max_num_batched_tokens)
    # a sequence holds its running context, or what admission reserves for it (its prompt and
    # the reserved share of its max new tokens, ``EngineConfig.kv_reserve_fraction``) when
    # that is more
    held = max(ctx_run, I_ + eng.kv_reserve_fraction * max_new)
    per_seq_tokens = held + eng.block_size_tokens / 2
    n_max_kv = eng.kv_capacity_tokens / per_seq_tokens
    n_max = min(float(eng.max_num_seqs), n_max_kv)
    limit = "max_num_seqs" if eng.max_num_seqs <= n_max_kv else "kv_cache"
    pf_pairs = n_pf * c_ + n_pf * (n_pf + 1) / 2
    pf_pairs_sw = window_pairs(int(c_), int(n_pf), W) if W else 0.0
    dec = (O_ - 1.0) / tokens_per_step(replica)  # speculative: AL tokens per decode step
    k = (
        sm._coeffs, float(eng.sched_overhead_s), float(eng.sched_seq_overhead_s), I_, n_pf, c_,
        ctx_run, float(W), pf_pairs, pf_pairs_sw, bool(eng.host_overlap),
    )  # fmt: skip
    # saturation
    if dec > 0:
        a_sat = min(n_max / dec, budget / (n_pf + dec))
        limit = limit if n_max / dec <= budget / (n_pf + dec) else "token_budget"
    else:
        a_sat = min(float(eng.max_num_seqs), max(budget / n_pf, 1.0))
        limit = "token_budget"
    t_sat = _t_of(k, a_sat, a_sat * dec)
    return k, dec, budget, n_max, (a_sat, t_sat, a_sat / t_sat, limit)


def steady_state(
    replica: Replica,
    workload: Workload | tuple[float, ...],
    rate_rps: float | None = None,
) -> SteadyStateResult:
    """Analytical steady state at ``rate_rps`` (default: the workload's peak) [req/s].

    ``workload`` may also be ``(mean_input_tokens, mean_output_tokens[, cached_tokens[,
    running_context]])``.
    Used to bracket the capacity search and for quick sweeps; the simulation is the
    reference (they agree within 10 % on mean throughput at moderate load, see tests).
    """
    eng = replica.engine
    shape = _shape(workload, eng)
    if rate_rps is None:
        if not isinstance(workload, Workload):
            raise PlannerError("steady_state needs rate_rps when given plain lengths")
        rate_rps = workload.traffic.peak()
    lam = float(rate_rps)
    require_positive("rate_rps", lam)
    k, dec, budget, n_max, (a_sat, t_sat, lam_sat, limit) = _constants(replica, shape)
    I_, O_ = shape[0], shape[1]
    n_pf = k[4]
    sat_out = lam_sat * O_
    e2e_sat = t_sat / 2 + math.ceil(n_pf / max(budget - a_sat * dec, 1.0)) * t_sat + dec * t_sat
    stable = lam < lam_sat
    if stable:
        t = _fixed_point(k, lam, dec, t_sat)
        a = lam * t
    else:
        t, a = t_sat, a_sat
    lam_eff = lam if stable else lam_sat
    ttft, e2e = _latencies(t, a, dec, n_pf, budget)
    off = eng.first_token_s  # the front end's first-token path: the client's TTFT and E2E
    return SteadyStateResult(
        rate_rps=lam,
        stable=stable,
        iteration_s=t,
        decode_batch=a * dec,
        concurrency=lam_eff * e2e,
        ttft_s=ttft + off if stable else float("inf"),
        tpot_s=t / tokens_per_step(replica),
        e2e_s=e2e + off if stable else float("inf"),
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


#: whether :func:`offline_throughput` runs a cycle by its engine's policy (only the
#: iterations that carry prompt tokens run eagerly) instead of the even spread of the prompts
#: over every iteration (each then eager). Off: measured held out by source
#: (docs/changes/2026-12-07b/offline.md, 2026-12-07) it fixes the offline rows' eager floor (GPUStack
#: 42.3% -> 40.2%; dstack's H200 SGLang TP8 wave agrees with its DP8 online run), but
#: InferenceX held out goes 16.3% -> 23.4% (TTFT bias -16% -> -36%, MI355X frontier 0.96 ->
#: 0.49-0.66), with or without dstack's DeepSeek-R1 rows in the fit (18.7% -> 23.4%): the
#: eager floor the offline rows taught (nvidia/sglang 1.39 ms per layer, 0.29 ms with the
#: policy) is what lengthens the simulator's serving prefill steps to the measured TTFT.
#: Turn it on together with a serving prefill cost that stands on its own.
OFFLINE_ENGINE_POLICY = False


def offline_engine_policy() -> bool:
    """:data:`OFFLINE_ENGINE_POLICY` now (read when a predictor is built)."""
    return OFFLINE_ENGINE_POLICY


def offline_throughput(
    sm: StepModel,
    input_tokens: float,
    output_tokens: float,
    max_batch: float,
    token_budget: float,
    host_overlap: bool = False,
    prefill_first: bool = False,
    chunked: bool = True,
    engine_policy: bool | None = None,
) -> tuple[float, float]:
    """Steady-state offline throughput of one replica [output tok/s] and its batch.

    An offline run (every prompt handed over at once, request rate inf) keeps ``B =
    max_batch`` sequences running; a finished sequence's slot goes to the next waiting
    prompt. Per cycle B requests finish and B prompts (``isl`` tokens each) are prefilled;
    :func:`offline_cycle_iterations` counts the cycle's iterations the way the engine
    schedules them, and only the iterations that carry prompt tokens run eagerly (the step
    model's rule, :attr:`~planner.catalog.efficiency.EfficiencyParams.eager_layer_s`); the
    others are decode-only steps of B sequences, which replay the engine's CUDA graph.

    * Mixed batches (``prefill_first`` False: vLLM V1, vLLM V0 with chunked prefill,
      TensorRT-LLM's in-flight batching, SGLang with ``--enable-mixed-chunk``, and what the
      serving simulator runs for SGLang by default,
      :data:`planner.serving.replica.ENGINE_PREFILL_FIRST_DEFAULT`): the engine schedules the
      running decoders first and fills what is left of the token budget with prompt
      chunks (vLLM V1 ``Scheduler.schedule`` in ``vllm/v1/core/sched/scheduler.py``: the
      RUNNING requests, then the WAITING ones while ``token_budget`` lasts; the simulator's
      :func:`planner.serving._phases.chunk_prefills` / ``admit``). With fixed lengths the
      B sequences finish within the few iterations that admitted them, and their
      successors are admitted in those same iterations: a cycle is ``n_iter = max(osl, B
      (isl + osl) / token_budget)`` iterations, of which only ``n_pf = ceil(B isl /
      (token_budget - B))`` carry prompt tokens (all of them when prefill is the bound).
    * Prompts first (``prefill_first``: vLLM V0's ``_schedule_default`` "Don't schedule
      decodes if prefills are scheduled"; SGLang's ``get_next_batch_to_run``, which runs
      a prefill batch whenever one can be formed and mixes no decoders into it,
      ``Framework.prefill_first_source``): a cycle is ``k = ceil(B isl / token_budget)``
      prompt-only iterations (without ``chunked`` prefill whole prompts, ``floor(budget /
      isl)`` a step, at least one), then ``osl - 1`` decode-only iterations of all B
      (the one-wave path, :func:`prefill_first_cycle`).

    Throughput = ``B osl / (cycle time)``. Lengths are the means of a fixed-length row,
    ``isl = input_tokens``, ``osl = output_tokens``.

    Pipeline parallelism (``sm.pp > 1``): the engine keeps ``pp`` micro-batches in flight,
    one on each stage, and the token budget holds per micro-batch (TensorRT-LLM:
    ``mNumMicroBatches = getPipelineParallelism()`` in ``trtGptModelInflightBatching.cpp``).
    The step model splits each iteration into its micro-batches
    (:mod:`planner.engine.pipeline`); here the replica's budget is ``pp x token_budget``
    (``pp_micro_batches`` of the step model). With :data:`planner.engine.pipeline.PIPELINED`
    off the step runs its stages one after the other and this function splits the batch
    into ``k = min(pp, B)`` micro-batches itself (the planner's reading until 2026-12-07).

    ``host_overlap``: the engine prepares the next iteration on the CPU while the GPU runs
    this one (:attr:`~planner.serving.replica.EngineConfig.host_overlap`): an iteration takes
    ``max(gpu, host)`` instead of ``gpu + host``.

    ``engine_policy`` (None: :data:`OFFLINE_ENGINE_POLICY`): False spreads the cycle's
    prompts evenly over all ``n_iter`` iterations, every one eager (``prefill_first`` and
    ``chunked`` ignored): the predictor before 2026-12-07.
    """
    B = max(1.0, float(max_batch))
    # the budget holds per micro-batch; the step model splits the iteration into them
    budget = token_budget * min(float(sm.pp_micro_batches), B)
    # pipeline.PIPELINED off: main's reading before 2026-12-07, k micro-batches of B / k
    # here and a stage-after-stage step (the serving simulator ran them one at a time)
    k = min(float(sm.pp), B) if sm.pp_micro_batches == 1 else 1.0
    policy = OFFLINE_ENGINE_POLICY if engine_policy is None else bool(engine_policy)
    if not policy:
        cyc = _offline_cycle(
            sm, input_tokens, output_tokens, B / k, budget, host_overlap, even=True
        )
    elif prefill_first:
        cyc = prefill_first_cycle(
            sm, input_tokens, output_tokens, B / k, budget, host_overlap, chunked
        )
    else:
        cyc = _offline_cycle(sm, input_tokens, output_tokens, B / k, budget, host_overlap, chunked)
    return k * cyc, B


def prompt_iterations(n: float, isl: float, room: float, chunked: bool = True) -> float:
    """Iterations that ``n`` prompts of ``isl`` tokens take when each iteration has ``room``
    prompt tokens [tokens]: ``ceil(n isl / room)`` with chunked prefill; without it whole
    prompts only, ``floor(room / isl)`` a step (at least one: a longer prompt runs alone)."""
    n, isl, room = max(float(n), 0.0), max(float(isl), 0.0), max(float(room), 1.0)
    if n == 0.0 or isl == 0.0:
        return 0.0
    if chunked:
        return float(math.ceil(n * isl / room - 1e-9))
    return float(math.ceil(n / max(math.floor(room / isl), 1.0) - 1e-9))


def offline_cycle_iterations(
    B: float,
    isl: float,
    osl: float,
    token_budget: float,
    prefill_first: bool = False,
    chunked: bool = True,
    even: bool = False,
) -> tuple[float, float]:
    """(iterations that carry prompt tokens, decode-only iterations) of one offline cycle of
    ``B`` sequences (:func:`offline_throughput`); ``even``: the even spread, every
    iteration carries prompt tokens."""
    B, isl, osl = max(1.0, float(B)), float(isl), float(osl)
    budget = max(float(token_budget), 1.0)
    if even:
        return max(osl, B * (isl + osl) / budget), 0.0
    if prefill_first:
        return prompt_iterations(B, isl, budget, chunked), max(osl - 1.0, 0.0)
    n_iter = max(osl, B * (isl + osl) / budget)
    room = budget - B  # the running decoders are scheduled first
    n_pf = n_iter if room < 1.0 else min(n_iter, max(1.0, prompt_iterations(B, isl, room, chunked)))
    return n_pf, n_iter - n_pf


def closed_loop_throughput(
    sm: StepModel,
    input_tokens: float,
    output_tokens: float,
    clients: float,
    token_budget: float,
    host_overlap: bool = False,
) -> float:
    """Steady-state output throughput [tok/s] of ``clients`` closed-loop clients on one replica.

    Each client sends its next request the moment the last one ends, so ``B = clients``
    sequences are in flight and their requests end at staggered times. A request lives
    ``k + osl - 1`` iterations: its prompt in ``k = ceil(isl / token_budget)`` chunks, each
    chunk in an iteration beside the ``B - 1`` other sequences' decodes, then ``osl - 1``
    decodes (the prompt's last chunk gives the first token). Per lifetime the ``B`` prompts
    take ``B k`` mixed iterations and the rest, ``osl - 1 - k (B - 1)``, decode all ``B``.
    A decode iteration holds only ``B`` tokens: an MoE layer at small ``B`` reads the experts
    ``B`` tokens route to, not those of ``B`` tokens plus a share of the prompts (as in
    :func:`offline_throughput`'s even spread). When the prompts cannot be staggered (``k (B -
    1) > osl - 1``: they overlap, as in an offline run), :func:`offline_throughput` is used.
    Pipeline parallelism is not modelled here (one micro-batch).
    """
    isl, osl = float(input_tokens), float(output_tokens)
    cyc = closed_loop_cycle(sm, isl, osl, clients, token_budget, host_overlap)
    if cyc is None:
        return offline_throughput(
            sm, isl, osl, max(1.0, float(clients)), token_budget, host_overlap
        )[0]
    B, k, n_dec, t_mix, t_dec = cyc
    return B * osl / (B * k * t_mix + n_dec * t_dec)


def closed_loop_cycle(
    sm: StepModel,
    input_tokens: float,
    output_tokens: float,
    clients: float,
    token_budget: float,
    host_overlap: bool = False,
) -> tuple[float, float, float, float, float] | None:
    """One request lifetime of :func:`closed_loop_throughput`'s steady state.

    Returns
    -------
    (B, k, n_dec, t_mix, t_dec) or None
        ``B`` sequences in flight, ``k`` prompt chunks per request, ``n_dec`` decode-only
        iterations per lifetime, the wall time of a mixed iteration (one prompt chunk beside
        ``B - 1`` decodes) and of a decode-only one [s]; None when the prompts cannot be
        staggered (``k (B - 1) > osl - 1``) or with pipeline parallelism.
    """
    isl, osl, B = float(input_tokens), float(output_tokens), max(1.0, float(clients))
    k = float(math.ceil(isl / max(float(token_budget), 1.0)))
    n_dec = osl - 1.0 - k * (B - 1.0)
    if n_dec < 0.0 or sm.pp > 1:
        return None
    ctx = isl + osl / 2
    chunk = isl / k
    sched = sm.params.sched_overhead_s + sm.params.sched_seq_overhead_s * B
    if sm.window:
        sw = min(ctx, sm.window)
        _, prefill_pairs_sw = _window_sums(isl, isl, sm.window)
        pf_sw = float(prefill_pairs_sw) / k
    else:
        sw = pf_sw = 0.0
    t_dec = _wall(sm.step_time(B, B, B, B * ctx, B * ctx, B * sw, B * sw), sched, host_overlap)
    t_mix = _wall(
        sm.step_time(
            chunk + B - 1.0,
            B,
            B,
            B * ctx,
            (B - 1.0) * ctx + isl * isl / (2.0 * k),
            B * sw,
            (B - 1.0) * sw + pf_sw,
        ),
        sched,
        host_overlap,
    )
    return B, k, n_dec, t_mix, t_dec


def closed_loop_latencies(
    sm: StepModel,
    input_tokens: float,
    output_tokens: float,
    clients: float,
    token_budget: float,
    host_overlap: bool = False,
) -> tuple[float, float, float] | None:
    """``(TTFT, TPOT, median ITL)`` [s] a request sees in :func:`closed_loop_throughput`'s
    steady state; None where that has none (:func:`closed_loop_cycle`).

    A request's ``k`` prompt chunks each run in a mixed iteration, the last one giving the
    first token: ``TTFT = k t_mix`` (no queue: its client sent it when the last request
    ended, and the replica holds ``B`` sequences; the wait for the running iteration is
    the simulator's, none: a request that arrives at an iteration's end joins the next).
    Its ``osl - 1`` later tokens each take one iteration: ``(B - 1) k`` of them mixed (the
    other clients' prompt chunks), ``n_dec`` decode-only, so
    ``TPOT = ((B - 1) k t_mix + n_dec t_dec) / (osl - 1)``: every request alike, so its
    mean and median are one number, and the mean ITL (a mean over the same gaps) too. The
    median ITL is the median gap: ``t_dec`` while fewer than half the gaps are mixed.
    """
    cyc = closed_loop_cycle(sm, input_tokens, output_tokens, clients, token_budget, host_overlap)
    osl = float(output_tokens)
    if cyc is None or osl <= 1.0:
        return None
    B, k, n_dec, t_mix, t_dec = cyc
    mixed = (B - 1.0) * k
    tpot = (mixed * t_mix + n_dec * t_dec) / (osl - 1.0)
    itl_median = t_dec if mixed < (osl - 1.0) / 2.0 else t_mix
    return k * t_mix, tpot, itl_median


def _wall(gpu_s: float, host_s: float, overlap: bool) -> float:
    """An iteration's wall time [s]: ``gpu + host``, or ``max(gpu, host)`` overlapped."""
    return max(gpu_s, host_s) if overlap else gpu_s + host_s


def _offline_cycle(
    sm: StepModel,
    input_tokens: float,
    output_tokens: float,
    B: float,
    token_budget: float,
    host_overlap: bool = False,
    chunked: bool = True,
    even: bool = False,
) -> float:
    """Output tok/s of ``B`` sequences in mixed batches (:func:`offline_throughput`).

    The cycle's work (B prompts, ``B osl`` tokens out, query-key pairs ``B (isl^2 / 2 + osl
    ctx)``) less that of its ``n_dec`` decode-only iterations (B tokens, pairs ``B ctx``
    each) is spread evenly over its ``n_pf`` prompt-carrying iterations."""
    isl, osl = input_tokens, output_tokens  # the benchmark schema's names, as in the formula
    n_pf, n_dec = offline_cycle_iterations(B, isl, osl, token_budget, False, chunked, even)
    ctx = isl + osl / 2
    if sm.window:
        sw = min(ctx, sm.window)
        _, prefill_pairs_sw = _window_sums(isl, isl, sm.window)
        pf_sw = float(prefill_pairs_sw)
    else:
        sw = pf_sw = 0.0
    sched = sm.params.sched_overhead_s + sm.params.sched_seq_overhead_s * B
    new = (B * (isl + osl) - B * n_dec) / n_pf
    pairs = (B * (isl * isl / 2 + osl * ctx) - n_dec * B * ctx) / n_pf
    pairs_sw = (B * (pf_sw + osl * sw) - n_dec * B * sw) / n_pf if sm.window else 0.0
    t = n_pf * _wall(sm.step_time(new, B, B, B * ctx, pairs, B * sw, pairs_sw), sched, host_overlap)
    if n_dec > 0:
        t_dec = sm.step_time(B, B, B, B * ctx, B * ctx, B * sw, B * sw)
        t += n_dec * _wall(t_dec, sched, host_overlap)
    return B * osl / t


def prefill_first_cycle(
    sm: StepModel,
    isl: float,
    osl: float,
    n: float,
    token_budget: float,
    host_overlap: bool = False,
    chunked: bool = True,
) -> float:
    """Output throughput [tok/s] of ``n`` sequences run prompts first: ``k`` prompt-only
    iterations (:func:`prompt_iterations`: ``n isl / k`` prompt tokens, ``n / k`` sequences
    (at least one) and ``n isl^2 / (2k)`` query-key pairs each), then ``osl - 1``
    decode-only iterations of all ``n`` at the mean context ``isl + osl / 2``; each
    iteration with the scheduler's cost. Output tok/s = ``n osl / (k t_prefill + (osl - 1)
    t_decode)``. One such cycle is also one wave of ``n`` requests submitted at once
    (:func:`planner.benchmarks.step_rows.one_wave_throughput`)."""
    n = max(1.0, float(n))
    isl, osl = float(isl), float(osl)
    k, n_dec = offline_cycle_iterations(n, isl, osl, token_budget, True, chunked)
    ctx = isl + osl / 2.0
    p = sm.params
    sw = min(ctx, sm.window) if sm.window else 0.0
    t = 0.0
    if k:
        seqs = max(1.0, n / k)
        # query-key pairs of one prompt in a window-capped layer: sum_{i=1..isl} min(i, w)
        w = float(sm.window or 0)
        cap = min(w, isl)
        pf_sw = (cap * (cap + 1) / 2 + (isl - cap) * w) * n / k if w else 0.0
        new = n * isl / k
        kv_sw = min(new, sm.window * seqs) if sm.window else 0.0
        t_pf = sm.step_time(new, seqs, seqs, new, n * isl * isl / (2.0 * k), kv_sw, pf_sw)
        t += k * _wall(t_pf, p.sched_overhead_s + p.sched_seq_overhead_s * seqs, host_overlap)
    if n_dec > 0:
        t_dec = sm.step_time(n, n, n, n * ctx, n * ctx, n * sw, n * sw)
        t += n_dec * _wall(t_dec, p.sched_overhead_s + p.sched_seq_overhead_s * n, host_overlap)
    return n * osl / t
