"""The layout terms of the step model: the collective bandwidth a replica's GPUs get
(:func:`link_bytes_s`: scale-up link or scale-out network) and the expert-parallel /
attention data-parallel form of a plain :class:`planner.engine.step.StepModel`
(:func:`as_expert_parallel`, which also attaches a published MoE layer timing of the shape,
:mod:`planner.engine.moe_floor`). Moved out of :mod:`planner.engine.step`, which keeps the
readable step formula and its coefficients."""

from __future__ import annotations

from dataclasses import replace

from planner.catalog import moe_kernels
from planner.catalog.layout import Layout
from planner.catalog.records import Accelerator
from planner.engine import adp, moe_floor, skew_cap
from planner.engine.memory import _bits
from planner.engine.params import param_counts
from planner.errors import MissingDataError


def link_bytes_s(g: Accelerator, num_gpus: int, group: int) -> float:
    """Bandwidth per GPU [B/s] of a collective over ``group`` GPUs of a replica of
    ``num_gpus``: the scale-up link (NVLink / Infinity Fabric) while the replica stays in one
    scale-up domain (``nvlink_domain_gpus``: 8 in an HGX server, 72 in an NVL72 rack), the
    scale-out network per GPU (``scaleout_gbs_per_gpu``: InfiniBand / RoCE) once it spans
    several. 0 when no collective runs (group 1)."""
    if group <= 1:
        return 0.0
    link = (g.interconnect_gbs_unidir or 0) * 1e9
    if link <= 0:
        raise MissingDataError(
            f"{g.id}: interconnect bandwidth unknown, so a {group}-GPU collective cannot be "
            "estimated"
        )
    dom = getattr(g, "nvlink_domain_gpus", None)
    if dom and num_gpus > dom:
        out = (getattr(g, "scaleout_gbs_per_gpu", None) or 0) * 1e9
        if out <= 0:
            raise MissingDataError(
                f"{g.id}: a replica of {num_gpus} GPUs spans {-(-num_gpus // dom)} scale-up "
                f"domains of {dom}, and the scale-out bandwidth per GPU is unknown "
                "(hardware.yaml scaleout_gbs_per_gpu)"
            )
        return min(link, out)
    return link


def as_expert_parallel(plain, lay: Layout):
    """:func:`planner.engine.step.step_model` of an expert-parallel / attention data-parallel layout: the plain
    model of the attention split (``tp`` x ``pp``: weights, KV, attention and activations
    per GPU of one rank; ``plain``, a :class:`planner.engine.step.StepModel`, returned replaced)
    with the expert, FLOP and communication terms of the layout.

    Per GPU of the busiest pipeline stage, for a step of T tokens of the whole replica:

    * attention, dense MLP and shared experts: each of the ``attention_dp`` ranks runs T/dp
      tokens with its weights split ``tp`` ways (``dense_weight_bytes`` per GPU; FLOPs
      ``2 x P_dense / (tp x dp)`` per replica token); its KV reads and attention FLOPs are its
      own sequences' (1/dp of the replica's, applied in :meth:`StepModel.step`);
    * routed experts: ``num_experts / ep`` experts per GPU, each split ``moe_tp`` ways; the
      weights read are the expected distinct local experts hit; the FLOPs are those of the
      busiest GPU's routed tokens (:meth:`StepModel.routed_tokens_hot`);
    * communication: inside each attention rank one all-reduce per layer over ``tp``
      (ring ``2 (tp-1)/tp``) on its T/dp tokens (attention output; the dense MLP layers
      too); around each MoE layer the dispatch and combine over the ``width`` GPUs of the stage
      (:func:`planner.engine.adp.dispatch_bytes_per_token`: the all-to-all of the routed tokens
      for attention-DP ranks, else an all-gather and a reduce-scatter of the T hidden vectors,
      one collective without attention DP: :func:`planner.engine.adp.moe_collectives_per_layer`);
      scale-out bandwidth once the replica spans several scale-up domains (:func:`link_bytes_s`).
    """
    m, g = plain.model, plain.gpu
    tp, dp, ep, mtp = lay.tp, lay.attention_dp, lay.ep, lay.moe_split
    pc = param_counts(m)
    frac = plain.layers / m.num_hidden_layers
    b_exp = _bits(plain.precision, "experts", m, g.arch) / 8
    dense_mm = pc.attention + pc.mlp_dense + pc.shared_experts + pc.router
    h, b16, w = m.hidden_size, 2.0, lay.width
    moe_s = pc.num_moe_layers * frac
    dense_s = plain.layers - moe_s
    # ring-weighted bytes per replica token on one GPU; collectives per step
    comm = 0.0
    coll = 0.0
    if tp > 1:  # attention (every layer) and dense-MLP layers all-reduce inside the rank
        comm += 2 * (tp - 1) / tp * h * b16 * (plain.layers + dense_s) / dp
        coll += plain.layers + dense_s
    if w > 1:  # dispatch and combine around each MoE layer (:func:`adp.dispatch_bytes_per_token`)
        comm += adp.dispatch_bytes_per_token(lay, plain.num_experts, plain.top_k, h) * moe_s
        coll += adp.moe_collectives_per_layer(lay) * moe_s
    link = link_bytes_s(g, lay.num_gpus, max(tp, w))
    rec = moe_kernels.moe_layer_timing(m, plain.precision.id, g.arch, ep, mtp)
    pts = moe_floor.floor_points(rec, g.mem_bw_gbs) if rec is not None else ()
    return replace(
        plain,
        moe_kernel_points=pts,
        moe_kernel_layers=moe_s if pts else 0.0,
        expert_bytes=pc.expert_one / mtp * b_exp * moe_s,
        matmul_flops_per_token=2.0 * dense_mm / (tp * dp) * frac,
        matmul_slow_flops_per_token=plain.matmul_slow_flops_per_token / dp,
        comm_bytes_per_token=comm,
        link_bytes_s=link if link > 0 else 1.0,
        ep=ep,
        attention_dp=dp,
        moe_tp=mtp,
        expert_flops_per_routed_token=2.0 * pc.expert_one / mtp * moe_s,
        comm_ring=1.0 if comm > 0 else 0.0,
        comm_collectives=coll,
        layout_label=lay.label,
        adp_balanced=lay.balanced,
        decode_skew_cap=skew_cap.decode_skew_cap(plain.num_experts, plain.top_k, ep),
    )
