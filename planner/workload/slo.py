"""Service-level objectives: TTFT / TPOT / E2E targets at percentiles plus an attainment target."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import Field, field_validator

from planner.catalog.records import Frozen
from planner.errors import shown

_Z90 = 1.2815515655446004  # standard normal quantiles


# --------------------------------------------------------------------------- percentiles
def sorted_percentiles(xs: np.ndarray, qs: Sequence[float]) -> list[float]:
    """``np.percentile(xs, qs)`` (its default method, ``linear``) of an ascending-sorted,
    NaN-free, non-empty float array, bit for bit, without numpy's per-call overhead
    (~50 us a call; a What-if change takes ~30 of them, issue 18).

    Each q (0..100) sits at the virtual index ``v = (n - 1) * (q / 100)`` between the
    order statistics ``a = xs[floor(v)]`` and ``b`` (the next one), weight ``g = v - floor(v)``;
    the value is ``a + (b - a) * g``, or ``b - (b - a) * (1 - g)`` when ``g >= 0.5`` (numpy's
    ``_lerp``, the same float operations in the same order). An index past the end takes
    the last value (numpy then uses the index -1 for both neighbours).
    """
    n = len(xs)
    out = []
    for q in qs:
        v = (n - 1) * (float(q) / 100)
        if v >= n - 1:  # numpy: both neighbours at index -1, g = v - (-1)
            lo = hi = -1
        elif v < 0:
            lo = hi = 0
        else:
            lo = math.floor(v)
            hi = lo + 1
        g = v - lo
        a, b = float(xs[lo]), float(xs[hi])
        d = b - a
        out.append(b - d * (1 - g) if g >= 0.5 else a + d * g)
    return out


def _percentile_finite(x: np.ndarray, q: float) -> float:
    """``np.percentile`` of ``x`` without its NaNs (0.0 when every value is NaN): what
    :func:`sorted_percentiles` gives for those values sorted, bit for bit, from a partial
    sort (it reads only the two order statistics around the virtual index, which
    ``np.partition`` puts in place in linear time)."""
    v = x[~np.isnan(x)]
    n = len(v)
    if n == 0:
        return 0.0
    i = (n - 1) * (float(q) / 100)
    lo = min(max(math.floor(i), 0), n - 1)
    return sorted_percentiles(np.partition(v, (lo, min(lo + 1, n - 1))), (q,))[0]


# --------------------------------------------------------------------------- SLOs
_PCT_NAMES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9, "median": 50.0}


class SloTarget(Frozen):
    """One latency threshold at one percentile: ``percentile`` of the metric <= ``max_s``."""

    max_s: float = Field(gt=0, description="threshold [s]")
    percentile: float = Field(99.0, gt=0, le=100, description="p50 / p90 / p99 or a number")

    @field_validator("percentile", mode="before")
    @classmethod
    def _pct(cls, v: Any) -> Any:
        if isinstance(v, str):
            key = v.strip().lower()
            if key in _PCT_NAMES:
                return _PCT_NAMES[key]
            if key.startswith("p"):
                try:
                    return float(key[1:])
                except ValueError:
                    pass
            raise ValueError(f"percentile must be p50, p90, p99 or a number, got {shown(v)}")
        return v

    @property
    def label(self) -> str:
        return f"p{self.percentile:g}"


class SLO(Frozen):
    """Latency targets and, optionally, the share of requests that must meet all of them.

    A scenario meets its SLO when each given metric's percentile is within its threshold
    and, when ``attainment`` is set, at least that fraction of the requests meet every
    threshold at once (a joint condition: with ``attainment: 0.99`` a p90 target behaves
    like a p99 one for the requests that also carry other targets). Goodput counts the
    requests that met every threshold.
    """

    ttft: SloTarget | None = None
    tpot: SloTarget | None = None
    e2e: SloTarget | None = None
    attainment: float | None = Field(None, gt=0, le=1)

    def targets(self) -> dict[str, SloTarget]:
        return {
            k: v
            for k, v in (("ttft", self.ttft), ("tpot", self.tpot), ("e2e", self.e2e))
            if v is not None
        }

    def scaled(self, factor: float) -> SLO:
        """The same SLO with every threshold multiplied by ``factor``."""
        upd = {
            k: t.model_copy(update={"max_s": t.max_s * factor}) for k, t in self.targets().items()
        }
        return self.model_copy(update=upd)

    def evaluate(
        self,
        ttft_s: np.ndarray,
        tpot_s: np.ndarray,
        e2e_s: np.ndarray,
        *,
        sorted_s: Mapping[str, np.ndarray] | None = None,
    ) -> dict[str, Any]:
        """Attainment and pass/fail on per-request latencies [s].

        TPOT is NaN for one-token answers; such a request meets any TPOT threshold.
        ``sorted_s`` (optional): per metric name, its latencies without NaN, sorted
        ascending, when the caller has them already (one sort serves both).

        Returns
        -------
        dict
            ``ok``, ``attainment`` (fraction meeting every threshold), ``met`` (bool array),
            and per metric ``<m>_<pct>_s`` (the percentile) and ``<m>_ok``.
        """
        ttft_s = np.asarray(ttft_s, float)
        n = len(ttft_s)
        met = np.ones(n, dtype=bool)
        out: dict[str, Any] = {}
        ok = True
        for name, tgt in self.targets().items():
            x = np.asarray({"ttft": ttft_s, "tpot": tpot_s, "e2e": e2e_s}[name], float)
            good = np.isnan(x) | (x <= tgt.max_s)
            met &= good
            if sorted_s is None:
                pv = _percentile_finite(x, tgt.percentile)
            else:
                vals = sorted_s[name]
                pv = sorted_percentiles(vals, (tgt.percentile,))[0] if len(vals) else 0.0
            out[f"{name}_{tgt.label}_s"] = pv
            out[f"{name}_ok"] = pv <= tgt.max_s
            ok &= pv <= tgt.max_s
        att = np.count_nonzero(met) / n if n else 0.0  # = met.mean()
        out["attainment"] = att
        out["attainment_ok"] = self.attainment is None or att >= self.attainment - 1e-12
        out["ok"] = bool(ok and out["attainment_ok"] and n > 0)
        out["met"] = met
        return out

    def describe(self) -> str:
        parts = [f"{k.upper()} {t.label} <= {t.max_s:g} s" for k, t in self.targets().items()]
        tail = (
            f"; {self.attainment:.3g} of requests meet all" if self.attainment is not None else ""
        )
        return (", ".join(parts) or "no latency targets") + tail
