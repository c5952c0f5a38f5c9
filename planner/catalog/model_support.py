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

A record with ``served: false`` says that no release of the engine serves the architecture
(as of its ``as_of``, the newest release read named in ``checked_release``): Text Generation
Inference, in maintenance mode since December 2025, has no gpt-oss code path and pins a
``transformers`` that predates gpt-oss. :func:`model_support_problem` gives the one-line
reason, which ``Catalog.resolve`` (every command) and the recommender's option list
(stage ``model_support``) use.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from planner.catalog.records import Frozen, ModelArch, Sourced
from planner.errors import PlannerError
from planner.files import load_data_file

__all__ = [
    "ModelSupport",
    "check_model_served",
    "model_floor_record",
    "model_support_problem",
    "read_model_support",
]

FILE_NAME = "model_support.yaml"


class ModelSupport(Sourced):
    """The first release of ``framework`` that serves ``architecture``, or (``served``
    False) that no release serves it."""

    framework: str = Field(min_length=2)
    #: the HF ``model_type`` (``data/models.yaml`` ``architecture``)
    architecture: str = Field(min_length=2)
    #: model ids the record is limited to; empty: every model of the architecture
    models: tuple[str, ...] = ()
    #: the first release that serves it (a release text of the engine: ``0.10.1``, ``0.5.0rc2``);
    #: None only where ``served`` is False
    since: str | None = Field(default=None, min_length=1)
    #: False: no release of the engine serves the architecture (as of ``as_of``)
    served: bool = True
    #: the newest release whose source was read for a ``served: false`` record (``3.3.7``)
    checked_release: str | None = Field(default=None, min_length=1)
    #: the source's words, quoted
    quote: str = Field(min_length=10)

    @model_validator(mode="after")
    def _since_or_not_served(self) -> ModelSupport:
        if self.served and self.since is None:
            raise ValueError(f"{self.framework} / {self.architecture}: since is required")
        if not self.served and (self.since is not None or self.checked_release is None):
            raise ValueError(
                f"{self.framework} / {self.architecture}: a served: false record names "
                "checked_release and no since"
            )
        return self

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
    before one for its whole architecture), or None (no floor known; a ``served: false``
    record is no floor: :func:`model_support_problem` refuses the pair)."""
    hits = [r for r in records if r.framework == framework and r.served and r.applies_to(model)]
    hits.sort(key=lambda r: not r.models)
    return hits[0] if hits else None


def model_support_problem(
    records: tuple[ModelSupport, ...], framework: str | None, model: ModelArch
) -> str | None:
    """Why ``framework`` cannot serve ``model`` at all (a ``served: false`` record of
    ``data/model_support.yaml``), or None (served, or no record says).

    Parameters
    ----------
    records : the catalog's records (``Catalog.model_support``)
    framework : the framework id (None: nothing to check)
    model : the model (catalog record)

    Returns
    -------
    str or None
        one line: the engine, the model and its architecture, the newest release read, the
        source's words and the source
    """
    if framework is None:
        return None
    for r in records:
        if r.framework == framework and not r.served and r.applies_to(model):
            return (
                f"{framework} does not serve {model.id} ({r.architecture}) in any release "
                f"through {r.checked_release}: {r.quote} (source: {r.source}, as of {r.as_of})"
            )
    return None


def check_model_served(
    records: tuple[ModelSupport, ...], framework: str | None, model: ModelArch
) -> None:
    """Raise :class:`~planner.errors.PlannerError` when a ``served: false`` record says
    ``framework`` serves no release of ``model``'s architecture."""
    why = model_support_problem(records, framework, model)
    if why:
        raise PlannerError(f"framework {framework}: {why}")
