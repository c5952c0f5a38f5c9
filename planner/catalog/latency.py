"""Latency terms of the serving simulator that the throughput fit cannot see
(``data/calibration/latency.yaml``, written by ``scripts/latency_rows.py --write``).

``prefill_scale`` multiplies the prompt chunks' share of an iteration's time (the step
time of the iteration minus the same step of its decoders alone), per serving engine and
model family (:func:`latency_family`: ``mla`` for latent-attention models such as
DeepSeek-V3, whose prompts run the decompressed multi-head form; else ``moe`` / ``dense``). The throughput fit (``planner calibrate``) sets the step
model's efficiencies from rows whose time is mostly decode; the public serving runs' TTFT
says how much slower (or faster) their prompts ran than that step model predicts. A
(framework, family) with no fitted value takes its family's value over all engines, else 1.

``trtllm_first_token`` (:class:`FirstTokenPath`) is the latency of trtllm-serve's first-token
path on TensorRT-LLM's PyTorch backend (:mod:`planner.benchmarks.scheduler_waits`): outside
the engine loop, added to every TTFT and E2E of a TensorRT-LLM deployment at a release from
``since_release`` (1.0, the PyTorch backend by default; :func:`first_token_path`), through
:attr:`planner.serving.replica.EngineConfig.first_token_s`.
"""

from __future__ import annotations

import datetime as _dt
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import Field

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Frozen, version_tuple
from planner.errors import PlannerError
from planner.files import load_yaml

LATENCY_FILE = DATA_DIR / "calibration" / "latency.yaml"

#: whether predictions of public serving rows (``planner.benchmarks.serving_rows``,
#: ``mlperf_latency``) apply the fitted prefill scale; the product's replicas (recommend,
#: capacity, simulate, the disaggregated pools) never read it (``build_replica`` takes
#: ``prefill_scale=1``). Off. Measured 2026-12-07 held out by source
#: (``scripts/latency_rows.py``; docs/changes s8-ttft): on SGLang / vLLM's own groups TTFT
#: 24.9% / -18.0% -> 21.4% / -11.1% but TPOT 26.2% -> 28.4%: at 1-4 clients the scale costs
#: TPOT nothing (SGLang AMD 16.9% -> 17.2%) and fixes TTFT (22.5% -> 9.8%); above 16 clients
#: it adds to decode steps the step model already makes too slow (SGLang AMD 17-64 clients
#: TPOT +60.8% -> +65.6%). Prefill is slower than the step model and decode faster, on the
#: same runs: the split belongs to the step fit. (The earlier reason, disaggregated prefill
#: pools 31% slow, no longer holds: those pools never take the scale.)
APPLY_PREFILL_SCALE = False


class PrefillScale(Frozen):
    """One fitted prefill scale: ``framework`` None = every engine of the family."""

    framework: str | None = None
    family: str = Field(pattern="^(dense|moe|mla)$")
    scale: float = Field(gt=0)
    n_rows: int = Field(ge=0)
    n_sources: int = Field(ge=0)
    #: p10 / p90 of measured / predicted TTFT of the held-out rows after the scale
    ttft_ratio_p10: float | None = None
    ttft_ratio_p90: float | None = None


class FirstTokenPath(Frozen):
    """trtllm-serve's first-token latency on TensorRT-LLM's PyTorch backend: added to TTFT and
    E2E, outside the engine loop (:mod:`planner.benchmarks.scheduler_waits`)."""

    latency_s: float = Field(ge=0)
    source: str = ""
    as_of: _dt.date | None = None
    n_rows: int = Field(ge=0)
    n_sources: int = Field(ge=0)
    #: the first release whose trtllm-serve runs the PyTorch backend by default
    since_release: str = "1.0"
    note: str = ""

    def describe(self) -> str:
        return (
            f"trtllm-serve first-token path +{self.latency_s * 1e3:.0f} ms (fitted, "
            f"{self.n_rows} rows, {self.n_sources} sources)"
        )


class LatencyTerms(Frozen):
    """The file's content: fitted terms with their provenance."""

    source: str
    as_of: _dt.date
    method: str
    prefill_scales: tuple[PrefillScale, ...] = ()
    #: the TTFT band: p10 / p90 of measured / predicted TTFT over every held-out public
    #: serving row (each predicted with the scale fitted without its source)
    ttft_ratio_p10: float | None = None
    ttft_ratio_p90: float | None = None
    #: trtllm-serve's first-token latency (None: not fitted, 0 is used)
    trtllm_first_token: FirstTokenPath | None = None

    def prefill_scale(self, framework: str | None, family: str) -> tuple[float, str]:
        """(scale, provenance) of an engine and model family: the engine's own value, else
        the family's over all engines, else (1.0, 'none')."""
        for fw in (framework, None):
            for p in self.prefill_scales:
                if p.framework == fw and p.family == family:
                    return p.scale, f"{p.framework or 'all engines'}/{p.family}"
        return 1.0, "none"

    def ttft_band(self, framework: str | None, family: str) -> tuple[float, float] | None:
        """(p10, p90) of measured / predicted TTFT of the group the scale came from."""
        for fw in (framework, None):
            for p in self.prefill_scales:
                if p.framework == fw and p.family == family and p.ttft_ratio_p10 is not None:
                    return p.ttft_ratio_p10, p.ttft_ratio_p90 or p.ttft_ratio_p10
        return None


@lru_cache(maxsize=4)
def load_latency(path: str | Path | None = None) -> LatencyTerms | None:
    """The latency terms of ``path`` (default the bundled file); None when it is absent."""
    p = Path(path) if path else LATENCY_FILE
    if not p.exists():
        return None
    try:
        return LatencyTerms.model_validate(load_yaml(p.read_text(), p))
    except ValueError as e:
        raise PlannerError(f"{p}: {str(e).splitlines()[0]}") from None


def latency_family(model) -> str:
    """``mla``, ``moe`` or ``dense``: the family of a
    :class:`~planner.catalog.records.ModelArch` whose prompts share a prefill scale."""
    if model.is_mla:
        return "mla"
    return "moe" if model.is_moe else "dense"


def prefill_scale(framework: str | None, family: str) -> float:
    """The bundled prefill scale of ``framework`` (an id) and :func:`latency_family`."""
    terms = load_latency()
    return 1.0 if terms is None else terms.prefill_scale(framework, family)[0]


def first_token_path(framework: str | None, release: Any = None) -> FirstTokenPath | None:
    """The bundled first-token latency of a deployment of ``framework`` (an id) at
    ``release`` (a version text or a parsed release; None: the current one), or None when it has none: only TensorRT-LLM served
    by trtllm-serve, whose default backend is PyTorch from ``since_release`` (1.0) on; an
    older release (the TensorRT engine flow) has none."""
    if release is not None and not isinstance(release, str):  # a parsed EngineRelease
        release = str(getattr(release, "release", "") or "") or None
    terms = load_latency()
    ft = None if terms is None else terms.trtllm_first_token
    if framework != "trtllm" or ft is None or ft.latency_s <= 0:
        return None
    v = version_tuple(release) if release else None
    if v is not None and v < (version_tuple(ft.since_release) or (0, 0, 0)):
        return None
    return ft
