"""Which weight formats a serving engine serves for a mixture-of-experts architecture
(``data/moe_formats.yaml``).

A MoE checkpoint runs only where the engine has a fused-MoE kernel for its format, and the
model's own code path accepts it: TensorRT-LLM serves DeepSeek-V3/R1 in FP8 block scales,
NVFP4 and W4AFP8, not in W8A8 INT8, although it runs INT8 for dense Llama models. One record
per (architecture, framework) lists the formats the engine's documentation (or source) says
it serves, with the public checkpoints that exist in each, and the catalog formats it says
it does not (``refuses``), each with its source. Only a format a record refuses is an error
(:func:`model_format_problem`); where no record speaks of a (architecture, framework,
format), nothing changes. ``architecture`` is the model's ``model_type``
(``ModelArch.architecture``: ``deepseek_v3`` covers DeepSeek-V3, R1 and every checkpoint of
that code path).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from planner.catalog.records import Framework, Frozen, ModelArch, Precision, Sourced
from planner.errors import PlannerError
from planner.files import load_data_file

__all__ = [
    "EngineFormats",
    "FormatRefused",
    "FormatServed",
    "model_format_problem",
    "read_moe_formats",
]

FILE_NAME = "moe_formats.yaml"


class FormatServed(Sourced):
    """One format an engine serves for the architecture, with public checkpoints in it."""

    #: the catalog precision id (``data/precisions.yaml``); None for a format the catalog
    #: does not model (W4AFP8: int4 expert weights with fp8 activations)
    precision: str | None = None
    #: the format as the engine names it (``FP8 block scales``, ``NVFP4``, ``W4AFP8``)
    format: str = Field(min_length=2)
    #: Hugging Face repositories published in this format
    checkpoints: tuple[str, ...] = ()


class FormatRefused(Sourced):
    """A catalog format the engine does not serve for the architecture, and why."""

    precision: str = Field(min_length=2)
    why: str = Field(min_length=10)


class EngineFormats(Frozen):
    """What one engine serves for one MoE architecture."""

    architecture: str = Field(min_length=2)
    framework: str = Field(min_length=2)
    serves: tuple[FormatServed, ...] = Field(min_length=1)
    refuses: tuple[FormatRefused, ...] = ()

    @model_validator(mode="after")
    def _disjoint(self) -> EngineFormats:
        served = {s.precision for s in self.serves if s.precision}
        both = served & {r.precision for r in self.refuses}
        if both:
            raise ValueError(
                f"{self.architecture} / {self.framework}: {sorted(both)} both served and refused"
            )
        return self

    def served_text(self) -> str:
        """``fp8 (FP8 block scales) / fp4 (NVFP4) / W4AFP8`` for messages."""
        parts = []
        for s in self.serves:
            if s.precision is None:
                parts.append(s.format)
            elif s.format.lower() == s.precision:
                parts.append(s.precision)
            else:
                parts.append(f"{s.precision} ({s.format})")
        return " / ".join(dict.fromkeys(parts))


class _File(Frozen):
    moe_formats: tuple[EngineFormats, ...]


def read_moe_formats(data_dir: Path) -> tuple[EngineFormats, ...]:
    """The records of ``data_dir/moe_formats.yaml`` (empty where the file is absent); a
    repeated (architecture, framework) is an error naming the file."""
    path = Path(data_dir) / FILE_NAME
    f = load_data_file(path, _File)
    if f is None:
        return ()
    recs = f.moe_formats
    seen: set[tuple[str, str]] = set()
    for r in recs:
        key = (r.architecture, r.framework)
        if key in seen:
            raise PlannerError(f"{path.name}: two records for {r.architecture} / {r.framework}")
        seen.add(key)
    return recs


def model_format_problem(
    records: tuple[EngineFormats, ...],
    model: ModelArch,
    framework: Framework | None,
    precision: Precision,
) -> str | None:
    """Why ``framework`` cannot serve ``model`` in ``precision`` (a record of
    ``data/moe_formats.yaml`` refuses it), or None (served, or no record says).

    Returns
    -------
    str or None
        one line: what the engine serves for the architecture, that the format is not
        among them, why, and the source
    """
    if framework is None or not model.architecture:
        return None
    for rec in records:
        if rec.architecture != model.architecture or rec.framework != framework.id:
            continue
        for r in rec.refuses:
            if r.precision == precision.id:
                return (
                    f"{framework.id} serves {model.id} ({rec.architecture}) in "
                    f"{rec.served_text()}; {precision.id} is not among them: {r.why} "
                    f"(source: {r.source}, as of {r.as_of})"
                )
    return None
