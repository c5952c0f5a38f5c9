"""Expected distinct routed experts a step reads: uniform or skewed expert popularity.

A MoE layer's routed-expert weights are read once per step for every expert that at least one
of the step's ``T`` tokens picks. With ``E`` experts and ``top_k`` picks per token, a given
expert is missed by one token with probability ``1 - p`` and by all ``T`` with
``(1 - p)^T = exp(-h T)``, ``h = -ln(1 - p)`` its hazard per token.

* Uniform routing (every expert equally popular, ``p = top_k / E``): the expected distinct
  experts are ``E (1 - (1 - top_k / E)^T)`` (the planner's form since the first MoE model).
* Skewed routing: DeepSeek-V3's per-rank routed-token counts vary substantially layer by
  layer and fit a log-normal better than a uniform split (DeepEP pull request #393, tokens of
  MMLU-Pro through DeepSeek-V3; EPLB exists to even them out). Let the hazards ``h`` of the
  ``E`` experts follow a Gamma distribution of mean ``lambda = -ln(1 - top_k / E)`` and squared
  coefficient of variation ``cv2`` (``EfficiencyParams.moe_route_cv2``). The expected share
  of experts no token hits is then the Laplace transform of that Gamma at ``T``,
  ``E[exp(-h T)] = (1 + cv2 lambda T)^(-1 / cv2)``, so

  ``distinct(T) = E (1 - (1 + cv2 lambda T)^(-1 / cv2))``.

  It tends to the uniform form as ``cv2 -> 0`` (``(1 + c x)^(-1/c) -> exp(-x)``), rises with
  ``T`` towards ``E``, and falls as ``cv2`` grows: popular experts are hit again and again
  while the unpopular ones stay unread until the batch is large, so a skewed router reads
  fewer weights per step at the same batch. ``cv2 = 0`` is the prior (every answer as before).

Both :meth:`planner.engine.step.StepModel.expected_experts` (numpy) and the scalar step
(:func:`planner.engine._scalar.step_time_scalar`, with the coefficients of
:func:`skew_coeffs`) use this form in the same order of operations.
"""

from __future__ import annotations

import math

import numpy as np


def skew_coeffs(
    num_experts: int, top_k: int, cv2: float, lognormal_s2: float = 0.0
) -> tuple[float, float]:
    """``(cv2 x lambda, -1 / cv2)`` of :func:`expected_distinct_experts`, or ``(0, 0)`` for
    uniform routing (``cv2`` below 1e-12, whose effect, about ``cv2 lambda T / 2`` relative,
    is under a float's precision; or no routed experts). With ``lognormal_s2 > 0``
    (:func:`lognormal_distinct_experts`, which then wins): ``(-s2, lambda)``, a negative first
    coefficient telling the scalar step to take the log-normal form."""
    if not num_experts or top_k >= num_experts:
        return 0.0, 0.0
    lam = -math.log(1.0 - top_k / num_experts)
    if lognormal_s2 > 0:
        return -lognormal_s2, lam
    if cv2 < 1e-12:
        return 0.0, 0.0
    return cv2 * lam, -1.0 / cv2


def expected_distinct_experts(tokens, local: float, num_experts: int, top_k: int, cv2: float):
    """Expected distinct experts of ``local`` (the GPU's share of the ``num_experts``) hit by
    ``tokens`` tokens choosing ``top_k`` each [experts]; skew ``cv2`` (module docstring).

    Parameters
    ----------
    tokens : tokens routed in the step (broadcasts) [tokens]
    local : routed experts held by the GPU (``num_experts / ep``) [experts]
    num_experts, top_k : the model's routed experts and picks per token
    cv2 : squared coefficient of variation of the experts' popularity (0: uniform)
    """
    t = np.asarray(tokens, dtype=float)
    a, b = skew_coeffs(num_experts, top_k, cv2)
    if a == 0.0:
        return local * (1.0 - (1.0 - top_k / num_experts) ** t)
    return local * (1.0 - np.exp(b * np.log1p(a * t)))  # (1 + a t)^b, exact for small a


#: Gauss-Hermite nodes and weights (24 points) of the log-normal popularity's expectation
#: (:func:`lognormal_distinct_experts`; the scalar step reads the same tuples)
_GH = np.polynomial.hermite.hermgauss(24)
GH_X: tuple[float, ...] = tuple(float(v) for v in _GH[0])
GH_W: tuple[float, ...] = tuple(float(v) / math.sqrt(math.pi) for v in _GH[1])


def lognormal_distinct_experts(tokens, local: float, num_experts: int, top_k: int, s2: float):
    """Expected distinct experts of ``local`` hit by ``tokens`` tokens [experts] when the
    experts' per-token hazards are log-normal, ``h = lambda exp(sigma Z - s2 / 2)`` (mean
    ``lambda = -ln(1 - top_k / E)``, ``s2 = sigma^2``; the family DeepEP pull request #393 found
    to fit DeepSeek-V3's per-rank counts best): ``local (1 - E[exp(-h T)])``, the expectation
    by 24-point Gauss-Hermite quadrature (``Z = sqrt(2) x``). Unlike the Gamma form's
    near-zero tail (shape ``1 / cv2``), a log-normal of the same variance leaves few experts
    unread once ``T`` is large. ``s2 <= 0``: uniform routing.

    Example: DeepSeek-R1, all 256 experts, s2 = 1.415: 76.4 experts at 16 tokens, 195.9 at
    128, 251.6 at 1,024 (uniform 102.0 / 251.6 / 256; Gamma of the same variance 66.9 /
    144.5 / 197.1)."""
    t = np.asarray(tokens, dtype=float)
    if s2 <= 0 or not num_experts or top_k >= num_experts:
        return local * (1.0 - (1.0 - top_k / num_experts) ** t)
    lam = -math.log(1.0 - top_k / num_experts)
    sig = math.sqrt(2.0 * s2)
    miss = 0.0 * t
    for x, w in zip(GH_X, GH_W, strict=True):  # the scalar step's order of operations
        miss = miss + w * np.exp(-lam * t * math.exp(sig * x + 0.5 * -s2))
    return local * (1.0 - miss)
