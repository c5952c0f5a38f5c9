"""GPUs a serving framework's builds do not run on although it runs on their vendor
(``data/frameworks.yaml``, key ``gpu_support``).

``Framework.vendors`` says which vendors an engine runs on; within a vendor an engine still
runs only on the compute capabilities its kernels are compiled for. LMDeploy's TurboMind
compiles ``sm_100a`` (B200 / GB200, compute capability 10.0) since v0.13.0 and no ``sm_103``
(B300 / GB300, Blackwell Ultra): an ``a`` (architecture-specific) binary is not guaranteed to
run on another compute capability, and ``-real`` embeds no PTX to JIT. One record per
framework lists the catalog GPUs it does not run on, with why and the source. A GPU no
record lists keeps today's behaviour (the vendor rule alone).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from planner.catalog.records import Frozen, Sourced
from planner.errors import first_validation_error

__all__ = ["GpuRefused", "read_gpu_support"]

KEY = "gpu_support"


class GpuRefused(Sourced):
    """GPUs ``framework`` does not run on, and why."""

    framework: str = Field(min_length=2)
    #: catalog GPU ids (``data/hardware.yaml``)
    gpus: tuple[str, ...] = Field(min_length=1)
    #: one sentence: which builds, which compute capabilities
    why: str = Field(min_length=10)


class _File(Frozen):
    gpu_support: tuple[GpuRefused, ...] = ()


def read_gpu_support(raw: Any, path: Path) -> tuple[GpuRefused, ...]:
    """The ``gpu_support`` records of the parsed ``frameworks.yaml`` ``raw`` (empty without
    the key); a record that does not validate is a one-line error naming the file."""
    if not isinstance(raw, dict) or KEY not in raw:
        return ()
    try:
        return _File.model_validate({KEY: raw[KEY]}).gpu_support
    except ValidationError as e:
        raise first_validation_error(Path(path).name, e, 160) from None
