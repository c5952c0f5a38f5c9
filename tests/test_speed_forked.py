"""``recommend`` with a forked child screening ahead gives the one-process answer (issue 29).

:mod:`planner.recommend.forked`: the child screens the blocks of options it takes from a shared queue and sends
each option's rejection or screen numbers; the search takes them in its order and rebuilds
the replica of what it simulates. Pinned here: the whole answer (every recommendation, the
Pareto front, every rejection with its reason, the summary's counts) equals the
one-process search's (``PLANNER_PROCESSES=1``) on the chat 8B and RAG 70B examples and
under the latency objective (whose bound the child computes from a zero-load simulation);
the child did answer options; a child that dies at once, or answers nothing, leaves the
same answer; no child is left unreaped; and where it must not fork, it does not.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from planner.catalog import load_catalog
from planner.recommend import forked
from planner.recommend.search import recommend
from planner.scenario import load_scenario

REPO_ROOT = Path(__file__).resolve().parents[1]
CAT = load_catalog()
SUBSET = ("nvidia-h100-sxm", "amd-mi300x", "nvidia-l40s", "nvidia-a100-80gb-sxm", "nvidia-l4")

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or len(os.sched_getaffinity(0)) < 2, reason="needs fork, 2 CPUs"
)


def _recommend(example: str, **kw) -> dict:
    forked._REPLICAS.clear()  # each call a first search, as in a fresh process
    sc = load_scenario(REPO_ROOT / "examples" / example)
    res = recommend(
        sc.model, sc.workload, sc.slo, catalog=CAT, headroom=sc.constraints.headroom,
        engine=sc.serving.kwargs(), **kw,
    )  # fmt: skip
    out = res.as_dict()
    out["summary"].pop("elapsed_s")
    return out


@pytest.fixture
def spy(monkeypatch):
    """Counts the children started and the options they answered."""
    seen = {"forks": 0, "answered": 0}
    start, take = forked.Forked.start.__func__, forked.Forked.take

    def start_spy(cls, search, heap):
        f = start(cls, search, heap)
        seen["forks"] += f is not None
        return f

    def take_spy(self, seq):
        r = take(self, seq)
        seen["answered"] += r is not None
        return r

    monkeypatch.setattr(forked.Forked, "start", classmethod(start_spy))
    monkeypatch.setattr(forked.Forked, "take", take_spy)
    return seen


def _both(monkeypatch, spy, example, searches=1, **kw):
    monkeypatch.setenv("PLANNER_PROCESSES", "1")
    one = _recommend(example, **kw)
    assert spy["forks"] == 0
    monkeypatch.setenv("PLANNER_PROCESSES", "2")
    two = _recommend(example, **kw)
    assert spy["forks"] == searches  # it did fork, once per search
    with pytest.raises(ChildProcessError):  # and reaped the child: none left
        os.waitpid(-1, os.WNOHANG)
    return one, two


@pytest.mark.parametrize("example", ["chat-8b.yaml", "rag-70b.yaml"])
def test_a_forked_screen_gives_the_one_process_answer(monkeypatch, spy, example):
    one, two = _both(monkeypatch, spy, example)
    assert one["recommendations"] and one["rejected"]
    assert two == one  # every field of every row, rejection and count
    # the child answered options the search took (not all: it screens its own blocks too);
    # chat 8B screens 1,427 options, RAG 70B 2,782 (this pass's counts)
    assert spy["answered"] > 100


def test_the_latency_objective_forked(monkeypatch, spy):
    """The child bounds each option by a zero-load simulation (the compiled kernels: loaded
    by the parent for the first search's simulations, by the child itself otherwise)."""
    # two searches: the cheapest fleet (the cost cap) forks, the latency ranking after it
    # screens from the replicas the first remembered
    one, two = _both(monkeypatch, spy, "rag-70b.yaml", objective="latency", top_n=3)
    assert two == one
    assert spy["answered"] > 0


def test_a_child_that_dies_or_answers_nothing_leaves_the_same_answer(monkeypatch, spy):
    monkeypatch.setenv("PLANNER_PROCESSES", "1")
    one = _recommend("chat-8b.yaml", gpus=SUBSET)
    monkeypatch.setenv("PLANNER_PROCESSES", "2")
    monkeypatch.setattr(forked, "MIN_OPTIONS", 10)  # the subset has fewer than 200
    monkeypatch.setattr(forked, "_in_child", lambda: os._exit(3))
    assert _recommend("chat-8b.yaml", gpus=SUBSET) == one
    assert spy["forks"] == 1 and spy["answered"] == 0
    monkeypatch.setattr(forked, "_in_child", lambda: None)
    monkeypatch.setattr(forked, "_lite", lambda r: 1 / 0)  # every screen fails in the child
    assert _recommend("chat-8b.yaml", gpus=SUBSET) == one
    assert spy["forks"] == 2 and spy["answered"] == 0
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


class _S:
    def __init__(self, per_gpu=False, seed=0):
        self.per_gpu = per_gpu
        self.cache = type("C", (), {"seed": seed})()


def test_where_it_does_not_fork(monkeypatch):
    monkeypatch.setenv("PLANNER_PROCESSES", "2")
    forked._REPLICAS.clear()
    assert forked.may_fork(_S(), forked.MIN_OPTIONS)
    assert not forked.may_fork(_S(), forked.MIN_OPTIONS - 1)  # too few options
    assert not forked.may_fork(_S(per_gpu=True), 5000)  # compare_gpus forks per GPU
    assert not forked.may_fork(_S(seed=np.random.default_rng(0)), 5000)  # order of draws
    monkeypatch.setitem(forked._REPLICAS, ("a search before",), None)
    assert not forked.may_fork(_S(), 5000)  # screens from remembered replicas
    monkeypatch.setenv("PLANNER_PROCESSES", "1")
    assert not forked.may_fork(_S(), 5000)
