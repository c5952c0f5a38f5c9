"""``recommend`` with a forked child screening ahead gives the one-process answer (issue 29).

:mod:`planner.recommend.forked`: the child screens the blocks of options it takes from a
queue it shares with the search and sends each option's rejection or screen numbers; the
search takes the blocks the child has not taken, and the child's answers in its own order,
and rebuilds the replica of what it simulates. Pinned here: the whole answer (every
recommendation, the Pareto front, every rejection with its reason, the summary's counts)
equals the one-process search's (``PLANNER_PROCESSES=1``) on the chat 8B and RAG 70B
examples and under the latency objective (whose bound the child computes from a zero-load
simulation); the child did answer options; each block went to one process only; a child
that dies at once, answers nothing, or is too slow to wait for, leaves the same answer; no
child is left unreaped; and where it must not fork, it does not.
"""

from __future__ import annotations

import os
import threading
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


@pytest.fixture(autouse=True)
def _no_app_warm_up_thread():
    """An app test earlier in the process may leave its warm-up timer
    (``app_pages/runs.py``, thread ``planner-warm-up``) pending or running, and
    :func:`forked.may_fork` declines beside a live thread: cancel it, or wait for it."""
    for t in threading.enumerate():
        if t.name == "planner-warm-up":
            t.cancel()
            t.join(timeout=300)


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
    seen = {"forks": 0, "answered": 0, "children": []}
    start, take = forked.Forked.start.__func__, forked.Forked.take

    def start_spy(cls, search, heap):
        f = start(cls, search, heap)
        seen["forks"] += f is not None
        if f is not None:
            seen["children"].append(f)
        return f

    def take_spy(self, seq):
        n = self.from_child
        r = take(self, seq)
        seen["answered"] += self.from_child - n  # the child's answers (not its own early ones)
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
    # the child answered options the search took (not all: the search takes blocks from
    # the queue too); chat 8B screens 2,055 options, RAG 70B 5,390 (this pass's counts)
    assert spy["answered"] > 100
    (f,) = spy["children"]
    assert f.theirs and f.mine.isdisjoint(f.theirs)  # the queue gave each block to one


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


def test_the_queue_hands_each_block_to_one_process():
    """The search takes block j itself unless the child took it: the queue hands out block
    numbers in order, so a number past j coming out of it means the child had taken j."""
    r, w = os.pipe()
    os.write(w, b"".join(forked._JOB.pack(i) for i in range(6)))
    os.close(w)
    f = forked.Forked(None, {}, {}, 0, -1, r)
    try:
        assert forked._take(r) == 0 and forked._take(r) == 1  # the child takes 0 and 1
        assert f._theirs(1)  # the search, at block 1, takes 2 from the queue: 1 is theirs
        assert f.mine == {2}
        assert not f._theirs(3)  # 3 was still in the queue: the search took it
        assert f.mine == {2, 3}
        assert forked._take(r) == 4  # the child takes 4
        assert not f._theirs(5) and f.mine == {2, 3, 5}
        assert f._theirs(4)  # the queue is empty and 4 is not the search's: the child's
        assert f.queue_empty
    finally:
        os.close(r)


def test_a_starved_child_is_not_waited_for(monkeypatch, spy):
    """A child that takes a block and then does not answer in time: the search screens
    those options itself (after :data:`~planner.recommend.forked.WAIT_S` once per block)
    and gives the one-process answer."""
    import time

    monkeypatch.setenv("PLANNER_PROCESSES", "1")
    one = _recommend("chat-8b.yaml", gpus=SUBSET)
    monkeypatch.setenv("PLANNER_PROCESSES", "2")
    monkeypatch.setattr(forked, "MIN_OPTIONS", 10)
    lite = forked._lite
    monkeypatch.setattr(forked, "_lite", lambda r: (time.sleep(0.05), lite(r))[1])
    monkeypatch.setattr(forked, "WAIT_S", 0.001)
    assert _recommend("chat-8b.yaml", gpus=SUBSET) == one
    (f,) = spy["children"]
    assert f.given_up  # the search stopped waiting for a block the child had taken
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
