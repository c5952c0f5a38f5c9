"""The event loop of the simulator (continuous and static batching); see
:mod:`planner.serving.simulate` for the model it implements.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from planner.engine._scalar import window_pairs
from planner.errors import PlannerError, require_positive
from planner.serving._jit import freeze_long_lived
from planner.serving.replica import Replica
from planner.serving.result import SimResult
from planner.serving.verdict import engine_stop
from planner.workload.workload import Requests


class SimulationGate:
    """Tells a helper thread when a simulation's compiled event loop runs in another thread
    (it holds no GIL then): the recommender's helper (:mod:`planner.recommend.threads`) runs
    its Python only meanwhile. A helper's own simulations do not open the gate."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self._local = threading.local()

    def mark_helper(self) -> None:
        """This thread is a helper: its simulations leave the gate as it is."""
        self._local.helper = True

    def is_helper(self) -> bool:
        return getattr(self._local, "helper", False)

    def wait(self, timeout: float) -> bool:
        """Wait until a simulation runs (True), at most ``timeout`` [s]."""
        return self.open.wait(timeout)


#: the gate of this process's simulations
SIMULATING = SimulationGate()


def _run_continuous(
    replica: Replica,
    reqs: Requests,
    concurrency: int | None,
    stop: tuple[np.ndarray, np.ndarray] | None = None,
) -> SimResult:
    """Continuous batching, one iteration at a time (strides of pure-decode iterations).

    Prepares the per-request arrays and runs the compiled event loop
    (:func:`planner.serving._kernel._loop`; numba is imported on the first call).

    ``stop``: the loop's early-stop rule ``(stop_f, stop_i)`` (see ``_loop``); the loop's
    ``stats`` are in ``meta["stop"]``. A run that stopped early serves a verdict only:
    requests still running then have NaN times, and the ITL and batch-size statistics are
    left empty.
    """
    from planner.serving._kernel import ERR_KV_RUNNING, ERR_STALLED, kernel

    eng = replica.engine
    sm = replica.sm
    bs = eng.block_size_tokens
    n = len(reqs)
    inp = np.ascontiguousarray(reqs.input_tokens, dtype=np.int64)
    out = np.ascontiguousarray(reqs.output_tokens, dtype=np.int64)
    cch = np.ascontiguousarray(reqs.cached_tokens, dtype=np.int64)
    shared_blk = int(reqs.shared_prefix_tokens // bs) if eng.prefix_caching else 0
    sb = np.minimum(shared_blk, cch // bs) if shared_blk else np.zeros(n, np.int64)
    nblocks = eng.num_blocks - shared_blk
    if nblocks <= 0:
        raise PlannerError("the shared prefix alone fills the KV cache")
    watermark = max(1, int(0.01 * eng.num_blocks))
    W = int(sm.window) if sm.layers_sw > 0 and sm.window > 0 else 0
    closed = concurrency is not None
    arr = np.full(n + 1, np.inf)  # + a sentinel: the arrival loop needs no bounds check
    if closed:
        require_positive("concurrency", concurrency)
        n_initial = min(int(concurrency), n)
        arr[:n_initial] = 0.0
    else:
        arr[:n] = reqs.arrival_s
        n_initial = 0
    first = np.full(n, np.nan)
    fin = np.full(n, np.nan)
    npre = np.zeros(n, np.int64)
    stats = np.zeros(6, np.int64)
    if stop is None:
        stop = (np.zeros(6), np.zeros(7, np.int64))  # s1 = s0 = 0: no early stop
    else:  # the rule's thresholds are the client's; the loop counts the engine's times
        stop = engine_stop(stop, eng.first_token_s)
    args = (
        inp,
        out,
        cch,
        np.ascontiguousarray(sb, dtype=np.int64),
        arr,
        first,
        fin,
        npre,
        sm._coeffs,
        np.array(
            [
                eng.sched_overhead_s,
                eng.sched_seq_overhead_s,
                *sm._straggler_coeffs,
                eng.prefill_scale,
                1.0 if eng.host_overlap else 0.0,
                1.0 if eng.prefill_first else 0.0,
                float(eng.kv_reserve_fraction),
                float(reqs.max_new_tokens),
                *(float(x) for x in eng.adp_gate),
            ],
            np.float64,
        ),
        int(bs),
        int(eng.max_num_seqs),
        int(eng.max_num_batched_tokens),
        bool(eng.chunked_prefill),
        int(nblocks),
        int(watermark),
        W,
        closed,
        int(n_initial),
        np.ascontiguousarray(stop[0], np.float64),
        np.ascontiguousarray(stop[1], np.int64),
        stats,
    )
    loop = kernel()
    gate = not SIMULATING.is_helper()
    if gate:
        SIMULATING.open.set()  # from here to the end of the loop no GIL is held
    try:
        err, cur, busy, area, kv_area, kv_max, pf_tokens, ev_i, ev_t, nev = loop(*args)
    finally:
        if gate:
            SIMULATING.open.clear()
    freeze_long_lived("loop")  # numba's objects, loaded by the first call: no collection walks them
    if err == ERR_STALLED:  # pragma: no cover
        raise PlannerError("simulation stalled with requests outstanding")
    if err == ERR_KV_RUNNING:  # pragma: no cover
        raise PlannerError("KV cache too small for the running sequences")
    if err:  # pragma: no cover - guarded by check_fits
        raise PlannerError("no request can be scheduled: the KV cache is too small")
    horizon = max(busy, 1e-12)
    # a run stopped early serves its verdict only (no ITL or batch statistics); the others'
    # are computed from the iteration records when first asked (a verdict never asks)
    verdict_only = stats[5] != 0
    iteration_stats = (
        _event_stats([]) if verdict_only else functools.partial(_records_stats, ev_i, ev_t, nev)
    )
    return SimResult(
        arrival_s=arr[:n].copy(),
        first_token_s=first,
        finish_s=fin,
        input_tokens=reqs.input_tokens.copy(),
        output_tokens=reqs.output_tokens.copy(),
        cached_tokens=reqs.cached_tokens.copy(),
        preemptions=npre,
        num_gpus=replica.num_gpus,
        iterations=int(cur),
        busy_s=float(busy),
        iteration_stats=iteration_stats,
        # the shared prefix's blocks are in use too (held once, outside ``nblocks``)
        kv_util_mean=(kv_area / horizon + shared_blk) / eng.num_blocks,
        kv_util_max=(int(kv_max) + shared_blk) / eng.num_blocks,
        in_system_area_s=float(area),
        prefill_tokens_computed=int(pf_tokens),
        mode="closed" if closed else "open",
        label=replica.label(),
        truncated=reqs.truncated,
        # events: passes of the event loop (its cost), stop: the early-stop counts
        meta={"events": int(nev), **({"stop": stats} if stop[1][1] > stop[1][0] else {})},
        first_token_offset_s=eng.first_token_s,
    )


def loop_key(replica: Replica) -> tuple | None:
    """Everything of ``replica`` that :func:`_run_continuous` reads, as a hashable key (None
    for a static-batching engine, whose runner reads more): two replicas with the same key
    give bit-identical runs of the same requests, because the compiled loop is a
    deterministic function of exactly these inputs (the step-time and straggler
    coefficients, the scheduler's settings, the KV blocks, the window) plus the requests,
    whose sample depends on the engine's context limit and prefix caching only -- both
    here too. The engine's framework name and memory utilization are in the key as well
    (read only for the label and the memory plan): the key can only be stricter than
    needed. ``num_gpus`` sets the per-GPU figures of a run's result."""
    eng, sm = replica.engine, replica.sm
    if not eng.continuous_batching:
        return None
    return (
        sm._coeffs,
        sm._straggler_coeffs,
        float(sm.window),
        float(sm.layers_sw),
        eng,
        replica.num_gpus,
    )


def _records_stats(ev_i: np.ndarray, ev_t: np.ndarray, nev: int):
    """:func:`_event_stats` of the event loop's first ``nev`` iteration records (``ev_i``:
    decoders, sequences, iterations; ``ev_t``: first and last step time)."""
    return _event_stats(np.concatenate([ev_i[:nev].astype(float), ev_t[:nev]], axis=1))


def _event_stats(events: list[tuple[int, int, int, float, float]]):
    """Per-token ITL samples and the batch-size distribution from the iteration records.

    A stride of k decode iterations with B decoders and step times growing linearly from
    t_first to t_last contributes its two end points with weight B*k/2 each.
    """
    if len(events) == 0:
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
    wall = eng.iteration_s  # GPU time + host time, or the longer when overlapped
    strag = sm.straggler_time
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
        t_pf = wall(
            st(
                float(c.sum()),
                b,
                b,
                float(end.sum()),
                float((c * p + c * (c + 1) / 2).sum()),
                kv_sw,
                pr_sw,
                float((c * p).sum()),
            ),
            b,
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
            # padded static batch: every row decodes; the longest context stays ahead by
            # the same margin, so the straggler time is one constant
            extra = float(strag(b, float(end.max()), S))
            t0 = wall(st(b, b, b, S + b, S + b, sw0, sw0) + extra, b)
            if L > 1:
                S1 = S + b * (L - 1)
                sw1 = float(np.minimum(end + L, W).sum()) if W else 0.0
                t1 = wall(st(b, b, b, S1 + b, S1 + b, sw1, sw1) + extra, b)
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
        iteration_stats=(
            np.asarray(itl_v, float),
            np.asarray(itl_w, float),
            np.asarray(bat_v, float),
            np.asarray(bat_w, float),
        ),
        kv_util_mean=kv_area / horizon / eng.num_blocks,
        kv_util_max=kv_max / eng.num_blocks,
        in_system_area_s=area,
        prefill_tokens_computed=pf_tokens,
        mode="static",
        label=replica.label(),
        truncated=reqs.truncated,
        first_token_offset_s=eng.first_token_s,
    )
