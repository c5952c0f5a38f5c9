"""The recommender's work on a second core: its simulations hold no GIL (the compiled event
loop), so Python runs in another thread meanwhile. :class:`Prefetch` screens ahead of the
search; :func:`each` runs independent jobs (finishing the recommendations) in two threads.
Both only move pure work to another thread: every answer is the same."""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import PlannerError
from ..serving import SIMULATING, CapacityProbe
from .objective import Screened
from .options import Option, Rejection


def threads() -> int:
    """Threads the recommender uses: 2 where a second core is free (at least two cores and a
    load average under two: on a busy machine a starved helper thread and the GIL it takes
    slow the search down), else 1; the environment variable ``PLANNER_THREADS`` (1 or 2)
    decides instead. The answers are the same either way."""
    env = os.environ.get("PLANNER_THREADS", "").strip()
    if env.isdigit() and int(env) >= 1:
        return min(int(env), 2)
    if (os.cpu_count() or 1) < 2:
        return 1
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):  # not available on this platform
        load = 0.0
    return 2 if load < 2.0 else 1


class Prefetch:
    """Screens the search's options ahead of it in a second thread.

    The search is sequential (each option's simulation depends on the best found before
    it), but its simulations run compiled without the GIL
    (:func:`planner.serving._kernel.kernel`): meanwhile this thread screens the options the
    search will pop next (in its order: by the bound without a replica) and asks their
    zero-load verdict (:meth:`planner.serving.WorkloadCache.reachable`, remembered). Both
    are pure functions of the option, so the search uses the answer as if it had computed
    it: every number, reason and count is the same, only sooner on a second core.

    ``items``: ``(seq, option or Screened)`` in the order the search pops them;
    ``work(option)``: the screening (returns a :class:`Screened` or a :class:`Rejection`);
    ``after(screened)``: what to ask of a screened option (its zero-load verdict);
    ``ahead()``: run the search's next simulation ahead (False: nothing to run)."""

    #: marks an item the thread is screening now
    _BUSY = object()
    #: marks an item the search screens itself
    _MAIN = object()

    def __init__(self, items: list[tuple[int, Option]], work, after, ahead=None) -> None:
        self.items, self.work, self.after, self.ahead = items, work, after, ahead
        self.state: dict[int, Any] = {}
        self.cv = threading.Condition()
        self.stopped = False
        self.thread = threading.Thread(target=self._run, name="planner-prefetch", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        SIMULATING.mark_helper()
        items = iter(self.items)
        while True:
            # work only while the search simulates (its loop holds no GIL), never against
            # its own Python: the GIL is handed back after each step (a sleep releases it
            # at once, so the search waits for one step at most)
            while not SIMULATING.wait(0.005):
                if self.stopped:
                    return
            time.sleep(2e-5)
            if self.stopped:
                return
            ran = False
            if self.ahead is not None:  # a simulation ahead of the search, on this core
                with contextlib.suppress(Exception):  # the search runs it itself
                    ran = self.ahead()
            seq, item = next(items, (None, None))
            if item is None:
                if self.ahead is None:
                    return
                if not ran:
                    time.sleep(2e-4)  # nothing to do until the search moves on
                continue
            if isinstance(item, Screened):  # screened already: its zero-load verdict
                with contextlib.suppress(Exception):  # the search asks again and raises
                    self.after(item)
                continue
            if self.state.setdefault(seq, self._BUSY) is not self._BUSY:
                continue  # the search took it
            try:
                r = self.work(item)
                if isinstance(r, Screened):
                    self.after(r)
            except Exception:  # noqa: BLE001 - the search screens it again and raises
                r = self._MAIN
            with self.cv:
                self.state[seq] = r
                self.cv.notify_all()

    def take(self, seq: int) -> Screened | Rejection | None:
        """The screened option ``seq`` (waiting while the thread is at it), or None: the
        caller screens it."""
        r = self.state.setdefault(seq, self._MAIN)
        if r is self._BUSY:
            with self.cv:
                while self.state[seq] is self._BUSY:
                    self.cv.wait()
                r = self.state[seq]
        return None if r is self._MAIN else r

    def close(self) -> None:
        self.stopped = True
        self.thread.join()


def each(jobs: list[Callable[[], Any]], threads: int = 2) -> None:
    """Run every job (independent of the others: pure but for its own objects) in
    ``threads`` threads, this one included; the first failing job's error (by position)
    is raised, as a loop over the jobs would raise it."""
    if len(jobs) < 2 or threads < 2:
        for f in jobs:
            f()
        return
    nxt = itertools.count()
    errors: list[tuple[int, BaseException]] = []

    def work() -> None:
        while not errors:
            i = next(nxt)  # atomic: each job runs once
            if i >= len(jobs):
                return
            try:
                jobs[i]()
            except BaseException as e:  # noqa: BLE001 - raised by the caller below
                errors.append((i, e))

    helpers = [threading.Thread(target=work, daemon=True) for _ in range(threads - 1)]
    for t in helpers:
        t.start()
    work()
    for t in helpers:
        t.join()
    if errors:
        raise min(errors, key=lambda x: x[0])[1]


def run_ahead(search: Any, heap: list, learned: Any, tried: set[int]) -> bool:
    """Run, in this (helper) thread, the first simulation ``search`` (the recommender's
    ``_Search``) will run for the next screened option it pops, as its state stands now, and
    keep it for the search (:meth:`planner.serving.WorkloadCache.run_ahead`): the search
    takes it only if it then asks for that very run. False when there is nothing to run."""
    # the 4 smallest items of a heap lie in its first 15 places
    nxt = [x for x in heapq.nsmallest(4, heap[:15]) if x[1] == 1 and id(x[3]) not in tried]
    if not nxt:
        return False
    s: Screened = nxt[0][3]
    tried.add(id(s))
    best = search.threshold(s.opt, dict(search.best))
    if not search.exhaustive and math.isfinite(best) and s.bound >= best * (1 - 1e-9):
        return True  # pruned, not simulated
    k_cap = search.k_cap(s, best)
    k_max = search.k_max(s)[0]
    top = k_cap if k_cap is not None and k_cap < k_max else k_max
    if top < max(1, s.k_lb):
        return True
    probe = CapacityProbe(s.replica, search.cache, n_requests=search.n_requests, early_stop=True)
    try:
        probe.check(values=False)
    except PlannerError:
        return True
    k0 = probe.first_k(s.k_lb, top, search.k_start(s, learned, search.cache.slo_rate(
        s.replica, s.cap_rps)))  # fmt: skip
    rate = search.load.need_rps / k0
    if rate <= probe.cap_rps * (1 + 1e-9):
        search.cache.run_ahead(probe, rate)
    return True
