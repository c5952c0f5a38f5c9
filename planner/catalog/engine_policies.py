"""How much KV cache an engine reserves for a request at admission
(``data/engine_policies.yaml``): the capacity policy of its scheduler.

A request of ``P`` prompt tokens and ``M`` max new tokens is admitted only while the running
requests' reservations and its own, ``ceil((P + f x M) / block)`` blocks each, fit the KV pool:
``f`` = 1 for TensorRT-LLM's default ``GUARANTEED_NO_EVICT`` (every block to completion),
SGLang's decayed ``new_token_ratio`` (0.098), 0 for vLLM (blocks for what is computed,
recompute preemption). A framework without a record reserves nothing (``f`` = 0). A
benchmark harness that sets its own policy (NVIDIA's MLPerf harness: MAX_UTILIZATION) is an
override by source name.

A second kind of record, ``sliding_window_kv``: an engine whose KV manager stores a
model's sliding-window layers only for their window (vLLM V1's hybrid KV cache manager), so
its pool holds ``L / (L - n_sliding)`` times the tokens of a layout that charges every layer
for every token (:func:`sliding_window_kv_factor`). A record is applied only where
``applied`` is true (its notes say why it is not).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import Field

from planner.catalog.catalog import DATA_DIR
from planner.catalog.frameworks import version_tuple
from planner.catalog.records import Frozen, Sourced
from planner.errors import PlannerError
from planner.files import load_data_file

__all__ = [
    "AdmissionPolicy",
    "HarnessOverride",
    "SlidingWindowKV",
    "admission_policies",
    "harness_overrides",
    "kv_reserve_fraction",
    "sliding_window_kv",
    "sliding_window_kv_factor",
]


class AdmissionPolicy(Sourced):
    """One framework's KV reservation at admission."""

    framework: str = Field(min_length=2)
    policy: str = Field(min_length=3)
    #: share of a request's max new tokens whose KV blocks are reserved at admission [-]
    kv_reserve_fraction: float = Field(ge=0.0, le=1.0)


class HarnessOverride(Sourced):
    """A benchmark harness's own policy for one framework: rows whose source name starts with
    ``source_prefix`` take its fraction (NVIDIA's MLPerf harness runs MAX_UTILIZATION)."""

    source_prefix: str = Field(min_length=3)
    framework: str = Field(min_length=2)
    policy: str = Field(min_length=3)
    kv_reserve_fraction: float = Field(ge=0.0, le=1.0)


class SlidingWindowKV(Sourced):
    """An engine's KV manager that stores sliding-window layers only for their window, from
    release ``since_version`` on; ``applied``: whether the planner's replicas take it."""

    framework: str = Field(min_length=2)
    since_version: str = Field(min_length=3)
    applied: bool = False


class _File(Frozen):
    policies: tuple[AdmissionPolicy, ...]
    overrides: tuple[HarnessOverride, ...] = ()
    sliding_window_kv: tuple[SlidingWindowKV, ...] = ()


@lru_cache(maxsize=4)
def _file(data_dir: str | None) -> _File:
    path = Path(data_dir or DATA_DIR) / "engine_policies.yaml"
    f = load_data_file(path, _File, 120)
    if f is None:
        return _File(policies=())
    seen: set[str] = set()
    for r in f.policies:
        if r.framework in seen:
            raise PlannerError(f"{path.name}: two admission policies for '{r.framework}'")
        seen.add(r.framework)
    return f


def admission_policies(data_dir: str | None = None) -> dict[str, AdmissionPolicy]:
    """Every policy of ``data/engine_policies.yaml`` by framework id (empty when absent)."""
    return {r.framework: r for r in _file(data_dir).policies}


def harness_overrides(data_dir: str | None = None) -> tuple[HarnessOverride, ...]:
    """The harness overrides of ``data/engine_policies.yaml``."""
    return _file(data_dir).overrides


def kv_reserve_fraction(
    framework: str | None, source: str | None = None, data_dir: str | None = None
) -> float:
    """The share of a request's max new tokens ``framework`` reserves KV for at admission
    [-] (0 for a framework without a record, or none); ``source``: a benchmark row's source
    name, whose harness may set its own policy (:func:`harness_overrides`)."""
    if framework is None:
        return 0.0
    for o in harness_overrides(data_dir):
        if source and o.framework == framework and source.startswith(o.source_prefix):
            return float(o.kv_reserve_fraction)
    rec = admission_policies(data_dir).get(framework)
    return 0.0 if rec is None else float(rec.kv_reserve_fraction)


def sliding_window_kv(framework: str | None, data_dir: str | None = None) -> SlidingWindowKV | None:
    """The ``sliding_window_kv`` record of ``framework`` (None: none, or no framework)."""
    return next((r for r in _file(data_dir).sliding_window_kv if r.framework == framework), None)


def sliding_window_kv_factor(
    framework: str | None,
    release: Any,
    num_layers: int,
    num_sliding_layers: int,
    *,
    applied: bool | None = None,
    data_dir: str | None = None,
) -> float:
    """How many times the tokens a KV pool holds when the engine stores a model's
    sliding-window layers only for their window [-]: ``L / (L - n_sliding)`` (2 for gpt-oss:
    18 of 36 layers), else 1.

    The window's own slots (``sliding_window`` tokens a sequence on each sliding layer) are
    not charged: the simulator's blocks are per token of every layer. That overstates the
    pool by at most ``n_sliding x window x sequences`` layer-tokens (gpt-oss: 128 tokens a
    sequence on 18 layers).

    Parameters
    ----------
    framework : str or None
        Framework id.
    release : str, a parsed release (``.release``) or None
        The engine release (None: the current one).
    num_layers, num_sliding_layers : int
        The model's layers and its sliding-window layers.
    applied : bool, optional
        Override of the record's ``applied`` (a what-if; None: the record's).
    data_dir : str, optional
        Where ``engine_policies.yaml`` is read (default: the bundled data).
    """
    rec = sliding_window_kv(framework, data_dir)
    on = rec is not None and (rec.applied if applied is None else applied)
    if not on or num_sliding_layers <= 0 or num_sliding_layers >= num_layers:
        return 1.0
    if release is not None and not isinstance(release, str):
        release = str(getattr(release, "release", "") or "") or None
    v, since = version_tuple(release), version_tuple(rec.since_version)
    if v is not None and since is not None and v < since:
        return 1.0
    return num_layers / (num_layers - num_sliding_layers)
