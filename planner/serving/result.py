"""Result of one simulation run (:class:`SimResult`): per-request arrays and aggregates."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.workload.slo import SLO, sorted_percentiles


# =========================================================================== results
def _wpcts(values: np.ndarray, weights: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """Weighted percentiles (each q in 0..100) of ``values``, from one sort.

    The value at a cumulative weight does not depend on how ties are ordered, so the sort
    need not be stable."""
    if len(values) == 0:
        return [float("nan")] * len(qs)
    order = np.argsort(values)
    v, w = values[order], weights[order]
    c = np.cumsum(w)
    if c[-1] <= 0:
        return [float("nan")] * len(qs)
    i = np.searchsorted(c, np.asarray(qs, float) / 100.0 * c[-1], side="left")
    return [float(v[min(int(j), len(v) - 1)]) for j in i]


def _weighted_mean(values: np.ndarray, weights: np.ndarray, empty: float) -> float:
    """``sum(values x weights) / sum(weights)``, or ``empty`` when no weight is positive.

    numpy's own (pairwise) sum rather than ``np.dot``: over more than 10,000 samples OpenBLAS
    splits a dot product across threads, whose wake-up takes milliseconds on a busy 2-core
    machine, whose spinning afterwards takes a core from the other search process, and whose
    rounding depends on the machine's thread count."""
    total = weights.sum()
    return float(np.add.reduce(values * weights) / total) if total > 0 else empty


def _nanmean(x: np.ndarray, nan: np.ndarray) -> float:
    """``np.nanmean(x)`` bit for bit (NaNs summed as 0, divided by the count of the rest;
    ``nan`` is ``np.isnan(x)``), NaN when no value is finite, as ``summary`` always had."""
    if not np.isfinite(x).any():
        return float("nan")
    if not nan.any():
        return float(np.add.reduce(x) / len(x))
    return float(np.add.reduce(np.where(nan, 0.0, x)) / int(len(x) - nan.sum()))


@dataclass
class SimResult:
    """Per-request outcomes and aggregates of one simulation.

    Attributes
    ----------
    arrival_s, first_token_s, finish_s : per request [s] (simulation clock)
    input_tokens, output_tokens, cached_tokens, preemptions : per request
    itl_values_s, itl_weights : iteration durations that produced decode tokens and the
        number of tokens each produced (the per-token inter-token-latency distribution)
    batch_values, batch_weights : sequences per iteration and iterations at that size
        (these four come from ``iteration_stats``)
    kv_util_mean, kv_util_max : time-weighted and peak fraction of KV blocks in use
    in_system_area_s : integral over time of the number of requests in the system [req*s]
    first_token_offset_s : latency of the front end's first-token path outside the engine
        [s] (:attr:`planner.serving.replica.EngineConfig.first_token_s`): ``first_token_s``
        and ``finish_s`` are the engine's times; the client receives each request's tokens
        this much later, so :attr:`ttft_s` and :attr:`e2e_s` include it (TPOT, throughput and
        the engine statistics do not)
    iteration_stats : ``(itl_values_s, itl_weights, batch_values, batch_weights)``, or a
        function returning them, called on first use: a verdict run (only its per-request
        latencies are read) never pays for them
    """

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    cached_tokens: np.ndarray
    preemptions: np.ndarray
    num_gpus: int
    iterations: int
    busy_s: float
    iteration_stats: tuple[np.ndarray, ...] | Callable[[], tuple[np.ndarray, ...]]
    kv_util_mean: float
    kv_util_max: float
    in_system_area_s: float
    prefill_tokens_computed: int
    mode: str = "open"
    label: str = ""
    truncated: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    first_token_offset_s: float = 0.0

    # ---- per iteration
    def _iteration_stats(self) -> tuple[np.ndarray, ...]:
        st = self.iteration_stats
        if callable(st):
            st = self.iteration_stats = st()
        return st

    @property
    def itl_values_s(self) -> np.ndarray:
        return self._iteration_stats()[0]

    @property
    def itl_weights(self) -> np.ndarray:
        return self._iteration_stats()[1]

    @property
    def batch_values(self) -> np.ndarray:
        return self._iteration_stats()[2]

    @property
    def batch_weights(self) -> np.ndarray:
        return self._iteration_stats()[3]

    # ---- per request
    @property
    def ttft_s(self) -> np.ndarray:
        """Time to first token, queueing included [s]."""
        return self.first_token_s - self.arrival_s + self.first_token_offset_s

    @property
    def e2e_s(self) -> np.ndarray:
        return self.finish_s - self.arrival_s + self.first_token_offset_s

    @property
    def tpot_s(self) -> np.ndarray:
        """(E2E - TTFT) / (output - 1); NaN for one-token answers [s]."""
        d = self.output_tokens - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(d > 0, (self.finish_s - self.first_token_s) / np.maximum(d, 1), np.nan)

    @property
    def duration_s(self) -> float:
        """From the first arrival to the last completion [s] (benchmark convention)."""
        return float(np.max(self.finish_s) - np.min(self.arrival_s)) if len(self.finish_s) else 0.0

    def window(
        self, warmup_frac: float = 0.0, cooldown_frac: float = 0.0, warmup_s: float = 0.0
    ) -> np.ndarray:
        """Boolean mask of the requests kept after dropping the first / last arrivals.

        The first ``max(warmup_frac * n, arrivals before warmup_s)`` requests (by arrival,
        at most 60 %) and the last ``cooldown_frac * n`` are dropped.
        """
        n = len(self.arrival_s)
        order = np.argsort(self.arrival_s, kind="stable")
        lo = int(math.floor(warmup_frac * n))
        if warmup_s > 0:
            t0 = float(self.arrival_s[order[0]]) if n else 0.0
            lo = max(lo, int(np.searchsorted(self.arrival_s[order], t0 + warmup_s)))
        lo = min(lo, int(0.6 * n))
        hi = n - int(math.floor(cooldown_frac * n))
        m = np.zeros(n, dtype=bool)
        m[order[lo : max(hi, lo + 1)]] = True
        return m

    def summary(
        self,
        slo: SLO | None = None,
        warmup_frac: float = 0.0,
        cooldown_frac: float = 0.0,
        warmup_s: float = 0.0,
        mask: np.ndarray | None = None,
        per_iteration: bool = True,
    ) -> dict[str, Any]:
        """Latency percentiles, throughput, goodput and engine statistics.

        Throughput is measured over the kept requests, from the first one's arrival to the
        last one's completion (what benchmark clients report); per GPU divides by the
        replica's GPUs. Goodput counts only requests that met every SLO threshold.
        ``mask`` (a boolean array) selects the scored requests directly.
        ``per_iteration=False`` leaves out the fields of the per-iteration statistics
        (``itl_*``, ``batch_size_*``), so they are never computed; every other field is the
        same value.
        """
        m = (
            self.window(warmup_frac, cooldown_frac, warmup_s)
            if mask is None
            else np.asarray(mask, bool)
        )
        ttft, tpot, e2e = self.ttft_s[m], self.tpot_s[m], self.e2e_s[m]
        out_t, in_t = self.output_tokens[m], self.input_tokens[m]
        dur = float(np.max(self.finish_s[m]) - np.min(self.arrival_s[m])) if m.any() else 0.0
        dur = dur if dur > 0 else float("nan")
        s: dict[str, Any] = {"requests": int(m.sum())}
        srt: dict[str, np.ndarray] = {}  # each metric without NaN, sorted: one sort serves all
        for name, x in (("ttft", ttft), ("tpot", tpot), ("e2e", e2e)):
            nan = np.isnan(x)
            s[f"{name}_mean_s"] = _nanmean(x, nan)
            xs = srt[name] = np.sort(x[~nan])
            ps = sorted_percentiles(xs, (50, 90, 99)) if len(xs) else [float("nan")] * 3
            for q, v in zip((50, 90, 99), ps, strict=True):
                s[f"{name}_p{q}_s"] = float(v)
        if per_iteration:
            w = self.itl_weights
            s["itl_mean_s"] = _weighted_mean(self.itl_values_s, w, float("nan"))
            for q, v in zip((50, 90, 99), _wpcts(self.itl_values_s, w, (50, 90, 99)), strict=True):
                s[f"itl_p{q}_s"] = v
        s["throughput_rps"] = float(m.sum()) / dur
        s["output_tok_s"] = float(out_t.sum()) / dur
        s["total_tok_s"] = float(out_t.sum() + in_t.sum()) / dur
        s["output_tok_s_per_gpu"] = s["output_tok_s"] / self.num_gpus
        s["total_tok_s_per_gpu"] = s["total_tok_s"] / self.num_gpus
        s["mean_input_tokens"] = float(in_t.mean()) if len(in_t) else 0.0
        s["mean_output_tokens"] = float(out_t.mean()) if len(out_t) else 0.0
        s["concurrency_mean"] = self.in_system_area_s / max(self.duration_s, 1e-12)
        if per_iteration:
            bw = self.batch_weights
            s["batch_size_mean"] = _weighted_mean(self.batch_values, bw, 0.0)
            s["batch_size_p50"], s["batch_size_p99"] = _wpcts(self.batch_values, bw, (50, 99))
            s["batch_size_max"] = float(self.batch_values.max()) if len(self.batch_values) else 0.0
        s["kv_util_mean"] = self.kv_util_mean
        s["kv_util_max"] = self.kv_util_max
        s["preemptions"] = int(self.preemptions.sum())
        s["iterations"] = int(self.iterations)
        s["duration_s"] = self.duration_s
        if self.truncated:
            s["truncated_requests"] = int(self.truncated)
        if slo is not None:
            ev = slo.evaluate(ttft, tpot, e2e, sorted_s=srt)
            s["slo_ok"] = ev["ok"]
            s["slo_attainment"] = ev["attainment"]
            s["goodput_rps"] = float(ev["met"].sum()) / dur
            for k, v in ev.items():
                if k.endswith("_s") and k not in s:
                    s[k] = v
        return s

    def percentile_table(
        self, warmup_frac: float = 0.0, cooldown_frac: float = 0.0
    ) -> list[dict[str, Any]]:
        """Rows ``metric, mean_s, p50_s, p90_s, p99_s`` for TTFT, TPOT, ITL and E2E."""
        s = self.summary(None, warmup_frac, cooldown_frac)
        rows = []
        for name in ("ttft", "tpot", "itl", "e2e"):
            rows.append(
                {
                    "metric": name.upper(),
                    **{f"{k}_s": s[f"{name}_{k}_s"] for k in ("mean", "p50", "p90", "p99")},
                }
            )
        return rows
