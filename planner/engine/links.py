"""Bandwidth per GPU of a replica's collectives (:func:`link_bytes_s`), from
:mod:`planner.engine.step` (the step model's communication term)."""

from __future__ import annotations

from planner.catalog.records import Accelerator
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
