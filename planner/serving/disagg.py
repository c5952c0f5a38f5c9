"""Disaggregated prefill/decode serving (xPyD): the deployment, the KV transfer and the
simulation by composition.

A **disaggregated deployment** (:class:`Disaggregated`) is a prefill pool of ``x`` replicas
and a decode pool of ``y`` replicas, each pool its own (GPU, framework, precision, layout)
(:class:`Pool`). The unit of scaling is the xPyD group: a fleet is a whole number of groups.

**KV transfer** of a prompt of ``P`` tokens (:func:`transfer_time_s`)::

    time = base latency + KV bytes / link bandwidth
    KV bytes = P x kv_bytes_per_token(model, kv bits)      (one logical copy of the cache:
               MLA's latent, or every KV head of a GQA model; DeepSeek-V3 at bf16:
               61 layers x 576 x 2 B = 70,272 B/token)

* **Link**: inside one scale-up domain (the whole xPyD group of one GPU type within
  ``nvlink_domain_gpus``, e.g. an NVL72 rack) the NVLink bandwidth
  ``interconnect_gbs_unidir``, otherwise the scale-out network ``scaleout_gbs_per_gpu``
  (per GPU, from the catalog); between two GPU types the smaller scale-out figure.
* **Spread**: a sequence's KV lives on the GPUs of one attention rank of the prefill
  replica (``num_gpus / attention_dp`` GPUs: all of a TP / PP replica, one GPU of a DEP
  one); each of those GPUs sends its shard over its own NIC, so one transfer gets
  ``GPUs per rank x per-GPU link x efficiency``. Concurrent transfers from one rank share
  that bandwidth equally (processor sharing, :func:`processor_sharing`); ranks and replicas
  have their own NICs. The receiving side is taken to be no narrower (the decode pool has
  at least as many NICs in every published xPyD set-up we found).
* **Base latency and efficiency** are fitted on Mooncake's published transfer table
  (vLLM v1 + Mooncake transfer engine, Qwen3-8B 1P1D over 8x 200 Gb/s RoCE = 200 GB/s,
  prompts of 128 to 32,768 tokens, 20 MB to 4.5 GB in 0.54 to 31.65 ms;
  https://kvcache-ai.github.io/Mooncake/performance/vllm-v1-support-benchmark.html):
  least squares on relative error gives ``0.374 ms + bytes / 137.1 GB/s``, i.e. 68.6 % of
  the line rate, every row within 7 %. Both are engine-transfer figures (RDMA, GPUDirect),
  not a fit to the serving rows; :class:`Disaggregated` takes other values.

**Simulation by composition** (:func:`simulate_disagg`; no change to the event loop):

1. the prefill pool runs the arrivals as requests of one output token (their first-token
   times are the prefill completions), requests routed round-robin over the ``x`` replicas
   (and over the attention ranks of a replica, for the transfer);
2. the transfer queue: per sending rank, processor sharing of the link, plus the base
   latency; decode KV is reserved when a transfer starts, so the decode pool's KV cache
   is reduced by the peak KV in flight towards one decode replica (conservative: held the
   whole run);
3. the decode pool gets each request when its transfer completes, round-robin over the
   ``y`` replicas in order of completion, as a request whose prompt is already cached
   except its last token (``cached_tokens = prompt - 1``): the engine allocates the
   prompt's KV blocks and runs no prefill; the one uncached token is computed in the
   request's first iteration, which costs exactly a decode step (one token attending to
   the ``prompt - 1`` cached ones). That first step produces the first token the user
   sees, so **TTFT = prefill queueing + prefill + transfer + decode queueing + the first
   decode step** (the issue's convention; engines that stream the prefill's token are
   faster by one decode step), and the decode pool then produces the other
   ``output - 1`` tokens: **TPOT comes from the decode pool alone**.

The result is one :class:`~planner.serving.result.SimResult` over all ``x x prefill +
y x decode`` GPUs (throughput per GPU divides by both pools, as InferenceX does), with the
per-stage times in ``meta["disagg"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from pydantic import Field

from planner.catalog.catalog import Catalog, load_catalog
from planner.catalog.compat import disaggregation_problem
from planner.catalog.layout import Layout, layout_of
from planner.catalog.profile import model_family, resolve_params
from planner.catalog.records import Accelerator, Frozen, ModelArch
from planner.catalog.routing_skew import measured_skew
from planner.engine.adp import dispatch_bytes_per_token, gathered_dispatch_bytes_per_token
from planner.engine.dense_rate import no_deepgemm
from planner.engine.memory import kv_bytes_per_token
from planner.errors import MissingDataError, PlannerError
from planner.serving.probe import run
from planner.serving.replica import Replica, build_replica, check_fits
from planner.serving.result import SimResult
from planner.workload.workload import Requests, Workload

__all__ = [
    "TRANSFER_BASE_S",
    "TRANSFER_EFFICIENCY",
    "DisaggReplicas",
    "Disaggregated",
    "Pool",
    "build_disagg",
    "gathered_dispatch",
    "kv_link",
    "prefill_routing_skew",
    "processor_sharing",
    "sample_disagg_requests",
    "simulate_disagg",
    "transfer_bytes",
    "transfer_time_s",
]

#: fixed part of one KV transfer [s]: Mooncake's vLLM v1 table, fitted (module docstring)
TRANSFER_BASE_S = 0.374e-3
#: achieved fraction of the link's line rate: 137.1 / 200 GB/s on the same table
TRANSFER_EFFICIENCY = 0.686


# =========================================================================== the deployment
class Pool(Frozen):
    """One pool of a disaggregated deployment: GPU, framework, precision and layout of each
    of its replicas."""

    gpu: str = Field(min_length=1)
    framework: str | None = None
    precision: str = "bf16"
    kv_precision: str | None = None
    tp: int = Field(1, gt=0)
    pp: int = Field(1, gt=0)
    ep: int = Field(1, gt=0)
    attention_dp: int = Field(1, gt=0)
    max_num_seqs: int | None = Field(None, gt=0)
    max_num_batched_tokens: int | None = Field(None, gt=0)
    moe_all_to_all: bool = Field(
        True,
        description="attention-DP ranks send routed tokens all-to-all (SGLang --moe-a2a-backend "
        "deepep); False: they gather every token around each MoE layer (SGLang's default none)",
    )
    deepgemm: bool = Field(
        True,
        description="the engine runs its block-FP8 dense linears on DeepGEMM; False (SGLang "
        "SGLANG_ENABLE_JIT_DEEPGEMM false): at the fallback kernel's published rate "
        "(data/kernel_rates.yaml block_fp8_gemm, planner.engine.dense_rate)",
    )

    @property
    def layout(self) -> Layout:
        return layout_of(self.tp, self.pp, self.ep, self.attention_dp)

    @property
    def num_gpus(self) -> int:
        return self.layout.num_gpus


class Disaggregated(Frozen):
    """``x`` prefill replicas and ``y`` decode replicas (one xPyD group) and the transfer
    terms (default: :data:`TRANSFER_BASE_S`, :data:`TRANSFER_EFFICIENCY`, the catalog's
    link)."""

    prefill: Pool
    decode: Pool
    x: int = Field(1, gt=0, le=4096)
    y: int = Field(1, gt=0, le=4096)
    transfer_base_s: float = Field(TRANSFER_BASE_S, ge=0)
    transfer_efficiency: float = Field(TRANSFER_EFFICIENCY, gt=0, le=1)
    link_gbs_per_gpu: float | None = Field(None, gt=0, description="override the catalog's link")

    @property
    def num_gpus(self) -> int:
        return self.x * self.prefill.num_gpus + self.y * self.decode.num_gpus

    def label(self) -> str:
        """``disagg 1P(DEP4)+2D(DEP16)``: counts and each pool's layout over its GPUs."""
        return (
            f"disagg {self.x}P({_pool_label(self.prefill)})+{self.y}D({_pool_label(self.decode)})"
        )


def _pool_label(p: Pool) -> str:
    lay = p.layout
    lab = lay.label
    # a plain layout names its width; a DEP label already does
    return lab if lab.startswith(("TP", "DEP")) else f"{lab} x{lay.num_gpus}"


@dataclass(frozen=True)
class DisaggReplicas:
    """The built pools: one prefill and one decode :class:`Replica`, their counts and the
    KV link (per sending attention rank)."""

    spec: Disaggregated
    prefill: Replica
    decode: Replica
    link_bytes_s: float  # one sending attention rank's bandwidth, efficiency applied [B/s]
    link_kind: str  # "nvlink" or "scale-out"
    kv_bytes_per_token: float  # one logical copy [B/token]

    @property
    def num_gpus(self) -> int:
        return self.spec.num_gpus

    def label(self) -> str:
        m = self.prefill.sm.model.id
        return (
            f"{m} {self.spec.label()} on {self.spec.x}x{self.prefill.num_gpus} "
            f"{self.prefill.sm.gpu.id} + {self.spec.y}x{self.decode.num_gpus} {self.decode.sm.gpu.id}"
        )


def build_disagg(
    model: ModelArch | str,
    spec: Disaggregated,
    *,
    catalog: Catalog | None = None,
    where: str = "deployment.disaggregated",
    profile: Any = None,
    profile_path: Any = None,
    first_token_s: float | None = 0.0,
    **engine: Any,
) -> DisaggReplicas:
    """Build both pools of ``spec`` for ``model``.

    ``first_token_s``: the front end's first-token path of the decode pool, which delivers
    the first token [s] (None: the bundled fit of its framework,
    :func:`planner.catalog.latency.first_token_path`, as the product plans; 0 by default:
    benchmark rows add what their run states). The prefill pool never carries it.

    ``engine``: engine overrides for both pools (a pool's own ``max_num_seqs`` /
    ``max_num_batched_tokens`` win). Each pool's efficiency parameters are resolved for its
    own GPU, framework and precision (:func:`planner.catalog.profile.resolve_params`, the
    bundled calibration profile unless ``profile`` / ``profile_path`` is given), as an
    aggregated replica's are, unless ``engine`` passes ``params`` for both.

    Raises
    ------
    PlannerError
        one line naming the pool and field (``deployment.disaggregated.decode: ...``) when
        a pool cannot hold the model or its layout does not fit it, or its engine does not
        offer prefill/decode disaggregation (:func:`planner.catalog.compat.disaggregation_problem`).
    """
    cat = catalog or load_catalog()
    offered = tuple(f.name for f in cat.frameworks if f.disaggregation)
    for name in ("prefill", "decode"):
        fw_id = getattr(spec, name).framework
        why = disaggregation_problem(cat.framework(fw_id), offered) if fw_id else None
        if why:
            raise PlannerError(f"{where}.{name}.framework: {why}")
    reps = {}
    for name in ("prefill", "decode"):
        p: Pool = getattr(spec, name)
        kw = {**engine}
        # the first token reaches the client through the decode pool only
        kw["first_token_s"] = 0.0 if name == "prefill" else first_token_s
        for k in ("max_num_seqs", "max_num_batched_tokens"):
            if getattr(p, k) is not None:
                kw[k] = getattr(p, k)
        try:
            if "params" not in kw:
                m = cat.model_ref(model, None) if isinstance(model, str) else model
                kw["params"], kw["params_source"] = resolve_params(
                    p.gpu,
                    p.framework,
                    p.precision,
                    profile_path,
                    cat,
                    profile=profile,
                    family=model_family(m),
                )
            reps[name] = build_replica(
                model,
                p.gpu,
                p.precision,
                p.framework,
                layout=p.layout,
                kv_precision=p.kv_precision,
                catalog=cat,
                moe_dispatch="all_to_all",  # gathered below where the pool's engine gathers
                **kw,
            )
        except PlannerError as e:
            raise type(e)(f"{where}.{name}: {e}") from None
        if not p.moe_all_to_all:
            reps[name] = gathered_dispatch(reps[name], extend=name == "prefill")
        if not p.deepgemm:
            rep = reps[name]
            reps[name] = replace(rep, sm=no_deepgemm(rep.sm, rep.engine.framework))
        if name == "prefill":
            reps[name] = prefill_routing_skew(reps[name])
    pre, dec = reps["prefill"], reps["decode"]
    if pre.sm.model.id != dec.sm.model.id:  # pragma: no cover - one model argument
        raise PlannerError(f"{where}: both pools must serve the same model")
    per_gpu, kind = kv_link(pre.sm.gpu, dec.sm.gpu, spec.num_gpus, spec.link_gbs_per_gpu)
    gpus_per_rank = pre.num_gpus // pre.the_layout.attention_dp
    # the KV crosses in the decode pool's format when it differs: the larger of the two
    kvb = max(
        kv_bytes_per_token(pre.sm.model, pre.sm.kv_bits),
        kv_bytes_per_token(dec.sm.model, dec.sm.kv_bits),
    )
    return DisaggReplicas(
        spec=spec,
        prefill=pre,
        decode=dec,
        link_bytes_s=gpus_per_rank * per_gpu * spec.transfer_efficiency,
        link_kind=kind,
        kv_bytes_per_token=float(kvb),
    )


def gathered_dispatch(rep: Replica, extend: bool) -> Replica:
    """``rep`` with its MoE dispatch as a gather of every token over the attention-DP ranks
    instead of the all-to-all of the routed ones (:func:`planner.engine.adp.
    gathered_dispatch_bytes_per_token`; ``extend``: a prefill pool, whose every step carries
    prompt chunks). A layout without attention DP or without EP is returned as it is (its
    MoE all-reduce is already the gather form)."""
    sm, lay = rep.sm, rep.the_layout
    if lay.attention_dp <= 1 or lay.width <= 1 or not sm.model.is_moe:
        return rep
    h = sm.model.hidden_size
    moe_layers = sm.model.num_moe_layers * sm.layers / sm.model.num_hidden_layers
    per_layer = gathered_dispatch_bytes_per_token(lay, h, extend) - dispatch_bytes_per_token(
        lay, sm.num_experts, sm.top_k, h
    )
    comm = sm.comm_bytes_per_token + per_layer * moe_layers
    return replace(rep, sm=replace(sm, comm_bytes_per_token=comm))


def prefill_routing_skew(rep: Replica, eplb: bool = False) -> Replica:
    """``rep`` (a prefill pool's replica) with the measured routing skew of its model
    (:func:`planner.catalog.routing_skew.measured_skew`, ``data/moe_routing_skew.yaml``) as
    the skew of both its prompt and its decode tokens (``moe_imbalance_prompt``,
    ``moe_imbalance``) in place of the fitted ones; returned as it is where no record applies
    (not an expert-parallel MoE layout, another routing shape, an EP above the measured one).

    Why a pool differs from an aggregated replica: the fitted prompt skew (bundled profile:
    3.96 TensorRT-LLM, 2.52 SGLang; its bound is 4) is identified only on aggregated rows,
    whose prompt tokens share steps with decode tokens, and stands in for a cost of those
    runs that the step model lacks (a busiest rank with 5x the mean routed tokens is no
    routing skew: the one measurement, DeepSeek-R1 at EP32 without a load balancer, is
    1.564). A prefill pool's steps are prompt chunks on every rank with no decode tokens;
    its MoE pays the router's own skew (docs/changes/2026-12-07e/poolskew.md).

    Example: DeepSeek-R1 SGLang DEP8 prefill pool, fitted skews 4 / 2.5211 -> 1.564 / 1.564:
    a 16,384-token step a rank routes m = 16,384 x 8 x 8 / 8 = 131,072 tokens to each rank on
    average and the busiest gets m x 2.564272 + sqrt(2 ln 8 x m) = 336,843 instead of
    m x 3.5211 + 738 = 462,256 (:meth:`planner.engine.step.StepModel.routed_tokens_hot`).
    """
    sm, lay = rep.sm, rep.the_layout
    if not sm.model.is_moe or lay.ep <= 1:
        return rep
    rec = measured_skew(sm.num_experts, sm.top_k, lay.ep, eplb)
    if rec is None:
        return rep
    params = sm.params.with_(moe_imbalance=rec.value, moe_imbalance_prompt=rec.value)
    return replace(rep, sm=replace(sm, params=params))


# =========================================================================== the transfer
def kv_link(
    prefill_gpu: Accelerator,
    decode_gpu: Accelerator,
    group_gpus: int,
    override_gbs: float | None = None,
) -> tuple[float, str]:
    """Per-GPU bandwidth of the KV link between the pools [B/s] and its kind.

    NVLink (``interconnect_gbs_unidir``) when both pools are one GPU type and the whole
    group of ``group_gpus`` fits one scale-up domain (``nvlink_domain_gpus``); else the
    scale-out network per GPU (``scaleout_gbs_per_gpu``; the smaller of the two types').
    ``override_gbs`` [GB/s] replaces the catalog's figure.
    """
    if override_gbs:
        return float(override_gbs) * 1e9, "given"
    same = prefill_gpu.id == decode_gpu.id
    dom = getattr(prefill_gpu, "nvlink_domain_gpus", None)
    if same and dom and group_gpus <= dom and (prefill_gpu.interconnect_gbs_unidir or 0) > 0:
        return float(prefill_gpu.interconnect_gbs_unidir) * 1e9, "nvlink"
    outs = [getattr(g, "scaleout_gbs_per_gpu", None) or 0 for g in (prefill_gpu, decode_gpu)]
    if min(outs) <= 0:
        bad = prefill_gpu.id if outs[0] <= 0 else decode_gpu.id
        raise MissingDataError(
            f"{bad}: scale-out bandwidth per GPU unknown (scaleout_gbs_per_gpu), so the KV "
            "transfer between the pools cannot be estimated; give link_gbs_per_gpu"
        )
    return float(min(outs)) * 1e9, "scale-out"


def transfer_bytes(prompt_tokens: Any, kv_bytes_per_token_: float) -> np.ndarray:
    """KV bytes of a prompt [B]: ``prompt_tokens x kv_bytes_per_token_`` (vectorized)."""
    return np.asarray(prompt_tokens, float) * float(kv_bytes_per_token_)


def transfer_time_s(nbytes: Any, link_bytes_s: float, base_s: float = TRANSFER_BASE_S) -> Any:
    """Unshared transfer time of ``nbytes`` [s]: ``base_s + nbytes / link_bytes_s``."""
    if link_bytes_s <= 0:
        raise PlannerError(f"link bandwidth must be positive (got {link_bytes_s})")
    return base_s + np.asarray(nbytes, float) / float(link_bytes_s)


def processor_sharing(arrival_s: Any, nbytes: Any, capacity_bytes_s: float) -> np.ndarray:
    """Completion times [s] of transfers sharing one link equally (processor sharing).

    Each of the ``k`` transfers in progress gets ``capacity / k``; a lone transfer of ``b``
    bytes arriving at ``t`` ends at ``t + b / capacity``. Exact event-by-event arithmetic
    (one pass; the work per event is the number in progress).
    """
    a = np.asarray(arrival_s, float)
    b = np.asarray(nbytes, float)
    n = len(a)
    fin = np.full(n, np.nan)
    if capacity_bytes_s <= 0:
        raise PlannerError(f"link bandwidth must be positive (got {capacity_bytes_s})")
    order = np.argsort(a, kind="stable")
    idx: list[int] = []
    rem = np.zeros(0)
    t = 0.0
    i = 0
    while i < n or idx:
        if not idx:
            j = int(order[i])
            t = max(t, float(a[j]))
            idx, rem = [j], np.array([b[j]])
            i += 1
            continue
        k = len(idx)
        rmin = float(rem.min())
        t_done = t + rmin * k / capacity_bytes_s
        t_next = float(a[order[i]]) if i < n else np.inf
        if t_done <= t_next:
            rem = rem - rmin
            t = t_done
            done = rem <= 1e-9 * max(rmin, 1.0)
            for p in np.flatnonzero(done):
                fin[idx[p]] = t
            idx = [q for q, d in zip(idx, done, strict=True) if not d]
            rem = rem[~done]
        else:
            rem = rem - (t_next - t) * capacity_bytes_s / k
            t = t_next
            j = int(order[i])
            idx.append(j)
            rem = np.append(rem, b[j])
            i += 1
    return fin


# =========================================================================== the simulation
def _subset(reqs: Requests, sel: np.ndarray, **over: Any) -> Requests:
    cols = {
        "arrival_s": reqs.arrival_s[sel],
        "input_tokens": reqs.input_tokens[sel],
        "output_tokens": reqs.output_tokens[sel],
        "cached_tokens": reqs.cached_tokens[sel],
    }
    cols.update(over)
    return Requests(
        **cols, shared_prefix_tokens=reqs.shared_prefix_tokens, max_new_tokens=reqs.max_new_tokens
    )


def sample_disagg_requests(
    d: DisaggReplicas, workload: Workload, n: int, rng: np.random.Generator, rate_rps: float | None
) -> Requests:
    """``n`` requests of ``workload`` for ``d`` (lengths cut to the smaller context limit)."""
    ctx = min(d.prefill.engine.context_limit_tokens, d.decode.engine.context_limit_tokens)
    return workload.sample_requests(
        n, rng, rate_rps, context_limit=ctx, prefix_caching=d.prefill.engine.prefix_caching
    )


def simulate_disagg(d: DisaggReplicas, reqs: Requests) -> SimResult:
    """Simulate one xPyD group serving ``reqs`` (open loop; see the module docstring).

    Returns a :class:`SimResult` whose TTFT spans prefill queueing, prefill, transfer and
    the first decode step, and whose ``meta["disagg"]`` holds the per-request stage times
    (``prefill_done_s``: the transfer's start too, ``transfer_done_s``), the bytes sent and
    the link used. A pool replica that gets no request (fewer requests than replicas)
    idles.
    """
    x, y = d.spec.x, d.spec.y
    n = len(reqs)
    if n == 0:
        raise PlannerError("simulate_disagg() needs at least one request")
    if np.any(np.diff(reqs.arrival_s) < 0):
        order = np.argsort(reqs.arrival_s, kind="stable")
        reqs = _subset(reqs, order)
    # 1. prefill pool: one output token each, round-robin over x replicas
    one = np.ones(n, np.int64)
    pre_req = Requests(
        reqs.arrival_s, reqs.input_tokens, one, reqs.cached_tokens, reqs.shared_prefix_tokens
    )
    check_fits(d.prefill, pre_req)
    pre_done = np.full(n, np.nan)
    pre_busy = pre_iters = 0.0
    pf_tokens = 0
    for i in range(min(x, n)):
        sel = np.arange(i, n, x)
        r = run(d.prefill, _subset(pre_req, sel))
        pre_done[sel] = r.first_token_s
        pre_busy += r.busy_s
        pre_iters += r.iterations
        pf_tokens += r.prefill_tokens_computed
    # 2. transfers: one link per attention rank of each prefill replica
    dp = d.prefill.the_layout.attention_dp
    link = (np.arange(n) % x) * dp + (np.arange(n) // x) % dp
    nbytes = transfer_bytes(reqs.input_tokens, d.kv_bytes_per_token)
    xfer_done = np.full(n, np.nan)
    for k in np.unique(link):
        sel = np.flatnonzero(link == k)
        xfer_done[sel] = processor_sharing(pre_done[sel], nbytes[sel], d.link_bytes_s)
    xfer_done += d.spec.transfer_base_s
    # 3. decode pool: arrivals at transfer completion, the prompt cached but its last token
    order = np.argsort(xfer_done, kind="stable")
    dec_of = np.empty(n, np.int64)
    dec_of[order] = np.arange(n) % y
    dec = _reserve_in_flight(d, pre_done, xfer_done, dec_of, reqs.input_tokens)
    cached = np.maximum(reqs.input_tokens - 1, 0)
    first = np.full(n, np.nan)
    fin = np.full(n, np.nan)
    npre = np.zeros(n, np.int64)
    busy = pre_busy
    iters = pre_iters
    kv_mean = kv_max = area = 0.0
    for j in range(min(y, n)):
        sel = order[dec_of[order] == j]
        sub = _subset(reqs, sel, arrival_s=xfer_done[sel], cached_tokens=cached[sel])
        check_fits(dec, sub)
        r = run(dec, sub)
        first[sel], fin[sel], npre[sel] = r.first_token_s, r.finish_s, r.preemptions
        busy += r.busy_s
        iters += r.iterations
        kv_mean += r.kv_util_mean / y
        kv_max = max(kv_max, r.kv_util_max)
        area += r.in_system_area_s
    # requests in the system before reaching decode: prefill queue + prefill + transfer
    area += float(np.sum(xfer_done - reqs.arrival_s))
    return SimResult(
        arrival_s=reqs.arrival_s.copy(),
        first_token_s=first,
        finish_s=fin,
        input_tokens=reqs.input_tokens.copy(),
        output_tokens=reqs.output_tokens.copy(),
        cached_tokens=reqs.cached_tokens.copy(),
        preemptions=npre,
        num_gpus=d.num_gpus,
        iterations=int(iters),
        busy_s=float(busy),
        iteration_stats=(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0)),
        kv_util_mean=kv_mean,
        kv_util_max=kv_max,
        in_system_area_s=area,
        prefill_tokens_computed=int(pf_tokens),
        mode="open",
        label=d.label(),
        truncated=reqs.truncated,
        meta={
            "disagg": {
                "prefill_done_s": pre_done,
                "transfer_done_s": xfer_done,
                "transfer_bytes": nbytes,
                "link_kind": d.link_kind,
                "link_bytes_s": d.link_bytes_s,
                "decode_kv_blocks_reserved": d.decode.engine.num_blocks - dec.engine.num_blocks,
            }
        },
        # the front end's first-token path: once, on the decode pool's tokens
        first_token_offset_s=d.decode.engine.first_token_s,
    )


def _reserve_in_flight(
    d: DisaggReplicas,
    start_s: np.ndarray,
    done_s: np.ndarray,
    dec_of: np.ndarray,
    prompt_tokens: np.ndarray,
) -> Replica:
    """The decode replica with its KV cache less the peak KV in flight towards one decode
    replica: a transfer reserves its prompt's blocks from its start (the prefill's end) to
    its end, when the decode engine admits the request and allocates them itself."""
    bs = d.decode.engine.block_size_tokens
    blocks = np.ceil(np.asarray(prompt_tokens, float) / bs)
    peak = 0.0
    for j in np.unique(dec_of):
        sel = dec_of == j
        t = np.concatenate([start_s[sel], done_s[sel]])
        w = np.concatenate([blocks[sel], -blocks[sel]])
        o = np.lexsort((w, t))  # at equal times the ends (negative) first
        peak = max(peak, float(np.max(np.cumsum(w[o]))))
    keep = d.decode.engine.num_blocks - int(peak)
    if keep <= 0:
        raise PlannerError(
            "the KV in flight between the pools fills the decode pool's whole KV cache; add "
            "decode replicas or link bandwidth"
        )
    return d.decode if peak == 0 else d.decode.with_engine(num_blocks=keep)
