"""Step-level and static rows of the benchmark schema as predictors ``params -> value``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from planner.benchmarks import finite_run
from planner.benchmarks.scheduler_waits import (
    admission_gate,
    admission_wait,
    burst_wait,
    trtllm_pytorch_backend,
    window_iterations,
)
from planner.benchmarks.schema import (
    SERVING_MODES,
    UnknownLayoutError,
    allreduce_latency_s,
    cell,
    engine_settings,
    graphs_off,
    layout,
    memory_fraction_from_notes,
    number,
    request_count,
)
from planner.benchmarks.serving_rows import GATE_BURST, v0_mla_unchunked_tokens
from planner.catalog.catalog import Catalog, default_kv_precision
from planner.catalog.compat import check_framework_gpu
from planner.catalog.efficiency import PRIOR, EfficiencyParams
from planner.catalog.layout import Layout, check_for_model, check_framework_layout
from planner.engine.graphs import without_graphs
from planner.engine.memory import plan_memory
from planner.engine.phases import decode_time, mean_decode_time, prefill_time
from planner.engine.step import StepModel, step_model
from planner.errors import PlannerError
from planner.serving.replica import ENGINE_PREFILL_FIRST_DEFAULT
from planner.serving.steady_state import (
    closed_loop_cycle,
    closed_loop_latencies,
    closed_loop_throughput,
    offline_engine_policy,
    offline_throughput,
    prefill_first_cycle,
)


def _static_parts(sm, batch, isl, osl):
    pf = prefill_time(sm, batch, isl)
    dec = mean_decode_time(sm, batch, isl, osl) if osl > 1 else 0.0
    return pf, dec, pf + dec * max(osl - 1, 0)


# A fit evaluates every row for each parameter vector, and most rows share a few setups
# (model, GPU, precision, KV, layout): the rows of one setup share one StepModel, and its copy
# with a given parameter vector is built once per vector instead of once per row. Entries hold
# the objects their ids name, so an id is never reused while its entry exists.
_SETUPS: dict[tuple, tuple] = {}
_WITH_PARAMS: dict[tuple[int, int], tuple] = {}
#: id of a shared step model -> the per-all-reduce latency its launch states [s]
#: (:func:`planner.benchmarks.schema.allreduce_latency_s`); its step model lives in _SETUPS
_AR_LATENCY: dict[int, float] = {}


def _shared_setup(
    m, g, p, kv, lay: Layout, cat: Catalog, eager: bool = False, ar_latency_s=None
) -> StepModel:
    key = (id(m), g.id, p.id, kv, lay, id(cat), eager, ar_latency_s)
    hit = _SETUPS.get(key)
    if hit is None:
        if len(_SETUPS) > 4096:
            _SETUPS.clear()
            _AR_LATENCY.clear()
        sm = step_model(
            m, g, p, kv, lay.tp, lay.pp, PRIOR, cat, layout=None if lay.is_plain else lay
        )
        if eager:  # the row's engine captured no graphs: every step eager, as simulated
            sm = without_graphs(sm)
        if ar_latency_s is not None:  # the launch's all-reduce path, as simulated
            _AR_LATENCY[id(sm)] = ar_latency_s
        hit = _SETUPS[key] = (m, cat, sm)
    return hit[2]


def _with_params(sm0: StepModel, params: EfficiencyParams) -> StepModel:
    key = (id(sm0), id(params))
    hit = _WITH_PARAMS.get(key)
    if hit is None:
        if len(_WITH_PARAMS) > 8192:
            _WITH_PARAMS.clear()
        lat = _AR_LATENCY.get(id(sm0))
        q = params if lat is None else params.with_(comm_latency_s=lat)
        hit = _WITH_PARAMS[key] = (sm0, params, replace(sm0, params=q))
    return hit[2]


def _row_setup(row: dict, cat: Catalog) -> tuple | str:
    """(model, gpu, precision, framework, KV precision id, engine settings, step model with
    the prior, layout) of a row, or the reason it has none."""
    prec = cell(row, "precision")
    if not prec:
        return "precision not stated by the source"
    try:
        m = cat.model_ref(str(row["model"]), str(row.get("_dir", ".")))
        g = cat.gpu(str(row["hardware"]))
        p = cat.precision(prec)
        fw = cat.framework(str(row["framework"]))
        check_framework_gpu(fw, g)
    except PlannerError as e:
        return str(e)
    try:
        lay = layout(row)
        if not lay.plain:  # expert parallel / attention DP: the model and engine offer it
            check_for_model(m, lay.layout)
            check_framework_layout(fw, lay.layout)
    except UnknownLayoutError:
        return "tp not stated by the source"
    except PlannerError as e:
        return str(e)
    try:
        settings = engine_settings(cell(row, "notes"))
        # the row's KV precision (column or kv_cache_dtype tag), else the framework's default
        kv = cell(row, "kv_precision") or settings.kv_cache_dtype
        kv = cat.kv_precision(kv).id if kv else default_kv_precision(p, fw, m).id
        sm0 = _shared_setup(
            m, g, p, kv, lay.layout, cat, graphs_off(cell(row, "notes")), allreduce_latency_s(row)
        )
    except PlannerError as e:
        return str(e)
    return m, g, p, fw, kv, settings, sm0, lay


def row_predictor(row: dict, cat: Catalog) -> tuple[Callable | None, str, str]:
    """(predict(params) -> value, reason, fit_kind) for one benchmark-schema row."""
    metric = str(row.get("metric", ""))
    mode = str(row.get("mode", ""))
    setup = _row_setup(row, cat)
    if isinstance(setup, str):
        return None, setup, ""
    m, g, p, fw, kv, settings, sm0, lay = setup
    replicas = lay.replicas
    isl, osl = number(row, "isl"), number(row, "osl")
    batch = number(row, "batch")
    ctx = number(row, "context_len")
    for name, v in (("isl", isl), ("osl", osl), ("batch", batch), ("context_len", ctx)):
        if v is not None and v <= 0:
            return None, f"{name} must be > 0, got {v:g}", ""
    scale = 1000.0 if metric.startswith(("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")) else 1.0

    def with_p(params: EfficiencyParams) -> StepModel:
        return _with_params(sm0, params)

    if metric == "prefill_s":
        if batch is None or isl is None:
            return None, "prefill_s needs batch and isl", ""
        return (lambda q: prefill_time(with_p(q), batch, isl)), "", "step"
    if metric == "decode_step_s":
        if batch is None or ctx is None:
            return None, "decode_step_s needs batch and context_len", ""
        return (lambda q: decode_time(with_p(q), batch, ctx)), "", "step"
    if metric == "other":
        return (
            None,
            "metric 'other' is ambiguous in the source (per GPU or per group not stated)",
            "",
        )
    if mode in ("static_batch", "single_stream"):
        b = batch if batch is not None else (1.0 if mode == "single_stream" else None)
        if b is None:
            return None, "static batch without a batch size", ""
        if metric == "decode_tok_s_single_stream":
            if osl is None:
                # llama-bench tg / mlc 256-token decode from a near-empty context
                osl_eff = 128.0
                isl_eff = isl or 0.0
            else:
                osl_eff, isl_eff = osl, isl or 0.0
            return (
                (lambda q: 1.0 / mean_decode_time(with_p(q), 1.0, isl_eff, osl_eff)),
                "",
                "single",
            )
        if metric == "prefill_tok_s":
            if isl is None:
                return None, "prefill_tok_s needs isl", ""
            return (lambda q: b * isl / prefill_time(with_p(q), b, isl)), "", "single"
        if isl is None or osl is None:
            return None, "static batch without isl/osl", ""
        kind = "single" if mode == "single_stream" else "static"
        if metric == "ttft_ms_mean":
            return (lambda q: scale * prefill_time(with_p(q), b, isl)), "", kind
        if metric in ("tpot_ms_median", "tpot_ms_mean", "itl_ms_mean", "itl_ms_median"):
            if osl <= 1:
                return None, "TPOT undefined for one output token", ""
            return (lambda q: scale * mean_decode_time(with_p(q), b, isl, osl)), "", kind
        if metric in ("output_tok_s_total", "output_tok_s_per_gpu", "total_tok_s", "req_s"):
            per = {
                "output_tok_s_total": b * osl * replicas,
                "output_tok_s_per_gpu": b * osl / lay.gpus_per_replica,
                "total_tok_s": b * (isl + osl) * replicas,
                "req_s": b * replicas,
            }[metric]
            return (lambda q: per / _static_parts(with_p(q), b, isl, osl)[2]), "", kind
        return None, f"metric {metric} not supported in mode {mode}", ""
    if mode == "offline" and metric in THROUGHPUT_METRICS:
        if isl is None or osl is None:
            return (
                None,
                "offline row without isl/osl: predicted by the simulator with the dataset's length distribution",
                "serving",
            )
        # a run of N requests submitted at once (notes "4 requests") or N concurrent clients
        # never batches more than N sequences
        caps = (request_count(cell(row, "notes")), number(row, "concurrency"))
        return _steady_predictor(row, cat, setup[:7], isl, osl, caps)
    if mode in SERVING_MODES or mode == "offline":
        return None, "serving row: predicted by the simulator, not used in the fit", "serving"
    return None, f"metric {metric} in mode {mode} not supported", ""


#: throughput metrics a steady-state predictor gives (offline and closed-loop rows)
THROUGHPUT_METRICS = ("output_tok_s_total", "output_tok_s_per_gpu", "total_tok_s", "req_s")


def _steady_predictor(
    row: dict,
    cat: Catalog,
    setup: tuple,
    isl: float,
    osl: float,
    caps: tuple,
    closed_loop: bool = False,
    finite: Callable[[float, float], float] | None = None,
) -> tuple[Callable | None, str, str]:
    """Steady-state throughput predictor of an offline row (or, ``closed_loop``, of a closed
    loop of clients: :func:`~planner.serving.steady_state.closed_loop_throughput`) with its
    own settings, else its engine release's defaults on the GPU; at most ``caps`` sequences.
    ``finite``: a closed loop's finite-run factor of its steady TTFT and TPOT [s]
    (:func:`~planner.benchmarks.finite_run.closed_loop_factor`) that scales its throughput."""
    m, g, p, fw, kv, settings, sm0 = setup
    metric = str(row.get("metric", ""))
    lay = layout(row)
    tp, pp, replicas = lay.tp, lay.pp, lay.replicas
    dp = lay.layout.attention_dp
    # a tuned run's own settings (notes tags), else the defaults its engine release picks
    # on this GPU (vLLM V1: 1024 / 8192 on >= 70 GiB GPUs other than A100s)
    version = cell(row, "framework_version")
    seqs0, btok0 = fw.scheduler_defaults(g, version, cell(row, "as_of"))
    # the engine's batching policy, as the serving simulator runs it (build_replica's
    # prefill_first; serving_rows.simulate_row): vLLM V0 serves MLA models without chunked
    # prefill, whole prompts first, in a budget of max(max_model_len, 2048) tokens;
    # SGLang runs prompts first only when ENGINE_PREFILL_FIRST_DEFAULT says so
    # (only with OFFLINE_ENGINE_POLICY: off, the even spread of before, budget included)
    policy = offline_engine_policy()
    v0_btok = v0_mla_unchunked_tokens(fw.id, version, m, cell(row, "notes")) if policy else None
    if v0_btok is not None:
        btok0 = v0_btok
    chunked = v0_btok is None
    first = v0_btok is not None or (
        fw.prefill_first_source is not None and ENGINE_PREFILL_FIRST_DEFAULT
    )
    ov = bool(fw and fw.overlaps_host(version, cell(row, "as_of"), pipeline=int(pp) > 1))
    # per attention rank (vLLM / SGLang / TensorRT-LLM): the replica schedules dp times as many
    max_seqs = (settings.max_num_seqs or seqs0) * dp
    budget = float(settings.max_num_batched_tokens or btok0 or 8192) * dp
    try:
        util = memory_fraction_from_notes(cell(row, "notes"))
        mp = plan_memory(
            m,
            g,
            p,
            kv,
            int(tp),
            int(pp),
            int(round(isl + osl)),
            util if util is not None else fw.memory_utilization_default(version),
            fw,
            max_num_seqs=max_seqs // dp,
            max_batched_tokens=int(budget) // dp,
            catalog=cat,
            suggest=False,
            layout=None if lay.plain else lay.layout,
        )
    except PlannerError as e:
        return None, str(e), ""
    if not mp.fits:
        return None, mp.reason, ""
    # with pipeline parallelism max_num_seqs holds per micro-batch, pp of them in flight
    # (TensorRT-LLM: CapacityScheduler(getMaxBatchSize() * mNumMicroBatches),
    # trtGptModelInflightBatching.cpp; planner.serving.steady_state.offline_throughput)
    B = float(min(mp.max_concurrent_sequences, max_seqs * pp))
    # an offline run of N requests handed to the engine together (ONE_WAVE_CLIENTS) that
    # the replica holds all at once runs as one wave: N prompts, then osl - 1 decode-only
    # iterations (:func:`one_wave_throughput`), not a steady stream of prompts
    n_req = caps[0] if caps and not closed_loop and _one_wave_client(row) else None
    wave = n_req is not None and 1 <= n_req / replicas <= B and pp == 1
    for cap in caps:
        if cap is not None and cap >= 1:
            B = min(B, float(cap))
    per_gpu = metric == "output_tok_s_per_gpu"
    mult = (1.0 / lay.gpus_per_replica) if per_gpu else replicas
    if metric == "total_tok_s":
        mult *= (isl + osl) / osl
    if metric == "req_s":
        mult /= osl

    if closed_loop and metric in CLOSED_LOOP_LATENCY_METRICS:
        if closed_loop_latencies(sm0, isl, osl, B, budget, ov) is None:
            return None, "no staggered steady state (prompts overlap, or pipeline)", ""
        pick = CLOSED_LOOP_LATENCY_METRICS[metric]
        gate = admission_gate(cell(row, "notes"), cell(row, "framework_version"))
        waits = pick == 0 and not gate.off

        def predict(q: EfficiencyParams) -> float:
            sm = _with_params(sm0, q)
            got = closed_loop_latencies(sm, isl, osl, B, budget, ov)
            ms = 1000.0 * got[pick]  # type: ignore[index]
            return ms + gate_wait_ms(gate, sm, got, isl, osl, B, budget, dp) if waits else ms

    elif closed_loop and finite is not None:

        def predict(q: EfficiencyParams) -> float:
            sm = _with_params(sm0, q)
            cyc = closed_loop_cycle(sm, isl, osl, B, budget, ov)
            if cyc is None:  # prompts overlap: the offline steady state, no finite run
                return mult * closed_loop_throughput(sm, isl, osl, B, budget, ov)
            b, k, n_dec, t_mix, t_dec = cyc
            life_s = b * k * t_mix + n_dec * t_dec  # one request's time in the steady state
            tpot_s = ((b - 1.0) * k * t_mix + n_dec * t_dec) / max(osl - 1.0, 1.0)
            return mult * b * osl / life_s * finite(k * t_mix, tpot_s)

    elif closed_loop:

        def predict(q: EfficiencyParams) -> float:
            return mult * closed_loop_throughput(_with_params(sm0, q), isl, osl, B, budget, ov)

    elif wave:
        n = float(n_req) / replicas  # type: ignore[operator]

        def predict(q: EfficiencyParams) -> float:
            return mult * one_wave_throughput(_with_params(sm0, q), isl, osl, n, budget)

    else:

        def predict(q: EfficiencyParams) -> float:
            sm = _with_params(sm0, q)
            return mult * offline_throughput(sm, isl, osl, B, budget, ov, first, chunked, policy)[0]

    return predict, "", "offline"


#: what a vLLM row's ``framework_version`` or ``notes`` says when its N requests reach the
#: engine together, before its first iteration: vLLM's offline
#: ``benchmarks/benchmark_throughput.py`` (``LLM.generate`` adds every prompt, then steps the
#: engine). A serving client (``vllm bench serve``, ``bench_serving``) at request rate inf
#: sends them at once over HTTP, but the API server admits them one by one (parsing and
#: tokenizing on its CPU) while the engine already steps: not one wave. Other engines are
#: not switched: dstack's "benchmark_throughput.py extended to SGLang" does not say how it
#: drives SGLang, and ``trtllm-bench`` rows are not validated for it yet.
ONE_WAVE_CLIENTS = {"vllm": ("benchmark_throughput",)}
#: whether such rows are predicted (and fitted) as one wave. Off: measured on the bundled
#: data (leave-one-source-out, 2026-12-06, changes/amdrel.md) it fixes dstack's Llama-3.1-405B
#: runs (MI300X 54.5% -> 10.4%) and moves AMD 25.4% -> 23.6%, but vLLM + SGLang goes
#: 20.9% -> 21.9%: the H100 fit it changes predicts the Argonne fp16 static batches 12% lower
#: (12.1% -> 20.4%), because dstack's H100 32k-token runs ran one sequence at a time (time
#: grows linearly with the prompts) where the memory plan holds four. Kept as the record of
#: that test until the memory plan explains those runs.
ONE_WAVE_OFFLINE = False


def _one_wave_client(row: dict) -> bool:
    if not ONE_WAVE_OFFLINE:
        return False
    text = f"{cell(row, 'framework_version')} {cell(row, 'notes')}"
    return any(c in text for c in ONE_WAVE_CLIENTS.get(cell(row, "framework"), ()))


def one_wave_throughput(
    sm: StepModel, isl: float, osl: float, n: float, token_budget: float
) -> float:
    """Output throughput [tok/s] of one wave of ``n`` requests submitted at once, all held by
    the replica together (an offline benchmark's ``--num-prompts n`` at most its batch).

    The engine prefills the ``n`` prompts first, ``k = ceil(n isl / token_budget)``
    iterations of ``n isl / k`` prompt tokens (``n / k`` sequences each, at least one, and
    ``n isl^2 / (2k)`` query-key pairs), then runs ``osl - 1`` decode-only iterations of all
    ``n`` sequences at the mean context ``isl + osl / 2``; the run ends with the wave.
    Output tok/s = ``n osl / (k t_prefill + (osl - 1) t_decode)``, each iteration with the
    scheduler's cost. Unlike the even spread of :func:`offline_throughput` (a steady stream
    of prompts, right for many waves), a decode iteration here holds no prompt tokens, so it
    replays the engine's CUDA graph instead of dispatching eagerly
    (:attr:`~planner.catalog.efficiency.EfficiencyParams.eager_layer_s`): e.g. the dstack
    runs of 4 to 256 prompts of Llama-3.1-405B on 8 GPUs.
    """
    return prefill_first_cycle(sm, isl, osl, n, token_budget)


def closed_loop_predictor(row: dict, cat: Catalog) -> Callable | None:
    """Steady-state throughput predictor of a closed-loop serving row, for the fit; None when
    the row is not one.

    A closed loop of ``c`` clients (mode ``concurrency``, no request rate) keeps ``c``
    sequences in flight per replica once it has started: each finished request is replaced at
    once. That is the steady state of :func:`~planner.serving.steady_state.offline_throughput`
    with at most ``c`` sequences, at the mean input and output lengths (fixed ``isl``/``osl``,
    or the means of the client's random-length rule). The fit uses it; validation still
    simulates the row (ramp-up, the drain and the length spread included). With
    :data:`~planner.benchmarks.finite_run.CLOSED_LOOP_FIT` a throughput row that states its
    prompt count is scaled by its finite run (:func:`_finite_run`), so that the fit reads the
    run's drain as validation does instead of explaining it with lower efficiencies.

    With :data:`CLOSED_LOOP_LATENCY` a TPOT / ITL row of such a run gets the same steady
    state's time per output token, and a TTFT row at most
    :data:`CLOSED_LOOP_TTFT_MAX_CLIENTS` clients per replica its prompt's own iterations
    (:func:`~planner.serving.steady_state.closed_loop_latencies`, in ms): throughput alone
    cannot tell the prompt's time from the decode's.
    """
    metric = str(row.get("metric", ""))
    latency = CLOSED_LOOP_LATENCY and metric in CLOSED_LOOP_LATENCY_METRICS
    if cell(row, "mode") != "concurrency" or not (metric in THROUGHPUT_METRICS or latency):
        return None
    rate = number(row, "request_rate")
    conc = number(row, "concurrency")
    if (rate is not None and rate > 0) or conc is None or conc < 1:
        return None
    isl, osl = number(row, "isl"), number(row, "osl")
    drawn = isl is None or osl is None  # lengths drawn per request by the client's rule
    ds = None
    if drawn:
        from planner.benchmarks.random_lengths import random_dataset_lengths

        ds = random_dataset_lengths(row)
        if ds is None or isinstance(ds, str):
            return None
        isl, osl = ds[0].mean_tokens(), ds[1].mean_tokens()
    if isl <= 0 or osl < 1:
        return None
    setup = _row_setup(row, cat)
    if isinstance(setup, str):
        return None
    lay = setup[7]
    caps = (max(1.0, round(conc / lay.replicas)),)
    if latency and not _latency_row_fits(row, metric, caps[0], drawn):
        return None
    finite = None if latency else _finite_run(row, lay.replicas, caps[0], isl, osl, ds)
    fn, _, _ = _steady_predictor(
        row, cat, setup[:7], isl, osl, caps, closed_loop=True, finite=finite
    )
    return fn


def _finite_run(
    row: dict, replicas: int, clients: float, isl: float, osl: float, ds: tuple | None
) -> Callable[[float, float], float] | None:
    """A closed-loop throughput row's finite-run factor (TTFT, TPOT [s] -> [-]), or None
    (:data:`~planner.benchmarks.finite_run.CLOSED_LOOP_FIT` off, or no prompt count stated).

    The prompt count is the row's ``"N requests"`` (its client's ``--num-prompts``, e.g.
    InferenceX's ``benchmarks/*.sh``: ``--num-prompts $((CONC * 10))``), split over the
    replicas as validation splits it (:func:`planner.benchmarks.serving_rows.simulate_row`:
    ``int(N / replicas)`` requests per replica), with the output lengths validation draws:
    fixed, or the client's rule sampled with validation's seed (``20240601``, the input
    lengths drawn first), or the very lengths the client drew where they are replayed.
    """
    if not finite_run.CLOSED_LOOP_FIT:
        return None
    count = request_count(cell(row, "notes"))
    if not count:
        return None
    n = int(count / replicas)
    if n < 1:
        return None
    if ds is None:
        out = np.full(n, int(osl))
    else:
        rng = np.random.default_rng(20240601)
        ds[0].sample(n, rng)
        out = np.maximum(np.asarray(ds[1].sample(n, rng)), 1)
    return finite_run.closed_loop_factor(max(1, int(round(clients))), out)


def gate_wait_ms(
    gate, sm: StepModel, lat: tuple, isl: float, osl: float, clients: float, budget: float, dp: int
) -> float:
    """Mean wait [ms] an admission gate adds to a closed-loop request's TTFT in the steady
    state of ``clients`` per replica, as validation adds it after the simulation
    (:func:`planner.benchmarks.serving_rows.predict_serving_row`: the gate's window and, with
    ``GATE_BURST``, the prompts it releases together), with the steady state's TTFT, TPOT
    and median ITL ``lat`` [s] in place of the simulated ones."""
    ttft_s, tpot_s, itl_s = lat
    e2e_s = ttft_s + (osl - 1.0) * tpot_s
    lam = clients / e2e_s  # requests per second of one replica (Little's law)
    running = lam * (e2e_s - ttft_s)
    itl = 1000.0 * itl_s
    busy = 1.0 if clients >= 2 else 0.0
    kw = dict(
        decoders=running,
        arrivals_per_iteration_tokens=lam * itl_s * isl,
        max_num_tokens=int(budget / dp),
        dp_ranks=dp,
        arrivals_per_iteration=lam * itl_s,
    )
    mean_w, _ = admission_wait(gate, itl, busy=busy, **kw)
    if GATE_BURST:
        w_it = window_iterations(gate, **kw)
        mean_w += burst_wait(w_it * itl_s, lam, prefill_time(sm, 1, isl), busy)[0]
    return mean_w


#: closed-loop latency metrics the fit sees through the steady state, each the index of its
#: value in :func:`~planner.serving.steady_state.closed_loop_latencies` (TTFT, TPOT, median
#: ITL). A closed loop's requests are alike there, so the mean and the median TPOT (and the
#: mean ITL, a mean over the same gaps) are one number, as the simulator's are at fixed lengths.
CLOSED_LOOP_LATENCY_METRICS = {
    "ttft_ms_mean": 0,
    "ttft_ms_median": 0,
    "tpot_ms_mean": 1,
    "tpot_ms_median": 1,
    "itl_ms_mean": 1,
    "itl_ms_median": 2,
}
#: whether closed-loop TTFT / TPOT / ITL rows enter the fit (through
#: :func:`closed_loop_predictor`); off: only their throughput does. Off: scored
#: leave-one-source-out on the bundled data (2026-12-07, docs/changes/2026-12-07e/latfit.md) serving TTFT
#: goes 21.9% / -10.3% -> 22.5% / -10.5% and TPOT 20.5% -> 20.1%, vLLM + SGLang throughput
#: 14.0% -> 16.9% (target 15%), and in sample the SGLang
#: NVIDIA MoE nodes take the prompt time into an even lower ``comm_eff`` (0.22 -> 0.105)
#: with ``mem_eff`` at its 1.0 bound: not a better split of prompt and decode.
CLOSED_LOOP_LATENCY = False
#: the most clients per replica at which a closed-loop TTFT row is fitted as the prompt's
#: own iterations (no queue). A client sends its next request when its last one ends, so at
#: most ``clients - 1`` other prompts can be ahead of it; at 1-4 clients per replica and an
#: output of hundreds of tokens those prompts are hundreds of iterations apart (one per
#: ``osl / clients`` iterations), so a prompt almost never waits behind another. Above
#: that the ramp-up's burst (every client starts at once) and the length spread queue
#: prompts, which the simulator models and the steady state does not.
CLOSED_LOOP_TTFT_MAX_CLIENTS = 4.0


def _latency_row_fits(row: dict, metric: str, clients: float, drawn: bool) -> bool:
    """Whether a closed-loop latency row is fitted: a TTFT row at most
    :data:`CLOSED_LOOP_TTFT_MAX_CLIENTS` clients per replica (above one only when the
    client draws each request's lengths: clients with fixed lengths that start together end
    together and send their prompts into one iteration, in lock step, as the simulator
    runs them too, not staggered), and none whose first token
    waits on trtllm-serve's PyTorch-backend first-token path (a latency fitted after the
    step fit, :func:`planner.benchmarks.scheduler_waits.first_token_wait`). An admission
    gate's wait is added as validation adds it (:func:`gate_wait_ms`)."""
    if not metric.startswith("ttft"):
        return True
    if clients > CLOSED_LOOP_TTFT_MAX_CLIENTS or (clients > 1 and not drawn):
        return False
    notes = cell(row, "notes")
    return not (
        cell(row, "framework") == "trtllm"
        and trtllm_pytorch_backend(cell(row, "framework_version"), notes)
    )


def _canonical_precision(cat: Catalog, value: Any) -> str:
    """Catalog id of a precision label (aliases such as BF16 map to bf16); '' if empty."""
    text = cell({"v": value}, "v")
    if not text:
        return ""
    try:
        return cat.precision(text).id
    except PlannerError:
        return str(value)
