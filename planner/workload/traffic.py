"""Arrival processes: traces, Poisson / gamma traffic with a daily profile, prefix reuse."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from planner.catalog.records import Frozen
from planner.errors import PlannerError
from planner.workload.lengths import MIN_RPS, _finite_cell, _read_csv_rows

_Z90 = 1.2815515655446004  # standard normal quantiles


# --------------------------------------------------------------------------- traces
@dataclass(frozen=True)
class Trace:
    """A request trace: arrival times [s] from 0, prompt and answer lengths [tokens]."""

    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray

    @property
    def mean_rps(self) -> float:
        span = float(self.arrival_s[-1] - self.arrival_s[0]) if len(self.arrival_s) > 1 else 0.0
        return (len(self.arrival_s) - 1) / span if span > 0 else float("inf")


@lru_cache(maxsize=16)
def load_trace(path: str) -> Trace:
    """Read a CSV trace with columns ``timestamp,input_tokens,output_tokens``.

    Timestamps are seconds (any origin; sorted and shifted to start at 0).
    """
    rows = _read_csv_rows(path, "trace")
    need = ("timestamp", "input_tokens", "output_tokens")
    if not rows or any(c not in rows[0][1] for c in need):
        raise PlannerError(f"{path}: a trace needs a header with columns {', '.join(need)}")
    t = np.array([_finite_cell(r, "timestamp", path, ln) for ln, r in rows])
    ilen, olen = [], []
    for ln, r in rows:
        for col, dst in (("input_tokens", ilen), ("output_tokens", olen)):
            x = _finite_cell(r, col, path, ln)
            if x <= 0 or x >= 2**62:
                raise PlannerError(
                    f"{path}: line {ln}: {col} must be > 0 (a token count), got {r[col]!r}"
                )
            dst.append(int(x))
    i = np.array(ilen, dtype=np.int64)
    o = np.array(olen, dtype=np.int64)
    if (i <= 0).any() or (o <= 0).any():
        raise PlannerError(f"{path}: input_tokens and output_tokens must be > 0 in every row")
    if len(np.unique(t)) < 2:
        raise PlannerError(
            f"{path}: a trace needs at least two distinct timestamps to define an arrival rate "
            f"(got {len(t)} row{'s' if len(t) != 1 else ''}"
            + (f", all at {t[0]:g} s)" if len(t) else ")")
        )
    order = np.argsort(t, kind="stable")
    t = t[order] - t[order][0]
    return Trace(t, i[order], o[order])


# --------------------------------------------------------------------------- traffic
class Traffic(Frozen):
    """Request arrivals.

    ``daily_profile`` holds 24 hourly multipliers; hour h runs at
    ``mean_rps * m_h / mean(m)`` so the day's mean stays ``mean_rps``. The planning peak is
    the larger of ``peak_rps`` and the busiest hour.
    """

    mean_rps: float | None = Field(
        None, ge=MIN_RPS, le=1e7, description="mean arrival rate [req/s]"
    )
    peak_rps: float | None = Field(
        None, ge=MIN_RPS, le=1e7, description="peak arrival rate to plan for [req/s]"
    )
    arrival: Literal["poisson", "gamma", "uniform", "trace"] = "poisson"
    cv: float | None = Field(
        None, gt=0, description="coefficient of variation of inter-arrival times (gamma)"
    )
    trace_path: str | None = None
    daily_profile: tuple[float, ...] | None = None

    @model_validator(mode="before")
    @classmethod
    def _trace_path_means_trace(cls, data: Any) -> Any:
        """A ``trace_path`` without an ``arrival`` replays the trace."""
        if isinstance(data, dict) and data.get("trace_path") and data.get("arrival") is None:
            return {**data, "arrival": "trace"}
        return data

    @model_validator(mode="after")
    def _check(self) -> Traffic:
        if self.arrival == "gamma" and self.cv is None:
            raise ValueError(
                "arrival 'gamma' needs cv (coefficient of variation, e.g. 2 for bursty)"
            )
        if self.cv is not None:
            c2 = self.cv * self.cv
            if not (math.isfinite(c2) and c2 > 0 and math.isfinite(1.0 / c2)):
                raise ValueError(
                    f"cv ({self.cv:g}) is out of range: cv squared must be a finite number > 0"
                )
        if self.arrival == "trace" and not self.trace_path:
            raise ValueError("arrival 'trace' needs trace_path")
        # a field this arrival mode would ignore is an error, never silence
        if self.trace_path and self.arrival != "trace":
            raise ValueError(
                f"trace_path is only read with arrival: trace (arrival is '{self.arrival}'); "
                "set arrival: trace to replay the trace, or remove trace_path"
            )
        if self.cv is not None and self.arrival != "gamma":
            raise ValueError(
                f"cv is only read with arrival: gamma (arrival is '{self.arrival}'); "
                "remove cv or set arrival: gamma"
            )
        if self.arrival != "trace" and self.mean_rps is None and self.peak_rps is None:
            raise ValueError("give mean_rps or peak_rps (or arrival: trace with trace_path)")
        if self.mean_rps and self.peak_rps and self.peak_rps < self.mean_rps:
            raise ValueError(f"peak_rps ({self.peak_rps:g}) is below mean_rps ({self.mean_rps:g})")
        if self.daily_profile is not None:
            if len(self.daily_profile) != 24:
                raise ValueError(
                    f"daily_profile needs 24 hourly multipliers, got {len(self.daily_profile)}"
                )
            if any(m < 0 for m in self.daily_profile) or sum(self.daily_profile) <= 0:
                raise ValueError("daily_profile multipliers must be >= 0 and not all zero")
            if self.mean_rps is None:
                raise ValueError("daily_profile needs mean_rps")
            busiest = self.mean_rps * (max(self.daily_profile) / (sum(self.daily_profile) / 24))
            if not (math.isfinite(busiest) and math.isfinite(sum(self.daily_profile))):
                raise ValueError("daily_profile: the busiest hour's rate is not a finite number")
        return self

    def _trace(self) -> Trace:
        return load_trace(self.trace_path)

    def base_mean_rps(self) -> float:
        if self.mean_rps is not None:
            return float(self.mean_rps)
        if self.arrival == "trace":
            return self._trace().mean_rps
        return float(self.peak_rps)

    def hourly_rps(self) -> np.ndarray:
        """Arrival rate of each hour of the day [req/s] (flat without a profile)."""
        m = self.base_mean_rps()
        if self.daily_profile is None:
            return np.full(24, m)
        prof = np.asarray(self.daily_profile, float)
        return m * prof / prof.mean()

    def peak(self) -> float:
        """The rate to plan for [req/s]: max(peak_rps, busiest hour, mean)."""
        cands = [float(self.hourly_rps().max())]
        if self.peak_rps is not None:
            cands.append(float(self.peak_rps))
        return max(cands)

    def peak_above_curve_note(self) -> str:
        """A sentence when ``peak_rps`` is above the daily curve's busiest hour (the fleet is
        sized for the peak, the autoscaled GPU-hours follow the curve), else ""."""
        if self.daily_profile is None or self.peak_rps is None:
            return ""
        busiest = float(self.hourly_rps().max())
        if not self.peak_rps > busiest * (1 + 1e-9):
            return ""
        return (
            f"peak {self.peak_rps:g} req/s is above the daily curve's busiest hour "
            f"({busiest:.4g} req/s): the fleet is sized for the peak (a burst above the day); "
            f"autoscaled GPU-hours follow the curve (mean {self.base_mean_rps():.4g} req/s); "
            "give --mean-rps to move the day"
        )

    def burstiness(self) -> float:
        """Squared coefficient of variation of the inter-arrival gaps (1 for Poisson).

        Gamma arrivals: ``cv**2``; constant spacing: 0; a trace: measured on its gaps.
        """
        if self.arrival == "poisson":
            return 1.0
        if self.arrival == "gamma":
            return float(self.cv * self.cv)
        if self.arrival == "uniform":
            return 0.0
        gaps = np.diff(self._trace().arrival_s)
        m = float(gaps.mean()) if len(gaps) else 0.0
        return float(gaps.var() / (m * m)) if m > 0 else 1.0

    def unit_arrivals(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Arrival times of ``n`` requests at 1 req/s [s]; divide by a rate to rescale.

        Drawing at unit rate and rescaling gives common random numbers across rates, so a
        bisection over the rate sees the same request sequence each time.
        """
        n = int(n)
        if self.arrival == "poisson":
            gaps = rng.exponential(1.0, n)
        elif self.arrival == "gamma":
            k = 1.0 / (self.cv * self.cv)
            gaps = rng.gamma(k, 1.0 / k, n)
        elif self.arrival == "uniform":
            gaps = np.ones(n)
        else:
            tr = self._trace()
            t = _tile_trace_times(tr.arrival_s, n)
            return t * tr.mean_rps if np.isfinite(tr.mean_rps) else t
        t = np.cumsum(gaps)
        return t - t[0]


def _tile_trace_times(t: np.ndarray, n: int) -> np.ndarray:
    if n <= len(t):
        return np.array(t[:n], dtype=float)
    gap = (t[-1] - t[0]) / max(len(t) - 1, 1) if len(t) > 1 else 1.0
    reps = math.ceil(n / len(t))
    span = t[-1] - t[0] + gap
    return np.concatenate([t + r * span for r in range(reps)])[:n]


# --------------------------------------------------------------------------- prefix reuse
class PrefixReuse(Frozen):
    """Prompt tokens that need no prefill because the engine's prefix cache holds them.

    ``shared_prefix_tokens``: a system prompt every request starts with (part of the
    prompt length); its KV blocks are shared by all running requests.
    ``cache_hit_rate``: fraction of the remaining prompt tokens found in the cache
    (multi-turn history, re-used RAG documents); they skip compute but occupy the
    request's own KV blocks. At least one prompt token is always computed.
    """

    shared_prefix_tokens: int = Field(0, ge=0)
    cache_hit_rate: float = Field(0.0, ge=0, lt=1)
