"""The date trend of engine speed across releases (issue 31, section 1): the arithmetic of
:func:`planner.catalog.release_profile.date_trend_ratio` (measured and left off: see
docs/changes/2026-12-07/reltrend.md)."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.catalog.release_profile import date_trend_ratio
from planner.catalog.releases import release_date, release_dates
from planner.errors import PlannerError


def test_ratio_by_hand():
    # 0.38 / year over half a year: exp(0.38 x 0.5) = exp(0.19) = 1.20925 (newer build 21% faster)
    assert date_trend_ratio(0.38, 0.5, 1.2) == pytest.approx(1.20925, rel=1e-5)
    # a node 0.8 years newer than the release asked for: exp(0.2 x -0.8) = exp(-0.16) = 0.85214
    assert date_trend_ratio(0.2, -0.8, 1.0) == pytest.approx(0.85214, rel=1e-5)


def test_gap_capped_to_fitted_range():
    # 3 years asked, trend fitted over at most 1.16 years: exp(0.38 x 1.16) = exp(0.4408) = 1.55396
    assert date_trend_ratio(0.38, 3.0, 1.16) == pytest.approx(1.55396, rel=1e-5)
    assert date_trend_ratio(0.38, -3.0, 1.16) == pytest.approx(1 / 1.55396, rel=1e-5)


@given(
    rate=st.floats(-3, 3, allow_nan=False),
    cap=st.floats(0, 5, allow_nan=False),
)
def test_zero_gap_leaves_prediction_unchanged(rate, cap):
    assert date_trend_ratio(rate, 0.0, cap) == 1.0
    assert date_trend_ratio(0.0, 2.0, cap) == 1.0  # zero rate: unchanged at any gap


@given(
    rate=st.floats(-3, 3, allow_nan=False),
    gap=st.floats(-5, 5, allow_nan=False),
    cap=st.floats(0, 5, allow_nan=False),
)
def test_ratio_bounded_and_antisymmetric(rate, gap, cap):
    r = date_trend_ratio(rate, gap, cap)
    assert math.exp(-abs(rate) * cap) * (1 - 1e-12) <= r <= math.exp(abs(rate) * cap) * (1 + 1e-12)
    # a release as far older as newer: the reciprocal ratio
    assert r * date_trend_ratio(rate, -gap, cap) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("args", [(math.nan, 1, 1), (0.1, math.inf, 1), (0.1, 1, -1)])
def test_bad_input_one_line_error(args):
    with pytest.raises(PlannerError, match="date trend"):
        date_trend_ratio(*args)


def test_release_dates_from_the_package_index():
    # data/engine_release_dates.yaml (PyPI upload times): vllm 0.11.0 2025-10-04, 0.7.3 2025-02-20
    assert release_date("vllm", "0.11.0") == dt.date(2025, 10, 4)
    # a dev build PyPI never listed: the newest listed release before it (0.7.3, not 0.8.0)
    assert release_date("vllm", "0.7.4.dev181") == dt.date(2025, 2, 20)
    # 0.17 is 0.17.0 (trailing zeros dropped, as in PEP 440): TensorRT-LLM 0.17.0, 2025-01-30
    assert release_date("trtllm", "0.17") == dt.date(2025, 1, 30)
    assert release_date("vllm", "0.0.0.dev1") is None  # before every listed release
    assert release_date("vllm", "not a version") is None
    assert release_date("nosuchengine", "1.0") is None


def test_release_dates_are_ordered_like_releases():
    # every engine: a newer final release is never uploaded before an older one by more than
    # a backport window (patch releases of an old series can follow a newer series)
    table = release_dates()
    assert {"vllm", "sglang", "trtllm"} <= set(table)
    for engine in ("vllm", "sglang"):
        days = [table[engine][k] for k in sorted(table[engine]) if k[1] == 1]
        assert days[-1] == max(days)
