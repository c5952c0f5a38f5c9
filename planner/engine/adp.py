"""The busiest attention data-parallel rank (issue 29): under attention data-parallel every
rank meets the others at each MoE layer's dispatch, so a step lasts as long as its busiest
rank. :func:`busiest_rank_extra` gives that rank's extra prompt work;
:meth:`planner.engine.step.StepModel.step` adds it to the rank-local terms and
:func:`planner.engine._scalar.step_time_scalar` repeats it in scalar form. The expert side
of the same layouts: :func:`expert_slots_per_rank` (redundant slots where ``ep`` does not
divide the experts), :func:`dispatch_bytes_per_token` (the dispatch / combine traffic) and
:func:`moe_collectives_per_layer` (how many collectives that traffic takes).
"""

from __future__ import annotations

import numpy as np

from planner.catalog.layout import Layout


def prompt_share(balanced: bool, params) -> float:
    """The share ``u`` of prompt work left on its attention-DP rank: 0 when the engine
    balances prompt work over the ranks (``Layout.attention_dp_balance``; TensorRT-LLM's
    ``attention_dp_config.enable_balance`` holds prompts until every rank has one, tech blog
    10), else the fitted ``EfficiencyParams.adp_prompt_imbalance`` (physical: 1).

    Parameters
    ----------
    balanced : the layout's balance setting (``Layout.balanced``)
    params : the step's ``EfficiencyParams``

    Returns
    -------
    u [0, 1]
    """
    return 0.0 if balanced else float(params.adp_prompt_imbalance)


def busiest_rank_extra(dp, u, new_tokens, num_seqs, kv_read_tokens_full, attn_pairs_full):
    """Attention-side work of the busiest attention data-parallel rank, as replica-wide
    counts whose ``1 / attention_dp`` is that rank's share: (extra tokens, extra
    query-key pairs of a full-attention layer) to add to ``new_tokens`` and the pairs in
    the rank-local terms (activations, dense and attention GEMMs, KV writes, attention);
    both 0 for a plain layout (``attention_dp = 1``: bit-identical to before).

    Decoding sequences spread evenly over the ranks, but a prompt chunk runs whole on the
    rank that owns its request, and every rank waits for the slowest one at the next MoE
    layer (TensorRT-LLM tech blog 10, "ADP Balance Strategy": "the iteration time is
    dominated by the slowest rank"; on 8 GB200, DEP8 DeepSeek-V3, 803 / 3,653-token
    requests, the mean over iterations of average / maximum tokens per rank was 54%).
    From the step's counts, with no free parameter but the share ``u`` that multiplies
    the result (0: the engine balances prompt chunks over the ranks):

    * prompt tokens ``P = max(new_tokens - num_seqs, 0)`` (each sequence's first token
      counted with the decoders);
    * their pairs beyond one per token, ``X = max(pairs - kv_read, 0)``: ``n (n - 1) / 2``
      for a fresh chunk of n (a decoding sequence adds 0), so ``n_eff = 2 X / P`` is the
      size-weighted mean chunk (``sum n^2 / sum n``);
    * chunks go to ranks round-robin, so the busiest rank holds ``P_hot = min(P,
      max(P / dp, n_eff))`` prompt tokens and the fraction ``h = P_hot / P`` of ``X``;
    * extra tokens ``(dp h - 1) P``, extra pairs ``(dp h - 1) X`` (0 when the prompt work
      is balanced, ``h = 1 / dp``, or when there is none). The routed experts, their
      dispatch and the KV reads of the decoders stay replica-wide (balanced).

    Example: DEP8, 64 decoding sequences per rank and one fresh 1,024-token prompt:
    T = 8 x 64 + 1,024 = 1,536, num_seqs = 513, P = 1,023; X = 1,024 x 1,023 / 2, so
    n_eff = 1,024 and h = 1: extra 7 x 1,023 = 7,161 tokens, 8,697 / 8 = 1,087 on the
    busiest rank (64 decode + 1,023 prompt + its first token) instead of 192.

    Parameters
    ----------
    dp : attention data-parallel ranks of the replica
    u : ``adp_prompt_imbalance``, the share of prompt work left on its rank [0, 1]
    new_tokens, num_seqs : the step's tokens and sequences, replica-wide
    kv_read_tokens_full, attn_pairs_full : its KV reads and query-key pairs of a
        full-attention layer, replica-wide [tokens], [pairs]

    Returns
    -------
    (extra tokens, extra pairs), replica-wide [tokens], [pairs]
    """
    T = np.asarray(new_tokens, dtype=float)
    if dp <= 1:
        return 0.0 * T, 0.0 * T
    P = np.maximum(T - np.asarray(num_seqs, float), 0.0)
    X = np.maximum(np.asarray(attn_pairs_full, float) - np.asarray(kv_read_tokens_full, float), 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        hot = np.where(P > 0, np.minimum(P, np.maximum(P / dp, 2.0 * X / P)), 0.0)
        g = np.where(P > 0, u * (dp * hot / P - 1.0), 0.0)
    return g * P, g * X


def expert_slots_per_rank(num_experts: int, ep: int) -> int:
    """Routed-expert slots per expert-parallel rank: ``ceil(E / ep)`` [experts].

    ``E / ep`` where ``ep`` divides the experts; otherwise the engines fill
    ``ep x ceil(E / ep)`` slots with every expert once and the rest as redundant copies
    (TensorRT-LLM's MoE load balancer ``num_slots``, "must be >= total experts", e.g. 288
    slots for DeepSeek-R1's 256 experts: examples/wide_ep/README.md; SGLang
    ``--ep-num-redundant-experts``: "Allocate this number of redundant experts in expert
    parallel", server_args.py). Each rank reads and holds its slots."""
    if num_experts <= 0:
        return 0
    return -(-num_experts // max(1, ep))


def dispatch_bytes_per_token(lay: Layout, num_experts: int, top_k: int, hidden: int) -> float:
    """Bytes one GPU moves per replica token per MoE layer for the dispatch + combine of an
    expert-parallel layout [B] (16-bit hidden states, send or receive side, whichever the
    link carries; the ring factor is folded in).

    * all-gather + reduce-scatter (vLLM's default ``allgather_reducescatter``; a TP x EP
      group): every GPU gathers all ``T`` tokens' hidden states and reduce-scatters them
      back: ``2 (w-1)/w x hidden x 2`` per replica token;
    * all-to-all of the routed tokens (attention-DP ranks with one expert rank each, the way
      wide-EP engines run it: SGLang's DeepEP ``--moe-a2a-backend deepep``, TensorRT-LLM's
      WIDEEP backend with its NVLink all-to-all kernels on GB200: "Custom EP communication
      kernels optimized for NVIDIA GB200 Multi-Node NVLink", examples/wide_ep/README.md):
      each rank sends its ``T / dp`` tokens once to every other rank that holds one of their
      top-k experts and receives the weighted results back:
      ``(1/dp) x (ep-1) x q x hidden x 2 x 2`` with ``q = 1 - (1 - g/E)^k`` the chance that a
      token picks at least one of a rank's ``g = E/ep`` experts (choices drawn uniformly).

    The smaller of the two: an engine's all-to-all never moves more than the all-gather.

    Example (DeepSeek-V3 DEP32: E = 256, k = 8, hidden 7168): g = 8, q = 1 - (31/32)^8 =
    0.2244, all-to-all 31 x 0.2244 / 32 x 7168 x 4 = 6,233 B against the all-gather's
    2 x 31/32 x 7168 x 2 = 27,776 B per replica token and MoE layer."""
    w = lay.width
    if w <= 1:
        return 0.0
    gather = 2.0 * (w - 1) / w * hidden * 2.0
    dp, ep = lay.attention_dp, lay.ep
    if dp <= 1 or ep != w or num_experts <= 0 or top_k <= 0:
        return gather
    g = expert_slots_per_rank(num_experts, ep)
    q = 1.0 - (1.0 - min(1.0, g / num_experts)) ** top_k
    a2a = (ep - 1) * q / dp * hidden * 2.0 * 2.0
    return min(gather, a2a)


def gathered_dispatch_bytes_per_token(lay: Layout, hidden: int, extend: bool) -> float:
    """Bytes one GPU moves per replica token per MoE layer when attention-DP ranks gather
    every token around the MoE layer instead of an all-to-all [B] (16-bit hidden states,
    ring factor folded in): SGLang with DP attention and ``--moe-a2a-backend none``, its
    default (python/sglang/srt/layers/dp_attention.py, ``DpPaddingMode``: "MAX_LEN: Padding
    tokens to max length and then gather tokens using all_gather_into_tensor"; "SUM_LEN:
    Padding tokens to sum length and then gather tokens using all_reduce";
    ``get_dp_padding_mode``: "if is_extend_in_batch and dp_size > 1: return
    DpPaddingMode.SUM_LEN", sgl-project/sglang#10414; communicator.py
    ``_scatter_hidden_states``: "When using padding, all_reduce is skipped after MLP and MOE
    and reduce scatter is used here instead", i.e. only in MAX_LEN mode).

    * a step with a prompt chunk (``extend``): SUM_LEN, the gather is an all-reduce of the
      zero-padded buffer of all ``T`` tokens and the expert outputs are all-reduced:
      ``2 x 2 (w-1)/w x hidden x 2``;
    * a decode step (balanced ranks): MAX_LEN, an all-gather and a reduce-scatter:
      ``2 (w-1)/w x hidden x 2`` (:func:`dispatch_bytes_per_token`'s all-gather).

    Example (DeepSeek-V3, DEP8, hidden 7168): prompt steps 4 x 7/8 x 7168 x 2 = 50,176 B,
    decode steps 25,088 B, against the all-to-all's 7 x 0.6564 / 8 x 7168 x 4 = 16,468 B
    (q = 1 - (1 - 32/256)^8 = 0.6564)."""
    w = lay.width
    if w <= 1:
        return 0.0
    return (2.0 if extend else 1.0) * 2.0 * (w - 1) / w * hidden * 2.0


def with_gathered_dispatch(sm, lay: Layout, extend: bool = False):
    """``sm`` (a :class:`planner.engine.step.StepModel`) with its MoE dispatch charged as the
    gather of every token over the attention-DP ranks (:func:`gathered_dispatch_bytes_per_token`)
    in place of the all-to-all of the routed tokens (:func:`dispatch_bytes_per_token`), on
    every MoE layer of its stage; ``extend``: the prompt-step (SUM_LEN) form. A layout without
    attention DP or without EP, or a dense model, is returned as it is.

    Example (DeepSeek-V3 DEP8, decode form): 25,088 - 16,468 = 8,620 B more per token and MoE
    layer, x 58 MoE layers = 499,960 B per token.

    Parameters
    ----------
    sm : the step model of the layout ``lay``
    lay : its layout
    extend : charge the prompt-step form (twice the decode bytes)

    Returns
    -------
    StepModel
    """
    from dataclasses import replace

    if lay.attention_dp <= 1 or lay.width <= 1 or not sm.model.is_moe:
        return sm
    h = sm.model.hidden_size
    moe_layers = sm.model.num_moe_layers * sm.layers / sm.model.num_hidden_layers
    per_layer = gathered_dispatch_bytes_per_token(lay, h, extend) - dispatch_bytes_per_token(
        lay, sm.num_experts, sm.top_k, h
    )
    return replace(sm, comm_bytes_per_token=sm.comm_bytes_per_token + per_layer * moe_layers)


def moe_collectives_per_layer(lay: Layout) -> int:
    """Collectives around one MoE layer of an expert-parallel layout (each costs
    ``comm_latency_s``): 2 (a dispatch and a combine) where the attention data-parallel ranks
    hold different tokens, 1 where every GPU of the width already holds all ``T`` tokens
    (``attention_dp = 1``: a TP x EP group after the attention all-reduce).

    Without attention DP the engines run the routed experts on the replicated tokens and sum
    the partial outputs with the one all-reduce a TP MoE layer has: SGLang's
    ``DeepseekV2MoE.forward_normal`` (python/sglang/srt/models/deepseek_v2.py, commit
    00114aef: ``if self.tp_size > 1: final_hidden_states =
    tensor_model_parallel_all_reduce(final_hidden_states)``; the dispatch / combine pair is
    ``forward_deepep`` only); TensorRT-LLM's ``Deepseekv3MoE.compute_routed_output``
    (tensorrt_llm/_torch/models/modeling_deepseekv3.py) all-gathers the hidden states only
    ``if self.use_dp and self.mapping.tp_size > 1`` (attention DP) and otherwise all-reduces
    once after the experts. The bytes of that all-reduce, ring ``2 (w-1)/w x hidden x 2``, are
    what :func:`dispatch_bytes_per_token` already counts for the all-gather + reduce-scatter,
    so only the count of fixed costs differs: TP8 EP8 DeepSeek-V3 runs 61 + 3 + 58 = 122
    collectives per step, as TP8 does, not 61 + 3 + 2 x 58 = 180.

    Parameters
    ----------
    lay : the layout (``width > 1``)

    Returns
    -------
    collectives per MoE layer [1 or 2]
    """
    return 2 if lay.attention_dp > 1 else 1


#: captured CUDA-graph batch sizes a step model carries in its scalar coefficients
#: (:attr:`planner.engine.step.StepModel.graph_sizes`; a longer list keeps its 16 smallest)
GRAPH_SLOTS = 16


def graph_slots(sizes) -> tuple[float, ...]:
    """``(count, s_1 .. s_16)``: the first :data:`GRAPH_SLOTS` captured sizes, ascending, and
    zeros after them (the fixed-length form of :func:`_scalar.step_time_scalar`'s tail)."""
    s = tuple(float(x) for x in sorted(sizes))[:GRAPH_SLOTS]
    return (float(len(s)), *s, *(0.0,) * (GRAPH_SLOTS - len(s)))


def graph_padded(sizes, dp, new_tokens, num_seqs, num_logits, kv_full, pairs_full, kv_sw, pairs_sw):
    """The counts of a step as the engine runs it when it pads decode batches to a captured
    CUDA graph (TensorRT-LLM ``cuda_graph_config`` with ``enable_padding: true``).

    TensorRT-LLM's ``_get_padded_batch`` (``tensorrt_llm/_torch/pyexecutor/
    cuda_graph_runner.py``; ``model_engine.py`` before) takes, under attention DP, the
    largest batch over the ranks (``tp_allgather`` of each rank's batch size), rounds it up to
    the smallest captured size (``_round_up_batch_size``: ``bisect_left`` over the sizes) and
    fills every rank's generation batch with dummy generation requests up to it; no padding
    when any rank runs a prompt (``can_run_cuda_graph``) or the batch is above the largest
    size. The dummies run the whole model: their tokens go through the GEMMs, the experts and
    the dispatch like real ones, each with a context of one token.

    A step is padded when it only decodes (``num_seqs == new_tokens == num_logits > 0``):
    the busiest rank holds ``b = ceil(num_seqs / dp)`` sequences (the even spread), the step
    runs ``g = min{s in sizes : s >= b}`` on every rank, i.e. ``d = dp g - num_seqs`` dummy
    sequences of one token each; every count rises by ``d``. Example: DEP8 with 1,160
    decoding sequences (145 a rank) and sizes ``(..., 128, 256, 384)``: ``g = 256``,
    ``d = 8 x 256 - 1,160 = 888``, the step computes 2,048 tokens.

    Parameters
    ----------
    sizes : the captured batch sizes per rank, ascending (empty: no padding)
    dp : attention data-parallel ranks of the replica (1: one batch)
    new_tokens, num_seqs, num_logits, kv_full, pairs_full, kv_sw, pairs_sw : the step's counts
        as :meth:`planner.engine.step.StepModel.step` takes them (replica-wide; arrays broadcast)

    Returns
    -------
    the seven counts, padded where the step is a decode step
    """
    T = np.asarray(new_tokens, dtype=float)
    n = np.asarray(num_seqs, dtype=float)
    lg = np.asarray(num_logits, dtype=float)
    if not sizes:
        return T, n, lg, kv_full, pairs_full, kv_sw, pairs_sw
    s = np.sort(np.asarray(sizes, dtype=float))[:GRAPH_SLOTS]
    b = np.ceil(n / dp)
    idx = np.searchsorted(s, b, side="left")
    g = np.where(idx < s.size, s[np.minimum(idx, s.size - 1)], 0.0)
    decode = (n == T) & (lg == T) & (T > 0) & (g > 0)
    d = np.where(decode, np.maximum(g * dp - n, 0.0), 0.0)
    return (
        T + d,
        n + d,
        lg + d,
        np.asarray(kv_full, float) + d,
        np.asarray(pairs_full, float) + d,
        np.asarray(kv_sw, float) + d,
        np.asarray(pairs_sw, float) + d,
    )
