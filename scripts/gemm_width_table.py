"""Print the tables of ``data/gemm_width.yaml``: the achieved rate of one whole Llama-70B
layer's GEMMs (QKV, O, gate+up, down) per GPU at each TP shard width and token count.

A layer's rate is the sum of its four GEMMs' FLOPs over the sum of their times,
``2 M sum(N K) / sum(t)``, at the shapes Megatron's column / row split leaves one GPU
(N or K divided by TP). Sources:

* ``--aiter CSV``: ROCm/aiter ``aiter/configs/model_configs/llama70B_bf16_tuned_gemm.csv``
  (the tuner's best kernel per shape on gfx950 = MI355X, 256 CUs, column ``us``). It has the
  TP1, TP4 and TP8 shapes (no TP2) at M = 1 .. 32,768; M = 64 lacks the TP8 QKV shape.
* ``--h100 CSV``: ``data/benchmarks/gemm_width_h100_micro.csv`` (bench/gemm_width.py), if
  measured.

Usage: PYTHONPATH=$PWD python scripts/gemm_width_table.py --aiter /tmp/llama70B_bf16_tuned_gemm.csv
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--aiter", required=True)
    a = ap.parse_args(argv)
    w1 = sum(n * k for n, k in shard(1))
    t = aiter_table(a.aiter)
    print("tokens:", list(TOKENS))
    print("widths:", [w1 // tp for tp in t])
    for tp, row in t.items():
        print(f"TP{tp} (width {w1 // tp}):", row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
