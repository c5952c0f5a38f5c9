"""The event loop of the simulator (continuous and static batching); see
:mod:`planner.serving.simulate` for the model it implements.
"""

from __future__ import annotations

import heapq
import math
from collections import deque

import numpy as np

from planner.engine._scalar import window_pairs
from planner.errors import PlannerError, require_positive
from planner.serving.replica import Replica
from planner.serving.result import SimResult
from planner.workload.workload import Requests


def _run_continuous(replica: Replica, reqs: Requests, concurrency: int | None) -> SimResult:  # noqa: C901
    """Continuous batching, one iteration at a time (strides of pure-decode iterations).

    State (short names: this is the hot loop; ``r`` is a request index, ``cur`` the index of
    the current iteration, token counts are per sequence unless said otherwise):

    Per request (lists of length n)
        ``arr`` arrival [s] (closed loop: set when a client sends it); ``first`` / ``fin``
        time of the first / last token [s] (NaN until then); ``status`` 0 waiting or not
        arrived, 1 prefilling, 2 decoding, 3 done; ``g`` tokens generated so far (for a
        decoder: at its decode start); ``npre`` times preempted; ``epoch`` bumped whenever the
        request leaves the running set, so stale heap entries are recognised and skipped;
        ``adm`` admission counter (matches entries of ``running_order``); ``dI0`` / ``dP``
        iteration and KV tokens at decode start (KV tokens now = ``dP + cur - dI0``);
        ``sb`` shared-prefix blocks it uses (held once for everybody).
    Queues and heaps
        ``waiting`` FCFS queue (preempted requests re-enter at the front); ``pf`` running
        prefills ``[r, prompt tokens to reach, tokens in KV so far]``; ``running_order``
        (r, adm) in admission order, the last one is preempted first; ``fin_heap`` (iteration
        of the last token, r, epoch) of decoders; ``sw_heap`` (iteration at which the context
        reaches the window ``W``, r, epoch).
    Decode aggregates (what a stride of pure-decode iterations needs)
        ``B`` decoders; ``S`` sum of their KV tokens before the iteration; ``Tsw`` sum of
        ``min(kv + 1, W)``; ``nbelow`` decoders still below the window; ``cnt[k]`` decoders
        whose KV length is ``k`` mod ``block_size`` at ``cur = 0`` (who needs a new block when).
    KV cache and clocks
        ``free`` free blocks (``nblocks`` after the shared prefix, ``watermark`` kept free on
        admission); ``n_running`` admitted requests; ``now`` simulated time [s]; ``done``,
        ``arrived``, ``next_arr`` request counters.
    Accumulators for :class:`SimResult`
        ``area`` integral of requests in the system [req*s]; ``kv_area`` of used blocks;
        ``kv_max`` peak used blocks; ``busy`` time with work [s]; ``pf_tokens`` prefilled
        tokens; ``events`` (decoders, seqs, iterations, first and last iteration time) per
        iteration or stride, for the ITL and batch-size distributions.
    """
    eng = replica.engine
    sm = replica.sm
    st = sm.step_time
    sched = eng.sched_overhead_s
    bs = eng.block_size_tokens
    maxseq = eng.max_num_seqs
    budget0 = eng.max_num_batched_tokens
    chunked = eng.chunked_prefill
    n = len(reqs)
    inp = reqs.input_tokens.tolist()
    out = reqs.output_tokens.tolist()
    cch = reqs.cached_tokens.tolist()
    shared_blk = (reqs.shared_prefix_tokens // bs) if eng.prefix_caching else 0
    sb = [min(shared_blk, c // bs) for c in cch] if shared_blk else [0] * n
    nblocks = eng.num_blocks - shared_blk
    if nblocks <= 0:
        raise PlannerError("the shared prefix alone fills the KV cache")
    watermark = max(1, int(0.01 * eng.num_blocks))
    W = int(sm.window) if sm.layers_sw > 0 and sm.window > 0 else 0
    has_sw = W > 0
    closed = concurrency is not None
    if closed:
        require_positive("concurrency", concurrency)
        n_initial = min(int(concurrency), n)
        arr = [0.0] * n_initial + [float("inf")] * (n - n_initial)
    else:
        arr = reqs.arrival_s.tolist()
        n_initial = 0

    nan = float("nan")
    first = [nan] * n
    fin = [nan] * n
    npre = [0] * n
    g = [0] * n  # tokens emitted so far (at decode start for decoders)
    epoch = [0] * n
    adm = [0] * n
    status = [0] * n  # 0 waiting/not arrived, 1 prefill, 2 decode, 3 done
    dI0 = [0] * n
    dP = [0] * n
    waiting: deque[int] = deque()
    pf: list[list[int]] = []
    running_order: list[tuple[int, int]] = []
    fin_heap: list[tuple[int, int, int]] = []
    sw_heap: list[tuple[int, int, int]] = []
    cnt = [0] * bs
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
    events: list[
        tuple[int, int, int, float, float]
    ] = []  # (decoders, seqs, iterations, t_first, t_last)
    ev_append = events.append
    hpush, hpop = heapq.heappush, heapq.heappop
    ceil = math.ceil

    if closed:
        for r in range(n_initial):
            waiting.append(r)
        next_arr = n_initial
        arrived = n_initial

    def spawn() -> None:
        nonlocal next_arr, arrived
        if closed and next_arr < n:
            arr[next_arr] = now
            waiting.append(next_arr)
            next_arr += 1
            arrived += 1

    def preempt_one() -> bool:
        nonlocal B, S, Tsw, nbelow, free, n_running, running_order
        while running_order:
            r, a = running_order.pop()
            if adm[r] != a or status[r] not in (1, 2):
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
                for j, it in enumerate(pf):
                    if it[0] == r:
                        free += ceil(it[1] / bs) - sb[r]
                        del pf[j]
                        break
            epoch[r] += 1
            status[r] = 0
            n_running -= 1
            npre[r] += 1
            waiting.appendleft(r)
            return True
        return False

    def finish_decoders(i_last: int) -> None:
        nonlocal B, S, Tsw, nbelow, free, n_running, done
        while fin_heap and fin_heap[0][0] <= i_last:
            _, r, ep = hpop(fin_heap)
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
            spawn()

    inf = float("inf")
    arr.append(inf)  # sentinel: the arrival loop needs no bounds check
    while done < n:
        # ---- arrivals up to now join the queue
        while arr[next_arr] <= now:
            waiting.append(next_arr)
            area += now - arr[next_arr]
            next_arr += 1
            arrived += 1
        if n_running == 0 and not waiting:
            if not closed and next_arr < n:
                now = arr[next_arr]
                continue
            raise PlannerError("simulation stalled with requests outstanding")  # pragma: no cover

        # ---- can the next iterations run as one stride of pure decode?
        blocked = True
        if waiting and not pf:
            h = waiting[0]
            if n_running < maxseq and budget0 - B > 0:
                P = inp[h] + g[h]
                need_dec = cnt[(-cur) % bs] if B else 0
                if ceil(P / bs) - sb[h] <= free - need_dec - watermark and (
                    chunked or P - cch[h] <= budget0 - B
                ):
                    blocked = False
        if not pf and B > 0 and (not waiting or blocked):
            # completion limit
            while fin_heap and fin_heap[0][2] != epoch[fin_heap[0][1]]:
                hpop(fin_heap)
            k = fin_heap[0][0] - cur + 1
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
                while sw_heap and sw_heap[0][2] != epoch[sw_heap[0][1]]:
                    hpop(sw_heap)
                if sw_heap:
                    ksw = sw_heap[0][0] - cur + 1
                    if ksw < k:
                        k = ksw
            if k >= 1:
                t0 = st(B, B, B, S + B, S + B, Tsw, Tsw) + sched
                if k > 1:
                    S1 = S + B * (k - 1)
                    T1 = Tsw + nbelow * (k - 1)
                    t1 = st(B, B, B, S1 + B, S1 + B, T1, T1) + sched
                    d = (t1 - t0) / (k - 1)
                else:
                    t1, d = t0, 0.0
                if not waiting and not closed and next_arr < n:
                    gap = arr[next_arr] - now
                    # smallest j >= 1 with j*t0 + d*j*(j-1)/2 >= gap
                    if d > 1e-18:
                        a2 = d / 2
                        b2 = t0 - d / 2
                        # root of a2*j**2 + b2*j = gap in the form without cancellation
                        j = math.ceil(2 * gap / (b2 + math.sqrt(b2 * b2 + 4 * a2 * gap)) - 1e-9)
                    else:
                        j = math.ceil(gap / t0 - 1e-9)
                    j = max(1, j)
                    if j < k:
                        k = j
                        t1 = t0 + d * (k - 1)
                dur = k * t0 + d * k * (k - 1) / 2
                # blocks allocated by the decoders over the k iterations
                full, remk = divmod(k, bs)
                alloc = full * B
                if remk:  # phases hit by iterations cur .. cur+remk-1: p0, p0-1, ... (mod bs)
                    p0 = (-cur) % bs
                    lo_p = p0 - remk + 1
                    if lo_p >= 0:
                        alloc += sum(cnt[lo_p : p0 + 1])
                    else:
                        alloc += sum(cnt[: p0 + 1]) + sum(cnt[bs + lo_p :])
                used0 = nblocks - free
                free -= alloc
                kv_area += (used0 + alloc / 2) * dur
                if used0 + alloc > kv_max:
                    kv_max = used0 + alloc
                area += (arrived - done) * dur
                busy += dur
                ev_append((B, B, k, t0, t1))
                now += dur
                S += B * k
                if has_sw:
                    Tsw += nbelow * k
                    lim = cur + k
                    while sw_heap and sw_heap[0][0] <= lim:
                        e, r, ep = hpop(sw_heap)
                        if ep == epoch[r]:
                            nbelow -= 1
                            Tsw -= lim - e
                cur += k
                if fin_heap[0][0] < cur:
                    finish_decoders(cur - 1)
                continue

        # ---- one full iteration: preemption, prefill chunks, admissions
        need = cnt[(-cur) % bs] if B else 0
        while need > free:
            if not preempt_one():
                raise PlannerError(
                    "KV cache too small for the running sequences"
                )  # pragma: no cover
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
        chunks: list[tuple[list[int], int]] = []
        for it in pf:
            if budget <= 0:
                break
            c = it[1] - it[2]
            if chunked and c > budget:
                c = budget
            budget -= c
            chunks.append((it, c))
        while waiting and budget > 0 and n_running < maxseq:
            h = waiting[0]
            P = inp[h] + g[h]
            nb = ceil(P / bs) - sb[h]
            if nb > free - watermark and (n_running > 0 or nb > free):
                break
            todo = P - cch[h]
            if not chunked and todo > budget and (T > 0 or chunks):
                break
            waiting.popleft()
            free -= nb
            status[h] = 1
            n_running += 1
            adm[h] += 1
            running_order.append((h, adm[h]))
            if len(running_order) > 4 * n_running + 256:
                running_order = [
                    (r, a) for (r, a) in running_order if adm[r] == a and status[r] in (1, 2)
                ]
            it = [h, P, cch[h]]
            pf.append(it)
            c = todo if (not chunked or todo <= budget) else budget
            budget -= c
            chunks.append((it, c))
        for it, c in chunks:
            pos = it[2]
            end = pos + c
            T += c
            nseq += 1
            kvf += end
            prf += c * pos + c * (c + 1) / 2
            if has_sw:
                kvs += end if end < W else W
                prs += window_pairs(pos, c, W)
            if end == it[1]:
                nlog += 1
        if T == 0:  # pragma: no cover - guarded by check_fits
            raise PlannerError("no request can be scheduled: the KV cache is too small")
        dt = st(T, nseq, nlog, kvf, prf, kvs, prs) + sched
        used = nblocks - free
        kv_area += used * dt
        if used > kv_max:
            kv_max = used
        area += (arrived - done) * dt
        busy += dt
        now += dt
        ev_append((B, nseq, 1, dt, dt))
        # decoders advance one token
        S += B
        if has_sw:
            Tsw += nbelow
            lim = cur + 1
            while sw_heap and sw_heap[0][0] <= lim:
                e, r, ep = hpop(sw_heap)
                if ep == epoch[r]:
                    nbelow -= 1
                    Tsw -= lim - e
        if fin_heap and fin_heap[0][0] <= cur:
            finish_decoders(cur)
        # prefill progress
        any_done = False
        for it, c in chunks:
            it[2] += c
            pf_tokens += c
            if it[2] < it[1]:
                continue
            any_done = True
            r = it[0]
            P = it[1]
            g[r] += 1
            if first[r] != first[r]:
                first[r] = now
            if g[r] >= out[r]:
                free += ceil(P / bs) - sb[r]
                epoch[r] += 1
                status[r] = 3
                fin[r] = now
                n_running -= 1
                done += 1
                spawn()
                continue
            I0 = cur + 1
            dI0[r] = I0
            dP[r] = P
            status[r] = 2
            B += 1
            S += P
            cnt[(P - I0) % bs] += 1
            hpush(fin_heap, (I0 + out[r] - g[r] - 1, r, epoch[r]))
            if has_sw:
                Tsw += P + 1 if P + 1 < W else W
                e = I0 + W - P - 1
                if e > I0:
                    nbelow += 1
                    hpush(sw_heap, (e, r, epoch[r]))
        if any_done:
            pf = [it for it in pf if it[2] < it[1]]
        cur += 1

    horizon = max(busy, 1e-12)
    itl_v, itl_w, bat_v, bat_w = _event_stats(events)
    return SimResult(
        arrival_s=np.asarray(arr[:n], float),
        first_token_s=np.asarray(first, float),
        finish_s=np.asarray(fin, float),
        input_tokens=reqs.input_tokens.copy(),
        output_tokens=reqs.output_tokens.copy(),
        cached_tokens=reqs.cached_tokens.copy(),
        preemptions=np.asarray(npre, dtype=np.int64),
        num_gpus=replica.num_gpus,
        iterations=cur,
        busy_s=busy,
        itl_values_s=itl_v,
        itl_weights=itl_w,
        batch_values=bat_v,
        batch_weights=bat_w,
        # the shared prefix's blocks are in use too (held once, outside ``nblocks``)
        kv_util_mean=(kv_area / horizon + shared_blk) / eng.num_blocks,
        kv_util_max=(kv_max + shared_blk) / eng.num_blocks,
        in_system_area_s=area,
        prefill_tokens_computed=pf_tokens,
        mode="closed" if closed else "open",
        label=replica.label(),
        truncated=reqs.truncated,
    )


def _event_stats(events: list[tuple[int, int, int, float, float]]):
    """Per-token ITL samples and the batch-size distribution from the iteration records.

    A stride of k decode iterations with B decoders and step times growing linearly from
    t_first to t_last contributes its two end points with weight B*k/2 each.
    """
    if not events:
        z = np.zeros(0)
        return z, z, z, z
    e = np.asarray(events, dtype=float)
    b, nseq, k, t0, t1 = e.T
    multi = k > 1
    itl_v = np.concatenate([t0, t1[multi]])
    itl_w = np.concatenate([np.where(multi, b * k / 2, b), (b * k / 2)[multi]])
    keep = itl_w > 0
    return itl_v[keep], itl_w[keep], nseq, k


def _run_static(replica: Replica, reqs: Requests, concurrency: int | None = None) -> SimResult:
    """Static batching: a batch is formed from the queue, prefilled in one forward, and
    decoded until its longest answer ends (finished sequences keep their slot, as in a
    padded static batch); the next batch starts after that.

    Every request reserves KV for its whole context (prompt + answer) up front.

    ``concurrency`` c: closed loop with c clients. The first c requests arrive at t = 0;
    each client sends its next request when its previous one finishes (its last token, which
    may be before the padded batch ends), so a batch holds at most min(c, max_num_seqs)
    requests and one client alone sees a TTFT of one prefill.
    """
    eng = replica.engine
    sm = replica.sm
    st = sm.step_time
    sched = eng.sched_overhead_s
    bs = eng.block_size_tokens
    W = int(sm.window) if sm.layers_sw > 0 and sm.window > 0 else 0
    n = len(reqs)
    closed = concurrency is not None
    if closed:
        require_positive("concurrency", concurrency)
        arr = np.full(n, np.inf)
        next_arr = min(int(concurrency), n)
        arr[:next_arr] = 0.0
    else:
        arr = np.asarray(reqs.arrival_s, float)
        next_arr = n
    inp = reqs.input_tokens.astype(float)
    out = reqs.output_tokens
    cch = reqs.cached_tokens.astype(float)
    first = np.full(n, np.nan)
    fin = np.full(n, np.nan)
    now = 0.0
    i = 0
    iters = 0
    busy = 0.0
    area = 0.0
    kv_area = 0.0
    kv_max = 0.0
    pf_tokens = 0
    itl_v: list[float] = []
    itl_w: list[float] = []
    bat_v: list[int] = []
    bat_w: list[int] = []
    blocks_need = np.ceil((reqs.input_tokens + reqs.output_tokens) / bs).astype(np.int64)
    while i < n:
        if arr[i] > now:
            if arr[i] == np.inf:  # pragma: no cover - a closed loop always has one queued
                raise PlannerError("simulation stalled with requests outstanding")
            now = float(arr[i])
        j = i
        blocks = 0
        while j < n and arr[j] <= now and j - i < eng.max_num_seqs:
            if blocks + blocks_need[j] > eng.num_blocks and j > i:
                break
            blocks += int(blocks_need[j])
            j += 1
        idx = slice(i, j)
        b = j - i
        p = cch[idx]
        c = inp[idx] - p
        end = inp[idx]
        kv_sw = float(np.minimum(end, W).sum()) if W else 0.0
        pr_sw = (
            float(sum(window_pairs(int(pp_), int(cc_), W) for pp_, cc_ in zip(p, c, strict=True)))
            if W
            else 0.0
        )
        t_pf = (
            st(
                float(c.sum()),
                b,
                b,
                float(end.sum()),
                float((c * p + c * (c + 1) / 2).sum()),
                kv_sw,
                pr_sw,
            )
            + sched
        )
        area += float((now - arr[idx]).sum())
        start = now
        now += t_pf
        busy += t_pf
        iters += 1
        pf_tokens += int(c.sum())
        first[idx] = now
        bat_v.append(b)
        bat_w.append(1)
        L = int(out[idx].max()) - 1
        S = float(end.sum())
        if L > 0:
            sw0 = float(np.minimum(end + 1, W).sum()) if W else 0.0
            t0 = st(b, b, b, S + b, S + b, sw0, sw0) + sched
            if L > 1:
                S1 = S + b * (L - 1)
                sw1 = float(np.minimum(end + L, W).sum()) if W else 0.0
                t1 = st(b, b, b, S1 + b, S1 + b, sw1, sw1) + sched
                d = (t1 - t0) / (L - 1)
            else:
                t1, d = t0, 0.0
            m = out[idx] - 1
            fin[idx] = now + m * t0 + d * m * (m - 1) / 2
            dur = L * t0 + d * L * (L - 1) / 2
            itl_v += [t0, t1]
            itl_w += [float(m.sum()) / 2] * 2
            bat_v.append(b)
            bat_w.append(L)
            iters += L
        else:
            fin[idx] = now
            dur = 0.0
        if next_arr < n:  # closed loop: each finished client sends its next request
            done_t = np.sort(fin[idx])[: n - next_arr]
            arr[next_arr : next_arr + len(done_t)] = done_t
            next_arr += len(done_t)
        now += dur
        busy += dur
        area += float((fin[idx] - start).sum())
        used = blocks
        kv_area += used * (t_pf + dur)
        kv_max = max(kv_max, used)
        i = j
    horizon = max(busy, 1e-12)
    return SimResult(
        arrival_s=arr.copy(),
        first_token_s=first,
        finish_s=fin,
        input_tokens=reqs.input_tokens.copy(),
        output_tokens=reqs.output_tokens.copy(),
        cached_tokens=reqs.cached_tokens.copy(),
        preemptions=np.zeros(n, dtype=np.int64),
        num_gpus=replica.num_gpus,
        iterations=iters,
        busy_s=busy,
        itl_values_s=np.asarray(itl_v, float),
        itl_weights=np.asarray(itl_w, float),
        batch_values=np.asarray(bat_v, float),
        batch_weights=np.asarray(bat_w, float),
        kv_util_mean=kv_area / horizon / eng.num_blocks,
        kv_util_max=kv_max / eng.num_blocks,
        in_system_area_s=area,
        prefill_tokens_computed=pf_tokens,
        mode="static",
        label=replica.label(),
        truncated=reqs.truncated,
    )
