"""Decode attention of the reference engine alone: ``ref_kernels.paged_attn`` (split-KV
flash-decoding + combine) over a paged bf16 KV cache, timed per layer (issue 32, KV-read
transfer to a sibling GPU).

For each model's attention shape (query heads, KV heads, head dim of ``bench/pytorch_ref.py``'s
``MODELS``) and each (batch, context): a KV pool of ``n`` layers (enough that the pool is many
times the L2, as in a real step where every layer reads its own cache), block tables over a random
permutation of the blocks (as ``ref_engine.DecodeBatch``), random K/V and queries; one CUDA graph
runs the kernel once per layer, its replays are timed with CUDA events (median), and the time per
layer is the graph time / ``n``. Bytes = the K and V the kernel must read (``batch x (ctx + 1) x
kv_heads x head_dim x 2 x 2`` bytes); ``gb_s`` = bytes / time.

Rows go to ``<out-dir>/paged_attn_micro.csv`` (one per point, flushed). Never fitted.

    python3 bench/paged_attn_micro.py --out-dir $OUT --budget-s 90
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

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_ref as pr  # noqa: E402
import ref_engine as re_  # noqa: E402
import ref_kernels as rk  # noqa: E402

SHAPES = ["llama-3.1-8b", "qwen2.5-14b", "llama-3.2-1b"]
BATCHES = [1, 16, 64, 128, 256]
CTXS = [256, 1024, 2048, 4096, 8192]
POOL_MIN_BYTES = 1.0e9  # the pool of one point: at least this (L2 is 50-60 MB)
POOL_MAX_BYTES = 24e9
BS = 16
FIELDS = [
    "source",
    "as_of",
    "bench",
    "model",
    "hq",
    "hkv",
    "head_dim",
    "kv_dtype",
    "batch",
    "ctx",
    "num_splits",
    "layers_in_graph",
    "kv_bytes",
    "median_s",
    "p10_s",
    "p90_s",
    "reps",
    "gb_s",
    "gpu_name",
    "torch_version",
    "triton_version",
    "driver",
    "command",
    "notes",
]


def time_graph(g, reps: int) -> list[float]:
    ev = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(reps)
    ]
    for a, b in ev:
        a.record()
        g.replay()
        b.record()
    torch.cuda.synchronize()
    return sorted(a.elapsed_time(b) / 1e3 for a, b in ev)


def point(name, batch, ctx, dev, gen):
    c = pr.MODELS[name]
    hq, hkv, d = c["heads"], c["kv_heads"], c["head_dim"]
    nb = math.ceil((ctx + 1) / BS)
    layer_bytes = 2 * batch * nb * BS * hkv * d * 2
    n = max(2, min(c["layers"] * 4, math.ceil(POOL_MIN_BYTES / layer_bytes)))
    n = min(n, max(1, int(POOL_MAX_BYTES // layer_bytes)))
    if n < 1 or layer_bytes > POOL_MAX_BYTES:
        return None
    blocks = batch * nb + 1
    kc = torch.empty(n, blocks, hkv, BS, d, device=dev, dtype=torch.bfloat16).normal_()
    vc = torch.empty_like(kc).normal_()
    perm = torch.randperm(blocks - 1, generator=gen)[: batch * nb] + 1
    bt = perm.view(batch, nb).to(torch.int32).to(dev)
    pos = torch.full((batch,), ctx, device=dev, dtype=torch.int32)
    ctxt = torch.full((batch,), ctx + 1, device=dev, dtype=torch.int32)
    q = torch.randn(batch, hq, d, device=dev, dtype=torch.bfloat16)
    out = torch.full((batch, hq, d), float("nan"), device=dev, dtype=torch.bfloat16)
    plan = re_.decode_plan(batch, dev, hkv, ctx + 1, hq)
    ws = None
    if plan.num_splits > 1:
        ws = (
            torch.empty(plan.num_splits, batch, hq, d, device=dev, dtype=torch.float32),
            torch.empty(plan.num_splits, batch, hq, device=dev, dtype=torch.float32),
        )

    def run():
        for li in range(n):
            rk.paged_attn(q, kc[li], vc[li], out, bt, ctxt, pos, plan, hq, hkv, d, BS, 1.0, 1.0, ws)

    # correctness on layer 0 against SDPA over the gathered cache (fp32)
    rk.paged_attn(q, kc[0], vc[0], out, bt, ctxt, pos, plan, hq, hkv, d, BS, 1.0, 1.0, ws)
    torch.cuda.synchronize()
    b0 = min(batch, 4)
    k = kc[0][bt[:b0].long()].permute(0, 2, 1, 3, 4).reshape(b0, hkv, nb * BS, d)[:, :, : ctx + 1]
    v = vc[0][bt[:b0].long()].permute(0, 2, 1, 3, 4).reshape(b0, hkv, nb * BS, d)[:, :, : ctx + 1]
    g_ = hq // hkv
    ref = torch.nn.functional.scaled_dot_product_attention(
        q[:b0].float().view(b0, hkv, g_, d),
        k.float(),
        v.float(),
    ).reshape(b0, hq, d)
    err = ((out[:b0].float() - ref).norm() / ref.norm()).item()
    del k, v, ref
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            run()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        run()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    est = time_graph(g, 3)[1]
    reps = int(max(10, min(200, 0.4 / max(est, 1e-6))))
    ts = time_graph(g, reps)
    med = statistics.median(ts) / n
    kv_bytes = 2 * batch * (ctx + 1) * hkv * d * 2
    res = dict(
        hq=hq,
        hkv=hkv,
        head_dim=d,
        num_splits=plan.num_splits,
        layers_in_graph=n,
        kv_bytes=kv_bytes,
        median_s=f"{med:.6g}",
        p10_s=f"{pr.quantile(ts, 0.1) / n:.6g}",
        p90_s=f"{pr.quantile(ts, 0.9) / n:.6g}",
        reps=reps,
        gb_s=f"{kv_bytes / med / 1e9:.1f}",
        err=err,
    )
    del kc, vc, g
    torch.cuda.empty_cache()
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out-dir", default="bench_out")
    ap.add_argument("--budget-s", type=float, default=90.0)
    ap.add_argument("--models", default=",".join(SHAPES))
    args = ap.parse_args(argv)
    t0 = time.time()
    dev = "cuda:0"
    info = pr.env_info(dev)
    try:
        import triton

        tv = triton.__version__
    except Exception:  # noqa: BLE001
        tv = "none"
    command = shlex.join(
        ["python3", "bench/paged_attn_micro.py"] + (sys.argv[1:] if argv is None else list(argv))
    )
    os.makedirs(args.out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    path = os.path.join(args.out_dir, "paged_attn_micro.csv")
    print("gpu state:", pr.gpu_state(), flush=True)
    with open(path, "w", newline="", encoding="utf-8") as f, torch.inference_mode():
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for name in args.models.split(","):
            for ctx in CTXS:
                for batch in BATCHES:
                    if time.time() - t0 > args.budget_s:
                        print("budget spent", flush=True)
                        return
                    r = point(name, batch, ctx, dev, gen)
                    if r is None:
                        continue
                    err = r.pop("err")
                    w.writerow(
                        dict(
                            r,
                            source=f"planner own measurement (bench/paged_attn_micro.py, {info['gpu']})",
                            as_of=_dt.date.today().isoformat(),
                            bench="paged_attn_decode",
                            model=re_.model_column(name),
                            kv_dtype="bf16",
                            batch=batch,
                            ctx=ctx,
                            gpu_name=info["gpu"],
                            torch_version=info["torch"],
                            triton_version=tv,
                            driver=info["driver"],
                            command=command,
                            notes=(
                                f"one query token per sequence; graph of {r['layers_in_graph']} "
                                f"layer caches; rel err vs fp32 SDPA {err:.1e}; REF_ATTN "
                                f"{rk.TUNE}"
                            ),
                        )
                    )
                    f.flush()
                    print(
                        f"{name} b{batch} ctx{ctx}: {float(r['median_s']) * 1e6:.1f} us "
                        f"{r['gb_s']} GB/s splits {r['num_splits']} err {err:.1e}",
                        flush=True,
                    )
    print(f"done in {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
