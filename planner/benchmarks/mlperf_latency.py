"""MLPerf Llama-2-70B Server and Interactive: the per-GPU throughput the planner predicts
under the scenario's latency constraints, against the submitted results (issue 32).

A Server / Interactive result is the largest Poisson rate (``target_qps``) at which the
system met the scenario's P99 TTFT and P99 TPOT limits, times the mean answer length. The
planner's answer to the same question is :func:`planner.serving.capacity.max_rate` of one
replica under the same two limits, with the OpenOrca lengths, times the replicas of the
system; the replica's arrivals are its share of the system's one Poisson stream, dealt over
the engines as the harnesses do (:func:`engine_traffic`). Constraints (MLPerf Inference rules for llama2-70b, as transcribed in the rows'
notes): Server TTFT P99 <= 2 s and TPOT P99 <= 200 ms; Interactive TTFT P99 <= 450 ms and
TPOT P99 <= 40 ms. TPOT is each request's (E2E - TTFT) / (tokens - 1) and TTFT runs from the
query's arrival, as loadgen reports them (``SimResult.tpot_s``, ``ttft_s``). The answer is
at most ``MAX_UTILIZATION`` x the simulated Offline throughput of the same deployment
(:func:`offline_per_gpu`): a Poisson stream never beats Offline on the same engine.

The predictions are out of sample: :func:`tight_tpot_records` refuses a profile fitted on
a row's own source (:func:`fit_sources`). :func:`tight_tpot_rounds` compares the GPUs within
one round (one rules text, one software season); :func:`at_measured_rate` says which limit
the simulation is near at the rate a submission ran.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from planner.benchmarks.chunk_flags import stated_chunking
from planner.benchmarks.harness_attention import kv_mem_eff, record_for_row
from planner.benchmarks.harness_gemm import gemm_params, table_for_row
from planner.benchmarks.layouts import assumed_layout, needs_layout
from planner.benchmarks.mlperf_fit_domain import fit_domain_note
from planner.benchmarks.schema import (
    cell,
    engine_settings,
    graphs_off,
    memory_fraction_from_notes,
    number,
    row_kv_precision,
)
from planner.benchmarks.serving_rows import predict_serving_row
from planner.catalog.catalog import Catalog
from planner.catalog.engine_policies import kv_reserve_fraction
from planner.catalog.latency import APPLY_PREFILL_SCALE, latency_family, prefill_scale
from planner.catalog.profile import Profile, resolve_params
from planner.errors import PlannerError
from planner.serving.capacity import max_rate
from planner.serving.replica import build_replica
from planner.serving.simulate import simulate
from planner.workload.presets import openorca_lengths
from planner.workload.slo import SLO, SloTarget
from planner.workload.traffic import Traffic
from planner.workload.workload import Workload

#: the largest fraction of the saturation rate (and of the Offline throughput) a Server /
#: Interactive answer may reach: :func:`planner.serving.capacity.max_rate`'s default
#: ``max_utilization`` (a queue closer to saturation has no stable percentiles)
MAX_UTILIZATION = 0.95
#: (TTFT P99, TPOT P99) limits [s] per scenario
CONSTRAINTS_S = {"server": (2.0, 0.2), "interactive": (0.45, 0.04)}
GPUS = (
    "nvidia-h100-sxm",
    "nvidia-h200-sxm",
    "nvidia-b200",
    "amd-mi300x",
    "amd-mi325x",
    "amd-mi355x",
)


#: a row's stated chunked-prefill switch, as the MLPerf rows' notes transcribe the engine
#: config (``enable_chunked_prefill: True / False`` of AMD's harness YAML)
_CHUNKED = re.compile(r"\b(no chunked prefill|chunked prefill (?:on|off))\b", re.IGNORECASE)


def stated_chunked_prefill(notes: str) -> bool | None:
    """The chunked-prefill switch a row's notes state ("chunked prefill on" / "off" / "no
    chunked prefill", the transcription of the engine config's ``enable_chunked_prefill``),
    or None when they state none (the engine's default then applies)."""
    m = _CHUNKED.search(notes or "")
    return None if m is None else m.group(1).lower().endswith(" on")


#: NVIDIA's harness builds the KV cache in the dtype its quantized checkpoint has: the
#: quantizer passes the config's ``trtllm_checkpoint_flags`` to TensorRT-LLM's
#: ``examples/quantization/quantize.py`` (``closed/NVIDIA/code/llmlib/builder.py``
#: ``TRTLLMQuantizerOp.get_cli_flags``, MLPerf v5.1), whose ``--kv_cache_dtype`` defaults to
#: None (no KV quantization; NVIDIA/TensorRT-LLM @ c8c6df08), over ``--dtype float16``
#: (``QuantizerConfig.dtype_in`` FP16). A config that sets no ``kv_cache_dtype`` (B200 v5.1
#: Interactive; its Server file and the H200 Interactive files set fp8) therefore runs an
#: fp16 KV cache. True: such a row (notes "sets no KV dtype") is simulated with a 16-bit KV
#: cache (bf16, the 16-bit KV option data/precisions.yaml gives fp4; 2 bytes an element as
#: fp16); False: the rows' kv_precision cell (fp8, an assumption). docs/changes/2026-12-09/mlpint.md.
UNSTATED_KV_CHECKPOINT_DTYPE = True
#: a row whose harness states its decode-attention kernel, and whose record
#: (``data/mlperf_harness_attention.yaml``) times that kernel on the row's GPU, takes the
#: record's KV streaming rate as ``kv_mem_eff`` (:mod:`planner.benchmarks.harness_attention`).
#: Off: the MI355X v6.0 rows' scores with it are in docs/changes/2026-12-10/mlpint.md
HARNESS_ATTENTION = False
_NO_KV_DTYPE = re.compile(r"\bsets no KV dtype\b")


def harness_kv_precision(row: dict[str, Any]) -> str | None:
    """The KV precision an MLPerf Server / Interactive row runs: 16-bit for a TensorRT-LLM
    row whose engine config sets no KV dtype (:data:`UNSTATED_KV_CHECKPOINT_DTYPE`), else
    the row's own (:func:`planner.benchmarks.schema.row_kv_precision`)."""
    if (
        UNSTATED_KV_CHECKPOINT_DTYPE
        and cell(row, "framework") == "trtllm"
        and _NO_KV_DTYPE.search(cell(row, "notes") or "")
    ):
        return "bf16"  # fp16 in the checkpoint; the same bytes
    return row_kv_precision(row)


def engine_traffic(engines: float, poisson_per_engine: bool = False) -> Traffic:
    """The arrivals one engine of an MLPerf system sees, at a unit rate: loadgen issues one
    Poisson stream for the whole system and the harness deals it over the engines.
    NVIDIA's llmlib harness deals Interactive queries round robin and Server queries to the
    engine with the fewest pending samples (closed/NVIDIA/code/llmlib/config.py
    ``traffic_distribution_policy``, factory.py ``_create_scheduler``, MLPerf v5.1); AMD's
    harness to the shortest queue weighted by tokens (``schedule_algo:
    shortest_queue_with_tokens`` of its harness YAMLs). Round robin of a Poisson stream over
    k engines gives each a renewal stream of Erlang-k gaps (gamma, CV 1/sqrt(k)); a
    least-loaded dispatch is smoother still, so round robin is the cautious reading of both.

    ``poisson_per_engine``: each engine its own Poisson stream (the planner's reading before
    2026-12-07), a what-if for comparison."""
    if poisson_per_engine or engines < 2:
        return Traffic(mean_rps=1.0)
    return Traffic(mean_rps=1.0, arrival="gamma", cv=1.0 / math.sqrt(engines))


def mlperf_latency_rows(df, gpus=GPUS):
    """The MLPerf Llama-2-70B Server / Interactive output-throughput rows of ``gpus``."""
    return df[
        df["source"].astype(str).str.startswith("MLPerf Inference")
        & (df["model"] == "llama-2-70b")
        & df["mode"].isin(list(CONSTRAINTS_S))
        & (df["metric"] == "output_tok_s_total")
        & df["hardware"].isin(list(gpus))
    ]


def scenario_replica(
    row: dict[str, Any],
    catalog: Catalog,
    profile: Profile | None,
    stated_chunked: bool = False,
    harness_gemm: bool = False,
    poisson_per_engine: bool = False,
    gemm_speed: float = 1.0,
):
    """(replica, workload, params, provenance, row with its layout) of an MLPerf Server /
    Interactive row: the row's GPU, engine, precision, KV precision and stated engine tags
    (max_num_seqs, max_num_batched_tokens, memory fraction; the engine's defaults for the
    rest), its layout (assumed when unstated, :func:`assumed_layout`), the parameters of
    the profile's nearest node, and the OpenOrca lengths at a unit rate.

    ``stated_chunked``: also take the row's stated chunked-prefill switch
    (:func:`stated_chunked_prefill`; off = vLLM V0's prompt-first steps). Off by default: on
    the bundled profile it moves AMD's V0 rows 20-40% low (docs/changes/2026-12-07b/mlperf.md), because
    the CDNA3 fit's compute rate is below the one AMD states for its tuned MLPerf harness.

    ``harness_gemm``: a row whose engine config names a hipBLASLt tuning file, or whose
    harness image patches in AITER GEMM tuning lines (AMD's v6.0 MI355X rows)
    (:func:`planner.benchmarks.harness_gemm.table_for_row`) takes the GEMM terms that
    reproduce the file's kernel timings (``compute_eff``, ``compute_half_tokens``, and
    ``mem_eff`` where the file times a weight read) in place of the profile's. Off by
    default: alone it moves MI325X Interactive from -51% to +36% and Server from -6% to +23%
    (changes/s8-mlperfint.md): the profile's other terms were fitted with its slower GEMMs.

    The workload's arrivals are those one engine sees when the harness deals the system's
    Poisson stream over its engines (:func:`engine_traffic`; ``poisson_per_engine``: each
    engine its own Poisson stream, a what-if).

    ``gemm_speed``: the GEMM rate (``compute_eff``) times this factor, the harness's speed
    read off an earlier round's Offline runs (:func:`prior_round_gemm_speed`; 1: none)."""
    gpu = catalog.gpu(cell(row, "hardware")).id
    fw, prec = cell(row, "framework"), cell(row, "precision")
    params, prov = resolve_params(gpu, fw, prec, catalog=catalog, profile=profile, family="dense")
    if gemm_speed != 1.0:
        params = params.model_copy(update={"compute_eff": params.compute_eff * gemm_speed})
        prov += f"; GEMM rate x {gemm_speed:.3f} (the harness's earlier-round Offline runs)"
    table = table_for_row(cell(row, "id")) if harness_gemm else None
    if table is not None and table.gpu == gpu and table.precision == prec:
        g = gemm_params(table, catalog.gpu(gpu))
        params = params.model_copy(update={k: v for k, v in g.items() if k != "rms_log_err"})
        prov += (
            f"; GEMM terms of the harness's hipBLASLt table {table.name} (compute_eff "
            f"{g['compute_eff']:.3f}, compute_half_tokens {g['compute_half_tokens']:.0f})"
        )
    rec = record_for_row(cell(row, "id")) if HARNESS_ATTENTION else None
    if rec is not None and rec.gpu == gpu:
        eff = kv_mem_eff(rec, catalog.gpu(gpu))
        params = params.model_copy(update={"kv_mem_eff": eff})
        prov += f"; decode attention at {rec.name}'s published rate (kv_mem_eff {eff:.3f})"
    if needs_layout(row):
        row, note = assumed_layout(row, catalog, params)
        prov += "; " + note.split(" (")[0]
    tp = int(number(row, "tp") or 1)
    pp = int(number(row, "pp") or 1)  # pipelined stages (planner.engine.pipeline)
    settings = engine_settings(cell(row, "notes"))
    fw_rec = catalog.framework(fw)
    seqs0, btok0 = fw_rec.scheduler_defaults(catalog.gpu(gpu), cell(row, "framework_version"))
    util = memory_fraction_from_notes(cell(row, "notes"))
    chunked = stated_chunked_prefill(cell(row, "notes")) if stated_chunked else None
    if chunked is None and stated_chunking(cell(row, "notes")) is True:
        chunked = True  # stated on ("chunked context"): kept where the engine's default is off
    m = catalog.model_ref("llama-2-70b")
    rep = build_replica(
        m,
        gpu,
        prec,
        fw,
        tp=tp,
        pp=pp,
        kv_precision=harness_kv_precision(row),
        params=params,
        catalog=catalog,
        memory_utilization=util if util is not None else fw_rec.memory_utilization_default(None),
        max_num_seqs=settings.max_num_seqs or seqs0,
        max_num_batched_tokens=settings.max_num_batched_tokens or btok0,
        # the stated switch; off: vLLM V0's scheduler runs a step of prompts and no decoders
        # ("Don't schedule decodes if prefills are scheduled", Scheduler._schedule_default)
        chunked_prefill=chunked,
        prefill_first=chunked is False,
        prefill_scale=prefill_scale(fw, latency_family(m)) if APPLY_PREFILL_SCALE else 1.0,
        first_token_s=0.0,  # the MLPerf harness: its front end is not trtllm-serve
        # the MLPerf harnesses run their own loops: NVIDIA's the TensorRT engine flow (its
        # version cell names TensorRT, not TensorRT-LLM), AMD's vLLM V0 (VLLM_USE_V1=0) or a
        # release not stated; none is read as overlapping host and GPU (changes/schedbound.md)
        host_overlap=False,
        graphs_off=graphs_off(cell(row, "notes")),  # NVIDIA's harness: no CUDA graphs
        # NVIDIA's harness: batch_scheduler_policy max_util (data/engine_policies.yaml)
        kv_reserve_fraction=kv_reserve_fraction(fw, cell(row, "source")),
    )
    i, o = openorca_lengths()
    engines = (number(row, "n_gpus") or rep.num_gpus) / rep.num_gpus
    traffic = engine_traffic(engines, poisson_per_engine)
    wl = Workload(traffic=traffic, input_tokens=i, output_tokens=o)
    arrivals = (
        "Poisson arrivals per engine"
        if traffic.arrival == "poisson"
        else f"the system's Poisson stream dealt round robin over {engines:g} engines"
    )
    layout = f"tp={tp}" + (f" pp={pp}" if pp > 1 else "")
    return rep, wl, params, f"{prov}; {layout}; {arrivals}", row


def at_measured_rate(
    row: dict[str, Any],
    catalog: Catalog,
    profile: Profile | None,
    n_requests: int = 3000,
    stated_chunked: bool = False,
    harness_gemm: bool = False,
    poisson_per_engine: bool = False,
    gemm_speed: float = 1.0,
) -> dict[str, Any]:
    """What the simulator says at the rate the submission ran: the row's per-replica
    request rate (its ``request_rate``, loadgen's target_qps for the system, else its
    tokens/s over the OpenOrca mean answer), and the simulated P99 TTFT [s], P99 TPOT [s],
    mean batch and KV use of one replica at that rate (its share of the system's stream,
    :func:`engine_traffic`; first 30% and last 10% of
    the requests dropped). Which limit is close says what the prediction misses: neither
    close = the saturation throughput; TPOT far below its limit = a step time too short."""
    rep, wl, _, prov, row = scenario_replica(
        row, catalog, profile, stated_chunked, harness_gemm, poisson_per_engine, gemm_speed
    )
    n = number(row, "n_gpus") or 1
    replicas = n / rep.num_gpus
    qps = number(row, "request_rate")
    if not qps:
        qps = float(cell(row, "value")) / wl.output_tokens.mean_tokens()
    rate = qps / replicas
    res = simulate(rep, wl, rng=np.random.default_rng(0), n_requests=n_requests, rate_rps=rate)
    s = res.summary(warmup_frac=0.3, cooldown_frac=0.1)
    return {
        "rate_rps_per_replica": rate,
        "ttft_p99_s": s["ttft_p99_s"],
        "tpot_p99_s": s["tpot_p99_s"],
        "batch_mean": s["batch_size_mean"],
        "kv_util_mean": s["kv_util_mean"],
        "provenance": prov,
    }


def predict_per_gpu(
    row: dict[str, Any],
    catalog: Catalog,
    profile: Profile | None,
    n_requests: int = 1200,
    stated_chunked: bool = False,
    harness_gemm: bool = False,
    poisson_per_engine: bool = False,
    gemm_speed: float = 1.0,
) -> tuple[float, str]:
    """(predicted output tok/s per GPU at the scenario's constraints, provenance): the
    largest Poisson rate whose simulated P99 TTFT and P99 TPOT meet the scenario's limits
    (:func:`planner.serving.capacity.max_rate`), at most ``MAX_UTILIZATION`` x the
    simulated Offline throughput of the same deployment (:func:`offline_per_gpu`)."""
    ttft_s, tpot_s = CONSTRAINTS_S[cell(row, "mode")]
    rep, wl, params, prov, row = scenario_replica(
        row, catalog, profile, stated_chunked, harness_gemm, poisson_per_engine, gemm_speed
    )
    o = wl.output_tokens
    slo = SLO(
        ttft=SloTarget(max_s=ttft_s, percentile=99), tpot=SloTarget(max_s=tpot_s, percentile=99)
    )
    res = max_rate(
        rep,
        wl,
        slo,
        n_requests=n_requests,
        rng=np.random.default_rng(0),
        max_utilization=MAX_UTILIZATION,
    )
    per_gpu = res.max_rate_rps * o.mean_tokens() / rep.num_gpus
    limited = f"limited by {res.limited_by}"
    offline = offline_per_gpu(row, catalog, params)
    if offline is not None and per_gpu > MAX_UTILIZATION * offline:
        per_gpu = MAX_UTILIZATION * offline
        limited = (
            f"limited by the Offline throughput ({MAX_UTILIZATION:.0%} of {offline:,.0f} tok/s "
            f"per GPU simulated on the OpenOrca set; the search's bound was {res.limited_by})"
        )
    return per_gpu, f"{prov}; {limited}"


def offline_per_gpu(row: dict[str, Any], catalog: Catalog, params) -> float | None:
    """Output tok/s per GPU of the row's deployment in MLPerf's Offline scenario (every
    request queued at t = 0; :func:`planner.benchmarks.serving_rows.predict_serving_row`,
    the prediction of the Offline ordering check), or None when it cannot be simulated.

    A Server or Interactive result can never exceed the Offline throughput of the same
    deployment: Offline keeps the engine at its largest batch, a Poisson stream cannot.
    The MLPerf rounds agree: Server / Offline per round and GPU is 0.88-1.00 (0.88 H100 and
    MI300X v4.1, 0.95 H200 v4.1 and v5.0, 0.99 H100 v5.0, 0.95-1.00 B200, 0.91-0.98 the
    AMD GPUs of v5.x; changes/mlserver.md). The search's own bound, ``max_utilization`` x
    the analytic saturation rate of the mean lengths (:func:`planner.serving.steady_state`),
    can lie above it when the KV cache binds: the length distribution fills it unevenly."""
    off = dict(row, mode="offline", request_rate="inf", metric="output_tok_s_total")
    value, _ = predict_serving_row(off, catalog, params)
    n = number(row, "n_gpus")
    return value / n if value and n else None


#: the range :func:`prior_round_gemm_speed` searches for the GEMM-rate factor
GEMM_SPEED_RANGE = (0.5, 2.0)


def _offline_row_for(rec: dict[str, Any], catalog: Catalog, params) -> dict[str, str]:
    row = {k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))
           for k, v in rec.items()}  # fmt: skip
    if needs_layout(row):
        row, _ = assumed_layout(row, catalog, params)
    return row


def gemm_speed_for_offline(row: dict[str, str], catalog: Catalog, params) -> float | None:
    """The factor on ``params.compute_eff`` at which the simulated Offline throughput of an
    MLPerf Offline ``row`` (:func:`offline_per_gpu`) equals its measured output tok/s per
    GPU (bisection in :data:`GEMM_SPEED_RANGE`, to 0.1%), or None when it cannot be
    simulated or the range does not hold it."""
    n = number(row, "n_gpus")
    measured = float(cell(row, "value")) / n if n else None
    if not measured:
        return None

    def f(k: float) -> float | None:
        q = params.model_copy(update={"compute_eff": params.compute_eff * k})
        v = offline_per_gpu(row, catalog, q)
        return None if v is None else v - measured

    lo, hi = GEMM_SPEED_RANGE
    f_lo, f_hi = f(lo), f(hi)
    if f_lo is None or f_hi is None or f_lo > 0 or f_hi < 0:
        return None
    while hi / lo > 1.001:
        mid = math.sqrt(lo * hi)
        if f(mid) < 0:  # type: ignore[operator]
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def prior_round_gemm_speed(
    row: dict[str, Any], df, catalog: Catalog, profile: Profile | None
) -> tuple[float, str]:
    """(GEMM-rate factor, provenance) of an MLPerf Server / Interactive ``row`` read off the
    harness's Offline runs of the newest earlier round: the median over that round's
    Llama-2-70B Offline rows of the same GPU, engine and precision of
    :func:`gemm_speed_for_offline` (1 and a note where no earlier round has one).

    Why: the planner's TensorRT-LLM nodes reproduce trtllm-bench's GEMM-bound runs and
    MLPerf v4.1's Offline runs, but NVIDIA's harness got faster from round to round on the
    same GPU (H200 Offline 32,124 -> 34,988 tok/s per 8 GPUs from v4.1 to v5.0; its v5.x
    configs add ``gemm_swiglu_plugin`` fp8 and fp8 context FMHA). Each round is its own
    source, so a factor read off an earlier round's Offline rows is held out for this
    row's round; it says how fast the harness's GEMMs ran one round earlier, not in this
    round (docs/changes/2026-12-07e/mlpstep.md). A what-if, off by default."""
    rnd = _round_key(cell(row, "source").replace("MLPerf Inference ", ""))
    src = df["source"].astype(str)
    off = df[
        src.str.startswith("MLPerf Inference")
        & (df["model"] == "llama-2-70b")
        & (df["mode"] == "offline")
        & (df["metric"] == "output_tok_s_total")
        & (df["hardware"] == cell(row, "hardware"))
        & (df["framework"] == cell(row, "framework"))
        & (df["precision"].astype(str) == cell(row, "precision"))
    ]
    rounds = {s: _round_key(s.replace("MLPerf Inference ", "")) for s in set(off["source"])}
    earlier = [s for s, k in rounds.items() if k < rnd]
    if not earlier:
        return 1.0, "no earlier round's Offline run of this GPU, engine and precision"
    prev = max(earlier, key=lambda s: rounds[s])
    gpu = catalog.gpu(cell(row, "hardware")).id
    params, _ = resolve_params(
        gpu, cell(row, "framework"), cell(row, "precision"), catalog=catalog, profile=profile,
        family="dense",
    )  # fmt: skip
    ks, ids = [], []
    for rec in off[off["source"] == prev].to_dict("records"):
        k = gemm_speed_for_offline(_offline_row_for(rec, catalog, params), catalog, params)
        if k is not None:
            ks.append(k)
            ids.append(str(rec["id"]))
    if not ks:
        return 1.0, f"{prev}'s Offline runs could not be simulated"
    k = float(np.median(ks))
    return k, f"GEMM rate x {k:.3f} from {prev} Offline ({', '.join(ids)})"


def fit_sources(profile: Profile | None) -> set[str]:
    """The sources of the rows ``profile`` was fitted on (every node, release nodes too)."""
    if profile is None:
        return set()
    return {src for n in (*profile.nodes, *profile.release_nodes) for src in n.sources}


def tight_tpot_records(
    df,
    catalog: Catalog,
    profile: Profile | None,
    stated_chunked: bool = False,
    harness_gemm: bool = False,
    poisson_per_engine: bool = False,
    prior_round: bool = False,
):
    """One record per MLPerf Server / Interactive row of :data:`GPUS`: mode, gpu, round,
    source, id, n_gpus, measured and predicted output tok/s per GPU, provenance. Rows of one
    configuration (GPU, layout, precision, engine, KV, engine tags) share one prediction.

    Out of sample by construction: a row whose source is among the profile's fitted sources
    (:func:`fit_sources`) raises, so a profile fitted on a round cannot predict it.
    ``stated_chunked``, ``harness_gemm``, ``poisson_per_engine``: see :func:`scenario_replica`.
    ``prior_round``: each row's GEMM rate scaled by :func:`prior_round_gemm_speed` (a what-if).

    Raises
    ------
    PlannerError
        when ``profile`` was fitted on the source of a row it is asked to predict.
    """
    import pandas as pd

    rows = mlperf_latency_rows(df)
    seen = fit_sources(profile) & set(rows["source"].astype(str))
    if seen:
        raise PlannerError(
            f"the profile was fitted on {', '.join(sorted(seen))}: MLPerf Server / Interactive "
            "rows must be predicted by a profile fitted without their source (planner "
            "validate --holdout SOURCE fits one)"
        )
    preds: dict[tuple, tuple[float, str] | None] = {}
    speeds: dict[tuple, tuple[float, str]] = {}
    recs = []
    for rec in rows.to_dict("records"):
        row = {k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))
               for k, v in rec.items()}  # fmt: skip
        n = number(row, "n_gpus")
        if not n:
            continue
        key = tuple(cell(row, c) for c in ("mode", "hardware", "tp", "n_gpus", "precision",
                                            "kv_precision", "framework"))  # fmt: skip
        key += (str(engine_settings(cell(row, "notes"))), graphs_off(cell(row, "notes")))
        key += (stated_chunking(cell(row, "notes")),)
        if stated_chunked:
            key += (stated_chunked_prefill(cell(row, "notes")),)
        if harness_gemm:
            key += (getattr(table_for_row(cell(row, "id")), "name", None),)
        speed = 1.0
        if prior_round:
            sk = (cell(row, "source"), cell(row, "hardware"), cell(row, "framework"),
                  cell(row, "precision"))  # fmt: skip
            if sk not in speeds:
                speeds[sk] = prior_round_gemm_speed(row, df, catalog, profile)
            speed = speeds[sk][0]
            key += (speed,)
        if key not in preds:
            try:
                preds[key] = predict_per_gpu(
                    row,
                    catalog,
                    profile,
                    stated_chunked=stated_chunked,
                    harness_gemm=harness_gemm,
                    poisson_per_engine=poisson_per_engine,
                    gemm_speed=speed,
                )
            except PlannerError as e:
                preds[key] = None
                print("no prediction:", key, e)
            else:
                dom = fit_domain_note(df, profile, row, catalog)
                if dom:  # the rows behind the node: a TP1 row predicted from TP8 fits says so
                    preds[key] = (preds[key][0], f"{preds[key][1]}; {dom}")
        if preds[key] is None:
            continue
        recs.append(
            {
                "mode": cell(row, "mode"),
                "gpu": cell(row, "hardware"),
                "round": cell(row, "source").replace("MLPerf Inference ", ""),
                "source": cell(row, "source"),
                "id": cell(row, "id"),
                "n_gpus": n,
                "measured": float(rec["value"]) / n,
                "predicted": preds[key][0],
                "provenance": preds[key][1],
            }
        )
    return pd.DataFrame(recs)


def tight_tpot_table(df, catalog: Catalog, profile: Profile | None):
    """Per (scenario, GPU): measured output tok/s per GPU (median over the rows' systems,
    min, max), predicted, error and the ranks of each within the scenario (1 = fastest),
    pooled over rounds (:func:`tight_tpot_pooled` of :func:`tight_tpot_records`;
    :func:`tight_tpot_rounds` ranks within each round)."""
    return tight_tpot_pooled(tight_tpot_records(df, catalog, profile))


def tight_tpot_pooled(records):
    """Per (scenario, GPU) over every round of :func:`tight_tpot_records` (see
    :func:`tight_tpot_table`)."""
    d = records
    if d is None or not len(d):
        return d
    t = _medians(d, ["mode", "gpu"], rounds=("round", lambda x: ",".join(sorted(set(x)))))
    t["measured_rank"] = t.groupby("mode")["measured_per_gpu"].rank(ascending=False).astype(int)
    t["predicted_rank"] = t.groupby("mode")["predicted_per_gpu"].rank(ascending=False).astype(int)
    return t.round(1)


def _medians(d, by: list[str], **first):
    """Per ``by`` group of records: the ``first`` aggregations, then the systems, the median,
    min and max of measured and the median of predicted output tok/s per GPU, and the error
    of the medians [%]."""
    t = (
        d.groupby(by)
        .agg(
            **first,
            systems=("measured", "size"),
            measured_per_gpu=("measured", "median"),
            measured_min=("measured", "min"),
            measured_max=("measured", "max"),
            predicted_per_gpu=("predicted", "median"),
        )
        .reset_index()
    )
    t["error_pct"] = 100 * (t["predicted_per_gpu"] / t["measured_per_gpu"] - 1)
    return t


def tight_tpot_rounds(records):
    """Per (scenario and round, GPU), from :func:`tight_tpot_records`: the median over the
    round's systems of measured and predicted output tok/s per GPU, the measured spread
    (min, max), the error and both ranks within the scenario's round (1 = fastest).

    ``round`` is ``"<mode> <round>"`` (``server v4.1``), so the table has the columns of the
    MLPerf Offline ordering table and :func:`planner.calibration.accuracy.ordering_pairs`
    lists its wrongly ordered pairs. Within a round the GPUs ran one rules text and the
    software of one season; across rounds the same GPU gains 10-30% from software alone
    (H100 Offline v4.1 3,017 -> v5.0 3,913 tok/s per GPU, docs/accuracy.md), which no
    hardware model should be asked to predict."""
    import pandas as pd

    cols = ["round", "gpu", "systems", "measured_per_gpu", "measured_min", "measured_max",
            "predicted_per_gpu", "error_pct", "measured_rank", "predicted_rank"]  # fmt: skip
    if records is None or not len(records):
        return pd.DataFrame(columns=cols)
    d = records.assign(round=records["mode"] + " " + records["round"])
    t = _medians(d, ["round", "gpu"])
    by = t.groupby("round")
    t["measured_rank"] = by["measured_per_gpu"].rank(ascending=False, method="min").astype(int)
    t["predicted_rank"] = by["predicted_per_gpu"].rank(ascending=False, method="min").astype(int)
    t = t.sort_values(["round", "measured_rank"]).reset_index(drop=True)
    return t.round(1)[cols]


def _round_key(rnd: str) -> tuple[int, ...]:
    """``"v5.1"`` -> (5, 1): MLPerf round names in release order."""
    return tuple(int(x) for x in rnd.lstrip("v").split(".") if x.isdigit())


def tight_tpot_newest(records):
    """Per (scenario, GPU), from :func:`tight_tpot_records`: the GPU's newest round in that
    scenario only (its median systems, error, and both ranks within the scenario, 1 =
    fastest), with the columns of :func:`tight_tpot_pooled` plus ``round``.

    Why a third view: pooled over rounds, a GPU's median is that of its most numerous round
    (11 of the 12 H100 Server systems are of v4.1, whose harness ran 23% below v5.0's on the
    same GPU: H100 Offline 3,017 -> 3,913 tok/s per GPU), so the pooled error measures old
    software; the planner's fits are of 2024-2026 engines. The newest round of each GPU is
    the one software season per GPU a buyer deploys today. It still mixes seasons across
    GPUs (H100 and H200 last ran in v5.0, MI355X in v6.0); :func:`tight_tpot_rounds` is the
    like-for-like check."""
    import pandas as pd

    if records is None or not len(records):
        return records
    last = records.groupby(["mode", "gpu"])["round"].transform(lambda r: max(r, key=_round_key))
    d = records[records["round"] == last]
    if not len(d):
        return pd.DataFrame()
    t = _medians(d, ["mode", "gpu"], round=("round", "first"))
    t["measured_rank"] = t.groupby("mode")["measured_per_gpu"].rank(ascending=False).astype(int)
    t["predicted_rank"] = t.groupby("mode")["predicted_per_gpu"].rank(ascending=False).astype(int)
    return t.round(1)
