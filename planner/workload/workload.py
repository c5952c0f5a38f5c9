"""Workload: traffic, prompt and answer length distributions, prefix reuse, SLOs, presets.

Everything a planner says about the requests a replica must serve, as frozen pydantic
models (``extra="forbid"``), so a scenario file with a misspelt key is an error that names
the field. Lengths are tokens (``_tokens``), rates requests per second (``_rps``), times
seconds (``_s``).

* :class:`Traffic` -- mean and peak request rate, arrivals (Poisson, bursty Gamma with a
  coefficient of variation, constant spacing, or a trace file), and a 24-hour profile.
* Length distributions -- ``fixed``, ``normal``, ``lognormal`` (from mean or median and a
  p90/p99), ``uniform``, ``histogram`` (inline or CSV), ``quantiles`` (an empirical
  quantile table), ``trace`` (lengths from the trace file); see :data:`LengthDist`.
* :class:`PrefixReuse` -- a shared system prompt, or a prefix-cache hit rate.
* :class:`SLO` -- TTFT / TPOT / E2E thresholds at chosen percentiles plus an attainment
  target; :meth:`SLO.evaluate` computes attainment and pass/fail.
* :data:`PRESETS` -- chat, rag, code, summarization, batch, each with its source.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from planner.catalog.records import Frozen
from planner.errors import PlannerError
from planner.workload.lengths import LengthDist, TraceLength
from planner.workload.presets import PRESETS
from planner.workload.traffic import PrefixReuse, Traffic, _tile_trace_times

_Z90 = 1.2815515655446004  # standard normal quantiles


# --------------------------------------------------------------------------- workload
@dataclass(frozen=True)
class Requests:
    """A concrete request list: arrival [s], prompt / answer / cached-prefix lengths [tokens].

    ``shared_prefix_tokens`` of every prompt are one prefix whose KV blocks all requests
    share (prefix caching); ``cached_tokens`` (>= the shared part when caching is on) skip
    prefill compute. ``max_new_tokens`` is the ``max_tokens`` every request sends [tokens]
    (what an engine that reserves the answer's KV at admission reserves); 0: each request
    sends its own answer's length (a benchmark client with ``max_tokens`` = its OSL).
    """

    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    cached_tokens: np.ndarray
    shared_prefix_tokens: int = 0
    truncated: int = 0
    max_new_tokens: int = 0

    def __len__(self) -> int:
        return len(self.arrival_s)

    def copy(self) -> Requests:
        """The same requests in new arrays (a caller may change its copy freely)."""
        return Requests(
            self.arrival_s.copy(),
            self.input_tokens.copy(),
            self.output_tokens.copy(),
            self.cached_tokens.copy(),
            self.shared_prefix_tokens,
            self.truncated,
            self.max_new_tokens,
        )

    def all_at_once(self) -> Requests:
        return Requests(
            np.zeros(len(self)),
            self.input_tokens,
            self.output_tokens,
            self.cached_tokens,
            self.shared_prefix_tokens,
            self.truncated,
            self.max_new_tokens,
        )


def make_requests(
    arrival_s,
    input_tokens,
    output_tokens,
    *,
    context_limit: int | None = None,
    shared_prefix_tokens: int = 0,
    cache_hit_rate: float = 0.0,
    prefix_caching: bool = True,
    max_new_tokens: int = 0,
) -> Requests:
    """Build a :class:`Requests` list, truncating to the model's context.

    Prompts are cut to ``context_limit - 1`` tokens and answers to what remains, as a
    server with ``max_model_len`` does. Cached tokens: the shared prefix (at most the
    prompt minus one token) plus ``cache_hit_rate`` of the rest, never the whole prompt,
    zero without prefix caching. ``Requests.shared_prefix_tokens`` is the longest part of
    the shared prefix any prompt holds. ``max_new_tokens``: the ``max_tokens`` every request
    sends (0: its own answer's length; :attr:`Requests.max_new_tokens`).
    """
    a = np.asarray(arrival_s, float)
    i = np.asarray(input_tokens, dtype=np.int64).copy()
    o = np.asarray(output_tokens, dtype=np.int64).copy()
    if not (len(a) == len(i) == len(o)):
        raise PlannerError("arrival, input and output arrays must have the same length")
    if len(a) == 0:
        raise PlannerError("no requests to simulate")
    if (i <= 0).any() or (o <= 0).any():
        raise PlannerError("every request needs at least one prompt token and one output token")
    trunc = 0
    if context_limit:
        if context_limit < 2:
            raise PlannerError(f"context limit {context_limit} is too small for any request")
        over = (i + o) > context_limit
        trunc = int(over.sum())
        i = np.minimum(i, context_limit - 1)
        o = np.minimum(o, context_limit - i)
        if max_new_tokens:  # no request can ask for more than the context holds
            max_new_tokens = min(int(max_new_tokens), context_limit - 1)
    if len(a) > 1 and not (a[1:] >= a[:-1]).all():
        order = np.argsort(a, kind="stable")
        a, i, o = a[order], i[order], o[order]
    else:  # already in arrival order (a drawn sample always is): the stable sort is a no-op
        a = a.copy()
    shared = int(shared_prefix_tokens) if prefix_caching else 0
    if prefix_caching:
        # a prompt shorter than the shared prefix holds only its first prompt - 1 tokens of it
        # (one token is always computed); the pool keeps the longest part any prompt uses
        shared = min(shared, int(i.max()) - 1)
        sh = np.minimum(shared, i - 1)
        if cache_hit_rate:
            rest = i - sh
            cached = sh + np.floor(cache_hit_rate * rest).astype(np.int64)
            cached = np.minimum(cached, i - 1)
        else:  # the shared prefix only (already at most prompt - 1)
            cached = sh
    else:
        cached = np.zeros_like(i)
    return Requests(a, i, o, cached.astype(np.int64), shared, trunc, int(max_new_tokens))


class _BytesLRU:
    """Values by key, least recently used first, at most ``max_bytes`` of arrays in at most
    ``max_entries`` values; thread-safe (its lock is also held across a fork,
    :func:`sample_memo_held`). The memos below add what they store and copy."""

    def __init__(self, max_bytes: int, max_entries: int = 1 << 30) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._items: OrderedDict[tuple[Any, ...], tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def _get(self, key: tuple[Any, ...]) -> Any:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            return hit[0]

    def _put(self, key: tuple[Any, ...], value: Any, size: int) -> None:
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes or len(self._items) > self.max_entries:
                _, (_, gone) = self._items.popitem(last=False)
                self._bytes -= gone

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0


class _SampleMemo(_BytesLRU):
    """Request lists :meth:`Workload.sample_requests` drew before, with the state their
    generator was left in, least recently used first, at most ``max_bytes`` of arrays in
    at most ``max_entries`` lists.

    A draw depends only on the workload, the number of requests and the generator's state
    at the start; the list then on the rate, the context limit and prefix caching. A
    capacity curve draws the same list for every point with the same request count, and
    the app draws the same lists for every GPU (issue 18: ~20 % of a What-if change), so
    a repeat returns a copy of the stored list and moves the generator on exactly as the
    draw did: every caller sees the numbers and generator state it always saw.
    """

    def __init__(self, max_bytes: int = 48 << 20, max_entries: int = 256) -> None:
        super().__init__(max_bytes, max_entries)

    def get(self, key: tuple[Any, ...]) -> tuple[Requests, dict[str, Any]] | None:
        hit = self._get(key)
        return None if hit is None else (hit[0].copy(), hit[1])

    def put(self, key: tuple[Any, ...], reqs: Requests, state: dict[str, Any]) -> None:
        reqs = reqs.copy()
        arrays = (reqs.arrival_s, reqs.input_tokens, reqs.output_tokens, reqs.cached_tokens)
        self._put(key, (reqs, state), sum(a.nbytes for a in arrays))


_SAMPLES = _SampleMemo()


class _DrawMemo(_BytesLRU):
    """Unit draws (:meth:`Workload.unit_draws`) by key, least recently used first, at most
    ``max_bytes`` of arrays."""

    def __init__(self, max_bytes: int = 32 << 20) -> None:
        super().__init__(max_bytes)

    def get(self, key: tuple[Any, ...]) -> tuple[np.ndarray, ...] | None:
        return self._get(key)

    def put(self, key: tuple[Any, ...], arrays: tuple[np.ndarray, ...]) -> None:
        self._put(key, arrays, sum(a.nbytes for a in arrays))


_DRAWS = _DrawMemo()


@contextlib.contextmanager
def sample_memo_held() -> Iterator[None]:
    """Hold the request-sample memos' locks for the block (:data:`_SAMPLES`, :data:`_DRAWS`):
    across a fork (:mod:`planner.recommend.processes`), no other thread of the parent holds
    them then."""
    with _SAMPLES._lock, _DRAWS._lock:
        yield


def _generator_key(rng: np.random.Generator) -> tuple[Any, ...] | None:
    """The state of a PCG64 generator (``np.random.default_rng``) as a hashable key; None
    for other bit generators (not memoised)."""
    st = rng.bit_generator.state
    if st.get("bit_generator") != "PCG64":
        return None
    return (st["state"]["state"], st["state"]["inc"], st["has_uint32"], st["uinteger"])


class Workload(Frozen):
    """Traffic, prompt and answer lengths and prefix reuse of one service.

    ``preset`` fills every field from :data:`PRESETS` first; fields given next to it
    override the preset's.
    """

    preset: str | None = None
    name: str | None = None
    description: str | None = None
    source: str | None = None
    traffic: Traffic
    input_tokens: LengthDist
    output_tokens: LengthDist
    prefix: PrefixReuse = PrefixReuse()
    offline: bool = Field(False, description="all requests are queued at once (batch job)")
    max_output_tokens: int | None = Field(
        None,
        description="the max_tokens each request sends [tokens] (default: the answers' P99)",
    )

    @model_validator(mode="before")
    @classmethod
    def _expand_preset(cls, data: Any) -> Any:
        data = _trace_defaults(data)
        if isinstance(data, dict) and data.get("preset") is not None:
            name = str(data["preset"]).strip().lower()
            if name not in PRESETS:
                raise ValueError(
                    f"unknown preset '{data['preset']}' (presets: {', '.join(PRESETS)})"
                )
            base = _preset_for(PRESETS[name], data.get("traffic"))
            merged = _deep_merge(base, {k: v for k, v in data.items() if v is not None})
            merged["preset"] = name
            return merged
        return data

    @model_validator(mode="after")
    def _trace_lengths(self) -> Workload:
        uses_trace = isinstance(self.input_tokens, TraceLength) or isinstance(
            self.output_tokens, TraceLength
        )
        if uses_trace and self.traffic.arrival != "trace":
            raise ValueError("length kind 'trace' needs traffic.arrival: trace")
        return self

    @model_validator(mode="after")
    def _max_output(self) -> Workload:
        m = self.max_output_tokens
        if m is None:
            return self
        if isinstance(m, bool) or m < 1:
            raise ValueError(f"max_output_tokens must be an integer >= 1, got {m}")
        if not isinstance(self.output_tokens, TraceLength):
            p99 = self.output_tokens.quantile_tokens(0.99)
            if p99 > m:
                raise ValueError(
                    f"max_output_tokens {m} is below the answers' P99 ({math.ceil(p99)} tokens): "
                    "an engine stops every answer at max_tokens, so no answer can be longer; "
                    "raise max_output_tokens or shorten output_tokens"
                )
        return self

    def max_new_tokens(self) -> int:
        """The ``max_tokens`` each request sends [tokens]: ``max_output_tokens``, or the
        answers' P99 (rounded up) when it is not given (:meth:`max_output_assumption`)."""
        if self.max_output_tokens is not None:
            return int(self.max_output_tokens)
        return max(1, int(math.ceil(self.output_quantile_tokens(0.99))))

    def max_output_assumption(self) -> str | None:
        """The line that states the assumed ``max_tokens`` (None when the workload sets it)."""
        if self.max_output_tokens is not None:
            return None
        return (
            f"clients send max_tokens = the answers' P99, {self.max_new_tokens():,} tokens "
            "(workload.max_output_tokens not set; TensorRT-LLM reserves it at admission)"
        )

    # ---- statistics
    def mean_input_tokens(self) -> float:
        if isinstance(self.input_tokens, TraceLength):
            return float(self.traffic._trace().input_tokens.mean())
        return self.input_tokens.mean_tokens()

    def mean_output_tokens(self) -> float:
        if isinstance(self.output_tokens, TraceLength):
            return float(self.traffic._trace().output_tokens.mean())
        return self.output_tokens.mean_tokens()

    def input_quantile_tokens(self, q: float) -> float:
        if isinstance(self.input_tokens, TraceLength):
            return float(np.quantile(self.traffic._trace().input_tokens, q))
        return self.input_tokens.quantile_tokens(q)

    def output_quantile_tokens(self, q: float) -> float:
        if isinstance(self.output_tokens, TraceLength):
            return float(np.quantile(self.traffic._trace().output_tokens, q))
        return self.output_tokens.quantile_tokens(q)

    # ---- sampling
    def sample_lengths(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Prompt and answer lengths of ``n`` requests [tokens] (trace rows tile if fewer)."""
        n = int(n)
        if n <= 0:
            raise PlannerError(f"number of requests must be > 0, got {n}")
        tr = self.traffic._trace() if self.traffic.arrival == "trace" else None
        idx = np.arange(n) % len(tr.arrival_s) if tr is not None else None
        i = (
            tr.input_tokens[idx]
            if isinstance(self.input_tokens, TraceLength)
            else self.input_tokens.sample(n, rng)
        )
        o = (
            tr.output_tokens[idx]
            if isinstance(self.output_tokens, TraceLength)
            else self.output_tokens.sample(n, rng)
        )
        return np.asarray(i, np.int64), np.asarray(o, np.int64)

    def sample_requests(
        self,
        n: int,
        rng: np.random.Generator,
        rate_rps: float | None = None,
        *,
        context_limit: int | None = None,
        prefix_caching: bool = True,
    ) -> Requests:
        """``n`` requests arriving at ``rate_rps`` (default: the planning peak).

        ``rate_rps=None`` with a trace keeps the trace's own timestamps. Offline workloads
        (``offline: true``) queue everything at t = 0.

        A repeated draw (same workload, ``n``, generator state and arguments) is served
        from a memo (:class:`_SampleMemo`): the same requests, and ``rng`` left in the same
        state. Traces (read from a file) and generators other than PCG64 are drawn anew.
        """
        key = self._memo_key(n, rng, rate_rps, context_limit, prefix_caching)
        if key is not None:
            hit = _SAMPLES.get(key)
            if hit is not None:
                rng.bit_generator.state = hit[1]
                return hit[0]
        i, o = self.sample_lengths(n, rng)
        unit = self.traffic.unit_arrivals(n, rng)
        reqs = self.requests_of(
            i, o, unit, rate_rps, context_limit=context_limit, prefix_caching=prefix_caching
        )
        if key is not None:
            _SAMPLES.put(key, reqs, rng.bit_generator.state)
        return reqs

    def unit_draws(self, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Prompt lengths, answer lengths [tokens] and unit-rate arrival times [s] of ``n``
        requests drawn from ``np.random.default_rng(seed)`` in that order (the draws that
        :meth:`requests_of` cuts to any context limit). Remembered per (workload, ``n``,
        ``seed``) across callers (:data:`_DRAWS`: every What-if change and every search of
        one workload draws the same); each call returns its own copies. Traces and
        workloads that cannot be hashed are drawn every time."""
        key: tuple[Any, ...] | None = (self, int(n), int(seed))
        try:
            hash(key)
        except TypeError:  # a field that cannot be hashed (never with the bundled kinds)
            key = None
        if key is not None and self.traffic.arrival != "trace":
            hit = _DRAWS.get(key)
            if hit is not None:
                return hit[0].copy(), hit[1].copy(), hit[2].copy()
        rng = np.random.default_rng(seed)
        i, o = self.sample_lengths(n, rng)
        out = (i, o, self.traffic.unit_arrivals(n, rng))
        if key is not None and self.traffic.arrival != "trace":
            _DRAWS.put(key, tuple(a.copy() for a in out))
        return out

    def _memo_key(
        self,
        n: int,
        rng: np.random.Generator,
        rate_rps: float | None,
        context_limit: int | None,
        prefix_caching: bool,
    ) -> tuple[Any, ...] | None:
        """The key of a draw in :data:`_SAMPLES`, or None when it is not memoised."""
        if self.traffic.arrival == "trace" or not isinstance(rng, np.random.Generator):
            return None
        gen = _generator_key(rng)
        if gen is None:
            return None
        try:
            hash(self)
        except TypeError:  # a field that cannot be hashed (never with the bundled kinds)
            return None
        rate = None if rate_rps is None else float(rate_rps)
        limit = None if context_limit is None else int(context_limit)
        return (self, int(n), gen, rate, limit, bool(prefix_caching))

    def requests_of(
        self,
        input_tokens: np.ndarray,
        output_tokens: np.ndarray,
        unit_arrivals: np.ndarray,
        rate_rps: float | None = None,
        *,
        context_limit: int | None = None,
        prefix_caching: bool = True,
    ) -> Requests:
        """The requests of drawn lengths and unit-rate arrival times (what
        :meth:`sample_requests` draws, in that order) at ``rate_rps``, cut to
        ``context_limit``: one draw serves every context limit. The arrays are not changed."""
        i, o, unit, n = input_tokens, output_tokens, unit_arrivals, len(input_tokens)
        if self.offline:
            arr = np.zeros(int(n))
        elif rate_rps is None and self.traffic.arrival == "trace":
            arr = _tile_trace_times(self.traffic._trace().arrival_s, int(n))
        else:
            rate = float(rate_rps) if rate_rps is not None else self.traffic.peak()
            if not (rate > 0 and math.isfinite(rate)):
                raise PlannerError(f"arrival rate must be a finite number > 0, got {rate}")
            arr = unit / rate
        return make_requests(
            arr,
            i,
            o,
            context_limit=context_limit,
            shared_prefix_tokens=self.prefix.shared_prefix_tokens,
            cache_hit_rate=self.prefix.cache_hit_rate,
            prefix_caching=prefix_caching,
            max_new_tokens=self.max_new_tokens(),
        )

    def describe(self) -> str:
        return (
            f"{self.name or self.preset or 'workload'}: prompt ~{self.mean_input_tokens():.0f} tok, "
            f"answer ~{self.mean_output_tokens():.0f} tok, peak {self.traffic.peak():.3g} req/s"
        )


def _trace_defaults(data: Any) -> Any:
    """A workload that replays a trace (``traffic.trace_path``) takes its prompt and answer
    lengths from the trace unless it names other distributions."""
    if not isinstance(data, dict) or not isinstance(data.get("traffic"), dict):
        return data
    tr = data["traffic"]
    if not tr.get("trace_path") or tr.get("arrival") not in (None, "trace"):
        return data
    out = {**data, "traffic": {**tr, "arrival": "trace"}}
    for key in ("input_tokens", "output_tokens"):
        if out.get(key) is None:
            out[key] = {"kind": "trace"}
    return out


def _preset_for(preset: dict[str, Any], traffic: Any) -> dict[str, Any]:
    """The preset's fields that still apply under the user's ``traffic``: a trace brings its
    own rate and arrival times (the preset's ``mean_rps``, ``peak_rps``, ``daily_profile``
    and ``cv`` would rescale or reshape it), and another arrival mode drops the preset's
    ``cv``."""
    if not isinstance(traffic, dict) or traffic.get("arrival") is None:
        return preset
    ptr = dict(preset.get("traffic") or {})
    if traffic["arrival"] == "trace":
        for k in ("mean_rps", "peak_rps", "daily_profile", "cv"):
            ptr.pop(k, None)
    elif traffic["arrival"] != ptr.get("arrival"):
        ptr.pop("cv", None)
    return {**preset, "traffic": ptr}


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if k in ("input_tokens", "output_tokens") and isinstance(v, dict):
            out[k] = v  # a new distribution replaces the preset's wholesale
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def preset(name: str, **overrides: Any) -> Workload:
    """A :class:`Workload` from a preset, with field overrides (e.g. ``traffic={...}``)."""
    return Workload.model_validate({"preset": name, **overrides})


def resolve_path(path: str | None, base_dir: str | os.PathLike[str] | None) -> str | None:
    """A path relative to a scenario file's folder (absolute paths unchanged)."""
    if path is None or base_dir is None:
        return path
    p = Path(path)
    return str(p if p.is_absolute() else Path(base_dir) / p)
