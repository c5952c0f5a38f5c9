"""Phases of serving on top of the step model: prefill, decode steps, a static-batch estimate.

The vector forms (:func:`prefill`, :func:`decode_step`, :func:`decode_step_mixed`) return a
full :class:`~planner.engine.step.StepBreakdown`; the scalar forms (:func:`prefill_time`,
:func:`decode_time`, :func:`mean_decode_time`) return seconds through the hot scalar path
:meth:`StepModel.step_time` and are what the calibration fit and the simulator call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.engine._scalar import window_pairs
from planner.engine.step import StepBreakdown, StepModel
from planner.errors import PlannerError, require_positive


# --------------------------------------------------------------------------- convenience
def _window_sums(ctx, new, window):
    """(kv tokens attended, query-key pairs) in a window-capped layer for a chunk of
    ``new`` tokens appended to ``ctx - new`` cached tokens (vectorized; the scalar form of the
    pairs is :func:`planner.engine._scalar.window_pairs`)."""
    ctx = np.asarray(ctx, float)
    new = np.asarray(new, float)
    if window <= 0:
        return np.zeros_like(ctx), np.zeros_like(ctx)
    kv = np.minimum(ctx, window)
    start = ctx - new  # tokens before the chunk
    # pairs = sum_{i=1..new} min(start+i, window)
    i_cap = np.clip(window - start, 0, new)  # queries below the cap
    pairs = i_cap * start + i_cap * (i_cap + 1) / 2 + (new - i_cap) * window
    return kv, pairs


def prefill(sm: StepModel, batch, input_tokens, cached_tokens=0) -> StepBreakdown:
    """One prefill forward over ``batch`` prompts of ``input_tokens`` new tokens each.

    ``cached_tokens`` per prompt are already in the KV cache (prefix hits, earlier
    chunks). Logits are computed for the last token of each prompt only.
    """
    b = np.asarray(batch, float)
    n = np.asarray(input_tokens, float)
    c0 = np.asarray(cached_tokens, float)
    ctx = c0 + n
    pairs_full = n * c0 + n * (n + 1) / 2
    kv_sw, pairs_sw = _window_sums(ctx, n, sm.window)
    return sm.step(b * n, b, b, b * ctx, b * pairs_full, b * kv_sw, b * pairs_sw)


def decode_step(sm: StepModel, batch, context_len) -> StepBreakdown:
    """One decode step of ``batch`` sequences each holding ``context_len`` tokens.

    ``batch`` and ``context_len`` broadcast like numpy arrays (a sweep). For one
    batch of sequences with different contexts use :func:`decode_step_mixed`.
    """
    c = np.asarray(context_len, float)
    b = np.asarray(batch, float)
    kv_sw, _ = _window_sums(c + 1, 1.0, sm.window)
    return sm.step(b, b, b, b * (c + 1), b * (c + 1), b * kv_sw, b * kv_sw)


def decode_step_mixed(sm: StepModel, contexts) -> StepBreakdown:
    """One decode step of a batch whose sequences hold ``contexts`` tokens (1-D array)."""
    c = np.asarray(contexts, float).ravel()
    if c.size == 0:
        raise PlannerError("decode_step_mixed needs at least one sequence")
    kv_sw, _ = _window_sums(c + 1, 1.0, sm.window)
    n = float(c.size)
    s_full = float(np.sum(c + 1))
    s_sw = float(np.sum(kv_sw))
    return sm.step(n, n, n, s_full, s_full, s_sw, s_sw)


@dataclass(frozen=True)
class Estimate:
    """Static-batch estimate of one request shape (``planner estimate``)."""

    prefill_s: float
    tpot_s: float
    ttft_s: float
    e2e_s: float
    output_tok_s: float
    total_tok_s: float
    prefill: StepBreakdown
    decode_mid: StepBreakdown


def estimate(
    sm: StepModel, batch: int, input_len: int, output_len: int, decode_samples: int = 16
) -> Estimate:
    """Static batch: prefill of ``batch`` prompts, then ``output_len - 1`` decode steps.

    TPOT is the mean decode-step time over the context growing from ``input_len``
    to ``input_len + output_len - 1`` (integrated on ``decode_samples`` points).
    """
    require_positive("batch", batch)
    require_positive("input_len", input_len)
    require_positive("output_len", output_len)
    pf = prefill(sm, batch, input_len)
    steps = max(output_len - 1, 0)
    if steps:
        ctxs = np.linspace(input_len, input_len + steps - 1, min(decode_samples, steps))
        dec = decode_step(sm, batch, ctxs)
        tpot = float(np.mean(dec.time_s))
    else:
        tpot = 0.0
    mid = decode_step(sm, batch, input_len + steps // 2)
    e2e = pf.time_s + tpot * steps
    return Estimate(
        prefill_s=float(pf.time_s),
        tpot_s=tpot,
        ttft_s=float(pf.time_s),
        e2e_s=float(e2e),
        output_tok_s=batch * output_len / e2e,
        total_tok_s=batch * (input_len + output_len) / e2e,
        prefill=pf,
        decode_mid=mid,
    )


def prefill_time(sm: StepModel, batch: float, input_tokens: float) -> float:
    """``prefill(sm, batch, input_tokens).time_s`` on the scalar path [s]."""
    pairs = input_tokens * (input_tokens + 1) / 2
    if sm.window:
        kv_sw, pairs_sw = min(input_tokens, sm.window), window_pairs(0, input_tokens, sm.window)
    else:
        kv_sw = pairs_sw = 0.0
    return sm.step_time(
        batch * input_tokens,
        batch,
        batch,
        batch * input_tokens,
        batch * pairs,
        batch * kv_sw,
        batch * pairs_sw,
    )


def decode_time(sm: StepModel, batch: float, context_len: float) -> float:
    """``decode_step(sm, batch, context_len).time_s`` on the scalar path [s]."""
    c = context_len + 1
    sw = min(c, sm.window) if sm.window else 0.0
    return sm.step_time(batch, batch, batch, batch * c, batch * c, batch * sw, batch * sw)


def mean_decode_time(
    sm: StepModel, batch: float, input_tokens: float, output_tokens: float, samples: int = 4
) -> float:
    """Mean decode-step time while contexts grow from ``input_tokens`` to
    ``input_tokens + output_tokens - 1`` [s]."""
    steps = max(output_tokens - 1, 1)
    if samples <= 1 or steps <= 1:
        return decode_time(sm, batch, input_tokens + steps / 2)
    # decode time is piecewise linear in context; Gauss-like midpoint samples
    tot = 0.0
    for i in range(samples):
        tot += decode_time(sm, batch, input_tokens + (i + 0.5) * steps / samples)
    return tot / samples
