"""Diagnosis of a disaggregated InferenceX DeepSeek-R1 row: its predicted output tok/s with
the prefill (or decode) pool's step model changed by one sourced term at a time.

Nothing here changes a prediction of the planner; it answers "how far would this term move
the row" (changes/s8-front8k.md). The closed loop is the one ``disagg_rows`` runs (same
request draw, seed and bisection).

Cases (comma-separated):

* ``base``: the row as ``predict_disagg_row`` predicts it;
* ``sumlen``: the prefill pool's MoE dispatch as SGLang runs an extend batch under DP
  attention without an all-to-all backend (``DpPaddingMode.SUM_LEN``: "Padding tokens to sum
  length and then gather tokens using all_reduce", and the MoE output all-reduced):
  ``4 (w-1)/w x hidden x 2`` bytes per replica token and MoE layer instead of the planner's
  all-to-all (:func:`planner.engine.adp.dispatch_bytes_per_token`);
* ``gemm<F>``: the dense linears (attention projections, shared experts, dense MLP layers)
  ``F`` times slower than the node's GEMM rate (SGLang with ``SGLANG_ENABLE_JIT_DEEPGEMM``
  false runs block-FP8 linears on FlashInfer's TRT-LLM GEMM; sgl-project/sglang#13528 times
  it 5.7-6.3x slower than DeepGEMM at m = 1,024-2,048, N = 24,576, K = 7,168 on GB200);
* ``both<F>``: ``sumlen`` and ``gemm<F>`` together;
* ``dgather``: the decode pool's MoE dispatch as an all-gather + reduce-scatter
  (``MAX_LEN``), ``2 (w-1)/w x hidden x 2``.

Example::

    PYTHONPATH=$PWD python scripts/r1_prefill_whatif.py ixh-0786 base,sumlen,both6.1 \\
        --profile /tmp/held_out.yaml
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.ep_accuracy import public_files_default  # noqa: E402


def _rows() -> pd.DataFrame:
    frames = (pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default())
    return pd.concat(frames).set_index("id")


def _dispatch_a2a(sm) -> float:
    """The planner's per-layer dispatch bytes of ``sm``'s layout (all-to-all or gather)."""
    from planner.engine.adp import dispatch_bytes_per_token

    return dispatch_bytes_per_token(sm_layout(sm), sm.num_experts, sm.top_k, sm.model.hidden_size)


def sm_layout(sm):
    from planner.catalog.layout import layout_of

    return layout_of(sm.tp, 1, sm.ep, sm.attention_dp)


def with_dispatch(sm, per_layer_bytes: float):
    """``sm`` with its MoE dispatch bytes per replica token and layer replaced."""
    moe_layers = sm.model.num_moe_layers
    new = sm.comm_bytes_per_token + (per_layer_bytes - _dispatch_a2a(sm)) * moe_layers
    return dataclasses.replace(sm, comm_bytes_per_token=new)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("row", help="a disaggregated concurrency row id, e.g. ixh-0786")
    ap.add_argument("cases", help="base,sumlen,gemm6.1,both6.1,dgather")
    ap.add_argument("--profile", help="efficiency profile (default: the bundled one)")
    a = ap.parse_args(argv)
    import planner.catalog.profile as profile_mod

    if a.profile:  # the disaggregated path resolves the default profile
        profile_mod.DEFAULT_PROFILE = Path(a.profile)
    from planner.benchmarks.disagg_rows import _lengths, build_spec_row
    from planner.benchmarks.schema import number
    from planner.catalog import load_catalog
    from planner.serving.disagg_sizing import closed_loop
    from planner.workload.workload import make_requests

    rows = _rows()
    r = dict(rows.loc[a.row])
    r["id"] = a.row
    measured = float(r["value"])
    built = build_spec_row(r, load_catalog())
    if isinstance(built, str):
        print(f"{a.row}: not predicted ({built})")
        return 1
    d, _ = built
    conc, lens = number(r, "concurrency"), _lengths(r)
    rng = np.random.default_rng(20240601)  # disagg_rows._run's draw
    n = int(max(600, 3 * conc))
    i = rng.integers(lens[0][0], lens[0][1] + 1, n)
    o = np.maximum(rng.integers(lens[1][0], lens[1][1] + 1, n), 1)
    reqs = make_requests(np.cumsum(rng.exponential(1.0, n)), i, o)
    keep = slice(n // 4, n - n // 8)
    scale = {"output_tok_s_total": float(o.mean()), "total_tok_s": float(i.mean() + o.mean())}
    if r["metric"] not in scale:
        print(f"{a.row}: metric {r['metric']} is not a throughput")
        return 1
    pre, dec = d.prefill.sm, d.decode.sm
    h = pre.model.hidden_size

    def pool(rep, sm):
        return dataclasses.replace(rep, sm=sm)

    def sumlen(sm):
        w = sm_layout(sm).width
        return with_dispatch(sm, 4.0 * (w - 1) / w * h * 2.0)

    def slow(sm, f):
        return dataclasses.replace(
            sm,
            matmul_slow_flops_per_token=sm.matmul_slow_flops_per_token
            + (f - 1.0) * sm.matmul_flops_per_token,
        )

    print(f"{d.label()}: measured {r['metric']} {measured:,.0f} tok/s")
    for c in a.cases.split(","):
        if c == "base":
            dd = d
        elif c == "sumlen":
            dd = dataclasses.replace(d, prefill=pool(d.prefill, sumlen(pre)))
        elif c.startswith("gemm"):
            dd = dataclasses.replace(d, prefill=pool(d.prefill, slow(pre, float(c[4:]))))
        elif c.startswith("both"):
            dd = dataclasses.replace(d, prefill=pool(d.prefill, slow(sumlen(pre), float(c[4:]))))
        elif c == "dgather":
            w = sm_layout(dec).width
            dd = dataclasses.replace(
                d, decode=pool(d.decode, with_dispatch(dec, 2.0 * (w - 1) / w * h * 2.0))
            )
        else:
            print(f"unknown case {c!r}")
            return 2
        rate, res = closed_loop(dd, reqs, float(conc), iters=14)
        v = rate * scale[r["metric"]]
        print(
            f"  {c}: {v:,.0f} tok/s, predicted / measured {v / measured:.3f}; "
            f"TTFT median {np.median(res.ttft_s[keep]):.1f} s, "
            f"TPOT median {np.nanmedian(res.tpot_s[keep]) * 1e3:.1f} ms",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
