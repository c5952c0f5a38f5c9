"""scripts/dep_operating_points.py: where Little's line of a run meets a padded decode-step curve,
by hand, and the time-weighted decode context of the MLPerf DeepSeek-R1 set (docs/changes/2026-12-07e/b200dep.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location(
        "dep_operating_points", ROOT / "scripts" / "dep_operating_points.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_two_stable_points_across_a_graph_jump_by_hand():
    # A step of 40 ms up to 256 sequences a rank (one captured graph) and 58 ms above it (the
    # next, 384), Little's line of 40,949 tok/s over 8 ranks (MLPerf v6.0 Dell B200, mlds60-0029):
    # lower branch 8 s = 40,949 x 0.040 -> s = 204.745 (stable);
    # at the jump h(256) = 1,637.96 - 2,048 = -410.04, h(257) = 2,375.04 - 2,056 = 319.04:
    #   unstable crossing at 256 + 410.04 / 729.08 = 256.5624;
    # upper branch 8 s = 40,949 x 0.058 -> s = 296.8803 (stable)
    mod = _script()
    s = np.arange(8.0, 641.0, 1.0)
    step = np.where(s <= 256, 0.040, 0.058)
    fps = mod.fixed_points(s, step, 40949.0, 8)
    assert [st_ for _, st_ in fps] == [True, False, True]
    assert [x for x, _ in fps] == pytest.approx([204.745, 256.5624, 296.8803], abs=1e-3)


@settings(max_examples=50, deadline=None)
@given(
    step_ms=st.floats(min_value=5.0, max_value=100.0),
    rate=st.floats(min_value=1_000.0, max_value=60_000.0),
    ranks=st.sampled_from([1, 4, 8]),
)
def test_constant_step_has_one_stable_point(step_ms, rate, ranks):
    # a flat step: the one point is rate x step / ranks, stable, wherever it falls in the grid
    mod = _script()
    s = np.arange(1.0, 20_001.0, 1.0)
    fps = mod.fixed_points(s, np.full(s.shape, step_ms / 1e3), rate, ranks)
    x = rate * step_ms / 1e3 / ranks
    if 1.0 < x < 20_000.0:
        assert len(fps) == 1 and fps[0][1]
        assert fps[0][0] == pytest.approx(x, rel=1e-9)
    else:
        assert len(fps) <= 1


def test_decode_context_weights_long_answers():
    # E[ISL] + E[OSL^2] / (2 E[OSL]) >= E[ISL] + E[OSL] / 2 (Jensen); the set's answers are
    # heavy tailed (up to 20,000 tokens), so the time-weighted context is well above the mean
    mod = _script()
    inp, out = mod.mlperf_deepseek_r1_lengths()
    rng = np.random.default_rng(1)
    i = np.asarray(inp.sample(200_000, rng), float)
    o = np.asarray(out.sample(200_000, rng), float)
    c = mod.decode_context_tokens()
    assert c > i.mean() + o.mean() / 2.0
    assert c == pytest.approx(i.mean() + (o * o).mean() / (2.0 * o.mean()), rel=0.02)
