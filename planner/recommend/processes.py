"""Work in a forked child process: :func:`planner.recommend.compare_gpus` searches its GPUs on
two cores, in two processes (the search's Python holds the GIL, so a second thread gains
little). The child shares nothing with the parent but the memory it was forked with and two
pipes: one hands out the work, one brings its answer back (pickled)."""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import signal
import struct
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import PlannerError

#: a job's index in the work pipe (Linux hands a read of this size to one reader whole)
_JOB = struct.Struct("<H")

#: modules the search imports on first use: imported before a fork, so that a child never
#: waits on an import lock that a thread of the parent (absent in the child) held
_LAZY_MODULES = (
    "planner.engine.phases",
    "planner.catalog.profile",
    "planner.cost.pricing",
    "pydantic",
    "csv",
    "io",
    "statistics",
)


def processes() -> int:
    """Processes :func:`~planner.recommend.compare_gpus` uses: 2 where the call may fork
    (Linux, ``os.fork``), this process may run on at least two CPUs
    (``os.sched_getaffinity``) and one of them is free now (:func:`others_running`), else 1;
    the environment variable ``PLANNER_PROCESSES`` (1 or 2) decides instead where forking is
    possible. The answers are the same either way.

    A core must be free: with both busy, the two processes only share them with the others
    and cost 0.5-1 s of CPU more than one (measured: RAG 70B 8-10 s against 7-8 s at load
    4-6)."""
    if not (sys.platform.startswith("linux") and hasattr(os, "fork")):
        return 1
    env = os.environ.get("PLANNER_PROCESSES", "").strip()
    if env.isdigit() and int(env) >= 1:
        return min(int(env), 2)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - Linux has it
        cpus = os.cpu_count() or 1
    return 2 if cpus >= 2 and others_running() < cpus else 1


def others_running(path: str = "/proc/loadavg") -> int:
    """Threads of other processes that run or wait for a CPU now: the kernel's count of
    runnable threads (``/proc/loadavg``, 4th field before the slash), less the one reading
    it; 0 where it cannot be read. Unlike the load average, which is a mean over the last
    minute (and counts a benchmark's own earlier runs), it says whether a core is free now."""
    try:
        with open(path) as f:
            running = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, running - 1)


def prepare() -> None:
    """Load before a fork what the search loads on first use: the compiled kernels (numba's
    compiler lock), the modules imported lazily (import locks) and the bundled calibration
    profile (a process cache both processes then share)."""
    for name in _LAZY_MODULES:
        importlib.import_module(name)
    from ..catalog.profile import load_profile
    from ..serving import load_kernels

    load_kernels()
    load_profile()


@contextlib.contextmanager
def _fork_locks() -> Iterator[None]:
    """Hold, across the fork, the locks a child may take that a thread of the parent may
    hold: numba's compiler lock and the request-sample memo's lock. Held by the forking
    thread, they are free in the child (released there by the same thread) and in the
    parent; without this a child could wait forever on a lock whose holder it does not
    have."""
    from numba.core.compiler_lock import global_compiler_lock

    from ..workload import sample_memo_held

    with global_compiler_lock, sample_memo_held():
        yield


class Child:
    """A forked child running ``work(jobs)`` over the jobs it takes from a shared queue.

    ``jobs``: the jobs, in the order they are handed out; the parent takes jobs from the
    same queue with :meth:`take` (each job goes to exactly one process). The child's answer
    (``work``'s return value) comes back with :meth:`result`."""

    def __init__(self, pid: int, answers: int, queue: int) -> None:
        self.pid, self._answers, self._queue = pid, answers, queue
        self._reaped = False

    @classmethod
    def start(cls, n_jobs: int, work: Callable[[Callable[[], int | None]], Any]) -> Child | None:
        """Fork a child that runs ``work(take)`` (``take()``: the next job's index, None when
        none is left) and sends back its return value; None when the fork failed (the caller
        does all the work itself)."""
        q_read, q_write = os.pipe()
        a_read, a_write = os.pipe()
        try:
            os.write(q_write, b"".join(_JOB.pack(i) for i in range(n_jobs)))
        finally:
            os.close(q_write)  # the queue ends (EOF) when every job is taken
        try:
            with _fork_locks(), warnings.catch_warnings():
                # Python 3.12+ warns that forking a process with other threads may deadlock
                # the child. Here it cannot: the child runs only this module's code and the
                # search, whose kernels, lazy imports and locks were loaded or are held
                # across the fork (prepare, _fork_locks), and it ends with os._exit.
                warnings.filterwarnings("ignore", category=DeprecationWarning)
                pid = os.fork()
        except OSError:
            for fd in (q_read, a_read, a_write):
                os.close(fd)
            return None
        if pid == 0:  # the child: never returns into the caller's code
            code = 1
            try:
                os.close(a_read)
                _in_child()
                try:
                    out: tuple[str, Any] = ("ok", work(lambda: _take(q_read)))
                except PlannerError as e:  # the same error (type, message, attributes)
                    out = ("planner_error", (type(e), e.args, e.__dict__))
                data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(a_write, "wb") as f:
                    f.write(data)
                code = 0
            except BaseException:  # noqa: BLE001 - the parent does this work itself
                code = 1
            finally:
                os._exit(code)  # no atexit handlers, no buffers of the parent flushed
        os.close(a_write)
        return cls(pid, a_read, q_read)

    def take(self) -> int | None:
        """The next job for the parent (None: none left)."""
        return _take(self._queue)

    def result(self) -> tuple[bool, Any]:
        """``(True, answer)`` once the child ended with its answer; ``(False, None)`` when
        it failed (crashed, killed, or its answer could not be pickled). A PlannerError the
        child raised is raised here. The child is reaped either way."""
        try:
            chunks = []
            with os.fdopen(self._answers, "rb") as f:
                while chunk := f.read(1 << 20):
                    chunks.append(chunk)
            status = self._reap()
            if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
                return False, None
            kind, value = pickle.loads(b"".join(chunks))
        except Exception:  # noqa: BLE001 - an unreadable answer: the parent does the work
            self.close()
            return False, None
        finally:
            with contextlib.suppress(OSError):
                os.close(self._queue)
        if kind == "planner_error":
            cls, args, attrs = value
            err = cls.__new__(cls, *args)  # as PlannerError.copy: no __init__ to run again
            err.__dict__.update(attrs)
            raise err
        return True, value

    def close(self) -> None:
        """End the child now (the parent failed) and reap it."""
        if not self._reaped:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            self._reap()
        for fd in (self._answers, self._queue):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _reap(self) -> int:
        if self._reaped:
            return 0
        while True:
            try:
                _, status = os.waitpid(self.pid, 0)
                break
            except InterruptedError:  # pragma: no cover - retried by Python already
                continue
            except ChildProcessError:  # reaped elsewhere (a SIGCHLD handler)
                status = 1 << 8
                break
        self._reaped = True
        return status


def _in_child() -> None:
    """Make the child's state its own: the parent's signal handlers (the app's server's)
    must not run in it, and the simulation gate's event may have been held by a helper
    thread of the parent (:data:`planner.serving.SIMULATING`; the child has no other
    thread: a fresh one)."""
    import threading

    from ..serving import SIMULATING

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, signal.SIG_DFL)
    SIMULATING.open = threading.Event()


def _take(fd: int) -> int | None:
    try:
        b = os.read(fd, _JOB.size)
    except OSError:
        return None
    return _JOB.unpack(b)[0] if len(b) == _JOB.size else None
