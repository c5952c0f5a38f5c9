"""The second-core shortcuts of ``compare_gpus`` and ``recommend`` change no number.

Issue 17 ("Fast from the shell"): the event loop runs without the GIL, a helper thread screens
ahead of the search, asks zero-load verdicts and runs the search's next verdict simulation;
the recommendations are finished two at a time. Each test pins one of them against the
one-thread path it replaces.
"""

from __future__ import annotations

import gc
import json
import math
import os
import subprocess
import sys
import threading
import types
from pathlib import Path

import numpy as np
import pytest

from planner.errors import MissingDataError, PlannerError, UnknownIdError
from planner.recommend.threads import each, threads
from planner.serving import (
    SIMULATING,
    CapacityProbe,
    WorkloadCache,
    build_replica,
    check_reachable,
)
from planner.workload import SLO, Workload

REPO_ROOT = Path(__file__).resolve().parents[1]


def _raise(e: PlannerError) -> PlannerError:
    try:
        raise e
    except PlannerError as caught:
        return caught


@pytest.mark.parametrize(
    "err",
    [
        PlannerError("weights do not fit:  70 GB\tper GPU"),
        MissingDataError("no bandwidth in the catalog"),
        UnknownIdError("gpu", "h1000", ["nvidia-h100-sxm", "nvidia-h200-sxm"]),
    ],
)
def test_error_copy_is_the_same_error_without_a_traceback(err):
    """PlannerError.copy: same class, message (already normalised: one space) and
    attributes, a new object, no traceback (so a cache raising it again keeps no frames)."""
    raised = _raise(err)
    assert raised.__traceback__ is not None
    c = raised.copy()
    assert type(c) is type(err) and c is not err
    assert str(c) == str(err) and c.args == err.args
    assert c.__traceback__ is None
    assert vars(c) == vars(err)
    if isinstance(err, UnknownIdError):
        assert c.suggestions == err.suggestions == ["nvidia-h100-sxm"]  # closest to h1000


@pytest.fixture(scope="module")
def rag():
    wl = Workload.model_validate({"preset": "rag", "traffic": {"mean_rps": 5.0, "peak_rps": 10.0}})
    slo = SLO.model_validate({"ttft": {"max_s": 3.0}, "tpot": {"max_s": 0.08}, "attainment": 0.99})
    return wl, slo


@pytest.mark.parametrize(
    "gpu,prec,tp",
    [
        ("nvidia-h100-sxm", "fp8", 4),  # meets the SLO served alone
        ("nvidia-l40s", "fp8", 4),  # misses it: 48 GB PCIe cards, long RAG prompts
    ],
)
def test_remembered_zero_load_verdict_is_check_reachable(catalog, rag, gpu, prec, tp):
    """WorkloadCache.reachable is check_reachable on the cached zero-load sample: the same
    dict, or the same error message on every call (raised as a fresh copy, so no frame of
    an earlier raise stays alive)."""
    wl, slo = rag
    rep = build_replica("llama-3.1-70b", gpu, prec, "vllm", tp=tp, catalog=catalog)
    cache = WorkloadCache.of(wl, slo)
    reqs = cache.unloaded_requests(rep)
    for values in (False, True):
        try:
            want: dict | str = check_reachable(rep, wl, slo, requests=reqs, values=values)
        except PlannerError as e:
            want = str(e)
        for _ in range(2):
            try:
                got: dict | str = cache.reachable(rep, 0, values)
            except PlannerError as e:
                got = str(e)
                assert (
                    e.__traceback__ is not None and e is not cache._reach[(id(rep), 0, values)][1]
                )
            assert got == want
    frames = [
        o for o in gc.get_objects() if type(o) is types.FrameType
    ]  # type(): a dead weakref proxy raises on isinstance
    assert not [f for f in frames if f.f_code.co_name == "reachable"]


def test_a_run_made_ahead_is_the_run_the_search_would_make(catalog, rag):
    """A verdict run made by a helper's probe (WorkloadCache.run_ahead) is taken by the
    search's probe of the same replica at that very rate: the same summary, counted as one
    simulation of the search's probe; a probe asking another rate simulates itself."""
    wl, slo = rag
    rep = build_replica("llama-3.1-70b", "nvidia-h100-sxm", "fp8", "vllm", tp=4, catalog=catalog)
    plain = CapacityProbe(rep, WorkloadCache.of(wl, slo), early_stop=True)
    cache = WorkloadCache.of(wl, slo)
    helper = CapacityProbe(rep, cache, early_stop=True)
    search = CapacityProbe(rep, cache, early_stop=True)
    for frac in (0.9, 0.3):  # a miss (stopped early) and a pass
        rate = frac * plain.cap_rps
        want = plain.run(rate)
        t = threading.Thread(target=cache.run_ahead, args=(helper, rate))
        t.start()
        t.join()
        n = search.simulations
        assert search.run(rate) == want
        assert search.simulations == n + 1
        assert (rate in search._results) == (rate in plain._results)
        if rate in plain._results:  # a pass: the arrays the report needs, identical
            a, b = plain._results[rate][0], search._results[rate][0]
            assert np.array_equal(a.finish_s, b.finish_s, equal_nan=True)
    assert not cache._ahead  # each run taken once
    other = 0.5 * plain.cap_rps
    assert search.run(other) == plain.run(other)
    assert search.simulations == 3


def test_the_gate_opens_only_for_a_simulation_of_another_thread(catalog, rag, monkeypatch):
    """SIMULATING is open while a (non-helper) thread's compiled loop runs and closed after;
    a helper thread's own simulations leave it closed (seen from inside the loop's call)."""
    from planner.serving import _kernel

    wl, slo = rag
    rep = build_replica("llama-3.1-8b", "nvidia-h100-sxm", "bf16", "vllm", catalog=catalog)
    probe = CapacityProbe(rep, WorkloadCache.of(wl, slo), early_stop=True)
    real = _kernel.kernel()
    seen: list[bool] = []

    def loop(*args):
        seen.append(SIMULATING.open.is_set())
        return real(*args)

    monkeypatch.setattr(_kernel, "kernel", lambda: loop)
    probe.run(0.5 * probe.cap_rps)
    assert seen == [True] and not SIMULATING.open.is_set()

    def helper_run():
        SIMULATING.mark_helper()
        probe.run(0.4 * probe.cap_rps)

    t = threading.Thread(target=helper_run)
    t.start()
    t.join()
    assert seen == [True, False] and not SIMULATING.open.is_set()


def test_each_runs_every_job_once_and_raises_the_first_failure():
    """threads.each: every job runs once (in two threads); a failure raises the error of
    the first failing job by position, as a loop would."""
    done: list[int] = []
    each([lambda i=i: done.append(i) for i in range(20)], threads=2)
    assert sorted(done) == list(range(20))

    def fail(i):
        raise PlannerError(f"job {i}")

    jobs = [lambda: None, lambda: fail(1), lambda: None, lambda: fail(3)]
    with pytest.raises(PlannerError, match="job 1"):
        each(jobs, threads=2)


def test_threads_follows_the_environment(monkeypatch):
    monkeypatch.setenv("PLANNER_THREADS", "1")
    assert threads() == 1
    monkeypatch.setenv("PLANNER_THREADS", "2")
    assert threads() == 2
    monkeypatch.delenv("PLANNER_THREADS")
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.7, 0.5, 0.5))
    assert threads() == 2  # a second core is free
    monkeypatch.setattr(os, "getloadavg", lambda: (3.5, 3.0, 2.0))
    assert threads() == 1  # busy: other processes hold both cores
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert threads() == 1


COMPARE = """
import json, sys
from planner.catalog import load_catalog
from planner.recommend import compare_gpus
from planner.scenario import load_scenario
sc = load_scenario("examples/rag-70b.yaml")
cat = load_catalog()
out = compare_gpus(sc.model, sc.workload, sc.slo, catalog=cat, headroom=sc.constraints.headroom,
                   engine=sc.serving.kwargs(), gpus=("nvidia-h100-sxm", "amd-mi300x", "nvidia-l40s",
                   "nvidia-a100-80gb-sxm"))
out["summary"].pop("elapsed_s")
print(json.dumps(out, sort_keys=True, default=str))
"""


def test_compare_gpus_in_two_threads_equals_one_thread():
    """The whole compare_gpus answer (rows, unanswered GPUs with reasons, counts of options
    and simulations) is the same with the helper thread (screening ahead, zero-load verdicts, runs ahead,
    recommendations finished two at a time) as in one thread (PLANNER_THREADS=1)."""
    outs = []
    for n in ("1", "2"):
        p = subprocess.run(
            [sys.executable, "-c", COMPARE],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            # one process both times: whether compare_gpus forks depends on the machine's
            # load at that instant, and a forked search counts its verdict runs per process
            env={
                **os.environ,
                "PYTHONPATH": str(REPO_ROOT),
                "PLANNER_THREADS": n,
                "PLANNER_PROCESSES": "1",
            },
            timeout=900,
        )
        assert p.returncode == 0, p.stderr[-2000:]
        outs.append(json.loads(p.stdout))
    one, two = outs
    assert one == two
    assert one["rows"] and math.isfinite(one["rows"][0]["usd_per_hour"])
