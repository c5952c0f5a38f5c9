"""Weight reads of a decode step on one GPU: bf16 GEMV (``F.linear`` of 1, 8 and 64 rows)
over the layer shapes of Llama-3.2-1B, Llama-3.1-8B and Qwen2.5-14B, each replayed in a CUDA
graph over rotating copies of the weights (2 GB in all, so the L2 never holds them), plus a
4 GiB read (``sum``), a 4 GiB copy and a graph of 2,000 tiny kernels.

Writes ``$OUT/hbm_decode_bw.csv`` (device, test, bytes, kernels, s_per_kernel, gb_s, torch,
clocks). The run of 2026-12-06 on an H100 SXM (``data/benchmarks/hbm_decode_bw_h100_micro.csv``)
sent this file gzip + base64 inside the device command, minified to fit its 2,000 characters,
with the same statements; its ``read_graph`` tests failed there (``torch.sum`` takes no
``out=`` without ``dim``) and wrote no rows.

Usage: ``OUT=bench_out python3 bench/hbm_decode_bw.py`` (needs torch and a CUDA GPU).
"""

import os
import subprocess as sp

import torch
import torch.nn.functional as F

B = torch.bfloat16
c = torch.cuda
G = 2**30
R = []


def tm(f, n=15):
    """Median time of ``f`` over ``n`` runs after 3 warm-ups, by CUDA events [s]."""
    s, e = c.Event(enable_timing=1), c.Event(enable_timing=1)
    for _ in range(3):
        f()
    t = []
    for _ in range(n):
        s.record()
        f()
        e.record()
        e.synchronize()
        t.append(s.elapsed_time(e) / 1e3)
    return sorted(t)[n // 2]


def gr(fs):
    """A CUDA graph of the calls ``fs`` (warmed up on a side stream first)."""
    s = c.Stream()
    s.wait_stream(c.current_stream())
    with c.stream(s):
        [f() for f in fs]
    c.current_stream().wait_stream(s)
    g = c.CUDAGraph()
    with c.graph(g):
        [f() for f in fs]
    return g


def run(name, fn):
    try:
        R.append((name,) + fn())
    except Exception as x:  # one failed test must not lose the others
        print("FAIL", name, x)


def rd(S):
    n = max(4, 2**31 // S)
    xs = [torch.randn(S // 2, dtype=B, device="cuda") for _ in range(n)]
    o = torch.empty(n, device="cuda")
    fs = [lambda x=x, i=i: torch.sum(x, dtype=torch.float32, out=o[i]) for i, x in enumerate(xs)]
    return S, n, tm(gr(fs).replay) / n


def mv(M, K, Nn):
    n = max(4, 2**31 // (K * Nn * 2))
    W = [torch.randn(Nn, K, dtype=B, device="cuda") for _ in range(n)]
    x = torch.randn(M, K, dtype=B, device="cuda")
    return K * Nn * 2, n, tm(gr([lambda w=w: F.linear(x, w) for w in W]).replay) / n


def main():
    name = c.get_device_name()
    a = torch.randn(2 * G, dtype=B, device="cuda")
    b = torch.empty_like(a)
    run("read_sum", lambda: (4 * G, 1, tm(lambda: a.sum(dtype=torch.float32))))
    run("copy_rw", lambda: (8 * G, 1, tm(lambda: b.copy_(a))))
    del a, b
    for S in (2**20, 2**22, 2**24, 2**26, 2**28):
        run(f"read_graph_{S}", lambda S=S: rd(S))
    shapes = ((2048, 3072), (2048, 16384), (4096, 6144), (4096, 4096), (4096, 28672),
              (14336, 4096), (5120, 7168), (5120, 27648), (13824, 5120))  # fmt: skip
    for K, Nn in shapes:
        for M in (1, 8, 64):
            run(f"gemv_m{M}_k{K}_n{Nn}", lambda M=M, K=K, Nn=Nn: mv(M, K, Nn))
    t = torch.zeros(1, device="cuda")
    run("tiny_kernel", lambda: (4, 2000, tm(gr([lambda: t.add_(1)] * 2000).replay) / 2000))
    q = "--query-gpu=clocks.max.sm,clocks.max.mem,power.limit"
    ck = sp.run(["nvidia-smi", q, "--format=csv,noheader"], capture_output=1, text=1)
    ck = ck.stdout.strip().replace(",", ";")
    with open(os.environ.get("OUT", ".") + "/hbm_decode_bw.csv", "w") as f:
        f.write("device,test,bytes,kernels,s_per_kernel,gb_s,torch,clocks\n")
        for r in R:
            line = f"{name},{r[0]},{r[1]},{r[2]},{r[3]:.4e},{r[1] / r[3] / 1e9:.1f},"
            line += f"{torch.__version__},{ck}"
            f.write(line + "\n")
            print(line)


if __name__ == "__main__":
    main()
