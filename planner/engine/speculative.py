"""The draft side of speculative decoding: what one draft pass reads, computes and holds.

:func:`draft_cost` sizes the drafter of a :class:`planner.catalog.speculative.SpecDecode` on
one replica, per GPU of the busiest stage, from the target's :class:`StepModel` terms:

* ``mtp``: the model's MTP module (DeepSeek-V3: ``num_nextn_predict_layers`` = 1 module of
  one decoder layer, the layer type of the model's MoE layers, plus the ``2h x h``
  projection ``eh_proj``; the embedding and the lm head are shared with the target): one
  average decoder layer of the target's weights, activations, FLOPs, KV and collectives,
  the projection, and the lm head read again each pass; its routed experts at 16 bits where
  the checkpoint keeps the module unquantized (:data:`MTP_16BIT_CHECKPOINTS`: NVIDIA's FP4
  DeepSeek-R1), at the target's bits otherwise (SGLang's optional fp8 cast of those experts
  follows, in its words, "the real DeepSeek V3 quant config": fp8 in 128 x 128 blocks). Reused for every one of the K
  drafts (vLLM / SGLang / TensorRT-LLM's "MTP Eagle" run the one module K times).
* ``eagle3``: a one-layer dense decoder head of the target's width (attention + gated MLP of
  ``intermediate_size``, the ``3h x h`` fusion ``fc``, and an lm head of the target's vocab,
  an upper bound: published heads cut the draft vocabulary), 16-bit weights and KV.
* ``draft``: a second catalog model of the same tensor split, every layer.
* ``ngram``: nothing (prompt lookup on the host).

The verify side (K + 1 positions per decoding sequence) is in
:meth:`planner.engine.step.StepModel.step`; the formulas are in docs/formulas.md
("Speculative decoding").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from planner.catalog.catalog import Catalog, load_catalog
from planner.catalog.records import Precision
from planner.catalog.speculative import SpecDecode
from planner.engine.memory import _bits, kv_layer_bytes_per_token, weight_memory
from planner.engine.params import param_counts
from planner.engine.spec_kv import verify_kv_passes

__all__ = [
    "MTP_16BIT_CHECKPOINTS",
    "DraftCost",
    "draft_cost",
    "mtp_expert_scale",
    "per_token",
    "spec_host_seq_s",
    "with_spec",
]

#: host time per decoding sequence that a speculative iteration of these engines spends on
#: the CPU while the GPU waits [s / sequence / verify iteration], added to the scheduler's
#: host time of speculative runs only (:func:`spec_host_seq_s`; with attention DP each rank's
#: scheduler handles its own sequences, so the replica's term is divided by the ranks).
#: Why the GPU waits, sourced: SGLang turns its overlap scheduler off for EAGLE / MTP without
#: spec v2 (``Framework.overlaps_host``, data/frameworks.yaml), and its spec-v2 loop blocks
#: the CPU on the verify every step (``ScheduleBatch.maybe_wait_verify_done`` ->
#: ``verify_done.synchronize()`` from ``filter_batch``: "The batch has been launched but we
#: need it verified to get correct next batch info", public copy, code index id 4532643;
#: roadmap sgl-project/sglang#11762 "Remove or make verify_done.synchronize() an option").
#: Read in the sglang 0.5.12 wheel (PyPI, sha256 4ed786a38655851f...), the release of the
#: InferenceX pairs: ``schedule_batch.py`` still calls ``verify_done.synchronize()``, and
#: ``EagleDraftInput.prepare_for_decode`` (``speculative/eagle_info_v2.py``) waits on it, runs
#: a Python loop over the requests (KV allocation) and syncs again (``batch.seq_lens.cpu()``,
#: "FIXME(lsyin): make this sync optional"); ``SGLANG_ENABLE_SPEC_V2`` defaults to True there.
#: (PR #25465, merged after 2026-05-19, later waits on the stream instead.) Size: not
#: published. The value is CHOSEN, about the median of InferenceX's same-image SGLang v0.5.12
#: MTP / no-MTP TPOT pairs at c16-c64 (``scripts/mtp_pairs_table.py --host``, baseline error
#: removed: 0.27 ms, range 0.06-0.71 over 9 pairs on H200, MI355X and B200), so it is not held
#: out by source; left OFF (docs/changes/2026-12-09/mtp.md has the scores)
SPEC_HOST_SEQ_S = {"sglang": 2.5e-4}
#: switch for :data:`SPEC_HOST_SEQ_S` (OFF: no speculative run pays it)
SPEC_HOST_SEQ_ON = False

#: published checkpoints whose MTP (NextN) module is stored and served unquantized (bf16)
#: while the target's experts are quantized. NVIDIA's DeepSeek FP4 checkpoints: "The NVIDIA
#: FP4 checkpoint stores NextN MoE weights in BF16, so the draft model runs entirely in BF16"
#: (SGLang DeepseekV3ForCausalLMNextN, public copy, code index id 70483618410), and SGLang's
#: deepseek_nextn.py sets ``quant_config = None`` for every ``modelopt_fp4`` model ("Overriding
#: DeepseekV3ForCausalLMNextN quant config for modelopt_fp4 Deepseek model.", code index ids
#: 54491606189, 69021504931); its bf16 -> fp8 cast of the NextN experts
#: (``enable_nextn_moe_bf16_cast_to_fp8``) needs ``SGLANG_NVFP4_CKPT_FP8_NEXTN_MOE`` and the
#: DeepGEMM MoE runner, neither set by default (code index id 63085086449)
MTP_16BIT_CHECKPOINTS = ("nvidia/DeepSeek-R1-0528-FP4-v2",)


@dataclass(frozen=True)
class DraftCost:
    """One draft pass over n tokens, per GPU (zeros: no draft compute, n-gram).

    Attributes
    ----------
    weight_bytes : weights read every pass, experts excluded [B]
    expert_bytes : one routed expert of the draft's MoE layer [B] (MTP of a MoE model)
    act_bytes_per_token : GEMM activations in + out [B/token]
    matmul_flops_per_token : linear layers incl. the lm head [FLOP/token]
    kv_bytes_per_token : KV of one token in every draft layer [B/token]

    Per-token terms are per replica token on one GPU (an attention-DP rank runs 1/dp of the
    tokens: divided by ``attention_dp``).
    comm_bytes_per_token : all-reduce bytes (ring factor of the target applied later) [B/token]
    collectives : collectives per pass
    layers : decoder layers per pass
    held_bytes : weights the draft adds to GPU memory [B] (the MTP module or head or model)
    """

    weight_bytes: float = 0.0
    expert_bytes: float = 0.0
    act_bytes_per_token: float = 0.0
    matmul_flops_per_token: float = 0.0
    kv_bytes_per_token: float = 0.0
    comm_bytes_per_token: float = 0.0
    collectives: float = 0.0
    layers: float = 0.0
    held_bytes: float = 0.0


def draft_cost(sm, spec: SpecDecode | None, catalog: Catalog | None = None) -> DraftCost:
    """The drafter of ``spec`` next to the target step model ``sm`` (see module docstring)."""
    if spec is None or spec.method == "ngram":
        return DraftCost()
    m = sm.model
    tp = sm.tp
    dp = sm.attention_dp  # per replica token on one GPU: an attention rank runs 1/dp of them
    Ls = sm.layers
    lm_read = sm.lm_head_bytes
    lm_flops = sm.lm_head_flops_per_logit
    h = m.hidden_size
    b16 = 2.0
    if spec.method == "mtp":
        pc = param_counts(m)
        frac = Ls / m.num_hidden_layers
        moe_stage = pc.num_moe_layers * frac
        exp_layer = sm.expert_bytes / moe_stage * mtp_expert_scale(sm) if moe_stage else 0.0
        proj = 2 * h * h / tp * _bits(sm.precision, "attention", m) / 8
        dense = sm.dense_weight_bytes / Ls + proj
        mm = sm.matmul_flops_per_token / Ls + (2.0 * 2 * h * h / tp + lm_flops) / dp
        if sm.expert_flops_per_routed_token and moe_stage:  # EP: the mean routed share
            mm += sm.expert_flops_per_routed_token / moe_stage * sm.top_k / sm.ep
        held_experts = exp_layer * sm.local_experts
        return DraftCost(
            weight_bytes=dense + lm_read,
            expert_bytes=exp_layer,
            act_bytes_per_token=sm.act_bytes_per_token / Ls / dp,
            matmul_flops_per_token=mm,
            kv_bytes_per_token=sm.kv_bytes_per_token_layer / dp,
            comm_bytes_per_token=sm.comm_bytes_per_token / Ls,
            collectives=sm.collectives / Ls,
            layers=1.0,
            held_bytes=dense + held_experts,
        )
    if spec.method == "eagle3":
        nh, nkv, d = m.num_attention_heads, m.num_key_value_heads, m.head_dim
        inter = m.intermediate_size or (m.moe_intermediate_size or h) * max(
            1, m.num_experts_per_tok or 1
        )
        attn = h * nh * d + 2 * h * nkv * d + nh * d * h
        mlp = 3 * h * inter
        fc = 3 * h * h
        head = m.vocab_size * h
        params = (attn + mlp + fc) / tp
        act = ((h + (nh + 2 * nkv) * d) + (nh * d + h) + (h + 2 * inter) + (inter + h)) / tp
        kvh = max(1, math.ceil(nkv / tp))
        return DraftCost(
            weight_bytes=(params + head / tp) * b16,
            act_bytes_per_token=act * b16 / dp,
            matmul_flops_per_token=2.0 * (params + head / tp) / dp,
            kv_bytes_per_token=2 * kvh * d * b16 / dp,
            comm_bytes_per_token=h * b16 * 2 / dp if tp > 1 else 0.0,
            collectives=2.0 if tp > 1 else 0.0,
            layers=1.0,
            held_bytes=(params + head / tp) * b16,
        )
    # a separate draft model, same tensor split, its own precision where the GPU runs it
    cat = catalog or load_catalog()
    dm = cat.model(spec.draft_model)
    prec: Precision = sm.precision
    pc = param_counts(dm)
    w = weight_memory(dm, prec, tp)
    L = dm.num_hidden_layers
    inter = dm.intermediate_size or 0
    qkv = (dm.num_attention_heads + 2 * dm.num_key_value_heads) * dm.head_dim
    act = (
        (dm.hidden_size + qkv)
        + (dm.num_attention_heads * dm.head_dim + dm.hidden_size)
        + (dm.hidden_size + 2 * inter)
        + (inter + dm.hidden_size)
    )
    return DraftCost(
        weight_bytes=w.per_gpu_bytes - (pc.embedding / tp * b16 if pc.lm_head else 0.0),
        act_bytes_per_token=act / tp * b16 * L / dp,
        matmul_flops_per_token=2.0 * pc.matmul_active / tp / dp,
        kv_bytes_per_token=L * kv_layer_bytes_per_token(dm, sm.kv_bits, tp) / dp,
        comm_bytes_per_token=dm.hidden_size * b16 * 2 * L / dp if tp > 1 else 0.0,
        collectives=2.0 * L if tp > 1 else 0.0,
        layers=float(L),
        held_bytes=w.per_gpu_bytes,
    )


def mtp_expert_scale(sm) -> float:
    """Bytes of the MTP module's routed experts over the target's per expert: ``16 /
    weight_bits`` where the deployment loads a checkpoint of :data:`MTP_16BIT_CHECKPOINTS`
    that quantizes the experts (NVFP4 DeepSeek-R1 on Blackwell: 16 / 4.5 = 3.56), else 1."""
    m = sm.model
    arch = getattr(sm.gpu, "arch", None)
    ckpt = m.checkpoint_for(sm.precision.id, arch) if m.checkpoints else None
    if ckpt is None or ckpt.repo not in MTP_16BIT_CHECKPOINTS or "experts" not in ckpt.quantized:
        return 1.0
    return 16.0 / ckpt.weight_bits


def spec_host_seq_s(framework: str | None, spec: SpecDecode | None) -> float:
    """Host time per decoding sequence a speculative iteration adds on ``framework`` [s]
    (:data:`SPEC_HOST_SEQ_S`; 0 with the switch off, without a draft model (n-gram), or for
    another engine)."""
    if not SPEC_HOST_SEQ_ON or spec is None or spec.method == "ngram":
        return 0.0
    return float(SPEC_HOST_SEQ_S.get(framework or "", 0.0))


def with_spec(sm, spec: SpecDecode | None, catalog: Catalog | None = None):
    """``sm`` (a :class:`planner.engine.step.StepModel`) verifying ``spec.spec_tokens`` draft
    tokens per decoding sequence, with the drafter's passes and the verify kernel's KV passes
    of ``spec.engine`` (:func:`planner.engine.spec_kv.verify_kv_passes`); ``sm`` itself when
    ``spec`` is None."""
    if spec is None:
        return sm
    k = int(spec.spec_tokens)
    return replace(
        sm,
        spec_tokens=k,
        draft=draft_cost(sm, spec, catalog),
        spec_graph_max=float(spec.graph_max_seqs or 0),
        spec_kv_passes=verify_kv_passes(sm.model, sm.gpu, spec.engine, k, sm.tp),
    )


def per_token(est, spec: SpecDecode | None, batch: int, output_len: int, al: float | None = None):
    """A static-batch :class:`planner.engine.phases.Estimate` of a speculative step model
    with its decode steps turned into tokens: each verify step gives ``al`` tokens (default
    the spec's AL), so TPOT = step time / AL, E2E = TTFT + TPOT x (output_len - 1), and the
    throughputs follow. ``est`` itself without speculative decoding."""
    if spec is None:
        return est
    a = float(al if al is not None else spec.acceptance_length)
    tpot = est.tpot_s / a
    e2e = est.ttft_s + tpot * max(output_len - 1, 0)
    input_len = est.total_tok_s * est.e2e_s / batch - output_len
    return replace(
        est,
        tpot_s=tpot,
        e2e_s=e2e,
        output_tok_s=batch * output_len / e2e,
        total_tok_s=batch * (input_len + output_len) / e2e,
    )
