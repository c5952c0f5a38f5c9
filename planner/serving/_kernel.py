"""Compiled event loop of the continuous-batching simulator (numba).

:func:`_loop` is the event loop of :func:`planner.serving._engine._run_continuous` (the model
is described in :mod:`planner.serving.simulate`). It runs compiled with numba, imported only
on the first call of :func:`kernel`, so ``import planner`` and the CLI never load numba. The
step time of every iteration comes from :func:`planner.engine._scalar.step_time_scalar` (the
one formula, compiled here and inlined into the loop).

Cache: ``numba.njit(cache=True)`` stores the machine code in ``__pycache__`` next to this
file (or under ``NUMBA_CACHE_DIR``) and reuses it in later processes; a cold compile takes
~20 s on one core, loading from the cache about half a second. numba keys a cached function on
its own source file only, but the loop inlines the step-time formula from another file, so
:func:`kernel` also keeps a stamp (a hash of both sources, :data:`SOURCES`) next to the cache
and drops this module's cached entries when it differs. Where no cache location is
writable the loop is compiled in every process.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import math
import os
from pathlib import Path

import numpy as np

from planner.engine import _scalar
from planner.engine._scalar import step_time_scalar, straggler_time_scalar
from planner.files import precompile_bytecode
from planner.serving import _loop_parts
from planner.serving._jit import light_cache_load
from planner.serving._loop_parts import heap_pop, heap_push, scored_end, scored_first

#: error codes of :func:`_loop`
ERR_STALLED = 1
ERR_KV_RUNNING = 2
ERR_NOTHING_SCHEDULABLE = 3

#: source files compiled into the loop: a change to any of them invalidates its cache
SOURCES = (Path(__file__), Path(_scalar.__file__), Path(_loop_parts.__file__))
#: name of the stamp file kept in the cache folder
STAMP_NAME = "_kernel.sources.sha256"


_st = step_time_scalar  # replaced by the compiled versions in kernel()
_sg = straggler_time_scalar
_hpush = heap_push
_hpop = heap_pop
_scored_first = scored_first
_scored_end = scored_end
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


def kernel():
    """The compiled :func:`_loop` (numba imported and the cache loaded on first use)."""
    global _st, _sg, _hpush, _hpop, _scored_first, _scored_end, _compiled
    if _compiled is None:
        (st, sg, loop), jit = compile_cached(
            # the loop holds no GIL: another thread may run Python meanwhile
            lambda jit: (jit(step_time_scalar), jit(straggler_time_scalar), jit(_loop, nogil=True))
        )
        _st, _sg, _hpush, _hpop = st, sg, jit(heap_push), jit(heap_pop)
        _scored_first, _scored_end = jit(scored_first), jit(scored_end)
        _compiled = loop
    return _compiled


def _loop(  # noqa: C901
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
    straggler_time(B, mx, S)``. Returns
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

    State (short names: this is the hot loop; ``r`` is a request index, ``cur`` the index of
    the current iteration, token counts are per sequence unless said otherwise):

    Per request (arrays of length n)
        ``arr`` arrival [s] (closed loop: set when a client sends it); ``first`` / ``fin``
        time of the first / last token [s] (NaN until then); ``status`` 0 waiting or not
        arrived, 1 prefilling, 2 decoding, 3 done; ``g`` tokens generated so far (for a
        decoder: at its decode start); ``npre`` times preempted; ``epoch`` bumped whenever the
        request leaves the running set, so stale heap entries are recognised and skipped;
        ``adm`` admission counter (matches entries of ``ro_a``); ``dI0`` / ``dP`` iteration
        and KV tokens at decode start (KV tokens now = ``dP + cur - dI0``); ``sb``
        shared-prefix blocks it uses (held once for everybody).
    Queues and heaps
        ``wq[wh : wh + wlen]`` (a ring buffer) the FCFS queue (preempted requests re-enter at
        the front); ``pf_r`` / ``pf_P`` / ``pf_pos`` running prefills (request, prompt tokens
        to reach, tokens in KV so far) in admission order, ``ch_c`` this iteration's chunks;
        ``ro_r`` / ``ro_a`` (r, adm) in admission order, the last one is preempted first;
        ``fh`` min-heap of (iteration of the last token, r, epoch) of decoders; ``swh`` of
        (iteration at which the context reaches the window ``W``, r, epoch); ``mh`` of
        (-(dP - dI0), r, epoch): its top is the longest decoder (KV tokens ``cur`` - key).
    Decode aggregates (what a stride of pure-decode iterations needs)
        ``B`` decoders; ``S`` sum of their KV tokens before the iteration; ``Tsw`` sum of
        ``min(kv + 1, W)``; ``nbelow`` decoders still below the window; ``cnt[k]`` decoders
        whose KV length is ``k`` mod ``block_size`` at ``cur = 0`` (who needs a new block when).
    KV cache and clocks
        ``free`` free blocks (``nblocks`` after the shared prefix, ``watermark`` kept free on
        admission); ``n_running`` admitted requests; ``now`` simulated time [s]; ``done``,
        ``arrived``, ``next_arr`` request counters.
    Accumulators
        ``area`` integral of requests in the system [req*s]; ``kv_area`` of used blocks;
        ``kv_max`` peak used blocks; ``busy`` time with work [s]; ``pf_tokens`` prefilled
        tokens; ``ev_i`` / ``ev_t`` the iteration records, for the ITL and batch-size
        distributions.
    """
    n = inp.shape[0]
    has_sw = W > 0
    g = np.zeros(n, np.int64)  # tokens emitted so far (at decode start for decoders)
    epoch = np.zeros(n, np.int64)
    adm = np.zeros(n, np.int64)
    status = np.zeros(n, np.int64)  # 0 waiting/not arrived, 1 prefill, 2 decode, 3 done
    dI0 = np.zeros(n, np.int64)
    dP = np.zeros(n, np.int64)
    # waiting queue: ring buffer (a request is in it at most once)
    wq = np.zeros(max(n, 1), np.int64)
    wcap = wq.shape[0]
    wh = 0
    wlen = 0
    # running prefills, in admission order: (request, prompt to prefill, position)
    cap = min(maxseq, n) + 1
    pf_r = np.zeros(cap, np.int64)
    pf_P = np.zeros(cap, np.int64)
    pf_pos = np.zeros(cap, np.int64)
    ch_c = np.zeros(cap, np.int64)  # this iteration's chunk of pf[j]
    npf = 0
    # admission order of running requests (stale entries skipped / compacted)
    rcap = 4 * (min(maxseq, n) + 1) + 300
    ro_r = np.zeros(rcap, np.int64)
    ro_a = np.zeros(rcap, np.int64)
    nro = 0
    # min-heaps of (iteration, request, epoch): last decode iteration / window crossing
    fh = np.zeros((64, 3), np.int64)
    nfh = 0
    swh = np.zeros((64, 3), np.int64)
    nswh = 0
    mh = np.zeros((64, 3), np.int64)
    nmh = 0
    sched = srv[0]
    sched_seq = srv[1]
    sgc = (srv[2], srv[3])
    use_sg = srv[2] > 0.0
    cnt = np.zeros(bs, np.int64)
    ecap = 1024
    ev_i = np.zeros((ecap, 3), np.int64)
    ev_t = np.zeros((ecap, 2), np.float64)
    nev = 0
    B = 0
    S = 0  # sum of decoders' KV tokens before the current iteration
    Tsw = 0  # sum over decoders of min(kv_before + 1, W)
    nbelow = 0
    free = nblocks
    n_running = 0
    cur = 0  # iteration index
    now = 0.0
    done = 0
    next_arr = 0
    arrived = 0
    area = 0.0
    kv_area = 0.0
    kv_max = 0
    busy = 0.0
    pf_tokens = 0
    ceil = math.ceil
    # early stop (see the docstring)
    s0 = stop_i[0]
    s1 = stop_i[1]
    bad = np.zeros(n if s1 > s0 else 0, np.int8)  # 1 bad, 2 counted above stop_f[3]
    qp = s0  # the next scored request the waiting rule looks at
    stats[:] = 0
    stop = 0

    if closed:
        for r in range(n_initial):
            wq[(wh + wlen) % wcap] = r
            wlen += 1
        next_arr = n_initial
        arrived = n_initial

    while done < n:
        if stop:
            stats[5] = stop
            break
        # a scored request still without its first token a TTFT threshold after its arrival
        # is bad already (its first token comes later still)
        while qp < s1 and now - arr[qp] > stop_f[0]:
            if first[qp] != first[qp]:
                if not bad[qp] & 1:
                    bad[qp] |= 1
                    stats[0] += 1
                if now - arr[qp] > stop_f[3]:
                    bad[qp] |= 2
                    stats[1] += 1
            qp += 1
        if s1 > s0 and (stats[0] >= stop_i[2] or stats[1] >= stop_i[3]):
            stats[5] = 1
            break
        # ---- arrivals up to now join the queue
        while arr[next_arr] <= now:
            wq[(wh + wlen) % wcap] = next_arr
            wlen += 1
            area += now - arr[next_arr]
            next_arr += 1
            arrived += 1
        if n_running == 0 and wlen == 0:
            if not closed and next_arr < n:
                now = arr[next_arr]
                continue
            return (1, cur, busy, area, kv_area, kv_max, pf_tokens, ev_i, ev_t, nev)

        # ---- can the next iterations run as one stride of pure decode?
        blocked = True
        if wlen > 0 and npf == 0:
            h = wq[wh]
            if n_running < maxseq and budget0 - B > 0:
                P = inp[h] + g[h]
                need_dec = cnt[(-cur) % bs] if B else 0
                if ceil(P / bs) - sb[h] <= free - need_dec - watermark and (
                    chunked or P - cch[h] <= budget0 - B
                ):
                    blocked = False
        if npf == 0 and B > 0 and (wlen == 0 or blocked):
            # completion limit
            while nfh > 0 and fh[0, 2] != epoch[fh[0, 1]]:
                _, _, _, nfh = _hpop(fh, nfh)
            k = fh[0, 0] - cur + 1
            # KV limit: iterations whose decode block allocations fit in the free blocks
            if free >= B * (k // bs + 1):
                k_kv = k
            else:
                full = free // B
                rem = free - full * B
                kk = full * bs
                j = 0
                while j < bs:
                    c = cnt[(-(cur + kk + j)) % bs]
                    if c > rem:
                        break
                    rem -= c
                    j += 1
                k_kv = kk + j
            if k_kv < k:
                k = k_kv
            if has_sw:
                while nswh > 0 and swh[0, 2] != epoch[swh[0, 1]]:
                    _, _, _, nswh = _hpop(swh, nswh)
                if nswh > 0:
                    ksw = swh[0, 0] - cur + 1
                    if ksw < k:
                        k = ksw
            if k >= 1:
                fB = float(B)
                # host time and the straggler term stay constant over the stride (every
                # decoder's context grows by one token per iteration)
                extra = sched + sched_seq * fB
                if use_sg:
                    while nmh > 0 and mh[0, 2] != epoch[mh[0, 1]]:
                        _, _, _, nmh = _hpop(mh, nmh)
                    if nmh > 0:
                        extra += _sg(sgc, fB, float(cur - mh[0, 0]), float(S))
                t0 = (
                    _st(coef, fB, fB, fB, float(S + B), float(S + B), float(Tsw), float(Tsw), 0.0)
                    + extra
                )
                if k > 1:
                    S1 = S + B * (k - 1)
                    T1 = Tsw + nbelow * (k - 1)
                    t1 = (
                        _st(
                            coef,
                            fB,
                            fB,
                            fB,
                            float(S1 + B),
                            float(S1 + B),
                            float(T1),
                            float(T1),
                            0.0,
                        )
                        + extra
                    )
                    d = (t1 - t0) / (k - 1)
                else:
                    t1, d = t0, 0.0
                if wlen == 0 and not closed and next_arr < n:
                    gap = arr[next_arr] - now
                    # smallest j >= 1 with j*t0 + d*j*(j-1)/2 >= gap
                    if d > 1e-18:
                        a2 = d / 2
                        b2 = t0 - d / 2
                        # root of a2*j**2 + b2*j = gap in the form without cancellation
                        jj = ceil(2 * gap / (b2 + math.sqrt(b2 * b2 + 4 * a2 * gap)) - 1e-9)
                    else:
                        jj = ceil(gap / t0 - 1e-9)
                    jj = max(1, jj)
                    if jj < k:
                        k = jj
                        t1 = t0 + d * (k - 1)
                dur = k * t0 + d * k * (k - 1) / 2
                # blocks allocated by the decoders over the k iterations
                full = k // bs
                remk = k - full * bs
                alloc = full * B
                if remk:  # phases hit by iterations cur .. cur+remk-1: p0, p0-1, ... (mod bs)
                    p0 = (-cur) % bs
                    lo_p = p0 - remk + 1
                    if lo_p >= 0:
                        alloc += cnt[lo_p : p0 + 1].sum()
                    else:
                        alloc += cnt[: p0 + 1].sum() + cnt[bs + lo_p :].sum()
                used0 = nblocks - free
                free -= alloc
                kv_area += (used0 + alloc / 2) * dur
                if used0 + alloc > kv_max:
                    kv_max = used0 + alloc
                area += (arrived - done) * dur
                busy += dur
                if nev == ecap:
                    ecap *= 2
                    ev_i2 = np.zeros((ecap, 3), np.int64)
                    ev_t2 = np.zeros((ecap, 2), np.float64)
                    ev_i2[:nev] = ev_i
                    ev_t2[:nev] = ev_t
                    ev_i, ev_t = ev_i2, ev_t2
                ev_i[nev, 0] = B
                ev_i[nev, 1] = B
                ev_i[nev, 2] = k
                ev_t[nev, 0] = t0
                ev_t[nev, 1] = t1
                nev += 1
                now += dur
                S += B * k
                if has_sw:
                    Tsw += nbelow * k
                    lim = cur + k
                    while nswh > 0 and swh[0, 0] <= lim:
                        e, r, ep, nswh = _hpop(swh, nswh)
                        if ep == epoch[r]:
                            nbelow -= 1
                            Tsw -= lim - e
                cur += k
                if fh[0, 0] < cur:
                    # ---- decoders whose last token was in iteration i_last finish now
                    i_last = cur - 1
                    while nfh > 0 and fh[0, 0] <= i_last:
                        _, r, ep, nfh = _hpop(fh, nfh)
                        if ep != epoch[r]:
                            continue
                        kva = dP[r] + (i_last - dI0[r]) + 1
                        S -= kva
                        cnt[(dP[r] - dI0[r]) % bs] -= 1
                        if has_sw:
                            Tsw -= min(kva + 1, W)
                            if dI0[r] + W - dP[r] - 1 > i_last + 1:
                                nbelow -= 1
                        free += ceil(kva / bs) - sb[r]
                        epoch[r] += 1
                        status[r] = 3
                        fin[r] = now
                        B -= 1
                        n_running -= 1
                        done += 1
                        if s0 <= r < s1:
                            stop = max(
                                stop,
                                _scored_end(r, now, arr, first, out, bad, stop_f, stop_i, stats),
                            )
                        if closed and next_arr < n:  # the client sends its next request
                            arr[next_arr] = now
                            wq[(wh + wlen) % wcap] = next_arr
                            wlen += 1
                            next_arr += 1
                            arrived += 1
                continue

        # ---- one full iteration: preemption, prefill chunks, admissions
        need = cnt[(-cur) % bs] if B else 0
        while need > free:
            # preempt the most recently admitted running request (recompute)
            found = False
            while nro > 0:
                nro -= 1
                r = ro_r[nro]
                a = ro_a[nro]
                if adm[r] != a or (status[r] != 1 and status[r] != 2):
                    continue
                if status[r] == 2:
                    kvb = dP[r] + (cur - dI0[r])
                    S -= kvb
                    cnt[(dP[r] - dI0[r]) % bs] -= 1
                    if has_sw:
                        Tsw -= min(kvb + 1, W)
                        if dI0[r] + W - dP[r] - 1 > cur:
                            nbelow -= 1
                    free += ceil(kvb / bs) - sb[r]
                    g[r] += cur - dI0[r]
                    B -= 1
                else:
                    for j in range(npf):
                        if pf_r[j] == r:
                            free += ceil(pf_P[j] / bs) - sb[r]
                            for jj in range(j, npf - 1):
                                pf_r[jj] = pf_r[jj + 1]
                                pf_P[jj] = pf_P[jj + 1]
                                pf_pos[jj] = pf_pos[jj + 1]
                            npf -= 1
                            break
                epoch[r] += 1
                status[r] = 0
                n_running -= 1
                npre[r] += 1
                wh = (wh - 1) % wcap
                wq[wh] = r
                wlen += 1
                found = True
                break
            if not found:
                return (2, cur, busy, area, kv_area, kv_max, pf_tokens, ev_i, ev_t, nev)
            need = cnt[(-cur) % bs] if B else 0
        free -= need
        budget = budget0 - B
        T = B
        nseq = B
        nlog = B
        kvf = S + B
        prf = float(S + B)
        kvs = Tsw
        prs = float(Tsw)
        prp = 0.0  # pairs between the chunks and their cached context (full layers)
        nch = 0  # the chunks are pf[0 .. nch-1]
        for j in range(npf):
            if budget <= 0:
                break
            c = pf_P[j] - pf_pos[j]
            if chunked and c > budget:
                c = budget
            budget -= c
            ch_c[j] = c
            nch += 1
        while wlen > 0 and budget > 0 and n_running < maxseq:
            h = wq[wh]
            P = inp[h] + g[h]
            nb = ceil(P / bs) - sb[h]
            if nb > free - watermark and (n_running > 0 or nb > free):
                break
            todo = P - cch[h]
            if not chunked and todo > budget and (T > 0 or nch > 0):
                break
            wh = (wh + 1) % wcap
            wlen -= 1
            free -= nb
            status[h] = 1
            n_running += 1
            adm[h] += 1
            ro_r[nro] = h
            ro_a[nro] = adm[h]
            nro += 1
            if nro > 4 * n_running + 256:
                m = 0
                for j in range(nro):
                    r = ro_r[j]
                    a = ro_a[j]
                    if adm[r] == a and (status[r] == 1 or status[r] == 2):
                        ro_r[m] = r
                        ro_a[m] = a
                        m += 1
                nro = m
            pf_r[npf] = h
            pf_P[npf] = P
            pf_pos[npf] = cch[h]
            c = todo if (not chunked or todo <= budget) else budget
            budget -= c
            ch_c[npf] = c
            npf += 1
            nch += 1
        for j in range(nch):
            c = ch_c[j]
            pos = pf_pos[j]
            end = pos + c
            T += c
            nseq += 1
            kvf += end
            prf += c * pos + c * (c + 1) / 2
            prp += c * pos
            if has_sw:
                kvs += end if end < W else W
                i_cap = W - pos
                if i_cap < 0:
                    i_cap = 0
                elif i_cap > c:
                    i_cap = c
                prs += i_cap * pos + i_cap * (i_cap + 1) / 2 + (c - i_cap) * W
            if end == pf_P[j]:
                nlog += 1
        if T == 0:
            return (3, cur, busy, area, kv_area, kv_max, pf_tokens, ev_i, ev_t, nev)
        extra = sched + sched_seq * nseq
        if use_sg and B > 0:
            while nmh > 0 and mh[0, 2] != epoch[mh[0, 1]]:
                _, _, _, nmh = _hpop(mh, nmh)
            if nmh > 0:
                extra += _sg(sgc, float(B), float(cur - mh[0, 0]), float(S))
        dt = (
            _st(
                coef,
                float(T),
                float(nseq),
                float(nlog),
                float(kvf),
                prf,
                float(kvs),
                prs,
                prp,
            )
            + extra
        )
        used = nblocks - free
        kv_area += used * dt
        if used > kv_max:
            kv_max = used
        area += (arrived - done) * dt
        busy += dt
        now += dt
        if nev == ecap:
            ecap *= 2
            ev_i2 = np.zeros((ecap, 3), np.int64)
            ev_t2 = np.zeros((ecap, 2), np.float64)
            ev_i2[:nev] = ev_i
            ev_t2[:nev] = ev_t
            ev_i, ev_t = ev_i2, ev_t2
        ev_i[nev, 0] = B
        ev_i[nev, 1] = nseq
        ev_i[nev, 2] = 1
        ev_t[nev, 0] = dt
        ev_t[nev, 1] = dt
        nev += 1
        # decoders advance one token
        S += B
        if has_sw:
            Tsw += nbelow
            lim = cur + 1
            while nswh > 0 and swh[0, 0] <= lim:
                e, r, ep, nswh = _hpop(swh, nswh)
                if ep == epoch[r]:
                    nbelow -= 1
                    Tsw -= lim - e
        if nfh > 0 and fh[0, 0] <= cur:
            # ---- decoders whose last token was in iteration i_last finish now
            i_last = cur
            while nfh > 0 and fh[0, 0] <= i_last:
                _, r, ep, nfh = _hpop(fh, nfh)
                if ep != epoch[r]:
                    continue
                kva = dP[r] + (i_last - dI0[r]) + 1
                S -= kva
                cnt[(dP[r] - dI0[r]) % bs] -= 1
                if has_sw:
                    Tsw -= min(kva + 1, W)
                    if dI0[r] + W - dP[r] - 1 > i_last + 1:
                        nbelow -= 1
                free += ceil(kva / bs) - sb[r]
                epoch[r] += 1
                status[r] = 3
                fin[r] = now
                B -= 1
                n_running -= 1
                done += 1
                if s0 <= r < s1:
                    stop = max(
                        stop, _scored_end(r, now, arr, first, out, bad, stop_f, stop_i, stats)
                    )
                if closed and next_arr < n:  # the client sends its next request
                    arr[next_arr] = now
                    wq[(wh + wlen) % wcap] = next_arr
                    wlen += 1
                    next_arr += 1
                    arrived += 1
        # prefill progress
        m = 0
        for j in range(npf):
            if j < nch:
                c = ch_c[j]
                pf_pos[j] += c
                pf_tokens += c
                if pf_pos[j] >= pf_P[j]:
                    r = pf_r[j]
                    P = pf_P[j]
                    g[r] += 1
                    if first[r] != first[r]:
                        first[r] = now
                        if s0 <= r < s1:
                            stop = max(stop, _scored_first(r, now, arr, bad, stop_f, stop_i, stats))
                    if g[r] >= out[r]:
                        free += ceil(P / bs) - sb[r]
                        epoch[r] += 1
                        status[r] = 3
                        fin[r] = now
                        n_running -= 1
                        done += 1
                        if s0 <= r < s1:
                            stop = max(
                                stop,
                                _scored_end(r, now, arr, first, out, bad, stop_f, stop_i, stats),
                            )
                        if closed and next_arr < n:  # the client sends its next request
                            arr[next_arr] = now
                            wq[(wh + wlen) % wcap] = next_arr
                            wlen += 1
                            next_arr += 1
                            arrived += 1
                        continue
                    I0 = cur + 1
                    dI0[r] = I0
                    dP[r] = P
                    status[r] = 2
                    B += 1
                    S += P
                    cnt[(P - I0) % bs] += 1
                    fh, nfh = _hpush(fh, nfh, I0 + out[r] - g[r] - 1, r, epoch[r])
                    if use_sg:
                        mh, nmh = _hpush(mh, nmh, I0 - P, r, epoch[r])
                    if has_sw:
                        Tsw += P + 1 if P + 1 < W else W
                        e = I0 + W - P - 1
                        if e > I0:
                            nbelow += 1
                            swh, nswh = _hpush(swh, nswh, e, r, epoch[r])
                    continue
            # still prefilling: keep, in order
            pf_r[m] = pf_r[j]
            pf_P[m] = pf_P[j]
            pf_pos[m] = pf_pos[j]
            m += 1
        npf = m
        cur += 1

    return (0, cur, busy, area, kv_area, kv_max, pf_tokens, ev_i, ev_t, nev)
