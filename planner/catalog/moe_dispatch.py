"""How an engine moves the MoE tokens of an aggregated attention-DP + EP layout
(``data/moe_dispatch.yaml``, issue 29).

One record per (framework, vendor): ``dispatch: gathered`` where the engine, as launched
(no all-to-all backend flag), gathers every token of the DP ranks around each MoE layer
instead of sending the routed ones all-to-all (SGLang's default ``--moe-a2a-backend none``;
on ROCm no all-to-all backend before 0.5.9). :func:`gathers` answers for a deployment; its
user is :func:`planner.serving.replica.build_replica`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field

from planner.catalog.catalog import DATA_DIR
from planner.catalog.frameworks import version_tuple
from planner.catalog.records import Frozen, Sourced
from planner.files import load_data_file

__all__ = ["MoeDispatch", "dispatch_records", "gathers"]


class MoeDispatch(Sourced):
    """The MoE token exchange of one engine's DEP layouts on one vendor's GPUs."""

    id: str = Field(min_length=2)
    framework: str = Field(min_length=2)
    vendor: str = Field(min_length=2)
    since: str = Field(min_length=1, description="first release read")
    dispatch: Literal["gathered", "all_to_all"]
    all_to_all: str | None = Field(default=None, description="the backend that replaces it")
    all_to_all_since: str | None = Field(default=None, description="its first release")


class _File(Frozen):
    applied: bool = True
    records: tuple[MoeDispatch, ...]


@lru_cache(maxsize=4)
def dispatch_records(data_dir: str | None = None, applied_only: bool = True):
    """The records of ``data/moe_dispatch.yaml``: empty where the file is absent or, with
    ``applied_only``, where its ``applied`` is false (the switch)."""
    f = load_data_file(Path(data_dir or DATA_DIR) / "moe_dispatch.yaml", _File, 120)
    if f is None or (applied_only and not f.applied):
        return ()
    return f.records


def gathers(framework: str | None, vendor: str | None, release=None) -> bool:
    """Whether a DEP layout of ``framework`` on ``vendor``'s GPUs gathers its MoE tokens
    (a ``dispatch: gathered`` record whose ``since`` is at or below ``release``; None: the
    current release, which every record covers)."""
    if not framework or not vendor:
        return False
    if release is not None and not isinstance(release, str):  # a parsed EngineRelease
        release = str(getattr(release, "release", "") or "") or None
    v = version_tuple(release) if release else None
    for r in dispatch_records():
        if r.framework != framework or r.vendor != vendor or r.dispatch != "gathered":
            continue
        if v is None or v >= (version_tuple(r.since) or (0, 0, 0)):
            return True
    return False
