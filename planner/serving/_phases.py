"""The phases of the simulator's event loop (:func:`planner.serving._kernel._loop`), one
function each, compiled into the loop (numba, inlined: :func:`planner.serving._kernel.kernel`
binds every name they call to its compiled twin; the loop's cache stamp covers this file).

A pass of the loop: the early stop's waiting rule (:func:`waiting_rule`), the arrivals
(:func:`arrivals`), then either a stride of pure-decode iterations (:func:`decode_only`,
:func:`stride_length`, :func:`decode_stride`, :func:`advance_decoders`,
:func:`finish_decoders`) or one full iteration: preemption (:func:`preempt`), prefill
chunking (:func:`chunk_prefills`), admission (:func:`admit`), the step's cost
(:func:`step_cost`, :func:`account_iteration`), decode (:func:`advance_decoders`,
:func:`finish_decoders`) and prefill progress (:func:`advance_prefills`). A new phase is a
function here, listed in :data:`PHASES` after the phases it calls, and a call in ``_loop``.

State shared between phases travels in arrays, indexed by the constants below (the short
names are those of ``_loop``'s docstring and of the phases' locals):

``s`` (int64) scalars
    ``s[DEC]`` B decoders; ``s[DEC_KV]`` S the sum of their KV tokens before the iteration;
    ``s[DEC_SW]`` Tsw the sum of ``min(kv + 1, W)``; ``s[BELOW]`` nbelow decoders still below
    the window; ``s[FREE]`` free KV blocks; ``s[RUNNING]`` admitted requests; ``s[CUR]`` the
    current iteration; ``s[DONE]``, ``s[NEXT_ARR]``, ``s[ARRIVED]`` request counters;
    ``s[KV_MAX]`` peak used blocks; ``s[PF_TOKENS]`` prefilled tokens; ``s[WQ_HEAD]`` /
    ``s[WQ_LEN]`` the waiting queue's ring buffer ``wq``; ``s[N_PF]`` running prefills,
    ``s[N_CH]`` those with a chunk this iteration; ``s[N_RO]``, ``s[N_FH]``, ``s[N_SWH]``,
    ``s[N_MH]``, ``s[N_EV]`` the lengths of ``ro``, the three heaps and the iteration records;
    ``s[STOP]`` the early stop's reason; ``s[QP]`` the next scored request the waiting rule
    looks at. Then the configuration, set once: ``s[BS]`` block size, ``s[MAXSEQ]``,
    ``s[BUDGET0]`` token budget, ``s[CHUNKED]``, ``s[NBLOCKS]``, ``s[WATERMARK]``,
    ``s[WINDOW]`` (0: no sliding window), ``s[CLOSED]``, ``s[RSV_PM]`` the share of a
    request's answer whose blocks admission reserves [1/1000] (0: none, vLLM's rule; 1000:
    TensorRT-LLM's ``GUARANTEED_NO_EVICT``; ``data/engine_policies.yaml``); ``s[RESV]`` the
    blocks the running requests reserved (with ``s[RSV_PM]`` > 0 a request is admitted only
    while its reservation fits beside theirs in ``s[NBLOCKS]``); ``s[MAXNEW]`` the
    ``max_tokens`` every request sends [tokens] (0: each its own answer's length);
    ``s[GATE_T]``, ``s[GATE_B]``, ``s[GATE_R]`` the attention-DP balance gate (timeout,
    batching wait, ranks; 0 ranks: none) and its counts ``s[GATE_HELD]``, ``s[GATE_BW]``.
``f`` (float64) clock and integrals
    ``f[NOW]`` simulated time [s]; ``f[AREA]`` requests in the system [req*s];
    ``f[KV_AREA]`` used blocks [block*s]; ``f[BUSY]`` time with work [s].
``rq`` (int64, one row per field, one column per request)
    ``rq[G]`` tokens generated (a decoder's: at its decode start); ``rq[EPOCH]`` bumped
    whenever the request leaves the running set (stale heap entries are skipped);
    ``rq[ADM]`` admission counter (matches ``ro[RO_A]``); ``rq[STATUS]`` :data:`WAITING`,
    :data:`PREFILL`, :data:`DECODE`, :data:`FINISHED`; ``rq[DEC_I0]`` / ``rq[DEC_P]``
    iteration and KV tokens at decode start (KV tokens now = ``dP + cur - dI0``);
    ``rq[RSV]`` the blocks it reserved at admission (:func:`reserved_blocks`).
``pf`` (int64) running prefills in admission order
    ``pf[PF_R]`` request, ``pf[PF_P]`` prompt tokens to reach, ``pf[PF_POS]`` tokens in KV,
    ``pf[PF_CHUNK]`` this iteration's chunk.
``ro`` (int64) running requests in admission order, the last preempted first
    ``ro[RO_R]`` request, ``ro[RO_A]`` its admission counter then (stale entries skipped).
Heaps (``heap_push`` / ``heap_pop``; rows (key, request, epoch))
    ``fh`` keyed by a decoder's last iteration; ``swh`` by the iteration at which its context
    reaches the window; ``mh`` by ``-(dP - dI0)``: the top is the longest decoder (KV tokens
    ``cur`` - key). ``cnt[k]``: decoders whose KV length is ``k`` mod the block size at
    ``cur = 0`` (who needs a new block when).
"""

from __future__ import annotations

import math

import numpy as np

from planner.engine._scalar import step_time_scalar, straggler_time_scalar
from planner.serving._loop_parts import heap_pop, heap_push, scored_end, scored_first

ceil = math.ceil

# ``s``: scalars (see the module docstring)
DEC, DEC_KV, DEC_SW, BELOW, FREE, RUNNING, CUR, DONE, NEXT_ARR, ARRIVED = range(10)
KV_MAX, PF_TOKENS, WQ_HEAD, WQ_LEN, N_PF, N_CH, N_RO, N_FH, N_SWH, N_MH = range(10, 20)
N_EV, STOP, QP = range(20, 23)
BS, MAXSEQ, BUDGET0, CHUNKED, NBLOCKS, WATERMARK, WINDOW, CLOSED, RSV_PM, RESV = range(23, 33)
MAXNEW = 33
# the attention-DP balance gate (:func:`gate_closed`; ``GATE_R`` 0: no gate)
GATE_T, GATE_B, GATE_R, GATE_HELD, GATE_BW = range(34, 39)
N_S = 39
# ``f``: clock and integrals
NOW, AREA, KV_AREA, BUSY = range(4)
N_F = 4
# ``rq`` rows, and the values of ``rq[STATUS]``
G, EPOCH, ADM, STATUS, DEC_I0, DEC_P, RSV = range(7)
N_RQ = 7
WAITING, PREFILL, DECODE, FINISHED = range(4)
# ``pf`` rows; ``ro`` rows
PF_R, PF_P, PF_POS, PF_CHUNK = range(4)
RO_R, RO_A = range(2)


def enqueue(s, wq, r):
    """Append request ``r`` to the waiting queue (a ring buffer)."""
    wq[(s[WQ_HEAD] + s[WQ_LEN]) % wq.shape[0]] = r
    s[WQ_LEN] += 1


def grown(ev_i, ev_t):
    """The iteration records in arrays of twice the rows (the old ones copied)."""
    ecap = 2 * ev_i.shape[0]
    nev = ev_i.shape[0]
    ev_i2 = np.zeros((ecap, 3), np.int64)
    ev_t2 = np.zeros((ecap, 2), np.float64)
    ev_i2[:nev] = ev_i
    ev_t2[:nev] = ev_t
    return ev_i2, ev_t2


def record(s, ev_i, ev_t, B, nseq, k, t0, t1):
    """Append an iteration record: ``k`` iterations of ``B`` decoders and ``nseq`` sequences,
    step times ``t0`` .. ``t1`` [s] (the caller made room: :func:`grown`)."""
    nev = s[N_EV]
    ev_i[nev, 0] = B
    ev_i[nev, 1] = nseq
    ev_i[nev, 2] = k
    ev_t[nev, 0] = t0
    ev_t[nev, 1] = t1
    s[N_EV] = nev + 1


def straggler(s, rq, mh, srv, B, S):
    """The longest decoder's attention beyond the batch mean [s] (``srv[2:4]``, the
    straggler coefficients), 0 when no decoder is live; stale heap tops are dropped."""
    nmh = s[N_MH]
    while nmh > 0 and mh[0, 2] != rq[EPOCH, mh[0, 1]]:
        _, _, _, nmh = heap_pop(mh, nmh)
    s[N_MH] = nmh
    if nmh > 0:
        return straggler_time_scalar((srv[2], srv[3]), float(B), float(s[CUR] - mh[0, 0]), float(S))
    return 0.0


def waiting_rule(s, f, req, es):
    """Early stop: a scored request still without its first token a TTFT threshold after its
    arrival is bad already (its first token comes later still). True when the count of bad
    requests or of TTFTs above ``stop_f[3]`` makes the miss certain."""
    inp, out, cch, sb, arr, first, fin, npre = req
    bad, stop_f, stop_i, stats = es
    now = f[NOW]
    qp = s[QP]
    s1 = stop_i[1]
    while qp < s1 and now - arr[qp] > stop_f[0]:
        if first[qp] != first[qp]:
            if not bad[qp] & 1:
                bad[qp] |= 1
                stats[0] += 1
            if now - arr[qp] > stop_f[3]:
                bad[qp] |= 2
                stats[1] += 1
        qp += 1
    s[QP] = qp
    return s1 > stop_i[0] and (stats[0] >= stop_i[2] or stats[1] >= stop_i[3])


def arrivals(s, f, req, wq):
    """Requests that arrived by now join the queue (``arr`` ends with +inf: no bounds
    check); their wait so far joins the in-system integral."""
    inp, out, cch, sb, arr, first, fin, npre = req
    now = f[NOW]
    nxt = s[NEXT_ARR]
    while arr[nxt] <= now:
        enqueue(s, wq, nxt)
        f[AREA] += now - arr[nxt]
        nxt += 1
        s[ARRIVED] += 1
    s[NEXT_ARR] = nxt


def retire(r, s, f, req, rq, wq, es):
    """Request ``r`` has its last token now: done (its blocks are the caller's); the early
    stop's verdict; in a closed loop its client sends the next request."""
    inp, out, cch, sb, arr, first, fin, npre = req
    bad, stop_f, stop_i, stats = es
    now = f[NOW]
    rq[EPOCH, r] += 1
    rq[STATUS, r] = FINISHED
    s[RESV] -= rq[RSV, r]
    rq[RSV, r] = 0
    fin[r] = now
    s[RUNNING] -= 1
    s[DONE] += 1
    if stop_i[0] <= r < stop_i[1]:
        s[STOP] = max(s[STOP], scored_end(r, now, arr, first, out, bad, stop_f, stop_i, stats))
    nxt = s[NEXT_ARR]
    if s[CLOSED] != 0 and nxt < rq.shape[1]:  # the client sends its next request
        arr[nxt] = now
        enqueue(s, wq, nxt)
        s[NEXT_ARR] = nxt + 1
        s[ARRIVED] += 1


def reserved_blocks(s, req, h, nb):
    """The blocks request ``h`` reserves at admission when its prompt needs ``nb`` now:
    ``ceil((prompt + s[RSV_PM] / 1000 x max_new) / block)`` less its shared-prefix blocks, at
    least ``nb`` (0 when the engine reserves nothing: ``s[RSV_PM]`` = 0). ``max_new`` is the
    request's ``max_tokens``: ``s[MAXNEW]``, or its own answer's length when that is 0 or
    longer (a benchmark client sends max_tokens = its answer's length)."""
    inp, out, cch, sb, arr, first, fin, npre = req
    pm = s[RSV_PM]
    if pm == 0:
        return 0
    d = 1000 * s[BS]
    mx = out[h] if out[h] > s[MAXNEW] else s[MAXNEW]
    rb = (1000 * inp[h] + pm * mx + d - 1) // d - sb[h]
    return rb if rb > nb else nb


def reserve_fits(s, rb):
    """Whether a reservation of ``rb`` blocks fits beside the running requests' (always when
    nothing runs: a request larger than the pool runs alone, as far as its blocks go)."""
    return s[RSV_PM] == 0 or s[RUNNING] == 0 or rb <= s[NBLOCKS] - s[RESV]


def decode_only(s, req, rq, wq, cnt):
    """True when the next iterations are pure decode: decoders run, no prefill does, and
    the head of the queue (if any) cannot join now (a slot, the budget, its blocks)."""
    inp, out, cch, sb, arr, first, fin, npre = req
    B = s[DEC]
    if s[N_PF] != 0 or B == 0:
        return False
    if s[WQ_LEN] == 0 or gate_closed(s):
        return True
    h = wq[s[WQ_HEAD]]
    bs = s[BS]
    if s[RUNNING] < s[MAXSEQ] and s[BUDGET0] - B > 0:
        P = inp[h] + rq[G, h]
        need_dec = cnt[(-s[CUR]) % bs]
        nb = ceil(P / bs) - sb[h]
        if (
            nb <= s[FREE] - need_dec - s[WATERMARK]
            and (s[CHUNKED] != 0 or P - cch[h] <= s[BUDGET0] - B)
            and reserve_fits(s, reserved_blocks(s, req, h, nb))
        ):
            return False
    return True


def stride_length(s, rq, fh, swh, cnt):
    """Iterations the decoders can run as one stride: up to the next completion, while
    their new blocks fit in the free ones, up to the next window crossing (< 1: none)."""
    cur = s[CUR]
    B = s[DEC]
    free = s[FREE]
    bs = s[BS]
    nfh = s[N_FH]
    while nfh > 0 and fh[0, 2] != rq[EPOCH, fh[0, 1]]:
        _, _, _, nfh = heap_pop(fh, nfh)
    s[N_FH] = nfh
    k = fh[0, 0] - cur + 1  # completion limit
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
    if s[WINDOW] > 0:
        nswh = s[N_SWH]
        while nswh > 0 and swh[0, 2] != rq[EPOCH, swh[0, 1]]:
            _, _, _, nswh = heap_pop(swh, nswh)
        s[N_SWH] = nswh
        if nswh > 0:
            ksw = swh[0, 0] - cur + 1
            if ksw < k:
                k = ksw
    if s[WQ_LEN] > 0 and gate_closed(s):
        kg = gate_left(s)
        if kg < k:
            k = kg
    return k


def decode_stride(k, s, f, coef, srv, req, rq, mh, cnt, ev_i, ev_t):
    """Run ``k`` pure-decode iterations (fewer when an arrival comes first) as one stride:
    the step time grows linearly, so they cost ``k t0 + d k (k - 1) / 2`` exactly. Takes the
    decoders' new blocks, adds to the integrals and records the stride; returns its length
    (the decoders' contexts and the clock of iterations are the caller's)."""
    inp, out, cch, sb, arr, first, fin, npre = req
    B = s[DEC]
    S = s[DEC_KV]
    Tsw = s[DEC_SW]
    nbelow = s[BELOW]
    cur = s[CUR]
    bs = s[BS]
    fB = float(B)
    # host time and the straggler term stay constant over the stride (every decoder's
    # context grows by one token per iteration); with the host overlapped (srv[5]) an
    # iteration is max(gpu, host), convex in k: the linear interpolation between the two
    # ends is an upper bound of it, exact when the GPU or the host is longer at both
    host = srv[0] + srv[1] * fB
    strag = 0.0
    if srv[2] > 0.0:
        strag = straggler(s, rq, mh, srv, B, S)
    t0 = step_time_scalar(coef, fB, fB, fB, float(S + B), float(S + B), float(Tsw), float(Tsw), 0.0)
    t0 = wall_time(t0 + strag, host, srv[5])
    if k > 1:
        S1 = S + B * (k - 1)
        T1 = Tsw + nbelow * (k - 1)
        t1 = step_time_scalar(
            coef, fB, fB, fB, float(S1 + B), float(S1 + B), float(T1), float(T1), 0.0
        )
        t1 = wall_time(t1 + strag, host, srv[5])
        d = (t1 - t0) / (k - 1)
    else:
        t1, d = t0, 0.0
    nxt = s[NEXT_ARR]
    if (s[WQ_LEN] == 0 or s[GATE_R] > 0) and s[CLOSED] == 0 and nxt < rq.shape[1]:
        gap = arr[nxt] - f[NOW]
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
    used0 = s[NBLOCKS] - s[FREE]
    s[FREE] -= alloc
    f[KV_AREA] += (used0 + alloc / 2) * dur
    if used0 + alloc > s[KV_MAX]:
        s[KV_MAX] = used0 + alloc
    f[AREA] += (s[ARRIVED] - s[DONE]) * dur
    f[BUSY] += dur
    record(s, ev_i, ev_t, B, B, k, t0, t1)
    f[NOW] += dur
    return k


def advance_decoders(k, s, rq, swh):
    """Every decoder's context grew by ``k`` tokens in iterations ``cur .. cur + k - 1``:
    the sums S and Tsw, and the decoders whose context reached the window by then."""
    s[DEC_KV] += s[DEC] * k
    if s[WINDOW] > 0:
        nbelow = s[BELOW]
        Tsw = s[DEC_SW] + nbelow * k
        lim = s[CUR] + k
        nswh = s[N_SWH]
        while nswh > 0 and swh[0, 0] <= lim:
            e, r, ep, nswh = heap_pop(swh, nswh)
            if ep == rq[EPOCH, r]:
                nbelow -= 1
                Tsw -= lim - e
        s[N_SWH] = nswh
        s[DEC_SW] = Tsw
        s[BELOW] = nbelow


def finish_decoders(i_last, s, f, req, rq, fh, cnt, wq, es):
    """Decoders whose last token was in iteration ``i_last`` (or before) finish now: their
    blocks are freed and they leave the decode sums."""
    inp, out, cch, sb, arr, first, fin, npre = req
    bs = s[BS]
    W = s[WINDOW]
    nfh = s[N_FH]
    while nfh > 0 and fh[0, 0] <= i_last:
        _, r, ep, nfh = heap_pop(fh, nfh)
        if ep != rq[EPOCH, r]:
            continue
        dP = rq[DEC_P, r]
        dI0 = rq[DEC_I0, r]
        kva = dP + (i_last - dI0) + 1
        s[DEC_KV] -= kva
        cnt[(dP - dI0) % bs] -= 1
        if W > 0:
            s[DEC_SW] -= min(kva + 1, W)
            if dI0 + W - dP - 1 > i_last + 1:
                s[BELOW] -= 1
        s[FREE] += ceil(kva / bs) - sb[r]
        s[DEC] -= 1
        retire(r, s, f, req, rq, wq, es)
    s[N_FH] = nfh


def preempt(s, req, rq, pf, ro, cnt, wq):
    """Make room for the decoders' new blocks of this iteration and take them: while they
    do not fit, preempt the most recently admitted running request (by recompute: its
    blocks are freed, it re-queues at the front). False when nothing is left to preempt."""
    inp, out, cch, sb, arr, first, fin, npre = req
    cur = s[CUR]
    bs = s[BS]
    W = s[WINDOW]
    need = cnt[(-cur) % bs] if s[DEC] else 0
    while need > s[FREE]:
        found = False
        nro = s[N_RO]
        while nro > 0:
            nro -= 1
            r = ro[RO_R, nro]
            st = rq[STATUS, r]
            if rq[ADM, r] != ro[RO_A, nro] or (st != PREFILL and st != DECODE):
                continue
            if st == DECODE:
                dP = rq[DEC_P, r]
                dI0 = rq[DEC_I0, r]
                kvb = dP + (cur - dI0)
                s[DEC_KV] -= kvb
                cnt[(dP - dI0) % bs] -= 1
                if W > 0:
                    s[DEC_SW] -= min(kvb + 1, W)
                    if dI0 + W - dP - 1 > cur:
                        s[BELOW] -= 1
                s[FREE] += ceil(kvb / bs) - sb[r]
                rq[G, r] += cur - dI0
                s[DEC] -= 1
            else:
                npf = s[N_PF]
                for j in range(npf):
                    if pf[PF_R, j] == r:
                        s[FREE] += ceil(pf[PF_P, j] / bs) - sb[r]
                        for jj in range(j, npf - 1):
                            pf[PF_R, jj] = pf[PF_R, jj + 1]
                            pf[PF_P, jj] = pf[PF_P, jj + 1]
                            pf[PF_POS, jj] = pf[PF_POS, jj + 1]
                        s[N_PF] = npf - 1
                        break
            rq[EPOCH, r] += 1
            rq[STATUS, r] = WAITING
            s[RESV] -= rq[RSV, r]
            rq[RSV, r] = 0
            s[RUNNING] -= 1
            npre[r] += 1
            s[WQ_HEAD] = (s[WQ_HEAD] - 1) % wq.shape[0]
            wq[s[WQ_HEAD]] = r
            s[WQ_LEN] += 1
            found = True
            break
        s[N_RO] = nro
        if not found:
            return False
        need = cnt[(-cur) % bs] if s[DEC] else 0
    s[FREE] -= need
    return True


def chunk_prefills(s, pf):
    """This iteration's chunks of the running prefills, in admission order, from the token
    budget the decoders leave (cut to it with chunked prefill); returns what is left."""
    budget = s[BUDGET0] - s[DEC]
    chunked = s[CHUNKED] != 0
    nch = 0
    for j in range(s[N_PF]):
        if budget <= 0:
            break
        c = pf[PF_P, j] - pf[PF_POS, j]
        if chunked and c > budget:
            c = budget
        budget -= c
        pf[PF_CHUNK, j] = c
        nch += 1
    s[N_CH] = nch
    return budget


def admit(budget, s, req, rq, pf, ro, wq):
    """Admit from the head of the queue (FCFS) while a sequence slot, the token ``budget``
    and the KV blocks for its prompt (a watermark kept free) allow, and its reservation fits
    beside the running requests' (:func:`reserve_fits`); each new prompt starts
    with a chunk of what is left of the budget (without chunked prefill a prompt joins only
    when all of it fits, or alone)."""
    inp, out, cch, sb, arr, first, fin, npre = req
    bs = s[BS]
    chunked = s[CHUNKED] != 0
    while s[WQ_LEN] > 0 and budget > 0 and s[RUNNING] < s[MAXSEQ]:
        h = wq[s[WQ_HEAD]]
        P = inp[h] + rq[G, h]
        nb = ceil(P / bs) - sb[h]
        if nb > s[FREE] - s[WATERMARK] and (s[RUNNING] > 0 or nb > s[FREE]):
            break
        rb = reserved_blocks(s, req, h, nb)
        if not reserve_fits(s, rb):
            break
        todo = P - cch[h]
        if not chunked and todo > budget and (s[DEC] > 0 or s[N_CH] > 0):
            break
        s[WQ_HEAD] = (s[WQ_HEAD] + 1) % wq.shape[0]
        s[WQ_LEN] -= 1
        s[FREE] -= nb
        rq[RSV, h] = rb
        s[RESV] += rb
        rq[STATUS, h] = PREFILL
        s[RUNNING] += 1
        rq[ADM, h] += 1
        nro = s[N_RO]
        ro[RO_R, nro] = h
        ro[RO_A, nro] = rq[ADM, h]
        nro += 1
        if nro > 4 * s[RUNNING] + 256:  # drop the stale entries
            m = 0
            for j in range(nro):
                r = ro[RO_R, j]
                a = ro[RO_A, j]
                if rq[ADM, r] == a and (rq[STATUS, r] == PREFILL or rq[STATUS, r] == DECODE):
                    ro[RO_R, m] = r
                    ro[RO_A, m] = a
                    m += 1
            nro = m
        s[N_RO] = nro
        npf = s[N_PF]
        pf[PF_R, npf] = h
        pf[PF_P, npf] = P
        pf[PF_POS, npf] = cch[h]
        c = todo if (not chunked or todo <= budget) else budget
        budget -= c
        pf[PF_CHUNK, npf] = c
        s[N_PF] = npf + 1
        s[N_CH] += 1


def wall_time(gpu, host, overlap):
    """An iteration's wall time [s] from its GPU time and its host time [s]: ``gpu + host``
    when the GPU waits for the scheduler, ``max(gpu, host)`` when the engine overlaps them
    (``overlap`` > 0: SGLang's overlap scheduler, vLLM's async scheduling, TensorRT-LLM's
    overlap scheduler prepare iteration n + 1 on the CPU while the GPU runs n)."""
    if overlap > 0.0:
        return gpu if gpu > host else host
    return gpu + host


def step_cost(s, coef, srv, pf, rq, mh):
    """The iteration's tokens, sequences and duration [s]: the step time of its decoders
    and prefill chunks (attention pairs ``c p + c (c + 1) / 2`` for a chunk of c tokens
    after p, window-capped on sliding-window layers; the ``c p`` part with a cached
    prefix), plus the straggler term and the host time (hidden behind them when ``srv[5]``,
    :func:`wall_time`). ``srv[4]`` (the engine's
    ``prefill_scale``) multiplies the chunks' share of the step time: the step minus the
    same step of its decoders alone (the whole step when there are none). ``(0, 0, 0.0)``
    when it is empty."""
    B = s[DEC]
    S = s[DEC_KV]
    W = s[WINDOW]
    T = B
    nseq = B
    nlog = B
    kvf = S + B
    prf = float(S + B)
    kvs = s[DEC_SW]
    prs = float(s[DEC_SW])
    prp = 0.0  # pairs between the chunks and their cached context (full layers)
    for j in range(s[N_CH]):
        c = pf[PF_CHUNK, j]
        pos = pf[PF_POS, j]
        end = pos + c
        T += c
        nseq += 1
        kvf += end
        prf += c * pos + c * (c + 1) / 2
        prp += c * pos
        if W > 0:
            kvs += end if end < W else W
            i_cap = W - pos
            if i_cap < 0:
                i_cap = 0
            elif i_cap > c:
                i_cap = c
            prs += i_cap * pos + i_cap * (i_cap + 1) / 2 + (c - i_cap) * W
        if end == pf[PF_P, j]:
            nlog += 1
    if T == 0:
        return 0, 0, 0.0
    host = srv[0] + srv[1] * nseq
    strag = 0.0
    if srv[2] > 0.0 and B > 0:
        strag = straggler(s, rq, mh, srv, B, S)
    dt = step_time_scalar(
        coef, float(T), float(nseq), float(nlog), float(kvf), prf, float(kvs), prs, prp
    )
    if srv[4] != 1.0 and T > B:  # the prefill scale: the chunks' share of the step, scaled
        d0 = 0.0
        if B > 0:
            d0 = step_time_scalar(
                coef, float(B), float(B), float(B), float(S + B), float(S + B),
                float(s[DEC_SW]), float(s[DEC_SW]), 0.0,
            )  # fmt: skip
        dt = d0 + srv[4] * (dt - d0)
    return T, nseq, wall_time(dt + strag, host, srv[5])


def account_iteration(dt, nseq, s, f, ev_i, ev_t):
    """One iteration of ``dt`` [s] ran: the integrals, the clock, its record."""
    used = s[NBLOCKS] - s[FREE]
    f[KV_AREA] += used * dt
    if used > s[KV_MAX]:
        s[KV_MAX] = used
    f[AREA] += (s[ARRIVED] - s[DONE]) * dt
    f[BUSY] += dt
    f[NOW] += dt
    record(s, ev_i, ev_t, s[DEC], nseq, 1, dt, dt)


def advance_prefills(s, f, srv, req, rq, pf, cnt, fh, swh, mh, wq, es):
    """The chunks of this iteration are in KV: a prefill that completes emits the first token
    and starts decoding at the next iteration (or finishes, with a one-token answer); the
    others stay, in order (the heaps have a free row per prefill)."""
    inp, out, cch, sb, arr, first, fin, npre = req
    bad, stop_f, stop_i, stats = es
    now = f[NOW]
    cur = s[CUR]
    bs = s[BS]
    W = s[WINDOW]
    m = 0
    for j in range(s[N_PF]):
        if j < s[N_CH]:
            c = pf[PF_CHUNK, j]
            pf[PF_POS, j] += c
            s[PF_TOKENS] += c
            if pf[PF_POS, j] >= pf[PF_P, j]:
                r = pf[PF_R, j]
                P = pf[PF_P, j]
                rq[G, r] += 1
                if first[r] != first[r]:
                    first[r] = now
                    if stop_i[0] <= r < stop_i[1]:
                        sc = scored_first(r, now, arr, bad, stop_f, stop_i, stats)
                        s[STOP] = max(s[STOP], sc)
                if rq[G, r] >= out[r]:
                    s[FREE] += ceil(P / bs) - sb[r]
                    retire(r, s, f, req, rq, wq, es)
                    continue
                I0 = cur + 1
                rq[DEC_I0, r] = I0
                rq[DEC_P, r] = P
                rq[STATUS, r] = DECODE
                s[DEC] += 1
                s[DEC_KV] += P
                cnt[(P - I0) % bs] += 1
                ep = rq[EPOCH, r]
                s[N_FH] = heap_push(fh, s[N_FH], I0 + out[r] - rq[G, r] - 1, r, ep)
                if srv[2] > 0.0:
                    s[N_MH] = heap_push(mh, s[N_MH], I0 - P, r, ep)
                if W > 0:
                    s[DEC_SW] += P + 1 if P + 1 < W else W
                    e = I0 + W - P - 1
                    if e > I0:
                        s[BELOW] += 1
                        s[N_SWH] = heap_push(swh, s[N_SWH], e, r, ep)
                continue
        # still prefilling: keep, in order
        pf[PF_R, m] = pf[PF_R, j]
        pf[PF_P, m] = pf[PF_P, j]
        pf[PF_POS, m] = pf[PF_POS, j]
        m += 1
    s[N_PF] = m


def gate_closed(s):
    """True while TensorRT-LLM's attention-DP balance gate holds the waiting prompts
    (``_balance_adp_requests``, ``tensorrt_llm/_torch/pyexecutor/py_executor.py``): every
    rank decodes (``s[DEC] >= R``) and either fewer than ``R`` prompts wait (one a rank, as
    ``_balance_requests_across_ranks`` assigns them) and the timeout ``s[GATE_T]`` has not
    passed, or ``R`` wait and the batching wait ``s[GATE_B]`` has not."""
    R = s[GATE_R]
    if R == 0 or s[DEC] < R:
        return False
    if s[WQ_LEN] >= R:
        return s[GATE_BW] < s[GATE_B]
    return s[GATE_HELD] < s[GATE_T]


def gate_left(s):
    """Iterations until the gate opens by its counters (>= 1)."""
    if s[WQ_LEN] >= s[GATE_R]:
        return max(1, s[GATE_B] - s[GATE_BW])
    return max(1, s[GATE_T] - s[GATE_HELD])


def gate_count(s, k, released):
    """The gate's counters after ``k`` iterations: reset by a release; the batching wait
    counts while every rank has a prompt (the timeout count resets then), the timeout count
    otherwise (modulo the timeout while no prompt waits: a release of none)."""
    if s[GATE_R] == 0:
        return
    if released:
        s[GATE_HELD] = 0
        s[GATE_BW] = 0
    elif s[WQ_LEN] >= s[GATE_R]:
        s[GATE_BW] += k
        s[GATE_HELD] = 0
    else:
        s[GATE_HELD] += k
        if s[WQ_LEN] == 0 and s[GATE_T] > 0:
            s[GATE_HELD] %= s[GATE_T]


#: the phases, each after the ones it calls (:func:`planner.serving._kernel.kernel` compiles
#: them in this order, each bound to the compiled ones before it)
PHASES = (
    "gate_closed",
    "gate_left",
    "gate_count",
    "enqueue",
    "grown",
    "record",
    "straggler",
    "wall_time",
    "waiting_rule",
    "arrivals",
    "retire",
    "reserved_blocks",
    "reserve_fits",
    "decode_only",
    "stride_length",
    "decode_stride",
    "advance_decoders",
    "finish_decoders",
    "preempt",
    "chunk_prefills",
    "admit",
    "step_cost",
    "account_iteration",
    "advance_prefills",
)
