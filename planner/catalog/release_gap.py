"""What an option predicted from an older engine generation should say
(``data/release_gaps.yaml``; s13-vllmdense).

With no release named, a plan takes the newest release of the engine with a fit on the GPU
family and precision (:func:`planner.catalog.release_profile.choose_release`). For vLLM on
Hopper at fp8 with a dense model that is a V0 node (0.6.3.post2.dev308, one 2024 source),
while every vLLM release since 0.8.0 is V1 (``generations`` of ``data/frameworks.yaml``).
Published V1 rows on those GPUs run 2-2.6x faster than that node predicts
(docs/changes/2026-12-09/vllmh200.md, MLPerf Inference v5.1). The prediction is not changed
here (no V1 dense node can be fitted: issue 31); :func:`generation_fields` says it next to
the option:

* ``generation_note``: one line, e.g. "predicted from vllm 0.6.3.post2.dev308 (V0); vllm's
  newest release 0.34.0 is V1; vllm 0.9.2 (V1) measured 2.13-2.64x this throughput on
  nvidia-h200-sxm (8 rows, ...)";
* ``generation_gap``: the matching record of ``data/release_gaps.yaml`` (None where no
  published row of the newer generation was predicted that way), with its source.

The stored ratios are written by ``scripts/release_mlperf51.py --write-gaps`` from the
bundled profile; tests/test_release_gap.py recomputes them.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import Field

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Frozen, Sourced
from planner.files import load_data_file

__all__ = ["ReleaseGap", "generation_fields", "release_gaps"]


class ReleaseGap(Sourced):
    """Measured / predicted throughput of published rows of a newer engine generation on one
    GPU, predicted with the older-generation release node a plan takes by default."""

    engine: str = Field(min_length=2)
    gpu: str = Field(min_length=2)
    precision: str = Field(min_length=2)
    family: str = Field(min_length=2, description="model family of the rows (dense, moe)")
    predicted_from: str = Field(min_length=1, description="the release node used [release]")
    measured_release: str = Field(min_length=1, description="the rows' release [release]")
    rows: tuple[str, ...] = Field(min_length=1, description="row ids of data/benchmarks")
    ratio_low: float = Field(gt=0, description="smallest measured / predicted [-]")
    ratio_high: float = Field(gt=0, description="largest measured / predicted [-]")


class _File(Frozen):
    gaps: tuple[ReleaseGap, ...] = ()


@lru_cache(maxsize=4)
def release_gaps(data_dir: str | None = None) -> tuple[ReleaseGap, ...]:
    """The records of ``data/release_gaps.yaml`` (empty where the file is absent)."""
    f = load_data_file(Path(data_dir or DATA_DIR) / "release_gaps.yaml", _File, 160)
    return () if f is None else f.gaps


@lru_cache(maxsize=32)
def _newest(engine: str, data_dir: str | None) -> str | None:
    """The newest release of ``engine`` its package index lists, or None."""
    from planner.catalog.releases import _order, published_releases

    rels = published_releases(data_dir).get(engine) or []
    return max(rels, key=_order).release if rels else None


def generation_fields(
    engine: str,
    release: str | None,
    gpu: str,
    precision: str,
    family: str | None,
    catalog: Any = None,
    data_dir: str | None = None,
) -> dict[str, Any]:
    """``generation_note`` and ``generation_gap`` of an option (module docstring): both None
    unless ``release`` (the release the option is predicted from) is of an older generation
    of ``engine`` than its newest published release.

    Parameters
    ----------
    engine, gpu, precision : ids of the option's framework, GPU and weight precision
    release : the release whose node predicts the option (None: the fit over every release)
    family : the model's family (dense, moe)
    """
    from planner.catalog.releases import generation

    out: dict[str, Any] = {"generation_note": None, "generation_gap": None}
    newest = _newest(engine, data_dir)
    if not release or not newest:
        return out
    old, new = generation(engine, release, catalog), generation(engine, newest, catalog)
    if old is None or new is None or old == new:
        return out
    note = f"predicted from {engine} {release} ({old}); {engine}'s newest release {newest} is {new}"
    gap = next(
        (
            g
            for g in release_gaps(data_dir)
            if (g.engine, g.gpu, g.precision, g.predicted_from) == (engine, gpu, precision, release)
            and g.family == (family or g.family)
        ),
        None,
    )
    if gap is not None:
        gen = generation(engine, gap.measured_release, catalog)
        note += (
            f"; {engine} {gap.measured_release} ({gen}) measured {gap.ratio_low:.2f}-"
            f"{gap.ratio_high:.2f}x this prediction's throughput on {gpu} ({len(gap.rows)} rows, "
            f"{gap.source.split(':')[0]}, {gap.as_of}); the fleet is sized on the {old} "
            f"prediction (no {gen} fit of this family on this GPU)"
        )
        out["generation_gap"] = {
            **gap.model_dump(mode="json", exclude={"unverified", "notes"}),
            "as_of": str(gap.as_of),
        }
    out["generation_note"] = note
    return out
