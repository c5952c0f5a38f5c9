"""``compare_gpus`` in two processes gives the one-process answer (issue 17).

A forked child and the caller's process take GPUs from one queue and search each alone
(:mod:`planner.recommend.processes`); the shares merge. Pinned here: the rows (every field,
in the same order), the unanswered GPUs and their reasons, and the summary's counts equal the
one-process path's (``PLANNER_PROCESSES=1``) on the RAG 70B and chat 8B examples and on a GPU
subset; a PlannerError of the child is raised as the same error; a failed fork, a crashed
child and an answer that cannot be pickled all fall back to the same answer; no child is left
unreaped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from planner.catalog import load_catalog
from planner.errors import PlannerError, UnknownIdError
from planner.recommend import compare_gpus
from planner.recommend import processes as procs
from planner.recommend.search import _Search
from planner.scenario import load_scenario

REPO_ROOT = Path(__file__).resolve().parents[1]
CAT = load_catalog()
SUBSET = ("nvidia-h100-sxm", "amd-mi300x", "nvidia-l40s", "nvidia-a100-80gb-sxm", "nvidia-l4")
#: the summary's counts that are the same in both paths (simulations: per process)
COUNTS = ("options_enumerated", "options_screened", "options_simulated", "options_pruned")

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or len(os.sched_getaffinity(0)) < 2, reason="needs fork, 2 CPUs"
)


def _compare(example: str, gpus: tuple[str, ...] = (), **kw):
    sc = load_scenario(REPO_ROOT / "examples" / example)
    return compare_gpus(
        sc.model, sc.workload, sc.slo, catalog=CAT, gpus=gpus,
        headroom=sc.constraints.headroom, engine=sc.serving.kwargs(), **kw,
    )  # fmt: skip


@pytest.fixture
def forks(monkeypatch):
    """Counts the children started (a spy on Child.start)."""
    started = []
    start = procs.Child.start.__func__

    def spy(cls, n_jobs, work):
        child = start(cls, n_jobs, work)
        started.append(child)
        return child

    monkeypatch.setattr(procs.Child, "start", classmethod(spy))
    return started


def _both(monkeypatch, forks, example, gpus=(), **kw):
    monkeypatch.setenv("PLANNER_PROCESSES", "1")
    one = _compare(example, gpus, **kw)
    assert not forks
    monkeypatch.setenv("PLANNER_PROCESSES", "2")
    two = _compare(example, gpus, **kw)
    assert len(forks) == 1 and forks[0] is not None  # it did fork
    with pytest.raises(ChildProcessError):  # and reaped the child: none left
        os.waitpid(-1, os.WNOHANG)
    return one, two


#: a row's count of the simulations its process ran: a probe answered by another GPU's
#: identical run (``WorkloadCache.shared_verdict``: nvidia-gh200 and nvidia-gh200-96gb are
#: the same device, both priced since 2026-12-07) counts none, and which process searched
#: which GPU decides whether that run was there. The work done, not the answer.
WORK_COUNTS = ("simulations",)


def _answer(r: dict) -> list:
    return [(k, v) for k, v in r.items() if k not in WORK_COUNTS]


def _same(one, two):
    assert one["rows"]
    # every other field, value and key order of every row, rows in the same order
    assert [_answer(r) for r in two["rows"]] == [_answer(r) for r in one["rows"]]
    assert two["unanswered"] == one["unanswered"]
    assert list(two["summary"]) == list(one["summary"])
    for k in (*COUNTS, "feasible", "model", "objective", "slo", "peak_rps", "headroom"):
        assert two["summary"][k] == one["summary"][k], k


@pytest.mark.parametrize(
    "example,gpus",
    [("rag-70b.yaml", ()), ("chat-8b.yaml", ()), ("rag-70b.yaml", SUBSET)],
)
def test_two_processes_give_the_one_process_answer(monkeypatch, forks, example, gpus):
    one, two = _both(monkeypatch, forks, example, gpus)
    _same(one, two)
    assert two["unanswered"]  # the reasons are compared too, not only the rows
    assert len(one["rows"]) + len(one["unanswered"]) == len(gpus or CAT.accelerators)


def test_top_n_and_another_objective_in_two_processes(monkeypatch, forks):
    """Two options per GPU (variants, ranks and the decision over all rows) and the GPU
    count objective."""
    one, two = _both(monkeypatch, forks, "chat-8b.yaml", SUBSET, top_n=2, objective="gpus")
    _same(one, two)
    assert len(one["rows"]) > len({r["gpu"] for r in one["rows"]})


def _fail_on(monkeypatch, gpu: str, error: Exception):
    """The search of ``gpu`` raises ``error`` while finishing (in whichever process)."""
    finished = _Search.finished

    def fail(self):
        if self.per_gpu and gpu in self.c.gpus:
            raise error
        return finished(self)

    monkeypatch.setattr(_Search, "finished", fail)


def test_a_planner_error_of_the_child_is_the_one_process_error(monkeypatch, forks):
    """The child searches every GPU (the parent takes none); its error, with its type and
    attributes, is raised in the parent, as the one-process search raises it."""
    err = UnknownIdError("framework", "vlm", ["vllm", "sglang"])
    _fail_on(monkeypatch, "amd-mi300x", err)
    monkeypatch.setenv("PLANNER_PROCESSES", "1")
    with pytest.raises(UnknownIdError) as one:
        _compare("rag-70b.yaml", SUBSET)
    monkeypatch.setattr(procs.Child, "take", lambda self: None)  # all GPUs to the child
    monkeypatch.setenv("PLANNER_PROCESSES", "2")
    with pytest.raises(UnknownIdError) as two:
        _compare("rag-70b.yaml", SUBSET)
    assert forks and str(two.value) == str(one.value)
    assert two.value.suggestions == one.value.suggestions == ["vllm"]
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_a_planner_error_of_the_parent_ends_the_child(monkeypatch, forks):
    _fail_on(monkeypatch, "nvidia-l4", PlannerError("l4: no"))
    monkeypatch.setenv("PLANNER_PROCESSES", "2")
    parent, take = os.getpid(), procs._take
    # the child takes no GPU: the parent searches them all
    monkeypatch.setattr(procs, "_take", lambda fd: take(fd) if os.getpid() == parent else None)
    with pytest.raises(PlannerError, match="l4: no"):
        _compare("rag-70b.yaml", SUBSET)
    assert forks
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


@pytest.mark.parametrize("failure", ["fork", "crash", "unpicklable"])
def test_a_failed_child_falls_back_to_the_same_answer(monkeypatch, forks, failure):
    monkeypatch.setenv("PLANNER_PROCESSES", "1")
    one = _compare("rag-70b.yaml", SUBSET)
    parent = os.getpid()
    if failure == "fork":

        def no_fork():
            raise OSError(11, "Resource temporarily unavailable")

        monkeypatch.setattr(os, "fork", no_fork)
    else:
        finished = _Search.finished

        def broken(self):
            picked, top = finished(self)
            if os.getpid() != parent:  # in the child only
                if failure == "crash":
                    os._exit(3)
                for s in top:
                    s.result["x"] = lambda: None  # its answer cannot be pickled
            return picked, top

        monkeypatch.setattr(_Search, "finished", broken)
        monkeypatch.setattr(procs.Child, "take", lambda self: None)  # all GPUs to the child
    monkeypatch.setenv("PLANNER_PROCESSES", "2")
    two = _compare("rag-70b.yaml", SUBSET)
    assert forks and (forks[0] is None) == (failure == "fork")
    _same(one, two)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_processes_follows_the_environment_and_the_cpus(monkeypatch):
    monkeypatch.setenv("PLANNER_PROCESSES", "1")
    assert procs.processes() == 1
    monkeypatch.setenv("PLANNER_PROCESSES", "2")
    assert procs.processes() == 2
    monkeypatch.delenv("PLANNER_PROCESSES")
    monkeypatch.setattr(procs, "others_running", lambda: 0)  # a quiet machine
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert procs.processes() == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {1})  # pinned to one CPU
    assert procs.processes() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(procs, "others_running", lambda: 2)  # both cores busy now
    assert procs.processes() == 1
    monkeypatch.setattr(procs, "others_running", lambda: 1)  # one free
    assert procs.processes() == 2
    monkeypatch.setenv("PLANNER_PROCESSES", "2")
    monkeypatch.delattr(os, "fork")
    assert procs.processes() == 1  # no fork: one process whatever the environment


def test_others_running_reads_the_runnable_count(tmp_path):
    # /proc/loadavg: "1-min 5-min 15-min runnable/total last-pid"; the reader is one of them
    f = tmp_path / "loadavg"
    f.write_text("3.10 2.00 1.50 3/412 12345\n")
    assert procs.others_running(str(f)) == 2
    f.write_text("0.00 0.00 0.00 1/80 7\n")
    assert procs.others_running(str(f)) == 0
    f.write_text("garbage\n")
    assert procs.others_running(str(f)) == 0
    assert procs.others_running(str(tmp_path / "missing")) == 0
