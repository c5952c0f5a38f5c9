"""Achieved TFLOP/s of the linear layers of Llama-70B and Llama-3.1-8B sharded at TP 1/2/4/8.

Per GPU, a Megatron column-parallel layer (QKV, gate+up) keeps N/TP output columns, a
row-parallel one (O, down) K/TP input rows. Each (dtype, model, layer, TP, M) is timed as
one CUDA graph of ``c`` GEMMs over ``c`` distinct weight copies carved from a 2 GiB random
pool (c = 384 MiB / weight bytes, 1..48, so the L2 never holds the weights: as in a real
forward pass, every weight comes from HBM), 3 replays of warm-up, the median of 9 timed
replays by CUDA events, divided by ``c``. bf16 runs ``torch.matmul(x, W.T)``; fp8 (E4M3)
runs ``torch._scaled_mm(x, W.T, scale_a, scale_b, out_dtype=bf16)`` with per-tensor
float32 scales. Llama-2-70B and Llama-3.1-70B share every GEMM shape (hidden 8,192,
64 query / 8 KV heads of 128, FFN 28,672), so one "70b" set stands for both.

Writes ``$OUT/gemm_width.csv`` (device, dtype, model, layer, tp, m, k, n, copies,
s_per_gemm, tflops, torch, clocks). Rows ``check`` give the fp8 result's relative error
against the bf16 product of the same (dequantised) inputs.

Usage: ``OUT=bench_out python3 bench/gemm_width.py`` (needs torch and a CUDA GPU).
"""

import os
import subprocess as sp

import torch

c = torch.cuda
B, F8 = torch.bfloat16, torch.float8_e4m3fn
MS = (16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192)
# (model, layer, K, N, split): split "n" = column-parallel, "k" = row-parallel
SH = [("70b", "qkv", 8192, 10240, "n"), ("70b", "o", 8192, 8192, "k"),
      ("70b", "gate_up", 8192, 57344, "n"), ("70b", "down", 28672, 8192, "k"),
      ("8b", "qkv", 4096, 6144, "n"), ("8b", "o", 4096, 4096, "k"),
      ("8b", "gate_up", 4096, 28672, "n"), ("8b", "down", 14336, 4096, "k")]  # fmt: skip
R = []


def tm(g, n=9):
    """Median replay time of graph ``g`` over ``n`` replays after 3 warm-ups [s]."""
    s, e = c.Event(enable_timing=True), c.Event(enable_timing=True)
    for _ in range(3):
        g.replay()
    t = []
    for _ in range(n):
        s.record()
        g.replay()
        e.record()
        e.synchronize()
        t.append(s.elapsed_time(e) / 1e3)
    return sorted(t)[n // 2]


def graph(fs):
    """A CUDA graph of the calls ``fs``, warmed up on a side stream first."""
    st = c.Stream()
    st.wait_stream(c.current_stream())
    with c.stream(st):
        [f() for f in fs]
    c.current_stream().wait_stream(st)
    g = c.CUDAGraph()
    with c.graph(g):
        [f() for f in fs]
    return g


def main():
    pool = {B: torch.randn(2**30, dtype=B, device="cuda")}
    pool[F8] = (pool[B] * 0.5).to(F8)
    one = torch.ones((), device="cuda")
    for dt in (B, F8):
        for mdl, lay, K0, N0, sp_ in SH:
            for tp in (1, 2, 4, 8):
                K, N = (K0, N0 // tp) if sp_ == "n" else (K0 // tp, N0)
                cp = max(1, min(48, 384 * 2**20 // (K * N * dt.itemsize), 2**30 // (K * N)))
                W = [pool[dt][i * K * N : (i + 1) * K * N].view(N, K) for i in range(cp)]
                for M in MS:
                    try:
                        x = torch.randn(M, K, dtype=B, device="cuda").to(dt)
                        if dt == B:
                            fs = [lambda w=w: torch.matmul(x, w.t()) for w in W]
                        else:
                            fs = [lambda w=w: torch._scaled_mm(x, w.t(), one, one, out_dtype=B)
                                  for w in W]  # fmt: skip
                        s = tm(graph(fs)) / cp
                        R.append((dt, mdl, lay, tp, M, K, N, cp, s, 2 * M * K * N / s / 1e12))
                    except Exception as ex:  # one failed shape must not lose the others
                        print("FAIL", dt, mdl, lay, tp, M, ex)
                if tp == 8 and lay == "down" and dt == F8:  # fp8 accuracy, one shape a model
                    y = torch._scaled_mm(x, W[0].t(), one, one, out_dtype=torch.float32)
                    ref = x.float() @ W[0].float().t()
                    R.append(
                        (dt, mdl, "check", tp, M, K, N, 1, float((y - ref).norm() / ref.norm()), 0)
                    )
    q = "--query-gpu=clocks.max.sm,clocks.max.mem,power.limit"
    ck = sp.run(["nvidia-smi", q, "--format=csv,noheader"], capture_output=True, text=True)
    ck = ck.stdout.strip().replace(",", ";")
    name = c.get_device_name()
    with open(os.environ.get("OUT", ".") + "/gemm_width.csv", "w") as f:
        f.write("device,dtype,model,layer,tp,m,k,n,copies,s_per_gemm,tflops,torch,clocks\n")
        for r in R:
            d = "bf16" if r[0] == B else "fp8"
            f.write(f"{name},{d},{','.join(map(str, r[1:8]))},{r[8]:.4e},{r[9]:.1f},")
            f.write(f"{torch.__version__},{ck}\n")
    for r in R:
        if r[4] in (128, 1024, 8192) or r[2] == "check":
            print(r[0], *r[1:8], f"{r[9]:.1f}")


if __name__ == "__main__":
    main()
