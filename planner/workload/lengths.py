"""Prompt / answer length distributions (``input_tokens`` / ``output_tokens`` of a request)."""

from __future__ import annotations

import csv
import math
from functools import lru_cache
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from planner.catalog.records import Frozen
from planner.errors import DATA_READ_LIMIT, PlannerError, read_text, shown
from planner.files import iter_lines

_Z90 = 1.2815515655446004  # standard normal quantiles

_Z99 = 2.3263478740408408


def _as_int_tokens(x: np.ndarray, min_tokens: int = 1) -> np.ndarray:
    return np.maximum(np.rint(np.asarray(x, dtype=float)), min_tokens).astype(np.int64)


# --------------------------------------------------------------------------- lengths
# Plausible arrival rates: from one request in ~12 days (below it a simulated day holds no
# request and durations reach 1e300 s) to 10M requests per second.
MIN_RPS = 1e-6

# No request is longer than this (100M tokens): beyond any model context.
MAX_TOKENS = 100_000_000


class FixedLength(Frozen):
    """Every request has the same length [tokens]."""

    kind: Literal["fixed"] = "fixed"
    tokens: int = Field(gt=0, le=MAX_TOKENS)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.full(int(n), self.tokens, dtype=np.int64)

    def mean_tokens(self) -> float:
        return float(self.tokens)

    def quantile_tokens(self, q: float) -> float:
        return float(self.tokens)


def _norm_cdf(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def _norm_pdf(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


class NormalLength(Frozen):
    """Normal lengths (rounded, clipped at ``min_tokens`` and ``max_tokens``) [tokens]."""

    kind: Literal["normal"] = "normal"
    mean: float = Field(gt=0)
    std: float = Field(ge=0)
    min_tokens: int = Field(1, gt=0, le=MAX_TOKENS)
    max_tokens: int | None = Field(None, gt=0, le=MAX_TOKENS)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        x = _as_int_tokens(rng.normal(self.mean, self.std, int(n)), self.min_tokens)
        return np.minimum(x, self.max_tokens) if self.max_tokens else x

    def mean_tokens(self) -> float:
        """Mean of the rounded, clipped samples [tokens].

        Clipping puts the tails' mass AT the bounds: with bounds lo, hi, alpha = (lo - mu) /
        sigma and beta = (hi - mu) / sigma, ``E = lo*Phi(alpha) + hi*(1 - Phi(beta)) +
        mu*(Phi(beta) - Phi(alpha)) + sigma*(phi(alpha) - phi(beta))``. Samples are rounded
        before clipping, so a sample becomes ``min_tokens`` when it is below ``min_tokens +
        0.5`` (and ``max_tokens`` above ``max_tokens - 0.5``): the cut points carry that
        half-token continuity correction.
        """
        lo_v = float(self.min_tokens)
        hi_v = float(self.max_tokens) if self.max_tokens else math.inf
        if hi_v <= lo_v:  # max applied after min: everything ends at max_tokens
            return hi_v
        mu, sd = float(self.mean), float(self.std)
        if sd == 0:
            return float(min(max(float(np.rint(mu)), lo_v), hi_v))
        if sd < 8.0:  # few distinct values: the exact sum over the integers in reach
            k0 = int(max(lo_v, math.floor(mu - 10 * sd)))
            k1 = int(min(hi_v, math.ceil(mu + 10 * sd)))
            tot = lo_v * _norm_cdf((lo_v + 0.5 - mu) / sd)
            if not math.isinf(hi_v):
                tot += hi_v * (1.0 - _norm_cdf((hi_v - 0.5 - mu) / sd))
            k1 = k1 if math.isinf(hi_v) else min(k1, int(hi_v) - 1)
            for k in range(max(k0, int(lo_v) + 1), k1 + 1):
                tot += k * (_norm_cdf((k + 0.5 - mu) / sd) - _norm_cdf((k - 0.5 - mu) / sd))
            return float(tot)
        a = (lo_v + 0.5 - mu) / sd
        fa, pa = _norm_cdf(a), _norm_pdf(a)
        if math.isinf(hi_v):
            fb, pb, upper = 1.0, 0.0, 0.0
        else:
            b = (hi_v - 0.5 - mu) / sd
            fb, pb = _norm_cdf(b), _norm_pdf(b)
            upper = hi_v * (1.0 - fb)
        return float(lo_v * fa + upper + mu * (fb - fa) + sd * (pa - pb))

    def quantile_tokens(self, q: float) -> float:
        from statistics import NormalDist

        v = max(
            self.min_tokens,
            self.mean + self.std * NormalDist().inv_cdf(min(max(q, 1e-9), 1 - 1e-9)),
        )
        return float(min(v, self.max_tokens) if self.max_tokens else v)


#: largest sigma of a lognormal length: exp(5**2 / 2) = 268,337 times the median for the mean
#: (a sigma of 40, as a typo might give, overflows every moment)
MAX_LOGNORMAL_SIGMA = 5.0


class LognormalLength(Frozen):
    """Lognormal lengths from the mean (or median) and one upper percentile [tokens].

    With the mean m and the p-th percentile x_p (z = z_p), sigma solves
    ``ln(x_p / m) = z*sigma - sigma**2 / 2`` (smaller root) and ``mu = ln m - sigma**2 / 2``;
    with the median, ``mu = ln(median)`` and ``sigma = ln(x_p / median) / z``. Or give
    ``sigma`` directly.
    """

    kind: Literal["lognormal"] = "lognormal"
    mean: float | None = Field(None, gt=0)
    median: float | None = Field(None, gt=0)
    p90: float | None = Field(None, gt=0)
    p99: float | None = Field(None, gt=0)
    sigma: float | None = Field(None, gt=0)
    min_tokens: int = Field(1, gt=0, le=MAX_TOKENS)
    max_tokens: int | None = Field(None, gt=0, le=MAX_TOKENS)

    @model_validator(mode="after")
    def _check(self) -> LognormalLength:
        if (self.mean is None) == (self.median is None):
            raise ValueError("give exactly one of mean or median")
        given = [k for k in ("p90", "p99", "sigma") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of p90, p99 or sigma")
        self.params()  # raises on impossible combinations
        return self

    def params(self) -> tuple[float, float]:
        """(mu, sigma) of the underlying normal; sigma at most :data:`MAX_LOGNORMAL_SIGMA`."""
        mu, s = self._params()
        if s > MAX_LOGNORMAL_SIGMA:
            raise ValueError(
                f"sigma {s:.3g} is beyond {MAX_LOGNORMAL_SIGMA:g}: such a lognormal's mean is "
                f"over e^{MAX_LOGNORMAL_SIGMA**2 / 2:g} = {math.exp(MAX_LOGNORMAL_SIGMA**2 / 2):,.0f} "
                "times its median, far more skewed than any prompt or answer lengths "
                "(ShareGPT-like traffic has sigma near 1); give a smaller sigma or percentile"
            )
        return mu, s

    def _params(self) -> tuple[float, float]:
        if self.sigma is not None:
            s = float(self.sigma)
            mu = math.log(self.median) if self.median else math.log(self.mean) - s * s / 2
            return mu, s
        xp, z, name = (self.p90, _Z90, "p90") if self.p90 is not None else (self.p99, _Z99, "p99")
        if self.median is not None:
            if xp <= self.median:
                raise ValueError(f"{name} ({xp:g}) must exceed the median ({self.median:g})")
            s = math.log(xp / self.median) / z
            return math.log(self.median), s
        r = math.log(xp / self.mean)
        if r <= 0:
            raise ValueError(
                f"{name} ({xp:g}) must exceed the mean ({self.mean:g}) for a lognormal"
            )
        disc = z * z - 2 * r
        if disc < 0:
            raise ValueError(
                f"{name}/mean = {xp / self.mean:.3g} is too large for a lognormal "
                f"(at most {math.exp(z * z / 2):.3g}); give the median instead"
            )
        s = z - math.sqrt(disc)
        return math.log(self.mean) - s * s / 2, s

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        mu, s = self.params()
        x = _as_int_tokens(rng.lognormal(mu, s, int(n)), self.min_tokens)
        return np.minimum(x, self.max_tokens) if self.max_tokens else x

    def mean_tokens(self) -> float:
        """Mean length [tokens], with the cap at ``max_tokens`` taken into account."""
        from statistics import NormalDist

        mu, s = self.params()
        m = math.exp(mu + s * s / 2)
        if self.max_tokens:
            cdf = NormalDist().cdf
            lm = math.log(self.max_tokens)
            m = m * cdf((lm - mu - s * s) / s) + self.max_tokens * (1 - cdf((lm - mu) / s))
        return float(m)

    def quantile_tokens(self, q: float) -> float:
        from statistics import NormalDist

        mu, s = self.params()
        v = math.exp(mu + s * NormalDist().inv_cdf(min(max(q, 1e-9), 1 - 1e-9)))
        return float(min(v, self.max_tokens) if self.max_tokens else max(v, self.min_tokens))


class UniformLength(Frozen):
    """Uniform integer lengths in [min_tokens, max_tokens]."""

    kind: Literal["uniform"] = "uniform"
    min_tokens: int = Field(gt=0, le=MAX_TOKENS)
    max_tokens: int = Field(gt=0, le=MAX_TOKENS)

    @model_validator(mode="after")
    def _order(self) -> UniformLength:
        if self.max_tokens < self.min_tokens:
            raise ValueError("max_tokens must be >= min_tokens")
        return self

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(self.min_tokens, self.max_tokens + 1, int(n)).astype(np.int64)

    def mean_tokens(self) -> float:
        return (self.min_tokens + self.max_tokens) / 2

    def quantile_tokens(self, q: float) -> float:
        return self.min_tokens + q * (self.max_tokens - self.min_tokens)


class HistogramLength(Frozen):
    """Empirical histogram: lengths ``tokens`` with relative ``weights``, inline or from CSV.

    The CSV has a header with a ``tokens`` column and one of ``weight``, ``count`` or
    ``probability``; relative paths resolve against the scenario file's folder.
    """

    kind: Literal["histogram"] = "histogram"
    path: str | None = None
    tokens: tuple[int, ...] | None = None
    weights: tuple[float, ...] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> HistogramLength:
        if (self.path is None) == (self.tokens is None):
            raise ValueError("give either path (a CSV) or tokens + weights")
        if self.tokens is not None:
            _check_hist(self.tokens, self.weights, "inline histogram")
        return self

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        if self.tokens is not None:
            t, w = np.asarray(self.tokens, float), np.asarray(self.weights, float)
        else:
            t, w = _read_hist_csv(self.path)
        return t, w / w.sum()

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        t, p = self.table()
        return _as_int_tokens(rng.choice(t, size=int(n), p=p))

    def mean_tokens(self) -> float:
        t, p = self.table()
        return float(np.dot(t, p))

    def quantile_tokens(self, q: float) -> float:
        t, p = self.table()
        order = np.argsort(t)
        c = np.cumsum(p[order])
        return float(t[order][min(int(np.searchsorted(c, q)), len(c) - 1)])


class QuantileLength(Frozen):
    """An empirical quantile table: ``values[i]`` is the quantile at ``probs[i]`` [tokens].

    ``probs`` defaults to evenly spaced 0..1. Sampling draws u ~ U(0,1) and interpolates
    linearly (inverse-CDF), so a published dataset's shape is reproduced to the table's
    resolution. ``scale`` multiplies every value (e.g. to move the mean to a measured one).
    """

    kind: Literal["quantiles"] = "quantiles"
    values: tuple[float, ...] = Field(min_length=2)
    probs: tuple[float, ...] | None = None
    scale: float = Field(1.0, gt=0)
    max_tokens: int | None = Field(None, gt=0, le=MAX_TOKENS)
    source: str | None = None

    @field_validator("values")
    @classmethod
    def _ascending(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if any(b < a for a, b in zip(v, v[1:], strict=False)) or v[0] <= 0:
            raise ValueError("quantile values must be positive and non-decreasing")
        return v

    @model_validator(mode="after")
    def _probs(self) -> QuantileLength:
        if self.probs is not None:
            p = self.probs
            if len(p) != len(self.values):
                raise ValueError("probs and values must have the same length")
            if p[0] != 0 or p[-1] != 1 or any(b <= a for a, b in zip(p, p[1:], strict=False)):
                raise ValueError("probs must rise strictly from 0 to 1")
        return self

    def _grid(self) -> tuple[np.ndarray, np.ndarray]:
        v = np.asarray(self.values, float) * self.scale
        if self.max_tokens:
            v = np.minimum(v, self.max_tokens)
        q = (
            np.asarray(self.probs, float)
            if self.probs is not None
            else np.linspace(0.0, 1.0, len(v))
        )
        return q, v

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        q, v = self._grid()
        return _as_int_tokens(np.interp(rng.random(int(n)), q, v))

    def mean_tokens(self) -> float:
        q, v = self._grid()
        return float(np.trapezoid(v, q)) if hasattr(np, "trapezoid") else float(np.trapz(v, q))

    def quantile_tokens(self, q: float) -> float:
        qq, v = self._grid()
        return float(np.interp(q, qq, v))


class TraceLength(Frozen):
    """Lengths read per request from the traffic trace file (``input_tokens`` / ``output_tokens``)."""

    kind: Literal["trace"] = "trace"

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:  # pragma: no cover
        raise PlannerError("a 'trace' length distribution needs traffic.arrival: trace")

    def mean_tokens(self) -> float:  # pragma: no cover
        raise PlannerError("a 'trace' length distribution has no mean without its trace")

    def quantile_tokens(self, q: float) -> float:  # pragma: no cover
        raise PlannerError("a 'trace' length distribution has no quantile without its trace")


LengthDist = Annotated[
    FixedLength
    | NormalLength
    | LognormalLength
    | UniformLength
    | HistogramLength
    | QuantileLength
    | TraceLength,
    Field(discriminator="kind"),
]


def _check_hist(tokens, weights, where: str) -> None:
    if weights is None or len(weights) != len(tokens) or not len(tokens):
        raise ValueError(f"{where}: tokens and weights must be non-empty and of equal length")
    if any(t <= 0 for t in tokens):
        raise ValueError(f"{where}: token lengths must be > 0")
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError(f"{where}: weights must be >= 0 and not all zero")


def _read_csv_rows(path: str, what: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number, row) of every data row of a CSV file; a one-line error otherwise."""
    text = read_text(path, f"{what} file", "CSV file", limit=DATA_READ_LIMIT)
    try:
        reader = csv.DictReader(iter_lines(text))
        return [(reader.line_num, r) for r in reader]
    except csv.Error as e:
        raise PlannerError(f"{what} file {path}: not a valid CSV file ({e})") from None


def _finite_cell(row: dict[str, Any], col: str, path: str, line: int) -> float:
    """One numeric cell; a missing, non-numeric or non-finite value names the row."""
    v = row.get(col)
    try:
        x = float(v)  # None (a short row) raises TypeError
    except (TypeError, ValueError, OverflowError):
        got = "missing" if v is None else shown(v)
        raise PlannerError(f"{path}: line {line}: {col} is not a number ({got})") from None
    if not math.isfinite(x):
        raise PlannerError(f"{path}: line {line}: {col} must be a finite number, got {shown(v)}")
    return x


@lru_cache(maxsize=32)
def _read_hist_csv(path: str) -> tuple[np.ndarray, np.ndarray]:
    rows = _read_csv_rows(path, "histogram")
    if not rows:
        raise PlannerError(f"{path}: empty histogram")
    cols = {str(c).strip().lower(): c for c in rows[0][1] if c is not None}
    wcol = next((cols[c] for c in ("weight", "count", "probability") if c in cols), None)
    if "tokens" not in cols or wcol is None:
        raise PlannerError(f"{path}: needs columns 'tokens' and one of weight/count/probability")
    t = [_finite_cell(r, cols["tokens"], path, ln) for ln, r in rows]
    w = [_finite_cell(r, wcol, path, ln) for ln, r in rows]
    try:
        _check_hist(t, w, str(path))
    except ValueError as e:
        raise PlannerError(f"{path}: {e}") from None
    return np.asarray(t), np.asarray(w)
