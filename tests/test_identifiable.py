"""A node's comm_eff is moved by the fit only where its TP > 1 rows come from two or more
publications (planner/calibration/identifiable.py; switch COMM_NEEDS_TWO_SOURCES, off)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from planner.calibration import identifiable
from planner.calibration.fit import FIT_FIELDS, ONE_SOURCE_FIELDS, _free_fields
from planner.calibration.identifiable import comm_sources
from planner.calibration.identifiable import identifiable as ident


def _row(source, tp, kind="offline"):
    return SimpleNamespace(source=source, tp=tp, fit_kind=kind)


# the vLLM/H100/fp8 dense node's shape: TP1 rows of two sources, TP8 rows of one (dstack)
DENSE = [_row("argonne", 1, "static")] * 3 + [_row("issue", 1)] * 2 + [_row("dstack", 8)] * 4


def test_comm_sources_counts_publications_of_tp_rows_only():
    assert comm_sources(DENSE) == 1  # argonne and issue are TP1
    assert comm_sources([*DENSE, _row("gpustack", 2)]) == 2
    assert comm_sources(DENSE[:5]) == 0


def test_off_by_default_and_changes_nothing():
    assert identifiable.COMM_NEEDS_TWO_SOURCES is False
    assert _free_fields(DENSE) == FIT_FIELDS


@pytest.fixture
def on(monkeypatch):
    monkeypatch.setattr(identifiable, "COMM_NEEDS_TWO_SOURCES", True)


def test_on_one_tp_source_keeps_the_parent_comm_eff(on):
    free = _free_fields(DENSE)
    assert "comm_eff" not in free
    assert set(FIT_FIELDS) - set(free) == {"comm_eff"}


def test_on_two_tp_sources_fit_comm_eff(on):
    assert _free_fields([*DENSE, _row("gpustack", 2)]) == FIT_FIELDS


def test_on_step_rows_and_one_source_nodes_are_unchanged(on):
    # timed decode / prefill steps separate the terms: all fields, as before
    assert _free_fields([*DENSE, _row("own", 2, "step")]) == FIT_FIELDS
    # one publication: only the efficiencies, comm_eff never among them
    assert _free_fields(DENSE[5:]) == ONE_SOURCE_FIELDS
    assert "comm_eff" not in ONE_SOURCE_FIELDS
    assert ident(("comm_eff", "mem_eff"), DENSE) == ("mem_eff",)
