"""The sourced bound on the fitted per-sequence cost (planner.calibration.seq_bound, OFF)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from planner.calibration import fit, seq_bound
from planner.catalog.efficiency import PRIOR


@dataclass
class _Row:
    """A step row whose step time is 10 ms + seq_overhead_s x 128 sequences."""

    value: float
    source: str = "s"
    fit_kind: str = "step"

    def fit_predictor(self, kinds):
        return lambda p: 0.010 + p.seq_overhead_s * 128


@pytest.fixture
def on(monkeypatch):
    monkeypatch.setattr(seq_bound, "APPLY", True)


def test_bound_value():
    # 4 x (9.08 us host + 2.87 us device) = 4 x 11.95 us = 47.8 us
    assert pytest.approx(47.8e-6, rel=1e-9) == seq_bound.SEQ_OVERHEAD_MAX_S


def test_off_is_the_fit_bounds():
    for f, b in fit.FIT_BOUNDS.items():
        assert fit._bounds(f) == b


def test_on_lowers_only_seq_overhead(on):
    assert fit._bounds("seq_overhead_s") == (1e-9, seq_bound.SEQ_OVERHEAD_MAX_S, 2.5)
    for f, b in fit.FIT_BOUNDS.items():
        if f != "seq_overhead_s":
            assert fit._bounds(f) == b


def _fitted_seq(rows):
    parent = PRIOR.with_(seq_overhead_s=1e-5)
    p, _ = fit._fit_node(rows, parent, prior_scale=1.0, max_nfev=200)
    return p.seq_overhead_s


# rows that ask for 120 us a sequence: 10 ms + 128 x 120 us = 25.36 ms
ROWS = [_Row(0.010 + 128 * 120e-6) for _ in range(20)]


def test_fit_takes_120us_when_off():
    assert _fitted_seq(ROWS) == pytest.approx(120e-6, rel=0.05)


def test_fit_stops_at_the_bound_when_on(on):
    assert _fitted_seq(ROWS) == pytest.approx(seq_bound.SEQ_OVERHEAD_MAX_S, rel=1e-3)


def test_fit_below_the_bound_unchanged(on, monkeypatch):
    rows = [_Row(0.010 + 128 * 20e-6) for _ in range(20)]
    on_v = _fitted_seq(rows)
    monkeypatch.setattr(seq_bound, "APPLY", False)
    assert on_v == pytest.approx(_fitted_seq(rows), rel=1e-6)
    # the prior pulls it toward the parent's 10 us (18.4 us fitted)
    assert on_v == pytest.approx(20e-6, rel=0.15)
