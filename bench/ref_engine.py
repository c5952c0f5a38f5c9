#!/usr/bin/env python3
"""Reference inference engine: plain PyTorch + Triton, random weights of a model's shape.

What a production engine does, in a few hundred lines (see bench/README.md):
  * fused QKV and gate-up GEMMs (cuBLAS bf16, or fp8 E4M3 with per-tensor scales through
    ``torch._scaled_mm``), lm head untied where the model has one;
  * residual-add + RMSNorm fused (Triton), qk-norm + RoPE + KV-cache write fused (Triton),
    SiLU*up fused (Triton); fp8 activations quantised inside those kernels;
  * a paged KV cache ([blocks, n_kv, block_size, head_dim] per layer, bf16 or fp8 with a
    per-tensor scale) addressed through a vLLM-like block table;
  * GQA-native attention that never expands K/V: a Triton paged-attention kernel (one program per
    KV head x tile of query rows, split-KV "flash-decoding" with a combine kernel for small batches),
    used for decode and for chunked prefill over a cached prefix; SDPA (FlashAttention-2,
    enable_gqa) for fresh prompts;
  * the decode step captured as one CUDA graph;
  * tensor parallelism (``torchrun --nproc-per-node N``): column-parallel QKV / gate-up / lm head,
    row-parallel o / down projections, NCCL all-reduce captured in the decode graph.

Outputs (rows flushed one by one): ``<out-dir>/reference_h200.csv`` (step rows, schema of
data/benchmarks/pytorch_h200.csv) and ``<out-dir>/reference_h200_micro.csv`` (copy bandwidth and
GEMM rates measured in the same process, schema of pytorch_h200_micro.csv).

  python3 bench/ref_engine.py --out-dir bench_out --budget-s 480           # sweep, one GPU
  torchrun --nproc-per-node 2 bench/ref_engine.py --tp-sweep --out-dir bench_out   # TP=2
  python3 bench/ref_engine.py --profile-old --out-dir bench_out             # profile old harness
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import math
import os
import shlex
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_ref as pr  # noqa: E402  (shapes, schema, timing helpers)
import ref_kernels as rk  # noqa: E402

FP8 = torch.float8_e4m3fn
SOURCE = "planner own measurement (bench/ref_engine.py)"
MODELS = {k: v for k, v in pr.MODELS.items() if k != "tiny"}
MODELS["tiny"] = dict(pr.MODELS["tiny"], head_dim=32)
DEFAULT_MODELS = [
    "llama-3.1-8b",
    "llama-3.2-1b",
    "llama-3.1-70b-20l",
    "qwen2.5-14b",
    "llama-3.2-3b",
    "qwen3-32b",
]
DECODE_BATCH = [1, 16, 64, 128, 256, 512]
DECODE_CTX = [256, 1024, 2048, 4096, 8192, 32768]
PREFILL_ISL = [128, 512, 2048, 4096, 8192, 16384]
MEM_LIMIT = 125e9  # weights + KV pool above this are skipped
DECODE_TARGET_BW = 0.80
DECODE_TARGET_MIN_BYTES = 2e9
PREFILL_TARGET = 0.60
PREFILL_TARGET_MIN_TOKENS = 2048


def model_column(name: str) -> str:
    return pr.model_column(name) if name in pr.MODELS else name


# ================================================================ linear layers
class Lin:
    """y = x W^T (+ b). bf16 through cuBLAS, or fp8 E4M3 weights with a per-tensor scale and a
    static per-tensor activation scale through torch._scaled_mm (bf16 output)."""

    def __init__(self, w: torch.Tensor, b: torch.Tensor | None, fp8: bool):
        self.fp8 = fp8
        self.b = b
        if fp8:
            ws = (w.abs().amax().float() / rk.FP8_MAX).clamp(min=1e-12)
            self.w = (w.float() / ws).to(FP8)
            self.ws = ws.reshape(())
            # static activation scale: the random-weight activations stay inside +-448, so 1.0;
            # a calibrated checkpoint supplies its own (same kernels, one scalar)
            self.xs = torch.ones((), device=w.device, dtype=torch.float32)
        else:
            self.w = w
        self.out_features = w.shape[0]

    def nbytes(self) -> int:
        n = self.w.numel() * self.w.element_size()
        return n + (self.b.numel() * self.b.element_size() if self.b is not None else 0)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if not self.fp8:
            return F.linear(x, self.w, self.b)
        if x.dtype != FP8:
            x = x.clamp(-rk.FP8_MAX, rk.FP8_MAX).to(FP8)
        return torch._scaled_mm(
            x, self.w.t(), scale_a=self.xs, scale_b=self.ws, bias=self.b, out_dtype=torch.bfloat16
        )


# ================================================================ the model
class Model:
    """Random-weight decoder (Llama / Qwen2 / Qwen3 layout) over a paged KV cache.

    tp/rank: tensor-parallel shard of the weights this process holds (heads, intermediate and
    vocab split; embedding replicated)."""

    def __init__(
        self,
        cfg,
        device,
        wprec="bf16",
        kvprec="bf16",
        block_size=16,
        seed=0,
        tp=1,
        rank=0,
        comm=False,
    ):
        self.c = cfg
        self.device = device
        self.wprec, self.kvprec = wprec, kvprec
        self.bs = block_size
        self.tp, self.rank, self.comm = tp, rank, comm or tp > 1
        H, I, D = cfg["hidden"], cfg["inter"], cfg["head_dim"]
        Hq, Hkv, V = cfg["heads"], cfg["kv_heads"], cfg["vocab"]
        assert Hq % tp == 0 and Hkv % tp == 0 and I % tp == 0, "shape not divisible by tp"
        self.hq, self.hkv, self.d, self.inter = Hq // tp, Hkv // tp, D, I // tp
        self.vocab_l = math.ceil(V / tp)
        dt = torch.bfloat16
        g = torch.Generator(device=device)
        g.manual_seed(seed * 1000 + rank)

        def rnd(*shape, std):
            t = torch.empty(*shape, device=device, dtype=dt)
            t.normal_(0.0, std, generator=g)
            return t

        def ones_ish(n):
            return 1.0 + rnd(n, std=0.02)

        fp8 = wprec == "fp8"
        qkv_out = (self.hq + 2 * self.hkv) * D
        g_embed = torch.Generator(device=device)
        g_embed.manual_seed(seed * 1000 + 999)  # replicated embedding: same on every rank
        self.embed = torch.empty(V, H, device=device, dtype=dt).normal_(0, 1.0, generator=g_embed)
        self.layers = []
        for _ in range(cfg["layers"]):
            L = {
                "n1": ones_ish(H),
                "qkv": Lin(
                    rnd(qkv_out, H, std=H**-0.5),
                    rnd(qkv_out, std=0.02) if cfg["qkv_bias"] else None,
                    fp8,
                ),
                "o": Lin(rnd(H, self.hq * D, std=(Hq * D) ** -0.5), None, fp8),
                "n2": ones_ish(H),
                "gu": Lin(rnd(2 * self.inter, H, std=H**-0.5), None, fp8),
                "down": Lin(rnd(H, self.inter, std=I**-0.5), None, fp8),
                "qn": ones_ish(D) if cfg["qk_norm"] else None,
                "kn": ones_ish(D) if cfg["qk_norm"] else None,
            }
            self.layers.append(L)
        self.norm = ones_ish(H)
        # lm head stays bf16 (as vLLM's fp8 checkpoints keep it); vocab-parallel under TP
        if cfg["tied"] and tp == 1:
            self.lm_head = self.embed
        else:
            self.lm_head = rnd(self.vocab_l, H, std=H**-0.5)
        inv = 1.0 / (
            cfg["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float32, device=device) / D)
        )
        n = min(cfg["max_pos"], 33000)
        f = torch.outer(torch.arange(n, dtype=torch.float32, device=device), inv)
        self.cos, self.sin = f.cos().contiguous(), f.sin().contiguous()
        self.kv_dtype = FP8 if kvprec == "fp8" else dt
        # fp8 KV: per-tensor scales (random K/V are O(1): scale 1.0 keeps them in range)
        self.k_scale = self.v_scale = 1.0
        self.kc = self.vc = None
        self.kv_roundtrip = False

    # ---------------------------------------------------------------- sizes
    def weight_bytes_touched(self) -> int:
        """Bytes a decode step reads: every layer weight, final norm, lm head (embedding rows are
        negligible)."""
        n = self.norm.numel() * 2 + self.lm_head.numel() * 2
        for L in self.layers:
            n += L["n1"].numel() * 2 + L["n2"].numel() * 2
            n += sum(L[k].nbytes() for k in ("qkv", "o", "gu", "down"))
            n += sum(L[k].numel() * 2 for k in ("qn", "kn") if L[k] is not None)
        return n

    def linear_params(self) -> int:
        n = self.lm_head.numel()
        for L in self.layers:
            n += sum(L[k].w.numel() for k in ("qkv", "o", "gu", "down"))
        return n

    def kv_bytes_per_token(self) -> int:
        return 2 * self.c["layers"] * self.hkv * self.d * (1 if self.kvprec == "fp8" else 2)

    # ---------------------------------------------------------------- KV pool
    def alloc_kv(self, num_blocks: int):
        shape = (self.c["layers"], num_blocks, self.hkv, self.bs, self.d)
        self.kc = self.vc = None
        if str(self.device).startswith("cuda"):
            torch.cuda.empty_cache()
        self.kc = torch.empty(shape, device=self.device, dtype=self.kv_dtype)
        self.vc = torch.empty(shape, device=self.device, dtype=self.kv_dtype)
        self.num_blocks = num_blocks

    def fill_kv_random(self):
        """Random K/V (never attend over zeros or uninitialised memory), in 128M-element chunks."""
        step = 1 << 27
        for t in (self.kc, self.vc):
            v = t.view(-1)
            for i in range(0, v.numel(), step):
                part = v[i : i + step]
                if t.dtype == FP8:
                    part.copy_(
                        torch.empty(
                            part.numel(), device=self.device, dtype=torch.bfloat16
                        ).normal_()
                    )
                else:
                    part.normal_()

    # ---------------------------------------------------------------- forward
    def _allreduce(self, x):
        if self.comm:
            import torch.distributed as dist

            dist.all_reduce(x)
        return x

    def forward(self, ids, pos, slot, bt, ctx, plans, logit_idx, sdpa=None, ws=None):
        """One forward over T tokens.
        ids [T] int64; pos [T] int32 absolute positions; slot [T] int64 cache slot of each token;
        bt [S, max_blocks] int32 block table; ctx [S] int32 KV length after this step;
        plans: list of rk.AttnPlan covering the tokens (paged attention), or sdpa=(B, S) for B
        fresh prompts of S tokens (SDPA flash, GQA native); logit_idx [N] rows to compute
        logits for. ws: split-KV scratch. Returns logits [N, vocab] (bf16)."""
        c = self.c
        T = ids.shape[0]
        H, D, hq, hkv = c["hidden"], self.d, self.hq, self.hkv
        fp8 = self.wprec == "fp8"
        adt = FP8 if fp8 else torch.bfloat16
        x = F.embedding(ids, self.embed)
        res = torch.empty_like(x)
        h = torch.empty(T, H, device=x.device, dtype=adt)
        q = torch.empty(T, hq, D, device=x.device, dtype=torch.bfloat16)
        attn = torch.empty(T, hq, D, device=x.device, dtype=torch.bfloat16)
        if sdpa is not None:
            kbuf = torch.empty(T, hkv, D, device=x.device, dtype=torch.bfloat16)
            vbuf = torch.empty_like(kbuf)
        else:
            kbuf = vbuf = None
        a = torch.empty(T, self.inter, device=x.device, dtype=adt)
        delta = x
        for li, L in enumerate(self.layers):
            rk.add_rmsnorm(delta, res, L["n1"], c["eps"], h, has_res=li > 0)
            qkv = L["qkv"](h)
            rk.qkv_rope(
                qkv,
                q,
                kbuf,
                vbuf,
                self.kc[li],
                self.vc[li],
                L["qn"],
                L["kn"],
                self.cos,
                self.sin,
                pos,
                slot,
                hq,
                hkv,
                D,
                c["eps"],
                1.0 / self.k_scale,
                1.0 / self.v_scale,
            )
            if sdpa is not None:
                B, S = sdpa
                if self.kv_roundtrip and self.kv_dtype == FP8:  # check: attend what the cache holds
                    kbuf = kbuf.to(FP8).to(torch.bfloat16)
                    vbuf = vbuf.to(FP8).to(torch.bfloat16)
                o = F.scaled_dot_product_attention(
                    q.view(B, S, hq, D).transpose(1, 2),
                    kbuf.view(B, S, hkv, D).transpose(1, 2),
                    vbuf.view(B, S, hkv, D).transpose(1, 2),
                    is_causal=True,
                    enable_gqa=True,
                )
                attn = o.transpose(1, 2).reshape(T, hq, D)
            else:
                for p in plans:
                    rk.paged_attn(
                        q,
                        self.kc[li],
                        self.vc[li],
                        attn,
                        bt,
                        ctx,
                        pos,
                        p,
                        hq,
                        hkv,
                        D,
                        self.bs,
                        self.k_scale,
                        self.v_scale,
                        ws,
                    )
            delta = self._allreduce(L["o"](attn.view(T, hq * D)))
            rk.add_rmsnorm(delta, res, L["n2"], c["eps"], h, has_res=True)
            gu = L["gu"](h)
            rk.silu_mul(gu, a)
            delta = self._allreduce(L["down"](a))
        hf = torch.empty(T, H, device=x.device, dtype=torch.bfloat16)
        rk.add_rmsnorm(delta, res, self.norm, c["eps"], hf, has_res=True)
        logits = F.linear(hf.index_select(0, logit_idx), self.lm_head)
        if self.tp > 1:
            import torch.distributed as dist

            n, v = logits.shape
            # the concatenated form (tp * n rows): NCCL and gloo (the CPU dry run) both take it
            full = torch.empty(self.tp * n, v, device=x.device, dtype=logits.dtype)
            dist.all_gather_into_tensor(full, logits)
            logits = full.view(self.tp, n, v).permute(1, 0, 2).reshape(n, -1)[:, : c["vocab"]]
        return logits


# ================================================================ batch metadata
def decode_splits(batch: int, hkv: int, ctx: int) -> int:
    return max(1, min(math.ceil(528 / (batch * hkv)), math.ceil(ctx / 256), 64))


def decode_plan(batch, dev, hkv, ctx_max, hq):
    gp = rk.gqa_pad(hq // hkv)
    tpt = max(1, 16 // gp)
    ar = torch.arange(batch, device=dev, dtype=torch.int32)
    ones = torch.ones(batch, device=dev, dtype=torch.int32)
    # tpt rows per tile but one token per sequence: the tile's other rows are masked
    return rk.AttnPlan(ar, ar, ones, tpt, decode_splits(batch, hkv, ctx_max), batch)


def prefill_plan(seq_starts, seq_lens, seq_ids, dev, hkv, hq, n_tok, rows=64):
    """Tiles over the query tokens of several sequences (chunked prefill)."""
    gp = rk.gqa_pad(hq // hkv)
    tpt = max(1, rows // gp)
    ts, t0, tn = [], [], []
    for s, st, ln in zip(seq_ids, seq_starts, seq_lens, strict=False):
        for o in range(0, ln, tpt):
            ts.append(s)
            t0.append(st + o)
            tn.append(min(tpt, ln - o))
    mk = lambda v: torch.tensor(v, device=dev, dtype=torch.int32)  # noqa: E731
    return rk.AttnPlan(mk(ts), mk(t0), mk(tn), tpt, 1, n_tok)


def split_ws(model, n_tok, splits, dev):
    op = torch.empty(splits, n_tok, model.hq, model.d, device=dev, dtype=torch.float32)
    lp = torch.empty(splits, n_tok, model.hq, device=dev, dtype=torch.float32)
    return op, lp


class DecodeBatch:
    """Static decode inputs for `batch` sequences of `ctx` cached tokens each, block tables over a
    random permutation of the pool's blocks (as a long-running server's cache looks)."""

    def __init__(self, model: Model, batch, ctx, dev, gen):
        bs = model.bs
        nb = math.ceil((ctx + 1) / bs)
        need = batch * nb
        assert need <= model.num_blocks - 1, "KV pool too small"
        perm = torch.randperm(model.num_blocks - 1, generator=gen)[:need] + 1
        self.bt = perm.view(batch, nb).to(torch.int32).to(dev)
        self.pos = torch.full((batch,), ctx, device=dev, dtype=torch.int32)
        self.ctx = torch.full((batch,), ctx + 1, device=dev, dtype=torch.int32)
        blk = self.bt[:, ctx // bs].long()
        self.slot = blk * bs + ctx % bs
        self.ids = torch.randint(0, model.c["vocab"], (batch,), device=dev)
        self.logit_idx = torch.arange(batch, device=dev)
        self.plan = decode_plan(batch, dev, model.hkv, ctx + 1, model.hq)
        self.ws = (
            split_ws(model, batch, self.plan.num_splits, dev) if self.plan.num_splits > 1 else None
        )

    def run(self, model):
        return model.forward(
            self.ids,
            self.pos,
            self.slot,
            self.bt,
            self.ctx,
            [self.plan],
            self.logit_idx,
            ws=self.ws,
        )


def capture(fn, dev):
    if not str(dev).startswith("cuda"):
        return fn
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g, out


def prefill_inputs(model, B, S, dev, gen):
    """Fresh prompts: B x S tokens written into blocks of a random permutation."""
    bs = model.bs
    nb = math.ceil(S / bs)
    perm = torch.randperm(model.num_blocks - 1, generator=gen)[: B * nb] + 1
    bt = perm.view(B, nb).to(torch.int32).to(dev)
    p = torch.arange(S, device=dev, dtype=torch.int32)
    pos = p.repeat(B)
    slot = (bt[:, (p // bs).long()].long() * bs + (p % bs)).reshape(-1)
    ids = torch.randint(0, model.c["vocab"], (B * S,), device=dev)
    last = torch.arange(B, device=dev) * S + S - 1
    ctx = torch.full((B,), S, device=dev, dtype=torch.int32)
    return ids, pos, slot, bt, ctx, last


# ================================================================ correctness
def rel_err(a, b):
    a, b = a.float(), b.float()
    return float((a - b).norm() / b.norm().clamp(min=1e-30))


def check(model, dev, gen, n=64):
    """Logits of the last prompt token (SDPA prefill of n tokens) against (a) SDPA prefill of
    n-1 tokens + one paged decode step (CUDA graph), (b) two paged chunked-prefill chunks
    (n/2 - 5, then the rest) through the paged kernel."""
    ids, pos, slot, bt, ctx, last = prefill_inputs(model, 1, n, dev, gen)
    model.kv_roundtrip = True  # fp8 KV: the reference attends over the fp8-rounded K/V
    ref = model.forward(ids, pos, slot, bt, ctx, None, last, sdpa=(1, n))
    model.kv_roundtrip = False
    zero = torch.zeros(1, device=dev, dtype=torch.long)
    # (a)
    m = n - 1
    ctx_a = torch.tensor([m], device=dev, dtype=torch.int32)
    model.forward(ids[:m], pos[:m], slot[:m], bt, ctx_a, None, zero + m - 1, sdpa=(1, m))
    ctx1 = torch.tensor([n], device=dev, dtype=torch.int32)
    plan = decode_plan(1, dev, model.hkv, n, model.hq)
    plan.num_splits = 2  # exercise the split-KV + combine path
    ws = split_ws(model, 1, plan.num_splits, dev)

    def dec():
        return model.forward(ids[m:], pos[m:], slot[m:], bt, ctx1, [plan], zero, ws=ws)

    if str(dev).startswith("cuda"):
        g, out = capture(dec, dev)
        g.replay()
        torch.cuda.synchronize()
    else:
        out = dec()
    ea = rel_err(out, ref)
    # (b)
    c1 = n // 2 - 5
    p1 = prefill_plan([0], [c1], [0], dev, model.hkv, model.hq, c1)
    model.forward(
        ids[:c1],
        pos[:c1],
        slot[:c1],
        bt,
        torch.tensor([c1], device=dev, dtype=torch.int32),
        [p1],
        zero + c1 - 1,
    )
    p2 = prefill_plan([0], [n - c1], [0], dev, model.hkv, model.hq, n - c1)
    out_b = model.forward(ids[c1:], pos[c1:], slot[c1:], bt, ctx1, [p2], zero + n - c1 - 1)
    eb = rel_err(out_b, ref)
    return ea, eb


# ================================================================ micro-benchmarks
def run_micro(dev, timer, info, out, log, command, as_of, tiny=False):
    base = {
        "hardware": pr.HARDWARE if str(dev).startswith("cuda") else "cpu",
        "gpu_name": info["gpu"],
        "torch_version": info["torch"],
        "cuda_version": info["cuda"],
        "driver": info["driver"],
        "as_of": as_of,
        "command": command,
    }
    res = {"copy": 0.0, "bf16": 0.0, "fp8": 0.0}
    sizes = [1 << 20] if tiny else [1 << 30, 2 << 30, 4 << 30]
    for sz in sizes:
        src = torch.empty(sz // 2, device=dev, dtype=torch.bfloat16).normal_()
        dst = torch.empty_like(src)
        med, p10, p90, reps = timer.measure(lambda: dst.copy_(src), 3, 10, 40, 0.15)
        gbs = 2 * sz / med / 1e9
        res["copy"] = max(res["copy"], gbs)
        out.row(
            {
                **base,
                "bench": "copy",
                "dtype": "bf16",
                "size_bytes": sz,
                "bytes_moved": 2 * sz,
                "median_s": pr.fmt(med),
                "p10_s": pr.fmt(p10),
                "p90_s": pr.fmt(p90),
                "reps": reps,
                "inner": 1,
                "gb_s": pr.fmt(gbs, 5),
                "notes": "dst.copy_(src), bytes_moved = read + write",
            }
        )
        log(f"copy {sz >> 20} MiB: {gbs:.0f} GB/s")
        del src, dst
    if tiny or not str(dev).startswith("cuda"):
        return res
    shapes = [(6144, 4096), (28672, 4096), (4096, 14336), (28672, 8192), (8192, 28672)]
    for kind in ("bf16", "fp8"):
        for N, K in shapes:
            esz = 2 if kind == "bf16" else 1
            nbuf = max(1, math.ceil((256 << 20) / (N * K * esz)))
            Ws = [torch.randn(N, K, device=dev, dtype=torch.bfloat16) for _ in range(nbuf)]
            if kind == "fp8":
                Ws = [w.to(FP8) for w in Ws]
            one = torch.ones((), device=dev, dtype=torch.float32)
            for M in (1, 64, 256, 1024, 2048, 4096, 8192, 16384):
                x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
                if kind == "fp8":
                    x = x.to(FP8)
                    fn1 = lambda i, x=x: torch._scaled_mm(  # noqa: E731
                        x, Ws[i % nbuf].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16
                    )
                else:
                    fn1 = lambda i, x=x: F.linear(x, Ws[i % nbuf])  # noqa: E731
                inner = nbuf * max(1, min(8, math.ceil(2 * 16384 / max(M, 1) / nbuf)))

                def body(inner=inner, fn1=fn1):
                    for i in range(inner):
                        fn1(i)

                g, _ = capture(lambda body=body: body(), dev)
                med, p10, p90, reps = timer.measure(g.replay, 2, 5, 20, 0.05)
                t = med / inner
                fl = 2 * M * N * K
                tf = fl / t / 1e12
                if M >= 1024:
                    res[kind] = max(res[kind], tf)
                byt = M * K * esz + N * K * esz + M * N * 2
                out.row(
                    {
                        **base,
                        "bench": "gemm",
                        "dtype": "bf16" if kind == "bf16" else "fp8_e4m3",
                        "m": M,
                        "n": N,
                        "k": K,
                        "bytes_moved": byt,
                        "flops": fl,
                        "median_s": pr.fmt(t),
                        "p10_s": pr.fmt(p10 / inner),
                        "p90_s": pr.fmt(p90 / inner),
                        "reps": reps,
                        "inner": inner,
                        "tflops": pr.fmt(tf, 5),
                        "gb_s": pr.fmt(byt / t / 1e9, 5),
                        "notes": "CUDA-graph replay of `inner` GEMMs, weights rotated over "
                        f"{nbuf} copies (>= 256 MB, L2 never holds them)"
                        + ("; torch._scaled_mm tensor-wise scales" if kind == "fp8" else ""),
                    }
                )
                del x
            log(f"gemm {kind} {N}x{K}: peak so far {res[kind]:.0f} TFLOP/s")
            del Ws
    torch.cuda.empty_cache()
    return res


# ================================================================ sweep
def engine_desc(info, bs, kvprec, wprec, tp):
    parts = [
        f"{info['torch']} | paged KV (block {bs}"
        + (", fp8 e4m3 per-tensor scale)" if kvprec == "fp8" else ")"),
        "Triton paged GQA attention (split-KV decode), SDPA flash prefill",
        "CUDA-graph decode",
        "fused QKV/gate-up",
        "Triton fused add+RMSNorm, qk-norm+RoPE+KV write, SiLU*up",
    ]
    if wprec == "fp8":
        parts.append("fp8 e4m3 weights+activations via torch._scaled_mm (per-tensor scales)")
    if tp > 1:
        parts.append(f"TP={tp} NCCL all-reduce in graph")
    return ", ".join(parts)


def agree(value: float, dev, largest: bool = True) -> float:
    """The same number on every rank: the largest (or smallest) of the ranks' values.

    Under TP every rank must launch the same collectives in the same order. Decisions made
    from a rank's own clock or memory (a deadline, the points that fit, the repetitions of a
    timing) can differ by a hair between ranks; the rank that does one replay more then
    waits in an all-reduce its peer never joins. This is the likely cause of the TP = 2
    sweep that hung after 7 points on 2026-12-01 (`measure` chose the repetitions from each
    rank's own first timing). One rank: the value itself."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return value
    t = torch.tensor([float(value)], device=dev, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX if largest else dist.ReduceOp.MIN)
    return float(t.item())


def run_model(
    name,
    wprec,
    kvprec,
    args,
    dev,
    timer,
    ceil,
    common,
    steps,
    log,
    deadline,
    gen,
    tp=1,
    rank=0,
    write=True,
):
    cfg = MODELS[name]
    t0 = time.time()
    model = Model(
        cfg, dev, wprec, kvprec, args.block_size, args.seed, tp, rank, comm=args.force_comm
    )
    wbytes = model.weight_bytes_touched()
    kvt = model.kv_bytes_per_token()
    tiny = name == "tiny"
    batches = [1, 4] if tiny else DECODE_BATCH
    ctxs = [64, 200] if tiny else DECODE_CTX
    isls = [64, 128] if tiny else PREFILL_ISL
    if args.quick:
        batches, ctxs, isls = [1, 256], [2048], [2048]
    if str(dev).startswith("cuda"):
        gc.collect()
        torch.cuda.empty_cache()
        free = torch.cuda.get_device_properties(dev).total_memory - torch.cuda.memory_allocated()
        log(
            f"   memory: allocated {torch.cuda.memory_allocated() / 1e9:.1f} GB, reserved "
            f"{torch.cuda.memory_reserved() / 1e9:.1f} GB, device free "
            f"{torch.cuda.mem_get_info()[0] / 1e9:.1f} GB"
        )
    else:
        free = 16e9
    budget = agree(min(free - 8e9, args.mem_limit_gb * 1e9 - wbytes), dev, largest=False)
    dec_pts, skipped = [], []
    for c in ctxs:
        for b in batches:
            need = b * math.ceil((c + 1) / args.block_size) * args.block_size * kvt
            (dec_pts if need <= budget else skipped).append((b, c))
    pre_pts = [(1, s) for s in isls if s * kvt <= budget]
    max_tok = max(
        [b * math.ceil((c + 1) / args.block_size) * args.block_size for b, c in dec_pts]
        + [s for _, s in pre_pts]
        + [1024]
    )
    nblocks = max_tok // args.block_size + 8
    model.alloc_kv(nblocks)
    model.fill_kv_random()
    log(
        f"== {name} {wprec}/{kvprec} kv: weights {wbytes / 1e9:.2f} GB, KV pool "
        f"{2 * model.kc.numel() * model.kc.element_size() / 1e9:.1f} GB, {len(dec_pts)} decode "
        f"+ {len(pre_pts)} prefill points; skipped (KV > memory): {skipped}"
    )
    ea, eb = check(model, dev, gen)
    # fp8 KV alone: 4-5e-2, fp8 weights+activations: ~0.12 (rounding flips amplified over the
    # layers of a random-weight model); a wrong kernel gives O(1)
    tol = 0.15 if wprec == "fp8" else (0.08 if kvprec == "fp8" else 0.05)
    ok = ea < tol and eb < tol
    chk = f"decode-vs-prefill logits rel err {ea:.1e}, chunked-paged-prefill rel err {eb:.1e}"
    log(f"   check: {chk} ({'ok' if ok else 'MISMATCH'})")
    if not ok and args.strict:
        raise SystemExit("check failed")
    base = dict(
        common,
        model=model_column(name),
        precision=wprec,
        kv_precision=kvprec,
        framework_version=engine_desc(common["_info"], args.block_size, kvprec, wprec, tp),
        n_gpus=tp,
        tp=tp,
    )
    base.pop("_info", None)
    cuda = str(dev).startswith("cuda")
    # order: decode first (priority shapes), then prefill
    for kind, pts in (("decode", dec_pts), ("prefill", pre_pts)):
        for b, n in pts:
            if agree(time.time() > deadline, dev):  # every rank skips, or none
                log(f"   budget reached: skipping {kind} b={b} n={n}")
                continue
            try:
                if kind == "decode":
                    db = DecodeBatch(model, b, n, dev, gen)
                    if cuda:
                        g, _ = capture(lambda db=db: db.run(model), dev)
                        fn = g.replay
                    else:
                        fn = lambda db=db: db.run(model)  # noqa: E731
                    med, p10, p90, reps = timer.measure(fn, 3, 10, 60, 0.2)
                    del db
                    if cuda:
                        del g
                    kv_read = b * (n + 1) * kvt
                    moved = wbytes + kv_read
                    bw = moved / med
                    frac = bw / 1e9 / ceil["copy"] if ceil["copy"] else float("nan")
                    flag = ""
                    if moved >= DECODE_TARGET_MIN_BYTES and frac < DECODE_TARGET_BW:
                        flag = (
                            f"; below target: {frac:.0%} of copy bandwidth < 80% at "
                            f"{moved / 1e9:.1f} GB/step"
                        )
                    notes = (
                        f"median of {reps} CUDA-graph replays (CUDA events) after warm-up; "
                        f"p10 {p10:.4g} s; p90 {p90:.4g} s; bytes moved {moved / 1e9:.3f} GB "
                        f"(weights {wbytes / 1e9:.3f} + KV read {kv_read / 1e9:.3f}); "
                        f"{bw / 1e9:.0f} GB/s = {frac:.1%} of measured copy bandwidth "
                        f"{ceil['copy']:.0f} GB/s; paged KV block {args.block_size}, "
                        f"random block permutation; split-KV {db_splits(b, model, n)}; "
                        f"logits for all rows; random weights; {chk}{flag}"
                    )
                    row = dict(
                        base,
                        isl="",
                        batch=b,
                        context_len=n,
                        metric="decode_step_s",
                        value=pr.fmt(med),
                        unit="s",
                        notes=notes,
                    )
                    log(
                        f"   decode b={b:4d} ctx={n:6d}: {med * 1e3:8.3f} ms "
                        f"{bw / 1e9:6.0f} GB/s ({frac:.0%})"
                    )
                else:
                    ids, pos, slot, bt, ctx, last = prefill_inputs(model, b, n, dev, gen)

                    def fn(a=(ids, pos, slot, bt, ctx, last), b=b, n=n):
                        return model.forward(*a[:5], None, a[5], sdpa=(b, n))

                    med, p10, p90, reps = timer.measure(fn, 1 if n >= 8192 else 2, 3, 20, 0.3)
                    T = b * n
                    lin_fl = (
                        2 * (model.linear_params() - model.lm_head.numel()) * T
                        + 2 * model.lm_head.numel() * b
                    )
                    att_fl = 2 * cfg["layers"] * model.hq * model.d * n * n * b  # causal: half of 4
                    fl = lin_fl + att_fl
                    tf = fl / med / 1e12
                    fb = tf / ceil["bf16"] if ceil["bf16"] else float("nan")
                    f8 = tf / ceil["fp8"] if ceil["fp8"] else float("nan")
                    flag = ""
                    if T >= PREFILL_TARGET_MIN_TOKENS and fb < PREFILL_TARGET:
                        flag = f"; below target: {fb:.0%} of bf16 GEMM peak < 60%"
                    fr = f"{fb:.1%} of measured bf16 GEMM peak {ceil['bf16']:.0f} TFLOP/s" + (
                        f", {f8:.1%} of measured fp8 GEMM peak {ceil['fp8']:.0f} TFLOP/s"
                        if wprec == "fp8"
                        else ""
                    )
                    notes = (
                        f"median of {reps} timed reps (CUDA events) after warm-up; p10 "
                        f"{p10:.4g} s; p90 {p90:.4g} s; eager forward; SDPA flash "
                        f"(enable_gqa) on the fresh prompt, K/V written to the paged cache; "
                        f"logits of last token; {tf:.0f} TFLOP/s = {fr} (flops: 2 x linear "
                        f"params x tokens + causal attention 2*L*heads*d*isl^2); random "
                        f"weights; {chk}{flag}"
                    )
                    row = dict(
                        base,
                        isl=n,
                        batch=b,
                        context_len=n,
                        metric="prefill_s",
                        value=pr.fmt(med),
                        unit="s",
                        notes=notes,
                    )
                    log(
                        f"   prefill b={b} isl={n:6d}: {med * 1e3:9.2f} ms {tf:5.0f} TFLOP/s "
                        f"({fb:.0%} bf16 peak)"
                    )
                if write:
                    steps.emit(row)
            except torch.cuda.OutOfMemoryError as e:
                log(f"   {kind} b={b} n={n}: OOM {str(e).splitlines()[0][:100]}")
                torch.cuda.empty_cache()
            except Exception as e:  # noqa: BLE001
                if args.strict:
                    raise
                log(
                    f"   {kind} b={b} n={n}: FAILED {type(e).__name__}: "
                    f"{str(e).splitlines()[0][:200]}"
                )
    model.kc = model.vc = None
    del model
    gc.collect()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    log(f"== {name} {wprec} done in {time.time() - t0:.1f}s")


def db_splits(b, model, n):
    return decode_splits(b, model.hkv, n + 1)


class Steps:
    def __init__(self, path, prefix, enabled=True):
        self.out = pr.CsvOut(path, pr.SCHEMA) if enabled else None
        self.prefix, self.n = prefix, 0

    def emit(self, row):
        if self.out is None:
            return
        self.n += 1
        self.out.row({k: row.get(k, "") for k in pr.SCHEMA} | {"id": f"{self.prefix}-{self.n:04d}"})


# ================================================================ profiler of the old harness
def profile_old(dev, out_dir, log, name="llama-3.1-8b", B=256, ctx=2048):
    """One decode step of bench/pytorch_ref.py (CUDA graph off, so kernels are visible) under
    torch.profiler; kernel table to <out>/old_harness_profile.txt."""
    from torch.profiler import ProfilerActivity, profile

    m = pr.Model(pr.MODELS[name], dev, torch.bfloat16)
    pool = pr.KVPool(m, 2 * m.c["layers"] * B * m.c["kv_heads"] * (ctx + 1) * m.c["head_dim"] * 2)
    caches = pool.views(B, ctx + 1)
    ids = torch.randint(0, m.c["vocab"], (B,), device=dev)
    attn = pr.Attn(dev)
    be = attn.pick(("d", B, ctx), lambda: m.decode(ids, caches, ctx))
    lines = []
    with torch.inference_mode(), attn.ctx(be):
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            m.decode(ids, caches, ctx)
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            m.decode(ids, caches, ctx)
        for _ in range(3):
            g.replay()
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(10):
            g.replay()
        e1.record()
        torch.cuda.synchronize()
        t_graph = e0.elapsed_time(e1) / 10
        lines.append(
            f"old harness {name} decode b={B} ctx={ctx}, SDPA backend {be}: CUDA-graph "
            f"step {t_graph:.3f} ms"
        )
        for _ in range(2):
            m.decode(ids, caches, ctx)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            m.decode(ids, caches, ctx)
            torch.cuda.synchronize()
    tab = prof.key_averages().table(
        sort_by="cuda_time_total", row_limit=30, max_name_column_width=90
    )
    lines.append("eager step under torch.profiler, kernels by total CUDA time:")
    lines.append(tab)
    kv = 2 * m.c["layers"] * B * m.c["kv_heads"] * (ctx + 1) * m.c["head_dim"] * 2
    lines.append(f"KV bytes per step {kv / 1e9:.2f} GB; weights {m.weight_bytes() / 1e9:.2f} GB")
    txt = "\n".join(lines)
    with open(os.path.join(out_dir, "old_harness_profile.txt"), "w") as f:
        f.write(txt + "\n")
    log(txt)
    del g, pool, caches, m
    torch.cuda.empty_cache()


# ================================================================ main
def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out-dir", default="bench_out")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument(
        "--dry-run",
        action="store_true",
        help="tiny shape (needs Triton: GPU or TRITON_INTERPRET=1 on the CPU)",
    )
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument(
        "--precisions",
        default="bf16/bf16,fp8/fp8",
        help="weight/kv precision pairs to sweep, comma separated",
    )
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--budget-s", type=float, default=480.0)
    ap.add_argument("--mem-limit-gb", type=float, default=MEM_LIMIT / 1e9)
    ap.add_argument("--skip-micro", action="store_true")
    ap.add_argument("--quick", action="store_true", help="2 decode points + 1 prefill per model")
    ap.add_argument(
        "--profile-old",
        action="store_true",
        help="profile bench/pytorch_ref.py's decode step (8B, b256, ctx2048) and exit",
    )
    ap.add_argument(
        "--force-comm",
        action="store_true",
        help="issue the TP all-reduces even at world size 1 (dry run of the TP path)",
    )
    ap.add_argument("--id-prefix", default="ref200")
    ap.add_argument("--out-name", default="reference_h200")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--strict", action="store_true")
    args = ap.parse_args(argv)
    dev = args.device
    if args.dry_run:
        args.models = "tiny"
    if dev == "cuda":
        dev = "cuda:0"
    # tensor parallel: one process per GPU under torchrun
    tp, rank = 1, 0
    if (
        "WORLD_SIZE" in os.environ
        and int(os.environ["WORLD_SIZE"]) >= 1
        and (int(os.environ["WORLD_SIZE"]) > 1 or args.force_comm)
    ):
        import torch.distributed as dist

        os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast stays off
        os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
        os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
        rank = int(os.environ["RANK"])
        tp = int(os.environ["WORLD_SIZE"])
        if torch.cuda.is_available():
            dev = f"cuda:{int(os.environ.get('LOCAL_RANK', rank))}"
            torch.cuda.set_device(dev)
            dist.init_process_group("nccl", device_id=torch.device(dev))
        else:  # CPU dry run of the TP path (gloo; Triton's interpreter)
            dist.init_process_group("gloo")
    t0 = time.time()
    log = pr.Log(t0) if rank == 0 else (lambda *a: None)
    command = shlex.join(
        ["python3", "bench/ref_engine.py"] + (sys.argv[1:] if argv is None else list(argv))
    )
    if tp > 1 or args.force_comm:
        command = f"torchrun --nproc-per-node {tp} " + command.replace("python3 ", "", 1)
    os.makedirs(args.out_dir, exist_ok=True)
    info = pr.env_info(dev)
    as_of = _dt.date.today().isoformat()
    log(
        f"torch {info['torch']} cuda {info['cuda']} driver {info['driver']} gpu {info['gpu']} "
        f"tp {tp}; command: {command}"
    )
    if str(dev).startswith("cuda"):
        log("gpu state:", pr.gpu_state())
        torch.backends.cuda.matmul.allow_tf32 = False
    timer = pr.Timer(dev)
    timer.agree = lambda reps: int(agree(reps, dev))  # same repetitions on every rank
    gen = torch.Generator().manual_seed(args.seed)
    torch.manual_seed(args.seed)
    if args.profile_old:
        with torch.inference_mode():
            profile_old(dev, args.out_dir, log)
        return
    deadline = t0 + args.budget_s
    micro = (
        pr.CsvOut(os.path.join(args.out_dir, f"{args.out_name}_micro.csv"), pr.MICRO_SCHEMA)
        if rank == 0
        else None
    )
    ceil = {"copy": 4274.0, "bf16": 737.0, "fp8": 1344.0}
    if not args.skip_micro and rank == 0:
        with torch.inference_mode():
            ceil = run_micro(dev, timer, info, micro, log, command, as_of, tiny=args.dry_run)
        log(
            f"ceilings: copy {ceil['copy']:.0f} GB/s, bf16 {ceil['bf16']:.0f} TFLOP/s, "
            f"fp8 {ceil['fp8']:.0f} TFLOP/s"
        )
    elif args.skip_micro:
        log("micro skipped: fractions use the 2026-11-30 ceilings of pytorch_h200_micro.csv")
    common = {
        "source": SOURCE,
        "source_detail": (
            f"command: {command}; torch {info['torch']}; CUDA {info['cuda']}; "
            f"triton {_triton_version()}; driver {info['driver']}; GPU "
            f"{info['gpu']} (torch.cuda.get_device_name)"
        ),
        "as_of": as_of,
        "hardware": pr.HARDWARE if str(dev).startswith("cuda") else "cpu",
        "pp": 1,
        "framework": "pytorch",
        "mode": "static_batch",
        "osl": "",
        "concurrency": "",
        "request_rate": "",
        "_info": info,
    }
    suffix = "" if tp == 1 else f"_tp{tp}"
    steps = Steps(
        os.path.join(args.out_dir, f"{args.out_name}{suffix}.csv"),
        args.id_prefix + suffix.replace("_", "-"),
        enabled=rank == 0,
    )
    precs = [p.split("/") for p in args.precisions.split(",")]
    models = args.models.split(",")
    jobs = [(m, w, k) for m in models for w, k in precs]
    with torch.inference_mode():
        for i, (m, w, k) in enumerate(jobs):
            if w == "fp8" and not str(dev).startswith("cuda"):
                continue
            share = (deadline - time.time()) / (len(jobs) - i)
            run_model(
                m,
                w,
                k,
                args,
                dev,
                timer,
                ceil,
                common,
                steps,
                log,
                min(deadline, time.time() + 1.6 * share),
                gen,
                tp,
                rank,
            )
    log(f"done: {steps.n} step rows in {time.time() - t0:.0f}s")
    if tp > 1 or args.force_comm:
        import torch.distributed as dist

        dist.barrier()
        os._exit(0)  # teardown after graph-captured NCCL can hang (bench/README.md)


def _triton_version():
    try:
        import triton

        return triton.__version__
    except Exception:  # noqa: BLE001
        return "none"


if __name__ == "__main__":
    main()
