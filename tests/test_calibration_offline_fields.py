"""A node fitted only on offline throughput rows moves only the efficiencies, however many
publications its rows come from (``planner.calibration.fit.OVERHEAD_BLIND_KINDS``).

An offline row times a whole run of mixed prompt + decode iterations, so a slower kernel, a
fixed cost per layer and eager dispatch per layer trade off against each other. Measured on
the bundled data (docs/changes/2026-12-07/sgl053.md): with InferenceX held out, the SGLang H200 node had
20 offline DeepSeek rows of two publications (dstack 0.4.3.post2 and GPUStack 0.5.3). It
was allowed every field, and its parent (SGLang on NVIDIA, 20 offline rows and the SGLang
cookbook's serving rows) set eager dispatch to 1.36 ms per layer, 5.5x the NVIDIA node's
0.247 ms. dstack's 32-prompt TP8 wave then came out 3.6x slower than the same parameters
without eager dispatch (1,309 against 4,725 total tok/s).
"""

from __future__ import annotations

import dataclasses

import pytest
from test_calibration import START, synth_csv, synth_rows  # noqa: F401 (fixtures)

from planner.calibration import fit_profile
from planner.calibration.fit import (
    FIT_FIELDS,
    ONE_SOURCE_FIELDS,
    OVERHEAD_BLIND_KINDS,
    _free_fields,
)

OVERHEADS = tuple(f for f in FIT_FIELDS if f not in ONE_SOURCE_FIELDS)


def _as(rows, kind: str, source: str):
    return [dataclasses.replace(r, fit_kind=kind, source=source) for r in rows]


def _two_sources(rows, kind_a: str, kind_b: str):
    """The first half as publication A of ``kind_a``, the rest as B of ``kind_b``."""
    h = len(rows) // 2
    return _as(rows[:h], kind_a, "publication A") + _as(rows[h:], kind_b, "publication B")


def test_offline_is_the_blind_kind():
    assert OVERHEAD_BLIND_KINDS == ("offline",)


@pytest.mark.parametrize(
    ("kinds", "n_sources", "free"),
    [
        (("offline", "offline"), 2, ONE_SOURCE_FIELDS),  # the new rule
        (("offline", "offline"), 1, ONE_SOURCE_FIELDS),  # one publication (unchanged)
        (("offline", "static"), 2, FIT_FIELDS),  # static batches time fixed batches
        (("offline", "single"), 2, FIT_FIELDS),  # single-stream decode
        (("offline", "serving"), 2, FIT_FIELDS),  # closed-loop serving rows
        (("static", "static"), 1, ONE_SOURCE_FIELDS),  # one publication (unchanged)
        (("offline", "step"), 2, FIT_FIELDS),  # step rows always
        (("offline", "step"), 1, FIT_FIELDS),
    ],
)
def test_free_fields_by_kinds(synth_rows, kinds, n_sources, free):  # noqa: F811
    rows = _two_sources(list(synth_rows), *kinds)
    if n_sources == 1:
        rows = [dataclasses.replace(r, source="publication A") for r in rows]
    assert _free_fields(rows) == free


def test_one_step_row_frees_the_overheads(synth_rows):  # noqa: F811
    rows = _two_sources(list(synth_rows), "offline", "offline")
    assert _free_fields(rows) == ONE_SOURCE_FIELDS
    rows[-1] = dataclasses.replace(rows[-1], fit_kind="step")
    assert _free_fields(rows) == FIT_FIELDS


@pytest.fixture(scope="module")
def two_offline_profile(synth_rows):  # noqa: F811
    """The synthetic step rows relabelled as two publications' offline rows."""
    return fit_profile(_two_sources(list(synth_rows), "offline", "offline"), prior_scale=10.0,
                       max_nfev=100)  # fmt: skip


def test_two_offline_sources_keep_the_start_overheads(two_offline_profile):
    """The global node's parent is the start point: its overheads come back unchanged (to
    the 5 significant digits a profile keeps), while an efficiency moves by more than 5%."""
    root = two_offline_profile.nodes[0]
    assert root.level == 0 and len(root.sources) == 2
    for f in OVERHEADS:
        assert getattr(root.params, f) == pytest.approx(getattr(START, f), rel=1e-4), f
    assert any(abs(getattr(root.params, f) / getattr(START, f) - 1) > 0.05
               for f in ONE_SOURCE_FIELDS)  # fmt: skip
