"""The app's SVG chart kit (app_pages/svg.py): ticks, scales, escaping, margins."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest

from app_pages import svg

NS = "{http://www.w3.org/2000/svg}"


def _parse(s: str) -> ET.Element:
    return ET.fromstring(s)


def test_log_ticks_hand_checked():
    # 12 to 900 ms: the decades 100 alone are fewer than 3 -> 1-2-5 per decade
    assert svg.log_ticks(12, 900) == [20, 50, 100, 200, 500]
    # 3 to 40,000: the powers of ten suffice
    assert svg.log_ticks(3, 40_000) == [10, 100, 1_000, 10_000]
    # a narrow range: every 1..9 x 10^k
    assert svg.log_ticks(31, 48) == [40]  # only one exists: no more are invented
    assert svg.log_ticks(21, 48) == [30, 40]
    assert svg.nice_log_domain(12, 900) == (10, 1000)
    assert svg.nice_log_domain(23, 410) == (20, 500)
    with pytest.raises(ValueError):
        svg.log_ticks(0, 10)


def test_linear_ticks_and_nice_domain():
    assert svg.nice_step(1000, 5) == 200
    assert svg.linear_ticks(0, 1000) == [0, 200, 400, 600, 800, 1000]
    assert svg.linear_ticks(0, 85.5) == [0, 20, 40, 60, 80]
    assert svg.nice_linear_domain(3, 947) == (0, 1000)
    assert svg.nice_linear_domain(0.101, 0.389) == pytest.approx((0.1, 0.4))


def test_tick_labels_have_separators_and_no_exponent():
    assert svg.tick_text(1_000_000) == "1,000,000"
    assert svg.tick_text(0.0002) == "0.0002"
    assert svg.tick_text(2.5, "$") == "$2.5"
    assert svg.tick_text(-3, "$") == "-$3"
    assert svg.tick_text(1e-15) == "0"
    chart = svg.line_chart([1e5, 2e6, 4e7], [1e-4, 3e-3, 0.2], x_axis=svg.Axis("x [tok/s]"),
                           y_axis=svg.Axis("y [s]", log=True), label="t")  # fmt: skip
    for t in _parse(chart).iter(NS + "text"):
        assert not re.search(r"\de[+-]?\d", t.text or ""), t.text


def test_log_scale_maps_equal_ratios_to_equal_distances():
    s = svg.Scale((10, 1000), (300, 0), log=True)
    assert s(10) == 300 and s(1000) == 0 and s(100) == pytest.approx(150)
    lin = svg.Scale((0, 10), (0, 100))
    assert lin(2.5) == 25


def test_band_polygon_points_go_along_high_then_back_along_low():
    pts = svg.band_points([0, 1, 2], [1, 2, 3], [4, 5, 6], lambda x: 10 * x, lambda y: 100 - y)
    assert pts == "0,96 10,95 20,94 20,97 10,98 0,99"


def test_text_is_escaped():
    evil = '<script>alert("x")</script> & co'
    chart = svg.hbar_chart([svg.Bar(evil, 1.0, tooltip=evil)], x_axis=svg.Axis("a [$]"),
                           label=evil)  # fmt: skip
    assert "<script>" not in chart
    root = _parse(chart)  # well-formed XML
    assert root.get("aria-label") == evil
    assert evil in [t.text for t in root.iter(NS + "text")]
    assert evil in [t.text for t in root.iter(NS + "title")]


def test_a_long_label_widens_the_margin():
    def bar_x(name: str) -> float:
        root = _parse(svg.hbar_chart([svg.Bar(name, 1.0)], x_axis=svg.Axis("v"), label="t"))
        return float(next(root.iter(NS + "rect")).get("x"))

    short, long = bar_x("H100"), bar_x("NVIDIA H100 SXM5 80GB with a long name")
    assert long > short + 150
    # the name ends left of the bars: its estimated width fits in the margin
    assert long >= svg.text_width_px("NVIDIA H100 SXM5 80GB with a long name")


def test_point_labels_stay_inside_the_chart():
    # a labelled point at the right edge: its label is moved inside the viewBox
    pts = [svg.Point(0, 1), svg.Point(10, 2, label="#1, #2, #3 a long label at the edge")]
    root = _parse(svg.scatter_chart(pts, x_axis=svg.Axis("x [s]"), y_axis=svg.Axis("y [$]"),
                                    label="t", width=400))  # fmt: skip
    (lab,) = [t for t in root.iter(NS + "text") if t.get("class") == "pl"]
    w = svg.text_width_px(lab.text, bold=True)
    x = float(lab.get("x"))
    start = {"start": x, "middle": x - w / 2, "end": x - w}[lab.get("text-anchor")]
    assert start >= 0 and start + w <= 400


def test_charts_are_responsive_and_accessible():
    for chart in (
        svg.histogram_chart([0, 10], [10, 20], [3, 5], x_axis=svg.Axis("p [tokens]"),
                            y_axis=svg.Axis("n"), title="prompt", label="hist"),
        svg.stacked_hbar_chart([("GPU", [("a", 1.0, "#000", "a: 1")])], x_axis=svg.Axis("m [GB]"),
                               label="mem", legend=[("a", "#000")], rule=(2.0, "card", "card")),
    ):  # fmt: skip
        root = _parse(chart)
        assert root.get("width") == "100%" and root.get("role") == "img"
        assert root.get("aria-label") and len(root.get("viewBox").split()) == 4


def test_histogram_bar_heights_are_proportional_to_counts():
    root = _parse(svg.histogram_chart([0, 10, 20], [10, 20, 30], [2, 4, 0], x_axis=svg.Axis("x"),
                                      y_axis=svg.Axis("n"), title="t", label="t"))  # fmt: skip
    h = [float(r.get("height")) for r in root.iter(NS + "rect") if r.get("class") == "bar"]
    assert h[1] == pytest.approx(2 * h[0], abs=0.15) and h[2] == 0
    assert not math.isnan(sum(h))
