"""Pipelined pipeline parallelism: ``pp`` stages at work at once, one micro-batch each.

A replica of ``pp`` stages holds ``ceil(L / pp)`` layers on each. Run stage after stage
(one batch in flight), a step of N in-flight sequences costs ``pp x t_stage(N)``: while one
stage works the others wait. The engines that serve with ``pp > 1`` instead split the
in-flight sequences into micro-batches and keep one on every stage:

* TensorRT-LLM: ``TrtGptModelInflightBatching`` sets ``mNumMicroBatches =
  getPipelineParallelism()`` when the world is pipeline parallel, and its capacity scheduler
  admits ``max_batch_size x mNumMicroBatches`` requests
  (cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp, read through the code
  index on 2026-12-07);
* vLLM V1: the executor's ``max_concurrent_batches`` is ``pipeline_parallel_size`` (2 with
  async scheduling), and ``EngineCore.step_with_batch_queue`` keeps that many scheduled
  batches in flight (vllm/v1/executor/multiproc_executor.py, ray_distributed_executor.py;
  V0 had one scheduler per "virtual engine", one per stage);
* SGLang: with ``--pp-size`` the scheduler runs ``SchedulerPPMixin.event_loop_pp``
  (python/sglang/srt/managers/scheduler_pp_mixin.py), which keeps ``mbs = [None] *
  pp_size`` micro-batches, "each stage runs in the same order and is notified by the
  previous stage" (read through the code index on 2026-12-07).

With ``m`` micro-batches of ``N / m`` sequences, each stage processes one micro-batch per
beat, and a micro-batch advances one token after passing all ``pp`` stages and ``pp - 1``
stage-to-stage sends. So one step of the replica (every in-flight sequence one token) takes

``t = pp x t_stage(N / m) + (pp - 1) x t_send(N / m)``,  ``m = min(pp, max(1, num_seqs))``

and the replica's throughput is ``N / t``. A 2-stage pipeline at full occupancy whose stage
time is linear in its tokens gives twice the stage-after-stage throughput, less the send.
One sequence (``m = 1``) runs stage after stage: more stages never make a single token's
step shorter than one stage's. ``t_send`` moves each token's hidden state (16-bit) from a
GPU of one stage to the next, ``hidden x 2 / tp`` bytes per GPU, over the replica's link
(scale-out once the replica spans several scale-up domains) plus one ``comm_latency_s``.

:data:`PIPELINED` is the switch (a model choice, not a fitted value); ``step_model(...,
pipelined=)`` overrides it. The KV cache is unchanged: each stage holds the cache of its
layers for all N sequences, whatever the split.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from planner.catalog.layout import Layout
from planner.catalog.records import Accelerator
from planner.engine.ep_terms import link_bytes_s
from planner.errors import MissingDataError

#: engines keep ``pp`` micro-batches in flight (see the module docstring); False: the
#: stages run one after the other, the planner's reading before 2026-12-07
PIPELINED = True


def coefficients(
    g: Accelerator, layout: Layout, hidden: int, pipelined: bool | None
) -> dict[str, float | int]:
    """``StepModel`` fields of a replica of ``layout`` (its ``tp`` x ``pp``):
    ``pp_micro_batches`` (``pp`` when pipelined, else 1) and ``pp_send_s_per_token``,
    ``hidden x 2 / tp`` bytes over the link of a replica of ``tp x pp`` GPUs [s / token] (0 for
    ``pp == 1``, or when the GPU's link bandwidth is unknown)."""
    on = PIPELINED if pipelined is None else bool(pipelined)
    tp, pp = layout.tp, layout.pp
    if pp <= 1:
        return {"pp_micro_batches": 1, "pp_send_s_per_token": 0.0}
    try:
        link = link_bytes_s(g, tp * pp, 2)
    except MissingDataError:
        link = 0.0
    send = hidden * 2.0 / tp / link if link > 0 else 0.0
    return {"pp_micro_batches": pp if on else 1, "pp_send_s_per_token": send}


def micro_batches(sm, num_seqs):
    """Micro-batches in flight for a step of ``num_seqs`` sequences: ``min(pp, max(1,
    num_seqs))`` (fractional counts of the analytic paths kept as they are)."""
    return np.minimum(float(sm.pp_micro_batches), np.maximum(1.0, np.asarray(num_seqs, float)))


def pipelined_step(
    sm,
    new_tokens,
    num_seqs,
    num_logits,
    kv_read_tokens_full,
    attn_pairs_full,
    kv_read_tokens_sw=0.0,
    attn_pairs_sw=0.0,
    attn_pairs_prefix=0.0,
):
    """:meth:`StepModel.step` of a pipelined replica: the stage-after-stage step of one
    micro-batch (every count divided by :func:`micro_batches`), whose time already counts the
    ``pp`` stages, plus ``pp - 1`` sends of the micro-batch's tokens (in ``t_comm_s``).
    Bytes and FLOPs are those of all ``m`` micro-batches."""
    m = micro_batches(sm, num_seqs)
    serial = dataclasses.replace(sm, pp_micro_batches=1)
    a = [
        np.asarray(x, float) / m
        for x in (
            new_tokens,
            num_seqs,
            num_logits,
            kv_read_tokens_full,
            attn_pairs_full,
            kv_read_tokens_sw,
            attn_pairs_sw,
            attn_pairs_prefix,
        )
    ]
    br = serial.step(*a)
    tok = a[0] + sm.spec_tokens * a[2]  # verify positions travel too
    send = (sm.pp - 1) * (sm.pp_send_s_per_token * tok + sm.params.comm_latency_s)
    send = np.where(np.asarray(new_tokens, float) > 0, send, 0.0)

    def s(x):
        v = np.asarray(x)
        return v.item() if v.ndim == 0 else v

    return dataclasses.replace(
        br,
        time_s=s(br.time_s + send),
        t_comm_s=s(br.t_comm_s + send),
        weight_bytes=s(br.weight_bytes * m),
        kv_read_bytes=s(br.kv_read_bytes * m),
        kv_write_bytes=s(br.kv_write_bytes * m),
        activation_bytes=s(br.activation_bytes * m),
        matmul_flops=s(br.matmul_flops * m),
        attention_flops=s(br.attention_flops * m),
        comm_bytes=s(br.comm_bytes * m),
    )
