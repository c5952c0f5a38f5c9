"""Screening on the second core: a forked child screens every other block of the options a
search will screen, ahead of the search, which takes the child's answers as it reaches them.

The screen (:meth:`planner.recommend.search._Search.screen`: build the replica, check the
workload fits, bound the option from its analytic saturation rate) is a pure function of
the option, and nearly every option a whole-catalog search screens is screened before its
first simulation (RAG 70B: 2,329 of 2,782), all in Python that holds the GIL: a second
thread gains nothing (:mod:`planner.recommend.threads`), a second process does. The child
sends back, block by block, each option's rejection or the numbers of its screen
(provenance, saturation rate, bound; no replica: the search rebuilds the replica of an
option it goes on to simulate, a few dozen, in :func:`fill`). The search never waits: an
answer not yet sent, it screens the option itself. It takes the answers in its own order,
so every number, reason and count is the one the one-process search gives.

Used only where it cannot change an answer: two CPUs with one free
(:func:`~planner.recommend.processes.processes`; ``PLANNER_PROCESSES=1`` turns it off), no
other thread in the process (a fork copies locks, not the threads holding them), an
integer seed (a shared random generator's draws depend on their order), not ``per_gpu``
(:func:`~planner.recommend.compare_gpus` forks per GPU itself; its helper thread reads
replicas), at least :data:`MIN_OPTIONS` options to screen, and the process's first search
(no replica remembered yet, :data:`~planner.recommend.replicas._REPLICAS`: a later search,
e.g. the latency objective's second or a script's next call, screens from remembered
replicas, cheaper than the fork; measured in process, chat 8B 0.27 s one process against
0.36-0.40 s forked).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import pickle
import select
import signal
import struct
import threading
import warnings
from typing import Any

import numpy as np

from ..errors import PlannerError
from .objective import Screened
from .options import Option, Rejection
from .processes import _in_child, processes
from .replicas import _REPLICAS

#: fewest options worth a fork (the fork and the answers' pickles cost ~0.02 s of the
#: search's process)
MIN_OPTIONS = 200

#: options per block: the child screens blocks 1, 3, 5, ... of the search's order and sends
#: each block's answers in one write; the search screens blocks 0, 2, 4, ... meanwhile
BLOCK = 16

#: a block's length prefix in the pipe
_LEN = struct.Struct("<I")

#: the answers' pipe size asked of Linux (F_SETPIPE_SZ): room for the child to run ahead
#: while the search simulates
_PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = 1031


@dataclasses.dataclass(frozen=True)
class _Lite:
    """A screened option's numbers without its replica (what the child sends back)."""

    release: str | None
    provenance: str
    saturation_rps: float
    cap_rps: float
    k_lb: int
    bound: float


def _lite(r: Screened | Rejection) -> _Lite | Rejection:
    if isinstance(r, Rejection):
        return r
    return _Lite(r.opt.release, r.provenance, r.saturation_rps, r.cap_rps, r.k_lb, r.bound)


class Forked:
    """The child screening the options ``opts`` (by their heap sequence number) and the
    answers read from it so far."""

    def __init__(self, search: Any, opts: dict[int, Option], pid: int, fd: int) -> None:
        self.search, self.opts, self.pid, self.fd = search, opts, pid, fd
        self.answers: dict[int, Any] = {}
        self.ended = False  # the pipe reached its end (or failed): no more answers

    @classmethod
    def start(cls, search: Any, heap: list[tuple[float, int, int, Any]]) -> Forked | None:
        """Fork a child for every other :data:`BLOCK` of ``heap`` (the search's stage-0
        items, in its order), or None where :func:`may_fork` says no or the fork failed."""
        if not may_fork(search, len(heap)):
            return None
        order = sorted(heap, key=lambda x: x[:3])
        blocks = [
            [(seq, opt) for _, _, seq, opt in order[i : i + BLOCK]]
            for i in range(BLOCK, len(order), 2 * BLOCK)
        ]
        # no kernels loaded nor locks held for the child (processes.prepare, _fork_locks):
        # with no other thread, no lock is held by a thread the child lacks, and the child
        # screens at once while this process loads the kernels for its first simulation
        r, w = os.pipe()
        with contextlib.suppress(OSError):
            fcntl.fcntl(w, _F_SETPIPE_SZ, _PIPE_BYTES)
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", category=DeprecationWarning)  # as Child.start
                pid = os.fork()
        except OSError:
            os.close(r)
            os.close(w)
            return None
        if pid == 0:  # the child: never returns into the caller's code
            code = 1
            try:
                os.close(r)
                _in_child()
                with os.fdopen(w, "wb", buffering=0) as f:
                    for block in blocks:
                        out = []
                        for seq, opt in block:
                            try:
                                out.append((seq, _lite(search.screen_option(opt))))
                            except Exception:  # noqa: BLE001 - the search screens it again
                                out.append((seq, None))
                        data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
                        f.write(_LEN.pack(len(data)) + data)
                code = 0
            except BaseException:  # noqa: BLE001 - the search screens what is missing
                code = 1
            finally:
                os._exit(code)  # no atexit handlers, no buffers of the parent flushed
        os.close(w)
        return cls(search, {seq: o for b in blocks for seq, o in b}, pid, r)

    def take(self, seq: int) -> Screened | Rejection | None:
        """The child's screen of option ``seq`` if it has sent it, else None (the search
        screens it itself)."""
        opt = self.opts.get(seq)
        if opt is None:
            return None
        while seq not in self.answers and not self.ended and self._ready():
            self._read_block()
        r = self.answers.pop(seq, None)
        if r is None:
            return None
        if isinstance(r, Rejection):  # its layout: the option's own object, as screened here
            return dataclasses.replace(r, layout=opt.layout) if r.layout == opt.layout else r
        if r.release:
            opt = dataclasses.replace(opt, release=r.release)
        pq = self.search.price_of(opt.gpu.id)
        price = None if isinstance(pq, PlannerError) else pq
        # the replica: fill(), when the search simulates the option
        return Screened(opt, None, r.provenance, price, r.saturation_rps, r.cap_rps, r.k_lb,
                        r.bound)  # type: ignore[arg-type]  # fmt: skip

    def _ready(self) -> bool:
        try:
            return bool(select.select([self.fd], [], [], 0)[0])
        except (OSError, ValueError):
            self.ended = True
            return False

    def _read_exact(self, n: int) -> bytes:
        chunks, left = [], n
        while left:
            b = os.read(self.fd, left)
            if not b:
                raise EOFError
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)

    def _read_block(self) -> None:
        try:
            (n,) = _LEN.unpack(self._read_exact(_LEN.size))
            self.answers.update(pickle.loads(self._read_exact(n)))
        except Exception:  # noqa: BLE001 - the end, a crash or a torn block: no more answers
            self.ended = True

    def close(self) -> None:
        """End the child (it may still be screening options the search no longer needs)
        and reap it."""
        with contextlib.suppress(OSError):
            os.close(self.fd)
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)


def fill(search: Any, s: Screened) -> Screened:
    """``s`` with its replica, rebuilt where the child screened it (the search's own
    :meth:`screen` of the same option: the same replica)."""
    if s.replica is None:
        r = search.screen(dataclasses.replace(s.opt, release=None))
        if not isinstance(r, Screened):  # a screen is a pure function of the option
            raise PlannerError(f"{s.opt.label()}: screened twice with two answers ({r.reason})")
        s.replica = r.replica
    return s


def may_fork(search: Any, n_options: int) -> bool:
    """Whether a child may screen (module docstring)."""
    return (
        n_options >= MIN_OPTIONS
        and not _REPLICAS  # a first search: later ones screen from remembered replicas
        and not search.per_gpu
        and not isinstance(search.cache.seed, np.random.Generator)
        and threading.active_count() == 1
        and processes() >= 2
    )
