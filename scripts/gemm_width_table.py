"""Print the tables of ``data/gemm_width.yaml``: the achieved rate of one whole Llama-70B
layer's GEMMs (QKV, O, gate+up, down) per GPU at each TP shard width and token count.

A layer's rate is the sum of its four GEMMs' FLOPs over the sum of their times,
``2 M sum(N K) / sum(t)``, at the shapes Megatron's column / row split leaves one GPU
(N or K divided by TP). Sources:

* ``--aiter CSV``: ROCm/aiter ``aiter/configs/model_configs/llama70B_bf16_tuned_gemm.csv``
  (the tuner's best kernel per shape on gfx950 = MI355X, 256 CUs, column ``us``). It has the
  TP1, TP4 and TP8 shapes (no TP2) at M = 1 .. 32,768; M = 64 lacks the TP8 QKV shape.
* ``--h100 CSV``: ``data/benchmarks/gemm_width_h100_micro.csv`` (bench/gemm_width.py, one
  H100 SXM, 2026-12-07): every GEMM of Llama-70B and Llama-3.1-8B at TP1/2/4/8 in bf16 and
  fp8, M = 16 .. 8,192. The table's widths are Llama-70B at TP1, 2, 4, 8 and Llama-3.1-8B at
  TP4, 8 (a layer of 218,103,808 / TP); ``--dtype`` picks bf16 or fp8.

Usage: PYTHONPATH=$PWD python scripts/gemm_width_table.py --aiter /tmp/llama70B_bf16_tuned_gemm.csv
       PYTHONPATH=$PWD python scripts/gemm_width_table.py --h100 data/benchmarks/gemm_width_h100_micro.csv --dtype fp8
"""

from __future__ import annotations

import argparse

import pandas as pd

H, QKV, FFN = 8192, 10240, 28672
#: (N, K) of the four GEMMs of a Llama-70B layer at TP1: column-parallel QKV and gate+up
#: (N split), row-parallel O and down (K split)
LAYER = (
    ("qkv", QKV, H, "n"),
    ("o", H, H, "k"),
    ("gate_up", 2 * FFN, H, "n"),
    ("down", H, FFN, "k"),
)
TOKENS = (16, 32, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def shard(tp):
    """(N, K) of each GEMM on one GPU at TP ``tp``."""
    return [(n // tp, k) if s == "n" else (n, k // tp) for _, n, k, s in LAYER]


def aiter_table(path, gfx="gfx950"):
    """{tp: [TFLOP/s at each of TOKENS]} of the layer from the AITER tuned CSV."""
    d = pd.read_csv(path)
    d = d[d.gfx == gfx]
    out = {}
    for tp in (1, 4, 8):
        row = []
        for m in TOKENS:
            s = d[d["M"] == m]
            t = 0.0
            for n, k in shard(tp):
                x = s[(s["N"] == n) & (s["K"] == k)]
                if x.empty:
                    raise SystemExit(f"no {gfx} row M={m} N={n} K={k}")
                t += float(x.us.min()) * 1e-6
            fl = 2.0 * m * sum(n * k for n, k in shard(tp))
            row.append(round(fl / t / 1e12, 1))
        out[tp] = row
    return out


#: token counts of the H100 tables (12 = gemm_width.NPTS, the most a table may hold)
H100_TOKENS = (16, 32, 64, 128, 256, 384, 512, 768, 1024, 2048, 4096, 8192)
#: (model, TP) of each width of the H100 tables, widest first
H100_WIDTHS = (("70b", 1), ("70b", 2), ("70b", 4), ("70b", 8), ("8b", 4), ("8b", 8))


def h100_table(path, dtype):
    """[(width, [TFLOP/s at each of H100_TOKENS])] of a layer from the bench/gemm_width.py CSV:
    ``2 M sum(N K) / sum(t)`` over the four GEMMs of (model, TP), widest first."""
    d = pd.read_csv(path)
    d = d[(d.dtype == dtype) & (d.layer != "check")]
    out = []
    for mdl, tp in H100_WIDTHS:
        s = d[(d.model == mdl) & (d.tp == tp)]
        if set(s.layer) != {"qkv", "o", "gate_up", "down"}:
            raise SystemExit(f"{path}: {dtype} {mdl} TP{tp} lacks a layer")
        w = int((s[s.m == s.m.min()].k * s[s.m == s.m.min()].n).sum())
        row = []
        for m in H100_TOKENS:
            x = s[s.m == m]
            if len(x) != 4:
                raise SystemExit(f"{path}: {dtype} {mdl} TP{tp} M={m}: {len(x)} of 4 GEMMs")
            row.append(round(2.0 * m * w / float(x.s_per_gemm.sum()) / 1e12, 1))
        out.append((w, row))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--aiter")
    src.add_argument("--h100")
    ap.add_argument("--dtype", default="fp8", choices=("bf16", "fp8"))
    a = ap.parse_args(argv)
    if a.h100:
        t = h100_table(a.h100, a.dtype)
        print("tokens:", list(H100_TOKENS))
        print("widths:", [w for w, _ in t])
        for w, row in t:
            print(f"  - {row}  # width {w}")
        return 0
    w1 = sum(n * k for n, k in shard(1))
    t = aiter_table(a.aiter)
    print("tokens:", list(TOKENS))
    print("widths:", [w1 // tp for tp in t])
    for tp, row in t.items():
        print(f"TP{tp} (width {w1 // tp}):", row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
