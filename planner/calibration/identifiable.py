"""Which parameters a node's rows can identify (the comm rule of s13-vllmdense).

A node's ``comm_eff`` is only seen through its rows with tensor parallelism (TP > 1): a
TP-1 row runs no all-reduce. When those rows all come from one publication, the fitted
``comm_eff`` is that one setup's (its checkpoint, launch flags, model size and TP), not the
engine's on that GPU, and nothing else in the node can check it. The vLLM/H100/fp8 dense
node is the case that showed it: its only TP > 1 rows are dstack's Llama-3.1-405B TP8 runs,
which set comm_eff 0.113 against 0.18 for the node above it, and every dense vLLM fp8 answer
on Hopper took it (docs/changes/2026-12-09/vllmh200.md).

:data:`COMM_NEEDS_TWO_SOURCES` (a switch, default off; ``docs/changes/2026-12-10/vllmdense.md`` has the
held-out scores): with it on, such a node keeps its parent's ``comm_eff`` (the prior), as a
node of one publication already keeps its parent's overheads
(:data:`planner.calibration.fit.ONE_SOURCE_FIELDS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

#: off by default: a node whose TP > 1 rows come from fewer than two publications keeps its
#: parent's comm_eff when on (module docstring)
COMM_NEEDS_TWO_SOURCES = False
#: the parameters only rows with TP > 1 inform
COMM_FIELDS = ("comm_eff",)


class _Row(Protocol):
    source: str
    tp: int


def comm_sources(rows: Sequence[_Row]) -> int:
    """Number of distinct publications among ``rows`` with TP > 1 [count]."""
    return len({r.source for r in rows if r.tp > 1})


def identifiable(fields: tuple[str, ...], rows: Sequence[_Row]) -> tuple[str, ...]:
    """``fields`` without :data:`COMM_FIELDS` when :data:`COMM_NEEDS_TWO_SOURCES` is on and
    the TP > 1 rows of ``rows`` come from fewer than two publications; else ``fields``.

    Parameters
    ----------
    fields : the parameters the fit would move
    rows : the node's rows (anything with ``source`` and ``tp`` [GPUs])
    """
    if not COMM_NEEDS_TWO_SOURCES or comm_sources(rows) >= 2:
        return fields
    return tuple(f for f in fields if f not in COMM_FIELDS)
