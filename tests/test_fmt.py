"""planner.fmt: the one formatter of the app, the CLI tables and the Markdown report.

Expected strings are written out by hand from the rules in the module docstring."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner import fmt
from planner.report import human


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (12966, "12,966"),  # a count: whole, separators (issue 18: "12966" GPUs)
        (10_000.0, "10,000"),  # "1e+04 TFLOPS" in `planner gpus`
        (27010.0, "27,010"),  # "2.701e+04" in the Markdown report
        (1e6, "1,000,000"),  # "1e+06 req/s"
        (2.7012, "2.701"),  # 4 significant digits
        (0.05, "0.05"),  # trailing zeros dropped
        (0.0, "0"),
        (-1234.5, "-1,235"),  # ties away from zero, as the app's tables round
        (1350.5, "1,351"),  # (Python's format would give 1,350: half to even)
        (None, "-"),
        (math.nan, "-"),
        (math.inf, "-"),
    ],
)
def test_num(value, text):
    assert fmt.num(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (17_510_400.0, "$17,510,400"),
        (
            1350.5,
            "$1,351",
        ),  # the Plan metric and its table cell agree  # whole dollars from $1,000 (the truncated metric)
        (23987.10, "$23,987"),  # "$23987.10"
        (31.7125, "$31.71"),  # cents from $1
        (1.0, "$1.00"),
        (0.0875, "$0.0875"),  # 3 significant digits below $1
        (0.5181, "$0.518"),
        (0.0, "$0.00"),
        (-12.5, "-$12.50"),
        (None, "-"),
    ],
)
def test_usd(value, text):
    assert fmt.usd(value) == text


def test_seconds_count_rate():
    assert fmt.seconds(0.7233) == "723.3 ms"
    assert fmt.seconds(0.04157) == "41.57 ms"
    assert fmt.seconds(12.5) == "12.5 s"
    assert fmt.count(12966.0) == "12,966"
    assert fmt.rate(1e6) == "1,000,000 req/s"
    assert fmt.rate(10.5) == "10.5 req/s"


def test_fixed():
    assert fmt.fixed(1234.56, 1) == "1,234.6"
    assert fmt.fixed(723.4, 0) == "723"
    assert fmt.fixed(1350.5, 0) == "1,351"  # half away from zero, as fmt._fixed
    assert fmt.fixed(0.41249, 3) == "0.412"
    assert fmt.fixed(1e7, 2) == "10,000,000.00"
    assert fmt.fixed(float("nan"), 1) == fmt.fixed(None, 1) == "-"


def test_cli_tables_use_it():
    assert human("fp4_dense_tflops", 10_000.0) == "10,000 TFLOPS"
    assert human("usd_per_month", 23987.1) == "$23,987"
    assert human("usd_per_mtok_output", 0.0875) == "$0.0875"
    assert human("j_per_tok", 27010.0) == "27,010"
    assert human("interconnect_gbs_unidir", 535.5) == "535.5 GB/s"


@given(st.floats(min_value=1e-6, max_value=1e15, allow_nan=False))
def test_never_an_exponent_and_the_value_survives(x):
    for text in (fmt.num(x), fmt.usd(x).lstrip("$")):
        assert "e" not in text.lower()
        back = float(text.replace(",", ""))
        # num keeps 4 significant digits (whole numbers above 1,000); usd 3 below $1,
        # cents from $1, whole dollars from $1,000: at most half a unit in the last place
        assert back == pytest.approx(x, rel=5e-3, abs=0.5 + 1e-9)
    assert re.fullmatch(r"-?[\d,]+(\.\d+)?", fmt.num(x))
