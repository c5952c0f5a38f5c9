"""Measured expert-parallel routing skew (``data/moe_routing_skew.yaml``).

One record per (routed experts, top-k, EP size, load balancer): the busiest EP rank's routed
tokens over the mean, minus one, averaged over the MoE layers, as a published run measured
it. :func:`measured_skew` picks the record for a pool; its user is
:func:`planner.serving.disagg.build_disagg` (a disaggregated prefill pool's routing skew).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Frozen, Sourced
from planner.files import load_data_file

__all__ = ["RoutingSkew", "measured_skew", "routing_skews"]


class RoutingSkew(Sourced):
    """The measured skew of one model's routing at one EP size."""

    id: str = Field(min_length=2)
    num_experts: int = Field(ge=2, description="routed experts of the model")
    top_k: int = Field(ge=1, description="experts per token")
    ep: int = Field(ge=2, description="EP size of the measurement [ranks]")
    eplb: bool = Field(description="experts placed by a load balancer from measured popularity")
    tokens_per_rank: float = Field(gt=0, description="mean routed tokens per rank [tokens]")
    value: float = Field(ge=0, description="(busiest rank - mean) / mean, layer mean [1]")
    route_cv2: float | None = Field(
        None,
        ge=0,
        le=8,
        description="squared coefficient of variation of the experts' per-token hit rates "
        "that reproduces ``value`` (Gamma popularity, contiguous placement; derived by "
        "scripts/route_cv2.py, read by planner.engine.route_cv2) [1]",
    )
    route_lognormal_s2: float | None = Field(
        None,
        ge=0,
        le=8,
        description="the same for log-normal hit rates: sigma^2 of their logarithm [1]",
    )

    def applies(self, num_experts: int, top_k: int, ep: int, eplb: bool) -> bool:
        """Whether the record bounds the skew of a pool of ``ep`` ranks: same routed experts,
        top-k and load-balancer setting, and ``1 < ep <= self.ep`` without a load balancer
        (with experts in contiguous blocks a smaller EP's rank merges ranks of the measured
        one and its relative excess is their mean, never above the busiest one's); a load
        balancer's placement depends on its EP size, so such a record holds at its own
        ``ep`` only."""
        size = ep == self.ep if self.eplb else 1 < ep <= self.ep
        return (
            num_experts == self.num_experts and top_k == self.top_k and eplb == self.eplb and size
        )


class _File(Frozen):
    applied: bool = True
    skew: tuple[RoutingSkew, ...]


@lru_cache(maxsize=4)
def routing_skews(
    data_dir: str | None = None, applied_only: bool = True
) -> tuple[RoutingSkew, ...]:
    """The records of ``data/moe_routing_skew.yaml``: empty where the file is absent or, with
    ``applied_only``, where the file's ``applied`` is false (the switch)."""
    f = load_data_file(Path(data_dir or DATA_DIR) / "moe_routing_skew.yaml", _File, 120)
    if f is None or (applied_only and not f.applied):
        return ()
    return f.skew


def measured_skew(
    num_experts: int, top_k: int, ep: int, eplb: bool = False, data_dir: str | None = None
) -> RoutingSkew | None:
    """The record that applies (:meth:`RoutingSkew.applies`) with the smallest measured EP
    (the tightest bound), or ``None``: no published measurement for this shape, the caller
    keeps its fitted skew.

    Example: DeepSeek-R1 (256 experts, top-8) on a DEP8 prefill pool without a load
    balancer: the EP32 record, 1.564272."""
    hits = [r for r in routing_skews(data_dir) if r.applies(num_experts, top_k, ep, eplb)]
    return min(hits, key=lambda r: r.ep) if hits else None
