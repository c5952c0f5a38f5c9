"""One serving replica: engine settings (:class:`EngineConfig`), the resolved records and
step model (:class:`Replica`), :func:`build_replica` and the KV fit check :func:`check_fits`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from planner.catalog.catalog import Catalog, load_catalog
from planner.catalog.efficiency import PRIOR, EfficiencyParams
from planner.catalog.engine_policies import kv_reserve_fraction as policy_fraction
from planner.catalog.engine_policies import sliding_window_kv_factor
from planner.catalog.latency import first_token_path
from planner.catalog.layout import Layout, check_for_model, check_framework_layout, layout_of
from planner.catalog.moe_dispatch import gathers
from planner.catalog.records import Accelerator, Framework, ModelArch, Precision
from planner.catalog.speculative import SpecDecode, spec_decode
from planner.engine.adp import with_gathered_dispatch
from planner.engine.graphs import without_graphs
from planner.engine.memory import MemoryPlan, plan_memory
from planner.engine.moe_backend import with_adp_step, with_moe_backend
from planner.engine.speculative import spec_host_seq_s, with_spec
from planner.engine.step import StepModel, step_model
from planner.errors import PlannerError, require_positive
from planner.workload.workload import Requests, Workload

# =========================================================================== replica
#: whether a replica follows its framework's prefill-first policy by default
#: (``Framework.prefill_first_source``: SGLang's scheduler never mixes prompt chunks and
#: decoders in one step). Off: held out by source (scripts/latency_rows.py, the note
#: docs/changes/2026-12-07/sglsplit.md) it moved SGLang's TTFT from 21.9% to 21.5% but its
#: TPOT from 30.3% to 33.2%; the TPOT over-prediction it adds to sits in the decode step,
#: not the policy. ``build_replica(engine_prefill_first=True)`` runs it.
ENGINE_PREFILL_FIRST_DEFAULT = False
#: the engine's sliding-window KV manager (``data/engine_policies.yaml`` ``sliding_window_kv``):
#: None takes each record's ``applied``; True / False turn every record on / off (a what-if:
#: ``scripts/vllm_kv_whatif.py --hybrid``)
SLIDING_WINDOW_KV: bool | None = None
#: a deployment that does not say runs chunked prefill as its engine does by default
#: (``Framework.chunked_prefill_default``: TensorRT-LLM's LLM API and trtllm-serve leave it
#: off). Off: every engine that supports it is planned with it, and a TensorRT-LLM launch
#: sets it (``recommend --emit`` writes ``--enable_chunked_prefill``). Held out
#: (scripts/latency_rows.py, docs/changes/2026-12-08/trtchunk.md) on, TensorRT-LLM's TTFT
#: MdAPE moved 14.25% -> 14.30% (36 rows moved <= 1.8%, 18 better, 17 worse), TPOT 18.2%
#: unchanged: no gain, and unchunked plans refuse prompts above max_num_tokens
CHUNKED_PREFILL_ENGINE_DEFAULT = False


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
    sched_seq_overhead_s: float = 0.0
    #: multiplies the prefill chunks' share of an iteration's time (1: the step model's
    #: prefill; :mod:`planner.catalog.latency` holds the fitted values per engine and model
    #: family)
    prefill_scale: float = 1.0
    #: latency of the serving front end's first-token path outside the engine loop [s]
    #: (trtllm-serve on the PyTorch backend, :func:`planner.catalog.latency.first_token_path`):
    #: every request's first and last token reach the client this much later than the engine
    #: emits them (TTFT and E2E rise by it; TPOT and throughput do not change)
    first_token_s: float = 0.0
    #: the engine prepares iteration n + 1 on the CPU while the GPU runs iteration n (SGLang's
    #: overlap scheduler, vLLM's async scheduling, TensorRT-LLM's overlap scheduler:
    #: :meth:`planner.catalog.records.Framework.overlaps_host`): an iteration takes
    #: ``max(gpu, host)``, not ``gpu + host`` (:meth:`iteration_s`)
    host_overlap: bool = False
    #: pipelined stages (planner.engine.pipeline): the engine's token budget holds per
    #: micro-batch, and ``max_num_seqs`` too where ``seqs_per_micro_batch`` (TensorRT-LLM);
    #: ``max_num_seqs`` / ``max_num_batched_tokens`` above are the replica's (x micro_batches)
    micro_batches: int = 1
    seqs_per_micro_batch: bool = False
    #: a step that schedules prompts runs no decoders: they wait for the next step (vLLM V0's
    #: default scheduler without chunked prefill, ``_schedule_default``: "Don't schedule
    #: decodes if prefills are scheduled"); prompts then get the whole token budget
    prefill_first: bool = False
    #: share of a request's max new tokens whose KV blocks the scheduler reserves when it
    #: admits the request (``data/engine_policies.yaml``): 1 for TensorRT-LLM's
    #: ``GUARANTEED_NO_EVICT``, 0 for vLLM (blocks for what is computed) [-]
    kv_reserve_fraction: float = 0.0
    #: TensorRT-LLM's attention-DP balance gate run inside the simulated loop: (timeout_iters,
    #: batching_wait_iters, ranks); ranks 0: none, prompts join at every iteration
    #: (``planner.serving._phases.gate_closed``; set by ``planner.benchmarks.adp_gate``)
    adp_gate: tuple[int, int, int] = (0, 0, 0)

    @property
    def kv_capacity_tokens(self) -> int:
        return self.num_blocks * self.block_size_tokens

    def host_time_s(self, num_seqs: float) -> float:
        """Scheduler time of one iteration of ``num_seqs`` sequences [s]: ``sched_overhead_s +
        sched_seq_overhead_s x num_seqs`` (the GPU waits for it)."""
        return self.sched_overhead_s + self.sched_seq_overhead_s * num_seqs

    def flag_limits(self, attention_dp: int = 1) -> tuple[int, int]:
        """(``--max-num-seqs``, ``--max-num-batched-tokens``) as the engine's flags take them:
        per attention-DP rank and, with pipelined stages, per micro-batch."""
        mb = max(1, self.micro_batches)
        seqs = self.max_num_seqs // attention_dp // (mb if self.seqs_per_micro_batch else 1)
        return seqs, self.max_num_batched_tokens // attention_dp // mb

    def iteration_s(self, gpu_s: float, num_seqs: float) -> float:
        """Wall time of one iteration [s] whose GPU work takes ``gpu_s`` [s]: ``gpu_s +
        host`` when the GPU waits for the host (:meth:`host_time_s`), ``max(gpu_s, host)``
        when the engine overlaps them (:attr:`host_overlap`)."""
        host = self.host_time_s(num_seqs)
        return max(gpu_s, host) if self.host_overlap else gpu_s + host


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
    layout: Layout | None = None  # None: a plain tp x pp group
    spec: SpecDecode | None = None  # speculative decoding (None: off)

    @property
    def the_layout(self) -> Layout:
        """The replica's :class:`~planner.catalog.layout.Layout` (tp x pp when not given)."""
        return self.layout if self.layout is not None else layout_of(self.tp, self.pp)

    @property
    def num_gpus(self) -> int:
        return self.layout.num_gpus if self.layout is not None else self.tp * self.pp

    def label(self) -> str:
        fw = self.engine.framework or "engine"
        lay = self.the_layout
        shape = (
            f"tp={self.tp}{f' pp={self.pp}' if self.pp > 1 else ''}"
            if lay.is_plain
            else lay.describe(self.sm.gpu)
        )
        spec = f", {self.spec.label()}" if self.spec is not None else ""
        return (
            f"{self.sm.model.id} on {self.num_gpus}x {self.sm.gpu.id} ({self.sm.precision.id}, "
            f"{shape}, {fw}{spec})"
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
    ep: int = 1,
    attention_dp: int = 1,
    layout: Layout | None = None,
    spec_method: str | None = None,
    spec_tokens: int | None = None,
    acceptance_length: float | None = None,
    draft_model: str | None = None,
    spec_workload: str | None = None,
    spec_graph_max_seqs: int | None = None,
    graph_batch_sizes: tuple[int, ...] | None = None,
    prefill_scale: float = 1.0,
    release: Any = None,
    first_token_s: float | None = None,
    host_overlap: bool | None = None,
    prefill_first: bool = False,
    engine_prefill_first: bool | None = None,
    graphs_off: bool = False,
    kv_reserve_fraction: float | None = None,
    moe_dispatch: str | None = None,
    moe_backend: str | None = None,
) -> Replica:
    """Resolve a (model, GPU, precision, framework, layout) combination into a :class:`Replica`.

    Parameters
    ----------
    model, gpu, precision, framework : catalog ids or objects
    tp, pp : tensor- / pipeline-parallel sizes (GPUs per replica = tp * pp)
    ep, attention_dp : expert parallel and attention data-parallel (MoE models), or
        ``layout`` (:class:`planner.catalog.layout.Layout`, wins over tp/pp/ep/attention_dp).
        With ``attention_dp`` ranks, ``max_num_seqs`` and ``max_num_batched_tokens`` are per
        rank (vLLM's and TensorRT-LLM's meaning): the replica schedules ``attention_dp`` times
        as many
    kv_precision : KV-cache precision id (default: what the framework does with a checkpoint
        in this format, :func:`planner.catalog.default_kv_precision`)
    params : efficiency parameters (default :data:`planner.catalog.efficiency.PRIOR`)
    max_num_seqs, max_num_batched_tokens, memory_utilization, block_size, chunked_prefill,
    prefix_caching, continuous_batching : engine overrides (default: the framework record);
        ``memory_utilization`` means what the framework's record says (a fraction of total
        memory, or of the memory left after weights for TensorRT-LLM)
    context_len : longest sequence the engine accepts (``max_model_len``) [tokens];
        default the model's limit, reduced to what the KV cache holds if needed
    spec_method, spec_tokens, acceptance_length, draft_model : speculative decoding
        (:func:`planner.catalog.speculative.spec_decode`: ``mtp``, ``eagle3``, ``draft``,
        ``ngram``; K draft tokens per step; mean tokens per verify step, default published);
        ``spec_graph_max_seqs``: the engine's CUDA-graph batch limit for verify steps;
        ``spec_workload``: the prompts' kind the published AL is read for (chat, code, random...)
    graph_batch_sizes : the decode batches per attention rank the engine captured as CUDA
        graphs with padding on (TensorRT-LLM ``cuda_graph_config.batch_sizes`` with
        ``enable_padding``): a decode step runs padded to the smallest one that holds its
        busiest rank (:func:`planner.engine.adp.graph_padded`); sizes above ``max_num_seqs``
        are never run; None or empty: no padding (without speculative decoding only)
    graphs_off : the engine runs without CUDA graphs (NVIDIA's MLPerf harness): every step,
        decode included, pays the eager dispatch cost the fit has for eager iterations
        (``eager_layer_s`` x layers, a soft maximum with the GPU time)
    kv_reserve_fraction : share of a request's answer whose KV blocks admission reserves
        (None: the framework's policy, ``data/engine_policies.yaml``; a harness's own, e.g.
        NVIDIA's MLPerf harness runs MAX_UTILIZATION: 0)
    moe_backend : the engine's MoE backend as the run names it (TensorRT-LLM ``moe_config:
        backend``): a published surplus of that backend a MoE layer is added to every step
        (:func:`planner.engine.moe_backend.with_moe_backend`; None: none)
    moe_dispatch : how a DEP layout moves its MoE tokens: "gathered" (every token gathered
        over the attention-DP ranks), "all_to_all" (the routed tokens), None: what
        ``data/moe_dispatch.yaml`` says the framework does on the GPU's vendor (else
        all-to-all)
    prefill_scale : multiplies the prompt chunks' share of each iteration's time in the
        simulator (1: the step model's; :func:`planner.catalog.latency.prefill_scale`
        gives the fitted value of an engine and model family)
    release : the engine release (None: the current one); read for the first-token path
        and whether the scheduler overlaps host and GPU (``Framework.overlaps_host``)
    prefill_first : without chunked prefill, a step that schedules prompts runs no decoders
        (vLLM V0's default scheduler, :attr:`EngineConfig.prefill_first`); ignored with
        chunked prefill (see ``engine_prefill_first`` for SGLang's policy)
    engine_prefill_first : follow the framework's own prefill-first policy
        (``Framework.prefill_first_source``: SGLang runs prompt chunks in steps of their own
        unless ``--enable-mixed-chunk``); False: mixed prompt / decode steps (what SGLang does
        with ``--enable-mixed-chunk``); None: :data:`ENGINE_PREFILL_FIRST_DEFAULT`
    first_token_s : latency of the front end's first-token path added to TTFT and E2E [s]
        (None: the bundled fit of the framework at ``release``,
        :func:`planner.catalog.latency.first_token_path`: trtllm-serve >= 1.0, else 0)
    host_overlap : whether the scheduler's host time hides behind the GPU step (None: the
        framework's default at ``release``, :meth:`Framework.overlaps_host`)

    Raises
    ------
    PlannerError
        when the weights do not fit, or the precision does not run on the GPU.
    """

    cat = catalog or load_catalog()
    # kv: the given KV precision, else the framework's default for this checkpoint
    m, g, p, kv, fw = cat.resolve(model, gpu, precision, framework, kv_precision)
    params = params or PRIOR
    if layout is None:
        require_positive("tp", tp)
        require_positive("pp", pp)
        layout = layout_of(tp, pp, ep, attention_dp)
    tp, pp, dp = layout.tp, layout.pp, layout.attention_dp
    require_positive("prefill_scale", prefill_scale)
    assumptions: list[str] = []
    if first_token_s is None:
        path = first_token_path(fw.id if fw else None, release)
        first_token_s = path.latency_s if path is not None else 0.0
        if path is not None:
            assumptions.append(f"TTFT and E2E include the {path.describe()}")
    elif first_token_s < 0 or not math.isfinite(first_token_s):
        raise PlannerError(f"first_token_s must be a finite number >= 0, got {first_token_s!r}")
    elif first_token_s > 0:
        assumptions.append(
            f"TTFT and E2E include a first-token path of +{first_token_s * 1e3:.0f} ms"
        )
    check_for_model(m, layout)
    if fw is not None:
        check_framework_layout(fw, layout, g)
    if params is not None and params.serving_eager_layer_s:
        # a serving loop dispatches its eager iterations at its own host's pace
        params = params.with_(eager_layer_s=params.serving_eager_layer_s)
    sm = step_model(m, g, p, kv.id, tp, pp, params, cat, layout=None if layout.is_plain else layout)
    if moe_dispatch == "gathered" or (
        moe_dispatch is None and gathers(fw.id if fw else None, g.vendor, release)
    ):  # the engine gathers the MoE tokens of a DEP layout (data/moe_dispatch.yaml)
        sm = with_gathered_dispatch(sm, layout)
    spec = spec_decode(
        m, spec_method, spec_tokens, acceptance_length, draft_model, fw, workload=spec_workload
    )
    if spec is not None and spec_graph_max_seqs:
        spec = spec.model_copy(update={"graph_max_seqs": int(spec_graph_max_seqs)})
    sm = with_spec(sm, spec, cat)
    cb = (
        continuous_batching
        if continuous_batching is not None
        else (fw.continuous_batching if fw else True)
    )
    if chunked_prefill is not None:
        chunked = chunked_prefill
    elif fw is None:
        chunked = True
    else:
        chunked = fw.chunked_prefill_on() if CHUNKED_PREFILL_ENGINE_DEFAULT else fw.chunked_prefill
    pcache = prefix_caching if prefix_caching is not None else (fw.prefix_caching if fw else False)
    bs = int(block_size or (fw.kv_block_size if fw else 16))
    # the engine's own defaults on this GPU (vLLM picks larger ones on >= 70 GiB GPUs)
    seqs0, btok0 = fw.scheduler_defaults(g) if fw else (256, None)
    seqs = int(max_num_seqs or seqs0)
    if not max_num_seqs and fw and seqs0 <= 8:
        assumptions.append(
            f"{fw.name} runs at most {seqs0} sequence"
            f"{'s' if seqs0 > 1 else ''} at once by default, which caps "
            "throughput per replica; set max_num_seqs (scenario serving.max_num_seqs, "
            "--max-num-seqs) to plan with more"
        )
    model_max = int(m.max_position_embeddings or 4096)
    if not m.max_position_embeddings:
        assumptions.append(
            f"{m.id} states no max_position_embeddings: prompts are truncated to 4096 tokens"
        )
    ctx = int(min(context_len or model_max, model_max))
    if context_len and context_len > model_max:
        assumptions.append(f"context {context_len} capped at the model's {model_max} tokens")
    if max_num_batched_tokens:
        btok = int(max_num_batched_tokens)
    elif btok0:
        btok = int(btok0)
    else:
        btok = 8192 if chunked else max(ctx, 8192)
    if chunked_prefill is None and fw is not None and chunked and not fw.chunked_prefill_on():
        assumptions.append(
            f"chunked prefill on although {fw.name} leaves it off by default: the launch "
            "must enable it (recommend --emit sets it)"
        )
    if chunked_prefill is None and fw is not None and fw.chunked_prefill and not chunked:
        assumptions.append(
            f"chunked prefill off ({fw.name}'s default): a prompt runs whole in one step, and "
            f"one longer than the token budget ({btok}) is refused by the engine; set "
            "chunked_prefill (scenario serving.chunked_prefill) to plan with it"
        )
    for name, v in (("max_num_seqs", seqs), ("max_num_batched_tokens", btok), ("block_size", bs)):
        require_positive(name, v)
    if seqs > btok:
        assumptions.append(f"max_num_seqs {seqs} limited to the token budget {btok}")
        seqs = btok
    # pipelined stages (planner.engine.pipeline): one iteration of the simulator is mb
    # micro-batches, each within the engine's token budget; TensorRT-LLM's max_num_seqs
    # holds per micro-batch too (CapacityScheduler(max_batch_size x mNumMicroBatches),
    # trtGptModelInflightBatching.cpp). The memory plan keeps the per-micro-batch values.
    mb = sm.pp_micro_batches
    btok_mb = mb
    seqs_mb = mb if fw is not None and fw.id == "trtllm" else 1
    if mb > 1:
        assumptions.append(
            f"pipeline parallel: {mb} micro-batches in flight, one per stage; the token "
            f"budget ({btok}) holds per micro-batch"
            + (f", and max_num_seqs ({seqs}) too" if seqs_mb > 1 else "")
        )
    if graphs_off:  # no captured graphs: a step of any batch is eager (step.py spec_graph_max)
        sm = without_graphs(sm)
    sm = with_moe_backend(sm, fw.id, moe_backend)  # 0 unless a record applies
    sm = with_adp_step(sm, fw.id)  # attention-DP step cost: 0 unless its record is on
    if graph_batch_sizes and spec is None:  # decode steps padded to a captured graph
        sm = replace(
            sm, graph_sizes=tuple(sorted(float(x) for x in graph_batch_sizes if x <= seqs))
        )
    util = memory_utilization
    plan_kw = dict(
        kv_precision=kv_precision,
        layout=layout,
        framework=fw,
        max_num_seqs=seqs,
        max_batched_tokens=btok,
        catalog=cat,
        suggest=False,
        draft=sm.draft,
    )
    # the KV cache's size (max_kv_tokens) does not depend on the context: the plan at the
    # model's context gives it, and is the final plan unless the cache holds less
    plan = plan_memory(m, g, p, context_len=ctx, memory_utilization=util, **plan_kw)
    if plan.max_kv_tokens < bs:  # too small: the reasons, from a plan at <= 2048 tokens
        probe = plan_memory(m, g, p, context_len=min(ctx, 2048), memory_utilization=util, **plan_kw)
        if probe.fits and bs > probe.max_kv_tokens > 0:
            raise PlannerError(
                f"KV block size {bs} tokens is larger than the whole KV cache of {m.id} on "
                f"{layout.num_gpus}x {g.id} ({p.id}, {probe.max_kv_tokens} tokens); use a smaller "
                "block_size"
            )
        full = plan_memory(
            m,
            g,
            p,
            context_len=min(ctx, 2048),
            memory_utilization=util,
            **{**plan_kw, "suggest": True},
        )
        hint = f" Try: {'; '.join(full.suggestions)}." if full.suggestions else ""
        raise PlannerError(f"{m.id} on {layout.num_gpus}x {g.id} ({p.id}): {full.reason}.{hint}")
    num_blocks = int(plan.max_kv_tokens // bs)
    swa = sliding_window_kv_factor(fw.id if fw else None, release, m.num_hidden_layers,
                                   m.num_sliding_layers, applied=SLIDING_WINDOW_KV)  # fmt: skip
    if swa > 1.0:  # sliding-window layers stored for their window only: more tokens a block
        assumptions.append(
            f"KV pool x{swa:.2f}: {fw.id if fw else ''} stores the {m.num_sliding_layers} "
            f"sliding-window layers only for their window (data/engine_policies.yaml)"
        )
        num_blocks = int(num_blocks * swa)
    rank_blocks = num_blocks // dp  # one sequence lives on one attention rank
    if rank_blocks * bs < ctx:
        assumptions.append(
            f"max_model_len reduced from {ctx} to {rank_blocks * bs} tokens: the KV cache "
            f"{'of one attention rank ' if dp > 1 else ''}holds no more"
        )
        ctx = rank_blocks * bs
        plan = plan_memory(m, g, p, context_len=ctx, memory_utilization=util, **plan_kw)
    assumptions.extend(plan.assumptions)
    eng = EngineConfig(
        framework=fw.id if fw else None,
        continuous_batching=bool(cb),
        chunked_prefill=bool(chunked),
        prefix_caching=bool(pcache),
        block_size_tokens=bs,
        num_blocks=num_blocks,
        max_num_seqs=seqs * dp * seqs_mb,
        max_num_batched_tokens=btok * dp * btok_mb,
        micro_batches=mb,
        seqs_per_micro_batch=seqs_mb > 1,
        context_limit_tokens=ctx,
        memory_utilization=float(plan.memory_utilization),
        sched_overhead_s=float(params.sched_overhead_s),
        sched_seq_overhead_s=float(params.sched_seq_overhead_s)
        + spec_host_seq_s(fw.id if fw else None, spec) / dp,  # each attention rank's own
        prefill_scale=float(prefill_scale),
        first_token_s=float(first_token_s),
        prefill_first=(bool(prefill_first) and not bool(chunked))
        or (
            fw is not None
            and fw.prefill_first_source is not None
            and (
                ENGINE_PREFILL_FIRST_DEFAULT
                if engine_prefill_first is None
                else engine_prefill_first
            )
        ),
        kv_reserve_fraction=float(
            policy_fraction(fw.id if fw else None)
            if kv_reserve_fraction is None
            else kv_reserve_fraction
        ),
        host_overlap=bool(
            (
                fw.overlaps_host(release, speculative=spec is not None, pipeline=pp > 1)
                if fw
                else False
            )
            if host_overlap is None
            else host_overlap
        ),
    )
    return Replica(
        sm=sm,
        engine=eng,
        memory=plan,
        tp=int(tp),
        pp=int(pp),
        params_source=params_source,
        assumptions=tuple(assumptions),
        layout=None if layout.is_plain else layout,
        spec=spec,
    )


def check_workload_fits(
    replica: Replica,
    workload: Workload,
    percentile: float | None = 99.0,
    quantile: Callable[[str, float], float] | None = None,
) -> int:
    """Raise when the ``percentile``-th request (prompt + answer) does not fit one replica.

    A request longer than the engine's context limit (the model's window, cut to what the
    KV cache holds) would be truncated by the simulation: a deployment that cannot hold the
    user's requests at the stated percentile is infeasible, never a result. Requests beyond
    the percentile that do not fit are truncated and counted (``truncated_requests``).
    ``percentile=None`` skips the check (truncation explicitly allowed). ``quantile``:
    ``(which, q) -> tokens``, the workload's ``<which>_quantile_tokens(q)`` when already known
    (:meth:`planner.serving.WorkloadCache.quantile_tokens`).

    Returns
    -------
    int
        the prompt + answer length at that percentile [tokens] (0 when skipped)
    """
    if percentile is None:
        return 0
    if not 0 < percentile <= 100:
        raise PlannerError(f"fit percentile must be in (0, 100], got {percentile!r}")
    q = percentile / 100.0
    if quantile is None:
        need = int(
            math.ceil(workload.input_quantile_tokens(q) + workload.output_quantile_tokens(q))
        )
    else:
        need = int(math.ceil(quantile("input", q) + quantile("output", q)))
    eng = replica.engine
    if need <= eng.context_limit_tokens:
        return need
    mem = replica.memory
    model_max = replica.sm.model.max_position_embeddings
    what = f"the p{percentile:g} request (prompt + answer = {need:,} tokens)"
    if model_max is not None and need > model_max:
        raise PlannerError(
            f"does not fit: {what} is longer than {replica.sm.model.id}'s context window of "
            f"{model_max:,} tokens"
        )
    if mem is None:
        raise PlannerError(
            f"does not fit: {what} needs more than the {eng.kv_capacity_tokens:,} KV tokens"
        )
    kvb = mem.kv_cache_bytes_per_token
    raise PlannerError(
        f"does not fit: {what} needs {need * kvb / 1e9:.2f} GB of KV cache per GPU on "
        f"{replica.label()} but only {eng.kv_capacity_tokens * kvb / 1e9:.2f} GB "
        f"({eng.kv_capacity_tokens:,} tokens) is left after {mem.weight_bytes_per_gpu / 1e9:.1f} GB "
        "of weights per GPU; more TP, a lower precision or fp8 KV would fit"
    )


def check_fits(
    replica: Replica, reqs: Requests, stats: tuple[np.ndarray, int] | None = None
) -> None:
    """Raise a one-line error when the longest request cannot fit in the KV cache.

    ``stats``: ``(prompt + answer of each request, the longest)`` of ``reqs`` when already
    known (:meth:`planner.serving.WorkloadCache.fit_stats`)."""
    eng = replica.engine
    bs = eng.block_size_tokens
    ctx, worst = stats if stats is not None else (reqs.input_tokens + reqs.output_tokens, None)
    worst = int(ctx.max()) if worst is None else worst
    if worst > eng.context_limit_tokens:
        raise PlannerError(
            f"a request of {worst} tokens exceeds the engine's context limit of {eng.context_limit_tokens} "
            "tokens; truncate the workload (make_requests(context_limit=...)) or raise context_len"
        )
    need = math.ceil(worst / bs)
    shared_blk = (reqs.shared_prefix_tokens // bs) if eng.prefix_caching else 0
    if shared_blk and need <= eng.num_blocks < shared_blk + need:
        # continuous batching holds the shared prefix's blocks once, for everybody, and each
        # request's own blocks beside them (at most ``need``: only a tight cache checks them)
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
