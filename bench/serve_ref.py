#!/usr/bin/env python3
"""Continuous-batching serving loop on the reference engine (bench/ref_engine.py).

Replays request traces (bench/traces/<scenario>_rate<r>.csv: timestamp,input_tokens,output_tokens)
in wall-clock time on one GPU, like vLLM's V1 scheduler:
  * every iteration first gives each running request its next tokens (1 for a decoding request,
    the next prompt chunk for one still in prefill), then admits waiting requests in arrival order
    while the token budget (--token-budget), the sequence cap (--max-num-seqs) and free KV blocks
    allow; prompts longer than the budget are prefilled in chunks (chunked prefill);
  * paged KV cache (block 16); when a decoding request needs a block and none is free, the most
    recently admitted request is preempted (blocks freed, recomputed later, as vLLM does);
  * iterations with only decode tokens replay a CUDA graph captured for the padded batch size;
    mixed prefill/decode iterations run eagerly (one forward over all tokens; paged attention for
    both parts);
  * greedy sampling on the GPU, token ids back to the host every iteration (as a server must, to
    stream them); answer lengths come from the trace (no EOS).
Per request: arrival, first-token and finish wall-clock times and every inter-token gap, so TTFT,
TPOT, ITL and E2E include the scheduler's own CPU time and queueing.

  python3 bench/serve_ref.py --out-dir bench_out --runs chat:5,15,25,35,50 rag:1,2.5,4,5.5,7
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import math
import os
import shlex
import statistics
import sys
import time
from collections import deque

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_ref as pr  # noqa: E402
import ref_engine as re_  # noqa: E402
import ref_kernels as rk  # noqa: E402

SOURCE = "planner own measurement (bench/serve_ref.py)"
TRACE_DIR = "bench/traces"
DEBUG = os.environ.get("REF_DEBUG") == "1"


class Req:
    __slots__ = (
        "rid",
        "arrival",
        "n_in",
        "n_out",
        "blocks",
        "computed",
        "prompt",
        "generated",
        "first_t",
        "last_t",
        "finish_t",
        "itl",
        "preempted",
        "admit_order",
    )

    def __init__(self, rid, arrival, n_in, n_out):
        self.rid, self.arrival, self.n_in, self.n_out = (
            int(rid),
            float(arrival),
            int(n_in),
            int(n_out),
        )
        self.blocks: list[int] = []
        self.computed = 0  # tokens whose KV is in the cache
        self.prompt = self.n_in  # tokens to prefill (prompt, + generated ones after a preemption)
        self.generated = 0
        self.first_t = self.last_t = self.finish_t = None
        self.itl: list[float] = []
        self.preempted = 0
        self.admit_order = 0

    @property
    def in_prefill(self):
        return self.computed < self.prompt


def load_trace(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    t = np.array([float(r["timestamp"]) for r in rows])
    t -= t.min()
    return [
        Req(i, float(t[i]), int(r["input_tokens"]), int(r["output_tokens"]))
        for i, r in enumerate(rows)
    ]


class Server:
    def __init__(self, model: re_.Model, dev, max_num_seqs, token_budget, max_model_len):
        self.m, self.dev = model, dev
        self.max_num_seqs, self.budget = max_num_seqs, token_budget
        self.bs = model.bs
        self.max_blocks = math.ceil(max_model_len / self.bs) + 1
        self.free = deque(range(1, model.num_blocks))  # block 0: scratch for padded rows
        self.graphs = {}
        self.stats = {"iters": 0, "graph_iters": 0, "preemptions": 0, "max_running": 0}
        # per-iteration log (serving_iterations.csv.gz): wall-clock phases, GPU span, batch composition
        self.iter_log: list[tuple] = []
        self.cuda = str(dev).startswith("cuda")
        if self.cuda:
            self.ev0 = torch.cuda.Event(enable_timing=True)
            self.ev1 = torch.cuda.Event(enable_timing=True)

    # ------------------------------------------------------------ CUDA graphs for decode
    def buckets(self):
        b = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256, 320, 384, 448, 512]
        return [x for x in b if x < self.max_num_seqs] + [self.max_num_seqs]

    def capture_all(self, log):
        m, dev = self.m, self.dev
        for B in self.buckets():
            st = {
                "ids": torch.zeros(B, device=dev, dtype=torch.long),
                "pos": torch.zeros(B, device=dev, dtype=torch.int32),
                "slot": torch.zeros(B, device=dev, dtype=torch.long),
                "bt": torch.zeros(B, self.max_blocks, device=dev, dtype=torch.int32),
                "ctx": torch.ones(B, device=dev, dtype=torch.int32),
                "li": torch.arange(B, device=dev),
            }
            plan = re_.decode_plan(B, dev, m.hkv, self.max_blocks * self.bs, m.hq)
            ws = re_.split_ws(m, B, plan.num_splits, dev) if plan.num_splits > 1 else None

            def fn(st=st, plan=plan, ws=ws):
                lg = m.forward(
                    st["ids"], st["pos"], st["slot"], st["bt"], st["ctx"], [plan], st["li"], ws=ws
                )
                return lg.argmax(-1)

            g, out = re_.capture(fn, dev)
            # the graph holds raw pointers only: keep plan and split scratch alive with it
            st["_keep"] = (plan, ws)
            self.graphs[B] = (g, st, out)
        torch.cuda.synchronize()
        log(f"captured decode graphs for batch sizes {self.buckets()}")

    # ------------------------------------------------------------ KV blocks
    def need_blocks(self, r, n_new):
        return max(0, math.ceil((r.computed + n_new) / self.bs) - len(r.blocks))

    def grow(self, r, n_new):
        for _ in range(self.need_blocks(r, n_new)):
            r.blocks.append(self.free.popleft())

    def release(self, r):
        self.free.extend(r.blocks)
        r.blocks = []

    # ------------------------------------------------------------ one run
    def run(self, reqs, log, max_wall_s=1e9, warmup=False):
        m = self.m
        pending = deque(sorted(reqs, key=lambda r: r.arrival))
        waiting: deque[Req] = deque()
        running: list[Req] = []
        done = []
        admit = 0
        t0 = time.perf_counter()
        aborted = False
        rng = np.random.default_rng(0)
        while pending or waiting or running:
            now = time.perf_counter() - t0
            if now > max_wall_s:
                aborted = True
                break
            while pending and pending[0].arrival <= now:
                waiting.append(pending.popleft())
            if not waiting and not running:
                time.sleep(max(0.0, min(pending[0].arrival - now, 0.05)))
                continue
            t_a = time.perf_counter()
            n_wait0 = len(waiting)
            # ---- schedule
            budget = self.budget
            sched: list[tuple[Req, int]] = []
            preempted_now = False
            i = 0
            while i < len(running) and budget > 0:
                r = running[i]
                n = min(r.prompt - r.computed, budget) if r.in_prefill else 1
                while self.need_blocks(r, n) > len(self.free):
                    victim = max(running, key=lambda x: x.admit_order)
                    running.remove(victim)
                    sched = [(x, k) for x, k in sched if x is not victim]
                    self.release(victim)
                    victim.prompt = victim.n_in + victim.generated
                    victim.computed = 0
                    victim.preempted += 1
                    self.stats["preemptions"] += 1
                    waiting.appendleft(victim)
                    preempted_now = True
                    if victim is r:
                        break
                if r not in running:
                    continue
                self.grow(r, n)
                sched.append((r, n))
                budget -= n
                i += 1
            while waiting and budget > 0 and not preempted_now and len(running) < self.max_num_seqs:
                r = waiting[0]
                n = min(r.prompt - r.computed, budget)
                if self.need_blocks(r, n) + 1 > len(self.free):
                    break
                waiting.popleft()
                admit += 1
                r.admit_order = admit
                running.append(r)
                self.grow(r, n)
                sched.append((r, n))
                budget -= n
            self.stats["max_running"] = max(self.stats["max_running"], len(running))
            if not sched:
                continue
            # ---- build inputs
            t_b = time.perf_counter()
            dec = [(r, n) for r, n in sched if not r.in_prefill]
            pre = [(r, n) for r, n in sched if r.in_prefill]
            order = dec + pre
            S = len(order)
            graph_b = 0
            if self.cuda:
                self.ev0.record()
            if not pre and self.graphs and self._bucket(S) is not None:
                B = self._bucket(S)
                graph_b = B
                g, st, out = self.graphs[B]
                pos = np.zeros(B, np.int32)
                slot = np.zeros(B, np.int64)
                ctx = np.ones(B, np.int32)
                mb = max(len(r.blocks) for r, _ in order)
                bt = np.zeros((B, mb), np.int32)
                for j, (r, _) in enumerate(order):
                    p = r.computed
                    pos[j] = p
                    slot[j] = r.blocks[p // self.bs] * self.bs + p % self.bs
                    ctx[j] = p + 1
                    bt[j, : len(r.blocks)] = r.blocks
                st["pos"].copy_(torch.from_numpy(pos))
                st["slot"].copy_(torch.from_numpy(slot))
                st["ctx"].copy_(torch.from_numpy(ctx))
                st["bt"][:, :mb].copy_(torch.from_numpy(bt))  # columns past mb: never read
                g.replay()
                if self.cuda:
                    self.ev1.record()
                t_c = time.perf_counter()
                toks = out[:S].tolist()
                self.stats["graph_iters"] += 1
            else:
                T = sum(n for _, n in order)
                pos = np.empty(T, np.int32)
                slot = np.empty(T, np.int64)
                ctx = np.empty(S, np.int32)
                mb = max(len(r.blocks) for r, _ in order)
                bt = np.zeros((S, mb), np.int32)
                li = []
                t = 0
                starts = []
                for j, (r, n) in enumerate(order):
                    p = np.arange(r.computed, r.computed + n)
                    pos[t : t + n] = p
                    blk = np.asarray(r.blocks, np.int64)
                    slot[t : t + n] = blk[p // self.bs] * self.bs + p % self.bs
                    ctx[j] = r.computed + n
                    bt[j, : len(r.blocks)] = r.blocks
                    starts.append(t)
                    if r.computed + n >= r.prompt:
                        li.append(t + n - 1)
                    t += n
                ids = torch.from_numpy(rng.integers(0, m.c["vocab"], T)).to(self.dev)
                pos_t = torch.from_numpy(pos).to(self.dev)
                slot_t = torch.from_numpy(slot).to(self.dev)
                ctx_t = torch.from_numpy(ctx).to(self.dev)
                bt_t = torch.from_numpy(bt).to(self.dev)
                plans, ws = [], None
                nd = len(dec)
                if nd:
                    ar = torch.arange(nd, device=self.dev, dtype=torch.int32)
                    gp = rk.gqa_pad(m.hq // m.hkv)
                    sp = re_.decode_splits(nd, m.hkv, int(ctx[:nd].max()))
                    # decode tokens come first: split scratch for those nd tokens only
                    plans.append(rk.AttnPlan(ar, ar, torch.ones_like(ar), max(1, 16 // gp), sp, nd))
                    if sp > 1:
                        ws = re_.split_ws(m, nd, sp, self.dev)
                if pre:
                    plans.append(
                        re_.prefill_plan(
                            starts[nd:],
                            [n for _, n in pre],
                            list(range(nd, S)),
                            self.dev,
                            m.hkv,
                            m.hq,
                            T,
                        )
                    )
                li_t = torch.tensor(li, device=self.dev, dtype=torch.long)
                rk.NO_SPECIALIZE = True  # no mid-run compiles (see ref_kernels.NO_SPECIALIZE)
                try:
                    logits = m.forward(ids, pos_t, slot_t, bt_t, ctx_t, plans, li_t, ws=ws)
                finally:
                    rk.NO_SPECIALIZE = False
                am = logits.argmax(-1)
                if self.cuda:
                    self.ev1.record()
                t_c = time.perf_counter()
                toks = am.tolist()
            if DEBUG:
                self._debug_check(order, pre)
            t_d = time.perf_counter()
            now = t_d - t0
            self.stats["iters"] += 1
            gpu_s = float("nan")
            if self.cuda:
                self.ev1.synchronize()  # an iteration of prompt chunks only copies no token ids
                gpu_s = self.ev0.elapsed_time(self.ev1) * 1e-3
            pre_tok = sum(n for _, n in pre)
            # composition in the step model's terms: cached context read by decode tokens,
            # cached tokens before each prefill chunk, logits produced
            dec_ctx = sum(r.computed for r, _ in dec)
            dec_ctx_max = max((r.computed for r, _ in dec), default=0)
            pre_pos = sum(r.computed for r, _ in pre)
            pre_pairs = sum(n * r.computed + n * (n + 1) // 2 for r, n in pre)
            pre_prefix_pairs = sum(n * r.computed for r, n in pre)
            n_logits = len(dec) + sum(1 for r, n in pre if r.computed + n >= r.prompt)

            k = 0
            for r, n in order:
                was_prefill = r.in_prefill
                r.computed += n
                if was_prefill and r.computed < r.prompt:
                    continue  # chunk of a prompt: no token yet
                _ = toks[k]
                k += 1
                r.generated += 1
                if r.first_t is None:
                    r.first_t = now
                else:
                    r.itl.append(now - r.last_t)
                r.last_t = now
                if was_prefill:
                    # after (re)prefill the next decode step writes the new token's KV
                    r.prompt = r.computed
                if r.generated >= r.n_out:
                    r.finish_t = now
                    running.remove(r)
                    self.release(r)
                    done.append(r)
            t_e = time.perf_counter()
            self.iter_log.append(
                (
                    t_a - t0,
                    t_b - t_a,
                    t_c - t_b,
                    t_d - t_c,
                    t_e - t_d,
                    gpu_s,
                    graph_b,
                    len(dec),
                    len(pre),
                    pre_tok,
                    dec_ctx,
                    pre_pos,
                    n_logits,
                    len(running),
                    n_wait0,
                    int(preempted_now),
                    dec_ctx_max,
                    pre_pairs,
                    pre_prefix_pairs,
                )
            )
        return done, aborted, time.perf_counter() - t0

    def _debug_check(self, order, pre):
        torch.cuda.synchronize()
        for B, (_, st, _) in self.graphs.items():
            bad = [
                k
                for k, ref in (("ids", 0), ("li", None))
                if (
                    int(st[k].abs().sum()) != 0
                    if ref == 0
                    else not torch.equal(st[k], torch.arange(B, device=self.dev))
                )
            ]
            if bad:
                raise RuntimeError(
                    f"graph {B} static {bad} corrupted after iteration "
                    f"{self.stats['iters']} (prefill {len(pre)}, seqs {len(order)}, "
                    f"tokens {sum(n for _, n in order)})"
                )

    def _bucket(self, S):
        for b in self.buckets():
            if b >= S:
                return b
        return None


#: provenance of every iteration row (constant within a run: gzip stores them for free)
ITER_META = ("source", "as_of", "hardware", "framework", "model", "precision", "kv_precision")
ITER_COLUMNS = ITER_META + (
    "scenario",
    "rate",
    "iter",
    "t_s",  # iteration start, from the run's start [s]
    "sched_s",  # scheduling (admission, blocks, preemption) [s]
    "prep_launch_s",  # inputs built, copied, kernels launched / graph replayed [s]
    "sync_wait_s",  # waiting for the GPU (token ids back to the host) [s]
    "book_s",  # book-keeping after the step (tokens, finished requests) [s]
    "gpu_span_s",  # CUDA events around the step's work on the GPU stream [s]
    "graph_batch",  # padded batch of the replayed CUDA graph; 0 = eager iteration
    "n_decode",  # decoding sequences (one token each)
    "n_prefill_seqs",  # sequences with a prompt chunk
    "prefill_tokens",  # prompt tokens in this iteration
    "decode_ctx_tokens",  # cached tokens read by the decode tokens (sum over sequences)
    "prefill_cached_tokens",  # cached tokens before each prompt chunk (sum)
    "logits",  # tokens whose logits are computed
    "running_after",  # running sequences after the iteration
    "waiting_before",  # queued requests when the iteration started
    "preempted",  # 1 when the iteration preempted a request
    "decode_ctx_max",  # longest cached context among the decode tokens
    "prefill_pairs",  # query-key pairs of the prompt chunks: sum of n*cached + n(n+1)/2
    "prefill_prefix_pairs",  # the part of them between chunks and cached context: sum n*cached
)


def write_iter_log(path, meta, scen, rate_s, log_rows):
    """Append one run's per-iteration log (gzip CSV, ITER_COLUMNS; ``meta``: ITER_META values)."""
    import gzip

    new = not os.path.exists(path)
    with gzip.open(path, "at", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(ITER_COLUMNS)
        for i, r in enumerate(log_rows):
            w.writerow(
                [meta[k] for k in ITER_META]
                + [scen, rate_s, i]
                + [f"{x:.6f}" for x in r[:6]]
                + [int(x) for x in r[6:]]
            )


def compile_variants(m, dev, log):
    """Compile every attention-kernel variant an eager iteration can meet (split counts 1-64:
    each power-of-two class of the combine kernel; the prefill tile plan), so that no measured
    iteration waits for Triton (see ref_kernels.NO_SPECIALIZE)."""
    t = time.perf_counter()
    n = 2
    q = torch.zeros(n, m.hq, m.d, device=dev, dtype=torch.bfloat16)
    out = torch.empty_like(q)
    bt = torch.zeros(n, 4, device=dev, dtype=torch.int32)
    ctx = torch.full((n,), 3, device=dev, dtype=torch.int32)
    pos = torch.full((n,), 2, device=dev, dtype=torch.int32)
    ar = torch.arange(n, device=dev, dtype=torch.int32)
    gp = rk.gqa_pad(m.hq // m.hkv)
    plans = [
        (rk.AttnPlan(ar, ar, torch.ones_like(ar), max(1, 16 // gp), sp, n), sp)
        for sp in (1, 2, 3, 5, 9, 17, 33)
    ]
    plans.append((re_.prefill_plan([0], [n], [0], dev, m.hkv, m.hq, n), 1))
    rk.NO_SPECIALIZE = True
    try:
        for plan, sp in plans:
            ws = re_.split_ws(m, n, sp, dev) if sp > 1 else None
            rk.paged_attn(
                q,
                m.kc[0],
                m.vc[0],
                out,
                bt,
                ctx,
                pos,
                plan,
                m.hq,
                m.hkv,
                m.d,
                m.bs,
                m.k_scale,
                m.v_scale,
                ws,
            )
    finally:
        rk.NO_SPECIALIZE = False
    torch.cuda.synchronize()
    log(f"compiled {len(plans)} unspecialised attention variants in {time.perf_counter() - t:.1f}s")


def pct(v, q):
    return float(np.percentile(np.asarray(v), q)) if len(v) else float("nan")


def summarize(done, n_req):
    ttft = [r.first_t - r.arrival for r in done]
    e2e = [r.finish_t - r.arrival for r in done]
    tpot = [(r.finish_t - r.first_t) / (r.n_out - 1) for r in done if r.n_out > 1]
    itl = [x for r in done for x in r.itl]
    t_start = min(r.arrival for r in done)
    dur = max(r.finish_t for r in done) - t_start
    out_tok = sum(r.n_out for r in done)
    in_tok = sum(r.n_in for r in done)
    ms = 1e3
    return {
        "output_tok_s_total": (out_tok / dur, "tok/s"),
        "total_tok_s": ((out_tok + in_tok) / dur, "tok/s"),
        "req_s": (len(done) / dur, "req/s"),
        "ttft_ms_mean": (statistics.fmean(ttft) * ms, "ms"),
        "ttft_ms_median": (pct(ttft, 50) * ms, "ms"),
        "ttft_ms_p99": (pct(ttft, 99) * ms, "ms"),
        "tpot_ms_mean": (statistics.fmean(tpot) * ms, "ms"),
        "tpot_ms_median": (pct(tpot, 50) * ms, "ms"),
        "tpot_ms_p99": (pct(tpot, 99) * ms, "ms"),
        "itl_ms_mean": (statistics.fmean(itl) * ms, "ms"),
        "itl_ms_median": (pct(itl, 50) * ms, "ms"),
        "e2e_ms_mean": (statistics.fmean(e2e) * ms, "ms"),
        "e2e_ms_median": (pct(e2e, 50) * ms, "ms"),
        "e2e_ms_p99": (pct(e2e, 99) * ms, "ms"),
    }, dur


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out-dir", default="bench_out")
    ap.add_argument("--model", default="llama-3.1-8b")
    ap.add_argument("--precision", default="bf16/bf16", help="weights/kv")
    ap.add_argument(
        "--runs",
        nargs="+",
        default=["chat:5,15,25,35,50", "rag:1,2.5,4,5.5,7"],
        help="scenario:rate,rate,... (trace bench/traces/<scenario>_rate<r>.csv)",
    )
    ap.add_argument("--trace-dir", default=TRACE_DIR)
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--max-num-seqs", type=int, default=256)
    ap.add_argument("--token-budget", type=int, default=2048)
    ap.add_argument(
        "--kv-gb",
        type=float,
        default=0.0,
        help="KV pool size (0: fill the GPU up to --gpu-mem-util)",
    )
    ap.add_argument("--gpu-mem-util", type=float, default=0.90)
    ap.add_argument("--max-wall-s", type=float, default=90.0, help="per run; stop past it")
    ap.add_argument("--budget-s", type=float, default=540.0)
    ap.add_argument("--warmup-requests", type=int, default=32)
    ap.add_argument("--id-prefix", default="refsrv200")
    ap.add_argument("--device", default="cuda:0" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t_start = time.time()
    log = pr.Log(t_start)
    dev = args.device
    command = shlex.join(
        ["python3", "bench/serve_ref.py"] + (sys.argv[1:] if argv is None else list(argv))
    )
    info = pr.env_info(dev)
    log(f"torch {info['torch']} gpu {info['gpu']}; command: {command}")
    wprec, kvprec = args.precision.split("/")
    cfg = re_.MODELS[args.model]
    runs = []
    for spec in args.runs:
        scen, rates = spec.split(":")
        for r in rates.split(","):
            path = os.path.join(args.trace_dir, f"{scen}_rate{r}.csv")
            runs.append((scen, float(r), r, path, load_trace(path)))
    max_len = max(q.n_in + q.n_out for *_, rq in runs for q in rq) + 16
    torch.manual_seed(args.seed)
    with torch.inference_mode():
        m = re_.Model(cfg, dev, wprec, kvprec, args.block_size, args.seed)
        if str(dev).startswith("cuda"):
            total = torch.cuda.get_device_properties(dev).total_memory
            kv_bytes = args.kv_gb * 1e9 or (
                args.gpu_mem_util * total - torch.cuda.memory_allocated() - 6e9
            )
        else:
            kv_bytes = args.kv_gb * 1e9 or 2e8
        per_block = (
            2 * cfg["layers"] * m.hkv * m.d * args.block_size * (1 if kvprec == "fp8" else 2)
        )
        nblocks = int(kv_bytes // per_block)
        m.alloc_kv(nblocks)
        m.fill_kv_random()
        log(
            f"model {args.model} {wprec}/{kvprec}: KV pool {nblocks} blocks of "
            f"{args.block_size} = {nblocks * args.block_size} tokens "
            f"({nblocks * per_block / 1e9:.1f} GB); max_model_len {max_len}"
        )
        srv = Server(m, dev, args.max_num_seqs, args.token_budget, max_len)
        if str(dev).startswith("cuda"):
            srv.capture_all(log)
        # warm-up (not recorded): compiles every kernel variant on the mixed path
        wu = [
            Req(i, 0.0, n_in, 8)
            for i, n_in in enumerate(np.linspace(16, 3000, args.warmup_requests).astype(int))
        ]
        if str(dev).startswith("cuda"):
            compile_variants(m, dev, log)
        srv.run(wu, log)
        log(f"warm-up done: {srv.stats}")
        os.makedirs(args.out_dir, exist_ok=True)
        out = pr.CsvOut(os.path.join(args.out_dir, "reference_h200_serving.csv"), pr.SCHEMA)
        raw = pr.CsvOut(
            os.path.join(args.out_dir, "serving_raw.csv"),
            [
                "model",
                "scenario",
                "rate",
                "rid",
                "arrival_s",
                "input_tokens",
                "output_tokens",
                "ttft_s",
                "tpot_s",
                "e2e_s",
                "preempted",
            ],
        )
        as_of = _dt.date.today().isoformat()
        iters_path = os.path.join(args.out_dir, "serving_iterations.csv.gz")
        iter_meta = {
            "source": SOURCE,
            "as_of": as_of,
            "hardware": pr.HARDWARE if dev.startswith("cuda") else "cpu",
            "framework": "pytorch",
            "model": re_.model_column(args.model),
            "precision": wprec,
            "kv_precision": kvprec,
        }
        nid = 0
        for scen, _rate, rate_s, path, reqs in runs:
            if time.time() - t_start > args.budget_s:
                log(f"budget reached: skipping {scen} rate {rate_s}")
                continue
            for k in srv.stats:
                srv.stats[k] = 0
            srv.iter_log = []
            done, aborted, wall = srv.run(reqs, log, args.max_wall_s)
            write_iter_log(iters_path, iter_meta, scen, rate_s, srv.iter_log)
            if aborted or len(done) < len(reqs):
                log(
                    f"{scen} rate {rate_s}: ABORTED after {wall:.0f}s, {len(done)}/{len(reqs)} "
                    "done; no rows written"
                )
                continue
            summ, dur = summarize(done, len(reqs))
            mean_in = statistics.fmean(r.n_in for r in reqs)
            mean_out = statistics.fmean(r.n_out for r in reqs)
            notes = (
                f"reference engine serving loop (bench/serve_ref.py), Poisson arrivals replayed "
                f"in wall-clock time from {path} ({len(reqs)} requests, {scen} preset lengths: "
                f"mean input {mean_in:.0f}, mean output {mean_out:.0f} tokens; isl/osl columns "
                f"are these means); continuous batching, chunked prefill with token budget "
                f"{args.token_budget} per iteration, max_num_seqs {args.max_num_seqs}, paged KV "
                f"block {args.block_size} ({nblocks * args.block_size} tokens), recompute "
                f"preemption, no prefix caching (the shared prefix is computed), CUDA-graph "
                f"decode iterations, eager mixed iterations, greedy sampling with token ids back "
                f"to the host every iteration; warm-up {args.warmup_requests} requests before, "
                f"not recorded; duration {dur:.1f} s from first arrival to last completion; "
                f"iterations {srv.stats['iters']} ({srv.stats['graph_iters']} graph), max "
                f"running {srv.stats['max_running']}, preemptions {srv.stats['preemptions']}; "
                f"TTFT includes queueing; TPOT = (E2E - TTFT)/(output - 1) per request; ITL "
                f"pooled over all gaps; throughput over the duration; random weights"
            )
            for metric, (val, unit) in summ.items():
                nid += 1
                out.row(
                    {
                        "id": f"{args.id_prefix}-{nid:04d}",
                        "source": SOURCE,
                        "source_detail": (
                            f"command: {command}; torch {info['torch']}; CUDA "
                            f"{info['cuda']}; driver {info['driver']}; GPU "
                            f"{info['gpu']}"
                        ),
                        "as_of": as_of,
                        "hardware": pr.HARDWARE if dev.startswith("cuda") else "cpu",
                        "n_gpus": 1,
                        "tp": 1,
                        "pp": 1,
                        "model": re_.model_column(args.model),
                        "precision": wprec,
                        "kv_precision": kvprec,
                        "framework": "pytorch",
                        "framework_version": re_.engine_desc(
                            info, args.block_size, kvprec, wprec, 1
                        )
                        + f", continuous batching (token budget {args.token_budget}, max_num_seqs "
                        f"{args.max_num_seqs})",
                        "mode": "rate",
                        "isl": round(mean_in),
                        "osl": round(mean_out),
                        "batch": "",
                        "concurrency": "",
                        "request_rate": rate_s,
                        "context_len": round(mean_in + mean_out),
                        "metric": metric,
                        "value": pr.fmt(val),
                        "unit": unit,
                        "notes": notes,
                    }
                )
            for r in done:
                raw.row(
                    {
                        "model": re_.model_column(args.model),
                        "scenario": scen,
                        "rate": rate_s,
                        "rid": r.rid,
                        "arrival_s": f"{r.arrival:.4f}",
                        "input_tokens": r.n_in,
                        "output_tokens": r.n_out,
                        "ttft_s": f"{r.first_t - r.arrival:.4f}",
                        "tpot_s": (
                            f"{(r.finish_t - r.first_t) / (r.n_out - 1):.5f}" if r.n_out > 1 else ""
                        ),
                        "e2e_s": f"{r.finish_t - r.arrival:.4f}",
                        "preempted": r.preempted,
                    }
                )
            s = {k: v for k, (v, _) in summ.items()}
            log(
                f"{scen} rate {rate_s}: {len(done)} req in {dur:.1f}s: out {s['output_tok_s_total']:.0f}"
                f" tok/s, TTFT p50/p99 {s['ttft_ms_median']:.0f}/{s['ttft_ms_p99']:.0f} ms, TPOT "
                f"p50/p99 {s['tpot_ms_median']:.1f}/{s['tpot_ms_p99']:.1f} ms, E2E p99 "
                f"{s['e2e_ms_p99']:.0f} ms; {srv.stats}"
            )
    log("done")


if __name__ == "__main__":
    main()
