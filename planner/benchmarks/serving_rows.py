"""Serving rows of the benchmark schema (modes offline, rate, server, concurrency,
static_batch, single_stream) predicted with the simulator; see ``planner/benchmarks/README.md``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np

from planner.benchmarks import prompt_gemm, run_length
from planner.benchmarks.chunk_flags import stated_chunking
from planner.benchmarks.frontend_queue import frontend_service_s, ingest_departures
from planner.benchmarks.random_lengths import random_dataset_lengths
from planner.benchmarks.run_length import loadgen_summary, stated_run, steady_token_rate
from planner.benchmarks.scheduler_waits import (
    admission_gate,
    admission_wait,
    burst_wait,
    first_token_wait,
    loop_gated,
    overlap_wait,
    rearrival_wait,
    window_iterations,
)
from planner.benchmarks.schema import (
    allreduce_latency_s,
    async_scheduling,
    cell,
    engine_settings,
    graph_padding_sizes,
    graphs_off,
    layout,
    memory_fraction_from_notes,
    moe_backend_setting,
    number,
    request_count,
)
from planner.benchmarks.steady_window import (
    MAX_ROW_REQUESTS,
    OVER_CAPACITY_GROWTH,
    queue_growth,
    steady_requests,
    steady_throughput,
    steady_window,
)
from planner.catalog.catalog import Catalog
from planner.catalog.efficiency import EfficiencyParams
from planner.catalog.engine_policies import kv_reserve_fraction
from planner.catalog.latency import APPLY_PREFILL_SCALE, latency_family, prefill_scale
from planner.catalog.records import version_tuple
from planner.engine.phases import prefill_time
from planner.errors import PlannerError
from planner.serving import replica as replica_mod
from planner.serving import run
from planner.serving.replica import build_replica
from planner.workload.presets import mlperf_deepseek_r1_lengths, openorca_lengths
from planner.workload.workload import Requests, make_requests

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
    "tpot_ms_p99": "ms",
    "itl_ms_mean": "ms",
    "itl_ms_median": "ms",
    "e2e_ms_mean": "ms",
    "e2e_ms_median": "ms",
    "e2e_ms_p99": "ms",
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
#: an offline row without a request count is taken as this many times the simulated waves
OFFLINE_LONG_RUN_WAVES = 4
SERVER_REQUESTS = 3000
RATE_SEEDS = 3
SCORED = {"steady": "after warm-up", "loadgen": "all (the run's stated length, as loadgen)"}

#: whether a row on an engine that overlaps the host (``Framework.overlaps_host``) waits one
#: more iteration before its prompt joins (:func:`planner.benchmarks.scheduler_waits.overlap_wait`).
#: ON since 2026-12-07 (tenth pass), together with the release rule of SGLang's dead
#: ``--num-continuous-decode-steps`` gate (``scheduler_waits.CONTINUOUS_DECODE_STEPS_BY_RELEASE``):
#: alone the lag had pushed InferenceX's AMD SGLang rows +12% because that dead gate already
#: charged 1.5 iterations (docs/changes/2026-12-07b/ttft.md); the two together: held-out TTFT
#: 22.9% / -10.5% -> 20.3% / -11.7% (566 rows), band coverage 80.0%
#: (docs/changes/2026-12-07f/sglttft.md); ``scripts/latency_rows.py --overlap-lag`` measures it
OVERLAP_LAG = True
#: whether a closed loop's next request waits for the iteration it lands in
#: (:func:`planner.benchmarks.scheduler_waits.rearrival_wait`; docs/changes/2026-12-08/ttft.md)
CLOSED_LOOP_REARRIVAL = True
#: whether a row whose run sets an admission gate also waits behind the prompts the gate
#: releases with it (:func:`planner.benchmarks.scheduler_waits.burst_wait`);
#: ``scripts/latency_rows.py --gate-burst`` measures it
GATE_BURST = True

_ROW_CACHE: dict[tuple, dict[str, Any] | str] = {}
#: most simulated rows remembered (emptied when full)
_ROW_CACHE_MAX = 20_000


def _too_many(n: float, what: str) -> str:
    return (
        f"{what} needs {n:,.0f} simulated requests per replica, above the "
        f"{MAX_ROW_REQUESTS:,} one row may simulate"
    )


def _dataset_lengths(row: dict[str, Any], model_id: str) -> tuple[Any, Any, str] | str:
    """(input dist, output dist, note) for a variable-length row, or a reason string."""
    rnd = random_dataset_lengths(row)
    if rnd is not None:
        return rnd
    notes = cell(row, "notes").lower()
    if "mlperf deepseek-r1 performance set" in notes:
        if not model_id.startswith(("deepseek-v3", "deepseek-r1")):
            return (
                f"MLPerf DeepSeek-R1 lengths are known in DeepSeek tokens only; model {model_id} "
                "tokenizes differently"
            )
        i, o = mlperf_deepseek_r1_lengths()
        return (
            i,
            o,
            "MLPerf DeepSeek-R1 length distribution (4,388-sample quantiles; answers capped at "
            "20,000 tokens, mean 3,899)",
        )
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
            "MLPerf OpenOrca length distribution (all 24,576 prompts; answers as generated, ~290 tokens)",
        )
    if "mix" in notes or "mixtral" in model_id:
        return (
            "the MLPerf Mixtral-8x7B dataset (OpenOrca + GSM8K + MBXP, 15,000 samples) has no "
            "transcribed length distribution; isl/osl are empty"
        )
    if "sharegpt" in notes:
        return "ShareGPT rows need their filtered length distribution, which no source here gives"
    return "isl/osl are empty and the notes name no dataset with a known length distribution"


#: (input dist, output dist, note) of a variable-length row, or the reason (public name)
dataset_lengths = _dataset_lengths


def continuous_decode_steps(notes: str) -> int:
    """SGLang's ``--num-continuous-decode-steps`` of a run (its notes; 1 when unstated):
    see :mod:`planner.benchmarks.scheduler_waits`, which adds the admission wait."""
    return admission_gate(notes).continuous_decode_steps


#: the first vLLM release whose default engine (V1) runs MLA models with chunked prefill:
#: V0 releases before it force chunked prefill off for them
V0_MLA_UNCHUNKED_BEFORE = (0, 8, 0)
#: V0's token budget floor when chunked prefill is off (``max(max_model_len, 2048)``)
V0_MIN_BATCHED_TOKENS = 2048
_MAX_MODEL_LEN = re.compile(r"--max[-_]model[-_]len[ =](\d+)")


def v0_mla_unchunked_tokens(fw_id: str, version: str, model: Any, notes: str) -> int | None:
    """The token budget [tokens] of a vLLM V0 run of an MLA model, which runs without chunked
    prefill; None for any other run.

    vLLM's V0 engine (releases before 0.8.0) turns chunked prefill off for MLA models (its
    log: "MLA is enabled; forcing chunked prefill and prefix caching to be disabled.", vLLM
    0.7.1 and 0.7.3, quoted in vllm-project/vllm PR #13374; MLA with chunked prefill came
    with PR #12639, "need to do more benchmarking to see if this makes sense to be on by
    default in V0"). Without chunked prefill V0's ``SchedulerConfig`` sets
    ``max_num_batched_tokens = max(max_model_len, 2048)``: a whole prompt joins a step or
    waits, and the prompts of a burst of clients run together in one step. ``max_model_len``
    is the run's ``--max-model-len`` (its notes), else the model's context. V0's scheduler
    then runs prompts first: "Don't schedule decodes if prefills are scheduled"
    (``Scheduler._schedule_default`` in ``vllm/core/scheduler.py``), simulated with
    ``prefill_first`` (:attr:`planner.serving.replica.EngineConfig.prefill_first`).
    """
    if fw_id != "vllm" or not getattr(model, "is_mla", False):
        return None
    v = version_tuple(version)
    if v is None or v >= V0_MLA_UNCHUNKED_BEFORE:
        return None
    mm = _MAX_MODEL_LEN.search(notes or "")
    ctx = int(mm.group(1)) if mm else int(model.max_position_embeddings or 0)
    return max(ctx, V0_MIN_BATCHED_TOKENS)


def row_spec(row: dict[str, Any]) -> dict[str, Any]:
    """Speculative decoding of a row to simulate: the hidden cells ``_spec_method``,
    ``_spec_tokens``, ``_acceptance_length`` (set by
    :mod:`planner.benchmarks.speculative_rows`; empty: off)."""
    method = row.get("_spec_method") or None
    if method is None:
        return {}
    return {
        "spec_method": method,
        "spec_tokens": row.get("_spec_tokens"),
        "acceptance_length": row.get("_acceptance_length"),
        "spec_graph_max_seqs": row.get("_spec_graph_max_seqs"),
    }


def predict_serving_row(
    row: dict[str, Any],
    catalog: Catalog,
    params: EfficiencyParams,
    prefill_scale: float | None = None,
    first_token_s: float | None = None,
) -> tuple[float | None, str]:
    """Predict one serving row of the benchmark schema with the simulator.

    Modes: ``offline`` (all requests queued at t = 0), ``rate`` / ``server`` /
    ``interactive`` (open-loop Poisson at ``request_rate``), ``concurrency`` (closed loop),
    ``static_batch`` / ``single_stream`` (one static batch). Metrics: see
    :data:`SERVING_METRICS`. A multi-GPU row is split into ``n_gpus / (tp * pp)``
    replicas sharing the load evenly; system totals add them up. ``prefill_scale``: the
    simulator's prefill scale (:mod:`planner.catalog.latency`; None: the bundled value of
    the row's engine and model family). ``first_token_s``: latency of TensorRT-LLM's
    PyTorch-backend first-token path outside the engine loop [s], added to the TTFT and E2E
    of the rows that run it (:func:`planner.benchmarks.scheduler_waits.first_token_wait`);
    None: none.

    Returns
    -------
    (value, reason)
        ``value`` in the row's unit and an empty reason, or None with the reason saying
        what is missing. :func:`serving_row_details` gives every metric of the row's
        simulation and a note on how it was run (request count, length distribution).
    """
    metric = cell(row, "metric")
    mode = cell(row, "mode")
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
        out = _serving_row_result(row, catalog, params, prefill_scale, first_token_s)
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
    row: dict[str, Any],
    catalog: Catalog,
    params: EfficiencyParams,
    prefill_scale: float | None = None,
    first_token_s: float | None = None,
) -> dict[str, Any]:
    """Every metric of the simulation behind a serving row, plus ``note`` (how it was run)
    or ``reason`` (why it cannot be); arguments as :func:`predict_serving_row`."""
    try:
        out = _serving_row_result(row, catalog, params, prefill_scale, first_token_s)
    except PlannerError as e:
        return {"reason": str(e)}
    if isinstance(out, str):
        return {"reason": out}
    d = {k: v for k, v in out.items() if not k.startswith("_")}
    d["note"] = out["_note"]
    d["over_capacity"] = bool(out.get("_over_capacity", False))
    d["queue_growth"] = out.get("_queue_growth", float("nan"))
    return d


def _serving_row_result(
    row: dict[str, Any],
    cat: Catalog,
    params: EfficiencyParams,
    scale: float | None = None,
    first_token_s: float | None = None,
) -> dict[str, Any] | str:
    mode = cell(row, "mode")
    hw = cell(row, "hardware")
    model_key = cell(row, "model")
    prec = cell(row, "precision")
    fw_id = cell(row, "framework")
    if not hw or not model_key:
        return "hardware or model is empty"
    if not prec:
        return "precision is empty (the source does not say), so it cannot be modelled"
    if not fw_id:
        return "framework is empty, so the scheduler cannot be modelled"
    try:
        lay = layout(row)
    except PlannerError as e:
        return str(e)
    tp, pp, replicas = lay.tp, lay.pp, lay.replicas
    notes = cell(row, "notes")
    try:
        settings = engine_settings(notes)
    except PlannerError as e:
        return str(e)
    kv = cell(row, "kv_precision") or settings.kv_cache_dtype
    isl, osl = number(row, "isl"), number(row, "osl")
    batch = number(row, "batch")
    conc = number(row, "concurrency")
    rate = number(row, "request_rate")
    count = request_count(notes)
    util = memory_fraction_from_notes(notes)
    m = cat.model_ref(model_key, cell(row, "_dir") or None)
    if scale is None:
        scale = prefill_scale(fw_id, latency_family(m)) if APPLY_PREFILL_SCALE else 1.0
    ft_s = first_token_wait(fw_id, cell(row, "framework_version"), notes, first_token_s)
    kv_res = kv_reserve_fraction(fw_id, cell(row, "source"))  # a harness's own policy
    fe_s = frontend_service_s(fw_id, f"{cell(row, 'framework_version')} {notes}")  # OFF: None
    lat = allreduce_latency_s(row)  # the launch's all-reduce path (data/allreduce.yaml)
    if lat is not None:
        params = params.with_(comm_latency_s=lat)
    # chunked prefill stated on (or trtllm-bench's default): kept where the engine's own
    # default is off (TensorRT-LLM); a stated off is not applied here (mlperf_latency's
    # stated_chunked what-if)
    chunk_on = stated_chunking(f"{notes}; {cell(row, 'framework_version')}") is True
    key = (
        (GATE_BURST, prompt_gemm.PROMPT_GEMM_RATE and prompt_gemm.deepgemm_off(notes)),
        chunk_on,
        replica_mod.CHUNKED_PREFILL_ENGINE_DEFAULT,
        run_length.APPLY_STATED_RUN,
        ft_s,
        kv_res,
        scale,
        admission_gate(notes, cell(row, "framework_version")),
        fe_s,
        hw,
        model_key,
        prec,
        kv,
        fw_id,
        cell(row, "framework_version"),
        cell(row, "as_of"),
        int(tp),
        int(pp),
        lay.layout,
        replicas,
        mode,
        isl,
        osl,
        batch,
        conc,
        rate,
        count,
        util,
        settings,
        notes if isl is None else "",
        params,
        tuple(row_spec(row).values()),
        graph_padding_sizes(notes),
        graphs_off(notes),
        async_scheduling(notes, fw_id),
        moe_backend_setting(notes),
    )
    if key in _ROW_CACHE:
        return _ROW_CACHE[key]
    # a tuned run's own settings (notes tags), else the defaults its engine release picks on
    # this GPU (vLLM V1: 1024 / 8192 on >= 70 GiB GPUs other than A100s)
    fw_rec = cat.framework(fw_id)
    version = cell(row, "framework_version")
    seqs0, btok0 = fw_rec.scheduler_defaults(cat.gpu(hw), version, cell(row, "as_of"))
    v0_btok = v0_mla_unchunked_tokens(fw_id, version, m, notes)
    if v0_btok is not None:
        btok0 = v0_btok
    if kv is not None and kv not in {k.id for k in cat.kv_precisions}:
        kv = None
    rep = build_replica(
        m,
        hw,
        prec,
        fw_id,
        tp=int(tp),
        pp=int(pp),
        layout=None if lay.plain else lay.layout,
        kv_precision=kv,
        params=params,
        catalog=cat,
        memory_utilization=util if util is not None else fw_rec.memory_utilization_default(version),
        max_num_seqs=settings.max_num_seqs or seqs0,
        max_num_batched_tokens=settings.max_num_batched_tokens or btok0,
        chunked_prefill=False if v0_btok is not None else (True if chunk_on else None),
        prefill_first=v0_btok is not None,
        prefill_scale=scale,
        graph_batch_sizes=graph_padding_sizes(notes),  # decode steps padded (adp.graph_padded)
        graphs_off=graphs_off(notes),  # NVIDIA's MLPerf harness: every step eager
        moe_backend=moe_backend_setting(notes),  # a named backend's surplus (moe_backend)
        kv_reserve_fraction=kv_res,
        first_token_s=0.0,  # the row's first-token path is added below (first_token_wait)
        # its release's rule; an MLPerf harness runs its own loop (NVIDIA's the TensorRT
        # engine flow, whose version cell names TensorRT's release): not overlapped
        host_overlap="mlperf" not in version.lower()
        and fw_rec.overlaps_host(
            version, cell(row, "as_of"), speculative=bool(row_spec(row)), pipeline=int(pp) > 1
        )
        if async_scheduling(notes, fw_id) is None  # a vLLM launch's flag (< 0.14: opt-in)
        else bool(async_scheduling(notes, fw_id)) and int(pp) == 1,
        **row_spec(row),
    )
    rep = loop_gated(rep, notes, fw_id)  # the attention-DP balance gate in the loop (off)
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
        res = run(rep.with_engine(max_num_seqs=max(b, 1)), reqs, static_batching=True)
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
        if count is None:  # a run of unstated length (MLPerf: >= 10 min): long enough that
            # the drain of the longest answers is a small part of it; steady rate extrapolated
            per_rep = max(per_rep, int(OFFLINE_LONG_RUN_WAVES * OFFLINE_WAVES * b_max))
        n = int(min(per_rep, max(OFFLINE_MIN_REQUESTS, OFFLINE_WAVES * b_max)))
        reqs = requests(n, None)
        if fe_s:  # the API server serves each request before the engine sees it (OFF)
            sent = reqs.arrival_s
            reqs = dataclasses.replace(reqs, arrival_s=ingest_departures(sent, fe_s))
        res = run(rep, reqs)
        if fe_s:  # TTFT and the run's length count from the client's send
            res = dataclasses.replace(res, arrival_s=sent.copy())
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
            if n > MAX_ROW_REQUESTS:
                return _too_many(n, f"{count:,.0f} requests over {replicas} replica(s)")
            seeds = RATE_SEEDS
            mask_fn = None
        else:  # the run's stated length, scored as loadgen does (run_length), else steady
            stated = stated_run(notes)
            n = min(MAX_ROW_REQUESTS, math.ceil(stated / replicas)) if stated else SERVER_REQUESTS
            seeds = 1
            mask_fn = "loadgen" if stated else "steady"
        acc: list[dict[str, Any]] = []
        for _ in range(seeds):
            reqs = requests(n, r)
            res = run(rep, reqs)
            if mask_fn == "loadgen":
                s, lo_t, hi_t = loadgen_summary(res)
            elif mask_fn:
                # long answers (MLPerf DeepSeek-R1: ~3,900 tokens, minutes per request) fill
                # the replica only after a request lifetime: simulate until the arrivals
                # span enough of them (steady_requests), score after the longest one
                n2 = steady_requests(res, n)
                if n2 > n:
                    n = n2
                    res = run(rep, requests(n, r))
                lo_t, hi_t, win = steady_window(res)
                s = res.summary(warmup_frac=0.2, cooldown_frac=0.1) if win is None else (
                    res.summary(mask=win)
                )  # fmt: skip
                s["throughput_rps"], s["output_tok_s"], s["total_tok_s"] = steady_throughput(
                    res, lo_t, hi_t
                )
                s["output_tok_s"] = steady_token_rate(res, lo_t, hi_t)
            else:
                s = res.summary()
                srt = np.sort(res.arrival_s)
                lo_t, hi_t = float(srt[int(0.2 * (len(srt) - 1))]), float(srt[-1])
            s["queue_growth"] = queue_growth(res, lo_t, hi_t)
            acc.append(s)
        s = {
            k: float(np.mean([a[k] for a in acc]))
            for k in acc[0]
            if isinstance(acc[0][k], (int, float))
        }
        out = _row_metrics(s, replicas, rep.num_gpus)
        out["_queue_growth"] = s["queue_growth"]
        out["_over_capacity"] = s["queue_growth"] > OVER_CAPACITY_GROWTH
        out["_note"] = (
            f"Poisson at {r:.4g} req/s per replica x {replicas}, {n} requests"
            + (f" x {seeds} seeds" if seeds > 1 else f", scored {SCORED[mask_fn]}")
            + f"; {note_len}"
            + (
                f"; above the predicted capacity (queue grows by {s['queue_growth']:.0%} of"
                " the arrivals)"
                if out["_over_capacity"]
                else ""
            )
        )
    elif mode == "concurrency":
        if not conc:
            return "concurrency row without a concurrency"
        c = max(1, int(round(conc / replicas)))
        n = int(count / replicas) if count else max(8 * c, 500)
        if n > MAX_ROW_REQUESTS or c > MAX_ROW_REQUESTS:
            return _too_many(max(n, c), f"concurrency {conc:,.0f} over {replicas} replica(s)")
        res = run(rep, requests(n, None), c, static_batching=False)
        s = res.summary()
        out = _row_metrics(s, replicas, rep.num_gpus)
        out["_note"] = (
            f"closed loop, {c} clients per replica x {replicas}, {n} requests; {note_len}"
        )
    else:  # pragma: no cover
        return f"mode {mode} not supported"
    gate = admission_gate(notes, cell(row, "framework_version"))
    # an overlap scheduler (overlap_wait), a closed loop's re-arrival (rearrival_wait), where
    # no fitted first-token path holds them already
    no_path = not first_token_wait(fw_id, cell(row, "framework_version"), notes, 1.0)
    lagged = rep.engine.host_overlap and OVERLAP_LAG and no_path
    rearr = mode == "concurrency" and CLOSED_LOOP_REARRIVAL and no_path
    waits = not gate.off or lagged or rearr
    if waits and mode not in ("static_batch", "single_stream", "offline"):
        # requests per second and running decoders of one replica (Little's law), the
        # prompt tokens arriving per iteration: what TensorRT-LLM's batch wait counts
        lam = out["req_s"] / replicas
        i_mean = float(isl) if ilen is None else float(ilen.mean_tokens())
        itl = out["itl_ms_median"]
        running = lam * max(out["e2e_ms_mean"] - out["ttft_ms_mean"], 0.0) / 1000.0
        if mode == "concurrency":  # the other clients' requests decode when one arrives
            busy = 1.0 if conc / replicas >= 2 else 0.0
        else:
            busy = 1.0 - math.exp(-running)
        mean_w, p99_w = admission_wait(
            gate,
            itl,
            busy=busy,
            decoders=running,
            arrivals_per_iteration_tokens=lam * itl / 1000.0 * i_mean,
            max_num_tokens=rep.engine.max_num_batched_tokens,
            dp_ranks=lay.layout.attention_dp,
            arrivals_per_iteration=lam * itl / 1000.0,
        )
        lag_mean, lag_p99 = overlap_wait(itl, busy) if lagged else (0.0, 0.0)
        re_mean, re_p99 = rearrival_wait(itl, busy) if rearr else (0.0, 0.0)
        burst = (0.0, 0.0)
        if GATE_BURST and not gate.off:  # the window's arrivals queue behind each other
            w_s = window_iterations(
                gate,
                decoders=running,
                arrivals_per_iteration_tokens=lam * itl / 1000.0 * i_mean,
                max_num_tokens=rep.engine.max_num_batched_tokens,
                dp_ranks=lay.layout.attention_dp,
                arrivals_per_iteration=lam * itl / 1000.0,
            )
            # the replica's prefill of one prompt: the work of the prompts ahead, replica-wide
            # (attention-DP spreads them over ranks, each rank's prompt on its own attention)
            burst = burst_wait(w_s * itl / 1e3, lam, prefill_time(rep.sm, 1, i_mean), busy)
        for w_mean, w_p99, text in (
            (mean_w, p99_w, f"admission gate ({gate.describe()})"),
            (*burst, "prompts the gate releases together"),
            (lag_mean, lag_p99, "overlap scheduler"),
            (re_mean, re_p99, "closed-loop re-arrival"),
        ):
            if w_mean > 0:
                for m_ in ("ttft_ms_mean", "ttft_ms_median", "e2e_ms_mean", "e2e_ms_median"):
                    out[m_] += w_mean
                out["ttft_ms_p99"] += w_p99
                out["e2e_ms_p99"] += w_p99
                out["_note"] += f"; {text}: TTFT + {w_mean:.3g} ms"
    if mode not in ("static_batch", "single_stream"):  # a static batch sets its own size
        eng = rep.engine
        out["_note"] += "; " + settings.describe(
            eng.max_num_seqs, eng.max_num_batched_tokens, eng.framework or "engine"
        )
    if v0_btok is not None:
        out["_note"] += "; vLLM V0 with MLA: chunked prefill off"
    if scale != 1.0:
        out["_note"] += f"; prefill scale {scale:.3g}"
    if ft_s > 0 and mode not in ("static_batch", "single_stream"):
        # trtllm-serve's first-token path (PyTorch backend): outside the engine loop
        for m_ in ("ttft_ms_mean", "ttft_ms_median", "ttft_ms_p99"):
            out[m_] += ft_s * 1000.0
        for m_ in ("e2e_ms_mean", "e2e_ms_median", "e2e_ms_p99"):
            out[m_] += ft_s * 1000.0
        out["_note"] += f"; first-token path + {ft_s * 1e3:.3g} ms (trtllm-serve, PyTorch backend)"
    out = prompt_gemm.with_prompt_gemm(out, rep.sm, fw_id, notes, mode, isl, ilen)  # OFF: out
    if rep.params_source != "prior":
        out["_note"] += f"; params {rep.params_source}"
    if len(_ROW_CACHE) >= _ROW_CACHE_MAX:  # a file of a million distinct rows: memory stays flat
        _ROW_CACHE.clear()
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
        "tpot_ms_p99": s["tpot_p99_s"] * ms,
        "itl_ms_mean": s["itl_mean_s"] * ms,
        "itl_ms_median": s["itl_p50_s"] * ms,
        "e2e_ms_mean": s["e2e_mean_s"] * ms,
        "e2e_ms_median": s["e2e_p50_s"] * ms,
        "e2e_ms_p99": s["e2e_p99_s"] * ms,
        "decode_tok_s_single_stream": 1.0 / s["tpot_mean_s"]
        if s.get("tpot_mean_s")
        else float("nan"),
        "prefill_tok_s": float("nan"),
    }
