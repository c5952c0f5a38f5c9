"""Speculative decoding in the simulator: requests run as verify steps, results map back.

The event loop advances a decoding sequence by one position per iteration. With
speculative decoding one iteration (a verify step, priced by the step model at width
``K + 1`` plus the draft passes) gives a sequence ``A`` tokens, ``1 <= A <= K + 1``, mean
``AL``. So a request of ``n`` output tokens is run as ``1 + s`` loop tokens (the first token
from prefill, then ``s`` verify steps), ``s`` drawn per request (:func:`verify_steps`); the
result's per-request output is set back to ``n`` (:func:`as_tokens`), so TPOT = (E2E - TTFT)
/ (n - 1) and token throughput count real tokens while every step's time is the verify
step's. Gains fall with batch size because the verify width multiplies the batch's token
terms (GEMM FLOPs, activations, expert weights touched) once decode stops being weight-bound;
measured gains of MoE models fall faster at concurrency >= 32 than this gives (docs/formulas.md
section 5c, "Validation").

Per-step acceptance: a chain draft accepted position by position with probability ``a``
(the standard model of speculative sampling, Leviathan et al. 2023): ``P(A = j) = a^(j-1)
(1 - a)`` for ``j <= K`` and ``P(A = K + 1) = a^K``, mean ``(1 - a^(K+1)) / (1 - a)``;
``a`` is solved from AL (:func:`acceptance_rate`). ``s`` is the renewal count of ``n - 1``
tokens, drawn from its normal approximation (mean ``(n-1)/AL``, variance ``(n-1) var(A) /
AL^3``), clipped to ``[ceil((n-1)/(K+1)), n-1]``.

Approximations (docs/formulas.md "Speculative decoding"): the loop's context grows one token
per step, not AL, so a decoder's KV reads and blocks lag by up to ``(1 - 1/AL)`` of its output
(small when prompts are long next to outputs); the inter-token-latency histogram weights
each step by the sequences it advanced, not by their tokens.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.catalog.speculative import SpecDecode
from planner.workload.workload import Requests

__all__ = ["acceptance_rate", "as_tokens", "as_verify_steps", "step_tokens_var", "verify_steps"]


def acceptance_rate(spec_tokens: int, acceptance_length: float) -> float:
    """Per-position acceptance probability ``a`` whose chain of ``K`` drafts gives mean
    ``acceptance_length`` tokens per step (bisection on ``(1 - a^(K+1)) / (1 - a)``)."""
    k = int(spec_tokens)
    al = float(acceptance_length)
    if al <= 1.0:
        return 0.0
    if al >= k + 1:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        a = 0.5 * (lo + hi)
        mean = (1.0 - a ** (k + 1)) / (1.0 - a)
        lo, hi = (a, hi) if mean < al else (lo, a)
    return 0.5 * (lo + hi)


def step_tokens_var(spec_tokens: int, acceptance_length: float) -> float:
    """Variance of the tokens one verify step gives [tokens^2] (the chain model above)."""
    k = int(spec_tokens)
    a = acceptance_rate(k, acceptance_length)
    j = np.arange(1, k + 2, dtype=float)
    p = np.where(j <= k, a ** (j - 1) * (1 - a), a**k)
    mean = float((j * p).sum())
    return float(((j - mean) ** 2 * p).sum())


def verify_steps(output_tokens, spec: SpecDecode, rng: np.random.Generator) -> np.ndarray:
    """Verify steps each request's ``output_tokens`` need after the first token (drawn)."""
    n = np.asarray(output_tokens, dtype=np.int64)
    rest = np.maximum(n - 1, 0).astype(float)
    al = spec.acceptance_length
    var = step_tokens_var(spec.spec_tokens, al)
    mean = rest / al
    sd = np.sqrt(rest * var / al**3)
    s = np.rint(mean + sd * rng.standard_normal(len(n)))
    lo = np.ceil(rest / (spec.spec_tokens + 1))
    return np.clip(s, lo, rest).astype(np.int64)


def as_verify_steps(spec: SpecDecode | None, reqs: Requests) -> Requests:
    """``reqs`` with each output length replaced by ``1 + verify steps`` (the loop's tokens);
    ``reqs`` itself without speculative decoding. Deterministic: the draw is seeded by the
    request count."""
    if spec is None:
        return reqs
    rng = np.random.default_rng(len(reqs) + 7919)
    steps = verify_steps(reqs.output_tokens, spec, rng)
    out = np.where(reqs.output_tokens > 0, 1 + steps, reqs.output_tokens)
    return replace(reqs, output_tokens=out.astype(reqs.output_tokens.dtype))


def as_tokens(spec: SpecDecode | None, result, reqs: Requests):
    """The simulation ``result`` of :func:`as_verify_steps` requests with their real output
    lengths back (TPOT and token throughput then count tokens)."""
    if spec is None:
        return result
    result.output_tokens = np.asarray(reqs.output_tokens).copy()
    return result
