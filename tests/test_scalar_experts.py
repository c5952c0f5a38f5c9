"""``planner.engine._scalar.distinct_experts``: the one copy of the distinct-experts
formula the step and its draft passes share (hand-derived values)."""

from __future__ import annotations

import math

import pytest

from planner.engine._scalar import distinct_experts


def test_uniform_routing():
    # one token routed to 8 of 256 experts: q = 1 - 8/256, 256 x (1 - q) = 8 distinct
    assert distinct_experts(256.0, 1 - 8 / 256, 0.0, 0.0, 1.0) == pytest.approx(8.0)
    # T tokens: 256 x (1 - q^T); 0 tokens read none
    assert distinct_experts(256.0, 0.96875, 0.0, 0.0, 64.0) == pytest.approx(
        256 * (1 - 0.96875**64)
    )
    assert distinct_experts(256.0, 0.96875, 0.0, 0.0, 0.0) == 0.0


def test_gamma_popularity():
    # skew_a 1, skew_b -1, T 1: 256 x (1 - (1 + 1)^-1) = 128
    assert distinct_experts(256.0, 0.0, 1.0, -1.0, 1.0) == pytest.approx(128.0)


def test_lognormal_popularity_tends_to_uniform_as_sigma_vanishes():
    # s2 -> 0: every expert has rate lambda T, missed with probability exp(-lambda T)
    lam, t = 8 / 256, 10.0
    got = distinct_experts(256.0, 0.0, -1e-12, lam, t)
    assert got == pytest.approx(256 * (1 - math.exp(-lam * t)), rel=1e-6)


def test_dense_model_reads_no_experts():
    assert distinct_experts(0.0, 0.0, 1.0, -1.0, 100.0) == 0.0
