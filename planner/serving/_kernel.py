"""Compiled event loop of the continuous-batching simulator (numba).

:func:`_loop` is the event loop of :func:`planner.serving._engine._run_continuous` (the model
is described in :mod:`planner.serving.simulate`): a short driver over the phases of
:mod:`planner.serving._phases` (arrivals, the pure-decode stride, preemption, prefill
chunking, admission, the step's cost, decode, prefill progress), which numba inlines into
it. It runs compiled, numba imported only on the first call of :func:`kernel`, so ``import
planner`` and the CLI never load numba. The step time of every iteration comes from
:func:`planner.engine._scalar.step_time_scalar` (the one formula, compiled here and inlined
into the loop).

Cache: ``numba.njit(cache=True)`` stores the machine code in ``__pycache__`` next to this
file (or under ``NUMBA_CACHE_DIR``) and reuses it in later processes; a cold compile takes
~20 s on one core, loading from the cache about half a second. numba keys a cached function on
its own source file only, but the loop inlines the phases, its helpers and the step-time
formula from other files, so :func:`kernel` also keeps a stamp (a hash of every source,
:data:`SOURCES`) next to the cache and drops this module's cached entries when it differs.
Where no cache location is writable the loop is compiled in every process.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import types
from pathlib import Path

import numpy as np

from planner.engine import _scalar
from planner.engine._scalar import distinct_experts, step_time_scalar, straggler_time_scalar
from planner.files import precompile_bytecode
from planner.serving import _loop_parts, _phases
from planner.serving._jit import light_cache_load
from planner.serving._loop_parts import (
    borrow,
    borrow_intrinsic,
    heap_grown,
    heap_pop,
    heap_push,
    keep,
    scored_end,
    scored_first,
)
from planner.serving._phases import (
    AREA,
    ARRIVED,
    BS,
    BUDGET0,
    BUSY,
    CHUNKED,
    CLOSED,
    CUR,
    DEC,
    DEC_KV,
    DEC_SW,
    DONE,
    FREE,
    GATE_B,
    GATE_R,
    GATE_T,
    KV_AREA,
    KV_MAX,
    MAXNEW,
    MAXSEQ,
    N_CH,
    N_EV,
    N_F,
    N_FH,
    N_MH,
    N_PF,
    N_RQ,
    N_S,
    N_SWH,
    NBLOCKS,
    NEXT_ARR,
    NOW,
    PF_TOKENS,
    QP,
    RSV_PM,
    RUNNING,
    STOP,
    WATERMARK,
    WINDOW,
    WQ_LEN,
    account_iteration,
    admit,
    advance_decoders,
    advance_prefills,
    arrivals,
    chunk_prefills,
    decode_only,
    decode_stride,
    enqueue,
    finish_decoders,
    gate_closed,
    gate_count,
    grown,
    preempt,
    step_cost,
    stride_length,
    waiting_rule,
)

#: error codes of :func:`_loop`
ERR_STALLED = 1
ERR_KV_RUNNING = 2
ERR_NOTHING_SCHEDULABLE = 3

#: source files compiled into the loop: a change to any of them invalidates its cache
SOURCES = (
    Path(__file__),
    Path(_scalar.__file__),
    Path(_loop_parts.__file__),
    Path(_phases.__file__),
)
#: name of the stamp file kept in the cache folder
STAMP_NAME = "_kernel.sources.sha256"


_st = step_time_scalar  # replaced by the compiled versions in kernel()
_sg = straggler_time_scalar
_compiled = None


def sources_digest(paths=SOURCES) -> str:
    """SHA-256 over the contents of ``paths`` (the sources compiled into the loop)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def refresh_cache(
    cache_dir: str | os.PathLike,
    digest: str,
    prefix: str = "_kernel.",
    stamp_name: str = STAMP_NAME,
) -> bool:
    """Drop the cached functions of module ``prefix`` in ``cache_dir`` unless the stamp
    there (``stamp_name``) is ``digest``; then write ``digest`` as the stamp. Returns True
    when it dropped them.

    numba names its cache files ``<module>.<function>-<line>.py<ver>.nbi`` / ``.nbc``; the
    stamp's own name does not match those patterns.
    """
    stamp = Path(cache_dir) / stamp_name
    try:
        if stamp.read_text().strip() == digest:
            return False
    except OSError:
        pass
    for f in glob.glob(os.path.join(glob.escape(str(cache_dir)), prefix + "*.nb[ic]")):
        with contextlib.suppress(OSError):
            os.remove(f)
    with contextlib.suppress(OSError):
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        tmp = stamp.with_name(f"{stamp_name}.{os.getpid()}.tmp")
        tmp.write_text(digest + "\n")
        os.replace(tmp, stamp)
    return True


def _cache_dir(dispatcher) -> str | None:
    """The folder numba caches ``dispatcher`` in (None when it has no cache)."""
    return getattr(getattr(dispatcher, "_cache", None), "_cache_path", None)


def compile_cached(build, sources=SOURCES, prefix: str = "_kernel", stamp_name=STAMP_NAME):
    """``build(jit)`` with ``jit(f, **options)`` = ``numba.njit(cache=True, **options)(f)``,
    or without ``cache`` where
    there is no writable cache location (then every process compiles); its result's cache
    is dropped when ``sources`` changed (:func:`refresh_cache`: numba keys a cache on the
    function's own file only, not on the files it inlines). Returns ``(result, jit)``."""
    import numba  # on first use only: ``import planner`` and the CLI never load it

    def jit_with(**base):  # jit(f, **kw) = numba.njit(**base, **kw)(f); kw: e.g. nogil=True
        return lambda f, **kw: light_cache_load(numba.njit(**base, **kw)(f))

    try:
        jit = jit_with(cache=True)
        out = build(jit)
    except RuntimeError:  # no writable cache location: compile in every process
        jit = jit_with()
        out = build(jit)
    cache_dir = _cache_dir(out[-1] if isinstance(out, tuple) else out)
    if cache_dir is not None and refresh_cache(
        cache_dir, sources_digest(sources), prefix=f"{prefix}.", stamp_name=stamp_name
    ):
        precompile_bytecode()  # a new install or new sources: once, like the kernel
    return out, jit


def _bound(f, **names):
    """``f`` with the global ``names`` bound to other objects (its module is unchanged)."""
    return types.FunctionType(f.__code__, {**f.__globals__, **names}, f.__name__, f.__defaults__)


def kernel():
    """The compiled :func:`_loop` (numba imported and the cache loaded on first use).

    Every function the loop calls is compiled first and bound by name into the functions
    that call it: the step time and straggler formulas, the heaps and early-stop helpers of
    :mod:`planner.serving._loop_parts`, then the phases of :mod:`planner.serving._phases`
    (in the order of ``PHASES``, inlined into their callers: numba compiles the loop as one
    function, as fast as one written in one piece)."""
    global _st, _sg, _compiled
    if _compiled is None:

        def build(jit):
            experts = jit(distinct_experts, inline="always")
            names = {
                "step_time_scalar": jit(_bound(step_time_scalar, distinct_experts=experts)),
                "straggler_time_scalar": jit(straggler_time_scalar),
                "heap_push": jit(heap_push),
                "heap_pop": jit(heap_pop),
                "scored_first": jit(scored_first),
                "scored_end": jit(scored_end),
                "heap_grown": jit(heap_grown),
                "keep": jit(keep),
                "borrow": borrow_intrinsic(),
            }
            for name in _phases.PHASES:
                names[name] = jit(_bound(getattr(_phases, name), **names), inline="always")
            # the loop holds no GIL: another thread may run Python meanwhile
            loop = jit(_bound(_loop, **names), nogil=True)
            return names["step_time_scalar"], names["straggler_time_scalar"], loop

        (_st, _sg, _compiled), _ = compile_cached(build)
    return _compiled


def _loop(
    inp,
    out,
    cch,
    sb,
    arr,
    first,
    fin,
    npre,
    coef,
    srv,
    bs,
    maxseq,
    budget0,
    chunked,
    nblocks,
    watermark,
    W,
    closed,
    n_initial,
    stop_f,
    stop_i,
    stats,
):
    """Run the event loop; fills ``first``, ``fin``, ``npre`` (and ``arr`` when closed).

    ``arr`` has n + 1 entries, the last +inf (a sentinel). ``srv`` holds the host time per
    iteration and per sequence [s] and the straggler coefficients
    (``StepModel._straggler_coeffs``): an iteration of ``nseq`` sequences whose ``B`` decoders
    hold ``S`` tokens, the longest ``mx``, takes ``step_time + srv[0] + srv[1] * nseq +
    straggler_time(B, mx, S)``, its prompt chunks' share scaled by ``srv[4]`` (the engine's
    ``prefill_scale``); ``srv[5]`` overlaps the host time; ``srv[6]`` > 0 runs prompts
    before decoders (a step with prompts has no decoders); ``srv[7]`` is the share of a
    request's answer whose KV blocks admission reserves (``EngineConfig.kv_reserve_fraction``),
    ``srv[8]`` the ``max_tokens`` every request sends (0: its own answer's length),
    ``srv[9:12]`` the attention-DP balance gate's timeout, batching wait [iterations] and
    ranks (0 ranks: no gate; ``EngineConfig.adp_gate``, :func:`_phases.gate_closed`). Returns
    ``(err, iterations, busy, area, kv_area, kv_max, pf_tokens, ev_int, ev_t, n_events)``
    where ``ev_int[:n_events]`` holds (decoders, sequences, iterations) and
    ``ev_t[:n_events]`` (t_first, t_last) of every iteration record; ``err`` is 0 or an
    ``ERR_*`` code.

    Early stop (the verdict of the scored requests ``stop_i[0] <= r < stop_i[1]``, see
    :class:`planner.serving.probe.CapacityProbe`; off when ``stop_i[1] <= stop_i[0]``): a
    scored request is *bad* when its TTFT, TPOT or E2E exceeds ``stop_f[0:3]`` (for TTFT,
    known once it has waited that long without a first token); the loop
    returns as soon as ``stop_i[2]`` scored requests are bad, or the count of scored TTFT,
    TPOT or E2E values above ``stop_f[3:6]`` reaches ``stop_i[3:6]`` (the verdict is then
    certainly a miss), or, when ``stop_i[6]``, every scored request has finished (nothing
    later changes their latencies). ``stats`` receives (bad, the three counts, scored
    requests finished, why it stopped: 0 ran to the end, 1 a miss was certain, 2 every
    scored request had finished). Metrics are computed as :class:`SimResult` does.

    A pass of the loop admits the arrivals, then runs either a stride of pure-decode
    iterations (when no prefill runs and the head of the queue cannot join) or one full
    iteration: preemption, prefill chunks, admissions, the step's cost, decode, prefill
    progress. Each phase is a function of :mod:`planner.serving._phases`, whose docstring
    describes the state they share (the arrays ``s``, ``f``, ``rq``, ``pf``, ``ro``, the
    heaps ``fh`` / ``swh`` / ``mh``, ``cnt``, the ring buffer ``wq``, the iteration records
    ``ev_i`` / ``ev_t``; ``bad`` marks the scored requests already bad).
    """
    n = inp.shape[0]
    # the phases get views without reference counts (borrow) of the arrays; the owners
    # (the caller's, and *_own here) outlive them
    inp, out, cch, sb, arr = borrow(inp), borrow(out), borrow(cch), borrow(sb), borrow(arr)
    first, fin, npre, srv = borrow(first), borrow(fin), borrow(npre), borrow(srv)
    stop_f, stop_i, stats = borrow(stop_f), borrow(stop_i), borrow(stats)
    s_own = np.zeros(N_S, np.int64)
    f_own = np.zeros(N_F, np.float64)
    rq_own = np.zeros((N_RQ, n), np.int64)
    wq_own = np.zeros(max(n, 1), np.int64)
    pf_own = np.zeros((4, min(maxseq, n) + 1), np.int64)
    ro_own = np.zeros((2, 4 * (min(maxseq, n) + 1) + 300), np.int64)
    cnt_own = np.zeros(bs, np.int64)
    bad_own = np.zeros(n if stop_i[1] > stop_i[0] else 0, np.int8)  # 1 bad, 2 above stop_f[3]
    s, f, rq, wq = borrow(s_own), borrow(f_own), borrow(rq_own), borrow(wq_own)
    pf, ro, cnt, bad = borrow(pf_own), borrow(ro_own), borrow(cnt_own), borrow(bad_own)
    # heaps and iteration records grow: their owners change
    fh_own = np.zeros((64, 3), np.int64)
    swh_own = np.zeros((64, 3), np.int64)
    mh_own = np.zeros((64, 3), np.int64)
    fh, swh, mh = borrow(fh_own), borrow(swh_own), borrow(mh_own)
    ev_i_own = np.zeros((1024, 3), np.int64)
    ev_t_own = np.zeros((1024, 2), np.float64)
    ev_i, ev_t = borrow(ev_i_own), borrow(ev_t_own)
    s[BS] = bs
    s[MAXSEQ] = maxseq
    s[BUDGET0] = budget0
    s[CHUNKED] = chunked
    s[NBLOCKS] = nblocks
    s[FREE] = nblocks
    s[WATERMARK] = watermark
    s[WINDOW] = W
    s[CLOSED] = closed
    s[RSV_PM] = int(srv[7] * 1000.0 + 0.5)
    s[MAXNEW] = int(srv[8])
    s[GATE_T] = int(srv[9])  # the attention-DP balance gate (0 ranks: none)
    s[GATE_B] = int(srv[10])
    s[GATE_R] = int(srv[11])
    s[QP] = stop_i[0]
    req = (inp, out, cch, sb, arr, first, fin, npre)  # the requests, in and out
    es = (bad, stop_f, stop_i, stats)  # the early stop
    stats[:] = 0
    if closed:
        for r in range(n_initial):
            enqueue(s, wq, r)
        s[NEXT_ARR] = n_initial
        s[ARRIVED] = n_initial
    err = 0
    while s[DONE] < n:
        if s[STOP]:
            stats[5] = s[STOP]
            break
        if waiting_rule(s, f, req, es):
            stats[5] = 1
            break
        arrivals(s, f, req, wq)
        if s[RUNNING] == 0 and s[WQ_LEN] == 0:
            if not closed and s[NEXT_ARR] < n:
                f[NOW] = arr[s[NEXT_ARR]]
                continue
            err = ERR_STALLED
            break
        if s[N_EV] == ev_i.shape[0]:  # room for this pass's iteration record
            ev_i_own, ev_t_own = grown(ev_i_own, ev_t_own)
            ev_i, ev_t = borrow(ev_i_own), borrow(ev_t_own)
        # ---- prefill first (srv[6]: vLLM V0, SGLang): prompts that can join, and the chunks
        # of prompts already admitted, run in a step of their own with the whole budget; the
        # decoders wait (they neither decode nor grow)
        if srv[6] > 0.0 and (s[WQ_LEN] > 0 or s[N_PF] > 0) and s[DEC] > 0:
            dec, dkv, dsw = s[DEC], s[DEC_KV], s[DEC_SW]
            s[DEC] = 0
            s[DEC_KV] = 0
            s[DEC_SW] = 0
            admit(chunk_prefills(s, pf), s, req, rq, pf, ro, wq)
            ran = s[N_CH] > 0
            if ran:
                T, nseq, dt = step_cost(s, coef, srv, pf, rq, mh)
                account_iteration(dt, nseq, s, f, ev_i, ev_t)
            s[DEC] = dec
            s[DEC_KV] = dkv
            s[DEC_SW] = dsw
            if ran:
                rows = max(s[N_FH], s[N_SWH], s[N_MH]) + s[N_PF]
                if rows > fh.shape[0]:
                    rows = 2 * rows + 64
                    fh_own, swh_own, mh_own = (
                        heap_grown(fh, rows),
                        heap_grown(swh, rows),
                        heap_grown(mh, rows),
                    )
                    fh, swh, mh = borrow(fh_own), borrow(swh_own), borrow(mh_own)
                # the decoders did not move: the new ones start with them at iteration CUR
                s[CUR] -= 1
                advance_prefills(s, f, srv, req, rq, pf, cnt, fh, swh, mh, wq, es)
                s[CUR] += 1
                continue
        # ---- a stride of pure-decode iterations
        if decode_only(s, req, rq, wq, cnt):
            k = stride_length(s, rq, fh, swh, cnt)
            if k >= 1:
                k = decode_stride(k, s, f, coef, srv, req, rq, mh, cnt, ev_i, ev_t)
                gate_count(s, k, False)
                advance_decoders(k, s, rq, swh)
                s[CUR] += k
                i_last = s[CUR] - 1
                finish_decoders(i_last, s, f, req, rq, fh, cnt, wq, es)
                continue
        # ---- one full iteration
        if not preempt(s, req, rq, pf, ro, cnt, wq):
            err = ERR_KV_RUNNING
            break
        budget = chunk_prefills(s, pf)
        waiting = s[WQ_LEN]
        if (srv[6] == 0.0 or s[DEC] == 0) and not gate_closed(s):  # prefill first: no
            admit(budget, s, req, rq, pf, ro, wq)  # prompt joins the decoders
        gate_count(s, 1, s[WQ_LEN] < waiting)
        T, nseq, dt = step_cost(s, coef, srv, pf, rq, mh)
        if T == 0:
            err = ERR_NOTHING_SCHEDULABLE
            break
        account_iteration(dt, nseq, s, f, ev_i, ev_t)
        advance_decoders(1, s, rq, swh)
        finish_decoders(s[CUR], s, f, req, rq, fh, cnt, wq, es)
        rows = max(s[N_FH], s[N_SWH], s[N_MH]) + s[N_PF]
        if rows > fh.shape[0]:  # a free heap row for every prefill that may complete
            rows = 2 * rows + 64
            fh_own, swh_own, mh_own = (
                heap_grown(fh, rows),
                heap_grown(swh, rows),
                heap_grown(mh, rows),
            )
            fh, swh, mh = borrow(fh_own), borrow(swh_own), borrow(mh_own)
        advance_prefills(s, f, srv, req, rq, pf, cnt, fh, swh, mh, wq, es)
        s[CUR] += 1
    res = (err, s[CUR], f[BUSY], f[AREA], f[KV_AREA], s[KV_MAX], s[PF_TOKENS], s[N_EV])
    # the views' owners live to here (numba frees an array after its last use)
    keep(s_own, f_own, rq_own, wq_own, pf_own, ro_own, cnt_own, bad_own, fh_own, swh_own, mh_own)
    return res[:7] + (ev_i_own, ev_t_own, res[7])
