"""The first release of each engine that serves a model architecture
(``data/model_support.yaml``).

An engine release older than a model cannot serve it: TensorRT-LLM 0.17 (January 2025)
predates gpt-oss (August 2025). One record per (framework, architecture) names the first
release that a source says serves the architecture (release notes, the engine's or the
model's documentation, or a published run naming a final release), with the source. The
floor of a model is the record of its ``architecture`` (the HF ``model_type``,
``ModelArch.architecture``); a record that lists ``models`` applies to those models only
(Llama 3.1's rope scaling needs a newer TensorRT-LLM than Llama 2, on one ``llama`` code
path). An architecture without a record has no floor: nothing changes.
:func:`planner.catalog.release_profile.release_floor` combines this floor with the layout's
(``layout_release_floor``).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from planner.catalog.records import Frozen, ModelArch, Sourced
from planner.errors import PlannerError
from planner.files import load_data_file

__all__ = ["ModelSupport", "model_floor_record", "read_model_support"]

FILE_NAME = "model_support.yaml"


class ModelSupport(Sourced):
    """The first release of ``framework`` that serves ``architecture``."""

    framework: str = Field(min_length=2)
    #: the HF ``model_type`` (``data/models.yaml`` ``architecture``)
    architecture: str = Field(min_length=2)
    #: model ids the record is limited to; empty: every model of the architecture
    models: tuple[str, ...] = ()
    #: the first release that serves it (a release text of the engine: ``0.10.1``, ``0.5.0rc2``)
    since: str = Field(min_length=1)
    #: the source's words, quoted
    quote: str = Field(min_length=10)

    def applies_to(self, model: ModelArch) -> bool:
        """Whether the record speaks of ``model``."""
        if model.architecture != self.architecture:
            return False
        return not self.models or model.id in self.models


class _File(Frozen):
    model_support: tuple[ModelSupport, ...]


def read_model_support(data_dir: Path) -> tuple[ModelSupport, ...]:
    """The records of ``data_dir/model_support.yaml`` (empty where the file is absent); two
    records for one (framework, architecture, models) are an error naming the file."""
    path = Path(data_dir) / FILE_NAME
    f = load_data_file(path, _File)
    if f is None:
        return ()
    recs = f.model_support
    seen: set[tuple] = set()
    for r in recs:
        key = (r.framework, r.architecture, r.models)
        if key in seen:
            raise PlannerError(f"{path.name}: two records for {r.framework} / {r.architecture}")
        seen.add(key)
    return recs


def model_floor_record(
    records: tuple[ModelSupport, ...], framework: str, model: ModelArch
) -> ModelSupport | None:
    """The record giving ``framework``'s first release for ``model`` (one listing the model
    before one for its whole architecture), or None (no floor known)."""
    hits = [r for r in records if r.framework == framework and r.applies_to(model)]
    hits.sort(key=lambda r: not r.models)
    return hits[0] if hits else None
