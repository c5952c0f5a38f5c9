"""A node fitted on one publication's throughput rows moves only the efficiencies.

One source's offline or static rows come from one setup, and they cannot tell a fixed cost
per layer or per step from a slower kernel: the 12 dstack H200 SGLang rows were explained
equally well by 1.5 ms of eager dispatch per layer and by 0.8 ms of fixed cost per layer,
and which of the two the fit returned flipped with unrelated rows elsewhere. Such a node
keeps its parent's overheads (``planner.calibration.fit.ONE_SOURCE_FIELDS``); step rows,
which time decode and prefill steps apart, and rows of several sources still fit them all.
"""

from __future__ import annotations

import dataclasses

import pytest
from test_calibration import START, TRUE, synth_csv, synth_rows  # noqa: F401 (fixtures)

from planner.calibration import fit_profile
from planner.calibration.fit import FIT_FIELDS, ONE_SOURCE_FIELDS, _free_fields

OVERHEADS = tuple(f for f in FIT_FIELDS if f not in ONE_SOURCE_FIELDS)


def _as(rows, kind: str, source: str | None = None):
    return [dataclasses.replace(r, fit_kind=kind, source=source or r.source) for r in rows]


def test_one_source_fields_are_efficiencies_only():
    assert set(ONE_SOURCE_FIELDS) < set(FIT_FIELDS)
    assert {"layer_overhead_s", "eager_layer_s", "step_overhead_s"} <= set(OVERHEADS)


def test_free_fields_by_sources_and_kinds(synth_rows):  # noqa: F811
    step = list(synth_rows)
    assert {r.source for r in step} == {"synthetic"}
    assert _free_fields(step) == FIT_FIELDS  # one source, but step rows
    offline = _as(step, "offline")
    assert _free_fields(offline) == ONE_SOURCE_FIELDS
    two = _as(step[:10], "static") + _as(step[10:], "static", "another publication")
    assert _free_fields(two) == FIT_FIELDS
    # offline rows of two publications still cannot (tests/test_calibration_offline_fields.py)
    two_offline = offline[:10] + _as(offline[10:], "offline", "another publication")
    assert _free_fields(two_offline) == ONE_SOURCE_FIELDS


@pytest.fixture(scope="module")
def one_source_profile(synth_rows):  # noqa: F811
    """The synthetic step rows relabelled as one source's offline rows (same predictors)."""
    return fit_profile(_as(synth_rows, "offline"), prior_scale=10.0, max_nfev=100)


def test_one_source_node_keeps_the_start_overheads(one_source_profile):
    root = one_source_profile.nodes[0]
    assert root.level == 0 and root.sources == ("synthetic",)
    for f in OVERHEADS:  # the global node's parent is the start point
        assert getattr(root.params, f) == pytest.approx(getattr(START, f), rel=1e-3), f


def test_one_source_node_still_fits_the_efficiencies(synth_rows, one_source_profile):  # noqa: F811
    """With the overheads held at START (not TRUE), the efficiencies move and the node
    explains its rows better than the start point does (not exactly: the overheads are off)."""
    root = one_source_profile.nodes[0].params
    assert any(abs(getattr(root, f) / getattr(START, f) - 1) > 0.05 for f in ONE_SOURCE_FIELDS)

    def mdape(p):
        errs = sorted(abs(r.predict(p) / r.value - 1) for r in synth_rows)
        return errs[len(errs) // 2]

    assert mdape(TRUE) < 1e-9  # the rows were made with TRUE
    assert mdape(root) < 0.8 * mdape(START)
