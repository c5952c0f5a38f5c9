"""Helpers compiled into the event loop of :mod:`planner.serving._kernel`: the binary heaps
of its iteration events, the early-stop bookkeeping of scored requests (plain functions,
numba-compilable) and :func:`borrow` (array views without a reference count, what lets the
loop's phases be functions at no cost). The loop's cache stamp covers this file."""

from __future__ import annotations

import numpy as np


def borrow(a):
    """``a`` itself (interpreted); compiled, a view of array ``a`` without a reference count
    (:func:`borrow_intrinsic`)."""
    return a


_borrow = None


def borrow_intrinsic():
    """numba's compiled :func:`borrow`: a view of an array with a null ``meminfo`` (and
    ``parent``), valid while the array it views lives (the caller keeps that one).

    numba counts references to every array it passes: where the loop hands an array to a
    phase (a function inlined into it), it increments and decrements the array's count
    (atomic operations in calls to numba's runtime) once per array and phase call, which
    made the split loop 3.4 times slower than the loop written in one piece. A count on a
    null ``meminfo`` is no operation, and LLVM sees the constant and drops the calls: the
    views cost nothing, and the split loop runs as fast as the one-piece one."""
    global _borrow
    if _borrow is None:
        from numba.core import cgutils, types
        from numba.extending import intrinsic
        from numba.np.arrayobj import make_array

        @intrinsic
        def borrow(typingctx, a):
            if not isinstance(a, types.Array):
                return None

            def codegen(context, builder, sig, args):
                src = make_array(a)(context, builder, value=args[0])
                view = make_array(a)(context, builder)
                view.meminfo = cgutils.get_null_value(view.meminfo.type)
                view.parent = cgutils.get_null_value(view.parent.type)
                view.nitems = src.nitems
                view.itemsize = src.itemsize
                view.data = src.data
                view.shape = src.shape
                view.strides = src.strides
                return view._getvalue()

            return a(a), codegen

        _borrow = borrow
    return _borrow


def keep(*arrays):
    """Nothing: a last use of ``arrays``, where the views :func:`borrow` made of them are
    used for the last time before (numba frees an array right after its last use)."""


def heap_grown(h, rows):
    """The heap ``h`` in an array of ``rows`` rows (its rows copied)."""
    h2 = np.zeros((rows, 3), np.int64)
    h2[: h.shape[0]] = h
    return h2


def heap_push(h, size, a, b, c):
    """Push (a, b, c) on the binary min-heap ``h[:size]`` (rows compared lexicographically);
    returns the new size. ``h`` must have a free row (the caller grows it:
    :func:`heap_grown`)."""
    i = size
    while i > 0:
        p = (i - 1) >> 1
        pa = h[p, 0]
        if pa < a or (pa == a and (h[p, 1] < b or (h[p, 1] == b and h[p, 2] <= c))):
            break
        h[i, 0] = pa
        h[i, 1] = h[p, 1]
        h[i, 2] = h[p, 2]
        i = p
    h[i, 0] = a
    h[i, 1] = b
    h[i, 2] = c
    return size + 1


def heap_pop(h, size):
    """Remove the smallest row of the min-heap ``h[:size]``; returns it and the new size."""
    a = h[0, 0]
    b = h[0, 1]
    c = h[0, 2]
    size -= 1
    if size > 0:
        x0 = h[size, 0]
        x1 = h[size, 1]
        x2 = h[size, 2]
        i = 0
        while True:
            m = 2 * i + 1
            if m >= size:
                break
            r = m + 1
            if r < size and (
                h[r, 0] < h[m, 0]
                or (
                    h[r, 0] == h[m, 0]
                    and (h[r, 1] < h[m, 1] or (h[r, 1] == h[m, 1] and h[r, 2] < h[m, 2]))
                )
            ):
                m = r
            if h[m, 0] < x0 or (
                h[m, 0] == x0 and (h[m, 1] < x1 or (h[m, 1] == x1 and h[m, 2] < x2))
            ):
                h[i, 0] = h[m, 0]
                h[i, 1] = h[m, 1]
                h[i, 2] = h[m, 2]
                i = m
            else:
                break
        h[i, 0] = x0
        h[i, 1] = x1
        h[i, 2] = x2
    return a, b, c, size


def scored_first(r, now, arr, bad, stop_f, stop_i, stats):
    """Early-stop bookkeeping when scored request ``r`` emits its first token at ``now``
    (see :func:`_loop`); returns 1 when a miss is certain, else 0."""
    ttft = now - arr[r]
    if ttft > stop_f[0] and not bad[r] & 1:
        bad[r] |= 1
        stats[0] += 1
    if ttft > stop_f[3] and not bad[r] & 2:
        bad[r] |= 2
        stats[1] += 1
    if stats[0] >= stop_i[2] or stats[1] >= stop_i[3]:
        return 1
    return 0


def scored_end(r, now, arr, first, out, bad, stop_f, stop_i, stats):
    """Early-stop bookkeeping when scored request ``r`` finishes at ``now`` (see
    :func:`_loop`): 1 when a miss is certain, 2 when every scored request has finished
    (and ``stop_i[6]``), else 0. TPOT and E2E as :class:`SimResult` computes them."""
    e2e = now - arr[r]
    d = out[r] - 1
    if d > 0:
        tpot = (now - first[r]) / d
        if tpot > stop_f[1] and not bad[r] & 1:
            bad[r] |= 1
            stats[0] += 1
        if tpot > stop_f[4]:
            stats[2] += 1
    if e2e > stop_f[2] and not bad[r] & 1:
        bad[r] |= 1
        stats[0] += 1
    if e2e > stop_f[5]:
        stats[3] += 1
    stats[4] += 1
    if stats[0] >= stop_i[2] or stats[1] >= stop_i[3] or stats[2] >= stop_i[4]:
        return 1
    if stats[3] >= stop_i[5]:
        return 1
    if stop_i[6] and stats[4] >= stop_i[1] - stop_i[0]:
        return 2
    return 0
