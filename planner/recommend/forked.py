"""Screening on the second core: a forked child screens blocks of the options a search will
screen, ahead of the search, which takes the child's answers as it reaches them.

The screen (:meth:`planner.recommend.search._Search.screen`: build the replica, check the
workload fits, bound the option from its analytic saturation rate) is a pure function of
the option, and nearly every option a whole-catalog search screens is screened before its
first simulation (RAG 70B: 4,563 of 5,390 screens), all in Python that holds the GIL: a
second thread gains nothing (:mod:`planner.recommend.threads`), a second process does. The
child sends back, block by block, each option's rejection or the numbers of its screen
(provenance, saturation rate, bound; no replica: the search rebuilds the replica of an
option it goes on to simulate, a few dozen, in :func:`fill`). It takes the answers in its
own order, so every number, reason and count is the one the one-process search gives.

Who screens which block: the blocks (:data:`BLOCK` options each, in the search's order) wait
in one queue (a pipe of block numbers; each read takes one whole number, so each block goes
to exactly one process). The child takes them one after the other from the start; the
search, meanwhile, loads the simulator's compiled kernels (numba's import and cache load:
~0.2 s that its first simulation would otherwise spend after the screening, on the one
core), then takes from the same queue the block of the next option it needs when the child
has not taken it yet, and screens that block's options itself as it reaches them. Where the
child has taken the block, the search takes its answers, waiting at most :data:`WAIT_S` for
a block the child is screening now (then it screens the option itself: it never depends on
the child). So the split follows the two processes' speeds (the child screens more while the
search loads its kernels), where a fixed split (every other block, the eighth and ninth
passes) left the child idle at the end and the search with the kernels still to load.

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

import collections
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
from ..serving import load_kernels
from .objective import Screened
from .options import Option, Rejection
from .processes import _in_child, processes
from .replicas import _REPLICAS

#: fewest options worth a fork (the fork and the answers' pickles cost ~0.02 s of the
#: search's process)
MIN_OPTIONS = 200

#: options per block: the unit of work the two processes take from the queue, and of the
#: child's answers (one write each)
BLOCK = 16

#: most seconds the search waits for a block the child is screening now (a block takes a
#: few ms); past it the search screens the option itself
WAIT_S = 0.02

#: a block's length prefix in the pipe
_LEN = struct.Struct("<I")

#: a block's number in the queue (Linux hands a read of this size to one reader whole)
_JOB = struct.Struct("<I")

#: most blocks: their numbers fit a pipe of Linux's default 64 KiB (the write precedes
#: the fork: nobody reads yet)
_MAX_BLOCKS = (1 << 16) // _JOB.size

#: the pipes' size asked of Linux (F_SETPIPE_SZ): room for the child to run ahead while
#: the search simulates, and for every block's number in the queue
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
    if isinstance(r, Rejection):  # a reason made where read: made here by the search
        return r if isinstance(r.why, str) else dataclasses.replace(r, why=None)  # type: ignore[arg-type]
    return _Lite(r.opt.release, r.provenance, r.saturation_rps, r.cap_rps, r.k_lb, r.bound)


class Forked:
    """The child screening the options ``opts`` (by their heap sequence number), their
    blocks, the queue of blocks not taken yet and the answers read from the child so far."""

    def __init__(
        self, search: Any, opts: dict[int, Option], block_of: dict[int, int], pid: int, fd: int,
        queue: int,
    ) -> None:  # fmt: skip
        self.search, self.opts, self.block_of = search, opts, block_of
        self.pid, self.fd, self.queue = pid, fd, queue
        self.answers: dict[int, Any] = {}
        self.mine: set[int] = set()  # blocks this process took from the queue
        self.theirs: set[int] = set()  # blocks whose answers came from the child
        #: the child's blocks this process screens itself: their answers did not come
        #: within WAIT_S (a starved or dead child)
        self.given_up: set[int] = set()
        self.queue_empty = False
        self.from_child = 0  # the child's answers taken
        self.blocks: list[list[tuple[int, Option]]] = []
        #: this process's screens made ahead (while it waited for the child), by option
        self.early: dict[int, Screened | Rejection] = {}
        self.ahead_at: dict[int, int] = {}  # per block of this process: options screened ahead
        #: this process's blocks past the one it is at, in order (to screen ahead)
        self.own_order: collections.deque[int] = collections.deque()
        self.ended = False  # the pipe reached its end (or failed): no more answers

    @classmethod
    def start(cls, search: Any, heap: list[tuple[float, int, int, Any]]) -> Forked | None:
        """Fork a child that screens the blocks of ``heap`` (the search's stage-0 items, in
        its order) it takes from the queue, then load the simulator's kernels here; None
        where :func:`may_fork` says no or the fork failed."""
        if not may_fork(search, len(heap)):
            return None
        order = sorted(heap, key=lambda x: x[:3])
        size = max(BLOCK, -(-len(order) // _MAX_BLOCKS))  # every number fits the queue
        blocks = [
            [(seq, opt) for _, _, seq, opt in order[i : i + size]]
            for i in range(0, len(order), size)
        ]
        # no kernels loaded nor locks held for the child (processes.prepare, _fork_locks):
        # with no other thread, no lock is held by a thread the child lacks; the child
        # screens at once while this process loads the kernels for its first simulation
        r, w = os.pipe()
        q_read, q_write = os.pipe()
        for fd in (w, q_write):
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_BYTES)
        try:
            # every block's number, before the fork: the queue then ends (EOF) once taken
            os.write(q_write, b"".join(_JOB.pack(i) for i in range(len(blocks))))
        except OSError:
            for fd in (r, w, q_read):
                os.close(fd)
            return None
        finally:
            os.close(q_write)
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", category=DeprecationWarning)  # as Child.start
                pid = os.fork()
        except OSError:
            for fd in (r, w, q_read):
                os.close(fd)
            return None
        if pid == 0:  # the child: never returns into the caller's code
            code = 1
            try:
                os.close(r)
                _in_child()
                with os.fdopen(w, "wb", buffering=0) as f:
                    while (j := _take(q_read)) is not None:
                        out = []
                        for seq, opt in blocks[j]:
                            try:
                                out.append((seq, _lite(search.screen_option(opt))))
                            except Exception:  # noqa: BLE001 - the search screens it again
                                out.append((seq, None))
                        data = pickle.dumps((j, out), protocol=pickle.HIGHEST_PROTOCOL)
                        f.write(_LEN.pack(len(data)) + data)
                code = 0
            except BaseException:  # noqa: BLE001 - the search screens what is missing
                code = 1
            finally:
                os._exit(code)  # no atexit handlers, no buffers of the parent flushed
        os.close(w)
        out = cls(
            search, {seq: o for b in blocks for seq, o in b},
            {seq: j for j, b in enumerate(blocks) for seq, _ in b}, pid, r, q_read,
        )  # fmt: skip
        out.blocks = blocks
        with contextlib.suppress(Exception):  # the first simulation loads them otherwise
            load_kernels()
        return out

    def take(self, seq: int) -> Screened | Rejection | None:
        """The child's screen of option ``seq`` if it has sent it or sends it soon, else None
        (the search screens it itself)."""
        opt = self.opts.get(seq)
        if opt is None:
            return None
        j = self.block_of[seq]
        if j in self.mine:
            # this process's block: screened ahead while it waited for the child, or now
            return self.early.pop(seq, None)
        while seq not in self.answers and not self.ended and self._ready(0.0):
            self._read_block()
        if seq not in self.answers:
            if j in self.given_up:
                return None  # waited for once already: not again
            if not self._theirs(j):
                return None  # taken now by this process: it screens the option itself
            # the child is screening it now: its answer comes within a block's time;
            # meanwhile this process screens ahead (a block's worth at most) the next
            # block it took
            budget = len(self.blocks[j])
            while seq not in self.answers and not self.ended and budget > 0:
                if not self._screen_ahead(j):
                    break
                budget -= 1
                while seq not in self.answers and not self.ended and self._ready(0.0):
                    self._read_block()
            while seq not in self.answers and not self.ended and self._ready(WAIT_S):
                self._read_block()
            if seq not in self.answers:  # a starved or dead child: the block is screened here
                self.given_up.add(j)
                return None
        r = self.answers.pop(seq, None)
        if r is None:
            return None
        self.from_child += 1
        if isinstance(r, Rejection):  # its layout: the option's own object, as screened here
            if r.why is None:  # a memory rejection: the reason made where it is read
                r = dataclasses.replace(r, why=self.search.memory_why(opt))
            return dataclasses.replace(r, layout=opt.layout) if r.layout == opt.layout else r
        if r.release:
            opt = dataclasses.replace(opt, release=r.release)
        pq = self.search.price_of(opt.gpu.id)
        price = None if isinstance(pq, PlannerError) else pq
        # the replica: fill(), when the search simulates the option
        return Screened(opt, None, r.provenance, price, r.saturation_rps, r.cap_rps, r.k_lb,
                        r.bound)  # type: ignore[arg-type]  # fmt: skip

    def _screen_ahead(self, j: int) -> bool:
        """Screen one option of the first block after ``j`` this process took (taking the
        next block from the queue where it has none left), kept for :meth:`take`; False
        when there is nothing left to screen. A screen is a pure function of the option:
        done early, it is the screen the search would make when it reaches the option (or
        never uses, where it prunes the option first)."""
        own = self.own_order
        while own and (own[0] <= j or self.ahead_at.get(own[0], 0) >= len(self.blocks[own[0]])):
            own.popleft()  # passed, or screened ahead whole
        if not own:
            k = None if self.queue_empty else _take(self.queue)
            if k is None:
                self.queue_empty = True
                return False
            self.mine.add(k)
            own.append(k)
        k = own[0]
        i = self.ahead_at.get(k, 0)
        self.ahead_at[k] = i + 1
        seq, opt = self.blocks[k][i]
        with contextlib.suppress(Exception):  # the search screens it again, raising
            self.early[seq] = self.search.screen_option(opt)
        return True

    def _theirs(self, j: int) -> bool:
        """Whether the child took block ``j`` (else this process takes it now). The queue
        hands out blocks in order and this process asks in order, so a number past ``j``
        coming out of it means the child took ``j`` before."""
        if j in self.theirs:
            return True
        while not self.queue_empty:
            k = _take(self.queue)
            if k is None:
                self.queue_empty = True
                break
            self.mine.add(k)  # numbers before j: blocks already passed (nothing to do)
            if k > j:
                self.own_order.append(k)  # ahead: screened ahead while waiting for j
            if k >= j:
                return k != j
        return True  # every block taken, j not by this process

    def _ready(self, timeout: float) -> bool:
        if self.ended:
            return False
        try:
            return bool(select.select([self.fd], [], [], timeout)[0])
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
            j, out = pickle.loads(self._read_exact(n))
            self.theirs.add(j)
            self.answers.update(out)  # None: the child's screen failed (screened here again)
        except Exception:  # noqa: BLE001 - the end, a crash or a torn block: no more answers
            self.ended = True

    def close(self) -> None:
        """End the child (it may still be screening options the search no longer needs)
        and reap it."""
        for fd in (self.fd, self.queue):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)


def _take(fd: int) -> int | None:
    """The next block number in the queue ``fd``, None when it is empty (or unreadable)."""
    try:
        b = os.read(fd, _JOB.size)
    except OSError:
        return None
    return _JOB.unpack(b)[0] if len(b) == _JOB.size else None


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
