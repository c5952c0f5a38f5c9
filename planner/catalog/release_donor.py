"""Which release node lends its fit to a GPU whose architecture has none (the donor rule).

A prediction for an engine release on a GPU whose architecture has no fit of the engine at
all borrows the node of the nearest release of the same series on another architecture
(:func:`~planner.catalog.release_profile.choose_release_elsewhere`, step 4 of
``planner.catalog.release_profile``). The fit, ``planner validate``, ``planner estimate`` and
the recommender all reach it through
:func:`~planner.catalog.release_profile.resolve_release_params`, so the ranking below is the
one rule they share.

The ranking of the candidate nodes is :func:`elsewhere_rank`: release distance first, then
the same vendor, then the nearest GPU by datasheet, the newer release, more rows. With
:func:`vendor_first` the vendor comes before the release distance: a node of the GPU's own
vendor (its compiler, kernels and collective library: ROCm / aiter / RCCL against CUDA /
FlashInfer / NCCL) at any release of the series is preferred, and another vendor's node
lends only when the vendor has none.

**Measured held out and left off** (``docs/changes/2026-12-07e/donor.md``):

* vendor first (``PLANNER_DONOR_VENDOR_FIRST=1``) moves no held-out row of the bundled
  benchmarks: no row that reaches this step has a node of its own vendor in its series on
  another architecture (InferenceX's MI355X SGLang 0.5.x rows see only NVIDIA 0.5 nodes;
  GPUStack's A100 vLLM 0.11.0 rows only AMD's MI300X 0.11.1). It cannot undo what the SGLang
  cookbook's 0.5.6.post1 label moves: the MI355X then takes the B200 node of that label
  because it is the nearest release, and there is no AMD node of the series to prefer.
* the offline-node rule of the fit (``PLANNER_DONOR_NO_OFFLINE_NODES=1``,
  :func:`no_offline_nodes`): a release node whose rows are all offline runs is not fitted,
  so its release borrows the next node or the fit over every release.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

from planner.errors import PlannerError

__all__ = [
    "NO_OFFLINE_NODES_ENV",
    "VENDOR_FIRST_ENV",
    "elsewhere_rank",
    "no_offline_nodes",
    "offline_only",
    "vendor_first",
]

#: the environment variable that turns the vendor-first donor order on ("1") or off ("0")
VENDOR_FIRST_ENV = "PLANNER_DONOR_VENDOR_FIRST"

#: the default of :func:`vendor_first` (measured held out, see the module docstring)
VENDOR_FIRST_DEFAULT = False


#: the environment variable that keeps release nodes taught only by offline runs out of a
#: fit ("1") or in ("0"): :func:`no_offline_nodes`
NO_OFFLINE_NODES_ENV = "PLANNER_DONOR_NO_OFFLINE_NODES"

#: the default of :func:`no_offline_nodes` (measured held out, see the module docstring)
NO_OFFLINE_NODES_DEFAULT = False


def _switch(env: str, default: bool) -> bool:
    """An on / off environment switch: "1" on, "0" off, unset or empty the default."""
    value = os.environ.get(env, "").strip()
    if not value:
        return default
    if value not in ("0", "1"):
        raise PlannerError(f"{env}: {value!r} is not 0 or 1")
    return value == "1"


def vendor_first() -> bool:
    """Whether a same-vendor release node of the series lends before a nearer release of
    another vendor (``PLANNER_DONOR_VENDOR_FIRST``: "1" / "0"; unset: the default)."""
    return _switch(VENDOR_FIRST_ENV, VENDOR_FIRST_DEFAULT)


def no_offline_nodes() -> bool:
    """Whether ``planner.calibration.release_fit`` leaves out a release node whose rows are
    all offline runs (``PLANNER_DONOR_NO_OFFLINE_NODES``: "1" / "0"; unset: the default).
    A switch of the fit: a profile fitted with it on holds no such node, so its rows'
    releases (and the releases that would borrow it) take the next release node or the fit
    over every release."""
    return _switch(NO_OFFLINE_NODES_ENV, NO_OFFLINE_NODES_DEFAULT)


def offline_only(modes: Iterable[str]) -> bool:
    """Whether every row of a release node is an offline run (``mode`` "offline": every
    request sent at once, the engine at its batch limit; a max-throughput table): such a
    node has seen no serving run's decode at a client's pace. False without rows.

    >>> offline_only(["offline", "offline"]), offline_only(["offline", "concurrency"])
    (True, False)
    """
    seen = False
    for m in modes:
        if m != "offline":
            return False
        seen = True
    return seen


def elsewhere_rank(distance: int, same_vendor: bool, datasheet_distance: float,
                   release_key: tuple, n_rows: int, gpu: str) -> tuple:  # fmt: skip
    """The sort key of a candidate donor node (lowest lends).

    Parameters
    ----------
    distance : int
        releases between the requested release and the node's
        (:func:`~planner.catalog.release_profile.release_distance`)
    same_vendor : bool
        the node's GPU is of the predicted GPU's vendor
    datasheet_distance : float
        :func:`~planner.catalog.siblings.sibling_distance` of the two GPUs (inf: unknown)
    release_key : tuple
        the node release's numbers (:func:`~planner.catalog.release_profile.release_order`
        ``[0]``): newer lends before older at a tie
    n_rows : int
        the node's fitted rows: more lends before fewer at a tie
    gpu : str
        the node's GPU id (a stable last tie-break)

    Returns
    -------
    tuple
        ``(distance, other vendor, datasheet distance, -release, -rows, gpu)``; with
        :func:`vendor_first`, ``(other vendor, distance, ...)``
    """
    d = datasheet_distance if math.isfinite(datasheet_distance) else math.inf
    newer = tuple(-x for x in release_key)
    if vendor_first():
        return (not same_vendor, distance, d, newer, -n_rows, gpu)
    return (distance, not same_vendor, d, newer, -n_rows, gpu)
