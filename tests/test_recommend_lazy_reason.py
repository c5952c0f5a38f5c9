"""A memory rejection's suggestions are made only where its reason is read (issue 29).

:meth:`planner.recommend.screen._Screening.screen` builds replicas with
:data:`planner.engine.memory.DEFER_SUGGESTIONS` set, so a replica that does not fit raises
without the "Try: ..." suggestions (each ~1 ms: ~25 memory plans); the rejection keeps a
function that builds the replica again with them. Pinned here: the search makes no
suggestion while it runs; the reasons read afterwards are word for word those of a search
that makes them eagerly (the deferral switched off); a reason is made once.
"""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path

import pytest

from planner.catalog import load_catalog
from planner.engine import memory
from planner.recommend import replicas, screen
from planner.recommend.options import Rejection
from planner.recommend.search import recommend
from planner.scenario import load_scenario

REPO_ROOT = Path(__file__).resolve().parents[1]
CAT = load_catalog()
# 70B on 24-48 GB cards: many layouts whose KV cache holds no request (suggestions made)
GPUS = ("nvidia-l4", "nvidia-l40s", "nvidia-a100-80gb-sxm")


@pytest.fixture
def suggest_calls(monkeypatch):
    """Counts the suggestions made (one call per memory plan that does not fit)."""
    n = {"calls": 0}
    real = memory._suggest

    def spy(*a, **k):
        n["calls"] += 1
        return real(*a, **k)

    monkeypatch.setattr(memory, "_suggest", spy)
    monkeypatch.setenv("PLANNER_PROCESSES", "1")
    return n


def _rag():
    replicas._REPLICAS.clear()  # a first search, as in a fresh process
    sc = load_scenario(REPO_ROOT / "examples" / "rag-70b.yaml")
    return recommend(
        sc.model, sc.workload, sc.slo, catalog=CAT, headroom=sc.constraints.headroom,
        engine=sc.serving.kwargs(), gpus=GPUS,
    )  # fmt: skip


def _answer(res) -> dict:
    out = res.as_dict()
    out["summary"].pop("elapsed_s")
    return out


def test_reasons_made_when_read_equal_eager_ones(monkeypatch, suggest_calls):
    lazy = _rag()
    deferred = [r for r in lazy.rejections if not isinstance(r.why, str)]
    assert deferred, "the scenario has memory rejections"
    assert {r.stage for r in deferred} == {"memory"}
    assert suggest_calls["calls"] == 0  # none made while searching
    lazy_answer = _answer(lazy)  # every reason read (the JSON's "rejected")
    made = suggest_calls["calls"]
    assert made >= 1  # made now, where read
    assert all(isinstance(r.why, str) for r in lazy.rejections)
    assert sum("Try: " in r.reason for r in deferred) >= 1  # reasons carry suggestions

    # the same search with the deferral switched off: suggestions made in every build
    monkeypatch.setattr(screen, "DEFER_SUGGESTIONS", ContextVar("off", default=False))
    suggest_calls["calls"] = 0
    eager = _rag()
    assert suggest_calls["calls"] == made  # the same suggestions, made while searching
    assert _answer(eager) == lazy_answer  # every recommendation, count and reason


def test_reason_made_once():
    calls = []

    def why() -> str:
        calls.append(1)
        return "does not fit: x"

    r = Rejection("memory", why, gpu="g")
    assert r.reason == "does not fit: x" and r.reason == "does not fit: x"
    assert len(calls) == 1
    assert r.as_dict()["reason"] == "does not fit: x"
    assert Rejection("memory", "plain").reason == "plain"
