"""InferenceX's reading of a throughput-interactivity front (scripts/ix_pareto.py; issue 29,
"Done when" item 2): the upper-left Pareto front, a monotone cubic (Steffen) through it, no
extrapolation above it. Values derived by hand below; the algorithm is InferenceX-app's
``useThroughputData.ts`` (``paretoFrontUpperLeft``, ``monotoneSlopes``,
``hermiteInterpolate``)."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import REPO_ROOT
from hypothesis import given, settings
from hypothesis import strategies as st


def _load(name):
    sys.path.insert(0, str(REPO_ROOT / "scripts"))
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


ixp = _load("ix_pareto")


def test_pareto_front_by_hand():
    """Sorted by interactivity (x) ascending, throughput (y) descending on ties:
    (10,100) (15,70) (20,90) (20,80) (25,60) (30,50). (20,90) removes (15,70) (more
    interactivity and more throughput); (20,80) is a tie in x with a lower y: dropped."""
    pts = [(10, 100), (20, 80), (20, 90), (15, 70), (30, 50), (25, 60)]
    assert ixp.pareto_upper_left(pts) == [(10, 100), (20, 90), (25, 60), (30, 50)]


def test_pareto_front_drops_non_finite():
    assert ixp.pareto_upper_left([(10, float("nan")), (float("inf"), 5), (3, 4)]) == [(3, 4)]


def test_collinear_points_give_the_straight_line():
    """xs 0, 1, 2; ys 0, 2, 4: secants 2, 2; interior tangent (1 + 1) x min(2, 2, 0.5 x 2)
    = 2; end tangents (3 x 2 - 2) / 2 = 2; at 0.5 the Hermite basis (0.5, 0.125, 0.5,
    -0.125) gives 0.125 x 2 + 0.5 x 2 - 0.125 x 2 = 1."""
    assert ixp.monotone_slopes([0, 1, 2], [0, 2, 4]) == [2, 2, 2]
    assert ixp.hermite([0, 1, 2], [0, 2, 4], [2, 2, 2], 0.5) == pytest.approx(1.0)


def test_monotone_cubic_by_hand():
    """Front (10, 300), (20, 200), (40, 100): secants s0 = -10, s1 = -5; interior tangent
    p = (-10 x 20 - 5 x 10) / 30 = -8.3333, m1 = -2 x min(10, 5, 4.16667) = -8.3333; ends
    m0 = (3 x -10 + 8.3333) / 2 = -10.8333, m2 = (3 x -5 + 8.3333) / 2 = -3.3333.
    At 30 (t = 0.5, width 20): 0.5 x 200 + 0.125 x 20 x -8.3333 + 0.5 x 100 - 0.125 x 20 x
    -3.3333 = 100 - 20.8333 + 50 + 8.3333 = 137.5 (a straight line would say 150).
    At 15 (t = 0.5, width 10): 150 - 13.5417 + 100 + 10.4167 = 246.875."""
    pts = [(20, 200), (10, 300), (40, 100)]
    xs, ys = [10, 20, 40], [300, 200, 100]
    m = ixp.monotone_slopes(xs, ys)
    assert m == pytest.approx([-10.833333, -8.333333, -3.333333])
    assert ixp.value_at(pts, 30) == pytest.approx(137.5)
    assert ixp.value_at(pts, 15) == pytest.approx(246.875)
    # at a knot, the knot; above the front, nothing; below it, the front's highest throughput
    assert ixp.value_at(pts, 40) == pytest.approx(100)
    assert ixp.value_at(pts, 40.01) is None
    assert ixp.value_at(pts, 5) == 300
    assert ixp.value_at([], 5) is None


_front = st.lists(st.tuples(st.floats(1, 200), st.floats(1, 5_000)), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(_front, st.floats(1, 200), st.floats(1, 200))
def test_reading_is_monotone_and_stays_between_the_knots(pts, a, b):
    """A monotone cubic never overshoots: the value lies between the throughputs of the two
    front points around the level, and a higher level never reads more throughput."""
    front = ixp.pareto_upper_left(pts)
    lo, hi = sorted((a, b))
    v_lo, v_hi = ixp.value_at(pts, lo), ixp.value_at(pts, hi)
    if v_hi is not None:
        assert v_lo is not None and v_lo >= v_hi - 1e-9 * max(1.0, v_lo)
    for lv, v in ((lo, v_lo), (hi, v_hi)):
        if v is None:
            assert lv > front[-1][0]
            continue
        below = [y for x, y in front if x <= lv]
        above = [y for x, y in front if x >= lv]
        top = below[-1] if below else front[0][1]
        bottom = above[0] if above else front[-1][1]
        assert bottom - 1e-9 * top <= v <= top + 1e-9 * top


@pytest.fixture(scope="module")
def h200_points():
    r1 = _load("r1_frontier")
    pts = r1.points(("nvidia-h200-sxm",), ("1024/1024",))
    return pts[(pts["n_gpus"] == 8) & pts["kind"].isin(["TP", "TP+EP", "DEP"])]


def test_h200_measured_front_at_60_by_hand(h200_points):
    """InferenceX's H200 SGLang fp8 TP8 1k/1k points (output tok/s per GPU, 1000 / median
    TPOT) have the front (32.77, 259.80) c64, (64.99, 126.62) c16 (ixm-0492/0493), (85.40,
    82.37) c8, (102.77, 49.17) c4. At 60 tok/s/user: s0 = -133.18 / 32.22 = -4.1334, s1 =
    -44.25 / 20.41 = -2.1681; m1 = -2 x min(4.1334, 2.1681, 0.5 x 2.9302) = -2.9302, m0 =
    (3 x -4.1334 + 2.9302) / 2 = -4.7350; t = 27.23 / 32.22 = 0.84513, basis (0.06454,
    0.02028, 0.93546, -0.11061): 16.767 - 3.094 + 118.448 + 10.443 = 142.56 tok/s/GPU.
    The step reading (best point reaching 60) says 126.6: the front between c16 and c64
    is what InferenceX's calculator reports at 60."""
    g = h200_points[(h200_points["framework"] == "sglang") & (h200_points["precision"] == "fp8")]
    pts = list(zip(1000 / g["measured_tpot_ms"], g["measured_thr"] / 8, strict=True))
    front = ixp.pareto_upper_left(pts)
    assert [round(x, 2) for x, _ in front] == [32.77, 64.99, 85.40, 102.77]
    assert ixp.value_at(pts, 60.0) == pytest.approx(142.56, abs=0.05)
